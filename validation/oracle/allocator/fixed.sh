#!/bin/sh
# fixed.sh [PYTHON] - the fixed-shape matrix behind docs/ledger.md "The caching allocator at fixed
# shapes": one trace.py trace per case (meta device, seconds to a minute each) into $TRACES
# (default /tmp/ml-alloc-fixed), then fixed.py's replay of each into replay-fixed.jsonl.
# One CPU, under nice; about 10 minutes.
set -eu
py=${1:-build-py/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
T=${TRACES:-/tmp/ml-alloc-fixed}
mkdir -p "$T"
n=0
tr() { n=$((n + 1)); f="$T/c$n.json"; [ -s "$f" ] || nice -n 10 "$py" "$here/trace.py" --out "$f" "$@" 2>/dev/null; }
#  model          layers       method          ckpt      seq        batch
tr --model qwen1.5-7b --layers 32 --method lora --ckpt on --seqs 1024 --batch 1
tr --model qwen1.5-7b --layers 32 --method lora --ckpt off --seqs 1024 --batch 1
tr --model qwen1.5-7b --layers 32 --method lora --ckpt on --seqs 2048 --batch 1
tr --model qwen1.5-7b --layers 32 --method lora --ckpt on --seqs 512 --batch 4
tr --model qwen1.5-7b --layers 32 --method qlora --ckpt on --seqs 1024 --batch 1
tr --model qwen1.5-7b --layers 32 --method full --ckpt on --seqs 1024 --batch 1
tr --model qwen1.5-7b --layers 32 --method full --ckpt off --seqs 512 --batch 1
tr --model llama-2-7b --layers 32 --method lora --ckpt on --seqs 2048 --batch 1
tr --model llama-2-7b --layers 32 --method lora --ckpt off --seqs 512 --batch 2
tr --model llama-2-7b --layers 32 --method qlora --ckpt on --seqs 4096 --batch 1
tr --model qwen2.5-0.5b --layers 24 --method full --ckpt off --seqs 1024 --batch 4
tr --model qwen2.5-0.5b --layers 24 --method lora --ckpt on --seqs 2048 --batch 1
tr --model llama-3.2-1b --layers 16 --method full --ckpt on --seqs 2048 --batch 2
tr --model llama-3.2-1b --layers 16 --method lora --ckpt off --seqs 1024 --batch 1
tr --model qwen2.5-1.5b --layers 28 --method qlora --ckpt off --seqs 512 --batch 1
tr --model qwen2.5-1.5b --layers 28 --method lora --ckpt on --seqs 4096 --batch 8
# a later draw, traced after a candidate rule was read off the cases above (docs/ledger.md "The
# caching allocator at fixed shapes": the held-out check the candidate failed)
tr --model llama-3.1-8b --layers 32 --method lora --ckpt on --seqs 3072 --batch 2 --rank 16 \
    --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
tr --model qwen3-4b --layers 36 --method qlora --ckpt on --seqs 2048 --batch 1
tr --model mistral-7b-v0.1 --layers 32 --method lora --ckpt on --seqs 1024 --batch 2
tr --model qwen2.5-3b --layers 36 --method lora --ckpt on --seqs 768 --batch 1
rm -f "$here/replay-fixed.jsonl"
python3 "$here/fixed.py" --out "$here/replay-fixed.jsonl" $(i=1; while [ $i -le $n ]; do printf '%s ' "$T/c$i.json"; i=$((i + 1)); done)
