/*
 * card.h - `memledger card`: the largest built-in model each GPU size can train and serve, and the
 * seed handbook's card checked cell by cell (lib/run/card.c computes it from the catalog and the
 * ledgers; lib/render/card_report.c writes it as Markdown and as JSON, docs/json.md "card").
 */
#ifndef ML_CARD_H
#define ML_CARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/buf.h"
#include "memledger/catalog.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/status.h"
#include "memledger/train.h"

/* The card's columns. */
enum ml_card_method { ML_CARD_FULL, ML_CARD_LORA, ML_CARD_QLORA, ML_CARD_INFER16, ML_CARD_INFER4, ML_CARD_METHODS };

/* The settings every cell is estimated at (--seq, --batch, --margin). */
struct ml_card_settings {
    uint64_t seq, batch;
    uint32_t margin_permille;
};

/* One cell of the handbook's card, as a claimed largest model. */
struct ml_card_claim {
    const char *gpu; /* our size */
    enum ml_card_method m;
    const char *text;      /* as the handbook prints it */
    const char *reference; /* the catalog model of that size it is tested with */
};

/* What decides a handbook cell (the JSON's decided_by). */
enum ml_card_why {
    ML_CARD_HOLDS,
    ML_CARD_SEQ512,
    ML_CARD_NO_MARGIN,
    ML_CARD_NEEDS_4BIT,
    ML_CARD_NEEDS_SHARDING,
    ML_CARD_NEEDS_GPUS
};

/* The cards the columns stand for unless --gpus says otherwise: the seed handbook's own (its
 * "24 GB (4090)", "48 GB (A6000)", "80 GB (A100)"; docs/cli/card.md). */
#define ML_CARD_DEFAULT_GPUS "rtx4090,a6000,a100-80g"

#define ML_CARD_MAX_GPUS   16
#define ML_CARD_MAX_CLAIMS 16

struct ml_card {
    struct ml_card_settings st;
    size_t n_gpus;
    struct {
        char arg[48];  /* as given in --gpus */
        char card[48]; /* the card it stands for: the catalog card, or the one a size is read as
                          (the smallest card sold as that size); "" when no card has the size */
        uint64_t nominal, capacity;
        const struct ml_catalog_entry *best[ML_CARD_METHODS]; /* NULL: none fits */
        uint64_t dev[ML_CARD_METHODS];                        /* the best model's device bytes */
    } gpu[ML_CARD_MAX_GPUS];
    size_t n_cells;
    struct {
        const struct ml_card_claim *cl; /* NULL: the reference model or GPU is unknown */
        uint64_t nominal;               /* the claim's card, its marketed size */
        uint64_t dev;
        enum ml_card_why why;
    } cell[ML_CARD_MAX_CLAIMS];
};

/* What one estimate works in, owned by the caller (the library holds no state). */
struct ml_card_scratch {
    struct ml_arch a;
    struct ml_inventory inv;
    struct ml_ledger l;
    struct ml_train t;
};

/* Whether catalog model e under method m fits one GPU of c with st's margin left free; *dev: its
 * device bytes (set whenever the ledger could be built). False too for what the card does not
 * rank: encoders, vision-language models, quantized uploads of a base model. */
bool ml_card_fits(const struct ml_catalog_entry *e, enum ml_card_method m, const struct ml_cluster *c,
                  const struct ml_card_settings *st, struct ml_card_scratch *s, uint64_t *dev);

/* Fill k (k->st set, the rest zero) for the comma-separated GPU list gpus (as --gpus): each GPU's
 * largest model per method, then the handbook's cells. Errors: ML_ERR_TOOBIG for more than
 * ML_CARD_MAX_GPUS GPUs, those of ml_gpu_resolve (diag at "--gpus"). */
enum ml_status ml_card_compute(struct ml_card *k, const char *gpus, struct ml_card_scratch *s, struct ml_diag *d);

#endif /* ML_CARD_H */
