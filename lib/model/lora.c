/*
 * lora.c - LoRA target resolution and trainable-parameter count.
 *
 * PEFT (tuners/lora/layer.py) adds, to each targeted module, A (r x in) and B (out x r) for a
 * Linear or Conv1D, and A (r x num_embeddings), B (dim x r) for an Embedding; with bias="none"
 * nothing else is trainable. Target names match a module whose name equals the target or ends
 * with "." + target (peft/tuners/tuners_utils.py check_target_module_exists), i.e. the leaf name.
 * "all" is LLaMA-Factory's find_all_linear_modules (src/llamafactory/model/model_utils/misc.py):
 * leaf names of every module whose class name contains "Linear", skipping module names that
 * contain "lm_head" or one of the family's own forbidden_modules (the row's lora_skip:
 * "output_layer" for chatglm, "output" for internlm2). Experts kept as 3-D parameters (gpt-oss,
 * Llama 4, transformers v5 MoE) are not modules at all: no LoRA target reaches them.
 */
#include "memledger/inventory.h"

#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"
#include "family.h"
#include "i18n.h"

static const char *leaf(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

enum ml_status ml_lora_targets_parse(const char *s, struct ml_lora_targets *out, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    const char *p = s ? s : "";
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - start);
        if (n >= sizeof(out->names[0]))
            return ml_diag_set(diag, ML_ERR_INVALID, _("LoRA target '%.*s' is too long"), (int)n, start);
        if (n == 3 && !strncmp(start, "all", 3)) {
            out->all = true;
            continue;
        }
        if (out->n >= ML_LORA_MAX_TARGETS)
            return ml_diag_set(diag, ML_ERR_INVALID, _("more than %d LoRA targets"), ML_LORA_MAX_TARGETS);
        memcpy(out->names[out->n], start, n);
        out->names[out->n][n] = '\0';
        out->n++;
    }
    if (!out->all && out->n == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("empty LoRA target list (give module names or 'all')"));
    return ML_OK;
}

/* Is the module at path excluded from "all" (lm_head, and the family's own exclusions)? */
static bool forbidden(const struct ml_module_names *nm, const char *path)
{
    if (strstr(path, "lm_head"))
        return true;
    for (size_t i = 0; i < sizeof(nm->lora_skip) / sizeof(nm->lora_skip[0]) && nm->lora_skip[i]; i++)
        if (strstr(path, nm->lora_skip[i]))
            return true;
    return false;
}

/* Is name among the n names stored at base, 32 bytes apart? */
static bool has_name(const char *base, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(base + (size_t)i * 32, name))
            return true;
    return false;
}

/* A tensor that is the weight of a module LoRA can wrap. A vision-language model's tower and
 * projector are LLaMA-Factory's forbidden modules under its defaults (freeze_vision_tower and
 * freeze_multi_modal_projector true): find_all_linear_modules skips them for "all" and
 * patch_target_modules drops them from explicit names (model/model_utils/visual.py). */
static bool wrappable(const struct ml_tensor *t)
{
    if (t->mtp || strcmp(t->param, "weight") != 0 || t->kind == ML_MOD_VISION || t->kind == ML_MOD_PROJECTOR)
        return false;
    return t->linear || t->conv1d || t->kind == ML_MOD_EMBEDDING || t->kind == ML_MOD_POSITION;
}

enum ml_status ml_lora_count(const struct ml_arch *arch, const struct ml_inventory *inv,
                             const struct ml_lora_targets *targets, uint64_t rank, struct ml_lora_count *out,
                             struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    if (rank == 0)
        return ml_diag_set(diag, ML_ERR_INVALID, _("LoRA rank must be positive"));
    const uint32_t cap = sizeof(out->resolved) / sizeof(out->resolved[0]);
    struct ml_module_names nm;
    ml_family_modules(arch->family, &nm);

    /* Resolve the leaf names, in inventory order. */
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *t = &inv->t[i];
        if (!wrappable(t))
            continue;
        const char *name = leaf(t->path);
        bool take =
            (targets->all && t->linear && !forbidden(&nm, t->path)) || has_name(targets->names[0], targets->n, name);
        if (take && !has_name(out->resolved[0], out->n_resolved, name) && out->n_resolved < cap) {
            (void)snprintf(out->resolved[out->n_resolved], sizeof(out->resolved[0]), "%s", name);
            out->n_resolved++;
        }
    }
    for (uint32_t k = 0; k < targets->n; k++) {
        if (!has_name(out->resolved[0], out->n_resolved, targets->names[k])) {
            (void)snprintf(out->unmatched[out->n_unmatched], sizeof(out->unmatched[0]), "%s", targets->names[k]);
            out->n_unmatched++;
        }
    }
    if (out->n_resolved == 0) {
        if (targets->all && targets->n == 0)
            return ml_diag_set(
                diag, ML_ERR_INVALID,
                _("LoRA target 'all' matches no nn.Linear module in this %s model; name the modules to adapt"),
                ml_family_name(arch->family));
        return ml_diag_set(diag, ML_ERR_INVALID, _("LoRA target '%s' matches no module of this %s model"),
                           targets->n ? targets->names[0] : "all", ml_family_name(arch->family));
    }

    /* Count every module instance whose leaf name was resolved (PEFT matches by name). */
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *t = &inv->t[i];
        if (!wrappable(t) || !has_name(out->resolved[0], out->n_resolved, leaf(t->path)))
            continue;
        uint64_t in, outf;
        if (t->linear || t->conv1d) {
            in = t->in_features;
            outf = t->out_features;
        } else {
            in = t->rows;   /* embedding: num_embeddings */
            outf = t->cols; /* embedding_dim */
        }
        uint64_t per, all;
        if (!ml_add_u64(in, outf, &per) || !ml_mul3_u64(per, rank, t->copies, &all) ||
            !ml_add_u64(out->params, all, &out->params))
            return ml_diag_set(diag, ML_ERR_OVERFLOW, _("LoRA parameter count overflows"));
        out->modules += t->copies;
    }
    return ML_OK;
}

size_t ml_arch_freeze_keys(const struct ml_arch *arch, int which, const char **out, size_t max)
{
    struct ml_module_names nm;
    ml_family_modules(arch->family, &nm);
    size_t n = 0;
    if (arch->vision.kind == ML_VISION_NONE)
        return 0;
    const char *const *keys = which ? nm.projector_keys : nm.vision_keys;
    size_t cap = which ? sizeof(nm.projector_keys) / sizeof(nm.projector_keys[0])
                       : sizeof(nm.vision_keys) / sizeof(nm.vision_keys[0]);
    for (size_t i = 0; i < cap && keys[i] && n < max; i++)
        out[n++] = keys[i];
    return n;
}

bool ml_module_in_keys(const char *path, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i] && strstr(path, keys[i]))
            return true;
    return false;
}
