/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: every class of error completion, flush on error, RNR
 * retry, retry exhaustion, and bad WQEs / bad rings / bad indexes from the
 * guest (error status or completion + guest error, never a crash).
 */
#include <string.h>
#include "rnic-test-verbs.h"

static uint8_t qp_state(TestHost *h, TvQp *qp)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_QUERY_QP, .uctx = qp->uctx };
    uint64_t buf = test_alloc(h, sizeof(struct rnic_qp_attr), 64);

    c.query.addr = buf;
    c.query.len = sizeof(struct rnic_qp_attr);
    c.query.handle = qp->handle;
    tv_cmd_ok(h, &c);
    return ((struct rnic_qp_attr *)test_ptr(h, buf))->qp_state;
}

/* The async EQ holds an event of 'type' for 'handle'. */
static bool has_event(TvPair *p, uint8_t type, uint32_t handle)
{
    struct rnic_eqe *eqe = test_ptr(p->d, p->eq_ring);
    int i;

    for (i = 0; i < 64 && eqe[i].owner; i++) {
        if (eqe[i].type == type && eqe[i].handle == handle) {
            return true;
        }
    }
    return false;
}

/* A WRITE with 'rkey' to 'va' of 'len' bytes from a: REM_ACCESS_ERR. */
static void expect_remote_access_error(TvPair *p, uint32_t rkey, uint64_t va,
                                       uint32_t len)
{
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, len, p->mra);
    unsigned errors = h->guest_errors;

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(qp_state(h, p->a), ==, RNIC_QPS_ERR);
    g_assert_cmpuint(qp_state(h, p->b), ==, RNIC_QPS_ERR);
    g_assert_true(has_event(p, RNIC_EQE_QP_ACCESS_ERR, p->b->handle));
    g_assert_cmpuint(h->guest_errors, >, errors);
}

static void test_remote_access(void)
{
    TvPair *p;
    uint8_t st;
    uint32_t ro;

    /* one byte past the end of the region */
    p = tv_pair_new(NULL);
    expect_remote_access_error(p, p->mrb, p->bufb + TV_BUF_SIZE - 99, 100);
    tv_pair_free(p);
    /* one byte before it */
    p = tv_pair_new(NULL);
    expect_remote_access_error(p, p->mrb, p->bufb - 1, 100);
    tv_pair_free(p);
    /* right index, wrong key */
    p = tv_pair_new(NULL);
    expect_remote_access_error(p, p->mrb ^ 0x01, p->bufb, 100);
    tv_pair_free(p);
    /* no such index */
    p = tv_pair_new(NULL);
    expect_remote_access_error(p, p->mrb ^ 0x100, p->bufb, 100);
    tv_pair_free(p);
    /* a region without remote write rights */
    p = tv_pair_new(NULL);
    ro = tv_reg_mr(p->d, p->pd, p->bufb, 4096, RNIC_ACCESS_LOCAL_WRITE |
                   RNIC_ACCESS_REMOTE_READ, 0, &st);
    g_assert_cmpuint(st, ==, RNIC_ST_OK);
    expect_remote_access_error(p, ro, p->bufb, 100);
    tv_pair_free(p);
    /* the exact region works (control) */
    p = tv_pair_new(NULL);
    {
        struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
        struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);

        w.rdma.remote_addr = p->bufb + TV_BUF_SIZE - 100;
        w.rdma.rkey = p->mrb;
        tv_post_send(p->d, p->a, &w, &s, NULL);
        tv_expect_status(p->d, p->cqa, 1, RNIC_WC_SUCCESS);
    }
    tv_pair_free(p);
}

static void test_remote_read_access(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);
    uint32_t wo;

    /* region without remote read */
    wo = tv_reg_mr(h, p->pd, p->bufb, 4096, RNIC_ACCESS_LOCAL_WRITE |
                   RNIC_ACCESS_REMOTE_WRITE, 0, NULL);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = wo;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_ACCESS_ERR);
    g_assert_true(has_event(p, RNIC_EQE_QP_ACCESS_ERR, p->b->handle));
}

static void test_local_protection(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa + TV_BUF_SIZE - 10, 11, p->mra);

    /* local SGE one byte beyond its region */
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_PROT_ERR);
    g_assert_cmpuint(qp_state(h, p->a), ==, RNIC_QPS_ERR);
    tv_pair_free(p);

    /* READ into a region without local write */
    p = tv_pair_new(NULL);
    h = p->d;
    {
        uint32_t ro = tv_reg_mr(h, p->pd, p->bufa, 4096, 0, 0, NULL);

        w = tv_wqe(2, RNIC_WR_RDMA_READ, 1);
        s = tv_sge(p->bufa, 100, ro);
        w.rdma.remote_addr = p->bufb;
        w.rdma.rkey = p->mrb;
        tv_post_send(h, p->a, &w, &s, NULL);
        tv_expect_status(h, p->cqa, 2, RNIC_WC_LOC_PROT_ERR);
    }
    tv_pair_free(p);

    /* an lkey from another PD */
    p = tv_pair_new(NULL);
    h = p->d;
    {
        uint32_t pd2 = tv_pd(h, p->ctx, 0);
        uint32_t other = tv_reg_mr(h, pd2, p->bufa, 4096, TV_ACCESS_ALL, 0,
                                   NULL);

        w = tv_wqe(3, RNIC_WR_SEND, 1);
        s = tv_sge(p->bufa, 100, other);
        tv_post_send(h, p->a, &w, &s, NULL);
        tv_expect_status(h, p->cqa, 3, RNIC_WC_LOC_PROT_ERR);
    }
    tv_pair_free(p);
}

static void test_bad_wqes(void)
{
    static const struct {
        uint8_t opcode, flags, num_sge;
        uint32_t inline_len;
        uint8_t status;
    } bad[] = {
        { 0x77, RNIC_WQE_SIGNALED, 1, 0, RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_OPCODE_COUNT, RNIC_WQE_SIGNALED, 1, 0, RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_SEND, RNIC_WQE_SIGNALED, 29, 0, RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_SEND, RNIC_WQE_SIGNALED | 0x80, 1, 0, RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_SEND, RNIC_WQE_SIGNALED | RNIC_WQE_INLINE, 0, 449,
          RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_SEND, RNIC_WQE_SIGNALED | RNIC_WQE_INLINE, 0, 0xffffffff,
          RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_RDMA_READ, RNIC_WQE_SIGNALED | RNIC_WQE_INLINE, 0, 8,
          RNIC_WC_LOC_QP_OP_ERR },
        { RNIC_WR_ATOMIC_FETCH_ADD, RNIC_WQE_SIGNALED, 1, 0,
          RNIC_WC_LOC_LEN_ERR },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        struct rnic_sq_wqe w = tv_wqe_flags(100 + i, bad[i].opcode,
                                            bad[i].flags, bad[i].num_sge);
        struct rnic_sq_wqe ok = tv_wqe(200, RNIC_WR_RDMA_WRITE, 1);
        struct rnic_sge s[29];
        unsigned errors = h->guest_errors;
        uint8_t data[8] = { 0 };
        int j;

        for (j = 0; j < 29; j++) {
            s[j] = tv_sge(p->bufa, 16, p->mra);
        }
        w.inline_len = bad[i].inline_len;
        w.rdma.remote_addr = p->bufb;
        w.rdma.rkey = p->mrb;
        ok.rdma.remote_addr = p->bufb;
        ok.rdma.rkey = p->mrb;
        if (bad[i].num_sge > 28) {
            /*
             * more SGEs than the 512-byte stride holds: write the header
             * by hand, the device must not read past its stride
             */
            w.num_sge = bad[i].num_sge;
            tv_write_send(h, p->a, &w, NULL, NULL);
        } else {
            tv_write_send(h, p->a, &w, s, (w.flags & RNIC_WQE_INLINE) &&
                          bad[i].inline_len <= 448 ? data : NULL);
        }
        tv_write_send(h, p->a, &ok, s, NULL);
        g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
        /* the bad one completes in error, the next one is flushed */
        tv_expect_status(h, p->cqa, 100 + i, bad[i].status);
        tv_expect_status(h, p->cqa, 200, RNIC_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(qp_state(h, p->a), ==, RNIC_QPS_ERR);
        g_assert_cmpuint(h->guest_errors, >, errors);
        tv_pair_free(p);
    }
}

static void test_huge_length(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 3);
    struct rnic_sge s[3] = {
        tv_sge(p->bufa, 0x80000000u, p->mra),
        tv_sge(p->bufa, 0x80000000u, p->mra),
        tv_sge(p->bufa, 0xffffffffu, p->mra),
    };

    tv_post_send(h, p->a, &w, s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_LOC_LEN_ERR);
}

static void test_recv_too_small(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 3000, p->mra);
    struct rnic_sge r = tv_sge(p->bufb, 2999, p->mrb);

    tv_post_recv(h, p->b, 55, &r, 1);
    tv_post_recv(h, p->b, 56, &r, 1);
    tv_post_send(h, p->a, &w, &s, NULL);
    /*
     * the responder's receive fails with a local length error, the
     * requester sees an invalid request; both QPs in error, the second
     * receive flushed
     */
    tv_expect_status(h, p->cqb, 55, RNIC_WC_LOC_LEN_ERR);
    tv_expect_status(h, p->cqb, 56, RNIC_WC_WR_FLUSH_ERR);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_INV_REQ_ERR);
    g_assert_cmpuint(qp_state(h, p->b), ==, RNIC_QPS_ERR);
}

static void test_misaligned_atomic(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_ATOMIC_CMP_SWP, 1);
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);

    w.atomic.remote_addr = p->bufb + 4;
    w.atomic.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_INV_REQ_ERR);
    g_assert_true(has_event(p, RNIC_EQE_QP_REQ_ERR, p->b->handle));
}

static void test_remote_op_error(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);
    /*
     * a receive buffer with a bad lkey: the responder's local protection
     * error is the requester's remote operational error
     */
    struct rnic_sge r = tv_sge(p->bufb, 100, p->mrb ^ 0x10);

    tv_post_recv(h, p->b, 9, &r, 1);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqb, 9, RNIC_WC_LOC_PROT_ERR);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_OP_ERR);
}

static void test_flush(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe_flags(0, RNIC_WR_SEND, 0, 1);
    struct rnic_sge s = tv_sge(p->bufa, 10, p->mra);
    struct rnic_sge r = tv_sge(p->bufb, 10, p->mrb);
    struct rnic_qp_attr a;
    struct rnic_cqe c[16];
    int i, n;

    /* receives outstanding on b, sends waiting on a (b has none left) */
    for (i = 0; i < 3; i++) {
        tv_post_recv(h, p->a, 10 + i, &r, 1);
    }
    /* a's SQ: WQEs posted while nothing runs (a is in SQD) */
    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_SQD;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    for (i = 0; i < 4; i++) {
        w.wr_id = 20 + i;       /* unsignaled: flushed ones still complete */
        tv_write_send(h, p->a, &w, &s, NULL);
    }
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    test_host_run(h);
    g_assert_cmpint(tv_poll(h, p->cqa, c, 16), ==, 0);
    a.qp_state = RNIC_QPS_ERR;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    n = tv_poll(h, p->cqa, c, 16);
    g_assert_cmpint(n, ==, 7);
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(c[i].status, ==, RNIC_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(c[i].wr_id, ==, 20 + i);
    }
    for (i = 0; i < 3; i++) {
        g_assert_cmpuint(c[4 + i].status, ==, RNIC_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(c[4 + i].wr_id, ==, 10 + i);
        g_assert_cmpuint(c[4 + i].opcode, ==, RNIC_WC_RECV);
    }
    /* posting in ERR: flushed at once */
    w.wr_id = 99;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 99, RNIC_WC_WR_FLUSH_ERR);
    tv_post_recv(h, p->a, 98, &r, 1);
    tv_expect_status(h, p->cqa, 98, RNIC_WC_WR_FLUSH_ERR);
    /* back to RESET and up again: works */
    a.qp_state = RNIC_QPS_RESET;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    tv_expect_no_cqe(h, p->cqa);
}

static void test_rnr_retry(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 500, p->mra);
    struct rnic_sge r = tv_sge(p->bufb, 500, p->mrb);

    memset(test_ptr(h, p->bufa), 0x42, 500);
    tv_post_send(h, p->a, &w, &s, NULL);
    /* no receive: RNR NAK, the requester waits (rnr_retry 7 = forever) */
    tv_expect_no_cqe(h, p->cqa);
    g_assert_cmpuint(h->timer_deadline, !=, UINT64_MAX);
    test_host_advance(h, 1000000);
    test_host_advance(h, 1000000);
    tv_expect_no_cqe(h, p->cqa);
    tv_post_recv(h, p->b, 2, &r, 1);
    /* the next retry, at the RNR timer (min_rnr_timer 1: 10 us), lands */
    test_host_advance(h, 20000);
    tv_expect_status(h, p->cqb, 2, RNIC_WC_SUCCESS);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(h, p->bufa), 500, test_ptr(h, p->bufb), 500);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_RETRANSMITS), >, 0);
}

static void test_rnr_exceeded(void)
{
    TvPair *p;
    TestHost *h;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s;
    int i;

    tv_rnr_retry = 2;
    p = tv_pair_new(NULL);
    tv_rnr_retry = 7;
    h = p->d;
    s = tv_sge(p->bufa, 10, p->mra);
    tv_post_send(h, p->a, &w, &s, NULL);
    for (i = 0; i < 5; i++) {
        test_host_advance(h, 20000);
    }
    tv_expect_status(h, p->cqa, 1, RNIC_WC_RNR_RETRY_EXC_ERR);
    g_assert_cmpuint(qp_state(h, p->a), ==, RNIC_QPS_ERR);
    tv_pair_free(p);
}

static void test_retry_exceeded(void)
{
    TestHost *h = test_host_new(NULL);
    uint8_t far[16];
    uint32_t ctx, pd, mr;
    uint64_t buf;
    TvCq *cq;
    TvQp *qp;
    struct rnic_sq_wqe w = tv_wqe(5, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s;
    int i;

    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, ctx, 1);
    tv_gid_bytes(far, ctx, 200);        /* not ours: goes to the wire */
    pd = tv_pd(h, ctx, 0);
    cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    qp = tv_qp(h, RNIC_QPT_RC, pd, cq, cq, NULL, 4, 0);
    tv_timeout = 1;                     /* 8.192 us */
    tv_retry_cnt = 3;
    tv_rc_connect(h, qp, 0, far, 77);
    tv_timeout = 14;
    tv_retry_cnt = 7;
    buf = test_alloc(h, 4096, 4096);
    mr = tv_reg_mr(h, pd, buf, 4096, TV_ACCESS_ALL, 0, NULL);
    s = tv_sge(buf, 100, mr);
    w.rdma.remote_addr = 0x1000;
    w.rdma.rkey = 0x1234;
    tv_post_send(h, qp, &w, &s, NULL);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_TX_FRAMES), ==, 1);
    for (i = 0; i < 3; i++) {
        test_host_advance(h, 10000);
        tv_expect_no_cqe(h, cq);
    }
    /* 1 + retry_cnt transmissions, then the error */
    test_host_advance(h, 10000);
    tv_expect_status(h, cq, 5, RNIC_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_TX_FRAMES), ==, 4);
    g_free(cq);
    g_free(qp);
    test_host_free(h);
}

static void test_bad_doorbells(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    RnicEngine *e = h->engine;
    uint64_t errs = rnic_engine_stat(e, RNIC_STAT_DOORBELL_ERRORS);
    uint32_t u;

    /* producer more than the ring ahead of the consumer (64 entries) */
    g_assert_cmpint(rnic_engine_doorbell(e, 0, RNIC_DB_SQ,
                                         rnic_db_value(p->a->handle, 0, 65)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    g_assert_cmpint(rnic_engine_doorbell(e, 0, RNIC_DB_RQ,
                                         rnic_db_value(p->a->handle, 0,
                                                       0xffffffff)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    /* unknown handle */
    g_assert_cmpint(rnic_engine_doorbell(e, 0, RNIC_DB_SQ,
                                         rnic_db_value(0xabcd, 0, 1)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    /* CQ consumer beyond the producer */
    g_assert_cmpint(rnic_engine_doorbell(e, 0, RNIC_DB_CQ,
                                         rnic_db_value(p->cqa->handle, 0, 1)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    /* the kernel's QP rung from a user page */
    u = tv_uctx(h);
    g_assert_cmpint(rnic_engine_doorbell(e, u, RNIC_DB_SQ,
                                         rnic_db_value(p->a->handle, 0, 1)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    /* a page of no user context */
    g_assert_cmpint(rnic_engine_doorbell(e, u + 1, RNIC_DB_SQ,
                                         rnic_db_value(p->a->handle, 0, 1)),
                    ==, RNIC_ACCESS_BAD_DOORBELL);
    g_assert_cmpuint(rnic_engine_stat(e, RNIC_STAT_DOORBELL_ERRORS), ==,
                     errs + 6);
    /* nothing was posted: a valid post still works */
    {
        struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
        struct rnic_sge s = tv_sge(p->bufa, 10, p->mra);

        w.rdma.remote_addr = p->bufb;
        w.rdma.rkey = p->mrb;
        tv_post_send(h, p->a, &w, &s, NULL);
        tv_expect_status(h, p->cqa, 1, RNIC_WC_SUCCESS);
    }
    /* a storm of doorbells costs no memory: each names one queue state */
    {
        int i;

        for (i = 0; i < 100000; i++) {
            rnic_engine_doorbell(e, 0, RNIC_DB_CQ,
                                 rnic_db_value(p->cqa->handle,
                                               RNIC_DB_ARM_NEXT, p->cqa->cons));
        }
        test_host_run(h);
    }
}

static void test_rings_outside_ram(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd c;
    uint32_t ctx, pd;
    TvCq *cq;
    uint64_t ring;

    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    pd = tv_pd(h, ctx, 0);
    cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    /* CQ ring past the end of RAM */
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_CREATE_CQ;
    c.cq.ring_addr = h->ram_size - 4096;
    c.cq.log_size = 8;          /* 16 KiB */
    c.cq.eq = RNIC_HANDLE_NONE;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_DMA_ERROR);
    c.cq.ring_addr = 0xfffffffffffff000ull;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.cq.ring_addr = 0x1234;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.cq.ring_addr = 0x10000;
    c.cq.log_size = 30;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    /* QP with its SQ beyond RAM */
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_CREATE_QP;
    ring = test_alloc(h, 4096, 4096);
    c.qp.sq_addr = 1ull << 40;
    c.qp.rq_addr = ring;
    c.qp.pd = pd;
    c.qp.send_cq = c.qp.recv_cq = cq->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    c.qp.sq_log_size = c.qp.rq_log_size = 2;
    c.qp.sq_wqe_shift = 6;
    c.qp.rq_wqe_shift = 4;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_DMA_ERROR);
    /* strides out of range */
    c.qp.sq_addr = ring;
    c.qp.sq_wqe_shift = 5;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.qp.sq_wqe_shift = 12;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(h->guest_errors, >=, 6);
    g_free(cq);
    test_host_free(h);
}

/*
 * The guest moves its ring away (or it was never RAM): the QP fails, the
 * engine does not.
 */
static void test_ring_unreadable_at_runtime(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);
    struct rnic_sge s = tv_sge(p->bufa, 10, p->mra);
    uint64_t saved = h->ram_size;

    tv_write_send(h, p->a, &w, &s, NULL);
    /* shrink "RAM" below the SQ ring */
    h->ram_size = p->a->sq;
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    test_host_run(h);
    h->ram_size = saved;
    tv_expect_status(h, p->cqa, 0, RNIC_WC_FATAL_ERR);
    g_assert_true(has_event(p, RNIC_EQE_QP_FATAL, p->a->handle));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/errors/remote-access", test_remote_access);
    tv_test_add_pair("/rnic/errors/remote-read-access", NULL,
                     test_remote_read_access);
    g_test_add_func("/rnic/errors/local-protection", test_local_protection);
    g_test_add_func("/rnic/errors/bad-wqes", test_bad_wqes);
    tv_test_add_pair("/rnic/errors/huge-length", NULL, test_huge_length);
    tv_test_add_pair("/rnic/errors/recv-too-small", NULL, test_recv_too_small);
    tv_test_add_pair("/rnic/errors/misaligned-atomic", NULL,
                     test_misaligned_atomic);
    tv_test_add_pair("/rnic/errors/remote-op", NULL, test_remote_op_error);
    tv_test_add_pair("/rnic/errors/flush", NULL, test_flush);
    tv_test_add_pair("/rnic/errors/rnr-retry", NULL, test_rnr_retry);
    g_test_add_func("/rnic/errors/rnr-exceeded", test_rnr_exceeded);
    g_test_add_func("/rnic/errors/retry-exceeded", test_retry_exceeded);
    tv_test_add_pair("/rnic/errors/bad-doorbells", NULL, test_bad_doorbells);
    g_test_add_func("/rnic/errors/rings-outside-ram", test_rings_outside_ram);
    tv_test_add_pair("/rnic/errors/ring-unreadable", NULL,
                     test_ring_unreadable_at_runtime);
    return g_test_run();
}
