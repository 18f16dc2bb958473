#!/usr/bin/env python3
"""analyze.py - replay.py's rows in units of the record-length loss working set.

For each row: the excess reserve over a fixed-length run, (peak_reserved - peak_allocated) minus
the fixed run's own (reserved - allocated) at the same record, in units of the loss working set at
the record (`--loss-gib`: the ledger's logits_loss term at smax, scaled by record/smax: it is linear
in s); and the records' lengths recomputed from the draw (replay.draw is sequential, so a prefix of a
run is the run of that many steps): S = the sum over the records before the last of r_j / record.
The slope excess / S is the share of a record's loss working set that stays stranded.

Usage: analyze.py ROWS.jsonl --loss-gib CASE@SMAX=GIB ... [--set NAME=dist,dist ...]
  (CASE: method-ckpt-layers-loss[-bB], e.g. lora-on-32-qwen1@2048=1.739; at batch B the loss
  working set is B times the batch-1 one: lora-on-8-qwen1-b4@2048=6.956)
"""
import argparse
import json
import os
import random
import statistics
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import draw_steps  # noqa: E402

GiB = float(1 << 30)


def key(c):
    b = c.get("batch", 1)
    return f"{c['method']}-{c['ckpt']}-{c['layers']}-{c['loss']}" + (f"-b{b}" if b > 1 else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--loss-gib", action="append", default=[], help="CASE@SMAX=GiB: loss working set at smax")
    ap.add_argument("--set", dest="sets", action="append", default=[],
                    help="NAME=dist,dist: percentiles of excess/L over these distributions and every seed")
    a = ap.parse_args()
    unit = {}
    for x in a.loss_gib:
        k, v = x.split("=")
        unit[k] = float(v)
    groups = {}
    for line in open(a.rows, encoding="utf-8"):
        r = json.loads(line)
        if r["dist"] in ("increasing", "decreasing", "fixed"):
            continue
        k = f"{key(r['case'])}@{r['smax']}"
        if k not in unit:
            continue
        rng = random.Random(r["seed"] * 1000003 + zlib.crc32(r["dist"].encode()) % 1000)
        lengths = draw_steps(r["dist"], r["steps"], r["smax"], rng, r["case"].get("batch", 1))
        recs = [s for i, s in enumerate(lengths) if s > max(lengths[:i], default=0)]
        S = sum(recs[:-1]) / recs[-1]
        L = unit[k] * r["record"] / r["smax"]
        ex = ((r["peak_reserved"] - r["peak_allocated"]) - (r["fixed_reserved"] - r["fixed_allocated"])) / GiB
        groups.setdefault((k, r["dist"], r["steps"]), []).append((ex / L, S, ex))
    if a.sets:
        for spec in a.sets:
            name, dists = spec.split("=")
            for n in sorted({k[2] for k in groups}):
                v = sorted(x[0] for (k, d, m), xs in groups.items() if m == n and d in dists.split(",") for x in xs)
                if len(v) < 3:
                    continue
                q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
                print(f"set {name:10s} steps {n:5d} n={len(v):3d}  excess/L p10 {q(0.1):4.2f}  median {statistics.median(v):4.2f}"
                      f"  p90 {q(0.9):4.2f}")
        return
    print(f"{'config@smax':28s} {'dist':9s} {'steps':>5s}  excess/L (each seed)        S (each seed)        slope")
    for (k, d, n), v in sorted(groups.items()):
        sl = [e / s for e, s, _ in v if s > 0]
        print(f"{k:28s} {d:9s} {n:5d}  {' '.join(f'{e:5.2f}' for e, _, _ in v):28s} "
              f"{' '.join(f'{s:5.2f}' for _, s, _ in v):20s} {statistics.median(sl) if sl else float('nan'):5.2f}")


if __name__ == "__main__":
    main()
