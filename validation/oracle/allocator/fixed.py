#!/usr/bin/env python3
"""fixed.py - the caching allocator's reserve at FIXED shapes: one trace.py trace (one length),
replayed through cca.py as the load, the first step (it creates the optimizer states) and two
steady steps at the same length. Reports peak reserved, peak allocated and candidate bases for
the excess (reserved - allocated at the peaks):

  persistent   bytes live before the first step (weights, adapters, buffers)
  states       bytes live after the first step that were not there before (optimizer states)
  step         peak allocated - bytes live at the start of a steady step (the step's transient)
  big          the step's allocations >= 10 MiB (kMinLargeAlloc: a segment of their own, rounded
               to 2 MiB; get_allocation_size), their sum at the step's peak and over the step
  mid          the step's allocations of 1-10 MiB (served from 20 MiB segments: kLargeBuffer)
  largest      the largest single allocation of the step

Output: one JSON line per trace (append to --out), one table line per trace on stderr.
Usage: fixed.py --out replay-fixed.jsonl T1.json T2.json ...
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cca import Allocator, K_MIN_LARGE_ALLOC, K_SMALL_SIZE, round_size  # noqa: E402

GiB = float(1 << 30)


def replay(d):
    al = Allocator()
    live = {}
    for kind, ser, nb in d["load"]:
        if kind > 0:
            live[("L", ser)] = al.malloc(nb)
        else:
            al.free_block(live.pop(("L", ser)))
    persistent = al.allocated
    first, steady = d["steps"][0], d["steps"][1]
    stats = {}
    for i, st in enumerate((first, steady, steady)):
        start = al.allocated
        al.reset_peak() if i == 2 else None
        peak_here = start
        for kind, ser, nb in st["events"]:
            key = (i, ser)
            if kind > 0:
                live[key] = al.malloc(nb)
            else:
                al.free_block(live.pop(key))
            peak_here = max(peak_here, al.allocated)
        if i == 0:
            stats["states"] = al.allocated - persistent
        if i == 2:
            stats["step"] = peak_here - start
            stats["start"] = start
    sizes = [round_size(nb) for kind, _, nb in steady["events"] if kind > 0]
    stats["big"] = sum(z for z in sizes if z >= K_MIN_LARGE_ALLOC)
    stats["mid"] = sum(z for z in sizes if K_SMALL_SIZE < z < K_MIN_LARGE_ALLOC)
    stats["small"] = sum(z for z in sizes if z <= K_SMALL_SIZE)
    stats["largest"] = max(sizes)
    stats["n_big"] = sum(1 for z in sizes if z >= K_MIN_LARGE_ALLOC)
    return al, persistent, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    out = open(a.out, "a", encoding="utf-8") if a.out else sys.stdout
    for p in a.traces:
        d = json.load(open(p, encoding="utf-8"))
        al, persistent, st = replay(d)
        row = {"case": d["case"], "seq": d["steps"][1]["seq"], "persistent": persistent,
               "peak_allocated": al.peak_allocated, "peak_reserved": al.peak_reserved, **st}
        out.write(json.dumps(row) + "\n")
        ex = al.peak_reserved - al.peak_allocated
        c = d["case"]
        print(f"{c['model']:14s} {c['method']:5s} ck={c['ckpt']:3s} L={c['layers']:2d} b={c['batch']} "
              f"s={row['seq']:5d} pers={persistent / GiB:6.2f} alloc={al.peak_allocated / GiB:6.2f} "
              f"res={al.peak_reserved / GiB:6.2f} excess={ex / GiB:5.2f} step={st['step'] / GiB:5.2f} "
              f"x/step={ex / max(1, st['step']):.2f} x/alloc={ex / al.peak_allocated:.3f}", file=sys.stderr)
        out.flush()


if __name__ == "__main__":
    main()
