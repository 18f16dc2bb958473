#!/bin/sh
# check_tty.sh BINARY SOURCE_DIR - on a terminal (a pseudo-terminal from util-linux script(1)):
# the width comes from the terminal (TIOCGWINSZ) when COLUMNS is unset; the verdict and the peak
# phase are in colour unless NO_COLOR is set and not empty (https://no-color.org) or TERM=dumb;
# piped output has no colour (the golden tests hold it byte for byte).
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
command -v script >/dev/null 2>&1 || { echo "skipped: no script(1) for a pseudo-terminal"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() {
    echo "$*"
    status=1
}
cd "$src" || exit 1
run="$bin train --config examples/seed-case/train.yaml --gpu dcu-16g --num-gpus 4 2>/dev/null"
# tty OUT ENV...: the command on a 90-column pseudo-terminal, its output (CR LF -> LF) in OUT.
tty() {
    out=$1
    shift
    env -i PATH="$PATH" LC_ALL=C "$@" script -qec "stty cols 90 rows 50; $run" /dev/null </dev/null |
        tr -d '\r' >"$out"
}
esc=$(printf '\033')
tty "$tmp/colour" TERM=xterm
grep -q "^verdict: ${esc}\[3[123]m" "$tmp/colour" || fail "a terminal: the verdict is not in colour: $(grep verdict "$tmp/colour")"
grep -q "^peak: ${esc}\[1m[a-z_]*${esc}\[0m" "$tmp/colour" || fail "a terminal: the peak phase is not in bold"
w=$(sed "s/${esc}\[[0-9;]*m//g" "$tmp/colour" | LC_ALL=C.UTF-8 wc -L)
[ "$w" -le 90 ] || fail "a 90-column terminal without COLUMNS: a line is $w columns wide"
tty "$tmp/nocolor" TERM=xterm NO_COLOR=1
grep -q "$esc" "$tmp/nocolor" && fail "NO_COLOR=1: colour codes written"
tty "$tmp/dumb" TERM=dumb
grep -q "$esc" "$tmp/dumb" && fail "TERM=dumb: colour codes written"
tty "$tmp/empty" TERM=xterm NO_COLOR=
grep -q "$esc" "$tmp/empty" || fail "NO_COLOR set but empty must not turn colour off (no-color.org)"
env -i PATH="$PATH" LC_ALL=C TERM=xterm sh -c "$run" >"$tmp/pipe"
grep -q "$esc" "$tmp/pipe" && fail "piped output has colour codes"
[ $status -eq 0 ] && echo "terminal: colour on a TTY, none with NO_COLOR, TERM=dumb or a pipe; width from TIOCGWINSZ"
exit $status
