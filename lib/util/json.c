/*
 * json.c - the JSON writer (see json.h).
 */
#include "memledger/json.h"

#include <stdio.h>
#include <string.h>

void ml_json_init(struct ml_json *j, struct ml_buf *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
    j->status = ML_OK;
    j->first[0] = true;
}

static void put(struct ml_json *j, const char *s, size_t n)
{
    if (j->status == ML_OK)
        j->status = ml_buf_add(j->out, s, n);
}

static void puts_(struct ml_json *j, const char *s)
{
    put(j, s, strlen(s));
}

static void indent(struct ml_json *j)
{
    put(j, "\n", 1);
    for (int i = 0; i < j->depth && j->status == ML_OK; i++)
        put(j, "  ", 2);
}

/* Separator and indentation before a value or key at the current depth. */
static void before_value(struct ml_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (!j->first[j->depth])
            put(j, ",", 1);
        indent(j);
    }
    j->first[j->depth] = false;
}

static void open_(struct ml_json *j, const char *c)
{
    before_value(j);
    puts_(j, c);
    if (j->depth + 1 >= ML_JSON_MAX_DEPTH) {
        if (j->status == ML_OK)
            j->status = ML_ERR_TOOBIG;
        return;
    }
    j->depth++;
    j->first[j->depth] = true;
}

static void close_(struct ml_json *j, const char *c)
{
    if (j->depth <= 0)
        return;
    bool empty = j->first[j->depth];
    j->depth--;
    if (!empty)
        indent(j);
    puts_(j, c);
}

void ml_json_object_begin(struct ml_json *j)
{
    open_(j, "{");
}

void ml_json_document_begin(struct ml_json *j)
{
    ml_json_object_begin(j);
    ml_json_kstr(j, "schema", ML_JSON_SCHEMA);
}
void ml_json_object_end(struct ml_json *j)
{
    close_(j, "}");
}
void ml_json_array_begin(struct ml_json *j)
{
    open_(j, "[");
}
void ml_json_array_end(struct ml_json *j)
{
    close_(j, "]");
}

static void quoted(struct ml_json *j, const char *s)
{
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && j->status == ML_OK; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\r': puts_(j, "\\r"); break;
        case '\t': puts_(j, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                (void)snprintf(esc, sizeof(esc), "\\u%04x", *p);
                puts_(j, esc);
            } else {
                put(j, (const char *)p, 1);
            }
        }
    }
    put(j, "\"", 1);
}

void ml_json_key(struct ml_json *j, const char *key)
{
    before_value(j);
    quoted(j, key);
    put(j, ": ", 2);
    j->after_key = true;
}

void ml_json_str(struct ml_json *j, const char *s)
{
    if (!s) {
        ml_json_null(j);
        return;
    }
    before_value(j);
    quoted(j, s);
}

void ml_json_u64(struct ml_json *j, uint64_t v)
{
    char tmp[32];
    before_value(j);
    (void)snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
    puts_(j, tmp);
}

void ml_json_i64(struct ml_json *j, int64_t v)
{
    char tmp[32];
    before_value(j);
    (void)snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
    puts_(j, tmp);
}

void ml_json_fixed(struct ml_json *j, uint64_t num, unsigned decimals)
{
    char tmp[48];
    uint64_t p = 1;
    for (unsigned i = 0; i < decimals && i < 19; i++)
        p *= 10;
    before_value(j);
    if (decimals == 0)
        (void)snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)num);
    else
        (void)snprintf(tmp, sizeof(tmp), "%llu.%0*llu", (unsigned long long)(num / p), (int)decimals,
                       (unsigned long long)(num % p));
    puts_(j, tmp);
}

void ml_json_number_text(struct ml_json *j, const char *text)
{
    before_value(j);
    puts_(j, text);
}

void ml_json_bool(struct ml_json *j, bool v)
{
    before_value(j);
    puts_(j, v ? "true" : "false");
}

void ml_json_null(struct ml_json *j)
{
    before_value(j);
    puts_(j, "null");
}

void ml_json_kstr(struct ml_json *j, const char *key, const char *s)
{
    ml_json_key(j, key);
    ml_json_str(j, s);
}

void ml_json_ku64(struct ml_json *j, const char *key, uint64_t v)
{
    ml_json_key(j, key);
    ml_json_u64(j, v);
}

void ml_json_kbool(struct ml_json *j, const char *key, bool v)
{
    ml_json_key(j, key);
    ml_json_bool(j, v);
}

enum ml_status ml_json_finish(struct ml_json *j)
{
    if (j->depth == 0)
        put(j, "\n", 1);
    return j->status;
}
