/*
 * train_yaml.c - a LLaMA-Factory training YAML (and --set KEY=VALUE) -> struct ml_train.
 *
 * The YAML is read with libyaml's event API, never into a tree: the top level must be a
 * mapping of scalar keys, each key is looked up in one table (key_table) that says how its
 * value maps onto struct ml_train, and nested values are skipped unless a key takes them
 * (fsdp_config, a list for lora_target). Anchors and aliases are refused (no alias bombs),
 * nesting is capped at 32 levels and input at 4 MiB.
 *
 * Settings that depend on several keys (precision, method, gradient checkpointing, packing,
 * the padded sequence length) are collected in struct pending and resolved once the whole
 * input is read, so the order of the keys never matters. Everything is applied to a copy of
 * the caller's struct, which is written back only when the whole input is valid.
 *
 * Value rules follow YAML 1.1 as PyYAML/OmegaConf read it (true/false/yes/no/on/off), and
 * accept numbers written 1e9, 1_000 or "2048" the way hand-written configs do. The sources:
 * LLaMA-Factory hparams/{model_args,data_args,finetuning_args,parser}.py and
 * model/model_utils/{checkpointing,attention}.py (docs/train-config.md lists every key).
 */
#include "memledger/train.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "i18n.h"
#include "memledger/edit.h"
#include "memledger/units.h"
#include "yaml_text.h"
#include "yaml_walk.h"

/* A training YAML is a few KiB; anything past this is not one. */
#define YAML_MAX_BYTES ((size_t)4 << 20)
#define YAML_MAX_DEPTH 32
#define KEY_MAX        128  /* longer keys cannot be known ones (still checked for duplicates) */
#define LIST_MAX       1024 /* a YAML list value joined into one string (lora_target: [...]) */
#define SEEN_MAX       512  /* keys remembered for the duplicate check */
#define UNKNOWN_MAX    8    /* unknown keys named in the warning */

/* Upper bounds that catch absurd values before they reach the arithmetic. */
#define MAX_BATCH  ((uint64_t)1 << 20)
#define MAX_ACCUM  ((uint64_t)1 << 24)
#define MAX_CUTOFF ((uint64_t)1 << 26)
#define MAX_RANK   ((uint64_t)1 << 20)

/* ---- the key table ---------------------------------------------------------------------- */

enum kind {
    K_IGNORE, /* known, no effect on memory */
    K_BOOL,   /* a bool field of struct ml_train */
    K_POS,    /* a uint64_t field, 1..max */
    K_U32,    /* a uint32_t field, 0..max */
    K_WARN,   /* changes memory but is not modelled: warn unless the value is off (or quiet) */
    K_REFUSE, /* changes memory in a way memledger cannot model: a one-line error naming the key,
                 unless the value is quiet (quiet NULL: whatever the value) */
    K_SPECIAL /* handled by apply_special() */
};

enum special {
    S_NONE,
    S_MODEL,
    S_STAGE,
    S_FT,
    S_LORA_TARGET,
    S_LORA_DROPOUT,
    S_ADDITIONAL,
    S_FREEZE_LAYERS,
    S_QBIT,
    S_QMETHOD,
    S_CUTOFF,
    S_PACKING,
    S_NEAT,
    S_EVAL_STRATEGY,
    S_BF16,
    S_FP16,
    S_PURE_BF16,
    S_FLASH,
    S_HF_GC,
    S_DISABLE_GC,
    S_UNSLOTH_GC,
    S_REENTRANT_GC,
    S_OPTIM,
    S_GALORE,
    S_DEEPSPEED,
    S_FSDP,
    S_FSDP_CONFIG,
    S_SAVE_STEPS,
    S_EVAL_STEPS,
    /* run settings of the framework stack (special_run; docs/train-config.md) */
    S_BNB_VERSION,
    S_PEFT_VERSION,
    S_HEAD,
    S_KBIT_PREPARE,
    S_EMPTY_CACHE,
    S_TRAINER,
    /* stages (special_stage) */
    S_PREF_LOSS,
    S_REF_MODEL,
    S_REF_QBIT,
    S_REWARD_MODEL,
    S_REWARD_TYPE,
    S_REWARD_QBIT,
    S_MAX_NEW,
    S_NUM_GEN,
    S_STEPS_PER_GEN,
    S_BETA,
    S_PRECOMPUTE,
    S_USE_VLLM,
    S_VLLM_MODE,
    S_VLLM_UTIL,
    /* context parallelism (v0 hyper_parallel_cp_size, v1 cp_size) */
    S_CP_SIZE,
    /* TRL's own keys under --framework trl (special_trl) */
    S_TRL,
    /* vision-language training (special_vlm) */
    S_FREEZE_VISION,
    S_FREEZE_PROJ,
    S_FREEZE_LANG,
    S_IMG_MAX,
    S_IMG_MIN,
    S_VID_MAX,
    S_VID_MIN,
    S_VID_FPS,
    S_VID_MAXLEN,
    S_IMAGES,
    S_VIDEOS,
    S_IMAGE_SIZE,
    S_VIDEO_SECONDS,
    /* the v1 schema (special_v1, the plugin mappings) */
    S_V1_PEFT,
    S_V1_QUANT,
    S_V1_DIST,
    S_V1_KERNEL,
    S_V1_OPTIM,
    S_V1_BATCHING,
    S_V1_ACT_CKPT
};

struct key_def {
    const char *key;
    enum kind kind;
    enum special id;   /* K_SPECIAL */
    size_t off;        /* K_BOOL, K_POS, K_U32: offsetof(struct ml_train, field) */
    uint64_t max;      /* K_POS, K_U32 */
    const char *note;  /* K_WARN: what the estimate leaves out */
    const char *quiet; /* K_WARN: a value that is the default and warns nothing (else: off) */
};

#define F(field) offsetof(struct ml_train, field)
#define SPECIAL(k, id)                                                                                                 \
    {                                                                                                                  \
        k, K_SPECIAL, id, 0, 0, NULL, NULL                                                                             \
    }
#define BOOLF(k, field)                                                                                                \
    {                                                                                                                  \
        k, K_BOOL, S_NONE, F(field), 0, NULL, NULL                                                                     \
    }
#define POS(k, field, mx)                                                                                              \
    {                                                                                                                  \
        k, K_POS, S_NONE, F(field), mx, NULL, NULL                                                                     \
    }
#define U32(k, field, mx)                                                                                              \
    {                                                                                                                  \
        k, K_U32, S_NONE, F(field), mx, NULL, NULL                                                                     \
    }
#define WARN(k, note)                                                                                                  \
    {                                                                                                                  \
        k, K_WARN, S_NONE, 0, 0, note, NULL                                                                            \
    }
#define WARNQ(k, quiet, note)                                                                                          \
    {                                                                                                                  \
        k, K_WARN, S_NONE, 0, 0, note, quiet                                                                           \
    }
#define IGN(k)                                                                                                         \
    {                                                                                                                  \
        k, K_IGNORE, S_NONE, 0, 0, NULL, NULL                                                                          \
    }
#define REFUSE(k, quiet, note)                                                                                         \
    {                                                                                                                  \
        k, K_REFUSE, S_NONE, 0, 0, note, quiet                                                                         \
    }
/* The Megatron-Core keys (LLaMA-Factory runs them only under USE_MCA=1 or use_megatron_bridge,
 * hparams/parser.py _parse_train_mca_args / megatron_bridge_args.py). */
#define MCORE(k)                                                                                                       \
    REFUSE(k, NULL,                                                                                                    \
           N_("Megatron-Core training (USE_MCA, use_megatron_bridge) is not modelled; "                                \
              "memledger models the HF Trainer with DeepSpeed or FSDP"))

static const struct key_def key_table[] = {
    /* model_args.py */
    SPECIAL("model_name_or_path", S_MODEL),
    SPECIAL("flash_attn", S_FLASH),
    SPECIAL("disable_gradient_checkpointing", S_DISABLE_GC),
    SPECIAL("use_unsloth_gc", S_UNSLOTH_GC),
    SPECIAL("use_reentrant_gc", S_REENTRANT_GC),
    BOOLF("upcast_layernorm", upcast_layernorm),
    BOOLF("upcast_lmhead_output", upcast_lmhead_output),
    BOOLF("enable_liger_kernel", liger_kernel),
    SPECIAL("quantization_bit", S_QBIT),
    SPECIAL("quantization_method", S_QMETHOD),
    BOOLF("double_quantization", double_quant),
    /* data_args.py */
    SPECIAL("cutoff_len", S_CUTOFF),
    SPECIAL("packing", S_PACKING),
    SPECIAL("neat_packing", S_NEAT),
    /* finetuning_args.py */
    SPECIAL("stage", S_STAGE),
    SPECIAL("finetuning_type", S_FT),
    SPECIAL("pure_bf16", S_PURE_BF16),
    POS("lora_rank", lora_rank, MAX_RANK),
    SPECIAL("lora_target", S_LORA_TARGET),
    SPECIAL("lora_dropout", S_LORA_DROPOUT),
    SPECIAL("additional_target", S_ADDITIONAL),
    SPECIAL("freeze_trainable_layers", S_FREEZE_LAYERS),
    SPECIAL("use_galore", S_GALORE),
    SPECIAL("hyper_parallel_cp_size", S_CP_SIZE),
    /* finetuning_args.py / model_args.py: vision-language models (special_vlm) */
    SPECIAL("freeze_vision_tower", S_FREEZE_VISION),
    SPECIAL("freeze_multi_modal_projector", S_FREEZE_PROJ),
    SPECIAL("freeze_language_model", S_FREEZE_LANG),
    SPECIAL("image_max_pixels", S_IMG_MAX),
    SPECIAL("image_min_pixels", S_IMG_MIN),
    SPECIAL("video_max_pixels", S_VID_MAX),
    SPECIAL("video_min_pixels", S_VID_MIN),
    SPECIAL("video_fps", S_VID_FPS),
    SPECIAL("video_maxlen", S_VID_MAXLEN),
    /* memledger's own: the data's shape (docs/train-config.md) */
    SPECIAL("images_per_sample", S_IMAGES),
    SPECIAL("videos_per_sample", S_VIDEOS),
    SPECIAL("image_size", S_IMAGE_SIZE),
    SPECIAL("video_seconds", S_VIDEO_SECONDS),
    /* finetuning_args.py, stages: the reference and reward models (stage.c) */
    SPECIAL("pref_loss", S_PREF_LOSS),
    SPECIAL("ref_model", S_REF_MODEL),
    SPECIAL("ref_model_quantization_bit", S_REF_QBIT),
    SPECIAL("reward_model", S_REWARD_MODEL),
    SPECIAL("reward_model_type", S_REWARD_TYPE),
    SPECIAL("reward_model_quantization_bit", S_REWARD_QBIT),
    /* generating_args.py (PPO generation) */
    SPECIAL("max_new_tokens", S_MAX_NEW),
    /* TRL DPOConfig / GRPOConfig (--framework trl) */
    SPECIAL("max_completion_length", S_MAX_NEW),
    SPECIAL("num_generations", S_NUM_GEN),
    SPECIAL("steps_per_generation", S_STEPS_PER_GEN),
    SPECIAL("beta", S_BETA),
    SPECIAL("precompute_ref_log_probs", S_PRECOMPUTE),
    SPECIAL("use_vllm", S_USE_VLLM),
    SPECIAL("vllm_mode", S_VLLM_MODE),
    SPECIAL("vllm_gpu_memory_utilization", S_VLLM_UTIL),
    /* TRL SFTConfig / DPOConfig max_length, ModelConfig (special_trl) */
    SPECIAL("max_length", S_TRL),
    SPECIAL("use_peft", S_TRL),
    SPECIAL("lora_r", S_TRL),
    SPECIAL("load_in_4bit", S_TRL),
    SPECIAL("load_in_8bit", S_TRL),
    SPECIAL("attn_implementation", S_TRL),
    /* transformers TrainingArguments */
    POS("per_device_train_batch_size", micro_batch, MAX_BATCH),
    POS("gradient_accumulation_steps", grad_accum, MAX_ACCUM),
    POS("per_device_eval_batch_size", eval_batch, MAX_BATCH),
    BOOLF("do_eval", do_eval),
    SPECIAL("eval_strategy", S_EVAL_STRATEGY),
    SPECIAL("evaluation_strategy", S_EVAL_STRATEGY),
    SPECIAL("bf16", S_BF16),
    SPECIAL("fp16", S_FP16),
    SPECIAL("gradient_checkpointing", S_HF_GC),
    SPECIAL("optim", S_OPTIM),
    SPECIAL("deepspeed", S_DEEPSPEED),
    SPECIAL("fsdp", S_FSDP),
    SPECIAL("fsdp_config", S_FSDP_CONFIG),
    BOOLF("save_only_model", save_only_model),
    BOOLF("use_liger_kernel", liger_kernel),
    U32("dataloader_num_workers", dataloader_workers, 1024),
    SPECIAL("torch_empty_cache_steps", S_EMPTY_CACHE),
    /* Settings of the stack that are not LLaMA-Factory keys (--set; docs/train-config.md). */
    SPECIAL("bitsandbytes_version", S_BNB_VERSION),
    SPECIAL("peft_version", S_PEFT_VERSION),
    SPECIAL("head", S_HEAD),
    SPECIAL("kbit_prepare", S_KBIT_PREPARE),
    BOOLF("fixed_length", fixed_length),
    BOOLF("dequantize", dequantize),
    BOOLF("chunked_ce", chunked_ce),
    SPECIAL("trainer", S_TRAINER),

    /* Read but not modelled: each changes the bytes in a way the ledger does not follow. */
    WARN("rope_scaling", N_("the estimate assumes the model's own RoPE")),
    WARN("shift_attn", N_("S^2-Attn (LongLoRA) reshapes attention; estimated as plain attention")),
    WARN("mixture_of_depths", N_("MoD routing is not modelled; estimated as the dense model")),
    WARN("use_badam", N_("BAdam keeps optimizer state for one block only; estimated with the normal optimizer")),
    WARN("use_apollo", N_("APOLLO low-rank states are not modelled; estimated with the normal optimizer")),
    WARN("use_adam_mini", N_("Adam-mini shares second moments; estimated with the normal optimizer")),
    WARN("use_muon", N_("Muon keeps one momentum per matrix; estimated with the normal optimizer")),
    WARN("pissa_init", N_("PiSSA initialisation runs an SVD per adapted layer at load time")),
    WARN("use_dora", N_("DoRA adds a magnitude vector and a full-width weight norm per adapted layer")),
    WARN("create_new_adapter", N_("a second adapter on top of a loaded one is not modelled")),
    WARN("use_unsloth", N_("unsloth's kernels save less than the estimate assumes")),
    WARN("use_llama_pro", N_("LLaMA Pro block expansion adds layers the config does not list")),
    WARN("resize_vocab", N_("a resized vocabulary makes embed_tokens and lm_head trainable")),
    WARN("freeze_extra_modules", N_("extra trainable modules outside the layers are not counted")),
    WARN("visual_inputs", N_("vision towers and image tokens are not modelled")),
    WARN("train_mm_proj_only", N_("projector-only MLLM training is not modelled")),
    WARN("moe_aux_loss_coef", N_("the router logits kept for the auxiliary loss are not counted")),
    WARNQ("infer_backend", "huggingface", N_("only the huggingface backend is modelled")),
    WARN("fp8", N_("FP8 training (torchao / Transformer Engine) is not modelled")),
    WARN("torch_compile", N_("torch.compile changes activation memory; estimated in eager mode")),
    WARN("predict_with_generate", N_("generation during evaluation (KV cache) is not counted")),
    WARN("galore_layerwise", N_("layer-wise GaLore updates are not modelled")),
    WARNQ("sequence_parallel_size", "1",
          N_("current LLaMA-Factory has no such key (it refuses unknown keys); "
             "context parallelism is hyper_parallel_cp_size with use_hyper_parallel, "
             "or cp_size in the v1 schema; estimated unsplit")),
    WARN("use_hyper_parallel", N_("HyperParallel's own FSDP/TP strategy (hyper_parallel_args) is not read; "
                                  "estimated with the other settings and hyper_parallel_cp_size")),
    WARN("use_v1_kernels", N_("the v1 fused kernels (rms_norm, rope, swiglu) save activations differently")),
    WARN("use_dft_loss", N_("the DFT loss re-weights per-token log-probs: a second b x s x V tensor is not counted")),
    WARN("use_eaft_loss", N_("the EAFT loss keeps per-token entropies: a second b x s x V tensor is not counted")),
    WARN("use_asft_loss", N_("ASFT loads a reference model (create_ref_model), which is not counted")),
    WARN("block_diag_attn", N_("a block-diagonal 4-D mask (2 x b x s^2 bytes) is not counted")),
    WARN("train_from_scratch", N_("a randomly initialised model loads in fp32 first")),
    WARN("export_quantization_bit", N_("export quantizes with calibration data: not a training run")),
    REFUSE("use_mca", "false",
           N_("Megatron-Core training (mcore_adapter) is not modelled; memledger models "
              "the HF Trainer with DeepSpeed or FSDP")),
    REFUSE("use_megatron_bridge", "false",
           N_("Megatron Bridge training is not modelled; memledger models the "
              "HF Trainer with DeepSpeed or FSDP")),
    REFUSE("use_kt", "false",
           N_("KTransformers keeps the MoE experts on the CPU (AMX kernels): the GPU holds only "
              "the rest, which memledger does not model")),
    MCORE("tensor_model_parallel_size"),
    MCORE("pipeline_model_parallel_size"),
    MCORE("expert_model_parallel_size"),
    MCORE("context_parallel_size"),
    MCORE("virtual_pipeline_model_parallel_size"),
    MCORE("sequence_parallel"),
    MCORE("recompute_granularity"),
    MCORE("recompute_method"),
    MCORE("recompute_num_layers"),
    MCORE("use_distributed_optimizer"),
    MCORE("overlap_param_gather"),
    MCORE("overlap_grad_reduce"),
    MCORE("moe_grouped_gemm"),
    MCORE("moe_token_dispatcher_type"),
    MCORE("bias_activation_fusion"),
    MCORE("apply_rope_fusion"),
    MCORE("masked_softmax_fusion"),
    MCORE("cross_entropy_loss_fusion"),
    MCORE("calculate_per_token_loss"),
    MCORE("use_packed_sequences"),
    MCORE("megatron_pretrained_checkpoint"),
    MCORE("export_hf_on_finish"),
    MCORE("account_for_embedding_in_pipeline_split"),
    MCORE("account_for_loss_in_pipeline_split"),
    MCORE("extra_config"),
    /* mixed_precision is the Megatron Bridge's (bf16_mixed); an accelerate config is read elsewhere. */
    MCORE("mixed_precision"),

    /* Known, no effect on memory (the others not listed are ignored the same way). */
    IGN("template"),
    IGN("dataset"),
    IGN("dataset_dir"),
    IGN("eval_dataset"),
    IGN("max_samples"),
    IGN("overwrite_cache"),
    IGN("preprocessing_num_workers"),
    IGN("preprocessing_batch_size"),
    IGN("streaming"),
    IGN("buffer_size"),
    IGN("mix_strategy"),
    IGN("interleave_probs"),
    IGN("val_size"),
    IGN("tokenized_path"),
    IGN("train_on_prompt"),
    IGN("mask_history"),
    IGN("ignore_pad_token_for_loss"),
    IGN("default_system"),
    IGN("enable_thinking"),
    IGN("tool_format"),
    IGN("media_dir"),
    IGN("learning_rate"),
    IGN("num_train_epochs"),
    IGN("max_steps"),
    IGN("warmup_ratio"),
    IGN("warmup_steps"),
    IGN("lr_scheduler_type"),
    IGN("lr_scheduler_kwargs"),
    IGN("weight_decay"),
    IGN("adam_beta1"),
    IGN("adam_beta2"),
    IGN("adam_epsilon"),
    IGN("max_grad_norm"),
    IGN("seed"),
    IGN("data_seed"),
    IGN("logging_steps"),
    IGN("logging_strategy"),
    IGN("logging_dir"),
    IGN("logging_first_step"),
    SPECIAL("save_steps", S_SAVE_STEPS),
    IGN("save_strategy"),
    IGN("save_total_limit"),
    IGN("save_safetensors"),
    IGN("output_dir"),
    IGN("overwrite_output_dir"),
    IGN("resume_from_checkpoint"),
    SPECIAL("eval_steps", S_EVAL_STEPS),
    IGN("load_best_model_at_end"),
    IGN("metric_for_best_model"),
    IGN("greater_is_better"),
    IGN("report_to"),
    IGN("run_name"),
    IGN("plot_loss"),
    IGN("push_to_hub"),
    IGN("hub_model_id"),
    IGN("disable_tqdm"),
    IGN("ddp_timeout"),
    IGN("ddp_backend"),
    IGN("ddp_find_unused_parameters"),
    IGN("dataloader_pin_memory"),
    IGN("dataloader_prefetch_factor"),
    IGN("dataloader_persistent_workers"),
    IGN("dataloader_drop_last"),
    IGN("low_cpu_mem_usage"),
    IGN("use_cache"),
    IGN("do_train"),
    IGN("do_predict"),
    IGN("trust_remote_code"),
    IGN("cache_dir"),
    IGN("model_revision"),
    IGN("use_fast_tokenizer"),
    IGN("split_special_tokens"),
    IGN("adapter_name_or_path"),
    IGN("quantization_type"),
    IGN("lora_alpha"),
    IGN("use_rslora"),
    IGN("loraplus_lr_ratio"),
    IGN("loraplus_lr_embedding"),
    IGN("freeze_trainable_modules"),
    IGN("pref_beta"),
    IGN("pref_ftx"),
    IGN("simpo_gamma"),
    IGN("galore_target"),
    IGN("galore_rank"),
    IGN("galore_update_interval"),
    IGN("galore_scale"),
    IGN("galore_proj_type"),
    IGN("tf32"),
    IGN("half_precision_backend"),
    IGN("bf16_full_eval"),
    IGN("fp16_full_eval"),
    IGN("gradient_checkpointing_kwargs"),
    IGN("neftune_noise_alpha"),
    IGN("include_num_input_tokens_seen"),
    IGN("use_swanlab"),
    IGN("compute_accuracy"),
    IGN("disable_shuffling"),
    IGN("remove_unused_columns"),
    IGN("print_param_status"),
    /* model_args.py: no effect on training memory (or only with a key above) */
    IGN("adapter_folder"),
    IGN("add_tokens"),
    IGN("add_special_tokens"),
    IGN("new_special_tokens_config"),
    IGN("init_special_tokens"),
    IGN("offload_folder"),
    IGN("use_kv_cache"),
    IGN("infer_dtype"),
    IGN("hf_hub_token"),
    IGN("ms_hub_token"),
    IGN("om_hub_token"),
    IGN("quantization_device_map"),
    IGN("image_do_pan_and_scan"),
    IGN("crop_to_patches"),
    IGN("use_audio_in_video"),
    IGN("audio_sampling_rate"),
    IGN("export_dir"),
    IGN("export_size"),
    IGN("export_device"),
    IGN("export_quantization_dataset"),
    IGN("export_quantization_nsamples"),
    IGN("export_quantization_maxlen"),
    IGN("export_legacy_format"),
    IGN("export_hub_model_id"),
    IGN("vllm_maxlen"),
    IGN("vllm_gpu_util"),
    IGN("vllm_enforce_eager"),
    IGN("vllm_max_lora_rank"),
    IGN("vllm_config"),
    IGN("sglang_maxlen"),
    IGN("sglang_mem_fraction"),
    IGN("sglang_tp_size"),
    IGN("sglang_config"),
    IGN("sglang_lora_backend"),
    IGN("kt_cpu_activation"),
    IGN("kt_weight_path"),
    IGN("kt_non_expert_weight_path"),
    IGN("kt_expert_checkpoint_path"),
    IGN("kt_use_lora_experts"),
    IGN("kt_lora_expert_num"),
    IGN("kt_lora_expert_intermediate_size"),
    IGN("kt_config"),
    IGN("compute_dtype"),
    IGN("device_map"),
    IGN("model_max_length"),
    /* data_args.py */
    IGN("eval_num_beams"),
    IGN("eval_on_each_dataset"),
    IGN("preserve_thinking"),
    IGN("data_shared_file_system"),
    /* finetuning_args.py (the keys that matter only with a use_* key above, or not at all) */
    IGN("pissa_iter"),
    IGN("pissa_convert"),
    IGN("module_dropout"),
    IGN("oft_rank"),
    IGN("oft_block_size"),
    IGN("oft_target"),
    IGN("pref_bco_weight"),
    IGN("dpo_label_smoothing"),
    IGN("kto_chosen_weight"),
    IGN("kto_rejected_weight"),
    IGN("ppo_buffer_size"),
    IGN("ppo_epochs"),
    IGN("ppo_score_norm"),
    IGN("ppo_target"),
    IGN("ppo_whiten_rewards"),
    IGN("ref_model_adapters"),
    IGN("reward_model_adapters"),
    IGN("ld_alpha"),
    IGN("apollo_target"),
    IGN("apollo_rank"),
    IGN("apollo_update_interval"),
    IGN("apollo_scale"),
    IGN("apollo_proj"),
    IGN("apollo_proj_type"),
    IGN("apollo_scale_type"),
    IGN("apollo_layerwise"),
    IGN("apollo_scale_front"),
    IGN("badam_mode"),
    IGN("badam_start_block"),
    IGN("badam_switch_mode"),
    IGN("badam_switch_interval"),
    IGN("badam_update_ratio"),
    IGN("badam_mask_mode"),
    IGN("badam_verbose"),
    IGN("swanlab_project"),
    IGN("swanlab_workspace"),
    IGN("swanlab_run_name"),
    IGN("swanlab_mode"),
    IGN("swanlab_api_key"),
    IGN("swanlab_logdir"),
    IGN("swanlab_lark_webhook_url"),
    IGN("swanlab_lark_secret"),
    IGN("megatron_bridge_args"),
    IGN("hyper_parallel_args"),
    IGN("asft_alpha"),
    IGN("eaft_alpha"),
    IGN("early_stopping_steps"),
    IGN("include_effective_tokens_per_second"),
    /* generating_args.py (used for predict and PPO sampling; max_new_tokens is read above) */
    IGN("do_sample"),
    IGN("temperature"),
    IGN("top_p"),
    IGN("top_k"),
    IGN("num_beams"),
    IGN("repetition_penalty"),
    IGN("length_penalty"),
    IGN("skip_special_tokens"),
    /* training_args.py: Ray, the profiler, FP8 details (fp8 itself warns) */
    IGN("ray_num_workers"),
    IGN("ray_init_kwargs"),
    IGN("master_addr"),
    IGN("master_port"),
    IGN("enable_torch_profiler"),
    IGN("profiler_output_dir"),
    IGN("profiler_wait_steps"),
    IGN("profiler_warmup_steps"),
    IGN("profiler_active_steps"),
    IGN("profiler_repeat"),
    IGN("profiler_record_shapes"),
    IGN("profiler_profile_memory"),
    IGN("profiler_with_stack"),
    IGN("profile_modules"),
    IGN("fp8_backend"),
    IGN("fp8_enable_fsdp_float8_all_gather"),
    /* transformers TrainingArguments / Seq2SeqTrainingArguments (v4 and v5 names) */
    IGN("optim_args"),
    IGN("optim_target_modules"),
    IGN("average_tokens_across_devices"),
    IGN("label_smoothing_factor"),
    IGN("torch_compile_backend"),
    IGN("torch_compile_mode"),
    IGN("liger_kernel_config"),
    IGN("auto_find_batch_size"),
    IGN("log_on_each_node"),
    IGN("logging_nan_inf_filter"),
    IGN("log_level"),
    IGN("log_level_replica"),
    IGN("project"),
    IGN("trackio_space_id"),
    IGN("eval_delay"),
    IGN("prediction_loss_only"),
    IGN("eval_on_start"),
    IGN("eval_do_concat_batches"),
    IGN("eval_use_gather_object"),
    IGN("eval_accumulation_steps"),
    IGN("include_for_metrics"),
    IGN("batch_eval_metrics"),
    IGN("save_on_each_node"),
    IGN("enable_jit_checkpoint"),
    IGN("hub_token"),
    IGN("hub_private_repo"),
    IGN("hub_strategy"),
    IGN("hub_always_push"),
    IGN("hub_revision"),
    IGN("ignore_data_skip"),
    IGN("restore_callback_states_from_checkpoint"),
    IGN("full_determinism"),
    IGN("use_cpu"),
    IGN("accelerator_config"),
    IGN("parallelism_config"),
    IGN("label_names"),
    IGN("train_sampling_strategy"),
    IGN("length_column_name"),
    IGN("group_by_length"),
    IGN("ddp_bucket_cap_mb"),
    IGN("ddp_broadcast_buffers"),
    IGN("debug"),
    IGN("skip_memory_metrics"),
    IGN("local_rank"),
    IGN("fp16_opt_level"),
    IGN("fp16_backend"),
    IGN("jit_mode_eval"),
    IGN("use_ipex"),
    IGN("past_index"),
    IGN("ray_scope"),
    IGN("sortish_sampler"),
    IGN("generation_max_length"),
    IGN("generation_num_beams"),
    IGN("generation_config"),
    IGN("include_inputs_for_metrics"),
    IGN("include_tokens_per_second"),
    IGN("use_legacy_prediction_loop"),
    IGN("fsdp_min_num_params"),
    IGN("fsdp_transformer_layer_cls_to_wrap"),
    IGN("xpu_backend"),
    IGN("mp_parameters"),
    IGN("tpu_num_cores"),
    IGN("tpu_metrics_debug"),
    IGN("dispatch_batches"),
    IGN("split_batches"),
    IGN("torchdynamo"),
    IGN("push_to_hub_model_id"),
    IGN("push_to_hub_organization"),
    IGN("push_to_hub_token"),
    IGN("hub_private"),
    IGN("use_mps_device"),
    IGN("no_cuda"),
};

/*
 * LLaMA-Factory's v1 schema (src/llamafactory/v1/config/{model,data,training,sample}_args.py):
 * `model`, plugin mappings with a `name` (peft_config, quant_config, dist_config, kernel_config,
 * optim_config), `micro_batch_size`, bf16 and activation checkpointing on by default, full
 * fine-tuning unless peft_config says otherwise. The stage is the command (llamafactory-cli
 * sft|dpo|rm), not a key.
 */
static const struct key_def v1_table[] = {
    SPECIAL("model", S_MODEL),
    IGN("model_class"),
    IGN("trust_remote_code"),
    IGN("custom_chat_template"),
    SPECIAL("flash_attn", S_FLASH),
    IGN("init_config"),
    SPECIAL("peft_config", S_V1_PEFT),
    SPECIAL("kernel_config", S_V1_KERNEL),
    SPECIAL("quant_config", S_V1_QUANT),
    IGN("train_dataset"),
    IGN("eval_dataset"),
    IGN("output_dir"),
    POS("micro_batch_size", micro_batch, MAX_BATCH),
    IGN("global_batch_size"),
    SPECIAL("cutoff_len", S_CUTOFF),
    IGN("learning_rate"),
    IGN("num_train_epochs"),
    IGN("max_steps"),
    IGN("max_grad_norm"),
    SPECIAL("bf16", S_BF16),
    SPECIAL("batching_strategy", S_V1_BATCHING),
    IGN("batching_workers"),
    SPECIAL("enable_activation_checkpointing", S_V1_ACT_CKPT),
    SPECIAL("dist_config", S_V1_DIST),
    IGN("dp_size"),
    SPECIAL("cp_size", S_CP_SIZE),
    IGN("cp_mode"),
    WARNQ("mp_replicate_size", "1",
          N_("replicated FSDP2 groups (HSDP) are not modelled; estimated as one "
             "group over all GPUs")),
    IGN("mp_shard_size"),
    IGN("dist_timeout"),
    SPECIAL("optim_config", S_V1_OPTIM),
    IGN("lr_scheduler_config"),
    IGN("seed"),
    IGN("full_determinism"),
    IGN("resume_from_checkpoint"),
    SPECIAL("save_steps", S_SAVE_STEPS),
    IGN("save_epochs"),
    WARN("save_ckpt_as_hf", N_("a full HF state dict is gathered at every save (the v1 help: doubles memory)")),
    IGN("save_total_limit"),
    IGN("logging_steps"),
    SPECIAL("pref_loss", S_PREF_LOSS),
    IGN("pref_beta"),
    IGN("pref_ftx"),
    IGN("simpo_gamma"),
    IGN("dpo_label_smoothing"),
    IGN("ld_alpha"),
    IGN("sample_backend"),
    IGN("max_new_tokens"),
};

#undef F

enum schema { SCHEMA_V0, SCHEMA_V1 };

static const struct key_def *lookup_in(enum schema sc, const char *key)
{
    const struct key_def *tab = sc == SCHEMA_V1 ? v1_table : key_table;
    size_t n = sc == SCHEMA_V1 ? sizeof(v1_table) / sizeof(v1_table[0]) : sizeof(key_table) / sizeof(key_table[0]);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(tab[i].key, key))
            return &tab[i];
    return NULL;
}

static const struct key_def *lookup(const char *key)
{
    return lookup_in(SCHEMA_V0, key);
}

/* The known key closest to an unknown one, for "did you mean" (NULL: none near), by the same
 * rule as the model and GPU names (ml_near_limit). */
static const char *near_key(enum schema sc, const char *key)
{
    const struct key_def *tab = sc == SCHEMA_V1 ? v1_table : key_table;
    size_t n = sc == SCHEMA_V1 ? sizeof(v1_table) / sizeof(v1_table[0]) : sizeof(key_table) / sizeof(key_table[0]);
    struct ml_near near = {{0}, {0}, 0};
    size_t limit = ml_near_limit(key);
    for (size_t i = 0; i < n; i++)
        ml_near_offer(&near, key, tab[i].key, limit);
    return near.n ? near.name[0] : NULL;
}

/* ---- reading state ---------------------------------------------------------------------- */

enum ft { FT_FULL, FT_FREEZE, FT_LORA, FT_OFT };

/* Settings resolved after the whole input (the order of keys must not matter). */
struct pending {
    bool prec_touched, method_touched, gc_touched, pack_touched;
    bool bf16, fp16, pure_bf16;   /* the three switches as they stand */
    bool bf16_key, fp16_key;      /* set true by a key of this input (both: a contradiction) */
    uint32_t prec_line, prec_col; /* where the second of them was */
    enum ft ft;
    uint32_t quant_bits;
    uint32_t quant_line, quant_col;
    int packing; /* -1 unset (stage pt packs), 0, 1 */
    bool neat;
    uint64_t cutoff; /* 0: not given */
    bool hf_gc;      /* gradient_checkpointing: true (HF Trainer enables it too) */
    bool gc_disabled, unsloth_gc, reentrant_gc;
    bool galore;
    bool eval_on; /* eval_strategy other than "no" */
};

struct ctx {
    struct ml_train *t; /* the working copy */
    struct pending p;
    bool set_mode; /* one --set override rather than a file */
    const char *origin;
    struct ml_diag *diag;
    uint32_t line, col; /* position of what is being applied, 1-based (0: unknown) */
    char *model_name;
    size_t model_name_len;
    char *ds_path;
    size_t ds_path_len;
    enum schema schema;                       /* the file's schema (sniff_schema) */
    uint32_t n_keys, n_known;                 /* top-level keys read, and those a table knows */
    uint32_t n_unknown;                       /* keys neither LLaMA-Factory nor memledger knows */
    char unknown[UNKNOWN_MAX][KEY_MAX];       /* the first of them, for the warning */
    bool seen_train, seen_infer, seen_export; /* keys of a training, inference or export run */
    const struct ml_train_override *ov;       /* command-line overrides (ml_train_apply_yaml_with) */
    size_t n_ov;
    const char *ov_origin;
};

static enum ml_status failf(struct ctx *c, enum ml_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum ml_status failf(struct ctx *c, enum ml_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_diag_vset(c->diag, st, fmt, ap);
    va_end(ap);
    ml_diag_at(c->diag, c->origin, c->line, c->col);
    return st;
}

static void pending_init(struct pending *p, const struct ml_train *t, bool set_mode)
{
    memset(p, 0, sizeof(*p));
    /* A file states its own precision (none of the three = no mixed precision); an override
     * starts from what is already there. */
    if (set_mode) {
        p->bf16 = t->precision == ML_PREC_BF16;
        p->fp16 = t->precision == ML_PREC_FP16;
        p->pure_bf16 = t->precision == ML_PREC_PURE_BF16;
    }
    switch (t->method) {
    case ML_METHOD_FULL: p->ft = FT_FULL; break;
    case ML_METHOD_FREEZE: p->ft = FT_FREEZE; break;
    case ML_METHOD_LORA:
    case ML_METHOD_QLORA: p->ft = FT_LORA; break;
    }
    p->quant_bits = t->quant_bits;
    p->packing = set_mode ? (int)t->packing : -1;
    p->neat = t->neat_packing;
    /* LLaMA-Factory turns checkpointing on unless disable_gradient_checkpointing; the HF
     * Trainer key only ever turns it on. Other profiles: on only when asked. */
    if (t->framework == ML_FW_LLAMAFACTORY)
        p->gc_disabled = t->grad_ckpt == ML_GC_OFF;
    else
        p->hf_gc = t->grad_ckpt != ML_GC_OFF;
    p->unsloth_gc = t->grad_ckpt == ML_GC_UNSLOTH;
    p->reentrant_gc = t->grad_ckpt != ML_GC_NON_REENTRANT;
}

/* ---- scalar converters ------------------------------------------------------------------ */

static int lower(int ch)
{
    return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

static bool ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return false;
    return *a == *b;
}

/* One value of a key that takes one of a few words; a table ends with a NULL name. */
struct choice {
    const char *name;
    int value;
};

/* The value of the word val in tab into *out; false when val is none of them. */
static bool choose(const char *val, const struct choice *tab, uint64_t *out)
{
    for (; tab->name; tab++)
        if (!strcmp(val, tab->name)) {
            *out = (uint64_t)tab->value;
            return true;
        }
    return false;
}

/* YAML 1.1 booleans as PyYAML resolves them (plus 1/0): 1 true, 0 false, -1 neither. */
static int yaml_bool(const char *s)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (ieq(s, yes[i]))
            return 1;
        if (ieq(s, no[i]))
            return 0;
    }
    return -1;
}

/* A plain scalar that YAML reads as null. */
static bool yaml_null(const char *s, bool plain)
{
    return plain && (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

/* A value that leaves a feature off: false, 0, none, empty. */
static bool is_off(const char *s)
{
    return yaml_bool(s) == 0 || !*s || ieq(s, "none");
}

static enum ml_status get_bool(struct ctx *c, const char *key, const char *val, bool *out)
{
    int b = yaml_bool(val);
    if (b < 0)
        return failf(c, ML_ERR_INVALID, _("'%s' must be true or false, got '%.60s'"), key, val);
    *out = b == 1;
    return ML_OK;
}

/* A whole number in [lo, hi]: 1024, "2048", 1e9, 1_000, 2048.0. */
static enum ml_status get_count(struct ctx *c, const char *key, const char *val, uint64_t lo, uint64_t hi,
                                uint64_t *out)
{
    uint64_t v = 0;
    if (ml_count_parse(val, &v, NULL) != ML_OK || (lo == 1 && v == 0)) {
        if (lo >= 1)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a positive whole number, got '%.60s'"), key, val);
        return failf(c, ML_ERR_INVALID, _("'%s' must be a whole number (0 or more), got '%.60s'"), key, val);
    }
    if (v < lo || v > hi)
        return failf(c, ML_ERR_INVALID, _("'%s' = %.60s is out of range (%llu to %llu)"), key, val,
                     (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return ML_OK;
}

/*
 * A real number written in decimal ([+-]digits[.digits][e[+-]digits]), read without strtod so
 * that the process locale cannot change the decimal point. Only compared, never printed.
 */
static bool get_real(const char *s, double *out)
{
    double sign = 1, v = 0, scale = 1;
    int digits = 0, ex = 0, exsign = 1;
    if (*s == '+' || *s == '-')
        sign = (*s++ == '-') ? -1 : 1;
    for (; *s >= '0' && *s <= '9'; s++, digits++)
        v = v * 10 + (*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
            scale /= 10;
            v += (*s - '0') * scale;
        }
    if (!digits)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            exsign = (*s++ == '-') ? -1 : 1;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        for (; *s >= '0' && *s <= '9'; s++)
            if (ex < 1000)
                ex = ex * 10 + (*s - '0');
    }
    if (*s)
        return false;
    for (int i = 0; i < ex && v != 0; i++)
        v = exsign > 0 ? v * 10 : v / 10;
    *out = sign * v;
    return true;
}

/* Copy a string value into a caller buffer; a value that does not fit is an error. */
static enum ml_status copy_out(struct ctx *c, const char *key, const char *val, char *buf, size_t cap)
{
    if (!buf || !cap)
        return ML_OK;
    size_t n = strlen(val);
    if (n >= cap)
        return failf(c, ML_ERR_INVALID, _("'%s' is longer than %zu bytes"), key, cap - 1);
    memcpy(buf, val, n + 1);
    return ML_OK;
}

/* ---- the special keys ------------------------------------------------------------------- */

static const struct {
    const char *name;
    enum ml_optim optim;
} optim_names[] = {
    {"adamw_torch", ML_OPTIM_ADAMW_TORCH},
    {"adamw_hf", ML_OPTIM_ADAMW_TORCH},
    {"adamw_torch_fused", ML_OPTIM_ADAMW_TORCH_FUSED},
    {"adamw_apex_fused", ML_OPTIM_ADAMW_TORCH_FUSED},
    {"adamw_bnb_8bit", ML_OPTIM_ADAMW_8BIT},
    {"adamw_8bit", ML_OPTIM_ADAMW_8BIT},
    {"paged_adamw_8bit", ML_OPTIM_PAGED_ADAMW_8BIT},
    {"paged_adamw_32bit", ML_OPTIM_PAGED_ADAMW_32BIT},
    {"adafactor", ML_OPTIM_ADAFACTOR},
    {"sgd", ML_OPTIM_SGD},
    {"galore_adamw", ML_OPTIM_GALORE_ADAMW},
    {"galore_adamw_8bit", ML_OPTIM_GALORE_ADAMW},
    {"galore_adafactor", ML_OPTIM_GALORE_ADAMW},
    {"galore_adamw_layerwise", ML_OPTIM_GALORE_ADAMW},
    {"galore_adamw_8bit_layerwise", ML_OPTIM_GALORE_ADAMW},
    {"galore_adafactor_layerwise", ML_OPTIM_GALORE_ADAMW},
};

/* fsdp: "full_shard auto_wrap", "shard_grad_op offload", a list of those words, or a bool. */
static enum ml_status apply_fsdp(struct ctx *c, const char *key, const char *val)
{
    struct ml_train *t = c->t;
    int b = yaml_bool(val);
    if (b >= 0 && strcmp(val, "0") && strcmp(val, "1")) {
        t->fsdp = b ? ML_FSDP_FULL_SHARD : ML_FSDP_NONE;
        t->fsdp_offload = false;
        return ML_OK;
    }
    enum ml_fsdp_mode mode = ML_FSDP_NONE;
    bool offload = false, sharded = false;
    const char *p = val;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, " ,\t");
        char w[32];
        if (n >= sizeof(w))
            n = sizeof(w) - 1;
        memcpy(w, p, n);
        w[n] = '\0';
        p += strcspn(p, " ,\t");
        if (!strcmp(w, "full_shard")) {
            mode = ML_FSDP_FULL_SHARD;
            sharded = true;
        } else if (!strcmp(w, "shard_grad_op")) {
            mode = ML_FSDP_SHARD_GRAD_OP;
            sharded = true;
        } else if (!strcmp(w, "hybrid_shard") || !strcmp(w, "hybrid_shard_zero2")) {
            mode = ML_FSDP_HYBRID_SHARD;
            sharded = true;
        } else if (!strcmp(w, "no_shard")) {
            mode = ML_FSDP_NONE;
        } else if (!strcmp(w, "offload")) {
            offload = true;
        } else if (strcmp(w, "auto_wrap")) {
            return failf(c, ML_ERR_INVALID,
                         _("'%s': unknown option '%s' (full_shard, shard_grad_op, hybrid_shard, "
                           "hybrid_shard_zero2, no_shard, offload, auto_wrap)"),
                         key, w);
        }
    }
    if (offload && !sharded)
        return failf(c, ML_ERR_INVALID, _("'%s': offload needs full_shard, shard_grad_op or hybrid_shard"), key);
    t->fsdp = mode;
    t->fsdp_offload = offload;
    return ML_OK;
}

/* One key inside fsdp_config (HF strips the "fsdp_" prefix the same way). */
static enum ml_status apply_fsdp_config(struct ctx *c, const char *key, const char *val, bool is_null)
{
    if (is_null)
        return ML_OK;
    const char *k = strncmp(key, "fsdp_", 5) ? key : key + 5;
    char full[KEY_MAX + 16];
    (void)snprintf(full, sizeof(full), "fsdp_config.%s", key);
    if (!strcmp(k, "version")) {
        uint64_t v;
        enum ml_status st = get_count(c, full, val, 1, 2, &v);
        if (st != ML_OK)
            return st;
        c->t->fsdp_version = (uint32_t)v;
    } else if (!strcmp(k, "offload_params") || !strcmp(k, "cpu_offload")) {
        return get_bool(c, full, val, &c->t->fsdp_offload);
    } else if (!strcmp(k, "activation_checkpointing")) {
        if (yaml_bool(val) == 1)
            ml_train_warn(c->t,
                          _("'%s' changes memory but is not modelled; FSDP's own activation "
                            "checkpointing is estimated as gradient checkpointing"),
                          full);
    } else if (!strcmp(k, "reshard_after_forward")) {
        if (yaml_bool(val) == 0)
            ml_train_warn(c->t,
                          _("'%s' changes memory but is not modelled; parameters stay "
                            "gathered between forward and backward"),
                          full);
    }
    return ML_OK;
}

/* A null value: "not given" for most keys; a few clear what an earlier layer set. */
static enum ml_status special_null(struct ctx *c, const struct key_def *d)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    switch (d->id) {
    case S_MODEL: return copy_out(c, key, "", c->model_name, c->model_name_len);
    case S_DEEPSPEED: t->deepspeed = false; return copy_out(c, key, "", c->ds_path, c->ds_path_len);
    case S_QBIT:
        p->quant_bits = 0;
        p->method_touched = true;
        return ML_OK;
    case S_ADDITIONAL: memset(&t->additional, 0, sizeof(t->additional)); return ML_OK;
    case S_FSDP:
        t->fsdp = ML_FSDP_NONE;
        t->fsdp_offload = false;
        return ML_OK;
    case S_PACKING:
        p->packing = -1;
        p->pack_touched = true;
        return ML_OK;
    case S_REF_MODEL: t->sc.ref_model = false; return ML_OK;
    case S_REWARD_MODEL: t->sc.reward_model = false; return ML_OK;
    case S_REF_QBIT: t->sc.ref_quant_bits = 0; return ML_OK;
    case S_REWARD_QBIT: t->sc.reward_quant_bits = 0; return ML_OK;
    default: return ML_OK;
    }
}

/* The stage and the method: finetuning type, LoRA, freeze, quantization. */
static enum ml_status special_method(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    uint64_t v = 0;
    switch (d->id) {
    case S_STAGE: {
        static const struct {
            const char *n;
            enum ml_stage s;
        } stages[] = {
            {"pt", ML_STAGE_PT},   {"sft", ML_STAGE_SFT},   {"rm", ML_STAGE_RM},   {"dpo", ML_STAGE_DPO},
            {"kto", ML_STAGE_KTO}, {"orpo", ML_STAGE_ORPO}, {"ppo", ML_STAGE_PPO}, {"grpo", ML_STAGE_GRPO},
        };
        for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++)
            if (!strcmp(val, stages[i].n)) {
                t->stage = stages[i].s;
                p->pack_touched = true; /* packing defaults on for pt */
                return ML_OK;
            }
        return failf(c, ML_ERR_INVALID, _("'%s' must be pt, sft, rm, dpo, kto, ppo (or TRL's grpo), got '%.60s'"), key,
                     val);
    }
    case S_FT:
        t->sc.oft = false;
        if (!strcmp(val, "full"))
            p->ft = FT_FULL;
        else if (!strcmp(val, "freeze"))
            p->ft = FT_FREEZE;
        else if (!strcmp(val, "lora"))
            p->ft = FT_LORA;
        else if (!strcmp(val, "oft")) {
            p->ft = FT_OFT;
            t->sc.oft = true;
            ml_train_warn(t, _("finetuning_type oft: modelled as lora"));
        } else
            return failf(c, ML_ERR_INVALID, _("'%s' must be full, freeze, lora or oft, got '%.60s'"), key, val);
        p->method_touched = true;
        return ML_OK;
    case S_LORA_TARGET:
    case S_ADDITIONAL: {
        struct ml_diag sub;
        ml_diag_init(&sub);
        struct ml_lora_targets *out = d->id == S_LORA_TARGET ? &t->lora_targets : &t->additional;
        struct ml_lora_targets tmp;
        if (ml_lora_targets_parse(val, &tmp, &sub) != ML_OK)
            return failf(c, ML_ERR_INVALID, _("'%s': %s"), key, sub.msg);
        *out = tmp;
        return ML_OK;
    }
    case S_LORA_DROPOUT: {
        double x;
        if (!get_real(val, &x) || x < 0 || x > 1)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a number from 0 to 1, got '%.60s'"), key, val);
        t->lora_dropout = x > 0;
        return ML_OK;
    }
    case S_FREEZE_LAYERS:
        /* Negative: the first n layers train instead of the last n; the count is what matters. */
        st = get_count(c, key, val[0] == '-' ? val + 1 : val, 0, 65536, &v);
        if (st == ML_OK)
            t->freeze_trainable_layers = (uint32_t)v;
        return st;
    case S_QBIT:
        st = get_count(c, key, val, 0, 8, &v);
        if (st != ML_OK || (v != 4 && v != 8))
            return failf(c, ML_ERR_INVALID, _("'%s' must be 4 or 8, got '%.60s'"), key, val);
        p->quant_bits = (uint32_t)v;
        p->quant_line = c->line;
        p->quant_col = c->col;
        p->method_touched = true;
        return ML_OK;
    case S_QMETHOD:
        if (strcmp(val, "bnb") && strcmp(val, "bitsandbytes"))
            ml_train_warn(t, _("quantization_method '%.40s': modelled as bitsandbytes"), val);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* Steps, the sequence length, packing, evaluation. */
static enum ml_status special_data(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    bool b = false;
    uint64_t v = 0;
    switch (d->id) {
    case S_SAVE_STEPS:
    case S_EVAL_STEPS: {
        /* transformers TrainingArguments: a whole number of steps, or a float below 1 that is a
         * ratio of the total steps (not known here: left 0). */
        double r;
        uint64_t *dst = d->id == S_SAVE_STEPS ? &t->save_steps : &t->eval_steps;
        if (ml_count_parse(val, &v, NULL) == ML_OK) {
            *dst = v;
            return ML_OK;
        }
        if (get_real(val, &r) && r >= 0 && r < 1) {
            *dst = 0;
            return ML_OK;
        }
        return failf(c, ML_ERR_INVALID, _("'%s' must be a whole number of steps or a ratio below 1, got '%.60s'"), key,
                     val);
    }
    case S_CUTOFF:
        st = get_count(c, key, val, 1, MAX_CUTOFF, &v);
        if (st == ML_OK) {
            p->cutoff = v;
            p->pack_touched = true;
        }
        return st;
    case S_PACKING:
        st = get_bool(c, key, val, &b);
        p->packing = b ? 1 : 0;
        p->pack_touched = true;
        return st;
    case S_NEAT:
        st = get_bool(c, key, val, &p->neat);
        p->pack_touched = true;
        return st;
    case S_EVAL_STRATEGY:
        if (strcmp(val, "no") && strcmp(val, "steps") && strcmp(val, "epoch") && yaml_bool(val) != 0)
            return failf(c, ML_ERR_INVALID, _("'%s' must be no, steps or epoch, got '%.60s'"), key, val);
        /* PyYAML reads a plain no as false: the same as "no". */
        p->eval_on = yaml_bool(val) != 0;
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* Precision, attention, checkpointing, the optimizer, DeepSpeed and FSDP. */
static enum ml_status special_kernels(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    const char *key = d->key;
    enum ml_status st = ML_OK;
    bool b = false;
    switch (d->id) {
    case S_BF16:
    case S_FP16:
    case S_PURE_BF16:
        st = get_bool(c, key, val, &b);
        if (st != ML_OK)
            return st;
        p->prec_touched = true;
        if (c->set_mode && b)
            p->bf16 = p->fp16 = p->pure_bf16 = false; /* an override replaces the precision */
        if (d->id == S_BF16 || d->id == S_FP16) {
            bool *flag = d->id == S_BF16 ? &p->bf16 : &p->fp16;
            bool *by_key = d->id == S_BF16 ? &p->bf16_key : &p->fp16_key;
            *flag = *by_key = b;
            if (b) {
                p->prec_line = c->line;
                p->prec_col = c->col;
            }
        } else {
            p->pure_bf16 = b;
        }
        return ML_OK;
    case S_FLASH:
        if (c->schema == SCHEMA_V1) {
            /* v1 utils/types.py AttentionFunction: eager, sdpa, flash_attention_2. */
            if (!strcmp(val, "eager") || !strcmp(val, "sdpa") || !strcmp(val, "flash_attention_2")) {
                t->attn = val[0] == 'e' ? ML_ATTN_EAGER : val[0] == 's' ? ML_ATTN_SDPA : ML_ATTN_FLASH;
                return ML_OK;
            }
            return failf(c, ML_ERR_INVALID,
                         _("'%s' must be eager, sdpa or flash_attention_2 (the v1 schema), "
                           "got '%.60s'"),
                         key, val);
        }
        if (!strcmp(val, "flash_attention_2") || !strcmp(val, "eager"))
            return failf(c, ML_ERR_INVALID,
                         _("'%s' must be auto, disabled, sdpa, fa2 or fa3, got '%.60s' (a v1-schema "
                           "name; this file reads as v0, which calls it %s)"),
                         key, val, val[0] == 'e' ? "disabled" : "fa2");
        if (!strcmp(val, "auto") || !strcmp(val, "sdpa"))
            t->attn = ML_ATTN_SDPA;
        else if (!strcmp(val, "disabled") || yaml_bool(val) == 0)
            t->attn = ML_ATTN_EAGER; /* "off" was the name before "disabled" */
        else if (!strcmp(val, "fa2") || !strcmp(val, "fa3") || yaml_bool(val) == 1)
            t->attn = ML_ATTN_FLASH;
        else
            return failf(c, ML_ERR_INVALID, _("'%s' must be auto, disabled, sdpa, fa2 or fa3, got '%.60s'"), key, val);
        return ML_OK;
    case S_HF_GC:
        st = get_bool(c, key, val, &b);
        if (st != ML_OK)
            return st;
        p->gc_touched = true;
        if (t->framework == ML_FW_LLAMAFACTORY) {
            p->hf_gc = b;
            if (!b)
                ml_train_warn(t, _("gradient_checkpointing: false does not turn checkpointing off in "
                                   "LLaMA-Factory (use disable_gradient_checkpointing: true); "
                                   "modelled as on"));
        } else {
            p->hf_gc = b;
            p->gc_disabled = false;
        }
        return ML_OK;
    case S_DISABLE_GC: p->gc_touched = true; return get_bool(c, key, val, &p->gc_disabled);
    case S_UNSLOTH_GC: p->gc_touched = true; return get_bool(c, key, val, &p->unsloth_gc);
    case S_REENTRANT_GC: p->gc_touched = true; return get_bool(c, key, val, &p->reentrant_gc);
    case S_OPTIM:
        for (size_t i = 0; i < sizeof(optim_names) / sizeof(optim_names[0]); i++)
            if (!strcmp(val, optim_names[i].name)) {
                t->optim = optim_names[i].optim;
                t->optim_set = true;
                return ML_OK;
            }
        ml_train_warn(t, _("optim '%.40s' is not modelled; estimated with %s"), val, ml_optim_name(t->optim));
        return ML_OK;
    case S_GALORE: return get_bool(c, key, val, &p->galore);
    case S_DEEPSPEED:
        st = copy_out(c, key, val, c->ds_path, c->ds_path_len);
        if (st == ML_OK)
            t->deepspeed = val[0] != '\0';
        return st;
    case S_FSDP: return apply_fsdp(c, key, val);
    case S_FSDP_CONFIG:
        /* A path to a JSON file (HF accepts one): not read here. */
        ml_train_warn(t,
                      _("fsdp_config '%.60s' is a file memledger does not read; FSDP version %u "
                        "assumed"),
                      val, t->fsdp_version);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* ---- vision-language training ------------------------------------------------------------- */

/* "1024x768" (or 1024X768, 1024*768): width and height in pixels, each 1 to 65536. */
static bool parse_size(const char *v, uint64_t *w, uint64_t *h)
{
    const char *x = v;
    while (*x && *x != 'x' && *x != 'X' && *x != '*')
        x++;
    if (!*x)
        x = NULL;
    char a[16], b[16];
    if (!x || (size_t)(x - v) >= sizeof(a) || strlen(x + 1) >= sizeof(b))
        return false;
    memcpy(a, v, (size_t)(x - v));
    a[x - v] = '\0';
    (void)snprintf(b, sizeof(b), "%s", x + 1);
    return ml_count_parse(a, w, NULL) == ML_OK && ml_count_parse(b, h, NULL) == ML_OK && *w && *h && *w <= 65536 &&
           *h <= 65536;
}

static enum ml_status special_vlm(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_vlm_cfg *v = &c->t->vlm;
    const char *key = d->key;
    bool b = false;
    uint64_t n = 0;
    double x;
    enum ml_status st = ML_OK;
    switch (d->id) {
    case S_FREEZE_VISION:
    case S_FREEZE_PROJ:
    case S_FREEZE_LANG:
        if ((st = get_bool(c, key, val, &b)) != ML_OK)
            return st;
        if (d->id == S_FREEZE_VISION)
            v->vision_trainable = !b;
        else if (d->id == S_FREEZE_PROJ)
            v->projector_trainable = !b;
        else
            v->language_frozen = b;
        return ML_OK;
    case S_IMG_MAX:
    case S_IMG_MIN:
    case S_VID_MAX:
    case S_VID_MIN:
        if ((st = get_count(c, key, val, 1, (uint64_t)1 << 32, &n)) != ML_OK)
            return st;
        *(d->id == S_IMG_MAX   ? &v->image_max_pixels
          : d->id == S_IMG_MIN ? &v->image_min_pixels
          : d->id == S_VID_MAX ? &v->video_max_pixels
                               : &v->video_min_pixels) = n;
        return ML_OK;
    case S_VID_FPS:
        if (!get_real(val, &x) || x <= 0 || x > 1000)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a number above 0, got '%.60s'"), key, val);
        v->video_fps_milli = (uint32_t)(x * 1000 + 0.5);
        return ML_OK;
    case S_VID_MAXLEN:
    case S_IMAGES:
    case S_VIDEOS:
    case S_VIDEO_SECONDS:
        if ((st = get_count(c, key, val, d->id == S_VID_MAXLEN ? 1 : 0, 1u << 16, &n)) != ML_OK)
            return st;
        if (d->id == S_VID_MAXLEN)
            v->video_maxlen = (uint32_t)n;
        else if (d->id == S_IMAGES) {
            v->images_per_sample = (uint32_t)n;
            v->images_set = true;
        } else if (d->id == S_VIDEOS)
            v->videos_per_sample = (uint32_t)n;
        else
            v->video_seconds = (uint32_t)n;
        return ML_OK;
    case S_IMAGE_SIZE:
        if (!parse_size(val, &v->image_width, &v->image_height))
            return failf(c, ML_ERR_INVALID, _("'%s' must be WIDTHxHEIGHT in pixels (1 to 65536), got '%.60s'"), key,
                         val);
        return ML_OK;
    default: return ML_OK;
    }
}

/* ---- the v1 schema's keys and plugin mappings ---------------------------------------------- */

/* Scalar v1 keys (and the plugin mappings given as a scalar: only null is one). */
static enum ml_status special_v1(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    uint64_t v = 0;
    bool b = false;
    enum ml_status st;
    switch (d->id) {
    case S_CP_SIZE:
        st = get_count(c, d->key, val, 1, 4096, &v);
        if (st == ML_OK)
            t->cp_size = (uint32_t)v;
        return st;
    case S_V1_ACT_CKPT:
        /* v1 core/base_trainer.py: gradient_checkpointing_enable({"use_reentrant": False}). */
        st = get_bool(c, d->key, val, &b);
        p->gc_touched = true;
        p->gc_disabled = !b;
        p->reentrant_gc = false;
        return st;
    case S_V1_BATCHING:
        /* v1 config/arg_utils.py BatchingStrategy; padding-free batches are packed sequences that
         * never attend across samples (flash-attention varlen), as neat_packing does. */
        p->pack_touched = true;
        if (!strcmp(val, "normal")) {
            p->packing = 0;
            p->neat = false;
        } else if (!strcmp(val, "padding_free") || !strcmp(val, "dynamic_padding_free")) {
            p->packing = 1;
            p->neat = true;
        } else if (!strcmp(val, "dynamic_batching")) {
            p->packing = 0;
            ml_train_warn(t, _("'batching_strategy' dynamic_batching fills batches up to a token budget; "
                               "estimated as micro_batch_size sequences of cutoff_len"));
        } else {
            return failf(c, ML_ERR_INVALID,
                         _("'%s' must be normal, padding_free, dynamic_batching or "
                           "dynamic_padding_free, got '%.60s'"),
                         d->key, val);
        }
        if (!strncmp(val, "dynamic_", 8) && strcmp(val, "dynamic_batching"))
            ml_train_warn(t,
                          _("'batching_strategy' %s fills batches up to a token budget; estimated as "
                            "micro_batch_size packs of cutoff_len"),
                          val);
        return ML_OK;
    default:
        return failf(c, ML_ERR_INVALID, _("'%s' must be a mapping with a name (or null), got '%.60s'"), d->key, val);
    }
}

/* peft_config.KEY (v1 plugins/model_plugins/peft.py LoraParams, FreezeParams). */
static enum ml_status v1_peft(struct ctx *c, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    struct key_def alias = {full, K_SPECIAL, S_NONE, 0, 0, NULL, NULL};
    if (!strcmp(k, "name")) {
        p->method_touched = true;
        if (!strcmp(val, "lora")) {
            p->ft = FT_LORA;
            t->lora_dropout = true; /* LoraParams.lora_dropout = 0.05 */
        } else if (!strcmp(val, "freeze")) {
            p->ft = FT_FREEZE;
        } else {
            return failf(c, ML_ERR_INVALID, _("'%s' must be lora or freeze, got '%.60s'"), full, val);
        }
        return ML_OK;
    }
    if (!strcmp(k, "r")) {
        uint64_t v;
        enum ml_status st = get_count(c, full, val, 1, MAX_RANK, &v);
        if (st == ML_OK)
            t->lora_rank = v;
        return st;
    }
    alias.id = !strcmp(k, "lora_dropout")              ? S_LORA_DROPOUT
               : !strcmp(k, "target_modules")          ? S_LORA_TARGET
               : !strcmp(k, "modules_to_save")         ? S_ADDITIONAL
               : !strcmp(k, "freeze_trainable_layers") ? S_FREEZE_LAYERS
                                                       : S_NONE;
    if (alias.id != S_NONE)
        return special_method(c, &alias, val);
    if (!strcmp(k, "export_dir"))
        c->seen_export = true; /* llamafactory-cli merge (v1 plugins/model_plugins/peft.py) */
    if (!strcmp(k, "use_dora") || !strcmp(k, "freeze_extra_modules")) {
        if (!is_off(val) && ++t->unmodelled)
            ml_train_warn(t, _("'%s' changes memory but is not modelled; %s"), full,
                          k[0] == 'u' ? _("DoRA adds a magnitude vector and a full-width weight norm per adapted layer")
                                      : _("extra trainable modules outside the layers are not counted"));
        return ML_OK;
    }
    static const char *const ignored[] = {"lora_alpha",
                                          "use_rslora",
                                          "adapter_name_or_path",
                                          "export_dir",
                                          "export_size",
                                          "export_hub_model_id",
                                          "infer_dtype",
                                          "export_legacy_format",
                                          "freeze_trainable_modules",
                                          "cast_trainable_params_to_fp32"};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        if (!strcmp(k, ignored[i]))
            return ML_OK;
    ml_train_warn(t, _("'%s' is not a key of the v1 PEFT plugins; ignored"), full);
    return ML_OK;
}

/* dist_config.KEY (v1 plugins/trainer_plugins/distributed/{fsdp2,deepspeed,fsdpturbo}.py). */
static enum ml_status v1_dist(struct ctx *c, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    if (!strcmp(k, "name")) {
        if (!strcmp(val, "fsdp2")) {
            t->fsdp = ML_FSDP_FULL_SHARD;
            t->fsdp_version = 2;
            t->deepspeed = false;
        } else if (!strcmp(val, "deepspeed")) {
            t->fsdp = ML_FSDP_NONE;
        } else if (!strcmp(val, "fsdpturbo")) {
            return failf(c, ML_ERR_INVALID,
                         _("'%s' fsdpturbo (FSDP with expert parallelism, ep_size) is not "
                           "modelled; fsdp2 and deepspeed are"),
                         full);
        } else {
            return failf(c, ML_ERR_INVALID, _("'%s' must be fsdp2, deepspeed or fsdpturbo, got '%.60s'"), full, val);
        }
        return ML_OK;
    }
    if (!strcmp(k, "config_file")) {
        enum ml_status st = copy_out(c, full, val, c->ds_path, c->ds_path_len);
        if (st == ML_OK)
            t->deepspeed = val[0] != '\0';
        return st;
    }
    if (!strcmp(k, "offload_params"))
        return get_bool(c, full, val, &t->fsdp_offload);
    if (!strcmp(k, "reshard_after_forward")) {
        bool b = true;
        enum ml_status st = get_bool(c, full, val, &b);
        if (st == ML_OK && !b && t->fsdp != ML_FSDP_NONE)
            t->fsdp = ML_FSDP_SHARD_GRAD_OP;
        return st;
    }
    return ML_OK; /* dcp_path, pin_memory, ep_size, ep_dispatcher: no effect modelled here */
}

/* quant_config, kernel_config, optim_config: KEY (v1 quantization.py, kernels, optimizers). */
static enum ml_status v1_other(struct ctx *c, enum special id, const char *full, const char *k, const char *val)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;
    if (id == S_V1_QUANT) {
        if (!strcmp(k, "name")) {
            if (strcmp(val, "bnb") && strcmp(val, "auto"))
                ml_train_warn(t, _("'%s' %.40s: modelled as bitsandbytes"), full, val);
            if (!p->quant_bits)
                p->quant_bits = 4; /* quantization.py: "default to 4-bit quantization" */
            p->quant_line = c->line;
            p->quant_col = c->col;
            p->method_touched = true;
            return ML_OK;
        }
        if (!strcmp(k, "quantization_bit")) {
            struct key_def qd = {full, K_SPECIAL, S_QBIT, 0, 0, NULL, NULL};
            return special_method(c, &qd, val);
        }
        return ML_OK;
    }
    if (id == S_V1_KERNEL) {
        if (!strcmp(k, "name") && strstr(val, "liger_kernel"))
            t->liger_kernel = true;
        return ML_OK;
    }
    if (!strcmp(k, "name") && strcmp(val, "adamw") && strcmp(val, "adamw_torch"))
        ml_train_warn(t, _("'%s' %.40s changes memory but is not modelled; estimated with %s"), full, val,
                      ml_optim_name(t->optim));
    return ML_OK;
}

/* One KEY: VALUE inside a v1 plugin mapping (d: the mapping's key). */
static enum ml_status apply_v1_sub(struct ctx *c, const struct key_def *d, const char *k, const char *val, bool is_null)
{
    char full[2 * KEY_MAX];
    (void)snprintf(full, sizeof(full), "%s.%s", d->key, k);
    if (is_null)
        return ML_OK;
    switch (d->id) {
    case S_V1_PEFT: return v1_peft(c, full, k, val);
    case S_V1_DIST: return v1_dist(c, full, k, val);
    default: return v1_other(c, d->id, full, k, val);
    }
}

/* A quantization bit of a reference or reward model: 4 or 8. */
static enum ml_status get_qbit(struct ctx *c, const char *key, const char *val, uint32_t *out)
{
    uint64_t v = 0;
    if (get_count(c, key, val, 0, 8, &v) != ML_OK || (v != 4 && v != 8))
        return failf(c, ML_ERR_INVALID, _("'%s' must be 4 or 8, got '%.60s'"), key, val);
    *out = (uint32_t)v;
    return ML_OK;
}

/* The stage's own keys: the reference and reward models, generation, TRL's trainers. */
static enum ml_status special_stage(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_stage_cfg *sc = &c->t->sc;
    const char *key = d->key;
    uint64_t v = 0;
    double x;
    switch (d->id) {
    case S_PREF_LOSS: {
        static const char *const names[] = {"sigmoid", "hinge", "ipo", "kto_pair", "orpo", "simpo"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(val, names[i])) {
                sc->pref_loss = (enum ml_pref_loss)i;
                return ML_OK;
            }
        return failf(c, ML_ERR_INVALID, _("'%s' must be sigmoid, hinge, ipo, kto_pair, orpo or simpo, got '%.60s'"),
                     key, val);
    }
    case S_REF_MODEL: sc->ref_model = true; return ML_OK;
    case S_REWARD_MODEL: sc->reward_model = true; return ML_OK;
    case S_REF_QBIT: return get_qbit(c, key, val, &sc->ref_quant_bits);
    case S_REWARD_QBIT: return get_qbit(c, key, val, &sc->reward_quant_bits);
    case S_REWARD_TYPE: {
        static const struct choice types[] = {{"lora", ML_REWARD_LORA},
                                              {"oft", ML_REWARD_LORA},
                                              {"full", ML_REWARD_FULL},
                                              {"api", ML_REWARD_API},
                                              {NULL, 0}};
        if (!choose(val, types, &v))
            return failf(c, ML_ERR_INVALID, _("'%s' must be lora, full or api, got '%.60s'"), key, val);
        sc->reward_type = (enum ml_reward_type)v;
        return ML_OK;
    }
    case S_MAX_NEW: return get_count(c, key, val, 1, MAX_CUTOFF, &sc->max_new_tokens);
    case S_STEPS_PER_GEN: return get_count(c, key, val, 1, MAX_ACCUM, &sc->steps_per_generation);
    case S_NUM_GEN:
        if (get_count(c, key, val, 1, 1u << 16, &v) != ML_OK)
            return ML_ERR_INVALID;
        sc->num_generations = (uint32_t)v;
        return ML_OK;
    case S_BETA:
        if (!get_real(val, &x) || x < 0)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a number of 0 or more, got '%.60s'"), key, val);
        sc->beta = x == 0 ? ML_BETA_ZERO : ML_BETA_NONZERO;
        return ML_OK;
    case S_PRECOMPUTE: return get_bool(c, key, val, &sc->precompute_ref);
    case S_USE_VLLM: return get_bool(c, key, val, &sc->use_vllm);
    case S_VLLM_MODE:
        if (strcmp(val, "server") && strcmp(val, "colocate"))
            return failf(c, ML_ERR_INVALID, _("'%s' must be server or colocate, got '%.60s'"), key, val);
        sc->vllm_server = !strcmp(val, "server");
        return ML_OK;
    case S_VLLM_UTIL:
        if (!get_real(val, &x) || x <= 0 || x > 1)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a number above 0 and at most 1, got '%.60s'"), key, val);
        sc->vllm_util_permille = (uint32_t)(x * 1000 + 0.5);
        return ML_OK;
    default: break;
    }
    return ML_OK;
}

/* The stack settings that are not LLaMA-Factory keys: versions, the head, the k-bit preparation,
 * the empty_cache interval, the trainer. */
static enum ml_status special_run(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    uint64_t v = 0;
    enum ml_status st = ML_OK;
    switch (d->id) {
    case S_BNB_VERSION:
    case S_PEFT_VERSION: {
        struct ml_diag vd;
        ml_diag_init(&vd);
        uint32_t *dst = d->id == S_BNB_VERSION ? &t->versions.bitsandbytes : &t->versions.peft;
        if (ml_version_parse(val, dst, &vd) != ML_OK)
            return failf(c, ML_ERR_INVALID, _("'%s' must be a version like 0.43.2, got '%.60s'"), d->key, val);
        return ML_OK;
    }
    case S_HEAD: {
        static const struct choice heads[] = {
            {"causal_lm", ML_HEAD_CAUSAL_LM}, {"seq_cls", ML_HEAD_SEQ_CLS}, {NULL, 0}};
        if (!choose(val, heads, &v))
            return failf(c, ML_ERR_INVALID, _("'%s' must be causal_lm or seq_cls, got '%.60s'"), d->key, val);
        t->head = (enum ml_head)v;
        return ML_OK;
    }
    case S_KBIT_PREPARE: {
        static const struct choice kbit[] = {
            {"none", ML_KBIT_NONE}, {"full", ML_KBIT_FULL}, {"trl_cast", ML_KBIT_TRL_CAST}, {NULL, 0}};
        if (!choose(val, kbit, &v))
            return failf(c, ML_ERR_INVALID, _("'%s' must be none, full or trl_cast, got '%.60s'"), d->key, val);
        t->kbit_prepare = (enum ml_kbit_prepare)v;
        return ML_OK;
    }
    case S_TRAINER: {
        static const struct choice trainers[] = {{"hf", ML_TRAINER_HF}, {"ms-swift", ML_TRAINER_MS_SWIFT}, {NULL, 0}};
        if (!choose(val, trainers, &v))
            return failf(c, ML_ERR_INVALID, _("'%s' must be hf or ms-swift, got '%.60s'"), d->key, val);
        t->trainer = (enum ml_trainer)v;
        return ML_OK;
    }
    case S_EMPTY_CACHE:
        st = get_count(c, d->key, val, 0, MAX_ACCUM, &v);
        if (st == ML_OK)
            t->empty_cache_steps = v;
        return st;
    default: return ML_OK;
    }
}

/* TRL's own keys (--framework trl; trl/trainer/sft_config.py and dpo_config.py max_length, the
 * sequence cap; model_config.py ModelConfig use_peft, lora_r, load_in_4bit / load_in_8bit,
 * attn_implementation), read as the LLaMA-Factory keys they stand for. Under another framework
 * max_length is a generation length (generating_args.py: no memory of its own here) and the
 * ModelConfig keys are not read, with a warning. */
static enum ml_status special_trl(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_train *t = c->t;
    const char *key = d->key;
    if (t->framework != ML_FW_TRL) {
        if (strcmp(key, "max_length"))
            ml_train_warn(t, _("'%s' is a key of TRL's ModelConfig, read under --framework trl; ignored"), key);
        return ML_OK;
    }
    struct key_def as = *d;
    bool b = false;
    enum ml_status st;
    if (!strcmp(key, "max_length")) {
        as.id = S_CUTOFF;
        return special_data(c, &as, val);
    }
    if (!strcmp(key, "lora_r")) {
        uint64_t v;
        st = get_count(c, key, val, 1, MAX_RANK, &v);
        if (st == ML_OK)
            t->lora_rank = v;
        return st;
    }
    if (!strcmp(key, "attn_implementation")) {
        static const struct choice impls[] = {
            {"eager", 0}, {"sdpa", 1}, {"flash_attention_2", 2}, {"flash_attention_3", 2}, {NULL, 0}};
        static const char *const lf[] = {"disabled", "sdpa", "fa2"};
        uint64_t v;
        if (!choose(val, impls, &v))
            return failf(c, ML_ERR_INVALID,
                         _("'%s' must be eager, sdpa, flash_attention_2 or flash_attention_3, got '%.60s'"), key, val);
        as.id = S_FLASH;
        return special_kernels(c, &as, lf[v]);
    }
    st = get_bool(c, key, val, &b);
    if (st != ML_OK)
        return st;
    if (!strcmp(key, "use_peft")) {
        as.id = S_FT;
        return special_method(c, &as, b ? "lora" : "full");
    }
    if (!b) /* load_in_4bit / load_in_8bit: false */
        return ML_OK;
    as.id = S_QBIT;
    return special_method(c, &as, key[8] == '4' ? "4" : "8");
}

static enum ml_status apply_special(struct ctx *c, const struct key_def *d, const char *val, bool is_null)
{
    if (is_null)
        return special_null(c, d);
    switch (d->id) {
    case S_NONE: break;
    case S_MODEL: return copy_out(c, d->key, val, c->model_name, c->model_name_len);
    case S_STAGE:
    case S_FT:
    case S_LORA_TARGET:
    case S_ADDITIONAL:
    case S_LORA_DROPOUT:
    case S_FREEZE_LAYERS:
    case S_QBIT:
    case S_QMETHOD: return special_method(c, d, val);
    case S_SAVE_STEPS:
    case S_EVAL_STEPS:
    case S_CUTOFF:
    case S_PACKING:
    case S_NEAT:
    case S_EVAL_STRATEGY: return special_data(c, d, val);
    case S_BF16:
    case S_FP16:
    case S_PURE_BF16:
    case S_FLASH:
    case S_HF_GC:
    case S_DISABLE_GC:
    case S_UNSLOTH_GC:
    case S_REENTRANT_GC:
    case S_OPTIM:
    case S_GALORE:
    case S_DEEPSPEED:
    case S_FSDP:
    case S_FSDP_CONFIG: return special_kernels(c, d, val);
    case S_BNB_VERSION:
    case S_PEFT_VERSION:
    case S_HEAD:
    case S_KBIT_PREPARE:
    case S_EMPTY_CACHE:
    case S_TRAINER: return special_run(c, d, val);
    case S_PREF_LOSS:
    case S_REF_MODEL:
    case S_REF_QBIT:
    case S_REWARD_MODEL:
    case S_REWARD_TYPE:
    case S_REWARD_QBIT:
    case S_MAX_NEW:
    case S_NUM_GEN:
    case S_STEPS_PER_GEN:
    case S_BETA:
    case S_PRECOMPUTE:
    case S_USE_VLLM:
    case S_VLLM_MODE:
    case S_VLLM_UTIL: return special_stage(c, d, val);
    case S_FREEZE_VISION:
    case S_FREEZE_PROJ:
    case S_FREEZE_LANG:
    case S_IMG_MAX:
    case S_IMG_MIN:
    case S_VID_MAX:
    case S_VID_MIN:
    case S_VID_FPS:
    case S_VID_MAXLEN:
    case S_IMAGES:
    case S_VIDEOS:
    case S_IMAGE_SIZE:
    case S_VIDEO_SECONDS: return special_vlm(c, d, val);
    case S_CP_SIZE:
    case S_V1_PEFT:
    case S_V1_QUANT:
    case S_V1_DIST:
    case S_V1_KERNEL:
    case S_V1_OPTIM:
    case S_V1_BATCHING:
    case S_V1_ACT_CKPT: return special_v1(c, d, val);
    case S_TRL: return special_trl(c, d, val);
    }
    return ML_OK;
}

/* Apply one scalar value to the key it belongs to (d NULL: an unknown key). */
static enum ml_status apply_scalar(struct ctx *c, const struct key_def *d, const char *val, bool plain)
{
    bool is_null = yaml_null(val, plain);
    if (!d)
        return ML_OK;
    struct ml_train *t = c->t;
    uint64_t v;
    enum ml_status st;
    switch (d->kind) {
    case K_IGNORE: return ML_OK;
    case K_REFUSE:
        if (is_null || (d->quiet && (yaml_bool(val) == yaml_bool(d->quiet) || ieq(val, d->quiet))))
            return ML_OK;
        return failf(c, ML_ERR_INVALID, _("'%s': %s"), d->key, _(d->note));
    case K_WARN: {
        if (is_null)
            return ML_OK;
        bool quiet = d->quiet
                         ? (ieq(val, d->quiet) || (yaml_bool(d->quiet) >= 0 && yaml_bool(val) == yaml_bool(d->quiet)))
                         : is_off(val);
        if (!quiet && ++t->unmodelled)
            ml_train_warn(t, _("'%s' changes memory but is not modelled; %s"), d->key, _(d->note));
        return ML_OK;
    }
    case K_BOOL:
        if (is_null)
            return ML_OK;
        return get_bool(c, d->key, val, (bool *)((char *)t + d->off));
    case K_POS:
        if (is_null)
            return ML_OK;
        st = get_count(c, d->key, val, 1, d->max, &v);
        if (st == ML_OK)
            *(uint64_t *)((char *)t + d->off) = v;
        return st;
    case K_U32:
        if (is_null)
            return ML_OK;
        st = get_count(c, d->key, val, 0, d->max, &v);
        if (st == ML_OK)
            *(uint32_t *)((char *)t + d->off) = (uint32_t)v;
        return st;
    case K_SPECIAL: return apply_special(c, d, val, is_null);
    }
    return ML_OK;
}

/* ---- resolution after the whole input --------------------------------------------------- */

static enum ml_status resolve(struct ctx *c)
{
    struct ml_train *t = c->t;
    struct pending *p = &c->p;

    if (p->bf16_key && p->fp16_key) {
        c->line = p->prec_line;
        c->col = p->prec_col;
        return failf(c, ML_ERR_INVALID, _("'bf16' and 'fp16' cannot both be true"));
    }
    if (p->prec_touched || !c->set_mode) {
        if (p->pure_bf16)
            t->precision = ML_PREC_PURE_BF16;
        else if (p->bf16)
            t->precision = ML_PREC_BF16;
        else if (p->fp16)
            t->precision = ML_PREC_FP16;
        else if (c->schema == SCHEMA_V1)
            t->precision = ML_PREC_FP32; /* v1 fsdp2.py get_mp_policy: bf16 false = fp32 params */
        else {
            t->precision = ML_PREC_BF16;
            ml_train_warn(t, _("no bf16, fp16 or pure_bf16: LLaMA-Factory then loads the model in the "
                               "checkpoint dtype and trains without autocast; modelled as bf16"));
        }
    }

    if (p->method_touched) {
        if (p->quant_bits && (p->ft == FT_FULL || p->ft == FT_FREEZE)) {
            c->line = p->quant_line;
            c->col = p->quant_col;
            return failf(c, ML_ERR_INVALID,
                         _("'quantization_bit' needs finetuning_type lora or oft (LLaMA-Factory "
                           "quantizes only for LoRA/OFT), got %s"),
                         p->ft == FT_FULL ? "full" : "freeze");
        }
        t->quant_bits = p->quant_bits;
        switch (p->ft) {
        case FT_FULL: t->method = ML_METHOD_FULL; break;
        case FT_FREEZE: t->method = ML_METHOD_FREEZE; break;
        case FT_LORA:
        case FT_OFT: t->method = p->quant_bits ? ML_METHOD_QLORA : ML_METHOD_LORA; break;
        }
    }

    if (p->gc_touched) {
        bool on = p->hf_gc || (t->framework == ML_FW_LLAMAFACTORY && !p->gc_disabled);
        if (!on)
            t->grad_ckpt = ML_GC_OFF;
        else if (p->unsloth_gc)
            t->grad_ckpt = ML_GC_UNSLOTH;
        else if (!p->reentrant_gc)
            t->grad_ckpt = ML_GC_NON_REENTRANT;
        else
            t->grad_ckpt = ML_GC_REENTRANT;
    }

    if (p->pack_touched) {
        /* parser.py: packing defaults to stage == pt; neat_packing implies packing. */
        bool pk = p->packing >= 0 ? p->packing == 1 : t->stage == ML_STAGE_PT;
        t->neat_packing = p->neat;
        t->packing = pk || p->neat;
        /* The SFT collator pads to a multiple of 8 (pad_to_multiple_of=8); a pack is padded to
         * cutoff_len, then rounded the same way: s = ceil(cutoff_len / 8) * 8 either way. */
        if (p->cutoff)
            t->seq_len = (p->cutoff + 7) / 8 * 8;
    }

    if (p->galore) {
        t->optim = ML_OPTIM_GALORE_ADAMW;
        t->optim_set = true;
    }
    if (p->eval_on)
        t->do_eval = true;
    return ML_OK;
}

/* ---- the YAML event reader -------------------------------------------------------------- */

struct yp {
    yaml_parser_t parser;
    yaml_event_t ev;
    bool have;      /* ev holds an event to delete */
    uint32_t depth; /* open mappings and sequences */
    struct ctx *c;
    const char *data;
    size_t len;
};

static uint32_t clamp32(size_t v)
{
    return v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void mark_at(struct ctx *c, yaml_mark_t m)
{
    c->line = clamp32(m.line + 1);
    c->col = clamp32(m.column + 1);
}

/* A syntax error that a key glued to its value explains (`cutoff_len:1024` on line 3 makes
 * libyaml stop at the end of the file): report that line and the key. */
static bool glued_error(struct yp *y)
{
    char word[KEY_MAX], key[KEY_MAX];
    uint32_t at =
        ml_yaml_glued_key(y->data, y->len, y->c->line ? y->c->line : UINT32_MAX, word, sizeof(word), key, sizeof(key));
    if (!at)
        return false;
    y->c->line = at;
    y->c->col = 1;
    size_t kl = strlen(key);
    (void)failf(y->c, ML_ERR_PARSE,
                _("'%s': no space after ':', so YAML does not read a key '%s' here (write '%s: %s')"), word, key, key,
                strlen(word) > kl ? word + kl + 1 : "");
    return true;
}

/* Delete the current event and read the next, refusing aliases, anchors and deep nesting. */
static enum ml_status yp_next(struct yp *y)
{
    struct ctx *c = y->c;
    if (y->have) {
        yaml_event_delete(&y->ev);
        y->have = false;
    }
    if (!yaml_parser_parse(&y->parser, &y->ev)) {
        const yaml_parser_t *ps = &y->parser;
        if (ps->error == YAML_MEMORY_ERROR)
            return failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
        if (ps->error == YAML_READER_ERROR)
            ml_diag_locate(y->data, y->len, ps->problem_offset, &c->line, &c->col);
        else
            mark_at(c, ps->problem_mark);
        if (glued_error(y))
            return ML_ERR_PARSE;
        const char *problem = ps->problem ? ps->problem : "syntax error";
        if (ps->context)
            return failf(c, ML_ERR_PARSE, _("malformed YAML: %s, %s"), ps->context, problem);
        return failf(c, ML_ERR_PARSE, _("malformed YAML: %s"), problem);
    }
    y->have = true;
    const yaml_event_t *e = &y->ev;
    mark_at(c, e->start_mark);
    switch (e->type) {
    case YAML_ALIAS_EVENT: return failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
    case YAML_SCALAR_EVENT:
        if (e->data.scalar.anchor)
            return failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if ((e->type == YAML_SEQUENCE_START_EVENT && e->data.sequence_start.anchor) ||
            (e->type == YAML_MAPPING_START_EVENT && e->data.mapping_start.anchor))
            return failf(c, ML_ERR_PARSE, _("anchors and aliases are not supported"));
        if (++y->depth > YAML_MAX_DEPTH)
            return failf(c, ML_ERR_PARSE, _("YAML nested deeper than %d levels"), YAML_MAX_DEPTH);
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (y->depth)
            y->depth--;
        break;
    default: break;
    }
    return ML_OK;
}

/* The current event opened a collection: read through its end. */
static enum ml_status yp_skip(struct yp *y)
{
    uint32_t target = y->depth - 1;
    while (y->depth > target) {
        enum ml_status st = yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_STREAM_END_EVENT || y->ev.type == YAML_NO_EVENT)
            return failf(y->c, ML_ERR_PARSE, _("malformed YAML: unexpected end of input"));
    }
    return ML_OK;
}

static const char *scalar_text(const yaml_event_t *e)
{
    return (const char *)e->data.scalar.value;
}

static bool scalar_plain(const yaml_event_t *e)
{
    return e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || e->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

/* A list given to a key that takes names (lora_target: [q_proj, v_proj]): join with sep. */
static enum ml_status read_list(struct yp *y, const char *key, char sep, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (;;) {
        enum ml_status st = yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return failf(y->c, ML_ERR_INVALID, _("'%s' must be a list of names"), key);
        const char *s = scalar_text(&y->ev);
        size_t k = strlen(s);
        if (n + k + 2 > cap)
            return failf(y->c, ML_ERR_INVALID, _("'%s' list is longer than %zu bytes"), key, cap - 1);
        if (n)
            buf[n++] = sep;
        memcpy(buf + n, s, k + 1);
        n += k;
    }
}

/* The sub-keys of a mapping that take a list of names (joined with commas). */
static bool sub_takes_list(const char *k)
{
    return !strcmp(k, "target_modules") || !strcmp(k, "modules_to_save") || !strcmp(k, "freeze_trainable_modules") ||
           !strcmp(k, "freeze_extra_modules");
}

/* A mapping value (fsdp_config: {fsdp_version: 2, ...}, the v1 plugin mappings): one level of
 * scalar keys, lists of names where a key takes them, anything deeper skipped. */
static enum ml_status read_submap(struct yp *y, const struct key_def *d)
{
    for (;;) {
        enum ml_status st = yp_next(y);
        if (st != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return failf(y->c, ML_ERR_PARSE, _("keys of '%s' must be plain names"), d->key);
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", scalar_text(&y->ev));
        st = yp_next(y);
        if (st != ML_OK)
            return st;
        const char *val = NULL;
        bool plain = true;
        char buf[LIST_MAX];
        if (y->ev.type == YAML_SCALAR_EVENT) {
            val = scalar_text(&y->ev);
            plain = scalar_plain(&y->ev);
        } else if (y->ev.type == YAML_SEQUENCE_START_EVENT && d->id != S_FSDP_CONFIG && sub_takes_list(key)) {
            uint32_t line = y->c->line, col = y->c->col;
            if ((st = read_list(y, key, ',', buf, sizeof(buf))) != ML_OK)
                return st;
            y->c->line = line;
            y->c->col = col;
            val = buf;
            plain = false;
        } else if (y->ev.type == YAML_SEQUENCE_START_EVENT || y->ev.type == YAML_MAPPING_START_EVENT) {
            if ((st = yp_skip(y)) != ML_OK)
                return st;
            continue;
        }
        if (!val)
            continue;
        bool is_null = yaml_null(val, plain);
        st = d->id == S_FSDP_CONFIG ? apply_fsdp_config(y->c, key, val, is_null)
                                    : apply_v1_sub(y->c, d, key, val, is_null);
        if (st != ML_OK)
            return st;
    }
}

static bool takes_mapping(const struct key_def *d)
{
    return d && d->kind == K_SPECIAL &&
           (d->id == S_FSDP_CONFIG || d->id == S_V1_PEFT || d->id == S_V1_QUANT || d->id == S_V1_DIST ||
            d->id == S_V1_KERNEL || d->id == S_V1_OPTIM);
}

/* The value event of key (d: its table entry, NULL if unknown) is current: apply it. */
static enum ml_status apply_value(struct yp *y, const struct key_def *d, const char *key)
{
    struct ctx *c = y->c;
    const yaml_event_t *e = &y->ev;
    if (e->type == YAML_SCALAR_EVENT)
        return apply_scalar(c, d, scalar_text(e), scalar_plain(e));

    bool list = e->type == YAML_SEQUENCE_START_EVENT;
    if (list && d && d->kind == K_SPECIAL && (d->id == S_LORA_TARGET || d->id == S_ADDITIONAL || d->id == S_FSDP)) {
        char buf[LIST_MAX];
        uint32_t line = c->line, col = c->col;
        enum ml_status st = read_list(y, key, d->id == S_FSDP ? ' ' : ',', buf, sizeof(buf));
        if (st != ML_OK)
            return st;
        c->line = line;
        c->col = col;
        return apply_scalar(c, d, buf, false);
    }
    if (!list && takes_mapping(d))
        return read_submap(y, d);
    if (!d || d->kind == K_IGNORE)
        return yp_skip(y);
    if (d->kind == K_WARN) {
        c->t->unmodelled++;
        ml_train_warn(c->t, _("'%s' changes memory but is not modelled; %s"), d->key, _(d->note));
        return yp_skip(y);
    }
    if (d->kind == K_REFUSE)
        return failf(c, ML_ERR_INVALID, _("'%s': %s"), d->key, _(d->note));
    if (d->kind == K_SPECIAL && d->id == S_DEEPSPEED) {
        ml_train_warn(c->t, _("an inline deepspeed mapping is not read; pass the DeepSpeed JSON file"));
        return yp_skip(y);
    }
    return failf(c, ML_ERR_INVALID,
                 list ? _("'%s' must be a single value, not a list") : _("'%s' must be a single value, not a mapping"),
                 key);
}

/* FNV-1a, for the duplicate-key check. */
static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* What the run is for: LLaMA-Factory's inference YAMLs (infer_backend, examples/inference) and
 * export YAMLs (export_dir, examples/merge_lora) have no training key. */
static void note_purpose(struct ctx *c, const char *key)
{
    static const char *const train_keys[] = {
        "stage",      "do_train",  "dataset",       "finetuning_type", "output_dir", "per_device_train_batch_size",
        "cutoff_len", "deepspeed", "train_dataset", "micro_batch_size"};
    for (size_t i = 0; i < sizeof(train_keys) / sizeof(train_keys[0]); i++)
        if (!strcmp(key, train_keys[i]))
            c->seen_train = true;
    c->seen_infer = c->seen_infer || !strcmp(key, "infer_backend");
    c->seen_export = c->seen_export || !strcmp(key, "export_dir");
}

/* Up to the top-level mapping: the stream, a document (not an empty file), a mapping. */
static enum ml_status document_start(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_STREAM_START_EVENT)
        return failf(c, ML_ERR_PARSE, _("malformed YAML: no stream start"));
    if ((st = yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type == YAML_STREAM_END_EVENT)
        return failf(c, ML_ERR_PARSE, _("empty file, expected a mapping of LLaMA-Factory keys"));
    if ((st = yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return glued_error(y) ? ML_ERR_PARSE
                              : failf(c, ML_ERR_PARSE, _("expected a mapping of LLaMA-Factory keys at the top level"));
    return ML_OK;
}

/* After the top-level mapping: the end of the document, and no second one. */
static enum ml_status document_end(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type != YAML_DOCUMENT_END_EVENT)
        return failf(c, ML_ERR_PARSE, _("malformed YAML: expected the end of the document"));
    if ((st = yp_next(y)) != ML_OK)
        return st;
    if (y->ev.type == YAML_DOCUMENT_START_EVENT)
        return failf(c, ML_ERR_PARSE, _("more than one YAML document; expected one mapping"));
    return ML_OK;
}

/* Does a command-line override replace this top-level key (OmegaConf.merge)? */
static bool overridden(const struct ctx *c, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < c->n_ov; i++)
        if (c->ov[i].key_len == n && !memcmp(c->ov[i].key, key, n))
            return true;
    return false;
}

static enum ml_status read_document(struct yp *y)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = document_start(y)) != ML_OK)
        return st;

    uint64_t seen[SEEN_MAX];
    size_t n_seen = 0;
    /* The first bad value is reported only once the rest of the document has parsed: a
     * syntax error further down (which often explains the odd value) comes first. */
    struct ml_diag first;
    enum ml_status first_st = ML_OK;
    memset(&first, 0, sizeof(first));
    for (;;) {
        if ((st = yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return failf(c, ML_ERR_PARSE, _("keys must be plain names, not lists or mappings"));
        const char *raw = scalar_text(&y->ev);
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", raw);
        bool long_key = strlen(raw) >= sizeof(key);
        uint64_t h = hash_key(raw);
        for (size_t i = 0; i < n_seen; i++)
            if (seen[i] == h)
                return failf(c, ML_ERR_PARSE, _("duplicate key '%s'"), key);
        if (n_seen < SEEN_MAX)
            seen[n_seen++] = h;
        const struct key_def *d = long_key ? NULL : lookup_in(c->schema, key);
        c->n_keys++;
        note_purpose(c, key);
        if (overridden(c, key)) {
            c->n_known++;
            if ((st = yp_next(y)) != ML_OK)
                return st;
            if ((y->ev.type == YAML_SEQUENCE_START_EVENT || y->ev.type == YAML_MAPPING_START_EVENT) &&
                (st = yp_skip(y)) != ML_OK)
                return st;
            continue;
        }
        if (d)
            c->n_known++;
        else if (c->n_unknown++ < UNKNOWN_MAX)
            (void)snprintf(c->unknown[c->n_unknown - 1], KEY_MAX, "%s", key);
        if (first_st != ML_OK)
            d = NULL;
        if ((st = yp_next(y)) != ML_OK)
            return st;
        st = apply_value(y, d, key);
        if (st == ML_ERR_INVALID && first_st == ML_OK) {
            first_st = st;
            if (c->diag)
                first = *c->diag;
            /* Back to the top mapping if the value failed inside a list or mapping. */
            while (y->depth > 1) {
                if ((st = yp_next(y)) != ML_OK)
                    return st;
                if (y->ev.type == YAML_STREAM_END_EVENT || y->ev.type == YAML_NO_EVENT)
                    return failf(c, ML_ERR_PARSE, _("malformed YAML: unexpected end of input"));
            }
        } else if (st != ML_OK) {
            return st;
        }
    }
    if ((st = document_end(y)) != ML_OK)
        return st;
    if (first_st != ML_OK && c->diag)
        *c->diag = first;
    return first_st;
}

/* Keys neither LLaMA-Factory nor memledger knows: LLaMA-Factory refuses them (HfArgumentParser
 * parse_dict, allow_extra_keys false); memledger ignores them with a warning, naming the near
 * misses. */
static void warn_unknown(struct ctx *c)
{
    char rest[ML_WARNING_LEN] = "";
    size_t n_rest = 0;
    uint32_t shown = c->n_unknown < UNKNOWN_MAX ? c->n_unknown : UNKNOWN_MAX;
    for (uint32_t i = 0; i < shown; i++) {
        const char *near = near_key(c->schema, c->unknown[i]);
        if (near) {
            ml_train_warn(c->t,
                          _("'%s' is not a LLaMA-Factory%s key (LLaMA-Factory refuses it); ignored; did you "
                            "mean '%s'?"),
                          c->unknown[i], c->schema == SCHEMA_V1 ? " v1" : "", near);
            continue;
        }
        size_t l = strlen(rest);
        (void)snprintf(rest + l, sizeof(rest) - l, "%s'%s'", n_rest ? ", " : "", c->unknown[i]);
        n_rest++;
    }
    if (c->n_unknown > shown)
        n_rest += c->n_unknown - shown;
    if (n_rest)
        ml_train_warn(c->t, _("%zu key%s that neither LLaMA-Factory nor memledger knows, ignored: %.120s%s"), n_rest,
                      n_rest == 1 ? "" : "s", rest, c->n_unknown > shown ? ", ..." : "");
}

/* Does a line start (column 1) with "key:"? */
static bool line_key(const char *line, const char *end, const char *key)
{
    size_t n = strlen(key);
    return (size_t)(end - line) > n && !strncmp(line, key, n) && line[n] == ':';
}

enum file_kind { KIND_V0, KIND_V1, KIND_ACCELERATE };

/*
 * Which file this is, from its top-level keys as they start lines: an accelerate config
 * (compute_environment, distributed_type: accelerate commands/config/cluster.py writes them),
 * LLaMA-Factory's v1 schema (model:, or its plugin keys, without model_name_or_path), or v0. A
 * text sniff: the reader that follows still parses the whole file.
 */
static enum file_kind sniff_kind(const char *data, size_t len, char *which, size_t which_n)
{
    static const char *const v1_keys[] = {"model",         "peft_config",      "dist_config",  "quant_config",
                                          "kernel_config", "micro_batch_size", "train_dataset"};
    bool v0 = false, v1 = false;
    const char *end = data + len;
    for (const char *p = data; p && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if (line_key(p, le, "compute_environment") || line_key(p, le, "distributed_type")) {
            (void)snprintf(which, which_n, "%s",
                           line_key(p, le, "distributed_type") ? "distributed_type" : "compute_environment");
            return KIND_ACCELERATE;
        }
        if (line_key(p, le, "model_name_or_path"))
            v0 = true;
        for (size_t i = 0; i < sizeof(v1_keys) / sizeof(v1_keys[0]); i++)
            if (line_key(p, le, v1_keys[i]))
                v1 = true;
        p = eol ? eol + 1 : NULL;
    }
    return v1 && !v0 ? KIND_V1 : KIND_V0;
}

/* Parse bytes with the event reader. */
static enum ml_status parse_text(struct ctx *c, const char *data, size_t len)
{
    struct yp y;
    memset(&y, 0, sizeof(y));
    y.c = c;
    y.data = data;
    y.len = len;
    if (!yaml_parser_initialize(&y.parser))
        return failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)(len ? data : ""), len);
    enum ml_status st = read_document(&y);
    if (y.have)
        yaml_event_delete(&y.ev);
    yaml_parser_delete(&y.parser);
    return st;
}

static bool known_v0(const char *key, void *arg)
{
    (void)arg;
    return lookup_in(SCHEMA_V0, key) != NULL;
}

static bool known_v1(const char *key, void *arg)
{
    (void)arg;
    return lookup_in(SCHEMA_V1, key) != NULL;
}

/*
 * Parse the file, first restoring lost line breaks (a config pasted into a chat or a web form
 * arrives as `model_name_or_path: x template: alpaca cutoff_len: 1024 ...` on one line): when
 * every `key:` word of such a line is a known key, the keys are read one per line with a
 * warning; when one is not, the file is refused with a hint. Errors in restored text are
 * reported at the original line.
 */
static enum ml_status parse_restored(struct ctx *c, const char *data, size_t len)
{
    struct ml_yaml_restore r;
    if (ml_yaml_restore_breaks(len ? data : "", len, c->schema == SCHEMA_V1 ? known_v1 : known_v0, NULL, &r) != ML_OK)
        return failf(c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    if (r.blocker[0]) {
        c->line = r.blocker_line;
        c->col = 0;
        char blocker[sizeof(r.blocker)];
        memcpy(blocker, r.blocker, sizeof(blocker));
        uint32_t n = r.n_keys;
        ml_yaml_restore_release(&r);
        return failf(c, ML_ERR_PARSE,
                     _("%u 'key:' words on one line: its line breaks seem lost (a pasted config?); "
                       "not re-split, since '%s' is not a LLaMA-Factory key"),
                     n, blocker);
    }
    if (!r.buf)
        return parse_text(c, data, len);
    ml_train_warn(c->t,
                  _("line %u holds %u keys: its line breaks seem lost (a pasted config?); read as one key per line"),
                  r.line, r.n_keys);
    enum ml_status st = parse_text(c, r.buf, r.len);
    if (st != ML_OK && c->diag && c->diag->line && c->diag->line <= r.n_lines) {
        c->diag->line = r.line_of[c->diag->line - 1];
        c->diag->col = 0;
    }
    ml_yaml_restore_release(&r);
    return st;
}

/* One override, as a scalar of the file's schema (a dotted key reaches into a mapping key). */
static enum ml_status apply_override(struct ctx *c, const struct ml_train_override *o)
{
    char key[KEY_MAX], val[LIST_MAX];
    if (!o->key_len || o->key_len >= sizeof(key))
        return failf(c, ML_ERR_INVALID, _("'%.*s' is not a key"), (int)(o->key_len > 60 ? 60 : o->key_len), o->key);
    memcpy(key, o->key, o->key_len);
    key[o->key_len] = '\0';
    if (o->value && strlen(o->value) >= sizeof(val))
        return failf(c, ML_ERR_INVALID, _("'%s': the value is longer than %zu bytes"), key, sizeof(val) - 1);
    (void)snprintf(val, sizeof(val), "%s", o->value ? o->value : "true");
    bool plain = true;
    size_t vn = strlen(val);
    if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        plain = false;
    } else if (vn >= 2 && val[0] == '[' && val[vn - 1] == ']') {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
    }
    char *dot = strchr(key, '.');
    if (dot) {
        *dot = '\0';
        const struct key_def *pd = lookup_in(c->schema, key);
        if (pd && takes_mapping(pd)) {
            return pd->id == S_FSDP_CONFIG ? apply_fsdp_config(c, dot + 1, val, yaml_null(val, plain))
                                           : apply_v1_sub(c, pd, dot + 1, val, yaml_null(val, plain));
        }
        *dot = '.';
    }
    /* The v1 command (sft, dpo, rm) sets the stage, which is not a v1 key. */
    const struct key_def *d = lookup_in(c->schema, key);
    if (!d && !strcmp(key, "stage"))
        d = lookup_in(SCHEMA_V0, key);
    if (!d) {
        if (c->n_unknown++ < UNKNOWN_MAX)
            (void)snprintf(c->unknown[c->n_unknown - 1], KEY_MAX, "%s", key);
        return ML_OK;
    }
    c->n_known++;
    return apply_scalar(c, d, val, plain);
}

static enum ml_status apply_overrides(struct ctx *c)
{
    const char *file = c->origin;
    c->origin = c->ov_origin ? c->ov_origin : "command line";
    c->line = c->col = 0;
    enum ml_status st = ML_OK;
    for (size_t i = 0; i < c->n_ov && st == ML_OK; i++)
        st = apply_override(c, &c->ov[i]);
    c->origin = file;
    return st;
}

static enum ml_status apply_yaml(struct ml_train *t, const char *data, size_t len, const char *origin,
                                 const struct ml_train_override *ov, size_t n_ov, const char *ov_origin,
                                 char *model_name, size_t model_name_len, char *deepspeed_path,
                                 size_t deepspeed_path_len, struct ml_diag *diag)
{
    if (model_name && model_name_len)
        model_name[0] = '\0';
    if (deepspeed_path && deepspeed_path_len)
        deepspeed_path[0] = '\0';
    struct ml_train work = *t;
    struct ctx c = {.t = &work,
                    .set_mode = false,
                    .origin = origin,
                    .diag = diag,
                    .model_name = model_name,
                    .model_name_len = model_name_len,
                    .ds_path = deepspeed_path,
                    .ds_path_len = deepspeed_path_len,
                    .ov = ov,
                    .n_ov = n_ov,
                    .ov_origin = ov_origin};
    if (!data)
        len = 0;
    if (len > YAML_MAX_BYTES)
        return failf(&c, ML_ERR_TOOBIG, _("%zu bytes is too large for a training YAML (limit 4 MiB)"), len);
    if (len && memchr(data, '\0', len)) {
        ml_diag_locate(data, len, (size_t)((const char *)memchr(data, '\0', len) - data), &c.line, &c.col);
        return failf(&c, ML_ERR_PARSE, _("binary data (a NUL byte), expected YAML text"));
    }
    char which[32] = "";
    enum file_kind kind = sniff_kind(len ? data : "", len, which, sizeof(which));
    if (kind == KIND_ACCELERATE)
        return failf(&c, ML_ERR_INVALID,
                     _("this is an accelerate config (%s), not a LLaMA-Factory YAML: pass it "
                       "with --accelerate"),
                     which);
    c.schema = kind == KIND_V1 ? SCHEMA_V1 : SCHEMA_V0;
    pending_init(&c.p, &work, false);
    if (c.schema == SCHEMA_V1) {
        /* v1 TrainingArguments: bf16 true; no peft_config = full fine-tuning; activation
         * checkpointing on, non-reentrant (core/base_trainer.py). */
        c.p.bf16 = true;
        c.p.ft = FT_FULL;
        c.p.method_touched = true;
        c.p.gc_touched = true;
        c.p.reentrant_gc = false;
        c.p.gc_disabled = false;
        work.micro_batch = 1; /* micro_batch_size default 1 */
    }

    enum ml_status st = len || !n_ov ? parse_restored(&c, data, len) : ML_OK;
    if (st == ML_OK && n_ov)
        st = apply_overrides(&c);
    if (st == ML_OK && c.n_keys && !c.n_known) {
        c.line = c.col = 0;
        st = failf(&c, ML_ERR_INVALID, _("no LLaMA-Factory training key here ('%s', ...): not a training YAML"),
                   c.unknown[0]);
    }
    if (st == ML_OK && !c.seen_train && !c.n_ov && (c.seen_infer || c.seen_export)) {
        c.line = c.col = 0;
        if (c.seen_infer)
            st = failf(&c, ML_ERR_INVALID,
                       _("an inference config (infer_backend, no training key), not a training "
                         "run: its serving memory is 'memledger infer --config %s'"),
                       c.origin);
        else
            st = failf(&c, ML_ERR_INVALID,
                       _("an export config (export_dir, no training key): merging and exporting "
                         "are not a training run"));
    }
    if (st == ML_OK)
        warn_unknown(&c);
    if (st == ML_OK)
        st = resolve(&c);
    if (st != ML_OK) {
        if (model_name && model_name_len)
            model_name[0] = '\0';
        if (deepspeed_path && deepspeed_path_len)
            deepspeed_path[0] = '\0';
        return st;
    }
    *t = work;
    return ML_OK;
}

/* ---- --set KEY=VALUE -------------------------------------------------------------------- */

static void trim(char *s)
{
    size_t n = strlen(s), i = 0;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    if (i)
        memmove(s, s + i, n - i + 1);
}

static enum ml_status set_one(struct ml_train *t, const char *key_value, struct ml_diag *diag)
{
    struct ml_train work = *t;
    struct ctx c = {.t = &work, .set_mode = true, .origin = "--set", .diag = diag};
    const char *kv = key_value ? key_value : "";
    const char *eq = strchr(kv, '=');
    char key[KEY_MAX], val[LIST_MAX];
    size_t klen = eq ? (size_t)(eq - kv) : 0;
    if (!eq || klen >= sizeof(key) || strlen(eq + 1) >= sizeof(val))
        return failf(&c, ML_ERR_INVALID, _("expected KEY=VALUE, got '%.60s'"), kv);
    memcpy(key, kv, klen);
    key[klen] = '\0';
    (void)snprintf(val, sizeof(val), "%s", eq + 1);
    trim(key);
    trim(val);
    if (!key[0])
        return failf(&c, ML_ERR_INVALID, _("expected KEY=VALUE, got '%.60s'"), kv);
    /* A quoted value is a string (never null or a YAML boolean, as in a file). */
    bool plain = true;
    size_t vn = strlen(val);
    if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        plain = false;
    }
    /* A flow list ([q_proj, v_proj]) for the keys that take lists: its items, comma-separated. */
    vn = strlen(val);
    if (plain && vn >= 2 && val[0] == '[' && val[vn - 1] == ']') {
        memmove(val, val + 1, vn - 2);
        val[vn - 2] = '\0';
        trim(val);
    }
    pending_init(&c.p, &work, true);

    enum ml_status st;
    if (!strncmp(key, "fsdp_config.", 12)) {
        st = apply_fsdp_config(&c, key + 12, val, yaml_null(val, plain));
    } else {
        const struct key_def *d = lookup(key);
        if (!d) {
            const char *near = near_key(SCHEMA_V0, key);
            if (near)
                ml_train_warn(&work,
                              _("--set %.60s: neither LLaMA-Factory nor memledger knows this key; ignored; "
                                "did you mean '%s'?"),
                              key, near);
            else
                ml_train_warn(&work, _("--set %.60s: neither LLaMA-Factory nor memledger knows this key; ignored"),
                              key);
            *t = work;
            return ML_OK;
        }
        if (d->kind == K_SPECIAL && (d->id == S_MODEL || d->id == S_DEEPSPEED)) {
            /* File names belong to the command line's own options. */
            return failf(&c, ML_ERR_INVALID,
                         _("'%s' cannot be changed with --set; use the command's "
                           "option for it"),
                         key);
        }
        st = apply_scalar(&c, d, val, plain);
    }
    if (st == ML_OK)
        st = resolve(&c);
    if (st != ML_OK)
        return st;
    *t = work;
    return ML_OK;
}

/* A YAML or --set that fails leaves the run as it was, warnings included. */
static enum ml_status keep_warnings(struct ml_train *t, uint32_t n_warn, enum ml_status st)
{
    if (st != ML_OK && t->warnings)
        t->warnings->n = n_warn;
    return st;
}

enum ml_status ml_train_apply_yaml(struct ml_train *t, const char *data, size_t len, const char *origin,
                                   char *model_name, size_t model_name_len, char *deepspeed_path,
                                   size_t deepspeed_path_len, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn,
                         apply_yaml(t, data, len, origin, NULL, 0, NULL, model_name, model_name_len, deepspeed_path,
                                    deepspeed_path_len, diag));
}

enum ml_status ml_train_apply_yaml_with(struct ml_train *t, const char *data, size_t len, const char *origin,
                                        const struct ml_train_override *ov, size_t n_ov, const char *ov_origin,
                                        char *model_name, size_t model_name_len, char *deepspeed_path,
                                        size_t deepspeed_path_len, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn,
                         apply_yaml(t, data, len, origin ? origin : "command line", ov, n_ov, ov_origin, model_name,
                                    model_name_len, deepspeed_path, deepspeed_path_len, diag));
}

enum ml_status ml_train_set(struct ml_train *t, const char *key_value, struct ml_diag *diag)
{
    uint32_t n_warn = t->warnings ? t->warnings->n : 0;
    return keep_warnings(t, n_warn, set_one(t, key_value, diag));
}

/* ---- the reader for the other LLaMA-Factory configs (yaml_walk.h) ----------------------- */

bool ml_lf_key_known(const char *key)
{
    return lookup_in(SCHEMA_V0, key) != NULL;
}

const char *ml_lf_key_near(const char *key)
{
    return near_key(SCHEMA_V0, key);
}

struct walk {
    ml_yaml_entry_fn fn;
    void *arg;
};

/* Hand one value to the walker's function; its error is placed at the value. */
static enum ml_status walk_call(struct yp *y, const struct walk *w, const char *key, const char *val, bool is_null,
                                uint32_t line, uint32_t col)
{
    enum ml_status st = w->fn(w->arg, key, val, is_null, y->c->diag);
    if (st != ML_OK) {
        y->c->line = line;
        y->c->col = col;
        ml_diag_at(y->c->diag, y->c->origin, line, col);
    }
    return st;
}

/* The value of key is the current event: a scalar, a list of scalars, or a mapping of them. */
static enum ml_status walk_value(struct yp *y, const struct walk *w, const char *key)
{
    struct ctx *c = y->c;
    uint32_t line = c->line, col = c->col;
    enum ml_status st;
    if (y->ev.type == YAML_SCALAR_EVENT)
        return walk_call(y, w, key, scalar_text(&y->ev), yaml_null(scalar_text(&y->ev), scalar_plain(&y->ev)), line,
                         col);
    if (y->ev.type == YAML_SEQUENCE_START_EVENT) {
        char buf[LIST_MAX];
        if ((st = read_list(y, key, ',', buf, sizeof(buf))) != ML_OK)
            return st;
        return walk_call(y, w, key, buf, false, line, col);
    }
    for (;;) {
        if ((st = yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return ML_OK;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return failf(c, ML_ERR_PARSE, _("keys of '%s' must be plain names"), key);
        char full[2 * KEY_MAX];
        (void)snprintf(full, sizeof(full), "%s.%s", key, scalar_text(&y->ev));
        if ((st = yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_SCALAR_EVENT)
            st = walk_call(y, w, full, scalar_text(&y->ev), yaml_null(scalar_text(&y->ev), scalar_plain(&y->ev)),
                           c->line, c->col);
        else
            st = yp_skip(y);
        if (st != ML_OK)
            return st;
    }
}

static enum ml_status walk_document(struct yp *y, const struct walk *w)
{
    struct ctx *c = y->c;
    enum ml_status st;
    if ((st = document_start(y)) != ML_OK)
        return st;
    uint64_t seen[SEEN_MAX];
    size_t n_seen = 0;
    for (;;) {
        if ((st = yp_next(y)) != ML_OK)
            return st;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (y->ev.type != YAML_SCALAR_EVENT)
            return failf(c, ML_ERR_PARSE, _("keys must be plain names, not lists or mappings"));
        char key[KEY_MAX];
        (void)snprintf(key, sizeof(key), "%s", scalar_text(&y->ev));
        uint64_t h = hash_key(scalar_text(&y->ev));
        for (size_t i = 0; i < n_seen; i++)
            if (seen[i] == h)
                return failf(c, ML_ERR_PARSE, _("duplicate key '%s'"), key);
        if (n_seen < SEEN_MAX)
            seen[n_seen++] = h;
        if ((st = yp_next(y)) != ML_OK || (st = walk_value(y, w, key)) != ML_OK)
            return st;
    }
    return document_end(y);
}

enum ml_status ml_yaml_walk(const char *data, size_t len, const char *origin, ml_yaml_entry_fn fn, void *arg,
                            struct ml_diag *diag)
{
    struct ctx c = {.t = NULL, .origin = origin, .diag = diag};
    if (!data)
        len = 0;
    if (len > YAML_MAX_BYTES)
        return failf(&c, ML_ERR_TOOBIG, _("%zu bytes is too large for a LLaMA-Factory YAML (limit 4 MiB)"), len);
    if (len && memchr(data, '\0', len)) {
        ml_diag_locate(data, len, (size_t)((const char *)memchr(data, '\0', len) - data), &c.line, &c.col);
        return failf(&c, ML_ERR_PARSE, _("binary data (a NUL byte), expected YAML text"));
    }
    struct yp y;
    memset(&y, 0, sizeof(y));
    y.c = &c;
    y.data = len ? data : "";
    y.len = len;
    if (!yaml_parser_initialize(&y.parser))
        return failf(&c, ML_ERR_NOMEM, _("out of memory reading YAML"));
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)y.data, len);
    struct walk w = {fn, arg};
    enum ml_status st = walk_document(&y, &w);
    if (y.have)
        yaml_event_delete(&y.ev);
    yaml_parser_delete(&y.parser);
    return st;
}
