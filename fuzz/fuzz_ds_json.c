/*
 * fuzz_ds_json.c - libFuzzer target: DeepSpeed config JSON bytes -> struct ml_train (zero).
 * Any input must end in ML_OK or a diagnosed error, never a crash, a leak or UB.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memledger/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ml_train t;
    struct ml_warnings w;
    struct ml_diag d;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    w.n = 0;
    t.warnings = &w;
    ml_diag_init(&d);
    if (ml_zero_from_json(&t, (const char *)data, size, "fuzz", &d) != ML_OK) {
        if (d.code == ML_OK || !d.msg[0])
            __builtin_trap(); /* an error must always be explained */
        return 0;
    }
    /* Invariants of an accepted config. */
    if (!t.deepspeed || t.zero.stage > 3 || t.zero.hpz_partition_size == 0 || t.micro_batch == 0 || t.grad_accum == 0)
        __builtin_trap();
    const struct ml_ds_size *k[] = {&t.zero.reduce_bucket, &t.zero.allgather_bucket, &t.zero.prefetch_bucket,
                                    &t.zero.persistence,   &t.zero.max_live,         &t.zero.max_reuse,
                                    &t.zero.sub_group};
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        if (k[i]->is_auto && !k[i]->is_set)
            __builtin_trap();
        if (!k[i]->is_auto && k[i]->value > ((uint64_t)1 << 53))
            __builtin_trap();
        (void)ml_zero_resolve(k[i], 4096ull * 4096ull, 500000000ull);
    }
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = 4;
    c.nodes = 1;
    ml_diag_init(&d);
    if (ml_train_check(&t, NULL, &c, &d) != ML_OK && !d.msg[0])
        __builtin_trap();
    return 0;
}
