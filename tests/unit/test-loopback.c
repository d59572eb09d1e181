/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: every opcode on loopback (two RC QPs of one device),
 * data verified byte for byte; multi-SGE, inline, multi-packet messages,
 * unsignaled WQEs, fences, solicited events, CQ/EQ notification.
 */
#include <string.h>
#include "rnic-test-verbs.h"

static void expect_cqe(TestHost *h, TvCq *cq, uint64_t wr_id, uint8_t opcode,
                       uint8_t status, uint32_t byte_len)
{
    struct rnic_cqe c = tv_expect_status(h, cq, wr_id, status);

    if (status == RNIC_WC_SUCCESS) {
        g_assert_cmphex(c.opcode, ==, opcode);
        g_assert_cmpuint(c.byte_len, ==, byte_len);
    }
}

/* SEND of 'len' bytes (one SGE each side), for several sizes and MTUs. */
static void do_send(uint8_t mtu, uint32_t len)
{
    TvPair *p;
    TestHost *h;
    struct rnic_sq_wqe w = tv_wqe(0x1111, RNIC_WR_SEND, 1);
    struct rnic_sge s, r;

    tv_path_mtu = mtu;
    p = tv_pair_new(NULL);
    h = p->d;
    s = tv_sge(p->bufa + 3, len, p->mra);
    r = tv_sge(p->bufb + 5000, len + 100, p->mrb);
    tv_fill(h, p->bufa, TV_BUF_SIZE, 3);
    tv_post_recv(h, p->b, 0x2222, &r, 1);
    tv_post_send(h, p->a, &w, &s, NULL);
    expect_cqe(h, p->cqb, 0x2222, RNIC_WC_RECV, RNIC_WC_SUCCESS, len);
    expect_cqe(h, p->cqa, 0x1111, RNIC_WC_SEND, RNIC_WC_SUCCESS, len);
    g_assert_cmpmem(test_ptr(h, p->bufa + 3), len,
                    test_ptr(h, p->bufb + 5000), len);
    /* nothing beyond the message was touched */
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, p->bufb + 5000 + len), ==, 0);
    tv_pair_free(p);
    tv_path_mtu = RNIC_MTU_1024;
}

static void test_send_sizes(void)
{
    static const uint32_t sizes[] = { 0, 1, 100, 256, 1023, 1024, 1025,
                                      4096, 65536, 300000 };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        do_send(RNIC_MTU_1024, sizes[i]);
        do_send(RNIC_MTU_256, sizes[i]);
        do_send(RNIC_MTU_4096, sizes[i]);
    }
}

static void test_send_imm_solicited(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe_flags(7, RNIC_WR_SEND_IMM, RNIC_WQE_SIGNALED |
                                        RNIC_WQE_SOLICITED, 1);
    struct rnic_sge s = tv_sge(p->bufa, 2000, p->mra);
    struct rnic_sge r = tv_sge(p->bufb, 4000, p->mrb);
    unsigned irq0 = h->irqs[1];
    struct rnic_eqe *eqe;
    struct rnic_cqe c;

    w.imm_or_inv = g_htonl(0xdeadbeef);
    tv_fill(h, p->bufa, 2000, 9);
    /* solicited-only arm: an unsolicited SEND does not notify ... */
    tv_cq_arm(h, p->cqb, RNIC_DB_ARM_SOLICITED);
    tv_post_recv(h, p->b, 1, &r, 1);
    tv_post_recv(h, p->b, 2, &r, 1);
    w.flags = RNIC_WQE_SIGNALED;
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpuint(h->irqs[1], ==, irq0);
    /* ... a solicited one does */
    w.flags = RNIC_WQE_SIGNALED | RNIC_WQE_SOLICITED;
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 1);
    eqe = test_ptr(h, p->eq_ring);
    g_assert_cmpuint(eqe[0].type, ==, RNIC_EQE_COMPLETION);
    g_assert_cmpuint(eqe[0].handle, ==, p->cqb->handle);
    g_assert_cmpuint(eqe[0].owner, ==, 1);

    c = tv_poll_one(h, p->cqb);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_false(c.flags & RNIC_CQE_SOLICITED);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(0xdeadbeef));
    c = tv_poll_one(h, p->cqb);
    g_assert_true(c.flags & RNIC_CQE_SOLICITED);
    g_assert_cmpuint(c.byte_len, ==, 2000);
    g_assert_cmpmem(test_ptr(h, p->bufa), 2000, test_ptr(h, p->bufb), 2000);
}

static void test_arm_next_and_eq(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra);
    unsigned irq0 = h->irqs[1];

    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    /* not armed: no event */
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpuint(h->irqs[1], ==, irq0);
    /* arming with an unconsumed CQE fires at once (no lost wake-up) */
    tv_cq_arm(h, p->cqa, RNIC_DB_ARM_NEXT);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 1);
    tv_poll_one(h, p->cqa);
    /*
     * the EQ is disarmed by its interrupt: a new CQ event writes an EQE
     * but raises nothing until the EQ doorbell re-arms it
     */
    tv_cq_arm(h, p->cqa, RNIC_DB_ARM_NEXT);
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 1);
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, RNIC_DB_EQ,
                                         rnic_db_value(p->eq, RNIC_DB_ARM_NEXT,
                                                       1)), ==, 0);
    test_host_run(h);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 2);
    /* consumed everything, armed: the next event interrupts */
    g_assert_cmpint(rnic_engine_doorbell(h->engine, 0, RNIC_DB_EQ,
                                         rnic_db_value(p->eq, RNIC_DB_ARM_NEXT,
                                                       2)), ==, 0);
    test_host_run(h);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 2);
    tv_poll_one(h, p->cqa);
    tv_cq_arm(h, p->cqa, RNIC_DB_ARM_NEXT);
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpuint(h->irqs[1], ==, irq0 + 3);
}

static void test_multi_sge(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 5);
    struct rnic_sge s[5], r[4];
    uint8_t expect[6000], *got;
    uint32_t off = 0, i;
    static const uint32_t slen[5] = { 1, 4095, 0, 1000, 904 };
    static const uint32_t rlen[4] = { 3000, 7, 0, 4000 };

    tv_fill(h, p->bufa, TV_BUF_SIZE, 77);
    for (i = 0; i < 5; i++) {
        s[i] = tv_sge(p->bufa + 10000 * i + 13, slen[i], p->mra);
        memcpy(expect + off, test_ptr(h, s[i].addr), slen[i]);
        off += slen[i];
    }
    for (i = 0; i < 4; i++) {
        r[i] = tv_sge(p->bufb + 20000 * i + 4090, rlen[i], p->mrb);
    }
    tv_post_recv(h, p->b, 9, r, 4);
    tv_post_send(h, p->a, &w, s, NULL);
    expect_cqe(h, p->cqb, 9, RNIC_WC_RECV, RNIC_WC_SUCCESS, off);
    expect_cqe(h, p->cqa, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS, off);
    off = 0;
    for (i = 0; i < 4 && off < 6000; i++) {
        uint32_t n = MIN(rlen[i], 6000 - off);

        got = test_ptr(h, r[i].addr);
        g_assert_cmpmem(got, n, expect + off, n);
        off += n;
    }
}

static void test_inline(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe_flags(1, RNIC_WR_SEND,
                                        RNIC_WQE_SIGNALED | RNIC_WQE_INLINE, 0);
    struct rnic_sge r = tv_sge(p->bufb, 4096, p->mrb);
    uint8_t data[200];
    uint32_t i;

    for (i = 0; i < sizeof(data); i++) {
        data[i] = i ^ 0x5a;
    }
    w.inline_len = sizeof(data);
    tv_post_recv(h, p->b, 2, &r, 1);
    tv_post_send(h, p->a, &w, NULL, data);
    expect_cqe(h, p->cqb, 2, RNIC_WC_RECV, RNIC_WC_SUCCESS, sizeof(data));
    expect_cqe(h, p->cqa, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS, sizeof(data));
    g_assert_cmpmem(test_ptr(h, p->bufb), sizeof(data), data, sizeof(data));

    /* inline RDMA WRITE */
    w = tv_wqe_flags(3, RNIC_WR_RDMA_WRITE,
                     RNIC_WQE_SIGNALED | RNIC_WQE_INLINE, 0);
    w.inline_len = 100;
    w.rdma.remote_addr = p->bufb + 7777;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, NULL, data + 50);
    expect_cqe(h, p->cqa, 3, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 100);
    g_assert_cmpmem(test_ptr(h, p->bufb + 7777), 100, data + 50, 100);
}

static void test_write(void)
{
    static const uint32_t sizes[] = { 0, 1, 1024, 1025, 70000, 1u << 20 };
    size_t i;

    /* every size with the host mapping guest memory, and bouncing */
    for (i = 0; i < 2 * G_N_ELEMENTS(sizes); i++) {
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        uint32_t len = sizes[i % G_N_ELEMENTS(sizes)];
        struct rnic_sq_wqe w = tv_wqe(i, RNIC_WR_RDMA_WRITE, 1);
        struct rnic_sge s = tv_sge(p->bufa, len, p->mra);

        h->map_disabled = i >= G_N_ELEMENTS(sizes);
        tv_fill(h, p->bufa, TV_BUF_SIZE, i);
        w.rdma.remote_addr = p->bufb + (len < TV_BUF_SIZE ? 17 : 0);
        w.rdma.rkey = p->mrb;
        tv_post_send(h, p->a, &w, &s, NULL);
        expect_cqe(h, p->cqa, i, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, len);
        g_assert_cmpmem(test_ptr(h, p->bufa), len,
                        test_ptr(h, w.rdma.remote_addr), len);
        g_assert_cmpuint(h->maps, ==, 0);
        /* a WRITE consumes no receive and completes nothing remotely */
        tv_expect_no_cqe(h, p->cqb);
        tv_pair_free(p);
    }
}

static void test_write_imm(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(5, RNIC_WR_RDMA_WRITE_IMM, 1);
    struct rnic_sge s = tv_sge(p->bufa, 5000, p->mra);
    struct rnic_cqe c;

    tv_fill(h, p->bufa, 5000, 1);
    w.imm_or_inv = g_htonl(0x12345678);
    w.rdma.remote_addr = p->bufb + 100;
    w.rdma.rkey = p->mrb;
    tv_post_recv(h, p->b, 77, NULL, 0);
    tv_post_send(h, p->a, &w, &s, NULL);
    c = tv_poll_one(h, p->cqb);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(c.wr_id, ==, 77);
    g_assert_cmpuint(c.byte_len, ==, 5000);
    g_assert_cmphex(c.imm_or_inv, ==, g_htonl(0x12345678));
    expect_cqe(h, p->cqa, 5, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 5000);
    g_assert_cmpmem(test_ptr(h, p->bufa), 5000, test_ptr(h, p->bufb + 100),
                    5000);
}

static void test_read(void)
{
    static const uint32_t sizes[] = { 0, 8, 1024, 3000, 65536, 1u << 20 };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(sizes); i++) {
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        uint32_t len = sizes[i];
        struct rnic_sq_wqe w = tv_wqe(i, RNIC_WR_RDMA_READ, 2);
        struct rnic_sge s[2] = {
            tv_sge(p->bufa, len / 3, p->mra),
            tv_sge(p->bufa + 300000 - (len > 300000 ? 300000 : 0),
                   len - len / 3, p->mra),
        };

        if (len == TV_BUF_SIZE) {
            w.num_sge = 1;
            s[0] = tv_sge(p->bufa, len, p->mra);
        }
        tv_fill(h, p->bufb, TV_BUF_SIZE, 100 + i);
        w.rdma.remote_addr = p->bufb;
        w.rdma.rkey = p->mrb;
        tv_post_send(h, p->a, &w, s, NULL);
        expect_cqe(h, p->cqa, i, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS, len);
        g_assert_cmpmem(test_ptr(h, s[0].addr), s[0].length,
                        test_ptr(h, p->bufb), s[0].length);
        if (w.num_sge == 2) {
            g_assert_cmpmem(test_ptr(h, s[1].addr), s[1].length,
                            test_ptr(h, p->bufb + s[0].length), s[1].length);
        }
        tv_expect_no_cqe(h, p->cqb);
        tv_pair_free(p);
    }
}

static void test_atomics(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    struct rnic_sge s = tv_sge(p->bufa + 64, 8, p->mra);
    uint64_t *target = test_ptr(h, p->bufb + 4088);
    uint64_t *result = test_ptr(h, p->bufa + 64);

    *target = GUINT64_TO_LE(1000);
    w.atomic.remote_addr = p->bufb + 4088;
    w.atomic.rkey = p->mrb;
    w.atomic.compare_add = 234;
    tv_post_send(h, p->a, &w, &s, NULL);
    expect_cqe(h, p->cqa, 1, RNIC_WC_FETCH_ADD, RNIC_WC_SUCCESS, 8);
    g_assert_cmpuint(GUINT64_FROM_LE(*result), ==, 1000);
    g_assert_cmpuint(GUINT64_FROM_LE(*target), ==, 1234);

    /* compare-and-swap: no match leaves the target alone */
    w = tv_wqe(2, RNIC_WR_ATOMIC_CMP_SWP, 1);
    w.atomic.remote_addr = p->bufb + 4088;
    w.atomic.rkey = p->mrb;
    w.atomic.compare_add = 1;
    w.atomic.swap = 0xabcdef;
    tv_post_send(h, p->a, &w, &s, NULL);
    expect_cqe(h, p->cqa, 2, RNIC_WC_COMP_SWAP, RNIC_WC_SUCCESS, 8);
    g_assert_cmpuint(GUINT64_FROM_LE(*result), ==, 1234);
    g_assert_cmpuint(GUINT64_FROM_LE(*target), ==, 1234);
    /* match: swapped */
    w.wr_id = 3;
    w.atomic.compare_add = 1234;
    tv_post_send(h, p->a, &w, &s, NULL);
    expect_cqe(h, p->cqa, 3, RNIC_WC_COMP_SWAP, RNIC_WC_SUCCESS, 8);
    g_assert_cmpuint(GUINT64_FROM_LE(*result), ==, 1234);
    g_assert_cmpuint(GUINT64_FROM_LE(*target), ==, 0xabcdef);
}

static void test_unsignaled(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe_flags(0, RNIC_WR_RDMA_WRITE, 0, 1);
    struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);
    struct rnic_cqe c[8];
    int i;

    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    for (i = 0; i < 10; i++) {
        w.wr_id = i;
        w.flags = (i == 4 || i == 9) ? RNIC_WQE_SIGNALED : 0;
        tv_write_send(h, p->a, &w, &s, NULL);
    }
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    g_assert_cmpint(tv_poll(h, p->cqa, c, 8), ==, 2);
    g_assert_cmpuint(c[0].wr_id, ==, 4);
    g_assert_cmpuint(c[1].wr_id, ==, 9);
}

static void test_sig_all(void)
{
    TestHost *h = test_host_new(NULL);
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_CREATE_QP };
    uint8_t gid[16];
    uint32_t ctx, pd;
    TvCq *cq;
    TvQp qp;
    uint64_t buf;
    uint32_t mr;
    struct rnic_sq_wqe w = tv_wqe_flags(42, RNIC_WR_RDMA_WRITE, 0, 1);
    struct rnic_sge s;
    struct rnic_admin_cqe r;

    tv_enable(h, 5);
    ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, ctx, 1);
    tv_gid_bytes(gid, ctx, 1);
    pd = tv_pd(h, ctx, 0);
    cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    memset(&qp, 0, sizeof(qp));
    qp.sq_log = qp.rq_log = 4;
    qp.sq_shift = 7;
    qp.rq_shift = 5;
    qp.sq = test_alloc(h, 16 << 7, 4096);
    qp.rq = test_alloc(h, 16 << 5, 4096);
    qp.scq = qp.rcq = cq;
    qp.srq = RNIC_HANDLE_NONE;
    cmd.qp.sq_addr = qp.sq;
    cmd.qp.rq_addr = qp.rq;
    cmd.qp.pd = pd;
    cmd.qp.send_cq = cmd.qp.recv_cq = cq->handle;
    cmd.qp.srq = RNIC_HANDLE_NONE;
    cmd.qp.sq_log_size = cmd.qp.rq_log_size = 4;
    cmd.qp.sq_wqe_shift = 7;
    cmd.qp.rq_wqe_shift = 5;
    cmd.qp.sq_sig_all = 1;
    r = tv_cmd(h, &cmd);
    g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    qp.handle = r.result0;
    qp.qpn = r.result1;
    /* a QP connected to itself */
    tv_rc_connect(h, &qp, 0, gid, qp.qpn);
    buf = test_alloc(h, 8192, 4096);
    mr = tv_reg_mr(h, pd, buf, 8192, TV_ACCESS_ALL, 0, NULL);
    tv_fill(h, buf, 100, 1);
    s = tv_sge(buf, 100, mr);
    w.rdma.remote_addr = buf + 4096;
    w.rdma.rkey = mr;
    tv_post_send(h, &qp, &w, &s, NULL);
    expect_cqe(h, cq, 42, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, 100);
    g_assert_cmpmem(test_ptr(h, buf), 100, test_ptr(h, buf + 4096), 100);
    g_free(cq);
    test_host_free(h);
}

/*
 * READ b[0..64K) into a, then WRITE the last 4 KiB of a to b[128K..). With
 * a 256-byte MTU the READ's responses take several engine runs, so an
 * unfenced WRITE goes out before that data has arrived; a fenced one waits.
 */
static void do_fence(bool fence)
{
    TvPair *p;
    TestHost *h;
    uint32_t len = 65536, tail = 4096;
    struct rnic_sq_wqe rd = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    struct rnic_sq_wqe wr = tv_wqe_flags(2, RNIC_WR_RDMA_WRITE,
                                         RNIC_WQE_SIGNALED |
                                         (fence ? RNIC_WQE_FENCE : 0), 1);
    struct rnic_sge s, t;

    tv_path_mtu = RNIC_MTU_256;
    p = tv_pair_new(NULL);
    h = p->d;
    s = tv_sge(p->bufa, len, p->mra);
    t = tv_sge(p->bufa + len - tail, tail, p->mra);
    tv_fill(h, p->bufb, len, 99);
    rd.rdma.remote_addr = p->bufb;
    rd.rdma.rkey = p->mrb;
    wr.rdma.remote_addr = p->bufb + 131072;
    wr.rdma.rkey = p->mrb;
    tv_write_send(h, p->a, &rd, &s, NULL);
    tv_write_send(h, p->a, &wr, &t, NULL);
    g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
    expect_cqe(h, p->cqa, 1, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS, len);
    expect_cqe(h, p->cqa, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS, tail);
    g_assert_cmpmem(test_ptr(h, p->bufb), len, test_ptr(h, p->bufa), len);
    if (fence) {
        g_assert_cmpmem(test_ptr(h, p->bufb + len - tail), tail,
                        test_ptr(h, p->bufb + 131072), tail);
    } else {
        /* shows that the fenced case above tests something */
        g_assert_true(memcmp(test_ptr(h, p->bufb + len - tail),
                             test_ptr(h, p->bufb + 131072), tail) != 0);
    }
    tv_pair_free(p);
    tv_path_mtu = RNIC_MTU_1024;
}

static void test_fence(void)
{
    do_fence(true);
    do_fence(false);
}

/* Many WQEs in flight, mixed, more than the ring's worth over time. */
static void test_mixed_stream(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_cqe c[64];
    int round, i, got;

    tv_fill(h, p->bufa, TV_BUF_SIZE, 5);
    tv_fill(h, p->bufb, TV_BUF_SIZE, 6);
    for (round = 0; round < 20; round++) {
        for (i = 0; i < 32; i++) {
            uint32_t len = 1 + (round * 977 + i * 131) % 9000;
            uint32_t off = ((round * 32 + i) * 9100) % (TV_BUF_SIZE - 10000);
            struct rnic_sge s = tv_sge(p->bufa + off, len, p->mra);
            struct rnic_sge r = tv_sge(p->bufb + off, len, p->mrb);
            struct rnic_sq_wqe w;

            switch (i % 3) {
            case 0:
                w = tv_wqe(i, RNIC_WR_SEND, 1);
                tv_post_recv(h, p->b, i, &r, 1);
                break;
            case 1:
                w = tv_wqe(i, RNIC_WR_RDMA_WRITE, 1);
                w.rdma.remote_addr = p->bufb + off;
                w.rdma.rkey = p->mrb;
                break;
            default:
                w = tv_wqe(i, RNIC_WR_RDMA_READ, 1);
                w.rdma.remote_addr = p->bufb + off;
                w.rdma.rkey = p->mrb;
                break;
            }
            tv_write_send(h, p->a, &w, &s, NULL);
        }
        g_assert_cmpint(tv_ring_sq(h, p->a), ==, 0);
        got = tv_poll(h, p->cqa, c, 64);
        g_assert_cmpint(got, ==, 32);
        for (i = 0; i < 32; i++) {
            g_assert_cmpuint(c[i].status, ==, RNIC_WC_SUCCESS);
            g_assert_cmpuint(c[i].wr_id, ==, i);
        }
        got = tv_poll(h, p->cqb, c, 64);
        g_assert_cmpint(got, ==, 11);
        /* after a round both buffers agree wherever we touched them */
        for (i = 0; i < 32; i++) {
            uint32_t len = 1 + (round * 977 + i * 131) % 9000;
            uint32_t off = ((round * 32 + i) * 9100) % (TV_BUF_SIZE - 10000);

            g_assert_cmpmem(test_ptr(h, p->bufa + off), len,
                            test_ptr(h, p->bufb + off), len);
        }
    }
}

/*
 * A WRITE whose destination overlaps its source in the same region (the
 * guest may name any two ranges it registered): a copy that moves the
 * bytes as memmove would, never memcpy on overlapping ranges (fuzz-device
 * found the mapped copy doing that; ASan's memcpy-param-overlap here).
 */
static void test_write_overlap(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 1024, p->mra);
    uint8_t want[1024];

    tv_fill(h, p->bufa, 2048, 3);
    memcpy(want, test_ptr(h, p->bufa), sizeof(want));
    w.rdma.remote_addr = p->bufa + 64;
    w.rdma.rkey = p->mra;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(h, p->bufa + 64), sizeof(want), want,
                    sizeof(want));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/loopback/send-sizes", test_send_sizes);
    tv_test_add_pair("/rnic/loopback/send-imm-solicited", NULL,
                     test_send_imm_solicited);
    tv_test_add_pair("/rnic/loopback/arm-next-eq", NULL, test_arm_next_and_eq);
    tv_test_add_pair("/rnic/loopback/multi-sge", NULL, test_multi_sge);
    tv_test_add_pair("/rnic/loopback/inline", NULL, test_inline);
    g_test_add_func("/rnic/loopback/write", test_write);
    tv_test_add_pair("/rnic/loopback/write-imm", NULL, test_write_imm);
    g_test_add_func("/rnic/loopback/read", test_read);
    tv_test_add_pair("/rnic/loopback/atomics", NULL, test_atomics);
    tv_test_add_pair("/rnic/loopback/unsignaled", NULL, test_unsignaled);
    g_test_add_func("/rnic/loopback/sq-sig-all-self", test_sig_all);
    g_test_add_func("/rnic/loopback/fence", test_fence);
    tv_test_add_pair("/rnic/loopback/mixed-stream", NULL, test_mixed_stream);
    tv_test_add_pair("/rnic/loopback/write-overlap", NULL, test_write_overlap);
    return g_test_run();
}
