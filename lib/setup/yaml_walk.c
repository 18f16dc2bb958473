/*
 * yaml_walk.c - the reader for the other LLaMA-Factory configs (yaml_walk.h): every key and value
 * of one YAML document handed to a function, with the training reader's checks.
 */
#include "train_yaml_int.h"

/* ---- the reader for the other LLaMA-Factory configs (yaml_walk.h) ----------------------- */

bool ml_lf_key_known(const char *key)
{
    return ml_ty_lookup_in(SCHEMA_V0, key) != NULL;
}

const char *ml_lf_key_near(const char *key)
{
    return ml_ty_near_key(SCHEMA_V0, key);
}

struct walk {
    ml_yaml_entry_fn fn;
    void *arg;
};

/* Hand one value to the walker's function; its error is placed at the value. */
static enum ml_status walk_call(struct yp *y, const struct walk *w, const char *key, const char *val, bool is_null,
                                uint32_t line, uint32_t col)
{
    enum ml_status st = w->fn(w->arg, key, val, is_null, y->c->diag);
    if (st != ML_OK) {
        y->c->line = line;
        y->c->col = col;
        ml_diag_at(y->c->diag, y->c->origin, line, col);
    }
    return st;
}

/* The value of key is the current event: a scalar, a list of scalars, or a mapping of them. */
static enum ml_status walk_value(struct yp *y, const struct walk *w, const char *key)
{
    struct ctx *c = y->c;
    uint32_t line = c->line, col = c->col;
    enum ml_status st;
    if (y->ev.type == YAML_SCALAR_EVENT)
        return walk_call(y, w, key, ml_ty_scalar_text(&y->ev),
                         ml_ty_yaml_null(ml_ty_scalar_text(&y->ev), ml_ty_scalar_plain(&y->ev)), line, col);
    if (y->ev.type == YAML_SEQUENCE_START_EVENT) {
        char buf[LIST_MAX];
        if ((st = ml_ty_read_list(y, key, ',', buf, sizeof(buf))) != ML_OK)
            return st;
        return walk_call(y, w, key, buf, false, line, col);
    }
    for (;;) {
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(c, ML_ERR_PARSE, _("keys of '%s' must be plain names"), key);
        char full[2 * KEY_MAX];
        (void)snprintf(full, sizeof(full), "%s.%s", key, ml_ty_scalar_text(&y->ev));
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_SCALAR_EVENT)
            st = walk_call(y, w, full, ml_ty_scalar_text(&y->ev),
                           ml_ty_yaml_null(ml_ty_scalar_text(&y->ev), ml_ty_scalar_plain(&y->ev)), c->line, c->col);
        else
            st = ml_ty_yp_skip(y);
        if (st != ML_OK)
            return st;
    }
}

static enum ml_status walk_document(struct yp *y, const struct walk *w)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = ml_ty_document_start(y)) != ML_OK)
        return st;
    uint64_t seen[SEEN_MAX];
    size_t n_seen = 0;
    for (;;) {
        if ((st = ml_ty_yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return ml_ty_failf(c, ML_ERR_PARSE, _("keys must be plain names, not lists or mappings"));
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", ml_ty_scalar_text(&y->ev));
        uint64_t h = ml_ty_hash_key(ml_ty_scalar_text(&y->ev));
        for (size_t i = 0; i < n_seen; i++)
            if (seen[i] == h)
                return ml_ty_failf(c, ML_ERR_PARSE, _("duplicate key '%s'"), key);
        if (n_seen < SEEN_MAX)
            seen[n_seen++] = h;
        if ((st = ml_ty_yp_next(y)) != ML_OK || (st = walk_value(y, w, key)) != ML_OK)
            return st;
    }
    return ml_ty_document_end(y);
}

enum ml_status ml_yaml_walk(const char *data, size_t len, const char *origin, ml_yaml_entry_fn fn, void *arg,
                            struct ml_diag *diag)
{
    struct ctx c = {.t = NULL, .origin = origin, .diag = diag};
    if (!data)
        len = 0;
    if (len > YAML_MAX_BYTES)
        return ml_ty_failf(&c, ML_ERR_TOOBIG, _("%zu bytes is too large for a LLaMA-Factory YAML (limit 4 MiB)"), len);
    if (len && memchr(data, '\0', len)) {
        ml_diag_locate(data, len, (size_t)((const char *)memchr(data, '\0', len) - data), &c.line, &c.col);
        return ml_ty_failf(&c, ML_ERR_PARSE, _("binary data (a NUL byte), expected YAML text"));
    }
    struct yp y;
    memset(&y, 0, sizeof(y));
    y.c = &c;
    y.data = len ? data : "";
    y.len = len;
    if (!yaml_parser_initialize(&y.parser))
        return ml_ty_failf(&c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)y.data, len);
    struct walk w = {fn, arg};
    enum ml_status st = walk_document(&y, &w);
    if (y.have)
        yaml_event_delete(&y.ev);
    yaml_parser_delete(&y.parser);
    return st;
}
