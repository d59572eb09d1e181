/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtest of RoCEv2 from a raw peer: the test itself is the peer (a unix
 * datagram socket on the segment of one QEMU instance) and sends crafted
 * frames.
 *
 *  malformed    each frame is dropped with its reason counted (the table
 *               raw_drops) or NAKed (the NAK checked on the wire), memory
 *               outside the registered region never touched
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-wire.h).
 */
#include "qemu/osdep.h"
#include <sys/socket.h>
#include <poll.h>
#include "libqtest.h"
#include "qemu/module.h"
#include "qemu/bswap.h"
#include "rnic-wire.h"

static void raw_send(Raw *t, const RnicRoceHdr *h)
{
    uint8_t frame[9000];

    raw_send_bytes(t, frame, raw_encode(h, frame, sizeof(frame)));
}

/* The next frame A sends, decoded (false: none within 'ms'). */
static bool raw_recv(Raw *t, RnicRoceHdr *h, int ms)
{
    static uint8_t frame[65536];
    struct pollfd p = { .fd = t->fd, .events = POLLIN };
    ssize_t n;

    /* A answers from its main loop; a qtest round trip lets it run */
    qtest_clock_step(t->a->qts, 1);
    if (poll(&p, 1, ms) <= 0) {
        return false;
    }
    n = recv(t->fd, frame, sizeof(frame), 0);
    g_assert_cmpint(n, >, 0);
    g_assert_cmpint(rnic_roce_decode(frame, n, h), ==, RNIC_ROCE_OK);
    return true;
}

static void raw_drain(Raw *t)
{
    RnicRoceHdr h;

    while (raw_recv(t, &h, 20)) {
        ;
    }
}

/* Counters of A before a case; raw_delta checks what changed. */
typedef struct Snap {
    uint64_t s[RNIC_STAT_COUNT];
} Snap;

static void snap(Raw *t, Snap *sn)
{
    unsigned i;

    qtest_clock_step(t->a->qts, 1);     /* A has read the socket */
    g_usleep(20000);
    for (i = 0; i < RNIC_STAT_COUNT; i++) {
        sn->s[i] = tv_stat(&t->a->d, i);
    }
}

/*
 * Since 'before': counter 'which' went up by 'n' (RX_DROPPED with it
 * when it is a drop reason), every other error counter stayed.
 */
static void raw_delta(Raw *t, const Snap *before, unsigned which, unsigned n)
{
    Snap now;
    unsigned i;

    snap(t, &now);
    for (i = RNIC_STAT_RX_ERR_HEADER; i <= RNIC_STAT_RX_ERR_OPCODE; i++) {
        g_assert_cmpuint(now.s[i] - before->s[i], ==, i == which ? n : 0);
    }
    if (which >= RNIC_STAT_RX_ERR_HEADER) {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED] -
                         before->s[RNIC_STAT_RX_DROPPED], ==, n);
    } else if (which == RNIC_STAT_RX_DROPPED) {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED] -
                         before->s[RNIC_STAT_RX_DROPPED], ==, n);
    } else {
        g_assert_cmpuint(now.s[RNIC_STAT_RX_DROPPED], ==,
                         before->s[RNIC_STAT_RX_DROPPED]);
    }
}

/* A's answer must be an ACK/NAK with this syndrome and PSN, to the peer. */
static void raw_expect_aeth(Raw *t, uint8_t syndrome, uint32_t psn)
{
    RnicRoceHdr h;

    g_assert_true(raw_recv(t, &h, 2000));
    g_assert_cmphex(h.opcode, ==, RNIC_ROCE_OP_ACKNOWLEDGE);
    g_assert_cmphex(h.aeth.syndrome, ==, syndrome);
    g_assert_cmphex(h.psn, ==, psn);
    g_assert_cmphex(h.dest_qp, ==, PEER_QPN);
    g_assert_cmpmem(h.dmac, 6, t->mac, 6);
    g_assert_cmpmem(h.smac, 6, t->a->mac, 6);
}

static void raw_no_answer(Raw *t)
{
    RnicRoceHdr h;

    g_assert_false(raw_recv(t, &h, 50));
}

/* Guard pages intact, the registered page as expected. */
static void raw_check_memory(Raw *t, const uint8_t *target)
{
    uint8_t got[3 * 4096], want[4096];

    qtest_bufread(t->a->qts, t->region, got, sizeof(got));
    memset(want, GUARD, sizeof(want));
    g_assert_cmpmem(got, 4096, want, 4096);
    g_assert_cmpmem(got + 8192, 4096, want, 4096);
    g_assert_cmpmem(got + 4096, 4096, target, 4096);
    qtest_bufread(t->a->qts, t->region5, got, 4096);
    memset(want, 0x5c, sizeof(want));
    g_assert_cmpmem(got, 4096, want, 4096);
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/* Recompute an IPv4 header checksum after editing the header. */
static void ipv4_csum(uint8_t *ip)
{
    uint32_t sum = 0;
    int i;

    put_be16(ip + 10, 0);
    for (i = 0; i < 20; i += 2) {
        sum += ip[i] << 8 | ip[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    put_be16(ip + 10, ~sum);
}

/*
 * The frames the device drops, each counted under its reason. Frame 'i'
 * (of 'frames') of a case is the valid WRITE with its header edited by
 * 'hdr', then encoded, then its bytes edited by 'bytes' (which returns
 * the length to send); either edit may be NULL.
 */
typedef struct RawDrop {
    const char *name;
    void (*hdr)(RnicRoceHdr *h, unsigned i);
    size_t (*bytes)(uint8_t *f, size_t len, unsigned i);
    unsigned frames;
    unsigned stat;              /* goes up by 'frames' (RX_DROPPED too) */
} RawDrop;

/* In the BTH, in the RETH, before the end of the ICRC. */
static size_t drop_truncated(uint8_t *f, size_t len, unsigned i)
{
    const size_t cut[] = { 14 + 20 + 8 + 6, 14 + 20 + 8 + 12 + 10, len - 2 };

    return cut[i];
}

/*
 * IPv4 total length beyond the frame, UDP length short, UDP length not a
 * multiple of 4 for the payload (pad), bad IPv4 header checksum, IPv4
 * options.
 */
static size_t drop_lengths(uint8_t *f, size_t len, unsigned i)
{
    switch (i) {
    case 0:
        put_be16(f + 14 + 2, len - 14 + 40);
        ipv4_csum(f + 14);
        return len;
    case 1:
        put_be16(f + 14 + 20 + 4, (f[14 + 20 + 4] << 8 | f[14 + 20 + 5]) - 8);
        return len;
    case 2:
        put_be16(f + 14 + 2, (f[16] << 8 | f[17]) - 2);
        put_be16(f + 14 + 20 + 4, (f[14 + 20 + 4] << 8 | f[14 + 20 + 5]) - 2);
        ipv4_csum(f + 14);
        return len;
    case 3:
        f[14 + 10] ^= 0x55;
        return len;
    default:
        memmove(f + 14 + 24, f + 14 + 20, len - 14 - 20);
        memset(f + 14 + 20, 1, 4);                  /* 4 NOP options */
        f[14] = 0x46;
        put_be16(f + 14 + 2, (f[16] << 8 | f[17]) + 4);
        ipv4_csum(f + 14);
        return len + 4;
    }
}

static size_t drop_icrc(uint8_t *f, size_t len, unsigned i)
{
    f[len - 10] ^= 0x01;
    return len;
}

static void drop_qpn(RnicRoceHdr *h, unsigned i)
{
    h->dest_qp = 0x777;
}

static void drop_net(RnicRoceHdr *h, unsigned i)
{
    h->vlan_present = true;
    h->vlan_id = 7;
}

static void drop_gid(RnicRoceHdr *h, unsigned i)
{
    h->vlan_present = true;
    h->vlan_id = 5;
}

static void drop_pkey(RnicRoceHdr *h, unsigned i)
{
    h->pkey = 0x1234;
}

static void drop_addr(RnicRoceHdr *h, unsigned i)
{
    h->sgid[15] = PEER_HOST - 1;
}

/* A UD opcode to an RC QP, a UC opcode, a CNP. */
static void drop_opcode(RnicRoceHdr *h, unsigned i)
{
    static const uint8_t op[] = {
        RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD, RNIC_ROCE_OP_SEND_ONLY),
        RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UC, RNIC_ROCE_OP_RDMA_WRITE_ONLY),
        RNIC_ROCE_OPCODE_CNP,
    };

    h->opcode = op[i];
    if (h->opcode == RNIC_ROCE_OPCODE_CNP) {
        h->payload_len = 0;
    }
}

static const RawDrop raw_drops[] = {
    { "truncated", NULL, drop_truncated, 3, RNIC_STAT_RX_ERR_HEADER },
    { "bad lengths", NULL, drop_lengths, 5, RNIC_STAT_RX_ERR_HEADER },
    { "ICRC", NULL, drop_icrc, 1, RNIC_STAT_RX_ERR_ICRC },
    { "no such QPN", drop_qpn, NULL, 1, RNIC_STAT_RX_ERR_QPN },
    { "a VLAN without network context", drop_net, NULL, 1,
      RNIC_STAT_RX_ERR_NET },
    { "VLAN 5 (a context) to the GID of context 0", drop_gid, NULL, 1,
      RNIC_STAT_RX_ERR_GID },
    { "another P_Key", drop_pkey, NULL, 1, RNIC_STAT_RX_ERR_PKEY },
    { "not from the QP's peer", drop_addr, NULL, 1, RNIC_STAT_RX_ERR_ADDR },
    { "UD opcode to an RC QP, UC opcode, CNP", drop_opcode, NULL, 3,
      RNIC_STAT_RX_ERR_OPCODE },
};

/* Each case of raw_drops from the valid WRITE 'v': no answer, its count. */
static void raw_walk_dropped(Raw *t, const RnicRoceHdr *v)
{
    uint8_t frame[9000];
    unsigned c, i;
    Snap sn;

    for (c = 0; c < G_N_ELEMENTS(raw_drops); c++) {
        const RawDrop *r = &raw_drops[c];

        g_test_message("malformed: %s", r->name);
        snap(t, &sn);
        for (i = 0; i < r->frames; i++) {
            RnicRoceHdr h = *v;
            size_t len;

            if (r->hdr) {
                r->hdr(&h, i);
            }
            len = raw_encode(&h, frame, sizeof(frame));
            if (r->bytes) {
                len = r->bytes(frame, len, i);
            }
            raw_send_bytes(t, frame, len);
        }
        raw_no_answer(t);
        raw_delta(t, &sn, r->stat, r->frames);
    }
}

static void test_malformed(void)
{
    Raw t;
    Snap sn;
    TvQp *qp;
    RnicRoceHdr h, v;
    uint8_t data[64], target[4096], frame[2048];
    uint64_t va;
    size_t len;
    uint32_t psn = RQ_PSN;
    GRand *rnd = g_rand_new_with_seed(42);
    unsigned i;

    raw_init(&t);
    qp = raw_qp(&t, PEER_QPN);
    va = t.region + 4096 + 100;
    memset(target, 0, sizeof(target));
    wv_pattern(data, sizeof(data), 7);

    /* a good WRITE: placed, acknowledged */
    snap(&t, &sn);
    v = raw_write(&t, qp, psn, va, t.mr, data, sizeof(data));
    raw_send(&t, &v);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    psn);
    memcpy(target + 100, data, sizeof(data));
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    psn = (psn + 1) & RNIC_ROCE_PSN_MASK;
    v = raw_write(&t, qp, psn, va, t.mr, data, sizeof(data));

    /* the frames that are dropped, each for its reason */
    raw_walk_dropped(&t, &v);
    raw_check_memory(&t, target);

    /* a PSN ahead: one sequence-error NAK for the expected PSN */
    snap(&t, &sn);
    h = v;
    h.psn = (psn + 3) & RNIC_ROCE_PSN_MASK;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_PSN_SEQ_ERR, psn);
    raw_send(&t, &h);
    raw_no_answer(&t);          /* one NAK per gap */
    /*
     * a duplicate (the first WRITE again, other data): re-acknowledged,
     * not executed again
     */
    h = raw_write(&t, qp, RQ_PSN, va, t.mr, target + 1000, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    RQ_PSN);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);

    /* opcode out of sequence: WRITE_MIDDLE with no WRITE_FIRST */
    snap(&t, &sn);
    h = v;
    h.opcode = RNIC_ROCE_OP_RDMA_WRITE_MIDDLE;
    h.payload_len = 1024;
    h.payload = target;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_INVALID_REQ, psn);
    /* the QP is in error now: the good frame is dropped */
    raw_send(&t, &v);
    raw_no_answer(&t);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_DROPPED, 1);
    g_free(qp);

    /* an rkey of context 5 on a QP of context 0: remote access NAK */
    qp = raw_qp(&t, PEER_QPN);
    snap(&t, &sn);
    psn = RQ_PSN;
    h = raw_write(&t, qp, psn, t.region5, t.mr5, data, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    raw_check_memory(&t, target);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    g_free(qp);

    /* beyond the region (32 bytes into the guard page) */
    qp = raw_qp(&t, PEER_QPN);
    h = raw_write(&t, qp, psn, t.region + 8192 - 32, t.mr, data,
                  sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    raw_check_memory(&t, target);
    g_free(qp);
    /* a READ of the guard page below */
    qp = raw_qp(&t, PEER_QPN);
    h = raw_write(&t, qp, psn, t.region + 4096 - 8, t.mr, NULL, 0);
    h.opcode = RNIC_ROCE_OP_RDMA_READ_REQUEST;
    h.reth.dma_len = 64;
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_NAK | RNIC_ROCE_NAK_REMOTE_ACCESS,
                    psn);
    g_free(qp);

    /* random damage to good frames: whatever happens, nothing breaks */
    qp = raw_qp(&t, PEER_QPN);
    for (i = 0; i < 3000; i++) {
        uint32_t n, j;

        h = raw_write(&t, qp, (psn + g_rand_int_range(rnd, -2, 3)) &
                      RNIC_ROCE_PSN_MASK, va + g_rand_int_range(rnd, -200,
                                                                 4096),
                      g_rand_boolean(rnd) ? t.mr : t.mr5, data,
                      g_rand_int_range(rnd, 0, 64));
        do {
            h.opcode = g_rand_int_range(rnd, 0, 0x18);
        } while (!rnic_roce_op_info(h.opcode));
        if (!(rnic_roce_op_info(h.opcode)->flags & RNIC_ROCE_OPF_PAYLOAD)) {
            h.payload_len = 0;
        }
        len = raw_encode(&h, frame, sizeof(frame));
        n = g_rand_int_range(rnd, 0, 4);
        for (j = 0; j < n; j++) {
            frame[g_rand_int_range(rnd, 0, len)] ^=
                1u << g_rand_int_range(rnd, 0, 8);
        }
        if (g_rand_int_range(rnd, 0, 8) == 0) {
            len = g_rand_int_range(rnd, 1, len + 1);
        }
        raw_send_bytes(&t, frame, len);
        if (i % 64 == 63) {
            raw_drain(&t);
        }
    }
    raw_drain(&t);
    g_free(qp);
    /* still alive: a fresh QP gets its WRITE acknowledged */
    qp = raw_qp(&t, PEER_QPN);
    qtest_bufread(t.a->qts, t.region + 4096, target, 4096);
    h = raw_write(&t, qp, RQ_PSN, va, t.mr, data, sizeof(data));
    raw_send(&t, &h);
    raw_expect_aeth(&t, RNIC_ROCE_AETH_ACK | RNIC_ROCE_AETH_CREDIT_INVALID,
                    RQ_PSN);
    memcpy(target + 100, data, sizeof(data));
    raw_check_memory(&t, target);
    g_free(qp);

    /* UD: Q_Key checked; a MAD reaches QP1 of the frame's VLAN only */
    {
        TvQp *ud = tv_qp(&t.a->d, RNIC_QPT_UD, t.a->pd[0], t.a->cq, t.a->cq,
                         NULL, 4, 0);
        TvQp *gsi = tv_qp(&t.a->d, RNIC_QPT_GSI, t.pd5, t.a->cq, t.a->cq,
                          NULL, 4, 0);
        struct rnic_sge r = tv_sge(t.region5, 512, t.mr5);
        struct rnic_cqe c;

        tv_ud_ready(&t.a->d, ud, 0x1111);
        tv_ud_ready(&t.a->d, gsi, 0x80010000);
        tv_post_recv(&t.a->d, gsi, 0x77, &r, 1);
        snap(&t, &sn);
        h = v;
        h.opcode = RNIC_ROCE_OPCODE(RNIC_ROCE_TRANSPORT_UD,
                                    RNIC_ROCE_OP_SEND_ONLY);
        h.dest_qp = ud->qpn;
        h.deth.qkey = 0x2222;
        h.deth.src_qp = 0x1234;
        raw_send(&t, &h);       /* wrong Q_Key */
        raw_no_answer(&t);
        raw_delta(&t, &sn, RNIC_STAT_RX_DROPPED, 1);
        snap(&t, &sn);
        h.dest_qp = 1;          /* context 0 has no QP1 */
        h.deth.qkey = 0x80010000;
        raw_send(&t, &h);
        raw_no_answer(&t);
        raw_delta(&t, &sn, RNIC_STAT_RX_ERR_QPN, 1);
        h.vlan_present = true;  /* VLAN 5: to 10.5.0.1, QP1 */
        h.vlan_id = 5;
        qv_gid_bytes(h.dgid, 5, 1);
        qv_gid_bytes(h.sgid, 5, PEER_HOST);
        raw_send(&t, &h);
        c = wv_expect(t.a, 0x77, RNIC_WC_RECV, 40 + sizeof(data));
        g_assert_cmpuint(le32_to_cpu(c.qp_num), ==, 1);
        g_assert_cmpuint(le32_to_cpu(c.src_qp), ==, 0x1234);
        g_assert_cmpuint(le16_to_cpu(c.vlan_id), ==, 5);
        g_assert_cmpmem(c.smac, 6, t.mac, 6);
        g_free(ud);
        g_free(gsi);
    }

    /* not RoCE for this device: left to the Ethernet function */
    snap(&t, &sn);
    h = v;
    h.dmac[5] ^= 0x80;          /* another MAC */
    raw_send(&t, &h);
    h = v;
    qv_gid_bytes(h.dgid, 0, 42);    /* another IP */
    raw_send(&t, &h);
    raw_no_answer(&t);
    raw_delta(&t, &sn, RNIC_STAT_RX_FRAMES, 0);
    g_assert_cmpuint(tv_stat(&t.a->d, RNIC_STAT_ETH_RX_DISABLED) -
                     sn.s[RNIC_STAT_ETH_RX_DISABLED], ==, 2);
    g_assert_cmphex(rnic_reg_read(&t.a->d, RNIC_REG_MAGIC), ==, RNIC_MAGIC);
    g_rand_free(rnd);
    raw_free(&t);
}

static void rnic_wire_malformed_register_tests(void)
{
    /* plain tests next to the qos graph's: they boot their own machines */
    qtest_add_func("rnic-wire/malformed", test_malformed);
}

libqos_init(rnic_wire_malformed_register_tests);
