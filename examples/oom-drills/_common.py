"""Shared bits of the OOM drills: the device, a small transformer-ish model, the hook."""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def args(doc, **defaults):
    p = argparse.ArgumentParser(description=doc)
    for k, v in defaults.items():
        p.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    p.add_argument("--hook", default="", help="also write memledger_hook JSONL here")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("this drill needs a CUDA or ROCm GPU")
    return a


class Block(torch.nn.Module):
    def __init__(self, h):
        super().__init__()
        self.norm = torch.nn.LayerNorm(h)
        self.up = torch.nn.Linear(h, 4 * h)
        self.down = torch.nn.Linear(4 * h, h)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Model(torch.nn.Module):
    """Embedding, N MLP blocks, vocabulary head: activations scale with batch x seq x hidden."""

    def __init__(self, vocab=32000, hidden=2048, layers=8):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, hidden)
        self.blocks = torch.nn.ModuleList(Block(hidden) for _ in range(layers))
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def batch(b, s, vocab=32000):
    return torch.randint(0, vocab, (b, s), device="cuda")


def loss_of(model, ids):
    logits = model(ids)
    return torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), ids.view(-1))


def ledger(a, model, opt):
    """A MemLedger when --hook is given, else a do-nothing stand-in."""
    if a.hook:
        from memledger_hook import MemLedger
        return MemLedger(a.hook, model=model, optimizer=opt).open()

    class Null:
        def step(self, *x, **k):
            import contextlib
            return contextlib.nullcontext()

        phase = step

        def close(self):
            pass

    return Null()
