#!/usr/bin/env python3
"""check_case.py - one oracle case end to end against its committed result (CI).

    check_case.py CASE_RESULT.json [--memledger build/memledger]

Reruns the case that CASE_RESULT.json records (oracle.run_case) and holds every phase's peak and
every category to the committed bytes within TOLERANCE (README.md: the bytes are set by tensor
shapes, so the same pinned versions give the same numbers; the tolerance only absorbs a CPU kernel
that returns a differently sized output on another instruction set). With --memledger it also
runs the comparison for that case and prints the ledger's error per phase.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 0.01


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("--memledger")
    a = ap.parse_args()
    with open(a.result, encoding="utf-8") as f:
        want = json.load(f)
    sys.path.insert(0, HERE)
    import oracle

    got = oracle.run_case(want["case"])
    bad = 0
    for depth, wd in want["depths"].items():
        for ph, wp in wd["phases"].items():
            gp = got["depths"][depth]["phases"].get(ph)
            pairs = [("peak_bytes", wp["peak_bytes"], gp["peak_bytes"] if gp else 0)]
            pairs += [(c, b, gp["by_category"].get(c, 0) if gp else 0) for c, b in wp["by_category"].items()]
            for name, w, g in pairs:
                lim = TOLERANCE * wp["peak_bytes"]
                ok = abs(g - w) <= lim
                bad += not ok
                if not ok or name == "peak_bytes":
                    print(f"{'ok  ' if ok else 'FAIL'} depth {depth} {ph:15} {name:17} want {w} got {g}")
    if a.memledger:
        rows = os.path.join(os.environ.get("TMPDIR", "/tmp"), "oracle-ci-rows.jsonl")
        cases = os.path.join(os.environ.get("TMPDIR", "/tmp"), "oracle-ci-case.jsonl")
        with open(cases, "w", encoding="utf-8") as f:
            f.write(json.dumps(got) + "\n")
        subprocess.run([sys.executable, os.path.join(HERE, "compare.py"), "--memledger", a.memledger, "--cases", cases,
                        "--out", os.devnull, "--rows", rows], check=True, stdout=subprocess.DEVNULL)
        with open(rows, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                print("ledger vs oracle, depth", r.get("depth"), "peak", f'{100 * r.get("peak", 0):+.2f} %')
    n = sum(1 + len(p["by_category"]) for d in want["depths"].values() for p in d["phases"].values())
    print(f"{n - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
