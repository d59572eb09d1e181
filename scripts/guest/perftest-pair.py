#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""perftest between two TCG guests: rnic (the provider and rnic.ko) and/or
Soft-RoCE (rdma_rxe on virtio-net), side by side.

Boots two guests per peer kind on a -netdev stream over a unix socket
(or, with --netdev dgram, a -netdev dgram over unix datagram sockets;
scripts/guest/rdma_pair.py), runs unmodified perftest 25.01 from trixie:
ib_send_lat and ib_read_lat (8 B, 2000 round trips), then ib_write_bw
(4 KiB, 64 KiB, 1 MiB; 5 s each), --runs times, and prints the median of
each (and the range) as a table. The latency runs come first: the first
latency run after a bandwidth run in the same pair of guests is slower
(docs/design.md "Performance"). The peer kinds take turns, one fresh pair of guests
per run and kind (rnic, rxe, rnic, rxe, ...), so that both see the same
host conditions over the whole measurement. perftest's
clock calibration sometimes fails under TCG ("Correlation coefficient r^2
< 0.9", a 0 result): such runs are repeated, up to three times.

Usage: scripts/guest/perftest-pair.py [--peers rnic,rxe] [--mtu 1500] [--runs 3]
                                      [--quick] [--no-build] [--vcpu-nice N]
                                      [--io-slice-us N] [--netdev stream|dgram]
                                      [--sndbuf BYTES] [--test "TOOL SIZE [OPTIONS]"]...
  --peers LIST   peer kinds to measure, in order: rnic, rxe (default both)
  --mtu N        Ethernet MTU of both guests (1500: RoCE MTU 1024; 9000: 4096)
  --runs N       runs of each test (median reported)
  --quick        one run, 64 KiB and the two latencies only (the main job)
  --no-build     do not run scripts/guest/build-provider.sh --image first
  --vcpu-nice N  run both guests' vCPU threads at nice N (host scheduling:
                 on a 2-core host two busy-polling vCPUs otherwise delay
                 QEMU's main loops, where frames arrive, by scheduler ticks;
                 applies to both peer kinds alike)
  --io-slice-us N  give both guests' QEMU main threads an N µs scheduler
                 slice (EEVDF, Linux >= 6.12): the woken main loop preempts a
                 busy-polling vCPU at once; no thread's CPU share changes;
                 both peer kinds alike
  --netdev KIND  the segment's QEMU backend, for both peer kinds: stream
                 (default; one unix stream socket) or dgram (unix datagram
                 sockets: shorter round trips, far less bandwidth, see
                 docs/benchmarks.md)
  --sndbuf BYTES stream only: connect the two QEMUs by a socket pair the
                 script makes, with a send buffer of BYTES at each end
                 (addr.type=fd), instead of a unix socket with the host's
                 default (net.core.wmem_default); both peer kinds alike
  --test "TOOL SIZE [OPTIONS]"  run this perftest command instead of the
                 default set (repeatable, in order), e.g. --test
                 "ib_send_bw 1048576 -n 2000 -e"; -d, -x 1, -F and -s are
                 added, OPTIONS go to both sides
"""

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import (DEVICE, NETDEVS, Step, build_provider_image,  # noqa: E402
                       lines_of, perftest_figure, run_pair)
from rnic_guest import HostSched  # noqa: E402

# (label, tool, size, extra options), in the order they run in a pair of
# guests: latency over 2000 round trips first (right after a bandwidth run
# the next latency run is slower, for both stacks alike), then bandwidth
# for 5 s (Soft-RoCE takes a second or two to reach its rate)
TESTS: List[Tuple[str, str, int, str]] = [
    ("ib_send_lat 8 B", "ib_send_lat", 8, "-n 2000"),
    ("ib_read_lat 8 B", "ib_read_lat", 8, "-n 2000"),
    ("ib_write_bw 4 KiB", "ib_write_bw", 4096, "-D 5"),
    ("ib_write_bw 64 KiB", "ib_write_bw", 65536, "-D 5"),
    ("ib_write_bw 1 MiB", "ib_write_bw", 1048576, "-D 5"),
]
QUICK = ("ib_write_bw 64 KiB", "ib_send_lat 8 B", "ib_read_lat 8 B")
TOOLS = ("ib_send_lat", "ib_write_lat", "ib_read_lat", "ib_atomic_lat",
         "ib_send_bw", "ib_write_bw", "ib_read_bw", "ib_atomic_bw")


def size_label(size: int) -> str:
    """8 B, 4 KiB, 1 MiB: the size as the tables write it."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def parse_test(text: str) -> Tuple[str, str, int, str]:
    """--test "TOOL SIZE [OPTIONS]" as a TESTS entry; ValueError if not."""
    words = text.split()
    if len(words) < 2 or words[0] not in TOOLS or not words[1].isdigit() \
            or int(words[1]) < 1:
        raise ValueError(f"not 'TOOL SIZE [OPTIONS]' with TOOL one of "
                         f"{', '.join(TOOLS)}: {text!r}")
    tool, size, extra = words[0], int(words[1]), " ".join(words[2:])
    label = f"{tool} {size_label(size)}" + (f" {extra}" if extra else "")
    return label, tool, size, extra


def steps_for(kind: str, tests) -> List[Step]:
    """One run of each test, in order, as lockstep steps."""
    dev = DEVICE[kind]
    steps = []
    for number, (_, tool, size, extra) in enumerate(tests):
        cmd = f"{tool} -d {dev} -x 1 -F -s {size} {extra}"
        steps.append((f"t{number}", cmd, f"{cmd} 10.0.0.1", 1))
    return steps


def measure(kind: str, tests, mtu: int, sched: HostSched,
            netdev: str, sndbuf: Optional[int]) -> Dict[str, List[float]]:
    """{label: [figure]} of one run of each test in a fresh pair of guests."""
    results: Dict[str, List[float]] = {label: [] for label, *_ in tests}
    todo = steps_for(kind, tests)
    for attempt in range(4):
        name = f"perftest-{kind}-{netdev}-{mtu}-{attempt}"
        t0 = time.time()
        r1, r2 = run_pair(name, todo, kinds=(kind, kind), mtu=mtu,
                          timeout=300 + 60 * len(todo), sched=sched,
                          netdev=netdev, sndbuf=sndbuf)
        print(f"perftest-pair: {kind}: {len(todo)} tests in {time.time() - t0:.0f} s "
              f"(outputs: build/guest-logs/{name}-[12].out)", file=sys.stderr)
        again = []
        for step in todo:
            number = int(step[0][1:])
            label = tests[number][0]
            value = 0.0
            for out in (r2.output, r1.output):     # the client prints the result
                try:
                    value = perftest_figure(lines_of(out, step[0]))[1]
                    break
                except ValueError:
                    continue
            if value > 0:
                results[label].append(value)
            else:
                again.append(step)
        if not again:
            break
        print(f"perftest-pair: {kind}: {len(again)} tests without a result, again",
              file=sys.stderr)
        todo = again
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default="rnic,rxe")
    parser.add_argument("--mtu", type=int, default=1500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--vcpu-nice", type=int, default=None)
    parser.add_argument("--io-slice-us", type=int, default=None)
    parser.add_argument("--netdev", choices=NETDEVS, default="stream")
    parser.add_argument("--sndbuf", type=int, default=None)
    parser.add_argument("--test", action="append", default=[])
    opts = parser.parse_args()
    if opts.sndbuf is not None and (opts.netdev != "stream" or opts.sndbuf < 4096):
        parser.error("--sndbuf: bytes (>= 4096), with the stream netdev only")
    kinds = [k.strip() for k in opts.peers.split(",") if k.strip()]
    if any(k not in DEVICE for k in kinds):
        parser.error(f"--peers: kinds are {', '.join(DEVICE)}")
    try:
        custom = [parse_test(text) for text in opts.test]
    except ValueError as err:
        parser.error(f"--test: {err}")
    if len({label for label, *_ in custom}) < len(custom):
        parser.error("--test: the same test twice")
    if custom and opts.quick:
        parser.error("--test and --quick exclude each other")
    tests = custom or [t for t in TESTS if not opts.quick or t[0] in QUICK]
    runs = 1 if opts.quick else opts.runs

    if not opts.no_build:
        if not build_provider_image():
            return 1

    sched = HostSched(vcpu_nice=opts.vcpu_nice, io_slice_us=opts.io_slice_us)
    table: Dict[str, Dict[str, List[float]]] = {
        kind: {label: [] for label, *_ in tests} for kind in kinds}
    for _ in range(runs):
        for kind in kinds:
            for label, values in measure(kind, tests, opts.mtu, sched,
                                         opts.netdev, opts.sndbuf).items():
                table[kind][label] += values
    nice = f", {sched.describe()}" if sched.describe() else ""
    backend = {"stream": "-netdev stream (unix socket)",
               "dgram": "-netdev dgram (unix datagram sockets)"}[opts.netdev]
    if opts.sndbuf is not None:
        backend = (f"-netdev stream (socket pair, {opts.sndbuf} B send "
                   "buffer each end)")
    print(f"\nperftest 25.01, two TCG guests, {backend}, "
          f"MTU {opts.mtu}{nice}, median of {runs} run{'s' if runs > 1 else ''}:\n")
    head = "| test | " + " | ".join(kinds)
    if kinds[:2] == ["rnic", "rxe"]:
        head += " | rnic vs rxe"
    print(head + " |")
    print("|---" * (head.count("|")) + "|")
    status = 0
    for label, tool, _, _ in tests:
        unit = "MiB/s" if tool.endswith("_bw") else "µs"
        cells, medians = [], {}
        for kind in kinds:
            values = table[kind][label]
            if values:
                medians[kind] = statistics.median(values)
                spread = (f" ({min(values):.1f}–{max(values):.1f})"
                          if len(values) > 1 else "")
                cells.append(f"{medians[kind]:.1f} {unit}{spread}")
            else:
                cells.append("no result")
                status = 1
        row = f"| {label} | " + " | ".join(cells)
        if kinds[:2] == ["rnic", "rxe"]:
            if "rnic" in medians and "rxe" in medians and medians["rnic"] and medians["rxe"]:
                ratio = medians["rnic"] / medians["rxe"]
                row += f" | {ratio:.1f}×" if unit == "MiB/s" else f" | {1 / ratio:.1f}× lower"
            else:
                row += " | "
        print(row + " |")
    return status


if __name__ == "__main__":
    sys.exit(main())
