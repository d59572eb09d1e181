#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the storage guest image (issue 20 item 4; tests/guest/test_storage.py,
# docs/usage.md "Kernel storage protocols"): the driver's RDMA image of
# build-driver.sh plus
#   - the kernel modules of NFS over RDMA (nfs, nfsv3, nfsv4, nfsd, rpcrdma:
#     client xprtrdma and server svcrdma), iSER (ib_iser, ib_isert and the LIO
#     target core with its iblock/fileio backstores) and SRP (ib_srp, ib_srpt),
#     sd_mod and brd, decompressed, with a modules.dep made by depmod over the
#     RDMA image's modules and these;
#   - from Debian trixie: fio, nfs-kernel-server, nfs-common (with rpcbind)
#     and open-iscsi, with the libraries they need, without python3, systemd,
#     udev and the rdma-core daemon package (the guests start rpcbind,
#     rpc.nfsd, rpc.mountd and iscsid by hand; the LIO target is set up
#     through configfs, no targetcli).
#
# Usage: scripts/guest/build-storage.sh
# Output: build/guest/initramfs-storage.cpio.gz (build/storage/ holds the rest)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/guest
out=$top/build/storage
# shellcheck source=scripts/guest/kernel-choice.sh
. "$here/kernel-choice.sh"
image=$guest_dir/initramfs-storage.cpio.gz
base=$guest_dir/initramfs-rdma.cpio.gz
packages=(fio nfs-kernel-server nfs-common open-iscsi)
# what the guests do without: python3 (fio's and nfs-common's scripts),
# systemd and udev (daemons started by hand), the rdma-core daemon package
skip='/(perl|perl-base|perl-modules-[0-9.]+|libperl[0-9.]+|python3|libpython3|rdma-core|systemd|udev|libsystemd-shared|mount|tzdata|procps|media-types|readline-common)[._-]'
modules=(nfs nfsv3 nfsv4 nfsd rpcrdma ib_iser ib_isert iscsi_target_mod target_core_mod
         target_core_iblock target_core_file ib_srp ib_srpt scsi_transport_srp sd_mod brd
         crc32c_generic)

log() { echo "build-storage: $*" >&2; }
die() { log "error: $*"; exit 1; }

"$here/build-driver.sh" >&2 || die "build-driver.sh failed"
kver=$(cat "$guest_dir/KERNEL_VERSION")
src_moddir=$guest_dir/kernel/lib/modules/$kver

# The .debs the packages add to the RDMA image's userspace; the resolution
# (two fetch-rdma-userspace.py runs, tens of seconds: its cache keeps one
# root set) is kept in $out/extra.list, keyed on apt's lists and the names.
mkdir -p "$out"
key="$(stat -c '%n %s %Y' /var/lib/apt/lists/*_Packages* 2>/dev/null | sha256sum | cut -d' ' -f1)"
key+=" ${packages[*]} $skip"
extra=()
if [ "$(head -1 "$out/extra.list" 2>/dev/null)" = "$key" ]; then
    mapfile -t extra < <(tail -n +2 "$out/extra.list")
    for deb in "${extra[@]}"; do
        [ -f "$deb" ] || { extra=(); break; }
    done
fi
if [ ${#extra[@]} -eq 0 ]; then
    mapfile -t extra < <(comm -13 <("$here/fetch-rdma-userspace.py" | sort) \
                                  <("$here/fetch-rdma-userspace.py" "${packages[@]}" | sort) |
                         grep -vE "$skip")
    [ ${#extra[@]} -gt 0 ] || die "no packages resolved for ${packages[*]}"
    { echo "$key"; printf '%s\n' "${extra[@]}"; } >"$out/extra.list"
fi

stamp="$(printf '%s\n' "${extra[@]}" | xargs -r stat -c '%n %s %Y' | sha256sum | cut -d' ' -f1)"
stamp+=" $(sha256sum <"$0" | cut -d' ' -f1) $kver ${modules[*]}"
stamp+=" $(stat -c '%s %Y' "$base")"
if [ -f "$image" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
    log "$(basename "$image"): up to date"
    exit 0
fi

rm -rf "$out/root" "$out/mods"
mkdir -p "$out/root" "$out/mods"
for deb in "${extra[@]}"; do
    dpkg-deb -x "$deb" "$out/root"
done
rm -rf "$out/root/usr/share/doc" "$out/root/usr/share/man" "$out/root/usr/include" \
       "$out/root/usr/share/locale" "$out/root/usr/lib/systemd" "$out/root/etc/init.d"
# merged /usr: the base image's /lib, /bin, /sbin are symlinks
for d in lib lib64 bin sbin; do
    if [ -d "$out/root/$d" ] && [ ! -L "$out/root/$d" ]; then
        mkdir -p "$out/root/usr/$d"
        cp -a "$out/root/$d/." "$out/root/usr/$d/"
        rm -rf "${out:?}/root/$d"
    fi
done

# --- modules: the RDMA image's tree, ours added, depmod over both ----------
moddir=usr/lib/modules/$kver
(cd "$out/mods" && gzip -dc "$base" | cpio --quiet -id "$moddir/*")
[ -f "$out/mods/$moddir/modules.dep" ] || die "no $moddir in $base"
declare -A module_path=() done_mod=()
while read -r path; do
    name=${path##*/}; name=${name%%.ko*}
    module_path[${name//-/_}]=$path
done < <(cd "$src_moddir" && find kernel -name '*.ko*')
added=0
add_module() {  # NAME [optional]: NAME and its dependencies
    local name=${1//-/_} optional=${2:-} path dest dep
    [ -n "${done_mod[$name]:-}" ] && return 0
    done_mod[$name]=1
    path=${module_path[$name]:-}
    if [ -z "$path" ]; then
        grep -qE "/${name//_/[-_]}\.ko$" "$src_moddir/modules.builtin" && return 0
        [ -n "$optional" ] && return 0
        die "module $name: not in $kver"
    fi
    dest=$out/mods/$moddir/${path%.xz}
    if [ ! -f "$dest" ]; then
        mkdir -p "$(dirname "$dest")"
        case $path in
        *.xz) xz -dc "$src_moddir/$path" >"$dest" ;;
        *) cp "$src_moddir/$path" "$dest" ;;
        esac
        mkdir -p "$(dirname "$out/root/$moddir/${path%.xz}")"
        cp "$dest" "$out/root/$moddir/${path%.xz}"
        added=$((added + 1))
    fi
    for dep in $(modinfo -F depends "$src_moddir/$path" | tr ',' ' '); do
        add_module "$dep"
    done
    # softdeps may name aliases (crypto-md5): those that are module names
    for dep in $(modinfo -F softdep "$src_moddir/$path" | tr ' ' '\n' | grep -vE '^(pre|post):$' || true); do
        add_module "$dep" optional
    done
}
for m in "${modules[@]}"; do
    add_module "$m"
done
depmod -b "$out/mods/usr" "$kver" 2>/dev/null || depmod -b "$out/mods" "$kver"
for f in "$out/mods/$moddir"/modules.*; do
    cp "$f" "$out/root/$moddir/"
done

# --- the guests' configuration -----------------------------------------------
mkdir -p "$out/root/etc/iscsi" "$out/root/var/lib/nfs/rpc_pipefs" "$out/root/var/lib/nfs/v4recovery" \
         "$out/root/run/rpcbind" "$out/root/etc/exports.d"
echo "InitiatorName=iqn.2026-12.org.qemu-rnic:initiator" >"$out/root/etc/iscsi/initiatorname.iscsi"
: >"$out/root/etc/exports"

(cd "$out/root" && find . -mindepth 1 | LC_ALL=C sort |
    cpio --quiet -o -H newc -R 0:0 | gzip -6n) >"$out/storage.cpio.gz"
cat "$base" "$out/storage.cpio.gz" >"$image.tmp"
mv "$image.tmp" "$image"
echo "$stamp" >"$out/stamp"
log "image $image (${#extra[@]} packages, $added modules added)"
