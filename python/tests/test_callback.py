"""MemLedgerCallback through a real transformers Trainer on the CPU, on tiny models built from a
config (no downloads). The run's description is held to what the test set by hand (the expected
memledger train options are written out here, not derived by the callback's code), and the
ledger's parameter counts to the real model's.
"""

import io
import json
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import memledger  # noqa: E402
from memledger import MemLedgerCallback  # noqa: E402

SEQ, BATCH = 32, 2


def tiny_llama():
    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                   attn_implementation="sdpa")
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(cfg)


def rows(n=8, seq=SEQ):
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(n):
        ids = torch.randint(0, 256, (seq,), generator=g)
        out.append({"input_ids": ids, "attention_mask": torch.ones(seq, dtype=torch.long), "labels": ids.clone()})
    return out


def args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=BATCH, max_steps=2, use_cpu=True,
                report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True)
    base.update(kw)
    return transformers.TrainingArguments(**base)


class Order(transformers.TrainerCallback):
    """Notes what the callback had printed when the first step began."""

    def __init__(self, stream):
        self.stream, self.at_first_step = stream, None

    def on_step_begin(self, args, state, control, **kw):
        if self.at_first_step is None:
            self.at_first_step = self.stream.getvalue()


class CpuStats:
    """The allocator's figures on a CPU run: none exist, so these are fixed; the test checks the
    comparison's plumbing (what compare says of this file), not the numbers."""

    def synchronize(self):
        pass

    def memory_allocated(self):
        return 3 << 20

    def memory_reserved(self):
        return 4 << 20

    def max_memory_allocated(self):
        return 5 << 20

    def max_memory_reserved(self):
        return 6 << 20

    def reset_peak_memory_stats(self):
        pass

    def mem_get_info(self):
        return (20 << 30, 24 << 30)

    def device_name(self):
        return "cpu"


def expected(config_json, gpu, **more):
    """The options the test expects for this run, written by hand from what it set."""
    opts = dict(framework="hf", gpu=gpu, num_gpus=1, method="full", dtype="fp32", batch=BATCH, seq=SEQ, grad_accum=1,
                optim="adamw_torch_fused", grad_ckpt="off", attn="sdpa",
                torch_version=".".join(torch.__version__.split("+")[0].split(".")[:2]),
                transformers_version=".".join(transformers.__version__.split(".")[:2]))
    opts.update(more)
    return memledger.train(config_json, **opts)


def test_preflight_full_fine_tune(tmp_path):
    model = tiny_llama()
    out = io.StringIO()
    cb = MemLedgerCallback(gpu="rtx4090", stream=out, keep=True)
    order = Order(out)
    trainer = transformers.Trainer(model=model, args=args(tmp_path), train_dataset=rows(), callbacks=[cb, order])
    trainer.train()
    text = out.getvalue()
    led = cb.prediction
    assert led is not None, text
    # The ledger counts the real model's parameters, all trainable.
    n = sum(p.numel() for p in model.parameters())
    assert led.model["params"] == n and led.model["trainable_params"] == n
    # The run as the test describes it by hand gives the same ledger.
    want = expected(cb.model_arg, "rtx4090")
    assert (led.allocated, led.reserved, led.device, led.verdict) == (want.allocated, want.reserved, want.device,
                                                                      want.verdict)
    assert led.verdict == "fits"
    # The pre-flight lines were printed before the first step: the command's own peak block.
    report = memledger.text("train", cb.model_arg, **cb.run_options)
    block = [ln for ln in report.splitlines() if ln.startswith("verdict:") or ln.lstrip().startswith("device ")]
    assert block and all(ln in order.at_first_step for ln in block), text
    assert "memledger: before the first step" in order.at_first_step
    assert "no CUDA/ROCm device" in text  # nothing recorded on the CPU without stats


def test_lora_counts_the_adapters(tmp_path):
    peft = pytest.importorskip("peft")
    model = peft.get_peft_model(tiny_llama(), peft.LoraConfig(r=8, target_modules=["q_proj", "v_proj"],
                                                               task_type="CAUSAL_LM"))
    out = io.StringIO()
    cb = MemLedgerCallback(gpu="rtx4090", stream=out)
    transformers.Trainer(model=model, args=args(tmp_path, bf16=False), train_dataset=rows(), callbacks=[cb]).train()
    led = cb.prediction
    assert led is not None, out.getvalue()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    base = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    assert led.model["trainable_params"] == trainable
    assert led.model["params"] == base
    want = expected(cb.model_arg, "rtx4090", method="lora", lora_rank=8, lora_target="q_proj,v_proj")
    assert led.device == want.device


def test_warns_before_the_first_step_when_it_will_not_fit(tmp_path):
    out = io.StringIO()
    cb = MemLedgerCallback(gpu="0.25GiB", stream=out)
    order = Order(out)
    trainer = transformers.Trainer(model=tiny_llama(), args=args(tmp_path), train_dataset=rows(),
                                   callbacks=[cb, order])
    with pytest.warns(RuntimeWarning, match="will not fit"):
        trainer.train()
    assert cb.prediction.verdict == "does not fit"
    assert "WARNING: this run will not fit" in order.at_first_step
    res = memledger.fit(cb.model_arg, **cb.run_options)
    if res.cheapest is None:
        assert "fit found no change" in order.at_first_step
    else:
        assert res.cheapest.summary in order.at_first_step


def test_check_stops_before_the_first_step(tmp_path):
    steps = []

    class Steps(transformers.TrainerCallback):
        def on_step_begin(self, *a, **kw):
            steps.append(1)

    cb = MemLedgerCallback(gpu="0.25GiB", stream=io.StringIO(), check=True)
    trainer = transformers.Trainer(model=tiny_llama(), args=args(tmp_path), train_dataset=rows(),
                                   callbacks=[cb, Steps()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(memledger.MemLedgerError, match="will not fit"):
            trainer.train()
    assert steps == []


def test_records_compares_and_writes_the_record(tmp_path):
    out = io.StringIO()
    record = tmp_path / "runs.jsonl"
    cb = MemLedgerCallback(gpu="rtx4090", stream=out, device="cpu", stats=CpuStats(), record=str(record))
    transformers.Trainer(model=tiny_llama(), args=args(tmp_path), train_dataset=rows(), callbacks=[cb]).train()
    measured = cb._path
    steps = [json.loads(line) for line in open(measured) if '"step"' in line]
    assert len([s for s in steps if s["type"] == "step"]) == 2
    # The comparison printed is what `memledger compare` says of the same file and run.
    direct = memledger.text("compare", measured, cb.model_arg, **cb.run_options)
    assert cb.comparison == direct and direct.strip() in out.getvalue()
    rec = json.loads(record.read_text().splitlines()[-1])
    assert rec["outcome"] == "measured" and rec["task"] == "train" and rec["method"] == "full"
    assert rec["measured_gib"] == round((5 << 20) / 2**30, 3) and rec["micro_batch"] == BATCH
    assert rec["seq_len"] == SEQ and rec["measure_kind"] == "max_allocated"


def test_out_of_memory_is_reported(tmp_path):
    out = io.StringIO()
    model = tiny_llama()
    calls = []

    def oom(module, inputs):
        calls.append(1)
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")

    model.register_forward_pre_hook(oom)
    record = tmp_path / "runs.jsonl"
    cb = MemLedgerCallback(gpu="rtx4090", stream=out, device="cpu", stats=CpuStats(), record=str(record))
    with pytest.raises(torch.OutOfMemoryError):
        transformers.Trainer(model=model, args=args(tmp_path), train_dataset=rows(), callbacks=[cb]).train()
    assert cb.oom is not None
    text = out.getvalue()
    assert "memledger: out of memory: CUDA out of memory" in text
    assert cb.comparison and cb.comparison.strip() in text
    assert json.loads(record.read_text().splitlines()[-1])["outcome"] == "oom"


class FourRanks(transformers.TrainingArguments):
    """TrainingArguments as rank 0 of four sees them (a CPU test cannot start four ranks)."""

    @property
    def world_size(self):
        return 4


def test_sharding_settings_reach_the_ledger(tmp_path):
    """DeepSpeed and FSDP settings of TrainingArguments, and gradient checkpointing, as the ledger reads them."""
    from conftest import SEED
    ds_path = os.path.join(SEED, "deepspeed_z3_4x16g.json")
    with open(ds_path, encoding="utf-8") as f:
        stage = json.load(f)["zero_optimization"]["stage"]
    model = tiny_llama()
    a = FourRanks(output_dir=str(tmp_path), use_cpu=True, report_to=[], per_device_train_batch_size=BATCH,
                  gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False})
    a.deepspeed = ds_path  # set after __init__: this machine has no deepspeed package to validate it
    cb = MemLedgerCallback(gpu="dcu-16g", seq=SEQ, stream=io.StringIO())
    cfg, opts = cb.describe(a, model)
    led = memledger.train(cfg, **opts)
    assert led.settings["deepspeed"] and led.settings["zero_stage"] == stage == 3
    assert led.gpu["count"] == 4 and led.settings["sharding"] == 4
    assert led.settings["grad_ckpt"] == "non-reentrant"
    a.deepspeed = None
    a.fsdp = ["full_shard", "offload"]
    cb2 = MemLedgerCallback(gpu="dcu-16g", seq=SEQ, stream=io.StringIO())
    cfg, opts = cb2.describe(a, model)
    led = memledger.train(cfg, **opts)
    assert not led.settings["deepspeed"] and led.settings["sharding"] == 4
    # FSDP CPU offload moves the parameters off the card: the ledger's weights are not on the GPU.
    on_card = {c.id: c.bytes for c in led.components}
    full = memledger.train(cfg, **dict(opts, offload="none"))
    assert led.device.bytes < full.device.bytes and on_card != {c.id: c.bytes for c in full.components}
