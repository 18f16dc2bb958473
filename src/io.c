/*
 * io.c - the command line's files, environment and terminal on a POSIX system (see io.h).
 */
#include "io.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static bool exists_refused(const char *path, bool force)
{
    struct stat st;
    if (!force && lstat(path, &st) == 0) {
        ml_errorf(_("%s: exists; not overwritten (use --force)"), path);
        return true;
    }
    return false;
}

bool ml_can_write(const char *path, bool force)
{
    if (exists_refused(path, force))
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

bool ml_write_file(const char *path, const struct ml_buf *b, bool force)
{
    if (exists_refused(path, force))
        return false;
    /* The temporary file beside the target ("dir/.name.tmp.PID"), so that rename is atomic. */
    char tmp[4200];
    const char *slash = strrchr(path, '/');
    if (slash)
        (void)snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp.%ld", (int)(slash - path), path, slash + 1, (long)getpid());
    else
        (void)snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        ml_errorf("%s: %s", tmp, strerror(errno));
        return false;
    }
    if (!ml_write_all(fd, b->buf, b->len)) {
        ml_errorf("%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return false;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        ml_errorf("%s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

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

bool ml_make_dir(const char *dir, bool force)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (mkdir(dir, 0755) != 0) {
            ml_errorf("%s: %s", dir, strerror(errno));
            return false;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        ml_errorf(_("%s: not a directory"), dir);
        return false;
    } else if (!force && !dir_empty(dir)) {
        ml_errorf(_("%s: directory is not empty; use --force to write into it"), dir);
        return false;
    }
    return true;
}
