#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every libFuzzer target for a fixed time, as CI does:
#   tests/fuzz/run-fuzz.sh SECONDS
#   tests/fuzz/run-fuzz.sh --build-only     (the build, nothing run)
# Builds build/fuzz (clang, ASan + UBSan) when missing, then for each
# target runs its regression inputs (tests/fuzz/regressions/<target>/)
# once and fuzzes for SECONDS from a copy of the committed corpus
# (tests/fuzz/corpus/<target>/, copied to build/fuzz/work/<target>/; the
# committed corpus is never modified), two targets at a time. Prints TAP
# on stdout; the exit status is non-zero when a target failed. Artifacts
# (crash-*, timeout-*) and logs stay in build/fuzz/work/<target>/.
set -uo pipefail
build_only=0
if [ "${1:-}" = --build-only ]; then
    build_only=1
    shift
fi
secs=${1:-45}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
build=build/fuzz
work=$build/work
targets="fuzz-roce-decode fuzz-wire-rx fuzz-state-load fuzz-device fuzz-wqc-diff"
opts=(-rss_limit_mb=2048 -timeout=10 -print_final_stats=1)

mkdir -p "$work"
if [ ! -e $build/build.ninja ]; then
    CC=clang meson setup $build -Dfuzzing=true \
        -Db_sanitize=address,undefined >"$work/setup.log" 2>&1 || {
        echo "1..1"
        echo "not ok 1 - meson setup $build: $(tail -n 1 "$work/setup.log")"
        exit 1
    }
fi
if ! ninja -C $build $(for t in $targets; do echo tests/fuzz/$t; done) \
        >"$work/build.log" 2>&1; then
    echo "1..1"
    echo "not ok 1 - build: $(grep -m1 -E 'error|FAILED' "$work/build.log")"
    exit 1
fi
[ $build_only = 1 ] && exit 0

# The first line of a libFuzzer/sanitizer report in a log.
report() {
    grep -m1 -E 'call bound exceeded|==[0-9]+==ERROR|check failed|'`
               `'runtime error|guard page|'`
               `'deadly signal|ALARM|out-of-memory|SUMMARY' "$1" ||
        tail -n 1 "$1"
}

# fuzz_target N TARGET: its TAP line into $work/TARGET.tap; status 1 on a
# finding
fuzz_target() {
    local n=$1 t=$2
    local bin=$build/tests/fuzz/$t dir=$work/$t src=$t rc execs regs
    rm -rf "$dir"
    mkdir -p "$dir/corpus"
    # fuzz-wqc-diff runs fuzz-device's programs: its corpus
    [ $t = fuzz-wqc-diff ] && src=fuzz-device
    if [ -d tests/fuzz/corpus/$src ]; then
        cp tests/fuzz/corpus/$src/* "$dir/corpus/" 2>/dev/null
    fi
    regs=(tests/fuzz/regressions/$t/*)
    if [ -e "${regs[0]}" ]; then
        if ! RNIC_FUZZ_SEEDS= "$bin" "${opts[@]}" "${regs[@]}" \
                >"$dir/regressions.log" 2>&1; then
            echo "not ok $n - $t: regression: $(report "$dir/regressions.log")" >"$work/$t.tap"
            return 1
        fi
    fi
    timeout $((secs + 300)) "$bin" "${opts[@]}" -max_total_time="$secs" \
        -artifact_prefix="$dir/" "$dir/corpus" >"$dir/fuzz.log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log")
    if [ $rc -eq 0 ]; then
        echo "ok $n - $t: ${execs:-0} execs, no finding" >"$work/$t.tap"
    else
        echo "not ok $n - $t: $(report "$dir/fuzz.log")" >"$work/$t.tap"
        return 1
    fi
}

# two targets at a time (one core each), TAP in order
set -- $targets
echo "1..$#"
n=0
status=0
for t in $targets; do
    n=$((n + 1))
    rm -f "$work/$t.tap"
    [ "$(jobs -pr | wc -l)" -lt 2 ] || wait -n
    fuzz_target $n $t &
done
wait
n=0
for t in $targets; do
    n=$((n + 1))
    [ -s "$work/$t.tap" ] || echo "not ok $n - $t: no result" >"$work/$t.tap"
    cat "$work/$t.tap"
    ! grep -q '^not ok' "$work/$t.tap" || status=1
done
exit $status
