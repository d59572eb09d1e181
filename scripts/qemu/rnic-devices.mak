# SPDX-License-Identifier: GPL-2.0-or-later
# Device list of the reduced QEMU build (--without-default-devices).
# The .mak ignores 'default y' and 'imply': every wanted symbol is listed.
# RNIC_QEMU_DEVICES=full builds QEMU's whole default set plus these instead.

# Boards: q35 for guests, i440fx ('pc') because it is the x86 libqos machine.
CONFIG_Q35=y
CONFIG_I440FX=y

# PCIe topology and a vIOMMU (DMA through the IOMMU is part of the contract).
CONFIG_PCIE_PORT=y
CONFIG_PCIE_PCI_BRIDGE=y
# pcie-pci-bridge uses pci-bridge's hotplug callbacks (its Kconfig does not select it)
CONFIG_PCI_BRIDGE=y
CONFIG_VTD=y

# Ordinary NICs, for comparison runs (Soft-RoCE on virtio-net) and as peers.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_E1000E_PCI_EXPRESS=y
CONFIG_E1000_PCI=y

# Serial console for the guests and the qtests' firmware.
CONFIG_SERIAL_ISA=y
CONFIG_ISA_DEBUG=y

# What a default libvirt x86 domain (virt-install, q35) puts beside the NIC:
# qemu-xhci with a usb-tablet, virtio-serial (console, guest agent channel),
# virtio-balloon, virtio-rng, virtio disks, and a video model without a
# display of its own (bochs-display) or the standard VGA.
CONFIG_USB_XHCI_PCI=y
CONFIG_USB_HID=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_BALLOON=y
CONFIG_VIRTIO_RNG=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_SCSI=y
CONFIG_BOCHS_DISPLAY=y
CONFIG_VGA_PCI=y

# The device of this project.
CONFIG_RNIC=y
