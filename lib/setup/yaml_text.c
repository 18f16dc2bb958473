/*
 * yaml_text.c - glued keys and lost line breaks in a hand-pasted YAML (see yaml_text.h).
 *
 * A line is split into words at spaces and tabs; a word that opens a quote ('...' or "...")
 * runs to the word that closes it, and a '#' after a space starts a comment. A key word is
 * `name:` or `name:value` where name is a letter or underscore followed by letters, digits,
 * underscores and dots, at least two characters long, and value does not start with '/', '\'
 * or ':' (so C:\models, http://host and a::b are values, not keys).
 */
#include "yaml_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS_MAX 512 /* key words looked at per line */

static bool name_char(char ch, bool first)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
           (!first && ((ch >= '0' && ch <= '9') || ch == '.'));
}

/* Is [w, w+n) a key word? Its name length in *klen. */
static bool key_word(const char *w, size_t n, size_t *klen)
{
    size_t i = 0;
    while (i < n && name_char(w[i], i == 0))
        i++;
    if (i < 2 || i >= n || w[i] != ':')
        return false;
    if (i + 1 < n && (w[i + 1] == '/' || w[i + 1] == '\\' || w[i + 1] == ':'))
        return false;
    *klen = i;
    return true;
}

struct word {
    size_t off, len; /* within the line */
    size_t klen;     /* > 0: a key word, name length */
};

/* Split one line into words (quotes kept whole, comments dropped). Returns the count. */
static size_t split_words(const char *line, size_t n, struct word *w, size_t max)
{
    size_t k = 0, i = 0;
    while (i < n && k < max) {
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i >= n || line[i] == '#')
            break;
        size_t start = i;
        char q = (line[i] == '"' || line[i] == '\'') ? line[i] : 0;
        if (q) {
            i++;
            while (i < n && line[i] != q)
                i++;
            if (i < n)
                i++;
        }
        while (i < n && line[i] != ' ' && line[i] != '\t')
            i++;
        w[k].off = start;
        w[k].len = i - start;
        w[k].klen = 0;
        if (!q)
            (void)key_word(line + start, i - start, &w[k].klen);
        k++;
    }
    return k;
}

static bool grow(struct ml_yaml_restore *r, size_t *cap, size_t need)
{
    if (r->len + need + 1 <= *cap)
        return true;
    size_t nc = (*cap ? *cap * 2 : 256) + need + 1;
    char *nb = realloc(r->buf, nc);
    if (!nb)
        return false;
    r->buf = nb;
    *cap = nc;
    return true;
}

static bool put(struct ml_yaml_restore *r, size_t *cap, const char *s, size_t n)
{
    if (!grow(r, cap, n))
        return false;
    memcpy(r->buf + r->len, s, n);
    r->len += n;
    r->buf[r->len] = '\0';
    return true;
}

static bool new_line(struct ml_yaml_restore *r, size_t *lcap, uint32_t from)
{
    if (r->n_lines + 1 > *lcap) {
        size_t nc = *lcap ? *lcap * 2 : 64;
        uint32_t *nl = realloc(r->line_of, nc * sizeof(*nl));
        if (!nl)
            return false;
        r->line_of = nl;
        *lcap = nc;
    }
    r->line_of[r->n_lines++] = from;
    return true;
}

/* Look at one line: how many key words after the first, all known or the first unknown one. */
static size_t scan_line(const char *line, size_t n, struct word *w, size_t *nw, ml_key_known_fn known, void *arg,
                        char *blocker, size_t bn)
{
    *nw = 0;
    if (!n || !name_char(line[0], true))
        return 0;
    *nw = split_words(line, n, w, WORDS_MAX);
    if (!*nw || !w[0].klen)
        return 0;
    size_t mid = 0, known_mid = 0;
    blocker[0] = '\0';
    for (size_t i = 0; i < *nw; i++) {
        if (!w[i].klen)
            continue;
        char key[128];
        size_t kl = w[i].klen < sizeof(key) - 1 ? w[i].klen : sizeof(key) - 1;
        memcpy(key, line + w[i].off, kl);
        key[kl] = '\0';
        bool k = known(key, arg);
        if (i) {
            mid++;
            known_mid += k;
        }
        if (!k && !blocker[0])
            (void)snprintf(blocker, bn, "%s", key);
    }
    return known_mid ? mid : 0;
}

/* Write one line's words as one key per line. */
static bool emit_split(struct ml_yaml_restore *r, size_t *cap, size_t *lcap, const char *line, const struct word *w,
                       size_t nw, uint32_t lineno)
{
    for (size_t i = 0; i < nw; i++) {
        const char *ws = line + w[i].off;
        if (w[i].klen) {
            if (i && !put(r, cap, "\n", 1))
                return false;
            if (!new_line(r, lcap, lineno) || !put(r, cap, ws, w[i].klen + 1))
                return false;
            if (w[i].len > w[i].klen + 1 &&
                (!put(r, cap, " ", 1) || !put(r, cap, ws + w[i].klen + 1, w[i].len - w[i].klen - 1)))
                return false;
        } else if (!put(r, cap, " ", 1) || !put(r, cap, ws, w[i].len)) {
            return false;
        }
    }
    return put(r, cap, "\n", 1);
}

enum ml_status ml_yaml_restore_breaks(const char *data, size_t len, ml_key_known_fn known, void *arg,
                                      struct ml_yaml_restore *out)
{
    memset(out, 0, sizeof(*out));
    struct word *w = malloc(WORDS_MAX * sizeof(*w));
    if (!w)
        return ML_ERR_NOMEM;
    size_t cap = 0, lcap = 0, nw = 0;
    uint32_t lineno = 0;
    bool ok = true;
    char blocker[64];
    for (const char *p = data, *end = data + len; ok && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((eol ? eol : end) - p);
        lineno++;
        size_t mid = scan_line(p, n, w, &nw, known, arg, blocker, sizeof(blocker));
        if (mid && blocker[0] && !out->blocker[0]) {
            (void)snprintf(out->blocker, sizeof(out->blocker), "%s", blocker);
            out->blocker_line = lineno;
        }
        if (mid) {
            if (!out->line)
                out->line = lineno;
            out->n_keys += (uint32_t)mid + 1;
            ok = emit_split(out, &cap, &lcap, p, w, nw, lineno);
        } else {
            ok = new_line(out, &lcap, lineno) && put(out, &cap, p, n) && put(out, &cap, "\n", 1);
        }
        p = eol ? eol + 1 : end;
    }
    free(w);
    if (!ok) {
        ml_yaml_restore_release(out);
        return ML_ERR_NOMEM;
    }
    if (!out->line || out->blocker[0]) {
        /* Nothing to restore, or a word no table knows: keep the finding, drop the text. */
        free(out->buf);
        free(out->line_of);
        out->buf = NULL;
        out->line_of = NULL;
        out->len = 0;
        out->n_lines = 0;
    }
    return ML_OK;
}

void ml_yaml_restore_release(struct ml_yaml_restore *r)
{
    free(r->buf);
    free(r->line_of);
    memset(r, 0, sizeof(*r));
}

uint32_t ml_yaml_glued_key(const char *data, size_t len, uint32_t upto, char *word, size_t word_n, char *key,
                           size_t key_n)
{
    uint32_t lineno = 0;
    for (const char *p = data, *end = data + len; p < end && lineno < upto;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((eol ? eol : end) - p);
        lineno++;
        size_t i = 0;
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        size_t j = i;
        while (j < n && p[j] != ' ' && p[j] != '\t')
            j++;
        size_t kl;
        if (j > i && key_word(p + i, j - i, &kl) && j - i > kl + 1 && j - i < word_n && kl < key_n) {
            (void)snprintf(word, word_n, "%.*s", (int)(j - i), p + i);
            (void)snprintf(key, key_n, "%.*s", (int)kl, p + i);
            return lineno;
        }
        p = eol ? eol + 1 : end;
    }
    return 0;
}
