/*
 * io.h - the command line's doors to the outside: files, the environment and the terminal.
 *
 * The rest of src/ does its I/O through these functions and no other, so the same commands -
 * their options, files, messages and exit codes - run unchanged where memory stands behind the
 * doors: the web page's WebAssembly module links src/ with web/io_web.c instead of src/io.c
 * (docs/web.md). Messages that name a file keep the wording of the command that reads it.
 */
#ifndef ML_IO_H
#define ML_IO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/status.h"

/* What a path names. */
enum ml_path_kind { ML_PATH_NONE, ML_PATH_FILE, ML_PATH_DIR };
enum ml_path_kind ml_path_kind(const char *path);

/*
 * A file ("-" = standard input) read in chunks. ml_in_open returns a handle, or -1 with the
 * reason in d->msg (the system's message, or "is a directory"); the caller names the file.
 * ml_in_size: the size of a regular file, UINT64_MAX when not known. ml_in_read: bytes read,
 * 0 at the end, -1 with the reason in d->msg.
 */
int ml_in_open(const char *path, struct ml_diag *d);
uint64_t ml_in_size(int h);
long ml_in_read(int h, char *buf, size_t n, struct ml_diag *d);
void ml_in_close(int h);

/* An environment variable (NULL when unset). */
const char *ml_env(const char *name);

/* Standard output: the bytes, flushed (false on an error, errno set); formatted text. */
bool ml_stdout_write(const char *p, size_t n);
void ml_stdout_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Standard error: formatted text. */
void ml_stderr_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void ml_stderr_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Write b to path: to a temporary name in the same directory, then renamed over path, so that
 * path holds the old bytes or the new ones, never a part. An existing path is not overwritten
 * unless force. Reports the problem and returns false.
 */
bool ml_write_file(const char *path, const struct ml_buf *b, bool force);

/* Whether ml_write_file(path, ..., force) may go ahead, asked before a command prints anything:
 * path does not exist (or force), and its directory does. Reports the problem and returns false. */
bool ml_can_write(const char *path, bool force);

/* A directory to write files into: made when missing; an existing one must be empty unless
 * force. Reports the problem and returns false. */
bool ml_make_dir(const char *dir, bool force);

#endif /* ML_IO_H */
