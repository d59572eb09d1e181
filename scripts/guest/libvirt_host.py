# SPDX-License-Identifier: GPL-2.0-or-later
"""A libvirtd of its own, as one "host" of a migration on this machine.

libvirt refuses to migrate a domain to the daemon it came from, and two
system daemons cannot share one machine's /run/libvirt, /var/lib/libvirt and
/etc/libvirt. So each LibvirtHost runs Debian's libvirtd (and virtlogd) in a
mount and UTS namespace of its own: those directories are private copies
under ROOT, the hostname and libvirtd.conf's host_uuid are its own, and its
socket is ROOT/run/libvirt-sock (URI qemu+unix:///system?socket=...). It
can run inside a network namespace (NETNS, e.g. a linux_bridge.Bridge's), so
that its domains' taps and their migration streams stay there. Two of them
are two hosts as far as libvirt can tell; `virsh migrate --live` between
them is libvirt's own migration (Begin/Prepare/Perform/Finish/Confirm).

Root only. Used by tests/guest/test_libvirt.py (libvirt-domain, libvirt-migrate).
"""

import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import List, Optional

PRIVATE = {"run": "/run/libvirt", "lib": "/var/lib/libvirt",
           "cache": "/var/cache/libvirt", "log": "/var/log/libvirt", "etc": "/etc/libvirt"}


class LibvirtHost:
    """libvirtd + virtlogd named NAME with their state under ROOT."""

    def __init__(self, name: str, root: Path, netns: Optional[str] = None):
        self.name = name
        self.root = root
        self.netns = netns
        self.uuid = str(uuid.uuid4())
        self.proc: Optional[subprocess.Popen] = None

    @property
    def uri(self) -> str:
        return f"qemu+unix:///system?socket={self.root}/run/libvirt-sock"

    def virsh(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        proc = subprocess.run(["virsh", "-c", self.uri, *args], capture_output=True,
                              text=True, timeout=timeout)
        if check and proc.returncode:
            raise AssertionError(f"{self.name}: virsh {' '.join(args)}: "
                                 f"{proc.stderr.strip()}\n{self.log_tail()}")
        return proc.stdout

    def log_tail(self, chars: int = 3000) -> str:
        """The daemons' logs and the domains' QEMU logs, the last CHARS of each."""
        return "".join(f"--- {self.name} {p.relative_to(self.root)} ---\n"
                       + p.read_text(errors="replace")[-chars:]
                       for p in sorted([*self.root.glob("*.log"),
                                        *self.root.glob("log/qemu/*.log")]))

    def start(self, timeout: float = 60) -> "LibvirtHost":
        for sub, path in PRIVATE.items():
            (self.root / sub).mkdir(parents=True, exist_ok=True)
            # the bind mount needs its mount point: /run/libvirt exists only
            # once systemd's tmpfiles or a system libvirtd has made it
            os.makedirs(path, exist_ok=True)
        etc = self.root / "etc"
        shutil.copytree("/etc/libvirt", etc, dirs_exist_ok=True, symlinks=True)
        # the other daemon's domains, networks, storage pools are not ours
        for sub in ("qemu", "storage", "nwfilter", "secrets"):
            shutil.rmtree(etc / sub, ignore_errors=True)
        with open(etc / "libvirtd.conf", "a", encoding="utf-8") as conf:
            conf.write(f'\nhost_uuid = "{self.uuid}"\n')
        os.chmod(self.root, 0o755)
        for sub in ("run", "lib", "cache"):
            os.chmod(self.root / sub, 0o755)
        mounts = "".join(f"mount --bind {self.root / sub} {path}\n"
                         for sub, path in PRIVATE.items())
        script = (f"set -e\nhostname {self.name}\n{mounts}"
                  f"virtlogd --daemon --pid-file {self.root}/virtlogd.pid\n"
                  f"exec libvirtd --pid-file {self.root}/libvirtd.pid\n")
        cmd: List[str] = ["unshare", "--mount", "--uts", "--propagation", "private",
                          "sh", "-c", script]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        env = dict(os.environ, LIBVIRT_LOG_OUTPUTS=f"3:file:{self.root}/libvirtd.log")
        with open(self.root / "daemon.log", "w", encoding="utf-8") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while subprocess.run(["virsh", "-c", self.uri, "version"],
                             capture_output=True).returncode:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"{self.name}: libvirtd did not answer\n{self.log_tail()}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        """Destroy its domains, stop its daemons."""
        if self.proc and self.proc.poll() is None:
            names = self.virsh("list", "--name", check=False, timeout=30).split()
            for name in names:
                self.virsh("destroy", name, check=False, timeout=30)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        try:
            os.kill(int((self.root / "virtlogd.pid").read_text().strip()), signal.SIGTERM)
        except (OSError, ValueError):
            pass

    def __enter__(self) -> "LibvirtHost":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
