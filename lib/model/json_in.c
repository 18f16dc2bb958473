/*
 * json_in.c - one place that opens a JSON object with positions in its errors (see json_in.h).
 */
#include "json_in.h"

#include <stdbool.h>
#include <string.h>

#include "i18n.h"

enum ml_status ml_json_open_object(const char *data, size_t len, size_t cap, const char *what, const char *origin,
                                   cJSON **out, struct ml_diag *diag)
{
    *out = NULL;
    ml_diag_at(diag, origin, 0, 0);
    if (!data)
        len = 0;
    if (len > cap)
        return ml_diag_set(diag, ML_ERR_TOOBIG, _("%zu bytes is too large for a %s (limit %zu MiB)"), len, what,
                           cap >> 20);
    if (len == 0)
        return ml_diag_set(diag, ML_ERR_PARSE, _("empty file, expected a JSON object"));
    uint32_t line = 0, col = 0;
    const char *nul = memchr(data, '\0', len);
    if (nul) {
        ml_diag_locate(data, len, (size_t)(nul - data), &line, &col);
        ml_diag_at(diag, origin, line, col);
        return ml_diag_set(diag, ML_ERR_PARSE, _("binary data (a NUL byte), expected a JSON object"));
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, false);
    if (!root) {
        ml_diag_locate(data, len, end && end >= data ? (size_t)(end - data) : 0, &line, &col);
        ml_diag_at(diag, origin, line, col);
        return ml_diag_set(diag, ML_ERR_PARSE, _("malformed JSON"));
    }
    for (const char *p = end; p && p < data + len; p++) {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            ml_diag_locate(data, len, (size_t)(p - data), &line, &col);
            cJSON_Delete(root);
            ml_diag_at(diag, origin, line, col);
            return ml_diag_set(diag, ML_ERR_PARSE, _("unexpected text after the JSON object"));
        }
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ml_diag_set(diag, ML_ERR_PARSE, _("expected a JSON object at the top level"));
    }
    *out = root;
    return ML_OK;
}

const cJSON *ml_json_find(const cJSON *obj, const char *const *names, const char **which)
{
    for (; *names; names++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, *names);
        if (it && !cJSON_IsNull(it)) {
            if (which)
                *which = *names;
            return it;
        }
    }
    return NULL;
}
