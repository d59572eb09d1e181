# SPDX-License-Identifier: GPL-2.0-or-later
"""Small framework for qemu-rnic guest tests (run by tests/guest/run-tests.py).

A test module (tests/guest/test_*.py) registers
  - GuestCase objects: one guest each (QEMU args + guest script + a check of
    the result), or
  - plain functions decorated with @procedure("name"): they get the QEMU
    binary and do anything (several guests, QMP, migration) themselves.
A check or procedure fails by raising an exception (assert is fine).
"""

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "scripts/guest"))
from rnic_guest import (DEFAULT_QEMU, Guest, GuestResult,  # noqa: E402  pylint: disable=C0413
                        run_guests)

ABI_HEADER = TOP / "include/rnic/rnic-abi.h"
PCI_INFO = TOP / "scripts/guest/pci-info.sh"


# run-tests.py runs tests in processes of their own; in this directory
# (its environment variable) a build run once leaves a mark for the others.
BUILT_DIR_ENV = "RNIC_GUEST_BUILT_DIR"
_built_lock = threading.Lock()
_built = set()


def build_once(*command: str) -> None:
    """Run the image builder COMMAND (a no-op when up to date, but not a
    free one) once per test run, across the runner's processes; raise
    AssertionError with its output if it failed (the next caller tries
    again)."""
    key = hashlib.sha1("\0".join(command).encode()).hexdigest()[:16]
    with _built_lock:
        if key in _built:
            return
        mark_dir = os.environ.get(BUILT_DIR_ENV)
        lock = open(Path(mark_dir) / f"{key}.lock", "w") if mark_dir else None
        try:
            if lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
            if not (mark_dir and (Path(mark_dir) / key).exists()):
                build = subprocess.run(list(command), capture_output=True, text=True,
                                       check=False)
                if build.returncode != 0:
                    raise AssertionError(f"{' '.join(command)} failed:\n"
                                         f"{build.stdout}{build.stderr}")
                if mark_dir:
                    (Path(mark_dir) / key).touch()
        finally:
            if lock:
                lock.close()
        _built.add(key)


class Skip(Exception):
    """Raised by a check or procedure: report the test as skipped (why)."""


@dataclass
class GuestCase:
    """One guest boot and the check of what it printed."""

    name: str
    args: Sequence[str]                 # QEMU arguments (devices, netdevs)
    script: Callable[[], str]           # builds the guest script
    check: Callable[[GuestResult], None]
    requires: Sequence[str] = ()        # QEMU -device names that must exist
    timeout: float = 120
    initrd: Optional[Callable[[], str]] = None  # builds/returns another image
    append: str = ""                    # extra kernel command line
    alone: bool = False                 # run with no other test beside it (Procedure)


@dataclass
class Procedure:
    """A test that drives QEMU itself. run-tests.py runs tests side by side
    (each in a process of its own) as long as their GUESTS (QEMUs at once)
    fit its --jobs; ALONE ones with nothing beside them: what measures time
    against a limit (perftest's clock calibration, latency comparisons) or
    drives host daemons."""

    name: str
    run: Callable[[str], None]          # gets the QEMU binary path
    requires: Sequence[str] = ()
    alone: bool = False
    guests: int = 2


TESTS: List[object] = []


def case(*args, **kwargs) -> GuestCase:
    """Register a GuestCase."""
    test = GuestCase(*args, **kwargs)
    TESTS.append(test)
    return test


def procedure(name: str, requires: Sequence[str] = (), alone: bool = False, guests: int = 2):
    """Decorator registering a procedural test."""
    def register(func: Callable[[str], None]) -> Callable[[str], None]:
        TESTS.append(Procedure(name, func, requires, alone, guests))
        return func
    return register


def abi_define(name: str, header: Path = ABI_HEADER) -> Optional[int]:
    """Value of '#define NAME <integer>' in the device ABI header, or None."""
    match = re.search(rf"^\s*#\s*define\s+{re.escape(name)}\s+(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b",
                      header.read_text(), re.MULTILINE)
    return int(match.group(1), 0) if match else None


def rnic_ids() -> Dict[str, int]:
    """vendor/device (required) and class (if defined) from the ABI header."""
    ids = {"vendor": abi_define("RNIC_PCI_VENDOR_ID"),
           "device": abi_define("RNIC_PCI_DEVICE_ID")}
    if None in ids.values():
        raise AssertionError(f"RNIC_PCI_VENDOR_ID/RNIC_PCI_DEVICE_ID not in {ABI_HEADER}")
    klass = abi_define("RNIC_PCI_CLASS")
    if klass is not None:
        ids["class"] = klass
    return ids


def pci_show_script(vendor: int, device: int) -> str:
    """Guest script: show every function VENDOR:DEVICE, then 'pci: count=N'."""
    return PCI_INFO.read_text() + f"""
count=0
for dev in $(pci_find {vendor:#06x} {device:#06x}); do
    pci_show "$dev"
    count=$((count + 1))
done
echo "pci: count=$count"
[ $count -gt 0 ]
"""


def parse_pci(output: str) -> List[Dict[str, str]]:
    """The 'pci: key=value ...' lines of pci_show, one dict per function.

    Keys: slot, vendor, device, class, driver, irq, ...; 'barN' -> dict
    (start, size, type); 'caps'/'ecaps' -> list of dicts (cap/ecap, id, name, ...).
    """
    devices: List[Dict] = []
    for line in output.splitlines():
        if not line.startswith("pci: "):
            continue
        pairs = dict(tok.split("=", 1) for tok in line[5:].split() if "=" in tok)
        if "slot" in pairs:
            devices.append({"caps": [], "ecaps": [], "bars": {}})
        if not devices:
            continue
        dev = devices[-1]
        bar = next((k for k in pairs if re.fullmatch(r"bar\d", k)), None)
        if bar:
            dev["bars"][int(bar[3:])] = {"start": int(pairs[bar], 0),
                                          "size": int(pairs["size"], 0),
                                          "type": pairs["type"]}
        elif "cap" in pairs:
            dev["caps"].append(pairs)
        elif "ecap" in pairs:
            dev["ecaps"].append(pairs)
        elif "count" not in pairs:
            dev.update(pairs)
    return devices


def qemu_devices(qemu: str) -> List[str]:
    """Device names the QEMU binary offers ('-device help')."""
    out = subprocess.run([qemu, "-device", "help"], capture_output=True,
                         text=True, check=False).stdout
    return re.findall(r'^name "([^"]+)"', out, re.MULTILINE)


__all__ = ["DEFAULT_QEMU", "Guest", "GuestResult", "run_guests", "GuestCase", "Procedure", "Skip",
           "TESTS", "case", "procedure", "abi_define", "rnic_ids",
           "pci_show_script", "parse_pci", "qemu_devices"]
