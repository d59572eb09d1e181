#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Obtain QEMU 10.0.x from Debian's 'qemu' source package (trixie), apply
# Debian's patches, overlay this repository's device, headers and qtests
# (symlinks), apply the integration lines, configure a reduced x86_64 build
# and build qemu-system-x86_64 plus the project's qtest binary.
#
# Reuses everything already done: a second run with nothing changed only
# asks ninja, which finds nothing to do.
#
#   scripts/build-qemu.sh            fetch + overlay + configure + build
#   scripts/build-qemu.sh --install  the same, then install qemu-system-x86_64,
#                                    qemu-img and qemu-bridge-helper into the
#                                    prefix (a libvirt <emulator>)
#   QEMU_SANITIZE=1 scripts/...      separate clang ASan/UBSan + libFuzzer build
#                                    in build/qemu/build-asan: the same binaries
#                                    plus qemu-fuzz-x86_64 (generic-fuzz-rnic),
#                                    -O0 with line tables (QEMU_SANITIZE_CFLAGS
#                                    overrides, e.g. "-O1 -g" for long fuzzing)
#   RNIC_QEMU_DEVICES=full ...       QEMU's whole default x86 device set plus
#                                    rnic, in build/qemu/build-full (default:
#                                    the reduced set of scripts/qemu/rnic-devices.mak)
#   RNIC_QEMU_PREFIX=DIR ...         the prefix (default /opt/qemu-rnic); its
#                                    etc/qemu/bridge.conf and libexec are what
#                                    -netdev bridge uses
#
# KVM is enabled: the binary uses it with -accel kvm where /dev/kvm works
# and runs TCG elsewhere (the tests use TCG).
set -euo pipefail
install=0
case "${1:-}" in
    --install) install=1 ;;
    "") ;;
    *) echo "usage: $0 [--install]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
work=$top/build/qemu
dl=$top/build/dl
mkdir -p "$work" "$dl"

log() { echo "build-qemu: $*"; }

# --- 1. source: resolve the current trixie 10.0.x at build time -----------
resolve_version() {
    apt-cache showsrc qemu 2>/dev/null |
        awk '/^Version:/ { print $2 }' | grep -E '^1:10\.0\.' | sort -V | tail -1
}

if [ ! -e "$work/src/VERSION" ]; then
    ver=$(resolve_version)
    [ -n "$ver" ] || { log "no qemu 10.0.x source in trixie (is the deb-src entry installed? run scripts/setup-host.sh)"; exit 1; }
    upstream=${ver#1:}
    log "fetching qemu $upstream from Debian trixie"
    (cd "$dl" && apt-get source --download-only "qemu=$ver" >/dev/null)
    dsc=$(ls "$dl"/qemu_"${upstream}".dsc)
    rm -rf "$work/src.tmp"
    dpkg-source -x "$dsc" "$work/src.tmp" >/dev/null
    echo "$upstream" > "$work/src.tmp/DEBIAN_VERSION"
    mv "$work/src.tmp" "$work/src"
fi
src=$work/src
log "QEMU source: Debian qemu $(cat "$src/DEBIAN_VERSION") (upstream $(cat "$src/VERSION"))"

# --- 2. overlay: symlinks into the QEMU tree -------------------------------
link() {  # link <target in repo> <path in QEMU tree>
    local target=$1 path=$src/$2
    mkdir -p "$(dirname "$path")"
    if [ "$(readlink "$path" 2>/dev/null)" != "$target" ]; then
        rm -rf "$path"
        ln -s "$target" "$path"
    fi
}
link "$top/hw/rdma/rnic" hw/rdma/rnic
link "$top/include/rnic" include/rnic
link "$top/qtest" tests/qtest/rnic
link "$top/tests/common" tests/qtest/rnic-common
link "$top/scripts/qemu/rnic-devices.mak" configs/devices/x86_64-softmmu/rnic.mak
# Older runs linked include/hw/rdma (the device state header, now beside the
# device as hw/rdma/rnic/rnic.h); QEMU 10.0 has no such directory, so a
# symlink there is a stale one of ours.
if [ -L "$src/include/hw/rdma" ]; then
    rm -f "$src/include/hw/rdma"
fi

# --- 3. integration lines (idempotent) -------------------------------------
add_line_after() {  # add_line_after <file> <line> <anchor regex> (anchor line exists)
    local file=$src/$1 line=$2 anchor=$3
    grep -qxF "$line" "$file" && return 0
    grep -qE "$anchor" "$file" || { log "anchor '$anchor' not found in $1"; exit 1; }
    awk -v l="$line" -v a="$anchor" '{ print } !done && $0 ~ a { print l; done=1 }' \
        "$file" > "$file.tmp" && mv "$file.tmp" "$file"
}
add_line_before() {  # add_line_before <file> <line> <anchor regex>
    local file=$src/$1 line=$2 anchor=$3
    grep -qxF "$line" "$file" && return 0
    grep -qE "$anchor" "$file" || { log "anchor '$anchor' not found in $1"; exit 1; }
    awk -v l="$line" -v a="$anchor" '!done && $0 ~ a { print l; done=1 } { print }' \
        "$file" > "$file.tmp" && mv "$file.tmp" "$file"
}
add_line_after hw/Kconfig "source rdma/rnic/Kconfig" '^source net/Kconfig$'
grep -qxF "subdir('rdma/rnic')" "$src/hw/meson.build" || echo "subdir('rdma/rnic')" >> "$src/hw/meson.build"
add_line_before meson.build "trace_events_subdirs += have_system ? ['hw/rdma/rnic'] : []" "^subdir\\('trace'\\)$"
add_line_before tests/qtest/meson.build "subdir('rnic')" '^qtests = \{$'
# generic-fuzz configurations (qemu-fuzz-x86_64 --fuzz-target=generic-fuzz-NAME):
# one rnic alone on a hub (its frames go nowhere), the same with a memory
# window (a shared file in /dev/shm: regions of kind SCM, persistence), and
# two rnics on one hub (each one's frames are the other's receive path, and
# F9's re-entry).
add_line_after tests/qtest/fuzz/generic_fuzz_configs.h \
    '    {.name = "rnic", .args = "-machine q35 -nodefaults -device rnic,netdev=n0 -netdev hubport,id=n0,hubid=0", .objects = "rnic*"},' \
    '^const generic_fuzz_config predefined_configs\[\] = \{$'
add_line_after tests/qtest/fuzz/generic_fuzz_configs.h \
    '    {.name = "rnic-scm", .args = "-machine q35 -nodefaults -object memory-backend-file,id=w0,size=1M,mem-path=/dev/shm,share=on -device rnic,netdev=n0,scm=w0 -netdev hubport,id=n0,hubid=0", .objects = "rnic*"},' \
    '^const generic_fuzz_config predefined_configs\[\] = \{$'
add_line_after tests/qtest/fuzz/generic_fuzz_configs.h \
    '    {.name = "rnic-pair", .args = "-machine q35 -nodefaults -device rnic,netdev=n0 -netdev hubport,id=n0,hubid=0 -device rnic,netdev=n1 -netdev hubport,id=n1,hubid=0", .objects = "rnic*"},' \
    '^const generic_fuzz_config predefined_configs\[\] = \{$'

# --- 4. configure (again only when the flags changed) ----------------------
# Firmware comes from Debian's packages, not from the stripped tarball.
firmware=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
bdir=$work/build
prefix=${RNIC_QEMU_PREFIX:-/opt/qemu-rnic}
flags=(--python=/usr/bin/python3 --target-list=x86_64-softmmu
       --prefix="$prefix" --with-devices-x86_64=rnic
       --firmwarepath=$firmware
       --disable-docs --disable-werror --enable-slirp --disable-gtk
       --disable-sdl --disable-vnc --disable-download --disable-rust
       --disable-install-blobs --disable-xen --enable-kvm --enable-tcg
       --disable-spice --disable-opengl --disable-curses --disable-capstone
       --disable-libusb --disable-usb-redir --disable-smartcard --disable-linux-io-uring
       --disable-plugins --enable-trace-backends=log)
cc=gcc cxx=g++
case "${RNIC_QEMU_DEVICES:-reduced}" in
    reduced) flags+=(--without-default-devices) ;;
    full) bdir=$work/build-full ;;
    *) log "RNIC_QEMU_DEVICES must be 'reduced' or 'full'"; exit 2 ;;
esac
targets=(qemu-system-x86_64 qemu-img qemu-bridge-helper
         tests/qtest/rnic/rnic-qos-test tests/qtest/rnic/rnic-cli-test)
if [ "${QEMU_SANITIZE:-0}" = 1 ]; then
    # clang, so that one build serves the sanitized qtests and libFuzzer
    # (--enable-fuzzing needs -fsanitize=fuzzer: clang + libclang-rt-14-dev).
    # -O0 and line tables (symbolized stacks with lines) build in 40 % of
    # -O2 -g's time; the qtests and the test command's fuzz smoke need no
    # more. QEMU_SANITIZE_CFLAGS="-O1 -g" for long fuzzing campaigns.
    bdir=$bdir-asan
    cc=clang cxx=clang++
    flags+=(--enable-fuzzing --enable-asan --enable-ubsan
            "--extra-cflags=${QEMU_SANITIZE_CFLAGS:--O0 -gline-tables-only}")
    targets+=(qemu-fuzz-x86_64)
fi
if command -v ccache >/dev/null; then
    flags+=(--cc="ccache $cc" --cxx="ccache $cxx")
else
    flags+=(--cc="$cc" --cxx="$cxx")
fi
want="${flags[*]}"
if [ ! -e "$bdir/build.ninja" ] || [ "$(cat "$bdir/.rnic-configure" 2>/dev/null)" != "$want" ]; then
    log "configuring in $bdir"
    rm -rf "$bdir"; mkdir -p "$bdir"
    (cd "$bdir" && "$src/configure" "${flags[@]}" > configure.log 2>&1) ||
        { tail -30 "$bdir/configure.log"; exit 1; }
    echo "$want" > "$bdir/.rnic-configure"
fi

# Binaries run from the build directory look for firmware in qemu-bundle only.
mkdir -p "$bdir/qemu-bundle/usr/share"
for d in /usr/share/qemu/*; do
    [ -e "$bdir/qemu-bundle/usr/share/qemu/$(basename "$d")" ] && continue
    mkdir -p "$bdir/qemu-bundle/usr/share/qemu"
    ln -sf "$d" "$bdir/qemu-bundle/usr/share/qemu/"
done
for d in /usr/share/seabios/* /usr/lib/ipxe/qemu/*; do
    [ -e "$d" ] || continue
    [ -e "$bdir/qemu-bundle/usr/share/qemu/$(basename "$d")" ] || ln -sf "$d" "$bdir/qemu-bundle/usr/share/qemu/"
done

# --- 5. build ----------------------------------------------------------------
log "building in $bdir"
ninja -C "$bdir" "${targets[@]}"
echo "$(cat "$src/DEBIAN_VERSION")" > "$bdir/RNIC_QEMU_VERSION"
log "done: $bdir/qemu-system-x86_64 (QEMU $(cat "$src/DEBIAN_VERSION"))"

# --- 6. install (--install) ----------------------------------------------------
# Only what a user runs: the emulator, qemu-img and the bridge helper, at the
# paths the binaries were configured for (firmware stays Debian's). The
# helper is setuid root, executable by the group kvm as in Debian's package,
# so that an unprivileged QEMU (libvirt's qemu:// session, a user) can attach
# to the bridges its bridge.conf allows; bridge.conf allows none until edited.
if [ "$install" = 1 ]; then
    log "installing into $prefix"
    install -D -m 755 "$bdir/qemu-system-x86_64" "$prefix/bin/qemu-system-x86_64"
    install -D -m 755 "$bdir/qemu-img" "$prefix/bin/qemu-img"
    if getent group kvm >/dev/null; then
        install -D -o root -g kvm -m 4750 "$bdir/qemu-bridge-helper" "$prefix/libexec/qemu-bridge-helper"
    else
        install -D -m 755 "$bdir/qemu-bridge-helper" "$prefix/libexec/qemu-bridge-helper"
    fi
    if [ ! -e "$prefix/etc/qemu/bridge.conf" ]; then
        install -d "$prefix/etc/qemu"
        printf '%s\n' "# qemu-bridge-helper ACL: one 'allow BRIDGE' (or 'allow all') per line" \
            "# allow br0" > "$prefix/etc/qemu/bridge.conf"
    fi
    log "installed: $prefix/bin/qemu-system-x86_64, qemu-img, $prefix/libexec/qemu-bridge-helper"
fi
