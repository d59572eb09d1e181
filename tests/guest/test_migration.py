# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a guest under RDMA traffic, seen by its peer (issue 7).

Three QEMUs on one Ethernet segment (tests/tools/rnic-hub.c, a learning
switch; scripts/guest/migrate_rdma.py): A (10.0.0.1) and B (10.0.0.2) boot
the provider image and run RDMA traffic; A is live-migrated to A' (started
with -incoming) while the traffic runs; A's program finishes on A'.

  migrate-rdma-verify    rnic_migrate_verify (tests/guest/provider/): B
                         WRITEs pattern(seq) into A's memory, READs it back
                         and checks every byte, SENDs seq, A checks the
                         sequence and answers, B checks the answers; at the
                         end A checks its memory slot by slot. Both report
                         zero errors, zero lost and zero duplicated
                         operations, the same iteration count; B's traffic
                         continues after the switchover; the switch relearned
                         A's MAC on A''s port (the device's announce). The
                         blackout B saw (its longest pause between
                         completions around the switchover), QEMU's downtime
                         and total time, and the rnic section's share of the
                         downtime are reported as TAP comments.
  migrate-rdma-perftest  unmodified ib_write_bw -D (64 KiB WRITEs) from B to
                         A while A migrates: both ends exit 0 with a
                         bandwidth figure.

The server side runs on A (the migrating guest), the measuring client on B:
B's clock never stops, so the pauses B sees are the blackout a remote peer
sees; A's guest clock stops with its VM and could not measure it.
"""

import re
import sys

from guesttest import TOP, procedure
from rdma_pair import assert_clean_dmesg, perftest_figure
from test_provider import provider_image

sys.path.insert(0, str(TOP / "scripts/guest"))
from migrate_rdma import (MAC_A, MAC_B, MigrationRun, assert_verified,  # noqa: E402
                          run_migration, verify_result)

# QP timeout exponent of both tools: 4.096 µs * 2^16 = 268 ms, 7 retries
# (1.9 s of retry budget): a TCG switchover with three guests on two cores
# takes a few hundred ms; perftest's default 14 (67 ms, 470 ms budget) is
# too tight here (docs/migration.md "Guarantees to peers").
QP_TIMEOUT = 16
VERIFY_SECONDS = 15
PERFTEST_SECONDS = 15


def common_checks(run: MigrationRun) -> None:
    assert not run.failure, run.report()
    assert run.info.get("status") == "completed", run.report()
    assert run.a_status == 0 and run.b_status == 0, run.report()
    assert_clean_dmesg(run.a_output)
    assert_clean_dmesg(run.b_output)
    # the switch learned A's MAC on A''s port after the switchover (the
    # device's announce, or its first frame if A's port was gone already)
    ports = re.findall(rf"mac {MAC_A} (?:learned on port|moved port \S+ ->) (\d+)",
                       run.hub_log)
    assert len(ports) >= 2 and ports[-1] != ports[0], run.report()
    # under load: B kept sending while A migrated
    before = run.hub_frames.get("before", {}).get(run.b_port, 0)
    after = run.hub_frames.get("after", {}).get(run.b_port, 0)
    assert after > before > 0, f"B's frames: {before} -> {after}\n{run.report()}"
    print(f"# {run.info.get('total-time')} ms of migration: {after - before} frames from B",
          flush=True)


def report_migration(label: str, run: MigrationRun) -> None:
    sections = run.downtime_sections()
    print(f"# {label}: QEMU downtime {run.info.get('downtime')} ms, total time "
          f"{run.info.get('total-time')} ms, setup {run.info.get('setup-time')} ms; "
          f"rnic section {sections['rnic_save_us']} µs save + "
          f"{sections['rnic_load_us']} µs load "
          f"(all sections {sections['all_save_us']} + {sections['all_load_us']} µs); "
          f"A's MAC silent on the switch {run.wire_silence_ms()} ms",
          flush=True)


@procedure("migrate-rdma-verify", requires=["rnic"], guests=3)
def migrate_verify(qemu: str) -> None:
    run = run_migration(
        "migrate-rdma-verify",
        f"timeout 240 rnic_migrate_verify -s -T {QP_TIMEOUT}",
        f"timeout 240 rnic_migrate_verify -c 10.0.0.1 -T {QP_TIMEOUT} "
        f"-t {VERIFY_SECONDS}",
        qemu=qemu, initrd=provider_image(), timeout=300)
    common_checks(run)
    assert run.rc("a") == 0 and run.rc("b") == 0, run.report()
    client = verify_result(run.lines("b"), "client")
    server = verify_result(run.lines("a"), "server")
    assert_verified(client, server, run.report())
    iters = int(client["iters"])
    assert int(server["recvs"]) == iters + 1, run.report()      # + STOP
    assert re.search(r"^verify: STOP after \d+ iterations; \d+ slots checked, 0 wrong",
                     run.lines("a"), re.MULTILINE), run.report()
    # traffic before the migration and after it
    assert run.b_progress_before and run.b_progress_before > 0, run.report()
    assert run.b_progress_after is not None, run.report()
    assert int(client["ops"]) > run.b_progress_after, run.report()
    blackout = run.switchover_gap_ms()
    report_migration("migrate-rdma-verify", run)
    print(f"# migrate-rdma-verify: {iters} iterations ({client['ops']} operations, "
          f"{int(client['bytes_checked']) >> 20} MiB checked), blackout seen by B "
          f"around the switchover: "
          f"{'< 50' if blackout is None else f'{blackout:.1f}'} ms; "
          f"longest pause in the run {client['max_gap_ms']} ms at t={client['gap_at_s']} s "
          f"(migration at t={run.migrate_window_b[0]:.1f}..{run.migrate_window_b[1]:.1f} s)"
          if run.migrate_window_b else "", flush=True)


# perftest writes its output when it exits (a pipe is fully buffered) and
# while its client busy-polls, the guest's console lags far behind: the
# test starts the migration once the switch has seen 20000 frames from B
# (the bandwidth test is running), + 5 s.


@procedure("migrate-rdma-perftest", requires=["rnic"], alone=True)
def migrate_perftest(qemu: str) -> None:
    tool = (f"ib_write_bw -d rnic0 -x 1 -F -s 65536 -D {PERFTEST_SECONDS} "
            f"-u {QP_TIMEOUT}")
    run = run_migration(
        "migrate-rdma-perftest", f"timeout 240 {tool}", f"timeout 240 {tool} 10.0.0.1",
        qemu=qemu, initrd=provider_image(), timeout=300,
        running_frames=20000, progress=r"^b: (\d+)$", settle=5,
        server_port=18515)
    common_checks(run)
    assert run.rc("a") == 0 and run.rc("b") == 0, run.report()
    unit, value = perftest_figure(run.lines("b"))
    assert unit == "MiB/s" and value > 0, run.report()
    report_migration("migrate-rdma-perftest", run)
    print(f"# migrate-rdma-perftest: ib_write_bw 64 KiB for {PERFTEST_SECONDS} s "
          f"across the migration: {value:g} MiB/s average, both ends exit 0", flush=True)
