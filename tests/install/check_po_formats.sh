#!/bin/sh
# check_po_formats.sh POT [BINARY SOURCE_DIR] - a full translation of the catalog passes msgfmt --check: every
# message of POT is pseudo-translated (pseudo_translate.py: letters to fullwidth, real printf
# directives kept), and msgfmt --check must accept the result. It fails on a message xgettext
# marked c-format for a percent sign that is no directive ("5% headroom", "20% for"): such a
# message needs /* xgettext:no-c-format */ or another wording. With BINARY, the pseudo-catalog
# (every message two columns a letter, as Chinese is) is installed as zh_CN and the seed case's
# train, infer, diagnose and fit reports must fit COLUMNS=80 (wc -L counts the display columns).
set -u
pot=$1
bin=${2:-}
src=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
msgen "$pot" -o "$tmp/en.po" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
sed -i 's/charset=CHARSET/charset=UTF-8/' "$tmp/en.po"
python3 "$here/pseudo_translate.py" "$tmp/en.po" "$tmp/pseudo.po" 2>"$tmp/err" ||
    { cat "$tmp/err"; exit 1; }
if ! msgfmt --check -o /dev/null "$tmp/pseudo.po" 2>"$tmp/err"; then
    echo "a full translation fails msgfmt --check (mark such messages /* xgettext:no-c-format */):"
    sed "s|$tmp/pseudo.po|pseudo-translation|" "$tmp/err" | head -20
    exit 1
fi
n=$(grep -c '^msgid ' "$tmp/pseudo.po")
echo "po formats: a pseudo-translation of all $n messages passes msgfmt --check"
[ -n "$bin" ] || exit 0
locale -a 2>/dev/null | grep -qix 'c\.utf-\{0,1\}8' || { echo "no C.UTF-8 locale: the width check is skipped"; exit 0; }
mkdir -p "$tmp/locale/zh_CN/LC_MESSAGES"
msgfmt -o "$tmp/locale/zh_CN/LC_MESSAGES/memledger.mo" "$tmp/pseudo.po" || exit 1
cd "$src" || exit 1
status=0
seed="--config examples/seed-case/train.yaml --gpu dcu-16g --num-gpus 4"
for args in "train $seed" "fit $seed" "diagnose examples/seed-case/oom.log --config examples/seed-case/train.yaml" \
    "infer llama-3.1-8b --engine vllm --gpu rtx4090" "fit llama-3.1-8b --serve --gpu rtx4090"; do
    # shellcheck disable=SC2086
    env -i PATH="$PATH" LANG=C.UTF-8 LANGUAGE=zh_CN MEMLEDGER_LOCALEDIR="$tmp/locale" COLUMNS=80 "$bin" $args \
        >"$tmp/out" 2>/dev/null
    grep -q 'ｔ' "$tmp/out" || { echo "$args: the pseudo-catalog was not used"; status=1; }
    w=$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")
    [ "$w" -le 80 ] || { echo "$args in the pseudo-translation at COLUMNS=80: a line is $w columns wide"; status=1; }
done
[ $status -eq 0 ] && echo "po formats: the fully translated seed reports fit 80 columns"
exit $status
