/*
 * Duplicated JSON keys (lib/model/json_dup.c): the last value in force, as Python's json.loads
 * gives it, and the lines of the first and the last occurrence, read off the texts by hand.
 */
#include "ml_test.h"

#include "memledger/json_dup.h"

static size_t dups(const char *text, struct ml_json_dup *d, size_t max)
{
    return ml_json_duplicates(text, strlen(text), d, max);
}

static void test_lines_and_paths(void **state)
{
    (void)state;
    struct ml_json_dup d[4];
    assert_int_equal(dups("{\"a\": 1,\n \"b\": {\"c\": 1,\n \"c\": 2},\n \"a\": 3}", d, 4), 2);
    /* an object's own duplicates first, then those inside its members */
    assert_string_equal(d[0].key, "a");
    assert_int_equal(d[0].first_line, 1);
    assert_int_equal(d[0].last_line, 4);
    assert_string_equal(d[1].key, "b.c");
    assert_int_equal(d[1].first_line, 2);
    assert_int_equal(d[1].last_line, 3);
}

static void test_three_and_escapes(void **state)
{
    (void)state;
    struct ml_json_dup d[2];
    /* "\u0073tage" is "stage" once decoded, as json.loads decodes it. */
    assert_int_equal(dups("{\"stage\": 1,\n\"x\": [{\"k\": 1, \"k\": 2}],\n\"st\\u0061ge\": 2,\n\n\"stage\": 3}", d, 2),
                     2);
    assert_string_equal(d[0].key, "stage");
    assert_int_equal(d[0].first_line, 1);
    assert_int_equal(d[0].last_line, 5);
    assert_string_equal(d[1].key, "x.k");
    assert_int_equal(d[1].first_line, 2);
}

/* Keys inside a dropped duplicate do not count: its whole value is gone. */
static void test_dropped_block(void **state)
{
    (void)state;
    struct ml_json_dup d[4];
    assert_int_equal(dups("{\"z\": {\"s\": 3, \"s\": 2},\n\"z\": {\"s\": 1}}", d, 4), 1);
    assert_string_equal(d[0].key, "z");
    assert_int_equal(d[0].last_line, 2);
    assert_int_equal(dups("{\"a\": 1, \"b\": \"a\", \"c\": [\"a\", \"a\"]}", d, 4), 0);
    assert_int_equal(dups("{\"a\": 1, \"a\"", d, 4), 0); /* not JSON: nothing */
    assert_int_equal(dups("{\"a\": 1, \"a\": 2}", NULL, 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_and_paths),
        cmocka_unit_test(test_three_and_escapes),
        cmocka_unit_test(test_dropped_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
