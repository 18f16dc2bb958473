/*
 * diagnose_report.c - validation_diagnose: the evidence weights of `memledger diagnose`, fitted on
 * the OOM corpus, and their leave-one-out report (validation/DIAGNOSE.md).
 *
 *   validation_diagnose FIXTURES OUT.md [--weights OUT.inc] [--check FLOORS.txt]
 *
 * FIXTURES is tests/fixtures/oom: labels.jsonl and its .log files (labelled logs), oom-cases.jsonl
 * (reports; those with an oom_text are read), oom-cases-numbers.jsonl (the numbers an independent
 * derivation reads from each report's text), cause-tags.tsv (the reports' tags -> DESIGN's cause
 * ids) and not-tellable.tsv (the labels the text cannot give, with the reason).
 *
 * Every record is scanned and diagnosed as `memledger diagnose` does (no setup); its evidence is
 * dg.features, which does not depend on the weights. The weights are fitted by L2-regularised
 * softmax regression over the rule-structured parameters of ML_EVIDENCE (include/memledger/
 * diagnose.h): a tied group's parameter (its reading x 1, its other causes x 1/2) or a parameter
 * per (row, cause); a record's outcomes are the causes its specific evidence names plus the
 * reference "none of these", fixed at 0; its target is its label when a candidate, else the
 * reference (records labelled unknown teach the reference: that is how "cannot tell" is learnt).
 * Objective: the mean of -log p(target) + lambda/2 |theta|^2 / n, lambda = 1 (a unit Gaussian
 * prior, fixed a priori). Solver: Nesterov-accelerated full-batch gradient descent from zero,
 * step 1, 600 iterations: deterministic. Leave-one-out: for every report id, the fit without every
 * record of that id (a log and the report of the same id leave together), scored on those records.
 * Strict leave-one-out drops, for the held-out id, every row or phase reading added for issue 13
 * that no other id's records use (a rule written from one case does not exist without it).
 *
 * --weights writes the fit on every record as the C table lib/diagnose/evidence_weights.inc. --check
 * exits 1 when a figure is below its floor in FLOORS.txt ("numbers 0.97", "primary 0.80", ...,
 * each the least share, of the records it counts) or when the committed table
 * (ml_evidence_fitted, compiled into lib/diagnose) is not this fit (2 milli of tolerance: libm's exp
 * may differ in its last bits). The report goes to OUT.md (temporary file, then renamed); no
 * timestamps, no absolute paths. Exit 2 on a usage or I/O error.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/oom.h"

#define MAX_RECORDS 256
#define ITERS       600
#define LAMBDA      1.0
#define REF         ML_CAUSE_COUNT /* the reference outcome "none of these" */

#ifdef __GNUC__
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

static void die(const char *what, const char *path)
{
    fprintf(stderr, "validation_diagnose: %s: %s%s%s\n", path, what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(2);
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    if (dir)
        (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    else
        (void)snprintf(path, sizeof(path), "%s", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open", path);
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    for (size_t r; b && (r = fread(b + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap)
            b = realloc(b, (cap *= 2) + 1);
    }
    fclose(f);
    if (!b)
        die("out of memory", path);
    b[n] = '\0';
    if (len)
        *len = n;
    return b;
}

/* ---- the corpus ---------------------------------------------------------------------------- */

struct record {
    char src[8]; /* "log" or "case" */
    char id[64];
    enum ml_cause label;  /* ML_CAUSE_UNKNOWN: not scored */
    bool cause_tellable;  /* not in not-tellable.tsv as a cause */
    char phase_label[24]; /* logs only; "" for reports */
    bool phase_tellable;
    bool has_event;
    bool numbers_labelled, numbers_ok;
    char numbers_detail[160];
    enum ml_oom_kind kind; /* of the primary event */
    enum ml_oom_phase phase;
    bool phase_new;
    char phase_cue[48];
    struct ml_features f;
    char why_not[400];  /* the not-tellable reason (cause, else phase) */
    uint32_t ok_causes; /* the label and the other answers a careful reader accepts (cause_ok), bits */
    char phase_ok[64];  /* ",phase,...," the label's phase and phase_ok */
    char run_kind[16];  /* labels.jsonl run_kind ("training", "inference", "other"), "" unknown */
    uint32_t engine;    /* the serving engine labels.jsonl's framework names (ML_RT_*), 0 none */
    bool release2;      /* the label carries the second release's fields (cause_tellable, ...) */
    char *text;         /* the record's text (kept for the held-out diagnoses) */
    size_t len;
    bool committed_ct; /* with the committed weights: "cannot tell" */
    enum ml_cause committed_first;
    bool committed_train_fix; /* a training-only fix among the first five of the report */
};

static struct record recs[MAX_RECORDS];
static size_t n_recs;

static struct ml_incident inc;
static struct ml_oom_scanner sc;
static struct ml_diagnosis dg;

struct tag {
    char tag[40];
    enum ml_cause cause;
};
static struct tag tags[64];
static size_t n_tags;

static enum ml_cause cause_id(const char *name)
{
    for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
        if (!strcmp(ml_cause_name((enum ml_cause)c), name))
            return (enum ml_cause)c;
    return ML_CAUSE_COUNT;
}

static void read_tags(const char *dir)
{
    char *t = slurp(dir, "cause-tags.tsv", NULL), *save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char tag[40], cause[40];
        if (l[0] == '#' || sscanf(l, "%39[^\t]\t%39[^\t\n]", tag, cause) != 2 || n_tags >= 64)
            continue;
        enum ml_cause c = cause_id(cause);
        if (c == ML_CAUSE_COUNT)
            die("cause-tags.tsv names an unknown cause", cause);
        (void)snprintf(tags[n_tags].tag, sizeof(tags[0].tag), "%s", tag);
        tags[n_tags++].cause = c;
    }
    free(t);
}

static enum ml_cause map_tag(const char *tag)
{
    for (size_t i = 0; i < n_tags; i++)
        if (!strcmp(tags[i].tag, tag))
            return tags[i].cause;
    errno = 0;
    die("a cause tag without a row in cause-tags.tsv", tag);
    return ML_CAUSE_UNKNOWN;
}

/* not-tellable.tsv: mark the records. */
static void read_not_tellable(const char *dir)
{
    char *t = slurp(dir, "not-tellable.tsv", NULL), *save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char src[8], id[64], what[8], why[400];
        if (l[0] == '#' || sscanf(l, "%7[^\t]\t%63[^\t]\t%7[^\t]\t%399[^\n]", src, id, what, why) != 4)
            continue;
        bool found = false;
        for (size_t i = 0; i < n_recs; i++) {
            struct record *r = &recs[i];
            if (strcmp(r->src, src) || strcmp(r->id, id))
                continue;
            found = true;
            if (!strcmp(what, "cause"))
                r->cause_tellable = false;
            else
                r->phase_tellable = false;
            if (!r->why_not[0] || !strcmp(what, "cause"))
                (void)snprintf(r->why_not, sizeof(r->why_not), "%s", why);
        }
        if (!found) {
            errno = 0;
            die("not-tellable.tsv names a record the corpus lacks", id);
        }
    }
    free(t);
}

/* One number of the primary event against the expected value (null: not stated). */
static bool num_ok(const cJSON *want, const char *key, bool has, uint64_t v, bool strict_absent, struct record *r)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(want, key);
    bool stated = x && !cJSON_IsNull(x) && !(cJSON_IsArray(x) && !cJSON_GetArraySize(x));
    if (stated)
        r->numbers_labelled = true;
    if (!stated)
        return !(strict_absent && has);
    if (cJSON_IsBool(x))
        return has == cJSON_IsTrue(x);
    if (has && (uint64_t)x->valuedouble == v)
        return true;
    size_t n = strlen(r->numbers_detail);
    (void)snprintf(r->numbers_detail + n, sizeof(r->numbers_detail) - n, "%s%s", n ? ", " : "", key);
    return false;
}

static bool procs_ok(const cJSON *want, const struct ml_oom_event *e, bool strict_absent, struct record *r)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(want, "other_process_bytes");
    int n = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : 0;
    if (!n)
        return !(strict_absent && e->n_procs);
    r->numbers_labelled = true;
    bool ok = (uint32_t)n == e->n_procs;
    for (int k = 0; ok && k < n; k++)
        ok = (uint64_t)cJSON_GetArrayItem(p, k)->valuedouble == e->procs[k].bytes;
    if (!ok) {
        size_t l = strlen(r->numbers_detail);
        (void)snprintf(r->numbers_detail + l, sizeof(r->numbers_detail) - l, "%sprocess lines", l ? ", " : "");
    }
    return ok;
}

/* The numbers of the primary event against what the label (logs) or the independent derivation
 * (reports: every field it finds absent must be absent) states. */
static void check_numbers(struct record *r, const struct ml_oom_event *e, const cJSON *want, bool strict)
{
    bool ok = true;
    uint64_t ru = (e->has & ML_OOM_F_RESERVED_UNALLOC) ? e->reserved_unalloc : 0;
    bool has_ru = (e->has & ML_OOM_F_RESERVED_UNALLOC) != 0;
    if (!has_ru && !strict && (e->has & ML_OOM_F_RESERVED) && (e->has & ML_OOM_F_ALLOCATED) &&
        e->reserved >= e->allocated)
        has_ru = false; /* the classic form: the label leaves it null, as the scanner does */
    ok &= num_ok(want, "requested_bytes", e->has & ML_OOM_F_REQUESTED, e->requested, strict, r);
    ok &= num_ok(want, "total_bytes", e->has & ML_OOM_F_TOTAL, e->total, strict, r);
    ok &= num_ok(want, "free_bytes", e->has & ML_OOM_F_FREE, e->free, strict, r);
    ok &= num_ok(want, "allocated_bytes", e->has & ML_OOM_F_ALLOCATED, e->allocated, strict, r);
    ok &= num_ok(want, "reserved_unallocated_bytes", has_ru, ru, strict, r);
    ok &= num_ok(want, "reserved_bytes", e->has & ML_OOM_F_RESERVED, e->reserved, strict, r);
    ok &= num_ok(want, "this_process_bytes", e->has & ML_OOM_F_THIS_PROCESS, e->this_process, strict, r);
    ok &= num_ok(want, "private_pool_bytes", e->has & ML_OOM_F_PRIVATE_POOL, e->private_pool, strict, r);
    ok &= num_ok(want, "active_bytes", e->has & ML_OOM_F_ACTIVE, e->active, strict, r);
    ok &= num_ok(want, "max_seq_len_tokens", e->has & ML_OOM_F_MAX_SEQ_LEN, e->max_seq_len, strict, r);
    ok &= num_ok(want, "kv_cache_tokens", e->has & ML_OOM_F_KV_TOKENS, e->kv_tokens, strict, r);
    ok &= num_ok(want, "other_allocations_bytes", e->has & ML_OOM_F_OTHER, e->other, false, r);
    ok &= num_ok(want, "total_is_max_allowed", (e->has & ML_OOM_F_ALLOWED) && e->allowed == e->total, 0, false, r);
    bool kill = (e->has & ML_OOM_F_HOST_KILL) != 0;
    ok &= num_ok(want, "host_killed_pid", kill, e->host_pid, false, r);
    ok &= num_ok(want, "host_total_vm_bytes", kill, e->host_total_vm, false, r);
    ok &= num_ok(want, "host_anon_rss_bytes", e->has & ML_OOM_F_THIS_PROCESS, e->this_process, false, r);
    ok &= num_ok(want, "host_file_rss_bytes", kill, e->host_file_rss, false, r);
    ok &= num_ok(want, "host_shmem_rss_bytes", kill, e->host_shmem_rss, false, r);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(want, "gpu_memory_utilization");
    if (cJSON_IsNumber(u)) {
        r->numbers_labelled = true;
        if ((uint32_t)lround(u->valuedouble * 1000) != e->util_permille || !(e->has & ML_OOM_F_UTIL))
            ok = false;
    }
    ok &= procs_ok(want, e, strict, r);
    r->numbers_ok = ok;
}

/* Is a fix that applies to training only among the first five the report lists? */
static bool training_fix_first5(const struct ml_diagnosis *d)
{
    const struct ml_fix *fx[ML_DIAG_MAX_FINDINGS * ML_DIAG_MAX_FIXES];
    size_t n = ml_diagnosis_fixes(d, fx, sizeof(fx) / sizeof(fx[0]), false);
    for (size_t i = 0; i < n && i < 5; i++) {
        uint32_t runs = ml_fix_runs(fx[i]->kind);
        if (!(runs & (ML_RUN_SERVING | ML_RUN_OFFLINE)))
            return true;
    }
    return false;
}

/* The serving engine a label's framework text names (ML_RT_* bit; 0: none, or more than one). The
 * label's words, not the scanner's: the figure below holds the fixes to what the thread says ran. */
static uint32_t label_engine(const char *fw)
{
    static const struct {
        const char *word;
        uint32_t rt;
    } w[] = {{"vLLM", ML_RT_VLLM},      {"vllm", ML_RT_VLLM},
             {"SGLang", ML_RT_SGLANG},  {"Text Generation Inference", ML_RT_TGI},
             {"llama.cpp", ML_RT_GGML}, {"Ollama", ML_RT_GGML}};
    uint32_t r = 0;
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
        if (strstr(fw, w[i].word))
            r |= w[i].rt;
    return (r & (r - 1)) ? 0 : r;
}

/* Does a fix the report lists not fit the record's run: its row (ml_fix_row) names no run of the
 * label's kind (training; inference = serving or offline) and is not written for the serving engine
 * the label names (a training run may embed one: TRL's GRPO with vLLM), or it is a serving fix not
 * written for that engine? Every fix listed counts, not only the first five. */
static bool run_mismatch(const struct record *r, const struct ml_diagnosis *d)
{
    uint32_t runs = !strcmp(r->run_kind, "training")    ? ML_RUN_TRAINING
                    : !strcmp(r->run_kind, "inference") ? (ML_RUN_SERVING | ML_RUN_OFFLINE)
                                                        : 0;
    const struct ml_fix *fx[ML_DIAG_MAX_FINDINGS * ML_DIAG_MAX_FIXES];
    size_t n = ml_diagnosis_fixes(d, fx, sizeof(fx) / sizeof(fx[0]), false);
    for (size_t i = 0; i < n; i++) {
        const struct ml_fix_row *row = ml_fix_row(fx[i]->kind);
        if (!row)
            continue;
        bool for_engine = r->engine && (row->runtimes & r->engine);
        if ((runs && !(row->runs & runs) && !for_engine) || (r->engine && (row->runs & ML_RUN_SERVING) && !for_engine))
            return true;
    }
    return false;
}

/* The activation causes: a fix whose row addresses only these shrinks the forward's tensors. */
#define ACT_CAUSES                                                                                                     \
    ((1u << ML_CAUSE_ACTIVATIONS) | (1u << ML_CAUSE_EAGER_ATTENTION) | (1u << ML_CAUSE_LONG_SEQUENCE) |                \
     (1u << ML_CAUSE_LOGITS) | (1u << ML_CAUSE_NO_GRAD_CHECKPOINTING) | (1u << ML_CAUSE_FP32_UPCAST))

/* The first fix the report lists: 1 when its row addresses activation causes only, 0 when not,
 * -1 when the report lists none ("cannot tell"). */
static int first_fix_activation(const struct ml_diagnosis *d)
{
    const struct ml_fix *fx[ML_DIAG_MAX_FINDINGS * ML_DIAG_MAX_FIXES];
    size_t n = ml_diagnosis_fixes(d, fx, sizeof(fx) / sizeof(fx[0]), false);
    if (!n || d->cannot_tell)
        return -1;
    const struct ml_fix_row *row = ml_fix_row(fx[0]->kind);
    return row && row->causes && !(row->causes & ~ACT_CAUSES);
}

/* The run settings a record's text prints (ml_log_args), NULL when none is read: as `memledger
 * diagnose` reads them. */
static struct ml_log_args args;
static const struct ml_log_args *read_args(const char *text, size_t len)
{
    ml_log_args_init(&args);
    ml_log_args_feed(&args, 0, text, len);
    ml_log_args_end(&args);
    return args.n_read ? &args : NULL;
}

/* The record diagnosed again with the weights w (the held-out fit): its ranking and its fixes. */
static bool rediagnose(const struct record *r, const struct ml_evidence_weights *w, struct ml_ranking *k,
                       bool *train_fix)
{
    *train_fix = false;
    if (!r->has_event)
        return false;
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, r->text, r->len);
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.weights = w;
    su.args = read_args(r->text, r->len);
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_diagnose(&inc, &su, &dg, &d) != ML_OK)
        return false;
    *k = dg.ranking;
    *train_fix = training_fix_first5(&dg);
    return true;
}

static void diagnose_record(struct record *r, const char *text, size_t len, const cJSON *want, bool strict)
{
    ml_incident_init(&inc);
    ml_oom_scanner_init(&sc, &inc);
    ml_oom_scan_buffer(&sc, text, len);
    struct ml_diag d;
    ml_diag_init(&d);
    r->phase = ML_OPH_UNKNOWN;
    struct ml_diag_setup su;
    memset(&su, 0, sizeof(su));
    su.args = read_args(text, len);
    r->has_event = inc.n_events > 0 && ml_diagnose(&inc, &su, &dg, &d) == ML_OK;
    if (!r->has_event) {
        for (const cJSON *x = want ? want->child : NULL; x; x = x->next)
            if (!cJSON_IsNull(x) && !(cJSON_IsArray(x) && !cJSON_GetArraySize(x)))
                r->numbers_labelled = true;
        (void)snprintf(r->numbers_detail, sizeof(r->numbers_detail), "no event");
        return;
    }
    const struct ml_oom_event *e = &inc.ev[dg.primary];
    r->f = dg.features;
    r->committed_ct = dg.cannot_tell;
    r->committed_first = dg.ranking.n ? dg.ranking.cause[0] : ML_CAUSE_UNKNOWN;
    r->committed_train_fix = training_fix_first5(&dg);
    r->kind = e->kind;
    r->phase = e->phase;
    r->phase_new = e->phase_new;
    (void)snprintf(r->phase_cue, sizeof(r->phase_cue), "%s", e->phase_cue);
    if (want)
        check_numbers(r, e, want, strict);
}

static struct record *add_record(const char *src, const char *id)
{
    if (n_recs >= MAX_RECORDS) {
        errno = 0;
        die("too many records", id);
    }
    struct record *r = &recs[n_recs++];
    memset(r, 0, sizeof(*r));
    (void)snprintf(r->src, sizeof(r->src), "%s", src);
    (void)snprintf(r->id, sizeof(r->id), "%s", id);
    r->cause_tellable = r->phase_tellable = true;
    return r;
}

static void read_logs(const char *dir)
{
    char *t = slurp(dir, "labels.jsonl", NULL), *save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *j = cJSON_Parse(l);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        if (!cJSON_IsString(id))
            die("a labels.jsonl line without an id", dir);
        struct record *r = add_record("log", id->valuestring);
        r->label = cause_id(cJSON_GetObjectItemCaseSensitive(j, "cause")->valuestring);
        if (r->label == ML_CAUSE_COUNT)
            die("labels.jsonl names an unknown cause", r->id);
        const char *phase = cJSON_GetObjectItemCaseSensitive(j, "phase")->valuestring;
        (void)snprintf(r->phase_label, sizeof(r->phase_label), "%s", phase);
        r->ok_causes = 1u << r->label;
        /* from the label, not r->phase_label: gcc -O3 reads two members of one record as an
           overlap (-Wrestrict) */
        (void)snprintf(r->phase_ok, sizeof(r->phase_ok), ",%.*s,", (int)strlen(r->phase_label), phase);
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "cause_ok"))
        {
            enum ml_cause c = cJSON_IsString(x) ? cause_id(x->valuestring) : ML_CAUSE_COUNT;
            if (c == ML_CAUSE_COUNT)
                die("labels.jsonl: cause_ok names an unknown cause", r->id);
            r->ok_causes |= 1u << c;
        }
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "phase_ok"))
        {
            size_t n = strlen(r->phase_ok);
            if (cJSON_IsString(x))
                (void)snprintf(r->phase_ok + n, sizeof(r->phase_ok) - n, "%s,", x->valuestring);
        }
        x = cJSON_GetObjectItemCaseSensitive(j, "run_kind");
        if (cJSON_IsString(x))
            (void)snprintf(r->run_kind, sizeof(r->run_kind), "%s", x->valuestring);
        x = cJSON_GetObjectItemCaseSensitive(j, "framework");
        r->engine = cJSON_IsString(x) ? label_engine(x->valuestring) : 0;
        const cJSON *note = cJSON_GetObjectItemCaseSensitive(j, "note");
        x = cJSON_GetObjectItemCaseSensitive(j, "phase_tellable");
        r->release2 = cJSON_IsBool(x);
        if (cJSON_IsFalse(x)) {
            r->phase_tellable = false;
            (void)snprintf(r->why_not, sizeof(r->why_not), "labels.jsonl, phase_tellable false: %.300s",
                           cJSON_IsString(note) ? note->valuestring : "");
        }
        x = cJSON_GetObjectItemCaseSensitive(j, "cause_tellable");
        if (cJSON_IsFalse(x)) {
            r->cause_tellable = false;
            (void)snprintf(r->why_not, sizeof(r->why_not), "labels.jsonl, cause_tellable false: %.300s",
                           cJSON_IsString(note) ? note->valuestring : "");
        }
        char name[96];
        (void)snprintf(name, sizeof(name), "%s.log", r->id);
        r->text = slurp(dir, name, &r->len);
        diagnose_record(r, r->text, r->len, cJSON_GetObjectItemCaseSensitive(j, "numbers"), false);
        cJSON_Delete(j);
    }
    free(t);
}

static void read_cases(const char *dir)
{
    char *nums = slurp(dir, "oom-cases-numbers.jsonl", NULL), *save = NULL;
    cJSON *derived = cJSON_CreateObject();
    for (char *l = strtok_r(nums, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *j = cJSON_Parse(l);
        cJSON_AddItemToObject(derived, cJSON_GetObjectItemCaseSensitive(j, "id")->valuestring,
                              cJSON_DetachItemFromObject(j, "numbers"));
        cJSON_Delete(j);
    }
    free(nums);
    char *t = slurp(dir, "oom-cases.jsonl", NULL);
    save = NULL;
    for (char *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *j = cJSON_Parse(l);
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "oom_text");
        if (cJSON_IsString(text)) {
            struct record *r = add_record("case", cJSON_GetObjectItemCaseSensitive(j, "id")->valuestring);
            r->label = map_tag(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "cause"), 0)->valuestring);
            r->ok_causes = 1u << r->label;
            const cJSON *want = cJSON_GetObjectItemCaseSensitive(derived, r->id);
            if (!want)
                die("a report without derived numbers (run derive_case_numbers.py)", r->id);
            r->len = strlen(text->valuestring);
            r->text = malloc(r->len + 1);
            if (!r->text)
                die("out of memory", r->id);
            memcpy(r->text, text->valuestring, r->len + 1);
            diagnose_record(r, r->text, r->len, want, true);
        }
        cJSON_Delete(j);
    }
    free(t);
    cJSON_Delete(derived);
}

static void group_of(const char *id, char *out, size_t cap);

/* Do two report ids belong to one source (project)? */
static bool same_source(const char *a, const char *b)
{
    char ga[64], gb[64];
    group_of(a, ga, sizeof(ga));
    group_of(b, gb, sizeof(gb));
    return !strcmp(ga, gb);
}

/* Is record i the first of its source (each source's leave-one-out is fitted once)? */
static bool first_of_source(size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (same_source(recs[k].id, recs[i].id))
            return false;
    return true;
}

/* ---- the fit ------------------------------------------------------------------------------- */

/* Parameters: one per tied group, then one per (free row, cause). */
static int param_of[ML_EV_COUNT][ML_CAUSE_COUNT];
static double coef_of[ML_EV_COUNT][ML_CAUSE_COUNT];
static int n_params;
static char param_name[512][48];

static void build_params(void)
{
    for (unsigned g = 1; g < ML_EVG_COUNT; g++) {
        static const char *const gn[ML_EVG_COUNT] = {"",     "kind",   "kind2", "phase", "phase_weak",
                                                     "flag", "timing", "ctx",   "proc",  "veto"};
        if (g == ML_EVG_VETO)
            continue;
        (void)snprintf(param_name[n_params], sizeof(param_name[0]), "group %s", gn[g]);
        n_params++;
    }
    for (unsigned i = 0; i < ML_EV_COUNT; i++) {
        const struct ml_evidence_def *d = ml_evidence_row((enum ml_evidence_id)i);
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++) {
            param_of[i][c] = -1;
            if (!(d->causes >> c & 1) || c == ML_CAUSE_UNKNOWN || d->group == ML_EVG_VETO)
                continue;
            if (d->group != ML_EVG_FREE) {
                param_of[i][c] = (int)d->group - 1;
                coef_of[i][c] = c == (unsigned)d->reading ? 1.0 : 0.5;
            } else {
                param_of[i][c] = n_params;
                coef_of[i][c] = 1.0;
                (void)snprintf(param_name[n_params], sizeof(param_name[0]), "%s > %s", d->name,
                               ml_cause_name((enum ml_cause)c));
                n_params++;
            }
        }
    }
}

/* The candidates of a feature set (the causes its specific rows name). */
static uint32_t candidates(const struct ml_features *f)
{
    uint32_t c = 0, veto = 0;
    for (unsigned i = 0; i < ML_EV_COUNT; i++) {
        if (f->on[i] && ml_evidence_row((enum ml_evidence_id)i)->specific)
            c |= ml_evidence_row((enum ml_evidence_id)i)->causes;
        if (f->on[i] && ml_evidence_row((enum ml_evidence_id)i)->group == ML_EVG_VETO)
            veto |= ml_evidence_row((enum ml_evidence_id)i)->causes;
    }
    return c & ~veto & ~(1u << ML_CAUSE_UNKNOWN);
}

/* The gradient of the mean objective at th over the records in use. */
static void gradient(const double *th, const struct ml_features *const *fs, const enum ml_cause *ys, size_t n,
                     double *g)
{
    for (int p = 0; p < n_params; p++)
        g[p] = LAMBDA * th[p] / (double)n;
    for (size_t k = 0; k < n; k++) {
        uint32_t cand = candidates(fs[k]);
        double s[ML_CAUSE_COUNT] = {0}, top = 0, z = 0;
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++) {
            if (!(cand >> c & 1))
                continue;
            for (unsigned i = 0; i < ML_EV_COUNT; i++)
                if (fs[k]->on[i] && param_of[i][c] >= 0)
                    s[c] += th[param_of[i][c]] * coef_of[i][c];
            if (s[c] > top)
                top = s[c];
        }
        z = exp(-top);
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
            if (cand >> c & 1)
                z += exp(s[c] - top);
        enum ml_cause y = (cand >> ys[k] & 1) ? ys[k] : (enum ml_cause)REF;
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++) {
            if (!(cand >> c & 1))
                continue;
            double d = (exp(s[c] - top) / z - (c == (unsigned)y ? 1.0 : 0.0)) / (double)n;
            for (unsigned i = 0; i < ML_EV_COUNT; i++)
                if (fs[k]->on[i] && param_of[i][c] >= 0)
                    g[param_of[i][c]] += d * coef_of[i][c];
        }
    }
}

/* Fit on the records for which use(i) holds (skip: an id left out, NULL for none). */
static void fit(const char *skip, bool strict, double *th)
{
    static const struct ml_features *fs[MAX_RECORDS];
    static enum ml_cause ys[MAX_RECORDS];
    size_t n = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (!recs[i].has_event || (skip && same_source(recs[i].id, skip)))
            continue;
        fs[n] = &recs[i].f;
        ys[n++] = recs[i].label == ML_CAUSE_UNKNOWN ? (enum ml_cause)REF : recs[i].label;
    }
    (void)strict;
    double prev[512] = {0}, look[512], g[512];
    memset(th, 0, sizeof(double) * (size_t)n_params);
    for (int it = 0; it < ITERS; it++) {
        double mom = it / (it + 3.0);
        for (int p = 0; p < n_params; p++)
            look[p] = th[p] + mom * (th[p] - prev[p]);
        gradient(look, fs, ys, n, g);
        for (int p = 0; p < n_params; p++) {
            prev[p] = th[p];
            th[p] = look[p] - g[p];
        }
    }
}

static void dense(const double *th, struct ml_evidence_weights *w)
{
    memset(w, 0, sizeof(*w));
    w->tau_permille = ml_evidence_fitted.tau_permille;
    for (unsigned i = 0; i < ML_EV_COUNT; i++)
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
            if (param_of[i][c] >= 0)
                w->w[i][c] = (int32_t)lround(th[param_of[i][c]] * coef_of[i][c] * 1000.0);
}

/* ---- leave-one-out ------------------------------------------------------------------------- */

/* Rows added for issue 13 (the strict leave-one-out drops them for a held-out id that alone uses
 * them): the evidence names, and the phase readings marked by the scanner (e->phase_new). */
static const char *const new_rows[] = {
    "kind:runtime",   "dev:xpu_big_request",     "num:big_request",          "num:message_cut",
    "num:impossible", "proc:other_after_own",    "proc:sibling_contexts",    "fl:eager_code",
    "fl:retry_chain", "ctx:generate_short_full", "ctx:engine_full_no_phase", "fp:model_copy",
};

struct outcome {
    struct ml_ranking r;
    bool train_fix;          /* a training-only fix among the report's first five (the held-out diagnosis) */
    bool run_mismatch;       /* a fix listed that does not fit the labelled run (run_mismatch) */
    int first_act;           /* the first fix is an activation fix (first_fix_activation) */
    enum ml_oom_phase phase; /* the phase after the strict drop (plain: the record's) */
};

static struct outcome loo[MAX_RECORDS], strict_loo[MAX_RECORDS];

static bool is_new_row(unsigned i)
{
    for (size_t k = 0; k < sizeof(new_rows) / sizeof(new_rows[0]); k++)
        if (!strcmp(ml_evidence_row((enum ml_evidence_id)i)->name, new_rows[k]))
            return true;
    return false;
}

/* Does any record of an id other than id have feature i on (i < ML_EV_COUNT), or its phase from
 * the same new reading cue (i == ML_EV_COUNT)? */
static bool used_elsewhere(const char *id, unsigned i, const char *cue)
{
    for (size_t k = 0; k < n_recs; k++) {
        const struct record *o = &recs[k];
        if (same_source(o->id, id) || !o->has_event)
            continue;
        if (i < ML_EV_COUNT ? o->f.on[i] : (cue && o->phase_new && !strcmp(o->phase_cue, cue)))
            return true;
    }
    return false;
}

static const enum ml_evidence_id phase_rows[] = {
    ML_EV_PH_LOAD,
    ML_EV_PH_OPTIMIZER,
    ML_EV_PH_SAVE,
    ML_EV_PH_EVAL,
    ML_EV_PH_LOSS,
    ML_EV_PH_SERVING_RUNTIME,
    ML_EV_PH_COMMUNICATION,
    ML_EV_PH_BACKWARD,
    ML_EV_PH_FORWARD,
    ML_EV_PH_GENERATE,
    ML_EV_PH_SERVING_STARTUP,
};

static void run_loo(void)
{
    static double th[512];
    struct ml_evidence_weights w;
    for (size_t i = 0; i < n_recs; i++) {
        if (!first_of_source(i))
            continue;
        fit(recs[i].id, false, th);
        dense(th, &w);
        for (size_t k = i; k < n_recs; k++) {
            struct record *r = &recs[k];
            if (!same_source(r->id, recs[i].id))
                continue;
            ml_evidence_rank(&r->f, &w, &loo[k].r);
            loo[k].first_act = -1;
            if (rediagnose(r, &w, &loo[k].r, &loo[k].train_fix)) {
                loo[k].run_mismatch = run_mismatch(r, &dg);
                loo[k].first_act = first_fix_activation(&dg);
            }
            loo[k].phase = strict_loo[k].phase = r->phase;
            struct ml_features f = r->f;
            for (unsigned j = 0; j < ML_EV_COUNT; j++)
                if (f.on[j] && is_new_row(j) && !used_elsewhere(r->id, j, NULL))
                    f.on[j] = false;
            if (r->phase_new && !used_elsewhere(r->id, ML_EV_COUNT, r->phase_cue) &&
                ml_oom_kind_phase(r->kind) != r->phase) {
                for (size_t p = 0; p < sizeof(phase_rows) / sizeof(phase_rows[0]); p++)
                    f.on[phase_rows[p]] = false;
                strict_loo[k].phase = ml_oom_kind_phase(r->kind);
            }
            ml_evidence_rank(&f, &w, &strict_loo[k].r);
        }
    }
}

/* ---- the report ---------------------------------------------------------------------------- */

struct buf {
    char *p;
    size_t n, cap;
};

static void PRINTF_LIKE(2, 3) bprintf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0)
        return;
    if (b->n + (size_t)need + 1 > b->cap) {
        b->cap = (b->n + (size_t)need + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            die("out of memory", "report");
    }
    va_start(ap, fmt);
    (void)vsnprintf(b->p + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

struct figs {
    int n, first, top2, right, wrong, cannot;
};

static bool scored(const struct record *r)
{
    return r->label != ML_CAUSE_UNKNOWN && r->cause_tellable;
}

/* Is c the label or another answer the label accepts (cause_ok)? */
static bool cause_right(const struct record *r, enum ml_cause c)
{
    return c < ML_CAUSE_COUNT && (r->ok_causes >> c & 1);
}

static bool phase_right(const struct record *r, enum ml_oom_phase p)
{
    char key[32];
    (void)snprintf(key, sizeof(key), ",%s,", ml_oom_phase_name(p));
    return strstr(r->phase_ok, key) != NULL;
}

static void tally(struct figs *g, const struct record *r, const struct ml_ranking *k)
{
    g->n++;
    bool first = k->n && cause_right(r, k->cause[0]);
    g->first += first;
    g->top2 += first || (k->n > 1 && cause_right(r, k->cause[1]));
    g->right += first && !k->cannot_tell;
    g->wrong += !first && !k->cannot_tell;
    g->cannot += k->cannot_tell;
}

static void pct(struct buf *b, int k, int n)
{
    if (n)
        bprintf(b, " %d/%d (%d %%) |", k, n, (int)lround(100.0 * k / n));
    else
        bprintf(b, " - |");
}

static void figs_row(struct buf *b, const char *name, const struct figs *g)
{
    bprintf(b, "| %s | %d |", name, g->n);
    pct(b, g->first, g->n);
    pct(b, g->top2, g->n);
    pct(b, g->right, g->n);
    pct(b, g->wrong, g->n);
    pct(b, g->cannot, g->n);
    bprintf(b, "\n");
}

/* The report id's project: "lf-9510" -> "lf", "vllm-pr41268" -> "vllm", "vllmascend-1127" -> "vllm-ascend". */
static void group_of(const char *id, char *out, size_t cap)
{
    (void)snprintf(out, cap, "%s", id);
    char *d = strrchr(out, '-');
    if (d)
        *d = '\0';
    if (!strcmp(out, "vllmascend"))
        (void)snprintf(out, cap, "vllm-ascend");
    if (!strcmp(out, "stanford-alpaca"))
        (void)snprintf(out, cap, "alpaca");
}

struct totals {
    int num_n, num_ok, ph_n, ph_ok, ph_strict_ok;
    struct figs plain, strict;
};

static void totals(struct totals *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < n_recs; i++) {
        const struct record *r = &recs[i];
        if (r->numbers_labelled) {
            t->num_n++;
            t->num_ok += r->numbers_ok;
        }
        if (!strcmp(r->src, "log") && r->phase_tellable) {
            t->ph_n++;
            t->ph_ok += phase_right(r, r->phase);
            t->ph_strict_ok += phase_right(r, strict_loo[i].phase);
        }
        if (scored(r)) {
            tally(&t->plain, r, &loo[i].r);
            tally(&t->strict, r, &strict_loo[i].r);
        }
    }
}

/* Per cause or per source group: numbers, primary, top two, phase. */
struct split {
    char key[40];
    int num_n, num_ok, n, first, top2, ph_n, ph_ok;
};

static void split_add(struct split *s, size_t *ns, const char *key, const struct record *r, const struct ml_ranking *k)
{
    size_t i = 0;
    while (i < *ns && strcmp(s[i].key, key))
        i++;
    if (i == *ns) {
        memset(&s[i], 0, sizeof(s[i]));
        (void)snprintf(s[i].key, sizeof(s[i].key), "%s", key);
        (*ns)++;
    }
    if (r->numbers_labelled) {
        s[i].num_n++;
        s[i].num_ok += r->numbers_ok;
    }
    if (scored(r)) {
        s[i].n++;
        s[i].first += k->n && cause_right(r, k->cause[0]);
        s[i].top2 += (k->n && cause_right(r, k->cause[0])) || (k->n > 1 && cause_right(r, k->cause[1]));
    }
    if (!strcmp(r->src, "log") && r->phase_tellable) {
        s[i].ph_n++;
        s[i].ph_ok += phase_right(r, r->phase);
    }
}

static void split_table(struct buf *b, const char *title, const char *col, bool by_cause)
{
    static struct split s[MAX_RECORDS];
    size_t ns = 0;
    for (size_t i = 0; i < n_recs; i++) {
        char key[40];
        if (by_cause)
            (void)snprintf(key, sizeof(key), "%s", ml_cause_name(recs[i].label));
        else
            group_of(recs[i].id, key, sizeof(key));
        split_add(s, &ns, key, &recs[i], &loo[i].r);
    }
    for (size_t i = 1; i < ns; i++) /* by key */
        for (size_t j = i; j > 0 && strcmp(s[j].key, s[j - 1].key) < 0; j--) {
            struct split t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    bprintf(b,
            "\n## %s\n\n| %s | numbers exact | primary (LOSO) | top two (LOSO) | phase |\n|---|---:|---:|---:|---:|\n",
            title, col);
    for (size_t i = 0; i < ns; i++) {
        bprintf(b, "| %s |", s[i].key);
        pct(b, s[i].num_ok, s[i].num_n);
        pct(b, s[i].first, s[i].n);
        pct(b, s[i].top2, s[i].n);
        pct(b, s[i].ph_ok, s[i].ph_n);
        bprintf(b, "\n");
    }
}

static void sweep(struct buf *b)
{
    bprintf(b,
            "\n## The threshold of an answer (LOSO)\n\nAn answer is the first cause when it beats \"none of these\" "
            "with p >= tau; "
            "an exact tie of the first two is \"cannot tell\" at every tau; the report uses tau = %.2f.\n\n| tau | "
            "tellable: right | wrong | cannot tell | the others: cannot tell |\n"
            "|---:|---:|---:|---:|---:|\n",
            ml_evidence_fitted.tau_permille / 1000.0);
    static const uint32_t taus[] = {0, 300, 400, 500, 600};
    for (size_t t = 0; t < sizeof(taus) / sizeof(taus[0]); t++) {
        int n = 0, right = 0, wrong = 0, cannot = 0, on = 0, oc = 0;
        for (size_t i = 0; i < n_recs; i++) {
            const struct ml_ranking *k = &loo[i].r;
            bool ct = k->n == 0 || k->p[0] <= k->p_none || k->p_permille[0] < taus[t] ||
                      (k->n > 1 && k->score_milli[0] == k->score_milli[1]); /* (an exact tie: ml_evidence_rank) */
            if (!recs[i].has_event)
                ct = true;
            if (scored(&recs[i])) {
                n++;
                cannot += ct;
                right += !ct && cause_right(&recs[i], k->cause[0]);
                wrong += !ct && !cause_right(&recs[i], k->cause[0]);
            } else {
                on++;
                oc += ct;
            }
        }
        bprintf(b, "| %.2f | %d/%d | %d | %d | %d/%d |\n", taus[t] / 1000.0, right, n, wrong, cannot, oc, on);
    }
}

/* Other criteria of an answer, their threshold fitted leave-one-source-out (issue 24 item 7): for
 * each source, the threshold that maximises right + "cannot tell" on the others - 2 x confident
 * wrong (a confident wrong cause is the worst outcome) on every other source, applied to it. */
enum { CR_TAU, CR_GAP_SECOND, CR_GAP_BOTH, CR_COUNT };

static bool answers_by(size_t i, int crit, double thr)
{
    const struct ml_ranking *k = &loo[i].r;
    if (!recs[i].has_event || !k->n || k->p[0] <= k->p_none || (k->n > 1 && k->score_milli[0] == k->score_milli[1]))
        return false;
    double p1 = k->n > 1 ? k->p[1] : 0.0;
    return crit == CR_TAU          ? k->p[0] >= thr - 1e-12
           : crit == CR_GAP_SECOND ? k->p[0] - p1 >= thr - 1e-12
                                   : k->p[0] - fmax(p1, k->p_none) >= thr - 1e-12;
}

/* right, confident wrong and "cannot tell" on the others of the records in (in) or out of (!in) source id */
static void crit_count(const char *id, bool in, int crit, double thr, int *right, int *wrong, int *oc)
{
    *right = *wrong = *oc = 0;
    for (size_t i = 0; i < n_recs; i++) {
        if (same_source(recs[i].id, id) != in)
            continue;
        bool a = answers_by(i, crit, thr);
        enum ml_cause c = loo[i].r.n ? loo[i].r.cause[0] : ML_CAUSE_UNKNOWN;
        if (scored(&recs[i]))
            *right += a && cause_right(&recs[i], c);
        else
            *oc += !a;
        if (recs[i].label != ML_CAUSE_UNKNOWN)
            *wrong += a && !cause_right(&recs[i], c);
    }
}

static void criteria(struct buf *b)
{
    static const char *const name[CR_COUNT] = {"p of the first cause >= t", "p of the first - p of the second >= t",
                                               "p of the first - max(p of the second, p of none) >= t"};
    bprintf(b, "\nOther criteria, each threshold t fitted leave-one-source-out (for each source, the t in 0.00-0.80 "
               "that maximises right + \"cannot tell\" on the others - 2 x confident wrong on every other source):\n\n"
               "| criterion | t fitted | tellable: right | confident wrong | the others: cannot tell |\n"
               "|---|---:|---:|---:|---:|\n");
    int base_right = 0, base_wrong = 0;
    bool better = false;
    for (size_t i = 0; i < n_recs; i++) {
        bool a = answers_by(i, CR_TAU, ml_evidence_fitted.tau_permille / 1000.0);
        enum ml_cause c = loo[i].r.n ? loo[i].r.cause[0] : ML_CAUSE_UNKNOWN;
        base_right += scored(&recs[i]) && a && cause_right(&recs[i], c);
        base_wrong += recs[i].label != ML_CAUSE_UNKNOWN && a && !cause_right(&recs[i], c);
    }
    for (int c = 0; c < CR_COUNT; c++) {
        int right = 0, wrong = 0, oc = 0, n = 0, on = 0, known = 0;
        double lo = 1, hi = 0;
        for (size_t i = 0; i < n_recs; i++) {
            n += scored(&recs[i]);
            on += !scored(&recs[i]);
            known += recs[i].label != ML_CAUSE_UNKNOWN;
            if (!first_of_source(i))
                continue;
            double best_t = 0, best_u = -1e9;
            for (int t = 0; t <= 80; t++) {
                int r, w, o;
                crit_count(recs[i].id, false, c, t / 100.0, &r, &w, &o);
                if (r + o - 2 * w > best_u) {
                    best_u = r + o - 2 * w;
                    best_t = t / 100.0;
                }
            }
            lo = fmin(lo, best_t);
            hi = fmax(hi, best_t);
            int r, w, o;
            crit_count(recs[i].id, true, c, best_t, &r, &w, &o);
            right += r, wrong += w, oc += o;
        }
        bprintf(b, "| %s | %.2f-%.2f | %d/%d | %d/%d | %d/%d |\n", name[c], lo, hi, right, n, wrong, known, oc, on);
        better |= right > base_right && wrong <= base_wrong;
    }
    int below = 0, between = 0;
    for (size_t i = 0; i < n_recs; i++) {
        const struct ml_ranking *k = &loo[i].r;
        if (!scored(&recs[i]) || !recs[i].has_event || !k->n || !k->cannot_tell ||
            !cause_right(&recs[i], k->cause[0]) || (k->n > 1 && k->score_milli[0] == k->score_milli[1]))
            continue;
        below += k->p[0] <= k->p_none;
        between += k->p[0] > k->p_none;
    }
    bprintf(
        b,
        "\nA criterion is kept only when it answers more tellable logs right than tau = %.2f without more confident "
        "wrong answers, held out (tau: %d right, %d confident wrong): %s. Of the tellable logs answered \"cannot "
        "tell\" whose first cause is the label, %d have evidence that sums below \"none of these\" (no threshold on "
        "the ranking answers them) and %d are above it but below tau: what they lack is evidence, not a threshold.\n",
        ml_evidence_fitted.tau_permille / 1000.0, base_right, base_wrong,
        better ? "one does, see the table" : "none does, so tau stays", below, between);
}

static const char *first_of(const struct ml_ranking *k, int i, char *buf, size_t cap)
{
    if ((uint32_t)i >= k->n)
        return "-";
    (void)snprintf(buf, cap, "%s %.2f", ml_cause_name(k->cause[i]), k->p[i]);
    return buf;
}

static void record_table(struct buf *b)
{
    bprintf(
        b,
        "\n## Every record (LOSO)\n\n| source | id | label | tellable | numbers | first (p) | second (p) | none (p) | "
        "answer | phase label | phase | evidence |\n|---|---|---|---|---|---|---|---:|---|---|---|---|\n");
    for (size_t i = 0; i < n_recs; i++) {
        const struct record *r = &recs[i];
        const struct ml_ranking *k = &loo[i].r;
        char a[64], c[64];
        bprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s |\n", r->src, r->id,
                ml_cause_name(r->label),
                r->label == ML_CAUSE_UNKNOWN ? "unknown"
                : r->cause_tellable          ? "yes"
                                             : "no",
                !r->numbers_labelled ? "-"
                : r->numbers_ok      ? "exact"
                                     : r->numbers_detail,
                first_of(k, 0, a, sizeof(a)), first_of(k, 1, c, sizeof(c)), r->has_event ? k->p_none : 1.0,
                !r->has_event || k->cannot_tell ? "cannot tell" : ml_cause_name(k->cause[0]),
                r->phase_label[0] ? r->phase_label : "-", !strcmp(r->src, "log") ? ml_oom_phase_name(r->phase) : "-");
        b->n--; /* the row goes on with its evidence */
        for (unsigned j = 0; j < ML_EV_COUNT; j++)
            if (r->f.on[j])
                bprintf(b, " %s", ml_evidence_row((enum ml_evidence_id)j)->name);
        bprintf(b, " |\n");
    }
}

static void not_tellable(struct buf *b)
{
    bprintf(
        b,
        "\n## Labels the text cannot tell\n\nLeft out of the denominators above (tests/fixtures/oom/not-tellable.tsv); "
        "each stays a test that fails when the diagnosis starts to agree.\n\n| source | id | label | what | why | ours "
        "(LOSO) |\n"
        "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n_recs; i++) {
        const struct record *r = &recs[i];
        if (r->cause_tellable && r->phase_tellable)
            continue;
        const struct ml_ranking *k = &loo[i].r;
        char a[64];
        bprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r->src, r->id,
                !r->cause_tellable ? ml_cause_name(r->label) : r->phase_label, !r->cause_tellable ? "cause" : "phase",
                r->why_not,
                !r->cause_tellable ? (!r->has_event || k->cannot_tell ? "cannot tell" : first_of(k, 0, a, sizeof(a)))
                                   : ml_oom_phase_name(r->phase));
    }
}

static void params_table(struct buf *b, const double *th)
{
    bprintf(
        b, "\n## The fitted parameters (all records)\n\nA tied group's parameter gives its rows' reading x 1 and their "
           "other causes x 1/2; the others are one (row, cause) each. lib/diagnose/evidence_weights.inc holds them per "
           "(row, cause), in thousandths.\n\n| parameter | weight |\n|---|---:|\n");
    for (int p = 0; p < n_params; p++)
        if (fabs(th[p]) >= 0.0005)
            bprintf(b, "| %s | %.3f |\n", param_name[p], th[p]);
}

/* The figures of issue 24 (held-out: LOSO; committed: the committed weights, as `memledger
 * diagnose` runs today). */
struct headline {
    int others, others_ct; /* records whose label is unknown or not tellable; "cannot tell" of them */
    int known, wrong;      /* records with a known label; answered with a cause that is not accepted */
    int inf, inf_train;    /* logs of inference runs; a training-only fix among the first five */
    int kind_n, kind_bad;  /* logs with a labelled run kind and an event; a fix listed that does not fit */
    int late_n, late_act;  /* logs failing at load, optimizer step or save with a fix; the first an activation fix */
    int late_none;         /* ... whose report lists no fix ("cannot tell") */
    int tell, right, ph_n, ph_ok;
};

static void headline(struct headline *h, bool committed_only_release2)
{
    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < n_recs; i++) {
        const struct record *r = &recs[i];
        if (committed_only_release2 && !r->release2)
            continue;
        bool ct =
            committed_only_release2 ? (!r->has_event || r->committed_ct) : (!r->has_event || loo[i].r.cannot_tell);
        enum ml_cause first = committed_only_release2 ? r->committed_first
                              : loo[i].r.n            ? loo[i].r.cause[0]
                                                      : ML_CAUSE_UNKNOWN;
        bool train_fix = committed_only_release2 ? r->committed_train_fix : loo[i].train_fix;
        if (r->label == ML_CAUSE_UNKNOWN || !r->cause_tellable) {
            h->others++;
            h->others_ct += ct;
        } else {
            h->tell++;
            h->right += !ct && cause_right(r, first);
        }
        if (r->label != ML_CAUSE_UNKNOWN) {
            h->known++;
            h->wrong += !ct && !cause_right(r, first);
        }
        if (!strcmp(r->run_kind, "inference")) {
            h->inf++;
            h->inf_train += train_fix;
        }
        if (!committed_only_release2 && r->has_event && !strcmp(r->src, "log") &&
            (!strcmp(r->run_kind, "training") || !strcmp(r->run_kind, "inference"))) {
            h->kind_n++;
            h->kind_bad += loo[i].run_mismatch;
        }
        if (!committed_only_release2 && r->has_event && !strcmp(r->src, "log") && r->phase_tellable &&
            (!strcmp(r->phase_label, "load") || !strcmp(r->phase_label, "optimizer_step") ||
             !strcmp(r->phase_label, "checkpoint_save"))) {
            if (loo[i].first_act < 0) {
                h->late_none++;
            } else {
                h->late_n++;
                h->late_act += loo[i].first_act;
            }
        }
        if (!strcmp(r->src, "log") && r->phase_tellable) {
            h->ph_n++;
            h->ph_ok += phase_right(r, r->phase);
        }
    }
}

/* Issue 24 item 4: a tiny request failing inside NCCL or cuBLAS reads as a full card. */
static void lib_tiny_section(struct buf *b)
{
    int n = 0;
    for (size_t i = 0; i < n_recs; i++)
        n += recs[i].has_event && recs[i].f.on[ML_EV_N_LIB_TINY];
    bprintf(b,
            "\n## A tiny request inside NCCL or cuBLAS\n\nNCCL's calloc of at most 64 MiB, or a cuBLAS handle or "
            "workspace (no size: a few MiB), failing says the card was already full (issue 24 item 4): the row "
            "`num:lib_tiny_full` switches on the full card's rows (`num:full`, `num:tiny_full`), which weigh the "
            "candidates and name none (cause-neutral). It holds on %d record%s:\n\n| source | id | label | ours "
            "(LOSO) |\n|---|---|---|---|\n",
            n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n_recs; i++) {
        const struct record *r = &recs[i];
        if (!r->has_event || !r->f.on[ML_EV_N_LIB_TINY])
            continue;
        const struct ml_ranking *k = &loo[i].r;
        bprintf(b, "| %s | %s | %s | ", r->src, r->id, ml_cause_name(r->label));
        if (k->cannot_tell || !k->n)
            bprintf(b, "cannot tell |\n");
        else
            bprintf(b, "%s %.2f |\n", ml_cause_name(k->cause[0]), k->p[0]);
    }
}

static void release2_section(struct buf *b)
{
    struct headline h;
    headline(&h, true);
    bprintf(b,
            "\n## The logs of the second release, with the committed weights\n\nThe %d logs whose labels carry "
            "`cause_tellable` (added to ../shared/data on 2026-12-01), diagnosed as `memledger diagnose` runs "
            "(lib/diagnose/evidence_weights.inc). Out of sample only while that table was fitted without them; "
            "the LOSO figures above are the held-out ones.\n\n| figure | value |\n|---|---:|\n",
            h.others + h.tell);
    bprintf(b, "| primary cause answered right (tellable) |");
    pct(b, h.right, h.tell);
    bprintf(b, "\n| \"cannot tell\" on the others |");
    pct(b, h.others_ct, h.others);
    bprintf(b, "\n| confident wrong (known labels) |");
    pct(b, h.wrong, h.known);
    bprintf(b, "\n| phase (tellable) |");
    pct(b, h.ph_ok, h.ph_n);
    bprintf(b, "\n| inference logs with a training-only fix among the first five |");
    pct(b, h.inf_train, h.inf);
    bprintf(b, "\n");
}

static void report(struct buf *b, const struct totals *t, const double *th)
{
    int unk = 0, unk_ct = 0, nt = 0, nt_ct = 0;
    for (size_t i = 0; i < n_recs; i++) {
        bool ct = !recs[i].has_event || loo[i].r.cannot_tell;
        if (recs[i].label == ML_CAUSE_UNKNOWN) {
            unk++;
            unk_ct += ct;
        } else if (!recs[i].cause_tellable) {
            nt++;
            nt_ct += ct;
        }
    }
    bprintf(b,
            "# `memledger diagnose` on the OOM corpus: leave-one-source-out\n\n"
            "Generated by `validation_diagnose` (validation/diagnose_report.c) from tests/fixtures/oom (copies of "
            "../shared/data); do not edit. %zu records: the labelled logs and the reports with an OOM text. "
            "Leave-one-source-out (LOSO): every record is diagnosed with the weights fitted without any record of "
            "its source, the project whose threads it comes from (every `lf-*` log and report leaves together); "
            "strict: also without the rows added for issue 13 that no other source uses. A label's `cause_ok` and "
            "`phase_ok` are accepted answers too. How the causes are ranked: docs/cli/diagnose.md.\n\n",
            n_recs);
    struct headline h;
    headline(&h, false);
    bprintf(b, "| figure | value |\n|---|---:|\n| numbers parsed exactly (records that state numbers) |");
    pct(b, t->num_ok, t->num_n);
    bprintf(b, "\n| primary cause answered right, LOSO (labels the text can tell) |");
    pct(b, t->plain.right, t->plain.n);
    bprintf(b, "\n| \"cannot tell\" on the others (labels `unknown` or that the text cannot tell), LOSO |");
    pct(b, h.others_ct, h.others);
    bprintf(b, "\n| confident wrong: an answer that is not the label, LOSO (every record with a known label) |");
    pct(b, h.wrong, h.known);
    bprintf(b, "\n| phase (logs whose phase the text can tell) |");
    pct(b, t->ph_ok, t->ph_n);
    bprintf(b, "\n| inference or serving logs with a training-only fix among the first five, LOSO |");
    pct(b, h.inf_train, h.inf);
    bprintf(b, "\n| logs with a labelled run kind: a fix listed that does not fit the run's kind or engine, LOSO |");
    pct(b, h.kind_bad, h.kind_n);
    bprintf(b, "\n| logs failing at load, optimizer step or save: the first fix an activation fix, LOSO |");
    pct(b, h.late_act, h.late_n);
    bprintf(b, "\n| first cause = label, LOSO (tellable; \"cannot tell\" or not) |");
    pct(b, t->plain.first, t->plain.n);
    bprintf(b, "\n| label in the top two, LOSO |");
    pct(b, t->plain.top2, t->plain.n);
    bprintf(b, "\n| primary cause, strict LOSO |");
    pct(b, t->strict.first, t->strict.n);
    bprintf(b, "\n| label in the top two, strict LOSO |");
    pct(b, t->strict.top2, t->strict.n);
    bprintf(b, "\n| phase, strict (a new reading used by this source alone dropped) |");
    pct(b, t->ph_strict_ok, t->ph_n);
    bprintf(b, "\n| \"cannot tell\" on the labels `unknown` |");
    pct(b, unk_ct, unk);
    bprintf(b, "\n| \"cannot tell\" on the labels the text cannot tell |");
    pct(b, nt_ct, nt);
    bprintf(b, "\n");
    bprintf(
        b,
        "\nA fix that does not fit the run: among every fix the held-out report lists, one whose knob row "
        "(ml_fix_row) names no run of the label's `run_kind` (training; inference: serving or offline) and is "
        "not written for the serving engine the label's `framework` names, or a serving fix not written for "
        "that engine (a vLLM flag to a TGI server); over the logs with a `run_kind` and an event. The first "
        "fix at load, optimizer step or save: logs whose labelled phase (tellable) is one of these, whose "
        "held-out report lists a fix (%d more answer \"cannot tell\" and list none); an activation fix is one "
        "whose row addresses only activation causes (activations, eager_attention, long_sequence, logits, "
        "no_grad_checkpointing, fp32_upcast). Target of both: none. Which golden case covers each message format and "
        "each serving engine's start-up step: tests/golden/diagnose/COVERAGE.md.\n",
        h.late_none);
    lib_tiny_section(b);
    release2_section(b);
    bprintf(b, "\n\n## Causes (labels the text can tell)\n\n| set | n | primary | top two | answered right | answered "
               "wrong | cannot tell |\n"
               "|---|---:|---:|---:|---:|---:|---:|\n");
    figs_row(b, "leave-one-source-out", &t->plain);
    figs_row(b, "strict leave-one-source-out", &t->strict);
    split_table(b, "Per cause (the label)", "cause", true);
    split_table(b, "Per source group (the report id's project)", "group", false);
    sweep(b);
    criteria(b);
    not_tellable(b);
    record_table(b);
    params_table(b, th);
}

/* ---- the table, the floors, main ----------------------------------------------------------- */

static void write_atomic(const char *path, const char *text, size_t n)
{
    char tmp[4096];
    (void)snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0)
        die("cannot write", tmp);
    if (rename(tmp, path) != 0)
        die("cannot rename into place", path);
}

/* The C names of an evidence row and of a cause (the table is written with them). */
static const char *const ev_ids[ML_EV_COUNT] = {
#define EV_ID_STR(id, name, spec, group, reading, others, source, story) "ML_EV_" #id,
    ML_EVIDENCE(EV_ID_STR)
#undef EV_ID_STR
};

static const char *cause_c_name(unsigned c)
{
    static char n[64];
    (void)snprintf(n, sizeof(n), "ML_CAUSE_%s", ml_cause_name((enum ml_cause)c));
    for (char *p = n; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    return n;
}

static void weights_inc(struct buf *b, const struct ml_evidence_weights *w)
{
    bprintf(b, "/* Generated by validation/diagnose_report.c (validation_diagnose --weights) from tests/fixtures/oom:\n"
               " * the evidence weights of ML_EVIDENCE per (row, cause), in thousandths. Do not edit: regenerate with\n"
               " * `cmake --build build --target diagnose-report` and review the diff. */\n{\n    .w =\n        {\n");
    for (unsigned i = 0; i < ML_EV_COUNT; i++) {
        bool any = false;
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
            any |= w->w[i][c] != 0;
        if (!any)
            continue;
        bprintf(b, "            /* %s */\n            [%s] = {", ml_evidence_row((enum ml_evidence_id)i)->name,
                ev_ids[i]);
        bool first = true;
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
            if (w->w[i][c]) {
                bprintf(b, "%s[%s] = %d", first ? "" : ", ", cause_c_name(c), w->w[i][c]);
                first = false;
            }
        bprintf(b, "},\n");
    }
    bprintf(b, "        },\n    .tau_permille = %u,\n}\n", w->tau_permille);
}

/* The floor of key in FLOORS.txt: lines "key share" (# starts a comment); 0 when absent. */
static double floor_of(const char *floors, const char *key)
{
    for (const char *l = floors; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char k[32];
        double v;
        if (*l != '#' && sscanf(l, "%31s %lf", k, &v) == 2 && !strcmp(k, key))
            return v;
    }
    return 0;
}

static bool floor_ok(const char *floors, const char *key, int k, int n)
{
    double least = floor_of(floors, key);
    bool ok = n && (double)k / n + 1e-9 >= least;
    if (!ok)
        fprintf(stderr, "validation_diagnose: %s %d/%d is below its floor %.2f\n", key, k, n, least);
    return ok;
}

/* A ceiling: the most share of key (lines "max_key share"); no line: no ceiling. */
static bool ceiling_ok(const char *floors, const char *key, int k, int n)
{
    double most = floor_of(floors, key);
    bool listed = false;
    for (const char *l = floors; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char kk[40];
        if (*l != '#' && sscanf(l, "%39s", kk) == 1 && !strcmp(kk, key))
            listed = true;
    }
    bool ok = !listed || !n || (double)k / n <= most + 1e-9;
    if (!ok)
        fprintf(stderr, "validation_diagnose: %s %d/%d is above its ceiling %.2f\n", key, k, n, most);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: validation_diagnose FIXTURES OUT.md [--weights OUT.inc] [--check FLOORS.txt]\n");
        return 2;
    }
    const char *dir = argv[1], *out = argv[2], *weights = NULL, *floors = NULL;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--weights"))
            weights = argv[i + 1];
        else if (!strcmp(argv[i], "--check"))
            floors = argv[i + 1];
    }
    read_tags(dir);
    read_logs(dir);
    read_cases(dir);
    read_not_tellable(dir);
    build_params();
    static double th[512];
    fit(NULL, false, th);
    struct ml_evidence_weights w;
    dense(th, &w);
    run_loo();
    struct totals t;
    totals(&t);
    struct buf b = {0};
    report(&b, &t, th);
    write_atomic(out, b.p, b.n);
    if (weights) {
        struct buf wb = {0};
        weights_inc(&wb, &w);
        write_atomic(weights, wb.p, wb.n);
        free(wb.p);
    }
    fwrite(b.p, 1, b.n, stdout);
    free(b.p);
    if (!floors)
        return 0;
    bool ok = true;
    for (unsigned i = 0; i < ML_EV_COUNT; i++)
        for (unsigned c = 0; c < ML_CAUSE_COUNT; c++)
            if (abs(w.w[i][c] - ml_evidence_fitted.w[i][c]) > 2) {
                fprintf(
                    stderr,
                    "validation_diagnose: lib/diagnose/evidence_weights.inc is not the fit of the fixtures (%s > %s: "
                    "%d committed, %d fitted): regenerate it (target diagnose-report)\n",
                    ml_evidence_row((enum ml_evidence_id)i)->name, ml_cause_name((enum ml_cause)c),
                    ml_evidence_fitted.w[i][c], w.w[i][c]);
                ok = false;
            }
    char *fl = slurp(NULL, floors, NULL);
    ok &= floor_ok(fl, "numbers", t.num_ok, t.num_n);
    ok &= floor_ok(fl, "primary", t.plain.first, t.plain.n);
    ok &= floor_ok(fl, "top_two", t.plain.top2, t.plain.n);
    ok &= floor_ok(fl, "phase", t.ph_ok, t.ph_n);
    ok &= floor_ok(fl, "strict_primary", t.strict.first, t.strict.n);
    ok &= floor_ok(fl, "strict_top_two", t.strict.top2, t.strict.n);
    struct headline h;
    headline(&h, false);
    ok &= floor_ok(fl, "answered_right", t.plain.right, t.plain.n);
    ok &= floor_ok(fl, "cannot_tell_others", h.others_ct, h.others);
    ok &= ceiling_ok(fl, "max_confident_wrong", h.wrong, h.known);
    ok &= ceiling_ok(fl, "max_inference_training_fix", h.inf_train, h.inf);
    ok &= ceiling_ok(fl, "max_run_mismatch", h.kind_bad, h.kind_n);
    ok &= ceiling_ok(fl, "max_late_activation_first", h.late_act, h.late_n);
    free(fl);
    return ok ? 0 : 1;
}
