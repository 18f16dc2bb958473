/*
 * The window pass made ahead of the scan (oom.h, ml_oom_ahead_*; src/cmd_diagnose.c runs it on a
 * second thread): whatever the chunking and however old the matcher's copy, the incident is byte
 * for byte ml_oom_scan's; the scan does read the windows marked ahead (emptied lists lose the
 * event); and a copy that no longer looks for an anchor the scanner still looks for is not used.
 * White-box: it reads the marks through lib/oom's private match.h.
 */
#include "ml_test.h"

#include "match.h"
#include "memledger/oom.h"
#include "scan_ahead.h"

static struct ml_incident plain, ahead_inc;
static struct ml_oom_scanner sc;
static struct ml_oom_ahead ahead;
static char log_text[1 << 20];

/* A training log of about 1 MiB: tqdm bars with carriage returns, HF log dictionaries, DeepSpeed
 * lines whose step moves, a line with a backslash and one with ANSI colour, lines over a window
 * long, a wandb line, a DeepSpeed flag early (its anchors are then no longer looked for), and the
 * seed case's OOM message near the end. */
static size_t build_log(void)
{
    size_t len = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (unsigned step = 1; len + 20000 < sizeof(log_text); step++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        char line[512];
        int k = snprintf(line, sizeof(line),
                         " %2u%%|####      | %u/18750 [1:02:11<4:12:09,  1.39s/it]\r %2u%%|####      | %u/18750 "
                         "[1:02:12<4:12:08,  1.39s/it]\n"
                         "{'loss': %u.%04u, 'grad_norm': 0.41, 'learning_rate': 2.6e-06, 'epoch': 0.0}\n"
                         "[2026-03-14 08:16:21,402] [INFO] [logging.py:128:log_dist] [Rank 0] step=%u, skipped=0\n"
                         "wandb: Syncing run part_%u to https://example.invalid/run with plain words in it\n",
                         step % 100, step, step % 100, step + 1, (unsigned)(x >> 62), (unsigned)(x >> 50) % 10000, step,
                         step);
        memcpy(log_text + len, line, (size_t)k);
        len += (size_t)k;
        if (step == 3) {
            const char *ds = "[2026-03-14 08:00:00] [INFO] deepspeed info: version=0.14.4, git-hash=unknown\n";
            memcpy(log_text + len, ds, strlen(ds));
            len += strlen(ds);
        }
        if (step % 211 == 0) { /* a rare byte other than CR, and a line longer than a window */
            const char *esc = "\x1b[32mINFO\x1b[0m saving C:\\runs\\ckpt\n";
            memcpy(log_text + len, esc, strlen(esc));
            len += strlen(esc);
            size_t lw = 8192 + (x >> 40) % 4000;
            memset(log_text + len, 'a', lw);
            memcpy(log_text + len + lw / 2, " step 7 ", 8);
            len += lw;
            log_text[len++] = '\n';
        }
    }
    /* (after a short line: no hard wrap's seam is looked at across to it) */
    const char *oom =
        "epoch 0 done\n[rank0]: torch.OutOfMemoryError: HIP out of memory. Tried to allocate 36.00 MiB. GPU 0 has a "
        "total capacity of 15.98 GiB of which 0 bytes is free. Of the allocated memory 14.81 GiB is "
        "allocated by PyTorch, and 571.62 MiB is reserved by PyTorch but unallocated.\n"
        "{'loss': 0.9, 'grad_norm': 0.41, 'learning_rate': 2.6e-06, 'epoch': 0.1}\n";
    memcpy(log_text + len, oom, strlen(oom));
    return len + strlen(oom);
}

static void scan_plain(struct ml_incident *i, const char *t, size_t len, size_t step)
{
    ml_incident_init(i);
    ml_oom_scanner_init(&sc, i);
    ml_oom_scan_begin(&sc);
    for (size_t o = 0; o < len; o += step)
        ml_oom_scan(&sc, t + o, o + step > len ? len - o : step);
    ml_oom_scan_end(&sc);
}

/* Each window marked ahead has its anchor list emptied. */
static void empty_lists(struct ml_oom_ahead *a)
{
    for (uint32_t w = 0; w < a->n; w++)
        ((struct ml_oom_marks *)(void *)a->marks[w])->n_hits = 0;
}

static void test_ahead_is_plain(void **state)
{
    (void)state;
    ml_incident_init(&plain);
    ml_oom_scanner_init(&sc, &plain);
    if (!ml_oom_scanner_simd(&sc, true))
        skip(); /* (no window pass without the SIMD pass 1) */
    size_t len = build_log();
    const size_t steps[] = {4093, 65536, 262144, len};
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        scan_plain(&plain, log_text, len, steps[s]);
        assert_int_equal(plain.n_events, 1);
        assert_true(plain.saw_deepspeed && plain.lines > 10000);
        for (int stale = 0; stale < 2; stale++) {
            scan_ahead_chunks(&sc, &ahead_inc, &ahead, log_text, len, steps[s], stale, NULL);
            assert_memory_equal(&plain, &ahead_inc, sizeof(plain));
        }
    }
    /* the windows marked ahead are the ones read: with their anchor lists emptied the message is
     * not seen (in chunks of 256 KiB, as src/cmd_diagnose.c maps them: each has its windows
     * marked ahead, up to ML_OOM_AHEAD_WINDOWS) */
    scan_ahead_chunks(&sc, &ahead_inc, &ahead, log_text, len, 262144, false, empty_lists);
    assert_int_equal(ahead_inc.n_events, 0);
}

static void test_narrower_copy_unused(void **state)
{
    (void)state;
    ml_incident_init(&plain);
    ml_oom_scanner_init(&sc, &plain);
    if (!ml_oom_scanner_simd(&sc, true))
        skip();
    /* a copy made after the scanner saw DeepSpeed named no longer looks for "deepspeed" */
    const char *first = "[INFO] deepspeed info: version=0.14.4\n";
    ml_oom_scan_buffer(&sc, first, strlen(first));
    assert_true(plain.saw_deepspeed);
    ahead.copied = false;
    ml_oom_ahead_begin(&sc, &ahead);
    /* a new scanner that still looks for it is given marks made with that copy: not used */
    const char *t = "step 1\n[INFO] deepspeed info: version=0.14.4\nstep 2\n";
    ml_oom_ahead_mark(&ahead, t, strlen(t), true);
    assert_true(ahead.n >= 1);
    ml_incident_init(&ahead_inc);
    ml_oom_scanner_init(&sc, &ahead_inc);
    ml_oom_scan_begin(&sc);
    ml_oom_scan_ahead(&sc, t, strlen(t), &ahead);
    ml_oom_scan_end(&sc);
    assert_true(ahead_inc.saw_deepspeed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ahead_is_plain),
        cmocka_unit_test(test_narrower_copy_unused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
