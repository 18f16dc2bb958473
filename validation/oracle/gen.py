#!/usr/bin/env python3
"""gen.py - draw oracle cases at random and run them: one JSON line per case.

    gen.py --seed S --n N --out FILE [--only-lines] [--shard I/N] [--stages dpo,kto,grpo]

Draws N cases with Python's random.Random(S) over the models of data/models that transformers
builds without remote code (dense text models; a per-step cost cap keeps each case to seconds on
two CPU cores), methods (full, lora), dtypes, attention, gradient checkpointing, optimizers,
batch x sequence, LoRA ranks and targets; runs each (oracle.run_case, depths of one and two layer
periods) and appends one line: the case, its draw (seed, index), the package versions and the
bytes. Resumes: cases already in FILE are skipped. `--only-lines` prints the drawn cases only.
"""

import argparse
import json
import os
import random
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# model -> the attention projections' names as PEFT matches them (the narrow LoRA target)
MODELS = {
    "gpt2": "c_attn", "qwen2.5-0.5b": "q_proj,v_proj", "qwen2-0.5b": "q_proj,v_proj",
    "qwen3-0.6b": "q_proj,k_proj,v_proj,o_proj", "qwen2.5-1.5b": "q_proj,v_proj",
    "tinyllama-1.1b-3t": "q_proj,v_proj", "llama-3.2-1b": "q_proj,v_proj", "opt-1.3b": "q_proj,v_proj",
    "phi-1_5": "q_proj,k_proj,v_proj,dense", "bloom-560m": "query_key_value", "gemma-3-1b-it": "q_proj,v_proj",
    "phi-3-mini-4k-instruct": "qkv_proj", "llama-2-7b": "q_proj,v_proj", "mistral-7b-v0.1": "q_proj,v_proj",
    "pythia-6.9b": "query_key_value", "qwen3-1.7b": "q_proj,v_proj", "gpt2-xl": "c_attn",
}
STEP_FLOP_CAP = 25e9  # 6 x tokens x params touched, at two periods
FULL_PARAM_CAP = 260e6  # full fine-tuning keeps 16 B a parameter (fp32 + grads + AdamW)
LORA_PARAM_CAP = 600e6
# PEFT's "all-linear" takes GPT-2's Conv1D too; memledger's "all" is LLaMA-Factory's (nn.Linear
# only) and refuses GPT-2: these models name their modules instead
ALL_TARGETS = {"gpt2": "c_attn,c_proj,c_fc", "gpt2-xl": "c_attn,c_proj,c_fc"}


def dims(model, vocab=None):
    with open(os.path.join(ROOT, "data", "models", model + ".json"), encoding="utf-8") as f:
        c = json.load(f)
    c = c.get("text_config", c)
    h = c.get("hidden_size") or c.get("n_embd")
    v = vocab or c["vocab_size"]
    i = c.get("intermediate_size") or c.get("n_inner") or 4 * h
    n_heads = c.get("num_attention_heads") or c.get("n_head")
    kv = c.get("num_key_value_heads") or n_heads
    d = c.get("head_dim") or h // n_heads
    layer = h * d * (n_heads * 2 + kv * 2) + 3 * h * i
    lt = c.get("layer_types")
    period = 1
    if lt:
        for p in range(1, len(lt) + 1):
            if all(lt[k] == lt[k % p] for k in range(len(lt))):
                period = p
                break
    tied = c.get("tie_word_embeddings", True)
    head = v * h * (1 if tied else 2)
    return layer * 2 * period + head, v, h


def draw(rng, index, seed):
    while True:
        model = rng.choice(sorted(MODELS))
        method = rng.choice(["full", "lora", "lora"])
        P, V, h = dims(model)
        if P > (FULL_PARAM_CAP if method == "full" else LORA_PARAM_CAP):
            continue
        tokens = [t for t in (16, 32, 64, 128, 256, 512) if 6 * t * P <= STEP_FLOP_CAP]
        if not tokens:
            continue
        T = rng.choice(tokens)
        batch = rng.choice([b for b in (1, 2, 4) if b <= T // 16])
        case = {
            "id": f"s{seed}-{index:04d}", "model": model, "method": method,
            "dtype": rng.choice(["bf16", "bf16", "fp16", "fp32"]), "attn": rng.choice(["sdpa", "eager"]),
            "grad_ckpt": rng.choice(["off", "on", "non-reentrant"]), "batch": batch, "seq": T // batch,
            "optim": rng.choice(["adamw_torch_fused", "adamw_torch", "sgd"]) if method == "full"
            else rng.choice(["adamw_torch_fused", "adamw_torch"]),
            "depth_periods": [1, 2],
        }
        if method == "lora":
            case["lora_rank"] = rng.choice([4, 8, 16, 64])
            case["lora_target"] = rng.choice([ALL_TARGETS.get(model, "all"), MODELS[model]])
        return case


# Draw 2 (seeds from 4 on): the paths of issue 23 item 2 and a cheaper case. `vocab` narrows the
# embedding and the head (every layer keeps its width; compare.py hands memledger the same config),
# which takes most of a case's CPU time for the small-width models; a quarter keep the real vocabulary.
MODELS2 = dict(MODELS, **{"qwen2-1.5b": "q_proj,v_proj", "phi-2": "q_proj,k_proj,v_proj,dense"})
STEP_FLOP_CAP2 = 25e9
STAGES = ["sft", "sft", "sft", "dpo", "dpo"]  # draw 2 (seeds 4-6): TRL DPO
STAGES3 = STAGES + ["kto", "grpo"]  # draw 3 (seeds from 7): TRL KTO and GRPO too


def draw2(rng, index, seed, only=None):
    stages = STAGES3 if seed >= 7 else STAGES
    while True:
        model = rng.choice(sorted(MODELS2))
        stage = rng.choice(stages)
        if only and stage not in only:
            continue  # --stages: the draw goes on until a stage asked for comes up
        method = rng.choice(["full", "lora", "lora", "qlora"])
        vocab = rng.choice([None, 8192, 16384, 32768])
        P, V, h = dims(model, vocab)
        P_cap = FULL_PARAM_CAP if method == "full" else LORA_PARAM_CAP
        if stage == "dpo" and method == "full":
            P_cap /= 1.2  # the reference model's copy
        if P > P_cap:
            continue
        pairs = 2 if stage == "dpo" else 1
        tokens = [t for t in (16, 32, 64, 128, 256) if 6 * t * pairs * P <= STEP_FLOP_CAP2]
        if not tokens:
            continue
        T = rng.choice(tokens)
        # KTO's KL batch needs two rows; GRPO's batch is completions, num_generations (2) per prompt
        batches = [b for b in (1, 2, 4) if b <= T // 16 and (stage not in ("kto", "grpo") or b >= 2)]
        if not batches:
            continue
        batch = rng.choice(batches)
        dtype = rng.choice(["bf16", "bf16", "fp16"] if method == "qlora" else ["bf16", "bf16", "fp16", "fp32"])
        case = {
            "id": f"s{seed}-{index:04d}", "model": model, "method": method, "stage": stage,
            "dtype": dtype, "attn": rng.choice(["sdpa", "eager"]),
            "grad_ckpt": rng.choice(["off", "on", "non-reentrant"]), "batch": batch, "seq": T // batch,
            "optim": rng.choice(["adamw_torch_fused", "adamw_torch", "sgd"]) if method == "full"
            else rng.choice(["adamw_torch_fused", "adamw_torch"]),
            "depth_periods": [1, 2],
        }
        if vocab:
            case["vocab"] = vocab
        if method in ("lora", "qlora"):
            case["lora_rank"] = rng.choice([4, 8, 16, 64])
            case["lora_target"] = rng.choice([ALL_TARGETS.get(model, "all"), MODELS2[model]])
        if stage == "grpo":
            # TRL loads a reference model only when beta is not 0 (grpo_trainer.py __init__); for a full
            # fine-tune it loads the checkpoint from disk, which the oracle has not: full runs keep beta 0
            case["num_generations"] = 2
            case["beta"] = 0.0 if method == "full" else rng.choice([0.0, 0.04])
        if method == "qlora":
            # PEFT's prepare_model_for_kbit_training is the user's call under the HF Trainer; TRL's DPOTrainer
            # does not call it (it casts the trainable parameters to bf16 instead: dpo_trainer.py __init__)
            case["kbit_prepare"] = rng.choice(["full", "full", "none"]) if stage == "sft" else "none"
        return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only-lines", action="store_true")
    ap.add_argument("--shard", default="0/1", help="I/N: run only the cases whose index is I modulo N")
    ap.add_argument("--stages", default="", help="comma list (sft,dpo,kto,grpo): draw only these stages "
                    "(seeds from 4; the others are drawn and passed over, so the proportions among these stay)")
    a = ap.parse_args()
    shard, shards = (int(x) for x in a.shard.split("/"))
    only = {x for x in a.stages.split(",") if x}
    if only - set(STAGES3) or (only and a.seed < 4):
        ap.error(f"--stages: one of {','.join(sorted(set(STAGES3)))}, with a seed from 4")
    rng = random.Random(a.seed)
    cases = [draw2(rng, k, a.seed, only) if a.seed >= 4 else draw(rng, k, a.seed) for k in range(a.n)]
    if a.only_lines:
        for c in cases:
            print(json.dumps(c, sort_keys=True))
        return
    sys.path.insert(0, HERE)
    import torch

    import oracle

    torch.set_num_threads(int(os.environ.get("ORACLE_THREADS", "2")))
    done = set()
    if os.path.exists(a.out):
        with open(a.out, encoding="utf-8") as f:
            done = {json.loads(line)["case"]["id"] for line in f if line.strip()}
    t0 = time.time()
    with open(a.out, "a", encoding="utf-8") as f:
        for k, case in enumerate(cases):
            if case["id"] in done or k % shards != shard:
                continue
            try:
                res = oracle.run_case(case)
            except Exception as e:  # a case the framework refuses is recorded, not hidden
                res = {"case": case, "versions": oracle.versions(), "error": f"{type(e).__name__}: {e}"}
                traceback.print_exc()
            res["draw"] = {"seed": a.seed, "index": k}
            f.write(json.dumps(res, sort_keys=True, separators=(",", ":")) + "\n")
            f.flush()
            print(f"{case['id']} {case['model']} {case['method']} {res.get('seconds', 'error')} s "
                  f"(total {time.time() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
