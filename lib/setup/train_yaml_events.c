/*
 * train_yaml_events.c - the YAML event reader: libyaml's events into keys and values, never a
 * tree; anchors and aliases refused, nesting capped, duplicate keys refused.
 */
#include "train_yaml_int.h"

/* ---- the YAML event reader -------------------------------------------------------------- */

static uint32_t clamp32(size_t v)
{
    return v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void mark_at(struct ctx *c, yaml_mark_t m)
{
    c->line = clamp32(m.line + 1);
    c->col = clamp32(m.column + 1);
}

/* A syntax error that a key glued to its value explains (`cutoff_len:1024` on line 3 makes
 * libyaml stop at the end of the file): report that line and the key. */
static bool glued_error(struct yp *y)
{
    char word[KEY_MAX], key[KEY_MAX];
    uint32_t at =
        ml_yaml_glued_key(y->data, y->len, y->c->line ? y->c->line : UINT32_MAX, word, sizeof(word), key, sizeof(key));
    if (!at)
        return false;
    y->c->line = at;
    y->c->col = 1;
    size_t kl = strlen(key);
    (void)ml_ty_failf(y->c, ML_ERR_PARSE,
                      _("'%s': no space after ':', so YAML does not read a key '%s' here (write '%s: %s')"), word, key,
                      key, strlen(word) > kl ? word + kl + 1 : "");
    return true;
}

/* Delete the current event and read the next, refusing aliases, anchors and deep nesting. */
enum ml_status ml_ty_yp_next(struct yp *y)
{
    struct ctx *c = y->c;
    if (y->have) {
        yaml_event_delete(&y->ev);
        y->have = false;
    }
    if (!yaml_parser_parse(&y->parser, &y->ev)) {
        const yaml_parser_t *ps = &y->parser;
        if (ps->error == YAML_MEMORY_ERROR)
            return ml_ty_failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
        if (ps->error == YAML_READER_ERROR)
            ml_diag_locate(y->data, y->len, ps->problem_offset, &c->line, &c->col);
        else
            mark_at(c, ps->problem_mark);
        if (glued_error(y))
            return ML_ERR_PARSE;
        const char *problem = ps->problem ? ps->problem : "syntax error";
        if (ps->context)
            return ml_ty_failf(c, ML_ERR_PARSE, _("malformed YAML: %s, %s"), ps->context, problem);
        return ml_ty_failf(c, ML_ERR_PARSE, _("malformed YAML: %s"), problem);
    }
    y->have = true;
    const yaml_event_t *e = &y->ev;
    mark_at(c, e->start_mark);
    switch (e->type) {
    case YAML_ALIAS_EVENT: return ml_ty_failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
    case YAML_SCALAR_EVENT:
        if (e->data.scalar.anchor)
            return ml_ty_failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if ((e->type == YAML_SEQUENCE_START_EVENT && e->data.sequence_start.anchor) ||
            (e->type == YAML_MAPPING_START_EVENT && e->data.mapping_start.anchor))
            return ml_ty_failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        if (++y->depth > YAML_MAX_DEPTH)
            return ml_ty_failf(c, ML_ERR_PARSE, _("YAML nested deeper than %d levels"), YAML_MAX_DEPTH);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (y->depth)
            y->depth--;
        break;
    default: break;
    }
    return ML_OK;
}

/* The current event opened a collection: read through its end. */
enum ml_status ml_ty_yp_skip(struct yp *y)
{
    uint32_t target = y->depth - 1;
    while (y->depth > target) {
        enum ml_status st = ml_ty_yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_STREAM_END_EVENT || y->ev.type == YAML_NO_EVENT)
            return ml_ty_failf(y->c, ML_ERR_PARSE, _("malformed YAML: unexpected end of input"));
    }
    return ML_OK;
}

const char *ml_ty_scalar_text(const yaml_event_t *e)
{
    return (const char *)e->data.scalar.value;
}

bool ml_ty_scalar_plain(const yaml_event_t *e)
{
    return e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || e->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

/* A list given to a key that takes names (lora_target: [q_proj, v_proj]): join with sep. */
enum ml_status ml_ty_read_list(struct yp *y, const char *key, char sep, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (;;) {
        enum ml_status st = ml_ty_yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(y->c, ML_ERR_INVALID, _("'%s' must be a list of names"), key);
        const char *s = ml_ty_scalar_text(&y->ev);
        size_t k = strlen(s);
        if (n + k + 2 > cap)
            return ml_ty_failf(y->c, ML_ERR_INVALID, _("'%s' list is longer than %zu bytes"), key, cap - 1);
        if (n)
            buf[n++] = sep;
        memcpy(buf + n, s, k + 1);
        n += k;
    }
}

/* The sub-keys of a mapping that take a list of names (joined with commas). */
static bool sub_takes_list(const char *k)
{
    return !strcmp(k, "target_modules") || !strcmp(k, "modules_to_save") || !strcmp(k, "freeze_trainable_modules") ||
           !strcmp(k, "freeze_extra_modules");
}

/* accelerator_config's nested mappings (gradient_accumulation_kwargs: {sync_each_batch: true}):
 * their scalar keys as "outer.key"; anything deeper is named in a warning and skipped. */
static enum ml_status read_accel_kwargs(struct yp *y, const char *outer)
{
    for (;;) {
        enum ml_status st = ml_ty_yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(y->c, ML_ERR_PARSE, _("keys of '%s' must be plain names"), outer);
        char key[2 * KEY_MAX + 2];
        (void)snprintf(key, sizeof(key), "%s.%s", outer, ml_ty_scalar_text(&y->ev));
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_SCALAR_EVENT) {
            const char *val = ml_ty_scalar_text(&y->ev);
            st = ml_ty_apply_accel_config(y->c, key, val, ml_ty_yaml_null(val, ml_ty_scalar_plain(&y->ev)));
        } else {
            (void)ml_ty_apply_accel_config(y->c, key, "", false);
            st = ml_ty_yp_skip(y);
        }
        if (st != ML_OK)
            return st;
    }
}

/* A mapping value (fsdp_config: {fsdp_version: 2, ...}, the v1 plugin mappings): one level of
 * scalar keys, lists of names where a key takes them, anything deeper skipped. */
static enum ml_status read_submap(struct yp *y, const struct key_def *d)
{
    for (;;) {
        enum ml_status st = ml_ty_yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(y->c, ML_ERR_PARSE, _("keys of '%s' must be plain names"), d->key);
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", ml_ty_scalar_text(&y->ev));
        st = ml_ty_yp_next(y);
        if (st != ML_OK)
            return st;
        const char *val = NULL;
        bool plain = true;
        char buf[LIST_MAX];
        if (y->ev.type == YAML_SCALAR_EVENT) {
            val = ml_ty_scalar_text(&y->ev);
            plain = ml_ty_scalar_plain(&y->ev);
        } else if (y->ev.type == YAML_SEQUENCE_START_EVENT && d->id != S_FSDP_CONFIG && sub_takes_list(key)) {
            uint32_t line = y->c->line, col = y->c->col;
            if ((st = ml_ty_read_list(y, key, ',', buf, sizeof(buf))) != ML_OK)
                return st;
            y->c->line = line;
            y->c->col = col;
            val = buf;
            plain = false;
        } else if (y->ev.type == YAML_MAPPING_START_EVENT && d->id == S_ACCEL_CONFIG) {
            if ((st = read_accel_kwargs(y, key)) != ML_OK)
                return st;
            continue;
        } else if (y->ev.type == YAML_SEQUENCE_START_EVENT || y->ev.type == YAML_MAPPING_START_EVENT) {
            if (d->id == S_ACCEL_CONFIG) /* named in a warning, not dropped silently */
                (void)ml_ty_apply_accel_config(y->c, key, "", false);
            if ((st = ml_ty_yp_skip(y)) != ML_OK)
                return st;
            continue;
        }
        if (!val)
            continue;
        bool is_null = ml_ty_yaml_null(val, plain);
        st = d->id == S_FSDP_CONFIG    ? ml_ty_apply_fsdp_config(y->c, key, val, is_null)
             : d->id == S_ACCEL_CONFIG ? ml_ty_apply_accel_config(y->c, key, val, is_null)
                                       : ml_ty_apply_v1_sub(y->c, d, key, val, is_null);
        if (st != ML_OK)
            return st;
    }
}

bool ml_ty_takes_mapping(const struct key_def *d)
{
    return d && d->kind == K_SPECIAL &&
           (d->id == S_FSDP_CONFIG || d->id == S_ACCEL_CONFIG || d->id == S_V1_PEFT || d->id == S_V1_QUANT ||
            d->id == S_V1_DIST || d->id == S_V1_KERNEL || d->id == S_V1_OPTIM);
}

/* The value event of key (d: its table entry, NULL if unknown) is current: apply it. */
static enum ml_status apply_value(struct yp *y, const struct key_def *d, const char *key)
{
    struct ctx *c = y->c;
    const yaml_event_t *e = &y->ev;
    if (e->type == YAML_SCALAR_EVENT)
        return ml_ty_apply_scalar(c, d, ml_ty_scalar_text(e), ml_ty_scalar_plain(e));

    bool list = e->type == YAML_SEQUENCE_START_EVENT;
    if (list && d && d->kind == K_SPECIAL &&
        (d->id == S_LORA_TARGET || d->id == S_ADDITIONAL || d->id == S_FSDP || d->id == S_TT_SHARDED)) {
        char buf[LIST_MAX];
        uint32_t line = c->line, col = c->col;
        enum ml_status st = ml_ty_read_list(y, key, d->id == S_FSDP ? ' ' : ',', buf, sizeof(buf));
        if (st != ML_OK)
            return st;
        c->line = line;
        c->col = col;
        return ml_ty_apply_scalar(c, d, buf, false);
    }
    if (!list && ml_ty_takes_mapping(d))
        return read_submap(y, d);
    if (!d || d->kind == K_IGNORE)
        return ml_ty_yp_skip(y);
    if (d->kind == K_WARN) {
        c->t->unmodelled++;
        ml_train_warn(c->t, _("'%s' changes memory but is not modelled; %s"), d->key, _(d->note));
        return ml_ty_yp_skip(y);
    }
    if (d->kind == K_REFUSE)
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s': %s"), d->key, _(d->note));
    if (d->kind == K_SPECIAL && d->id == S_DEEPSPEED) {
        ml_train_warn(c->t, _("an inline deepspeed mapping is not read; pass the DeepSpeed JSON file"));
        return ml_ty_yp_skip(y);
    }
    return ml_ty_failf(
        c, ML_ERR_INVALID,
        list ? _("'%s' must be a single value, not a list") : _("'%s' must be a single value, not a mapping"), key);
}

/* FNV-1a, for the duplicate-key check. */
uint64_t ml_ty_hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* What the run is for: LLaMA-Factory's inference YAMLs (infer_backend, examples/inference) and
 * export YAMLs (export_dir, examples/merge_lora) have no training key. */
static void note_purpose(struct ctx *c, const char *key)
{
    static const char *const train_keys[] = {
        "stage",      "do_train",  "dataset",       "finetuning_type", "output_dir", "per_device_train_batch_size",
        "cutoff_len", "deepspeed", "train_dataset", "micro_batch_size"};
    for (size_t i = 0; i < sizeof(train_keys) / sizeof(train_keys[0]); i++)
        if (!strcmp(key, train_keys[i]))
            c->seen_train = true;
    c->seen_infer = c->seen_infer || !strcmp(key, "infer_backend");
    c->seen_export = c->seen_export || !strcmp(key, "export_dir");
}

/* Up to the top-level mapping: the stream, a document (not an empty file), a mapping. */
enum ml_status ml_ty_document_start(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = ml_ty_yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_STREAM_START_EVENT)
        return ml_ty_failf(c, ML_ERR_PARSE, _("malformed YAML: no stream start"));
    if ((st = ml_ty_yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type == YAML_STREAM_END_EVENT)
        return ml_ty_failf(c, ML_ERR_PARSE, _("empty file, expected a mapping of LLaMA-Factory keys"));
    if ((st = ml_ty_yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return glued_error(y)
                   ? ML_ERR_PARSE
                   : ml_ty_failf(c, ML_ERR_PARSE, _("expected a mapping of LLaMA-Factory keys at the top level"));
    return ML_OK;
}

/* After the top-level mapping: the end of the document, and no second one. */
enum ml_status ml_ty_document_end(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = ml_ty_yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_DOCUMENT_END_EVENT)
        return ml_ty_failf(c, ML_ERR_PARSE, _("malformed YAML: expected the end of the document"));
    if ((st = ml_ty_yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type == YAML_DOCUMENT_START_EVENT)
        return ml_ty_failf(c, ML_ERR_PARSE, _("more than one YAML document; expected one mapping"));
    return ML_OK;
}

/* Does a command-line override replace this top-level key (OmegaConf.merge)? */
static bool overridden(const struct ctx *c, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < c->n_ov; i++)
        if (c->ov[i].key_len == n && !memcmp(c->ov[i].key, key, n))
            return true;
    return false;
}

enum ml_status ml_ty_read_document(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = ml_ty_document_start(y)) != ML_OK)
        return st;

    uint64_t seen[SEEN_MAX];
    size_t n_seen = 0;
    /* The first bad value is reported only once the rest of the document has parsed: a
     * syntax error further down (which often explains the odd value) comes first. */
    struct ml_diag first;
    enum ml_status first_st = ML_OK;
    memset(&first, 0, sizeof(first));
    for (;;) {
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(c, ML_ERR_PARSE, _("keys must be plain names, not lists or mappings"));
        const char *raw = ml_ty_scalar_text(&y->ev);
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", raw);
        bool long_key = strlen(raw) >= sizeof(key);
        uint64_t h = ml_ty_hash_key(raw);
        for (size_t i = 0; i < n_seen; i++)
            if (seen[i] == h)
                return ml_ty_failf(c, ML_ERR_PARSE, _("duplicate key '%s'"), key);
        if (n_seen < SEEN_MAX)
            seen[n_seen++] = h;
        const struct key_def *d = long_key ? NULL : ml_ty_lookup_in(c->schema, key);
        c->n_keys++;
        note_purpose(c, key);
        if (overridden(c, key)) {
            c->n_known++;
            if ((st = ml_ty_yp_next(y)) != ML_OK)
                return st;
            if ((y->ev.type == YAML_SEQUENCE_START_EVENT || y->ev.type == YAML_MAPPING_START_EVENT) &&
                (st = ml_ty_yp_skip(y)) != ML_OK)
                return st;
            continue;
        }
        if (d)
            c->n_known++;
        else if (c->n_unknown++ < UNKNOWN_MAX)
            (void)snprintf(c->unknown[c->n_unknown - 1], KEY_MAX, "%s", key);
        if (first_st != ML_OK)
            d = NULL;
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        st = apply_value(y, d, key);
        if (st == ML_ERR_INVALID && first_st == ML_OK) {
            first_st = st;
            if (c->diag)
                first = *c->diag;
            /* Back to the top mapping if the value failed inside a list or mapping. */
            while (y->depth > 1) {
                if ((st = ml_ty_yp_next(y)) != ML_OK)
                    return st;
                if (y->ev.type == YAML_STREAM_END_EVENT || y->ev.type == YAML_NO_EVENT)
                    return ml_ty_failf(c, ML_ERR_PARSE, _("malformed YAML: unexpected end of input"));
            }
        } else if (st != ML_OK) {
            return st;
        }
    }
    if ((st = ml_ty_document_end(y)) != ML_OK)
        return st;
    if (first_st != ML_OK && c->diag)
        *c->diag = first;
    return first_st;
}

/* Keys neither LLaMA-Factory nor memledger knows: LLaMA-Factory refuses them (HfArgumentParser
 * parse_dict, allow_extra_keys false); memledger ignores them with a warning, naming the near
 * misses. */
