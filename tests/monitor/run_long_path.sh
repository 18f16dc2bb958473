#!/bin/sh
# run_long_path.sh BINARY FAKES_DIR CASES_DIR - every watch case again with the fake libraries
# reached through a path of 120 characters: the output must not depend on where the tree lives
# (a clone at a long path once broke a golden case that wrapped the real path).
set -u
bin=$1
fakes=$2
cases=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
long=$tmp/$(printf '%*s' $((119 - ${#tmp})) '' | tr ' ' x)
ln -s "$fakes" "$long" || exit 1
status=0
for c in "$cases"/*/; do
    out=$(sh "$(dirname "$0")/run_fake_case.sh" "$bin" "$long" "${c%/}" 2>&1) ||
        { echo "$(basename "$c") with FAKES_DIR at ${#long} characters:"; echo "$out"; status=1; }
done
[ $status -eq 0 ] && echo "watch cases: the same output with the fakes at a ${#long}-character path"
exit $status
