#!/bin/sh
# Creates the LitGPT oracle's virtual environment (default build-py-litgpt/ at the repository root,
# ignored by git): torch 2.13.0 (the CPU build from the machine's own disk; always pinned), litgpt and
# lightning from requirements.txt here. A venv of its own because litgpt 0.5.13 pins
# huggingface-hub < 1.4, which the main oracle's transformers 5.24 does not accept.
# Usage: validation/oracle/litgpt/setup.sh [VENV_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv=${1:-$root/build-py-litgpt}
py=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
# The QLoRA cases' bitsandbytes: a folder with a link to the main oracle venv's package
# (../setup.sh, ../requirements.txt: 0.50.2, whose CPU backend runs 4-bit), read through
# PYTHONPATH by regen.sh; litgpt 0.5.13 pins bitsandbytes < 0.50 on Linux.
main=${ORACLE_VENV:-$root/build-py}
bnb_pkg=$(ls -d "$main"/lib/python3*/site-packages/bitsandbytes 2>/dev/null | head -n 1 || true)
if [ -n "$bnb_pkg" ]; then
    mkdir -p "$venv/bnb-path"
    ln -sfn "$bnb_pkg" "$venv/bnb-path/bitsandbytes"
else
    echo "setup.sh: no bitsandbytes in $main (run ../setup.sh first): the QLoRA cases will not run" >&2
fi
"$venv/bin/python" -c 'import torch, lightning, importlib.metadata as m; print("litgpt oracle venv:", torch.__version__, m.version("litgpt"), lightning.__version__)'
