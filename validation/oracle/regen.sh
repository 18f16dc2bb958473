#!/bin/sh
# regen.sh - regenerate the committed oracle data and validation/ORACLE.md in one command.
#   validation/oracle/regen.sh [N]      (N cases per draw, default 300; resumes unfinished files)
# Draws (validation/oracle/README.md, "Data"): seed 1, the draw the ledger's terms were fixed on;
# seed 2, a fresh draw made after that ledger change; seed 3 on transformers 4.57.6 and 5.12.0 (their
# own venvs); seeds 4, 7 and 9, fresh draws of the later generator (QLoRA, TRL DPO; 7 and 9 also KTO and GRPO)
# made after a1b78ce (the terms O7-O10 were read from them); seed 8 the later generator on 4.57.6 and
# 5.12.0; seed 10, a fresh draw made after O7-O10; seed 11, TRL stages only, the draw TRL's fused-head
# rules (TF1-TF4) were checked on; seed 12, a fresh draw made after TF1-TF4 and O11-O12; seed 13 (TRL stages
# only), the fresh draw made after the last ledger change (O13) with the oracle's fp32 pow. Each line
# records its seed, index and package versions.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-300}
cd "$root"
[ -x build/memledger ] || make build
sh "$here/setup.sh" "$root/build-py"
sh "$here/setup.sh" "$root/build-py-tf4.57" 4.57.6
sh "$here/setup.sh" "$root/build-py-tf5.12" 5.12.0
export ORACLE_THREADS=${ORACLE_THREADS:-2}
build-py/bin/python "$here/gen.py" --seed 1 --n "$n" --out "$here/cases-s1.jsonl"
build-py/bin/python "$here/gen.py" --seed 2 --n "$n" --out "$here/cases-s2.jsonl"
build-py-tf4.57/bin/python "$here/gen.py" --seed 3 --n "$n" --shard 0/3 --out "$here/cases-s3-tf4.57.jsonl"
build-py-tf5.12/bin/python "$here/gen.py" --seed 3 --n "$n" --shard 1/3 --out "$here/cases-s3-tf5.12.jsonl"
build-py/bin/python "$here/gen.py" --seed 4 --n "$n" --out "$here/cases-s4.jsonl"
build-py/bin/python "$here/gen.py" --seed 7 --n "$n" --out "$here/cases-s7.jsonl"
build-py/bin/python "$here/gen.py" --seed 9 --n "$n" --out "$here/cases-s9.jsonl"
build-py-tf4.57/bin/python "$here/gen.py" --seed 8 --n "$n" --shard 0/2 --out "$here/cases-s8-tf4.57.jsonl"
build-py-tf5.12/bin/python "$here/gen.py" --seed 8 --n "$n" --shard 1/2 --out "$here/cases-s8-tf5.12.jsonl"
build-py/bin/python "$here/gen.py" --seed 10 --n "$n" --out "$here/cases-s10.jsonl"
build-py/bin/python "$here/gen.py" --seed 11 --n 60 --stages dpo,kto,grpo --out "$here/cases-s11.jsonl"
build-py/bin/python "$here/gen.py" --seed 12 --n 150 --out "$here/cases-s12.jsonl"
build-py/bin/python "$here/gen.py" --seed 13 --n 50 --stages dpo,kto,grpo --out "$here/cases-s13.jsonl"
sh "$here/report.sh"
echo "validation/ORACLE.md regenerated"
