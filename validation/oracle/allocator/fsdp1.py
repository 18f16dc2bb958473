#!/usr/bin/env python3
"""fsdp1.py - rank 0's caching allocator through an FSDP1 run as Answer.AI's fsdp_qlora train.py
(commit 50efa1e) runs it: the model built on the CPU (rank 0; the others on meta), FSDP1 wrapping it
unit by unit with device_id and sync_module_states, then training steps; replayed through cca.py
with one pool per stream.

What each phase allocates on rank 0, in order, from the source (torch 2.2-2.13 FSDP1: the functions
named are in torch/distributed/fsdp/_init_utils.py, _flat_param.py, _runtime_utils.py; the
broadcast in torch/csrc/distributed/c10d/comm.cpp):

- load (train.py fsdp_main): LoRA - from_pretrained, then `model.to(dtype, device="cpu")` on rank 0:
  nothing on the GPU. QLoRA - each weight is quantized on the GPU (load_and_quantize) and its packed
  data moved to the CPU; the quant state (absmax, nested absmax) stays on the GPU; then
  `torch.cuda.empty_cache()`. PEFT adds the adapters on the CPU.
- FSDP init, one unit at a time in the auto-wrap policy's post-order (_recursive_wrap: children
  first): each LoRA adapter Linear (train.py get_wrapping_policy's lambda policy: a leaf whose weight
  requires grad), then the decoder layer, then the root (embedding, final norm, LM head). Per unit
  (_init_param_handle_from_module): `_move_module_to_device` copies the unit's CPU params to the GPU
  one by one; `_sync_module_params_and_buffers` -> `_broadcast_coalesced` in 250 MiB buckets
  (PARAM_BROADCAST_BUCKET_SIZE; a bucket closes once it reaches the size, compute_bucket_assignment
  _by_size), at most two in flight, a bucket of several tensors flattened into a new tensor
  (flatten_dense_tensors; one tensor is sent as is); FlatParamHandle.flatten_tensors: torch.cat of
  the unit's params (a new tensor of the unit's size, padded to a multiple of the world size);
  shard(): `_get_shard` clones this rank's chunk, then the unsharded storage is resized to 0;
  with CPU offload the shard moves to the CPU (flat_param_to); the original params are freed when
  `_init_param_handle_from_module` returns (its `managed_params` list held them).
- `torch.cuda.reset_peak_memory_stats()` before the loop (train.py): max_memory_reserved starts at
  the reserved bytes init left, since nothing empties the cache after it.
- a training step: the default stream's events are a real HF step's (trace.py at the run's model,
  method, adapters, batch and length) with the FSDP1 differences applied: parameters are not
  allocated by the step (they live in the units); each adapter gradient is reduce-scattered right
  after autograd makes it (`_post_backward_hook` -> `_reduce_grad`: the sharded gradient is a new
  tensor of 1/N on the post-backward stream, the unsharded one freed); the optimizer states are of
  the 1/N shards. The unshard stream (`_unshard`: `_alloc_padded_unsharded_flat_param` inside
  `state._device_handle.stream(unshard_stream)`) holds the gathered units: the root from its
  pre-forward to the end of backward (the root is not resharded after forward; frozen, its
  flat param has no post-backward hook, `_catch_all_reshard` frees it), each layer during its
  forward and, with BACKWARD_PRE prefetch and limit_all_gathers, the layer and the next one during
  backward; a layer unit with frozen params is resharded by `_post_backward_reshard_only_hook`.
  With CPU offload `pre_unshard` copies the shard to the GPU on the pre-unshard stream.

A freed broadcast bucket is held until the unit's init ends (ProcessGroupNCCL's recordStream of a
collective's tensors; --bucket-free immediate drops that). Not modelled: the rotary-embedding buffers some transformers versions keep per layer, parallel loading threads'
order (QLoRA load; emptied after it), kernel workspaces.

Usage: fsdp1.py --model llama-2-7b --method qlora --rank 64 --targets q_proj,... --world 2
       --trace T.json [--offload] [--streams one]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cca import Allocator  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MiB = 1 << 20
GiB = 1 << 30
BUCKET = 250 * MiB  # torch/distributed/fsdp/_init_utils.py PARAM_BROADCAST_BUCKET_SIZE
DEFAULT, UNSHARD, POST_BACKWARD, PRE_UNSHARD = 0, 1, 2, 3
ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def shapes(cfg):
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    a = cfg["num_attention_heads"]
    d = cfg.get("head_dim") or h // a
    kv = cfg.get("num_key_value_heads") or a
    return {"q_proj": (a * d, h), "k_proj": (kv * d, h), "v_proj": (kv * d, h), "o_proj": (h, a * d),
            "gate_proj": (i, h), "up_proj": (i, h), "down_proj": (h, i)}


def units(cfg, method, rank, targets):
    """FSDP units in wrap order, each a list of its params' bytes in module order (pure bf16)."""
    sh = shapes(cfg)
    h, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    out = []
    quant = {}
    for _ in range(L):
        for name in ATTN + MLP:
            if name in targets:
                o, i = sh[name]
                out.append(("lora", [2 * rank * i]))  # lora_A.default: (r, in)
                out.append(("lora", [2 * o * rank]))  # lora_B.default: (out, r)
        base = []
        for name in ATTN + MLP:
            o, i = sh[name]
            # Params4bit with quant_storage bf16: the packed 4-bit data, o*i/2 bytes
            base.append(o * i // 2 if method == "qlora" else 2 * o * i)
            if method == "qlora":
                quant.setdefault("numels", []).append(o * i)
        base += [2 * h, 2 * h]  # input_layernorm, post_attention_layernorm
        out.append(("layer", base))
    root = [2 * V * h, 2 * h]
    if not cfg.get("tie_word_embeddings"):
        root.append(2 * V * h)
    out.append(("root", root))
    return out, quant.get("numels", [])


class Run:
    def __init__(self, world, streams, bucket_free="nccl"):
        self.a = Allocator()
        self.world = world
        self.one = streams == "one"
        self.bucket_free = bucket_free

    def malloc(self, n, stream=DEFAULT):
        return self.a.malloc(n, DEFAULT if self.one else stream)

    def free(self, b):
        self.a.free_block(b)


def load_qlora(run, numels):
    """load_and_quantize on rank 0: bf16 weight on the GPU, bitsandbytes quantize_4bit (packed data,
    fp32 absmax per 64), double quant (uint8 absmax, fp32 nested absmax per 256), packed data to the
    CPU; the quant state stays. Then empty_cache."""
    live = []
    for n in numels:
        w = run.malloc(2 * n)
        packed = run.malloc(n // 2)
        absmax = run.malloc(4 * (n // 64))
        q_absmax = run.malloc(n // 64)
        nested = run.malloc(4 * (n // 64 // 256))
        run.free(absmax)
        run.free(w)
        run.free(packed)
        live += [q_absmax, nested]
    run.a.empty_cache()
    return live


def buckets(sizes):
    """compute_bucket_assignment_by_size with one limit: a bucket closes when it reaches BUCKET."""
    out, cur, tot = [], [], 0
    for s in sizes:
        cur.append(s)
        tot += s
        if tot >= BUCKET:
            out.append(cur)
            cur, tot = [], 0
    if cur:
        out.append(cur)
    return out


def init_unit(run, sizes, offload, held):
    """_init_param_handle_from_module on rank 0 (the module on the CPU): returns the shard block.
    `held`: the broadcast buckets the NCCL stream still holds (freed by the caller later)."""
    N = run.world
    for b in held:  # the previous unit's buckets: its H2D copies from pageable memory waited for them
        run.free(b)
    held.clear()
    orig = [run.malloc(s) for s in sizes]  # _move_module_to_device
    inflight = []  # _broadcast_coalesced: BroadcastWork, at most two in flight
    done = []
    for bk in buckets(sizes):
        if len(inflight) >= 2:
            done.append(inflight.pop(0))
        inflight.append(run.malloc(sum(bk)) if len(bk) > 1 else None)
    done += inflight
    done = [b for b in done if b is not None]
    if run.bucket_free == "immediate":
        for b in done:
            run.free(b)
    else:
        # ProcessGroupNCCL records the NCCL stream on a collective's tensors (recordStream, unless
        # TORCH_NCCL_AVOID_RECORD_STREAMS): the freed bucket waits for the broadcast's event, which
        # the host has not waited for when it allocates the flat param and the shard
        held.extend(done)
    total = sum(sizes)
    padded = -(-total // (2 * N)) * 2 * N  # bf16 elements padded to a multiple of N
    flat = run.malloc(padded)  # flatten_tensors: torch.cat
    shard = run.malloc(padded // N)  # _get_shard: chunk.clone() (padding already in the cat here)
    run.free(flat)  # shard(): flat_param._typed_storage()._resize_(0)
    if offload:
        run.free(shard)  # flat_param_to(cpu)
        shard = None
    for b in orig:  # managed_params dropped
        run.free(b)
    return shard


def step(run, ev, marks, first, unit_list, offload, states):
    """One training step: the trace's default-stream events under FSDP1, the gathered units on the
    unshard stream, the sharded gradients on the post-backward stream."""
    N = run.world
    i_bwd, i_opt, i_zero = marks
    # classify: gradients (made in backward, freed at zero_grad), optimizer states (made in the
    # first step's optimizer step and never freed)
    born, freed_at = {}, {}
    for k, (sgn, s, nb) in enumerate(ev):
        if sgn > 0:
            born[s] = k
        else:
            freed_at[s] = k
    grads = {s for s, k in born.items() if i_bwd <= k < i_opt and freed_at.get(s, 1 << 60) >= i_zero}
    sts = {s for s, k in born.items() if i_opt <= k < i_zero and s not in freed_at} if first else set()
    layers = [u for u in unit_list if u[0] == "layer"]
    root = [u for u in unit_list if u[0] == "root"][0]
    L = len(layers)

    def unit_bytes(u):
        return -(-sum(u[1]) // (2 * N)) * 2 * N

    def gather(u):
        pre = run.malloc(unit_bytes(u) // N, PRE_UNSHARD) if offload else None
        g = run.malloc(unit_bytes(u), UNSHARD)
        if pre is not None:
            run.free(pre)
        return g

    # the trace's forward runs the layers in order: the gathers are spread over its events (the
    # unshard stream's pool is apart from the default stream's, so only their own order matters)
    fwd_len = max(1, i_bwd)
    bwd_len = max(1, i_opt - i_bwd)
    live = {}
    shard_grads = {}
    g_root = gather(root)
    gathered = {}  # layer index -> block
    nf, nb_ = 0, 0  # layers entered in forward / in backward
    for k, (sgn, s, nb) in enumerate(ev):
        if k < i_bwd:
            while nf < L and k >= nf * fwd_len // L:
                if nf - 1 in gathered:  # the previous layer resharded after its forward
                    run.free(gathered.pop(nf - 1))
                gathered[nf] = gather(layers[nf])
                nf += 1
        elif k < i_opt:
            while nb_ < L and k - i_bwd >= nb_ * bwd_len // L:
                l = L - 1 - nb_
                for j in [j for j in gathered if j > l]:  # resharded after its backward
                    run.free(gathered.pop(j))
                if l not in gathered:
                    gathered[l] = gather(layers[l])
                if l - 1 >= 0 and l - 1 not in gathered:  # BACKWARD_PRE prefetch
                    gathered[l - 1] = gather(layers[l - 1])
                nb_ += 1
        else:
            for j in list(gathered):
                run.free(gathered.pop(j))
            if g_root is not None:  # _catch_all_reshard at the end of backward
                run.free(g_root)
                g_root = None
        if sgn > 0:
            if s in sts:
                states.append(run.malloc(max(1, nb // N)))
                continue
            b = run.malloc(nb)
            if s in grads:
                shard_grads[s] = run.malloc(max(1, nb // N), POST_BACKWARD)
                run.free(b)
                continue
            live[s] = b
        else:
            if s in shard_grads:
                run.free(shard_grads.pop(s))
            elif s in live:
                run.free(live.pop(s))
    for g in list(gathered.values()) + ([g_root] if g_root is not None else []):
        run.free(g)
    for b in live.values():
        run.free(b)
    for b in shard_grads.values():
        run.free(b)


def plain(a):
    tr = json.load(open(a.trace))
    al, live = Allocator(), {}
    for sgn, s, nb in tr["load"]:
        if sgn > 0:
            live[s] = al.malloc(nb)
        elif s in live:
            al.free_block(live.pop(s))
    base = al.allocated
    al.reset_peak()
    steps = tr["steps"]
    for st in [steps[0]] + [steps[-1]] * (a.steps - 1):
        for sgn, s, nb in st["events"]:
            if sgn > 0:
                live[s] = al.malloc(nb)
            elif s in live:
                al.free_block(live.pop(s))
    print(json.dumps({"id": a.id, "plain": True, "batch": tr["case"]["batch"], "seq": steps[0]["seq"],
                      "load_gib": round(base / GiB, 3), "peak_allocated_gib": round(al.peak_allocated / GiB, 3),
                      "peak_reserved_gib": round(al.peak_reserved / GiB, 3),
                      "step_allocated_gib": round((al.peak_allocated - base) / GiB, 3),
                      "reserved_over_allocated_gib": round((al.peak_reserved - al.peak_allocated) / GiB, 3)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--method", choices=("lora", "qlora"), required=True)
    ap.add_argument("--rank", type=int, default=64)
    ap.add_argument("--targets", default="q_proj,k_proj,v_proj,gate_proj,up_proj,down_proj")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--offload", action="store_true")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--streams", choices=("per-stream", "one"), default="per-stream")
    ap.add_argument("--bucket-free", choices=("nccl", "immediate"), default="nccl",
                    help="a broadcast bucket freed after the NCCL stream's event (recordStream) or at once")
    ap.add_argument("--no-init", action="store_true", help="units placed sharded, no init sequence")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--id", default="")
    ap.add_argument("--plain", action="store_true",
                    help="the trace alone on one GPU (its load, then the steps), no FSDP: the step's own fragmentation")
    a = ap.parse_args()
    if a.plain:
        plain(a)
        return
    cfg = json.load(open(os.path.join(ROOT, "data", "models", a.model + ".json")))
    cfg = cfg.get("text_config", cfg)
    ulist, numels = units(cfg, a.method, a.rank, a.targets.split(","))
    tr = json.load(open(a.trace))
    run = Run(a.world, a.streams, a.bucket_free)
    live = load_qlora(run, numels) if a.method == "qlora" and not a.no_init else []
    if a.method == "qlora" and a.no_init:
        live = [run.malloc(n // 64) for n in numels] + [run.malloc(4 * (n // 64 // 256)) for n in numels]
    shards = []
    held = []
    for kind, sizes in ulist:
        if a.no_init:
            tot = -(-sum(sizes) // (2 * a.world)) * 2 * a.world
            shards.append(None if a.offload else run.malloc(tot // a.world))
        else:
            shards.append(init_unit(run, sizes, a.offload, held))
    for b in held:
        run.free(b)
    init_reserved, init_peak = run.a.reserved, run.a.peak_reserved
    init_allocated = run.a.allocated
    run.a.reset_peak()  # train.py: torch.cuda.reset_peak_memory_stats before the loop
    states = []
    steps = tr["steps"]
    seq = [steps[0]] + [steps[-1]] * (a.steps - 1)
    for n, st in enumerate(seq):
        step(run, st["events"], st["marks"], n == 0, ulist, a.offload, states)
    r = {"id": a.id, "model": a.model, "method": a.method, "world": a.world, "offload": a.offload,
         "streams": a.streams, "bucket_free": a.bucket_free, "init": not a.no_init, "batch": tr["case"]["batch"], "seq": steps[0]["seq"],
         "init_allocated_gib": round(init_allocated / GiB, 3), "init_reserved_gib": round(init_reserved / GiB, 3),
         "init_peak_reserved_gib": round(init_peak / GiB, 3),
         "peak_allocated_gib": round(run.a.peak_allocated / GiB, 3),
         "peak_reserved_gib": round(run.a.peak_reserved / GiB, 3),
         "stream_reserved_gib": {str(k): round(v / GiB, 3) for k, v in sorted(run.a.stream_reserved.items())}}
    print(json.dumps(r))


if __name__ == "__main__":
    main()
