#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write hand-made generic-fuzz inputs for the rnic into a directory.

  tests/generic-fuzz/make-seeds.py DIR

QEMU's generic-fuzz reads its input as operations separated by "FUZZ"; the
first byte of each is the opcode (mod 10), the rest its arguments
(tests/qtest/fuzz/generic_fuzz.c). An MMIO operation names a region by its
index among the fuzzed MemoryRegions in address order (for one rnic: 0 the
BAR0 registers, 1 the MSI-X PBA and 2 the MSI-X table, both in BAR0 above
the registers, 3 the BAR2 doorbells; the BAR4 window is RAM, not fuzzed
as MMIO) and an offset in it. Every DMA read of guest memory that nothing wrote is filled from the
next DMA pattern.

These seeds bring the device to where a random input rarely gets: admin
queue configured and enabled, commands executed (ALLOC_PD, QUERY_DEVICE,
CREATE_EQ/CQ/QP), an MSI-X vector programmed and an interrupt raised, the
Ethernet function's rings, doorbells; the committed corpus is these plus
what a fuzzing run found from them, merged (-merge=1).
"""
import os
import struct
import sys

SEP = b'FUZZ'
OP_READ, OP_WRITE, OP_PCI_READ, OP_PCI_WRITE = 2, 3, 4, 5
OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = 7, 8, 9
REGS, MSIX_PBA, MSIX_TABLE, DOORBELLS = 0, 1, 2, 3
BYTE, WORD, LONG, QUAD = 0, 1, 2, 3

# include/rnic/rnic-abi.h
DEV_CTRL, IRQ_TEST = 0x080, 0x0a0
AQ_BASE_LO, ACQ_BASE_LO, AQ_SIZE_LOG2, AQ_TAIL, AQ_HEAD = 0x100, 0x108, 0x110, 0x114, 0x118
ETH_CTRL, ETH_TX_BASE_LO, ETH_TX_SIZE_LOG2, ETH_TX_TAIL = 0x140, 0x160, 0x168, 0x16c
ETH_RX_BASE_LO, ETH_RX_SIZE_LOG2, ETH_RX_TAIL = 0x180, 0x188, 0x18c
CTRL_ENABLE, CTRL_RESET, CTRL_AQ_IRQ = 1, 2, 4
CMD_QUERY_DEVICE, CMD_CREATE_NET_CTX, CMD_ALLOC_PD, CMD_CREATE_EQ, CMD_CREATE_CQ, CMD_CREATE_QP = 1, 3, 9, 11, 13, 19
CMD_REG_MR, CMD_DEREG_MR = 23, 25
DB_SQ, DB_RQ, DB_CQ, DB_EQ = 0x00, 0x08, 0x18, 0x20

AQ, ACQ, EQ_RING, CQ_RING, SQ_RING, RQ_RING, BUF = (
    0x100000, 0x101000, 0x102000, 0x103000, 0x104000, 0x105000, 0x110000)


def write(region, offset, value, size=LONG):
    # struct { uint8 size; uint8 base; (2 padding) uint32 offset; uint64 value; }
    return bytes([OP_WRITE]) + struct.pack('<BBxxIQ', size, region, offset, value)


def read(region, offset, size=LONG):
    return bytes([OP_READ]) + struct.pack('<BBxxI', size, region, offset)


def pattern(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN]) + struct.pack('<BB', index, stride) + data


def clock():
    return bytes([OP_CLOCK_STEP])


def cmd(opcode, body=b'', cmd_id=1):
    # struct rnic_admin_cmd: opcode, rsvd, cmd_id, uctx, 56 bytes of union
    return struct.pack('<BxHI', opcode, cmd_id, 0) + body.ljust(56, b'\0')


def enable_aq(log2=4):
    return [write(REGS, AQ_BASE_LO, AQ), write(REGS, ACQ_BASE_LO, ACQ),
            write(REGS, AQ_SIZE_LOG2, log2),
            write(REGS, DEV_CTRL, CTRL_ENABLE | CTRL_AQ_IRQ)]


def msix_vector0():
    # table entry 0: address (the APIC window), data, vector control unmasked;
    # the MSI-X enable bit is in config space (capability), left to the fuzzer
    return [write(MSIX_TABLE, 0, 0xfee00000), write(MSIX_TABLE, 8, 0x30),
            write(MSIX_TABLE, 12, 0)]


def seeds():
    s = {}
    # admin: a run of ALLOC_PDs (cmd_id counts up), then status registers
    s['admin-alloc-pd'] = (enable_aq() + [
        pattern(cmd(CMD_ALLOC_PD, struct.pack('<I', 0)), index=2, stride=1),
        write(REGS, AQ_TAIL, 3), clock(), read(REGS, AQ_HEAD),
        read(REGS, 0x084)])
    s['admin-query-device'] = (enable_aq() + [
        pattern(cmd(CMD_QUERY_DEVICE, struct.pack('<QII', BUF, 128, 0))),
        write(REGS, AQ_TAIL, 1), clock(), read(REGS, AQ_HEAD)])
    # network context, EQ on vector 0, CQ on it, PD, RC QP, MR: one DMA
    # pattern per command (each fill of a command slot takes the next one)
    net = cmd(CMD_CREATE_NET_CTX, struct.pack('<IB', 0, 0), 0)
    eq = cmd(CMD_CREATE_EQ, struct.pack('<QBBxxI', EQ_RING, 4, 1, 0), 1)
    cq = cmd(CMD_CREATE_CQ, struct.pack('<QBxxxII', CQ_RING, 4, 0, 0), 2)
    pd = cmd(CMD_ALLOC_PD, struct.pack('<I', 0), 3)
    qp = cmd(CMD_CREATE_QP, struct.pack('<QQIIIIBBBBBB', SQ_RING, RQ_RING,
                                        0, 0, 0, 0xffffffff, 0, 4, 4, 6, 4, 1), 4)
    mr = cmd(CMD_REG_MR, struct.pack('<QQQIIIBBBB', BUF, 0x2000, 0,
                                     0, 0, 0xf, 12, 0, 0, 0), 5)
    s['admin-objects'] = (msix_vector0() + enable_aq() + [
        pattern(net), pattern(eq), pattern(cq), pattern(pd), pattern(qp),
        pattern(mr), write(REGS, AQ_TAIL, 6), clock(),
        write(DOORBELLS, DB_EQ, (1 << 24)), write(DOORBELLS, DB_CQ, (1 << 24), QUAD),
        write(DOORBELLS, DB_SQ, (1 << 32), QUAD), clock(),
        write(DOORBELLS, DB_RQ, (1 << 32), QUAD), clock()])
    # one admin command pattern repeated, each with the next opcode
    s['admin-every-opcode'] = (enable_aq(5) + [
        pattern(cmd(0, struct.pack('<QII', BUF, 64, 1)), index=0, stride=1),
        write(REGS, AQ_TAIL, 26), clock(), clock()])
    # interrupts: program vector 0, raise it, and a vector aimed at BAR0
    s['msix-irq-test'] = msix_vector0() + [write(REGS, IRQ_TEST, 0), clock()]
    # Ethernet function: TX ring of descriptors to one buffer, RX ring
    desc = struct.pack('<QHBBI', BUF, 60, 1, 0, 0)
    s['eth-tx-rx'] = [
        write(REGS, ETH_TX_BASE_LO, 0x120000), write(REGS, ETH_TX_SIZE_LOG2, 4),
        write(REGS, ETH_RX_BASE_LO, 0x121000), write(REGS, ETH_RX_SIZE_LOG2, 4),
        write(REGS, ETH_CTRL, 3), pattern(desc), write(REGS, ETH_RX_TAIL, 8),
        write(REGS, ETH_TX_TAIL, 4), clock(), read(REGS, 0x170)]
    # a region of the memory window (generic-fuzz-rnic-scm): every
    # semantic, the DURABLE key, FLUSH persistence; then a plain REG_MR
    scm = cmd(CMD_REG_MR, struct.pack('<QQQIIIBBBBI', 0, 0x2000, 0x1000,
                                      0, 0, 0x20f, 0, 0, 0x21, 1, 0x3f), 6)
    s['scm-region'] = enable_aq() + [pattern(pd), pattern(scm),
                                     write(REGS, AQ_TAIL, 2), clock()]
    # reset while the admin queue runs, then enable again
    s['reset-while-running'] = enable_aq() + [
        pattern(cmd(CMD_ALLOC_PD)), write(REGS, AQ_TAIL, 8),
        write(REGS, DEV_CTRL, CTRL_RESET), clock()] + enable_aq()
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, ops in seeds().items():
        with open(os.path.join(out, 'seed-' + name), 'wb') as f:
            f.write(SEP.join(ops))


if __name__ == '__main__':
    main()
