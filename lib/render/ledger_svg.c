/*
 * ledger_svg.c - the ledger as stacked bars per phase, and an OOM message's numbers beside the
 * ledger's bar (see ledger_svg.h). Our own SVG bytes: integer coordinates in tenths of a pixel,
 * no floating point, no locale, no allocation beyond the output buffer.
 *
 * Layout (800 px wide): three header lines; a plot of PH px with a GiB axis on the left and the
 * capacity's label in the right margin; one slot per bar; below the bars their phase names and
 * the peak mark; then the legend in three columns. Bars stack their segments from the bottom;
 * segment edges are the byte prefix sums mapped to pixels, so the heights of a bar's segments
 * add up to its total exactly (no rounding drift).
 */
#include "memledger/ledger_svg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/oom.h"
#include "memledger/report.h"
#include "memledger/units.h"

#include "i18n.h"

#define W           ML_SVG_WIDTH
#define LEFT        64u
#define RIGHT       104u
#define TOP         76u
#define PH          300u
#define PW          (W - LEFT - RIGHT)
#define BASE        (TOP + PH)
#define LEGEND_COLS 3u
#define LEGEND_X    24u
#define LEGEND_ROW  16u
#define FONT                                                                                                           \
    "DejaVu Sans, Liberation Sans, Arial, Helvetica, Noto Sans CJK SC, Source Han Sans SC, PingFang SC, Microsoft "    \
    "YaHei, sans-serif"
#define MAX_DRAW  ((uint64_t)1 << 60) /* 1 EiB: larger figures are not a GPU's */
#define MAX_BARS  ML_PHASE_COUNT
#define MAX_SEGS  ML_LEDGER_MAX_ENTRIES
#define MAX_ITEMS (ML_C_COUNT + 8)

/* A colour per component: fill, and the ink of a label drawn on it. Families share a hue:
 * blues weights, green/orange gradients and optimizer, purples ZeRO/FSDP, reds and yellows the
 * step's working memory, greys the allocator and what lies outside it. */
struct swatch {
    const char *fill, *ink;
};
#define INK_W "#ffffff"
#define INK_B "#1a1a1a"
/* clang-format off */
static const struct swatch comp_swatch[] = {
    [ML_C_WEIGHTS_FROZEN] = {"#4e79a7", INK_W},     [ML_C_WEIGHTS_TRAINABLE] = {"#76b7e5", INK_B},
    [ML_C_QUANT_STATE] = {"#a6cee3", INK_B},        [ML_C_MASTER] = {"#1f4e79", INK_W},
    [ML_C_GRADIENTS] = {"#59a14f", INK_W},          [ML_C_OPTIMIZER] = {"#f28e2b", INK_B},
    [ML_C_AUTOCAST_CACHE] = {"#b9d7f0", INK_B},     [ML_C_DDP_BUCKETS] = {"#8cd17d", INK_B},
    [ML_C_ZERO_PERSISTENT] = {"#8c6bb1", INK_W},    [ML_C_ZERO_IPG_BUCKET] = {"#bcbddc", INK_B},
    [ML_C_ZERO_GATHERED] = {"#6a51a3", INK_W},      [ML_C_ZERO_LM_HEAD_RETAINED] = {"#9e9ac8", INK_B},
    [ML_C_ZERO_REDUCE] = {"#dadaeb", INK_B},        [ML_C_FSDP_UNSHARDED] = {"#54278f", INK_W},
    [ML_C_ACTIVATIONS] = {"#e15759", INK_W},        [ML_C_ATTN_SCORES] = {"#ff9d9a", INK_B},
    [ML_C_ATTN_MASK] = {"#fcbba1", INK_B},          [ML_C_LOGITS_LOSS] = {"#edc948", INK_B},
    [ML_C_BACKWARD_WORKING] = {"#b5446e", INK_W},   [ML_C_QLORA_DEQUANT] = {"#fabfd2", INK_B},
    [ML_C_STEP_TRANSIENT] = {"#ffbe7d", INK_B},     [ML_C_SAVE_GATHER] = {"#b6992d", INK_W},
    [ML_C_EVAL_WORKING] = {"#86bcb6", INK_B},       [ML_C_LOAD_TRANSIENT] = {"#499894", INK_W},
    [ML_C_REF_WEIGHTS] = {"#2c7fb8", INK_W},        [ML_C_REWARD_WEIGHTS] = {"#253494", INK_W},
    [ML_C_VALUE_HEAD] = {"#7fcdbb", INK_B},         [ML_C_REF_FORWARD] = {"#fdd49e", INK_B},
    [ML_C_ROLLOUT_KV] = {"#66c2a4", INK_B},         [ML_C_VISION_ACT] = {"#f1a340", INK_B},
    [ML_C_KV_CACHE] = {"#1b9e77", INK_W},           [ML_C_NON_TORCH] = {"#9d7660", INK_W},
    [ML_C_CUDA_GRAPHS] = {"#d7b5a6", INK_B},        [ML_C_CUBLAS_WORKSPACE] = {"#d4a6c8", INK_B},
    [ML_C_ALLOCATOR] = {"#c7c7c7", INK_B},          [ML_C_CUDA_CONTEXT] = {"#555555", INK_W},
    [ML_C_NCCL] = {"#8c8c8c", INK_W},
};
/* clang-format on */
_Static_assert(sizeof(comp_swatch) / sizeof(comp_swatch[0]) == ML_C_COUNT, "one swatch per component");

/* The log bar's parts: PyTorch's allocated tensors, its cache, the rest of the device. */
static const struct swatch log_allocated = {"#6b6ecf", INK_W};
static const struct swatch log_cached = {"#c7c7c7", INK_B};  /* as allocator_reserve */
static const struct swatch log_outside = {"#555555", INK_W}; /* as cuda_context */
#define CAP_STROKE "#c00000"

enum seg_style { SEG_FILL, SEG_REQUEST };

struct seg {
    uint64_t bytes;
    const struct swatch *sw;
    const char *name;
    const char *rule;   /* tooltip detail (may be "") */
    const char *figure; /* "allocated", ... (may be NULL) */
    enum seg_style style;
};

struct bar {
    char id[32];          /* "bar-forward", "log-bar" */
    const char *label;    /* under the bar */
    const char *sublabel; /* second line under it (NULL: none) */
    struct seg segs[MAX_SEGS];
    uint32_t n_segs;
    uint64_t total; /* sum of the filled segments (saturating at MAX_DRAW) */
    uint64_t extra; /* sum of the request segments drawn on top */
    uint64_t frame; /* > 0: outline of this height (the log's device total) */
    bool peak;
};

/* What a legend item's symbol is. */
enum item_kind {
    ITEM_SWATCH,   /* a component's colour */
    ITEM_CAPACITY, /* the capacity line */
    ITEM_INTERVAL, /* the interval's whisker */
    ITEM_FRAME,    /* the log's device total (an outline) or its free memory */
    ITEM_REQUEST   /* the request that failed (dashed, on top) */
};

struct item {
    const struct swatch *sw; /* NULL for the line and whisker items */
    const char *name;
    uint64_t bytes;
    bool has_bytes;
    const char *tag; /* "(device)", ... or NULL */
    enum item_kind kind;
};

struct chart {
    struct bar bars[MAX_BARS];
    uint32_t n_bars;
    struct item items[MAX_ITEMS];
    uint32_t n_items;
    uint64_t capacity, ymax, step;
    const char *cap_label;
    int32_t whisker_bar; /* bar index of the interval, -1 none */
    uint64_t lo, hi;
    uint32_t permille;
    char summary[200];
    const char *legend_head;
    const char *default_title;
    struct ml_buf *out;
    enum ml_status st; /* first failed append */
};

enum ml_status ml_xml_text(struct ml_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    enum ml_status st = ML_OK;
    while (n && st == ML_OK) {
        size_t k = 1;
        switch (*p) {
        case '&': st = ml_buf_adds(b, "&amp;"); break;
        case '<': st = ml_buf_adds(b, "&lt;"); break;
        case '>': st = ml_buf_adds(b, "&gt;"); break;
        case '"': st = ml_buf_adds(b, "&quot;"); break;
        default:
            if (*p >= 0x80) {
                k = ml_utf8_len(p, n);
                if (k)
                    st = ml_buf_add(b, p, k);
                else
                    k = 1;
            } else if (*p >= 0x20 && *p != 0x7f) {
                st = ml_buf_addc(b, (char)*p);
            }
        }
        p += k;
        n -= k;
    }
    return st;
}

/* Appends to the picture; the first failure sticks (later, smaller appends would succeed and
 * leave a picture with a hole). */
__attribute__((format(printf, 2, 3))) static void pf(struct chart *c, const char *fmt, ...)
{
    if (c->st != ML_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    c->st = ml_buf_vaddf(c->out, fmt, ap);
    va_end(ap);
}

static void ps(struct chart *c, const char *s)
{
    if (c->st == ML_OK)
        c->st = ml_buf_adds(c->out, s);
}

static void px(struct chart *c, const char *s)
{
    if (c->st == ML_OK)
        c->st = ml_xml_text(c->out, s);
}

/* A coordinate in tenths of a pixel as "123.4". */
static void put10(struct chart *c, uint64_t v10)
{
    pf(c, "%llu.%u", (unsigned long long)(v10 / 10), (unsigned)(v10 % 10));
}

/* bytes (<= ymax) as tenths of a pixel above the baseline, rounded to nearest. */
static uint64_t height10(const struct chart *c, uint64_t bytes)
{
    uint64_t num = bytes > c->ymax ? c->ymax : bytes, den = c->ymax;
    while (den > ((uint64_t)1 << 50)) {
        num >>= 1;
        den >>= 1;
    }
    return (num * (PH * 10u) + den / 2) / den;
}

static uint64_t y10(const struct chart *c, uint64_t bytes)
{
    return BASE * 10u - height10(c, bytes);
}

/* GiB with two decimals, without the unit ("6.88"). */
static const char *gib_num(char *out, size_t n, uint64_t bytes)
{
    ml_fmt_gib_s(out, n, bytes);
    char *sp = strchr(out, ' ');
    if (sp)
        *sp = '\0';
    return out;
}

/* The next axis step: doubling up to 1 GiB, then 1-2-5 GiB (1, 2, 5, 10, 20, 50, ...). */
static uint64_t next_step(uint64_t s)
{
    if (s < ML_GIB)
        return s * 2u;
    uint64_t g = s / ML_GIB, p = 1;
    while (g >= p * 10u)
        p *= 10u;
    return g / p == 2u ? s / 2u * 5u : s * 2u;
}

/* The axis: the smallest step from 128 MiB giving at most 7 intervals, with ymax leaving 8 %
 * above the largest figure for its label. maxv < MAX_DRAW. */
static void scale_axis(struct chart *c, uint64_t maxv)
{
    uint64_t need = maxv / 92u * 100u + (maxv % 92u) * 100u / 92u + 1u;
    uint64_t step = ML_MIB * 128u;
    while (step * 7u < need)
        step = next_step(step);
    c->step = step;
    c->ymax = (need + step - 1) / step * step;
}

static void add_item(struct chart *c, const struct swatch *sw, const char *name, uint64_t bytes, bool has,
                     const char *tag, enum item_kind kind)
{
    if (c->n_items >= MAX_ITEMS)
        return;
    c->items[c->n_items++] = (struct item){sw, name, bytes, has, tag, kind};
}

static void add_seg(struct bar *b, uint64_t bytes, const struct swatch *sw, const char *name, const char *rule,
                    const char *figure, enum seg_style style)
{
    if (b->n_segs >= MAX_SEGS)
        return;
    if (bytes > MAX_DRAW)
        bytes = MAX_DRAW;
    b->segs[b->n_segs++] = (struct seg){bytes, sw, name, rule ? rule : "", figure, style};
    uint64_t *sum = style == SEG_FILL ? &b->total : &b->extra;
    *sum = *sum + bytes > MAX_DRAW ? MAX_DRAW : *sum + bytes;
}

/* The bar of phase p: its allocated components, then the reserve, then the device-only ones. */
static void ledger_bar(struct chart *c, const struct ml_ledger *l, enum ml_phase p)
{
    struct bar *b = &c->bars[c->n_bars++];
    memset(b, 0, sizeof(*b));
    snprintf(b->id, sizeof(b->id), "bar-%s", ml_phase_name(p));
    b->label = ml_phase_name(p);
    static const enum ml_figure order[] = {ML_FIG_ALLOCATED, ML_FIG_RESERVED, ML_FIG_DEVICE};
    for (size_t f = 0; f < sizeof(order) / sizeof(order[0]); f++)
        for (uint32_t i = 0; i < l->n; i++) {
            const struct ml_entry *e = &l->e[i];
            if (e->figure != order[f] || !(e->phases & ML_PH(p)) || (unsigned)e->id >= ML_C_COUNT)
                continue;
            add_seg(b, e->bytes, &comp_swatch[e->id], ml_comp_name(e->id), e->rule, ml_figure_name(e->figure),
                    SEG_FILL);
        }
}

/* One legend item per component live in the phases of mask: its largest sum in one of them. */
static void ledger_items(struct chart *c, const struct ml_ledger *l, uint32_t mask)
{
    for (int id = 0; id < ML_C_COUNT; id++) {
        uint64_t best = 0;
        enum ml_figure fig = ML_FIG_ALLOCATED;
        bool seen = false;
        for (int p = 0; p < ML_PHASE_COUNT; p++) {
            if (!l->phase_active[p] || !(mask & ML_PH(p)))
                continue;
            uint64_t sum = 0;
            for (uint32_t i = 0; i < l->n; i++)
                if ((int)l->e[i].id == id && (l->e[i].phases & ML_PH(p))) {
                    sum = sum + l->e[i].bytes > MAX_DRAW ? MAX_DRAW : sum + l->e[i].bytes;
                    fig = l->e[i].figure;
                    seen = true;
                }
            if (sum > best)
                best = sum;
        }
        if (seen)
            add_item(c, &comp_swatch[id], ml_comp_name((enum ml_comp)id), best, true,
                     fig == ML_FIG_DEVICE     ? "(device)"
                     : fig == ML_FIG_RESERVED ? "(reserved)"
                                              : NULL,
                     ITEM_SWATCH);
    }
}

static void head(struct chart *c, const struct ml_ledger_svg_opts *o, uint32_t h)
{
    pf(c,
       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" height=\"%u\" "
       "viewBox=\"0 0 %u %u\" font-family=\"" FONT "\" font-size=\"12\">\n<title>",
       W, h, W, h);
    const char *title = o && o->title ? o->title : c->default_title;
    px(c, title);
    ps(c, "</title>\n<desc>");
    px(c, c->summary);
    pf(c, "</desc>\n<rect width=\"%u\" height=\"%u\" fill=\"#ffffff\"/>\n", W, h);
    pf(c,
       "<text x=\"%u\" y=\"22\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"start\" "
       "fill=\"#1a1a1a\">",
       LEFT);
    px(c, title);
    ps(c, "</text>\n");
    uint32_t y = 42;
    if (o && o->subtitle && o->subtitle[0]) {
        pf(c, "<text x=\"%u\" y=\"%u\" text-anchor=\"start\" fill=\"#333333\">", LEFT, y);
        px(c, o->subtitle);
        ps(c, "</text>\n");
        y += 18;
    }
    pf(c, "<text id=\"summary\" x=\"%u\" y=\"%u\" text-anchor=\"start\" fill=\"#1a1a1a\">", LEFT, y);
    px(c, c->summary);
    ps(c, "</text>\n");
}

static void axes(struct chart *c)
{
    for (uint64_t v = 0; v <= c->ymax; v += c->step) {
        uint64_t y = y10(c, v);
        pf(c, "<line x1=\"%u\" y1=\"", LEFT);
        put10(c, y);
        pf(c, "\" x2=\"%u\" y2=\"", LEFT + PW);
        put10(c, y);
        pf(c, "\" stroke=\"%s\" stroke-width=\"1\"%s/>\n", v ? "#e4e4e4" : "#444444", v ? "" : " id=\"baseline\"");
        pf(c, "<text x=\"%u\" y=\"", LEFT - 6);
        put10(c, y + 40);
        if (c->step >= ML_GIB)
            pf(c, "\" text-anchor=\"end\" fill=\"#444444\">%llu GiB</text>\n", (unsigned long long)(v / ML_GIB));
        else
            pf(c, "\" text-anchor=\"end\" fill=\"#444444\">%llu MiB</text>\n", (unsigned long long)(v / ML_MIB));
    }
    pf(c, "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#444444\" stroke-width=\"1\"/>\n", LEFT, TOP, LEFT,
       BASE);
}

static void rect10(struct chart *c, uint64_t x10, uint64_t y10v, uint64_t w10, uint64_t h10)
{
    ps(c, "<rect x=\"");
    put10(c, x10);
    ps(c, "\" y=\"");
    put10(c, y10v);
    ps(c, "\" width=\"");
    put10(c, w10);
    ps(c, "\" height=\"");
    put10(c, h10);
    ps(c, "\"");
}

static void seg_title(struct chart *c, const struct seg *s)
{
    char g[ML_FMT_MAX];
    ps(c, "<title>");
    px(c, s->name);
    pf(c, ": %s", ml_fmt_bytes_s(g, sizeof(g), s->bytes));
    if (s->figure)
        pf(c, " (%s)", s->figure);
    if (s->rule[0]) {
        ps(c, " - ");
        px(c, s->rule);
    }
    ps(c, "</title>");
}

/* Is the code point of the 3-byte UTF-8 sequence at s a full-width one (CJK, Hangul, full-width
 * forms: East Asian Width W or F)? */
static bool wide3(const unsigned char *s)
{
    if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
        return false;
    unsigned cp = (unsigned)(s[0] & 0x0F) << 12 | (unsigned)(s[1] & 0x3F) << 6 | (unsigned)(s[2] & 0x3F);
    return (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6);
}

/* Estimated width of s at size px in tenths: DejaVu Sans averages 0.6 em a character, a
 * full-width (CJK) glyph of the fallback font 1 em. */
static uint64_t text_width10(const char *s, unsigned size)
{
    uint64_t n6 = 0;
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        if ((*u & 0xC0) == 0x80)
            continue;
        n6 += (*u & 0xF0) == 0xE0 && u[1] && u[2] && wide3(u) ? 10 : 6;
    }
    return n6 * size;
}

/* The segments of bar b at x10, w10 wide (tenths), bottom up; a label inside each tall one. The
 * top of a request segment goes to *request_top. */
static void bar_segments(struct chart *c, const struct bar *b, uint64_t x10, uint64_t w10, uint64_t *request_top)
{
    uint64_t cum = 0;
    char g[ML_FMT_MAX];
    for (uint32_t i = 0; i < b->n_segs; i++) {
        const struct seg *s = &b->segs[i];
        uint64_t top = y10(c, cum + s->bytes), bot = y10(c, cum);
        rect10(c, x10, top, w10, bot - top);
        if (s->style == SEG_REQUEST)
            pf(c, " fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\">", CAP_STROKE);
        else
            pf(c, " fill=\"%s\" stroke=\"#ffffff\" stroke-width=\"0.5\">", s->sw->fill);
        seg_title(c, s);
        ps(c, "</rect>\n");
        if (s->style == SEG_FILL && bot - top >= 130 && w10 >= 300) {
            ps(c, "<text x=\"");
            put10(c, x10 + w10 / 2);
            ps(c, "\" y=\"");
            put10(c, (top + bot) / 2 + 40);
            pf(c, "\" font-size=\"11\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n", s->sw->ink,
               gib_num(g, sizeof(g), s->bytes));
        }
        if (s->style == SEG_REQUEST)
            *request_top = top;
        cum += s->bytes;
    }
}

/* The request, often under a pixel: named beside the bar, above a leader to its top. */
static void request_note(struct chart *c, const struct bar *b, uint64_t xr, uint64_t top)
{
    char g[ML_FMT_MAX] = "";
    for (uint32_t i = 0; i < b->n_segs; i++)
        if (b->segs[i].style == SEG_REQUEST)
            ml_fmt_bytes_s(g, sizeof(g), b->segs[i].bytes);
    uint64_t ty = top > TOP * 10u + 140 ? top - 140 : top + 140;
    ps(c, "<path d=\"M");
    put10(c, xr);
    ps(c, " ");
    put10(c, top);
    ps(c, "L");
    put10(c, xr + 100);
    ps(c, " ");
    put10(c, ty + 40);
    pf(c, "\" stroke=\"%s\" stroke-width=\"1.5\" fill=\"none\"/>\n", CAP_STROKE);
    rect10(c, xr + 110, ty - 100, text_width10(_("request "), 11) + text_width10(g, 11) + 40, 140);
    ps(c, " fill=\"#ffffff\"/>\n<text x=\"");
    put10(c, xr + 130);
    ps(c, "\" y=\"");
    put10(c, ty + 10);
    pf(c, "\" font-size=\"11\" text-anchor=\"start\" fill=\"%s\">", CAP_STROKE);
    px(c, _("request "));
    pf(c, "%s</text>\n", g);
}

/* Text centred at cx10 from baseline y, on two lines split at its first '_' or ' ' when one
 * line would not fit the slot ("optimizer_step" -> "optimizer" / "step"); returns the next
 * line's baseline. */
static uint32_t label_lines(struct chart *c, uint64_t cx10, uint32_t y, const char *text, uint64_t slot10, bool bold)
{
    char line[2][64];
    size_t k = strcspn(text, "_ ");
    const char *cut = text_width10(text, 12) + 60 > slot10 && text[k] ? text + k : NULL;
    size_t n1 = cut ? (size_t)(cut - text) : strlen(text);
    snprintf(line[0], sizeof(line[0]), "%.*s", (int)(n1 < 63 ? n1 : 63), text);
    snprintf(line[1], sizeof(line[1]), "%s", cut ? cut + 1 : "");
    for (int i = 0; i < 2 && line[i][0]; i++, y += 14) {
        ps(c, "<text x=\"");
        put10(c, cx10);
        pf(c, "\" y=\"%u\" text-anchor=\"middle\" fill=\"#1a1a1a\"%s>", y, bold ? " font-weight=\"bold\"" : "");
        px(c, line[i]);
        ps(c, "</text>\n");
    }
    return y;
}

static void draw_bar(struct chart *c, uint32_t k)
{
    const struct bar *b = &c->bars[k];
    uint64_t slot10 = PW * 10u / c->n_bars, w10 = slot10 * 2u / 3u;
    if (w10 > 960)
        w10 = 960;
    uint64_t cx10 = LEFT * 10u + slot10 * k + slot10 / 2, x10 = cx10 - w10 / 2;
    pf(c, "<g id=\"%s\">\n", b->id);
    if (b->frame) {
        uint64_t top = y10(c, b->frame);
        rect10(c, x10, top, w10, BASE * 10u - top);
        ps(c, " id=\"log-frame\" fill=\"#ffffff\" stroke=\"#888888\" stroke-width=\"1\"/>\n");
    }
    uint64_t request_top = 0;
    bar_segments(c, b, x10, w10, &request_top);
    if (b->peak) {
        uint64_t top = y10(c, b->total);
        rect10(c, x10, top, w10, BASE * 10u - top);
        ps(c, " id=\"peak\" fill=\"none\" stroke=\"#1a1a1a\" stroke-width=\"2\"/>\n");
    }
    ps(c, "</g>\n");
    if (request_top)
        request_note(c, b, x10 + w10, request_top);
    char g[ML_FMT_MAX];
    uint64_t top = y10(c, b->frame > b->total + b->extra ? b->frame : b->total + b->extra);
    ml_fmt_gib_s(g, sizeof(g), b->total);
    /* The bar's figure on a white ground, so that the capacity line behind it does not cross it. */
    uint64_t tw10 = text_width10(g, 12);
    rect10(c, cx10 - tw10 / 2 - 20, top - 170, tw10 + 40, 150);
    ps(c, " fill=\"#ffffff\"/>\n");
    ps(c, "<text x=\"");
    put10(c, cx10);
    ps(c, "\" y=\"");
    put10(c, top - 50);
    pf(c, "\" text-anchor=\"middle\" fill=\"#1a1a1a\"%s>%s</text>\n", b->peak ? " font-weight=\"bold\"" : "", g);
    uint32_t y = label_lines(c, cx10, BASE + 16, b->label, slot10, false);
    const char *sub = b->peak ? _("peak") : b->sublabel;
    if (sub)
        label_lines(c, cx10, y, sub, slot10, b->peak);
}

/* The capacity line across the plot, its label in the right margin. */
static void draw_capacity(struct chart *c)
{
    char g[ML_FMT_MAX];
    uint64_t y = y10(c, c->capacity);
    pf(c, "<line id=\"capacity\" x1=\"%u\" y1=\"", LEFT);
    put10(c, y);
    pf(c, "\" x2=\"%u\" y2=\"", LEFT + PW);
    put10(c, y);
    pf(c, "\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n", CAP_STROKE);
    pf(c, "<text x=\"%u\" y=\"", LEFT + PW + 6);
    put10(c, y > 120 ? y - 30 : y + 40);
    pf(c, "\" text-anchor=\"start\" fill=\"%s\">", CAP_STROKE);
    px(c, _("capacity"));
    ps(c, "</text>\n");
    pf(c, "<text x=\"%u\" y=\"", LEFT + PW + 6);
    put10(c, y > 120 ? y + 120 : y + 190);
    pf(c, "\" text-anchor=\"start\" fill=\"%s\">%s</text>\n", CAP_STROKE, ml_fmt_gib_s(g, sizeof(g), c->capacity));
    if (c->cap_label && c->cap_label[0]) {
        pf(c, "<text x=\"%u\" y=\"", LEFT + PW + 6);
        put10(c, y > 120 ? y + 270 : y + 340);
        pf(c, "\" text-anchor=\"start\" fill=\"%s\">(", CAP_STROKE);
        px(c, c->cap_label);
        ps(c, ")</text>\n");
    }
}

/* The interval of the peak: a whisker just right of its bar. */
static void draw_interval(struct chart *c)
{
    if (c->whisker_bar < 0)
        return;
    uint64_t slot10 = PW * 10u / c->n_bars, w10 = slot10 * 2u / 3u;
    if (w10 > 960)
        w10 = 960;
    uint64_t x = LEFT * 10u + slot10 * (uint64_t)c->whisker_bar + slot10 / 2 + w10 / 2 + 60;
    uint64_t ylo = y10(c, c->lo), yhi = y10(c, c->hi);
    ps(c, "<g id=\"interval\" stroke=\"#1a1a1a\" stroke-width=\"1.5\">\n");
    const uint64_t xs[3][2] = {{x, x}, {x - 40, x + 40}, {x - 40, x + 40}};
    const uint64_t ys[3][2] = {{ylo, yhi}, {ylo, ylo}, {yhi, yhi}};
    for (int i = 0; i < 3; i++) {
        ps(c, "<line x1=\"");
        put10(c, xs[i][0]);
        ps(c, "\" y1=\"");
        put10(c, ys[i][0]);
        ps(c, "\" x2=\"");
        put10(c, xs[i][1]);
        ps(c, "\" y2=\"");
        put10(c, ys[i][1]);
        ps(c, "\"/>\n");
    }
    ps(c, "</g>\n");
}

/* One legend item's symbol at (x, y): y is the text baseline. */
static void item_symbol(struct chart *c, const struct item *it, uint32_t x, uint32_t y)
{
    switch (it->kind) {
    case ITEM_SWATCH:
        pf(c, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"10\" fill=\"%s\"/>\n", x, y - 9, it->sw->fill);
        break;
    case ITEM_FRAME:
        pf(c, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"10\" fill=\"#ffffff\" stroke=\"#888888\"/>\n", x, y - 9);
        break;
    case ITEM_REQUEST:
        pf(c,
           "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"10\" fill=\"none\" stroke=\"%s\" "
           "stroke-dasharray=\"3 2\"/>\n",
           x, y - 9, CAP_STROKE);
        break;
    case ITEM_CAPACITY:
        pf(c,
           "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"%s\" stroke-width=\"1.5\" "
           "stroke-dasharray=\"4 2\"/>\n",
           x, y - 4, x + 12, y - 4, CAP_STROKE);
        break;
    case ITEM_INTERVAL:
    default:
        pf(c,
           "<path d=\"M%u %uH%uM%u %uV%uM%u %uH%u\" stroke=\"#1a1a1a\" stroke-width=\"1.5\" "
           "fill=\"none\"/>\n",
           x + 2, y - 10, x + 10, x + 6, y - 10, y, x + 2, y, x + 10);
    }
}

/* The legend under the plot, in columns; returns the picture's height. */
static uint32_t legend_height(const struct chart *c)
{
    uint32_t rows = (c->n_items + LEGEND_COLS - 1) / LEGEND_COLS;
    return BASE + 64 + rows * LEGEND_ROW + 12;
}

static void draw_legend(struct chart *c)
{
    uint32_t rows = (c->n_items + LEGEND_COLS - 1) / LEGEND_COLS, colw = (W - LEGEND_X - 8) / LEGEND_COLS;
    pf(c,
       "<g id=\"legend\" font-size=\"11\">\n<text x=\"%u\" y=\"%u\" text-anchor=\"start\" "
       "fill=\"#444444\">",
       LEGEND_X, BASE + 64);
    px(c, c->legend_head);
    ps(c, "</text>\n");
    char g[ML_FMT_MAX];
    for (uint32_t i = 0; i < c->n_items; i++) {
        const struct item *it = &c->items[i];
        uint32_t x = LEGEND_X + (i / rows) * colw, y = BASE + 64 + LEGEND_ROW * (1 + i % rows);
        item_symbol(c, it, x, y);
        pf(c, "<text x=\"%u\" y=\"%u\" text-anchor=\"start\" fill=\"#1a1a1a\">", x + 17, y);
        px(c, it->name);
        if (it->has_bytes)
            pf(c, " %s", ml_fmt_bytes_s(g, sizeof(g), it->bytes));
        if (it->tag)
            pf(c, " %s", it->tag);
        ps(c, "</text>\n");
    }
    ps(c, "</g>\n");
}

static enum ml_status render(struct chart *c, const struct ml_ledger_svg_opts *o, struct ml_buf *out)
{
    uint64_t maxv = c->capacity;
    for (uint32_t k = 0; k < c->n_bars; k++) {
        const struct bar *b = &c->bars[k];
        uint64_t top = b->total + b->extra; /* each below MAX_DRAW: no wrap */
        if (b->frame > top)
            top = b->frame;
        if (top > maxv)
            maxv = top;
    }
    if (c->whisker_bar >= 0 && c->hi > maxv)
        maxv = c->hi;
    if (maxv >= MAX_DRAW)
        return ML_ERR_INVALID;
    scale_axis(c, maxv ? maxv : ML_GIB);
    c->out = out;
    c->st = ML_OK;
    size_t start = out->len;
    head(c, o, legend_height(c));
    axes(c);
    if (c->capacity)
        draw_capacity(c);
    for (uint32_t k = 0; k < c->n_bars; k++)
        draw_bar(c, k);
    draw_interval(c);
    draw_legend(c);
    ps(c, "</svg>\n");
    if (c->st != ML_OK && out->alloc) {
        /* Hand back no half picture: the buffer ends where it did. */
        out->len = start;
        out->buf[start] = '\0';
    }
    return c->st;
}

static void interval_from(struct chart *c, const struct ml_ledger_svg_opts *o, int32_t bar)
{
    c->whisker_bar = -1;
    if (!o || !o->has_interval || o->interval_low > o->interval_high || bar < 0)
        return;
    c->whisker_bar = bar;
    c->lo = o->interval_low;
    c->hi = o->interval_high;
    c->permille = o->interval_permille ? o->interval_permille : 800;
}

static void interval_item(struct chart *c, char *text, size_t n)
{
    if (c->whisker_bar < 0)
        return;
    char a[ML_FMT_MAX], b[ML_FMT_MAX];
    snprintf(text, n, _("%u %% interval of the peak %s - %s"), c->permille / 10, gib_num(a, sizeof(a), c->lo),
             ml_fmt_gib_s(b, sizeof(b), c->hi));
    add_item(c, NULL, text, 0, false, NULL, ITEM_INTERVAL);
}

static void capacity_item(struct chart *c, char *text, size_t n)
{
    char g[ML_FMT_MAX];
    snprintf(text, n, _("usable capacity %s"), ml_fmt_gib_s(g, sizeof(g), c->capacity));
    add_item(c, NULL, text, 0, false, NULL, ITEM_CAPACITY);
}

static void ledger_summary(struct chart *c, const struct ml_ledger *l)
{
    char d[ML_FMT_MAX], cap[ML_FMT_MAX], h[ML_FMT_MAX];
    snprintf(c->summary, sizeof(c->summary), _("peak %s: device %s of %s - %s, %s %s"), ml_phase_name(l->peak_phase),
             ml_fmt_gib_s(d, sizeof(d), l->device_used), ml_fmt_gib_s(cap, sizeof(cap), l->capacity),
             ml_verdict_name(l->verdict), l->fits ? _("headroom") : _("short by"),
             ml_fmt_gib_s(h, sizeof(h), l->fits ? l->headroom : l->deficit));
}

enum ml_status ml_ledger_svg(const struct ml_ledger *l, const struct ml_ledger_svg_opts *o, struct ml_buf *out)
{
    struct chart *c = calloc(1, sizeof(*c));
    if (!c)
        return ML_ERR_NOMEM;
    int32_t peak_bar = -1;
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!l->phase_active[p])
            continue;
        if (p == (int)l->peak_phase)
            peak_bar = (int32_t)c->n_bars;
        ledger_bar(c, l, (enum ml_phase)p);
    }
    enum ml_status st = ML_ERR_INVALID;
    if (c->n_bars && peak_bar >= 0) {
        c->bars[peak_bar].peak = true;
        c->capacity = l->capacity;
        c->cap_label = o ? o->capacity_label : NULL;
        c->default_title = _("GPU memory by phase, per GPU");
        c->legend_head =
            _("components at their largest in one phase; (reserved): the allocator's cache, (device): outside PyTorch");
        ledger_summary(c, l);
        interval_from(c, o, peak_bar);
        ledger_items(c, l, ML_PH_ALL);
        char cap_text[64], int_text[96];
        if (c->capacity)
            capacity_item(c, cap_text, sizeof(cap_text));
        interval_item(c, int_text, sizeof(int_text));
        st = render(c, o, out);
    }
    free(c);
    return st;
}

/* The log's bar: allocated, PyTorch's cache, the rest of the device in use; the request on top;
 * the device total as its frame. */
static void log_bar(struct chart *c, const struct ml_svg_log *g, char *outside_rule, size_t n)
{
    struct bar *b = &c->bars[c->n_bars++];
    memset(b, 0, sizeof(*b));
    snprintf(b->id, sizeof(b->id), "log-bar");
    b->label = _("the log");
    b->sublabel = g->label;
    uint64_t base = 0;
    if (g->has & ML_SVG_LOG_ALLOCATED) {
        add_seg(b, g->allocated, &log_allocated, _("allocated by PyTorch"), "", NULL, SEG_FILL);
        base = g->allocated;
    }
    if ((g->has & ML_SVG_LOG_RESERVED) && g->reserved > base) {
        add_seg(b, g->reserved - base, &log_cached, _("reserved but unallocated"), "", NULL, SEG_FILL);
        base = g->reserved;
    }
    uint32_t tf = ML_SVG_LOG_TOTAL | ML_SVG_LOG_FREE;
    if ((g->has & tf) == tf && g->total >= g->free && g->total - g->free > base) {
        snprintf(outside_rule, n, "%s", _("total - free - reserved by PyTorch"));
        add_seg(b, g->total - g->free - base, &log_outside, _("outside PyTorch"), outside_rule, NULL, SEG_FILL);
    }
    if (g->has & ML_SVG_LOG_TOTAL)
        b->frame = g->total;
    if ((g->has & ML_SVG_LOG_REQUESTED) && g->requested)
        add_seg(b, g->requested, NULL, _("request"), _("the allocation that failed"), NULL, SEG_REQUEST);
}

static void log_items(struct chart *c, const struct ml_svg_log *g)
{
    const struct bar *b = &c->bars[c->n_bars - 1];
    for (uint32_t i = 0; i < b->n_segs; i++)
        if (b->segs[i].style == SEG_FILL)
            add_item(c, b->segs[i].sw, b->segs[i].name, b->segs[i].bytes, true, NULL, ITEM_SWATCH);
    if (g->has & ML_SVG_LOG_FREE)
        add_item(c, NULL, _("free"), g->free, true, NULL, ITEM_FRAME);
    if (g->has & ML_SVG_LOG_TOTAL)
        add_item(c, NULL, _("device total"), g->total, true, _("(the frame)"), ITEM_FRAME);
    if ((g->has & ML_SVG_LOG_REQUESTED) && g->requested)
        add_item(c, NULL, _("request that failed"), g->requested, true, NULL, ITEM_REQUEST);
}

static void log_summary(struct chart *c, const struct ml_ledger *l, enum ml_phase phase, const struct ml_svg_log *g)
{
    char a[ML_FMT_MAX], r[ML_FMT_MAX], d[ML_FMT_MAX];
    const struct bar *b = &c->bars[c->n_bars - 1];
    int n = snprintf(c->summary, sizeof(c->summary), _("the log: %s in use"), ml_fmt_gib_s(a, sizeof(a), b->total));
    if ((g->has & ML_SVG_LOG_REQUESTED) && n > 0 && (size_t)n < sizeof(c->summary))
        n += snprintf(c->summary + n, sizeof(c->summary) - (size_t)n, _(" + request %s"),
                      ml_fmt_bytes_s(r, sizeof(r), g->requested));
    if (l && n > 0 && (size_t)n < sizeof(c->summary))
        snprintf(c->summary + n, sizeof(c->summary) - (size_t)n, _(" - the ledger's %s: device %s"),
                 ml_phase_name(phase), ml_fmt_gib_s(d, sizeof(d), c->bars[0].total));
}

enum ml_status ml_diagnose_svg(const struct ml_ledger *l, enum ml_phase phase, const struct ml_svg_log *log,
                               const struct ml_ledger_svg_opts *o, struct ml_buf *out)
{
    uint32_t any = ML_SVG_LOG_ALLOCATED | ML_SVG_LOG_RESERVED | ML_SVG_LOG_TOTAL;
    if (!log || !(log->has & any) || (l && ((unsigned)phase >= ML_PHASE_COUNT || !l->phase_active[phase])))
        return ML_ERR_INVALID;
    struct chart *c = calloc(1, sizeof(*c));
    if (!c)
        return ML_ERR_NOMEM;
    const char *ledger_label = _("the ledger");
    c->whisker_bar = -1;
    if (l) {
        ledger_bar(c, l, phase);
        c->bars[0].sublabel = c->bars[0].label;
        c->bars[0].label = ledger_label;
        c->capacity = l->capacity;
        interval_from(c, o, phase == l->peak_phase ? 0 : -1);
    }
    char outside_rule[64], cap_text[64], int_text[96];
    log_bar(c, log, outside_rule, sizeof(outside_rule));
    log_items(c, log);
    if (l)
        ledger_items(c, l, ML_PH(phase));
    if (!c->capacity && (log->has & ML_SVG_LOG_TOTAL))
        c->capacity = log->total;
    c->cap_label = o ? o->capacity_label : NULL;
    c->default_title = l ? _("The out-of-memory message beside the ledger") : _("The out-of-memory message");
    c->legend_head = l ? _("the log's figures, and the ledger's components in that phase") : _("the log's figures");
    log_summary(c, l, phase, log);
    if (c->capacity)
        capacity_item(c, cap_text, sizeof(cap_text));
    interval_item(c, int_text, sizeof(int_text));
    enum ml_status st = render(c, o, out);
    free(c);
    return st;
}

/* ---- the commands' pictures ---------------------------------------------------------------- */

/* The first line of a report, as the picture's subtitle. */
static void first_line(const struct ml_buf *report, char *out, size_t n)
{
    size_t k = strcspn(report->buf, "\n");
    (void)snprintf(out, n, "%.*s", (int)(k < n ? k : n - 1), report->buf);
}

static enum ml_status with_subtitle(struct ml_buf *out, const struct ml_buf *report, const struct ml_cluster *c,
                                    const struct ml_ledger *l)
{
    char sub[256];
    first_line(report, sub, sizeof(sub));
    struct ml_ledger_svg_opts o = {.subtitle = sub, .capacity_label = c->gpu.name};
    /* The training ledger's 80 % interval of the device figure (lib/ledger/interval.c), when it has one. */
    if (l->interval[ML_FIG_DEVICE][1]) {
        o.has_interval = true;
        o.interval_low = l->interval[ML_FIG_DEVICE][0];
        o.interval_high = l->interval[ML_FIG_DEVICE][1];
    }
    return ml_ledger_svg(l, &o, out);
}

enum ml_status ml_render_train_svg(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                                   const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_buf r;
    ml_buf_init(&r, 0);
    ml_render_train_text(&r, m, t, c, l, NULL);
    enum ml_status st = with_subtitle(out, &r, c, l);
    ml_buf_release(&r);
    return st;
}

enum ml_status ml_render_infer_svg(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                                   const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv)
{
    struct ml_buf r;
    ml_buf_init(&r, 0);
    ml_render_infer_text(&r, m, s, c, l, sv, NULL);
    enum ml_status st = with_subtitle(out, &r, c, l);
    ml_buf_release(&r);
    return st;
}

/* The event's figures as the picture takes them: PyTorch's reserved total is allocated +
 * reserved-but-unallocated in the current message format, "reserved in total" in the classic one. */
static void event_log(const struct ml_oom_event *ev, struct ml_svg_log *g)
{
    memset(g, 0, sizeof(*g));
    if (ev->has & ML_OOM_F_ALLOCATED) {
        g->has |= ML_SVG_LOG_ALLOCATED;
        g->allocated = ev->allocated;
    }
    if ((ev->has & ML_OOM_F_ALLOCATED) && (ev->has & ML_OOM_F_RESERVED_UNALLOC)) {
        g->has |= ML_SVG_LOG_RESERVED;
        g->reserved = ev->allocated + ev->reserved_unalloc;
    } else if (ev->has & ML_OOM_F_RESERVED) {
        g->has |= ML_SVG_LOG_RESERVED;
        g->reserved = ev->reserved;
    }
    if (ev->has & ML_OOM_F_FREE) {
        g->has |= ML_SVG_LOG_FREE;
        g->free = ev->free;
    }
    if (ev->has & ML_OOM_F_TOTAL) {
        g->has |= ML_SVG_LOG_TOTAL;
        g->total = ev->total;
    }
    if (ev->has & ML_OOM_F_REQUESTED) {
        g->has |= ML_SVG_LOG_REQUESTED;
        g->requested = ev->requested;
    }
}

enum ml_status ml_render_diagnose_svg(struct ml_buf *out, const struct ml_diag_report *rep)
{
    const struct ml_diagnosis *dg = rep->dg;
    if (!dg || dg->primary < 0 || (uint32_t)dg->primary >= rep->inc->n_events)
        return ML_ERR_INVALID;
    const struct ml_oom_event *ev = &rep->inc->ev[dg->primary];
    struct ml_svg_log g;
    event_log(ev, &g);
    char label[160], sub[200];
    const char *file = ev->file < rep->n_inputs ? rep->inputs[ev->file] : "log";
    if (ev->gpu >= 0)
        (void)snprintf(label, sizeof(label), "%s:%llu, GPU %d", file, (unsigned long long)ev->line, (int)ev->gpu);
    else
        (void)snprintf(label, sizeof(label), "%s:%llu", file, (unsigned long long)ev->line);
    g.label = label;
    /* The message itself, cut to what 800 px hold. */
    size_t n = strlen(ev->text);
    (void)snprintf(sub, sizeof(sub), "%.100s%s", ev->text, n > 100 ? "..." : "");
    struct ml_ledger_svg_opts o = {.subtitle = sub};
    return ml_diagnose_svg(dg->has_ledger ? &dg->ledger : NULL, dg->ledger_phase, &g, &o, out);
}
