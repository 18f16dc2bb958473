/*
 * model.c - a model argument resolved (run.h): a config.json or a directory the host has, else
 * the built-in catalog; and what a serving command needs before its ledger.
 */
#include "run_int.h"

#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/json_dup.h"
#include "i18n.h"

/* A name that is not a file the host has: the catalog's resolver (lib/model/catalog.c: exact
 * names, hub ids, known suffixes, a local path's last component, "did you mean"), its note said. */
static enum ml_status resolve_name(const struct ml_io *io, const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    /* "org/name" is a hub id; anything else with a slash is a path, and a .json name a file. */
    const char *slash = strchr(arg, '/');
    bool hub_like = slash && slash != arg && arg[0] != '.' && !strchr(slash + 1, '/');
    if (strstr(arg, ".json")) {
        /* A config.json that is not there: the host's own words for it, naming the file. */
        struct ml_buf b;
        ml_buf_init(&b, 1);
        enum ml_status st = io->read_file(arg, 1, &b, d);
        ml_buf_release(&b);
        return st != ML_OK ? st : ml_diag_set(d, ML_ERR_IO, "%s", _("is not a file"));
    }
    struct ml_name_match nm;
    enum ml_status st = ml_catalog_resolve(arg, slash && !hub_like, &nm, d);
    if (st != ML_OK)
        return st;
    const struct ml_catalog_entry *e = nm.entry;
    (void)snprintf(out->name, sizeof(out->name), "%s", e->name);
    /* The checkpoint the user named is the one a serving command loads (fit --serve writes it). */
    (void)snprintf(out->hub_id, sizeof(out->hub_id), "%s", hub_like ? arg : nm.served);
    (void)snprintf(out->source, sizeof(out->source), "%s", _("built-in catalog"));
    out->catalog_params = e->params;
    if (nm.note[0])
        ml_io_sayf(io, _("memledger: note: %s\n"), nm.note);
    st = ml_catalog_arch(e, &out->arch, d);
    if (st == ML_OK)
        ml_arch_apply_name_quant(&out->arch, nm.quant, nm.quant_bits);
    return st;
}

/* The display name of a config file: "models/foo/config.json" is best named "foo". */
static void file_name(const char *arg, char *out, size_t n)
{
    char b[256];
    ml_path_last(arg, b, sizeof(b));
    if (!strcmp(b, "config.json")) {
        char dir[1024];
        (void)snprintf(dir, sizeof(dir), "%s", arg);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            ml_path_last(dir, b, sizeof(b));
        }
    } else {
        char *dot = strrchr(b, '.');
        if (dot && !strcmp(dot, ".json"))
            *dot = '\0';
    }
    (void)snprintf(out, n, "%s", b);
}

enum ml_status ml_model_resolve(const struct ml_io *io, const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    memset(out, 0, sizeof(*out));
    enum ml_path_kind kind = io->path_kind(arg);
    if (kind == ML_PATH_NONE)
        return resolve_name(io, arg, out, d);
    char path[1024];
    if (kind == ML_PATH_DIR) {
        (void)snprintf(path, sizeof(path), "%s/config.json", arg);
        if (io->path_kind(path) == ML_PATH_NONE) {
            ml_diag_at(d, arg, 0, 0);
            return ml_diag_set(d, ML_ERR_IO, _("directory has no config.json"));
        }
        ml_path_last(arg, out->name, sizeof(out->name));
    } else {
        (void)snprintf(path, sizeof(path), "%s", arg);
        file_name(arg, out->name, sizeof(out->name));
    }
    (void)snprintf(out->source, sizeof(out->source), "%s", path);
    struct ml_buf b;
    ml_buf_init(&b, ML_CONFIG_READ_MAX);
    enum ml_status st = io->read_file(path, ML_CONFIG_READ_MAX, &b, d);
    if (st == ML_OK)
        st = ml_arch_from_json(b.buf, b.len, path, &out->arch, d);
    if (st == ML_OK) {
        /* Read with the last of duplicated keys, as transformers does; say so with both lines. */
        struct ml_json_dup dup[8];
        size_t n = ml_json_duplicates(b.buf, b.len, dup, 8);
        for (size_t i = 0; i < n && i < 8; i++)
            ml_io_warnf(io,
                        _("%s:%u: duplicate key %s (also on line %u): the last is used, as transformers' json.loads "
                          "does"),
                        path, dup[i].last_line, dup[i].key, dup[i].first_line);
        if (n > 8)
            ml_io_warnf(io, _("%s: %zu more duplicate keys (the last of each is used)"), path, n - 8);
        if (out->arch.read_note[0])
            ml_io_warnf(io, "%s: %s", path, out->arch.read_note);
    }
    ml_buf_release(&b);
    return st;
}

bool ml_run_yaml_model(const struct ml_io *io, const char *cmd, const char *config, const char *yaml_model,
                       const char *run_dir, struct ml_model_ref *m)
{
    if (!yaml_model[0])
        return ml_io_errorf(
            io, cmd, _("%s has no model_name_or_path: give MODEL (a built-in name, hub id, config.json or directory)"),
            config);
    /* A local path in it is relative to the run directory, as transformers' from_pretrained
     * reads it. */
    char local[1024];
    ml_run_join(run_dir, yaml_model, local, sizeof(local));
    const char *model = run_dir && io->path_kind(local) != ML_PATH_NONE ? local : yaml_model;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_model_resolve(io, model, m, &d) == ML_OK)
        return true;
    /* Say where the name came from, and how to override it. */
    const char *msg = d.msg[0] ? d.msg : ml_status_str(d.code);
    if (d.origin[0] && strcmp(d.origin, model))
        return ml_io_errorf(io, NULL, _("%s: model_name_or_path %s: %s: %s (a MODEL argument overrides it)"), config,
                            yaml_model, d.origin, msg);
    return ml_io_errorf(io, NULL, _("%s: model_name_or_path %s: %s (a MODEL argument overrides it)"), config,
                        yaml_model, msg);
}

bool ml_run_serving(const struct ml_io *io, const char *model, const char *gpu, struct ml_model_ref *m,
                    struct ml_cluster *cl, struct ml_inventory *inv)
{
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_model_resolve(io, model, m, &d) != ML_OK) {
        io->report(&d);
        return false;
    }
    return ml_run_serving_card(io, gpu, m, cl, inv);
}

bool ml_run_serving_card(const struct ml_io *io, const char *gpu, const struct ml_model_ref *m, struct ml_cluster *cl,
                         struct ml_inventory *inv)
{
    struct ml_diag d;
    memset(cl, 0, sizeof(*cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(gpu, &cl->gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        io->report(&d);
        return false;
    }
    ml_diag_init(&d);
    if (ml_inventory_build(&m->arch, inv, &d) != ML_OK) {
        ml_diag_at(&d, m->source, 0, 0);
        io->report(&d);
        return false;
    }
    return true;
}
