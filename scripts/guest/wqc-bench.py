#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The WQE translation cache between two TCG rnic guests: perftest's
ib_write_bw 64 B message rate and ib_send_lat 8 B with the cache on and
off (-global rnic.x-wqe-cache=on|off on both guests), and the cache's hit
rate from the device counters (issue 21's guest-level benchmark;
docs/benchmarks.md "WQE translation cache (guests)").

Boots one pair of guests per round and setting (rdma_pair.run_pair, the
provider image, -netdev stream), the settings alternating in ABBA order
(on off, off on, ...) so that both see the same host; prints the median
(and range) of each figure. Each guest reads its counters
wqe_cache_hits/misses/stale (ethtool -S eth0) before and after each
test; the table gives each test's lookups on both guests (hits over hits
+ misses). perftest posts lists of one SGE, which the cache does not
hold (docs/spec.md §10: counted neither as hit nor miss), and perftest
25.01 has no option for more SGEs per WQE.

--gather instead runs tests/guest/provider/rnic_gather_bench (the
client READs 64 scattered 512 B buffers in four forms, one of them 8
READs of 8 SGEs over the same buffers every time: lists the cache holds)
with the cache on and off, and prints that form's gathers/s and the
counters (guest 2 is the client).

--nvme instead runs the NVMe-oF workload of tests/guest/test_driver.py
(guest 1 the nvmet-rdma target on a 32 MiB file, guest 2 the nvme-rdma
host writing and reading back 8 MiB with O_DIRECT in 1 MiB requests,
three rounds) with the cache on, and prints each side's counters and hit
rate per round (the first includes the connect) and in all.

Usage: scripts/guest/wqc-bench.py [--rounds R] [--seconds S] [--iters N]
                                  [--gather [--depth N]] [--nvme] [--no-build]
  --rounds R   rounds of (on, off), the median kept (default 3)
  --seconds S  ib_write_bw duration, -D; with --gather each form's (default 3)
  --iters N    ib_send_lat round trips, -n (default 1000)
  --gather     rnic_gather_bench's 8-SGE form on and off instead
  --depth N    --gather: gathers in flight, 1..16 (default 8)
  --nvme       the NVMe-oF hit rate instead (one pair, cache on)
  --no-build   do not run scripts/guest/build-provider.sh --image first
"""

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import (build_provider_image, lines_of, perftest_figure,  # noqa: E402
                       rc_lines, run_pair)
from rnic_guest import GuestResult  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests/guest"))
from test_driver import NVMET_SETUP  # noqa: E402  (the NVMe-oF guest test's target)

COUNTERS = ("wqe_cache_hits", "wqe_cache_misses", "wqe_cache_stale")
# a step that prints the counters on both guests (the command goes inside
# single quotes in the guest script)
STATS_CMD = "ethtool -S eth0 | grep wqe_cache | tr -d \" \""
TESTS = ("lat", "bw")           # in the order they run: latency first


def stats_step(number: int):
    return (f"c{number}", STATS_CMD, STATS_CMD, 1)


def counters(output: str, step: str) -> Dict[str, int]:
    text = lines_of(output, step)
    found = {m.group(1): int(m.group(2))
             for m in re.finditer(r"^(wqe_cache_\w+):(\d+)$", text, re.MULTILINE)}
    if set(found) != set(COUNTERS):
        raise ValueError(f"{step}: no wqe_cache counters in:\n{text}")
    return found


def delta(output: str, before: str, after: str) -> Dict[str, int]:
    a, b = counters(output, before), counters(output, after)
    return {k: b[k] - a[k] for k in COUNTERS}


def msg_rate(text: str) -> float:
    """ib_write_bw's MsgRate[Mpps] (the column after BW average)."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        cols = lines[i + 1].split()
        if "MsgRate" in line and len(cols) >= 5:
            return float(cols[4])
    raise ValueError(f"no ib_write_bw result table in:\n{text}")


def pair_with_cache(mode: str, name: str, steps) -> Tuple[GuestResult, GuestResult]:
    """Both guests' results of STEPS with -global rnic.x-wqe-cache=MODE."""
    extra = ["-global", f"rnic.x-wqe-cache={mode}"]
    t0 = time.time()
    r1, r2 = run_pair(name, steps, timeout=600, tool_timeout=120,
                      extra_args=(extra, extra))
    print(f"wqc-bench: x-wqe-cache={mode}: {time.time() - t0:.0f} s "
          f"(outputs: build/guest-logs/{name}-[12].out)", file=sys.stderr)
    return r1, r2


def abba(rounds: int):
    """(round, mode) in ABBA order: on off, off on, on off, ..."""
    for number in range(rounds):
        for mode in (("on", "off") if number % 2 == 0 else ("off", "on")):
            yield number, mode


def perftest_run(mode: str, number: int, opts) -> Tuple[Dict[str, Optional[float]],
                                                        Dict[str, List[Dict[str, int]]]]:
    """One pair of guests with x-wqe-cache=MODE: ({test: figure or None},
    {test: [guest 1's counter deltas, guest 2's]})."""
    lat = "ib_send_lat -d rnic0 -x 1 -F -s 8 -n %d" % opts.iters
    bw = "ib_write_bw -d rnic0 -x 1 -F -s 64 -D %g" % opts.seconds
    steps = (stats_step(0), ("lat", lat, f"{lat} 10.0.0.1", 1), stats_step(1),
             ("bw", bw, f"{bw} 10.0.0.1", 1), stats_step(2))
    name = f"wqc-bench-{mode}-{number}"
    r1, r2 = pair_with_cache(mode, name, steps)
    figures: Dict[str, Optional[float]] = {}
    for test, read in (("lat", lambda t: perftest_figure(t)[1]), ("bw", msg_rate)):
        figures[test] = None
        for out in (r2.output, r1.output):      # the client prints the figure
            try:
                figures[test] = read(lines_of(out, test))
                break
            except ValueError:
                continue
        if not figures[test] or rc_lines(r2.output).get(test) != [0]:
            print(f"wqc-bench: {name}: {test} failed, rc "
                  f"{rc_lines(r1.output).get(test)}/{rc_lines(r2.output).get(test)}",
                  file=sys.stderr)
            figures[test] = None
    looked: Dict[str, List[Dict[str, int]]] = {}
    for test, (before, after) in (("lat", ("c0", "c1")), ("bw", ("c1", "c2"))):
        try:
            looked[test] = [delta(r.output, before, after) for r in (r1, r2)]
        except ValueError as err:
            print(f"wqc-bench: {name}: {err}", file=sys.stderr)
    return figures, looked


def rate(c: Dict[str, int]) -> str:
    lookups = c["wqe_cache_hits"] + c["wqe_cache_misses"]
    share = (f"{100 * c['wqe_cache_hits'] / lookups:.1f} %" if lookups
             else "no lookups")
    return (f"{c['wqe_cache_hits']} hits, {c['wqe_cache_misses']} misses "
            f"({c['wqe_cache_stale']} stale): {share}")


def cell(values: List[float], fmt: str) -> str:
    if not values:
        return "no result"
    spread = f" ({fmt % min(values)}–{fmt % max(values)})" if len(values) > 1 else ""
    return fmt % statistics.median(values) + spread


def perftest_main(opts) -> int:
    figures = {mode: {t: [] for t in TESTS} for mode in ("on", "off")}
    looked = {mode: {t: [] for t in TESTS} for mode in ("on", "off")}
    status = 0
    for number, mode in abba(opts.rounds):
        got, counts = perftest_run(mode, number, opts)
        for test in TESTS:
            if got[test] is None:
                status = 1
            else:
                figures[mode][test].append(got[test])
            if test in counts:
                looked[mode][test].append(counts[test])
    print(f"\nperftest 25.01, two TCG guests, -netdev stream, MTU 1500, "
          f"{opts.rounds} rounds of x-wqe-cache on/off in ABBA order, median (range):\n")
    print("| test | cache on | cache off | on/off |")
    print("|---|---|---|---|")
    for test, label, unit, fmt, better in (
            ("bw", f"ib_write_bw 64 B -D {opts.seconds:g}", "Mpps", "%.4f", 1),
            ("lat", f"ib_send_lat 8 B -n {opts.iters}", "µs", "%.2f", -1)):
        on, off = figures["on"][test], figures["off"][test]
        ratio = (f"{(statistics.median(on) / statistics.median(off)) ** better:.3f}×"
                 if on and off else "")
        print(f"| {label} ({unit}) | {cell(on, fmt)} | {cell(off, fmt)} | {ratio} |")
    print("\nWQE translation cache counters, each test, summed over the rounds "
          "(hits / (hits + misses)):\n")
    for mode in ("on", "off"):
        for test in TESTS:
            for guest in (0, 1):
                total = {k: sum(c[guest][k] for c in looked[mode][test]) for k in COUNTERS}
                print(f"  x-wqe-cache={mode} {test} guest {guest + 1}: {rate(total)}")
    return status


GATHER_FORM = "8 WQEs x 8 SGEs"


def gather_run(mode: str, number: int, opts) -> Tuple[Optional[float], List[Dict[str, int]]]:
    """One pair running rnic_gather_bench with x-wqe-cache=MODE: the
    8 x 8 SGE form's gathers/s (None if it failed) and both guests'
    counter deltas over the whole client run (the other forms post lists
    of one SGE or none: only the 8-SGE READs look the cache up)."""
    client = (f"rnic_gather_bench -d rnic0 -c 10.0.0.1 -t {opts.seconds:g} "
              f"-q {opts.depth} -r 1")
    steps = (stats_step(0), ("gather", "rnic_gather_bench -d rnic0 -s", client, 1),
             stats_step(1))
    name = f"wqc-bench-gather-{mode}-{number}"
    r1, r2 = pair_with_cache(mode, name, steps)
    figure = None
    if rc_lines(r2.output).get("gather") == [0]:
        m = re.search(rf"^{re.escape(GATHER_FORM)}\s+(\d+)", lines_of(r2.output, "gather"),
                      re.MULTILINE)
        figure = float(m.group(1)) if m else None
    if figure is None:
        print(f"wqc-bench: {name}: the gather client failed:\n"
              + lines_of(r2.output, "gather"), file=sys.stderr)
    try:
        counts = [delta(r.output, "c0", "c1") for r in (r1, r2)]
    except ValueError as err:
        print(f"wqc-bench: {name}: {err}", file=sys.stderr)
        counts = []
    return figure, counts


def gather_main(opts) -> int:
    figures: Dict[str, List[float]] = {"on": [], "off": []}
    looked: Dict[str, List[List[Dict[str, int]]]] = {"on": [], "off": []}
    status = 0
    for number, mode in abba(opts.rounds):
        figure, counts = gather_run(mode, number, opts)
        if figure is None:
            status = 1
        else:
            figures[mode].append(figure)
        if counts:
            looked[mode].append(counts)
    on, off = figures["on"], figures["off"]
    ratio = (f"{statistics.median(on) / statistics.median(off):.3f}×"
             if on and off else "")
    print(f"\nrnic_gather_bench, two TCG guests, its form '{GATHER_FORM}' "
          f"(64 scattered 512 B buffers as 8 READs of 8 SGEs), {opts.depth} in flight, "
          f"{opts.seconds:g} s per form, {opts.rounds} rounds of x-wqe-cache "
          "on/off in ABBA order, median (range):\n")
    print("| form | cache on | cache off | on/off |")
    print("|---|---|---|---|")
    print(f"| {GATHER_FORM} (gathers/s) | {cell(on, '%.0f')} | {cell(off, '%.0f')} | {ratio} |")
    print("\nWQE translation cache counters over the client runs, summed over the rounds:\n")
    for mode in ("on", "off"):
        for guest in (0, 1):
            total = {k: sum(c[guest][k] for c in looked[mode]) for k in COUNTERS}
            print(f"  x-wqe-cache={mode} guest {guest + 1}: {rate(total)}")
    return status


# the guest test's target (a 32 MiB file, buffered I/O), on guest 1
NVME_TARGET = NVMET_SETUP.format(addr="10.0.0.1")


NVME_CONNECT = """
modprobe nvme_rdma || exit 1
echo "transport=rdma,traddr=10.0.0.1,trsvcid=4420,nqn=rnic-test" >/dev/nvme-fabrics || exit 1
tries=0
until [ -b /dev/nvme0n1 ]; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "no /dev/nvme0n1"; exit 1; }
    sleep 0.2
done
dd if=/dev/urandom of=/tmp/pattern bs=1M count=8 2>/dev/null
"""

NVME_IO = """
dd if=/tmp/pattern of=/dev/nvme0n1 bs=1M count=8 oflag=direct 2>&1 | tail -1
dd if=/dev/nvme0n1 of=/tmp/readback bs=1M count=8 iflag=direct 2>&1 | tail -1
cmp /tmp/pattern /tmp/readback && echo data_match=yes
"""

NVME_ROUNDS = 3


def nvme_main() -> int:
    # the scripts go to files first: a step's command sits in single quotes
    setup = (f"cat >/tmp/target.sh <<'EOF'\n{NVME_TARGET}EOF\n",
             f"cat >/tmp/connect.sh <<'EOF'\n{NVME_CONNECT}EOF\n"
             f"cat >/tmp/io.sh <<'EOF'\n{NVME_IO}EOF\n")
    steps = [stats_step(0), ("tgt", "sh /tmp/target.sh", "true", 1), stats_step(1)]
    for n in range(1, NVME_ROUNDS + 1):
        host = "sh /tmp/io.sh"
        if n == 1:
            host = "sh /tmp/connect.sh && " + host
        if n == NVME_ROUNDS:
            host += " && echo 1 >/sys/class/nvme/nvme0/delete_controller"
        steps += [(f"io{n}", "true", host, 1), stats_step(n + 1)]
    t0 = time.time()
    r1, r2 = run_pair("wqc-bench-nvme", steps, timeout=600, tool_timeout=200,
                      setup=setup)
    print(f"wqc-bench: nvme: {time.time() - t0:.0f} s "
          "(outputs: build/guest-logs/wqc-bench-nvme-[12].out)", file=sys.stderr)
    rcs = rc_lines(r2.output)
    if any(rcs.get(f"io{n}") != [0] for n in range(1, NVME_ROUNDS + 1)) or \
            r2.output.count("data_match=yes") != NVME_ROUNDS:
        print("wqc-bench: the NVMe-oF I/O failed:\n" +
              "\n".join(lines_of(r2.output, f"io{n}") for n in range(1, NVME_ROUNDS + 1)),
              file=sys.stderr)
        return 1
    print(f"\nNVMe-oF (nvmet-rdma <-> nvme-rdma), x-wqe-cache=on, {NVME_ROUNDS} rounds "
          "of 8 MiB written and read back (1 MiB O_DIRECT requests); round 1 "
          "includes the connect:\n")
    for who, result in (("target (guest 1)", r1), ("host (guest 2)", r2)):
        for n in range(1, NVME_ROUNDS + 1):
            print(f"  {who}, round {n}: "
                  f"{rate(delta(result.output, f'c{n}', f'c{n + 1}'))}")
        print(f"  {who}, all: "
              f"{rate(delta(result.output, 'c1', f'c{NVME_ROUNDS + 1}'))}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--nvme", action="store_true")
    parser.add_argument("--gather", action="store_true")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--no-build", action="store_true")
    opts = parser.parse_args()
    if not 1 <= opts.rounds <= 16 or not 0 < opts.seconds <= 60 or \
            not 10 <= opts.iters <= 100000:
        parser.error("--rounds 1..16, --seconds 0..60, --iters 10..100000")
    if not opts.no_build and not build_provider_image():
        return 1
    if opts.nvme and opts.gather:
        parser.error("--nvme and --gather exclude each other")
    if not 1 <= opts.depth <= 16:
        parser.error("--depth 1..16")
    if opts.nvme:
        return nvme_main()
    return gather_main(opts) if opts.gather else perftest_main(opts)


if __name__ == "__main__":
    sys.exit(main())
