# SPDX-License-Identifier: GPL-2.0-or-later
"""A Linux bridge with one tap per QEMU, in a private network namespace.

The segment the guests share is the host kernel's own bridge: each QEMU
runs inside the namespace (Guest's wrapper: `ip netns exec NS`) and opens
its tap there, either one the test made (`-netdev tap,ifname=...,
script=no,downscript=no`) or one qemu-bridge-helper makes and enslaves
(`-netdev bridge,br=...,helper=...`). Traffic never leaves the namespace;
`tc netem` on a tap delays, drops, duplicates or reorders what that guest
receives. Needs root (namespaces, taps); the tests skip without it.

Used by tests/guest/test_networks.py (and migrate_rdma.run_migration,
rdma_pair.run_pair through their `segment` argument).
"""

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

TOP = Path(__file__).resolve().parents[2]
BRIDGE = "rnicbr0"


def can_run() -> Optional[str]:
    """None if this host can make the namespace, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespace, bridge, taps)"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode:
        return "ip netns does not work here"
    return None


class Bridge:
    """BRIDGE in namespace rnic-<pid>-<n>; taps tap0, tap1, ... on it."""

    _count = 0

    def __init__(self, mtu: int = 1500):
        Bridge._count += 1
        self.ns = f"rnic-{os.getpid()}-{Bridge._count}"
        self.mtu = mtu
        self.taps: List[str] = []
        self.events: List[str] = []
        self.on_tap: Optional[Callable[[str], None]] = None  # e.g. netem on each
        self.wrapper = ["ip", "netns", "exec", self.ns]

    # --- setup -------------------------------------------------------------
    def ip(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["ip", "-n", self.ns, *args], capture_output=True, text=True)
        if check and proc.returncode:
            raise RuntimeError(f"ip -n {self.ns} {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def run(self, *args: str, check: bool = True) -> str:
        """A command inside the namespace (tc, bridge, sysctl)."""
        proc = subprocess.run(self.wrapper + list(args), capture_output=True, text=True)
        if check and proc.returncode:
            raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def start(self) -> "Bridge":
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        self.ip("link", "set", "lo", "up")
        # no STP: a port forwards as soon as it is up
        self.ip("link", "add", BRIDGE, "mtu", str(self.mtu), "type", "bridge",
                "stp_state", "0", "forward_delay", "0")
        self.ip("link", "set", BRIDGE, "up")
        return self

    def tap(self) -> str:
        """A new tap on the bridge (QEMU opens it with script=no)."""
        name = f"tap{len(self.taps)}"
        self.ip("tuntap", "add", name, "mode", "tap")
        self.ip("link", "set", name, "mtu", str(self.mtu), "master", BRIDGE, "up")
        self.taps.append(name)
        if self.on_tap:
            self.on_tap(name)
        return name

    def netdev_args(self, nic: str, mac: str, netdev_id: str = "n0",
                    device_id: str = "", helper: bool = False) -> List[str]:
        """QEMU arguments: NIC (rnic, or virtio-net for a Soft-RoCE peer) on
        a tap of the bridge: a tap of ours, or (HELPER) one that
        qemu-bridge-helper creates and enslaves."""
        if helper:
            netdev = f"bridge,id={netdev_id},br={BRIDGE},helper={bridge_helper()}"
        else:
            netdev = f"tap,id={netdev_id},ifname={self.tap()},script=no,downscript=no"
        device = "rnic" if nic == "rnic" else "virtio-net-pci,romfile="
        if device_id:
            device += f",id={device_id}"
        return ["-netdev", netdev, "-device", f"{device},netdev={netdev_id},mac={mac}"]

    def attach(self, nic: str, mac: str, device_id: str = "",
               helper: bool = False) -> Tuple[List[str], List[str]]:
        """A guest's QEMU arguments (netdev_args) and the command its QEMU
        runs under (into the namespace)."""
        return self.netdev_args(nic, mac, device_id=device_id, helper=helper), self.wrapper

    # --- what the bridge sees ------------------------------------------------
    def ports(self) -> List[str]:
        """Every port of the bridge (ours and the helper's taps)."""
        links = json.loads(self.ip("-j", "link", "show", "master", BRIDGE) or "[]")
        return [link["ifname"] for link in links]

    def port_of(self, mac: str) -> Optional[str]:
        """The port the bridge has learned MAC on (None: not learned)."""
        entries = json.loads(self.run("bridge", "-j", "fdb", "show", "br", BRIDGE) or "[]")
        for entry in entries:
            if entry.get("mac", "").lower() == mac.lower() and "permanent" not in \
                    entry.get("state", "") and entry.get("ifname") != BRIDGE:
                return entry.get("ifname")
        return None

    def frames_from(self, port: Optional[str]) -> int:
        """Frames the bridge received on PORT (what its guest sent)."""
        if not port:
            return 0
        link = json.loads(self.ip("-j", "-s", "link", "show", port))[0]
        return int(link["stats64"]["rx"]["packets"])

    def netem(self, port: str, spec: str) -> None:
        """tc netem on PORT's egress: what the guest behind PORT receives."""
        self.run("tc", "qdisc", "replace", "dev", port, "root", "netem", *spec.split())
        self.events.append(f"netem {port}: {spec}")

    def netem_missing(self) -> Optional[str]:
        """None if the kernel has netem (tried on a scratch veth), else why not."""
        self.ip("link", "add", "probe0", "type", "veth", "peer", "name", "probe1")
        try:
            proc = subprocess.run(self.wrapper + ["tc", "qdisc", "add", "dev", "probe0", "root",
                                                  "netem", "delay", "1ms"],
                                  capture_output=True, text=True)
        finally:
            self.ip("link", "del", "probe0", check=False)
        if proc.returncode:
            return f"the host kernel has no tc netem (sch_netem): {proc.stderr.strip()}"
        return None

    def netem_stats(self, port: str) -> Dict[str, int]:
        """The netem qdisc's counters on PORT (sent, dropped)."""
        data = json.loads(self.run("tc", "-s", "-j", "qdisc", "show", "dev", port) or "[]")
        for qdisc in data:
            if qdisc.get("kind") == "netem":
                return {"sent": int(qdisc.get("packets", 0)),
                        "dropped": int(qdisc.get("drops", 0))}
        return {}

    def stop(self) -> str:
        """Remove the namespace (its taps and bridge with it); the log."""
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        return "\n".join(self.events)

    def __enter__(self) -> "Bridge":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# VXLAN over IPv4: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 bytes
VXLAN_OVERHEAD = 50


class VxlanHosts:
    """Two "hosts" (namespaces, a Bridge each) whose bridges are joined by
    a VXLAN (VNI 42, UDP 4789) over a veth pair, the underlay: MTU
    UNDERLAY_MTU on the veths, UNDERLAY_MTU - 50 on the VXLAN devices, the
    bridges and the taps (what the guests may use). Guests attach to host
    1, 2, 1, 2, ... in turn."""

    def __init__(self, underlay_mtu: int = 1500):
        self.underlay_mtu = underlay_mtu
        self.mtu = underlay_mtu - VXLAN_OVERHEAD
        self.hosts = [Bridge(self.mtu), Bridge(self.mtu)]
        self.attached = 0

    def start(self) -> "VxlanHosts":
        for host in self.hosts:
            host.start()
        one, two = self.hosts
        subprocess.run(["ip", "-n", one.ns, "link", "add", "under0", "mtu",
                        str(self.underlay_mtu), "type", "veth", "peer", "name", "under0",
                        "mtu", str(self.underlay_mtu), "netns", two.ns], check=True)
        for number, host in enumerate(self.hosts, 1):
            host.ip("addr", "add", f"192.168.200.{number}/24", "dev", "under0")
            host.ip("link", "set", "under0", "up")
            host.ip("link", "add", "vx0", "mtu", str(self.mtu), "type", "vxlan", "id", "42",
                    "local", f"192.168.200.{number}", "remote", f"192.168.200.{3 - number}",
                    "dstport", "4789", "dev", "under0")
            host.ip("link", "set", "vx0", "master", BRIDGE, "up")
        return self

    def attach(self, nic: str, mac: str, device_id: str = "") -> Tuple[List[str], List[str]]:
        host = self.hosts[self.attached % 2]
        self.attached += 1
        return host.attach(nic, mac, device_id)

    def underlay_frames(self) -> int:
        """Frames host 1 received on its underlay (VXLAN packets from host 2)."""
        return self.hosts[0].frames_from("under0")

    def stop(self) -> str:
        return "\n".join(host.stop() for host in self.hosts)

    def __enter__(self) -> "VxlanHosts":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def bridge_helper() -> str:
    """The qemu-bridge-helper of the build; its ACL (the prefix's
    etc/qemu/bridge.conf, fixed when QEMU was configured) must allow
    BRIDGE (allow_bridge_in_acl)."""
    helper = TOP / "build/qemu/build/qemu-bridge-helper"
    if not helper.exists():
        raise RuntimeError(f"{helper} missing (scripts/build-qemu.sh builds it)")
    return str(helper)


def allow_bridge_in_acl() -> Path:
    """Make sure the ACL of the build tree's helper allows BRIDGE (adding
    'allow rnicbr0' to qemu-bundle/CONFIG_QEMU_CONFDIR/bridge.conf, which
    the helper reads when run from the build tree, if it lacks it); return
    its path. Nothing outside the build tree is touched."""
    config = (TOP / "build/qemu/build/config-host.h").read_text()
    confdir = re.search(r'^#define CONFIG_QEMU_CONFDIR "([^"]+)"', config, re.MULTILINE)
    if not confdir:
        raise RuntimeError("no CONFIG_QEMU_CONFDIR in build/qemu/build/config-host.h")
    # run from the build tree, QEMU's binaries are relocatable: they find
    # their configured paths under qemu-bundle/
    conf = TOP / "build/qemu/build/qemu-bundle" / confdir.group(1).lstrip("/") / "bridge.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    lines = conf.read_text().splitlines() if conf.exists() else []
    if f"allow {BRIDGE}" not in lines:
        conf.write_text("\n".join(lines + [f"allow {BRIDGE}"]) + "\n")
    return conf
