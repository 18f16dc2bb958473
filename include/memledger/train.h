/*
 * train.h - the settings of a training run, as memledger models them.
 *
 * struct ml_train is a plain value filled in three layers, each overriding the one before:
 * the framework profile's defaults (ml_train_defaults), the LLaMA-Factory YAML and DeepSpeed
 * JSON (ml_train_apply_yaml, ml_zero_from_json), then command-line flags and --set KEY=VALUE.
 * Every framework behaviour that changes bytes is a named field here with a documented default
 * (docs/cli/train.md, "Framework profiles"; the keys in docs/train-config.md); the ledger
 * (ledger.h) reads nothing else.
 */
#ifndef ML_TRAIN_H
#define ML_TRAIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/settings.h"
#include "memledger/status.h"

/* The software stack whose defaults apply (--framework). */
enum ml_framework {
    ML_FW_LLAMAFACTORY, /* LLaMA-Factory -> HF Trainer -> DeepSpeed / FSDP (default) */
    ML_FW_HF,           /* plain HF Trainer + PEFT */
    ML_FW_LITGPT,       /* Lightning LitGPT (bf16-true, no fp32 master) */
    ML_FW_TORCHTUNE,    /* torchtune recipes */
    ML_FW_TRL,          /* TRL trainers (DPOTrainer, GRPOTrainer) on the HF Trainer */
    ML_FW_COUNT
};

/* The training stage (LLaMA-Factory finetuning_args.stage; grpo: TRL GRPOTrainer). orpo is the
 * old LLaMA-Factory stage name, read as dpo with pref_loss orpo. */
enum ml_stage {
    ML_STAGE_PT,
    ML_STAGE_SFT,
    ML_STAGE_RM,
    ML_STAGE_DPO,
    ML_STAGE_KTO,
    ML_STAGE_ORPO,
    ML_STAGE_PPO,
    ML_STAGE_GRPO
};

/* LLaMA-Factory pref_loss (finetuning_args.py): orpo and simpo need no reference model. */
enum ml_pref_loss { ML_PREF_SIGMOID, ML_PREF_HINGE, ML_PREF_IPO, ML_PREF_KTO_PAIR, ML_PREF_ORPO, ML_PREF_SIMPO };

/* PPO reward_model_type (finetuning_args.py): lora = an adapter loaded into the policy model,
 * full = a third model, api = a server (nothing on the GPU). */
enum ml_reward_type { ML_REWARD_LORA, ML_REWARD_FULL, ML_REWARD_API };

/* A TRL beta: not given (the trainer's default: 0.0 for GRPO, 0.1 for DPO), zero, or not zero. */
enum ml_beta { ML_BETA_DEFAULT, ML_BETA_ZERO, ML_BETA_NONZERO };

/*
 * What a preference or RL stage holds beside the policy (docs/ledger.md, "Stages"). All zero is
 * every default: the values below say what 0 means.
 */
struct ml_stage_cfg {
    enum ml_pref_loss pref_loss;     /* pref_loss (sigmoid) */
    bool ref_model;                  /* ref_model: a separate checkpoint, modelled with the policy's
                                        architecture (none: the policy itself is copied) */
    uint32_t ref_quant_bits;         /* ref_model_quantization_bit: 0, 4 or 8 */
    bool reward_model;               /* reward_model given (PPO needs one) */
    enum ml_reward_type reward_type; /* reward_model_type (lora) */
    uint32_t reward_quant_bits;      /* reward_model_quantization_bit: 0, 4 or 8 */
    uint64_t max_new_tokens;         /* PPO generation max_new_tokens, TRL max_completion_length;
                                        0 = the default (LLaMA-Factory 1024, TRL 512) */
    uint32_t num_generations;        /* TRL GRPO completions per prompt; 0 = 8 */
    uint64_t steps_per_generation;   /* TRL GRPO; 0 = gradient_accumulation_steps */
    enum ml_beta beta;               /* TRL beta (GRPO: 0.0 = no reference model) */
    bool precompute_ref;             /* TRL DPO precompute_ref_log_probs: no reference kept */
    bool use_vllm;                   /* TRL use_vllm: generation by vLLM */
    bool vllm_server;                /* vllm_mode server (separate GPUs); else colocate */
    uint32_t vllm_util_permille;     /* vllm_gpu_memory_utilization x 1000; 0 = 300 (TRL 0.3) */
    bool oft;                        /* finetuning_type oft (modelled as LoRA, but LLaMA-Factory's
                                        create_ref_model copies the model for anything not lora) */
};

/*
 * Vision-language training (docs/ledger.md, "Vision-language training"): LLaMA-Factory's freeze
 * switches and resize limits (hparams/finetuning_args.py, model_args.py), and what memledger must
 * assume about the data. All zero is every default; the comments say what 0 means.
 */
struct ml_vlm_cfg {
    bool vision_trainable;     /* freeze_vision_tower: false (default true: frozen) */
    bool projector_trainable;  /* freeze_multi_modal_projector: false (default true: frozen) */
    bool language_frozen;      /* freeze_language_model: true (default false) */
    uint64_t image_max_pixels; /* 0 = 768 x 768 */
    uint64_t image_min_pixels; /* 0 = 32 x 32 */
    uint64_t video_max_pixels; /* 0 = 256 x 256 */
    uint64_t video_min_pixels; /* 0 = 16 x 16 */
    uint32_t video_fps_milli;  /* video_fps x 1000; 0 = 2.0 */
    uint32_t video_maxlen;     /* frames sampled at most; 0 = 128 */
    /* memledger's own (the data's shape, which no config states): */
    bool images_set;                    /* images_per_sample given (else 1 for a vision-language model) */
    uint32_t images_per_sample;         /* images in each sample */
    uint32_t videos_per_sample;         /* videos in each sample (0) */
    uint64_t image_width, image_height; /* the images' size; 0 = a square of image_max_pixels */
    uint32_t video_seconds;             /* a video's length; 0 = the longest LLaMA-Factory keeps
                                           (video_maxlen frames) */
};

/* The visual tokens a sample carries and the patches the tower sees (ml_vlm_resolve). */
struct ml_vlm_plan {
    uint64_t tokens_per_image;  /* language-model tokens of one image */
    uint64_t patches_per_image; /* patches the tower runs on for one image */
    uint64_t video_frames;      /* frames sampled from one video */
    uint64_t tokens_per_video, patches_per_video;
    uint64_t tokens;  /* per sample: images x tokens_per_image + videos x ... */
    uint64_t patches; /* per sample, into the tower */
};

/* The visual tokens of a sample for a tower (lib/setup/vision.c): LLaMA-Factory's resize, then
 * the processor's (Qwen smart_resize; fixed crops for SigLIP and Llama 4 tiles). */
void ml_vlm_resolve(const struct ml_vlm_cfg *v, const struct ml_arch *a, struct ml_vlm_plan *out);

/* How the stage's extra models are placed (ml_stage_resolve; the rules in docs/ledger.md). */
enum ml_ref_kind {
    ML_REF_NONE,        /* no reference log-probs (sft, pt, rm, orpo, simpo, GRPO beta 0) */
    ML_REF_ADAPTER_OFF, /* LoRA: the policy with its adapter disabled (no weights) */
    ML_REF_COPY,        /* a frozen second model (full/freeze, or ref_model given) */
    ML_REF_PRECOMPUTED  /* TRL precompute_ref_log_probs: computed once before training */
};

struct ml_stage_plan {
    uint32_t batch_factor;  /* sequences with grad per sample: 2 pairwise (dpo, rm), else 1 */
    uint32_t nograd_factor; /* sequences per sample of the largest no-grad forward per step
                               (reference, KTO's kl batch): 0 = none */
    uint32_t nograd_bytes;  /* its bytes per logit: 8 (bf16 -> fp32 copy -> log_softmax), 2 (TRL
                               GRPO: bf16 logits, selective_log_softmax row by row) */
    bool completion_logits; /* TRL GRPO: logits only for the completion (logits_to_keep) */
    bool fused_head;        /* TRL >= 1.15 DPO / KTO / GRPO: log-probs through the fused LM head,
                               no b x s x V logits (docs/ledger.md "TRL's fused LM head") */
    enum ml_ref_kind ref;
    uint32_t ref_quant_bits; /* the reference model's 4/8-bit base (0: compute dtype) */
    bool value_head;         /* rm, ppo: trainable v_head Linear(h, 1) */
    bool reward_copy;        /* ppo full: a frozen third model with a value head */
    bool reward_adapter;     /* ppo lora: a reward adapter loaded into the policy */
    uint32_t reward_quant_bits;
    uint64_t gen_tokens;    /* ppo, grpo: tokens generated per sequence (0: no generation) */
    uint64_t gen_sequences; /* sequences per device in one generation batch */
    uint32_t vllm_permille; /* grpo colocated vLLM: share of the card it takes (0: none) */
    const char *source;     /* the framework function the plan follows (static) */
};

enum ml_method {
    ML_METHOD_FULL,   /* every parameter trains */
    ML_METHOD_FREEZE, /* the last freeze_trainable_layers layers train */
    ML_METHOD_LORA,   /* frozen base + LoRA adapters */
    ML_METHOD_QLORA,  /* LoRA on a 4- or 8-bit quantized base (quant_bits) */
};

/* Precision policy (LLaMA-Factory bf16 / fp16 / pure_bf16; LitGPT bf16-true = pure bf16). */
enum ml_precision {
    ML_PREC_BF16,      /* bf16 compute, trainable params fp32 where the framework upcasts them */
    ML_PREC_FP16,      /* fp16 AMP with an fp32 master */
    ML_PREC_PURE_BF16, /* everything bf16, optimizer states included */
    ML_PREC_FP32       /* no mixed precision */
};

enum ml_optim {
    ML_OPTIM_ADAMW_TORCH,       /* torch AdamW foreach: +4 B/param sqrt transient in step */
    ML_OPTIM_ADAMW_TORCH_FUSED, /* fused: no large temporaries */
    ML_OPTIM_ADAMW_8BIT,        /* bitsandbytes 8-bit: 2 B/param of states */
    ML_OPTIM_PAGED_ADAMW_8BIT,  /* paged (unified memory): evictable states */
    ML_OPTIM_PAGED_ADAMW_32BIT,
    ML_OPTIM_ADAFACTOR,    /* factored second moment: ~4 B per row+col, no first moment */
    ML_OPTIM_SGD,          /* no momentum state (momentum 0, the HF default) */
    ML_OPTIM_GALORE_ADAMW, /* low-rank projected states */
    ML_OPTIM_COUNT
};

enum ml_grad_ckpt {
    ML_GC_OFF,
    ML_GC_REENTRANT, /* torch.utils.checkpoint use_reentrant=True (LLaMA-Factory default) */
    ML_GC_NON_REENTRANT,
    ML_GC_UNSLOTH /* checkpoint inputs offloaded to host */
};

enum ml_attn {
    ML_ATTN_EAGER, /* materialised s^2 scores (LLaMA-Factory flash_attn: disabled) */
    ML_ATTN_SDPA,  /* torch SDPA (transformers' default) */
    ML_ATTN_FLASH  /* flash_attention_2 */
};

enum ml_fsdp_mode { ML_FSDP_NONE, ML_FSDP_FULL_SHARD, ML_FSDP_SHARD_GRAD_OP, ML_FSDP_HYBRID_SHARD };

/* A DeepSpeed size knob: "auto" (resolved from hidden_size as HF does) or a value. */
struct ml_ds_size {
    bool is_auto;   /* "auto" */
    bool is_set;    /* present in the file (else the DeepSpeed default applies) */
    uint64_t value; /* elements, when set and not auto */
};

/* DeepSpeed zero_optimization and the keys around it (deepspeed/runtime/zero/config.py). */
struct ml_zero {
    uint32_t stage;                     /* 0..3 */
    bool offload_optimizer;             /* offload_optimizer.device == cpu/nvme */
    bool offload_param;                 /* offload_param.device == cpu/nvme (stage 3) */
    bool pin_memory;                    /* pinned host buffers */
    bool overlap_comm;                  /* default: true for stage 3, false otherwise */
    bool overlap_comm_set;              /* present in the file */
    bool contiguous_gradients;          /* default true */
    bool reduce_scatter;                /* default true */
    bool gather_16bit_on_save;          /* stage3_gather_16bit_weights_on_model_save */
    struct ml_ds_size reduce_bucket;    /* default 5e8; auto = h^2 */
    struct ml_ds_size allgather_bucket; /* default 5e8 (unused by stage 3 and modern torch) */
    struct ml_ds_size prefetch_bucket;  /* stage3_prefetch_bucket_size: default 5e7; auto = 0.9 h^2 */
    struct ml_ds_size persistence;      /* stage3_param_persistence_threshold: 1e5; auto = 10 h */
    struct ml_ds_size max_live;         /* stage3_max_live_parameters: default 1e9 */
    struct ml_ds_size max_reuse;        /* stage3_max_reuse_distance: default 1e9 */
    struct ml_ds_size sub_group;        /* sub_group_size: default 1e9 */
    uint64_t model_persistence;         /* model_persistence_threshold; UINT64_MAX = unlimited */
    enum ml_dtype grad_accum_dtype;     /* data_types.grad_accum_dtype; UNKNOWN = model dtype */
    enum ml_dtype comm_dtype;           /* communication_data_type; UNKNOWN = training dtype */
    uint32_t hpz_partition_size;        /* zero_hpz_partition_size (ZeRO++), 1 = off */
    bool has_optimizer_block;           /* the file names an optimizer (else HF picks one) */
    bool gather_16bit_set;              /* stage3_gather_16bit_weights_on_model_save present */
    uint32_t int_batch;                 /* ML_DS_INT_*: top-level batch keys held as integers */
    uint64_t train_batch_size;          /* the file's integer train_batch_size (ML_DS_INT_GLOBAL) */
};

/* The top-level batch keys of a DeepSpeed file that hold integers, not "auto": transformers fills
 * "auto" from TrainingArguments and refuses an integer that disagrees with them
 * (integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_process fill_match,
 * trainer_config_finalize), so fit writes "auto" where a plan changes what they must equal. */
#define ML_DS_INT_MICRO  1u /* train_micro_batch_size_per_gpu = per_device_train_batch_size */
#define ML_DS_INT_ACCUM  2u /* gradient_accumulation_steps */
#define ML_DS_INT_GLOBAL 4u /* train_batch_size = world size x micro-batch x accumulation */

/* A version as the settings below encode it: major*10000 + minor*100 + patch. */
#define ML_VER(maj, min, pat) ((uint32_t)(maj)*10000u + (uint32_t)(min)*100u + (uint32_t)(pat))

/* Version-dependent behaviour, encoded major*10000 + minor*100 + patch. */
struct ml_versions {
    uint32_t transformers; /* loss copies (4.45 / 4.46-4.48 / >= 4.49), default optimizer */
    uint32_t deepspeed;    /* LoRA adapter dtype under ZeRO-3 (>= 0.19.2 keeps fp32) */
    uint32_t torch;        /* default optimizer (fused from 2.8), SDPA GQA (2.5), lazy CUDA module
                              loading (1.13), foreach AdamW (2.0), the LitGPT generation (< 2.2) */
    uint32_t bitsandbytes; /* MatMul4Bit keeps its input before 0.43.2 */
    uint32_t peft;         /* fp32 adapters by default from 0.12 (autocast_adapter_dtype) */
    uint32_t accelerate;   /* no_sync under FSDP2 (set_requires_gradient_sync) from 1.11 (F4) */
    uint32_t trl;          /* TRL's fused LM head in DPO / KTO / GRPO from 1.15 (0: not given, 1.16
                              assumed with a note and a widened interval: ml_trl_fused_head) */
};

/* The model head the run trains (transformers AutoModelFor...). */
enum ml_head {
    ML_HEAD_CAUSAL_LM, /* vocabulary logits and the causal-LM loss (default) */
    ML_HEAD_SEQ_CLS    /* sequence classification: a few labels, no vocabulary logits */
};

/* What the QLoRA loading path does to the non-quantized parameters (single GPU; TRL skips it
 * for sharded QLoRA). */
enum ml_kbit_prepare {
    ML_KBIT_NONE,    /* nothing (LLaMA-Factory, ms-swift, sharded QLoRA) */
    ML_KBIT_FULL,    /* PEFT prepare_model_for_kbit_training: every 16-bit parameter to fp32 */
    ML_KBIT_TRL_CAST /* ... then TRL peft_module_casting_to_bf16: only norms stay fp32 */
};

/* Whose training loop runs the step. The ledger's terms are the HF Trainer's for both; the
 * trainer picks the validation group of the run's 80 % interval (docs/ledger.md, "The interval"). */
enum ml_trainer {
    ML_TRAINER_HF,        /* transformers' Trainer and what builds on it (LLaMA-Factory, TRL) (default) */
    ML_TRAINER_MS_SWIFT,  /* ms-swift's `swift sft` (its Seq2SeqTrainer subclass) */
    ML_TRAINER_FSDP_QLORA /* Answer.AI's fsdp_qlora train.py: its own loop, which keeps the model
                             output (the logits) bound through backward and the optimizer step
                             (docs/ledger.md A1) */
};

/* The dtype the frozen weights are loaded in (from_pretrained torch_dtype). */
enum ml_load_dtype {
    ML_LOAD_COMPUTE, /* the run's compute dtype (bf16 / fp16; fp32 runs: fp32) (default) */
    ML_LOAD_FP32,    /* torch_dtype float32 under AMP: FSDP / DDP keep fp32 frozen weights (H6) */
    ML_LOAD_FP16     /* torch_dtype float16 under bf16 AMP: what transformers forces for a bitsandbytes
                        load given no torch_dtype (docs/ledger.md SW1) */
};

#define ML_MAX_WARNINGS 16
#define ML_WARNING_LEN  200

/* Warnings about a run's settings: keys read but not modelled, contradictions the frameworks
 * resolve silently. Caller-owned (3 KiB): struct ml_train only points at one, so the settings stay
 * small enough to copy for every candidate a search or a what-if evaluates. */
struct ml_warnings {
    uint32_t n;
    char text[ML_MAX_WARNINGS][ML_WARNING_LEN];
};

struct ml_train {
    enum ml_framework framework;
    enum ml_stage stage;
    struct ml_stage_cfg sc; /* stage-specific settings (reference, reward, TRL) */
    struct ml_vlm_cfg vlm;  /* vision-language training (freeze switches, resize) */
    enum ml_method method;
    uint64_t lora_rank;                  /* r */
    struct ml_lora_targets lora_targets; /* PEFT target names or all */
    bool lora_dropout;                   /* lora_dropout > 0: dropped input copies saved */
    struct ml_lora_targets additional;   /* additional_target: modules fully trained + saved */
    uint32_t freeze_trainable_layers;    /* freeze: last N layers train (LLaMA-Factory default 2) */
    uint32_t quant_bits;                 /* 0, 4 or 8 (quantization_bit) */
    bool double_quant;                   /* double_quantization (default true in LLaMA-Factory) */

    uint64_t seq_len; /* s: tokens fed to the model per sample */
    bool packing, neat_packing;
    uint64_t micro_batch;            /* b: per_device_train_batch_size */
    uint64_t grad_accum;             /* gradient_accumulation_steps */
    uint64_t global_batch;           /* the framework's global batch GA follows when no input sets
                                        GA (LitGPT TrainArgs.global_batch_size); 0: none */
    uint64_t eval_batch;             /* per_device_eval_batch_size; 0 = no eval */
    uint64_t save_steps, eval_steps; /* TrainingArguments save_steps / eval_steps as whole steps;
                                        0 = not given or a ratio of the total (< 1) */
    bool do_eval;

    enum ml_precision precision;
    enum ml_attn attn;
    enum ml_grad_ckpt grad_ckpt;
    bool upcast_layernorm, upcast_lmhead_output, liger_kernel;
    enum ml_optim optim;
    bool optim_set; /* chosen explicitly (else the version default) */

    struct ml_zero zero; /* zero.stage 0 and fsdp NONE = plain DDP */
    bool deepspeed;      /* a DeepSpeed config is in use */
    enum ml_fsdp_mode fsdp;
    uint32_t fsdp_version;     /* 1 or 2 */
    bool fsdp_offload;         /* fsdp cpu offload of params (+grads, states) */
    bool fsdp_full_state_dict; /* FSDP saves gather the full model on rank 0's CPU
                                  (fsdp_state_dict_type FULL_STATE_DICT) */
    bool fsdp_ram_efficient;   /* fsdp_cpu_ram_efficient_loading: only rank 0 reads the
                                  checkpoint into host RAM */
    uint32_t tp_size;          /* DeepSpeed AutoTP tensor_parallel.autotp_size: linear
                                  weights split this many ways; 0 or 1 = none */
    uint32_t cp_size;          /* context parallel ranks sharing each sequence (v0
                                  hyper_parallel_cp_size, v1 cp_size); 0 or 1 = none */

    bool save_only_model;     /* skip the optimizer state on save */
    bool expandable_segments; /* PYTORCH_(CUDA|HIP)_ALLOC_CONF=expandable_segments:True */
    uint32_t dataloader_workers;
    struct ml_versions versions;
    enum ml_head head;                 /* causal_lm (default) or seq_cls */
    enum ml_kbit_prepare kbit_prepare; /* hf: trl_cast; others: none */
    bool fixed_length;                 /* every batch is padded to seq_len (implied by packing) */
    uint64_t empty_cache_steps;        /* torch.cuda.empty_cache() every N steps; 0 = never */
    bool chunked_ce;                   /* torchtune CEWithChunkedOutputLoss (default true) */
    bool torch_compile;                /* torch.compile on the layers (and torchtune's loss) */
    enum ml_trainer trainer;           /* the training loop (default hf) */
    enum ml_load_dtype load_dtype;     /* frozen weights' load dtype (default: the compute dtype) */
    bool dequantize;                   /* load an fp8 / mxfp4 checkpoint dequantized to the compute
                                          dtype (FineGrainedFP8Config / Mxfp4Config(dequantize=True));
                                          LLaMA-Factory always does (configure_quantization) */
    bool sync_each_batch;              /* accelerator_config.gradient_accumulation_kwargs.sync_each_batch:
                             the Trainer syncs every micro-step, no no_sync (F4) */
    /* torchtune custom_sharded_layers names tok_embeddings / output: their own FSDP2 units */
    bool tt_shard_embed, tt_shard_head;

    uint32_t unmodelled;          /* settings read that change memory but are not modelled (their warnings):
                            the interval widens (docs/ledger.md, "The interval") */
    uint32_t defaulted;           /* 1u << ML_TK_*: tracked settings no input set, left at the
                                     profile's default (ml_train_default_owner says whose); the
                                     report says so. 0: not known (nothing is marked) */
    struct ml_warnings *warnings; /* where ml_train_warn records; NULL drops them. Set
                                     after ml_train_defaults; copies share it */
};

/* Where the run goes. */
struct ml_cluster {
    struct ml_gpu gpu;       /* one device's capacity */
    uint32_t gpus_per_node;  /* --num-gpus */
    uint32_t nodes;          /* --nodes */
    uint64_t host_ram_bytes; /* --host-ram, 0 = unknown */
};

/* How a run loads its checkpoint's stored format (config.json quantization_config; docs/ledger.md
 * "Training on a quantized checkpoint"). */
enum ml_ckpt_load {
    ML_LOAD_PLAIN,      /* not quantized */
    ML_LOAD_DEQUANT,    /* fp8 / mxfp4 dequantized to the compute dtype at load: LLaMA-Factory always
                           (model_utils/quantization.py configure_quantization), others with dequantize */
    ML_LOAD_BNB,        /* bitsandbytes 4/8-bit as stored: QLoRA */
    ML_LOAD_PACKED,     /* AWQ, GPTQ, compressed-tensors: packed weights + scales kept, LoRA on top */
    ML_LOAD_UNTRAINABLE /* a format transformers cannot train as stored (fp8, fbgemm_fp8, mxfp4:
                           their quantizers' is_trainable is False) */
};

/* The load of a's checkpoint under t (pure; lib/setup/train_check.c). */
enum ml_ckpt_load ml_train_checkpoint_load(const struct ml_train *t, const struct ml_arch *a);

/* What t cannot do with a's stored format, in one line naming the format (ML_ERR_UNSUPPORTED):
 * full / freeze on weights kept quantized, ZeRO-3 / FSDP where the framework refuses or memledger
 * does not model them, a format transformers cannot train. Called by ml_train_check and the
 * training ledger. */
enum ml_status ml_train_checkpoint_check(const struct ml_train *t, const struct ml_arch *a, struct ml_diag *diag);

/* "llamafactory", ...; never NULL. */
const char *ml_framework_name(enum ml_framework f);
const char *ml_method_name(enum ml_method m);
const char *ml_optim_name(enum ml_optim o);
const char *ml_attn_name(enum ml_attn a);
const char *ml_grad_ckpt_name(enum ml_grad_ckpt g);
const char *ml_precision_name(enum ml_precision p);

const char *ml_stage_name(enum ml_stage s);

/* The models, batches and generation a stage implies (lib/setup/stage.c; pure). */
void ml_stage_resolve(const struct ml_train *t, struct ml_stage_plan *out);

/* TRL's first release whose DPO, KTO and GRPO trainers score through the fused LM head, and the
 * release assumed when --trl-version is not given (docs/ledger.md "TRL's fused LM head"). */
#define ML_TRL_FUSED_HEAD ML_VER(1, 15, 0)
#define ML_TRL_ASSUMED    ML_VER(1, 16, 0)
/* The TRL release the run names, else ML_TRL_ASSUMED. */
uint32_t ml_trl_version(const struct ml_train *t);
bool ml_trl_fused_head(const struct ml_train *t);
/* TRL's SFTTrainer scores through the same head from 1.15, which the ledger does not price (whole
 * logits): true for an SFT / PT run under --framework trl that is (or may be) on such a release. */
bool ml_trl_sft_fused(const struct ml_train *t);

/* Set every field to the framework profile's defaults (docs/cli/train.md lists them). */
void ml_train_defaults(struct ml_train *t, enum ml_framework fw);

/* The profile defaults that follow from other settings, once every input is read: LitGPT's
 * gradient accumulation from its global batch over devices x micro batch when ga_given is false
 * (litgpt args.py TrainArgs.gradient_accumulation_iters; docs/ledger.md L7). devices: the
 * data-parallel ranks (GPUs per node x nodes). */
void ml_train_derive_defaults(struct ml_train *t, uint64_t devices, bool ga_given);

/* Record a warning in *w (dropped when w is NULL, when the same text is there already, or past
 * ML_MAX_WARNINGS). */
void ml_warnings_vadd(struct ml_warnings *w, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* ml_warnings_vadd into *t->warnings. */
void ml_train_warn(struct ml_train *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Apply a LLaMA-Factory YAML (bytes) to *t. Fills model_name (the model_name_or_path value, or "")
 * and deepspeed_path (the deepspeed: value, or ""), which the caller resolves relative to the YAML.
 * Keys that change memory are mapped; known keys that do not are ignored; keys that change memory
 * but are not modelled add a warning. Errors name the file, line and key: ML_ERR_PARSE (malformed
 * YAML, anchors/aliases refused, nesting over 32, over 4 MiB), ML_ERR_INVALID (bad value).
 */
enum ml_status ml_train_apply_yaml(struct ml_train *t, const char *data, size_t len, const char *origin,
                                   char *model_name, size_t model_name_len, char *deepspeed_path,
                                   size_t deepspeed_path_len, struct ml_diag *diag);

/* One override of a LLaMA-Factory command line: `key=value` (OmegaConf dotlist after a YAML) or
 * `--key value` (HfArgumentParser). key is not NUL-terminated (key_len bytes); value is NULL for
 * a bare `--flag` (true). Nested keys are dotted (peft_config.r, fsdp_config.fsdp_version). */
struct ml_train_override {
    const char *key;
    size_t key_len;
    const char *value;
};

/*
 * ml_train_apply_yaml with command-line overrides merged as OmegaConf.merge does: an override
 * replaces the YAML's value of that key (a dotted one the sub-key only), through the same key
 * table and schema as the file; data may be empty (the `--key value` form has no YAML). Errors
 * in overrides name ov_origin. No limit on their number.
 */
enum ml_status ml_train_apply_yaml_with(struct ml_train *t, const char *data, size_t len, const char *origin,
                                        const struct ml_train_override *ov, size_t n_ov, const char *ov_origin,
                                        char *model_name, size_t model_name_len, char *deepspeed_path,
                                        size_t deepspeed_path_len, struct ml_diag *diag);

/* A LLaMA-Factory command line, split (lib/setup/lf_cli.c; docs/cli/train.md). */
struct ml_lf_cmdline {
    const char *config;       /* the YAML or JSON given to it (NULL: the --key value form) */
    const char *accelerate;   /* accelerate launch --config_file FILE (NULL: none) */
    const char *command;      /* llamafactory-cli's sub-command ("" for a script) */
    uint32_t nnodes;          /* NNODES, torchrun --nnodes, accelerate --num_machines; 0 = not given */
    uint32_t nproc_per_node;  /* NPROC_PER_NODE, torchrun --nproc_per_node; 0 = not given */
    uint32_t visible_devices; /* CUDA_VISIBLE_DEVICES (ASCEND_RT_, HIP_): llamafactory-cli's device
                                 count when NPROC_PER_NODE is not given; 0 = not given */
    uint32_t num_processes;   /* accelerate launch --num_processes (all GPUs); 0 = not given */
    size_t n_ov;              /* overrides written to the caller's array */
};

/*
 * Split a LLaMA-Factory command line as its launcher reads it: leading VAR=value environment
 * (FORCE_TORCHRUN, NNODES, NPROC_PER_NODE, CUDA_VISIBLE_DEVICES, ...), then `llamafactory-cli`
 * (or `lmf`) with a sub-command, `accelerate launch [--config_file F] script`, `torchrun [...]
 * script` or `python script`, then either `CONFIG.yaml key=value ...` (hparams/parser.py
 * read_args: OmegaConf dotlist) or `--key value ...` (HfArgumentParser; a bare --flag is true).
 * Overrides point into argv (ov must hold argc entries). Errors name the argument.
 */
enum ml_status ml_lf_cmdline_parse(int argc, const char *const *argv, struct ml_lf_cmdline *out,
                                   struct ml_train_override *ov, size_t ov_cap, struct ml_diag *diag);

/*
 * Split a command line given as one string (`--lf "..."`) into words as a shell would for the
 * simple cases: spaces and tabs separate, '...' and "..." quote, a backslash escapes the next
 * character. buf (cap >= strlen(line) + 1) holds the words; argv (max entries) points into it.
 * Returns the number of words, or -1 for an unterminated quote or too many words.
 */
int ml_lf_split(const char *line, char *buf, size_t cap, const char **argv, int max);

/*
 * Visual tokens (lib/setup/vision.c, docs/ledger.md "Vision-language training"). Sides up to
 * 65536 pixels. ml_lf_image_resize: LLaMA-Factory's _preprocess_image (scale to at most
 * image_max_pixels, at least image_min_pixels; int() truncation). ml_smart_resize: the Qwen
 * processors' smart_resize with factor patch x merge. ml_visual_grid: both, then the tokens the
 * language model sees, (h/patch)(w/patch)/merge^2; *patches (if not NULL) the patches the tower
 * sees.
 */
void ml_lf_image_resize(uint64_t w, uint64_t h, uint64_t max_pixels, uint64_t min_pixels, uint64_t *ow, uint64_t *oh);
void ml_smart_resize(uint64_t h, uint64_t w, uint64_t factor, uint64_t min_pixels, uint64_t max_pixels, uint64_t *oh,
                     uint64_t *ow);
uint64_t ml_visual_grid(uint64_t w, uint64_t h, uint64_t image_max_pixels, uint64_t image_min_pixels, uint32_t patch,
                        uint32_t merge, uint64_t proc_min_pixels, uint64_t proc_max_pixels, uint64_t *patches);

/* What an accelerate config says beyond struct ml_train: the cluster and a DeepSpeed file. */
struct ml_accelerate {
    uint32_t num_processes;    /* all GPUs over all nodes; 0 = not given */
    uint32_t num_machines;     /* nodes; 0 = not given */
    char deepspeed_file[512];  /* deepspeed_config.deepspeed_config_file ("" = none) */
    char distributed_type[32]; /* as written (FSDP, DEEPSPEED, MULTI_GPU, NO) */
};

/*
 * Apply an accelerate config (YAML bytes, as `accelerate launch --config_file FILE` reads it;
 * lib/setup/accelerate.c, docs/train-config.md): distributed_type, mixed_precision, fsdp_config
 * and deepspeed_config onto *t; num_processes and num_machines into *out for the caller's
 * cluster. Errors name the file, line and key; a LLaMA-Factory YAML given here is refused.
 */
enum ml_status ml_train_apply_accelerate(struct ml_train *t, const char *data, size_t len, const char *origin,
                                         struct ml_accelerate *out, struct ml_diag *diag);

/*
 * Apply one KEY=VALUE override with YAML semantics (--set). Same errors as the YAML mapping.
 */
enum ml_status ml_train_set(struct ml_train *t, const char *key_value, struct ml_diag *diag);

/* The --set KEY=VALUE list in the order given: a warning for each key given more than once,
 * saying that its last value wins (they are applied in order). */
void ml_train_set_repeats(struct ml_train *t, const char *const *sets, int n);

/*
 * Apply a DeepSpeed config (JSON bytes) to *t: zero_optimization, bf16/fp16 blocks, data_types,
 * communication_data_type, optimizer presence. Numbers may be 1e9, "1e9", integers or "auto".
 */
enum ml_status ml_zero_from_json(struct ml_train *t, const char *data, size_t len, const char *origin,
                                 struct ml_diag *diag);

/*
 * Configure DeepSpeed as LLaMA-Factory's example config for that stage does (--zero N without a
 * --deepspeed file): ds_z0/ds_z2/ds_z3 [_offload]_config.json, "auto" where those files say auto.
 */
void ml_zero_preset(struct ml_train *t, uint32_t stage, bool offload);

/* The text of LLaMA-Factory's ds_z2 / ds_z3 example config, whose values ml_zero_preset sets (NULL
 * for another stage). */
const char *ml_zero_preset_json(uint32_t stage);

/* Resolve a DeepSpeed size knob for hidden size h: auto -> HF's value, unset -> DS default. */
uint64_t ml_zero_resolve(const struct ml_ds_size *k, uint64_t auto_value, uint64_t ds_default);

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py, notes §1.6, §1.8). */
#define ML_DS_REDUCE_BUCKET   500000000ull  /* reduce_bucket_size 5e8 */
#define ML_DS_PREFETCH_BUCKET 50000000ull   /* stage3_prefetch_bucket_size 5e7 */
#define ML_DS_PERSISTENCE     100000ull     /* stage3_param_persistence_threshold 1e5 */
#define ML_DS_MAX_LIVE        1000000000ull /* stage3_max_live_parameters 1e9 */
#define ML_DS_MAX_REUSE       1000000000ull /* stage3_max_reuse_distance 1e9 */
#define ML_DS_SUB_GROUP       1000000000ull /* sub_group_size 1e9 */

/* HF's "auto" (transformers/integrations/deepspeed.py, trainer_config_finalize) for hidden size
 * h: reduce_bucket_size h^2, stage3_prefetch_bucket_size int(0.9 h^2), persistence 10 h. */
uint64_t ml_zero_auto_prefetch(uint64_t h);

/* The sizes in force: the file's value, HF's auto, or DeepSpeed's default. */
uint64_t ml_zero_reduce_bucket(const struct ml_zero *z, uint64_t h);
uint64_t ml_zero_prefetch_bucket(const struct ml_zero *z, uint64_t h);
uint64_t ml_zero_persistence(const struct ml_zero *z, uint64_t h);
uint64_t ml_zero_max_live(const struct ml_zero *z);
uint64_t ml_zero_max_reuse(const struct ml_zero *z);
uint64_t ml_zero_sub_group(const struct ml_zero *z);

/* overlap_comm in force: the file's value, else DeepSpeed's default (true for stage 3 only). */
bool ml_zero_overlap(const struct ml_zero *z);

/* Parse "4.49.0" / "4.49" into major*10000+minor*100+patch. */
enum ml_status ml_version_parse(const char *s, uint32_t *out, struct ml_diag *diag);

/*
 * Check the combination for contradictions (pure_bf16 with ZeRO-3, fp16 and bf16 together,
 * neat_packing without flash attention, offload without ZeRO-3, ...): errors for impossible
 * runs, warnings (ml_train_warn) for the ones the frameworks silently change.
 */
enum ml_status ml_train_check(struct ml_train *t, const struct ml_arch *arch, const struct ml_cluster *c,
                              struct ml_diag *diag);

/* Does transformers refuse attention attn for this model (arch->no_sdpa / no_flash, the family
 * table; modeling_utils.py _sdpa_can_dispatch, _flash_attn_can_dispatch)? Never for a framework
 * that builds its own model (LitGPT, torchtune). Used by ml_train_check and by fit's knobs. */
bool ml_attn_refused(const struct ml_arch *arch, enum ml_framework fw, enum ml_attn attn);

/* The stage's contradictions (stage grpo without TRL, PPO without a reward model, GRPO's
 * num_generations not dividing the generation batch, ...); called by ml_train_check. */
enum ml_status ml_stage_check(const struct ml_train *t, const struct ml_cluster *c, struct ml_diag *diag);

/* AutoTP and context-parallel sizes against the GPUs and the ZeRO stage; called by
 * ml_train_check. */
enum ml_status ml_parallel_check(const struct ml_train *t, const struct ml_cluster *c, struct ml_diag *diag);

/* ---- tracked settings (lib/setup/tracked.c) ------------------------------------------------- */

/* The settings a command-line flag sets, tracked to tell which input set each and which won: the
 * rows of ML_SETTINGS (settings.h) whose TRACK is TK, in that order. */
#define ML_TK_ENUM_ROW(id, track, ...) ML_SETTING_IF_##track(ML_TK_##id, )
enum ml_tracked { ML_SETTINGS(ML_TK_ENUM_ROW) ML_TK_COUNT };
#undef ML_TK_ENUM_ROW

/* The flag that sets k ("--method"). */
const char *ml_tracked_flag(enum ml_tracked k);

/* The first YAML key of k in one of dialects (ML_SD_*, settings.h): "per_device_train_batch_size";
 * NULL when it has none (lib/setup/settings.c). */
const char *ml_tracked_key(enum ml_tracked k, unsigned dialects);

/* Do a and b differ in setting k? */
bool ml_tracked_differs(enum ml_tracked k, const struct ml_train *a, const struct ml_train *b);

/* Setting k of t in words ("lora_rank 16", "ZeRO-3", "offload optimizer"). */
void ml_tracked_value(const struct ml_train *t, enum ml_tracked k, char *out, size_t n);

/* Whose default tracked setting k is under framework fw's profile (ml_train_defaults): the class
 * or project that defines it ("TrainingArguments", "LLaMA-Factory", "PEFT", "transformers",
 * "TRL", "LitGPT", "torchtune"), "memledger" where the value is memledger's own assumption; NULL
 * for a setting whose default is "none" (DeepSpeed, offload, FSDP, the quantization bits). */
const char *ml_train_default_owner(enum ml_framework fw, enum ml_tracked k);
/* The same for a run t: its loop's own defaults where they replace the profile's (ms-swift's
 * batch, accumulation and checkpointing: "ms-swift"). */
const char *ml_train_default_owner_of(const struct ml_train *t, enum ml_tracked k);

/* Every tracked setting moved to another valid value: the files read over these and over the
 * defaults agree on a setting exactly when a file sets it (even to its default). */
void ml_tracked_perturb(struct ml_train *t);

#endif /* ML_TRAIN_H */
