/*
 * bench_watch.c - what sampling costs: `memledger watch` at 5 Hz over 8 fake GPUs with 4
 * processes each, for SECONDS (default 2), measured as this process's CPU time over the wall
 * time. Issue 6 asks for under 1 % of a core; exits 1 above that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "memledger/monitor.h"

static void on_record(void *ctx, const char *line, size_t len)
{
    (void)line;
    *(size_t *)ctx += len;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *secs = argc > 1 ? argv[1] : "2";
    char path[64];
    (void)snprintf(path, sizeof(path), "/tmp/ml_bench_watch_%d", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return 2;
    fputs("count 8\n", f);
    for (int d = 0; d < 8; d++)
        fprintf(f, "step %d used=%d000000000 procs=5000001:1000,5000002:2000,5000003:3000,5000004:4000\n", d, d + 1);
    fclose(f);
    setenv("FAKE_NVML_SCRIPT", path, 1);
    struct ml_backend_opts o;
    memset(&o, 0, sizeof(o));
    o.nvml_lib = ML_FAKES_DIR "/nvml/libnvidia-ml.so.1";
    static struct ml_monitor m;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_monitor_open(&m, "nvml", &o, &d) != ML_OK) {
        fprintf(stderr, "bench_watch: %s\n", d.msg);
        return 2;
    }
    static char sleep_cmd[] = "sleep";
    char secs_arg[32];
    (void)snprintf(secs_arg, sizeof(secs_arg), "%s", secs);
    char *cmd[] = {sleep_cmd, secs_arg, NULL};
    size_t bytes = 0;
    struct ml_watch_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.argv = cmd;
    cfg.interval_ns = 200000000u;
    cfg.proc_root = "/proc";
    cfg.clock = ml_clock_monotonic();
    cfg.hooks.ctx = &bytes;
    cfg.hooks.record = on_record;
    static struct ml_watch w;
    static struct ml_series series[ML_MON_MAX_DEVICES];
    struct ml_child_exit ex;
    double c0 = cpu_s(), t0 = wall_s();
    enum ml_status st = ml_watch_run(&cfg, &m, &w, series, &ex, &d);
    double c1 = cpu_s(), t1 = wall_s();
    ml_monitor_close(&m);
    unlink(path);
    if (st != ML_OK || ex.code != 0) {
        fprintf(stderr, "bench_watch: run failed: %s\n", d.msg);
        return 2;
    }
    double share = (c1 - c0) / (t1 - t0) * 100.0;
    printf("bench_watch: %llu rounds x 8 GPUs x 4 processes in %.2f s wall, %.4f s CPU: %.3f %% of a core "
           "(%zu timeline bytes)\n",
           (unsigned long long)w.n_samples, t1 - t0, c1 - c0, share, bytes);
    return share < 1.0 ? 0 : 1;
}
