#!/bin/sh
# web-sources.sh DIR - cJSON's and libyaml's sources for the WebAssembly build, from Debian's
# source packages (the same versions the native build links), unpacked under DIR/src:
#   DIR/src/cjson/cJSON.c, DIR/src/libyaml/src/*.c, their headers under DIR/include as the -dev
#   packages install them (cjson/cJSON.h, yaml.h)
# The system's apt configuration is left alone: a private apt directory under DIR holds a
# "Types: deb-src" copy of /etc/apt/sources.list.d/debian.sources, its own lists and cache, and
# apt-get reads only that. Nothing lands in the repository. Idempotent: a second run does nothing.
set -eu
dir=${1:?usage: web-sources.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
src="$dir/src"
if [ -f "$src/cjson/cJSON.c" ] && [ -f "$src/libyaml/src/parser.c" ] && [ -f "$dir/include/yaml.h" ]; then
    echo "web-sources: present in $src"
    exit 0
fi
for tool in apt-get dpkg-source; do
    command -v "$tool" >/dev/null 2>&1 || { echo "web-sources: $tool is missing (Debian: apt-get install dpkg-dev)" >&2; exit 1; }
done

apt="$dir/apt"
mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/download" "$src"
sys=/etc/apt/sources.list.d/debian.sources
if [ -f "$sys" ]; then
    sed 's/^Types:.*/Types: deb-src/' "$sys" >"$apt/sources/debian-src.sources"
elif [ -f /etc/apt/sources.list ]; then
    # Older images: one-line format.
    sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list >"$apt/sources/debian-src.list"
else
    echo "web-sources: no Debian apt sources found (/etc/apt/sources.list.d/debian.sources)" >&2
    exit 1
fi

# Our own lists, cache and lock; as root, download without dropping to _apt (it cannot enter
# a private build directory).
set -- -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/sources" \
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Dir::State::status=/var/lib/dpkg/status \
    -o APT::Sandbox::User="$(id -un)" -o Debug::NoLocking=1
echo "web-sources: apt-get update (private lists in $apt)"
apt-get "$@" -qq update
echo "web-sources: apt-get source --download-only libyaml cjson"
(cd "$apt/download" && apt-get "$@" -qq source --download-only libyaml cjson)

unpack() { # NAME: the one .dsc of the source package NAME into $src/NAME
    dsc=$(ls "$apt/download/$1"_*.dsc 2>/dev/null | head -n 1)
    [ -n "$dsc" ] || { echo "web-sources: no $1 source package was downloaded" >&2; exit 1; }
    rm -rf "$src/$1"
    # The .dsc's checksums were verified by apt against the signed Release file.
    dpkg-source --no-check -x "$dsc" "$src/$1" >/dev/null
    echo "web-sources: $(basename "$dsc" .dsc) -> $src/$1"
}
unpack cjson
unpack libyaml
rm -f "$src"/*.orig.tar.* "$src"/*.debian.tar.*
# The include layout of Debian's -dev packages: <cjson/cJSON.h>, <yaml.h>.
mkdir -p "$dir/include/cjson"
cp "$src/cjson/cJSON.h" "$dir/include/cjson/cJSON.h"
cp "$src/libyaml/include/yaml.h" "$dir/include/yaml.h"
[ -f "$src/cjson/cJSON.c" ] && [ -f "$src/libyaml/src/parser.c" ] || {
    echo "web-sources: unexpected layout under $src" >&2
    exit 1
}
