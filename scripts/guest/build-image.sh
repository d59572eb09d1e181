#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the test guest of qemu-rnic (docs/guest-image.md):
#   - Debian's current 6.12 kernel from bookworm-backports (or with
#     RNIC_GUEST_KERNEL=6.1, or --kernel 6.1, bookworm's stock 6.1 into
#     build/guest-6.1), resolved at build time through the
#     linux-image-amd64 / linux-headers-amd64 metapackages,
#     downloaded to build/dl and unpacked (not installed) into build/guest;
#   - its headers + kbuild unpacked into build/guest/headers, checked by
#     building a trivial out-of-tree module;
#   - a busybox initramfs whose /init (scripts/guest/init) loads the modules of
#     scripts/guest/modules.list and runs the script the host hands over.
#
# Everything is cached: a second run with nothing changed does nothing.
#
# Usage: scripts/guest/build-image.sh [options]
#   -o, --output FILE   initramfs to write (default build/guest/initramfs.cpio.gz)
#   -m, --module NAME   also load NAME (and its dependencies) at boot
#   -i, --include NAME  put NAME (and its dependencies) in the image, not loaded
#   -k, --ko FILE       add an out-of-tree module (lib/modules/KVER/extra);
#                       modprobe-able by name, loaded at boot if named with -m
#   -d, --deb FILE      unpack a .deb into the image root (merged /usr)
#   -e, --extra DIR     copy the contents of DIR into the image root
#   -f, --force         rebuild even if up to date
#   --kernel SERIES     6.12 (default) or 6.1: sets RNIC_GUEST_KERNEL
#   -h, --help
#
# Outputs (build/guest/, build/guest-6.1/ for 6.1):
#   KERNEL_VERSION      kernel release, e.g. 6.12.95+deb12-amd64
#   kernel.env          KVER=, KERNEL_PKG_VERSION=, KDIR=, KBUILD_ARGS= (sourceable;
#                       make -C $KDIR M=DIR $KBUILD_ARGS modules builds a module)
#   vmlinuz             -> kernel/boot/vmlinuz-KVER
#   vmlinux             the same kernel uncompressed (ELF, PVH entry): boots faster
#   kernel/             the unpacked linux-image package (boot/, lib/modules/)
#   headers/            unpacked headers; KDIR=headers/usr/src/linux-headers-KVER
#   initramfs.cpio.gz
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/guest
dl=$top/build/dl

log() { echo "build-image: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '/^# Usage:/,/^#   -h/s/^# \{0,1\}//p' "$0"; }

output=
modules=()
includes=()
kos=()
debs=()
extras=()
force=0
while [ $# -gt 0 ]; do
    case $1 in
    -o|--output) output=$(realpath -m "$2"); shift ;;
    -m|--module) modules+=("$2"); shift ;;
    -i|--include) includes+=("$2"); shift ;;
    -k|--ko) kos+=("$(realpath -e "$2")"); shift ;;
    -d|--deb) debs+=("$(realpath -e "$2")"); shift ;;
    -e|--extra) [ -d "$2" ] || die "--extra $2: not a directory"
                extras+=("$(realpath -e "$2")"); shift ;;
    -f|--force) force=1 ;;
    --kernel) export RNIC_GUEST_KERNEL=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done

# shellcheck source=scripts/guest/kernel-choice.sh
. "$here/kernel-choice.sh"
guest=$guest_dir
[ -n "$output" ] || output=$guest/initramfs.cpio.gz

for tool in apt-cache apt-get dpkg dpkg-deb modinfo depmod xz cpio gzip make; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
busybox=${BUSYBOX:-/bin/busybox}
file -L "$busybox" 2>/dev/null | grep 'statically linked' >/dev/null ||
    die "$busybox is not a static busybox (apt-get install busybox-static)"

mkdir -p "$dl" "$guest"
# One builder at a time (the test runner calls this too).
exec 9>"$guest/.lock"
flock 9
apt_opts=()
[ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)

# --- 1. resolve the kernel ---------------------------------------------------
# Highest version of PKG in the suites of the kernel choice, from `apt-cache
# madison` on stdin.
suite_version() {
    local best="" v
    for v in $(awk -F'|' -v p="$1" -v s=" ($kernel_suites)/.*Packages" \
                   '$1 ~ "^ *"p" *$" && $3 ~ s { gsub(/ /, "", $2); print $2 }'); do
        if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
            best=$v
        fi
    done
    [ -n "$best" ] || die "no $1 in $kernel_suites (apt sources: scripts/apt/; apt-get update?)"
    echo "$best"
}

# Field FIELD of package PKG in the `apt-cache show` records on stdin.
record_field() {
    awk -v p="$1" -v f="$2:" '/^$/ { in_pkg = 0 } $1 == "Package:" { in_pkg = ($2 == p) }
                              in_pkg && $1 == f { sub(/^[^:]*: /, ""); print; exit }'
}

# The package of a Depends value whose name matches the regex PATTERN.
dep_matching() {
    tr ',|' '\n' <<<"$1" | awk '{ print $1 }' | grep -xE "$2" | sed -n 1p
}

# Prints shell assignments: kver, image_ver, image_pkg, headers_pkg,
# common_pkg, kbuild_pkg and deb_file/deb_sha (arrays indexed by package).
resolve_kernel() {
    local madison headers_ver records pkg
    madison=$(apt-cache madison linux-image-amd64 linux-headers-amd64)
    image_ver=$(suite_version linux-image-amd64 <<<"$madison")
    headers_ver=$(suite_version linux-headers-amd64 <<<"$madison")
    [ "$image_ver" = "$headers_ver" ] ||
        die "$kernel_suites: linux-image-amd64 $image_ver but linux-headers-amd64 $headers_ver"
    records=$(apt-cache show "linux-image-amd64=$image_ver" "linux-headers-amd64=$image_ver")
    image_pkg=$(dep_matching "$(record_field linux-image-amd64 Depends <<<"$records")" 'linux-image-.*-amd64')
    headers_pkg=$(dep_matching "$(record_field linux-headers-amd64 Depends <<<"$records")" 'linux-headers-.*-amd64')
    kver=${image_pkg#linux-image-}
    [ -n "$image_pkg" ] && [ "$headers_pkg" = "linux-headers-$kver" ] ||
        die "metapackages $image_ver: image '$image_pkg' and headers '$headers_pkg' do not match"
    records=$(apt-cache show "$headers_pkg=$image_ver")
    common_pkg=$(dep_matching "$(record_field "$headers_pkg" Depends <<<"$records")" 'linux-headers-.*-common')
    kbuild_pkg=$(dep_matching "$(record_field "$headers_pkg" Depends <<<"$records")" "linux-kbuild-${kernel_series//./\\.}([^0-9].*)?")
    [ -n "$common_pkg" ] && [ -n "$kbuild_pkg" ] || die "cannot read the dependencies of $headers_pkg"
    records=$(apt-cache show "$image_pkg=$image_ver" "$headers_pkg=$image_ver" \
                             "$common_pkg=$image_ver" "$kbuild_pkg=$image_ver")
    declare -A deb_file=() deb_sha=()
    for pkg in "$image_pkg" "$headers_pkg" "$common_pkg" "$kbuild_pkg"; do
        deb_file[$pkg]=$(record_field "$pkg" Filename <<<"$records")
        deb_file[$pkg]=${deb_file[$pkg]##*/}
        deb_sha[$pkg]=$(record_field "$pkg" SHA256 <<<"$records")
        [ -n "${deb_file[$pkg]}" ] && [ -n "${deb_sha[$pkg]}" ] || die "no $pkg $image_ver in apt's lists"
    done
    declare -p kver image_ver image_pkg headers_pkg common_pkg kbuild_pkg deb_file deb_sha
}

# apt-cache needs over a second per call here (no pkgcache.bin), so the
# resolution is cached, keyed on apt's package lists (apt-get update changes them).
lists_key=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -printf '%f %s %T@\n' |
            LC_ALL=C sort | sha256sum | cut -d' ' -f1)
resolved=$guest/.resolved-kernel
if [ $force = 1 ] || [ "$(head -1 "$resolved" 2>/dev/null)" != "# $lists_key" ]; then
    { echo "# $lists_key"; resolve_kernel; } >"$resolved.tmp"
    mv "$resolved.tmp" "$resolved"
fi
declare -A deb_file deb_sha
# shellcheck source=/dev/null
. "$resolved"

# Download the PKGs (one apt-get call) that build/dl has no verified copy of.
fetch_debs() {
    local pkg missing=()
    for pkg in "$@"; do
        echo "${deb_sha[$pkg]}  $dl/${deb_file[$pkg]}" | sha256sum --check --status 2>/dev/null ||
            missing+=("$pkg=$image_ver")
    done
    [ ${#missing[@]} = 0 ] && return 0
    log "downloading ${missing[*]}"
    (cd "$dl" && apt-get download -q "${apt_opts[@]}" "${missing[@]}" >&2)
    for pkg in "$@"; do
        echo "${deb_sha[$pkg]}  $dl/${deb_file[$pkg]}" | sha256sum --check --status ||
            die "${deb_file[$pkg]}: download failed or checksum mismatch"
    done
}

# --- 2. kernel and headers ---------------------------------------------------
# The uncompressed kernel, for QEMU to boot through its ELF PVH entry: that
# skips the in-guest decompression (~1 s under TCG). The bzImage header says
# where the payload is: (setup_sects + 1) * 512 + payload_offset, payload_length;
# kbuild ends the payload with the uncompressed size (32-bit little endian).
extract_vmlinux() {
    local bz=$1 out=$2 sects off len size decompress
    sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz")
    off=$(( (sects + 1) * 512 + $(od -An -tu4 -j $((0x248)) -N4 "$bz") ))
    len=$(( $(od -An -tu4 -j $((0x24c)) -N4 "$bz") - 4 ))
    size=$(( $(od -An -tu4 -j $((off + len)) -N4 "$bz") ))
    case $(od -An -tx1 -j "$off" -N4 "$bz" | tr -d ' \n') in
    28b52ffd) decompress=(zstd -dcq) ;;
    fd377a58) decompress=(xz -dc) ;;
    *) return 1 ;;
    esac
    dd if="$bz" iflag=skip_bytes,count_bytes skip="$off" count="$len" bs=1M status=none |
        "${decompress[@]}" >"$out" || return 1
    [ "$(stat -c %s "$out")" = "$size" ] &&
        readelf -n "$out" 2>/dev/null | grep -E 'PHYS32_ENTRY|\(0x00000012\)' >/dev/null
}

kdir=$guest/headers/usr/src/linux-headers-$kver
# Without pahole (package dwarves, which linux-kbuild depends on) kbuild fails
# to add BTF to modules: then build them with CONFIG_DEBUG_INFO_BTF_MODULES=.
kbuild_args=
command -v pahole >/dev/null || kbuild_args=CONFIG_DEBUG_INFO_BTF_MODULES=
kernel_layout=3  # bump when the unpacking below changes
kernel_key="$image_pkg=$image_ver $common_pkg $kbuild_pkg $guest layout$kernel_layout $kbuild_args"
if [ $force = 0 ] && [ "$(cat "$guest/.stamp-kernel" 2>/dev/null)" = "$kernel_key" ]; then
    log "kernel $kver ($image_ver): up to date"
else
    log "kernel $kver ($image_ver) from $kernel_suites"
    rm -f "$guest/.stamp-kernel"
    fetch_debs "$image_pkg" "$headers_pkg" "$common_pkg" "$kbuild_pkg"

    rm -rf "$guest/kernel" "$guest/headers"
    # Two unpackers at once: each is bound by one core (xz) or by small files.
    dpkg -x "$dl/${deb_file[$image_pkg]}" "$guest/kernel" &
    image_job=$!
    for pkg in "$headers_pkg" "$common_pkg" "$kbuild_pkg"; do
        dpkg -x "$dl/${deb_file[$pkg]}" "$guest/headers"
    done
    wait $image_job || die "unpacking $image_pkg failed"
    # Debian's headers refer to /usr/src by absolute paths: point them here.
    sed -i "s|^include /usr/src/|include $guest/headers/usr/src/|" "$kdir/Makefile"
    ln -sfn "../../../usr/src/linux-headers-$kver" "$guest/headers/lib/modules/$kver/build"
    ln -sfn "../../../usr/src/${common_pkg}" "$guest/headers/lib/modules/$kver/source"
    ln -sfn "kernel/boot/vmlinuz-$kver" "$guest/vmlinuz"
    rm -f "$guest/vmlinux"
    if ! extract_vmlinux "$guest/vmlinuz" "$guest/vmlinux.tmp"; then
        log "note: no PVH vmlinux could be extracted; guests boot vmlinuz (slower)"
        rm -f "$guest/vmlinux.tmp"
    else
        mv "$guest/vmlinux.tmp" "$guest/vmlinux"
    fi

    # The headers must build an out-of-tree module with the host's gcc-12.
    probe=$(mktemp -d)
    trap 'rm -rf "$probe"' EXIT
    cat >"$probe/hello.c" <<'EOF'
// SPDX-License-Identifier: GPL-2.0-or-later
#include <linux/module.h>
static int __init hello_init(void) { return 0; }
static void __exit hello_exit(void) { }
module_init(hello_init);
module_exit(hello_exit);
MODULE_LICENSE("GPL");
EOF
    echo 'obj-m := hello.o' >"$probe/Kbuild"
    if ! make -C "$kdir" M="$probe" $kbuild_args modules >"$probe/log" 2>&1 ||
       [ "$(modinfo -F vermagic "$probe/hello.ko" | awk '{ print $1 }')" != "$kver" ]; then
        cat "$probe/log" >&2
        die "the unpacked headers do not build a module"
    fi
    rm -rf "$probe"
    trap - EXIT
    log "headers: out-of-tree module build OK (make -C \$KDIR M=... \$KBUILD_ARGS, see kernel.env)"
    [ -z "$kbuild_args" ] || log "note: no pahole on this host (apt-get install dwarves): modules are built without BTF"

    echo "$kver" >"$guest/KERNEL_VERSION"
    cat >"$guest/kernel.env" <<EOF
KVER=$kver
KERNEL_PKG_VERSION=$image_ver
KDIR=$kdir
KBUILD_ARGS=$kbuild_args
EOF
    echo "$kernel_key" >"$guest/.stamp-kernel"
fi

# --- 3. initramfs ------------------------------------------------------------
# Module names from modules.list and --module, in order.
mapfile -t boot_modules < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$here/modules.list")
boot_modules+=("${modules[@]}")

# Content hash of everything the archive is made of.
hash_inputs() {
    echo "$kver ${boot_modules[*]} include ${includes[*]}"
    sha256sum "$0" "$here/init" "$here/wait-ping" "$busybox" "${kos[@]}" "${debs[@]}"
    local dir
    for dir in "${extras[@]}"; do
        echo "extra $dir"
        (cd "$dir" && find . -printf '%p %y %m %l\n' | LC_ALL=C sort &&
         find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
    done
}
initramfs_key=$(hash_inputs | sha256sum | cut -d' ' -f1)
stamp=$output.stamp
if [ $force = 0 ] && [ -f "$output" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$initramfs_key" ]; then
    log "$(basename "$output"): up to date"
    exit 0
fi

moddir=lib/modules/$kver
src_moddir=$guest/kernel/$moddir
declare -A module_path=()   # normalized name -> path relative to $src_moddir
while read -r path; do
    name=${path##*/}; name=${name%%.ko*}
    module_path[${name//-/_}]=$path
done < <(cd "$src_moddir" && find kernel -name '*.ko*')
declare -A ko_path=()       # out-of-tree modules
for ko in "${kos[@]}"; do
    name=$(modinfo -F name "$ko")
    ko_path[${name//-/_}]=$ko
done

declare -A wanted=()
# add_module NAME REQUIRED: NAME and its dependencies, depth first.
add_module() {
    local name=${1//-/_} required=$2 file dep
    [ -n "${wanted[$name]:-}" ] && return 0
    if [ -n "${ko_path[$name]:-}" ]; then
        file=${ko_path[$name]}
    elif [ -n "${module_path[$name]:-}" ]; then
        file=$src_moddir/${module_path[$name]}
    elif grep -qE "/${name//_/[-_]}\.ko$" "$src_moddir/modules.builtin"; then
        log "module $name is built into the kernel"
        return 0
    elif [ "$required" = 1 ]; then
        die "module $name: not in $kver"
    else
        return 0
    fi
    wanted[$name]=$file
    for dep in $(modinfo -F depends "$file" | tr ',' ' '); do
        add_module "$dep" 1
    done
    # softdep "pre: a b post: c": optional, loaded by modprobe when present.
    for dep in $(modinfo -F softdep "$file"); do
        case $dep in pre:|post:) ;; *) add_module "$dep" 0 ;; esac
    done
}
for name in "${boot_modules[@]}" "${includes[@]}"; do
    add_module "$name" 1
done

log "building $(basename "$output") (busybox, ${#wanted[@]} modules, ${#kos[@]} extra .ko, ${#debs[@]} debs, ${#extras[@]} dirs)"
mkdir -p "$(dirname "$output")"
stage=$(mktemp -d "$guest/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# A merged-/usr root, like Debian's: trixie packages unpack into it unchanged.
mkdir -p "$stage"/{usr/bin,usr/sbin,usr/lib,usr/lib64,dev,proc,sys,run,tmp,root,etc/rnic/init.d,mnt}
for d in bin sbin lib lib64; do
    ln -s "usr/$d" "$stage/$d"
done
chmod 1777 "$stage/tmp"
cp "$busybox" "$stage/usr/bin/busybox"
for applet in $("$busybox" --list-full); do
    case $applet in
    */busybox|linuxrc) continue ;;
    bin/*|usr/bin/*) ln -sf /usr/bin/busybox "$stage/usr/bin/${applet##*/}" ;;
    sbin/*|usr/sbin/*) ln -sf /usr/bin/busybox "$stage/usr/sbin/${applet##*/}" ;;
    *) die "busybox applet in unexpected place: $applet" ;;
    esac
done
install -m 0755 "$here/init" "$stage/init"
install -m 0755 "$here/wait-ping" "$stage/usr/bin/wait-ping"
[ "$(id -u)" = 0 ] && mknod -m 600 "$stage/dev/console" c 5 1
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\ntty:x:5:\n' >"$stage/etc/group"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost\n' >"$stage/etc/hosts"

# Modules, uncompressed: busybox modprobe calls finit_module() without
# MODULE_INIT_COMPRESSED_FILE, and the archive is compressed as a whole anyway.
for name in "${!wanted[@]}"; do
    file=${wanted[$name]}
    if [ -n "${ko_path[$name]:-}" ]; then
        dest=$stage/$moddir/extra/$(basename "$file")
    else
        dest=$stage/$moddir/${module_path[$name]}
    fi
    mkdir -p "$(dirname "$dest")"
    case $file in
    *.ko.xz) xz -dc "$file" >"${dest%.xz}" ;;
    *.ko) cp "$file" "$dest" ;;
    *) die "$file: unknown module compression" ;;
    esac
done
for ko in "${kos[@]}"; do  # also those not loaded at boot
    mkdir -p "$stage/$moddir/extra"
    cp "$ko" "$stage/$moddir/extra/"
done
cp "$src_moddir"/modules.{builtin,builtin.modinfo,order} "$stage/$moddir/"
for name in "${boot_modules[@]}"; do
    echo "${name//-/_}"
done >"$stage/etc/rnic/modules"

# Image layers: Debian packages, then directories.
for deb in "${debs[@]}"; do
    dpkg-deb --fsys-tarfile "$deb" | tar -C "$stage" -x --keep-directory-symlink
done
for dir in "${extras[@]}"; do
    tar -C "$dir" -c . | tar -C "$stage" -x --keep-directory-symlink
done
depmod -b "$stage" "$kver"

(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    cpio --quiet --null -o -H newc --owner=0:0 --reproducible) |
    gzip -n -6 >"$output.tmp"
mv "$output.tmp" "$output"
echo "$initramfs_key" >"$stamp"
log "wrote $output ($(du -h "$output" | cut -f1))"
