"""Tests of memledger_hook on CPU, with the allocator's figures injected (no GPU needed).

Run: python3 -m unittest python/test_memledger_hook.py (needs torch; ctest skips it otherwise).
MEMLEDGER=path/to/memledger also checks that `memledger compare` reads the file written.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memledger_hook as mh  # noqa: E402


class FakeStats:
    """What torch.cuda would report, set by the test."""

    def __init__(self):
        self.allocated = 0
        self.reserved = 0
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.free, self.total = 60 << 30, 80 << 30
        self.resets = 0

    def synchronize(self):
        pass

    def memory_allocated(self):
        return self.allocated

    def memory_reserved(self):
        return self.reserved

    def max_memory_allocated(self):
        return self.peak_allocated

    def max_memory_reserved(self):
        return self.peak_reserved

    def reset_peak_memory_stats(self):
        self.resets += 1
        self.peak_allocated = self.allocated
        self.peak_reserved = self.reserved

    def mem_get_info(self):
        return (self.free, self.total)

    def device_name(self):
        return "Fake GPU"


class Tied(torch.nn.Module):
    """An output head that shares its embedding's storage: two Parameters, one storage (as a
    tie made through .data, or a checkpoint loaded with shared tensors, gives)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(32, 16)
        self.mid = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 32, bias=False)
        self.head.weight = torch.nn.Parameter(self.emb.weight.data)
        self.register_buffer("scale", torch.ones(16))

    def forward(self, x):
        return self.head(self.mid(self.emb(x)) * self.scale)


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class HookTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "run.jsonl")
        torch.manual_seed(0)

    def tearDown(self):
        self.dir.cleanup()

    def test_tensor_bytes_dedups_shared_storage(self):
        a = torch.zeros(10, 10)
        views = [a, a[0], a.view(100), a.t()]
        self.assertEqual(mh.tensor_bytes(views, torch.device("cpu")), 400)
        self.assertEqual(mh.tensor_bytes([torch.zeros(3, dtype=torch.bfloat16)], torch.device("cpu")), 6)
        self.assertEqual(mh.tensor_bytes([a], torch.device("cuda")), 0)  # other device

    def test_plain_loop(self):
        model = Tied()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        stats = FakeStats()
        n_unique = 32 * 16 + 16 * 16 + 16  # the shared storage counted once
        n_params = n_unique + 32 * 16
        with mh.MemLedger(self.path, model=model, optimizer=opt, device="cpu", stats=stats) as ml:
            for i in range(3):
                with ml.step():
                    stats.allocated = 10000
                    stats.peak_allocated = 50000 + i
                    stats.peak_reserved = 65536
                    loss = model(torch.tensor([1, 2, 3])).sum()
                    loss.backward()
                    if not hasattr(opt, "register_step_pre_hook"):
                        ml.after_backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            with ml.phase("eval"):
                stats.peak_allocated = 70000
        recs = read(self.path)
        self.assertEqual(recs[0]["type"], "meta")
        self.assertEqual(recs[0]["device_name"], "Fake GPU")
        self.assertEqual(recs[0]["total_bytes"], 80 << 30)
        statics = [r for r in recs if r["type"] == "static"]
        steps = [r for r in recs if r["type"] == "step"]
        self.assertEqual(len(steps), 3)
        st = statics[-1]
        self.assertEqual(st["weights_bytes"], 4 * n_unique)
        self.assertEqual(st["weights_by_dtype"], {"float32": 4 * n_unique})
        self.assertEqual(st["params"], n_params)
        self.assertEqual(st["buffers_bytes"], 16 * 4)
        self.assertEqual(st["gradients_bytes"], 4 * n_params)  # each Parameter has its own .grad
        # Adam: exp_avg + exp_avg_sq per parameter, plus a 'step' scalar tensor per parameter.
        self.assertGreaterEqual(st["optimizer_bytes"], 2 * 4 * n_params)
        self.assertLessEqual(st["optimizer_bytes"], 2 * 4 * n_params + 4 * 8)
        last = steps[-1]
        self.assertEqual(last["peak_allocated_bytes"], 50002)
        self.assertEqual(last["static_bytes"], st["weights_bytes"] + st["gradients_bytes"] + st["optimizer_bytes"])
        self.assertEqual(last["activation_peak_bytes"], 50002 - last["static_bytes"])
        self.assertEqual(last["device_used_bytes"], 20 << 30)
        phases = [r for r in recs if r["type"] == "phase"]
        self.assertEqual(phases[-1]["phase"], "eval")
        self.assertEqual(phases[-1]["peak_allocated_bytes"], 70000)
        for line in open(self.path, encoding="utf-8"):
            self.assertNotIn(" ", line.split('"device_name"')[0])  # compact one-line records

    def test_bf16_and_frozen(self):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 4))
        model[0].to(torch.bfloat16)
        for p in model[0].parameters():
            p.requires_grad_(False)
        ml = mh.MemLedger(self.path, model=model, device="cpu", stats=FakeStats())
        st = ml.static()
        self.assertEqual(st["weights_by_dtype"], {"bfloat16": (64 + 8) * 2, "float32": (32 + 4) * 4})
        self.assertEqual(st["trainable_weights_bytes"], (32 + 4) * 4)
        self.assertEqual(st["trainable_params"], 36)

    def test_every_and_rank_path(self):
        stats = FakeStats()
        with mh.MemLedger(os.path.join(self.dir.name, "r{rank}.jsonl"), model=torch.nn.Linear(2, 2), device="cpu",
                          stats=stats, every=2) as ml:
            for _ in range(5):
                with ml.step():
                    pass
        recs = read(os.path.join(self.dir.name, "r0.jsonl"))
        self.assertEqual([r["step"] for r in recs if r["type"] == "step"], [1, 3, 5])

    def test_callback(self):
        """The TrainerCallback's event methods, driven as Trainer drives them."""

        class State:
            global_step = 0

        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        stats = FakeStats()
        cb = mh.MemLedgerCallback(self.path, device="cpu", stats=stats)
        state = State()
        stats.peak_allocated = 123
        cb.on_train_begin(None, state, None, model=model, optimizer=opt)
        for i in range(2):
            state.global_step = i + 1
            cb.on_step_begin(None, state, None, model=model, optimizer=opt)
            model(torch.ones(1, 4)).sum().backward()
            cb.on_pre_optimizer_step(None, state, None, model=model, optimizer=opt)
            opt.step()
            opt.zero_grad(set_to_none=True)
            stats.peak_allocated = 999
            cb.on_step_end(None, state, None, model=model, optimizer=opt)
        cb.on_evaluate(None, state, None)
        cb.on_save(None, state, None)
        cb.on_train_end(None, state, None)
        recs = read(self.path)
        kinds = [(r["type"], r.get("phase")) for r in recs]
        self.assertEqual(kinds[0], ("meta", None))
        self.assertEqual(kinds[1], ("phase", "load"))
        self.assertEqual(recs[1]["peak_allocated_bytes"], 123)
        self.assertIn(("phase", "eval"), kinds)
        self.assertIn(("phase", "save"), kinds)
        st = [r for r in recs if r["type"] == "static"][-1]
        self.assertEqual(st["gradients_bytes"], 20 * 4)
        self.assertEqual(st["optimizer_bytes"], 20 * 4)  # SGD momentum buffers
        self.assertEqual([r["step"] for r in recs if r["type"] == "step"], [1, 2])

    def test_compare_reads_it(self):
        exe = os.environ.get("MEMLEDGER")
        if not exe:
            self.skipTest("MEMLEDGER not set")
        stats = FakeStats()
        model = torch.nn.Linear(16, 16)
        opt = torch.optim.AdamW(model.parameters())
        with mh.MemLedger(self.path, model=model, optimizer=opt, device="cpu", stats=stats) as ml:
            with ml.step():
                stats.peak_allocated = 1 << 20
                model(torch.ones(2, 16)).sum().backward()
                ml.after_backward()
                opt.step()
        out = subprocess.run([exe, "compare", self.path, "llama-3.2-1b", "--gpu", "16G", "--json"],
                             capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        doc = json.loads(out.stdout)
        figs = {f["id"]: f for f in doc["figures"]}
        self.assertEqual(figs["weights"]["measured_bytes"], (256 + 16) * 4)
        self.assertEqual(figs["peak_allocated"]["measured_bytes"], 1 << 20)
        self.assertEqual(doc["measured"]["steps"], 1)


if __name__ == "__main__":
    unittest.main()
