# SPDX-License-Identifier: GPL-2.0-or-later
"""device-visible: the guest kernel enumerates -device rnic as the ABI header
describes it (IDs, Ethernet class, BARs, MSI-X), on the q35 root bus and
behind a PCIe root port. No driver is involved: sysfs and config space only.

device-visible-libvirt-set: the same among the devices a default libvirt
q35 domain has (each behind its own pcie-root-port: qemu-xhci with a
usb-tablet, virtio-serial with a console port, virtio-balloon, virtio-rng,
bochs-display), so the build a user installs carries them and they
coexist with rnic.

qemu-user-build: the build is one a user runs: KVM compiled in (-accel
help), qemu-img and qemu-bridge-helper built and runnable.

device-visible-kvm: device-visible under -accel kvm; skipped where
/dev/kvm is not usable (these machines: TCG only; on some /dev/kvm opens
but a guest without the device already dies of a KVM internal error).

config-errors: command-line mistakes (a netdev= or scm= naming nothing, a
bridge the helper's ACL does not allow, a tap an unprivileged user cannot
open) end QEMU with the message docs/usage.md shows (the root-only ones
skipped without root)."""

import os
import subprocess
from pathlib import Path

from guesttest import (Skip, abi_define, case, parse_pci, pci_show_script, procedure,
                       rnic_ids, run_guests)
from linux_bridge import allow_bridge_in_acl
from rnic_guest import Guest


def script() -> str:
    ids = rnic_ids()
    return pci_show_script(ids["vendor"], ids["device"])


def check_rnic(result, behind_root_port: bool) -> None:
    ids = rnic_ids()
    devices = parse_pci(result.output)
    assert len(devices) == 1, f"expected one rnic function, guest found {len(devices)}"
    dev = devices[0]
    assert int(dev["vendor"], 0) == ids["vendor"], dev["vendor"]
    assert int(dev["device"], 0) == ids["device"], dev["device"]
    klass = int(dev["class"], 0)
    assert klass >> 8 == 0x0200, f"class {klass:#08x} is not Ethernet (0x0200xx)"
    if "class" in ids:
        assert klass == ids["class"], f"class {klass:#08x}, header says {ids['class']:#08x}"

    bus = int(dev["slot"].split(":")[1], 16)
    if behind_root_port:
        assert bus != 0, f"{dev['slot']} is on the root bus, not behind rp0"
    else:
        assert bus == 0, f"{dev['slot']} is not on the root bus"

    regs_bar = abi_define("RNIC_BAR_REGS")
    regs_bar = 0 if regs_bar is None else regs_bar
    bars = dev["bars"]
    assert regs_bar in bars, f"no BAR{regs_bar} (registers); BARs: {sorted(bars)}"
    assert bars[regs_bar]["type"].startswith("mem"), bars[regs_bar]
    regs_size = abi_define("RNIC_REGS_SIZE")
    if regs_size:
        assert bars[regs_bar]["size"] >= regs_size, bars[regs_bar]
    db_bar = abi_define("RNIC_BAR_DOORBELLS")
    if db_bar is not None:
        assert db_bar in bars, f"no BAR{db_bar} (doorbells); BARs: {sorted(bars)}"

    msix = [cap for cap in dev["caps"] if int(cap["id"], 0) == 0x11]
    assert len(msix) == 1, f"expected one MSI-X capability, caps: {dev['caps']}"
    msix = msix[0]
    assert int(msix["table_size"]) >= 1, msix
    table_bar = int(msix["table"].split("+")[0][3:])
    assert table_bar in bars, f"MSI-X table in BAR{table_bar}, which is not there"
    msix_bar = abi_define("RNIC_BAR_MSIX")
    if msix_bar is not None:
        assert table_bar == msix_bar, f"MSI-X table in BAR{table_bar}, header says BAR{msix_bar}"


case("device-visible", ["-device", "rnic"], script,
     lambda result: check_rnic(result, behind_root_port=False),
     requires=["rnic"])
case("device-visible-root-port",
     ["-device", "pcie-root-port,id=rp0,chassis=1", "-device", "rnic,bus=rp0"],
     script, lambda result: check_rnic(result, behind_root_port=True),
     requires=["rnic"])


# What virt-install --osinfo debian12 --graphics none gives a q35 domain
# (libvirt 11): every PCIe device on a root port of its own.
LIBVIRT_SET = ["-device", "pcie-root-port,id=rp1,chassis=1,port=0x10,addr=0x2.0,multifunction=on",
               "-device", "pcie-root-port,id=rp2,chassis=2,port=0x11,addr=0x2.1",
               "-device", "pcie-root-port,id=rp3,chassis=3,port=0x12,addr=0x2.2",
               "-device", "pcie-root-port,id=rp4,chassis=4,port=0x13,addr=0x2.3",
               "-device", "pcie-root-port,id=rp5,chassis=5,port=0x14,addr=0x2.4",
               "-device", "pcie-root-port,id=rp6,chassis=6,port=0x15,addr=0x2.5",
               "-device", "qemu-xhci,id=usb,bus=rp1,p2=15,p3=15",
               "-device", "usb-tablet,id=input0,bus=usb.0,port=1",
               "-device", "virtio-serial-pci,id=vs0,bus=rp2",
               "-chardev", "null,id=charchannel0",
               "-device", "virtserialport,bus=vs0.0,nr=1,chardev=charchannel0,"
                          "id=channel0,name=org.qemu.guest_agent.0",
               "-device", "virtio-balloon-pci,id=balloon0,bus=rp3",
               "-object", "rng-random,id=objrng0,filename=/dev/urandom",
               "-device", "virtio-rng-pci,rng=objrng0,id=rng0,bus=rp4",
               "-device", "bochs-display,id=video0,bus=rp5",
               "-device", "rnic,bus=rp6"]
case("device-visible-libvirt-set", LIBVIRT_SET, script,
     lambda result: check_rnic(result, behind_root_port=True),
     requires=["rnic", "qemu-xhci", "usb-tablet", "virtio-serial-pci",
               "virtio-balloon-pci", "virtio-rng-pci", "bochs-display"])


@procedure("qemu-user-build", requires=["rnic"])
def qemu_user_build(qemu: str) -> None:
    out = subprocess.run([qemu, "-accel", "help"], capture_output=True, text=True,
                         check=True).stdout
    accels = [line.strip() for line in out.splitlines()[1:] if line.strip()]
    assert "kvm" in accels and "tcg" in accels, f"accelerators: {accels}"
    build = Path(qemu).parent
    img = subprocess.run([str(build / "qemu-img"), "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert img.startswith("qemu-img version 10.0"), img
    helper = subprocess.run([str(build / "qemu-bridge-helper"), "--help"],
                            capture_output=True, text=True)
    assert "--br=bridge" in helper.stdout + helper.stderr, helper
    print(f"# accelerators {', '.join(accels)}; {img.splitlines()[0]}; "
          "qemu-bridge-helper built", flush=True)


# Mistakes on the command line and what QEMU says (docs/usage.md, "When it
# is set up wrong"): (arguments, message, needs root)
MISTAKES = [
    (["-device", "rnic,netdev=nope"], "Property 'rnic.netdev' can't find value 'nope'", False),
    (["-device", "rnic,scm=nope"], "Device 'nope' not found", False),
    (["-netdev", "bridge,id=n0,br=nobr0,helper=@HELPER@", "-device", "rnic,netdev=n0"],
     "access denied by acl file", True),
    (["-netdev", "tap,id=n0,ifname=rnictap9,script=no,downscript=no",
      "-device", "rnic,netdev=n0"], "could not open /dev/net/tun: Permission denied", True),
]


@procedure("config-errors", requires=["rnic"])
def config_errors(qemu: str) -> None:
    helper = str(Path(qemu).parent / "qemu-bridge-helper")
    if os.geteuid() == 0:
        allow_bridge_in_acl()   # an ACL that allows rnicbr0 (and not nobr0)
    checked = []
    for args, message, needs_root in MISTAKES:
        if needs_root and os.geteuid() != 0:
            continue
        cmd = [qemu, "-M", "q35", "-nodefaults", "-display", "none", "-S",
               *(a.replace("@HELPER@", helper) for a in args)]
        if "ifname=" in " ".join(args):
            # a user without CAP_NET_ADMIN (root would create the tap)
            cmd = ["runuser", "-u", "nobody", "--"] + cmd
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode != 0 and message in proc.stderr, \
            f"{' '.join(args)}: exit {proc.returncode}, {proc.stderr!r}"
        checked.append(message)
    print(f"# config-errors: {len(checked)} mistakes refused with their message", flush=True)


@procedure("device-visible-kvm", requires=["rnic"])
def device_visible_kvm(qemu: str) -> None:
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError as err:
        raise Skip(f"no usable /dev/kvm here ({err.strerror}): TCG only") from err
    # a /dev/kvm that opens may still not run guests (nested virtualization
    # that cannot emulate what a guest kernel does): a guest without the
    # device tells
    probe, = run_guests([Guest("true", name="device-visible-kvm-probe", qemu=qemu,
                               accel="kvm", timeout=60)])
    if not probe.ok:
        text = probe.qemu_log + probe.console
        why = next((m for m in ("KVM internal error", "emulation failure", "Code=")
                    if m in text), "timed out" if probe.timed_out else f"status {probe.status}")
        raise Skip(f"/dev/kvm opens but a guest without the rnic does not run under it "
                   f"({why}): KVM unusable here, TCG only")
    result, = run_guests([Guest(script(), name="device-visible-kvm", qemu=qemu,
                                accel="kvm", args=["-device", "rnic"])])
    assert result.ok, result.report()
    check_rnic(result, behind_root_port=False)
    print("# device-visible-kvm: the rnic enumerated under -accel kvm", flush=True)
