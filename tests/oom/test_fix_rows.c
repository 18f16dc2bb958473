/*
 * The diagnosis's two tables agree (lib/diagnose/rules.c, lib/fit/knobs.c): every kind of fix has
 * its row in the knob table, in order, applying to some kind of run, written by some runtime and
 * addressing some phase; every fix a rule row offers (a knob, or an advice row through its kind)
 * addresses the cause of that row's finding. A row that offers a fix for another cause, or a fix
 * kind left out of the knob table, fails here.
 */
#include "ml_test.h"

#include "memledger/fit.h"
#include "rules.h"

static void test_every_kind_has_its_row(void **state)
{
    (void)state;
    for (unsigned k = 0; k < ML_FIX_COUNT; k++) {
        const struct ml_fix_row *r = ml_fix_row((enum ml_fix_kind)k);
        assert_non_null(r);
        assert_int_equal(r->kind, k);
        assert_true(r->runs != 0);
        assert_true(r->runtimes != 0);
        assert_true(r->phases != 0);
        assert_true(r->causes != 0);
    }
    assert_null(ml_fix_row(ML_FIX_COUNT));
}

static void test_rule_fixes_address_their_cause(void **state)
{
    (void)state;
    size_t n = 0;
    const struct rule *rows = ml_dg_rule_rows(&n);
    assert_true(n > 40);
    for (size_t i = 0; i < n; i++) {
        const struct rule *r = &rows[i];
        for (size_t j = 0; j < sizeof(r->fix) / sizeof(r->fix[0]) && r->fix[j].action; j++) {
            const struct rule_fix *fx = &r->fix[j];
            enum ml_fix_kind kind = fx->advice != A_COUNT ? ml_dg_advice_kind(fx->advice) : fx->kind;
            const struct ml_fix_row *k = ml_fix_row(kind);
            assert_non_null(k);
            if (!(k->causes >> r->cause & 1))
                fail_msg("rule row %zu (%s) offers fix kind %d, whose row does not address it", i,
                         ml_cause_name(r->cause), (int)kind);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_has_its_row),
        cmocka_unit_test(test_rule_fixes_address_their_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
