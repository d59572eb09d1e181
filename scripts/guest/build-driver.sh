#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the guest kernel driver rnic.ko and the kernel test module
# rnic_ktest.ko against the headers of the guest kernel, and the RDMA guest
# image that carries them (docs/usage.md, "The guest driver"). The kernel is
# RNIC_GUEST_KERNEL's (scripts/guest/kernel-choice.sh: 6.12 by default,
# 6.1 into build/guest-driver-6.1 and build/guest-6.1).
#
# The sources of guest-driver/kernel are copied to build/guest-driver/src
# and built there, so the source tree stays clean.
#
# Usage: scripts/guest/build-driver.sh [options]
#   --no-image          only build the modules
#   --no-userspace      image without the trixie rdma-core userspace
#   -f, --force         rebuild the image even if up to date
#   -h, --help
#
# Outputs:
#   build/guest-driver/rnic.ko, build/guest-driver/rnic_ktest.ko,
#   build/guest-driver/root/usr/bin/rnic-uverbs-test (static, host gcc)
#   build/guest/initramfs-rdma.cpio.gz: the base image plus rnic.ko,
#     rnic_ktest.ko, the RDMA core modules (ib_core, ib_uverbs, ib_cm, iw_cm,
#     rdma_cm, rdma_ucm loaded at boot; NVMe-oF RDMA, NFS/RDMA and Soft-RoCE
#     modules included), trixie's rdma-core 56.1 userspace (ibv_devinfo,
#     rping, perftest, `rdma`) and rnic-uverbs-test.
#     rnic.ko itself is not loaded at boot: `modprobe rnic`.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/guest
# shellcheck source=scripts/guest/kernel-choice.sh
. "$here/kernel-choice.sh"
out=$guest_driver_dir
image=$guest_dir/initramfs-rdma.cpio.gz

log() { echo "build-driver: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '/^# Usage:/,/^#   -h/s/^# \{0,1\}//p' "$0"; }

build_image=1
userspace=1
force=()
while [ $# -gt 0 ]; do
    case $1 in
    --no-image) build_image=0 ;;
    --no-userspace) userspace=0 ;;
    -f|--force) force=(-f) ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done

# The guest kernel and its headers (a no-op when they are there).
"$here/build-image.sh" >/dev/null 2>&1 || "$here/build-image.sh"
# shellcheck source=/dev/null
. "$guest_dir/kernel.env"

# Fresh copies of the sources (build products of an in-tree build skipped);
# kbuild's own dependency files in $out/src keep the build incremental.
mkdir -p "$out/src"
(cd "$top/guest-driver/kernel" &&
 find . -type f \( -name '*.c' -o -name '*.h' -o -name Kbuild -o -name Makefile \) -print0 |
 while IFS= read -r -d '' f; do
     mkdir -p "$out/src/$(dirname "$f")"
     cmp -s "$f" "$out/src/$f" || cp "$f" "$out/src/$f"
 done)
start=$(date +%s.%N)
# shellcheck disable=SC2086
if ! make -C "$KDIR" M="$out/src" RNIC_TOP="$top" $KBUILD_ARGS modules \
        >"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    die "module build failed (log: $out/build.log)"
fi
grep -E 'warning:' "$out/build.log" >&2 || true
cp "$out/src/rnic.ko" "$out/src/test/rnic_ktest.ko" "$out/"
# The provider-less user-space test, static (the guest's libc is trixie's).
mkdir -p "$out/root/usr/bin"
gcc -static -O2 -Wall -Werror -I"$top/include" \
    -o "$out/root/usr/bin/rnic-uverbs-test" "$top/guest-driver/kernel/test/rnic_uverbs_test.c"
log "built rnic.ko and rnic_ktest.ko for $KVER in $(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)") s"
[ $build_image = 1 ] || exit 0

debs=()
if [ $userspace = 1 ]; then
    mapfile -t debs < <("$here/fetch-rdma-userspace.py")
fi
args=(-o "$image" -k "$out/rnic.ko" -k "$out/rnic_ktest.ko" -e "$out/root"
      "${force[@]}")
for m in ib_core ib_uverbs ib_cm iw_cm rdma_cm rdma_ucm; do
    args+=(-m "$m")
done
# rnic and rnic_ktest: with what they need (libnvdimm: window_pmem=1);
# nd_pmem, dax_pmem, device_dax: the window as /dev/pmemN and /dev/daxN.M
for m in rnic rnic_ktest nvme_rdma nvmet_rdma nvme_fabrics nvmet rpcrdma nfs nfsd \
         rdma_rxe crc32_generic 8021q bridge sch_netem nd_pmem dax_pmem device_dax; do
    args+=(-i "$m")
done
for deb in "${debs[@]}"; do
    args+=(-d "$deb")
done
"$here/build-image.sh" "${args[@]}"
