# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-tests of the guest harness, the plumbing later RDMA tests build on:
two-guests-ping boots two guests at once on one network segment (virtio-net
over a unix-socket dgram netdev) and they reach each other; migrate-idle-rnic
live-migrates a running guest and its script finishes on the destination."""

import tempfile
import time

from guesttest import Guest, procedure, run_guests

PEER_SCRIPT = """
ip link set eth0 up
ip addr add 10.0.0.{me}/24 dev eth0
wait-ping 10.0.0.{peer} || exit 1
sleep 2   # keep answering while the peer finishes its own check
"""


@procedure("two-guests-ping", requires=["virtio-net-pci"])
def two_guests_ping(qemu: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rnic-net-") as sockets:
        guests = []
        for me, peer in ((1, 2), (2, 1)):
            netdev = (f"dgram,id=net0,local.type=unix,local.path={sockets}/{me}.sock,"
                      f"remote.type=unix,remote.path={sockets}/{peer}.sock")
            guests.append(Guest(
                PEER_SCRIPT.format(me=me, peer=peer), name=f"peer{me}", qemu=qemu,
                timeout=90,
                args=["-netdev", netdev, "-device",
                      f"virtio-net-pci,netdev=net0,romfile=,mac=52:54:00:00:00:0{me}"]))
        for result in run_guests(guests):
            assert result.ok, result.report()


MIGRATE_SCRIPT = """
echo "counting"
i=0
while [ $i -lt 6 ]; do sleep 1; i=$((i + 1)); done
echo "finished on the destination after $i s"
"""


@procedure("migrate-idle-rnic", requires=["rnic"])
def migrate_idle_rnic(qemu: str) -> None:
    """The harness migrates a running guest (with an idle rnic, no driver)
    over a unix socket; the script finishes on the destination."""
    with tempfile.TemporaryDirectory(prefix="rnic-mig-") as tmp:
        uri = f"unix:{tmp}/migrate.sock"
        args = ["-device", "rnic"]
        source = Guest(MIGRATE_SCRIPT, name="source", qemu=qemu, args=args)
        dest = Guest(MIGRATE_SCRIPT, name="dest", qemu=qemu, timeout=90,
                     args=args + ["-incoming", uri])
        try:
            dest.launch()
            source.launch()
            assert source.wait_console("^counting", 60), \
                source.console() or "source did not start its script"
            source.vm.cmd("migrate", uri=uri)
            deadline = time.monotonic() + 60
            while (status := source.vm.cmd("query-migrate")["status"]) not in (
                    "completed", "failed", "cancelled"):
                assert time.monotonic() < deadline, f"migration still {status}"
                time.sleep(0.1)
            assert status == "completed", f"migration {status}"
            source.stop()
            result = dest.wait()
            assert result.ok, result.report()
            assert "finished on the destination" in result.output, result.report()
        finally:
            source.stop()
            dest.finish(timed_out=not dest.poll())
