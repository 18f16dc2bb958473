/*
 * fit_json.c - memledger fit's plans as JSON (fit.h; the keys are docs/cli/fit.md's). Bytes out.
 */
#include "memledger/fit.h"

#include "memledger/json.h"
#include "serve_args.h"

/* "changes": [{in, key, from, to}, ...] */
static void json_changes(struct ml_json *j, const struct ml_change *ch, uint32_t n)
{
    ml_json_key(j, "changes");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < n; k++) {
        ml_json_object_begin(j);
        ml_json_kstr(j, "in", ml_where_name(ch[k].where));
        ml_json_kstr(j, "key", ch[k].key);
        ml_json_kstr(j, "from", ch[k].from);
        ml_json_kstr(j, "to", ch[k].to);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
}

enum ml_status ml_render_fit_json(struct ml_buf *out, const struct ml_fit_view *v, const struct ml_fit_result *r)
{
    struct ml_json j;
    ml_json_init(&j, out);
    ml_json_document_begin(&j);
    ml_json_kstr(&j, "model", v->model);
    ml_json_ku64(&j, "capacity_bytes", v->cluster->gpu.capacity_bytes);
    ml_json_ku64(&j, "target_bytes", r->target_bytes);
    ml_json_ku64(&j, "base_device_used_bytes", r->base_device);
    ml_json_kbool(&j, "base_fits", r->base_fits);
    ml_json_ku64(&j, "ledgers_evaluated", r->evaluated);
    ml_json_key(&j, "plans");
    ml_json_array_begin(&j);
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ml_plan *p = &r->plans[i];
        ml_json_object_begin(&j);
        ml_json_kstr(&j, "summary", p->why);
        ml_json_key(&j, "cost");
        ml_json_fixed(&j, p->cost_permille, 3);
        ml_json_kbool(&j, "changes_data", p->changes_data);
        ml_json_kbool(&j, "changes_method", p->changes_method);
        ml_json_kbool(&j, "needs_hardware", p->needs_hardware);
        ml_json_ku64(&j, "device_used_bytes", p->device_used);
        ml_json_ku64(&j, "headroom_bytes", p->headroom);
        ml_json_kstr(&j, "peak_phase", ml_phase_name(p->peak_phase));
        json_changes(&j, p->ch, p->n);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_object_end(&j);
    return ml_json_finish(&j);
}

/* "command", "args" and "engine_args" of a serving plan (docs/json.md, "fit --serve"). */
static void json_serve_args(struct ml_json *j, const struct ml_fit_view *v, const struct ml_infer *s)
{
    struct ml_buf cmd;
    ml_buf_init(&cmd, 0);
    if (ml_render_serve_command(&cmd, v->model_id ? v->model_id : v->model, s, false) != ML_OK)
        j->status = ML_ERR_NOMEM;
    ml_json_kstr(j, "command", cmd.buf);
    ml_buf_release(&cmd);
    struct ml_serve_arg a[ML_SERVE_MAX_ARGS];
    uint32_t n = ml_serve_args(s, a);
    ml_json_key(j, "args");
    ml_json_array_begin(j);
    for (uint32_t k = 0; k < n; k++) {
        ml_json_str(j, a[k].flag);
        ml_json_str(j, a[k].value);
    }
    ml_json_array_end(j);
    ml_json_key(j, "engine_args");
    ml_json_object_begin(j);
    for (uint32_t k = 0; k < n; k++) {
        ml_json_key(j, a[k].py);
        if (a[k].text)
            ml_json_str(j, a[k].value);
        else
            ml_json_number_text(j, a[k].value);
    }
    ml_json_object_end(j);
}

enum ml_status ml_render_fit_infer_json(struct ml_buf *out, const struct ml_fit_view *v, enum ml_engine engine,
                                        const struct ml_fit_infer_result *r)
{
    struct ml_json j;
    ml_json_init(&j, out);
    ml_json_document_begin(&j);
    ml_json_kstr(&j, "model", v->model);
    ml_json_kstr(&j, "model_id", v->model_id ? v->model_id : v->model);
    ml_json_kstr(&j, "engine", ml_engine_name(engine));
    ml_json_kbool(&j, "base_fits", r->base_fits);
    ml_json_kstr(&j, "base_error", r->base_error[0] ? r->base_error : NULL);
    ml_json_key(&j, "plans");
    ml_json_array_begin(&j);
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ml_fit_infer_plan *p = &r->plans[i];
        ml_json_object_begin(&j);
        ml_json_ku64(&j, "kv_tokens", p->sv.kv_tokens);
        ml_json_ku64(&j, "max_model_len", p->sv.max_model_len);
        ml_json_key(&j, "max_concurrency");
        ml_json_fixed(&j, p->sv.max_concurrency_x100, 2);
        json_changes(&j, p->ch, p->n);
        json_serve_args(&j, v, &p->s);
        ml_json_object_end(&j);
    }
    ml_json_array_end(&j);
    ml_json_object_end(&j);
    return ml_json_finish(&j);
}
