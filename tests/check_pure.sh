#!/bin/sh
# check_pure.sh --core LIB.a... [--pure LIB.a...] - the core (--core) and the other pure libraries
# (--pure: the config layer, watch's report) do no I/O (DESIGN.md section 2, docs/architecture.md):
# every object of them
#   1. calls nothing but the C library's string, memory, formatting and allocation functions, the
#      compiler's helpers and message lookup (dcgettext): no file, terminal or environment I/O, no
#      clock, no processes, no dlopen, no exit. An allowlist, so a new kind of call fails too;
#   2. holds no writable static state: no object in .data, .bss or thread-local storage (read-only
#      tables, .rodata and .data.rel.ro, are fine);
#   3. core only: calls no cJSON or libyaml, and every ml_ function it calls is defined in the core.
# The exceptions below are named by object, with the reason; each goes when its reason does.
# Only src/ and lib/monitor may do I/O.
set -u

# Undefined symbols any pure object may have.
allowed='memchr|memcmp|memcpy|memmove|memset|strchr|strcmp|strcspn|strlen|strncmp|strnlen|strrchr|strspn|strstr'
allowed="$allowed|snprintf|vsnprintf|malloc|calloc|realloc|free|qsort|bsearch"
allowed="$allowed|dgettext|dcgettext"                          # message catalogs: _() of i18n.h
allowed="$allowed|floor|ceil|trunc|round|lround|llround|fabs|sqrt|pow|exp|log|log2|ldexp|frexp|fmod" # libm
allowed="$allowed|__divti3|__udivti3|__umodti3|__udivmodti4|__modti3|__multi3|__muloti4" # 128-bit math
allowed="$allowed|__stack_chk_fail|_GLOBAL_OFFSET_TABLE_"
allowed="$allowed|__cpu_model|__cpu_indicator_init"             # __builtin_cpu_supports (scanner SIMD)
allowed="$allowed|__(asan|ubsan|sanitizer|sancov|odr_asan)_.*"  # sanitizer and fuzzer instrumentation

# Exceptions, one per line: OBJECT KIND SYMBOL-PATTERN (a shell pattern); the comment above each
# group says why and when it goes.
exceptions() {
    grep -v '^#' <<'EOF'
# (none today)
EOF
}

excepted() { # OBJECT KIND SYMBOL
    exceptions | while read -r obj kind pat _; do
        [ "$obj" = "$1" ] && [ "$kind" = "$2" ] || continue
        # shellcheck disable=SC2254
        case $3 in $pat) echo yes; break ;; esac
    done
}

mode=core
core='' pure=''
for a in "$@"; do
    case $a in
    --core) mode=core ;;
    --pure) mode=pure ;;
    *) a=$(cd "$(dirname "$a")" && pwd)/$(basename "$a")
       if [ "$mode" = core ]; then core="$core $a"; else pure="$pure $a"; fi ;;
    esac
done
[ -n "$core" ] || { echo "usage: check_pure.sh --core LIB.a... [--pure LIB.a...]"; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# The ml_ functions and data the core defines.
for lib in $core; do nm --defined-only "$lib" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDRBC]/ {print $3}'; done |
    grep '^ml_' | sort -u >"$tmp/core_defs"

status=0
n_obj=0
check_lib() { # LAYER LIB
    layer=$1
    lib=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
    (cd "$tmp" && rm -f ./*.o && ar x "$lib") || { echo "$lib: cannot read"; status=1; return; }
    for o in "$tmp"/*.o; do
        obj=$(basename "$o")
        n_obj=$((n_obj + 1))
        for s in $(nm -u "$o" | awk '{print $NF}' | sed 's/@.*//' | sort -u); do
            if echo "$s" | grep -Eqx "$allowed"; then continue; fi
            case $s in
            cJSON_* | yaml_*) [ "$layer" = pure ] && continue ;;
            ml_*) if [ "$layer" = pure ] || grep -qx "$s" "$tmp/core_defs"; then continue; fi ;;
            esac
            [ -n "$(excepted "$obj" calls "$s")" ] && continue
            echo "$(basename "$lib") $obj ($layer) calls $s"
            status=1
        done
        # Symbols in writable sections: objdump -t prints "... O SECTION SIZE NAME".
        for s in $(objdump -t "$o" | awk '
            {sec = ""; for (i = 2; i < NF; i++) if ($i ~ /^\./ || $i == "*COM*") { sec = $i; break }}
            sec == "*COM*" || sec ~ /^\.(data|bss|tdata|tbss)/ && sec !~ /^\.data\.rel\.ro/ {
                if ($(NF) !~ /^\./ && $(NF) !~ /^__(asan|odr_asan|sancov|ubsan)/) print $(NF) }'); do
            [ -n "$(excepted "$obj" static "$s")" ] && continue
            echo "$(basename "$lib") $obj ($layer) holds writable static state: $s"
            status=1
        done
    done
}
for lib in $core; do check_lib core "$lib"; done
for lib in $pure; do check_lib pure "$lib"; done
n_exc=$(exceptions | wc -l | tr -d " ")
[ $status -eq 0 ] && echo "pure: $n_obj objects, no I/O, no writable static state; core calls no cJSON/libyaml ($n_exc exceptions)"
exit $status
