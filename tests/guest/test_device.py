# SPDX-License-Identifier: GPL-2.0-or-later
"""device-visible: the guest kernel enumerates -device rnic as the ABI header
describes it (IDs, Ethernet class, BARs, MSI-X), on the q35 root bus and
behind a PCIe root port. No driver is involved: sysfs and config space only."""

from guesttest import abi_define, case, parse_pci, pci_show_script, rnic_ids


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
