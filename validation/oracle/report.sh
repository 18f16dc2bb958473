#!/bin/sh
# report.sh - validation/ORACLE.md from the committed draws (no case is run: regen.sh runs them).
#   validation/oracle/report.sh      (needs build/memledger)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
[ -x build/memledger ] || make build
# Seed 12: the fresh draw of every stage made after TF1-TF4 / O11-O12; seed 13: TRL stages only, the fresh
# draw made after the last ledger change (O13) with the oracle's fp32 pow (regen.sh), once drawn.
set --
if [ -s "$here/cases-s12.jsonl" ]; then
    set -- --cases "$here/cases-s12.jsonl" \
        --label "Seed 12: the fresh draw made after TF1-TF4 (TRL's fused LM head), O11-O12 and Bloom's eager fallback (drawn at e06c2c7), before O13: its GPT-2 / Phi rows under autocast ran pow in 16 bits (oracle README, CPU and CUDA) and read O13 as over"
fi
if [ -s "$here/cases-s13.jsonl" ]; then
    set -- "$@" --cases "$here/cases-s13.jsonl" \
        --label "Seed 13: the fresh draw made after the last ledger change (O13, transformers' NewGELUActivation, and LoRA on GPT-2's Conv1D; TRL DPO / KTO / GRPO only; the oracle runs pow in fp32 under autocast as CUDA does; drawn at 85ce56c; 092b028 (O13 in a checkpointed backward), 4d41efe and ad05a06 (O14, fp16 copies of TRL's bf16 adapters) were made while it ran, from seed 12 and a published row, its rows not read until after them)"
fi
python3 "$here/compare.py" \
    --cases "$here/cases-s1.jsonl" --label "Seed 1: the draw the terms were fixed on" \
    --cases "$here/cases-s2.jsonl" --label "Seed 2: a fresh draw, made after the terms were fixed" \
    --cases "$here/cases-s3-tf4.57.jsonl" --label "Seed 3 on transformers 4.57.6" \
    --cases "$here/cases-s3-tf5.12.jsonl" --label "Seed 3 on transformers 5.12.0" \
    --cases "$here/cases-s4.jsonl,$here/cases-s7.jsonl,$here/cases-s9.jsonl" \
    --label "Seeds 4, 7 and 9: drawn fresh after a1b78ce; the findings F1-F10 and the terms O7-O10 were then read from them (SFT, QLoRA, TRL DPO / KTO / GRPO)" \
    --cases "$here/cases-s8-tf4.57.jsonl" --label "Seed 8 (the later draw) on transformers 4.57.6, before O7-O10" \
    --cases "$here/cases-s8-tf5.12.jsonl" --label "Seed 8 (the later draw) on transformers 5.12.0, before O7-O10" \
    --cases "$here/cases-s10.jsonl" --label "Seed 10: a fresh draw made after O7-O10 (before TRL's fused head, TF1-TF4: its TRL rows were the evidence for F1/F2/F5)" \
    --cases "$here/cases-s11.jsonl" --label "Seed 11: TRL DPO / KTO / GRPO only, the development draw TF1-TF4 (TRL's fused LM head) were checked on - not a fresh draw" \
    "$@" \
    --out "$root/validation/ORACLE.md" >/dev/null
