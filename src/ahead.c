/*
 * ahead.c - a helper thread that runs one job at a time beside the caller (io.h, ml_ahead_*): what
 * lets `memledger diagnose` mark the next mapped chunk of a log (the scanner's window pass,
 * lib/oom's ml_oom_ahead_mark) while it scans the chunk before (src/cmd_diagnose.c). The job
 * itself is pure; only the thread lives here. One helper per process, opened per log.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT (Linux) */

#include "io.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <unistd.h>

/* The CPUs this process may run on (taskset, a container's cpuset), else the machine's online. */
static long cpus_usable(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set);
#endif
    return sysconf(_SC_NPROCESSORS_ONLN);
}

static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* a job posted, a job done, or the end asked (one condition: broadcast) */
    void (*fn)(void *); /* the posted job, NULL when none is waiting or running */
    void *arg;
    bool quit, open;
} ah = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *ahead_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&ah.mu);
    for (;;) {
        while (!ah.fn && !ah.quit)
            pthread_cond_wait(&ah.cv, &ah.mu);
        if (!ah.fn)
            break; /* (quit, with no job left) */
        void (*fn)(void *) = ah.fn;
        void *arg = ah.arg;
        pthread_mutex_unlock(&ah.mu);
        fn(arg);
        pthread_mutex_lock(&ah.mu);
        ah.fn = NULL;
        pthread_cond_broadcast(&ah.cv);
    }
    pthread_mutex_unlock(&ah.mu);
    return NULL;
}

bool ml_ahead_open(void)
{
    if (ah.open)
        return true;
    if (cpus_usable() < 2)
        return false; /* one CPU: a second thread would only take turns with the first */
    ah.quit = false;
    ah.fn = NULL;
    if (pthread_create(&ah.thread, NULL, ahead_main, NULL) != 0)
        return false;
    ah.open = true;
    return true;
}

void ml_ahead_post(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&ah.mu);
    ah.fn = fn;
    ah.arg = arg;
    pthread_cond_broadcast(&ah.cv);
    pthread_mutex_unlock(&ah.mu);
}

void ml_ahead_wait(void)
{
    pthread_mutex_lock(&ah.mu);
    while (ah.fn)
        pthread_cond_wait(&ah.cv, &ah.mu);
    pthread_mutex_unlock(&ah.mu);
}

void ml_ahead_close(void)
{
    if (!ah.open)
        return;
    pthread_mutex_lock(&ah.mu);
    ah.quit = true;
    pthread_cond_broadcast(&ah.cv);
    pthread_mutex_unlock(&ah.mu);
    pthread_join(ah.thread, NULL);
    ah.open = false;
}
