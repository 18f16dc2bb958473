/*
 * watch.c - run a command and sample GPU memory while it runs (the engine of `memledger watch`).
 *
 * The loop (reference/style.md 5.8): a baseline reading, posix_spawnp (no shell), then poll() on
 * a self-pipe fed by the signal handler and on the command's stderr pipe, waking for each sample
 * at the interval, until the command exits; a last reading. Signals sent to us by another
 * process (kill) are forwarded to the command; those from the terminal (Ctrl-C, hang-up) already
 * reach it through its process group, so forwarding them again would deliver them twice.
 */
#include "memledger/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "i18n.h"
#include "memledger/json.h"

extern char **environ;

/* The one piece of global state: what the signal handler needs. */
static int g_sigpipe_w = -1;
static volatile pid_t g_child = 0;
static volatile sig_atomic_t g_forwarded = 0;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    /* si_code <= 0: sent by a process (SI_USER, SI_QUEUE, SI_TKILL); > 0: by the kernel (the
     * terminal's Ctrl-C or hang-up), which the command has received itself. */
    if (sig != SIGCHLD && g_child > 0 && si && si->si_code <= 0) {
        (void)kill(g_child, sig);
        g_forwarded = sig;
    }
    if (g_sigpipe_w >= 0) {
        unsigned char b = (unsigned char)sig;
        ssize_t r = write(g_sigpipe_w, &b, 1);
        (void)r;
    }
    errno = saved;
}

static const int watched_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
#define N_WATCHED (sizeof(watched_signals) / sizeof(watched_signals[0]))

static int set_cloexec_nonblock(int fd, bool nonblock)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    if (nonblock) {
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -1;
    }
    return 0;
}

/* Everything the loop carries. */
struct run {
    const struct ml_watch_cfg *cfg;
    struct ml_monitor *m;
    struct ml_watch *w;
    struct ml_series *series;
    uint64_t t0;
    uint32_t child;     /* 0 before it starts */
    struct ml_buf line; /* scratch for one record */
    struct ml_proc_mem procs[ML_MON_MAX_PROCS];
    struct ml_sample_proc sprocs[ML_MON_MAX_PROCS];
    bool last_failed[ML_MON_MAX_DEVICES]; /* the previous reading of the device failed */
};

static uint64_t now_rel(const struct run *r)
{
    uint64_t t = r->cfg->clock.now_ns(r->cfg->clock.ctx);
    return t > r->t0 ? t - r->t0 : 0;
}

static void emit(struct run *r)
{
    if (ml_buf_addc(&r->line, '\n') == ML_OK && r->cfg->hooks.record)
        r->cfg->hooks.record(r->cfg->hooks.ctx, r->line.buf, r->line.len);
    ml_buf_reset(&r->line);
}

static void record_start(struct run *r)
{
    struct ml_buf *b = &r->line;
    /* The timeline's first record carries the schema of the whole file (docs/json.md). */
    ml_buf_addf(b, "{\"schema\":\"%s\",\"type\":\"start\",\"memledger\":\"%s\",\"backend\":\"%s\",\"detail\":",
                ML_JSON_SCHEMA, ML_VERSION, r->m->be->name);
    const char *det = r->m->be->describe(r->m->state);
    ml_jsonl_str(b, det, strlen(det));
    ml_buf_addf(b, ",\"interval_ms\":%llu,\"command\":[", (unsigned long long)(r->cfg->interval_ns / 1000000u));
    for (size_t i = 0; r->cfg->argv[i]; i++) {
        if (i)
            ml_buf_addc(b, ',');
        ml_jsonl_str(b, r->cfg->argv[i], strlen(r->cfg->argv[i]));
    }
    ml_buf_adds(b, "],\"devices\":[");
    for (uint32_t i = 0; i < r->m->n_dev; i++) {
        const struct ml_dev_info *d = &r->m->dev[i];
        ml_buf_addf(b, "%s{\"gpu\":%u,\"name\":", i ? "," : "", i);
        ml_jsonl_str(b, d->name, strlen(d->name));
        ml_buf_adds(b, ",\"uuid\":");
        ml_jsonl_str(b, d->uuid, strlen(d->uuid));
        ml_buf_addf(b, ",\"total_bytes\":%llu}", (unsigned long long)d->total_bytes);
    }
    ml_buf_adds(b, "]}");
    emit(r);
}

/* Sample every device once. */
static void sample_all(struct run *r, bool baseline)
{
    uint64_t t = now_rel(r);
    const struct ml_backend *be = r->m->be;
    for (uint32_t dev = 0; dev < r->m->n_dev; dev++) {
        struct ml_diag d;
        ml_diag_init(&d);
        struct ml_mem_reading mem;
        if (be->read_memory(r->m->state, dev, &mem, &d) != ML_OK) {
            ml_watch_add_error(r->w, dev, d.msg);
            if (!r->last_failed[dev]) {
                ml_buf_addf(&r->line, "{\"type\":\"error\",\"t_ms\":%llu,\"gpu\":%u,\"message\":",
                            (unsigned long long)(t / 1000000u), dev);
                ml_jsonl_str(&r->line, d.msg, strlen(d.msg));
                ml_buf_adds(&r->line, "}");
                emit(r);
            }
            r->last_failed[dev] = true;
            continue;
        }
        r->last_failed[dev] = false;
        uint32_t np = 0;
        ml_diag_init(&d);
        bool have_procs = be->read_procs(r->m->state, dev, r->procs, ML_MON_MAX_PROCS, &np, &d) == ML_OK;
        uint64_t tree = 0;
        for (uint32_t i = 0; have_procs && i < np; i++) {
            struct ml_sample_proc *sp = &r->sprocs[i];
            memset(sp, 0, sizeof(*sp));
            sp->p.pid = r->procs[i].pid;
            sp->p.bytes = r->procs[i].used_bytes;
            sp->p.bytes_ok = r->procs[i].used_ok;
            struct ml_proc_info pi;
            bool alive = ml_proc_read(r->cfg->proc_root, sp->p.pid, &pi) == ML_OK;
            if (alive)
                (void)snprintf(sp->p.name, sizeof(sp->p.name), "%s", pi.name);
            /* The walk up starts at the parent just read: /proc/PID/stat once per process. */
            sp->in_tree =
                r->child && (sp->p.pid == r->child ||
                             (alive && sp->p.pid > 1 && ml_proc_descends(r->cfg->proc_root, pi.ppid, r->child)));
            if (sp->in_tree && sp->p.bytes_ok)
                tree += sp->p.bytes;
        }
        ml_watch_add(r->w, dev, t, baseline, &mem, have_procs ? r->sprocs : NULL, have_procs ? np : 0);
        if (r->series)
            ml_series_add(&r->series[dev], t / 1000000u, mem.used_bytes);

        struct ml_buf *b = &r->line;
        ml_buf_addf(b, "{\"type\":\"sample\",\"t_ms\":%llu,\"gpu\":%u", (unsigned long long)(t / 1000000u), dev);
        if (baseline)
            ml_buf_adds(b, ",\"baseline\":true");
        ml_buf_addf(b, ",\"source\":\"%s\"", ml_mem_source_name(mem.source));
        if (mem.valid & ML_MEM_USED_OK)
            ml_buf_addf(b, ",\"used_bytes\":%llu", (unsigned long long)mem.used_bytes);
        if (mem.valid & ML_MEM_TOTAL_OK)
            ml_buf_addf(b, ",\"total_bytes\":%llu", (unsigned long long)mem.total_bytes);
        if (mem.valid & ML_MEM_FREE_OK)
            ml_buf_addf(b, ",\"free_bytes\":%llu", (unsigned long long)mem.free_bytes);
        if (mem.valid & ML_MEM_RESERVED_OK)
            ml_buf_addf(b, ",\"reserved_bytes\":%llu", (unsigned long long)mem.reserved_bytes);
        if (have_procs) {
            ml_buf_addf(b, ",\"tree_bytes\":%llu,\"procs\":[", (unsigned long long)tree);
            for (uint32_t i = 0; i < np; i++) {
                const struct ml_sample_proc *sp = &r->sprocs[i];
                ml_buf_addf(b, "%s{\"pid\":%u,\"name\":", i ? "," : "", sp->p.pid);
                ml_jsonl_str(b, sp->p.name, strlen(sp->p.name));
                if (sp->p.bytes_ok)
                    ml_buf_addf(b, ",\"bytes\":%llu", (unsigned long long)sp->p.bytes);
                ml_buf_addf(b, ",\"tree\":%s}", sp->in_tree ? "true" : "false");
            }
            ml_buf_adds(b, "]");
        }
        ml_buf_adds(b, "}");
        emit(r);
    }
    if (r->m->n_dev)
        r->w->n_samples++;
}

static void forward_stderr(struct run *r, int *fd, bool until_empty)
{
    char buf[65536];
    /* After the command ended, at most 64 chunks: a grandchild that keeps writing to the pipe
     * must not keep us here. */
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n > 0) {
            if (r->cfg->hooks.stderr_bytes)
                r->cfg->hooks.stderr_bytes(r->cfg->hooks.ctx, now_rel(r), buf, (size_t)n);
            if (until_empty)
                continue;
            return;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

static enum ml_status spawn_child(struct run *r, int err_w, pid_t *pid, int *spawn_errno)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ML_ERR_NOMEM;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return ML_ERR_NOMEM;
    }
    sigset_t def, none;
    sigemptyset(&def);
    for (size_t i = 0; i < N_WATCHED; i++)
        sigaddset(&def, watched_signals[i]);
    sigaddset(&def, SIGPIPE);
    sigemptyset(&none);
    int e = posix_spawnattr_setsigdefault(&at, &def);
    if (!e)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (!e && err_w >= 0)
        e = posix_spawn_file_actions_adddup2(&fa, err_w, STDERR_FILENO);
    if (!e)
        e = posix_spawnp(pid, r->cfg->argv[0], &fa, &at, r->cfg->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    *spawn_errno = e;
    return e ? ML_ERR_CHILD : ML_OK;
}

/* The self-pipe of the signal handler and, with tee_stderr, the pipe of the command's stderr. */
static enum ml_status open_pipes(const struct ml_watch_cfg *cfg, int sp[2], int ep[2], struct ml_diag *diag)
{
    if (pipe(sp) != 0 || set_cloexec_nonblock(sp[0], true) || set_cloexec_nonblock(sp[1], true))
        return ml_diag_set(diag, ML_ERR_IO, _("cannot create a pipe: %s"), strerror(errno));
    if (cfg->tee_stderr && (pipe(ep) != 0 || set_cloexec_nonblock(ep[0], true) || set_cloexec_nonblock(ep[1], false)))
        return ml_diag_set(diag, ML_ERR_IO, _("cannot create a pipe: %s"), strerror(errno));
    return ML_OK;
}

/* Handlers first, with the signals blocked (into *prev) until the child's pid is known. */
static void install_handlers(int sigpipe_w, struct sigaction old[N_WATCHED], sigset_t *prev)
{
    sigset_t block;
    sigemptyset(&block);
    for (size_t i = 0; i < N_WATCHED; i++)
        sigaddset(&block, watched_signals[i]);
    (void)sigprocmask(SIG_BLOCK, &block, prev);
    g_sigpipe_w = sigpipe_w;
    g_child = 0;
    g_forwarded = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_WATCHED; i++)
        (void)sigaction(watched_signals[i], &sa, &old[i]);
}

static void restore_handlers(const struct sigaction old[N_WATCHED])
{
    for (size_t i = 0; i < N_WATCHED; i++)
        (void)sigaction(watched_signals[i], &old[i], NULL);
    g_child = 0;
    g_sigpipe_w = -1;
}

/* The first samples, the child started, its spawn (or spawn error) record; signals unblocked. */
static enum ml_status start_child(struct run *r, int err_w, const sigset_t *prev, pid_t *pid, struct ml_child_exit *ex,
                                  struct ml_diag *diag)
{
    record_start(r);
    sample_all(r, true);
    enum ml_status st = spawn_child(r, err_w, pid, &ex->spawn_errno);
    if (st == ML_OK) {
        g_child = *pid;
        r->child = (uint32_t)*pid;
        ex->started = true;
        ex->pid = (uint32_t)*pid;
    } else {
        ml_diag_set(diag, ML_ERR_CHILD, "%s: %s", r->cfg->argv[0], strerror(ex->spawn_errno));
    }
    (void)sigprocmask(SIG_SETMASK, prev, NULL);
    return st;
}

static void record_spawn(struct run *r, enum ml_status st, const struct ml_child_exit *ex, const struct ml_diag *diag)
{
    if (st == ML_OK) {
        ml_buf_addf(&r->line, "{\"type\":\"spawn\",\"t_ms\":%llu,\"pid\":%u}",
                    (unsigned long long)(now_rel(r) / 1000000u), r->child);
        emit(r);
    } else if (ex->spawn_errno) {
        ml_buf_addf(&r->line, "{\"type\":\"spawn_error\",\"t_ms\":%llu,\"message\":",
                    (unsigned long long)(now_rel(r) / 1000000u));
        ml_jsonl_str(&r->line, diag->msg, strlen(diag->msg));
        ml_buf_adds(&r->line, "}");
        emit(r);
    }
}

/* Sample every interval until the child ends, forwarding its stderr and draining the self-pipe. */
static enum ml_status poll_loop(struct run *r, pid_t pid, int sp_r, int *ep_r, int *status, struct ml_diag *diag)
{
    uint64_t interval = r->cfg->interval_ns ? r->cfg->interval_ns : 200000000u;
    uint64_t next = interval;
    for (;;) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid)
            return ML_OK;
        if (got < 0 && errno != EINTR)
            return ml_diag_set(diag, ML_ERR_CHILD, _("lost track of the command: %s"), strerror(errno));
        uint64_t now = now_rel(r);
        if (now >= next) {
            sample_all(r, false);
            next += interval;
            if (next <= now)
                next = now + interval;
            continue;
        }
        int timeout_ms = (int)((next - now + 999999u) / 1000000u);
        struct pollfd pf[2];
        nfds_t nf = 0;
        pf[nf].fd = sp_r;
        pf[nf].events = POLLIN;
        pf[nf++].revents = 0;
        if (*ep_r >= 0) {
            pf[nf].fd = *ep_r;
            pf[nf].events = POLLIN;
            pf[nf++].revents = 0;
        }
        int pr = poll(pf, nf, timeout_ms);
        if (pr < 0 && errno != EINTR)
            return ml_diag_set(diag, ML_ERR_IO, "poll: %s", strerror(errno));
        if (pr > 0 && (pf[0].revents & POLLIN)) {
            unsigned char drain[64];
            while (read(sp_r, drain, sizeof(drain)) > 0) {
            }
        }
        if (pr > 0 && nf > 1 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)))
            forward_stderr(r, ep_r, false);
    }
}

/* The child's end: its status, the last of its stderr, a last sample and the exit record. */
static void finish_child(struct run *r, enum ml_status st, pid_t pid, int status, int *ep_r, struct ml_child_exit *ex)
{
    /* A signal sent before the wait finished is still forwarded by the handler. */
    while (st != ML_OK && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ex->t_end_ns = now_rel(r);
    ex->forwarded_signal = g_forwarded;
    if (WIFSIGNALED(status)) {
        ex->signaled = true;
        ex->code = WTERMSIG(status);
    } else {
        ex->code = WEXITSTATUS(status);
    }
    /* What the command wrote just before it ended; a grandchild that keeps the pipe open does not
     * hold us up (non-blocking read of what is there). */
    if (*ep_r >= 0)
        forward_stderr(r, ep_r, true);
    sample_all(r, false);
    ml_buf_addf(&r->line, "{\"type\":\"exit\",\"t_ms\":%llu,\"pid\":%u,\"%s\":%d",
                (unsigned long long)(ex->t_end_ns / 1000000u), ex->pid, ex->signaled ? "signal" : "status", ex->code);
    if (ex->forwarded_signal)
        ml_buf_addf(&r->line, ",\"forwarded_signal\":%d", (int)ex->forwarded_signal);
    ml_buf_adds(&r->line, "}");
    emit(r);
}

enum ml_status ml_watch_run(const struct ml_watch_cfg *cfg, struct ml_monitor *m, struct ml_watch *w,
                            struct ml_series *series, struct ml_child_exit *ex, struct ml_diag *diag)
{
    memset(ex, 0, sizeof(*ex));
    ml_watch_init(w, m);
    if (series)
        for (uint32_t i = 0; i < w->n_dev; i++)
            series[i].n = 0;
    struct run *r = calloc(1, sizeof(*r));
    if (!r)
        return ml_diag_set(diag, ML_ERR_NOMEM, "%s", ml_status_str(ML_ERR_NOMEM));
    r->cfg = cfg;
    r->m = m;
    r->w = w;
    r->series = series;
    ml_buf_init(&r->line, (size_t)1 << 20);
    r->t0 = cfg->clock.now_ns(cfg->clock.ctx);

    int sp[2] = {-1, -1}, ep[2] = {-1, -1};
    enum ml_status st = open_pipes(cfg, sp, ep, diag);
    struct sigaction old[N_WATCHED];
    sigset_t prev;
    bool installed = st == ML_OK;
    pid_t pid = 0;
    if (installed) {
        install_handlers(sp[1], old, &prev);
        st = start_child(r, ep[1], &prev, &pid, ex, diag);
    }
    if (ep[1] >= 0) {
        close(ep[1]);
        ep[1] = -1;
    }
    record_spawn(r, st, ex, diag);
    int status = 0;
    if (st == ML_OK)
        st = poll_loop(r, pid, sp[0], &ep[0], &status, diag);
    if (ex->started)
        finish_child(r, st, pid, status, &ep[0], ex);
    if (installed)
        restore_handlers(old);
    for (int i = 0; i < 2; i++) {
        if (sp[i] >= 0)
            close(sp[i]);
        if (ep[i] >= 0)
            close(ep[i]);
    }
    ml_buf_release(&r->line);
    free(r);
    return st;
}
