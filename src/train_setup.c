/*
 * train_setup.c - the training options shared by `train` and `compare` (see train_setup.h),
 * moved out of cmd_train.c unchanged.
 */
#include "train_setup.h"
#include "io.h"

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

void ml_train_ds_path(const char *config, const char *cli_ds, const char *yaml_ds, char *out, size_t n)
{
    out[0] = '\0';
    if (cli_ds) {
        (void)snprintf(out, n, "%s", cli_ds);
    } else if (yaml_ds && yaml_ds[0]) {
        /* LLaMA-Factory resolves deepspeed: relative to the working directory; a file next to
         * the YAML is the common layout, so try that first. */
        char dir[512] = "";
        if (config)
            dir_of(config, dir, sizeof(dir));
        (void)snprintf(out, n, "%s%s", yaml_ds[0] == '/' ? "" : dir, yaml_ds);
        if (ml_path_kind(out) == ML_PATH_NONE)
            (void)snprintf(out, n, "%s", yaml_ds);
    }
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
        if (!ml_opt_u64(o->cmd, "--quant-bits", o->qbits, 4, 8, &n) || (n != 4 && n != 8)) {
            if (n != 4 && n != 8)
                ml_usage_error(o->cmd, _("--quant-bits must be 4 or 8"));
            return 0;
        }
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
        static const char *const on[] = {"adamw_torch", "adamw_torch_fused", "adamw_8bit", "paged_adamw_8bit",
                                         "paged_adamw_32bit", "adafactor", "sgd", "galore_adamw"};
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
        static const char *const f[] = {"llamafactory", "hf", "litgpt", "torchtune"};
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
        break;
    case ML_TO_NODES:
        if (!ml_opt_u64(o->cmd, "--nodes", arg, 1, 65536, &o->nodes))
            return -1;
        break;
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
    default: return 0;
    }
    return 1;
}

/* Read a YAML (yaml true) or DeepSpeed JSON and apply it; prints the error, false on failure. */
static bool load_config(const char *path, bool yaml, struct ml_train *t, char *model, size_t model_n, char *ds,
                        size_t ds_n)
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
    if (st != ML_OK)
        ml_report(&d);
    return st == ML_OK;
}

bool ml_train_read_configs(const char *config, const char *cli_ds, const char *const *sets, int n_sets,
                           struct ml_train *t, char *model, size_t model_n, char *ds_path, size_t ds_n)
{
    char yaml_ds[512] = "";
    model[0] = '\0';
    if (config && !load_config(config, true, t, model, model_n, yaml_ds, sizeof(yaml_ds)))
        return false;
    ml_train_ds_path(config, cli_ds, yaml_ds, ds_path, ds_n);
    if (ds_path[0] && !load_config(ds_path, false, t, NULL, 0, NULL, 0))
        return false;
    for (int i = 0; i < n_sets; i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_train_set(t, sets[i], &d) != ML_OK) {
            ml_diag_at(&d, "--set", 0, 0);
            ml_report(&d);
            return false;
        }
    }
    return true;
}

int ml_train_setup_build(const struct ml_train_opts *o, struct ml_train_setup *s)
{
    struct ml_train *t = &s->t;
    ml_train_defaults(t, o->fw);
    s->warnings.n = 0;
    t->warnings = &s->warnings;
    char yaml_model[512];
    if (!ml_train_read_configs(o->config, o->deepspeed, o->sets, o->n_sets, t, yaml_model, sizeof(yaml_model),
                               s->ds_path, sizeof(s->ds_path)))
        return ML_EXIT_USAGE;
    if (!apply_flags(o, t))
        return ML_EXIT_USAGE;

    /* The model: the argument, else the YAML's model_name_or_path. */
    const char *model = o->model ? o->model : yaml_model[0] ? yaml_model : NULL;
    if (!model)
        return ml_usage_error(o->cmd, "%s", _("missing MODEL (give a name, config.json or directory, or --config with model_name_or_path)"));
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_resolve_model(model, &s->m, &d);
    if (st != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    if (!o->gpu)
        return ml_usage_error(o->cmd, "%s", _("--gpu is needed (a card such as a100-80g, or a size such as 16G or 15.98GiB)"));
    memset(&s->cl, 0, sizeof(s->cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(o->gpu, &s->cl.gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    s->cl.gpus_per_node = (uint32_t)o->num_gpus;
    s->cl.nodes = (uint32_t)o->nodes;
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
        if (!d.origin[0] && o->config)
            ml_diag_at(&d, o->config, 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    ml_diag_init(&d);
    if (ml_ledger_train(&s->m.arch, &s->inv, t, &s->cl, NULL, &s->l, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }

    return ML_EXIT_OK;
}
