/*
 * accelerate.c - an accelerate config (the YAML `accelerate config` writes and `accelerate launch
 * --config_file FILE` reads) -> struct ml_train + the cluster (see train.h).
 *
 * The keys are accelerate's (commands/config/cluster.py writes them; utils/dataclasses.py
 * FullyShardedDataParallelPlugin and DeepSpeedPlugin read the FSDP_* and ACCELERATE_DEEPSPEED_*
 * variables `accelerate launch` sets from them; utils/constants.py lists the values). Read with
 * libyaml's event API like the LLaMA-Factory YAML: one mapping of scalar keys, fsdp_config and
 * deepspeed_config one level deep; anchors refused, nesting and size capped. docs/train-config.md
 * ("The accelerate config") lists every key.
 */
#include "memledger/train.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "i18n.h"

#define ACC_MAX_BYTES ((size_t)1 << 20)
#define ACC_MAX_DEPTH 16
#define ACC_KEY_MAX   96

struct acc {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool have;
    uint32_t depth;
    struct ml_train *t;
    struct ml_accelerate *out;
    const char *origin;
    struct ml_diag *diag;
    uint32_t line, col;
    bool fsdp, fsdp2, reshard_set;
    char strategy[32];   /* fsdp_sharding_strategy / reshard_after_forward as a name */
    int reshard;         /* -1 unset, 0, 1 */
    uint32_t zero_stage; /* deepspeed_config.zero_stage, 99 = unset */
    bool ds_offload_opt, ds_offload_param;
};

static enum ml_status afail(struct acc *a, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum ml_status afail(struct acc *a, enum ml_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_diag_vset(a->diag, st, fmt, ap);
    va_end(ap);
    ml_diag_at(a->diag, a->origin, a->line, a->col);
    return st;
}

static enum ml_status anext(struct acc *a)
{
    if (a->have) {
        yaml_event_delete(&a->ev);
        a->have = false;
    }
    if (!yaml_parser_parse(&a->parser, &a->ev)) {
        a->line = (uint32_t)a->parser.problem_mark.line + 1;
        a->col = (uint32_t)a->parser.problem_mark.column + 1;
        return afail(a, ML_ERR_PARSE, _("malformed YAML: %s"), a->parser.problem ? a->parser.problem : "syntax error");
    }
    a->have = true;
    a->line = (uint32_t)a->ev.start_mark.line + 1;
    a->col = (uint32_t)a->ev.start_mark.column + 1;
    switch (a->ev.type) {
    case YAML_ALIAS_EVENT: return afail(a, ML_ERR_PARSE, _("anchors and aliases are not supported"));
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if ((a->ev.type == YAML_SEQUENCE_START_EVENT && a->ev.data.sequence_start.anchor) ||
            (a->ev.type == YAML_MAPPING_START_EVENT && a->ev.data.mapping_start.anchor))
            return afail(a, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        if (++a->depth > ACC_MAX_DEPTH)
            return afail(a, ML_ERR_PARSE, _("YAML nested deeper than %d levels"), ACC_MAX_DEPTH);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (a->depth)
            a->depth--;
        break;
    case YAML_SCALAR_EVENT:
        if (a->ev.data.scalar.anchor)
            return afail(a, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        break;
    default: break;
    }
    return ML_OK;
}

static enum ml_status askip(struct acc *a)
{
    uint32_t target = a->depth - 1;
    while (a->depth > target) {
        enum ml_status st = anext(a);
        if (st != ML_OK)
            return st;
        if (a->ev.type == YAML_STREAM_END_EVENT || a->ev.type == YAML_NO_EVENT)
            return afail(a, ML_ERR_PARSE, _("malformed YAML: unexpected end of input"));
    }
    return ML_OK;
}

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

static bool ieq(const char *x, const char *y)
{
    for (; *x && *y; x++, y++)
        if (lower((unsigned char)*x) != lower((unsigned char)*y))
            return false;
    return *x == *y;
}

/* true/false as accelerate's str_to_bool reads them (and YAML's yes/no): 1, 0, -1 neither. */
static int abool(const char *v)
{
    if (ieq(v, "true") || ieq(v, "yes") || ieq(v, "y") || ieq(v, "on") || !strcmp(v, "1"))
        return 1;
    if (ieq(v, "false") || ieq(v, "no") || ieq(v, "n") || ieq(v, "off") || !strcmp(v, "0"))
        return 0;
    return -1;
}

static enum ml_status want_bool(struct acc *a, const char *key, const char *v, bool *out)
{
    int b = abool(v);
    if (b < 0)
        return afail(a, ML_ERR_INVALID, _("'%s' must be true or false, got '%.60s'"), key, v);
    *out = b == 1;
    return ML_OK;
}

static enum ml_status want_count(struct acc *a, const char *key, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint32_t n = 0;
    const char *p = v;
    if (!*p)
        return afail(a, ML_ERR_INVALID, _("'%s' must be a whole number, got '%.60s'"), key, v);
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || n > 100000000u)
            return afail(a, ML_ERR_INVALID, _("'%s' must be a whole number, got '%.60s'"), key, v);
        n = n * 10 + (uint32_t)(*p - '0');
    }
    if (n < lo || n > hi)
        return afail(a, ML_ERR_INVALID, _("'%s' = %.60s is out of range (%u to %u)"), key, v, lo, hi);
    *out = n;
    return ML_OK;
}

/* fsdp_config.KEY (the "fsdp_" prefix optional, as accelerate strips it). */
static enum ml_status fsdp_key(struct acc *a, const char *full, const char *v)
{
    struct ml_train *t = a->t;
    const char *k = strncmp(full, "fsdp_", 5) ? full : full + 5;
    bool b = false;
    enum ml_status st = ML_OK;
    if (!strcmp(k, "version")) {
        uint32_t n;
        if ((st = want_count(a, "fsdp_config.fsdp_version", v, 1, 2, &n)) == ML_OK)
            a->fsdp2 = n == 2;
    } else if (!strcmp(k, "sharding_strategy")) {
        (void)snprintf(a->strategy, sizeof(a->strategy), "%s", v);
    } else if (!strcmp(k, "reshard_after_forward")) {
        a->reshard_set = true;
        a->reshard = abool(v);
        if (a->reshard < 0)
            (void)snprintf(a->strategy, sizeof(a->strategy), "%s", v);
    } else if (!strcmp(k, "offload_params")) {
        st = want_bool(a, "fsdp_config.fsdp_offload_params", v, &t->fsdp_offload);
    } else if (!strcmp(k, "state_dict_type")) {
        if (strcmp(v, "FULL_STATE_DICT") && strcmp(v, "SHARDED_STATE_DICT") && strcmp(v, "LOCAL_STATE_DICT"))
            return afail(a, ML_ERR_INVALID,
                         _("'fsdp_config.fsdp_state_dict_type' must be FULL_STATE_DICT, "
                           "SHARDED_STATE_DICT or LOCAL_STATE_DICT, got '%.60s'"),
                         v);
        t->fsdp_full_state_dict = !strcmp(v, "FULL_STATE_DICT");
    } else if (!strcmp(k, "activation_checkpointing")) {
        /* FSDP's own checkpoint wrapper (non-reentrant) around every wrapped layer. */
        if ((st = want_bool(a, "fsdp_config.fsdp_activation_checkpointing", v, &b)) == ML_OK && b &&
            t->grad_ckpt == ML_GC_OFF)
            t->grad_ckpt = ML_GC_NON_REENTRANT;
    } else if (!strcmp(k, "cpu_ram_efficient_loading")) {
        st = want_bool(a, "fsdp_config.fsdp_cpu_ram_efficient_loading", v, &t->fsdp_ram_efficient);
    }
    /* auto_wrap_policy, transformer_layer_cls_to_wrap, min_num_params, backward_prefetch,
     * forward_prefetch, sync_module_states, use_orig_params: no memory effect modelled. */
    return st;
}

/* deepspeed_config.KEY (accelerate DeepSpeedPlugin). */
static enum ml_status ds_key(struct acc *a, const char *k, const char *v)
{
    if (!strcmp(k, "deepspeed_config_file")) {
        if (strlen(v) >= sizeof(a->out->deepspeed_file))
            return afail(a, ML_ERR_INVALID, _("'deepspeed_config.deepspeed_config_file' is too long"));
        (void)snprintf(a->out->deepspeed_file, sizeof(a->out->deepspeed_file), "%s", v);
    } else if (!strcmp(k, "zero_stage")) {
        return want_count(a, "deepspeed_config.zero_stage", v, 0, 3, &a->zero_stage);
    } else if (!strcmp(k, "offload_optimizer_device")) {
        a->ds_offload_opt = !strcmp(v, "cpu") || !strcmp(v, "nvme");
    } else if (!strcmp(k, "offload_param_device")) {
        a->ds_offload_param = !strcmp(v, "cpu") || !strcmp(v, "nvme");
    }
    return ML_OK;
}

static enum ml_status top_key(struct acc *a, const char *k, const char *v)
{
    struct ml_train *t = a->t;
    if (!strcmp(k, "distributed_type")) {
        static const char *const ok[] = {"NO",        "MULTI_GPU", "FSDP",       "DEEPSPEED",  "MULTI_NPU",
                                         "MULTI_XPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_HPU"};
        bool known = false;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
            known = known || !strcmp(v, ok[i]);
        if (!known)
            return afail(a, ML_ERR_INVALID,
                         _("'distributed_type' %.40s is not modelled (NO, MULTI_GPU, FSDP and "
                           "DEEPSPEED are)"),
                         v);
        (void)snprintf(a->out->distributed_type, sizeof(a->out->distributed_type), "%s", v);
        a->fsdp = !strcmp(v, "FSDP");
        return ML_OK;
    }
    if (!strcmp(k, "num_processes"))
        return want_count(a, "num_processes", v, 1, 1u << 20, &a->out->num_processes);
    if (!strcmp(k, "num_machines"))
        return want_count(a, "num_machines", v, 1, 65536, &a->out->num_machines);
    if (!strcmp(k, "mixed_precision")) {
        /* The training arguments' bf16/fp16 win under the HF Trainer; a config that disagrees is
         * what accelerate launch passes, so say so. */
        bool bf = t->precision == ML_PREC_BF16 || t->precision == ML_PREC_PURE_BF16;
        if (!strcmp(v, "bf16")   ? !bf
            : !strcmp(v, "fp16") ? t->precision != ML_PREC_FP16
                                 : strcmp(v, "no") && strcmp(v, "fp8"))
            ml_train_warn(t,
                          _("accelerate mixed_precision %.10s differs from the training arguments (%s); the "
                            "training arguments are modelled"),
                          v, ml_precision_name(t->precision));
        if (!strcmp(v, "fp8"))
            ml_train_warn(t, _("accelerate mixed_precision fp8 is not modelled; estimated as %s"),
                          ml_precision_name(t->precision));
        return ML_OK;
    }
    if (!strcmp(k, "use_cpu") && abool(v) == 1)
        return afail(a, ML_ERR_INVALID, _("'use_cpu' true: a CPU run uses no GPU memory"));
    if (!strncmp(k, "parallelism_config_", 19) && strcmp(v, "1") && strcmp(v, "null") && strcmp(v, "")) {
        if (!strcmp(k, "parallelism_config_cp_size"))
            return want_count(a, k, v, 1, 4096, &t->cp_size);
        if (strcmp(k, "parallelism_config_dp_shard_size") && strcmp(k, "parallelism_config_dp_replicate_size"))
            return afail(a, ML_ERR_INVALID, _("'%s' (accelerate ParallelismConfig) is not modelled"), k);
    }
    return ML_OK;
}

/* A mapping value under a top-level key: fsdp_config or deepspeed_config; others skipped. */
static enum ml_status read_sub(struct acc *a, const char *parent)
{
    bool fsdp = !strcmp(parent, "fsdp_config"), ds = !strcmp(parent, "deepspeed_config");
    if (!fsdp && !ds)
        return askip(a);
    for (;;) {
        enum ml_status st = anext(a);
        if (st != ML_OK)
            return st;
        if (a->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (a->ev.type != YAML_SCALAR_EVENT)
            return afail(a, ML_ERR_PARSE, _("keys of '%s' must be plain names"), parent);
        char k[ACC_KEY_MAX];
        (void)snprintf(k, sizeof(k), "%s", (const char *)a->ev.data.scalar.value);
        if ((st = anext(a)) != ML_OK)
            return st;
        if (a->ev.type != YAML_SCALAR_EVENT) {
            if ((a->ev.type == YAML_SEQUENCE_START_EVENT || a->ev.type == YAML_MAPPING_START_EVENT) &&
                (st = askip(a)) != ML_OK)
                return st;
            continue;
        }
        const char *v = (const char *)a->ev.data.scalar.value;
        if (!*v || !strcmp(v, "null") || !strcmp(v, "~"))
            continue;
        if ((st = fsdp ? fsdp_key(a, k, v) : ds_key(a, k, v)) != ML_OK)
            return st;
    }
}

static enum ml_status read_doc(struct acc *a)
{
    enum ml_status st;
    for (int i = 0; i < 3; i++) /* stream start, document start, the mapping */
        if ((st = anext(a)) != ML_OK)
            return st;
    if (a->ev.type != YAML_MAPPING_START_EVENT)
        return afail(a, ML_ERR_PARSE, _("expected a mapping of accelerate keys at the top level"));
    bool any = false;
    for (;;) {
        if ((st = anext(a)) != ML_OK)
            return st;
        if (a->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (a->ev.type != YAML_SCALAR_EVENT)
            return afail(a, ML_ERR_PARSE, _("keys must be plain names, not lists or mappings"));
        char k[ACC_KEY_MAX];
        (void)snprintf(k, sizeof(k), "%s", (const char *)a->ev.data.scalar.value);
        if (!strcmp(k, "model_name_or_path") || !strcmp(k, "stage") || !strcmp(k, "finetuning_type"))
            return afail(a, ML_ERR_INVALID,
                         _("'%s' is a LLaMA-Factory key: this is a training YAML; pass it with "
                           "--config"),
                         k);
        any = any || !strcmp(k, "distributed_type") || !strcmp(k, "compute_environment") || !strcmp(k, "num_processes");
        if ((st = anext(a)) != ML_OK)
            return st;
        if (a->ev.type == YAML_MAPPING_START_EVENT)
            st = read_sub(a, k);
        else if (a->ev.type == YAML_SEQUENCE_START_EVENT)
            st = askip(a);
        else if (a->ev.type == YAML_SCALAR_EVENT)
            st = top_key(a, k, (const char *)a->ev.data.scalar.value);
        if (st != ML_OK)
            return st;
    }
    if (!any) {
        a->line = a->col = 0;
        return afail(a, ML_ERR_INVALID,
                     _("no distributed_type, compute_environment or num_processes: not an "
                       "accelerate config"));
    }
    return ML_OK;
}

/* The FSDP mode from fsdp_version with fsdp_sharding_strategy or fsdp_reshard_after_forward
 * (utils/dataclasses.py FullyShardedDataParallelPlugin.__post_init__: FSDP2 takes a bool; FSDP1
 * a strategy name or its number 1-5; true/false = FULL_SHARD / SHARD_GRAD_OP). */
static enum ml_status resolve_fsdp(struct acc *a)
{
    struct ml_train *t = a->t;
    if (!a->fsdp) {
        t->fsdp = ML_FSDP_NONE;
        return ML_OK;
    }
    t->deepspeed = false;
    t->fsdp_version = a->fsdp2 ? 2 : 1;
    if (a->fsdp2 && a->strategy[0] && a->reshard_set)
        return afail(a, ML_ERR_INVALID,
                     _("'fsdp_config.fsdp_reshard_after_forward' must be true or false with "
                       "fsdp_version 2, got '%.30s'"),
                     a->strategy);
    static const char *const names[] = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                        "HYBRID_SHARD_ZERO2"};
    static const enum ml_fsdp_mode modes[] = {ML_FSDP_FULL_SHARD, ML_FSDP_SHARD_GRAD_OP, ML_FSDP_NONE,
                                              ML_FSDP_HYBRID_SHARD, ML_FSDP_HYBRID_SHARD};
    t->fsdp = a->reshard == 0 ? ML_FSDP_SHARD_GRAD_OP : ML_FSDP_FULL_SHARD;
    if (!a->strategy[0])
        return ML_OK;
    for (size_t i = 0; i < 5; i++) {
        char num[4];
        (void)snprintf(num, sizeof(num), "%zu", i + 1);
        if (ieq(a->strategy, names[i]) || !strcmp(a->strategy, num)) {
            t->fsdp = modes[i];
            return ML_OK;
        }
    }
    return afail(a, ML_ERR_INVALID,
                 _("'fsdp_config.fsdp_sharding_strategy' must be FULL_SHARD, SHARD_GRAD_OP, "
                   "NO_SHARD, HYBRID_SHARD or HYBRID_SHARD_ZERO2, got '%.30s'"),
                 a->strategy);
}

enum ml_status ml_train_apply_accelerate(struct ml_train *t, const char *data, size_t len, const char *origin,
                                         struct ml_accelerate *out, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    struct ml_train work = *t;
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    struct acc a;
    memset(&a, 0, sizeof(a));
    a.t = &work;
    a.out = out;
    a.origin = origin;
    a.diag = diag;
    a.reshard = -1;
    a.zero_stage = 99;
    if (!data)
        len = 0;
    if (len > ACC_MAX_BYTES)
        return afail(&a, ML_ERR_TOOBIG, _("%zu bytes is too large for an accelerate config (limit 1 MiB)"), len);
    if (len && memchr(data, '\0', len))
        return afail(&a, ML_ERR_PARSE, _("binary data (a NUL byte), expected YAML text"));
    if (!yaml_parser_initialize(&a.parser))
        return afail(&a, ML_ERR_NOMEM, _("out of memory reading YAML"));
    yaml_parser_set_input_string(&a.parser, (const unsigned char *)(len ? data : ""), len);
    enum ml_status st = read_doc(&a);
    if (a.have)
        yaml_event_delete(&a.ev);
    yaml_parser_delete(&a.parser);
    if (st == ML_OK)
        st = resolve_fsdp(&a);
    if (st == ML_OK && !strcmp(out->distributed_type, "DEEPSPEED") && !out->deepspeed_file[0] && a.zero_stage != 99) {
        ml_zero_preset(&work, a.zero_stage, a.ds_offload_opt || a.ds_offload_param);
        work.deepspeed = true;
        work.fsdp = ML_FSDP_NONE;
    }
    if (st == ML_OK && out->num_processes && out->num_machines && out->num_processes % out->num_machines) {
        a.line = a.col = 0;
        st = afail(&a, ML_ERR_INVALID,
                   _("num_processes %u (all GPUs over all nodes) is not a multiple of "
                     "num_machines %u"),
                   out->num_processes, out->num_machines);
    }
    if (st != ML_OK) {
        if (t->warnings)
            t->warnings->n = n_warn;
        memset(out, 0, sizeof(*out));
        return st;
    }
    *t = work;
    return ML_OK;
}
