/*
 * bench_ledger.c - how long one training-ledger estimate takes (the fit search calls it ~1e5
 * times). Builds the seed case's setting once, then times ml_ledger_train in a loop with
 * CLOCK_MONOTONIC and prints microseconds per estimate, and the fit search's ledgers per second.
 * Each is timed in ROUNDS rounds (ITERATIONS / ROUNDS estimates, ITERATIONS / 1000 searches each)
 * and printed as the best round and the median one: on a shared machine the best is the code, the
 * median what a loaded machine gives. A benchmark, not a test: no assertions.
 * Usage: bench_ledger [ITERATIONS [ROUNDS]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memledger/catalog.h"
#include "memledger/fit.h"
#include "memledger/gpu.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/train.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define MAX_ROUNDS 50

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds of the best and the median of n rounds (sorts dt). */
static void best_median(double *dt, int n, double *best, double *median)
{
    qsort(dt, (size_t)n, sizeof(double), cmp_double);
    *best = dt[0];
    *median = n % 2 ? dt[n / 2] : (dt[n / 2 - 1] + dt[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    if (iters <= 0)
        iters = 100000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (rounds <= 0 || rounds > MAX_ROUNDS)
        rounds = 5;
    long per_round = iters / rounds > 0 ? iters / rounds : 1;
    double dt[MAX_ROUNDS], best, median;
    static struct ml_arch arch;
    static struct ml_inventory inv;
    static struct ml_train t;
    static struct ml_ledger led;
    struct ml_cluster c;
    struct ml_diag d;
    ml_diag_init(&d);
    memset(&c, 0, sizeof(c));
    if (ml_catalog_arch(ml_catalog_find("qwen2.5-14b"), &arch, &d) != ML_OK ||
        ml_inventory_build(&arch, &inv, &d) != ML_OK || ml_gpu_resolve("16G", &c.gpu, &d) != ML_OK) {
        fprintf(stderr, "bench_ledger: %s\n", d.msg);
        return 1;
    }
    c.gpus_per_node = 4;
    c.nodes = 1;
    ml_train_defaults(&t, ML_FW_LLAMAFACTORY);
    t.lora_rank = 64;
    t.seq_len = 1024;
    t.micro_batch = 1;
    t.grad_accum = 16;
    t.attn = ML_ATTN_EAGER;
    ml_zero_preset(&t, 3, false);
    struct ml_ledger_opts o;
    ml_ledger_opts_default(&o, &t, &c);

    const struct {
        const char *name;
        enum ml_method method;
    } cases[] = {{"LoRA r64 ZeRO-3 (seed case)", ML_METHOD_LORA}, {"full FT ZeRO-3", ML_METHOD_FULL}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        t.method = cases[k].method;
        uint64_t sink = 0;
        for (int r = 0; r < rounds; r++) {
            double t0 = now_s();
            for (long i = 0; i < per_round; i++) {
                t.micro_batch = 1 + (uint64_t)(i & 3); /* vary an input so nothing is hoisted */
                if (ml_ledger_train(&arch, &inv, &t, &c, &o, &led, &d) != ML_OK) {
                    fprintf(stderr, "bench_ledger: %s\n", d.msg);
                    return 1;
                }
                sink += led.peak_reserved;
            }
            dt[r] = now_s() - t0;
        }
        best_median(dt, rounds, &best, &median);
        printf("%-28s %d rounds of %ld estimates: best %.2f us each, %.0f per second; median %.2f us (checksum %llu)\n",
               cases[k].name, rounds, per_round, best * 1e6 / (double)per_round, (double)per_round / best,
               median * 1e6 / (double)per_round, (unsigned long long)(sink % 1000003));
    }
    /* The fit search on the seed case: ledgers evaluated per second (target >= 250,000). */
    static struct ml_fit_result r;
    struct ml_fit_opts fo;
    ml_fit_opts_default(&fo);
    t.method = ML_METHOD_LORA;
    t.micro_batch = 1;
    long searches = iters / 1000 > 0 ? iters / 1000 : 1;
    uint64_t evaluated = 0;
    for (int round = 0; round < rounds; round++) {
        evaluated = 0;
        double t0 = now_s();
        for (long i = 0; i < searches; i++) {
            if (ml_fit_train(&arch, &inv, &t, &c, &fo, &r, &d) != ML_OK) {
                fprintf(stderr, "bench_ledger: %s\n", d.msg);
                return 1;
            }
            evaluated += r.evaluated;
        }
        dt[round] = now_s() - t0;
    }
    best_median(dt, rounds, &best, &median);
    printf("%-28s %d rounds of %ld searches, %llu ledgers: best %.0f ledgers per second, %.2f ms per search; "
           "median %.0f per second\n",
           "fit search (seed case)", rounds, searches, (unsigned long long)evaluated, (double)evaluated / best,
           best * 1e3 / (double)searches, (double)evaluated / median);
    return 0;
}
