/* Capped buffer (lib/util/buf.c). */
#include "ml_test.h"

#include "memledger/buf.h"

static void test_append_and_cap(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 10);
    assert_non_null(b.buf);
    assert_string_equal(b.buf, "");
    assert_int_equal(ml_buf_adds(&b, "hello"), ML_OK);
    assert_int_equal(ml_buf_addf(&b, "%d", 1234), ML_OK);
    assert_string_equal(b.buf, "hello1234");
    /* Past the cap: refused, unchanged. */
    assert_int_equal(ml_buf_adds(&b, "xy"), ML_ERR_TOOBIG);
    assert_string_equal(b.buf, "hello1234");
    assert_int_equal(ml_buf_addc(&b, '!'), ML_OK);
    assert_int_equal(b.len, 10);
    assert_int_equal(ml_buf_addc(&b, '!'), ML_ERR_TOOBIG);
    assert_int_equal(ml_buf_addf(&b, "%s", "x"), ML_ERR_TOOBIG);
    ml_buf_release(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.buf, "");
}

static void test_detach_and_growth(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(ml_buf_addc(&b, (char)('a' + i % 26)), ML_OK);
    assert_int_equal(ml_buf_addn(&b, '-', 5), ML_OK);
    size_t len = 0;
    char *s = ml_buf_detach(&b, &len);
    assert_int_equal(len, 10005);
    assert_int_equal(s[0], 'a');
    assert_int_equal(s[10004], '-');
    assert_int_equal(s[10005], '\0');
    free(s);
    assert_int_equal(b.len, 0);
    s = ml_buf_detach(&b, &len); /* empty buffer still gives a string */
    assert_string_equal(s, "");
    free(s);
}

static size_t fmt(char *dst, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static size_t fmt(char *dst, size_t size, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    size_t n = ml_vformat(dst, size, f, ap);
    va_end(ap);
    return n;
}

/* A cut never splits a UTF-8 character: "显存" is 6 bytes (E6 98 BE E5 AD 98). */
static void test_vformat_utf8_cut(void **state)
{
    (void)state;
    char b[8];
    assert_int_equal(fmt(b, sizeof(b), "%s", "ab"), 2);
    assert_string_equal(b, "ab");
    /* 7 bytes fit: "a" + 显 (3) + 存 (3) = 7, whole. */
    assert_int_equal(fmt(b, sizeof(b), "a%s", "\xe6\x98\xbe\xe5\xad\x98"), 7);
    assert_string_equal(b, "a\xe6\x98\xbe\xe5\xad\x98");
    /* "ab" + 显存: vsnprintf keeps 7 bytes, the last character cut after 2 of its 3 bytes. */
    assert_int_equal(fmt(b, sizeof(b), "ab%s", "\xe6\x98\xbe\xe5\xad\x98"), 5);
    assert_string_equal(b, "ab\xe6\x98\xbe");
    /* Cut right after a lead byte. */
    assert_int_equal(fmt(b, sizeof(b), "abcdef%s", "\xe6\x98\xbe"), 6);
    assert_string_equal(b, "abcdef");
    /* ASCII cut as vsnprintf cuts it. */
    assert_int_equal(fmt(b, sizeof(b), "%s", "abcdefghij"), 7);
    assert_string_equal(b, "abcdefg");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_cap),
        cmocka_unit_test(test_detach_and_growth),
        cmocka_unit_test(test_vformat_utf8_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
