#!/bin/sh
# check_doc_examples.sh BINARY DOC... - run every example command of the pages: each indented
# line that starts with "memledger " under "## Examples". An example must not be a usage error
# (exit 2) and must not crash; exit 1 (the answer "no", with --check) is an answer.
set -u
bin=$1
shift
status=0
n=0
for doc in "$@"; do
    tmp=$(mktemp)
    awk '/^## / {on = ($0 == "## Examples")} on && /^    memledger / {sub(/^    memledger /, ""); print}' "$doc" >"$tmp"
    while IFS= read -r args; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        env -i PATH="$PATH" LC_ALL=C "$bin" $args >/dev/null 2>"$tmp.err"
        rc=$?
        if [ $rc -ge 2 ]; then
            echo "$doc: 'memledger $args' exited $rc:"
            cat "$tmp.err"
            status=1
        fi
    done <"$tmp"
    rm -f "$tmp" "$tmp.err"
done
[ $n -gt 0 ] || { echo "no examples found"; exit 1; }
[ $status -eq 0 ] && echo "examples: $n ran"
exit $status
