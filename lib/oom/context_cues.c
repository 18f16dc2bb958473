/*
 * context_cues.c - the OOM scanner's phase cues (scanner.h): the tables of function names, code
 * lines and log lines that name a phase (with their level and flags), the ring of recent cues
 * kept for the frames before an event and the window after it that collects a traceback, arrow
 * chains of compiled code, a serving engine's start-up steps; and ml_oom_track_frames, which
 * feeds them the frame, code and serving lines.
 *
 * Frames and code lines give the phase (the field guide's analysis 4, "the stack frame at the
 * raise tells the phase"); progress bars, step counters, saves, evaluation, loading and resuming
 * give the timing (analysis 5); the rest fills the incident (reference/oom-messages.md, A9-A11).
 */
#include <stdio.h>

#include "context_int.h"

/* ---- frames ------------------------------------------------------------------------------ */

/* Phase cues in frames and code lines (analysis 4). */
struct cue_def {
    char pat[44];
    uint8_t phase;
    uint8_t level; /* enum cue_level */
    uint8_t flags;
    uint8_t episode; /* enum ml_serve_episode: a step of a serving engine's start-up */
};

/* Function names, matched exactly against "in FUNC" / "FUNC" of a frame. */
static const struct cue_def fn_cues[] = {
    /* episodes */
    {"from_pretrained", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_load_pretrained_model", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_load_state_dict_into_meta_model", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"load_checkpoint_in_model", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"load_model", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"load_weights", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"dispatch_model", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_move_model_to_device", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0}, /* Trainer.__init__ places the model */
    /* device placement (issue 24): Module.to / .cuda / .half walk the parameters in _apply */
    {"_apply", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"convert", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"load_sharded_checkpoint", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_load_from_checkpoint", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_load_optimizer_and_scheduler", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"_save_checkpoint", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"save_model", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"save_checkpoint", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"_zero3_consolidated_16bit_state_dict", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE | CF_ZERO3, 0},
    {"save_pretrained", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"_save_optimizer_and_scheduler", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"get_state_dict", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"save_16bit_model", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"_save_zero_checkpoint", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"_save", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"evaluate", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"evaluation_loop", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"prediction_loop", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"prediction_step", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"predict", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"nested_concat", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL, 0},
    {"torch_pad_and_concatenate", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL | CF_NEW, 0},
    {"_nested_gather", ML_OPH_EVAL, CUE_EPISODE, CF_EVAL | CF_NEW, 0},
    {"generate", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"_sample", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"sample", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"greedy_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"_greedy_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"contrastive_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"_contrastive_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"beam_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"_beam_search", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"generate_with_callback", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"generate_stream", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"_assisted_decoding", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"profile_run", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_PROFILE},
    {"determine_num_available_blocks", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_PROFILE},
    {"determine_available_memory", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_PROFILE},
    {"_initialize_kv_caches", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, 0},
    {"initialize_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"init_device", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, 0},
    {"raise_if_cache_size_invalid", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, 0},
    {"check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, 0},
    {"_check_enough_kv_cache_memory", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, 0},
    {"capture_model", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"_dummy_sampler_run", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_SAMPLER},
    {"init_memory_pool", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"profile_max_num_token", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_PROFILE},
    {"initialize_from_config", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"_dummy_run", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_PROFILE},
    {"_allocate_kv_cache_tensors", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_KV_POOL},
    {"initialize_kv_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_KV_POOL},
    /* the steps of a serving engine's start-up (issue 24): vLLM V0 (worker, model_runner,
     * cache_engine), V1 (gpu_worker, gpu_model_runner, kv_cache_utils), SGLang (model_runner,
     * cuda_graph_runner), TGI (flash_causal_lm warmup), vllm-ascend (model_runner_v1, ACL graphs) */
    {"_init_cache_engine", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"init_cache_engine", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"_allocate_kv_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"allocate_gpu_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"_reshape_kv_cache_tensors", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"init_memory_pool_and_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_KV_POOL},
    {"_capture_cudagraphs", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"capture_one_batch_size", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"init_cuda_graphs", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"init_device_graphs", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"_capture_model", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"_dummy_pooler_run", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_SAMPLER},
    {"_profile_multimodal", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_PROFILE},
    {"profile_cudagraph_memory", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
    {"run_engine_loop", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"engine_step", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    /* vLLM's workers at run time; operations (CUE_OPERATION), because the start-up profile runs
     * the model through them too and its episode (CUE_EPISODE) must win */
    {"start_worker_execution_loop", ML_OPH_SERVING_RUNTIME, CUE_OPERATION, CF_NEW, 0},
    {"execute_model", ML_OPH_SERVING_RUNTIME, CUE_OPERATION, CF_NEW, 0},
    {"execute_model_spmd", ML_OPH_SERVING_RUNTIME, CUE_OPERATION, CF_NEW, 0},
    {"_run_workers", ML_OPH_SERVING_RUNTIME, CUE_OPERATION, CF_NEW, 0},
    {"step_async", ML_OPH_SERVING_RUNTIME, CUE_OPERATION, CF_NEW, 0},
    {"forward_batch_generation", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"event_loop_normal", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"event_loop_overlap", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"Prefill", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"Decode", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    /* operations */
    {"backward", ML_OPH_BACKWARD, CUE_OPERATION, 0, 0},
    {"_engine_run_backward", ML_OPH_BACKWARD, CUE_OPERATION, 0, 0},
    {"run_backward", ML_OPH_BACKWARD, CUE_OPERATION, 0, 0},
    {"_optimizer_step", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_multi_tensor_adamw", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_multi_tensor_adam", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_single_tensor_adamw", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_single_tensor_adam", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_fused_adamw", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_fused_adam", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_init_group", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"_prepare_fp32_grad_for_sub_group", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, CF_ZERO3, 0},
    {"_copy_main_params_to_model_params", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"initialize_optimizer_states", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {"all_reduce", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"allreduce", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"all_gather", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_NEW, 0},
    {"allgather", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_NEW, 0},
    {"_all_gather_base", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_NEW, 0},
    {"all_gather_into_tensor", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_NEW, 0},
    {"all_reduce_coalesced", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"broadcast", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"reduce_scatter", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"reduce_scatter_tensor", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"barrier", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"_flatten_dense_tensors", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"allreduce_params", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"init_process_group", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"_get_msg_dict", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_FORMAT, 0},
    /* leaves */
    {"cross_entropy", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"log_softmax", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"nll_loss", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"ForCausalLMLoss", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"fixed_cross_entropy", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"get_batch_logps", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"_get_batch_logps", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"_convert_to_fp32", ML_OPH_LOSS, CUE_LEAF, CF_FP32, 0},
    {"forward", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"_call_impl", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"eager_attention_forward", ML_OPH_FORWARD, CUE_LEAF, CF_EAGER, 0},
    /* attention calls (issue 24): the forward pass */
    {"scaled_dot_product_attention", ML_OPH_FORWARD, CUE_LEAF, CF_NEW, 0},
    {"softmax", ML_OPH_FORWARD, CUE_LEAF, CF_NEW, 0},
    {"baddbmm", ML_OPH_FORWARD, CUE_LEAF, CF_NEW, 0},
    {"pre_sub_module_forward_function", ML_OPH_FORWARD, CUE_LEAF, CF_ZERO3, 0},
    /* flags only */
    {"__repr__", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FORMAT, 0},
    {"_tensor_str", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FORMAT, 0},
    {"_str_intern", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FORMAT, 0},
};

/* Substrings of code lines and frame paths. */
static const struct cue_def code_cues[] = {
    {"optimizer.step(", ML_OPH_OPTIMIZER_STEP, CUE_OPERATION, 0, 0},
    {".backward(", ML_OPH_BACKWARD, CUE_OPERATION, 0, 0},
    {"backward(loss", ML_OPH_BACKWARD, CUE_OPERATION, 0, 0},
    {"fetch_sub_module(sub_module, forward=True", ML_OPH_FORWARD, CUE_LEAF, CF_ZERO3, 0},
    {"fetch_sub_module(sub_module, forward=False", ML_OPH_BACKWARD, CUE_OPERATION, CF_ZERO3, 0},
    {"model(**", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"self._model(", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"self.model(", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"self.module(", ML_OPH_FORWARD, CUE_LEAF, 0, 0},
    {"log_softmax(", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"cross_entropy", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {"lm_head(", ML_OPH_LOSS, CUE_LEAF, 0, 0},
    {".generate(", ML_OPH_GENERATE, CUE_EPISODE, 0, 0},
    {"save_pretrained(", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"save_model(", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE, 0},
    {"from_pretrained(", ML_OPH_LOAD, CUE_EPISODE, 0, 0},
    {"all_reduce(", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"init_process_group(", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {":prefill:", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {":decode:", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0},
    {"c10d_logger", ML_OPH_COMMUNICATION, CUE_OPERATION, CF_FORMAT, 0},
    {"ProcessGroupNCCL", ML_OPH_COMMUNICATION, CUE_OPERATION, 0, 0},
    {"deepspeed/runtime/zero", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_ZERO3, 0},
    {"torch/utils/checkpoint", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_CKPT, 0},
    {"softmax(attn", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_EAGER, 0},
    {".float()", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FP32, 0},
    {"upcast", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FP32, 0},
    /* constructors that place the model on the device (issue 13): loading */
    {"Trainer(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"DistributedDataParallel(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"FullyShardedDataParallel(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"FSDP(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"deepspeed.initialize(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"accelerator.prepare(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    {"prepare_model(", ML_OPH_LOAD, CUE_EPISODE, CF_NEW, 0},
    /* the state dict gathered at save (FSDP's "Failed to clone() tensor" warning, analysis 4) */
    {"state_dict(", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE | CF_NEW, 0},
    {"Failed to clone() tensor", ML_OPH_CHECKPOINT_SAVE, CUE_EPISODE, CF_SAVE | CF_NEW, 0},
    /* eager attention written out (analysis 3): the s x s scores are materialised */
    {"matmul(query", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_EAGER | CF_NEW, 0},
    {"key_states.transpose(", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_EAGER | CF_NEW, 0},
    {"attn_weights =", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_EAGER | CF_NEW, 0},
    {".to(torch.float32)", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, CF_FP32 | CF_NEW, 0},
    /* a serving engine's start-up steps in paths and code (issue 24): its sampler's file, whose
     * generic forward is the sampler's; a dummy batch (the profile run and the warm-ups) */
    {"/sampler.py", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_SAMPLER},
    {"torch.cuda.graph(", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_GRAPH},
    {"capture_end", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_GRAPH},
    {"capture_begin", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_GRAPH},
    {"dummy", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_PROFILE},
};

/* A frame of a serving engine's own code: loading its weights is its start-up, not a trainer's
 * load (tried before fn_cues when the frame's path is vLLM's). */
static const struct cue_def serving_fn_cues[] = {
    {"load_model", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_WEIGHTS},
    {"load_weights", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_WEIGHTS},
    {"warmup", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0,
     ML_EP_PROFILE}, /* TGI's warm-up: a prefill of max batch tokens */
    /* TGI (server/text_generation_server/models/flash_causal_lm.py): warmup calls init_kv_cache,
     * which allocates the KV blocks (layers/attention/kv_cache.py KVCache), inner to the warm-up */
    {"init_kv_cache", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_KV_POOL},
    /* TGI's server.py serve_inner builds the model (models/__init__.py get_model, which loads the
     * weights) before it serves: the gRPC calls (Warmup, Prefill, Decode) run as tasks of the event
     * loop, so their tracebacks do not pass through it */
    {"serve_inner", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, ML_EP_WEIGHTS},
    /* the sampler: a step of the start-up only inside one (its dummy run), so no phase of its own */
    {"sample", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_SAMPLER},
    {"_sample", ML_OPH_UNKNOWN, CUE_FLAG_ONLY, 0, ML_EP_SAMPLER},
    {"capture", ML_OPH_SERVING_STARTUP, CUE_EPISODE, 0, ML_EP_GRAPH},
};

/* Log lines that name a phase (not frames): ooba's summary of a generation, vLLM's start-up. */
static const struct cue_def line_cues[] = {
    {"Output generated in", ML_OPH_GENERATE, CUE_EPISODE, CF_NEW, 0},
    {"EngineCore failed to start", ML_OPH_SERVING_STARTUP, CUE_EPISODE, CF_NEW, 0},
    {"Capturing CUDA graph", ML_OPH_SERVING_STARTUP, CUE_LEAF, CF_NEW, 0},
};

static void push_cue_x(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line,
                       uint8_t extra);

static void push_cue(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line)
{
    push_cue_x(s, d, name, line, 0);
}

/* (extra: flags the way the cue was read adds, CF_NEW) */
static void push_cue_x(struct ml_oom_scanner *s, const struct cue_def *d, const char *name, const char *line,
                       uint8_t extra)
{
    struct ml_oom_cue c;
    memset(&c, 0, sizeof(c));
    c.line = s->lineno;
    c.phase = d->phase;
    c.level = d->level;
    c.flags = (uint8_t)(d->flags | extra);
    c.episode = d->episode;
    size_t nl = strlen(name);
    while (nl && (name[nl - 1] == '(' || name[nl - 1] == '.'))
        nl--; /* "optimizer.step(" reads "optimizer.step" */
    if (nl >= sizeof(c.name))
        nl = sizeof(c.name) - 1;
    memcpy(c.name, name, nl);
    size_t tl = strlen(line);
    if (tl >= sizeof(c.text))
        tl = sizeof(c.text) - 1;
    memcpy(c.text, line, tl);
    s->ring[s->ring_head] = c;
    s->ring_head = (s->ring_head + 1) % ML_OOM_CUE_RING;
    if (s->ring_n < ML_OOM_CUE_RING)
        s->ring_n++;
    if (s->after_ev >= 0 && s->lineno > s->inc->ev[s->after_ev].line) {
        s->after_flags |= c.flags;
        if (c.episode && episode_over(c.episode, s->after_ep.episode))
            s->after_ep = c;
        if (c.level)
            s->after_best[c.level] = c;
        if (c.level && !(c.flags & CF_NEW))
            s->after_old[c.level] |= (uint16_t)(1u << c.phase);
    }
}

/* Loss rows of fn_cues whose name a variant of the kernel ends with (after a '_'). */
static const char loss_suffixes[][16] = {"log_softmax", "cross_entropy"};

/* The cue of function fn[0..n) in a frame (extra: flags of how it was read, CF_NEW). */
static void fn_cue(struct ml_oom_scanner *s, const char *fn, size_t n, const char *line, uint8_t extra)
{
    if (find(line, "vllm/") || find(line, "vllm_") || find(line, "sglang/") || find(line, "text_generation_server/")) {
        for (size_t i = 0; i < sizeof(serving_fn_cues) / sizeof(serving_fn_cues[0]); i++) {
            if (strlen(serving_fn_cues[i].pat) == n && !strncmp(fn, serving_fn_cues[i].pat, n)) {
                push_cue_x(s, &serving_fn_cues[i], serving_fn_cues[i].pat, line, extra);
                return;
            }
        }
    }
    for (size_t i = 0; i < sizeof(fn_cues) / sizeof(fn_cues[0]); i++) {
        if (strlen(fn_cues[i].pat) == n && !strncmp(fn, fn_cues[i].pat, n)) {
            push_cue_x(s, &fn_cues[i], fn_cues[i].pat, line, extra);
            return;
        }
    }
    /* a loss kernel's own variant keeps its name as a suffix ("_compute_distributed_log_softmax",
     * "vocab_parallel_cross_entropy"): the cue of the name it ends with */
    for (size_t i = 0; i < sizeof(loss_suffixes) / sizeof(loss_suffixes[0]); i++) {
        size_t k = strlen(loss_suffixes[i]);
        if (n > k + 1 && fn[n - k - 1] == '_' && !strncmp(fn + n - k, loss_suffixes[i], k)) {
            for (size_t j = 0; j < sizeof(fn_cues) / sizeof(fn_cues[0]); j++)
                if (!strcmp(fn_cues[j].pat, loss_suffixes[i]))
                    push_cue_x(s, &fn_cues[j], fn_cues[j].pat, line, (uint8_t)(extra | CF_NEW));
            return;
        }
    }
}

/* The first arrow of a call chain in p: " -> " or " → " (U+2192); its length in *n. */
static const char *next_arrow(const char *p, size_t *n)
{
    const char *a = find(p, " -> ");
    const char *u = find(p, " \xe2\x86\x92 ");
    if (u && (!a || u < a)) {
        *n = 5;
        return u;
    }
    *n = 4;
    return a;
}

/* A call chain written with arrows ("main -> Trainer.train -> model.forward -> torch.softmax",
 * " → " too): each segment one dotted name (an optional "()"), and an optional place in parentheses
 * after it ("(model_utils.py:59)", "(model_utils.py:1012, un-chunked branch)"), read as frames by
 * the last name of each segment. Three or more segments; or a line that starts with an arrow (a
 * chain written one call a line) with two, or one dotted or placed. A line with any other word in
 * a segment is prose. */
static bool arrow_chain(struct ml_oom_scanner *s, const char *l)
{
    const char *seg[16], *end[16];
    size_t n = 0, an = 0;
    bool named = false;
    const char *p = skip_blank(l);
    bool lead = false;
    if (!strncmp(p, "-> ", 3) || !strncmp(p, "\xe2\x86\x92 ", 4)) {
        lead = true;
        p = skip_blank(p + (*p == '-' ? 3 : 4));
    }
    while (n < 16) {
        const char *a = next_arrow(p, &an);
        const char *e = a ? a : p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\n'))
            e--;
        if (e > p && e[-1] == ')') { /* a place: "(file.py:N ...)" */
            const char *o = e - 1;
            while (o > p && *o != '(')
                o--;
            const char *f = o + 1;
            while (f < e && (is_word(*f) || *f == '.' || *f == '/'))
                f++;
            if (o > p && o[-1] == ' ' && f - o > 4 && !strncmp(f - 3, ".py", 3) && *f == ':' && is_digit(f[1])) {
                e = o;
                while (e > p && e[-1] == ' ')
                    e--;
                named = true;
            }
        }
        if (e - p >= 2 && e[-1] == ')' && e[-2] == '(')
            e -= 2;
        if (e == p)
            return false;
        for (const char *q = p; q < e; q++) {
            if (!is_word(*q) && *q != '.' && *q != '<' && *q != '>')
                return false;
            if (*q == '.')
                named = true;
        }
        seg[n] = p;
        end[n] = e;
        n++;
        if (!a)
            break;
        p = skip_blank(a + an);
    }
    if (n < 3 && !(lead && (n >= 2 || named)))
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *b = end[i];
        while (b > seg[i] && b[-1] != '.')
            b--;
        if (end[i] > b)
            fn_cue(s, b, (size_t)(end[i] - b), l, CF_NEW);
    }
    return true;
}

/* Frame lines: 'File "p", line N, in FUNC', 'line N, in FUNC', 'p.py:N FUNC -> p.py:N FUNC'. */
static bool handle_frame(struct ml_oom_scanner *s, const char *l)
{
    bool frame = false;
    const char *in = find(l, ", in ");
    if (in && (find(l, "File \"") || find(l, "line "))) {
        const char *f = in + 5;
        size_t n = 0;
        while (is_word(f[n]) || f[n] == '<' || f[n] == '>')
            n++;
        fn_cue(s, f, n, l, 0);
        frame = true;
    }
    /* IPython and Colab: "/p/trainer.py in train(self, ...)", "[/p/module.py](https://...) in
     * _call_impl(self, ...)" (the code lines follow as "---> 88 ...", "    87 ...") */
    const char *ip = find(l, ".py in ");
    if (!ip && find(l, ".py]("))
        ip = find(find(l, ".py]("), ") in ");
    if (!frame && ip) {
        const char *f = find(ip, " in ") + 4;
        size_t n = 0;
        while (is_word(f[n]))
            n++;
        if (n && f[n] == '(') {
            fn_cue(s, f, n, l, CF_NEW);
            frame = true;
        }
    }
    if (find(l, " -> ") && find(l, ".py:")) {
        /* Arrow form: each "file.py:LINE func" segment. */
        for (const char *p = find(l, ".py:"); p; p = find(p + 4, ".py:")) {
            const char *q = p + 4;
            while (is_digit(*q))
                q++;
            q = skip_blank(q);
            size_t n = 0;
            while (is_word(q[n]))
                n++;
            if (n)
                fn_cue(s, q, n, l, 0);
        }
        frame = true;
    }
    if (!frame && arrow_chain(s, l))
        frame = true;
    /* Paths in the frame line carry flags (ZeRO-3 code, torch.utils.checkpoint, c10d logger). */
    if (frame) {
        for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++)
            if (code_cues[i].level == CUE_FLAG_ONLY || !strcmp(code_cues[i].pat, "c10d_logger"))
                if (find(l, code_cues[i].pat))
                    push_cue(s, &code_cues[i], code_cues[i].pat, l);
    }
    return frame;
}

/* A code line's cues (extra: flags of how the line was found, CF_NEW). */
/* Does the call at p in l follow a reduction's result (".sum(-1, keepdim=True).float()")? Such an
 * upcast copies the reduced tensor, a dimension smaller, not the one the line reduced. */
static bool after_reduction(const char *l, const char *p)
{
    if (p == l || p[-1] != ')')
        return false;
    int depth = 0;
    const char *q = p - 1;
    for (; q >= l; q--) {
        if (*q == ')')
            depth++;
        else if (*q == '(' && --depth == 0)
            break;
    }
    if (q < l)
        return false;
    const char *b = q;
    while (b > l && is_word(b[-1]))
        b--;
    if (b == l || b[-1] != '.')
        return false;
    static const char red[][12] = {"sum", "mean", "amax", "amin", "max", "min", "norm", "logsumexp", "std", "var"};
    for (size_t i = 0; i < sizeof(red) / sizeof(red[0]); i++)
        if ((size_t)(q - b) == strlen(red[i]) && !strncmp(b, red[i], (size_t)(q - b)))
            return true;
    return false;
}

/* Is the upcast at p (".float()") of a name that ends in "loss"? A scalar loss's fp32 copy, as
 * DeepSpeed's ZeRO backward makes on every step (runtime/zero/stage3.py and stage_1_and_2.py
 * backward: loss_scaler.backward(loss.float(), ...)): nothing meant to stay 16-bit doubles. */
static bool of_loss(const char *l, const char *p)
{
    return p - l >= 4 && !strncmp(p - 4, "loss", 4) && !strncmp(p, ".float()", 8);
}

static void handle_code(struct ml_oom_scanner *s, const char *l, uint8_t extra)
{
    for (size_t i = 0; i < sizeof(code_cues) / sizeof(code_cues[0]); i++) {
        const char *p = find(l, code_cues[i].pat);
        if (!p)
            continue;
        if ((code_cues[i].flags & CF_FP32) && (after_reduction(l, p) || of_loss(l, p)))
            continue;
        push_cue_x(s, &code_cues[i], code_cues[i].pat, l, extra);
    }
    /* SDPA with an explicit mask falls back to the math kernel, which materialises s x s. */
    static const struct cue_def masked_sdpa = {"scaled_dot_product_attention", ML_OPH_UNKNOWN, CUE_FLAG_ONLY,
                                               CF_EAGER | CF_NEW, 0};
    if (find(l, "scaled_dot_product_attention(") && find(l, "attn_mask"))
        push_cue(s, &masked_sdpa, masked_sdpa.pat, l);
    /* A call of a function the frame rows know ("model = load_model(", "loss = cross_entropy(")
     * is that function's frame: the line is its caller's code, the next frame would be it. */
    for (const char *p = strchr(l, '('); p; p = strchr(p + 1, '(')) {
        const char *b = p;
        while (b > l && is_word(b[-1]))
            b--;
        if (p - b >= 4)
            fn_cue(s, b, (size_t)(p - b), l, CF_NEW);
    }
}

void ml_oom_code_before(struct ml_oom_scanner *s, const char *before, size_t n)
{
    /* The line just before an exception line is, in a traceback, the failing frame's code. */
    if (s->prev_code_line && s->prev_code_line + 1 == s->lineno) {
        handle_code(s, s->prev_code, CF_NEW);
        s->prev_code_line = 0;
    }
    /* The text before the message on its own line (a warning that quotes the error, a prefix). */
    if (n) {
        char pre[256];
        (void)snprintf(pre, sizeof(pre), "%.*s", (int)(n < sizeof(pre) ? n : sizeof(pre) - 1), before);
        handle_code(s, pre, CF_NEW);
    }
}

/* A serving engine's start-up lines: the step each one says is now under way (vLLM V0 and V1's
 * worker and model-runner lines, SGLang's model_runner, TGI's router, vllm-ascend's ACL graphs). */
static const struct {
    char pat[40];
    uint8_t episode; /* ML_EP_NONE: the start-up is over */
} episode_lines[] = {
    {"Starting to load model", ML_EP_WEIGHTS},
    {"Load weight begin", ML_EP_WEIGHTS},
    {"Load weight end", ML_EP_KV_POOL}, /* SGLang: the memory pool comes next */
    {"weights took", ML_EP_PROFILE},    /* vLLM V0: the profile run comes next */
    {"Model loading took", ML_EP_PROFILE},
    {"Warming up model", ML_EP_PROFILE},     /* TGI */
    {"Starting profile run", ML_EP_PROFILE}, /* vLLM V0's multi-modal profile run */
    {"Memory profiling", ML_EP_KV_POOL},
    {"reserved for KV Cache", ML_EP_KV_POOL},
    {"Available KV cache memory", ML_EP_KV_POOL},
    {"# GPU blocks", ML_EP_KV_POOL},
    {"# cuda blocks", ML_EP_KV_POOL},
    {"# npu blocks", ML_EP_KV_POOL},
    {"GPU KV cache size", ML_EP_KV_POOL},
    {"KV Cache is allocated", ML_EP_KV_POOL},
    {"Memory pool end", ML_EP_KV_POOL},
    {"Capturing cudagraphs", ML_EP_GRAPH},
    {"Capturing the model for CUDA graphs", ML_EP_GRAPH},
    {"Capturing CUDA graph", ML_EP_GRAPH},
    {"Capture cuda graph begin", ML_EP_GRAPH},
    {"Capturing batches", ML_EP_GRAPH},
    {"Capturing ACL graph", ML_EP_GRAPH},
    {"Cuda Graphs are enabled", ML_EP_GRAPH},
    {"Graph capturing finished", ML_EP_NONE},
    {"Capture cuda graph end", ML_EP_NONE},
    {"Starting vLLM API server", ML_EP_NONE},
    {"Uvicorn running", ML_EP_NONE},
    {"The server is fired up", ML_EP_NONE},
    {"Application startup complete", ML_EP_NONE},
    {"Setting max batch total tokens", ML_EP_NONE},
};

void ml_oom_on_episode(struct ml_oom_scanner *s, const char *l)
{
    for (size_t i = 0; i < sizeof(episode_lines) / sizeof(episode_lines[0]); i++)
        if (find(l, episode_lines[i].pat)) {
            s->episode = episode_lines[i].episode;
            ref_set(&s->episode_ref, s->file, s->lineno, -1, l);
            return;
        }
}

void ml_oom_on_line_cues(struct ml_oom_scanner *s, const char *l)
{
    for (size_t i = 0; i < sizeof(line_cues) / sizeof(line_cues[0]); i++)
        if (find(l, line_cues[i].pat))
            push_cue(s, &line_cues[i], line_cues[i].pat, l);
    /* ooba: "Output generated in 0.28 seconds (0.00 tokens/s, 0 tokens, context 500, seed 1)" */
    /* vLLM: "Exception in worker VllmWorkerProcess while processing method start_worker_execution_loop." */
    const char *m = find(l, "while processing method ");
    if (m) {
        m += 24;
        size_t n = 0;
        while (is_word(m[n]))
            n++;
        fn_cue(s, m, n, l, CF_NEW);
    }
    const char *c = find(l, "Output generated in") ? find(l, "context ") : NULL;
    uint64_t v;
    if (c && ml_oom_parse_u64(c + 8, &v) && v < ((uint64_t)1 << 32))
        s->inc->gen_context = v;
}

/* A line that starts with " → " (U+2192), a call chain written one call a line: no anchor finds
 * it (the anchors are ASCII), so its first bytes are looked at. */
static inline bool lead_arrow(const char *l)
{
    const char *p = skip_blank(l);
    return p[0] == '\xe2' && p[1] == '\x86' && p[2] == '\x92' && p[3] == ' ';
}

/* (Out of line: the test in ml_oom_track_frames spares most lines its call.) */
__attribute__((noinline)) static bool track_frames(struct ml_oom_scanner *s, const char *l, uint64_t m, bool code)
{
    if (s->after_ev >= 0 && (s->lineno > s->after_until || (m & (GB(G_OOM) | GB(G_VLLMERR) | GB(G_HOSTALLOC)))))
        ml_oom_close_after(s);
    if (m & GB(G_TRACE))
        s->last_traceback = s->lineno;
    bool frame = false;
    if (m & GB(G_FRAME) || lead_arrow(l))
        frame = handle_frame(s, l);
    else if (s->prev_frame || code)
        handle_code(s, l, 0);
    s->prev_frame = frame;
    if (m & GB(G_SERVE)) {
        static const struct cue_def serve = {"prefill/decode", ML_OPH_SERVING_RUNTIME, CUE_EPISODE, 0, 0};
        push_cue(s, &serve, find(l, "refill") ? "prefill" : "decode", l);
    }
    return frame;
}

bool ml_oom_track_frames(struct ml_oom_scanner *s, const char *l, const char *body, uint64_t m)
{
    bool code = body[0] == ' ' && body[1] == ' ' && body[2] == ' ' && body[3] == ' ';
    /* after a worker's prefix ("(EngineCore_DP0 pid=8884)     return ..."), its indentation */
    code |=
        body - l >= 6 && body[-1] == ' ' && body[-2] == ' ' && body[-3] == ' ' && body[-4] == ' ' && body[-5] == ' ';
    if (s->after_ev < 0 && !(m & (GB(G_TRACE) | GB(G_FRAME) | GB(G_SERVE))) && !s->prev_frame && !code &&
        !lead_arrow(body))
        return false; /* most lines: no event's window open, no traceback, frame, code line or span */
    return track_frames(s, l, m, code);
}
