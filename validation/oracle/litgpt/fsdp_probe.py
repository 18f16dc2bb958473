#!/usr/bin/env python3
"""fsdp_probe.py - the root unit's gradient assembly under torch FSDP with use_orig_params, on the CPU.

Lightning's FSDPStrategy (litgpt finetune/full.py with devices > 1) wraps each Block in its own
FSDP unit and leaves the embedding, ln_f and lm_head in the root unit, with use_orig_params=True
(lightning fabric strategies/fsdp.py). The forward then uses views of each unit's flat parameter
made by torch.split (torch/distributed/fsdp/_flat_param.py _use_unsharded_views(as_params=False),
_get_unflat_views_*), so autograd reaches a flat parameter through one SplitWithSizesBackward that
waits for all its views' gradients and concatenates them. This probe runs LitGPT's model.py GPT
(bf16, random weights, reduced depth) in torch FSDP on one CPU process (gloo; with one rank torch
switches FULL_SHARD to NO_SHARD, the views and the split are the same) for three micro-steps, the
first two under no_sync as finetune/full.py's no_backward_sync does, with validation/oracle/oracle.py's
Tracker, and compares the second backward's peak beyond the parameters, the accumulated gradients
and the logits with the ledger's rule (docs/ledger.md L5): 4 B x the root unit (the lm_head's
gradient held from the start, the embedding's, and their concatenation).

Usage: fsdp_probe.py [MODEL] [LAYERS] [SEQ] > fsdp_probe.json   (defaults: tiny-llama-1.1b 1 128)
"""

import json
import os
import platform
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oracle  # noqa: E402  validation/oracle/oracle.py: Tracker

from litgpt.model import GPT, Block, Config  # noqa: E402
from litgpt.utils import chunked_cross_entropy  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "tiny-llama-1.1b"
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    seq = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "1")))
    torch.manual_seed(0)
    cfg = Config.from_name(name, n_layer=layers)
    torch.set_default_dtype(torch.bfloat16)  # fabric.init_module under bf16-true
    model = GPT(cfg)
    torch.set_default_dtype(torch.float32)
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=True,
                 device_id=torch.device("cpu"))
    model.max_seq_length = seq
    trk = oracle.Tracker()
    params = list(model.parameters())
    for p in params:
        trk.param_ptrs.add(p.untyped_storage()._cdata)
        trk.track(p, "parameters")
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
    ids = torch.randint(0, cfg.padded_vocab_size, (1, seq + 1), generator=torch.Generator().manual_seed(1))
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    with trk:
        for step in range(3):
            sync = step == 2
            with (torch.enable_grad() if sync else model.no_sync()):
                trk.set_phase(f"forward{step}")
                logits = model(x)
                loss = chunked_cross_entropy(logits[..., :-1, :], y[..., 1:])
                trk.set_phase(f"backward{step}")
                loss.backward()
            if sync:
                trk.set_phase("optimizer_step")
                opt.step()
                opt.zero_grad()
    V, h = cfg.padded_vocab_size, cfg.n_embd
    P = sum(p.numel() for p in params)
    root = 2 * V * h + h  # wte, lm_head (untied), ln_f weight
    peak = trk.peaks["backward1"]["bytes"]
    # what the second backward holds besides the rule's bytes: bf16 parameters, the first
    # micro-step's accumulated gradients (2 B x P), the bf16 logits `logits` keeps bound
    base = 2 * P + 2 * P + 2 * seq * V
    print(json.dumps({
        "model": name, "layers": layers, "seq": seq, "params": P, "root_params": root,
        "backward1_peak_bytes": peak, "base_bytes": base, "beyond_base_bytes": peak - base,
        "rule_4B_x_root_bytes": 4 * root,
        "versions": {"python": platform.python_version(), "torch": torch.__version__},
        "peaks": {k: v["bytes"] for k, v in trk.peaks.items()}}, indent=1, sort_keys=True))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
