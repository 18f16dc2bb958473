/* Catalog lookups: case-insensitive names, hub ids as aliases, suggestions. */
#include "ml_test.h"

#include "memledger/catalog.h"

static void test_find(void **state)
{
    (void)state;
    const struct ml_catalog_entry *e = ml_catalog_find("QWEN2.5-14B");
    assert_non_null(e);
    assert_string_equal(e->name, "qwen2.5-14b");
    assert_ptr_equal(ml_catalog_find("Qwen/Qwen2.5-14B"), e);
    assert_ptr_equal(ml_catalog_find("qwen/qwen2.5-14b"), e);
    assert_ptr_equal(ml_catalog_find("my-mirror/Qwen2.5-14B"), e);
    assert_null(ml_catalog_find("qwen2.5-15b"));
    assert_null(ml_catalog_find(""));
    assert_null(ml_catalog_find(NULL));
}

static void test_suggest(void **state)
{
    (void)state;
    const struct ml_catalog_entry *s[3];
    size_t n = ml_catalog_suggest("qwen2.5-14", s, 3);
    assert_true(n >= 1);
    assert_string_equal(s[0]->name, "qwen2.5-14b");
    n = ml_catalog_suggest("lama-2-7b", s, 3);
    assert_true(n >= 1);
    assert_string_equal(s[0]->name, "llama-2-7b");
    assert_int_equal(ml_catalog_suggest("zzzzzzzzzzzzzzzzzzzz", s, 3), 0);
    assert_int_equal(ml_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(ml_edit_distance("ABC", "abc"), 0);
}

static void test_entries_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < ml_catalog_count(); i++) {
        const struct ml_catalog_entry *e = ml_catalog_get(i);
        struct ml_arch a;
        struct ml_diag d;
        ml_diag_init(&d);
        if (ml_catalog_arch(e, &a, &d) != ML_OK)
            fail_msg("%s: %s", e->name, d.msg);
        assert_true(e->params > 0);
        assert_non_null(strchr(e->hub_id, '/'));
    }
    assert_null(ml_catalog_get(ml_catalog_count()));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_entries_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
