/*
 * context_facts.c - what the OOM scanner's context tracker reads from the lines around the events
 * besides the phase and the progress: library versions and vLLM's engine line, checkpoint saves,
 * evaluation, model loading, DeepSpeed's cache-flush and see_memory_usage lines, vLLM's
 * memory-profiling and KV-cache lines. ml_oom_track_line (context.c) calls each on the lines
 * whose anchors name it.
 *
 * Frames and code lines give the phase (the field guide's analysis 4, "the stack frame at the
 * raise tells the phase"); progress bars, step counters, saves, evaluation, loading and resuming
 * give the timing (analysis 5); the rest fills the incident (reference/oom-messages.md, A9-A11).
 */
#include <stdio.h>

#include "context_int.h"

/* ---- versions, saves, evaluation, loading, DeepSpeed and vLLM lines ------------------------ */

static void add_version(struct ml_incident *inc, const char *name, const char *val, size_t vlen, uint32_t file,
                        uint64_t line)
{
    if (vlen == 0 || vlen >= sizeof(inc->versions[0].value))
        return;
    for (uint32_t i = 0; i < inc->n_versions; i++)
        if (!strcmp(inc->versions[i].name, name))
            return;
    if (inc->n_versions >= ML_OOM_MAX_VERSIONS)
        return;
    struct ml_oom_version *v = &inc->versions[inc->n_versions++];
    (void)snprintf(v->name, sizeof(v->name), "%s", name);
    memcpy(v->value, val, vlen);
    v->value[vlen] = '\0';
    v->file = file;
    v->line = line;
}

static size_t version_token(const char *p)
{
    size_t n = 0;
    if (!is_digit(p[0]))
        return 0;
    while (is_word(p[n]) || p[n] == '.' || p[n] == '+' || p[n] == '-')
        n++;
    while (n && (p[n - 1] == '.' || p[n - 1] == '-'))
        n--;
    return n;
}

/* The value of "key" in a "k=v, k=v" list: its bytes up to the next ',' or ')' (quotes
 * dropped) into out; false when the key is absent. */
static bool config_value(const char *l, const char *key, char *out, size_t cap)
{
    const char *p = find(l, key);
    if (!p || cap == 0)
        return false;
    p += strlen(key);
    if (*p == '\'' || *p == '"')
        p++;
    size_t n = 0;
    while (p[n] && p[n] != ',' && p[n] != ')' && p[n] != '\'' && p[n] != '"' && n + 1 < cap)
        n++;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

static void read_engine(struct ml_oom_scanner *s, const char *l)
{
    struct ml_oom_engine *g = &s->inc->engine;
    char v[32];
    uint64_t u;
    g->seen = true;
    g->file = s->file;
    g->line = s->lineno;
    (void)config_value(l, "model=", g->model, sizeof(g->model));
    if (config_value(l, "max_seq_len=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u < ((uint64_t)1 << 32))
        g->max_seq_len = u;
    if (config_value(l, "tensor_parallel_size=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u && u <= 1024)
        g->tp = (uint32_t)u;
    if (config_value(l, "pipeline_parallel_size=", v, sizeof(v)) && ml_oom_parse_u64(v, &u) && u && u <= 1024)
        g->pp = (uint32_t)u;
    (void)config_value(l, " dtype=", g->dtype, sizeof(g->dtype));
    (void)config_value(l, "quantization=", g->quantization, sizeof(g->quantization));
    (void)config_value(l, "kv_cache_dtype=", g->kv_cache_dtype, sizeof(g->kv_cache_dtype));
    g->enforce_eager = find(l, "enforce_eager=True") != NULL;
}

void ml_oom_on_version(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    if (!(m & GB(G_VERSION)))
        goto python;
    static const struct {
        char key[16]; /* as written before "version" or "==" (case as written) */
        char name[16];
    } libs[] = {
        {"torch", "torch"},
        {"PyTorch", "torch"},
        {"pytorch", "torch"},
        {"transformers", "transformers"},
        {"Transformers", "transformers"},
        {"deepspeed", "deepspeed"},
        {"DeepSpeed", "deepspeed"},
        {"vllm", "vllm"},
        {"vLLM", "vllm"},
        {"sglang", "sglang"},
        {"peft", "peft"},
        {"trl", "trl"},
        {"accelerate", "accelerate"},
        {"NCCL", "nccl"},
        {"nccl", "nccl"},
        {"flash-attn", "flash_attn"},
        {"flash_attn", "flash_attn"},
        {"ROCm", "rocm"},
        {"CUDA", "cuda"},
        {"bitsandbytes", "bitsandbytes"},
        {"llamafactory", "llamafactory"},
        {"LLaMA-Factory", "llamafactory"},
        {"torch_npu", "torch_npu"},
    };
    /* vLLM's engine line: "Initializing an LLM engine (v0.6.4.post1) with config: ..." (V0) and
     * "Initializing a V1 LLM engine (v0.10.1) with config: ..." (V1). */
    const char *eng = find(l, "LLM engine (v");
    if (eng) {
        size_t n = version_token(eng + 13);
        if (n)
            add_version(s->inc, "vllm", eng + 13, n, s->file, s->lineno);
        if (!s->inc->engine.seen && find(eng, "with config:"))
            read_engine(s, eng);
    }
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        const char *p = find(l, libs[i].key);
        while (p) {
            size_t k = strlen(libs[i].key);
            bool word_start = p == l || !is_word(p[-1]);
            const char *q = p + k;
            if (word_start && !is_word(*q)) {
                /* "name==X", "name X.Y" after "version", "name version: X", "name info: version=X". */
                const char *v = NULL;
                if (q[0] == '=' && q[1] == '=')
                    v = q + 2;
                else {
                    const char *w = find(q, "version");
                    if (w && w - q <= 12) {
                        w += 7;
                        while (*w == ' ' || *w == ':' || *w == '=' || *w == 'v')
                            w++;
                        v = w;
                    }
                }
                if (v) {
                    size_t n = version_token(v);
                    if (n)
                        add_version(s->inc, libs[i].name, v, n, s->file, s->lineno);
                }
            }
            p = find(p + k, libs[i].key);
        }
    }
python:
    if (!(m & GB(G_PYVER)))
        return;
    for (uint32_t i = 0; i < s->inc->n_versions; i++)
        if (!strcmp(s->inc->versions[i].name, "python"))
            return;
    const char *py = find(l, "python3.");
    if (py && is_digit(py[8])) {
        size_t n = 7;
        while (is_digit(py[n + 1]) || py[n + 1] == '.')
            n++;
        while (py[n] == '.')
            n--;
        add_version(s->inc, "python", py + 6, n - 5, s->file, s->lineno);
    }
}

void ml_oom_on_save(struct ml_oom_scanner *s, const char *l, bool frame)
{
    if (frame)
        return;
    bool saving = find(l, "Saving") || find(l, "saving") || find(l, "saved") || find(l, "is ready now");
    bool what =
        find(l, "heckpoint") || find(l, "model") || find(l, "adapter") || find(l, "weights") || find(l, "global_step");
    if (!saving || !what || find(l, "out of memory"))
        return;
    int64_t st = -1;
    const char *c = find(l, "checkpoint-");
    uint64_t v = 0;
    if (c && ml_oom_parse_u64(c + 11, &v))
        st = (int64_t)v;
    c = find(l, "global_step");
    if (st < 0 && c && ml_oom_parse_u64(c + 11, &v))
        st = (int64_t)v;
    /* A burst of save lines (model, optimizer shards, "is ready") is one save: keep its first line. */
    if (!(s->save_ref.line && s->progress_since_save == 0 && s->lineno - s->save_ref.line < 50 &&
          s->save_ref.file == s->file))
        ref_set(&s->save_ref, s->file, s->lineno, st, l);
    if (st >= 0) {
        s->step = st;
        if (s->save_ref.step < 0)
            s->save_ref.step = st;
    }
    s->progress_since_save = 0;
    /* Whether the save is still under way: a line that begins one (transformers' "Saving model
     * checkpoint to", DeepSpeed's "is about to be saved", torchtune's "Saving checkpoint") opens it,
     * one written when the weights are on disk closes it (transformers' "Model weights saved in" and
     * the tokenizer files it writes after them, DeepSpeed's "is ready now", torchtune's "Model
     * checkpoint of size ... saved to"). "Configuration saved in" comes before the weights. */
    if (find(l, "about to be saved"))
        s->save_open = true;
    else if (find(l, "is ready now") || (find(l, "saved") && !find(l, "Configuration saved")))
        s->save_open = false;
    else if (find(l, "Saving") || find(l, "saving"))
        s->save_open = true;
}

void ml_oom_on_eval(struct ml_oom_scanner *s, const char *l)
{
    if (find(l, "eval_loss") || find(l, "eval_runtime")) {
        /* Results: the evaluation ended. */
        s->progress_since_eval = 1;
        return;
    }
    if (find(l, "Running Eval") || find(l, "Running eval") || find(l, "Evaluating") || find(l, "evaluating") ||
        find(l, "Start evaluat") || find(l, "***** Eval")) {
        ref_set(&s->eval_ref, s->file, s->lineno, -1, l);
        s->progress_since_eval = 0;
    }
}

void ml_oom_on_load(struct ml_oom_scanner *s, const char *l, bool load_bar)
{
    /* a load bar's line: its count said whether the load goes on (context.c handle_progress) */
    /* vLLM's "Loading model weights took 14.99 GB" / "Model loading took 15.2 GiB" end the load,
     * as a finished load bar does: what fails after them is the engine's next start-up step. */
    if (find(l, "weights took") || find(l, "Model loading took"))
        memset(&s->load_ref, 0, sizeof(s->load_ref));
    else if (!load_bar &&
             (find(l, "Loading checkpoint shards") || find(l, "Loading model") || find(l, "oading weights") ||
              find(l, "Loading safetensors") || find(l, "loading checkpoint") || find(l, "Loading checkpoint")))
        ref_set(&s->load_ref, s->file, s->lineno, -1, l);
    uint64_t v;
    const char *p = find(l, "weights took");
    if (p && ml_oom_parse_size(skip_blank(p + 12), &v))
        s->inc->weights_bytes = v;
    p = find(l, "Model loading took");
    if (p && ml_oom_parse_size(skip_blank(p + 18), &v))
        s->inc->weights_bytes = v;
}

void ml_oom_on_vllm_info(struct ml_oom_scanner *s, const char *l)
{
    struct ml_incident *inc = s->inc;
    uint64_t v;
    if (find(l, "Memory profiling")) {
        inc->has_profile = true;
        ref_set(&inc->profile_ref, s->file, s->lineno, -1, l);
        if (size_after(l, "total_gpu_memory=", &v))
            inc->prof_total = v;
        if (size_after(l, "peak_torch_memory=", &v))
            inc->prof_peak_torch = v;
        if (size_after(l, "non_torch_memory=", &v))
            inc->prof_non_torch = v;
        if (size_after(l, "kv_cache_size=", &v))
            inc->prof_kv_cache = v;
        const char *u = find(l, "gpu_memory_utilization=");
        if (u)
            ml_oom_parse_permille(u + 23, &inc->prof_util_permille);
    }
    const char *b = find(l, "# GPU blocks:");
    if (b && ml_oom_parse_u64(skip_blank(b + 13), &v))
        inc->gpu_blocks = v + 1;
    if (find(l, "preempted") && find(l, "KV cache"))
        inc->preemptions++;
    b = find(l, "Available KV cache memory:");
    if (b && ml_oom_parse_size(skip_blank(b + 26), &v))
        inc->prof_kv_cache = v;
    /* V1 (vllm/v1/core/kv_cache_utils.py): "GPU KV cache size: 441,104 tokens". */
    b = find(l, "GPU KV cache size:");
    if (b && ml_oom_parse_u64(skip_blank(b + 18), &v) && v)
        inc->prof_kv_tokens = v;
}

void ml_oom_on_ds_line(struct ml_oom_scanner *s, const char *l, uint64_t m)
{
    struct ml_incident *inc = s->inc;
    uint64_t v;
    if (m & GB(G_DSFLUSH)) {
        const char *p = find(l, "pytorch allocator cache flushes");
        if (p) {
            const char *d = p;
            while (d > l && d[-1] == ' ')
                d--;
            while (d > l && is_digit(d[-1]))
                d--;
            if (ml_oom_parse_u64(d, &v)) {
                inc->flush_warnings++;
                if (v > inc->flush_max)
                    inc->flush_max = v;
                ref_set(&inc->flush_ref, s->file, s->lineno, -1, l);
            }
        }
    }
    if (m & GB(G_DSMEM)) {
        /* "MA 11.76 GB Max_MA 11.76 GB CA 11.77 GB Max_CA 12 GB" (see_memory_usage, A9). */
        const char *p = find(l, "MA ");
        while (p && p > l && p[-1] != ' ' && p[-1] != '\t' && p[-1] != ']' && p[-1] != '|')
            p = find(p + 1, "MA ");
        if (p && ml_oom_parse_size(skip_blank(p + 3), &v)) {
            if (inc->mem_samples == 0) {
                inc->ma_first = v;
                inc->ma_rising = true;
            } else if (v < inc->ma_last) {
                inc->ma_rising = false;
            }
            inc->ma_last = v;
            inc->mem_samples++;
            ref_set(&inc->mem_ref, s->file, s->lineno, -1, l);
        }
    }
    if (m & GB(G_CPUMEM)) {
        const char *p = find(l, "percent =");
        uint32_t pm;
        if (p && ml_oom_parse_permille(skip_blank(p + 9), &pm)) {
            inc->cpu_percent_permille = pm / 100 ? pm / 100 : 1; /* percent x 10 */
            ref_set(&inc->cpu_ref, s->file, s->lineno, -1, l);
        }
    }
}
