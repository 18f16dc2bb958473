#!/bin/sh
# install-deps.sh [--fuzz] - install the Debian packages memledger needs, and only those missing.
# Idempotent: prints what it checks and does; runs apt-get only when something is missing.
# Build: cmake, make, gcc, pkg-config, libcjson-dev, libyaml-dev, gettext (msgfmt, xgettext),
# lowdown (the man pages from docs/cli); tests: libcmocka-dev, man-db (man -l), locales (the
# zh_CN.UTF-8 locale, generated here, for the zh_CN catalog test), clang-format (the layout
# check, tests/check_format.sh), python3-venv,
# python3-setuptools and python3-wheel (the offline pip install of the Python hook);
# --fuzz adds clang and its runtime (libFuzzer, sanitizers).
set -eu
pkgs="cmake make gcc libc6-dev pkg-config libcjson-dev libyaml-dev libcmocka-dev gettext lowdown man-db locales"
pkgs="$pkgs clang-format"
pkgs="$pkgs python3 python3-venv python3-setuptools python3-wheel"
if [ "${1:-}" = "--fuzz" ]; then
    pkgs="$pkgs clang libclang-rt-dev"
fi
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
have_zh() { locale -a 2>/dev/null | grep -qix 'zh_CN\.utf-\{0,1\}8'; }
if [ -z "$missing" ] && have_zh; then
    echo "install-deps: all present:$(echo " $pkgs" | sed 's/ / /g'), locale zh_CN.UTF-8"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    [ -n "$missing" ] && echo "install-deps: not root and no sudo; install these Debian packages:$missing" >&2
    have_zh || echo "install-deps: not root and no sudo; generate the zh_CN.UTF-8 locale (localedef -i zh_CN -f UTF-8 zh_CN.UTF-8)" >&2
    exit 1
fi
if [ -n "$missing" ]; then
    echo "install-deps: missing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    echo "install-deps: apt-get update"
    $sudo apt-get update -qq
    echo "install-deps: apt-get install$missing"
    # shellcheck disable=SC2086
    $sudo apt-get install -y -qq --no-install-recommends $missing
fi
if ! have_zh; then
    # Debian's way (kept when the locales package regenerates its archive): enable the line in
    # /etc/locale.gen, then locale-gen; elsewhere localedef directly.
    if [ -f /etc/locale.gen ] && command -v locale-gen >/dev/null 2>&1; then
        echo "install-deps: zh_CN.UTF-8 in /etc/locale.gen, locale-gen"
        if grep -q '^# *zh_CN.UTF-8 UTF-8' /etc/locale.gen; then
            $sudo sed -i 's/^# *\(zh_CN.UTF-8 UTF-8\)/\1/' /etc/locale.gen
        elif ! grep -q '^zh_CN.UTF-8 UTF-8' /etc/locale.gen; then
            echo 'zh_CN.UTF-8 UTF-8' | $sudo tee -a /etc/locale.gen >/dev/null
        fi
        $sudo locale-gen --keep-existing
    else
        echo "install-deps: localedef zh_CN.UTF-8"
        $sudo localedef -i zh_CN -c -f UTF-8 -A /usr/share/locale/locale.alias zh_CN.UTF-8
    fi
fi
echo "install-deps: done"
