/*
 * cli.h - what the subcommands share: the command signature, error printing, capped file
 * reading, model resolution and output. Only src/ touches files, the terminal and the
 * environment; everything a command computes or prints is a lib/ function (docs/architecture.md).
 *
 * How to add a command ("memledger <name>"), in the spirit of git's builtin.h:
 *
 *  1. Write its page, docs/cli/<name>.md: what it does, every option, the JSON keys, the exit
 *     codes, examples. tests/check_docs.sh fails while an option of the usage text is missing.
 *  2. Compute in the core: structs in, numbers out, no I/O (lib/, checked by check_pure.sh).
 *  3. Render in lib/render/<name>_report.c: ml_render_<name>_text() and, for --json,
 *     ml_render_<name>_json() appending to a struct ml_buf (include/memledger/report.h). List the
 *     file in ml_report (CMakeLists.txt) and unit-test the JSON against hand-written values.
 *  4. Write src/cmd_<name>.c with `const char cmd_<name>_usage[]` and `int cmd_<name>(int argc,
 *     char **argv)`: its options through ml_cli_parse() (its getopt table and one function
 *     that takes each option); bad values through ml_usage_error() or ml_report() (one line,
 *     exit 2); files only through ml_read_file() and
 *     ml_resolve_model() (any other I/O only through io.h); the output in one ml_write_stdout();
 *     return an enum ml_exit. Nothing else: options, files and exit codes.
 *  5. Declare both below, add a row to ml_commands[] in main.c, and add src/cmd_<name>.c to the
 *     memledger sources in CMakeLists.txt (no file is built unless it is listed).
 *  6. Test it end to end: golden cases in tests/golden/<name>/<case>/ (args, expected.stdout,
 *     expected.stderr, expected.rc), bad input in tests/bad/cases-<name> (exit 2, one line).
 */
#ifndef ML_CLI_H
#define ML_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "memledger/arch.h"
#include "memledger/buf.h"
#include "memledger/model_ref.h"
#include "memledger/report.h"
#include "memledger/run.h"
#include "memledger/status.h"

/* Exit codes (DESIGN.md section 3, docs/exit-codes.md). */
enum ml_exit {
    ML_EXIT_OK = 0,       /* success */
    ML_EXIT_NEGATIVE = 1, /* the answer is "no" (does not fit, no OOM found) */
    ML_EXIT_USAGE = 2     /* usage error or bad input */
};

struct ml_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary; /* one line for "memledger --help" */
    const char *usage;   /* full usage text */
};

/* The command table (main.c). */
extern const struct ml_cmd ml_commands[];
const struct ml_cmd *ml_cmd_find(const char *name);

int cmd_train(int argc, char **argv);
int cmd_infer(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_card(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_gpus(int argc, char **argv);

extern const char cmd_train_usage[];
extern const char cmd_infer_usage[];
extern const char cmd_diagnose_usage[];
extern const char cmd_fit_usage[];
extern const char cmd_watch_usage[];
extern const char cmd_compare_usage[];
extern const char cmd_card_usage[];
extern const char cmd_params_usage[];
extern const char cmd_models_usage[];
extern const char cmd_gpus_usage[];

/* Print "memledger: ORIGIN:LINE:COL: MSG" (parts present only when known) on stderr. */
void ml_report(const struct ml_diag *d);

/* Print "memledger: MSG" on stderr (printf style). */
void ml_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ml_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a usage error for cmd ("memledger CMD: MSG" + hint) and return ML_EXIT_USAGE. */
int ml_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The library's host (memledger/run.h): files, the environment and messages through io.h and the
 * printing above. */
const struct ml_io *ml_cli_io(void);

/*
 * One way every command reads its options: getopt_long over spec->longopts (each command's own
 * table), never printing itself. on_opt gets each option's id (its `val`), its long name ("" for
 * a short one) and its value, and returns ML_EXIT_OK to go on or ML_EXIT_USAGE after printing
 * its error. --help / -h prints spec->usage and returns -1. An unknown option, an option missing
 * its value and a value given to a flag are each one usage line, worded alike in every command;
 * more than spec->max_positional positional arguments (< 0: any number) is "unexpected argument".
 * spec->stop_at_positional stops at the first positional argument (watch: what follows is the
 * command it runs). On ML_EXIT_OK *first is the index of the first positional argument.
 */
struct option;
struct ml_cli_spec {
    const char *cmd;               /* "train", for the messages */
    const char *usage;             /* printed by --help (translated here) */
    const struct option *longopts; /* ends with a zero row; --help is {"help", no_argument, NULL, 'h'} */
    int max_positional;
    bool stop_at_positional;
};
typedef int (*ml_cli_opt_fn)(void *ctx, int id, const char *name, const char *arg);
int ml_cli_parse(const struct ml_cli_spec *spec, int argc, char **argv, ml_cli_opt_fn on_opt, void *ctx, int *first);

/* Map a status to an exit code. */
int ml_exit_code(enum ml_status st);

/*
 * Read a whole file ("-" = stdin) into out, at most max bytes. Errors name the file:
 * missing, a directory, unreadable, larger than max (ML_ERR_TOOBIG).
 */
enum ml_status ml_read_file(const char *path, size_t max, struct ml_buf *out, struct ml_diag *d);

/* ml_model_resolve (run.h) over the command line's host: files here, notes and warnings printed. */
enum ml_status ml_resolve_model(const char *arg, struct ml_model_ref *out, struct ml_diag *d);

/* ml_run_serving (run.h) over the command line's host: reports the first problem, false. */
bool ml_resolve_serving(const char *model, const char *gpu, struct ml_model_ref *m, struct ml_cluster *cl,
                        struct ml_inventory *inv);

/* One serving option of `memledger infer` by its long name without the dashes ("tp",
 * "gpu-memory-utilization", "kv-dtype", ...; docs/cli/infer.md), applied to *s: OK, BAD (a usage
 * error naming cmd and the option was printed) or OTHER (not a serving option). infer, fit
 * --serve and diagnose list the names they take in their getopt tables and hand them here. */
struct ml_infer;
enum ml_infer_opt { ML_INFER_OPT_OK, ML_INFER_OPT_BAD, ML_INFER_OPT_OTHER };
enum ml_infer_opt ml_infer_option(const char *cmd, const char *name, const char *val, struct ml_infer *s);

/* Parse a fraction in (0, 1] with up to three decimals ("0.9", "1", ".95") as permille; on error
 * print a usage error naming the option. */
bool ml_opt_fraction(const char *cmd, const char *opt, const char *val, uint32_t *out);

/* Write the buffer to stdout; on failure report and return ML_ERR_IO. */
enum ml_status ml_write_stdout(const struct ml_buf *b);

/* --svg FILE: write the picture drawn (drawn: the drawing's status) with ml_write_file; reports
 * a drawing that failed. ML_OK, or ML_ERR_IO when nothing was written. */
enum ml_status ml_write_picture(const char *path, enum ml_status drawn, const struct ml_buf *b, bool force);

/* --framework's value, one of ml_framework_name's; on error print a usage error. */
bool ml_opt_framework(const char *cmd, const char *val, enum ml_framework *out);

/* Parse a positive integer option value; on error print a usage error naming the option. */
bool ml_opt_u64(const char *cmd, const char *opt, const char *val, uint64_t lo, uint64_t hi, uint64_t *out);

#endif /* ML_CLI_H */
