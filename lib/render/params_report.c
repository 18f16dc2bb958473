/*
 * params_report.c - memledger params: the exact parameter inventory of a model by module, the
 * totals, the bytes per dtype and the LoRA count, as text and JSON (docs/cli/params.md).
 */
#include "memledger/report.h"

#include <stdio.h>
#include <string.h>

#include "memledger/checked.h"
#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

static void shape_str(const struct ml_tensor *t, char *buf, size_t n)
{
    if (t->cols)
        (void)snprintf(buf, n, "%llu x %llu", (unsigned long long)t->rows, (unsigned long long)t->cols);
    else
        (void)snprintf(buf, n, "%llu", (unsigned long long)t->rows);
}

static void count_str(uint64_t v, char *buf, size_t n)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    (void)ml_fmt_count(&b, v);
    (void)snprintf(buf, n, "%s", b.buf);
    ml_buf_release(&b);
}

/* bytes = params x num / den, rounded up. */
static uint64_t bytes_of(uint64_t params, uint64_t num, uint64_t den)
{
    uint64_t r;
    if (!ml_mul_u64(params, num, &r))
        return UINT64_MAX;
    return ml_ceil_div_u64(r, den);
}

static const struct {
    const char *name;
    uint64_t num, den;
} dtypes[] = {{"fp32", 4, 1}, {"bf16", 2, 1}, {"fp16", 2, 1}, {"int8", 1, 1}, {"int4", 1, 2}};

/* The model line and the architecture line. */
static void describe_model(struct ml_buf *out, const struct ml_model_ref *m)
{
    const struct ml_arch *a = &m->arch;
    ml_buf_addf(out, "%-8s %s", _("model"), m->name);
    if (m->hub_id[0])
        ml_buf_addf(out, " (%s)", m->hub_id);
    ml_buf_addf(out, ", %s\n", m->source);
    ml_buf_addf(out, "%-8s %s: %u layers", _("arch"), a->model_type, a->n_layers);
    if (a->n_encoder_layers)
        ml_buf_addf(out, _(" (+%u encoder)"), a->n_encoder_layers);
    const char *att = a->kv_lora_rank               ? "MLA"
                      : a->n_kv_heads == a->n_heads ? "MHA"
                      : a->n_kv_heads == 1          ? "MQA"
                                                    : "GQA";
    ml_buf_addf(out, _(", hidden %llu, %u heads / %u KV (%s), head_dim %llu, vocab %llu, context %llu"),
                (unsigned long long)a->hidden, a->n_heads, a->n_kv_heads, att, (unsigned long long)a->head_dim,
                (unsigned long long)a->vocab, (unsigned long long)a->max_positions);
    if (a->n_experts)
        ml_buf_addf(out, _(", %u experts (top-%u) in %u MoE layers"), a->n_experts, a->top_k, ml_arch_n_moe_layers(a));
    ml_buf_adds(out, "\n\n");
}

/* Every tensor by module group, with the group totals and the total. */
static void module_table(struct ml_buf *out, const struct ml_inventory *inv)
{
    struct ml_table t;
    ml_table_init(&t, 5);
    t.right[3] = t.right[4] = true;
    const char *hdr[5] = {_("module"), _("param"), _("shape"), _("copies"), _("parameters")};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    for (int g = 0; g < ML_GROUP_COUNT; g++) {
        bool any = false;
        for (uint32_t i = 0; i < inv->n; i++)
            any |=
                ml_module_kind_group(inv->t[i].kind) == (enum ml_module_group)g || (g == ML_GROUP_MTP && inv->t[i].mtp);
        if (!any)
            continue;
        char total[40];
        count_str(g == ML_GROUP_MTP ? inv->mtp_params : inv->by_group[g], total, sizeof(total));
        const char *grow[5] = {ml_module_group_name((enum ml_module_group)g), "", "", "", total};
        char label[64];
        if (g == ML_GROUP_MTP) {
            (void)snprintf(label, sizeof(label), "%s", _("mtp (not in the total)"));
            grow[0] = label;
        }
        ml_table_row(&t, grow);
        for (uint32_t i = 0; i < inv->n; i++) {
            const struct ml_tensor *x = &inv->t[i];
            bool in_g =
                g == ML_GROUP_MTP ? x->mtp : (!x->mtp && ml_module_kind_group(x->kind) == (enum ml_module_group)g);
            if (!in_g)
                continue;
            char path[96], shape[64], copies[32], params[40];
            (void)snprintf(path, sizeof(path), "  %s", x->path);
            shape_str(x, shape, sizeof(shape));
            count_str(x->copies, copies, sizeof(copies));
            if (x->tied)
                (void)snprintf(params, sizeof(params), "%s", _("tied"));
            else
                count_str(x->params, params, sizeof(params));
            const char *row[5] = {path, x->param, shape, copies, params};
            ml_table_row(&t, row);
        }
    }
    ml_table_rule(&t);
    char tot[40];
    count_str(inv->total_params, tot, sizeof(tot));
    const char *trow[5] = {_("total"), "", "", "", tot};
    ml_table_row(&t, trow);
    (void)ml_table_render(&t, out, 0);
    ml_table_release(&t);
}

void ml_render_params_text(struct ml_buf *out, const struct ml_params_report *p)
{
    const struct ml_inventory *inv = p->inv;
    const struct ml_lora_count *lc = p->lora;
    describe_model(out, p->m);
    module_table(out, inv);
    ml_buf_adds(out, "\n");
    struct ml_table s;
    ml_table_init(&s, 3);
    s.right[1] = true;
    char c1[40], c2[40], c3[40], sh[40];
    struct ml_buf b;
    ml_buf_init(&b, 64);
    count_str(inv->total_params, c1, sizeof(c1));
    ml_fmt_count_short(&b, inv->total_params);
    (void)snprintf(sh, sizeof(sh), "(%s)", b.buf);
    const char *r1[3] = {_("total parameters"), c1, sh};
    ml_table_row(&s, r1);
    count_str(inv->embedding_params, c2, sizeof(c2));
    const char *r2[3] = {_("  embedding"), c2, ""};
    ml_table_row(&s, r2);
    count_str(inv->total_params - inv->embedding_params, c3, sizeof(c3));
    const char *r3[3] = {_("  non-embedding"), c3, ""};
    ml_table_row(&s, r3);
    char c4[40], c5[40];
    if (inv->active_params != inv->total_params) {
        count_str(inv->active_params, c4, sizeof(c4));
        const char *r4[3] = {_("  active per token"), c4, _("(routed experts: top-k of each MoE layer)")};
        ml_table_row(&s, r4);
    }
    if (inv->mtp_params) {
        count_str(inv->mtp_params, c5, sizeof(c5));
        const char *r5[3] = {_("  MTP layers"), c5, _("(not loaded by transformers; not in the total)")};
        ml_table_row(&s, r5);
    }
    char c7[40], sh7[96];
    if (inv->mtp_params) {
        /* The published totals count the MTP layers (DeepSeek-V3.2's 685B: docs/models.md). */
        count_str(inv->total_params + inv->mtp_stored_params, c7, sizeof(c7));
        ml_buf_reset(&b);
        ml_fmt_count_short(&b, inv->total_params + inv->mtp_stored_params);
        (void)snprintf(sh7, sizeof(sh7), _("(%s: the checkpoint's count, MTP layers as stored)"), b.buf);
        const char *r7[3] = {_("with MTP layers"), c7, sh7};
        ml_table_row(&s, r7);
    }
    char lc_s[40], lc_pct[64];
    if (lc) {
        count_str(lc->params, lc_s, sizeof(lc_s));
        ml_buf_reset(&b);
        ml_fmt_percent(&b, lc->params, inv->total_params);
        (void)snprintf(lc_pct, sizeof(lc_pct), _("(%s of the model)"), b.buf);
        const char *r6[3] = {_("trainable (LoRA)"), lc_s, lc_pct};
        ml_table_row(&s, r6);
    }
    (void)ml_table_render(&s, out, 0);
    ml_table_release(&s);

    ml_buf_adds(out, _("weights  "));
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
        ml_buf_addf(out, "%s%s ", i ? "  " : "", dtypes[i].name);
        ml_fmt_gib(out, bytes_of(inv->total_params, dtypes[i].num, dtypes[i].den));
    }
    ml_buf_adds(out, _("\n         (int4: raw 4-bit storage; quantization scales and the layers kept in 16 bits are "
                       "not included)\n"));
    if (lc) {
        ml_buf_addf(out, _("LoRA     rank %llu on %s -> "), (unsigned long long)p->lora_rank, p->lora_target);
        for (uint32_t i = 0; i < lc->n_resolved; i++)
            ml_buf_addf(out, "%s%s", i ? "," : "", lc->resolved[i]);
        ml_buf_addf(out, _(" (%llu modules; A: r x in, B: out x r each)\n"), (unsigned long long)lc->modules);
    }
    ml_buf_release(&b);
}

enum ml_status ml_render_params_json(struct ml_buf *out, const struct ml_params_report *p)
{
    const struct ml_model_ref *m = p->m;
    const struct ml_inventory *inv = p->inv;
    const struct ml_lora_count *lc = p->lora;
    const struct ml_arch *a = &m->arch;
    struct ml_json js;
    struct ml_json *j = &js;
    ml_json_init(j, out);
    ml_json_document_begin(j);
    ml_json_key(j, "model");
    ml_json_object_begin(j);
    ml_json_kstr(j, "name", m->name);
    ml_json_kstr(j, "hub_id", m->hub_id[0] ? m->hub_id : NULL);
    ml_json_kstr(j, "source", m->source);
    ml_json_kstr(j, "model_type", a->model_type);
    ml_json_kstr(j, "family", ml_family_name(a->family));
    ml_json_ku64(j, "params", inv->total_params);
    ml_json_object_end(j);

    ml_json_key(j, "arch");
    ml_json_object_begin(j);
    ml_json_ku64(j, "layers", a->n_layers);
    ml_json_ku64(j, "encoder_layers", a->n_encoder_layers);
    ml_json_ku64(j, "hidden", a->hidden);
    ml_json_ku64(j, "heads", a->n_heads);
    ml_json_ku64(j, "kv_heads", a->n_kv_heads);
    ml_json_ku64(j, "head_dim", a->head_dim);
    ml_json_ku64(j, "intermediate", a->intermediate);
    ml_json_ku64(j, "vocab", a->vocab);
    ml_json_ku64(j, "context", a->max_positions);
    ml_json_kbool(j, "tie_word_embeddings", a->tie_embeddings);
    ml_json_ku64(j, "experts", a->n_experts);
    ml_json_ku64(j, "experts_per_token", a->top_k);
    ml_json_ku64(j, "moe_layers", ml_arch_n_moe_layers(a));
    ml_json_ku64(j, "kv_lora_rank", a->kv_lora_rank);
    ml_json_ku64(j, "mtp_layers", a->n_mtp_layers);
    ml_json_object_end(j);

    ml_json_ku64(j, "total_params", inv->total_params);
    ml_json_ku64(j, "active_params", inv->active_params);
    ml_json_ku64(j, "embedding_params", inv->embedding_params);
    ml_json_ku64(j, "non_embedding_params", inv->total_params - inv->embedding_params);
    ml_json_ku64(j, "mtp_params", inv->mtp_params);
    ml_json_ku64(j, "mtp_stored_params", inv->mtp_stored_params);
    ml_json_ku64(j, "trainable_params", lc ? lc->params : inv->total_params);

    ml_json_key(j, "groups");
    ml_json_object_begin(j);
    for (int g = 0; g < ML_GROUP_COUNT; g++)
        ml_json_ku64(j, ml_module_group_name((enum ml_module_group)g), inv->by_group[g]);
    ml_json_object_end(j);

    ml_json_key(j, "modules");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < inv->n; i++) {
        const struct ml_tensor *x = &inv->t[i];
        ml_json_object_begin(j);
        ml_json_kstr(j, "path", x->path);
        ml_json_kstr(j, "param", x->param);
        ml_json_kstr(j, "kind", ml_module_kind_name(x->kind));
        ml_json_kstr(j, "group", ml_module_group_name(x->mtp ? ML_GROUP_MTP : ml_module_kind_group(x->kind)));
        ml_json_key(j, "shape");
        ml_json_array_begin(j);
        ml_json_u64(j, x->rows);
        if (x->cols)
            ml_json_u64(j, x->cols);
        ml_json_array_end(j);
        ml_json_ku64(j, "copies", x->copies);
        ml_json_ku64(j, "params", x->params);
        ml_json_kbool(j, "linear", x->linear);
        ml_json_kbool(j, "tied", x->tied);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);

    ml_json_key(j, "lora");
    if (lc) {
        ml_json_object_begin(j);
        ml_json_ku64(j, "rank", p->lora_rank);
        ml_json_kstr(j, "target", p->lora_target);
        ml_json_key(j, "resolved");
        ml_json_array_begin(j);
        for (uint32_t i = 0; i < lc->n_resolved; i++)
            ml_json_str(j, lc->resolved[i]);
        ml_json_array_end(j);
        ml_json_key(j, "unmatched");
        ml_json_array_begin(j);
        for (uint32_t i = 0; i < lc->n_unmatched; i++)
            ml_json_str(j, lc->unmatched[i]);
        ml_json_array_end(j);
        ml_json_ku64(j, "modules", lc->modules);
        ml_json_ku64(j, "trainable_params", lc->params);
        ml_json_object_end(j);
    } else {
        ml_json_null(j);
    }

    ml_json_key(j, "bytes");
    ml_json_object_begin(j);
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        ml_json_ku64(j, dtypes[i].name, bytes_of(inv->total_params, dtypes[i].num, dtypes[i].den));
    ml_json_object_end(j);
    ml_json_object_end(j);
    return ml_json_finish(j);
}
