#!/bin/sh
# check_zh_cn.sh BINARY SOURCE_DIR - the zh_CN catalog is found and used: from the build tree's
# locale/ beside the binary, through MEMLEDGER_LOCALEDIR, and never under LC_ALL=C (what the golden
# tests and scripts get). glibc honours LANGUAGE only when the locale is not C/POSIX and exists:
# C.UTF-8 (built into glibc 2.35+) with LANGUAGE=zh_CN always works; LANG=zh_CN.UTF-8 alone is
# checked too where the zh_CN.UTF-8 locale is generated (scripts/install-deps.sh does it).
set -u
bin=$1
src=$2
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "$*"
    status=1
}
zh() { env -u LC_ALL -u LC_MESSAGES LANG=C.UTF-8 LANGUAGE=zh_CN "$@"; }

if ! locale -a 2>/dev/null | grep -qix 'c\.utf-\{0,1\}8'; then
    echo "skipped: no C.UTF-8 locale (locale -a), so glibc cannot select the catalog"
    exit 77
fi
zh "$bin" --help >"$tmp/help" 2>&1
grep -q '^用法：memledger' "$tmp/help" || fail "LANGUAGE=zh_CN: --help is not in Chinese: $(head -1 "$tmp/help")"
grep -q '^  train      根据模型' "$tmp/help" || fail "LANGUAGE=zh_CN: the command summaries are not in Chinese"
zh "$bin" trian 2>"$tmp/err"
grep -q '您是想用“train”吗' "$tmp/err" || fail "LANGUAGE=zh_CN: the did-you-mean error is not in Chinese: $(cat "$tmp/err")"
(cd "$src" && zh "$bin" train --config examples/seed-case/train.yaml --gpu 48G --num-gpus 4) >"$tmp/train"
grep -q '^结论：放得下$' "$tmp/train" || fail "LANGUAGE=zh_CN: the verdict is not in Chinese: $(grep -i verdict "$tmp/train")"

LC_ALL=C LANGUAGE=zh_CN "$bin" --help | grep -q '^usage: memledger' || fail "LC_ALL=C must stay English"
MEMLEDGER_LOCALEDIR=$tmp/none zh "$bin" --help | grep -q '^usage: memledger' ||
    fail "MEMLEDGER_LOCALEDIR=$tmp/none must leave the messages untranslated"
# A copy of the catalogs elsewhere, named by MEMLEDGER_LOCALEDIR.
cp -R "$(dirname "$bin")/locale" "$tmp/cat"
MEMLEDGER_LOCALEDIR=$tmp/cat zh "$bin" --help | grep -q '^用法：' || fail "MEMLEDGER_LOCALEDIR=$tmp/cat is not used"

if locale -a 2>/dev/null | grep -qix 'zh_CN\.utf-\{0,1\}8'; then
    env -u LC_ALL -u LC_MESSAGES -u LANGUAGE LANG=zh_CN.UTF-8 "$bin" --help | grep -q '^用法：' ||
        fail "LANG=zh_CN.UTF-8: --help is not in Chinese"
    checked="LANG=zh_CN.UTF-8 and LANGUAGE=zh_CN"
else
    checked="LANGUAGE=zh_CN (no zh_CN.UTF-8 locale here for LANG alone)"
fi
[ $status -eq 0 ] && echo "zh_CN: help, errors and the verdict in Chinese with $checked; MEMLEDGER_LOCALEDIR and LC_ALL=C honoured"
exit $status
