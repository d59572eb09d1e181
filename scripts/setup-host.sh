#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Install what the build and the tests need on a Debian 12 (bookworm) host.
# Idempotent: returns at once when everything is already there.
# Needs root (apt). Adds the project's apt sources (scripts/apt/) first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# Packages from bookworm itself. clang and libclang-rt-14-dev: the sanitized
# QEMU (--enable-fuzzing needs -fsanitize=fuzzer) and the libFuzzer targets;
# llvm: llvm-symbolizer for their stacks. libcap-ng-dev: qemu-bridge-helper
# drops its capabilities with it. dkms: the driver's DKMS tree is built by
# a test (driver-dkms).
BASE_PKGS=(
    build-essential pkg-config ninja-build flex bison python3-venv python3
    libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev zlib1g-dev
    dpkg-dev devscripts xz-utils zstd cpio kmod busybox-static
    qemu-system-data seabios ipxe-qemu
    cmake libnl-3-dev libnl-route-3-dev libudev-dev
    ccache git ca-certificates dwarves tshark
    clang libclang-rt-14-dev llvm libcap-ng-dev dkms
)
# Packages that must come from bookworm-backports. libvirt 11.3 (the
# release of QEMU 10.0's time; bookworm has 9.0, tests: test_libvirt.py): all of it
# named, so that none of its exact-version dependencies comes from bookworm.
BPO_PKGS=(meson python3-pycotap
    libvirt-daemon-driver-qemu libvirt-daemon libvirt-clients libvirt0 libvirt-common
    libvirt-daemon-log libvirt-daemon-lock libvirt-l10n libvirt-daemon-common
    libvirt-daemon-plugin-lockd)

missing() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"
    done
}

need_sources=0
cmp -s "$here/apt/qemu-rnic.sources" /etc/apt/sources.list.d/qemu-rnic.sources || need_sources=1
cmp -s "$here/apt/qemu-rnic.pref" /etc/apt/preferences.d/qemu-rnic.pref || need_sources=1

mapfile -t miss_base < <(missing "${BASE_PKGS[@]}")
mapfile -t miss_bpo < <(missing "${BPO_PKGS[@]}")
meson_ok=0
if command -v meson >/dev/null && dpkg --compare-versions "$(meson --version)" ge 1.5; then
    meson_ok=1
fi

if [ "$need_sources" = 0 ] && [ ${#miss_base[@]} = 0 ] && [ ${#miss_bpo[@]} = 0 ] && [ "$meson_ok" = 1 ]; then
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "setup-host: missing packages (${miss_base[*]} ${miss_bpo[*]}); run as root to install them" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ "$need_sources" = 1 ]; then
    install -m 644 "$here/apt/qemu-rnic.sources" /etc/apt/sources.list.d/qemu-rnic.sources
    install -m 644 "$here/apt/qemu-rnic.pref" /etc/apt/preferences.d/qemu-rnic.pref
fi
apt-get update -q
if [ ${#miss_base[@]} != 0 ]; then
    apt-get install -y -q --no-install-recommends "${miss_base[@]}"
fi
# Name the packages explicitly with their release instead of '-t', so that
# nothing else on the host is upgraded to backports.
bpo=()
for p in "${BPO_PKGS[@]}"; do bpo+=("$p/bookworm-backports"); done
apt-get install -y -q --no-install-recommends "${bpo[@]}"
echo "setup-host: done"
