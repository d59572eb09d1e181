/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: shared receive queues (sharing, limit event, last WQE
 * reached) and unreliable datagrams (UD and GSI: Q_Key, GRH, immediate,
 * length errors).
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-packet.h"
#include "rnic-engine-int.h"

static bool has_event(TestHost *h, uint64_t ring, uint8_t type,
                      uint32_t handle, uint32_t *data)
{
    struct rnic_eqe *eqe = test_ptr(h, ring);
    int i;

    for (i = 0; i < 64 && eqe[i].owner; i++) {
        if (eqe[i].type == type && eqe[i].handle == handle) {
            if (data) {
                *data = eqe[i].data;
            }
            return true;
        }
    }
    return false;
}

/* Two senders into one receiver QP pair sharing an SRQ. */
static void test_srq_shared(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    TvSrq *srq = tv_srq(h, p->pd, 4, 0, 0);
    TvCq *cq = tv_cq(h, 6, p->eq, 0);
    TvQp *r1 = tv_qp(h, RNIC_QPT_RC, p->pd, cq, cq, srq, 4, 0);
    TvQp *r2 = tv_qp(h, RNIC_QPT_RC, p->pd, cq, cq, srq, 4, 0);
    TvQp *s2 = tv_qp(h, RNIC_QPT_RC, p->pd, p->cqa, p->cqa, NULL, 4, 0);
    uint8_t gid0[16], gid1[16];
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);
    struct rnic_cqe c[4];
    int i;

    tv_gid_bytes(gid0, p->ctx, 1);
    tv_gid_bytes(gid1, p->ctx, 2);
    /* a -> r1, s2 -> r2 */
    {
        struct rnic_qp_attr a;

        memset(&a, 0, sizeof(a));
        a.qp_state = RNIC_QPS_RESET;
        g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, 0);
    }
    tv_rc_connect(h, p->a, 0, gid1, r1->qpn);
    tv_rc_connect(h, r1, 1, gid0, p->a->qpn);
    tv_rc_connect(h, s2, 0, gid1, r2->qpn);
    tv_rc_connect(h, r2, 1, gid0, s2->qpn);
    for (i = 0; i < 4; i++) {
        struct rnic_sge r = tv_sge(p->bufb + i * 1000, 1000, p->mrb);

        tv_post_srq(h, srq, 50 + i, &r, 1);
    }
    memset(test_ptr(h, p->bufa), 0x31, 100);
    tv_post_send(h, p->a, &w, &s, NULL);
    memset(test_ptr(h, p->bufa), 0x32, 100);
    tv_post_send(h, s2, &w, &s, NULL);
    g_assert_cmpint(tv_poll(h, cq, c, 4), ==, 2);
    g_assert_cmpuint(c[0].wr_id, ==, 50);
    g_assert_cmpuint(c[0].qp_handle, ==, r1->handle);
    g_assert_cmpuint(c[1].wr_id, ==, 51);
    g_assert_cmpuint(c[1].qp_handle, ==, r2->handle);
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, p->bufb), ==, 0x31);
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, p->bufb + 1000), ==, 0x32);
    /* an SRQ QP refuses RQ doorbells */
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, RNIC_DB_RQ,
                                         rnic_db_value(r1->handle, 0, 1)), ==,
                    RNIC_ACCESS_BAD_DOORBELL);
    /* r1 in error: last WQE reached; the SRQ's WQEs are not flushed */
    {
        struct rnic_qp_attr a;

        memset(&a, 0, sizeof(a));
        a.qp_state = RNIC_QPS_ERR;
        g_assert_cmpuint(tv_modify(h, r1, &a, RNIC_QP_STATE), ==, 0);
    }
    g_assert_true(has_event(h, p->eq_ring, RNIC_EQE_LAST_WQE_REACHED,
                            r1->handle, NULL));
    g_assert_cmpint(tv_poll(h, cq, c, 4), ==, 0);
    tv_post_send(h, s2, &w, &s, NULL);
    g_assert_cmpint(tv_poll(h, cq, c, 4), ==, 1);
    g_assert_cmpuint(c[0].wr_id, ==, 52);
    g_free(srq);
    g_free(cq);
    g_free(r1);
    g_free(r2);
    g_free(s2);
}

/* Take the pair's QP a out of its connection and connect it to 'r'. */
static void connect_a_to(TvPair *p, TvQp *r)
{
    TestHost *h = p->d;
    struct rnic_qp_attr a;
    uint8_t gid0[16], gid1[16];

    tv_gid_bytes(gid0, p->ctx, 1);
    tv_gid_bytes(gid1, p->ctx, 2);
    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_RESET;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, 0);
    tv_rc_connect(h, p->a, 0, gid1, r->qpn);
    tv_rc_connect(h, r, 1, gid0, p->a->qpn);
}

static void test_srq_limit(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    TvSrq *srq = tv_srq(h, p->pd, 4, 0, 0);
    TvCq *cq = tv_cq(h, 6, p->eq, 0);
    TvQp *r = tv_qp(h, RNIC_QPT_RC, p->pd, cq, cq, srq, 4, 0);
    struct rnic_sq_wqe w = tv_wqe_flags(1, RNIC_WR_SEND, 0, 1);
    struct rnic_sge s = tv_sge(p->bufa, 10, p->mra);
    struct rnic_sge rs = tv_sge(p->bufb, 100, p->mrb);
    struct rnic_admin_cmd m = { .opcode = RNIC_CMD_MODIFY_SRQ };
    uint32_t data = 0;
    int i;

    connect_a_to(p, r);
    for (i = 0; i < 8; i++) {
        tv_post_srq(h, srq, i, &rs, 1);
    }
    m.srq.srq = srq->handle;
    m.srq.limit = 16;
    g_assert_cmpuint(tv_cmd(h, &m).status, ==, RNIC_ST_BAD_PARAM);
    m.srq.limit = 5;
    g_assert_cmpuint(tv_cmd(h, &m).status, ==, RNIC_ST_OK);
    /* 8 -> 7 -> 6 -> 5: not below the limit yet */
    for (i = 0; i < 3; i++) {
        tv_post_send(h, p->a, &w, &s, NULL);
    }
    g_assert_false(has_event(h, p->eq_ring, RNIC_EQE_SRQ_LIMIT, srq->handle,
                             NULL));
    /* 4 < 5: the event, once */
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_true(has_event(h, p->eq_ring, RNIC_EQE_SRQ_LIMIT, srq->handle,
                            &data));
    g_assert_cmpuint(data, ==, 5);
    g_free(srq);
    g_free(cq);
    g_free(r);
}

/*
 * MODIFY_SRQ with a new ring: the WQEs posted and not yet taken move to
 * it, indexes unchanged, and the SRQ goes on there; refused: a ring of
 * fewer entries than WQEs posted, a ring that is not one, a limit not
 * below the new size (nothing changed by any of them).
 */
static void test_srq_resize(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    TvSrq *srq = tv_srq(h, p->pd, 3, 0, 0);
    TvCq *cq = tv_cq(h, 7, p->eq, 0);
    TvQp *r = tv_qp(h, RNIC_QPT_RC, p->pd, cq, cq, srq, 5, 0);
    struct rnic_admin_cmd m = { .opcode = RNIC_CMD_MODIFY_SRQ };
    struct rnic_sq_wqe w = tv_wqe_flags(1, RNIC_WR_SEND, 0, 1);
    struct rnic_sge s = tv_sge(p->bufa, 10, p->mra);
    struct rnic_admin_cqe res;
    RnicSrq *es;
    uint32_t i;

    g_assert_true(test_reg_read(h, RNIC_REG_CAPS_LO) & RNIC_CAP_SRQ_RESIZE);
    connect_a_to(p, r);
    /* 8 WQEs (the ring is full), 3 taken */
    for (i = 0; i < 8; i++) {
        struct rnic_sge rs = tv_sge(p->bufb + i * 64, 64, p->mrb);

        tv_post_srq(h, srq, 100 + i, &rs, 1);
    }
    for (i = 0; i < 3; i++) {
        tv_post_send(h, p->a, &w, &s, NULL);
        g_assert_cmpuint(tv_poll_one(h, cq).wr_id, ==, 100 + i);
    }
    m.srq.srq = srq->handle;
    /* too small for the 5 left, not a ring, a limit beyond the new size */
    m.srq.ring_addr = test_alloc(h, 4 << srq->shift, 4096);
    m.srq.log_size = 2;
    g_assert_cmpuint(tv_cmd(h, &m).status, ==, RNIC_ST_BAD_PARAM);
    m.srq.ring_addr = 0x1234;
    m.srq.log_size = 5;
    g_assert_cmpuint(tv_cmd(h, &m).status, ==, RNIC_ST_BAD_PARAM);
    m.srq.ring_addr = test_alloc(h, 32 << srq->shift, 4096);
    m.srq.limit = 32;
    g_assert_cmpuint(tv_cmd(h, &m).status, ==, RNIC_ST_BAD_PARAM);
    es = rnic_srq_lookup(h->engine, srq->handle);
    g_assert_cmpuint(es->log_size, ==, 3);
    /* 8 -> 32 entries */
    m.srq.limit = 0;
    res = tv_cmd(h, &m);
    g_assert_cmpuint(res.status, ==, RNIC_ST_OK);
    g_assert_cmpuint(res.result1, ==, 5);
    g_assert_cmpuint(es->log_size, ==, 5);
    g_assert_cmpuint(es->ring, ==, m.srq.ring_addr);
    /* the old ring is not read again: garbage there */
    memset(test_ptr(h, srq->ring), 0xff, 8u << srq->shift);
    srq->ring = m.srq.ring_addr;
    srq->log = 5;
    for (i = 8; i < 30; i++) {
        struct rnic_sge rs = tv_sge(p->bufb + i * 64, 64, p->mrb);

        tv_post_srq(h, srq, 100 + i, &rs, 1);
    }
    for (i = 3; i < 30; i++) {
        struct rnic_cqe c;

        memset(test_ptr(h, p->bufa), i, 10);
        tv_post_send(h, p->a, &w, &s, NULL);
        c = tv_poll_one(h, cq);
        g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
        g_assert_cmpuint(c.wr_id, ==, 100 + i);
        g_assert_cmpuint(*(uint8_t *)test_ptr(h, p->bufb + i * 64), ==, i);
    }
    g_free(srq);
    g_free(cq);
    g_free(r);
}

typedef struct UdFixture {
    TestHost *h;
    uint32_t ctx, pd, mr;
    uint64_t buf;
    TvCq *cq;                   /* x's completions */
    TvCq *ycq;                  /* y's completions */
    TvQp *x, *y;
} UdFixture;

static void ud_init(UdFixture *f, uint8_t type)
{
    f->h = test_host_new(NULL);
    tv_enable(f->h, 6);
    f->ctx = tv_net_ctx(f->h, 7);
    tv_gid(f->h, 0, f->ctx, 1);
    tv_gid(f->h, 1, f->ctx, 2);
    f->pd = tv_pd(f->h, f->ctx, 0);
    f->cq = tv_cq(f->h, 6, RNIC_HANDLE_NONE, 0);
    f->ycq = tv_cq(f->h, 6, RNIC_HANDLE_NONE, 0);
    f->x = tv_qp(f->h, RNIC_QPT_UD, f->pd, f->cq, f->cq, NULL, 4, 0);
    f->y = tv_qp(f->h, type, f->pd, f->ycq, f->ycq, NULL, 4, 0);
    /*
     * sending to the GSI QP takes the controlled Q_Key 0x80010000: only a
     * QP that owns it (the MAD layer's QP1) can
     */
    tv_ud_ready(f->h, f->x, type == RNIC_QPT_GSI ? RNIC_ROCE_GSI_QKEY : 0x1234);
    tv_ud_ready(f->h, f->y, type == RNIC_QPT_GSI ? RNIC_ROCE_GSI_QKEY : 0x5678);
    f->buf = test_alloc(f->h, 65536, 4096);
    f->mr = tv_reg_mr(f->h, f->pd, f->buf, 65536, TV_ACCESS_ALL, 0, NULL);
}

static void ud_fini(UdFixture *f)
{
    g_free(f->cq);
    g_free(f->ycq);
    g_free(f->x);
    g_free(f->y);
    test_host_free(f->h);
}

static struct rnic_sq_wqe ud_wqe(UdFixture *f, uint64_t wr_id, uint32_t qpn,
                                 uint32_t qkey, uint8_t dst_host)
{
    struct rnic_sq_wqe w = tv_wqe(wr_id, RNIC_WR_SEND, 1);

    w.ud.remote_qpn = qpn;
    w.ud.remote_qkey = qkey;
    w.ud.av.sgid_index = 0;
    tv_gid_bytes(w.ud.av.dgid, f->ctx, dst_host);
    return w;
}

static void test_ud(void)
{
    UdFixture f;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c;
    uint8_t *grh;

    ud_init(&f, RNIC_QPT_UD);
    memset(test_ptr(f.h, f.buf), 0x61, 500);
    s = tv_sge(f.buf, 500, f.mr);
    r = tv_sge(f.buf + 8192, 1000, f.mr);
    tv_post_recv(f.h, f.y, 9, &r, 1);
    w = ud_wqe(&f, 1, f.y->qpn, 0x5678, 2);
    w.opcode = RNIC_WR_SEND_IMM;
    w.imm_or_inv = g_htonl(77);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    c = tv_poll_one(f.h, f.ycq);
    g_assert_cmpuint(c.wr_id, ==, 9);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, 540);
    g_assert_cmpuint(c.src_qp, ==, f.x->qpn);
    g_assert_true(c.flags & RNIC_CQE_GRH);
    g_assert_true(c.flags & RNIC_CQE_IPV4);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_true(c.flags & RNIC_CQE_VLAN);
    g_assert_cmpuint(c.vlan_id, ==, 7);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(77));
    /* GRH area: 20 bytes of zero, then the IPv4 header 10.0.<ctx>.1 -> .2 */
    grh = test_ptr(f.h, f.buf + 8192);
    g_assert_cmpuint(grh[0], ==, 0);
    g_assert_cmpuint(grh[20], ==, 0x45);
    g_assert_cmpuint(grh[29], ==, 17);
    g_assert_cmpuint(grh[32], ==, 10);
    g_assert_cmpuint(grh[35], ==, 1);
    g_assert_cmpuint(grh[39], ==, 2);
    g_assert_cmpuint(grh[40], ==, 0x61);
    g_assert_cmpuint(grh[40 + 499], ==, 0x61);
    g_assert_cmpuint(grh[40 + 500], ==, 0);

    /* wrong Q_Key: dropped, the sender still completes */
    tv_post_recv(f.h, f.y, 10, &r, 1);
    w = ud_wqe(&f, 2, f.y->qpn, 0x9999, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpint(tv_poll(f.h, f.ycq, &c, 1), ==, 0);
    /* the high bit: "use my QP's Q_Key" (0x1234, which y does not have) */
    w = ud_wqe(&f, 3, f.y->qpn, 0x80000000, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 3);
    g_assert_cmpint(tv_poll(f.h, f.ycq, &c, 1), ==, 0);
    /* no QP with that number: dropped */
    w = ud_wqe(&f, 4, 999, 0x5678, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 4);
    g_assert_cmpint(tv_poll(f.h, f.ycq, &c, 1), ==, 0);
    /* a GID that is not ours: to the wire (a frame) */
    w = ud_wqe(&f, 5, f.y->qpn, 0x5678, 99);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 5);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rnic_engine_stat(f.h->engine, RNIC_STAT_TX_FRAMES), ==,
                     1);
    /* the receive posted above is still there: a fitting datagram lands */
    w = ud_wqe(&f, 6, f.y->qpn, 0x5678, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    g_assert_cmpuint(tv_poll_one(f.h, f.cq).wr_id, ==, 6);
    c = tv_poll_one(f.h, f.ycq);
    g_assert_cmpuint(c.wr_id, ==, 10);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    ud_fini(&f);
}

static void test_ud_lengths(void)
{
    UdFixture f;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c;

    ud_init(&f, RNIC_QPT_UD);
    /*
     * longer than the path MTU (1024 by default for UD): sender error,
     * the QP goes to SQE, not ERR
     */
    s = tv_sge(f.buf, 1025, f.mr);
    w = ud_wqe(&f, 1, f.y->qpn, 0x5678, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_LEN_ERR);
    {
        struct rnic_qp_attr a;

        memset(&a, 0, sizeof(a));
        a.qp_state = RNIC_QPS_RTS;
        a.cur_qp_state = RNIC_QPS_SQE;
        g_assert_cmpuint(tv_modify(f.h, f.x, &a, RNIC_QP_STATE |
                                   RNIC_QP_CUR_STATE), ==, RNIC_ST_OK);
    }
    /* the receive buffer lacks room for GRH + data: receive error */
    s = tv_sge(f.buf, 100, f.mr);
    r = tv_sge(f.buf + 8192, 139, f.mr);
    tv_post_recv(f.h, f.y, 9, &r, 1);
    w = ud_wqe(&f, 2, f.y->qpn, 0x5678, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    c = tv_poll_one(f.h, f.ycq);
    g_assert_cmpuint(c.wr_id, ==, 9);
    g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_LEN_ERR);
    /* UD QPs do not do RDMA */
    w = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    c = tv_poll_one(f.h, f.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    ud_fini(&f);
}

static void test_gsi(void)
{
    UdFixture f;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    struct rnic_cqe c;

    ud_init(&f, RNIC_QPT_GSI);
    g_assert_cmpuint(f.y->qpn, ==, 1);
    s = tv_sge(f.buf, 256, f.mr);
    r = tv_sge(f.buf + 8192, 296, f.mr);
    tv_post_recv(f.h, f.y, 9, &r, 1);
    w = ud_wqe(&f, 1, RNIC_ROCE_GSI_QPN, RNIC_ROCE_GSI_QKEY, 2);
    tv_post_send(f.h, f.x, &w, &s, NULL);
    g_assert_cmpuint(tv_poll_one(f.h, f.cq).status, ==, RNIC_WC_SUCCESS);
    c = tv_poll_one(f.h, f.ycq);
    g_assert_cmpuint(c.wr_id, ==, 9);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, 296);
    g_assert_cmpuint(c.qp_num, ==, 1);
    ud_fini(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tv_test_add_pair("/rnic/srq/shared", NULL, test_srq_shared);
    tv_test_add_pair("/rnic/srq/limit", NULL, test_srq_limit);
    tv_test_add_pair("/rnic/srq/resize", NULL, test_srq_resize);
    g_test_add_func("/rnic/ud/basic", test_ud);
    g_test_add_func("/rnic/ud/lengths", test_ud_lengths);
    g_test_add_func("/rnic/ud/gsi", test_gsi);
    return g_test_run();
}
