#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot one TCG guest with the rnic and show what the guest kernel sees of it:
# IDs, class, BARs, the capability lists (MSI-X table size and location).
# The IDs come from include/rnic/rnic-abi.h.
#
#   scripts/guest/show-device.sh                      (-device rnic)
#   scripts/guest/show-device.sh -device pcie-root-port,id=rp0 -device rnic,bus=rp0
#   RNIC_QEMU=/path/to/qemu-system-x86_64 scripts/guest/show-device.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)

abi_define() {
    sed -nE "s/^#define[[:space:]]+$1[[:space:]]+(0x[0-9a-fA-F]+|[0-9]+).*/\1/p" \
        "$top/include/rnic/rnic-abi.h"
}
vendor=$(abi_define RNIC_PCI_VENDOR_ID)
device=$(abi_define RNIC_PCI_DEVICE_ID)
[ -n "$vendor" ] && [ -n "$device" ] || { echo "show-device: no RNIC_PCI_VENDOR_ID/DEVICE_ID in include/rnic/rnic-abi.h" >&2; exit 1; }
[ $# -gt 0 ] || set -- -device rnic

"$top/scripts/guest/build-image.sh" >/dev/null 2>&1 || "$top/scripts/guest/build-image.sh"

script=$(mktemp)
trap 'rm -f "$script"' EXIT
{
    cat "$top/scripts/guest/pci-info.sh"
    cat <<EOF
echo "pci: kernel=\$(uname -r)"
found=\$(pci_find $(printf '0x%04x 0x%04x' "$vendor" "$device"))
[ -n "\$found" ] || { echo "pci: none"; exit 1; }
for dev in \$found; do pci_show "\$dev"; done
EOF
} >"$script"

echo "Booting a q35 TCG guest with: $*"
status=0
output=$("$top/scripts/guest/run-guest.py" "$script" -- "$@") || status=$?
awk '
    /^pci: kernel=/ { sub(/^pci: kernel=/, ""); print "guest kernel " $0; next }
    /^pci: none/    { print "no rnic function found in the guest"; next }
    /^pci: slot=/   { sub(/^pci: slot=/, ""); print "\nrnic at PCI " $0; next }
    /^pci: bar/     { sub(/^pci: /, ""); split($1, b, "="); printf "  %-6s %-14s %-12s %s\n", toupper(b[1]), b[2], $2, $3; next }
    /^pci: e?cap=/  { split($2, at, "="); split($3, id, "="); split($4, name, "=")
                      rest = ""; for (i = 5; i <= NF; i++) rest = rest " " $i
                      printf "  %-6s %-6s id %-7s %-6s%s\n", at[1] == "ecap" ? "ECAP" : "CAP", at[2], id[2], name[2], rest; next }
    /^pci: /        { sub(/^pci: /, ""); print "  " $0; next }
    { print "  | " $0 }
' <<<"$output"
if [ $status -eq 0 ]; then
    echo "guest powered off cleanly (script status 0)"
else
    echo "guest script failed (status $status)" >&2
fi
exit $status
