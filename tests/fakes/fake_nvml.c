/*
 * fake_nvml.c - a fake libnvidia-ml.so.1 that replays a script (fake_script.h), so that the
 * NVML backend, the sampler and the loader's failure paths are tested without a GPU.
 *
 * Built three times: complete; with -DFAKE_NO_V2 (a driver older than 510: no
 * nvmlDeviceGetMemoryInfo_v2); with -DFAKE_NO_MEMINFO (a library missing a required symbol).
 * The types are written out here as nvml.h has them, independently of lib/monitor/vendor, so
 * that a mistake there (the v2 version word above all) is caught rather than copied.
 *
 * Readings advance per device at each process-list call (the sampler reads memory, then the
 * processes, once per round); with "procs off" at each memory call instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fake_script.h"

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2), spelled out. */
#define FAKE_MEMORY_V2_VERSION 0x02000028u
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t is 24 bytes");

int nvmlInit_v2(void);
int nvmlInit(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int r);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h);
int nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned int len);
int nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned int len);
int nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m);
int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m);
int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v2_t *infos);
int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v1_t *infos);
int fake_nvml_memory_calls(unsigned int dev);

static struct fk_script sc;
static int inited;
static unsigned int mem_calls[FK_DEV];

/* Device handles are 1-based indices disguised as pointers. */
static int dev_of(nvmlDevice_t h, unsigned int *d)
{
    uintptr_t v = (uintptr_t)h;
    if (!inited || v == 0 || v > sc.count)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = (unsigned int)(v - 1);
    return 0;
}

int nvmlInit_v2(void)
{
    fk_load(&sc, "FAKE_NVML_SCRIPT");
    if (sc.init_fail)
        return sc.init_fail;
    inited = 1;
    return 0;
}

int nvmlInit(void)
{
    return nvmlInit_v2();
}

int nvmlShutdown(void)
{
    inited = 0;
    return 0;
}

const char *nvmlErrorString(int r)
{
    switch (r) {
    case 0: return "Success";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case 13: return "Function Not Found";
    case 15: return "GPU is lost";
    case 25: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!inited)
        return 1;
    *n = sc.count;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
    if (!inited || i >= sc.count)
        return 2;
    *h = (nvmlDevice_t)(uintptr_t)(i + 1);
    return 0;
}

int nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned int len)
{
    unsigned int d;
    int r = dev_of(h, &d);
    if (r)
        return r;
    (void)snprintf(name, len, "%s", sc.dev[d].name);
    return 0;
}

int nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned int len)
{
    unsigned int d;
    int r = dev_of(h, &d);
    if (r)
        return r;
    (void)snprintf(uuid, len, "%s", sc.dev[d].uuid);
    return 0;
}

static const struct fk_step *mem_step(unsigned int d)
{
    mem_calls[d]++;
    return fk_step(&sc, d, sc.procs_off || sc.procs_fail);
}

#ifndef FAKE_NO_MEMINFO
int nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
    unsigned int d;
    int r = dev_of(h, &d);
    if (r)
        return r;
    const struct fk_step *st = mem_step(d);
    if (st->fail)
        return st->fail;
    /* v1: used includes the driver's reserved memory. */
    m->total = sc.dev[d].total;
    m->used = st->used + sc.dev[d].reserved;
    m->free = m->total > m->used ? m->total - m->used : 0;
    return 0;
}
#endif

#ifndef FAKE_NO_V2
int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
    unsigned int d;
    int r = dev_of(h, &d);
    if (r)
        return r;
    /* The trap: anything but NVML_STRUCT_VERSION(Memory, 2) is refused, as the driver does. */
    if (m->version != FAKE_MEMORY_V2_VERSION)
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    if (sc.v2_code >= 0)
        return sc.v2_code;
    const struct fk_step *st = mem_step(d);
    if (st->fail)
        return st->fail;
    m->total = sc.dev[d].total;
    m->reserved = sc.dev[d].reserved;
    m->used = st->used;
    m->free = m->total > m->used + m->reserved ? m->total - m->used - m->reserved : 0;
    return 0;
}
#endif

/* Fill count entries of size stride from the current step's processes. */
static int procs(nvmlDevice_t h, unsigned int *count, void *infos, size_t stride)
{
    unsigned int d;
    int r = dev_of(h, &d);
    if (r)
        return r;
    if (sc.procs_off)
        return 3; /* NOT_SUPPORTED */
    if (sc.procs_fail)
        return sc.procs_fail;
    const struct fk_step *st = &sc.dev[d].steps[sc.dev[d].last];
    if (!sc.dev[d].n_steps)
        st = &fk_default_step;
    sc.dev[d].cur = sc.dev[d].last + 1; /* the round is over: next reading */
    uint32_t child = 0;
    unsigned int n = 0;
    for (uint32_t i = 0; i < st->n_procs; i++) {
        uint32_t pid = st->procs[i].pid;
        if (pid == FK_PID_CHILD && !child)
            child = fk_child_pid();
        if (pid == FK_PID_CHILD)
            pid = child;
        if (!pid)
            continue; /* @child before the command started */
        if (n >= *count) {
            *count = st->n_procs;
            return 7; /* INSUFFICIENT_SIZE */
        }
        nvmlProcessInfo_v2_t e;
        memset(&e, 0, sizeof(e));
        e.pid = pid;
        e.usedGpuMemory = st->procs[i].na ? 0xFFFFFFFFFFFFFFFFULL : st->procs[i].bytes;
        e.gpuInstanceId = e.computeInstanceId = 0xFFFFFFFFu;
        memcpy((char *)infos + (size_t)n * stride, &e, stride);
        n++;
    }
    *count = n;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v2_t *infos)
{
    return procs(h, count, infos, sizeof(nvmlProcessInfo_v2_t));
}

int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *count, nvmlProcessInfo_v1_t *infos)
{
    return procs(h, count, infos, sizeof(nvmlProcessInfo_v1_t));
}

/* For tests: how many memory calls device dev received. */
int fake_nvml_memory_calls(unsigned int dev)
{
    return dev < FK_DEV ? (int)mem_calls[dev] : -1;
}
