/*
 * i18n_web.h - the page's module translates as the command line does (lib/util/i18n.h: with
 * ML_WEB_NLS, _() is ml_web_gettext): from a catalog compiled in from po/<lang>.po
 * (web/gen_catalog.js), in the language the page asks for (mlw_set_lang; English by default).
 */
#ifndef MLW_I18N_WEB_H
#define MLW_I18N_WEB_H

#include <stddef.h>

struct mlw_message {
    const char *id, *str;
};

/* po/zh_CN.po, sorted by msgid's bytes (generated). */
extern const struct mlw_message mlw_catalog_zh_CN[];
extern const size_t mlw_catalog_zh_CN_count;

/* msgid in the language set by mlw_set_lang, or msgid itself. */
__attribute__((format_arg(1))) const char *ml_web_gettext(const char *msgid);

/* The page's language: 1 zh_CN, anything else English (exported to the page, web/memledger.js). */
void mlw_set_lang(int zh_cn);

#endif /* MLW_I18N_WEB_H */
