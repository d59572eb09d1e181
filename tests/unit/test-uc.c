/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: unreliable connected QPs. Loopback between two UC
 * QPs (SEND, SEND with immediate, WRITE, WRITE with immediate, several
 * packets each), and a UC QP facing a peer the test plays at the wire:
 * the packets it sends (UC opcodes, no ACK request, completion once sent,
 * no retransmission), and what it does with what arrives — a lost packet
 * drops its message and the receive WQE serves the next one, a bad rkey
 * or a missing receive WQE drops the message and the QP goes on, nothing
 * is ever acknowledged.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

#define PEER_QPN    0x99
#define PSN0        100
#define MTU         1024        /* tv_path_mtu: RNIC_MTU_1024 */

/* ---------------------------------------------------------------------- */
/* Loopback                                                               */
/* ---------------------------------------------------------------------- */

typedef struct Lo {
    TvPair *p;
    TvQp *a, *b;                /* UC: a (GID 0) <-> b (GID 1) */
} Lo;

static void lo_init(Lo *l)
{
    uint8_t gid0[16], gid1[16];

    l->p = tv_pair_new(NULL);
    tv_gid_v4(gid0, 0, 0, 1);
    tv_gid_v4(gid1, 0, 0, 2);
    l->a = tv_qp(l->p->d, RNIC_QPT_UC, l->p->pd, l->p->cqa, l->p->cqa, NULL,
                 5, 0);
    l->b = tv_qp(l->p->d, RNIC_QPT_UC, l->p->pd, l->p->cqb, l->p->cqb, NULL,
                 5, 0);
    tv_rc_connect(l->p->d, l->a, 0, gid1, l->b->qpn);
    tv_rc_connect(l->p->d, l->b, 1, gid0, l->a->qpn);
}

static void lo_fini(Lo *l)
{
    g_free(l->a);
    g_free(l->b);
    tv_pair_free(l->p);
}

static uint8_t qp_state(TestHost *h, TvQp *qp)
{
    return rnic_qp_lookup(h->engine, qp->handle)->state;
}

static void test_uc_loopback(void)
{
    Lo l;
    TestHost *h;
    struct rnic_sge s, r;
    struct rnic_sq_wqe w;
    struct rnic_cqe c;

    lo_init(&l);
    h = l.p->d;
    tv_fill(h, l.p->bufa, 16384, 1);

    /* a SEND of three packets */
    r = tv_sge(l.p->bufb, 4096, l.p->mrb);
    tv_post_recv(h, l.b, 11, &r, 1);
    s = tv_sge(l.p->bufa, 3000, l.p->mra);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(h, l.a, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqa, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_poll_one(h, l.p->cqb);
    g_assert_cmpuint(c.wr_id, ==, 11);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(c.byte_len, ==, 3000);
    tv_assert_same(h, l.p->bufa, l.p->bufb, 3000);

    /* SEND with immediate */
    tv_post_recv(h, l.b, 12, &r, 1);
    w = tv_wqe(2, RNIC_WR_SEND_IMM, 1);
    w.imm_or_inv = GUINT32_TO_BE(0xfeed);
    s = tv_sge(l.p->bufa + 100, 10, l.p->mra);
    tv_post_send(h, l.a, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqa, 2, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_poll_one(h, l.p->cqb);
    g_assert_cmpuint(c.wr_id, ==, 12);
    g_assert_cmpuint(c.byte_len, ==, 10);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(c.imm_or_inv, ==, GUINT32_TO_BE(0xfeed));

    /* a WRITE of five packets: no receive WQE used, no completion there */
    s = tv_sge(l.p->bufa, 5000, l.p->mra);
    w = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.p->bufb + 8192;
    w.rdma.rkey = l.p->mrb;
    tv_post_send(h, l.a, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqa, 3, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_expect_no_cqe(h, l.p->cqb);
    tv_assert_same(h, l.p->bufa, l.p->bufb + 8192, 5000);

    /* WRITE with immediate, from b to a */
    tv_fill(h, l.p->bufb, 2048, 7);
    r = tv_sge(l.p->bufa, 16, l.p->mra);
    tv_post_recv(h, l.a, 13, &r, 1);
    s = tv_sge(l.p->bufb, 2048, l.p->mrb);
    w = tv_wqe(4, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = l.p->bufa + 4096;
    w.rdma.rkey = l.p->mra;
    w.imm_or_inv = GUINT32_TO_BE(42);
    tv_post_send(h, l.b, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqb, 4, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    c = tv_poll_one(h, l.p->cqa);
    g_assert_cmpuint(c.wr_id, ==, 13);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(c.byte_len, ==, 2048);
    g_assert_cmphex(c.imm_or_inv, ==, GUINT32_TO_BE(42));
    tv_assert_same(h, l.p->bufb, l.p->bufa + 4096, 2048);

    g_assert_cmpuint(qp_state(h, l.a), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(qp_state(h, l.b), ==, RNIC_QPS_RTS);
    lo_fini(&l);
}

/*
 * READ and atomics are not UC operations: the work request completes with
 * a local QP operation error, the send queue goes to SQE (the receive
 * side goes on) and what was posted behind it is flushed.
 */
static void test_uc_bad_opcode(void)
{
    Lo l;
    TestHost *h;
    struct rnic_sge s, r;
    struct rnic_sq_wqe w;
    struct rnic_cqe c;

    lo_init(&l);
    h = l.p->d;
    s = tv_sge(l.p->bufa, 64, l.p->mra);
    w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = l.p->bufb;
    w.rdma.rkey = l.p->mrb;
    tv_write_send(h, l.a, &w, &s, NULL);
    w = tv_wqe(2, RNIC_WR_SEND, 1);
    tv_write_send(h, l.a, &w, &s, NULL);
    g_assert_cmpint(tv_ring_sq(h, l.a), ==, 0);
    tv_expect_cqe(h, l.p->cqa, 1, RNIC_WC_RDMA_READ, RNIC_WC_LOC_QP_OP_ERR);
    tv_expect_cqe(h, l.p->cqa, 2, RNIC_WC_SEND, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(qp_state(h, l.a), ==, RNIC_QPS_SQE);
    /* a's receive queue still works */
    r = tv_sge(l.p->bufa, 64, l.p->mra);
    tv_post_recv(h, l.a, 21, &r, 1);
    s = tv_sge(l.p->bufb, 64, l.p->mrb);
    w = tv_wqe(3, RNIC_WR_SEND, 1);
    tv_post_send(h, l.b, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqb, 3, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_poll_one(h, l.p->cqa);
    g_assert_cmpuint(c.wr_id, ==, 21);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    lo_fini(&l);
}

/*
 * A QP whose send queue is in SQE still answers as a responder, and what
 * a request through it asked to persist is persisted: a MGMT PERSIST
 * written to b (a UC QP in SQE) of a window b's region covers makes the
 * window durable (persists run as the responder's work, which SQE does
 * not drop).
 */
static void test_uc_sqe_persists(void)
{
    RnicEngineConfig cfg;
    uint8_t gid0[16], gid1[16];
    struct rnic_scm_mgmt *m;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    TestHost *h;
    uint32_t stag;
    Lo l;

    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = 256;
    cfg.scm_persistent = true;
    l.p = tv_pair_new(&cfg);
    h = l.p->d;
    tv_gid_v4(gid0, 0, 0, 1);
    tv_gid_v4(gid1, 0, 0, 2);
    l.a = tv_qp(h, RNIC_QPT_UC, l.p->pd, l.p->cqa, l.p->cqa, NULL, 5, 0);
    l.b = tv_qp(h, RNIC_QPT_UC, l.p->pd, l.p->cqb, l.p->cqb, NULL, 5, 0);
    tv_rc_connect(h, l.a, 0, gid1, l.b->qpn);
    tv_rc_connect(h, l.b, 1, gid0, l.a->qpn);
    stag = tv_reg_scm(h, l.p->pd, 0, 0, 256 * 4096, TV_ACCESS_ALL,
                      1u << RNIC_SCM_SEM_MGMT,
                      RNIC_SCM_SEM_MGMT << RNIC_SCM_KEY_SEM_SHIFT, NULL);
    /* b's send queue to SQE */
    s = tv_sge(l.p->bufb, 64, l.p->mrb);
    w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = l.p->bufa;
    w.rdma.rkey = l.p->mra;
    tv_post_send(h, l.b, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqb, 1, RNIC_WC_RDMA_READ, RNIC_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(qp_state(h, l.b), ==, RNIC_QPS_SQE);
    /* a asks b's window to persist */
    memset(h->scm, 0x77, 256 * 4096);
    m = test_ptr(h, l.p->bufa);
    memset(m, 0, sizeof(*m));
    m->op = RNIC_SCM_MGMT_PERSIST;
    m->length = 256 * 4096;
    s = tv_sge(l.p->bufa, sizeof(*m), l.p->mra);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0;
    w.rdma.rkey = stag;
    tv_post_send(h, l.a, &w, &s, NULL);
    tv_expect_cqe(h, l.p->cqa, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    test_host_run(h);
    g_assert_cmpint(memcmp(h->scm, h->scm_durable, 256 * 4096), ==, 0);
    lo_fini(&l);
}

/* RC-only attributes are refused on a UC QP, as ib_modify_qp_is_ok does. */
static void test_uc_attrs(void)
{
    TvPair *p = tv_pair_new(NULL);
    TvQp *q = tv_qp(p->d, RNIC_QPT_UC, p->pd, p->cqa, p->cqa, NULL, 4, 0);
    struct rnic_qp_attr a = {
        .qp_state = RNIC_QPS_INIT,
        .port_num = 1,
        .qp_access_flags = RNIC_ACCESS_REMOTE_WRITE,
    };
    uint32_t rtr = RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
                   RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN;

    g_assert_cmpuint(tv_modify(p->d, q, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
                               RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS), ==,
                     RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = RNIC_MTU_1024;
    a.dest_qp_num = 5;
    a.av.sgid_index = 0;
    tv_gid_v4(a.av.dgid, 0, 0, 2);
    g_assert_cmpuint(tv_modify(p->d, q, &a, rtr | RNIC_QP_MAX_DEST_RD_ATOMIC),
                     ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(tv_modify(p->d, q, &a, rtr | RNIC_QP_MIN_RNR_TIMER), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(tv_modify(p->d, q, &a, rtr & ~RNIC_QP_DEST_QPN), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(tv_modify(p->d, q, &a, rtr), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.timeout = 14;
    g_assert_cmpuint(tv_modify(p->d, q, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN |
                               RNIC_QP_TIMEOUT), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(tv_modify(p->d, q, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN),
                     ==, RNIC_ST_OK);
    g_free(q);
    tv_pair_free(p);
}

/* ---------------------------------------------------------------------- */
/* Against a peer at the wire                                             */
/* ---------------------------------------------------------------------- */

typedef struct Captured {
    RnicPacket pkt;
    uint8_t data[4096];
} Captured;

typedef struct Fix {
    TestHost *h;
    uint32_t ctx, pd, mr;
    uint64_t buf;
    TvCq *cq;
    TvQp *qp;
    uint8_t local[16], remote[16];
    GArray *tx;                 /* of Captured */
} Fix;

static void tap(void *opaque, const RnicPacket *pkt)
{
    Fix *f = opaque;
    Captured c;

    memset(&c, 0, sizeof(c));
    c.pkt = *pkt;
    g_assert_cmpuint(pkt->payload.len, <=, sizeof(c.data));
    g_assert_true(rnic_packet_payload_gather(f->h->engine, pkt, c.data));
    c.pkt.payload.data = NULL;
    c.pkt.payload.segs = NULL;
    g_array_append_val(f->tx, c);
}

static void fix_init(Fix *f)
{
    f->h = test_host_new(NULL);
    f->tx = g_array_new(FALSE, TRUE, sizeof(Captured));
    f->h->engine->wire_tap = tap;
    f->h->engine->wire_tap_opaque = f;
    tv_enable(f->h, 6);
    f->ctx = tv_net_ctx(f->h, 0);
    tv_gid(f->h, 0, f->ctx, 1);
    tv_gid_bytes(f->local, f->ctx, 1);
    tv_gid_bytes(f->remote, f->ctx, 200);
    f->pd = tv_pd(f->h, f->ctx, 0);
    f->cq = tv_cq(f->h, 6, RNIC_HANDLE_NONE, 0);
    f->qp = tv_qp(f->h, RNIC_QPT_UC, f->pd, f->cq, f->cq, NULL, 5, 0);
    tv_rc_connect(f->h, f->qp, 0, f->remote, PEER_QPN);
    f->buf = test_alloc(f->h, 1u << 20, 4096);
    f->mr = tv_reg_mr(f->h, f->pd, f->buf, 1u << 20, TV_ACCESS_ALL, 0, NULL);
}

static void fix_fini(Fix *f)
{
    g_array_free(f->tx, TRUE);
    g_free(f->cq);
    g_free(f->qp);
    test_host_free(f->h);
}

static Captured *sent(Fix *f, guint i)
{
    g_assert_cmpuint(i, <, f->tx->len);
    return &g_array_index(f->tx, Captured, i);
}

/* A packet from the peer; the engine runs after it. */
static void inject(Fix *f, uint8_t op, uint32_t psn, const void *data,
                   uint32_t len, const RnicPacket *extra)
{
    RnicPacket p;

    memset(&p, 0, sizeof(p));
    if (extra) {
        p = *extra;
    }
    p.net.net_ctx = f->ctx;
    memcpy(p.net.sgid, f->remote, 16);
    memcpy(p.net.dgid, f->local, 16);
    p.opcode = op;
    p.psn = psn;
    p.dest_qp = f->qp->qpn;
    p.pkey = 0xffff;
    p.ack_req = true;           /* ignored: UC acknowledges nothing */
    p.ext = rnic_op_ext(op);
    p.payload.len = len;
    p.payload.data = data;
    rnic_rx(f->h->engine, rnic_netctx_lookup(f->h->engine, f->ctx), &p);
    test_host_run(f->h);
}

static RnicPacket reth(uint64_t va, uint32_t rkey, uint32_t len)
{
    RnicPacket x;

    memset(&x, 0, sizeof(x));
    x.reth.va = va;
    x.reth.rkey = rkey;
    x.reth.dma_len = len;
    return x;
}

/* UC opcodes, PSNs in sequence, no ACK request; done once sent; no retry. */
static void test_uc_requester(void)
{
    Fix f;
    struct rnic_sge s;
    struct rnic_sq_wqe w;
    guint i;

    fix_init(&f);
    s = tv_sge(f.buf, 2500, f.mr);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(f.h, f.qp, &w, &s, NULL);
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = 0x10000;
    w.rdma.rkey = 0x1234;
    tv_post_send(f.h, f.qp, &w, &s, NULL);
    tv_expect_cqe(f.h, f.cq, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(f.h, f.cq, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    g_assert_cmpuint(f.tx->len, ==, 6);
    g_assert_cmphex(sent(&f, 0)->pkt.opcode, ==, RNIC_ROCE_UC_SEND_FIRST);
    g_assert_cmphex(sent(&f, 1)->pkt.opcode, ==, RNIC_ROCE_UC_SEND_MIDDLE);
    g_assert_cmphex(sent(&f, 2)->pkt.opcode, ==, RNIC_ROCE_UC_SEND_LAST);
    g_assert_cmphex(sent(&f, 3)->pkt.opcode, ==,
                    RNIC_ROCE_UC_RDMA_WRITE_FIRST);
    g_assert_cmpuint(sent(&f, 3)->pkt.reth.dma_len, ==, 2500);
    g_assert_cmphex(sent(&f, 5)->pkt.opcode, ==,
                    RNIC_ROCE_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE);
    for (i = 0; i < 6; i++) {
        g_assert_cmpuint(sent(&f, i)->pkt.psn, ==, PSN0 + i);
        g_assert_false(sent(&f, i)->pkt.ack_req);
        g_assert_cmpuint(sent(&f, i)->pkt.dest_qp, ==, PEER_QPN);
    }
    g_assert_cmpuint(sent(&f, 2)->pkt.payload.len, ==, 2500 - 2 * MTU);
    /* nothing is retransmitted, however long nothing answers */
    test_host_advance(f.h, 10 * G_USEC_PER_SEC * 1000ull);
    g_assert_cmpuint(f.tx->len, ==, 6);
    g_assert_cmpuint(qp_state(f.h, f.qp), ==, RNIC_QPS_RTS);
    fix_fini(&f);
}

/*
 * A lost middle packet: the message is dropped, its receive WQE is not
 * completed and takes the next message. No ACK, no NAK, ever.
 */
static void test_uc_lost_packet(void)
{
    Fix f;
    uint8_t data[MTU];
    struct rnic_sge r;
    struct rnic_cqe c;

    fix_init(&f);
    memset(data, 0x42, sizeof(data));
    r = tv_sge(f.buf, 8192, f.mr);
    tv_post_recv(f.h, f.qp, 1, &r, 1);
    tv_post_recv(f.h, f.qp, 2, &r, 1);
    inject(&f, RNIC_ROCE_UC_SEND_FIRST, PSN0, data, MTU, NULL);
    /* PSN0 + 1 lost */
    inject(&f, RNIC_ROCE_UC_SEND_LAST, PSN0 + 2, data, 100, NULL);
    tv_expect_no_cqe(f.h, f.cq);
    /* the next message, into the same receive WQE */
    inject(&f, RNIC_ROCE_UC_SEND_FIRST, PSN0 + 3, data, MTU, NULL);
    inject(&f, RNIC_ROCE_UC_SEND_LAST, PSN0 + 4, data, 7, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, MTU + 7);
    /* a lost first packet: the rest of its message is dropped */
    inject(&f, RNIC_ROCE_UC_SEND_MIDDLE, PSN0 + 6, data, MTU, NULL);
    inject(&f, RNIC_ROCE_UC_SEND_LAST, PSN0 + 7, data, 5, NULL);
    tv_expect_no_cqe(f.h, f.cq);
    /* a lost WRITE packet: what arrived before it stays, nothing else */
    {
        RnicPacket x = reth(f.buf + 65536, f.mr, 3 * MTU);

        memset(test_ptr(f.h, f.buf + 65536), 0, 3 * MTU);
        inject(&f, RNIC_ROCE_UC_RDMA_WRITE_FIRST, PSN0 + 8, data, MTU, &x);
        inject(&f, RNIC_ROCE_UC_RDMA_WRITE_LAST, PSN0 + 10, data, MTU, NULL);
        g_assert_cmpuint(((uint8_t *)test_ptr(f.h, f.buf + 65536))[0], ==,
                         0x42);
        g_assert_cmpuint(((uint8_t *)test_ptr(f.h, f.buf + 65536))[2 * MTU],
                         ==, 0);
    }
    /* and a SEND only after all that: the second receive WQE */
    inject(&f, RNIC_ROCE_UC_SEND_ONLY, PSN0 + 11, data, 3, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.byte_len, ==, 3);
    g_assert_cmpuint(f.tx->len, ==, 0);
    g_assert_cmpuint(qp_state(f.h, f.qp), ==, RNIC_QPS_RTS);
    /* the gaps: before PSN0 + 2, + 6 and + 10 */
    g_assert_cmpuint(tv_stat(f.h, RNIC_STAT_OUT_OF_SEQUENCE), ==, 3);
    fix_fini(&f);
}

/*
 * What RC answers with a NAK (and an error), UC drops: a bad rkey, a
 * WRITE the QP's rights refuse, a SEND without a receive WQE, an RC
 * opcode. A SEND longer than its receive buffer completes that WQE with a
 * local length error. The QP stays in RTS throughout.
 */
static void test_uc_drops(void)
{
    Fix f;
    uint8_t data[64];
    struct rnic_sge r;
    struct rnic_cqe c;
    RnicPacket x;
    uint64_t dropped;

    fix_init(&f);
    memset(data, 0x17, sizeof(data));
    dropped = tv_stat(f.h, RNIC_STAT_RX_DROPPED);
    x = reth(f.buf, f.mr ^ 0x100, sizeof(data));
    inject(&f, RNIC_ROCE_UC_RDMA_WRITE_ONLY, PSN0, data, sizeof(data), &x);
    x = reth(f.buf + (1u << 20) - 8, f.mr, sizeof(data));
    inject(&f, RNIC_ROCE_UC_RDMA_WRITE_ONLY, PSN0 + 1, data, sizeof(data), &x);
    g_assert_cmpuint(((uint8_t *)test_ptr(f.h, f.buf))[0], ==, 0);
    inject(&f, RNIC_ROCE_UC_SEND_ONLY, PSN0 + 2, data, 8, NULL);  /* no WQE */
    inject(&f, RNIC_ROCE_RC_SEND_ONLY, PSN0 + 3, data, 8, NULL);  /* RC op */
    g_assert_cmpuint(tv_stat(f.h, RNIC_STAT_RX_DROPPED) - dropped, ==, 4);
    g_assert_cmpuint(tv_stat(f.h, RNIC_STAT_OUT_OF_BUFFER), ==, 1);
    tv_expect_no_cqe(f.h, f.cq);

    /* longer than the receive buffer: that WQE completes in error */
    r = tv_sge(f.buf, 16, f.mr);
    tv_post_recv(f.h, f.qp, 1, &r, 1);
    tv_post_recv(f.h, f.qp, 2, &r, 1);
    inject(&f, RNIC_ROCE_UC_SEND_ONLY, PSN0 + 4, data, 32, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_LEN_ERR);
    g_assert_cmpuint(qp_state(f.h, f.qp), ==, RNIC_QPS_RTS);

    /* and the QP goes on: a good WRITE, a good SEND */
    x = reth(f.buf + 4096, f.mr, sizeof(data));
    inject(&f, RNIC_ROCE_UC_RDMA_WRITE_ONLY, PSN0 + 5, data, sizeof(data), &x);
    g_assert_cmpmem(test_ptr(f.h, f.buf + 4096), sizeof(data), data,
                    sizeof(data));
    inject(&f, RNIC_ROCE_UC_SEND_ONLY, PSN0 + 6, data, 16, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(f.tx->len, ==, 0);
    g_assert_cmpuint(qp_state(f.h, f.qp), ==, RNIC_QPS_RTS);
    fix_fini(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/uc/loopback", test_uc_loopback);
    g_test_add_func("/rnic/uc/bad-opcode", test_uc_bad_opcode);
    g_test_add_func("/rnic/uc/sqe-persists", test_uc_sqe_persists);
    g_test_add_func("/rnic/uc/attrs", test_uc_attrs);
    g_test_add_func("/rnic/uc/requester", test_uc_requester);
    g_test_add_func("/rnic/uc/lost-packet", test_uc_lost_packet);
    g_test_add_func("/rnic/uc/drops", test_uc_drops);
    return g_test_run();
}
