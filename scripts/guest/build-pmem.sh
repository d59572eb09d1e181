#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the persistent-memory guest image (docs/usage.md, "Persistent
# memory with librpma"): the provider image of build-provider.sh --image
# plus, from Debian trixie, librpma 1.3.0, libpmem, libpmem2 and ndctl (the
# window as device-DAX: rnic.ko window_pmem=1), and the librpma test
# programs of tests/guest/pmem/*.c, built against trixie's librpma and
# libpmem headers and the provider tree's libibverbs.
#
# Debian ships neither librpma's examples nor a fio with its librpma
# engines (trixie's fio 3.39 is built without librpma: its Build-Depends
# lack librpma-dev): the programs here are what drives librpma.
#
# Usage: scripts/guest/build-pmem.sh
# Output: build/guest/initramfs-pmem.cpio.gz (build/pmem/ holds the rest)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/guest
out=$top/build/pmem
# shellcheck source=scripts/guest/kernel-choice.sh
. "$here/kernel-choice.sh"
image=$guest_dir/initramfs-pmem.cpio.gz
multiarch=x86_64-linux-gnu
packages=(librpma0 libpmem1 libpmem2 ndctl)
headers=(librpma-dev libpmem-dev)

log() { echo "build-pmem: $*" >&2; }
die() { log "error: $*"; exit 1; }

"$here/build-provider.sh" --image >&2 || die "build-provider.sh --image failed"
base=$guest_dir/initramfs-provider.cpio.gz
rdma_build=$top/build/rdma-core/build

# the .debs these add to the RDMA image's userspace (headers: build only)
mapfile -t extra < <(comm -13 <("$here/fetch-rdma-userspace.py" | sort) \
                              <("$here/fetch-rdma-userspace.py" "${packages[@]}" "${headers[@]}" | sort) |
                     grep -vE '/(rdma-core|systemd|udev|libsystemd-shared|mount|tzdata|cxl)_')
[ ${#extra[@]} -gt 0 ] || die "no librpma packages resolved"

stamp="$(printf '%s\n' "${extra[@]}" | xargs -r stat -c '%n %s %Y' | sha256sum | cut -d' ' -f1)"
stamp+=" $(cat "$top"/tests/guest/pmem/*.[ch] "$0" | sha256sum | cut -d' ' -f1)"
stamp+=" $(stat -c '%s %Y' "$base")"
if [ -f "$image" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
    log "$(basename "$image"): up to date"
    exit 0
fi

rm -rf "$out/root" "$out/sysroot"
mkdir -p "$out/root/usr/bin" "$out/sysroot"
for deb in "${extra[@]}"; do
    case $(basename "$deb") in
    *-dev_*) dpkg-deb -x "$deb" "$out/sysroot" ;;
    *) dpkg-deb -x "$deb" "$out/root"; dpkg-deb -x "$deb" "$out/sysroot" ;;
    esac
done
rm -rf "$out/root/usr/share/doc" "$out/root/usr/share/man" "$out/root/usr/include"
# merged /usr: the base image's /lib, /bin, /sbin are symlinks
for d in lib lib64 bin sbin; do
    if [ -d "$out/root/$d" ] && [ ! -L "$out/root/$d" ]; then
        mkdir -p "$out/root/usr/$d"
        cp -a "$out/root/$d/." "$out/root/usr/$d/"
        rm -rf "${out:?}/root/$d"
    fi
done

# The test programs: trixie's librpma and libpmem (their symbol versions
# are the guest's glibc's: resolved there, not here), the provider tree's
# libibverbs and librdmacm.
ninja -C "$rdma_build" ibverbs rdmacm >/dev/null || die "libibverbs/librdmacm build failed"
lib=$out/sysroot/usr/lib/$multiarch
for c in "$top"/tests/guest/pmem/*.c; do
    name=$(basename "$c" .c)
    gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 \
        -I"$out/sysroot/usr/include" -I"$rdma_build/include" -I"$top/include" \
        -o "$out/root/usr/bin/$name" "$c" \
        "$lib"/librpma.so.0 "$lib"/libpmem.so.1 \
        -L"$rdma_build/lib" -lrdmacm -libverbs -lpthread \
        -Wl,--allow-shlib-undefined || die "$c: build failed"
done

(cd "$out/root" && find . -mindepth 1 | LC_ALL=C sort |
    cpio --quiet -o -H newc -R 0:0 | gzip -6n) >"$out/pmem.cpio.gz"
cat "$base" "$out/pmem.cpio.gz" >"$image.tmp"
mv "$image.tmp" "$image"
echo "$stamp" >"$out/stamp"
log "image $image (${#extra[@]} packages, $(ls "$top"/tests/guest/pmem/*.c | wc -l) programs)"
