/*
 * gpu.h - GPU catalog and the meaning of --gpu NAME|SIZE.
 *
 * The catalog (generated at build time from data/gpus.tsv) gives, per card, the marketed size
 * (nominal) and the total a process sees (reported: cudaMemGetInfo / hipMemGetInfo, i.e. the
 * "total capacity" of PyTorch's OOM message), which is what memory budgets must use.
 * Unit rules (docs/units.md):
 *   - a card name or alias ("a100-80g", "H100", "910b") gives that card's reported capacity;
 *   - a size with an explicit unit ("15.98GiB", "16GB", "17179869184") is the usable capacity
 *     itself: GiB = 2^30, GB = 10^9;
 *   - a bare "<N>G" (or "<N>T", "<N>M") means "a card sold as N GB": nominal N GiB, usable the
 *     largest reported capacity among catalog cards of that nominal size (the note names it).
 * Reported capacities missing from the catalog: AMD and Hygon cards under ROCm expose exactly
 * nominal - 16 MiB (MI100, MI210, MI250X, MI300X, Z100L, K100-AI all do), which memledger
 * applies; for other vendors the nominal size is used and flagged as not measured.
 */
#ifndef ML_GPU_H
#define ML_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/status.h"

enum ml_gpu_vendor {
    ML_VENDOR_UNKNOWN,
    ML_VENDOR_NVIDIA,
    ML_VENDOR_AMD,
    ML_VENDOR_HYGON,
    ML_VENDOR_HUAWEI,
    ML_VENDOR_INTEL
};

/* One catalog row (static storage). */
struct ml_gpu_spec {
    const char *name;    /* canonical id: "a100-80g" */
    const char *aliases; /* comma-separated lowercase aliases, "" if none */
    enum ml_gpu_vendor vendor;
    const char *arch;        /* "ampere", "cdna3", "dcu", "davinci" */
    uint64_t nominal_bytes;  /* marketed size, N GB as N GiB */
    uint64_t reported_bytes; /* process-visible total, 0 if unknown */
    const char *source;      /* where reported_bytes comes from */
};

/* A resolved --gpu argument: plain value. */
struct ml_gpu {
    char name[48];             /* catalog id, or the size as given */
    enum ml_gpu_vendor vendor; /* ML_VENDOR_UNKNOWN for a plain size */
    char arch[16];             /* "" for a plain size */
    uint64_t nominal_bytes;    /* marketed size */
    uint64_t capacity_bytes;   /* usable capacity the ledger budgets against */
    bool capacity_measured;    /* capacity is a reported figure (or given exactly by the user) */
    char note[200];            /* how capacity was chosen, "" when it is the card's own figure */
};

size_t ml_gpu_catalog_count(void);
const struct ml_gpu_spec *ml_gpu_catalog_get(size_t i);

/* Catalog row by name or alias, case-insensitive, '_' and ' ' read as '-'; NULL if none. */
const struct ml_gpu_spec *ml_gpu_find(const char *name);

/* Usable capacity of a catalog row (reported, the ROCm rule, or nominal); sets *measured. */
uint64_t ml_gpu_spec_capacity(const struct ml_gpu_spec *s, bool *measured);

/*
 * Resolve a --gpu argument (see the rules above). Errors: ML_ERR_NOTFOUND for an unknown name
 * (diag suggests close names), ML_ERR_INVALID for a zero size, ML_ERR_PARSE / ML_ERR_OVERFLOW
 * from the size parser.
 */
enum ml_status ml_gpu_resolve(const char *arg, struct ml_gpu *out, struct ml_diag *diag);

/* "nvidia", "amd", ...; never NULL. */
const char *ml_gpu_vendor_name(enum ml_gpu_vendor v);

#endif /* ML_GPU_H */
