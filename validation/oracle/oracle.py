#!/usr/bin/env python3
"""oracle.py - the live tensor bytes of real training steps, run on the CPU.

For one case described like memledger's own arguments (a config.json from data/models, method,
LoRA rank and targets, dtype, attention, gradient checkpointing, batch, sequence, optimizer), it
builds the model with the real transformers / PEFT code at the real width and a reduced depth
(one and two periods of the layer pattern), random weights, runs two real training steps on the
CPU (forward, loss, backward, optimizer step, twice) and records, at each phase's peak, the live
tensor bytes by category: parameters, gradients, optimizer states, autocast weight cache,
activations, logits and loss, temporaries.

The tracker follows torch's MemTracker (torch/distributed/_tools/mem_tracker.py): a
TorchDispatchMode sees every aten op's outputs, each new storage is counted once, and a weak
reference to the storage takes it off when it is freed. MemTracker itself is not used: it keys its
phases on module pre/post hooks and names only its own categories; here the phases are those of
memledger's ledger (README.md says where each begins). Never a dependency of memledger itself.

Usage: oracle.py CASE.json|-  [--out FILE]   (a case is a JSON object; see README.md)
"""

import argparse
import contextlib
import gc
import json
import os
import platform
import sys
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PHASES = ("forward", "loss", "backward", "optimizer_step")
CATEGORIES = ("parameters", "gradients", "optimizer_states", "autocast_cache", "activations",
              "logits_loss", "temporaries")
# c10 CUDACachingAllocator.cpp kMinBlockSize: every block is a multiple of 512 B (MemTracker's
# _PYTORCH_MIN_ALLOCATE rounds CUDA storages the same way); the CPU allocator does not round.
CUDA_BLOCK = 512
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


class Tracker(TorchDispatchMode):
    """Live storages by creation tag; a snapshot of the tags at each phase's peak."""

    def __init__(self):
        super().__init__()
        self.by_ptr = {}  # StorageImpl pointer -> serial
        self.rec = {}  # serial -> [nbytes, tag]
        self.serial = 0
        self.cur = 0
        self.tag_bytes = {}
        self.phase = "load"
        self.peaks = {}  # phase -> {"bytes", "tags", "keys"}
        self.param_ptrs = set()
        self.fwd_alive = set()
        self.became = {}  # serial -> what a storage became (gradients, optimizer states), kept after it is freed
        self.log = None  # a list to record (phase, op, bytes) of large allocations, for debugging

    # --- storages -------------------------------------------------------------------------
    def track(self, t, tag):
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            return None
        st = t.untyped_storage()
        ptr = st._cdata
        s = self.by_ptr.get(ptr)
        if s is not None:
            return s
        self.serial += 1
        s = self.serial
        nb = -(-st.nbytes() // CUDA_BLOCK) * CUDA_BLOCK  # as the CUDA caching allocator rounds
        self.by_ptr[ptr] = s
        self.rec[s] = [nb, tag]
        self.cur += nb
        self.tag_bytes[tag] = self.tag_bytes.get(tag, 0) + nb
        weakref.finalize(st, self._free, ptr, s)
        return s

    def _free(self, ptr, s):
        r = self.rec.pop(s, None)
        if r is None:
            return
        if self.by_ptr.get(ptr) == s:
            del self.by_ptr[ptr]
        self.cur -= r[0]
        self.tag_bytes[r[1]] -= r[0]

    def retag(self, t, tag):
        s = self.by_ptr.get(t.untyped_storage()._cdata)
        if s is None:
            s = self.track(t, tag)
        r = self.rec[s]
        self.became[s] = tag
        if r[1] != tag:
            self.tag_bytes[r[1]] -= r[0]
            self.tag_bytes[tag] = self.tag_bytes.get(tag, 0) + r[0]
            r[1] = tag
        return s

    def serial_of(self, t):
        return self.by_ptr.get(t.untyped_storage()._cdata)

    # --- ops -------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tag = self.phase
        # autocast's cast of a weight (torch caches it until the autocast region ends)
        if func is torch.ops.aten._to_copy.default and args and isinstance(args[0], torch.Tensor):
            src = args[0]
            if src.untyped_storage()._cdata in self.param_ptrs and self.phase in ("forward", "loss"):
                tag = "autocast"
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                n = self.serial
                self.track(t, tag)
                if self.log is not None and self.serial != n:
                    self.log.append((self.phase, str(func), self.rec[self.serial][0], self.cur))
        self.check_peak()
        return out

    def check_peak(self):
        p = self.peaks.get(self.phase)
        if p is None or self.cur > p["bytes"]:
            transient = ("forward", "loss", "backward", "optimizer_step", "autocast")
            self.peaks[self.phase] = {
                "bytes": self.cur,
                "tags": {k: v for k, v in self.tag_bytes.items() if v},
                "keys": [(s, r[0], r[1]) for s, r in self.rec.items() if r[1] in transient],
            }

    def set_phase(self, phase):
        if self.phase == "forward":
            # what the forward made and still holds when the head starts: saved for backward
            self.fwd_alive |= {s for s, r in self.rec.items() if r[1] == "forward"}
        self.phase = phase
        self.check_peak()


def cuda_autocast_norms():
    """Under CUDA autocast, layer_norm, group_norm and rms_norm are fp32 ops (their floating
    arguments are cast to fp32, their outputs are fp32: aten/src/ATen/autocast_mode.cpp, the
    AutocastCUDA fp32 list, registered in this CPU build too: torch._C._dispatch_dump(
    "aten::layer_norm")); CPU autocast runs them in the input's dtype. torch.nn.functional's
    norms are wrapped, once per process, to do what CUDA does while CPU autocast is on; the wrap
    also holds in the backward, where checkpointing recomputes the layers (a TorchFunctionMode
    does not reach the recomputation)."""
    F = torch.nn.functional
    for name in ("layer_norm", "group_norm", "rms_norm"):
        fn = getattr(F, name, None)
        if fn is None or getattr(fn, "_oracle_cuda_policy", False):
            continue

        def wrapped(*args, _fn=fn, **kwargs):
            if not torch.is_autocast_enabled("cpu"):
                return _fn(*args, **kwargs)

            def up(x):
                return x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

            with torch.autocast("cpu", enabled=False):
                return _fn(*[up(a) for a in args], **{k: up(v) for k, v in kwargs.items()})

        wrapped._oracle_cuda_policy = True
        setattr(F, name, wrapped)


# --- model ------------------------------------------------------------------------------------
def layer_period(cfg):
    """The layer pattern's period: sliding/full or linear/full alternation."""
    lt = getattr(cfg, "layer_types", None)
    if lt:
        for p in range(1, len(lt) + 1):
            if all(lt[i] == lt[i % p] for i in range(len(lt))):
                return p
    for key in ("sliding_window_pattern", "full_attention_interval"):
        v = getattr(cfg, key, None)
        if isinstance(v, int) and v > 1:
            return v
    return 1


def load_config(path, depth_periods):
    from transformers import AutoConfig

    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    raw.pop("auto_map", None)
    raw.pop("quantization_config", None)
    cfg = AutoConfig.for_model(raw.pop("model_type"), **raw)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    period = layer_period(text)
    n = period * depth_periods
    lt = getattr(text, "layer_types", None)
    if lt:
        text.layer_types = list(lt[:n])
    if hasattr(text, "num_hidden_layers"):
        text.num_hidden_layers = n
    elif hasattr(text, "n_layer"):
        text.n_layer = n
    return cfg, period, n


def no_init():
    """transformers' own switch that skips the weight initialisation (buffers are still built)."""
    try:
        from transformers.initialization import no_init_weights  # transformers 5
    except ImportError:
        from transformers.modeling_utils import no_init_weights  # transformers 4
    return no_init_weights()


def fill_random(model, block=1 << 16):
    """Random weights: one block of N(0, 0.02) draws tiled over each parameter (drawing every
    element in bf16 on the CPU takes seconds per case; the bytes depend on shapes only)."""
    g = torch.Generator().manual_seed(0)
    blk32 = torch.randn(block, generator=g) * 0.02
    with torch.no_grad():
        for p in model.parameters():
            blk = blk32.to(p.dtype)
            flat = p.view(-1)
            n = flat.numel()
            m = n // block * block
            if m:
                flat[:m].view(-1, block).copy_(blk)
            if n > m:
                flat[m:].copy_(blk[: n - m])


def build(case, cfg):
    from transformers import AutoModelForCausalLM

    dtype = DTYPES[case["dtype"]]
    # The HF Trainer family: a full fine-tune loads fp32 and trains under autocast (the fp32 params
    # are the master); LoRA loads the base in the compute dtype and PEFT keeps the adapters fp32.
    load_dtype = torch.float32 if case["method"] == "full" and not case.get("pure") else dtype
    if case["attn"] == "sdpa":
        # CUDA's flash and memory-efficient kernels draw attention dropout from a Philox seed and save
        # no mask; the CPU flash kernel has no dropout, so SDPA would fall back to the math path
        # (s^2 scores and a mask per head). With the probability at 0 the CPU runs its flash kernel and
        # saves what CUDA's does (README.md, "CPU and CUDA").
        text = cfg.get_text_config()
        for key in ("attn_pdrop", "attention_dropout", "attention_probs_dropout_prob"):
            if isinstance(getattr(text, key, None), float):
                setattr(text, key, 0.0)
    torch.manual_seed(case.get("seed", 0))
    with no_init():
        model = AutoModelForCausalLM.from_config(cfg, dtype=load_dtype, attn_implementation=case["attn"])
    model.tie_weights()  # no_init_weights also skips the tie that post_init would make
    fill_random(model)
    if case["method"] == "lora":
        from peft import LoraConfig, get_peft_model

        targets = case["lora_target"]
        lc = LoraConfig(r=case["lora_rank"], lora_alpha=2 * case["lora_rank"], lora_dropout=case.get("lora_dropout", 0.0),
                        target_modules="all-linear" if targets == "all" else targets.split(","),
                        task_type="CAUSAL_LM")
        model = get_peft_model(model, lc)
    if case["grad_ckpt"] != "off":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": case["grad_ckpt"] == "on"})
        if case["method"] == "lora" and hasattr(model, "enable_input_require_grads"):
            model.enable_input_require_grads()
    model.train()
    return model


def make_optimizer(case, params):
    o = case["optim"]
    if o == "adamw_torch_fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if o == "adamw_torch":
        return torch.optim.AdamW(params, lr=1e-5, foreach=True)
    if o == "sgd":
        return torch.optim.SGD(params, lr=1e-5)
    raise SystemExit(f"oracle: optimizer {o} is not run on the CPU (README.md)")


def run_depth(case, depth_periods, cfg_path):
    cfg, period, n_layers = load_config(cfg_path, depth_periods)
    model = build(case, cfg)
    trk = Tracker()
    params = [p for p in model.parameters()]
    for p in params:
        trk.param_ptrs.add(p.untyped_storage()._cdata)
        trk.track(p, "parameters")
    for b in model.buffers():
        trk.track(b, "buffers")
    trainable = [p for p in params if p.requires_grad]
    opt = make_optimizer(case, trainable)
    for p in trainable:
        p.register_post_accumulate_grad_hook(lambda q: (trk.retag(q.grad, "gradients"), None)[1])
    vocab = cfg.get_text_config().vocab_size
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (case["batch"], case["seq"]), generator=g)
    trk.track(ids, "inputs")
    head = model.get_output_embeddings()

    def head_pre(mod, inp):
        if trk.phase == "forward":
            trk.set_phase("loss")
            h = inp[0]
            if h.requires_grad:
                h.register_hook(lambda grad: (trk.set_phase("backward"), None)[1])

    head.register_forward_pre_hook(head_pre)
    amp_on = not (case["dtype"] == "fp32" or case.get("pure"))
    amp = torch.autocast("cpu", dtype=DTYPES[case["dtype"]]) if amp_on else contextlib.nullcontext()
    dims = {}
    cuda_autocast_norms()
    with trk:
        for step in range(2):
            trk.set_phase("forward")
            with amp:
                out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
            loss = out.loss
            del out
            if trk.phase != "loss":
                trk.set_phase("loss")
            loss.backward()
            del loss
            trk.set_phase("optimizer_step")
            opt.step()
            for st in opt.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor) and v.numel() > 1:
                        trk.retag(v, "optimizer_states")
                    elif isinstance(v, torch.Tensor):
                        trk.retag(v, "optimizer_states")
            opt.zero_grad(set_to_none=True)
            trk.set_phase("idle")
    dims = {"layers": n_layers, "period": period, "trainable_params": sum(p.numel() for p in trainable),
            "params": sum(p.numel() for p in params)}
    return summarize(trk), dims


def summarize(trk):
    """Each phase's peak by category: a key created in a phase is classified by what it became."""
    out = {}
    for ph in PHASES:
        p = trk.peaks.get(ph)
        if p is None:
            continue
        cats = dict.fromkeys(CATEGORIES, 0)
        for tag, b in p["tags"].items():
            if tag in ("parameters", "buffers", "inputs"):
                cats["parameters" if tag != "inputs" else "activations"] += b
            elif tag in ("gradients", "optimizer_states"):
                cats[tag] += b
        for s, nb, tag in p["keys"]:
            final = trk.became.get(s, tag)
            if final in ("gradients", "optimizer_states"):
                cats[final] += nb
            elif tag == "autocast":
                cats["autocast_cache"] += nb
            elif tag == "forward":
                cats["activations" if s in trk.fwd_alive else "temporaries"] += nb
            elif tag == "loss":
                cats["logits_loss"] += nb
            else:
                cats["temporaries"] += nb
        out[ph] = {"peak_bytes": p["bytes"], "by_category": cats}
    return out


def versions():
    import transformers

    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    for mod in ("peft", "trl", "accelerate"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            pass
    return v


def run_case(case):
    cfg_path = (os.path.join(ROOT, case["model"]) if case["model"].endswith(".json")
                else os.path.join(ROOT, "data", "models", case["model"] + ".json"))
    t0 = time.time()
    depths = {}
    for d in case.get("depth_periods", (1, 2)):
        res, dims = run_depth(case, d, cfg_path)
        depths[str(d)] = {"dims": dims, "phases": res}
        gc.collect()
    return {"case": case, "versions": versions(), "seconds": round(time.time() - t0, 2),
            "depths": depths}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", help="case JSON file, or - for stdin")
    ap.add_argument("--out", help="write the result here (default stdout)")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "1")))
    case = json.load(sys.stdin if a.case == "-" else open(a.case, encoding="utf-8"))
    res = run_case(case)
    text = json.dumps(res, indent=1, sort_keys=True)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
