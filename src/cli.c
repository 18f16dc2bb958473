/*
 * cli.c - shared helpers of the subcommands (see cli.h).
 */
#include "cli.h"
#include "io.h"
#include "term.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/json_dup.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* Config files are small; a larger "config" is refused before parsing. */
#define ML_CONFIG_READ_MAX ((size_t)16 << 20)

void ml_report(const struct ml_diag *d)
{
    const char *msg = d->msg[0] ? d->msg : ml_status_str(d->code);
    if (d->origin[0] && d->line && d->col)
        ml_stderr_printf("memledger: %s:%u:%u: %s\n", d->origin, d->line, d->col, msg);
    else if (d->origin[0] && d->line)
        ml_stderr_printf("memledger: %s:%u: %s\n", d->origin, d->line, msg);
    else if (d->origin[0])
        ml_stderr_printf("memledger: %s: %s\n", d->origin, msg);
    else
        ml_stderr_printf("memledger: %s\n", msg);
}

void ml_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_stderr_printf("%s", "memledger: ");
    ml_stderr_vprintf(fmt, ap);
    ml_stderr_printf("\n");
    va_end(ap);
}

/* A warning is folded at COLUMNS when it is set (docs/cli/memledger.md, Environment), so that a
 * terminal of that width shows it whole; errors stay one line each, for scripts. */
void ml_warnf(const char *fmt, ...)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    va_list ap;
    va_start(ap, fmt);
    ml_buf_adds(&b, _("memledger: warning: "));
    (void)ml_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    (void)ml_buf_adds(&b, "\n");
    size_t w = ml_term_columns_env();
    (void)ml_text_fold(&b, 0, w && w < ML_TERM_MIN_WIDTH ? ML_TERM_MIN_WIDTH : w);
    ml_stderr_printf("%s", b.buf ? b.buf : "");
    ml_buf_release(&b);
}

int ml_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_stderr_printf("memledger %s: ", cmd);
    ml_stderr_vprintf(fmt, ap);
    ml_stderr_printf(_(" (see 'memledger help %s')\n"), cmd);
    va_end(ap);
    return ML_EXIT_USAGE;
}

int ml_exit_code(enum ml_status st)
{
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}

enum ml_status ml_read_file(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d)
{
    ml_diag_at(d, strcmp(path, "-") ? path : "<stdin>", 0, 0);
    int h = ml_in_open(path, d);
    if (h < 0)
        return d->code;
    uint64_t size = ml_in_size(h);
    if (size != UINT64_MAX && size > max) {
        ml_in_close(h);
        return ml_diag_set(d, ML_ERR_TOOBIG, _("file is %llu bytes, over the %zu-byte limit for this input"),
                           (unsigned long long)size, max);
    }
    out->max = max;
    char chunk[65536];
    enum ml_status st = ML_OK;
    for (;;) {
        long n = ml_in_read(h, chunk, sizeof(chunk), d);
        if (n < 0) {
            st = d->code;
            break;
        }
        if (n == 0)
            break;
        st = ml_buf_add(out, chunk, (size_t)n);
        if (st == ML_ERR_TOOBIG) {
            ml_diag_set(d, st, _("input is over the %zu-byte limit for this input"), max);
            break;
        }
        if (st != ML_OK) {
            ml_diag_set(d, st, "%s", ml_status_str(st));
            break;
        }
    }
    ml_in_close(h);
    return st;
}

static bool is_dir(const char *p)
{
    return ml_path_kind(p) == ML_PATH_DIR;
}

static bool exists(const char *p)
{
    return ml_path_kind(p) != ML_PATH_NONE;
}

/* Last path component without a trailing slash, for display. */
static void base_name(const char *path, char *out, size_t n)
{
    char tmp[512];
    (void)snprintf(tmp, sizeof(tmp), "%s", path);
    size_t len = strlen(tmp);
    while (len > 1 && tmp[len - 1] == '/')
        tmp[--len] = '\0';
    const char *slash = strrchr(tmp, '/');
    (void)snprintf(out, n, "%s", slash ? slash + 1 : tmp);
}

/* A name that is not a file here: the catalog's resolver (lib/model/catalog.c: exact names, hub
 * ids, known suffixes, a local path's last component, "did you mean"), its note on stderr. */
static enum ml_status resolve_name(const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    /* "org/name" is a hub id; anything else with a slash is a path, and a .json name a file. */
    const char *slash = strchr(arg, '/');
    bool hub_like = slash && slash != arg && arg[0] != '.' && !strchr(slash + 1, '/');
    if (strstr(arg, ".json")) {
        ml_diag_at(d, arg, 0, 0);
        return ml_diag_set(d, ML_ERR_IO, "%s", strerror(ENOENT));
    }
    struct ml_name_match nm;
    enum ml_status st = ml_catalog_resolve(arg, slash && !hub_like, &nm, d);
    if (st != ML_OK)
        return st;
    const struct ml_catalog_entry *e = nm.entry;
    (void)snprintf(out->name, sizeof(out->name), "%s", e->name);
    (void)snprintf(out->hub_id, sizeof(out->hub_id), "%s", hub_like ? arg : e->hub_id);
    (void)snprintf(out->source, sizeof(out->source), "%s", _("built-in catalog"));
    out->catalog_params = e->params;
    if (nm.note[0])
        ml_stderr_printf(_("memledger: note: %s\n"), nm.note);
    st = ml_catalog_arch(e, &out->arch, d);
    if (st == ML_OK)
        ml_arch_apply_name_quant(&out->arch, nm.quant, nm.quant_bits);
    return st;
}

enum ml_status ml_resolve_model(const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    memset(out, 0, sizeof(*out));
    if (!exists(arg))
        return resolve_name(arg, out, d);
    char path[1024];
    if (is_dir(arg)) {
        (void)snprintf(path, sizeof(path), "%s/config.json", arg);
        if (!exists(path)) {
            ml_diag_at(d, arg, 0, 0);
            return ml_diag_set(d, ML_ERR_IO, _("directory has no config.json"));
        }
        base_name(arg, out->name, sizeof(out->name));
    } else {
        (void)snprintf(path, sizeof(path), "%s", arg);
        char b[256];
        base_name(arg, b, sizeof(b));
        /* "models/foo/config.json" is best named "foo". */
        if (!strcmp(b, "config.json")) {
            char dir[1024];
            (void)snprintf(dir, sizeof(dir), "%s", arg);
            char *slash = strrchr(dir, '/');
            if (slash) {
                *slash = '\0';
                base_name(dir, b, sizeof(b));
            }
        } else {
            char *dot = strrchr(b, '.');
            if (dot && !strcmp(dot, ".json"))
                *dot = '\0';
        }
        (void)snprintf(out->name, sizeof(out->name), "%s", b);
    }
    (void)snprintf(out->source, sizeof(out->source), "%s", path);
    struct ml_buf b;
    ml_buf_init(&b, ML_CONFIG_READ_MAX);
    enum ml_status st = ml_read_file(path, ML_CONFIG_READ_MAX, &b, d);
    if (st == ML_OK)
        st = ml_arch_from_json(b.buf, b.len, path, &out->arch, d);
    if (st == ML_OK) {
        /* Read with the last of duplicated keys, as transformers does; say so with both lines. */
        struct ml_json_dup dup[8];
        size_t n = ml_json_duplicates(b.buf, b.len, dup, 8);
        for (size_t i = 0; i < n && i < 8; i++)
            ml_warnf(_("%s:%u: duplicate key %s (also on line %u): the last is used, as transformers' json.loads does"),
                     path, dup[i].last_line, dup[i].key, dup[i].first_line);
        if (n > 8)
            ml_warnf(_("%s: %zu more duplicate keys (the last of each is used)"), path, n - 8);
    }
    ml_buf_release(&b);
    return st;
}

enum ml_status ml_write_stdout(const struct ml_buf *b)
{
    if (!ml_stdout_write(b->buf, b->len)) {
        ml_errorf(_("cannot write the output: %s"), strerror(errno));
        return ML_ERR_IO;
    }
    return ML_OK;
}

enum ml_status ml_write_picture(const char *path, enum ml_status drawn, const struct ml_buf *b, bool force)
{
    if (drawn != ML_OK) {
        ml_errorf(_("%s: no picture: %s"), path, ml_status_str(drawn));
        return ML_ERR_IO;
    }
    return ml_write_file(path, b, force, _("picture")) ? ML_OK : ML_ERR_IO;
}

bool ml_opt_u64(const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_count_parse(val, out, &d) != ML_OK) {
        ml_usage_error(cmd, _("%s: %s"), opt, d.msg);
        return false;
    }
    if (*out < lo || *out > hi) {
        ml_usage_error(cmd, _("%s %s is out of range [%llu, %llu]"), opt, val, (unsigned long long)lo,
                       (unsigned long long)hi);
        return false;
    }
    return true;
}

bool ml_resolve_serving(const char *model, const char *gpu, struct ml_model_ref *m, struct ml_cluster *cl,
                        struct ml_inventory *inv)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_resolve_model(model, m, &d) != ML_OK) {
        ml_report(&d);
        return false;
    }
    memset(cl, 0, sizeof(*cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(gpu, &cl->gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        ml_report(&d);
        return false;
    }
    ml_diag_init(&d);
    if (ml_inventory_build(&m->arch, inv, &d) != ML_OK) {
        ml_diag_at(&d, m->source, 0, 0);
        ml_report(&d);
        return false;
    }
    return true;
}

bool ml_opt_fraction(const char *cmd, const char *opt, const char *val, uint32_t *out)
{
    uint64_t v = 0;
    const char *p = val;
    uint64_t ip = 0, fp = 0, div = 1;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        ip = ip * 10 + (uint64_t)(*p++ - '0');
        digits++;
        if (ip > 1)
            break;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9' && div < 1000) {
            fp = fp * 10 + (uint64_t)(*p++ - '0');
            div *= 10;
            digits++;
        }
        while (*p >= '0' && *p <= '9')
            p++;
    }
    v = ip * 1000 + fp * (1000 / div);
    if (*p || !digits || v == 0 || v > 1000) {
        ml_usage_error(cmd, _("%s must be a number in (0, 1], got '%s'"), opt, val);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

const char *ml_path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}
