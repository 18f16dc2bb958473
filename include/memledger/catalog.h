/*
 * catalog.h - the built-in model catalog, compiled into the binary.
 *
 * At build time tools/gen_catalog.c turns data/models/<name>.json and params.jsonl into a C
 * table (name, hub id, the exact and published parameter counts, and the config bytes); the
 * table is const data, so looking a model up reads no file. Names are case-insensitive and a
 * hub id ("Qwen/Qwen2.5-14B") is an alias of its entry.
 */
#ifndef ML_CATALOG_H
#define ML_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/status.h"

struct ml_catalog_entry {
    const char *name;             /* "qwen2.5-14b" */
    const char *hub_id;           /* "Qwen/Qwen2.5-14B" */
    uint64_t params;              /* exact unique parameter count from params.jsonl */
    const char *published;        /* the published figure as written in params.jsonl */
    const unsigned char *config;  /* config.json bytes (not NUL-terminated) */
    size_t config_len;            /* their length */
};

/* Number of entries. */
size_t ml_catalog_count(void);

/* Entry i (0 <= i < count), or NULL. Borrowed, static storage. */
const struct ml_catalog_entry *ml_catalog_get(size_t i);

/* Entry by name or hub id, case-insensitive; NULL if none. */
const struct ml_catalog_entry *ml_catalog_find(const char *name);

/*
 * Up to max entries whose names are closest to name (edit distance, then prefix), for
 * "did you mean" messages. Returns how many were written to out.
 */
size_t ml_catalog_suggest(const char *name, const struct ml_catalog_entry **out, size_t max);

/* Parse the entry's config into *arch (origin "<catalog:NAME>" in diagnostics). */
enum ml_status ml_catalog_arch(const struct ml_catalog_entry *e, struct ml_arch *arch,
                               struct ml_diag *diag);

/* Edit distance between a and b, case-insensitive (capped at 64 characters each). */
size_t ml_edit_distance(const char *a, const char *b);

#endif /* ML_CATALOG_H */
