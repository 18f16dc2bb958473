/*
 * test_nvml_abi.c - the layouts lib/monitor/vendor/nvml_min.h asserts, checked against the real
 * nvml.h (built only when CMake finds one: NCCL's NVML_DIRECT switch, turned into a test). The
 * two headers declare the same names, so each is checked against the same literal figures.
 */
#include <stddef.h>

#include <nvml.h>

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(nvmlMemory_v2 == 0x02000028u, "NVML_STRUCT_VERSION(Memory, 2)");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(NVML_ERROR_ARGUMENT_VERSION_MISMATCH == 25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH");
_Static_assert(NVML_ERROR_FUNCTION_NOT_FOUND == 13, "NVML_ERROR_FUNCTION_NOT_FOUND");
_Static_assert(NVML_ERROR_INSUFFICIENT_SIZE == 7, "NVML_ERROR_INSUFFICIENT_SIZE");
_Static_assert(NVML_ERROR_GPU_IS_LOST == 15, "NVML_ERROR_GPU_IS_LOST");

int main(void)
{
    return 0;
}
