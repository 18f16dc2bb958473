/*
 * Damaged text (issue 13): every log and report text of the corpus (tests/fixtures/oom), damaged
 * the way pasted logs are, must give the same numbers as the undamaged text (which
 * test_oom_logs.c and test_oom_cases.c hold to the labels): a terminal's hard wrap at 60, 80 and
 * 132 bytes (anywhere, inside words and numbers); a newline between each number of the message and
 * its unit, one variant per size; every unit run into the next word ("MiBfree"); the newlines
 * turned into blanks (a one-line paste) or lost (lines run together); the whole text escaped into
 * the "message" of one JSON record after a 9 KB field (past the line buffer) and before a 12 KB
 * one. The wrapped and JSON variants are also scanned in 7-byte chunks and with the scalar pass 1,
 * which must give the same incident. A moved decimal point in the allocated figure (a retyped
 * screenshot: 144.3 GiB on a 23.7 GiB card) must be flagged, and no cause built on the numbers.
 */
#include "ml_test.h"

#include <cjson/cJSON.h>
#include <ctype.h>

#include "memledger/diagnose.h"
#include "memledger/oom.h"

#define BIG (1 << 18)

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static struct ml_incident base, dam, other;
static struct ml_oom_scanner sc;
static struct ml_diagnosis dg;
static char out[BIG], tmp[BIG];
static int failures, variants;

static void scan(struct ml_incident *inc, const char *t, size_t n, size_t step, bool narrow)
{
    ml_incident_init(inc);
    ml_oom_scanner_init(&sc, inc);
    if (narrow)
        (void)ml_oom_scanner_simd(&sc, false);
    ml_oom_scan_begin(&sc);
    for (size_t o = 0; o < n; o += step)
        ml_oom_scan(&sc, t + o, o + step > n ? n - o : step);
    ml_oom_scan_end(&sc);
}

/* The numbers of an incident's primary event, as one comparable value. */
struct nums {
    uint32_t has;
    uint64_t v[12];
    uint32_t n_procs;
    uint64_t procs[ML_OOM_MAX_PROCS];
};

static bool numbers(const struct ml_incident *inc, struct nums *n)
{
    memset(n, 0, sizeof(*n));
    int32_t p = ml_diagnose_primary(inc);
    if (p < 0)
        return false;
    const struct ml_oom_event *e = &inc->ev[p];
    uint32_t keep = ML_OOM_F_REQUESTED | ML_OOM_F_TOTAL | ML_OOM_F_FREE | ML_OOM_F_ALLOCATED |
                    ML_OOM_F_RESERVED_UNALLOC | ML_OOM_F_RESERVED | ML_OOM_F_ACTIVE | ML_OOM_F_ALLOWED |
                    ML_OOM_F_PRIVATE_POOL | ML_OOM_F_THIS_PROCESS | ML_OOM_F_OTHER | ML_OOM_F_MAX_SEQ_LEN |
                    ML_OOM_F_KV_TOKENS | ML_OOM_F_UTIL;
    n->has = e->has & keep;
    const uint64_t v[] = {e->requested, e->total,        e->free,         e->allocated, e->reserved_unalloc,
                          e->reserved,  e->this_process, e->private_pool, e->other,     e->max_seq_len,
                          e->kv_tokens, e->util_permille};
    for (size_t i = 0; i < 12; i++)
        n->v[i] = v[i];
    n->n_procs = e->n_procs;
    for (uint32_t i = 0; i < e->n_procs; i++)
        n->procs[i] = e->procs[i].bytes;
    return true;
}

static void check(const char *id, const char *damage, const char *t, size_t n, bool streams)
{
    struct nums want, got;
    variants++;
    if (!numbers(&base, &want))
        return;
    scan(&dam, t, n, n ? n : 1, false);
    if (!numbers(&dam, &got) || memcmp(&want, &got, sizeof(want))) {
        print_error("%s, %s: %s\n", id, damage, dam.n_events ? "other numbers" : "no event");
        failures++;
        return;
    }
    if (!streams)
        return;
    scan(&other, t, n, 7, false);
    bool same = other.n_events == dam.n_events && !memcmp(other.ev, dam.ev, sizeof(dam.ev[0]) * dam.n_events);
    scan(&other, t, n, n ? n : 1, true);
    if (!same || memcmp(&other, &dam, sizeof(dam))) {
        print_error("%s, %s: 7-byte chunks or the scalar pass 1 give another incident\n", id, damage);
        failures++;
    }
}

static size_t wrap(const char *t, size_t n, size_t w)
{
    size_t o = 0, col = 0;
    for (size_t i = 0; i < n && o + 2 < sizeof(out); i++) {
        if (t[i] == '\n') {
            col = 0;
        } else if (col == w) {
            out[o++] = '\n';
            col = 0;
        }
        out[o++] = t[i];
        col += t[i] != '\n';
    }
    return o;
}

static bool is_unit_at(const char *p)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB"};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strncmp(p, units[i], strlen(units[i])))
            return true;
    return false;
}

/* The blanks between a number and its unit on the message's line (a number's last digit, ' ', a unit). */
static size_t unit_blanks(const char *t, size_t n, size_t *at, size_t max)
{
    const char *m = strstr(t, "ried to allocate");
    if (!m)
        m = strstr(t, "Free memory on device");
    if (!m)
        return 0;
    const char *e = memchr(m, '\n', n - (size_t)(m - t));
    if (!e)
        e = t + n;
    size_t k = 0;
    for (const char *p = m; p + 1 < e && k < max; p++)
        if (p[0] == ' ' && p > t && is_digit(p[-1]) && is_unit_at(p + 1))
            at[k++] = (size_t)(p - t);
    return k;
}

static size_t glue(const char *t, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < sizeof(out); i++) {
        out[o++] = t[i];
        /* "7.06 GiB already" -> "7.06 GiBalready" (the unit's trailing blank lost) */
        if (is_unit_at(t + i) && i && (is_digit(t[i - 1]) || t[i - 1] == ' ')) {
            size_t u = 0;
            while (u < 5 && t[i + u] && t[i + u] != ' ' && t[i + u] != '\n')
                u++;
            memcpy(out + o, t + i + 1, u - 1);
            o += u - 1;
            i += u - 1;
            if (t[i + 1] == ' ' && (isalpha((unsigned char)t[i + 2]) || t[i + 2] == '('))
                i++;
        }
    }
    return o;
}

static size_t json_record(const char *t, size_t n, bool far)
{
    size_t o = 0;
    const char *head = "{\"ts\": \"2026-01-01T00:00:00Z\", \"level\": \"ERROR\", ";
    o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", head);
    if (far) {
        o += (size_t)snprintf(out + o, sizeof(out) - o, "\"pad\": \"");
        memset(out + o, 'x', 9000);
        o += 9000;
        o += (size_t)snprintf(out + o, sizeof(out) - o, "\", ");
    }
    o += (size_t)snprintf(out + o, sizeof(out) - o, "\"message\": \"");
    for (size_t i = 0; i < n && o + 8 < sizeof(out) - 13000; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '\n' || c == '"' || c == '\\' || c == '\t' || c == '\r') {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, 8, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    if (!far) {
        o += (size_t)snprintf(out + o, sizeof(out) - o, ", \"pad\": \"");
        memset(out + o, 'y', 12000);
        o += 12000;
        out[o++] = '"';
    }
    o += (size_t)snprintf(out + o, sizeof(out) - o, "}\n");
    return o;
}

/* A moved decimal point in the allocated figure: flagged, and no numeric evidence built on it. */
static void moved_decimal(const char *id, const char *t, size_t n)
{
    const char *keys[] = {" already allocated", " is allocated by PyTorch"};
    for (size_t k = 0; k < 2; k++) {
        const char *a = strstr(t, keys[k]);
        if (!a || a - t < 8 || a >= t + n)
            continue;
        const char *u = a - 3; /* "GiB" */
        if (strncmp(u, "GiB", 3) && strncmp(u, "MiB", 3))
            return;
        const char *d = u - 1;
        while (d > t && *d == ' ')
            d--;
        const char *dot = d;
        while (dot > t && is_digit(*dot))
            dot--;
        if (*dot != '.' || !is_digit(dot[1]) || !is_digit(dot[-1]))
            return;
        /* "14.43" -> "144.3" */
        size_t o = (size_t)(dot - t);
        memcpy(out, t, o);
        out[o] = dot[1];
        out[o + 1] = '.';
        memcpy(out + o + 2, dot + 2, n - o - 2);
        scan(&dam, out, n, n, false);
        int32_t p = ml_diagnose_primary(&dam);
        if (p < 0 || dam.ev[p].allocated <= dam.ev[p].total || !(dam.ev[p].has & ML_OOM_F_TOTAL))
            return; /* still possible */
        struct ml_diag dd;
        ml_diag_init(&dd);
        assert_int_equal(ml_diagnose(&dam, NULL, &dg, &dd), ML_OK);
        variants++;
        static const enum ml_evidence_id built[] = {
            ML_EV_N_FULL,   ML_EV_N_TINY_FULL,    ML_EV_N_BIG_REQUEST, ML_EV_N_EMPTY_CARD,  ML_EV_FRAG_HIGH,
            ML_EV_FRAG_MID, ML_EV_FRAG_WITH_FREE, ML_EV_FRAG_LOW,      ML_EV_P_OUTSIDE_GAP, ML_EV_N_FREE_COVERS};
        bool any = false;
        /* (on WSL/Windows allocated above total may be the driver's shared memory: the other
         * relations flag it, and the free and total numbers still hold) */
        for (size_t i = 0; i < sizeof(built) / sizeof(built[0]) && !dam.saw_windows && !dam.saw_wsl; i++)
            any |= dg.features.on[built[i]];
        if (!dg.implausible || !dg.features.on[ML_EV_N_IMPOSSIBLE] || any) {
            print_error("%s, moved decimal: %s\n", id,
                        dg.implausible ? "evidence built on the numbers" : "not flagged");
            failures++;
        }
        return;
    }
}

static void damage_all(const char *id, const char *t, size_t n)
{
    scan(&base, t, n, n ? n : 1, false);
    static const size_t widths[] = {60, 80, 132};
    char name[32];
    for (size_t i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "wrap %zu", widths[i]);
        size_t k = wrap(t, n, widths[i]);
        check(id, name, out, k, widths[i] == 80);
    }
    size_t at[16];
    size_t nu = unit_blanks(t, n, at, 16);
    for (size_t i = 0; i < nu; i++) {
        memcpy(tmp, t, n);
        tmp[at[i]] = '\n';
        snprintf(name, sizeof(name), "unit split %zu", i);
        check(id, name, tmp, n, false);
    }
    check(id, "glued units", out, glue(t, n), false);
    memcpy(tmp, t, n);
    for (size_t i = 0; i < n; i++)
        if (tmp[i] == '\n')
            tmp[i] = ' ';
    check(id, "one line", tmp, n, false);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] != '\n')
            tmp[k++] = t[i];
    check(id, "newlines lost", tmp, k, false);
    check(id, "JSON, past 8 KB", out, json_record(t, n, true), true);
    check(id, "JSON, first", out, json_record(t, n, false), false);
    moved_decimal(id, t, n);
}

static void test_damage(void **state)
{
    (void)state;
    size_t len;
    char *labels = ml_test_slurp("tests/fixtures/oom/labels.jsonl", &len);
    assert_non_null(labels);
    int records = 0;
    char *save = NULL;
    for (char *line = strtok_r(labels, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *r = cJSON_Parse(line);
        const char *id = cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring;
        char rel[256];
        snprintf(rel, sizeof(rel), "tests/fixtures/oom/%s.log", id);
        size_t tl;
        char *text = ml_test_slurp(rel, &tl);
        assert_non_null(text);
        if (tl < BIG / 4) {
            damage_all(id, text, tl);
            records++;
        }
        free(text);
        cJSON_Delete(r);
    }
    free(labels);
    char *cases = ml_test_slurp("tests/fixtures/oom/oom-cases.jsonl", &len);
    assert_non_null(cases);
    save = NULL;
    for (char *line = strtok_r(cases, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *r = cJSON_Parse(line);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "oom_text");
        if (cJSON_IsString(t)) {
            snprintf(tmp, sizeof(tmp), "%s\n", t->valuestring);
            static char text[BIG];
            size_t tl = strlen(tmp);
            memcpy(text, tmp, tl + 1);
            damage_all(cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring, text, tl);
            records++;
        }
        cJSON_Delete(r);
    }
    free(cases);
    printf("%d records, %d damaged variants, %d failures\n", records, variants, failures);
    assert_true(records == 108 + 35 && variants > 1000);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_damage)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
