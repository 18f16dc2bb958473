#!/bin/sh
# check_options.sh BINARY GEN_CLI_DOCS SOURCE_DIR - the options the pages document are the options
# the binary takes, both ways (curl's test1139 and test1477 idea), held against the binary itself:
#   1. every option of docs/cli/<command>.md (gen_cli_docs list) is accepted by `memledger CMD`;
#   2. every value an argument cell lists (--method full|lora|...) is accepted, and when the
#      binary rejects a bad value with "is not one of A, B, C", every one of A, B, C is listed;
#   3. no other option name from the getopt tables in src/ is accepted by a command whose page
#      does not document it (a prefix of a documented option is skipped: getopt takes
#      abbreviations).
# "Accepted" means the command does not answer "unknown ... option"; each probe runs in an empty
# directory with stdin from /dev/null, so a probe that gets further than the options does no harm.
# Values are probed after a model and a GPU (base_args), where the commands check them.
set -u
bin=$1
gen=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
status=0
fail() {
    echo "$*"
    status=1
}
# What CMD (in MODE) needs before it looks at the values of its options.
echo '{"type": "step", "peak_allocated_bytes": 1073741824}' >"$tmp/run.jsonl"
base_args() {
    case "$1/$2" in
    train/ | fit/ | fit/--serve | infer/) echo "llama-3.2-1b --gpu 80G" ;;
    compare/) echo "$tmp/run.jsonl llama-3.2-1b --gpu 80G" ;;
    esac
}
# rejects CMD MODE OPT VALUE: exit 0 when CMD says VALUE is not a value of OPT ($tmp/err).
rejects() {
    # shellcheck disable=SC2046
    LC_ALL=C LANGUAGE= timeout 20 "$bin" "$1" $2 $(base_args "$1" "$2") "$3=$4" </dev/null >/dev/null 2>"$tmp/err"
    grep -q -- "$3: '$4' is not" "$tmp/err"
}
# probe ARGS...: exit 0 when the options were accepted; the stderr is in $tmp/err.
probe() {
    LC_ALL=C LANGUAGE= timeout 20 "$bin" "$@" </dev/null >/dev/null 2>"$tmp/err"
    ! grep -q 'unknown.*option' "$tmp/err"
}

"$gen" list "$src"/docs/cli/*.md >"$tmp/list" || exit 1
[ -s "$tmp/list" ] || { echo "gen_cli_docs list printed nothing"; exit 1; }
# The long options of every getopt table in src/ (name and whether it takes an argument).
grep -ho '{"[a-z][a-z0-9-]*", *[a-z]*_argument' "$src"/src/*.c "$src"/src/*.h |
    sed 's/{"\([^"]*\)", *\([a-z]*\)_argument/\1 \2/' | sort -u >"$tmp/getopt"
[ "$(wc -l <"$tmp/getopt")" -ge 10 ] || { echo "found no getopt tables in $src/src"; exit 1; }

ndoc=0
nval=0
while IFS='	' read -r cmd mode opt arg values; do
    [ "$mode" = - ] && mode=
    case $opt in --*) ;; *) continue ;; esac
    ndoc=$((ndoc + 1))
    if [ "$cmd" = memledger ]; then
        probe "$opt" || fail "memledger does not accept $opt (docs/cli/memledger.md)"
        continue
    fi
    if [ "$arg" = - ]; then
        set -- "$opt"
    else
        set -- "$opt=x"
    fi
    # shellcheck disable=SC2086
    probe "$cmd" $mode "$@" || fail "memledger $cmd${mode:+ $mode} does not accept $opt (docs/cli/$cmd.md): $(cat "$tmp/err")"
    [ "$values" = - ] && continue
    for v in $values; do
        nval=$((nval + 1))
        rejects "$cmd" "$mode" "$opt" "$v" &&
            fail "memledger $cmd $opt rejects '$v', which docs/cli/$cmd.md lists: $(cat "$tmp/err")"
    done
    rejects "$cmd" "$mode" "$opt" not-a-value ||
        fail "memledger $cmd $opt takes 'not-a-value' (docs/cli/$cmd.md lists values): $(cat "$tmp/err")"
    accepted=$(sed -n "s/.*$opt: 'not-a-value' is not one of \(.*\)/\1/p" "$tmp/err" | sed 's/ (see .*//; s/,/ /g')
    for v in $accepted; do
        case " $values " in
        *" $v "*) ;;
        *) rejects "$cmd" "$mode" "$opt" "$v" ||
            fail "memledger $cmd $opt accepts '$v', which docs/cli/$cmd.md does not list" ;;
        esac
    done
done <"$tmp/list"

# 3: each command (and mode) against every getopt name its page does not document.
cut -f1,2 "$tmp/list" | sort -u | while IFS='	' read -r cmd mode; do
    [ "$cmd" = memledger ] && continue
    [ "$mode" = - ] && mode=
    documented=$(awk -F'\t' -v c="$cmd" -v m="${mode:--}" '$1 == c && $2 == m {print substr($3, 3)}' "$tmp/list")
    while read -r name kind; do
        skip=
        for d in $documented; do
            case $d in "$name"*) skip=1 ;; esac
        done
        [ -n "$skip" ] && continue
        if [ "$kind" = no ]; then set -- "--$name"; else set -- "--$name=x"; fi
        # shellcheck disable=SC2086
        if probe "$cmd" $mode "$@"; then
            echo "memledger $cmd${mode:+ $mode} accepts --$name, which docs/cli/$cmd.md does not document"
            echo fail >>"$tmp/undocumented"
        fi
    done <"$tmp/getopt"
done
[ -s "$tmp/undocumented" ] 2>/dev/null && status=1
[ $status -eq 0 ] && echo "options: $ndoc documented options accepted, $nval documented values accepted, no undocumented option"
exit $status
