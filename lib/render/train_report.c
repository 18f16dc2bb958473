/*
 * train_report.c - memledger train's report: the ledger of a training run as text, Markdown and
 * JSON (docs/cli/train.md has the keys).
 */
#include "memledger/report.h"

#include <stdio.h>
#include <string.h>

#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/render.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

static void phases_str(uint32_t ph, const bool *active, char *out, size_t n)
{
    out[0] = '\0';
    uint32_t act = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (active[p])
            act |= ML_PH(p);
    if ((ph & act) == act) {
        (void)snprintf(out, n, "%s", _("all"));
        return;
    }
    if ((ph & act) == (act & ~ML_PH(ML_PHASE_LOAD))) {
        (void)snprintf(out, n, "%s", _("all but load"));
        return;
    }
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!(ph & ML_PH(p)) || !active[p])
            continue;
        size_t l = strlen(out);
        (void)snprintf(out + l, n - l, "%s%s", l ? "," : "", ml_phase_name((enum ml_phase)p));
    }
}

static const char *phase_story(enum ml_phase p)
{
    switch (p) {
    case ML_PHASE_LOAD: return _("model load and optimizer init");
    case ML_PHASE_FORWARD: return _("end of the forward pass");
    case ML_PHASE_LOSS: return _("the forward -> backward turn: all saved activations + logits and loss");
    case ML_PHASE_BACKWARD: return _("backward pass");
    case ML_PHASE_OPTIMIZER_STEP: return _("optimizer step");
    case ML_PHASE_CHECKPOINT_SAVE: return _("checkpoint save");
    case ML_PHASE_AFTER_SAVE: return _("the first step after a checkpoint save (cold allocator cache)");
    case ML_PHASE_EVAL: return _("evaluation");
    case ML_PHASE_GENERATE: return _("generation (prefill and decoding)");
    case ML_PHASE_SERVING: return _("serving at steady state");
    case ML_PHASE_COUNT: break;
    }
    return "";
}

/* The FSDP sharding strategy as the header names it. */
static const char *fsdp_name(enum ml_fsdp_mode f)
{
    return f == ML_FSDP_FULL_SHARD ? "full_shard" : f == ML_FSDP_SHARD_GRAD_OP ? "shard_grad_op" : "hybrid_shard";
}

/* Setting k of t as the header shows it ("b=8", "grad-ckpt on"). */
static void header_value(const struct ml_train *t, enum ml_tracked k, char *v, size_t n)
{
    switch (k) {
    case ML_TK_METHOD: (void)snprintf(v, n, "%s", ml_method_name(t->method)); break;
    case ML_TK_RANK: (void)snprintf(v, n, "r=%llu", (unsigned long long)t->lora_rank); break;
    case ML_TK_LORA_TARGET: {
        char names[200];
        ml_tracked_value(t, k, names, sizeof(names));
        (void)snprintf(v, n, "lora_target %s", names);
        break;
    }
    case ML_TK_BATCH: (void)snprintf(v, n, "b=%llu", (unsigned long long)t->micro_batch); break;
    case ML_TK_SEQ: (void)snprintf(v, n, "s=%llu", (unsigned long long)t->seq_len); break;
    case ML_TK_GA: (void)snprintf(v, n, "GA=%llu", (unsigned long long)t->grad_accum); break;
    case ML_TK_DTYPE: (void)snprintf(v, n, "%s", ml_precision_name(t->precision)); break;
    case ML_TK_ATTN: (void)snprintf(v, n, _("%s attention"), ml_attn_name(t->attn)); break;
    case ML_TK_GC: (void)snprintf(v, n, _("grad-ckpt %s"), ml_grad_ckpt_name(t->grad_ckpt)); break;
    case ML_TK_OPTIM: (void)snprintf(v, n, "%s", ml_optim_name(t->optim)); break;
    case ML_TK_FSDP: (void)snprintf(v, n, "FSDP%u %s", t->fsdp_version, fsdp_name(t->fsdp)); break;
    default: v[0] = '\0'; break;
    }
}

/* The header's values no input set, grouped by whose default each is (ml_train_default_owner):
 * "defaults, set by no input: TrainingArguments b=8 GA=1 adamw_torch_fused · LLaMA-Factory s=2048". */
static void defaults_line(struct ml_buf *out, const struct ml_train *t)
{
    static const enum ml_tracked shown[] = {ML_TK_METHOD, ML_TK_RANK,  ML_TK_LORA_TARGET, ML_TK_BATCH,
                                            ML_TK_SEQ,    ML_TK_GA,    ML_TK_DTYPE,       ML_TK_ATTN,
                                            ML_TK_GC,     ML_TK_OPTIM, ML_TK_FSDP};
    enum { N = sizeof(shown) / sizeof(shown[0]) };
    bool lora = t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA;
    const char *owner[N];
    for (size_t i = 0; i < N; i++) {
        enum ml_tracked k = shown[i];
        /* Sharding only where a default turned it on (torchtune on several GPUs), not "none". */
        bool said = (t->defaulted >> k) & 1u && (lora || (k != ML_TK_RANK && k != ML_TK_LORA_TARGET)) &&
                    (k != ML_TK_FSDP || t->fsdp != ML_FSDP_NONE);
        owner[i] = said ? ml_train_default_owner_of(t, k) : NULL;
    }
    bool any = false;
    for (size_t i = 0; i < N; i++) {
        if (!owner[i])
            continue;
        bool first_of_owner = true;
        for (size_t j = 0; j < i; j++)
            first_of_owner &= !owner[j] || strcmp(owner[j], owner[i]);
        if (!first_of_owner)
            continue;
        ml_buf_adds(out, any ? " · " : _("  defaults, set by no input:"));
        ml_buf_addf(out, "%s%s", any ? "" : " ", owner[i]);
        any = true;
        for (size_t j = i; j < N; j++) {
            if (!owner[j] || strcmp(owner[j], owner[i]))
                continue;
            char v[240];
            header_value(t, shown[j], v, sizeof(v));
            ml_buf_addf(out, " %s", v);
        }
    }
    if (any)
        ml_buf_adds(out, "\n");
}

static void describe_run(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                         const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(out, "%s", m->name);
    if (m->hub_id[0])
        ml_buf_addf(out, " (%s)", m->hub_id);
    if (t->stage != ML_STAGE_SFT)
        ml_buf_addf(out, " · %s", ml_stage_name(t->stage));
    ml_buf_addf(out, " · %s", ml_method_name(t->method));
    if (t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA)
        ml_buf_addf(out, " r=%llu", (unsigned long long)t->lora_rank);
    if (t->method == ML_METHOD_QLORA)
        ml_buf_addf(out, " %u-bit", t->quant_bits ? t->quant_bits : 4);
    if (t->deepspeed)
        ml_buf_addf(out, " · DeepSpeed ZeRO-%u%s%s%s", t->zero.stage,
                    t->zero.offload_optimizer ? _(" +offload optimizer") : "",
                    t->zero.offload_param ? _(" +offload params") : "", t->tp_size > 1 ? " +AutoTP" : "");
    else if (t->fsdp != ML_FSDP_NONE)
        ml_buf_addf(out, " · FSDP%u %s", t->fsdp_version, fsdp_name(t->fsdp));
    else if (l->world > 1)
        ml_buf_adds(out, " · DDP");
    if (t->deepspeed && t->tp_size > 1)
        ml_buf_addf(out, " tp=%u", t->tp_size);
    if (t->cp_size > 1)
        ml_buf_addf(out, " · context parallel %u", t->cp_size);
    ml_set_gib(&b, c->gpu.capacity_bytes);
    ml_buf_addf(out, _(" · %u x %s (usable %s)"), l->world, c->gpu.name, b.buf);
    ml_buf_addf(out, _("\n  %s · b=%llu s=%llu GA=%llu · %s · %s attention · grad-ckpt %s · %s · %s\n"),
                t->trainer == ML_TRAINER_MS_SWIFT ? "ms-swift" : ml_framework_name(t->framework),
                (unsigned long long)l->micro_batch, (unsigned long long)l->seq_len, (unsigned long long)t->grad_accum,
                ml_precision_name(t->precision), ml_attn_name(t->attn), ml_grad_ckpt_name(t->grad_ckpt),
                ml_optim_name(t->optim), t->expandable_segments ? _("expandable segments") : _("default allocator"));
    defaults_line(out, t);
    struct ml_buf p;
    ml_buf_init(&p, 64);
    ml_fmt_count(&p, l->params);
    ml_buf_addf(out, _("  parameters %s"), p.buf);
    ml_buf_reset(&p);
    ml_fmt_count(&p, l->trainable);
    ml_buf_addf(out, _(" · trainable %s ("), p.buf);
    ml_buf_reset(&p);
    ml_fmt_percent(&p, l->trainable, l->params);
    ml_buf_addf(out, "%s)\n", p.buf);
    ml_buf_release(&p);
    ml_buf_release(&b);
}

/* The component table, the phases, the peak and what is largest there. */
static void components_and_peak(struct ml_buf *out, const struct ml_ledger *l, const struct ml_layout *lay)
{
    struct ml_table tb;
    ml_table_init(&tb, 5);
    tb.right[2] = true;
    tb.flex = 1;       /* the rule */
    tb.wrap[3] = true; /* live in: a list of phases */
    tb.width = lay ? lay->width : 0;
    const char *hdr[5] = {_("component"), _("rule"), _("GiB"), _("live in"), _("figure")};
    ml_table_row(&tb, hdr);
    ml_table_rule(&tb);
    struct ml_buf b;
    ml_buf_init(&b, 64);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        char ph[160];
        phases_str(e->phases, l->phase_active, ph, sizeof(ph));
        ml_set_gib(&b, e->bytes);
        const char *row[5] = {ml_comp_name(e->id), e->rule, b.buf, ph,
                              e->figure == ML_FIG_ALLOCATED ? "" : ml_figure_name(e->figure)};
        ml_table_row(&tb, row);
    }
    (void)ml_table_render(&tb, out, 0);
    ml_table_release(&tb);

    ml_buf_adds(out, _("\nper phase (allocated / reserved GiB):"));
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!l->phase_active[p])
            continue;
        ml_set_gib(&b, l->phase_allocated[p]);
        ml_buf_addf(out, "%s %s %s", p ? " ·" : "", ml_phase_name((enum ml_phase)p), b.buf);
        ml_set_gib(&b, l->phase_reserved[p]);
        ml_buf_addf(out, "/%s", b.buf);
    }
    ml_buf_reset(&b);
    ml_buf_add_sgr(&b, lay, ML_SGR_BOLD, ml_phase_name(l->peak_phase));
    ml_buf_addf(out, _("\n\npeak: %s — %s\n"), b.buf, phase_story(l->peak_phase));
    /* The top contributors at the peak. */
    const struct ml_entry *top[3] = {NULL, NULL, NULL};
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        if (e->figure != ML_FIG_ALLOCATED || !(e->phases & ML_PH(l->peak_phase)))
            continue;
        for (int k = 0; k < 3; k++) {
            if (!top[k] || e->bytes > top[k]->bytes) {
                for (int j = 2; j > k; j--)
                    top[j] = top[j - 1];
                top[k] = e;
                break;
            }
        }
    }
    ml_buf_adds(out, _("  largest there:"));
    for (int k = 0; k < 3 && top[k]; k++) {
        ml_set_gib(&b, top[k]->bytes);
        ml_buf_addf(out, "%s %s %s", k ? "," : "", ml_comp_name(top[k]->id), b.buf);
    }
    ml_buf_adds(out, "\n");
    ml_buf_release(&b);
}

/* Bytes in GiB to one decimal, "14.6" (integer arithmetic, rounded). */
static void gib_tenths(char *dst, size_t n, uint64_t v)
{
    unsigned long long t =
        (unsigned long long)((v / 1073741824ull) * 10 + ((v % 1073741824ull) * 10 + 536870912ull) / 1073741824ull);
    (void)snprintf(dst, n, "%llu.%llu", t / 10, t % 10);
}

/* An interval, "14.6–15.9". */
static void interval_text(char *dst, size_t n, const uint64_t iv[2])
{
    char lo[24], hi[24];
    gib_tenths(lo, sizeof(lo), iv[0]);
    gib_tenths(hi, sizeof(hi), iv[1]);
    (void)snprintf(dst, n, "%s\u2013%s", lo, hi);
}

/* The verdict line, with what the interval says (docs/cli/train.md, "The interval"). */
static void verdict_line(struct ml_buf *out, const struct ml_ledger *l, const struct ml_layout *lay)
{
    char end[24];
    const char *word = l->verdict == ML_FITS ? _("fits") : l->verdict == ML_TIGHT ? _("tight") : _("does not fit");
    struct ml_buf vb;
    ml_buf_init(&vb, 0);
    ml_buf_add_sgr(&vb, lay, ml_verdict_sgr(l->verdict), word);
    ml_buf_addf(out, _("verdict: %s\n"), vb.buf);
    ml_buf_release(&vb);
    if (l->verdict == ML_TIGHT) {
        gib_tenths(end, sizeof(end), l->interval[ML_FIG_DEVICE][1]);
        ml_buf_addf(out,
                    _("  the estimate fits, but the high end of its 80%% interval (%s GiB on the device) "
                      "leaves less than 5%% of the card free\n"),
                    end);
    } else if (l->verdict != ML_FITS && l->may_fit) {
        gib_tenths(end, sizeof(end), l->interval[ML_FIG_DEVICE][0]);
        ml_buf_addf(out,
                    _("  may fit: the low end of the 80%% interval (%s GiB on the device) is within the "
                      "capacity\n"),
                    end);
    }
}

/* What removes a part of the allocator's reserve, by the docs/ledger.md row its source cites (the
 * user reads the section's name, not the row's); the rest of the reserve (a share of the peak)
 * shrinks with expandable segments (docs/ledger.md, allocator_reserve). */
static const struct {
    const char *row;
    int fw; /* the framework whose settings the text names; -1: the HF Trainer family (any other) */
    const char *removes;
} reserve_removed_by[] = {
    {"docs/ledger.md R2", -1,
     N_("packing, fixed_length: true, torch_empty_cache_steps or --expandable-segments remove it "
        "(docs/ledger.md, Framework terms)")},
    /* torchtune has neither fixed_length nor torch_empty_cache_steps: a packed dataset (its
     * dataset.packed) or expandable segments (docs/ledger.md R2b) */
    {"docs/ledger.md R2", ML_FW_TORCHTUNE,
     N_("a packed dataset (dataset.packed: True) or --expandable-segments remove it (docs/ledger.md R2b)")},
};

/* Reserved more than a fifth above allocated: one line with the largest part of the reserve where
 * reserved peaks (the ledger's own entry and rule) and what removes it. */
static void reserve_line(struct ml_buf *out, const struct ml_ledger *l, enum ml_framework fw)
{
    if (l->peak_reserved <= l->peak_allocated || (l->peak_reserved - l->peak_allocated) * 5 <= l->peak_allocated)
        return;
    int ph = 0;
    /* Where reserved peaks; of the phases that share the peak, the one with the most allocated (the
     * cache a phase counts shrinks as its allocated grows: the line compares with peak allocated). */
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (l->phase_active[p] &&
            (l->phase_reserved[p] > l->phase_reserved[ph] ||
             (l->phase_reserved[p] == l->phase_reserved[ph] && l->phase_allocated[p] > l->phase_allocated[ph])))
            ph = p;
    /* The releasable cache counts in the phase's reserved figure only as far as the card has room
     * (ml_ledger_finish): what the phase's figure holds of it is the figure less allocated and the
     * reserve it needs. A cache entry is shown at most at that. */
    uint64_t need = l->phase_allocated[ph];
    for (uint32_t i = 0; i < l->n; i++)
        if (l->e[i].figure == ML_FIG_RESERVED && (l->e[i].phases & ML_PH(ph)) && !l->e[i].releasable)
            need += l->e[i].bytes;
    uint64_t counted = l->phase_reserved[ph] > need ? l->phase_reserved[ph] - need : 0;
    const struct ml_entry *big = NULL;
    uint64_t big_bytes = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        uint64_t b = e->releasable && e->bytes > counted ? counted : e->bytes;
        if (e->figure == ML_FIG_RESERVED && (e->phases & ML_PH(ph)) && b && (!big || b > big_bytes)) {
            big = e;
            big_bytes = b;
        }
    }
    if (!big)
        return;
    const char *removes = _("--expandable-segments makes it smaller (docs/ledger.md, allocator_reserve)");
    for (size_t i = 0; i < sizeof(reserve_removed_by) / sizeof(reserve_removed_by[0]); i++)
        if (big->source && strstr(big->source, reserve_removed_by[i].row) &&
            (reserve_removed_by[i].fw == (int)fw || (reserve_removed_by[i].fw < 0 && fw != ML_FW_TORCHTUNE)))
            removes = _(reserve_removed_by[i].removes);
    struct ml_buf a, b, pct;
    ml_buf_init(&a, 64);
    ml_buf_init(&b, 64);
    ml_buf_init(&pct, 64);
    ml_set_gib(&a, l->peak_reserved - l->peak_allocated);
    ml_fmt_percent(&pct, l->peak_reserved - l->peak_allocated, l->peak_allocated);
    ml_set_gib(&b, big_bytes);
    ml_buf_addf(out, _("  reserved is %s (%s) above allocated: %s of it is %s; %s\n"), a.buf, pct.buf, b.buf, big->rule,
                removes);
    ml_buf_release(&a);
    ml_buf_release(&b);
    ml_buf_release(&pct);
}

/* The three figures against the capacity, and the verdict. */
static void figures_and_verdict(struct ml_buf *out, const struct ml_train *t, const struct ml_cluster *c,
                                const struct ml_ledger *l, const struct ml_layout *lay)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    struct ml_table f;
    ml_table_init(&f, 3);
    f.right[1] = true;
    char v[5][64];
    uint64_t vals[5] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity,
                        l->fits ? l->headroom : l->deficit};
    for (int k = 0; k < 5; k++) {
        ml_set_gib(&b, vals[k]);
        char iv[40] = "";
        if (k < 3 && l->interval[k][1])
            interval_text(iv, sizeof(iv), l->interval[k]);
        (void)snprintf(v[k], sizeof(v[k]), iv[0] ? "%s (%s)" : "%s%s", b.buf, iv);
    }
    const char *r0[3] = {_("  allocated"), v[0], _("torch.cuda.max_memory_allocated()")};
    const char *r1[3] = {_("  reserved"), v[1], _("torch.cuda.max_memory_reserved()")};
    const char *r2[3] = {_("  device"), v[2], _("nvidia-smi / rocm-smi (context, NCCL)")};
    const char *r3[3] = {_("  capacity"), v[3], c->gpu.name};
    char pct[48];
    ml_buf_reset(&b);
    ml_fmt_percent(&b, l->fits ? l->headroom : l->deficit, l->capacity);
    (void)snprintf(pct, sizeof(pct), _("%s of capacity"), b.buf);
    const char *r4[3] = {l->fits ? _("  headroom") : _("  short by"), v[4], pct};
    ml_table_row(&f, r0);
    ml_table_row(&f, r1);
    ml_table_row(&f, r2);
    ml_table_row(&f, r3);
    ml_table_row(&f, r4);
    (void)ml_table_render(&f, out, 0);
    ml_table_release(&f);
    reserve_line(out, l, t->framework);

    verdict_line(out, l, lay);
    ml_buf_release(&b);
}

/* Host RAM per node, then the notes and warnings. */
static void host_and_notes(struct ml_buf *out, const struct ml_train *t, const struct ml_cluster *c,
                           const struct ml_ledger *l)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    const struct ml_host *h = &l->host;
    ml_buf_adds(out, _("\nhost RAM per node:"));
    ml_set_gib(&b, h->peak_bytes);
    ml_buf_addf(out, _(" peak %s"), b.buf);
    ml_set_gib(&b, h->load_bytes);
    ml_buf_addf(out, _(" (load %s"), b.buf);
    if (h->offload_pinned || h->offload_pageable) {
        ml_set_gib(&b, h->offload_pinned);
        ml_buf_addf(out, _(", offload pinned %s"), b.buf);
        ml_set_gib(&b, h->offload_pageable);
        ml_buf_addf(out, _(" + pageable %s"), b.buf);
    }
    if (h->save_bytes) {
        ml_set_gib(&b, h->save_bytes);
        ml_buf_addf(out, _(", rank-0 save gather %s"), b.buf);
    }
    if (h->checkpoint_offload) {
        ml_set_gib(&b, h->checkpoint_offload);
        ml_buf_addf(out, _(", offloaded checkpoints %s"), b.buf);
    }
    ml_buf_adds(out, ")\n");
    if (c->host_ram_bytes && h->peak_bytes > c->host_ram_bytes) {
        ml_set_gib(&b, c->host_ram_bytes);
        ml_buf_addf(out, _("  exceeds the %s of host RAM given with --host-ram\n"), b.buf);
    }
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, _("note: %s\n"), l->notes[i]);
    for (uint32_t i = 0; i < (t->warnings ? t->warnings->n : 0); i++)
        ml_buf_addf(out, _("warning: %s\n"), t->warnings->text[i]);
    ml_buf_release(&b);
}

void ml_render_train_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                          const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_layout *lay)
{
    size_t start = out->len;
    describe_run(out, m, t, c, l);
    if (c->gpu.note[0])
        ml_buf_addf(out, _("  gpu: %s\n"), c->gpu.note);
    ml_buf_adds(out, "\n");
    components_and_peak(out, l, lay);
    figures_and_verdict(out, t, c, l, lay);
    host_and_notes(out, t, c, l);
    (void)ml_text_fold(out, start, lay ? lay->width : 0);
}

void ml_render_train_markdown(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                              const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_adds(out, _("# memledger train\n\n"));
    describe_run(out, m, t, c, l);
    ml_buf_addf(out, "\n| %s | %s | %s | %s | %s |\n|---|---|---:|---|---|\n", _("component"), _("rule"), _("GiB"),
                _("live in"), _("figure"));
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        char ph[160];
        phases_str(e->phases, l->phase_active, ph, sizeof(ph));
        ml_set_gib(&b, e->bytes);
        ml_buf_addf(out, "| %s | %s | %s | %s | %s |\n", ml_comp_name(e->id), e->rule, b.buf, ph,
                    ml_figure_name(e->figure));
    }
    ml_buf_addf(out, _("\n**Peak:** %s (%s)\n\n"), ml_phase_name(l->peak_phase), phase_story(l->peak_phase));
    /* xgettext:no-c-format */
    const char *interval = _("80 % interval");
    ml_buf_addf(out, "| %s | %s | %s |\n|---|---:|---|\n", _("figure"), _("GiB"), interval);
    const char *names[4] = {_("allocated"), _("reserved"), _("device"), _("capacity")};
    uint64_t vals[4] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity};
    for (int k = 0; k < 4; k++) {
        ml_set_gib(&b, vals[k]);
        char iv[40] = "";
        if (k < 3)
            interval_text(iv, sizeof(iv), l->interval[k]);
        ml_buf_addf(out, "| %s | %s | %s |\n", names[k], b.buf, iv);
    }
    ml_set_gib(&b, l->fits ? l->headroom : l->deficit);
    ml_buf_addf(out, _("| %s | %s |\n\n**Verdict:** %s\n"), l->fits ? _("headroom") : _("short by"), b.buf,
                ml_verdict_name(l->verdict));
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, _("\n- note: %s"), l->notes[i]);
    for (uint32_t i = 0; i < (t->warnings ? t->warnings->n : 0); i++)
        ml_buf_addf(out, _("\n- warning: %s"), t->warnings->text[i]);
    ml_buf_adds(out, "\n");
    ml_buf_release(&b);
}

/* per_gpu.interval: [low, high] bytes of each figure (80 %), and the validation group and table
 * rows they come from (docs/ledger.md, "The interval"). */
static void interval_json(struct ml_json *j, const struct ml_ledger *l)
{
    static const char *const keys[3] = {"peak_allocated_bytes", "peak_reserved_bytes", "device_used_bytes"};
    ml_json_key(j, "interval");
    ml_json_object_begin(j);
    for (int f = 0; f < 3; f++) {
        ml_json_key(j, keys[f]);
        ml_json_array_begin(j);
        ml_json_u64(j, l->interval[f][0]);
        ml_json_u64(j, l->interval[f][1]);
        ml_json_array_end(j);
    }
    ml_json_object_end(j);
    if (l->interval_stranded[0] || l->interval_stranded[1]) { /* R2: the reserved interval's widening */
        ml_json_key(j, "interval_stranded_bytes");
        ml_json_array_begin(j);
        ml_json_u64(j, l->interval_stranded[0]);
        ml_json_u64(j, l->interval_stranded[1]);
        ml_json_array_end(j);
    }
    ml_json_kstr(j, "interval_group", l->interval_group);
    ml_json_key(j, "interval_rows");
    ml_json_object_begin(j);
    for (int f = 0; f < 3; f++)
        ml_json_kstr(j, keys[f], l->interval_key[f]);
    ml_json_object_end(j);
}

enum ml_status ml_render_train_json(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                                    const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_json js;
    struct ml_json *j = &js;
    ml_json_init(j, out);
    ml_json_document_begin(j);
    ml_ledger_json_model(j, m, l);

    ml_json_key(j, "gpu");
    ml_json_object_begin(j);
    ml_json_kstr(j, "name", c->gpu.name);
    ml_json_ku64(j, "count", l->world);
    ml_json_ku64(j, "per_node", c->gpus_per_node);
    ml_json_ku64(j, "nodes", c->nodes);
    ml_json_ku64(j, "capacity_bytes", l->capacity);
    ml_json_object_end(j);

    ml_json_key(j, "settings");
    ml_json_object_begin(j);
    ml_json_kstr(j, "framework", ml_framework_name(t->framework));
    ml_json_kstr(j, "stage", ml_stage_name(t->stage));
    ml_json_kstr(j, "method", ml_method_name(t->method));
    ml_json_ku64(j, "lora_rank", t->method >= ML_METHOD_LORA ? t->lora_rank : 0);
    ml_json_ku64(j, "micro_batch", l->micro_batch);
    ml_json_ku64(j, "seq_len", l->seq_len);
    ml_json_ku64(j, "grad_accum", t->grad_accum);
    ml_json_kstr(j, "precision", ml_precision_name(t->precision));
    ml_json_kstr(j, "attn", ml_attn_name(t->attn));
    ml_json_kstr(j, "grad_ckpt", ml_grad_ckpt_name(t->grad_ckpt));
    ml_json_kstr(j, "optim", ml_optim_name(t->optim));
    ml_json_ku64(j, "zero_stage", t->deepspeed ? t->zero.stage : 0);
    ml_json_kbool(j, "deepspeed", t->deepspeed);
    ml_json_ku64(j, "sharding", l->sharding);
    ml_json_object_end(j);

    ml_json_key(j, "per_gpu");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_allocated_bytes", l->peak_allocated);
    ml_json_ku64(j, "peak_reserved_bytes", l->peak_reserved);
    ml_json_ku64(j, "device_used_bytes", l->device_used);
    ml_json_ku64(j, "headroom_bytes", l->headroom);
    ml_json_ku64(j, "deficit_bytes", l->deficit);
    ml_json_kbool(j, "fits", l->fits);
    ml_json_kstr(j, "verdict", ml_verdict_name(l->verdict));
    ml_json_kbool(j, "may_fit", l->may_fit);
    interval_json(j, l);
    ml_json_kstr(j, "peak_phase", ml_phase_name(l->peak_phase));
    ml_ledger_json_components(j, l);
    ml_json_object_end(j);

    ml_ledger_json_phases(j, l);

    ml_json_key(j, "host");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_bytes", l->host.peak_bytes);
    ml_json_ku64(j, "load_bytes", l->host.load_bytes);
    ml_json_ku64(j, "offload_pinned_bytes", l->host.offload_pinned);
    ml_json_ku64(j, "offload_pageable_bytes", l->host.offload_pageable);
    ml_json_ku64(j, "save_bytes", l->host.save_bytes);
    ml_json_ku64(j, "checkpoint_offload_bytes", l->host.checkpoint_offload);
    ml_json_object_end(j);

    ml_ledger_json_notes(j, l);
    ml_json_key(j, "warnings");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < (t->warnings ? t->warnings->n : 0); i++)
        ml_json_str(j, t->warnings->text[i]);
    ml_json_array_end(j);
    ml_json_object_end(j);
    return ml_json_finish(j);
}
