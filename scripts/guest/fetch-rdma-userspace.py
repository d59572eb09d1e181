#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fetch the guest's RDMA userspace: trixie's rdma-core 56.1 tools and
libraries (the version the provider is built from: its private ABI must
match libibverbs'), iproute2's `rdma`, perftest, and every
library they need (Depends/Pre-Depends, first alternative, recursively).

The .debs go to build/dl/trixie/ (apt-get download pkg/trixie, reused while
their SHA256 matches apt's lists); the script prints their paths, one per
line, for scripts/guest/build-image.sh -d. The resolution is cached in
build/dl/trixie/.resolved, keyed on apt's package lists.

Usage: scripts/guest/fetch-rdma-userspace.py [extra-package ...]
"""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
DL = TOP / "build/dl/trixie"
SUITE = "trixie"

ROOTS = ["libibverbs1", "ibverbs-providers", "ibverbs-utils", "librdmacm1t64",
         "rdmacm-utils", "perftest", "iproute2", "ethtool"]

# Packages a busybox guest does not need although something depends on them
# (maintainer-script machinery, user management, capability tools).
SKIP = {"debconf", "debconf-2.0", "adduser", "passwd", "dpkg", "perl-base",
        "libcap2-bin", "base-files", "init-system-helpers", "sensible-utils",
        "lsb-base", "sysvinit-utils", "libpam-runtime", "libpam-modules",
        "libpam-modules-bin", "cdebconf", "usrmerge", "libc-bin"}


def log(msg):
    print(f"fetch-rdma-userspace: {msg}", file=sys.stderr)


def lists_key():
    lists = Path("/var/lib/apt/lists")
    items = sorted(f"{p.name} {p.stat().st_size} {p.stat().st_mtime}"
                   for p in lists.glob("*_Packages*"))
    return hashlib.sha256("\n".join(items).encode()).hexdigest()


def apt_show(names):
    """{package: record dict} for the trixie versions of NAMES."""
    if not names:
        return {}
    out = subprocess.run(["apt-cache", "show", "--no-all-versions"] +
                         [f"{n}/{SUITE}" for n in names],
                         capture_output=True, text=True, check=False).stdout
    records = {}
    for block in out.split("\n\n"):
        rec = {}
        key = None
        for line in block.splitlines():
            if line.startswith(" ") and key:
                rec[key] += "\n" + line
            elif ":" in line:
                key, _, val = line.partition(":")
                rec[key] = val.strip()
        if "Package" in rec:
            records.setdefault(rec["Package"], rec)
    return records


def dep_names(rec):
    """First-alternative package names of Depends and Pre-Depends."""
    names = []
    for field in ("Pre-Depends", "Depends"):
        for group in rec.get(field, "").split(","):
            alts = [re.sub(r"[\s(:].*", "", a.strip()) for a in group.split("|")]
            alts = [a for a in alts if a]
            if alts:
                names.append(alts)
    return names


def resolve(roots):
    records = {}
    queue = [[r] for r in roots]
    while queue:
        wanted = sorted({a for alts in queue for a in alts
                         if a not in records and a not in SKIP})
        found = apt_show(wanted)
        next_queue = []
        for alts in queue:
            if any(a in records or a in SKIP for a in alts):
                continue
            name = next((a for a in alts if a in found), None)
            if name is None:
                log(f"warning: none of {' | '.join(alts)} in {SUITE}")
                continue
            records[name] = found[name]
            next_queue.extend(dep_names(found[name]))
        queue = next_queue
    # apt-get download's file name: the epoch's ':' is URL-encoded
    return {name: (f"{name}_{rec['Version'].replace(':', '%3a')}_{rec['Architecture']}.deb",
                   rec["SHA256"], rec["Version"])
            for name, rec in records.items()}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    roots = ROOTS + sys.argv[1:]
    DL.mkdir(parents=True, exist_ok=True)
    key = lists_key() + " " + " ".join(roots)
    cache = DL / ".resolved"
    pkgs = None
    if cache.exists():
        lines = cache.read_text().splitlines()
        if lines and lines[0] == key:
            pkgs = {}
            for line in lines[1:]:
                name, fname, sha, ver = line.split()
                pkgs[name] = (fname, sha, ver)
    if pkgs is None:
        pkgs = resolve(roots)
        cache.write_text(key + "\n" + "".join(f"{n} {f} {s} {v}\n"
                                              for n, (f, s, v) in sorted(pkgs.items())))
    missing = [n for n, (f, s, _) in pkgs.items()
               if not (DL / f).exists() or sha256(DL / f) != s]
    if missing:
        log(f"downloading {len(missing)} packages from {SUITE}")
        cmd = ["apt-get", "download", "-q"]
        if os.getuid() == 0:
            cmd += ["-o", "APT::Sandbox::User=root"]
        subprocess.run(cmd + [f"{n}/{SUITE}" for n in sorted(missing)], cwd=DL,
                       check=True, stdout=sys.stderr)
        for n in missing:
            f, s, _ = pkgs[n]
            if sha256(DL / f) != s:
                sys.exit(f"fetch-rdma-userspace: {f}: checksum mismatch")
    for n, (f, _, _) in sorted(pkgs.items()):
        print(DL / f)


if __name__ == "__main__":
    main()
