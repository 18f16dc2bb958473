"""MemLedgerCallback: a Hugging Face Trainer callback that checks the run before its first step.

At ``on_train_begin`` it describes the run from the live objects — TrainingArguments, the model's
config (written to a temporary ``config.json``), the PEFT config, the DeepSpeed / FSDP settings,
the card (``torch.cuda.get_device_properties``, or ``gpu=``) — to ``memledger train``, prints the
predicted peak with its interval and the verdict, and, when the run will not fit, warns before the
first step with ``memledger fit``'s cheapest plan. During the run it records what memledger_hook
records (CUDA / ROCm); at the end, or when a step runs out of memory, it prints ``memledger
compare`` of the measurement against the ledger and, with ``record=``, writes the run as a record
of validation/data/measured-memory.jsonl's format. docs/python.md says what each setting maps to.
"""

import inspect
import json
import os
import shutil
import sys
import tempfile
import warnings
import weakref

import memledger_hook as _hook

from . import api

try:
    import torch
except ImportError:  # pragma: no cover - the callback runs inside a Trainer, which needs torch
    torch = None

# TRL's config classes -> LLaMA-Factory's stage key (docs/train-config.md, `stage`).
_TRL_STAGES = {"SFTConfig": "sft", "DPOConfig": "dpo", "RewardConfig": "rm", "KTOConfig": "kto",
               "ORPOConfig": "orpo", "GRPOConfig": "grpo", "PPOConfig": "ppo"}
# transformers' OptimizerNames values the ledger knows under another name (docs/cli/train.md, --optim).
_OPTIM = {"adamw_bnb_8bit": "adamw_8bit", "adamw_8bit": "adamw_8bit"}
# model.config._attn_implementation -> --attn.
_ATTN = {"eager": "eager", "sdpa": "sdpa", "flash_attention_2": "flash", "flash_attention_3": "flash"}
_SAMPLE = 256  # dataset rows looked at for the sequence length


def _gib(n):
    return "%.2f GiB" % (n / 2**30)


def _xy(version):
    parts = str(version).split("+")[0].split(".")
    return ".".join(parts[:2])


class MemLedgerCallback(_hook.MemLedgerCallback):
    """``Trainer(..., callbacks=[MemLedgerCallback()])``.

    gpu: the card as ``memledger gpus`` names it or a size (default: the CUDA / ROCm device the
    run is on, by its exact capacity). seq: tokens per sample (default: TRL's ``max_length``, else
    the longest of up to 256 rows of the training set). path: the measurement file (default: a
    temporary file, removed with the callback unless ``keep=True``). record: write the run's record here
    (validation/data/measured-memory.jsonl's format). check: raise MemLedgerError before the first
    step when the run will not fit. stream: where the lines go (default stderr). Any other keyword
    is an option of ``memledger train`` (``framework="llamafactory"``, ``set={...}``), applied
    after the ones read from the live objects. device, stats, every: as memledger_hook's.
    """

    def __init__(self, gpu=None, seq=None, path=None, record=None, check=False, keep=False, stream=None,
                 every=1, device=None, stats=None, **options):
        api.flags(options)  # a bad keyword is refused now, not at the first step
        self._tmp = tempfile.mkdtemp(prefix="memledger-")
        if not keep and not path:
            # The config.json and the measurement live as long as the callback (its ledger can still
            # be asked about after train() returns); the directory goes with it.
            weakref.finalize(self, shutil.rmtree, self._tmp, True)
        super().__init__(path or os.path.join(self._tmp, "measured.jsonl"), every=every, device=device,
                         stats=stats)
        self.gpu, self.seq, self.record_path, self.check, self.keep = gpu, seq, record, check, keep
        self.stream = stream
        self.options = options
        self.model_arg = None  # the config.json the run is described by
        self.run_options = None  # the options of memledger train, as read from the live objects
        self.notes = []  # what was assumed in reading the live objects
        self.prediction = None  # the Ledger (memledger.train) before the first step
        self.plan = None  # fit's cheapest plan when the run does not fit
        self.comparison = None  # the text of memledger compare at the end
        self.oom = None
        self._recording = False
        self._finished = False
        self._main = True
        self.card_name = None  # the CUDA / ROCm device's name, when the card is read from it

    # ---- output ------------------------------------------------------------------------------

    def _say(self, msg):
        if self._main:
            print(msg, file=self.stream or sys.stderr, flush=True)

    # ---- the run from the live objects -------------------------------------------------------

    def describe(self, args, model, train_dataloader=None):
        """(config.json path, options of memledger train) for this run; notes in self.notes."""
        opts = {}
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        cfg = getattr(base, "config", None)
        if cfg is None or not hasattr(cfg, "to_json_file"):
            raise api.MemLedgerError("memledger: the model has no transformers config to describe it")
        path = os.path.join(self._tmp, "model", "config.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        cfg.to_json_file(path)

        opts["framework"] = "hf"
        stage = _TRL_STAGES.get(type(args).__name__) if type(args).__module__.startswith("trl") else None
        if stage:
            opts["framework"] = "trl"
        opts["gpu"] = self._gpu(args)
        world = int(getattr(args, "world_size", 1) or 1)
        per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world) or world)
        opts["num_gpus"] = per_node
        if world // max(per_node, 1) > 1:
            opts["nodes"] = world // per_node

        opts.update(self._method(model, base))
        opts["dtype"] = self._dtype(args, base, opts.get("method"))
        opts["batch"] = args.per_device_train_batch_size
        opts["grad_accum"] = args.gradient_accumulation_steps
        opts["seq"] = self._seq(args, train_dataloader)
        optim = getattr(args.optim, "value", args.optim)
        opts["optim"] = _OPTIM.get(optim, optim)
        if getattr(args, "gradient_checkpointing", False):
            kw = getattr(args, "gradient_checkpointing_kwargs", None) or {}
            opts["grad_ckpt"] = "non-reentrant" if kw.get("use_reentrant") is False else "on"
        else:
            opts["grad_ckpt"] = "off"
        attn = _ATTN.get(getattr(cfg, "_attn_implementation", None))
        if attn:
            opts["attn"] = attn
        else:
            self.notes.append("attention %r is not one the ledger names: its default assumed"
                              % getattr(cfg, "_attn_implementation", None))
        strategy = getattr(getattr(args, "eval_strategy", None), "value", getattr(args, "eval_strategy", "no"))
        if strategy and strategy != "no":
            opts["eval"] = True
        opts.update(self._sharding(args))
        if torch is not None:
            opts["torch_version"] = _xy(torch.__version__)
        try:
            import transformers
            opts["transformers_version"] = _xy(transformers.__version__)
        except ImportError:  # pragma: no cover
            pass
        sets = {}
        if stage:
            sets["stage"] = stage
        user_sets = self.options.get("set")
        merged = dict(opts)
        for k, v in self.options.items():
            if k != "set":
                if k in merged and merged[k] != v:
                    self.notes.append("%s=%r given to the callback wins over %r read from the run" % (k, v, merged[k]))
                merged[k] = v
        if sets or user_sets:
            items = ["%s=%s" % kv for kv in sets.items()]
            if isinstance(user_sets, dict):
                items += ["%s=%s" % kv for kv in user_sets.items()]
            elif user_sets:
                items += list(user_sets) if not isinstance(user_sets, str) else [user_sets]
            merged["set"] = items
        return path, merged

    def _gpu(self, args):
        if self.gpu:
            return self.gpu
        if torch is not None and torch.cuda.is_available():
            dev = getattr(args, "device", None)
            idx = dev.index if getattr(dev, "type", None) == "cuda" and dev.index is not None else \
                torch.cuda.current_device()
            props = torch.cuda.get_device_properties(idx)
            self.card_name = props.name
            return str(int(props.total_memory))  # exact bytes (docs/units.md: a plain number)
        raise api.MemLedgerError("memledger: no CUDA/ROCm device and no gpu= given: "
                                 "MemLedgerCallback(gpu=\"rtx4090\") names the card the run is meant for")

    def _method(self, model, base):
        peft = getattr(model, "peft_config", None)
        quant = getattr(getattr(base, "config", None), "quantization_config", None)
        bits = None
        if getattr(base, "is_loaded_in_4bit", False) or getattr(quant, "load_in_4bit", False):
            bits = 4
        elif getattr(base, "is_loaded_in_8bit", False) or getattr(quant, "load_in_8bit", False):
            bits = 8
        if peft:
            name, pc = next(iter(peft.items()))
            kind = getattr(getattr(pc, "peft_type", None), "value", str(getattr(pc, "peft_type", "")))
            if kind != "LORA":
                raise api.MemLedgerError("memledger: PEFT %s (adapter %r) is not modelled; only LoRA is" % (kind, name))
            out = {"method": "qlora" if bits else "lora", "lora_rank": int(pc.r)}
            if bits:
                out["quant_bits"] = bits
            tm = pc.target_modules
            if tm == "all-linear":
                out["lora_target"] = "all"
            elif tm:
                out["lora_target"] = sorted(tm) if not isinstance(tm, str) else tm
            return out
        if bits:
            raise api.MemLedgerError("memledger: a %d-bit model trained without LoRA is not modelled" % bits)
        n = trainable = 0
        for p in model.parameters():
            n += p.numel()
            trainable += p.numel() if p.requires_grad else 0
        if trainable < n:
            self.notes.append("%d of %d parameters are frozen without PEFT: counted as full fine-tuning, "
                              "which over-counts gradients and optimizer states" % (n - trainable, n))
        return {"method": "full"}

    def _dtype(self, args, base, method):
        dtypes = {p.dtype for p in base.parameters()}
        half = torch is not None and dtypes and all(d in (torch.bfloat16, torch.float16) for d in dtypes)
        if getattr(args, "fp16", False):
            return "fp16"
        if half and method == "full":
            return "pure_bf16"  # weights, gradients and states in bf16 (docs/train-config.md, pure_bf16)
        if getattr(args, "bf16", False) or half:
            return "bf16"
        return "fp32"

    def _seq(self, args, loader):
        if self.seq:
            return int(self.seq)
        for key in ("max_length", "max_seq_length"):
            v = getattr(args, key, None)
            if isinstance(v, int) and v > 0:
                return v
        ds = getattr(loader, "dataset", None)
        try:
            n = len(ds)
        except TypeError:
            n = 0
        if n:
            step = max(1, n // _SAMPLE)
            longest = 0
            for i in range(0, n, step):
                row = ds[i]
                ids = row.get("input_ids") if isinstance(row, dict) else None
                if ids is not None:
                    longest = max(longest, len(ids))
            if longest:
                self.notes.append("sequence length %d: the longest of %d of the training set's %d rows "
                                  "(seq= to give it)" % (longest, len(range(0, n, step)), n))
                return longest
        raise api.MemLedgerError("memledger: cannot tell the sequence length from the run: "
                                 "MemLedgerCallback(seq=...) gives it")

    def _sharding(self, args):
        out = {}
        ds = getattr(args, "deepspeed", None)
        if ds:
            if isinstance(ds, dict):
                p = os.path.join(self._tmp, "deepspeed.json")
                with open(p, "w", encoding="utf-8") as f:
                    json.dump(ds, f)
                ds = p
            out["deepspeed"] = os.path.abspath(ds)
        fsdp = getattr(args, "fsdp", None) or []
        if isinstance(fsdp, str):
            fsdp = fsdp.split()
        names = [getattr(o, "value", str(o)) for o in fsdp]
        for mode in ("full_shard", "shard_grad_op", "hybrid_shard"):
            if mode in names:
                out["fsdp"] = mode
                break
        if "offload" in names:
            out["offload"] = "all"  # FSDP CPUOffload(offload_params=True): parameters, gradients, states
        return out

    # ---- before the first step ---------------------------------------------------------------

    def preflight(self, args, model, train_dataloader=None):
        """Describe the run, compute its ledger and, when it does not fit, fit's cheapest plan."""
        self.model_arg, self.run_options = self.describe(args, model, train_dataloader)
        self.prediction = api.train(self.model_arg, **self.run_options)
        led = self.prediction
        report = api.text("train", self.model_arg, **self.run_options)
        self._say("memledger: before the first step (memledger train %s):" % " ".join(
            [self.model_arg] + api.flags(self.run_options)))
        self._say(_peak_block(report, led.peak_phase) or _plain(led))
        for note in self.notes:
            self._say("memledger: note: " + note)
        for w in led.warnings:
            self._say("memledger: warning: " + w)
        if led.verdict == "fits":
            return led
        if led.verdict == "tight":
            self._say("memledger: TIGHT: the estimate fits but the high end of its interval does not")
        else:
            hi = led.device.interval.high if led.device.interval else led.device.bytes
            msg = ("memledger: WARNING: this run will not fit: %s per GPU (up to %s) on a %s card; it will run "
                   "out of memory" % (_gib(led.device.bytes), _gib(hi), _gib(led.capacity_bytes)))
            if led.may_fit:
                msg += " unless it lands at the low end of the interval"
            self._say("!" * 79)
            self._say(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        try:
            result = api.fit(self.model_arg, **self.run_options)
            self.plan = result.cheapest
            if self.plan is None:
                self._say("memledger: fit found no change that makes it fit")
            else:
                fit_text = api.text("fit", self.model_arg, **dict(self.run_options, plans=1))
                self._say("memledger: the cheapest change that makes it fit (memledger fit):")
                self._say(_first_plan(fit_text) or self.plan.summary)
        except api.MemLedgerError as e:
            self._say("memledger: fit: " + str(e))
        if led.verdict != "tight":
            self._say("!" * 79)
            if self.check:
                raise api.MemLedgerError("memledger: the run will not fit (check=True stops it before the first step)")
        return led

    # ---- the Trainer's events ----------------------------------------------------------------

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self._main = bool(getattr(state, "is_world_process_zero", True))
        try:
            self.preflight(args, model, kwargs.get("train_dataloader"))
        except api.MemLedgerError as e:
            if self.check and self.prediction is not None:
                raise
            self._say("memledger: cannot check this run before its first step: %s" % e)
        except FileNotFoundError as e:
            self._say(str(e))
        except Exception as e:  # noqa: BLE001 - describing the run must never stop it
            self._say("memledger: cannot check this run before its first step: %s: %s" % (type(e).__name__, e))
        self._recording = self._stats is not None or (torch is not None and torch.cuda.is_available())
        if self._recording:
            super().on_train_begin(args, state, control, model=model, optimizer=optimizer, **kwargs)
        else:
            self._say("memledger: no CUDA/ROCm device: the run's memory is not recorded")
        self._guard_oom()

    def on_step_begin(self, *a, **kw):
        if self._recording:
            super().on_step_begin(*a, **kw)

    def on_pre_optimizer_step(self, *a, **kw):
        if self._recording:
            super().on_pre_optimizer_step(*a, **kw)

    def on_step_end(self, *a, **kw):
        if self._recording:
            super().on_step_end(*a, **kw)

    def on_evaluate(self, *a, **kw):
        if self._recording:
            super().on_evaluate(*a, **kw)

    def on_save(self, *a, **kw):
        if self._recording:
            super().on_save(*a, **kw)

    def on_train_end(self, args, state, control, **kwargs):
        super().on_train_end(args, state, control, **kwargs)
        self.finish()

    # ---- out of memory -----------------------------------------------------------------------

    def _guard_oom(self):
        """Catch an out-of-memory error in the Trainer's training_step (the frame that called
        on_train_begin holds the Trainer), report, and raise it again."""
        trainer = None
        frame = inspect.currentframe()
        try:
            f = frame.f_back
            while f is not None and trainer is None:
                obj = f.f_locals.get("self")
                if obj is not None and hasattr(obj, "training_step") and hasattr(obj, "callback_handler"):
                    trainer = obj
                f = f.f_back
        finally:
            del frame
        if trainer is None or getattr(trainer.training_step, "_memledger", False):
            return
        step = trainer.training_step
        cb = self

        def training_step(*a, **kw):
            try:
                return step(*a, **kw)
            except BaseException as e:
                if _is_oom(e):
                    cb.on_oom(e)
                raise

        training_step._memledger = True
        trainer.training_step = training_step

    def on_oom(self, exc):
        """The run ran out of memory: say so, compare what was measured, write the record."""
        self.oom = exc
        first = str(exc).splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        self._say("memledger: out of memory: %s" % first)
        if self.ledger is not None:
            self.ledger.close()
        self.finish()

    # ---- the end -----------------------------------------------------------------------------

    def finish(self):
        if self._finished:
            return
        self._finished = True
        measured = self._path if self._recording and os.path.exists(self._path) else None
        if measured and self.model_arg and _has_steps(measured):
            try:
                self.comparison = api.text("compare", measured, self.model_arg, **self.run_options)
                self._say("memledger: the run against the ledger (memledger compare):")
                self._say(self.comparison.rstrip("\n"))
            except api.MemLedgerError as e:
                self._say("memledger: compare: " + str(e))
        elif self._recording:
            self._say("memledger: no step was measured: nothing to compare")
        if self.record_path and self.model_arg and self._main:
            try:
                rec = self.record(measured)
                with open(self.record_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
                self._say("memledger: the run's record appended to %s" % self.record_path)
            except (OSError, ValueError) as e:
                self._say("memledger: cannot write the run's record: %s" % e)
        if measured and self.keep:
            self._say("memledger: measurement kept in %s" % measured)

    def record(self, measured=None):
        """The run as one record of validation/data/measured-memory.jsonl (its fields, its units),
        with ``args``: the memledger train arguments that express it (validation/cases.tsv)."""
        led, o = self.prediction, self.run_options or {}
        peak = meta = static = None
        if measured:
            for r in _read(measured):
                if r.get("type") == "meta":
                    meta = r
                elif r.get("type") == "static":
                    static = r
                elif r.get("type") in ("step", "phase"):
                    peak = max(peak or 0, r.get("peak_allocated_bytes") or 0)
        model = led.model if led else {}
        return {
            "id": None, "source": "memledger MemLedgerCallback (memledger_hook %s)" % _hook.__version__,
            "model": model.get("hub_id") or model.get("name"),
            "params_b": round(model["params"] / 1e9, 3) if model.get("params") else None,
            "task": "train", "method": o.get("method"),
            "lora": {"rank": o.get("lora_rank"), "target_modules": o.get("lora_target")}
            if o.get("method") in ("lora", "qlora") else None,
            "precision": o.get("dtype"), "optimizer": o.get("optim"), "micro_batch": o.get("batch"),
            "seq_len": o.get("seq"), "grad_ckpt": o.get("grad_ckpt") not in (None, "off"),
            "attn_impl": o.get("attn"), "zero_stage": (led.settings.get("zero_stage") if led else None),
            "offload": o.get("offload"), "n_gpus": o.get("num_gpus", 1) * o.get("nodes", 1),
            "gpu": (meta or {}).get("device_name") or o.get("gpu"),
            "measured_gib": round(peak / 2**30, 3) if peak and not self.oom else None,
            "measure_kind": "max_allocated", "measure_detail": "torch.cuda.max_memory_allocated",
            "reported": "%d bytes" % peak if peak and not self.oom else None,
            "outcome": "oom" if self.oom else ("measured" if peak else None),
            "confidence": None, "framework": "HF Trainer (transformers %s)" % o.get("transformers_version"),
            "parallelism": ("DeepSpeed" if o.get("deepspeed") else "FSDP %s" % o["fsdp"] if o.get("fsdp") else
                            "DDP" if o.get("num_gpus", 1) > 1 else "single GPU"),
            "notes": "; ".join(self.notes) or None,
            "trainable_params": (static or {}).get("trainable_params"),
            "predicted_device_bytes": led.device.bytes if led else None,
            "args": " ".join(["MODEL"] + api.flags(o)),
        }


def _is_oom(e):
    if torch is not None and isinstance(e, getattr(torch, "OutOfMemoryError", ())):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()


def _read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _has_steps(path):
    return any(r.get("type") == "step" for r in _read(path))


def _paragraphs(report):
    out, cur = [], []
    for line in report.splitlines():
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _peak_block(report, phase):
    """The paragraph of train's report that gives the peak: it begins with the peak phase's id and
    holds the three figures, the capacity and the verdict, as the command wrote (and translated) them."""
    for para in _paragraphs(report):
        if len(para) >= 5 and phase and phase in para[0].split():
            return "\n".join(para)
    for para in _paragraphs(report):  # the id glued to a translated colon ("峰值：after_save")
        if len(para) >= 5 and phase and phase in para[0]:
            return "\n".join(para)
    return None


def _first_plan(fit_text):
    for para in _paragraphs(fit_text):
        if para[0].startswith("1. "):
            return "\n".join(para)
    return None


def _plain(led):
    iv = led.device.interval
    return "device %s%s per GPU, capacity %s: %s" % (
        _gib(led.device.bytes), " (%s-%s)" % (_gib(iv.low), _gib(iv.high)) if iv else "",
        _gib(led.capacity_bytes), led.verdict)
