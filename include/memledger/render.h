/*
 * render.h - plain text for the terminal: tables, display widths, folding (our own writer, in
 * lib/util: table.c, text.c; JSON is in json.h). The renderers that write with it are declared in
 * report.h.
 *
 * A table is a list of rows of cells; columns are sized to their widest cell (in display
 * columns, ml_text_width) and separated by two spaces. A "section" row is a single text line
 * (a group heading) that does not take part in column sizing. With a width set, a table wider
 * than it wraps its flex column in place or moves it to a line of its own under each row, and
 * wraps its wrap columns; without one (width 0: a pipe, --wide) the layout is the natural one,
 * byte for byte. Output is deterministic.
 */
#ifndef ML_RENDER_H
#define ML_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "memledger/buf.h"

#define ML_TABLE_MAX_COLS  8
#define ML_TABLE_MAX_CELLS 65536
/* A flex column narrower than this moves under its row instead of wrapping in place. */
#define ML_TABLE_MIN_FLEX 30
/* The indent, past the table's own, of a flex cell moved under its row. */
#define ML_TABLE_BELOW_INDENT 4

/* How a text report is laid out where it goes. src/ fills it from the terminal (TIOCGWINSZ),
 * COLUMNS, --wide and NO_COLOR; renderers only read it, and NULL means the zero layout. */
struct ml_layout {
    size_t width; /* display columns a line may take; 0: no limit (the natural layout) */
    bool colour;  /* ANSI SGR colour on the verdict and the peak phase */
};

struct ml_table {
    size_t n_cols;                 /* columns */
    bool right[ML_TABLE_MAX_COLS]; /* right-align this column (numbers) */
    bool wrap[ML_TABLE_MAX_COLS];  /* may wrap at spaces and commas when the table is too wide */
    int flex;                      /* the long column (a rule, a formula) that gives way first:
                                      wrapped in place, or moved under its row when it would get
                                      fewer than ML_TABLE_MIN_FLEX columns; -1 (the default): none */
    size_t width;                  /* display columns the table may take, indent included; 0: no limit */
    struct ml_buf text;            /* all cell strings, NUL-separated */
    size_t *cell_off;              /* offset of each cell in text; owned */
    unsigned char *row_kind;       /* per row: 0 cells, 1 section, 2 rule; owned */
    size_t n_cells;                /* cells used (rows x n_cols for cell rows) */
    size_t n_rows;                 /* rows */
    size_t cap;                    /* allocated entries of cell_off */
    size_t row_cap;                /* allocated entries of row_kind */
    enum ml_status status;         /* first failure */
};

/* Set up a table of n_cols columns (<= ML_TABLE_MAX_COLS); allocates nothing yet. */
void ml_table_init(struct ml_table *t, size_t n_cols);

/* Free everything; the caller owns t itself. */
void ml_table_release(struct ml_table *t);

/* Append a row of n_cols cells (NULL cells print empty). */
void ml_table_row(struct ml_table *t, const char *const *cells);

/* Append a section heading line. */
void ml_table_section(struct ml_table *t, const char *text);

/* Append a horizontal rule as wide as the table. */
void ml_table_rule(struct ml_table *t);

/* Render into out with the given left indent; returns the first failure, if any. */
enum ml_status ml_table_render(const struct ml_table *t, struct ml_buf *out, size_t indent);

/* ---- display widths and folding (lib/util/text.c) ---------------------------------------- */

/* Terminal columns of one code point (wcwidth semantics: 2 for East Asian Wide and Fullwidth, 0
 * for combining marks, zero-width and control characters, 1 otherwise). */
size_t ml_char_width(unsigned cp);

/* Terminal columns of UTF-8 text; ANSI SGR sequences take none, an invalid byte one. */
size_t ml_text_width(const char *s);
size_t ml_text_width_n(const char *s, size_t n);

/* The first line of s[0..n) that fits width columns: its length in bytes is returned, and *next
 * is where the rest starts (spaces at the break skipped). Breaks at the last space that fits
 * (not before a separator such as "·" or "->" when another space will do) or after a comma,
 * else after a slash (a path); a word wider than the line is cut at the width. */
size_t ml_text_break(const char *s, size_t n, size_t width, size_t *next);

/* Fold every line of b from byte offset from on that is wider than width columns: broken at
 * spaces (ml_text_break), continuations indented past the line's list marker or label ("- ",
 * "1. ", "note: ", a first word and two spaces) or two columns past its own indent. Lines that
 * fit are kept byte for byte; width 0 changes nothing. */
enum ml_status ml_text_fold(struct ml_buf *b, size_t from, size_t width);

/* ANSI SGR colours of a layout's colour flag. */
#define ML_SGR_RESET  "\033[0m"
#define ML_SGR_BOLD   "\033[1m"
#define ML_SGR_GREEN  "\033[32m"
#define ML_SGR_YELLOW "\033[33m"
#define ML_SGR_RED    "\033[31m"

/* Append s in colour sgr when the layout asks for colour, plain otherwise. */
enum ml_status ml_buf_add_sgr(struct ml_buf *b, const struct ml_layout *lay, const char *sgr, const char *s);

#endif /* ML_RENDER_H */
