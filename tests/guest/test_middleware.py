# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tests of the middleware people run over RDMA, between two guests:
trixie's UCX 1.18, Open MPI 5.0 (over UCX) and libfabric 2.1
(build-provider.sh --middleware), on
rnic and, by the same steps, on Soft-RoCE (rxe on virtio-net) — the
compatibility matrix of docs/compat.md, whose works/fails cells this test
checks (so the table cannot drift from what runs).

  middleware-matrix   ucx_info -d; ucx_perftest tag latency and bandwidth,
                      stream, put, get and atomics over rc_verbs (wired up
                      over ud_verbs) and tag latency over ud_verbs alone;
                      mpirun --mca pml ucx of tests/guest/mpi's checked
                      ping-pong, allreduce and alltoall on two ranks;
                      fi_pingpong over verbs MSG and verbs;ofi_rxm RDM
                      endpoints with its data checks (-c); rnic <-> rnic
                      and rxe <-> rxe
  middleware-peer-dies  a ucx_perftest peer powers off mid-run: the
                      survivor's UCX reports it and exits, its device
                      keeps no QP or MR
  middleware-exhaustion  rnics with two QPs / four MRs: UCX gets ENOMEM
                      from ibv_create_qp / ibv_reg_mr and reports it
  middleware-mpi-peer-dies  the same with an MPI job: mpirun ends it
  middleware-mpi-three  Open MPI over UCX, three ranks on three guests
                      on a Linux bridge (root), results checked
"""

import re
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from guesttest import TOP, Guest, Skip, procedure, run_guests
from rdma_pair import NET_UP, WAIT_GID, assert_clean_dmesg, lines_of, rc_lines, run_pair
from test_provider import middleware_image

sys.path.insert(0, str(TOP / "scripts/guest"))
from linux_bridge import Bridge, can_run  # noqa: E402  pylint: disable=C0413

COMPAT = TOP / "docs/compat.md"


class Cell(NamedTuple):
    """One test of the matrix: NAME (its step), the TOOL and what it runs
    (TEST, as docs/compat.md names it), the server's and the client's
    command ({dev}: the RDMA device, {peer}: the server's address) and
    the FIGURE it yields (see figure()). Guest 1 runs SERVER, guest 2
    CLIENT; SRV is the guest that goes first."""
    name: str
    tool: str
    test: str
    server: str
    client: str
    figure: str
    srv: int = 1        # the guest whose command runs first (the other's waits for it)


UD = "UCX_NET_DEVICES={dev}:1 UCX_TLS=ud_verbs,self UCX_UD_TIMEOUT=10s"
RC = "UCX_NET_DEVICES={dev}:1 UCX_TLS=rc_verbs,ud_verbs,self UCX_UD_TIMEOUT=10s"
PERF = "ucx_perftest -P 0"      # -P 0: its own socket exchange, not MPI
MPIRUN = ("PRTE_MCA_plm_ssh_agent=rnic-rsh OMPI_ALLOW_RUN_AS_ROOT=1 "
          "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.openmpi --mca pml ucx "
          "-x UCX_NET_DEVICES={dev}:1 -x UCX_TLS=rc_verbs,ud_verbs,self{mpi_x}")
RSHD = "nc -l -p 2222 -e rnic-rshd"
# (30 iterations a size: fi_pingpong's 1 MiB row took 20 s of rxe's 24 with 100)
RDM = 'FI_UNIVERSE_SIZE=4 fi_pingpong -p "verbs;ofi_rxm" -d {dev} -e rdm -I 30'


def node_names(me: int, nodes: int) -> str:
    """Guest ME's lines naming itself and the NODES guests nodeN in
    /etc/hosts: PRRTE matches its daemons to mpirun's -H by host name."""
    hosts = "".join(f"10.0.0.{n} node{n}\\n" for n in range(1, nodes + 1))
    return f'hostname node{me}\nprintf "{hosts}" >>/etc/hosts\n'


SETUP = (node_names(1, 2), node_names(2, 2))


def perftest(name: str, test: str, env: str, args: str, figure: str) -> Cell:
    return Cell(name, "ucx_perftest", test, f"{env} {PERF} {args}",
                f"{env} {PERF} {{peer}} {args}", figure)


MATRIX: Sequence[Cell] = (
    Cell("ucx_info", "ucx_info", "-d lists rc_verbs and ud_verbs",
         "ucx_info -d", "true", "transports"),
    perftest("ucx_ud_tag_lat", "tag_lat 8 B, ud_verbs", UD, "-t tag_lat -n 2000", "lat"),
    perftest("ucx_rc_tag_lat", "tag_lat 8 B, rc_verbs", RC, "-t tag_lat -n 2000", "lat"),
    perftest("ucx_rc_tag_bw", "tag_bw 1 MiB, rc_verbs", RC, "-t tag_bw -s 1048576 -n 30", "bw"),
    perftest("ucx_rc_stream_bw", "stream_bw 64 KiB, rc_verbs", RC,
             "-t stream_bw -s 65536 -n 500", "bw"),
    perftest("ucx_rc_put_bw", "ucp_put_bw 64 KiB, rc_verbs", RC,
             "-t ucp_put_bw -s 65536 -n 500", "bw"),
    perftest("ucx_rc_get", "ucp_get 64 KiB, rc_verbs", RC, "-t ucp_get -s 65536 -n 500", "bw"),
    perftest("ucx_rc_add", "ucp_add, rc_verbs", RC, "-t ucp_add -n 2000", "rate"),
    perftest("ucx_rc_fadd", "ucp_fadd, rc_verbs", RC, "-t ucp_fadd -n 2000", "lat"),
    perftest("ucx_rc_cswap", "ucp_cswap, rc_verbs", RC, "-t ucp_cswap -n 2000", "lat"),
    # Open MPI over UCX: mpirun on guest 1 starts its daemon on guest 2
    # through rnic-rsh (no ssh in the guests), whose rnic-rshd listens there
    Cell("mpi_pml_ucx", "mpirun", "pml ucx: ping-pong, allreduce, alltoall, 2 ranks",
         f"{MPIRUN} -H node1:1,node2:1 -np 2 rnic_mpi_check 1000", RSHD, "mpi", srv=2),
    Cell("fi_info", "fi_info", "-p verbs lists the device (MSG and RDM)",
         "fi_info -p verbs; fi_info -p \"verbs;ofi_rxm\"", "true", "fabric"),
    Cell("fi_msg_pingpong", "fi_pingpong", "verbs MSG endpoint, 64 B..1 MiB, -c",
         "fi_pingpong -p verbs -d {dev} -e msg -I 30 -c",
         "fi_pingpong -p verbs -d {dev} -e msg -I 30 -c {peer}", "fi"),
    # ofi_rxm asks verbs for CQs of its queue sizes times the universe size
    # (256 by default): more than any CQ rnic (65536) or rxe (32767) makes
    Cell("fi_rdm_pingpong", "fi_pingpong", "verbs;ofi_rxm RDM endpoint, 64 B..1 MiB, -c",
         f"{RDM} -c", f"{RDM} -c {{peer}}", "fi"),
)

KINDS = ("rnic", "rxe")
DEVICE = {"rnic": "rnic0", "rxe": "rxe0"}
# Soft-RoCE reports 0 for the RoCE packet type in wc.sl, and UCX's UD
# transport then drops every datagram for a wrong destination GID (and
# aborts in UCX_UD_TIMEOUT): rxe needs UCX's own workaround (docs/compat.md
# footnote 1); rnic reports the type, as mlx5 does, and runs without it.
UCX_ENV = {"rnic": "", "rxe": "UCX_UD_ETH_DGID_CHECK=n"}


def steps(kind: str):
    env = UCX_ENV[kind]
    fill = {"dev": DEVICE[kind], "peer": "10.0.0.1", "mpi_x": f" -x {env}" if env else ""}

    def command(cell: Cell, line: str) -> str:
        return (f"{env} " if env and cell.tool.startswith("ucx") else "") + line.format(**fill)
    return [(c.name, command(c, c.server), command(c, c.client), c.srv) for c in MATRIX]


def figure(cell: Cell, server: str, client: str) -> Tuple[bool, str]:
    """Did CELL work, and its figure, from the two sides' output."""
    if cell.figure == "transports":
        found = [tl for tl in ("rc_verbs", "ud_verbs")
                 if re.search(rf"Transport: {tl}\n.*Device: \w+:1", server)]
        return len(found) == 2, " ".join(found) or "none"
    if cell.figure == "fabric":
        found = sorted({ep for ep in re.findall(
            r"domain: (?:rnic0|rxe0)\n.*\n\s+type: FI_EP_(MSG|RDM)", server)})
        return found == ["MSG", "RDM"], " ".join(found) or "none"
    if cell.figure == "fi":
        rows = re.findall(r"^(\S+)\s+\d+\s+=\d+\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)\s", client,
                          re.MULTILINE)
        sizes = {size: (float(bw), float(lat)) for size, bw, lat in rows}
        if "64" not in sizes or "1m" not in sizes:
            return False, "no result"
        return True, f"{sizes['64'][1]:.1f} µs (64 B), {sizes['1m'][0]:.1f} MB/s (1 MiB)"
    if cell.figure == "mpi":
        result = re.search(r"MPI-RESULT ranks=(\d+) lat8_us=([\d.]+) bw1m_mbs=([\d.]+) "
                           r"pingpong=(\w+) allreduce=(\w+) alltoall=(\w+)", server)
        if not result or result.group(1) != "2":
            return False, "no result"
        checks = [name for name, got in zip(("ping-pong", "allreduce", "alltoall"),
                                            result.groups()[3:]) if got != "ok"]
        if checks:
            return False, "wrong results: " + ", ".join(checks)
        return True, f"{float(result.group(2)):.1f} µs (8 B), {float(result.group(3)):.1f} MB/s (1 MiB)"
    # ucx_perftest's last line: iterations, overhead (50th percentile,
    # average, overall), bandwidth and message rate (average, overall).
    # The averages are of the last report's interval: "inf" when it was
    # empty (the 100 messages of a slow rxe run were all in the previous one)
    num = r"\s+([\d.]+|inf|nan)"
    final = re.search(r"^Final:\s+(\d+)" + num * 7, client, re.MULTILINE)
    if not final or "Fatal" in client + server:
        return False, "no result"
    if cell.figure == "lat":
        return True, f"{float(final.group(2)):.1f} µs"
    if cell.figure == "bw":
        return True, f"{float(final.group(6)):.1f} MB/s"
    return True, f"{float(final.group(8)):.0f} ops/s"


def run_cells(kind: str, qemu: str, cells: Sequence[Cell],
              name: str) -> Dict[str, Tuple[bool, str]]:
    """Run CELLS on a pair of KIND: {cell: (works, figure)}. A cell that
    fails prints the end of both sides' output."""
    r1, r2 = run_pair(name, [s for s in steps(kind) if s[0] in {c.name for c in cells}],
                      kinds=(kind, kind), qemu=qemu, initrd=middleware_image(),
                      tool_timeout=150, setup=SETUP)
    for result in (r1, r2):
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    results = {}
    for cell in cells:
        server, client = lines_of(r1.output, cell.name), lines_of(r2.output, cell.name)
        works, fig = figure(cell, server, client)
        rcs = rc_lines(r1.output).get(cell.name, []) + rc_lines(r2.output).get(cell.name, [])
        works = bool(works and rcs and all(rc == 0 for rc in rcs))
        results[cell.name] = (works, fig)
        if not works:
            for side, out in (("server", server), ("client", client)):
                for line in out.splitlines()[-12:]:
                    print(f"# {kind} {cell.name} {side}: {line}", flush=True)
            print(f"# {kind} {cell.name}: statuses {rcs}", flush=True)
    return results


def run_matrix(kind: str, qemu: str) -> Dict[str, Tuple[bool, str]]:
    cells = run_cells(kind, qemu, MATRIX, f"middleware-{kind}")
    for cell in MATRIX:
        works, fig = cells[cell.name]
        print(f"# {kind}: {cell.tool} {cell.test}: {'works' if works else 'FAILS'}, {fig}",
              flush=True)
    return cells


def compat_table(path: Path = COMPAT) -> Dict[Tuple[str, str], Tuple[str, str]]:
    """{(tool, test): (rnic cell, rxe cell)} of docs/compat.md's matrix:
    rows '| tool | version | test | rnic | rxe | figures | command |'."""
    rows = {}
    for line in path.read_text().splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) == 7 and cols[0] in {c.tool for c in MATRIX}:
            rows[(cols[0], cols[2])] = (cols[3], cols[4])
    return rows


@procedure("middleware-matrix", requires=["rnic", "virtio-net-pci"])
def matrix(qemu: str) -> None:
    results = {kind: run_matrix(kind, qemu) for kind in KINDS}
    table = compat_table()
    stale: List[str] = []
    for cell in MATRIX:
        row: Optional[Tuple[str, str]] = table.get((cell.tool, cell.test))
        want = tuple("works" if results[kind][cell.name][0] else "fails" for kind in KINDS)
        if row is None or tuple(c.split()[0].strip("*").lower() for c in row) != want:
            stale.append(f"{cell.tool} | {cell.test}: measured rnic {want[0]}, rxe {want[1]}; "
                         f"docs/compat.md says {row}")
    # rnic must run all of it
    failed = [c.name for c in MATRIX if not results["rnic"][c.name][0]]
    assert not failed, f"fails on rnic: {failed}"
    assert not stale, "docs/compat.md does not match the run:\n" + "\n".join(stale)


# A peer that disappears mid-run: guest 1's ucx_perftest client streams
# RDMA writes (ucp_put_bw: the client of a ucx_perftest pair is the one
# that sends, so it always has writes waiting for an ACK) to guest 2's
# server when guest 2 powers off at once (sysrq o: no process exits, no QP
# is destroyed, its QEMU quits, as if killed). The survivor's UCX must
# report the error and exit within the step's time, and its device must
# hold no QP or MR afterwards (the process's resources freed, none stuck).
# (A ping-pong cannot test this: a survivor whose last reply was ACKed
# before the peer's QEMU went waits for a next message with nothing in
# flight, and UCX without error handling has no keepalive to notice.)
# What the survivor runs after its tool: its status, then the user QPs and
# the MRs its device still holds.
LEFTOVERS = ("echo survivor_rc=$?; sleep 1; "
             "echo qps=$(rdma res show qp | grep lqpn | grep -vc \"type GSI\"); "
             "echo mrs=$(rdma res show mr | grep -c mrn); ")
POWER_OFF = "echo PEER-POWERING-OFF >/dev/console; echo o >/proc/sysrq-trigger; sleep 30"
# How a peer that is the step's client dies. It cannot power off after the
# step (its guest would finish its script first): it hands the survivor the
# step's verdict itself (sync point 2 of step 0: rdma_pair.LOCKSTEP, TCP
# 7000 + 2) and dies in the step.
DIE = "echo done | nc 10.0.0.1 7002; " + POWER_OFF
PUT_BW = "-t ucp_put_bw -s 65536 -n 100000000"
# How a dying peer knows that the survivor's traffic flows, so that it
# dies mid-run and not before the run began: its rnic's receive counter
# (rcvd_pkts, RoCE packets taken in by its QPs) rises by TRAFFIC_PKTS from
# when it starts to wait. Connection setup (UCX's wire-up over ud_verbs)
# is a few dozen packets; the survivor's traffic is thousands a second (a
# 64 KiB RDMA write is 64 packets at 1024 B, an 8 B MPI ping-pong round
# one send and one ACK). It waits TRAFFIC_WAIT s at most (on a loaded host
# the survivor's connection setup took more than 3 s; with 2 busy loops
# beside the tests the traffic began after up to 78 s), then prints on its
# console what it saw, 'PEER-TRAFFIC seen|none: ...', and powers off
# either way ('none': the survivor's traffic never started, so its
# failure is not one to notice a peer's death).
TRAFFIC_PKTS = 2000
TRAFFIC_WAIT = 180
WAIT_TRAFFIC = """cat >/tmp/wait-traffic <<'EOF'
#!/bin/sh
# wait-traffic DEV PKTS SECONDS
rx() {
    cat /sys/class/infiniband/$1/ports/1/hw_counters/rcvd_pkts 2>/dev/null ||
        rdma statistic show link $1/1 | tr -s ' ' '\\n' | grep -A1 -x rcvd_pkts | tail -n 1
}
now_cs() { awk '{ printf "%d\\n", $1 * 100 }' /proc/uptime; }
start=$(now_cs)
base=$(rx $1)
got=$base
while [ $((got - base)) -lt $2 ] && [ $(($(now_cs) - start)) -lt $(($3 * 100)) ]; do
    sleep 0.2
    got=$(rx $1)
done
took=$(($(now_cs) - start))
verdict=none
[ $((got - base)) -lt $2 ] || verdict=seen
echo "PEER-TRAFFIC $verdict: rcvd_pkts $base -> $got (+$((got - base)), waited for +$2)" \\
    "in $((took / 100)).$((took % 100 / 10)) s (at most $3 s)" >/dev/console
[ $verdict = seen ]
EOF
chmod +x /tmp/wait-traffic
"""
WAIT_FOR_TRAFFIC = f"/tmp/wait-traffic {{dev}} {TRAFFIC_PKTS} {TRAFFIC_WAIT}; "
# guest 2: the server, dying once the client's writes flow
PEER_DIES_PEER = (f"{RC} {PERF} {PUT_BW} & " + WAIT_FOR_TRAFFIC +
                  "echo running=$(pidof ucx_perftest | wc -w) >/dev/console; " + POWER_OFF)
# guest 1: the client; afterwards, with its peer gone, it does not meet it
# at the end of the step (rdma_pair.LOCKSTEP). Its counters: NAME VALUE
# pairs (grep's '--' between groups of lines left out)
PEER_DIES_SURVIVOR = (f"{RC} {PERF} {{peer}} {PUT_BW}; " + LEFTOVERS +
                      "rdma statistic show link {dev}/1 | tr -s \" \" \"\\\\n\" | "
                      "grep -A1 -xE \"local_ack_timeout_err|retrans\\w*|sent_pkts|rcvd_pkts\" | "
                      "grep -vxe -- | paste - - | sed s/^/counter:/; touch /tmp/peer-gone")
# The steps' limit: the peer's wait for traffic, then the survivor's time
# to notice it is gone (UCX's RC retries; mpirun's keepalive), with room
TOOL_TIMEOUT = TRAFFIC_WAIT + 120
# timeout(1)'s statuses: the tool was cut at the step's limit, it did not
# end by itself
CUT = ("124", "143")


def peer_traffic(r1, r2) -> Tuple[bool, str]:
    """Did the dying peer (guest 2) see the survivor's traffic flow before
    it powered off, and its console line saying so (WAIT_TRAFFIC)."""
    seen = re.search(r"^PEER-TRAFFIC (seen|none): (.*?)\s*$", r2.console, re.MULTILINE)
    # (no line: the peer never came to its wait, e.g. its guest did not boot)
    assert seen, ("the peer never waited for the survivor's traffic (no PEER-TRAFFIC line)\n"
                  + r1.report() + r2.report())
    return seen.group(1) == "seen", seen.group(2)


def check_survivor(r1, r2, step: str) -> Tuple[str, str, str]:
    """The survivor's (guest 1's) STEP output, its tool's status and the
    peer's evidence of the survivor's traffic, after the checks both
    peer-dies tests make: the survivor's traffic flowed before the peer
    died (else the failure says the traffic never started, not that the
    survivor missed the death), the peer was running its side, the
    survivor ended by itself and holds no QP or MR."""
    out = lines_of(r1.output, step)
    flowed, evidence = peer_traffic(r1, r2)
    survivor = re.search(r"survivor_rc=(\d+)", out)
    counters = "; ".join(re.findall(r"counter:(\S+\s+\d+)", out)) or "none printed"
    if not flowed:
        raise AssertionError(
            "the survivor's traffic never started before the peer powered off "
            f"(peer: {evidence}; survivor's status "
            f"{survivor.group(1) if survivor else 'none'}, counters {counters}): "
            "a failure to start, not a failure to notice the peer's death\n"
            + r1.report() + r2.report())
    died = f"after its traffic flowed (peer: {evidence})"
    assert "PEER-POWERING-OFF" in r2.console, f"the peer did not power off {died}\n" + r2.report()
    assert "running=1" in r2.console, f"the peer's tool had ended {died}\n" + r2.report()
    assert r1.ok, f"the survivor's guest failed, the peer died {died}\n" + r1.report()
    assert_clean_dmesg(r1.output)
    assert survivor, f"no survivor status, the peer died {died}:\n{out}"
    assert survivor.group(1) not in CUT, (
        f"the survivor did not notice the peer's death: the peer died {died}, the survivor "
        f"hung until killed (counters {counters}):\n{out}")
    assert re.search(r"^qps=0$", out, re.MULTILINE), f"QPs left on the survivor:\n{out}"
    assert re.search(r"^mrs=0$", out, re.MULTILINE), f"MRs left on the survivor:\n{out}"
    return out, survivor.group(1), evidence


@procedure("middleware-peer-dies", requires=["rnic"])
def peer_dies(qemu: str) -> None:
    fill = {"dev": "rnic0", "peer": "10.0.0.2"}
    steps = [("peer_dies", PEER_DIES_SURVIVOR.format(**fill), PEER_DIES_PEER.format(**fill), 2)]
    r1, r2 = run_pair("middleware-peer-dies", steps, qemu=qemu, initrd=middleware_image(),
                      tool_timeout=TOOL_TIMEOUT, setup=("", WAIT_TRAFFIC))
    out, status, evidence = check_survivor(r1, r2, "peer_dies")
    assert status != "0", f"the survivor did not see the peer go (peer: {evidence}):\n{out}"
    print(f"# middleware-peer-dies: the peer saw the survivor's traffic, {evidence}; "
          f"survivor's ucx_perftest exited {status}; "
          + "; ".join(re.findall(r"counter:(\S+\s+\d+)", out)), flush=True)


# A device that runs out while UCX wires up: guest 1's rnic allows two QPs
# (the kernel's GSI QP and one more), guest 2's four MRs. UCX must get a
# clean verbs error (ENOMEM) and say so; guest 1's ucx_perftest exits by
# itself. Guest 2's does not: UCX 1.18, having failed to register its
# receive pool, tries again and again (UCX's behaviour, not the device's:
# each try gets the error), so its step is cut at TOOL_TIMEOUT.
EXHAUST = (["-global", "rnic.max-qps=2"], ["-global", "rnic.max-mrs=4"])


@procedure("middleware-exhaustion", requires=["rnic"])
def exhaustion(qemu: str) -> None:
    fill = {"dev": "rnic0", "peer": "10.0.0.1"}
    server = f"{RC} {PERF} -t tag_lat -n 1000".format(**fill)
    # (it retries the registration in a loop, thousands of error lines)
    client = f"{RC} {PERF} {{peer}} -t tag_lat -n 1000 2>&1 | head -n 20".format(**fill)
    r1, r2 = run_pair("middleware-exhaustion", [("exhaust", server, client, 1)], qemu=qemu,
                      initrd=middleware_image(), tool_timeout=15, extra_args=EXHAUST)
    for result in (r1, r2):
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    qps, mrs = lines_of(r1.output, "exhaust"), lines_of(r2.output, "exhaust")
    assert re.search(r"failed to create RC QP .*Cannot allocate memory", qps), qps
    assert str(rc_lines(r1.output)["exhaust"][0]) not in ("0",) + CUT, qps
    assert re.search(r"ibv_reg_mr\(.*failed: Cannot allocate memory", mrs), mrs
    print(f"# middleware-exhaustion: QPs: ucx_perftest exited {rc_lines(r1.output)['exhaust'][0]}"
          f" on ENOMEM from ibv_create_qp; MRs: ENOMEM from ibv_reg_mr reported "
          "(UCX retries it until its step is cut)", flush=True)


# Open MPI across three guests on one Linux bridge: guest 1 runs mpirun
# with a rank on each; guests 2 and 3 serve one rnic-rsh connection each
# (the daemon mpirun starts there) and end when it ends.
THREE_LAUNCHER = """
for h in 2 3; do
    n=0
    until [ "$(nc 10.0.0.$h 2223 </dev/null 2>/dev/null)" = ready ]; do
        n=$((n + 1)); [ $n -lt 300 ] || { echo "node$h not ready"; exit 1; }
        sleep 0.2
    done
done
timeout 240 sh -c '""" + MPIRUN.format(dev="rnic0", mpi_x="") + """ \\
    -H node1:1,node2:1,node3:1 -np 3 rnic_mpi_check 1000' 2>&1 | sed 's/^/mpi3: /'
"""
THREE_NODE = """
timeout 240 """ + RSHD + """ &
rshd=$!
sleep 0.5
echo ready | timeout 240 nc -l -p 2223
wait $rshd
echo "rshd_status=$?"
"""


@procedure("middleware-mpi-three", requires=["rnic"], guests=3)
def mpi_three(qemu: str) -> None:
    why = can_run()
    if why:
        raise Skip(why)
    with Bridge() as bridge:
        guests = []
        for me in (1, 2, 3):
            args, wrapper = bridge.attach("rnic", f"52:54:00:00:03:0{me}")
            script = (node_names(me, 3) + NET_UP["rnic"].format(me=me, mtu=1500)
                      + WAIT_GID.format(dev="rnic0")
                      + (THREE_LAUNCHER if me == 1 else THREE_NODE))
            guests.append(Guest(script, name=f"middleware-mpi-three-{me}", qemu=qemu,
                                initrd=middleware_image(), timeout=400, args=args,
                                wrapper=wrapper))
        results = run_guests(guests)
    for result in results:
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    out = lines_of(results[0].output, "mpi3")
    found = re.search(r"MPI-RESULT ranks=3 lat8_us=([\d.]+) bw1m_mbs=([\d.]+) "
                      r"pingpong=ok allreduce=ok alltoall=ok", out)
    assert found, "\n".join(r.report() for r in results)
    print(f"# middleware-mpi-three: 3 ranks on 3 guests, pml ucx: allreduce and alltoall "
          f"checked; ranks 0-1 {float(found.group(1)):.1f} µs (8 B), "
          f"{float(found.group(2)):.1f} MB/s (1 MiB)", flush=True)


# The same for MPI: a job of two ranks (ping-pong without end) whose second
# guest powers off mid-run; its rnic-rshd listens from boot (setup), so
# mpirun can go first, as the step's server. PRRTE notices a vanished
# daemon by TCP keepalive on its control link, 300 s by default: with it
# the survivor's rank aborts on UCX's retry error at once but mpirun waits
# past any test's patience; with a 5 s keepalive it ends the job.
MPI_PEER_DIES_SERVER = ("PRTE_MCA_oob_tcp_keepalive_time=2 PRTE_MCA_oob_tcp_keepalive_intvl=1 "
                        "PRTE_MCA_oob_tcp_keepalive_probes=3 " + MPIRUN.format(dev="rnic0", mpi_x="") +
                        " -H node1:1,node2:1 -np 2 rnic_mpi_check 100000000; " + LEFTOVERS)
# guest 2 dies once the ranks' ping-pong flows (WAIT_TRAFFIC)
MPI_PEER_DIES_CLIENT = (WAIT_FOR_TRAFFIC.format(dev="rnic0") +
                        "echo running=$(pidof rnic_mpi_check | wc -w) >/dev/console; " + DIE)


@procedure("middleware-mpi-peer-dies", requires=["rnic"])
def mpi_peer_dies(qemu: str) -> None:
    steps = [("peer_dies", MPI_PEER_DIES_SERVER, MPI_PEER_DIES_CLIENT, 1)]
    setup = (SETUP[0], SETUP[1] + WAIT_TRAFFIC + f"timeout {TOOL_TIMEOUT + 80} {RSHD} &\n")
    r1, r2 = run_pair("middleware-mpi-peer-dies", steps, qemu=qemu, initrd=middleware_image(),
                      tool_timeout=TOOL_TIMEOUT, setup=setup)
    # (mpirun exits 0 here: PRRTE's status for a job it ended on a lost daemon)
    out, status, evidence = check_survivor(r1, r2, "peer_dies")
    assert "PRTE has lost communication with a remote daemon" in out, out
    print(f"# middleware-mpi-peer-dies: the peer saw the ranks' traffic, {evidence}; "
          f"mpirun reported the lost daemon and exited {status}", flush=True)
