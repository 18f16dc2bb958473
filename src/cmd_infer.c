/*
 * cmd_infer.c - memledger infer: the inference and serving ledger, before launch.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

const char cmd_infer_usage[] =
    "usage: memledger infer MODEL --gpu NAME|SIZE [options]\n"
    "\n"
    "The inference and serving ledger of one GPU: weights (quantized as the format stores them),\n"
    "the KV cache, the working set, and for serving engines the start-up budget: the KV pool,\n"
    "tokens, blocks, the concurrency at max_model_len, the largest max_model_len that fits, and\n"
    "the error the engine would raise at start-up.\n"
    "\n"
    "options:\n"
    "  --gpu NAME|SIZE        a100-80g, h100, rtx4090, 24G, 79.22GiB (required)\n"
    "  --num-gpus N           GPUs available (default: tp x pp)\n"
    "  --engine hf|vllm|sglang   transformers generate (default), vLLM, SGLang\n"
    "  --dtype bf16|fp16|fp32 weights and activations (default bf16)\n"
    "  --quant none|int8|nf4|fp4|gptq|awq|fp8|int4   weight format (default none)\n"
    "  --group-size G         GPTQ/AWQ/int4 group (default 128)\n"
    "  --double-quant         NF4/FP4 double quantization\n"
    "  --kv-dtype auto|fp16|bf16|fp8   KV cache dtype (default auto = --dtype)\n"
    "  --batch B              sequences generated together (hf; default 1)\n"
    "  --context N            prompt + generated tokens per sequence (hf; default 4096)\n"
    "  --static-cache         hf StaticCache instead of the dynamic cache\n"
    "  --attn eager|sdpa|flash   prefill attention (hf; default sdpa)\n"
    "  --tp N  --pp N         tensor / pipeline parallel sizes (vllm, sglang)\n"
    "  --gpu-memory-utilization F   vLLM (default 0.9)\n"
    "  --max-model-len N      vLLM / SGLang (default: the model's context)\n"
    "  --max-num-seqs N       vLLM (default: 1024 on >= 70 GiB non-A100 GPUs, else 256)\n"
    "  --max-num-batched-tokens N   vLLM (default: 8192 / 2048 for `vllm serve`, x2 with --offline)\n"
    "  --offline              vLLM LLM-class (offline) defaults instead of `vllm serve`\n"
    "  --enforce-eager        vLLM without CUDA graphs\n"
    "  --mem-fraction-static F   SGLang (default 0.88)\n"
    "  --vllm-version X.Y     default 0.19 (V1 engine from 0.7; the V0 budget before)\n"
    "  --transformers-version X.Y   default 4.57 (last-position logits from 4.45)\n"
    "  --json                 machine-readable (exact bytes)\n"
    "  --markdown             a Markdown report\n"
    "  --check                exit 1 when it does not fit or the engine would not start\n"
    "  -h, --help             this help\n";

enum { I_GPU = 300, I_NGPU, I_SERVE, I_JSON, I_MD, I_CHECK };

static void render_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                        const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(out, "%s", m->name);
    if (m->hub_id[0])
        ml_buf_addf(out, " (%s)", m->hub_id);
    ml_set_gib(&b, c->gpu.capacity_bytes);
    ml_buf_addf(out, " · %s · %s%s%s · kv %s", ml_engine_name(s->engine), ml_precision_name(s->precision),
                s->quant ? " weights " : "", s->quant ? ml_quant_name(s->quant) : "",
                s->kv_dtype == ML_KV_FP8 ? "fp8" : s->kv_dtype == ML_KV_AUTO ? "auto" : s->kv_dtype == ML_KV_FP16 ? "fp16" : "bf16");
    if (s->tp > 1 || s->pp > 1)
        ml_buf_addf(out, " · tp %u pp %u", s->tp, s->pp);
    ml_buf_addf(out, _(" · %s (usable %s)\n"), c->gpu.name, b.buf);
    if (c->gpu.note[0])
        ml_buf_addf(out, "  gpu: %s\n", c->gpu.note);
    ml_buf_adds(out, "\n");
    struct ml_table t;
    ml_table_init(&t, 4);
    t.right[2] = true;
    const char *hdr[4] = {_("component"), _("rule"), _("GiB"), _("figure")};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        ml_set_gib(&b, e->bytes);
        const char *row[4] = {ml_comp_name(e->id), e->rule, b.buf, e->figure == ML_FIG_ALLOCATED ? "" : ml_figure_name(e->figure)};
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
    if (s->engine != ML_ENGINE_HF)
        ml_buf_addf(out, _(" · %llu blocks of %u"), (unsigned long long)sv->kv_blocks, s->block_size);
    ml_buf_adds(out, "\n");
    if (s->engine != ML_ENGINE_HF) {
        ml_set_gib(&b, sv->budget_bytes);
        ml_buf_addf(out, _("budget: %s"), b.buf);
        if (s->engine == ML_ENGINE_VLLM)
            ml_buf_addf(out, _(" (capacity x gpu_memory_utilization %u.%03u)"), s->gpu_util_permille / 1000,
                        s->gpu_util_permille % 1000);
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
        ml_buf_addf(out, _("serving: max_model_len %llu · max_num_seqs %llu · max_num_batched_tokens %llu\n"),
                    (unsigned long long)sv->max_model_len, (unsigned long long)sv->max_num_seqs,
                    (unsigned long long)sv->max_num_batched_tokens);
        ml_buf_addf(out, _("  maximum concurrency at %llu tokens per request: %llu.%02llux\n"),
                    (unsigned long long)sv->max_model_len, (unsigned long long)(sv->max_concurrency_x100 / 100),
                    (unsigned long long)(sv->max_concurrency_x100 % 100));
        ml_buf_addf(out, _("  largest max_model_len that fits: %llu\n"), (unsigned long long)sv->max_model_len_fit);
    }
    ml_buf_release(&n);
    ml_buf_adds(out, "\n");
    uint64_t vals[4] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity};
    const char *names[4] = {_("allocated"), _("reserved"), _("device"), _("capacity")};
    for (int i = 0; i < 4; i++) {
        ml_set_gib(&b, vals[i]);
        ml_buf_addf(out, "  %-10s %10s\n", names[i], b.buf);
    }
    if (sv->error != ML_SERVE_OK) {
        ml_buf_addf(out, _("verdict: %s would not start:\n  %s\n"), ml_engine_name(s->engine), sv->error_text);
    } else {
        ml_set_gib(&b, l->fits ? l->headroom : l->deficit);
        ml_buf_addf(out, _("verdict: %s (%s %s)\n"), ml_verdict_name(l->verdict), l->fits ? _("headroom") : _("short by"),
                    b.buf);
    }
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, _("note: %s\n"), l->notes[i]);
    ml_buf_release(&b);
}

static void render_json(struct ml_json *j, const struct ml_model_ref *m, const struct ml_infer *s,
                        const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv)
{
    ml_json_object_begin(j);
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
    ml_json_ku64(j, "max_num_seqs", sv->max_num_seqs);
    ml_json_ku64(j, "max_num_batched_tokens", sv->max_num_batched_tokens);
    ml_json_kstr(j, "error", sv->error == ML_SERVE_OK ? NULL : sv->error_text);
    ml_json_object_end(j);
    ml_json_key(j, "host");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_bytes", sv->weights_bytes);
    ml_json_object_end(j);
    ml_ledger_json_notes(j, l);
    ml_json_object_end(j);
}

int cmd_infer(int argc, char **argv)
{
    /* I_SERVE: the serving options, parsed by ml_infer_option (src/infer_opts.c). */
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, I_GPU}, {"num-gpus", required_argument, NULL, I_NGPU},
        {"engine", required_argument, NULL, I_SERVE}, {"dtype", required_argument, NULL, I_SERVE},
        {"quant", required_argument, NULL, I_SERVE}, {"group-size", required_argument, NULL, I_SERVE},
        {"double-quant", no_argument, NULL, I_SERVE}, {"kv-dtype", required_argument, NULL, I_SERVE},
        {"quant-bits", required_argument, NULL, I_SERVE}, {"dequantize", no_argument, NULL, I_SERVE},
        {"allow-long-max-model-len", no_argument, NULL, I_SERVE},
        {"batch", required_argument, NULL, I_SERVE}, {"context", required_argument, NULL, I_SERVE},
        {"static-cache", no_argument, NULL, I_SERVE}, {"attn", required_argument, NULL, I_SERVE},
        {"tp", required_argument, NULL, I_SERVE}, {"pp", required_argument, NULL, I_SERVE},
        {"gpu-memory-utilization", required_argument, NULL, I_SERVE},
        {"max-model-len", required_argument, NULL, I_SERVE}, {"max-num-seqs", required_argument, NULL, I_SERVE},
        {"max-num-batched-tokens", required_argument, NULL, I_SERVE}, {"offline", no_argument, NULL, I_SERVE},
        {"enforce-eager", no_argument, NULL, I_SERVE}, {"mem-fraction-static", required_argument, NULL, I_SERVE},
        {"vllm-version", required_argument, NULL, I_SERVE}, {"transformers-version", required_argument, NULL, I_SERVE},
        {"json", no_argument, NULL, I_JSON}, {"markdown", no_argument, NULL, I_MD}, {"check", no_argument, NULL, I_CHECK},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct ml_infer s;
    ml_infer_defaults(&s);
    const char *gpu = NULL;
    uint64_t ngpu = 0;
    bool json = false, md = false, check = false;
    int c, li = 0;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case I_GPU: gpu = optarg; break;
        case I_NGPU:
            if (!ml_opt_u64("infer", "--num-gpus", optarg, 1, 4096, &ngpu))
                return ML_EXIT_USAGE;
            break;
        case I_SERVE:
            if (ml_infer_option("infer", longopts[li].name, optarg, &s) != ML_INFER_OPT_OK)
                return ML_EXIT_USAGE;
            break;
        case I_JSON: json = true; break;
        case I_MD: md = true; break;
        case I_CHECK: check = true; break;
        case 'h':
            fputs(_(cmd_infer_usage), stdout);
            return ML_EXIT_OK;
        default:
            return ml_usage_error("infer", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return ml_usage_error("infer", "%s", _("missing MODEL"));
    if (optind + 1 < argc)
        return ml_usage_error("infer", _("unexpected argument '%s'"), argv[optind + 1]);
    if (json && md)
        return ml_usage_error("infer", "%s", _("--json and --markdown exclude each other"));
    if (!gpu)
        return ml_usage_error("infer", "%s", _("--gpu is needed (a card such as h100, or a size such as 24G)"));

    static struct ml_model_ref m;
    static struct ml_inventory inv;
    struct ml_cluster cl;
    if (!ml_resolve_serving(argv[optind], gpu, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    /* --quant awq/gptq on a built-in model whose quantized checkpoint has its own shapes (Qwen
     * padded Qwen2.5-72B's intermediate_size): that checkpoint's config (lib/model/catalog.c). */
    const struct ml_catalog_entry *qv = m.catalog_params && m.arch.wq.method == ML_WQ_NONE
        ? ml_catalog_quant_variant(ml_catalog_find(m.name), s.quant == ML_QUANT_AWQ ? ML_NAME_QUANT_AWQ
                                   : s.quant == ML_QUANT_GPTQ ? ML_NAME_QUANT_GPTQ : ML_NAME_QUANT_NONE, s.quant_bits)
        : NULL;
    if (qv) {
        fprintf(stderr, _("memledger: note: --quant %s: the config of %s, the quantized checkpoint of %s\n"),
                ml_quant_name(s.quant), qv->hub_id, m.name);
        if (!ml_resolve_serving(qv->hub_id, gpu, &m, &cl, &inv))
            return ML_EXIT_USAGE;
    }
    cl.gpus_per_node = ngpu ? (uint32_t)ngpu : s.tp * s.pp;
    cl.nodes = 1;
    static struct ml_ledger l;
    struct ml_serve sv;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_ledger_infer(&m.arch, &inv, &s, &cl, &l, &sv, &d) != ML_OK)
        return ml_usage_error("infer", "%s", d.msg);

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st = ML_OK;
    if (json) {
        struct ml_json j;
        ml_json_init(&j, &out);
        render_json(&j, &m, &s, &cl, &l, &sv);
        st = ml_json_finish(&j);
    } else {
        if (md)
            ml_buf_adds(&out, "# memledger infer\n\n```\n");
        render_text(&out, &m, &s, &cl, &l, &sv);
        if (md)
            ml_buf_adds(&out, "```\n");
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    return check && !l.fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
