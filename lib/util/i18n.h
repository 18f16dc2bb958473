/*
 * i18n.h - the gettext wrapper for user-facing text (private to memledger, not installed).
 *
 * Every message a person reads goes through _() so that a catalog (zh_CN first) can be
 * added without touching call sites. The text domain is "memledger"; src/main.c binds it.
 * The web page's module (ML_WEB_NLS) looks messages up in the catalog it was built with. With
 * ML_ENABLE_NLS off (or a libc without libintl) _() is the identity.
 */
#ifndef ML_I18N_H
#define ML_I18N_H

#if defined(ML_ENABLE_NLS) && ML_ENABLE_NLS
#include <libintl.h>
#define _(s) dgettext("memledger", s)
#elif defined(ML_WEB_NLS) && ML_WEB_NLS
/* The page's module: the same catalog compiled in (web/i18n_web.c, web/gen_catalog.js). */
__attribute__((format_arg(1))) const char *ml_web_gettext(const char *msgid);
#define _(s) ml_web_gettext(s)
#else
#define _(s) (s)
#endif
/* Marks a string for extraction where it must stay untranslated at the point of use. */
#define N_(s) (s)

#endif /* ML_I18N_H */
