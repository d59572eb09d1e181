# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel storage protocols between two guests (issue 20 item 4): NFS over
RDMA, iSER and SRP, unmodified Debian modules and trixie's userspace, on
the storage image (scripts/guest/build-storage.sh). Guest 1 is the target
(10.0.0.1), guest 2 the initiator (10.0.0.2, always rnic0: the
registrations are counted there).

  storage-nfs-rdma    nfsd with svcrdma (rdma 20049 in /proc/fs/nfsd/portlist)
                      exporting a tmpfs, the client mounts it with
                      rdma,port=20049,vers=4.2; fio writes a file with
                      O_DIRECT at unaligned offsets and lengths (2000-6000
                      bytes; vsync joins 8 adjacent I/Os into one writev /
                      readv whose iovecs lie max_bs apart: gapped), reads it
                      back checking each block (crc32c, --verify_only), then
                      a timed sequential read of the same shape; the file's
                      MD5 on the client and on the server match; a READDIR
                      of 400 long names (a Reply chunk: head + pages, a
                      scatterlist with a gap) with its registrations counted
  storage-iser        LIO iSCSI target (configfs) with a fileio backstore on
                      tmpfs and iser enabled on the portal; open-iscsi's
                      iscsiadm with iface.transport_name=iser logs in; fio as
                      above on the SCSI disk (512-byte multiples up to 7680),
                      the disk's MD5 on the initiator equals its backing
                      file's
  storage-srp         ib_srpt (LIO configfs, RDMA/CM port 5555), ib_srp
                      logs in with add_target (id_ext, ioc_guid from the
                      target, dest=10.0.0.1:5555); fio and MD5 as for iSER
  storage-*-rxe       the same with the target on Soft-RoCE (rdma_rxe over
                      virtio-net): rnic initiator -> rxe target

Each initiator counts its registrations with a kprobe on ib_map_mr_sg (the
FRWR path of xprtrdma, iSER and SRP maps each MR once and posts one
IB_WR_REG_MR for it) and the device's executed work requests (ethtool -S
wqes) over the verified pass and the timed read, and prints them per fio
I/O.

RNIC_STORAGE_SG_GAPS=0 loads the initiator's rnic.ko with sg_gaps=0: the
device's mapped STags are not offered as IBK_SG_GAPS_REG, the ULPs take
their page-list FRWR paths (one MR per gap-free run, or a virt_boundary
that splits the I/O), for the before/after figures
(scripts/guest/storage-bench.py runs both).
"""

import json
import os
import re
import sys
import tempfile
from typing import Dict, Optional, Tuple

from guesttest import TOP, build_once, procedure
from rnic_guest import GUEST_DIR, Guest, GuestResult, run_guests

sys.path.insert(0, str(TOP / "scripts/guest"))
from rdma_pair import SYNC_POINT, pair_netdev  # noqa: E402

IMAGE = GUEST_DIR / "initramfs-storage.cpio.gz"
BUILD = TOP / "scripts/guest/build-storage.sh"


def storage_image() -> str:
    """scripts/guest/build-storage.sh, once per run."""
    build_once(str(BUILD))
    return str(IMAGE)


def sg_gaps_wanted() -> bool:
    return os.environ.get("RNIC_STORAGE_SG_GAPS", "1") != "0"


# ---------------------------------------------------------------------------
# Guest script pieces ("@ME@", "@PEER@", "@DEV@" replaced)

LOAD = {
    "rnic": "modprobe rnic || exit 1\n",
    "rnic-nogaps": "modprobe rnic sg_gaps=0 || exit 1\n",
    "rxe": "modprobe crc32_generic\nmodprobe rdma_rxe || exit 1\n",
}

NET_UP = """
grep -q configfs /proc/mounts || mount -t configfs configfs /sys/kernel/config
ip link set eth0 up
ip addr add 10.0.0.@ME@/24 dev eth0
"""

RXE_UP = "rdma link add rxe0 type rxe netdev eth0 || exit 1\n"

WAIT_PEER = """
wait-ping 10.0.0.@PEER@ || exit 1
n=0
until grep -q ffff /sys/class/infiniband/@DEV@/ports/1/gids/1 2>/dev/null; do
    n=$((n + 1)); [ $n -lt 100 ] || { echo "no IPv4 GID on @DEV@"; exit 1; }
    sleep 0.1
done
echo "device=@DEV@ sg_gaps=$(cat /sys/module/rnic/parameters/sg_gaps 2>/dev/null)"
"""

# the initiator's counters: ib_map_mr_sg calls (one IB_WR_REG_MR each) by a
# kprobe (its hit count counts with tracing off), the device's work requests
COUNTERS = """
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
echo 0 >/sys/kernel/tracing/tracing_on
echo 'p:regmr ib_map_mr_sg' >>/sys/kernel/tracing/kprobe_events || echo "no kprobe"
echo 1 >/sys/kernel/tracing/events/kprobes/regmr/enable
counters() {  # prefix
    echo "$1_regmr=$(awk '$1 == "regmr" { print $2 }' /sys/kernel/tracing/kprobe_profile)"
    echo "$1_wqes=$(ethtool -S eth0 2>/dev/null | awk '$1 == "wqes:" { print $2 }')"
}
"""

DMESG_CHECK = """
dmesg | grep -E 'WARNING:|BUG:|Call Trace|refcount_t|list_del corruption|general protection|Oops' |
    sed 's/^/dmesg-bad: /'
"""

# fio: a verified write of unaligned, gapped I/O (lengths 2000-6000 bytes
# for NFS, 512-byte multiples for the block devices; vsync coalesces
# adjacent I/Os into one writev/readv whose iovecs lie max_bs apart in
# memory: a scatterlist with gaps), read back and checked (crc32c); then a
# timed sequential read of the same kind. The registrations of both phases
# are counted.
FIO = """
fio_run() {  # name file size bsrange
    counters verify0
    name=$1 file=$2 size=$3 bsrange=$4
    set -- --name=verify --filename=$file --size=$size --direct=1 \\
        --ioengine=vsync --iodepth=8 --iodepth_batch=8 --rw=write --bsrange=$bsrange --verify=crc32c \\
        --verify_fatal=1 --eta=never --output-format=json
    fio "$@" --do_verify=0 --output=/tmp/$name-verify.json
    rc=$?
    # the same job again, reading back what it wrote and checking each
    # block's crc32c and header (offset, length)
    fio "$@" --verify_only --output=/tmp/$name-verify-read.json
    echo "${name}_verify_rc=$((rc + $?))"
    counters verify1
    tr -d '\\n' </tmp/$name-verify-read.json | sed 's/^/fio-verify-read-json: /'
    echo
    tr -d '\\n' </tmp/$name-verify.json | sed 's/^/fio-verify-json: /'
    echo
    sync
    counters before
    fio --name=perf --filename=$file --size=$size --direct=1 --ioengine=vsync --iodepth=8 --iodepth_batch=8 \\
        --rw=read --bsrange=$bsrange --time_based --runtime=4 \\
        --eta=never --output-format=json --output=/tmp/$name-perf.json
    echo "${name}_perf_rc=$?"
    counters after
    tr -d '\\n' </tmp/$name-perf.json | sed 's/^/fio-json: /'
    echo
}
"""

# --- NFS over RDMA ----------------------------------------------------------
NFS_TARGET = """
modprobe nfsd || exit 1
modprobe rpcrdma || exit 1
mount -t nfsd nfsd /proc/fs/nfsd || exit 1
echo 10 >/proc/fs/nfsd/nfsv4gracetime
echo 10 >/proc/fs/nfsd/nfsv4leasetime
mkdir -p /export /var/lib/nfs/v4recovery /run/rpcbind
mount -t tmpfs -o size=64m tmpfs /export
echo "/export *(rw,no_root_squash,insecure,no_subtree_check,fsid=1)" >/etc/exports
grep -q '^_rpc:' /etc/passwd || echo "_rpc:x:108:65534::/run/rpcbind:/bin/false" >>/etc/passwd
rpcbind || echo "rpcbind failed"
exportfs -ra || exit 1
rpc.mountd || echo "rpc.mountd failed"
rpc.nfsd 4 || exit 1
echo "rdma 20049" >/proc/fs/nfsd/portlist || exit 1
sed 's/^/portlist: /' /proc/fs/nfsd/portlist
sync_point 1 ready >/dev/null
md5=$(sync_point 2)
echo "client_md5=$md5"
echo "server_md5=$(md5sum </export/fio.dat | cut -d' ' -f1)"
sync_point 3 >/dev/null
"""

NFS_INITIATOR = """
modprobe nfsv4 || exit 1
modprobe rpcrdma || exit 1
sync_point 1 >/dev/null
mkdir -p /mnt/nfs
n=0
until mount.nfs 10.0.0.1:/export /mnt/nfs -o rdma,port=20049,vers=4.2; do
    n=$((n + 1)); [ $n -lt 5 ] || { echo "mount failed"; sync_point 2 none; sync_point 3; exit 1; }
    sleep 2
done
grep ' /mnt/nfs ' /proc/mounts | sed 's/^/mount: /'
fio_run nfs /mnt/nfs/fio.dat 4m 2000-6000
md5=$(md5sum </mnt/nfs/fio.dat | cut -d' ' -f1)
echo "client_md5=$md5"
# READDIR replies too large to come inline come in a Reply chunk: the
# request's head buffer (kmalloc'd, ending mid-page) and the page list,
# a scatterlist with a gap for xprtrdma's frwr_map
mkdir /mnt/nfs/dir
i=0
while [ $i -lt 400 ]; do
    : >/mnt/nfs/dir/file-with-a-long-name-that-fills-readdir-replies-quickly-$i
    i=$((i + 1))
done
echo 3 >/proc/sys/vm/drop_caches
ops0=$(awk '$1 == "READDIR:" { print $2 }' /proc/self/mountstats)
counters readdir0
echo "readdir_entries=$(ls -1 /mnt/nfs/dir | wc -l)"
counters readdir1
echo "readdir_ops=$(($(awk '$1 == "READDIR:" { print $2 }' /proc/self/mountstats) - ops0))"
sed 's/^/nfs-stats: /' /proc/self/mountstats | grep -E 'xprt:|READ:|WRITE:' | head -4
umount /mnt/nfs; echo "umount_rc=$?"
sync_point 2 $md5 >/dev/null
sync_point 3 >/dev/null
"""

# --- LIO backstore and iSER --------------------------------------------------
LIO_BACKSTORE = """
modprobe target_core_mod || exit 1
modprobe target_core_file || exit 1
t=/sys/kernel/config/target
truncate -s 16M /tmp/disk.img
mkdir -p $t/core/fileio_0/disk0
echo "fd_dev_name=/tmp/disk.img,fd_dev_size=16777216" >$t/core/fileio_0/disk0/control
echo 1 >$t/core/fileio_0/disk0/attrib/emulate_write_cache 2>/dev/null
echo 1 >$t/core/fileio_0/disk0/enable || exit 1
"""

TARGET_TAIL = """
sync_point 1 "$ready" >/dev/null
md5=$(sync_point 2)
echo "client_md5=$md5"
echo "server_md5=$(md5sum </tmp/disk.img | cut -d' ' -f1)"
sync_point 3 >/dev/null
"""

ISER_TARGET = LIO_BACKSTORE + """
modprobe crc32c_generic   # iSCSI digests: crypto_alloc_ahash("crc32c") at login
modprobe iscsi_target_mod || exit 1
modprobe ib_isert || exit 1
iqn=iqn.2026-12.org.qemu-rnic:disk
tpg=$t/iscsi/$iqn/tpgt_1
mkdir -p $tpg/lun/lun_0 || exit 1
ln -s $t/core/fileio_0/disk0 $tpg/lun/lun_0/disk0 || exit 1
mkdir $tpg/np/10.0.0.1:3260 || exit 1
echo 1 >$tpg/np/10.0.0.1:3260/iser || exit 1
echo 0 >$tpg/attrib/authentication
echo 1 >$tpg/attrib/generate_node_acls
echo 0 >$tpg/attrib/demo_mode_write_protect
echo 1 >$tpg/attrib/cache_dynamic_acls
echo 1 >$tpg/enable || exit 1
echo "iser np: $(cat $tpg/np/10.0.0.1:3260/iser)"
ready=$iqn
""" + TARGET_TAIL

WAIT_DISK = """
n=0
modprobe sd_mod
until disk=$(ls /sys/class/scsi_disk/*/device/block 2>/dev/null | head -1) && [ -n "$disk" ] &&
      [ -b /dev/$disk ]; do
    n=$((n + 1)); [ $n -lt 150 ] || { echo "no SCSI disk"; break; }
    sleep 0.2
done
echo "disk=$disk"
"""

BLOCK_IO = """
if [ -n "$disk" ] && [ -b /dev/$disk ]; then
    echo "disk_size=$(cat /sys/class/block/$disk/size)"
    echo "max_segments=$(cat /sys/class/block/$disk/queue/max_segments) virt_boundary=$(cat /sys/class/block/$disk/queue/virt_boundary_mask 2>/dev/null)"
    fio_run @PROTO@ /dev/$disk 16m 512-7680
    md5=$(dd if=/dev/$disk bs=1M 2>/dev/null | md5sum | cut -d' ' -f1)
else
    md5=none
fi
echo "client_md5=$md5"
"""

ISER_INITIATOR = """
modprobe sd_mod
modprobe ib_iser || exit 1
mkdir -p /etc/iscsi/ifaces /var/lib/iscsi /run/lock/iscsi /var/lock/iscsi
iscsid -f >/tmp/iscsid.log 2>&1 &
iqn=$(sync_point 1)
modprobe crc32c_generic
# "iser" is open-iscsi's built-in interface: iface.transport_name=iser
iscsiadm -m node -o new -T $iqn -p 10.0.0.1:3260 -I iser >/dev/null || echo "node new failed"
n=0
until iscsiadm -m node -T $iqn -p 10.0.0.1:3260 -I iser --login; do
    n=$((n + 1)); [ $n -lt 5 ] || { echo "login failed"; break; }
    sleep 2
done
iscsiadm -m session -P 1 2>/dev/null | grep -E 'Transport|Iface Transport|State' | sed 's/^/session: /'
""" + WAIT_DISK + BLOCK_IO.replace("@PROTO@", "iser") + """
iscsiadm -m node -T $iqn -p 10.0.0.1:3260 -I iser --logout >/dev/null; echo "logout_rc=$?"
sync_point 2 $md5 >/dev/null
sync_point 3 >/dev/null
cat /tmp/iscsid.log | tail -5 | sed 's/^/iscsid: /'
"""

# --- SRP ----------------------------------------------------------------------
SRP_TARGET = LIO_BACKSTORE + """
modprobe ib_srpt || exit 1
guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
mkdir -p $t/srpt || exit 1
echo 5555 >$t/srpt/discovery_auth/rdma_cm_port || exit 1
gid=$(cat /sys/class/infiniband/@DEV@/ports/1/gids/0)
port=${gid#fe80:0000:0000:0000:}
mkdir -p $t/srpt/$port/$port/lun/lun_0 || exit 1
ln -s $t/core/fileio_0/disk0 $t/srpt/$port/$port/lun/lun_0/disk0 || exit 1
for ini in 10.0.0.2 10.0.0.1; do
    mkdir -p $t/srpt/$port/$port/acls/$ini/lun_0 &&
        ln -s $t/srpt/$port/$port/lun/lun_0 $t/srpt/$port/$port/acls/$ini/lun_0/lun_0
done
echo 1 >$t/srpt/$port/$port/enable || exit 1
echo "srpt port $port guid $guid"
ready=$guid
""" + TARGET_TAIL

SRP_INITIATOR = """
modprobe sd_mod
modprobe ib_srp || exit 1
guid=$(sync_point 1)
gid=$(cat /sys/class/infiniband/rnic0/ports/1/gids/0 | tr -d :)
login="id_ext=$guid,initiator_ext=${gid%????????????????},ioc_guid=$guid,src=10.0.0.2,dest=10.0.0.1:5555"
echo "login=$login"
n=0
until echo "$login" >/sys/class/infiniband_srp/srp-rnic0-1/add_target; do
    n=$((n + 1)); [ $n -lt 5 ] || { echo "add_target failed"; break; }
    sleep 2
done
""" + WAIT_DISK + BLOCK_IO.replace("@PROTO@", "srp") + """
for p in /sys/class/srp_remote_ports/*; do [ -e $p/delete ] && echo 1 >$p/delete; done
sync_point 2 $md5 >/dev/null
sync_point 3 >/dev/null
"""

# a target whose setup fails tells the initiator (FAIL at sync point 1)
FAIL = """
fail() {
    echo "target setup failed: $1"
    dmesg | tail -20 | sed 's/^/dmesg-tail: /'
    sync_point 1 FAIL >/dev/null
    exit 1
}
"""


def target(body: str) -> str:
    return FAIL + re.sub(r"\|\| exit 1\n", lambda m: f'|| fail "{next(_step)}"\n', body)


_step = iter(range(1, 1000))

READY_CHECK = """
[ "$ready" != FAIL ] || { echo "the target failed"; exit 1; }
"""

PROTOCOLS = {
    "nfs": (target(NFS_TARGET), NFS_INITIATOR.replace(
        "sync_point 1 >/dev/null\n", "ready=$(sync_point 1)\n" + READY_CHECK)),
    "iser": (target(ISER_TARGET), ISER_INITIATOR.replace(
        "iqn=$(sync_point 1)\n", "iqn=$(sync_point 1)\nready=$iqn\n" + READY_CHECK)),
    "srp": (target(SRP_TARGET), SRP_INITIATOR.replace(
        "guid=$(sync_point 1)\n", "guid=$(sync_point 1)\nready=$guid\n" + READY_CHECK)),
}


def guest_script(me: int, load: str, kind: str, body: str) -> str:
    dev = "rxe0" if kind == "rxe" else "rnic0"
    text = (LOAD[load] + NET_UP + (RXE_UP if kind == "rxe" else "") + WAIT_PEER +
            SYNC_POINT.format(me=me, sync_timeout=400) + COUNTERS + FIO + body + DMESG_CHECK)
    return (text.replace("@ME@", str(me)).replace("@PEER@", str(3 - me))
            .replace("@DEV@", dev))


def values(out: str, key: str) -> list:
    return re.findall(rf"^{re.escape(key)}=(\S*)", out, re.MULTILINE)


def value(out: str, key: str) -> Optional[str]:
    found = values(out, key)
    return found[-1] if found else None


def fio_figures(out: str, tag: str = "fio-json") -> Dict[str, float]:
    match = re.search(rf"^{tag}: (.*)$", out, re.MULTILINE)
    assert match, "no fio JSON output"
    data = json.loads(match.group(1))
    job = data["jobs"][0]
    figures = {"error": job["error"]}
    for rw in ("read", "write"):
        figures[f"{rw}_ios"] = job[rw]["total_ios"]
        figures[f"{rw}_iops"] = job[rw]["iops"]
        figures[f"{rw}_kib_s"] = job[rw]["bw"]
    return figures


def run_storage(qemu: str, proto: str, target_kind: str = "rnic",
                gaps: Optional[bool] = None) -> Tuple[GuestResult, GuestResult, Dict]:
    """Boot the target (guest 1, TARGET_KIND) and the rnic initiator
    (guest 2: rnic.ko, or without SG_GAPS if GAPS is False), run PROTO,
    check the data and return both results and the figures."""
    image = storage_image()
    gaps = sg_gaps_wanted() if gaps is None else gaps
    target_body, initiator_body = PROTOCOLS[proto]
    s1 = guest_script(1, target_kind, target_kind, target_body)
    s2 = guest_script(2, "rnic" if gaps else "rnic-nogaps", "rnic", initiator_body)
    name = f"storage-{proto}-{target_kind}{'' if gaps else '-nogaps'}"
    with tempfile.TemporaryDirectory(prefix="rnic-storage-") as tmp:
        guests = [Guest(script, name=f"{name}-{me}", qemu=qemu, initrd=image, timeout=500,
                        args=pair_netdev("stream", tmp, me, kind, f"52:54:00:00:03:0{me}"))
                  for me, script, kind in ((1, s1, target_kind), (2, s2, "rnic"))]
        r1, r2 = run_guests(guests)
    log = TOP / "build/guest-logs"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{name}-1.out").write_text(r1.output)
    (log / f"{name}-2.out").write_text(r2.output)
    report = r1.report() + r2.report()
    assert r1.ok and r2.ok, report
    for res in (r1, r2):
        bad = [l for l in res.output.splitlines() if l.startswith("dmesg-bad:")]
        assert not bad, "kernel log has warnings:\n" + "\n".join(bad) + "\n" + report
    out = r2.output
    assert value(out, f"{proto}_verify_rc") == "0", f"fio verify failed\n{report}"
    assert value(out, f"{proto}_perf_rc") == "0", f"fio perf failed\n{report}"
    client, server = value(r1.output, "client_md5"), value(r1.output, "server_md5")
    assert client and client != "none" and client == server, \
        f"MD5 initiator {client} target {server}\n{report}"
    figures = fio_figures(out)
    assert figures["error"] == 0, report
    ios = figures["read_ios"] + figures["write_ios"]
    assert ios > 0, report
    def delta(first: str, last: str, counter: str) -> int:
        return int(value(out, f"{last}_{counter}") or 0) - int(value(out, f"{first}_{counter}") or 0)

    regs, wqes = delta("before", "after", "regmr"), delta("before", "after", "wqes")
    verify = fio_figures(out, "fio-verify-json")
    # the verify phase: each block written, then read back and checked
    # (--verify_only: the reads are in no fio total; per block, both I/Os)
    vios = verify["write_ios"]
    assert vios > 0, report
    vregs, vwqes = delta("verify0", "verify1", "regmr"), delta("verify0", "verify1", "wqes")
    if proto == "nfs":
        ops = int(value(out, "readdir_ops") or 0)
        assert int(value(out, "readdir_entries") or 0) >= 400, report
        assert ops > 0, report
        figures.update(readdir_ops=ops,
                       readdir_regmr_per_op=delta("readdir0", "readdir1", "regmr") / ops)
    figures.update(ios=ios, regmr=regs, wqes=wqes, regmr_per_io=regs / ios,
                   wqes_per_io=wqes / ios, gaps=gaps, target=target_kind,
                   verify_ios=vios, verify_regmr_per_io=vregs / max(vios, 1),
                   verify_wqes_per_io=vwqes / max(vios, 1))
    return r1, r2, figures


def summary(name: str, fig: Dict) -> str:
    return (f"# {name}: fio sequential gapped read 4 s {fig['read_iops']:.0f} IOPS "
            f"({fig['read_kib_s']} KiB/s), {fig['ios']} I/Os; initiator: {fig['regmr']} "
            f"registrations (ib_map_mr_sg) = {fig['regmr_per_io']:.2f}/I/O, {fig['wqes']} "
            f"WQEs = {fig['wqes_per_io']:.2f}/I/O; verified write {fig['verify_ios']} blocks: "
            f"{fig['verify_regmr_per_io']:.2f} registrations, {fig['verify_wqes_per_io']:.2f} "
            f"WQEs per block written and read back; "
            + (f"READDIR of 400 entries: {fig['readdir_ops']} READDIRs, "
               f"{fig['readdir_regmr_per_op']:.2f} registrations each; "
               if "readdir_ops" in fig else "") +
            f"SG_GAPS {'on' if fig['gaps'] else 'off'}; data verified "
            f"(fio crc32c, MD5 both ends)")


def storage_test(proto: str, target_kind: str):
    def test(qemu: str) -> None:
        _, _, fig = run_storage(qemu, proto, target_kind)
        print(summary(f"storage-{proto}-{target_kind}", fig), flush=True)
    return test


for _proto, _tname in (("nfs", "storage-nfs-rdma"), ("iser", "storage-iser"),
                       ("srp", "storage-srp")):
    procedure(_tname, requires=["rnic"])(storage_test(_proto, "rnic"))
    procedure(f"{_tname}-rxe", requires=["rnic", "virtio-net-pci"])(
        storage_test(_proto, "rxe"))
