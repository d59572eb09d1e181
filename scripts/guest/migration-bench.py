#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Migration blackout seen by an RDMA peer, and QEMU's downtime, for a guest
with the rnic (three TCG guests: scripts/guest/migrate_rdma.py).

Scenarios (A migrates to A' while B talks to it; B measures):
  idle       the RDMA state of one connection and a probe: B does one
             64-byte WRITE + READ + SEND/reply round at a time, 100 per
             second (rnic_migrate_verify -w 1 -S 64 -r 100)
  objects    the same probe, A also holding 1000 more MRs and 256 more RC
             QPs (rnic_migrate_verify -M 1000 -Q 256 on A)
  load       ib_write_bw-style load: B keeps 8 rounds of 64 KiB WRITE +
             READ back + SEND/reply in flight, unthrottled (-w 8 -S 65536)
  idle-t14, load-t14
             idle and load with QP timeout 14 (67 ms ACK timeout, 470 ms
             retry budget) instead of 16 (268 ms, 1.9 s): how the peer's
             blackout depends on its ACK timeout (docs/design.md
             "Performance")
  perftest   unmodified ib_write_bw -D 25 (64 KiB) from B to A; no blackout
             figure (perftest prints none), QEMU's figures only

Per run: QEMU's downtime and total time (query-migrate), the rnic section's
time within the downtime (save on A + load on A', QEMU's
vmstate_downtime_save/_load traces) and its share, all sections' time, and
how long the switch heard nothing from A's MAC (A's last frame to A''s
first: rnic-hub logs it), and the blackout B saw: its pause between
completions across the switchover (rnic_migrate_verify reports pauses over
50 ms, over 20 ms in the probe scenarios). Every run
must also pass the checks of tests/guest/test_migration.py's verifier test
(no error, nothing lost or duplicated); a run that does not is reported.

Usage: scripts/guest/migration-bench.py [--runs N] [--scenarios idle,objects,load,...]
                                        [--qemu PATH] [--no-build]
Prints a Markdown table (medians over the runs, and min-max).
"""

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from migrate_rdma import MigrationRun, run_migration, verify_result  # noqa: E402
from rdma_pair import build_provider_image  # noqa: E402
from rnic_guest import DEFAULT_QEMU  # noqa: E402

QP_TIMEOUT = 16
VERIFY = "timeout 240 rnic_migrate_verify"
SCENARIOS = {
    "idle": (f"{VERIFY} -s -T {QP_TIMEOUT}",
             f"{VERIFY} -c 10.0.0.1 -T {QP_TIMEOUT} -t 25 -w 1 -S 64 -r 100 -G 20"),
    "objects": (f"{VERIFY} -s -T {QP_TIMEOUT} -M 1000 -Q 256",
                f"{VERIFY} -c 10.0.0.1 -T {QP_TIMEOUT} -t 25 -w 1 -S 64 -r 100 -G 20"),
    "load": (f"{VERIFY} -s -T {QP_TIMEOUT}",
             f"{VERIFY} -c 10.0.0.1 -T {QP_TIMEOUT} -t 25 -w 8 -S 65536"),
    # the same with the peer's ACK timeout at 14 (67 ms; 470 ms retry budget)
    "idle-t14": (f"{VERIFY} -s -T 14",
                 f"{VERIFY} -c 10.0.0.1 -T 14 -t 25 -w 1 -S 64 -r 100 -G 20"),
    "load-t14": (f"{VERIFY} -s -T 14",
                 f"{VERIFY} -c 10.0.0.1 -T 14 -t 25 -w 8 -S 65536"),
    "perftest": (f"timeout 240 ib_write_bw -d rnic0 -x 1 -F -s 65536 -D 25 -u {QP_TIMEOUT}",
                 f"timeout 240 ib_write_bw -d rnic0 -x 1 -F -s 65536 -D 25 -u {QP_TIMEOUT}"
                 " 10.0.0.1"),
}


def one_run(name: str, qemu: str) -> Dict[str, Optional[float]]:
    a_cmd, b_cmd = SCENARIOS[name]
    kwargs = ({"running_frames": 20000, "settle": 5, "server_port": 18515}
              if name == "perftest" else {})
    run: MigrationRun = run_migration(f"bench-{name}", a_cmd, b_cmd, qemu=qemu,
                                      timeout=300, **kwargs)
    problems = []
    if run.failure or run.info.get("status") != "completed":
        problems.append(run.failure or f"migration {run.info.get('status')}")
    if run.rc("a") != 0 or run.rc("b") != 0:
        problems.append(f"exit status a={run.rc('a')} b={run.rc('b')}")
    if name != "perftest":
        for role, who in (("client", "b"), ("server", "a")):
            res = verify_result(run.lines(who), role)
            if not res or any(res.get(k) != "0" for k in ("errors", "lost", "dup")):
                problems.append(f"{role}: {res or 'no result'}")
    if problems:
        print(f"migration-bench: {name}: FAILED: {'; '.join(problems)}\n{run.report()}",
              file=sys.stderr)
        return {}
    if name != "perftest":
        res = verify_result(run.lines("b"), "client")
        rate = float(res.get("iters_per_s", 0))
        print(f"migration-bench: {name}: B: {res.get('iters')} iterations, {rate:.0f}/s "
              f"({rate * int(res.get('slot', 0)) / 2**20:.1f} MiB/s written and read back); "
              f"every byte checked on A and B: 0 errors, 0 lost, 0 duplicated",
              file=sys.stderr)
    sec = run.downtime_sections()
    rnic_us = (sec["rnic_save_us"] or 0) + (sec["rnic_load_us"] or 0)
    blackout = run.switchover_gap_ms() if name != "perftest" else None
    wire = run.wire_silence_ms()
    fig = {
        "downtime": float(run.info.get("downtime", 0)),
        "total": float(run.info.get("total-time", 0)),
        "rnic_ms": rnic_us / 1e3,
        "sections_ms": (sec["all_save_us"] + sec["all_load_us"]) / 1e3,
        # none reported: below the verifier's report threshold (-G, 50 ms)
        "blackout": blackout if blackout is not None else (
            float(re.search(r"-G (\d+)", b_cmd).group(1)) if "-G" in b_cmd else 50.0)
        if name != "perftest" else None,
        "blackout_below": 1.0 if (blackout is None and name != "perftest") else 0.0,
        "wire": wire,
    }
    seen = (f"{blackout:.0f}" if blackout is not None else
            "n/a" if name == "perftest" else f"under {fig['blackout']:.0f}")
    print(f"migration-bench: {name}: downtime {fig['downtime']:.0f} ms, total "
          f"{fig['total']:.0f} ms, rnic {rnic_us} µs (save {sec['rnic_save_us']} + load "
          f"{sec['rnic_load_us']}), all sections {fig['sections_ms']:.1f} ms, blackout "
          f"seen by B {seen} ms, "
          f"A's MAC silent "
          f"on the switch {wire} ms",
          file=sys.stderr, flush=True)
    return fig


def cell(values: List[float], fmt: str = "{:.0f}") -> str:
    if not values:
        return "—"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--scenarios", default="idle,objects,load,perftest")
    parser.add_argument("--qemu", default=str(DEFAULT_QEMU))
    parser.add_argument("--no-build", action="store_true")
    opts = parser.parse_args()
    names = [n.strip() for n in opts.scenarios.split(",") if n.strip()]
    if any(n not in SCENARIOS for n in names):
        parser.error(f"scenarios: {', '.join(SCENARIOS)}")
    if not opts.no_build:
        if not build_provider_image():
            return 1
    status = 0
    rows = []
    t0 = time.time()
    for name in names:
        figs = []
        for _ in range(opts.runs):
            fig = one_run(name, opts.qemu)
            if fig:
                figs.append(fig)
            else:
                status = 1
        rows.append((name, figs))
    print(f"\nMigration of a TCG guest (-m 512, -smp 1) with the rnic while B runs RDMA "
          f"traffic to it; three guests on two host cores; {opts.runs} run(s) per "
          f"scenario, median (min–max); {time.time() - t0:.0f} s in all.\n")
    print("| scenario | runs ok | QEMU downtime ms | total time ms | rnic section ms "
          "(save+load) | rnic share of downtime | A's MAC silent on the switch ms "
          "| blackout seen by B ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, figs in rows:
        share = [f["rnic_ms"] / f["downtime"] * 100 for f in figs if f["downtime"]]
        blackout = [f["blackout"] for f in figs if f["blackout"] is not None]
        below = any(f["blackout_below"] for f in figs)
        bcell = cell(blackout, "{:.0f}") + (" (some: no pause above this report threshold)"
                                            if below else "")
        print(f"| {name} | {len(figs)}/{opts.runs} | {cell([f['downtime'] for f in figs])} | "
              f"{cell([f['total'] for f in figs])} | "
              f"{cell([f['rnic_ms'] for f in figs], '{:.2f}')} | "
              f"{cell(share, '{:.1f}')} % | "
              f"{cell([f['wire'] for f in figs if f['wire'] is not None])} | "
              f"{bcell if name != 'perftest' else 'n/a'} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
