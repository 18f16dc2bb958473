#!/bin/sh
# walk_examples.sh BINARY EXAMPLES_ROOT - the acceptance test of issue 14: every YAML and JSON of
# LLaMA-Factory's examples/ (the copy in tests/data/llamafactory-examples, see its SOURCE.md) runs
# through `memledger train` from that directory (LLaMA-Factory resolves `deepspeed:` from its own
# root) and either gives a ledger with the stage, method, quantization, sharding and GPU count the
# table below expects, or fails with one line naming the key it cannot model.
#
# The expected values are written by hand from the files themselves (and LLaMA-Factory's own
# comments: which accelerate config a file is launched with, `llamafactory-cli dpo` for the v1 DPO
# file), never from memledger's output.
#
# Columns: file | how | expect | stage | method | quant | sharding | gpus
#   how     - : --config FILE;  acc=F: + --accelerate F;  lf=CMD: `-- llamafactory-cli CMD FILE`;
#           infer: `memledger infer --config FILE` (an inference config, `llamafactory-cli chat FILE`),
#           its five columns then: infer, engine (hf vllm sglang), dtype, weight format (- or the
#           --quant name), tpN;  eng=E: + --engine E;
#           gpus=N: --num-gpus N;  accel: FILE is an accelerate config, run with --accelerate FILE
#           and the stand-in model (full);  ds: FILE is a DeepSpeed JSON, run with --deepspeed FILE,
#           the stand-in model (full) and 2 GPUs. Several are joined with ','.
#   expect  ok: a ledger, checked as is;  model: fails on the model name (a model out of scope, a
#           local path only the example's author has): the run must fail naming the model, and the
#           same file with the stand-in model qwen3-4b must give the expected ledger;
#           gap:WHY: a known gap, the expected signature is the right one and the ledger differs from
#           it today in the quantization only (the row fails once it matches: flip it to ok);
#           refuse:TEXT / error:TEXT: exit 2, the error line with TEXT (the only line on stderr but
#           for "DeepSpeed config:" and "note:" lines saying which file and model were read).
#   quant   4 or 8 (bitsandbytes bits), awq or gptq (a quantized checkpoint), or -;
#   stage   pt sft rm dpo kto ppo;  method full freeze lora qlora (oft is modelled as lora);
#   sharding single ddp zeroN[+offopt][+offparam][+tpN]
#           fsdpV-MODE[+cpN];  gpus the GPUs in all (num_processes for accelerate).
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2
ST=qwen3-4b

# The signature of a ledger's first line: stage method quant sharding gpus.
signature() {
    l=$(head -n 1 "$1")
    stage=$(printf '%s' "$l" | grep -oE ' · (pt|rm|dpo|kto|orpo|ppo|grpo) · ' | tr -d ' ·')
    [ -n "$stage" ] || stage=sft
    method=$(printf '%s' "$l" | grep -oE ' · (full|freeze|lora|qlora)( |$)' | head -n 1 | tr -d ' ·')
    quant=$(printf '%s' "$l" | grep -oE ' [48]-bit' | grep -oE '[48]')
    [ -n "$quant" ] || quant=$(tail -n +2 "$1" | grep -ioE '(awq|gptq)' | head -n 1 | tr 'A-Z' 'a-z')
    [ -n "$quant" ] || quant=-
    sh=single
    z=$(printf '%s' "$l" | grep -oE 'DeepSpeed ZeRO-[0-3]' | grep -oE '[0-3]$')
    if [ -n "$z" ]; then
        sh=zero$z
        case $l in *"+offload optimizer"*) sh=$sh+offopt ;; esac
        case $l in *"+offload params"*) sh=$sh+offparam ;; esac
        tp=$(printf '%s' "$l" | grep -oE 'tp=[0-9]+' | grep -oE '[0-9]+')
        [ -n "$tp" ] && sh=$sh+tp$tp
    elif f=$(printf '%s' "$l" | grep -oE 'FSDP[12] [a-z_]+'); then
        sh=$(printf '%s' "$f" | sed -E 's/FSDP([12]) /fsdp\1-/')
    elif printf '%s' "$l" | grep -q ' · DDP · '; then
        sh=ddp
    fi
    cp=$(printf '%s' "$l" | grep -oE 'context parallel [0-9]+' | grep -oE '[0-9]+$')
    [ -n "$cp" ] && sh=$sh+cp$cp
    gpus=$(printf '%s' "$l" | grep -oE ' · [0-9]+ x ' | grep -oE '[0-9]+')
    echo "$stage $method $quant $sh $gpus"
}

# The signature of an inference ledger's first line: infer engine dtype format tpN.
infer_signature() {
    l=$(head -n 1 "$1")
    engine=$(printf '%s' "$l" | sed -E 's/^[^·]* · ([a-z]+) · .*/\1/')
    dtype=$(printf '%s' "$l" | sed -E 's/^[^·]* · [a-z]+ · ([a-z0-9]+).*/\1/')
    fmt=$(printf '%s' "$l" | grep -oE ' weights [a-z0-9]+' | sed 's/ weights //')
    tp=$(printf '%s' "$l" | grep -oE ' tp [0-9]+' | grep -oE '[0-9]+')
    echo "infer $engine $dtype ${fmt:--} tp${tp:-1}"
}

# run MODEL FILE HOW: memledger with the arguments the row asks for; output in $tmp/out, $tmp/err.
run() {
    r_model=$1 r_file=$2 r_how=$3
    set --
    lf=""
    cmd=train
    for h in $(echo "$r_how" | tr ',' ' '); do
        case $h in
        -) ;;
        infer) cmd=infer ;;
        eng=*) set -- "$@" --engine "${h#eng=}" ;;
        acc=*) set -- "$@" --accelerate "${h#acc=}" ;;
        gpus=*) set -- "$@" --num-gpus "${h#gpus=}" ;;
        lf=*) lf=${h#lf=} ;;
        accel) set -- "$@" --accelerate "$r_file" --method full; r_file=""; r_model=${r_model:-$ST} ;;
        ds) set -- "$@" --deepspeed "$r_file" --method full --num-gpus 2; r_file=""; r_model=${r_model:-$ST} ;;
        esac
    done
    [ -n "$r_model" ] && set -- "$r_model" "$@"
    if [ -n "$lf" ]; then
        "$bin" train "$@" --gpu h100 -- llamafactory-cli "$lf" "$r_file" >"$tmp/out" 2>"$tmp/err" </dev/null
    elif [ -n "$r_file" ]; then
        "$bin" "$cmd" "$@" --config "$r_file" --gpu h100 >"$tmp/out" 2>"$tmp/err" </dev/null
    else
        "$bin" train "$@" --gpu h100 >"$tmp/out" 2>"$tmp/err" </dev/null
    fi
    echo $? >"$tmp/rc"
}

# sig HOW: the signature of $tmp/out for the row's command.
sig() {
    case ,$1, in *,infer,*) infer_signature "$tmp/out" ;; *) signature "$tmp/out" ;; esac
}

# one_line_error TEXT: exit 2, one error line that contains TEXT (the lines that say which files
# and model were read aside).
one_line_error() {
    grep -v -e '^memledger: DeepSpeed config: ' -e '^memledger: note: ' "$tmp/err" >"$tmp/err1"
    [ "$(cat "$tmp/rc")" = 2 ] && [ "$(wc -l <"$tmp/err1")" -eq 1 ] && grep -qF -- "$1" "$tmp/err1"
}

fail=0 n=0 n_ok=0 n_model=0 n_gap=0 n_refuse=0 n_error=0
listed="$tmp/listed"
: >"$listed"
while IFS='|' read -r file how expect stage method quant sharding gpus; do
    file=$(echo "$file" | tr -d ' ')
    case $file in '' | '#'*) continue ;; esac
    how=$(echo "$how" | tr -d ' ')
    expect=$(echo "$expect" | sed 's/^ *//; s/ *$//')
    want=$(echo "$stage $method $quant $sharding $gpus" | tr -s ' ' | sed 's/^ //; s/ $//')
    n=$((n + 1))
    echo "$file" >>"$listed"
    why=""
    case $expect in
    ok)
        n_ok=$((n_ok + 1))
        run "" "$file" "$how"
        if [ "$(cat "$tmp/rc")" != 0 ]; then
            why="exit $(cat "$tmp/rc"): $(head -n 1 "$tmp/err")"
        elif [ "$(sig "$how")" != "$want" ]; then
            why="got '$(sig "$how")', want '$want'"
        fi ;;
    model)
        n_model=$((n_model + 1))
        run "" "$file" "$how"
        if ! one_line_error "unknown model" && ! one_line_error "No such file"; then
            why="as is: expected the model-name failure, got exit $(cat "$tmp/rc"): $(head -n 1 "$tmp/err")"
        else
            run "$ST" "$file" "$how"
            if [ "$(cat "$tmp/rc")" != 0 ]; then
                why="with $ST: exit $(cat "$tmp/rc"): $(head -n 1 "$tmp/err")"
            elif [ "$(sig "$how")" != "$want" ]; then
                why="with $ST: got '$(sig "$how")', want '$want'"
            fi
        fi ;;
    gap:*)
        n_gap=$((n_gap + 1))
        run "" "$file" "$how"
        got=$(signature "$tmp/out")
        if [ "$(cat "$tmp/rc")" != 0 ]; then
            why="exit $(cat "$tmp/rc"): $(head -n 1 "$tmp/err")"
        elif [ "$got" = "$want" ]; then
            why="the known gap is closed (${expect#gap:}): flip the row to ok"
        elif [ "$(echo "$got" | cut -d' ' -f1,2,4,5)" != "$(echo "$want" | cut -d' ' -f1,2,4,5)" ]; then
            why="got '$got', want '$want' (only the quantization is a known gap)"
        else
            echo "known gap: $file: ${expect#gap:} (got '$got', want '$want')"
        fi ;;
    refuse:* | error:*)
        case $expect in refuse:*) n_refuse=$((n_refuse + 1)) ;; *) n_error=$((n_error + 1)) ;; esac
        run "" "$file" "$how"
        one_line_error "${expect#*:}" || why="want one line with '${expect#*:}', got exit $(cat "$tmp/rc"): $(head -n 2 "$tmp/err")" ;;
    *) why="bad expect '$expect'" ;;
    esac
    if [ -n "$why" ]; then
        echo "FAIL: $file ($how): $why"
        fail=$((fail + 1))
    fi
done <<'TABLE'
# accelerate configs (examples/accelerate, examples/ktransformers/accelerate): run with --accelerate
examples/accelerate/fsdp2_config.yaml                | accel | ok | sft full - fsdp2-full_shard | 2
examples/accelerate/fsdp2_config_qwen35.yaml         | accel | ok | sft full - fsdp2-full_shard | 8
examples/accelerate/fsdp2_config_qwen35_moe.yaml     | accel | ok | sft full - fsdp2-full_shard | 8
examples/accelerate/fsdp_config.yaml                 | accel | ok | sft full - fsdp1-full_shard | 2
examples/accelerate/fsdp_config_multiple_nodes.yaml  | accel | ok | sft full - fsdp1-full_shard | 16
examples/accelerate/fsdp_config_offload.yaml         | accel | ok | sft full - fsdp1-full_shard | 2
examples/ktransformers/accelerate/fsdp2_kt_bf16.yaml      | accel | ok | sft full - fsdp2-full_shard | 4
examples/ktransformers/accelerate/fsdp2_kt_int4.yaml      | accel | ok | sft full - fsdp2-full_shard | 4
examples/ktransformers/accelerate/fsdp2_kt_int8.yaml      | accel | ok | sft full - fsdp2-full_shard | 4
examples/ktransformers/accelerate/fsdp2_kt_int8_1gpu.yaml | accel | ok | sft full - fsdp2-full_shard | 1
examples/ktransformers/accelerate/fsdp2_kt_int8_8gpu.yaml | accel | ok | sft full - fsdp2-full_shard | 8
# DeepSpeed configs: run with --deepspeed on 2 GPUs
examples/deepspeed/ds_z0_config.json          | ds | ok | sft full - zero0 | 2
examples/deepspeed/ds_z2_autotp_config.json   | ds | ok | sft full - zero2+tp2 | 2
examples/deepspeed/ds_z2_config.json          | ds | ok | sft full - zero2 | 2
examples/deepspeed/ds_z2_offload_config.json  | ds | ok | sft full - zero2+offopt | 2
examples/deepspeed/ds_z3_config.json          | ds | ok | sft full - zero3 | 2
examples/deepspeed/ds_z3_fp8_config.json      | ds | ok | sft full - zero3+offopt | 2
examples/deepspeed/ds_z3_offload_config.json  | ds | ok | sft full - zero3+offopt+offparam | 2
# ascend: launched with the accelerate config their header comment names
examples/ascend/qwen3_5_full_sft_fsdp2.yaml      | acc=examples/accelerate/fsdp2_config.yaml | ok    | sft full - fsdp2-full_shard | 2
examples/ascend/qwen3_5moe_lora_sft_fsdp2.yaml   | acc=examples/accelerate/fsdp2_config.yaml | ok    | sft lora - fsdp2-full_shard | 2
examples/ascend/qwen3_full_sft_fsdp2.yaml        | acc=examples/accelerate/fsdp2_config.yaml | ok    | sft full - fsdp2-full_shard | 2
examples/ascend/qwen3moe_full_sft_fsdp.yaml      | acc=examples/accelerate/fsdp_config.yaml  | ok    | sft full - fsdp1-full_shard | 2
examples/ascend/qwen3vlmoe_full_sft_fsdp2.yaml   | acc=examples/accelerate/fsdp2_config.yaml | ok    | sft full - fsdp2-full_shard | 2
examples/ascend/qwen3vlmoe_lora_sft_fsdp.yaml    | acc=examples/accelerate/fsdp_config.yaml  | ok    | sft lora - fsdp1-full_shard | 2
# extras
examples/extras/adam_mini/qwen2_full_sft.yaml        | - | ok    | sft full - single | 1
examples/extras/apollo/llama3_full_sft.yaml          | - | ok    | sft full - single | 1
examples/extras/asft/llama2_full_asft.yaml           | - | ok    | sft full - zero0 | 1
examples/extras/asft/qwen2_full_asft.yaml            | - | ok    | sft full - zero0 | 1
examples/extras/badam/llama3_full_sft.yaml           | - | ok    | sft full - single | 1
examples/extras/dft/qwen2_full_sft.yaml              | - | ok    | sft full - single | 1
examples/extras/eaft/qwen25_05b_eaft_full.yaml       | - | ok    | sft full - single | 1
examples/extras/fp8/llama3_fp8_deepspeed_sft.yaml    | - | ok    | sft full - zero3+offopt | 1
examples/extras/fp8/llama3_fp8_fsdp_sft.yaml         | - | ok    | sft full - fsdp1-full_shard | 1
examples/extras/fsdp_qlora/llama3_lora_sft.yaml      | acc=examples/accelerate/fsdp_config.yaml | ok | sft qlora 4 fsdp1-full_shard | 2
examples/extras/galore/llama3_full_sft.yaml          | - | ok    | sft full - single | 1
examples/extras/llama_pro/llama3_freeze_sft.yaml     | - | model | sft freeze - single | 1
examples/extras/loraplus/llama3_lora_sft.yaml        | - | ok    | sft lora - single | 1
examples/extras/mod/llama3_full_sft.yaml             | - | ok    | sft full - single | 1
examples/extras/multi_tokens/tokens_cfg.yaml         | - | error:not a training YAML
examples/extras/muon/qwen2_full_sft.yaml             | - | ok    | sft full - single | 1
examples/extras/nlg_eval/llama3_lora_predict.yaml    | - | ok    | sft lora - single | 1
examples/extras/oft/llama3_oft_sft.yaml              | - | ok    | sft lora - single | 1
examples/extras/oft/qwen2_5vl_oft_sft.yaml           | - | ok    | sft lora - single | 1
examples/extras/pissa/llama3_lora_sft.yaml           | - | ok    | sft lora - single | 1
examples/extras/qoft/llama3_oft_sft_awq.yaml         | - | ok    | sft lora awq single | 1
examples/extras/qoft/llama3_oft_sft_bnb_npu.yaml     | - | ok    | sft qlora 4 single | 1
examples/extras/qoft/llama3_oft_sft_gptq.yaml        | - | ok    | sft lora gptq single | 1
# inference configs: `memledger infer --config` (infer_backend huggingface; bf16 checkpoints); the
# same files as `train --config` are refused, pointing to infer; the LoRA and VL ones also under vllm
examples/inference/mossvl.yaml          | infer | model | infer hf bf16 - tp1
examples/inference/qwen3.yaml           | infer | ok    | infer hf bf16 - tp1
examples/inference/qwen3_full_sft.yaml  | infer | model | infer hf bf16 - tp1
examples/inference/qwen3_lora_sft.yaml  | infer | ok    | infer hf bf16 - tp1
examples/inference/qwen3vl.yaml         | infer | ok    | infer hf bf16 - tp1
examples/inference/qwen3_lora_sft.yaml  | infer,eng=vllm | ok | infer vllm bf16 - tp1
examples/inference/qwen3vl.yaml         | infer,eng=vllm | ok | infer vllm bf16 - tp1
examples/inference/qwen3.yaml           | -     | error:its serving memory is 'memledger infer --config
# export configs: not training runs
examples/merge_lora/mossvl_lora_sft.yaml   | - | error:an export config
examples/merge_lora/qwen3_full_sft.yaml    | - | error:an export config
examples/merge_lora/qwen3_gptq.yaml        | - | error:an export config
examples/merge_lora/qwen3_lora_sft.yaml    | - | error:an export config
examples/merge_lora/qwen3vl_lora_sft.yaml  | - | error:an export config
# KTransformers and Megatron: refused, naming the key
examples/ktransformers/train_lora/deepseek_v2_lora_sft_kt.yaml       | - | refuse:'use_kt'
examples/ktransformers/train_lora/deepseek_v3_int8_lora_sft_kt.yaml  | - | refuse:'use_kt'
examples/ktransformers/train_lora/deepseek_v3_lora_sft_kt.yaml       | - | refuse:'use_kt'
examples/ktransformers/train_lora/qwen3_5moe_lora_sft_kt.yaml        | - | refuse:'use_kt'
examples/ktransformers/train_lora/qwen3moe_lora_sft_kt.yaml          | - | refuse:'use_kt'
examples/ktransformers/train_lora/qwen3vlmoe_lora_sft_kt.yaml        | - | refuse:'use_kt'
examples/megatron/qwen2_vl_full.yaml       | - | refuse:'tensor_model_parallel_size': Megatron-Core
examples/megatron/qwen3_moe_full.yaml      | - | refuse:'tensor_model_parallel_size': Megatron-Core
examples/megatron_bridge/llama3_sft.yaml   | - | refuse:'tensor_model_parallel_size': Megatron-Core
# train_full, train_lora, train_qlora
examples/train_full/mossvl_full_sft.yaml       | - | model | sft full - zero3 | 1
examples/train_full/qwen3_full_sft.yaml        | - | ok    | sft full - zero3 | 1
examples/train_full/qwen3vl_full_sft.yaml      | - | ok    | sft full - zero3 | 1
examples/train_lora/mossvl_lora_sft.yaml       | - | model | sft lora - single | 1
examples/train_lora/qwen3_lora_dpo.yaml        | - | ok    | dpo lora - single | 1
examples/train_lora/qwen3_lora_kto.yaml        | - | ok    | kto lora - single | 1
examples/train_lora/qwen3_lora_pretrain.yaml   | - | ok    | pt lora - single | 1
examples/train_lora/qwen3_lora_reward.yaml     | - | ok    | rm lora - single | 1
examples/train_lora/qwen3_lora_sft.yaml        | - | ok    | sft lora - single | 1
examples/train_lora/qwen3_lora_sft_ds3.yaml    | - | ok    | sft lora - zero3 | 1
examples/train_lora/qwen3_lora_sft_ray.yaml    | - | ok    | sft lora - single | 1
examples/train_lora/qwen3_preprocess.yaml      | - | ok    | sft lora - single | 1
examples/train_lora/qwen3vl_lora_dpo.yaml      | - | ok    | dpo lora - single | 1
examples/train_lora/qwen3vl_lora_sft.yaml      | - | ok    | sft lora - single | 1
examples/train_qlora/llama3_lora_sft_aqlm.yaml   | - | refuse:AQLM checkpoints
examples/train_qlora/llama3_lora_sft_awq.yaml    | - | ok    | sft lora awq single | 1
examples/train_qlora/llama3_lora_sft_gptq.yaml   | - | ok    | sft lora gptq single | 1
examples/train_qlora/qwen3_lora_sft_bnb_npu.yaml | - | ok    | sft qlora 4 single | 1
examples/train_qlora/qwen3_lora_sft_otfq.yaml    | - | ok    | sft qlora 4 single | 1
# the v1 schema (the stage is the command: llamafactory-cli dpo for the DPO file)
examples/v1/train_batching_strategy/train_full_fsdp2_batching_normal.yaml       | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_batching_strategy/train_full_fsdp2_dynamic_batching.yaml      | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_batching_strategy/train_full_fsdp2_dynamic_padding_free.yaml  | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_batching_strategy/train_full_fsdp2_padding_free.yaml          | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_freeze/train_freeze_sft.yaml              | - | ok | sft freeze - fsdp2-full_shard | 1
examples/v1/train_full/train_full_deepspeed.yaml            | - | ok | sft full - zero3 | 1
examples/v1/train_full/train_full_fsdp2.yaml                | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_full/train_full_liger_kernel.yaml         | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_full/train_full_muon.yaml                 | - | ok | sft full - fsdp2-full_shard | 1
examples/v1/train_full/train_full_qwen3_moe_fsdpturbo_ep_fsdp.yaml | - | refuse:'dist_config.name' fsdpturbo
examples/v1/train_full/train_full_ulysses_cp.yaml           | gpus=2 | ok | sft full - fsdp2-full_shard+cp2 | 2
examples/v1/train_full/train_multimodal.yaml                | - | ok    | sft full - fsdp2-full_shard | 1
examples/v1/train_lora/export_lora.yaml                     | - | error:an export config
examples/v1/train_lora/train_lora_dpo.yaml                  | lf=dpo | ok | dpo lora - fsdp2-full_shard | 1
examples/v1/train_lora/train_lora_sft.yaml                  | - | ok | sft lora - fsdp2-full_shard | 1
examples/v1/train_lora/train_lora_sft_rank0.yaml            | - | ok | sft lora - fsdp2-full_shard | 1
examples/v1/train_qlora/quantization.yaml                   | - | ok | sft qlora 4 fsdp2-full_shard | 1
TABLE

# Every YAML and JSON of the copy has its row (a new example must be added to the table).
find examples -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) | sort >"$tmp/all"
sort "$listed" | comm -23 "$tmp/all" - >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    sed 's/^/FAIL: no row for /' "$tmp/missing"
    fail=$((fail + $(wc -l <"$tmp/missing")))
fi
echo "examples: $n files: $n_ok ledgers, $n_gap ledgers with a known gap, $n_model unknown models (checked with a stand-in), $n_refuse refused naming the key, $n_error other one-line errors; $fail failed"
[ "$fail" -eq 0 ]
