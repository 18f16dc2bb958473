/*
 * catalog.c - lookups over the generated catalog table (catalog_data.c, built from data/models).
 */
#include "memledger/catalog.h"
#include "memledger/infer.h"
#include "memledger/model_ref.h"

#include <stdio.h>
#include <string.h>

#include "i18n.h"

/* Defined in the generated catalog_data.c. */
extern const struct ml_catalog_entry ml_catalog_table[];
extern const size_t ml_catalog_table_len;

size_t ml_catalog_count(void)
{
    return ml_catalog_table_len;
}

const struct ml_catalog_entry *ml_catalog_get(size_t i)
{
    return i < ml_catalog_table_len ? &ml_catalog_table[i] : NULL;
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static int eq_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const struct ml_catalog_entry *ml_catalog_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < ml_catalog_table_len; i++) {
        const struct ml_catalog_entry *e = &ml_catalog_table[i];
        if (eq_nocase(name, e->name) || eq_nocase(name, e->hub_id))
            return e;
    }
    /* A hub id whose organisation differs ("someone/Qwen2.5-14B") still names the model. */
    const char *slash = strrchr(name, '/');
    if (slash && slash[1]) {
        for (size_t i = 0; i < ml_catalog_table_len; i++) {
            const char *hs = strrchr(ml_catalog_table[i].hub_id, '/');
            if (hs && eq_nocase(slash + 1, hs + 1))
                return &ml_catalog_table[i];
        }
    }
    return NULL;
}

size_t ml_catalog_suggest(const char *name, const struct ml_catalog_entry **out, size_t max)
{
    size_t n = 0;
    size_t best_d[16];
    if (max > 16)
        max = 16;
    /* Only plausible neighbours: within a third of the name's length (at least 2 edits). */
    size_t limit = strlen(name) / 3;
    if (limit < 2)
        limit = 2;
    for (size_t i = 0; i < ml_catalog_table_len && max; i++) {
        const struct ml_catalog_entry *e = &ml_catalog_table[i];
        size_t d = ml_edit_distance(name, e->name);
        const char *hs = strrchr(e->hub_id, '/');
        size_t dh = ml_edit_distance(name, hs ? hs + 1 : e->hub_id);
        if (dh < d)
            d = dh;
        if (d > limit)
            continue;
        /* Insertion into the sorted top-max list; ties keep catalog order. */
        size_t k = n;
        if (n < max)
            n++;
        else if (d >= best_d[max - 1])
            continue;
        else
            k = max - 1;
        while (k > 0 && best_d[k - 1] > d) {
            out[k] = out[k - 1];
            best_d[k] = best_d[k - 1];
            k--;
        }
        out[k] = e;
        best_d[k] = d;
    }
    return n;
}

enum ml_status ml_catalog_arch(const struct ml_catalog_entry *e, struct ml_arch *arch, struct ml_diag *diag)
{
    char origin[96];
    (void)snprintf(origin, sizeof(origin), "<catalog:%s>", e->name);
    return ml_arch_from_json((const char *)e->config, e->config_len, origin, arch, diag);
}

/* ---- model names ------------------------------------------------------------------------ */

/* What a name suffix says. Rows are tried longest first at the end of the name; each stripped
 * one is named in the note. Instruction, chat and reasoning tuning keep the base's config.json;
 * so do dated re-releases (DeepSeek-V3-0324, -R1-0528). Qwen3's -2507 releases change the
 * context, so -2507 is kept and looked up as its own row. */
enum suffix_kind { SUF_STRIP, SUF_KEEP, SUF_QUANT };

static const struct {
    const char *suffix;
    enum suffix_kind kind;
    enum ml_name_quant quant;
    uint32_t bits;
    const char *what;
} suffixes[] = {
    {"-instruct", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("instruction tuning keeps the config")},
    {"-chat", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("chat tuning keeps the config")},
    {"-it", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("instruction tuning keeps the config")},
    {"-hf", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("the transformers conversion")},
    {"-base", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("the base model")},
    {"-pt", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("the pre-trained model")},
    {"-thinking", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("the reasoning release keeps the config")},
    {"-2507", SUF_KEEP, ML_NAME_QUANT_NONE, 0, N_("the 2507 release (its own context)")},
    {"-0528", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("a dated release of the same architecture")},
    {"-0324", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("a dated release of the same architecture")},
    {"-fp8", SUF_QUANT, ML_NAME_QUANT_FP8, 8, N_("fp8 weights with 128 x 128 block scales")},
    {"-bf16", SUF_QUANT, ML_NAME_QUANT_BF16, 16, N_("16-bit weights")},
    {"-awq", SUF_QUANT, ML_NAME_QUANT_AWQ, 4, N_("AWQ 4-bit weights")},
    {"-gptq-int4", SUF_QUANT, ML_NAME_QUANT_GPTQ, 4, N_("GPTQ 4-bit weights")},
    {"-gptq-int8", SUF_QUANT, ML_NAME_QUANT_GPTQ, 8, N_("GPTQ 8-bit weights")},
    {"-gptq", SUF_QUANT, ML_NAME_QUANT_GPTQ, 4, N_("GPTQ 4-bit weights")},
    {"-bnb-4bit", SUF_QUANT, ML_NAME_QUANT_BNB4, 4, N_("bitsandbytes NF4 weights")},
    {"-unsloth", SUF_STRIP, ML_NAME_QUANT_NONE, 0, N_("Unsloth's upload")},
};

static bool ends_nocase(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    if (n <= k)
        return false;
    for (size_t i = 0; i < k; i++)
        if (lower((unsigned char)s[n - k + i]) != lower((unsigned char)suf[i]))
            return false;
    return true;
}

static bool has_nocase(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] && lower((unsigned char)s[i]) == lower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return false;
}

/* Is s, less one tuning suffix (a strip row: "gemma-3-4b-it", "Qwen3-VL-4B-Instruct"), key? */
static bool stem_is(const char *s, const char *key)
{
    size_t n = strlen(s), k = strlen(key);
    if (n <= k)
        return false;
    for (size_t i = 0; i < k; i++)
        if (lower((unsigned char)s[i]) != lower((unsigned char)key[i]))
            return false;
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (suffixes[i].kind == SUF_STRIP && strlen(suffixes[i].suffix) == n - k &&
            ends_nocase(s, n, suffixes[i].suffix))
            return true;
    return false;
}

/* The entry whose name, hub id or hub repository name is key (case-insensitive), or whose name
 * or repository name is key plus a tuning suffix (an instruct-only release under its base name). */
static const struct ml_catalog_entry *find_key(const char *key, bool *via_stem)
{
    const struct ml_catalog_entry *e = ml_catalog_find(key);
    *via_stem = false;
    for (size_t i = 0; !e && i < ml_catalog_table_len; i++) {
        const char *hs = strrchr(ml_catalog_table[i].hub_id, '/');
        if (hs && eq_nocase(key, hs + 1))
            e = &ml_catalog_table[i];
    }
    for (size_t i = 0; !e && i < ml_catalog_table_len; i++) {
        const char *hs = strrchr(ml_catalog_table[i].hub_id, '/');
        if (stem_is(ml_catalog_table[i].name, key) || (hs && stem_is(hs + 1, key))) {
            e = &ml_catalog_table[i];
            *via_stem = true;
        }
    }
    return e;
}

/* Are the first n characters of a and b equal, case-insensitive? */
static bool prefix_nocase(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

/* One line refusing a checkpoint format memledger does not model, or NULL. */
static const char *refusal(const char *arg)
{
    if (has_nocase(arg, "aqlm"))
        return _(
            "AQLM checkpoints (additive 1-2 bit codebooks) are not modelled; name the 16-bit model and give --quant");
    if (has_nocase(arg, "gguf"))
        return _("GGUF files are llama.cpp checkpoints, not a transformers / vLLM model; name the Hugging Face model "
                 "instead");
    if (has_nocase(arg, "mlx-") || has_nocase(arg, "-mlx") || has_nocase(arg, "mlx-community/"))
        return _("MLX checkpoints run on Apple silicon through mlx-lm, which memledger does not model; name the "
                 "Hugging Face model instead");
    return NULL;
}

/* Append ", piece" (or "piece") to the note. */
static void note_add(char *note, size_t cap, const char *piece)
{
    size_t len = strlen(note);
    (void)snprintf(note + len, cap - len, "%s%s", len ? "; " : "", piece);
}

/* Strip suffixes from the end of stem until a catalog row matches stem + kept; the pieces of
 * the note in *pieces. */
static const struct ml_catalog_entry *strip_and_find(char *stem, struct ml_name_match *m, char *pieces, size_t cap)
{
    char kept[32] = "", key[192];
    bool via_stem;
    for (int step = 0; step < 8; step++) {
        (void)snprintf(key, sizeof(key), "%s%s", stem, kept);
        const struct ml_catalog_entry *e = find_key(key, &via_stem);
        if (e && via_stem)
            note_add(pieces, cap, _("the same config as the tuned release"));
        if (e)
            return e;
        size_t n = strlen(stem), best = sizeof(suffixes);
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
            if (ends_nocase(stem, n, suffixes[i].suffix) &&
                (best == sizeof(suffixes) || strlen(suffixes[i].suffix) > strlen(suffixes[best].suffix)))
                best = i;
        if (best == sizeof(suffixes))
            break;
        size_t k = strlen(suffixes[best].suffix);
        char piece[96];
        (void)snprintf(piece, sizeof(piece), "%.*s: %s", (int)k, stem + n - k, _(suffixes[best].what));
        note_add(pieces, cap, piece);
        if (suffixes[best].kind == SUF_KEEP) {
            char k2[32];
            (void)snprintf(k2, sizeof(k2), "%.*s%s", (int)k, stem + n - k, kept);
            (void)snprintf(kept, sizeof(kept), "%s", k2);
        } else if (suffixes[best].kind == SUF_QUANT && m->quant == ML_NAME_QUANT_NONE) {
            m->quant = suffixes[best].quant;
            m->quant_bits = suffixes[best].bits;
        }
        stem[n - k] = '\0';
    }
    /* A kept release suffix without its own row: the base's config, said so. */
    if (kept[0]) {
        const struct ml_catalog_entry *e = find_key(stem, &via_stem);
        if (e) {
            char piece[96];
            (void)snprintf(piece, sizeof(piece), _("no built-in %s row, so the base's context"), kept + 1);
            note_add(pieces, cap, piece);
        }
        return e;
    }
    return NULL;
}

enum ml_status ml_catalog_resolve(const char *arg, bool path_like, struct ml_name_match *m, struct ml_diag *diag)
{
    memset(m, 0, sizeof(*m));
    if (!arg || !*arg)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no model named"));
    const char *why = refusal(arg);
    if (why)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, "%s: %s", arg, why);
    /* The name or the hub id exactly: nothing to say. */
    for (size_t i = 0; !path_like && i < ml_catalog_table_len; i++)
        if (eq_nocase(arg, ml_catalog_table[i].name) || eq_nocase(arg, ml_catalog_table[i].hub_id))
            m->entry = &ml_catalog_table[i];
    if (m->entry)
        return ML_OK;
    char stem[160];
    ml_path_last(arg, stem, sizeof(stem));
    char pieces[256] = "";
    m->entry = strip_and_find(stem, m, pieces, sizeof(pieces));
    if (m->entry) {
        const struct ml_catalog_entry *v = ml_catalog_quant_variant(m->entry, m->quant, m->quant_bits);
        if (v) {
            char piece[160];
            (void)snprintf(piece, sizeof(piece), _("the quantized checkpoint's own config (%s)"), v->hub_id);
            note_add(pieces, sizeof(pieces), piece);
            m->entry = v;
        }
        /* A path, or an organisation the built-in hub id does not have, is a place on this machine
         * that holds nothing. */
        const char *as = strchr(arg, '/'), *hs = strchr(m->entry->hub_id, '/');
        bool elsewhere = path_like || (as && (!hs || as - arg != hs - m->entry->hub_id ||
                                              !prefix_nocase(arg, m->entry->hub_id, (size_t)(as - arg))));
        (void)snprintf(m->note, sizeof(m->note), _("%s%s: built-in %s (%s)%s%s"), arg,
                       elsewhere ? _(" is not a path on this machine") : "", m->entry->name, m->entry->hub_id,
                       pieces[0] ? "; " : "", pieces);
        return ML_OK;
    }
    struct ml_near near = {{0}, {0}, 0};
    size_t limit = ml_near_limit(stem);
    for (size_t i = 0; i < ml_catalog_table_len; i++) {
        /* The nearer of the name and the hub repository name ("Qwen2.5-14B-Instrut"). */
        const struct ml_catalog_entry *e = &ml_catalog_table[i];
        const char *hs = strrchr(e->hub_id, '/');
        size_t d = ml_edit_distance(stem, e->name), dh = ml_edit_distance(stem, hs ? hs + 1 : e->hub_id);
        ml_near_insert(&near, e->name, d < dh ? d : dh, limit);
    }
    char list[200];
    ml_near_list(&near, list, sizeof(list));
    if (!near.n)
        return ml_diag_set(diag, ML_ERR_NOTFOUND,
                           _("unknown model '%s': not a built-in name, hub id, config.json or model directory "
                             "('memledger models' lists the built-in ones)"),
                           arg);
    return ml_diag_set(diag, ML_ERR_NOTFOUND, _("unknown model '%s'; did you mean %s? ('memledger models' lists them)"),
                       arg, list);
}

const struct ml_catalog_entry *ml_catalog_quant_variant(const struct ml_catalog_entry *base, enum ml_name_quant q,
                                                        uint32_t bits)
{
    const char *suffix = q == ML_NAME_QUANT_AWQ    ? "-instruct-awq"
                         : q == ML_NAME_QUANT_GPTQ ? (bits == 8 ? "-instruct-gptq-int8" : "-instruct-gptq-int4")
                                                   : NULL;
    if (!base || !suffix)
        return NULL;
    char key[160];
    (void)snprintf(key, sizeof(key), "%s%s", base->name, suffix);
    return ml_catalog_find(key);
}

void ml_arch_apply_name_quant(struct ml_arch *a, enum ml_name_quant q, uint32_t bits)
{
    /* What each repository family ships (their quantization_config): Qwen's -FP8 128 x 128 block
     * scales; AutoAWQ GEMM 4-bit group 128 with zero points; GPTQ group 128; Unsloth's -bnb-4bit
     * NF4 with double quantization. A -BF16 conversion has no quantization_config. */
    struct ml_weight_quant *w = &a->wq;
    switch (q) {
    case ML_NAME_QUANT_BF16: memset(w, 0, sizeof(*w)); return;
    case ML_NAME_QUANT_NONE: return;
    default: break;
    }
    if (w->method != ML_WQ_NONE)
        return; /* the checkpoint's own config says more than its name */
    switch (q) {
    case ML_NAME_QUANT_FP8:
        *w = (struct ml_weight_quant){
            .method = ML_WQ_FP8, .bits = 8, .block_out = 128, .block_in = 128, .scale_bytes = 4, .name = "fp8"};
        break;
    case ML_NAME_QUANT_AWQ:
        *w = (struct ml_weight_quant){
            .method = ML_WQ_AWQ, .bits = 4, .group = 128, .scale_bytes = 2, .zero = true, .name = "awq"};
        break;
    case ML_NAME_QUANT_GPTQ:
        *w = (struct ml_weight_quant){.method = ML_WQ_GPTQ,
                                      .bits = bits ? bits : 4,
                                      .group = 128,
                                      .scale_bytes = 2,
                                      .zero = true,
                                      .name = "gptq"};
        break;
    case ML_NAME_QUANT_BNB4:
        *w = (struct ml_weight_quant){.method = ML_WQ_BNB4,
                                      .bits = 4,
                                      .group = 64,
                                      .scale_bytes = 4,
                                      .double_quant = true,
                                      .name = "bitsandbytes"};
        break;
    default: break;
    }
}

const struct ml_catalog_entry *ml_catalog_serving_variant(const struct ml_model_ref *m, const struct ml_infer *s)
{
    if (!m->catalog_params || m->arch.wq.method != ML_WQ_NONE)
        return NULL;
    return ml_catalog_quant_variant(ml_catalog_find(m->name),
                                    s->quant == ML_QUANT_AWQ    ? ML_NAME_QUANT_AWQ
                                    : s->quant == ML_QUANT_GPTQ ? ML_NAME_QUANT_GPTQ
                                                                : ML_NAME_QUANT_NONE,
                                    s->quant_bits);
}
