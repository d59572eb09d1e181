/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of the rnic Ethernet function on a real segment: two (and, across
 * a migration, three) QEMU instances joined by '-netdev dgram' over unix
 * sockets exchange frames through their TX/RX descriptor rings; address
 * filtering, queueing while no RX buffer is posted, QMP set_link, the
 * self-announce after an incoming migration, and '-nic user,model=rnic'
 * (an ARP exchange with libslirp's gateway).
 *
 * These are plain GTest cases registered from the rnic-qos-test binary
 * (they boot their own machines, not the qos graph's).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "rnic-verbs.h"

#define ETH_VEC         1
#define ETH_BUF         2048
#define ETH_TYPE_TEST   0x88b5
#define WAIT_US         (5 * G_USEC_PER_SEC)

typedef struct EthVm {
    QOSState *qs;               /* NULL for a migration destination */
    QTestState *qts;
    QPCIBus *bus;               /* migration destination only */
    QRnic d;
    uint8_t mac[6];
    uint32_t log2;
    uint64_t tx, rx;            /* rings */
    uint64_t txbuf, rxbuf;      /* one ETH_BUF slot per ring entry */
    uint32_t tx_tail, rx_tail;
} EthVm;

static const uint8_t mac_a[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t mac_b[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b };
static const uint8_t mac_c[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0c };
static const uint8_t mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static char *mac_str(const uint8_t *m)
{
    return g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x",
                           m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* Map the rnic at 'devfn' of a booted machine and route the vector. */
static void eth_vm_attach(EthVm *vm, int devfn)
{
    QRnic *d = &vm->d;

    rnic_attach(d, vm->qs->pcibus, devfn, &vm->qs->alloc);
    rnic_msix_route(d, ETH_VEC);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
}

/* Boot a pc machine with an rnic at 04.0 on netdev 'hs0' ('netdev'). */
static EthVm *eth_vm_boot_netdev(const uint8_t *mac, const char *netdev)
{
    EthVm *vm = g_new0(EthVm, 1);
    g_autofree char *m = mac_str(mac);

    vm->qs = qtest_pc_boot("-M pc -netdev %s,id=hs0 "
                           "-device rnic,netdev=hs0,addr=04.0,mac=%s",
                           netdev, m);
    vm->qts = vm->qs->qts;
    memcpy(vm->mac, mac, 6);
    eth_vm_attach(vm, QPCI_DEVFN(4, 0));
    return vm;
}

/* ... on '-netdev dgram' between two unix sockets. */
static EthVm *eth_vm_boot(const uint8_t *mac, const char *local,
                          const char *remote)
{
    g_autofree char *nd = g_strdup_printf("dgram,local.type=unix,"
                                          "local.path=%s,remote.type=unix,"
                                          "remote.path=%s", local, remote);

    return eth_vm_boot_netdev(mac, nd);
}

static void eth_vm_free(EthVm *vm)
{
    if (vm->qs) {
        qtest_shutdown(vm->qs);
    } else {
        qpci_free_pc(vm->bus);
        qtest_quit(vm->qts);
    }
    g_free(vm);
}

/* Rings of 2^log2 entries, vector ETH_VEC unmasked, then 'ctrl'. */
static void eth_setup(EthVm *vm, uint32_t log2, uint32_t ctrl)
{
    QRnic *d = &vm->d;
    uint32_t n = 1u << log2;

    vm->log2 = log2;
    vm->tx = guest_alloc(d->alloc, n * 16);
    vm->rx = guest_alloc(d->alloc, n * 16);
    vm->txbuf = guest_alloc(d->alloc, n * ETH_BUF);
    vm->rxbuf = guest_alloc(d->alloc, n * ETH_BUF);
    qtest_memset(vm->qts, vm->tx, 0, n * 16);
    qtest_memset(vm->qts, vm->rx, 0, n * 16);
    rnic_reg_write(d, RNIC_REG_ETH_TX_BASE_LO, (uint32_t)vm->tx);
    rnic_reg_write(d, RNIC_REG_ETH_TX_BASE_HI, vm->tx >> 32);
    rnic_reg_write(d, RNIC_REG_ETH_TX_SIZE_LOG2, log2);
    rnic_reg_write(d, RNIC_REG_ETH_RX_BASE_LO, (uint32_t)vm->rx);
    rnic_reg_write(d, RNIC_REG_ETH_RX_BASE_HI, vm->rx >> 32);
    rnic_reg_write(d, RNIC_REG_ETH_RX_SIZE_LOG2, log2);
    rnic_reg_write(d, RNIC_REG_ETH_IRQ_VECTOR, ETH_VEC);
    rnic_reg_write(d, RNIC_REG_ETH_CTRL, ctrl);
    rnic_reg_write(d, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_ETH_CTRL), ==, ctrl);
    vm->tx_tail = vm->rx_tail = 0;
}

static uint32_t eth_slot(EthVm *vm, uint32_t i)
{
    return i & ((1u << vm->log2) - 1);
}

/* Post 'n' RX buffers of ETH_BUF bytes (descriptors in one write). */
static void eth_post_rx(EthVm *vm, unsigned n)
{
    struct rnic_eth_rx_desc d[64];
    unsigned i, done = 0;

    while (done < n) {
        uint32_t first = eth_slot(vm, vm->rx_tail);
        unsigned k = MIN(n - done, (1u << vm->log2) - first);

        k = MIN(k, G_N_ELEMENTS(d));
        for (i = 0; i < k; i++) {
            memset(&d[i], 0, sizeof(d[i]));
            d[i].addr = cpu_to_le64(vm->rxbuf +
                                    (uint64_t)(first + i) * ETH_BUF);
            d[i].buf_len = cpu_to_le16(ETH_BUF);
        }
        qtest_memwrite(vm->qts, vm->rx + first * 16, d, k * sizeof(d[0]));
        vm->rx_tail += k;
        done += k;
    }
    rnic_reg_write(&vm->d, RNIC_REG_ETH_RX_TAIL, vm->rx_tail);
}

/* Queue a frame in 'nfrags' fragments, one buffer slot each; no doorbell. */
static void eth_queue_tx(EthVm *vm, const uint8_t *f, size_t len,
                         unsigned nfrags)
{
    size_t off = 0;
    unsigned i;

    for (i = 0; i < nfrags; i++) {
        uint32_t slot = eth_slot(vm, vm->tx_tail++);
        size_t n = i == nfrags - 1 ? len - off : len / nfrags;
        uint64_t buf = vm->txbuf + (uint64_t)slot * ETH_BUF;
        struct rnic_eth_tx_desc d = {
            .addr = cpu_to_le64(buf),
            .len = cpu_to_le16(n),
            .flags = i == nfrags - 1 ? RNIC_ETH_TX_EOP : 0,
        };

        g_assert_cmpuint(n, <=, ETH_BUF);
        qtest_memwrite(vm->qts, buf, f + off, n);
        qtest_memwrite(vm->qts, vm->tx + slot * 16, &d, sizeof(d));
        off += n;
    }
}

static void eth_ring_tx(EthVm *vm)
{
    rnic_reg_write(&vm->d, RNIC_REG_ETH_TX_TAIL, vm->tx_tail);
}

static void eth_send(EthVm *vm, const uint8_t *f, size_t len, unsigned nfrags)
{
    eth_queue_tx(vm, f, len, nfrags);
    eth_ring_tx(vm);
}

/* Wait until register 'reg' reads 'want' (free-running index). */
static bool eth_wait_reg(EthVm *vm, uint32_t reg, uint32_t want)
{
    gint64 end = g_get_monotonic_time() + WAIT_US;

    while (rnic_reg_read(&vm->d, reg) != want) {
        if (g_get_monotonic_time() > end) {
            return false;
        }
        qtest_clock_step(vm->qts, 1000);
        g_usleep(100);
    }
    return true;
}

/* Read received frame number 'i': its descriptor and its bytes. */
static struct rnic_eth_rx_desc eth_rx_frame(EthVm *vm, uint32_t i, uint8_t *buf)
{
    struct rnic_eth_rx_desc d;
    uint32_t slot = eth_slot(vm, i);

    qtest_memread(vm->qts, vm->rx + slot * 16, &d, sizeof(d));
    if (buf && (d.status & RNIC_ETH_DESC_DONE)) {
        qtest_memread(vm->qts, le64_to_cpu(d.addr), buf, le16_to_cpu(d.len));
    }
    return d;
}

static void make_frame(uint8_t *f, size_t len, const uint8_t *dst,
                       const uint8_t *src, uint16_t seq)
{
    size_t i;

    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    stw_be_p(f + 12, ETH_TYPE_TEST);
    stw_be_p(f + 14, seq);
    for (i = 16; i < len; i++) {
        f[i] = seq * 31 + i;
    }
}

/* Frame 'i' must be the test frame 'seq' of 'len' bytes from 'src'. */
static void check_rx(EthVm *vm, uint32_t i, const uint8_t *dst,
                     const uint8_t *src, uint16_t seq, size_t len)
{
    uint8_t want[ETH_BUF], got[ETH_BUF];
    struct rnic_eth_rx_desc d = eth_rx_frame(vm, i, got);

    make_frame(want, len, dst, src, seq);
    g_assert_cmphex(d.status, ==, RNIC_ETH_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), ==, MAX(len, RNIC_ETH_MIN_FRAME));
    g_assert_cmpmem(got, len, want, len);
}

typedef struct Segment {
    char *dir, *a, *b;
} Segment;

static void segment_init(Segment *s)
{
    s->dir = g_dir_make_tmp("rnic-eth-XXXXXX", NULL);
    g_assert(s->dir);
    s->a = g_strdup_printf("%s/a.sock", s->dir);
    s->b = g_strdup_printf("%s/b.sock", s->dir);
}

static void segment_free(Segment *s)
{
    rnic_tmpdir_remove(s->dir);
    g_free(s->dir);
    g_free(s->a);
    g_free(s->b);
}

/* ---------------------------------------------------------------------- */

static void test_two_vms(void)
{
    Segment seg;
    EthVm *a, *b;
    uint8_t f[ETH_BUF];
    const uint32_t ctrl = RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST;
    struct rnic_eth_tx_desc td;
    uint32_t i;

    segment_init(&seg);
    a = eth_vm_boot(mac_a, seg.a, seg.b);
    b = eth_vm_boot(mac_b, seg.b, seg.a);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_CAPS_LO) & RNIC_CAP_ETH, ==,
                    RNIC_CAP_ETH);
    eth_setup(a, 5, ctrl);
    eth_setup(b, 5, ctrl);
    eth_post_rx(b, 8);
    eth_post_rx(a, 8);

    /* A -> B: wrong MAC (filtered), unicast in 3 fragments, broadcast,
     * full-size unicast, runt-sized unicast (padded to 60 on the wire) */
    make_frame(f, 200, mac_c, mac_a, 1);
    eth_send(a, f, 200, 1);
    make_frame(f, 1000, mac_b, mac_a, 2);
    eth_send(a, f, 1000, 3);
    make_frame(f, 100, mac_bcast, mac_a, 3);
    eth_send(a, f, 100, 1);
    make_frame(f, 1514, mac_b, mac_a, 4);
    eth_send(a, f, 1514, 2);
    make_frame(f, 42, mac_b, mac_a, 5);
    eth_send(a, f, 42, 1);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 4));
    check_rx(b, 0, mac_b, mac_a, 2, 1000);
    check_rx(b, 1, mac_bcast, mac_a, 3, 100);
    check_rx(b, 2, mac_b, mac_a, 4, 1514);
    check_rx(b, 3, mac_b, mac_a, 5, 42);
    g_assert_cmphex(eth_rx_frame(b, 4, NULL).status, ==, 0);
    g_assert_true(rnic_msix_wait(&b->d, ETH_VEC));
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_FILTERED), ==, 1);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_FRAMES), ==, 4);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_MULTICAST), ==, 1);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_BYTES), ==,
                     1000 + 100 + 1514 + 60);

    /* A's descriptors are all written back */
    g_assert_true(eth_wait_reg(a, RNIC_REG_ETH_TX_HEAD, 8));
    for (i = 0; i < 8; i++) {
        qtest_memread(a->qts, a->tx + i * 16, &td, sizeof(td));
        g_assert_cmphex(td.status, ==, RNIC_ETH_DESC_DONE);
    }
    g_assert_true(rnic_msix_wait(&a->d, ETH_VEC));
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_ETH_TX_FRAMES), ==, 5);

    /* B -> A */
    make_frame(f, 777, mac_a, mac_b, 6);
    eth_send(b, f, 777, 1);
    g_assert_true(eth_wait_reg(a, RNIC_REG_ETH_RX_HEAD, 1));
    check_rx(a, 0, mac_a, mac_b, 6, 777);

    /*
     * More frames than B has buffers: the rest waits in QEMU's queue (the
     * device said it cannot receive) and arrives, in order, once B posts.
     */
    for (i = 0; i < 7; i++) {
        make_frame(f, 300 + i, mac_b, mac_a, 100 + i);
        eth_queue_tx(a, f, 300 + i, 1);
    }
    eth_ring_tx(a);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 8));
    g_usleep(50000);
    g_assert_cmpuint(rnic_reg_read(&b->d, RNIC_REG_ETH_RX_HEAD), ==, 8);
    eth_post_rx(b, 8);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 11));
    for (i = 0; i < 7; i++) {
        check_rx(b, 4 + i, mac_b, mac_a, 100 + i, 300 + i);
    }
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_FRAMES), ==, 11);

    eth_vm_free(a);
    eth_vm_free(b);
    segment_free(&seg);
}

static void set_link(QTestState *qts, const char *name, bool up)
{
    qtest_qmp_assert_success(qts, "{ 'execute': 'set_link', 'arguments':"
                             " { 'name': %s, 'up': %i } }", name, up);
}

static void test_link(void)
{
    Segment seg;
    EthVm *a, *b;
    uint8_t f[ETH_BUF];
    const uint32_t ctrl = RNIC_ETH_TX_EN | RNIC_ETH_RX_EN;

    segment_init(&seg);
    a = eth_vm_boot(mac_a, seg.a, seg.b);
    b = eth_vm_boot(mac_b, seg.b, seg.a);
    eth_setup(a, 4, ctrl);
    eth_setup(b, 4, ctrl);
    eth_post_rx(b, 8);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, RNIC_STATUS_LINK_UP);

    /* down: LINK_UP clears, the Ethernet vector fires, frames stay home */
    set_link(a->qts, "hs0", false);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, 0);
    g_assert_true(rnic_msix_wait(&a->d, ETH_VEC));
    rnic_reg_write(&a->d, RNIC_REG_ETH_IRQ_MASK, 0);
    make_frame(f, 200, mac_b, mac_a, 1);
    eth_send(a, f, 200, 1);
    g_assert_true(eth_wait_reg(a, RNIC_REG_ETH_TX_HEAD, 1));
    g_assert_cmpuint(tv_stat(&a->d, RNIC_STAT_ETH_TX_LINK_DOWN), ==, 1);
    g_usleep(50000);
    g_assert_cmpuint(rnic_reg_read(&b->d, RNIC_REG_ETH_RX_HEAD), ==, 0);

    set_link(a->qts, "hs0", true);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, RNIC_STATUS_LINK_UP);
    g_assert_true(rnic_msix_wait(&a->d, ETH_VEC));
    rnic_reg_write(&a->d, RNIC_REG_ETH_IRQ_MASK, 0);
    make_frame(f, 200, mac_b, mac_a, 2);
    eth_send(a, f, 200, 1);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 1));
    check_rx(b, 0, mac_b, mac_a, 2, 200);

    /* by the NIC's own name (QEMU then leaves the netdev side alone) */
    set_link(a->qts, "rnic.0", false);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, 0);
    set_link(a->qts, "rnic.0", true);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, RNIC_STATUS_LINK_UP);
    make_frame(f, 300, mac_b, mac_a, 3);
    eth_send(a, f, 300, 1);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 2));
    check_rx(b, 1, mac_b, mac_a, 3, 300);

    /* a system reset keeps the link state (it is the cable's) */
    set_link(a->qts, "hs0", false);
    qtest_qmp_assert_success(a->qts, "{ 'execute': 'system_reset' }");
    qtest_qmp_eventwait(a->qts, "RESET");
    rnic_remap(&a->d);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_DEV_STATUS) &
                    RNIC_STATUS_LINK_UP, ==, 0);
    g_assert_cmphex(rnic_reg_read(&a->d, RNIC_REG_ETH_CTRL), ==, 0);

    eth_vm_free(a);
    eth_vm_free(b);
    segment_free(&seg);
}

/* Is frame 'f' a RARP announcing 'mac'? */
static bool is_rarp_for(const uint8_t *f, size_t len, const uint8_t *mac)
{
    return len >= 42 && !memcmp(f, mac_bcast, 6) &&
           lduw_be_p(f + 12) == 0x8035 &&
           lduw_be_p(f + 20) == 3 && !memcmp(f + 6, mac, 6) &&
           !memcmp(f + 22, mac, 6);
}

/*
 * A migrates to A2 (same segment); after the switchover the destination
 * announces the MAC the guest programmed (and the property's), and its
 * Ethernet rings go on where the source stopped.
 */
static void test_migrate_announce(void)
{
    static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc };
    Segment seg;
    EthVm *a, *b, *a2;
    uint8_t f[ETH_BUF];
    g_autofree char *uri = NULL;
    g_autofree char *m = mac_str(mac_a);
    const uint32_t ctrl = RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST;
    bool saw_conf = false, saw_guest = false, saw_data = false;
    uint32_t i, head;
    gint64 end;

    segment_init(&seg);
    uri = g_strdup_printf("unix:%s/mig.sock", seg.dir);
    a = eth_vm_boot(mac_a, seg.a, seg.b);
    b = eth_vm_boot(mac_b, seg.b, seg.a);
    eth_setup(a, 4, ctrl);
    eth_setup(b, 5, ctrl);
    eth_post_rx(b, 32);
    /* the guest driver sets its own MAC */
    rnic_reg_write(&a->d, RNIC_REG_MAC_LO, ldl_le_p(guest_mac));
    rnic_reg_write(&a->d, RNIC_REG_MAC_HI, lduw_le_p(guest_mac + 4));
    make_frame(f, 100, mac_b, guest_mac, 1);
    eth_send(a, f, 100, 1);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 1));

    /* the destination takes over the segment address of the source */
    a2 = g_new0(EthVm, 1);
    *a2 = *a;
    a2->qs = NULL;
    a2->qts = qtest_initf("-M pc -netdev dgram,id=hs0,local.type=unix,"
                          "local.path=%s,remote.type=unix,remote.path=%s "
                          "-device rnic,netdev=hs0,addr=04.0,mac=%s "
                          "-incoming %s", seg.a, seg.b, m, uri);
    qtest_qmp_assert_success(a->qts, "{ 'execute': 'migrate',"
                             " 'arguments': { 'uri': %s } }", uri);
    qtest_qmp_eventwait(a2->qts, "RESUME");
    /* the BARs as migrated: the destination's are programmed already */
    a2->bus = rnic_attach_migrated(&a2->d, a2->qts);
    a2->d.alloc = NULL;
    g_assert_cmphex(rnic_reg_read(&a2->d, RNIC_REG_ETH_CTRL), ==, ctrl);
    g_assert_cmpuint(rnic_reg_read(&a2->d, RNIC_REG_ETH_TX_HEAD), ==, 1);
    g_assert_cmphex(rnic_reg_read(&a2->d, RNIC_REG_MAC_LO), ==,
                    (uint32_t)ldl_le_p(guest_mac));

    /* A2 sends on the migrated ring */
    make_frame(f, 400, mac_b, guest_mac, 2);
    eth_send(a2, f, 400, 2);

    /* B sees the announcements (RARP, several rounds) and the frame */
    end = g_get_monotonic_time() + WAIT_US;
    head = 1;
    while (!(saw_conf && saw_guest && saw_data)) {
        uint32_t now = rnic_reg_read(&b->d, RNIC_REG_ETH_RX_HEAD);

        g_assert(g_get_monotonic_time() < end);
        for (; head < now; head++) {
            struct rnic_eth_rx_desc d = eth_rx_frame(b, head, f);
            size_t len = le16_to_cpu(d.len);

            g_assert_cmphex(d.status, ==, RNIC_ETH_DESC_DONE);
            saw_conf |= is_rarp_for(f, len, mac_a);
            saw_guest |= is_rarp_for(f, len, guest_mac);
            if (lduw_be_p(f + 12) == ETH_TYPE_TEST) {
                uint8_t want[400];

                make_frame(want, 400, mac_b, guest_mac, 2);
                g_assert_cmpmem(f, len, want, 400);
                saw_data = true;
            }
        }
        g_usleep(1000);
    }
    for (i = 0; i < 2; i++) {
        struct rnic_eth_tx_desc td;

        qtest_memread(a2->qts, a2->tx + (1 + i) * 16, &td, sizeof(td));
        g_assert_cmphex(td.status, ==, RNIC_ETH_DESC_DONE);
    }

    eth_vm_free(a);
    eth_vm_free(a2);
    eth_vm_free(b);
    segment_free(&seg);
}

static void find_rnic(QPCIDevice *dev, int devfn, void *data)
{
    *(int *)data = devfn;
    g_free(dev);
}

/* '-nic user,model=rnic': the guest reaches libslirp's gateway (ARP). */
static void test_nic_user(void)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x99 };
    static const uint8_t gw_ip[4] = { 10, 0, 2, 2 };
    static const uint8_t my_ip[4] = { 10, 0, 2, 15 };
    EthVm *vm = g_new0(EthVm, 1);
    g_autofree char *info = NULL;
    uint8_t f[64] = { 0 };
    struct rnic_eth_rx_desc d;
    int devfn = -1;

    vm->qs = qtest_pc_boot("-M pc -nic user,model=rnic,mac=52:54:00:12:34:99");
    vm->qts = vm->qs->qts;
    memcpy(vm->mac, mac, 6);
    info = qtest_hmp(vm->qts, "info network");
    g_assert_nonnull(strstr(info, "model=rnic,macaddr=52:54:00:12:34:99"));
    qpci_device_foreach(vm->qs->pcibus, RNIC_PCI_VENDOR_ID, RNIC_PCI_DEVICE_ID,
                        find_rnic, &devfn);
    g_assert_cmpint(devfn, >=, 0);
    eth_vm_attach(vm, devfn);
    g_assert_cmpuint(rnic_reg_read(&vm->d, RNIC_REG_MSIX_VECTORS), ==, 8);
    eth_setup(vm, 3, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST);
    eth_post_rx(vm, 8);

    /* ARP request: who has 10.0.2.2? tell 10.0.2.15 */
    memcpy(f, mac_bcast, 6);
    memcpy(f + 6, mac, 6);
    stw_be_p(f + 12, 0x0806);
    stw_be_p(f + 14, 1);
    stw_be_p(f + 16, 0x0800);
    f[18] = 6;
    f[19] = 4;
    stw_be_p(f + 20, 1);
    memcpy(f + 22, mac, 6);
    memcpy(f + 28, my_ip, 4);
    memcpy(f + 38, gw_ip, 4);
    eth_send(vm, f, 42, 1);
    g_assert_true(eth_wait_reg(vm, RNIC_REG_ETH_RX_HEAD, 1));
    d = eth_rx_frame(vm, 0, f);
    g_assert_cmphex(d.status, ==, RNIC_ETH_DESC_DONE);
    g_assert_cmpuint(le16_to_cpu(d.len), >=, 42);
    g_assert_cmpmem(f, 6, mac, 6);                  /* to us */
    g_assert_cmphex(lduw_be_p(f + 12), ==, 0x0806);
    g_assert_cmphex(lduw_be_p(f + 20), ==, 2);      /* reply */
    g_assert_cmpmem(f + 28, 4, gw_ip, 4);
    g_assert_cmpmem(f + 32, 6, mac, 6);
    eth_vm_free(vm);
}

/* '-nic model=rnic' on q35 and the model list. */
static void test_nic_q35(void)
{
    QTestState *qts = qtest_init("-M q35 -nic user,model=rnic");
    g_autofree char *info = qtest_hmp(qts, "info network");

    g_assert_nonnull(strstr(info, "model=rnic"));
    qtest_quit(qts);
}

/*
 * Throughput of the netdev path between two QEMUs, driven through qtest
 * (descriptor batches and doorbells are qtest round trips; both QEMUs and
 * this driver share the host's cores). Only with -m perf.
 */
static void perf_run(const char *backend, unsigned len)
{
    const unsigned log2 = 7, batch = 64, total = 64 * 500;
    Segment seg;
    EthVm *a, *b;
    uint8_t f[ETH_BUF];
    struct rnic_eth_tx_desc td[128];
    g_autofree char *nda = NULL, *ndb = NULL;
    unsigned sent = 0, i;
    uint32_t rx_done = 0;
    gint64 t0, t1;
    double secs;

    segment_init(&seg);
    if (!strcmp(backend, "stream")) {
        nda = g_strdup_printf("stream,server=on,addr.type=unix,addr.path=%s",
                              seg.a);
        ndb = g_strdup_printf("stream,server=off,addr.type=unix,addr.path=%s",
                              seg.a);
    } else {
        nda = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                              "remote.type=unix,remote.path=%s", seg.a, seg.b);
        ndb = g_strdup_printf("dgram,local.type=unix,local.path=%s,"
                              "remote.type=unix,remote.path=%s", seg.b, seg.a);
    }
    a = eth_vm_boot_netdev(mac_a, nda);
    b = eth_vm_boot_netdev(mac_b, ndb);
    eth_setup(a, log2, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
    eth_setup(b, log2, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
    /* the masks stay set: no interrupts, pure polling */
    rnic_reg_write(&a->d, RNIC_REG_ETH_IRQ_MASK, 1);
    rnic_reg_write(&b->d, RNIC_REG_ETH_IRQ_MASK, 1);
    make_frame(f, len, mac_b, mac_a, 1);
    for (i = 0; i < (1u << log2); i++) {
        qtest_memwrite(a->qts, a->txbuf + i * ETH_BUF, f, len);
        td[i] = (struct rnic_eth_tx_desc) {
            .addr = cpu_to_le64(a->txbuf + i * ETH_BUF),
            .len = cpu_to_le16(len), .flags = RNIC_ETH_TX_EOP,
        };
    }
    eth_post_rx(b, 1u << log2);
    /* a stream client connects asynchronously: wait for a first frame */
    eth_queue_tx(a, f, len, 1);
    eth_ring_tx(a);
    g_assert_true(eth_wait_reg(b, RNIC_REG_ETH_RX_HEAD, 1));
    eth_post_rx(b, 1);
    rx_done = 1;
    a->tx_tail = sent = 0;
    rnic_reg_write(&a->d, RNIC_REG_ETH_CTRL, 0);
    rnic_reg_write(&a->d, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN);

    t0 = g_get_monotonic_time();
    while (rx_done < total + 1) {
        uint32_t tx_head = rnic_reg_read(&a->d, RNIC_REG_ETH_TX_HEAD);
        uint32_t rx_head = rnic_reg_read(&b->d, RNIC_REG_ETH_RX_HEAD);
        bool idle = true;

        if (sent < total && a->tx_tail - tx_head <= (1u << log2) - batch) {
            uint32_t first = eth_slot(a, a->tx_tail);

            qtest_memwrite(a->qts, a->tx + first * 16, &td[first],
                           batch * sizeof(td[0]));
            a->tx_tail += batch;
            sent += batch;
            eth_ring_tx(a);
            idle = false;
        }
        if (rx_head != rx_done) {
            uint32_t n = rx_head - rx_done;

            rx_done = rx_head;
            if (rx_done < total + 1) {
                eth_post_rx(b, n);
            }
            idle = false;
        }
        if (idle) {
            g_usleep(200);      /* leave the cores to the two QEMUs */
        }
    }
    t1 = g_get_monotonic_time();
    secs = (t1 - t0) / 1e6;
    check_rx(b, rx_done - 1, mac_b, mac_a, 1, len);
    g_assert_cmpuint(tv_stat(&b->d, RNIC_STAT_ETH_RX_FRAMES), ==, total + 1);
    g_test_maximized_result(total / secs,
                            "%s, %u-byte frames A -> B: %.0f frames/s, "
                            "%.1f MB/s (%u frames in %.2f s)", backend, len,
                            total / secs, total * len / secs / 1e6, total,
                            secs);
    eth_vm_free(a);
    eth_vm_free(b);
    segment_free(&seg);
}

static void test_perf(void)
{
    perf_run("dgram", 64);
    perf_run("dgram", 1514);
    perf_run("stream", 64);
    perf_run("stream", 1514);
}

static void rnic_eth_register_tests(void)
{
    /* plain tests next to the qos graph's: they boot their own machines */
    qtest_add_func("rnic-eth/two-vms", test_two_vms);
    qtest_add_func("rnic-eth/link", test_link);
    qtest_add_func("rnic-eth/migrate-announce", test_migrate_announce);
    qtest_add_func("rnic-eth/nic-user", test_nic_user);
    qtest_add_func("rnic-eth/nic-q35", test_nic_q35);
    if (g_test_perf()) {
        qtest_add_func("rnic-eth/perf", test_perf);
    }
}

libqos_init(rnic_eth_register_tests);
