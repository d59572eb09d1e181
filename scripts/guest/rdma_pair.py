# SPDX-License-Identifier: GPL-2.0-or-later
"""Two guests on one Ethernet segment running RDMA tools in lockstep.

Guest 1 (10.0.0.1) and guest 2 (10.0.0.2) are connected by a -netdev stream
over a unix socket (the fastest two-VM backend for bandwidth, docs/usage.md)
or, with netdev="dgram", by a -netdev dgram over two unix datagram sockets
(shorter round trips, far less bandwidth: docs/benchmarks.md). Each is an
"rnic" guest (-device rnic, rnic.ko, the provider: device rnic0) or an
"rxe" guest (virtio-net + Soft-RoCE: device rxe0). Both boot the provider
image (scripts/guest/build-provider.sh --image), which has everything.

A step names a tool run on both guests: the tool's server starts first and
its client only once the server listens (a new TCP listener or RDMA-CM id
in LISTEN state); sync points between the guests (busybox nc, guest 1
listening) keep the steps aligned even when a tool fails or times out.
A client whose RDMA-CM connect the server rejected (no listener yet), or a
perftest client that refused its clock calibration, makes the whole step
run again, server and client, twice at most ('retry=NAME:N').
Each guest prints, per step, 'rc=NAME:STATUS' and the tool's output with
every line prefixed 'NAME: '; at the end 'stats: ' lines (ethtool -S).

Used by tests/guest/test_provider.py, scripts/guest/perftest-pair.py (and
through it perftest-profile.py) and latency-trace.py; migrate_rdma.py,
migration-bench.py and tests/guest/test_migration.py share its guest
script pieces (NET_UP, PEER_UP, SYNC_POINT, ...) and output readers.
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from rnic_guest import GUEST_DIR, Guest, GuestResult, HostSched, run_guests

TOP = Path(__file__).resolve().parents[2]
# where a persistent memory window's backing file goes unless a test names
# a directory: tmpfs where there is one (it outlives the QEMUs, and the
# msync() behind every persist costs no disk write: on the disk, a run
# with builds writing beside it waited ~0.4 s per FLUSH)
SCM_TMP = "/dev/shm" if os.path.isdir("/dev/shm") else None
PROVIDER_IMAGE = GUEST_DIR / "initramfs-provider.cpio.gz"

# (name, guest-1 command, guest-2 command, the guest running the tool server)
Step = Tuple[str, str, str, int]

DEVICE = {"rnic": "rnic0", "rxe": "rxe0"}

# The IPv4-mapped RoCE v2 GID (index 1) appears shortly after the address.
WAIT_GID = """
n=0
until grep -q ffff /sys/class/infiniband/{dev}/ports/1/gids/1 2>/dev/null; do
    n=$((n + 1)); [ $n -lt 100 ] || {{ echo "no IPv4 GID on {dev}"; exit 1; }}
    sleep 0.1
done
"""

NET_UP = {
    "rnic": """
modprobe rnic || exit 1
ip link set eth0 mtu {mtu}
ip link set eth0 up
ip addr add 10.0.0.{me}/24 dev eth0
""",
    "rxe": """
modprobe crc32_generic
modprobe rdma_rxe || exit 1
ip link set eth0 mtu {mtu}
ip link set eth0 up
ip addr add 10.0.0.{me}/24 dev eth0
rdma link add rxe0 type rxe netdev eth0 || exit 1
""",
}

PEER_UP = """
wait-ping 10.0.0.{peer} || exit 1
"""

SYNC_POINT = """
# sync_point N [MSG]: meet the other guest at point N (TCP port 7000 + N,
# guest 1 listening), hand it MSG and print what it handed over.
sync_point() {{
    if [ {me} = 1 ]; then
        echo "${{2:-x}}" | timeout {sync_timeout} nc -l -p $((7000 + $1))
    else
        n=0
        until r=$(echo "${{2:-x}}" | nc -w 2 10.0.0.1 $((7000 + $1)) 2>/dev/null); do
            n=$((n + 1)); [ $n -lt 1500 ] || return 1
            sleep 0.2
        done
        echo "$r"
    fi
}}
"""

LOCKSTEP = SYNC_POINT + """
# Listening endpoints: TCP (the tools' own exchange) and RDMA-CM ids.
listeners() {{
    {{ netstat -ltn 2>/dev/null | grep -c LISTEN
      rdma res show cm_id 2>/dev/null | grep -c LISTEN; }} | awk '{{ s += $1 }} END {{ print s }}'
}}
# A client attempt that failed because the server's CM rejected its connect
# (event 8, REJECTED: no listener). perftest -R, for one, listens twice: a
# connection to exchange parameters, then it closes its listener and opens
# it again for the test's own; a connect that overtakes the second listen
# is rejected, and the server, now past its first connection, cannot serve
# a new client. So the whole step runs again, server and client, twice at
# most. The tool's own crash on that error path (perftest faults in
# librdmacm) is written off; any other kernel message is still reported.
# The same for a perftest client that refused its own clock calibration
# ("Correlation coefficient r^2: 0.83 < 0.9": it times itself by the cycle
# counter, which a TCG vCPU on a loaded host can make disagree with the
# clock) and left its server waiting.
retryable() {{
    grep -qiE 'REJECTED|(event|status).* 8([^0-9]|$)|Correlation coefficient' /tmp/$1.out
}}
killtree() {{
    for c in $(ps -o pid,ppid | awk -v p=$1 '$2 == p {{ print $1 }}'); do
        killtree $c
    done
    kill $1 2>/dev/null
}}
excuse_dmesg() {{
    dmesg | tail -n +$(($1 + 1)) |
        grep -E '(general protection fault|segfault).* in librdmacm' >>/tmp/dmesg-excused
}}
step() {{  # number name role(srv|cli) command
    base=$(($1 * 8))
    sync_point $base >/dev/null
    try=0
    while :; do
        if [ $3 = srv ]; then
            before=$(listeners)
            timeout {tool_timeout} sh -c "$4" >/tmp/$2.out 2>&1 &
            pid=$!
            # the client may go once the server listens (30 s at most)
            w=0
            while [ "$(listeners)" -le "$before" ] && [ $w -lt 300 ] &&
                  kill -0 $pid 2>/dev/null; do
                sleep 0.1
                w=$((w + 1))
            done
            sleep 0.2
            sync_point $((base + 1 + 2 * try)) >/dev/null
            verdict=$(sync_point $((base + 2 + 2 * try)))
            if [ "$verdict" = retry ]; then
                killtree $pid
                wait $pid
            else
                wait $pid
                rc=$?
                break
            fi
        else
            sync_point $((base + 1 + 2 * try)) >/dev/null
            lines=$(dmesg | wc -l)
            timeout {tool_timeout} sh -c "$4" >/tmp/$2.out 2>&1
            rc=$?
            if [ $rc -ne 0 ] && [ $try -lt 2 ] && retryable $2; then
                excuse_dmesg $lines
                sync_point $((base + 2 + 2 * try)) retry >/dev/null
            else
                # (a client whose command saw its peer power off, and said
                # so in /tmp/peer-gone, has nobody left to meet)
                [ -e /tmp/peer-gone ] || sync_point $((base + 2 + 2 * try)) done >/dev/null
                break
            fi
        fi
        try=$((try + 1))
        echo "retry=$2:$try"
        sed "s/^/$2: (try $try) /" /tmp/$2.out
        sleep 1
    done
    echo "rc=$2:$rc"
    sed "s/^/$2: /" /tmp/$2.out
}}
"""

# Kernel log lines that must never appear, printed as 'dmesg-bad: ...'.
# When a bad line remains, the last 40 lines of the kernel log follow as
# "dmesg-tail:" (what reported it: a WARNING, an RCU stall, a hung task).
DMESG_CHECK = """
dmesg | grep -E 'WARNING:|BUG:|Call Trace|refcount_t|list_del corruption|general protection|Oops|segfault' |
    if [ -s /tmp/dmesg-excused ]; then grep -vxF -f /tmp/dmesg-excused; else cat; fi |
    sed 's/^/dmesg-bad: /' >/tmp/dmesg-bad
if [ -s /tmp/dmesg-bad ]; then
    cat /tmp/dmesg-bad
    dmesg | tail -n 40 | sed 's/^/dmesg-tail: /'
fi
"""

# the counters: the Ethernet function's view (ethtool -S), and the
# transport's under their Soft-RoCE/mlx5 names as `rdma statistic` shows them
# ("link rnic0/1 NAME VALUE NAME VALUE ...")
TRAILER = """
ethtool -S eth0 2>/dev/null | grep -E 'roce_|retrans' | tr -d ' ' | sed 's/^/stats: /'
rdma statistic show link rnic0/1 2>/dev/null | tr -s ' ' '\\n' |
    awk 'NR > 2 && NR % 2 == 1 { n = $0 } NR > 3 && NR % 2 == 0 { print "stats: " n ":" $0 }' |
    grep -E '^stats: (sent_pkts|rcvd_pkts|out_of_sequence|duplicate_request|out_of_buffer|packet_seq_err|rnr_nak_retry_err|local_ack_timeout_err|implied_nak_seq_err):' || true
""" + DMESG_CHECK


def lockstep_scripts(steps: Sequence[Step], kinds: Tuple[str, str], mtu: int = 1500,
                     tool_timeout: int = 120,
                     setup: Tuple[str, str] = ("", "")) -> Tuple[str, str]:
    """The two guest scripts running STEPS; SETUP: each guest's shell
    lines before its network comes up (e.g. modprobe rnic with options)."""
    scripts = []
    for me, peer in ((1, 2), (2, 1)):
        kind = kinds[me - 1]
        text = setup[me - 1] + NET_UP[kind].format(me=me, mtu=mtu) + PEER_UP.format(peer=peer)
        text += WAIT_GID.format(dev=DEVICE[kind])
        text += LOCKSTEP.format(me=me, tool_timeout=tool_timeout,
                                sync_timeout=tool_timeout + 300)
        for number, (name, cmd1, cmd2, server) in enumerate(steps):
            cmd = cmd1 if me == 1 else cmd2
            role = "srv" if server == me else "cli"
            text += f"step {number} {name} {role} '{cmd}'\n"
        scripts.append(text + TRAILER)
    return scripts[0], scripts[1]


def build_provider_image() -> bool:
    """scripts/guest/build-provider.sh --image (a no-op when up to date);
    False, with its output on stderr, if it failed."""
    build = subprocess.run([str(TOP / "scripts/guest/build-provider.sh"), "--image"],
                           capture_output=True, text=True, check=False)
    if build.returncode:
        sys.stderr.write(build.stdout + build.stderr)
    return build.returncode == 0


NETDEVS = ("stream", "dgram", "tcp", "tcp-nodelay")

# setsockopt() option that may exceed net.core.wmem_max (CAP_NET_ADMIN)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)


def socket_pair(sndbuf: int) -> Tuple[socket.socket, socket.socket]:
    """A connected unix stream socket pair whose ends each have a send
    buffer of SNDBUF bytes (the frames in flight plus the kernel's overhead
    for them): what net.core.wmem_default gives every socket QEMU makes
    (208 KiB on Debian). setsockopt() asks for half, the kernel doubles it;
    beyond net.core.wmem_max only as root (CAP_NET_ADMIN)."""
    pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for end in pair:
        try:
            end.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, sndbuf // 2)
        except PermissionError:
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf // 2)
    return pair


def tcp_pair() -> Tuple[socket.socket, socket.socket]:
    """Two ends of one TCP connection over the loopback interface, both
    with TCP_NODELAY: QEMU's -netdev stream turns Nagle off only on the
    side that connects (net/stream.c), so the listening side's small frames
    (an ACK, a READ response) wait for the previous one's ACK (the peer's
    delayed ACK: up to 40 ms). Handed to both QEMUs as addr.type=fd."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    for end in (server, client):
        end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return server, client


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pair_netdev(kind: str, tmp: str, me: int, nic: str, mac: str,
                fd: Optional[int] = None, port: int = 0) -> List[str]:
    """Guest ME's (1 or 2) end of the segment: KIND "stream" (one unix
    stream socket, guest 1 listening; or the connected socket FD),
    "dgram" (guest ME binds TMP/ME.sock and sends to the other's), "tcp"
    (QEMU's own TCP: guest 1 listens on 127.0.0.1:PORT, Nagle on there) or
    "tcp-nodelay" (FD: one end of tcp_pair), with NIC (rnic or rxe)."""
    if kind in ("stream", "tcp-nodelay") and fd is not None:
        netdev = f"stream,id=n0,server=off,addr.type=fd,addr.str={fd}"
    elif kind == "stream":
        netdev = f"stream,id=n0,addr.type=unix,addr.path={tmp}/segment.sock"
        netdev += ",server=on" if me == 1 else ",server=off,reconnect-ms=200"
    elif kind == "tcp":
        netdev = f"stream,id=n0,addr.type=inet,addr.host=127.0.0.1,addr.port={port}"
        netdev += ",server=on" if me == 1 else ",server=off,reconnect-ms=200"
    elif kind == "dgram":
        netdev = (f"dgram,id=n0,local.type=unix,local.path={tmp}/{me}.sock,"
                  f"remote.type=unix,remote.path={tmp}/{3 - me}.sock")
    else:
        raise ValueError(f"netdev kind {kind!r}: one of {', '.join(NETDEVS)}")
    device = "rnic" if nic == "rnic" else "virtio-net-pci,romfile="
    return ["-netdev", netdev, "-device", f"{device},netdev=n0,mac={mac}"]


def scm_window(args: List[str], tmp: str, me: int, mib: int) -> List[str]:
    """ARGS (pair_netdev's, the rnic device last) with a persistent memory
    window of MIB MiB on guest ME's rnic: a shared file backend in TMP
    (memory-backend-file share=on, what makes the window persist)."""
    if not mib:
        return args
    backend = (f"memory-backend-file,id=scm{me},size={mib}M,"
               f"mem-path={tmp}/scm{me}.img,share=on")
    return ["-object", backend] + args[:-1] + [f"{args[-1]},scm=scm{me}"]


def run_power_cut(guest, ready_timeout: float = 500, nic: str = "nic0"):
    """Launch GUEST (its rnic -device ...,id=NIC,scm-powerfail=on), cut the
    window's power (qom-set power-cut) once the guest prints
    POWER-CUT-READY, and wait for it. Returns (ready, the QMP answer or
    None, the GuestResult)."""
    guest.launch()
    try:
        ready = guest.wait_console(r"^POWER-CUT-READY", ready_timeout)
        cut = (guest.vm.qmp("qom-set", path=f"/machine/peripheral/{nic}",
                            property="power-cut", value=True) if ready else None)
    finally:
        result = guest.wait()
    return ready, cut, result


def run_pair(name: str, steps: Sequence[Step], kinds: Tuple[str, str] = ("rnic", "rnic"),
             mtu: int = 1500, qemu: Optional[str] = None,
             initrd: str = str(PROVIDER_IMAGE), timeout: float = 1500,
             tool_timeout: int = 120,
             log_dir: Optional[Path] = TOP / "build/guest-logs",
             sched: HostSched = HostSched(),
             netdev: str = "stream",
             sndbuf: Optional[int] = None,
             scm_mib: Tuple[int, int] = (0, 0),
             scm_dir: Optional[str] = None,
             setup: Tuple[str, str] = ("", ""),
             segment=None,
             extra_args: Tuple[Sequence[str], Sequence[str]] = ((), ())
             ) -> Tuple[GuestResult, GuestResult]:
    """Boot the two guests, run STEPS, return both results. The outputs are
    also kept in LOG_DIR/NAME-1.out and NAME-2.out. SCHED: host scheduling
    of both guests' QEMU threads (rnic_guest.HostSched); NETDEV: the
    segment's backend (pair_netdev); SNDBUF (stream only): connect the two
    QEMUs by a socket pair with this send buffer (socket_pair) instead of
    a listening unix socket. QEMU: the binary (default: $RNIC_QEMU or the
    project's build, as for one guest). SCM_MIB: per guest, a persistent
    memory window of that many MiB on its rnic (scm_window; 0: none), its
    backing file in SCM_DIR if given (it outlives the run: a restart on the
    same window), else in a temporary directory. SETUP: lockstep_scripts'.
    SEGMENT: instead of NETDEV, a started segment both guests join
    (linux_bridge.Bridge or .VxlanHosts: attach(nic, mac) gives a guest's
    QEMU arguments and the command its QEMU runs under). EXTRA_ARGS: more
    QEMU arguments per guest (e.g. -global rnic.max-qps=2)."""
    s1, s2 = lockstep_scripts(steps, kinds, mtu=mtu, tool_timeout=tool_timeout, setup=setup)
    if sndbuf is not None and netdev != "stream":
        raise ValueError("sndbuf: only with the stream netdev")
    pair = (socket_pair(sndbuf) if sndbuf is not None else
            tcp_pair() if netdev == "tcp-nodelay" else None)
    port = free_tcp_port() if netdev == "tcp" else 0
    try:
        with tempfile.TemporaryDirectory(prefix="rnic-pair-", dir=SCM_TMP) as tmp:
            guests = []
            for me, script, mac in ((1, s1, "52:54:00:00:02:01"),
                                    (2, s2, "52:54:00:00:02:02")):
                fd = pair[me - 1].fileno() if pair else None
                net, wrapper = (segment.attach(kinds[me - 1], mac) if segment else
                                (pair_netdev(netdev, tmp, me, kinds[me - 1], mac, fd, port), []))
                guests.append(Guest(
                    script, name=f"{name}-{me}", qemu=qemu, initrd=initrd,
                    timeout=timeout, sched=sched,
                    args=(scm_window(net, scm_dir or tmp, me, scm_mib[me - 1]) +
                          list(extra_args[me - 1])),
                    pass_fds=[fd] if fd is not None else [],
                    wrapper=wrapper))
            r1, r2 = run_guests(guests)
    finally:
        for end in pair or ():
            end.close()
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
        for number, result in ((1, r1), (2, r2)):
            (log_dir / f"{name}-{number}.out").write_text(result.output)
    return r1, r2


# ---------------------------------------------------------------------------
# Reading the outputs

def rc_lines(output: str) -> Dict[str, List[int]]:
    """'rc=NAME:STATUS[:STATUS]' lines -> {NAME: [STATUS, ...]}."""
    return {m.group(1): [int(x) for x in m.group(2).split(":")]
            for m in re.finditer(r"^rc=([\w.-]+):([\d:]+)\s*$", output, re.MULTILINE)}


def lines_of(output: str, name: str) -> str:
    """The tool output of NAME (lines prefixed 'NAME: ' or 'NAME srv|cli: ')."""
    return "\n".join(m.group(1) for m in
                     re.finditer(rf"^{re.escape(name)}(?: srv| cli)?: (.*)$", output,
                                 re.MULTILINE))


def assert_clean_dmesg(output: str) -> None:
    bad = [line for line in output.splitlines() if line.startswith("dmesg-bad:")]
    tail = [line for line in output.splitlines() if line.startswith("dmesg-tail:")]
    assert not bad, "kernel log has warnings:\n" + "\n".join(bad + tail)


def stat(output: str, counter: str) -> Optional[int]:
    match = re.search(rf"^stats: {re.escape(counter)}:(\d+)", output, re.MULTILINE)
    return int(match.group(1)) if match else None


def perftest_figure(text: str) -> Tuple[str, float]:
    """('MiB/s', average) or ('usec', typical) from a perftest result table."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if i + 1 >= len(lines):
            break
        cols = lines[i + 1].split()
        if "BW average" in line and len(cols) >= 4:
            return "MiB/s", float(cols[3])
        if "t_typical" in line and len(cols) >= 5:
            return "usec", float(cols[4])
    raise ValueError(f"no perftest result table in:\n{text}")


def pingpong_figure(text: str) -> float:
    match = re.search(r"iters in [\d.]+ seconds = ([\d.]+) usec/iter", text)
    if not match:
        raise ValueError(f"no pingpong result in:\n{text}")
    return float(match.group(1))


def tool_figure(name: str, outputs: Sequence[str]) -> Tuple[str, float]:
    """The figure tool NAME printed on one of the guests (a perftest server
    of an RDMA READ/WRITE test prints none); rping: the pings it verified."""
    for out in outputs:
        text = lines_of(out, name)
        if "usec/iter" in text:
            return "usec/iter", pingpong_figure(text)
        if "ping data" in text:
            return "pings", float(len(re.findall(r"ping data: rdma-ping-\d+", text)))
        if "BW average" in text or "t_typical" in text:
            return perftest_figure(text)
    raise ValueError(f"{name}: no result printed:\n" +
                     "\n".join(lines_of(out, name) for out in outputs))
