# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tests of apps/cbrpc, the call-by-reference RPC library (docs/cbrpc.md).

They boot the provider image (scripts/guest/build-provider.sh --image, which
builds apps/cbrpc against the guest's rdma-core and installs libcbrpc and
its programs) and run cbrpc_test (apps/cbrpc/tests/cbrpc_test.c): the
client in the test process, its servers as child processes, all in one
guest over the device's loopback path.

  cbrpc-loopback-rnic   cbrpc_test over rnic0 (-device rnic)
  cbrpc-loopback-rxe    the same over Soft-RoCE (rdma_rxe on virtio-net)
  cbrpc-kv-two-guests   cbrpc-kv between two guests (rnic <-> rnic over the
                        RoCEv2 wire): put by reference, get into the
                        client's heap, a 300 KB value, delete, missing keys,
                        'check 200' (200 keys of 1 B to 256 KiB read back);
                        then cbrpc-bench --quick (by reference against by
                        value, every reply checked; its targets printed)
  cbrpc-kv-rxe          the same with the client on Soft-RoCE, the server
                        on rnic
  cbrpc-server-vanishes the server's guest powers off (no disconnect, no
                        process exit) while a call waits without a timeout:
                        the client's keepalive READ fails and the call ends
                        with CBRPC_EDISCONNECTED
  cbrpc-chain-three     a chained call across three guests on a Linux
                        bridge: the client (rnic, 10.0.0.1) calls server A
                        (rnic, 10.0.0.2), which forwards the handle to
                        server B (Soft-RoCE, 10.0.0.3); B reads the client's
                        memory itself, over its own session with the client,
                        and writes a result into it;
                        plus cbrpc_test's remote-capable tests against A

Every test of cbrpc_test must print 'ok NAME': inline arguments, the
version cache (an unchanged argument is not read again, a changed one is),
a sparse read of a 1 MiB argument, 1 MiB ranges of a 12 MiB argument
too large for the server's cache, results written into the client's heap,
outstanding calls up to the session depth, calls from several threads
(one of them growing a heap meanwhile),
several sessions per server, out-of-bounds and forged handles refused
before any READ, slices (part of an object, fewer rights), a READ the
client's device refuses (region registered again behind the library), heap growth, stale versions, a chained call (the second
server reads the client's memory) and forwarding refusals, call timeouts,
a heap withdrawn mid-call, a client disconnecting mid-call, a client
killed while the server reads its memory, a server killed mid-call, a
refused connection, and malformed connect requests and messages from a
raw RDMA-CM peer (error replies, the server keeps serving).
"""

import re
from typing import Sequence, Tuple

from guesttest import GuestResult, Skip, case, procedure
from linux_bridge import Bridge, can_run
from rdma_pair import (DEVICE, DMESG_CHECK, NET_UP, WAIT_GID, Step, assert_clean_dmesg,
                       lines_of, rc_lines, run_pair)
from rnic_guest import Guest, run_guests
from test_provider import provider_image

TESTS = ("connect", "inline", "value-arguments", "version-cache", "sparse-read", "large-argument",
         "write-results", "outstanding-calls", "threads", "sessions", "bounds", "slices",
         "remote-access-error", "heap-growth", "stale-version", "chained-call", "call-timeout",
         "heap-destroy-mid-call", "client-disconnect-mid-call", "client-dies-mid-call",
         "server-dies", "server-stops", "spinning", "connect-refused", "malformed-input")

RUN = """
timeout 600 cbrpc_test -d {dev} -a 10.0.0.1 2>&1
echo "rc=cbrpc:$?"
""" + DMESG_CHECK

def loopback_script(kind: str) -> str:
    """One guest on KIND's device (rdma_pair.NET_UP) running cbrpc_test."""
    return (NET_UP[kind].format(me=1, mtu=1500) + WAIT_GID.format(dev=DEVICE[kind])
            + RUN.format(dev=DEVICE[kind]))


def check_cbrpc(result: GuestResult) -> None:
    out = result.output
    assert_clean_dmesg(out)
    failed = re.findall(r"^FAIL .*$", out, re.MULTILINE)
    assert not failed, "\n".join(failed) + "\n" + out
    for name in TESTS:
        assert re.search(rf"^ok {re.escape(name)}$", out, re.MULTILINE), \
            f"no 'ok {name}' in:\n{out}"
    summary = re.search(r"^cbrpc_test: (\d+) passed, (\d+) failed \((\d+) ms\)$", out,
                        re.MULTILINE)
    assert summary and int(summary.group(1)) == len(TESTS) and summary.group(2) == "0", out
    assert rc_lines(out).get("cbrpc") == [0], out
    figures = r"^# (?:version-cache|sparse-read|client-dies-mid-call|server-dies): (?!\d+ ms$).*$"
    for line in re.findall(figures, out, re.MULTILINE):
        print(f"# {result.name}: {line[2:]}", flush=True)
    print(f"# {result.name}: {summary.group(1)} tests passed in {summary.group(3)} ms",
          flush=True)


case("cbrpc-loopback-rnic", ["-device", "rnic"], lambda: loopback_script("rnic"), check_cbrpc,
     requires=["rnic"], initrd=provider_image, timeout=700)

case("cbrpc-loopback-rxe",
     ["-netdev", "hubport,id=n0,hubid=0", "-device", "virtio-net-pci,romfile=,netdev=n0"],
     lambda: loopback_script("rxe"), check_cbrpc, requires=["virtio-net-pci"], initrd=provider_image,
     timeout=700)


# ---------------------------------------------------------------------------
# Two guests: the key-value store, server on guest 1 (10.0.0.1)

KV_CLIENT = (
    'K="cbrpc-kv -d {dev} -a 10.0.0.1"; '
    '$K put hello world; echo "kv-rc=put:$?"; '
    'echo "kv-value=$($K get hello)"; '
    '$K get missing; echo "kv-rc=get-missing:$?"; '
    'head -c 300000 /dev/urandom >/tmp/big; $K put-file big /tmp/big; echo "kv-rc=put-file:$?"; '
    '$K get big >/tmp/big.back; echo "kv-rc=get-big:$?"; '
    'cmp /tmp/big /tmp/big.back; echo "kv-rc=cmp:$?"; '
    '$K del hello; echo "kv-rc=del:$?"; '
    '$K get hello; echo "kv-rc=get-deleted:$?"; '
    '$K check 200; echo "kv-rc=check:$?"; '
    '$K shutdown; echo "kv-rc=shutdown:$?"')

KV_WANT = {"put": 0, "get-missing": 3, "put-file": 0, "get-big": 0, "cmp": 0, "del": 0,
           "get-deleted": 3, "check": 0, "shutdown": 0}


def kv_steps(server_dev: str, client_dev: str, bench: bool) -> Sequence[Step]:
    steps = [("kv", f"cbrpc-kv server -d {server_dev} -a 10.0.0.1",
              KV_CLIENT.format(dev=client_dev), 1)]
    if bench:
        # cbrpc-bench --quick: every call's reply checked against its argument
        steps.append(("bench", f"cbrpc-bench server -d {server_dev} -a 10.0.0.1",
                      f"cbrpc-bench client -d {client_dev} -a 10.0.0.1 --quick", 1))
    return steps


BENCH_ROWS = ("null RPC latency", "null RPC rate, 16 in flight", "sparse: 64 B of 1 MiB",
              "unchanged 1 MiB", "chained 1 MiB (A -> B)")


def check_bench(name: str, r1: GuestResult, r2: GuestResult) -> None:
    """cbrpc-bench --quick ran to its end on both sides; its rows printed."""
    client = lines_of(r2.output, "bench")
    assert rc_lines(r1.output).get("bench") == [0], lines_of(r1.output, "bench")
    assert rc_lines(r2.output).get("bench") == [0], client
    for row in BENCH_ROWS:
        assert re.search(rf"^{re.escape(row)} +[\d-]", client, re.MULTILINE), \
            f"no row {row!r} in:\n{client}"
    assert re.search(r"^cbrpc-bench: done$", client, re.MULTILINE), client
    for line in client.splitlines():
        if line.startswith(("target", "chained")):
            print(f"# {name}: {line}", flush=True)


def check_kv_pair(name: str, kinds: Tuple[str, str], qemu: str, bench: bool = False) -> None:
    r1, r2 = run_pair(name, kv_steps(DEVICE[kinds[0]], DEVICE[kinds[1]], bench), kinds=kinds,
                      qemu=qemu, initrd=provider_image(), timeout=900)
    for result in (r1, r2):
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    assert rc_lines(r1.output).get("kv") == [0], lines_of(r1.output, "kv")
    client = lines_of(r2.output, "kv")
    assert rc_lines(r2.output).get("kv") == [0], client
    got = dict(re.findall(r"^kv-rc=([\w-]+):(\d+)$", client, re.MULTILINE))
    for step, want in KV_WANT.items():
        assert got.get(step) == str(want), f"{step}: exit {got.get(step)}, want {want}:\n{client}"
    assert re.search(r"^kv-value=world$", client, re.MULTILINE), client
    assert re.search(r"^kv-check: 200 keys, 0 mismatches$", client, re.MULTILINE), client
    print(f"# {name}: put/get/del, a 300 KB value and 200 checked keys over "
          f"{kinds[1]} -> {kinds[0]}", flush=True)
    if bench:
        check_bench(name, r1, r2)


@procedure("cbrpc-kv-two-guests", requires=["rnic"])
def kv_two_guests(qemu: str) -> None:
    check_kv_pair("cbrpc-kv-two-guests", ("rnic", "rnic"), qemu, bench=True)


@procedure("cbrpc-kv-rxe", requires=["rnic", "virtio-net-pci"])
def kv_rxe(qemu: str) -> None:
    check_kv_pair("cbrpc-kv-rxe", ("rnic", "rxe"), qemu)


# ---------------------------------------------------------------------------
# Three guests: a chained call whose second server reads the client directly

CHAIN_TESTS = ("inline", "version-cache", "sparse-read", "write-results", "sessions",
               "bounds", "slices", "stale-version", "chained-call")
CHAIN_KINDS = ("rnic", "rnic", "rxe")      # client, server A, server B
# every guest reaches the other two before the test (the servers' guests
# may boot later than the client's); the neighbour tables at the end
CHAIN_REACH = """
for h in 1 2 3; do
    [ $h = {me} ] && continue
    n=0
    until ping -c 1 -W 1 10.0.0.$h >/dev/null 2>&1; do
        n=$((n + 1)); [ $n -lt 90 ] || {{ echo "10.0.0.$h unreachable"; break; }}
    done
done
"""
CHAIN_NEIGH = """
ip neigh show dev eth0 | sed 's/^/neigh: /'
"""
CHAIN_CLIENT = """
CBRPC_DEBUG=1 timeout 200 cbrpc_test --remote 10.0.0.2 10.0.0.3 -d rnic0 {tests} 2>&1
echo "rc=cbrpc:$?"
"""
CHAIN_SERVER = """
CBRPC_DEBUG=1 timeout 240 cbrpc_test --server {port} -d {dev} -a 10.0.0.{me} 2>&1
echo "rc=server:$?"
"""


@procedure("cbrpc-chain-three", requires=["rnic", "virtio-net-pci"], guests=3)
def chain_three(qemu: str) -> None:
    why = can_run()
    if why:
        raise Skip(why)
    image = provider_image()
    with Bridge() as bridge:
        guests = []
        for me, kind in enumerate(CHAIN_KINDS, start=1):
            args, wrapper = bridge.attach(kind, f"52:54:00:00:04:0{me}")
            script = NET_UP[kind].format(me=me, mtu=1500) + WAIT_GID.format(dev=DEVICE[kind])
            script += CHAIN_REACH.format(me=me)
            script += (CHAIN_CLIENT.format(tests=" ".join(CHAIN_TESTS)) if me == 1 else
                       CHAIN_SERVER.format(port=7471 + me - 2, dev=DEVICE[kind], me=me))
            script += CHAIN_NEIGH
            guests.append(Guest(script + DMESG_CHECK, name=f"cbrpc-chain-three-{me}",
                                qemu=qemu, initrd=image, timeout=500, args=args,
                                wrapper=wrapper))
        results = run_guests(guests)
    for result in results:
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    out = results[0].output
    every = "\n".join(f"--- {r.name} ---\n{r.output}" for r in results)
    failed = re.findall(r"^FAIL .*$", out, re.MULTILINE)
    assert not failed, "\n".join(failed) + "\n" + every
    for name in ("connect",) + CHAIN_TESTS:
        assert re.search(rf"^ok {re.escape(name)}$", out, re.MULTILINE), \
            f"no 'ok {name}' in:\n{out}"
    assert rc_lines(out).get("cbrpc") == [0], out
    for server in results[1:]:
        assert rc_lines(server.output).get("server") == [0], server.output
    print(f"# cbrpc-chain-three: {len(CHAIN_TESTS) + 1} tests; client rnic, server A rnic, "
          "server B Soft-RoCE reading and writing the client's memory", flush=True)


# ---------------------------------------------------------------------------
# The server's machine vanishes: guest 2 powers off at once (sysrq o: no
# process exits, no QP is destroyed, nobody sends a disconnect) while guest
# 1 waits, without a timeout, for a call the handler sleeps a minute in.
# Only the keepalive (an RDMA READ of the server's keepalive word when the
# server has been silent for a second) can end that wait.
# The server's guest powers off only once the client says its call is
# outstanding (TCP 7460, the client listening: a listener on guest 2 would
# count as the server's in rdma_pair's wait for it), not after a fixed
# time: on a loaded host the client may not have connected yet (it took
# up to 19 s). It waits for that VANISH_WAIT s at most, then prints on its
# console 'PEER-CALL seen|none: ...' with its rnic's receive counter, and
# powers off either way ('none': the call never started, so the client's
# failure is not one to notice the server's death).
VANISH_WAIT = 180
UPTIME = "$(cut -d. -f1 /proc/uptime)"
RCVD_PKTS = "$(cat /sys/class/infiniband/rnic0/ports/1/hw_counters/rcvd_pkts)"
VANISH_PEER = ("cbrpc_test --server 7471 -d rnic0 -a 10.0.0.2 & "
               f"t0={UPTIME}; before={RCVD_PKTS}; seen=none; "
               f"until [ $(({UPTIME} - t0)) -ge {VANISH_WAIT} ]; do "
               "[ \"$(nc 10.0.0.1 7460 </dev/null 2>/dev/null)\" = outstanding ] && "
               "{ seen=seen; break; }; sleep 0.2; done; "
               "echo \"PEER-CALL $seen: the client said its call is outstanding after "
               f"$(({UPTIME} - t0)) s (at most {VANISH_WAIT} s); "
               f"rcvd_pkts $before -> {RCVD_PKTS}\" >/dev/console; "
               "echo PEER-POWERING-OFF >/dev/console; echo o >/proc/sysrq-trigger; sleep 30")
# (its own bound: a wait that does not end is cut at 200 s, status 124, and
# the survivor still leaves the step without meeting its dead peer). It
# tells the server's guest once its call is outstanding.
VANISH_SURVIVOR = ("timeout 200 cbrpc_test --vanish 10.0.0.2 -d rnic0 >/tmp/vanish-log 2>&1 & "
                   "pid=$!; until grep -q \"call outstanding\" /tmp/vanish-log || "
                   "! kill -0 $pid 2>/dev/null; do sleep 0.2; done; "
                   "grep -q \"call outstanding\" /tmp/vanish-log && "
                   "echo outstanding | timeout 60 nc -l -p 7460; "
                   "wait $pid; echo survivor_rc=$?; cat /tmp/vanish-log; touch /tmp/peer-gone")


@procedure("cbrpc-server-vanishes", requires=["rnic"])
def server_vanishes(qemu: str) -> None:
    steps = [("vanish", VANISH_SURVIVOR, VANISH_PEER, 2)]
    r1, r2 = run_pair("cbrpc-server-vanishes", steps, qemu=qemu, initrd=provider_image(),
                      timeout=900, tool_timeout=260)
    out = lines_of(r1.output, "vanish")
    call = re.search(r"^PEER-CALL (seen|none): (.*?)\s*$", r2.console, re.MULTILINE)
    # (no line: the server's guest never came to its wait, e.g. it did not boot)
    assert call, ("the server's guest never waited for the client's call (no PEER-CALL line)\n"
                  + r1.report() + r2.report())
    evidence = call.group(2)
    if call.group(1) != "seen":
        raise AssertionError(
            f"the client's call never became outstanding before the server's guest powered "
            f"off (server: {evidence}): a failure to start, not a failure to notice the "
            f"server's death\n{out}\n" + r1.report() + r2.report())
    died = f"the server's guest powered off once the call was outstanding ({evidence})"
    assert r1.ok, f"{died}; the client's guest failed\n" + r1.report()
    assert_clean_dmesg(r1.output)
    assert "PEER-POWERING-OFF" in r2.console, r2.report()
    assert "vanish: call outstanding" in out, out
    assert not re.search(r"^survivor_rc=(124|143)$", out, re.MULTILINE), \
        "the call did not end by itself: the client did not notice the server's death; " \
        f"{died}:\n{out}"
    ended = re.search(r"^vanish: (-?\d+) \((.*)\) after (\d+) ms$", out, re.MULTILINE)
    assert ended, out
    assert int(ended.group(1)) == -5, f"the call ended with {ended.group(2)}:\n{out}"
    assert re.search(r"^survivor_rc=0$", out, re.MULTILINE), out
    print(f"# cbrpc-server-vanishes: the outstanding call ended {ended.group(3)} ms after "
          f"it began ({ended.group(2)}); the server's guest powered off once the client "
          f"said the call was outstanding: {evidence}", flush=True)
