/*
 * The sampler's bookkeeping with made-up readings: baseline, device peak, the command's
 * process-tree peak, the other processes at the start and at the peak; the capped series;
 * the timeline's JSON strings; the plot; reading /proc.
 */
#include "ml_test.h"

#include <sys/stat.h>
#include <unistd.h>

#include "memledger/monitor.h"

static struct ml_mem_reading rd(uint64_t used)
{
    struct ml_mem_reading r;
    memset(&r, 0, sizeof(r));
    r.total_bytes = 1000;
    r.used_bytes = used;
    r.valid = ML_MEM_TOTAL_OK | ML_MEM_USED_OK;
    r.source = ML_MEM_SRC_NVML_V2;
    return r;
}

static struct ml_sample_proc sp(uint32_t pid, uint64_t bytes, bool tree)
{
    struct ml_sample_proc p;
    memset(&p, 0, sizeof(p));
    p.p.pid = pid;
    p.p.bytes = bytes;
    p.p.bytes_ok = true;
    p.in_tree = tree;
    (void)snprintf(p.p.name, sizeof(p.p.name), "p%u", pid);
    return p;
}

static void test_peaks(void **state)
{
    (void)state;
    struct ml_monitor m;
    memset(&m, 0, sizeof(m));
    m.n_dev = 2;
    static struct ml_watch w;
    ml_watch_init(&w, &m);
    struct ml_mem_reading r = rd(100);
    struct ml_sample_proc base[2] = {sp(10, 60, false), sp(11, 40, false)};
    ml_watch_add(&w, 0, 0, true, &r, base, 2);
    r = rd(300);
    struct ml_sample_proc s1[3] = {sp(10, 60, false), sp(11, 40, false), sp(20, 200, true)};
    ml_watch_add(&w, 0, 1000, false, &r, s1, 3);
    r = rd(700);
    struct ml_sample_proc s2[3] = {sp(10, 60, false), sp(20, 500, true), sp(21, 100, true)};
    ml_watch_add(&w, 0, 2000, false, &r, s2, 3);
    r = rd(700); /* a tie keeps the first peak */
    ml_watch_add(&w, 0, 3000, false, &r, s2, 2);
    r = rd(200);
    ml_watch_add(&w, 0, 4000, false, &r, NULL, 0);
    const struct ml_watch_dev *d = &w.dev[0];
    assert_true(d->has_baseline && d->baseline.used_bytes == 100);
    assert_true(d->has_peak && d->peak.used_bytes == 700 && d->peak_t_ns == 2000);
    assert_true(d->procs_ok && d->tree_peak_bytes == 600 && d->tree_peak_t_ns == 2000);
    assert_int_equal(d->n_others_start, 2);
    assert_int_equal(d->others_start[0].pid, 10); /* largest first */
    assert_int_equal(d->n_others_peak, 1);
    assert_int_equal(d->others_peak[0].pid, 10);
    assert_int_equal(d->n_ok, 5);
    ml_watch_add_error(&w, 1, "first");
    ml_watch_add_error(&w, 1, "second");
    assert_int_equal(w.dev[1].n_errors, 2);
    assert_string_equal(w.dev[1].first_error, "first");
    assert_false(w.dev[1].has_peak);
    ml_watch_add_error(&w, 9, "out of range is ignored");
}

static void test_others_capped_and_sorted(void **state)
{
    (void)state;
    struct ml_monitor m;
    memset(&m, 0, sizeof(m));
    m.n_dev = 1;
    static struct ml_watch w;
    ml_watch_init(&w, &m);
    struct ml_sample_proc many[40];
    for (uint32_t i = 0; i < 40; i++)
        many[i] = sp(100 + i, (uint64_t)(i * 7 % 40), false);
    struct ml_mem_reading r = rd(10);
    ml_watch_add(&w, 0, 0, true, &r, many, 40);
    assert_int_equal(w.dev[0].n_others_start, ML_MON_MAX_OTHERS);
    for (uint32_t i = 1; i < ML_MON_MAX_OTHERS; i++)
        assert_true(w.dev[0].others_start[i - 1].bytes >= w.dev[0].others_start[i].bytes);
    assert_true(w.dev[0].others_start[0].bytes == 39);
}

static void test_series_halves_keeping_peaks(void **state)
{
    (void)state;
    static struct ml_series s;
    memset(&s, 0, sizeof(s));
    for (uint32_t i = 0; i < ML_SERIES_MAX + 10; i++)
        ml_series_add(&s, i, i == 1001 ? 999999 : i % 50);
    assert_true(s.n <= ML_SERIES_MAX);
    assert_true(s.n == ML_SERIES_MAX / 2 + 10);
    bool found = false;
    for (uint32_t i = 0; i < s.n; i++)
        found = found || (s.used[i] == 999999 && s.t_ms[i] == 1001);
    assert_true(found);
}

static void test_jsonl_str(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    const char in[] = "a\"b\\c\n\x01\xff\xc3\xa9";
    assert_int_equal(ml_jsonl_str(&b, in, sizeof(in) - 1), ML_OK);
    assert_string_equal(b.buf, "\"a\\\"b\\\\c\\u000a\\u0001\\ufffd\xc3\xa9\"");
    ml_buf_release(&b);
}

static void test_svg(void **state)
{
    (void)state;
    struct ml_monitor m;
    memset(&m, 0, sizeof(m));
    m.n_dev = 1;
    (void)snprintf(m.dev[0].name, sizeof(m.dev[0].name), "A<B>");
    static struct ml_watch w;
    ml_watch_init(&w, &m);
    static struct ml_series s[1];
    memset(s, 0, sizeof(s));
    for (uint64_t t = 0; t <= 10; t++) {
        struct ml_mem_reading r = rd(t == 6 ? 900 : 100 * t % 800);
        r.total_bytes = (uint64_t)80 << 30;
        r.used_bytes *= (uint64_t)1 << 26;
        ml_watch_add(&w, 0, t * 1000000000u, t == 0, &r, NULL, 0);
        ml_series_add(&s[0], t * 1000, r.used_bytes);
    }
    struct ml_buf a, b;
    ml_buf_init(&a, 0);
    ml_buf_init(&b, 0);
    assert_int_equal(ml_watch_svg(&w, s, "run & plot", &a), ML_OK);
    assert_int_equal(ml_watch_svg(&w, s, "run & plot", &b), ML_OK);
    assert_string_equal(a.buf, b.buf); /* deterministic */
    assert_non_null(strstr(a.buf, "<svg "));
    assert_non_null(strstr(a.buf, "run &amp; plot"));
    assert_non_null(strstr(a.buf, "GPU 0 A&lt;B&gt;"));
    assert_non_null(strstr(a.buf, "<circle"));
    assert_non_null(strstr(a.buf, "GPU 0 peak 56.25 GiB at 6.0 s"));
    assert_non_null(strstr(a.buf, "</svg>\n"));
    ml_buf_release(&a);
    ml_buf_release(&b);
}

static void put(const char *dir, const char *pid, const char *stat)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, pid);
    mkdir(p, 0755);
    (void)snprintf(p, sizeof(p), "%s/%s/stat", dir, pid);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(stat, f);
    fclose(f);
}

static void test_proc(void **state)
{
    (void)state;
    char dir[] = "/tmp/ml_fake_proc_XXXXXX";
    assert_non_null(mkdtemp(dir));
    put(dir, "100", "100 (torchrun) S 1 100 100 0 -1\n");
    put(dir, "200", "200 (python) S 100 100 100 0 -1\n");
    put(dir, "300", "300 (pt_main (x) y) R 200 100 100 0 -1\n");
    put(dir, "400", "400 (other) S 1 400 400 0 -1\n");
    struct ml_proc_info pi;
    assert_int_equal(ml_proc_read(dir, 300, &pi), ML_OK);
    assert_string_equal(pi.name, "pt_main (x) y");
    assert_int_equal(pi.ppid, 200);
    assert_int_equal(ml_proc_read(dir, 999, &pi), ML_ERR_NOTFOUND);
    assert_true(ml_proc_descends(dir, 300, 100));
    assert_true(ml_proc_descends(dir, 100, 100));
    assert_false(ml_proc_descends(dir, 400, 100));
    assert_false(ml_proc_descends(dir, 999, 100));
    assert_false(ml_proc_descends(dir, 300, 0));
    /* The real /proc: we descend from our parent. */
    assert_true(ml_proc_descends("/proc", (uint32_t)getpid(), (uint32_t)getppid()));
    char cmd[600];
    (void)snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peaks),
        cmocka_unit_test(test_others_capped_and_sorted),
        cmocka_unit_test(test_series_halves_keeping_peaks),
        cmocka_unit_test(test_jsonl_str),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
