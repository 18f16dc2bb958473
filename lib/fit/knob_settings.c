/*
 * knob_settings.c - the settings the knobs write (fit.h enum ml_setting), each named once per
 * framework dialect, and how a dialect spells their values (knobs.h). Pure: no I/O, no allocation.
 */
#include <stdio.h>
#include <string.h>

#include "i18n.h"
#include "knobs.h"

/* Each setting once, with its name in every dialect that has it. Sources: LLaMA-Factory
 * src/llamafactory/hparams/{model,data,finetuning}_args.py; transformers TrainingArguments
 * (training_args.py); DeepSpeed runtime/zero/config.py (DeepSpeedZeroConfig); vLLM
 * engine/arg_utils.py (EngineArgs, whose fields `vllm serve` takes as --kebab-case flags:
 * EngineArgs.add_cli_args, --tensor-parallel-size, --kv-cache-dtype auto|fp8|fp8_e5m2|fp8_e4m3,
 * --gpu-memory-utilization, --max-model-len, --max-num-seqs, --max-num-batched-tokens,
 * --quantization); SGLang python/sglang/srt/server_args.py (ServerArgs: each field is the flag of
 * its name, tp_size -> --tp-size; mem_fraction_static, context_length, max_running_requests,
 * chunked_prefill_size, kv_cache_dtype auto|fp8_e5m2|fp8_e4m3|..., quantization). SGLang has no
 * switch for chunked prefill (on by default; chunked_prefill_size sets its tokens) and no
 * gpu_memory_utilization (mem_fraction_static covers the weights and the KV pool only). TGI:
 * text-generation-launcher's Args (launcher/src/main.rs), each field the flag of its name. */
const struct ml_knob_setting ml_settings[ML_SET_COUNT] = {
    [ML_SET_ALLOC_CONF] = {ML_IN_ENV, V_TEXT, {[ML_DIALECT_ENV] = "PYTORCH_CUDA_ALLOC_CONF"}},
    /* TRL: ModelConfig attn_implementation, max_length of SFTConfig / DPOConfig, ModelConfig lora_r
     * and load_in_4bit (trl/trainer/model_config.py, sft_config.py, dpo_config.py); the rest are
     * TrainingArguments fields, as for the HF Trainer. */
    /* The attention kernel is a from_pretrained argument (attn_implementation), no
     * TrainingArguments field; ms-swift's --attn_impl (swift/llm/argument/base_args/model_args.py,
     * ModelArguments). torchtune's and LitGPT's models call SDPA themselves: no key. */
    [ML_SET_FLASH_ATTN] = {ML_IN_YAML,
                           V_TEXT,
                           {[ML_DIALECT_LF] = "flash_attn",
                            [ML_DIALECT_TRL] = "attn_implementation",
                            [ML_DIALECT_SWIFT] = "attn_impl",
                            [ML_DIALECT_INFER] = "attn_implementation"}},
    /* use_liger_kernel is a TrainingArguments field (ms-swift's arguments derive from it). */
    [ML_SET_LIGER] = {ML_IN_YAML,
                      V_BOOL,
                      {[ML_DIALECT_LF] = "enable_liger_kernel",
                       [ML_DIALECT_HF] = "use_liger_kernel",
                       [ML_DIALECT_TRL] = "use_liger_kernel",
                       [ML_DIALECT_SWIFT] = "use_liger_kernel"}},
    /* torchtune instantiates optimizer._component_ (recipes/configs/llama3/8B_full_single_device.yaml:
     * bitsandbytes.optim.PagedAdamW8bit); only the values spelled below have a torchtune name. */
    [ML_SET_OPTIM] = {ML_IN_YAML,
                      V_TEXT,
                      {[ML_DIALECT_LF] = "optim",
                       [ML_DIALECT_HF] = "optim",
                       [ML_DIALECT_TRL] = "optim",
                       [ML_DIALECT_SWIFT] = "optim",
                       [ML_DIALECT_TORCHTUNE] = "optimizer._component_"}},
    /* torchtune recipes: batch_size, gradient_accumulation_steps (recipes/configs/llama3/
     * 8B_lora_single_device.yaml); LitGPT: train.micro_batch_size (litgpt/args.py TrainArgs), whose
     * accumulation follows from train.global_batch_size (TrainArgs.gradient_accumulation_iters):
     * no key to write. */
    [ML_SET_MICRO_BATCH] = {ML_IN_YAML,
                            V_COUNT,
                            {[ML_DIALECT_LF] = "per_device_train_batch_size",
                             [ML_DIALECT_HF] = "per_device_train_batch_size",
                             [ML_DIALECT_TRL] = "per_device_train_batch_size",
                             [ML_DIALECT_SWIFT] = "per_device_train_batch_size",
                             [ML_DIALECT_TORCHTUNE] = "batch_size",
                             [ML_DIALECT_LITGPT] = "train.micro_batch_size"}},
    [ML_SET_GRAD_ACCUM] = {ML_IN_YAML,
                           V_COUNT,
                           {[ML_DIALECT_LF] = "gradient_accumulation_steps",
                            [ML_DIALECT_HF] = "gradient_accumulation_steps",
                            [ML_DIALECT_TRL] = "gradient_accumulation_steps",
                            [ML_DIALECT_SWIFT] = "gradient_accumulation_steps",
                            [ML_DIALECT_TORCHTUNE] = "gradient_accumulation_steps"}},
    /* LLaMA-Factory turns checkpointing on unless disable_gradient_checkpointing (model_args.py;
     * model/model_utils/checkpointing.py prepare_model_for_training); the HF Trainer only when
     * gradient_checkpointing is true; ms-swift's TrainArguments too.
     * torchtune: enable_activation_checkpointing (its recipes' key); LitGPT's finetune scripts have
     * no switch for it. */
    [ML_SET_GRAD_CKPT] = {ML_IN_YAML,
                          V_NOT,
                          {[ML_DIALECT_LF] = "disable_gradient_checkpointing",
                           [ML_DIALECT_HF] = "gradient_checkpointing",
                           [ML_DIALECT_TRL] = "gradient_checkpointing",
                           [ML_DIALECT_SWIFT] = "gradient_checkpointing",
                           [ML_DIALECT_TORCHTUNE] = "enable_activation_checkpointing"}},
    [ML_SET_UNSLOTH_GC] = {ML_IN_YAML, V_BOOL, {[ML_DIALECT_LF] = "use_unsloth_gc"}},
    /* The HF Trainer has no sequence length, LoRA rank or quantization among TrainingArguments
     * (the script's tokenizer, PEFT's LoraConfig and from_pretrained's BitsAndBytesConfig hold
     * them): no key. ms-swift: max_length, lora_rank (examples/train/); its 4-bit loading needs
     * quant_method and quant_bits together (QuantizeArguments), which one setting cannot say.
     * torchtune: tokenizer.max_seq_len, model.lora_rank; QLoRA is another model builder
     * (qlora_llama3_8b), no key. LitGPT: train.max_seq_length, lora_r, quantize bnb.nf4
     * (config_hub/finetune/llama-3-8b/qlora.yaml). */
    [ML_SET_CUTOFF] = {ML_IN_YAML,
                       V_COUNT,
                       {[ML_DIALECT_LF] = "cutoff_len",
                        [ML_DIALECT_TRL] = "max_length",
                        [ML_DIALECT_SWIFT] = "max_length",
                        [ML_DIALECT_TORCHTUNE] = "tokenizer.max_seq_len",
                        [ML_DIALECT_LITGPT] = "train.max_seq_length"}},
    [ML_SET_LORA_RANK] = {ML_IN_YAML,
                          V_COUNT,
                          {[ML_DIALECT_LF] = "lora_rank",
                           [ML_DIALECT_TRL] = "lora_r",
                           [ML_DIALECT_SWIFT] = "lora_rank",
                           [ML_DIALECT_TORCHTUNE] = "model.lora_rank",
                           [ML_DIALECT_LITGPT] = "lora_r"}},
    [ML_SET_QUANT_BIT] =
        {ML_IN_YAML,
         V_COUNT,
         {[ML_DIALECT_LF] = "quantization_bit", [ML_DIALECT_TRL] = "load_in_4bit", [ML_DIALECT_LITGPT] = "quantize"}},
    /* ms-swift's --deepspeed takes zero2 / zero3 for its own configs (examples/train/tiled_mlp/
     * train_deepspeed.sh) or a path; torchtune and LitGPT shard with FSDP: no DeepSpeed key. */
    [ML_SET_DEEPSPEED] = {ML_IN_YAML,
                          V_STAGE,
                          {[ML_DIALECT_LF] = "deepspeed",
                           [ML_DIALECT_HF] = "deepspeed",
                           [ML_DIALECT_TRL] = "deepspeed",
                           [ML_DIALECT_SWIFT] = "deepspeed"}},
    [ML_SET_ZERO_STAGE] = {ML_IN_DEEPSPEED, V_STAGE, {[ML_DIALECT_DEEPSPEED] = "stage"}},
    [ML_SET_OFFLOAD_OPT] = {ML_IN_DEEPSPEED, V_DEVICE, {[ML_DIALECT_DEEPSPEED] = "offload_optimizer"}},
    [ML_SET_OFFLOAD_PARAM] = {ML_IN_DEEPSPEED, V_DEVICE, {[ML_DIALECT_DEEPSPEED] = "offload_param"}},
    [ML_SET_OVERLAP_COMM] = {ML_IN_DEEPSPEED, V_BOOL, {[ML_DIALECT_DEEPSPEED] = "overlap_comm"}},
    [ML_SET_REDUCE_BUCKET] = {ML_IN_DEEPSPEED, V_SIZE, {[ML_DIALECT_DEEPSPEED] = "reduce_bucket_size"}},
    [ML_SET_PREFETCH_BUCKET] = {ML_IN_DEEPSPEED, V_SIZE, {[ML_DIALECT_DEEPSPEED] = "stage3_prefetch_bucket_size"}},
    [ML_SET_PERSISTENCE] = {ML_IN_DEEPSPEED, V_SIZE, {[ML_DIALECT_DEEPSPEED] = "stage3_param_persistence_threshold"}},
    [ML_SET_MAX_REUSE] = {ML_IN_DEEPSPEED, V_SIZE, {[ML_DIALECT_DEEPSPEED] = "stage3_max_reuse_distance"}},
    [ML_SET_MAX_LIVE] = {ML_IN_DEEPSPEED, V_SIZE, {[ML_DIALECT_DEEPSPEED] = "stage3_max_live_parameters"}},
    [ML_SET_GATHER16] = {ML_IN_DEEPSPEED,
                         V_BOOL,
                         {[ML_DIALECT_DEEPSPEED] = "stage3_gather_16bit_weights_on_model_save"}},
    [ML_SET_GPUS_PER_NODE] = {ML_IN_LAUNCH, V_COUNT, {[ML_DIALECT_LAUNCH] = N_("GPUs per node")}},
    [ML_SET_GPU_UTIL] = {ML_IN_ENGINE,
                         V_SHARE,
                         {[ML_DIALECT_ENGINE] = "gpu_memory_utilization",
                          [ML_DIALECT_VLLM] = "--gpu-memory-utilization",
                          [ML_DIALECT_TGI] = "--cuda-memory-fraction"}},
    [ML_SET_KV_DTYPE] = {ML_IN_ENGINE,
                         V_TEXT,
                         {[ML_DIALECT_ENGINE] = "kv_cache_dtype",
                          [ML_DIALECT_VLLM] = "--kv-cache-dtype",
                          [ML_DIALECT_SGLANG] = "--kv-cache-dtype"}},
    [ML_SET_TP] = {ML_IN_ENGINE,
                   V_COUNT,
                   {[ML_DIALECT_ENGINE] = "tensor_parallel_size",
                    [ML_DIALECT_VLLM] = "--tensor-parallel-size",
                    [ML_DIALECT_SGLANG] = "--tp-size",
                    [ML_DIALECT_TGI] = "--num-shard"}},
    [ML_SET_QUANTIZATION] = {ML_IN_ENGINE,
                             V_TEXT,
                             {[ML_DIALECT_ENGINE] = "quantization",
                              [ML_DIALECT_VLLM] = "--quantization",
                              [ML_DIALECT_SGLANG] = "--quantization",
                              [ML_DIALECT_TGI] = "--quantize"}},
    [ML_SET_MAX_NUM_SEQS] = {ML_IN_ENGINE,
                             V_COUNT,
                             {[ML_DIALECT_ENGINE] = "max_num_seqs",
                              [ML_DIALECT_VLLM] = "--max-num-seqs",
                              [ML_DIALECT_SGLANG] = "--max-running-requests"}},
    [ML_SET_MAX_BATCHED_TOKENS] = {ML_IN_ENGINE,
                                   V_COUNT,
                                   {[ML_DIALECT_ENGINE] = "max_num_batched_tokens",
                                    [ML_DIALECT_VLLM] = "--max-num-batched-tokens",
                                    [ML_DIALECT_SGLANG] = "--chunked-prefill-size",
                                    [ML_DIALECT_TGI] = "--max-batch-prefill-tokens"}},
    [ML_SET_CHUNKED_PREFILL] =
        {ML_IN_ENGINE,
         V_FLAG,
         {[ML_DIALECT_ENGINE] = "enable_chunked_prefill", [ML_DIALECT_VLLM] = "--enable-chunked-prefill"}},
    [ML_SET_MAX_MODEL_LEN] = {ML_IN_ENGINE,
                              V_COUNT,
                              {[ML_DIALECT_ENGINE] = "max_model_len",
                               [ML_DIALECT_VLLM] = "--max-model-len",
                               [ML_DIALECT_SGLANG] = "--context-length",
                               [ML_DIALECT_TGI] = "--max-total-tokens"}},
    [ML_SET_MEM_FRACTION] = {ML_IN_ENGINE, V_SHARE, {[ML_DIALECT_SGLANG] = "--mem-fraction-static"}},
    /* DeepSpeed's top-level batch keys, which transformers fills from TrainingArguments when
     * "auto" and checks against them when not (integrations/deepspeed.py
     * HfTrainerDeepSpeedConfig.trainer_config_process): fit writes only "auto" to them. */
    [ML_SET_DS_MICRO_BATCH] = {ML_IN_DEEPSPEED, V_TEXT, {[ML_DIALECT_DEEPSPEED] = "train_micro_batch_size_per_gpu"}},
    [ML_SET_DS_GRAD_ACCUM] = {ML_IN_DEEPSPEED, V_TEXT, {[ML_DIALECT_DEEPSPEED] = "gradient_accumulation_steps"}},
    [ML_SET_DS_TRAIN_BATCH] = {ML_IN_DEEPSPEED, V_TEXT, {[ML_DIALECT_DEEPSPEED] = "train_batch_size"}},
};

/* Values a dialect spells its own way. */
static const struct {
    enum ml_setting set;
    enum ml_dialect d;
    const char *value, *spelled;
} values[] = {
    {ML_SET_KV_DTYPE, ML_DIALECT_SGLANG, "fp8", "fp8_e4m3"}, /* vLLM's fp8 is fp8_e4m3 (arg_utils.py help) */
    /* TRL ModelConfig attn_implementation takes transformers' names; load_in_4bit is a switch. */
    {ML_SET_FLASH_ATTN, ML_DIALECT_TRL, "fa2", "flash_attention_2"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_TRL, "disabled", "eager"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_TRL, "auto", "sdpa"},
    {ML_SET_QUANT_BIT, ML_DIALECT_TRL, "4", "true"},
    {ML_SET_QUANT_BIT, ML_DIALECT_TRL, "none", "false"},
    /* ms-swift --attn_impl flash_attn | sdpa | eager; transformers' attn_implementation names. */
    {ML_SET_FLASH_ATTN, ML_DIALECT_SWIFT, "fa2", "flash_attn"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_SWIFT, "disabled", "eager"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_INFER, "fa2", "flash_attention_2"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_INFER, "disabled", "eager"},
    {ML_SET_FLASH_ATTN, ML_DIALECT_INFER, "auto", "sdpa"},
    /* LitGPT --quantize bnb.nf4 (litgpt/finetune/lora.py, config_hub/finetune/.../qlora.yaml). */
    {ML_SET_QUANT_BIT, ML_DIALECT_LITGPT, "4", "bnb.nf4"},
    {ML_SET_QUANT_BIT, ML_DIALECT_LITGPT, "none", "null"},
    {ML_SET_DEEPSPEED, ML_DIALECT_SWIFT, "ZeRO-3", "zero3"},
    {ML_SET_DEEPSPEED, ML_DIALECT_SWIFT, "ZeRO-2", "zero2"},
    /* torchtune's optimizer is a class path: only these have one (torch.optim, bitsandbytes). */
    {ML_SET_OPTIM, ML_DIALECT_TORCHTUNE, "adamw_torch", "torch.optim.AdamW"},
    {ML_SET_OPTIM, ML_DIALECT_TORCHTUNE, "adamw_bnb_8bit", "bitsandbytes.optim.AdamW8bit"},
    {ML_SET_OPTIM, ML_DIALECT_TORCHTUNE, "paged_adamw_8bit", "bitsandbytes.optim.PagedAdamW8bit"},
    {ML_SET_OPTIM, ML_DIALECT_TORCHTUNE, NULL, NULL}, /* closed: any other value has no spelling */
};

/* The spelling of value in dialect d; NULL where d spells only the values listed and value is
 * not one of them. */
const char *ml_setting_spelled(enum ml_setting s, enum ml_dialect d, const char *value)
{
    bool closed = false;
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        if (values[i].set != s || values[i].d != d)
            continue;
        if (!values[i].value)
            closed = true;
        else if (value && !strcmp(value, values[i].value))
            return values[i].spelled;
    }
    return closed ? NULL : value;
}

/* Whether dialect d can write value v (as given, or already in d's own spelling). */
bool ml_setting_spellable(enum ml_setting s, enum ml_dialect d, const char *v)
{
    if (ml_setting_spelled(s, d, v))
        return true;
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        if (values[i].set == s && values[i].d == d && values[i].spelled && v && !strcmp(v, values[i].spelled))
            return true;
    return false;
}

const char *ml_setting_value(enum ml_setting s, enum ml_dialect d, const char *value)
{
    const char *v = ml_setting_spelled(s, d, value);
    return v ? v : value;
}

const char *ml_where_name(enum ml_where w)
{
    switch (w) {
    case ML_IN_ENV: return "env";
    case ML_IN_YAML: return "yaml";
    case ML_IN_DEEPSPEED: return "deepspeed";
    case ML_IN_LAUNCH: return "launch";
    case ML_IN_ENGINE: return "engine";
    }
    return "?";
}

const char *ml_setting_name(enum ml_setting s, enum ml_dialect d)
{
    return (unsigned)s < ML_SET_COUNT && (unsigned)d < ML_DIALECT_COUNT ? ml_settings[s].name[d] : NULL;
}

enum ml_dialect ml_train_dialect(const struct ml_train *t)
{
    if (!t)
        return ML_DIALECT_LF;
    if (t->trainer == ML_TRAINER_MS_SWIFT)
        return ML_DIALECT_SWIFT;
    switch (t->framework) {
    case ML_FW_HF: return ML_DIALECT_HF;
    case ML_FW_TRL: return ML_DIALECT_TRL;
    case ML_FW_TORCHTUNE: return ML_DIALECT_TORCHTUNE;
    case ML_FW_LITGPT: return ML_DIALECT_LITGPT;
    case ML_FW_LLAMAFACTORY:
    case ML_FW_COUNT: break;
    }
    return ML_DIALECT_LF;
}

/* The dialect a change's key is written in (what fit patches): the run's trainer for YAML. */
enum ml_dialect ml_file_dialect(enum ml_where w, const struct ml_train *t)
{
    switch (w) {
    case ML_IN_ENV: return ML_DIALECT_ENV;
    case ML_IN_YAML: return ml_train_dialect(t);
    case ML_IN_DEEPSPEED: return ML_DIALECT_DEEPSPEED;
    case ML_IN_LAUNCH: return ML_DIALECT_LAUNCH;
    case ML_IN_ENGINE: return ML_DIALECT_ENGINE;
    }
    return ML_DIALECT_LF;
}
