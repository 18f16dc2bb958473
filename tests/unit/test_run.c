/*
 * A run built from what the user gives (lib/run/, memledger/run.h) over an in-memory set of files:
 * the DeepSpeed file found where LLaMA-Factory finds it (transformers' TrainingArguments passes
 * deepspeed: on unchanged and accelerate's HfDeepSpeedConfig opens it relative to the directory
 * the run starts in), the model from a directory or the catalog, and the seed case built end to
 * end. Expected values are read off the input files (examples/seed-case, data/models), not off
 * the code's output.
 */
#include "ml_test.h"

#include "memledger/run.h"

/* ---- a host whose files live in memory ------------------------------------------------ */

struct file {
    const char *path, *text; /* text NULL: a directory */
};

static struct file files[8];
static size_t n_files;
static char said[4096], warned[4096], errors[4096];

static void add(const char *path, const char *text)
{
    files[n_files].path = path;
    files[n_files++].text = text;
}

static const struct file *find(const char *path)
{
    for (size_t i = 0; i < n_files; i++)
        if (!strcmp(files[i].path, path))
            return &files[i];
    return NULL;
}

static enum ml_path_kind kind(const char *path)
{
    const struct file *f = find(path);
    return !f ? ML_PATH_NONE : f->text ? ML_PATH_FILE : ML_PATH_DIR;
}

static enum ml_status read_file(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d)
{
    ml_diag_at(d, path, 0, 0);
    const struct file *f = find(path);
    if (!f || !f->text)
        return ml_diag_set(d, ML_ERR_IO, "%s", f ? "is a directory" : "no such file");
    out->max = max;
    return ml_buf_add(out, f->text, strlen(f->text));
}

static bool same(const char *a, const char *b)
{
    return !strcmp(a, b);
}

static const char *env(const char *name)
{
    (void)name;
    return NULL;
}

static void append(char *to, const char *what, const char *msg)
{
    size_t l = strlen(to);
    snprintf(to + l, 4096 - l, "%s%s\n", what, msg);
}

static void report(const struct ml_diag *d)
{
    append(errors, d->origin, d->msg);
}

static void error(const char *cmd, const char *msg)
{
    append(errors, cmd ? cmd : "", msg);
}

static void warn(const char *msg)
{
    append(warned, "", msg);
}

static void say(const char *line)
{
    append(said, "", line);
}

static const struct ml_io io = {kind, read_file, same, env, report, error, warn, say};

static char *yaml, *ds_json;

static int setup(void **state)
{
    (void)state;
    n_files = 0;
    said[0] = warned[0] = errors[0] = '\0';
    return 0;
}

static int group_setup(void **state)
{
    (void)state;
    yaml = ml_test_slurp("examples/seed-case/train.yaml", NULL);
    ds_json = ml_test_slurp("examples/seed-case/deepspeed_z3_4x16g.json", NULL);
    return yaml && ds_json ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    free(yaml);
    free(ds_json);
    return 0;
}

/* ---- the DeepSpeed file, found as LLaMA-Factory finds it ---------------------------------- */

static bool resolve(const char *run_dir, struct ml_train_read *rd)
{
    struct ml_train_files f = {"cfg/train.yaml", NULL, run_dir, NULL, 0, NULL, 0, NULL, true};
    memset(rd, 0, sizeof(*rd));
    snprintf(rd->yaml_ds, sizeof(rd->yaml_ds), "%s", "deepspeed_z3_4x16g.json");
    return ml_run_ds_resolve(&io, &f, rd);
}

static void test_ds_from_the_run_directory(void **state)
{
    (void)state;
    struct ml_train_read rd;
    add("cfg/train.yaml", yaml);
    add("cfg/deepspeed_z3_4x16g.json", ds_json);
    add("deepspeed_z3_4x16g.json", ds_json);
    assert_true(resolve(NULL, &rd)); /* started here: ./deepspeed_z3_4x16g.json, not cfg/'s */
    assert_int_equal(rd.ds_how, ML_DS_RUN_DIR);
    assert_string_equal(rd.ds_path, "deepspeed_z3_4x16g.json");
    assert_non_null(strstr(warned, "not cfg/deepspeed_z3_4x16g.json beside the YAML"));
    warned[0] = '\0';
    assert_true(resolve("cfg", &rd)); /* started in cfg/ */
    assert_int_equal(rd.ds_how, ML_DS_RUN_DIR);
    assert_string_equal(rd.ds_path, "cfg/deepspeed_z3_4x16g.json");
    assert_string_equal(warned, "");
    assert_non_null(strstr(said, "DeepSpeed config: cfg/deepspeed_z3_4x16g.json"));
}

static void test_ds_beside_the_yaml_or_nowhere(void **state)
{
    (void)state;
    struct ml_train_read rd;
    add("cfg/train.yaml", yaml);
    add("cfg/deepspeed_z3_4x16g.json", ds_json);
    assert_true(resolve(NULL, &rd)); /* not here: the one beside the YAML, warned */
    assert_int_equal(rd.ds_how, ML_DS_BESIDE_YAML);
    assert_string_equal(rd.ds_path, "cfg/deepspeed_z3_4x16g.json");
    assert_non_null(strstr(warned, "would not find train.yaml's deepspeed: deepspeed_z3_4x16g.json"));
    n_files = 1; /* the YAML alone */
    assert_false(resolve(NULL, &rd));
    assert_non_null(strstr(errors, "cfg/train.yaml: deepspeed: deepspeed_z3_4x16g.json: no such file"));
}

/* LLaMA-Factory's own example names examples/deepspeed/ds_z3_config.json, a file of its checkout:
 * outside one, --zero 3 stands in for it (warned) with the same numbers as the real file, and
 * without a flag the error says how to go on. */
static void test_lf_example_ds_outside_its_checkout(void **state)
{
    (void)state;
    const char *lf = "tests/data/llamafactory-examples/examples/";
    char path[256];
    snprintf(path, sizeof(path), "%strain_lora/qwen3_lora_sft_ds3.yaml", lf);
    char *y = ml_test_slurp(path, NULL);
    snprintf(path, sizeof(path), "%sdeepspeed/ds_z3_config.json", lf);
    char *z3 = ml_test_slurp(path, NULL);
    assert_non_null(y);
    assert_non_null(z3);
    assert_non_null(strstr(y, "deepspeed: examples/deepspeed/ds_z3_config.json"));
    static struct ml_train_setup with, without;
    struct ml_train_opts o;
    memset(&o, 0, sizeof(o));
    o.cmd = "train";
    o.config = "qwen3_lora_sft_ds3.yaml";
    o.gpu = "rtx4090";
    o.num_gpus = 2;
    o.nodes = 1;
    add("qwen3_lora_sft_ds3.yaml", y);
    add("examples/deepspeed/ds_z3_config.json", z3); /* in a LLaMA-Factory checkout */
    assert_true(ml_run_build(&io, &o, &with));
    assert_string_equal(with.ds_path, "examples/deepspeed/ds_z3_config.json");
    n_files = 1; /* elsewhere */
    assert_false(ml_run_build(&io, &o, &without));
    ml_run_release(&without);
    assert_non_null(strstr(errors, "qwen3_lora_sft_ds3.yaml: deepspeed: examples/deepspeed/ds_z3_config.json: "
                                   "no such file in the working directory or beside the YAML"));
    assert_non_null(strstr(errors, "--deepspeed FILE"));
    assert_non_null(strstr(errors, "--run-dir DIR"));
    assert_non_null(strstr(errors, "--zero N"));
    errors[0] = '\0';
    o.zero = "3";
    memset(&without, 0, sizeof(without));
    assert_true(ml_run_build(&io, &o, &without));
    assert_string_equal(errors, "");
    assert_string_equal(without.ds_path, "");
    assert_non_null(strstr(warned, "--zero 3 wins over qwen3_lora_sft_ds3.yaml's deepspeed: "
                                   "examples/deepspeed/ds_z3_config.json, which is not in the working directory"));
    assert_int_equal(without.t.zero.stage, 3);
    /* LLaMA-Factory's ds_z3_config.json and --zero 3 give the same ledger. */
    assert_int_equal(without.l.peak_allocated, with.l.peak_allocated);
    assert_int_equal(without.l.peak_reserved, with.l.peak_reserved);
    ml_run_release(&with);
    ml_run_release(&without);
    free(y);
    free(z3);
}

/* ---- the model -------------------------------------------------------------------------- */

static void test_model_from_a_directory_and_the_catalog(void **state)
{
    (void)state;
    char *cfg = ml_test_slurp("data/models/qwen2.5-0.5b.json", NULL);
    assert_non_null(cfg);
    add("models/Qwen2.5-0.5B", NULL);
    add("models/Qwen2.5-0.5B/config.json", cfg);
    static struct ml_model_ref m;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_model_resolve(&io, "models/Qwen2.5-0.5B", &m, &d), ML_OK);
    assert_string_equal(m.name, "Qwen2.5-0.5B");
    assert_string_equal(m.source, "models/Qwen2.5-0.5B/config.json");
    assert_int_equal(m.arch.hidden, 896); /* hidden_size in the config */
    assert_int_equal(m.arch.n_layers, 24);
    ml_diag_init(&d);
    assert_int_equal(ml_model_resolve(&io, "models/Qwen2.5-0.5B/config.json", &m, &d), ML_OK);
    assert_string_equal(m.name, "Qwen2.5-0.5B");
    ml_diag_init(&d); /* a config.json that is not there: the host's own error, naming it */
    assert_int_equal(ml_model_resolve(&io, "missing/config.json", &m, &d), ML_ERR_IO);
    assert_string_equal(d.origin, "missing/config.json");
    assert_string_equal(d.msg, "no such file");
    ml_diag_init(&d); /* a hub id: the catalog */
    assert_int_equal(ml_model_resolve(&io, "Qwen/Qwen2.5-14B", &m, &d), ML_OK);
    assert_string_equal(m.hub_id, "Qwen/Qwen2.5-14B");
    assert_int_equal(m.arch.hidden, 5120); /* Qwen2.5-14B's hidden_size */
    free(cfg);
}

/* ---- the seed case, end to end ---------------------------------------------------------- */

static struct ml_train_setup s;

static bool build(struct ml_train_opts *o)
{
    memset(&s, 0, sizeof(s));
    o->cmd = "train";
    o->config = "train.yaml";
    o->gpu = "dcu-16g";
    o->num_gpus = 4;
    o->nodes = 1;
    bool ok = ml_run_build(&io, o, &s);
    ml_run_release(&s);
    ml_run_release(&s); /* twice is safe */
    return ok;
}

static void test_seed_case(void **state)
{
    (void)state;
    add("train.yaml", yaml);
    add("deepspeed_z3_4x16g.json", ds_json);
    struct ml_train_opts o;
    memset(&o, 0, sizeof(o));
    assert_true(build(&o));
    assert_string_equal(s.ds_path, "deepspeed_z3_4x16g.json");
    assert_int_equal(s.t.method, ML_METHOD_LORA); /* finetuning_type: lora */
    assert_int_equal(s.t.lora_rank, 64);          /* lora_rank: 64 */
    assert_int_equal(s.t.seq_len, 1024);          /* cutoff_len: 1024 */
    assert_int_equal(s.t.zero.stage, 3);          /* "stage": 3 */
    assert_true(s.t.deepspeed);
    assert_int_equal(s.cl.gpus_per_node, 4);
    assert_string_equal(s.m.hub_id, "Qwen/Qwen2.5-14B"); /* model_name_or_path */
    assert_false(s.l.fits); /* the real run ran out of memory on these cards (seed-case/oom.log) */
    assert_string_equal(errors, "");

    /* A flag over the YAML wins, with one warning naming both. */
    o.rank = "16";
    o.zero = "5";
    assert_false(build(&o));
    assert_string_equal(errors, "train--zero: '5' is not one of 0, 1, 2, 3\n");
    o.zero = NULL;
    assert_true(build(&o));
    assert_int_equal(s.t.lora_rank, 16);
    assert_int_equal(s.warnings.n >= 1, 1);
    bool named = false;
    for (uint32_t i = 0; i < s.warnings.n; i++)
        named |= strstr(s.warnings.text[i], "--lora-rank 16 wins over lora_rank 64 (train.yaml)") != NULL;
    assert_true(named);

    /* No GPU: a usage error of the command. */
    o.rank = NULL;
    errors[0] = '\0';
    memset(&s, 0, sizeof(s));
    o.gpu = NULL;
    assert_false(ml_run_build(&io, &o, &s));
    assert_non_null(strstr(errors, "train--gpu is needed"));
}

/* `--lf "llamafactory-cli train train.yaml lora_rank=8"`: LLaMA-Factory merges key=value words
 * over the YAML (hparams/parser.py read_args: OmegaConf.merge of the file and the CLI). */
static void test_lf_command_line(void **state)
{
    (void)state;
    add("train.yaml", yaml);
    add("deepspeed_z3_4x16g.json", ds_json);
    struct ml_train_opts o;
    memset(&o, 0, sizeof(o));
    o.cmd = "train";
    o.gpu = "dcu-16g";
    o.num_gpus = o.nodes = 1;
    o.lf_line = "NPROC_PER_NODE=4 llamafactory-cli train train.yaml lora_rank=8";
    memset(&s, 0, sizeof(s));
    assert_true(ml_run_build(&io, &o, &s));
    assert_int_equal(s.t.lora_rank, 8);
    assert_int_equal(s.cl.gpus_per_node, 4); /* NPROC_PER_NODE */
    assert_int_equal(s.t.zero.stage, 3);     /* the YAML's deepspeed: still read */
    ml_run_release(&s);
    assert_null(s.lf_buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_ds_from_the_run_directory, setup),
        cmocka_unit_test_setup(test_ds_beside_the_yaml_or_nowhere, setup),
        cmocka_unit_test_setup(test_lf_example_ds_outside_its_checkout, setup),
        cmocka_unit_test_setup(test_model_from_a_directory_and_the_catalog, setup),
        cmocka_unit_test_setup(test_seed_case, setup),
        cmocka_unit_test_setup(test_lf_command_line, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
