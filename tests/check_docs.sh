#!/bin/sh
# check_docs.sh BINARY DOCS_DIR - every command in 'memledger --help' has docs/cli/<cmd>.md, with
# the summary --help shows; every --option in its usage is documented on that page, and every
# option in the page's tables is in its usage (curl's test1139 idea, both ways).
set -u
bin=$1
docs=$2
status=0
cmds=$("$bin" --help | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on=0}')
[ -n "$cmds" ] || { echo "no commands found in --help"; exit 1; }
for c in $cmds; do
    page="$docs/$c.md"
    if [ ! -f "$page" ]; then
        echo "missing $page"
        status=1
        continue
    fi
    for opt in $("$bin" help "$c" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        grep -qF -- "$opt" "$page" || { echo "$page does not document $opt"; status=1; }
    done
    for opt in $(grep '^| [`(]' "$page" | cut -d'|' -f2 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        "$bin" help "$c" | grep -qE -- "$opt([^a-z0-9-]|$)" || { echo "'memledger help $c' lacks $opt of $page"; status=1; }
    done
    summary=$(sed -n 's/^summary: "\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$page")
    "$bin" --help | grep -qxF "  $(printf '%-10s' "$c") $summary" ||
        { echo "'memledger --help' does not show $page's summary '$summary'"; status=1; }
done
[ $status -eq 0 ] && echo "docs: $(echo $cmds | wc -w) commands documented"
exit $status
