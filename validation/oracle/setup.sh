#!/bin/sh
# Creates the oracle's virtual environment (default build-py/ at the repository
# root, ignored by git) from validation/oracle/requirements.txt.
# Usage: validation/oracle/setup.sh [VENV_DIR] [TRANSFORMERS_VERSION]
# A second argument installs that transformers version instead of the pinned one
# (the generator's extra venvs: build-py-tf4.57.6 and so on).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${1:-$root/build-py}
tf=${2:-}
py=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
req=$here/requirements.txt
if [ -n "$tf" ]; then
    req=$venv/requirements.txt
    sed "s/^transformers==.*/transformers==$tf/" "$here/requirements.txt" >"$req"
fi
"$venv/bin/python" -m pip install --quiet -r "$req"
"$venv/bin/python" -m pip install --quiet pytest==8.4.2 2>/dev/null || "$venv/bin/python" -m pip install --quiet pytest
"$venv/bin/python" -c 'import torch, transformers, peft; print("oracle venv:", torch.__version__, transformers.__version__, peft.__version__)'
