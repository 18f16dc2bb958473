#!/bin/sh
# check_writes.sh MEMLEDGER ROOT - what memledger writes and never writes (docs/files.md):
# never through a symbolic link, never over an input file, a plan all or nothing, new files with
# the user's umask, nothing rewritten that a plan does not change.
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
ok() { n=$((n + 1)); }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL: $*"; }
# sums DIR: a checksum of every file under DIR (names and bytes), to prove nothing changed.
sums() { (cd "$1" && find . -type f -o -type l | LC_ALL=C sort | while read -r f; do printf '%s ' "$f"; if [ -L "$f" ]; then readlink "$f"; else cksum <"$f"; fi; done); }

# ---- watch: --out and --svg never write through a symbolic link, with or without --force ----
printf 'system file\n' >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link.jsonl"
ln -s "$tmp/victim" "$tmp/link.svg"
for opt in "--out $tmp/link.jsonl" "--svg $tmp/link.svg" "--force --out $tmp/link.jsonl" "--force --svg $tmp/link.svg"; do
    # shellcheck disable=SC2086
    "$bin" watch --backend none $opt -- true >/dev/null 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 2 ] || ! grep -q 'symbolic link' "$tmp/err" || [ "$(cat "$tmp/victim")" != "system file" ] ||
        [ ! -L "$tmp/link.jsonl" ] || [ ! -L "$tmp/link.svg" ]; then
        bad "watch $opt: wrote through (or replaced) a symbolic link (rc $rc: $(cat "$tmp/err"))"
    else ok; fi
done
ls -a "$tmp" | grep -q memledger- && bad "watch left a temporary file: $(ls -a "$tmp")" || ok

# ---- watch: new files get the user's umask; --force replaces a file (a new inode), keeping its mode ----
for u in 022 002 077; do
    rm -f "$tmp/t.jsonl" "$tmp/p.svg"
    (umask $u && "$bin" watch --backend none --out "$tmp/t.jsonl" --svg "$tmp/p.svg" -- true >/dev/null 2>&1)
    want=$(umask $u && : >"$tmp/ref" && stat -c %a "$tmp/ref")
    rm -f "$tmp/ref"
    for f in t.jsonl p.svg; do
        got=$(stat -c %a "$tmp/$f" 2>/dev/null)
        [ "$got" = "$want" ] && ok || bad "watch under umask $u: $f has mode $got, want $want"
    done
done
printf 'old\n' >"$tmp/keep.jsonl"
chmod 640 "$tmp/keep.jsonl"
ln "$tmp/keep.jsonl" "$tmp/hardlink.jsonl"
"$bin" watch --backend none --force --out "$tmp/keep.jsonl" -- true >/dev/null 2>&1
[ "$(cat "$tmp/hardlink.jsonl")" = old ] && ok || bad "watch --force wrote into the old file (its hard link changed)"
[ "$(stat -c %a "$tmp/keep.jsonl")" = 640 ] && ok || bad "watch --force: the replaced timeline lost its mode 640"
grep -q '"type"' "$tmp/keep.jsonl" && ok || bad "watch --force: no timeline written"

echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
