/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the Ethernet function (TX/RX descriptor rings, address
 * filter, interrupt masking, link state, migration image).
 */
#include <string.h>
#include "rnic-test-host.h"

#define ETH_VEC 3

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x60 };
static const uint8_t other_mac[6] = { 0x52, 0x54, 0x00, 0x99, 0x88, 0x77 };
static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t mdns_mac[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };
static const uint8_t mc2_mac[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 };

typedef struct EthRig {
    TestHost *h;
    uint64_t tx, rx;            /* rings */
    uint32_t log2;
    uint32_t tx_tail, rx_tail;
} EthRig;

static uint64_t stat(EthRig *g, unsigned s)
{
    return rnic_engine_stat(g->h->engine, s);
}

static void rig_setup(EthRig *g, TestHost *h, uint32_t log2, uint32_t ctrl)
{
    uint32_t entries = 1u << log2;

    memset(g, 0, sizeof(*g));
    g->h = h;
    g->log2 = log2;
    g->tx = test_alloc(h, entries * 16, 4096);
    g->rx = test_alloc(h, entries * 16, 4096);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_BASE_LO, (uint32_t)g->tx), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_BASE_HI, g->tx >> 32), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_SIZE_LOG2, log2), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_BASE_LO, (uint32_t)g->rx), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_BASE_HI, g->rx >> 32), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_SIZE_LOG2, log2), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_IRQ_VECTOR, ETH_VEC), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL, ctrl), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_IRQ_MASK, 0), ==, 0);
}

static void rig_init(EthRig *g, uint32_t log2, uint32_t ctrl)
{
    rig_setup(g, test_host_new(NULL), log2, ctrl);
}

static void rig_free(EthRig *g)
{
    test_host_free(g->h);
}

static struct rnic_eth_tx_desc *tx_desc(EthRig *g, uint32_t i)
{
    return test_ptr(g->h, g->tx + (i & ((1u << g->log2) - 1)) * 16);
}

static struct rnic_eth_rx_desc *rx_desc(EthRig *g, uint32_t i)
{
    return test_ptr(g->h, g->rx + (i & ((1u << g->log2) - 1)) * 16);
}

/* A frame: dst, our source MAC, ethertype 0x88b5, pattern from 'seed'. */
static void make_frame(uint8_t *f, size_t len, const uint8_t *dst, uint8_t seed)
{
    size_t i;

    memcpy(f, dst, 6);
    memcpy(f + 6, other_mac, 6);
    f[12] = 0x88;
    f[13] = 0xb5;
    for (i = 14; i < len; i++) {
        f[i] = seed + i * 7;
    }
}

/* Write one TX descriptor (no doorbell). */
static void put_tx(EthRig *g, uint64_t addr, uint16_t len, uint8_t flags)
{
    struct rnic_eth_tx_desc *d = tx_desc(g, g->tx_tail++);

    d->addr = GUINT64_TO_LE(addr);
    d->len = GUINT16_TO_LE(len);
    d->flags = flags;
    d->status = 0;
}

/* Post a frame in 'nfrags' fragments (copied to guest RAM), no doorbell. */
static void queue_tx(EthRig *g, const uint8_t *f, size_t len, unsigned nfrags)
{
    size_t off = 0;
    unsigned i;

    for (i = 0; i < nfrags; i++) {
        size_t n = i == nfrags - 1 ? len - off : len / nfrags;
        uint64_t a = test_alloc(g->h, n, 64);

        memcpy(test_ptr(g->h, a), f + off, n);
        put_tx(g, a, n, i == nfrags - 1 ? RNIC_ETH_TX_EOP : 0);
        off += n;
    }
}

static void ring_tx(EthRig *g)
{
    g_assert_cmpint(test_reg_write(g->h, RNIC_REG_ETH_TX_TAIL, g->tx_tail), ==, 0);
    test_host_run(g->h);
}

static uint64_t post_rx(EthRig *g, uint16_t buf_len)
{
    uint64_t a = test_alloc(g->h, buf_len + 64, 64);
    struct rnic_eth_rx_desc *d = rx_desc(g, g->rx_tail++);

    memset(test_ptr(g->h, a), 0xee, buf_len + 64);
    memset(d, 0, sizeof(*d));
    d->addr = GUINT64_TO_LE(a);
    d->buf_len = GUINT16_TO_LE(buf_len);
    g_assert_cmpint(test_reg_write(g->h, RNIC_REG_ETH_RX_TAIL, g->rx_tail), ==, 0);
    return a;
}

static bool rx(EthRig *g, const uint8_t *f, size_t len)
{
    struct iovec iov = { .iov_base = (void *)f, .iov_len = len };

    return rnic_engine_receive(g->h->engine, &iov, 1);
}

static GByteArray *frame_n(EthRig *g, unsigned i)
{
    g_assert_cmpuint(g->h->frames->len, >, i);
    return g_ptr_array_index(g->h->frames, i);
}

/* ---------------------------------------------------------------------- */

static void test_regs(void)
{
    TestHost *h = test_host_new(NULL);
    uint64_t ring = test_alloc(h, 4096, 4096);

    g_assert_cmphex(test_reg_read(h, RNIC_REG_CAPS_LO) & RNIC_CAP_ETH, ==,
                    RNIC_CAP_ETH);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_CTRL), ==, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_STATUS), ==, 0);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_MTU), ==, 1500);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_IRQ_MASK), ==, 1);
    /* value checks */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_MTU, 67), ==, RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_MTU, 9001), ==, RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_MTU, 9000), ==, RNIC_ACCESS_OK);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_MTU, 68), ==, RNIC_ACCESS_OK);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_MTU), ==, 68);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_IRQ_VECTOR, 8), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_IRQ_VECTOR, 7), ==, 0);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_IRQ_VECTOR), ==, 7);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_IRQ_MASK, 2), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_SIZE_LOG2, 1), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_SIZE_LOG2, 16), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_MC_HASH_HI, 0xdeadbeef), ==, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_MC_HASH_HI), ==, 0xdeadbeef);
    /* read-only and holes */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_HEAD, 1), ==,
                    RNIC_ACCESS_READ_ONLY);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_STATUS, 1), ==,
                    RNIC_ACCESS_READ_ONLY);
    g_assert_cmpint(test_reg_write(h, 0x15c, 1), ==, RNIC_ACCESS_UNKNOWN_REG);
    g_assert_cmpint(test_reg_write(h, 0x19c, 1), ==, RNIC_ACCESS_UNKNOWN_REG);
    /* doorbells of disabled rings */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_TAIL, 1), ==,
                    RNIC_ACCESS_NOT_NOW);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_TAIL, 1), ==,
                    RNIC_ACCESS_NOT_NOW);
    /* enabling a ring without a sane configuration is refused */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_CTRL), ==, 0);
    test_reg_write(h, RNIC_REG_ETH_TX_BASE_LO, (uint32_t)ring + 8);
    test_reg_write(h, RNIC_REG_ETH_TX_SIZE_LOG2, 4);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN), ==,
                    RNIC_ACCESS_BAD_VALUE);     /* misaligned */
    test_reg_write(h, RNIC_REG_ETH_TX_BASE_LO, (uint32_t)ring);
    /* reserved control bits refused, the rest applied */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL,
                                   RNIC_ETH_TX_EN | RNIC_ETH_PROMISC | 0x100),
                    ==, RNIC_ACCESS_BAD_VALUE);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_CTRL), ==,
                    RNIC_ETH_TX_EN | RNIC_ETH_PROMISC);
    /* ring configuration locked while enabled */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_BASE_LO, 0), ==,
                    RNIC_ACCESS_NOT_NOW);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_SIZE_LOG2, 5), ==,
                    RNIC_ACCESS_NOT_NOW);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_TX_SIZE_LOG2), ==, 4);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_TX_BASE_LO), ==, (uint32_t)ring);
    /* tail: at most one ring ahead of the head, never backwards */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_TAIL, 17), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_TAIL, 0xffffffff), ==,
                    RNIC_ACCESS_BAD_VALUE);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_ETH_TX_TAIL), ==, 0);
    g_assert_cmpuint(h->guest_errors, ==, 4);
    /* RX config unaffected by TX */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_BASE_LO, 0x1000), ==, 0);
    test_host_free(h);
}

static void test_tx_single(void)
{
    EthRig g;
    uint8_t f[100];

    rig_init(&g, 4, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), other_mac, 1);
    queue_tx(&g, f, sizeof(f), 1);
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 1);
    g_assert_cmpmem(frame_n(&g, 0)->data, frame_n(&g, 0)->len, f, sizeof(f));
    g_assert_cmphex(tx_desc(&g, 0)->status, ==, RNIC_ETH_DESC_DONE);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, 1);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_FRAMES), ==, 1);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_BYTES), ==, 100);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_IRQS), ==, 1);
    g_assert_cmpuint(g.h->guest_errors, ==, 0);
    rig_free(&g);
}

static void test_tx_multi(void)
{
    EthRig g;
    uint8_t f1[1514], f2[300], f3[60];
    unsigned i;

    rig_init(&g, 4, RNIC_ETH_TX_EN);
    make_frame(f1, sizeof(f1), other_mac, 2);
    make_frame(f2, sizeof(f2), bcast_mac, 3);
    make_frame(f3, sizeof(f3), mdns_mac, 4);
    /* three frames in one doorbell: 3 + 2 + 1 fragments */
    queue_tx(&g, f1, sizeof(f1), 3);
    queue_tx(&g, f2, sizeof(f2), 2);
    queue_tx(&g, f3, sizeof(f3), 1);
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 3);
    g_assert_cmpmem(frame_n(&g, 0)->data, frame_n(&g, 0)->len, f1, sizeof(f1));
    g_assert_cmpmem(frame_n(&g, 1)->data, frame_n(&g, 1)->len, f2, sizeof(f2));
    g_assert_cmpmem(frame_n(&g, 2)->data, frame_n(&g, 2)->len, f3, sizeof(f3));
    for (i = 0; i < 6; i++) {
        g_assert_cmphex(tx_desc(&g, i)->status, ==, RNIC_ETH_DESC_DONE);
    }
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, 6);
    /* one run, one interrupt */
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);

    /* a frame whose EOP fragment is not posted yet waits for it */
    queue_tx(&g, f1, sizeof(f1), 3);
    g.tx_tail--;
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 3);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, 6);
    g_assert_cmphex(tx_desc(&g, 6)->status, ==, 0);
    g.tx_tail++;
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 4);
    g_assert_cmpmem(frame_n(&g, 3)->data, frame_n(&g, 3)->len, f1, sizeof(f1));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, 9);

    /* the ring wraps: 20 more frames through a 16-entry ring */
    for (i = 0; i < 20; i++) {
        f2[20] = i;
        queue_tx(&g, f2, sizeof(f2), 2);
        ring_tx(&g);
        g_assert_cmpmem(frame_n(&g, 4 + i)->data, frame_n(&g, 4 + i)->len,
                        f2, sizeof(f2));
    }
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, 49);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_FRAMES), ==, 24);
    g_assert_cmpuint(g.h->guest_errors, ==, 0);
    rig_free(&g);
}

static void test_tx_pad(void)
{
    EthRig g;
    uint8_t f[42];
    GByteArray *out;

    rig_init(&g, 2, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), bcast_mac, 5);
    queue_tx(&g, f, sizeof(f), 2);
    ring_tx(&g);
    out = frame_n(&g, 0);
    g_assert_cmpuint(out->len, ==, RNIC_ETH_MIN_FRAME);
    g_assert_cmpmem(out->data, sizeof(f), f, sizeof(f));
    for (unsigned i = sizeof(f); i < out->len; i++) {
        g_assert_cmphex(out->data[i], ==, 0);
    }
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_BYTES), ==, sizeof(f));
    rig_free(&g);
}

static void test_tx_errors(void)
{
    EthRig g;
    uint8_t f[200], big[1600];
    uint64_t a;
    unsigned i, errors;

    rig_init(&g, 6, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), other_mac, 6);
    make_frame(big, sizeof(big), other_mac, 7);
    a = test_alloc(g.h, sizeof(f), 64);
    memcpy(test_ptr(g.h, a), f, sizeof(f));

    put_tx(&g, a, 0, RNIC_ETH_TX_EOP);                          /* 0: len 0 */
    put_tx(&g, g.h->ram_size - 10, 100, RNIC_ETH_TX_EOP);       /* 1: beyond RAM */
    put_tx(&g, a, 100, 0);                                      /* 2,3: 2nd bad */
    put_tx(&g, 0xfffffffffffff000ull, 100, RNIC_ETH_TX_EOP);
    queue_tx(&g, big, sizeof(big), 2);                          /* 4,5: > MTU */
    put_tx(&g, a, 10, RNIC_ETH_TX_EOP);                         /* 6: runt */
    put_tx(&g, a, sizeof(f), RNIC_ETH_TX_EOP);                  /* 7: good */
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 1);
    g_assert_cmpmem(frame_n(&g, 0)->data, frame_n(&g, 0)->len, f, sizeof(f));
    for (i = 0; i < 7; i++) {
        g_assert_cmphex(tx_desc(&g, i)->status, ==,
                        RNIC_ETH_DESC_DONE | RNIC_ETH_DESC_ERR);
    }
    g_assert_cmphex(tx_desc(&g, 7)->status, ==, RNIC_ETH_DESC_DONE);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_ERRORS), ==, 5);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_FRAMES), ==, 1);
    g_assert_cmpuint(g.h->guest_errors, ==, 5);

    /* an MTU of 1600 lets the big frame go: the limit is MTU + 18 */
    g_assert_cmpint(test_reg_write(g.h, RNIC_REG_ETH_MTU, 1600 - 18), ==, 0);
    queue_tx(&g, big, sizeof(big), 2);
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 2);

    /* 32 fragments without EOP: one bad frame, 33rd descriptor is next */
    for (i = 0; i < RNIC_ETH_TX_MAX_FRAGS; i++) {
        put_tx(&g, a, 4, 0);
    }
    put_tx(&g, a, sizeof(f), RNIC_ETH_TX_EOP);
    ring_tx(&g);
    errors = 0;
    for (i = 10; i < 10 + RNIC_ETH_TX_MAX_FRAGS; i++) {
        errors += tx_desc(&g, i)->status == (RNIC_ETH_DESC_DONE | RNIC_ETH_DESC_ERR);
    }
    g_assert_cmpuint(errors, ==, RNIC_ETH_TX_MAX_FRAGS);
    g_assert_cmpuint(g.h->frames->len, ==, 3);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_TX_HEAD), ==, g.tx_tail);
    rig_free(&g);
}

static void test_tx_ring_halt(void)
{
    TestHost *h = test_host_new(NULL);
    uint8_t f[64];
    EthRig g;

    /* a ring beyond guest RAM: the device halts it, does not crash */
    test_reg_write(h, RNIC_REG_ETH_TX_BASE_LO, 0);
    test_reg_write(h, RNIC_REG_ETH_TX_BASE_HI, 0x100);
    test_reg_write(h, RNIC_REG_ETH_TX_SIZE_LOG2, 3);
    test_reg_write(h, RNIC_REG_ETH_IRQ_VECTOR, ETH_VEC);
    test_reg_write(h, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_TAIL, 1), ==, 0);
    test_host_run(h);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_STATUS), ==, RNIC_ETH_TX_HALTED);
    g_assert_cmpuint(h->frames->len, ==, 0);
    g_assert_cmpuint(h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_DMA_ERRORS), ==, 1);
    /* more doorbells do nothing */
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_TX_TAIL, 2), ==, 0);
    test_host_run(h);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_DMA_ERRORS), ==, 1);
    /* disabling clears the halt; a good ring then works */
    test_reg_write(h, RNIC_REG_ETH_CTRL, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_STATUS), ==, 0);
    rig_setup(&g, h, 3, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), other_mac, 8);
    queue_tx(&g, f, sizeof(f), 1);
    ring_tx(&g);
    g_assert_cmpuint(h->frames->len, ==, 1);
    rig_free(&g);
}

static void test_rx_basic(void)
{
    EthRig g;
    uint8_t f[3][700];
    uint64_t buf[4];
    unsigned i;

    rig_init(&g, 3, RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST);
    for (i = 0; i < 4; i++) {
        buf[i] = post_rx(&g, 1518);
    }
    for (i = 0; i < 3; i++) {
        make_frame(f[i], 600 + i * 50, i == 1 ? bcast_mac : our_mac, 10 + i);
        g_assert_true(rnic_engine_can_receive(g.h->engine));
        g_assert_true(rx(&g, f[i], 600 + i * 50));
    }
    for (i = 0; i < 3; i++) {
        struct rnic_eth_rx_desc *d = rx_desc(&g, i);
        uint8_t *b = test_ptr(g.h, buf[i]);

        g_assert_cmphex(d->status, ==, RNIC_ETH_DESC_DONE);
        g_assert_cmpuint(GUINT16_FROM_LE(d->len), ==, 600 + i * 50);
        g_assert_cmpmem(b, 600 + i * 50, f[i], 600 + i * 50);
        g_assert_cmphex(b[600 + i * 50], ==, 0xee);     /* nothing beyond */
    }
    g_assert_cmphex(rx_desc(&g, 3)->status, ==, 0);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 3);
    /* one-shot interrupt: the first frame raised and masked it */
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_IRQ_MASK), ==, 1);
    /* unmasking with completed work pending fires at once */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 2);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FRAMES), ==, 3);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_BYTES), ==, 600 + 650 + 700);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_MULTICAST), ==, 1);
    g_assert_cmpuint(g.h->guest_errors, ==, 0);
    rig_free(&g);
}

/* A frame scattered over several iovec elements lands contiguously. */
static void test_rx_iov(void)
{
    EthRig g;
    uint8_t f[1000];
    struct iovec iov[4];
    uint64_t b;

    rig_init(&g, 2, RNIC_ETH_RX_EN);
    b = post_rx(&g, 1518);
    make_frame(f, sizeof(f), our_mac, 20);
    iov[0] = (struct iovec) { f, 5 };
    iov[1] = (struct iovec) { f + 5, 0 };
    iov[2] = (struct iovec) { f + 5, 300 };
    iov[3] = (struct iovec) { f + 305, sizeof(f) - 305 };
    g_assert_true(rnic_engine_receive(g.h->engine, iov, 4));
    g_assert_cmpmem(test_ptr(g.h, b), sizeof(f), f, sizeof(f));
    g_assert_cmpuint(GUINT16_FROM_LE(rx_desc(&g, 0)->len), ==, sizeof(f));
    rig_free(&g);
}

static void test_rx_filter(void)
{
    EthRig g;
    uint8_t f[64];
    unsigned bit = rnic_eth_mc_hash_index(mdns_mac);
    unsigned i;

    /* the hash is the top 6 bits of the big-endian Ethernet CRC */
    g_assert_cmpuint(bit, !=, rnic_eth_mc_hash_index(mc2_mac));
    rig_init(&g, 5, RNIC_ETH_RX_EN);
    for (i = 0; i < 16; i++) {
        post_rx(&g, 1518);
    }
    /* no BROADCAST, no hash: only our unicast address passes */
    make_frame(f, sizeof(f), other_mac, 0);
    rx(&g, f, sizeof(f));
    make_frame(f, sizeof(f), bcast_mac, 0);
    rx(&g, f, sizeof(f));
    make_frame(f, sizeof(f), mdns_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 0);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FILTERED), ==, 3);
    make_frame(f, sizeof(f), our_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 1);

    /* broadcast with BROADCAST */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST);
    make_frame(f, sizeof(f), bcast_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 2);

    /* multicast by hash: the address's bit passes, another does not */
    test_reg_write(g.h, bit < 32 ? RNIC_REG_ETH_MC_HASH_LO : RNIC_REG_ETH_MC_HASH_HI,
                   1u << (bit & 31));
    make_frame(f, sizeof(f), mdns_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 3);
    make_frame(f, sizeof(f), mc2_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 3);

    /* ALLMULTI: every multicast; other unicast still filtered */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN | RNIC_ETH_ALLMULTI);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 4);
    make_frame(f, sizeof(f), other_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 4);

    /* PROMISC: everything */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN | RNIC_ETH_PROMISC |
                   RNIC_ETH_ALLMULTI);
    rx(&g, f, sizeof(f));
    make_frame(f, sizeof(f), bcast_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 6);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FILTERED), ==, 5);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FRAMES), ==, 6);

    /* a guest-programmed MAC replaces the property's */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN);
    test_reg_write(g.h, RNIC_REG_MAC_LO, 0x99005452);
    test_reg_write(g.h, RNIC_REG_MAC_HI, 0x7788);
    rx(&g, f, sizeof(f));       /* broadcast: filtered now */
    make_frame(f, sizeof(f), our_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 6);
    make_frame(f, sizeof(f), other_mac, 0);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 7);
    rig_free(&g);
}

static void test_rx_no_buffers(void)
{
    EthRig g;
    uint8_t f[64];

    rig_init(&g, 2, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), our_mac, 30);
    /* RX disabled: frames are dropped at once (RoCE would still go) */
    g_assert_true(rnic_engine_can_receive(g.h->engine));
    g_assert_true(rx(&g, f, sizeof(f)));
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_DISABLED), ==, 1);
    /* RX enabled, no buffer: the host must keep the frame */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
    g_assert_false(rnic_engine_can_receive(g.h->engine));
    g_assert_false(rx(&g, f, sizeof(f)));
    g_assert_cmpuint(g.h->rx_ready, ==, 0);
    /* posting a buffer tells the host, once */
    post_rx(&g, 1518);
    g_assert_cmpuint(g.h->rx_ready, ==, 1);
    g_assert_true(rnic_engine_can_receive(g.h->engine));
    g_assert_true(rx(&g, f, sizeof(f)));
    post_rx(&g, 1518);
    g_assert_cmpuint(g.h->rx_ready, ==, 1);     /* nobody was waiting */
    /* full again; disabling RX also releases the host's queue */
    g_assert_true(rx(&g, f, sizeof(f)));
    g_assert_false(rnic_engine_can_receive(g.h->engine));
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN);
    g_assert_cmpuint(g.h->rx_ready, ==, 2);
    /* a function reset too, through the next run */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN);
    g_assert_false(rnic_engine_can_receive(g.h->engine));
    test_reg_write(g.h, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    test_host_run(g.h);
    g_assert_cmpuint(g.h->rx_ready, ==, 3);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FRAMES), ==, 0); /* reset */
    rig_free(&g);
}

static void test_rx_errors(void)
{
    EthRig g;
    uint8_t f[1600];
    uint64_t b;
    struct rnic_eth_rx_desc *d;

    rig_init(&g, 3, RNIC_ETH_RX_EN);
    make_frame(f, sizeof(f), our_mac, 40);
    /* buffer length 0 */
    post_rx(&g, 0);
    g_assert_true(rx(&g, f, 100));
    g_assert_cmphex(rx_desc(&g, 0)->status, ==, RNIC_ETH_DESC_DONE | RNIC_ETH_DESC_ERR);
    g_assert_cmpuint(rx_desc(&g, 0)->len, ==, 0);
    /* buffer beyond guest RAM */
    d = rx_desc(&g, g.rx_tail);
    post_rx(&g, 1518);
    d->addr = GUINT64_TO_LE(g.h->ram_size - 50);
    g_assert_true(rx(&g, f, 100));
    g_assert_cmphex(d->status, ==, RNIC_ETH_DESC_DONE | RNIC_ETH_DESC_ERR);
    g_assert_cmpuint(d->len, ==, 0);
    /* buffer shorter than the frame: truncated, nothing beyond buf_len */
    b = post_rx(&g, 64);
    g_assert_true(rx(&g, f, 200));
    d = rx_desc(&g, 2);
    g_assert_cmphex(d->status, ==,
                    RNIC_ETH_DESC_DONE | RNIC_ETH_DESC_ERR | RNIC_ETH_DESC_TRUNC);
    g_assert_cmpuint(GUINT16_FROM_LE(d->len), ==, 64);
    g_assert_cmpmem(test_ptr(g.h, b), 64, f, 64);
    g_assert_cmphex(((uint8_t *)test_ptr(g.h, b))[64], ==, 0xee);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_DESC_ERRORS), ==, 3);
    g_assert_cmpuint(g.h->guest_errors, ==, 2);
    /* longer than MTU + 18 / runt: dropped without using a buffer */
    post_rx(&g, 2048);
    g_assert_true(rx(&g, f, 1519));
    g_assert_true(rx(&g, f, 13));
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_LENGTH_ERRORS), ==, 2);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 3);
    g_assert_true(rx(&g, f, 1518));             /* exactly the limit */
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 4);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_FRAMES), ==, 1);
    rig_free(&g);
}

static void test_rx_ring_halt(void)
{
    TestHost *h = test_host_new(NULL);
    uint8_t f[64];

    make_frame(f, sizeof(f), our_mac, 50);
    test_reg_write(h, RNIC_REG_ETH_RX_BASE_LO, 0xfffff000);
    test_reg_write(h, RNIC_REG_ETH_RX_BASE_HI, 0x7);
    test_reg_write(h, RNIC_REG_ETH_RX_SIZE_LOG2, 3);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_CTRL, RNIC_ETH_RX_EN), ==, 0);
    g_assert_cmpint(test_reg_write(h, RNIC_REG_ETH_RX_TAIL, 8), ==, 0);
    {
        struct iovec iov = { f, sizeof(f) };

        g_assert_true(rnic_engine_receive(h->engine, &iov, 1));
        g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_STATUS), ==,
                        RNIC_ETH_RX_HALTED);
        /* halted: frames dropped, the host is never blocked */
        g_assert_true(rnic_engine_can_receive(h->engine));
        g_assert_true(rnic_engine_receive(h->engine, &iov, 1));
    }
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_ETH_RX_DISABLED), ==, 2);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_DMA_ERRORS), ==, 1);
    test_reg_write(h, RNIC_REG_ETH_CTRL, 0);
    g_assert_cmphex(test_reg_read(h, RNIC_REG_ETH_STATUS), ==, 0);
    test_host_free(h);
}

static void test_irq_mask(void)
{
    EthRig g;
    uint8_t f[64];

    rig_init(&g, 3, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
    make_frame(f, sizeof(f), our_mac, 60);
    /* masked: completions accumulate silently */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_MASK, 1);
    post_rx(&g, 1518);
    post_rx(&g, 1518);
    rx(&g, f, sizeof(f));
    queue_tx(&g, f, sizeof(f), 1);
    ring_tx(&g);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 0);
    /* unmask: one interrupt for all of it, and masked again */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_IRQ_MASK), ==, 1);
    /* unmask with nothing new: no interrupt, stays unmasked */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_IRQ_MASK), ==, 0);
    /* next completion fires on the vector currently configured */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_VECTOR, 5);
    rx(&g, f, sizeof(f));
    g_assert_cmpuint(g.h->irqs[5], ==, 1);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_IRQS), ==, 2);
    rig_free(&g);
}

static void test_link(void)
{
    EthRig g;
    uint8_t f[64];

    rig_init(&g, 3, RNIC_ETH_TX_EN);
    make_frame(f, sizeof(f), other_mac, 70);
    g_assert_cmphex(test_reg_read(g.h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, RNIC_STATUS_LINK_UP);
    rnic_engine_set_link(g.h->engine, false);
    g_assert_cmphex(test_reg_read(g.h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, 0);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    rnic_engine_set_link(g.h->engine, false);   /* no change, no event */
    test_reg_write(g.h, RNIC_REG_ETH_IRQ_MASK, 0);
    g_assert_cmpuint(g.h->irqs[ETH_VEC], ==, 1);
    /* frames posted while the link is down complete without going out */
    queue_tx(&g, f, sizeof(f), 1);
    ring_tx(&g);
    g_assert_cmpuint(g.h->frames->len, ==, 0);
    g_assert_cmphex(tx_desc(&g, 0)->status, ==, RNIC_ETH_DESC_DONE);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_TX_LINK_DOWN), ==, 1);
    /* and nothing comes in */
    test_reg_write(g.h, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
    post_rx(&g, 1518);
    make_frame(f, sizeof(f), our_mac, 71);
    g_assert_true(rx(&g, f, sizeof(f)));
    g_assert_cmpuint(test_reg_read(g.h, RNIC_REG_ETH_RX_HEAD), ==, 0);
    g_assert_cmpuint(stat(&g, RNIC_STAT_ETH_RX_DISABLED), ==, 1);
    /* a function reset does not bring the cable back */
    test_reg_write(g.h, RNIC_REG_DEV_CTRL, RNIC_CTRL_RESET);
    g_assert_cmphex(test_reg_read(g.h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, 0);
    rnic_engine_set_link(g.h->engine, true);
    g_assert_cmphex(test_reg_read(g.h, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, RNIC_STATUS_LINK_UP);
    rig_free(&g);
}

static void test_migrate(void)
{
    EthRig s, d;
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = g_byte_array_new();
    char *err = NULL;
    uint8_t f[300];
    uint64_t b;
    static const uint32_t regs[] = {
        RNIC_REG_ETH_CTRL, RNIC_REG_ETH_STATUS, RNIC_REG_ETH_MTU,
        RNIC_REG_ETH_IRQ_VECTOR, RNIC_REG_ETH_IRQ_MASK, RNIC_REG_ETH_MC_HASH_LO,
        RNIC_REG_ETH_MC_HASH_HI, RNIC_REG_ETH_TX_BASE_LO, RNIC_REG_ETH_TX_BASE_HI,
        RNIC_REG_ETH_TX_SIZE_LOG2, RNIC_REG_ETH_TX_TAIL, RNIC_REG_ETH_TX_HEAD,
        RNIC_REG_ETH_RX_BASE_LO, RNIC_REG_ETH_RX_BASE_HI,
        RNIC_REG_ETH_RX_SIZE_LOG2, RNIC_REG_ETH_RX_TAIL, RNIC_REG_ETH_RX_HEAD,
    };
    unsigned i;

    rig_init(&s, 4, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | RNIC_ETH_ALLMULTI);
    test_reg_write(s.h, RNIC_REG_ETH_MTU, 4000);
    test_reg_write(s.h, RNIC_REG_ETH_MC_HASH_LO, 0x80000001);
    make_frame(f, sizeof(f), our_mac, 80);
    for (i = 0; i < 5; i++) {
        post_rx(&s, 4018);
    }
    rx(&s, f, sizeof(f));
    queue_tx(&s, f, sizeof(f), 2);
    ring_tx(&s);
    /* a frame posted but not yet sent when the VM stops */
    queue_tx(&s, f, sizeof(f), 3);
    g_assert_cmpint(test_reg_write(s.h, RNIC_REG_ETH_TX_TAIL, s.tx_tail), ==, 0);
    rnic_engine_set_link(s.h->engine, false);
    rnic_engine_save(s.h->engine, img);

    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    for (i = 0; i < G_N_ELEMENTS(regs); i++) {
        g_assert_cmphex(test_reg_read(dst, regs[i]), ==, test_reg_read(s.h, regs[i]));
    }
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP,
                    ==, 0);
    g_assert_cmpuint(dst->irqs[ETH_VEC], ==, 0);  /* loading raises nothing */
    /* the destination goes on where the source stopped */
    memcpy(dst->ram, s.h->ram, s.h->ram_size);
    dst->alloc_next = s.h->alloc_next;
    d = s;
    d.h = dst;
    rnic_engine_set_link(dst->engine, true);
    test_host_run(dst);
    g_assert_cmpuint(dst->frames->len, ==, 1);
    g_assert_cmpmem(frame_n(&d, 0)->data, frame_n(&d, 0)->len, f, sizeof(f));
    b = post_rx(&d, 4018);
    for (i = 0; i < 5; i++) {
        g_assert_true(rx(&d, f, sizeof(f)));
    }
    g_assert_cmpmem(test_ptr(dst, b), sizeof(f), f, sizeof(f));
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_ETH_RX_HEAD), ==, 6);
    g_assert_false(rx(&d, f, sizeof(f)));       /* full: 6 of 6 used */
    rig_free(&s);
    rig_free(&d);
    g_byte_array_unref(img);
}

/* Hand-made images: inconsistent Ethernet state is refused. */
static void test_migrate_bad(void)
{
    struct {
        uint32_t reg, value;
        const char *msg;
    } cases[] = {
        { RNIC_REG_ETH_MTU, 4000, "MTU" },
        { RNIC_REG_ETH_IRQ_VECTOR, 7, "vector" },
    };
    RnicEngineConfig small;
    unsigned i;

    rnic_engine_config_defaults(&small);
    small.max_mtu = 1500;
    small.msix_vectors = 4;
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        TestHost *src = test_host_new(NULL);
        TestHost *dst = test_host_new(&small);
        GByteArray *img = g_byte_array_new();
        char *err = NULL;

        g_assert_cmpint(test_reg_write(src, cases[i].reg, cases[i].value), ==, 0);
        rnic_engine_save(src->engine, img);
        g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
        g_assert_nonnull(strstr(err, cases[i].msg));
        g_free(err);
        g_byte_array_unref(img);
        test_host_free(src);
        test_host_free(dst);
    }
}

/* Engine-only cost of a frame through TX and RX (run with -m perf). */
static void test_perf(void)
{
    static const unsigned sizes[] = { 64, 1514, 9014 };
    unsigned s;

    for (s = 0; s < G_N_ELEMENTS(sizes); s++) {
        unsigned len = sizes[s], n = 200000 / (1 + len / 1000), i;
        EthRig g;
        uint8_t *f = g_malloc(len);
        uint64_t buf, a;
        double t_tx, t_rx;

        rig_init(&g, 8, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN);
        test_reg_write(g.h, RNIC_REG_ETH_MTU, 9000);
        make_frame(f, len, our_mac, 1);
        a = test_alloc(g.h, len, 64);
        buf = test_alloc(g.h, 9018, 64);
        memcpy(test_ptr(g.h, a), f, len);
        g_test_timer_start();
        for (i = 0; i < n; i++) {
            put_tx(&g, a, len, RNIC_ETH_TX_EOP);
            if ((i & 63) == 63) {
                ring_tx(&g);
                g_ptr_array_set_size(g.h->frames, 0);
            }
        }
        t_tx = g_test_timer_elapsed();
        g_test_timer_start();
        for (i = 0; i < n; i++) {
            struct rnic_eth_rx_desc *d = rx_desc(&g, g.rx_tail++);

            d->addr = GUINT64_TO_LE(buf);
            d->buf_len = GUINT16_TO_LE(9018);
            test_reg_write(g.h, RNIC_REG_ETH_RX_TAIL, g.rx_tail);
            rx(&g, f, len);
        }
        t_rx = g_test_timer_elapsed();
        g_test_minimized_result(t_tx / n * 1e9, "TX %u B: %.0f ns/frame", len,
                                t_tx / n * 1e9);
        g_test_minimized_result(t_rx / n * 1e9, "RX %u B: %.0f ns/frame", len,
                                t_rx / n * 1e9);
        g_free(f);
        rig_free(&g);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/eth/regs", test_regs);
    g_test_add_func("/eth/tx/single", test_tx_single);
    g_test_add_func("/eth/tx/multi", test_tx_multi);
    g_test_add_func("/eth/tx/pad", test_tx_pad);
    g_test_add_func("/eth/tx/errors", test_tx_errors);
    g_test_add_func("/eth/tx/ring-halt", test_tx_ring_halt);
    g_test_add_func("/eth/rx/basic", test_rx_basic);
    g_test_add_func("/eth/rx/iov", test_rx_iov);
    g_test_add_func("/eth/rx/filter", test_rx_filter);
    g_test_add_func("/eth/rx/no-buffers", test_rx_no_buffers);
    g_test_add_func("/eth/rx/errors", test_rx_errors);
    g_test_add_func("/eth/rx/ring-halt", test_rx_ring_halt);
    g_test_add_func("/eth/irq-mask", test_irq_mask);
    g_test_add_func("/eth/link", test_link);
    g_test_add_func("/eth/migrate", test_migrate);
    g_test_add_func("/eth/migrate-bad", test_migrate_bad);
    if (g_test_perf()) {
        g_test_add_func("/eth/perf", test_perf);
    }
    return g_test_run();
}
