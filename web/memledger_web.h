/*
 * memledger_web.h - the exports of the web page's module (web/memledger_web.c, docs/web.md).
 * Each command export takes a JSON request of len bytes and returns a malloc'ed JSON answer;
 * the caller frees every returned string but mlw_version's.
 */
#ifndef ML_MEMLEDGER_WEB_H
#define ML_MEMLEDGER_WEB_H

#include <stddef.h>

char *mlw_train(const char *req, size_t len);
char *mlw_infer(const char *req, size_t len);
char *mlw_diagnose(const char *req, size_t len);
char *mlw_fit(const char *req, size_t len);
char *mlw_models(const char *req, size_t len);
char *mlw_gpus(const char *req, size_t len);
char *mlw_fmt_gib(double bytes);
char *mlw_fmt_bytes(double bytes);
const char *mlw_version(void);

#endif /* ML_MEMLEDGER_WEB_H */
