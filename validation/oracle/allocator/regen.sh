#!/bin/sh
# regen.sh [PYTHON] - the traces and replays behind docs/ledger.md "Variable-length steps in the
# caching allocator": traces (seconds each, on the meta device) into $TRACES (default
# /tmp/ml-alloc-traces), then the replays into replay-rule.jsonl / replay-configs.jsonl. One CPU,
# run under nice; about 40 minutes for the rule's replay, two hours for the configurations,
# one more for the paths.
set -eu
py=${1:-build-py/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
T=${TRACES:-/tmp/ml-alloc-traces}
mkdir -p "$T"
tr() { name=$1; shift; for L in 512 1024 1536; do
    nice -n 10 "$py" "$here/trace.py" --seqs "$L" --out "$T/$name-$L.json" "$@" 2>/dev/null; done; }
tr lora-ck-L8 --layers 8 --loss qwen1
tr lora-ck-L16 --layers 16 --loss qwen1
tr lora-ck-L32 --layers 32 --loss qwen1
tr lora-nock-L32 --layers 32 --loss qwen1 --ckpt off
tr full-ck-L32 --layers 32 --loss qwen1 --method full
tr lora-ck-hf-L32 --layers 32
tr lora-nock-L8 --layers 8 --loss qwen1 --ckpt off
tr lora-ck-L8-b4 --layers 8 --loss qwen1 --batch 4
tr qlora-ck-L8 --layers 8 --loss qwen1 --method qlora
R="nice -n 10 python3 $here/replay.py"
t3() { echo "$T/$1-512.json,$T/$1-1024.json,$T/$1-1536.json"; }
rm -f "$here/replay-rule.jsonl" "$here/replay-configs.jsonl" "$here/replay-paths.jsonl"
$R --traces "$(t3 lora-ck-L8)" --smax 2048 --dist uniform,longtail,mid,longtail-trunc,mid-trunc --steps 1000 --seeds 5 \
    --out "$here/replay-rule.jsonl"
out="$here/replay-configs.jsonl"
$R --traces "$(t3 lora-ck-L32)" --smax 2048 --dist uniform,longtail,mid --steps 1000 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L8)" --smax 2048 --dist uniform --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L16)" --smax 2048 --dist uniform --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-nock-L32)" --smax 2048 --dist uniform,longtail --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 full-ck-L32)" --smax 2048 --dist uniform --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-hf-L32)" --smax 2048 --dist uniform --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L32)" --smax 8192 --dist uniform,longtail --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L32)" --smax 512 --dist uniform --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L32)" --smax 2048 --dist longtail-trunc,mid-trunc --steps 300 --seeds 2 --out "$out"
$R --traces "$(t3 lora-ck-L32)" --smax 2048 --dist increasing,decreasing,fixed --steps 30 --seeds 1 --out "$out"
# the paths of r2_sets (docs/ledger.md "Variable-length steps", per path)
five=uniform,longtail,mid,longtail-trunc,mid-trunc
p="$here/replay-paths.jsonl"
$R --traces "$(t3 lora-nock-L8)" --smax 2048 --dist $five --steps 1000 --seeds 5 --out "$p"
$R --traces "$(t3 lora-nock-L32)" --smax 2048 --dist $five --steps 1000 --seeds 2 --out "$p"
$R --traces "$(t3 lora-ck-L8-b4)" --smax 2048 --dist $five --steps 1000 --seeds 3 --out "$p"
$R --traces "$(t3 qlora-ck-L8)" --smax 2048 --dist $five --steps 1000 --seeds 3 --out "$p"
python3 "$here/analyze.py" "$p" --loss-gib lora-off-32-qwen1@2048=1.739 --loss-gib lora-off-8-qwen1@2048=1.739 \
    --loss-gib lora-on-8-qwen1-b4@2048=6.956 --loss-gib qlora-on-8-qwen1@2048=1.739
python3 "$here/analyze.py" "$here/replay-rule.jsonl" --loss-gib lora-on-8-qwen1@2048=1.739 \
    --set deleted=uniform,longtail,mid --set truncated=uniform,longtail-trunc,mid-trunc
