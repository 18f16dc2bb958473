/*
 * train_yaml_value.c - the YAML reader's state and its scalar converters: values as YAML 1.1
 * reads them (PyYAML / OmegaConf: true/false/yes/no/on/off, numbers written 1e9, 1_000 or "2048").
 */
#include "train_yaml_int.h"

/* ---- reading state ---------------------------------------------------------------------- */

enum ml_status ml_ty_failf(struct ctx *c, enum ml_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ml_diag_vset(c->diag, st, fmt, ap);
    va_end(ap);
    ml_diag_at(c->diag, c->origin, c->line, c->col);
    return st;
}

void ml_ty_pending_init(struct pending *p, const struct ml_train *t, bool set_mode)
{
    memset(p, 0, sizeof(*p));
    /* A file states its own precision (none of the three = no mixed precision); an override
     * starts from what is already there. */
    if (set_mode) {
        p->bf16 = t->precision == ML_PREC_BF16;
        p->fp16 = t->precision == ML_PREC_FP16;
        p->pure_bf16 = t->precision == ML_PREC_PURE_BF16;
    }
    switch (t->method) {
    case ML_METHOD_FULL: p->ft = FT_FULL; break;
    case ML_METHOD_FREEZE: p->ft = FT_FREEZE; break;
    case ML_METHOD_LORA:
    case ML_METHOD_QLORA: p->ft = FT_LORA; break;
    }
    p->quant_bits = t->quant_bits;
    p->packing = set_mode ? (int)t->packing : -1;
    p->neat = t->neat_packing;
    /* LLaMA-Factory turns checkpointing on unless disable_gradient_checkpointing; the HF
     * Trainer key only ever turns it on. Other profiles: on only when asked. */
    if (t->framework == ML_FW_LLAMAFACTORY)
        p->gc_disabled = t->grad_ckpt == ML_GC_OFF;
    else
        p->hf_gc = t->grad_ckpt != ML_GC_OFF;
    p->unsloth_gc = t->grad_ckpt == ML_GC_UNSLOTH;
    p->reentrant_gc = t->grad_ckpt != ML_GC_NON_REENTRANT;
}

/* ---- scalar converters ------------------------------------------------------------------ */

static int lower(int ch)
{
    return (ch >= 'A' && ch <= 'Z') ? ch - 'A' + 'a' : ch;
}

bool ml_ty_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b))
            return false;
    return *a == *b;
}

/* The value of the word val in tab into *out; false when val is none of them. */
bool ml_ty_choose(const char *val, const struct choice *tab, uint64_t *out)
{
    for (; tab->name; tab++)
        if (!strcmp(val, tab->name)) {
            *out = (uint64_t)tab->value;
            return true;
        }
    return false;
}

/* YAML 1.1 booleans as PyYAML resolves them (plus 1/0): 1 true, 0 false, -1 neither. */
int ml_ty_yaml_bool(const char *s)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (ml_ty_ieq(s, yes[i]))
            return 1;
        if (ml_ty_ieq(s, no[i]))
            return 0;
    }
    return -1;
}

/* A plain scalar that YAML reads as null. */
bool ml_ty_yaml_null(const char *s, bool plain)
{
    return plain && (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

/* A value that leaves a feature off: false, 0, none, empty. */
bool ml_ty_is_off(const char *s)
{
    return ml_ty_yaml_bool(s) == 0 || !*s || ml_ty_ieq(s, "none");
}

enum ml_status ml_ty_get_bool(struct ctx *c, const char *key, const char *val, bool *out)
{
    int b = ml_ty_yaml_bool(val);
    if (b < 0)
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be true or false, got '%.60s'"), key, val);
    *out = b == 1;
    return ML_OK;
}

/* A whole number in [lo, hi]: 1024, "2048", 1e9, 1_000, 2048.0. */
enum ml_status ml_ty_get_count(struct ctx *c, const char *key, const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
    uint64_t v = 0;
    if (ml_count_parse(val, &v, NULL) != ML_OK || (lo == 1 && v == 0)) {
        if (lo >= 1)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a positive whole number, got '%.60s'"), key, val);
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a whole number (0 or more), got '%.60s'"), key, val);
    }
    if (v < lo || v > hi)
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' = %.60s is out of range (%llu to %llu)"), key, val,
                           (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return ML_OK;
}

/*
 * A real number written in decimal ([+-]digits[.digits][e[+-]digits]), read without strtod so
 * that the process locale cannot change the decimal point. Only compared, never printed.
 */
bool ml_ty_get_real(const char *s, double *out)
{
    double sign = 1, v = 0, scale = 1;
    int digits = 0, ex = 0, exsign = 1;
    if (*s == '+' || *s == '-')
        sign = (*s++ == '-') ? -1 : 1;
    for (; *s >= '0' && *s <= '9'; s++, digits++)
        v = v * 10 + (*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
            scale /= 10;
            v += (*s - '0') * scale;
        }
    if (!digits)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            exsign = (*s++ == '-') ? -1 : 1;
        if (!(*s >= '0' && *s <= '9'))
            return false;
        for (; *s >= '0' && *s <= '9'; s++)
            if (ex < 1000)
                ex = ex * 10 + (*s - '0');
    }
    if (*s)
        return false;
    for (int i = 0; i < ex && v != 0; i++)
        v = exsign > 0 ? v * 10 : v / 10;
    *out = sign * v;
    return true;
}

/* Copy a string value into a caller buffer; a value that does not fit is an error. */
enum ml_status ml_ty_copy_out(struct ctx *c, const char *key, const char *val, char *buf, size_t cap)
{
    if (!buf || !cap)
        return ML_OK;
    size_t n = strlen(val);
    if (n >= cap)
        return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' is longer than %zu bytes"), key, cap - 1);
    memcpy(buf, val, n + 1);
    return ML_OK;
}
