#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Durable writes to rnic's persistent memory window through librpma, two
TCG guests (scripts/guest/pmem_pair.py): QD1 ops/s and latency of

  write         rpma_write() alone: durable before its ACK, because the
                region's key is DURABLE (rnic.ko registers a device-DAX
                mapping of the window with FLUSH_PERSISTENT so)
  write+flush   rpma_write() + rpma_flush(PERSISTENT): librpma's native
                IBTA 1.5 FLUSH, the answer after the persist
  write+gpspm   rpma_write() + a SEND to the server, which pmem_persist()s
                the range and answers with a SEND (librpma's GPSPM style)

for 64 B and 4 KiB, over several rounds (the modes interleaved within each
round), with the window's backing file on tmpfs (msync costs no I/O: the
device's cost) or on a directory you name (e.g. ext4: msync writes the
page back). The host's persist cost per operation alone is
tests/bench/bench-scm's (an engine without guests).

Usage: scripts/guest/pmem-bench.py [--rounds N] [--iters N] [--dir DIR]
                                   [--peer rnic|rxe] [--qemu PATH]
Prints a Markdown table: the median over the rounds of ops/s and of the
median latency, the ratio of `write` to the others.
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from pmem_pair import bench_client, bench_figures, pmem_setup, server  # noqa: E402
from rdma_pair import run_pair  # noqa: E402
from rnic_guest import GUEST_DIR  # noqa: E402

MODES = ("write", "write+flush", "write+gpspm")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the window's backing file goes (default: /dev/shm)")
    ap.add_argument("--peer", choices=("rnic", "rxe"), default="rnic")
    ap.add_argument("--qemu")
    args = ap.parse_args()
    if os.spawnv(os.P_WAIT, str(HERE / "build-pmem.sh"), ["build-pmem.sh"]):
        return 1
    steps = [(f"rpma-bench-{r}", server(4 << 20), bench_client(args.iters), 1)
             for r in range(args.rounds)]
    with tempfile.TemporaryDirectory(prefix="rnic-pmem-bench-", dir=args.dir) as scm_dir:
        r1, r2 = run_pair("pmem-bench", steps, kinds=("rnic", args.peer), qemu=args.qemu,
                          initrd=str(GUEST_DIR / "initramfs-pmem.cpio.gz"), scm_mib=(64, 0),
                          scm_dir=scm_dir, setup=(pmem_setup(), ""), timeout=3600,
                          tool_timeout=1800)
    if not (r1.ok and r2.ok):
        print(r1.report(), r2.report(), sep="\n", file=sys.stderr)
        return 1
    figures = bench_figures(r2.output)
    if len(figures) != 6 * args.rounds:
        print(r2.output, file=sys.stderr)
        return 1
    print(f"window file in {args.dir or 'a temporary directory'}; client on {args.peer}; "
          f"{args.rounds} rounds of {args.iters} per size and mode\n")
    print("| size | mode | ops/s | median latency (us) | p99 (us) | write / this |")
    print("|---|---|---|---|---|---|")
    for size in (64, 4096):
        med = {}
        for mode in MODES:
            rows = [f for f in figures if f[0] == size and f[1] == mode]
            med[mode] = (statistics.median(r[2] for r in rows),
                         statistics.median(r[3] for r in rows),
                         statistics.median(r[4] for r in rows))
        for mode in MODES:
            ops, lat, p99 = med[mode]
            print(f"| {size} B | {mode} | {ops:.0f} | {lat:.1f} | {p99:.0f} | "
                  f"{med['write'][0] / ops:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
