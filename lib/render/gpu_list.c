/*
 * gpu_list.c - `memledger gpus`: the built-in GPU catalog as a table or as the JSON document of
 * docs/json.md "gpus", and one resolved --gpu argument (docs/cli/gpus.md). Config layer: it
 * reads the catalog.
 */
#include "memledger/gpu.h"

#include <stdio.h>
#include <string.h>

#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/report.h"
#include "i18n.h"

/* The fields of a GPU (docs/json.md, "gpus"); s: its catalog row, NULL for a plain size. */
static void json_gpu_fields(struct ml_json *j, const struct ml_gpu *g, const struct ml_gpu_spec *s)
{
    ml_json_kstr(j, "name", g->name);
    ml_json_kstr(j, "vendor", ml_gpu_vendor_name(g->vendor));
    ml_json_kstr(j, "arch", g->arch[0] ? g->arch : NULL);
    ml_json_ku64(j, "nominal_bytes", g->nominal_bytes);
    ml_json_ku64(j, "capacity_bytes", g->capacity_bytes);
    ml_json_kbool(j, "capacity_measured", g->capacity_measured);
    ml_json_kstr(j, "note", g->note[0] ? g->note : NULL);
    ml_json_key(j, "aliases");
    ml_json_array_begin(j);
    for (const char *a = s ? s->aliases : ""; *a;) {
        size_t n = strcspn(a, ",");
        char one[64];
        (void)snprintf(one, sizeof(one), "%.*s", (int)n, a);
        ml_json_str(j, one);
        a += n + (a[n] == ',');
    }
    ml_json_array_end(j);
    ml_json_kstr(j, "source", s ? s->source : NULL);
}

enum ml_status ml_render_gpu(struct ml_buf *out, const char *query, const struct ml_gpu *g, bool json)
{
    if (json) {
        struct ml_json j;
        ml_json_init(&j, out);
        ml_json_document_begin(&j);
        ml_json_kstr(&j, "query", query);
        json_gpu_fields(&j, g, g->vendor != ML_VENDOR_UNKNOWN ? ml_gpu_find(g->name) : NULL);
        ml_json_object_end(&j);
        return ml_json_finish(&j);
    }
    struct ml_buf b1, b2;
    ml_buf_init(&b1, 64);
    ml_buf_init(&b2, 64);
    ml_set_gib(&b1, g->nominal_bytes);
    ml_set_gib(&b2, g->capacity_bytes);
    ml_buf_addf(out, "%s: ", query);
    if (g->vendor != ML_VENDOR_UNKNOWN)
        ml_buf_addf(out, "%s %s %s, ", g->name, ml_gpu_vendor_name(g->vendor), g->arch);
    ml_buf_addf(out, _("nominal %s, usable %s (%llu bytes)%s\n"), b1.buf, b2.buf, (unsigned long long)g->capacity_bytes,
                g->capacity_measured ? "" : _(", not measured"));
    if (g->note[0])
        ml_buf_addf(out, "  %s\n", g->note);
    ml_buf_release(&b1);
    ml_buf_release(&b2);
    return ML_OK;
}

static enum ml_status gpus_json(struct ml_buf *out)
{
    struct ml_json j;
    ml_json_init(&j, out);
    ml_json_document_begin(&j);
    ml_json_key(&j, "gpus");
    ml_json_array_begin(&j);
    for (size_t i = 0; i < ml_gpu_catalog_count(); i++) {
        const struct ml_gpu_spec *s = ml_gpu_catalog_get(i);
        struct ml_gpu g;
        ml_gpu_resolve(s->name, &g, NULL);
        ml_json_object_begin(&j);
        json_gpu_fields(&j, &g, s);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_object_end(&j);
    return ml_json_finish(&j);
}

enum ml_status ml_render_gpus(struct ml_buf *out, bool json)
{
    if (json)
        return gpus_json(out);
    struct ml_buf b1, b2;
    ml_buf_init(&b1, 64);
    ml_buf_init(&b2, 64);
    struct ml_table t;
    ml_table_init(&t, 6);
    t.right[3] = t.right[4] = true;
    const char *hdr[6] = {_("name"), _("vendor"), _("arch"), _("nominal"), _("usable"), _("aliases")};
    ml_table_row(&t, hdr);
    ml_table_rule(&t);
    for (size_t i = 0; i < ml_gpu_catalog_count(); i++) {
        const struct ml_gpu_spec *s = ml_gpu_catalog_get(i);
        struct ml_gpu g;
        ml_gpu_resolve(s->name, &g, NULL);
        ml_set_gib(&b1, g.nominal_bytes);
        ml_set_gib(&b2, g.capacity_bytes);
        if (!g.capacity_measured)
            ml_buf_adds(&b2, "*");
        const char *row[6] = {s->name, ml_gpu_vendor_name(s->vendor), s->arch, b1.buf, b2.buf, s->aliases};
        ml_table_row(&t, row);
    }
    enum ml_status st = ml_table_render(&t, out, 0);
    ml_buf_adds(out, _("* not measured: ROCm rule (nominal - 16 MiB) or nominal size; sources in data/gpus.md\n"));
    ml_table_release(&t);
    ml_buf_release(&b1);
    ml_buf_release(&b2);
    return st;
}
