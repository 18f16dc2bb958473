/*
 * fuzz_oom_scan.c - libFuzzer target: the OOM log scanner (lib/oom) and the diagnosis on what it
 * finds. The input is scanned whole, then again in chunks whose size comes from the first byte
 * (the events must not depend on the chunking), the same chunks with their windows marked ahead
 * (ml_oom_ahead_mark: the same incident), then whole with the scalar pass 1 instead of the
 * SIMD one (the incident must be the same), then diagnosed; invariants are checked: bounded
 * structs, findings sorted, the ranking's p summing to one, "cannot tell" with what would decide
 * it, no numeric evidence on numbers that cannot all be true, the counters of what was read.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memledger/diagnose.h"
#include "memledger/oom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ml_incident a, b, c;
static struct ml_oom_scanner s;
static struct ml_oom_ahead ahead;
static struct ml_diagnosis dg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ml_incident_init(&a);
    ml_oom_scanner_init(&s, &a);
    ml_oom_scan_buffer(&s, data, size);

    size_t step = size ? (size_t)data[0] % 97 + 1 : 1;
    ml_incident_init(&b);
    ml_oom_scanner_init(&s, &b);
    ml_oom_scan_begin(&s);
    for (size_t o = 0; o < size; o += step)
        ml_oom_scan(&s, data + o, o + step > size ? size - o : step);
    ml_oom_scan_end(&s);
    if (a.n_events != b.n_events || a.n_events > ML_OOM_MAX_EVENTS)
        __builtin_trap();
    if (memcmp(a.ev, b.ev, sizeof(a.ev[0]) * a.n_events))
        __builtin_trap();
    /* the same chunks with their windows marked ahead, the matcher copied once (the stalest copy) */
    ml_incident_init(&c);
    ml_oom_scanner_init(&s, &c);
    ml_oom_scan_begin(&s);
    ahead.copied = false;
    ml_oom_ahead_begin(&s, &ahead);
    for (size_t o = 0; o < size; o += step) {
        size_t k = o + step > size ? size - o : step;
        ml_oom_ahead_mark(&ahead, (const char *)data + o, k, o == 0 || data[o - 1] == '\n');
        ml_oom_scan_ahead(&s, data + o, k, &ahead);
    }
    ml_oom_scan_end(&s);
    if (memcmp(&b, &c, sizeof(b)))
        __builtin_trap();
    if (ml_oom_scanner_simd(&s, true)) {
        ml_incident_init(&c);
        ml_oom_scanner_init(&s, &c);
        (void)ml_oom_scanner_simd(&s, false);
        ml_oom_scan_buffer(&s, data, size);
        if (memcmp(&a, &c, sizeof(a)))
            __builtin_trap();
    }
    for (uint32_t i = 0; i < a.n_events; i++) {
        const struct ml_oom_event *e = &a.ev[i];
        if (e->phase >= ML_OPH_COUNT || e->timing >= ML_TIM_COUNT || e->n_procs > ML_OOM_MAX_PROCS ||
            strnlen(e->text, sizeof(e->text)) == sizeof(e->text))
            __builtin_trap();
    }

    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_diagnose(&a, NULL, &dg, &d);
    if (a.n_events == 0) {
        if (st == ML_OK)
            __builtin_trap();
        return 0;
    }
    /* A diagnosis names causes, or says it cannot tell (then with what would decide it). */
    if (st != ML_OK || dg.n_findings > ML_DIAG_MAX_FINDINGS || (dg.n_findings == 0 && !dg.cannot_tell))
        __builtin_trap();
    if (dg.cannot_tell && dg.n_decide == 0)
        __builtin_trap();
    for (uint32_t i = 0; i < dg.n_findings; i++) {
        if (dg.f[i].confidence > 1000 || dg.f[i].cause >= ML_CAUSE_COUNT || dg.f[i].n_fix > ML_DIAG_MAX_FIXES ||
            dg.f[i].n_feat > ML_DIAG_MAX_FEATURES)
            __builtin_trap();
        if (i && dg.f[i].confidence > dg.f[i - 1].confidence)
            __builtin_trap();
    }
    uint32_t p = dg.p_none;
    for (uint32_t i = 0; i < dg.ranking.n; i++)
        p += dg.ranking.p_permille[i];
    if (dg.ranking.n && (p < 1000 - ML_CAUSE_COUNT || p > 1000 + ML_CAUSE_COUNT)) /* rounding of each p */
        __builtin_trap();
    /* Numbers that cannot all be true build nothing: masked numbers give no numeric evidence
     * (off WSL/Windows, where allocated above total may be the driver's shared memory). */
    const struct ml_oom_event *e = &a.ev[dg.primary];
    uint32_t masked = 0;
    if (ml_oom_check_numbers(e, a.saw_wsl || a.saw_windows, &masked) != dg.implausible)
        __builtin_trap();
    if ((masked & ML_OOM_F_TOTAL) &&
        (dg.features.on[ML_EV_N_FULL] || dg.features.on[ML_EV_N_BIG_REQUEST] || dg.features.on[ML_EV_N_REQ_GT_CAP] ||
         dg.features.on[ML_EV_P_OUTSIDE_GAP] || dg.features.on[ML_EV_FRAG_HIGH]))
        __builtin_trap();
    /* What was read is accounted for. */
    if (a.longest_line > a.bytes || a.truncated_lines > a.lines || a.cut_messages > a.n_events_seen)
        __builtin_trap();
    return 0;
}
