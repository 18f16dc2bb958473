/*
 * train_yaml_keys.c - the LLaMA-Factory YAML keys: one table per schema (v0: hparams/{model,data,
 * finetuning}_args.py and TrainingArguments; v1: src/llamafactory/v1/config/{model,data,training}_args.py), each row
 * saying how its value maps onto struct ml_train, and their lookup.
 */
#include "train_yaml_int.h"

/* ---- the key table ---------------------------------------------------------------------- */

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

/* The YAML columns of ML_SETTINGS (memledger/settings.h) as rows: YK(dialects, "key", HOW), HOW
 * POS(field, max) or SPECIAL(id). */
#define YK(dialects, k, how) YK_ROW(k, YK_##how),
#define YK_ROW(k, ...)                                                                                                 \
    {                                                                                                                  \
        k, __VA_ARGS__, NULL, NULL                                                                                     \
    }
#define YK_POS(field, mx)                                                            K_POS, S_NONE, F(field), mx
#define YK_SPECIAL(id)                                                               K_SPECIAL, id, 0, 0
#define YAML_ROWS(id, track, flag, field, type, unit, owners, yaml, yaml_v1, ...)    yaml
#define YAML_V1_ROWS(id, track, flag, field, type, unit, owners, yaml, yaml_v1, ...) yaml_v1

static const struct key_def key_table[] = {
    /* the settings a flag also sets, LLaMA-Factory's, TrainingArguments' and TRL's keys of each:
     * their YAML column (include/memledger/settings.h) */
    ML_SETTINGS(YAML_ROWS)
    /* model_args.py */
    SPECIAL("model_name_or_path", S_MODEL),
    BOOLF("upcast_layernorm", upcast_layernorm),
    BOOLF("upcast_lmhead_output", upcast_lmhead_output),
    BOOLF("enable_liger_kernel", liger_kernel),
    SPECIAL("quantization_method", S_QMETHOD),
    BOOLF("double_quantization", double_quant),
    /* data_args.py */
    SPECIAL("packing", S_PACKING),
    SPECIAL("neat_packing", S_NEAT),
    /* finetuning_args.py */
    SPECIAL("stage", S_STAGE),
    SPECIAL("lora_dropout", S_LORA_DROPOUT),
    SPECIAL("additional_target", S_ADDITIONAL),
    SPECIAL("freeze_trainable_layers", S_FREEZE_LAYERS),
    SPECIAL("use_galore", S_GALORE),
    SPECIAL("hyper_parallel_cp_size", S_CP_SIZE),
    /* finetuning_args.py / model_args.py: vision-language models (ml_ty_special_vlm) */
    SPECIAL("freeze_vision_tower", S_FREEZE_VISION),
    SPECIAL("freeze_multi_modal_projector", S_FREEZE_PROJ),
    SPECIAL("freeze_language_model", S_FREEZE_LANG),
    SPECIAL("image_max_pixels", S_IMG_MAX),
    SPECIAL("image_min_pixels", S_IMG_MIN),
    SPECIAL("video_max_pixels", S_VID_MAX),
    SPECIAL("video_min_pixels", S_VID_MIN),
    SPECIAL("video_fps", S_VID_FPS),
    SPECIAL("video_maxlen", S_VID_MAXLEN),
    /* The same limits under the names LLaMA-Factory gave them before image_max_pixels and
     * video_max_pixels (hparams/model_args.py ProcessorArguments image_resolution 512 x 512,
     * video_resolution 128 x 128; data/mm_plugin.py _preprocess_image scales by the same sqrt). */
    SPECIAL("image_resolution", S_IMG_MAX),
    SPECIAL("video_resolution", S_VID_MAX),
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
    /* transformers TrainingArguments (TRL's SFTConfig / DPOConfig max_length and ModelConfig keys
     * are rows of ML_SETTINGS: ml_ty_special_trl) */
    POS("per_device_eval_batch_size", eval_batch, MAX_BATCH),
    BOOLF("do_eval", do_eval),
    SPECIAL("eval_strategy", S_EVAL_STRATEGY),
    SPECIAL("evaluation_strategy", S_EVAL_STRATEGY),
    BOOLF("save_only_model", save_only_model),
    BOOLF("use_liger_kernel", liger_kernel),
    U32("dataloader_num_workers", dataloader_workers, 1024),
    SPECIAL("torch_empty_cache_steps", S_EMPTY_CACHE),
    /* Settings of the stack that are not LLaMA-Factory keys (--set; docs/train-config.md). */
    SPECIAL("bitsandbytes_version", S_BNB_VERSION),
    SPECIAL("peft_version", S_PEFT_VERSION),
    SPECIAL("trl_version", S_TRL_VERSION),
    SPECIAL("accelerate_version", S_ACCEL_VERSION),
    SPECIAL("head", S_HEAD),
    SPECIAL("kbit_prepare", S_KBIT_PREPARE),
    BOOLF("fixed_length", fixed_length),
    BOOLF("dequantize", dequantize),
    BOOLF("chunked_ce", chunked_ce),
    BOOLF("torch_compile", torch_compile), /* TrainingArguments / LLaMA-Factory; torchtune's compile */
    SPECIAL("trainer", S_TRAINER),
    SPECIAL("load_dtype", S_LOAD_DTYPE),
    SPECIAL("custom_sharded_layers", S_TT_SHARDED), /* torchtune full_finetune_distributed */

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
    SPECIAL("accelerator_config", S_ACCEL_CONFIG), /* TrainingArguments; a mapping (events.c) */
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
    /* the settings a flag also sets: their YAML_V1 column (include/memledger/settings.h) */
    ML_SETTINGS(YAML_V1_ROWS) SPECIAL("model", S_MODEL),
    IGN("model_class"),
    IGN("trust_remote_code"),
    IGN("custom_chat_template"),
    IGN("init_config"),
    SPECIAL("kernel_config", S_V1_KERNEL),
    IGN("train_dataset"),
    IGN("eval_dataset"),
    IGN("output_dir"),
    IGN("global_batch_size"),
    IGN("learning_rate"),
    IGN("num_train_epochs"),
    IGN("max_steps"),
    IGN("max_grad_norm"),
    SPECIAL("batching_strategy", S_V1_BATCHING),
    IGN("batching_workers"),
    SPECIAL("dist_config", S_V1_DIST),
    IGN("dp_size"),
    SPECIAL("cp_size", S_CP_SIZE),
    IGN("cp_mode"),
    WARNQ("mp_replicate_size", "1",
          N_("replicated FSDP2 groups (HSDP) are not modelled; estimated as one "
             "group over all GPUs")),
    IGN("mp_shard_size"),
    IGN("dist_timeout"),
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

const struct key_def *ml_ty_lookup_in(enum schema sc, const char *key)
{
    const struct key_def *tab = sc == SCHEMA_V1 ? v1_table : key_table;
    size_t n = sc == SCHEMA_V1 ? sizeof(v1_table) / sizeof(v1_table[0]) : sizeof(key_table) / sizeof(key_table[0]);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(tab[i].key, key))
            return &tab[i];
    return NULL;
}

const struct key_def *ml_ty_lookup(const char *key)
{
    return ml_ty_lookup_in(SCHEMA_V0, key);
}

/* The known key closest to an unknown one, for "did you mean" (NULL: none near), by the same
 * rule as the model and GPU names (ml_near_limit). */
const char *ml_ty_near_key(enum schema sc, const char *key)
{
    const struct key_def *tab = sc == SCHEMA_V1 ? v1_table : key_table;
    size_t n = sc == SCHEMA_V1 ? sizeof(v1_table) / sizeof(v1_table[0]) : sizeof(key_table) / sizeof(key_table[0]);
    struct ml_near near = {{0}, {0}, 0};
    size_t limit = ml_near_limit(key);
    for (size_t i = 0; i < n; i++)
        ml_near_offer(&near, key, tab[i].key, limit);
    return near.n ? near.name[0] : NULL;
}
