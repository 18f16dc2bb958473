/*
 * engine.c - the serving engines' names (enum ml_engine, include/memledger/infer.h), in the setup
 * layer beside the serving options that name them (infer_opts.c); the inference ledger and the
 * reports above use the same names.
 */
#include "memledger/infer.h"

const char *ml_engine_name(enum ml_engine e)
{
    switch (e) {
    case ML_ENGINE_HF: return "hf";
    case ML_ENGINE_VLLM: return "vllm";
    case ML_ENGINE_SGLANG: return "sglang";
    }
    return "unknown";
}
