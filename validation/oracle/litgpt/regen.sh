#!/bin/sh
# Regenerates validation/oracle/litgpt/cases.jsonl: runs litgpt_oracle.py on every case of
# cases.in.jsonl, one result a line (versions and seconds recorded in each).
# Usage: validation/oracle/litgpt/regen.sh   (after validation/oracle/litgpt/setup.sh)
# ORACLE_THREADS sets torch's CPU threads (default 2). The whole set took about 40 min of CPU on a
# loaded 2-core machine; gemma-2-2b's 256k-vocabulary head is most of it.
# The QLoRA cases ("quantize") import bitsandbytes from ORACLE_BNB_PATH, a folder holding only the
# main oracle's bitsandbytes package (default: setup.sh's link to ../requirements.txt's 0.50.2):
# litgpt 0.5.13 pins bitsandbytes < 0.50 on Linux, so pip will not put that one beside it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
py=${PY:-$root/build-py-litgpt/bin/python}
bnb=${ORACLE_BNB_PATH:-$root/build-py-litgpt/bnb-path}
out=$here/cases.jsonl
tmp=$out.tmp
: >"$tmp"
while IFS= read -r line; do
    [ -n "$line" ] || continue
    printf '%s\n' "$line" | PYTHONPATH=$bnb ORACLE_THREADS=${ORACLE_THREADS:-2} "$py" "$here/litgpt_oracle.py" - --line >>"$tmp"
done <"$here/cases.in.jsonl"
mv "$tmp" "$out"
