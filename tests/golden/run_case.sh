#!/bin/sh
# run_case.sh BINARY CASE_DIR - one golden test (style.md 5.11).
# CASE_DIR/args holds one line of arguments (@DATA@ = the source tree's data/, @CASE@ = CASE_DIR);
# CASE_DIR/env, when present, one line of VAR=value words added to the environment (COLUMNS=100:
# the layout of a 100-column terminal; without it output is piped with no COLUMNS, the natural
# layout scripts read).
# CASE_DIR/filter, when present, a sed script applied to the actual stdout and stderr before they
# are compared or saved: for a figure that is a wall-clock time (watch's "after 0.0 s"), which a
# loaded machine changes.
# Expected: expected.stdout, expected.stderr (absent = empty), expected.rc (absent = 0).
# ML_GOLDEN_UPDATE=1 rewrites the expected files from the actual output.
set -u
bin=$1
case_dir=$2
root=$(cd "$case_dir/../../../.." && pwd)
args=$(sed -e "s|@DATA@|$root/data|g" -e "s|@CASE@|$case_dir|g" "$case_dir/args")
case_env=$(cat "$case_dir/env" 2>/dev/null)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$case_dir" || exit 1
# shellcheck disable=SC2086
env -i PATH="$PATH" LC_ALL=C TZ=UTC NO_COLOR=1 $case_env "$bin" $args >"$tmp/stdout" 2>"$tmp/stderr"
echo $? >"$tmp/rc"
if [ -f filter ]; then
    for f in stdout stderr; do
        sed -f filter "$tmp/$f" >"$tmp/$f.filtered" && mv "$tmp/$f.filtered" "$tmp/$f"
    done
fi
if [ "${ML_GOLDEN_UPDATE:-}" = 1 ]; then
    cp "$tmp/stdout" expected.stdout
    if [ -s "$tmp/stderr" ]; then cp "$tmp/stderr" expected.stderr; else rm -f expected.stderr; fi
    if [ "$(cat "$tmp/rc")" != 0 ]; then cp "$tmp/rc" expected.rc; else rm -f expected.rc; fi
    echo "updated $case_dir"
    exit 0
fi
status=0
[ -f expected.rc ] && want_rc=$(cat expected.rc) || want_rc=0
if [ "$(cat "$tmp/rc")" != "$want_rc" ]; then
    echo "exit code: want $want_rc, got $(cat "$tmp/rc")"
    status=1
fi
want_out=expected.stdout
[ -f "$want_out" ] || want_out=/dev/null
if ! cmp -s "$tmp/stdout" "$want_out"; then
    echo "stdout differs:"
    diff -u "$want_out" "$tmp/stdout" | head -60
    status=1
fi
if [ -f expected.stderr ]; then
    if ! cmp -s "$tmp/stderr" expected.stderr; then
        echo "stderr differs:"
        diff -u expected.stderr "$tmp/stderr"
        status=1
    fi
elif [ -s "$tmp/stderr" ]; then
    echo "unexpected stderr:"
    cat "$tmp/stderr"
    status=1
fi
exit $status
