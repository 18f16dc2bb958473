/*
 * rsmi_min.h - the few ROCm SMI declarations memledger calls, and nothing else.
 *
 * Taken from rocm_smi/rocm_smi.h of rocm_smi_lib (ROCm 5.x and 6.x; rsmi_process_info_t has
 * had these five fields since ROCm 3.x). Hygon's DTK ships the same library and API under
 * the same name (librocm_smi64.so.2 in DTK 24.04; /opt/dtk/rocm_smi/lib, /opt/hyhal/lib).
 * memledger loads it with dlopen (lib/monitor/backend_rsmi.c); nothing links it.
 *
 * Per-process memory: the host-wide rsmi_compute_process_info_get lists the processes but has
 * been seen reporting vram_usage 0 for all of them; the figure comes from
 * rsmi_compute_process_info_by_device_get(pid, device).
 */
#ifndef ML_RSMI_MIN_H
#define ML_RSMI_MIN_H

#include <stddef.h>
#include <stdint.h>

/* rsmi_status_t is an enum in rocm_smi.h; stored as int. */
typedef int rsmi_status_t;
#define RSMI_STATUS_SUCCESS           0
#define RSMI_STATUS_INVALID_ARGS      1
#define RSMI_STATUS_NOT_SUPPORTED     2
#define RSMI_STATUS_PERMISSION        4
#define RSMI_STATUS_INIT_ERROR        8
#define RSMI_STATUS_NOT_FOUND         10
#define RSMI_STATUS_INSUFFICIENT_SIZE 11

/* rsmi_memory_type_t */
#define RSMI_MEM_TYPE_VRAM 0

typedef struct {
    uint32_t process_id;
    uint32_t pasid;
    uint64_t vram_usage;   /* bytes */
    uint64_t sdma_usage;   /* microseconds */
    uint32_t cu_occupancy; /* percent */
} rsmi_process_info_t;

_Static_assert(sizeof(rsmi_process_info_t) == 32, "rsmi_process_info_t layout");

typedef rsmi_status_t (*rsmi_init_fn)(uint64_t init_flags);
typedef rsmi_status_t (*rsmi_shut_down_fn)(void);
typedef rsmi_status_t (*rsmi_num_monitor_devices_fn)(uint32_t *num_devices);
typedef rsmi_status_t (*rsmi_dev_name_get_fn)(uint32_t dv_ind, char *name, size_t len);
typedef rsmi_status_t (*rsmi_dev_memory_total_get_fn)(uint32_t dv_ind, int mem_type, uint64_t *total);
typedef rsmi_status_t (*rsmi_dev_memory_usage_get_fn)(uint32_t dv_ind, int mem_type, uint64_t *used);
typedef rsmi_status_t (*rsmi_status_string_fn)(rsmi_status_t status, const char **str);
typedef rsmi_status_t (*rsmi_compute_process_info_get_fn)(rsmi_process_info_t *procs, uint32_t *num_items);
typedef rsmi_status_t (*rsmi_compute_process_info_by_device_get_fn)(uint32_t pid, uint32_t dv_ind,
                                                                    rsmi_process_info_t *proc);

#endif /* ML_RSMI_MIN_H */
