/*
 * io_web.h - the memory behind src/io.h in the web page's module (web/io_web.c): the files the
 * page was given, and what a command prints and writes. One command runs at a time.
 */
#ifndef ML_IO_WEB_H
#define ML_IO_WEB_H

#include <stdbool.h>
#include <stddef.h>

#include "memledger/buf.h"

/* Forget every input, output and printed byte. */
void mlw_io_reset(void);

/* Forget what the last command printed and wrote; keep the inputs. */
void mlw_io_clear_output(void);

/* A file the commands may read, by the name the options use. False when there is no room. */
bool mlw_io_add_input(const char *name, const char *data, size_t len);

/* What the last command printed. */
const struct ml_buf *mlw_io_stdout(void);
const struct ml_buf *mlw_io_stderr(void);

/* The files the last command wrote, in order. */
size_t mlw_io_n_outputs(void);
const char *mlw_io_output_name(size_t i);
const struct ml_buf *mlw_io_output(size_t i);

#endif /* ML_IO_WEB_H */
