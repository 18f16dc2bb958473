/*
 * backend_rsmi.c - AMD and Hygon GPUs through ROCm SMI (librocm_smi64), loaded with dlopen.
 *
 * The same library and API come with ROCm (/opt/rocm/lib) and with Hygon's DTK
 * (/opt/dtk/rocm_smi/lib, /opt/dtk/lib; the driver's copy in /opt/hyhal/lib). Memory is the VRAM
 * pool: rsmi_dev_memory_total_get / rsmi_dev_memory_usage_get(RSMI_MEM_TYPE_VRAM). Processes are
 * listed host-wide and measured per device with rsmi_compute_process_info_by_device_get (the
 * host-wide list's own vram_usage has been seen at 0 on DTK; see vendor/rsmi_min.h).
 */
#include "memledger/monitor.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "i18n.h"
#include "loader.h"
#include "vendor/rsmi_min.h"

struct rsmi_fns {
    rsmi_init_fn init;
    rsmi_shut_down_fn shut_down;
    rsmi_num_monitor_devices_fn num_devices;
    rsmi_dev_memory_total_get_fn mem_total;
    rsmi_dev_memory_usage_get_fn mem_usage;
    rsmi_status_string_fn status_string;
    rsmi_dev_name_get_fn dev_name;
    rsmi_compute_process_info_get_fn procs;
    rsmi_compute_process_info_by_device_get_fn proc_on_dev;
};

static const struct ml_sym rsmi_syms[] = {
    {{"rsmi_init", NULL, NULL}, offsetof(struct rsmi_fns, init), true},
    {{"rsmi_shut_down", NULL, NULL}, offsetof(struct rsmi_fns, shut_down), true},
    {{"rsmi_num_monitor_devices", NULL, NULL}, offsetof(struct rsmi_fns, num_devices), true},
    {{"rsmi_dev_memory_total_get", NULL, NULL}, offsetof(struct rsmi_fns, mem_total), true},
    {{"rsmi_dev_memory_usage_get", NULL, NULL}, offsetof(struct rsmi_fns, mem_usage), true},
    {{"rsmi_status_string", NULL, NULL}, offsetof(struct rsmi_fns, status_string), false},
    {{"rsmi_dev_name_get", NULL, NULL}, offsetof(struct rsmi_fns, dev_name), false},
    {{"rsmi_compute_process_info_get", NULL, NULL}, offsetof(struct rsmi_fns, procs), false},
    {{"rsmi_compute_process_info_by_device_get", NULL, NULL}, offsetof(struct rsmi_fns, proc_on_dev), false},
};

/* Bytes per process entry handed to the library (larger than rsmi_process_info_t). */
#define PROC_SLOT 64

struct rsmi_state {
    void *handle;
    struct rsmi_fns f;
    char path[512];
    bool inited;
    uint32_t n_dev;
    unsigned char *proc_buf; /* ML_MON_MAX_PROCS * PROC_SLOT */
    char desc[600];
};

static const char *err_str(const struct rsmi_state *s, rsmi_status_t r, char *buf, size_t n)
{
    const char *e = NULL;
    if (!s->f.status_string || s->f.status_string(r, &e) != RSMI_STATUS_SUCCESS)
        e = NULL;
    if (e && e[0])
        (void)snprintf(buf, n, "%.100s (ROCm SMI status %d)", e, r);
    else
        (void)snprintf(buf, n, "ROCm SMI status %d", r);
    return buf;
}

static void rsmi_close(void *state)
{
    struct rsmi_state *s = state;
    if (!s)
        return;
    if (s->inited && s->f.shut_down)
        (void)s->f.shut_down();
    ml_dl_close(s->handle);
    free(s->proc_buf);
    free(s);
}

static enum ml_status rsmi_open(const struct ml_backend_opts *opts, void **state, struct ml_diag *diag)
{
    *state = NULL;
    struct rsmi_state *s = calloc(1, sizeof(*s));
    if (!s)
        return ml_diag_set(diag, ML_ERR_NOMEM, "%s", ml_status_str(ML_ERR_NOMEM));
    /* Versioned names: ROCm 6.x installs .so.7 (6.0: .so.6), ROCm 5.x .so.5; DTK 24.04 .so.2. */
    static const char *const names[] = {"librocm_smi64.so",   "librocm_smi64.so.7", "librocm_smi64.so.6",
                                        "librocm_smi64.so.5", "librocm_smi64.so.2", "librocm_smi64.so.1"};
    const char *dirs[12];
    size_t nd = 0;
    for (int i = 0; opts && i < 4; i++)
        if (opts->rsmi_dirs[i] && opts->rsmi_dirs[i][0])
            dirs[nd++] = opts->rsmi_dirs[i];
    dirs[nd++] = ""; /* the dynamic linker's path (LD_LIBRARY_PATH, ld.so.cache) */
    dirs[nd++] = "/opt/rocm/lib";
    dirs[nd++] = "/opt/dtk/rocm_smi/lib";
    dirs[nd++] = "/opt/dtk/lib";
    dirs[nd++] = "/opt/hyhal/lib";
    enum ml_status st = ml_dl_open_first(opts ? opts->rsmi_lib : NULL, names, sizeof(names) / sizeof(names[0]), dirs,
                                         nd, &s->handle, s->path, sizeof(s->path), diag);
    if (st == ML_OK)
        st = ml_dl_resolve(s->handle, s->path, rsmi_syms, sizeof(rsmi_syms) / sizeof(rsmi_syms[0]), &s->f, NULL, diag);
    char eb[160];
    if (st == ML_OK) {
        rsmi_status_t r = s->f.init(0);
        if (r != RSMI_STATUS_SUCCESS)
            st = ml_diag_set(diag, ML_ERR_NO_DEVICE, _("ROCm SMI did not start: %s"), err_str(s, r, eb, sizeof(eb)));
        else
            s->inited = true;
    }
    if (st == ML_OK) {
        uint32_t n = 0;
        rsmi_status_t r = s->f.num_devices(&n);
        if (r != RSMI_STATUS_SUCCESS)
            st = ml_diag_set(diag, ML_ERR_BACKEND, _("ROCm SMI cannot count the GPUs: %s"),
                             err_str(s, r, eb, sizeof(eb)));
        s->n_dev = n < ML_MON_MAX_DEVICES ? n : ML_MON_MAX_DEVICES;
    }
    if (st == ML_OK && !(s->proc_buf = calloc(ML_MON_MAX_PROCS, PROC_SLOT)))
        st = ml_diag_set(diag, ML_ERR_NOMEM, "%s", ml_status_str(ML_ERR_NOMEM));
    if (st != ML_OK) {
        rsmi_close(s);
        return st;
    }
    (void)snprintf(s->desc, sizeof(s->desc), _("%s, VRAM"), s->path);
    *state = s;
    return ML_OK;
}

static enum ml_status rsmi_count(void *state, uint32_t *n, struct ml_diag *diag)
{
    (void)diag;
    *n = ((struct rsmi_state *)state)->n_dev;
    return ML_OK;
}

static enum ml_status rsmi_info(void *state, uint32_t dev, struct ml_dev_info *out, struct ml_diag *diag)
{
    struct rsmi_state *s = state;
    memset(out, 0, sizeof(*out));
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    if (s->f.dev_name && s->f.dev_name(dev, out->name, sizeof(out->name)) != RSMI_STATUS_SUCCESS)
        out->name[0] = '\0';
    out->name[sizeof(out->name) - 1] = '\0';
    uint64_t total = 0;
    if (s->f.mem_total(dev, RSMI_MEM_TYPE_VRAM, &total) == RSMI_STATUS_SUCCESS)
        out->total_bytes = total;
    return ML_OK;
}

static enum ml_status rsmi_read(void *state, uint32_t dev, struct ml_mem_reading *out, struct ml_diag *diag)
{
    struct rsmi_state *s = state;
    memset(out, 0, sizeof(*out));
    out->source = ML_MEM_SRC_RSMI_VRAM;
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    char eb[160];
    uint64_t total = 0, used = 0;
    rsmi_status_t r = s->f.mem_total(dev, RSMI_MEM_TYPE_VRAM, &total);
    if (r == RSMI_STATUS_SUCCESS) {
        out->total_bytes = total;
        out->valid |= ML_MEM_TOTAL_OK;
        r = s->f.mem_usage(dev, RSMI_MEM_TYPE_VRAM, &used);
    }
    if (r != RSMI_STATUS_SUCCESS) {
        out->valid = 0;
        return ml_diag_set(diag, ML_ERR_BACKEND, _("GPU %u: memory reading failed: %s"), dev,
                           err_str(s, r, eb, sizeof(eb)));
    }
    if (total == 0) {
        out->valid = 0;
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, _("GPU %u reports no VRAM (an APU?)"), dev);
    }
    out->used_bytes = used;
    out->valid |= ML_MEM_USED_OK;
    if (used <= total) {
        out->free_bytes = total - used;
        out->valid |= ML_MEM_FREE_OK;
    }
    return ML_OK;
}

static enum ml_status rsmi_procs(void *state, uint32_t dev, struct ml_proc_mem *out, uint32_t cap, uint32_t *n,
                                 struct ml_diag *diag)
{
    struct rsmi_state *s = state;
    *n = 0;
    if (dev >= s->n_dev)
        return ml_diag_set(diag, ML_ERR_INVALID, _("no GPU %u"), dev);
    if (!s->f.procs || !s->f.proc_on_dev)
        return ml_diag_set(diag, ML_ERR_UNSUPPORTED, "%s", _("this ROCm SMI has no per-device process query"));
    uint32_t count = ML_MON_MAX_PROCS;
    memset(s->proc_buf, 0, (size_t)ML_MON_MAX_PROCS * PROC_SLOT);
    char eb[160];
    rsmi_status_t r = s->f.procs((rsmi_process_info_t *)(void *)s->proc_buf, &count);
    if (r == RSMI_STATUS_INSUFFICIENT_SIZE)
        count = ML_MON_MAX_PROCS; /* the first ML_MON_MAX_PROCS were filled */
    else if (r != RSMI_STATUS_SUCCESS)
        return ml_diag_set(diag, ML_ERR_BACKEND, _("GPU %u: process list failed: %s"), dev,
                           err_str(s, r, eb, sizeof(eb)));
    for (uint32_t i = 0; i < count && i < ML_MON_MAX_PROCS && *n < cap; i++) {
        rsmi_process_info_t e;
        memcpy(&e, s->proc_buf + (size_t)i * sizeof(rsmi_process_info_t), sizeof(e));
        if (e.process_id == 0)
            continue;
        union {
            rsmi_process_info_t p;
            unsigned char pad[PROC_SLOT];
        } one;
        memset(&one, 0, sizeof(one));
        r = s->f.proc_on_dev(e.process_id, dev, &one.p);
        if (r != RSMI_STATUS_SUCCESS)
            continue; /* not on this device (RSMI_STATUS_NOT_FOUND) or gone */
        out[*n].pid = e.process_id;
        out[*n].used_bytes = one.p.vram_usage;
        out[*n].used_ok = true;
        (*n)++;
    }
    return ML_OK;
}

static const char *rsmi_describe(void *state)
{
    return ((struct rsmi_state *)state)->desc;
}

const struct ml_backend ml_backend_rsmi = {
    .name = "rocm-smi",
    .open = rsmi_open,
    .device_count = rsmi_count,
    .device_info = rsmi_info,
    .read_memory = rsmi_read,
    .read_procs = rsmi_procs,
    .describe = rsmi_describe,
    .close = rsmi_close,
};
