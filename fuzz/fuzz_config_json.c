/*
 * fuzz_config_json.c - libFuzzer target: config.json bytes -> ml_arch -> inventory -> LoRA count.
 * Any input must end in ML_OK or a diagnosed error, never a crash, a leak or UB.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "memledger/arch.h"
#include "memledger/inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ml_inventory inv;
    struct ml_arch arch;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_arch_from_json((const char *)data, size, "fuzz", &arch, &d) != ML_OK) {
        if (d.code == ML_OK || !d.msg[0])
            __builtin_trap(); /* an error must always be explained */
        return 0;
    }
    if (ml_inventory_build(&arch, &inv, &d) != ML_OK)
        return 0;
    /* Invariants: the total is the sum of the counted tensors; active <= total. */
    uint64_t sum = 0;
    for (uint32_t i = 0; i < inv.n; i++)
        if (!inv.t[i].mtp)
            sum += inv.t[i].params;
    if (sum != inv.total_params || inv.active_params > inv.total_params)
        __builtin_trap();
    struct ml_lora_targets t;
    struct ml_lora_count c;
    if (ml_lora_targets_parse("all", &t, &d) == ML_OK)
        (void)ml_lora_count(&arch, &inv, &t, 16, &c, &d);
    return 0;
}
