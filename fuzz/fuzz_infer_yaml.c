/*
 * fuzz_infer_yaml.c - libFuzzer target: LLaMA-Factory inference YAML bytes -> struct
 * ml_infer_yaml, then its settings applied for each engine (lib/setup/infer_yaml.c). Any input
 * must end in ML_OK or a diagnosed error, never a crash, a leak or UB; what is read stays
 * terminated and within the key table.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memledger/arch.h"
#include "memledger/infer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ml_infer_yaml y; /* large; the fuzzer runs one input at a time */
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_infer_yaml_read((const char *)data, size, "fuzz", &y, &d);
    if (st != ML_OK) {
        if (d.code == ML_OK || !d.msg[0])
            __builtin_trap(); /* an error must always be explained */
        return 0;
    }
    if (memchr(y.model, '\0', sizeof(y.model)) == NULL || memchr(y.adapter, '\0', sizeof(y.adapter)) == NULL ||
        y.warnings.n > ML_MAX_WARNINGS)
        __builtin_trap();
    struct ml_arch a;
    memset(&a, 0, sizeof(a));
    const enum ml_engine engines[] = {ML_ENGINE_HF, ML_ENGINE_VLLM, ML_ENGINE_SGLANG};
    for (size_t i = 0; i <= sizeof(engines) / sizeof(engines[0]); i++) {
        struct ml_infer s;
        ml_infer_defaults(&s);
        ml_infer_yaml_apply(&y, &a, 1 + (uint32_t)i, i < 3 ? &engines[i] : NULL, &s);
        const char *text = NULL;
        const char *key = ml_infer_yaml_setter(&y, s.engine, "max-model-len", &text);
        if (key && !text)
            __builtin_trap();
    }
    return 0;
}
