/*
 * patch.c - write a plan's changes into the user's own files (see fit.h). Bytes in, bytes out.
 *
 * YAML: LLaMA-Factory configs are flat mappings, so each change replaces the value on its
 * top-level key's line and keeps the line's place, indentation and trailing comment (libyaml's
 * emitter would drop every comment); keys the file lacks are appended under one comment line.
 * DeepSpeed JSON: parsed with cJSON (which keeps key order) and written back with our own writer,
 * so integers stay exact and "auto" stays a string.
 */
#include "memledger/fit.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memledger/json.h"

/* ---- YAML ---------------------------------------------------------------------------------- */

/* The YAML value for a change ("deepspeed" takes the patched file's name). */
static const char *yaml_value(const struct ml_change *c, const char *deepspeed_name)
{
    if (!strcmp(c->key, "deepspeed"))
        return deepspeed_name ? deepspeed_name : c->to;
    return c->to;
}

/* Does line (without newline) set top-level key? Then *val points at the value start. */
static bool line_sets(const char *line, size_t n, const char *key, size_t *val)
{
    size_t k = strlen(key);
    if (n <= k || strncmp(line, key, k) != 0)
        return false;
    size_t i = k;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i >= n || line[i] != ':')
        return false;
    i++;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    *val = i;
    return true;
}

/* Where a trailing " # comment" starts in the value part (outside quotes), or n. */
static size_t comment_at(const char *line, size_t from, size_t n)
{
    char q = 0;
    for (size_t i = from; i < n; i++) {
        if (q) {
            if (line[i] == q)
                q = 0;
        } else if (line[i] == '"' || line[i] == '\'') {
            q = line[i];
        } else if (line[i] == '#' && i > from && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
            size_t j = i;
            while (j > from && (line[j - 1] == ' ' || line[j - 1] == '\t'))
                j--;
            return j;
        }
    }
    return n;
}

enum ml_status ml_patch_yaml(const char *data, size_t len, const struct ml_plan *p,
                             const char *deepspeed_name, struct ml_buf *out, struct ml_diag *diag)
{
    bool done[ML_FIT_MAX_CHANGES + 1];
    memset(done, 0, sizeof(done));
    /* The changes to make: the plan's YAML ones, plus deepspeed: when a DeepSpeed file is written. */
    struct ml_change extra;
    memset(&extra, 0, sizeof(extra));
    uint32_t n = 0;
    const struct ml_change *ch[ML_FIT_MAX_CHANGES + 1];
    bool have_ds = false;
    for (uint32_t i = 0; i < p->n; i++)
        if (p->ch[i].where == ML_IN_YAML) {
            ch[n++] = &p->ch[i];
            have_ds |= !strcmp(p->ch[i].key, "deepspeed");
        }
    if (deepspeed_name && !have_ds) {
        (void)snprintf(extra.key, sizeof(extra.key), "deepspeed");
        (void)snprintf(extra.to, sizeof(extra.to), "%s", deepspeed_name);
        ch[n++] = &extra;
    }
    enum ml_status st = ML_OK;
    size_t pos = 0;
    while (pos < len && st == ML_OK) {
        const char *line = data + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ln = nl ? (size_t)(nl - line) : len - pos;
        size_t body = ln > 0 && line[ln - 1] == '\r' ? ln - 1 : ln;
        bool replaced = false;
        for (uint32_t i = 0; i < n && !replaced; i++) {
            size_t val;
            if (done[i] || !line_sets(line, body, ch[i]->key, &val))
                continue;
            size_t c = comment_at(line, val, body);
            st = ml_buf_add(out, line, val);
            if (st == ML_OK)
                st = ml_buf_adds(out, yaml_value(ch[i], deepspeed_name));
            if (st == ML_OK)
                st = ml_buf_add(out, line + c, ln - c);
            done[i] = replaced = true;
        }
        if (!replaced && st == ML_OK)
            st = ml_buf_add(out, line, ln);
        if (nl && st == ML_OK)
            st = ml_buf_addc(out, '\n');
        pos += ln + (nl ? 1 : 0);
    }
    bool header = false;
    for (uint32_t i = 0; i < n && st == ML_OK; i++) {
        if (done[i])
            continue;
        if (!header) {
            if (out->len && out->buf[out->len - 1] != '\n')
                st = ml_buf_addc(out, '\n');
            if (st == ML_OK)
                st = ml_buf_adds(out, "\n### added by memledger fit\n");
            header = true;
        }
        if (st == ML_OK)
            st = ml_buf_addf(out, "%s: %s\n", ch[i]->key, yaml_value(ch[i], deepspeed_name));
    }
    if (st != ML_OK)
        return ml_diag_set(diag, st, "the patched YAML is too large");
    return ML_OK;
}

/* ---- DeepSpeed JSON ----------------------------------------------------------------------- */

/* LLaMA-Factory's examples/deepspeed/ds_z{2,3}_config.json (notes §6.8), the start when the run
 * had no DeepSpeed file. */
static const char ds_z2[] =
    "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\","
    " \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\","
    " \"zero_allow_untested_optimizer\": true, \"fp16\": {\"enabled\": \"auto\", \"loss_scale\": 0,"
    " \"loss_scale_window\": 1000, \"initial_scale_power\": 16, \"hysteresis\": 2, \"min_loss_scale\": 1},"
    " \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 2, \"allgather_partitions\": true,"
    " \"allgather_bucket_size\": 500000000, \"overlap_comm\": false, \"reduce_scatter\": true,"
    " \"reduce_bucket_size\": 500000000, \"contiguous_gradients\": true, \"round_robin_gradients\": true}}";
static const char ds_z3[] =
    "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\","
    " \"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\","
    " \"zero_allow_untested_optimizer\": true, \"fp16\": {\"enabled\": \"auto\", \"loss_scale\": 0,"
    " \"loss_scale_window\": 1000, \"initial_scale_power\": 16, \"hysteresis\": 2, \"min_loss_scale\": 1},"
    " \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3, \"overlap_comm\": false,"
    " \"contiguous_gradients\": true, \"sub_group_size\": 1000000000, \"reduce_bucket_size\": \"auto\","
    " \"stage3_prefetch_bucket_size\": \"auto\", \"stage3_param_persistence_threshold\": \"auto\","
    " \"stage3_max_live_parameters\": 1000000000, \"stage3_max_reuse_distance\": 1000000000,"
    " \"stage3_gather_16bit_weights_on_model_save\": true}}";

/* Write a cJSON tree with our writer. */
static void emit(struct ml_json *j, const cJSON *it)
{
    if (cJSON_IsObject(it)) {
        ml_json_object_begin(j);
        for (const cJSON *c = it->child; c; c = c->next) {
            ml_json_key(j, c->string ? c->string : "");
            emit(j, c);
        }
        ml_json_object_end(j);
    } else if (cJSON_IsArray(it)) {
        ml_json_array_begin(j);
        for (const cJSON *c = it->child; c; c = c->next)
            emit(j, c);
        ml_json_array_end(j);
    } else if (cJSON_IsString(it)) {
        ml_json_str(j, it->valuestring);
    } else if (cJSON_IsBool(it)) {
        ml_json_bool(j, cJSON_IsTrue(it));
    } else if (cJSON_IsNumber(it)) {
        double v = it->valuedouble;
        if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) {
            ml_json_i64(j, (int64_t)v);
        } else {
            char t[40];
            (void)snprintf(t, sizeof(t), "%.17g", isfinite(v) ? v : 0.0);
            ml_json_number_text(j, t);
        }
    } else {
        ml_json_null(j);
    }
}

/* Set key in obj to the value text of a change: a number, true/false, "auto", or an offload block. */
static bool set_value(cJSON *obj, const char *key, const char *to)
{
    cJSON *v;
    if (!strncmp(to, "cpu", 3)) {
        v = cJSON_CreateObject();
        if (v) {
            cJSON_AddStringToObject(v, "device", "cpu");
            cJSON_AddBoolToObject(v, "pin_memory", strstr(to, "pin_memory") != NULL);
        }
    } else if (!strcmp(to, "true") || !strcmp(to, "false")) {
        v = cJSON_CreateBool(!strcmp(to, "true"));
    } else if (!strncmp(to, "ZeRO-", 5)) {
        v = cJSON_CreateNumber((double)(to[5] - '0'));
    } else if (to[0] >= '0' && to[0] <= '9') {
        /* Integers only (bucket sizes, distances): read without the locale-dependent strtod. */
        uint64_t u = 0;
        const char *q = to;
        while (*q >= '0' && *q <= '9' && u < ((uint64_t)1 << 53))
            u = u * 10 + (uint64_t)(*q++ - '0');
        v = *q ? cJSON_CreateString(to) : cJSON_CreateNumber((double)u);
    } else {
        v = cJSON_CreateString(to);
    }
    if (!v)
        return false;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) != 0;
    return cJSON_AddItemToObject(obj, key, v) != 0;
}

enum ml_status ml_patch_deepspeed(const char *data, size_t len, const struct ml_plan *p,
                                  struct ml_buf *out, struct ml_diag *diag)
{
    const char *src = data;
    size_t n = len;
    if (!src || !n) {
        src = p->t.zero.stage == 3 ? ds_z3 : ds_z2;
        n = strlen(src);
    }
    cJSON *root = cJSON_ParseWithLength(src, n);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ml_diag_set(diag, ML_ERR_PARSE, "the DeepSpeed file is not a JSON object");
    }
    cJSON *zo = cJSON_GetObjectItemCaseSensitive(root, "zero_optimization");
    if (!zo) {
        zo = cJSON_AddObjectToObject(root, "zero_optimization");
    }
    bool ok = zo != NULL && cJSON_IsObject(zo);
    for (uint32_t i = 0; i < p->n && ok; i++)
        if (p->ch[i].where == ML_IN_DEEPSPEED)
            ok = set_value(zo, p->ch[i].key, p->ch[i].to);
    enum ml_status st = ML_ERR_NOMEM;
    if (ok) {
        struct ml_json j;
        ml_json_init(&j, out);
        emit(&j, root);
        st = ml_json_finish(&j);
    }
    cJSON_Delete(root);
    if (st != ML_OK)
        return ml_diag_set(diag, st, "the patched DeepSpeed file could not be written");
    return ML_OK;
}

/* ---- environment ---------------------------------------------------------------------------- */

enum ml_status ml_patch_env(const struct ml_plan *p, struct ml_buf *out)
{
    enum ml_status st = ml_buf_adds(out, "# memledger fit: export these before launching (source this file)\n");
    for (uint32_t i = 0; i < p->n && st == ML_OK; i++)
        if (p->ch[i].where == ML_IN_ENV)
            st = ml_buf_addf(out, "export %s=%s\n", p->ch[i].key, p->ch[i].to);
    return st;
}
