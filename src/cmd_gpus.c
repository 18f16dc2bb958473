/*
 * cmd_gpus.c - memledger gpus: the built-in GPU catalog and the capacity each card gives.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/gpu.h"
#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_gpus_usage: generated from docs/cli/gpus.md (tools/gen_cli_docs.c). */

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

int cmd_gpus(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            fputs(_(cmd_gpus_usage), stdout);
            return ML_EXIT_OK;
        } else {
            return ml_usage_error("gpus", _("unknown option '%s'"), argv[optind - 1]);
        }
    }
    if (optind + 1 < argc)
        return ml_usage_error("gpus", _("unexpected argument '%s'"), argv[optind + 1]);

    struct ml_buf out, b1, b2;
    ml_buf_init(&out, 0);
    ml_buf_init(&b1, 64);
    ml_buf_init(&b2, 64);
    enum ml_status st = ML_OK;
    if (optind < argc) {
        struct ml_gpu g;
        struct ml_diag d;
        ml_diag_init(&d);
        st = ml_gpu_resolve(argv[optind], &g, &d);
        if (st != ML_OK) {
            ml_diag_at(&d, "--gpu", 0, 0);
            ml_report(&d);
            ml_buf_release(&out);
            return ML_EXIT_USAGE;
        }
        if (json) {
            struct ml_json j;
            ml_json_init(&j, &out);
            ml_json_document_begin(&j);
            ml_json_kstr(&j, "query", argv[optind]);
            json_gpu_fields(&j, &g, g.vendor != ML_VENDOR_UNKNOWN ? ml_gpu_find(g.name) : NULL);
            ml_json_object_end(&j);
            st = ml_json_finish(&j);
        } else {
            ml_set_gib(&b1, g.nominal_bytes);
            ml_set_gib(&b2, g.capacity_bytes);
            ml_buf_addf(&out, "%s: ", argv[optind]);
            if (g.vendor != ML_VENDOR_UNKNOWN)
                ml_buf_addf(&out, "%s %s %s, ", g.name, ml_gpu_vendor_name(g.vendor), g.arch);
            ml_buf_addf(&out, _("nominal %s, usable %s (%llu bytes)%s\n"), b1.buf, b2.buf,
                        (unsigned long long)g.capacity_bytes, g.capacity_measured ? "" : _(", not measured"));
            if (g.note[0])
                ml_buf_addf(&out, "  %s\n", g.note);
        }
    } else {
        struct ml_json j;
        struct ml_table t;
        ml_table_init(&t, 6);
        t.right[3] = t.right[4] = true;
        if (json) {
            ml_json_init(&j, &out);
            ml_json_document_begin(&j);
            ml_json_key(&j, "gpus");
            ml_json_array_begin(&j);
        } else {
            const char *hdr[6] = {_("name"), _("vendor"), _("arch"), _("nominal"), _("usable"), _("aliases")};
            ml_table_row(&t, hdr);
            ml_table_rule(&t);
        }
        for (size_t i = 0; i < ml_gpu_catalog_count(); i++) {
            const struct ml_gpu_spec *s = ml_gpu_catalog_get(i);
            struct ml_gpu g;
            ml_gpu_resolve(s->name, &g, NULL);
            if (json) {
                ml_json_object_begin(&j);
                json_gpu_fields(&j, &g, s);
                ml_json_object_end(&j);
                continue;
            }
            ml_set_gib(&b1, g.nominal_bytes);
            ml_set_gib(&b2, g.capacity_bytes);
            if (!g.capacity_measured)
                ml_buf_adds(&b2, "*");
            const char *row[6] = {s->name, ml_gpu_vendor_name(s->vendor), s->arch, b1.buf, b2.buf, s->aliases};
            ml_table_row(&t, row);
        }
        if (json) {
            ml_json_array_end(&j);
            ml_json_object_end(&j);
            st = ml_json_finish(&j);
        } else {
            st = ml_table_render(&t, &out, 0);
            ml_buf_adds(&out,
                        _("* not measured: ROCm rule (nominal - 16 MiB) or nominal size; sources in data/gpus.md\n"));
        }
        ml_table_release(&t);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    ml_buf_release(&b1);
    ml_buf_release(&b2);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}
