# SPDX-License-Identifier: GPL-2.0-or-later
"""tc netem on the ports of a Linux bridge that runs in a guest.

When the host kernel has no sch_netem (tc: "Specified qdisc kind is
unknown"), the bridge with netem on its ports moves into a third guest: its
Debian kernel bridges its two virtio NICs (br0, STP off) and runs
`tc qdisc add dev ethN root netem SPEC` on both ports, so each of the two
guests joined through it receives what netem lets through, exactly as on a
host bridge. Each link is a pair of unix datagram sockets (QEMU's
`-netdev dgram`), so no root is needed. The box prints its qdisc counters
every second on its console ("netem ethN sent=S dropped=D").

A segment for rdma_pair.run_pair (attach: the first guest gets link 0, the
second link 1). Used by tests/guest/test_networks.py (bridge-netem-*).
"""

import re
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from rnic_guest import Guest

BOX_SCRIPT = """
modprobe bridge || exit 1
modprobe sch_netem || exit 1
ip=/usr/bin/ip tc=/usr/sbin/tc    # iproute2's, not busybox's applets
$ip link add br0 type bridge stp_state 0 forward_delay 0 || exit 1
for dev in eth0 eth1; do
    $ip link set $dev master br0 up || exit 1
    $tc qdisc add dev $dev root netem {spec} || exit 1
done
$ip link set br0 up
echo BOX-READY
i=0
while [ $i -lt {seconds} ]; do
    for dev in eth0 eth1; do
        $tc -s qdisc show dev $dev | awk -v d=$dev \\
            '/netem/ {{ q = 1 }} q && / Sent / {{ gsub(",", ""); print "netem " d " sent=" $4 " dropped=" $7; exit }}'
    done
    sleep 1
    i=$((i + 1))
done
"""


class NetemBox:
    """Two links into a guest whose bridge has netem SPEC on both ports."""

    def __init__(self, spec: str, qemu: str, initrd: str, seconds: int = 900):
        self.spec = spec
        self.qemu = qemu
        self.initrd = initrd
        self.seconds = seconds
        self.links = 0
        self.tmp = tempfile.TemporaryDirectory(prefix="rnic-netem-")
        self.box: Optional[Guest] = None

    def sock(self, name: str) -> str:
        return str(Path(self.tmp.name) / f"{name}.sock")

    def start(self) -> "NetemBox":
        args: List[str] = []
        for link in (0, 1):
            args += ["-netdev", f"dgram,id=l{link},local.type=unix,"
                     f"local.path={self.sock(f'box{link}')},"
                     f"remote.type=unix,remote.path={self.sock(f'peer{link}')}",
                     "-device", f"virtio-net-pci,romfile=,netdev=l{link},"
                     f"mac=52:54:00:00:0e:0{link + 1}"]
        self.box = Guest(BOX_SCRIPT.format(spec=self.spec, seconds=self.seconds),
                         name="netem-box", qemu=self.qemu, initrd=self.initrd,
                         timeout=self.seconds + 120, args=args)
        self.box.launch()
        if not self.box.wait_console(r"^BOX-READY", 120):
            raise AssertionError(f"the netem box did not come up\n{self.box.console()}")
        return self

    def attach(self, nic: str, mac: str, device_id: str = "") -> Tuple[List[str], List[str]]:
        """QEMU arguments of the next guest (link 0, then link 1)."""
        link = self.links
        assert link < 2, "the box has two links"
        self.links += 1
        device = "rnic" if nic == "rnic" else "virtio-net-pci,romfile="
        if device_id:
            device += f",id={device_id}"
        netdev = (f"dgram,id=n0,local.type=unix,local.path={self.sock(f'peer{link}')},"
                  f"remote.type=unix,remote.path={self.sock(f'box{link}')}")
        return ["-netdev", netdev, "-device", f"{device},netdev=n0,mac={mac}"], []

    def stats(self) -> Dict[str, Dict[str, int]]:
        """The last counters the box printed, per port."""
        found: Dict[str, Dict[str, int]] = {}
        for dev, sent, dropped in re.findall(r"^netem (eth\d) sent=(\d+) dropped=(\d+)",
                                             self.box.console() if self.box else "",
                                             re.MULTILINE):
            found[dev] = {"sent": int(sent), "dropped": int(dropped)}
        return found

    def stop(self) -> str:
        """Stop the box; its console."""
        console = ""
        if self.box:
            console = self.box.console()
            self.box.stop()
        self.tmp.cleanup()
        return console

    def __enter__(self) -> "NetemBox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
