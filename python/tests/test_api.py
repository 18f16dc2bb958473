"""The Python API against the command's own JSON, on the seed case (examples/seed-case).

The seed run is real: Qwen2.5-14B, LoRA r=64, DeepSpeed ZeRO-3 on 4 Hygon DCUs sold as 16 GB; it
went out of memory in the first step after a checkpoint save (its oom.log). The API must return
exactly the command's figures (one source of truth), and the command must say what happened.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import memledger
from conftest import ROOT, SEED, SEED_ARGS


def cli_json(exe, *args, cwd=SEED, stdin=None):
    p = subprocess.run([exe] + list(args) + ["--json"], cwd=cwd, input=stdin, capture_output=True)
    assert p.returncode in (0, 1), p.stderr.decode()
    return json.loads(p.stdout)


def test_version_is_the_projects(command):
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        version = re.search(r"project\(memledger VERSION ([0-9.]+)", f.read()).group(1)
    out = subprocess.run([command, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "memledger " + version
    assert memledger.__version__ == version
    import memledger_hook  # the hook joins the package and keeps its own name
    assert memledger_hook.__version__ == version


def test_the_command_is_the_wheels(command):
    exe = memledger.binary()
    assert os.path.dirname(os.path.dirname(exe)) == os.path.dirname(memledger.__file__), exe
    # The console script is in this Python's environment.
    assert os.path.dirname(command) == os.path.dirname(sys.executable)


def test_train_is_the_commands_json(command):
    doc = cli_json(command, "train", *SEED_ARGS)
    led = memledger.train(config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED)
    g = doc["per_gpu"]
    assert led.allocated.bytes == g["peak_allocated_bytes"]
    assert led.reserved.bytes == g["peak_reserved_bytes"]
    assert led.device.bytes == g["device_used_bytes"]
    for fig, key in ((led.allocated, "peak_allocated_bytes"), (led.reserved, "peak_reserved_bytes"),
                     (led.device, "device_used_bytes")):
        assert [fig.interval.low, fig.interval.high] == g["interval"][key]
    assert led.verdict == g["verdict"] and led.fits == g["fits"] and led.peak_phase == g["peak_phase"]
    assert [(c.id, c.bytes, list(c.phases), c.rule) for c in led.components] == \
        [(c["id"], c["bytes"], c["phases"], c["rule"]) for c in g["components"]]
    assert [(p.phase, p.allocated_bytes, p.reserved_bytes) for p in led.phases] == \
        [(p["phase"], p["allocated_bytes"], p["reserved_bytes"]) for p in doc["phases"]]
    assert led.model["params"] == doc["model"]["params"] and led.capacity_bytes == doc["gpu"]["capacity_bytes"]
    # What really happened: the run went out of memory, in the step after a checkpoint save.
    assert led.verdict == "does not fit" and led.peak_phase == "after_save"
    # The DeepSpeed file the command read is said on stderr and kept.
    assert any("deepspeed_z3_4x16g.json" in m for m in led.messages)


def test_train_agrees_with_the_build_tree():
    """The wheel's command, built by scikit-build-core, is the one `make` builds."""
    built = os.environ.get("MEMLEDGER_BUILD_BIN")
    if not built:
        pytest.skip("MEMLEDGER_BUILD_BIN not set")
    want = cli_json(built, "train", *SEED_ARGS)
    got = memledger.run("train", config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED)
    got.pop("_exit"), got.pop("_stderr")
    assert got == want


def test_fit_is_the_commands_json(command):
    doc = cli_json(command, "fit", *SEED_ARGS)
    res = memledger.fit(config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED)
    assert not res.base_fits and res.plans
    assert [(p.summary, p.device_used_bytes, [(c.where, c.key, c.old, c.new) for c in p.changes])
            for p in res.plans] == \
        [(p["summary"], p["device_used_bytes"], [(c["in"], c["key"], c["from"], c["to"]) for c in p["changes"]])
         for p in doc["plans"]]
    assert res.cheapest.device_used_bytes <= res.target_bytes


def test_diagnose_path_and_text_agree(command):
    doc = cli_json(command, "diagnose", "oom.log", *SEED_ARGS)
    by_path = memledger.diagnose("oom.log", config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED)
    with open(os.path.join(SEED, "oom.log"), encoding="utf-8") as f:
        by_text = memledger.diagnose(f.read(), config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED)
    assert by_path.found and by_text.found
    assert [f.cause for f in by_path.findings] == [f["cause"] for f in doc["findings"]]
    assert [f.cause for f in by_text.findings] == [f.cause for f in by_path.findings]
    ev = by_path.events[by_path.primary]
    assert ev["requested_bytes"] == doc["events"][doc["primary"]]["requested_bytes"]
    # The log's own numbers (oom.log line 14: "Tried to allocate 36.00 MiB. GPU 1 has a total
    # capacity of 15.98 GiB ... 14.81 GiB is allocated by PyTorch").
    assert ev["gpu"] == 1 and ev["requested_bytes"] == 36 * 2**20
    assert round(ev["total_bytes"] / 2**30, 2) == 15.98 and round(ev["allocated_bytes"] / 2**30, 2) == 14.81


def test_no_oom_is_an_answer_not_an_error():
    d = memledger.diagnose(text="step 1 loss 2.0\nstep 2 loss 1.9\n")
    assert not d.found and d.events == ()


def test_infer_is_the_commands_json(command):
    doc = cli_json(command, "infer", "qwen2.5-7b", "--gpu", "rtx4090", "--engine", "vllm")
    led = memledger.infer("qwen2.5-7b", gpu="rtx4090", engine="vllm")
    assert led.device.bytes == doc["per_gpu"]["device_used_bytes"]
    assert led.raw["serving"] == doc["serving"] and led.raw["kv_cache"] == doc["kv_cache"]


def test_errors_carry_the_commands_line(command):
    p = subprocess.run([command, "train", "--config", "nope.yaml", "--gpu", "h100"], cwd=SEED,
                       capture_output=True, text=True)
    assert p.returncode == 2
    with pytest.raises(memledger.MemLedgerError) as e:
        memledger.train(config="nope.yaml", gpu="h100", cwd=SEED)
    assert str(e.value) == p.stderr.strip().splitlines()[-1]
    assert e.value.returncode == 2 and "nope.yaml" in str(e.value)


def test_unknown_override_raises():
    with pytest.raises(memledger.MemLedgerError) as e:
        memledger.train(config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED, lora_rnak=8)
    assert "--lora-rnak" in str(e.value)
    with pytest.raises(ValueError):
        memledger.train(config="train.yaml", gpu="dcu-16g", cwd=SEED, eval=False)


def test_overrides_reach_the_command(command):
    doc = cli_json(command, "train", *SEED_ARGS, "--seq", "512", "--lora-rank", "16", "--set", "per_device_train_batch_size=2")
    led = memledger.train(config="train.yaml", gpu="dcu-16g", num_gpus=4, cwd=SEED, seq=512, lora_rank=16,
                          set={"per_device_train_batch_size": 2})
    assert led.settings["seq_len"] == 512 and led.settings["lora_rank"] == 16 and led.settings["micro_batch"] == 2
    assert led.device.bytes == doc["per_gpu"]["device_used_bytes"]


def test_zh_cn_catalog_ships(command):
    env = dict(os.environ, LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8", LANGUAGE="zh_CN")
    p = subprocess.run([command, "train", *SEED_ARGS], cwd=SEED, env=env, capture_output=True, text=True)
    if "结论" not in p.stdout:
        locales = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
        if "zh_cn.utf8" not in locales:
            pytest.skip("no zh_CN.UTF-8 locale on this machine")
    assert "结论" in p.stdout  # "verdict:" in the zh_CN catalog
