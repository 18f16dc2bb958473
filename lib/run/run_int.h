/*
 * run_int.h - what the files of lib/run share: messages formatted and said through the host.
 */
#ifndef ML_RUN_INT_H
#define ML_RUN_INT_H

#include "memledger/run.h"

/* printf-style io->error (cmd NULL: a plain error; returns false, for `return ml_io_errorf(...)`),
 * io->warn and io->say. */
bool ml_io_errorf(const struct ml_io *io, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ml_io_warnf(const struct ml_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ml_io_sayf(const struct ml_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* rel under dir ("" or NULL = as written); an absolute rel stays as it is. */
void ml_run_join(const char *dir, const char *rel, char *out, size_t n);

/* Read a YAML (yaml true) or DeepSpeed JSON and apply it; reports the error unless quiet; false
 * on failure. model/ds: the YAML's model_name_or_path and deepspeed: (NULL for the JSON). */
bool ml_run_load(const struct ml_io *io, const char *path, bool yaml, struct ml_train *t, char *model, size_t model_n,
                 char *ds, size_t ds_n, bool quiet);

/* Who set tracked setting k last before the flags: "--set K=V", the DeepSpeed file, the YAML, or
 * NULL (none: the default). */
const char *ml_run_set_by(const struct ml_train_files *f, const struct ml_train_read *rd, int k);

#endif /* ML_RUN_INT_H */
