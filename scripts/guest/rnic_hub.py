# SPDX-License-Identifier: GPL-2.0-or-later
"""One Ethernet segment for several QEMUs, migration destinations included.

tests/tools/rnic-hub.c is a learning switch on a unix stream socket; every
QEMU connects to it as a -netdev stream client. It is compiled on demand
into build/tools/rnic-hub (cc, a few hundred lines, well under a second).

    with Hub() as hub:
        args = hub.netdev_args("rnic", "52:54:00:00:07:01")
        ...
        hub.log()          # its stderr: connects, MAC moves, statistics
"""

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Optional, Tuple

TOP = Path(__file__).resolve().parents[2]
SOURCE = TOP / "tests/tools/rnic-hub.c"
BINARY = TOP / "build/tools/rnic-hub"


def build_hub() -> Path:
    """Compile the hub if the binary is missing or older than its source."""
    if not BINARY.exists() or BINARY.stat().st_mtime < SOURCE.stat().st_mtime:
        BINARY.parent.mkdir(parents=True, exist_ok=True)
        cc = os.environ.get("CC", "cc")
        tmp = BINARY.with_suffix(".tmp")
        subprocess.run([cc, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-o", str(tmp),
                        str(SOURCE)], check=True, capture_output=True, text=True)
        tmp.replace(BINARY)
    return BINARY


class Hub:
    """A running rnic-hub on a socket in a temporary directory."""

    def __init__(self, verbose: bool = True):
        self.verbose = verbose
        self.dir: Optional[tempfile.TemporaryDirectory] = None
        self.sock = ""
        self.proc: Optional[subprocess.Popen] = None
        self.log_path: Optional[Path] = None

    def start(self) -> "Hub":
        binary = build_hub()
        self.dir = tempfile.TemporaryDirectory(prefix="rnic-hub-")
        self.sock = f"{self.dir.name}/segment.sock"
        self.log_path = Path(self.dir.name) / "hub.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([str(binary)] + (["-v"] if self.verbose else [])
                                         + [self.sock], stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rnic-hub did not start:\n{self.log()}")
            time.sleep(0.02)
        return self

    def netdev_args(self, nic: str, mac: str, netdev_id: str = "n0",
                    device_id: str = "") -> List[str]:
        """QEMU arguments: a stream client of the hub and NIC (rnic or a
        virtio-net) on it."""
        netdev = (f"stream,id={netdev_id},server=off,addr.type=unix,"
                  f"addr.path={self.sock},reconnect-ms=200")
        device = "rnic" if nic == "rnic" else "virtio-net-pci,romfile="
        if device_id:
            device += f",id={device_id}"
        return ["-netdev", netdev, "-device", f"{device},netdev={netdev_id},mac={mac}"]

    def attach(self, nic: str, mac: str, device_id: str = "") -> Tuple[List[str], List[str]]:
        """A guest's QEMU arguments on the hub, and no wrapper command."""
        return self.netdev_args(nic, mac, device_id=device_id), []

    def log(self) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return ""

    def stats(self) -> str:
        """Ask for the per-port statistics; return the log."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.2)
        return self.log()

    def port_of(self, mac: str) -> Optional[int]:
        """The port where the switch has MAC now (its last learn or move)."""
        ports = re.findall(rf"mac {mac} (?:learned on port|moved port \S+ ->) (\d+)",
                           self.log())
        return int(ports[-1]) if ports else None

    def frames_from(self, port: Optional[int]) -> int:
        """Frames the switch received on PORT, from its statistics."""
        frames = {int(m.group(1)): int(m.group(2)) for m in
                  re.finditer(r"port (\d+) frames-in=(\d+)", self.stats())}
        return frames.get(port, 0) if port is not None else 0

    def stop(self) -> str:
        """Stop the hub (it prints its statistics first); return the log."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        text = self.log()
        if self.dir:
            self.dir.cleanup()
            self.dir = None
        return text

    def __enter__(self) -> "Hub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
