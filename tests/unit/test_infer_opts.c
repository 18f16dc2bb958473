/* The serving options of the command line (lib/setup/infer_opts.c), held to their documentation:
 * docs/cli/infer.md lists every option with its choices, docs/cli/fit.md and docs/cli/diagnose.md
 * the ones those commands take; and each option sets the field the documentation names. */
#include "ml_test.h"

#include "memledger/infer.h"

/* The row of `--name` in an options table of doc ("| `--name` | ARG | ..."), NULL when absent. */
static const char *doc_row(const char *doc, const char *name)
{
    char key[80];
    snprintf(key, sizeof(key), "| `--%s` |", name);
    const char *p = strstr(doc, key);
    for (int i = 0; i < 2 && !p; i++) { /* "| `--tp`, `--pp` | N |" */
        snprintf(key, sizeof(key), i ? "`--%s` |" : "| `--%s`, ", name);
        p = strstr(doc, key);
    }
    return p;
}

static void test_rows_match_the_docs(void **state)
{
    (void)state;
    char *infer = ml_test_slurp("docs/cli/infer.md", NULL);
    char *fit = ml_test_slurp("docs/cli/fit.md", NULL);
    char *diag = ml_test_slurp("docs/cli/diagnose.md", NULL);
    assert_non_null(infer);
    assert_non_null(fit);
    assert_non_null(diag);
    /* fit --serve's section starts at its own --serve row. */
    const char *serve = strstr(fit, "| `--serve` | | fit a serving engine |");
    assert_non_null(serve);
    size_t n = 0;
    for (const struct ml_infer_opt_def *o; (o = ml_infer_opt_at(n)); n++) {
        const char *row = doc_row(infer, o->name);
        assert_non_null(row);
        if (o->kind == ML_IOPT_CHOICE) { /* "| `--kv-dtype` | auto\|fp16\|bf16\|fp8 |" */
            char want[200], got[160];
            size_t k = 0;
            ml_infer_opt_choices(o, got, sizeof(got));
            for (const char *c = got; *c && k + 3 < sizeof(want); c++)
                if (*c == ',')
                    want[k++] = '\\', want[k++] = '|';
                else if (*c != ' ')
                    want[k++] = *c;
            want[k] = '\0';
            assert_non_null(strstr(row, want));
        }
        assert_int_equal(doc_row(serve, o->name) != NULL, (o->in & ML_IOPT_IN_FIT) != 0);
        assert_int_equal(doc_row(diag, o->name) != NULL, (o->in & ML_IOPT_IN_DIAGNOSE) != 0);
    }
    assert_int_equal(n, 29); /* the serving rows of infer.md's table (--tp, --pp in one row) */
    free(infer);
    free(fit);
    free(diag);
}

static void set(const char *name, const char *val, struct ml_infer *s)
{
    const struct ml_infer_opt_def *o = ml_infer_opt_find(name);
    assert_non_null(o);
    uint64_t v = 1;
    if (o->kind == ML_IOPT_CHOICE)
        assert_true(ml_infer_opt_choice(o, val, &v));
    else if (o->kind != ML_IOPT_FLAG)
        v = strtoull(val, NULL, 10);
    ml_infer_opt_set(o, v, s);
}

static void test_fields(void **state)
{
    (void)state;
    struct ml_infer s;
    uint64_t v;
    ml_infer_defaults(&s);
    assert_false(s.tp_set);
    set("engine", "sglang", &s);
    set("dtype", "fp16", &s);
    set("quant", "awq", &s);
    set("quant-bits", "8", &s); /* GPTQ-Int8 */
    set("kv-dtype", "fp8", &s);
    set("attn", "eager", &s);
    set("tp", "4", &s);
    set("max-num-batched-tokens", "4294967296", &s); /* 2^32, the documented top */
    set("enforce-eager", NULL, &s);
    set("gpu-memory-utilization", "950", &s);
    assert_int_equal(s.engine, ML_ENGINE_SGLANG);
    assert_int_equal(s.precision, ML_PREC_FP16);
    assert_int_equal(s.quant, ML_QUANT_AWQ);
    assert_int_equal(s.quant_bits, 8);
    assert_int_equal(s.kv_dtype, ML_KV_FP8);
    assert_int_equal(s.attn, ML_ATTN_EAGER);
    assert_int_equal(s.tp, 4);
    assert_true(s.tp_set);
    assert_int_equal(s.max_num_batched_tokens, 4294967296ull);
    assert_true(s.enforce_eager);
    assert_int_equal(s.gpu_util_permille, 950);
    /* vLLM --block-size takes the sizes of vllm/config/cache.py BlockSize, no others. */
    set("block-size", "32", &s);
    assert_int_equal(s.block_size, 32);
    assert_false(ml_infer_opt_choice(ml_infer_opt_find("block-size"), "24", &v));
    assert_null(ml_infer_opt_find("gpu")); /* the card is not a serving option */
    assert_false(ml_infer_opt_choice(ml_infer_opt_find("quant"), "q4_k_m", &v));
}

/* infer --config: the last --engine decides which backend's keys of the file apply. */
static void test_flags_engine(void **state)
{
    (void)state;
    struct ml_infer_flag f[3] = {{ml_infer_opt_find("engine"), "vllm", ML_ENGINE_VLLM},
                                 {ml_infer_opt_find("tp"), "2", 2},
                                 {ml_infer_opt_find("engine"), "sglang", ML_ENGINE_SGLANG}};
    enum ml_engine e = ML_ENGINE_HF;
    assert_ptr_equal(ml_infer_flags_engine(f, 3, &e), &e);
    assert_int_equal(e, ML_ENGINE_SGLANG);
    assert_ptr_equal(ml_infer_flags_engine(f, 1, &e), &e);
    assert_int_equal(e, ML_ENGINE_VLLM);
    assert_null(ml_infer_flags_engine(f + 1, 1, &e));
}

/* docs/cli/infer.md: --num-gpus N, "GPUs available (default tp x pp)", on one node. */
static void test_gpus(void **state)
{
    (void)state;
    struct ml_infer s;
    ml_infer_defaults(&s);
    s.tp = 2;
    s.pp = 2;
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    ml_infer_gpus(&c, 0, &s);
    assert_int_equal(c.gpus_per_node, 4);
    assert_int_equal(c.nodes, 1);
    ml_infer_gpus(&c, 8, &s);
    assert_int_equal(c.gpus_per_node, 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_match_the_docs),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_flags_engine),
        cmocka_unit_test(test_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
