#!/bin/sh
# check_plan.sh MEMLEDGER - the GPU harness's plan is valid: every case's memledger arguments run.
# Skips (exit 77) without python3.
set -u
bin=$1
here=$(dirname "$0")
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
plan=$(python3 "$here/measure.py" --dry-run --grid full) || exit 1
n=0
fail=0
echo "$plan" | python3 -c 'import json,sys
for l in sys.stdin: print(" ".join(json.loads(l)["memledger_args"]))' > /tmp/ml_plan.$$ || exit 1
while read -r args; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$bin" train $args --gpu h100 --json >/dev/null 2>/tmp/ml_plan_err.$$ || { echo "FAIL: $args"; cat /tmp/ml_plan_err.$$; fail=$((fail + 1)); }
done </tmp/ml_plan.$$
rm -f /tmp/ml_plan.$$ /tmp/ml_plan_err.$$
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$n" -gt 0 ]
