/*
 * What each backend of io.h (src/io.c on a file system, web/io_web.c in memory) provides to the
 * code they share (src/staged.c). Not for the commands: they use io.h.
 */
#ifndef ML_IO_BACKEND_H
#define ML_IO_BACKEND_H

#include "io.h"

/* Remove the empty directory dir, made by ml_staged_begin; a failure is ignored (it is an undo). */
void ml_io_rmdir(const char *dir);

/* Remove the directories s made, innermost first (staged.c). */
void ml_staged_unmake_dirs(struct ml_staged *s);

#endif
