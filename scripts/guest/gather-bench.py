#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Gather 64 x 512 B scattered buffers by RDMA READ between two TCG rnic
guests (tests/guest/provider/rnic_gather_bench.c): one READ through an
rnicdv mkey over the buffers (registered once, and registered per I/O)
against the 8 READs of 8 SGEs an SGE limit of 8 forces and one contiguous
READ of 32 KiB (issue 20's benchmark; docs/benchmarks.md).

Boots two guests with the provider image (rdma_pair.run_pair): guest 1 at
10.0.0.1 serves the data, guest 2 gathers and prints the table. The
client checks the last gather of every run byte for byte and exits
non-zero on any error; so does this script.

Usage: scripts/guest/gather-bench.py [--seconds S] [--depth N]
                                     [--rounds R] [--mtu M] [--no-build]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import build_provider_image, lines_of, rc_lines, run_pair  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="measuring time of each form per round (default 2)")
    parser.add_argument("--depth", type=int, default=8,
                        help="gathers in flight, 1..16 (default 8)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the four forms, the median kept (default 3)")
    parser.add_argument("--mtu", type=int, default=1500,
                        help="the guests' Ethernet MTU (default 1500: RoCE MTU 1024; "
                        "9000: 4096)")
    parser.add_argument("--no-build", action="store_true",
                        help="do not run scripts/guest/build-provider.sh --image first")
    opts = parser.parse_args()
    if not 0 < opts.seconds <= 60 or not 1 <= opts.depth <= 16 or \
            not 1 <= opts.rounds <= 16 or not 1280 <= opts.mtu <= 9000:
        parser.error("--seconds 0..60, --depth 1..16, --rounds 1..16, --mtu 1280..9000")
    if not opts.no_build and not build_provider_image():
        return 1
    step = ("gather", "rnic_gather_bench -d rnic0 -s",
            f"rnic_gather_bench -d rnic0 -c 10.0.0.1 -t {opts.seconds:g} "
            f"-q {opts.depth} -r {opts.rounds}", 1)
    budget = int(opts.seconds * 4 * opts.rounds) + 300
    t0 = time.time()
    r1, r2 = run_pair("gather-bench", (step,), timeout=budget + 400, mtu=opts.mtu,
                      tool_timeout=budget)
    status = 0
    for who, result in (("server", r1), ("client", r2)):
        if not result.ok or rc_lines(result.output).get("gather") != [0]:
            print(f"gather-bench: {who} failed:\n{result.report()}\n"
                  + lines_of(result.output, "gather"), file=sys.stderr)
            status = 1
    print(lines_of(r2.output, "gather"))
    print(f"gather-bench: {time.time() - t0:.0f} s (outputs: "
          "build/guest-logs/gather-bench-[12].out)", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
