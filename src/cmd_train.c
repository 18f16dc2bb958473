/*
 * cmd_train.c - memledger train: the per-GPU training ledger from the user's configs.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/render.h"
#include "memledger/train.h"
#include "memledger/units.h"
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

#define MAX_SETS 32

enum { O_CONFIG = 256, O_DS, O_SET, O_FW, O_GPU, O_NGPU, O_NODES, O_HOSTRAM, O_METHOD, O_RANK, O_TARGET,
       O_QBITS, O_BATCH, O_SEQ, O_GA, O_EVAL, O_DTYPE, O_OPTIM, O_GC, O_ATTN, O_ZERO, O_OFFLOAD, O_FSDP,
       O_EXPSEG, O_TFV, O_DSV, O_TORCHV, O_JSON, O_MD, O_CHECK };

struct train_opts {
    const char *model, *config, *deepspeed, *gpu, *host_ram;
    const char *sets[MAX_SETS];
    int n_sets;
    enum ml_framework fw;
    /* Flag overrides, applied after the files (NULL = not given). */
    const char *method, *rank, *target, *qbits, *batch, *seq, *ga, *dtype, *optim, *gc, *attn, *zero,
        *offload, *fsdp, *tfv, *dsv, *torchv;
    bool eval, expseg;
    uint64_t num_gpus, nodes;
    bool json, markdown, check;
};

/* ---- small helpers --------------------------------------------------------------------- */

static int pick(const char *opt, const char *val, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(val, names[i])) {
            *out = i;
            return 1;
        }
    }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t l = strlen(list);
        (void)snprintf(list + l, sizeof(list) - l, "%s%s", i ? ", " : "", names[i]);
    }
    ml_usage_error("train", _("%s: '%s' is not one of %s"), opt, val, list);
    return 0;
}

/* The directory part of a path ("" for none), for files named relative to the YAML. */
static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        out[0] = '\0';
    else
        (void)snprintf(out, n, "%.*s/", (int)(slash - path), path);
}

static void gib(struct ml_buf *b, uint64_t v)
{
    ml_buf_reset(b);
    ml_fmt_gib(b, v);
}

/* ---- applying the flags ------------------------------------------------------------------- */

static int apply_flags(const struct train_opts *o, struct ml_train *t)
{
    int v;
    uint64_t n;
    if (o->method) {
        static const char *const m[] = {"full", "freeze", "lora", "qlora"};
        if (!pick("--method", o->method, m, 4, &v))
            return 0;
        t->method = (enum ml_method)v;
        if (t->method == ML_METHOD_QLORA && !t->quant_bits)
            t->quant_bits = 4;
        if (t->method != ML_METHOD_QLORA)
            t->quant_bits = 0;
    }
    if (o->qbits) {
        if (!ml_opt_u64("train", "--quant-bits", o->qbits, 4, 8, &n) || (n != 4 && n != 8)) {
            if (n != 4 && n != 8)
                ml_usage_error("train", _("--quant-bits must be 4 or 8"));
            return 0;
        }
        t->quant_bits = (uint32_t)n;
        t->method = ML_METHOD_QLORA;
    }
    if (o->rank) {
        if (!ml_opt_u64("train", "--lora-rank", o->rank, 1, 65536, &t->lora_rank))
            return 0;
    }
    if (o->target) {
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_lora_targets_parse(o->target, &t->lora_targets, &d) != ML_OK) {
            ml_usage_error("train", "--lora-target: %s", d.msg);
            return 0;
        }
    }
    if (o->batch && !ml_opt_u64("train", "--batch", o->batch, 1, 1u << 20, &t->micro_batch))
        return 0;
    if (o->seq && !ml_opt_u64("train", "--seq", o->seq, 1, 1u << 24, &t->seq_len))
        return 0;
    if (o->ga && !ml_opt_u64("train", "--grad-accum", o->ga, 1, 1u << 20, &t->grad_accum))
        return 0;
    if (o->eval)
        t->do_eval = true;
    if (o->dtype) {
        static const char *const d[] = {"bf16", "fp16", "pure_bf16", "fp32"};
        if (!pick("--dtype", o->dtype, d, 4, &v))
            return 0;
        t->precision = (enum ml_precision)v;
    }
    if (o->optim) {
        static const char *const on[] = {"adamw_torch", "adamw_torch_fused", "adamw_8bit", "paged_adamw_8bit",
                                         "paged_adamw_32bit", "adafactor", "sgd", "galore_adamw"};
        if (!pick("--optim", o->optim, on, ML_OPTIM_COUNT, &v))
            return 0;
        t->optim = (enum ml_optim)v;
        t->optim_set = true;
    }
    if (o->gc) {
        static const char *const g[] = {"off", "on", "non-reentrant", "unsloth"};
        if (!pick("--grad-ckpt", o->gc, g, 4, &v))
            return 0;
        t->grad_ckpt = (enum ml_grad_ckpt)v;
    }
    if (o->attn) {
        static const char *const a[] = {"eager", "sdpa", "flash"};
        if (!pick("--attn", o->attn, a, 3, &v))
            return 0;
        t->attn = (enum ml_attn)v;
    }
    if (o->zero) {
        static const char *const z[] = {"0", "1", "2", "3"};
        if (!pick("--zero", o->zero, z, 4, &v))
            return 0;
        if (!o->deepspeed && !(t->deepspeed && t->zero.stage == (uint32_t)v))
            ml_zero_preset(t, (uint32_t)v, false);
        t->zero.stage = (uint32_t)v;
        t->deepspeed = true;
    }
    if (o->fsdp) {
        static const char *const f[] = {"none", "full_shard", "shard_grad_op", "hybrid_shard"};
        if (!pick("--fsdp", o->fsdp, f, 4, &v))
            return 0;
        t->fsdp = (enum ml_fsdp_mode)v;
    }
    if (o->offload) {
        static const char *const of[] = {"none", "optimizer", "param", "all"};
        if (!pick("--offload", o->offload, of, 4, &v))
            return 0;
        if (v && !t->deepspeed && t->fsdp == ML_FSDP_NONE) {
            ml_usage_error("train", "%s", _("--offload needs DeepSpeed (--zero, --deepspeed) or --fsdp"));
            return 0;
        }
        t->zero.offload_optimizer = v == 1 || v == 3;
        t->zero.offload_param = v == 2 || v == 3;
        if (v)
            t->zero.pin_memory = true;
        if (t->fsdp != ML_FSDP_NONE)
            t->fsdp_offload = v != 0;
    }
    if (o->expseg)
        t->expandable_segments = true;
    struct {
        const char *val, *opt;
        uint32_t *dst;
    } vers[] = {{o->tfv, "--transformers-version", &t->versions.transformers},
                {o->dsv, "--deepspeed-version", &t->versions.deepspeed},
                {o->torchv, "--torch-version", &t->versions.torch}};
    for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
        if (!vers[i].val)
            continue;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_version_parse(vers[i].val, vers[i].dst, &d) != ML_OK) {
            ml_usage_error("train", "%s: %s", vers[i].opt, d.msg);
            return 0;
        }
    }
    return 1;
}

/* ---- rendering ----------------------------------------------------------------------------- */

static void phases_str(uint32_t ph, const bool *active, char *out, size_t n)
{
    out[0] = '\0';
    uint32_t act = 0;
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (active[p])
            act |= ML_PH(p);
    if ((ph & act) == act) {
        (void)snprintf(out, n, "all");
        return;
    }
    if ((ph & act) == (act & ~ML_PH(ML_PHASE_LOAD))) {
        (void)snprintf(out, n, "all but load");
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
    case ML_PHASE_LOAD:            return _("model load and optimizer init");
    case ML_PHASE_FORWARD:         return _("end of the forward pass");
    case ML_PHASE_LOSS:            return _("the forward -> backward turn: all saved activations + logits and loss");
    case ML_PHASE_BACKWARD:        return _("backward pass");
    case ML_PHASE_OPTIMIZER_STEP:  return _("optimizer step");
    case ML_PHASE_CHECKPOINT_SAVE: return _("checkpoint save");
    case ML_PHASE_AFTER_SAVE:      return _("the first step after a checkpoint save (cold allocator cache)");
    case ML_PHASE_EVAL:            return _("evaluation");
    case ML_PHASE_GENERATE:        return _("generation (prefill and decoding)");
    case ML_PHASE_SERVING:         return _("serving at steady state");
    case ML_PHASE_COUNT:           break;
    }
    return "";
}

static void describe_run(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                         const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_addf(out, "%s", m->name);
    if (m->hub_id[0])
        ml_buf_addf(out, " (%s)", m->hub_id);
    ml_buf_addf(out, " · %s", ml_method_name(t->method));
    if (t->method == ML_METHOD_LORA || t->method == ML_METHOD_QLORA)
        ml_buf_addf(out, " r=%llu", (unsigned long long)t->lora_rank);
    if (t->method == ML_METHOD_QLORA)
        ml_buf_addf(out, " %u-bit", t->quant_bits ? t->quant_bits : 4);
    if (t->deepspeed)
        ml_buf_addf(out, " · DeepSpeed ZeRO-%u%s%s", t->zero.stage, t->zero.offload_optimizer ? " +offload optimizer" : "",
                    t->zero.offload_param ? " +offload params" : "");
    else if (t->fsdp != ML_FSDP_NONE)
        ml_buf_addf(out, " · FSDP%u %s", t->fsdp_version,
                    t->fsdp == ML_FSDP_FULL_SHARD ? "full_shard" : t->fsdp == ML_FSDP_SHARD_GRAD_OP ? "shard_grad_op" : "hybrid_shard");
    else if (l->world > 1)
        ml_buf_adds(out, " · DDP");
    gib(&b, c->gpu.capacity_bytes);
    ml_buf_addf(out, _(" · %u x %s (usable %s)"), l->world, c->gpu.name, b.buf);
    ml_buf_addf(out, "\n  %s · b=%llu s=%llu GA=%llu · %s · %s attention · grad-ckpt %s · %s · %s\n",
                ml_framework_name(t->framework), (unsigned long long)l->micro_batch, (unsigned long long)l->seq_len,
                (unsigned long long)t->grad_accum, ml_precision_name(t->precision), ml_attn_name(t->attn),
                ml_grad_ckpt_name(t->grad_ckpt), ml_optim_name(t->optim),
                t->expandable_segments ? "expandable segments" : "default allocator");
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

static void render_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                        const struct ml_cluster *c, const struct ml_ledger *l)
{
    describe_run(out, m, t, c, l);
    if (c->gpu.note[0])
        ml_buf_addf(out, "  gpu: %s\n", c->gpu.note);
    ml_buf_adds(out, "\n");
    struct ml_table tb;
    ml_table_init(&tb, 5);
    tb.right[2] = true;
    const char *hdr[5] = {_("component"), _("rule"), _("GiB"), _("live in"), _("figure")};
    ml_table_row(&tb, hdr);
    ml_table_rule(&tb);
    struct ml_buf b;
    ml_buf_init(&b, 64);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        char ph[160];
        phases_str(e->phases, l->phase_active, ph, sizeof(ph));
        gib(&b, e->bytes);
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
        gib(&b, l->phase_allocated[p]);
        ml_buf_addf(out, "%s %s %s", p ? " ·" : "", ml_phase_name((enum ml_phase)p), b.buf);
        gib(&b, l->phase_reserved[p]);
        ml_buf_addf(out, "/%s", b.buf);
    }
    ml_buf_addf(out, _("\n\npeak: %s — %s\n"), ml_phase_name(l->peak_phase), phase_story(l->peak_phase));
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
        gib(&b, top[k]->bytes);
        ml_buf_addf(out, "%s %s %s", k ? "," : "", ml_comp_name(top[k]->id), b.buf);
    }
    ml_buf_adds(out, "\n");
    struct ml_table f;
    ml_table_init(&f, 3);
    f.right[1] = true;
    char v[5][40];
    uint64_t vals[5] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity,
                        l->fits ? l->headroom : l->deficit};
    for (int k = 0; k < 5; k++) {
        gib(&b, vals[k]);
        (void)snprintf(v[k], sizeof(v[k]), "%s", b.buf);
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

    const char *verdict = l->verdict == ML_FITS    ? _("fits")
                          : l->verdict == ML_TIGHT ? _("tight: fits with less than 5% headroom; fragmentation or a long sample can tip it over")
                                                   : _("does not fit");
    ml_buf_addf(out, _("verdict: %s\n"), verdict);

    const struct ml_host *h = &l->host;
    ml_buf_adds(out, _("\nhost RAM per node:"));
    gib(&b, h->peak_bytes);
    ml_buf_addf(out, _(" peak %s"), b.buf);
    gib(&b, h->load_bytes);
    ml_buf_addf(out, _(" (load %s"), b.buf);
    if (h->offload_pinned || h->offload_pageable) {
        gib(&b, h->offload_pinned);
        ml_buf_addf(out, _(", offload pinned %s"), b.buf);
        gib(&b, h->offload_pageable);
        ml_buf_addf(out, _(" + pageable %s"), b.buf);
    }
    if (h->save_bytes) {
        gib(&b, h->save_bytes);
        ml_buf_addf(out, _(", rank-0 save gather %s"), b.buf);
    }
    if (h->checkpoint_offload) {
        gib(&b, h->checkpoint_offload);
        ml_buf_addf(out, _(", offloaded checkpoints %s"), b.buf);
    }
    ml_buf_adds(out, ")\n");
    if (c->host_ram_bytes && h->peak_bytes > c->host_ram_bytes) {
        gib(&b, c->host_ram_bytes);
        ml_buf_addf(out, _("  exceeds the %s of host RAM given with --host-ram\n"), b.buf);
    }
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, _("note: %s\n"), l->notes[i]);
    for (uint32_t i = 0; i < t->n_warnings; i++)
        ml_buf_addf(out, _("warning: %s\n"), t->warnings[i]);
    ml_buf_release(&b);
}

static void render_markdown(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                            const struct ml_cluster *c, const struct ml_ledger *l)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_buf_adds(out, "# memledger train\n\n");
    describe_run(out, m, t, c, l);
    ml_buf_adds(out, "\n| component | rule | GiB | live in | figure |\n|---|---|---:|---|---|\n");
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        char ph[160];
        phases_str(e->phases, l->phase_active, ph, sizeof(ph));
        gib(&b, e->bytes);
        ml_buf_addf(out, "| %s | %s | %s | %s | %s |\n", ml_comp_name(e->id), e->rule, b.buf, ph,
                    ml_figure_name(e->figure));
    }
    ml_buf_addf(out, "\n**Peak:** %s (%s)\n\n", ml_phase_name(l->peak_phase), phase_story(l->peak_phase));
    ml_buf_adds(out, "| figure | GiB |\n|---|---:|\n");
    const char *names[4] = {"allocated", "reserved", "device", "capacity"};
    uint64_t vals[4] = {l->peak_allocated, l->peak_reserved, l->device_used, l->capacity};
    for (int k = 0; k < 4; k++) {
        gib(&b, vals[k]);
        ml_buf_addf(out, "| %s | %s |\n", names[k], b.buf);
    }
    gib(&b, l->fits ? l->headroom : l->deficit);
    ml_buf_addf(out, "| %s | %s |\n\n**Verdict:** %s\n", l->fits ? "headroom" : "short by", b.buf,
                ml_verdict_name(l->verdict));
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_buf_addf(out, "\n- note: %s", l->notes[i]);
    for (uint32_t i = 0; i < t->n_warnings; i++)
        ml_buf_addf(out, "\n- warning: %s", t->warnings[i]);
    ml_buf_adds(out, "\n");
    ml_buf_release(&b);
}

static void json_phases(struct ml_json *j, uint32_t ph)
{
    ml_json_array_begin(j);
    for (int p = 0; p < ML_PHASE_COUNT; p++)
        if (ph & ML_PH(p))
            ml_json_str(j, ml_phase_name((enum ml_phase)p));
    ml_json_array_end(j);
}

static void render_json(struct ml_json *j, const struct ml_model_ref *m, const struct ml_train *t,
                        const struct ml_cluster *c, const struct ml_ledger *l)
{
    ml_json_object_begin(j);
    ml_json_key(j, "model");
    ml_json_object_begin(j);
    ml_json_kstr(j, "name", m->name);
    ml_json_kstr(j, "hub_id", m->hub_id[0] ? m->hub_id : NULL);
    ml_json_ku64(j, "params", l->params);
    ml_json_ku64(j, "trainable_params", l->trainable);
    ml_json_object_end(j);

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
    ml_json_kstr(j, "peak_phase", ml_phase_name(l->peak_phase));
    ml_json_key(j, "components");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        ml_json_object_begin(j);
        ml_json_kstr(j, "id", ml_comp_name(e->id));
        ml_json_ku64(j, "bytes", e->bytes);
        ml_json_key(j, "phases");
        json_phases(j, e->phases);
        ml_json_kstr(j, "figure", ml_figure_name(e->figure));
        ml_json_kstr(j, "rule", e->rule);
        ml_json_kstr(j, "source", e->source);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
    ml_json_object_end(j);

    ml_json_key(j, "phases");
    ml_json_array_begin(j);
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!l->phase_active[p])
            continue;
        ml_json_object_begin(j);
        ml_json_kstr(j, "phase", ml_phase_name((enum ml_phase)p));
        ml_json_ku64(j, "allocated_bytes", l->phase_allocated[p]);
        ml_json_ku64(j, "reserved_bytes", l->phase_reserved[p]);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);

    ml_json_key(j, "host");
    ml_json_object_begin(j);
    ml_json_ku64(j, "peak_bytes", l->host.peak_bytes);
    ml_json_ku64(j, "load_bytes", l->host.load_bytes);
    ml_json_ku64(j, "offload_pinned_bytes", l->host.offload_pinned);
    ml_json_ku64(j, "offload_pageable_bytes", l->host.offload_pageable);
    ml_json_ku64(j, "save_bytes", l->host.save_bytes);
    ml_json_ku64(j, "checkpoint_offload_bytes", l->host.checkpoint_offload);
    ml_json_object_end(j);

    ml_json_key(j, "notes");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_json_str(j, l->notes[i]);
    ml_json_array_end(j);
    ml_json_key(j, "warnings");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < t->n_warnings; i++)
        ml_json_str(j, t->warnings[i]);
    ml_json_array_end(j);
    ml_json_object_end(j);
}

/* ---- the command ------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, struct train_opts *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, O_CONFIG}, {"deepspeed", required_argument, NULL, O_DS},
        {"set", required_argument, NULL, O_SET}, {"framework", required_argument, NULL, O_FW},
        {"gpu", required_argument, NULL, O_GPU}, {"num-gpus", required_argument, NULL, O_NGPU},
        {"nodes", required_argument, NULL, O_NODES}, {"host-ram", required_argument, NULL, O_HOSTRAM},
        {"method", required_argument, NULL, O_METHOD}, {"lora-rank", required_argument, NULL, O_RANK},
        {"lora-target", required_argument, NULL, O_TARGET}, {"quant-bits", required_argument, NULL, O_QBITS},
        {"batch", required_argument, NULL, O_BATCH}, {"seq", required_argument, NULL, O_SEQ},
        {"grad-accum", required_argument, NULL, O_GA}, {"eval", no_argument, NULL, O_EVAL},
        {"dtype", required_argument, NULL, O_DTYPE}, {"optim", required_argument, NULL, O_OPTIM},
        {"grad-ckpt", required_argument, NULL, O_GC}, {"attn", required_argument, NULL, O_ATTN},
        {"zero", required_argument, NULL, O_ZERO}, {"offload", required_argument, NULL, O_OFFLOAD},
        {"fsdp", required_argument, NULL, O_FSDP}, {"expandable-segments", no_argument, NULL, O_EXPSEG},
        {"transformers-version", required_argument, NULL, O_TFV},
        {"deepspeed-version", required_argument, NULL, O_DSV}, {"torch-version", required_argument, NULL, O_TORCHV},
        {"json", no_argument, NULL, O_JSON}, {"markdown", no_argument, NULL, O_MD},
        {"check", no_argument, NULL, O_CHECK}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    o->num_gpus = o->nodes = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_CONFIG: o->config = optarg; break;
        case O_DS: o->deepspeed = optarg; break;
        case O_SET:
            if (o->n_sets >= MAX_SETS)
                return ml_usage_error("train", _("at most %d --set options"), MAX_SETS);
            o->sets[o->n_sets++] = optarg;
            break;
        case O_FW: {
            static const char *const f[] = {"llamafactory", "hf", "litgpt", "torchtune"};
            int v;
            if (!pick("--framework", optarg, f, ML_FW_COUNT, &v))
                return ML_EXIT_USAGE;
            o->fw = (enum ml_framework)v;
            break;
        }
        case O_GPU: o->gpu = optarg; break;
        case O_NGPU:
            if (!ml_opt_u64("train", "--num-gpus", optarg, 1, 4096, &o->num_gpus))
                return ML_EXIT_USAGE;
            break;
        case O_NODES:
            if (!ml_opt_u64("train", "--nodes", optarg, 1, 65536, &o->nodes))
                return ML_EXIT_USAGE;
            break;
        case O_HOSTRAM: o->host_ram = optarg; break;
        case O_METHOD: o->method = optarg; break;
        case O_RANK: o->rank = optarg; break;
        case O_TARGET: o->target = optarg; break;
        case O_QBITS: o->qbits = optarg; break;
        case O_BATCH: o->batch = optarg; break;
        case O_SEQ: o->seq = optarg; break;
        case O_GA: o->ga = optarg; break;
        case O_EVAL: o->eval = true; break;
        case O_DTYPE: o->dtype = optarg; break;
        case O_OPTIM: o->optim = optarg; break;
        case O_GC: o->gc = optarg; break;
        case O_ATTN: o->attn = optarg; break;
        case O_ZERO: o->zero = optarg; break;
        case O_OFFLOAD: o->offload = optarg; break;
        case O_FSDP: o->fsdp = optarg; break;
        case O_EXPSEG: o->expseg = true; break;
        case O_TFV: o->tfv = optarg; break;
        case O_DSV: o->dsv = optarg; break;
        case O_TORCHV: o->torchv = optarg; break;
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
        o->model = argv[optind++];
    if (optind < argc)
        return ml_usage_error("train", _("unexpected argument '%s'"), argv[optind]);
    if (o->json && o->markdown)
        return ml_usage_error("train", "%s", _("--json and --markdown exclude each other"));
    return ML_EXIT_OK;
}

/* Read a config file and apply it; prints the error and returns false on failure. */
static bool load_yaml(const char *path, struct ml_train *t, char *model, size_t model_n, char *ds, size_t ds_n)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = ml_read_file(path, (size_t)4 << 20, &b, &d);
    if (st == ML_OK)
        st = ml_train_apply_yaml(t, b.buf, b.len, path, model, model_n, ds, ds_n, &d);
    ml_buf_release(&b);
    if (st != ML_OK)
        ml_report(&d);
    return st == ML_OK;
}

static bool load_ds(const char *path, struct ml_train *t)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)4 << 20);
    enum ml_status st = ml_read_file(path, (size_t)4 << 20, &b, &d);
    if (st == ML_OK)
        st = ml_zero_from_json(t, b.buf, b.len, path, &d);
    ml_buf_release(&b);
    if (st != ML_OK)
        ml_report(&d);
    return st == ML_OK;
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

    static struct ml_train t;
    ml_train_defaults(&t, o.fw);
    char yaml_model[512] = "", yaml_ds[512] = "";
    if (o.config && !load_yaml(o.config, &t, yaml_model, sizeof(yaml_model), yaml_ds, sizeof(yaml_ds)))
        return ML_EXIT_USAGE;
    char ds_path[1024] = "";
    if (o.deepspeed) {
        (void)snprintf(ds_path, sizeof(ds_path), "%s", o.deepspeed);
    } else if (yaml_ds[0]) {
        /* LLaMA-Factory resolves deepspeed: relative to the working directory; a file next to
         * the YAML is the common layout, so try that first. */
        char dir[512];
        dir_of(o.config, dir, sizeof(dir));
        (void)snprintf(ds_path, sizeof(ds_path), "%s%s", yaml_ds[0] == '/' ? "" : dir, yaml_ds);
        FILE *f = fopen(ds_path, "r");
        if (f)
            fclose(f);
        else
            (void)snprintf(ds_path, sizeof(ds_path), "%s", yaml_ds);
    }
    if (ds_path[0] && !load_ds(ds_path, &t))
        return ML_EXIT_USAGE;
    for (int i = 0; i < o.n_sets; i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_train_set(&t, o.sets[i], &d) != ML_OK) {
            ml_diag_at(&d, "--set", 0, 0);
            ml_report(&d);
            return ML_EXIT_USAGE;
        }
    }
    if (!apply_flags(&o, &t))
        return ML_EXIT_USAGE;

    /* The model: the argument, else the YAML's model_name_or_path. */
    const char *model = o.model ? o.model : yaml_model[0] ? yaml_model : NULL;
    if (!model)
        return ml_usage_error("train", "%s", _("missing MODEL (give a name, config.json or directory, or --config with model_name_or_path)"));
    struct ml_diag d;
    ml_diag_init(&d);
    static struct ml_model_ref m;
    enum ml_status st = ml_resolve_model(model, &m, &d);
    if (st != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    if (!o.gpu)
        return ml_usage_error("train", "%s", _("--gpu is needed (a card such as a100-80g, or a size such as 16G or 15.98GiB)"));
    struct ml_cluster cl;
    memset(&cl, 0, sizeof(cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(o.gpu, &cl.gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    cl.gpus_per_node = (uint32_t)o.num_gpus;
    cl.nodes = (uint32_t)o.nodes;
    if (o.host_ram) {
        ml_diag_init(&d);
        if (ml_size_parse(o.host_ram, &cl.host_ram_bytes, NULL, &d) != ML_OK)
            return ml_usage_error("train", "--host-ram: %s", d.msg);
    }

    static struct ml_inventory inv;
    ml_diag_init(&d);
    if (ml_inventory_build(&m.arch, &inv, &d) != ML_OK) {
        ml_diag_at(&d, m.source, 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    ml_diag_init(&d);
    if (ml_train_check(&t, &m.arch, &cl, &d) != ML_OK) {
        if (!d.origin[0] && o.config)
            ml_diag_at(&d, o.config, 0, 0);
        ml_report(&d);
        return ML_EXIT_USAGE;
    }
    static struct ml_ledger l;
    ml_diag_init(&d);
    if (ml_ledger_train(&m.arch, &inv, &t, &cl, NULL, &l, &d) != ML_OK) {
        ml_report(&d);
        return ML_EXIT_USAGE;
    }

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status rst = ML_OK;
    if (o.json) {
        struct ml_json j;
        ml_json_init(&j, &out);
        render_json(&j, &m, &t, &cl, &l);
        rst = ml_json_finish(&j);
    } else if (o.markdown) {
        render_markdown(&out, &m, &t, &cl, &l);
    } else {
        render_text(&out, &m, &t, &cl, &l);
    }
    if (rst == ML_OK)
        rst = ml_write_stdout(&out);
    ml_buf_release(&out);
    if (rst != ML_OK)
        return ML_EXIT_USAGE;
    return o.check && !l.fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
