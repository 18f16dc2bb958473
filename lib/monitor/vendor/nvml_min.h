/*
 * nvml_min.h - the few NVML declarations memledger calls, and nothing else.
 *
 * Taken from nvml.h of the CUDA 12.x toolkit (NVML API version 12; the values below are the
 * same in every nvml.h since 11.0). memledger never links libnvidia-ml: the backend loads it
 * with dlopen and resolves these symbols by name (lib/monitor/backend_nvml.c), so no SDK is
 * needed to build and a machine without a driver still runs `memledger watch`.
 *
 * The memory-v2 trap (reference/style.md section 4, trap 1): nvmlMemory_v2_t.version must be
 * NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | 2 << 24 = 0x02000028. A plain 2 is
 * refused with NVML_ERROR_ARGUMENT_VERSION_MISMATCH (or FUNCTION_NOT_FOUND on some drivers).
 *
 * Process lists: only the unsuffixed (v1, 16-byte entries) and _v2 (24-byte entries) calls are
 * used. The _v3 call's entry layout changed between driver branches without a version bump
 * (trap 2), so it is not declared here.
 */
#ifndef ML_NVML_MIN_H
#define ML_NVML_MIN_H

/* nvmlReturn_t is an enum in nvml.h; stored as int (nvtop does the same). */
typedef int nvmlReturn_t;
#define NVML_SUCCESS                         0
#define NVML_ERROR_UNINITIALIZED             1
#define NVML_ERROR_INVALID_ARGUMENT          2
#define NVML_ERROR_NOT_SUPPORTED             3
#define NVML_ERROR_NO_PERMISSION             4
#define NVML_ERROR_NOT_FOUND                 6
#define NVML_ERROR_INSUFFICIENT_SIZE         7
#define NVML_ERROR_DRIVER_NOT_LOADED         9
#define NVML_ERROR_LIBRARY_NOT_FOUND         12
#define NVML_ERROR_FUNCTION_NOT_FOUND        13
#define NVML_ERROR_GPU_IS_LOST               15
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN                   999

typedef struct nvmlDevice_st *nvmlDevice_t;

/* nvmlDeviceGetMemoryInfo (v1): used includes driver-reserved memory. */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2 (drivers >= 510). */
typedef struct nvmlMemory_v2_st {
    unsigned int version; /* must be nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

#define NVML_STRUCT_VERSION(data, ver) (unsigned int)(sizeof(nvml##data##_v##ver##_t) | (ver << 24U))
#define nvmlMemory_v2                  NVML_STRUCT_VERSION(Memory, 2)

/* nvmlDeviceGetComputeRunningProcesses (v1). */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* NVML_VALUE_NOT_AVAILABLE when unknown (e.g. Windows WDDM) */
} nvmlProcessInfo_v1_t;

/* nvmlDeviceGetComputeRunningProcesses_v2. */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId; /* MIG; 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

#define NVML_VALUE_NOT_AVAILABLE_ULL    0xFFFFFFFFFFFFFFFFULL
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

/* The layout the driver expects; tests/monitor/test_nvml_abi.c checks the same figures against
 * the real nvml.h when one is installed. */
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(nvmlMemory_v2 == 0x02000028u, "NVML_STRUCT_VERSION(Memory, 2)");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t layout");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t layout");

/* The entry points, as function-pointer types (names as exported by libnvidia-ml.so.1). */
typedef nvmlReturn_t (*nvmlInit_fn)(void); /* nvmlInit_v2, nvmlInit */
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int *); /* _v2, unsuffixed */
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
/* infos points at v1 or v2 entries depending on the symbol. */
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int *, void *);

#endif /* ML_NVML_MIN_H */
