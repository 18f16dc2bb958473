/* JSON writer (lib/util/json.c): exact integers, key order, escapes. */
#include "ml_test.h"

#include "memledger/json.h"

static void test_document(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    struct ml_json j;
    ml_json_init(&j, &b);
    ml_json_object_begin(&j);
    ml_json_ku64(&j, "max", UINT64_MAX);
    ml_json_kstr(&j, "s", "a\"b\\c\n\x01");
    ml_json_key(&j, "list");
    ml_json_array_begin(&j);
    ml_json_u64(&j, 1);
    ml_json_i64(&j, -2);
    ml_json_null(&j);
    ml_json_array_end(&j);
    ml_json_key(&j, "empty");
    ml_json_object_begin(&j);
    ml_json_object_end(&j);
    ml_json_key(&j, "frac");
    ml_json_fixed(&j, 1598, 2);
    ml_json_kbool(&j, "b", false);
    ml_json_kstr(&j, "n", NULL);
    ml_json_object_end(&j);
    assert_int_equal(ml_json_finish(&j), ML_OK);
    assert_string_equal(b.buf, "{\n"
                               "  \"max\": 18446744073709551615,\n"
                               "  \"s\": \"a\\\"b\\\\c\\n\\u0001\",\n"
                               "  \"list\": [\n"
                               "    1,\n"
                               "    -2,\n"
                               "    null\n"
                               "  ],\n"
                               "  \"empty\": {},\n"
                               "  \"frac\": 15.98,\n"
                               "  \"b\": false,\n"
                               "  \"n\": null\n"
                               "}\n");
    ml_buf_release(&b);
}

/* A document opens with the schema id (docs/json.md), whatever follows. */
static void test_schema_first(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    struct ml_json j;
    ml_json_init(&j, &b);
    ml_json_document_begin(&j);
    ml_json_ku64(&j, "n", 1);
    ml_json_object_end(&j);
    assert_int_equal(ml_json_finish(&j), ML_OK);
    assert_string_equal(b.buf, "{\n  \"schema\": \"memledger/1\",\n  \"n\": 1\n}\n");
    ml_buf_release(&b);
}

static void test_cap_reported_once(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 8);
    struct ml_json j;
    ml_json_init(&j, &b);
    ml_json_array_begin(&j);
    for (int i = 0; i < 100; i++)
        ml_json_u64(&j, 123456789);
    ml_json_array_end(&j);
    assert_int_equal(ml_json_finish(&j), ML_ERR_TOOBIG);
    ml_buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_schema_first),
        cmocka_unit_test(test_cap_reported_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
