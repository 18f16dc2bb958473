/*
 * settings.c - the rows of ML_SETTINGS (memledger/settings.h) as data: what reads the table
 * rather than compiling it (the table in docs/train-config.md, tools/gen_settings_doc.c; tests).
 */
#include "memledger/settings.h"

#include "memledger/fit.h"

#define ROW(id, track, flag, field, type, unit, owners, lf, ta, trl, ds, fsdp, fit)                                    \
    {#id, ML_SETTING_TRACKED_##track, flag, type, unit, ML_SETTING_OWNERS owners, lf, ta, trl, ds, fsdp, (int)(fit)},

static const struct ml_setting_row rows[] = {ML_SETTINGS(ROW)};

const struct ml_setting_row *ml_setting_rows(size_t *n)
{
    *n = sizeof(rows) / sizeof(rows[0]);
    return rows;
}
