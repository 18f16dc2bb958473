/*
 * catalog_list.c - `memledger models`: the built-in model catalog as a table or as the JSON
 * document of docs/json.md "models", and the model_type values a config.json may declare
 * (docs/cli/models.md). Config layer: each entry's config is read from the catalog.
 */
#include "memledger/catalog.h"

#include <stdlib.h>
#include <string.h>

#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/report.h"
#include "memledger/units.h"
#include "i18n.h"

/* "families": the family names; "model_types": the model_type values a config.json may declare
 * (ml_arch_supported_types, as error messages list them). */
static void json_families(struct ml_json *j, bool families)
{
    if (families) {
        ml_json_key(j, "families");
        ml_json_array_begin(j);
        for (int f = 0; f < ML_FAMILY_COUNT; f++)
            ml_json_str(j, ml_family_name((enum ml_family)f));
        ml_json_array_end(j);
    }
    ml_json_key(j, "model_types");
    ml_json_array_begin(j);
    size_t n = ml_arch_supported_types(NULL, 0);
    char *types = malloc(n + 1);
    if (types) {
        (void)ml_arch_supported_types(types, n + 1);
        for (char *t = types; *t;) { /* items split at ", " */
            size_t k = strcspn(t, ", ");
            char *next = t + k + strspn(t + k, ", ");
            t[k] = '\0';
            if (k)
                ml_json_str(j, t);
            t = next;
        }
        free(types);
    } else {
        j->status = ML_ERR_NOMEM;
    }
    ml_json_array_end(j);
}

enum ml_status ml_render_model_types(struct ml_buf *out, bool json)
{
    if (json) {
        struct ml_json j;
        ml_json_init(&j, out);
        ml_json_document_begin(&j);
        json_families(&j, false);
        ml_json_object_end(&j);
        return ml_json_finish(&j);
    }
    size_t n = ml_arch_supported_types(NULL, 0);
    char *types = malloc(n + 1);
    if (!types)
        return ML_ERR_NOMEM;
    (void)ml_arch_supported_types(types, n + 1);
    enum ml_status st = ml_buf_addf(out, "%s\n", types);
    free(types);
    return st;
}

/* One table row: name, hub id, family, parameters, active ones (only when they differ), context. */
static void table_row(struct ml_table *t, const struct ml_catalog_entry *e, const struct ml_arch *a,
                      const struct ml_inventory *inv)
{
    struct ml_buf p, act, ctx;
    ml_buf_init(&p, 64);
    ml_buf_init(&act, 64);
    ml_buf_init(&ctx, 64);
    ml_fmt_count_short(&p, inv->total_params);
    if (inv->active_params != inv->total_params)
        ml_fmt_count_short(&act, inv->active_params);
    ml_buf_addf(&ctx, "%llu", (unsigned long long)a->max_positions);
    const char *row[6] = {e->name, e->hub_id, ml_family_name(a->family), p.buf, act.buf, ctx.buf};
    ml_table_row(t, row);
    ml_buf_release(&p);
    ml_buf_release(&act);
    ml_buf_release(&ctx);
}

static void json_model(struct ml_json *j, const struct ml_catalog_entry *e, const struct ml_arch *a,
                       const struct ml_inventory *inv)
{
    ml_json_object_begin(j);
    ml_json_kstr(j, "name", e->name);
    ml_json_kstr(j, "hub_id", e->hub_id);
    ml_json_kstr(j, "family", ml_family_name(a->family));
    ml_json_ku64(j, "params", inv->total_params);
    ml_json_ku64(j, "active_params", inv->active_params);
    ml_json_ku64(j, "context", a->max_positions);
    ml_json_object_end(j);
}

enum ml_status ml_render_models(struct ml_buf *out, bool json, void (*bad)(const struct ml_diag *d), size_t *n_bad)
{
    struct ml_json j;
    struct ml_table t;
    ml_table_init(&t, 6);
    t.right[3] = t.right[4] = t.right[5] = true;
    if (json) {
        ml_json_init(&j, out);
        ml_json_document_begin(&j);
        ml_json_key(&j, "models");
        ml_json_array_begin(&j);
    } else {
        const char *hdr[6] = {_("name"), _("hub id"), _("family"), _("params"), _("active"), _("context")};
        ml_table_row(&t, hdr);
        ml_table_rule(&t);
    }
    *n_bad = 0;
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        struct ml_arch a;
        struct ml_inventory inv;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_catalog_arch(e, &a, &d) != ML_OK || ml_inventory_build(&a, &inv, &d) != ML_OK) {
            if (bad)
                bad(&d);
            ++*n_bad;
        } else if (json) {
            json_model(&j, e, &a, &inv);
        } else {
            table_row(&t, e, &a, &inv);
        }
    }
    enum ml_status st;
    if (json) {
        ml_json_array_end(&j);
        json_families(&j, true);
        ml_json_object_end(&j);
        st = ml_json_finish(&j);
    } else {
        st = ml_table_render(&t, out, 0);
        if (st == ML_OK)
            st = ml_buf_addf(out, _("%zu models; 'memledger params NAME' shows one in full\n"), ml_catalog_count());
    }
    ml_table_release(&t);
    return st;
}
