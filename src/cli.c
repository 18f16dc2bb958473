/*
 * cli.c - shared helpers of the subcommands (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
        fprintf(stderr, "memledger: %s:%u:%u: %s\n", d->origin, d->line, d->col, msg);
    else if (d->origin[0] && d->line)
        fprintf(stderr, "memledger: %s:%u: %s\n", d->origin, d->line, msg);
    else if (d->origin[0])
        fprintf(stderr, "memledger: %s: %s\n", d->origin, msg);
    else
        fprintf(stderr, "memledger: %s\n", msg);
}

void ml_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("memledger: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void ml_warnf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(_("memledger: warning: "), stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int ml_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "memledger %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, _(" (see 'memledger help %s')\n"), cmd);
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
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    if (fd < 0)
        return ml_diag_set(d, ML_ERR_IO, "%s", strerror(errno));
    struct stat stt;
    if (fstat(fd, &stt) == 0 && S_ISDIR(stt.st_mode)) {
        if (fd != STDIN_FILENO)
            close(fd);
        return ml_diag_set(d, ML_ERR_IO, _("is a directory"));
    }
    if (fstat(fd, &stt) == 0 && S_ISREG(stt.st_mode) && (uint64_t)stt.st_size > max) {
        if (fd != STDIN_FILENO)
            close(fd);
        return ml_diag_set(d, ML_ERR_TOOBIG, _("file is %llu bytes, over the %zu-byte limit for this input"),
                           (unsigned long long)stt.st_size, max);
    }
    out->max = max;
    char chunk[65536];
    enum ml_status st = ML_OK;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            st = ml_diag_set(d, ML_ERR_IO, "%s", strerror(errno));
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
    if (fd != STDIN_FILENO)
        close(fd);
    return st;
}

static bool is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

static bool exists(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0;
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

/* The built-in base of a chat-tuned variant named by its hub id ("org/Name-Instruct", "-Chat",
 * "-it", Llama-2's "-chat-hf" for "-hf"): instruction tuning keeps the architecture, so the
 * variant's config.json is its base's. Only an exact suffix counts ("Mistral-7B-Instruct-v0.2"
 * is a different config from "Mistral-7B-v0.1" and is not mapped). NULL when none. */
static const struct ml_catalog_entry *variant_base(const char *arg)
{
    static const struct {
        const char *suffix, *base;
    } v[] = {{"-Instruct", ""}, {"-instruct", ""}, {"-Chat", ""}, {"-chat", ""}, {"-it", ""}, {"-chat-hf", "-hf"}};
    size_t n = strlen(arg);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        size_t k = strlen(v[i].suffix);
        if (n <= k || strcmp(arg + n - k, v[i].suffix) || !strchr(arg, '/'))
            continue;
        char base[256];
        if ((size_t)snprintf(base, sizeof(base), "%.*s%s", (int)(n - k), arg, v[i].base) >= sizeof(base))
            continue;
        const struct ml_catalog_entry *e = ml_catalog_find(base);
        if (e)
            return e;
    }
    return NULL;
}

enum ml_status ml_resolve_model(const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    memset(out, 0, sizeof(*out));
    const struct ml_catalog_entry *e = ml_catalog_find(arg);
    const struct ml_catalog_entry *base = e || exists(arg) ? NULL : variant_base(arg);
    if (base) {
        (void)snprintf(out->name, sizeof(out->name), "%s", base->name);
        (void)snprintf(out->hub_id, sizeof(out->hub_id), "%s", arg);
        (void)snprintf(out->source, sizeof(out->source), _("built-in catalog: %s, whose architecture the tuned variant keeps"),
                       base->hub_id);
        out->catalog_params = base->params;
        return ml_catalog_arch(base, &out->arch, d);
    }
    if (e && !exists(arg)) {
        (void)snprintf(out->name, sizeof(out->name), "%s", e->name);
        (void)snprintf(out->hub_id, sizeof(out->hub_id), "%s", e->hub_id);
        (void)snprintf(out->source, sizeof(out->source), "%s", _("built-in catalog"));
        out->catalog_params = e->params;
        return ml_catalog_arch(e, &out->arch, d);
    }
    char path[1024];
    if (is_dir(arg)) {
        (void)snprintf(path, sizeof(path), "%s/config.json", arg);
        if (!exists(path)) {
            ml_diag_at(d, arg, 0, 0);
            return ml_diag_set(d, ML_ERR_IO, _("directory has no config.json"));
        }
        base_name(arg, out->name, sizeof(out->name));
    } else if (exists(arg)) {
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
    } else {
        /* Neither a file nor a known name. */
        /* "org/name" is a hub id; anything else with a slash, or a .json name, is a path. */
        const char *slash = strchr(arg, '/');
        bool hub_like = slash && slash != arg && arg[0] != '.' && !strchr(slash + 1, '/');
        if (strstr(arg, ".json") || (slash && !hub_like)) {
            ml_diag_at(d, arg, 0, 0);
            return ml_diag_set(d, ML_ERR_IO, "%s", strerror(ENOENT));
        }
        const struct ml_catalog_entry *sug[3];
        size_t n = ml_catalog_suggest(arg, sug, 3);
        if (n == 0)
            return ml_diag_set(d, ML_ERR_NOTFOUND,
                               _("unknown model '%s': not a built-in name, hub id, config.json or model directory ('memledger models' lists the built-in ones)"),
                               arg);
        char list[256] = "";
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(list);
            (void)snprintf(list + l, sizeof(list) - l, "%s'%s'", i ? ", " : "", sug[i]->name);
        }
        return ml_diag_set(d, ML_ERR_NOTFOUND, _("unknown model '%s'; did you mean %s?"), arg, list);
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
    if (b->len && fwrite(b->buf, 1, b->len, stdout) != b->len) {
        ml_errorf(_("cannot write the output: %s"), strerror(errno));
        return ML_ERR_IO;
    }
    if (fflush(stdout) != 0) {
        ml_errorf(_("cannot write the output: %s"), strerror(errno));
        return ML_ERR_IO;
    }
    return ML_OK;
}

bool ml_opt_u64(const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi,
                uint64_t *out)
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

bool ml_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* ---- writing files (cli.h, docs/files.md) -------------------------------------------------- */

static mode_t user_mode(void)
{
    mode_t u = umask(0);
    (void)umask(u);
    return (mode_t)0666 & ~u;
}

/* Refuse what the final name must not be; *mode gets the replaced file's mode or the umask's. */
static bool out_target_ok(const struct ml_out *o, mode_t *mode)
{
    struct stat st;
    *mode = user_mode();
    if (lstat(o->path, &st) != 0) {
        if (errno == ENOENT)
            return true;
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, o->what, strerror(errno));
        return false;
    }
    if (S_ISLNK(st.st_mode)) {
        ml_errorf(_("%s: is a symbolic link; memledger never writes through one (name the file itself, or remove the link)"),
                  o->path);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        ml_errorf(_("%s: exists and is not a regular file; not replaced"), o->path);
        return false;
    }
    if (!o->force) {
        ml_errorf(_("%s: exists; use --force to overwrite it"), o->path);
        return false;
    }
    *mode = st.st_mode & 07777;
    return true;
}

bool ml_out_open(struct ml_out *o, const char *path, bool force, const char *what)
{
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    o->force = force;
    o->what = what;
    if ((size_t)snprintf(o->path, sizeof(o->path), "%s", path) >= sizeof(o->path) - 32) {
        ml_errorf(_("%s: the name is too long"), path);
        return false;
    }
    mode_t mode;
    if (!out_target_ok(o, &mode))
        return false;
    const char *base = ml_path_base(o->path);
    (void)snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.memledger-XXXXXX", (int)(base - o->path), o->path, base);
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, what, strerror(errno));
        o->tmp[0] = '\0';
        return false;
    }
    (void)fcntl(o->fd, F_SETFD, FD_CLOEXEC);
    if (fchmod(o->fd, mode) != 0) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, what, strerror(errno));
        ml_out_abort(o);
        return false;
    }
    return true;
}

bool ml_out_place(struct ml_out *o)
{
    if (o->placed)
        return true;
    mode_t mode;
    if (!out_target_ok(o, &mode)) /* what is there now (it may have changed since the open) */
        return false;
    if (!o->force) {
        /* link(2) never replaces: a file that appeared since the check is kept. */
        if (link(o->tmp, o->path) == 0) {
            (void)unlink(o->tmp);
            o->placed = true;
            return true;
        }
        if (errno == EEXIST) {
            ml_errorf(_("%s: exists; use --force to overwrite it"), o->path);
            return false;
        }
        /* A filesystem without hard links: the check above, then rename. */
    }
    if (rename(o->tmp, o->path) != 0) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, o->what, strerror(errno));
        return false;
    }
    o->placed = true;
    return true;
}

/* fsync and close; false (printed) on an error. */
static bool out_close(struct ml_out *o)
{
    if (o->fd < 0)
        return true;
    int e = 0;
    if (fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (close(o->fd) != 0 && !e)
        e = errno;
    o->fd = -1;
    if (e)
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, o->what, strerror(e));
    return !e;
}

bool ml_out_commit(struct ml_out *o)
{
    bool ok = out_close(o) && ml_out_place(o);
    if (!ok)
        ml_out_abort(o);
    return ok;
}

void ml_out_abort(struct ml_out *o)
{
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (!o->placed && o->tmp[0])
        (void)unlink(o->tmp);
    o->tmp[0] = '\0';
}

/* Keep the file at o->path aside (a hard link, else a rename) before it is replaced. */
static bool out_keep_old(struct ml_out *o)
{
    struct stat st;
    o->backup[0] = '\0';
    if (lstat(o->path, &st) != 0)
        return errno == ENOENT;
    (void)snprintf(o->backup, sizeof(o->backup), "%s.old", o->tmp);
    if (link(o->path, o->backup) == 0 || rename(o->path, o->backup) == 0)
        return true;
    ml_errorf(_("%s: cannot write the %s: %s"), o->path, o->what, strerror(errno));
    o->backup[0] = '\0';
    return false;
}

bool ml_out_commit_all(struct ml_out *o, size_t n)
{
    size_t i;
    bool ok = true;
    for (i = 0; i < n && ok; i++)
        ok = out_close(&o[i]);
    for (i = 0; i < n && ok; i++)
        ok = out_keep_old(&o[i]) && ml_out_place(&o[i]);
    if (ok) {
        for (i = 0; i < n; i++)
            if (o[i].backup[0])
                (void)unlink(o[i].backup);
        return true;
    }
    /* Undo: every file placed goes, every file replaced comes back. */
    for (size_t j = 0; j < n; j++) {
        if (o[j].placed && !o[j].backup[0])
            (void)unlink(o[j].path);
        if (o[j].backup[0] && rename(o[j].backup, o[j].path) != 0)
            ml_errorf(_("%s: could not be put back (it is in %s): %s"), o[j].path, o[j].backup, strerror(errno));
        o[j].placed = false;
        ml_out_abort(&o[j]);
    }
    return false;
}

bool ml_write_file(const char *path, const struct ml_buf *b, bool force, const char *what)
{
    struct ml_out o;
    if (!ml_out_open(&o, path, force, what))
        return false;
    if (!ml_write_all(o.fd, b->buf, b->len)) {
        ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(errno));
        ml_out_abort(&o);
        return false;
    }
    return ml_out_commit(&o);
}

bool ml_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
