/* Size and count parsing and formatting (lib/util/units.c). */
#include "ml_test.h"

#include "memledger/units.h"

static uint64_t parse_ok(const char *s, enum ml_size_unit *u)
{
    uint64_t v = 0;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_size_parse(s, &v, u, &d), ML_OK);
    return v;
}

static enum ml_status parse_err(const char *s)
{
    uint64_t v;
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_size_parse(s, &v, NULL, &d);
    assert_int_not_equal(st, ML_OK);
    assert_true(d.msg[0] != '\0');
    assert_null(strchr(d.msg, '\n'));
    return st;
}

static void test_size_units(void **state)
{
    (void)state;
    enum ml_size_unit u;
    assert_int_equal(parse_ok("16G", &u), 17179869184ull);
    assert_int_equal(u, ML_UNIT_BARE);
    assert_int_equal(parse_ok("16GiB", &u), 17179869184ull);
    assert_int_equal(u, ML_UNIT_BINARY);
    assert_int_equal(parse_ok("16GB", &u), 16000000000ull);
    assert_int_equal(u, ML_UNIT_DECIMAL);
    assert_int_equal(parse_ok("80 gb", NULL), 80000000000ull);
    assert_int_equal(parse_ok("512MiB", NULL), 536870912ull);
    assert_int_equal(parse_ok("1e9", &u), 1000000000ull);
    assert_int_equal(u, ML_UNIT_NONE);
    assert_int_equal(parse_ok("17179869184", NULL), 17179869184ull);
    assert_int_equal(parse_ok("1.5KiB", NULL), 1536);
    assert_int_equal(parse_ok("2T", NULL), 2199023255552ull);
    assert_int_equal(parse_ok("100B", NULL), 100);
    assert_int_equal(parse_ok("1_000_000", NULL), 1000000);
    /* 15.98 GiB = 15.98 * 2^30 = 17158394347.52 -> 17158394348 (PyTorch's "15.98 GiB"). */
    assert_int_equal(parse_ok("15.98GiB", NULL), 17158394348ull);
    /* Exact decimal arithmetic, half up: 0.5 B rounds to 1. */
    assert_int_equal(parse_ok("0.5", NULL), 1);
    assert_int_equal(parse_ok("1.5e3MiB", NULL), 1572864000ull);
}

static void test_size_errors(void **state)
{
    (void)state;
    assert_int_equal(parse_err("-16G"), ML_ERR_INVALID);
    assert_int_equal(parse_err(""), ML_ERR_PARSE);
    assert_int_equal(parse_err("abc"), ML_ERR_PARSE);
    assert_int_equal(parse_err("nan"), ML_ERR_PARSE);
    assert_int_equal(parse_err("inf"), ML_ERR_PARSE);
    assert_int_equal(parse_err("16X"), ML_ERR_PARSE);
    assert_int_equal(parse_err("16GBx"), ML_ERR_PARSE);
    assert_int_equal(parse_err("1e30"), ML_ERR_OVERFLOW);
    assert_int_equal(parse_err("99999999999999999999999T"), ML_ERR_OVERFLOW);
    assert_int_equal(parse_err("18000000000G"), ML_ERR_OVERFLOW);
    assert_int_equal(parse_err(NULL), ML_ERR_PARSE);
}

static void test_count_parse(void **state)
{
    (void)state;
    uint64_t v;
    struct ml_diag d;
    ml_diag_init(&d);
    assert_int_equal(ml_count_parse("64", &v, &d), ML_OK);
    assert_int_equal(v, 64);
    assert_int_equal(ml_count_parse("1e9", &v, &d), ML_OK);
    assert_int_equal(v, 1000000000);
    assert_int_equal(ml_count_parse("1.5e3", &v, &d), ML_OK);
    assert_int_equal(v, 1500);
    assert_int_equal(ml_count_parse("18446744073709551615", &v, &d), ML_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(ml_count_parse("18446744073709551616", &v, &d), ML_ERR_OVERFLOW);
    assert_int_equal(ml_count_parse("1.5", &v, &d), ML_ERR_INVALID);
    assert_int_equal(ml_count_parse("-3", &v, &d), ML_ERR_INVALID);
    assert_int_equal(ml_count_parse("3G", &v, &d), ML_ERR_PARSE);
}

static void fmt_expect(enum ml_status (*fn)(struct ml_buf *, uint64_t), uint64_t v, const char *want)
{
    struct ml_buf b;
    ml_buf_init(&b, 0);
    assert_int_equal(fn(&b, v), ML_OK);
    assert_string_equal(b.buf, want);
    ml_buf_release(&b);
}

/* fit --headroom (docs/cli/fit.md: "--headroom 5%", default 10 %, a percentage below 100). */
static void test_percent_parse(void **state)
{
    (void)state;
    uint32_t pm = 12345;
    assert_true(ml_percent_parse("5%", &pm));
    assert_int_equal(pm, 50);
    assert_true(ml_percent_parse("10", &pm));
    assert_int_equal(pm, 100);
    assert_true(ml_percent_parse("7.5%", &pm));
    assert_int_equal(pm, 75);
    assert_true(ml_percent_parse("7.59%", &pm)); /* to the tenth */
    assert_int_equal(pm, 75);
    assert_true(ml_percent_parse("99.9", &pm));
    assert_int_equal(pm, 999);
    assert_true(ml_percent_parse("0%", &pm));
    assert_int_equal(pm, 0);
    assert_true(ml_percent_parse(".5", &pm));
    assert_int_equal(pm, 5);
    pm = 7;
    const char *bad[] = {"100%", "100", "250", "", "%", ".", "abc", "-5%", "10 %", "5%%", "1e1", "0x10"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(ml_percent_parse(bad[i], &pm));
    assert_int_equal(pm, 7); /* untouched on error */
}

static void test_format(void **state)
{
    (void)state;
    fmt_expect(ml_fmt_gib, 17179869184ull - 16777216ull, "15.98 GiB"); /* ROCm 16 GiB card */
    fmt_expect(ml_fmt_gib, 0, "0.00 GiB");
    fmt_expect(ml_fmt_gib, 5368709, "0.00 GiB"); /* 0.0049999 GiB */
    fmt_expect(ml_fmt_gib, 5368710, "0.01 GiB"); /* 0.0050000 GiB rounds half up */
    fmt_expect(ml_fmt_bytes, 598736896, "571.00 MiB");
    fmt_expect(ml_fmt_bytes, 37748736, "36.00 MiB");
    fmt_expect(ml_fmt_bytes, 1023, "1023 B");
    fmt_expect(ml_fmt_bytes, 1048575, "1.00 MiB"); /* 1023.999 KiB rounds to the next unit */
    fmt_expect(ml_fmt_count, 14770033664ull, "14,770,033,664");
    fmt_expect(ml_fmt_count, 0, "0");
    fmt_expect(ml_fmt_count, 999, "999");
    fmt_expect(ml_fmt_count, UINT64_MAX, "18,446,744,073,709,551,615");
    fmt_expect(ml_fmt_count_short, 14770033664ull, "14.77B");
    fmt_expect(ml_fmt_count_short, 494032768, "494.03M");
    fmt_expect(ml_fmt_count_short, 671026419200ull, "671.03B");
    fmt_expect(ml_fmt_count_short, 12, "12");
    struct ml_buf b;
    ml_buf_init(&b, 0);
    ml_fmt_percent(&b, 4194304, 6742609920ull); /* PEFT's 0.0622% */
    assert_string_equal(b.buf, "0.1%");
    ml_buf_reset(&b);
    ml_fmt_percent(&b, 1, 0);
    assert_string_equal(b.buf, "n/a");
    ml_buf_release(&b);
    /* The buffer-free forms print the same. */
    char s[ML_FMT_MAX];
    assert_string_equal(ml_fmt_gib_s(s, sizeof(s), 17179869184ull - 16777216ull), "15.98 GiB");
    assert_string_equal(ml_fmt_bytes_s(s, sizeof(s), 598736896), "571.00 MiB");
    assert_string_equal(ml_fmt_bytes_s(s, sizeof(s), UINT64_MAX), "16384.00 PiB"); /* 2^64 / 2^50, PiB the top */
    assert_string_equal(ml_fmt_percent_s(s, sizeof(s), 4194304, 6742609920ull), "0.1%");
}

/* DeepSpeed's own files write these sizes as 5e8 (reduce_bucket_size), 1e9 (stage3_max_live_parameters)
 * and 5e7 (stage3_prefetch_bucket_size); sizes derived from hidden^2 stay digits. */
/* card --margin: whole percentages below 100, each string's value read by eye. */
static void test_pct_parse(void **state)
{
    (void)state;
    uint32_t v = 99;
    assert_true(ml_pct_parse("10%", &v) && v == 10);
    assert_true(ml_pct_parse("0", &v) && v == 0);
    assert_true(ml_pct_parse("07%", &v) && v == 7);
    assert_true(ml_pct_parse("99", &v) && v == 99);
    static const char *const bad[] = {"",   "%",  "100", "100%", "150%", "5.5%",
                                      " 5", "5 ", "5%%", "-1",   "1e1",  "99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 42;
        if (ml_pct_parse(bad[i], &v) || v != 42)
            fail_msg("'%s' accepted", bad[i]);
    }
    assert_false(ml_pct_parse(NULL, &v));
}

static void test_fmt_knob(void **state)
{
    (void)state;
    char s[32];
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 500000000ull), "5e8");
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 1000000000ull), "1e9");
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 50000000ull), "5e7");
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 1000000ull), "1e6");
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 100000ull), "100000");       /* below 1e6: digits */
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 250000000ull), "250000000"); /* two digits */
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 23592960ull), "23592960");   /* 0.9 * 5120^2 */
    assert_string_equal(ml_fmt_knob(s, sizeof(s), 0), "0");
}

/* vLLM's --gpu-memory-utilization and SGLang's --mem-fraction-static are fractions in (0, 1]
 * (their defaults 0.9 and 0.88 as written in their docs); kept as permille. */
static void test_permille_parse(void **state)
{
    (void)state;
    uint32_t v = 0;
    assert_true(ml_permille_parse("0.9", &v));
    assert_int_equal(v, 900);
    assert_true(ml_permille_parse("0.88", &v));
    assert_int_equal(v, 880);
    assert_true(ml_permille_parse(".95", &v));
    assert_int_equal(v, 950);
    assert_true(ml_permille_parse("1", &v));
    assert_int_equal(v, 1000);
    assert_true(ml_permille_parse("0.9999", &v)); /* a fourth decimal is dropped, not rounded */
    assert_int_equal(v, 999);
    const char *bad[] = {"0", "0.0", "1.5", "2", "", ".", "0.9x", "-0.5", "90%"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(ml_permille_parse(bad[i], &v));
}

/* watch --interval (docs/cli/watch.md): 200ms is its default; bare digits are milliseconds. */
static void test_duration_parse(void **state)
{
    (void)state;
    uint64_t ns = 0;
    assert_true(ml_duration_parse("200ms", &ns));
    assert_int_equal(ns, 200000000u);
    assert_true(ml_duration_parse("250", &ns));
    assert_int_equal(ns, 250000000u);
    assert_true(ml_duration_parse("0.5s", &ns));
    assert_int_equal(ns, 500000000u);
    assert_true(ml_duration_parse("2m", &ns));
    assert_int_equal(ns, 120000000000ull);
    assert_true(ml_duration_parse("2min", &ns));
    assert_int_equal(ns, 120000000000ull);
    assert_true(ml_duration_parse("1h", &ns));
    assert_int_equal(ns, 3600000000000ull);
    assert_true(ml_duration_parse("5124095h", &ns)); /* just below 2^64 ns */
    assert_int_equal(ns, 18446742000000000000ull);
    assert_true(ml_duration_parse("5124096h", &ns)); /* past it: the longest duration, not a wrap */
    assert_true(ns == UINT64_MAX);
    assert_true(ml_duration_parse("0.999999999h", &ns)); /* nine decimals of an hour, exact */
    assert_int_equal(ns, 3599999996400ull);
    assert_true(ml_duration_parse("1.5ms", &ns));
    assert_int_equal(ns, 1500000u);
    const char *bad[] = {"", "s", "1.", "1.s", "-1s", "1 s", "1sec", "10d", "99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(ml_duration_parse(bad[i], &ns));
}

/* Names of local models as users pass them: a directory with or without its slash. */
static void test_path_last(void **state)
{
    (void)state;
    char s[64];
    const char *cases[][2] = {{"models/Qwen2.5-7B/", "Qwen2.5-7B"},
                              {"/data/llm/Qwen2.5-14B", "Qwen2.5-14B"},
                              {"config.json", "config.json"},
                              {"a//b//", "b"},
                              {"/", ""}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ml_path_last(cases[i][0], s, sizeof(s));
        assert_string_equal(s, cases[i][1]);
    }
    assert_string_equal(ml_path_base("a/b/ds.json"), "ds.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_units),     cmocka_unit_test(test_size_errors),
        cmocka_unit_test(test_count_parse),    cmocka_unit_test(test_format),
        cmocka_unit_test(test_fmt_knob),       cmocka_unit_test(test_permille_parse),
        cmocka_unit_test(test_duration_parse), cmocka_unit_test(test_path_last),
        cmocka_unit_test(test_pct_parse),      cmocka_unit_test(test_percent_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
