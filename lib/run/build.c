/*
 * build.c - a training run built from what the user gave (run.h): the files (read.c), an
 * accelerate config and a LLaMA-Factory command line, the flags over them with a warning for each
 * one that overrides a file, the model and the card, the settings check and the ledger.
 */
#include "run_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/units.h"
#include "i18n.h"

/* --zero, --fsdp, --offload. */
static int apply_sharding(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train *t, bool ds_read)
{
    int v;
    if (o->zero) {
        static const char *const z[] = {"0", "1", "2", "3"};
        if (!ml_run_opt_word(io, o->cmd, "--zero", o->zero, z, 4, &v))
            return 0;
        /* LLaMA-Factory's preset only where no DeepSpeed file was read (ds_read: --deepspeed, the
         * YAML's deepspeed:, accelerate's deepspeed_config_file): a user's file keeps its values,
         * the stage alone changes */
        if (!ds_read && !(t->deepspeed && t->zero.stage == (uint32_t)v))
            ml_zero_preset(t, (uint32_t)v, false);
        t->zero.stage = (uint32_t)v;
        t->deepspeed = true;
    }
    if (o->fsdp) {
        static const char *const f[] = {"none", "full_shard", "shard_grad_op", "hybrid_shard"};
        if (!ml_run_opt_word(io, o->cmd, "--fsdp", o->fsdp, f, 4, &v))
            return 0;
        t->fsdp = (enum ml_fsdp_mode)v;
    }
    if (o->offload) {
        static const char *const of[] = {"none", "optimizer", "param", "all"};
        if (!ml_run_opt_word(io, o->cmd, "--offload", o->offload, of, 4, &v))
            return 0;
        /* torchtune on several GPUs is FSDP2 full_shard whatever the flags say (its distributed
         * recipes always shard; lib/setup torchtune_check, docs/ledger.md TS1): its offload is
         * FSDP2's CPUOffloadPolicy, read here; the default itself is set with the others
         * (torchtune_check), so the defaults line names it. */
        uint64_t world = o->num_gpus * (o->nodes ? o->nodes : 1);
        bool tt_sharded = o->fw == ML_FW_TORCHTUNE && !t->deepspeed && t->fsdp == ML_FSDP_NONE && !o->fsdp && world > 1;
        if (v && !t->deepspeed && t->fsdp == ML_FSDP_NONE && !tt_sharded) {
            ml_io_errorf(io, o->cmd, "%s", _("--offload needs DeepSpeed (--zero, --deepspeed) or --fsdp"));
            return 0;
        }
        t->zero.offload_optimizer = v == 1 || v == 3;
        t->zero.offload_param = v == 2 || v == 3;
        if (v)
            t->zero.pin_memory = true;
        if (t->fsdp != ML_FSDP_NONE || tt_sharded)
            t->fsdp_offload = v != 0;
    }
    return 1;
}

/* The allocator's environment variables, --expandable-segments and the version flags. */
static int apply_env_and_versions(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train *t)
{
    /* The allocator reads PYTORCH_CUDA_ALLOC_CONF (ROCm: PYTORCH_HIP_ALLOC_CONF; torch 2.9+ also
     * PYTORCH_ALLOC_CONF) from the environment; so does memledger (memledger fit writes them). */
    static const char *const alloc_vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < sizeof(alloc_vars) / sizeof(alloc_vars[0]); i++) {
        const char *env = io->env(alloc_vars[i]);
        if (env && (strstr(env, "expandable_segments:True") || strstr(env, "expandable_segments:true")))
            t->expandable_segments = true;
    }
    if (o->expseg)
        t->expandable_segments = true;
    struct {
        const char *val, *opt;
        uint32_t *dst;
    } vers[] = {{o->tfv, "--transformers-version", &t->versions.transformers},
                {o->dsv, "--deepspeed-version", &t->versions.deepspeed},
                {o->torchv, "--torch-version", &t->versions.torch},
                {o->trlv, "--trl-version", &t->versions.trl}};
    for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
        if (!vers[i].val)
            continue;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_version_parse(vers[i].val, vers[i].dst, &d) != ML_OK) {
            ml_io_errorf(io, o->cmd, "%s: %s", vers[i].opt, d.msg);
            return 0;
        }
    }
    return 1;
}

static int apply_flags(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train *t, bool ds_read)
{
    int v;
    uint64_t n;
    const char *w[ML_OPTIM_COUNT]; /* a flag's words: the values' names (settings.h spellings) */
    if (o->method) {
        int nw = ml_spelling_words(ml_method_spellings, ML_SP_FLAG, w, ML_OPTIM_COUNT);
        if (!ml_run_opt_word(io, o->cmd, "--method", o->method, w, nw, &v))
            return 0;
        t->method = (enum ml_method)v;
        if (t->method == ML_METHOD_QLORA && !t->quant_bits)
            t->quant_bits = 4;
        if (t->method != ML_METHOD_QLORA)
            t->quant_bits = 0;
    }
    if (o->qbits) {
        if (strcmp(o->qbits, "4") && strcmp(o->qbits, "8")) {
            ml_io_errorf(io, o->cmd, _("--quant-bits: '%s' is not one of 4, 8"), o->qbits);
            return 0;
        }
        /* Quantizing the base is QLoRA's: LLaMA-Factory refuses quantization_bit for full and
         * freeze (train_yaml.c), and so does the flag, instead of silently turning a full run into
         * QLoRA. */
        if (t->method == ML_METHOD_FULL || t->method == ML_METHOD_FREEZE) {
            ml_io_errorf(io, o->cmd,
                         _("--quant-bits %s quantizes the frozen base for LoRA (QLoRA): it needs --method lora or "
                           "qlora, got %s"),
                         o->qbits, t->method == ML_METHOD_FULL ? "full" : "freeze");
            return 0;
        }
        n = o->qbits[0] == '4' ? 4 : 8;
        t->quant_bits = (uint32_t)n;
        t->method = ML_METHOD_QLORA;
    }
    if (o->rank) {
        if (!ml_run_opt_u64(io, o->cmd, "--lora-rank", o->rank, 1, 65536, &t->lora_rank))
            return 0;
    }
    if (o->target) {
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_lora_targets_parse(o->target, &t->lora_targets, &d) != ML_OK) {
            ml_io_errorf(io, o->cmd, "--lora-target: %s", d.msg);
            return 0;
        }
    }
    if (o->batch && !ml_run_opt_u64(io, o->cmd, "--batch", o->batch, 1, 1u << 20, &t->micro_batch))
        return 0;
    if (o->seq && !ml_run_opt_u64(io, o->cmd, "--seq", o->seq, 1, 1u << 24, &t->seq_len))
        return 0;
    if (o->ga && !ml_run_opt_u64(io, o->cmd, "--grad-accum", o->ga, 1, 1u << 20, &t->grad_accum))
        return 0;
    if (o->eval)
        t->do_eval = true;
    if (o->dtype) {
        int nw = ml_spelling_words(ml_precision_spellings, ML_SP_FLAG, w, ML_OPTIM_COUNT);
        if (!ml_run_opt_word(io, o->cmd, "--dtype", o->dtype, w, nw, &v))
            return 0;
        t->precision = (enum ml_precision)v;
    }
    if (o->optim) {
        int nw = ml_spelling_words(ml_optim_spellings, ML_SP_FLAG, w, ML_OPTIM_COUNT);
        if (!ml_run_opt_word(io, o->cmd, "--optim", o->optim, w, nw, &v))
            return 0;
        t->optim = (enum ml_optim)v;
        t->optim_set = true;
    }
    if (o->gc) {
        int nw = ml_spelling_words(ml_grad_ckpt_spellings, ML_SP_FLAG, w, ML_OPTIM_COUNT);
        if (!ml_run_opt_word(io, o->cmd, "--grad-ckpt", o->gc, w, nw, &v))
            return 0;
        t->grad_ckpt = (enum ml_grad_ckpt)v;
    }
    if (o->attn) {
        int nw = ml_spelling_words(ml_attn_spellings, ML_SP_FLAG, w, ML_OPTIM_COUNT);
        if (!ml_run_opt_word(io, o->cmd, "--attn", o->attn, w, nw, &v))
            return 0;
        t->attn = (enum ml_attn)v;
    }
    return apply_sharding(io, o, t, ds_read) && apply_env_and_versions(io, o, t);
}

/* The flag given for each tracked setting (NULL: none): the rows of ML_SETTINGS (settings.h). */
static void flags_given(const struct ml_train_opts *o, const char *given[ML_TK_COUNT])
{
#define GIVEN(id, track, flag, field, ...) ML_SETTING_IF_##track(given[ML_TK_##id] = o->field;)
    ML_SETTINGS(GIVEN)
#undef GIVEN
}

/* The tracked settings no input set (no flag, file or --set) and still at the profile's default:
 * the report says whose default each is (t->defaulted). */
static uint32_t defaulted(const struct ml_train_opts *o, const struct ml_train_files *f, const struct ml_train_read *rd,
                          const struct ml_train *t)
{
    const char *given[ML_TK_COUNT];
    flags_given(o, given);
    uint32_t mask = 0;
    for (int k = 0; k < ML_TK_COUNT; k++)
        if (!given[k] && !ml_run_set_by(f, rd, k) && !ml_tracked_differs((enum ml_tracked)k, t, &rd->defaults))
            mask |= 1u << k;
    return mask;
}

/* A flag that changed what a file or --set had set: one warning saying which won. */
static void warn_overrides(const struct ml_train_opts *o, const struct ml_train_files *f,
                           const struct ml_train_read *rd, struct ml_train *t)
{
    const char *given[ML_TK_COUNT];
    flags_given(o, given);
    for (int k = 0; k < ML_TK_COUNT; k++) {
        const char *by = given[k] ? ml_run_set_by(f, rd, k) : NULL;
        if (!by || !ml_tracked_differs((enum ml_tracked)k, t, &rd->after_sets))
            continue;
        char was[160];
        ml_tracked_value(&rd->after_sets, (enum ml_tracked)k, was, sizeof(was));
        bool from_set = rd->set_of[k] >= 0;
        ml_train_warn(t, _("%s %s wins over %s (%s%s): flags are applied after --set and the config files"),
                      ml_tracked_flag((enum ml_tracked)k), given[k], was, from_set ? "--set " : "",
                      from_set ? by : ml_path_base(by));
    }
}

/* The model: the MODEL argument, else the YAML's model_name_or_path (a local path in it is
 * relative to the run directory, as transformers' from_pretrained reads it). Reports the error. */
static bool resolve_model(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train_setup *s)
{
    const char *yaml_model = s->rd.model;
    const struct ml_catalog_entry *ea = o->model ? ml_catalog_find(o->model) : NULL;
    if (o->model && yaml_model[0] && strcmp(o->model, yaml_model) && !(ea && ea == ml_catalog_find(yaml_model)))
        ml_train_warn(&s->t, _("MODEL %s wins over model_name_or_path %s (%s): the argument overrides the YAML"),
                      o->model, yaml_model, ml_path_base(o->config));
    if (!o->model && !yaml_model[0] && !o->config)
        return ml_io_errorf(
            io, o->cmd, "%s",
            _("missing MODEL (give a name, config.json or directory, or --config with model_name_or_path)"));
    if (!o->model)
        return ml_run_yaml_model(io, o->cmd, o->config, yaml_model, o->run_dir, &s->m);
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_model_resolve(io, o->model, &s->m, &d) == ML_OK)
        return true;
    io->report(&d);
    return false;
}

/* An error of the settings check, named after the input that brought it: the first of the YAML,
 * the DeepSpeed file and --set after which the check fails the same way (else the flags). */
static void report_check(const struct ml_io *io, const struct ml_train_opts *o, const struct ml_train_setup *s,
                         struct ml_diag *d)
{
    /* A check the defaults already fail comes from the model itself (a quantized checkpoint's
     * format): named after its source. */
    const struct ml_train *stage[4] = {&s->rd.defaults, &s->rd.after_yaml, &s->rd.after_ds, &s->rd.after_sets};
    const char *origin[4] = {s->m.catalog_params ? s->m.name : s->m.source, o->config, s->rd.ds_path, "--set"};
    for (int i = 0; i < 4 && !d->origin[0]; i++) {
        if (!origin[i] || !origin[i][0])
            continue;
        struct ml_train t = *stage[i];
        t.warnings = NULL;
        struct ml_diag e;
        ml_diag_init(&e);
        if (ml_train_check(&t, &s->m.arch, &s->cl, &e) != ML_OK && !strcmp(e.msg, d->msg))
            ml_diag_at(d, origin[i], 0, 0);
    }
    io->report(d);
}

/* LoRA targets that match no module, named after the input that gave them. */
static bool check_lora(const struct ml_io *io, const struct ml_train_opts *o, const struct ml_train_files *f,
                       struct ml_train_setup *s)
{
    const struct ml_train *t = &s->t;
    if (t->method != ML_METHOD_LORA && t->method != ML_METHOD_QLORA)
        return true;
    struct ml_lora_count *lc = malloc(sizeof(*lc));
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st =
        lc ? ml_lora_count(&s->m.arch, &s->inv, &t->lora_targets, t->lora_rank ? t->lora_rank : 1, lc, &d)
           : ml_diag_set(&d, ML_ERR_NOMEM, "%s", _("out of memory"));
    free(lc);
    if (st == ML_OK)
        return true;
    const char *by = o->target                              ? "--lora-target"
                     : s->rd.set_of[ML_TK_LORA_TARGET] >= 0 ? "--set"
                                                            : ml_run_set_by(f, &s->rd, ML_TK_LORA_TARGET);
    ml_diag_at(&d, by ? by : "", 0, 0);
    io->report(&d);
    return false;
}

/* --accelerate FILE, read as `accelerate launch --config_file FILE` does: its FSDP/DeepSpeed
 * settings over the YAML's, num_processes (all GPUs over all nodes) and num_machines as the
 * cluster; a --num-gpus or --nodes that disagrees is an error naming both. The cluster goes to
 * cl (gpus_per_node 0: the file gave none). */
static bool read_accelerate(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train *t, char *ds_path,
                            size_t ds_n, struct ml_cluster *cl)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_buf b;
    ml_buf_init(&b, (size_t)1 << 20);
    struct ml_accelerate acc;
    enum ml_status st = io->read_file(o->accelerate, (size_t)1 << 20, &b, &d);
    if (st == ML_OK)
        st = ml_train_apply_accelerate(t, b.buf, b.len, o->accelerate, &acc, &d);
    ml_buf_release(&b);
    if (st != ML_OK) {
        io->report(&d);
        return false;
    }
    if (acc.deepspeed_file[0] && !o->deepspeed &&
        !ml_run_load(io, acc.deepspeed_file, false, t, NULL, 0, NULL, 0, false))
        return false;
    if (acc.deepspeed_file[0] && !o->deepspeed)
        (void)snprintf(ds_path, ds_n, "%s", acc.deepspeed_file);
    memset(cl, 0, sizeof(*cl));
    if (!acc.num_processes)
        return true;
    uint32_t nodes = acc.num_machines ? acc.num_machines : 1;
    uint32_t per = acc.num_processes / nodes;
    if (o->num_gpus_set && o->num_gpus != per) {
        ml_io_errorf(io, o->cmd,
                     _("--num-gpus %llu disagrees with %s: num_processes %u over num_machines %u = %u GPUs "
                       "per node"),
                     (unsigned long long)o->num_gpus, o->accelerate, acc.num_processes, nodes, per);
        return false;
    }
    if (o->nodes_set && o->nodes != nodes) {
        ml_io_errorf(io, o->cmd, _("--nodes %llu disagrees with %s: num_machines %u"), (unsigned long long)o->nodes,
                     o->accelerate, nodes);
        return false;
    }
    cl->gpus_per_node = per;
    cl->nodes = nodes;
    return true;
}

/* `train ... -- llamafactory-cli train x.yaml key=value ...` (or `--key value ...`, `--lf "..."`):
 * the config file and the launcher's cluster into the options, the overrides into s->lf_ov (read
 * with the YAML through one key table by ml_run_read, no limit on their number); a --config,
 * --accelerate, --num-gpus or --nodes that disagrees is an error naming both. */
static bool lf_cmdline(const struct ml_io *io, struct ml_train_opts *o, struct ml_train_setup *s)
{
    struct ml_diag d;
    ml_diag_init(&d);
    struct ml_lf_cmdline lf;
    s->lf_ov = calloc((size_t)o->lf_argc + 1, sizeof(*s->lf_ov));
    if (!s->lf_ov) {
        ml_io_errorf(io, o->cmd, "%s", _("out of memory"));
        return false;
    }
    if (ml_lf_cmdline_parse(o->lf_argc, o->lf_argv, &lf, s->lf_ov, (size_t)o->lf_argc + 1, &d) != ML_OK) {
        ml_diag_at(&d, "--", 0, 0);
        io->report(&d);
        return false;
    }
    s->lf_n_ov = lf.n_ov;
    if (lf.config && o->config) {
        ml_io_errorf(io, o->cmd, _("--config %s and the command line's %s: give one"), o->config, lf.config);
        return false;
    }
    if (lf.accelerate && o->accelerate && strcmp(lf.accelerate, o->accelerate)) {
        ml_io_errorf(io, o->cmd, _("--accelerate %s and the command line's --config_file %s: give one"), o->accelerate,
                     lf.accelerate);
        return false;
    }
    if (lf.config)
        o->config = lf.config;
    if (lf.accelerate)
        o->accelerate = lf.accelerate;
    uint32_t per = lf.nproc_per_node  ? lf.nproc_per_node
                   : lf.num_processes ? lf.num_processes / (lf.nnodes ? lf.nnodes : 1)
                   : !o->accelerate   ? lf.visible_devices
                                      : 0;
    if ((per && o->num_gpus_set && o->num_gpus != per) || (lf.nnodes && o->nodes_set && o->nodes != lf.nnodes)) {
        ml_io_errorf(io, o->cmd,
                     _("--num-gpus %llu / --nodes %llu disagree with the command line's %u GPUs per node on %u "
                       "nodes"),
                     (unsigned long long)o->num_gpus, (unsigned long long)o->nodes, per ? per : (uint32_t)o->num_gpus,
                     lf.nnodes ? lf.nnodes : (uint32_t)o->nodes);
        return false;
    }
    if (per) {
        o->num_gpus = per;
        o->num_gpus_set = true;
    }
    if (lf.nnodes) {
        o->nodes = lf.nnodes;
        o->nodes_set = true;
    }
    return true;
}

void ml_run_release(struct ml_train_setup *s)
{
    free(s->lf_buf);
    free(s->lf_words);
    free(s->lf_ov);
    s->lf_buf = NULL;
    s->lf_words = NULL;
    s->lf_ov = NULL;
    s->lf_n_ov = 0;
}

bool ml_run_build(const struct ml_io *io, const struct ml_train_opts *o, struct ml_train_setup *s)
{
    struct ml_train *t = &s->t;
    ml_train_defaults(t, o->fw);
    s->warnings.n = 0;
    t->warnings = &s->warnings;
    struct ml_train_opts lo = *o; /* the options with what a LLaMA-Factory command line adds */
    struct ml_cluster acc_cl = {0};
    if (o->lf_line && o->lf_argc)
        return ml_io_errorf(io, o->cmd, "%s", _("--lf and a command line after '--': give one"));
    if (o->lf_line) {
        /* The words live as long as the setup (the options point into them). */
        size_t n = strlen(o->lf_line) + 1;
        s->lf_buf = malloc(n);
        s->lf_words = malloc((n / 2 + 1) * sizeof(*s->lf_words));
        int k = s->lf_buf && s->lf_words ? ml_lf_split(o->lf_line, s->lf_buf, n, s->lf_words, (int)(n / 2 + 1)) : -1;
        if (k <= 0)
            return ml_io_errorf(io, o->cmd, "%s", _("--lf: an empty command line or an unterminated quote"));
        lo.lf_argc = k;
        lo.lf_argv = s->lf_words;
    }
    if (lo.lf_argc) {
        if (!lf_cmdline(io, &lo, s))
            return false;
        o = &lo;
    }
    struct ml_train_files f = {o->config, o->deepspeed, o->run_dir, o->sets, o->n_sets,
                               s->lf_ov,  s->lf_n_ov,   o->zero,    true};
    if (o->run_dir && io->path_kind(o->run_dir) != ML_PATH_DIR)
        return ml_io_errorf(io, o->cmd, _("--run-dir %s: not a directory"), o->run_dir);
    if (!ml_run_read(io, &f, t, &s->rd))
        return false;
    (void)snprintf(s->ds_path, sizeof(s->ds_path), "%s", s->rd.ds_path);
    if (o->accelerate && !read_accelerate(io, o, t, s->ds_path, sizeof(s->ds_path), &acc_cl))
        return false;
    if (!apply_flags(io, o, t, s->ds_path[0] != '\0'))
        return false;
    warn_overrides(o, &f, &s->rd, t);
    /* No flag is dropped silently: the adapter's flags on a run that trains no adapter. */
    if ((o->rank || o->target) && (t->method == ML_METHOD_FULL || t->method == ML_METHOD_FREEZE))
        ml_train_warn(t, _("%s not used: method %s trains no LoRA adapter"),
                      o->rank && o->target ? "--lora-rank / --lora-target"
                      : o->rank            ? "--lora-rank"
                                           : "--lora-target",
                      ml_method_name(t->method));
    t->defaulted = defaulted(o, &f, &s->rd, t);
    if (!resolve_model(io, o, s))
        return false;
    if (!o->gpu)
        return ml_io_errorf(io, o->cmd, "%s",
                            _("--gpu is needed (a card such as a100-80g, or a size such as 16G or 15.98GiB)"));
    struct ml_diag d;
    memset(&s->cl, 0, sizeof(s->cl));
    ml_diag_init(&d);
    if (ml_gpu_resolve(o->gpu, &s->cl.gpu, &d) != ML_OK) {
        ml_diag_at(&d, "--gpu", 0, 0);
        io->report(&d);
        return false;
    }
    s->cl.gpus_per_node = acc_cl.gpus_per_node ? acc_cl.gpus_per_node : (uint32_t)o->num_gpus;
    s->cl.nodes = acc_cl.gpus_per_node ? acc_cl.nodes : (uint32_t)o->nodes;
    /* The profile's defaults that follow from the batch and the devices (LitGPT's GA). */
    ml_train_derive_defaults(
        t, (uint64_t)(s->cl.gpus_per_node ? s->cl.gpus_per_node : 1) * (s->cl.nodes ? s->cl.nodes : 1),
        !((t->defaulted >> ML_TK_GA) & 1u));
    if (o->host_ram) {
        ml_diag_init(&d);
        if (ml_size_parse(o->host_ram, &s->cl.host_ram_bytes, NULL, &d) != ML_OK)
            return ml_io_errorf(io, o->cmd, "--host-ram: %s", d.msg);
    }

    ml_diag_init(&d);
    if (ml_inventory_build(&s->m.arch, &s->inv, &d) != ML_OK) {
        ml_diag_at(&d, s->m.source, 0, 0);
        io->report(&d);
        return false;
    }
    ml_diag_init(&d);
    if (ml_train_check(t, &s->m.arch, &s->cl, &d) != ML_OK) {
        report_check(io, o, s, &d);
        return false;
    }
    if (!check_lora(io, o, &f, s))
        return false;
    ml_diag_init(&d);
    if (ml_ledger_train(&s->m.arch, &s->inv, t, &s->cl, NULL, &s->l, &d) != ML_OK) {
        io->report(&d);
        return false;
    }

    return true;
}
