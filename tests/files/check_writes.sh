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

# ---- train, infer, diagnose --svg: the same writer (never through a link; the user's umask) ----
for cmd in "train qwen2.5-7b --gpu a100-80g" "infer qwen2.5-7b --gpu a100-80g" "diagnose $root/examples/seed-case/oom.log"; do
    for force in "" --force; do
        # shellcheck disable=SC2086
        $bin $cmd --svg "$tmp/link.svg" $force >/dev/null 2>"$tmp/err"
        rc=$?
        if [ "$rc" -ne 2 ] || ! grep -q 'symbolic link' "$tmp/err" || [ ! -L "$tmp/link.svg" ] ||
            [ "$(cat "$tmp/victim")" != "system file" ]; then
            bad "${cmd%% *} --svg $force: wrote through (or replaced) a symbolic link (rc $rc: $(cat "$tmp/err"))"
        else ok; fi
    done
    rm -f "$tmp/pic.svg"
    # shellcheck disable=SC2086
    (umask 077 && $bin $cmd --svg "$tmp/pic.svg" >/dev/null 2>&1)
    [ "$(stat -c %a "$tmp/pic.svg" 2>/dev/null)" = 600 ] && ok || bad "${cmd%% *} --svg under umask 077: mode $(stat -c %a "$tmp/pic.svg" 2>&1)"
done
ls -a "$tmp" | grep -q memledger- && bad "--svg left a temporary file: $(ls -a "$tmp")" || ok

# ---- fit --write: never over an input, all or nothing, only what the plan changes ----
proj="$tmp/proj"
mkdir -p "$proj"
cp "$root/examples/seed-case/train.yaml" "$root/examples/seed-case/deepspeed_z3_4x16g.json" "$proj/"
# At the estimate (--confidence point) the seed run has cheap plans: env-only, bucket and YAML ones.
fit() { (cd "$proj" && "$bin" fit --config train.yaml --gpu dcu-16g --num-gpus 4 --confidence point "$@"); }
before=$(sums "$proj")
plans=$(fit --json 2>/dev/null | grep -c '"summary"')
[ "$plans" -ge 3 ] && ok || bad "fit: $plans plans for the seed case (want at least 3)"
k=1
while [ "$k" -le "$plans" ]; do
    for force in "" --force; do
        fit --write "out-$k" --plan "$k" $force >/dev/null 2>&1 || bad "fit --write out-$k --plan $k $force failed"
        fit --write "out-$k" --plan "$k" --force >/dev/null 2>&1 || bad "fit --write out-$k --plan $k --force (again) failed"
        # into the input's own folder: whatever would replace an input is refused, with or without
        # --force (a plan that writes only memledger.env may go there with --force)
        if fit --write . --plan "$k" $force >/dev/null 2>"$tmp/err"; then
            [ -n "$force" ] && [ ! -f "$proj/.plan-wrote-input" ] && ok || bad "fit --write . --plan $k: written without --force"
            rm -f "$proj/memledger.env"
        else
            grep -q 'an input of this run\|not empty' "$tmp/err" && ok || bad "fit --write . --plan $k $force: $(cat "$tmp/err")"
        fi
        [ "$(sums "$proj" | grep -v '^\./out-')" = "$before" ] && ok || bad "fit --write . --plan $k $force changed an input"
    done
    k=$((k + 1))
done
# every input byte-identical after every write
now=$(sums "$proj" | grep -v '^\./out-')
[ "$now" = "$before" ] && ok || bad "fit --write changed an input file: $(printf '%s\n' "$before" "$now" | sort | uniq -u)"
# what each plan wrote: an env-only plan writes only the environment file; a DeepSpeed rewrite keeps
# the user's spellings (3e8, 1e8) where it changes nothing
for d in "$proj"/out-*; do
    [ -f "$d/memledger.env" ] && [ ! -f "$d/train.yaml" ] && [ -f "$d/deepspeed_z3_4x16g.json" ] &&
        bad "$d: an env-only plan rewrote the DeepSpeed JSON"
    if [ -f "$d/deepspeed_z3_4x16g.json" ]; then
        changed=$(diff "$proj/deepspeed_z3_4x16g.json" "$d/deepspeed_z3_4x16g.json" | grep -c '^>')
        [ "$changed" -le 3 ] && ok || bad "$d: the DeepSpeed JSON was rewritten beyond the plan's changes ($changed lines)"
    fi
done
fit --write env-only --plan 1 >"$tmp/out" 2>&1
if grep -q '^1\. expandable segments' "$tmp/out" 2>/dev/null || [ -f "$proj/env-only/memledger.env" ]; then
    [ "$(ls "$proj/env-only")" = memledger.env ] && ok || bad "env-only plan wrote $(ls "$proj/env-only" | tr '\n' ' ')"
fi
# a plan that cannot be written whole leaves nothing: a directory where its YAML would go
mkdir -p "$proj/partial/train.yaml"
pb=$(sums "$proj/partial")
fit --write partial --plan 3 --force >/dev/null 2>"$tmp/err" && bad "fit --write into a DIR whose train.yaml is a directory succeeded"
[ "$(sums "$proj/partial")" = "$pb" ] && ok || bad "a failed fit --write left a partial plan: $(ls -a "$proj/partial")"
[ "$(grep -vc 'DeepSpeed config:' "$tmp/err")" -eq 1 ] && ok || bad "a failed fit --write printed more than one error: $(cat "$tmp/err")"
# DIR and its parents are made; a failed write removes the directories it made
fit --write new/sub --plan 3 >/dev/null 2>&1 && [ -f "$proj/new/sub/train.yaml" ] && ok || bad "fit --write new/sub: not written"
mkdir -p "$tmp/ro" && chmod 555 "$tmp/ro"
if [ "$(id -u)" != 0 ]; then
    fit --write "$tmp/ro/a/b" --plan 3 >/dev/null 2>&1 && bad "fit --write under a read-only directory succeeded"
    [ ! -e "$tmp/ro/a" ] && ok || bad "a failed fit --write left $tmp/ro/a"
fi
chmod 755 "$tmp/ro"
# a symbolic link in DIR at a name the plan writes: refused, the link and its target unchanged
mkdir -p "$proj/linked"
ln -s "$tmp/victim" "$proj/linked/train.yaml"
fit --write linked --plan 3 --force >/dev/null 2>"$tmp/err" && bad "fit --write wrote through a symbolic link"
grep -q 'symbolic link' "$tmp/err" && [ -L "$proj/linked/train.yaml" ] && [ "$(cat "$tmp/victim")" = "system file" ] &&
    [ "$(ls "$proj/linked")" = train.yaml ] && ok || bad "fit --write into a link: $(cat "$tmp/err"); $(ls -a "$proj/linked")"
# a hard link to an input in DIR is the input: refused even with --force
mkdir -p "$proj/hard"
ln "$proj/deepspeed_z3_4x16g.json" "$proj/hard/deepspeed_z3_4x16g.json"
fit --write hard --plan 3 --force >/dev/null 2>"$tmp/err" && bad "fit --write over a hard link of an input succeeded"
grep -q 'an input of this run' "$tmp/err" && ok || bad "fit --write over a hard link of an input: $(cat "$tmp/err")"
[ "$(sums "$proj" | grep -v '^\./\(out-\|new\|partial\|linked\|hard\|env-only\)')" = "$before" ] && ok ||
    bad "an input changed"
# the files fit writes have the user's umask
(cd "$proj" && umask 002 && "$bin" fit --config train.yaml --gpu dcu-16g --num-gpus 4 --write um --plan 3 >/dev/null 2>&1)
for f in "$proj"/um/*; do
    [ "$(stat -c %a "$f")" = 664 ] && ok || bad "fit --write under umask 002: $f has mode $(stat -c %a "$f")"
done

echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
