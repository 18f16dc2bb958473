#!/bin/sh
# check_docs.sh BINARY DOCS_DIR - every command in 'memledger --help' has docs/cli/<cmd>.md, and
# every --option in its usage is documented on that page (curl's test1139 idea).
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
done
[ $status -eq 0 ] && echo "docs: $(echo $cmds | wc -w) commands documented"
exit $status
