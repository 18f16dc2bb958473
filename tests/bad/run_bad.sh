#!/bin/sh
# run_bad.sh BINARY BAD_DIR - the bad-input suite.
# Every case must give: exit status 2, nothing on stdout, exactly one line on stderr that starts
# with "memledger" and contains the expected fragment, and never a crash (signal) or a sanitizer
# report. Cases are "ARGS<TAB>FRAGMENT" lines in BAD_DIR/cases and BAD_DIR/cases-* (one per command) ({F} = BAD_DIR/files, {T} = a
# scratch directory with generated inputs).
set -u
bin=$1
dir=$2
files="$dir/files"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Generated inputs: large or binary files are not kept in git.
mkdir -p "$tmp/emptydir"
printf '\000\001\002\377\376{"model_type"' >"$tmp/binary.json"
head -c 65536 /dev/zero | tr '\000' '\377' >"$tmp/ff.json"
truncate -s 17M "$tmp/huge.json"                          # sparse: over the 16 MiB config cap
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "["; }' >"$tmp/deep.json"
# chatglm (remote code): memledger holds no class defaults for it, so its size keys are required.
printf '{"model_type": "chatglm", "padded_vocab_size": 65024}' >"$tmp/config.json.partial"
mkdir -p "$tmp/modeldir" && cp "$tmp/config.json.partial" "$tmp/modeldir/config.json"

fail=0
n=0
while IFS='	' read -r args want; do
    case "$args" in ''|'#'*) continue ;; esac
    n=$((n + 1))
    a=$(printf '%s' "$args" | sed -e "s|{F}|$files|g" -e "s|{T}|$tmp|g")
    # shellcheck disable=SC2086
    "$bin" $a >"$tmp/out" 2>"$tmp/err" </dev/null
    rc=$?
    lines=$(wc -l <"$tmp/err")
    why=""
    [ "$rc" -eq 2 ] || why="exit $rc (want 2)"
    [ -s "$tmp/out" ] && why="$why; wrote to stdout"
    [ "$lines" -eq 1 ] || why="$why; $lines stderr lines (want 1)"
    head -n 1 "$tmp/err" | grep -q '^memledger' || why="$why; stderr does not start with 'memledger'"
    grep -qF -- "$want" "$tmp/err" || why="$why; stderr lacks '$want'"
    if [ -n "$why" ]; then
        echo "FAIL: memledger $a: $why"
        sed 's/^/    /' "$tmp/err" | head -5
        fail=$((fail + 1))
    fi
done <<EOF
$(cat "$dir"/cases "$dir"/cases-* 2>/dev/null)
EOF
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
