#!/bin/sh
# bench_scan.sh BUILD_DIR [MIB] - memledger diagnose against grep on the same generated log.
# Writes a generated training log of MIB MiB (default 2048) to a temporary file, then times, in the
# same run: `grep -c "out of memory"` on it, and `memledger diagnose` on it (the whole scan +
# diagnosis, streamed from stdin in 64 KiB chunks), and reports both throughputs and the peak RSS
# of memledger (GNU time when present). The file is removed afterwards.
set -eu
build=$1
mib=${2:-2048}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/oom/bench_oom_scan" "$mib" "$tmp/train.log" >/dev/null
bytes=$(wc -c <"$tmp/train.log")
now() { date +%s.%N; }
cat "$tmp/train.log" >/dev/null # page cache warm for both
t0=$(now); grep -c "out of memory" "$tmp/train.log" >/dev/null || true; t1=$(now)
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M" -o "$tmp/rss" "$build/memledger" diagnose - <"$tmp/train.log" >/dev/null
else
    "$build/memledger" diagnose - <"$tmp/train.log" >/dev/null
fi
t2=$(now)
rss=$(cat "$tmp/rss" 2>/dev/null || echo unknown)
awk -v b="$bytes" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v rss="$rss" 'BEGIN {
    g = t1 - t0; m = t2 - t1;
    printf "log %.0f MiB\n", b / 1048576;
    printf "grep -c \"out of memory\"   %6.2f s  %6.0f MB/s\n", g, b / 1e6 / g;
    printf "memledger diagnose         %6.2f s  %6.0f MB/s  (%.2fx grep time), peak RSS %s KiB\n", m, b / 1e6 / m, m / g, rss;
}'
