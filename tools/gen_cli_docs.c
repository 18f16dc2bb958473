/*
 * gen_cli_docs.c - build-time generator of what the command pages (docs/cli/<command>.md) say: the help
 * texts (`memledger help CMD`, `memledger CMD --help`), the man pages, the bash, zsh and fish
 * completions, and the option list that tests/check_docs.sh probes the binary with. One source:
 * when a page changes, all of these follow at the next build.
 *
 * Usage:
 *   gen_cli_docs help OUT.c PAGE.md...                  cmd_<name>_usage[] of every command page
 *   gen_cli_docs man NAME VERSION OUT.md PAGE.md...     the man page of NAME ("memledger" or a
 *                                                       command) as Markdown for `lowdown -Tman`
 *   gen_cli_docs bash|zsh|fish TEMPLATE OUT PAGE.md...  TEMPLATE with its @DATA@ line replaced
 *                                                       by the commands and their options
 *   gen_cli_docs list PAGE.md...                        one line per option (below)
 *
 * The page format: Markdown as GitHub renders it, with this structure (anything else is an error
 * naming the file and line, so the pages cannot drift out of what this reads):
 *   - YAML front matter between '---' lines: name (the file name; "memledger" for the top page),
 *     summary (one line: `memledger --help` and the man page's NAME), synopsis (a line, or a list
 *     of lines), exit ("CODE meaning; CODE meaning; ..."). Values may be "double-quoted".
 *   - '# memledger CMD', then the lede: the paragraphs and lists up to the first heading, table
 *     or code block. The lede is the help text's description and opens the man page.
 *   - Options tables: a table whose header starts with 'option' ('option (with `--serve`)': the
 *     options after --serve), columns option | argument | meaning, or option | meaning. The option
 *     cell: `--long`, `-s`, comma-separated, or '(all of `CMD`)' for every option of CMD. The
 *     argument cell: empty (a flag) or alternatives separated by '\|', each a literal value
 *     (lowercase: completed as it is) or a placeholder (uppercase; FILE and PATH complete file
 *     names, DIR directories).
 *   - '## Options', '## Exit status', '## Environment', '## Files', '## Examples', '## See also'
 *     sections become the man sections of those names; every other section stays under
 *     DESCRIPTION.
 * The list mode prints NAME MODE OPTION ARG VALUES, tab-separated: MODE '-' or the mode option,
 * ARG '-' for a flag, VALUES the literal values when the argument is nothing else, else '-'.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PAGES  32
#define MAX_BLOCKS 1024
#define MAX_OPTS   128
#define MAX_GROUPS 8
#define MAX_ITEMS  512
#define MAX_NAMES  4
#define MAX_ALTS   24
#define HELP_WIDTH 80
#define HELP_COL   25

/* ---- memory: one arena, released at exit (the tool runs once per build step) ---------------- */

static char arena[16u << 20];
static size_t arena_used;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gen_cli_docs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *amalloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof(arena) - arena_used)
        die("out of memory (the pages are larger than %zu bytes)", sizeof(arena));
    void *p = arena + arena_used;
    arena_used += n;
    memset(p, 0, n);
    return p;
}

static char *astrndup(const char *s, size_t n)
{
    char *p = amalloc(n + 1);
    memcpy(p, s, n);
    return p;
}

static char *astrdup(const char *s)
{
    return astrndup(s, strlen(s));
}

/* A growable string in the arena: append-only, the old copy is abandoned on growth. */
struct str {
    char *p;
    size_t n, cap;
};

static void s_addn(struct str *s, const char *t, size_t n)
{
    if (s->n + n + 1 > s->cap) {
        size_t cap = (s->cap ? s->cap * 2 : 256) + n;
        char *p = amalloc(cap);
        if (s->n)
            memcpy(p, s->p, s->n);
        s->p = p;
        s->cap = cap;
    }
    memcpy(s->p + s->n, t, n);
    s->n += n;
    s->p[s->n] = '\0';
}

static void s_add(struct str *s, const char *t)
{
    s_addn(s, t, strlen(t));
}
static void s_addc(struct str *s, char c)
{
    s_addn(s, &c, 1);
}
static char *s_get(const struct str *s)
{
    static char empty[1];
    return s->p ? s->p : empty;
}

/* ---- the pages ----------------------------------------------------------------------------- */

enum bkind { B_HEAD, B_PARA, B_LIST, B_CODE, B_TABLE };

struct block {
    enum bkind kind;
    int level;   /* heading level */
    int line;    /* first line, 1-based */
    int section; /* index of the '##' heading block above it, -1 for none */
    int group;   /* options tables: the group index, else -1 */
    const char **items;
    int n; /* paragraph: 1 (joined); list: items; code: lines; table: rows; heading: 1 */
};

struct opt {
    const char *names[MAX_NAMES];
    int nnames;
    const char *inherit; /* '(all of `CMD`)': CMD */
    const char *alts[MAX_ALTS];
    int nalts;
    const char *meaning; /* Markdown */
    int group;
    int line;
};

struct group {
    const char *title; /* the section's heading, or "with --MODE" */
    const char *mode;  /* "" or the mode option */
};

struct page {
    const char *path;
    const char *name, *summary, *exit;
    const char *synopsis[4];
    int nsyn;
    struct block blocks[MAX_BLOCKS];
    int nblocks;
    struct opt opts[MAX_OPTS];
    int nopts;
    struct group groups[MAX_GROUPS];
    int ngroups;
};

static struct page pages[MAX_PAGES];
static int npages;

static bool blank(const char *l)
{
    while (*l == ' ' || *l == '\t')
        l++;
    return !*l;
}

static bool starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

/* Read a whole file into NUL-terminated lines. */
static char **read_lines(const char *path, int *count)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("%s: %s", path, strerror(errno));
    struct str s = {0};
    char buf[8192];
    size_t k;
    while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
        s_addn(&s, buf, k);
    fclose(f);
    int n = 0;
    for (size_t i = 0; i < s.n; i++)
        n += s.p[i] == '\n';
    char **lines = amalloc(sizeof(char *) * (size_t)(n + 2));
    char *p = s.p ? s.p : astrdup("");
    int i = 0;
    while (*p) {
        char *e = strchr(p, '\n');
        if (e)
            *e = '\0';
        size_t len = strlen(p);
        if (len && p[len - 1] == '\r')
            p[len - 1] = '\0';
        lines[i++] = p;
        if (!e)
            break;
        p = e + 1;
    }
    *count = i;
    return lines;
}

/* A front-matter value: plain, or "double-quoted" with \" and \\. */
static const char *fm_value(const char *path, int line, char *v)
{
    v = trim(v);
    if (*v != '"')
        return astrdup(v);
    struct str s = {0};
    for (v++; *v && *v != '"'; v++) {
        if (*v == '\\' && v[1])
            v++;
        s_addc(&s, *v);
    }
    if (*v != '"' || !blank(v + 1))
        die("%s:%d: unterminated quoted value", path, line);
    return astrdup(s_get(&s));
}

/* The front matter; returns the index of the first body line. */
static int parse_front(struct page *pg, char **l, int n)
{
    if (n < 1 || strcmp(l[0], "---"))
        die("%s:1: no front matter (a '---' line, then name, summary, synopsis, exit)", pg->path);
    int i = 1;
    for (; i < n && strcmp(l[i], "---"); i++) {
        char *colon = strchr(l[i], ':');
        if (!colon || l[i][0] == ' ')
            die("%s:%d: expected 'key: value' in the front matter", pg->path, i + 1);
        *colon = '\0';
        const char *key = l[i];
        char *val = colon + 1;
        if (!strcmp(key, "synopsis") && blank(val)) {
            while (i + 1 < n && starts(skip_ws(l[i + 1]), "- ") && l[i + 1][0] == ' ') {
                if (pg->nsyn == 4)
                    die("%s:%d: more than 4 synopsis lines", pg->path, i + 2);
                i++;
                pg->synopsis[pg->nsyn++] = fm_value(pg->path, i + 1, trim(l[i]) + 2);
            }
        } else if (!strcmp(key, "synopsis")) {
            pg->synopsis[pg->nsyn++] = fm_value(pg->path, i + 1, val);
        } else if (!strcmp(key, "name")) {
            pg->name = fm_value(pg->path, i + 1, val);
        } else if (!strcmp(key, "summary")) {
            pg->summary = fm_value(pg->path, i + 1, val);
        } else if (!strcmp(key, "exit")) {
            pg->exit = fm_value(pg->path, i + 1, val);
        } else {
            die("%s:%d: unknown front matter key '%s'", pg->path, i + 1, key);
        }
    }
    if (i == n)
        die("%s: the front matter has no closing '---'", pg->path);
    if (!pg->name || !pg->summary || !pg->nsyn || !pg->exit)
        die("%s: the front matter needs name, summary, synopsis and exit", pg->path);
    return i + 1;
}

static struct block *new_block(struct page *pg, enum bkind k, int line, int section)
{
    if (pg->nblocks == MAX_BLOCKS)
        die("%s: more than %d blocks", pg->path, MAX_BLOCKS);
    struct block *b = &pg->blocks[pg->nblocks++];
    b->kind = k;
    b->line = line;
    b->section = section;
    b->group = -1;
    b->items = amalloc(sizeof(char *) * MAX_ITEMS);
    return b;
}

static void add_item(struct page *pg, struct block *b, const char *s)
{
    if (b->n == MAX_ITEMS)
        die("%s:%d: a block of more than %d lines", pg->path, b->line, MAX_ITEMS);
    b->items[b->n++] = s;
}

static bool para_end(const char *l)
{
    return blank(l) || l[0] == '#' || l[0] == '|' || starts(l, "```") || starts(l, "- ");
}

/* One block starting at line i; returns the line after it. */
static int parse_block(struct page *pg, char **l, int n, int i, int *section)
{
    const char *s = l[i];
    if (starts(s, "```")) {
        struct block *b = new_block(pg, B_CODE, i + 1, *section);
        for (i++; i < n && !starts(l[i], "```"); i++)
            add_item(pg, b, l[i]);
        if (i == n)
            die("%s:%d: unterminated code block", pg->path, b->line);
        return i + 1;
    }
    if (starts(s, "    ")) {
        struct block *b = new_block(pg, B_CODE, i + 1, *section);
        for (; i < n && (starts(l[i], "    ") || (blank(l[i]) && i + 1 < n && starts(l[i + 1], "    "))); i++)
            add_item(pg, b, blank(l[i]) ? "" : l[i] + 4);
        return i;
    }
    if (s[0] == '#') {
        int lv = 0;
        while (s[lv] == '#')
            lv++;
        if (s[lv] != ' ')
            die("%s:%d: a heading needs a space after its '#'", pg->path, i + 1);
        struct block *b = new_block(pg, B_HEAD, i + 1, *section);
        b->level = lv;
        add_item(pg, b, trim(l[i] + lv));
        if (lv == 2)
            *section = pg->nblocks - 1;
        b->section = *section;
        return i + 1;
    }
    if (s[0] == '|') {
        struct block *b = new_block(pg, B_TABLE, i + 1, *section);
        for (; i < n && l[i][0] == '|'; i++)
            add_item(pg, b, l[i]);
        return i;
    }
    if (starts(s, "- ")) {
        struct block *b = new_block(pg, B_LIST, i + 1, *section);
        while (i < n && starts(l[i], "- ")) {
            struct str it = {0};
            s_add(&it, l[i] + 2);
            for (i++; i < n && starts(l[i], "  ") && !blank(l[i]); i++) {
                s_addc(&it, ' ');
                s_add(&it, skip_ws(l[i]));
            }
            add_item(pg, b, s_get(&it));
            if (i + 1 < n && blank(l[i]) && starts(l[i + 1], "- "))
                i++;
        }
        return i;
    }
    struct block *b = new_block(pg, B_PARA, i + 1, *section);
    struct str p = {0};
    for (; i < n && !para_end(l[i]); i++) {
        if (p.n)
            s_addc(&p, ' ');
        s_add(&p, trim(l[i]));
    }
    add_item(pg, b, s_get(&p));
    return i;
}

/* Split a table row into cells at the '|' not escaped by a backslash. */
static int split_row(const char *path, int line, const char *row, const char **cells, int max)
{
    int n = 0;
    const char *p = row;
    if (*p != '|')
        die("%s:%d: a table row starts with '|'", path, line);
    p++;
    const char *start = p;
    for (; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (*p == '|') {
            if (n == max)
                die("%s:%d: more than %d cells", path, line, max);
            char *c = astrndup(start, (size_t)(p - start));
            cells[n++] = trim(c);
            start = p + 1;
        }
    }
    if (!blank(start))
        die("%s:%d: a table row ends with '|'", path, line);
    return n;
}

static bool is_option_name(const char *s)
{
    if (s[0] != '-')
        return false;
    const char *p = s[1] == '-' ? s + 2 : s + 1;
    if (!*p)
        return false;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    return true;
}

static bool is_literal(const char *s)
{
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr("_.-", *s)))
            return false;
    return true;
}

static bool is_placeholder(const char *s)
{
    if (!(*s >= 'A' && *s <= 'Z'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("_.=%", *s)))
            return false;
    return true;
}

/* The option cell: `--a`, `-b` or (all of `CMD`). */
static void parse_names(struct page *pg, struct opt *o, const char *cell)
{
    const char *p = cell;
    if (starts(p, "(all of `")) {
        const char *e = strchr(p + 9, '`');
        if (!e || strcmp(e, "`)"))
            die("%s:%d: expected '(all of `CMD`)'", pg->path, o->line);
        o->inherit = astrndup(p + 9, (size_t)(e - p - 9));
        return;
    }
    for (;;) {
        if (*p != '`')
            die("%s:%d: the option cell lists `--options` separated by ', ', not '%s'", pg->path, o->line, cell);
        const char *e = strchr(p + 1, '`');
        if (!e)
            die("%s:%d: unterminated ` in the option cell", pg->path, o->line);
        const char *name = astrndup(p + 1, (size_t)(e - p - 1));
        if (!is_option_name(name) || o->nnames == MAX_NAMES)
            die("%s:%d: '%s' is not an option name", pg->path, o->line, name);
        o->names[o->nnames++] = name;
        p = e + 1;
        if (!*p)
            return;
        if (!starts(p, ", "))
            die("%s:%d: options in one cell are separated by ', '", pg->path, o->line);
        p += 2;
    }
}

static void parse_alts(struct page *pg, struct opt *o, const char *cell)
{
    const char *p = cell;
    while (*p) {
        const char *e = strstr(p, "\\|");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *alt = astrndup(p, len);
        if ((!is_literal(alt) && !is_placeholder(alt)) || o->nalts == MAX_ALTS)
            die("%s:%d: argument '%s': alternatives are values (lowercase) or placeholders (uppercase) "
                "separated by '\\|'",
                pg->path, o->line, cell);
        o->alts[o->nalts++] = alt;
        p += len;
        if (e)
            p += 2;
    }
}

/* An options table: one group and its rows. */
static void parse_options_table(struct page *pg, struct block *b, const char **head, int ncols)
{
    if (ncols != 2 && ncols != 3)
        die("%s:%d: an options table has the columns option | argument | meaning, or option | meaning", pg->path,
            b->line);
    if (ncols == 3 && strcmp(head[1], "argument"))
        die("%s:%d: the second column of an options table is 'argument'", pg->path, b->line);
    if (pg->ngroups == MAX_GROUPS)
        die("%s:%d: more than %d options tables", pg->path, b->line, MAX_GROUPS);
    struct group *g = &pg->groups[pg->ngroups];
    g->mode = "";
    g->title = b->section >= 0 ? pg->blocks[b->section].items[0] : "options";
    if (strcmp(head[0], "option")) {
        const char *m = head[0] + 6;
        if (!starts(m, " (with `") || strlen(m) < 11 || strcmp(m + strlen(m) - 2, "`)"))
            die("%s:%d: an options table's header is 'option' or 'option (with `--MODE`)'", pg->path, b->line);
        g->mode = astrndup(m + 8, strlen(m) - 10);
        if (!is_option_name(g->mode))
            die("%s:%d: '%s' is not an option name", pg->path, b->line, g->mode);
        struct str t = {0};
        s_add(&t, "with ");
        s_add(&t, g->mode);
        g->title = s_get(&t);
    }
    b->group = pg->ngroups++;
    for (int r = 2; r < b->n; r++) {
        const char *cells[8];
        int line = b->line + r;
        if (split_row(pg->path, line, b->items[r], cells, 8) != ncols)
            die("%s:%d: expected %d cells", pg->path, line, ncols);
        if (pg->nopts == MAX_OPTS)
            die("%s:%d: more than %d options", pg->path, line, MAX_OPTS);
        struct opt *o = &pg->opts[pg->nopts++];
        o->line = line;
        o->group = b->group;
        parse_names(pg, o, cells[0]);
        if (ncols == 3)
            parse_alts(pg, o, cells[1]);
        o->meaning = cells[ncols - 1];
    }
}

static void find_options(struct page *pg)
{
    for (int i = 0; i < pg->nblocks; i++) {
        struct block *b = &pg->blocks[i];
        if (b->kind != B_TABLE)
            continue;
        const char *head[8];
        int ncols = split_row(pg->path, b->line, b->items[0], head, 8);
        if (starts(head[0], "option"))
            parse_options_table(pg, b, head, ncols);
    }
}

static void load_page(const char *path)
{
    if (npages == MAX_PAGES)
        die("more than %d pages", MAX_PAGES);
    struct page *pg = &pages[npages++];
    pg->path = path;
    int n;
    char **l = read_lines(path, &n);
    int i = parse_front(pg, l, n);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, pg->name, strlen(pg->name)) || strcmp(base + strlen(pg->name), ".md"))
        die("%s: name '%s' is not the file's name", path, pg->name);
    int section = -1;
    while (i < n) {
        if (blank(l[i]))
            i++;
        else
            i = parse_block(pg, l, n, i, &section);
    }
    if (!pg->nblocks || pg->blocks[0].kind != B_HEAD || pg->blocks[0].level != 1)
        die("%s: the body starts with a '# memledger ...' title", path);
    find_options(pg);
}

static bool is_top(const struct page *pg)
{
    return !strcmp(pg->name, "memledger");
}

static const struct page *find_page(const char *name)
{
    for (int i = 0; i < npages; i++)
        if (!strcmp(pages[i].name, name))
            return &pages[i];
    return NULL;
}

/* ---- inline Markdown ------------------------------------------------------------------------ */

/* The end of the link starting at p ('['), or NULL: sets the text and the target. */
static const char *link_end(const char *p, const char **text, size_t *tlen, const char **url, size_t *ulen)
{
    int depth = 0;
    const char *q = p;
    for (; *q; q++) {
        if (*q == '`') {
            const char *e = strchr(q + 1, '`');
            if (!e)
                return NULL;
            q = e;
        } else if (*q == '[') {
            depth++;
        } else if (*q == ']' && --depth == 0) {
            break;
        }
    }
    if (*q != ']' || q[1] != '(')
        return NULL;
    const char *e = strchr(q + 2, ')');
    if (!e)
        return NULL;
    *text = p + 1;
    *tlen = (size_t)(q - p - 1);
    *url = q + 2;
    *ulen = (size_t)(e - q - 2);
    return e + 1;
}

/* Markdown to plain text: code spans, emphasis and link targets dropped, escapes resolved. */
static void md_plain(struct str *o, const char *s, size_t n)
{
    const char *end = s + n;
    for (const char *p = s; p < end; p++) {
        const char *text, *url, *e;
        size_t tlen, ulen;
        if (*p == '`') {
            const char *c = memchr(p + 1, '`', (size_t)(end - p - 1));
            if (c) {
                for (const char *q = p + 1; q < c; q++) {
                    if (*q == '\\' && q + 1 < c && q[1] == '|')
                        q++;
                    s_addc(o, *q);
                }
                p = c;
                continue;
            }
        } else if (*p == '\\' && p + 1 < end && strchr("\\`*_[]()#|<>-.!", p[1])) {
            s_addc(o, *++p);
            continue;
        } else if (*p == '*' && p + 1 < end && p[1] == '*') {
            p++;
            continue;
        } else if (*p == '[' && (e = link_end(p, &text, &tlen, &url, &ulen)) && e <= end) {
            md_plain(o, text, tlen);
            p = e - 1;
            continue;
        }
        s_addc(o, *p);
    }
}

static char *plain(const char *s)
{
    struct str o = {0};
    md_plain(&o, s, strlen(s));
    return astrdup(s_get(&o));
}

/*
 * Markdown for lowdown: relative links become their text (the man page has no other files to
 * point at), and in a table row an escaped '\|' inside a code span becomes '|' (GitHub needs the
 * escape there, lowdown keeps it).
 */
static void md_man(struct str *o, const char *s, size_t n, bool in_table)
{
    const char *end = s + n;
    for (const char *p = s; p < end; p++) {
        const char *text, *url, *e;
        size_t tlen, ulen;
        if (*p == '`') {
            const char *c = memchr(p + 1, '`', (size_t)(end - p - 1));
            if (c) {
                for (const char *q = p; q <= c; q++) {
                    if (in_table && *q == '\\' && q + 1 < c && q[1] == '|')
                        q++;
                    s_addc(o, *q);
                }
                p = c;
                continue;
            }
        } else if (*p == '\\' && p + 1 < end) {
            s_addc(o, *p++);
        } else if (*p == '_') {
            s_addc(o, '\\'); /* lowdown would read ds_z2/ds_z3 as emphasis; GitHub does not */
        } else if (*p == '[' && (e = link_end(p, &text, &tlen, &url, &ulen)) && e <= end) {
            bool abs = ulen > 7 && (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8));
            if (abs) {
                s_addn(o, p, (size_t)(e - p));
            } else {
                md_man(o, text, tlen, in_table);
            }
            p = e - 1;
            continue;
        }
        s_addc(o, *p);
    }
}

static const char *man_md(const char *s, bool in_table)
{
    struct str o = {0};
    md_man(&o, s, strlen(s), in_table);
    return astrdup(s_get(&o));
}

/* Escape text for Markdown (front-matter values set as Markdown). */
static const char *md_escape(const char *s)
{
    struct str o = {0};
    for (; *s; s++) {
        if (strchr("\\`*_[]<>|", *s))
            s_addc(&o, '\\');
        s_addc(&o, *s);
    }
    return astrdup(s_get(&o));
}

/* ---- plain-text layout ---------------------------------------------------------------------- */

static size_t columns(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/*
 * Append words of s, wrapped at HELP_WIDTH: the first line continues at column *col, the next
 * ones start at column indent. Words break at spaces; seps (e.g. "|") are also break points,
 * kept at the end of the line.
 */
static void wrap(struct str *o, const char *s, size_t *col, size_t indent, const char *seps)
{
    const char *p = s;
    bool first = true;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " ");
        if (seps) {
            size_t k = 0;
            while (k < len && !strchr(seps, p[k]))
                k++;
            if (k < len)
                len = k + 1;
        }
        bool glued = !first && seps && p > s && p[-1] != ' ';
        size_t need = columns(p, len) + (first || glued ? 0 : 1);
        if (!first && *col + need > HELP_WIDTH) {
            s_addc(o, '\n');
            for (size_t i = 0; i < indent; i++)
                s_addc(o, ' ');
            *col = indent;
        } else if (!first && !glued) {
            s_addc(o, ' ');
            (*col)++;
        }
        s_addn(o, p, len);
        *col += columns(p, len);
        p += len;
        first = false;
    }
}

static void pad_to(struct str *o, size_t *col, size_t to)
{
    for (; *col < to; (*col)++)
        s_addc(o, ' ');
}

/* ---- help ----------------------------------------------------------------------------------- */

/* The lede: paragraphs and lists after the title, up to the first heading, table or code. */
static int lede_end(const struct page *pg)
{
    int i = 1;
    while (i < pg->nblocks && (pg->blocks[i].kind == B_PARA || pg->blocks[i].kind == B_LIST))
        i++;
    return i;
}

static void help_lede(struct str *o, const struct page *pg)
{
    int end = lede_end(pg);
    for (int i = 1; i < end; i++) {
        const struct block *b = &pg->blocks[i];
        size_t col = 0;
        if (b->kind == B_PARA) {
            char *t = plain(b->items[0]);
            size_t n = strlen(t);
            /* "...as follows:" before a code block or table the help leaves out */
            if (i == end - 1 && end < pg->nblocks && n && t[n - 1] == ':' && pg->blocks[end].kind != B_HEAD)
                t[n - 1] = '.';
            wrap(o, t, &col, 0, NULL);
            s_add(o, "\n\n");
            continue;
        }
        for (int k = 0; k < b->n; k++) {
            s_add(o, "  - ");
            col = 4;
            wrap(o, plain(b->items[k]), &col, 4, NULL);
            s_addc(o, '\n');
        }
        s_addc(o, '\n');
    }
}

/* The argument as the help shows it: "NAME|SIZE", "" for a flag. */
static const char *arg_text(const struct opt *o)
{
    struct str a = {0};
    for (int i = 0; i < o->nalts; i++) {
        if (i)
            s_addc(&a, '|');
        s_add(&a, o->alts[i]);
    }
    return s_get(&a);
}

static const char *opt_label(const struct opt *o)
{
    struct str l = {0};
    if (o->inherit) {
        s_add(&l, "(all of ");
        s_add(&l, o->inherit);
        s_add(&l, ")");
        return s_get(&l);
    }
    for (int i = 0; i < o->nnames; i++) {
        if (i)
            s_add(&l, ", ");
        s_add(&l, o->names[i]);
    }
    if (o->nalts) {
        s_addc(&l, ' ');
        s_add(&l, arg_text(o));
    }
    return s_get(&l);
}

static void help_options(struct str *o, const struct page *pg)
{
    for (int g = 0; g < pg->ngroups; g++) {
        if (pg->ngroups == 1) {
            s_add(o, "options:\n");
        } else {
            struct str t = {0};
            md_plain(&t, pg->groups[g].title, strlen(pg->groups[g].title));
            char *title = s_get(&t);
            if (title[0] >= 'A' && title[0] <= 'Z')
                title[0] = (char)(title[0] - 'A' + 'a');
            s_add(o, g ? "\n" : "");
            s_add(o, title);
            s_add(o, ":\n");
        }
        for (int i = 0; i < pg->nopts; i++) {
            const struct opt *op = &pg->opts[i];
            if (op->group != g)
                continue;
            size_t col = 2;
            s_add(o, "  ");
            wrap(o, opt_label(op), &col, 8, "|");
            if (col + 1 > HELP_COL) {
                s_addc(o, '\n');
                col = 0;
            }
            pad_to(o, &col, HELP_COL);
            wrap(o, plain(op->meaning), &col, HELP_COL, NULL);
            s_addc(o, '\n');
        }
    }
}

/* "usage: memledger CMD ARGS", wrapped under the first argument, never inside "[...]". */
static void help_synopsis(struct str *o, const char *syn, bool first)
{
    s_add(o, first ? "usage: " : "       ");
    size_t cmdlen = strcspn(syn, " ");
    if (syn[cmdlen])
        cmdlen += 1 + strcspn(syn + cmdlen + 1, " ");
    s_addn(o, syn, cmdlen);
    size_t col = 7 + cmdlen;
    if (syn[cmdlen]) {
        s_addc(o, ' ');
        col++;
    }
    char *rest = astrdup(syn + cmdlen);
    int depth = 0;
    for (char *p = rest; *p; p++) {
        depth += *p == '[' ? 1 : *p == ']' ? -1 : 0;
        if (*p == ' ' && depth > 0)
            *p = '\x01';
    }
    struct str w = {0};
    wrap(&w, rest, &col, 7 + cmdlen + 1, NULL);
    for (const char *p = s_get(&w); *p; p++)
        s_addc(o, *p == '\x01' ? ' ' : *p);
    s_addc(o, '\n');
}

static const char *help_text(const struct page *pg)
{
    struct str o = {0};
    for (int i = 0; i < pg->nsyn; i++)
        help_synopsis(&o, pg->synopsis[i], i == 0);
    s_addc(&o, '\n');
    help_lede(&o, pg);
    help_options(&o, pg);
    size_t col = 13;
    s_add(&o, "\nexit status: ");
    wrap(&o, plain(pg->exit), &col, 4, NULL);
    s_add(&o, "\n'man memledger-");
    s_add(&o, pg->name);
    s_add(&o, "' has the whole page.\n");
    return s_get(&o);
}

static void c_string_lines(FILE *f, const char *s)
{
    fputs("    \"", f);
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            fputs(p[1] ? "\\n\"\n    \"" : "\\n", f);
            continue;
        }
        if (*p == '"' || *p == '\\')
            fputc('\\', f);
        if (*p == '?' && p[1] == '?')
            fputc('\\', f); /* no trigraphs */
        fputc(*p, f);
    }
    fputs("\"", f);
}

static void gen_help(FILE *f)
{
    fputs("/* Generated by tools/gen_cli_docs.c from the pages in docs/cli; do not edit. */\n"
          "#include \"cli.h\"\n#include \"i18n.h\"\n\n"
          "/* A char array takes a bare string literal: N_ as the gettext manual defines it. */\n"
          "#undef N_\n#define N_(s) s\n",
          f);
    for (int i = 0; i < npages; i++) {
        const struct page *pg = &pages[i];
        if (is_top(pg))
            continue;
        fprintf(f,
                "\n/* TRANSLATORS: 'memledger help %s', from docs/cli/%s.md. Keep the options, their\n"
                "   values and placeholders, and the layout (the second column starts at column %d). */\n"
                "/* xgettext:no-c-format */\nconst char cmd_%s_usage[] = N_(\n",
                pg->name, pg->name, HELP_COL + 1, pg->name);
        c_string_lines(f, help_text(pg));
        fputs(");\n", f);
    }
}

/* ---- options, with (all of `CMD`) resolved --------------------------------------------------- */

struct eff_opt {
    const struct opt *o;
    const char *mode;
};

static int effective_options(const struct page *pg, const char *mode, struct eff_opt *out, int max, int depth);

/* '(all of `CMD`)': the options its meaning cell names, as CMD's page defines them. */
static int inherited_options(const struct page *pg, const struct opt *o, const char *mode, struct eff_opt *out, int max,
                             int depth)
{
    const struct page *from = find_page(o->inherit);
    if (!from || from == pg)
        die("%s:%d: no other page named '%s'", pg->path, o->line, o->inherit);
    struct eff_opt all[MAX_OPTS * 2];
    int nall = effective_options(from, "", all, MAX_OPTS * 2, depth + 1), n = 0;
    for (const char *p = strchr(o->meaning, '`'); p; p = strchr(p, '`')) {
        const char *e = strchr(p + 1, '`');
        if (!e)
            die("%s:%d: unterminated `", pg->path, o->line);
        char *name = astrndup(p + 1, (size_t)(e - p - 1));
        p = e + 1;
        int k = 0;
        while (k < nall && !(all[k].o->nnames && !strcmp(all[k].o->names[all[k].o->nnames - 1], name)))
            k++;
        if (k == nall)
            die("%s:%d: %s is not an option of '%s' (docs/cli/%s.md)", pg->path, o->line, name, from->name, from->name);
        if (n == max)
            die("%s: too many options", pg->path);
        out[n].o = all[k].o;
        out[n++].mode = mode;
    }
    if (!n)
        die("%s:%d: '(all of `%s`)' names no `--option` in its meaning cell", pg->path, o->line, o->inherit);
    return n;
}

/* The options of pg in mode ("" = without a mode option), inherited ones included. */
static int effective_options(const struct page *pg, const char *mode, struct eff_opt *out, int max, int depth)
{
    int n = 0;
    if (depth > 4)
        die("%s: '(all of ...)' loops", pg->path);
    for (int i = 0; i < pg->nopts; i++) {
        const struct opt *o = &pg->opts[i];
        if (strcmp(pg->groups[o->group].mode, mode))
            continue;
        if (o->inherit) {
            n += inherited_options(pg, o, mode, out + n, max - n, depth);
            continue;
        }
        if (n == max)
            die("%s: too many options", pg->path);
        out[n].o = o;
        out[n].mode = mode;
        n++;
    }
    return n;
}

/* The modes of pg: "" and each 'option (with `--MODE`)' table's. */
static int page_modes(const struct page *pg, const char **modes)
{
    int n = 0;
    modes[n++] = "";
    for (int g = 0; g < pg->ngroups; g++) {
        bool seen = false;
        for (int k = 0; k < n; k++)
            seen |= !strcmp(modes[k], pg->groups[g].mode);
        if (!seen)
            modes[n++] = pg->groups[g].mode;
    }
    return n;
}

enum argkind { A_FLAG, A_VALUES, A_FILE, A_DIR, A_FREE };

static enum argkind arg_kind(const struct opt *o)
{
    if (!o->nalts)
        return A_FLAG;
    bool lit = true;
    for (int i = 0; i < o->nalts; i++) {
        if (!strcmp(o->alts[i], "FILE") || !strcmp(o->alts[i], "PATH"))
            return A_FILE;
        if (!strcmp(o->alts[i], "DIR"))
            return A_DIR;
        lit &= is_literal(o->alts[i]);
    }
    return lit ? A_VALUES : A_FREE;
}

static const char *values(const struct opt *o, const char *sep)
{
    struct str v = {0};
    for (int i = 0; i < o->nalts; i++)
        if (is_literal(o->alts[i])) {
            if (v.n)
                s_add(&v, sep);
            s_add(&v, o->alts[i]);
        }
    return s_get(&v);
}

/* A short description: the plain meaning up to its first ';' (or ' (' after 16 columns), at most 60. */
static const char *short_desc(const struct opt *o)
{
    char *t = plain(o->meaning);
    size_t n = strcspn(t, ";");
    char *paren = strstr(t, " (");
    if (paren && (size_t)(paren - t) < n && paren - t >= 16)
        n = (size_t)(paren - t);
    if (n > 60) {
        n = 57;
        while (n && t[n] != ' ')
            n--;
        t[n++] = '.';
        t[n++] = '.';
        t[n++] = '.';
    }
    t[n] = '\0';
    return t;
}

static void gen_list(FILE *f)
{
    for (int i = 0; i < npages; i++) {
        const char *modes[MAX_GROUPS + 1];
        int nm = page_modes(&pages[i], modes);
        for (int m = 0; m < nm; m++) {
            struct eff_opt eo[MAX_OPTS * 2];
            int n = effective_options(&pages[i], modes[m], eo, MAX_OPTS * 2, 0);
            for (int k = 0; k < n; k++)
                for (int j = 0; j < eo[k].o->nnames; j++) {
                    const struct opt *o = eo[k].o;
                    enum argkind a = arg_kind(o);
                    fprintf(f, "%s\t%s\t%s\t%s\t%s\n", pages[i].name, *modes[m] ? modes[m] : "-", o->names[j],
                            a == A_FLAG ? "-" : arg_text(o), a == A_VALUES ? values(o, " ") : "-");
                }
        }
    }
}

/* ---- man page (Markdown for lowdown -Tman) ---------------------------------------------------- */

enum msec { S_DESCRIPTION, S_OPTIONS, S_EXIT, S_ENVIRONMENT, S_FILES, S_EXAMPLES, S_SEEALSO, S_COUNT };

static const char *const msec_heading[S_COUNT] = {"",      "Options",  "Exit status", "Environment",
                                                  "Files", "Examples", "See also"};
static const char *const msec_title[S_COUNT] = {"DESCRIPTION", "OPTIONS",  "EXIT STATUS", "ENVIRONMENT",
                                                "FILES",       "EXAMPLES", "SEE ALSO"};

static bool same_ci(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20))
            return false;
    return !*a && !*b;
}

static enum msec block_section(const struct page *pg, const struct block *b)
{
    if (b->section < 0)
        return S_DESCRIPTION;
    const char *h = pg->blocks[b->section].items[0];
    for (int s = 1; s < S_COUNT; s++)
        if (same_ci(h, msec_heading[s]))
            return (enum msec)s;
    return S_DESCRIPTION;
}

/*
 * A table: as it is up to three columns; wider ones as a list of their rows (the first cell, then
 * "header: cell" for each other cell), which tbl cannot fit into 80 columns.
 */
static void man_table(struct str *o, const struct block *b)
{
    const char *head[16], *cells[16];
    int nh = split_row("table", b->line, b->items[0], head, 16);
    if (nh <= 3) {
        for (int i = 0; i < b->n; i++) {
            s_add(o, man_md(b->items[i], true));
            s_addc(o, '\n');
        }
        s_addc(o, '\n');
        return;
    }
    for (int r = 2; r < b->n; r++) {
        int nc = split_row("table", b->line + r, b->items[r], cells, 16);
        s_add(o, "**");
        s_add(o, man_md(cells[0], true));
        s_add(o, "**\n");
        for (int c = 1; c < nc && c < nh; c++) {
            if (!*cells[c])
                continue;
            s_add(o, ": ");
            s_add(o, man_md(head[c], true));
            s_add(o, ": ");
            s_add(o, man_md(cells[c], true));
            s_addc(o, '\n');
        }
        s_addc(o, '\n');
    }
}

static void man_block(struct str *o, const struct block *b)
{
    switch (b->kind) {
    case B_HEAD:
        for (int i = 0; i < (b->level < 2 ? 2 : b->level); i++)
            s_addc(o, '#');
        s_addc(o, ' ');
        s_add(o, man_md(b->items[0], false));
        s_add(o, "\n\n");
        return;
    case B_PARA:
        s_add(o, man_md(b->items[0], false));
        s_add(o, "\n\n");
        return;
    case B_LIST:
        for (int i = 0; i < b->n; i++) {
            s_add(o, "- ");
            s_add(o, man_md(b->items[i], false));
            s_addc(o, '\n');
        }
        s_addc(o, '\n');
        return;
    case B_CODE:
        for (int i = 0; i < b->n; i++) {
            s_add(o, "    ");
            s_add(o, b->items[i]);
            s_addc(o, '\n');
        }
        s_addc(o, '\n');
        return;
    case B_TABLE: man_table(o, b); return;
    }
}

static void man_option(struct str *o, const struct opt *op)
{
    if (op->inherit) {
        s_add(o, "**(all of ");
        s_add(o, op->inherit);
        s_add(o, ")**\n");
    } else {
        for (int i = 0; i < op->nnames; i++) {
            s_add(o, i ? ", **" : "**");
            for (const char *p = op->names[i]; *p; p++)
                s_add(o, *p == '-' ? "\\-" : (const char[]){*p, 0});
            s_add(o, "**");
        }
        if (op->nalts) {
            s_add(o, " *");
            s_add(o, md_escape(arg_text(op)));
            s_add(o, "*");
        }
        s_addc(o, '\n');
    }
    s_add(o, ": ");
    s_add(o, man_md(op->meaning, true));
    s_add(o, "\n\n");
}

static void man_options(struct str *o, const struct page *pg)
{
    for (int g = 0; g < pg->ngroups; g++) {
        if (pg->ngroups > 1) {
            s_add(o, "## ");
            s_add(o, man_md(pg->groups[g].title, false));
            s_add(o, "\n\n");
        }
        for (int i = 0; i < pg->nopts; i++) {
            const struct opt *op = &pg->opts[i];
            if (op->group != g)
                continue;
            if (!op->inherit) {
                man_option(o, op);
                continue;
            }
            /* the page stands alone: the inherited options with their own page's meaning */
            struct eff_opt eo[MAX_OPTS * 2];
            int n = inherited_options(pg, op, pg->groups[g].mode, eo, MAX_OPTS * 2, 0);
            for (int k = 0; k < n; k++)
                man_option(o, eo[k].o);
        }
    }
}

static void man_exit(struct str *o, const struct page *pg)
{
    const char *p = pg->exit;
    while (*p) {
        size_t len = strcspn(p, ";");
        char *item = trim(astrndup(p, len));
        size_t code = strspn(item, "0123456789+N/ ");
        while (code && item[code - 1] == ' ')
            code--;
        if (code && item[code] == ' ') {
            s_add(o, "**");
            s_add(o, md_escape(astrndup(item, code)));
            s_add(o, "**\n: ");
            s_add(o, man_md(skip_ws(item + code), false));
        } else {
            s_add(o, man_md(item, false));
        }
        s_add(o, "\n\n");
        p += len;
        if (*p)
            p++;
    }
}

/* Whether pg links to q's page ("](train.md)"). */
static bool links_to(const struct page *pg, const struct page *q)
{
    struct str target = {0};
    s_add(&target, "](");
    s_add(&target, q->name);
    s_add(&target, ".md)");
    for (int i = 0; i < pg->nblocks; i++)
        for (int k = 0; k < pg->blocks[i].n; k++)
            if (strstr(pg->blocks[i].items[k], s_get(&target)))
                return true;
    return false;
}

static void man_see_also(struct str *o, const struct page *pg)
{
    struct str s = {0};
    for (int i = 0; i < npages; i++) {
        const struct page *q = &pages[i];
        if (q == pg || (!is_top(pg) && !is_top(q) && !links_to(pg, q)))
            continue;
        if (s.n)
            s_add(&s, ", ");
        s_add(&s, is_top(q) ? "**memledger**(1)" : "**memledger\\-");
        if (!is_top(q)) {
            s_add(&s, q->name);
            s_add(&s, "**(1)");
        }
    }
    s_add(o, s_get(&s));
    s_add(o, "\n\n");
}

static void man_commands(struct str *o)
{
    s_add(o, "# COMMANDS\n\n");
    for (int i = 0; i < npages; i++) {
        if (is_top(&pages[i]))
            continue;
        s_add(o, "**memledger\\-");
        s_add(o, pages[i].name);
        s_add(o, "**(1)\n: ");
        s_add(o, md_escape(pages[i].summary));
        s_add(o, "\n\n");
    }
}

static void man_synopsis(struct str *o, const struct page *pg)
{
    s_add(o, "# SYNOPSIS\n\n");
    for (int i = 0; i < pg->nsyn; i++) {
        const char *syn = pg->synopsis[i];
        size_t cmdlen = strcspn(syn, " ");
        if (!is_top(pg) && syn[cmdlen])
            cmdlen += 1 + strcspn(syn + cmdlen + 1, " ");
        s_add(o, "**");
        s_add(o, md_escape(astrndup(syn, cmdlen)));
        s_add(o, "**");
        s_add(o, md_escape(syn + cmdlen));
        s_add(o, "\n\n");
    }
}

static const char *man_text(const struct page *pg, const char *version)
{
    struct str o = {0};
    s_add(&o, "title: memledger");
    if (!is_top(pg)) {
        s_addc(&o, '-');
        s_add(&o, pg->name);
    }
    s_add(&o, "\nsection: 1\nsource: memledger ");
    s_add(&o, version);
    s_add(&o, "\nvolume: memledger manual\n\n# NAME\n\n");
    s_add(&o, is_top(pg) ? "memledger" : "memledger\\-");
    if (!is_top(pg))
        s_add(&o, pg->name);
    s_add(&o, " \\- ");
    s_add(&o, md_escape(pg->summary));
    s_add(&o, "\n\n");
    man_synopsis(&o, pg);
    struct str sec[S_COUNT] = {{0}};
    for (int i = 1; i < pg->nblocks; i++) {
        const struct block *b = &pg->blocks[i];
        if (b->group >= 0 || (b->kind == B_HEAD && b->level == 2 && block_section(pg, b) != S_DESCRIPTION))
            continue;
        man_block(&sec[block_section(pg, b)], b);
    }
    for (int s = 0; s < S_COUNT; s++) {
        if (s == S_OPTIONS && is_top(pg))
            man_commands(&o);
        if (s == S_OPTIONS && !pg->ngroups && !sec[s].n)
            continue;
        if ((s == S_ENVIRONMENT || s == S_FILES || s == S_EXAMPLES) && !sec[s].n)
            continue;
        s_add(&o, "# ");
        s_add(&o, msec_title[s]);
        s_add(&o, "\n\n");
        if (s == S_OPTIONS)
            man_options(&o, pg);
        if (s == S_EXIT)
            man_exit(&o, pg);
        s_add(&o, s_get(&sec[s]));
        if (s == S_SEEALSO)
            man_see_also(&o, pg);
    }
    return s_get(&o);
}

/* ---- completions ---------------------------------------------------------------------------- */

static bool repeatable(const struct opt *o)
{
    return strstr(o->meaning, "repeatable") != NULL;
}

static bool has_dashdash(const struct page *pg)
{
    for (int i = 0; i < pg->nsyn; i++)
        if (strstr(pg->synopsis[i], " -- "))
            return true;
    return false;
}

static void bash_data(struct str *o)
{
    s_add(o, "_memledger_commands='");
    for (int i = 0, k = 0; i < npages; i++)
        if (!is_top(&pages[i])) {
            s_add(o, k++ ? " " : "");
            s_add(o, pages[i].name);
        }
    s_add(o, "'\n_memledger_modes='");
    struct str args = {0}, opts = {0};
    for (int i = 0; i < npages; i++) {
        const struct page *pg = &pages[i];
        if (is_top(pg))
            continue;
        const char *modes[MAX_GROUPS + 1];
        int nm = page_modes(pg, modes);
        for (int m = 0; m < nm; m++) {
            if (*modes[m]) {
                s_add(o, pg->name);
                s_addc(o, ':');
                s_add(o, modes[m]);
                s_addc(o, ' ');
            }
            struct eff_opt eo[MAX_OPTS * 2];
            int n = effective_options(pg, modes[m], eo, MAX_OPTS * 2, 0);
            s_add(&opts, "    '");
            s_add(&opts, pg->name);
            s_addc(&opts, '/');
            s_add(&opts, modes[m]);
            s_add(&opts, "') echo '");
            for (int k = 0; k < n; k++)
                for (int j = 0; j < eo[k].o->nnames; j++) {
                    s_add(&opts, k || j ? " " : "");
                    s_add(&opts, eo[k].o->names[j]);
                    enum argkind a = arg_kind(eo[k].o);
                    if (a == A_FLAG)
                        continue;
                    static const char *const kinds[] = {"", "values ", "file", "dir", "free"};
                    s_add(&args, "    '");
                    s_add(&args, pg->name);
                    s_addc(&args, '/');
                    s_add(&args, modes[m]);
                    s_addc(&args, '/');
                    s_add(&args, eo[k].o->names[j]);
                    s_add(&args, "') echo '");
                    s_add(&args, kinds[a]);
                    if (a == A_VALUES)
                        s_add(&args, values(eo[k].o, " "));
                    s_add(&args, "' ;;\n");
                }
            s_add(&opts, "' ;;\n");
        }
    }
    s_add(o, "'\n_memledger_dashdash='");
    for (int i = 0; i < npages; i++)
        if (has_dashdash(&pages[i])) {
            s_add(o, pages[i].name);
            s_addc(o, ' ');
        }
    s_add(o, "'\n\n# _memledger_options CMD MODE: the options of CMD (after MODE, e.g. fit --serve)\n"
             "_memledger_options() {\n    case \"$1/$2\" in\n");
    s_add(o, s_get(&opts));
    s_add(o, "    esac\n}\n\n# _memledger_arg CMD MODE OPTION: what OPTION takes: values V..., file, dir, free; "
             "nothing for a flag\n_memledger_arg() {\n    case \"$1/$2/$3\" in\n");
    s_add(o, s_get(&args));
    s_add(o, "    esac\n}\n");
}

/* Text inside a zsh single-quoted _arguments spec, and inside its [description]. */
static void zsh_quote(struct str *o, const char *s, bool desc)
{
    for (; *s; s++) {
        if (*s == '\'')
            s_add(o, "'\\''");
        else if (desc && strchr("[]:\\", *s)) {
            s_addc(o, '\\');
            s_addc(o, *s);
        } else
            s_addc(o, *s);
    }
}

static void zsh_spec(struct str *o, const struct opt *op, const char *name)
{
    enum argkind a = arg_kind(op);
    s_add(o, "    '");
    if (repeatable(op))
        s_addc(o, '*');
    s_add(o, name);
    if (a != A_FLAG && starts(name, "--"))
        s_addc(o, '=');
    s_addc(o, '[');
    zsh_quote(o, short_desc(op), true);
    s_addc(o, ']');
    if (a != A_FLAG) {
        s_addc(o, ':');
        zsh_quote(o, arg_text(op), true);
        s_addc(o, ':');
        if (a == A_VALUES) {
            s_addc(o, '(');
            s_add(o, values(op, " "));
            s_addc(o, ')');
        } else if (a == A_FILE) {
            s_add(o, "_files");
        } else if (a == A_DIR) {
            s_add(o, "_files -/");
        } else {
            s_addc(o, ' ');
        }
    }
    s_add(o, "'\n");
}

static void zsh_data(struct str *o)
{
    s_add(o, "_memledger_commands=(\n");
    for (int i = 0; i < npages; i++)
        if (!is_top(&pages[i])) {
            s_add(o, "    '");
            s_add(o, pages[i].name);
            s_addc(o, ':');
            zsh_quote(o, pages[i].summary, false);
            s_add(o, "'\n");
        }
    s_add(o, ")\n_memledger_modes=(");
    struct str specs = {0};
    for (int i = 0; i < npages; i++) {
        const struct page *pg = &pages[i];
        if (is_top(pg))
            continue;
        const char *modes[MAX_GROUPS + 1];
        int nm = page_modes(pg, modes);
        for (int m = 0; m < nm; m++) {
            if (*modes[m]) {
                s_add(o, " '");
                s_add(o, pg->name);
                s_addc(o, ':');
                s_add(o, modes[m]);
                s_addc(o, '\'');
            }
            struct eff_opt eo[MAX_OPTS * 2];
            int n = effective_options(pg, modes[m], eo, MAX_OPTS * 2, 0);
            s_add(&specs, "_memledger_opts_");
            s_add(&specs, pg->name);
            for (const char *p = modes[m]; *p; p++)
                s_addc(&specs, *p == '-' ? '_' : *p);
            s_add(&specs, "=(\n");
            for (int k = 0; k < n; k++)
                for (int j = 0; j < eo[k].o->nnames; j++)
                    zsh_spec(&specs, eo[k].o, eo[k].o->names[j]);
            s_add(&specs, has_dashdash(pg) ? "    '*::command:_normal'\n" : "    '*:file:_files'\n");
            s_add(&specs, ")\n");
        }
    }
    s_add(o, " )\n");
    s_add(o, s_get(&specs));
}

static void fish_quote(struct str *o, const char *s)
{
    s_addc(o, '\'');
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            s_addc(o, '\\');
        s_addc(o, *s);
    }
    s_addc(o, '\'');
}

static void fish_option(struct str *o, const struct page *pg, const char *mode, const struct opt *op)
{
    for (int j = 0; j < op->nnames; j++) {
        const char *nm = op->names[j];
        s_add(o, "complete -c memledger -n '__memledger_in ");
        s_add(o, pg->name);
        s_add(o, *mode ? " " : " \"\"");
        s_add(o, mode);
        s_add(o, starts(nm, "--") ? "' -l " : "' -s ");
        s_add(o, nm + (starts(nm, "--") ? 2 : 1));
        switch (arg_kind(op)) {
        case A_FLAG: break;
        case A_VALUES:
            s_add(o, " -x -a ");
            fish_quote(o, values(op, " "));
            break;
        case A_FILE: s_add(o, " -r -F"); break;
        case A_DIR: s_add(o, " -x -a '(__fish_complete_directories (commandline -ct))'"); break;
        case A_FREE: s_add(o, " -x"); break;
        }
        s_add(o, " -d ");
        fish_quote(o, short_desc(op));
        s_addc(o, '\n');
    }
}

static void fish_data(struct str *o)
{
    s_add(o, "set -g __memledger_modes");
    struct str c = {0};
    for (int i = 0; i < npages; i++) {
        const struct page *pg = &pages[i];
        if (is_top(pg))
            continue;
        s_add(&c, "complete -c memledger -n __memledger_no_command -a ");
        s_add(&c, pg->name);
        s_add(&c, " -d ");
        fish_quote(&c, pg->summary);
        s_add(&c, "\ncomplete -c memledger -n '__memledger_helping' -a ");
        s_add(&c, pg->name);
        s_addc(&c, '\n');
        const char *modes[MAX_GROUPS + 1];
        int nm = page_modes(pg, modes);
        for (int m = 0; m < nm; m++) {
            if (*modes[m]) {
                s_add(o, " ");
                s_add(o, pg->name);
                s_addc(o, ':');
                s_add(o, modes[m]);
            }
            struct eff_opt eo[MAX_OPTS * 2];
            int n = effective_options(pg, modes[m], eo, MAX_OPTS * 2, 0);
            for (int k = 0; k < n; k++)
                fish_option(&c, pg, modes[m], eo[k].o);
            s_add(&c, "complete -c memledger -n '__memledger_in ");
            s_add(&c, pg->name);
            s_add(&c, *modes[m] ? " " : " \"\"");
            s_add(&c, modes[m]);
            s_add(&c, "' -F\n");
        }
        if (has_dashdash(pg)) {
            s_add(&c, "complete -c memledger -n '__memledger_after_dashdash ");
            s_add(&c, pg->name);
            s_add(&c, "' -x -a '(__memledger_watched)'\n");
        }
    }
    s_addc(o, '\n');
    s_add(o, s_get(&c));
}

/* The template with its "@DATA@" line replaced by data. */
static void fill_template(FILE *f, const char *template, const char *data)
{
    int n;
    char **l = read_lines(template, &n);
    bool done = false;
    for (int i = 0; i < n; i++) {
        if (!strcmp(l[i], "@DATA@")) {
            fputs(data, f);
            done = true;
        } else {
            fputs(l[i], f);
            fputc('\n', f);
        }
    }
    if (!done)
        die("%s: no @DATA@ line", template);
}

/* ---- main ----------------------------------------------------------------------------------- */

static FILE *open_out(const char *path, char *tmp, size_t n)
{
    snprintf(tmp, n, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        die("%s: %s", tmp, strerror(errno));
    return f;
}

static void close_out(FILE *f, const char *tmp, const char *path)
{
    if (ferror(f) | fclose(f) || rename(tmp, path))
        die("%s: %s", path, strerror(errno));
}

static void load_pages(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        load_page(paths[i]);
    if (!npages)
        die("no pages given");
}

static int usage(void)
{
    fputs("usage: gen_cli_docs help OUT.c PAGE.md...\n"
          "       gen_cli_docs man NAME VERSION OUT.md PAGE.md...\n"
          "       gen_cli_docs bash|zsh|fish TEMPLATE OUT PAGE.md...\n"
          "       gen_cli_docs list PAGE.md...\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *mode = argv[1];
    char tmp[4096];
    if (!strcmp(mode, "list")) {
        load_pages(argv + 2, argc - 2);
        gen_list(stdout);
        return fflush(stdout) ? 1 : 0;
    }
    if (!strcmp(mode, "help") && argc >= 4) {
        load_pages(argv + 3, argc - 3);
        FILE *f = open_out(argv[2], tmp, sizeof(tmp));
        gen_help(f);
        close_out(f, tmp, argv[2]);
        return 0;
    }
    if (!strcmp(mode, "man") && argc >= 6) {
        load_pages(argv + 5, argc - 5);
        const struct page *pg = find_page(argv[2]);
        if (!pg)
            die("no page named '%s'", argv[2]);
        FILE *f = open_out(argv[4], tmp, sizeof(tmp));
        fputs(man_text(pg, argv[3]), f);
        close_out(f, tmp, argv[4]);
        return 0;
    }
    bool bash = !strcmp(mode, "bash"), zsh = !strcmp(mode, "zsh"), fish = !strcmp(mode, "fish");
    if ((bash || zsh || fish) && argc >= 5) {
        load_pages(argv + 4, argc - 4);
        struct str data = {0};
        if (bash)
            bash_data(&data);
        else if (zsh)
            zsh_data(&data);
        else
            fish_data(&data);
        FILE *f = open_out(argv[3], tmp, sizeof(tmp));
        fill_template(f, argv[2], s_get(&data));
        close_out(f, tmp, argv[3]);
        return 0;
    }
    return usage();
}
