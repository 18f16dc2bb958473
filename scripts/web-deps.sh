#!/bin/sh
# web-deps.sh - install what `make web` and `make web-test` need, and only what is missing
# (Debian 12): emscripten (emcc; pulls in clang, lld, binaryen, nodejs), chromium (the browser
# test), fonts-dejavu-core (the page's and the picture's first font; chromium only recommends
# fonts), dpkg-dev (dpkg-source, for cJSON's and libyaml's source packages). node is checked as
# a command: a NodeSource nodejs ships its own and must not be replaced by Debian's.
# Idempotent, like install-deps.sh; runs apt-get only when something is missing.
set -eu
pkgs="emscripten chromium fonts-dejavu-core dpkg-dev"
missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
if [ -z "$missing" ]; then
    echo "web-deps: all present: $pkgs node"
    exit 0
fi
echo "web-deps: missing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "web-deps: not root and no sudo; install these Debian packages:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "web-deps: apt-get update"
$sudo apt-get update -qq
echo "web-deps: apt-get install$missing"
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing
echo "web-deps: done"
