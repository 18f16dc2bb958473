/*
 * json_check.c - json_check [--lines] [--keys] FILE...: each FILE ("-" = stdin) is one JSON document
 * that cJSON parses whole, an object whose first key is "schema" with the value "memledger/1"
 * (docs/json.md). --lines: a JSON Lines file (watch's timeline); every line parses, and the first
 * record carries the schema. One line per problem on stderr; exit 1 when there is one.
 * --keys: also print every key path of the documents on stdout, one per line ("model.name",
 * "per_gpu.components[].id"), for check_json.sh to hold docs/json.md to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define SCHEMA "memledger/1"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *p = realloc(buf, 2 * cap + 1);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
    }
    if (f != stdin)
        fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static int print_keys;

static void keys(const cJSON *v, const char *path)
{
    char p[512];
    for (const cJSON *c = v->child; c; c = c->next) {
        if (cJSON_IsObject(v))
            (void)snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", c->string);
        else
            (void)snprintf(p, sizeof(p), "%s[]", path);
        if (cJSON_IsObject(v))
            printf("%s\n", p);
        keys(c, p);
    }
}

/* 0 when text[0..n) is a document that starts with the schema; else prints why. */
static int check_doc(const char *name, const char *text, size_t n, int need_schema)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root) {
        fprintf(stderr, "%s: not JSON (near byte %ld)\n", name, end ? (long)(end - text) : -1L);
        return 1;
    }
    while (end && end < text + n && (*end == ' ' || *end == '\n' || *end == '\r' || *end == '\t'))
        end++;
    int bad = 0;
    if (end && end != text + n) {
        fprintf(stderr, "%s: text after the document (byte %ld)\n", name, (long)(end - text));
        bad = 1;
    } else if (need_schema) {
        const cJSON *first = cJSON_IsObject(root) ? root->child : NULL;
        if (!first || !first->string || strcmp(first->string, "schema") || !cJSON_IsString(first) ||
            strcmp(first->valuestring, SCHEMA)) {
            fprintf(stderr, "%s: the first key is not \"schema\": \"" SCHEMA "\"\n", name);
            bad = 1;
        }
    }
    if (print_keys)
        keys(root, "");
    cJSON_Delete(root);
    return bad;
}

int main(int argc, char **argv)
{
    int lines = 0, bad = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--lines")) {
            lines = 1;
            continue;
        }
        if (!strcmp(argv[i], "--keys")) {
            print_keys = 1;
            continue;
        }
        size_t n;
        char *text = slurp(argv[i], &n);
        files++;
        if (!text) {
            fprintf(stderr, "%s: cannot read\n", argv[i]);
            bad = 1;
            continue;
        }
        if (!lines) {
            bad |= check_doc(argv[i], text, n, 1);
        } else {
            size_t k = 0;
            for (char *p = text; *p; k++) {
                char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                char where[512];
                (void)snprintf(where, sizeof(where), "%s:%zu", argv[i], k + 1);
                bad |= check_doc(where, p, len, k == 0);
                p += len + (nl ? 1 : 0);
            }
            if (!k) {
                fprintf(stderr, "%s: no records\n", argv[i]);
                bad = 1;
            }
        }
        free(text);
    }
    if (!files) {
        fprintf(stderr, "usage: json_check [--lines] [--keys] FILE...\n");
        return 2;
    }
    return bad;
}
