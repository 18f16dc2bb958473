#!/usr/bin/env python3
"""loss.py - torchtune's chunked cross-entropy, eager vs compiled: the bytes saved for backward and the
peak of the loss segment per logit element (b x s x V), on the CPU.

The segment is what torchtune's recipes run after the decoder (torchtune modules/loss/
ce_chunked_output_loss.py CEWithChunkedOutputLoss; training/_compile.py compile_loss compiles its
compute_cross_entropy): the final hidden states split into num_output_chunks (8) chunks along the
sequence, the bf16 output projection of each chunk (TransformerDecoder.forward returns that list
when num_output_chunks > 0), and per chunk F.cross_entropy(logits.float(), labels, reduction="sum",
ignore_index=-100), summed and divided by the label count. The cross-entropy call is written here
after that source (torchtune is not installed in the oracle venv); under compile it is wrapped in
torch.compile as compile_loss does. The head is frozen (LoRA) or trains (full): its grad (V x h) is
reported apart.

Usage: loss.py --out loss.json
"""
import argparse
import gc
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from saved import peak_of, versions, walk_saved  # noqa: E402

SEED = 0
CHUNKS = 8


def compute_cross_entropy(logits, labels):
    return F.cross_entropy(logits.float(), labels, ignore_index=-100, reduction="sum")


def segment(b, s, h, V, compiled, head_trains):
    g = torch.Generator().manual_seed(SEED)
    W = (torch.randn(V, h, generator=g) * 0.02).to(torch.bfloat16).requires_grad_(head_trains)
    x = (torch.randn(b, s, h, generator=g)).to(torch.bfloat16).requires_grad_(True)
    labels = torch.randint(0, V, (b, s), generator=g)
    ce = torch.compile(compute_cross_entropy) if compiled else compute_cross_entropy
    skip = {W.untyped_storage().data_ptr(), x.untyped_storage().data_ptr(), labels.untyped_storage().data_ptr()}

    def step(measure):
        logits = [F.linear(c, W) for c in x.chunk(CHUNKS, dim=1)]
        lab = [t.reshape(-1) for t in labels.chunk(CHUNKS, dim=1)]
        total = sum(ce(lg.reshape(-1, V), lb) for lg, lb in zip(logits, lab))
        loss = total / labels.numel()
        del logits
        saved = walk_saved(loss.grad_fn, skip) if measure else None
        with torch.profiler.record_function("loss.backward"):
            loss.backward()
        x.grad = None
        W.grad = None
        return saved

    if compiled:
        step(False)
        gc.collect()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        saved = step(True)
    peak = peak_of(prof)
    fwd, bwd = segment_peaks(prof)
    bsV = b * s * V
    by = {}
    for nb, dt, shape, node in saved.values():
        by[f"{node} {dt}"] = by.get(f"{node} {dt}", 0) + nb
    return {"saved_bytes": sum(v[0] for v in saved.values()), "saved_per_logit": sum(v[0] for v in saved.values()) / bsV,
            "saved_by_node": by, "peak_over_start_bytes": peak,
            "head_grad_bytes": 2 * V * h if head_trains else 0, "x_grad_bytes": 2 * b * s * h,
            "peak_per_logit_less_grads": (peak - (2 * V * h if head_trains else 0) - 2 * b * s * h) / bsV,
            # without the CPU matmul's own copies (below): the loss segment as CUDA runs it
            "forward_peak_per_logit": fwd / bsV,
            "backward_peak_per_logit_less_grads": (bwd - (2 * V * h if head_trains else 0) - 2 * b * s * h) / bsV}


MATMUL_OPS = ("aten::linear", "aten::matmul", "aten::mm", "aten::bmm")
MATMUL_BACKWARD = ("MmBackward", "BmmBackward")


def segment_peaks(prof):
    """The forward's and the backward's peak over the bytes live at the start, less the CPU matmul's
    transient copies: on the CPU a bf16 matmul with the head copies its weight operand (V x h x 4 B,
    allocated and freed inside the matmul op, visible as aten::clone under aten::linear / BmmBackward0),
    which cuBLAS does not; with h = b x s that copy is 4 B per logit and set the segment's peak
    (peak_per_logit_less_grads). A block allocated and freed within one matmul op is left out here;
    the matmul's output (the logits, the input's grad) outlives the op and stays in."""
    from torch._C._profiler import _EventType

    def walk(nodes, anc):
        for n in nodes:
            yield n, anc
            yield from walk(n.children, anc + (n,))

    ev = [(n, anc) for n, anc in walk(prof.profiler.kineto_results.experimental_event_tree(), ())
          if n.typed[0] == _EventType.Allocation]
    ev.sort(key=lambda t: t[0].start_time_ns)
    if not ev:
        return 0, 0
    bwd_ops = [n for n, _ in walk(prof.profiler.kineto_results.experimental_event_tree(), ()) if n.name == "loss.backward"]
    b0 = bwd_ops[0].start_time_ns if bwd_ops else None
    frees = {}
    for n, _ in ev:
        if n.typed[1].alloc_size < 0:
            frees.setdefault(n.typed[1].ptr, []).append(n.start_time_ns)
    excluded = set()
    for n, anc in ev:
        t = n.typed[1]
        if t.alloc_size <= 0:
            continue
        op = next((a for a in reversed(anc) if a.name in MATMUL_OPS or any(m in a.name for m in MATMUL_BACKWARD)), None)
        if op is None:
            continue
        end = op.end_time_ns
        if any(n.start_time_ns < f <= end for f in frees.get(t.ptr, [])):
            excluded.add(id(n))
            excluded.add((t.ptr, next(f for f in frees[t.ptr] if n.start_time_ns < f <= end)))
    live = 0
    fwd = bwd = 0
    for n, _ in ev:
        t = n.typed[1]
        if id(n) in excluded or (t.alloc_size < 0 and (t.ptr, n.start_time_ns) in excluded):
            continue
        live += t.alloc_size
        if b0 is not None and n.start_time_ns >= b0:
            bwd = max(bwd, live)
        else:
            fwd = max(fwd, live)
    return fwd, bwd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "1")))
    # the bytes per logit do not depend on the hidden width: a narrow one keeps the CPU time small
    case = {"batch": 2, "seq": 128, "hidden": 256, "vocab": 128256, "chunks": CHUNKS}
    res = {"versions": versions(), "seed": SEED, "case": case, "runs": {}}
    for head in (False, True):
        for mode in ("eager", "compiled"):
            key = f"{mode}-head_{'trains' if head else 'frozen'}"
            res["runs"][key] = segment(case["batch"], case["seq"], case["hidden"], case["vocab"], mode == "compiled", head)
            print(key, res["runs"][key]["saved_per_logit"], res["runs"][key]["peak_per_logit_less_grads"], flush=True)
            torch._dynamo.reset()
            gc.collect()
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
