/*
 * report.c - validation_report: run `memledger train` on every expressible case of
 * validation/cases.tsv and compare its prediction with the measured peak memory.
 *
 *   validation_report MEMLEDGER CASES.tsv OUT.md [--check MEDIAN_PCT P90_PCT]
 *
 * For each case with args other than "-": spawn MEMLEDGER train ARGS --json (posix_spawn, no
 * shell; args split on spaces; a token starting with "models/" is taken relative to the folder
 * of CASES.tsv), pick the figure matching the measurement (max_allocated -> peak allocated,
 * reserved -> peak reserved, nvidia-smi -> device used, unknown -> peak reserved, flagged), and
 * compute the signed error (predicted - measured) / measured in percent. Rows whose expected
 * value is oom / fit / fit_limit are verdict checks: oom must not fit, fit and fit_limit must.
 *
 * The Markdown report goes to stdout and, atomically (tmp + rename), to OUT.md. No timestamps,
 * no absolute paths: the same inputs give the same bytes. With --check, exit 1 when the
 * high-confidence median or 90th percentile of |error| exceeds the given percentages, or when
 * a case could not be run. Exit 2 on a usage or I/O error.
 *
 * Statistics: median = mean of the two middle values for an even count; p90 = nearest rank,
 * the value at rank ceil(0.9 n) of the sorted |errors|. Plain double arithmetic (a report).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GIB 1073741824.0
#define MAX_ARGS 128
#define NCOLS 7

#ifdef __GNUC__
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* ---- a growable byte buffer -------------------------------------------------------------- */

struct buf {
    char *p;
    size_t n, cap;
};

static void die(const char *what)
{
    fprintf(stderr, "validation_report: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            die("out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void PRINTF_LIKE(2, 3) bprintf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) {
        fprintf(stderr, "validation_report: formatting failed\n");
        exit(2);
    }
    char *tmp = malloc((size_t)need + 1);
    if (!tmp)
        die("out of memory");
    va_start(ap, fmt);
    (void)vsnprintf(tmp, (size_t)need + 1, fmt, ap);
    va_end(ap);
    buf_add(b, tmp, (size_t)need);
    free(tmp);
}

/* A table cell: '|' escaped, newlines flattened. */
static void bcell(struct buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            buf_add(b, "\\|", 2);
        else if (*s == '\n' || *s == '\r' || *s == '\t')
            buf_add(b, " ", 1);
        else
            buf_add(b, s, 1);
    }
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p)
        die("out of memory");
    memcpy(p, s, n);
    return p;
}

/* ---- cases ---------------------------------------------------------------------------------- */

enum expect { EXP_MEASURED, EXP_OOM, EXP_FIT, EXP_FIT_LIMIT };

struct kase {
    char *f[NCOLS]; /* id, group, confidence, measure_kind, expected, args, why */
    enum expect exp;
    double measured; /* GiB, EXP_MEASURED only */
    bool expressible;
    /* results */
    bool ran;        /* memledger ran and its JSON was read */
    char error[320]; /* why it did not */
    double pred;     /* GiB: the figure matching measure_kind */
    double err;      /* signed error, percent (EXP_MEASURED) */
    double device, capacity; /* GiB */
    bool fits;
    char phase[40];
    int warnings;
    bool infer;      /* an `infer` case (args start with "infer"): kept out of the training statistics */
};

#define C_ID 0
#define C_GROUP 1
#define C_CONF 2
#define C_KIND 3
#define C_EXP 4
#define C_ARGS 5
#define C_WHY 6

static const char *figure_key(const char *kind, bool *flag)
{
    *flag = false;
    if (!strcmp(kind, "max_allocated"))
        return "peak_allocated_bytes";
    if (!strcmp(kind, "reserved"))
        return "peak_reserved_bytes";
    if (!strcmp(kind, "nvidia-smi"))
        return "device_used_bytes";
    if (!strcmp(kind, "kv_cache") || !strcmp(kind, "weights"))
        return "serving";
    *flag = true; /* unknown: compare with peak reserved and say so */
    return "peak_reserved_bytes";
}

static bool known_kind(const char *kind)
{
    return !strcmp(kind, "max_allocated") || !strcmp(kind, "reserved") || !strcmp(kind, "nvidia-smi") ||
           !strcmp(kind, "unknown") || !strcmp(kind, "kv_cache") || !strcmp(kind, "weights");
}

static struct kase *read_cases(const char *path, size_t *n_out)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        die(path);
    struct kase *v = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    unsigned lineno = 0;
    while ((len = getline(&line, &lcap, fp)) != -1) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#' || !strncmp(line, "id\t", 3))
            continue;
        struct kase k;
        memset(&k, 0, sizeof(k));
        char *s = line;
        int c = 0;
        for (; c < NCOLS; c++) {
            char *tab = strchr(s, '\t');
            if (tab)
                *tab = '\0';
            k.f[c] = xstrdup(s);
            if (!tab) {
                c++;
                break;
            }
            s = tab + 1;
        }
        if (c != NCOLS) {
            fprintf(stderr, "validation_report: %s:%u: expected %d tab-separated columns\n", path, lineno, NCOLS);
            exit(2);
        }
        if (!known_kind(k.f[C_KIND])) {
            fprintf(stderr, "validation_report: %s:%u: unknown measure_kind '%s'\n", path, lineno, k.f[C_KIND]);
            exit(2);
        }
        const char *e = k.f[C_EXP];
        if (!strcmp(e, "oom"))
            k.exp = EXP_OOM;
        else if (!strcmp(e, "fit"))
            k.exp = EXP_FIT;
        else if (!strcmp(e, "fit_limit"))
            k.exp = EXP_FIT_LIMIT;
        else {
            char *end;
            errno = 0;
            k.exp = EXP_MEASURED;
            k.measured = strtod(e, &end);
            if (errno || end == e || *end || !(k.measured > 0)) {
                fprintf(stderr, "validation_report: %s:%u: expected '%s' is not a GiB value or oom/fit/fit_limit\n",
                        path, lineno, e);
                exit(2);
            }
        }
        k.expressible = strcmp(k.f[C_ARGS], "-") != 0;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            struct kase *nv = realloc(v, cap * sizeof(*v));
            if (!nv)
                die("out of memory");
            v = nv;
        }
        v[n++] = k;
    }
    if (ferror(fp))
        die(path);
    free(line);
    fclose(fp);
    *n_out = n;
    return v;
}

/* ---- running memledger ------------------------------------------------------------------- */

/* The environment for the child: ours, with the locale pinned to C (stable messages). */
static char **child_env(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    if (!env)
        die("out of memory");
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (!strncmp(e, "LC_ALL=", 7) || !strncmp(e, "LANGUAGE=", 9) || !strncmp(e, "LANG=", 5))
            continue;
        env[j++] = environ[i];
    }
    static char lc_all[] = "LC_ALL=C";
    env[j++] = lc_all;
    env[j] = NULL;
    return env;
}

static void cloexec_pipe(int fd[2])
{
    if (pipe(fd) != 0)
        die("pipe");
    for (int i = 0; i < 2; i++)
        if (fcntl(fd[i], F_SETFD, FD_CLOEXEC) != 0)
            die("fcntl");
}

/*
 * Run argv, collecting stdout and stderr. Returns the exit status (0-255), or -1 when the
 * child could not be started or died from a signal (the reason in why).
 */
static int run_child(char *const argv[], char **envp, struct buf *out, struct buf *err, char *why, size_t whyn)
{
    int po[2], pe[2];
    cloexec_pipe(po);
    cloexec_pipe(pe);
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        die("posix_spawn_file_actions_init");
    int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    if (rc) {
        errno = rc;
        die("posix_spawn_file_actions");
    }
    pid_t pid;
    rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    if (rc != 0) {
        close(po[0]);
        close(pe[0]);
        (void)snprintf(why, whyn, "cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    struct pollfd pf[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    struct buf *dst[2] = {out, err};
    int open_fds = 2;
    char chunk[65536];
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t r = read(pf[i].fd, chunk, sizeof(chunk));
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
                continue;
            }
            buf_add(dst[i], chunk, (size_t)r);
        }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    (void)snprintf(why, whyn, "%s killed by signal %d", argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

static bool json_number(const cJSON *obj, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v))
        return false;
    *out = v->valuedouble;
    return true;
}

/* The first line of a message, for the report. */
static void first_line(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    while (src[i] && src[i] != '\n' && i + 1 < n) {
        dst[i] = src[i];
        i++;
    }
    dst[i] = '\0';
}

static void run_case(struct kase *k, const char *memledger, const char *case_dir, char **envp)
{
    char *args = xstrdup(k->f[C_ARGS]);
    char *argv[MAX_ARGS + 4];
    char *owned[MAX_ARGS];
    int n_owned = 0, argc = 0;
    char *exe = xstrdup(memledger); /* posix_spawn's argv is char *const[] */
    argv[argc++] = exe;
    static char train[] = "train", json[] = "--json";
    char *save = NULL;
    char *first = strtok_r(args, " ", &save);
    if (first && !strcmp(first, "infer")) {
        k->infer = true;
        argv[argc++] = first;
        first = strtok_r(NULL, " ", &save);
    } else {
        argv[argc++] = train;
    }
    for (char *t = first; t; t = strtok_r(NULL, " ", &save)) {
        if (argc >= MAX_ARGS) {
            (void)snprintf(k->error, sizeof(k->error), "more than %d arguments", MAX_ARGS);
            goto out;
        }
        if (!strncmp(t, "models/", 7)) {
            size_t len = strlen(case_dir) + 1 + strlen(t) + 1;
            char *p = malloc(len);
            if (!p)
                die("out of memory");
            (void)snprintf(p, len, "%s/%s", case_dir, t);
            owned[n_owned++] = p;
            t = p;
        }
        argv[argc++] = t;
    }
    argv[argc++] = json;
    argv[argc] = NULL;

    struct buf out = {0}, err = {0};
    char why[256] = "";
    int rc = run_child(argv, envp, &out, &err, why, sizeof(why));
    if (rc != 0) {
        char msg[200];
        first_line(msg, sizeof(msg), err.p ? err.p : "");
        if (rc < 0)
            (void)snprintf(k->error, sizeof(k->error), "%s", why);
        else
            (void)snprintf(k->error, sizeof(k->error), "exit %d: %s", rc, msg[0] ? msg : "(no message)");
        free(out.p);
        free(err.p);
        goto out;
    }
    cJSON *root = cJSON_Parse(out.p ? out.p : "");
    free(out.p);
    free(err.p);
    const cJSON *pg = root ? cJSON_GetObjectItemCaseSensitive(root, "per_gpu") : NULL;
    const cJSON *gpu = root ? cJSON_GetObjectItemCaseSensitive(root, "gpu") : NULL;
    bool flag;
    const char *key = figure_key(k->f[C_KIND], &flag);
    double fig, dev, cap = 0;
    const cJSON *fits = pg ? cJSON_GetObjectItemCaseSensitive(pg, "fits") : NULL;
    /* Serving start-up figures (vLLM logs): the KV pool and the weights. */
    const cJSON *from = pg;
    if (!strcmp(k->f[C_KIND], "kv_cache")) {
        from = root ? cJSON_GetObjectItemCaseSensitive(root, "kv_cache") : NULL;
        key = "bytes";
    } else if (!strcmp(k->f[C_KIND], "weights")) {
        from = root ? cJSON_GetObjectItemCaseSensitive(root, "serving") : NULL;
        key = "weights_bytes";
    }
    if (!pg || !from || !json_number(from, key, &fig) || !json_number(pg, "device_used_bytes", &dev) ||
        !cJSON_IsBool(fits)) {
        (void)snprintf(k->error, sizeof(k->error), "output is not the expected JSON (per_gpu.%s, fits)", key);
        cJSON_Delete(root);
        goto out;
    }
    if (gpu)
        (void)json_number(gpu, "capacity_bytes", &cap);
    k->pred = fig / GIB;
    k->device = dev / GIB;
    k->capacity = cap / GIB;
    k->fits = cJSON_IsTrue(fits);
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(pg, "peak_phase");
    (void)snprintf(k->phase, sizeof(k->phase), "%s", cJSON_IsString(ph) ? ph->valuestring : "?");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "warnings");
    k->warnings = cJSON_IsArray(w) ? cJSON_GetArraySize(w) : 0;
    if (k->exp == EXP_MEASURED)
        k->err = 100.0 * (k->pred - k->measured) / k->measured;
    k->ran = true;
    cJSON_Delete(root);
out:
    for (int i = 0; i < n_owned; i++)
        free(owned[i]);
    free(exe);
    free(args);
}

/* ---- statistics --------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stats {
    size_t n;
    double median, p90, bias; /* bias: median signed error */
};

static double median_sorted(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Over the measured cases that ran and satisfy the filter (group, or high confidence only). */
/* scope: 0 = training cases, 1 = inference cases, 2 = both (per-group rows). */
static struct stats compute_scoped(const struct kase *v, size_t n, const char *group, bool high_only, int scope)
{
    struct stats s = {0, 0, 0, 0};
    double *abs_e = malloc((n ? n : 1) * sizeof(double));
    double *sig_e = malloc((n ? n : 1) * sizeof(double));
    if (!abs_e || !sig_e)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        const struct kase *k = &v[i];
        if (!k->ran || k->exp != EXP_MEASURED)
            continue;
        if (group && strcmp(k->f[C_GROUP], group))
            continue;
        if (high_only && strcmp(k->f[C_CONF], "high"))
            continue;
        if ((scope == 0 && k->infer) || (scope == 1 && !k->infer))
            continue;
        abs_e[s.n] = fabs(k->err);
        sig_e[s.n] = k->err;
        s.n++;
    }
    if (s.n) {
        qsort(abs_e, s.n, sizeof(double), cmp_double);
        qsort(sig_e, s.n, sizeof(double), cmp_double);
        s.median = median_sorted(abs_e, s.n);
        size_t rank = (s.n * 9 + 9) / 10; /* ceil(0.9 n), 1-based */
        s.p90 = abs_e[rank - 1];
        s.bias = median_sorted(sig_e, s.n);
    }
    free(abs_e);
    free(sig_e);
    return s;
}

static struct stats compute(const struct kase *v, size_t n, const char *group, bool high_only)
{
    return compute_scoped(v, n, group, high_only, group ? 2 : 0);
}

struct group_row {
    const char *name;
    struct stats s;
};

static int cmp_group(const void *a, const void *b)
{
    const struct group_row *x = a, *y = b;
    if (x->s.median != y->s.median)
        return x->s.median < y->s.median ? 1 : -1; /* worst first */
    return strcmp(x->name, y->name);
}

/* ---- the report ------------------------------------------------------------------------------ */

static const char *basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void write_atomic(const char *path, const struct buf *b)
{
    size_t len = strlen(path) + 5;
    char *tmp = malloc(len);
    if (!tmp)
        die("out of memory");
    (void)snprintf(tmp, len, "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    if (!fp)
        die(tmp);
    if ((b->n && fwrite(b->p, 1, b->n, fp) != b->n) || fflush(fp) != 0 || fsync(fileno(fp)) != 0) {
        int e = errno;
        fclose(fp);
        unlink(tmp);
        errno = e;
        die(tmp);
    }
    if (fclose(fp) != 0) {
        unlink(tmp);
        die(tmp);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        die(path);
    }
    free(tmp);
}

static void stats_row(struct buf *b, const char *label, struct stats s)
{
    if (s.n)
        bprintf(b, "| %s | %zu | %.1f | %.1f | %+.1f |\n", label, s.n, s.median, s.p90, s.bias);
    else
        bprintf(b, "| %s | 0 | - | - | - |\n", label);
}

static void usage(void)
{
    fprintf(stderr, "usage: validation_report MEMLEDGER CASES.tsv OUT.md [--check MEDIAN_PCT P90_PCT]\n");
    exit(2);
}

static double parse_pct(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0)) {
        fprintf(stderr, "validation_report: '%s' is not a percentage\n", s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 7)
        usage();
    bool check = false;
    double ceil_med = 0, ceil_p90 = 0;
    if (argc == 7) {
        if (strcmp(argv[4], "--check"))
            usage();
        check = true;
        ceil_med = parse_pct(argv[5]);
        ceil_p90 = parse_pct(argv[6]);
    }
    const char *memledger = argv[1], *cases_path = argv[2], *out_path = argv[3];

    char *case_dir;
    const char *slash = strrchr(cases_path, '/');
    if (slash) {
        size_t dl = (size_t)(slash - cases_path);
        case_dir = malloc(dl + 1);
        if (!case_dir)
            die("out of memory");
        memcpy(case_dir, cases_path, dl);
        case_dir[dl] = '\0';
        if (dl == 0) {
            free(case_dir);
            case_dir = xstrdup("/");
        }
    } else {
        case_dir = xstrdup(".");
    }

    size_t n;
    struct kase *v = read_cases(cases_path, &n);
    char **envp = child_env();
    size_t n_expr = 0, n_err = 0, n_meas = 0, n_verdict = 0, n_agree = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].expressible)
            continue;
        n_expr++;
        run_case(&v[i], memledger, case_dir, envp);
        if (!v[i].ran)
            n_err++;
        else if (v[i].exp == EXP_MEASURED)
            n_meas++;
        else {
            n_verdict++;
            bool want_fit = v[i].exp != EXP_OOM;
            if (v[i].fits == want_fit)
                n_agree++;
        }
    }
    free(envp);

    struct buf b = {0};
    bprintf(&b, "# memledger train: validation against measured memory\n\n");
    bprintf(&b, "Generated by `validation_report` from `%s` (regenerate with "
                "`cmake --build build --target validation-report`); do not edit by hand.\n\n",
            basename_of(cases_path));
    bprintf(&b, "Cases: %zu training records, %zu expressed as `memledger train` arguments, %zu not "
                "expressible. Of the expressed: %zu measured, %zu pass/fail (verdict) checks, %zu failed to run.\n\n",
            n, n_expr, n - n_expr, n_meas, n_verdict, n_err);
    bprintf(&b, "Error = (predicted - measured) / measured. Figure compared: `max_allocated` -> "
                "`per_gpu.peak_allocated_bytes`, `reserved` -> `per_gpu.peak_reserved_bytes`, `nvidia-smi` -> "
                "`per_gpu.device_used_bytes`, `unknown` -> `per_gpu.peak_reserved_bytes` (flag U). "
                "Median of an even count is the mean of the middle two; p90 is the nearest-rank value.\n\n");

    struct stats all = compute(v, n, NULL, false), high = compute(v, n, NULL, true);
    bprintf(&b, "## Summary: |error| in percent\n\n");
    bprintf(&b, "| set | n | median | p90 | median signed |\n|---|---:|---:|---:|---:|\n");
    stats_row(&b, "all measured cases", all);
    stats_row(&b, "high confidence", high);
    struct stats inf = compute_scoped(v, n, NULL, false, 1);
    if (inf.n)
        stats_row(&b, "inference (memledger infer: vLLM weights / KV pool, generate peaks)", inf);
    bprintf(&b, "\nTraining statistics (the first two rows, and the ceilings `make check` enforces) "
                "cover `memledger train` cases only. Verdict checks agreeing: %zu of %zu.\n\n", n_agree, n_verdict);

    /* Per-group statistics, worst median first. */
    struct group_row *g = calloc(n ? n : 1, sizeof(*g));
    if (!g)
        die("out of memory");
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].ran || v[i].exp != EXP_MEASURED)
            continue;
        bool seen = false;
        for (size_t j = 0; j < ng && !seen; j++)
            seen = !strcmp(g[j].name, v[i].f[C_GROUP]);
        if (!seen) {
            g[ng].name = v[i].f[C_GROUP];
            g[ng].s = compute(v, n, g[ng].name, false);
            ng++;
        }
    }
    qsort(g, ng, sizeof(*g), cmp_group);
    bprintf(&b, "## Per group (worst median |error| first)\n\n");
    bprintf(&b, "| group | n | median | p90 | median signed |\n|---|---:|---:|---:|---:|\n");
    for (size_t j = 0; j < ng; j++)
        stats_row(&b, g[j].name, g[j].s);
    free(g);

    bprintf(&b, "\n## Measured cases\n\n");
    bprintf(&b, "| id | group | confidence | kind | measured GiB | predicted GiB | error %% | peak phase | flags |\n"
                "|---|---|---|---|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct kase *k = &v[i];
        if (!k->ran || k->exp != EXP_MEASURED)
            continue;
        bool flag;
        (void)figure_key(k->f[C_KIND], &flag);
        char flags[8] = "";
        if (flag)
            strcat(flags, "U");
        if (k->warnings)
            strcat(flags, "W");
        bprintf(&b, "| ");
        bcell(&b, k->f[C_ID]);
        bprintf(&b, " | ");
        bcell(&b, k->f[C_GROUP]);
        bprintf(&b, " | ");
        bcell(&b, k->f[C_CONF]);
        bprintf(&b, " | ");
        bcell(&b, k->f[C_KIND]);
        bprintf(&b, " | %.3f | %.3f | %+.1f | %s | %s |\n", k->measured, k->pred, k->err, k->phase, flags);
    }
    bprintf(&b, "\nFlags: U = the source does not say which figure it measured (compared with peak reserved); "
                "W = memledger warned that part of the setup is not modelled (see `why` in cases.tsv).\n\n");

    bprintf(&b, "## Pass/fail (verdict) cases\n\n");
    bprintf(&b, "| id | group | confidence | expected | predicted device GiB | capacity GiB | memledger | agrees |\n"
                "|---|---|---|---|---:|---:|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct kase *k = &v[i];
        if (!k->ran || k->exp == EXP_MEASURED)
            continue;
        bool want_fit = k->exp != EXP_OOM;
        bprintf(&b, "| ");
        bcell(&b, k->f[C_ID]);
        bprintf(&b, " | ");
        bcell(&b, k->f[C_GROUP]);
        bprintf(&b, " | ");
        bcell(&b, k->f[C_CONF]);
        bprintf(&b, " | %s | %.3f | %.3f | %s | %s |\n", k->f[C_EXP], k->device, k->capacity,
                k->fits ? "fits" : "does not fit", k->fits == want_fit ? "yes" : "**no**");
    }
    bprintf(&b, "\n`oom` must not fit; `fit` and `fit_limit` (the largest setting that fit) must fit.\n\n");

    if (n_err) {
        bprintf(&b, "## Cases memledger could not run (%zu)\n\n| id | group | error |\n|---|---|---|\n", n_err);
        for (size_t i = 0; i < n; i++) {
            if (!v[i].expressible || v[i].ran)
                continue;
            bprintf(&b, "| ");
            bcell(&b, v[i].f[C_ID]);
            bprintf(&b, " | ");
            bcell(&b, v[i].f[C_GROUP]);
            bprintf(&b, " | ");
            bcell(&b, v[i].error);
            bprintf(&b, " |\n");
        }
        bprintf(&b, "\n");
    }

    bprintf(&b, "## Not expressible (%zu of %zu)\n\n| id | group | confidence | reason |\n|---|---|---|---|\n",
            n - n_expr, n);
    for (size_t i = 0; i < n; i++) {
        if (v[i].expressible)
            continue;
        bprintf(&b, "| ");
        bcell(&b, v[i].f[C_ID]);
        bprintf(&b, " | ");
        bcell(&b, v[i].f[C_GROUP]);
        bprintf(&b, " | ");
        bcell(&b, v[i].f[C_CONF]);
        bprintf(&b, " | ");
        bcell(&b, v[i].f[C_WHY]);
        bprintf(&b, " |\n");
    }

    if (b.n && fwrite(b.p, 1, b.n, stdout) != b.n)
        die("stdout");
    if (fflush(stdout) != 0)
        die("stdout");
    write_atomic(out_path, &b);

    int rc = 0;
    if (check) {
        if (high.n == 0) {
            fprintf(stderr, "validation_report: check failed: no high-confidence case ran\n");
            rc = 1;
        }
        if (high.median > ceil_med) {
            fprintf(stderr, "validation_report: check failed: high-confidence median |error| %.1f%% > ceiling %.1f%%\n",
                    high.median, ceil_med);
            rc = 1;
        }
        if (high.p90 > ceil_p90) {
            fprintf(stderr, "validation_report: check failed: high-confidence p90 |error| %.1f%% > ceiling %.1f%%\n",
                    high.p90, ceil_p90);
            rc = 1;
        }
        if (n_err) {
            fprintf(stderr, "validation_report: check failed: %zu case(s) could not be run\n", n_err);
            rc = 1;
        }
        if (!rc)
            fprintf(stderr, "validation_report: check passed: high-confidence median %.1f%% <= %.1f%%, p90 %.1f%% <= %.1f%%\n",
                    high.median, ceil_med, high.p90, ceil_p90);
    }

    free(b.p);
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < NCOLS; c++)
            free(v[i].f[c]);
    free(v);
    free(case_dir);
    return rc;
}
