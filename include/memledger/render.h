/*
 * render.h - plain-text tables for the terminal (our own writer; JSON is in json.h).
 *
 * A table is a list of rows of cells; columns are sized to their widest cell (counted in
 * UTF-8 code points) and separated by two spaces. A "section" row is a single text line
 * (a group heading) that does not take part in column sizing. Output is deterministic.
 */
#ifndef ML_RENDER_H
#define ML_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "memledger/buf.h"

#define ML_TABLE_MAX_COLS 8
#define ML_TABLE_MAX_CELLS 65536

struct ml_table {
    size_t n_cols;                       /* columns */
    bool right[ML_TABLE_MAX_COLS];       /* right-align this column (numbers) */
    struct ml_buf text;                  /* all cell strings, NUL-separated */
    size_t *cell_off;                    /* offset of each cell in text; owned */
    unsigned char *row_kind;             /* per row: 0 cells, 1 section, 2 rule; owned */
    size_t n_cells;                      /* cells used (rows x n_cols for cell rows) */
    size_t n_rows;                       /* rows */
    size_t cap;                          /* allocated entries of cell_off */
    size_t row_cap;                      /* allocated entries of row_kind */
    enum ml_status status;               /* first failure */
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

/* Number of UTF-8 code points in s. */
size_t ml_utf8_width(const char *s);

#endif /* ML_RENDER_H */
