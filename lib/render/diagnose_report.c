/*
 * diagnose_report.c - memledger diagnose's report: what happened, why and what to do, as text
 * and as the JSON document of docs/cli/diagnose.md (the same document, short, when the logs hold
 * no out-of-memory event).
 */
#include "memledger/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/oom.h"
#include "memledger/oom_settings.h"
#include "memledger/render.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

/* ---- rendering ---------------------------------------------------------------------------- */

static const char *bytes(struct ml_buf *b, uint64_t v)
{
    ml_buf_reset(b);
    ml_fmt_bytes(b, v);
    return b->buf;
}

static const char *file_name(const struct ml_diag_report *o, uint32_t file)
{
    return file < o->n_inputs ? o->inputs[file] : "?";
}

static const char *timing_story(enum ml_oom_timing t)
{
    switch (t) {
    case ML_TIM_LOAD: return _("while loading the model");
    case ML_TIM_FIRST_STEP: return _("at the first step");
    case ML_TIM_AFTER_SAVE: return _("in the first step after a checkpoint save");
    case ML_TIM_AT_SAVE: return _("during a checkpoint save");
    case ML_TIM_AT_EVAL: return _("during evaluation");
    case ML_TIM_MID_RUN: return _("mid-run, after steps that fit");
    case ML_TIM_RESUME: return _("right after resuming from a checkpoint");
    case ML_TIM_STARTUP: return _("at engine start-up");
    case ML_TIM_UNKNOWN:
    case ML_TIM_COUNT: break;
    }
    return _("timing unknown");
}

static const char *dev_label(enum ml_oom_device d)
{
    switch (d) {
    case ML_DEV_CUDA: return "CUDA";
    case ML_DEV_HIP: return "HIP";
    case ML_DEV_NPU: return "NPU";
    case ML_DEV_XPU: return "XPU";
    case ML_DEV_MPS: return "MPS";
    case ML_DEV_MUSA: return "MUSA";
    case ML_DEV_HOST: return "host";
    default: return "";
    }
}

static void describe_event(struct ml_buf *out, const struct ml_diag_report *o, const struct ml_incident *inc,
                           const struct ml_oom_event *e, const struct ml_diagnosis *dg, bool primary)
{
    struct ml_buf b, c;
    ml_buf_init(&b, 64);
    ml_buf_init(&c, 64);
    ml_buf_addf(out, "  %s%s%s", dev_label(e->device), dev_label(e->device)[0] ? ": " : "", ml_oom_kind_story(e->kind));
    if (e->gpu >= 0 && (e->device == ML_DEV_CUDA || e->device == ML_DEV_HIP || e->device == ML_DEV_UNKNOWN))
        ml_buf_addf(out, _(" on GPU %d"), e->gpu);
    else if (e->gpu >= 0) /* an NPU, XPU or other accelerator is no GPU */
        ml_buf_addf(out, _(" on device %d"), e->gpu);
    if (e->rank >= 0)
        ml_buf_addf(out, _(", rank %d"), e->rank);
    ml_buf_addf(out, " — %s:%llu", file_name(o, e->file), (unsigned long long)e->line);
    if (e->repeats > 1) {
        unsigned nr = 0;
        for (int r = 0; r < 64; r++)
            nr += (unsigned)((e->rank_mask >> r) & 1);
        if (nr > 1)
            ml_buf_addf(out, _(" (the same message from %u ranks)"), nr);
        else
            ml_buf_addf(out, _(" (printed %u times)"), e->repeats);
    }
    ml_buf_adds(out, "\n");
    if (!primary) {
        ml_buf_release(&b);
        ml_buf_release(&c);
        return;
    }
    /* Phase and timing. */
    ml_buf_addf(out, _("  phase: %s"), ml_oom_phase_name(e->phase));
    if (e->phase_ref.line)
        ml_buf_addf(out, _(" (%s, line %llu)"), e->phase_cue[0] ? e->phase_cue : "",
                    (unsigned long long)e->phase_ref.line);
    if (e->episode)
        ml_buf_addf(out, _(" · start-up step: %s (line %llu)"), ml_oom_episode_name(e->episode),
                    (unsigned long long)e->episode_ref.line);
    ml_buf_addf(out, " · %s", timing_story(e->timing));
    if (e->timing == ML_TIM_AFTER_SAVE || e->timing == ML_TIM_AT_SAVE) {
        if (e->timing_ref.step >= 0)
            ml_buf_addf(out, _(" at step %lld (line %llu)"), (long long)e->timing_ref.step,
                        (unsigned long long)e->timing_ref.line);
        else if (e->timing_ref.line)
            ml_buf_addf(out, _(" (line %llu)"), (unsigned long long)e->timing_ref.line);
    } else if (e->step >= 0) {
        ml_buf_addf(out, _(" (last step seen: %lld, line %llu)"), (long long)e->step,
                    (unsigned long long)e->step_ref.line);
    }
    ml_buf_adds(out, "\n");
    /* The numbers. */
    if (dg->has_device_numbers) {
        uint64_t cap = e->total;
        ml_buf_addf(out, _("  device %s · free %s"), bytes(&b, cap), bytes(&c, e->free));
        struct ml_buf p;
        ml_buf_init(&p, 32);
        ml_fmt_percent(&p, dg->held, cap);
        ml_buf_addf(out, _(" · PyTorch holds %s (%s of the device): allocated %s"), bytes(&b, dg->held), p.buf,
                    bytes(&c, e->allocated));
        if (dg->has_stranded)
            ml_buf_addf(out, _(" + reserved-but-unallocated %s"), bytes(&b, dg->stranded));
        ml_buf_release(&p);
        ml_buf_adds(out, "\n");
        if (dg->used > dg->held)
            ml_buf_addf(out, _("  outside PyTorch on the device: %s (context, libraries, other processes)\n"),
                        bytes(&b, dg->used - dg->held));
    } else if (e->kind == ML_OOM_ALLOCATOR &&
               (e->has & (ML_OOM_F_TOTAL | ML_OOM_F_FREE)) == (ML_OOM_F_TOTAL | ML_OOM_F_FREE)) {
        /* the message's allocated figure is missing (cut, or re-raised without its unit): the
         * figures it has, and no relation that needs the missing one */
        ml_buf_addf(out, _("  device %s · free %s"), bytes(&b, e->total), bytes(&c, e->free));
        if (e->has & ML_OOM_F_RESERVED)
            ml_buf_addf(out, _(" · PyTorch reserved %s"), bytes(&b, e->reserved));
        ml_buf_adds(out, _(" · allocated: not in the message (cut, or a figure without its unit)\n"));
    }
    /* The other numbers, those the message has, joined by " · ". */
    struct ml_buf nums;
    ml_buf_init(&nums, 0);
    if (e->has & ML_OOM_F_REQUESTED)
        ml_buf_addf(&nums, _(" · request %s"), bytes(&b, e->requested));
    struct ml_oom_attribution at;
    ml_oom_attribute_procs(e, &at);
    for (uint32_t i = 0; i < e->n_procs && i < ML_OOM_MAX_PROCS; i++) {
        ml_buf_addf(&nums, _(" · process %llu holds %s"), (unsigned long long)e->procs[i].pid,
                    bytes(&b, e->procs[i].bytes));
        if (at.role[i] == ML_PROC_OWN)
            ml_buf_adds(&nums, _(" (this process)"));
        else if (at.role[i] == ML_PROC_SIBLING)
            ml_buf_adds(&nums, _(" (a rank's CUDA context)"));
        else if (at.role[i] == ML_PROC_DUPLICATE)
            ml_buf_adds(&nums, _(" (the same process again)"));
    }
    if (e->n_procs_seen > e->n_procs)
        ml_buf_addf(&nums, _(" · %u more process lines"), e->n_procs_seen - e->n_procs);
    if (e->has & ML_OOM_F_THIS_PROCESS)
        ml_buf_addf(&nums, _(" · this process %s"), bytes(&b, e->this_process));
    if (e->has & ML_OOM_F_MAX_SEQ_LEN)
        ml_buf_addf(&nums, _(" · max_model_len %llu"), (unsigned long long)e->max_seq_len);
    if (e->has & ML_OOM_F_KV_TOKENS)
        ml_buf_addf(&nums, _(" · KV cache holds %llu tokens"), (unsigned long long)e->kv_tokens);
    if (e->kind == ML_OOM_VLLM_FREE_MEMORY && (e->has & ML_OOM_F_FREE))
        ml_buf_addf(&nums, _(" · free %s of %s"), bytes(&b, e->free), bytes(&c, e->total));
    if (e->has & ML_OOM_F_UTIL)
        ml_buf_addf(&nums, _(" · gpu_memory_utilization %u.%02u"), e->util_permille / 1000,
                    e->util_permille % 1000 / 10);
    if (e->has & ML_OOM_F_EXIT)
        ml_buf_addf(&nums, _(" · exit code %d"), e->exit_code);
    if (nums.len)
        ml_buf_addf(out, "  %s", nums.buf + strlen(" · "));
    ml_buf_release(&nums);
    if (out->len && out->buf[out->len - 1] != '\n')
        ml_buf_adds(out, "\n");
    (void)inc;
    ml_buf_release(&b);
    ml_buf_release(&c);
}

static void describe_ledger(struct ml_buf *out, const struct ml_diag_run *r, const struct ml_diagnosis *dg,
                            const struct ml_oom_event *e)
{
    const struct ml_ledger *l = &dg->ledger;
    struct ml_buf b, c;
    ml_buf_init(&b, 64);
    ml_buf_init(&c, 64);
    ml_buf_addf(out, _("  ledger: %s · %s"), r->m.name, ml_method_name(r->t.method));
    if (r->t.method == ML_METHOD_LORA || r->t.method == ML_METHOD_QLORA)
        ml_buf_addf(out, " r=%llu", (unsigned long long)r->t.lora_rank);
    if (r->t.deepspeed)
        ml_buf_addf(out, " · ZeRO-%u", r->t.zero.stage);
    ml_buf_addf(out, _(" · %u GPUs%s · %s%s\n"), l->world,
                r->world_guessed ? _(" (assumed: the count whose ledger matches the log; give --num-gpus)") : "",
                bytes(&b, l->capacity), r->capacity_from_log ? _(" from the log") : "");
    struct ml_buf b2, c2;
    ml_buf_init(&b2, 64);
    ml_buf_init(&c2, 64);
    ml_buf_addf(out, _("    %s: allocated %s (the log: %s) · device %s of %s\n"), ml_phase_name(dg->ledger_phase),
                bytes(&b, dg->ledger_at_phase), (e->has & ML_OOM_F_ALLOCATED) ? bytes(&c, e->allocated) : "?",
                bytes(&b2, l->device_used), bytes(&c2, l->capacity));
    ml_buf_release(&b2);
    ml_buf_release(&c2);
    /* The ZeRO-3 knobs of the user's DeepSpeed file (accounting notes §1.2, §1.6, §1.9). */
    if (r->t.deepspeed && r->t.zero.stage == 3) {
        uint64_t h = r->m.arch.hidden;
        char pf[32], ml[32];
        ml_fmt_knob(pf, sizeof(pf), ml_zero_prefetch_bucket(&r->t.zero, h));
        ml_fmt_knob(ml, sizeof(ml), ml_zero_max_live(&r->t.zero));
        ml_buf_addf(out,
                    _("    ZeRO-3 (%s): stage3_prefetch_bucket_size %s · stage3_max_live_parameters %s · overlap_comm "
                      "%s · stage3_gather_16bit_weights_on_model_save %s\n"),
                    r->ds_name[0] ? r->ds_name : _("preset"), pf, ml, ml_zero_overlap(&r->t.zero) ? "true" : "false",
                    r->t.zero.gather_16bit_on_save ? "true" : "false");
    }
    /* The ZeRO-3 buffers and the tensors of the phase (accounting notes §1.2, §4). */
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *en = &l->e[i];
        if (en->id == ML_C_ZERO_GATHERED || en->id == ML_C_ZERO_LM_HEAD_RETAINED || en->id == ML_C_ATTN_SCORES ||
            en->id == ML_C_LOGITS_LOSS)
            ml_buf_addf(out, "    %s %s: %s\n", ml_comp_name(en->id), bytes(&b, en->bytes), en->rule);
    }
    ml_buf_release(&b);
    ml_buf_release(&c);
}

/* The inference ledger of the engine as configured, next to the log's KV figure. */
static void describe_serve(struct ml_buf *out, const struct ml_diag_report *o, const struct ml_incident *inc,
                           const struct ml_diag_run *r, const struct ml_diagnosis *dg)
{
    const struct ml_serve *sv = &dg->serve;
    const struct ml_infer *s = &r->si;
    struct ml_buf b, c, d, k;
    ml_buf_init(&b, 64);
    ml_buf_init(&c, 64);
    ml_buf_init(&d, 64);
    ml_buf_init(&k, 64);
    ml_buf_addf(out, _("  inference ledger: %s · %s"), r->m.name, ml_engine_name(s->engine));
    if (s->engine == ML_ENGINE_VLLM)
        ml_buf_addf(out, " %u.%u.%u", s->vllm_version / 10000, s->vllm_version / 100 % 100, s->vllm_version % 100);
    ml_buf_addf(out, _(" · %s%s%s · %u GPU%s · %s%s\n"), ml_precision_name(s->precision), s->quant ? " weights " : "",
                s->quant ? ml_quant_name(s->quant) : "", s->tp * s->pp, s->tp * s->pp == 1 ? "" : "s",
                bytes(&b, r->cl.gpu.capacity_bytes), r->capacity_from_log ? _(" from the log") : "");
    if (inc->engine.seen)
        ml_buf_addf(out, _("    settings the flags do not give%s: vLLM's engine line, %s:%llu\n"),
                    r->model_from_log ? _(", and the model") : "", file_name(o, inc->engine.file),
                    (unsigned long long)inc->engine.line);
    ml_buf_addf(out, _("    budget %s - weights %s - activation profile %s"), bytes(&b, sv->budget_bytes),
                bytes(&c, sv->weights_bytes), bytes(&d, sv->activation_bytes));
    ml_buf_addf(out, _(" - non-torch %s"), bytes(&k, sv->non_torch_bytes));
    ml_buf_addf(out, _(" = KV %s\n"), bytes(&k, sv->kv_bytes));
    ml_buf_addf(out, _("    KV %llu B per token: %llu tokens for max_model_len %llu"),
                (unsigned long long)sv->kv_bytes_per_token, (unsigned long long)sv->kv_tokens,
                (unsigned long long)sv->max_model_len);
    if (dg->has_kv_log)
        ml_buf_addf(out, _(" (the log: KV %s = %llu tokens; what-ifs below carry the difference)"),
                    bytes(&b, dg->kv_log),
                    (unsigned long long)(sv->kv_bytes_per_token ? dg->kv_log / sv->kv_bytes_per_token : 0));
    ml_buf_adds(out, "\n");
    if (sv->error != ML_SERVE_OK)
        ml_buf_addf(out, _("    the ledger's engine would not start either: %s\n"), sv->error_text);
    else if (sv->req_capped) /* SGLang starts and caps requests (infer_ledger.c startup_error) */
        ml_buf_addf(out,
                    _("    the ledger's SGLang starts but caps every request at %llu tokens (max_req_len), under "
                      "context_length %llu\n"),
                    (unsigned long long)sv->max_req_len, (unsigned long long)sv->max_model_len);
    ml_buf_release(&b);
    ml_buf_release(&c);
    ml_buf_release(&d);
    ml_buf_release(&k);
}

/* The range of one kind of hypothesis: its smallest and largest count, and their "per". */
static bool hyp_range(const struct ml_big_request *b, enum ml_request_what w, uint32_t bytes,
                      const struct ml_request_hypothesis **lo, const struct ml_request_hypothesis **hi)
{
    *lo = *hi = NULL;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct ml_request_hypothesis *h = &b->h[i];
        if (h->what != w || h->bytes != bytes)
            continue;
        if (!*lo || h->count < (*lo)->count)
            *lo = h;
        if (!*hi || h->count > (*hi)->count)
            *hi = h;
    }
    return *lo != NULL;
}

/* What a big request can be (issue 13): the reading the phase or the model points at, then the
 * ranges of the others (sizes alone cannot tell). */
static void describe_request(struct ml_buf *out, const struct ml_big_request *b)
{
    struct ml_buf x;
    ml_buf_init(&x, 32);
    ml_buf_addf(out, _("  one request of %s, %u%% of the card: a tensor of its own"), bytes(&x, b->bytes),
                (b->share_permille + 5) / 10);
    const struct ml_request_hypothesis *lo, *hi, *l = b->likely >= 0 ? &b->h[b->likely] : NULL;
    if (l && l->log && l->what == ML_REQ_SCORES)
        ml_buf_addf(out, _("; the log's settings say: eager attention scores, %llu heads x s = %llu in %u B"),
                    (unsigned long long)l->per, (unsigned long long)l->count, l->bytes);
    else if (l && l->log && l->what == ML_REQ_LOGITS)
        ml_buf_addf(out, _("; the log's settings say: the logits, %llu tokens x vocabulary %llu in %u B"),
                    (unsigned long long)l->count, (unsigned long long)l->per, l->bytes);
    else if (l && l->log)
        ml_buf_addf(out, _("; the log's settings say: one rank's share of the weights over %llu GPUs"),
                    (unsigned long long)l->per);
    else if (l && l->model && l->what == ML_REQ_LAYER)
        ml_buf_addf(out, _("; the model given: one %llu x %llu weight matrix in %u B"), (unsigned long long)l->count,
                    (unsigned long long)l->per, l->bytes);
    else if (l && l->model)
        ml_buf_addf(out, _("; the model given: %s"),
                    l->what == ML_REQ_LOGITS   ? _("its logits")
                    : l->what == ML_REQ_SCORES ? _("its eager attention scores")
                                               : _("a whole copy of its weights"));
    else if (l)
        ml_buf_addf(out, _("; the phase says %s"),
                    l->what == ML_REQ_LOGITS   ? _("logits")
                    : l->what == ML_REQ_SCORES ? _("eager attention scores")
                                               : _("a copy of the weights"));
    ml_buf_adds(out, _(". If the logits: "));
    if (hyp_range(b, ML_REQ_LOGITS, 4, &lo, &hi))
        ml_buf_addf(out, _("%llu-%llu tokens in fp32 (vocabulary %llu-%llu)"), (unsigned long long)lo->count,
                    (unsigned long long)hi->count, (unsigned long long)lo->per, (unsigned long long)hi->per);
    if (hyp_range(b, ML_REQ_SCORES, 4, &lo, &hi))
        ml_buf_addf(out, _("; if eager scores: s ~ %llu-%llu per sequence (%llu-%llu heads, fp32)"),
                    (unsigned long long)lo->count, (unsigned long long)hi->count, (unsigned long long)lo->per,
                    (unsigned long long)hi->per);
    if (hyp_range(b, ML_REQ_WEIGHTS, 2, &lo, &hi))
        ml_buf_addf(out, _("; if a weight copy: %.2fB parameters in 16-bit"), (double)lo->count / 1e9);
    ml_buf_adds(out, _(" (--model decides)\n"));
    ml_buf_release(&x);
}

/* How the text was read: a cut message, lines read in pieces, JSON records, a big request. */
static void describe_reading(struct ml_buf *out, const struct ml_incident *inc, const struct ml_oom_event *e,
                             const struct ml_diagnosis *dg)
{
    if (e->cut)
        ml_buf_adds(out, _("  the message is cut: its last sentence never came (the paste or the log cut it)\n"));
    if (inc->truncated_lines)
        ml_buf_addf(out, _("  %llu line%s longer than %u KiB read whole, in pieces (the longest: %llu bytes)\n"),
                    (unsigned long long)inc->truncated_lines, inc->truncated_lines == 1 ? "" : "s",
                    ML_OOM_LINE_MAX / 1024, (unsigned long long)inc->longest_line);
    if (dg->big.has)
        describe_request(out, &dg->big);
}

/* WHY when the evidence does not single a cause out: say so, then what would decide it. */
static void describe_cannot_tell(struct ml_buf *out, const struct ml_diagnosis *dg)
{
    if (dg->ranking.n)
        ml_buf_addf(out, _("  cannot tell: the evidence for %s is weak (p %u.%02u; none of these: %u.%02u)\n"),
                    ml_cause_name(dg->f[0].cause), dg->f[0].confidence / 1000, dg->f[0].confidence % 1000 / 10,
                    dg->p_none / 1000, dg->p_none % 1000 / 10);
    else
        ml_buf_adds(out, _("  cannot tell: no cause is named by this text\n"));
}

/* WHAT TO DO: the fixes, the failing phase's first, each group cheapest first, each with the bytes it saves and whether it then fits. */
static void render_fixes(struct ml_buf *out, const struct ml_diag_report *o, const struct ml_diagnosis *dg,
                         struct ml_buf *b)
{
    ml_buf_adds(out, _("\nWHAT TO DO (the failing phase's fixes first, then cheapest first)\n"));
    const struct ml_fix *fx[ML_DIAG_MAX_FINDINGS * ML_DIAG_MAX_FIXES];
    size_t n = ml_diagnosis_fixes(dg, fx, sizeof(fx) / sizeof(fx[0]), o->all);
    size_t shown_fix = o->all ? n : (n < 7 ? n : 7);
    char assumed[160];
    for (size_t i = 0; i < shown_fix; i++) {
        const struct ml_fix *f = fx[i];
        if (f->setting[0])
            ml_buf_addf(out, "  %zu. %s\n     %s", i + 1, f->setting, f->action);
        else
            ml_buf_addf(out, "  %zu. %s", i + 1, f->action);
        const char *then_fits = dg->has_serve ? _("then it starts and holds a max_model_len request") : _("then fits");
        if (!dg->has_serve && !o->config && o->run && dg->has_ledger) {
            /* no --config: the ledger's method and GPU count are assumed (issue 24) */
            (void)snprintf(assumed, sizeof(assumed), _("then fits, assuming %s on %u GPU%s (no --config)"),
                           ml_method_name(o->run->t.method), dg->ledger.world, dg->ledger.world == 1 ? "" : "s");
            then_fits = assumed;
        }
        if (f->has_saves) {
            ml_buf_addf(out, _(" — saves %s"), bytes(b, f->saves_bytes));
            ml_buf_adds(out, !f->saves_from_ledger ? _(" (from the log")
                             : dg->has_serve       ? _(" (inference ledger")
                                                   : _(" (ledger"));
            if (f->fits == 1)
                ml_buf_addf(out, "; %s", f->saves_from_ledger ? then_fits : _("the failing allocation then fits"));
            else if (f->fits == 0)
                ml_buf_adds(out, _("; still short"));
            ml_buf_adds(out, ")");
        } else if (dg->has_serve && f->fits >= 0) {
            ml_buf_addf(out, " — %s", f->fits == 1 ? then_fits : _("still short"));
        } else if (dg->has_ledger) {
            ml_buf_adds(out, _(" — saves: not modelled by the ledger"));
        }
        ml_buf_adds(out, "\n");
        if (f->note[0])
            ml_buf_addf(out, _("     note: %s\n"), f->note);
    }
    if (shown_fix < n)
        ml_buf_addf(out, _("  (%zu more: --all)\n"), n - shown_fix);
    if (!n)
        ml_buf_adds(out, _("  nothing until the cause is known: see WHAT WOULD DECIDE IT\n"));
}

static void render_text(struct ml_buf *out, const struct ml_diag_report *o, const struct ml_incident *inc,
                        const struct ml_diagnosis *dg, const struct ml_diag_run *r)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    const struct ml_oom_event *pe = &inc->ev[dg->primary];
    ml_buf_addf(out, _("memledger diagnose: %llu out-of-memory event%s in %u log%s (%llu lines)\n\n"),
                (unsigned long long)inc->n_events, inc->n_events == 1 ? "" : "s", inc->n_files,
                inc->n_files == 1 ? "" : "s", (unsigned long long)inc->lines);
    ml_buf_adds(out, _("WHAT HAPPENED\n"));
    describe_event(out, o, inc, pe, dg, true);
    describe_reading(out, inc, pe, dg);
    if (dg->has_ledger)
        describe_ledger(out, r, dg, pe);
    if (dg->has_serve)
        describe_serve(out, o, inc, r, dg);
    uint32_t shown = 0;
    for (uint32_t i = 0; i < inc->n_events; i++) {
        if ((int32_t)i == dg->primary)
            continue;
        if (!o->all && shown >= 3) {
            ml_buf_addf(out, _("  ... %u more events (--all lists them)\n"), inc->n_events - 1 - shown);
            break;
        }
        if (!shown)
            ml_buf_adds(out, _("  other events:\n"));
        ml_buf_adds(out, "  ");
        describe_event(out, o, inc, &inc->ev[i], dg, false);
        shown++;
    }
    if (inc->n_events_seen > inc->n_events && inc->n_events == ML_OOM_MAX_EVENTS)
        ml_buf_addf(out, _("  (%llu messages in all; the first %u distinct ones are kept)\n"),
                    (unsigned long long)inc->n_events_seen, ML_OOM_MAX_EVENTS);

    ml_buf_adds(out, _("\nWHY (most likely first)\n"));
    if (dg->cannot_tell)
        describe_cannot_tell(out, dg);
    uint32_t nf = o->all ? dg->n_findings : (dg->n_findings < 4 ? dg->n_findings : 4);
    if (dg->cannot_tell && !dg->ranking.n)
        nf = 0;
    for (uint32_t i = 0; i < nf; i++) {
        const struct ml_finding *f = &dg->f[i];
        ml_buf_addf(out, "  %u. %s (%u.%02u): %s\n", i + 1, ml_cause_name(f->cause), f->confidence / 1000,
                    f->confidence % 1000 / 10, f->why);
        uint32_t ne = o->all ? f->n_ev : (f->n_ev < 2 ? f->n_ev : 2);
        for (uint32_t k = 0; k < ne; k++) {
            const struct ml_evidence *v = &f->ev[k];
            if (v->line)
                ml_buf_addf(out, "       %s:%llu  %s\n", file_name(o, v->file), (unsigned long long)v->line, v->text);
            else
                ml_buf_addf(out, "       = %s\n", v->text);
        }
    }
    if (nf < dg->n_findings && !(dg->cannot_tell && !dg->ranking.n))
        ml_buf_addf(out, _("  (%u more with lower confidence: --all)\n"), dg->n_findings - nf);
    if (dg->cannot_tell && dg->n_decide) {
        ml_buf_adds(out, _("\nWHAT WOULD DECIDE IT\n"));
        for (uint32_t i = 0; i < dg->n_decide; i++)
            ml_buf_addf(out, "  - %s\n", dg->decide_by[i]);
    }

    render_fixes(out, o, dg, &b);

    if (dg->n_checks || inc->n_versions) {
        ml_buf_adds(out, _("\nCHECK NEXT\n"));
        for (uint32_t i = 0; i < dg->n_checks; i++)
            ml_buf_addf(out, "  - %s\n", dg->checks[i]);
        if (inc->n_versions) {
            ml_buf_adds(out, _("  - versions in the log:"));
            for (uint32_t i = 0; i < inc->n_versions; i++)
                ml_buf_addf(out, " %s %s%s", inc->versions[i].name, inc->versions[i].value,
                            i + 1 < inc->n_versions ? "," : "");
            ml_buf_adds(out, "\n");
        }
    }
    /* (with no phase, a serving engine's run by the log's own lines, such as its command) */
    bool serving = pe->phase == ML_OPH_SERVING_STARTUP || pe->phase == ML_OPH_SERVING_RUNTIME ||
                   ml_oom_kind_serving(pe->kind) ||
                   ((pe->phase == ML_OPH_UNKNOWN || pe->phase == ML_OPH_GENERATE) && (dg->runs & ML_RUN_SERVING) &&
                    !(dg->runs & ML_RUN_TRAINING));
    if (r->serving && !dg->has_serve)
        ml_buf_adds(
            out, _("\n(the log states no device capacity: give --gpu to price each fix with the inference ledger)\n"));
    else if (r->have && !r->serving && !dg->has_ledger)
        ml_buf_adds(
            out, _("\n(the log states no device capacity: give --gpu to price each fix with the training ledger)\n"));
    /* TGI and llama.cpp / Ollama have no ledger: no offer to price their fixes, whatever the phase */
    bool unmodelled = ml_incident_tgi_only(inc) || pe->kind == ML_OOM_GGML;
    if (!r->have && !o->config && !unmodelled)
        ml_buf_adds(
            out, serving ? _("\n(give --model, and the engine's flags the log does not show, to price each fix with "
                             "the inference ledger)\n")
                         : _("\n(give --config/--deepspeed or --model to price each fix with the training ledger)\n"));
    ml_buf_release(&b);
}

void ml_render_diagnose_text(struct ml_buf *out, const struct ml_diag_report *o, const struct ml_layout *lay)
{
    const struct ml_incident *inc = o->inc;
    size_t start = out->len;
    if (inc->n_events == 0 || !o->dg) {
        ml_buf_addf(out, _("memledger diagnose: no out-of-memory event in %u log%s (%llu lines)\n"), inc->n_files,
                    inc->n_files == 1 ? "" : "s", (unsigned long long)inc->lines);
        if (inc->truncated_lines)
            ml_buf_addf(out, _("  (%llu line%s longer than %u KiB read whole, in pieces)\n"),
                        (unsigned long long)inc->truncated_lines, inc->truncated_lines == 1 ? "" : "s",
                        ML_OOM_LINE_MAX / 1024);
    } else {
        render_text(out, o, inc, o->dg, o->run);
    }
    (void)ml_text_fold(out, start, lay ? lay->width : 0);
}

static void json_num(struct ml_json *j, const char *k, const struct ml_oom_event *e, uint32_t bit, uint64_t v)
{
    ml_json_key(j, k);
    if (e->has & bit)
        ml_json_u64(j, v);
    else
        ml_json_null(j);
}

/* The keys of an event added for issue 13 (docs/cli/diagnose.md). */
static void json_event_more(struct ml_json *j, const struct ml_diag_report *o, const struct ml_oom_event *e)
{
    ml_json_ku64(j, "process_lines", e->n_procs_seen > e->n_procs ? e->n_procs_seen : e->n_procs);
    json_num(j, "other_allocations_bytes", e, ML_OOM_F_OTHER, e->other);
    json_num(j, "host_killed_pid", e, ML_OOM_F_HOST_KILL, e->host_pid);
    json_num(j, "host_total_vm_bytes", e, ML_OOM_F_HOST_KILL, e->host_total_vm);
    json_num(j, "host_anon_rss_bytes", e, e->kind == ML_OOM_HOST_KILLER ? ML_OOM_F_THIS_PROCESS : 1u << 31,
             e->this_process);
    json_num(j, "host_file_rss_bytes", e, ML_OOM_F_HOST_KILL, e->host_file_rss);
    json_num(j, "host_shmem_rss_bytes", e, ML_OOM_F_HOST_KILL, e->host_shmem_rss);
    ml_json_kbool(j, "cut", e->cut);
    ml_json_key(j, "implausible");
    ml_json_array_begin(j);
    uint32_t bad = ml_oom_check_numbers(e, o->inc->saw_wsl || o->inc->saw_windows, NULL);
    for (unsigned i = 0; i < ML_OOM_CHECK_COUNT; i++)
        if (bad >> i & 1)
            ml_json_str(j, ml_oom_check_name(i));
    ml_json_array_end(j);
}

/* One event of "events" (docs/cli/diagnose.md). */
static void json_event(struct ml_json *j, const struct ml_diag_report *o, const struct ml_oom_event *e)
{
    ml_json_object_begin(j);
    ml_json_kstr(j, "kind", ml_oom_kind_name(e->kind));
    ml_json_kstr(j, "device", ml_oom_device_name(e->device));
    ml_json_key(j, "gpu");
    if (e->gpu >= 0)
        ml_json_i64(j, e->gpu);
    else
        ml_json_null(j);
    ml_json_key(j, "rank");
    if (e->rank >= 0)
        ml_json_i64(j, e->rank);
    else
        ml_json_null(j);
    ml_json_key(j, "ranks");
    ml_json_array_begin(j);
    for (int k = 0; k < 64; k++)
        if ((e->rank_mask >> k) & 1)
            ml_json_u64(j, (uint64_t)k);
    ml_json_array_end(j);
    ml_json_ku64(j, "repeats", e->repeats);
    json_num(j, "requested_bytes", e, ML_OOM_F_REQUESTED, e->requested);
    json_num(j, "total_bytes", e, ML_OOM_F_TOTAL, e->total);
    json_num(j, "free_bytes", e, ML_OOM_F_FREE, e->free);
    json_num(j, "allocated_bytes", e, ML_OOM_F_ALLOCATED, e->allocated);
    /* Classic messages give "reserved in total": the unallocated part is reserved - allocated (A1). */
    ml_json_key(j, "reserved_unallocated_bytes");
    if (e->has & ML_OOM_F_RESERVED_UNALLOC)
        ml_json_u64(j, e->reserved_unalloc);
    else if ((e->has & ML_OOM_F_RESERVED) && (e->has & ML_OOM_F_ALLOCATED) && e->reserved >= e->allocated)
        ml_json_u64(j, e->reserved - e->allocated);
    else
        ml_json_null(j);
    json_num(j, "reserved_bytes", e, ML_OOM_F_RESERVED, e->reserved);
    json_num(j, "this_process_bytes", e, ML_OOM_F_THIS_PROCESS, e->this_process);
    json_num(j, "private_pool_bytes", e, ML_OOM_F_PRIVATE_POOL, e->private_pool);
    json_num(j, "allowed_bytes", e, ML_OOM_F_ALLOWED, e->allowed);
    json_num(j, "active_bytes", e, ML_OOM_F_ACTIVE, e->active);
    struct ml_oom_attribution at;
    ml_oom_attribute_procs(e, &at);
    ml_json_key(j, "other_processes");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < e->n_procs && k < ML_OOM_MAX_PROCS; k++) {
        ml_json_object_begin(j);
        ml_json_ku64(j, "pid", e->procs[k].pid);
        ml_json_ku64(j, "bytes", e->procs[k].bytes);
        ml_json_kstr(j, "role", ml_oom_proc_role_name((enum ml_oom_proc_role)at.role[k]));
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    json_event_more(j, o, e);
    json_num(j, "max_model_len", e, ML_OOM_F_MAX_SEQ_LEN, e->max_seq_len);
    json_num(j, "kv_cache_tokens", e, ML_OOM_F_KV_TOKENS, e->kv_tokens);
    json_num(j, "estimated_max_model_len", e, ML_OOM_F_EST_MAX_LEN, e->est_max_len);
    ml_json_key(j, "gpu_memory_utilization");
    if (e->has & ML_OOM_F_UTIL)
        ml_json_fixed(j, e->util_permille, 3);
    else
        ml_json_null(j);
    ml_json_key(j, "exit_code");
    if (e->has & ML_OOM_F_EXIT)
        ml_json_i64(j, e->exit_code);
    else
        ml_json_null(j);
    ml_json_kstr(j, "phase", ml_oom_phase_name(e->phase));
    ml_json_key(j, "phase_line");
    if (e->phase_ref.line)
        ml_json_u64(j, e->phase_ref.line);
    else
        ml_json_null(j);
    ml_json_kstr(j, "episode", e->episode ? ml_oom_episode_name(e->episode) : NULL);
    ml_json_kstr(j, "timing", ml_oom_timing_name(e->timing));
    ml_json_key(j, "step");
    if (e->step >= 0)
        ml_json_i64(j, e->step);
    else
        ml_json_null(j);
    ml_json_kstr(j, "file", file_name(o, e->file));
    ml_json_ku64(j, "line", e->line);
    ml_json_kstr(j, "text", e->text);
    ml_json_object_end(j);
}

/* One finding of "findings": the cause, its evidence and its fixes. */
static void json_finding(struct ml_json *j, const struct ml_diag_report *o, const struct ml_finding *f)
{
    ml_json_object_begin(j);
    ml_json_kstr(j, "cause", ml_cause_name(f->cause));
    ml_json_key(j, "confidence");
    ml_json_fixed(j, f->confidence / 10, 2);
    ml_json_kstr(j, "why", f->why);
    ml_json_key(j, "evidence");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < f->n_ev; k++) {
        const struct ml_evidence *v = &f->ev[k];
        ml_json_object_begin(j);
        if (v->line) {
            ml_json_kstr(j, "file", file_name(o, v->file));
            ml_json_ku64(j, "line", v->line);
        } else {
            ml_json_kstr(j, "file", NULL);
            ml_json_key(j, "line");
            ml_json_null(j);
        }
        ml_json_kstr(j, "text", v->text);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    ml_json_key(j, "features");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < f->n_feat; k++) {
        ml_json_object_begin(j);
        ml_json_kstr(j, "name", ml_evidence_row(f->feat[k].id)->name);
        ml_json_key(j, "weight");
        int32_t w = f->feat[k].weight_milli;
        char num[24];
        (void)snprintf(num, sizeof(num), "%s%d.%03d", w < 0 ? "-" : "", abs(w) / 1000, abs(w) % 1000);
        ml_json_number_text(j, num);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    ml_json_key(j, "fixes");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < f->n_fix; k++) {
        const struct ml_fix *x = &f->fix[k];
        ml_json_object_begin(j);
        ml_json_kstr(j, "action", x->action);
        ml_json_kstr(j, "setting", x->setting[0] ? x->setting : NULL);
        ml_json_ku64(j, "cost", x->cost);
        ml_json_key(j, "saves_bytes");
        if (x->has_saves)
            ml_json_u64(j, x->saves_bytes);
        else
            ml_json_null(j);
        ml_json_kstr(j, "saves_from", x->has_saves ? (x->saves_from_ledger ? "ledger" : "log") : NULL);
        ml_json_key(j, "fits");
        if (x->fits >= 0)
            ml_json_bool(j, x->fits == 1);
        else
            ml_json_null(j);
        ml_json_key(j, "device_after_bytes");
        if (x->device_after)
            ml_json_u64(j, x->device_after);
        else
            ml_json_null(j);
        ml_json_kstr(j, "note", x->note[0] ? x->note : NULL);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    ml_json_object_end(j);
}

/* "ledger" and "serving_ledger": the run's training or inference ledger, null without one. */
static void json_ledgers(struct ml_json *j, const struct ml_diagnosis *dg, const struct ml_diag_run *r)
{
    ml_json_key(j, "ledger");
    if (dg->has_ledger) {
        const struct ml_ledger *l = &dg->ledger;
        ml_json_object_begin(j);
        ml_json_kstr(j, "model", r->m.name);
        ml_json_ku64(j, "gpus", l->world);
        ml_json_kbool(j, "gpus_assumed", r->world_guessed);
        ml_json_ku64(j, "capacity_bytes", l->capacity);
        ml_json_kbool(j, "capacity_from_log", r->capacity_from_log);
        ml_json_kstr(j, "phase", ml_phase_name(dg->ledger_phase));
        ml_json_ku64(j, "allocated_bytes", dg->ledger_at_phase);
        ml_json_ku64(j, "device_used_bytes", l->device_used);
        ml_json_ku64(j, "gap_bytes", dg->gap);
        ml_json_kbool(j, "fits", l->fits);
        ml_json_object_end(j);
    } else {
        ml_json_null(j);
    }

    ml_json_key(j, "serving_ledger");
    if (dg->has_serve) {
        const struct ml_serve *sv = &dg->serve;
        ml_json_object_begin(j);
        ml_json_kstr(j, "model", r->m.name);
        ml_json_kstr(j, "engine", ml_engine_name(r->si.engine));
        ml_json_ku64(j, "gpus", (uint64_t)r->si.tp * r->si.pp);
        ml_json_ku64(j, "capacity_bytes", r->cl.gpu.capacity_bytes);
        ml_json_kbool(j, "capacity_from_log", r->capacity_from_log);
        ml_json_ku64(j, "budget_bytes", sv->budget_bytes);
        ml_json_ku64(j, "weights_bytes", sv->weights_bytes);
        ml_json_ku64(j, "activation_bytes", sv->activation_bytes);
        ml_json_ku64(j, "non_torch_bytes", sv->non_torch_bytes);
        ml_json_ku64(j, "kv_bytes_per_token", sv->kv_bytes_per_token);
        ml_json_ku64(j, "kv_bytes", sv->kv_bytes);
        ml_json_ku64(j, "kv_tokens", sv->kv_tokens);
        ml_json_ku64(j, "max_model_len", sv->max_model_len);
        ml_json_key(j, "kv_bytes_log");
        if (dg->has_kv_log)
            ml_json_u64(j, dg->kv_log);
        else
            ml_json_null(j);
        ml_json_kstr(j, "error", sv->error == ML_SERVE_OK ? NULL : sv->error_text);
        ml_json_object_end(j);
    } else {
        ml_json_null(j);
    }
}

/* "context" (versions, warnings counted) and "checks". */
static void json_context(struct ml_json *j, const struct ml_incident *inc, const struct ml_diagnosis *dg)
{
    ml_json_key(j, "context");
    ml_json_object_begin(j);
    ml_json_key(j, "versions");
    ml_json_object_begin(j);
    for (uint32_t i = 0; i < inc->n_versions; i++)
        ml_json_kstr(j, inc->versions[i].name, inc->versions[i].value);
    ml_json_object_end(j);
    ml_json_ku64(j, "cache_flush_warnings", inc->flush_warnings);
    ml_json_ku64(j, "truncated_lines", inc->truncated_lines);
    ml_json_ku64(j, "longest_line_bytes", inc->longest_line);
    ml_json_ku64(j, "json_lines", inc->json_lines);
    ml_json_ku64(j, "cut_messages", inc->cut_messages);
    ml_json_object_end(j);
    if (!dg)
        return;

    ml_json_key(j, "checks");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < dg->n_checks; i++)
        ml_json_str(j, dg->checks[i]);
    ml_json_array_end(j);
}

/* "cannot_tell", "p_cannot_tell", "decide_by", "big_request" (issue 13, docs/cli/diagnose.md). */
static void json_verdict(struct ml_json *j, const struct ml_diagnosis *dg)
{
    ml_json_kbool(j, "cannot_tell", dg->cannot_tell);
    ml_json_key(j, "p_cannot_tell");
    ml_json_fixed(j, dg->p_none, 3);
    ml_json_key(j, "decide_by");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < dg->n_decide; i++)
        ml_json_str(j, dg->decide_by[i]);
    ml_json_array_end(j);
    ml_json_key(j, "big_request");
    if (!dg->big.has) {
        ml_json_null(j);
        return;
    }
    static const char *const what[ML_REQ_COUNT] = {"logits", "eager_scores", "weights", "weight_matrix"};
    const struct ml_big_request *b = &dg->big;
    ml_json_object_begin(j);
    ml_json_ku64(j, "bytes", b->bytes);
    ml_json_key(j, "share_of_card");
    ml_json_fixed(j, b->share_permille, 3);
    ml_json_kstr(j, "likely", b->likely >= 0 ? what[b->h[b->likely].what] : NULL);
    ml_json_key(j, "hypotheses");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < b->n; i++) {
        const struct ml_request_hypothesis *h = &b->h[i];
        ml_json_object_begin(j);
        ml_json_kstr(j, "what", what[h->what]);
        static const char *const count[ML_REQ_COUNT] = {"tokens", "sequence", "parameters", "rows"};
        static const char *const per[ML_REQ_COUNT] = {"vocabulary", "heads", NULL, "columns"};
        ml_json_ku64(j, count[h->what], h->count);
        if (per[h->what])
            ml_json_ku64(j, per[h->what], h->per);
        ml_json_ku64(j, "bytes_per_element", h->bytes);
        ml_json_kbool(j, "matches_model", h->model);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    ml_json_object_end(j);
}

/* "inputs", "lines", "bytes": what was read. */
static void json_inputs(struct ml_json *j, const struct ml_diag_report *o)
{
    ml_json_key(j, "inputs");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < o->inc->n_files; i++)
        ml_json_str(j, file_name(o, i));
    ml_json_array_end(j);
    ml_json_ku64(j, "lines", o->inc->lines);
    ml_json_ku64(j, "bytes", o->inc->bytes);
}

enum ml_status ml_render_diagnose_json(struct ml_buf *out, const struct ml_diag_report *o)
{
    const struct ml_incident *inc = o->inc;
    const struct ml_diagnosis *dg = o->dg;
    struct ml_json js;
    struct ml_json *j = &js;
    ml_json_init(j, out);
    ml_json_document_begin(j);
    json_inputs(j, o);
    if (inc->n_events == 0 || !dg) {
        /* No out-of-memory event: what was read, and nothing found. */
        ml_json_key(j, "events");
        ml_json_array_begin(j);
        ml_json_array_end(j);
        ml_json_key(j, "findings");
        ml_json_array_begin(j);
        ml_json_array_end(j);
        json_context(j, inc, NULL); /* what was read, also when nothing was found (a cut line) */
        ml_json_object_end(j);
        return ml_json_finish(j);
    }
    ml_json_ku64(j, "messages_seen", inc->n_events_seen);
    ml_json_key(j, "events");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < inc->n_events; i++)
        json_event(j, o, &inc->ev[i]);
    ml_json_array_end(j);
    ml_json_ku64(j, "primary", (uint64_t)dg->primary);
    ml_json_key(j, "findings");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < dg->n_findings; i++)
        json_finding(j, o, &dg->f[i]);
    ml_json_array_end(j);
    json_verdict(j, dg);
    json_ledgers(j, dg, o->run);
    json_context(j, inc, dg);
    ml_json_object_end(j);
    return ml_json_finish(j);
}

enum ml_status ml_render_diagnose(struct ml_buf *out, bool json, const struct ml_diag_report *rep,
                                  const struct ml_layout *lay)
{
    if (json)
        return ml_render_diagnose_json(out, rep);
    ml_render_diagnose_text(out, rep, lay);
    return ML_OK;
}
