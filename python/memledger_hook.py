"""memledger_hook - measure a PyTorch training run the way memledger's ledger counts it.

The seed handbook's ``mem_report``: per step, the allocator's allocated and reserved peaks; the
static part found by walking the model's parameters, their gradients and the optimizer's state
tensors (weights by dtype; every storage counted once, so tied or shared weights are not counted
twice); the activation peak (peak allocated - static); the device figure (total - free); and
phase marks (load, train step, eval, save). Written as JSON Lines that ``memledger compare``
reads (docs/cli/compare.md). Works with CUDA and ROCm builds of torch (ROCm uses the ``cuda``
device type; the ``backend`` field says ``hip``). No dependency but torch; ``transformers`` is
used only if it is installed.

Plain loop::

    from memledger_hook import MemLedger
    with MemLedger("run.jsonl", model=model, optimizer=opt) as ml:
        for batch in loader:
            with ml.step():
                loss = model(**batch).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
        with ml.phase("eval"):
            evaluate(model)

HF Trainer::

    from memledger_hook import MemLedgerCallback
    trainer = Trainer(..., callbacks=[MemLedgerCallback("run.jsonl")])

Then ``memledger compare run.jsonl --config train.yaml --gpu a100-80g``.

Gradients are usually freed by ``zero_grad`` before a step ends, so they are measured when the
optimizer step starts (``Optimizer.register_step_pre_hook``, torch >= 2.0; the callback also
uses ``on_pre_optimizer_step`` when transformers has it). With older torch, call
``ml.after_backward()`` between ``backward()`` and ``zero_grad()``.

Under torch.distributed only rank 0 writes, unless the path contains ``{rank}``.

From the command line, ``python -m memledger_hook`` (or ``memledger-hook`` once pip-installed)
prints what the hook records and whether this Python can record it; ``--probe`` prints the
``meta`` record this machine's GPUs would give. Install: ``pip install memledger`` (the hook comes
with the command and the ``memledger`` package, whose ``MemLedgerCallback`` also checks the run
before its first step: docs/python.md), or the hook alone: ``pip install ./python`` from a memledger
tree, or ``pip install PREFIX/share/memledger/python`` after ``make install`` (offline, with
Debian's python3-setuptools: add ``--no-build-isolation``); torch itself is not a declared
dependency, since CUDA and ROCm builds of it are installed their own way.

Limits: under DeepSpeed ZeRO the optimizer's fp32 partitions and flat gradient buffers live in
DeepSpeed's own attributes, not in ``optimizer.state`` or ``param.grad``, so the static breakdown
misses them (the allocated/reserved peaks and the device figure are still right); FSDP's flat
parameters are counted as the storages they are.
"""

import contextlib
import json
import os
import sys
import time

try:
    import torch
except ImportError:  # `python -m memledger_hook` still explains itself; recording needs torch
    torch = None

__all__ = ["MemLedger", "MemLedgerCallback", "TorchCudaStats", "tensor_bytes", "main"]

__version__ = "0.1.0"  # memledger's version (tests/install checks that they agree)
FORMAT_VERSION = 1


class TorchCudaStats:
    """The allocator's figures for one device, through torch.cuda (CUDA and ROCm builds).

    Tests inject an object with the same methods to run on a machine without a GPU.
    """

    def __init__(self, device):
        self.device = device

    def synchronize(self):
        torch.cuda.synchronize(self.device)

    def memory_allocated(self):
        return torch.cuda.memory_allocated(self.device)

    def memory_reserved(self):
        return torch.cuda.memory_reserved(self.device)

    def max_memory_allocated(self):
        return torch.cuda.max_memory_allocated(self.device)

    def max_memory_reserved(self):
        return torch.cuda.max_memory_reserved(self.device)

    def reset_peak_memory_stats(self):
        torch.cuda.reset_peak_memory_stats(self.device)

    def mem_get_info(self):
        """(free, total) bytes of the device, or None when the driver cannot say."""
        try:
            return torch.cuda.mem_get_info(self.device)
        except (RuntimeError, AttributeError):
            return None

    def device_name(self):
        return torch.cuda.get_device_name(self.device)


def _storage(t):
    """(key, bytes) of the storage behind tensor t; tensors sharing memory share the key."""
    try:
        s = t.untyped_storage()  # torch >= 2.0
        return (s.device.type, s.data_ptr()), s.nbytes()
    except AttributeError:
        s = t.storage()  # torch 1.x TypedStorage
        try:
            n = s.nbytes()
        except AttributeError:
            n = s.size() * s.element_size()
        return (t.device.type, s.data_ptr()), n


def _on_device(t, device):
    if not isinstance(t, torch.Tensor) or t.device.type != device.type:
        return False
    if t.device.type == "meta":
        return False
    return device.index is None or t.device.index in (None, device.index)


def tensor_bytes(tensors, device, seen=None):
    """Bytes of the distinct storages of the tensors on device (seen: keys already counted)."""
    seen = set() if seen is None else seen
    total = 0
    for t in tensors:
        if not _on_device(t, device):
            continue
        key, n = _storage(t)
        if key in seen or key[1] == 0:
            continue
        seen.add(key)
        total += n
    return total


def _quant_state_tensors(p):
    """bitsandbytes keeps a 4-bit weight's absmax (and nested state) beside the parameter."""
    qs = getattr(p, "quant_state", None)
    out = []
    for obj in (qs, getattr(qs, "state2", None)):
        for name in ("absmax", "code"):
            t = getattr(obj, name, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    return out


def _dtype_name(dt):
    return str(dt).replace("torch.", "")


def _rank():
    try:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
    except (RuntimeError, AttributeError):
        pass
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


class MemLedger:
    """Records one device's memory per training step into a JSON Lines file.

    path: the file ('{rank}' in it = one file per rank). model, optimizer: walked for the static
    breakdown (may also be given to step()). device: default the current CUDA device.
    every: record one step in every N. stats: the allocator's figures (TorchCudaStats).
    """

    def __init__(self, path, model=None, optimizer=None, device=None, every=1, stats=None):
        if torch is None:
            raise RuntimeError("memledger_hook: torch is not installed in this Python (" + sys.executable + ")")
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
        if device is None:
            raise RuntimeError("memledger_hook: no CUDA/ROCm device (pass device= and stats= to test on CPU)")
        self.device = torch.device(device)
        self.stats = stats if stats is not None else TorchCudaStats(self.device)
        self.model = model
        self.optimizer = optimizer
        self.every = max(1, int(every))
        self.rank, self.world = _rank()
        self.path = path.format(rank=self.rank) if "{rank}" in path else path
        self.enabled = "{rank}" in path or self.rank == 0
        self._f = None
        self._t0 = time.monotonic()
        self._steps = 0
        self._grad_bytes = 0
        self._hooked = set()
        self._last_static = None

    # ---- file ------------------------------------------------------------------------------

    def open(self):
        if not self.enabled or self._f is not None:
            return self
        self._f = open(self.path, "w", encoding="utf-8")
        info = self.stats.mem_get_info()
        try:
            name = self.stats.device_name()
        except (RuntimeError, AttributeError, AssertionError):
            name = ""
        self._write({
            "type": "meta", "tool": "memledger_hook", "version": FORMAT_VERSION, "device": str(self.device),
            "device_name": name, "backend": "hip" if getattr(torch.version, "hip", None) else "cuda",
            "torch": torch.__version__, "total_bytes": int(info[1]) if info else None,
            "rank": self.rank, "world_size": self.world,
        })
        return self

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()
        return False

    def _write(self, rec):
        if self._f is None:
            return
        self._f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self._f.flush()  # a crashed run leaves every record written so far

    def _t(self):
        return round(time.monotonic() - self._t0, 3)

    # ---- the static part ---------------------------------------------------------------------

    def _hook_optimizer(self, optimizer):
        """Measure the gradients when the optimizer step starts (before zero_grad frees them)."""
        # accelerate's AcceleratedOptimizer (what the HF Trainer hands callbacks) subclasses
        # torch.optim.Optimizer without its __init__, so its own register_step_pre_hook fails:
        # hook the optimizer it wraps.
        while isinstance(getattr(optimizer, "optimizer", None), torch.optim.Optimizer):
            optimizer = optimizer.optimizer
        if optimizer is None or id(optimizer) in self._hooked:
            return
        reg = getattr(optimizer, "register_step_pre_hook", None)
        if reg is None:
            return
        self._hooked.add(id(optimizer))
        model_ref = self

        def pre_hook(opt, args, kwargs):
            model_ref._note_grads(model_ref.model, opt)

        reg(pre_hook)

    def _grad_tensors(self, model, optimizer):
        if model is not None:
            return [p.grad for p in model.parameters() if p.grad is not None]
        if optimizer is not None:
            return [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        return []

    def _note_grads(self, model, optimizer):
        n = tensor_bytes(self._grad_tensors(model, optimizer), self.device)
        self._grad_bytes = max(self._grad_bytes, n)

    def after_backward(self, model=None, optimizer=None):
        """Measure the gradients now (for torch < 2.0, between backward() and zero_grad())."""
        self._note_grads(model or self.model, optimizer or self.optimizer)

    def static(self, model=None, optimizer=None):
        """The static breakdown now, as a dict of byte counts."""
        model = model or self.model
        optimizer = optimizer or self.optimizer
        seen = set()
        weights = trainable = 0
        by_dtype = {}
        params = trainable_params = 0
        if model is not None:
            for p in model.parameters():
                params += p.numel()
                if p.requires_grad:
                    trainable_params += p.numel()
                n = tensor_bytes([p] + _quant_state_tensors(p), self.device, seen)
                weights += n
                if p.requires_grad:
                    trainable += n
                if n:
                    by_dtype[_dtype_name(p.dtype)] = by_dtype.get(_dtype_name(p.dtype), 0) + n
        buffers = tensor_bytes(list(model.buffers()), self.device, seen) if model is not None else 0
        grads = tensor_bytes(self._grad_tensors(model, optimizer), self.device)
        self._grad_bytes = max(self._grad_bytes, grads)
        optim = 0
        if optimizer is not None:
            state_tensors = []
            for st in optimizer.state.values():
                for v in st.values():
                    if isinstance(v, torch.Tensor):
                        state_tensors.append(v)
            # States never alias parameters; a separate seen set keeps them apart.
            optim = tensor_bytes(state_tensors, self.device)
        return {
            "params": params, "trainable_params": trainable_params, "weights_bytes": weights,
            "trainable_weights_bytes": trainable, "weights_by_dtype": by_dtype,
            "gradients_bytes": self._grad_bytes, "optimizer_bytes": optim, "buffers_bytes": buffers,
        }

    # ---- steps and phases --------------------------------------------------------------------

    def begin_step(self, model=None, optimizer=None):
        if model is not None:
            self.model = model
        if optimizer is not None:
            self.optimizer = optimizer
        self._hook_optimizer(self.optimizer)
        self._grad_bytes = 0
        self.stats.reset_peak_memory_stats()

    def end_step(self, step=None, phase="train", model=None, optimizer=None):
        """Record the step that just ended; returns the record (None when skipped)."""
        self._steps += 1
        step = self._steps if step is None else step
        if (self._steps - 1) % self.every:
            return None
        self.stats.synchronize()
        st = self.static(model, optimizer)
        static_bytes = st["weights_bytes"] + st["gradients_bytes"] + st["optimizer_bytes"]
        key = tuple(sorted((k, str(v)) for k, v in st.items()))
        if key != self._last_static:
            self._last_static = key
            self._write(dict({"type": "static", "step": step, "t_s": self._t()}, **st))
        peak = int(self.stats.max_memory_allocated())
        info = self.stats.mem_get_info()
        rec = {
            "type": "step", "step": step, "phase": phase, "t_s": self._t(),
            "allocated_bytes": int(self.stats.memory_allocated()),
            "reserved_bytes": int(self.stats.memory_reserved()),
            "peak_allocated_bytes": peak,
            "peak_reserved_bytes": int(self.stats.max_memory_reserved()),
            "static_bytes": static_bytes,
            "activation_peak_bytes": max(0, peak - static_bytes),
            "device_used_bytes": int(info[1] - info[0]) if info else None,
        }
        self._write(rec)
        return rec

    @contextlib.contextmanager
    def step(self, step=None, phase="train", model=None, optimizer=None):
        """Context manager around one training step."""
        self.begin_step(model, optimizer)
        yield self
        self.end_step(step, phase)

    def mark_phase(self, name, step=None):
        """Record the peaks since the last reset under a phase name, then reset them."""
        self.stats.synchronize()
        rec = {
            "type": "phase", "phase": name, "t_s": self._t(),
            "peak_allocated_bytes": int(self.stats.max_memory_allocated()),
            "peak_reserved_bytes": int(self.stats.max_memory_reserved()),
        }
        if step is not None:
            rec["step"] = step
        self._write(rec)
        self.stats.reset_peak_memory_stats()
        return rec

    @contextlib.contextmanager
    def phase(self, name):
        """Context manager around a phase (eval, save, load, generate)."""
        self.stats.reset_peak_memory_stats()
        yield self
        self.mark_phase(name)


try:  # transformers is optional
    from transformers import TrainerCallback as _CallbackBase
except ImportError:  # pragma: no cover - depends on the environment
    _CallbackBase = object


class MemLedgerCallback(_CallbackBase):
    """A transformers.TrainerCallback that records every step, eval and save (rank 0).

    Events: on_train_begin (the load peak), on_step_begin / on_step_end (a step),
    on_pre_optimizer_step (the gradients, newer transformers), on_evaluate (eval), on_save (save),
    on_train_end.
    """

    def __init__(self, path="memledger.jsonl", every=1, device=None, stats=None):
        self._path, self._every, self._device, self._stats = path, every, device, stats
        self.ledger = None

    def _ensure(self, model=None, optimizer=None):
        if self.ledger is None:
            self.ledger = MemLedger(self._path, model=model, optimizer=optimizer, device=self._device,
                                    every=self._every, stats=self._stats).open()
        if model is not None:
            self.ledger.model = model
        if optimizer is not None:
            self.ledger.optimizer = optimizer
        return self.ledger

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self._ensure(model, optimizer).mark_phase("load", step=getattr(state, "global_step", None))

    def on_step_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self._ensure(model, optimizer).begin_step(model, optimizer)

    def on_pre_optimizer_step(self, args, state, control, model=None, optimizer=None, **kwargs):
        self._ensure(model, optimizer).after_backward(model, optimizer)

    def on_step_end(self, args, state, control, model=None, optimizer=None, **kwargs):
        ml = self._ensure(model, optimizer)
        ml.end_step(step=getattr(state, "global_step", None), model=model, optimizer=optimizer)
        ml.stats.reset_peak_memory_stats()

    def on_evaluate(self, args, state, control, **kwargs):
        self._ensure().mark_phase("eval", step=getattr(state, "global_step", None))

    def on_save(self, args, state, control, **kwargs):
        self._ensure().mark_phase("save", step=getattr(state, "global_step", None))

    def on_train_end(self, args, state, control, **kwargs):
        if self.ledger is not None:
            self.ledger.close()


# ---- python -m memledger_hook ----------------------------------------------------------------

RECORDS = (
    ("meta", "once: device, device_name, backend (cuda or hip), torch, total_bytes, rank, world_size"),
    ("static", "when the model states change: params, trainable_params, weights_bytes, "
               "trainable_weights_bytes, weights_by_dtype, gradients_bytes, optimizer_bytes, buffers_bytes"),
    ("step", "each step (or one in every N): phase, allocated_bytes, reserved_bytes, peak_allocated_bytes, "
             "peak_reserved_bytes, static_bytes, activation_peak_bytes, device_used_bytes"),
    ("phase", "load, eval, save, ...: peak_allocated_bytes, peak_reserved_bytes"),
)


def _torch_line():
    if torch is None:
        return "torch: not installed in " + sys.executable + " (recording needs it)"
    backend = "hip " + torch.version.hip if getattr(torch.version, "hip", None) else "cuda " + str(torch.version.cuda)
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return "torch: %s (%s), %d GPU%s visible" % (torch.__version__, backend, n, "" if n == 1 else "s")


def _probe(out):
    """The meta record of each visible GPU, as the hook would write it; 1 when there is none."""
    if torch is None or not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print("memledger_hook: no GPU to probe; " + _torch_line(), file=sys.stderr)
        return 1
    for i in range(torch.cuda.device_count()):
        stats = TorchCudaStats(torch.device("cuda", i))
        info = stats.mem_get_info()
        out.write(json.dumps({
            "type": "meta", "tool": "memledger_hook", "version": FORMAT_VERSION, "device": "cuda:%d" % i,
            "device_name": stats.device_name(), "backend": "hip" if getattr(torch.version, "hip", None) else "cuda",
            "torch": torch.__version__, "total_bytes": int(info[1]) if info else None,
            "free_bytes": int(info[0]) if info else None,
        }) + "\n")
    return 0


def main(argv=None):
    """`python -m memledger_hook [--probe] [--version]`."""
    import argparse
    import textwrap

    p = argparse.ArgumentParser(
        prog="python -m memledger_hook",
        description="Measure a PyTorch training run the way memledger's ledger counts it, as JSON Lines "
                    "for `memledger compare`.")
    p.add_argument("--version", action="version", version="memledger_hook " + __version__)
    p.add_argument("--probe", action="store_true",
                   help="print the meta record (device, capacity, free memory) of each visible GPU; "
                        "exit 1 without torch or a GPU")
    args = p.parse_args(argv)
    if args.probe:
        return _probe(sys.stdout)
    print("memledger_hook %s: records, one JSON object per line (format %d):" % (__version__, FORMAT_VERSION))
    for name, what in RECORDS:
        print(textwrap.fill(what, 79, initial_indent="  %-7s " % name, subsequent_indent=" " * 10))
    print("""
In a training loop:
    from memledger_hook import MemLedger
    with MemLedger("run.jsonl", model=model, optimizer=opt) as ml:
        for batch in loader:
            with ml.step():
                ...  # forward, backward, optimizer step

With the HF Trainer:
    from memledger_hook import MemLedgerCallback
    trainer = Trainer(..., callbacks=[MemLedgerCallback("run.jsonl")])

Then: memledger compare run.jsonl --config train.yaml --gpu a100-80g
""")
    print(_torch_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
