/*
 * The ledger picture against the facts of its input: the picture is read back as geometry (the
 * GiB axis gives the scale; every segment, bar top and line is measured with it) and compared
 * with the ledger's own figures - hand-written ones for a small made-up ledger, the ledger's
 * phase_allocated / phase_reserved / device_used for real training and serving ledgers - and with
 * the OOM message of the seed case (examples/seed-case/oom.log) as diagnose reads it.
 */
#include "ml_test.h"

#include <math.h>

#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/units.h"

#define GIB ((double)ML_GIB)
#define MIB ((double)ML_MIB)

/* ---- reading the picture back ------------------------------------------------------------ */

/* The value of attribute name in the tag starting at tag (NAN if absent). */
static double attr(const char *tag, const char *name)
{
    const char *end = strchr(tag, '>');
    char key[40];
    snprintf(key, sizeof(key), " %s=\"", name);
    const char *p = strstr(tag, key);
    if (!p || (end && p > end))
        return NAN;
    return strtod(p + strlen(key), NULL);
}

/* The text between <g id="ID"> and its </g> (groups do not nest here), malloc'ed; NULL if none. */
static char *group(const char *svg, const char *id)
{
    char key[64];
    snprintf(key, sizeof(key), "<g id=\"%s\"", id);
    const char *p = strstr(svg, key);
    if (!p)
        return NULL;
    const char *e = strstr(p, "</g>");
    assert_non_null(e);
    size_t n = (size_t)(e - p);
    char *g = malloc(n + 1);
    memcpy(g, p, n);
    g[n] = '\0';
    return g;
}

struct rect {
    double x, y, w, h;
    char title[400];
    char fill[16];
};

/* The <rect>s of a group, in order. */
static int rects(const char *g, struct rect *r, int max)
{
    int n = 0;
    for (const char *p = strstr(g, "<rect"); p && n < max; p = strstr(p + 1, "<rect")) {
        struct rect *q = &r[n++];
        memset(q, 0, sizeof(*q));
        q->x = attr(p, "x");
        q->y = attr(p, "y");
        q->w = attr(p, "width");
        q->h = attr(p, "height");
        const char *f = strstr(p, " fill=\"");
        const char *end = strchr(p, '>');
        if (f && f < end)
            sscanf(f + 7, "%15[^\"]", q->fill);
        const char *t = strstr(p, "<title>");
        const char *next = strstr(p + 1, "<rect");
        if (t && (!next || t < next))
            sscanf(t + 7, "%399[^<]", q->title);
    }
    return n;
}

/* The scale: the y of 0 and pixels per byte, from the axis labels "N GiB" / "N MiB" (their
 * baseline sits 4 px under the grid line). */
struct scale {
    double y0, px_per_byte, top;
};

static struct scale axis_scale(const char *svg)
{
    struct scale s = {NAN, NAN, NAN};
    double vmax = 0, ymax = 0;
    for (const char *p = strstr(svg, "<text "); p; p = strstr(p + 1, "<text ")) {
        if (!strstr(p, "text-anchor=\"end\"") || strstr(p, "text-anchor=\"end\"") > strchr(p, '>'))
            continue;
        const char *gt = strchr(p, '>');
        unsigned long long v;
        char unit[4];
        if (sscanf(gt + 1, "%llu %3[GMi]B<", &v, unit) != 2)
            continue;
        double bytes = (double)v * (unit[0] == 'G' ? GIB : MIB);
        double y = attr(p, "y") - 4.0;
        if (v == 0)
            s.y0 = y;
        if (bytes > vmax) {
            vmax = bytes;
            ymax = y;
        }
    }
    assert_false(isnan(s.y0));
    assert_true(vmax > 0);
    s.px_per_byte = (s.y0 - ymax) / vmax;
    s.top = ymax;
    return s;
}

/* Bytes a length of px pixels stands for. */
static double px_bytes(const struct scale *s, double px)
{
    return px / s->px_per_byte;
}

/* Within a tenth of a pixel (the picture's resolution) plus rounding at both ends. */
static void assert_px(const struct scale *s, double px, double bytes)
{
    double want = bytes * s->px_per_byte;
    if (fabs(px - want) > 0.15)
        fail_msg("%.2f px, want %.2f px (%.4f GiB vs %.4f GiB)", px, want, px_bytes(s, px) / GIB, bytes / GIB);
}

/* Tags balance, attributes are quoted, and character data holds only the five entities. */
static void assert_well_formed(const char *svg)
{
    assert_true(strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44) == 0);
    assert_non_null(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
    char stack[32][24];
    int depth = 0;
    const char *p = strchr(svg + 2, '<');
    for (; p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        assert_non_null(end);
        for (const char *q = p + 1; q < end; q++)
            assert_true(*q != '<');
        char name[24] = "";
        if (p[1] == '/') {
            sscanf(p + 2, "%23[a-zA-Z]", name);
            assert_true(depth > 0);
            assert_string_equal(stack[--depth], name);
        } else {
            sscanf(p + 1, "%23[a-zA-Z]", name);
            assert_true(name[0] != '\0');
            if (end[-1] != '/') {
                assert_true(depth < 32);
                strcpy(stack[depth++], name);
            }
        }
        for (const char *q = end + 1; *q && *q != '<'; q++)
            if (*q == '&')
                assert_true(!strncmp(q, "&amp;", 5) || !strncmp(q, "&lt;", 4) || !strncmp(q, "&gt;", 4) ||
                            !strncmp(q, "&quot;", 6) || !strncmp(q, "&apos;", 6));
    }
    assert_int_equal(depth, 0);
}

/* What renders alike in Chromium and Firefox: SVG 1.1 presentation attributes only. */
static void assert_plain_svg(const char *svg)
{
    static const char *const banned[] = {"<style", "style=",  "var(", "foreignObject",     "filter",
                                         "class=", "<script", "href", "dominant-baseline", "@font-face"};
    for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
        if (strstr(svg, banned[i]))
            fail_msg("the picture uses %s", banned[i]);
    /* Latin fonts first, then the CJK ones a zh_CN picture falls back to, then the generic family. */
    assert_non_null(strstr(svg, "font-family=\"DejaVu Sans, Liberation Sans, Arial, Helvetica, Noto Sans CJK SC, "
                                "Source Han Sans SC, PingFang SC, Microsoft YaHei, sans-serif\""));
    assert_non_null(strstr(svg, "width=\"800\""));
    for (const char *p = strstr(svg, "<text "); p; p = strstr(p + 1, "<text ")) {
        const char *a = strstr(p, "text-anchor=\"");
        assert_true(a && a < strchr(p, '>'));
    }
}

static char *draw(const struct ml_ledger *l, const struct ml_ledger_svg_opts *o)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    assert_int_equal(ml_ledger_svg(l, o, &b), ML_OK);
    assert_well_formed(b.buf);
    assert_plain_svg(b.buf);
    return ml_buf_detach(&b, NULL);
}

/* ---- a made-up ledger, its figures written by hand ---------------------------------------- */

static void entry(struct ml_ledger *l, enum ml_comp id, uint64_t bytes, uint32_t phases, enum ml_figure f)
{
    struct ml_entry *e = &l->e[l->n++];
    memset(e, 0, sizeof(*e));
    e->id = id;
    e->bytes = bytes;
    e->phases = phases;
    e->figure = f;
    snprintf(e->rule, sizeof(e->rule), "rule of %s <&>", ml_comp_name(id));
    e->source = "test";
}

/* Load, forward and backward on a 16 GiB card:
 *   weights 6 GiB (all), activations 2 GiB (fwd, bwd), backward working set 1 GiB (bwd),
 *   allocator reserve 1 GiB (all, reserved), CUDA context 0.5 GiB (all, device).
 * load 6 / 7 / 7.5, forward 8 / 9 / 9.5, backward 9 / 10 / 10.5 GiB (allocated / reserved / device). */
static void made_up(struct ml_ledger *l)
{
    memset(l, 0, sizeof(*l));
    uint32_t act = ML_PH(ML_PHASE_FORWARD) | ML_PH(ML_PHASE_BACKWARD);
    entry(l, ML_C_WEIGHTS_FROZEN, 6 * ML_GIB, ML_PH_ALL, ML_FIG_ALLOCATED);
    entry(l, ML_C_ACTIVATIONS, 2 * ML_GIB, act, ML_FIG_ALLOCATED);
    entry(l, ML_C_BACKWARD_WORKING, ML_GIB, ML_PH(ML_PHASE_BACKWARD), ML_FIG_ALLOCATED);
    entry(l, ML_C_CUDA_CONTEXT, ML_GIB / 2, ML_PH_ALL, ML_FIG_DEVICE); /* before the reserve on purpose */
    entry(l, ML_C_ALLOCATOR, ML_GIB, ML_PH_ALL, ML_FIG_RESERVED);
    l->phase_active[ML_PHASE_LOAD] = l->phase_active[ML_PHASE_FORWARD] = l->phase_active[ML_PHASE_BACKWARD] = true;
    l->phase_allocated[ML_PHASE_LOAD] = 6 * ML_GIB;
    l->phase_allocated[ML_PHASE_FORWARD] = 8 * ML_GIB;
    l->phase_allocated[ML_PHASE_BACKWARD] = 9 * ML_GIB;
    l->phase_reserved[ML_PHASE_LOAD] = 7 * ML_GIB;
    l->phase_reserved[ML_PHASE_FORWARD] = 9 * ML_GIB;
    l->phase_reserved[ML_PHASE_BACKWARD] = 10 * ML_GIB;
    l->peak_phase = ML_PHASE_BACKWARD;
    l->peak_allocated = 9 * ML_GIB;
    l->peak_reserved = 10 * ML_GIB;
    l->device_used = 10 * ML_GIB + ML_GIB / 2;
    l->capacity = 16 * ML_GIB;
    l->headroom = l->capacity - l->device_used;
    l->fits = true;
    l->verdict = ML_FITS;
}

static double bar_sum(const char *svg, const char *phase, const struct scale *s, int *n_out)
{
    char id[40];
    snprintf(id, sizeof(id), "bar-%s", phase);
    char *g = group(svg, id);
    if (!g)
        fail_msg("no bar for %s", phase);
    struct rect r[48];
    int n = rects(g, r, 48);
    double sum = 0, prev_top = s->y0;
    int segs = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].title[0])
            continue; /* the peak's outline */
        /* Stacked bottom up, edge to edge. */
        assert_true(fabs(r[i].y + r[i].h - prev_top) < 0.01);
        prev_top = r[i].y;
        sum += r[i].h;
        segs++;
    }
    free(g);
    if (n_out)
        *n_out = segs;
    return sum;
}

static void test_made_up(void **state)
{
    (void)state;
    struct ml_ledger l;
    made_up(&l);
    struct ml_ledger_svg_opts o = {.title = "made up", .capacity_label = "16G"};
    char *svg = draw(&l, &o);
    struct scale s = axis_scale(svg);
    int n = 0;
    assert_px(&s, bar_sum(svg, "load", &s, &n), 7.5 * GIB);
    assert_int_equal(n, 3);
    assert_px(&s, bar_sum(svg, "forward", &s, &n), 9.5 * GIB);
    assert_int_equal(n, 4);
    assert_px(&s, bar_sum(svg, "backward", &s, &n), 10.5 * GIB);
    assert_int_equal(n, 5);
    /* Only the phases the run has. */
    char *g = group(svg, "bar-loss");
    assert_null(g);
    /* Each segment at its own bytes; the reserve above the allocated ones, the context on top. */
    g = group(svg, "bar-backward");
    struct rect r[16];
    n = rects(g, r, 16);
    static const struct {
        const char *name;
        double gib;
    } want[] = {{"weights_frozen", 6},
                {"activations", 2},
                {"backward_working_set", 1},
                {"allocator_reserve", 1},
                {"cuda_context", 0.5}};
    for (int i = 0; i < 5; i++) {
        assert_true(strncmp(r[i].title, want[i].name, strlen(want[i].name)) == 0);
        assert_px(&s, r[i].h, want[i].gib * GIB);
    }
    /* The peak's outline in the backward bar, as tall as the device figure. */
    assert_non_null(strstr(g, "id=\"peak\""));
    assert_px(&s, r[5].h, 10.5 * GIB);
    free(g);
    assert_null(strstr(svg + (strstr(svg, "id=\"peak\"") - svg) + 1, "id=\"peak\""));
    /* The capacity line at 16 GiB. */
    const char *cap = strstr(svg, "<line id=\"capacity\"");
    assert_non_null(cap);
    assert_px(&s, s.y0 - attr(cap, "y1"), 16 * GIB);
    assert_true(attr(cap, "y1") == attr(cap, "y2"));
    /* Labels: phases, the peak, the legend with bytes, the figures of the summary. */
    static const char *const text[] = {">load</text>",
                                       ">forward</text>",
                                       ">backward</text>",
                                       ">peak</text>",
                                       "weights_frozen 6.00 GiB<",
                                       "activations 2.00 GiB<",
                                       "allocator_reserve 1.00 GiB (reserved)<",
                                       "cuda_context 512.00 MiB (device)<",
                                       "usable capacity 16.00 GiB<",
                                       ">(16G)</text>",
                                       ">10.50 GiB</text>",
                                       ">9.50 GiB</text>",
                                       ">7.50 GiB</text>",
                                       "peak backward: device 10.50 GiB of 16.00 GiB - fits, headroom 5.50 GiB",
                                       ">made up</text>",
                                       "rule of weights_frozen &lt;&amp;&gt;"};
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        if (!strstr(svg, text[i]))
            fail_msg("missing %s", text[i]);
    /* No interval unless one is given. */
    assert_null(strstr(svg, "id=\"interval\""));
    /* The same ledger draws the same bytes. */
    char *again = draw(&l, &o);
    assert_string_equal(svg, again);
    free(again);
    free(svg);
}

static void test_interval(void **state)
{
    (void)state;
    struct ml_ledger l;
    made_up(&l);
    /* An interval reaching above the capacity stretches the axis to hold it. */
    struct ml_ledger_svg_opts o = {.has_interval = true, .interval_low = 9 * ML_GIB, .interval_high = 20 * ML_GIB};
    char *svg = draw(&l, &o);
    struct scale s = axis_scale(svg);
    char *g = group(svg, "interval");
    assert_non_null(g);
    const char *v = strstr(g, "<line");
    assert_true(attr(v, "x1") == attr(v, "x2"));
    assert_px(&s, s.y0 - attr(v, "y1"), 9 * GIB);
    assert_px(&s, s.y0 - attr(v, "y2"), 20 * GIB);
    assert_true(attr(v, "y2") >= s.top - 0.01);
    /* Beside the peak bar, not over it. */
    char *pb = group(svg, "bar-backward");
    struct rect r[16];
    int n = rects(pb, r, 16);
    assert_true(attr(v, "x1") > r[n - 1].x + r[n - 1].w);
    free(pb);
    free(g);
    assert_non_null(strstr(svg, "80 % interval of the peak 9.00 - 20.00 GiB"));
    free(svg);
    /* A reversed interval is not drawn. */
    o.interval_low = 21 * ML_GIB;
    svg = draw(&l, &o);
    assert_null(strstr(svg, "id=\"interval\""));
    free(svg);
}

static void test_every_component(void **state)
{
    (void)state;
    /* One bar with every component: each drawn, each in its own colour. */
    struct ml_ledger l;
    memset(&l, 0, sizeof(l));
    for (int c = 0; c < ML_C_COUNT; c++)
        entry(&l, (enum ml_comp)c, ML_GIB / 4, ML_PH(ML_PHASE_LOAD), ML_FIG_ALLOCATED);
    l.phase_active[ML_PHASE_LOAD] = true;
    l.peak_phase = ML_PHASE_LOAD;
    l.capacity = 80 * ML_GIB;
    char *svg = draw(&l, NULL);
    char *g = group(svg, "bar-load");
    struct rect r[48];
    int n = rects(g, r, 48);
    assert_int_equal(n, ML_C_COUNT + 1);
    for (int i = 0; i < ML_C_COUNT; i++) {
        assert_true(r[i].fill[0] == '#' && strlen(r[i].fill) == 7);
        assert_true(strncmp(r[i].title, ml_comp_name((enum ml_comp)i), strlen(ml_comp_name((enum ml_comp)i))) == 0);
        for (int j = 0; j < i; j++)
            if (!strcmp(r[i].fill, r[j].fill))
                fail_msg("%s and %s share %s", ml_comp_name((enum ml_comp)i), ml_comp_name((enum ml_comp)j), r[i].fill);
    }
    free(g);
    free(svg);
}

/* ---- real ledgers -------------------------------------------------------------------------- */

static struct ml_cluster gpus(const char *name, uint32_t n)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve(name, &c.gpu, &d), ML_OK);
    c.gpus_per_node = n;
    c.nodes = 1;
    return c;
}

/* Every active phase has a bar; its allocated part ends at phase_allocated, its reserved part at
 * phase_reserved; the peak's bar is as tall as device_used; the capacity line at capacity. */
static void check_real(const struct ml_ledger *l)
{
    char *svg = draw(l, NULL);
    struct scale s = axis_scale(svg);
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        char id[40];
        snprintf(id, sizeof(id), "bar-%s", ml_phase_name((enum ml_phase)p));
        char *g = group(svg, id);
        assert_int_equal(g != NULL, l->phase_active[p]);
        if (!g)
            continue;
        struct rect r[48];
        int n = rects(g, r, 48);
        double alloc = 0, reserved = 0, all = 0;
        for (int i = 0; i < n; i++) {
            if (!r[i].title[0])
                continue;
            all += r[i].h;
            if (strstr(r[i].title, "(allocated)"))
                alloc += r[i].h;
            if (!strstr(r[i].title, "(device)"))
                reserved += r[i].h;
        }
        assert_px(&s, alloc, (double)l->phase_allocated[p]);
        assert_px(&s, reserved, (double)l->phase_reserved[p]);
        if (p == (int)l->peak_phase) {
            assert_px(&s, all, (double)l->device_used);
            assert_non_null(strstr(g, "id=\"peak\""));
        } else {
            assert_null(strstr(g, "id=\"peak\""));
        }
        free(g);
    }
    const char *cap = strstr(svg, "<line id=\"capacity\"");
    assert_px(&s, s.y0 - attr(cap, "y1"), (double)l->capacity);
    free(svg);
}

static void test_train_ledger(void **state)
{
    (void)state;
    size_t len = 0;
    char *j = ml_test_slurp("tests/fixtures/tiny-llama.json", &len);
    assert_non_null(j);
    struct ml_arch arch;
    struct ml_inventory inv;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_arch_from_json(j, len, "tiny", &arch, &d), ML_OK);
    free(j);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    struct ml_train t;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    t.micro_batch = 4;
    t.seq_len = 512;
    struct ml_cluster c = gpus("a100-80g", 1);
    static struct ml_ledger l;
    assert_int_equal(ml_ledger_train(&arch, &inv, &t, &c, NULL, &l, &d), ML_OK);
    check_real(&l);
}

static void test_serving_ledger(void **state)
{
    (void)state;
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find("llama-3.1-8b");
    assert_non_null(e);
    static struct ml_arch arch;
    static struct ml_inventory inv;
    assert_int_equal(ml_catalog_arch(e, &arch, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    struct ml_infer s;
    static struct ml_ledger l;
    static struct ml_serve sv;
    struct ml_cluster c = gpus("a100-80g", 1);
    ml_infer_defaults(&s);
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &l, &sv, &d), ML_OK);
    check_real(&l); /* generate() */
    s.engine = ML_ENGINE_VLLM;
    assert_int_equal(ml_ledger_infer(&arch, &inv, &s, &c, &l, &sv, &d), ML_OK);
    check_real(&l); /* a serving engine */
}

/* ---- diagnose's picture: the seed case's OOM message beside the ledger --------------------- */

/* examples/seed-case/oom.log:14: "GPU 1 has a total capacity of 15.98 GiB of which 0 bytes is
 * free. Of the allocated memory 14.81 GiB is allocated by PyTorch, and 571.62 MiB is reserved by
 * PyTorch but unallocated", "Tried to allocate 36.00 MiB". */
static struct ml_svg_log seed_log(void)
{
    struct ml_svg_log g;
    memset(&g, 0, sizeof(g));
    g.has = ML_SVG_LOG_ALLOCATED | ML_SVG_LOG_RESERVED | ML_SVG_LOG_FREE | ML_SVG_LOG_REQUESTED | ML_SVG_LOG_TOTAL;
    assert_int_equal(ml_size_parse("15.98 GiB", &g.total, NULL, NULL), ML_OK);
    assert_int_equal(ml_size_parse("14.81 GiB", &g.allocated, NULL, NULL), ML_OK);
    uint64_t cached;
    assert_int_equal(ml_size_parse("571.62 MiB", &cached, NULL, NULL), ML_OK);
    g.reserved = g.allocated + cached;
    assert_int_equal(ml_size_parse("36 MiB", &g.requested, NULL, NULL), ML_OK);
    g.free = 0;
    g.label = "oom.log:14, GPU 1";
    return g;
}

static void test_diagnose(void **state)
{
    (void)state;
    struct ml_ledger l;
    made_up(&l);
    struct ml_svg_log g = seed_log();
    struct ml_buf b;
    ml_buf_init(&b, 0);
    assert_int_equal(ml_diagnose_svg(&l, ML_PHASE_FORWARD, &g, NULL, &b), ML_OK);
    const char *svg = b.buf;
    assert_well_formed(svg);
    assert_plain_svg(svg);
    struct scale s = axis_scale(svg);
    /* The ledger's bar for the phase asked for, and only that one. */
    assert_px(&s, bar_sum(svg, "forward", &s, NULL), 9.5 * GIB);
    char *o = group(svg, "bar-backward");
    assert_null(o);
    /* The log's bar: allocated, PyTorch's cache, outside PyTorch up to total - free; the frame
     * at the total; the request on top, above the capacity line. */
    char *lg = group(svg, "log-bar");
    assert_non_null(lg);
    struct rect r[8];
    int n = rects(lg, r, 8);
    assert_int_equal(n, 5);
    assert_px(&s, r[0].h, (double)g.total); /* the frame */
    assert_px(&s, r[1].h, 14.81 * GIB);
    assert_px(&s, r[2].h, 571.62 * MIB);
    assert_px(&s, r[3].h, (double)(g.total - g.reserved));
    assert_px(&s, r[4].h, 36 * MIB);
    assert_true(fabs(r[4].y + r[4].h - r[0].y) < 0.01);
    free(lg);
    /* diagnose's own text for this log: "outside PyTorch on the device: 626.46 MiB". */
    static const char *const text[] = {"allocated by PyTorch 14.81 GiB<",
                                       "reserved but unallocated 571.62 MiB<",
                                       "outside PyTorch 626.46 MiB<",
                                       "free 0 B<",
                                       "request that failed 36.00 MiB<",
                                       ">oom.log:14, GPU 1</text>",
                                       ">the ledger</text>",
                                       ">forward</text>",
                                       "the log: 15.98 GiB in use + request 36.00 MiB"};
    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
        if (!strstr(svg, text[i]))
            fail_msg("missing %s", text[i]);
    ml_buf_release(&b);

    /* Without a ledger: the log alone, its total as the capacity. */
    assert_int_equal(ml_diagnose_svg(NULL, ML_PHASE_COUNT, &g, NULL, &b), ML_OK);
    assert_well_formed(b.buf);
    s = axis_scale(b.buf);
    assert_null(strstr(b.buf, "<g id=\"bar-"));
    assert_px(&s, s.y0 - attr(strstr(b.buf, "<line id=\"capacity\""), "y1"), (double)g.total);
    ml_buf_release(&b);

    /* Nothing to draw, or a phase the run does not have. */
    struct ml_svg_log none = {0};
    assert_int_equal(ml_diagnose_svg(&l, ML_PHASE_FORWARD, &none, NULL, &b), ML_ERR_INVALID);
    assert_int_equal(ml_diagnose_svg(&l, ML_PHASE_LOSS, &g, NULL, &b), ML_ERR_INVALID);
    assert_int_equal(b.len, 0);
}

/* ---- bad input ------------------------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    (void)state;
    struct ml_ledger l;
    made_up(&l);
    struct ml_buf b;
    /* A buffer too small: an error, and no half picture. */
    ml_buf_init(&b, 600);
    assert_int_equal(ml_buf_adds(&b, "kept"), ML_OK);
    assert_int_equal(ml_ledger_svg(&l, NULL, &b), ML_ERR_TOOBIG);
    assert_string_equal(b.buf, "kept");
    ml_buf_release(&b);
    /* Figures no GPU has: refused, not wrapped around. */
    ml_buf_init(&b, 0);
    l.e[0].bytes = UINT64_MAX / 2;
    l.e[1].bytes = UINT64_MAX / 2;
    assert_int_equal(ml_ledger_svg(&l, NULL, &b), ML_ERR_INVALID);
    assert_int_equal(b.len, 0);
    /* No active phase. */
    made_up(&l);
    memset(l.phase_active, 0, sizeof(l.phase_active));
    assert_int_equal(ml_ledger_svg(&l, NULL, &b), ML_ERR_INVALID);
    /* Text from the user's files is escaped and invalid UTF-8 dropped. */
    made_up(&l);
    struct ml_ledger_svg_opts o = {.title = "a<b & \"c\" \xff\xfe ok \xe4\xb8\xad", .subtitle = "\x01x"};
    char *svg = draw(&l, &o);
    assert_non_null(strstr(svg, ">a&lt;b &amp; &quot;c&quot;  ok \xe4\xb8\xad</text>"));
    assert_non_null(strstr(svg, ">x</text>"));
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_made_up),         cmocka_unit_test(test_interval),
        cmocka_unit_test(test_every_component), cmocka_unit_test(test_train_ledger),
        cmocka_unit_test(test_serving_ledger),  cmocka_unit_test(test_diagnose),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
