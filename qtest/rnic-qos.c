/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libqos driver node 'rnic' (see rnic-qos.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pci-pc.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "rnic-qos.h"

/* The first half of rnic_attach (the qos node's create). */
static void rnic_map(QRnic *d, QPCIBus *bus, QPCIAddress *addr,
                     QGuestAllocator *alloc)
{
    qpci_device_init(&d->dev, bus, addr);
    d->alloc = alloc;
    d->regs = qpci_iomap(&d->dev, RNIC_BAR_REGS, NULL);
    d->db = qpci_iomap(&d->dev, RNIC_BAR_DOORBELLS, &d->db_size);
}

/* The second half (the qos node's start_hw). */
static void rnic_enable(QRnic *d)
{
    qpci_device_enable(&d->dev);
    /* the MSI-X table is in BAR0, which this maps again: follow it */
    qpci_msix_enable(&d->dev);
    d->regs = d->dev.msix_table_bar;
}

void rnic_attach(QRnic *d, QPCIBus *bus, int devfn, QGuestAllocator *alloc)
{
    rnic_map(d, bus, &(QPCIAddress) { .devfn = devfn }, alloc);
    rnic_enable(d);
}

void rnic_remap(QRnic *d)
{
    qpci_device_enable(&d->dev);
    d->regs = qpci_iomap(&d->dev, RNIC_BAR_REGS, NULL);
    d->db = qpci_iomap(&d->dev, RNIC_BAR_DOORBELLS, NULL);
    d->dev.msix_table_bar = d->dev.msix_pba_bar = d->regs;
}

QPCIBar rnic_bar_programmed(QPCIDevice *dev, int bar)
{
    uint64_t lo = qpci_config_readl(dev, PCI_BASE_ADDRESS_0 + 4 * bar);
    uint64_t hi = qpci_config_readl(dev, PCI_BASE_ADDRESS_0 + 4 * bar + 4);

    return (QPCIBar) { .addr = (hi << 32) | (lo & ~0xfull) };
}

QPCIBus *rnic_attach_migrated(QRnic *d, QTestState *qts)
{
    QPCIBus *bus = qpci_new_pc(qts, NULL);

    d->dev.bus = bus;
    d->regs = rnic_bar_programmed(&d->dev, RNIC_BAR_REGS);
    d->db = rnic_bar_programmed(&d->dev, RNIC_BAR_DOORBELLS);
    d->dev.msix_table_bar = d->dev.msix_pba_bar = d->regs;
    return bus;
}

QTestState *rnic_qts(QRnic *d)
{
    return d->dev.bus->qts;
}

uint32_t rnic_reg_read(QRnic *d, uint32_t offset)
{
    return qpci_io_readl(&d->dev, d->regs, offset);
}

void rnic_reg_write(QRnic *d, uint32_t offset, uint32_t value)
{
    qpci_io_writel(&d->dev, d->regs, offset, value);
}

void rnic_doorbell(QRnic *d, uint32_t page, uint32_t offset, uint64_t value)
{
    qpci_io_writeq(&d->dev, d->db, page * RNIC_DB_PAGE_SIZE + offset, value);
}

void rnic_msix_route(QRnic *d, unsigned v)
{
    uint64_t entry = d->dev.msix_table_off + v * PCI_MSIX_ENTRY_SIZE;
    g_assert_cmpuint(v, <, RNIC_QOS_MAX_VECTORS);
    if (!d->msix_slot[v]) {
        d->msix_slot[v] = guest_alloc(d->alloc, 4);
    }
    qtest_writel(rnic_qts(d), d->msix_slot[v], 0);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_LOWER_ADDR, (uint32_t)d->msix_slot[v]);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_UPPER_ADDR, d->msix_slot[v] >> 32);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_DATA, 0x5a000000 | v);
    rnic_msix_set_masked(d, v, false);
}

void rnic_msix_set_masked(QRnic *d, unsigned v, bool masked)
{
    uint64_t ctrl = d->dev.msix_table_off + v * PCI_MSIX_ENTRY_SIZE +
                    PCI_MSIX_ENTRY_VECTOR_CTRL;
    uint32_t val = qpci_io_readl(&d->dev, d->dev.msix_table_bar, ctrl);

    val = masked ? val | PCI_MSIX_ENTRY_CTRL_MASKBIT
                 : val & ~PCI_MSIX_ENTRY_CTRL_MASKBIT;
    qpci_io_writel(&d->dev, d->dev.msix_table_bar, ctrl, val);
}

bool rnic_msix_fired(QRnic *d, unsigned v)
{
    uint32_t data;

    g_assert(d->msix_slot[v]);
    data = qtest_readl(rnic_qts(d), d->msix_slot[v]);
    if (data == 0) {
        return false;
    }
    g_assert_cmphex(data, ==, 0x5a000000 | v);
    qtest_writel(rnic_qts(d), d->msix_slot[v], 0);
    return true;
}

bool rnic_msix_wait(QRnic *d, unsigned v)
{
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;

    do {
        if (rnic_msix_fired(d, v)) {
            return true;
        }
        qtest_clock_step(rnic_qts(d), 10000);
    } while (g_get_monotonic_time() < end);
    return false;
}

void rnic_tmpdir_remove(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);

        unlink(p);
    }
    rmdir(dir);
}

static void rnic_destructor(QOSGraphObject *obj)
{
    QRnic *d = (QRnic *)obj;

    qpci_iounmap(&d->dev, d->regs);
    qpci_iounmap(&d->dev, d->db);
    qpci_msix_disable(&d->dev);
}

static void rnic_start_hw(QOSGraphObject *obj)
{
    rnic_enable((QRnic *)obj);
}

static void *rnic_get_driver(void *obj, const char *interface)
{
    QRnic *d = obj;

    if (!g_strcmp0(interface, "rnic")) {
        return d;
    }
    if (!g_strcmp0(interface, "pci-device")) {
        return &d->dev;
    }
    fprintf(stderr, "%s not present in rnic\n", interface);
    g_assert_not_reached();
}

static void *rnic_create(void *pci_bus, QGuestAllocator *alloc, void *addr)
{
    QRnic *d = g_new0(QRnic, 1);

    rnic_map(d, pci_bus, addr, alloc);
    d->obj.get_driver = rnic_get_driver;
    d->obj.start_hw = rnic_start_hw;
    d->obj.destructor = rnic_destructor;
    return &d->obj;
}

static void rnic_register_nodes(void)
{
    QOSGraphEdgeOptions opts = {
        .extra_device_opts = "addr=04.0",
    };

    add_qpci_address(&opts, &(QPCIAddress) { .devfn = QPCI_DEVFN(4, 0) });
    qos_node_create_driver("rnic", rnic_create);
    qos_node_consumes("rnic", "pci-bus", &opts);
    qos_node_produces("rnic", "pci-device");
}

libqos_init(rnic_register_nodes);
