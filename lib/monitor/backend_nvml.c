/*
 * backend_nvml.c - NVIDIA GPUs through NVML (libnvidia-ml.so.1), loaded with dlopen.
 *
 * Memory: nvmlDeviceGetMemoryInfo_v2 with the version word NVML_STRUCT_VERSION(Memory, 2), whose
 * `used` excludes the driver's reserved memory; when the driver lacks the call or refuses it, the
 * v1 call, whose `used` includes it (hundreds of MiB on recent drivers), and the report says so.
 * Processes: nvmlDeviceGetComputeRunningProcesses_v2, else the v1 call (never _v3; trap 2).
 */
#include "memledger/monitor.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "i18n.h"
#include "loader.h"
#include "vendor/nvml_min.h"

struct nvml_fns {
    nvmlInit_fn init;
    nvmlShutdown_fn shutdown;
    nvmlErrorString_fn error_string;
    nvmlDeviceGetCount_fn get_count;
    nvmlDeviceGetHandleByIndex_fn get_handle;
    nvmlDeviceGetName_fn get_name;
    nvmlDeviceGetUUID_fn get_uuid;
    nvmlDeviceGetMemoryInfo_fn mem_v1;
    nvmlDeviceGetMemoryInfo_v2_fn mem_v2;
    nvmlDeviceGetComputeRunningProcesses_fn procs_v2;
    nvmlDeviceGetComputeRunningProcesses_fn procs_v1;
};

static const struct ml_sym nvml_syms[] = {
    {{"nvmlInit_v2", "nvmlInit", NULL}, offsetof(struct nvml_fns, init), true},
    {{"nvmlShutdown", NULL, NULL}, offsetof(struct nvml_fns, shutdown), true},
    {{"nvmlErrorString", NULL, NULL}, offsetof(struct nvml_fns, error_string), false},
    {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL}, offsetof(struct nvml_fns, get_count), true},
    {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", NULL},
     offsetof(struct nvml_fns, get_handle),
     true},
    {{"nvmlDeviceGetName", NULL, NULL}, offsetof(struct nvml_fns, get_name), false},
    {{"nvmlDeviceGetUUID", NULL, NULL}, offsetof(struct nvml_fns, get_uuid), false},
    {{"nvmlDeviceGetMemoryInfo", NULL, NULL}, offsetof(struct nvml_fns, mem_v1), true},
    {{"nvmlDeviceGetMemoryInfo_v2", NULL, NULL}, offsetof(struct nvml_fns, mem_v2), false},
    {{"nvmlDeviceGetComputeRunningProcesses_v2", NULL, NULL}, offsetof(struct nvml_fns, procs_v2), false},
    {{"nvmlDeviceGetComputeRunningProcesses", NULL, NULL}, offsetof(struct nvml_fns, procs_v1), false},
};

/* Bytes per process entry we hand the driver: larger than any layout, so a driver that writes
 * a bigger struct than we expect cannot overrun the buffer. */
#define PROC_SLOT 64

struct nvml_state {
    void *handle;
    struct nvml_fns f;
    char path[512]; /* the library opened */
    bool inited;    /* nvmlInit succeeded */
    bool use_v2;    /* the v2 memory call works */
    int procs_api;  /* 2, 1, or 0 = none */
    unsigned int n_dev;
    nvmlDevice_t dev[ML_MON_MAX_DEVICES];
    unsigned char *proc_buf; /* ML_MON_MAX_PROCS * PROC_SLOT bytes */
    char desc[640];
};

static const char *err_str(const struct nvml_state *s, nvmlReturn_t r, char *buf, size_t n)
{
    const char *e = s->f.error_string ? s->f.error_string(r) : NULL;
    if (e && e[0])
        (void)snprintf(buf, n, "%s (NVML error %d)", e, r);
    else
        (void)snprintf(buf, n, "NVML error %d", r);
    return buf;
}

static void nvml_close(void *state)
{
    struct nvml_state *s = state;
    if (!s)
        return;
    if (s->inited && s->f.shutdown)
        (void)s->f.shutdown();
    ml_dl_close(s->handle);
    free(s->proc_buf);
    free(s);
}

static enum ml_status nvml_open(const struct ml_backend_opts *opts, void **state, struct ml_diag *diag)
{
    *state = NULL;
    struct nvml_state *s = calloc(1, sizeof(*s));
    if (!s)
        return ml_diag_set(diag, ML_ERR_NOMEM, "%s", ml_status_str(ML_ERR_NOMEM));
    static const char *const names[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    enum ml_status st =
        ml_dl_open_first(opts ? opts->nvml_lib : NULL, names, 2, NULL, 0, &s->handle, s->path, sizeof(s->path), diag);
    if (st == ML_OK)
        st = ml_dl_resolve(s->handle, s->path, nvml_syms, sizeof(nvml_syms) / sizeof(nvml_syms[0]), &s->f, NULL, diag);
    char eb[160];
    if (st == ML_OK) {
        nvmlReturn_t r = s->f.init();
        if (r != NVML_SUCCESS)
            st = ml_diag_set(diag, ML_ERR_NO_DEVICE, _("NVML did not start: %s"), err_str(s, r, eb, sizeof(eb)));
        else
            s->inited = true;
    }
    unsigned int count = 0;
    if (st == ML_OK) {
        nvmlReturn_t r = s->f.get_count(&count);
        if (r != NVML_SUCCESS)
            st = ml_diag_set(diag, ML_ERR_BACKEND, _("NVML cannot count the GPUs: %s"), err_str(s, r, eb, sizeof(eb)));
    }
    for (unsigned int i = 0; st == ML_OK && i < count && i < ML_MON_MAX_DEVICES; i++) {
        nvmlReturn_t r = s->f.get_handle(i, &s->dev[i]);
        if (r != NVML_SUCCESS)
            st = ml_diag_set(diag, ML_ERR_BACKEND, _("NVML cannot open GPU %u: %s"), i, err_str(s, r, eb, sizeof(eb)));
        else
            s->n_dev = i + 1;
    }
    if (st == ML_OK && !(s->proc_buf = calloc(ML_MON_MAX_PROCS, PROC_SLOT)))
        st = ml_diag_set(diag, ML_ERR_NOMEM, "%s", ml_status_str(ML_ERR_NOMEM));
    if (st != ML_OK) {
        nvml_close(s);
        return st;
    }
    /* The memory API: v2 with the right version word, probed once; else v1, and say why. */
    char why_v1[200] = "";
    if (!s->f.mem_v2) {
        (void)snprintf(why_v1, sizeof(why_v1), "%s", _("the driver has no nvmlDeviceGetMemoryInfo_v2"));
    } else if (s->n_dev) {
        nvmlMemory_v2_t m;
        memset(&m, 0, sizeof(m));
        m.version = nvmlMemory_v2;
        nvmlReturn_t r = s->f.mem_v2(s->dev[0], &m);
        if (r == NVML_SUCCESS || r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_NO_PERMISSION)
            s->use_v2 = true;
        else
            (void)snprintf(why_v1, sizeof(why_v1), _("nvmlDeviceGetMemoryInfo_v2 refused: %s"),
                           err_str(s, r, eb, sizeof(eb)));
    } else {
        s->use_v2 = true;
    }
    s->procs_api = s->f.procs_v2 ? 2 : s->f.procs_v1 ? 1 : 0;
    if (s->use_v2)
        (void)snprintf(s->desc, sizeof(s->desc), _("%s, memory API v2"), s->path);
    else
        (void)snprintf(s->desc, sizeof(s->desc),
                       _("%s, memory API v1 (%s; its 'used' includes driver-reserved memory)"), s->path, why_v1);
    *state = s;
    return ML_OK;
}

static enum ml_status nvml_count(void *state, uint32_t *n, struct ml_diag *diag)
{
    (void)diag;
    *n = ((struct nvml_state *)state)->n_dev;
    return ML_OK;
}

static enum ml_status nvml_info(void *state, uint32_t dev, struct ml_dev_info *out, struct ml_diag *diag)
{
    struct nvml_state *s = state;
    memset(out, 0, sizeof(*out));
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    if (s->f.get_name && s->f.get_name(s->dev[dev], out->name, sizeof(out->name)) != NVML_SUCCESS)
        out->name[0] = '\0';
    if (s->f.get_uuid && s->f.get_uuid(s->dev[dev], out->uuid, sizeof(out->uuid)) != NVML_SUCCESS)
        out->uuid[0] = '\0';
    out->name[sizeof(out->name) - 1] = '\0';
    out->uuid[sizeof(out->uuid) - 1] = '\0';
    nvmlMemory_t m;
    memset(&m, 0, sizeof(m));
    if (s->f.mem_v1(s->dev[dev], &m) == NVML_SUCCESS)
        out->total_bytes = m.total;
    return ML_OK;
}

static enum ml_status nvml_read(void *state, uint32_t dev, struct ml_mem_reading *out, struct ml_diag *diag)
{
    struct nvml_state *s = state;
    memset(out, 0, sizeof(*out));
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    char eb[160];
    nvmlReturn_t r;
    if (s->use_v2) {
        nvmlMemory_v2_t m;
        memset(&m, 0, sizeof(m));
        m.version = nvmlMemory_v2;
        r = s->f.mem_v2(s->dev[dev], &m);
        out->source = ML_MEM_SRC_NVML_V2;
        if (r == NVML_SUCCESS) {
            out->total_bytes = m.total;
            out->used_bytes = m.used;
            out->free_bytes = m.free;
            out->reserved_bytes = m.reserved;
            out->valid = ML_MEM_TOTAL_OK | ML_MEM_USED_OK | ML_MEM_FREE_OK | ML_MEM_RESERVED_OK;
        }
    } else {
        nvmlMemory_t m;
        memset(&m, 0, sizeof(m));
        r = s->f.mem_v1(s->dev[dev], &m);
        out->source = ML_MEM_SRC_NVML_V1;
        if (r == NVML_SUCCESS) {
            out->total_bytes = m.total;
            out->used_bytes = m.used;
            out->free_bytes = m.free;
            out->valid = ML_MEM_TOTAL_OK | ML_MEM_USED_OK | ML_MEM_FREE_OK;
        }
    }
    if (r != NVML_SUCCESS) {
        out->valid = 0;
        return ml_diag_set(diag, ML_ERR_BACKEND, _("GPU %u: memory reading failed: %s"), dev,
                           err_str(s, r, eb, sizeof(eb)));
    }
    if (out->total_bytes == 0) {
        /* Integrated parts report no dedicated memory: say so rather than invent numbers. */
        out->valid = 0;
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, _("GPU %u reports no dedicated memory (unified memory?)"), dev);
    }
    return ML_OK;
}

static enum ml_status nvml_procs(void *state, uint32_t dev, struct ml_proc_mem *out, uint32_t cap, uint32_t *n,
                                 struct ml_diag *diag)
{
    struct nvml_state *s = state;
    *n = 0;
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    if (!s->procs_api)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, "%s", _("the driver has no process list"));
    unsigned int count = ML_MON_MAX_PROCS;
    memset(s->proc_buf, 0, (size_t)ML_MON_MAX_PROCS * PROC_SLOT);
    nvmlReturn_t r = s->procs_api == 2 ? s->f.procs_v2(s->dev[dev], &count, s->proc_buf)
                                       : s->f.procs_v1(s->dev[dev], &count, s->proc_buf);
    char eb[160];
    if (r == NVML_ERROR_INSUFFICIENT_SIZE)
        return ml_diag_set(diag, ML_ERR_TOOBIG, _("GPU %u: more than %d processes"), dev, ML_MON_MAX_PROCS);
    if (r != NVML_SUCCESS)
        return ml_diag_set(diag, ML_ERR_BACKEND, _("GPU %u: process list failed: %s"), dev,
                           err_str(s, r, eb, sizeof(eb)));
    size_t stride = s->procs_api == 2 ? sizeof(nvmlProcessInfo_v2_t) : sizeof(nvmlProcessInfo_v1_t);
    for (unsigned int i = 0; i < count && i < ML_MON_MAX_PROCS && *n < cap; i++) {
        nvmlProcessInfo_v1_t e; /* pid and usedGpuMemory lead both layouts */
        memcpy(&e, s->proc_buf + (size_t)i * stride, sizeof(e));
        if (e.pid == 0)
            continue;
        out[*n].pid = e.pid;
        out[*n].used_ok = e.usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL;
        out[*n].used_bytes = out[*n].used_ok ? e.usedGpuMemory : 0;
        (*n)++;
    }
    return ML_OK;
}

static const char *nvml_describe(void *state)
{
    return ((struct nvml_state *)state)->desc;
}

const struct ml_backend ml_backend_nvml = {
    .name = "nvml",
    .open = nvml_open,
    .device_count = nvml_count,
    .device_info = nvml_info,
    .read_memory = nvml_read,
    .read_procs = nvml_procs,
    .describe = nvml_describe,
    .close = nvml_close,
};
