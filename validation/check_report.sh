#!/bin/sh
# check_report.sh VALIDATION_REPORT MEMLEDGER VALIDATION_DIR OOM_LABELS OUT - the committed
# validation/REPORT.md is what the cases give with this build (a ledger change regenerates it:
# cmake --build build --target validation-report).
set -u
"$1" "$2" "$3/cases.tsv" "$5" --ceilings "$3/ceilings.txt" --oom-labels "$4" \
    --released "$3/data/measured-released-2026-12.jsonl" --released-versions "$3/released-versions.tsv" >/dev/null || exit 1
if ! cmp -s "$5" "$3/REPORT.md"; then
    echo "validation/REPORT.md is not what the cases give: regenerate it with cmake --build build --target validation-report"
    diff "$3/REPORT.md" "$5" | head -20
    exit 1
fi
echo "validation/REPORT.md is current"
