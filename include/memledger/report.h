/*
 * report.h - what the commands print: structs in, bytes out (lib/render). The one header of the
 * renderers: every command's report, listing and picture (fit's plans are still declared with the
 * search in fit.h). They write with the writers of lib/util: json.h (JSON), render.h (tables, display
 * widths, folding, struct ml_layout); the SVG pictures draw with ledger_svg.h (lib/render).
 *
 * Each command's text, Markdown and JSON report is a function of the structs the core computed;
 * it appends to a struct ml_buf and touches nothing else, so the JSON contracts (docs/cli/<cmd>.md)
 * are unit-testable and a build without the CLI (a web page, a binding) prints the same bytes.
 * Text functions ignore a full buffer (the caller's write fails later); JSON functions return the
 * writer's first failure (ml_json_finish).
 */
#ifndef ML_REPORT_H
#define ML_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memledger/buf.h"
#include "memledger/model_ref.h"
#include "memledger/status.h"

struct ml_card;
struct ml_child_exit;
struct ml_cluster;
struct ml_diag;
struct ml_diag_run;
struct ml_diagnosis;
struct ml_gpu;
struct ml_incident;
struct ml_infer;
struct ml_inventory;
struct ml_json;
struct ml_layout;
struct ml_ledger;
struct ml_lora_count;
struct ml_measured;
struct ml_oom_event;
struct ml_serve;
struct ml_train;
struct ml_watch;

/* Replace b's text with bytes in GiB ("14.50 GiB", ml_fmt_gib). */
void ml_set_gib(struct ml_buf *b, uint64_t bytes);

/* The colour of a verdict (enum ml_verdict of ledger.h): green fits, yellow tight, red does not fit. */
const char *ml_verdict_sgr(int verdict);

/* ---- the ledger blocks that train and infer share (lib/render/ledger_json.c) ---------------- */

/* Write "components": [...] (id, bytes, phases, figure, rule, source) and "phases": [...]
 * (phase, allocated_bytes, reserved_bytes) into an open JSON object; active phases only. */
void ml_ledger_json_components(struct ml_json *j, const struct ml_ledger *l);
void ml_ledger_json_phases(struct ml_json *j, const struct ml_ledger *l);
/* "model": {name, hub_id, params, trainable_params} and "notes": [...] of a ledger. */
void ml_ledger_json_model(struct ml_json *j, const struct ml_model_ref *m, const struct ml_ledger *l);
void ml_ledger_json_notes(struct ml_json *j, const struct ml_ledger *l);

/* ---- memledger train (lib/render/train_report.c; docs/cli/train.md) -------------------------- */

/* The run, the component table, the phases, the peak, the three figures, the verdict, host RAM,
 * notes and t->warnings, laid out for lay (render.h; NULL: the natural layout, no colour). */
void ml_render_train_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                          const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_layout *lay);
void ml_render_train_markdown(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                              const struct ml_cluster *c, const struct ml_ledger *l);
enum ml_status ml_render_train_json(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                                    const struct ml_cluster *c, const struct ml_ledger *l);

/* ---- memledger infer (lib/render/infer_report.c; docs/cli/infer.md) -------------------------- */

void ml_render_infer_text(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                          const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv,
                          const struct ml_layout *lay);
/* The text report in a fenced block under a heading. */
void ml_render_infer_markdown(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                              const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv);
enum ml_status ml_render_infer_json(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                                    const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv);

/* The report in the form asked for (--markdown, --json, else the terminal's text at lay). */
enum ml_report_form { ML_FORM_TEXT, ML_FORM_MARKDOWN, ML_FORM_JSON };
enum ml_status ml_render_infer(struct ml_buf *out, enum ml_report_form form, const struct ml_layout *lay,
                               const struct ml_model_ref *m, const struct ml_infer *s, const struct ml_cluster *c,
                               const struct ml_ledger *l, const struct ml_serve *sv);

/* ---- memledger params (lib/render/params_report.c; docs/cli/params.md) ------------------------ */

struct ml_params_report {
    const struct ml_model_ref *m;
    const struct ml_inventory *inv;
    const struct ml_lora_count *lora; /* NULL: no LoRA asked for */
    uint64_t lora_rank;
    const char *lora_target; /* as given ("all", "q_proj,v_proj") */
};

void ml_render_params_text(struct ml_buf *out, const struct ml_params_report *p);
enum ml_status ml_render_params_json(struct ml_buf *out, const struct ml_params_report *p);

/* ---- memledger compare (lib/render/compare_report.c; docs/cli/compare.md) -------------------- */

#define ML_COMPARE_ROWS 7 /* weights, gradients, optimizer, activations, peak allocated, reserved, device */

/* One compared figure. */
struct ml_compare_row {
    const char *id;    /* JSON id */
    const char *label; /* table label */
    bool measured_ok;
    uint64_t measured;
    uint64_t ledger;
    bool has_error;
    int64_t error_permille; /* (ledger - measured) / measured, rounded half away from zero */
    bool off;               /* beyond the tolerance */
    const char *revisit;    /* the assumption to look at when off */
};

/* A measured run against the ledger for the same settings. */
struct ml_compare_report {
    const char *file; /* the measurement file as named */
    const struct ml_measured *measured;
    const struct ml_model_ref *m;
    const struct ml_train *t;
    const struct ml_cluster *cl;
    const struct ml_ledger *l;
    uint64_t tolerance_pct;                      /* the error that counts as off */
    struct ml_compare_row rows[ML_COMPARE_ROWS]; /* ml_compare_rows */
};

/* Each figure's measured and ledger bytes, error and verdict at tol_pct percent. The ledger's
 * weights include the fp32 master copy and quantization state (every storage the hook walks);
 * activations are peak - static, as measured. Returns how many measured figures are off. */
uint32_t ml_compare_rows(const struct ml_measured *m, const struct ml_ledger *l, uint64_t tol_pct,
                         struct ml_compare_row *rows);
void ml_render_compare_text(struct ml_buf *out, const struct ml_compare_report *c, const struct ml_layout *lay);
enum ml_status ml_render_compare_json(struct ml_buf *out, const struct ml_compare_report *c);

/* ---- memledger diagnose (lib/render/diagnose_report.c; docs/cli/diagnose.md) ---------------- */

/* A diagnosis and what it was made from. */
struct ml_diag_report {
    const struct ml_incident *inc; /* the logs as scanned */
    const struct ml_diagnosis *dg; /* NULL when the logs hold no out-of-memory event */
    const struct ml_diag_run *run; /* the run the fixes were priced with (oom_settings.h) */
    const char *const *inputs;     /* each log's name as printed ("<stdin>"), by file index */
    uint32_t n_inputs;
    bool all;    /* every event, finding and fix (--all), not the first ones */
    bool config; /* a training config was given (--config) */
};

/* WHAT HAPPENED (the primary event, the ledger next to it, the other events), WHY (the findings
 * and their evidence), WHAT TO DO (every fix once, cheapest first), CHECK NEXT; or the one line
 * saying no out-of-memory event was found. */
void ml_render_diagnose_text(struct ml_buf *out, const struct ml_diag_report *rep, const struct ml_layout *lay);
/* inputs, lines, bytes, messages_seen, events, primary, findings, ledger, serving_ledger,
 * context, checks; inputs, lines, bytes and empty events and findings without an event. */
enum ml_status ml_render_diagnose_json(struct ml_buf *out, const struct ml_diag_report *rep);
/* --json's report, else the text at lay. */
enum ml_status ml_render_diagnose(struct ml_buf *out, bool json, const struct ml_diag_report *rep,
                                  const struct ml_layout *lay);

/* ---- the commands' pictures (lib/render/ledger_svg.c; the CLI's --svg, the web page) -------- */

/* memledger train --svg / infer --svg: ml_ledger_svg with the first line of the command's text
 * report (the model and the run) under the title and the card's name at the capacity line. */
enum ml_status ml_render_train_svg(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_train *t,
                                   const struct ml_cluster *c, const struct ml_ledger *l);
enum ml_status ml_render_infer_svg(struct ml_buf *out, const struct ml_model_ref *m, const struct ml_infer *s,
                                   const struct ml_cluster *c, const struct ml_ledger *l, const struct ml_serve *sv);

/* memledger diagnose --svg: the primary event's figures (its file and line, its GPU) beside the
 * training ledger's bar for the event's phase when the run's configs were given, else alone.
 * ML_ERR_INVALID when there is no event, or it carries none of allocated, reserved and total. */
enum ml_status ml_render_diagnose_svg(struct ml_buf *out, const struct ml_diag_report *rep);

/* ---- memledger card (lib/render/card_report.c; docs/cli/card.md; card.h computes it) -------- */

/* The card as text tables that fit lay's width (NULL: the natural layout), as Markdown (both
 * translated; the handbook's cells only with handbook), and as the JSON document of docs/json.md
 * "card" (the cells always). */
void ml_render_card_text(struct ml_buf *out, const struct ml_card *k, const struct ml_layout *lay, bool handbook);
void ml_render_card_markdown(struct ml_buf *out, const struct ml_card *k, bool handbook);
enum ml_status ml_render_card_json(struct ml_buf *out, const struct ml_card *k);

/* ---- memledger models, gpus (lib/render/catalog_list.c, gpu_list.c; docs/cli/models.md, gpus.md) */

/*
 * `memledger models`: every entry as a table (translated) or as the JSON
 * document of docs/json.md "models". An entry whose config cannot be read is left out and its
 * diagnostic passed to bad (when not NULL); *n_bad counts them. Returns the writer's status.
 */
enum ml_status ml_render_models(struct ml_buf *out, bool json, void (*bad)(const struct ml_diag *d), size_t *n_bad);

/* `memledger models --types`: the model_type values a config.json may declare, comma-separated on
 * one line, or as JSON ("model_types"). */
enum ml_status ml_render_model_types(struct ml_buf *out, bool json);

/* `memledger gpus QUERY`: g, resolved from query, as one line (translated)
 * or as the JSON document of docs/json.md "gpus" (with its catalog row's aliases and source). */
enum ml_status ml_render_gpu(struct ml_buf *out, const char *query, const struct ml_gpu *g, bool json);

/* `memledger gpus`: the catalog as a table (translated) or as JSON. Returns the writer's status. */
enum ml_status ml_render_gpus(struct ml_buf *out, bool json);

/* ---- memledger watch (lib/render/watch_report.c; docs/cli/watch.md) ------------------------- */
/* What watch prints when the command ends, and the summary and out-of-memory records of its
 * timeline. In a library of its own (ml_watch_report): it reads the monitor's structs and names
 * (monitor.h), which the core does not link. */

/* A finished watch. */
struct ml_watch_report {
    char *const *argv;       /* the command */
    const char *signal_name; /* strsignal(ex->code) when a signal killed it */
    uint32_t n_dev;          /* GPUs sampled (0: no backend, or no GPU) */
    const struct ml_watch *w;
    const struct ml_child_exit *ex;
    const struct ml_incident *inc; /* the OOM scan of the command's stderr */
    const uint64_t *ev_t_ns;       /* when each of inc's events was first seen */
    const char *out, *svg;         /* --out and --svg, NULL when not given */
};

/* How it ended, per GPU the peak, the other processes, the first out-of-memory error. */
void ml_watch_report(struct ml_buf *out, const struct ml_watch_report *r);

/* 'the command' as the report and the plot's title quote it (cut after 80 bytes). */
void ml_watch_command_text(struct ml_buf *b, char *const *argv);

/* The timeline's {"type":"summary",...} and {"type":"oom",...} records, each one JSON line. */
void ml_watch_summary_line(struct ml_buf *b, const struct ml_watch *w, const struct ml_child_exit *ex,
                           uint64_t oom_events);
void ml_watch_oom_line(struct ml_buf *b, const struct ml_oom_event *e, uint64_t t_ns);

#endif /* ML_REPORT_H */
