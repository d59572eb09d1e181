#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The test command (README; .ci/run runs exactly this): installs what is
# missing, builds what changed, runs every suite and ends with one line
#   N passed, N failed, N skipped
# summing all suites. Exit status non-zero on any failure.
#
# Suites: unit (engine, no QEMU), unit-asan (the same built with gcc's
# ASan/UBSan), qtest (QEMU's framework, --suite rnic), asan (the same qtests
# against QEMU built with clang ASan/UBSan/libFuzzer), fuzz (QEMU's
# generic-fuzz on the rnic and the engine's libFuzzer targets, each for a
# fixed time from the committed corpus), guest (TCG guests with -device rnic).
# The default order runs the guest suite before asan and fuzz, with the
# clang-sanitized QEMU they need building meanwhile at nice 19 (it takes
# what CPU the guests leave idle).
#   RNIC_SUITES="unit qtest" scripts/run-tests.sh    a subset
#   RNIC_FUZZ_SECONDS=12                             fuzzing time per engine target
#   RNIC_GENERIC_FUZZ_SECONDS=20                     ... per generic-fuzz target (rnic, rnic-scm)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
suites=${RNIC_SUITES:-unit unit-asan qtest guest asan fuzz}
logs=$top/build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.tap "$logs"/*.json
summary=()
status=0

step() { echo; echo "=== $* === ($(date -u +%H:%M:%S), ${SECONDS} s in)"; }

# unit_suite <meson build dir> <json name> [meson setup options...]
unit_suite() {
    local dir=$1 name=$2
    shift 2
    [ -e "$dir/build.ninja" ] || meson setup "$dir" "$@" >/dev/null
    if ninja -C "$dir" >"$logs/$name-build.log" 2>&1; then
        meson test -C "$dir" --suite unit --print-errorlogs \
            --num-processes 2 | tail -n 15
        cp "$dir/meson-logs/testlog.json" "$logs/$name.json"
    else
        tail -30 "$logs/$name-build.log"
    fi
    summary+=(--json "$logs/$name.json")
}

# asan_qemu: the clang ASan/UBSan/libFuzzer QEMU (asan and fuzz suites);
# waits for the background build if one was started (asan_qemu_background)
asan_pid=
asan_qemu() {
    if [ -n "$asan_pid" ]; then
        wait "$asan_pid"
        asan_status=$?
        asan_pid=
        [ "$asan_status" = 0 ] && return 0
    elif QEMU_SANITIZE=1 scripts/build-qemu.sh >"$logs/qemu-asan-build.log" 2>&1; then
        return 0
    fi
    tail -30 "$logs/qemu-asan-build.log"
    return 1
}
# ... started now at the lowest priority, when a later suite needs it
asan_qemu_background() {
    local later=${suites#*guest}
    case " $later " in
    *" asan "*|*" fuzz "*)
        # and the engine's libFuzzer targets (their own build reports a failure)
        { QEMU_SANITIZE=1 nice -n 19 scripts/build-qemu.sh >"$logs/qemu-asan-build.log" 2>&1
          rc=$?
          nice -n 19 tests/fuzz/run-fuzz.sh --build-only >/dev/null 2>&1
          exit $rc; } &
        asan_pid=$!
        echo "(the clang-sanitized QEMU and the fuzz targets build meanwhile at nice 19, pid $asan_pid)"
        ;;
    esac
}

step "host packages"
if [ "$(id -u)" = 0 ]; then
    scripts/setup-host.sh || exit 1
else
    sudo -n scripts/setup-host.sh 2>/dev/null || scripts/setup-host.sh || exit 1
fi

for suite in $suites; do
    case $suite in
    unit)
        step "unit: engine build and tests"
        unit_suite build/project unit
        ;;
    unit-asan)
        # meson test sets ASAN_OPTIONS/UBSAN_OPTIONS (halt and abort on the
        # first report, leak detection on)
        step "unit-asan: the unit tests built with ASan and UBSan (gcc)"
        unit_suite build/project-asan unit-asan -Db_sanitize=address,undefined
        ;;
    qtest)
        step "qtest: QEMU with the rnic overlay"
        if scripts/build-qemu.sh >"$logs/qemu-build.log" 2>&1; then
            grep -E '^build-qemu: (QEMU source|done)' "$logs/qemu-build.log"
            meson test -C build/qemu/build --no-rebuild --suite rnic \
                --suite rnic-wqc-off --print-errorlogs | tail -n 15
            cp build/qemu/build/meson-logs/testlog.json "$logs/qtest.json"
        else
            tail -30 "$logs/qemu-build.log"
        fi
        summary+=(--json "$logs/qtest.json")
        ;;
    asan)
        step "asan: the qtests against QEMU built with ASan and UBSan"
        if asan_qemu; then
            # leaks of the qtest processes themselves are not the device's
            ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 \
                meson test -C build/qemu/build-asan --no-rebuild --suite rnic \
                --print-errorlogs | tail -n 15
            cp build/qemu/build-asan/meson-logs/testlog.json "$logs/asan.json"
        fi
        summary+=(--json "$logs/asan.json")
        ;;
    fuzz)
        step "fuzz: generic-fuzz on the rnic, the engine's libFuzzer targets"
        # the fuzzer is printed as missing by the script's TAP if the build failed
        asan_qemu
        tests/generic-fuzz/run-generic-fuzz.sh "${RNIC_GENERIC_FUZZ_SECONDS:-20}" rnic rnic-scm |
            tee "$logs/fuzz-generic.tap"
        summary+=(--tap "$logs/fuzz-generic.tap")
        if [ -x tests/fuzz/run-fuzz.sh ]; then
            tests/fuzz/run-fuzz.sh "${RNIC_FUZZ_SECONDS:-12}" >"$logs/fuzz-engine.tap" 2>"$logs/fuzz-engine.log"
            rc=$?
            cat "$logs/fuzz-engine.tap"
            if [ $rc != 0 ]; then
                # counted even when its TAP says nothing failed
                printf '1..1\nnot ok 1 - tests/fuzz/run-fuzz.sh exited with status %s (%s)\n' \
                    $rc "$logs/fuzz-engine.log" | tee "$logs/fuzz-engine-status.tap"
                summary+=(--tap "$logs/fuzz-engine-status.tap")
            fi
        else
            printf '1..1\nok 1 - engine libFuzzer targets # SKIP tests/fuzz/run-fuzz.sh does not exist yet\n' |
                tee "$logs/fuzz-engine.tap"
        fi
        summary+=(--tap "$logs/fuzz-engine.tap")
        ;;
    guest)
        step "guest: TCG guests with -device rnic"
        if [ ! -x build/qemu/build/qemu-system-x86_64 ]; then
            scripts/build-qemu.sh >"$logs/qemu-build.log" 2>&1 ||
                tail -30 "$logs/qemu-build.log"
        fi
        asan_qemu_background
        # provider-pyverbs writes one TAP line per rdma-core test here
        rm -f "$logs/pyverbs.tap"
        RNIC_PYVERBS_TAP=$logs/pyverbs.tap python3 tests/guest/run-tests.py |
            tee "$logs/guest.tap"
        summary+=(--tap "$logs/guest.tap")
        [ ! -f "$logs/pyverbs.tap" ] || summary+=(--tap "$logs/pyverbs.tap")
        ;;
    *)
        echo "unknown suite '$suite'" >&2
        exit 2
        ;;
    esac
done

step "summary"
python3 scripts/tap-summary.py "${summary[@]}" || status=1
exit $status
