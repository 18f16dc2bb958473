/*
 * ledger_json.c - the JSON form of a ledger's model, components, phases and notes (DESIGN §3
 * keys), shared by the train and infer reports; and ml_set_gib, the GiB cell of every report.
 */
#include "memledger/report.h"

#include "memledger/json.h"
#include "memledger/ledger.h"
#include "memledger/render.h"
#include "memledger/units.h"

void ml_set_gib(struct ml_buf *b, uint64_t bytes)
{
    ml_buf_reset(b);
    ml_fmt_gib(b, bytes);
}

const char *ml_verdict_sgr(int verdict)
{
    return verdict == ML_FITS ? ML_SGR_GREEN : verdict == ML_TIGHT ? ML_SGR_YELLOW : ML_SGR_RED;
}

void ml_ledger_json_components(struct ml_json *j, const struct ml_ledger *l)
{
    ml_json_key(j, "components");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < l->n; i++) {
        const struct ml_entry *e = &l->e[i];
        ml_json_object_begin(j);
        ml_json_kstr(j, "id", ml_comp_name(e->id));
        ml_json_ku64(j, "bytes", e->bytes);
        ml_json_key(j, "phases");
        ml_json_array_begin(j);
        for (int p = 0; p < ML_PHASE_COUNT; p++)
            if ((e->phases & ML_PH(p)) && l->phase_active[p])
                ml_json_str(j, ml_phase_name((enum ml_phase)p));
        ml_json_array_end(j);
        ml_json_kstr(j, "figure", ml_figure_name(e->figure));
        ml_json_kstr(j, "rule", e->rule);
        ml_json_kstr(j, "source", e->source);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
}

void ml_ledger_json_phases(struct ml_json *j, const struct ml_ledger *l)
{
    ml_json_key(j, "phases");
    ml_json_array_begin(j);
    for (int p = 0; p < ML_PHASE_COUNT; p++) {
        if (!l->phase_active[p])
            continue;
        ml_json_object_begin(j);
        ml_json_kstr(j, "phase", ml_phase_name((enum ml_phase)p));
        ml_json_ku64(j, "allocated_bytes", l->phase_allocated[p]);
        ml_json_ku64(j, "reserved_bytes", l->phase_reserved[p]);
        ml_json_object_end(j);
    }
    ml_json_array_end(j);
}

void ml_ledger_json_model(struct ml_json *j, const struct ml_model_ref *m, const struct ml_ledger *l)
{
    ml_json_key(j, "model");
    ml_json_object_begin(j);
    ml_json_kstr(j, "name", m->name);
    ml_json_kstr(j, "hub_id", m->hub_id[0] ? m->hub_id : NULL);
    ml_json_ku64(j, "params", l->params);
    ml_json_ku64(j, "trainable_params", l->trainable);
    ml_json_object_end(j);
}

void ml_ledger_json_notes(struct ml_json *j, const struct ml_ledger *l)
{
    ml_json_key(j, "notes");
    ml_json_array_begin(j);
    for (uint32_t i = 0; i < l->n_notes; i++)
        ml_json_str(j, l->notes[i]);
    ml_json_array_end(j);
}
