/*
 * i18n_web.c - the language of the page's module: English, or zh_CN from the compiled-in catalog
 * (i18n_web.h). The page sets it once from the browser's preferred languages (web/app.js).
 */
#include "i18n_web.h"

#include <emscripten.h>
#include <stdlib.h>
#include <string.h>

static const struct mlw_message *lang_catalog;
static size_t lang_count;

static int by_id(const void *key, const void *m)
{
    return strcmp((const char *)key, ((const struct mlw_message *)m)->id);
}

const char *ml_web_gettext(const char *msgid)
{
    if (!lang_catalog || !msgid || !*msgid)
        return msgid;
    const struct mlw_message *m = bsearch(msgid, lang_catalog, lang_count, sizeof(*lang_catalog), by_id);
    return m ? m->str : msgid;
}

/* 1: zh_CN; anything else: English (the messages as written). */
EMSCRIPTEN_KEEPALIVE void mlw_set_lang(int zh_cn)
{
    lang_catalog = zh_cn ? mlw_catalog_zh_CN : NULL;
    lang_count = zh_cn ? mlw_catalog_zh_CN_count : 0;
}
