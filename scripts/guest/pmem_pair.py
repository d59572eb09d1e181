# SPDX-License-Identifier: GPL-2.0-or-later
"""Two guests with librpma over rnic's memory window as device-DAX: the
guest-side pieces of tests/guest/test_pmem.py and scripts/guest/pmem-bench.py
(rnic_rpma, tests/guest/pmem/; the image of scripts/guest/build-pmem.sh).
"""

import re
from typing import List, Tuple

# Guest 1 before its network: the window as an nvdimm region, device-DAX.
# No udev in the guest: the nvdimm and DAX drivers are loaded by hand
# (ndctl would load them, but only when it changes a namespace); the bus's
# wait_probe waits for libnvdimm's asynchronous probes. ndctl runs only
# when the namespace is not device-DAX yet; "pmem: created" says it did.
# The driver's debug line of a window MR ("on window") is switched on.
PMEM_SETUP = """
modprobe nd_pmem
modprobe device_dax
modprobe dax_pmem
modprobe rnic window_pmem=1 {options} || exit 1
echo 'module rnic func rnic_reg_window_mr +p' >/sys/kernel/debug/dynamic_debug/control
n=0
until [ -e /sys/bus/nd/devices/namespace0.0 ]; do
    n=$((n + 1)); [ $n -lt 50 ] || { echo "pmem: no namespace"; exit 1; }
    sleep 0.2
done
cat /sys/bus/nd/devices/ndbus0/wait_probe >/dev/null   # the async probes done
if ! ndctl list -N | grep -q '"mode":"devdax"'; then
    ndctl create-namespace -f -e namespace0.0 -m devdax >/dev/null || exit 1
    echo "pmem: created"
fi
n=0
until [ -c /dev/dax0.0 ]; do
    n=$((n + 1)); [ $n -lt 50 ] || { echo "pmem: no /dev/dax0.0"; exit 1; }
    sleep 0.2
done
ndctl list -RN | tr -d ' \\n' | sed 's/^/pmem: /'; echo
cat /sys/bus/dax/devices/dax0.0/size | sed 's/^/pmem: dax size /'
"""


def pmem_setup(options: str = "") -> str:
    """PMEM_SETUP with rnic.ko's module OPTIONS besides window_pmem=1."""
    return PMEM_SETUP.replace("{options}", options)


def server(region: int, options: str = "") -> str:
    """The server's step on guest 1 (10.0.0.1): rnic_rpma over /dev/dax0.0,
    REGION bytes after its header page, then the driver's lines of window
    MRs ("window-mr: ...")."""
    return (f"rnic_rpma -s -a 10.0.0.1 -f /dev/dax0.0 -z {region} {options}; rc=$?; "
            "dmesg | grep \"on window\" | sed \"s/^/window-mr: /\"; exit $rc")


def bench_client(iters: int) -> str:
    """The benchmark's client step: QD1, 64 B and 4 KiB, three modes."""
    return f"rnic_rpma -c 10.0.0.1 -t bench -n {iters}"


BENCH = re.compile(r"bench: bytes=(\d+) mode=(\S+) ops=\d+ ops_per_s=(\d+) "
                   r"lat_us_median=([\d.]+) lat_us_p99=([\d.]+)")


def bench_figures(text: str) -> List[Tuple[int, str, int, float, float]]:
    """(bytes, mode, ops/s, median us, p99 us) of every bench line."""
    return [(int(b), mode, int(ops), float(med), float(p99))
            for b, mode, ops, med, p99 in BENCH.findall(text)]
