/*
 * memledger_web.c - the web page's module: the commands of the CLI, called with bytes.
 *
 * Each export takes a request {"argv": [options...], "files": {name: text}} - the command's
 * options exactly as on the command line and the files they name - and returns a malloc'ed
 * JSON answer (the caller frees it):
 *   {"ok": true, "exit": N, "json": {...}, "text": "...", "svg": "...", "files": [{name, text}],
 *    "stderr": "..."}   or   {"ok": false, "exit": 2, "error": "memledger: ..."}
 * The command runs with --json for the document, then as given (with --svg where the command
 * draws one) for the text report, the picture and any file it writes (fit: only with --write). The
 * commands are src/'s own; web/io_web.c stands behind their I/O (docs/web.md).
 */
#include "memledger_web.h"

#include <emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "io_web.h"
#include "memledger/units.h"

#define MAX_ARGS 96
#define PICTURE  "memledger-picture.svg" /* the --svg file of the text run */

static char *answer_error(int code, const char *msg)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddBoolToObject(a, "ok", 0);
    cJSON_AddNumberToObject(a, "exit", code);
    cJSON_AddStringToObject(a, "error", msg);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

/* The command's error: the last line it printed on standard error (the warnings and the line
 * naming the DeepSpeed file read come before it). */
static char *error_line(int code)
{
    const struct ml_buf *e = mlw_io_stderr();
    size_t end = e->len;
    while (end && e->buf[end - 1] == '\n')
        end--;
    size_t start = end;
    while (start && e->buf[start - 1] != '\n')
        start--;
    size_t n = end - start;
    char line[1024];
    (void)snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), e->buf + start);
    return answer_error(code, line[0] ? line : "memledger: the command failed");
}

/* argv[0] = cmd, then the request's options, then extra (NULL-terminated); copies in args. */
static int make_argv(const char *cmd, const cJSON *opts, const char *const *extra, char **argv)
{
    int n = 0;
    argv[n++] = strdup(cmd);
    const cJSON *o;
    cJSON_ArrayForEach(o, opts)
    {
        if (n < MAX_ARGS - 4 && cJSON_IsString(o))
            argv[n++] = strdup(o->valuestring);
    }
    for (; extra && *extra; extra++)
        argv[n++] = strdup(*extra);
    argv[n] = NULL;
    return n;
}

static void free_argv(char **argv)
{
    for (int i = 0; argv[i]; i++)
        free(argv[i]);
}

static int run(int (*fn)(int, char **), const char *cmd, const cJSON *opts, const char *const *extra)
{
    char *argv[MAX_ARGS + 1];
    int argc = make_argv(cmd, opts, extra, argv);
    mlw_io_clear_output();
    int rc = fn(argc, argv);
    free_argv(argv);
    return rc;
}

/* The request's files as the commands' inputs; its options checked. NULL when fine. */
static char *take_request(const char *cmd, const cJSON *req, const cJSON **opts)
{
    if (!cJSON_IsObject(req))
        return answer_error(ML_EXIT_USAGE, "memledger: the request is not a JSON object");
    *opts = cJSON_GetObjectItemCaseSensitive(req, "argv");
    if (*opts && !cJSON_IsArray(*opts))
        return answer_error(ML_EXIT_USAGE, "memledger: argv is not a list");
    const cJSON *o;
    cJSON_ArrayForEach(o, *opts)
    {
        if (!cJSON_IsString(o))
            return answer_error(ML_EXIT_USAGE, "memledger: argv holds something other than strings");
        /* Help goes to the terminal, which the page does not have. */
        if (!strcmp(o->valuestring, "-h") || !strcmp(o->valuestring, "--help")) {
            char msg[160];
            (void)snprintf(msg, sizeof(msg), "memledger %s: --help is on the command line ('memledger help %s')", cmd,
                           cmd);
            return answer_error(ML_EXIT_USAGE, msg);
        }
    }
    mlw_io_reset();
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
    cJSON_ArrayForEach(o, files)
    {
        if (!cJSON_IsString(o) || !o->string || !mlw_io_add_input(o->string, o->valuestring, strlen(o->valuestring)))
            return answer_error(ML_EXIT_USAGE, "memledger: too many files, or a file that is not text");
    }
    return NULL;
}

/* The text run's picture and written files into the answer. */
static void add_outputs(cJSON *a)
{
    cJSON *files = cJSON_AddArrayToObject(a, "files");
    for (size_t i = 0; i < mlw_io_n_outputs(); i++) {
        const char *name = mlw_io_output_name(i);
        const struct ml_buf *b = mlw_io_output(i);
        if (!strcmp(name, PICTURE)) {
            cJSON_AddStringToObject(a, "svg", b->buf);
            continue;
        }
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", name);
        cJSON_AddStringToObject(f, "text", b->buf);
        cJSON_AddItemToArray(files, f);
    }
}

/* Whether the request's options include opt. */
static bool has_opt(const cJSON *opts, const char *opt)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, opts)
    {
        if (cJSON_IsString(o) && !strcmp(o->valuestring, opt))
            return true;
    }
    return false;
}

/* svg: the command draws a picture (--svg); text_always: run the text pass even when only the
 * JSON is needed (fit needs it for --write only). */
static char *command(int (*fn)(int, char **), const char *cmd, const char *req, size_t len, bool svg, bool text_always)
{
    cJSON *r = cJSON_ParseWithLength(req, len);
    const cJSON *opts = NULL;
    char *bad = take_request(cmd, r, &opts);
    if (bad) {
        cJSON_Delete(r);
        return bad;
    }
    static const char *const json_flag[] = {"--json", NULL};
    static const char *const svg_flag[] = {"--svg", PICTURE, NULL};
    int rc = run(fn, cmd, opts, json_flag);
    if (rc == ML_EXIT_USAGE) {
        cJSON_Delete(r);
        return error_line(rc);
    }
    cJSON *a = cJSON_CreateObject();
    cJSON_AddBoolToObject(a, "ok", 1);
    cJSON_AddItemToObject(a, "json", cJSON_Parse(mlw_io_stdout()->buf));
    if (text_always || has_opt(opts, "--write"))
        rc = run(fn, cmd, opts, svg ? svg_flag : NULL);
    cJSON_AddNumberToObject(a, "exit", rc);
    cJSON_AddStringToObject(a, "text", mlw_io_stdout()->buf);
    cJSON_AddStringToObject(a, "stderr", mlw_io_stderr()->buf);
    add_outputs(a);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    cJSON_Delete(r);
    mlw_io_reset();
    return s;
}

EMSCRIPTEN_KEEPALIVE char *mlw_train(const char *req, size_t len)
{
    return command(cmd_train, "train", req, len, true, true);
}
EMSCRIPTEN_KEEPALIVE char *mlw_infer(const char *req, size_t len)
{
    return command(cmd_infer, "infer", req, len, true, true);
}
EMSCRIPTEN_KEEPALIVE char *mlw_diagnose(const char *req, size_t len)
{
    return command(cmd_diagnose, "diagnose", req, len, true, true);
}
EMSCRIPTEN_KEEPALIVE char *mlw_fit(const char *req, size_t len)
{
    return command(cmd_fit, "fit", req, len, false, false);
}
EMSCRIPTEN_KEEPALIVE char *mlw_models(const char *req, size_t len)
{
    return command(cmd_models, "models", req, len, false, false);
}
EMSCRIPTEN_KEEPALIVE char *mlw_gpus(const char *req, size_t len)
{
    return command(cmd_gpus, "gpus", req, len, false, false);
}

/* The CLI's number formats, for the figures the page shows. */
EMSCRIPTEN_KEEPALIVE char *mlw_fmt_gib(double bytes)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_fmt_gib(&b, bytes > 0 ? (uint64_t)bytes : 0);
    return ml_buf_detach(&b, NULL);
}

EMSCRIPTEN_KEEPALIVE char *mlw_fmt_bytes(double bytes)
{
    struct ml_buf b;
    ml_buf_init(&b, 64);
    ml_fmt_bytes(&b, bytes > 0 ? (uint64_t)bytes : 0);
    return ml_buf_detach(&b, NULL);
}

EMSCRIPTEN_KEEPALIVE const char *mlw_version(void)
{
    return ML_VERSION;
}
