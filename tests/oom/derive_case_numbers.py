#!/usr/bin/env python3
"""Derive the expected numbers of every oom-cases.jsonl record with an oom_text, independently of
the C scanner: one regular expression per field of the field guide's formats (A1-A3, A10), sizes
converted with binary units (PyTorch's format_size) and rounded half up, as labels.jsonl does.

    python3 tests/oom/derive_case_numbers.py tests/fixtures/oom/oom-cases.jsonl \
        > tests/fixtures/oom/oom-cases-numbers.jsonl

The output is a test fixture: review its diff like a golden file.
"""
import json
import re
import sys
from decimal import Decimal, ROUND_HALF_UP

UNITS = {"bytes": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40, "EB": 60,
         "KB": 10, "MB": 20, "GB": 30}
NUM = r"(\d+(?:\.\d+)?) ?(bytes|KiB|MiB|GiB|TiB|KB|MB|GB|EB|B)\b"


def size(num, unit):
    return int((Decimal(num) * (1 << UNITS[unit])).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def first(pattern, text):
    m = re.search(pattern, text)
    return size(m.group(1), m.group(2)) if m else None


def derive(text):
    out = {
        "requested_bytes": first(r"[Tt]ried to allocate (?:more than )?" + NUM, text),
        "total_bytes": first(NUM + r" total capacity", text) or first(r"total capac\w* of " + NUM, text),
        "free_bytes": first(r"of which " + NUM + r" is free", text) or first(r"; " + NUM + r" free", text),
        "allocated_bytes": first(NUM + r" already allocated", text) or first(NUM + r" is allocated by PyTorch", text),
        "reserved_unallocated_bytes": first(NUM + r" is reserved by PyTorch but unallocated", text),
        "reserved_bytes": first(NUM + r" reserved in total", text),
        "this_process_bytes": first(r"this process has " + NUM, text),
        "active_bytes": first(NUM + r" current active", text),
        "other_process_bytes": [size(m.group(2), m.group(3))
                                for m in re.finditer(r"Process (\d+) has " + NUM + r" memory in use", text)] or None,
    }
    # vLLM's start-up guard (A10): "Free memory on device [dev ](F/T GiB) ... utilization (U, X GiB)"
    m = re.search(r"Free memory on device[^(]*\((\d+(?:\.\d+)?)/(\d+(?:\.\d+)?) ?(GiB|MiB|GB)\)", text)
    if m:
        out["free_bytes"] = size(m.group(1), m.group(3))
        out["total_bytes"] = size(m.group(2), m.group(3))
        u = re.search(r"utilization \((\d(?:\.\d+)?), (\d+(?:\.\d+)?) ?(GiB|MiB|GB)\)", text)
        if u:
            out["requested_bytes"] = size(u.group(2), u.group(3))
            out["gpu_memory_utilization"] = float(u.group(1))
    m = re.search(r"max seq len \((\d+)\)", text)
    out["max_seq_len_tokens"] = int(m.group(1)) if m else None
    m = re.search(r"stored in KV cache \((\d+)\)", text)
    out["kv_cache_tokens"] = int(m.group(1)) if m else None
    return out


def main():
    for line in open(sys.argv[1], encoding="utf-8"):
        r = json.loads(line)
        if not r.get("oom_text"):
            continue
        print(json.dumps({"id": r["id"], "numbers": derive(r["oom_text"])}, sort_keys=True))


if __name__ == "__main__":
    main()
