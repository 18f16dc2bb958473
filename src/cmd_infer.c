/*
 * cmd_infer.c - memledger infer: the inference and serving ledger, before launch.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/report.h"
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

int cmd_infer(int argc, char **argv)
{
    /* I_SERVE: the serving options, parsed by ml_infer_option (src/infer_opts.c). */
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, I_GPU}, {"num-gpus", required_argument, NULL, I_NGPU},
        {"engine", required_argument, NULL, I_SERVE}, {"dtype", required_argument, NULL, I_SERVE},
        {"quant", required_argument, NULL, I_SERVE}, {"group-size", required_argument, NULL, I_SERVE},
        {"double-quant", no_argument, NULL, I_SERVE}, {"kv-dtype", required_argument, NULL, I_SERVE},
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
    if (json)
        st = ml_render_infer_json(&out, &m, &s, &cl, &l, &sv);
    else if (md)
        ml_render_infer_markdown(&out, &m, &s, &cl, &l, &sv);
    else
        ml_render_infer_text(&out, &m, &s, &cl, &l, &sv);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    return check && !l.fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
