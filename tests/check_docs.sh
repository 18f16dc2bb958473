#!/bin/sh
# check_docs.sh BINARY DOCS_DIR [ROOT] - the documentation is complete and its references hold:
#   1. every command in 'memledger --help' has docs/cli/<cmd>.md, with the summary --help shows;
#      every --option in its usage is documented on that page, and every option in the page's
#      tables is in its usage (curl's test1139 idea, both ways);
#   2. with ROOT (the source tree): every relative link of every Markdown file leads to a file or
#      directory that exists, and so does every docs/... path cited in a comment of the sources
#      (C, headers, CMake, shell, Python) or in the text of a Markdown file.
set -u
bin=$1
docs=$2
root=${3:-}
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
# A command that answers "no" with exit 1 only under --check (its page's exit: line): the general
# statements of the exit status (memledger --help, docs/cli/memledger.md, the README) say --check too.
for c in $cmds; do
    grep -q '^exit: .*1 --check' "$docs/$c.md" 2>/dev/null || continue
    "$bin" --help | grep -q -- '^Exit status: .*--check' ||
        { echo "'memledger --help' gives exit 1 for a negative answer without --check, unlike $c.md"; status=1; }
    grep -q -- '^exit: .*--check' "$docs/memledger.md" ||
        { echo "$docs/memledger.md gives exit 1 for a negative answer without --check, unlike $c.md"; status=1; }
    if [ -n "$root" ] && ! grep -A3 '^Exit status:' "$root/README.md" | grep -q -- '--check'; then
        echo "README.md gives exit 1 for a negative answer without --check, unlike $c.md"
        status=1
    fi
done
n_links=0
if [ -n "$root" ]; then
    cd "$root" || exit 2
    # The files read: sources and documents, not test data (logs, goldens, corpora).
    files=$(find . \( -path ./build -o -path './build-*' -o -path ./.git -o -path ./tests/fixtures \
                -o -path ./tests/golden -o -path ./fuzz/corpus -o -path ./data -o -path ./validation/data \) -prune \
                -o -type f \( -name '*.md' -o -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \
                -o -name '*.cmake' -o -name CMakeLists.txt -o -name Makefile \) -print | sort)
    for f in $files; do
        dir=$(dirname "$f")
        case $f in
        *.md)
            # [text](target): relative targets only; "#anchor" and URLs are not files.
            for t in $(grep -oE '\]\([^) ]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//; s/#.*//'); do
                case $t in '' | http:* | https:* | mailto:*) continue ;; esac
                n_links=$((n_links + 1))
                [ -e "$dir/$t" ] || { echo "$f: link to $t: no such file"; status=1; }
            done
            cited=$(grep -oE '(^|[^A-Za-z0-9_./-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' "$f" | sed -E 's/^[^d]//') ;;
        *.c | *.h)
            # Comments: after /* or //, or on a line that continues one (" * ...").
            cited=$(awk '{ i = index($0, "/*"); j = index($0, "//"); if (j && (!i || j < i)) i = j
                           if (i) print substr($0, i); else if ($0 ~ /^[ \t]*\*/) print }' "$f" |
                    grep -oE '(^|[^A-Za-z0-9_./-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' | sed -E 's/^[^d]//') ;;
        *)
            cited=$(awk '{ i = index($0, "#"); if (i) print substr($0, i) }' "$f" |
                    grep -oE '(^|[^A-Za-z0-9_./-])docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/-]' | sed -E 's/^[^d]//') ;;
        esac
        for p in $cited; do
            n_links=$((n_links + 1))
            [ -e "$p" ] || { echo "$f: cites $p: no such file"; status=1; }
        done
    done
fi
[ $status -eq 0 ] && echo "docs: $(echo $cmds | wc -w) commands documented; $n_links links and docs/ citations lead somewhere"
exit $status
