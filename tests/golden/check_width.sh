#!/bin/sh
# check_width.sh BINARY GOLDEN_DIR - terminal-aware layout (docs/cli/memledger.md, Environment):
# every text case of train, infer, diagnose, fit and compare under GOLDEN_DIR, run as its golden
# test runs it, with COLUMNS=W (W = 100, 80, 60), has no line wider than W display columns as
# coreutils' `wc -L` counts them (wcwidth, so CJK characters count two), in English and in
# zh_CN; with --wide, and piped with no COLUMNS, the output is the golden file byte for byte.
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
golden=$(cd "$2" && pwd)
root=$(cd "$golden/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() {
    echo "$*"
    status=1
}
if ! locale -a 2>/dev/null | grep -qix 'c\.utf-\{0,1\}8'; then
    echo "skipped: no C.UTF-8 locale (locale -a), so wc -L cannot count display columns"
    exit 77
fi
n=0
for case_dir in "$golden"/train/* "$golden"/infer/* "$golden"/diagnose/* "$golden"/fit/* "$golden"/compare/*; do
    [ -f "$case_dir/args" ] || continue
    grep -q -e '--json' -e '--markdown' -e '--write' "$case_dir/args" && continue
    [ -f "$case_dir/env" ] && continue
    args=$(sed -e "s|@DATA@|$root/data|g" -e "s|@CASE@|$case_dir|g" "$case_dir/args")
    n=$((n + 1))
    for w in 100 80 60; do
        for lang in C zh_CN; do
            # shellcheck disable=SC2086
            (cd "$case_dir" && env -i PATH="$PATH" LC_ALL= LANG=C.UTF-8 LANGUAGE=$lang TZ=UTC NO_COLOR=1 COLUMNS=$w \
                "$bin" $args >"$tmp/out" 2>/dev/null)
            got=$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")
            [ "$got" -le "$w" ] ||
                fail "${case_dir#"$golden"/} at COLUMNS=$w ($lang): a line is $got columns wide: $(LC_ALL=C.UTF-8 awk -v w="$w" 'length($0) > w' "$tmp/out" | head -2)"
        done
    done
    # shellcheck disable=SC2086
    (cd "$case_dir" && env -i PATH="$PATH" LC_ALL=C TZ=UTC NO_COLOR=1 COLUMNS=60 "$bin" $args --wide >"$tmp/wide" 2>/dev/null)
    cmp -s "$tmp/wide" "$case_dir/expected.stdout" ||
        fail "${case_dir#"$golden"/}: --wide at COLUMNS=60 is not the natural layout (expected.stdout)"
done
[ "$n" -ge 20 ] || fail "only $n text cases found under $golden"
[ $status -eq 0 ] && echo "layout: $n cases fit 100, 80 and 60 columns in English and zh_CN; --wide keeps the natural layout"
exit $status
