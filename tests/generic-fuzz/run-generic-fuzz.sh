#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# QEMU's generic-fuzz on the rnic, for a fixed time, as TAP on stdout.
#
#   tests/generic-fuzz/run-generic-fuzz.sh [SECONDS] [TARGET...]
#
# TARGET is a configuration that scripts/build-qemu.sh adds to QEMU's
# tests/qtest/fuzz/generic_fuzz_configs.h: 'rnic' (one device alone on a
# hub: BAR0 registers, BAR2 doorbells, the MSI-X table, DMA into guest
# memory, clock steps), 'rnic-scm' (the same with a memory window) or
# 'rnic-pair' (two devices on one hub, each one's frames are the other's
# receive path). Default: rnic.
#
# Needs the clang ASan/UBSan/libFuzzer QEMU build (QEMU_SANITIZE=1
# scripts/build-qemu.sh: build/qemu/build-asan/qemu-fuzz-x86_64).
#
# Each target first replays every input in tests/generic-fuzz/regressions/
# (one TAP line), then fuzzes SECONDS from a fresh copy of the committed
# corpus tests/generic-fuzz/corpus/ in build/generic-fuzz/TARGET/corpus
# (the committed corpus is never written). A finding is kept in
# build/generic-fuzz/TARGET/artifacts/ and named in the 'not ok' line; the
# full log is build/generic-fuzz/TARGET/fuzz.log. Exit status 1 on a finding.
#
# Environment: RNIC_FUZZ_QEMU (default build/qemu/build-asan/qemu-fuzz-x86_64),
# RNIC_FUZZ_CORPUS_OUT (a directory to fuzz into instead of a fresh copy,
# kept: for long runs), RNIC_FUZZ_EXTRA (more libFuzzer flags).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} = 0 ] && targets=(rnic)
fuzzer=${RNIC_FUZZ_QEMU:-$top/build/qemu/build-asan/qemu-fuzz-x86_64}

# UBSan stops at the first report (QEMU's --enable-ubsan lets it recover);
# leaks are checked by libFuzzer (-detect_leaks=1, its default).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:symbolize=1}
# libFuzzer limits: a QEMU with 128 MiB of guest RAM under ASan stays far
# below 3 GiB; one input (a few hundred operations) takes milliseconds.
limits=(-rss_limit_mb=3072 -timeout=25 -max_len=4096)

echo "1..$((2 * ${#targets[@]}))"
if [ ! -x "$fuzzer" ]; then
    n=0
    for t in "${targets[@]}"; do
        for what in "regressions replay" "fuzz ${secs}s"; do
            n=$((n + 1))
            echo "not ok $n - generic-fuzz-$t: $what: $fuzzer not built (QEMU_SANITIZE=1 scripts/build-qemu.sh)"
        done
    done
    exit 1
fi

status=0
n=0
for t in "${targets[@]}"; do
    work=$top/build/generic-fuzz/$t
    mkdir -p "$work/artifacts"
    rm -f "$work"/artifacts/*
    args=(--fuzz-target="generic-fuzz-$t" "${limits[@]}"
          -artifact_prefix="$work/artifacts/")

    # 1. every kept reproducer must run clean
    n=$((n + 1))
    mapfile -t regr < <(find "$here/regressions" -type f ! -name '*.md' ! -name '.*' 2>/dev/null | sort)
    if [ ${#regr[@]} = 0 ]; then
        echo "ok $n - generic-fuzz-$t: regressions replay # SKIP no reproducer kept"
    elif "$fuzzer" "${args[@]}" "${regr[@]}" >"$work/regressions.log" 2>&1; then
        echo "ok $n - generic-fuzz-$t: regressions replay (${#regr[@]} inputs)"
    else
        echo "not ok $n - generic-fuzz-$t: regressions replay (see $work/regressions.log)"
        tail -n 30 "$work/regressions.log" | sed 's/^/# /'
        status=1
    fi

    # 2. fuzz for $secs seconds from a copy of the committed corpus
    n=$((n + 1))
    corpus=${RNIC_FUZZ_CORPUS_OUT:-}
    if [ -z "$corpus" ]; then
        corpus=$work/corpus
        rm -rf "$corpus"
        mkdir -p "$corpus"
        cp "$here"/corpus/* "$corpus"/ 2>/dev/null || true
    fi
    mkdir -p "$corpus"
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$fuzzer" "${args[@]}" -max_total_time="$secs" -print_final_stats=1 \
        ${RNIC_FUZZ_EXTRA:-} "$corpus" >"$work/fuzz.log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -1)
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$work/fuzz.log" | tail -1 | tr -d '#')
    cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$work/fuzz.log" | tail -1)
    rate=$(( ${execs:-0} / (took > 0 ? took : 1) ))
    found=$(ls "$work"/artifacts/ 2>/dev/null | head -1)
    what="generic-fuzz-$t: ${execs:-0} executions in ${took}s (${rate}/s, ${cov:-no coverage line})"
    if [ "$rc" = 0 ] && [ -z "$found" ] && [ -n "$execs" ]; then
        echo "ok $n - $what"
    else
        echo "not ok $n - $what: exit $rc${found:+, finding $work/artifacts/$found} (log $work/fuzz.log)"
        grep -E -A25 '^==[0-9]+==ERROR|runtime error|^SUMMARY|Blocked re-entrant|ERROR: libFuzzer' "$work/fuzz.log" | head -n 40 | sed 's/^/# /'
        status=1
    fi
done
exit $status
