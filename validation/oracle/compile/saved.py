#!/usr/bin/env python3
"""saved.py - the bytes a decoder layer saves for backward, eager vs torch.compile, on the CPU.

For each case (a config.json of data/models at its real width, one and two layer periods) the
model is built by the main oracle's own code (validation/oracle/oracle.py: load_config, build; imported
read-only), one training step (forward, loss, backward) runs eager and one with every decoder layer
compiled as torchtune compiles it (torchtune training/_compile.py compile_model: each
TransformerSelfAttentionLayer gets module.compile(), default inductor backend). After the forward the
autograd graph is walked from the loss: every tensor a node keeps for backward (the _saved_* fields of
built-in nodes, saved_tensors of autograd Functions such as AOTAutograd's CompiledFunction) is
counted once per storage; parameter and input storages are left out. Two depths give one period's
bytes. The compiled layer's own saved tensors are listed with shape and dtype (README.md explains
each). The peak of the step is read from the profiler's memory events (the CPU allocator reports every
allocation, inductor's buffers included).

Usage: saved.py [--cases cases.json] [--only ID,...] --out results.json
"""
import argparse
import gc
import json
import os
import platform
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oracle  # noqa: E402  (read-only use: load_config, build)

SEED = 0


def decoder_layers(model):
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def walk_saved(root, skip):
    """Unique storages kept by the autograd graph under root: {key: (nbytes, dtype, shape, node)}."""
    seen_nodes, out, stack = set(), {}, [root]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen_nodes:
            continue
        seen_nodes.add(fn)
        tensors = []
        name = fn.name()
        if hasattr(fn, "saved_tensors"):  # autograd.Function (BackwardCFunction)
            try:
                tensors += [t for t in fn.saved_tensors if isinstance(t, torch.Tensor)]
            except RuntimeError:
                pass
        for attr in dir(fn):
            if attr.startswith("_saved_"):
                try:
                    v = getattr(fn, attr)
                except RuntimeError:
                    continue
                if isinstance(v, torch.Tensor):
                    tensors.append(v)
                elif isinstance(v, (tuple, list)):
                    tensors += [x for x in v if isinstance(x, torch.Tensor)]
        for t in tensors:
            st = t.untyped_storage()
            key = st.data_ptr()
            if key in skip or st.nbytes() == 0:
                continue
            if key not in out:
                out[key] = (st.nbytes(), str(t.dtype), list(t.shape), name)
        for nxt, _ in fn.next_functions:
            stack.append(nxt)
    return out


def compiled_saved(root, skip):
    """The saved tensors of every CompiledFunctionBackward node (one per compiled graph: a layer without
    graph breaks is one graph), in the order the walk meets them."""
    seen, stack, graphs = set(), [root], []
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if "CompiledFunction" in fn.name():
            rows = []
            for t in fn.saved_tensors:
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    rows.append({"shape": list(t.shape), "dtype": str(t.dtype), "storage_bytes": st.nbytes(),
                                 "param_or_input": st.data_ptr() in skip})
            graphs.append(rows)
        stack += [n for n, _ in fn.next_functions]
    return graphs


def peak_of(prof):
    """The step's peak over the bytes live when the profiler started: the allocator's own events (one per
    allocation and free, inductor's buffers included) carry its running total; op events are not summed
    (they hold their children's bytes)."""
    from torch._C._profiler import _EventType

    def walk(nodes):
        for n in nodes:
            yield n
            yield from walk(n.children)

    ev = [n for n in walk(prof.profiler.kineto_results.experimental_event_tree()) if n.typed[0] == _EventType.Allocation]
    if not ev:
        return 0
    ev.sort(key=lambda n: n.start_time_ns)
    base = ev[0].typed[1].total_allocated - ev[0].typed[1].alloc_size
    return max(n.typed[1].total_allocated for n in ev) - base


def run(case, depth, compiled):
    cfg_path = os.path.join(oracle.ROOT, "data", "models", case["model"] + ".json")
    cfg, period, n = oracle.load_config(cfg_path, depth, case.get("vocab"))
    model = oracle.build(case, cfg)
    if case.get("adapter_dtype") == "bf16":  # torchtune's LoRALinear: adapters in the model's dtype
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.data = p.data.to(torch.bfloat16)
    if compiled:
        torch._dynamo.reset()
        for layer in decoder_layers(model):
            layer.compile()  # torchtune compile_model; default backend inductor
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    skip |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    g = torch.Generator().manual_seed(1)
    vocab = cfg.get_text_config().vocab_size
    ids = torch.randint(0, vocab, (case["batch"], case["seq"]), generator=g)
    skip.add(ids.untyped_storage().data_ptr())
    t0 = time.time()
    if compiled:  # a first step compiles forward and backward; the second is measured
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        del out
        model.zero_grad(set_to_none=True)
        gc.collect()
    compile_s = time.time() - t0
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        out = model(input_ids=ids, labels=ids)
        loss = out.loss
        del out
        saved = walk_saved(loss.grad_fn, skip)
        rows = compiled_saved(loss.grad_fn, skip) if compiled else None
        loss.backward()
        del loss
    peak = peak_of(prof)
    model.zero_grad(set_to_none=True)
    res = {"layers": n, "period": period, "saved_bytes": sum(v[0] for v in saved.values()),
           "saved_tensors": len(saved), "step_peak_over_start_bytes": peak, "compile_seconds": round(compile_s, 1)}
    if rows is not None:
        res["compiled_graphs"] = len(rows)
        res["compiled_saved"] = rows
    else:
        by = {}
        for nb, dt, shape, node in saved.values():
            k = f"{node} {dt}"
            by[k] = by.get(k, 0) + nb
        res["eager_saved_by_node"] = by
    del model
    gc.collect()
    return res


def versions():
    import transformers
    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    for mod in ("peft",):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            pass
    import subprocess
    try:
        v["g++"] = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except OSError:
        pass
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    ap.add_argument("--only")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "1")))
    torch.manual_seed(SEED)
    cases = json.load(open(a.cases, encoding="utf-8"))
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c["id"] in keep]
    results = json.load(open(a.out)) if os.path.exists(a.out) else {"versions": versions(), "seed": SEED, "cases": {}}
    for case in cases:
        if case["id"] in results["cases"]:
            continue
        t0 = time.time()
        r = {"case": case}
        for mode in ("eager", "compiled"):
            d = {str(depth): run(case, depth, mode == "compiled") for depth in case.get("depth_periods", (1, 2))}
            one, two = d["1"], d["2"]
            tokens = case["batch"] * case["seq"]
            per = (two["saved_bytes"] - one["saved_bytes"]) / (two["layers"] - one["layers"])
            r[mode] = {"depths": d, "per_layer_bytes": per, "per_layer_bytes_per_token": per / tokens}
        r["seconds"] = round(time.time() - t0, 1)
        results["cases"][case["id"]] = r
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, sort_keys=True)
            f.write("\n")
        print(case["id"], "eager", r["eager"]["per_layer_bytes_per_token"], "compiled",
              r["compiled"]["per_layer_bytes_per_token"], "s", r["seconds"], flush=True)


if __name__ == "__main__":
    main()
