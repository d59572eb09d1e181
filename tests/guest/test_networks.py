# SPDX-License-Identifier: GPL-2.0-or-later
"""Guests on the host's own networking: a Linux bridge with one tap per
QEMU (issue 23), inside a private network namespace
(scripts/guest/linux_bridge.py). Root only: skipped with the reason
elsewhere (CI runs as root). These are the recipes of docs/usage.md
"Connecting VMs" (bridge and tap, netem).

  bridge-tap-migrate   A and A' each on a tap of their own
                       (-netdev tap,ifname=...,script=no,downscript=no), B
                       on one that qemu-bridge-helper creates and enslaves
                       (-netdev bridge,br=rnicbr0); rnic_migrate_verify
                       between A and B, and A live-migrated to A' under it:
                       every byte checked, nothing lost or duplicated, B's
                       traffic continues, and the bridge moved A's MAC to
                       A''s tap while A was still attached (A''s announce),
                       the time that took reported.
  bridge-netem-rnic    rnic <-> rnic on the bridge, tc netem on both taps
                       (loss, duplication, reordering, delay): the same
                       checked traffic for VERIFY_SECONDS; zero errors, zero
                       lost, zero duplicated; netem dropped frames and the
                       requesters retransmitted. Where the host kernel has
                       no sch_netem (or without root), the bridge with netem
                       on its ports runs in a third guest instead
                       (scripts/guest/netem_box.py): the same test.
  bridge-netem-rxe     the same with the client on Soft-RoCE (rdma_rxe on
                       virtio-net) against rnic, without reordering (NETEM_RXE:
                       rxe itself fails on a reordered READ response).
  vxlan-1450           two "hosts" (namespaces, a bridge each) joined by a
                       VXLAN over a veth pair with a 1500-byte underlay: the
                       overlay carries 1450 (1500 - 50 bytes of VXLAN over
                       IPv4), the guests use MTU 1450, RoCE's active path
                       MTU is 1024 (iboe_get_mtu: 1450 - 96 bytes of the
                       largest RoCE headers, rounded down to an IB MTU);
                       a ping of exactly 1450 bytes (unfragmented)
                       crosses, and checked RDMA traffic runs.
  vxlan-jumbo          the same over a 9000-byte underlay: guest MTU 8950,
                       active MTU 4096.
  tcp-nagle            two guests over TCP (loopback), ib_read_lat 4 KiB
                       (four response packets back to back): QEMU's own
                       -netdev stream over inet (the listening side
                       keeps Nagle on) against a pre-connected TCP pair with
                       TCP_NODELAY on both ends handed over as addr.type=fd
                       (rdma_pair.tcp_pair); both figures reported, the
                       remedy must at least halve the round trip. Needs no
                       root.
"""

import re
import sys
from typing import Optional

from guesttest import TOP, Skip, procedure
from rdma_pair import (assert_clean_dmesg, lines_of, perftest_figure, rc_lines,
                       run_pair, stat)
from test_provider import provider_image

sys.path.insert(0, str(TOP / "scripts/guest"))
from linux_bridge import (VXLAN_OVERHEAD, Bridge, VxlanHosts,  # noqa: E402
                          allow_bridge_in_acl, can_run)
from migrate_rdma import MAC_A, assert_verified, run_migration, verify_result  # noqa: E402
from netem_box import NetemBox  # noqa: E402

QP_TIMEOUT = 16            # as test_migration: 268 ms, 7 retries
MIGRATE_SECONDS = 15
VERIFY_SECONDS = 10
# what each guest receives: 1 % lost, 1 % twice, a quarter of the frames
# held back 2 ms behind the others (reordered)
NETEM = "delay 2ms reorder 75% 50% loss 1% duplicate 1%"
# with an rxe peer, no reordering: Linux 6.12's rxe requester takes a
# reordered READ response for a fatal error (WARNING at rxe_comp.c:827,
# the QP to ERR) against rxe as much as against rnic; loss, duplication
# and delay it recovers from
NETEM_RXE = "delay 2ms loss 1% duplicate 1%"


def need_root() -> None:
    why = can_run()
    if why:
        raise Skip(why)


@procedure("bridge-tap-migrate", requires=["rnic"], guests=3)
def bridge_tap_migrate(qemu: str) -> None:
    need_root()
    allow_bridge_in_acl()

    class Segment(Bridge):
        """B (the third guest attached) on a helper tap, A' and A on taps of ours."""

        def attach(self, nic, mac, device_id="", helper=False):
            self.attached = getattr(self, "attached", 0) + 1
            return super().attach(nic, mac, device_id, helper=self.attached == 3)

    segment = Segment()
    run = run_migration(
        "bridge-tap-migrate",
        f"timeout 240 rnic_migrate_verify -s -T {QP_TIMEOUT}",
        f"timeout 240 rnic_migrate_verify -c 10.0.0.1 -T {QP_TIMEOUT} -t {MIGRATE_SECONDS}",
        qemu=qemu, initrd=provider_image(), timeout=300, segment=segment)
    report = run.report()
    assert not run.failure, report
    assert run.info.get("status") == "completed", report
    assert run.rc("a") == 0 and run.rc("b") == 0, report
    assert_clean_dmesg(run.a_output)
    assert_clean_dmesg(run.b_output)
    assert_verified(verify_result(run.lines("b"), "client"),
                 verify_result(run.lines("a"), "server"), report)
    # B was on the helper's tap, and kept sending while A migrated
    assert run.b_port and run.b_port not in segment.taps, f"B on {run.b_port}\n{report}"
    before = run.hub_frames["before"][run.b_port]
    after = run.hub_frames["after"][run.b_port]
    assert after > before > 0, f"B's frames {before} -> {after}\n{report}"
    # A on its tap (tap1: the destination's tap0 was made first), then on A''s
    assert run.a_ports == ("tap1", "tap0"), f"A's MAC {MAC_A}: {run.a_ports}\n{report}"
    print(f"# bridge-tap-migrate: QEMU downtime {run.info.get('downtime')} ms, "
          f"total {run.info.get('total-time')} ms; the bridge moved A's MAC to A''s tap "
          f"{run.relearn_ms:.0f} ms after the migration completed (A still attached); "
          f"B sent {after - before} frames during the migration, through {run.b_port} "
          f"(qemu-bridge-helper)", flush=True)


def host_netem() -> Optional[str]:
    """None if a bridge of the host can shape (root, sch_netem), else why not."""
    why = can_run()
    if why:
        return why
    with Bridge() as bridge:
        return bridge.netem_missing()


def netem_pair(name: str, kinds, qemu: str, spec: str = NETEM) -> None:
    device = {"rnic": "rnic0", "rxe": "rxe0"}[kinds[1]]
    steps = [("verify",
              f"rnic_migrate_verify -s -T {QP_TIMEOUT}",
              f"rnic_migrate_verify -c 10.0.0.1 -d {device} -g 1 -T {QP_TIMEOUT} "
              f"-t {VERIFY_SECONDS}", 1)]
    why = host_netem()
    if why is None:
        segment = Bridge()
        segment.on_tap = lambda tap: segment.netem(tap, spec)
        where = "both taps of the host's bridge"
    else:
        segment = NetemBox(spec, qemu, provider_image())
        where = f"both ports of a bridge in a third guest (the host: {why})"
    with segment:
        r1, r2 = run_pair(name, steps, kinds=kinds, qemu=qemu, initrd=provider_image(),
                          timeout=600, tool_timeout=240, segment=segment)
        shaped = ({tap: segment.netem_stats(tap) for tap in segment.taps}
                  if isinstance(segment, Bridge) else segment.stats())
    report = r1.report() + r2.report() + f"netem: {shaped}\n"
    assert r1.ok and r2.ok, report
    assert rc_lines(r1.output).get("verify") == [0], report
    assert rc_lines(r2.output).get("verify") == [0], report
    assert_clean_dmesg(r1.output)
    assert_clean_dmesg(r2.output)
    client = verify_result(lines_of(r2.output, "verify"), "client")
    server = verify_result(lines_of(r1.output, "verify"), "server")
    assert_verified(client, server, report)
    assert len(shaped) == 2, f"netem counters of {list(shaped)}\n{report}"
    dropped = sum(s.get("dropped", 0) for s in shaped.values())
    assert dropped > 0, f"netem dropped nothing\n{report}"
    retrans = (stat(r1.output, "retransmits") or 0) + (stat(r2.output, "retransmits") or 0)
    # the losses in the transport's counters, by their rxe/mlx5 names
    # (`rdma statistic`): gaps the responders saw, NAKs and timeouts the
    # requesters took
    def total(counter):
        return sum(stat(r.output, counter) or 0 for r in (r1, r2))
    assert stat(r1.output, "sent_pkts") and stat(r1.output, "rcvd_pkts"), report
    gaps = total("out_of_sequence") + total("duplicate_request")
    assert gaps > 0, f"no out_of_sequence/duplicate_request counted\n{report}"
    if kinds[1] == "rnic":
        seen = total("packet_seq_err") + total("local_ack_timeout_err")
        assert seen > 0, f"no packet_seq_err/local_ack_timeout_err counted\n{report}"
    print(f"# {name}: {client['iters']} iterations ({client['ops']} operations, "
          f"{int(client['bytes_checked']) >> 20} MiB checked) under netem '{spec}' "
          f"on {where}: netem dropped {dropped} frames; rnic retransmitted "
          f"{retrans} (out_of_sequence {total('out_of_sequence')}, duplicate_request "
          f"{total('duplicate_request')}, packet_seq_err {total('packet_seq_err')}, "
          f"local_ack_timeout_err {total('local_ack_timeout_err')}); 0 errors, 0 lost, "
          f"0 duplicated", flush=True)


@procedure("bridge-netem-rnic", requires=["rnic"])
def bridge_netem_rnic(qemu: str) -> None:
    netem_pair("bridge-netem-rnic", ("rnic", "rnic"), qemu)


@procedure("bridge-netem-rxe", requires=["rnic", "virtio-net-pci"])
def bridge_netem_rxe(qemu: str) -> None:
    netem_pair("bridge-netem-rxe", ("rnic", "rxe"), qemu, NETEM_RXE)


def vxlan_pair(name: str, underlay_mtu: int, active_mtu: int, qemu: str) -> None:
    need_root()
    mtu = underlay_mtu - VXLAN_OVERHEAD
    ping = mtu - 28             # IPv4 20 + ICMP 8: a packet of exactly MTU bytes
    steps = [("verify",
              f"ibv_devinfo -d rnic0 | grep active_mtu; rnic_migrate_verify -s -T {QP_TIMEOUT}",
              f"ping -c 1 -W 5 -s {ping} 10.0.0.1 | grep -c seq=; "
              f"ibv_devinfo -d rnic0 | grep active_mtu; "
              f"rnic_migrate_verify -c 10.0.0.1 -T {QP_TIMEOUT} -t {VERIFY_SECONDS}", 1)]
    with VxlanHosts(underlay_mtu) as hosts:
        r1, r2 = run_pair(name, steps, mtu=mtu, qemu=qemu, initrd=provider_image(),
                          timeout=600, tool_timeout=240, segment=hosts)
        underlay = hosts.underlay_frames()
    report = r1.report() + r2.report()
    assert r1.ok and r2.ok, report
    assert rc_lines(r1.output).get("verify") == [0], report
    assert rc_lines(r2.output).get("verify") == [0], report
    out1, out2 = lines_of(r1.output, "verify"), lines_of(r2.output, "verify")
    assert re.search(r"^1$", out2, re.MULTILINE), f"no {mtu}-byte ping across\n{report}"
    for out in (out1, out2):
        found = re.search(r"active_mtu:\s+(\d+)", out)
        assert found and int(found.group(1)) == active_mtu, f"active_mtu\n{report}"
    client = verify_result(out2, "client")
    assert_verified(client, verify_result(out1, "server"), report)
    assert underlay > int(client["ops"]), f"underlay frames {underlay}\n{report}"
    print(f"# {name}: underlay MTU {underlay_mtu}, guest MTU {mtu}, RoCE active MTU "
          f"{active_mtu}; {client['iters']} iterations ({int(client['bytes_checked']) >> 20} "
          f"MiB checked) through VXLAN ({underlay} frames on host 1's underlay)", flush=True)


@procedure("vxlan-1450", requires=["rnic"])
def vxlan_1450(qemu: str) -> None:
    vxlan_pair("vxlan-1450", 1500, 1024, qemu)


@procedure("vxlan-jumbo", requires=["rnic"])
def vxlan_jumbo(qemu: str) -> None:
    vxlan_pair("vxlan-jumbo", 9000, 4096, qemu)


@procedure("tcp-nagle", requires=["rnic"], alone=True)
def tcp_nagle(qemu: str) -> None:
    steps = [("read_lat", "ib_read_lat -d rnic0 -x 1 -s 4096 -n 100",
              "ib_read_lat -d rnic0 -x 1 -s 4096 -n 100 10.0.0.1", 1)]
    typical = {}
    for netdev in ("tcp", "tcp-nodelay"):
        r1, r2 = run_pair(f"tcp-nagle-{netdev}", steps, qemu=qemu, initrd=provider_image(),
                          timeout=600, netdev=netdev)
        report = r1.report() + r2.report()
        assert r1.ok and r2.ok, report
        assert rc_lines(r2.output).get("read_lat") == [0], report
        unit, value = perftest_figure(lines_of(r2.output, "read_lat"))
        assert unit == "usec" and value > 0, report
        typical[netdev] = value
    print(f"# tcp-nagle: ib_read_lat 4 KiB typical over QEMU's TCP stream "
          f"{typical['tcp']:.0f} µs, over a TCP_NODELAY pair (addr.type=fd) "
          f"{typical['tcp-nodelay']:.0f} µs", flush=True)
    assert typical["tcp-nodelay"] * 2 < typical["tcp"], typical
