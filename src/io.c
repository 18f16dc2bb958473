/*
 * io.c - the command line's files, environment and terminal on a POSIX system (see io.h).
 */
/* realpath(3) is XSI, beyond the _POSIX_C_SOURCE the build defines. */
#define _XOPEN_SOURCE 700

#include "io.h"
#include "io_backend.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "i18n.h"

enum ml_path_kind ml_path_kind(const char *path)
{
    struct stat s;
    if (stat(path, &s) != 0)
        return ML_PATH_NONE;
    return S_ISDIR(s.st_mode) ? ML_PATH_DIR : ML_PATH_FILE;
}

int ml_in_open(const char *path, struct ml_diag *d)
{
    bool in = !strcmp(path, "-");
    int fd = in ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ml_diag_set(d, ML_ERR_IO, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (!in)
            close(fd);
        ml_diag_set(d, ML_ERR_IO, "%s", _("is a directory"));
        return -1;
    }
    return fd;
}

uint64_t ml_in_size(int h)
{
    struct stat st;
    if (fstat(h, &st) == 0 && S_ISREG(st.st_mode))
        return (uint64_t)st.st_size;
    return UINT64_MAX;
}

long ml_in_read(int h, char *buf, size_t n, struct ml_diag *d)
{
    for (;;) {
        ssize_t r = read(h, buf, n);
        if (r >= 0)
            return (long)r;
        if (errno != EINTR) {
            ml_diag_set(d, ML_ERR_IO, "%s", strerror(errno));
            return -1;
        }
    }
}

void ml_in_close(int h)
{
    if (h != STDIN_FILENO)
        close(h);
}

const char *ml_env(const char *name)
{
    return getenv(name);
}

bool ml_stdout_write(const char *p, size_t n)
{
    return (!n || fwrite(p, 1, n, stdout) == n) && fflush(stdout) == 0;
}

void ml_stdout_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

void ml_stderr_vprintf(const char *fmt, va_list ap)
{
    vfprintf(stderr, fmt, ap);
}

void ml_stderr_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void ml_exe_path(char *buf, size_t n)
{
    ssize_t len = n ? readlink("/proc/self/exe", buf, n - 1) : 0;
    if (n)
        buf[len > 0 ? len : 0] = '\0';
}

/* ---- writing files (io.h, docs/files.md) ---------------------------------------------------- */

/* write(2) all of p[0..n) to fd, retrying on EINTR; false on an error (errno set). */
static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void ml_stderr_write(const char *p, size_t n)
{
    (void)write_all(STDERR_FILENO, p, n);
}

bool ml_stdin_is_tty(void)
{
    return isatty(STDIN_FILENO) == 1;
}

bool ml_stdout_is_tty(void)
{
    return isatty(STDOUT_FILENO) == 1;
}

unsigned ml_stdout_columns(void)
{
    struct winsize ws;
    return ml_stdout_is_tty() && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

static mode_t user_mode(void)
{
    mode_t u = umask(0);
    (void)umask(u);
    return (mode_t)0666 & ~u;
}

/* Refuse what the final name must not be; *mode gets the replaced file's mode or the umask's. */
static bool target_ok(const char *path, bool force, const char *what, mode_t *mode)
{
    struct stat st;
    *mode = user_mode();
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return true;
        ml_errorf(_("%s: cannot write the %s: %s"), path, what, strerror(errno));
        return false;
    }
    if (S_ISLNK(st.st_mode)) {
        ml_errorf(
            _("%s: is a symbolic link; memledger never writes through one (name the file itself, or remove the link)"),
            path);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        ml_errorf(_("%s: exists and is not a regular file; not replaced"), path);
        return false;
    }
    if (!force) {
        ml_errorf(_("%s: exists; use --force to overwrite it"), path);
        return false;
    }
    *mode = st.st_mode & 07777;
    return true;
}

bool ml_out_open(struct ml_out *o, const char *path, bool force, const char *what)
{
    memset(o, 0, sizeof(*o));
    o->h = -1;
    o->force = force;
    o->what = what;
    if ((size_t)snprintf(o->path, sizeof(o->path), "%s", path) >= sizeof(o->path) - 32) {
        ml_errorf(_("%s: the name is too long"), path);
        return false;
    }
    mode_t mode;
    if (!target_ok(o->path, force, what, &mode))
        return false;
    const char *base = ml_path_base(o->path);
    (void)snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.memledger-XXXXXX", (int)(base - o->path), o->path, base);
    o->h = mkstemp(o->tmp);
    if (o->h < 0) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, what, strerror(errno));
        o->tmp[0] = '\0';
        return false;
    }
    (void)fcntl(o->h, F_SETFD, FD_CLOEXEC);
    if (fchmod(o->h, mode) != 0) {
        ml_errorf(_("%s: cannot write the %s: %s"), o->path, what, strerror(errno));
        ml_out_abort(o);
        return false;
    }
    return true;
}

bool ml_out_write(struct ml_out *o, const char *p, size_t n)
{
    if (o->h < 0) {
        errno = EBADF;
        return false;
    }
    return write_all(o->h, p, n);
}

bool ml_out_place(struct ml_out *o)
{
    if (o->placed)
        return true;
    mode_t mode;
    if (!target_ok(o->path, o->force, o->what, &mode)) /* what is there now (it may have changed) */
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
    if (o->h < 0)
        return true;
    int e = 0;
    if (fsync(o->h) != 0 && errno != EINVAL && errno != EROFS)
        e = errno;
    if (close(o->h) != 0 && !e)
        e = errno;
    o->h = -1;
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
    if (o->h >= 0)
        close(o->h);
    o->h = -1;
    if (!o->placed && o->tmp[0])
        (void)unlink(o->tmp);
    o->tmp[0] = '\0';
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
    mode_t mode;
    if (!target_ok(path, force, _("file"), &mode))
        return false;
    const char *slash = strrchr(path, '/');
    char dir[4096];
    (void)snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path)
        (void)snprintf(dir, sizeof(dir), "/");
    if (ml_path_kind(dir) != ML_PATH_DIR) {
        ml_errorf("%s: %s", dir, strerror(ENOENT));
        return false;
    }
    return true;
}

/* ---- a staged set of files (fit --write) ---------------------------------------------------- */

static bool dir_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return true;
    struct dirent *e;
    bool empty = true;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            empty = false;
    closedir(d);
    return empty;
}

void ml_io_rmdir(const char *dir)
{
    (void)rmdir(dir);
}

/* mkdir -p dir, the directories made listed in s->made, removed again on failure. */
static bool make_dirs(struct ml_staged *s, const char *dir)
{
    char p[4096];
    if ((size_t)snprintf(p, sizeof(p), "%s", dir) >= sizeof(p)) {
        ml_errorf(_("%s: the name is too long"), dir);
        return false;
    }
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c)
            continue;
        char keep = *c;
        *c = '\0';
        struct stat st;
        if (stat(p, &st) != 0) {
            if (s->n_made >= ML_STAGED_DIRS || mkdir(p, 0777) != 0) {
                ml_errorf("%s: %s", p,
                          s->n_made >= ML_STAGED_DIRS ? _("too many directories to make") : strerror(errno));
                ml_staged_unmake_dirs(s);
                return false;
            }
            (void)snprintf(s->made[s->n_made++], sizeof(s->made[0]), "%s", p);
        }
        *c = keep;
        if (!keep)
            return true;
    }
}

bool ml_staged_begin(struct ml_staged *s, const char *dir, bool force)
{
    s->n = 0;
    s->n_made = 0;
    struct stat st;
    if (stat(dir, &st) != 0)
        return make_dirs(s, dir);
    if (!S_ISDIR(st.st_mode)) {
        ml_errorf(_("%s: not a directory"), dir);
        return false;
    }
    if (!force && !dir_empty(dir)) {
        ml_errorf(_("%s: directory is not empty; use --force to write into it"), dir);
        return false;
    }
    return true;
}

/* Keep the file at o->path aside (a hard link, else a rename) before it is replaced. */
static bool keep_old(struct ml_out *o)
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

bool ml_staged_commit(struct ml_staged *s)
{
    struct ml_out *o = s->f;
    size_t i, n = s->n;
    bool ok = true;
    for (i = 0; i < n && ok; i++)
        ok = out_close(&o[i]);
    for (i = 0; i < n && ok; i++)
        ok = keep_old(&o[i]) && ml_out_place(&o[i]);
    if (ok) {
        for (i = 0; i < n; i++)
            if (o[i].backup[0])
                (void)unlink(o[i].backup);
        s->n = 0;
        return true;
    }
    /* Undo: every file placed goes, every file replaced comes back. */
    for (size_t j = 0; j < n; j++) {
        if (o[j].placed && !o[j].backup[0])
            (void)unlink(o[j].path);
        if (o[j].backup[0] && rename(o[j].backup, o[j].path) != 0)
            ml_errorf(_("%s: could not be put back (it is in %s): %s"), o[j].path, o[j].backup, strerror(errno));
        o[j].placed = false;
    }
    ml_staged_abort(s);
    return false;
}

/* ---- paths ---------------------------------------------------------------------------------- */

bool ml_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool ml_path_from(const char *run_dir, const char *file, char *out, size_t n)
{
    char run[PATH_MAX], dir[PATH_MAX], fdir[PATH_MAX];
    const char *base = ml_path_base(file);
    (void)snprintf(fdir, sizeof(fdir), "%.*s", base == file ? 1 : (int)(base - file), base == file ? "." : file);
    if (!realpath(run_dir ? run_dir : ".", run) || !realpath(fdir, dir)) {
        ml_errorf("%s: %s", file, strerror(errno));
        return false;
    }
    size_t rl = strlen(run);
    if (!strcmp(dir, run))
        (void)snprintf(out, n, "%s", base);
    else if (!strncmp(dir, run, rl) && (dir[rl] == '/' || rl == 1))
        (void)snprintf(out, n, "%s/%s", dir + rl + (rl == 1 ? 0 : 1), base);
    else
        (void)snprintf(out, n, "%s/%s", dir, base);
    return true;
}
