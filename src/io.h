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
#include "memledger/run.h"
#include "memledger/status.h"

/* What a path names (enum ml_path_kind: memledger/run.h). */
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

/*
 * A regular file's next bytes in place, with no copy: ml_in_map maps up to n bytes from the
 * handle's position (which moves past them) and sets *p to them; it returns their count, or 0 when
 * nothing was mapped: the handle is not a regular file (a pipe, a terminal), is at the end the file
 * had when looked at, or cannot be mapped. The caller then reads the rest with ml_in_read (which
 * also picks up what a growing file appended). The bytes stay valid until the second ml_in_map
 * after it, or ml_in_unmap, which unmaps every window: so the memory held is two windows (the one
 * read and the next, which another thread may read ahead), whatever the file's size. A file cut
 * shorter while mapped reads as NULs from the cut to the window's end, and ends there (no SIGBUS,
 * in whichever thread reads it).
 */
long ml_in_map(int h, size_t n, const char **p);
void ml_in_unmap(void);

/*
 * A helper thread that runs one job at a time beside the caller (src/ahead.c): ml_ahead_open makes
 * it, when the machine has more than one CPU (false: none, and the caller does the work itself);
 * ml_ahead_post starts fn(arg) on it, one job at a time; ml_ahead_wait returns when the job has
 * ended (what it wrote is then the caller's to read); ml_ahead_close ends the thread. The web
 * page's build has none (web/io_web.c).
 */
bool ml_ahead_open(void);
void ml_ahead_post(void (*fn)(void *), void *arg);
void ml_ahead_wait(void);
void ml_ahead_close(void);

/* An environment variable (NULL when unset). */
const char *ml_env(const char *name);

/* Standard output: the bytes, flushed (false on an error, errno set); formatted text. */
bool ml_stdout_write(const char *p, size_t n);
void ml_stdout_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Standard error: formatted text. */
void ml_stderr_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void ml_stderr_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Standard error: bytes as they are (a child's output passed through), unbuffered. */
void ml_stderr_write(const char *p, size_t n);

/* ---- writing files (docs/files.md) ---------------------------------------------------------- */

/*
 * Every file src/ writes goes through these. The bytes go to a temporary file made beside the
 * target (same directory, so the same filesystem), then renamed onto its name: a reader never
 * sees half a file and a failure leaves the old file, or none. The final name is never followed:
 * a symbolic link there is refused, with or without force, and so is anything that is not a
 * regular file. Without force an existing file is refused too (and a file that appears meanwhile
 * is not replaced: the new one is linked into place). A new file gets the user's umask (0666 &
 * ~umask); a replaced one keeps its mode. Errors are printed (one line, naming the file; what
 * names the kind of output: "timeline", "plot", "picture", "file"); the functions return false.
 * (web/io_web.c keeps the same rules over its in-memory files, which have no links or modes.)
 */
struct ml_out {
    char path[4096];   /* the final name */
    char tmp[4096];    /* the temporary file beside it */
    char backup[4096]; /* in a staged set: the replaced file, kept aside until all are placed */
    const char *what;
    int h; /* the temporary file, open for writing until closed; -1 when none */
    bool force, placed;
};

/* Check path and make its temporary file (open for writing). */
bool ml_out_open(struct ml_out *o, const char *path, bool force, const char *what);
/* Append p[0..n) to the file; false with errno set and nothing printed (the caller says what the
 * failure means: a timeline goes on without its file). */
bool ml_out_write(struct ml_out *o, const char *p, size_t n);
/* Put the temporary file in place now; it stays open (a file written as it grows). */
bool ml_out_place(struct ml_out *o);
/* Flush to disk, close, and put in place (if not yet). */
bool ml_out_commit(struct ml_out *o);
/* Close and remove the temporary file (a placed file stays). */
void ml_out_abort(struct ml_out *o);

/* The whole buffer into path through ml_out. */
bool ml_write_file(const char *path, const struct ml_buf *b, bool force, const char *what);

/* Whether ml_write_file(path, ..., force) may go ahead, asked before a command prints anything:
 * the target passes ml_out_open's checks, and its directory exists. Reports the problem and
 * returns false. */
bool ml_can_write(const char *path, bool force);

/*
 * A set of files written all or none, into one directory (fit --write DIR):
 * ml_staged_begin makes DIR and its missing parents, or checks the existing one (a directory,
 * empty unless force); ml_staged_add checks a target as ml_out_open does and writes its bytes to
 * its temporary file; ml_staged_commit puts every file in place - each replaced file (force) kept
 * aside until all are placed, and put back when one fails - or none. A failed ml_staged_add or
 * ml_staged_commit, and ml_staged_abort, remove every temporary file and the directories
 * ml_staged_begin made. Errors are printed; false. Large: keep it static.
 */
#define ML_STAGED_FILES 4
#define ML_STAGED_DIRS  16
struct ml_staged {
    struct ml_out f[ML_STAGED_FILES];
    size_t n;
    char made[ML_STAGED_DIRS][4096]; /* the directories ml_staged_begin made, outermost first */
    int n_made;
};
bool ml_staged_begin(struct ml_staged *s, const char *dir, bool force);
bool ml_staged_add(struct ml_staged *s, const char *path, const struct ml_buf *b, bool force, const char *what);
bool ml_staged_commit(struct ml_staged *s);
void ml_staged_abort(struct ml_staged *s);

/* ---- paths ---------------------------------------------------------------------------------- */

/* Do a and b name the same existing file (the same inode, through links too)? */
bool ml_same_file(const char *a, const char *b);

/* file as a program started in run_dir (NULL = the working directory) names it: relative to
 * run_dir when it lies under it, else absolute (symbolic links in the directories resolved).
 * file's directory must exist, the file need not. Prints the error and returns false. */
bool ml_path_from(const char *run_dir, const char *file, char *out, size_t n);

/* The running program's own file ("" when the system does not say). */
void ml_exe_path(char *buf, size_t n);

/* Whether standard input is a terminal (a command that reads it says so rather than wait). */
bool ml_stdin_is_tty(void);

/* Whether standard output is a terminal, and its width in columns (0 when not one, or unknown). */
bool ml_stdout_is_tty(void);
unsigned ml_stdout_columns(void);

#endif /* ML_IO_H */
