#!/bin/sh
# check_seed_svg.sh BINARY SRC - docs/seed.svg is what `make svg-docs` draws today, and --svg
# keeps its promises: the picture is written whole, an existing file is kept without --force and
# replaced with it.
set -u
bin=$1
src=$2
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
seed="$src/examples/seed-case"
args="train --config $seed/train.yaml --gpu dcu-16g --num-gpus 4"
# shellcheck disable=SC2086
"$bin" $args --svg "$tmp/seed.svg" >/dev/null || { echo "memledger $args --svg failed"; exit 1; }
if ! cmp -s "$tmp/seed.svg" "$src/docs/seed.svg"; then
    echo "docs/seed.svg is not what memledger draws now: run make svg-docs and review the picture"
    exit 1
fi
echo "old" >"$tmp/kept.svg"
# shellcheck disable=SC2086
if "$bin" $args --svg "$tmp/kept.svg" >/dev/null 2>&1 || [ "$(cat "$tmp/kept.svg")" != "old" ]; then
    echo "--svg overwrote an existing file without --force"
    exit 1
fi
# shellcheck disable=SC2086
"$bin" $args --svg "$tmp/kept.svg" --force >/dev/null && cmp -s "$tmp/kept.svg" "$tmp/seed.svg" ||
    { echo "--svg --force did not replace the file with the picture"; exit 1; }
ls -a "$tmp" | grep -q '\.tmp\.' && { echo "a temporary file was left behind"; exit 1; }
echo "docs/seed.svg is current; --svg keeps and replaces files as documented"
