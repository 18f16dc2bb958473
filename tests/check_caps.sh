#!/bin/sh
# check_caps.sh ROOT | --self-test - the size caps (issue 25; docs/architecture.md, "Layers"):
#   1. no C file of lib/ over 1,200 lines;
#   2. no function of lib/ or src/ over 120 lines.
# A function's length is its body's: the lines from its opening brace to its closing brace, both
# counted. The layout makes that exact without a C parser: .clang-format (BreakBeforeBraces: Linux,
# held by tests/check_format.sh) puts a function's braces, and only a function's, alone at column 0
# - "{" opens a body, the next line that starts with "}" closes it (a brace inside the body, a
# string or a comment is indented). The function is named by the last identifier before "(" in the
# lines between the previous definition or declaration and its brace.
set -u
root=${1:?usage: check_caps.sh ROOT}
max_file=1200
max_fn=120

# The test of the test: a fabricated tree with a 121-line function and a 1,201-line file must fail
# and name both; with a 120-line function and a 1,200-line file it must pass.
if [ "$root" = --self-test ]; then
    t=$(mktemp -d) || exit 2
    trap 'rm -rf "$t"' EXIT
    fab() { # DIR BODY_LINES FILE_LINES
        mkdir -p "$1/lib/x" "$1/src"
        { printf 'static int __attribute__((unused)) too_long(int a)\n{\n'
          i=2; while [ $i -lt "$2" ]; do echo "    a += $i;"; i=$((i + 1)); done
          printf '}\n'; } >"$1/src/f.c"
        { i=0; while [ $i -lt "$3" ]; do echo "/* $i */"; i=$((i + 1)); done; } >"$1/lib/x/big.c"
    }
    fab "$t/bad" 121 1201
    fab "$t/ok" 120 1200
    fail=0
    out=$(sh "$0" "$t/bad")
    echo "$out" | grep -q '^src/f.c:2: too_long is 121 lines' || { echo "self-test: 121 lines passed: $out"; fail=1; }
    echo "$out" | grep -q '^lib/x/big.c: 1201 lines' || { echo "self-test: 1,201 lines passed: $out"; fail=1; }
    sh "$0" "$t/ok" >/dev/null || { echo "self-test: 120 and 1,200 lines failed:"; sh "$0" "$t/ok"; fail=1; }
    [ $fail -eq 0 ] && echo "caps self-test: a 121-line function and a 1,201-line file fail, 120 and 1,200 pass"
    exit $fail
fi

cd "$root" || exit 2
files=$(find lib src -type f -name '*.c' | sort)
[ -n "$files" ] || { echo "check_caps: no C files under $root/lib and $root/src"; exit 2; }
status=0
n_files=0
n_fn=0
for f in $files; do
    n_files=$((n_files + 1))
    case $f in
    lib/*) lines=$(wc -l <"$f")
           if [ "$lines" -gt $max_file ]; then
               echo "$f: $lines lines (at most $max_file)"
               status=1
           fi ;;
    esac
    out=$(awk -v max=$max_fn -v f="$f" '
        /^\{/ && !inbody { inbody = 1; start = FNR; nfn++; next }
        inbody && /^\}/ {
            len = FNR - start + 1; inbody = 0
            if (len > max) printf "%s:%d: %s is %d lines (at most %d)\n", f, start, name, len, max
            sig = 0; next
        }
        inbody { next }
        macro { macro = /\\$/; next }                     # a #define continued
        /^#/ { macro = /\\$/; next }                      # the preprocessor
        /^[ \t]*(\/\*|\*|\/\/)/ { next }                 # comments
        /;[ \t]*$/ { sig = 0; next }                      # a declaration or a table ends
        !sig {                                             # the first "name(" of a definition
            s = $0
            while (match(s, /[A-Za-z_][A-Za-z_0-9]*\(/)) {
                id = substr(s, RSTART, RLENGTH - 1); s = substr(s, RSTART + RLENGTH)
                if (id == "__attribute__") { s = substr(s, index(s, "))") + 2); continue }
                name = id; sig = 1; break
            }
        }
        END { if (inbody) printf "%s:%d: a body opened at column 0 never closes\n", f, start; print "#fn", nfn }
    ' "$f")
    n=$(echo "$out" | sed -n 's/^#fn //p')
    n_fn=$((n_fn + ${n:-0}))
    if echo "$out" | grep -v '^#fn' | grep -q .; then
        echo "$out" | grep -v '^#fn'
        status=1
    fi
done
[ "$n_fn" -gt 0 ] || { echo "check_caps: no function found; has the layout changed?"; status=1; }
[ $status -eq 0 ] && echo "caps: $n_files files of lib/ and src/, $n_fn functions; files <= $max_file lines, functions <= $max_fn lines"
exit $status
