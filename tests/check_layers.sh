#!/bin/sh
# check_layers.sh [--order "F1 F2 ..."] SOURCE_DIR BUILD_DIR OBJECT_LIST... - the folders are the
# layers (docs/architecture.md, "Layers"): an object of lib/<folder> or src/ may use (link to) an
# ml_ symbol only when a folder below its own in ORDER defines it. A use that goes up or sideways
# fails, and so does a folder-level cycle, which always holds one such use.
#
# OBJECT_LIST: files naming the built objects (CMake's $<TARGET_OBJECTS:...> of every library and
# of memledger, one per line or ;-separated; tests/CMakeLists.txt writes it). Each object is placed
# by its source: CMake builds SOURCE_DIR/A/R.c of a target T into BUILD_DIR/A/CMakeFiles/T.dir/R.c.o
# (A: the directory of the CMakeLists.txt that lists it), so the folder is read off the path; a
# source generated into BUILD_DIR is placed by the table `generated` below. What each object
# defines and uses comes from nm. Every C file of lib/ and src/ must be among the objects (a library
# left out of the list would go unchecked), and every folder must be in ORDER.
#
# check_layers.sh --self-test CC SOURCE_DIR BUILD_DIR OBJECT_LIST... - the test of the test: it
# must fail on two fabricated objects (lib/util using lib/render), pass on the same pair the right
# way round, and fail on the real objects in the order reversed.
set -u

# The layers, lowest first (docs/architecture.md). monitor is the I/O layer: it uses util alone (the
# OOM scanner that watch tees the command's stderr through is handed in by src/, a callback); render
# reads its structs and names (watch's report).
order='util model setup ledger fit oom diagnose monitor render run src'

# Sources placed in another folder than their own, one per line: SOURCE FOLDER.
placed() {
    grep -v '^#' <<'EOF'
EOF
}

# Sources generated into the build directory: FILE FOLDER.
generated() {
    cat <<'EOF'
catalog_data.c model
gpu_data.c setup
cli_help.c src
EOF
}

# Temporary exceptions, one per line: SOURCE SYMBOL (the use of SYMBOL by SOURCE's object). Only for
# files another change owns at the moment; the comment says whose and what fixes it.
exceptions() {
    grep -v '^#' <<'EOF'
EOF
}

if [ "${1:-}" = --self-test ]; then
    shift
    [ $# -ge 4 ] || { echo "usage: check_layers.sh --self-test CC SOURCE_DIR BUILD_DIR OBJECT_LIST..."; exit 2; }
    cc=$1
    shift
    me=$0
    t=$(mktemp -d) || exit 2
    trap 'rm -rf "$t"' EXIT
    fail=0
    # A fabricated pair: lib/util/low.c uses ml_fake_high of lib/render/high.c, upward.
    mkdir -p "$t/src/lib/util" "$t/src/lib/render" "$t/b/CMakeFiles/fake.dir/lib/util" \
        "$t/b/CMakeFiles/fake.dir/lib/render"
    printf 'int ml_fake_high(void);\nint ml_fake_low(void) { return ml_fake_high() + 1; }\n' >"$t/src/lib/util/low.c"
    printf 'int ml_fake_high(void) { return 2; }\n' >"$t/src/lib/render/high.c"
    "$cc" -c -o "$t/b/CMakeFiles/fake.dir/lib/util/low.c.o" "$t/src/lib/util/low.c" &&
        "$cc" -c -o "$t/b/CMakeFiles/fake.dir/lib/render/high.c.o" "$t/src/lib/render/high.c" || exit 2
    printf '%s\n' "$t/b/CMakeFiles/fake.dir/lib/util/low.c.o" "$t/b/CMakeFiles/fake.dir/lib/render/high.c.o" >"$t/list"
    if out=$(sh "$me" "$t/src" "$t/b" "$t/list" 2>&1); then
        echo "self-test: util using render passed:"; echo "$out"; fail=1
    elif ! echo "$out" | grep -q 'lib/util/low.c uses ml_fake_high of lib/render/high.c (util -> render)'; then
        echo "self-test: util using render failed without naming the use:"; echo "$out"; fail=1
    fi
    # The same pair the right way round: render/low.c uses util/high.c.
    mkdir -p "$t/src2/lib/util" "$t/src2/lib/render" "$t/b2/CMakeFiles/fake.dir/lib/util" \
        "$t/b2/CMakeFiles/fake.dir/lib/render"
    cp "$t/src/lib/util/low.c" "$t/src2/lib/render/low.c"
    cp "$t/src/lib/render/high.c" "$t/src2/lib/util/high.c"
    cp "$t/b/CMakeFiles/fake.dir/lib/util/low.c.o" "$t/b2/CMakeFiles/fake.dir/lib/render/low.c.o"
    cp "$t/b/CMakeFiles/fake.dir/lib/render/high.c.o" "$t/b2/CMakeFiles/fake.dir/lib/util/high.c.o"
    printf '%s\n' "$t/b2/CMakeFiles/fake.dir/lib/render/low.c.o" "$t/b2/CMakeFiles/fake.dir/lib/util/high.c.o" >"$t/list2"
    if ! out=$(sh "$me" "$t/src2" "$t/b2" "$t/list2" 2>&1); then
        echo "self-test: render using util failed:"; echo "$out"; fail=1
    fi
    # The real objects with the order reversed: every use is then upward.
    rev=$(echo "$order" | tr ' ' '\n' | sed '1!G;h;$!d' | tr '\n' ' ')
    if out=$(sh "$me" --order "$rev" "$@" 2>&1); then
        echo "self-test: the reversed order passed:"; echo "$out"; fail=1
    fi
    [ $fail -eq 0 ] && echo "layers self-test: a fabricated upward use and the reversed order fail, the right way round passes"
    exit $fail
fi

if [ "${1:-}" = --order ]; then
    order=$2
    shift 2
fi
[ $# -ge 3 ] || { echo "usage: check_layers.sh [--order \"F1 F2 ...\"] SOURCE_DIR BUILD_DIR OBJECT_LIST..."; exit 2; }
srcdir=$(cd "$1" && pwd) || exit 2
builddir=$(cd "$2" && pwd) || exit 2
shift 2

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cat "$@" | tr ';' '\n' | sed '/^$/d' | sort -u >"$tmp/objects"
[ -s "$tmp/objects" ] || { echo "check_layers: no objects listed in $*"; exit 2; }

# One line per object (O SOURCE) and per ml_ symbol it defines (D) or uses (U): KIND SOURCE SYMBOL.
status=0
while read -r o; do
    [ -f "$o" ] || { echo "check_layers: $o: no such object (build first)"; status=1; continue; }
    rel=${o#"$builddir"/}
    dir=${rel%%CMakeFiles/*}
    src=$dir${rel#*CMakeFiles/*.dir/}
    src=${src%.o}
    echo "O $src"
    nm --defined-only "$o" | awk -v s="$src" 'NF == 3 && $2 ~ /^[A-Z]$/ && $3 ~ /^ml_/ {print "D", s, $3}'
    nm -u "$o" | awk -v s="$src" '$NF ~ /^ml_/ {sub(/@.*/, "", $NF); print "U", s, $NF}'
done <"$tmp/objects" >"$tmp/syms"
# Every C file of lib/ and src/ must be among the objects, so a new library is not left unchecked.
(cd "$srcdir" && find lib src -name '*.c' | sort) >"$tmp/sources"
placed >"$tmp/placed"
generated >"$tmp/generated"
exceptions >"$tmp/exceptions"

awk -v order="$order" -v srcdir="$srcdir" -v placed="$tmp/placed" -v gen="$tmp/generated" \
    -v exc="$tmp/exceptions" -v sources="$tmp/sources" -v status="$status" '
function folder(src,   f, n, p, base) {
    if (src in place) return place[src]
    if (system("test -f \"" srcdir "/" src "\"") != 0) {
        n = split(src, p, "/"); base = p[n]
        if (base in genf) return genf[base]
        return "?"
    }
    if (src ~ /^src\//) return "src"
    if (src ~ /^lib\/[^\/]+\//) { split(src, p, "/"); return p[2] }
    return "?"
}
BEGIN {
    n = split(order, o, " ")
    for (i = 1; i <= n; i++) rank[o[i]] = i
    while ((getline l < placed) > 0) { split(l, a, " "); place[a[1]] = a[2] }
    while ((getline l < gen) > 0) { split(l, a, " "); genf[a[1]] = a[2] }
    while ((getline l < exc) > 0) { split(l, a, " "); except[a[1] " " a[2]] = 1 }
}
{
    seen[$2] = 1
    if (!($2 in fold)) {
        fold[$2] = folder($2)
        if (fold[$2] == "?") { printf "%s: cannot place it in a folder (add it to check_layers.sh)\n", $2; status = 1 }
        else if (!(fold[$2] in rank)) { printf "%s: folder %s is not in the order \"%s\"\n", $2, fold[$2], order; status = 1 }
    }
    if ($1 == "O") next
    if ($1 == "D") {
        if (($3 in def) && fold[def[$3]] != fold[$2]) {
            printf "%s is defined in %s and in %s\n", $3, def[$3], $2; status = 1
        }
        def[$3] = $2
    } else { nu++; use_src[nu] = $2; use_sym[nu] = $3 }
}
END {
    for (i = 1; i <= nu; i++) {
        s = use_src[i]; y = use_sym[i]
        if (!(y in def)) continue              # a test double, or defined outside lib/ and src/
        d = def[y]; f = fold[s]; g = fold[d]
        if (f == g || !(f in rank) || !(g in rank)) continue
        cross++
        edge = f " -> " g
        if (rank[g] < rank[f]) { down[edge]++; continue }
        if ((s " " y) in except) { used[s " " y] = 1; excused++; continue }
        printf "%s uses %s of %s (%s)\n", s, y, d, edge
        bad[edge]++; status = 1
    }
    while ((getline l < sources) > 0) if (!(l in seen)) {
        printf "%s: in no library that ML_ALL_LIBS or memledger lists (the objects checked)\n", l; status = 1
    }
    for (k in except) if (!(k in used)) printf "note: exception \"%s\" no longer matches; remove it\n", k
    for (e in bad) printf "layers: %s: %d uses against the order \"%s\"\n", e, bad[e], order
    if (cross == 0) { print "layers: no use across folders found; are the objects listed?"; status = 1 }
    for (k in fold) nobj++
    if (status == 0) {
        ne = 0; for (e in down) ne++
        printf "layers: %d objects, %d uses across folders, %d folder edges, all downward (%s; %d excepted)\n",
               nobj, cross, ne, order, excused
    }
    exit status
}' "$tmp/syms"
