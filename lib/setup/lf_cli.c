/*
 * lf_cli.c - a LLaMA-Factory command line, split into the config file, the overrides and the
 * cluster it asks for (see train.h, ml_lf_cmdline_parse). Pure: argv in, pointers into it out.
 *
 * Sources: LLaMA-Factory src/llamafactory/cli.py and launcher.py (the sub-command, FORCE_TORCHRUN,
 * NNODES, NPROC_PER_NODE, the device count from CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES),
 * hparams/parser.py read_args (a .yaml/.yml/.json first argument is loaded and the rest merged as
 * an OmegaConf dotlist; otherwise HfArgumentParser reads --key value), v1/launcher.py (sft, dpo, rm);
 * accelerate commands/launch.py (--config_file, --num_processes, --num_machines); torchrun
 * (--nproc_per_node, --nnodes).
 */
#include "memledger/train.h"

#include <string.h>

#include "i18n.h"

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

static const char *base_name(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

static bool is_config(const char *s)
{
    return ends_with(s, ".yaml") || ends_with(s, ".yml") || ends_with(s, ".json");
}

/* A small whole number (an environment value or a launcher option). */
static bool small_count(const char *s, uint32_t *out)
{
    uint32_t n = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || n > 1000000u)
            return false;
        n = n * 10 + (uint32_t)(*s - '0');
    }
    if (!n)
        return false;
    *out = n;
    return true;
}

static enum ml_status bad_count(struct ml_diag *diag, const char *what, const char *v)
{
    return ml_diag_set(diag, ML_ERR_INVALID, _("%s must be a positive whole number, got '%.60s'"), what, v);
}

/* VAR=value before the program: the ones the launcher reads. */
static enum ml_status env_word(const char *w, struct ml_lf_cmdline *out, bool *devices_set, struct ml_diag *diag)
{
    const char *eq = strchr(w, '=');
    const char *v = eq + 1;
    size_t n = (size_t)(eq - w);
    if (n == 6 && !strncmp(w, "NNODES", 6))
        return small_count(v, &out->nnodes) ? ML_OK : bad_count(diag, "NNODES", v);
    if (n == 14 && !strncmp(w, "NPROC_PER_NODE", 14))
        return small_count(v, &out->nproc_per_node) ? ML_OK : bad_count(diag, "NPROC_PER_NODE", v);
    if ((n == 20 && !strncmp(w, "CUDA_VISIBLE_DEVICES", 20)) ||
        (n == 25 && !strncmp(w, "ASCEND_RT_VISIBLE_DEVICES", 25)) ||
        (n == 19 && !strncmp(w, "HIP_VISIBLE_DEVICES", 19))) {
        uint32_t k = *v ? 1 : 0;
        for (const char *p = v; *p; p++)
            k += *p == ',';
        *devices_set = k > 0;
        out->visible_devices = k;
        return ML_OK;
    }
    if ((n == 7 && !strncmp(w, "USE_MCA", 7)) || (n == 19 && !strncmp(w, "USE_MEGATRON_BRIDGE", 19)))
        return strcmp(v, "1") && strcmp(v, "true") ? ML_OK
                                                   : ml_diag_set(diag, ML_ERR_INVALID,
                                                                 _("%.*s=%s: Megatron-Core training "
                                                                   "is not modelled"),
                                                                 (int)n, w, v);
    return ML_OK; /* FORCE_TORCHRUN, NODE_RANK, MASTER_ADDR, MASTER_PORT, USE_RAY, ... */
}

/* The launcher's own options up to its script: accelerate launch, torchrun, python. */
static enum ml_status launcher_opts(int argc, const char *const *argv, int *i, bool accelerate,
                                    struct ml_lf_cmdline *out, struct ml_diag *diag)
{
    for (; *i < argc; (*i)++) {
        const char *a = argv[*i];
        if (ends_with(a, ".py") || (a[0] != '-' && !accelerate))
            return ML_OK;
        if (a[0] != '-')
            return ML_OK;
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        const char *v = eq ? eq + 1 : (*i + 1 < argc ? argv[*i + 1] : "");
        bool takes = !!eq;
#define OPT(name) (n == strlen(name) && !strncmp(a, name, n))
        if (OPT("--config_file") || OPT("--config-file")) {
            out->accelerate = v;
            takes = true;
        } else if (OPT("--num_processes") || OPT("--num-processes")) {
            if (!small_count(v, &out->num_processes))
                return bad_count(diag, "--num_processes", v);
            takes = true;
        } else if (OPT("--num_machines") || OPT("--num-machines") || OPT("--nnodes")) {
            if (!small_count(v, &out->nnodes))
                return bad_count(diag, "--nnodes", v);
            takes = true;
        } else if (OPT("--nproc_per_node") || OPT("--nproc-per-node")) {
            if (!small_count(v, &out->nproc_per_node))
                return bad_count(diag, "--nproc_per_node", v);
            takes = true;
        } else if (!eq && *i + 1 < argc && argv[*i + 1][0] != '-' && !ends_with(argv[*i + 1], ".py")) {
            takes = true; /* another option with a value (--main_process_port 29500, -m ...) */
        }
#undef OPT
        if (takes && !eq)
            (*i)++;
    }
    return ML_OK;
}

/* The program and its sub-command; *i is left at the first argument of the training script. */
static enum ml_status program(int argc, const char *const *argv, int *i, struct ml_lf_cmdline *out,
                              struct ml_diag *diag)
{
    const char *p = base_name(argv[*i]);
    out->command = "";
    if (!strcmp(p, "llamafactory-cli") || !strcmp(p, "lmf")) {
        (*i)++;
        const char *cmd = *i < argc ? argv[*i] : "";
        if (strcmp(cmd, "train") && strcmp(cmd, "sft") && strcmp(cmd, "dpo") && strcmp(cmd, "rm"))
            return ml_diag_set(diag, ML_ERR_INVALID,
                               _("llamafactory-cli %.40s is not a training command (train; v1: "
                                 "sft, dpo, rm)"),
                               cmd);
        out->command = cmd;
        (*i)++;
        return ML_OK;
    }
    bool acc = !strcmp(p, "accelerate");
    if (acc || !strcmp(p, "torchrun") || !strncmp(p, "python", 6)) {
        (*i)++;
        if (acc && (*i >= argc || strcmp(argv[*i], "launch")))
            return ml_diag_set(diag, ML_ERR_INVALID, _("expected 'accelerate launch'"));
        if (acc)
            (*i)++;
        enum ml_status st = launcher_opts(argc, argv, i, acc, out, diag);
        if (st != ML_OK)
            return st;
        if (*i >= argc || !ends_with(argv[*i], ".py"))
            return ml_diag_set(diag, ML_ERR_INVALID, _("expected the training script (src/train.py) after %s"), p);
        (*i)++;
        return ML_OK;
    }
    if (is_config(argv[*i]) || argv[*i][0] == '-')
        return ML_OK; /* the program left out: the arguments themselves */
    return ml_diag_set(diag, ML_ERR_INVALID,
                       _("'%.60s' is not llamafactory-cli, lmf, accelerate launch, torchrun or "
                         "python src/train.py"),
                       argv[*i]);
}

/* key=value (after a config) or --key value / --key=value / --flag (without one). */
static enum ml_status overrides(int argc, const char *const *argv, int i, struct ml_lf_cmdline *out,
                                struct ml_train_override *ov, size_t cap, struct ml_diag *diag)
{
    for (; i < argc; i++) {
        const char *a = argv[i];
        struct ml_train_override o = {0};
        if (out->config) {
            const char *eq = strchr(a, '=');
            if (a[0] == '-' || !eq || eq == a)
                return ml_diag_set(diag, ML_ERR_INVALID,
                                   _("'%.60s': after a config file, overrides are key=value "
                                     "(OmegaConf dotlist)"),
                                   a);
            o.key = a;
            o.key_len = (size_t)(eq - a);
            o.value = eq + 1;
        } else {
            if (strncmp(a, "--", 2) || !a[2])
                return ml_diag_set(diag, ML_ERR_INVALID, _("'%.60s': expected --key value (or a config file first)"),
                                   a);
            const char *eq = strchr(a, '=');
            o.key = a + 2;
            o.key_len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (eq)
                o.value = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
                o.value = argv[++i];
        }
        if (out->n_ov >= cap)
            return ml_diag_set(diag, ML_ERR_INVALID, _("too many overrides"));
        ov[out->n_ov++] = o;
    }
    return ML_OK;
}

enum ml_status ml_lf_cmdline_parse(int argc, const char *const *argv, struct ml_lf_cmdline *out,
                                   struct ml_train_override *ov, size_t ov_cap, struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    int i = 0;
    bool devices = false;
    for (; i < argc && strchr(argv[i], '=') && argv[i][0] != '-' && !is_config(argv[i]); i++) {
        const char *eq = strchr(argv[i], '=');
        bool name = eq > argv[i];
        for (const char *p = argv[i]; p < eq; p++)
            name = name && ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_');
        if (!name)
            break;
        enum ml_status st = env_word(argv[i], out, &devices, diag);
        if (st != ML_OK)
            return st;
    }
    if (i >= argc)
        return ml_diag_set(diag, ML_ERR_INVALID,
                           _("expected a LLaMA-Factory command line after '--' "
                             "(llamafactory-cli train config.yaml ...)"));
    enum ml_status st = program(argc, argv, &i, out, diag);
    if (st != ML_OK)
        return st;
    if (i < argc && is_config(argv[i]))
        out->config = argv[i++];
    if (!out->config && i >= argc)
        return ml_diag_set(diag, ML_ERR_INVALID, _("expected a config file or --key value arguments"));
    st = overrides(argc, argv, i, out, ov, ov_cap, diag);
    if (st != ML_OK)
        return st;
    /* The v1 commands name the stage; `train` reads it from the config. */
    if (!strcmp(out->command, "dpo") || !strcmp(out->command, "rm")) {
        if (out->n_ov >= ov_cap)
            return ml_diag_set(diag, ML_ERR_INVALID, _("too many overrides"));
        ov[out->n_ov].key = "stage";
        ov[out->n_ov].key_len = 5;
        ov[out->n_ov].value = out->command;
        out->n_ov++;
    }
    return ML_OK;
}

int ml_lf_split(const char *line, char *buf, size_t cap, const char **argv, int max)
{
    size_t o = 0;
    int n = 0;
    const char *p = line;
    if (!cap || strlen(line) + 1 > cap)
        return -1;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return n;
        if (n >= max)
            return -1;
        argv[n++] = buf + o;
        char q = 0;
        for (; *p && (q || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
            if (q && *p == q) {
                q = 0;
            } else if (!q && (*p == '\'' || *p == '"')) {
                q = *p;
            } else if (*p == '\\' && q != '\'' && p[1]) {
                buf[o++] = *++p;
            } else {
                buf[o++] = *p;
            }
        }
        if (q)
            return -1;
        buf[o++] = '\0';
    }
}
