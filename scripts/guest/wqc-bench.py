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
+ misses). perftest posts lists of one SGE (perftest 25.01 has no option
for more SGEs per WQE); the cache holds lists of 1 to 8 SGEs.

--gather instead runs tests/guest/provider/rnic_gather_bench (the
client READs 64 scattered 512 B buffers in four forms, one of them 8
READs of 8 SGEs over the same buffers every time: lists the cache holds)
with the cache on and off, and prints that form's gathers/s and the
counters (guest 2 is the client).

--profile instead records both QEMU processes with perf (root, Debian's
linux-perf; cpu-clock when the VM has no hardware counters) while guest
2 runs ib_write_bw 64 B, and splits the samples by call chain: the
device's work, the doorbell path, the frame transmit, the requester's
WQE decode and its read of the WQE from the ring (rnic_req_decode ->
rnic_host_dma_read -> pci_dma_read), guest code, TCG, the host kernel.

--nvme instead runs the NVMe-oF workload of tests/guest/test_driver.py
(guest 1 the nvmet-rdma target on a 32 MiB file, guest 2 the nvme-rdma
host writing and reading back 8 MiB with O_DIRECT in 1 MiB requests,
three rounds) with the cache on, and prints each side's counters and hit
rate per round (the first includes the connect) and in all. --bs
changes the request size (dd bs=; 8 MiB in all): 4k is one page per
request, one request at a time (the hit rate then depends on how many
lists a QP's cache holds: a capsule, a response and a receive list per
command slot, 128 slots per queue).

Usage: scripts/guest/wqc-bench.py [--rounds R] [--seconds S] [--iters N]
                                  [--gather [--depth N]] [--nvme [--bs SIZE]]
                                  [--no-build]
  --rounds R   rounds of (on, off), the median kept (default 3)
  --seconds S  ib_write_bw duration, -D; with --gather each form's (default 3)
  --iters N    ib_send_lat round trips, -n (default 1000)
  --gather     rnic_gather_bench's 8-SGE form on and off instead
  --depth N    --gather: gathers in flight, 1..16 (default 8)
  --nvme       the NVMe-oF hit rate instead (one pair, cache on)
  --bs SIZE    --nvme: the O_DIRECT request size, 4k..1M (default 1M)
  --queue-size N  --nvme: the host's I/O queue size (nvme-rdma queue_size=,
               default its own, 128): each queue's target QP keeps one
               receive list per command slot in its cache
  --profile    instead: perf record (dwarf call chains) of both QEMUs for
               S seconds during ib_write_bw 64 B, the samples' split (the
               phase-2 question: the WQE read's share of the doorbell path)
  --no-build   do not run scripts/guest/build-provider.sh --image first
"""

import argparse
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import (build_provider_image, lines_of, perftest_figure,  # noqa: E402
                       rc_lines, run_pair)
from rnic_guest import DEFAULT_QEMU, GuestResult  # noqa: E402

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
    share = (f"{100 * c['wqe_cache_hits'] / lookups:.2f} %" if lookups
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
    for test, label, unit, fmt in (
            ("bw", f"ib_write_bw 64 B -D {opts.seconds:g}", "Mpps, higher is better", "%.4f"),
            ("lat", f"ib_send_lat 8 B -n {opts.iters}", "µs, lower is better", "%.2f")):
        on, off = figures["on"][test], figures["off"][test]
        ratio = (f"{statistics.median(on) / statistics.median(off):.3f}×"
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
CONTIG_FORM = "contiguous, 1 READ"


def gather_run(mode: str, number: int, opts) -> Tuple[Dict[str, float], List[Dict[str, int]]]:
    """One pair running rnic_gather_bench with x-wqe-cache=MODE: its
    gathers/s per form ({} if it failed) and both guests' counter deltas
    over the whole client run (every form's lists: the 8-SGE READs',
    the contiguous READ's one SGE, the mapped forms' mapped lkey, which is
    looked up but never kept)."""
    client = (f"rnic_gather_bench -d rnic0 -c 10.0.0.1 -t {opts.seconds:g} "
              f"-q {opts.depth} -r 1")
    steps = (stats_step(0), ("gather", "rnic_gather_bench -d rnic0 -s", client, 1),
             stats_step(1))
    name = f"wqc-bench-gather-{mode}-{number}"
    r1, r2 = pair_with_cache(mode, name, steps)
    forms: Dict[str, float] = {}
    if rc_lines(r2.output).get("gather") == [0]:
        for form in (GATHER_FORM, CONTIG_FORM):
            m = re.search(rf"^{re.escape(form)}\s+(\d+)", lines_of(r2.output, "gather"),
                          re.MULTILINE)
            if m:
                forms[form] = float(m.group(1))
    if len(forms) < 2:
        print(f"wqc-bench: {name}: the gather client failed:\n"
              + lines_of(r2.output, "gather"), file=sys.stderr)
        forms = {}
    try:
        counts = [delta(r.output, "c0", "c1") for r in (r1, r2)]
    except ValueError as err:
        print(f"wqc-bench: {name}: {err}", file=sys.stderr)
        counts = []
    return forms, counts


def gather_main(opts) -> int:
    figures: Dict[str, List[float]] = {"on": [], "off": []}
    relative: Dict[str, List[float]] = {"on": [], "off": []}
    looked: Dict[str, List[List[Dict[str, int]]]] = {"on": [], "off": []}
    status = 0
    for number, mode in abba(opts.rounds):
        forms, counts = gather_run(mode, number, opts)
        if not forms:
            status = 1
        else:
            figures[mode].append(forms[GATHER_FORM])
            relative[mode].append(forms[GATHER_FORM] / forms[CONTIG_FORM])
        if counts:
            looked[mode].append(counts)
    print(f"\nrnic_gather_bench, two TCG guests, its form '{GATHER_FORM}' "
          f"(64 scattered 512 B buffers as 8 READs of 8 SGEs), {opts.depth} in flight, "
          f"{opts.seconds:g} s per form, {opts.rounds} rounds of x-wqe-cache "
          "on/off in ABBA order, median (range); 'per contiguous': over the "
          "same guests' contiguous READ (one SGE) measured "
          "in the same run:\n")
    print("| figure | cache on | cache off | on/off |")
    print("|---|---|---|---|")
    for label, values, fmt in (("gathers/s", figures, "%.0f"),
                               ("per contiguous", relative, "%.3f")):
        on, off = values["on"], values["off"]
        ratio = (f"{statistics.median(on) / statistics.median(off):.3f}×"
                 if on and off else "")
        print(f"| {GATHER_FORM}, {label} | {cell(on, fmt)} | {cell(off, fmt)} | {ratio} |")
    print("\nWQE translation cache counters over the client runs, summed over the rounds:\n")
    for mode in ("on", "off"):
        for guest in (0, 1):
            total = {k: sum(c[guest][k] for c in looked[mode]) for k in COUNTERS}
            print(f"  x-wqe-cache={mode} guest {guest + 1}: {rate(total)}")
    return status


# --profile: what the samples of both QEMUs are spent on, by call chain
# (a sample counts for each row one of its frames matches: rows overlap)
PROFILE_ROWS = (
    ("device: any rnic_* frame", lambda names, leaf: any(n.startswith("rnic_") for n in names)),
    ("doorbell path (rnic_engine_doorbell)", lambda names, leaf: "rnic_engine_doorbell" in names),
    ("  frame out (rnic_host_transmit)", lambda names, leaf: "rnic_host_transmit" in names),
    ("  WQE decode (rnic_req_decode)", lambda names, leaf: "rnic_req_decode" in names),
    ("  WQE read (rnic_host_dma_read under rnic_req_decode)",
     lambda names, leaf: "rnic_host_dma_read" in names and
     "rnic_req_decode" in names[names.index("rnic_host_dma_read"):]),
    ("  SGE translation (rnic_sges_resolve, rnic_sges_segs)",
     lambda names, leaf: "rnic_sges_resolve" in names or "rnic_sges_segs" in names),
    ("  WQE cache (rnic_wqc_*)", lambda names, leaf: any(n.startswith("rnic_wqc") for n in names)),
    ("guest code (TCG-generated, the leaf)",
     lambda names, leaf: leaf in ("", "[unknown]") or "/perf-" in leaf),
    ("TCG translation (tb_gen_code)", lambda names, leaf: "tb_gen_code" in names),
    ("host kernel (the leaf)", lambda names, leaf: leaf == "[kernel.kallsyms]"),
)


def perf_chains(data: str) -> List[Tuple[List[str], str]]:
    """(symbols leaf first, the leaf's DSO) per sample of perf's DATA."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso",
                          "--no-inline"], capture_output=True, text=True,
                         check=True).stdout
    chains: List[Tuple[List[str], str]] = []
    names: Optional[List[str]] = None
    leaf = ""
    for line in out.splitlines() + [""]:
        if not line.strip():
            if names is not None:
                chains.append((names, leaf))
            names = None
        elif not line[0].isspace():
            names, leaf = [], ""
        elif names is not None:
            m = re.match(r"\s*[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)$", line)
            if m:
                if not names:
                    leaf = m.group(2)
                names.append(m.group(1))
    return chains


def profile_main(opts) -> int:
    if not shutil.which("perf"):
        print("wqc-bench: perf is not installed (apt install linux-perf)", file=sys.stderr)
        return 1
    spec = importlib.util.spec_from_file_location(
        "perftest_profile", Path(__file__).resolve().parent / "perftest-profile.py")
    pp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pp)
    binary = Path(os.environ.get("RNIC_QEMU", DEFAULT_QEMU)).resolve()
    settle = 8
    bw = f"ib_write_bw -d rnic0 -x 1 -F -s 64 -D {opts.seconds + settle + 15:g}"
    steps = (("bw", bw, f"{bw} 10.0.0.1", 1),)
    results: List[Tuple[GuestResult, GuestResult]] = []
    pair = threading.Thread(target=lambda: results.append(
        pair_with_cache("on", "wqc-bench-profile", steps)))
    pair.start()
    give_up = time.time() + 300
    pids: List[int] = []
    busy = False
    while not busy and pair.is_alive() and time.time() < give_up:
        time.sleep(0.5)
        pids = pp.qemus(os.getpid(), binary)     # the two guests' QEMUs
        busy = len(pids) == 2 and pp.busy(pids) > 1.0
    if not busy:
        print("wqc-bench: the guests never got busy", file=sys.stderr)
        pair.join()
        return 1
    time.sleep(settle)
    with tempfile.TemporaryDirectory(prefix="wqc-profile-") as tmp:
        data = f"{tmp}/perf.data"
        subprocess.run(["perf", "record", "-q", "-F", "999", "--call-graph", "dwarf,16384",
                        "-o", data, "-p", ",".join(map(str, pids)), "--",
                        "sleep", f"{opts.seconds:g}"], check=False,
                       stdout=subprocess.DEVNULL)
        pair.join()
        chains = perf_chains(data)
    r2 = results[0][1] if results else None
    if not chains or r2 is None or rc_lines(r2.output).get("bw") != [0]:
        print("wqc-bench: no samples, or ib_write_bw failed", file=sys.stderr)
        return 1
    counts = {label: sum(1 for names, leaf in chains if match(names, leaf))
              for label, match in PROFILE_ROWS}
    total = len(chains)
    print(f"\nperf record -F 999 --call-graph dwarf of both QEMUs for {opts.seconds:g} s "
          f"while guest 2 runs ib_write_bw 64 B (x-wqe-cache=on): {total} samples "
          f"(~ms of CPU), {msg_rate(lines_of(r2.output, 'bw')):.4f} Mpps over the "
          "whole run\n")
    print("| where | samples | of all | of the doorbell path |")
    print("|---|---|---|---|")
    door = counts[PROFILE_ROWS[1][0]] or 1
    for label, _ in PROFILE_ROWS:
        n = counts[label]
        part = (f"{100 * n / door:.1f} %"
                if label.startswith(" ") or label == PROFILE_ROWS[1][0] else "")
        print(f"| {label.strip()} | {n} | {100 * n / total:.2f} % | {part} |")
    return 0


# the guest test's target (a 32 MiB file, buffered I/O), on guest 1
NVME_TARGET = NVMET_SETUP.format(addr="10.0.0.1")


NVME_CONNECT = """
modprobe nvme_rdma || exit 1
echo "transport=rdma,traddr=10.0.0.1,trsvcid=4420,nqn=rnic-test{options}" >/dev/nvme-fabrics || exit 1
tries=0
until [ -b /dev/nvme0n1 ]; do
    tries=$((tries + 1)); [ $tries -lt 100 ] || { echo "no /dev/nvme0n1"; exit 1; }
    sleep 0.2
done
dd if=/dev/urandom of=/tmp/pattern bs=1M count=8 2>/dev/null
"""

NVME_IO = """
dd if=/tmp/pattern of=/dev/nvme0n1 bs={bs} count={count} oflag=direct 2>&1 | tail -1
dd if=/dev/nvme0n1 of=/tmp/readback bs={bs} count={count} iflag=direct 2>&1 | tail -1
cmp /tmp/pattern /tmp/readback && echo data_match=yes
"""

NVME_BYTES = 8 << 20
NVME_SIZES = {"4k": 4 << 10, "16k": 16 << 10, "64k": 64 << 10,
              "256k": 256 << 10, "1M": 1 << 20}

NVME_ROUNDS = 3


def nvme_main(queue_size: Optional[int], bs: str) -> int:
    # the scripts go to files first: a step's command sits in single quotes
    connect = NVME_CONNECT.replace(
        "{options}", f",queue_size={queue_size}" if queue_size else "")
    io = NVME_IO.format(bs=bs, count=NVME_BYTES // NVME_SIZES[bs])
    setup = (f"cat >/tmp/target.sh <<'EOF'\n{NVME_TARGET}EOF\n",
             f"cat >/tmp/connect.sh <<'EOF'\n{connect}EOF\n"
             f"cat >/tmp/io.sh <<'EOF'\n{io}EOF\n")
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
          f"of 8 MiB written and read back ({bs} O_DIRECT requests); round 1 "
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
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--queue-size", type=int, default=None)
    parser.add_argument("--bs", choices=sorted(NVME_SIZES), default="1M")
    parser.add_argument("--no-build", action="store_true")
    opts = parser.parse_args()
    if not 1 <= opts.rounds <= 16 or not 0 < opts.seconds <= 60 or \
            not 10 <= opts.iters <= 100000:
        parser.error("--rounds 1..16, --seconds 0..60, --iters 10..100000")
    if not opts.no_build and not build_provider_image():
        return 1
    if opts.nvme + opts.gather + opts.profile > 1:
        parser.error("--nvme, --gather and --profile exclude each other")
    if not 1 <= opts.depth <= 16:
        parser.error("--depth 1..16")
    if opts.nvme:
        return nvme_main(opts.queue_size, opts.bs)
    if opts.profile:
        return profile_main(opts)
    return gather_main(opts) if opts.gather else perftest_main(opts)


if __name__ == "__main__":
    sys.exit(main())
