/*
 * fake_rsmi.c - a fake librocm_smi64.so that replays a script (fake_script.h, FAKE_RSMI_SCRIPT),
 * for the ROCm SMI backend (AMD, Hygon DTK) without a GPU. Readings advance per device at each
 * rsmi_dev_memory_usage_get call. -DFAKE_NO_PROCS builds a library without the per-device
 * process query. Types are written out as rocm_smi.h has them, independently of lib/monitor.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fake_script.h"

typedef struct {
    uint32_t process_id;
    uint32_t pasid;
    uint64_t vram_usage;
    uint64_t sdma_usage;
    uint32_t cu_occupancy;
} rsmi_process_info_t;

int rsmi_init(uint64_t flags);
int rsmi_shut_down(void);
int rsmi_num_monitor_devices(uint32_t *n);
int rsmi_dev_name_get(uint32_t dv, char *name, size_t len);
int rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t *total);
int rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t *used);
int rsmi_status_string(int status, const char **str);
int rsmi_compute_process_info_get(rsmi_process_info_t *procs, uint32_t *num_items);
int rsmi_compute_process_info_by_device_get(uint32_t pid, uint32_t dv, rsmi_process_info_t *proc);

static struct fk_script sc;
static int inited;

int rsmi_init(uint64_t flags)
{
    (void)flags;
    fk_load(&sc, "FAKE_RSMI_SCRIPT");
    if (sc.init_fail)
        return sc.init_fail;
    inited = 1;
    return 0;
}

int rsmi_shut_down(void)
{
    inited = 0;
    return 0;
}

int rsmi_num_monitor_devices(uint32_t *n)
{
    if (!inited)
        return 8; /* RSMI_STATUS_INIT_ERROR */
    *n = sc.count;
    return 0;
}

int rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
    if (!inited || dv >= sc.count)
        return 1;
    (void)snprintf(name, len, "%s", sc.dev[dv].name);
    return 0;
}

int rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t *total)
{
    if (!inited || dv >= sc.count || type != 0)
        return 1;
    *total = sc.dev[dv].total;
    return 0;
}

int rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t *used)
{
    if (!inited || dv >= sc.count || type != 0)
        return 1;
    const struct fk_step *st = fk_step(&sc, dv, true);
    if (st->fail)
        return st->fail;
    *used = st->used;
    return 0;
}

int rsmi_status_string(int status, const char **str)
{
    switch (status) {
    case 0: *str = "RSMI_STATUS_SUCCESS: The function has been executed successfully."; break;
    case 2: *str = "RSMI_STATUS_NOT_SUPPORTED: The function is not supported."; break;
    case 8: *str = "RSMI_STATUS_INIT_ERROR: An error occurred during initialization."; break;
    default: *str = "RSMI_STATUS_UNKNOWN_ERROR"; break;
    }
    return 0;
}

#ifndef FAKE_NO_PROCS
static const struct fk_step *last_step(uint32_t dv)
{
    return sc.dev[dv].n_steps ? &sc.dev[dv].steps[sc.dev[dv].last] : &fk_default_step;
}

int rsmi_compute_process_info_get(rsmi_process_info_t *procs, uint32_t *num_items)
{
    if (!inited)
        return 8;
    uint32_t child = fk_child_pid();
    uint32_t pids[FK_DEV * FK_PROCS], n = 0;
    for (uint32_t d = 0; d < sc.count; d++) {
        const struct fk_step *st = last_step(d);
        for (uint32_t i = 0; i < st->n_procs; i++) {
            uint32_t pid = st->procs[i].pid == FK_PID_CHILD ? child : st->procs[i].pid;
            bool seen = !pid;
            for (uint32_t k = 0; k < n; k++)
                seen = seen || pids[k] == pid;
            if (!seen)
                pids[n++] = pid;
        }
    }
    if (!procs) {
        *num_items = n;
        return 0;
    }
    uint32_t cap = *num_items;
    for (uint32_t i = 0; i < n && i < cap; i++) {
        memset(&procs[i], 0, sizeof(procs[i]));
        procs[i].process_id = pids[i];
        procs[i].pasid = 0x8000 + i;
        /* vram_usage 0, as the host-wide list reports on DTK. */
    }
    *num_items = n;
    return n > cap ? 11 /* INSUFFICIENT_SIZE */ : 0;
}

int rsmi_compute_process_info_by_device_get(uint32_t pid, uint32_t dv, rsmi_process_info_t *proc)
{
    if (!inited || dv >= sc.count)
        return 1;
    uint32_t child = fk_child_pid();
    const struct fk_step *st = last_step(dv);
    for (uint32_t i = 0; i < st->n_procs; i++) {
        uint32_t p = st->procs[i].pid == FK_PID_CHILD ? child : st->procs[i].pid;
        if (p && p == pid) {
            memset(proc, 0, sizeof(*proc));
            proc->process_id = pid;
            proc->vram_usage = st->procs[i].bytes;
            return 0;
        }
    }
    return 10; /* RSMI_STATUS_NOT_FOUND */
}
#endif
