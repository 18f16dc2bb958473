/*
 * The patch writer of fit --write (lib/fit/patch.c): the user's DeepSpeed text is kept byte for
 * byte but for the values a plan changes; the YAML's deepspeed: gets a path the framework can
 * read. Every expected text is written out by hand from the input.
 */
#include "ml_test.h"

#include "memledger/fit.h"

static struct ml_plan plan1(enum ml_where w, const char *key, const char *to)
{
    struct ml_plan p;
    memset(&p, 0, sizeof(p));
    p.n = 1;
    p.ch[0].where = w;
    (void)snprintf(p.ch[0].key, sizeof(p.ch[0].key), "%s", key);
    (void)snprintf(p.ch[0].to, sizeof(p.ch[0].to), "%s", to);
    return p;
}

static void add(struct ml_plan *p, const char *key, const char *to)
{
    struct ml_change *c = &p->ch[p->n++];
    c->where = ML_IN_DEEPSPEED;
    (void)snprintf(c->key, sizeof(c->key), "%s", key);
    (void)snprintf(c->to, sizeof(c->to), "%s", to);
}

static void expect_ds(const char *in, const struct ml_plan *p, const char *want)
{
    struct ml_buf out;
    struct ml_diag d;
    ml_buf_init(&out, 0);
    ml_diag_init(&d);
    assert_int_equal(ml_patch_deepspeed(in, strlen(in), p, &out, &d), ML_OK);
    if (out.len != strlen(want))
        print_error("got: %.*s\n", (int)out.len, out.buf);
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(out.buf, want, out.len);
    ml_buf_release(&out);
}

static void test_changed_value_only(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_DEEPSPEED, "reduce_bucket_size", "auto");
    expect_ds("{\"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 1e8, \"sub_group_size\": 1E9}}\n", &p,
              "{\"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": \"auto\", \"sub_group_size\": 1E9}}\n");
    p = plan1(ML_IN_DEEPSPEED, "stage3_max_reuse_distance", "0");
    expect_ds("{\n  \"zero_optimization\": {\n    \"stage3_max_reuse_distance\": 3e8,\n    \"stage\": 3\n  }\n}\n", &p,
              "{\n  \"zero_optimization\": {\n    \"stage3_max_reuse_distance\": 0,\n    \"stage\": 3\n  }\n}\n");
}

static void test_missing_key_added(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_DEEPSPEED, "stage3_max_reuse_distance", "0");
    add(&p, "overlap_comm", "false");
    expect_ds("{\n  \"zero_optimization\": {\n    \"stage\": 3\n  }\n}\n", &p,
              "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"stage3_max_reuse_distance\": 0,\n"
              "    \"overlap_comm\": false\n  }\n}\n");
    p = plan1(ML_IN_DEEPSPEED, "overlap_comm", "false");
    expect_ds("{\"zero_optimization\": {}}", &p, "{\"zero_optimization\": {\"overlap_comm\": false}}");
    p = plan1(ML_IN_DEEPSPEED, "stage", "ZeRO-2");
    expect_ds("{\"bf16\": {\"enabled\": \"auto\"}}", &p,
              "{\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 2}}");
    expect_ds("{\"zero_optimization\": null}", &p, "{\"zero_optimization\": {\"stage\": 2}}");
}

/* Python's json keeps the last of duplicated keys: that one is in force, and changed. */
static void test_duplicates_last(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_DEEPSPEED, "stage", "ZeRO-3");
    expect_ds("{\"zero_optimization\": {\"stage\": 3, \"stage\": 2}}", &p,
              "{\"zero_optimization\": {\"stage\": 3, \"stage\": 3}}");
    expect_ds("{\"zero_optimization\": {\"stage\": 1}, \"zero_optimization\": {\"st\\u0061ge\": 2}}", &p,
              "{\"zero_optimization\": {\"stage\": 1}, \"zero_optimization\": {\"st\\u0061ge\": 3}}");
}

static void test_offload_block(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_DEEPSPEED, "offload_optimizer", "cpu (pin_memory)");
    expect_ds(
        "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"none\"}, \"stage\": 3}}", &p,
        "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}, \"stage\": 3}}");
}

/* Without a file: LLaMA-Factory's ds_z3_config.json, valid JSON with the change. */
static void test_template(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_DEEPSPEED, "overlap_comm", "true");
    p.t.zero.stage = 3;
    struct ml_buf out;
    struct ml_diag d;
    ml_buf_init(&out, 0);
    ml_diag_init(&d);
    assert_int_equal(ml_patch_deepspeed(NULL, 0, &p, &out, &d), ML_OK);
    assert_non_null(strstr(out.buf, "\"stage\": 3"));
    assert_non_null(strstr(out.buf, "\"overlap_comm\": true"));
    assert_null(strstr(out.buf, "\"overlap_comm\": false"));
    ml_buf_release(&out);
}

static void test_yaml_deepspeed_path(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_YAML, "per_device_train_batch_size", "2");
    const char *in = "model_name_or_path: x  # the model\nper_device_train_batch_size: 4\ndeepspeed: ds.json\n";
    struct ml_buf out;
    struct ml_diag d;
    ml_buf_init(&out, 0);
    ml_diag_init(&d);
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, "fitted/ds.json", &out, &d), ML_OK);
    assert_string_equal(out.buf, "model_name_or_path: x  # the model\nper_device_train_batch_size: 2\n"
                                 "deepspeed: fitted/ds.json\n");
    ml_buf_reset(&out);
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, "my runs/it's.json", &out, &d), ML_OK);
    assert_string_equal(out.buf, "model_name_or_path: x  # the model\nper_device_train_batch_size: 2\n"
                                 "deepspeed: 'my runs/it''s.json'\n");
    ml_buf_reset(&out);
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, NULL, &out, &d), ML_OK);
    assert_string_equal(out.buf, "model_name_or_path: x  # the model\nper_device_train_batch_size: 2\n"
                                 "deepspeed: ds.json\n");
    ml_buf_release(&out);
}

/* A nested key (torchtune's recipes: tokenizer: {max_seq_len: ...}, recipes/configs/llama3/
 * 8B_lora_single_device.yaml) is changed inside its block, added to the block, or added as a
 * block; a change without a key (no such setting in the trainer's config) is not written. */
static void test_yaml_nested(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_YAML, "tokenizer.max_seq_len", "1024");
    p.ch[p.n++].where = ML_IN_YAML; /* an empty key: advice only */
    struct ml_buf out;
    struct ml_diag d;
    ml_buf_init(&out, 0);
    ml_diag_init(&d);
    const char *in = "tokenizer:\n  _component_: t.llama3_tokenizer\n  max_seq_len: 2048  # cut\nbatch_size: 2\n";
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, NULL, &out, &d), ML_OK);
    assert_string_equal(out.buf,
                        "tokenizer:\n  _component_: t.llama3_tokenizer\n  max_seq_len: 1024  # cut\nbatch_size: 2\n");
    ml_buf_reset(&out);
    in = "tokenizer:\n    path: x\nbatch_size: 2\n";
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, NULL, &out, &d), ML_OK);
    assert_string_equal(out.buf, "tokenizer:\n    max_seq_len: 1024\n    path: x\nbatch_size: 2\n");
    ml_buf_reset(&out);
    in = "batch_size: 2\n";
    assert_int_equal(ml_patch_yaml(in, strlen(in), &p, NULL, &out, &d), ML_OK);
    assert_string_equal(out.buf, "batch_size: 2\n\n### added by memledger fit\ntokenizer:\n  max_seq_len: 1024\n");
    ml_buf_release(&out);
}

/* docs/files.md: only the files a plan changes are written; an env-only plan writes only
 * memledger.env. A changed DeepSpeed file is named by the YAML's deepspeed: when there is a YAML
 * (or no DeepSpeed file of the user's, so the YAML is what points the run at the new one). */
static void test_plan_files(void **state)
{
    (void)state;
    struct ml_plan_files f;
    struct ml_plan env = plan1(ML_IN_ENV, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
    ml_plan_files(&env, "train.yaml", "ds_z3.json", &f);
    assert_false(f.want[ML_PLAN_DS]);
    assert_false(f.want[ML_PLAN_YAML]);
    assert_true(f.want[ML_PLAN_ENV]);
    assert_string_equal(f.name[ML_PLAN_ENV], "memledger.env");
    struct ml_plan ds = plan1(ML_IN_DEEPSPEED, "stage", "3");
    ml_plan_files(&ds, "my.yaml", "ds_z2.json", &f); /* the YAML must name the patched copy */
    assert_true(f.want[ML_PLAN_DS] && f.want[ML_PLAN_YAML] && !f.want[ML_PLAN_ENV]);
    assert_string_equal(f.name[ML_PLAN_DS], "ds_z2.json");
    assert_string_equal(f.name[ML_PLAN_YAML], "my.yaml");
    ml_plan_files(&ds, NULL, "ds_z2.json", &f); /* --deepspeed alone: the JSON alone */
    assert_true(f.want[ML_PLAN_DS] && !f.want[ML_PLAN_YAML]);
    ml_plan_files(&ds, NULL, NULL, &f); /* no file of the user's: a new JSON, and a YAML naming it */
    assert_true(f.want[ML_PLAN_DS] && f.want[ML_PLAN_YAML]);
    assert_string_equal(f.name[ML_PLAN_DS], "ds_config.json");
    assert_string_equal(f.name[ML_PLAN_YAML], "train.yaml");
    struct ml_plan key = plan1(ML_IN_YAML, "deepspeed", "ds_z3_config.json"); /* ZeRO on: a new file */
    ml_plan_files(&key, "my.yaml", NULL, &f);
    assert_true(f.want[ML_PLAN_DS] && f.want[ML_PLAN_YAML]);
    struct ml_plan yaml = plan1(ML_IN_YAML, "cutoff_len", "1024");
    ml_plan_files(&yaml, "my.yaml", "ds.json", &f);
    assert_true(!f.want[ML_PLAN_DS] && f.want[ML_PLAN_YAML]);
}

/* ml_plan_bytes over files held in memory: what it reads and the deepspeed: it writes. */
static const char *fake_yaml = "model_name_or_path: Qwen/Qwen2.5-14B\ndeepspeed: ds.json\ncutoff_len: 2048\n";
static const char *fake_ds = "{\"zero_optimization\": {\"stage\": 2}}";
static int n_reads;

static enum ml_status fake_read(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d)
{
    (void)max;
    n_reads++;
    ml_diag_at(d, path, 0, 0);
    if (!strcmp(path, "runs/train.yaml"))
        return ml_buf_adds(out, fake_yaml);
    if (!strcmp(path, "runs/ds.json"))
        return ml_buf_adds(out, fake_ds);
    return ml_diag_set(d, ML_ERR_IO, "No such file or directory");
}

/* A program started in runs/ finds fitted/X as ../fitted/X. */
static bool fake_from(const char *run_dir, const char *file, char *out, size_t n)
{
    assert_string_equal(run_dir, "runs");
    (void)snprintf(out, n, "../%s", file);
    return true;
}

static void test_plan_bytes(void **state)
{
    (void)state;
    struct ml_plan p = plan1(ML_IN_YAML, "cutoff_len", "1024");
    add(&p, "stage", "3");
    struct ml_plan_src u = {"fitted", "runs/train.yaml", "runs/ds.json", true, "runs"};
    struct ml_plan_io io = {fake_read, fake_from};
    struct ml_plan_files f;
    struct ml_buf b[ML_PLAN_FILES];
    for (int i = 0; i < ML_PLAN_FILES; i++)
        ml_buf_init(&b[i], 0);
    struct ml_diag d;
    ml_diag_init(&d);
    bool names_ds = false;
    n_reads = 0;
    assert_true(ml_plan_bytes(&p, &u, &io, &f, b, &names_ds, &d));
    assert_int_equal(n_reads, 2);
    assert_true(names_ds && f.want[ML_PLAN_DS] && f.want[ML_PLAN_YAML] && !f.want[ML_PLAN_ENV]);
    assert_string_equal(b[ML_PLAN_DS].buf, "{\"zero_optimization\": {\"stage\": 3}}");
    assert_string_equal(b[ML_PLAN_YAML].buf,
                        "model_name_or_path: Qwen/Qwen2.5-14B\ndeepspeed: ../fitted/ds.json\ncutoff_len: 1024\n");
    /* An env-only plan reads nothing and writes only memledger.env. */
    struct ml_plan env = plan1(ML_IN_ENV, "PYTORCH_HIP_ALLOC_CONF", "expandable_segments:True");
    for (int i = 0; i < ML_PLAN_FILES; i++)
        ml_buf_reset(&b[i]);
    n_reads = 0;
    names_ds = false;
    assert_true(ml_plan_bytes(&env, &u, &io, &f, b, &names_ds, &d));
    assert_int_equal(n_reads, 0);
    assert_false(names_ds);
    assert_string_equal(b[ML_PLAN_ENV].buf, "# memledger fit: export these before launching (source this file)\n"
                                            "export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True\n");
    /* A file that cannot be read: the error names it, nothing is patched. */
    u.ds_path = "runs/gone.json";
    assert_false(ml_plan_bytes(&p, &u, &io, &f, b, &names_ds, &d));
    assert_string_equal(d.origin, "runs/gone.json");
    for (int i = 0; i < ML_PLAN_FILES; i++)
        ml_buf_release(&b[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changed_value_only), cmocka_unit_test(test_missing_key_added),
        cmocka_unit_test(test_duplicates_last),    cmocka_unit_test(test_offload_block),
        cmocka_unit_test(test_template),           cmocka_unit_test(test_yaml_deepspeed_path),
        cmocka_unit_test(test_plan_files),         cmocka_unit_test(test_plan_bytes),
        cmocka_unit_test(test_yaml_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
