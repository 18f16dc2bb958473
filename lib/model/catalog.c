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
 * one is named in the note. A tuned, dated or quantized release is a checkpoint of its own whose
 * config.json may differ from the base's (Qwen2.5-7B-Instruct declares 32768 positions, the base
 * 131072): when the catalog has no row for it (data/models/variants.jsonl) the note says which
 * serving keys were taken from the base (own = true). Qwen3's -2507 releases change the context,
 * so -2507 is kept and looked up as its own row. */
enum suffix_kind { SUF_STRIP, SUF_KEEP, SUF_QUANT };

static const struct {
    const char *suffix;
    enum suffix_kind kind;
    enum ml_name_quant quant;
    uint32_t bits;
    bool own; /* a checkpoint with its own config.json */
    const char *what;
} suffixes[] = {
    {"-instruct", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("an instruction-tuned release")},
    {"-chat", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("a chat-tuned release")},
    {"-it", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("an instruction-tuned release")},
    {"-hf", SUF_STRIP, ML_NAME_QUANT_NONE, 0, false, N_("the transformers conversion")},
    {"-base", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("the base model")},
    {"-pt", SUF_STRIP, ML_NAME_QUANT_NONE, 0, false, N_("the pre-trained model")},
    {"-thinking", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("a reasoning release")},
    {"-2507", SUF_KEEP, ML_NAME_QUANT_NONE, 0, false, N_("the 2507 release (its own context)")},
    {"-0528", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("a dated release of the same architecture")},
    {"-0324", SUF_STRIP, ML_NAME_QUANT_NONE, 0, true, N_("a dated release of the same architecture")},
    {"-fp8", SUF_QUANT, ML_NAME_QUANT_FP8, 8, true, N_("fp8 weights with 128 x 128 block scales")},
    {"-bf16", SUF_QUANT, ML_NAME_QUANT_BF16, 16, true, N_("16-bit weights")},
    {"-awq", SUF_QUANT, ML_NAME_QUANT_AWQ, 4, true, N_("AWQ 4-bit weights")},
    {"-awq-int4", SUF_QUANT, ML_NAME_QUANT_AWQ, 4, true, N_("AWQ 4-bit weights")},
    {"-gptq-int4", SUF_QUANT, ML_NAME_QUANT_GPTQ, 4, true, N_("GPTQ 4-bit weights")},
    {"-gptq-int8", SUF_QUANT, ML_NAME_QUANT_GPTQ, 8, true, N_("GPTQ 8-bit weights")},
    {"-gptq", SUF_QUANT, ML_NAME_QUANT_GPTQ, 4, true, N_("GPTQ 4-bit weights")},
    {"-bnb-4bit", SUF_QUANT, ML_NAME_QUANT_BNB4, 4, true, N_("bitsandbytes NF4 weights")},
    {"-unsloth", SUF_STRIP, ML_NAME_QUANT_NONE, 0, false, N_("Unsloth's upload")},
};

/* Hub repositories renamed since their release, the old name prefix first: Meta's Llama 3.1
 * repositories were published as meta-llama/Meta-Llama-3.1-* and are now meta-llama/Llama-3.1-*
 * (both spellings are served: hugging-quants' cards name meta-llama/Meta-Llama-3.1-405B-Instruct). */
static const struct {
    const char *old_prefix, *new_prefix;
} renamed[] = {
    {"meta-llama-3.1-", "Llama-3.1-"},
};

/* The serving keys of a config.json a release may change (catalog.h struct ml_catalog_entry). */
#define SERVING_KEYS "max_position_embeddings, rope_scaling, quantization_config, tie_word_embeddings, vocab_size"

static bool prefix_nocase(const char *a, const char *b, size_t n);

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
static const struct ml_catalog_entry *find_key1(const char *key, bool *via_stem)
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

/* find_key1 of key, else of key under the repository's current name (renamed[]); *renamed_to
 * then holds the prefix it was read as. */
static const struct ml_catalog_entry *find_key(const char *key, bool *via_stem, const char **renamed_to)
{
    const struct ml_catalog_entry *e = find_key1(key, via_stem);
    for (size_t i = 0; !e && i < sizeof(renamed) / sizeof(renamed[0]); i++) {
        size_t k = strlen(renamed[i].old_prefix);
        if (strlen(key) <= k || !prefix_nocase(key, renamed[i].old_prefix, k))
            continue;
        char alt[192];
        (void)snprintf(alt, sizeof(alt), "%s%s", renamed[i].new_prefix, key + k);
        e = find_key1(alt, via_stem);
        if (e)
            *renamed_to = renamed[i].new_prefix;
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

/* Does the entry's config.json hold key (a top-level or nested "key")? */
static bool config_has(const struct ml_catalog_entry *e, const char *key)
{
    size_t k = strlen(key);
    for (size_t i = 0; i + k + 2 <= e->config_len; i++)
        if (e->config[i] == '"' && !memcmp(e->config + i + 1, key, k) && e->config[i + 1 + k] == '"')
            return true;
    return false;
}

/* Strip suffixes from the end of stem until a catalog row matches stem + kept; the pieces of
 * the note in *pieces; *own: a stripped suffix names a checkpoint with its own config.json. */
static const struct ml_catalog_entry *strip_and_find(char *stem, struct ml_name_match *m, char *pieces, size_t cap,
                                                     bool *own)
{
    char kept[32] = "", key[192];
    bool via_stem;
    const char *renamed_to = NULL;
    for (int step = 0; step < 8; step++) {
        (void)snprintf(key, sizeof(key), "%s%s", stem, kept);
        const struct ml_catalog_entry *e = find_key(key, &via_stem, &renamed_to);
        if (e && renamed_to) {
            char piece[160];
            (void)snprintf(piece, sizeof(piece), _("%s is the repository's former name (now %s...)"), key, renamed_to);
            note_add(pieces, cap, piece);
        }
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
        *own = *own || suffixes[best].own;
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
        const struct ml_catalog_entry *e = find_key(stem, &via_stem, &renamed_to);
        if (e) {
            char piece[96];
            (void)snprintf(piece, sizeof(piece), _("no built-in %s row, so the base's context"), kept + 1);
            note_add(pieces, cap, piece);
        }
        return e;
    }
    return NULL;
}

/* The weight format a name's last suffix states (an exact name: "Qwen/Qwen2.5-32B-Instruct-AWQ"). */
static void name_quant(const char *arg, struct ml_name_match *m)
{
    size_t n = strlen(arg), best = sizeof(suffixes);
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (suffixes[i].kind == SUF_QUANT && ends_nocase(arg, n, suffixes[i].suffix) &&
            (best == sizeof(suffixes) || strlen(suffixes[i].suffix) > strlen(suffixes[best].suffix)))
            best = i;
    if (best != sizeof(suffixes)) {
        m->quant = suffixes[best].quant;
        m->quant_bits = suffixes[best].bits;
    }
}

/* The ", "-separated list less the items that start with key ("" drops none) into out; false
 * when nothing is left. */
static bool list_without(const char *list, const char *key, char *out, size_t n)
{
    size_t k = strlen(key), len = 0;
    out[0] = '\0';
    for (const char *p = list; p && *p;) {
        const char *end = strstr(p, ", ");
        size_t w = end ? (size_t)(end - p) : strlen(p);
        /* an item is "key" or "key value (base: value)"; JSON values hold ", " only in objects,
         * whose pieces never start with a key name and a space */
        if (!(k && w >= k && !strncmp(p, key, k) && (p[k] == ' ' || w == k)) && len + w + 3 < n) {
            len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? ", " : "", (int)w, p);
        }
        p = end ? end + 2 : p + w;
    }
    return len > 0;
}

/* What the resolved entry's config says of the named checkpoint: a variant row's own values
 * (which differ from its base, which were read equal, which are the base's), or, for a base
 * reached through a release suffix, that the release's serving keys were taken from the base. */
static void config_pieces(const struct ml_catalog_entry *e, const char *arg, bool own, const struct ml_name_match *m,
                          char *pieces, size_t cap)
{
    char piece[768], list[512];
    bool quant_from_name = m->quant != ML_NAME_QUANT_NONE && !config_has(e, "quantization_config");
    /* A format from the name replaces the row's quantization_config: left out of its lists. */
    const char *drop = quant_from_name ? "quantization_config" : "";
    if (e->base) {
        if (list_without(e->differs, drop, list, sizeof(list))) {
            (void)snprintf(piece, sizeof(piece), _("its own config.json: %s"), list);
            note_add(pieces, cap, piece);
        }
        if (list_without(e->same, drop, list, sizeof(list))) {
            (void)snprintf(piece, sizeof(piece), _("read equal to %s's: %s"), e->base, list);
            note_add(pieces, cap, piece);
        }
        if (list_without(e->from_base, drop, list, sizeof(list))) {
            (void)snprintf(piece, sizeof(piece), _("not in its published sources, so %s's: %s"), e->base, list);
            note_add(pieces, cap, piece);
        }
    } else if (own) {
        (void)snprintf(piece, sizeof(piece),
                       _("%s's own config.json is not built in: %s may differ from %s's, whose values are used"), arg,
                       SERVING_KEYS, e->name);
        note_add(pieces, cap, piece);
    }
    if (quant_from_name)
        note_add(pieces, cap, _("quantization_config not read: the format the name states"));
}

/* The checkpoint a serving command loads for arg resolved to e (struct ml_name_match served): a
 * hub id as given; else (a bare name, or the last component of a path absent here) the entry's
 * hub id when it is the entry's own name, or the name under the entry's organisation. */
static void served_id(const char *arg, bool path_like, const struct ml_catalog_entry *e, struct ml_name_match *m)
{
    const char *org_end = strchr(e->hub_id, '/');
    char name[160];
    ml_path_last(arg, name, sizeof(name));
    if (!path_like && strchr(arg, '/'))
        (void)snprintf(m->served, sizeof(m->served), "%s", arg);
    else if (!org_end || eq_nocase(name, e->name) || eq_nocase(name, org_end + 1))
        (void)snprintf(m->served, sizeof(m->served), "%s", e->hub_id);
    else {
        (void)snprintf(m->served, sizeof(m->served), "%.*s/%s", (int)(org_end - e->hub_id), e->hub_id, name);
        m->served_guessed = true;
    }
}

enum ml_status ml_catalog_resolve(const char *arg, bool path_like, struct ml_name_match *m, struct ml_diag *diag)
{
    memset(m, 0, sizeof(*m));
    if (!arg || !*arg)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no model named"));
    const char *why = refusal(arg);
    if (why)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, "%s: %s", arg, why);
    /* The name or the hub id exactly: nothing to say, unless it is a release row (its own
     * values against its base's) or its weight format comes from the name. */
    for (size_t i = 0; !path_like && i < ml_catalog_table_len; i++)
        if (eq_nocase(arg, ml_catalog_table[i].name) || eq_nocase(arg, ml_catalog_table[i].hub_id))
            m->entry = &ml_catalog_table[i];
    if (m->entry) {
        name_quant(arg, m);
        char pieces[768] = "";
        config_pieces(m->entry, arg, false, m, pieces, sizeof(pieces));
        if (pieces[0])
            (void)snprintf(m->note, sizeof(m->note), _("%s: built-in %s; %s"), arg, m->entry->name, pieces);
        served_id(arg, path_like, m->entry, m);
        return ML_OK;
    }
    char stem[160];
    ml_path_last(arg, stem, sizeof(stem));
    char pieces[768] = "";
    bool own = false;
    m->entry = strip_and_find(stem, m, pieces, sizeof(pieces), &own);
    if (m->entry) {
        const struct ml_catalog_entry *v = ml_catalog_quant_variant(m->entry, m->quant, m->quant_bits);
        if (v) {
            char piece[160];
            (void)snprintf(piece, sizeof(piece), _("the quantized checkpoint's own config (%s)"), v->hub_id);
            note_add(pieces, sizeof(pieces), piece);
            m->entry = v;
            own = false;
        }
        config_pieces(m->entry, arg, own, m, pieces, sizeof(pieces));
        served_id(arg, path_like, m->entry, m);
        if (m->served_guessed) {
            char piece[320];
            (void)snprintf(piece, sizeof(piece), _("served as %s (the built-in hub id's organisation)"), m->served);
            note_add(pieces, sizeof(pieces), piece);
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
    (void)snprintf(key, sizeof(key), "%s%s", base->base ? base->base : base->name, suffix);
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
    w->from_name = w->method != ML_WQ_NONE;
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
