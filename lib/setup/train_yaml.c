/*
 * train_yaml.c - a LLaMA-Factory training YAML (and --set KEY=VALUE) -> struct ml_train: the entry
 * points (the files it is split into: train_yaml_int.h).
 *
 * The YAML is read with libyaml's event API, never into a tree: the top level must be a
 * mapping of scalar keys, each key is looked up in one table (key_table) that says how its
 * value maps onto struct ml_train, and nested values are skipped unless a key takes them
 * (fsdp_config, a list for lora_target). Anchors and aliases are refused (no alias bombs),
 * nesting is capped at 32 levels and input at 4 MiB.
 *
 * Settings that depend on several keys (precision, method, gradient checkpointing, packing,
 * the padded sequence length) are collected in struct pending and resolved once the whole
 * input is read, so the order of the keys never matters. Everything is applied to a copy of
 * the caller's struct, which is written back only when the whole input is valid.
 *
 * Value rules follow YAML 1.1 as PyYAML/OmegaConf read it (true/false/yes/no/on/off), and
 * accept numbers written 1e9, 1_000 or "2048" the way hand-written configs do. The sources:
 * LLaMA-Factory hparams/{model_args,data_args,finetuning_args,parser}.py and
 * model/model_utils/{checkpointing,attention}.py (docs/train-config.md lists every key).
 */
#include "train_yaml_int.h"

/* ---- resolution after the whole input --------------------------------------------------- */

static enum ml_status resolve(struct ctx *c)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;

    if (p->bf16_key && p->fp16_key) {
        c->line = p->prec_line;
        c->col = p->prec_col;
        return ml_ty_failf(c, ML_ERR_INVALID, _("'bf16' and 'fp16' cannot both be true"));
    }
    if (p->prec_touched || !c->set_mode) {
        if (p->pure_bf16)
            t->precision = ML_PREC_PURE_BF16;
        else if (p->bf16)
            t->precision = ML_PREC_BF16;
        else if (p->fp16)
            t->precision = ML_PREC_FP16;
        else if (c->schema == SCHEMA_V1)
            t->precision = ML_PREC_FP32; /* v1 fsdp2.py get_mp_policy: bf16 false = fp32 params */
        else if (t->framework == ML_FW_LLAMAFACTORY) {
            /* the checkpoint-dtype fallback is LLaMA-Factory's own; under --framework litgpt,
             * torchtune, trl or hf a YAML without a precision key keeps the profile's precision */
            t->precision = ML_PREC_BF16;
            ml_train_warn(t, _("no bf16, fp16 or pure_bf16: LLaMA-Factory then loads the model in the "
                               "checkpoint dtype and trains without autocast; modelled as bf16"));
        }
    }

    if (p->method_touched) {
        if (p->quant_bits && (p->ft == FT_FULL || p->ft == FT_FREEZE)) {
            c->line = p->quant_line;
            c->col = p->quant_col;
            return ml_ty_failf(c, ML_ERR_INVALID,
                               _("'quantization_bit' needs finetuning_type lora or oft (LLaMA-Factory "
                                 "quantizes only for LoRA/OFT), got %s"),
                               p->ft == FT_FULL ? "full" : "freeze");
        }
        t->quant_bits = p->quant_bits;
        switch (p->ft) {
        case FT_FULL: t->method = ML_METHOD_FULL; break;
        case FT_FREEZE: t->method = ML_METHOD_FREEZE; break;
        case FT_LORA:
        case FT_OFT: t->method = p->quant_bits ? ML_METHOD_QLORA : ML_METHOD_LORA; break;
        }
    }

    if (p->gc_touched) {
        bool on = p->hf_gc || (t->framework == ML_FW_LLAMAFACTORY && !p->gc_disabled);
        if (!on)
            t->grad_ckpt = ML_GC_OFF;
        else if (p->unsloth_gc)
            t->grad_ckpt = ML_GC_UNSLOTH;
        else if (!p->reentrant_gc)
            t->grad_ckpt = ML_GC_NON_REENTRANT;
        else
            t->grad_ckpt = ML_GC_REENTRANT;
    }

    if (p->pack_touched) {
        /* parser.py: packing defaults to stage == pt; neat_packing implies packing. */
        bool pk = p->packing >= 0 ? p->packing == 1 : t->stage == ML_STAGE_PT;
        t->neat_packing = p->neat;
        t->packing = pk || p->neat;
        /* The SFT collator pads to a multiple of 8 (pad_to_multiple_of=8); a pack is padded to
         * cutoff_len, then rounded the same way: s = ceil(cutoff_len / 8) * 8 either way. */
        if (p->cutoff)
            t->seq_len = (p->cutoff + 7) / 8 * 8;
    }

    if (p->galore) {
        t->optim = ML_OPTIM_GALORE_ADAMW;
        t->optim_set = true;
    }
    if (p->eval_on)
        t->do_eval = true;
    return ML_OK;
}

static void warn_unknown(struct ctx *c)
{
    char rest[ML_WARNING_LEN] = "";
    size_t n_rest = 0;
    uint32_t shown = c->n_unknown < UNKNOWN_MAX ? c->n_unknown : UNKNOWN_MAX;
    for (uint32_t i = 0; i < shown; i++) {
        const char *near = ml_ty_near_key(c->schema, c->unknown[i]);
        if (near) {
            ml_train_warn(c->t,
                          _("'%s' is not a LLaMA-Factory%s key (LLaMA-Factory refuses it); ignored; did you "
                            "mean '%s'?"),
                          c->unknown[i], c->schema == SCHEMA_V1 ? " v1" : "", near);
            continue;
        }
        size_t l = strlen(rest);
        (void)snprintf(rest + l, sizeof(rest) - l, "%s'%s'", n_rest ? ", " : "", c->unknown[i]);
        n_rest++;
    }
    if (c->n_unknown > shown)
        n_rest += c->n_unknown - shown;
    if (n_rest)
        ml_train_warn(c->t, _("%zu key%s that neither LLaMA-Factory nor memledger knows, ignored: %.120s%s"), n_rest,
                      n_rest == 1 ? "" : "s", rest, c->n_unknown > shown ? ", ..." : "");
}

/* Does a line start (column 1) with "key:"? */
static bool line_key(const char *line, const char *end, const char *key)
{
    size_t n = strlen(key);
    return (size_t)(end - line) > n && !strncmp(line, key, n) && line[n] == ':';
}

enum file_kind { KIND_V0, KIND_V1, KIND_ACCELERATE };

/*
 * Which file this is, from its top-level keys as they start lines: an accelerate config
 * (compute_environment, distributed_type: accelerate commands/config/cluster.py writes them),
 * LLaMA-Factory's v1 schema (model:, or its plugin keys, without model_name_or_path), or v0. A
 * text sniff: the reader that follows still parses the whole file.
 */
static enum file_kind sniff_kind(const char *data, size_t len, char *which, size_t which_n)
{
    static const char *const v1_keys[] = {"model",         "peft_config",      "dist_config",  "quant_config",
                                          "kernel_config", "micro_batch_size", "train_dataset"};
    bool v0 = false, v1 = false;
    const char *end = data + len;
    for (const char *p = data; p && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if (line_key(p, le, "compute_environment") || line_key(p, le, "distributed_type")) {
            (void)snprintf(which, which_n, "%s",
                           line_key(p, le, "distributed_type") ? "distributed_type" : "compute_environment");
            return KIND_ACCELERATE;
        }
        if (line_key(p, le, "model_name_or_path"))
            v0 = true;
        for (size_t i = 0; i < sizeof(v1_keys) / sizeof(v1_keys[0]); i++)
            if (line_key(p, le, v1_keys[i]))
                v1 = true;
        p = eol ? eol + 1 : NULL;
    }
    return v1 && !v0 ? KIND_V1 : KIND_V0;
}

/* Parse bytes with the event reader. */
static enum ml_status parse_text(struct ctx *c, const char *data, size_t len)
{
    struct yp y;
    memset(&y, 0, sizeof(y));
    y.c = c;
    y.data = data;
    y.len = len;
    if (!yaml_parser_initialize(&y.parser))
        return ml_ty_failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)(len ? data : ""), len);
    enum ml_status st = ml_ty_read_document(&y);
    if (y.have)
        yaml_event_delete(&y.ev);
    yaml_parser_delete(&y.parser);
    return st;
}

static bool known_v0(const char *key, void *arg)
{
    (void)arg;
    return ml_ty_lookup_in(SCHEMA_V0, key) != NULL;
}

static bool known_v1(const char *key, void *arg)
{
    (void)arg;
    return ml_ty_lookup_in(SCHEMA_V1, key) != NULL;
}

/*
 * Parse the file, first restoring lost line breaks (a config pasted into a chat or a web form
 * arrives as `model_name_or_path: x template: alpaca cutoff_len: 1024 ...` on one line): when
 * every `key:` word of such a line is a known key, the keys are read one per line with a
 * warning; when one is not, the file is refused with a hint. Errors in restored text are
 * reported at the original line.
 */
static enum ml_status parse_restored(struct ctx *c, const char *data, size_t len)
{
    struct ml_yaml_restore r;
    if (ml_yaml_restore_breaks(len ? data : "", len, c->schema == SCHEMA_V1 ? known_v1 : known_v0, NULL, &r) != ML_OK)
        return ml_ty_failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    if (r.blocker[0]) {
        c->line = r.blocker_line;
        c->col = 0;
        char blocker[sizeof(r.blocker)];
        memcpy(blocker, r.blocker, sizeof(blocker));
        uint32_t n = r.n_keys;
        ml_yaml_restore_release(&r);
        return ml_ty_failf(c, ML_ERR_PARSE,
                           _("%u 'key:' words on one line: its line breaks seem lost (a pasted config?); "
                             "not re-split, since '%s' is not a LLaMA-Factory key"),
                           n, blocker);
    }
    if (!r.buf)
        return parse_text(c, data, len);
    ml_train_warn(c->t,
                  _("line %u holds %u keys: its line breaks seem lost (a pasted config?); read as one key per line"),
                  r.line, r.n_keys);
    enum ml_status st = parse_text(c, r.buf, r.len);
    if (st != ML_OK && c->diag && c->diag->line && c->diag->line <= r.n_lines) {
        c->diag->line = r.line_of[c->diag->line - 1];
        c->diag->col = 0;
    }
    ml_yaml_restore_release(&r);
    return st;
}

/* One override, as a scalar of the file's schema (a dotted key reaches into a mapping key). */
static enum ml_status apply_override(struct ctx *c, const struct ml_train_override *o)
{
    char key[KEY_MAX], val[LIST_MAX];
    if (!o->key_len || o->key_len >= sizeof(key))
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%.*s' is not a key"), (int)(o->key_len > 60 ? 60 : o->key_len),
                           o->key);
    memcpy(key, o->key, o->key_len);
    key[o->key_len] = '\0';
    if (o->value && strlen(o->value) >= sizeof(val))
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s': the value is longer than %zu bytes"), key, sizeof(val) - 1);
    (void)snprintf(val, sizeof(val), "%s", o->value ? o->value : "true");
    bool plain = true;
    size_t vn = strlen(val);
    if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        plain = false;
    } else if (vn >= 2 && val[0] == '[' && val[vn - 1] == ']') {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
    }
    char *dot = strchr(key, '.');
    if (dot) {
        *dot = '\0';
        const struct key_def *pd = ml_ty_lookup_in(c->schema, key);
        if (pd && ml_ty_takes_mapping(pd)) {
            bool null = ml_ty_yaml_null(val, plain);
            return pd->id == S_FSDP_CONFIG    ? ml_ty_apply_fsdp_config(c, dot + 1, val, null)
                   : pd->id == S_ACCEL_CONFIG ? ml_ty_apply_accel_config(c, dot + 1, val, null)
                                              : ml_ty_apply_v1_sub(c, pd, dot + 1, val, null);
        }
        *dot = '.';
    }
    /* The v1 command (sft, dpo, rm) sets the stage, which is not a v1 key. */
    const struct key_def *d = ml_ty_lookup_in(c->schema, key);
    if (!d && !strcmp(key, "stage"))
        d = ml_ty_lookup_in(SCHEMA_V0, key);
    if (!d) {
        if (c->n_unknown++ < UNKNOWN_MAX)
            (void)snprintf(c->unknown[c->n_unknown - 1], KEY_MAX, "%s", key);
        return ML_OK;
    }
    c->n_known++;
    return ml_ty_apply_scalar(c, d, val, plain);
}

static enum ml_status apply_overrides(struct ctx *c)
{
    const char *file = c->origin;
    c->origin = c->ov_origin ? c->ov_origin : "command line";
    c->line = c->col = 0;
    enum ml_status st = ML_OK;
    for (size_t i = 0; i < c->n_ov && st == ML_OK; i++)
        st = apply_override(c, &c->ov[i]);
    c->origin = file;
    return st;
}

static enum ml_status apply_yaml(struct ml_train *t, const char *data, size_t len, const char *origin,
                                 const struct ml_train_override *ov, size_t n_ov, const char *ov_origin,
                                 char *model_name, size_t model_name_len, char *deepspeed_path,
                                 size_t deepspeed_path_len, struct ml_diag *diag)
{
    if (model_name && model_name_len)
        model_name[0] = '\0';
    if (deepspeed_path && deepspeed_path_len)
        deepspeed_path[0] = '\0';
    struct ml_train work = *t;
    struct ctx c = {.t = &work,
                    .set_mode = false,
                    .origin = origin,
                    .diag = diag,
                    .model_name = model_name,
                    .model_name_len = model_name_len,
                    .ds_path = deepspeed_path,
                    .ds_path_len = deepspeed_path_len,
                    .ov = ov,
                    .n_ov = n_ov,
                    .ov_origin = ov_origin};
    if (!data)
        len = 0;
    if (len > YAML_MAX_BYTES)
        return ml_ty_failf(&c, ML_ERR_TOOBIG, _("%zu bytes is too large for a training YAML (limit 4 MiB)"), len);
    if (len && memchr(data, '\0', len)) {
        ml_diag_locate(data, len, (size_t)((const char *)memchr(data, '\0', len) - data), &c.line, &c.col);
        return ml_ty_failf(&c, ML_ERR_PARSE, _("binary data (a NUL byte), expected YAML text"));
    }
    char which[32] = "";
    enum file_kind kind = sniff_kind(len ? data : "", len, which, sizeof(which));
    if (kind == KIND_ACCELERATE)
        return ml_ty_failf(&c, ML_ERR_INVALID,
                           _("this is an accelerate config (%s), not a LLaMA-Factory YAML: pass it "
                             "with --accelerate"),
                           which);
    c.schema = kind == KIND_V1 ? SCHEMA_V1 : SCHEMA_V0;
    ml_ty_pending_init(&c.p, &work, false);
    if (c.schema == SCHEMA_V1) {
        /* v1 TrainingArguments: bf16 true; no peft_config = full fine-tuning; activation
         * checkpointing on, non-reentrant (core/base_trainer.py). */
        c.p.bf16 = true;
        c.p.ft = FT_FULL;
        c.p.method_touched = true;
        c.p.gc_touched = true;
        c.p.reentrant_gc = false;
        c.p.gc_disabled = false;
        work.micro_batch = 1; /* micro_batch_size default 1 */
    }

    enum ml_status st = len || !n_ov ? parse_restored(&c, data, len) : ML_OK;
    if (st == ML_OK && n_ov)
        st = apply_overrides(&c);
    if (st == ML_OK && c.n_keys && !c.n_known) {
        c.line = c.col = 0;
        st = ml_ty_failf(&c, ML_ERR_INVALID, _("no LLaMA-Factory training key here ('%s', ...): not a training YAML"),
                         c.unknown[0]);
    }
    if (st == ML_OK && !c.seen_train && !c.n_ov && (c.seen_infer || c.seen_export)) {
        c.line = c.col = 0;
        if (c.seen_infer)
            st = ml_ty_failf(&c, ML_ERR_INVALID,
                             _("an inference config (infer_backend, no training key), not a training "
                               "run: its serving memory is 'memledger infer --config %s'"),
                             c.origin);
        else
            st = ml_ty_failf(&c, ML_ERR_INVALID,
                             _("an export config (export_dir, no training key): merging and exporting "
                               "are not a training run"));
    }
    if (st == ML_OK)
        warn_unknown(&c);
    if (st == ML_OK)
        st = resolve(&c);
    if (st != ML_OK) {
        if (model_name && model_name_len)
            model_name[0] = '\0';
        if (deepspeed_path && deepspeed_path_len)
            deepspeed_path[0] = '\0';
        return st;
    }
    *t = work;
    return ML_OK;
}

/* ---- --set KEY=VALUE -------------------------------------------------------------------- */

static void trim(char *s)
{
    size_t n = strlen(s), i = 0;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    if (i)
        memmove(s, s + i, n - i + 1);
}

static enum ml_status set_one(struct ml_train *t, const char *key_value, struct ml_diag *diag)
{
    struct ml_train work = *t;
    struct ctx c = {.t = &work, .set_mode = true, .origin = "--set", .diag = diag};
    const char *kv = key_value ? key_value : "";
    const char *eq = strchr(kv, '=');
    char key[KEY_MAX], val[LIST_MAX];
    size_t klen = eq ? (size_t)(eq - kv) : 0;
    if (!eq || klen >= sizeof(key) || strlen(eq + 1) >= sizeof(val))
        return ml_ty_failf(&c, ML_ERR_INVALID, _("expected KEY=VALUE, got '%.60s'"), kv);
    memcpy(key, kv, klen);
    key[klen] = '\0';
    (void)snprintf(val, sizeof(val), "%s", eq + 1);
    trim(key);
    trim(val);
    if (!key[0])
        return ml_ty_failf(&c, ML_ERR_INVALID, _("expected KEY=VALUE, got '%.60s'"), kv);
    /* A quoted value is a string (never null or a YAML boolean, as in a file). */
    bool plain = true;
    size_t vn = strlen(val);
    if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        plain = false;
    }
    /* A flow list ([q_proj, v_proj]) for the keys that take lists: its items, comma-separated. */
    vn = strlen(val);
    if (plain && vn >= 2 && val[0] == '[' && val[vn - 1] == ']') {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        trim(val);
    }
    ml_ty_pending_init(&c.p, &work, true);

    enum ml_status st;
    if (!strncmp(key, "fsdp_config.", 12)) {
        st = ml_ty_apply_fsdp_config(&c, key + 12, val, ml_ty_yaml_null(val, plain));
    } else if (!strncmp(key, "accelerator_config.", 19)) {
        st = ml_ty_apply_accel_config(&c, key + 19, val, ml_ty_yaml_null(val, plain));
    } else {
        const struct key_def *d = ml_ty_lookup(key);
        if (!d) {
            const char *near = ml_ty_near_key(SCHEMA_V0, key);
            if (near)
                ml_train_warn(&work,
                              _("--set %.60s: neither LLaMA-Factory nor memledger knows this key; ignored; "
                                "did you mean '%s'?"),
                              key, near);
            else
                ml_train_warn(&work, _("--set %.60s: neither LLaMA-Factory nor memledger knows this key; ignored"),
                              key);
            *t = work;
            return ML_OK;
        }
        if (d->kind == K_SPECIAL && (d->id == S_MODEL || d->id == S_DEEPSPEED)) {
            /* File names belong to the command line's own options. */
            return ml_ty_failf(&c, ML_ERR_INVALID,
                               _("'%s' cannot be changed with --set; use the command's "
                                 "option for it"),
                               key);
        }
        st = ml_ty_apply_scalar(&c, d, val, plain);
    }
    if (st == ML_OK)
        st = resolve(&c);
    if (st != ML_OK)
        return st;
    *t = work;
    return ML_OK;
}

/* A YAML or --set that fails leaves the run as it was, warnings included. */
static enum ml_status keep_warnings(struct ml_train *t, uint32_t n_warn, enum ml_status st)
{
    if (st != ML_OK && t->warnings)
        t->warnings->n = n_warn;
    return st;
}

enum ml_status ml_train_apply_yaml(struct ml_train *t, const char *data, size_t len, const char *origin,
                                   char *model_name, size_t model_name_len, char *deepspeed_path,
                                   size_t deepspeed_path_len, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn,
                         apply_yaml(t, data, len, origin, NULL, 0, NULL, model_name, model_name_len, deepspeed_path,
                                    deepspeed_path_len, diag));
}

enum ml_status ml_train_apply_yaml_with(struct ml_train *t, const char *data, size_t len, const char *origin,
                                        const struct ml_train_override *ov, size_t n_ov, const char *ov_origin,
                                        char *model_name, size_t model_name_len, char *deepspeed_path,
                                        size_t deepspeed_path_len, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn,
                         apply_yaml(t, data, len, origin ? origin : "command line", ov, n_ov, ov_origin, model_name,
                                    model_name_len, deepspeed_path, deepspeed_path_len, diag));
}

/* The key of a --set KEY=VALUE, trimmed, into out (false when there is none or it is too long). */
static bool set_key(const char *kv, char out[KEY_MAX])
{
    const char *eq = kv ? strchr(kv, '=') : NULL;
    size_t n = eq ? (size_t)(eq - kv) : 0;
    if (!n || n >= KEY_MAX)
        return false;
    memcpy(out, kv, n);
    out[n] = '\0';
    trim(out);
    return true;
}

void ml_train_set_repeats(struct ml_train *t, const char *const *sets, int n)
{
    for (int i = 0; i < n; i++) {
        char ki[KEY_MAX], kj[KEY_MAX];
        if (!set_key(sets[i], ki))
            continue;
        int last = -1, times = 0;
        bool seen_before = false;
        for (int j = 0; j < n; j++) {
            if (!set_key(sets[j], kj) || strcmp(ki, kj))
                continue;
            seen_before |= j < i;
            times++;
            last = j;
        }
        if (times > 1 && !seen_before)
            ml_train_warn(t, _("--set %.60s given %d times: the last, %.60s, wins"), ki, times,
                          strchr(sets[last], '=') + 1);
    }
}

enum ml_status ml_train_set(struct ml_train *t, const char *key_value, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn, set_one(t, key_value, diag));
}
