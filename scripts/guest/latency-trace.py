#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where an ib_send_lat round trip between two rnic guests spends its time.

Boots a pair of rnic guests (scripts/guest/rdma_pair.py), runs
ib_send_lat for N round trips and, WAIT seconds after both QEMUs started,
records the host's scheduler and system-call tracepoints for 2 s with
`perf record -a` (root, perf installed). Then, per guest:

  delivery   a vCPU thread's sendmsg (a frame leaves) to the peer main
             loop's next recvmsg returning (the frame taken)
  reaction   that recvmsg to the peer vCPU's next sendmsg (the guest saw
             the CQE and posted its receive and its reply)
  wake-up    a QEMU main loop woken to the moment it runs

as percentiles, and how much of the window the long (> 200 us) wake-ups
took, with where the waker ran. docs/design.md ("Performance": its
profile "Where a latency round trip goes") has the figures and their meaning.

  scripts/guest/latency-trace.py [--iters 200000] [--wait 30] [--qemu BIN]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import lines_of, run_pair  # noqa: E402
from rnic_guest import DEFAULT_QEMU  # noqa: E402

EVENTS = ",".join([
    "sched:sched_switch", "sched:sched_wakeup",
    "syscalls:sys_enter_sendmsg", "syscalls:sys_exit_recvmsg",
])
LINE = re.compile(r"\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)")
Event = Tuple[float, int, int, int, str, str]   # us, pid, tid, cpu, event, rest


def record(wait: float, out: str) -> None:
    time.sleep(wait)
    subprocess.run(["perf", "record", "-a", "-q", "-o", out, "-e", EVENTS,
                    "--", "sleep", "2"], check=True, capture_output=True)


def read_events(data: str) -> List[Event]:
    text = subprocess.run(["perf", "script", "-i", data, "-F",
                           "comm,pid,tid,cpu,time,event,trace"],
                          check=True, capture_output=True, text=True).stdout
    events = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            events.append((float(m.group(5)) * 1e6, int(m.group(2)), int(m.group(3)),
                           int(m.group(4)), m.group(6), m.group(7)))
    return events


def percentiles(xs: List[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    n = len(xs)
    return (f"n={n} p10={xs[n // 10]:.0f} median={xs[n // 2]:.0f} "
            f"p90={xs[n * 9 // 10]:.0f} p99={xs[n * 99 // 100]:.0f} "
            f"mean={statistics.mean(xs):.0f} us")


def analyse(events: List[Event], pids: List[int]) -> None:
    # each QEMU's vCPU thread: the one that sends the frames (doorbells)
    sends = Counter((pid, tid) for _, pid, tid, _, e, _ in events
                    if pid in pids and tid != pid and e == "syscalls:sys_enter_sendmsg")
    vcpu = {pid: max((k for k in sends if k[0] == pid), key=sends.get, default=(0, 0))[1]
            for pid in pids}
    last_send: Dict[int, float] = {}
    last_rx: Dict[int, float] = {}
    delivery: Dict[int, List[float]] = {1: [], 2: []}
    reaction: Dict[int, List[float]] = {1: [], 2: []}
    woken: Dict[int, Tuple[float, bool]] = {}   # main loop -> (when, onto the waker's core)
    waits: List[Tuple[float, bool]] = []
    for t, pid, tid, cpu, event, rest in events:
        me = pids.index(pid) + 1 if pid in pids else 0
        if me and event == "syscalls:sys_enter_sendmsg" and tid == vcpu[pid]:
            last_send[me] = t
            if me in last_rx:
                reaction[me].append(t - last_rx.pop(me))
        elif me and event == "syscalls:sys_exit_recvmsg" and tid == pid:
            if 3 - me in last_send:
                delivery[me].append(t - last_send.pop(3 - me))
                last_rx[me] = t
        elif event == "sched:sched_wakeup":
            m = re.search(r" pid=(\d+).*target_cpu=(\d+)", rest)
            if m and int(m.group(1)) in pids and int(m.group(1)) not in woken:
                woken[int(m.group(1))] = (t, cpu == int(m.group(2)))
        elif event == "sched:sched_switch":
            m = re.search(r"next_pid=(\d+)", rest)
            if m and int(m.group(1)) in woken:
                t0, same_core = woken.pop(int(m.group(1)))
                waits.append((t - t0, same_core))
    for me in (1, 2):
        print(f"delivery to guest {me}: {percentiles(delivery[me])}")
        print(f"reaction of guest {me}: {percentiles(reaction[me])}")
    print(f"main-loop wake-up to run: {percentiles([w for w, _ in waits])}")
    long_waits = [(w, same) for w, same in waits if w > 200]
    print(f"wake-ups waiting > 200 us: {len(long_waits)}, "
          f"{sum(w for w, _ in long_waits) / 1e3:.0f} ms of the 2000 ms window; "
          f"woken onto the waker's own core: {sum(1 for _, s in long_waits if s)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iters", type=int, default=200000)
    parser.add_argument("--wait", type=float, default=30.0,
                        help="seconds from the QEMUs' start to the recording")
    parser.add_argument("--qemu", default=str(DEFAULT_QEMU))
    opts = parser.parse_args()
    if not shutil.which("perf") or os.geteuid() != 0:
        print("latency-trace: needs root and perf (apt-get install linux-perf) "
              "for system-wide scheduler tracepoints", file=sys.stderr)
        return 1
    cmd = f"ib_send_lat -d rnic0 -x 1 -s 8 -n {opts.iters}"
    steps = [("send_lat", cmd, f"{cmd} 10.0.0.1", 1)]
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault(
        "pair", run_pair("latency-trace", steps, qemu=opts.qemu)))
    runner.start()
    pids: List[int] = []
    while runner.is_alive() and len(pids) < 2:
        time.sleep(0.2)
        pids = sorted(int(p) for p in subprocess.run(
            ["pgrep", "-P", str(os.getpid())], capture_output=True,
            text=True).stdout.split())
    with tempfile.TemporaryDirectory(prefix="rnic-trace-") as tmp:
        data = f"{tmp}/perf.data"
        record(opts.wait, data)
        runner.join()
        print(lines_of(result["pair"][1].output, "send_lat"))
        analyse(read_events(data), pids)
    return 0


if __name__ == "__main__":
    sys.exit(main())
