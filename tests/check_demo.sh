#!/bin/sh
# check_demo.sh BINARY ROOT - `make demo` as the Makefile writes it (its memledger line, with
# BINARY for ./$(BUILD)/memledger), run from ROOT as make runs it: a verdict on stdout and not one
# warning on stderr (the built-in example resolves its own files), exit 0.
set -u
bin=$1
root=$2
cd "$root" || exit 2
line=$(awk '/^demo:/ {on=1; next} on && /^\t/ && /memledger/ {print; exit} on && !/^\t/ {on=0}' Makefile)
[ -n "$line" ] || { echo "FAIL: no memledger line under demo: in the Makefile"; exit 1; }
args=${line#*memledger }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
env -i PATH="$PATH" LC_ALL=C "$bin" $args >"$tmp/out" 2>"$tmp/err"
rc=$?
status=0
[ $rc -eq 0 ] || { echo "FAIL: make demo exits $rc"; status=1; }
grep -q '^verdict: ' "$tmp/out" || { echo "FAIL: make demo prints no verdict"; status=1; }
if grep -q 'warning' "$tmp/err"; then
    echo "FAIL: make demo warns about its own example:"
    cat "$tmp/err"
    status=1
fi
[ $status -eq 0 ] && echo "demo: memledger $args: a verdict, no warning"
exit $status
