/*
 * arch_json.c - Hugging Face config.json -> struct ml_arch: the cJSON side of the config readers.
 *
 * The readers (arch_read.c) and the family table (family.c) see the document through struct
 * ml_cfg_ops; this file opens the JSON text and answers those calls from cJSON's tree, which
 * never leaves this file (style.md 5.5).
 */
#include "memledger/arch.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "family.h"
#include "json_dup.h"
#include "json_in.h"

/* A config.json larger than this is not a config (the largest real ones are ~10 KiB). */
#define ML_CONFIG_MAX_BYTES ((size_t)16 << 20)

static const void *json_member(const void *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive((const cJSON *)obj, key);
}

static const void *json_first(const void *list)
{
    /* An array's items, or an object's member values in file order. */
    const cJSON *it = list;
    return cJSON_IsArray(it) || cJSON_IsObject(it) ? it->child : NULL;
}

static const void *json_next(const void *item)
{
    return ((const cJSON *)item)->next;
}

static void json_value(const void *node, struct ml_cfg_value *v)
{
    const cJSON *it = node;
    *v = (struct ml_cfg_value){ML_CFG_ABSENT, false, 0, NULL};
    if (!it)
        return;
    if (cJSON_IsNull(it))
        v->kind = ML_CFG_NULL;
    else if (cJSON_IsBool(it))
        *v = (struct ml_cfg_value){ML_CFG_BOOL, cJSON_IsTrue(it), 0, NULL};
    else if (cJSON_IsNumber(it))
        *v = (struct ml_cfg_value){ML_CFG_NUMBER, false, it->valuedouble, NULL};
    else if (cJSON_IsString(it))
        *v = (struct ml_cfg_value){ML_CFG_STRING, false, 0, it->valuestring};
    else if (cJSON_IsArray(it))
        v->kind = ML_CFG_ARRAY;
    else
        v->kind = ML_CFG_OBJECT;
}

enum ml_status ml_arch_from_json(const char *data, size_t len, const char *origin, struct ml_arch *out,
                                 struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    cJSON *root;
    enum ml_status st = ml_json_open_object(data, len, ML_CONFIG_MAX_BYTES, "config.json", origin, &root, diag);
    if (st != ML_OK)
        return st;
    /* Duplicated keys: the last value, as transformers' json.loads reads config.json (the CLI
     * warns, ml_json_duplicates). */
    (void)ml_json_keep_last(root, data, len, NULL, 0);
    const struct ml_cfg_ops ops = {json_member, json_first, json_next, json_value};
    st = ml_arch_read(&ops, root, origin, out, diag);
    cJSON_Delete(root);
    return st;
}
