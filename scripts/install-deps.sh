#!/bin/sh
# install-deps.sh [--fuzz] - install the Debian packages memledger needs, and only those missing.
# Idempotent: prints what it checks and does; runs apt-get only when something is missing.
# Build: cmake, make, gcc, pkg-config, libcjson-dev, libyaml-dev; tests: libcmocka-dev;
# --fuzz adds clang and its runtime (libFuzzer, sanitizers).
set -eu
pkgs="cmake make gcc libc6-dev pkg-config libcjson-dev libyaml-dev libcmocka-dev"
if [ "${1:-}" = "--fuzz" ]; then
    pkgs="$pkgs clang libclang-rt-dev"
fi
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all present:$(echo " $pkgs" | sed 's/ / /g')"
    exit 0
fi
echo "install-deps: missing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "install-deps: not root and no sudo; install these Debian packages:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: apt-get update"
$sudo apt-get update -qq
echo "install-deps: apt-get install$missing"
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
echo "install-deps: done"
