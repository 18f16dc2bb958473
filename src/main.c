/*
 * main.c - memledger's entry point: global options and the command table.
 */
#include "cli.h"
#include "io.h"

#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "i18n.h"

const struct ml_cmd ml_commands[] = {
    {"train", cmd_train, N_("per-GPU training memory ledger from a model, LLaMA-Factory YAML and DeepSpeed JSON"),
     cmd_train_usage},
    {"infer", cmd_infer, N_("inference and serving ledger: weights, KV cache, vLLM/SGLang budgets"), cmd_infer_usage},
    {"diagnose", cmd_diagnose, N_("read an OOM log: what happened, why, and the fixes with the bytes they save"),
     cmd_diagnose_usage},
    {"fit", cmd_fit, N_("the cheapest changes that make a run fit, as patched config files"), cmd_fit_usage},
    {"watch", cmd_watch, N_("run a command and sample real GPU memory (NVML, ROCm SMI)"), cmd_watch_usage},
    {"compare", cmd_compare, N_("hold a measured run (memledger_hook JSONL) against the ledger"), cmd_compare_usage},
    {"card", cmd_card, N_("quick-reference card: what each GPU size can train and serve"), cmd_card_usage},
    {"params", cmd_params, N_("exact parameter inventory of a model, by module, with LoRA counts"), cmd_params_usage},
    {"models", cmd_models, N_("list the built-in model catalog"), cmd_models_usage},
    {"gpus", cmd_gpus, N_("list the built-in GPU catalog and usable capacities"), cmd_gpus_usage},
    {NULL, NULL, NULL, NULL},
};

const struct ml_cmd *ml_cmd_find(const char *name)
{
    for (const struct ml_cmd *c = ml_commands; c->name; c++)
        if (!strcmp(c->name, name))
            return c;
    return NULL;
}

static void main_usage(FILE *f)
{
    fprintf(f, "%s",
            _("usage: memledger [--version] [--help] <command> [<args>]\n\n"
              "Where every byte of GPU memory goes, before launch, during the run and after a crash.\n\n"
              "commands:\n"));
    for (const struct ml_cmd *c = ml_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, _(c->summary));
    fprintf(f, "%s",
            _("\n'memledger help <command>' shows a command's options.\n"
              "Exit status: 0 success, 1 a negative answer (--check and it does not fit; fit: no plan; diagnose: no\n"
              "OOM found), 2 usage error or bad input.\n"));
}

static int unknown_command(const char *name)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (const struct ml_cmd *c = ml_commands; c->name; c++) {
        size_t d = ml_edit_distance(name, c->name);
        if (d < best_d) {
            best_d = d;
            best = c->name;
        }
    }
    if (best && best_d <= 2)
        ml_errorf(_("'%s' is not a memledger command; did you mean '%s'?"), name, best);
    else
        ml_errorf(_("'%s' is not a memledger command; see 'memledger --help'"), name);
    return ML_EXIT_USAGE;
}

#if defined(ML_ENABLE_NLS) && ML_ENABLE_NLS
#ifndef ML_LOCALEDIR_REL
#define ML_LOCALEDIR_REL "../share/locale"
#endif
/* The catalogs: $MEMLEDGER_LOCALEDIR; else found from the executable's own place, so that the
 * build tree (locale/ beside it) and an installed or unpacked tree (../share/locale from bin/)
 * work wherever they are; else the configured directory. */
static const char *locale_dir(char *buf, size_t n)
{
    const char *env = ml_env("MEMLEDGER_LOCALEDIR");
    if (env && *env)
        return env;
    char exe[PATH_MAX];
    ml_exe_path(exe, sizeof(exe));
    char *slash = strrchr(exe, '/');
    if (slash) {
        *slash = '\0';
        static const char *const rel[] = {"locale", ML_LOCALEDIR_REL};
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
            snprintf(buf, n, "%s/%s", exe, rel[i]);
            if (ml_path_kind(buf) == ML_PATH_DIR)
                return buf;
        }
    }
    return ML_LOCALEDIR;
}

/* JSON is never translated (docs/json.md): a run with --json (before any "--") keeps the C
 * locale's messages, so its JSON sentences and its stderr stay English. */
static bool wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--json"))
            return true;
    return false;
}
#endif

int main(int argc, char **argv)
{
#if defined(ML_ENABLE_NLS) && ML_ENABLE_NLS
    /* Messages only: numbers are formatted with integer code, never by the locale. */
    if (!wants_json(argc, argv))
        setlocale(LC_MESSAGES, "");
    setlocale(LC_CTYPE, "");
    static char dir[PATH_MAX + 32];
    bindtextdomain("memledger", locale_dir(dir, sizeof(dir)));
#endif
    if (argc < 2) {
        main_usage(stderr);
        return ML_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        main_usage(stdout);
        return ML_EXIT_OK;
    }
    if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
        printf("memledger %s\n", ML_VERSION);
        return ML_EXIT_OK;
    }
    if (!strcmp(a, "help")) {
        if (argc < 3) {
            main_usage(stdout);
            return ML_EXIT_OK;
        }
        const struct ml_cmd *c = ml_cmd_find(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        fputs(_(c->usage), stdout);
        return ML_EXIT_OK;
    }
    if (a[0] == '-') {
        ml_errorf(_("unknown option '%s'; see 'memledger --help'"), a);
        return ML_EXIT_USAGE;
    }
    const struct ml_cmd *c = ml_cmd_find(a);
    if (!c)
        return unknown_command(a);
    return c->fn(argc - 1, argv + 1);
}
