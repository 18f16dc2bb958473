/*
 * gen_catalog.c - build-time generator of the built-in model catalog.
 *
 * Usage: gen_catalog OUT.c PARAMS.jsonl MODELS_DIR [VARIANTS.jsonl]
 * Reads every line of params.jsonl ({"name", "hub_id", "params", "published", ...}), loads
 * MODELS_DIR/<name>.json, checks that memledger's own parser accepts it, and writes a C file
 * with one const table row per model holding the config bytes. Each line of VARIANTS.jsonl
 * ({"name", "hub_id", "base", "config", "source"}: a published checkpoint of a base row, with the
 * values its own config.json was read to hold) becomes a row of its own: the base's config with
 * those keys replaced (null: the key is absent), the base's parameter count, and three strings
 * for the resolver's note - the keys that differ (with both values), the keys read equal to the
 * base's, and the serving keys its source does not give (taken from the base). The output is
 * written to a temporary name and renamed, so an interrupted build never leaves half a table.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/arch.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf)
            break;
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static void c_string(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', o);
        if ((unsigned char)*s < 0x20)
            fprintf(o, "\\%03o", (unsigned char)*s);
        else
            fputc(*s, o);
    }
    fputc('"', o);
}

/* One table row; the variant strings are NULL on a base row. */
struct row {
    char *name, *hub, *published;
    unsigned long long params;
    char *base, *differs, *same, *from_base, *source;
};

/* The config keys a serving answer reads that a tuned or quantized checkpoint may change
 * (docs/models.md "Model names"). */
static const char *const serving_keys[] = {"max_position_embeddings", "rope_scaling", "quantization_config",
                                           "tie_word_embeddings", "vocab_size"};

/* Append ", text" to a growing string (malloc'd; "" to start). */
static char *append(char *s, const char *text)
{
    size_t n = strlen(s), k = strlen(text);
    char *r = realloc(s, n + k + 3);
    if (!r)
        return s;
    if (n) {
        memcpy(r + n, ", ", 2);
        n += 2;
    }
    memcpy(r + n, text, k + 1);
    return r;
}

/* A value as the note shows it: compact JSON, "none" for an absent key or null. */
static char *show(const cJSON *v)
{
    if (!v || cJSON_IsNull(v))
        return strdup("none");
    return cJSON_PrintUnformatted(v);
}

/* Build the variant row of line j (its base among rows[0..count)) into rows[count], the config
 * bytes written as cfg_<count>. Returns 0, or 1 after a message. */
static int variant_row(FILE *o, const char *file, int lineno, const cJSON *j, const char *models, struct row *rows,
                       int count)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *hub = cJSON_GetObjectItemCaseSensitive(j, "hub_id");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(j, "base");
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(j, "config");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(j, "source");
    if (!cJSON_IsString(nm) || !cJSON_IsString(hub) || !cJSON_IsString(base) || !cJSON_IsObject(own) ||
        !cJSON_IsString(src) || !src->valuestring[0]) {
        fprintf(stderr, "gen_catalog: %s:%d: expected name, hub_id, base, config and source\n", file, lineno);
        return 1;
    }
    int b = -1;
    for (int i = 0; i < count; i++)
        if (!strcmp(rows[i].name, base->valuestring) && !rows[i].base)
            b = i;
    if (b < 0) {
        fprintf(stderr, "gen_catalog: %s:%d: base '%s' is not a row of params.jsonl\n", file, lineno,
                base->valuestring);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.json", models, base->valuestring);
    size_t clen;
    char *text = slurp(path, &clen);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cfg) {
        fprintf(stderr, "gen_catalog: %s: cannot read\n", path);
        return 1;
    }
    char *differs = strdup(""), *same = strdup(""), *from_base = strdup("");
    const cJSON *v;
    cJSON_ArrayForEach(v, own)
    {
        const cJSON *old = cJSON_GetObjectItemCaseSensitive(cfg, v->string);
        bool absent_now = cJSON_IsNull(v), absent_before = !old || cJSON_IsNull(old);
        if ((absent_now && absent_before) || (old && !absent_now && cJSON_Compare(v, old, 1))) {
            same = append(same, v->string);
        } else {
            char *a = show(v), *o2 = show(old), piece[1024];
            snprintf(piece, sizeof(piece), "%s %s (%s: %s)", v->string, a, base->valuestring, o2);
            differs = append(differs, piece);
            free(a);
            free(o2);
        }
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, v->string);
        if (!absent_now)
            cJSON_AddItemToObject(cfg, v->string, cJSON_Duplicate(v, 1));
    }
    for (size_t i = 0; i < sizeof(serving_keys) / sizeof(serving_keys[0]); i++)
        if (!cJSON_GetObjectItemCaseSensitive(own, serving_keys[i]))
            from_base = append(from_base, serving_keys[i]);
    char *merged = cJSON_PrintUnformatted(cfg);
    cJSON_Delete(cfg);
    int rc = 0;
    struct ml_arch arch;
    struct ml_diag d;
    ml_diag_init(&d);
    if (!merged || ml_arch_from_json(merged, strlen(merged), nm->valuestring, &arch, &d) != ML_OK) {
        fprintf(stderr, "gen_catalog: %s:%d: %s\n", file, lineno, merged ? d.msg : "out of memory");
        rc = 1;
    }
    size_t mlen = merged ? strlen(merged) : 0;
    fprintf(o, "static const unsigned char cfg_%d[] = {", count);
    for (size_t i = 0; i < mlen; i++)
        fprintf(o, "%s%u,", i % 24 ? "" : "\n    ", (unsigned char)merged[i]);
    fprintf(o, "%s\n};\n", mlen ? "" : "0");
    free(merged);
    rows[count] = (struct row){.name = strdup(nm->valuestring),
                               .hub = strdup(hub->valuestring),
                               .published = strdup(rows[b].published),
                               .params = rows[b].params,
                               .base = strdup(base->valuestring),
                               .differs = differs,
                               .same = same,
                               .from_base = from_base,
                               .source = strdup(src->valuestring)};
    return rc;
}

static void c_string_or_null(FILE *o, const char *s)
{
    if (s)
        c_string(o, s);
    else
        fputs("NULL", o);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: gen_catalog OUT.c PARAMS.jsonl MODELS_DIR [VARIANTS.jsonl]\n");
        return 2;
    }
    size_t plen;
    char *params = slurp(argv[2], &plen);
    if (!params) {
        fprintf(stderr, "gen_catalog: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
    FILE *o = fopen(tmp, "w");
    if (!o) {
        fprintf(stderr, "gen_catalog: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    fprintf(o, "/* Generated by tools/gen_catalog.c from data/models; do not edit. */\n");
    fprintf(o, "#include \"memledger/catalog.h\"\n\n");

    int count = 0, lineno = 0, rc = 0;
    static struct row rows[512];
    for (char *line = strtok(params, "\n"); line; line = strtok(NULL, "\n")) {
        lineno++;
        if (!*line || *line == '#')
            continue;
        cJSON *j = cJSON_Parse(line);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
        const cJSON *hub = cJSON_GetObjectItemCaseSensitive(j, "hub_id");
        const cJSON *pc = cJSON_GetObjectItemCaseSensitive(j, "params");
        const cJSON *pub = cJSON_GetObjectItemCaseSensitive(j, "published");
        if (!j || !cJSON_IsString(nm) || !cJSON_IsString(hub) || !cJSON_IsNumber(pc) || count >= 512) {
            fprintf(stderr, "gen_catalog: %s:%d: expected name, hub_id and params\n", argv[2], lineno);
            cJSON_Delete(j);
            rc = 1;
            continue;
        }
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.json", argv[3], nm->valuestring);
        size_t clen;
        char *cfg = slurp(path, &clen);
        if (!cfg) {
            fprintf(stderr, "gen_catalog: %s: %s\n", path, strerror(errno));
            cJSON_Delete(j);
            rc = 1;
            continue;
        }
        struct ml_arch arch;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_arch_from_json(cfg, clen, path, &arch, &d) != ML_OK) {
            fprintf(stderr, "gen_catalog: %s: %s\n", path, d.msg);
            rc = 1;
        }
        fprintf(o, "static const unsigned char cfg_%d[] = {", count);
        for (size_t i = 0; i < clen; i++)
            fprintf(o, "%s%u,", i % 24 ? "" : "\n    ", (unsigned char)cfg[i]);
        fprintf(o, "\n};\n");
        rows[count].name = strdup(nm->valuestring);
        rows[count].hub = strdup(hub->valuestring);
        char pubbuf[256];
        if (cJSON_IsNumber(pub))
            snprintf(pubbuf, sizeof(pubbuf), "%.0f", pub->valuedouble);
        else
            snprintf(pubbuf, sizeof(pubbuf), "%s", cJSON_IsString(pub) ? pub->valuestring : "");
        rows[count].published = strdup(pubbuf);
        rows[count].params = (unsigned long long)pc->valuedouble;
        count++;
        free(cfg);
        cJSON_Delete(j);
    }
    size_t vlen;
    char *variants = argc == 5 ? slurp(argv[4], &vlen) : NULL;
    if (argc == 5 && !variants) {
        fprintf(stderr, "gen_catalog: %s: %s\n", argv[4], strerror(errno));
        rc = 1;
    }
    lineno = 0;
    for (char *line = variants ? strtok(variants, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        lineno++;
        if (!*line || *line == '#')
            continue;
        cJSON *j = cJSON_Parse(line);
        if (!j || count >= 512) {
            fprintf(stderr, "gen_catalog: %s:%d: not a JSON object\n", argv[4], lineno);
            rc = 1;
        } else if (variant_row(o, argv[4], lineno, j, argv[3], rows, count) != 0) {
            rc = 1;
        } else {
            count++;
        }
        cJSON_Delete(j);
    }
    free(variants);
    fprintf(o, "\nconst struct ml_catalog_entry ml_catalog_table[] = {\n");
    for (int i = 0; i < count; i++) {
        fprintf(o, "    {");
        c_string(o, rows[i].name);
        fprintf(o, ", ");
        c_string(o, rows[i].hub);
        fprintf(o, ", %lluull, ", rows[i].params);
        c_string(o, rows[i].published);
        fprintf(o, ", cfg_%d, sizeof(cfg_%d), ", i, i);
        c_string_or_null(o, rows[i].base);
        fprintf(o, ", ");
        c_string_or_null(o, rows[i].differs);
        fprintf(o, ", ");
        c_string_or_null(o, rows[i].same);
        fprintf(o, ", ");
        c_string_or_null(o, rows[i].from_base);
        fprintf(o, ", ");
        c_string_or_null(o, rows[i].source);
        fprintf(o, "},\n");
        free(rows[i].base);
        free(rows[i].differs);
        free(rows[i].same);
        free(rows[i].from_base);
        free(rows[i].source);
        free(rows[i].name);
        free(rows[i].hub);
        free(rows[i].published);
    }
    fprintf(o, "};\n\nconst size_t ml_catalog_table_len = %d;\n", count);
    free(params);
    if (fclose(o) != 0 || rc != 0 || count == 0) {
        remove(tmp);
        fprintf(stderr, "gen_catalog: catalog not written\n");
        return 1;
    }
    if (rename(tmp, argv[1]) != 0) {
        fprintf(stderr, "gen_catalog: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
