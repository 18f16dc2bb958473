#!/bin/sh
# check_words.sh GOLDEN_DIR LEDGER_MD - the text reports of train, infer, fit, card and params (their
# golden outputs, which the golden tests hold the binary to) show the user words, not internal
# ids: no row id of docs/ledger.md's tables (R2, L1, ...: the reader is pointed at a section),
# no evidence rule name of the kind `t:first_step`, no note code A1-A9. JSON keeps its ids.
set -u
golden=$1
ledger_md=$2
ids=$(grep -oE '^\| [A-Z][0-9]+ \|' "$ledger_md" | tr -d '| ' | sort -u | tr '\n' '|')
pat="\\b(${ids}A[1-9])\\b|\\b(t|ph|fl|ev|c|k):[a-z_]{3,}\\b"
status=0
n=0
for case_dir in "$golden"/train/* "$golden"/infer/* "$golden"/fit/* "$golden"/card/* "$golden"/params/*; do
    [ -f "$case_dir/args" ] || continue
    grep -q -e '--json' "$case_dir/args" && continue
    n=$((n + 1))
    for f in "$case_dir"/expected.stdout "$case_dir"/expected.stderr; do
        [ -f "$f" ] || continue
        if grep -nE "$pat" "$f" >/dev/null; then
            echo "${f#"$golden"/}: an internal id: $(grep -noE "$pat" "$f" | head -3 | tr '\n' ' ')"
            status=1
        fi
    done
done
[ $status -eq 0 ] && echo "words: $n text reports of train, infer, fit, card and params show no internal id"
exit $status
