/*
 * io_web.c - src/io.h over memory, for the web page's module (docs/web.md): the files are the
 * page's (by name), standard output and error and the written files are buffers the module
 * hands back, the environment is empty. No file system, no network.
 */
#include "io.h"
#include "io_web.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 16
#define MAX_OPEN  8

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

static int find(const char *path)
{
    if (!strncmp(path, "./", 2))
        path += 2;
    for (size_t i = 0; i < W.n_in; i++)
        if (!strcmp(W.in[i].name, path))
            return (int)i;
    return -1;
}

/* ---- io.h ----------------------------------------------------------------------------------- */

enum ml_path_kind ml_path_kind(const char *path)
{
    if (find(path) >= 0)
        return ML_PATH_FILE;
    size_t n = strlen(path);
    if (!strcmp(path, ".") || !strcmp(path, "/"))
        return ML_PATH_DIR;
    for (size_t i = 0; i < W.n_in; i++)
        if (!strncmp(W.in[i].name, path, n) && W.in[i].name[n] == '/')
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

/* Each run starts with no written files, so there is nothing to overwrite or refuse. */
bool ml_write_file(const char *path, const struct ml_buf *b, bool force)
{
    (void)force;
    return put(W.out, &W.n_out, path, b->buf, b->len);
}

bool ml_can_write(const char *path, bool force)
{
    (void)path;
    (void)force;
    return true;
}

bool ml_make_dir(const char *dir, bool force)
{
    (void)dir;
    (void)force;
    return true;
}
