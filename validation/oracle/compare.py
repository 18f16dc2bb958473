#!/usr/bin/env python3
"""compare.py - memledger's training ledger against the oracle, per phase and per term.

For every oracle case (cases.jsonl) and each reduced depth it writes the reduced config.json the
oracle built, runs `memledger train CONFIG --framework hf ... --json` and compares the ledger's
allocated figure per phase (and its terms, grouped as the oracle's categories) with the oracle's
live bytes at that phase's peak. The CUDA-only cuBLAS workspace is taken off the ledger's figure
(README.md, "CPU and CUDA"). Writes validation/ORACLE.md (or --out) and prints the summary.

Usage: compare.py [--memledger build/memledger] [--cases FILE]... [--label NAME]... [--out FILE]
Standard library only: it runs with any python3.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PHASES = ("generate", "forward", "loss", "backward", "optimizer_step")
# ledger component -> oracle category (the terms that the CPU run holds as CUDA does)
TERM = {
    "weights_frozen": "parameters", "weights_trainable": "parameters", "quant_state": "parameters",
    "master_weights": "parameters", "gradients": "gradients", "optimizer_states": "optimizer_states",
    "autocast_weight_cache": "autocast_cache", "activations": "activations",
    "attention_scores": "activations", "attention_mask": "activations", "logits_loss": "logits_loss",
    "backward_working_set": "temporaries", "optimizer_step_transient": "temporaries",
    "qlora_dequant": "temporaries", "ref_model_weights": "parameters", "ref_forward_logits": "logits_loss",
}
NOT_COMPARABLE = {"cublas_workspace"}  # CUDA-only (README.md)
CATS = ("parameters", "gradients", "optimizer_states", "autocast_cache", "activations", "logits_loss", "temporaries")
# bitsandbytes' forward dequantizes a 4-bit weight inside one op (gemm_4bit: on CUDA its own kernel or
# dequantize + F.linear by shape and card, backends/cuda/ops.py _gemm_4bit_use_custom_cuda; on the CPU
# inside the op, unseen); its backward dequantizes in Python (MatMul4Bit.backward), seen on both
NOT_COMPARABLE_IN = {("qlora_dequant", "forward"), ("qlora_dequant", "loss")}


def ledger_args(case, dims=None):
    """memledger's flags for the case. A TRL stage runs under --framework trl with its stage; its
    sequence is the batch the trainer's own collator made (prompt + completion + EOS)."""
    stage = case.get("stage", "sft")
    seq = dims["input_shape"][1] if dims and "input_shape" in dims else case["seq"]
    a = ["--framework", "hf" if stage == "sft" else "trl", "--method", case["method"], "--dtype", case["dtype"],
         "--attn", case["attn"], "--grad-ckpt", case["grad_ckpt"], "--batch", str(case["batch"]), "--seq", str(seq),
         "--optim", case["optim"], "--gpu", "a100-80g", "--set", "fixed_length=true",
         "--transformers-version", ".".join(case.get("transformers", "4.57").split(".")[:2])]
    if stage != "sft":
        a += ["--set", f"stage={stage}"]
        if case.get("trl"):  # the TRL release the oracle ran (its fused LM head from 1.15: docs/ledger.md)
            a += ["--trl-version", case["trl"]]
    if stage in ("dpo", "kto"):  # TRL labels the completion only: completion + EOS = seq - seq // 2 (oracle.py)
        a += ["--set", f"max_completion_length={case['seq'] - case['seq'] // 2}"]
    if stage == "grpo":  # the prompt is cutoff_len; the completions are max_completion_length (oracle.py)
        p_len = case["seq"] // 2
        a[a.index("--seq") + 1] = str(p_len)
        a += ["--set", f"max_completion_length={case['seq'] - p_len}",
              "--set", f"num_generations={case.get('num_generations', 2)}", "--set", f"beta={case.get('beta', 0.0)}"]
    if case["method"] in ("lora", "qlora"):
        a += ["--lora-rank", str(case["lora_rank"]), "--lora-target", case["lora_target"]]
    if case["method"] == "qlora":
        a += ["--quant-bits", "4", "--set", f"kbit_prepare={case.get('kbit_prepare', 'none')}"]
    return a


def reduced_config(model, layers, vocab=None):
    """data/models/MODEL.json with the oracle's layer count and vocabulary (oracle.py load_config)."""
    with open(os.path.join(ROOT, "data", "models", model + ".json"), encoding="utf-8") as f:
        cfg = json.load(f)
    text = cfg.get("text_config", cfg)
    if vocab:
        from oracle import vocab_override  # the oracle's own narrowing, so both sides read one config
        vocab_override(text, vocab)
    key = "n_layer" if "n_layer" in text and "num_hidden_layers" not in text else "num_hidden_layers"
    text[key] = layers
    if "layer_types" in text:
        text["layer_types"] = text["layer_types"][:layers]
    return cfg


def ledger(memledger, config, case, dims=None):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "config.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(config, f)
        r = subprocess.run([memledger, "train", p] + ledger_args(case, dims) + ["--json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return None, r.stderr.strip()
    d = json.loads(r.stdout)
    phases = {}
    for ph in PHASES:
        tot, terms = 0, {}
        for c in d["per_gpu"]["components"]:
            if c["figure"] != "allocated" or ph not in c["phases"] or c["id"] in NOT_COMPARABLE:
                continue
            if (c["id"], ph) in NOT_COMPARABLE_IN:
                continue
            tot += c["bytes"]
            cat = TERM.get(c["id"], "other")
            terms[cat] = terms.get(cat, 0) + c["bytes"]
        phases[ph] = {"bytes": tot, "terms": terms}
    return phases, None


def err(est, ref):
    return (est - ref) / ref if ref else 0.0


def path_of(case):
    m = case["method"]
    if m == "qlora":
        m += "/kbit-" + case.get("kbit_prepare", "none")
    return f'{case.get("stage", "sft")}/{m}'


def group_of(case):
    g = f'{case["method"]}/{case["dtype"]}/{case["attn"]}/ckpt-{case["grad_ckpt"]}'
    return g if case.get("stage", "sft") == "sft" else f'{case["stage"]}/{g}'


def q(xs, f):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, int(round(f * (len(xs) - 1)))))
    return xs[k]


def stats(rows):
    a = [abs(x) for x in rows]
    return len(rows), statistics.median(a) * 100, q(a, 0.9) * 100, statistics.median(rows) * 100


def load_cases(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(memledger, cases):
    rows = []
    for res in cases:
        case = res["case"]
        if "error" in res:  # the framework refused the case on the CPU
            rows.append({"case": case["id"], "path": path_of(case), "error": "oracle: " + res["error"]})
            continue
        for depth, dres in res["depths"].items():
            config = reduced_config(case["model"], dres["dims"]["layers"], case.get("vocab"))
            lg, e = ledger(memledger, config, dict(case, transformers=res["versions"]["transformers"],
                                                   trl=res["versions"].get("trl")), dres["dims"])
            if lg is None:
                rows.append({"case": case["id"], "path": path_of(case), "error": e})
                continue
            o = dres["phases"]
            peak_o = max(o[ph]["peak_bytes"] for ph in o)
            peak_l = max(lg[ph]["bytes"] for ph in PHASES)
            row = {"id": case["id"], "group": group_of(case), "path": path_of(case), "model": case["model"], "depth": depth,
                   "tf": res["versions"]["transformers"], "peak": err(peak_l, peak_o), "phase": {}, "term": {}}
            for ph in PHASES:
                if ph in o:
                    row["phase"][ph] = err(lg[ph]["bytes"], o[ph]["peak_bytes"])
            # per term at the oracle's peak phase: bytes the ledger puts there vs the oracle's
            pk = max(o, key=lambda ph: o[ph]["peak_bytes"])
            oc = o[pk]["by_category"]
            for cat in ("parameters", "gradients", "optimizer_states", "autocast_cache", "activations",
                        "logits_loss", "temporaries"):
                lb = lg[pk]["terms"].get(cat, 0)
                row["term"][cat] = (lb - oc.get(cat, 0)) / peak_o
            row["peak_phase"] = pk
            # every term in every phase (share of the oracle's peak): where a term is off, and when
            row["term_phase"] = {}
            for ph in PHASES:
                if ph not in o:
                    continue
                d = {cat: (lg[ph]["terms"].get(cat, 0) - o[ph]["by_category"].get(cat, 0)) / peak_o for cat in CATS}
                if ph == "backward":  # the ledger's backward working set holds the saved activations still live
                    d["activations+temporaries"] = d.pop("activations") + d.pop("temporaries")
                row["term_phase"][ph] = d
            row["oracle_peak"], row["ledger_peak"] = peak_o, peak_l
            rows.append(row)
        # per-layer slope: one period's bytes, the difference of the two depths at the peak
        mine = [r for r in rows if r.get("id") == case["id"] and "error" not in r]
        if len(mine) == 2:
            d1, d2 = sorted(mine, key=lambda r: r["depth"])
            so, sl = d2["oracle_peak"] - d1["oracle_peak"], d2["ledger_peak"] - d1["ledger_peak"]
            if so > 0:
                d2["slope"] = (sl - so) / so
    return rows


def table(rows, key):
    groups = {}
    for r in rows:
        if "error" in r:
            continue
        groups.setdefault(key(r), []).append(r["peak"])
    lines = ["| group | n | median abs | p90 abs | median signed |", "|---|---|---|---|---|"]
    for g in sorted(groups):
        n, med, p90, sgn = stats(groups[g])
        lines.append(f"| {g} | {n} | {med:.1f} % | {p90:.1f} % | {sgn:+.1f} % |")
    return lines


def term_misses(ok, limit=0.02):
    """Per path, phase and term: the rows where the ledger's term misses the oracle's by more than `limit`
    of the oracle's peak (the findings of validation/oracle/findings.md explain each)."""
    cells, totals = {}, {}
    for r in ok:
        for ph, terms in r.get("term_phase", {}).items():
            totals.setdefault((r["path"], ph), []).append(r["phase"][ph])
            for cat, x in terms.items():
                cells.setdefault((r["path"], ph, cat), []).append(x)
    lines = [f"### Terms off by more than {limit * 100:.0f} % of the peak (path, phase, term)", "",
             "A term listed while its phase's total is right is the same bytes booked under another term (the",
             "ledger's backward working set, say, holding what the oracle calls gradients); a phase total off",
             "with it is bytes missing or extra (findings below).", "",
             "| path | phase | term | rows | rows off | median signed | p90 abs | phase total, median signed |",
             "|---|---|---|---|---|---|---|---|"]
    n0 = len(lines)
    for (path, ph, cat), xs in sorted(cells.items(), key=lambda kv: (kv[0][0], PHASES.index(kv[0][1]), kv[0][2])):
        off = sum(abs(x) > limit for x in xs)
        if off * 10 < len(xs):  # fewer than one row in ten: not a term the ledger misses
            continue
        n, med, p90, sgn = stats(xs)
        tot = statistics.median(totals[(path, ph)]) * 100
        lines.append(f"| {path} | {ph} | {cat} | {n} | {off} | {sgn:+.1f} % | {p90:.1f} % | {tot:+.1f} % |")
    if len(lines) == n0:
        lines.append("| (none) | | | | | | | |")
    return lines + [""]


def report(sets, out, counts=()):
    lines = ["# The training ledger against the CPU oracle", "",
             "Generated by `validation/oracle/compare.py` (do not edit): memledger's allocated figure at the",
             "oracle's reduced depth against the live tensor bytes of real training steps on the CPU",
             "(validation/oracle/README.md says how, and which terms are not comparable). Error =",
             "(ledger - oracle) / oracle; per term, (ledger - oracle) / the oracle's peak, at the oracle's peak phase.",
             ""]
    if counts:
        n = sum(c[1] for c in counts)
        lines += [f"{n} cases ({sum(c[2] for c in counts)} of them refused by the framework on the CPU), "
                  "each at two depths (rows = cases x depths): "
                  + "; ".join(f"{label.split(':')[0]} {k}" for label, k, _ in counts) + ".", ""]
    for label, rows in sets:
        ok = [r for r in rows if "error" not in r]
        bad = [r for r in rows if "error" in r]
        lines += [f"## {label}", ""]
        if not ok:
            lines += ["no rows", ""]
            continue
        n, med, p90, sgn = stats([r["peak"] for r in ok])
        lines += [f"Allocated peak, {n} rows (cases x depths): median {med:.1f} %, p90 {p90:.1f} %, "
                  f"signed median {sgn:+.1f} %." + (f" {len(bad)} rows the ledger refused." if bad else ""), ""]
        sl = [r["slope"] for r in ok if "slope" in r]
        if sl:
            n, med, p90, sgn = stats(sl)
            lines += [f"Per layer period (the peak at two periods minus one), {n} cases: median {med:.1f} %, "
                      f"p90 {p90:.1f} %, signed median {sgn:+.1f} %.", ""]
        lines += ["### By path (stage / method)", ""] + table(ok, lambda r: r["path"]) + [""]
        lines += ["### By group (method / dtype / attention / checkpointing)", ""] + table(ok, lambda r: r["group"]) + [""]
        lines += ["### By method", ""] + table(ok, lambda r: r["group"].split("/")[0]) + [""]
        lines += ["### By model", ""] + table(ok, lambda r: r["model"]) + [""]
        lines += ["### By transformers version", ""] + table(ok, lambda r: r["tf"]) + [""]
        lines += ["### By phase", "", "| phase | n | median abs | p90 abs | median signed |", "|---|---|---|---|---|"]
        for ph in PHASES:
            xs = [r["phase"][ph] for r in ok if ph in r["phase"]]
            if xs:
                n, med, p90, sgn = stats(xs)
                lines.append(f"| {ph} | {n} | {med:.1f} % | {p90:.1f} % | {sgn:+.1f} % |")
        lines += ["", "### By term, at the oracle's peak phase (share of the peak)", "",
                  "| term | median abs | p90 abs | median signed |", "|---|---|---|---|"]
        for cat in ("parameters", "gradients", "optimizer_states", "autocast_cache", "activations", "logits_loss",
                    "temporaries"):
            xs = [r["term"][cat] for r in ok]
            n, med, p90, sgn = stats(xs)
            lines.append(f"| {cat} | {med:.1f} % | {p90:.1f} % | {sgn:+.1f} % |")
        lines.append("")
        lines += term_misses(ok)
        if bad:
            lines += ["### Not compared", "", "| path | rows | why |", "|---|---|---|"]
            why = {}
            for r in bad:
                key = (r.get("path", "?"), r["error"].splitlines()[0][:160].replace("|", "/"))
                why[key] = why.get(key, 0) + 1
            for (path, msg), n in sorted(why.items()):
                lines.append(f"| {path} | {n} | {msg} |")
            lines.append("")
    findings = os.path.join(HERE, "findings.md")
    if os.path.exists(findings):
        with open(findings, encoding="utf-8") as f:
            lines += [f.read().rstrip("\n"), ""]
    text = "\n".join(lines) + "\n"
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memledger", default=os.path.join(ROOT, "build", "memledger"))
    ap.add_argument("--cases", action="append", default=[])
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--out", default=os.path.join(ROOT, "validation", "ORACLE.md"))
    ap.add_argument("--rows", help="also write every row as JSON lines here")
    a = ap.parse_args()
    if not a.cases:
        a.cases = [os.path.join(HERE, "cases.jsonl")]
    sets = []
    allrows = []
    counts = []
    for i, paths in enumerate(a.cases):  # FILE or FILE,FILE,...: one set
        cases = []
        for path in paths.split(","):
            if not os.path.exists(path):
                print(f"compare.py: {path}: no such file (not drawn yet), left out", file=sys.stderr)
                continue
            cases += load_cases(path)
        if not cases:
            continue
        rows = compare(a.memledger, cases)
        allrows += rows
        label = a.label[i] if i < len(a.label) else os.path.basename(paths)
        sets.append((label, rows))
        counts.append((label, len(cases), sum("error" in c for c in cases)))
    if a.rows:
        with open(a.rows, "w", encoding="utf-8") as f:
            for r in allrows:
                f.write(json.dumps(r) + "\n")
    sys.stdout.write(report(sets, a.out, counts))


if __name__ == "__main__":
    main()
