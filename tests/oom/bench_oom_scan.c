/*
 * bench_oom_scan.c - scanning speed and memory of lib/oom on a generated training log.
 *
 *   bench_oom_scan MIB            scan MIB MiB generated on the fly (nothing is stored), print
 *                                 MB/s and the peak RSS; fail if RSS grew by more than 8 MiB
 *   bench_oom_scan MIB FILE       also write the same bytes to FILE (for grep / memledger runs)
 *   ML_OOM_NARROW=1 bench_oom_scan MIB   the same with the scalar pass 1 (no AVX2)
 *
 * The log mixes what long LLM training logs are made of (tqdm bars with carriage returns, HF
 * log dictionaries, INFO lines, DeepSpeed warnings, a traceback) and ends with the seed case's
 * HIP OOM message, which must be found. Time and RSS come from the C library (allowed in tests,
 * never in lib/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "memledger/oom.h"

static const char *const lines[] = {
    " 42%|████▏     | 7871/18750 [3:02:11<4:12:09,  1.39s/it]\r 42%|████▏     | 7872/18750 [3:02:12<4:12:08,  "
    "1.39s/it]\n",
    "[INFO|trainer.py:2414] 2026-03-14 08:16:21,402 >> {'loss': 1.0312, 'grad_norm': 0.4127, 'learning_rate': "
    "2.6667e-06, 'epoch': 0.0}\n",
    "[2026-03-14 08:16:21,402] [INFO] [logging.py:128:log_dist] [Rank 0] step=7870, skipped=0, lr=[2.6e-06], "
    "mom=[(0.9, 0.999)]\n",
    "[2026-03-14 08:16:22,118] [INFO] [timer.py:264:stop] epoch=0/micro_step=125920/global_step=7870, "
    "RunningAvgSamplesPerSec=11.5, CurrSamplesPerSec=11.9, MemAllocated=14.2GB, MaxMemAllocated=15.1GB\n",
    "/usr/local/lib/python3.10/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
    "requires_grad=True. Gradients will be None\n",
    "  warnings.warn(\n",
    "wandb: Syncing run binding_part_000_512 to https://example.invalid/run/abc123 with plenty of ordinary text in "
    "it\n",
};

static const char oom[] =
    "[rank1]: torch.OutOfMemoryError: HIP out of memory. Tried to allocate 36.00 MiB. GPU 1 has a total capacity of "
    "15.98 GiB of which 0 bytes is free. Of the allocated memory 14.81 GiB is allocated by PyTorch, and 571.62 MiB is "
    "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n";

static long rss_kib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct ml_incident inc;
static struct ml_oom_scanner s;

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 256;
    FILE *out = argc > 2 ? fopen(argv[2], "wb") : NULL;
    if (mib <= 0 || (argc > 2 && !out)) {
        fprintf(stderr, "usage: bench_oom_scan MIB [FILE]\n");
        return 2;
    }
    static char chunk[(1 << 16) + 4096];
    ml_incident_init(&inc);
    ml_oom_scanner_init(&s, &inc);
    if (getenv("ML_OOM_NARROW")) /* compare the scalar pass 1 with the SIMD one */
        (void)ml_oom_scanner_simd(&s, false);
    long rss0 = rss_kib();
    unsigned long long total = (unsigned long long)mib << 20, done = 0;
    size_t k = 0;
    double scan = 0;
    ml_oom_scan_begin(&s);
    while (done < total) {
        size_t n = 0;
        while (n < (1 << 16)) {
            const char *l = lines[k++ % (sizeof(lines) / sizeof(lines[0]))];
            size_t len = strlen(l);
            memcpy(chunk + n, l, len);
            n += len;
        }
        if (done + n >= total) {
            memcpy(chunk + n, oom, sizeof(oom) - 1);
            n += sizeof(oom) - 1;
        }
        double t0 = now();
        ml_oom_scan(&s, chunk, n);
        scan += now() - t0;
        if (out && fwrite(chunk, 1, n, out) != n) {
            fprintf(stderr, "bench_oom_scan: write failed\n");
            return 2;
        }
        done += n;
    }
    ml_oom_scan_end(&s);
    if (out)
        fclose(out);
    long rss1 = rss_kib();
    printf("scanned %.1f MiB, %llu lines in %.3f s: %.0f MB/s; events %u; peak RSS %ld KiB (+%ld KiB while scanning); "
           "scanner+incident %zu bytes\n",
           (double)done / (1 << 20), (unsigned long long)inc.lines, scan, (double)done / 1e6 / scan, inc.n_events, rss1,
           rss1 - rss0, sizeof(s) + sizeof(inc));
    if (inc.n_events != 1 || inc.ev[0].requested != 37748736ull) {
        fprintf(stderr, "bench_oom_scan: the OOM at the end was not found\n");
        return 1;
    }
    if (rss1 - rss0 > 8 * 1024) {
        fprintf(stderr, "bench_oom_scan: RSS grew by %ld KiB: not constant memory\n", rss1 - rss0);
        return 1;
    }
    return 0;
}
