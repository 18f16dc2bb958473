#!/bin/sh
# check_po.sh POT PO... - each message catalog compiles (msgfmt --check: headers, format strings),
# has no fuzzy entry, and translates only messages the sources still have (a translation whose
# message changed is lost: `cmake --build build --target update-po`, then translate again).
# Untranslated messages are counted; with ML_PO_COMPLETE=1 they fail (the default: the CMake
# option ML_PO_COMPLETE, tests/install/CMakeLists.txt).
set -u
pot=$1
shift
status=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for po in "$@"; do
    lang=$(basename "$po" .po)
    if ! msgfmt --check -o /dev/null "$po"; then
        echo "$po: msgfmt --check failed"
        status=1
        continue
    fi
    # (msgattrib prints the header too when it prints anything)
    fuzzy=$(msgattrib --only-fuzzy --no-obsolete "$po" | grep -c '^msgid ')
    if [ "$fuzzy" -gt 1 ]; then
        fuzzy=$((fuzzy - 1))
        echo "$po: $fuzzy fuzzy entries (msgattrib --only-fuzzy $po)"
        status=1
    fi
    if ! msgcmp --use-untranslated "$pot" "$po" 2>"$err" >/dev/null; then
        grep -B1 'not defined' "$err" | head -6
        echo "$po: translations of messages the sources no longer have (update-po)"
        status=1
    fi
    total=$(msgattrib --no-obsolete "$pot" | grep -c '^msgid ')
    total=$((total - 1))
    done_=$(msgattrib --translated --no-obsolete --no-fuzzy "$po" | grep -c '^msgid ')
    done_=$((done_ - 1))
    echo "$lang: $done_ of $total messages translated"
    if [ "${ML_PO_COMPLETE:-0}" = 1 ] && [ "$done_" -lt "$total" ]; then
        echo "$po: $((total - done_)) messages untranslated (ML_PO_COMPLETE=1)"
        status=1
    fi
done
exit $status
