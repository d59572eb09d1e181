# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the guest build scripts: the guest kernel they build for,
# RNIC_GUEST_KERNEL (the same variable tells the guest tests which images
# to boot, scripts/guest/rnic_guest.py):
#   6.12  Debian's 6.12 from bookworm-backports (the default; trixie's series)
#   6.1   Debian bookworm's stock 6.1 (bookworm and bookworm-security)
# Sets kernel_series, kernel_suites (a regex of apt suites to take the
# highest version from), guest_suffix, guest_dir and guest_driver_dir.
kernel_series=${RNIC_GUEST_KERNEL:-6.12}
case $kernel_series in
6.12) kernel_suites='bookworm-backports'; guest_suffix= ;;
6.1) kernel_suites='bookworm(-security|-updates)?'; guest_suffix=-6.1 ;;
*) echo "RNIC_GUEST_KERNEL=$kernel_series: must be 6.12 or 6.1" >&2; exit 2 ;;
esac
guest_dir=$top/build/guest$guest_suffix
guest_driver_dir=$top/build/guest-driver$guest_suffix
