#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Many live migrations in a row under checked RDMA traffic (issue 16 item 6).

Three or more TCG QEMUs on one Ethernet segment (scripts/guest/rnic_hub.py),
the provider image (scripts/guest/build-provider.sh --image) in each:

  A  (10.0.0.1)  runs `rnic_migrate_verify -s` (the server);
  B  (10.0.0.2)  runs `rnic_migrate_verify -c 10.0.0.1 -t D` (the client):
                 it WRITEs pattern(seq) into A's memory, READs it back and
                 checks every byte, SENDs seq; A checks that messages arrive
                 exactly in sequence and answers; B checks the answers. At
                 the end A checks every slot of its memory, both print a
                 VERIFY-RESULT line (errors, lost, dup) and exit 0 only if
                 nothing was wrong (tests/guest/provider/rnic_migrate_verify.c).

Default (`--migrations N`): A -> A1 -> A2 -> ... -> AN, each time to a fresh
QEMU started with -incoming on its own unix socket (the next one is started
as soon as the previous migration completed; the old source is quit, the
hub forgets its port). Migration k starts at settle + (k-1) * interval
seconds after B's traffic started (or at once if the previous one ran
late); B's traffic lasts settle + N * interval + tail seconds, so it runs
before the first and after the last migration (the verifier stops after a
fixed time; a migration that would start less than 3 s + 1.5 x the slowest
migration so far before that end is not started, and the run fails: choose
an --interval above the migration time, 2-7 s under TCG on a loaded host).

`--both-ends --rounds R`: A -> A1 and B -> B1 at the same time, then
A1 -> A2 and B1 -> B2, ... R times, under the same traffic and the same
check. The two `migrate` commands are written back to back on a second QMP
monitor of each source (the spread is reported). Each precopy converges on
its own (0.2-3 s apart under TCG here), so by default the switchovers are
synchronized too (see _SwitchoverSync: downtime-limit 0 until both have
done their first pass, then pause-before-switchover and one
migrate-continue to both; a source waits at most --sync-wait for the
other, VM stopped); the report gives how far apart the switchovers were
and how long both MACs were silent at the same time
(--no-sync-switchover: no hold, each switches over when it converges).

Per migration it prints QEMU's downtime and total time (query-migrate), the
host time from `migrate` to `completed`, how long the switch heard nothing
from the migrating MAC (the hub's "moved ... after N ms of silence"), and
the blackout the peer saw: the verifier's longest pause between completions
("verify: gap") around the switchover, mapped from the host's clock into the
guest's via its once-a-second progress lines (as scripts/guest/migrate_rdma.py
does; pauses under the report threshold -G show as "< G"). With
--both-ends each end's pause is in its own guest clock, which stands still
while its own VM is stopped. At the end: the verdicts of both ends, the rnic
section's time in each downtime (vmstate_downtime_save/_load traces), and a
summary (count, failures, min/median/max). Exit status 0 only if every
migration completed and both ends report 0 errors, 0 lost, 0 duplicated,
the same iteration count, and exit 0.

The QEMU binary, kernel and initramfs are copied into the log directory
first (--no-snapshot: not): the build tree may be relinked during a long
run. All consoles and QEMU logs (with the traces) stay there
(build/guest-logs/soak-<time>/, one directory per QEMU: A0, A1, ..., B0, ...);
a failure prints what failed and the last lines of the logs involved.

Examples (figures: docs/reliability.md "Live migration under traffic"):
  scripts/guest/migration-soak.py --migrations 100 --qp-timeout 18
  scripts/guest/migration-soak.py --both-ends --rounds 10 --qp-timeout 18 --sync-wait 3
  scripts/guest/migration-soak.py --both-ends --rounds 5
  scripts/guest/migration-soak.py --migrations 3 --json /tmp/soak.json

The peers' QP timeout (-T, default 16: 268 ms, a retry budget of 8 x 268 ms
= 2.15 s) must outlast the longest switchover: on a loaded TCG host QEMU's
downtime once exceeded it (docs/reliability.md); --qp-timeout 18 (rdma_cm's
default, 8.6 s) leaves room for it.
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from migrate_rdma import (DEST_TRACE, MAC_A, MAC_B, PROVIDER_IMAGE,  # noqa: E402
                          SCRIPT_A, SCRIPT_B, SOURCE_TRACE, verify_result)
from rdma_pair import build_provider_image  # noqa: E402
from rnic_guest import DEFAULT_QEMU, GUEST_DIR, LOG_ROOT, Guest  # noqa: E402
from rnic_hub import Hub  # noqa: E402

GAP_RE = re.compile(r"^verify: gap ([\d.]+) ms at t=([\d.]+) s")
PROGRESS_RE = re.compile(r"^verify: t=([\d.]+) iters=(\d+)(?: ops=(\d+))?")
BAD_RE = re.compile(r"^(?:verify: (?:ERROR|FATAL)|dmesg-bad:)")


def log(msg: str) -> None:
    print(f"soak: {msg}", flush=True)


class RawQMP:
    """A second QMP monitor of a QEMU (-chardev socket + -mon), spoken
    directly: QEMU's python QMP library runs one event loop and cannot issue
    commands to two QEMUs at the same moment; this can (send both, then read
    both answers)."""

    def __init__(self, path: str, timeout: float = 30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buf = b""
        self._message()                         # the greeting
        self.send("qmp_capabilities")
        self.reply()

    def _message(self) -> Dict:
        while b"\n" not in self.buf:
            more = self.sock.recv(65536)
            if not more:
                raise ConnectionError("QMP connection closed")
            self.buf += more
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, command: str, **arguments) -> None:
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")

    def reply(self) -> Dict:
        """The answer to the command sent last (events are skipped)."""
        while True:
            msg = self._message()
            if "return" in msg:
                return msg["return"]
            if "error" in msg:
                raise RuntimeError(f"QMP error: {msg['error']}")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Line:
    host: float     # host monotonic time the line was first read
    text: str


class Chain:
    """One guest across its QEMUs: member 0 boots, member k is the k-th
    migration's destination. Its console is read line by line as it grows,
    each line stamped with the host time it was first seen (a line cut by a
    switchover continues on the next member's console)."""

    def __init__(self, who: str, mac: str, script: str, hub: Hub, opts, run_dir: Path,
                 sock_dir: str):
        self.who = who              # "a" / "b": the console prefix
        self.mac = mac
        self.script = script
        self.opts = opts
        self.run_dir = run_dir
        self.sock_dir = sock_dir
        self.args = hub.netdev_args("rnic", mac, device_id="rnic0")
        self.members: List[Guest] = []
        self.current: Optional[Guest] = None
        self.next: Optional[Guest] = None
        self.next_uri = ""
        self.lines: List[Line] = []
        self._partial = ""
        self._read = 0              # chars of the current member's console consumed
        self.segment_start = 0      # index in lines where the current member began
        self.qmp_paths: Dict[str, str] = {}
        self.raw: Dict[str, RawQMP] = {}

    # --- QEMUs -----------------------------------------------------------
    def _guest(self, k: int, extra: List[str]) -> Guest:
        name = f"{self.who.upper()}{k}"
        qmp = f"{self.sock_dir}/{name}.qmp"
        self.qmp_paths[f"soak-{name}"] = qmp
        return Guest(self.script, name=f"soak-{name}", qemu=self.opts.qemu,
                     initrd=self.opts.initrd, kernel=self.opts.kernel,
                     memory=self.opts.memory,
                     timeout=1e6, log_dir=self.run_dir / name, keep_logs=True,
                     args=self.args + SOURCE_TRACE + DEST_TRACE + extra
                     + ["-chardev", f"socket,id=soakqmp,path={qmp},server=on,wait=off",
                        "-mon", "chardev=soakqmp,mode=control"])

    def raw_qmp(self) -> RawQMP:
        """The second monitor of the current member (connected once)."""
        name = self.current.name
        if name not in self.raw:
            self.raw[name] = RawQMP(self.qmp_paths[name])
        return self.raw[name]

    def boot(self) -> None:
        guest = self._guest(0, [])
        guest.launch()
        self.members.append(guest)
        self.current = guest

    def prepare_next(self) -> None:
        """Start the next destination (-incoming) if it is not running."""
        if self.next is not None:
            return
        k = len(self.members)
        self.next_uri = f"unix:{self.sock_dir}/{self.who}{k}.sock"
        guest = self._guest(k, ["-incoming", self.next_uri])
        guest.launch()
        self.next = guest

    def switch(self) -> Guest:
        """The migration completed: quit the source, read its last output,
        continue on the destination. Returns the old source."""
        old = self.current
        assert old is not None and self.next is not None
        if old.name in self.raw:
            self.raw.pop(old.name).close()
        try:
            old.vm.shutdown()
        except Exception as exc:  # pylint: disable=broad-except
            log(f"{self.who.upper()}: quitting the old source: {exc}")
        self.pump()
        self.current = self.next
        self.members.append(self.next)
        self.next = None
        self._read = 0
        return old

    # --- console ---------------------------------------------------------
    def pump(self) -> None:
        if self.current is None:
            return
        text = self.current.console()
        if len(text) <= self._read:
            return
        now = time.monotonic()
        chunk = self._partial + text[self._read:]
        self._read = len(text)
        parts = chunk.split("\n")
        self._partial = parts.pop()
        for part in parts:
            self.lines.append(Line(now, part.rstrip("\r")))

    def flush(self) -> None:
        self.pump()
        if self._partial:
            self.lines.append(Line(time.monotonic(), self._partial.rstrip("\r")))
            self._partial = ""

    def mine(self, start: int = 0) -> List[Tuple[float, str]]:
        """(host time, text) of the lines of this guest's program (prefix removed)."""
        prefix = f"{self.who}: "
        return [(ln.host, ln.text[len(prefix):]) for ln in self.lines[start:]
                if ln.text.startswith(prefix)]

    def output(self) -> str:
        return "\n".join(ln.text for ln in self.lines) + "\n"

    def program_output(self) -> str:
        return "\n".join(text for _, text in self.mine()) + "\n"

    def new_segment(self) -> None:
        """The guest's clock may have stopped (its VM migrated): host-to-guest
        time offsets are estimated afresh from here on."""
        self.segment_start = len(self.lines)

    def offset(self, before: Optional[float] = None,
               start: Optional[int] = None) -> Optional[float]:
        """host time - guest t= (the smallest seen: the console only adds
        delay), from the progress lines of one segment (default: the current
        one) read before BEFORE."""
        best = None
        first = self.segment_start if start is None else start
        for host, text in self.mine(first):
            if before is not None and host > before:
                break
            match = PROGRESS_RE.match(text)
            if match:
                off = host - float(match.group(1))
                best = off if best is None else min(best, off)
        return best

    def progress(self) -> Tuple[Optional[float], Optional[int], Optional[int]]:
        """(t, iters, ops) of the last progress line."""
        for _, text in reversed(self.mine()):
            match = PROGRESS_RE.match(text)
            if match:
                return (float(match.group(1)), int(match.group(2)),
                        int(match.group(3)) if match.group(3) else None)
        return (None, None, None)

    def gaps(self) -> List[Tuple[float, float]]:
        """[(t of the last completion before the pause, ms)]."""
        out = []
        for _, text in self.mine():
            match = GAP_RE.match(text)
            if match:
                out.append((float(match.group(2)), float(match.group(1))))
        return out

    def guests(self) -> List[Guest]:
        return self.members + ([self.next] if self.next else [])


@dataclass
class EndFigures:
    """One end's part of one migration step."""

    who: str
    source: str = ""
    dest: str = ""
    status: str = ""
    downtime_ms: Optional[float] = None
    total_ms: Optional[float] = None
    setup_ms: Optional[float] = None
    host_s: Optional[float] = None          # migrate -> completed, host time
    t0: float = 0.0                         # host monotonic: migrate issued
    t1: float = 0.0                         # ... completed (seen)
    wire_ms: Optional[float] = None         # the switch: MAC silent
    move_at: Optional[float] = None
    save_us: Optional[int] = None
    load_us: Optional[int] = None
    info: Dict = field(default_factory=dict)


@dataclass
class Step:
    index: int
    ends: List[EndFigures]
    spread_ms: float = 0.0                  # between the migrate commands
    segments: Dict[str, int] = field(default_factory=dict)  # clock segment before it
    release_ms: Optional[float] = None      # --both-ends: migrate -> downtime-limit set
    held_ms: Optional[float] = None         # ... first source stopped and waiting
    synced: Optional[bool] = None           # ... both continued together
    blackout: Dict[str, Optional[float]] = field(default_factory=dict)
    peer_ops_before: Optional[int] = None
    peer_ops_after: Optional[int] = None
    failure: str = ""


def hub_events(hub_log: str, mac: str) -> List[Tuple[float, Optional[float]]]:
    """[(host time, ms of silence or None)] of the switch (re)learning MAC."""
    events = []
    for match in re.finditer(rf"^hub: ([\d.]+) mac {mac} (?:moved port \S+ -> \d+ after "
                             r"([\d.]+) ms of silence|learned on port \d+)", hub_log,
                             re.MULTILINE):
        events.append((float(match.group(1)),
                       float(match.group(2)) if match.group(2) else None))
    return events


def section_us(qemu_log: str, event: str, rnic_only: bool = True) -> Optional[int]:
    total = None
    for match in re.finditer(rf"{event} type=\S+ idstr=(\S+) instance_id=\d+ "
                             r"downtime=(-?\d+)", qemu_log):
        if not rnic_only or match.group(1).endswith("/rnic"):
            total = (total or 0) + int(match.group(2))
    return total


def tail(text: str, n: int = 25) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join("    " + ln for ln in lines[-n:])


def qemu_log_of(guest: Guest) -> str:
    path = guest.log_dir / f"{guest.name}.log" if guest.log_dir else None
    if guest.vm is not None:
        try:
            text = guest.vm.get_log()
            if text:
                return text
        except Exception:  # pylint: disable=broad-except
            pass
    if path and path.exists():
        return path.read_text(errors="replace")
    return ""


def stats(values: List[float], fmt: str = "{:.0f}") -> str:
    if not values:
        return "—"
    return (f"min {fmt.format(min(values))} / median {fmt.format(statistics.median(values))}"
            f" / max {fmt.format(max(values))}")


class _SwitchoverSync:
    """--both-ends: make both sources switch over at the same moment.

    Each source migrates with downtime-limit 0 (it keeps iterating) and the
    pause-before-switchover capability (once it converges its VM stops and
    it waits in "pre-switchover" before its final pass). When every source
    has finished its first pass (dirty-sync-count >= 2), or one is already
    waiting, downtime-limit is set to the real value on all of them at
    once; when every source waits in pre-switchover, migrate-continue goes
    to all of them back to back. A source does not wait longer than
    --sync-wait for the others (its VM is stopped meanwhile: the wait is
    part of its downtime); one that arrives later continues at once."""

    def __init__(self, soak: "Soak", step: "Step", movers: List[Chain],
                 monitors: List[RawQMP]):
        self.soak, self.step = soak, step
        self.mon = {c.who: m for c, m in zip(movers, monitors)}
        self.released = False
        self.first_wait: Optional[float] = None
        self.continued: set = set()
        self.grouped = False

    @property
    def waiting(self) -> bool:
        return self.first_wait is not None and not self.grouped

    def _all(self, whos, command: str, **args) -> None:
        for who in whos:
            self.mon[who].send(command, **args)
        for who in whos:
            self.mon[who].reply()

    def control(self, infos: Dict[str, Dict], late: bool) -> None:
        step, now = self.step, time.monotonic()
        waiting = [w for w, i in infos.items() if i.get("status") == "pre-switchover"
                   and w not in self.continued]
        passes = [i.get("ram", {}).get("dirty-sync-count", 0) for i in infos.values()]
        try:
            if not self.released and (waiting or late or len(infos) < len(self.mon)
                                      or (passes and min(passes) >= 2)):
                self.released = True
                step.release_ms = (now - min(e.t0 for e in step.ends)) * 1e3
                self._all(self.mon, "migrate-set-parameters",
                          **{"downtime-limit": self.soak.opts.downtime_limit or 300})
            if not waiting:
                return
            if self.first_wait is None:
                self.first_wait = now
            if not self.grouped:
                everyone = len(waiting) == len(self.mon)
                if not everyone and now - self.first_wait < self.soak.opts.sync_wait:
                    return
                self.grouped = True
                step.held_ms = (now - self.first_wait) * 1e3
                step.synced = everyone
            self._all(waiting, "migrate-continue", state="pre-switchover")
            self.continued.update(waiting)
        except Exception as exc:  # pylint: disable=broad-except
            step.failure += f"switchover control: {type(exc).__name__}: {exc}; "
            self.continued.update(self.mon)
            self.grouped = True


class Soak:
    def __init__(self, opts):
        self.opts = opts
        self.steps: List[Step] = []
        self.failures: List[str] = []
        self.warnings: List[str] = []
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.run_dir = Path(opts.log_dir or LOG_ROOT / f"soak-{stamp}")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if not opts.no_snapshot:
            # every QEMU of the run is this one binary, even if the build
            # tree is relinked meanwhile (a relink leaves a moment in which
            # the file cannot be executed, and a changed device in between)
            snap = self.run_dir / "qemu-system-x86_64"
            shutil.copy2(opts.qemu, snap)
            log(f"QEMU {opts.qemu} (modified {time.ctime(os.path.getmtime(opts.qemu))}) "
                f"copied to {snap}")
            opts.qemu = str(snap)
            for attr, path in (("initrd", opts.initrd), ("kernel", opts.kernel)):
                if path and os.path.exists(path):
                    copy = self.run_dir / Path(path).name
                    shutil.copy2(path, copy)
                    setattr(opts, attr, str(copy))
        nsteps = opts.rounds if opts.both_ends else opts.migrations
        self.sync = opts.both_ends and not opts.no_sync_switchover
        self.nsteps = nsteps
        self.duration = opts.settle + nsteps * opts.interval + opts.tail
        verify = "rnic_migrate_verify"
        common = f"-T {opts.qp_timeout} -G {opts.gap_ms:g}"
        self.a_cmd = f"timeout {int(self.duration) + 600} {verify} -s {common}"
        self.b_cmd = (f"timeout {int(self.duration) + 600} {verify} -c 10.0.0.1 {common} "
                      f"-t {self.duration:g} -w {opts.window} -S {opts.slot}"
                      + (f" -r {opts.rate:g}" if opts.rate else ""))
        self.hub: Optional[Hub] = None
        self.chains: Dict[str, Chain] = {}
        self.hub_log = ""
        self.results: Dict[str, Dict[str, str]] = {}

    # --- helpers ---------------------------------------------------------
    def pump(self) -> None:
        for chain in self.chains.values():
            chain.pump()

    def sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            self.pump()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(0.02, left))

    def fail(self, msg: str) -> None:
        self.failures.append(msg)
        log(f"FAILURE: {msg}")

    def movers(self) -> List[Chain]:
        return list(self.chains.values()) if self.opts.both_ends else [self.chains["a"]]

    def alive(self, guest: Guest) -> bool:
        return guest.vm is not None and guest.vm.is_running()

    # --- phases ----------------------------------------------------------
    def start(self, sock_dir: str) -> bool:
        a_script = SCRIPT_A.replace("@CMD@", self.a_cmd).replace("@LISTENING@", "")
        b_script = SCRIPT_B.replace("@CMD@", self.b_cmd).replace("@WAIT_LISTENING@", "")
        self.chains["a"] = Chain("a", MAC_A, a_script, self.hub, self.opts, self.run_dir,
                                 sock_dir)
        self.chains["b"] = Chain("b", MAC_B, b_script, self.hub, self.opts, self.run_dir,
                                 sock_dir)
        log(f"A: {self.a_cmd}")
        log(f"B: {self.b_cmd}")
        for chain in self.chains.values():
            chain.boot()
        for chain in self.movers():
            chain.prepare_next()
        deadline = time.monotonic() + self.opts.boot_timeout
        b = self.chains["b"]
        while True:
            self.pump()
            t, iters, _ = b.progress()
            if iters:
                break
            for chain in self.chains.values():
                if not self.alive(chain.current) or chain.current.poll():
                    self.fail(f"{chain.who.upper()} ended before the traffic started")
                    return False
            if time.monotonic() > deadline:
                self.fail(f"B's traffic did not start within {self.opts.boot_timeout:.0f} s")
                return False
            time.sleep(0.05)
        self.sleep(1.5)     # a few progress lines for the clock
        log(f"traffic running (B at t={b.progress()[0]}); {self.nsteps} "
            f"{'double ' if self.opts.both_ends else ''}migration(s), one every "
            f"{self.opts.interval:g} s, B's traffic lasts {self.duration:g} s")
        return True

    def b_end_host(self) -> Optional[float]:
        """Host time at which B's traffic will stop (its -t)."""
        b = self.chains["b"]
        off = b.offset()
        if off is None:
            off = b.offset(start=0)
        return None if off is None else off + self.duration

    def migrate_one(self, k: int) -> Step:
        movers = self.movers()
        step = Step(k, [EndFigures(c.who.upper()) for c in movers])
        step.segments = {c.who: c.segment_start for c in self.chains.values()}
        peer = self.chains["b"]
        step.peer_ops_before = peer.progress()[2]
        for chain, end in zip(movers, step.ends):
            chain.prepare_next()
            end.source, end.dest = chain.current.name, chain.next.name
            params = {"max-bandwidth": 2 << 30}
            if self.sync:
                params["downtime-limit"] = 0        # precopy until released
                chain.current.vm.cmd("migrate-set-capabilities", capabilities=[
                    {"capability": "pause-before-switchover", "state": True}])
            elif self.opts.downtime_limit is not None:
                params["downtime-limit"] = self.opts.downtime_limit
            chain.current.vm.cmd("migrate-set-parameters", **params)
        self.pump()
        # every migrate at once: the commands are written to all sources
        # back to back on their second monitors, the answers read after
        errors: List[str] = []
        monitors = []
        for chain, end in zip(movers, step.ends):
            try:
                monitors.append(chain.raw_qmp())
            except Exception as exc:  # pylint: disable=broad-except
                errors.append(f"{end.who}: second QMP monitor: {type(exc).__name__}: {exc}")
        if not errors:
            for chain, end, mon in zip(movers, step.ends, monitors):
                end.t0 = time.monotonic()
                mon.send("migrate", uri=chain.next_uri)
            for end, mon in zip(step.ends, monitors):
                try:
                    mon.reply()
                except Exception as exc:  # pylint: disable=broad-except
                    errors.append(f"{end.who}: migrate: {type(exc).__name__}: {exc}")
        step.spread_ms = (max(e.t0 for e in step.ends) - min(e.t0 for e in step.ends)) * 1e3
        if errors:
            step.failure = "; ".join(errors)
            return step
        pending = dict(zip([c.who for c in movers], zip(movers, step.ends)))
        deadline = time.monotonic() + self.opts.migrate_timeout
        sync = _SwitchoverSync(self, step, movers, monitors) if self.sync else None
        while pending:
            infos = {}
            for who, (chain, end) in list(pending.items()):
                try:
                    info = chain.current.vm.cmd("query-migrate")
                except Exception as exc:  # pylint: disable=broad-except
                    end.status = "qmp-error"
                    step.failure += f"{end.who}: query-migrate: {type(exc).__name__}: {exc}; "
                    del pending[who]
                    continue
                infos[who] = info
                if info.get("status") in ("completed", "failed", "cancelled"):
                    end.t1 = time.monotonic()
                    end.info = info
                    end.status = info["status"]
                    end.downtime_ms = info.get("downtime")
                    end.total_ms = info.get("total-time")
                    end.setup_ms = info.get("setup-time")
                    end.host_s = end.t1 - end.t0
                    del pending[who]
                elif time.monotonic() > deadline:
                    end.status = f"timeout ({info.get('status')})"
                    try:
                        chain.current.vm.cmd("migrate_cancel")
                    except Exception:  # pylint: disable=broad-except
                        pass
                    del pending[who]
            if sync:
                sync.control(infos, time.monotonic() > deadline - 30)
            self.sleep(0.01 if sync and sync.waiting else 0.02)
        for chain, end in zip(movers, step.ends):
            if end.status != "completed":
                detail = end.info.get("error-desc", "") if end.info else ""
                step.failure += (f"{end.who}: migration {end.source} -> {end.dest} "
                                 f"{end.status} {detail}; ")
        if step.failure:
            return step
        for chain in movers:
            chain.switch()
            chain.new_segment()
        return step

    def figures(self, step: Step) -> None:
        """Fill in the switch's and the peers' view of STEP (from the logs so far)."""
        hub_log = self.hub.log() if self.hub and self.hub.log_path else self.hub_log
        for end in step.ends:
            chain = self.chains[end.who.lower()]
            if end.status != "completed":
                continue
            for at, silence in hub_events(hub_log, chain.mac):
                if end.t0 - 0.05 <= at <= end.t1 + self.opts.interval:
                    end.move_at, end.wire_ms = at, silence
                    break
        # the pause each measuring end saw around its peer's switchover, in
        # its own clock as it ran before this step
        measurers = list(self.chains.values()) if self.opts.both_ends else [self.chains["b"]]
        by_who = {end.who.lower(): end for end in step.ends}
        for chain in measurers:
            ref = by_who["b" if chain.who == "a" else "a"]
            off = chain.offset(before=ref.t0, start=step.segments.get(chain.who, 0))
            if ref.status != "completed" or off is None:
                step.blackout[chain.who] = None
                continue
            windows = [(ref.t0 - off, ref.t1 - off)]
            if ref.move_at is not None:
                windows.insert(0, ((ref.move_at - off),) * 2)
            found = None
            for start, stop in windows:     # the moment first, else the window
                hits = [ms for t, ms in chain.gaps()
                        if t <= stop + 1.0 and t + ms / 1e3 >= start - 0.1]
                if hits:
                    found = max(hits)
                    break
            step.blackout[chain.who] = found
        if step.peer_ops_after is None:
            step.peer_ops_after = self.chains["b"].progress()[2]

    @staticmethod
    def switchovers(step: Step) -> Optional[Tuple[float, float]]:
        """Both ends: (ms between the two switchovers, i.e. the switch seeing
        each destination's first frame; ms during which both MACs were
        silent at once, 0 if their silences did not overlap)."""
        if len(step.ends) != 2 or any(e.move_at is None or e.wire_ms is None
                                      for e in step.ends):
            return None
        a, b = step.ends
        apart = abs(a.move_at - b.move_at) * 1e3
        both = (min(a.move_at, b.move_at)
                - max(a.move_at - a.wire_ms / 1e3, b.move_at - b.wire_ms / 1e3)) * 1e3
        return apart, max(0.0, both)

    def describe(self, step: Step) -> str:
        parts = []
        for end in step.ends:
            parts.append(
                f"{end.source} -> {end.dest} {end.status}: downtime {end.downtime_ms} ms, "
                f"total {end.total_ms} ms, host {end.host_s or 0:.2f} s, "
                f"{end.who}'s MAC silent on the switch "
                f"{'?' if end.wire_ms is None else f'{end.wire_ms:.0f}'} ms")
        for who, ms in step.blackout.items():
            parts.append(f"{who.upper()}'s pause {'< %g' % self.opts.gap_ms if ms is None else f'{ms:.0f}'} ms")
        if self.opts.both_ends:
            parts.append(f"migrate commands {step.spread_ms:.1f} ms apart")
            if step.synced is not None:
                parts.append(f"{'both continued together' if step.synced else 'NOT synchronized'}"
                             f" after the first waited {step.held_ms:.0f} ms")
            sw = self.switchovers(step)
            if sw:
                parts.append(f"switchovers {sw[0]:.0f} ms apart, both MACs silent "
                             f"together {sw[1]:.0f} ms")
        return f"migration {step.index}/{self.nsteps}: " + "; ".join(parts)

    def run_steps(self) -> None:
        b = self.chains["b"]
        t_base = b.offset()
        assert t_base is not None
        last_report: Optional[Step] = None
        for k in range(1, self.nsteps + 1):
            target = t_base + self.opts.settle + (k - 1) * self.opts.interval
            self.sleep(max(0.0, target - time.monotonic()))
            if last_report:     # its pauses are on the consoles by now
                self.figures(last_report)
                log(self.describe(last_report))
                last_report = None
            end_host = self.b_end_host()
            # time for one more migration (the slowest so far) and traffic after it
            margin = 3.0 + 1.5 * max([2.0] + [e.host_s or 0 for s in self.steps
                                              for e in s.ends])
            if end_host is not None and end_host - time.monotonic() < margin:
                self.fail(f"migration {k}: B's traffic ends in "
                          f"{end_host - time.monotonic():.1f} s (its -t {self.duration:g}), "
                          f"too soon to migrate (the migrations ran late: --interval)")
                break
            for chain in self.chains.values():
                if chain.current.poll():
                    self.fail(f"migration {k}: {chain.current.name} has ended before it "
                              f"(status {chain.current._status})")
                    return
            step = self.migrate_one(k)
            self.steps.append(step)
            if step.failure:
                self.fail(f"migration {k}: {step.failure.rstrip('; ')}")
                self.figures(step)
                log(self.describe(step))
                return
            last_report = step
            # the next destination right away (it only waits on its socket)
            if k < self.nsteps:
                for chain in self.movers():
                    try:
                        chain.prepare_next()
                    except Exception as exc:  # pylint: disable=broad-except
                        self.fail(f"starting the destination of migration {k + 1}: {exc}")
                        return
        if last_report:
            self.sleep(3.0)
            self.figures(last_report)
            log(self.describe(last_report))

    def finish(self) -> None:
        """Wait for both programs to end (B's -t), then stop every QEMU."""
        deadline = (self.b_end_host() or time.monotonic()) + self.opts.end_timeout
        log("waiting for the traffic to end and both ends' verdicts")
        while not all(c.current.poll() for c in self.chains.values()):
            if time.monotonic() > deadline:
                self.fail("A or B did not finish in time after the traffic's end: "
                          + ", ".join(f"{c.current.name} "
                                      f"{'ended' if c.current.poll() else 'still running'}"
                                      for c in self.chains.values()))
                break
            self.sleep(0.1)
        for chain in self.chains.values():
            if chain.next is not None:
                try:
                    chain.next.vm.shutdown(hard=True)
                except Exception:  # pylint: disable=broad-except
                    pass
            res = chain.current.finish(timed_out=not chain.current.poll())
            chain.flush()
            chain.exit_status = res.status

    def collect(self) -> None:
        """rnic section times from every QEMU's trace log."""
        for chain in self.chains.values():
            logs = {g.name: qemu_log_of(g) for g in chain.guests()}
            chain.qemu_logs = logs
        for step in self.steps:
            for end in step.ends:
                logs = self.chains[end.who.lower()].qemu_logs
                end.save_us = section_us(logs.get(end.source, ""), "vmstate_downtime_save")
                end.load_us = section_us(logs.get(end.dest, ""), "vmstate_downtime_load")

    def verdicts(self) -> None:
        a, b = self.chains["a"], self.chains["b"]
        for chain, role in ((a, "server"), (b, "client")):
            out = chain.program_output()
            res = verify_result(out, role)
            self.results[role] = res
            who = chain.who.upper()
            if not res:
                self.fail(f"{who} ({role}) printed no VERIFY-RESULT")
                continue
            if res.get("fatal"):
                self.fail(f"{who} ({role}): fatal error: "
                          + "; ".join(t for t in out.splitlines() if "FATAL" in t))
            for key in ("errors", "lost", "dup"):
                if res.get(key, "0") != "0":
                    self.fail(f"{who} ({role}): {key}={res.get(key)}")
            rc = re.search(rf"^rc={chain.who}:(\d+)", out, re.MULTILINE)
            if not rc or rc.group(1) != "0":
                self.fail(f"{who}: the verifier's exit status is "
                          f"{rc.group(1) if rc else 'missing'}")
            if getattr(chain, "exit_status", None) != 0:
                self.fail(f"{who}: the guest script's exit status is "
                          f"{getattr(chain, 'exit_status', None)}")
            bad = [t for t in chain.output().splitlines() if BAD_RE.match(t.split(": ", 1)[-1])
                   or t.startswith("dmesg-bad:")]
            for line in bad[:20]:
                self.fail(f"{who}: {line}")
        client, server = self.results.get("client", {}), self.results.get("server", {})
        if client and server and "iters" in client and "iters" in server:
            iters = int(client["iters"])
            if client["iters"] != server["iters"]:
                self.fail(f"iterations: B completed {client['iters']}, A received "
                          f"{server['iters']}")
            if not int(client.get("writes", -1)) == int(client.get("reads", -2)) == iters:
                self.fail(f"B: writes={client.get('writes')} reads={client.get('reads')} "
                          f"iters={iters}")
            if int(server.get("recvs", -1)) != iters + 1:
                self.fail(f"A: recvs={server.get('recvs')}, expected {iters + 1} (+ STOP)")
            if not re.search(r"^verify: STOP after \d+ iterations; \d+ slots checked, 0 wrong",
                             a.program_output(), re.MULTILINE):
                self.fail("A: no 'STOP after .. 0 wrong' line (its memory check)")
            last_ok = [s for s in self.steps if not s.failure]
            if last_ok and last_ok[-1].peer_ops_after is not None and \
                    int(client.get("ops", 0)) <= last_ok[-1].peer_ops_after:
                self.fail("B's traffic did not continue after the last migration")
        for chain in self.movers():
            moves = len(hub_events(self.hub_log, chain.mac)) - 1
            done = sum(1 for s in self.steps for e in s.ends
                       if e.who.lower() == chain.who and e.status == "completed")
            if moves < done:
                self.warnings.append(f"the switch relearned {chain.who.upper()}'s MAC "
                                     f"{moves} times for {done} migrations")

    def budget_ms(self) -> float:
        """The peers' retry budget: the first transmission's ACK timeout and
        retry_cnt (7, the verifier's) more: 8 x 4.096 us x 2^T."""
        return 8 * 4.096e-3 * 2 ** self.opts.qp_timeout

    def causes(self) -> List[str]:
        """Migrations whose switchover outlasted the peers' retry budget (a
        peer then completes its request with "transport retry counter
        exceeded", docs/migration.md "Guarantees to peers")."""
        out = []
        for step in self.steps:
            for end in step.ends:
                worst = max(filter(None, [end.wire_ms, end.downtime_ms]), default=0)
                if worst > self.budget_ms():
                    out.append(f"migration {step.index} ({end.source} -> {end.dest}): QEMU "
                               f"downtime {end.downtime_ms} ms (rnic section {end.save_us} µs "
                               f"save + {end.load_us} µs load), {end.who}'s MAC silent on the "
                               f"switch {end.wire_ms} ms: beyond the peer's retry budget "
                               f"{self.budget_ms():.0f} ms (QP timeout {self.opts.qp_timeout}, "
                               f"retry_cnt 7)")
        return out

    def evidence(self) -> str:
        text = [f"logs: {self.run_dir}"]
        for cause in self.causes():
            text.append(f"likely cause: {cause}")
        for chain in self.chains.values():
            text.append(f"--- {chain.who.upper()}: last lines of the console "
                        f"({chain.current.name if chain.current else '?'}) ---")
            text.append(tail(chain.output(), 30))
            for guest in chain.guests()[-2:]:
                qlog = getattr(chain, "qemu_logs", {}).get(guest.name, "")
                qlog = "\n".join(ln for ln in qlog.splitlines()
                                 if "vmstate_downtime" not in ln and "rnic_state_" not in ln)
                if qlog.strip():
                    text.append(f"--- QEMU {guest.name} (traces of downtime left out) ---")
                    text.append(tail(qlog, 15))
        text.append("--- hub ---")
        text.append(tail(self.hub_log, 15))
        return "\n".join(text)

    def summary(self) -> Dict:
        done = [s for s in self.steps if not s.failure]
        figs: Dict[str, List[float]] = {}
        below = {}
        for s in done:
            for end in s.ends:
                for key, val in (("downtime", end.downtime_ms), ("total", end.total_ms),
                                 ("host_s", end.host_s), ("wire", end.wire_ms)):
                    if val is not None:
                        figs.setdefault(f"{end.who}.{key}", []).append(float(val))
                rnic = (end.save_us or 0) + (end.load_us or 0)
                figs.setdefault(f"{end.who}.rnic_ms", []).append(rnic / 1e3)
            for who, ms in s.blackout.items():
                if ms is None:
                    below[who] = below.get(who, 0) + 1
                else:
                    figs.setdefault(f"{who.upper()}.blackout", []).append(ms)
        client, server = self.results.get("client", {}), self.results.get("server", {})
        print()
        mode = (f"both ends (A -> A' and B -> B' together), {self.nsteps} round(s)"
                if self.opts.both_ends else f"A -> A' -> ..., {self.nsteps} migration(s)")
        print(f"migration-soak: {mode}; {len(done)} completed, "
              f"{len(self.steps) - len(done)} failed, "
              f"{self.nsteps - len(self.steps)} not attempted; "
              f"{self.elapsed:.0f} s in all ({self.elapsed / max(1, len(done)):.1f} s per "
              f"migration incl. boot and tail), load average {self.loadavg}")
        for end_who in [e.who for e in (done[0].ends if done else [])]:
            print(f"  {end_who}: QEMU downtime ms {stats(figs.get(f'{end_who}.downtime', []))}; "
                  f"total ms {stats(figs.get(f'{end_who}.total', []))}; "
                  f"migrate->completed s {stats(figs.get(f'{end_who}.host_s', []), '{:.2f}')}; "
                  f"rnic section ms {stats(figs.get(f'{end_who}.rnic_ms', []), '{:.2f}')}; "
                  f"MAC silent on the switch ms {stats(figs.get(f'{end_who}.wire', []))}")
        for who in sorted({w for s in done for w in s.blackout}):
            vals = figs.get(f"{who.upper()}.blackout", [])
            print(f"  {who.upper()}'s pause across the switchover ms: {stats(vals)}"
                  f" ({len(vals)} measured, {below.get(who, 0)} below {self.opts.gap_ms:g} ms)")
        if self.opts.both_ends and done:
            spreads = [s.spread_ms for s in done]
            print(f"  migrate commands apart ms: {stats(spreads, '{:.1f}')}")
            if self.sync:
                held = [s.held_ms for s in done if s.held_ms is not None]
                print(f"  switchover synchronized in {sum(1 for s in done if s.synced)} of "
                      f"{len(done)} rounds; the first source waited (VM stopped) ms: "
                      f"{stats(held)}")
            sws = [sw for sw in map(self.switchovers, done) if sw]
            print(f"  switchovers apart ms: {stats([sw[0] for sw in sws])}; both MACs "
                  f"silent at the same time in {sum(1 for sw in sws if sw[1] > 0)} of "
                  f"{len(sws)} rounds (overlap ms: {stats([sw[1] for sw in sws])})")
        if client:
            print(f"  B (client): iters={client.get('iters')} ops={client.get('ops')} "
                  f"errors={client.get('errors')} lost={client.get('lost')} "
                  f"dup={client.get('dup')} bytes_checked={client.get('bytes_checked')} "
                  f"max_gap_ms={client.get('max_gap_ms')} duration_s={client.get('duration_s')}")
        if server:
            print(f"  A (server): iters={server.get('iters')} recvs={server.get('recvs')} "
                  f"errors={server.get('errors')} lost={server.get('lost')} "
                  f"dup={server.get('dup')} bytes_checked={server.get('bytes_checked')}")
        for warning in self.warnings:
            print(f"  warning: {warning}")
        if self.failures:
            print(f"migration-soak: FAILED ({len(self.failures)}):")
            for failure in self.failures:
                print(f"  - {failure}")
            print(self.evidence())
        else:
            print("migration-soak: PASSED: every migration completed; both ends: 0 errors, "
                  "0 lost, 0 duplicated, same iteration count, exit status 0")
        print(f"logs: {self.run_dir}", flush=True)
        return {
            "mode": "both-ends" if self.opts.both_ends else "one-end",
            "requested": self.nsteps, "completed": len(done),
            "failed": len(self.steps) - len(done), "failures": self.failures,
            "warnings": self.warnings, "elapsed_s": self.elapsed,
            "loadavg": self.loadavg, "commands": {"a": self.a_cmd, "b": self.b_cmd},
            "client": client, "server": server,
            "below_threshold": below, "gap_ms": self.opts.gap_ms,
            "steps": [{"index": s.index, "failure": s.failure, "spread_ms": s.spread_ms,
                       "switchovers": self.switchovers(s), "release_ms": s.release_ms,
                       "held_ms": s.held_ms, "synced": s.synced,
                       "blackout": s.blackout,
                       "ends": [{**{k: v for k, v in e.__dict__.items() if k != "info"},
                                 "ram": e.info.get("ram", {}),
                                 "expected_downtime_ms": e.info.get("expected-downtime")}
                                for e in s.ends]} for s in self.steps],
            "retry_budget_ms": self.budget_ms(), "causes": self.causes(),
            "logs": str(self.run_dir),
        }

    def run(self) -> int:
        t0 = time.monotonic()
        load0 = os.getloadavg()
        with Hub() as hub, tempfile.TemporaryDirectory(prefix="rnic-soak-") as sock_dir:
            self.hub = hub
            try:
                if self.start(sock_dir):
                    self.run_steps()
                    self.finish()
            except Exception as exc:  # pylint: disable=broad-except
                self.fail(f"{type(exc).__name__}: {exc}")
            finally:
                for chain in self.chains.values():
                    for guest in chain.guests():
                        if guest.vm is not None and guest.vm.is_running():
                            try:
                                guest.vm.shutdown(hard=True)
                            except Exception:  # pylint: disable=broad-except
                                pass
                    chain.flush()
                self.hub_log = hub.stop()
                self.hub = None
        (self.run_dir / "hub.log").write_text(self.hub_log)
        self.elapsed = time.monotonic() - t0
        load1 = os.getloadavg()
        self.loadavg = f"{load0[0]:.1f} at the start, {load1[0]:.1f} at the end"
        self.collect()
        for step in self.steps:
            self.figures(step)
        if self.chains:
            self.verdicts()
        result = self.summary()
        if self.opts.json:
            Path(self.opts.json).write_text(json.dumps(result, indent=1) + "\n")
        return 1 if self.failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--migrations", type=int, default=10, metavar="N",
                        help="consecutive migrations A -> A1 -> ... (default 10)")
    parser.add_argument("--both-ends", action="store_true",
                        help="migrate A and B at the same time, --rounds times")
    parser.add_argument("--rounds", type=int, default=5, metavar="R",
                        help="with --both-ends: simultaneous migrations (default 5)")
    parser.add_argument("--interval", type=float, default=10.0, metavar="S",
                        help="seconds from one migration's start to the next (default 10)")
    parser.add_argument("--settle", type=float, default=4.0, metavar="S",
                        help="traffic before the first migration (default 4)")
    parser.add_argument("--tail", type=float, default=8.0, metavar="S",
                        help="traffic after the last migration's slot (default 8)")
    parser.add_argument("--slot", type=int, default=65536,
                        help="verifier WRITE/READ size (-S, default 65536)")
    parser.add_argument("--window", type=int, default=8,
                        help="verifier iterations in flight (-w, default 8)")
    parser.add_argument("--rate", type=float, default=0,
                        help="verifier iterations per second (-r, default 0: no limit)")
    parser.add_argument("--no-sync-switchover", action="store_true",
                        help="with --both-ends: do not hold both precopies until both "
                        "iterate (each switches over when it converges)")
    parser.add_argument("--sync-wait", type=float, default=1.0, metavar="S",
                        help="with --both-ends: longest wait, VM stopped, of a source "
                        "for the other at the switchover (default 1)")
    parser.add_argument("--downtime-limit", type=int, metavar="MS",
                        help="QEMU's downtime-limit (default: QEMU's, 300)")
    parser.add_argument("--qp-timeout", type=int, default=16,
                        help="QP timeout exponent (-T, default 16: 268 ms)")
    parser.add_argument("--gap-ms", type=float, default=50,
                        help="pauses reported by the verifier (-G, default 50)")
    parser.add_argument("--memory", type=int, default=512, help="guest MiB (default 512)")
    parser.add_argument("--boot-timeout", type=float, default=300)
    parser.add_argument("--migrate-timeout", type=float, default=120,
                        help="seconds one migration may take (default 120)")
    parser.add_argument("--end-timeout", type=float, default=180,
                        help="seconds after the traffic's end for both verdicts")
    parser.add_argument("--qemu", default=str(DEFAULT_QEMU))
    parser.add_argument("--no-snapshot", action="store_true",
                        help="run --qemu itself, not a copy in the log directory")
    parser.add_argument("--initrd", default=str(PROVIDER_IMAGE))
    parser.add_argument("--kernel", default=str(GUEST_DIR / "vmlinux")
                        if (GUEST_DIR / "vmlinux").exists() else None,
                        help="default: what rnic_guest.py boots")
    parser.add_argument("--log-dir", help="default build/guest-logs/soak-<time>")
    parser.add_argument("--json", metavar="FILE", help="write every figure to FILE")
    parser.add_argument("--no-build", action="store_true",
                        help="do not run build-provider.sh --image first")
    opts = parser.parse_args()
    if opts.migrations < 1 or opts.rounds < 1:
        parser.error("--migrations and --rounds must be at least 1")
    if not opts.no_build and not build_provider_image():
        return 2
    return Soak(opts).run()


if __name__ == "__main__":
    sys.exit(main())
