# SPDX-License-Identifier: GPL-2.0-or-later
# Device list of the reduced QEMU build (--without-default-devices).
# The .mak ignores 'default y' and 'imply': every wanted symbol is listed.

# Boards: q35 for guests, i440fx ('pc') because it is the x86 libqos machine.
CONFIG_Q35=y
CONFIG_I440FX=y

# PCIe topology and a vIOMMU (DMA through the IOMMU is part of the contract).
CONFIG_PCIE_PORT=y
CONFIG_VTD=y

# Ordinary NICs, for comparison runs (Soft-RoCE on virtio-net) and as peers.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_E1000E_PCI_EXPRESS=y
CONFIG_E1000_PCI=y

# Serial console for the guests and the qtests' firmware.
CONFIG_SERIAL_ISA=y
CONFIG_ISA_DEBUG=y

# The device of this project.
CONFIG_RNIC=y
