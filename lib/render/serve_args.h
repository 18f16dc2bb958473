/*
 * serve_args.h - a serving engine's settings as its command line and its Python call take them
 * (lib/render/serve_args.c, private to the fit renderers).
 */
#ifndef ML_SERVE_ARGS_H
#define ML_SERVE_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/fit.h"
#include "memledger/infer.h"

#define ML_SERVE_MAX_ARGS 8

/* One engine setting that differs from the engine's default. */
struct ml_serve_arg {
    enum ml_setting set;
    const char *flag; /* "--max-model-len", "--context-length" (the engine's dialect) */
    char py[48];      /* its Python keyword: "max_model_len", "context_length" */
    char value[32];   /* as the flag takes it: "46080", "0.95", "fp8_e4m3" */
    bool text;        /* a string in Python ("fp8"), else a number */
};

/* The dialect of an engine's flags: ML_DIALECT_SGLANG for SGLang, else ML_DIALECT_VLLM. */
enum ml_dialect ml_serve_dialect(enum ml_engine e);

/* The Python keyword of setting set in dialect d: vLLM's EngineArgs field; SGLang's ServerArgs
 * field, the flag's own name ("--tp-size" -> "tp_size"). "" when the dialect has none. */
void ml_serve_py_name(enum ml_setting set, enum ml_dialect d, char *out, size_t n);

/* s's settings that are not the engine's defaults, in a fixed order (tensor parallelism,
 * quantization, KV dtype, the memory share, the batch budgets, the context); returns the count. */
uint32_t ml_serve_args(const struct ml_infer *s, struct ml_serve_arg *out);

/* "vllm serve" / "python -m sglang.launch_server --model-path" and the Python call's head. */
const char *ml_serve_program(enum ml_engine e, bool python);

#endif /* ML_SERVE_ARGS_H */
