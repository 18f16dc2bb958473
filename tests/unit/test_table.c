/* Text table writer (lib/render/table.c). */
#include "ml_test.h"

#include "memledger/render.h"

static void test_alignment(void **state)
{
    (void)state;
    struct ml_table t;
    ml_table_init(&t, 3);
    t.right[2] = true;
    const char *h[3] = {"name", "kind", "bytes"};
    const char *r1[3] = {"weights", "bf16", "28"};
    const char *r2[3] = {"KV cache", "", "1,024"};
    ml_table_row(&t, h);
    ml_table_rule(&t);
    ml_table_row(&t, r1);
    ml_table_section(&t, "-- a section line that is wider than the table --");
    ml_table_row(&t, r2);
    struct ml_buf b;
    ml_buf_init(&b, 0);
    assert_int_equal(ml_table_render(&t, &b, 2), ML_OK);
    assert_string_equal(b.buf, "  name      kind  bytes\n"
                               "  ---------------------\n"
                               "  weights   bf16     28\n"
                               "  -- a section line that is wider than the table --\n"
                               "  KV cache        1,024\n");
    ml_buf_release(&b);
    ml_table_release(&t);
}

static void test_utf8_width(void **state)
{
    (void)state;
    assert_int_equal(ml_utf8_width("显存"), 2);
    assert_int_equal(ml_utf8_width("a→b"), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_utf8_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
