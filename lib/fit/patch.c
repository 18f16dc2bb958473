/*
 * patch.c - write a plan's changes into the user's own files (see fit.h). Bytes in, bytes out.
 *
 * YAML: LLaMA-Factory configs are flat mappings, so each change replaces the value on its
 * top-level key's line and keeps the line's place, indentation and trailing comment (libyaml's
 * emitter would drop every comment); keys the file lacks are appended under one comment line.
 * DeepSpeed JSON: the user's text is kept byte for byte but for the values the plan changes (a
 * number written 1e8 stays 1e8, spacing and key order stay); a key the file lacks is added at the end
 * of its object. Where a key is duplicated, the last one is changed: it is the one in force
 * (Python's json keeps the last). Without a file, LLaMA-Factory's ds_z2/ds_z3 config is written
 * with our own writer (integers exact, "auto" a string).
 */
#include "memledger/fit.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "memledger/json.h"
#include "../model/json_dup.h"

/* ---- YAML ---------------------------------------------------------------------------------- */

/* The YAML value for a change ("deepspeed" takes the patched file's path, ds). */
static const char *yaml_value(const struct ml_change *c, const char *ds)
{
    if (!strcmp(c->key, "deepspeed"))
        return ds ? ds : c->to;
    return c->to;
}

/* A path as a YAML scalar: plain when it is only letters, digits and _ . / -, else single-quoted
 * ('' for a quote). */
static void yaml_path(const char *path, char *out, size_t n)
{
    bool plain = path[0] != '\0' && path[0] != '-';
    for (const char *c = path; *c && plain; c++)
        plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
                *c == '.' || *c == '/' || *c == '-';
    if (plain) {
        (void)snprintf(out, n, "%s", path);
        return;
    }
    size_t k = 0;
    out[k++] = '\'';
    for (const char *c = path; *c && k + 3 < n; c++) {
        if (*c == '\'')
            out[k++] = '\'';
        out[k++] = *c;
    }
    out[k++] = '\'';
    out[k] = '\0';
}

/* Does line (without newline) set top-level key? Then *val points at the value start. */
static bool line_sets(const char *line, size_t n, const char *key, size_t *val)
{
    size_t k = strlen(key);
    if (n <= k || strncmp(line, key, k) != 0)
        return false;
    size_t i = k;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i >= n || line[i] != ':')
        return false;
    i++;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    *val = i;
    return true;
}

/* Where a trailing " # comment" starts in the value part (outside quotes), or n. */
static size_t comment_at(const char *line, size_t from, size_t n)
{
    char q = 0;
    for (size_t i = from; i < n; i++) {
        if (q) {
            if (line[i] == q)
                q = 0;
        } else if (line[i] == '"' || line[i] == '\'') {
            q = line[i];
        } else if (line[i] == '#' && i > from && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
            size_t j = i;
            while (j > from && (line[j - 1] == ' ' || line[j - 1] == '\t'))
                j--;
            return j;
        }
    }
    return n;
}

/* Is line (without newline) blank or a comment? */
static bool line_blank(const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i >= n || line[i] == '#';
}

/* Does data[0, len) hold text? */
static bool holds(const char *data, size_t len, const char *text)
{
    size_t k = strlen(text);
    for (size_t i = 0; i + k <= len; i++)
        if (!memcmp(data + i, text, k))
            return true;
    return false;
}

/*
 * One nested change "parent.child: value" (a recipe's block mapping, as torchtune's and LitGPT's
 * configs nest them): the child's value replaced in the parent's block, or the child added as the
 * block's first member (with its members' indentation), or the block added at the end; a parent
 * written as a scalar becomes the block.
 */
static enum ml_status patch_nested(const char *data, size_t len, const char *key, const char *value, struct ml_buf *out)
{
    const char *dot = strchr(key, '.');
    char parent[48];
    (void)snprintf(parent, sizeof(parent), "%.*s", (int)(dot - key), key);
    const char *child = dot + 1;
    size_t p_start = 0, p_end = 0, p_colon = 0, c_val = 0, c_rest = 0;
    bool found = false, scalar = false, child_found = false;
    char indent[16] = "  ";
    bool indent_seen = false;
    for (size_t pos = 0; pos < len;) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ln = nl ? (size_t)(nl - line) : len - pos;
        size_t body = ln > 0 && line[ln - 1] == '\r' ? ln - 1 : ln;
        size_t next = pos + ln + (nl ? 1 : 0), val;
        if (!found) {
            if (line_sets(line, body, parent, &val)) {
                found = true;
                p_start = pos;
                p_end = next;
                p_colon = pos + (size_t)((const char *)memchr(line, ':', body) - line) + 1;
                scalar = comment_at(line, val, body) > val;
                if (scalar)
                    break;
            }
        } else if (!line_blank(line, body)) {
            size_t i = 0;
            while (i < body && (line[i] == ' ' || line[i] == '\t'))
                i++;
            if (!i)
                break; /* the block ended */
            if (!indent_seen && i < sizeof(indent)) {
                (void)snprintf(indent, sizeof(indent), "%.*s", (int)i, line);
                indent_seen = true;
            }
            if (line_sets(line + i, body - i, child, &val)) {
                child_found = true;
                c_val = pos + i + val;
                c_rest = pos + i + comment_at(line + i, val, body - i);
                break;
            }
        }
        pos = next;
    }
    enum ml_status st = ML_OK;
    if (!found) {
        st = ml_buf_add(out, data, len);
        if (st == ML_OK && len && data[len - 1] != '\n')
            st = ml_buf_addc(out, '\n');
        if (st == ML_OK && !holds(data, len, "### added by memledger fit\n"))
            st = ml_buf_adds(out, "\n### added by memledger fit\n");
        if (st == ML_OK)
            st = ml_buf_addf(out, "%s:\n  %s: %s\n", parent, child, value);
    } else if (scalar) {
        st = ml_buf_add(out, data, p_colon);
        if (st == ML_OK)
            st = ml_buf_addf(out, "\n  %s: %s\n", child, value);
        if (st == ML_OK)
            st = ml_buf_add(out, data + p_end, len - p_end);
    } else if (child_found) {
        st = ml_buf_add(out, data, c_val);
        if (st == ML_OK)
            st = ml_buf_adds(out, value);
        if (st == ML_OK)
            st = ml_buf_add(out, data + c_rest, len - c_rest);
    } else {
        st = ml_buf_add(out, data, p_end);
        if (st == ML_OK && (p_end == p_start || data[p_end - 1] != '\n'))
            st = ml_buf_addc(out, '\n');
        if (st == ML_OK)
            st = ml_buf_addf(out, "%s%s: %s\n", indent, child, value);
        if (st == ML_OK)
            st = ml_buf_add(out, data + p_end, len - p_end);
    }
    return st;
}

enum ml_status ml_patch_yaml(const char *data, size_t len, const struct ml_plan *p, const char *deepspeed_name,
                             struct ml_buf *out, struct ml_diag *diag)
{
    bool done[ML_FIT_MAX_CHANGES + 1];
    memset(done, 0, sizeof(done));
    char ds_quoted[2100];
    if (deepspeed_name) {
        yaml_path(deepspeed_name, ds_quoted, sizeof(ds_quoted));
        deepspeed_name = ds_quoted;
    }
    /* The changes to make: the plan's YAML ones, plus deepspeed: when a DeepSpeed file is written. */
    struct ml_change extra;
    memset(&extra, 0, sizeof(extra));
    uint32_t n = 0;
    const struct ml_change *ch[ML_FIT_MAX_CHANGES + 1];
    bool have_ds = false;
    for (uint32_t i = 0; i < p->n; i++)
        /* a change without a key in the trainer's dialect is advice (fit_text says so); a
         * dotted key is nested (torchtune's tokenizer.max_seq_len): patched after the flat ones */
        if (p->ch[i].where == ML_IN_YAML && p->ch[i].key[0] && !strchr(p->ch[i].key, '.')) {
            ch[n++] = &p->ch[i];
            have_ds |= !strcmp(p->ch[i].key, "deepspeed");
        }
    if (deepspeed_name && !have_ds) {
        (void)snprintf(extra.key, sizeof(extra.key), "deepspeed");
        (void)snprintf(extra.to, sizeof(extra.to), "%s", deepspeed_name);
        ch[n++] = &extra;
    }
    enum ml_status st = ML_OK;
    size_t pos = 0;
    while (pos < len && st == ML_OK) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ln = nl ? (size_t)(nl - line) : len - pos;
        size_t body = ln > 0 && line[ln - 1] == '\r' ? ln - 1 : ln;
        bool replaced = false;
        for (uint32_t i = 0; i < n && !replaced; i++) {
            size_t val;
            if (done[i] || !line_sets(line, body, ch[i]->key, &val))
                continue;
            size_t c = comment_at(line, val, body);
            st = ml_buf_add(out, line, val);
            if (st == ML_OK)
                st = ml_buf_adds(out, yaml_value(ch[i], deepspeed_name));
            if (st == ML_OK)
                st = ml_buf_add(out, line + c, ln - c);
            done[i] = replaced = true;
        }
        if (!replaced && st == ML_OK)
            st = ml_buf_add(out, line, ln);
        if (nl && st == ML_OK)
            st = ml_buf_addc(out, '\n');
        pos += ln + (nl ? 1 : 0);
    }
    bool header = false;
    for (uint32_t i = 0; i < n && st == ML_OK; i++) {
        if (done[i])
            continue;
        if (!header) {
            if (out->len && out->buf[out->len - 1] != '\n')
                st = ml_buf_addc(out, '\n');
            if (st == ML_OK)
                st = ml_buf_adds(out, "\n### added by memledger fit\n");
            header = true;
        }
        if (st == ML_OK)
            st = ml_buf_addf(out, "%s: %s\n", ch[i]->key, yaml_value(ch[i], deepspeed_name));
    }
    for (uint32_t i = 0; i < p->n && st == ML_OK; i++) {
        if (p->ch[i].where != ML_IN_YAML || !strchr(p->ch[i].key, '.'))
            continue;
        struct ml_buf prev;
        ml_buf_init(&prev, 0);
        st = ml_buf_add(&prev, out->buf ? out->buf : "", out->len);
        ml_buf_reset(out);
        if (st == ML_OK)
            st = patch_nested(prev.buf ? prev.buf : "", prev.len, p->ch[i].key, p->ch[i].to, out);
        ml_buf_release(&prev);
    }
    if (st != ML_OK)
        return ml_diag_set(diag, st, "the patched YAML is too large");
    return ML_OK;
}

/* ---- DeepSpeed JSON ----------------------------------------------------------------------- */

/* Write a cJSON tree with our writer. */
static void emit(struct ml_json *j, const cJSON *it)
{
    if (cJSON_IsObject(it)) {
        ml_json_object_begin(j);
        for (const cJSON *c = it->child; c; c = c->next) {
            ml_json_key(j, c->string ? c->string : "");
            emit(j, c);
        }
        ml_json_object_end(j);
    } else if (cJSON_IsArray(it)) {
        ml_json_array_begin(j);
        for (const cJSON *c = it->child; c; c = c->next)
            emit(j, c);
        ml_json_array_end(j);
    } else if (cJSON_IsString(it)) {
        ml_json_str(j, it->valuestring);
    } else if (cJSON_IsBool(it)) {
        ml_json_bool(j, cJSON_IsTrue(it));
    } else if (cJSON_IsNumber(it)) {
        double v = it->valuedouble;
        if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) {
            ml_json_i64(j, (int64_t)v);
        } else {
            char t[40];
            (void)snprintf(t, sizeof(t), "%.17g", isfinite(v) ? v : 0.0);
            ml_json_number_text(j, t);
        }
    } else {
        ml_json_null(j);
    }
}

/* The JSON text of a change's value: a number, true/false, "auto", or an offload block. */
static enum ml_status value_text(const char *to, struct ml_buf *out)
{
    if (!strncmp(to, "cpu", 3))
        return ml_buf_addf(out, "{\"device\": \"cpu\", \"pin_memory\": %s}",
                           strstr(to, "pin_memory") ? "true" : "false");
    if (!strcmp(to, "true") || !strcmp(to, "false"))
        return ml_buf_adds(out, to);
    if (!strncmp(to, "ZeRO-", 5) && to[5] >= '0' && to[5] <= '3' && !to[6])
        return ml_buf_addc(out, to[5]);
    const char *q = to;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q != to && !*q && q - to < 17) /* integers only (bucket sizes, distances) */
        return ml_buf_adds(out, to);
    struct ml_json j;
    ml_json_init(&j, out);
    ml_json_str(&j, to);
    return j.status; /* (ml_json_finish would end the line) */
}

/* An object's text [open, close]: the last member named key (value span) and the indentation of
 * its last member (the white space before its key). */
struct obj_scan {
    size_t close;               /* the '}' */
    size_t val, val_end;        /* the last member named key; val == 0: none */
    size_t last_key, indent_at; /* the last member's key and the white space before it */
    bool empty;
};

static void scan_object(const char *s, size_t n, size_t open, const char *key, struct obj_scan *o)
{
    memset(o, 0, sizeof(*o));
    o->empty = true;
    size_t i = ml_jtext_ws(s, n, open + 1);
    while (i < n && s[i] == '"') {
        size_t before = i;
        while (before > open + 1 &&
               (s[before - 1] == ' ' || s[before - 1] == '\t' || s[before - 1] == '\n' || s[before - 1] == '\r'))
            before--;
        o->indent_at = before;
        o->last_key = i;
        o->empty = false;
        size_t k = i;
        i = ml_jtext_ws(s, n, ml_jtext_skip_string(s, n, i));
        i = ml_jtext_ws(s, n, i + 1); /* past the ':' */
        size_t e = ml_jtext_skip_value(s, n, i);
        if (key && ml_jtext_key_is(s, n, k, key)) {
            o->val = i;
            o->val_end = e;
        }
        i = ml_jtext_ws(s, n, e);
        if (i < n && s[i] == ',')
            i = ml_jtext_ws(s, n, i + 1);
    }
    o->close = i < n ? i : n;
}

/* Is change c one of the DeepSpeed file's: of the root object (top) or of zero_optimization? */
static bool ds_change(const struct ml_change *c, bool top)
{
    return c->where == ML_IN_DEEPSPEED && ml_setting_ds_top(c->set) == top;
}

/* Append "key": value members (from the plan: of the root object when top, else of
 * zero_optimization) to out, each after sep. */
static enum ml_status members(const struct ml_plan *p, bool top, const char *sep, bool first, struct ml_buf *out)
{
    enum ml_status st = ML_OK;
    for (uint32_t i = 0; i < p->n && st == ML_OK; i++) {
        if (!ds_change(&p->ch[i], top))
            continue;
        st = ml_buf_addf(out, "%s%s", first ? "" : ",", first || sep[0] ? sep : " ");
        first = false;
        struct ml_json j;
        ml_json_init(&j, out);
        ml_json_str(&j, p->ch[i].key);
        if (st == ML_OK)
            st = j.status;
        if (st == ML_OK)
            st = ml_buf_adds(out, ": ");
        if (st == ML_OK)
            st = value_text(p->ch[i].to, out);
    }
    return st;
}

/* One edit of the text: [at, at+del) replaced by text. */
struct edit {
    size_t at, del;
    struct ml_buf text;
};

/* In text order (a few edits: insertion sort). */
static void sort_edits(struct edit *ed, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && ed[j].at < ed[j - 1].at; j--) {
            struct edit t = ed[j];
            ed[j] = ed[j - 1];
            ed[j - 1] = t;
        }
}

/* The white space that starts a new member of the object: the last member's, else a newline. */
static void member_sep(const char *s, const struct obj_scan *o, char *sep, size_t n)
{
    size_t len = o->empty ? 0 : o->last_key - o->indent_at;
    if (len >= n)
        len = n - 1;
    memcpy(sep, s + o->indent_at, len);
    sep[len] = '\0';
    if (!len && !o->empty)
        (void)snprintf(sep, n, " ");
}

/* The edits the plan makes to the object whose '{' is at open: zero_optimization, or the root
 * when top (its batch keys). */
static enum ml_status obj_edits(const char *s, size_t n, size_t open, const struct ml_plan *p, bool top,
                                struct edit *ed, uint32_t *n_ed)
{
    struct ml_plan rest = *p; /* the changes to keys the object lacks */
    rest.n = 0;
    enum ml_status st = ML_OK;
    for (uint32_t i = 0; i < p->n && st == ML_OK; i++) {
        if (!ds_change(&p->ch[i], top))
            continue;
        struct obj_scan o;
        scan_object(s, n, open, p->ch[i].key, &o);
        if (!o.val) {
            rest.ch[rest.n++] = p->ch[i];
            continue;
        }
        struct edit *e = &ed[(*n_ed)++];
        e->at = o.val;
        e->del = o.val_end - o.val;
        ml_buf_init(&e->text, 0);
        st = value_text(p->ch[i].to, &e->text);
    }
    if (rest.n && st == ML_OK) {
        struct obj_scan o;
        scan_object(s, n, open, NULL, &o);
        char sep[64];
        member_sep(s, &o, sep, sizeof(sep));
        struct edit *e = &ed[(*n_ed)++];
        /* after the last member's value (before the white space ahead of '}') */
        size_t at = o.close;
        while (at > open + 1 && (s[at - 1] == ' ' || s[at - 1] == '\t' || s[at - 1] == '\n' || s[at - 1] == '\r'))
            at--;
        e->at = at;
        e->del = 0;
        ml_buf_init(&e->text, 0);
        st = members(&rest, top, sep, o.empty, &e->text);
    }
    return st;
}

/* The plan's changes into the user's text (see the top of the file). */
static enum ml_status splice(const char *s, size_t n, const struct ml_plan *p, struct ml_buf *out)
{
    size_t root = ml_jtext_ws(s, n, 0);
    struct obj_scan r;
    scan_object(s, n, root, "zero_optimization", &r);
    struct edit ed[ML_FIT_MAX_CHANGES + 3];
    uint32_t n_ed = 0;
    /* the root's batch keys (values replaced in place; one the file lacks is added at its end) */
    enum ml_status st = obj_edits(s, n, root, p, true, ed, &n_ed);
    bool zero = false;
    for (uint32_t i = 0; i < p->n; i++)
        zero |= ds_change(&p->ch[i], false);
    if (st == ML_OK && zero && r.val && s[r.val] == '{') {
        st = obj_edits(s, n, r.val, p, false, ed, &n_ed);
    } else if (st == ML_OK && zero) {
        /* No object to patch: a new zero_optimization (replacing a null or adding the key). */
        struct edit *e = &ed[n_ed++];
        ml_buf_init(&e->text, 0);
        char sep[64];
        member_sep(s, &r, sep, sizeof(sep));
        if (r.val) {
            e->at = r.val;
            e->del = r.val_end - r.val;
        } else {
            e->at = r.close;
            while (e->at > root + 1 &&
                   (s[e->at - 1] == ' ' || s[e->at - 1] == '\n' || s[e->at - 1] == '\t' || s[e->at - 1] == '\r'))
                e->at--;
            e->del = 0;
            st = ml_buf_addf(&e->text, "%s%s\"zero_optimization\": ", r.empty ? "" : ",", sep);
        }
        if (st == ML_OK)
            st = ml_buf_addc(&e->text, '{');
        if (st == ML_OK)
            st = members(p, false, "", true, &e->text);
        if (st == ML_OK)
            st = ml_buf_adds(&e->text, "}");
    }
    sort_edits(ed, n_ed);
    size_t pos = 0;
    for (uint32_t i = 0; i < n_ed; i++) {
        if (st == ML_OK && ed[i].at >= pos)
            st = ml_buf_add(out, s + pos, ed[i].at - pos);
        if (st == ML_OK)
            st = ml_buf_add(out, ed[i].text.buf ? ed[i].text.buf : "", ed[i].text.len);
        pos = ed[i].at + ed[i].del > pos ? ed[i].at + ed[i].del : pos;
        ml_buf_release(&ed[i].text);
    }
    if (st == ML_OK)
        st = ml_buf_add(out, s + pos, n - pos);
    return st;
}

enum ml_status ml_patch_deepspeed(const char *data, size_t len, const struct ml_plan *p, struct ml_buf *out,
                                  struct ml_diag *diag)
{
    struct ml_buf tpl;
    ml_buf_init(&tpl, 0);
    enum ml_status st = ML_OK;
    if (!data || !len) {
        /* No file: LLaMA-Factory's config for the stage, written out with our writer. */
        const char *src = ml_zero_preset_json(p->t.zero.stage == 3 ? 3 : 2); /* train.h */
        cJSON *root = cJSON_ParseWithLength(src, strlen(src));
        struct ml_json j;
        ml_json_init(&j, &tpl);
        if (root)
            emit(&j, root);
        st = root ? ml_json_finish(&j) : ML_ERR_NOMEM;
        cJSON_Delete(root);
        data = tpl.buf;
        len = tpl.len;
    }
    cJSON *check = st == ML_OK ? cJSON_ParseWithLength(data, len) : NULL;
    bool object = cJSON_IsObject(check);
    cJSON_Delete(check);
    if (st == ML_OK && !object)
        st = ml_diag_set(diag, ML_ERR_PARSE, "the DeepSpeed file is not a JSON object");
    else if (st == ML_OK)
        st = splice(data, len, p, out);
    if (st == ML_OK) {
        /* What is written must still be JSON (a scanner slip is an error, never a broken file). */
        check = cJSON_ParseWithLength(out->buf, out->len);
        if (!cJSON_IsObject(check))
            st = ml_diag_set(diag, ML_ERR_INVALID, "the patched DeepSpeed file would not be valid JSON");
        cJSON_Delete(check);
    } else if (diag && diag->code == ML_OK) {
        ml_diag_set(diag, st, "the patched DeepSpeed file could not be written");
    }
    ml_buf_release(&tpl);
    return st;
}

/* ---- environment ---------------------------------------------------------------------------- */

enum ml_status ml_patch_env(const struct ml_plan *p, struct ml_buf *out)
{
    enum ml_status st = ml_buf_adds(out, "# memledger fit: export these before launching (source this file)\n");
    for (uint32_t i = 0; i < p->n && st == ML_OK; i++)
        if (p->ch[i].where == ML_IN_ENV)
            st = ml_buf_addf(out, "export %s=%s\n", p->ch[i].key, p->ch[i].to);
    return st;
}

void ml_plan_files(const struct ml_plan *p, const char *yaml_name, const char *ds_name, struct ml_plan_files *f)
{
    bool ds = false, yaml = false, env = false;
    for (uint32_t i = 0; i < p->n; i++) {
        ds |= p->ch[i].where == ML_IN_DEEPSPEED || !strcmp(p->ch[i].key, "deepspeed");
        yaml |= p->ch[i].where == ML_IN_YAML && p->ch[i].key[0] && strcmp(p->ch[i].key, "deepspeed");
        env |= p->ch[i].where == ML_IN_ENV;
    }
    f->name[ML_PLAN_DS] = ds_name ? ds_name : "ds_config.json";
    f->name[ML_PLAN_YAML] = yaml_name ? yaml_name : "train.yaml";
    f->name[ML_PLAN_ENV] = "memledger.env";
    f->want[ML_PLAN_DS] = ds;
    f->want[ML_PLAN_YAML] = yaml || (ds && (yaml_name || !ds_name));
    f->want[ML_PLAN_ENV] = env;
}

#define ML_PLAN_READ_MAX ((size_t)4 << 20) /* a YAML or DeepSpeed file the plan patches */

/* The last component of a path. */
bool ml_plan_bytes(const struct ml_plan *p, const struct ml_plan_src *u, const struct ml_plan_io *io,
                   struct ml_plan_files *f, struct ml_buf *bytes, bool *names_ds, struct ml_diag *d)
{
    const char *ds_path = u->ds_path ? u->ds_path : "";
    *names_ds = false;
    ml_plan_files(p, u->config ? ml_path_base(u->config) : NULL, ds_path[0] ? ml_path_base(ds_path) : NULL, f);
    bool ds_changed = f->want[ML_PLAN_DS];
    struct ml_buf in;
    ml_buf_init(&in, ML_PLAN_READ_MAX);
    bool ok = true;
    if (ds_changed) {
        ok = !ds_path[0] || io->read(ds_path, ML_PLAN_READ_MAX, &in, d) == ML_OK;
        ok = ok && ml_patch_deepspeed(in.len ? in.buf : NULL, in.len, p, &bytes[ML_PLAN_DS], d) == ML_OK;
    }
    /* The YAML's deepspeed: names the file in force as the framework finds it from its run
     * directory: the patched copy in DIR, else the user's file (rewritten only when the YAML's
     * own value would not find it from there). */
    char ds_value[4096 + 8], written[4096 + 64];
    const char *ds_arg = NULL;
    if (ok && f->want[ML_PLAN_YAML] && (ds_changed || (ds_path[0] && !u->ds_in_run_dir))) {
        (void)snprintf(written, sizeof(written), "%s/%s", u->dir, f->name[ML_PLAN_DS]);
        ok = io->path_from(u->run_dir, ds_changed ? written : ds_path, ds_value, sizeof(ds_value));
        ds_arg = ds_value;
        *names_ds = true;
    }
    if (ok && f->want[ML_PLAN_YAML]) {
        ml_buf_reset(&in);
        ok = !u->config || io->read(u->config, ML_PLAN_READ_MAX, &in, d) == ML_OK;
        ok = ok && ml_patch_yaml(in.buf, in.len, p, ds_arg, &bytes[ML_PLAN_YAML], d) == ML_OK;
    }
    if (ok && f->want[ML_PLAN_ENV] && ml_patch_env(p, &bytes[ML_PLAN_ENV]) != ML_OK)
        ok = ml_diag_set(d, ML_ERR_NOMEM, "%s", _("the environment file is too large")) == ML_OK;
    ml_buf_release(&in);
    return ok;
}
