#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Two TCG guests with -device rnic on one segment, kernel RDMA between them.

Builds rnic.ko, rnic_ktest.ko and the RDMA guest image
(scripts/guest/build-driver.sh, a no-op when up to date), boots two guests
on a dgram netdev over unix sockets, loads rnic.ko in both, pings through
the rnic's Ethernet function, then runs the kernel verbs test module between
them over RDMA-CM: guest A is the server, guest B the client (SEND/RECV,
RDMA WRITE/READ, atomics, fast-reg + SEND_WITH_INV, UD, ...), and prints
each test's result and the RoCE frame counters of both devices.

Usage: scripts/guest/two-guest-rdma.py [--iters N] [--qemu PATH]
Exit status 0 when every test passed.
"""

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "scripts/guest"))
from rnic_guest import DEFAULT_QEMU, GUEST_DIR, Guest, run_guests  # noqa: E402  pylint: disable=C0413

IMAGE = GUEST_DIR / "initramfs-rdma.cpio.gz"

SCRIPT = """
modprobe rnic || exit 1
ip link set eth0 up
ip addr add 10.0.0.{me}/24 dev eth0
wait-ping 10.0.0.{peer} || exit 1
rdma link | sed 's/^/{name}: /'
ping -c 2 10.0.0.{peer} | sed -n 's/^/{name}: /; /bytes from/p'
{wait}
t0=$(cut -d' ' -f1 /proc/uptime)
insmod /lib/modules/$(uname -r)/extra/rnic_ktest.ko role={role} {peer_arg} iters={iters}
status=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "{name}: rnic_ktest {role}: exit status $status in $(echo "$t1 $t0" | awk '{{ printf "%.2f", $1 - $2 }}') s"
dmesg | grep -E 'rnic_ktest: [a-z_]+: (PASS|FAIL)|connected to|connection from|all tests|FAILED' |
    sed 's/^\\[ *[0-9.]*\\] /{name}: /'
ethtool -S eth0 | grep -E ' (roce_tx_frames|roce_rx_frames|retransmits|eth_tx_frames|eth_rx_frames):' |
    tr -d ' ' | tr '\\n' ' ' | sed 's/^/{name}: counters /; s/$/\\n/'
exit $status
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--qemu", default=str(DEFAULT_QEMU))
    opts = parser.parse_args()

    build = subprocess.run([str(TOP / "scripts/guest/build-driver.sh")],
                           capture_output=True, text=True, check=False)
    if build.returncode != 0:
        print(build.stdout + build.stderr, file=sys.stderr)
        return 1
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rnic-two-") as sockets:
        guests = []
        for me, peer, role in ((1, 2, "server"), (2, 1, "client")):
            netdev = (f"dgram,id=n0,local.type=unix,local.path={sockets}/{me}.sock,"
                      f"remote.type=unix,remote.path={sockets}/{peer}.sock")
            script = SCRIPT.format(me=me, peer=peer, role=role, iters=opts.iters,
                                   name="A" if me == 1 else "B",
                                   peer_arg=f"peer=10.0.0.{peer}" if role == "client" else "",
                                   wait="sleep 2" if role == "client" else "")
            guests.append(Guest(script, name=f"guest-{'AB'[me - 1]}", qemu=opts.qemu,
                                initrd=IMAGE, timeout=300,
                                args=["-netdev", netdev, "-device",
                                      f"rnic,netdev=n0,mac=52:54:00:00:01:0{me}"]))
        results = run_guests(guests)
    ok = True
    for result in results:
        print(f"--- {result.name}: boot {result.boot_seconds or 0:.1f} s, "
              f"total {result.total_seconds:.1f} s, status {result.status}")
        lines = [l for l in result.output.splitlines() if re.match(r"^[AB]: ", l)]
        print("\n".join(lines) if result.ok else result.report())
        ok = ok and result.ok
    print(f"two guests, kernel RDMA over RoCEv2: {'all tests passed' if ok else 'FAILED'} "
          f"({time.monotonic() - start:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
