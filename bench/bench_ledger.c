/*
 * bench_ledger.c - how long one training-ledger estimate takes (the fit search calls it ~1e5
 * times). Builds the seed case's setting once, then times ml_ledger_train in a loop with
 * CLOCK_MONOTONIC and prints microseconds per estimate. A benchmark, not a test: no assertions.
 * Usage: bench_ledger [ITERATIONS]
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

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    if (iters <= 0)
        iters = 100000;
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
        double t0 = now_s();
        for (long i = 0; i < iters; i++) {
            t.micro_batch = 1 + (uint64_t)(i & 3); /* vary an input so nothing is hoisted */
            if (ml_ledger_train(&arch, &inv, &t, &c, &o, &led, &d) != ML_OK) {
                fprintf(stderr, "bench_ledger: %s\n", d.msg);
                return 1;
            }
            sink += led.peak_reserved;
        }
        double dt = now_s() - t0;
        printf("%-28s %ld estimates in %.3f s: %.2f us each, %.0f per second (checksum %llu)\n",
               cases[k].name, iters, dt, dt * 1e6 / (double)iters, (double)iters / dt,
               (unsigned long long)(sink % 1000003));
    }
    /* The fit search on the seed case: ledgers evaluated per second (target >= 100,000). */
    static struct ml_fit_result r;
    struct ml_fit_opts fo;
    ml_fit_opts_default(&fo);
    t.method = ML_METHOD_LORA;
    t.micro_batch = 1;
    long searches = iters / 1000 > 0 ? iters / 1000 : 1;
    uint64_t evaluated = 0;
    double t0 = now_s();
    for (long i = 0; i < searches; i++) {
        if (ml_fit_train(&arch, &inv, &t, &c, &fo, &r, &d) != ML_OK) {
            fprintf(stderr, "bench_ledger: %s\n", d.msg);
            return 1;
        }
        evaluated += r.evaluated;
    }
    double dt = now_s() - t0;
    printf("%-28s %ld searches, %llu ledgers in %.3f s: %.0f ledgers per second, %.2f ms per search\n",
           "fit search (seed case)", searches, (unsigned long long)evaluated, dt, (double)evaluated / dt,
           dt * 1e3 / (double)searches);
    return 0;
}
