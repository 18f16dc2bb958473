/*
 * infer_report.c - memledger infer's report: the inference and serving ledger of one GPU as text,
 * Markdown and JSON (docs/cli/infer.md).
 */
#include "memledger/report.h"

#include "memledger/infer.h"
#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

/* bytes in hundredths of a GiB, rounded down or up. */
static uint64_t gib_hundredths(uint64_t bytes, bool up)
{
    const uint64_t gib = (uint64_t)1 << 30;
    return bytes / gib * 100 + (bytes % gib * 100 + (up ? gib - 1 : 0)) / gib;
}

/* The 80 % interval of each figure (docs/ledger.md, "The inference interval"). */
static void interval_line(struct ml_buf *out, const struct ml_infer *s, const struct ml_serve *sv)
{
    static const char *const what[ML_IFIG_COUNT] = {N_("weights"), N_("KV pool"), N_("device")};
    /* xgettext:no-c-format */
    ml_buf_adds(out, _("80 % interval:"));
    for (int f = 0; f < ML_IFIG_COUNT; f++) {
        if (f == ML_IFIG_KV && s->engine == ML_ENGINE_HF)
            continue; /* generate's KV cache is batch x context: no pool to measure */
        /* "13.38–15.09 GiB": the low end down, the high end up */
        uint64_t lo = gib_hundredths(sv->interval[f][0], false), hi = gib_hundredths(sv->interval[f][1], true);
        ml_buf_addf(out, _(" %s%s %llu.%02llu–%llu.%02llu GiB"), f ? "· " : "", _(what[f]),
                    (unsigned long long)(lo / 100), (unsigned long long)(lo % 100), (unsigned long long)(hi / 100),
                    (unsigned long long)(hi % 100));
    }
    ml_buf_adds(out, "\n");
}

/* The verdict: the start-up error, a start the KV pool's low end does not promise, or the figures'. */
static void verdict_line(struct ml_buf *out, const struct ml_infer *s, const struct ml_ledger *l,
                         const struct ml_serve *sv, const struct ml_layout *lay)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    if (sv->error != ML_SERVE_OK) {
        ml_buf_reset(&b);
        ml_buf_add_sgr(&b, lay, ML_SGR_RED, ml_engine_name(s->engine));
        ml_buf_addf(out, _("verdict: %s would not start:\n  %s\n"), b.buf, sv->error_text);
    } else if (sv->req_capped) {
        /* SGLang starts and caps requests (infer_ledger.c startup_error). */
        ml_buf_reset(&b);
        ml_buf_add_sgr(&b, lay, ML_SGR_RED, ml_engine_name(s->engine));
        ml_buf_addf(out,
                    _("verdict: %s starts, but its KV pool (%llu tokens) caps every request at %llu tokens "
                      "(max_req_len; prompts at most %llu), under --context-length %llu: longer prompts are refused\n"),
                    b.buf, (unsigned long long)sv->kv_tokens, (unsigned long long)sv->max_req_len,
                    (unsigned long long)(sv->max_req_len - 5), (unsigned long long)sv->max_model_len);
        /* SGLang's own flags that make one request fit: a larger static share (its pool), a
         * shorter context_length, an 8-bit KV cache where twice the tokens hold one request. */
        ml_buf_addf(out, _("  to hold one: --context-length %llu"), (unsigned long long)sv->max_model_len_fit);
        if (sv->need_fraction_permille) {
            uint32_t h = (sv->need_fraction_permille + 9) / 10; /* hundredths, rounded up */
            ml_buf_addf(out, _(", or --mem-fraction-static %u.%02u (less is left for activations and CUDA graphs)"),
                        h / 100, h % 100);
        }
        if (s->kv_dtype != ML_KV_FP8 && sv->kv_tokens * 2 >= sv->max_model_len)
            ml_buf_addf(out, _(", or --kv-cache-dtype fp8_e4m3"));
        ml_buf_adds(out, "\n");
    } else if (sv->may_not_start && s->engine == ML_ENGINE_SGLANG) {
        struct ml_buf v;
        ml_buf_init(&v, 64);
        ml_buf_add_sgr(&v, lay, ML_SGR_YELLOW, ml_engine_name(s->engine));
        ml_set_gib(&b, sv->interval[ML_IFIG_KV][0]);
        ml_buf_addf(out,
                    _("verdict: %s may cap requests under --context-length: the low end of the KV pool's 80 %% "
                      "interval (%s) "),
                    v.buf, b.buf);
        ml_set_gib(&b, sv->one_request_bytes);
        ml_buf_addf(out, _("is under one %llu-token request (%s)\n"), (unsigned long long)sv->max_model_len, b.buf);
        ml_buf_release(&v);
    } else if (sv->may_not_start) {
        struct ml_buf v;
        ml_buf_init(&v, 64);
        ml_buf_add_sgr(&v, lay, ML_SGR_YELLOW, ml_engine_name(s->engine));
        ml_set_gib(&b, sv->interval[ML_IFIG_KV][0]);
        ml_buf_addf(out, _("verdict: %s may not start: the low end of the KV pool's 80 %% interval (%s) "), v.buf,
                    b.buf);
        ml_set_gib(&b, sv->one_request_bytes);
        ml_buf_addf(out, _("is under one %llu-token request (%s)\n"), (unsigned long long)sv->max_model_len, b.buf);
        ml_buf_release(&v);
    } else {
        struct ml_buf v;
        ml_buf_init(&v, 64);
        ml_buf_add_sgr(&v, lay, ml_verdict_sgr(l->verdict), _(ml_verdict_name(l->verdict)));
        ml_set_gib(&b, l->fits ? l->headroom : l->deficit);
        ml_buf_addf(out, _("verdict: %s (%s %s)\n"), v.buf, l->fits ? _("headroom") : _("short by"), b.buf);
        ml_buf_release(&v);
    }
    ml_buf_release(&b);
}

void ml_render_infer_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                          const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv,
                          const struct ml_layout *lay)
{
    size_t start = out->len;
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(out, "%s", m->name);
    if (m->hub_id[0])
        ml_buf_addf(out, " (%s)", m->hub_id);
    ml_set_gib(&b, c->gpu.capacity_bytes);
    ml_buf_addf(out, " · %s · %s%s%s · kv %s", ml_engine_name(s->engine), ml_precision_name(s->precision),
                s->quant ? _(" weights ") : "", s->quant ? ml_quant_name(s->quant) : "",
                s->kv_dtype == ML_KV_FP8    ? "fp8"
                : s->kv_dtype == ML_KV_AUTO ? "auto"
                : s->kv_dtype == ML_KV_FP16 ? "fp16"
                                            : "bf16");
    if (s->tp > 1 || s->pp > 1)
        ml_buf_addf(out, " · tp %u pp %u", s->tp, s->pp);
    ml_buf_addf(out, _(" · %s (usable %s)\n"), c->gpu.name, b.buf);
    if (c->gpu.note[0])
        ml_buf_addf(out, _("  gpu: %s\n"), c->gpu.note);
    ml_buf_adds(out, "\n");
    struct ml_table t;
    ml_table_init(&t, 4);
    t.right[2] = true;
    t.flex = 1; /* the rule */
    t.width = lay ? lay->width : 0;
    const char *hdr[4] = {_("component"), _("rule"), _("GiB"), _("figure")};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        ml_set_gib(&b, e->bytes);
        const char *row[4] = {ml_comp_name(e->id), e->rule, b.buf,
                              e->figure == ML_FIG_ALLOCATED ? "" : ml_figure_name(e->figure)};
        ml_table_row(&t, row);
    }
    (void)ml_table_render(&t, out, 0);
    ml_table_release(&t);

    struct ml_buf n;
    ml_buf_init(&n, 64);
    ml_buf_adds(out, "\n");
    ml_fmt_count(&n, sv->kv_bytes_per_token);
    ml_buf_addf(out, _("KV cache: %s B per token"), n.buf);
    ml_set_gib(&b, sv->kv_bytes);
    ml_buf_reset(&n);
    ml_fmt_count(&n, sv->kv_tokens);
    ml_buf_addf(out, _(" · %s = %s tokens"), b.buf, n.buf);
    if (s->engine == ML_ENGINE_VLLM)
        ml_buf_addf(out, _(" · %llu blocks of %u"), (unsigned long long)sv->kv_blocks, sv->page_tokens);
    else if (s->engine == ML_ENGINE_SGLANG)
        ml_buf_addf(out, _(" · page_size %u"), sv->page_tokens);
    ml_buf_adds(out, "\n");
    if (s->engine != ML_ENGINE_HF) {
        ml_set_gib(&b, sv->budget_bytes);
        ml_buf_addf(out, _("budget: %s"), b.buf);
        if (s->engine == ML_ENGINE_VLLM)
            ml_buf_addf(out, _(" (capacity x gpu_memory_utilization %u.%03u)"), s->gpu_util_permille / 1000,
                        s->gpu_util_permille % 1000);
        else
            ml_buf_addf(out, _(" ((capacity - context) x mem_fraction_static %u.%03u)"),
                        sv->mem_fraction_permille / 1000, sv->mem_fraction_permille % 1000);
        ml_set_gib(&b, sv->weights_bytes);
        ml_buf_addf(out, _(" - weights %s"), b.buf);
        if (s->engine == ML_ENGINE_VLLM) {
            ml_set_gib(&b, sv->activation_bytes);
            ml_buf_addf(out, _(" - activation profile %s"), b.buf);
            ml_set_gib(&b, sv->non_torch_bytes);
            ml_buf_addf(out, _(" - non-torch %s"), b.buf);
        }
        ml_set_gib(&b, sv->kv_bytes);
        ml_buf_addf(out, _(" = KV %s\n"), b.buf);
        if (s->engine == ML_ENGINE_VLLM)
            ml_buf_addf(out, _("serving: max_model_len %llu · max_num_seqs %llu · max_num_batched_tokens %llu\n"),
                        (unsigned long long)sv->max_model_len, (unsigned long long)sv->max_num_seqs,
                        (unsigned long long)sv->max_num_batched_tokens);
        else
            /* SGLang's own settings and defaults (infer_ledger.c scheduler_sizes, sglang_requests). */
            ml_buf_addf(out,
                        s->max_num_seqs
                            ? _("serving: context_length %llu · max_running_requests %llu · chunked_prefill_size %llu "
                                "(%s)\n")
                            : _("serving: context_length %llu · max_running_requests %llu (from the KV pool: "
                                "min(tokens / 2, tokens / context_length x 512 within 2048-4096)) · "
                                "chunked_prefill_size %llu (%s)\n"),
                        (unsigned long long)sv->max_model_len, (unsigned long long)sv->max_num_seqs,
                        (unsigned long long)sv->max_num_batched_tokens,
                        s->max_num_batched_tokens                  ? _("given")
                        : c->gpu.capacity_bytes < (25000ull << 20) ? _("SGLang's default under 25,000 MiB")
                                                                   : _("SGLang's default from 25,000 MiB"));
        ml_buf_addf(out, _("  maximum concurrency at %llu tokens per request: %llu.%02llux\n"),
                    (unsigned long long)sv->max_model_len, (unsigned long long)(sv->max_concurrency_x100 / 100),
                    (unsigned long long)(sv->max_concurrency_x100 % 100));
        const char *len_name = s->engine == ML_ENGINE_SGLANG ? "context_length" : "max_model_len";
        if (sv->max_len_limit && sv->pool_len_fit > sv->max_model_len_fit)
            ml_buf_addf(out,
                        _("  largest %s that fits: %llu, the model's limit, not memory (the KV pool holds one request "
                          "of up to %llu tokens)\n"),
                        len_name, (unsigned long long)sv->max_model_len_fit, (unsigned long long)sv->pool_len_fit);
        else if (s->engine == ML_ENGINE_VLLM)
            ml_buf_addf(out, _("  largest max_model_len that fits: %llu\n"), (unsigned long long)sv->max_model_len_fit);
        else
            ml_buf_addf(out, _("  largest context_length that fits: %llu\n"),
                        (unsigned long long)sv->max_model_len_fit);
    }
    ml_buf_release(&n);
    ml_buf_adds(out, "\n");
    uint64_t vals[4] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity};
    const char *names[4] = {_("allocated"), _("reserved"), _("device"), _("capacity")};
    for (int i = 0; i < 4; i++) {
        ml_set_gib(&b, vals[i]);
        ml_buf_addf(out, "  %-10s %10s\n", names[i], b.buf);
    }
    interval_line(out, s, sv);
    verdict_line(out, s, l, sv, lay);
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, _("note: %s\n"), l->notes[i]);
    ml_buf_release(&b);
    (void)ml_text_fold(out, start, lay ? lay->width : 0);
}

void ml_render_infer_markdown(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                              const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv)
{
    ml_buf_adds(out, _("# memledger infer\n\n"));
    ml_buf_adds(out, "```\n");
    ml_render_infer_text(out, m, s, c, l, sv, NULL);
    ml_buf_adds(out, "```\n");
}

enum ml_status ml_render_infer_json(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                                    const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv)
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
    ml_json_ku64(j, "capacity_bytes", l->capacity);
    ml_json_object_end(j);
    ml_json_key(j, "settings");
    ml_json_object_begin(j);
    ml_json_kstr(j, "engine", ml_engine_name(s->engine));
    ml_json_kstr(j, "dtype", ml_precision_name(s->precision));
    ml_json_kstr(j, "quant", ml_quant_name(s->quant));
    ml_json_ku64(j, "tp", s->tp);
    ml_json_ku64(j, "pp", s->pp);
    ml_json_ku64(j, "batch", s->batch);
    ml_json_object_end(j);
    ml_json_key(j, "per_gpu");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_allocated_bytes", l->peak_allocated);
    ml_json_ku64(j, "peak_reserved_bytes", l->peak_reserved);
    ml_json_ku64(j, "device_used_bytes", l->device_used);
    ml_json_ku64(j, "headroom_bytes", l->headroom);
    ml_json_kbool(j, "fits", l->fits);
    /* the text's verdict: an engine that may not start (the KV pool's low end under one request)
     * or may cap requests is tight, one that would not start does not fit (l->fits) */
    ml_json_kstr(j, "verdict", l->fits && sv->may_not_start ? "tight" : ml_verdict_name(l->verdict));
    ml_json_kstr(j, "peak_phase", ml_phase_name(l->peak_phase));
    ml_ledger_json_components(j, l);
    ml_json_object_end(j);
    ml_ledger_json_phases(j, l);
    ml_json_key(j, "kv_cache");
    ml_json_object_begin(j);
    ml_json_ku64(j, "bytes_per_token", sv->kv_bytes_per_token);
    ml_json_ku64(j, "bytes", sv->kv_bytes);
    ml_json_ku64(j, "tokens", sv->kv_tokens);
    ml_json_ku64(j, "blocks", sv->kv_blocks);
    ml_json_object_end(j);
    ml_json_key(j, "serving");
    ml_json_object_begin(j);
    ml_json_ku64(j, "budget_bytes", sv->budget_bytes);
    ml_json_ku64(j, "weights_bytes", sv->weights_bytes);
    ml_json_ku64(j, "activation_bytes", sv->activation_bytes);
    ml_json_ku64(j, "non_torch_bytes", sv->non_torch_bytes);
    ml_json_key(j, "max_concurrency");
    ml_json_fixed(j, sv->max_concurrency_x100, 2);
    ml_json_ku64(j, "max_model_len", sv->max_model_len);
    ml_json_ku64(j, "max_model_len_fit", sv->max_model_len_fit);
    ml_json_ku64(j, "max_model_len_limit", sv->max_len_limit);
    ml_json_ku64(j, "max_num_seqs", sv->max_num_seqs);
    ml_json_ku64(j, "max_num_batched_tokens", sv->max_num_batched_tokens);
    ml_json_kstr(j, "error", sv->error == ML_SERVE_OK ? NULL : sv->error_text);
    if (s->engine == ML_ENGINE_SGLANG)
        ml_json_ku64(j, "max_req_len", sv->max_req_len);
    ml_json_ku64(j, "one_request_bytes", sv->one_request_bytes);
    ml_json_kstr(j, "starts",
                 s->engine == ML_ENGINE_HF  ? NULL
                 : sv->error != ML_SERVE_OK ? "no"
                 /* SGLang starts unless its pool is empty; a low end under one request caps
                  * requests instead (infer_ledger.c startup_error). */
                 : sv->may_not_start && (s->engine != ML_ENGINE_SGLANG || !sv->interval[ML_IFIG_KV][0]) ? "may not"
                                                                                                        : "yes");
    ml_json_object_end(j);
    /* interval: [low, high] bytes of each figure (80 %) and the table row each used. */
    {
        static const char *const keys[ML_IFIG_COUNT] = {"weights_bytes", "kv_cache_bytes", "device_used_bytes"};
        ml_json_key(j, "interval");
        ml_json_object_begin(j);
        for (int f = 0; f < ML_IFIG_COUNT; f++) {
            ml_json_key(j, keys[f]);
            ml_json_array_begin(j);
            ml_json_u64(j, sv->interval[f][0]);
            ml_json_u64(j, sv->interval[f][1]);
            ml_json_array_end(j);
        }
        ml_json_key(j, "rows");
        ml_json_object_begin(j);
        for (int f = 0; f < ML_IFIG_COUNT; f++)
            ml_json_kstr(j, keys[f], sv->interval_key[f]);
        ml_json_object_end(j);
        ml_json_kbool(j, "may_fit", l->may_fit);
        ml_json_object_end(j);
    }
    ml_json_key(j, "host");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_bytes", sv->weights_bytes);
    ml_json_object_end(j);
    ml_ledger_json_notes(j, l);
    ml_json_object_end(j);
    return ml_json_finish(j);
}

enum ml_status ml_render_infer(struct ml_buf *out, enum ml_report_form form, const struct ml_layout *lay,
                               const struct ml_model_ref *m, const struct ml_infer *s, const struct ml_cluster *c,
                               const struct ml_ledger *l, const struct ml_serve *sv)
{
    if (form == ML_FORM_JSON)
        return ml_render_infer_json(out, m, s, c, l, sv);
    if (form == ML_FORM_MARKDOWN)
        ml_render_infer_markdown(out, m, s, c, l, sv);
    else
        ml_render_infer_text(out, m, s, c, l, sv, lay);
    return ML_OK;
}
