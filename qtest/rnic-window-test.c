/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of the memory window (-device rnic,scm=<memdev>): a shared
 * memory-backend-file as BAR4, its bytes the same to the guest CPU and to
 * RDMA through regions of kind SCM; with scm-powerfail=on the QOM property
 * power-cut rolls the window back to what was persisted: writes through a
 * DURABLE key and ranges a FLUSH(persistence) covered stay, the rest is
 * gone; the file keeps the window across a QEMU restart.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pci-pc.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "rnic-verbs.h"

#define WIN_SIZE    (1u << 20)
#define TAG         0x0b
#define KEY(sem)    ((uint8_t)((sem) << RNIC_SCM_KEY_SEM_SHIFT | TAG))
#define ALL_SEMS    ((1u << RNIC_SCM_SEM_COUNT) - 1)
#define RIGHTS      (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | \
                     RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_FLUSH_PERSISTENT)

static char *win_file;

static void *window_before(GString *cmd_line, void *arg)
{
    if (!win_file) {
        win_file = qv_tmp_file("rnic-window-XXXXXX");
    }
    g_string_append_printf(cmd_line, " -object memory-backend-file,id=scm0,"
                           "size=%u,mem-path=%s,share=on ", WIN_SIZE,
                           win_file);
    return arg;
}

static uint64_t bar4_size(QRnic *d)
{
    uint64_t size;

    QPCIBar bar = qpci_iomap(&d->dev, RNIC_BAR_SCM, &size);
    qpci_iounmap(&d->dev, bar);
    return size;
}

static void loop_init(TvPair *l, QRnic *d)
{
    qv_loop_init(l, d, 1u << 16);
}

static uint8_t post_one(TvPair *l, struct rnic_sq_wqe *w, struct rnic_sge *s)
{
    tv_post_send(l->d, l->a, w, s, NULL);
    return tv_wait_cqe(l->d, l->cqa).status;
}

/* A WRITE or READ between 'local' (in bufa: lkey mra) and region 'va'. */
static uint8_t rdma(TvPair *l, uint8_t op, uint64_t id, uint32_t rkey,
                    uint64_t va, uint64_t local, uint32_t len)
{
    struct rnic_sq_wqe w = tv_wqe(id, op, 1);
    struct rnic_sge s = tv_sge(local, len, l->mra);

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    return post_one(l, &w, &s);
}

static void test_bar(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    g_auto(TvPair) l = { 0 };
    QTestState *qts = rnic_qts(d);
    uint32_t caps = rnic_reg_read(d, RNIC_REG_CAPS_LO);
    uint32_t bar4 = qpci_config_readl(&d->dev, PCI_BASE_ADDRESS_4);
    uint32_t stag, plain;
    QPCIBar win;
    uint8_t buf[256];

    g_assert_true(caps & RNIC_CAP_SCM);
    g_assert_true(caps & RNIC_CAP_FLUSH_PERSISTENT);
    g_assert_cmpuint(rnic_reg_read(d, RNIC_REG_SCM_SIZE_LO), ==, WIN_SIZE);
    g_assert_cmpuint(bar4 & PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                     PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_true(bar4 & PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert_cmpuint(bar4_size(d), ==, WIN_SIZE);

    loop_init(&l, d);
    win = qpci_iomap(&d->dev, RNIC_BAR_SCM, NULL);
    stag = tv_reg_scm(d, l.pd, 0, 0x8000, 0x8000, RIGHTS, ALL_SEMS,
                      KEY(RNIC_SCM_SEM_PLAIN), NULL);
    plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    /* the CPU's stores through BAR4, read by RDMA */
    for (int i = 0; i < 64; i++) {
        qpci_io_writel(&d->dev, win, 0x8000 + 4 * i, 0x01010101u * i);
    }
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_READ, 1, plain, 0, l.bufa, 256), ==,
                     RNIC_WC_SUCCESS);
    qtest_memread(qts, l.bufa, buf, sizeof(buf));
    for (int i = 0; i < 256; i++) {
        g_assert_cmpuint(buf[i], ==, i / 4);
    }
    /* RDMA's writes, read through BAR4 */
    tv_fill(d, l.bufa, 256, 5);
    qtest_memread(qts, l.bufa, buf, sizeof(buf));
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 2, plain, 1000, l.bufa,
                          256), ==, RNIC_WC_SUCCESS);
    for (int i = 0; i < 256; i++) {
        g_assert_cmpuint(qpci_io_readb(&d->dev, win, 0x8000 + 1000 + i), ==,
                         buf[i]);
    }
    /* past the region: refused, nothing written */
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 3, plain, 0x8000 - 8,
                          l.bufa, 16), ==, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qpci_io_readl(&d->dev, win, 0x10000), ==, 0);
}

static void power_cut(QRnic *d)
{
    QDict *r = qtest_qmp(rnic_qts(d), "{ 'execute': 'qom-set', 'arguments':"
                         " { 'path': '/machine/peripheral/rnic0',"
                         " 'property': 'power-cut', 'value': true } }");

    g_assert_true(qdict_haskey(r, "return"));
    qobject_unref(r);
}

static void test_power_cut(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    g_auto(TvPair) l = { 0 };
    uint32_t stag, plain, durable;
    struct rnic_sq_wqe w;
    QPCIBar win;

    loop_init(&l, d);
    win = qpci_iomap(&d->dev, RNIC_BAR_SCM, NULL);
    stag = tv_reg_scm(d, l.pd, 0, 0, 0x10000, RIGHTS, ALL_SEMS,
                      KEY(RNIC_SCM_SEM_DURABLE), NULL);
    plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    durable = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE);
    tv_fill(d, l.bufa, 8192, 3);
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 1, durable, 0, l.bufa, 4096),
                     ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 2, plain, 4096,
                          l.bufa + 4096, 4096), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 3, plain, 8192, l.bufa,
                          4096), ==, RNIC_WC_SUCCESS);
    w = tv_flush_wqe(4, 8192, plain, 4096, RNIC_FLUSH_PERSISTENT,
                     RNIC_FLUSH_RANGE);
    g_assert_cmpuint(post_one(&l, &w, NULL), ==, RNIC_WC_SUCCESS);
    /* a store of the CPU, never persisted */
    qpci_io_writel(&d->dev, win, 20000, 0xdeadbeef);

    power_cut(d);
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_READ, 5, plain, 0, l.bufa + 0x8000,
                          12288), ==, RNIC_WC_SUCCESS);
    tv_assert_same(d, l.bufa, l.bufa + 0x8000, 4096);   /* durable key */
    for (int i = 0; i < 4096; i += 512) {                /* plain: gone */
        g_assert_cmpuint(qpci_io_readb(&d->dev, win, 4096 + i), ==, 0);
    }
    tv_assert_same(d, l.bufa, l.bufa + 0x8000 + 8192, 4096);   /* flushed */
    g_assert_cmpuint(qpci_io_readl(&d->dev, win, 20000), ==, 0);
}

/* The file keeps the window: a second QEMU on it sees the bytes. */
static void test_restart(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    g_auto(TvPair) l = { 0 };
    uint32_t stag;
    QTestState *qts2;
    QPCIBus *bus2;
    QPCIDevice *dev2;
    QPCIBar win2;
    uint8_t want[512];

    loop_init(&l, d);
    stag = tv_reg_scm(d, l.pd, 0, 0x40000, 0x1000, RIGHTS, ALL_SEMS,
                      KEY(RNIC_SCM_SEM_DURABLE), NULL);
    tv_fill(d, l.bufa, sizeof(want), 11);
    qtest_memread(rnic_qts(d), l.bufa, want, sizeof(want));
    g_assert_cmpuint(rdma(&l, RNIC_WR_RDMA_WRITE, 1, stag, 0, l.bufa,
                          sizeof(want)), ==, RNIC_WC_SUCCESS);

    qts2 = qtest_initf("-M pc -object memory-backend-file,id=scm1,size=%u,"
                       "mem-path=%s,share=on -device rnic,scm=scm1,addr=05.0",
                       WIN_SIZE, win_file);
    bus2 = qpci_new_pc(qts2, NULL);
    dev2 = qpci_device_find(bus2, QPCI_DEVFN(5, 0));
    g_assert_nonnull(dev2);
    qpci_device_enable(dev2);
    win2 = qpci_iomap(dev2, RNIC_BAR_SCM, NULL);
    for (size_t i = 0; i < sizeof(want); i++) {
        g_assert_cmpuint(qpci_io_readb(dev2, win2, 0x40000 + i), ==, want[i]);
    }
    g_free(dev2);
    qpci_free_pc(bus2);
    qtest_quit(qts2);
}

static void rnic_register_window_tests(void)
{
    QOSGraphTestOptions opts = {
        .before = window_before,
        .edge.extra_device_opts = "scm=scm0,scm-powerfail=on,id=rnic0",
    };

    qos_add_test("window/bar", "rnic", test_bar, &opts);
    qos_add_test("window/power-cut", "rnic", test_power_cut, &opts);
    qos_add_test("window/restart", "rnic", test_restart, &opts);
}

libqos_init(rnic_register_window_tests);
