#!/bin/sh
# run_python_hook.sh PYTHON SOURCE_DIR MEMLEDGER - the hook's tests on CPU, only where torch
# imports (exit 77 = skipped otherwise; torch is never a build or test requirement).
set -u
py=$1
src=$2
MEMLEDGER=$3
export MEMLEDGER
if ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "skipped: $py cannot import torch"
    exit 77
fi
cd "$src/python" || exit 1
exec "$py" -m unittest -v test_memledger_hook
