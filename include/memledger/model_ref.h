/*
 * model_ref.h - a model as a command names it: the parsed architecture and how it was found.
 *
 * src/ fills it (ml_resolve_model: a built-in name or hub id, a config.json, a directory); the
 * renderers (report.h) and the diagnosis settings (oom_settings.h) read it.
 */
#ifndef ML_MODEL_REF_H
#define ML_MODEL_REF_H

#include <stdint.h>

#include "memledger/arch.h"

struct ml_model_ref {
    struct ml_arch arch;     /* the parsed architecture */
    char name[96];           /* catalog name, or the directory / file name */
    char hub_id[128];        /* catalog hub id, "" for a file */
    char source[512];        /* "built-in catalog" or the config path read */
    uint64_t catalog_params; /* exact count from the catalog, 0 for a file */
};

#endif /* ML_MODEL_REF_H */
