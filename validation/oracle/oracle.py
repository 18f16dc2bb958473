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
PHASES = ("generate", "forward", "loss", "backward", "optimizer_step")
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
        self.paused = 0

    # --- storages -------------------------------------------------------------------------
    DEVICES = ("cpu",)  # the devices whose storages are counted
    BLOCK = CUDA_BLOCK  # bytes a storage is rounded up to, as the CUDA caching allocator rounds

    def track(self, t, tag):
        if not isinstance(t, torch.Tensor) or t.device.type not in self.DEVICES:
            return None
        st = t.untyped_storage()
        ptr = st._cdata
        s = self.by_ptr.get(ptr)
        if s is not None:
            return s
        self.serial += 1
        s = self.serial
        nb = -(-st.nbytes() // self.BLOCK) * self.BLOCK
        self.by_ptr[ptr] = s
        self.rec[s] = [nb, tag]
        self.cur += nb
        self.tag_bytes[tag] = self.tag_bytes.get(tag, 0) + nb
        self.allocated(s, nb)
        weakref.finalize(st, self._free, ptr, s)
        return s

    def allocated(self, s, nb):
        """Called on each new storage (its serial and bytes): a subclass may log it."""

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
        if self.paused:  # inside a CPU fallback of a CUDA kernel (cuda_trl_kernels): nothing it makes is kept
            return out
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
            transient = ("generate", "forward", "loss", "backward", "optimizer_step", "autocast")
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
    """Under CUDA autocast, layer_norm, group_norm, rms_norm and pow are fp32 ops (their floating
    arguments are cast to fp32, their outputs are fp32: aten/src/ATen/autocast_mode.cpp, the
    AutocastCUDA fp32 list, registered in this CPU build too: torch._C._dispatch_dump(
    "aten::layer_norm")); CPU autocast runs them in the input's dtype. torch.nn.functional's
    norms are wrapped, once per process, to do what CUDA does while CPU autocast is on; the wrap
    also holds in the backward, where checkpointing recomputes the layers (a TorchFunctionMode
    does not reach the recomputation)."""
    F = torch.nn.functional
    # pow too (the AutocastCUDA fp32 list, as the norms; from seed 13): transformers' NewGELUActivation
    # ("gelu_new": GPT-2, Phi) calls torch.pow on the 16-bit output of the MLP's first matmul, which CUDA
    # autocast casts to fp32 and autograd keeps (activations.py; docs/ledger.md O13)
    for mod, name in ((F, "layer_norm"), (F, "group_norm"), (F, "rms_norm"), (torch, "pow")):
        fn = getattr(mod, name, None)
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
        setattr(mod, name, wrapped)


ACTIVE = []  # the tracker in use (cuda_trl_kernels pauses it)


def cuda_trl_kernels():
    """TRL's fused LM head (trl/kernels/chunked_logprob.py, ChunkedLogProbFunction) folds each vocabulary tile
    in a Triton kernel on CUDA (_forward_kernel, _backward_kernel: registers, no tensors) and accumulates with
    torch.addmm(..., out_dtype=torch.float32, out=acc) (_addmm_fp32: no copies). Without Triton it runs torch
    fallbacks (_forward_tile, _backward_tile) that make fp32 copies of the tile, and _addmm_fp32 casts both
    operands (a weight chunk of 32768 x h) to fp32. All three write only into buffers made before them, so
    the tracker is paused inside them: the CPU run then holds what CUDA holds (mm_buf, the fp32
    accumulators, the per-token outputs); and the head scores the labelled positions only, as on CUDA.
    Once per process."""
    try:
        from trl.kernels import chunked_logprob as ck
        from trl.trainer import utils as tu
    except ImportError:
        return
    # add_fused_lm_head scores only the positions with a label (hidden_states[mask]) where Triton runs, and
    # every position elsewhere (trainer/utils.py, compact = _use_triton(device)): the CPU scores what CUDA does
    if hasattr(tu, "_use_triton"):
        tu._use_triton = lambda device: True
    for name in ("_forward_tile", "_backward_tile", "_addmm_fp32"):
        fn = getattr(ck, name, None)
        if fn is None or getattr(fn, "_oracle_paused", False):
            continue

        def wrapped(*args, _fn=fn, **kwargs):
            trk = ACTIVE[-1] if ACTIVE else None
            if trk is not None:
                trk.paused += 1
            try:
                return _fn(*args, **kwargs)
            finally:
                if trk is not None:
                    trk.paused -= 1

        wrapped._oracle_paused = True
        setattr(ck, name, wrapped)


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


def vocab_override(text, vocab):
    """A narrower vocabulary (the case's `vocab`): the width of every layer is kept, the embedding and the head
    take `vocab` rows; token ids past it (bos / eos / pad, which size nothing) are moved inside it.
    compare.py hands memledger the same config."""
    text["vocab_size"] = vocab
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        v = text.get(key)
        if isinstance(v, int) and v >= vocab:
            text[key] = vocab - 1
        elif isinstance(v, list):
            text[key] = [min(x, vocab - 1) for x in v]


def load_config(path, depth_periods, vocab=None):
    from transformers import AutoConfig

    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    raw.pop("auto_map", None)
    raw.pop("quantization_config", None)
    if vocab:
        vocab_override(raw.get("text_config", raw), vocab)
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
    if case["method"] == "qlora":
        quantize_4bit(model, dtype)
        if case.get("kbit_prepare", "none") == "full":
            from peft import prepare_model_for_kbit_training

            # PEFT utils/other.py prepare_model_for_kbit_training: every non-4-bit parameter -> fp32, and
            # with checkpointing the input-require-grads hook + gradient_checkpointing_enable
            model = prepare_model_for_kbit_training(
                model, use_gradient_checkpointing=case["grad_ckpt"] != "off",
                gradient_checkpointing_kwargs={"use_reentrant": case["grad_ckpt"] == "on"})
    if case.get("stage", "sft") != "sft":
        return model  # the TRL trainer wraps it (stage_trainer); sft_base: a reference model
    if case["method"] in ("lora", "qlora"):
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(case))
    if case["grad_ckpt"] != "off":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": case["grad_ckpt"] == "on"})
        if case["method"] in ("lora", "qlora") and hasattr(model, "enable_input_require_grads"):
            model.enable_input_require_grads()
    model.train()
    return model


def lora_config(case):
    from peft import LoraConfig

    targets = case["lora_target"]
    return LoraConfig(r=case["lora_rank"], lora_alpha=2 * case["lora_rank"], lora_dropout=case.get("lora_dropout", 0.0),
                      target_modules="all-linear" if targets == "all" else targets.split(","), task_type="CAUSAL_LM")


def quantize_4bit(model, dtype):
    """QLoRA's base: every nn.Linear / Conv1D but the output head becomes a bitsandbytes Linear4bit (NF4,
    double-quantized absmax, uint8 storage), as transformers' integrations/bitsandbytes.py
    replace_with_bnb_linear builds it for BitsAndBytesConfig(load_in_4bit=True,
    bnb_4bit_use_double_quant=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype); the random
    16-bit weight is quantized by bitsandbytes' own Params4bit (its CPU backend, bitsandbytes >= 0.48).
    from_config takes no quantization_config, so the replacement is made here after the model is built."""
    import bitsandbytes as bnb
    from transformers.pytorch_utils import Conv1D

    head = model.get_output_embeddings()
    for name, mod in list(model.named_modules()):
        if mod is head or not (type(mod) is torch.nn.Linear or isinstance(mod, Conv1D)):
            continue
        w = mod.weight.data.t() if isinstance(mod, Conv1D) else mod.weight.data
        out_f, in_f = w.shape
        new = bnb.nn.Linear4bit(in_f, out_f, mod.bias is not None, dtype, compress_statistics=True,
                                quant_type="nf4", quant_storage=torch.uint8, device="meta")
        new.weight = bnb.nn.Params4bit(w.contiguous().to(dtype), requires_grad=False, compress_statistics=True,
                                       quant_type="nf4", quant_storage=torch.uint8)._quantize("cpu")
        if mod.bias is not None:
            new.bias = torch.nn.Parameter(mod.bias.data.to(dtype), requires_grad=False)
        new.source_cls = type(mod)
        model.set_submodule(name, new)
    model.is_loaded_in_4bit = True  # what the bnb quantizer sets (PEFT and TRL read it)


def word_tokenizer(n_words=512):
    """A tokenizer for the trainers' own data path (TRL tokenizes text): one token per whitespace word,
    ids below the model's vocabulary; the bytes depend on the token counts only."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<pad>": 1, "</s>": 2}
    vocab.update({f"w{i}": i for i in range(3, n_words)})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", eos_token="</s>")


def stage_trainer(case, model, cfg, out_dir):
    """The TRL trainer of the case's stage, built as its users build it (model object, PEFT config,
    train dataset, tokenizer), and one collated batch from its own data loader. Returns (trainer,
    policy, reference model or None, batch). The step itself is the trainer's compute_loss."""
    from datasets import Dataset

    stage = case["stage"]
    tok = word_tokenizer()
    b, s = case["batch"], case["seq"]
    peft_config = lora_config(case) if case["method"] in ("lora", "qlora") else None
    common = dict(output_dir=out_dir, per_device_train_batch_size=b, use_cpu=True, report_to=[], bf16=False,
                  fp16=False, save_strategy="no", logging_strategy="no", dataloader_num_workers=0, seed=0,
                  gradient_checkpointing=case["grad_ckpt"] != "off",
                  gradient_checkpointing_kwargs={"use_reentrant": case["grad_ckpt"] == "on"})
    words = lambda n, k: " ".join(f"w{3 + (k * 7 + j) % 500}" for j in range(n))  # noqa: E731
    if stage == "dpo":
        from trl import DPOConfig, DPOTrainer

        # prompt + completion + EOS = s tokens for chosen and for rejected (the pair is 2 b sequences)
        p_len = s // 2
        c_len = s - p_len - 1
        ds = Dataset.from_dict({"prompt": [words(p_len, k) + " " for k in range(b)],
                                "chosen": [words(c_len, k + 1) for k in range(b)],
                                "rejected": [words(c_len, k + 2) for k in range(b)]})
        ref = None
        if peft_config is None and not case.get("precompute_ref"):
            # dpo_trainer.py __init__: without a ref_model TRL loads the same checkpoint again with
            # dtype=self.model.dtype (ref_model_init_kwargs.setdefault("dtype", ...)); built the same way here
            ref = build(dict(case, stage="sft_base"), cfg)
        args = DPOConfig(max_length=None, beta=0.1, **common)
        tr = DPOTrainer(model=model, ref_model=ref, args=args, train_dataset=ds, processing_class=tok,
                        peft_config=peft_config)
    elif stage == "kto":
        from trl import KTOConfig, KTOTrainer

        # unpaired: b (prompt, completion, label) rows of s tokens, and KTO's KL batch (each completion
        # against the next row's prompt: kto_trainer.py's collator) - the batch must be above 1
        p_len = s // 2
        c_len = s - p_len - 1
        ds = Dataset.from_dict({"prompt": [words(p_len, k) + " " for k in range(b)],
                                "completion": [words(c_len, k + 1) for k in range(b)],
                                "label": [k % 2 == 0 for k in range(b)]})
        ref = None
        if peft_config is None:
            ref = build(dict(case, stage="sft_base"), cfg)  # kto_trainer.py __init__, as DPO's
        args = KTOConfig(max_length=None, **common)
        tr = KTOTrainer(model=model, ref_model=ref, args=args, train_dataset=ds, processing_class=tok,
                        peft_config=peft_config)
    elif stage == "grpo":
        from trl import GRPOConfig, GRPOTrainer

        # per_device_train_batch_size b completions: b / num_generations prompts of s // 2 tokens, each
        # completion exactly s - s // 2 tokens (min_new_tokens = max_completion_length)
        n_gen = case.get("num_generations", 2)
        p_len = s // 2
        c_len = s - p_len
        ds = Dataset.from_dict({"prompt": [words(p_len, k) for k in range(max(1, b // n_gen))]})
        args = GRPOConfig(num_generations=n_gen, max_completion_length=c_len, beta=case.get("beta", 0.0),
                          generation_kwargs={"min_new_tokens": c_len}, **common)

        def reward(completions, **kwargs):
            return [float(len(c)) for c in completions]

        ref = None
        tr = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok,
                         peft_config=peft_config)
    else:
        raise SystemExit(f"oracle: stage {stage} is not run (README.md)")
    tr.current_gradient_accumulation_steps = 1  # what Trainer._inner_training_loop sets before a step
    batch = next(iter(tr.get_train_dataloader()))
    return tr, tr.model, getattr(tr, "ref_model", None), batch


def accelerate_amp(model, dtype):
    """What accelerate's prepare_model does under mixed precision (accelerator.py, `if self.native_amp:`):
    the model's forward runs under autocast and its 16-bit outputs are cast to fp32
    (utils/operations.py convert_outputs_to_fp32). transformers' Trainer relies on it
    (autocast_smart_context_manager is a null context), so autocast's cache lives for one forward
    call: the policy's, the reference's, each of generate's."""
    from accelerate.utils import convert_outputs_to_fp32

    fwd = model.forward

    def forward(*args, **kwargs):
        with torch.autocast("cpu", dtype=dtype):
            return fwd(*args, **kwargs)

    model.forward = convert_outputs_to_fp32(forward)


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
    import tempfile

    cfg, period, n_layers = load_config(cfg_path, depth_periods, case.get("vocab"))
    model = build(case, cfg)
    stage = case.get("stage", "sft")
    trainer = ref = batch = None
    tmp = tempfile.TemporaryDirectory()
    if stage != "sft":
        trainer, model, ref, batch = stage_trainer(case, model, cfg, tmp.name)
        if case["grad_ckpt"] != "off":  # Trainer.train() -> _inner_training_loop turns it on
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": case["grad_ckpt"] == "on"})
        model.train()
    trk = Tracker()
    params = [p for p in model.parameters()]
    ref_params = [p for p in ref.parameters()] if ref is not None else []
    for p in params + ref_params:
        trk.param_ptrs.add(p.untyped_storage()._cdata)
        trk.track(p, "parameters")
    # bitsandbytes keeps a 4-bit weight's quantization state beside the uint8 storage, not as a
    # parameter or buffer: the absmax per 64-element block (with double quantization its own
    # absmax, code book and offset), the 4-bit code book (bitsandbytes functional.py QuantState,
    # quantize_4bit). They are on the GPU with the weight (from seed 12; earlier draws miss them).
    for p in params + ref_params:
        qs = getattr(p, "quant_state", None)
        while qs is not None:
            for t in (qs.absmax, qs.code, qs.offset):
                trk.track(t, "parameters")
            qs = qs.state2
    for b in list(model.buffers()) + (list(ref.buffers()) if ref is not None else []):
        trk.track(b, "buffers")
    trainable = [p for p in params if p.requires_grad]
    opt = make_optimizer(case, trainable)
    for p in trainable:
        p.register_post_accumulate_grad_hook(lambda q: (trk.retag(q.grad, "gradients"), None)[1])
    vocab = cfg.get_text_config().vocab_size
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, vocab, (case["batch"], case["seq"]), generator=g)
    trk.track(ids, "inputs")
    if isinstance(batch, dict):
        for v in batch.values():
            if isinstance(v, torch.Tensor):
                trk.track(v, "inputs")

    def to_loss(h):
        if trk.phase == "forward":
            trk.set_phase("loss")
            if isinstance(h, torch.Tensor) and h.requires_grad:
                h.register_hook(lambda grad: (trk.set_phase("backward"), None)[1])

    if stage == "sft":
        head = model.get_output_embeddings()
        head.register_forward_pre_hook(lambda mod, inp: to_loss(inp[0]))
    else:
        # TRL's fused LM head (trainer/utils.py add_fused_lm_head) reads the head's weight without calling the
        # module: the loss turn starts where the policy's backbone returns
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        # (a no-grad forward first - KTO's KL log-probs, kto_trainer.py _compute_kl_logps - stays in the forward)
        getattr(base, base.base_model_prefix).register_forward_hook(
            lambda mod, inp, out: to_loss(out.last_hidden_state) if out.last_hidden_state.requires_grad else None)
    amp_on = not (case["dtype"] == "fp32" or case.get("pure"))
    amp = torch.autocast("cpu", dtype=DTYPES[case["dtype"]]) if amp_on else contextlib.nullcontext()
    if stage != "sft" and amp_on:  # the Trainer's mixed precision: per forward call, as accelerate wraps it
        for m in (model, ref):
            if m is not None:
                accelerate_amp(m, DTYPES[case["dtype"]])
        amp = contextlib.nullcontext()
    cuda_autocast_norms()
    cuda_trl_kernels()
    ACTIVE.append(trk)
    with trk:
        for step in range(2):
            trk.set_phase("forward")
            if stage == "sft":
                with amp:
                    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
                loss = out.loss
                del out
            elif stage == "grpo":
                # GRPOTrainer._prepare_inputs: generate the completions (HF generate, no grad), score them,
                # and the old / reference log-probs; then the training forward over prompt + completion
                trk.set_phase("generate")
                with amp:
                    inputs = trainer._prepare_inputs(batch)
                trainer._step += 1  # GRPOTrainer.training_step's counter: generate again next step
                trk.set_phase("forward")
                with amp:
                    loss = trainer.compute_loss(model, inputs)
                del inputs
            else:
                with amp:
                    loss = trainer.compute_loss(model, batch)
            if trk.phase != "loss":
                trk.set_phase("loss")
            loss.backward()
            del loss
            trk.set_phase("optimizer_step")
            opt.step()
            for st in opt.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor):
                        trk.retag(v, "optimizer_states")
            opt.zero_grad(set_to_none=True)
            trk.set_phase("idle")
    ACTIVE.pop()
    dims = {"layers": n_layers, "period": period, "trainable_params": sum(p.numel() for p in trainable),
            "params": sum(p.numel() for p in params)}
    if isinstance(batch, dict) and "input_ids" in batch:
        dims["input_shape"] = list(batch["input_ids"].shape)
    if trainer is not None:
        dims["ref_params"] = sum(p.numel() for p in ref_params)
    del trainer
    tmp.cleanup()
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
