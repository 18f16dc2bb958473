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
    t->flex = -1;
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

/* The natural width of every column. */
static void natural_widths(const struct ml_table *t, size_t *w)
{
    size_t c = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (t->row_kind[r] == ROW_CELLS) {
            for (size_t i = 0; i < t->n_cols; i++, c++) {
                size_t cw = ml_text_width(t->text.buf + t->cell_off[c]);
                if (cw > w[i])
                    w[i] = cw;
            }
        } else if (t->row_kind[r] == ROW_SECTION) {
            c++;
        }
    }
}

/* Columns laid out (skip: a column not in the row, or n_cols) with their separators. */
static size_t total_width(const struct ml_table *t, const size_t *w, size_t skip)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < t->n_cols; i++)
        if (i != skip)
            total += w[i] + (k++ ? 2 : 0);
    return total;
}

/* The widest piece of column i that cannot be broken (at spaces and commas). */
static size_t min_width(const struct ml_table *t, size_t col)
{
    size_t m = 1, c = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (t->row_kind[r] == ROW_SECTION)
            c++;
        if (t->row_kind[r] != ROW_CELLS)
            continue;
        const char *s = t->text.buf + t->cell_off[c + col];
        for (size_t a = 0, b; s[a]; a = b) {
            for (b = a; s[b] && s[b] != ' ' && (b == a || s[b - 1] != ','); b++)
                ;
            size_t pw = ml_text_width_n(s + a, b - a);
            if (pw > m)
                m = pw;
            while (s[b] == ' ')
                b++;
        }
        c += t->n_cols;
    }
    return m;
}

/* Column widths for t->width: the flex column wrapped or moved under the row (*below), then the
 * wrap columns narrowed, widest first, down to their longest unbreakable piece. */
static void fit_widths(const struct ml_table *t, size_t indent, size_t *w, size_t *below)
{
    size_t avail = t->width > indent ? t->width - indent : 1;
    *below = t->n_cols;
    if (t->flex >= 0 && (size_t)t->flex < t->n_cols) {
        size_t f = (size_t)t->flex, rest = total_width(t, w, f) + 2;
        if (avail > rest && avail - rest >= ML_TABLE_MIN_FLEX)
            w[f] = avail - rest;
        else
            *below = f;
    }
    size_t min[ML_TABLE_MAX_COLS];
    for (size_t i = 0; i < t->n_cols; i++)
        min[i] = t->wrap[i] && i != *below ? min_width(t, i) : w[i];
    for (size_t total = total_width(t, w, *below); total > avail;) {
        size_t best = t->n_cols;
        for (size_t i = 0; i < t->n_cols; i++)
            if (i != *below && w[i] > min[i] && (best == t->n_cols || w[i] > w[best]))
                best = i;
        if (best == t->n_cols)
            break;
        size_t cut = total - avail < w[best] - min[best] ? total - avail : w[best] - min[best];
        w[best] -= cut;
        total -= cut;
    }
}

/* One line of a row's cells, the next piece of each (pos[] is each cell's progress, all 0 on the
 * row's first line); *more says whether a cell has more. */
static enum ml_status cells_line(const struct ml_table *t, size_t c, const size_t *w, size_t below, size_t *pos,
                                 struct ml_buf *out, size_t indent, bool *more)
{
    bool first = true;
    for (size_t i = 0; i < t->n_cols; i++)
        first &= !pos[i];
    const char *piece[ML_TABLE_MAX_COLS];
    size_t plen[ML_TABLE_MAX_COLS], last = 0;
    bool any = false;
    *more = false;
    for (size_t i = 0; i < t->n_cols; i++) {
        const char *s = t->text.buf + t->cell_off[c + i];
        size_t n = strlen(s), next = n;
        piece[i] = s + pos[i];
        plen[i] = i == below || pos[i] >= n ? 0 : ml_text_break(s + pos[i], n - pos[i], w[i], &next);
        if (i != below && pos[i] < n) {
            pos[i] += next;
            *more |= pos[i] < n;
        }
        if (i != below && (plen[i] || (t->right[i] && first))) {
            last = i;
            any = true;
        }
    }
    enum ml_status st = ml_buf_addn(out, ' ', indent);
    for (size_t i = 0, k = 0; i <= last && any && st == ML_OK; i++) {
        if (i == below)
            continue;
        size_t pad = w[i] - ml_text_width_n(piece[i], plen[i]);
        if (k++)
            st = ml_buf_adds(out, "  ");
        if (t->right[i])
            st = ml_buf_addn(out, ' ', pad);
        if (st == ML_OK)
            st = ml_buf_add(out, piece[i], plen[i]);
        if (!t->right[i] && i < last && st == ML_OK)
            st = ml_buf_addn(out, ' ', pad);
    }
    return st == ML_OK ? ml_buf_addc(out, '\n') : st;
}

/* A cell row laid out at widths w: as many lines as its widest wrapped cell, then the moved flex
 * cell on lines of its own. */
static enum ml_status fitted_row(const struct ml_table *t, size_t c, const size_t *w, size_t below, struct ml_buf *out,
                                 size_t indent)
{
    size_t pos[ML_TABLE_MAX_COLS] = {0};
    bool more = true;
    enum ml_status st = ML_OK;
    while (more && st == ML_OK)
        st = cells_line(t, c, w, below, pos, out, indent, &more);
    if (below == t->n_cols || st != ML_OK)
        return st;
    const char *s = t->text.buf + t->cell_off[c + below];
    size_t n = strlen(s), in = indent + ML_TABLE_BELOW_INDENT, next;
    size_t room = t->width > in + 8 ? t->width - in : 8;
    for (size_t i = 0; i < n && st == ML_OK; i += next) {
        size_t len = ml_text_break(s + i, n - i, room, &next);
        st = ml_buf_addn(out, ' ', in);
        if (st == ML_OK)
            st = ml_buf_add(out, s + i, len);
        if (st == ML_OK)
            st = ml_buf_addc(out, '\n');
    }
    return st;
}

/* The table at t->width (called only when the natural layout is wider). */
static enum ml_status render_fitted(const struct ml_table *t, size_t *w, struct ml_buf *out, size_t indent)
{
    size_t below;
    fit_widths(t, indent, w, &below);
    size_t total = total_width(t, w, below), c = 0;
    enum ml_status st = ML_OK;
    for (size_t r = 0; r < t->n_rows && st == ML_OK; r++) {
        if (t->row_kind[r] == ROW_CELLS) {
            st = fitted_row(t, c, w, below, out, indent);
            c += t->n_cols;
            continue;
        }
        st = ml_buf_addn(out, ' ', indent);
        if (t->row_kind[r] == ROW_RULE) /* never wider than the width, even when the cells are */
            st = st == ML_OK
                     ? ml_buf_addn(out, '-', t->width > indent && total > t->width - indent ? t->width - indent : total)
                     : st;
        else
            st = st == ML_OK ? ml_buf_adds(out, t->text.buf + t->cell_off[c++]) : st;
        if (st == ML_OK)
            st = ml_buf_addc(out, '\n');
    }
    return st;
}

enum ml_status ml_table_render(const struct ml_table *t, struct ml_buf *out, size_t indent)
{
    if (t->status != ML_OK)
        return t->status;
    size_t w[ML_TABLE_MAX_COLS] = {0};
    natural_widths(t, w);
    size_t total = total_width(t, w, t->n_cols);
    if (t->width && indent + total > t->width)
        return render_fitted(t, w, out, indent);
    enum ml_status st = ML_OK;
    size_t c = 0;
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
                size_t pad = w[i] - ml_text_width(s);
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
