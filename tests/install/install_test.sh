#!/bin/sh
# install_test.sh CMAKE BUILD_DIR SOURCE_DIR - `cmake --install` into a scratch DESTDIR (what
# `make install DESTDIR=... PREFIX=...` runs), then the installed tree is used the way a user
# would: the binary (--version, the seed example), its catalog found from the tree itself (also
# after the tree is moved), every man page through `man -l`, the bash completion sourced
# (`complete -p`, then a completion), zsh and fish completions where those shells exist, and the
# Python hook from share/memledger/python (python3 -m memledger_hook; pip install of the package
# into a virtual environment, offline).
set -u
cmake=$1
build=$2
src=$3
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*"
    status=1
}
skip() { echo "skipped: $*"; }
prefix=/opt/memledger-test
dest=$tmp/dest
root=$dest$prefix
DESTDIR=$dest "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
bin=$root/bin/memledger
version=$(sed -n 's/^project(memledger VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")

# ---- the binary ------------------------------------------------------------------------------
[ "$("$bin" --version)" = "memledger $version" ] || fail "installed --version: $("$bin" --version)"
(cd "$src" && LC_ALL=C "$bin" train --config examples/seed-case/train.yaml --gpu 16G --num-gpus 4) >"$tmp/train" ||
    true
grep -q '^verdict: ' "$tmp/train" || fail "installed binary: no verdict from the seed example"

# ---- the catalog, found from the installed tree (and after moving it) --------------------------
for mo in "$build"/locale/*/LC_MESSAGES/memledger.mo; do
    [ -e "$mo" ] || continue
    lang=$(basename "$(dirname "$(dirname "$mo")")")
    [ -f "$root/share/locale/$lang/LC_MESSAGES/memledger.mo" ] || fail "share/locale/$lang/LC_MESSAGES/memledger.mo not installed"
done
if [ -f "$root/share/locale/zh_CN/LC_MESSAGES/memledger.mo" ] && locale -a 2>/dev/null | grep -qix 'c\.utf-\{0,1\}8'; then
    zh() { env -u LC_ALL -u LC_MESSAGES -u MEMLEDGER_LOCALEDIR LANG=C.UTF-8 LANGUAGE=zh_CN "$@"; }
    zh "$bin" --help | grep -q '^用法：' || fail "the installed binary does not find share/locale/zh_CN"
    mv "$root" "$tmp/moved"
    zh "$tmp/moved/bin/memledger" --help | grep -q '^用法：' || fail "a moved install does not find its catalog"
    mv "$tmp/moved" "$root"
else
    skip "catalog lookup (no zh_CN catalog or no C.UTF-8 locale)"
fi

# ---- man pages -------------------------------------------------------------------------------
pages=$(ls "$root/share/man/man1/"*.1 2>/dev/null)
if [ -z "$pages" ]; then
    if [ -d "$build/man/man1" ]; then fail "man pages built but not installed"; else skip "man pages (not built: no lowdown)"; fi
elif ! command -v man >/dev/null 2>&1; then
    skip "man -l (no man; Debian: man-db)"
else
    n=0
    for p in $pages; do
        name=$(basename "$p" .1)
        MANWIDTH=80 man -l "$p" >"$tmp/man" 2>/dev/null || fail "man -l $p"
        for sec in NAME SYNOPSIS DESCRIPTION 'EXIT STATUS' 'SEE ALSO'; do
            grep -q "^$sec" "$tmp/man" || fail "$name(1) has no $sec section"
        done
        grep -qE "^ +$name +- " "$tmp/man" || fail "$name(1): NAME is not '$name - ...'"
        n=$((n + 1))
    done
    MANWIDTH=80 man -l "$root/share/man/man1/memledger.1" >"$tmp/man" 2>/dev/null
    for sec in OPTIONS ENVIRONMENT FILES EXAMPLES; do
        grep -q "^$sec" "$tmp/man" || fail "memledger(1) has no $sec section"
    done
    grep -q 'MEMLEDGER_LOCALEDIR' "$tmp/man" || fail "memledger(1) does not document MEMLEDGER_LOCALEDIR"
    [ "$n" -ge 2 ] || fail "only $n man pages"
fi

# ---- completions -----------------------------------------------------------------------------
bc=$root/share/bash-completion/completions/memledger
if [ ! -f "$bc" ]; then
    fail "bash completion not installed"
elif ! command -v bash >/dev/null 2>&1; then
    skip "bash completion (no bash)"
else
    out=$(bash -c '
        source "$1" || exit 1
        complete -p memledger || exit 1
        comp() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _memledger; echo "${COMPREPLY[*]}"; }
        comp memledger tr
        comp memledger train --me
        comp memledger train --method ""
        comp memledger fit --serve --engine ""' bash "$bc" 2>&1)
    [ "$(echo "$out" | sed -n 1p)" = "complete -F _memledger memledger" ] || fail "bash: complete -p memledger: $out"
    [ "$(echo "$out" | sed -n 2p)" = "train" ] || fail "bash: 'memledger tr' completes to '$(echo "$out" | sed -n 2p)'"
    [ "$(echo "$out" | sed -n 3p)" = "--method" ] || fail "bash: 'train --me' completes to '$(echo "$out" | sed -n 3p)'"
    [ "$(echo "$out" | sed -n 4p)" = "full lora qlora freeze" ] || fail "bash: --method values: '$(echo "$out" | sed -n 4p)'"
    [ "$(echo "$out" | sed -n 5p)" = "vllm sglang" ] || fail "bash: fit --serve --engine values: '$(echo "$out" | sed -n 5p)'"
fi
zc=$root/share/zsh/site-functions/_memledger
[ -f "$zc" ] || fail "zsh completion not installed"
if command -v zsh >/dev/null 2>&1; then
    zsh -n "$zc" || fail "zsh -n $zc"
else
    skip "zsh completion syntax (no zsh)"
fi
fc=$root/share/fish/vendor_completions.d/memledger.fish
[ -f "$fc" ] || fail "fish completion not installed"
if command -v fish >/dev/null 2>&1; then
    got=$(fish -c "source $fc; complete -C'memledger train --method '" 2>&1 | cut -f1 | sort | tr '\n' ' ')
    [ "$got" = "freeze full lora qlora " ] || fail "fish: train --method completes to '$got'"
else
    skip "fish completion (no fish)"
fi

# ---- the Python hook ---------------------------------------------------------------------------
pyd=$root/share/memledger/python
[ -f "$pyd/pyproject.toml" ] && [ -f "$pyd/memledger_hook.py" ] || fail "the Python hook is not in share/memledger/python"
if command -v python3 >/dev/null 2>&1; then
    got=$(cd "$tmp" && PYTHONPATH=$pyd python3 -m memledger_hook --version 2>&1)
    [ "$got" = "memledger_hook $version" ] || fail "python3 -m memledger_hook --version: '$got' (want $version)"
    (cd "$tmp" && PYTHONPATH=$pyd python3 -m memledger_hook) | grep -q 'memledger compare' ||
        fail "python3 -m memledger_hook prints no usage"
    # pip install, offline, into a virtual environment of a Python that has setuptools and wheel
    # (Debian: python3-venv, python3-setuptools, python3-wheel); pip builds in the tree it is
    # given, so the package source is copied first.
    venv_py=
    for py in python3 /usr/bin/python3; do
        if "$py" -c 'import ensurepip, setuptools, wheel' >/dev/null 2>&1 &&
            "$py" -m venv --system-site-packages "$tmp/venv" >/dev/null 2>&1; then
            venv_py=$py
            break
        fi
    done
    if [ -n "$venv_py" ]; then
        cp -R "$pyd" "$tmp/pkg"
        if "$tmp/venv/bin/python" -m pip install --no-index --no-build-isolation --quiet "$tmp/pkg" >"$tmp/pip.log" 2>&1; then
            got=$(cd "$tmp" && "$tmp/venv/bin/python" -m memledger_hook --version 2>&1)
            [ "$got" = "memledger_hook $version" ] || fail "pip-installed: python -m memledger_hook --version: '$got'"
            "$tmp/venv/bin/memledger-hook" --version >/dev/null 2>&1 || fail "pip-installed: no memledger-hook script"
        else
            cat "$tmp/pip.log"
            fail "pip install --no-index --no-build-isolation of share/memledger/python"
        fi
    else
        skip "pip install (no python3 with venv, setuptools and wheel; Debian: python3-venv, python3-setuptools, python3-wheel)"
    fi
else
    skip "the Python hook (no python3)"
fi

[ $status -eq 0 ] && echo "install: $prefix in a DESTDIR: binary, catalog, man pages, completions and hook work"
exit $status
