/*
 * term.h - where the text goes: the layout of a text report for standard output (the terminal's
 * width, COLUMNS, --wide, NO_COLOR). CLI code: it reads the environment and the terminal.
 */
#ifndef ML_TERM_H
#define ML_TERM_H

#include <stdbool.h>

#include "memledger/render.h"

/* The getopt_long id of --wide in every command that takes it (above the shared ids). */
#define ML_OPT_WIDE 1000

/*
 * The layout of standard output (docs/cli/memledger.md, Environment):
 *   width: 0 with --wide; else COLUMNS when it is a number (at least ML_TERM_MIN_WIDTH); else the
 *          terminal's width when standard output is one; else 0, so piped output keeps the
 *          natural layout byte for byte.
 *   colour: standard output is a terminal, NO_COLOR is unset or empty, and TERM is not "dumb".
 */
void ml_term_layout(bool wide, struct ml_layout *lay);

/* COLUMNS as a width, 0 when unset or not a number (as coreutils reads it). */
size_t ml_term_columns_env(void);

/* Narrower widths are raised to this one. */
#define ML_TERM_MIN_WIDTH 40

#endif /* ML_TERM_H */
