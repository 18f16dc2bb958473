/*
 * gen_settings_doc.c - the table of the training settings in docs/train-config.md, from the rows of
 * ML_SETTINGS (include/memledger/settings.h): each setting's flag, type, default under every
 * framework profile (ml_train_defaults) and whose default it is, and its key in each dialect.
 *
 * Usage:
 *   gen_settings_doc print          the table, between its markers, on stdout
 *   gen_settings_doc write DOC.md   replace the lines between the markers in DOC.md (cmake --build
 *                                   build --target settings-doc)
 *   gen_settings_doc check DOC.md   exit 1, with one line saying how to fix it, when DOC.md's table
 *                                   differs from the rows, or when a row's key disagrees with the
 *                                   name `fit` writes for that setting (ml_setting_name, fit.h)
 * The markers are the lines BEGIN and END below; what lies between them is this program's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/fit.h"
#include "memledger/settings.h"
#include "memledger/train.h"

#define BEGIN "<!-- settings table: generated from include/memledger/settings.h by tools/gen_settings_doc.c -->"
#define END   "<!-- end of the settings table -->"

struct out {
    char *s;
    size_t n, cap;
};

static void put(struct out *o, const char *t)
{
    size_t l = strlen(t);
    if (o->n + l + 1 > o->cap) {
        o->cap = (o->n + l + 1) * 2;
        o->s = realloc(o->s, o->cap);
        if (!o->s) {
            fprintf(stderr, "gen_settings_doc: out of memory\n");
            exit(2);
        }
    }
    memcpy(o->s + o->n, t, l + 1);
    o->n += l;
}

/* A key cell: `a` / `b`, or a dash. */
static void key_cell(struct out *o, const char *keys)
{
    if (!keys[0]) {
        put(o, " — |");
        return;
    }
    put(o, " `");
    for (const char *p = keys; *p; p++) {
        if (!strncmp(p, " / ", 3)) {
            put(o, "` / `");
            p += 2;
            continue;
        }
        char c[2] = {*p, 0};
        put(o, c);
    }
    put(o, "` |");
}

/* The row's YAML keys of dialect d, joined by " / " (the first: *first). */
static const char *yaml_keys(const struct ml_setting_row *r, unsigned d, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; r->yaml[i].key && k < n; i++)
        if (r->yaml[i].dialects & d)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? " / " : "", r->yaml[i].key);
    return buf;
}

/* The default of tracked setting k under each profile: the LLaMA-Factory profile's, then each
 * other profile whose value differs ("hf: 8"). */
static void default_cell(struct out *o, int k, const struct ml_setting_row *r)
{
    struct ml_train lf;
    char v[160], w[200];
    ml_train_defaults(&lf, ML_FW_LLAMAFACTORY);
    ml_tracked_value(&lf, (enum ml_tracked)k, v, sizeof(v));
    if (!r->owner[0]) { /* a default that is "none" (no quantization, DeepSpeed, offload, FSDP) */
        put(o, " none |");
        return;
    }
    (void)snprintf(w, sizeof(w), " %s (%s)", v, r->owner[0]);
    put(o, w);
    for (int fw = 1; fw < ML_FW_COUNT; fw++) {
        struct ml_train t;
        char u[160];
        ml_train_defaults(&t, (enum ml_framework)fw);
        ml_tracked_value(&t, (enum ml_tracked)k, u, sizeof(u));
        if (!strcmp(u, v) &&
            (r->owner[fw] == r->owner[0] || (r->owner[fw] && r->owner[0] && !strcmp(r->owner[fw], r->owner[0]))))
            continue;
        (void)snprintf(w, sizeof(w), "; %s: %s (%s)", ml_framework_name((enum ml_framework)fw), u,
                       r->owner[fw] ? r->owner[fw] : "none");
        put(o, w);
    }
    put(o, " |");
}

static void table(struct out *o)
{
    size_t n;
    const struct ml_setting_row *rows = ml_setting_rows(&n);
    put(o, BEGIN "\n\n");
    put(o, "| flag | type | default (whose) | LLaMA-Factory | LLaMA-Factory v1 | TrainingArguments | TRL | DeepSpeed | "
           "accelerate | a flag over a file |\n");
    put(o, "|---|---|---|---|---|---|---|---|---|---|\n");
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ml_setting_row *r = &rows[i];
        char c[200];
        (void)snprintf(c, sizeof(c), "| `--%s` | %s%s%s%s |", r->flag, r->type, r->unit[0] ? " (" : "", r->unit,
                       r->unit[0] ? ")" : "");
        put(o, c);
        if (r->tracked)
            default_cell(o, k, r);
        else
            put(o, " see [Versions](#versions) |");
        char b[300];
        key_cell(o, yaml_keys(r, ML_SD_LF, b, sizeof(b)));
        key_cell(o, yaml_keys(r, ML_SD_V1, b, sizeof(b)));
        key_cell(o, yaml_keys(r, ML_SD_TA, b, sizeof(b)));
        key_cell(o, yaml_keys(r, ML_SD_TRL, b, sizeof(b)));
        key_cell(o, r->ds);
        key_cell(o, r->fsdp);
        put(o, r->tracked ? " wins, with a warning |\n" : " wins |\n");
        k += r->tracked;
    }
    put(o, "\n" END "\n");
}

/* The first of a row's keys ("a / b": "a") equals name, or (DeepSpeed) ends with it. */
static int agrees(const char *keys, const char *name, int suffix)
{
    size_t l = strcspn(keys, " ");
    size_t m = strlen(name);
    if (suffix)
        return l >= m && !strncmp(keys + l - m, name, m) && (l == m || keys[l - m - 1] == '.');
    return l == m && !strncmp(keys, name, m);
}

/* Each row's keys against the names fit writes for its setting (ml_setting_name): 0 when all agree. */
static int check_fit(void)
{
    size_t n;
    const struct ml_setting_row *rows = ml_setting_rows(&n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const struct ml_setting_row *r = &rows[i];
        if (r->fit == ML_SET_COUNT)
            continue;
        char lf[300], ta[300], trl[300];
        const struct {
            enum ml_dialect d;
            const char *keys;
            int suffix;
        } dl[] = {{ML_DIALECT_LF, yaml_keys(r, ML_SD_LF, lf, sizeof(lf)), 0},
                  {ML_DIALECT_HF, yaml_keys(r, ML_SD_TA, ta, sizeof(ta)), 0},
                  {ML_DIALECT_TRL, yaml_keys(r, ML_SD_TRL, trl, sizeof(trl)), 0},
                  {ML_DIALECT_DEEPSPEED, r->ds, 1}};
        for (size_t j = 0; j < sizeof(dl) / sizeof(dl[0]); j++) {
            const char *name = ml_setting_name((enum ml_setting)r->fit, dl[j].d);
            if (!name || !dl[j].keys[0])
                continue;
            /* TRL's keys are TrainingArguments' where TRL has none of its own. */
            if (dl[j].d == ML_DIALECT_TRL && !agrees(dl[j].keys, name, 0) && agrees(ta, name, 0))
                continue;
            /* An offload's DeepSpeed path names the block's device. */
            const char *keys = dl[j].keys;
            char first[160];
            (void)snprintf(first, sizeof(first), "%.*s", (int)strcspn(keys, " "), keys);
            char *dev = strstr(first, ".device");
            if (dev && dl[j].suffix)
                *dev = 0;
            if (!agrees(first, name, dl[j].suffix)) {
                fprintf(stderr,
                        "settings.h: --%s's key '%s' differs from '%s', the name fit writes (lib/fit/knobs.c)\n",
                        r->flag, first, name);
                bad = 1;
            }
        }
    }
    return bad;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct out o = {NULL, 0, 0};
    char buf[4096];
    size_t k;
    put(&o, "");
    while ((k = fread(buf, 1, sizeof(buf) - 1, f)) > 0) {
        buf[k] = 0;
        if (strlen(buf) != k) { /* a NUL byte: not a Markdown file */
            fclose(f);
            free(o.s);
            return NULL;
        }
        put(&o, buf);
    }
    fclose(f);
    *len = o.n;
    return o.s;
}

/* check or write DOC.md (its bytes doc, len) against the table t: the exit status. */
static int write_or_check(const char *mode, const char *path, char *doc, size_t len, const struct out *t)
{
    char *b = doc ? strstr(doc, BEGIN) : NULL;
    char *e = b ? strstr(b, END) : NULL;
    if (!e) {
        fprintf(stderr, "%s: no settings table (the lines '%s' ... '%s')\n", path, BEGIN, END);
        return 1;
    }
    e += strlen(END) + (e[strlen(END)] == '\n');
    if (!strcmp(mode, "check")) {
        int same = (size_t)(e - b) == t->n && !memcmp(b, t->s, t->n);
        if (!same)
            fprintf(stderr,
                    "%s: the settings table differs from include/memledger/settings.h "
                    "(cmake --build build --target settings-doc rewrites it)\n",
                    path);
        int bad = check_fit();
        return same && !bad ? 0 : 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(doc, 1, (size_t)(b - doc), f) != (size_t)(b - doc) || fputs(t->s, f) < 0 ||
        fwrite(e, 1, len - (size_t)(e - doc), f) != len - (size_t)(e - doc) || fclose(f)) {
        fprintf(stderr, "%s: cannot write\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct out t = {NULL, 0, 0};
    table(&t);
    if (argc == 2 && !strcmp(argv[1], "print")) {
        fputs(t.s, stdout);
        free(t.s);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "write") && strcmp(argv[1], "check"))) {
        fprintf(stderr, "usage: gen_settings_doc print | write DOC.md | check DOC.md\n");
        free(t.s);
        return 2;
    }
    size_t len = 0;
    char *doc = slurp(argv[2], &len);
    int rc = write_or_check(argv[1], argv[2], doc, len, &t);
    free(doc);
    free(t.s);
    return rc;
}
