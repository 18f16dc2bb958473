/*
 * infer_opts.h - the serving options in a command's getopt table (src/infer_opts.c; the rows are
 * lib/setup/infer_opts.c's, parsed by ml_infer_option of cli.h).
 */
#ifndef ML_INFER_OPTS_H
#define ML_INFER_OPTS_H

#include <getopt.h>

#include "cli.h"
#include "memledger/infer.h"

#define ML_LONGOPTS_MAX 96 /* rows of a command's getopt table, the serving options included */

/* own (ended by a row of NULL name), then the serving options that in (ML_IOPT_IN_*; 0: all, as
 * infer) takes, each returning val, then the end row: into out[ML_LONGOPTS_MAX]. */
void ml_serve_longopts(const struct option *own, unsigned in, int val, struct option *out);

/* One serving option parsed as ml_infer_option does, into f rather than applied. */
enum ml_infer_opt ml_infer_flag_parse(const char *cmd, const char *name, const char *val, struct ml_infer_flag *f);

/* A warning for each engine spelling on the command line (src/infer_opts.c aliases) that is not
 * the spelling of engine e. */
void ml_infer_alias_engines(int argc, char **argv, enum ml_engine e);

#endif /* ML_INFER_OPTS_H */
