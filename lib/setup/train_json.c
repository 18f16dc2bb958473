/*
 * train_json.c - a DeepSpeed config (JSON) -> struct ml_train (zero, micro batch, GA).
 *
 * Key names and defaults are DeepSpeed's deepspeed/runtime/zero/config.py (each knob under its
 * stage3_ alias and its plain field name, as pydantic's populate_by_name accepts both) and
 * the HF integration (transformers/integrations/deepspeed.py) that fills "auto": only
 * reduce_bucket_size, stage3_prefetch_bucket_size and stage3_param_persistence_threshold are
 * filled from hidden_size; the micro batch, GA, clipping and precision switches are filled
 * from the training arguments. Everything is read into a copy and written back only when
 * the whole file is valid. cJSON's tree never leaves this file.
 */
#include "memledger/train.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "../model/json_dup.h"
#include "../model/json_in.h"
#include "memledger/units.h"

/* A DeepSpeed config is a few KiB. */
#define DS_MAX_BYTES ((size_t)4 << 20)
/* Sizes beyond 2^53 cannot come exactly out of a JSON double. */
#define MAX_EXACT ((uint64_t)1 << 53)

struct jr {
    struct ml_train *t; /* the working copy */
    const char *origin;
    struct ml_diag *diag;
    bool failed; /* an error is recorded; later ones are dropped */
};

static void fail(struct jr *r, enum ml_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(struct jr *r, enum ml_status st, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = true;
    va_list ap;
    va_start(ap, fmt);
    ml_diag_vset(r->diag, st, fmt, ap);
    va_end(ap);
    ml_diag_at(r->diag, r->origin, 0, 0);
}

/* A bool knob: true/false (pydantic also takes 0 and 1). Absent: *out unchanged. */
static bool get_bool(struct jr *r, const cJSON *obj, const char *prefix, const char *const *names, bool *out)
{
    const char *key = names[0];
    const cJSON *it = ml_json_find(obj, names, &key);
    if (!it)
        return false;
    if (cJSON_IsBool(it)) {
        *out = cJSON_IsTrue(it);
        return true;
    }
    if (cJSON_IsNumber(it) && (it->valuedouble == 0 || it->valuedouble == 1)) {
        *out = it->valuedouble != 0;
        return true;
    }
    fail(r, ML_ERR_INVALID, _("%s%s must be true or false"), prefix, key);
    return false;
}

/* A whole number from a JSON number (1e9, 5e8, 0.9e9) or a string ("1e9", "1_000"). */
static bool to_count(const cJSON *it, uint64_t max, uint64_t *out)
{
    if (cJSON_IsNumber(it)) {
        double v = it->valuedouble;
        if (!isfinite(v) || v < 0 || v != floor(v) || v > (double)max)
            return false;
        *out = (uint64_t)v;
        return true;
    }
    if (cJSON_IsString(it) && it->valuestring) {
        uint64_t v;
        if (ml_count_parse(it->valuestring, &v, NULL) != ML_OK || v > max)
            return false;
        *out = v;
        return true;
    }
    return false;
}

/*
 * A size knob (elements). hf_auto: transformers fills "auto" for it; for the others "auto"
 * reaches DeepSpeed, which rejects it, so it is modelled as the DeepSpeed default, with a
 * warning.
 */
static void get_size(struct jr *r, const cJSON *zo, const char *const *names, bool hf_auto, struct ml_ds_size *out)
{
    const char *key = names[0];
    const cJSON *it = ml_json_find(zo, names, &key);
    if (!it)
        return;
    if (cJSON_IsString(it) && it->valuestring && !strcmp(it->valuestring, "auto")) {
        if (hf_auto) {
            out->is_auto = true;
            out->is_set = true;
            out->value = 0;
        } else {
            ml_train_warn(r->t,
                          _("zero_optimization.%s \"auto\" is not filled in by transformers "
                            "(DeepSpeed rejects it); modelled as the DeepSpeed default"),
                          key);
        }
        return;
    }
    uint64_t v;
    if (!to_count(it, MAX_EXACT, &v)) {
        fail(r, ML_ERR_INVALID, _("zero_optimization.%s must be a whole number of elements (0 to 2^53)%s"), key,
             hf_auto ? _(" or \"auto\"") : "");
        return;
    }
    out->is_auto = false;
    out->is_set = true;
    out->value = v;
}

/* offload_optimizer / offload_param: {device: cpu|nvme|none, pin_memory}. */
static void get_offload(struct jr *r, const cJSON *zo, const char *name, bool *on, bool *pin)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(zo, name);
    if (!o || cJSON_IsNull(o))
        return;
    if (!cJSON_IsObject(o)) {
        fail(r, ML_ERR_INVALID, _("zero_optimization.%s must be an object"), name);
        return;
    }
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(o, "device");
    bool active = false;
    if (dev && !cJSON_IsNull(dev)) {
        const char *s = cJSON_IsString(dev) ? dev->valuestring : NULL;
        if (s && (!strcmp(s, "cpu") || !strcmp(s, "nvme")))
            active = true;
        else if (!s || strcmp(s, "none")) {
            fail(r, ML_ERR_INVALID, _("zero_optimization.%s.device must be \"cpu\", \"nvme\" or \"none\""), name);
            return;
        }
    }
    char prefix[64];
    (void)snprintf(prefix, sizeof(prefix), "zero_optimization.%s.", name);
    bool p = false;
    (void)get_bool(r, o, prefix, NAMES("pin_memory"), &p);
    *on = active;
    *pin = active && p;
}

/* "fp32" / "bf16" / "fp16" and DeepSpeed's DtypeEnum spellings. */
static bool parse_dtype(const char *s, enum ml_dtype *out)
{
    static const struct {
        const char *n;
        enum ml_dtype d;
    } names[] = {
        {"fp32", ML_DTYPE_FP32},          {"float32", ML_DTYPE_FP32},        {"float", ML_DTYPE_FP32},
        {"torch.float32", ML_DTYPE_FP32}, {"fp16", ML_DTYPE_FP16},           {"float16", ML_DTYPE_FP16},
        {"half", ML_DTYPE_FP16},          {"torch.float16", ML_DTYPE_FP16},  {"bf16", ML_DTYPE_BF16},
        {"bfloat16", ML_DTYPE_BF16},      {"torch.bfloat16", ML_DTYPE_BF16},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(s, names[i].n)) {
            *out = names[i].d;
            return true;
        }
    return false;
}

static void get_dtype(struct jr *r, const cJSON *obj, const char *path, const char *name, enum ml_dtype *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!it || cJSON_IsNull(it))
        return;
    if (!cJSON_IsString(it) || !parse_dtype(it->valuestring, out))
        fail(r, ML_ERR_INVALID, _("%s must be \"fp32\", \"bf16\" or \"fp16\""), path);
}

/* ---- the zero_optimization keys ------------------------------------------------------------ */

enum ds_kind {
    DS_BOOL,          /* a bool of struct ml_zero */
    DS_SIZE,          /* a struct ml_ds_size ("auto" reaches DeepSpeed: warned, the default used) */
    DS_SIZE_AUTO,     /* a struct ml_ds_size transformers fills "auto" for (from hidden_size) */
    DS_WARN_TRUE,     /* changes memory, not modelled: warned when true */
    DS_WARN_FALSE,    /* changes memory, not modelled: warned when false (the default is true) */
    DS_WARN_POSITIVE, /* changes memory, not modelled: warned when a number above 0 */
    DS_WARN_FALSE_Z3  /* changes memory, not modelled: warned when false under ZeRO-3 (default true) */
};

/* One key of zero_optimization: its names (DeepSpeed's stage3_ alias and its plain field name,
 * as pydantic's populate_by_name accepts both; deprecated spellings last), how it is read, where
 * it goes (offsetof struct ml_zero; set_off: a bool set when the key is present, 0 none) and, for
 * a warning, its text (NULL: "'zero_optimization.KEY' changes memory but is not modelled").
 * Sources: deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig); the stage, the offload blocks,
 * the legacy cpu_offload switches, model_persistence_threshold and zero_hpz_partition_size are
 * read by read_zero. A new key is one row here (docs/architecture.md, "Checklists"). */
static const struct ds_key {
    const char *const *names;
    enum ds_kind kind;
    size_t off, set_off;
    const char *note;
} zero_keys[] = {
#define Z(field) offsetof(struct ml_zero, field)
    {NAMES("overlap_comm"), DS_BOOL, Z(overlap_comm), Z(overlap_comm_set), NULL},
    {NAMES("contiguous_gradients"), DS_BOOL, Z(contiguous_gradients), 0, NULL},
    {NAMES("reduce_scatter"), DS_BOOL, Z(reduce_scatter), 0, NULL},
    {NAMES("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
           "stage3_gather_fp16_weights_on_model_save"),
     DS_BOOL, Z(gather_16bit_on_save), Z(gather_16bit_set), NULL},
    {NAMES("reduce_bucket_size"), DS_SIZE_AUTO, Z(reduce_bucket), 0, NULL},
    {NAMES("allgather_bucket_size"), DS_SIZE, Z(allgather_bucket), 0, NULL},
    {NAMES("stage3_prefetch_bucket_size", "prefetch_bucket_size"), DS_SIZE_AUTO, Z(prefetch_bucket), 0, NULL},
    {NAMES("stage3_param_persistence_threshold", "param_persistence_threshold"), DS_SIZE_AUTO, Z(persistence), 0, NULL},
    {NAMES("stage3_max_live_parameters", "max_live_parameters"), DS_SIZE, Z(max_live), 0, NULL},
    {NAMES("stage3_max_reuse_distance", "max_reuse_distance"), DS_SIZE, Z(max_reuse), 0, NULL},
    {NAMES("sub_group_size"), DS_SIZE, Z(sub_group), 0, NULL},
    /* ZeRO++ quantized communication and MiCS change the buffers; not modelled. */
    {NAMES("zero_quantized_weights"), DS_WARN_TRUE, 0, 0, NULL},
    {NAMES("zero_quantized_gradients"), DS_WARN_TRUE, 0, 0, NULL},
    {NAMES("zero_quantized_nontrainable_weights"), DS_WARN_TRUE, 0, 0, NULL},
    {NAMES("mics_shard_size"), DS_WARN_POSITIVE, 0, 0,
     N_("'zero_optimization.mics_shard_size' changes memory but is not modelled; estimated as plain ZeRO-3")},
    /* Default true: zero.Init replaces torch.nn.functional.linear by zero3_linear_wrap
     * (runtime/zero/partition_parameters.py patch_init_and_builtins, for the whole run), whose
     * LinearFunctionForZeroStage3 (runtime/zero/linear.py) saves the parameter, not its gathered
     * data, for the backward. False: torch's linear keeps each gathered 16-bit weight until its
     * backward, which the ledger's gathered set does not hold (docs/ledger.md, "Known gaps"). */
    {NAMES("memory_efficient_linear"), DS_WARN_FALSE_Z3, 0, 0, NULL},
#undef Z
};

static void read_zero_key(struct jr *r, const cJSON *zo, const struct ds_key *k)
{
    char *z = (char *)&r->t->zero;
    const cJSON *it;
    bool warn = false;
    switch (k->kind) {
    case DS_BOOL:
        if (get_bool(r, zo, "zero_optimization.", k->names, (bool *)(z + k->off)) && k->set_off)
            *(bool *)(z + k->set_off) = true;
        return;
    case DS_SIZE:
    case DS_SIZE_AUTO: get_size(r, zo, k->names, k->kind == DS_SIZE_AUTO, (struct ml_ds_size *)(z + k->off)); return;
    case DS_WARN_TRUE: warn = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(zo, k->names[0])); break;
    case DS_WARN_FALSE: warn = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(zo, k->names[0])); break;
    case DS_WARN_FALSE_Z3:
        warn = r->t->zero.stage == 3 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(zo, k->names[0]));
        break;
    case DS_WARN_POSITIVE:
        it = cJSON_GetObjectItemCaseSensitive(zo, k->names[0]);
        warn = cJSON_IsNumber(it) && it->valuedouble > 0;
        break;
    }
    if (warn && k->note)
        ml_train_warn(r->t, "%s", _(k->note));
    else if (warn)
        ml_train_warn(r->t, _("'zero_optimization.%s' changes memory but is not modelled"), k->names[0]);
}

static void read_zero_keys(struct jr *r, const cJSON *zo)
{
    for (size_t i = 0; i < sizeof(zero_keys) / sizeof(zero_keys[0]); i++)
        read_zero_key(r, zo, &zero_keys[i]);
}

static void read_zero(struct jr *r, const cJSON *zo)
{
    struct ml_zero *z = &r->t->zero;
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(zo, "stage");
    if (it && !cJSON_IsNull(it)) {
        if (!cJSON_IsNumber(it) ||
            !(it->valuedouble == 0 || it->valuedouble == 1 || it->valuedouble == 2 || it->valuedouble == 3)) {
            fail(r, ML_ERR_INVALID, _("zero_optimization.stage must be 0, 1, 2 or 3"));
            return;
        }
        z->stage = (uint32_t)it->valuedouble;
    }
    const char *pre = "zero_optimization.";
    get_offload(r, zo, "offload_optimizer", &z->offload_optimizer, &z->pin_memory);
    bool pin_param = false;
    get_offload(r, zo, "offload_param", &z->offload_param, &pin_param);
    /* Deprecated spellings (config.py cpu_offload*, new_param_fn): device cpu. */
    bool legacy = false;
    if (get_bool(r, zo, pre, NAMES("cpu_offload"), &legacy) && legacy)
        z->offload_optimizer = true;
    legacy = false;
    if (get_bool(r, zo, pre, NAMES("cpu_offload_param"), &legacy) && legacy)
        z->offload_param = true;
    legacy = false;
    if (get_bool(r, zo, pre, NAMES("cpu_offload_use_pin_memory"), &legacy))
        pin_param = pin_param || legacy;
    z->pin_memory = z->pin_memory || pin_param;
    read_zero_keys(r, zo);

    /* model_persistence_threshold: default sys.maxsize (unlimited); huge values mean the same. */
    const char *key = "model_persistence_threshold";
    it = ml_json_find(zo, NAMES("model_persistence_threshold", "stage3_model_persistence_threshold"), &key);
    if (it) {
        uint64_t v;
        if (cJSON_IsNumber(it) && isfinite(it->valuedouble) && it->valuedouble > (double)MAX_EXACT)
            z->model_persistence = UINT64_MAX;
        else if (to_count(it, MAX_EXACT, &v))
            z->model_persistence = v;
        else
            fail(r, ML_ERR_INVALID, _("zero_optimization.%s must be a whole number of elements"), key);
    }

    it = cJSON_GetObjectItemCaseSensitive(zo, "zero_hpz_partition_size");
    if (it && !cJSON_IsNull(it)) {
        uint64_t v;
        if (!cJSON_IsNumber(it) || !to_count(it, 65536, &v))
            fail(r, ML_ERR_INVALID,
                 _("zero_optimization.zero_hpz_partition_size must be a whole number from 1 to 65536"));
        else
            z->hpz_partition_size = v ? (uint32_t)v : 1;
    }
}

/* train_micro_batch_size_per_gpu / gradient_accumulation_steps: an integer, or "auto". */
static void get_batch(struct jr *r, const cJSON *root, const char *name, const char *yaml_name, uint64_t *field,
                      uint32_t int_bit)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!it || cJSON_IsNull(it))
        return;
    if (cJSON_IsString(it) && it->valuestring && !strcmp(it->valuestring, "auto"))
        return; /* filled from the training arguments */
    uint64_t v;
    if (!cJSON_IsNumber(it) || !to_count(it, (uint64_t)1 << 24, &v) || v == 0) {
        fail(r, ML_ERR_INVALID, _("%s must be a positive whole number or \"auto\""), name);
        return;
    }
    r->t->zero.int_batch |= int_bit;
    if (v != *field)
        ml_train_warn(r->t,
                      _("DeepSpeed %s %llu differs from %s %llu (transformers rejects the "
                        "mismatch); using %llu"),
                      name, (unsigned long long)v, yaml_name, (unsigned long long)*field, (unsigned long long)v);
    *field = v;
}

/* bf16 / fp16: {"enabled": true | false | "auto"}; returns 1 when explicitly enabled. */
static int get_enabled(struct jr *r, const cJSON *root, const char *const *names)
{
    const char *key = names[0];
    const cJSON *blk = ml_json_find(root, names, &key);
    if (!blk)
        return 0;
    if (!cJSON_IsObject(blk)) {
        fail(r, ML_ERR_INVALID, _("%s must be an object"), key);
        return 0;
    }
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(blk, "enabled");
    if (!en || cJSON_IsNull(en))
        return 0;
    if (cJSON_IsBool(en))
        return cJSON_IsTrue(en) ? 1 : 0;
    if (cJSON_IsString(en) && en->valuestring && !strcmp(en->valuestring, "auto"))
        return 0;
    fail(r, ML_ERR_INVALID, _("%s.enabled must be true, false or \"auto\""), key);
    return 0;
}

/* DeepSpeed AutoTP training: tensor_parallel.autotp_size (deepspeed/runtime/config.py
 * get_tensor_parallel_config; engine.py _init_tp_mesh_device). The ledger splits the linear
 * weights autotp_size ways and runs ZeRO over world / autotp_size (docs/ledger.md). */
static void read_autotp(struct jr *r, const cJSON *root)
{
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(root, "tensor_parallel");
    if (!tp || cJSON_IsNull(tp))
        return;
    const cJSON *n = cJSON_IsObject(tp) ? cJSON_GetObjectItemCaseSensitive(tp, "autotp_size") : NULL;
    if (!cJSON_IsObject(tp) || (n && !cJSON_IsNull(n) &&
                                (!cJSON_IsNumber(n) || n->valuedouble < 1 || n->valuedouble > 4096 ||
                                 n->valuedouble != (int)n->valuedouble))) {
        fail(r, ML_ERR_INVALID, _("tensor_parallel.autotp_size must be a whole number from 1 to 4096"));
        return;
    }
    if (n && !cJSON_IsNull(n))
        r->t->tp_size = (uint32_t)n->valuedouble;
}

static void read_root(struct jr *r, const cJSON *root)
{
    read_autotp(r, root);
    struct ml_train *t = r->t;
    const cJSON *zo = cJSON_GetObjectItemCaseSensitive(root, "zero_optimization");
    if (zo && !cJSON_IsNull(zo)) {
        if (!cJSON_IsObject(zo)) {
            fail(r, ML_ERR_INVALID, _("zero_optimization must be an object"));
            return;
        }
        read_zero(r, zo);
    }

    /* Precision switches: transformers fills "auto" from bf16/fp16 and rejects a hard-coded
     * value that disagrees with them. */
    int bf16 = get_enabled(r, root, NAMES("bf16", "bfloat16"));
    int fp16 = get_enabled(r, root, NAMES("fp16"));
    if (bf16 && fp16)
        fail(r, ML_ERR_INVALID, _("bf16.enabled and fp16.enabled cannot both be true"));
    else if (fp16 && t->precision != ML_PREC_FP16)
        ml_train_warn(t,
                      _("DeepSpeed fp16.enabled is true but the training arguments are %s "
                        "(transformers rejects the mismatch)"),
                      ml_precision_name(t->precision));
    else if (bf16 && t->precision != ML_PREC_BF16 && t->precision != ML_PREC_PURE_BF16)
        ml_train_warn(t,
                      _("DeepSpeed bf16.enabled is true but the training arguments are %s "
                        "(transformers rejects the mismatch)"),
                      ml_precision_name(t->precision));

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "data_types");
    if (dt && !cJSON_IsNull(dt)) {
        if (!cJSON_IsObject(dt))
            fail(r, ML_ERR_INVALID, _("data_types must be an object"));
        else
            get_dtype(r, dt, "data_types.grad_accum_dtype", "grad_accum_dtype", &t->zero.grad_accum_dtype);
    }
    get_dtype(r, root, "communication_data_type", "communication_data_type", &t->zero.comm_dtype);

    const cJSON *opt = cJSON_GetObjectItemCaseSensitive(root, "optimizer");
    if (opt && !cJSON_IsNull(opt)) {
        if (!cJSON_IsObject(opt)) {
            fail(r, ML_ERR_INVALID, _("optimizer must be an object"));
        } else {
            /* Without a type DeepSpeed builds no optimizer of its own (the Trainer's is used). */
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(opt, "type");
            if (ty && !cJSON_IsNull(ty)) {
                if (!cJSON_IsString(ty) || !ty->valuestring) {
                    fail(r, ML_ERR_INVALID, _("optimizer.type must be a string such as \"AdamW\""));
                } else {
                    t->zero.has_optimizer_block = true;
                    /* DeepSpeed builds FusedAdam (DeepSpeedCPUAdam when offloading) for both. */
                    if (strcmp(ty->valuestring, "Adam") && strcmp(ty->valuestring, "AdamW") &&
                        strcmp(ty->valuestring, "adam") && strcmp(ty->valuestring, "adamw"))
                        ml_train_warn(t,
                                      _("DeepSpeed optimizer '%.40s' is not modelled; estimated "
                                        "as Adam"),
                                      ty->valuestring);
                }
            }
        }
    }

    /* The DeepSpeed and LLaMA-Factory keys of --batch and --grad-accum: their rows of ML_SETTINGS. */
#define DS_KEY(id, track, flag, field, type, unit, owners, yaml, yaml_v1, ds, ...)                                     \
    ML_SETTING_IF_##track([ML_TK_##id] = ds, )
    static const char *const ds[ML_TK_COUNT] = {ML_SETTINGS(DS_KEY)};
#undef DS_KEY
    get_batch(r, root, ds[ML_TK_BATCH], ml_tracked_key(ML_TK_BATCH, ML_SD_LF), &t->micro_batch, ML_DS_INT_MICRO);
    get_batch(r, root, ds[ML_TK_GA], ml_tracked_key(ML_TK_GA, ML_SD_LF), &t->grad_accum, ML_DS_INT_ACCUM);
    /* train_batch_size: transformers fills "auto" with world size x micro-batch x accumulation and
     * refuses another integer (integrations/deepspeed.py trainer_config_process fill_match); only
     * whether it is an integer is kept (fit writes "auto" when a plan changes the product). */
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(root, "train_batch_size");
    if (cJSON_IsNumber(tb) && tb->valuedouble >= 0 && tb->valuedouble < 1e15) {
        t->zero.int_batch |= ML_DS_INT_GLOBAL;
        t->zero.train_batch_size = (uint64_t)tb->valuedouble;
    }
}

enum ml_status ml_zero_from_json(struct ml_train *t, const char *data, size_t len, const char *origin,
                                 struct ml_diag *diag)
{
    cJSON *root;
    enum ml_status ost = ml_json_open_object(data, len, DS_MAX_BYTES, "DeepSpeed config", origin, &root, diag);
    if (ost != ML_OK)
        return ost;

    struct ml_train work = *t;
    struct jr r = {&work, origin, diag, false};
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    work.deepspeed = true;
    /* Duplicated keys: the last value, as transformers' json.load reads the file (json_dup.h). */
    struct ml_json_dup dup[4];
    size_t n_dup = ml_json_keep_last(root, data, len, dup, 4);
    const char *base = origin && strrchr(origin, '/') ? strrchr(origin, '/') + 1 : origin ? origin : "";
    for (size_t i = 0; i < n_dup && i < 4; i++)
        ml_train_warn(&work,
                      _("%.60s:%u: duplicate key %.60s (also on line %u): the last is used, as transformers' json.load "
                        "does (DeepSpeed reading the file itself rejects it)"),
                      base, dup[i].last_line, dup[i].key, dup[i].first_line);
    if (n_dup > 4)
        ml_train_warn(&work, _("%.60s: %zu more duplicate keys (the last of each is used)"), base, n_dup - 4);
    read_root(&r, root);
    cJSON_Delete(root);
    if (r.failed) {
        if (t->warnings) /* a file that fails leaves the run as it was, warnings included */
            t->warnings->n = n_warn;
        return diag ? diag->code : ML_ERR_INVALID;
    }
    *t = work;
    return ML_OK;
}
