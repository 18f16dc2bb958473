#!/bin/sh
# check_json.sh BINARY JSON_CHECK FAKES_DIR SOURCE_DIR - every JSON document every command writes
# parses (cJSON, through json_check) and starts with "schema": "memledger/1" (docs/json.md):
# train, infer (hf, vllm, sglang), diagnose (an event, none, serving), fit (training, serving),
# compare, params (with LoRA), models (and --types), gpus (the list, a card, a size), card, and
# watch's timeline (its first record) on the fake NVML library; and that every key path those
# documents have is listed, as `path`, in the command's section of docs/json.md.
set -u
bin=$1
check=$2
fakes=$3
src=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
status=0
n=0
seed="--config examples/seed-case/train.yaml --gpu 16G --num-gpus 4"
log=examples/seed-case/oom.log
measured=tests/golden/compare/json/measured.jsonl
torchtune="llama-3.2-3b --framework torchtune --dtype pure_bf16 --optim adamw_torch_fused --attn sdpa --method full"
torchtune="$torchtune --batch 2 --seq 4096 --grad-ckpt non-reentrant --gpu a100-80g"
while IFS='|' read -r want section args; do
    [ -n "$args" ] || continue
    n=$((n + 1))
    # shellcheck disable=SC2086
    env -i PATH="$PATH" LC_ALL=C "$bin" $args --json >"$tmp/doc" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "memledger $args --json: exit $rc, want $want: $(head -c 300 "$tmp/err")"
        status=1
        continue
    fi
    "$check" --keys "$tmp/doc" 2>"$tmp/why" >>"$tmp/keys.$section" ||
        { echo "memledger $args --json: $(cat "$tmp/why")"; status=1; }
done <<EOF2
0|train|train $seed
0|train|train qwen2.5-7b --method qlora --gpu rtx4090 --batch 2 --seq 2048
0|infer|infer llama-2-7b --gpu rtx4090 --context 4096
0|infer|infer llama-3.1-8b --engine vllm --gpu h100 --max-model-len 8192
0|infer|infer deepseek-v3 --engine sglang --quant fp8 --tp 8 --num-gpus 8 --gpu h200 --max-model-len 32768
0|diagnose|diagnose $log --config examples/seed-case/train.yaml
1|diagnose|diagnose tests/fixtures/oom/no-oom.log
0|diagnose|diagnose tests/fixtures/oom/vllm-10517.log --model llama-3.1-8b --vllm-version 0.6.4
0|diagnose|diagnose tests/fixtures/oom/vllm-23192.log --model mixtral-8x7b --quant fp8
0|fit|fit $seed
0|fit --serve|fit llama-3.1-8b --serve --engine vllm --gpu rtx4090
0|compare|compare $measured $torchtune
0|params|params qwen2.5-14b
0|params|params Qwen/Qwen2.5-14B --lora-rank 64 --lora-target all
0|models|models
0|models|models --types
0|gpus|gpus
0|gpus|gpus a100
0|gpus|gpus 16G
0|card|card
EOF2
# watch: the timeline's first record.
n=$((n + 1))
env -i PATH="$PATH" LC_ALL=C FAKE_NVML_SCRIPT="$src/tests/monitor/cases/nvml-peak/script" \
    "$bin" watch --interval 10ms --backend nvml --backend-lib "$fakes/nvml/libnvidia-ml.so.1" \
    --out "$tmp/timeline.jsonl" -- sleep 0.1 >/dev/null 2>"$tmp/err" || {
    echo "memledger watch on the fake NVML failed: $(cat "$tmp/err")"
    status=1
}
"$check" --lines --keys "$tmp/timeline.jsonl" 2>"$tmp/why" >"$tmp/keys.watch" ||
    { echo "memledger watch --out: $(cat "$tmp/why")"; status=1; }

# Every key path in its section of docs/json.md ("## `SECTION`"), as `path` (or through a member,
# `a[].b` for `a`); `a.*` documents the keys of a map and `*` stands for one key of a path.
for keys in "$tmp"/keys.*; do
    section=${keys#"$tmp/keys."}
    awk -v h="## \`$section\`" 'index($0, h) == 1 { on = 1; next } /^## / { on = 0 } on' docs/json.md |
        grep -o '`[^`]*`' | tr -d '`' | sort -u >"$tmp/doc.$section"
    [ -s "$tmp/doc.$section" ] || { echo "docs/json.md has no section ## \`$section\`"; status=1; continue; }
    sed -n 's/[].[]/\\&/g; s/\*/[^.]*/gp' "$tmp/doc.$section" | sed 's/.*/^&$/' >"$tmp/re.$section"
    sort -u "$keys" | while read -r path; do
        # schema heads the page; an object or array is documented through its members.
        [ "$path" = schema ] && continue
        grep -qxF "$path" "$tmp/doc.$section" && continue
        awk -v p="$path" 'index($0, p ".") == 1 || index($0, p "[]") == 1 { f = 1 } END { exit !f }' \
            "$tmp/doc.$section" && continue
        [ -s "$tmp/re.$section" ] && printf '%s\n' "$path" | grep -q -f "$tmp/re.$section" && continue
        echo "docs/json.md, $section: the key $path is not documented"
    done >"$tmp/undocumented.$section"
    [ -s "$tmp/undocumented.$section" ] && { cat "$tmp/undocumented.$section"; status=1; }
done
[ $status -eq 0 ] && echo "json: $n documents parse, carry \"schema\": \"memledger/1\" and have their keys in docs/json.md"
exit $status
