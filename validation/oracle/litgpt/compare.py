#!/usr/bin/env python3
"""compare.py - memledger's LitGPT ledger against the LitGPT oracle, per phase and per term.

For each committed LitGPT oracle case (cases.jsonl here) and each depth it writes the reduced
config.json (the catalog model with the oracle's layer count, ../compare.py reduced_config), runs
`memledger train CONFIG --framework litgpt ...` with the case's settings and compares the allocated
figure per phase, and per category, with the oracle's live bytes at that phase's peak. The
CUDA-only cuBLAS workspace is left out (../README.md, "CPU and CUDA").

Usage: compare.py [--memledger build/memledger] [--cases FILE]
Standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))
from compare import NOT_COMPARABLE, NOT_COMPARABLE_IN, PHASES, TERM, reduced_config  # noqa: E402  ../compare.py

GROUPS = (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"), ("projection", "o_proj"),
          ("mlp", "gate_proj,up_proj,down_proj"), ("head", "lm_head"))


def ledger_args(case):
    a = ["--framework", "litgpt", "--method", case["method"], "--dtype", "pure_bf16", "--grad-ckpt", "off",
         "--batch", str(case["batch"]), "--seq", str(case["seq"]), "--optim", "adamw_torch", "--gpu", "a100-80g"]
    if case["method"] == "qlora":  # finetune/lora.py --quantize bnb.nf4[-dq]: BitsandbytesPrecision
        a += ["--quant-bits", "4", "--set", f"double_quantization={str(case['quantize'].endswith('-dq')).lower()}",
              "--set", f"bitsandbytes_version={'0.42.0' if case.get('bnb_keeps_input') else '0.49.0'}"]
    if case["method"] in ("lora", "qlora"):
        g = case.get("lora", {})
        t = ",".join(n for k, n in GROUPS if g.get(k, k in ("query", "value")))
        if all(g.get(k) for k in ("query", "key", "value", "projection", "mlp")):
            t = "all" + (",lm_head" if g.get("head") else "")  # fused q/k/v models (Phi-3) have no q_proj
        a += ["--lora-rank", str(case.get("lora_r", 8)), "--lora-target", t,
              "--set", f"lora_dropout={case.get('lora_dropout', 0.05)}"]
    return a


def ledger(memledger, config, case):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "config.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(config, f)
        r = subprocess.run([memledger, "train", p] + ledger_args(case) + ["--json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"compare.py: memledger failed on {case['id']}: {r.stderr.strip()}")
    out = {}
    for ph in PHASES:
        tot, terms = 0, {}
        for c in json.loads(r.stdout)["per_gpu"]["components"]:
            if c["figure"] != "allocated" or ph not in c["phases"] or c["id"] in NOT_COMPARABLE:
                continue
            if case["method"] == "qlora" and (c["id"], ph) in NOT_COMPARABLE_IN:
                continue
            if case["method"] == "qlora" and c["id"] == "optimizer_states":
                continue  # finetune/lora.py: bnb PagedAdamW (managed memory); the oracle runs torch AdamW
            tot += c["bytes"]
            cat = TERM.get(c["id"], "other")
            terms[cat] = terms.get(cat, 0) + c["bytes"]
        out[ph] = {"bytes": tot, "terms": terms}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memledger", default=os.path.join(ROOT, "build", "memledger"))
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.jsonl"))
    a = ap.parse_args()
    mib = 2.0**20
    print("| case | layers | phase | oracle MiB | ledger MiB | error % | largest gaps (ledger - oracle, MiB) |")
    print("|---|---:|---|---:|---:|---:|---|")
    with open(a.cases, encoding="utf-8") as f:
        results = [json.loads(x) for x in f if x.strip()]
    for res in results:
        case = res["case"]
        if case["method"] not in ("full", "lora", "qlora"):  # memledger has no LitGPT adapter method
            print(f"| {case['id']} | - | - | - | - | - | {case['method']}: not modelled by memledger |")
            continue
        for depth, d in res["depths"].items():
            lg = ledger(a.memledger, reduced_config(case["catalog"], d["dims"]["n_layer"]), case)
            for ph in PHASES:
                o = d["phases"].get(ph)
                if not o:
                    continue
                oc, lt = dict(o["by_category"]), lg[ph]["terms"]
                peak = o["peak_bytes"]
                if case["method"] == "qlora":  # optimizer states left out of both (ledger_args)
                    peak -= oc.pop("optimizer_states", 0)
                gaps = sorted(((lt.get(k, 0) - oc.get(k, 0)) / mib, k) for k in set(oc) | set(lt))
                gaps = [f"{k} {g:+.0f}" for g, k in sorted(gaps, key=lambda x: -abs(x[0]))[:3] if abs(g) >= 1]
                e = (lg[ph]["bytes"] - peak) / peak * 100
                print(f"| {case['id']} | {depth} | {ph} | {peak / mib:.0f} | {lg[ph]['bytes'] / mib:.0f} "
                      f"| {e:+.1f} | {', '.join(gaps)} |")


if __name__ == "__main__":
    main()
