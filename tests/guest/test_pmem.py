# SPDX-License-Identifier: GPL-2.0-or-later
"""Guest tests of persistent memory over rnic with librpma (issue: storage-
class memory, item 5): the memory window as device-DAX (rnic.ko
window_pmem=1, ndctl) and Debian trixie's librpma 1.3.0 driving it.

They boot build/guest/initramfs-pmem.cpio.gz (scripts/guest/build-pmem.sh:
the provider image plus librpma, libpmem, ndctl and tests/guest/pmem/'s
rnic_rpma); the first test that needs it builds it.

  pmem-librpma   two guests: guest 1's rnic has a 64 MiB persistent window
                 (a shared memory-backend-file), offered as an nvdimm
                 region and made device-DAX by ndctl; rnic_rpma's server
                 maps /dev/dax0.0 with libpmem and registers it with
                 librpma (the driver registers the mapping as the window
                 range it is: kind SCM, its key DURABLE). Guest 2's client
                 measures WRITE, WRITE + native FLUSH(persistence) and
                 WRITE + GPSPM (QD1, 64 B and 4 KiB), then writes a
                 pattern, flushes, ATOMIC WRITEs and reads it all back.
                 Both QEMUs stop; two new ones start on the same window
                 file: the namespace is device-DAX again without ndctl
                 (its info block persisted) and the server finds the
                 client's pattern and atomic word before it serves again.
  pmem-librpma-rxe
                 the same server, the client on Soft-RoCE (rdma_rxe in the
                 other guest): librpma's native FLUSH from rxe (rnic takes
                 rxe 6.12's ICRC of a FLUSH), the check and the benchmark.
  pmem-window-small
                 window_pmem=1 with a window of 4 MiB (16 at least): the
                 region is refused with a message, the RDMA device works
  pmem-powercut  the window as a raw /dev/pmem0 with scm-powerfail=on: a
                 block written and fsync()ed (a PREFLUSH: the region's flush,
                 SCM_PERSIST of the window) survives qom-set power-cut, a
                 block written with O_DIRECT and never flushed does not.
"""

import re
import tempfile
from typing import Sequence

from guesttest import TOP, GuestResult, build_once, case, procedure
from pmem_pair import bench_client, bench_figures, pmem_setup, server
from rdma_pair import (DMESG_CHECK, SCM_TMP, Step, assert_clean_dmesg, lines_of, rc_lines,
                       run_pair, run_power_cut, stat)
from rnic_guest import GUEST_DIR, Guest

IMAGE = GUEST_DIR / "initramfs-pmem.cpio.gz"
BUILD_PMEM = TOP / "scripts/guest/build-pmem.sh"


def pmem_image() -> str:
    """scripts/guest/build-pmem.sh, once per run."""
    build_once(str(BUILD_PMEM))
    return str(IMAGE)


REGION = 4 << 20                  # bytes the server registers after its header
SEED = 4242

FIRST: Sequence[Step] = (
    ("rpma-bench", server(REGION), bench_client(400), 1),
    ("rpma-check", server(REGION), f"rnic_rpma -c 10.0.0.1 -t check -v {SEED}", 1),
)
# after the restart: the server checks the window before it serves
SECOND: Sequence[Step] = (
    ("rpma-verify", server(REGION, f"-v {SEED}"),
     f"rnic_rpma -c 10.0.0.1 -t check -v {SEED + 1}", 1),
)


def check_ran(out: str, names: Sequence[str]) -> None:
    rcs = rc_lines(out)
    for name in names:
        assert name in rcs, f"{name} did not run:\n{out}"
        assert all(rc == 0 for rc in rcs[name]), f"{name} exited {rcs[name]}:\n{lines_of(out, name)}"


@procedure("pmem-librpma", requires=["rnic"])
def pmem_librpma(qemu: str) -> None:
    image = pmem_image()
    with tempfile.TemporaryDirectory(prefix="rnic-pmem-", dir=SCM_TMP) as scm_dir:
        results = []
        # the second boot: every window STag's key PLAIN (dm_sem=0), so
        # what persists is what the FLUSHes covered
        for name, steps, options in (("pmem-librpma", FIRST, ""),
                                     ("pmem-librpma-restart", SECOND, "dm_sem=0")):
            r1, r2 = run_pair(name, steps, qemu=qemu, initrd=image, scm_mib=(64, 0),
                              scm_dir=scm_dir, setup=(pmem_setup(options), ""))
            for result in (r1, r2):
                assert result.ok, result.report()
                assert_clean_dmesg(result.output)
            assert stat(r1.output, "roce_tx_frames"), "no RoCE frames: no wire path?"
            for out in (r1.output, r2.output):
                check_ran(out, [s[0] for s in steps])
            results.append((r1.output, r2.output))

    (s1, c1), (s2, c2) = results
    # boot 1 made the namespace; boot 2 found it device-DAX on the window
    assert "pmem: created" in s1, lines_of(s1, "pmem")
    assert "pmem: created" not in s2, lines_of(s2, "pmem")
    assert '"mode":"devdax"' in lines_of(s2, "pmem"), lines_of(s2, "pmem")
    # librpma saw pmem and used the native FLUSH with persistence
    for out in (c1, c2):
        assert "direct write to pmem 1, flush persistent" in out, out
    assert re.search(r"rpma-check: server: /dev/dax0.0, \d+ bytes mapped, is_pmem 1", s1), s1
    # the driver registered the mapping as the window (kind SCM), DURABLE
    # key; PLAIN with dm_sem=0
    for out, name, sem in ((s1, "rpma-check", 1), (s2, "rpma-verify", 0)):
        assert re.search(rf"{name}: window-mr: .*user MR 0x[0-9a-f]+\+\d+ on window "
                         rf"0x[0-9a-f]+, semantic {sem}$", out, re.MULTILINE), out
    assert "rpma-check: check: ok" in c1, lines_of(c1, "rpma-check")
    assert "rpma-verify: check: ok" in c2, lines_of(c2, "rpma-verify")
    # after the restart, before serving: every word and the atomic one
    assert re.search(rf"rpma-verify: server: verify seed {SEED}: 0 of {REGION // 8} words differ",
                     s2), lines_of(s2, "rpma-verify")
    report_bench("pmem-librpma", c1)


def report_bench(label: str, client_out: str) -> None:
    """The client's six figures as TAP comments, with the ratios the issue
    names (docs/benchmarks.md has the reference runs)."""
    figures = bench_figures(client_out)
    assert len(figures) == 6, lines_of(client_out, "rpma-bench")
    for size, mode, ops, med, p99 in figures:
        print(f"# {label} {size} B {mode}: {ops} ops/s, median {med:g} us, "
              f"p99 {p99:g} us", flush=True)
    for size in (64, 4096):
        by_mode = {mode: ops for b, mode, ops, _, _ in figures if b == size}
        print(f"# {label} {size} B: durable-key WRITE / WRITE+FLUSH "
              f"{by_mode['write'] / by_mode['write+flush']:.2f}x, / GPSPM "
              f"{by_mode['write'] / by_mode['write+gpspm']:.2f}x", flush=True)


@procedure("pmem-librpma-rxe", requires=["rnic", "virtio-net-pci"])
def pmem_librpma_rxe(qemu: str) -> None:
    image = pmem_image()
    with tempfile.TemporaryDirectory(prefix="rnic-pmem-", dir=SCM_TMP) as scm_dir:
        r1, r2 = run_pair("pmem-librpma-rxe", FIRST, kinds=("rnic", "rxe"), qemu=qemu,
                          initrd=image, scm_mib=(64, 0), scm_dir=scm_dir,
                          setup=(pmem_setup(), ""))
    for result in (r1, r2):
        assert result.ok, result.report()
        assert_clean_dmesg(result.output)
    for out in (r1.output, r2.output):
        check_ran(out, [s[0] for s in FIRST])
    assert "direct write to pmem 1, flush persistent" in r2.output, r2.output
    assert "rpma-check: check: ok" in r2.output, lines_of(r2.output, "rpma-check")
    assert stat(r1.output, "roce_rx_err_icrc") == 0, stat(r1.output, "roce_rx_err_icrc")
    report_bench("pmem-librpma-rxe", r2.output)


# One guest, raw namespace (/dev/pmem0): block 0 through the page cache and
# fsync (blkdev_issue_flush: a PREFLUSH bio, nvdimm_flush(), the driver's
# SCM_PERSIST), block 1 with O_DIRECT only (pmem's memcpy, no flush). After
# POWER-CUT-READY the host cuts the power; the guest waits for block 1 to
# roll back, then shows both.
POWERCUT_SCRIPT = """
modprobe nd_pmem
modprobe rnic window_pmem=1 || exit 1
cat /sys/bus/nd/devices/ndbus0/wait_probe >/dev/null
[ -b /dev/pmem0 ] || { echo "no /dev/pmem0"; exit 1; }
yes SYNCED | head -c 4096 >/tmp/a
yes LOSTXX | head -c 4096 >/tmp/b
dd if=/tmp/a of=/dev/pmem0 bs=4096 count=1 conv=fsync 2>/dev/null || exit 1
dd if=/tmp/b of=/dev/pmem0 bs=4096 seek=1 count=1 oflag=direct 2>/dev/null || exit 1
block() { dd if=/dev/pmem0 bs=4096 skip=$1 count=1 iflag=direct 2>/dev/null | head -c 6; }
echo "before: $(block 0) $(block 1)"
echo POWER-CUT-READY
n=0
until [ "$(block 1)" != LOSTXX ]; do
    n=$((n + 1)); [ $n -lt 300 ] || { echo "block 1 never rolled back"; exit 1; }
    sleep 0.2
done
echo "after: $(block 0) $(block 1 | tr -d '\\000')."
""" + DMESG_CHECK


@procedure("pmem-powercut", requires=["rnic"])
def pmem_powercut(qemu: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rnic-pmem-", dir=SCM_TMP) as tmp:
        args = ["-object", f"memory-backend-file,id=scm0,size=64M,mem-path={tmp}/scm.img,share=on",
                "-netdev", "user,id=n0", "-device", "rnic,id=nic0,netdev=n0,scm=scm0,scm-powerfail=on"]
        ready, cut, result = run_power_cut(
            Guest(POWERCUT_SCRIPT, name="pmem-powercut", qemu=qemu, initrd=pmem_image(),
                  timeout=300, args=args), ready_timeout=200)
    assert ready, "the guest never got ready for the power cut:\n" + result.report()
    assert cut is not None and "error" not in cut, f"qom-set power-cut: {cut}"
    assert result.ok, result.report()
    out = result.output
    assert_clean_dmesg(out)
    assert re.search(r"^before: SYNCED LOSTXX$", out, re.MULTILINE), out
    assert re.search(r"^after: SYNCED \.$", out, re.MULTILINE), out


SMALL_SCRIPT = """
modprobe nd_pmem
modprobe rnic window_pmem=1 || exit 1
n=0; until [ -e /sys/class/infiniband/rnic0 ] || [ $n -ge 50 ]; do sleep 0.1; n=$((n+1)); done
echo "ib_devices=$(ls /sys/class/infiniband | tr '\\n' ' ')"
echo "nd_regions=$(ls /sys/bus/nd/devices 2>/dev/null | grep -c region)"
dmesg | grep window_pmem | sed 's/^/dmesg: /'
""" + DMESG_CHECK


def check_small(result: GuestResult) -> None:
    out = result.output
    assert_clean_dmesg(out)
    assert "window_pmem: a window of 4096 KiB is too small (16 MiB at least)" in out, out
    assert "window_pmem: no nvdimm region (-22): the window is not used" in out, out
    assert re.search(r"^ib_devices=rnic0 $", out, re.MULTILINE), out
    assert re.search(r"^nd_regions=0$", out, re.MULTILINE), out


case("pmem-window-small", ["-object", "memory-backend-ram,id=scm0,size=4M",
                           "-device", "rnic,scm=scm0"], lambda: SMALL_SCRIPT,
     check_small, requires=["rnic"], initrd=pmem_image, timeout=180)

