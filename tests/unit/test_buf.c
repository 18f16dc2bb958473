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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_cap),
        cmocka_unit_test(test_detach_and_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
