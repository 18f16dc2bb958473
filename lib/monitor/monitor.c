/*
 * monitor.c - the backend registry, opening a backend ("auto" included), the "none" backend and
 * the monotonic clock.
 */
#include "memledger/monitor.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "i18n.h"

/* ---- "none": no GPU, or no vendor library; watch still runs the command ---------------- */

static enum ml_status none_open(const struct ml_backend_opts *opts, void **state, struct ml_diag *diag)
{
    (void)opts;
    (void)diag;
    *state = NULL;
    return ML_OK;
}

static enum ml_status none_count(void *state, uint32_t *n, struct ml_diag *diag)
{
    (void)state;
    (void)diag;
    *n = 0;
    return ML_OK;
}

static enum ml_status none_info(void *state, uint32_t dev, struct ml_dev_info *out, struct ml_diag *diag)
{
    (void)state;
    memset(out, 0, sizeof(*out));
    return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("no GPU %u"), dev);
}

static enum ml_status none_read(void *state, uint32_t dev, struct ml_mem_reading *out, struct ml_diag *diag)
{
    (void)state;
    memset(out, 0, sizeof(*out));
    return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("no GPU %u"), dev);
}

static enum ml_status none_procs(void *state, uint32_t dev, struct ml_proc_mem *out, uint32_t cap, uint32_t *n,
                                 struct ml_diag *diag)
{
    (void)state;
    (void)out;
    (void)cap;
    *n = 0;
    return ml_diag_set(diag, ML_ERR_NO_DEVICE, _("no GPU %u"), dev);
}

static const char *none_describe(void *state)
{
    (void)state;
    return _("no GPU backend");
}

static void none_close(void *state)
{
    (void)state;
}

const struct ml_backend ml_backend_none = {
    .name = "none",
    .open = none_open,
    .device_count = none_count,
    .device_info = none_info,
    .read_memory = none_read,
    .read_procs = none_procs,
    .describe = none_describe,
    .close = none_close,
};

/* ---- registry ------------------------------------------------------------------------------ */

/* An explicit list, in the order "auto" tries them (no constructor registration: trap 4). */
static const struct ml_backend *const ml_backends[] = {&ml_backend_nvml, &ml_backend_rsmi, &ml_backend_none};

const struct ml_backend *ml_backend_find(const char *name)
{
    if (!strcmp(name, "rsmi") || !strcmp(name, "rocm"))
        name = "rocm-smi";
    for (size_t i = 0; i < sizeof(ml_backends) / sizeof(ml_backends[0]); i++)
        if (!strcmp(ml_backends[i]->name, name))
            return ml_backends[i];
    return NULL;
}

const char *ml_mem_source_name(enum ml_mem_source s)
{
    switch (s) {
    case ML_MEM_SRC_NVML_V2: return "nvml_v2";
    case ML_MEM_SRC_NVML_V1: return "nvml_v1";
    case ML_MEM_SRC_RSMI_VRAM: return "rocm_smi_vram";
    case ML_MEM_SRC_NONE: break;
    }
    return "none";
}

/* Open one backend and read its device list. */
static enum ml_status open_one(struct ml_monitor *m, const struct ml_backend *be, const struct ml_backend_opts *o,
                               struct ml_diag *diag)
{
    void *state = NULL;
    enum ml_status st = be->open(o, &state, diag);
    if (st != ML_OK)
        return st;
    uint32_t n = 0;
    st = be->device_count(state, &n, diag);
    if (st != ML_OK) {
        be->close(state);
        return st;
    }
    m->be = be;
    m->state = state;
    m->n_dev_found = n;
    m->n_dev = n < ML_MON_MAX_DEVICES ? n : ML_MON_MAX_DEVICES;
    for (uint32_t i = 0; i < m->n_dev; i++) {
        struct ml_diag d;
        ml_diag_init(&d);
        (void)be->device_info(state, i, &m->dev[i], &d);
    }
    return ML_OK;
}

enum ml_status ml_monitor_open(struct ml_monitor *m, const char *name, const struct ml_backend_opts *opts,
                               struct ml_diag *diag)
{
    memset(m, 0, sizeof(*m));
    if (strcmp(name, "auto") != 0) {
        const struct ml_backend *be = ml_backend_find(name);
        if (!be)
            return ml_diag_set(diag, ML_ERR_INVALID, _("unknown backend '%s' (auto, nvml, rocm-smi, none)"), name);
        return open_one(m, be, opts, diag);
    }
    for (size_t i = 0; i < sizeof(ml_backends) / sizeof(ml_backends[0]); i++) {
        const struct ml_backend *be = ml_backends[i];
        if (be == &ml_backend_none)
            break;
        struct ml_diag d;
        ml_diag_init(&d);
        if (open_one(m, be, opts, &d) == ML_OK) {
            if (m->n_dev > 0)
                return ML_OK;
            ml_diag_set(&d, ML_ERR_NO_DEVICE, _("%s: no GPU"), be->name);
            be->close(m->state);
            m->be = NULL;
            m->state = NULL;
        }
        size_t l = strlen(m->why_none);
        (void)snprintf(m->why_none + l, sizeof(m->why_none) - l, "%s%s", l ? "; " : "", d.msg);
    }
    return open_one(m, &ml_backend_none, opts, diag);
}

void ml_monitor_close(struct ml_monitor *m)
{
    if (m->be)
        m->be->close(m->state);
    m->be = NULL;
    m->state = NULL;
}

/* ---- clock --------------------------------------------------------------------------------- */

static uint64_t mono_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct ml_clock ml_clock_monotonic(void)
{
    struct ml_clock c = {mono_now, NULL};
    return c;
}
