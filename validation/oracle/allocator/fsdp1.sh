#!/bin/sh
# fsdp1.sh [PYTHON] - the FSDP1 replays behind docs/ledger.md "FSDP1 initialisation and per-stream
# pools" (R3): rank 0 of Answer.AI's train.py runs (the released rows aai-01..06, -08, -09, their
# arguments; never their measurements) through FSDP1's init and three traced steps, under four
# allocator pictures, into replay-fsdp1.jsonl. Traces (seconds each, meta device) in $TRACES
# (default /tmp/ml-fsdp1-traces). One CPU, under nice: about 5 minutes.
set -eu
py=${1:-build-py/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
T=${TRACES:-/tmp/ml-fsdp1-traces}
mkdir -p "$T"
out="$here/replay-fsdp1.jsonl"
rm -f "$out"
row() { id=$1; model=$2; method=$3; layers=$4; batch=$5; seq=$6; off=$7
    [ -s "$T/$id.json" ] || nice -n 10 "$py" "$here/trace.py" --model "$model" --method "$method" --rank 64 \
        --targets q_proj,k_proj,v_proj,gate_proj,up_proj,down_proj --dropout 0.1 --adapter-dtype bf16 \
        --loss hf-4.39 --layers "$layers" --batch "$batch" --seqs "$seq" --out "$T/$id.json" 2>/dev/null
    for v in "--streams per-stream" "--streams per-stream --bucket-free immediate" "--streams one" \
             "--streams one --no-init" "--streams per-stream --no-init" "--plain"; do
        # shellcheck disable=SC2086
        nice -n 10 python3 "$here/fsdp1.py" --model "$model" --method "$method" --trace "$T/$id.json" \
            --id "$id" $v $off >>"$out"
    done; }
row aai-01 llama-2-7b qlora 32 1 512 ""
row aai-02 llama-2-7b qlora 32 1 2048 ""
row aai-03 llama-2-7b lora 32 1 512 ""
row aai-04 llama-2-7b lora 32 1 2048 ""
row aai-05 llama-2-7b qlora 32 10 2048 ""
row aai-06 llama-2-7b lora 32 6 2048 ""
row aai-08 yi-34b qlora 60 2 2048 ""
row aai-09 llama-2-70b qlora 80 2 2048 --offload
