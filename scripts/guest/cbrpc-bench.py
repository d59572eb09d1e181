#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""cbrpc-bench between two TCG guests: call by reference against call by
value over the same library (apps/cbrpc/bench/cbrpc_bench.c,
docs/cbrpc.md "Figures"), on rnic and/or Soft-RoCE.

Boots two guests per peer kind (rdma_pair.run_pair: the provider image,
guest 1 at 10.0.0.1 runs `cbrpc-bench server`, guest 2 runs the client) and
prints the client's table and its target lines. The client checks every
reply against its argument and exits non-zero on any error; so does this
script (a missed target is printed, not an error: the figures vary with
the host).

Usage: scripts/guest/cbrpc-bench.py [--peers rnic,rxe] [--seconds S]
                                    [--sweep] [--quick] [--spin-us US]
                                    [--runs N] [--no-build]
  --peers LIST   peer kinds, in order: rnic, rxe (default both)
  --seconds S    measuring time of each figure (default 2)
  --sweep        also the sweep of argument sizes (the inline threshold)
  --quick        0.5 s per figure, no sweep (the main job, the guest test)
  --spin-us US   the servers' and sessions' spin_us (default: the library's)
  --runs N       N pairs of guests booted one after the other per kind
                 (default 1): each run's target lines, then per target the
                 median of the runs' figures, their range, how many runs
                 met it, and the verdict on the median (two TCG guests'
                 scheduling moves a figure by +-10 % from boot to boot)
  --no-build     do not run scripts/guest/build-provider.sh --image first
"""

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rdma_pair import DEVICE, build_provider_image, lines_of, rc_lines, run_pair  # noqa: E402


def bench_step(kind: str, client_opts: str, spin: str = ""):
    dev = DEVICE[kind]
    return ("bench", f"cbrpc-bench server -d {dev} -a 10.0.0.1{spin}",
            f"cbrpc-bench client -d {dev} -a 10.0.0.1 {client_opts}{spin}", 1)


def run(kind: str, client_opts: str, name: str, tool_timeout: int = 600,
        spin: str = "") -> List[str]:
    """The client's output lines; raises RuntimeError on any failure."""
    t0 = time.time()
    r1, r2 = run_pair(name, (bench_step(kind, client_opts, spin),), kinds=(kind, kind),
                      timeout=tool_timeout + 400, tool_timeout=tool_timeout)
    client = lines_of(r2.output, "bench")
    problems = []
    for who, result in (("server", r1), ("client", r2)):
        if not result.ok:
            problems.append(f"{who} guest: {result.report()}")
        elif rc_lines(result.output).get("bench") != [0]:
            problems.append(f"{who}: exit {rc_lines(result.output).get('bench')}:\n"
                            + lines_of(result.output, "bench"))
    if not re.search(r"^cbrpc-bench: done$", client, re.MULTILINE):
        problems.append("no 'cbrpc-bench: done' from the client")
    if problems:
        raise RuntimeError(f"{name}: " + "\n".join(problems) +
                           f"\n(outputs: build/guest-logs/{name}-[12].out)")
    print(f"cbrpc-bench: {kind}: {time.time() - t0:.0f} s "
          f"(outputs: build/guest-logs/{name}-[12].out)", file=sys.stderr)
    return client.splitlines()


# "target unchanged 1 MiB, value/ref           19.80x (>= 20.0x): NOT met"
TARGET = re.compile(r"^target (.+?)\s+([0-9.]+)x \((<=|>=) ([0-9.]+)x\): (met|NOT met)$")


def summarize(kind: str, runs: List[List[str]]) -> None:
    """Per target line of the client: the median over RUNS and its verdict."""
    figures: Dict[str, Tuple[str, float, List[float]]] = {}
    for lines in runs:
        for line in lines:
            m = TARGET.match(re.sub(r"^bench: ", "", line))
            if m:
                figures.setdefault(m.group(1), (m.group(3), float(m.group(4)), []))[2] \
                    .append(float(m.group(2)))
    print(f"\n{kind} <-> {kind}: {len(runs)} runs, median (range), runs that met the target")
    for name, (op, want, values) in figures.items():
        def meets(v: float) -> bool:
            return v <= want if op == "<=" else v >= want
        med = statistics.median(values)
        good = [v for v in values if meets(v)]
        ok = meets(med)
        print(f"target {name:<34} {med:6.2f}x ({min(values):.2f}-{max(values):.2f}) "
              f"{len(good)}/{len(values)} runs ({op} {want:g}x): median "
              f"{'met' if ok else 'NOT met'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", default="rnic,rxe")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spin-us", type=int)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-build", action="store_true")
    opts = parser.parse_args()
    if not 1 <= opts.runs <= 50:
        parser.error("--runs: 1 to 50")
    kinds = [k.strip() for k in opts.peers.split(",") if k.strip()]
    if not kinds or any(k not in DEVICE for k in kinds):
        parser.error(f"--peers: kinds are {', '.join(DEVICE)}")
    if not 0 < opts.seconds <= 60:
        parser.error("--seconds: more than 0, at most 60")
    client_opts = "--quick" if opts.quick else \
        f"-t {opts.seconds:g}" + (" --sweep" if opts.sweep else "")
    if not opts.no_build and not build_provider_image():
        return 1
    status = 0
    for kind in kinds:
        runs = []
        for n in range(1, opts.runs + 1):
            try:
                lines = run(kind, client_opts, f"cbrpc-bench-{kind}",
                            spin="" if opts.spin_us is None else f" --spin-us {opts.spin_us}")
            except RuntimeError as err:
                print(err, file=sys.stderr)
                status = 1
                continue
            runs.append(lines)
            print(f"\n{kind} <-> {kind}" + (f", run {n} of {opts.runs}:" if opts.runs > 1 else ":"))
            for line in lines:
                line = re.sub(r"^bench: ", "", line)
                if opts.runs == 1 or line.startswith("target "):
                    print(line)
        if opts.runs > 1 and runs:
            summarize(kind, runs)
    return status


if __name__ == "__main__":
    sys.exit(main())
