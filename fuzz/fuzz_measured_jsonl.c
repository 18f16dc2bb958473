/*
 * fuzz_measured_jsonl.c - `memledger compare`'s reader of measured runs (memledger_hook.py JSON
 * Lines and watch timelines): any bytes give a status and, on failure, a one-line message with a
 * line number; never a crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memledger/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ml_measured m;
    struct ml_diag d;
    ml_diag_init(&d);
    enum ml_status st = ml_measured_parse((const char *)data, size, "fuzz.jsonl", &m, &d);
    if (st != ML_OK && (!d.msg[0] || strchr(d.msg, '\n')))
        abort();
    if (st == ML_OK && m.n_records == 0)
        abort();
    return 0;
}
