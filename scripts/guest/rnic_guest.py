# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot qemu-rnic test guests and collect their results.

A guest is the Debian 6.12 kernel plus the busybox initramfs built by
scripts/guest/build-image.sh. The host hands the guest a shell script through
fw_cfg (opt/rnic/run); the guest's /init runs it, prints
``RNIC-GUEST-EXIT <status>`` on the serial console and powers off.

QEMU is driven with QEMU's own Python library from the QEMU source tree
(build/qemu/src/python: qemu.machine.QEMUMachine over qemu.qmp), so tests can
use QMP on a running guest (``guest.vm.cmd(...)``), e.g. for migration.

    from rnic_guest import Guest, run_guests
    result = Guest("cat /proc/version", args=["-device", "rnic"]).run()
    a, b = run_guests([Guest(server_script, name="a", args=...),
                       Guest(client_script, name="b", args=...)])
"""

import ctypes
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Union

TOP = Path(__file__).resolve().parents[2]
QEMU_PYTHON = TOP / "build/qemu/src/python"
DEFAULT_QEMU = TOP / "build/qemu/build/qemu-system-x86_64"
GUEST_KERNELS = ("6.12", "6.1")


def guest_dir(series: str) -> Path:
    """Where the images for the guest kernel SERIES are (as
    scripts/guest/kernel-choice.sh puts them)."""
    return TOP / ("build/guest" if series == "6.12" else f"build/guest-{series}")


# The guest kernel the tests boot: 6.12 by default, RNIC_GUEST_KERNEL=6.1
# for bookworm's stock kernel (the images must be built for it).
GUEST_KERNEL = os.environ.get("RNIC_GUEST_KERNEL", "6.12")
if GUEST_KERNEL not in GUEST_KERNELS:
    raise SystemExit(f"RNIC_GUEST_KERNEL={GUEST_KERNEL}: must be one of {GUEST_KERNELS}")
GUEST_DIR = guest_dir(GUEST_KERNEL)
LOG_ROOT = TOP / "build/guest-logs"
FIRMWARE_DIR = Path("/usr/share/qemu")
BIOS = FIRMWARE_DIR / "qboot.rom"

START_MARKER = "RNIC-GUEST-START"
EXIT_RE = re.compile(r"^RNIC-GUEST-EXIT (\d+)\r?$", re.MULTILINE)
START_RE = re.compile(r"^" + START_MARKER + r"\r?$", re.MULTILINE)

# QEMU's python library is not installed anywhere: it comes with the source.
if str(QEMU_PYTHON) not in sys.path:
    sys.path.insert(0, str(QEMU_PYTHON))
from qemu.machine import QEMUMachine  # noqa: E402  pylint: disable=C0413


@dataclass(frozen=True)
class HostSched:
    """Host scheduling of a guest's QEMU threads (benchmarks; default: none).

    vcpu_nice:   nice value of the vCPU threads (QMP gives their thread ids):
                 QEMU's main loop, where frames arrive, then preempts a vCPU
                 that busy-polls; it also takes CPU from guest code.
    io_slice_us: scheduler slice of QEMU's main thread (sched_setattr's
                 sched_runtime for SCHED_OTHER, Linux >= 6.12 EEVDF): a short
                 slice lets the woken main loop preempt a busy vCPU at once,
                 without changing any thread's share of the CPU.
    """
    vcpu_nice: Optional[int] = None
    io_slice_us: Optional[int] = None

    def describe(self) -> str:
        parts = []
        if self.vcpu_nice is not None:
            parts.append(f"vCPU threads at nice {self.vcpu_nice}")
        if self.io_slice_us is not None:
            parts.append(f"QEMU main threads with a {self.io_slice_us} µs slice")
        return ", ".join(parts)


def set_sched_slice(tid: int, slice_us: int) -> None:
    """sched_setattr(tid, SCHED_OTHER, sched_runtime = slice) (x86-64)."""
    attr = struct.pack("IIQiIQQQII", 56, 0, 0, os.getpriority(os.PRIO_PROCESS, tid),
                       0, slice_us * 1000, 0, 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(314, tid, ctypes.create_string_buffer(attr), 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sched_setattr({tid}): {os.strerror(err)}")


class GuestError(Exception):
    """A guest could not be started or did not report an exit status."""


# The guest side of Guest.press_key: KEY_MARK before the script says it is
# ready for the key (the keyboard's interrupt line in /proc/interrupts,
# IRQ 1: i8042), KEY_WAIT after: until that line changes, 15 s at most.
# (No braces: the snippets go into scripts that are str.format()ed.)
KEY_MARK = "key_mark=$(grep -E '^ +1:' /proc/interrupts)\n"
KEY_WAIT = ("n=0\n"
            "while [ \"$(grep -E '^ +1:' /proc/interrupts)\" = \"$key_mark\" ] && "
            "[ $n -lt 150 ]; do n=$((n + 1)); sleep 0.1; done\n"
            "echo \"key_wait=$n\"\n")


@dataclass
class GuestResult:
    """What one guest run produced."""

    name: str
    status: Optional[int]   # the script's exit status; None: no end marker
    console: str            # the whole serial console
    output: str             # the console between the start and end markers
    boot_seconds: Optional[float]   # launch to start marker
    total_seconds: float            # launch to end marker (or giving up)
    timed_out: bool
    qemu_log: str           # QEMU's own stdout/stderr
    log_dir: Path

    @property
    def ok(self) -> bool:
        return self.status == 0

    def report(self) -> str:
        """A failure report: why, then the console and QEMU's output."""
        if self.timed_out:
            why = f"timed out after {self.total_seconds:.0f} s"
        elif self.status is None:
            why = "QEMU exited without the end marker"
        else:
            why = f"guest script exited with status {self.status}"
        text = [f"=== guest {self.name}: {why} (logs: {self.log_dir})",
                "--- serial console ---", self.console.rstrip()]
        if self.qemu_log.strip():
            text += ["--- qemu ---", self.qemu_log.rstrip()]
        return "\n".join(text) + "\n"


def kernel_image(directory: Path = GUEST_DIR) -> Path:
    """The uncompressed PVH vmlinux if the builder made one (boots ~1 s
    faster under TCG: no decompression in the guest), else vmlinuz."""
    vmlinux = directory / "vmlinux"
    return vmlinux if vmlinux.exists() else directory / "vmlinuz"


def initrd_with_files(image: Path, files: dict, out: Path) -> Path:
    """OUT: the initramfs IMAGE followed by a second cpio archive holding
    FILES ({path in the guest: bytes}, mode 0755; the kernel unpacks
    concatenated archives in order, so they land in IMAGE's root)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        for name, data in files.items():
            path = tree / name.lstrip("/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o755)
        names = "\n".join(str(p.relative_to(tree)) for p in sorted(tree.rglob("*"))) + "\n"
        extra = subprocess.run(["cpio", "-o", "-H", "newc", "-R", "0:0", "--quiet"], cwd=tree,
                               input=names.encode(), capture_output=True, check=True).stdout
    with open(out, "wb") as initrd:
        initrd.write(Path(image).read_bytes())
        initrd.write(subprocess.run(["gzip", "-c"], input=extra, capture_output=True,
                                    check=True).stdout)
    return out


def _default_initrd() -> Path:
    return GUEST_DIR / "initramfs.cpio.gz"


class Guest:
    """One test guest: QEMU with the guest kernel, initramfs and a script.

    script:  the guest shell script, as text (str) or a file (Path); None
             boots to the guest's interactive shell (not useful here).
    args:    extra QEMU arguments, e.g. ["-device", "rnic", "-netdev", ...].
    append:  extra kernel command line.
    timeout: seconds from launch to the end marker.
    sched:   host scheduling of its QEMU threads (HostSched, benchmarks).
    pass_fds: file descriptors QEMU inherits (and ARGS name), e.g. one end
             of a socket pair for -netdev stream,addr.type=fd; only this
             guest's QEMU gets them.
    wrapper: a command QEMU runs under, e.g. ["ip", "netns", "exec", NS]
             (linux_bridge.Bridge.wrapper).
    accel:   the accelerator (tcg; kvm where /dev/kvm works).
    """

    def __init__(self, script: Union[str, Path, None] = None, *,
                 name: str = "guest",
                 args: Sequence[str] = (),
                 qemu: Union[str, Path, None] = None,
                 kernel: Union[str, Path, None] = None,
                 initrd: Union[str, Path, None] = None,
                 memory: int = 512,
                 smp: int = 1,
                 append: str = "",
                 timeout: float = 120,
                 log_dir: Union[str, Path, None] = None,
                 keep_logs: bool = False,
                 sched: HostSched = HostSched(),
                 pass_fds: Sequence[int] = (),
                 wrapper: Sequence[str] = (),
                 accel: str = "tcg"):
        self.name = name
        self.accel = accel
        self.wrapper = list(wrapper)
        self.pass_fds = list(pass_fds)
        self.sched = sched
        self.script = script
        self.extra_args = list(args)
        self.qemu = Path(qemu or os.environ.get("RNIC_QEMU", DEFAULT_QEMU))
        self.kernel = Path(kernel or kernel_image())
        self.initrd = Path(initrd or _default_initrd())
        self.memory = memory
        self.smp = smp
        self.append = append
        self.timeout = timeout
        self.keep_logs = keep_logs
        self._log_dir_arg = log_dir
        self.log_dir: Optional[Path] = None
        self.console_path: Optional[Path] = None
        self.vm: Optional[QEMUMachine] = None
        self._launch_time = 0.0
        self._start_time: Optional[float] = None
        self._end_time: Optional[float] = None
        self._status: Optional[int] = None
        self._console = ""
        self._console_bytes = b""
        self._result: Optional[GuestResult] = None

    # --- setup -------------------------------------------------------------
    def qemu_args(self) -> List[str]:
        """The QEMU arguments besides QEMUMachine's own (display, QMP)."""
        assert self.console_path is not None and self.log_dir is not None
        args = ["-nodefaults", "-machine", "q35", "-accel", self.accel,
                "-m", str(self.memory), "-smp", str(self.smp),
                "-bios", str(BIOS), "-no-reboot",
                "-kernel", str(self.kernel), "-initrd", str(self.initrd),
                "-append", " ".join(filter(None, [
                    "console=ttyS0 panic=-1 loglevel=4 mitigations=off", self.append])),
                "-chardev", f"file,id=rnic-console,path={self.console_path}",
                "-serial", "chardev:rnic-console"]
        if FIRMWARE_DIR.is_dir():   # -kernel's option ROMs: pvh.bin, linuxboot_dma.bin
            args[0:0] = ["-L", str(FIRMWARE_DIR)]
        if self.script is not None:
            script = self.log_dir / "script.sh"
            if isinstance(self.script, Path):
                shutil.copyfile(self.script, script)
            else:
                script.write_text(self.script)
            args += ["-fw_cfg", f"name=opt/rnic/run,file={script}"]
        return args + self.extra_args

    def launch(self) -> None:
        """Start QEMU; returns once QMP is connected (the guest is booting)."""
        for path in (self.qemu, self.kernel, self.initrd):
            if not path.exists():
                hint = ("scripts/build-qemu.sh" if path == self.qemu
                        else "scripts/guest/build-image.sh")
                raise GuestError(f"{path} missing (build it with {hint})")
        if self._log_dir_arg:
            self.log_dir = Path(self._log_dir_arg)
            self.log_dir.mkdir(parents=True, exist_ok=True)
        else:
            LOG_ROOT.mkdir(parents=True, exist_ok=True)
            self.log_dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-",
                                                 dir=LOG_ROOT))
        self.console_path = self.log_dir / "console.log"
        self.console_path.write_bytes(b"")
        self.vm = QEMUMachine(str(self.qemu), args=self.qemu_args(),
                              wrapper=self.wrapper, name=self.name, log_dir=str(self.log_dir),
                              base_temp_dir=str(self.log_dir))
        self._launch_time = time.monotonic()
        for fd in self.pass_fds:
            os.set_inheritable(fd, True)
        try:
            self.vm.launch()
        finally:
            for fd in self.pass_fds:
                os.set_inheritable(fd, False)
        if self.sched.vcpu_nice is not None:
            for cpu in self.vm.cmd("query-cpus-fast"):
                os.setpriority(os.PRIO_PROCESS, cpu["thread-id"],
                               self.sched.vcpu_nice)
        if self.sched.io_slice_us is not None:
            set_sched_slice(self.vm.get_pid(), self.sched.io_slice_us)

    # --- progress ----------------------------------------------------------
    def console(self) -> str:
        """The serial console so far."""
        if self.console_path and self.console_path.exists():
            with open(self.console_path, "rb") as log:
                log.seek(len(self._console_bytes))
                more = log.read()
            if more:
                self._console_bytes += more
                self._console = self._console_bytes.decode("utf-8", "replace")
        return self._console

    def poll(self) -> bool:
        """True once the guest has finished (end marker or QEMU gone)."""
        if self._end_time is not None:
            return True
        text = self.console()
        now = time.monotonic()
        if self._start_time is None and START_RE.search(text):
            self._start_time = now
        match = EXIT_RE.search(text)
        if match:
            self._status = int(match.group(1))
            self._end_time = now
        elif self.vm is None or not self.vm.is_running():
            self._end_time = now
            self.console()  # QEMU may have written its last lines
            match = EXIT_RE.search(self._console)
            if match:
                self._status = int(match.group(1))
        return self._end_time is not None

    def wait_console(self, pattern: str, timeout: float = 60) -> bool:
        """Wait until the console matches the regex PATTERN (e.g. a server's
        "listening" line, or START_MARKER); False on timeout or QEMU exit."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while not regex.search(self.console()):
            if (time.monotonic() > deadline or self.vm is None
                    or not self.vm.is_running()):
                return False
            time.sleep(0.05)
        return True

    def press_key(self) -> None:
        """Press a key on the guest's PS/2 keyboard: a signal its script can
        wait for (KEY_WAIT) without a network."""
        assert self.vm is not None
        self.vm.cmd("send-key", keys=[{"type": "qcode", "data": "shift"}])

    def stop(self) -> None:
        """Quit QEMU without waiting for the guest (e.g. a migration source
        after the switchover) and drop its logs unless keep_logs."""
        if self.vm is not None:
            self.vm.shutdown()
        if self.log_dir and not self.keep_logs and not self._log_dir_arg:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def expired(self) -> bool:
        return time.monotonic() - self._launch_time > self.timeout

    def finish(self, timed_out: bool = False) -> GuestResult:
        """Stop QEMU (it powers off by itself after the marker) and report."""
        if self._result is not None:
            return self._result
        end = self._end_time or time.monotonic()
        qemu_log = ""
        if self.vm is not None:
            try:
                if timed_out or self._status is None:
                    self.vm.shutdown(hard=True)
                else:
                    self.vm.wait(timeout=10)    # guest runs poweroff -f
            except Exception:  # pylint: disable=broad-except
                self.vm.shutdown(hard=True)
            qemu_log = self.vm.get_log() or ""
        console = self.console()
        output = console
        start = START_RE.search(console)
        if start:
            output = console[start.end():].lstrip("\r\n")
        end_match = EXIT_RE.search(output)
        if end_match:
            output = output[:end_match.start()]
        boot = (self._start_time - self._launch_time
                if self._start_time is not None else None)
        self._result = GuestResult(
            name=self.name, status=self._status, console=console,
            output=output.replace("\r\n", "\n"), boot_seconds=boot,
            total_seconds=end - self._launch_time, timed_out=timed_out,
            qemu_log=qemu_log, log_dir=self.log_dir or Path("."))
        if self._result.ok and not self.keep_logs and not self._log_dir_arg:
            shutil.rmtree(self.log_dir, ignore_errors=True)
        return self._result

    def launch_failed(self, exc: Exception) -> GuestResult:
        """Record that launch() raised EXC (QEMU refused its arguments...)."""
        self.vm = None
        self._end_time = self._launch_time = time.monotonic()
        self._result = GuestResult(
            name=self.name, status=None, console=self.console(), output="",
            boot_seconds=None, total_seconds=0.0, timed_out=False,
            qemu_log=f"launch failed: {exc}", log_dir=self.log_dir or Path("."))
        return self._result

    def wait(self) -> GuestResult:
        """Wait for the end marker (or timeout) and stop QEMU."""
        while not self.poll():
            if self.expired():
                return self.finish(timed_out=True)
            time.sleep(0.05)
        return self.finish()

    def run(self) -> GuestResult:
        """launch() + wait()."""
        try:
            self.launch()
        except Exception as exc:  # pylint: disable=broad-except
            return self.launch_failed(exc)
        return self.wait()

    def __enter__(self) -> "Guest":
        return self

    def __exit__(self, *exc) -> None:
        if self.vm is not None and self._result is None:
            self.finish(timed_out=self._end_time is None)


def run_guests(guests: Sequence[Guest]) -> List[GuestResult]:
    """Boot several guests at once (e.g. peers on one -netdev segment) and
    wait until each has finished or reached its timeout. A guest that fails
    to start gets a result with status None and QEMU's error as its log."""
    try:
        for guest in guests:
            try:
                guest.launch()
            except Exception as exc:  # pylint: disable=broad-except
                guest.launch_failed(exc)
        pending = [guest for guest in guests if guest.vm is not None]
        while pending:
            for guest in list(pending):
                if guest.poll():
                    guest.finish()
                    pending.remove(guest)
                elif guest.expired():
                    guest.finish(timed_out=True)
                    pending.remove(guest)
            time.sleep(0.05)
    finally:
        for guest in guests:
            guest.finish(timed_out=not guest.poll())
    return [guest.finish() for guest in guests]


def run_guest(script: Union[str, Path], **kwargs) -> GuestResult:
    """Boot one guest, run script, return its result."""
    return Guest(script, **kwargs).run()
