/*
 * Every ledger entry names where its number comes from (the brief: every number memledger prints
 * traces to a rule in reference/accounting-notes.md or to a cited source). Over a sweep of training
 * and serving settings, each entry must carry its formula (rule) and a source that either cites a
 * section of the accounting notes that exists, or names a framework's source file or function;
 * any notes section it cites must exist.
 */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_serve sv;

/* The section numbers of ../shared/reference/accounting-notes.md (its headings, 2026-11). */
static bool notes_section_exists(unsigned major, int minor)
{
    static const int subsections[] = {0, 11, 0, 3, 7, 0, 8, 0, 0, 0}; /* §0 .. §9 */
    if (major >= sizeof(subsections) / sizeof(subsections[0]))
        return false;
    return minor < 0 || (minor >= 1 && minor <= subsections[major]);
}

/* Every "§N" / "§N.M" in s names a section of the notes; returns how many s cites. */
static int check_sections(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, "§"); p; p = strstr(p, "§")) {
        p += strlen("§");
        if (*p < '0' || *p > '9')
            fail_msg("%s: '§' without a section number in \"%s\"", what, s);
        unsigned major = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            major = major * 10 + (unsigned)(*p - '0');
        int minor = -1;
        if (*p == '.' && p[1] >= '0' && p[1] <= '9')
            for (p++, minor = 0; *p >= '0' && *p <= '9'; p++)
                minor = minor * 10 + (*p - '0');
        if (!notes_section_exists(major, minor))
            fail_msg("%s: cites notes §%u.%d, which the notes do not have (\"%s\")", what, major, minor, s);
        n++;
    }
    return n;
}

static void check_ledger(const char *setting)
{
    assert_true(led.n > 0);
    for (uint32_t i = 0; i < led.n; i++) {
        const struct ml_entry *e = &led.e[i];
        char what[160];
        (void)snprintf(what, sizeof(what), "%s: %s", setting, ml_comp_name(e->id));
        if (!e->rule[0])
            fail_msg("%s has no rule", what);
        if (!e->source || !e->source[0])
            fail_msg("%s has no source", what);
        int cites = check_sections(e->source, what);
        /* A framework's file or function: the project names its source as "<framework> <file or
         * function>", e.g. "transformers cache_utils", "vllm gpu_worker determine_available_memory". */
        static const char *const frameworks[] = {
            "transformers", "deepspeed",  "torch", "peft",   "bitsandbytes",     "lightning", "litgpt",
            "torchtune",    "accelerate", "vllm",  "sglang", "CublasHandlePool", ".py",       ".cpp"};
        bool names_code = false;
        for (size_t k = 0; k < sizeof(frameworks) / sizeof(frameworks[0]); k++)
            names_code = names_code || strstr(e->source, frameworks[k]);
        if (!(cites && !strncmp(e->source, "notes §", strlen("notes §"))) && !names_code)
            fail_msg("%s: source \"%s\" cites neither the notes nor a framework's code", what, e->source);
    }
}

static void model(const char *name)
{
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find(name);
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
}

static struct ml_cluster gpus(const char *g, uint32_t n)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve(g, &c.gpu, &d), ML_OK);
    c.gpus_per_node = n;
    c.nodes = 1;
    return c;
}

static void test_train_sources(void **state)
{
    (void)state;
    model("qwen2.5-14b");
    static const enum ml_method methods[] = {ML_METHOD_FULL, ML_METHOD_FREEZE, ML_METHOD_LORA, ML_METHOD_QLORA};
    static const enum ml_framework fws[] = {ML_FW_LLAMAFACTORY, ML_FW_HF, ML_FW_LITGPT, ML_FW_TORCHTUNE};
    int runs = 0;
    for (size_t f = 0; f < sizeof(fws) / sizeof(fws[0]); f++)
        for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++)
            for (int par = 0; par < 6; par++) /* single, ZeRO-2, ZeRO-3, ZeRO-3 + offload, FSDP, DDP */
                for (int gc = 0; gc < 2; gc++) {
                    struct ml_train t;
                    ml_train_defaults(&t, fws[f]);
                    t.method = methods[m];
                    t.quant_bits = methods[m] == ML_METHOD_QLORA ? 4 : 0;
                    t.micro_batch = 2;
                    t.seq_len = 1024;
                    t.grad_ckpt = gc ? ML_GC_REENTRANT : ML_GC_OFF;
                    t.attn = gc ? ML_ATTN_EAGER : ML_ATTN_SDPA;
                    t.do_eval = gc;
                    uint32_t n = par == 0 ? 1 : 4;
                    if (par >= 1 && par <= 3) {
                        t.deepspeed = true;
                        t.zero.stage = par == 1 ? 2 : 3;
                        t.zero.overlap_comm = par != 1;
                        t.zero.offload_optimizer = t.zero.offload_param = par == 3;
                        t.zero.gather_16bit_on_save = par >= 2;
                    } else if (par == 4) {
                        t.fsdp = ML_FSDP_FULL_SHARD;
                        t.fsdp_version = 1;
                    }
                    struct ml_cluster c = gpus("16G", n);
                    struct ml_diag d;
                    ml_diag_init(&d);
                    if (ml_ledger_train(&arch, &inv, &t, &c, NULL, &led, &d) != ML_OK)
                        continue; /* a combination the ledger refuses (e.g. QLoRA + ZeRO-3 offload) */
                    char setting[96];
                    (void)snprintf(setting, sizeof(setting), "%s %s par%d gc%d", ml_framework_name(fws[f]),
                                   ml_method_name(methods[m]), par, gc);
                    check_ledger(setting);
                    runs++;
                }
    assert_true(runs >= 150);
}

static void test_infer_sources(void **state)
{
    (void)state;
    static const char *const models[] = {"llama-3.1-8b", "qwen2.5-14b", "deepseek-v3"};
    static const enum ml_engine engines[] = {ML_ENGINE_HF, ML_ENGINE_VLLM, ML_ENGINE_SGLANG};
    static const enum ml_quant quants[] = {ML_QUANT_NONE, ML_QUANT_NF4, ML_QUANT_GPTQ, ML_QUANT_FP8};
    int runs = 0;
    for (size_t mo = 0; mo < sizeof(models) / sizeof(models[0]); mo++) {
        if (!ml_catalog_find(models[mo]))
            continue;
        model(models[mo]);
        for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]); e++)
            for (size_t q = 0; q < sizeof(quants) / sizeof(quants[0]); q++) {
                struct ml_infer s;
                ml_infer_defaults(&s);
                s.engine = engines[e];
                s.quant = quants[q];
                s.max_model_len = 4096;
                s.batch = 4;
                struct ml_cluster c = gpus("h100", 1);
                struct ml_diag d;
                ml_diag_init(&d);
                if (ml_ledger_infer(&arch, &inv, &s, &c, &led, &sv, &d) != ML_OK)
                    continue; /* a format this engine does not take */
                char setting[96];
                (void)snprintf(setting, sizeof(setting), "%s %s %s", models[mo], ml_engine_name(engines[e]),
                               ml_quant_name(quants[q]));
                check_ledger(setting);
                runs++;
            }
    }
    assert_true(runs >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_sources),
        cmocka_unit_test(test_infer_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
