/*
 * Preference and RL stages (lib/setup/stage.c and the stage terms of lib/ledger/train_stages.c):
 * which models a stage holds, as LLaMA-Factory's workflows and TRL's trainers decide it, and the
 * bytes of each term on a tiny Llama (V 1000, h 64, 2 layers, 4 heads / 2 KV of 16, P = 202,048).
 * The expected plans are read off the cited framework functions, the bytes written as the rules
 * of docs/ledger.md ("Stages"), not read back from the code.
 */
#include "ml_test.h"

#include "memledger/arch.h"
#include "memledger/catalog.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

static struct ml_arch arch;
static struct ml_inventory inv;
static struct ml_ledger led;
static struct ml_warnings sink;

#define P 202048ull
enum { V = 1000, H = 64 };

static struct ml_train from_yaml(enum ml_framework fw, const char *yaml)
{
    struct ml_train t;
    struct ml_diag d;
    char model[64], ds[64];
    ml_train_defaults(&t, fw);
    sink.n = 0;
    t.warnings = &sink;
    ml_diag_init(&d);
    if (ml_train_apply_yaml(&t, yaml, strlen(yaml), "train.yaml", model, sizeof(model), ds, sizeof(ds), &d) != ML_OK)
        fail_msg("%s:%u: %s", d.origin, d.line, d.msg);
    return t;
}

static struct ml_stage_plan plan_of(enum ml_framework fw, const char *yaml)
{
    struct ml_train t = from_yaml(fw, yaml);
    struct ml_stage_plan p;
    ml_stage_resolve(&t, &p);
    return p;
}

/* LLaMA-Factory: dpo/workflow.py, kto/workflow.py, rm/workflow.py, ppo/workflow.py with
 * trainer_utils.py create_ref_model / create_reward_model. */
static void test_llamafactory_plans(void **state)
{
    (void)state;
    struct ml_stage_plan p = plan_of(ML_FW_LLAMAFACTORY, "stage: sft\n");
    assert_int_equal(p.batch_factor, 1);
    assert_int_equal(p.ref, ML_REF_NONE);
    assert_false(p.value_head);

    /* Full DPO: pairwise batch and a frozen copy; LoRA DPO: the adapter is disabled instead. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: full\n");
    assert_int_equal(p.batch_factor, 2);
    assert_int_equal(p.nograd_factor, 2);
    assert_int_equal(p.ref, ML_REF_COPY);
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: freeze\n");
    assert_int_equal(p.ref, ML_REF_COPY);
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: lora\n");
    assert_int_equal(p.batch_factor, 2);
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    /* QLoRA is LoRA to create_ref_model. OFT is not (finetuning_type != "lora"): a copy. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nquantization_bit: 4\n");
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: oft\n");
    assert_int_equal(p.ref, ML_REF_COPY);
    /* use_ref_model is false for orpo and simpo: no reference forward at all. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: full\npref_loss: orpo\n");
    assert_int_equal(p.ref, ML_REF_NONE);
    assert_int_equal(p.nograd_factor, 0);
    assert_int_equal(p.batch_factor, 2);
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\npref_loss: simpo\n");
    assert_int_equal(p.ref, ML_REF_NONE);
    /* A named ref_model is loaded even for LoRA, with its own quantization. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\nref_model: some/ref\nref_model_quantization_bit: 4\n");
    assert_int_equal(p.ref, ML_REF_COPY);
    assert_int_equal(p.ref_quant_bits, 4);
    /* KTO: no pairwise batch, a no-grad kl batch of b, a reference always. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: kto\nfinetuning_type: full\n");
    assert_int_equal(p.batch_factor, 1);
    assert_int_equal(p.nograd_factor, 1);
    assert_int_equal(p.ref, ML_REF_COPY);
    /* rm: pairwise, value head, no reference. */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: rm\n");
    assert_int_equal(p.batch_factor, 2);
    assert_true(p.value_head);
    assert_int_equal(p.ref, ML_REF_NONE);
    /* ppo: value head, reference, reward by type, generation of max_new_tokens (default 1024). */
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: ppo\nreward_model: r\nper_device_train_batch_size: 3\n");
    assert_true(p.value_head);
    assert_true(p.reward_adapter);
    assert_false(p.reward_copy);
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    assert_int_equal(p.gen_tokens, 1024);
    assert_int_equal(p.gen_sequences, 3);
    p = plan_of(ML_FW_LLAMAFACTORY,
                "stage: ppo\nfinetuning_type: full\nreward_model: r\nreward_model_type: full\nmax_new_tokens: 256\n");
    assert_true(p.reward_copy);
    assert_int_equal(p.ref, ML_REF_COPY);
    assert_int_equal(p.gen_tokens, 256);
    p = plan_of(ML_FW_LLAMAFACTORY, "stage: ppo\nreward_model: http://x\nreward_model_type: api\n");
    assert_false(p.reward_copy);
    assert_false(p.reward_adapter);
}

/* TRL: dpo_trainer.py and grpo_trainer.py __init__, grpo_config.py defaults. */
static void test_trl_plans(void **state)
{
    (void)state;
    struct ml_stage_plan p = plan_of(ML_FW_TRL, "stage: dpo\nfinetuning_type: full\n");
    assert_int_equal(p.batch_factor, 2);
    assert_int_equal(p.ref, ML_REF_COPY);
    p = plan_of(ML_FW_TRL, "stage: dpo\nfinetuning_type: full\nprecompute_ref_log_probs: true\n");
    assert_int_equal(p.ref, ML_REF_PRECOMPUTED);
    p = plan_of(ML_FW_TRL, "stage: dpo\nfinetuning_type: lora\n");
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    /* GRPO: beta defaults to 0.0, so no reference; 8 generations, 512 completion tokens. */
    p = plan_of(ML_FW_TRL, "stage: grpo\nfinetuning_type: full\nper_device_train_batch_size: 2\n"
                           "gradient_accumulation_steps: 4\n");
    assert_int_equal(p.ref, ML_REF_NONE);
    assert_int_equal(p.gen_tokens, 512);
    assert_int_equal(p.gen_sequences, 8); /* b x steps_per_generation (= GA) */
    assert_true(p.completion_logits);
    p = plan_of(ML_FW_TRL, "stage: grpo\nfinetuning_type: full\nbeta: 0.04\nsteps_per_generation: 2\n");
    assert_int_equal(p.ref, ML_REF_COPY);
    assert_int_equal(p.gen_sequences, 16); /* default b 8 x 2 */
    p = plan_of(ML_FW_TRL, "stage: grpo\nbeta: 0.04\n");
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    p = plan_of(ML_FW_TRL, "stage: grpo\nuse_vllm: true\n");
    assert_int_equal(p.vllm_permille, 300);
    assert_int_equal(p.gen_sequences, 0);
    p = plan_of(ML_FW_TRL, "stage: grpo\nuse_vllm: true\nvllm_mode: server\n");
    assert_int_equal(p.vllm_permille, 0);
    /* The fused LM head: DPO, KTO and GRPO from TRL 1.15 (and when no version is given), not SFT,
     * not 1.14.2 (whose trainers build whole logits). */
    assert_true(plan_of(ML_FW_TRL, "stage: dpo\n").fused_head);
    assert_true(plan_of(ML_FW_TRL, "stage: grpo\ntrl_version: 1.15.0\n").fused_head);
    assert_false(plan_of(ML_FW_TRL, "stage: dpo\ntrl_version: 1.14.2\n").fused_head);
    assert_false(plan_of(ML_FW_TRL, "stage: sft\n").fused_head);
    assert_false(plan_of(ML_FW_LLAMAFACTORY, "stage: dpo\n").fused_head);
    /* KTO (kto_trainer.py): b rows with grad, the KL batch of b rows without, the reference as
     * DPO's (the adapter disabled under LoRA, a copy for a full fine-tune). */
    p = plan_of(ML_FW_TRL, "stage: kto\n");
    assert_int_equal(p.batch_factor, 1);
    assert_int_equal(p.nograd_factor, 1);
    assert_int_equal(p.ref, ML_REF_ADAPTER_OFF);
    assert_true(p.fused_head);
    assert_int_equal(plan_of(ML_FW_TRL, "stage: kto\nfinetuning_type: full\n").ref, ML_REF_COPY);
}

static void check_err(enum ml_framework fw, const char *yaml, uint32_t gpus, const char *want)
{
    struct ml_train t = from_yaml(fw, yaml);
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = gpus;
    c.nodes = 1;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_check(&t, NULL, &c, &d), ML_ERR_INVALID);
    if (!strstr(d.msg, want))
        fail_msg("'%s' lacks '%s'", d.msg, want);
}

static void test_stage_errors(void **state)
{
    (void)state;
    check_err(ML_FW_LLAMAFACTORY, "stage: grpo\n", 1, "--framework trl");
    check_err(ML_FW_LLAMAFACTORY, "stage: ppo\n", 1, "reward_model");
    check_err(ML_FW_LLAMAFACTORY, "stage: ppo\nreward_model: r\nfinetuning_type: full\n", 1, "reward_model_type lora");
    check_err(ML_FW_TRL, "stage: ppo\n", 1, "not modelled");
    /* KTO under TRL is modelled from 1.15, whose KTOTrainer scores through the fused head. */
    check_err(ML_FW_TRL, "stage: kto\ntrl_version: 1.14.2\n", 1, "from TRL 1.15");
    /* 1 GPU x b 3 x GA 1 = 3 completions, not a multiple of 8 generations. */
    check_err(ML_FW_TRL, "stage: grpo\nper_device_train_batch_size: 3\n", 1, "num_generations 8");
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_train t = from_yaml(ML_FW_LLAMAFACTORY, "stage: dpo\n");
    char model[8], ds[8];
    const char *bad = "pref_loss: bco\n";
    assert_int_equal(ml_train_apply_yaml(&t, bad, strlen(bad), "x.yaml", model, 8, ds, 8, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "pref_loss"));
}

static void load_tiny(void)
{
    size_t len = 0;
    char *j = ml_test_slurp("tests/fixtures/tiny-llama.json", &len);
    assert_non_null(j);
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_arch_from_json(j, len, "tiny", &arch, &d), ML_OK);
    free(j);
    assert_int_equal(ml_inventory_build(&arch, &inv, &d), ML_OK);
    assert_true(inv.total_params == P);
}

static void run(const struct ml_train *t, uint32_t gpus)
{
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_gpu_resolve("a100-80g", &c.gpu, &d), ML_OK);
    c.gpus_per_node = gpus;
    c.nodes = 1;
    if (ml_ledger_train(&arch, &inv, t, &c, NULL, &led, &d) != ML_OK)
        fail_msg("%s", d.msg);
}

static void test_stage_bytes(void **state)
{
    (void)state;
    load_tiny();
    /* Full DPO on 4 GPUs under ZeRO-3: the reference copy is sharded like the policy (2 B x P /
     * 4); the batch is 2 b; the reference forward is 8 B x 2b x s x V in the loss phase. */
    struct ml_train t = from_yaml(ML_FW_LLAMAFACTORY, "stage: dpo\nfinetuning_type: full\n"
                                                      "per_device_train_batch_size: 3\ncutoff_len: 16\n");
    t.deepspeed = true;
    t.zero.stage = 3;
    run(&t, 4);
    assert_int_equal(led.micro_batch, 6);
    assert_true(ml_ledger_bytes(&led, ML_C_REF_WEIGHTS) == 2 * (P / 4));
    assert_true(ml_ledger_bytes(&led, ML_C_REF_FORWARD) == 8ull * 6 * 16 * V);
    /* The same under ZeRO-2: trl prepare_deepspeed keeps the reference whole. */
    t.zero.stage = 2;
    run(&t, 4);
    assert_true(ml_ledger_bytes(&led, ML_C_REF_WEIGHTS) == 2 * P);
    /* LoRA DPO: no reference weights, the same reference forward. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "stage: dpo\nper_device_train_batch_size: 3\ncutoff_len: 16\n");
    run(&t, 1);
    assert_true(ml_ledger_bytes(&led, ML_C_REF_WEIGHTS) == 0);
    assert_true(ml_ledger_bytes(&led, ML_C_REF_FORWARD) == 8ull * 6 * 16 * V);
    /* The pairwise batch doubles every activation term: sft with b = 6 gives the same. */
    uint64_t act = ml_ledger_bytes(&led, ML_C_ACTIVATIONS);
    t = from_yaml(ML_FW_LLAMAFACTORY, "stage: sft\nper_device_train_batch_size: 6\ncutoff_len: 16\n");
    run(&t, 1);
    assert_true(ml_ledger_bytes(&led, ML_C_ACTIVATIONS) == act);
    /* rm: value head (h + 1) x 16 B; the logits are upcast and dropped: 6 B x 2b x s x V. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "stage: rm\nper_device_train_batch_size: 1\ncutoff_len: 16\n");
    run(&t, 1);
    assert_true(ml_ledger_bytes(&led, ML_C_VALUE_HEAD) == (H + 1) * 16ull);
    assert_true(ml_ledger_bytes(&led, ML_C_LOGITS_LOSS) == 6ull * 2 * 16 * V);
    /* ppo: KV of b sequences x (prompt + new) tokens: 2 (K, V) x 2 heads x 16 x 2 B x 2 layers =
     * 256 B per token; live in the generate phase with the weights. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "stage: ppo\nreward_model: r\nreward_model_type: full\nfinetuning_type: full\n"
                                      "per_device_train_batch_size: 2\ncutoff_len: 16\nmax_new_tokens: 8\n");
    run(&t, 1);
    assert_int_equal(led.seq_len, 24);
    assert_true(ml_ledger_bytes(&led, ML_C_ROLLOUT_KV) == 256ull * 2 * 24);
    assert_true(ml_ledger_bytes(&led, ML_C_REWARD_WEIGHTS) == 2 * P + 2 * (H + 1));
    assert_true(ml_ledger_bytes(&led, ML_C_REF_WEIGHTS) == 2 * P);
    assert_true(led.phase_active[ML_PHASE_GENERATE]);
    assert_true(led.phase_allocated[ML_PHASE_GENERATE] >=
                ml_ledger_bytes(&led, ML_C_WEIGHTS_TRAINABLE) + ml_ledger_bytes(&led, ML_C_ROLLOUT_KV));
    /* sft has no generate phase. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "stage: sft\n");
    run(&t, 1);
    assert_false(led.phase_active[ML_PHASE_GENERATE]);
}

/* TRL's fused LM head (docs/ledger.md "TRL's fused LM head"): the tensors of trainer/utils.py
 * _fused_forward and kernels/chunked_logprob.py ChunkedLogProbFunction, N labelled tokens: the
 * tile buffer min(N, 4096) x 32768 x 2 B (bf16), the hidden states' copy N x h x (2 B, 4 B when
 * the stream is fp32), seven fp32 accumulators + log_z + log_probs (+ entropy, mean_logits fp32
 * and is_top1 bool for the policy) per token; the backward adds the fp32 grad of the hidden states
 * (and its cast back to bf16) and, for a trainable head, the fp32 V x h weight grad. */
static bool has_note(const char *what)
{
    for (uint32_t i = 0; i < led.n_notes; i++)
        if (strstr(led.notes[i], what))
            return true;
    return false;
}

static void test_trl_fused_head(void **state)
{
    (void)state;
    load_tiny();
    /* LoRA DPO, b 3 (6 sequences), 8 labelled tokens each: N = 48. */
    struct ml_train t = from_yaml(ML_FW_TRL, "stage: dpo\nfinetuning_type: lora\nper_device_train_batch_size: 3\n"
                                             "max_length: 16\nmax_completion_length: 8\ntrl_version: 1.16.0\n");
    run(&t, 1);
    uint64_t tile = 48ull * 32768 * 2, hid = 48ull * H * 2, stats = 48ull * 45;
    assert_true(ml_ledger_bytes(&led, ML_C_LOGITS_LOSS) == tile + hid + stats + 48ull * H * 4 + hid);
    /* the reference's pass (the adapter disabled) holds its own tile and copy while the policy's
     * head keeps only its saved set: below the policy's backward, nothing more */
    assert_true(ml_ledger_bytes(&led, ML_C_REF_FORWARD) == 0);
    assert_false(has_note("widened"));
    /* TRL 1.14.2: whole logits, the reference forward 8 B x 2b x s x V again */
    t = from_yaml(ML_FW_TRL, "stage: dpo\nfinetuning_type: lora\nper_device_train_batch_size: 3\n"
                             "max_length: 16\ntrl_version: 1.14.2\n");
    run(&t, 1);
    assert_true(ml_ledger_bytes(&led, ML_C_REF_FORWARD) == 8ull * 6 * 16 * V);
    /* Full DPO under bf16 autocast: the fp32 stream's copy (4 B), its bf16 chunk, a bf16 chunk of
     * the fp32 head (min(32768, V) x h), and the head's fp32 grad. b 1: N = 16. No version given:
     * TRL 1.16 assumed, said, and the interval widened. */
    t = from_yaml(ML_FW_TRL, "stage: dpo\nfinetuning_type: full\nbf16: true\nper_device_train_batch_size: 1\n"
                             "max_length: 16\nmax_completion_length: 8\n");
    run(&t, 1);
    uint64_t fwd = 16ull * 32768 * 2 + 16ull * H * 4 + 16ull * H * 2 + (uint64_t)V * H * 2 + 16ull * 45;
    assert_true(ml_ledger_bytes(&led, ML_C_LOGITS_LOSS) == fwd + 16ull * H * 4 + (uint64_t)V * H * 4);
    assert_true(has_note("TRL 1.16 assumed"));
    assert_true(has_note("widened"));
    /* SFT under TRL >= 1.15 (or no version): the fused head is not priced for it: said, widened. */
    t = from_yaml(ML_FW_TRL, "stage: sft\n");
    run(&t, 1);
    assert_true(has_note("SFTTrainer") && has_note("widened"));
    t = from_yaml(ML_FW_TRL, "stage: sft\ntrl_version: 1.14.2\n");
    run(&t, 1);
    assert_false(has_note("widened"));
    /* KTO: b rows through the policy's head. */
    t = from_yaml(ML_FW_TRL, "stage: kto\nfinetuning_type: lora\nper_device_train_batch_size: 2\nmax_length: 16\n"
                             "max_completion_length: 8\ntrl_version: 1.16.0\n");
    run(&t, 1);
    assert_true(ml_ledger_bytes(&led, ML_C_LOGITS_LOSS) ==
                16ull * 32768 * 2 + 16ull * H * 2 + 16ull * 45 + 16ull * H * 4 + 16ull * H * 2);
}

/* DeepSpeed AutoTP and context parallelism (docs/ledger.md, "Distributed settings"). */
static void test_parallel_bytes(void **state)
{
    (void)state;
    load_tiny();
    /* Linear weights in the layers of the tiny Llama: per layer q 64x64 (4,096), k and v 32x64
     * (2,048 each), o 4,096, gate and up 128x64 (8,192 each), down 64x128 (8,192) = 36,864; 2
     * layers = 73,728. With AutoTP 2 each rank holds half of them: P_rank = P - 36,864; ZeRO-2
     * shards over 4 / 2 = 2 ranks. */
    struct ml_train t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nbf16: true\n");
    t.deepspeed = true;
    t.zero.stage = 2;
    t.tp_size = 2;
    run(&t, 4);
    uint64_t pr = P - 36864;
    assert_true(ml_ledger_bytes(&led, ML_C_WEIGHTS_TRAINABLE) == 2 * pr);
    assert_true(ml_ledger_bytes(&led, ML_C_OPTIMIZER) == 8 * ((pr + 1) / 2));
    assert_int_equal(led.sharding, 2);
    assert_true(led.trainable == P); /* the report counts the whole model */
    /* Context parallel 2: the logits of b x s/2 tokens; model states unchanged. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nbf16: true\nper_device_train_batch_size: 1\n"
                                      "cutoff_len: 64\n");
    run(&t, 2);
    uint64_t logits = ml_ledger_bytes(&led, ML_C_LOGITS_LOSS), w = ml_ledger_bytes(&led, ML_C_WEIGHTS_TRAINABLE);
    t.cp_size = 2;
    run(&t, 2);
    assert_int_equal(led.seq_len, 32);
    assert_true(ml_ledger_bytes(&led, ML_C_LOGITS_LOSS) * 2 == logits);
    assert_true(ml_ledger_bytes(&led, ML_C_WEIGHTS_TRAINABLE) == w);
    /* The sizes must tile the GPUs; AutoTP stops at ZeRO-2. */
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    c.gpus_per_node = 3;
    c.nodes = 1;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_train_check(&t, NULL, &c, &d), ML_ERR_INVALID);
    t.cp_size = 1;
    t.deepspeed = true;
    t.tp_size = 2;
    t.zero.stage = 3;
    c.gpus_per_node = 4;
    assert_int_equal(ml_train_check(&t, NULL, &c, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "ZeRO-3"));
}

/* Visual tokens: the worked examples of the plan (LLaMA-Factory image_max_pixels 768 x 768 =
 * 589,824 by default; Qwen2.5-VL patch 14 merge 2, factor 28; Qwen3-VL / Qwen3.5 patch 16 merge 2,
 * factor 32), computed by hand from _preprocess_image and smart_resize. */
static void test_visual_tokens(void **state)
{
    (void)state;
    uint64_t w, h, patches;
    /* 1024 x 1024 over 589,824: x sqrt(0.5625) = 0.75 -> 768 x 768. */
    ml_lf_image_resize(1024, 1024, 589824, 1024, &w, &h);
    assert_int_equal(w, 768);
    assert_int_equal(h, 768);
    /* Qwen2.5-VL: round(768 / 28) = 27 -> 756; 54 x 54 = 2,916 patches, 729 tokens. */
    assert_int_equal(ml_visual_grid(1024, 1024, 589824, 1024, 14, 2, 3136, 12845056, &patches), 729);
    assert_int_equal(patches, 2916);
    /* Qwen3-VL: 768 / 32 = 24 -> 768; 48 x 48 = 2,304 patches, 576 tokens. */
    assert_int_equal(ml_visual_grid(1024, 1024, 589824, 1024, 16, 2, 0, 16777216, &patches), 576);
    assert_int_equal(patches, 2304);
    /* examples/ascend image_max_pixels 262,144 (512 x 512): 32 x 32 = 1,024 patches, 256 tokens. */
    assert_int_equal(ml_visual_grid(1024, 1024, 262144, 1024, 16, 2, 0, 16777216, &patches), 256);
    assert_int_equal(patches, 1024);
    /* 1920 x 1080 under 589,824: x sqrt(589824 / 2073600): int(1024.0) x int(576.0) = 1024 x 576. */
    ml_lf_image_resize(1920, 1080, 589824, 1024, &w, &h);
    assert_int_equal(w, 1024);
    assert_int_equal(h, 576);
    /* Python's round halves to even: 70 / 28 = 2.5 -> 2 (56), 98 / 28 = 3.5 -> 4 (112). */
    ml_smart_resize(70, 98, 28, 0, 0, &h, &w);
    assert_int_equal(h, 56);
    assert_int_equal(w, 112);
    /* Under min_pixels 3136 (56 x 56): a 28 x 28 image grows to ceil(28 x 2 / 28) x 28 = 56. */
    ml_smart_resize(28, 28, 28, 3136, 12845056, &h, &w);
    assert_int_equal(h, 56);
    assert_int_equal(w, 56);
    /* A tiny image is scaled up to image_min_pixels (32 x 32), then kept at >= 28 a side. */
    ml_lf_image_resize(8, 8, 589824, 1024, &w, &h);
    assert_int_equal(w, 32);
}

/* Vision-language training on Qwen2.5-VL-7B (the catalog's config): the tower (visual.patch_embed,
 * visual.blocks) and the merger (visual.merger) are LLaMA-Factory's frozen modules by default;
 * 676,550,144 parameters in all (the checkpoint's visual.* tensors, docs/models.md), of which
 * the merger is 44,574,464: 5120 x 5120 + 5120 + 5120 x 3584 + 3584 + 1280 (its RMSNorm). */
static void test_vision_language(void **state)
{
    (void)state;
    static struct ml_arch va;
    static struct ml_inventory vi;
    struct ml_diag d;
    ml_diag_init(&d);
    const struct ml_catalog_entry *e = ml_catalog_find("qwen2.5-vl-7b-instruct");
    assert_non_null(e);
    assert_int_equal(ml_catalog_arch(e, &va, &d), ML_OK);
    assert_int_equal(ml_inventory_build(&va, &vi, &d), ML_OK);
    struct ml_cluster c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(ml_gpu_resolve("h100", &c.gpu, &d), ML_OK);
    c.gpus_per_node = c.nodes = 1;
    uint64_t visual = 676550144ull, merger = 44574464ull;
    struct ml_train t =
        from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nbf16: true\nper_device_train_batch_size: 1\n");
    assert_int_equal(ml_ledger_train(&va, &vi, &t, &c, NULL, &led, &d), ML_OK);
    assert_true(led.trainable == vi.total_params - visual);
    /* 1024 x 1024 -> 768 x 768 -> 756 x 756: 2,916 patches, 729 tokens; the frozen tower's one
     * block on them: 2 B x (8 x 1280 + 3 x 3420) per patch. */
    assert_true(ml_ledger_bytes(&led, ML_C_VISION_ACT) == 2916ull * 2 * (8 * 1280 + 3 * 3420));
    /* freeze_vision_tower false: the tower trains, the merger stays frozen. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nbf16: true\nper_device_train_batch_size: 1\n"
                                      "freeze_vision_tower: false\n");
    assert_int_equal(ml_ledger_train(&va, &vi, &t, &c, NULL, &led, &d), ML_OK);
    assert_true(led.trainable == vi.total_params - merger);
    /* Gradient checkpointing keeps each block's input: 32 blocks x 2 B x 2916 x 1280. */
    assert_true(ml_ledger_bytes(&led, ML_C_VISION_ACT) ==
                32ull * 2 * 2916 * 1280 + 2916ull * 2 * (8 * 1280 + 3 * 3420));
    /* Four images of 1024 x 1024 under image_max_pixels 1003520: 1001 x 1001 -> 1008 x 1008 (36 x 36
     * merged): 1,296 tokens each, 5,184 per sample, over cutoff_len 2048: refused. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nimages_per_sample: 4\nimage_max_pixels: 1003520\n"
                                      "image_size: 1024x1024\ncutoff_len: 2048\n");
    assert_int_equal(ml_ledger_train(&va, &vi, &t, &c, NULL, &led, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "5184 visual tokens"));
    /* Older LLaMA-Factory's image_resolution is the same limit (model_args.py ProcessorArguments;
     * mm_plugin.py _preprocess_image: the same sqrt scaling): the same 5,184 tokens, not the
     * 4 x 729 = 2,916 of the default 768 x 768. video_resolution is video_max_pixels. */
    t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nimages_per_sample: 4\nimage_resolution: 1003520\n"
                                      "image_size: 1024x1024\ncutoff_len: 2048\nvideo_resolution: 16384\n");
    assert_true(t.vlm.video_max_pixels == 16384);
    assert_int_equal(ml_ledger_train(&va, &vi, &t, &c, NULL, &led, &d), ML_ERR_INVALID);
    assert_non_null(strstr(d.msg, "5184 visual tokens"));
    /* A text model is untouched by the vision settings. */
    load_tiny();
    t = from_yaml(ML_FW_LLAMAFACTORY, "finetuning_type: full\nbf16: true\nfreeze_vision_tower: false\n");
    run(&t, 1);
    assert_true(led.trainable == P);
    assert_true(ml_ledger_bytes(&led, ML_C_VISION_ACT) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llamafactory_plans), cmocka_unit_test(test_trl_plans),
        cmocka_unit_test(test_trl_fused_head),     cmocka_unit_test(test_stage_errors),
        cmocka_unit_test(test_stage_bytes),        cmocka_unit_test(test_parallel_bytes),
        cmocka_unit_test(test_visual_tokens),      cmocka_unit_test(test_vision_language),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
