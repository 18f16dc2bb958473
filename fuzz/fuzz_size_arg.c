/*
 * fuzz_size_arg.c - libFuzzer target: size, count, fraction, percentage, duration and --gpu
 * argument parsing, each result held to its documented range.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memledger/gpu.h"
#include "memledger/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[256];
    if (size >= sizeof(s))
        size = sizeof(s) - 1;
    memcpy(s, data, size);
    s[size] = '\0';
    uint64_t v;
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_size_unit u;
    if (ml_size_parse(s, &v, &u, &d) != ML_OK && !d.msg[0])
        __builtin_trap();
    ml_diag_init(&d);
    if (ml_count_parse(s, &v, &d) != ML_OK && !d.msg[0])
        __builtin_trap();
    uint32_t pm;
    if (ml_permille_parse(s, &pm) && (pm == 0 || pm > 1000))
        __builtin_trap();
    if (ml_percent_parse(s, &pm) && pm >= 1000)
        __builtin_trap();
    if (ml_pct_parse(s, &pm) && pm >= 100)
        __builtin_trap();
    uint64_t longer;
    if (ml_duration_parse(s, &v) && v < UINT64_MAX && s[0] != '0' && !strchr(s, '.')) {
        /* a whole duration with one more digit is ten times as long, or the longest */
        char t[258];
        size_t i = strspn(s, "0123456789");
        (void)snprintf(t, sizeof(t), "%.*s0%s", (int)i, s, s + i);
        if (ml_duration_parse(t, &longer) && longer != UINT64_MAX && longer != v * 10)
            __builtin_trap();
    }
    struct ml_gpu g;
    ml_diag_init(&d);
    if (ml_gpu_resolve(s, &g, &d) == ML_OK) {
        if (g.capacity_bytes == 0)
            __builtin_trap();
    } else if (!d.msg[0]) {
        __builtin_trap();
    }
    return 0;
}
