#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""fio over NFS/RDMA, iSER and SRP between two rnic guests, with and without
SG_GAPS offered to the initiator's ULPs (rnic.ko sg_gaps=1 / sg_gaps=0):
the guest tests of tests/guest/test_storage.py (data verified each time),
one pair of guests per protocol and setting, one after the other. Prints a
Markdown table: fio's 4-second random read/write (I/O sizes 2000-6000
bytes for NFS, 512-7680 bytes in 512-byte steps for the SCSI disks, gapped
vectored I/O), the initiator's registrations (ib_map_mr_sg calls: one
IB_WR_REG_MR each) and device work requests (ethtool -S wqes) per fio I/O.

Usage: scripts/guest/storage-bench.py [--proto nfs,iser,srp] [--target rnic|rxe]
       [--gaps on,off] [--qemu PATH]
"""

import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TOP / "tests/guest"), str(TOP / "scripts/guest")]

from test_storage import run_storage  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proto", default="nfs,iser,srp")
    parser.add_argument("--target", default="rnic", choices=("rnic", "rxe"))
    parser.add_argument("--gaps", default="off,on")
    parser.add_argument("--qemu", default=os.environ.get(
        "RNIC_QEMU", str(TOP / "build/qemu/build/qemu-system-x86_64")))
    opts = parser.parse_args()
    rev = subprocess.run(["git", "-C", str(TOP), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False).stdout.strip()
    print(f"storage-bench {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC at {rev}, "
          f"initiator rnic, target {opts.target}", flush=True)
    print("| protocol | SG_GAPS | read IOPS | write IOPS | read+write KiB/s | fio I/Os "
          "| registrations/I/O | WQEs/I/O | READDIRs | registrations/READDIR |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    status = 0
    for proto in opts.proto.split(","):
        for gaps in opts.gaps.split(","):
            try:
                _, _, fig = run_storage(opts.qemu, proto, opts.target, gaps == "on")
            except AssertionError as err:
                print(f"| {proto} | {gaps} | failed: {str(err).splitlines()[0]} |||||||",
                      flush=True)
                status = 1
                continue
            print(f"| {proto} | {gaps} | {fig['read_iops']:.0f} | {fig['write_iops']:.0f} | "
                  f"{fig['read_kib_s'] + fig['write_kib_s']} | {fig['ios']} | "
                  f"{fig['regmr_per_io']:.2f} | {fig['wqes_per_io']:.2f} | "
                  f"{fig.get('readdir_ops', '')} | "
                  f"{'%.2f' % fig['readdir_regmr_per_op'] if 'readdir_ops' in fig else ''} |",
                  flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
