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
"$venv/bin/python" -c 'import torch, lightning, importlib.metadata as m; print("litgpt oracle venv:", torch.__version__, m.version("litgpt"), lightning.__version__)'
