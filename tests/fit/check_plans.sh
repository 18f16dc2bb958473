#!/bin/sh
# check_plans.sh MEMLEDGER ROOT - every plan memledger fit prints, written with --write and re-run
# through memledger train FROM THE DIRECTORY THE FRAMEWORK WOULD BE STARTED IN (the run directory:
# LLaMA-Factory resolves the YAML's deepspeed: from there), with its environment file sourced,
# fits; and the DeepSpeed file train reads there is the one the plan wrote (or the user's own when
# the plan does not change it).
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
# check NAME FITDIR RUNDIR YAML OUT FITARGS [train args...]: in FITDIR, fit --config YAML FITARGS
# --write OUT for each plan; then, in RUNDIR (where the framework is started), train on what was
# written. YAML and OUT are as seen from FITDIR.
check() {
    name=$1 fitdir=$2 rundir=$3 yaml=$4 out=$5 fitargs=$6
    shift 6
    # shellcheck disable=SC2086
    plans=$(cd "$fitdir" && "$bin" fit --config "$yaml" "$@" $fitargs --json 2>/dev/null | sed -n 's/.*"summary": "\(.*\)".*/\1/p' | wc -l)
    if [ "$plans" -lt 1 ]; then
        echo "FAIL: $name: no plan"
        fail=$((fail + 1))
        return
    fi
    k=1
    while [ "$k" -le "$plans" ]; do
        n=$((n + 1))
        dir="$out-$k"
        # shellcheck disable=SC2086
        if ! (cd "$fitdir" && "$bin" fit --config "$yaml" "$@" $fitargs --write "$dir" --plan "$k" >/dev/null 2>"$tmp/err"); then
            echo "FAIL: $name plan $k: --write: $(cat "$tmp/err")"
            fail=$((fail + 1)); k=$((k + 1)); continue
        fi
        # What was written, as seen from the run directory.
        adir=$(cd "$fitdir" && cd "$dir" && pwd)
        rdir=$(cd "$rundir" && pwd)
        case "$adir" in "$rdir"/*) rel=${adir#"$rdir"/} ;; *) rel=$adir ;; esac
        ayaml=$(cd "$fitdir" && cd "$(dirname "$yaml")" && pwd)/$(basename "$yaml")
        # The YAML to run: the patched one, else (a plan that changes no YAML key) the user's own.
        run_yaml="$rel/$(basename "$yaml")"
        [ -f "$rundir/$run_yaml" ] || run_yaml=$ayaml
        ds_written=$(cd "$adir" && ls -- *.json 2>/dev/null | head -n 1)
        if ! (cd "$rundir" && { [ ! -f "$rel/memledger.env" ] || . "$adir/memledger.env"; } &&
              exec "$bin" train --config "$run_yaml" "$@" --check >/dev/null 2>"$tmp/err"); then
            echo "FAIL: $name plan $k does not fit when re-run through memledger train from $rundir"
            sed 's/^/    /' "$tmp/err"
            fail=$((fail + 1))
        elif grep -q 'transformers rejects the mismatch' "$tmp/err"; then
            echo "FAIL: $name plan $k: the written files disagree as transformers refuses: $(cat "$tmp/err")"
            fail=$((fail + 1))
        elif grep -q 'beside the YAML' "$tmp/err"; then
            echo "FAIL: $name plan $k: from $rundir the framework would not find the DeepSpeed file: $(cat "$tmp/err")"
            fail=$((fail + 1))
        elif [ -n "$ds_written" ] && ! (cd "$rundir" && v=$(sed -n "s/^deepspeed: *//p" "$run_yaml") &&
                                         [ "$v" -ef "$adir/$ds_written" ]); then
            echo "FAIL: $name plan $k: from $rundir, $run_yaml's deepspeed: is not the patched $rel/$ds_written"
            fail=$((fail + 1))
        elif [ -n "$ds_written" ] && ! grep -qF "DeepSpeed config: $rel/$ds_written " "$tmp/err"; then
            echo "FAIL: $name plan $k: train from $rundir does not read the patched $rel/$ds_written: $(cat "$tmp/err")"
            fail=$((fail + 1))
        fi
        k=$((k + 1))
    done
}

# The seed case as its user has it: train.yaml and its DeepSpeed JSON in the project directory, the
# run started there.
mkdir -p "$tmp/seed"
cp "$root/examples/seed-case/train.yaml" "$root/examples/seed-case/deepspeed_z3_4x16g.json" "$tmp/seed/"
check seed "$tmp/seed" "$tmp/seed" train.yaml fitted "--plans 8" --gpu dcu-16g --num-gpus 4

# LLaMA-Factory's own layout: configs under a folder, deepspeed: relative to the repository root,
# where llamafactory-cli runs.
mkdir -p "$tmp/lf/examples/train_lora" "$tmp/lf/examples/deepspeed"
sed 's|^deepspeed: .*|deepspeed: examples/deepspeed/ds_z3_4x16g.json|' "$root/examples/seed-case/train.yaml" \
    >"$tmp/lf/examples/train_lora/seed.yaml"
cp "$root/examples/seed-case/deepspeed_z3_4x16g.json" "$tmp/lf/examples/deepspeed/ds_z3_4x16g.json"
check lf-root "$tmp/lf" "$tmp/lf" examples/train_lora/seed.yaml saves/fitted "--plans 8" --gpu dcu-16g --num-gpus 4

# fit run from elsewhere, naming the run directory: what it writes is found from there.
mkdir -p "$tmp/elsewhere"
check run-dir "$tmp/elsewhere" "$tmp/lf" "$tmp/lf/examples/train_lora/seed.yaml" "$tmp/lf/out" "--plans 3 --run-dir $tmp/lf" --gpu dcu-16g --num-gpus 4

# A DeepSpeed file with integer batch keys (train_micro_batch_size_per_gpu, gradient_accumulation_steps,
# train_batch_size): a plan that halves the micro-batch or doubles the GPUs writes "auto" to them.
mkdir -p "$tmp/int"
cp "$root/tests/golden/fit/write-ds-int-batch-keys-auto/q7_int.yaml" \
   "$root/tests/golden/fit/write-ds-int-batch-keys-auto/ds_z2_int.json" "$tmp/int/"
check int-batch "$tmp/int" "$tmp/int" q7_int.yaml fitted "--plans 8" --gpu dcu-16g --num-gpus 4

# No DeepSpeed file at all.
mkdir -p "$tmp/rtx"
printf 'model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: lora\nlora_target: all\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\ncutoff_len: 4096\nbf16: true\nflash_attn: disabled\n' >"$tmp/rtx/rtx.yaml"
# At the high end of the 80 % interval no plan within three knobs fits this one; the estimate does.
check rtx4090 "$tmp/rtx" "$tmp/rtx" rtx.yaml fitted "--plans 8 --confidence point" --gpu rtx4090
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$n" -gt 0 ]
