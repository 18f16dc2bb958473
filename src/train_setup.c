/*
 * train_setup.c - the training options shared by `train` and `compare` (see train_setup.h),
 * moved out of cmd_train.c unchanged.
 */
#include "train_setup.h"
#include "io.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/units.h"
#include "i18n.h"

static int pick(const char *cmd, const char *opt, const char *val, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(val, names[i])) {
            *out = i;
            return 1;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        (void)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", names[i]);
    }
    ml_usage_error(cmd, _("%s: '%s' is not one of %s"), opt, val, list);
    return 0;
}

/* The directory part of a path ("" for none), for files named relative to the YAML. */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        out[0] = '\0';
    else
        (void)snprintf(out, n, "%.*s/", (int)(slash - path), path);
}

static bool is_file(const char *p)
{
    return ml_path_kind(p) == ML_PATH_FILE;
}

static bool is_dir_path(const char *p)
{
    return ml_path_kind(p) == ML_PATH_DIR;
}

/* rel under dir ("" or NULL = as written); an absolute rel stays as it is. */
static void join(const char *dir, const char *rel, char *out, size_t n)
{
    if (rel[0] == '/' || !dir || !dir[0] || !strcmp(dir, "."))
        (void)snprintf(out, n, "%s", rel);
    else
        (void)snprintf(out, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
}

bool ml_train_ds_resolve(const struct ml_train_files *f, struct ml_train_read *rd)
{
    rd->ds_path[0] = '\0';
    rd->ds_how = ML_DS_NONE;
    const char *yname = f->config ? ml_path_base(f->config) : "";
    if (f->deepspeed) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", f->deepspeed);
        rd->ds_how = ML_DS_FLAG;
        char yaml_file[1024];
        join(f->run_dir, rd->yaml_ds, yaml_file, sizeof(yaml_file));
        /* Only when they differ: the page (docs/web.md) names the YAML's own file with --deepspeed. */
        if (rd->yaml_ds[0] && strcmp(f->deepspeed, rd->yaml_ds) && !ml_same_file(f->deepspeed, yaml_file))
            ml_warnf(_("--deepspeed %s wins over %s's deepspeed: %s (the flag overrides the YAML)"), f->deepspeed,
                     yname, rd->yaml_ds);
        return true;
    }
    if (!rd->yaml_ds[0])
        return true;
    /* LLaMA-Factory passes deepspeed: to transformers' TrainingArguments as written (hparams/
     * parser.py); TrainingArguments.__post_init__ builds HfTrainerDeepSpeedConfig from it, and
     * accelerate's HfDeepSpeedConfig.__init__ opens it if os.path.exists(): relative to the
     * directory the run starts in, never to the YAML's folder. */
    char where[1100];
    if (f->run_dir)
        (void)snprintf(where, sizeof(where), _("the run directory %s"), f->run_dir);
    else
        (void)snprintf(where, sizeof(where), "%s", _("the working directory"));
    char run[1024], beside[1024], ydir[1024] = "";
    join(f->run_dir, rd->yaml_ds, run, sizeof(run));
    if (f->config)
        dir_of(f->config, ydir, sizeof(ydir));
    join(ydir, rd->yaml_ds, beside, sizeof(beside));
    if (is_file(run)) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", run);
        rd->ds_how = ML_DS_RUN_DIR;
        if (strcmp(run, beside) && is_file(beside) && !ml_same_file(run, beside))
            ml_warnf(
                _("DeepSpeed config: %s, not %s beside the YAML: LLaMA-Factory resolves %s's deepspeed: %s from %s"),
                run, beside, yname, rd->yaml_ds, where);
        else
            ml_stderr_printf(
                _("memledger: DeepSpeed config: %s (%s's deepspeed: %s, from %s, as LLaMA-Factory resolves it)\n"), run,
                yname, rd->yaml_ds, where);
        return true;
    }
    if (!f->run_dir && rd->yaml_ds[0] != '/' && is_file(beside)) {
        (void)snprintf(rd->ds_path, sizeof(rd->ds_path), "%s", beside);
        rd->ds_how = ML_DS_BESIDE_YAML;
        size_t yl = strlen(ydir);
        if (yl > 1 && ydir[yl - 1] == '/')
            ydir[yl - 1] = '\0';
        ml_warnf(_("DeepSpeed config: %s beside the YAML, as for a run started in %s: LLaMA-Factory started in %s "
                   "would not find %s's deepspeed: %s (--run-dir names where it runs)"),
                 beside, ydir[0] ? ydir : ".", where, yname, rd->yaml_ds);
        return true;
    }
    if (f->run_dir)
        ml_errorf(_("%s: deepspeed: %s: no such file in the run directory %s, where LLaMA-Factory looks for it"),
                  f->config, rd->yaml_ds, f->run_dir);
    else
        ml_errorf(_("%s: deepspeed: %s: no such file in the working directory (where LLaMA-Factory looks for it) or "
                    "beside the YAML"),
                  f->config, rd->yaml_ds);
    return false;
}

/* --zero, --fsdp, --offload. */
static int apply_sharding(const struct ml_train_opts *o, struct ml_train *t)
{
    int v;
    if (o->zero) {
        static const char *const z[] = {"0", "1", "2", "3"};
        if (!pick(o->cmd, "--zero", o->zero, z, 4, &v))
            return 0;
        if (!o->deepspeed && !(t->deepspeed && t->zero.stage == (uint32_t)v))
            ml_zero_preset(t, (uint32_t)v, false);
        t->zero.stage = (uint32_t)v;
        t->deepspeed = true;
    }
    if (o->fsdp) {
        static const char *const f[] = {"none", "full_shard", "shard_grad_op", "hybrid_shard"};
        if (!pick(o->cmd, "--fsdp", o->fsdp, f, 4, &v))
            return 0;
        t->fsdp = (enum ml_fsdp_mode)v;
    }
    if (o->offload) {
        static const char *const of[] = {"none", "optimizer", "param", "all"};
        if (!pick(o->cmd, "--offload", o->offload, of, 4, &v))
            return 0;
        if (v && !t->deepspeed && t->fsdp == ML_FSDP_NONE) {
            ml_usage_error(o->cmd, "%s", _("--offload needs DeepSpeed (--zero, --deepspeed) or --fsdp"));
            return 0;
        }
        t->zero.offload_optimizer = v == 1 || v == 3;
        t->zero.offload_param = v == 2 || v == 3;
        if (v)
            t->zero.pin_memory = true;
        if (t->fsdp != ML_FSDP_NONE)
            t->fsdp_offload = v != 0;
    }
    return 1;
}

/* The allocator's environment variables, --expandable-segments and the version flags. */
static int apply_env_and_versions(const struct ml_train_opts *o, struct ml_train *t)
{
    /* The allocator reads PYTORCH_CUDA_ALLOC_CONF (ROCm: PYTORCH_HIP_ALLOC_CONF; torch 2.9+ also
     * PYTORCH_ALLOC_CONF) from the environment; so does memledger (memledger fit writes them). */
    static const char *const alloc_vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < sizeof(alloc_vars) / sizeof(alloc_vars[0]); i++) {
        const char *env = ml_env(alloc_vars[i]);
        if (env && (strstr(env, "expandable_segments:True") || strstr(env, "expandable_segments:true")))
            t->expandable_segments = true;
    }
    if (o->expseg)
        t->expandable_segments = true;
    struct {
        const char *val, *opt;
        uint32_t *dst;
    } vers[] = {{o->tfv, "--transformers-version", &t->versions.transformers},
                {o->dsv, "--deepspeed-version", &t->versions.deepspeed},
                {o->torchv, "--torch-version", &t->versions.torch}};
    for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
        if (!vers[i].val)
            continue;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_version_parse(vers[i].val, vers[i].dst, &d) != ML_OK) {
            ml_usage_error(o->cmd, "%s: %s", vers[i].opt, d.msg);
            return 0;
        }
    }
    return 1;
}

static int apply_flags(const struct ml_train_opts *o, struct ml_train *t)
{
    int v;
    uint64_t n;
    if (o->method) {
        static const char *const m[] = {"full", "freeze", "lora", "qlora"};
        if (!pick(o->cmd, "--method", o->method, m, 4, &v))
            return 0;
        t->method = (enum ml_method)v;
        if (t->method == ML_METHOD_QLORA && !t->quant_bits)
            t->quant_bits = 4;
        if (t->method != ML_METHOD_QLORA)
            t->quant_bits = 0;
    }
    if (o->qbits) {
        if (strcmp(o->qbits, "4") && strcmp(o->qbits, "8")) {
            ml_usage_error(o->cmd, _("--quant-bits: '%s' is not one of 4, 8"), o->qbits);
            return 0;
        }
        n = o->qbits[0] == '4' ? 4 : 8;
        t->quant_bits = (uint32_t)n;
        t->method = ML_METHOD_QLORA;
    }
    if (o->rank) {
        if (!ml_opt_u64(o->cmd, "--lora-rank", o->rank, 1, 65536, &t->lora_rank))
            return 0;
    }
    if (o->target) {
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_lora_targets_parse(o->target, &t->lora_targets, &d) != ML_OK) {
            ml_usage_error(o->cmd, "--lora-target: %s", d.msg);
            return 0;
        }
    }
    if (o->batch && !ml_opt_u64(o->cmd, "--batch", o->batch, 1, 1u << 20, &t->micro_batch))
        return 0;
    if (o->seq && !ml_opt_u64(o->cmd, "--seq", o->seq, 1, 1u << 24, &t->seq_len))
        return 0;
    if (o->ga && !ml_opt_u64(o->cmd, "--grad-accum", o->ga, 1, 1u << 20, &t->grad_accum))
        return 0;
    if (o->eval)
        t->do_eval = true;
    if (o->dtype) {
        static const char *const d[] = {"bf16", "fp16", "pure_bf16", "fp32"};
        if (!pick(o->cmd, "--dtype", o->dtype, d, 4, &v))
            return 0;
        t->precision = (enum ml_precision)v;
    }
    if (o->optim) {
        static const char *const on[] = {"adamw_torch",       "adamw_torch_fused", "adamw_8bit", "paged_adamw_8bit",
                                         "paged_adamw_32bit", "adafactor",         "sgd",        "galore_adamw"};
        if (!pick(o->cmd, "--optim", o->optim, on, ML_OPTIM_COUNT, &v))
            return 0;
        t->optim = (enum ml_optim)v;
        t->optim_set = true;
    }
    if (o->gc) {
        static const char *const g[] = {"off", "on", "non-reentrant", "unsloth"};
        if (!pick(o->cmd, "--grad-ckpt", o->gc, g, 4, &v))
            return 0;
        t->grad_ckpt = (enum ml_grad_ckpt)v;
    }
    if (o->attn) {
        static const char *const a[] = {"eager", "sdpa", "flash"};
        if (!pick(o->cmd, "--attn", o->attn, a, 3, &v))
            return 0;
        t->attn = (enum ml_attn)v;
    }
    return apply_sharding(o, t) && apply_env_and_versions(o, t);
}

void ml_train_opts_init(struct ml_train_opts *o, const char *cmd)
{
    memset(o, 0, sizeof(*o));
    o->cmd = cmd;
    o->num_gpus = o->nodes = 1;
}

int ml_train_opt(struct ml_train_opts *o, int c, const char *arg)
{
    switch (c) {
    case ML_TO_CONFIG: o->config = arg; break;
    case ML_TO_DS: o->deepspeed = arg; break;
    case ML_TO_SET:
        if (o->n_sets >= ML_TRAIN_MAX_SETS) {
            ml_usage_error(o->cmd, _("at most %d --set options"), ML_TRAIN_MAX_SETS);
            return -1;
        }
        o->sets[o->n_sets++] = arg;
        break;
    case ML_TO_FW: {
        static const char *const f[] = {"llamafactory", "hf", "litgpt", "torchtune", "trl"};
        int v;
        if (!pick(o->cmd, "--framework", arg, f, ML_FW_COUNT, &v))
            return -1;
        o->fw = (enum ml_framework)v;
        break;
    }
    case ML_TO_GPU: o->gpu = arg; break;
    case ML_TO_NGPU:
        if (!ml_opt_u64(o->cmd, "--num-gpus", arg, 1, 4096, &o->num_gpus))
            return -1;
        o->num_gpus_set = true;
        break;
    case ML_TO_NODES:
        if (!ml_opt_u64(o->cmd, "--nodes", arg, 1, 65536, &o->nodes))
            return -1;
        o->nodes_set = true;
        break;
    case ML_TO_ACCEL: o->accelerate = arg; break;
    case ML_TO_LF: o->lf_line = arg; break;
    case ML_TO_HOSTRAM: o->host_ram = arg; break;
    case ML_TO_METHOD: o->method = arg; break;
    case ML_TO_RANK: o->rank = arg; break;
    case ML_TO_TARGET: o->target = arg; break;
    case ML_TO_QBITS: o->qbits = arg; break;
    case ML_TO_BATCH: o->batch = arg; break;
    case ML_TO_SEQ: o->seq = arg; break;
    case ML_TO_GA: o->ga = arg; break;
    case ML_TO_EVAL: o->eval = true; break;
    case ML_TO_DTYPE: o->dtype = arg; break;
    case ML_TO_OPTIM: o->optim = arg; break;
    case ML_TO_GC: o->gc = arg; break;
    case ML_TO_ATTN: o->attn = arg; break;
    case ML_TO_ZERO: o->zero = arg; break;
    case ML_TO_OFFLOAD: o->offload = arg; break;
    case ML_TO_FSDP: o->fsdp = arg; break;
    case ML_TO_EXPSEG: o->expseg = true; break;
    case ML_TO_TFV: o->tfv = arg; break;
    case ML_TO_DSV: o->dsv = arg; break;
    case ML_TO_TORCHV: o->torchv = arg; break;
    case ML_TO_RUNDIR: o->run_dir = arg; break;
    default: return 0;
    }
    return 1;
}

/* Read a YAML (yaml true) or DeepSpeed JSON and apply it; prints the error, false on failure. */
static bool load_config(const char *path, bool yaml, struct ml_train *t, char *model, size_t model_n, char *ds,
                        size_t ds_n, bool quiet)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = ml_read_file(path, (size_t)4 << 20, &b, &d);
    if (st == ML_OK)
        st = yaml ? ml_train_apply_yaml(t, b.buf, b.len, path, model, model_n, ds, ds_n, &d)
                  : ml_zero_from_json(t, b.buf, b.len, path, &d);
    ml_buf_release(&b);
    if (st != ML_OK && !quiet)
        ml_report(&d);
    return st == ML_OK;
}

/* The YAML with a LLaMA-Factory command line's overrides merged over it (f->ov; no YAML at all
 * for the --key value form). */
static bool read_yaml(const struct ml_train_files *f, struct ml_train *t, char *model, size_t model_n, char *ds,
                      size_t ds_n, bool quiet)
{
    if (!f->n_ov)
        return !f->config || load_config(f->config, true, t, model, model_n, ds, ds_n, quiet);
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = f->config ? ml_read_file(f->config, (size_t)4 << 20, &b, &d) : ML_OK;
    if (st == ML_OK)
        st = ml_train_apply_yaml_with(t, b.buf, b.len, f->config, f->ov, f->n_ov, "command line", model, model_n, ds,
                                      ds_n, &d);
    ml_buf_release(&b);
    if (st != ML_OK && !quiet)
        ml_report(&d);
    return st == ML_OK;
}

/* ---- where each setting came from -------------------------------------------------------- */

/* The files read again, quietly, over perturbed defaults (rd->alt_yaml, rd->alt_ds); false when
 * that reading fails (then a setting counts as a file's when its value differs from the default). */
static bool read_alt(const struct ml_train_files *f, struct ml_train_read *rd)
{
    if ((f->config && !strcmp(f->config, "-")) || !strcmp(rd->ds_path, "-"))
        return false; /* standard input cannot be read twice */
    struct ml_train t = rd->defaults;
    ml_tracked_perturb(&t);
    t.warnings = NULL;
    char model[512], ds[512];
    if (!read_yaml(f, &t, model, sizeof(model), ds, sizeof(ds), true))
        return false;
    rd->alt_yaml = t;
    if (rd->ds_path[0] && !load_config(rd->ds_path, false, &t, NULL, 0, NULL, 0, true))
        return false;
    rd->alt_ds = t;
    return true;
}

/* Who set tracked setting k last before the flags: "--set K=V", the DeepSpeed file, the YAML, or
 * NULL (none: the default). */
static const char *set_by(const struct ml_train_files *f, const struct ml_train_read *rd, int k)
{
    if (rd->set_of[k] >= 0)
        return f->sets[rd->set_of[k]];
    bool alt = rd->have_alt && k != ML_TK_QBITS;
    bool by_files = alt ? !ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->alt_ds)
                        : ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->defaults);
    if (!by_files)
        return NULL;
    bool by_yaml = alt ? !ml_tracked_differs((enum ml_tracked)k, &rd->after_yaml, &rd->alt_yaml)
                       : ml_tracked_differs((enum ml_tracked)k, &rd->after_yaml, &rd->defaults);
    return !by_yaml || ml_tracked_differs((enum ml_tracked)k, &rd->after_ds, &rd->after_yaml) ? rd->ds_path : f->config;
}

bool ml_train_read(const struct ml_train_files *f, struct ml_train *t, struct ml_train_read *rd)
{
    rd->model[0] = rd->yaml_ds[0] = rd->ds_path[0] = '\0';
    rd->ds_how = ML_DS_NONE;
    for (int k = 0; k < ML_TK_COUNT; k++)
        rd->set_of[k] = -1;
    rd->defaults = *t;
    if (!read_yaml(f, t, rd->model, sizeof(rd->model), rd->yaml_ds, sizeof(rd->yaml_ds), false))
        return false;
    rd->after_yaml = *t;
    if (!ml_train_ds_resolve(f, rd))
        return false;
    if (rd->ds_path[0] && !load_config(rd->ds_path, false, t, NULL, 0, NULL, 0, false))
        return false;
    rd->after_ds = *t;
    for (int i = 0; i < f->n_sets; i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        struct ml_train before = *t;
        if (ml_train_set(t, f->sets[i], &d) != ML_OK) {
            ml_diag_at(&d, "--set", 0, 0);
            ml_report(&d);
            return false;
        }
        for (int k = 0; k < ML_TK_COUNT; k++)
            if (ml_tracked_differs((enum ml_tracked)k, &before, t))
                rd->set_of[k] = (int8_t)i;
    }
    rd->after_sets = *t;
    rd->have_alt = read_alt(f, rd);
    return true;
}

bool ml_train_read_configs(const char *config, const char *cli_ds, const char *const *sets, int n_sets,
                           struct ml_train *t, char *model, size_t model_n, char *ds_path, size_t ds_n)
{
    static struct ml_train_read rd;
    struct ml_train_files f = {config, cli_ds, NULL, sets, n_sets, NULL, 0};
    bool ok = ml_train_read(&f, t, &rd);
    (void)snprintf(model, model_n, "%s", ok ? rd.model : "");
    (void)snprintf(ds_path, ds_n, "%s", ok ? rd.ds_path : "");
    return ok;
}

/* A flag that changed what a file or --set had set: one warning saying which won. */
static void warn_overrides(const struct ml_train_opts *o, const struct ml_train_files *f,
                           const struct ml_train_read *rd, struct ml_train *t)
{
    const char *given[ML_TK_COUNT] = {o->method, o->qbits, o->rank, o->target, o->batch, o->seq,     o->ga,
                                      o->dtype,  o->optim, o->gc,   o->attn,   o->zero,  o->offload, o->fsdp};
    for (int k = 0; k < ML_TK_COUNT; k++) {
        const char *by = given[k] ? set_by(f, rd, k) : NULL;
        if (!by || !ml_tracked_differs((enum ml_tracked)k, t, &rd->after_sets))
            continue;
        char was[160];
        ml_tracked_value(&rd->after_sets, (enum ml_tracked)k, was, sizeof(was));
        bool from_set = rd->set_of[k] >= 0;
        ml_train_warn(t, _("%s %s wins over %s (%s%s): flags are applied after --set and the config files"),
                      ml_tracked_flag((enum ml_tracked)k), given[k], was, from_set ? "--set " : "",
                      from_set ? by : ml_path_base(by));
    }
}

/* The model: the MODEL argument, else the YAML's model_name_or_path (a local path in it is
 * relative to the run directory, as transformers' from_pretrained reads it). Prints the error. */
static bool resolve_model(const struct ml_train_opts *o, struct ml_train_setup *s)
{
    const char *yaml_model = s->rd.model;
    const struct ml_catalog_entry *ea = o->model ? ml_catalog_find(o->model) : NULL;
    if (o->model && yaml_model[0] && strcmp(o->model, yaml_model) && !(ea && ea == ml_catalog_find(yaml_model)))
        ml_train_warn(&s->t, _("MODEL %s wins over model_name_or_path %s (%s): the argument overrides the YAML"),
                      o->model, yaml_model, ml_path_base(o->config));
    if (!o->model && !yaml_model[0]) {
        if (o->config)
            ml_usage_error(
                o->cmd,
                _("%s has no model_name_or_path: give MODEL (a built-in name, hub id, config.json or directory)"),
                o->config);
        else
            ml_usage_error(
                o->cmd, "%s",
                _("missing MODEL (give a name, config.json or directory, or --config with model_name_or_path)"));
        return false;
    }
    char local[1024];
    const char *model = o->model;
    if (!model) {
        join(o->run_dir, yaml_model, local, sizeof(local));
        model = o->run_dir && (is_file(local) || is_dir_path(local)) ? local : yaml_model;
    }
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_resolve_model(model, &s->m, &d) == ML_OK)
        return true;
    if (o->model) {
        ml_report(&d);
        return false;
    }
    /* Say where the name came from, and how to override it. */
    const char *msg = d.msg[0] ? d.msg : ml_status_str(d.code);
    if (d.origin[0] && strcmp(d.origin, model))
        ml_errorf(_("%s: model_name_or_path %s: %s: %s (a MODEL argument overrides it)"), o->config, yaml_model,
                  d.origin, msg);
    else
        ml_errorf(_("%s: model_name_or_path %s: %s (a MODEL argument overrides it)"), o->config, yaml_model, msg);
    return false;
}

/* An error of the settings check, named after the input that brought it: the first of the YAML,
 * the DeepSpeed file and --set after which the check fails the same way (else the flags). */
static void report_check(const struct ml_train_opts *o, const struct ml_train_setup *s, struct ml_diag *d)
{
    /* A check the defaults already fail comes from the model itself (a quantized checkpoint's
     * format): named after its source. */
    const struct ml_train *stage[4] = {&s->rd.defaults, &s->rd.after_yaml, &s->rd.after_ds, &s->rd.after_sets};
    const char *origin[4] = {s->m.catalog_params ? s->m.name : s->m.source, o->config, s->rd.ds_path, "--set"};
    for (int i = 0; i < 4 && !d->origin[0]; i++) {
        if (!origin[i] || !origin[i][0])
            continue;
        struct ml_train t = *stage[i];
        t.warnings = NULL;
        struct ml_diag e;
        ml_diag_init(&e);
        if (ml_train_check(&t, &s->m.arch, &s->cl, &e) != ML_OK && !strcmp(e.msg, d->msg))
            ml_diag_at(d, origin[i], 0, 0);
    }
    ml_report(d);
}

/* LoRA targets that match no module, named after the input that gave them. */
static bool check_lora(const struct ml_train_opts *o, const struct ml_train_files *f, struct ml_train_setup *s)
{
    const struct ml_train *t = &s->t;
    if (t->method != ML_METHOD_LORA && t->method != ML_METHOD_QLORA)
        return true;
    static struct ml_lora_count lc;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_lora_count(&s->m.arch, &s->inv, &t->lora_targets, t->lora_rank ? t->lora_rank : 1, &lc, &d) == ML_OK)
        return true;
    const char *by = o->target                              ? "--lora-target"
                     : s->rd.set_of[ML_TK_LORA_TARGET] >= 0 ? "--set"
                                                            : set_by(f, &s->rd, ML_TK_LORA_TARGET);
    ml_diag_at(&d, by ? by : "", 0, 0);
    ml_report(&d);
    return false;
}

/* --accelerate FILE, read as `accelerate launch --config_file FILE` does: its FSDP/DeepSpeed
 * settings over the YAML's, num_processes (all GPUs over all nodes) and num_machines as the
 * cluster; a --num-gpus or --nodes that disagrees is an error naming both. The cluster goes to
 * cl (gpus_per_node 0: the file gave none). */
static bool ml_train_accelerate(const struct ml_train_opts *o, struct ml_train *t, char *ds_path, size_t ds_n,
                                struct ml_cluster *cl)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)1 << 20);
    struct ml_accelerate acc;
    enum ml_status st = ml_read_file(o->accelerate, (size_t)1 << 20, &b, &d);
    if (st == ML_OK)
        st = ml_train_apply_accelerate(t, b.buf, b.len, o->accelerate, &acc, &d);
    ml_buf_release(&b);
    if (st != ML_OK) {
        ml_report(&d);
        return false;
    }
    if (acc.deepspeed_file[0] && !o->deepspeed && !load_config(acc.deepspeed_file, false, t, NULL, 0, NULL, 0, false))
        return false;
    if (acc.deepspeed_file[0] && !o->deepspeed)
        (void)snprintf(ds_path, ds_n, "%s", acc.deepspeed_file);
    memset(cl, 0, sizeof(*cl));
    if (!acc.num_processes)
        return true;
    uint32_t nodes = acc.num_machines ? acc.num_machines : 1;
    uint32_t per = acc.num_processes / nodes;
    if (o->num_gpus_set && o->num_gpus != per) {
        ml_usage_error(o->cmd,
                       _("--num-gpus %llu disagrees with %s: num_processes %u over num_machines %u = %u GPUs "
                         "per node"),
                       (unsigned long long)o->num_gpus, o->accelerate, acc.num_processes, nodes, per);
        return false;
    }
    if (o->nodes_set && o->nodes != nodes) {
        ml_usage_error(o->cmd, _("--nodes %llu disagrees with %s: num_machines %u"), (unsigned long long)o->nodes,
                       o->accelerate, nodes);
        return false;
    }
    cl->gpus_per_node = per;
    cl->nodes = nodes;
    return true;
}

/* `train ... -- llamafactory-cli train x.yaml key=value ...` (or `--key value ...`, `--lf "..."`):
 * the config file and the launcher's cluster into the options, the overrides into s->lf_ov (read
 * with the YAML through one key table by ml_train_read, no limit on their number); a --config,
 * --accelerate, --num-gpus or --nodes that disagrees is an error naming both. */
static bool ml_train_lf_cmdline(struct ml_train_opts *o, struct ml_train_setup *s)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_lf_cmdline lf;
    s->lf_ov = calloc((size_t)o->lf_argc + 1, sizeof(*s->lf_ov));
    if (!s->lf_ov) {
        ml_usage_error(o->cmd, "%s", _("out of memory"));
        return false;
    }
    if (ml_lf_cmdline_parse(o->lf_argc, o->lf_argv, &lf, s->lf_ov, (size_t)o->lf_argc + 1, &d) != ML_OK) {
        ml_diag_at(&d, "--", 0, 0);
        ml_report(&d);
        return false;
    }
    s->lf_n_ov = lf.n_ov;
    if (lf.config && o->config) {
        ml_usage_error(o->cmd, _("--config %s and the command line's %s: give one"), o->config, lf.config);
        return false;
    }
    if (lf.accelerate && o->accelerate && strcmp(lf.accelerate, o->accelerate)) {
        ml_usage_error(o->cmd, _("--accelerate %s and the command line's --config_file %s: give one"), o->accelerate,
                       lf.accelerate);
        return false;
    }
    if (lf.config)
        o->config = lf.config;
    if (lf.accelerate)
        o->accelerate = lf.accelerate;
    uint32_t per = lf.nproc_per_node  ? lf.nproc_per_node
                   : lf.num_processes ? lf.num_processes / (lf.nnodes ? lf.nnodes : 1)
                   : !o->accelerate   ? lf.visible_devices
                                      : 0;
    if ((per && o->num_gpus_set && o->num_gpus != per) || (lf.nnodes && o->nodes_set && o->nodes != lf.nnodes)) {
        ml_usage_error(o->cmd,
                       _("--num-gpus %llu / --nodes %llu disagree with the command line's %u GPUs per node on %u "
                         "nodes"),
                       (unsigned long long)o->num_gpus, (unsigned long long)o->nodes, per ? per : (uint32_t)o->num_gpus,
                       lf.nnodes ? lf.nnodes : (uint32_t)o->nodes);
        return false;
    }
    if (per) {
        o->num_gpus = per;
        o->num_gpus_set = true;
    }
    if (lf.nnodes) {
        o->nodes = lf.nnodes;
        o->nodes_set = true;
    }
    return true;
}

int ml_train_setup_build(const struct ml_train_opts *o, struct ml_train_setup *s)
{
    struct ml_train *t = &s->t;
    ml_train_defaults(t, o->fw);
    s->warnings.n = 0;
    t->warnings = &s->warnings;
    struct ml_train_opts lo = *o; /* the options with what a LLaMA-Factory command line adds */
    struct ml_cluster acc_cl = {0};
    if (o->lf_line && o->lf_argc)
        return ml_usage_error(o->cmd, "%s", _("--lf and a command line after '--': give one"));
    if (o->lf_line) {
        /* The words live as long as the setup (the options point into them). */
        size_t n = strlen(o->lf_line) + 1;
        s->lf_buf = malloc(n);
        s->lf_words = malloc((n / 2 + 1) * sizeof(*s->lf_words));
        int k = s->lf_buf && s->lf_words ? ml_lf_split(o->lf_line, s->lf_buf, n, s->lf_words, (int)(n / 2 + 1)) : -1;
        if (k <= 0)
            return ml_usage_error(o->cmd, "%s", _("--lf: an empty command line or an unterminated quote"));
        lo.lf_argc = k;
        lo.lf_argv = s->lf_words;
    }
    if (lo.lf_argc) {
        if (!ml_train_lf_cmdline(&lo, s))
            return ML_EXIT_USAGE;
        o = &lo;
    }
    struct ml_train_files f = {o->config, o->deepspeed, o->run_dir, o->sets, o->n_sets, s->lf_ov, s->lf_n_ov};
    if (o->run_dir && !is_dir_path(o->run_dir))
        return ml_usage_error(o->cmd, _("--run-dir %s: not a directory"), o->run_dir);
    if (!ml_train_read(&f, t, &s->rd))
        return ML_EXIT_USAGE;
    (void)snprintf(s->ds_path, sizeof(s->ds_path), "%s", s->rd.ds_path);
    if (o->accelerate && !ml_train_accelerate(o, t, s->ds_path, sizeof(s->ds_path), &acc_cl))
        return ML_EXIT_USAGE;
    if (!apply_flags(o, t))
        return ML_EXIT_USAGE;
    warn_overrides(o, &f, &s->rd, t);
    if (!resolve_model(o, s))
        return ML_EXIT_USAGE;
    if (!o->gpu)
        return ml_usage_error(o->cmd, "%s",
                              _("--gpu is needed (a card such as a100-80g, or a size such as 16G or 15.98GiB)"));
    struct ml_diag d;
    memset(&s->cl, 0, sizeof(s->cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(o->gpu, &s->cl.gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    s->cl.gpus_per_node = acc_cl.gpus_per_node ? acc_cl.gpus_per_node : (uint32_t)o->num_gpus;
    s->cl.nodes = acc_cl.gpus_per_node ? acc_cl.nodes : (uint32_t)o->nodes;
    if (o->host_ram) {
        ml_diag_init(&d);
        if (ml_size_parse(o->host_ram, &s->cl.host_ram_bytes, NULL, &d) != ML_OK)
            return ml_usage_error(o->cmd, "--host-ram: %s", d.msg);
    }

    ml_diag_init(&d);
    if (ml_inventory_build(&s->m.arch, &s->inv, &d) != ML_OK) {
        ml_diag_at(&d, s->m.source, 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    ml_diag_init(&d);
    if (ml_train_check(t, &s->m.arch, &s->cl, &d) != ML_OK) {
        report_check(o, s, &d);
        return ML_EXIT_USAGE;
    }
    if (!check_lora(o, &f, s))
        return ML_EXIT_USAGE;
    ml_diag_init(&d);
    if (ml_ledger_train(&s->m.arch, &s->inv, t, &s->cl, NULL, &s->l, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }

    return ML_EXIT_OK;
}
