#!/bin/sh
# check_release.sh CMAKE SOURCE_DIR - the build a user or a packager makes: a plain
# `cmake -DCMAKE_BUILD_TYPE=Release` leaves -Werror off (ML_WERROR, docs/building.md), and the
# files gcc's -O3 flow analysis has warned about (-Wnonnull, -Wmaybe-uninitialized) compile clean
# under -O3 -Werror all the same. .ci/run builds the whole Release tree with the default flags.
set -u
cmake=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
"$cmake" -G "Unix Makefiles" -S "$src" -B "$tmp/default" -DCMAKE_BUILD_TYPE=Release >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; echo "FAIL: a default Release configure"; exit 1; }
grep -qx 'ML_WERROR:BOOL=OFF' "$tmp/default/CMakeCache.txt" ||
    { echo "FAIL: a default Release build turns -Werror on: $(grep '^ML_WERROR' "$tmp/default/CMakeCache.txt")"; status=1; }
"$cmake" -G "Unix Makefiles" -S "$src" -B "$tmp/werror" -DCMAKE_BUILD_TYPE=Release -DML_WERROR=ON >"$tmp/log" 2>&1 ||
    { cat "$tmp/log"; echo "FAIL: a Release configure with ML_WERROR=ON"; exit 1; }
for obj in validation:diagnose_report.c.o tests/oom:test_oom_cases.c.o; do
    dir=${obj%%:*}
    if ! make -C "$tmp/werror/$dir" "${obj#*:}" >"$tmp/log" 2>&1; then
        grep -E 'warning:|error:' "$tmp/log" | head -5
        echo "FAIL: $dir/${obj#*:} under -O3 -Werror"
        status=1
    fi
done
[ $status -eq 0 ] && echo "release: -Werror off by default; the -O3 cases compile clean under -Werror"
exit $status
