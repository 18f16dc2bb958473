/*
 * table.c - plain-text table writer (see render.h).
 */
#include "memledger/render.h"

#include <stdlib.h>
#include <string.h>

enum { ROW_CELLS = 0, ROW_SECTION = 1, ROW_RULE = 2 };

void ml_table_init(struct ml_table *t, size_t n_cols)
{
    memset(t, 0, sizeof(*t));
    t->n_cols = n_cols > ML_TABLE_MAX_COLS ? ML_TABLE_MAX_COLS : (n_cols ? n_cols : 1);
    ml_buf_init(&t->text, 0);
    t->status = ML_OK;
}

void ml_table_release(struct ml_table *t)
{
    ml_buf_release(&t->text);
    free(t->cell_off);
    free(t->row_kind);
    t->cell_off = NULL;
    t->row_kind = NULL;
    t->n_cells = t->n_rows = t->cap = t->row_cap = 0;
}

size_t ml_utf8_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static bool reserve(struct ml_table *t, size_t cells, size_t rows)
{
    if (t->status != ML_OK)
        return false;
    if (t->n_cells + cells > ML_TABLE_MAX_CELLS) {
        t->status = ML_ERR_TOOBIG;
        return false;
    }
    if (t->n_cells + cells > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        while (nc < t->n_cells + cells)
            nc *= 2;
        size_t *p = realloc(t->cell_off, nc * sizeof(*p));
        if (!p) {
            t->status = ML_ERR_NOMEM;
            return false;
        }
        t->cell_off = p;
        t->cap = nc;
    }
    if (t->n_rows + rows > t->row_cap) {
        size_t nr = t->row_cap ? t->row_cap * 2 : 32;
        unsigned char *p = realloc(t->row_kind, nr);
        if (!p) {
            t->status = ML_ERR_NOMEM;
            return false;
        }
        t->row_kind = p;
        t->row_cap = nr;
    }
    return true;
}

static void add_cell(struct ml_table *t, const char *s)
{
    t->cell_off[t->n_cells++] = t->text.len;
    enum ml_status st = ml_buf_add(&t->text, s ? s : "", strlen(s ? s : "") + 1);
    if (st != ML_OK && t->status == ML_OK)
        t->status = st;
}

void ml_table_row(struct ml_table *t, const char *const *cells)
{
    if (!reserve(t, t->n_cols, 1))
        return;
    for (size_t i = 0; i < t->n_cols; i++)
        add_cell(t, cells[i]);
    t->row_kind[t->n_rows++] = ROW_CELLS;
}

void ml_table_section(struct ml_table *t, const char *text)
{
    if (!reserve(t, 1, 1))
        return;
    add_cell(t, text);
    t->row_kind[t->n_rows++] = ROW_SECTION;
}

void ml_table_rule(struct ml_table *t)
{
    if (!reserve(t, 0, 1))
        return;
    t->row_kind[t->n_rows++] = ROW_RULE;
}

enum ml_status ml_table_render(const struct ml_table *t, struct ml_buf *out, size_t indent)
{
    if (t->status != ML_OK)
        return t->status;
    size_t w[ML_TABLE_MAX_COLS] = {0};
    size_t c = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (t->row_kind[r] == ROW_CELLS) {
            for (size_t i = 0; i < t->n_cols; i++, c++) {
                size_t cw = ml_utf8_width(t->text.buf + t->cell_off[c]);
                if (cw > w[i])
                    w[i] = cw;
            }
        } else if (t->row_kind[r] == ROW_SECTION) {
            c++;
        }
    }
    size_t total = 0;
    for (size_t i = 0; i < t->n_cols; i++)
        total += w[i] + (i ? 2 : 0);
    enum ml_status st = ML_OK;
    c = 0;
    for (size_t r = 0; r < t->n_rows && st == ML_OK; r++) {
        st = ml_buf_addn(out, ' ', indent);
        if (t->row_kind[r] == ROW_RULE) {
            for (size_t k = 0; k < total && st == ML_OK; k++)
                st = ml_buf_adds(out, "-");
        } else if (t->row_kind[r] == ROW_SECTION) {
            st = ml_buf_adds(out, t->text.buf + t->cell_off[c++]);
        } else {
            /* Trailing spaces are never written: the last non-empty cell ends the line. */
            size_t last = 0;
            for (size_t i = 0; i < t->n_cols; i++)
                if (t->text.buf[t->cell_off[c + i]] || t->right[i])
                    last = i;
            for (size_t i = 0; i <= last && st == ML_OK; i++) {
                const char *s = t->text.buf + t->cell_off[c + i];
                size_t pad = w[i] - ml_utf8_width(s);
                if (i)
                    st = ml_buf_adds(out, "  ");
                if (t->right[i])
                    st = ml_buf_addn(out, ' ', pad);
                if (st == ML_OK)
                    st = ml_buf_adds(out, s);
                if (!t->right[i] && i < last && st == ML_OK)
                    st = ml_buf_addn(out, ' ', pad);
            }
            c += t->n_cols;
        }
        if (st == ML_OK)
            st = ml_buf_addc(out, '\n');
    }
    return st;
}
