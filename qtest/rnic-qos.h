/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos driver node 'rnic': maps the BARs, drives the admin queue through
 * guest memory and observes MSI-X vectors as DMA writes into guest RAM.
 */
#ifndef QTEST_RNIC_QOS_H
#define QTEST_RNIC_QOS_H

#include "libqos/pci.h"
#include "libqos/qgraph.h"
#include "libqos/libqos-malloc.h"
#include "rnic/rnic-abi.h"

#define RNIC_QOS_MAX_VECTORS 64

typedef struct QRnic {
    QOSGraphObject obj;
    QPCIDevice dev;
    QGuestAllocator *alloc;
    QPCIBar regs;
    QPCIBar db;
    uint64_t db_size;
    /* admin queue of the test verbs driver (rnic-verbs.h: tv_enable) */
    uint64_t aq, acq;
    uint32_t aq_log2, aq_tail, acq_head;
    uint16_t next_cmd_id;
    uint64_t modify_attr;       /* tv_modify's staging buffer, 0: none */
    /* MSI-X: vector n writes its data to msix_slot[n] */
    uint64_t msix_slot[RNIC_QOS_MAX_VECTORS];
} QRnic;

/*
 * Attach 'd' to the rnic at 'devfn' on 'bus' as a driver's probe does: map
 * BAR0 (registers) and BAR2 (doorbells, its size in d->db_size), enable
 * memory decoding and bus mastering, turn MSI-X on. Guest memory for the
 * rings comes from 'alloc'. The 'rnic' qos node and the tests that boot
 * machines of their own attach through this.
 */
void rnic_attach(QRnic *d, QPCIBus *bus, int devfn, QGuestAllocator *alloc);
/* A system reset unassigned the BARs: enable the device, map them again. */
void rnic_remap(QRnic *d);
/* BAR 'bar' (64-bit memory) of 'dev' as programmed (by the migration source). */
QPCIBar rnic_bar_programmed(QPCIDevice *dev, int bar);
/*
 * 'd', copied from a migration source, on the destination 'qts': a new
 * bus (returned, the caller frees it) and the BARs as the source
 * programmed them.
 */
QPCIBus *rnic_attach_migrated(QRnic *d, QTestState *qts);

QTestState *rnic_qts(QRnic *d);
uint32_t rnic_reg_read(QRnic *d, uint32_t offset);
void rnic_reg_write(QRnic *d, uint32_t offset, uint32_t value);
void rnic_doorbell(QRnic *d, uint32_t page, uint32_t offset, uint64_t value);

/* Route vector 'v' to a guest memory slot and unmask it. */
void rnic_msix_route(QRnic *d, unsigned v);
/* Mask or unmask vector 'v' in the MSI-X table. */
void rnic_msix_set_masked(QRnic *d, unsigned v, bool masked);
/* Did vector 'v' fire since the last call? (clears the slot) */
bool rnic_msix_fired(QRnic *d, unsigned v);
/* Wait (stepping the clock) up to 5 s for vector 'v'. */
bool rnic_msix_wait(QRnic *d, unsigned v);

/* Remove a directory made by g_dir_make_tmp and the files in it. */
void rnic_tmpdir_remove(const char *dir);

#endif /* QTEST_RNIC_QOS_H */
