/*
 * svg.c - memory over time, one line per GPU, the peak of each marked (our own SVG bytes:
 * integer coordinates, no floating point, no locale, so the same run draws the same file).
 */
#include "memledger/monitor.h"

#include <string.h>

#include "memledger/units.h"

#define W      800u
#define H      360u
#define LEFT   80u
#define RIGHT  24u
#define TOP    48u
#define BOTTOM 44u
#define PW     (W - LEFT - RIGHT)
#define PH     (H - TOP - BOTTOM)

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static void xml_text(struct ml_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': ml_buf_adds(b, "&amp;"); break;
        case '<': ml_buf_adds(b, "&lt;"); break;
        case '>': ml_buf_adds(b, "&gt;"); break;
        case '"': ml_buf_adds(b, "&quot;"); break;
        default:
            if ((unsigned char)*s >= 0x20)
                ml_buf_addc(b, *s);
        }
    }
}

/* Seconds with one decimal, from milliseconds ("12.3 s"). */
static void fmt_secs(struct ml_buf *b, uint64_t ms)
{
    uint64_t ds = (ms + 50) / 100;
    ml_buf_addf(b, "%llu.%llu s", (unsigned long long)(ds / 10), (unsigned long long)(ds % 10));
}

/* Device d's line, its legend entry and its peak, on axes of xmax ms by ymax bytes. */
static void device_line(struct ml_buf *out, const struct ml_watch *w, const struct ml_series *series, uint32_t d,
                        uint64_t xmax, uint64_t ymax, struct ml_buf *lab)
{
    const struct ml_series *s = &series[d];
    const char *col = colors[d % (sizeof(colors) / sizeof(colors[0]))];
    if (s->n) {
        ml_buf_addf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", col);
        for (uint32_t i = 0; i < s->n; i++) {
            uint64_t x = LEFT + s->t_ms[i] * PW / xmax;
            uint64_t yv = s->used[i] > ymax ? ymax : s->used[i];
            uint64_t y = TOP + PH - yv * PH / ymax;
            ml_buf_addf(out, "%s%llu,%llu", i ? " " : "", (unsigned long long)x, (unsigned long long)y);
        }
        ml_buf_adds(out, "\"/>\n");
    }
    const struct ml_watch_dev *wd = &w->dev[d];
    if (d < 8) {
        /* Legend, top left inside the plot. */
        ml_buf_addf(out, "<text x=\"%u\" y=\"%u\" fill=\"%s\">GPU %u", LEFT + 8, TOP + 16 + 14 * d, col, d);
        if (wd->info.name[0]) {
            ml_buf_addc(out, ' ');
            xml_text(out, wd->info.name);
        }
        ml_buf_adds(out, "</text>\n");
    }
    if (!wd->has_peak)
        return;
    uint64_t x = LEFT + (wd->peak_t_ns / 1000000u) * PW / xmax;
    uint64_t yv = wd->peak.used_bytes > ymax ? ymax : wd->peak.used_bytes;
    uint64_t y = TOP + PH - yv * PH / ymax;
    ml_buf_reset(lab);
    ml_buf_addf(lab, "GPU %u peak ", d);
    ml_fmt_gib(lab, wd->peak.used_bytes);
    ml_buf_adds(lab, " at ");
    fmt_secs(lab, wd->peak_t_ns / 1000000u);
    ml_buf_addf(out, "<circle cx=\"%llu\" cy=\"%llu\" r=\"4\" fill=\"%s\"/>\n", (unsigned long long)x,
                (unsigned long long)y, col);
    ml_buf_addf(out, "<text x=\"%llu\" y=\"%llu\" fill=\"%s\"%s>%s</text>\n", (unsigned long long)x,
                (unsigned long long)(y > TOP + 14 ? y - 8 : y + 16), col,
                x > LEFT + PW / 2 ? " text-anchor=\"end\"" : "", lab->buf);
}

enum ml_status ml_watch_svg(const struct ml_watch *w, const struct ml_series *series, const char *title,
                            struct ml_buf *out)
{
    uint64_t tmax = 1, ymax_v = 1;
    for (uint32_t d = 0; d < w->n_dev; d++) {
        const struct ml_series *s = &series[d];
        for (uint32_t i = 0; i < s->n; i++) {
            if (s->t_ms[i] > tmax)
                tmax = s->t_ms[i];
            if (s->used[i] > ymax_v)
                ymax_v = s->used[i];
        }
        if ((w->dev[d].peak.valid & ML_MEM_TOTAL_OK) && w->dev[d].peak.total_bytes > ymax_v)
            ymax_v = w->dev[d].peak.total_bytes;
    }
    /* Y ticks: a step (MiB) giving at most 8 intervals. */
    static const uint64_t ysteps[] = {16,   32,    64,    128,   256,   512,    1024,   2048,   4096,
                                      5120, 10240, 20480, 40960, 51200, 102400, 204800, 512000, 1024000};
    uint64_t ystep = ysteps[sizeof(ysteps) / sizeof(ysteps[0]) - 1] * ML_MIB;
    for (size_t i = 0; i < sizeof(ysteps) / sizeof(ysteps[0]); i++) {
        if (ymax_v <= ysteps[i] * ML_MIB * 8) {
            ystep = ysteps[i] * ML_MIB;
            break;
        }
    }
    uint64_t ymax = (ymax_v + ystep - 1) / ystep * ystep;
    /* X ticks: seconds. */
    static const uint64_t xsteps[] = {100,     200,     500,     1000,     2000,     5000,    10000,
                                      15000,   30000,   60000,   120000,   300000,   600000,  900000,
                                      1800000, 3600000, 7200000, 14400000, 28800000, 86400000};
    uint64_t xstep = xsteps[sizeof(xsteps) / sizeof(xsteps[0]) - 1];
    for (size_t i = 0; i < sizeof(xsteps) / sizeof(xsteps[0]); i++) {
        if (tmax <= xsteps[i] * 10) {
            xstep = xsteps[i];
            break;
        }
    }
    uint64_t xmax = (tmax + xstep - 1) / xstep * xstep;

    ml_buf_addf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"%u\" height=\"%u\" fill=\"#ffffff\"/>\n<text x=\"%u\" y=\"24\" font-size=\"15\">",
                W, H, W, H, W, H, LEFT);
    xml_text(out, title);
    ml_buf_adds(out, "</text>\n");
    struct ml_buf lab;
    ml_buf_init(&lab, 256);
    /* Grid and axes. */
    for (uint64_t v = 0; v <= ymax; v += ystep) {
        uint64_t y = TOP + PH - v * PH / ymax;
        ml_buf_addf(out, "<line x1=\"%u\" y1=\"%llu\" x2=\"%u\" y2=\"%llu\" stroke=\"#dddddd\"/>\n", LEFT,
                    (unsigned long long)y, LEFT + PW, (unsigned long long)y);
        ml_buf_reset(&lab);
        if (ystep >= ML_GIB)
            ml_buf_addf(&lab, "%llu GiB", (unsigned long long)(v / ML_GIB));
        else
            ml_buf_addf(&lab, "%llu MiB", (unsigned long long)(v / ML_MIB));
        ml_buf_addf(out, "<text x=\"%u\" y=\"%llu\" text-anchor=\"end\">%s</text>\n", LEFT - 6,
                    (unsigned long long)(y + 4), lab.buf);
    }
    for (uint64_t t = 0; t <= xmax; t += xstep) {
        uint64_t x = LEFT + t * PW / xmax;
        ml_buf_addf(out, "<line x1=\"%llu\" y1=\"%u\" x2=\"%llu\" y2=\"%u\" stroke=\"#eeeeee\"/>\n",
                    (unsigned long long)x, TOP, (unsigned long long)x, TOP + PH);
        ml_buf_reset(&lab);
        if (xstep >= 60000 && t % 60000 == 0)
            ml_buf_addf(&lab, "%llu min", (unsigned long long)(t / 60000));
        else
            fmt_secs(&lab, t);
        ml_buf_addf(out, "<text x=\"%llu\" y=\"%u\" text-anchor=\"middle\">%s</text>\n", (unsigned long long)x,
                    TOP + PH + 18, lab.buf);
    }
    ml_buf_addf(out, "<rect x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\" fill=\"none\" stroke=\"#444444\"/>\n", LEFT,
                TOP, PW, PH);
    ml_buf_addf(out, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">time since start</text>\n", LEFT + PW / 2, H - 6);
    /* One line per device, then its peak. */
    for (uint32_t d = 0; d < w->n_dev; d++)
        device_line(out, w, series, d, xmax, ymax, &lab);
    ml_buf_release(&lab);
    return ml_buf_adds(out, "</svg>\n");
}
