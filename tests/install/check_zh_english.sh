#!/bin/sh
# check_zh_english.sh BINARY SOURCE_DIR - no English sentence is left in the zh_CN output of the
# seed case (train, diagnose with and without its config, fit), a vision-language training run,
# diagnose of every OOM log in tests/fixtures/oom, infer (the hf, vLLM and SGLang ledgers, NF4
# weights, LLaMA-Factory inference YAMLs), models, gpus, every command's help and bad input
# (no_english.py says what counts as an English sentence and what is allowed), and the JSON of
# the same commands stays English (docs/json.md: JSON is never translated).
# LANG=zh_CN.UTF-8 where that locale exists, else LANG=C.UTF-8 with LANGUAGE=zh_CN.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 || { echo "skipped: no python3"; exit 77; }
if locale -a 2>/dev/null | grep -qix 'zh_CN\.utf-\{0,1\}8'; then
    lang=zh_CN.UTF-8
elif locale -a 2>/dev/null | grep -qix 'c\.utf-\{0,1\}8'; then
    lang=C.UTF-8
else
    echo "skipped: neither zh_CN.UTF-8 nor C.UTF-8 (locale -a), so glibc cannot select the catalog"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 2
status=0
zh() { env -u LC_ALL -u LC_MESSAGES -u COLUMNS LANG=$lang LANGUAGE=zh_CN "$bin" "$@"; }

seed="--config examples/seed-case/train.yaml --gpu dcu-16g --num-gpus 4"
n=0
# NAME ARGS...: the command's text (stdout and stderr) in $tmp/NAME.txt; its JSON, when it has
# one, in $tmp/NAME.json.
run() {
    name=$1
    shift
    zh "$@" >"$tmp/$name.txt" 2>&1
    n=$((n + 1))
}
# JSON is never translated (docs/json.md): a --json run under LANGUAGE=zh_CN writes the same
# bytes, on stdout and on stderr, as under LC_ALL=C (a log may itself hold Chinese, so the test
# is the C locale's document, not the absence of Chinese).
json() {
    name=$1
    shift
    zh "$@" --json >"$tmp/$name.json" 2>"$tmp/$name.json.err"
    LC_ALL=C "$bin" "$@" --json >"$tmp/$name.c-json" 2>"$tmp/$name.c-json.err"
    if [ ! -s "$tmp/$name.json" ]; then
        echo "$name --json printed nothing: $(head -c 300 "$tmp/$name.json.err")"
        status=1
    elif ! cmp -s "$tmp/$name.json" "$tmp/$name.c-json"; then
        echo "$name --json under LANGUAGE=zh_CN differs from LC_ALL=C: JSON is never translated"
        diff "$tmp/$name.c-json" "$tmp/$name.json" | head -4
        status=1
    elif ! cmp -s "$tmp/$name.json.err" "$tmp/$name.c-json.err"; then
        echo "$name --json under LANGUAGE=zh_CN wrote another stderr than LC_ALL=C: $(head -c 300 "$tmp/$name.json.err")"
        status=1
    fi
}
# shellcheck disable=SC2086
{
    run train train $seed
    json train train $seed
    run diagnose diagnose examples/seed-case/oom.log --config examples/seed-case/train.yaml
    json diagnose diagnose examples/seed-case/oom.log --config examples/seed-case/train.yaml
    run diagnose-log diagnose examples/seed-case/oom.log
    json diagnose-log diagnose examples/seed-case/oom.log
    run fit fit $seed
    # A hub id with a suffix: the note on stderr says what the suffix means.
    run hub-id train Qwen/Qwen2.5-7B-Instruct-AWQ --gpu a100-80g
    json fit fit $seed
    run infer-hf infer llama-3.1-8b --gpu rtx4090
    json infer-hf infer llama-3.1-8b --gpu rtx4090
    run infer-vllm infer llama-3.1-8b --engine vllm --gpu rtx4090 --max-model-len 32768
    json infer-vllm infer llama-3.1-8b --engine vllm --gpu rtx4090 --max-model-len 32768
    run infer-nf4 infer llama-2-70b --quant nf4 --gpu a100-40g
    json infer-nf4 infer llama-2-70b --quant nf4 --gpu a100-40g
    # LLaMA-Factory inference YAMLs: a LoRA adapter's slots, a vision-language model's profile.
    lfi=tests/data/llamafactory-examples/examples/inference
    run infer-lf-lora infer --config $lfi/qwen3_lora_sft.yaml --engine vllm --gpu h100
    json infer-lf-lora infer --config $lfi/qwen3_lora_sft.yaml --engine vllm --gpu h100
    run infer-lf-vl infer --config $lfi/qwen3vl.yaml --engine vllm --gpu h100
    json infer-lf-vl infer --config $lfi/qwen3vl.yaml --engine vllm --gpu h100
    # A vision-language model: the tower's rows and the note on visual tokens.
    run train-vl train qwen2.5-vl-7b-instruct --gpu a100-80g --method full
    json train-vl train qwen2.5-vl-7b-instruct --gpu a100-80g --method full
    # The engine's refusal is quoted in its own words (“...”), the verdict around it in Chinese.
    run infer-sglang infer llama-3.1-8b --engine sglang --gpu rtx4090
    json infer-sglang infer llama-3.1-8b --engine sglang --gpu rtx4090
    run models models
    json models models
    run gpus gpus
    json gpus gpus
}
# Every OOM log of the fixture corpus (the causes, fixes and checks the seed case does not reach).
for log in tests/fixtures/oom/*.log; do
    k=$(basename "$log" .log)
    run "oom-$k" diagnose "$log"
    json "oom-$k" diagnose "$log"
done
run help --help
for c in $(zh --help | sed -n 's/^  \([a-z]*\)  .*/\1/p'); do
    run "help-$c" help "$c"
    [ -s "$tmp/help-$c.txt" ] || { echo "memledger help $c printed nothing"; status=1; }
done
# Bad input: an unknown command, an unknown GPU, a bad value for a YAML key, a bad option, a
# malformed YAML (libyaml's words quoted), an unknown model, a GGUF checkpoint.
run bad-command trian
run bad-gpu train $seed --gpu dcu-17g
run bad-set train $seed --set cutoff_len=abc
run bad-option train $seed --no-such-option
run bad-yaml train --config tests/bad/files/malformed.yaml --gpu h100
run bad-model train qwen2.5-15b --gpu h100
run bad-gguf train Qwen/Qwen2.5-7B-Instruct-GGUF --gpu h100
# A warning: a --set key that neither LLaMA-Factory nor memledger knows, with a near miss.
run warn-set train $seed --set cutof_len=2048
for f in "$tmp"/*.txt; do
    [ -s "$f" ] || { echo "$(basename "$f" .txt): printed nothing"; status=1; }
done
grep -q '放不下' "$tmp/train.txt" || { echo "train: the zh_CN catalog was not used: $(head -1 "$tmp/train.txt")"; status=1; }
python3 "$here/no_english.py" --json "$tmp"/*.json -- "$tmp"/*.txt || status=1

# The check can fail. (1) The C locale's train report is English, and it must say so.
LC_ALL=C "$bin" train $seed >"$tmp/english.out" 2>&1
if python3 "$here/no_english.py" --json "$tmp"/*.json -- "$tmp/english.out" >/dev/null; then
    echo "no_english.py finds no English in the C locale's train report"
    status=1
fi
# (2) One message of the seed report left untranslated: the catalog compiled again without the
# translation of the eager-attention note, and the report read through it must be flagged.
if command -v msgfmt >/dev/null 2>&1 && [ -f "$src/po/zh_CN.po" ]; then
    mkdir -p "$tmp/loc/zh_CN/LC_MESSAGES"
    python3 - "$src/po/zh_CN.po" "$tmp/one_missing.po" <<'PY'
import re, sys
text = open(sys.argv[1], encoding='utf-8').read()
i = text.index('"eager attention materialises b x heads x s^2 scores (fp32 softmax)')
j = text.index('\nmsgstr ', i)
k = text.find('\n\n', j)
k = len(text) if k < 0 else k
open(sys.argv[2], 'w', encoding='utf-8').write(text[:j] + '\nmsgstr ""' + text[k:])
PY
    if msgfmt -o "$tmp/loc/zh_CN/LC_MESSAGES/memledger.mo" "$tmp/one_missing.po"; then
        MEMLEDGER_LOCALEDIR=$tmp/loc zh train $seed >"$tmp/one_missing.out" 2>&1
        if python3 "$here/no_english.py" --json "$tmp"/*.json -- "$tmp/one_missing.out" >/dev/null; then
            echo "no_english.py misses the untranslated eager-attention note in the train report"
            status=1
        fi
    else
        echo "msgfmt could not compile the catalog with one translation removed"
        status=1
    fi
fi
[ $status -eq 0 ] && echo "zh_CN ($lang): no English sentence in $n outputs (train, diagnose of the seed and fixture logs, fit, infer, models, gpus, help, bad input); JSON stays English"
exit $status
