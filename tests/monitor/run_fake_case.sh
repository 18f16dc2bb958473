#!/bin/sh
# run_fake_case.sh BINARY FAKES_DIR CASE_DIR - one `memledger watch` case on the fake vendor
# libraries (tests/fakes). CASE_DIR holds:
#   args             one line of arguments; @FAKES@ = FAKES_DIR, @TMP@ = a scratch directory
#   script           the fake's readings (FAKE_NVML_SCRIPT and FAKE_RSMI_SCRIPT point at it)
#   expected.stdout / expected.stderr / expected.rc   as in tests/golden (absent = empty / 0)
#   expected.timeline (optional)  the distinct records of the --out file @TMP@/timeline.jsonl
# The command runs in a scratch directory holding the case's files, a link @FAKES@ to FAKES_DIR and
# a directory @TMP@, and @FAKES@ and @TMP@ stay in the arguments as they are: memledger prints and
# wraps the placeholders themselves, so the output does not depend on where the tree was cloned.
# Timings vary from run to run, so "12.3 s", "N samples", "t_ms":N, "duration_ms":N and pids are
# blanked before the comparison. ML_GOLDEN_UPDATE=1 rewrites the expected files.
set -u
bin=$1
fakes=$2
case_dir=$3
case_dir=$(cd "$case_dir" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run=$tmp/run
mkdir "$run" "$run/@TMP@" || exit 1
ln -s "$fakes" "$run/@FAKES@" || exit 1
for f in "$case_dir"/*; do ln -s "$f" "$run/" || exit 1; done
args=$(cat "$case_dir/args")
cd "$run" || exit 1
# shellcheck disable=SC2086
env -i PATH="$PATH" LC_ALL=C TZ=UTC NO_COLOR=1 COLUMNS=100 \
    FAKE_NVML_SCRIPT="$case_dir/script" FAKE_RSMI_SCRIPT="$case_dir/script" \
    "$bin" $args >"$tmp/stdout.raw" 2>"$tmp/stderr.raw"
echo $? >"$tmp/rc"
blank() {
    sed -E -e "s|$run/@TMP@|@TMP@|g" -e "s|$fakes|@FAKES@|g" \
        -e 's/[0-9]+\.[0-9] s\b/N.N s/g' -e 's/[0-9]+ samples/N samples/g' \
        -e 's/"(t_ms|duration_ms|peak_t_ms|tree_peak_t_ms|pid|samples)":[0-9]+/"\1":N/g' \
        -e 's/^(  [0-9]+ +)[0-9]+( +sh )/\1PID\2/' "$1"
}
blank "$tmp/stdout.raw" >"$tmp/stdout"
blank "$tmp/stderr.raw" >"$tmp/stderr"
# The number of samples varies: the timeline is compared as its set of distinct records.
[ -f "$run/@TMP@/timeline.jsonl" ] && blank "$run/@TMP@/timeline.jsonl" | LC_ALL=C sort -u >"$tmp/timeline"
cd "$case_dir" || exit 1
if [ "${ML_GOLDEN_UPDATE:-}" = 1 ]; then
    cp "$tmp/stdout" expected.stdout
    if [ -s "$tmp/stderr" ]; then cp "$tmp/stderr" expected.stderr; else rm -f expected.stderr; fi
    if [ "$(cat "$tmp/rc")" != 0 ]; then cp "$tmp/rc" expected.rc; else rm -f expected.rc; fi
    if [ -f "$tmp/timeline" ]; then cp "$tmp/timeline" expected.timeline; else rm -f expected.timeline; fi
    echo "updated $case_dir"
    exit 0
fi
status=0
[ -f expected.rc ] && want_rc=$(cat expected.rc) || want_rc=0
if [ "$(cat "$tmp/rc")" != "$want_rc" ]; then
    echo "exit code: want $want_rc, got $(cat "$tmp/rc")"
    status=1
fi
for f in stdout stderr timeline; do
    want=expected.$f
    [ -f "$want" ] || want=/dev/null
    got=$tmp/$f
    [ -f "$got" ] || got=/dev/null
    if ! cmp -s "$got" "$want"; then
        echo "$f differs:"
        diff -u "$want" "$got" | head -60
        status=1
    fi
done
exit $status
