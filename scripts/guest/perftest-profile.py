#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the host's CPU goes while two rnic guests run perftest.

Runs scripts/guest/perftest-pair.py (rnic only, one run, the arguments after
--) and, once both QEMU processes are busy, samples them with perf record for
--seconds: prints each busy thread's share of a core (the main loop, the vCPU,
by QEMU's thread names) and how its perf samples split between the host
kernel, the device's code (rnic_*, the ICRC), the rest of QEMU (net layer,
main loop, TCG), code TCG generated for the guest, and libraries. The QEMU
binary is $RNIC_QEMU or the project's build. Needs root and perf (Debian:
linux-perf).

Usage: scripts/guest/perftest-profile.py [--seconds 5] [--settle 4]
           [--callgraph] [--keep FILE] -- [perftest-pair.py arguments]
  e.g. scripts/guest/perftest-profile.py -- --mtu 1500 \\
           --test "ib_write_bw 1048576 -D 30"
  --seconds N  length of the perf record (the test must outlast settle +
               seconds: give bandwidth tests -D 30)
  --settle N   seconds to wait once the guests are busy
  --callgraph  record call graphs too (perf record -g), for perf report
  --keep FILE  keep perf's data file (default: a temporary file)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rnic_guest import DEFAULT_QEMU  # noqa: E402

HERE = Path(__file__).resolve().parent
HZ = os.sysconf("SC_CLK_TCK")
DEVICE_SYMBOL = re.compile(r"^(rnic_|crc32_)")


def descendants(root: int) -> List[int]:
    """Pids below ROOT in the process tree."""
    children: Dict[int, List[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children[int(stat.rsplit(")", 1)[1].split()[1])].append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def qemus(root: int, binary: Path) -> List[int]:
    """The QEMU processes (running BINARY) below ROOT."""
    pids = []
    for pid in descendants(root):
        try:
            if Path(os.readlink(f"/proc/{pid}/exe")) == binary:
                pids.append(pid)
        except OSError:
            continue
    return pids


def thread_ticks(pids: List[int]) -> Dict[int, Tuple[int, str, int]]:
    """{tid: (pid, thread name, utime + stime in clock ticks)}."""
    ticks = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:         # that QEMU has exited
            continue
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}"
            try:
                stat = Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()
                name = Path(f"{base}/comm").read_text().strip()
            except OSError:
                continue
            ticks[int(tid)] = (pid, name, int(stat[11]) + int(stat[12]))
    return ticks


def busy(pids: List[int]) -> float:
    """Cores the PIDS use over one second."""
    before = sum(t[2] for t in thread_ticks(pids).values())
    time.sleep(1)
    return (sum(t[2] for t in thread_ticks(pids).values()) - before) / HZ


def classify(dso: str, sym: str, binary: Path) -> str:
    if dso == "[kernel.kallsyms]":
        return "kernel"
    if dso.startswith("[JIT]"):
        return "guest"
    if dso == binary.name:
        return "device" if DEVICE_SYMBOL.match(sym) else "qemu"
    return "libs"


def split_samples(data: str, binary: Path) -> Dict[int, Dict[str, float]]:
    """{tid: {class: % of all samples}} from perf's data file DATA."""
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                          "--sort", "pid,dso,sym", "-g", "none", "-t", "|"],
                         capture_output=True, text=True, check=True).stdout
    split: Dict[int, Dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if line.startswith("#") or len(fields) < 4 or not fields[0].endswith("%"):
            continue
        tid = int(fields[1].split(":", 1)[0])
        sym = fields[3].split("] ", 1)[-1]
        split[tid][classify(fields[2], sym, binary)] += float(fields[0][:-1])
    return split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--settle", type=float, default=4)
    parser.add_argument("--callgraph", action="store_true")
    parser.add_argument("--keep", default=None)
    parser.add_argument("pair_args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    if not shutil.which("perf"):
        print("perftest-profile: perf is not installed (apt install linux-perf)",
              file=sys.stderr)
        return 1
    pair_args = [a for a in opts.pair_args if a != "--"]
    binary = Path(os.environ.get("RNIC_QEMU", DEFAULT_QEMU)).resolve()
    with tempfile.TemporaryDirectory(prefix="rnic-profile-") as tmp:
        # thread names (CPU 0/TCG) for the table: QEMU's -name debug-threads
        wrapper = Path(tmp) / "qemu"
        wrapper.write_text(f'#!/bin/sh\nexec "{binary}" "$@" -name debug-threads=on\n')
        wrapper.chmod(0o755)
        data = opts.keep or str(Path(tmp) / "perf.data")
        pair = subprocess.Popen(
            [sys.executable, str(HERE / "perftest-pair.py"), "--no-build",
             "--peers", "rnic", "--runs", "1", *pair_args],
            env={**os.environ, "RNIC_QEMU": str(wrapper)})
        pids: List[int] = []
        deadline = time.time() + 300
        while time.time() < deadline and pair.poll() is None:
            pids = qemus(pair.pid, binary)
            if len(pids) == 2 and busy(pids) > 1.0:
                break
            time.sleep(0.5)
        else:
            print("perftest-profile: the guests never got busy", file=sys.stderr)
            pair.kill()
            return 1
        time.sleep(opts.settle)
        before, t0 = thread_ticks(pids), time.time()
        record = subprocess.run(["perf", "record", "-q",
                                 *(["-g"] if opts.callgraph else []),
                                 "-o", data, "-p", ",".join(map(str, pids)),
                                 "--", "sleep", str(opts.seconds)],
                                check=False, stdout=subprocess.DEVNULL)
        if record.returncode:
            gone = [pid for pid in pids if not Path(f"/proc/{pid}").exists()]
            why = (f"QEMU {', '.join(map(str, gone))} exited during the "
                   "recording (give the test a longer -D or -n)" if gone else
                   f"perf record failed ({record.returncode})")
            print(f"perftest-profile: {why}", file=sys.stderr)
            pair.wait()
            return 1
        after, elapsed = thread_ticks(pids), time.time() - t0
        used = (sum(t[2] for t in after.values()) -
                sum(t[2] for tid, t in before.items() if tid in after)) / HZ
        if used / elapsed < 1.0:
            print(f"perftest-profile: the guests used {used / elapsed:.2f} "
                  "cores while recorded, less than when the recording "
                  "started: did the test end during it? (give it a longer "
                  "-D or -n)", file=sys.stderr)
        status = pair.wait()
        split = split_samples(data, binary)

    role = {pid: f"guest {n + 1}" for n, pid in enumerate(sorted(pids))}
    print(f"\nper thread, {opts.seconds:g} s of perf record "
          "(share of a core; its samples: host kernel / device / rest of QEMU / "
          "guest code / libraries; guest 1 is 10.0.0.1, perftest's server):\n")
    print("| QEMU | thread | core | kernel | device | QEMU | guest | libs |")
    print("|---|---|---|---|---|---|---|---|")
    for tid, (pid, name, ticks) in sorted(after.items()):
        core = (ticks - before.get(tid, (pid, name, ticks))[2]) / HZ / elapsed
        if core < 0.03:
            continue
        parts = split.get(tid, {})
        total = sum(parts.values()) or 1.0
        name = "main loop" if tid == pid else name
        cells = " | ".join(f"{100 * parts.get(k, 0) / total:.0f} %"
                           for k in ("kernel", "device", "qemu", "guest", "libs"))
        print(f"| {role[pid]} ({pid}) | {name} | {100 * core:.0f} % | {cells} |")
    if opts.keep:
        print(f"\nperf data kept in {opts.keep} (perf report -i {opts.keep})")
    return status


if __name__ == "__main__":
    sys.exit(main())
