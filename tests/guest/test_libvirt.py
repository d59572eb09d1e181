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
                   device-visible), loads rnic.ko and sees rnic0; the same
                   domain with model 'rnix' fails to start with QEMU's
                   "'rnix' is not a valid device model name". Root and
                   virsh needed (skipped otherwise); libvirtd and virtlogd
                   are a LibvirtHost of the test's own
                   (scripts/guest/libvirt_host.py), so whatever libvirt the
                   host runs, or left behind, plays no part.
  libvirt-migrate  the same domain on a Linux bridge, under checked RDMA
                   traffic from a plain QEMU guest B on the bridge, moved
                   by `virsh migrate --live` from one libvirtd to another
                   (two "hosts": scripts/guest/libvirt_host.py, each with
                   private libvirt directories, hostname and host UUID, in
                   the bridge's network namespace): every byte verified,
                   nothing lost or duplicated, the bridge moved the MAC to
                   the destination's tap. Root only.
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
from libvirt_host import LibvirtHost
from linux_bridge import BRIDGE, Bridge, can_run
from migrate_rdma import SCRIPT_A, SCRIPT_B, assert_verified, verify_result
from rnic_guest import LOG_ROOT, Guest, initrd_with_files, kernel_image
from test_driver import assert_clean_dmesg
from test_device import check_rnic, script as pci_script
from test_provider import provider_image

EXAMPLE = TOP / "docs/examples/rnic-domain.xml"


def need_libvirt(prefix: str) -> Path:
    """Skip without root or libvirt; else a new log directory PREFIX-* that
    libvirt's QEMU (user libvirt-qemu) can read."""
    if os.geteuid() != 0:
        raise Skip("needs root (libvirt's system daemons, namespaces)")
    if not shutil.which("virsh") or not shutil.which("libvirtd"):
        raise Skip("libvirt is not installed (scripts/setup-host.sh installs it)")
    LOG_ROOT.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=LOG_ROOT))
    os.chmod(log_dir, 0o755)
    return log_dir


SCRIPT_IN_GUEST = "/etc/rnic-test.sh"


def domain_xml(name: str, qemu: str, log_dir: Path, bridge: str = "") -> str:
    """The example with this build's paths, a file console (appended to: a
    migration's destination goes on writing it), the script in the
    initramfs, no relabelling of the build tree's files (they are
    world-readable), and the example's bridge interface on BRIDGE, or (no
    BRIDGE) user networking."""
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
    if bridge:
        iface.find("source").set("bridge", bridge)
    else:
        iface.set("type", "user")
        iface.remove(iface.find("source"))
    for tag in ("serial", "console"):
        devices.remove(devices.find(tag))
    serial = ET.SubElement(devices, "serial", type="file")
    ET.SubElement(serial, "source", path=str(log_dir / "console.log"), append="on")
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(root, "seclabel", type="none", model="dac")
    return ET.tostring(root, encoding="unicode")


@procedure("libvirt-domain", requires=["rnic"], alone=True)
def libvirt_domain(qemu: str) -> None:
    log_dir = need_libvirt("libvirt-domain")
    name = f"rnic-test-{os.getpid()}"
    script = "#!/bin/sh\n" + pci_script() + """
modprobe rnic || exit 1
n=0; until [ -e /sys/class/infiniband/rnic0 ] || [ $n -ge 50 ]; do sleep 0.1; n=$((n+1)); done
echo "ib-devices: $(ls /sys/class/infiniband)"
"""
    initrd_with_files(Path(provider_image()), {SCRIPT_IN_GUEST: script.encode()},
                      log_dir / "initrd.cpio.gz")
    xml = log_dir / "domain.xml"
    xml.write_text(domain_xml(name, qemu, log_dir))
    with LibvirtHost("rnic-host", log_dir / "host") as host:
        host.virsh("define", str(xml))
        host.virsh("start", name)
        deadline = time.monotonic() + 240
        while host.virsh("domstate", name).strip() != "shut off":
            assert time.monotonic() < deadline, "the domain did not power off in 240 s"
            time.sleep(1)
        console = console_text(log_dir)
        version = host.virsh("version").splitlines()[0].strip()
        # a model QEMU does not have: libvirt defines it, the start fails clearly
        bad = log_dir / "bad-model.xml"
        bad.write_text(xml.read_text().replace('type="rnic"', 'type="rnix"').replace(
            f"<name>{name}</name>", f"<name>{name}-bad</name>"))
        started_bad = subprocess.run(["virsh", "-c", host.uri, "create", str(bad)],
                                     capture_output=True, text=True, timeout=120)
        assert started_bad.returncode != 0 and \
            "'rnix' is not a valid device model name" in started_bad.stderr, started_bad
    exit_status = re.search(r"^RNIC-GUEST-EXIT (\d+)$", console, re.MULTILINE)
    assert exit_status and exit_status.group(1) == "0", f"guest script failed:\n{console}"
    result = SimpleNamespace(
        output=console[console.index("RNIC-GUEST-START"):exit_status.start()])
    check_rnic(result, behind_root_port=True)
    assert re.search(r"^ib-devices: .*\brnic0\b", result.output, re.MULTILINE), result.output
    print(f"# libvirt-domain: {version}; the domain's rnic behind its pcie-root-port, "
          f"rnic0 registered", flush=True)


# ---------------------------------------------------------------------------
# virsh migrate --live under RDMA traffic

QP_TIMEOUT = 16            # as test_migration: 268 ms ACK timeout, 7 retries
TRAFFIC_SECONDS = 15       # B's checked traffic; the migration starts after 4 s of it
MIGRATE_PORT = 49152       # the destination QEMU's migration listener
B_MAC = "52:54:00:00:0a:02"


A_DONE = "A-DONE"          # A's script has printed its trailer


def console_text(log_dir: Path) -> str:
    """A's console (the domain's file serial), then A''s."""
    path = log_dir / "console.log"
    return path.read_text(errors="replace").replace("\r\n", "\n") if path.exists() else ""


def example_mac() -> str:
    return ET.parse(EXAMPLE).getroot().find("devices/interface/mac").get("address")


@procedure("libvirt-migrate", requires=["rnic"], alone=True)
def libvirt_migrate(qemu: str) -> None:
    why = can_run()
    if why:
        raise Skip(why)
    log_dir = need_libvirt("libvirt-migrate")
    name = f"rnic-mig-{os.getpid()}"
    mac = example_mac()
    image = Path(provider_image())
    # A' stays up after its trailer (A_DONE) until the test destroys it: a
    # guest that powered off as soon as B's traffic ended could be gone
    # before virsh migrate's Finish phase on host 2 looked it up (on a
    # loaded machine a migration takes 8 s and more): the likely cause of
    # a CI run's "virsh migrate: Domain not found"
    a_script = "#!/bin/sh\n" + SCRIPT_A.replace(
        "@CMD@", f"timeout 240 rnic_migrate_verify -s -T {QP_TIMEOUT}").replace(
            "@LISTENING@", "") + f'echo "{A_DONE}"\nsleep 600\n'
    initrd_with_files(image, {SCRIPT_IN_GUEST: a_script.encode()}, log_dir / "initrd.cpio.gz")
    b_cmd = f"timeout 240 rnic_migrate_verify -c 10.0.0.1 -T {QP_TIMEOUT} -t {TRAFFIC_SECONDS}"
    b_script = SCRIPT_B.replace("@CMD@", b_cmd).replace("@WAIT_LISTENING@", "")
    xml = log_dir / "domain.xml"
    xml.write_text(domain_xml(name, qemu, log_dir, bridge=BRIDGE))
    with Bridge() as bridge, \
            LibvirtHost("rnic-host1", log_dir / "host1", bridge.ns) as host1, \
            LibvirtHost("rnic-host2", log_dir / "host2", bridge.ns) as host2:
        host1.virsh("create", str(xml))
        peer = Guest(b_script, name="libvirt-migrate-B", qemu=qemu, initrd=image,
                     timeout=300, wrapper=bridge.wrapper,
                     args=bridge.netdev_args("rnic", B_MAC))
        peer.launch()
        try:
            assert peer.wait_console(r"^b: verify: t=\S+ iters=[1-9]", 180), \
                f"B's traffic did not start\n{peer.console()}"
            time.sleep(4)
            port_before = bridge.port_of(mac)
            t0 = time.monotonic()
            migrate = subprocess.run(
                ["virsh", "-c", host1.uri, "migrate", "--live", "--verbose", name, host2.uri,
                 "--migrateuri", f"tcp://127.0.0.1:{MIGRATE_PORT}"],
                capture_output=True, text=True, timeout=300)
            migrate_s = time.monotonic() - t0
            assert migrate.returncode == 0, (
                f"virsh migrate: {migrate.stderr}\n--- A's console ---\n"
                f"{console_text(log_dir)[-4000:]}\n--- B ---\n{peer.console()[-3000:]}\n"
                f"{host1.log_tail()}{host2.log_tail()}")
            assert name not in host1.virsh("list", "--name").split()
            assert name in host2.virsh("list", "--name").split()
            port_after = None
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                port_after = bridge.port_of(mac)
                if port_after and port_after != port_before:
                    break
                time.sleep(0.01)
            deadline = time.monotonic() + 240
            while not peer.poll() or A_DONE not in console_text(log_dir):
                assert time.monotonic() < deadline, "A' or B did not finish in 240 s"
                assert name in host2.virsh("list", "--name").split(), \
                    f"A' is gone from host 2 before its end\n{console_text(log_dir)}"
                time.sleep(1)
            host2.virsh("destroy", name)
        finally:
            b = peer.finish(timed_out=not peer.poll())
    console = console_text(log_dir)
    a_lines = "\n".join(re.findall(r"^a: (.*)$", console, re.MULTILINE))
    b_lines = "\n".join(re.findall(r"^b: (.*)$", b.output, re.MULTILINE))
    report = f"--- A then A' ---\n{console}\n--- B ---\n{b.output}"
    assert b.ok, b.report()
    assert re.search(r"^rc=a:0$", a_lines, re.MULTILINE), report
    assert re.search(r"^rc=b:0$", b_lines, re.MULTILINE), report
    assert_clean_dmesg(console)
    assert_clean_dmesg(b.output)
    assert_verified(verify_result(b_lines, "client"), verify_result(a_lines, "server"), report)
    assert port_before and port_after and port_after != port_before, \
        f"the bridge did not move {mac}: {port_before} -> {port_after}\n{report}"
    client = verify_result(b_lines, "client")
    print(f"# libvirt-migrate: virsh migrate --live {migrate_s:.1f} s between two libvirtds "
          f"(own mount/UTS namespaces and host UUIDs) on one bridge; the bridge moved A's MAC "
          f"{port_before} -> {port_after}; B verified {client['iters']} iterations, "
          f"0 lost", flush=True)
