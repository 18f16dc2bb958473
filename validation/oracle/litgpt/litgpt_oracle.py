#!/usr/bin/env python3
"""litgpt_oracle.py - live tensor bytes of LitGPT's own finetune steps, run on the CPU.

A case names a LitGPT config (litgpt/config.py `name`), the finetune script (full, lora, adapter),
the LoRA groups, the precision, micro-batch and sequence. The model is LitGPT's own class for that
script (litgpt/lora.py GPT, litgpt/adapter.py GPT, litgpt/model.py GPT) at the real width and a
reduced depth (two depths give the per-Block slope), set up by Lightning Fabric with the script's
precision plugin (fabric.setup), random weights. Each step is what the script's `fit` does
(litgpt/finetune/{lora,adapter}.py fit: `model(input_ids, lm_head_chunk_size=128)`, the last
chunk shifted, `chunked_cross_entropy`, `fabric.backward(loss / accum)`, `optimizer.step()`,
`optimizer.zero_grad()`; finetune/full.py fit: `model(input_ids)` and `chunked_cross_entropy` on the
unchunked logits), run twice. `model.max_seq_length` is set to the sequence, as fit does
(`min(longest_seq_length, train.max_seq_length)`), which sizes the rope cache.

The live bytes are recorded by validation/oracle/oracle.py's Tracker (imported, not copied): each
new storage counted once, rounded to the CUDA allocator's 512 B block, by phase and category.
Phases: forward until the lm_head's input, loss until the gradient reaches that input, backward,
optimizer_step.

Usage: litgpt_oracle.py CASE.json|- [--out FILE] [--line]; regenerate every committed case with
validation/oracle/litgpt/regen.sh (README.md there).
"""

import argparse
import gc
import json
import os
import platform
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oracle  # noqa: E402  validation/oracle/oracle.py: Tracker, summarize

import lightning as L  # noqa: E402
from litgpt.utils import chunked_cross_entropy  # noqa: E402

PRECISIONS = ("bf16-true", "16-true", "32-true")
QUANTIZE = {"bnb.nf4": ("nf4", False), "bnb.nf4-dq": ("nf4", True), "bnb.fp4": ("fp4", False),
            "bnb.fp4-dq": ("fp4", True)}


def quantize_linears(module, quant_type, double_quant, dtype, prefix=""):
    """Every nn.Linear (lm_head and the LoRA base linears too) becomes a bitsandbytes Linear4bit
    quantized from its own weight, as lightning fabric plugins/precision/bitsandbytes.py
    _convert_layers + _Linear4bit.quantize_ do (ignore_modules empty in finetune/lora.py). Lightning's
    quantize_ refuses a non-CUDA device, so the same bitsandbytes calls are made here on the CPU
    (Params4bit.to quantizes with bitsandbytes' CPU backend)."""
    import bitsandbytes as bnb

    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                  compute_dtype=dtype, compress_statistics=double_quant, quant_type=quant_type,
                                  device="meta")
            w = bnb.nn.Params4bit(child.weight.data.clone(), requires_grad=False, quant_type=quant_type,
                                  compress_statistics=double_quant)
            q.weight = w.to("cpu")
            if child.bias is not None:
                q.bias = torch.nn.Parameter(child.bias.data.clone(), requires_grad=False)
            module.__setattr__(name, q)
        else:
            quantize_linears(child, quant_type, double_quant, dtype, f"{prefix}.{name}")


def keep_4bit_inputs():
    """bitsandbytes before 0.43.2 (autograd/_functions.py MatMul4Bit.forward, changed by commit
    9e753741 "fix QLoRA mem bug") kept the input: `ctx.tensors = (A, B)` where later versions keep
    `(None, B)`. The one line is put back here, as a plain ctx attribute as it was, so the run holds
    what bitsandbytes 0.42.0 (the version litgpt pinned from 2024-03 to 2024-12) holds."""
    from bitsandbytes.autograd import _functions as bf

    fwd = bf.MatMul4Bit.forward

    def forward(ctx, A, B, out=None, bias=None, quant_state=None):
        y = fwd(ctx, A, B, out, bias, quant_state)
        if not ctx.is_empty and any(ctx.needs_input_grad[:2]):
            ctx.tensors = (A, ctx.tensors[1])
        return y

    bf.MatMul4Bit.forward = staticmethod(forward)


def build(case, n_layer):
    """LitGPT's model class for the script, set up by Fabric with the script's precision."""
    method = case["method"]
    kw = {"n_layer": n_layer}
    if method in ("lora", "qlora"):
        from litgpt.lora import GPT, Config, mark_only_lora_as_trainable

        g = case.get("lora", {})
        kw.update(lora_r=case.get("lora_r", 8), lora_alpha=case.get("lora_alpha", 16),
                  lora_dropout=case.get("lora_dropout", 0.05),
                  lora_query=g.get("query", True), lora_key=g.get("key", False),
                  lora_value=g.get("value", True), lora_projection=g.get("projection", False),
                  lora_mlp=g.get("mlp", False), lora_head=g.get("head", False))
        mark = mark_only_lora_as_trainable
    elif method == "adapter":
        from litgpt.adapter import GPT, Config, mark_only_adapter_as_trainable as mark
    elif method == "full":
        from litgpt.model import GPT, Config

        mark = None
    else:
        raise SystemExit(f"litgpt_oracle: method {method} is not a LitGPT finetune script here")
    config = Config.from_name(case["model"], **kw)
    fabric = L.Fabric(accelerator="cpu", devices=1, precision=case.get("precision", "bf16-true"))
    with fabric.init_module(empty_init=False):
        model = GPT(config)
    if case.get("quantize"):  # finetune/lora.py: BitsandbytesPrecision(quantize[4:], dtype)
        qt, dq = QUANTIZE[case["quantize"]]
        quantize_linears(model, qt, dq, torch.bfloat16)
    if mark:
        mark(model)
    model = fabric.setup_module(model)
    return fabric, model, config


def run_depth(case, n_layer):
    torch.manual_seed(0)
    fabric, model, config = build(case, n_layer)
    b, s = case["batch"], case["seq"]
    model.max_seq_length = s  # finetune fit: min(longest_seq_length, train.max_seq_length)
    trk = oracle.Tracker()
    params = list(model.parameters())
    for m in model.modules():  # the 4-bit linears' quantization state (absmax, code) is resident
        qs = getattr(getattr(m, "weight", None), "quant_state", None)
        if qs is not None:
            for t in (qs.absmax, qs.code) + ((qs.state2.absmax, qs.state2.code) if qs.nested else ()):
                trk.param_ptrs.add(t.untyped_storage()._cdata)
                trk.track(t, "parameters")
    for p in params:
        trk.param_ptrs.add(p.untyped_storage()._cdata)
        trk.track(p, "parameters")
    for bf in model.buffers():
        trk.track(bf, "buffers")
    trainable = [p for p in params if p.requires_grad]
    # finetune/*.py: instantiate_torch_optimizer(AdamW) on the trainable parameters; foreach as on
    # CUDA (torch/optim/optimizer.py _default_to_fused_or_foreach picks foreach for CUDA tensors).
    opt = torch.optim.AdamW(trainable, lr=2e-4, weight_decay=0.0, foreach=True)
    opt = fabric.setup_optimizers(opt)
    for p in trainable:
        p.register_post_accumulate_grad_hook(lambda q: (trk.retag(q.grad, "gradients"), None)[1])
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.padded_vocab_size, (b, s + 1), generator=gen)
    input_ids, targets = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    trk.track(input_ids, "inputs")
    trk.track(targets, "inputs")
    head = model.module.lm_head if hasattr(model, "module") else model.lm_head

    def head_pre(mod, inp):
        if trk.phase == "forward":
            trk.set_phase("loss")
            h = inp[0]
            if h.requires_grad:
                h.register_hook(lambda grad: (trk.set_phase("backward"), None)[1])

    head.register_forward_pre_hook(head_pre)
    chunked = case["method"] in ("lora", "qlora", "adapter")
    accum = case.get("grad_accum", 1)
    with trk:
        for _ in range(2):
            trk.set_phase("forward")
            if chunked:  # finetune/lora.py, adapter.py fit
                logits = model(input_ids, lm_head_chunk_size=128)
                logits[-1] = logits[-1][..., :-1, :]
                loss = chunked_cross_entropy(logits, targets[..., 1:])
            else:  # finetune/full.py fit
                logits = model(input_ids)
                loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])
            # fit keeps `logits` and `loss` bound until the next step rebinds them: the fp32 logits
            # stay live through the backward, the optimizer step and the next forward.
            if trk.phase != "loss":
                trk.set_phase("loss")
            fabric.backward(loss / accum)
            trk.set_phase("optimizer_step")
            opt.step()
            for st in opt.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor):
                        trk.retag(v, "optimizer_states")
            opt.zero_grad()
            trk.set_phase("idle")
    dims = {"n_layer": n_layer, "params": sum(p.numel() for p in params),
            "trainable_params": sum(p.numel() for p in trainable),
            "n_embd": config.n_embd, "n_head": config.n_head, "n_query_groups": config.n_query_groups,
            "head_size": config.head_size, "intermediate_size": config.intermediate_size,
            "padded_vocab_size": config.padded_vocab_size,
            "attention_logit_softcapping": config.attention_logit_softcapping}
    return oracle.summarize(trk), dims


def versions():
    import importlib.metadata as md

    v = {"python": platform.python_version(), "torch": torch.__version__}
    for pkg in ("litgpt", "lightning", "bitsandbytes"):
        try:
            v[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    if "bitsandbytes" not in v and "bitsandbytes" in sys.modules:  # imported from ORACLE_BNB_PATH
        v["bitsandbytes"] = sys.modules["bitsandbytes"].__version__
    return v


def run_case(case):
    t0 = time.time()
    depths = {}
    for d in case.get("depths", (1, 2)):
        res, dims = run_depth(case, d)
        depths[str(d)] = {"dims": dims, "phases": res}
        gc.collect()
    return {"case": case, "versions": versions(), "seconds": round(time.time() - t0, 2),
            "depths": depths}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="case JSON file, or - for stdin")
    ap.add_argument("--out", help="write the result here (default stdout)")
    ap.add_argument("--line", action="store_true", help="one line of JSON (cases.jsonl)")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "1")))
    case = json.load(sys.stdin if a.case == "-" else open(a.case, encoding="utf-8"))
    if case.get("precision", "bf16-true") not in PRECISIONS:
        raise SystemExit(f"litgpt_oracle: precision {case['precision']} is not run here")
    if case.get("quantize") and case["quantize"] not in QUANTIZE:
        raise SystemExit(f"litgpt_oracle: quantize {case['quantize']} is not run here")
    if case.get("bnb_keeps_input"):
        keep_4bit_inputs()
    res = run_case(case)
    text = json.dumps(res, sort_keys=True) if a.line else json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
