/*
 * text.c - display widths, line breaking and folding of text reports (render.h).
 *
 * Widths are terminal columns as wcwidth(3) counts them in a UTF-8 locale: East Asian Wide and
 * Fullwidth characters take two (Unicode Standard Annex #11, East_Asian_Width W and F), combining
 * marks and zero-width characters none, ANSI SGR sequences ("\033[1;31m") none, everything else
 * one (Ambiguous characters such as '·' and '—' take one, as glibc counts them). The table below
 * holds the W/F blocks memledger's catalogs use (CJK ideographs, CJK and fullwidth punctuation,
 * kana, Hangul) and the emoji blocks; it is a property of the characters, not of a locale, so the
 * renderer stays pure and a zh_CN report folds the same everywhere.
 */
#include "memledger/render.h"

#include <string.h>

struct range {
    unsigned lo, hi;
};

/* East_Asian_Width W and F (UAX #11), the blocks in use, in code point order. */
static const struct range wide[] = {
    {0x1100, 0x115F},   /* Hangul Jamo leading consonants */
    {0x231A, 0x231B},   /* watch, hourglass */
    {0x2329, 0x232A},   /* angle brackets */
    {0x2E80, 0x303E},   /* CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation */
    {0x3041, 0x33FF},   /* Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes,
                           enclosed CJK, CJK compatibility */
    {0x3400, 0x4DBF},   /* CJK Unified Ideographs Extension A */
    {0x4E00, 0x9FFF},   /* CJK Unified Ideographs */
    {0xA000, 0xA4CF},   /* Yi */
    {0xA960, 0xA97F},   /* Hangul Jamo Extended-A */
    {0xAC00, 0xD7A3},   /* Hangul syllables */
    {0xF900, 0xFAFF},   /* CJK Compatibility Ideographs */
    {0xFE10, 0xFE19},   /* vertical forms */
    {0xFE30, 0xFE6F},   /* CJK compatibility forms, small form variants */
    {0xFF01, 0xFF60},   /* fullwidth forms: ，：（）！ */
    {0xFFE0, 0xFFE6},   /* fullwidth signs */
    {0x1F300, 0x1F64F}, /* pictographs, emoticons */
    {0x1F900, 0x1F9FF}, /* supplemental pictographs */
    {0x20000, 0x2FFFD}, /* CJK Extensions B-F, compatibility supplement */
    {0x30000, 0x3FFFD}, /* CJK Extension G and later */
};

/* Zero width: combining marks, zero-width space and joiners, variation selectors. */
static const struct range zero[] = {
    {0x0300, 0x036F}, {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
};

static bool in(const struct range *r, size_t n, unsigned cp)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return true;
    return false;
}

size_t ml_char_width(unsigned cp)
{
    if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
        return 0;
    if (in(zero, sizeof(zero) / sizeof(zero[0]), cp))
        return 0;
    return in(wide, sizeof(wide) / sizeof(wide[0]), cp) ? 2 : 1;
}

/* The next character or escape sequence at s[0..n): its bytes and its width. */
static size_t step_cp(const char *s, size_t n, size_t *w, unsigned *cp_out)
{
    const unsigned char *u = (const unsigned char *)s;
    *cp_out = 0;
    if (u[0] == 0x1B && n > 1 && u[1] == '[') {
        /* CSI: parameters and intermediates, then one final byte in 0x40..0x7E. */
        size_t k = 2;
        while (k < n && u[k] >= 0x20 && u[k] <= 0x3F)
            k++;
        *w = 0;
        return k < n ? k + 1 : k;
    }
    size_t len = ml_utf8_len(u, n);
    if (!len) {
        *w = 1; /* a stray byte prints as one replacement character */
        return 1;
    }
    unsigned cp = len == 1 ? u[0] : (unsigned)(u[0] & (0x7F >> len));
    for (size_t k = 1; k < len; k++)
        cp = cp << 6 | (u[k] & 0x3F);
    *w = ml_char_width(cp);
    *cp_out = cp;
    return len;
}

static size_t step(const char *s, size_t n, size_t *w)
{
    unsigned cp;
    return step_cp(s, n, w, &cp);
}

/* CJK punctuation a line may not start with (closing and pausing marks) or end with (opening
 * brackets): UAX #14 classes CL, EX, IS and OP as zh_CN text uses them. */
static bool no_line_start(unsigned cp)
{
    static const unsigned cl[] = {0x3001, 0x3002, 0x300D, 0x300F, 0x3011, 0xFF01, 0xFF09,
                                  0xFF0C, 0xFF0E, 0xFF1A, 0xFF1B, 0xFF1F, 0x201D, 0x2019};
    for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++)
        if (cp == cl[i])
            return true;
    return false;
}

static bool no_line_end(unsigned cp)
{
    return cp == 0x300C || cp == 0x300E || cp == 0x3010 || cp == 0xFF08 || cp == 0x201C || cp == 0x2018;
}

size_t ml_text_width_n(const char *s, size_t n)
{
    size_t total = 0, w;
    for (size_t i = 0; i < n;) {
        i += step(s + i, n - i, &w);
        total += w;
    }
    return total;
}

size_t ml_text_width(const char *s)
{
    return ml_text_width_n(s, strlen(s));
}

/* How good a break before the word at s is: 0 a plain word; 1 a separator that reads better at
 * the end of a line ("·", "—", "->", "=", "+", "x"); 2 a unit that stays with its number ("8 B",
 * "5.63 GiB)", "3.6%"). */
static int break_cost(const char *s, size_t n)
{
    static const char *const sep[] = {"·", "—", "->", "=", "+", "-", "x", "/"};
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "%"};
    size_t w = 0;
    while (w < n && s[w] != ' ')
        w++;
    for (size_t i = 0; i < sizeof(sep) / sizeof(sep[0]); i++)
        if (w == strlen(sep[i]) && !memcmp(s, sep[i], w))
            return 1;
    for (size_t i = 0; i < sizeof(unit) / sizeof(unit[0]); i++) {
        size_t k = strlen(unit[i]);
        bool alnum =
            w > k && ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') || (s[k] >= '0' && s[k] <= '9'));
        if (w >= k && !memcmp(s, unit[i], k) && !alnum)
            return 2;
    }
    return 0;
}

/* The last break of each cost seen: its end (bytes), where the rest starts, its width. */
struct brk {
    size_t end, next, w;
};

size_t ml_text_break(const char *s, size_t n, size_t width, size_t *next)
{
    struct brk b[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    size_t w = 0, i = 0, cw, prev_w = 0;
    unsigned cp, prev = 0;
    bool text = false; /* past the line's own indent: no break inside it */
    while (i < n) {
        size_t len = step_cp(s + i, n - i, &cw, &cp);
        /* Between CJK characters, where Chinese breaks its lines (UAX #14, class ID). */
        if (text && s[i] != ' ' && s[i - 1] != ' ' && cw && prev && (cw == 2 || prev_w == 2) && !no_line_start(cp) &&
            !no_line_end(prev))
            b[0] = (struct brk){i, i, w};
        if (cw) {
            prev = cp;
            prev_w = cw;
        }
        if (s[i] != ' ') {
            text = true;
        } else if (text && s[i - 1] != ' ') {
            size_t j = i;
            while (j < n && s[j] == ' ')
                j++;
            if (j == n) { /* only spaces left */
                *next = n;
                return i;
            }
            b[break_cost(s + j, n - j)] = (struct brk){i, j, w};
        }
        if (w + cw > width)
            break;
        w += cw;
        i += len;
        if (i < n && s[i] != ' ' && (s[i - 1] == ',' || s[i - 1] == '/'))
            b[s[i - 1] == ',' ? 0 : 2] = (struct brk){i, i, w}; /* a list, a path */
    }
    if (i >= n) {
        *next = n;
        return n;
    }
    /* A plain break that keeps half the line, else one before a separator; else any, a unit's
     * last. */
    const struct brk *pick = NULL;
    for (int k = 0; k < 2 && !pick; k++)
        if (b[k].end && b[k].w * 2 >= width)
            pick = &b[k];
    for (int k = 0; k < 3 && !pick; k++)
        if (b[k].end)
            pick = &b[k];
    if (pick) {
        *next = pick->next;
        return pick->end;
    }
    /* One word wider than the line: cut it at the width (one character at least). */
    if (!i)
        i = step(s, n, &cw);
    *next = i;
    return i;
}

/* Where a folded line's continuations start: after a list marker or label ("- ", "1. ",
 * "note: ", "oom.log:14  "), else two columns in from the line's own indent. */
static size_t hang_of(const char *s, size_t n, size_t width)
{
    size_t lead = 0;
    while (lead < n && s[lead] == ' ')
        lead++;
    size_t e = lead;
    while (e < n && s[e] != ' ')
        e++;
    size_t sp = e;
    while (sp < n && s[sp] == ' ')
        sp++;
    size_t tw = ml_text_width_n(s + lead, e - lead), gap = sp - e;
    bool marker = false;
    if (gap && e > lead) {
        const char *t = s + lead;
        size_t tl = e - lead, d = 0;
        while (d < tl && t[d] >= '0' && t[d] <= '9')
            d++;
        marker = (tl == 1 && (t[0] == '-' || t[0] == '*')) || (d && d + 1 == tl && (t[d] == '.' || t[d] == ')')) ||
                 (t[tl - 1] == ':' && tw <= 16) || gap >= 2;
    }
    size_t h = marker ? lead + tw + gap : lead + 2;
    /* A Chinese label ends in a fullwidth colon and no space: "提示：..." hangs after it. */
    const char *fc = memchr(s + lead, 0xEF, e - lead);
    if (!marker && fc && (size_t)(s + n - fc) >= 3 && !memcmp(fc, "\xEF\xBC\x9A", 3) &&
        ml_text_width_n(s + lead, (size_t)(fc - s) - lead) <= 12)
        h = lead + ml_text_width_n(s + lead, (size_t)(fc - s) - lead) + 2;
    if (h > width / 2)
        h = lead + 2 <= width / 2 ? lead + 2 : 0;
    return h;
}

/* Fold one line s[0..n) (no newline) to width into out. */
static enum ml_status fold_line(struct ml_buf *out, const char *s, size_t n, size_t width)
{
    size_t hang = hang_of(s, n, width), i = 0, next;
    enum ml_status st = ML_OK;
    bool first = true;
    while (i < n && st == ML_OK) {
        size_t room = first ? width : width - hang;
        size_t len = ml_text_break(s + i, n - i, room, &next);
        if (!first)
            st = ml_buf_addn(out, ' ', hang);
        if (st == ML_OK)
            st = ml_buf_add(out, s + i, len);
        if (st == ML_OK)
            st = ml_buf_addc(out, '\n');
        i += next;
        first = false;
    }
    return st;
}

enum ml_status ml_text_fold(struct ml_buf *b, size_t from, size_t width)
{
    if (!width || from >= b->len)
        return ML_OK;
    struct ml_buf out;
    ml_buf_init(&out, b->max);
    enum ml_status st = ML_OK;
    const char *s = b->buf + from, *end = b->buf + b->len;
    while (s < end && st == ML_OK) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        if (ml_text_width_n(s, n) <= width) {
            st = ml_buf_add(&out, s, n + (nl ? 1 : 0));
        } else {
            st = fold_line(&out, s, n, width);
            if (st == ML_OK && !nl) /* the text had no final newline: nor has its fold */
                out.buf[--out.len] = '\0';
        }
        s += n + (nl ? 1 : 0);
    }
    if (st == ML_OK) {
        b->len = from;
        b->buf[from] = '\0';
        st = ml_buf_add(b, out.buf, out.len);
    }
    ml_buf_release(&out);
    return st;
}

enum ml_status ml_buf_add_sgr(struct ml_buf *b, const struct ml_layout *lay, const char *sgr, const char *s)
{
    if (!lay || !lay->colour)
        return ml_buf_adds(b, s);
    enum ml_status st = ml_buf_adds(b, sgr);
    if (st == ML_OK)
        st = ml_buf_adds(b, s);
    if (st == ML_OK)
        st = ml_buf_adds(b, ML_SGR_RESET);
    return st;
}
