/*
 * cmd_models.c - memledger models: the built-in model catalog.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/inventory.h"
#include "memledger/json.h"
#include "memledger/render.h"
#include "memledger/units.h"
#include "i18n.h"

/* cmd_models_usage: generated from docs/cli/models.md (tools/gen_cli_docs.c). */

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
        for (char *save = NULL, *t = strtok_r(types, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
            ml_json_str(j, t);
        free(types);
    } else {
        j->status = ML_ERR_NOMEM;
    }
    ml_json_array_end(j);
}

/* --types: the model_types, comma-separated, or a JSON document. */
static int print_types(bool json)
{
    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st;
    if (json) {
        struct ml_json j;
        ml_json_init(&j, &out);
        ml_json_document_begin(&j);
        json_families(&j, false);
        ml_json_object_end(&j);
        st = ml_json_finish(&j);
    } else {
        size_t n = ml_arch_supported_types(NULL, 0);
        char *types = malloc(n + 1);
        st = types ? ML_OK : ML_ERR_NOMEM;
        if (types) {
            (void)ml_arch_supported_types(types, n + 1);
            st = ml_buf_addf(&out, "%s\n", types);
            free(types);
        }
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}

int cmd_models(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"types", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, types = false;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 't') {
            types = true;
        } else if (c == 'h') {
            fputs(_(cmd_models_usage), stdout);
            return ML_EXIT_OK;
        } else {
            return ml_usage_error("models", _("unknown option '%s'"), argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ml_usage_error("models", _("unexpected argument '%s'"), argv[optind]);
    if (types)
        return print_types(json);

    struct ml_buf out;
    ml_buf_init(&out, 0);
    struct ml_json j;
    struct ml_table t;
    ml_table_init(&t, 6);
    t.right[3] = t.right[4] = t.right[5] = true;
    if (json) {
        ml_json_init(&j, &out);
        ml_json_document_begin(&j);
        ml_json_key(&j, "models");
        ml_json_array_begin(&j);
    } else {
        const char *hdr[6] = {_("name"), _("hub id"), _("family"), _("params"), _("active"), _("context")};
        ml_table_row(&t, hdr);
        ml_table_rule(&t);
    }
    int rc = ML_EXIT_OK;
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        struct ml_arch a;
        struct ml_inventory inv;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_catalog_arch(e, &a, &d) != ML_OK || ml_inventory_build(&a, &inv, &d) != ML_OK) {
            ml_report(&d);
            rc = ML_EXIT_USAGE;
            continue;
        }
        if (json) {
            ml_json_object_begin(&j);
            ml_json_kstr(&j, "name", e->name);
            ml_json_kstr(&j, "hub_id", e->hub_id);
            ml_json_kstr(&j, "family", ml_family_name(a.family));
            ml_json_ku64(&j, "params", inv.total_params);
            ml_json_ku64(&j, "active_params", inv.active_params);
            ml_json_ku64(&j, "context", a.max_positions);
            ml_json_object_end(&j);
        } else {
            struct ml_buf p, act, ctx;
            ml_buf_init(&p, 64);
            ml_buf_init(&act, 64);
            ml_buf_init(&ctx, 64);
            ml_fmt_count_short(&p, inv.total_params);
            if (inv.active_params != inv.total_params)
                ml_fmt_count_short(&act, inv.active_params);
            ml_buf_addf(&ctx, "%llu", (unsigned long long)a.max_positions);
            const char *row[6] = {e->name, e->hub_id, ml_family_name(a.family), p.buf, act.buf, ctx.buf};
            ml_table_row(&t, row);
            ml_buf_release(&p);
            ml_buf_release(&act);
            ml_buf_release(&ctx);
        }
    }
    enum ml_status st;
    if (json) {
        ml_json_array_end(&j);
        json_families(&j, true);
        ml_json_object_end(&j);
        st = ml_json_finish(&j);
    } else {
        st = ml_table_render(&t, &out, 0);
        if (st == ML_OK)
            st = ml_buf_addf(&out, _("%zu models; 'memledger params NAME' shows one in full\n"), ml_catalog_count());
    }
    ml_table_release(&t);
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_release(&out);
    return st == ML_OK ? rc : ML_EXIT_USAGE;
}
