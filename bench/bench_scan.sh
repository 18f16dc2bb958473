#!/bin/sh
# bench_scan.sh BUILD_DIR [MIB] [RUNS] - memledger diagnose against grep on the same generated log.
# Writes a generated training log of MIB MiB (default 1024) to a temporary file and, RUNS times
# (default 3), times in turn `grep -c "out of memory"` on it and `memledger diagnose -` on it (the
# whole scan and diagnosis, stdin redirected from the file: mapped 256 KiB at a time, src/in_map.c,
# the next window marked on a second thread where two CPUs are usable, src/ahead.c); reports the median (and the best)
# of each, the ratio of the medians, and memledger's peak RSS (GNU time when present). Then the scanner alone, in memory
# (bench_oom_scan, no I/O), with the SIMD pass 1 and with the scalar one (ML_OOM_NARROW=1).
# The machine's other load moves every figure: compare figures of the same run.
set -eu
build=$1
mib=${2:-1024}
runs=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/oom/bench_oom_scan" "$mib" "$tmp/train.log" >/dev/null
bytes=$(wc -c <"$tmp/train.log")
now() { date +%s.%N; }
cat "$tmp/train.log" >/dev/null # page cache warm for both
: >"$tmp/times"
i=0
while [ "$i" -lt "$runs" ]; do
    t0=$(now)
    grep -c "out of memory" "$tmp/train.log" >/dev/null || true
    t1=$(now)
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f "%M" -o "$tmp/rss" "$build/memledger" diagnose - <"$tmp/train.log" >/dev/null
    else
        "$build/memledger" diagnose - <"$tmp/train.log" >/dev/null
    fi
    t2=$(now)
    echo "$t0 $t1 $t2" >>"$tmp/times"
    i=$((i + 1))
done
rss=$(cat "$tmp/rss" 2>/dev/null || echo unknown)
awk -v b="$bytes" -v rss="$rss" '
    { g[NR] = $2 - $1; m[NR] = $3 - $2 }
    function median(a, n,    i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        n = NR; gm = median(g, n); mm = median(m, n); gb = g[1]; mb = m[1]; # sorted by median()
        printf "log %.0f MiB, %d runs: median (best)\n", b / 1048576, n;
        printf "grep -c \"out of memory\"   %6.2f s  %6.0f MB/s (%.0f)\n", gm, b / 1e6 / gm, b / 1e6 / gb;
        printf "memledger diagnose         %6.2f s  %6.0f MB/s (%.0f)  %.2fx grep time, peak RSS %s KiB\n", mm, b / 1e6 / mm,
               b / 1e6 / mb, mm / gm, rss;
    }' "$tmp/times"
scan() { "$@" | sed -n 's/.* \([0-9]*\) MB\/s.*/\1/p'; }
simd=$(scan "$build/tests/oom/bench_oom_scan" "$mib")
scalar=$(ML_OOM_NARROW=1 scan "$build/tests/oom/bench_oom_scan" "$mib")
echo "scanner alone, in memory: $simd MB/s with the SIMD pass 1 (where the CPU has AVX2), $scalar MB/s with the scalar one"
