/*
 * train_host.c - host RAM of a training run (struct ml_host): loading the checkpoint, ZeRO and
 * FSDP offload (notes §1.7, pinned and pageable), the gathered model at save and Unsloth's
 * offloaded checkpoints, per node.
 *
 * Rules of the shared accounting notes (reference/accounting-notes.md, "notes §x.y"; docs/ledger.md
 * has the rules) or the source read (transformers from_pretrained, DeepSpeed zero.Init, accelerate
 * FullyShardedDataParallelPlugin). Vocabulary as in train_ledger.c.
 */
#include "train_int.h"

void ml_ledger_host_terms(struct run *R, struct ml_ledger *l)
{
    struct calc *k = &R->k;
    const struct ml_train *t = R->t;
    uint64_t g = R->c->gpus_per_node;
    struct ml_host *hst = &l->host;
    /* A packed checkpoint is read as stored. */
    uint64_t wbytes = R->packed ? add(k, R->packed_bytes, R->packed_state) : mul(k, R->P, R->act_bytes);
    /* Loading: from_pretrained materialises the checkpoint on the host per process, shard by
     * shard under ZeRO-3's zero.Init (a 5 GB shard at a time), whole otherwise. */
    uint64_t shard = (uint64_t)5000000000ull;
    hst->load_bytes = R->zero3 ? mul(k, g, shard < wbytes ? shard : wbytes) : mul(k, g, wbytes);
    /* accelerate fsdp_cpu_ram_efficient_loading: rank 0 reads the checkpoint, the others build
     * the model on the meta device (utils/dataclasses.py FullyShardedDataParallelPlugin). */
    if (R->fsdp && t->fsdp_ram_efficient)
        hst->load_bytes = wbytes;
    /* Offload (notes §1.7): per rank, times ranks on the node. */
    uint64_t Pt_n = part(R->P_t, R->n_shard);
    if (t->deepspeed && t->zero.offload_optimizer) {
        uint64_t pinned = mul(k, Pt_n, 2 + 4);   /* grad partition + fp32 grads */
        uint64_t pageable = mul(k, Pt_n, 4 + 8); /* master + Adam */
        if (t->zero.pin_memory) {
            hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, pinned));
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, pageable));
        } else {
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, add(k, pinned, pageable)));
        }
    }
    if (t->deepspeed && t->zero.offload_param) {
        uint64_t p = mul(k, part(R->P, R->n_shard), 2);
        if (t->zero.pin_memory)
            hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, p));
        else
            hst->offload_pageable = add(k, hst->offload_pageable, mul(k, g, p));
    }
    if (R->fsdp && t->fsdp_offload)
        hst->offload_pinned = add(k, hst->offload_pinned, mul(k, g, mul(k, part(R->P_t, R->n_shard), 16)));
    /* Save: rank 0 gathers the 16-bit model (ZeRO-3 gather_16bit_weights_on_model_save). */
    if (R->zero3 && t->zero.gather_16bit_on_save)
        hst->save_bytes = wbytes;
    /* fsdp_state_dict_type FULL_STATE_DICT: each save gathers the full model on rank 0's CPU. */
    if (R->fsdp && t->fsdp_full_state_dict)
        hst->save_bytes = wbytes;
    if (t->grad_ckpt == ML_GC_UNSLOTH)
        hst->checkpoint_offload = mul(k, g, mul3(k, R->trainable_layers, R->tokens, 2 * R->a->hidden));
    uint64_t steady = add(k, add(k, hst->offload_pinned, hst->offload_pageable), hst->checkpoint_offload);
    hst->peak_bytes = max2(hst->load_bytes, add(k, steady, hst->save_bytes));
}
