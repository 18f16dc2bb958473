/*
 * The sampling loop end to end on the fake NVML: the timeline records, the exit status passed
 * through, a signal that killed the command, a signal forwarded to it, the stderr tee, the
 * command's process tree, and a command that does not exist.
 */
#include "ml_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memledger/monitor.h"

#define NVML_LIB ML_FAKES_DIR "/nvml/libnvidia-ml.so.1"

struct capture {
    struct ml_buf records;
    struct ml_buf err;
};

static void on_record(void *ctx, const char *line, size_t len)
{
    struct capture *c = ctx;
    assert_true(len > 0 && line[len - 1] == '\n');
    assert_null(memchr(line, '\n', len - 1)); /* one record, one line */
    ml_buf_add(&c->records, line, len);
}

static void on_stderr(void *ctx, uint64_t t, const char *data, size_t n)
{
    (void)t;
    struct capture *c = ctx;
    ml_buf_add(&c->err, data, n);
}

static void script(const char *text)
{
    static char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/ml_fake_loop_%d", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    setenv("FAKE_NVML_SCRIPT", path, 1);
}

static struct ml_watch w;
static struct ml_series series[ML_MON_MAX_DEVICES];

static enum ml_status run(char *const *argv, const char *scr, struct capture *c, struct ml_child_exit *ex)
{
    script(scr);
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.nvml_lib = NVML_LIB;
    static struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_monitor_open(&m, "nvml", &o, &d), ML_OK);
    ml_buf_init(&c->records, 0);
    ml_buf_init(&c->err, 0);
    struct ml_watch_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.argv = argv;
    cfg.interval_ns = 20000000u;
    cfg.tee_stderr = true;
    cfg.proc_root = "/proc";
    cfg.clock = ml_clock_monotonic();
    cfg.hooks.ctx = c;
    cfg.hooks.record = on_record;
    cfg.hooks.stderr_bytes = on_stderr;
    enum ml_status st = ml_watch_run(&cfg, &m, &w, series, ex, &d);
    ml_monitor_close(&m);
    return st;
}

static void release(struct capture *c)
{
    ml_buf_release(&c->records);
    ml_buf_release(&c->err);
}

static void test_exit_status_and_tree(void **state)
{
    (void)state;
    static char a0_0[] = "sh";
    static char a0_1[] = "-c";
    static char a0_2[] = "echo to-stderr >&2; sleep 0.4; exit 7";
    char *argv[] = {a0_0, a0_1, a0_2, NULL};
    struct capture c;
    struct ml_child_exit ex;
    assert_int_equal(run(argv,
                         "count 1\nstep 0 used=1000 procs=5000001:1000\n"
                         "step 0 used=9000 procs=5000001:1000,@child:8000\nstep 0 used=2000 procs=5000001:1000\n",
                         &c, &ex),
                     ML_OK);
    assert_true(ex.started);
    assert_false(ex.signaled);
    assert_int_equal(ex.code, 7);
    assert_string_equal(c.err.buf, "to-stderr\n");
    assert_true(strstr(c.records.buf, "{\"schema\":\"memledger/1\",\"type\":\"start\",") == c.records.buf);
    assert_non_null(strstr(c.records.buf, "\"baseline\":true"));
    assert_non_null(strstr(c.records.buf, "{\"type\":\"spawn\""));
    assert_non_null(strstr(c.records.buf, "\"status\":7"));
    assert_non_null(strstr(c.records.buf, "\"command\":[\"sh\",\"-c\","));
    const struct ml_watch_dev *d = &w.dev[0];
    assert_true(d->has_baseline && d->baseline.used_bytes == 1000);
    assert_true(d->peak.used_bytes == 9000);
    assert_true(d->tree_peak_bytes == 8000); /* @child is the sh we started */
    assert_int_equal(d->n_others_peak, 1);
    assert_int_equal(d->others_peak[0].pid, 5000001);
    assert_string_equal(d->others_peak[0].name, ""); /* no such process here */
    assert_true(w.n_samples >= 3);
    assert_true(series[0].n >= 3);
    release(&c);
}

static void test_killed_by_signal(void **state)
{
    (void)state;
    static char a1_0[] = "sh";
    static char a1_1[] = "-c";
    static char a1_2[] = "kill -KILL $$";
    char *argv[] = {a1_0, a1_1, a1_2, NULL};
    struct capture c;
    struct ml_child_exit ex;
    assert_int_equal(run(argv, "count 1\n", &c, &ex), ML_OK);
    assert_true(ex.signaled);
    assert_int_equal(ex.code, SIGKILL);
    assert_non_null(strstr(c.records.buf, "\"signal\":9"));
    release(&c);
}

static void test_forwarded_signal(void **state)
{
    (void)state;
    /* A helper sends us SIGTERM with kill(2): forwarded to the command, which dies of it. */
    pid_t helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
        kill(getppid(), SIGTERM);
        _exit(0);
    }
    static char a2_0[] = "sleep";
    static char a2_1[] = "5";
    char *argv[] = {a2_0, a2_1, NULL};
    struct capture c;
    struct ml_child_exit ex;
    assert_int_equal(run(argv, "count 1\n", &c, &ex), ML_OK);
    waitpid(helper, NULL, 0);
    assert_true(ex.signaled);
    assert_int_equal(ex.code, SIGTERM);
    assert_int_equal(ex.forwarded_signal, SIGTERM);
    assert_true(ex.t_end_ns < 4000000000u);
    assert_non_null(strstr(c.records.buf, "\"forwarded_signal\":15"));
    release(&c);
}

static void test_not_found(void **state)
{
    (void)state;
    static char a3_0[] = "memledger-no-such-command";
    char *argv[] = {a3_0, NULL};
    struct capture c;
    struct ml_child_exit ex;
    assert_int_equal(run(argv, "count 1\n", &c, &ex), ML_ERR_CHILD);
    assert_false(ex.started);
    assert_int_equal(ex.spawn_errno, ENOENT);
    assert_non_null(strstr(c.records.buf, "\"spawn_error\""));
    release(&c);
}

static void test_errors_recorded_sampling_goes_on(void **state)
{
    (void)state;
    static char a4_0[] = "sleep";
    static char a4_1[] = "0.3";
    char *argv[] = {a4_0, a4_1, NULL};
    struct capture c;
    struct ml_child_exit ex;
    assert_int_equal(run(argv,
                         "count 2\nstep 0 used=100\nstep 1 used=100\nstep 1 fail=15\nstep 1 fail=15\n"
                         "step 1 used=400\n",
                         &c, &ex),
                     ML_OK);
    assert_int_equal(w.dev[1].n_errors, 2);
    assert_non_null(strstr(w.dev[1].first_error, "GPU is lost"));
    assert_true(w.dev[1].peak.used_bytes == 400);
    assert_true(w.dev[0].n_ok >= 3);
    /* One error record for the run of failures, not one per failed reading. */
    const char *e1 = strstr(c.records.buf, "\"type\":\"error\"");
    assert_non_null(e1);
    assert_null(strstr(e1 + 1, "\"type\":\"error\""));
    release(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status_and_tree),
        cmocka_unit_test(test_killed_by_signal),
        cmocka_unit_test(test_forwarded_signal),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_errors_recorded_sampling_goes_on),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/ml_fake_loop_%d", (int)getpid());
    unlink(path);
    return rc;
}
