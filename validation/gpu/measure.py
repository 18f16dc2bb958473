#!/usr/bin/env python3
"""Measure real training memory on a GPU machine, for memledger's validation.

Builds Hugging Face models from config (random weights: nothing is downloaded), runs a few
training steps under a grid of settings (full / LoRA, gradient checkpointing on / off, eager /
sdpa, batch x sequence), and records per case torch.cuda.max_memory_allocated(),
torch.cuda.max_memory_reserved() and the device-level use nvidia-smi reports, together with the
exact `memledger train` arguments that express the same run. Output: JSON lines.

Runs only where torch with CUDA (or ROCm) is installed. `--dry-run` needs nothing but Python:
it prints the grid and the memledger arguments, and is what the test suite checks.

Usage:
  measure.py --out results.jsonl [--grid smoke|full] [--steps 3] [--config-dir DIR]
  measure.py --dry-run [--grid smoke|full]
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Small models from the built-in catalog: configs in data/models, so the ledger sees the same shapes.
GRIDS = {
    "smoke": {
        "models": ["qwen2.5-0.5b"],
        "methods": ["full", "lora"],
        "grad_ckpt": ["off", "on"],
        "attn": ["sdpa"],
        "batch_seq": [(1, 512), (2, 1024)],
    },
    "full": {
        "models": ["qwen2.5-0.5b", "llama-3.2-1b", "qwen2.5-1.5b"],
        "methods": ["full", "lora"],
        "grad_ckpt": ["off", "on"],
        "attn": ["eager", "sdpa"],
        "batch_seq": [(1, 512), (1, 2048), (4, 1024)],
    },
}


def plan(grid_name):
    g = GRIDS[grid_name]
    for model, method, gc, attn, (b, s) in itertools.product(
        g["models"], g["methods"], g["grad_ckpt"], g["attn"], g["batch_seq"]
    ):
        case = {
            "id": f"{model}-{method}-gc{gc}-{attn}-b{b}-s{s}",
            "model": model,
            "method": method,
            "grad_ckpt": gc,
            "attn": attn,
            "micro_batch": b,
            "seq_len": s,
            "lora_rank": 16 if method == "lora" else 0,
        }
        # The plain HF Trainer path memledger calls --framework hf: fp32 params under bf16
        # autocast, PEFT adapters upcast to fp32, torch AdamW (foreach), a padding mask
        # (the harness pads every batch to s, as a collator does).
        args = [model, "--framework", "hf", "--method", method, "--batch", str(b), "--seq", str(s),
                "--grad-ckpt", gc, "--attn", attn, "--optim", "adamw_torch", "--dtype", "bf16"]
        if method == "lora":
            args += ["--lora-rank", "16", "--lora-target", "all"]
        case["memledger_args"] = args
        yield case


def nvidia_smi_used_mib():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=20, check=True).stdout.strip()
        return int(out.splitlines()[0])
    except Exception:  # noqa: BLE001 - device tool missing or failing: record nothing
        return None


def run_case(case, steps, config_dir):
    import torch  # only on the GPU machine
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    cfg = AutoConfig.from_pretrained(os.path.join(config_dir, case["model"] + ".json"))
    cfg._attn_implementation = case["attn"]
    cfg.use_cache = False
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32).cuda()
    if case["method"] == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model.to(torch.bfloat16),
                               LoraConfig(r=case["lora_rank"], lora_alpha=32, target_modules="all-linear"))
    if case["grad_ckpt"] == "on":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        if case["method"] == "lora":
            model.enable_input_require_grads()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)
    b, s = case["micro_batch"], case["seq_len"]
    ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
    mask = torch.ones_like(ids)
    mask[:, -1] = 0  # one padded position: transformers keeps a materialised mask, as collators do
    t0 = time.time()
    for _ in range(steps):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    result = dict(case)
    result.update({
        "max_allocated_bytes": torch.cuda.max_memory_allocated(),
        "max_reserved_bytes": torch.cuda.max_memory_reserved(),
        "nvidia_smi_used_mib": nvidia_smi_used_mib(),
        "seconds": round(time.time() - t0, 2),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "total_bytes": torch.cuda.get_device_properties(0).total_memory,
    })
    del model, opt
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=sorted(GRIDS), default="smoke")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--out", default="results.jsonl")
    ap.add_argument("--config-dir", default=os.path.join(ROOT, "data", "models"))
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    cases = list(plan(a.grid))
    if a.dry_run:
        for c in cases:
            print(json.dumps(c, sort_keys=True))
        return 0
    with open(a.out, "a", encoding="utf-8") as f:
        for c in cases:
            try:
                r = run_case(c, a.steps, a.config_dir)
            except Exception as e:  # noqa: BLE001 - an OOM is a result too
                r = dict(c, error=f"{type(e).__name__}: {e}"[:400])
            f.write(json.dumps(r, sort_keys=True) + "\n")
            f.flush()
            print(r.get("id"), r.get("max_allocated_bytes"), r.get("error", ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
