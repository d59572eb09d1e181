/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: object tables through the admin queue. Network
 * contexts, user contexts (ownership), GIDs, PDs, EQs, CQs, SRQs, QPs:
 * create/destroy, references (BUSY), limits, bad handles, QPN spaces.
 */
#include <string.h>
#include "rnic-test-verbs.h"

static struct rnic_admin_cmd cmd(uint8_t opcode, uint32_t uctx)
{
    struct rnic_admin_cmd c;

    memset(&c, 0, sizeof(c));
    c.opcode = opcode;
    c.uctx = uctx;
    return c;
}

static uint8_t destroy(TestHost *h, uint8_t opcode, uint32_t handle,
                       uint32_t uctx)
{
    struct rnic_admin_cmd c = cmd(opcode, uctx);

    c.destroy.handle = handle;
    return tv_cmd(h, &c).status;
}

static void test_net_ctx(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    struct rnic_admin_cmd c;
    uint32_t a, b, pd;

    rnic_engine_config_defaults(&cfg);
    cfg.max_net_ctx = 3;
    h = test_host_new(&cfg);
    tv_enable(h, 5);
    a = tv_net_ctx(h, 0);
    b = tv_net_ctx(h, 100);
    g_assert_cmpuint(a, !=, b);
    c = cmd(RNIC_CMD_CREATE_NET_CTX, 0);
    c.net_ctx.net_id = 100;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_EXISTS);
    c.net_ctx.net_id = 4096;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.net_ctx.net_id = 5;
    c.net_ctx.net_type = RNIC_NET_VNI;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NOT_SUPPORTED);
    c.net_ctx.net_type = 9;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.net_ctx.net_type = RNIC_NET_VLAN;
    c.uctx = tv_uctx(h);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    c.uctx = 0;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    c.net_ctx.net_id = 6;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
    /* busy while a PD or a GID uses it */
    pd = tv_pd(h, b, 0);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_NET_CTX, b, 0), ==,
                     RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DEALLOC_PD, pd, 0), ==, RNIC_ST_OK);
    tv_gid(h, 3, b, 1);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_NET_CTX, b, 0), ==,
                     RNIC_ST_BUSY);
    c = cmd(RNIC_CMD_DEL_GID, 0);
    c.gid.index = 3;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_NET_CTX, b, 0), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_NET_CTX, b, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    /* the VLAN is free again */
    g_assert_cmpuint(tv_net_ctx(h, 100), ==, b);
    test_host_free(h);
}

static void test_uctx(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    struct rnic_admin_cmd c;
    uint32_t u1, u2, ctx, pd, u;
    TvCq *cq;

    rnic_engine_config_defaults(&cfg);
    cfg.db_pages = 4;
    h = test_host_new(&cfg);
    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    u1 = tv_uctx(h);
    u2 = tv_uctx(h);
    g_assert_cmpuint(u1, ==, 1);
    g_assert_cmpuint(u2, ==, 2);
    g_assert_cmpuint(tv_uctx(h), ==, 3);
    c = cmd(RNIC_CMD_ALLOC_UCTX, 0);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
    g_assert_cmpuint(destroy(h, RNIC_CMD_FREE_UCTX, 3, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_FREE_UCTX, 3, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(destroy(h, RNIC_CMD_FREE_UCTX, 0, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    /* objects of u1 */
    pd = tv_pd(h, ctx, u1);
    cq = tv_cq(h, 4, RNIC_HANDLE_NONE, u1);
    /* another user context cannot touch them */
    g_assert_cmpuint(destroy(h, RNIC_CMD_DEALLOC_PD, pd, u2), ==,
                     RNIC_ST_PERMISSION);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq->handle, u2), ==,
                     RNIC_ST_PERMISSION);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq->handle, 0), ==,
                     RNIC_ST_PERMISSION);
    g_assert_cmpuint(tv_reg_mr(h, pd, 0x10000, 4096, 0, u2, &(uint8_t){0}), ==,
                     0);
    /* a QP of u2 cannot use u1's PD or CQ */
    c = cmd(RNIC_CMD_CREATE_QP, u2);
    c.qp.pd = pd;
    c.qp.send_cq = c.qp.recv_cq = cq->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    /* commands in the name of a context that does not exist */
    c = cmd(RNIC_CMD_ALLOC_PD, 3);
    c.pd.net_ctx = ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    c.uctx = 1000;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    /* kernel-only commands */
    c = cmd(RNIC_CMD_ALLOC_UCTX, u1);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    c = cmd(RNIC_CMD_CREATE_EQ, u1);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    /* u1 cannot go while it owns objects */
    g_assert_cmpuint(destroy(h, RNIC_CMD_FREE_UCTX, u1, 0), ==, RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq->handle, u1), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DEALLOC_PD, pd, u1), ==, RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_FREE_UCTX, u1, 0), ==, RNIC_ST_OK);
    /* reuse gives the lowest free page */
    u = tv_uctx(h);
    g_assert_cmpuint(u, ==, 1);
    g_free(cq);
    test_host_free(h);
}

static void test_gids(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd c;
    uint32_t ctx;

    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, ctx, 1);
    c = cmd(RNIC_CMD_ADD_GID, 0);
    tv_gid_bytes(c.gid.gid, ctx, 2);
    c.gid.index = 0;
    c.gid.net_ctx = ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_EXISTS);
    c.gid.index = 1;
    tv_gid_bytes(c.gid.gid, ctx, 1);        /* same GID, same context */
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_EXISTS);
    tv_gid_bytes(c.gid.gid, ctx, 2);
    c.gid.net_ctx = 99;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.gid.net_ctx = ctx;
    c.gid.index = h->cfg.max_gid;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.gid.index = 1;
    c.gid.gid_type = 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.gid.gid_type = 0;
    memset(c.gid.gid, 0, 16);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c = cmd(RNIC_CMD_DEL_GID, 0);
    c.gid.index = 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.gid.index = 0;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    test_host_free(h);
}

static void test_queues_and_refs(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd c;
    uint32_t ctx, pd, eq, eq2;
    TvCq *cq;
    TvSrq *srq;
    TvQp *qp;

    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    pd = tv_pd(h, ctx, 0);
    eq = tv_eq(h, 4, 1, RNIC_EQ_ASYNC, NULL);
    /* EQ checks */
    c = cmd(RNIC_CMD_CREATE_EQ, 0);
    c.eq.ring_addr = test_alloc(h, 4096, 4096);
    c.eq.log_size = 4;
    c.eq.flags = RNIC_EQ_ASYNC;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_EXISTS);
    c.eq.flags = 0x80;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.eq.flags = 0;
    c.eq.vector = h->cfg.msix_vectors;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.eq.vector = 2;
    c.eq.log_size = 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.eq.log_size = 4;
    eq2 = tv_cmd_ok(h, &c);
    /* CQ on eq2, SRQ, QP */
    cq = tv_cq(h, 5, eq2, 0);
    srq = tv_srq(h, pd, 4, 0, 0);
    qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, srq, 4, 0);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_EQ, eq2, 0), ==,
                     RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq->handle, 0), ==,
                     RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_SRQ, srq->handle, 0), ==,
                     RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DEALLOC_PD, pd, 0), ==, RNIC_ST_BUSY);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_QP, qp->handle, 0), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_QP, qp->handle, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_SRQ, srq->handle, 0), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq->handle, 0), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_EQ, eq2, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_EQ, eq, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(destroy(h, RNIC_CMD_DEALLOC_PD, pd, 0), ==, RNIC_ST_OK);
    /* a CQ naming an EQ that does not exist */
    c = cmd(RNIC_CMD_CREATE_CQ, 0);
    c.cq.ring_addr = test_alloc(h, 4096, 4096);
    c.cq.log_size = 4;
    c.cq.eq = 12345;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    g_free(cq);
    g_free(srq);
    g_free(qp);
    test_host_free(h);
}

static void test_limits(void)
{
    RnicEngineConfig cfg;
    TestHost *h;
    struct rnic_admin_cmd c;
    uint32_t ctx, pd;
    TvCq *cq[3];
    int i;

    rnic_engine_config_defaults(&cfg);
    cfg.max_cq = 2;
    cfg.max_pd = 1;
    cfg.max_qp = 2;
    h = test_host_new(&cfg);
    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    pd = tv_pd(h, ctx, 0);
    c = cmd(RNIC_CMD_ALLOC_PD, 0);
    c.pd.net_ctx = ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
    cq[0] = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    cq[1] = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    c = cmd(RNIC_CMD_CREATE_CQ, 0);
    c.cq.ring_addr = test_alloc(h, 4096, 4096);
    c.cq.log_size = 4;
    c.cq.eq = RNIC_HANDLE_NONE;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
    /* CQ larger than max_cqe */
    g_assert_cmpuint(destroy(h, RNIC_CMD_DESTROY_CQ, cq[1]->handle, 0), ==,
                     RNIC_ST_OK);
    c.cq.log_size = 17;         /* 131072 > 65536 */
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    /* QPs */
    for (i = 0; i < 2; i++) {
        g_free(tv_qp(h, RNIC_QPT_RC, pd, cq[0], cq[0], NULL, 2, 0));
    }
    c = cmd(RNIC_CMD_CREATE_QP, 0);
    c.qp.sq_addr = test_alloc(h, 4096, 4096);
    c.qp.rq_addr = test_alloc(h, 4096, 4096);
    c.qp.pd = pd;
    c.qp.send_cq = c.qp.recv_cq = cq[0]->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    c.qp.sq_wqe_shift = 6;
    c.qp.rq_wqe_shift = 4;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NO_RESOURCES);
    g_free(cq[0]);
    g_free(cq[1]);
    test_host_free(h);
}

static void test_qpn_spaces(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t ca, cb, pa, pb, u;
    struct rnic_admin_cmd c;
    TvCq *cq;
    TvQp *qa, *qb, *ga, *gb;

    tv_enable(h, 5);
    ca = tv_net_ctx(h, 10);
    cb = tv_net_ctx(h, 20);
    pa = tv_pd(h, ca, 0);
    pb = tv_pd(h, cb, 0);
    cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    /* each context has its own QPN space: the first QPs get the same QPN */
    qa = tv_qp(h, RNIC_QPT_RC, pa, cq, cq, NULL, 2, 0);
    qb = tv_qp(h, RNIC_QPT_RC, pb, cq, cq, NULL, 2, 0);
    g_assert_cmpuint(qa->qpn, ==, qb->qpn);
    g_assert_cmpuint(qa->qpn, >=, 2);
    g_assert_cmpuint(qa->handle, !=, qb->handle);
    /* QP1 is the GSI QP of each context */
    ga = tv_qp(h, RNIC_QPT_GSI, pa, cq, cq, NULL, 2, 0);
    gb = tv_qp(h, RNIC_QPT_GSI, pb, cq, cq, NULL, 2, 0);
    g_assert_cmpuint(ga->qpn, ==, 1);
    g_assert_cmpuint(gb->qpn, ==, 1);
    c = cmd(RNIC_CMD_CREATE_QP, 0);
    c.qp.sq_addr = test_alloc(h, 4096, 4096);
    c.qp.rq_addr = test_alloc(h, 4096, 4096);
    c.qp.pd = pa;
    c.qp.send_cq = c.qp.recv_cq = cq->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    c.qp.qp_type = RNIC_QPT_GSI;
    c.qp.sq_wqe_shift = 6;
    c.qp.rq_wqe_shift = 4;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_EXISTS);
    c.qp.qp_type = RNIC_QPT_COUNT;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    /* the GSI QP is the kernel's */
    u = tv_uctx(h);
    c.qp.qp_type = RNIC_QPT_GSI;
    c.uctx = u;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    g_free(cq);
    g_free(qa);
    g_free(qb);
    g_free(ga);
    g_free(gb);
    test_host_free(h);
}

static void test_resize_cq(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w;
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
    struct rnic_admin_cmd c = cmd(RNIC_CMD_RESIZE_CQ, 0);
    struct rnic_admin_cqe r;
    struct rnic_cqe out[8];
    uint64_t ring;
    int i;

    w = tv_wqe(0, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    /* 5 completions, consume 2, 3 outstanding */
    for (i = 0; i < 5; i++) {
        w.wr_id = i;
        tv_post_send(h, p->a, &w, &s, NULL);
    }
    g_assert_cmpint(tv_poll(h, p->cqa, out, 2), ==, 2);
    /* too small for what is outstanding */
    c.cq.cq = p->cqa->handle;
    c.cq.ring_addr = test_alloc(h, 4096, 4096);
    c.cq.log_size = 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    ring = test_alloc(h, 16 * 64, 4096);
    memset(test_ptr(h, ring), 0xff, 16 * 64);     /* garbage: rewritten */
    c.cq.ring_addr = ring;
    c.cq.log_size = 4;
    r = tv_cmd(h, &c);
    g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    g_assert_cmpuint(r.result1, ==, 16);
    p->cqa->ring = ring;
    p->cqa->log = 4;
    /* the 3 outstanding completions are there, then new ones */
    w.wr_id = 5;
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpint(tv_poll(h, p->cqa, out, 8), ==, 4);
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(out[i].wr_id, ==, 2 + i);
        g_assert_cmpuint(out[i].status, ==, RNIC_WC_SUCCESS);
    }
}

static void test_cq_overrun(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w;
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
    struct rnic_eqe *eqe = test_ptr(h, p->eq_ring);
    int i;

    w = tv_wqe(0, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    /* a's CQ has 256 entries: the 257th completion overruns it */
    for (i = 0; i < 257; i++) {
        w.wr_id = i;
        tv_write_send(h, p->a, &w, &s, NULL);
        if (i % 32 == 31) {
            g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
            test_host_run(h);
        }
    }
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    test_host_run(h);
    g_assert_cmpuint(eqe[0].type, ==, RNIC_EQE_CQ_ERR);
    g_assert_cmpuint(eqe[0].handle, ==, p->cqa->handle);
    g_assert_cmpuint(h->irqs[1], >=, 1);
}

/*
 * Every CQE carries the device clock when it was written, the clock a load
 * of RNIC_DB_CLOCK returns (ibv_query_rt_values_ex); no other doorbell
 * offset is readable.
 */
static void test_cqe_timestamp(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
    struct rnic_cqe c;
    uint64_t v;

    g_assert_true(test_reg_read(h, RNIC_REG_CAPS_LO) & RNIC_CAP_CQE_TIMESTAMP);
    h->now_ns = 123456789;
    g_assert_cmpint(rnic_engine_doorbell_read(h->engine, RNIC_DB_CLOCK, &v),
                    ==, RNIC_ACCESS_OK);
    g_assert_cmpuint(v, ==, 123456789);
    g_assert_cmpint(rnic_engine_doorbell_read(h->engine, RNIC_DB_CQ, &v), ==,
                    RNIC_ACCESS_WRITE_ONLY);
    g_assert_cmpint(rnic_engine_doorbell_read(h->engine, RNIC_DB_CLOCK + 8,
                                              &v), ==, RNIC_ACCESS_WRITE_ONLY);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    c = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(GUINT64_FROM_LE(c.timestamp), ==, 123456789);
    /* later completions, a later time: the send's and the receive's */
    h->now_ns += 1000000;
    tv_pair_send(p, 0, 64, 2, 3);
    c = tv_poll_one(h, p->cqb);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(GUINT64_FROM_LE(c.timestamp), ==, 124456789);
    c = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(c.wr_id, ==, 3);
    g_assert_cmpuint(GUINT64_FROM_LE(c.timestamp), ==, 124456789);
}

/* QUERY_QP_STATS of 'qp' into 'v'; the command's status. */
static uint8_t qp_stats(TestHost *h, TvQp *qp, uint64_t *v, uint32_t len)
{
    struct rnic_admin_cmd c = cmd(RNIC_CMD_QUERY_QP_STATS, 0);
    uint64_t buf = test_alloc(h, 4096, 64);
    uint8_t st;

    c.query.addr = buf;
    c.query.len = len;
    c.query.handle = qp ? qp->handle : 0xdead;
    st = tv_cmd(h, &c).status;
    memcpy(v, test_ptr(h, buf), RNIC_QP_STAT_COUNT * 8);
    return st;
}

#define QS(s) ((s) - RNIC_QP_STAT_FIRST)

/*
 * Each QP counts its own transport packets, and the device's counters
 * are their sums; the counters survive a save and load of the device.
 */
static void test_qp_stats(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint64_t va[RNIC_QP_STAT_COUNT], vb[RNIC_QP_STAT_COUNT];
    unsigned i;

    g_assert_true(test_reg_read(h, RNIC_REG_CAPS_LO) & RNIC_CAP_QP_STATS);
    g_assert_cmpuint(qp_stats(h, p->a, va, 4096), ==, RNIC_ST_OK);
    g_assert_cmpuint(va[QS(RNIC_STAT_SENT_PKTS)], ==, 0);
    for (i = 0; i < 5; i++) {
        tv_pair_send(p, 0, 64, 10 + i, 20 + i);
        tv_poll_one(h, p->cqb);
        tv_poll_one(h, p->cqa);
    }
    g_assert_cmpuint(qp_stats(h, p->a, va, 4096), ==, RNIC_ST_OK);
    g_assert_cmpuint(qp_stats(h, p->b, vb, 4096), ==, RNIC_ST_OK);
    /* a sent 5 requests and took b's ACKs; b the other way round */
    g_assert_cmpuint(va[QS(RNIC_STAT_SENT_PKTS)], ==, 5);
    g_assert_cmpuint(vb[QS(RNIC_STAT_RCVD_PKTS)], ==, 5);
    g_assert_cmpuint(va[QS(RNIC_STAT_RCVD_PKTS)], ==,
                     vb[QS(RNIC_STAT_SENT_PKTS)]);
    g_assert_cmpuint(vb[QS(RNIC_STAT_SENT_PKTS)], >=, 1);
    for (i = 0; i < RNIC_QP_STAT_COUNT; i++) {
        g_assert_cmpuint(va[i] + vb[i], ==,
                         tv_stat(h, RNIC_QP_STAT_FIRST + i));
    }
    /* too small a buffer, no such QP */
    g_assert_cmpuint(qp_stats(h, p->a, va, 8), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(qp_stats(h, NULL, va, 4096), ==, RNIC_ST_BAD_HANDLE);
    tv_pair_migrate(p);
    g_assert_cmpuint(qp_stats(p->d, p->b, va, 4096), ==, RNIC_ST_OK);
    g_assert_cmpmem(va, sizeof(va), vb, sizeof(vb));
    tv_pair_free(p);
}

static void test_query_device_port(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd c = cmd(RNIC_CMD_QUERY_DEVICE, 0);
    uint64_t buf;
    struct rnic_device_attr *a;

    tv_enable(h, 5);
    buf = test_alloc(h, 4096, 64);
    c.query.addr = buf;
    c.query.len = 4096;
    tv_cmd_ok(h, &c);
    a = test_ptr(h, buf);
    g_assert_cmpuint(a->max_fast_reg_pages, ==, RNIC_MR_MAX_FAST_REG_PAGES);
    g_assert_cmpuint(a->max_mr_size, ==, RNIC_MR_MAX_SIZE);
    g_assert_cmpuint(a->max_uctx, ==, h->cfg.db_pages - 1);
    g_assert_true(a->caps & RNIC_CAP_NET_CTX);
    test_host_free(h);
}

/* Disabling the device destroys everything; enabling again starts empty. */
static void test_disable_clears(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;

    g_assert_cmpint(test_reg_write(h, RNIC_REG_DEV_CTRL, 0), ==, 0);
    h->aq = 0;
    tv_enable(h, 5);
    /* handles and VLAN 0 are free again */
    g_assert_cmpuint(tv_net_ctx(h, 0), ==, p->ctx);
    g_assert_cmpuint(tv_pd(h, p->ctx, 0), ==, p->pd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/objects/net-ctx", test_net_ctx);
    g_test_add_func("/rnic/objects/uctx", test_uctx);
    g_test_add_func("/rnic/objects/gids", test_gids);
    g_test_add_func("/rnic/objects/queues-and-refs", test_queues_and_refs);
    g_test_add_func("/rnic/objects/limits", test_limits);
    g_test_add_func("/rnic/objects/qpn-spaces", test_qpn_spaces);
    tv_test_add_pair("/rnic/objects/resize-cq", NULL, test_resize_cq);
    tv_test_add_pair("/rnic/objects/cq-overrun", NULL, test_cq_overrun);
    tv_test_add_pair("/rnic/objects/cqe-timestamp", NULL, test_cqe_timestamp);
    g_test_add_func("/rnic/objects/qp-stats", test_qp_stats);
    g_test_add_func("/rnic/objects/query-device", test_query_device_port);
    tv_test_add_pair("/rnic/objects/disable-clears", NULL, test_disable_clears);
    return g_test_run();
}
