#!/bin/sh
# check_plans.sh MEMLEDGER ROOT - every plan memledger fit prints, written with --write and re-run
# through memledger train with its patched files (and its environment file sourced), fits.
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
check() {
    # $1: a name; the rest: fit arguments (the train arguments are the same minus the config)
    name=$1
    shift
    plans=$("$bin" fit "$@" --json | sed -n 's/.*"summary": "\(.*\)".*/\1/p' | wc -l)
    if [ "$plans" -lt 1 ]; then
        echo "FAIL: $name: no plan"
        fail=$((fail + 1))
        return
    fi
    k=1
    while [ "$k" -le "$plans" ]; do
        n=$((n + 1))
        dir="$tmp/$name-$k"
        "$bin" fit "$@" --write "$dir" --plan "$k" >/dev/null || { echo "FAIL: $name plan $k: --write"; fail=$((fail + 1)); k=$((k + 1)); continue; }
        yaml=$(ls "$dir"/*.yaml 2>/dev/null | head -n 1)
        # Re-run train on the patched files: the YAML and DeepSpeed come from DIR, the rest of the
        # arguments (GPU, counts) are the same; the environment file is sourced.
        targs=$(printf '%s\n' "$@" | awk -v y="$yaml" 'skip {skip=0; next} $0=="--plans" || $0=="--confidence" {skip=1; next} $0=="--config" {print "--config"; print y; skip=1; next} {print}')
        # shellcheck disable=SC2086
        if ! ( [ -f "$dir/memledger.env" ] && . "$dir/memledger.env"; set -- $targs; exec "$bin" train "$@" --check >/dev/null ); then
            echo "FAIL: $name plan $k does not fit when re-run through memledger train"
            fail=$((fail + 1))
        fi
        k=$((k + 1))
    done
}
check seed --config "$root/examples/seed-case/train.yaml" --gpu dcu-16g --num-gpus 4 --plans 8
printf 'model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: lora\nlora_target: all\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\ncutoff_len: 4096\nbf16: true\nflash_attn: disabled\n' >"$tmp/rtx.yaml"
# At the high end of the 80 % interval no plan within three knobs fits this one; the estimate does.
check rtx4090 --config "$tmp/rtx.yaml" --gpu rtx4090 --plans 8 --confidence point
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$n" -gt 0 ]
