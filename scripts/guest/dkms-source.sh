#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Put rnic.ko's sources into a DKMS source tree: the driver's .c/.h files,
# its Kbuild, dkms.conf (version filled in) and the ABI headers of
# include/rnic/ (the kernel test module stays out). Then, as root:
#   dkms install rnic/VERSION      (builds for every kernel with headers)
#
# Usage: scripts/guest/dkms-source.sh [DIR]
#   DIR   the source tree to write (default /usr/src/rnic-VERSION, VERSION
#         being the project's, meson.build); printed on stdout
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n "s/^ *version: '\([^']*\)',.*/\1/p" "$top/meson.build" | head -1)
[ -n "$version" ] || { echo "dkms-source: no version in meson.build" >&2; exit 1; }
dir=${1:-/usr/src/rnic-$version}

rm -rf "$dir"
mkdir -p "$dir/include/rnic"
cp "$top"/guest-driver/kernel/*.[ch] "$top/guest-driver/kernel/Kbuild" "$dir/"
cp "$top"/include/rnic/rnic-abi.h "$top"/include/rnic/rnic-abi-names.h \
   "$top"/include/rnic/rnic-user-abi.h "$dir/include/rnic/"
sed "s/@VERSION@/$version/" "$top/guest-driver/kernel/dkms.conf" >"$dir/dkms.conf"
echo "$dir"
