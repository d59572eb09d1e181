# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a guest with RDMA traffic to a peer guest: A, B, A'.

Three QEMUs on one Ethernet segment (scripts/guest/rnic_hub.py, a learning
switch every QEMU joins as a -netdev stream client):

  A  (10.0.0.1)  the guest that migrates; runs A_CMD (a server);
  B  (10.0.0.2)  its peer; runs B_CMD (the client that measures);
  A'             started with -incoming on a unix socket, same arguments.

All boot the provider image (scripts/guest/build-provider.sh --image). Once
B's console shows the traffic running, the test waits a few seconds and
live-migrates A to A' over a unix socket; after the switchover A is quit
(the hub forgets its port), A's program continues on A' and finishes there.

Each guest's command output is on its console with every line prefixed
("a: " / "b: "), followed by "rc=a:STATUS" / "rc=b:STATUS". QEMU traces
give the time of the rnic section in the downtime (vmstate_downtime_save
on A, vmstate_downtime_load on A', in µs) and the device's own figures
(rnic_state_save/rnic_state_load).

Used by tests/guest/test_migration.py and scripts/guest/migration-bench.py.
"""

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from rdma_pair import DMESG_CHECK, NET_UP, PEER_UP, SYNC_POINT, WAIT_GID
from rnic_guest import DEFAULT_QEMU, GUEST_DIR, Guest
from rnic_hub import Hub

TOP = Path(__file__).resolve().parents[2]
PROVIDER_IMAGE = GUEST_DIR / "initramfs-provider.cpio.gz"
MAC_A = "52:54:00:00:07:01"
MAC_B = "52:54:00:00:07:02"

TRAILER = """
ethtool -S eth0 2>/dev/null | grep -E 'roce_|retrans' | tr -d ' ' | sed 's/^/stats: /'
""" + DMESG_CHECK

SCRIPT_A = NET_UP["rnic"].format(me=1, mtu=1500) + WAIT_GID.format(dev="rnic0") + """
echo "A-READY"
{ @CMD@ ; echo "rc=a:$?"; } 2>&1 | sed 's/^/a: /' &
@LISTENING@
wait
""" + TRAILER

SCRIPT_B = (NET_UP["rnic"].format(me=2, mtu=1500) + PEER_UP.format(peer=1)
            + WAIT_GID.format(dev="rnic0") + """
echo "B-READY"
@WAIT_LISTENING@
{ @CMD@ ; echo "rc=b:$?"; } 2>&1 | sed 's/^/b: /'
""" + TRAILER)

# A tool whose client connects once (perftest's TCP exchange) must not
# start before its server listens: A meets B at a sync point (rdma_pair's)
# once PORT is in LISTEN (30 s at most), B waits there before it starts.
LISTENING = SYNC_POINT.format(me=1, sync_timeout=120) + """
n=0
until netstat -ltn 2>/dev/null | grep -q ':@PORT@ '; do
    n=$((n + 1)); [ $n -lt 300 ] || break
    sleep 0.1
done
sync_point 0 >/dev/null
"""
WAIT_LISTENING = SYNC_POINT.format(me=2, sync_timeout=120) + """
sync_point 0 >/dev/null
"""

SOURCE_TRACE = ["-trace", "vmstate_downtime_save", "-trace", "rnic_state_save"]
DEST_TRACE = ["-trace", "vmstate_downtime_load", "-trace", "rnic_state_load"]


@dataclass
class MigrationRun:
    """What one A -> A' migration under B's traffic produced."""

    a_output: str = ""              # A's console, then A''s
    b_output: str = ""
    a_status: Optional[int] = None  # A's script exit status (on A')
    b_status: Optional[int] = None
    info: Dict = field(default_factory=dict)    # final query-migrate
    params: Dict = field(default_factory=dict)
    hub_log: str = ""
    source_log: str = ""            # QEMU stderr (traces) of A and A'
    dest_log: str = ""
    b_progress_before: Optional[int] = None     # B's ops when migrate began
    b_progress_after: Optional[int] = None      # ... when it completed
    migrate_seconds: float = 0.0    # host wall time: migrate -> completed
    # frames the switch received from each port (by MAC's first port):
    # {"before": {port: n}, "after": {...}} at the migration's start / end
    hub_frames: Dict[str, Dict[int, int]] = field(default_factory=dict)
    b_port: object = None           # B's port on the segment
    # A's port before the migration, the port the segment moved A's MAC to
    # after the switchover with A still attached (A''s announce), and how
    # long after "completed" that was (empty / None: not within 5 s)
    a_ports: tuple = ()
    relearn_ms: Optional[float] = None
    # B's clock: host monotonic time minus B's "t=" (seconds since B's
    # traffic started), from when its progress lines appeared on the console
    b_clock_offset: Optional[float] = None
    migrate_window_b: Optional[tuple] = None    # (start, end) in B's "t="
    failure: str = ""               # why the run broke off ('' if it did not)
    reports: List[str] = field(default_factory=list)

    def rc(self, who: str) -> Optional[int]:
        match = re.search(rf"^rc={who}:(\d+)", self.lines(who), re.MULTILINE)
        return int(match.group(1)) if match else None

    def lines(self, who: str) -> str:
        out = self.a_output if who == "a" else self.b_output
        return "\n".join(m.group(1) for m in
                         re.finditer(rf"^{who}: (.*)$", out, re.MULTILINE))

    def section_us(self, log: str, idstr_suffix: str, event: str) -> Optional[int]:
        """µs of savevm section *IDSTR_SUFFIX in a vmstate_downtime_* trace."""
        total = None
        for match in re.finditer(rf"{event} type=\S+ idstr=(\S+) instance_id=\d+ "
                                 r"downtime=(-?\d+)", log):
            if match.group(1).endswith(idstr_suffix):
                total = (total or 0) + int(match.group(2))
        return total

    def downtime_sections(self) -> Dict[str, Optional[int]]:
        """rnic section time on A (save) and A' (load), all sections' sum."""
        def all_us(log: str, event: str) -> int:
            return sum(int(m.group(1)) for m in
                       re.finditer(rf"{event} type=\S+ idstr=\S+ instance_id=\d+ "
                                   r"downtime=(-?\d+)", log))
        return {
            "rnic_save_us": self.section_us(self.source_log, "/rnic", "vmstate_downtime_save"),
            "rnic_load_us": self.section_us(self.dest_log, "/rnic", "vmstate_downtime_load"),
            "all_save_us": all_us(self.source_log, "vmstate_downtime_save"),
            "all_load_us": all_us(self.dest_log, "vmstate_downtime_load"),
        }

    def gaps(self, who: str = "b") -> List[tuple]:
        """[(start t=, length ms)] of the "verify: gap" lines of WHO."""
        return [(float(m.group(2)), float(m.group(1))) for m in
                re.finditer(r"^verify: gap ([\d.]+) ms at t=([\d.]+) s", self.lines(who),
                            re.MULTILINE)]

    def move(self, mac: str) -> Optional[tuple]:
        """(host time, ms of silence) of the switch moving MAC to another
        port: A''s first frame after the switchover."""
        match = re.search(rf"^hub: ([\d.]+) mac {mac} moved port \S+ -> \d+ after "
                          r"([\d.]+) ms of silence", self.hub_log, re.MULTILINE)
        return (float(match.group(1)), float(match.group(2))) if match else None

    def switchover_gap_ms(self, mac: str = "", late: float = 1.0,
                          early: float = 0.1) -> Optional[float]:
        """B's pause across the switchover: the longest pause between B's
        completions around the moment the switch saw A''s first frame, or
        else around the migration, both mapped into B's clock. The mapping
        only errs one way: the offset comes from when B's console lines
        reached the host (late, never early), so a host moment maps to a B
        time up to LATE s too early (0.1-0.8 s seen under load); EARLY is
        rounding. None if B reported no pause there (all under 50 ms)."""
        if not self.migrate_window_b or self.b_clock_offset is None:
            return None
        moved = self.move(mac or MAC_A)
        windows = [self.migrate_window_b]
        if moved:
            windows.insert(0, (moved[0] - self.b_clock_offset,) * 2)
        for start, end in windows:     # the moment first, else the window
            hits = [ms for t, ms in self.gaps("b")
                    if t <= end + late and t + ms / 1e3 >= start - early]
            if hits:
                return max(hits)
        return None

    def wire_silence_ms(self) -> Optional[float]:
        """The switch's view: A's last frame (from A) to A''s first."""
        moved = self.move(MAC_A)
        return moved[1] if moved else None

    def report(self) -> str:
        text = [f"failure: {self.failure}" if self.failure else "",
                f"query-migrate: {self.info}",
                "--- A then A' ---", self.a_output.rstrip(),
                "--- B ---", self.b_output.rstrip(),
                "--- hub ---", self.hub_log.rstrip()]
        text += self.reports
        return "\n".join(t for t in text if t) + "\n"


def _last_progress(console: str, regex: str) -> Optional[int]:
    found = re.findall(regex, console, re.MULTILINE)
    return int(found[-1]) if found else None


class _Clock:
    """Maps B's "t=" onto the host's monotonic clock: each progress line
    is stamped when it first appears on B's console; the smallest
    (host time - t) is the best estimate (the console only adds delay)."""

    def __init__(self, guest: Guest, regex: str = r"^b: verify: t=([\d.]+) "):
        self.guest = guest
        self.regex = re.compile(regex, re.MULTILINE)
        self.seen = 0
        self.offset: Optional[float] = None

    def pump(self) -> None:
        now = time.monotonic()
        found = self.regex.findall(self.guest.console())
        for value in found[self.seen:]:
            offset = now - float(value)
            self.offset = offset if self.offset is None else min(self.offset, offset)
        self.seen = len(found)

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.pump()
            time.sleep(0.02)


def run_migration(name: str, a_cmd: str, b_cmd: str, *, qemu: str = str(DEFAULT_QEMU),
                  initrd: str = str(PROVIDER_IMAGE),
                  running: str = r"^b: verify: t=\S+ iters=[1-9]",
                  running_frames: int = 0,
                  progress: str = r"^b: verify: t=\S+ iters=\d+ ops=(\d+)",
                  settle: float = 4.0, timeout: float = 300,
                  max_bandwidth: int = 2 << 30,
                  downtime_limit: Optional[int] = None,
                  memory: int = 512,
                  server_port: Optional[int] = None,
                  segment=None) -> MigrationRun:
    """Boot A, B and A', start the traffic, migrate A -> A' once B's console
    matches RUNNING (or, if RUNNING_FRAMES, once the switch has received
    that many frames from B), + SETTLE seconds; wait for both scripts,
    return it all.
    MAX_BANDWIDTH (bytes/s) and DOWNTIME_LIMIT (ms, None: QEMU's default
    300) are the migration parameters. SERVER_PORT: B's command starts only
    once A's command listens on this TCP port. SEGMENT: the Ethernet
    segment (default: a new rnic_hub.Hub; or a linux_bridge.Bridge): its
    attach (the destination's first, then A's, then B's), port_of and
    frames_from are used."""
    run = MigrationRun()
    with (segment or Hub()) as hub, tempfile.TemporaryDirectory(prefix="rnic-mig-") as tmp:
        uri = f"unix:{tmp}/migrate.sock"
        a_script = SCRIPT_A.replace("@CMD@", a_cmd).replace(
            "@LISTENING@", LISTENING.replace("@PORT@", str(server_port)) if server_port else "")
        b_script = SCRIPT_B.replace("@CMD@", b_cmd).replace(
            "@WAIT_LISTENING@", WAIT_LISTENING if server_port else "")
        d_net, d_wrap = hub.attach("rnic", MAC_A, device_id="rnic0")
        a_net, a_wrap = hub.attach("rnic", MAC_A, device_id="rnic0")
        b_net, b_wrap = hub.attach("rnic", MAC_B, device_id="rnic0")
        dest = Guest(a_script, name=f"{name}-A2", qemu=qemu, initrd=initrd, memory=memory,
                     timeout=timeout, wrapper=d_wrap,
                     args=d_net + DEST_TRACE + ["-incoming", uri])
        source = Guest(a_script, name=f"{name}-A", qemu=qemu, initrd=initrd, memory=memory,
                       timeout=timeout, wrapper=a_wrap, args=a_net + SOURCE_TRACE)
        peer = Guest(b_script, name=f"{name}-B", qemu=qemu, initrd=initrd, memory=memory,
                     timeout=timeout, wrapper=b_wrap, args=b_net)
        source_done = False
        try:
            dest.launch()
            source.launch()
            peer.launch()
            deadline = time.monotonic() + timeout
            clock = _Clock(peer)
            if running_frames:
                # traffic seen on the switch: B's port sent that many frames
                while True:
                    frames = hub.frames_from(hub.port_of(MAC_B))
                    if frames >= running_frames:
                        break
                    if time.monotonic() > deadline or peer.poll():
                        run.failure = f"B's traffic did not start ({frames} frames)"
                        return run
                    time.sleep(0.3)
            elif not peer.wait_console(running, timeout):
                run.failure = "B's traffic did not start"
                return run
            clock.sleep(settle)
            params = {"max-bandwidth": max_bandwidth}
            if downtime_limit is not None:
                params["downtime-limit"] = downtime_limit
            source.vm.cmd("migrate-set-parameters", **params)
            run.params = source.vm.cmd("query-migrate-parameters")
            run.b_progress_before = _last_progress(peer.console(), progress)
            run.b_port = hub.port_of(MAC_B)
            run.hub_frames["before"] = {run.b_port: hub.frames_from(run.b_port)}
            a_port = hub.port_of(MAC_A)
            t0 = time.monotonic()
            source.vm.cmd("migrate", uri=uri)
            while True:
                info = source.vm.cmd("query-migrate")
                if info.get("status") in ("completed", "failed", "cancelled"):
                    break
                if time.monotonic() > deadline:
                    run.failure = f"migration still {info.get('status')} at the timeout"
                    source.vm.cmd("migrate_cancel")
                    break
                clock.sleep(0.02)
            t1 = time.monotonic()
            run.hub_frames["after"] = {run.b_port: hub.frames_from(run.b_port)}
            if info.get("status") == "completed":
                # A (stopped, still attached) and A' are both on the
                # segment: A''s announce moves A's MAC to A''s port
                while time.monotonic() < t1 + 5:
                    now = hub.port_of(MAC_A)
                    if now and now != a_port:
                        run.relearn_ms = (time.monotonic() - t1) * 1e3
                        run.a_ports = (a_port, now)
                        break
                    time.sleep(0.005)
            run.migrate_seconds = t1 - t0
            run.info = info
            run.b_progress_after = _last_progress(peer.console(), progress)
            if info.get("status") != "completed":
                run.failure = run.failure or f"migration {info.get('status')}: {info}"
                return run
            # A is done: quit it (its port leaves the segment), keep its console
            source.console()
            source.vm.shutdown()
            run.source_log = source.vm.get_log() or ""
            source_done = True
            # both scripts finish (A's on A')
            while not (dest.poll() and peer.poll()):
                if time.monotonic() > deadline + 60:
                    run.failure = "A' or B did not finish in time"
                    break
                clock.sleep(0.05)
            if clock.offset is not None:
                run.b_clock_offset = clock.offset
                run.migrate_window_b = (t0 - clock.offset, t1 - clock.offset)
        except Exception as exc:  # pylint: disable=broad-except
            # e.g. a QEMU that died: QMP disconnected
            run.failure = f"{type(exc).__name__}: {exc}"
        finally:
            a_console = source.console()
            if not source_done and source.vm is not None:
                try:
                    source.vm.shutdown(hard=True)
                except Exception as exc:  # pylint: disable=broad-except
                    run.reports.append(f"A's QEMU: {exc}")
                run.source_log = source.vm.get_log() or ""
                run.reports.append("--- A's QEMU ---\n" + run.source_log)
            source.stop()
            dres = dest.finish(timed_out=not dest.poll())
            pres = peer.finish(timed_out=not peer.poll())
            run.dest_log = dres.qemu_log
            start = re.search(r"RNIC-GUEST-START\r?\n", a_console)
            run.a_output = (a_console[start.end():] if start else a_console).replace(
                "\r\n", "\n") + dres.output
            run.b_output = pres.output
            run.a_status, run.b_status = dres.status, pres.status
            if not dres.ok:
                run.reports.append(dres.report())
            if not pres.ok:
                run.reports.append(pres.report())
            run.hub_log = hub.stop()
    return run


def assert_verified(client: Dict[str, str], server: Dict[str, str], report: str) -> None:
    """Both sides of rnic_migrate_verify reported, with zero errors, lost
    and duplicated operations, the same iterations, and every iteration's
    WRITE and READ."""
    assert client and server, report
    for side in (client, server):
        for key in ("errors", "lost", "dup"):
            assert side[key] == "0", f"{key}={side[key]}\n{report}"
    assert client["iters"] == server["iters"], report
    assert int(client["writes"]) == int(client["reads"]) == int(client["iters"]) > 0, report


def verify_result(output: str, role: str) -> Dict[str, str]:
    """The VERIFY-RESULT line of ROLE as a dict (empty if none)."""
    match = re.search(rf"^(?:\w: )?VERIFY-RESULT role={role} (.*)$", output, re.MULTILINE)
    if not match:
        return {}
    return dict(tok.split("=", 1) for tok in match.group(1).split() if "=" in tok)
