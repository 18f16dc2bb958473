/*
 * cli.c - shared helpers of the subcommands (see cli.h).
 */
#include "cli.h"
#include "io.h"
#include "term.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/json_dup.h"
#include "memledger/train.h"
#include "memledger/units.h"
#include "i18n.h"

void ml_report(const struct ml_diag *d)
{
    const char *msg = d->msg[0] ? d->msg : ml_status_str(d->code);
    if (d->origin[0] && d->line && d->col)
        ml_stderr_printf("memledger: %s:%u:%u: %s\n", d->origin, d->line, d->col, msg);
    else if (d->origin[0] && d->line)
        ml_stderr_printf("memledger: %s:%u: %s\n", d->origin, d->line, msg);
    else if (d->origin[0])
        ml_stderr_printf("memledger: %s: %s\n", d->origin, msg);
    else
        ml_stderr_printf("memledger: %s\n", msg);
}

void ml_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_stderr_printf("%s", "memledger: ");
    ml_stderr_vprintf(fmt, ap);
    ml_stderr_printf("\n");
    va_end(ap);
}

/* A warning is folded at COLUMNS when it is set (docs/cli/memledger.md, Environment), so that a
 * terminal of that width shows it whole; errors stay one line each, for scripts. */
void ml_warnf(const char *fmt, ...)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    va_list ap;
    va_start(ap, fmt);
    ml_buf_adds(&b, _("memledger: warning: "));
    (void)ml_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    (void)ml_buf_adds(&b, "\n");
    size_t w = ml_term_columns_env();
    (void)ml_text_fold(&b, 0, w && w < ML_TERM_MIN_WIDTH ? ML_TERM_MIN_WIDTH : w);
    ml_stderr_printf("%s", b.buf ? b.buf : "");
    ml_buf_release(&b);
}

int ml_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_stderr_printf("memledger %s: ", cmd);
    ml_stderr_vprintf(fmt, ap);
    ml_stderr_printf(_(" (see 'memledger help %s')\n"), cmd);
    va_end(ap);
    return ML_EXIT_USAGE;
}

/* The option getopt_long refused, as the user wrote it: "--name=value" or "--name" for a long
 * one, "-x" for a short one (which may sit inside a group such as "-xj"). */
static const char *refused_option(char **argv, char *buf, size_t cap)
{
    const char *a = argv[optind - 1];
    if (!strncmp(a, "--", 2) || optopt <= 0 || optopt > 127)
        return a;
    snprintf(buf, cap, "-%c", optopt);
    return buf;
}

int ml_cli_parse(const struct ml_cli_spec *spec, int argc, char **argv, ml_cli_opt_fn on_opt, void *ctx, int *first)
{
    optind = 0; /* glibc: 0 starts a new scan (each command parses once, the web page many times) */
    opterr = 0;
    const char *shortopts = spec->stop_at_positional ? "+:h" : ":h";
    int c, li;
    char sh[4];
    for (li = -1; (c = getopt_long(argc, argv, shortopts, spec->longopts, &li)) != -1; li = -1) {
        if (c == 'h') {
            fputs(_(spec->usage), stdout);
            return -1;
        }
        if (c == ':')
            return ml_usage_error(spec->cmd, _("option '%s' needs a value"), refused_option(argv, sh, sizeof(sh)));
        if (c == '?') {
            const char *a = refused_option(argv, sh, sizeof(sh));
            const char *eq = strchr(a, '=');
            if (optopt && !strncmp(a, "--", 2) && eq) /* a known flag given a value */
                return ml_usage_error(spec->cmd, _("option '%.*s' takes no value"), (int)(eq - a), a);
            return ml_usage_error(spec->cmd, _("unknown option '%s'"), a);
        }
        int r = on_opt(ctx, c, li >= 0 ? spec->longopts[li].name : "", optarg);
        if (r != ML_EXIT_OK)
            return r;
    }
    if (spec->max_positional >= 0 && argc - optind > spec->max_positional)
        return ml_usage_error(spec->cmd, _("unexpected argument '%s'"), argv[optind + spec->max_positional]);
    *first = optind;
    return ML_EXIT_OK;
}

static void host_error(const char *cmd, const char *msg)
{
    if (cmd)
        ml_usage_error(cmd, "%s", msg);
    else
        ml_errorf("%s", msg);
}

static void host_warn(const char *msg)
{
    ml_warnf("%s", msg);
}

static void host_say(const char *line)
{
    ml_stderr_printf("%s", line);
}

const struct ml_io *ml_cli_io(void)
{
    static const struct ml_io host = {ml_path_kind, ml_read_file, ml_same_file, ml_env,
                                      ml_report,    host_error,   host_warn,    host_say};
    return &host;
}

int ml_exit_code(enum ml_status st)
{
    return st == ML_OK ? ML_EXIT_OK : ML_EXIT_USAGE;
}

enum ml_status ml_read_file(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d)
{
    ml_diag_at(d, strcmp(path, "-") ? path : "<stdin>", 0, 0);
    int h = ml_in_open(path, d);
    if (h < 0)
        return d->code;
    uint64_t size = ml_in_size(h);
    if (size != UINT64_MAX && size > max) {
        ml_in_close(h);
        return ml_diag_set(d, ML_ERR_TOOBIG, _("file is %llu bytes, over the %zu-byte limit for this input"),
                           (unsigned long long)size, max);
    }
    out->max = max;
    char chunk[65536];
    enum ml_status st = ML_OK;
    for (;;) {
        long n = ml_in_read(h, chunk, sizeof(chunk), d);
        if (n < 0) {
            st = d->code;
            break;
        }
        if (n == 0)
            break;
        st = ml_buf_add(out, chunk, (size_t)n);
        if (st == ML_ERR_TOOBIG) {
            ml_diag_set(d, st, _("input is over the %zu-byte limit for this input"), max);
            break;
        }
        if (st != ML_OK) {
            ml_diag_set(d, st, "%s", ml_status_str(st));
            break;
        }
    }
    ml_in_close(h);
    return st;
}

enum ml_status ml_resolve_model(const char *arg, struct ml_model_ref *out, struct ml_diag *d)
{
    return ml_model_resolve(ml_cli_io(), arg, out, d);
}

enum ml_status ml_write_stdout(const struct ml_buf *b)
{
    if (!ml_stdout_write(b->buf, b->len)) {
        ml_errorf(_("cannot write the output: %s"), strerror(errno));
        return ML_ERR_IO;
    }
    return ML_OK;
}

enum ml_status ml_write_picture(const char *path, enum ml_status drawn, const struct ml_buf *b, bool force)
{
    if (drawn != ML_OK) {
        ml_errorf(_("%s: no picture: %s"), path, ml_status_str(drawn));
        return ML_ERR_IO;
    }
    return ml_write_file(path, b, force, _("picture")) ? ML_OK : ML_ERR_IO;
}

bool ml_opt_u64(const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
    return ml_run_opt_u64(ml_cli_io(), cmd, opt, val, lo, hi, out);
}

bool ml_opt_framework(const char *cmd, const char *val, enum ml_framework *out)
{
    const char *names[ML_FW_COUNT];
    for (int i = 0; i < ML_FW_COUNT; i++)
        names[i] = ml_framework_name((enum ml_framework)i);
    int v;
    if (!ml_run_opt_word(ml_cli_io(), cmd, "--framework", val, names, ML_FW_COUNT, &v))
        return false;
    *out = (enum ml_framework)v;
    return true;
}

bool ml_resolve_serving(const char *model, const char *gpu, struct ml_model_ref *m, struct ml_cluster *cl,
                        struct ml_inventory *inv)
{
    return ml_run_serving(ml_cli_io(), model, gpu, m, cl, inv);
}

bool ml_opt_fraction(const char *cmd, const char *opt, const char *val, uint32_t *out)
{
    if (ml_permille_parse(val, out))
        return true;
    ml_usage_error(cmd, _("%s must be a number in (0, 1], got '%s'"), opt, val);
    return false;
}
