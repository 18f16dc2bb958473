/*
 * io_web.c - src/io.h over memory, for the web page's module (docs/web.md): the files are the
 * page's (by name), standard output and error and the written files are buffers the module
 * hands back, the environment is empty. No file system, no network.
 */
#include "io.h"
#include "io_web.h"
#include "io_backend.h"

#include "cli.h"
#include "i18n.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES  16
#define MAX_OPEN   8
#define MAX_STAGED 8 /* ml_out files being written */
#define MAX_DIRS   8 /* directories made (fit --write DIR) */
#define NAME_MAX_  1024

struct file {
    char *name;
    struct ml_buf data;
};

static struct {
    struct file in[MAX_FILES], out[MAX_FILES];
    size_t n_in, n_out;
    struct ml_buf so, se;
    struct {
        bool used;
        size_t file, pos;
    } h[MAX_OPEN];
    struct {
        bool used;
        struct ml_buf data;
        size_t out; /* once placed: its index in out[] */
    } st[MAX_STAGED];
    char dirs[MAX_DIRS][NAME_MAX_];
    size_t n_dirs;
    bool ready; /* so and se initialised */
} W;

static void drop(struct file *f, size_t *n)
{
    for (size_t i = 0; i < *n; i++) {
        free(f[i].name);
        ml_buf_release(&f[i].data);
    }
    *n = 0;
}

void mlw_io_clear_output(void)
{
    drop(W.out, &W.n_out);
    if (W.ready) {
        ml_buf_release(&W.so);
        ml_buf_release(&W.se);
    }
    ml_buf_init(&W.so, 0);
    ml_buf_init(&W.se, 0);
    W.ready = true;
    memset(W.h, 0, sizeof(W.h));
    for (size_t i = 0; i < MAX_STAGED; i++) {
        if (W.st[i].used)
            ml_buf_release(&W.st[i].data);
        W.st[i].used = false;
    }
    W.n_dirs = 0;
}

void mlw_io_reset(void)
{
    mlw_io_clear_output();
    drop(W.in, &W.n_in);
}

static bool put(struct file *f, size_t *n, const char *name, const char *data, size_t len)
{
    size_t i = 0;
    while (i < *n && strcmp(f[i].name, name))
        i++;
    if (i == *n) {
        if (*n >= MAX_FILES || !(f[i].name = strdup(name)))
            return false;
        ml_buf_init(&f[i].data, 0);
        (*n)++;
    }
    ml_buf_reset(&f[i].data);
    return ml_buf_add(&f[i].data, data, len) == ML_OK;
}

bool mlw_io_add_input(const char *name, const char *data, size_t len)
{
    return put(W.in, &W.n_in, name, data, len);
}

const struct ml_buf *mlw_io_stdout(void)
{
    return &W.so;
}
const struct ml_buf *mlw_io_stderr(void)
{
    return &W.se;
}
size_t mlw_io_n_outputs(void)
{
    return W.n_out;
}
const char *mlw_io_output_name(size_t i)
{
    return W.out[i].name;
}
const struct ml_buf *mlw_io_output(size_t i)
{
    return &W.out[i].data;
}

/* path with its "." and empty components dropped and "a/.." folded ("./a//b" -> "a/b", "." -> ""). */
static void norm(const char *path, char *out, size_t n)
{
    size_t len = 0;
    if (path[0] == '/' && n > 1)
        out[len++] = '/';
    out[len] = '\0';
    const size_t top = len; /* where the components start */
    while (*path) {
        while (*path == '/')
            path++;
        size_t k = strcspn(path, "/");
        if (!k)
            break;
        const char *last = strrchr(out + top, '/');
        last = last ? last + 1 : out + top;
        if (k == 1 && path[0] == '.') {
            /* "." */
        } else if (k == 2 && !strncmp(path, "..", 2) && len > top && strcmp(last, "..")) {
            len = last > out + top ? (size_t)(last - 1 - out) : top;
            out[len] = '\0';
        } else if (len + k + 2 < n) {
            if (len > top)
                out[len++] = '/';
            memcpy(out + len, path, k);
            out[len += k] = '\0';
        }
        path += k;
    }
}

static int find_in(const struct file *f, size_t n, const char *path)
{
    char a[NAME_MAX_], b[NAME_MAX_];
    norm(path, a, sizeof(a));
    for (size_t i = 0; i < n; i++) {
        norm(f[i].name, b, sizeof(b));
        if (!strcmp(a, b))
            return (int)i;
    }
    return -1;
}

static int find(const char *path)
{
    return find_in(W.in, W.n_in, path);
}

/* An input, or a file this command wrote. */
static bool is_file(const char *path)
{
    return find(path) >= 0 || find_in(W.out, W.n_out, path) >= 0;
}

/* Does name lie under the directory dir (both normalised; "" is the top)? */
static bool under(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    return !n ? name[0] != '/' : !strncmp(name, dir, n) && name[n] == '/';
}

/* Something under dir: a file (the inputs, the outputs) or a directory made. */
static bool dir_holds(const char *dir, bool dirs_too)
{
    char d[NAME_MAX_], b[NAME_MAX_];
    norm(dir, d, sizeof(d));
    const struct file *lists[2] = {W.in, W.out};
    size_t ns[2] = {W.n_in, W.n_out};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < ns[l]; i++) {
            norm(lists[l][i].name, b, sizeof(b));
            if (under(d, b))
                return true;
        }
    for (size_t i = 0; dirs_too && i < W.n_dirs; i++)
        if (under(d, W.dirs[i]) || !strcmp(d, W.dirs[i]))
            return true;
    return false;
}

/* ---- io.h ----------------------------------------------------------------------------------- */

enum ml_path_kind ml_path_kind(const char *path)
{
    if (is_file(path))
        return ML_PATH_FILE;
    char p[NAME_MAX_];
    norm(path, p, sizeof(p));
    if (!p[0] || !strcmp(p, "/") || dir_holds(path, true))
        return ML_PATH_DIR;
    return ML_PATH_NONE;
}

int ml_in_open(const char *path, struct ml_diag *d)
{
    int f = find(path);
    if (f < 0) {
        ml_diag_set(d, ML_ERR_IO, "%s", strerror(ENOENT));
        return -1;
    }
    for (int h = 0; h < MAX_OPEN; h++) {
        if (!W.h[h].used) {
            W.h[h].used = true;
            W.h[h].file = (size_t)f;
            W.h[h].pos = 0;
            return h;
        }
    }
    ml_diag_set(d, ML_ERR_IO, "%s", strerror(EMFILE));
    return -1;
}

uint64_t ml_in_size(int h)
{
    return W.in[W.h[h].file].data.len;
}

long ml_in_read(int h, char *buf, size_t n, struct ml_diag *d)
{
    (void)d;
    const struct ml_buf *b = &W.in[W.h[h].file].data;
    size_t k = b->len - W.h[h].pos < n ? b->len - W.h[h].pos : n;
    memcpy(buf, b->buf + W.h[h].pos, k);
    W.h[h].pos += k;
    return (long)k;
}

long ml_in_map(int h, size_t n, const char **p)
{
    /* the file is in memory already: its next bytes are handed out where they lie */
    const struct ml_buf *b = &W.in[W.h[h].file].data;
    size_t k = b->len - W.h[h].pos < n ? b->len - W.h[h].pos : n;
    *p = b->buf + W.h[h].pos;
    W.h[h].pos += k;
    return (long)k;
}

void ml_in_unmap(void) {}

/* No second thread in the page: the caller does the work itself (io.h). */
bool ml_ahead_open(void)
{
    return false;
}

void ml_ahead_post(void (*fn)(void *), void *arg)
{
    fn(arg);
}

void ml_ahead_wait(void) {}

void ml_ahead_close(void) {}

void ml_in_close(int h)
{
    if (h >= 0 && h < MAX_OPEN)
        W.h[h].used = false;
}

const char *ml_env(const char *name)
{
    (void)name;
    return NULL;
}

bool ml_stdout_write(const char *p, size_t n)
{
    return ml_buf_add(&W.so, p, n) == ML_OK;
}

void ml_stdout_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)ml_buf_vaddf(&W.so, fmt, ap);
    va_end(ap);
}

void ml_stderr_vprintf(const char *fmt, va_list ap)
{
    (void)ml_buf_vaddf(&W.se, fmt, ap);
}

void ml_stderr_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)ml_buf_vaddf(&W.se, fmt, ap);
    va_end(ap);
}

void ml_stderr_write(const char *p, size_t n)
{
    (void)ml_buf_add(&W.se, p, n);
}

bool ml_stdin_is_tty(void)
{
    return false;
}

/* The page lays out its own text: no terminal, no width, no colour. */
bool ml_stdout_is_tty(void)
{
    return false;
}

unsigned ml_stdout_columns(void)
{
    return 0;
}

void ml_exe_path(char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
}

/* ---- writing files: the rules of src/io.c over memory ------------------------------------- */

/* The checks of a target (io.c's): never over a directory, an existing file only with force. A
 * replaced input stays the page's: the written file is an output. */
static bool target_ok(const char *path, bool force)
{
    if (ml_path_kind(path) == ML_PATH_DIR) {
        ml_errorf(_("%s: exists and is not a regular file; not replaced"), path);
        return false;
    }
    if (is_file(path) && !force) {
        ml_errorf(_("%s: exists; use --force to overwrite it"), path);
        return false;
    }
    return true;
}

/* The directory path goes into ("." for a bare name). */
static bool dir_there(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[NAME_MAX_];
    (void)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    return ml_path_kind(slash == path ? "/" : dir) == ML_PATH_DIR;
}

bool ml_out_open(struct ml_out *o, const char *path, bool force, const char *what)
{
    memset(o, 0, sizeof(*o));
    o->h = -1;
    o->force = force;
    o->what = what;
    if ((size_t)snprintf(o->path, sizeof(o->path), "%s", path) >= NAME_MAX_) {
        ml_errorf(_("%s: the name is too long"), path);
        return false;
    }
    if (!target_ok(path, force))
        return false;
    if (!dir_there(path)) {
        ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(ENOENT));
        return false;
    }
    for (int i = 0; i < MAX_STAGED; i++) {
        if (!W.st[i].used) {
            W.st[i].used = true;
            ml_buf_init(&W.st[i].data, 0);
            o->h = i;
            return true;
        }
    }
    ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(EMFILE));
    return false;
}

bool ml_out_write(struct ml_out *o, const char *p, size_t n)
{
    if (o->h < 0) {
        errno = EBADF;
        return false;
    }
    struct ml_buf *b = o->placed ? &W.out[W.st[o->h].out].data : &W.st[o->h].data;
    if (ml_buf_add(b, p, n) != ML_OK) {
        errno = ENOMEM;
        return false;
    }
    return true;
}

/* Room in out[] for every staged file that is not there yet. */
static bool room_for(struct ml_out *o, size_t n)
{
    size_t add = 0;
    for (size_t i = 0; i < n; i++)
        if (!o[i].placed && find_in(W.out, W.n_out, o[i].path) < 0)
            add++;
    if (W.n_out + add <= MAX_FILES)
        return true;
    ml_errorf(_("%s: cannot write the %s: %s"), o[0].path, o[0].what, strerror(ENOSPC));
    return false;
}

bool ml_out_place(struct ml_out *o)
{
    if (o->placed)
        return true;
    if (o->h < 0 || !target_ok(o->path, o->force) || !room_for(o, 1))
        return false;
    const struct ml_buf *b = &W.st[o->h].data;
    if (!put(W.out, &W.n_out, o->path, b->buf, b->len)) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, o->what, strerror(ENOMEM));
        return false;
    }
    W.st[o->h].out = (size_t)find_in(W.out, W.n_out, o->path);
    ml_buf_release(&W.st[o->h].data);
    o->placed = true;
    return true;
}

void ml_out_abort(struct ml_out *o)
{
    if (o->h >= 0 && W.st[o->h].used) {
        if (!o->placed)
            ml_buf_release(&W.st[o->h].data);
        W.st[o->h].used = false;
    }
    o->h = -1;
}

bool ml_out_commit(struct ml_out *o)
{
    bool ok = ml_out_place(o);
    ml_out_abort(o);
    return ok;
}

bool ml_write_file(const char *path, const struct ml_buf *b, bool force, const char *what)
{
    struct ml_out o;
    if (!ml_out_open(&o, path, force, what))
        return false;
    if (!ml_out_write(&o, b->buf, b->len)) {
        ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(errno));
        ml_out_abort(&o);
        return false;
    }
    return ml_out_commit(&o);
}

bool ml_can_write(const char *path, bool force)
{
    if (!target_ok(path, force))
        return false;
    if (!dir_there(path)) {
        const char *slash = strrchr(path, '/');
        ml_errorf("%.*s: %s", slash ? (int)(slash - path) : 1, slash ? path : ".", strerror(ENOENT));
        return false;
    }
    return true;
}

/* ---- a staged set of files ---------------------------------------------------------------- */

void ml_io_rmdir(const char *dir)
{
    for (size_t i = 0; i < W.n_dirs; i++)
        if (!strcmp(W.dirs[i], dir)) {
            memmove(W.dirs[i], W.dirs[i + 1], (W.n_dirs - i - 1) * sizeof(W.dirs[0]));
            W.n_dirs--;
            return;
        }
}

bool ml_staged_begin(struct ml_staged *s, const char *dir, bool force)
{
    s->n = 0;
    s->n_made = 0;
    enum ml_path_kind k = ml_path_kind(dir);
    if (k == ML_PATH_FILE) {
        ml_errorf(_("%s: not a directory"), dir);
        return false;
    }
    if (k == ML_PATH_DIR) {
        if (!force && dir_holds(dir, true)) {
            ml_errorf(_("%s: directory is not empty; use --force to write into it"), dir);
            return false;
        }
        return true;
    }
    /* mkdir -p: one entry holds the directory and, as its prefixes, its parents. */
    if (W.n_dirs >= MAX_DIRS || strlen(dir) >= NAME_MAX_) {
        ml_errorf("%s: %s", dir, _("too many directories to make"));
        return false;
    }
    norm(dir, W.dirs[W.n_dirs++], NAME_MAX_);
    (void)snprintf(s->made[s->n_made++], sizeof(s->made[0]), "%s", W.dirs[W.n_dirs - 1]);
    return true;
}

/* All or none: every target checked again and the room counted before the first is placed (a
 * placing in memory cannot fail after that). */
bool ml_staged_commit(struct ml_staged *s)
{
    bool ok = room_for(s->f, s->n);
    for (size_t i = 0; i < s->n && ok; i++)
        ok = target_ok(s->f[i].path, s->f[i].force);
    for (size_t i = 0; i < s->n && ok; i++)
        ok = ml_out_commit(&s->f[i]);
    if (!ok) {
        ml_staged_abort(s);
        return false;
    }
    s->n = 0;
    return true;
}

/* ---- paths -------------------------------------------------------------------------------- */

/* One file space without links: the same file is the same name. */
bool ml_same_file(const char *a, const char *b)
{
    char x[NAME_MAX_], y[NAME_MAX_];
    norm(a, x, sizeof(x));
    norm(b, y, sizeof(y));
    return is_file(a) && !strcmp(x, y);
}

/* Names are folded as written (no links to resolve); from a run directory below the top, a file
 * outside it is reached with "../". */
bool ml_path_from(const char *run_dir, const char *file, char *out, size_t n)
{
    char r[NAME_MAX_], f[NAME_MAX_];
    norm(run_dir ? run_dir : ".", r, sizeof(r));
    norm(file, f, sizeof(f));
    size_t rl = strlen(r);
    if (rl && under(r, f)) {
        (void)snprintf(out, n, "%s", f + rl + 1);
    } else if (!rl || f[0] == '/' || r[0] == '/' || strstr(r, "..")) {
        (void)snprintf(out, n, "%s", f); /* the top, or nothing better to say */
    } else {
        size_t len = 0, up = 1;
        for (const char *c = r; *c; c++)
            up += *c == '/';
        out[0] = '\0';
        for (size_t i = 0; i < up && len + 4 < n; i++)
            len += (size_t)snprintf(out + len, n - len, "../");
        (void)snprintf(out + len, n - len, "%s", f);
    }
    return true;
}
