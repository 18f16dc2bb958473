/*
 * fuzz_train_yaml.c - libFuzzer target: LLaMA-Factory YAML bytes -> struct ml_train, then the
 * combination check. Any input must end in ML_OK or a diagnosed error, never a crash, a leak
 * or UB. The same bytes are also read as a TRL config and as an accelerate config; the first line
 * goes through --set (the override path) and is parsed as a LLaMA-Factory command line (split,
 * parsed, and its overrides merged over the YAML).
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
    char model[256], ds[256];
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    w.n = 0;
    t.warnings = &w;
    ml_diag_init(&d);
    enum ml_status st =
        ml_train_apply_yaml(&t, (const char *)data, size, "fuzz", model, sizeof(model), ds, sizeof(ds), &d);
    if (st != ML_OK) {
        if (d.code == ML_OK || !d.msg[0])
            __builtin_trap(); /* an error must always be explained */
    } else {
        /* Resolved values stay within what the ledger expects. */
        if (t.seq_len % 8 || t.micro_batch == 0 || w.n > ML_MAX_WARNINGS ||
            memchr(model, '\0', sizeof(model)) == NULL || memchr(ds, '\0', sizeof(ds)) == NULL)
            __builtin_trap();
        struct ml_cluster c;
        memset(&c, 0, sizeof(c));
        c.gpus_per_node = 1;
        c.nodes = 1;
        ml_diag_init(&d);
        if (ml_train_check(&t, NULL, &c, &d) != ML_OK && !d.msg[0])
            __builtin_trap();
    }

    /* The same bytes read as a TRL config (--framework trl: max_length, ModelConfig keys). */
    ml_train_defaults(&t, ML_FW_TRL);
    w.n = 0;
    t.warnings = &w;
    ml_diag_init(&d);
    st = ml_train_apply_yaml(&t, (const char *)data, size, "fuzz", model, sizeof(model), ds, sizeof(ds), &d);
    if (st != ML_OK && (d.code == ML_OK || !d.msg[0]))
        __builtin_trap();

    /* The first line as a --set override. */
    char line[256];
    size_t n = 0;
    while (n < size && n + 1 < sizeof(line) && data[n] != '\n') {
        line[n] = (char)(data[n] ? data[n] : ' ');
        n++;
    }
    line[n] = '\0';
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    w.n = 0;
    t.warnings = &w;
    ml_diag_init(&d);
    if (ml_train_set(&t, line, &d) != ML_OK && (d.code == ML_OK || !d.msg[0]))
        __builtin_trap();

    /* The same bytes as an accelerate config. */
    struct ml_accelerate acc;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    w.n = 0;
    t.warnings = &w;
    ml_diag_init(&d);
    st = ml_train_apply_accelerate(&t, (const char *)data, size, "fuzz", &acc, &d);
    if (st != ML_OK && (d.code == ML_OK || !d.msg[0]))
        __builtin_trap();
    if (st == ML_OK && (memchr(acc.deepspeed_file, '\0', sizeof(acc.deepspeed_file)) == NULL ||
                        (acc.num_machines && acc.num_processes % acc.num_machines)))
        __builtin_trap();

    /* The first line as a LLaMA-Factory command line, its overrides over the YAML. */
    char words_buf[256];
    const char *words[64];
    int nw = ml_lf_split(line, words_buf, sizeof(words_buf), words, 64);
    if (nw > 0) {
        struct ml_lf_cmdline lf;
        struct ml_train_override ov[65];
        ml_diag_init(&d);
        if (ml_lf_cmdline_parse(nw, words, &lf, ov, 65, &d) == ML_OK) {
            if (lf.n_ov > 65)
                __builtin_trap();
            ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
            w.n = 0;
            t.warnings = &w;
            ml_diag_init(&d);
            st = ml_train_apply_yaml_with(&t, (const char *)data, size, "fuzz", ov, lf.n_ov, "command line", model,
                                          sizeof(model), ds, sizeof(ds), &d);
            if (st != ML_OK && (d.code == ML_OK || !d.msg[0]))
                __builtin_trap();
        } else if (d.code == ML_OK || !d.msg[0]) {
            __builtin_trap();
        }
    }
    return 0;
}
