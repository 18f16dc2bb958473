#!/usr/bin/env python3
"""fsdp1_reentrant.py - docs/ledger.md F5 on the CPU: what FSDP1 keeps through the backward when
the model's own reentrant checkpointing wraps frozen FSDP units (the HF Trainer's path before
transformers 4.52).

A Llama (h 512, i 1376, 8 heads / 2 KV, vocab 1024) built by transformers 4.48.1's own
LlamaForCausalLM, frozen in bf16, PEFT 0.13.2 LoRA r16 (dropout 0.1) on q/k/v/o, gradient
checkpointing as the Trainer enables it (`gradient_checkpointing_enable`, use_reentrant True,
`enable_input_require_grads`), then FSDP1 FULL_SHARD with PEFT's `fsdp_auto_wrap_policy`,
BACKWARD_PRE, MixedPrecision bf16 (as transformers' `_fsdp_qlora_plugin_updates` sets it) over two
gloo ranks, or no FSDP (one process). Three steps under bf16 autocast; the live storages are
counted as the CPU oracle counts them (oracle.py Tracker: each op output's storage once, off when
it is freed; FSDP's own flat parameters, resized in place, are not seen, which the comparison
below does not need). When each layer's input gradient arrives (the end of that layer's
backward) the live bytes are sampled: their step from one layer to the next is what the backward
keeps per layer.

Result (validation/oracle/fsdp1_reentrant.jsonl, torch 2.13.0 CPU, 4 and 8 layers; b 2, s 128:
a layer input b s h 2 B = 262,144 B). Step in live bytes per layer done: no FSDP -49,152 B = the
checkpoint freed (-262,144) + the layer's adapter grads (+212,992); FSDP1 +368,640 B = the
checkpoint kept (0) + its input grad kept (+262,144) + the adapter grads sharded over 2
(+106,496). So FSDP keeps, a layer, its checkpoint and its input grad to the end of the backward,
where `_finalize_params` frees them (after_backward falls back below the start). The same with
use_orig_params and without MixedPrecision. The FSDP1 code read is torch 2.13's; the hook and
`register_multi_grad_hook`'s closure over the inputs' grad nodes are in torch 2.1-2.13 alike.

Needs transformers 4.48.1 and peft 0.13.2 on the path (their wheels unpacked into a directory,
with requests and tokenizers < 0.22):
    PYTHONPATH=DIR torchrun --nproc_per_node 2 fsdp1_reentrant.py --layers 4
    PYTHONPATH=DIR torchrun --nproc_per_node 1 fsdp1_reentrant.py --layers 4 --fsdp 0
"""
import argparse
import json
import os
import weakref

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class Live(TorchDispatchMode):
    """Bytes of the live CPU storages made by aten ops (oracle.py Tracker, without categories)."""

    def __init__(self):
        super().__init__()
        self.ptr = {}
        self.cur = 0
        self.n = 0

    def track(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            return
        st = t.untyped_storage()
        p = st._cdata
        if p in self.ptr:
            return
        self.n += 1
        self.ptr[p] = (self.n, st.nbytes())
        self.cur += st.nbytes()
        weakref.finalize(st, self.free, p, self.n)

    def free(self, p, n):
        r = self.ptr.get(p)
        if r and r[0] == n:
            del self.ptr[p]
            self.cur -= r[1]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            self.track(t)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--fsdp", type=int, default=1)
    ap.add_argument("--mp", type=int, default=1, help="MixedPrecision bf16 (the QLoRA path)")
    ap.add_argument("--orig", type=int, default=0, help="use_orig_params")
    a = ap.parse_args()
    rank = int(os.environ.get("RANK", 0))
    if a.fsdp:
        dist.init_process_group("gloo")
    import peft
    import transformers
    from peft import LoraConfig, get_peft_model
    from peft.utils.other import fsdp_auto_wrap_policy
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    h, inter, heads, kv, vocab, b, s = 512, 1376, 8, 2, 1024, 2, 128
    cfg = LlamaConfig(hidden_size=h, intermediate_size=inter, num_attention_heads=heads, num_key_value_heads=kv,
                      num_hidden_layers=a.layers, vocab_size=vocab, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    for p in model.parameters():
        p.requires_grad_(False)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.enable_input_require_grads()
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=16, lora_dropout=0.1,
                                             target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
    layers = model.base_model.model.model.layers
    if a.fsdp:
        from torch.distributed.fsdp import BackwardPrefetch, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        mp = MixedPrecision(torch.bfloat16, torch.bfloat16, torch.bfloat16) if a.mp else None
        model = FSDP(model, auto_wrap_policy=fsdp_auto_wrap_policy(model), sharding_strategy=ShardingStrategy.FULL_SHARD,
                     backward_prefetch=BackwardPrefetch.BACKWARD_PRE, mixed_precision=mp,
                     device_id=torch.device("cpu"), use_orig_params=bool(a.orig), limit_all_gathers=True)
        layers = model.module.base_model.model.model.layers
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.randint(0, vocab, (b, s))
    live = Live()
    samples = []

    def pre(mod, args, kwargs, i):
        hs = args[0] if args else kwargs["hidden_states"]
        if not torch.is_grad_enabled() and hs.requires_grad:  # the first forward, not the recompute
            hs.register_hook(lambda g, i=i: samples.append((i, live.cur)))

    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(lambda m, ar, kw, i=i: pre(m, ar, kw, i), with_kwargs=True)
    for step in range(3):
        samples.clear()
        with live:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss.float()
            start = live.cur
            loss.backward()
            after = live.cur
            opt.step()
            opt.zero_grad(set_to_none=True)
        if rank == 0 and step == 2:
            steps = [c1 - c0 for (_, c0), (_, c1) in zip(samples, samples[1:])]
            print(json.dumps({"layers": a.layers, "fsdp": a.fsdp, "mixed_precision": a.mp, "use_orig_params": a.orig,
                              "batch": b, "seq": s, "hidden": h, "layer_input_bytes": b * s * h * 2,
                              "live_at_layer_end": [c - start for _, c in samples], "step_per_layer": steps,
                              "after_backward": after - start,
                              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                           "peft": peft.__version__}}), flush=True)
    if a.fsdp:
        dist.destroy_process_group()


main()
