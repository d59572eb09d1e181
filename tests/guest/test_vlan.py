# SPDX-License-Identifier: GPL-2.0-or-later
"""Live migration of a guest whose RDMA traffic runs over a VLAN
sub-interface (multi-network PDs, ABI 1.1; docs/spec.md §3.4).

  migrate-rdma-vlan  A and B (scripts/guest/migrate_rdma.py: three QEMUs on
                     one switch) add eth0.10 (10.10.0.x); rnic_migrate_verify
                     runs over the VLAN's GID, so its user-space PD is a
                     multi-network PD bound to VLAN 10 with its MRs
                     replicated there. A migrates to A' under the traffic:
                     zero errors, zero lost, zero duplicated operations on
                     both sides, and B's WRITEs and READs with A's rkey
                     continue after the switchover: A''s device rebuilt the
                     PD's replicas in VLAN 10 with the same STags and the
                     QP's binding with the same QPN (an rkey of a PD not
                     bound to VLAN 10 would find no entry there).

The kernel-ULP cases over a VLAN (rnic_ktest, NVMe-oF, both networks at once)
are in test_driver.py.
"""

import re

from test_migration import QP_TIMEOUT, VERIFY_SECONDS, common_checks, report_migration
from test_provider import provider_image
from guesttest import procedure
from migrate_rdma import assert_verified, run_migration, verify_result

# eth0.10 with 10.10.0.{me}; GID_INDEX: the IPv4-mapped GID of eth0.10
VLAN_SETUP = (
    "ip link add link eth0 name eth0.10 type vlan id 10 && "
    "ip link set eth0.10 up && ip addr add 10.10.0.{me}/24 dev eth0.10 && "
    "sleep 3 && "
    "GID_INDEX=$(for g in /sys/class/infiniband/rnic0/ports/1/gid_attrs/ndevs/*; do "
    "i=${{g##*/}}; [ \"$(cat $g 2>/dev/null)\" = eth0.10 ] && "
    "grep -q '^0000:0000:0000:0000:0000:ffff:0a0a' "
    "/sys/class/infiniband/rnic0/ports/1/gids/$i && echo $i; done | head -1) && "
    "echo \"vlan GID index $GID_INDEX\" && "
)


@procedure("migrate-rdma-vlan", requires=["rnic"], guests=3)
def migrate_vlan(qemu: str) -> None:
    server = (VLAN_SETUP.format(me=1) +
              f"timeout 240 rnic_migrate_verify -s -g $GID_INDEX -T {QP_TIMEOUT}")
    client = (VLAN_SETUP.format(me=2) +
              "wait-ping 10.10.0.1 240 && "
              f"timeout 240 rnic_migrate_verify -c 10.10.0.1 -g $GID_INDEX "
              f"-T {QP_TIMEOUT} -t {VERIFY_SECONDS}")
    run = run_migration("migrate-rdma-vlan", server, client, qemu=qemu,
                        initrd=provider_image(), timeout=300)
    common_checks(run)
    a_lines, b_lines = run.lines("a"), run.lines("b")
    assert re.search(r"^vlan GID index \d+$", a_lines, re.MULTILINE), run.report()
    assert re.search(r"^vlan GID index \d+$", b_lines, re.MULTILINE), run.report()
    assert run.rc("a") == 0 and run.rc("b") == 0, run.report()
    client_res = verify_result(b_lines, "client")
    server_res = verify_result(a_lines, "server")
    assert_verified(client_res, server_res, run.report())
    # traffic before and after the switchover
    assert run.b_progress_before and run.b_progress_before > 0, run.report()
    assert run.b_progress_after is not None, run.report()
    assert int(client_res["ops"]) > run.b_progress_after, run.report()
    report_migration("migrate-rdma-vlan", run)
