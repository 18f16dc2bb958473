#!/usr/bin/env python3
"""replay.py - real step traces (trace.py) replayed through the caching-allocator model (cca.py) over
sequences of steps whose lengths vary: peak reserved vs peak allocated.

A configuration's traces at two lengths give every step at any length: trace.py's event sequence
is the same at every length (the same ops in the same order) and each storage's size is affine in
the sequence length (a + b s) with flash attention; `fit` checks both on a third trace and refuses
otherwise. So a run of N steps with lengths drawn from a distribution is the load events, the first
step at its length (it creates the optimizer states), then steady steps, each synthesized exactly.

Distributions of the per-sample length (`smax` = the run's max_length); a step of batch b (the
traces' own batch) is padded to the longest of b consecutive draws (DataCollatorForSeq2Seq /
torchtune padded_collate pad to the batch's longest sample):
  fixed       every step at smax (packing or padding to max_length): the baseline
  uniform     U[64, smax]
  longtail    a fine-tuning set's shape: lognormal, median smax/8, sigma 1.0, samples over smax
              deleted (ms-swift's truncation_strategy 'delete') - few steps near smax
  mid         lognormal, median smax/3, sigma 0.6, over smax deleted
  longtail-trunc, mid-trunc  the same, longer samples truncated to smax (a mass at smax)
  increasing  U[64, smax] sorted ascending (a length-grouped or curriculum order): every step a record
  decreasing  the same sorted descending (LitGPT's longest-first): the first step is the record

Output: one JSON line per (config, distribution, seed, prefix of k steps): peak reserved, peak
allocated, the longest length so far (the record) and how many records, and the fixed-length
baseline's peaks at that record (two steps at it).

Usage: replay.py --traces A.json,B.json[,C.json] --dist uniform,longtail --steps 1000 --seeds 5
"""
import argparse
import json
import math
import os
import random
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cca import Allocator  # noqa: E402

GiB = float(1 << 30)


class Config:
    """The traces of one configuration: load events, and per step kind (0 first, 1 steady) the event
    kinds, serial offsets and affine sizes."""

    def __init__(self, paths):
        ds = [json.load(open(p, encoding="utf-8")) for p in paths]
        ds.sort(key=lambda d: d["steps"][0]["seq"])
        self.case = ds[0]["case"]
        self.load = ds[0]["load"]
        self.steps = []
        lo, hi = ds[0], ds[-1]
        for k in (0, 1):
            ea, eb = lo["steps"][k]["events"], hi["steps"][k]["events"]
            sa, sb = lo["steps"][k]["seq"], hi["steps"][k]["seq"]
            if len(ea) != len(eb):
                raise SystemExit("replay: the traces differ in their events; not affine in the length")
            kinds, rel, a, b = [], [], [], []
            base_a, base_b = ea[0][1], eb[0][1]
            for x, y in zip(ea, eb):
                if x[0] != y[0] or x[1] - base_a != y[1] - base_b:
                    raise SystemExit("replay: the traces differ in their order")
                slope = (y[2] - x[2]) / (sb - sa)
                kinds.append(x[0])
                rel.append(x[1] - base_a)
                a.append(x[2] - slope * sa)
                b.append(slope)
            self.steps.append((kinds, rel, a, b))
        for d in ds[1:-1]:  # a third length: the fit must give its sizes exactly
            for k in (0, 1):
                s = d["steps"][k]["seq"]
                for (kd, _, nb), a_, b_ in zip(d["steps"][k]["events"], self.steps[k][2], self.steps[k][3]):
                    if abs(a_ + b_ * s - nb) > 0.5:
                        raise SystemExit(f"replay: size not affine in the length at s={s}")

    def sizes(self, k, s):
        _, _, a, b = self.steps[k]
        return [int(round(x + y * s)) for x, y in zip(a, b)]


def run(cfg, lengths, alloc=None):
    """Replay the load, then one step per length; returns the allocator and, after each step, the
    reserved bytes and the peak allocated so far (nothing is released, so reserved only grows)."""
    al = alloc or Allocator()
    live = {}
    for kind, ser, nb in cfg.load:
        if kind > 0:
            live[("L", ser)] = al.malloc(nb)
        else:
            al.free_block(live.pop(("L", ser)))
    curve = []
    for i, s in enumerate(lengths):
        k = 0 if i == 0 else 1
        kinds, rel, _, _ = cfg.steps[k]
        sizes = cfg.sizes(k, s)
        for kind, r, nb in zip(kinds, rel, sizes):
            key = (i, r)
            if kind > 0:
                live[key] = al.malloc(nb)
            else:
                al.free_block(live.pop(key))
        curve.append((al.reserved, al.peak_allocated))
    return al, curve


def draw(dist, n, smax, rng):
    def lognorm(median, sigma, trunc=False):
        out = []
        while len(out) < n:
            x = int(math.exp(rng.gauss(math.log(median), sigma)))
            if x > smax and trunc:  # truncated to max_length (LLaMA-Factory cutoff_len, TRL, torchtune)
                x = smax
            if 16 <= x <= smax:  # else longer samples are deleted (ms-swift truncation_strategy 'delete')
                out.append(x)
        return out

    if dist == "fixed":
        return [smax] * n
    if dist == "uniform":
        return [rng.randint(64, smax) for _ in range(n)]
    if dist == "longtail":
        return lognorm(smax / 8, 1.0)
    if dist == "mid":
        return lognorm(smax / 3, 0.6)
    if dist == "longtail-trunc":
        return lognorm(smax / 8, 1.0, True)
    if dist == "mid-trunc":
        return lognorm(smax / 3, 0.6, True)
    if dist == "increasing":
        return sorted(rng.randint(64, smax) for _ in range(n))
    if dist == "decreasing":
        return sorted((rng.randint(64, smax) for _ in range(n)), reverse=True)
    raise SystemExit(f"replay: unknown distribution {dist}")


def draw_steps(dist, n, smax, rng, batch=1):
    """The padded length of each of n steps of `batch` samples: the longest of b consecutive draws
    (sorted orders sort the steps). Sequential, so a prefix is the run of that many steps."""
    if batch <= 1:
        return draw(dist, n, smax, rng)
    base = "uniform" if dist in ("increasing", "decreasing") else dist
    xs = draw(base, n * batch, smax, rng)
    out = [max(xs[i * batch:(i + 1) * batch]) for i in range(n)]
    if dist == "increasing":
        out.sort()
    elif dist == "decreasing":
        out.sort(reverse=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", required=True, help="comma-separated trace files of one configuration")
    ap.add_argument("--smax", type=int, default=2048)
    ap.add_argument("--dist", default="uniform,longtail,mid,increasing,decreasing")
    ap.add_argument("--steps", type=int, default=1000, help="steps per run; every prefix of 1, 3, 10, ... steps is reported")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", help="append JSON lines here (default stdout)")
    a = ap.parse_args()
    cfg = Config(a.traces.split(","))
    base = {}

    def fixed(s):  # the same run at one length: peak allocated and reserved of two steps at s
        if s not in base:
            al, _ = run(cfg, [s, s])
            base[s] = (al.peak_allocated, al.peak_reserved)
        return base[s]

    persistent = sum(nb for kind, _, nb in cfg.load if kind > 0)
    out = open(a.out, "a", encoding="utf-8") if a.out else sys.stdout
    n = a.steps
    for dist in a.dist.split(","):
        for seed in range(a.seeds):
            rng = random.Random(seed * 1000003 + zlib.crc32(dist.encode()) % 1000)
            lengths = draw_steps(dist, n, a.smax, rng, cfg.case.get("batch", 1))
            al, curve = run(cfg, lengths)
            for k in (1, 3, 10, 30, 100, 300, 1000, 3000):
                if k > n:
                    break
                pre = lengths[:k]
                rec = max(pre)
                f_alloc, f_res = fixed(rec)
                records = sum(1 for i, s in enumerate(pre) if s > max(pre[:i], default=0))
                reserved, peak_alloc = curve[k - 1]
                row = {"case": cfg.case, "smax": a.smax, "dist": dist, "steps": k, "seed": seed, "record": rec,
                       "records": records, "persistent": persistent, "peak_allocated": peak_alloc,
                       "peak_reserved": reserved, "fixed_allocated": f_alloc, "fixed_reserved": f_res}
                out.write(json.dumps(row) + "\n")
                print(f"{dist:10s} n={k:5d} seed={seed} rec={rec:5d} records={records:2d} "
                      f"alloc={peak_alloc / GiB:7.2f} res={reserved / GiB:7.2f} fixed res={f_res / GiB:7.2f} "
                      f"excess/transient={(reserved - f_res) / max(1, f_alloc - persistent):.2f}", file=sys.stderr)
            out.flush()


if __name__ == "__main__":
    main()
