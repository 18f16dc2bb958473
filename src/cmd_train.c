/*
 * cmd_train.c - memledger train: the per-GPU training ledger from the user's configs.
 */
#include "cli.h"
#include "train_setup.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/ledger.h"
#include "memledger/report.h"
#include "i18n.h"

const char cmd_train_usage[] =
    "usage: memledger train [MODEL] [--config train.yaml] [--deepspeed ds.json] [options]\n"
    "\n"
    "The per-GPU memory ledger of a training run: every component (weights, gradients, optimizer\n"
    "states, ZeRO buffers, activations, logits, workspaces, allocator reserve, context), the phase\n"
    "where the peak falls, the three figures (allocated, reserved, device), whether it fits, and\n"
    "the host RAM. MODEL is a built-in name, hub id, config.json or model directory; with --config\n"
    "it defaults to the YAML's model_name_or_path.\n"
    "\n"
    "inputs:\n"
    "  --config FILE          LLaMA-Factory training YAML\n"
    "  --deepspeed FILE       DeepSpeed JSON (overrides the YAML's deepspeed:)\n"
    "  --set KEY=VALUE        override any YAML key (repeatable)\n"
    "  --framework NAME       llamafactory (default), hf, litgpt, torchtune: whose defaults apply\n"
    "hardware:\n"
    "  --gpu NAME|SIZE        a100-80g, h100, 16G (a card sold as 16 GB), 15.98GiB (required)\n"
    "  --num-gpus N           GPUs per node (default 1)\n"
    "  --nodes M              nodes (default 1)\n"
    "  --host-ram SIZE        host RAM per node, to check offload and saves against\n"
    "training knobs (each overrides the YAML):\n"
    "  --method full|lora|qlora|freeze   --lora-rank R   --lora-target LIST|all\n"
    "  --quant-bits 4|8       QLoRA base precision (default 4)\n"
    "  --batch B              micro-batch per GPU      --seq S     tokens per sample\n"
    "  --grad-accum G         gradient accumulation    --eval      include an eval pass\n"
    "  --dtype bf16|fp16|fp32|pure_bf16\n"
    "  --optim NAME           adamw_torch, adamw_torch_fused, adamw_8bit, paged_adamw_8bit,\n"
    "                         paged_adamw_32bit, adafactor, sgd\n"
    "  --grad-ckpt on|off|non-reentrant|unsloth\n"
    "  --attn eager|sdpa|flash\n"
    "  --zero 0|1|2|3         DeepSpeed stage (LLaMA-Factory's ds_zN config when no --deepspeed)\n"
    "  --offload none|optimizer|param|all\n"
    "  --fsdp full_shard|shard_grad_op|hybrid_shard|none\n"
    "  --expandable-segments  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (HIP: PYTORCH_HIP_ALLOC_CONF)\n"
    "versions (defaults: the latest releases the accounting notes follow):\n"
    "  --transformers-version X.Y   --deepspeed-version X.Y.Z   --torch-version X.Y\n"
    "output:\n"
    "  --json                 machine-readable (exact bytes; keys in docs/cli/train.md)\n"
    "  --markdown             a Markdown report\n"
    "  --check                exit 1 when it does not fit\n"
    "  -h, --help             this help\n";

enum { O_JSON = ML_TO_END, O_MD, O_CHECK };

struct train_opts {
    struct ml_train_opts s; /* the options shared with compare (train_setup.h) */
    bool json, markdown, check;
};

/* ---- the command ------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, struct train_opts *o)
{
    static const struct option longopts[] = {
        ML_TRAIN_LONGOPTS,
        {"json", no_argument, NULL, O_JSON}, {"markdown", no_argument, NULL, O_MD},
        {"check", no_argument, NULL, O_CHECK}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    ml_train_opts_init(&o->s, "train");
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = ml_train_opt(&o->s, c, optarg);
        if (r < 0)
            return ML_EXIT_USAGE;
        if (r > 0)
            continue;
        switch (c) {
        case O_JSON: o->json = true; break;
        case O_MD: o->markdown = true; break;
        case O_CHECK: o->check = true; break;
        case 'h':
            fputs(_(cmd_train_usage), stdout);
            return -1;
        default:
            return ml_usage_error("train", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        o->s.model = argv[optind++];
    if (optind < argc)
        return ml_usage_error("train", _("unexpected argument '%s'"), argv[optind]);
    if (o->json && o->markdown)
        return ml_usage_error("train", "%s", _("--json and --markdown exclude each other"));
    return ML_EXIT_OK;
}

int cmd_train(int argc, char **argv)
{
    struct train_opts o;
    memset(&o, 0, sizeof(o));
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return ML_EXIT_OK;
    if (rc != ML_EXIT_OK)
        return rc;

    static struct ml_train_setup s;
    rc = ml_train_setup_build(&o.s, &s);
    if (rc != ML_EXIT_OK)
        return rc;
    const struct ml_model_ref *m = &s.m;
    const struct ml_train *t = &s.t;
    const struct ml_cluster *cl = &s.cl;
    const struct ml_ledger *l = &s.l;

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json)
        rst = ml_render_train_json(&out, m, t, cl, l);
    else if (o.markdown)
        ml_render_train_markdown(&out, m, t, cl, l);
    else
        ml_render_train_text(&out, m, t, cl, l);
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (rst != ML_OK)
        return ML_EXIT_USAGE;
    return o.check && !l->fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
