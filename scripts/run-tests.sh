#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The test command (README; .ci/run runs exactly this): installs what is
# missing, builds what changed, runs every suite and ends with one line
#   N passed, N failed, N skipped
# summing all suites. Exit status non-zero on any failure.
#
# Suites: unit (engine, no QEMU), qtest (QEMU's framework, --suite rnic),
# asan (the same qtests against a QEMU built with ASan/UBSan),
# guest (TCG guests booted with -device rnic).
#   RNIC_SUITES="unit qtest" scripts/run-tests.sh    a subset
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
suites=${RNIC_SUITES:-unit qtest asan guest}
logs=$top/build/test-logs
mkdir -p "$logs"
rm -f "$logs"/*.tap "$logs"/*.json
summary=()
status=0

step() { echo; echo "=== $* ==="; }

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
        [ -e build/project/build.ninja ] || meson setup build/project >/dev/null
        if ninja -C build/project >"$logs/unit-build.log" 2>&1; then
            meson test -C build/project --suite unit --print-errorlogs \
                --num-processes 2 | tail -n 15
            cp build/project/meson-logs/testlog.json "$logs/unit.json"
        else
            tail -30 "$logs/unit-build.log"
        fi
        summary+=(--json "$logs/unit.json")
        ;;
    qtest)
        step "qtest: QEMU with the rnic overlay"
        if scripts/build-qemu.sh >"$logs/qemu-build.log" 2>&1; then
            grep -E '^build-qemu: (QEMU source|done)' "$logs/qemu-build.log"
            meson test -C build/qemu/build --no-rebuild --suite rnic \
                --print-errorlogs | tail -n 15
            cp build/qemu/build/meson-logs/testlog.json "$logs/qtest.json"
        else
            tail -30 "$logs/qemu-build.log"
        fi
        summary+=(--json "$logs/qtest.json")
        ;;
    asan)
        step "asan: the qtests against QEMU built with ASan and UBSan"
        if QEMU_SANITIZE=1 scripts/build-qemu.sh >"$logs/qemu-asan-build.log" 2>&1; then
            # leaks of the qtest processes themselves are not the device's
            ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1 \
                meson test -C build/qemu/build-asan --no-rebuild --suite rnic \
                --print-errorlogs | tail -n 15
            cp build/qemu/build-asan/meson-logs/testlog.json "$logs/asan.json"
        else
            tail -30 "$logs/qemu-asan-build.log"
        fi
        summary+=(--json "$logs/asan.json")
        ;;
    guest)
        step "guest: TCG guests with -device rnic"
        if [ ! -x build/qemu/build/qemu-system-x86_64 ]; then
            scripts/build-qemu.sh >"$logs/qemu-build.log" 2>&1 ||
                tail -30 "$logs/qemu-build.log"
        fi
        python3 tests/guest/run-tests.py | tee "$logs/guest.tap"
        summary+=(--tap "$logs/guest.tap")
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
