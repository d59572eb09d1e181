# SPDX-License-Identifier: GPL-2.0-or-later
"""libvirt runs the rnic (issue 23): docs/examples/rnic-domain.xml, with
only its paths, name and network changed, defined and started with virsh
from Debian's libvirt (11.3, bookworm-backports), TCG.

  libvirt-domain   the domain boots the project's guest image with the
                   build's QEMU as <emulator>; the guest script arrives in
                   a second cpio archive appended to the initramfs, named
                   by rnic.run= on the kernel command line (fw_cfg through
                   <sysinfo type='fwcfg'> reaches QEMU, but the guest's
                   qemu_fw_cfg lists no opt/ entries under libvirt's
                   SeaBIOS boot), the console goes to a file; the guest finds the rnic behind the pcie-root-port
                   libvirt gave it (IDs, class, BARs, MSI-X, as
                   device-visible), loads rnic.ko and sees rnic0. Root and
                   virsh needed (skipped otherwise); starts virtlogd and
                   libvirtd if none runs (a pid file left by a dead one does not
                   count), and stops what it started.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

from guesttest import TOP, Skip, procedure
from rnic_guest import LOG_ROOT, initrd_with_files, kernel_image
from test_device import check_rnic, script as pci_script
from test_provider import provider_image

EXAMPLE = TOP / "docs/examples/rnic-domain.xml"
URI = "qemu:///system"


def virsh(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True,
                          timeout=120)
    if check and proc.returncode:
        raise AssertionError(f"virsh {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def running(daemon: str, pidfile: Path) -> bool:
    """Whether PIDFILE names a live DAEMON (a pid file can outlive its
    daemon: a machine stopped without libvirt's own shutdown keeps it)."""
    try:
        pid = int(pidfile.read_text().strip())
        return Path(f"/proc/{pid}/comm").read_text().strip() == daemon
    except (OSError, ValueError):
        return False


def start_daemons(log_dir: Path) -> list:
    """Start virtlogd and libvirtd unless libvirt answers, each logging to
    LOG_DIR; return the pid files of what was started."""
    if subprocess.run(["virsh", "-c", URI, "version"], capture_output=True).returncode == 0:
        return []
    started = []
    for daemon in ("virtlogd", "libvirtd"):
        pidfile = Path(f"/run/{daemon}.pid")
        if running(daemon, pidfile):
            continue
        env = dict(os.environ, LIBVIRT_LOG_OUTPUTS=f"3:file:{log_dir / daemon}.log")
        subprocess.run([daemon, "--daemon", "--pid-file", str(pidfile)], check=True, env=env)
        started.append(pidfile)
    deadline = time.monotonic() + 60
    while (answer := subprocess.run(["virsh", "-c", URI, "version"], capture_output=True,
                                    text=True)).returncode:
        if time.monotonic() > deadline:
            logs = "".join(f"\n{p.name}:\n" + p.read_text(errors="replace")[-3000:]
                           for p in sorted(log_dir.glob("*.log")))
            stop_daemons(started)
            raise AssertionError(f"libvirt did not answer within 60 s: "
                                 f"{answer.stderr.strip()}{logs}")
        time.sleep(0.5)
    return started


def stop_daemons(pidfiles: list) -> None:
    for pidfile in reversed(pidfiles):
        try:
            os.kill(int(pidfile.read_text().strip()), 15)
        except (OSError, ValueError):
            pass


SCRIPT_IN_GUEST = "/etc/rnic-test.sh"


def domain_xml(name: str, qemu: str, log_dir: Path) -> str:
    """The example with this build's paths, a file console, the script in
    the initramfs, user networking (no bridge on the host) and no relabelling of
    the build tree's files (they are world-readable)."""
    root = ET.parse(EXAMPLE).getroot()
    root.find("name").text = name
    osel = root.find("os")
    osel.find("kernel").text = str(kernel_image())
    osel.find("initrd").text = str(log_dir / "initrd.cpio.gz")
    osel.find("cmdline").text = ("console=ttyS0 panic=-1 loglevel=4 mitigations=off "
                                 f"rnic.run={SCRIPT_IN_GUEST}")
    devices = root.find("devices")
    devices.find("emulator").text = str(Path(qemu).resolve())
    iface = devices.find("interface")
    iface.set("type", "user")
    iface.remove(iface.find("source"))
    for tag in ("serial", "console"):
        devices.remove(devices.find(tag))
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=str(log_dir / "console.log"))
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(root, "seclabel", type="none", model="dac")
    return ET.tostring(root, encoding="unicode")


@procedure("libvirt-domain", requires=["rnic"])
def libvirt_domain(qemu: str) -> None:
    if os.geteuid() != 0:
        raise Skip("needs root (libvirt's system daemon)")
    if not shutil.which("virsh") or not shutil.which("libvirtd"):
        raise Skip("libvirt is not installed (scripts/setup-host.sh installs it)")
    name = f"rnic-test-{os.getpid()}"
    LOG_ROOT.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix="libvirt-domain-", dir=LOG_ROOT))
    os.chmod(log_dir, 0o755)
    started = start_daemons(log_dir)
    script = "#!/bin/sh\n" + pci_script() + """
modprobe rnic || exit 1
n=0; until [ -e /sys/class/infiniband/rnic0 ] || [ $n -ge 50 ]; do sleep 0.1; n=$((n+1)); done
echo "ib-devices: $(ls /sys/class/infiniband)"
"""
    initrd_with_files(Path(provider_image()), {SCRIPT_IN_GUEST: script.encode()},
                      log_dir / "initrd.cpio.gz")
    xml = log_dir / "domain.xml"
    xml.write_text(domain_xml(name, qemu, log_dir))
    try:
        virsh("define", str(xml))
        virsh("start", name)
        deadline = time.monotonic() + 240
        while virsh("domstate", name).strip() != "shut off":
            assert time.monotonic() < deadline, "the domain did not power off in 240 s"
            time.sleep(1)
        console = (log_dir / "console.log").read_text(errors="replace").replace("\r\n", "\n")
        version = virsh("version").splitlines()[0].strip()
    finally:
        virsh("destroy", name, check=False)
        virsh("undefine", name, check=False)
        stop_daemons(started)
    exit_status = re.search(r"^RNIC-GUEST-EXIT (\d+)$", console, re.MULTILINE)
    assert exit_status and exit_status.group(1) == "0", f"guest script failed:\n{console}"
    result = SimpleNamespace(
        output=console[console.index("RNIC-GUEST-START"):exit_status.start()])
    check_rnic(result, behind_root_port=True)
    assert re.search(r"^ib-devices: .*\brnic0\b", result.output, re.MULTILINE), result.output
    print(f"# libvirt-domain: {version}; the domain's rnic behind its pcie-root-port, "
          f"rnic0 registered", flush=True)
