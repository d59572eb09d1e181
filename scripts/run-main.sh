#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The main job (README): install what is missing, build everything (the
# engine, QEMU 10.0 from Debian's source with the rnic overlay, the guest
# image), boot a TCG guest on q35 with -device rnic and show what the guest
# finds, then power it off. Later capabilities extend this same command.
# Reuses everything already built.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

step() { echo; echo "=== $* ==="; }

step "host packages (apt, as root)"
if [ "$(id -u)" = 0 ]; then
    scripts/setup-host.sh
else
    sudo scripts/setup-host.sh
fi

step "engine library and unit tests"
[ -e build/project/build.ninja ] || meson setup build/project >/dev/null
ninja -C build/project | tail -n 1

step "QEMU $(apt-cache showsrc qemu 2>/dev/null | awk '/^Version: 1:10\.0\./ {print $2}' | sort -V | tail -1) from Debian's source, with the rnic device"
mkdir -p build
if ! scripts/build-qemu.sh >build/qemu-build.log 2>&1; then
    tail -n 40 build/qemu-build.log
    echo "run-main: the QEMU build failed (log: build/qemu-build.log)" >&2
    exit 1
fi
grep -E '^build-qemu: (QEMU source|done|configuring)' build/qemu-build.log

step "guest image (Debian 6.12 kernel from bookworm-backports + busybox)"
scripts/guest/build-image.sh | tail -n 3

step "boot a q35 guest with -device rnic and look at the device"
scripts/guest/show-device.sh -device rnic

step "and behind a PCIe root port"
scripts/guest/show-device.sh -device pcie-root-port,id=rp0,chassis=1 -device rnic,bus=rp0

step "two guests: rnic.ko, RDMA-CM and kernel verbs between them over RoCEv2"
scripts/guest/two-guest-rdma.py

step "two guests: unmodified perftest over the rdma-core provider (kernel bypass)"
scripts/guest/perftest-pair.py --quick --peers rnic

step "two guests: cbrpc, RPC by reference against RPC by value (docs/cbrpc.md)"
scripts/guest/cbrpc-bench.py --quick --peers rnic --no-build

step "live migration: guest A moves to A' under checked RDMA traffic from guest B"
scripts/guest/migration-bench.py --scenarios load --runs 1
