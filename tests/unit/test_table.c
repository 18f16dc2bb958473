/* Text table writer (lib/util/table.c). */
#include "ml_test.h"

#include <string.h>

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

static void test_display_width(void **state)
{
    (void)state;
    /* As wcwidth(3) counts them in a UTF-8 locale (UAX #11: W and F take two columns). */
    assert_int_equal(ml_text_width("显存"), 4);
    assert_int_equal(ml_text_width("显存 16 GiB"), 11);
    assert_int_equal(ml_text_width("（余量）"), 8);  /* fullwidth parentheses */
    assert_int_equal(ml_text_width("a→b · c—d"), 9); /* ambiguous width: one column */
    assert_int_equal(ml_text_width("e\xcc\x81"), 1); /* e + combining acute */
    assert_int_equal(ml_text_width("\033[1;31mred\033[0m"), 3);
    assert_int_equal(ml_char_width(0x4E00), 2);
    assert_int_equal(ml_char_width(0xFF0C), 2); /* ， */
    assert_int_equal(ml_char_width(0x00B7), 1); /* · */
}

static void test_break(void **state)
{
    (void)state;
    size_t next;
    const char *s = "load 7.13 GiB/8.61 GiB · forward 10.21 GiB";
    /* Not before "·", and a unit stays with its number. */
    assert_int_equal(ml_text_break(s, strlen(s), 23, &next), 22);
    assert_string_equal(s + next, "· forward 10.21 GiB");
    assert_int_equal(ml_text_break(s, strlen(s), 24, &next), 25); /* bytes: '·' is two */
    assert_string_equal(s + next, "forward 10.21 GiB");
    assert_int_equal(ml_text_break(s, strlen(s), 11, &next), 4);
    /* A path breaks after a slash; a word with none is cut at the width. */
    const char *p = "/usr/lib/python3/site-packages";
    assert_int_equal(ml_text_break(p, strlen(p), 20, &next), 17);
    const char *w = "abcdefghij";
    assert_int_equal(ml_text_break(w, strlen(w), 4, &next), 4);
    assert_int_equal(next, 4);
}

static void test_fold(void **state)
{
    (void)state;
    struct ml_buf b;
    ml_buf_init(&b, 0);
    ml_buf_adds(&b, "kept as it is\n"
                    "note: gradient checkpointing keeps each layer's input plus one recomputed layer\n"
                    "  1. fragmentation (0.60): reserved but unallocated\n"
                    "       oom.log:14  HIP out of memory. Tried to allocate 36.00 MiB\n"
                    "短行\n");
    assert_int_equal(ml_text_fold(&b, 0, 40), ML_OK);
    assert_string_equal(b.buf, "kept as it is\n"
                               "note: gradient checkpointing keeps each\n"
                               "      layer's input plus one recomputed\n"
                               "      layer\n"
                               "  1. fragmentation (0.60): reserved but\n"
                               "     unallocated\n"
                               "       oom.log:14  HIP out of memory.\n"
                               "                   Tried to allocate\n"
                               "                   36.00 MiB\n"
                               "短行\n");
    /* Width 0 and lines that fit change nothing. */
    size_t len = b.len;
    assert_int_equal(ml_text_fold(&b, 0, 0), ML_OK);
    assert_int_equal(b.len, len);
    ml_buf_release(&b);
    /* Chinese text folds by display columns (a character is two), between characters, never
     * before a closing mark, and hangs after a label's fullwidth colon. */
    ml_buf_init(&b, 0);
    ml_buf_adds(&b, "提示：梯度检查点保留每一层的输入，外加一层重算的激活值\n");
    assert_int_equal(ml_text_fold(&b, 0, 24), ML_OK);
    assert_string_equal(b.buf, "提示：梯度检查点保留每一\n"
                               "      层的输入，外加一层\n"
                               "      重算的激活值\n");
    ml_buf_reset(&b);
    ml_buf_adds(&b, "提示：一二三四五六七八九，十\n");
    assert_int_equal(ml_text_fold(&b, 0, 24), ML_OK);
    assert_string_equal(b.buf, "提示：一二三四五六七八\n      九，十\n");
    ml_buf_release(&b);
}

/* The seed case's table at a terminal's width: the formula wraps in place when it keeps enough
 * columns, moves under its row when it would not, and the phase list wraps at commas. */
static void build(struct ml_table *t, size_t width)
{
    ml_table_init(t, 4);
    t->right[2] = true;
    t->flex = 1;
    t->wrap[3] = true;
    t->width = width;
    const char *h[4] = {"component", "rule", "GiB", "live in"};
    const char *r1[4] = {"weights_frozen", "2 B x 14770033664 frozen / N", "6.88 GiB", "all"};
    const char *r2[4] = {"zero_gathered_params", "2 B x (module 70778880 + prefetch 100000000) + coalesced copy",
                         "0.58 GiB", "forward,loss,backward,after_save"};
    ml_table_row(t, h);
    ml_table_rule(t);
    ml_table_row(t, r1);
    ml_table_row(t, r2);
}

static void test_table_fitted(void **state)
{
    (void)state;
    struct ml_table t;
    struct ml_buf b, natural;
    ml_buf_init(&b, 0);
    ml_buf_init(&natural, 0);
    build(&t, 0);
    assert_int_equal(ml_table_render(&t, &natural, 0), ML_OK);
    ml_table_release(&t);
    /* Wide enough: the natural layout byte for byte. */
    build(&t, 200);
    assert_int_equal(ml_table_render(&t, &b, 0), ML_OK);
    assert_string_equal(b.buf, natural.buf);
    ml_table_release(&t);
    /* 100 columns: the rule keeps 34 and wraps in place. */
    ml_buf_reset(&b);
    build(&t, 100);
    assert_int_equal(ml_table_render(&t, &b, 0), ML_OK);
    assert_string_equal(
        b.buf, "component             rule                                     GiB  live in\n"
               "----------------------------------------------------------------------------------------------------\n"
               "weights_frozen        2 B x 14770033664 frozen / N        6.88 GiB  all\n"
               "zero_gathered_params  2 B x (module 70778880 + prefetch   0.58 GiB  forward,loss,backward,after_save\n"
               "                      100000000) + coalesced copy\n");
    ml_table_release(&t);
    /* 60 columns: the rule moves under its row and the phases wrap at commas. */
    ml_buf_reset(&b);
    build(&t, 60);
    assert_int_equal(ml_table_render(&t, &b, 0), ML_OK);
    assert_string_equal(b.buf, "component                  GiB  live in\n"
                               "    rule\n"
                               "------------------------------------------------------------\n"
                               "weights_frozen        6.88 GiB  all\n"
                               "    2 B x 14770033664 frozen / N\n"
                               "zero_gathered_params  0.58 GiB  forward,loss,backward,\n"
                               "                                after_save\n"
                               "    2 B x (module 70778880 + prefetch 100000000) + coalesced\n"
                               "    copy\n");
    ml_table_release(&t);
    /* 42 columns: the phases wrap too. */
    ml_buf_reset(&b);
    build(&t, 42);
    assert_int_equal(ml_table_render(&t, &b, 0), ML_OK);
    assert_string_equal(b.buf, "component                  GiB  live in\n"
                               "    rule\n"
                               "------------------------------------------\n"
                               "weights_frozen        6.88 GiB  all\n"
                               "    2 B x 14770033664 frozen / N\n"
                               "zero_gathered_params  0.58 GiB  forward,\n"
                               "                                loss,\n"
                               "                                backward,\n"
                               "                                after_save\n"
                               "    2 B x (module 70778880 + prefetch\n"
                               "    100000000) + coalesced copy\n");
    ml_table_release(&t);
    ml_buf_release(&b);
    ml_buf_release(&natural);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment), cmocka_unit_test(test_display_width), cmocka_unit_test(test_break),
        cmocka_unit_test(test_fold),      cmocka_unit_test(test_table_fitted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
