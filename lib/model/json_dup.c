/*
 * json_dup.c - duplicated JSON keys, the last one in force as in Python's json (json_dup.h), and
 * the text scanner that finds their lines. The tree and the text are walked in step: cJSON keeps
 * every member of an object, duplicates included, in the order of the text.
 */
#include "json_dup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the text scanner ------------------------------------------------------------------ */

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t ml_jtext_ws(const char *s, size_t n, size_t i)
{
    while (i < n && is_ws(s[i]))
        i++;
    return i;
}

size_t ml_jtext_skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\')
            i++;
    return i < n ? i + 1 : n;
}

size_t ml_jtext_skip_value(const char *s, size_t n, size_t i)
{
    if (i < n && s[i] == '"')
        return ml_jtext_skip_string(s, n, i);
    if (i < n && (s[i] == '{' || s[i] == '[')) {
        size_t depth = 0;
        for (; i < n; i++) {
            if (s[i] == '"') {
                i = ml_jtext_skip_string(s, n, i) - 1;
            } else if (s[i] == '{' || s[i] == '[') {
                depth++;
            } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return n;
    }
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_ws(s[i]))
        i++;
    return i;
}

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int d = 0; d < 4; d++) {
        char h = s[d];
        v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
    }
    return v;
}

bool ml_jtext_key_is(const char *s, size_t n, size_t i, const char *key)
{
    size_t k = 0;
    for (i++; i < n && s[i] != '"'; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            c = s[++i];
            if (c == 'u' && i + 4 < n) {
                unsigned v = hex4(s + i + 1);
                if (v == 0 || v > 127)
                    return false; /* a key memledger looks for is ASCII */
                c = (char)v;
                i += 4;
            } else if (c != '"' && c != '\\' && c != '/') {
                return false;
            }
        }
        if (key[k] != c)
            return false;
        k++;
    }
    return key[k] == '\0';
}

/* ---- keep the last ------------------------------------------------------------------------ */

struct walk {
    const char *s;
    size_t n;
    size_t at;     /* lines are counted up to here */
    uint32_t line; /* the line of s[at] */
    struct ml_json_dup *out;
    size_t max, found;
};

/* The line of offset off (offsets come in increasing order). */
static uint32_t line_of(struct walk *w, size_t off)
{
    if (off < w->at) {
        w->at = 0;
        w->line = 1;
    }
    for (; w->at < off && w->at < w->n; w->at++)
        if (w->s[w->at] == '\n')
            w->line++;
    return w->line;
}

struct member {
    cJSON *node;
    size_t idx, val;
    uint32_t line;
    bool dropped;
};

static int by_name(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    int c = strcmp(x->node->string ? x->node->string : "", y->node->string ? y->node->string : "");
    return c ? c : (x->idx < y->idx ? -1 : x->idx > y->idx);
}

static int by_idx(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void walk_value(struct walk *w, cJSON *node, size_t at, const char *path, unsigned depth);

static void record(struct walk *w, const char *path, const char *key, uint32_t first, uint32_t last)
{
    if (w->out && w->found < w->max) {
        struct ml_json_dup *d = &w->out[w->found];
        (void)snprintf(d->key, sizeof(d->key), "%s%s%s", path, path[0] ? "." : "", key);
        d->first_line = first;
        d->last_line = last;
    }
    w->found++;
}

/* The members of obj, whose '{' is at open, in text order; NULL when the text and the tree
 * disagree (then nothing is changed). */
static struct member *members(struct walk *w, cJSON *obj, size_t open, size_t *count)
{
    size_t n = 0;
    for (cJSON *c = obj->child; c; c = c->next)
        n++;
    *count = n;
    struct member *m = n ? calloc(n, sizeof(*m)) : NULL;
    if (!m)
        return NULL;
    size_t i = ml_jtext_ws(w->s, w->n, open + 1), k = 0;
    for (cJSON *c = obj->child; c; c = c->next, k++) {
        if (i >= w->n || w->s[i] != '"' || !c->string) {
            free(m);
            return NULL;
        }
        m[k] = (struct member){c, k, 0, line_of(w, i), false};
        i = ml_jtext_ws(w->s, w->n, ml_jtext_skip_string(w->s, w->n, i));
        i = ml_jtext_ws(w->s, w->n, i + 1);
        m[k].val = i;
        i = ml_jtext_ws(w->s, w->n, ml_jtext_skip_value(w->s, w->n, i));
        if (i < w->n && w->s[i] == ',')
            i = ml_jtext_ws(w->s, w->n, i + 1);
    }
    return m;
}

static void walk_object(struct walk *w, cJSON *obj, size_t open, const char *path, unsigned depth)
{
    size_t n;
    struct member *m = members(w, obj, open, &n);
    if (!m)
        return;
    qsort(m, n, sizeof(*m), by_name);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && !strcmp(m[b].node->string, m[a].node->string); b++)
            m[b - 1].dropped = true;
        if (b - a > 1)
            record(w, path, m[a].node->string, m[a].line, m[b - 1].line);
    }
    qsort(m, n, sizeof(*m), by_idx);
    for (size_t k = 0; k < n; k++) {
        if (m[k].dropped) {
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, m[k].node));
            continue;
        }
        char sub[96];
        (void)snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", m[k].node->string);
        walk_value(w, m[k].node, m[k].val, sub, depth + 1);
    }
    free(m);
}

static void walk_value(struct walk *w, cJSON *node, size_t at, const char *path, unsigned depth)
{
    if (depth > CJSON_NESTING_LIMIT || at >= w->n)
        return;
    if (cJSON_IsObject(node) && w->s[at] == '{') {
        walk_object(w, node, at, path, depth);
    } else if (cJSON_IsArray(node) && w->s[at] == '[') {
        size_t i = ml_jtext_ws(w->s, w->n, at + 1);
        for (cJSON *c = node->child; c && i < w->n; c = c->next) {
            walk_value(w, c, i, path, depth + 1);
            i = ml_jtext_ws(w->s, w->n, ml_jtext_skip_value(w->s, w->n, i));
            if (i < w->n && w->s[i] == ',')
                i = ml_jtext_ws(w->s, w->n, i + 1);
        }
    }
}

size_t ml_json_keep_last(cJSON *root, const char *data, size_t len, struct ml_json_dup *out, size_t max)
{
    struct walk w = {data, len, 0, 1, out, max, 0};
    if (root && data)
        walk_value(&w, root, ml_jtext_ws(data, len, 0), "", 0);
    return w.found;
}

size_t ml_json_duplicates(const char *data, size_t len, struct ml_json_dup *out, size_t max)
{
    if (!data || !len || memchr(data, '\0', len))
        return 0;
    cJSON *root = cJSON_ParseWithLength(data, len);
    size_t n = ml_json_keep_last(root, data, len, out, max);
    cJSON_Delete(root);
    return n;
}
