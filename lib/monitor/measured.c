/*
 * measured.c - reading measured runs for `memledger compare`: the JSON Lines written by
 * python/memledger_hook.py and by `memledger watch --out`. Bytes in, struct out; every line is
 * parsed with cJSON and nothing of cJSON escapes (trap 5: numbers are checked to be finite,
 * whole and in range before they become uint64_t; trap 6: no global error pointer).
 */
#include "memledger/monitor.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "i18n.h"

/* A byte count: a finite, whole, non-negative number below 2^63 (null = absent). */
static enum ml_status get_u64(const cJSON *obj, const char *key, bool *present, uint64_t *out, char *why, size_t why_n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *present = false;
    if (!v || cJSON_IsNull(v))
        return ML_OK;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d < 0 || d != floor(d) || d >= 9223372036854775808.0) {
        (void)snprintf(why, why_n, _("'%s' must be a whole number of bytes"), key);
        return ML_ERR_PARSE;
    }
    *present = true;
    *out = (uint64_t)d;
    return ML_OK;
}

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

static void fig_max(struct ml_measured_fig *f, bool present, uint64_t v)
{
    if (!present)
        return;
    if (!f->ok || v > f->bytes)
        f->bytes = v;
    f->ok = true;
}

/* Take the figure key of obj into f (the largest seen). */
static enum ml_status take(const cJSON *obj, const char *key, struct ml_measured_fig *f, char *why, size_t n)
{
    bool present;
    uint64_t v = 0;
    enum ml_status st = get_u64(obj, key, &present, &v, why, n);
    if (st == ML_OK)
        fig_max(f, present, v);
    return st;
}

static enum ml_status take_u64(const cJSON *obj, const char *key, uint64_t *dst, char *why, size_t n)
{
    bool present;
    uint64_t v = 0;
    enum ml_status st = get_u64(obj, key, &present, &v, why, n);
    if (st == ML_OK && present && v > *dst)
        *dst = v;
    return st;
}

static enum ml_status record(const cJSON *o, struct ml_measured *m, char *why, size_t n)
{
    const char *type = get_str(o, "type");
    enum ml_status st = ML_OK;
    if (!type) {
        (void)snprintf(why, n, "%s", _("a record without a \"type\" string"));
        return ML_ERR_PARSE;
    }
    if (!strcmp(type, "meta") || !strcmp(type, "start")) {
        const char *s;
        if ((s = get_str(o, "device_name")))
            (void)snprintf(m->device_name, sizeof(m->device_name), "%s", s);
        if ((s = get_str(o, "torch")))
            (void)snprintf(m->torch_version, sizeof(m->torch_version), "%s", s);
        if ((s = get_str(o, "backend")))
            (void)snprintf(m->backend, sizeof(m->backend), "%s", s);
        st = take_u64(o, "total_bytes", &m->total_bytes, why, n);
        const cJSON *devs = cJSON_GetObjectItemCaseSensitive(o, "devices");
        const cJSON *d0 = cJSON_IsArray(devs) ? cJSON_GetArrayItem(devs, 0) : NULL;
        if (st == ML_OK && cJSON_IsObject(d0)) {
            if ((s = get_str(d0, "name")) && !m->device_name[0])
                (void)snprintf(m->device_name, sizeof(m->device_name), "%s", s);
            st = take_u64(d0, "total_bytes", &m->total_bytes, why, n);
        }
    } else if (!strcmp(type, "static")) {
        if (st == ML_OK)
            st = take(o, "weights_bytes", &m->weights, why, n);
        if (st == ML_OK)
            st = take(o, "trainable_weights_bytes", &m->trainable_weights, why, n);
        if (st == ML_OK)
            st = take(o, "gradients_bytes", &m->gradients, why, n);
        if (st == ML_OK)
            st = take(o, "optimizer_bytes", &m->optimizer, why, n);
        if (st == ML_OK)
            st = take_u64(o, "params", &m->params, why, n);
        if (st == ML_OK)
            st = take_u64(o, "trainable_params", &m->trainable_params, why, n);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "weights_by_dtype");
        if (!cJSON_IsObject(dt))
            dt = NULL;
        const cJSON *e;
        cJSON_ArrayForEach(e, dt)
        {
            if (st != ML_OK || !e->string)
                break;
            bool present;
            uint64_t v = 0;
            st = get_u64(dt, e->string, &present, &v, why, n);
            uint32_t i = 0;
            while (i < m->n_dtypes && strcmp(m->dtypes[i].name, e->string))
                i++;
            if (st != ML_OK || !present || (i == m->n_dtypes && i == ML_MEASURED_MAX_DTYPES))
                continue;
            if (i == m->n_dtypes) {
                (void)snprintf(m->dtypes[i].name, sizeof(m->dtypes[i].name), "%s", e->string);
                m->n_dtypes++;
            }
            if (v > m->dtypes[i].bytes)
                m->dtypes[i].bytes = v;
        }
    } else if (!strcmp(type, "step") || !strcmp(type, "phase")) {
        bool step = !strcmp(type, "step");
        struct ml_measured_fig pa = {false, 0}, pr = {false, 0};
        st = take(o, "peak_allocated_bytes", &pa, why, n);
        if (st == ML_OK)
            st = take(o, "peak_reserved_bytes", &pr, why, n);
        if (st == ML_OK)
            st = take(o, "device_used_bytes", &m->device_used, why, n);
        if (st == ML_OK && m->device_used.ok && !m->device_source[0])
            (void)snprintf(m->device_source, sizeof(m->device_source), "mem_get_info");
        const char *ph = get_str(o, "phase");
        if (!ph)
            ph = step ? "train" : "unknown";
        if (st == ML_OK && step) {
            m->n_steps++;
            fig_max(&m->peak_allocated, pa.ok, pa.bytes);
            fig_max(&m->peak_reserved, pr.ok, pr.bytes);
            st = take(o, "activation_peak_bytes", &m->activations, why, n);
        }
        if (st == ML_OK && (pa.ok || pr.ok)) {
            uint32_t i = 0;
            while (i < m->n_phases && strcmp(m->phases[i].name, ph))
                i++;
            if (i < ML_MEASURED_MAX_PHASES) {
                if (i == m->n_phases) {
                    (void)snprintf(m->phases[i].name, sizeof(m->phases[i].name), "%s", ph);
                    m->n_phases++;
                }
                if (pa.bytes > m->phases[i].peak_allocated)
                    m->phases[i].peak_allocated = pa.bytes;
                if (pr.bytes > m->phases[i].peak_reserved)
                    m->phases[i].peak_reserved = pr.bytes;
            }
        }
    } else if (!strcmp(type, "sample")) {
        /* memledger watch: the device figure. The baseline is before the run. */
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "baseline");
        struct ml_measured_fig used = {false, 0};
        st = take(o, "used_bytes", &used, why, n);
        if (st == ML_OK)
            st = take_u64(o, "total_bytes", &m->total_bytes, why, n);
        /* What the device held before the run (other processes, the driver) is not the run's:
         * the baseline is taken off each sample (docs/cli/compare.md). */
        if (st == ML_OK && cJSON_IsTrue(b) && used.ok && used.bytes > m->baseline_used)
            m->baseline_used = used.bytes;
        if (st == ML_OK && !cJSON_IsTrue(b) && used.ok) {
            m->n_samples++;
            fig_max(&m->device_used, true, used.bytes > m->baseline_used ? used.bytes - m->baseline_used : 0);
            const char *src = get_str(o, "source");
            if (src)
                (void)snprintf(m->device_source, sizeof(m->device_source), "%s", src);
        }
    }
    return st;
}

enum ml_status ml_measured_parse(const char *data, size_t len, const char *origin, struct ml_measured *out,
                                 struct ml_diag *diag)
{
    memset(out, 0, sizeof(*out));
    ml_diag_at(diag, origin, 0, 0);
    if (len > ML_MEASURED_MAX_BYTES)
        return ml_diag_set(diag, ML_ERR_TOOBIG, _("over the %zu-byte limit for a measurement file"),
                           ML_MEASURED_MAX_BYTES);
    uint32_t line = 0;
    for (size_t pos = 0; pos < len;) {
        const char *start = data + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        line++;
        if (n > ML_MEASURED_MAX_LINE) {
            ml_diag_at(diag, origin, line, 0);
            return ml_diag_set(diag, ML_ERR_TOOBIG, _("a record over %zu bytes"), ML_MEASURED_MAX_LINE);
        }
        size_t k = 0;
        while (k < n && (start[k] == ' ' || start[k] == '\t' || start[k] == '\r'))
            k++;
        if (k == n)
            continue;
        if (memchr(start, '\0', n)) {
            ml_diag_at(diag, origin, line, 0);
            return ml_diag_set(diag, ML_ERR_PARSE, "%s", _("binary data in a JSON Lines file"));
        }
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithLengthOpts(start, n, &end, 0);
        if (!o && !nl && memchr(start, '{', n)) {
            out->torn_line = line; /* the writer never finished it */
            break;
        }
        if (!o) {
            uint32_t col = end && end >= start ? (uint32_t)(end - start) + 1 : 0;
            ml_diag_at(diag, origin, line, col);
            return ml_diag_set(diag, ML_ERR_PARSE, "%s", _("malformed JSON"));
        }
        /* Anything after the object other than blanks is an error too. */
        while (end && end < start + n && (*end == ' ' || *end == '\t' || *end == '\r'))
            end++;
        char why[200] = "";
        enum ml_status st = ML_OK;
        if (end && end != start + n) {
            (void)snprintf(why, sizeof(why), "%s", _("more than one JSON value on the line"));
            st = ML_ERR_PARSE;
        } else if (!cJSON_IsObject(o)) {
            (void)snprintf(why, sizeof(why), "%s", _("expected a JSON object"));
            st = ML_ERR_PARSE;
        } else {
            st = record(o, out, why, sizeof(why));
        }
        cJSON_Delete(o);
        if (st != ML_OK) {
            ml_diag_at(diag, origin, line, 0);
            return ml_diag_set(diag, st, "%s", why);
        }
        out->n_records++;
    }
    if (!out->n_steps && !out->weights.ok && !out->n_samples && !out->device_used.ok) {
        ml_diag_at(diag, origin, out->torn_line, 0);
        if (out->torn_line)
            return ml_diag_set(diag, ML_ERR_INVALID, "%s",
                               _("no measurement before this last line, which is cut short"));
        return ml_diag_set(
            diag, ML_ERR_INVALID, "%s",
            _("no measurement in the file (records of type step, static or sample; see docs/cli/compare.md)"));
    }
    return ML_OK;
}
