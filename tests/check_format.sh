#!/bin/sh
# check_format.sh ROOT - every C source and header follows .clang-format:
# clang-format --dry-run --Werror, one line per file that differs. Exit 77 (skipped) without
# clang-format. A ctest (check_format) when ML_CHECK_FORMAT is on; `clang-format -i` on the
# same files formats them (docs/building.md, "Format").
set -u
root=$1
command -v clang-format >/dev/null 2>&1 || { echo "clang-format not installed: skipped"; exit 77; }
# The layout is clang-format 14's (Debian 12, what scripts/install-deps.sh installs); other
# versions break some lines differently, so they are not held to it.
major=$(clang-format --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p')
if [ "$major" != 14 ]; then
    echo "clang-format $major is not 14, the version the tree is formatted with: skipped"
    exit 77
fi
cd "$root" || exit 2
files=$(find src lib include tests fuzz bench tools validation web -type f \( -name '*.c' -o -name '*.h' \) \
             -not -path 'tests/fixtures/*' -not -path 'fuzz/corpus/*' -not -path 'web/dist/*' | sort)
status=0
n=0
for f in $files; do
    n=$((n + 1))
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "$f: not formatted (clang-format -i $f)"
        status=1
    fi
done
[ $status -eq 0 ] && echo "format: $n files follow .clang-format"
exit $status
