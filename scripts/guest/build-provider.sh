#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the rdma-core provider of rnic (guest-driver/provider) inside the
# rdma-core source tree of exactly the version the guest runs (the private
# provider ABI, IBVERBS_PRIVATE_<n>, must match: a provider is built against
# one libibverbs and refused by any other),
# and the guest image that carries it (docs/usage.md, "The rdma-core
# provider").
#
#   1. version: trixie's libibverbs1 (the guest userspace of
#      fetch-rdma-userspace.py), e.g. 56.1; RDMA_CORE_VERSION=... overrides;
#   2. rdma-core_<ver>.orig.tar.gz into build/dl: `apt-get source
#      --download-only rdma-core=<debver>` (it exits non-zero because the
#      archive's .dsc is missing, which is fine when the tarball came), or
#      the archive's pool URL; checked against apt's Sources SHA256;
#   3. unpacked into build/rdma-core/src, providers/rnic -> guest-driver/provider,
#      add_subdirectory(providers/rnic) added to its CMakeLists.txt (once);
#   4. cmake -GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 (once), ninja builds the
#      provider target only (incremental);
#   5. the guest files in build/provider/root: the library librnic.so.1
#      (the provider, with the public rnicdv_* calls, as libmlx5.so.1) in
#      /usr/lib/x86_64-linux-gnu/, its plugin link
#      libibverbs/librnic-rdmav<N>.so, /etc/libibverbs.d/rnic.driver and
#      <infiniband/rnicdv.h>, after checking that every private symbol the
#      library needs is exported by the guest's libibverbs (trixie's .deb),
#      and the guest test helpers (tests/guest/provider/*.c, linked against
#      the tree's libibverbs) in /usr/bin.
#
# Usage: scripts/guest/build-provider.sh [options]
#   --image             also build the guest image with the provider:
#                       build/guest/initramfs-provider.cpio.gz (the driver's
#                       RDMA image of build-driver.sh plus build/provider/root)
#   --pyverbs           also build build/guest/initramfs-pyverbs.cpio.gz: the
#                       image of --image plus python3, trixie's python3-pyverbs
#                       and rdma-core's own tests (tests/ of the source, in
#                       /opt/rdma-core-tests, with tests/guest/pyverbs/*.py
#                       added to them); implies --image
#   --middleware        also build build/guest/initramfs-middleware.cpio.gz:
#                       the image of --image plus trixie's UCX (ucx-utils),
#                       Open MPI (openmpi-bin) and libfabric (libfabric-bin);
#                       implies --image
#   --clean             remove build/rdma-core first (a fresh unpack and cmake)
#   -v, --verbose       show the build commands
#   -h, --help
#
# Outputs:
#   build/provider/librnic-rdmav<N>.so (a copy of librnic.so.1), rnic.driver
#   build/provider/root/   tree for scripts/guest/build-image.sh -e
#   build/provider/ibverbs-provider-rnic_<version>+rdma<56.1>_amd64.deb  the
#                          provider (its two files) for a trixie system
#   build/guest/initramfs-provider.cpio.gz   with --image
#   build/guest/initramfs-pyverbs.cpio.gz    with --pyverbs
#   build/guest/initramfs-middleware.cpio.gz with --middleware
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/scripts/guest
dl=$top/build/dl
rc=$top/build/rdma-core
out=$top/build/provider
root=$out/root
# shellcheck source=scripts/guest/kernel-choice.sh
. "$here/kernel-choice.sh"   # the images go to the chosen kernel's guest dir
image=$guest_dir/initramfs-provider.cpio.gz
multiarch=x86_64-linux-gnu

log() { echo "build-provider: $*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { sed -n '/^# Usage:/,/^#   -h/s/^# \{0,1\}//p' "$0"; }
now() { date +%s.%N; }
since() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }

build_image=0
pyverbs=0
middleware=0
clean=0
verbose=0
while [ $# -gt 0 ]; do
    case $1 in
    --image) build_image=1 ;;
    --pyverbs) pyverbs=1; build_image=1 ;;
    --middleware) middleware=1; build_image=1 ;;
    --clean) clean=1 ;;
    -v|--verbose) verbose=1 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done

for tool in apt-cache apt-get cmake ninja gcc tar sha256sum nm bc; do
    command -v "$tool" >/dev/null || die "$tool not found (scripts/setup-host.sh)"
done
mkdir -p "$dl" "$rc" "$out"
exec 9>"$rc/.lock"
flock 9
apt_opts=()
[ "$(id -u)" = 0 ] && apt_opts=(-o APT::Sandbox::User=root)
t_start=$(now)

# --- 1. the version ---------------------------------------------------------
# apt-cache is slow here: cache the answer, keyed on apt's package lists.
lists_key() {
    find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -o -maxdepth 1 -name '*_Sources*' |
        sort | xargs -r stat -c '%n %s %Y' | sha256sum | cut -d' ' -f1
}
resolve_version() {
    local key cache=$rc/.resolved debver sha
    key=$(lists_key)
    if [ -f "$cache" ] && [ "$(sed -n 1p "$cache")" = "$key" ]; then
        sed -n 2p "$cache"
        return
    fi
    # the guest's libibverbs1 is trixie's: the provider is built from its source
    debver=$(apt-cache madison libibverbs1 | awk -F'|' '$3 ~ /trixie\/main .*Packages/ {
                 gsub(/ /, "", $2); print $2; exit }')
    [ -n "$debver" ] || die "no libibverbs1 in trixie (apt sources: scripts/apt/; apt-get update?)"
    sha=$(apt-cache showsrc "rdma-core=$debver" 2>/dev/null |
          awk -v f="rdma-core_${debver%-*}.orig.tar.gz" '
              /^Checksums-Sha256:/ { s = 1; next } /^[^ ]/ { s = 0 }
              s && $3 == f { print $1; exit }')
    printf '%s\n%s %s\n' "$key" "$debver" "${sha:--}" >"$cache"
    echo "$debver ${sha:--}"
}
if [ -n "${RDMA_CORE_VERSION:-}" ]; then
    debver=$RDMA_CORE_VERSION-0
    sha=-
else
    read -r debver sha < <(resolve_version)
fi
ver=${debver#*:}
ver=${ver%-*}
tarball=$dl/rdma-core_$ver.orig.tar.gz

# --- 2. the source tarball --------------------------------------------------
tarball_ok() {
    [ -s "$tarball" ] || return 1
    [ "$sha" = - ] && return 0
    [ "$(sha256sum "$tarball" | cut -d' ' -f1)" = "$sha" ]
}
if ! tarball_ok; then
    rm -f "$tarball"
    log "downloading rdma-core $ver source"
    # the .dsc is missing from the archive: apt-get fails after the tarballs
    (cd "$dl" && apt-get source --download-only "${apt_opts[@]}" -q \
        "rdma-core=$debver" >/dev/null 2>&1) || true
    if ! tarball_ok; then
        rm -f "$tarball"
        url=http://deb.debian.org/debian/pool/main/r/rdma-core/rdma-core_$ver.orig.tar.gz
        log "apt-get source gave no tarball; trying $url"
        curl -fsSL -o "$tarball.part" "$url" || die "cannot download $url"
        mv "$tarball.part" "$tarball"
    fi
    tarball_ok || die "$tarball: SHA256 is not apt's $sha"
fi

# --- 3. source tree with the provider linked in ------------------------------
src=$rc/src
[ $clean = 1 ] && rm -rf "$src" "$rc/build"
stamp_src="$ver $(stat -c '%s %Y' "$tarball")"
if [ ! -f "$src/.stamp" ] || [ "$(cat "$src/.stamp")" != "$stamp_src" ]; then
    log "unpacking rdma-core $ver"
    rm -rf "$src" "$rc/build" "$rc/unpack"
    mkdir -p "$rc/unpack"
    tar -xzf "$tarball" -C "$rc/unpack"
    mv "$rc/unpack/rdma-core-$ver" "$src"
    rmdir "$rc/unpack"
    echo "$stamp_src" >"$src/.stamp"
fi
ln -sfn "$top/guest-driver/provider" "$src/providers/rnic"
if ! grep -q '^add_subdirectory(providers/rnic)' "$src/CMakeLists.txt"; then
    # next to the other MMIO/DMA providers (the HAVE_COHERENT_DMA block)
    sed -i '/^add_subdirectory(providers\/vmw_pvrdma)$/a add_subdirectory(providers/rnic)' \
        "$src/CMakeLists.txt"
    grep -q '^add_subdirectory(providers/rnic)' "$src/CMakeLists.txt" ||
        die "could not add providers/rnic to $src/CMakeLists.txt"
fi
pabi=$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")/\1/p' "$src/CMakeLists.txt")
[ -n "$pabi" ] || die "no IBVERBS_PABI_VERSION in $src/CMakeLists.txt"
lib=librnic-rdmav$pabi.so
# the library itself (rdma_shared_provider): librnic.so.1.0.<rdma-core version>
solib=librnic.so.1

# --- 4. configure once, build the provider ----------------------------------
bld=$rc/build
# no build-tree RPATH: the library goes into the guest as it is
cmake_args=(-GNinja -DNO_PYVERBS=1 -DNO_MAN_PAGES=1
            -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_SKIP_BUILD_RPATH=ON
            -DRNIC_TOP="$top")
if [ ! -f "$bld/build.ninja" ] || [ "$(cat "$bld/.cmake-args" 2>/dev/null)" != "${cmake_args[*]}" ]; then
    log "configuring rdma-core $ver"
    mkdir -p "$bld"
    t=$(now)
    (cd "$bld" && cmake "${cmake_args[@]}" "$src") >"$rc/cmake.log" 2>&1 ||
        { cat "$rc/cmake.log" >&2; die "cmake failed (log: $rc/cmake.log)"; }
    echo "${cmake_args[*]}" >"$bld/.cmake-args"
    log "configured in $(since "$t") s"
fi
t=$(now)
ninja_args=(-C "$bld" rnic)
[ $verbose = 1 ] && ninja_args+=(-v)
if ! ninja "${ninja_args[@]}" >"$rc/build.log" 2>&1; then
    cat "$rc/build.log" >&2
    die "provider build failed (log: $rc/build.log)"
fi
if grep -E 'warning:' "$rc/build.log" | grep -E 'providers/rnic|guest-driver' >&2; then
    die "the provider must build without warnings"
fi
log "built $lib (rdma-core $ver, IBVERBS_PRIVATE_$pabi) in $(since "$t") s"

# --- 5. check against the guest's libibverbs, install into the root ---------
built=$bld/lib/$lib
[ -f "$built" ] || die "$built missing after the build"
soreal=$(readlink -f "$bld/lib/$solib")
[ -f "$soreal" ] || die "$bld/lib/$solib missing after the build"
sofile=$(basename "$soreal")
public=$(nm -D --defined-only "$soreal" | awk '$2 == "T" { print $3 }' | sort | tr '\n' ' ')
case "$public" in
*rnicdv_create_mkey*) ;;
*) die "$solib exports no rnicdv_* calls: $public" ;;
esac
guest_verbs=$(ls "$dl"/trixie/libibverbs1_"$debver"_amd64.deb 2>/dev/null | head -1 || true)
if [ -n "$guest_verbs" ]; then
    chk=$rc/guest-libibverbs
    if [ ! -f "$chk/.stamp" ] || [ "$(cat "$chk/.stamp")" != "$guest_verbs" ]; then
        rm -rf "$chk"
        dpkg-deb -x "$guest_verbs" "$chk"
        echo "$guest_verbs" >"$chk/.stamp"
    fi
    exported=$(nm -D --defined-only --with-symbol-versions \
                   "$chk"/usr/lib/$multiarch/libibverbs.so.1.* |
               awk '{ print $3 }' | sed 's/@@*/@/' | sort -u)
    needed=$(nm -D --undefined-only --with-symbol-versions "$built" |
             awk '{ print $2 }' | grep '@IBVERBS' | sed 's/@@*/@/' | sort -u)
    missing=$(comm -13 <(echo "$exported") <(echo "$needed"))
    [ -z "$missing" ] || die "$lib needs symbols trixie's libibverbs1 $debver lacks: $missing"
    log "symbols checked against $(basename "$guest_verbs")"
else
    log "note: build/dl/trixie/libibverbs1_${debver}_amd64.deb not there yet, symbols not checked"
fi
cp -L "$built" "$out/$lib"
echo "driver rnic" >"$out/rnic.driver"
rm -rf "$root"
# as libmlx5: the library with its soname and development links, the
# provider plugin a link to it (one copy loaded, whoever opens it first)
install -D -m 0644 "$soreal" "$root/usr/lib/$multiarch/$sofile"
ln -s "$sofile" "$root/usr/lib/$multiarch/$solib"
ln -s "$solib" "$root/usr/lib/$multiarch/librnic.so"
mkdir -p "$root/usr/lib/$multiarch/libibverbs"
ln -s "../$sofile" "$root/usr/lib/$multiarch/libibverbs/$lib"
install -D -m 0644 "$out/rnic.driver" "$root/etc/libibverbs.d/rnic.driver"
install -D -m 0644 "$top/guest-driver/provider/rnicdv.h" "$root/usr/include/infiniband/rnicdv.h"

# The provider as a Debian package for a trixie system (apt install ./FILE):
# the files of the root tree (library, links, driver file, rnicdv.h),
# nothing else; the provider tests boot those same files (the image
# overlay below is this tree).
pkg_version=$(sed -n "s/^ *version: '\([^']*\)',.*/\1/p" "$top/meson.build" | head -1)+rdma$ver
deb=$out/ibverbs-provider-rnic_${pkg_version}_amd64.deb
pkg=$out/deb
rm -rf "$pkg" "$out"/ibverbs-provider-rnic_*.deb
mkdir -p "$pkg/DEBIAN"
cp -a "$root/." "$pkg/"
cat >"$pkg/DEBIAN/control" <<EOF
Package: ibverbs-provider-rnic
Version: $pkg_version
Architecture: amd64
Maintainer: qemu-rnic project <qemu-rnic@localhost>
Depends: libc6 (>= 2.38), libibverbs1 (>= $ver), libibverbs1 (<< ${ver%%.*}.999)
Section: net
Priority: optional
Installed-Size: $(du -sk "$root" | cut -f1)
Description: libibverbs provider of the qemu-rnic emulated RoCEv2 RNIC
 $solib (provider plugin $lib and its rnic.driver entry) and
 <infiniband/rnicdv.h>: kernel-bypass verbs on a QEMU guest's
 -device rnic (rnic.ko in the guest kernel) and the rnicdv_* direct
 verbs (mapped STags, as mlx5dv's mkeys). Built inside
 rdma-core $ver's tree: it uses libibverbs' private provider ABI, so it
 works with that release series of libibverbs1 only.
EOF
echo "/etc/libibverbs.d/rnic.driver" >"$pkg/DEBIAN/conffiles"
dpkg-deb --root-owner-group --build "$pkg" "$deb" >/dev/null || die "dpkg-deb failed"
rm -rf "$pkg"
log "package $(basename "$deb")"

# Test helpers: small verbs programs linked against the guest's libibverbs
# (and librnic.so.1 for those that call rnicdv_*: <infiniband/rnicdv.h> is
# in the tree's include/ too).
if ls "$top"/tests/guest/provider/*.c >/dev/null 2>&1; then
    t=$(now)
    ninja -C "$bld" ibverbs >>"$rc/build.log" 2>&1 || die "libibverbs build failed"
    mkdir -p "$root/usr/bin"
    for c in "$top"/tests/guest/provider/*.c; do
        [ -e "$c" ] || continue
        name=$(basename "$c" .c)
        gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -I"$bld/include" \
            -I"$top/include" -o "$root/usr/bin/$name" "$c" \
            -L"$bld/lib" -libverbs -Wl,--as-needed -lrnic -Wl,--no-as-needed -lpthread ||
            die "$c: build failed"
    done
    log "built the test helpers in $(since "$t") s"
fi

# --- apps/cbrpc: the call-by-reference RPC library and its programs -----------
# (docs/cbrpc.md) built (make, build-essential) against the tree's
# libibverbs and librdmacm, like the test helpers: libcbrpc.so.1,
# libcbrpc.a, cbrpc.h and cbrpc.pc into the root, cbrpc_test and cbrpc-kv
# into /usr/bin.
if [ -f "$top/apps/cbrpc/Makefile" ]; then
    t=$(now)
    command -v make >/dev/null || die "make not found (scripts/setup-host.sh)"
    ninja -C "$bld" ibverbs rdmacm >>"$rc/build.log" 2>&1 || die "libibverbs/librdmacm build failed"
    make -s -C "$top/apps/cbrpc" O="$out/cbrpc" RDMA_INC="$bld/include" RDMA_LIB="$bld/lib" \
        LDFLAGS="-Wl,-rpath,/usr/lib/$multiarch" DESTDIR="$root" install >&2 ||
        die "apps/cbrpc: build failed"
    log "built apps/cbrpc in $(since "$t") s"
fi

# --- 6. the guest image ---------------------------------------------------------
if [ $build_image = 1 ]; then
    t=$(now)
    "$here/build-driver.sh" >&2 || die "build-driver.sh failed"
    base=$guest_dir/initramfs-rdma.cpio.gz
    [ -f "$base" ] || die "$base missing after build-driver.sh"
    # The kernel unpacks concatenated archives in order: the provider's
    # files land in the RDMA image's root (docs/guest-image.md).
    overlay=$out/overlay.cpio.gz
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc -R 0:0 | gzip -9n) >"$overlay"
    cat "$base" "$overlay" >"$image.tmp"
    mv "$image.tmp" "$image"
    log "image $image in $(since "$t") s"
fi

# --- 7. images with more of trixie on top -----------------------------------
# extra_image NAME PACKAGE...: build/guest/initramfs-NAME.cpio.gz, the image of
# --image plus the .debs PACKAGEs add to the userspace of build-driver.sh,
# without the rdma-core daemon package and what only it needs (systemd, udev,
# ...) nor what matches $extra_skip (an ERE on the .deb names); extra_files
# (a function, if set) adds files to the tree in $1 first; extra_stamp (if
# set) names what else the tree is made from.
extra_skip='^$'
extra_image() {
    local name=$1 xroot=$out/$1-root ximage=$guest_dir/initramfs-$1.cpio.gz t stamp d
    shift
    t=$(now)
    mapfile -t extra < <(comm -13 <("$here/fetch-rdma-userspace.py" | sort) \
                                  <("$here/fetch-rdma-userspace.py" "$@" | sort) |
                         grep -vE '/(rdma-core|systemd|udev|libsystemd-shared|mount|tzdata)_' |
                         grep -vE "$extra_skip")
    [ ${#extra[@]} -gt 0 ] || die "no packages resolved for $*"
    stamp="$(printf '%s\n' "${extra[@]}" | xargs -r stat -c '%n %s %Y' | sha256sum | cut -d' ' -f1) $ver${extra_stamp:+ $extra_stamp}"
    if [ ! -f "$out/$name.cpio.gz" ] || [ "$(cat "$out/$name.stamp" 2>/dev/null)" != "$stamp" ]; then
        rm -rf "$xroot"
        mkdir -p "$xroot"
        for deb in "${extra[@]}"; do
            dpkg-deb -x "$deb" "$xroot"
        done
        if declare -F extra_files >/dev/null; then
            extra_files "$xroot"
        fi
        # merged /usr: the base image's /lib, /bin, /sbin are symlinks
        for d in lib lib64 bin sbin; do
            if [ -d "$xroot/$d" ] && [ ! -L "$xroot/$d" ]; then
                cp -a "$xroot/$d/." "$xroot/usr/$d/"
                rm -rf "${xroot:?}/$d"
            fi
        done
        (cd "$xroot" && find . -mindepth 1 | LC_ALL=C sort |
            cpio --quiet -o -H newc -R 0:0 | gzip -6n) >"$out/$name.cpio.gz"
        echo "$stamp" >"$out/$name.stamp"
    fi
    cat "$image" "$out/$name.cpio.gz" >"$ximage.tmp"
    mv "$ximage.tmp" "$ximage"
    log "image $ximage (${#extra[@]} more packages) in $(since "$t") s"
}

# python3, pyverbs and rdma-core's own tests, with ours among them
# (tests/guest/pyverbs: rnicdv's ctypes bindings and test_mlx5_mkey.py
# ported to them, test_rnicdv_mkey.py)
if [ $pyverbs = 1 ]; then
    extra_files() {
        mkdir -p "$1/opt/rdma-core-tests"
        cp -r "$src/tests" "$1/opt/rdma-core-tests/tests"
        cp "$top"/tests/guest/pyverbs/*.py "$1/opt/rdma-core-tests/tests/"
    }
    extra_stamp=$(cat "$top"/tests/guest/pyverbs/*.py | sha256sum | cut -d' ' -f1)
    extra_image pyverbs python3-pyverbs
    unset -f extra_files
    extra_stamp=
fi

# the middleware: UCX, Open MPI, libfabric; not the GPU runtimes their
# plugins could load (ROCm, Level Zero, OpenCL: dlopen()ed, tens of MB), X11
# and ssh (mpirun starts its daemons by the guests' own launcher)
# plus tests/guest/mpi: mpirun's launch agent (rnic-rsh, rnic-rshd) and the
# MPI check program, built against trixie's Open MPI (mpi.h from
# libopenmpi-dev, which the image does not get; libmpi.so from the tree)
mpi_files() {
    local mpidev inc lib=$1/usr/lib/$multiarch
    mpidev=$(ls "$dl"/libopenmpi-dev_*_amd64.deb 2>/dev/null | tail -1 || true)
    if [ -z "$mpidev" ]; then
        (cd "$dl" && apt-get "${apt_opts[@]}" -q download libopenmpi-dev/trixie) >&2 ||
            die "apt-get download libopenmpi-dev/trixie failed"
        mpidev=$(ls "$dl"/libopenmpi-dev_*_amd64.deb | tail -1)
    fi
    inc=$out/mpi-dev
    rm -rf "$inc"
    dpkg-deb -x "$mpidev" "$inc"
    install -m 755 "$top"/tests/guest/mpi/rnic-rsh "$top"/tests/guest/mpi/rnic-rshd "$1/usr/bin/"
    gcc -O2 -g -Wall -Wextra -Werror -std=gnu11 -I"$inc/usr/lib/$multiarch/openmpi/include" \
        -o "$1/usr/bin/rnic_mpi_check" "$top/tests/guest/mpi/rnic_mpi_check.c" \
        -L"$lib" -l:libmpi.so.40 -Wl,--allow-shlib-undefined ||
        die "rnic_mpi_check: build failed"
}
if [ $middleware = 1 ]; then
    extra_skip='/(libamd|libhsa|libllvm|libz3|libdrm|libze1|ocl-icd|libxnvctrl|libx11|libxau|libxcb|libxdmcp|libxext|libfido2|openssh-client|libcbor|libedit)'
    extra_stamp=$(cat "$top"/tests/guest/mpi/* | sha256sum | cut -d' ' -f1)
    extra_files() { mpi_files "$@"; }
    extra_image middleware ucx-utils openmpi-bin libfabric-bin
    unset -f extra_files
    extra_skip='^$'
    extra_stamp=
fi
log "done in $(since "$t_start") s: $out/$lib, $root"
