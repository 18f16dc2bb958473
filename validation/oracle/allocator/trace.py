#!/usr/bin/env python3
"""trace.py - the storage allocations and frees of real HF training steps, in order, per sequence length.

The model is built by the real transformers / PEFT code (oracle.py's config loading) on the `meta`
device, so every op runs its shape function only: the storages, their sizes and the order in which
autograd, checkpointing and the optimizer create and drop them are those of the real code, and a
7B-wide model at full depth costs seconds per step on the CPU. The recorder is the oracle's Tracker
(a TorchDispatchMode that counts each new storage once, weak references that see it freed;
torch/distributed/_tools/mem_tracker.py does the same) extended to log (alloc, serial, nbytes) and
(free, serial) in order.

Where the meta path differs from CUDA, and what is done:
- attention: transformers' sdpa path on meta takes the math kernel (s x s scores). The run uses
  `aten._scaled_dot_product_flash_attention`, the op torch's own SDPA runs on CUDA with flash
  (its meta function allocates what the CUDA kernel returns: output and logsumexp; backward the
  same), registered as a transformers attention function - the case's `attn: flash`.
- data-dependent checks (`.item()` on a meta tensor: transformers' packed-sequence test) answer
  "true / 1", the value of an unpadded single sequence, which is what these runs are.
- kernels' internal workspaces (cuBLAS: its own fixed workspace) are not storages and are not seen.
- `loss: qwen1` computes the loss as Qwen-7B's remote code does (modeling_qwen.py QWenLMHeadModel
  .forward: bf16 logits, `shift_logits = lm_logits[..., :-1, :].contiguous()`, CrossEntropyLoss on
  them), the path of ms-swift's 2024-01 benchmark; `loss: hf` is transformers' own loss_function
  (ForCausalLMLoss: logits.float()); `loss: hf-4.39` as LlamaForCausalLM.forward did in transformers
  4.36-4.45 (fp32 logits, then a contiguous shifted copy for CrossEntropyLoss).

Output: JSON {"case", "persistent": bytes live before the first step, "load": their events,
"steps": [{"seq", "events": [[+1|-1, serial, nbytes]], "marks": [event index where backward, the
optimizer step and zero_grad begin]}]};
the first step (optimizer states created) comes first, then one steady step per length.

Usage: trace.py --model qwen1.5-7b --method lora --ckpt on --layers 32 --seqs 512,1024 --out T.json
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oracle  # noqa: E402

ROOT = oracle.ROOT


class Recorder(oracle.Tracker):
    """oracle.Tracker on meta storages, with the order of allocations and frees logged."""

    def __init__(self):
        super().__init__()
        self.events = []

    DEVICES = ("meta", "cpu")
    BLOCK = 1  # exact bytes: the allocator model rounds them itself

    def allocated(self, s, nb):
        self.events.append((1, s, nb))

    def _free(self, ptr, s):
        r = self.rec.get(s)
        if r is not None:
            self.events.append((-1, s, r[0]))
        super()._free(ptr, s)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default and args[0].device.type == "meta":
            return True if args[0].dtype == torch.bool else 1
        return super().__torch_dispatch__(func, types, args, kwargs)


def flash_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """torch's CUDA flash SDPA op on (b, h, s, d); returns (b, s, h, d) as transformers' flash path does."""
    if key.shape[1] != query.shape[1]:  # GQA: flash-attn reads the shared heads; expand as a view
        rep = query.shape[1] // key.shape[1]
        key = key[:, :, None].expand(-1, -1, rep, -1, -1).flatten(1, 2)
        value = value[:, :, None].expand(-1, -1, rep, -1, -1).flatten(1, 2)
    out = torch.ops.aten._scaled_dot_product_flash_attention(query, key, value, 0.0, True, False, scale=scaling)[0]
    return out.transpose(1, 2), None


def quantize_4bit(model):
    """QLoRA's base: every linear but the LM head as bitsandbytes' Linear4bit (NF4, double quant,
    bf16 compute: BitsAndBytesConfig(load_in_4bit, bnb_4bit_quant_type nf4, use_double_quant)), its
    weight quantized on meta by bitsandbytes' own op (Params4bit._quantize -> quantize_4bit, whose
    fake kernel gives the packed weight and the quant state's absmax / nested absmax). The forward
    and backward dequantize through `bitsandbytes::dequantize_4bit` (its fake kernel: a bf16
    weight, the transient QLoRA frees after each matmul)."""
    import bitsandbytes as bnb

    for name, mod in list(model.named_modules()):
        for cname, child in list(mod.named_children()):
            if not isinstance(child, torch.nn.Linear) or cname == "lm_head":
                continue
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=torch.bfloat16, compress_statistics=True, quant_type="nf4",
                                  quant_storage=torch.uint8, device="meta")
            w = bnb.nn.Params4bit(torch.empty(child.weight.shape, dtype=torch.bfloat16, device="meta"),
                                  requires_grad=False, compress_statistics=True, quant_type="nf4",
                                  quant_storage=torch.uint8, module=q)
            q.weight = w._quantize(torch.device("meta"))
            if child.bias is not None:
                q.bias = child.bias
            setattr(mod, cname, q)


def build(args):
    from transformers import AttentionInterface, AutoModelForCausalLM

    AttentionInterface.register("meta_fa2", flash_attention)
    path = os.path.join(ROOT, "data", "models", args.model + ".json")
    cfg, period, n = oracle.load_config(path, 1)
    text = cfg.get_text_config()
    text.num_hidden_layers = args.layers
    if getattr(text, "layer_types", None):
        text.layer_types = [text.layer_types[i % period] for i in range(args.layers)]
    dtype = torch.bfloat16
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="meta_fa2")
    if args.method == "qlora":
        quantize_4bit(model)
    if args.method in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=args.rank, lora_alpha=2 * args.rank, lora_dropout=args.dropout,
                                                 target_modules=args.targets.split(","), task_type="CAUSAL_LM"),
                               autocast_adapter_dtype=args.adapter_dtype == "fp32")
    if args.ckpt == "on":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        if args.method in ("lora", "qlora"):
            model.enable_input_require_grads()
    model.train()
    return model


def qwen1_loss(model, ids):
    """QWenLMHeadModel.forward (Qwen-7B remote code): bf16 logits, a contiguous shifted copy, CrossEntropyLoss."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = base.model(input_ids=ids).last_hidden_state
    lm_logits = base.lm_head(hidden)
    shift_logits = lm_logits[..., :-1, :].contiguous()
    shift_labels = ids[..., 1:].contiguous()
    return torch.nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


def hf439_loss(model, ids):
    """LlamaForCausalLM.forward in transformers 4.36-4.45: `logits = logits.float()`, then
    `shift_logits = logits[..., :-1, :].contiguous()` and CrossEntropyLoss on them (the 12 B x b x s
    x V of the ledger's logits rule for these versions)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = base.model(input_ids=ids).last_hidden_state
    logits = base.lm_head(hidden).float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = ids[..., 1:].contiguous()
    return torch.nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen1.5-7b")
    ap.add_argument("--method", choices=("lora", "qlora", "full"), default="lora")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--targets", default="q_proj,k_proj,v_proj")
    ap.add_argument("--adapter-dtype", choices=("fp32", "bf16"), default="fp32",
                    help="PEFT's autocast_adapter_dtype (fp32 adapters, its default) or the model's dtype")
    ap.add_argument("--dropout", type=float, default=0.0, help="LoRA dropout (PEFT: a dropout of x per adapter)")
    ap.add_argument("--ckpt", choices=("on", "off"), default="on")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--loss", choices=("hf", "qwen1", "hf-4.39"), default="hf")
    ap.add_argument("--seqs", required=True, help="comma-separated lengths; the first also runs the first step")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    seqs = [int(x) for x in a.seqs.split(",")]
    model = build(a)
    rec = Recorder()
    params = list(model.parameters())
    for p in params:
        rec.track(p, "parameters")
    for b in model.buffers():
        rec.track(b, "buffers")
    trainable = [p for p in params if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-5, foreach=True)  # HF Trainer adamw_torch
    persistent = rec.cur
    load = rec.events
    steps = []
    with rec:
        for s in [seqs[0]] + seqs:
            rec.events = []
            ids = torch.zeros((a.batch, s), dtype=torch.long, device="meta")
            if a.loss == "qwen1":
                loss = qwen1_loss(model, ids)
            elif a.loss == "hf-4.39":
                loss = hf439_loss(model, ids)
            else:
                loss = model(input_ids=ids, labels=ids).loss
            marks = [len(rec.events)]  # backward starts
            loss.backward()
            del loss
            marks.append(len(rec.events))  # optimizer step starts
            opt.step()
            marks.append(len(rec.events))  # zero_grad starts
            opt.zero_grad(set_to_none=True)
            del ids
            steps.append({"seq": s, "events": rec.events, "marks": marks})
    case = {k: getattr(a, k) for k in ("model", "method", "rank", "targets", "ckpt", "layers", "batch", "loss",
                                         "dropout", "adapter_dtype")}
    case["versions"] = oracle.versions()
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"case": case, "persistent": persistent, "load": load, "steps": steps}, f)


if __name__ == "__main__":
    main()
