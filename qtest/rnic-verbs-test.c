/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of the verbs engine through the real device: every admin command,
 * every opcode on loopback with the data checked byte for byte, CQ/EQ
 * interrupts, SRQ, fast registration, isolation between network contexts,
 * UD and UC, memory windows, mapped STags, error flush and bad guest input.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "hw/pci/pci_regs.h"
#include "rnic-verbs.h"

#define BUF_SIZE (64 * 1024)
#define ALL_RIGHTS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | \
                    RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC)

/* A loopback pair (TvPair) on a reset device, MSI-X vectors 0-2 routed. */
static void loop_init(TvPair *l, QRnic *d)
{
    qv_loop_init(l, d, BUF_SIZE);
}

/* ---------------------------------------------------------------- */

static void test_admin_objects(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    struct rnic_admin_cmd c;
    struct rnic_qp_attr attr;
    uint32_t ctx, ctx5, uctx, pd, eq, mr, fr;
    uint64_t buf, qbuf;
    TvCq *cq;
    TvSrq *srq;
    TvQp *qp;

    ctx = tv_net_ctx(d, 0);
    ctx5 = tv_net_ctx(d, 5);
    g_assert_cmpuint(ctx, !=, ctx5);
    /* the same network identifier twice */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_CREATE_NET_CTX };
    c.net_ctx.net_id = cpu_to_le32(5);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_EXISTS);
    c.net_ctx.net_id = cpu_to_le32(4096);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);

    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_ALLOC_UCTX };
    uctx = tv_cmd_ok(d, &c);
    g_assert_cmpuint(uctx, >=, 1);
    qv_gid(d, 3, ctx, 0, 9);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_ADD_GID };
    qv_gid_bytes(c.gid.gid, 0, 10);
    c.gid.index = cpu_to_le32(3);
    c.gid.net_ctx = cpu_to_le32(ctx);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_EXISTS);

    pd = tv_pd(d, ctx, 0);
    eq = tv_eq(d, 4, 1, 0, NULL);
    cq = tv_cq(d, 4, eq, 0);
    srq = tv_srq(d, pd, 4, 0, 0);
    qp = tv_qp(d, RNIC_QPT_RC, pd, cq, cq, NULL, 3, 0);
    g_assert_cmpuint(qp->qpn, >=, 2);
    buf = qv_alloc(d, 3 * 4096, 4096);
    mr = tv_reg_mr(d, pd, buf + 100, 2 * 4096, ALL_RIGHTS, 0, NULL);
    g_assert_cmpuint(RNIC_STAG_KEY(mr), ==, TV_MR_KEY);

    /* fast-register MR */
    fr = tv_alloc_mr(d, pd, 16, 0x11);

    /* QUERY_QP reports the state and the QPN */
    qbuf = qv_alloc(d, sizeof(attr), 64);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_QUERY_QP };
    c.query.addr = cpu_to_le64(qbuf);
    c.query.len = cpu_to_le32(sizeof(attr));
    c.query.handle = cpu_to_le32(qp->handle);
    tv_cmd_ok(d, &c);
    qtest_memread(rnic_qts(d), qbuf, &attr, sizeof(attr));
    g_assert_cmpuint(attr.qp_state, ==, RNIC_QPS_RESET);
    g_assert_cmpuint(le32_to_cpu(attr.qp_num), ==, qp->qpn);

    /* an illegal transition: RESET -> RTS */
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = RNIC_QPS_RTS;
    g_assert_cmpuint(tv_modify(d, qp, &attr, RNIC_QP_STATE), ==, RNIC_ST_BAD_STATE);

    /* busy objects cannot go */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DEALLOC_PD };
    c.destroy.handle = cpu_to_le32(pd);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BUSY);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_CQ };
    c.destroy.handle = cpu_to_le32(cq->handle);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BUSY);

    /* resize the CQ, modify the SRQ limit */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_RESIZE_CQ };
    c.cq.cq = cpu_to_le32(cq->handle);
    c.cq.ring_addr = cpu_to_le64(qv_alloc(d, 64 << 6, 4096));
    c.cq.log_size = 6;
    g_assert_cmpuint(tv_cmd_ok(d, &c), ==, cq->handle);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_MODIFY_SRQ };
    c.srq.srq = cpu_to_le32(srq->handle);
    c.srq.limit = cpu_to_le32(4);
    tv_cmd_ok(d, &c);

    /* tear down in order; every destroy succeeds once, then BAD_HANDLE */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DEREG_MR };
    c.destroy.handle = cpu_to_le32(mr);
    c.destroy.net_ctx = cpu_to_le32(ctx);
    tv_cmd_ok(d, &c);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.destroy.handle = cpu_to_le32(fr);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_QP };
    c.destroy.handle = cpu_to_le32(qp->handle);
    tv_cmd_ok(d, &c);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_SRQ };
    c.destroy.handle = cpu_to_le32(srq->handle);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_CQ };
    c.destroy.handle = cpu_to_le32(cq->handle);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_EQ };
    c.destroy.handle = cpu_to_le32(eq);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DEALLOC_PD };
    c.destroy.handle = cpu_to_le32(pd);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DEL_GID };
    c.gid.index = cpu_to_le32(3);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_FREE_UCTX };
    c.destroy.handle = cpu_to_le32(uctx);
    tv_cmd_ok(d, &c);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DESTROY_NET_CTX };
    c.destroy.handle = cpu_to_le32(ctx5);
    tv_cmd_ok(d, &c);
    c.destroy.handle = cpu_to_le32(ctx);
    tv_cmd_ok(d, &c);
    g_free(cq);
    g_free(srq);
    g_free(qp);
}

static void test_admin_bad_input(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    struct rnic_admin_cmd c;
    uint32_t ctx = tv_net_ctx(d, 0);
    uint32_t pd = tv_pd(d, ctx, 0);
    uint64_t buf = qv_alloc(d, 8192, 4096);
    uint64_t pbl = qv_alloc(d, 64, 8);
    uint64_t far = 0xfff0000000000ull;       /* not guest memory */
    uint64_t page = cpu_to_le64(far);

    /* rings: misaligned, outside RAM, too big */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_CREATE_CQ };
    c.cq.ring_addr = cpu_to_le64(buf + 64);
    c.cq.log_size = 4;
    c.cq.eq = cpu_to_le32(RNIC_HANDLE_NONE);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.cq.ring_addr = cpu_to_le64(far);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_DMA_ERROR);
    c.cq.ring_addr = cpu_to_le64(buf);
    c.cq.log_size = 31;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.cq.log_size = 4;
    c.cq.eq = cpu_to_le32(77);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);

    /* MRs: page list pointing outside RAM, list itself outside RAM,
     * zero and huge lengths, bad page shift, unknown kind */
    qtest_memwrite(rnic_qts(d), pbl, &page, 8);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_REG_MR };
    c.mr.pd = cpu_to_le32(pd);
    c.mr.iova = cpu_to_le64(0x10000);
    c.mr.length = cpu_to_le64(4096);
    c.mr.npages = cpu_to_le32(1);
    c.mr.page_shift = 12;
    c.mr.levels = 1;
    c.mr.pbl_addr = cpu_to_le64(far);
    c.mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_DMA_ERROR);
    c.mr.length = 0;
    c.mr.pbl_addr = cpu_to_le64(pbl);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.length = cpu_to_le64(1ull << 50);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.length = cpu_to_le64(4096);
    c.mr.page_shift = 40;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.page_shift = 12;
    c.mr.levels = 3;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.levels = 1;
    c.mr.kind = 9;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.kind = 0;
    c.mr.npages = cpu_to_le32(7);       /* inconsistent with the length */
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_PARAM);

    /* handles that name nothing */
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_DEALLOC_PD };
    c.destroy.handle = cpu_to_le32(12345);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c = (struct rnic_admin_cmd) { .opcode = RNIC_CMD_ALLOC_PD };
    c.pd.net_ctx = cpu_to_le32(99);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    /* a user context that does not exist */
    c.pd.net_ctx = cpu_to_le32(ctx);
    c.uctx = cpu_to_le32(40);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_PERMISSION);
    /* the device still works */
    g_assert_cmpuint(tv_pd(d, ctx, 0), !=, pd);
}

static void test_loop_send_recv(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sge sg[3], rs[2];
    struct rnic_sq_wqe w;
    struct rnic_cqe c;

    loop_init(&l, obj);
    tv_fill(l.d, l.bufa, 3000, 1);
    /* three gather SGEs into two scatter SGEs */
    rs[0] = tv_sge(l.bufb, 1000, l.mrb);
    rs[1] = tv_sge(l.bufb + 8192, 4000, l.mrb);
    tv_post_recv(l.d, l.b, 77, rs, 2);
    sg[0] = tv_sge(l.bufa, 500, l.mra);
    sg[1] = tv_sge(l.bufa + 500, 1500, l.mra);
    sg[2] = tv_sge(l.bufa + 2000, 1000, l.mra);
    w = tv_wqe(11, RNIC_WR_SEND_IMM, 3);
    w.imm_or_inv = cpu_to_be32(0xfeedf00d);
    tv_post_send(l.d, l.a, &w, sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 11, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.wr_id, ==, 77);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV);
    g_assert_cmpuint(c.byte_len, ==, 3000);
    g_assert_true(c.flags & RNIC_CQE_WITH_IMM);
    g_assert_cmphex(be32_to_cpu(c.imm_or_inv), ==, 0xfeedf00d);
    tv_assert_same(l.d, l.bufa, l.bufb, 1000);
    tv_assert_same(l.d, l.bufa + 1000, l.bufb + 8192, 2000);

    /* inline send */
    tv_post_recv(l.d, l.b, 78, rs, 1);
    w = tv_wqe(12, RNIC_WR_SEND, 0);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = 100;
    tv_post_send(l.d, l.a, &w, NULL, "0123456789abcdefghijklmnopqrstuvwxyz"
                 "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz");
    tv_expect_cqe(l.d, l.cqa, 12, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.byte_len, ==, 100);
    {
        char got[10];

        qtest_memread(rnic_qts(l.d), l.bufb + 36, got, 10);
        g_assert_cmpmem(got, 10, "0123456789", 10);
    }
}

static void test_loop_rdma(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sge sg;
    struct rnic_sq_wqe w;
    struct rnic_cqe c;
    uint64_t v;

    loop_init(&l, obj);
    /* WRITE of 20000 bytes (20 MTU-sized packets) */
    tv_fill(l.d, l.bufa, 20000, 3);
    sg = tv_sge(l.bufa, 20000, l.mra);
    w = tv_wqe(21, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.bufb + 100;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 21, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, l.bufb + 100, 20000);

    /* WRITE with immediate consumes a receive */
    tv_post_recv(l.d, l.b, 90, NULL, 0);
    w = tv_wqe(22, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = l.bufb + 30000;
    w.rdma.rkey = l.mrb;
    w.imm_or_inv = cpu_to_be32(42);
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 22, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(be32_to_cpu(c.imm_or_inv), ==, 42);
    g_assert_cmpuint(c.byte_len, ==, 20000);
    tv_assert_same(l.d, l.bufa, l.bufb + 30000, 20000);

    /* READ back into A */
    tv_fill(l.d, l.bufb + 50000, 5000, 9);
    sg = tv_sge(l.bufa + 40000, 5000, l.mra);
    w = tv_wqe(23, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = l.bufb + 50000;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 23, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa + 40000, l.bufb + 50000, 5000);

    /* atomics on an aligned u64 of B */
    qtest_writeq(rnic_qts(l.d), l.bufb + 64, 1000);
    sg = tv_sge(l.bufa + 64, 8, l.mra);
    w = tv_wqe(24, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    w.atomic.remote_addr = l.bufb + 64;
    w.atomic.rkey = l.mrb;
    w.atomic.compare_add = 5;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 24, RNIC_WC_FETCH_ADD, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(rnic_qts(l.d), l.bufa + 64), ==, 1000);
    g_assert_cmpuint(qtest_readq(rnic_qts(l.d), l.bufb + 64), ==, 1005);
    w = tv_wqe(25, RNIC_WR_ATOMIC_CMP_SWP, 1);
    w.atomic.remote_addr = l.bufb + 64;
    w.atomic.rkey = l.mrb;
    w.atomic.compare_add = 1005;
    w.atomic.swap = 0xabcdef;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 25, RNIC_WC_COMP_SWAP, RNIC_WC_SUCCESS);
    v = qtest_readq(rnic_qts(l.d), l.bufb + 64);
    g_assert_cmphex(v, ==, 0xabcdef);
    /* misaligned atomic: remote invalid request */
    w.wr_id = 26;
    w.atomic.remote_addr = l.bufb + 65;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 26, 0, RNIC_WC_REM_INV_REQ_ERR);
}

static void test_loop_interrupts(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_eqe e;

    loop_init(&l, obj);
    /* arm B's CQ; a SEND to B raises a completion event on the EQ */
    tv_cq_arm(l.d, l.cqb, RNIC_DB_ARM_NEXT);
    tv_pair_send(&l, 0, 64, 1, 2);
    tv_expect_cqe(l.d, l.cqb, 1, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    g_assert_true(rnic_msix_wait(l.d, 1));
    qtest_memread(rnic_qts(l.d), l.eq_ring, &e, sizeof(e));
    g_assert_cmpuint(e.type, ==, RNIC_EQE_COMPLETION);
    g_assert_cmpuint(le32_to_cpu(e.handle), ==, l.cqb->handle);
    g_assert_cmpuint(e.owner & 1, ==, 1);
    /* not armed again: no further event */
    tv_expect_cqe(l.d, l.cqa, 2, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    g_assert_false(rnic_msix_fired(l.d, 1));
}

static void test_loop_srq(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    TvSrq *srq;
    TvCq *cq;
    TvQp *s;
    struct rnic_sge sg;
    struct rnic_sq_wqe w;
    struct rnic_cqe c;
    uint8_t gid0[16];
    int i;

    loop_init(&l, obj);
    srq = tv_srq(l.d, l.pd, 4, 0, 0);
    cq = tv_cq(l.d, 5, l.eq, 0);
    s = tv_qp(l.d, RNIC_QPT_RC, l.pd, cq, cq, srq, 4, 0);
    /* re-connect A to the SRQ QP */
    qv_gid_bytes(gid0, 0, 1);
    {
        struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RESET };

        g_assert_cmpuint(tv_modify(l.d, l.a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
        l.a->sq_prod = l.a->rq_prod = 0;
    }
    tv_rc_connect(l.d, l.a, 0, (uint8_t[16]){ [10] = 0xff, [11] = 0xff,
                                              [12] = 10, [15] = 2 }, s->qpn);
    tv_rc_connect(l.d, s, 1, gid0, l.a->qpn);
    for (i = 0; i < 4; i++) {
        sg = tv_sge(l.bufb + i * 1024, 1024, l.mrb);
        tv_post_srq(l.d, srq, 100 + i, &sg, 1);
    }
    tv_fill(l.d, l.bufa, 4096, 5);
    for (i = 0; i < 4; i++) {
        sg = tv_sge(l.bufa + i * 1024, 1024, l.mra);
        w = tv_wqe(i, RNIC_WR_SEND, 1);
        tv_post_send(l.d, l.a, &w, &sg, NULL);
        tv_expect_cqe(l.d, l.cqa, i, RNIC_WC_SEND, RNIC_WC_SUCCESS);
        c = tv_wait_cqe(l.d, cq);
        g_assert_cmpuint(c.wr_id, ==, 100 + i);
        g_assert_cmpuint(c.qp_num, ==, s->qpn);
    }
    tv_assert_same(l.d, l.bufa, l.bufb, 4096);
    g_free(srq);
    g_free(cq);
    g_free(s);
}

static void test_loop_fast_reg(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_cqe e;
    uint64_t region;
    uint32_t fr, stag;

    loop_init(&l, obj);
    fr = tv_alloc_mr(l.d, l.pd, 4, 0x01);
    /* B fast-registers two pages with key 0x42 and remote write */
    region = qv_alloc(l.d, 8192, 4096);
    stag = RNIC_STAG(RNIC_STAG_INDEX(fr), 0x42);
    w = tv_fast_reg_wqe(l.d, 31, stag, 0x7000000, region, 2,
                        RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(l.d, l.b, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqb, 31, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
    /* A writes through the new rkey at iova 0x7000000 + 4000 */
    tv_fill(l.d, l.bufa, 200, 8);
    sg = tv_sge(l.bufa, 200, l.mra);
    w = tv_wqe(32, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000 + 4000;
    w.rdma.rkey = stag;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 32, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, region + 4000, 200);
    /* SEND with invalidate: B's receive reports the invalidated STag */
    tv_post_recv(l.d, l.b, 33, NULL, 0);
    w = tv_wqe(34, RNIC_WR_SEND_INV, 0);
    w.imm_or_inv = stag;
    tv_post_send(l.d, l.a, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqa, 34, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    e = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(e.status, ==, RNIC_WC_SUCCESS);
    g_assert_true(e.flags & RNIC_CQE_WITH_INV);
    g_assert_cmphex(e.imm_or_inv, ==, stag);
    /* now the rkey is dead: remote access error, both QPs to error */
    w = tv_wqe(35, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x7000000;
    w.rdma.rkey = stag;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 35, 0, RNIC_WC_REM_ACCESS_ERR);
}

static void test_loop_isolation(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    uint32_t ro;
    uint64_t robuf;

    loop_init(&l, obj);
    sg = tv_sge(l.bufa, 64, l.mra);
    /* wrong 8-bit key, right index */
    w = tv_wqe(41, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.bufb;
    w.rdma.rkey = RNIC_STAG(RNIC_STAG_INDEX(l.mrb), 0x5b);
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 41, 0, RNIC_WC_REM_ACCESS_ERR);

    /* one byte beyond the region */
    loop_init(&l, obj);
    sg = tv_sge(l.bufa, 64, l.mra);
    w = tv_wqe(42, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.bufb + BUF_SIZE - 63;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 42, 0, RNIC_WC_REM_ACCESS_ERR);

    /* an MR without remote write refuses a remote write */
    loop_init(&l, obj);
    robuf = qv_alloc(l.d, 4096, 4096);
    ro = tv_reg_mr(l.d, l.pd, robuf, 4096,
                   RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ, 0, NULL);
    sg = tv_sge(l.bufa, 64, l.mra);
    w = tv_wqe(43, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = robuf;
    w.rdma.rkey = ro;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 43, 0, RNIC_WC_REM_ACCESS_ERR);
}

/* An rkey of network context A means nothing in network context B. */
static void test_net_ctx_isolation(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint32_t ctx_a, ctx_b, pd_a, pd_b, mr_a, mr_b, eq;
    TvCq *ca, *cb;
    TvQp *qa, *qb;
    uint8_t gid_b[16], gid_b2[16];
    uint64_t buf;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;

    ctx_a = tv_net_ctx(d, 0);
    ctx_b = tv_net_ctx(d, 7);
    qv_gid(d, 0, ctx_a, 0, 1);
    qv_gid(d, 1, ctx_b, 7, 1);
    qv_gid(d, 2, ctx_b, 7, 2);
    qv_gid_bytes(gid_b, 7, 1);
    qv_gid_bytes(gid_b2, 7, 2);
    pd_a = tv_pd(d, ctx_a, 0);
    pd_b = tv_pd(d, ctx_b, 0);
    eq = tv_eq(d, 4, 1, RNIC_EQ_ASYNC, NULL);
    buf = qv_alloc(d, 3 * 4096, 4096);
    mr_a = tv_reg_mr(d, pd_a, buf, 4096, ALL_RIGHTS, 0, NULL);
    mr_b = tv_reg_mr(d, pd_b, buf + 4096, 8192, ALL_RIGHTS, 0, NULL);
    /* two QPs in context B talking to each other */
    ca = tv_cq(d, 4, eq, 0);
    cb = tv_cq(d, 4, eq, 0);
    qa = tv_qp(d, RNIC_QPT_RC, pd_b, ca, ca, NULL, 3, 0);
    qb = tv_qp(d, RNIC_QPT_RC, pd_b, cb, cb, NULL, 3, 0);
    tv_rc_connect(d, qa, 1, gid_b2, qb->qpn);
    tv_rc_connect(d, qb, 2, gid_b, qa->qpn);
    sg = tv_sge(buf + 4096, 16, mr_b);
    /* context A's rkey (valid there) is refused in context B */
    w = tv_wqe(51, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf;
    w.rdma.rkey = mr_a;
    tv_post_send(d, qa, &w, &sg, NULL);
    tv_expect_cqe(d, ca, 51, 0, RNIC_WC_REM_ACCESS_ERR);
    g_free(ca);
    g_free(cb);
    g_free(qa);
    g_free(qb);
}

/*
 * A multi-network PD (ABI 1.1) through the device: its QPs bind it to VLAN
 * 7, where its rkey then works; on the untagged network it is unknown;
 * DEREG_MR goes through RNIC_PD_MULTI_NET only.
 */
static void test_multi_net_pd(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint32_t ctx0, ctx7, mpd, pd0, mr, mr0, eq;
    TvCq *cq;
    TvQp *qa, *qb, *q0a, *q0b;
    uint8_t g7a[16], g7b[16], g0a[16], g0b[16];
    uint64_t buf;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };

    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_CAPS_LO) &
                    RNIC_CAP_PD_MULTI_NET, ==, RNIC_CAP_PD_MULTI_NET);
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_ABI_VERSION), ==,
                    RNIC_ABI_VERSION);
    ctx0 = tv_net_ctx(d, 0);
    ctx7 = tv_net_ctx(d, 7);
    qv_gid(d, 0, ctx0, 0, 1);
    qv_gid(d, 1, ctx0, 0, 2);
    qv_gid(d, 2, ctx7, 7, 1);
    qv_gid(d, 3, ctx7, 7, 2);
    qv_gid_bytes(g0a, 0, 1);
    qv_gid_bytes(g0b, 0, 2);
    qv_gid_bytes(g7a, 7, 1);
    qv_gid_bytes(g7b, 7, 2);
    mpd = tv_pd(d, RNIC_PD_MULTI_NET, 0);
    pd0 = tv_pd(d, ctx0, 0);
    eq = tv_eq(d, 4, 1, RNIC_EQ_ASYNC, NULL);
    cq = tv_cq(d, 5, eq, 0);
    buf = qv_alloc(d, 4 * 4096, 4096);
    mr = tv_reg_mr(d, mpd, buf, 2 * 4096, ALL_RIGHTS, 0, NULL);
    mr0 = tv_reg_mr(d, pd0, buf + 2 * 4096, 2 * 4096, ALL_RIGHTS, 0, NULL);
    qa = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 3, 0);
    qb = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 3, 0);
    tv_rc_connect(d, qa, 2, g7b, qb->qpn);
    tv_rc_connect(d, qb, 3, g7a, qa->qpn);
    /* VLAN 7: the PD's key moves data */
    tv_fill(d, buf, 256, 0x31);
    sg = tv_sge(buf, 256, mr);
    w = tv_wqe(61, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf + 4096;
    w.rdma.rkey = mr;
    tv_post_send(d, qa, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 61, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, buf, buf + 4096, 256);
    /* untagged: the same key finds nothing */
    q0a = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 3, 0);
    q0b = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 3, 0);
    tv_rc_connect(d, q0a, 0, g0b, q0b->qpn);
    tv_rc_connect(d, q0b, 1, g0a, q0a->qpn);
    sg = tv_sge(buf + 2 * 4096, 16, mr0);
    w = tv_wqe(62, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf;
    w.rdma.rkey = mr;
    tv_post_send(d, q0a, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 62, 0, RNIC_WC_REM_ACCESS_ERR);
    /* deregistration: not through VLAN 7's replica; through the PD's table */
    c.destroy.handle = mr;
    c.destroy.net_ctx = ctx7;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.destroy.net_ctx = RNIC_PD_MULTI_NET;
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_cmd(d, &c).status, ==, RNIC_ST_BAD_HANDLE);
    g_free(cq);
    g_free(qa);
    g_free(qb);
    g_free(q0a);
    g_free(q0b);
}

static void test_loop_errors(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };
    int i;

    loop_init(&l, obj);
    /* unknown opcode: local QP operation error, QP to ERR */
    w = tv_wqe(61, 0x7f, 0);
    tv_post_send(l.d, l.a, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqa, 61, 0, RNIC_WC_LOC_QP_OP_ERR);

    /* a bad lkey: local protection error */
    loop_init(&l, obj);
    sg = tv_sge(l.bufa, 64, l.mra ^ 0x100);
    w = tv_wqe(62, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.bufb;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 62, 0, RNIC_WC_LOC_PROT_ERR);

    /* receives posted, then the QP goes to ERR: all flushed */
    loop_init(&l, obj);
    for (i = 0; i < 3; i++) {
        sg = tv_sge(l.bufb, 64, l.mrb);
        tv_post_recv(l.d, l.b, 70 + i, &sg, 1);
    }
    g_assert_cmpuint(tv_modify(l.d, l.b, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    for (i = 0; i < 3; i++) {
        tv_expect_cqe(l.d, l.cqb, 70 + i, 0, RNIC_WC_WR_FLUSH_ERR);
    }

    /* a doorbell index beyond the ring is refused; the QP stays usable */
    loop_init(&l, obj);
    rnic_doorbell(l.d, 0, RNIC_DB_SQ, rnic_db_value(l.a->handle, 0, 1000));
    tv_pair_send(&l, 0, 64, 80, 81);
    tv_expect_cqe(l.d, l.cqa, 81, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(l.d, l.cqb, 80, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    /* a doorbell for a queue that does not exist */
    rnic_doorbell(l.d, 0, RNIC_DB_SQ, rnic_db_value(4000, 0, 1));
    rnic_doorbell(l.d, 0, RNIC_DB_RQ, rnic_db_value(4000, 0, 1));
    g_assert_cmpuint(rnic_reg_read(l.d, RNIC_REG_STAT_BASE +
                                   8 * RNIC_STAT_DOORBELL_ERRORS), >=, 3);
}

static void test_ud(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint32_t ctx = tv_net_ctx(d, 0), pd, eq, mr;
    TvCq *cq1, *cq2;
    TvQp *u1, *u2;
    uint64_t buf;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_cqe c;

    qv_gid(d, 0, ctx, 0, 1);
    qv_gid(d, 1, ctx, 0, 2);
    pd = tv_pd(d, ctx, 0);
    eq = tv_eq(d, 4, 1, RNIC_EQ_ASYNC, NULL);
    cq1 = tv_cq(d, 4, eq, 0);
    cq2 = tv_cq(d, 4, eq, 0);
    u1 = tv_qp(d, RNIC_QPT_UD, pd, cq1, cq1, NULL, 3, 0);
    u2 = tv_qp(d, RNIC_QPT_UD, pd, cq2, cq2, NULL, 3, 0);
    tv_ud_ready(d, u1, 0x1111);
    tv_ud_ready(d, u2, 0x2222);
    buf = qv_alloc(d, 8192, 4096);
    mr = tv_reg_mr(d, pd, buf, 8192, ALL_RIGHTS, 0, NULL);
    tv_fill(d, buf, 256, 4);
    sg = tv_sge(buf + 4096, 40 + 256, mr);
    tv_post_recv(d, u2, 5, &sg, 1);
    sg = tv_sge(buf, 256, mr);
    w = tv_wqe(6, RNIC_WR_SEND, 1);
    w.ud.remote_qpn = u2->qpn;
    w.ud.remote_qkey = 0x2222;
    qv_gid_bytes(w.ud.av.dgid, 0, 2);
    w.ud.av.sgid_index = 0;
    w.ud.av.hop_limit = 64;
    tv_post_send(d, u1, &w, &sg, NULL);
    tv_expect_cqe(d, cq1, 6, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(d, cq2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.src_qp, ==, u1->qpn);
    g_assert_cmpuint(c.byte_len, ==, 40 + 256);
    g_assert_true(c.flags & RNIC_CQE_GRH);
    tv_assert_same(d, buf, buf + 4096 + 40, 256);
    /* a wrong Q_Key is dropped silently: the next receive stays posted */
    w.ud.remote_qkey = 0x3333;
    w.wr_id = 7;
    tv_post_send(d, u1, &w, &sg, NULL);
    tv_expect_cqe(d, cq1, 7, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    qtest_clock_step(rnic_qts(d), 1000000);
    g_assert_false(tv_poll(d, cq2, &c, 1));
    g_free(cq1);
    g_free(cq2);
    g_free(u1);
    g_free(u2);
}

/*
 * UC between two QPs of the device: a SEND of three packets and a WRITE
 * with immediate of two, complete on the sender once sent, data checked;
 * a READ is not a UC operation (QP operation error, the send queue goes to
 * SQE and flushes what follows).
 */
static void test_uc(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    uint8_t gid0[16], gid1[16];
    struct rnic_sq_wqe w;
    struct rnic_sge sg, rs;
    struct rnic_cqe c;
    TvQp *a, *b;

    loop_init(&l, obj);
    qv_gid_bytes(gid0, 0, 1);
    qv_gid_bytes(gid1, 0, 2);
    a = tv_qp(l.d, RNIC_QPT_UC, l.pd, l.cqa, l.cqa, NULL, 4, 0);
    b = tv_qp(l.d, RNIC_QPT_UC, l.pd, l.cqb, l.cqb, NULL, 4, 0);
    tv_rc_connect(l.d, a, 0, gid1, b->qpn);
    tv_rc_connect(l.d, b, 1, gid0, a->qpn);
    tv_fill(l.d, l.bufa, 8192, 9);

    rs = tv_sge(l.bufb, 4096, l.mrb);
    tv_post_recv(l.d, b, 1, &rs, 1);
    sg = tv_sge(l.bufa, 3000, l.mra);
    w = tv_wqe(2, RNIC_WR_SEND, 1);
    tv_post_send(l.d, a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 2, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.byte_len, ==, 3000);
    tv_assert_same(l.d, l.bufa, l.bufb, 3000);

    tv_post_recv(l.d, b, 3, &rs, 1);
    sg = tv_sge(l.bufa + 4096, 2000, l.mra);
    w = tv_wqe(4, RNIC_WR_RDMA_WRITE_IMM, 1);
    w.rdma.remote_addr = l.bufb + 8192;
    w.rdma.rkey = l.mrb;
    w.imm_or_inv = cpu_to_be32(0x5eed);
    tv_post_send(l.d, a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 4, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.wr_id, ==, 3);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(c.byte_len, ==, 2000);
    g_assert_cmphex(be32_to_cpu(c.imm_or_inv), ==, 0x5eed);
    tv_assert_same(l.d, l.bufa + 4096, l.bufb + 8192, 2000);

    w = tv_wqe(5, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = l.bufb;
    w.rdma.rkey = l.mrb;
    tv_write_send(l.d, a, &w, &sg, NULL);
    w = tv_wqe(6, RNIC_WR_SEND, 1);
    tv_write_send(l.d, a, &w, &sg, NULL);
    g_assert_cmpint(tv_ring_sq(l.d, a), ==, 0);
    tv_expect_cqe(l.d, l.cqa, 5, RNIC_WC_RDMA_READ, RNIC_WC_LOC_QP_OP_ERR);
    tv_expect_cqe(l.d, l.cqa, 6, RNIC_WC_SEND, RNIC_WC_WR_FLUSH_ERR);
    g_free(a);
    g_free(b);
}

/* A WRITE of 'len' bytes from a at 'addr' through 'rkey': its status. */
static uint8_t mw_write(TvPair *l, TvQp *a, uint64_t addr, uint32_t rkey,
                        uint32_t len)
{
    struct rnic_sge sg = tv_sge(l->bufa, len, l->mra);
    struct rnic_sq_wqe w = tv_wqe(20, RNIC_WR_RDMA_WRITE, 1);

    w.rdma.remote_addr = addr;
    w.rdma.rkey = rkey;
    tv_post_send(l->d, a, &w, &sg, NULL);
    return tv_wait_cqe(l->d, l->cqa).status;
}

/*
 * Memory windows through the real device: b binds a type 1 and a type 2B
 * window over parts of its buffer, a WRITEs through both (data checked),
 * a SEND with invalidate from a frees the type 2B one, after which a
 * WRITE through it is a remote access error.
 */
static void test_mw(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    uint32_t m1, m2, k1, k2;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_cqe c;

    loop_init(&l, obj);
    g_assert_true(rnic_reg_read(l.d, RNIC_REG_CAPS_LO) & RNIC_CAP_MW);
    m1 = tv_alloc_mw(l.d, l.pd, RNIC_MW_TYPE_1, 1);
    m2 = tv_alloc_mw(l.d, l.pd, RNIC_MW_TYPE_2, 2);
    k1 = (m1 & ~0xffu) | 0x11;
    k2 = (m2 & ~0xffu) | 0x22;
    w = tv_bind_wqe(10, m1, k1, l.mrb, l.bufb, 4096,
                    RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(l.d, l.b, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqb, 10, RNIC_WC_BIND_MW, RNIC_WC_SUCCESS);
    w = tv_bind_wqe(11, m2, k2, l.mrb, l.bufb + 8192, 4096,
                    RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(l.d, l.b, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqb, 11, RNIC_WC_BIND_MW, RNIC_WC_SUCCESS);

    tv_fill(l.d, l.bufa, 4096, 5);
    g_assert_cmpuint(mw_write(&l, l.a, l.bufb, k1, 4096), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(mw_write(&l, l.a, l.bufb + 8192, k2, 4096), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, l.bufb, 4096);
    tv_assert_same(l.d, l.bufa, l.bufb + 8192, 4096);

    sg = tv_sge(l.bufb + 16384, 64, l.mrb);
    tv_post_recv(l.d, l.b, 12, &sg, 1);
    sg = tv_sge(l.bufa, 64, l.mra);
    w = tv_wqe(13, RNIC_WR_SEND_INV, 1);
    w.imm_or_inv = k2;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 13, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_true(c.flags & RNIC_CQE_WITH_INV);
    g_assert_cmpuint(mw_write(&l, l.a, l.bufb + 8192, k2, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
}

/*
 * Mapped STags through the real device (kind MAPPED): b maps three pieces
 * of its buffer onto one rkey, a WRITEs through it (the bytes land in the
 * pieces, the gaps untouched) and READs it back into a mapped lkey over
 * pieces of its own buffer; a fast-registered one (table inline) dies by
 * SEND with invalidate; a bad table is refused; a member deregistered
 * under a mapped STag makes the WRITE through it a remote access error.
 */
static void test_mapped(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_map_seg sb[3] = {
        { .length = 1000 }, { .length = 24 }, { .length = 2000 },
    };
    struct rnic_map_seg sa[3] = {
        { .length = 2000 }, { .length = 1000 }, { .length = 24 },
    };
    uint64_t iova = 0x6000000000ull;
    uint32_t rw = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                  RNIC_ACCESS_REMOTE_READ;
    uint32_t mb, ma, fr, member;
    struct rnic_admin_cmd c;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_cqe e;
    uint8_t st, zero[64];
    int i;

    loop_init(&l, obj);
    g_assert_true(rnic_reg_read(l.d, RNIC_REG_CAPS_LO) & RNIC_CAP_MAPPED);
    for (i = 0; i < 3; i++) {
        sb[i].addr = l.bufb + 4096 * (2 - i) + 100 * i + 3;
        sb[i].lkey = l.mrb;
        sa[i].addr = l.bufa + 32768 + 5000 * i + 11;
        sa[i].lkey = l.mra;
    }
    qtest_memset(rnic_qts(l.d), l.bufb, 0, 16384);
    mb = tv_reg_mapped(l.d, l.pd, iova, 3024, sb, 3, 1, rw, 0x61, NULL);
    tv_fill(l.d, l.bufa, 3024, 6);
    sg = tv_sge(l.bufa, 3024, l.mra);
    w = tv_wqe(40, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = iova;
    w.rdma.rkey = mb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 40, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, sb[0].addr, 1000);
    tv_assert_same(l.d, l.bufa + 1000, sb[1].addr, 24);
    tv_assert_same(l.d, l.bufa + 1024, sb[2].addr, 2000);
    memset(zero, 0, sizeof(zero));
    qtest_memread(rnic_qts(l.d), sb[2].addr + 2000, zero + 32, 32);
    g_assert_cmpmem(zero, 32, zero + 32, 32);
    /* READ back into a's mapped lkey */
    ma = tv_reg_mapped(l.d, l.pd, iova, 3024, sa, 3, 1,
                       RNIC_ACCESS_LOCAL_WRITE, 0x62, NULL);
    sg = tv_sge(iova, 3024, ma);
    w = tv_wqe(41, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = iova;
    w.rdma.rkey = mb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 41, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, sa[0].addr, 2000);
    tv_assert_same(l.d, l.bufa + 2000, sa[1].addr, 1000);
    tv_assert_same(l.d, l.bufa + 3000, sa[2].addr, 24);
    /* fast registration (inline table), then SEND with invalidate */
    fr = tv_alloc_mapped(l.d, l.pd, 4, 0x70);
    w = tv_map_reg_wqe(42, fr, iova, 3024, 3, 1, rw);
    w.flags |= RNIC_WQE_INLINE;
    w.inline_len = sizeof(sb);
    tv_post_send(l.d, l.b, &w, NULL, sb);
    tv_expect_cqe(l.d, l.cqb, 42, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
    tv_post_recv(l.d, l.b, 43, NULL, 0);
    w = tv_wqe(44, RNIC_WR_SEND_INV, 0);
    w.imm_or_inv = fr;
    tv_post_send(l.d, l.a, &w, NULL, NULL);
    tv_expect_cqe(l.d, l.cqa, 44, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    e = tv_wait_cqe(l.d, l.cqb);
    g_assert_cmpuint(e.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmphex(e.imm_or_inv, ==, fr);
    /* a table whose segments overlap: refused */
    sb[1].addr = sb[0].addr + 10;
    g_assert_cmpuint(tv_reg_mapped(l.d, l.pd, iova, 3024, sb, 3, 1, rw, 0x63,
                                   &st), ==, 0);
    g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM);
    /* a member deregistered under a mapped STag */
    member = tv_reg_mr(l.d, l.pd, l.bufb + 16384, 4096, ALL_RIGHTS, 0, NULL);
    sb[0].addr = l.bufb + 16384;
    sb[0].lkey = member;
    mb = tv_reg_mapped(l.d, l.pd, iova, 1000, sb, 1, 1, rw, 0x64, NULL);
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_DEREG_MR;
    c.destroy.handle = member;
    c.destroy.net_ctx = l.ctx;
    tv_cmd_ok(l.d, &c);
    sg = tv_sge(l.bufa, 100, l.mra);
    w = tv_wqe(45, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = iova;
    w.rdma.rkey = mb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 45, 0, RNIC_WC_REM_ACCESS_ERR);
}

/*
 * REREG_MR through the real device: b's MR moves to a new buffer with
 * read rights only, keeping its STag; a READ through the old rkey gets
 * the new buffer's bytes, a WRITE is a remote access error.
 */
static void test_rereg(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    struct rnic_sge sg;
    struct rnic_sq_wqe w;
    uint64_t nbuf;

    loop_init(&l, obj);
    g_assert_true(rnic_reg_read(l.d, RNIC_REG_CAPS_LO) & RNIC_CAP_REREG_MR);
    nbuf = qv_alloc(l.d, 2 * 4096, 4096);
    tv_fill(l.d, nbuf, 4096, 7);
    g_assert_cmpuint(tv_rereg_mr(l.d, l.mrb, l.ctx, RNIC_REREG_TRANS |
                                 RNIC_REREG_ACCESS, 0, nbuf, 4096,
                                 RNIC_ACCESS_LOCAL_WRITE |
                                 RNIC_ACCESS_REMOTE_READ), ==, RNIC_ST_OK);
    sg = tv_sge(l.bufa, 4096, l.mra);
    w = tv_wqe(21, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = nbuf;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 21, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(l.d, l.bufa, nbuf, 4096);
    g_assert_cmpuint(mw_write(&l, l.a, nbuf, l.mrb, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
}

/*
 * Every CQE carries the device clock, QEMU's virtual clock in ns, which an
 * 8-byte load of RNIC_DB_CLOCK in a doorbell page returns (qtest moves
 * that clock by hand: exact values).
 */
static void test_cqe_timestamp(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    QRnic *d;
    uint64_t t0;
    struct rnic_cqe c;

    loop_init(&l, obj);
    d = l.d;
    g_assert_true(rnic_reg_read(d, RNIC_REG_CAPS_LO) & RNIC_CAP_CQE_TIMESTAMP);
    t0 = qpci_io_readq(&d->dev, d->db, RNIC_DB_CLOCK);
    qtest_clock_step(rnic_qts(d), 1000000);
    g_assert_cmpuint(qpci_io_readq(&d->dev, d->db, RNIC_DB_PAGE_SIZE +
                                   RNIC_DB_CLOCK), ==, t0 + 1000000);
    tv_pair_send(&l, 0, 64, 30, 31);
    c = tv_wait_cqe(d, l.cqb);
    g_assert_cmpuint(c.wr_id, ==, 30);
    g_assert_cmpuint(GUINT64_FROM_LE(c.timestamp), >=, t0 + 1000000);
    g_assert_cmpuint(GUINT64_FROM_LE(c.timestamp), <=,
                     qpci_io_readq(&d->dev, d->db, RNIC_DB_CLOCK));
    /* the other offsets stay write-only: 0 */
    g_assert_cmpuint(qpci_io_readq(&d->dev, d->db, RNIC_DB_CQ), ==, 0);
}

/*
 * MSI-X vector 1 aimed at the device's own BAR0 + DEV_CTRL with data RESET,
 * raised by the completion of a SEND whose retransmit timer expires (retry
 * count 0, a peer that never answers). The engine runs inside QEMU's
 * re-entrancy guard, timers included: the write is refused, the device
 * keeps working. Before, the timer ran outside the guard and the reset
 * freed the QP the engine was completing (ASan: use-after-free).
 */
static void test_msix_at_bar0(void *obj, void *data, QGuestAllocator *alloc)
{
    QRnic *d = obj;
    uint64_t entry = d->dev.msix_table_off + 1 * PCI_MSIX_ENTRY_SIZE;
    uint64_t target = d->regs.addr + RNIC_REG_DEV_CTRL;
    uint32_t ctx = tv_net_ctx(d, 0), pd, eq, mr;
    uint8_t dgid[16];
    uint64_t buf;
    TvCq *cq;
    TvQp *qp;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    struct rnic_cqe c;
    struct rnic_admin_cmd nop = { .opcode = RNIC_CMD_NOP };

    g_assert_false(d->regs.is_io);
    qv_gid(d, 0, ctx, 0, 1);
    pd = tv_pd(d, ctx, 0);
    rnic_msix_route(d, 1);
    eq = tv_eq(d, 4, 1, 0, NULL);
    cq = tv_cq(d, 4, eq, 0);
    qp = tv_qp(d, RNIC_QPT_RC, pd, cq, cq, NULL, 3, 0);
    qv_gid_bytes(dgid, 0, 99);
    tv_retry_cnt = 0;
    tv_rc_connect(d, qp, 0, dgid, 0x123);
    tv_retry_cnt = 7;
    buf = qv_alloc(d, 4096, 4096);
    mr = tv_reg_mr(d, pd, buf, 4096, ALL_RIGHTS, 0, NULL);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_LOWER_ADDR, (uint32_t)target);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_UPPER_ADDR, target >> 32);
    qpci_io_writel(&d->dev, d->dev.msix_table_bar,
                   entry + PCI_MSIX_ENTRY_DATA, RNIC_CTRL_RESET);
    tv_cq_arm(d, cq, RNIC_DB_ARM_NEXT);
    sg = tv_sge(buf, 64, mr);
    w = tv_wqe(1, RNIC_WR_SEND, 1);
    tv_post_send(d, qp, &w, &sg, NULL);
    c = tv_wait_cqe(d, cq);             /* the clock steps: the timer fires */
    g_assert_cmphex(c.wr_id, ==, 1);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    /* the MSI's write to BAR0 was refused: still enabled, still working */
    g_assert_cmphex(rnic_reg_read(d, RNIC_REG_DEV_STATUS) & RNIC_STATUS_READY,
                    ==, RNIC_STATUS_READY);
    g_assert_cmpuint(tv_cmd(d, &nop).status, ==, RNIC_ST_OK);
    rnic_msix_route(d, 1);
    g_free(cq);
    g_free(qp);
}

/*
 * Typed trace events: a user's -trace rnic_qp_state -trace 'rnic_ub_*'
 * sees the QP state changes and the guest's mistakes with their fields.
 */
static char *trace_log;

static void *trace_before(GString *cmd_line, void *arg)
{
    if (!trace_log) {
        trace_log = qv_tmp_file("rnic-trace-XXXXXX.log");
    }
    g_string_append_printf(cmd_line, " -trace rnic_qp_state"
                           " -trace enable=rnic_ub_* -D %s ", trace_log);
    return arg;
}

static void test_trace(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    g_autofree char *text = NULL;
    g_autofree char *state = NULL, *sge = NULL;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;

    loop_init(&l, obj);
    sg = tv_sge(l.bufa, 64, l.mra ^ 0x100);
    w = tv_wqe(62, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = l.bufb;
    w.rdma.rkey = l.mrb;
    tv_post_send(l.d, l.a, &w, &sg, NULL);
    tv_expect_cqe(l.d, l.cqa, 62, 0, RNIC_WC_LOC_PROT_ERR);

    g_assert_true(g_file_get_contents(trace_log, &text, NULL, NULL));
    state = g_strdup_printf("rnic_qp_state qpn %u from %u to %u", l.a->qpn,
                            RNIC_QPS_RTR, RNIC_QPS_RTS);
    sge = g_strdup_printf("rnic_ub_sge sge 0 lkey 0x%x addr 0x%" PRIx64
                          " length 64 no such STag", l.mra ^ 0x100, l.bufa);
    if (!strstr(text, state) || !strstr(text, sge)) {
        g_test_message("%s", text);
    }
    g_assert_nonnull(strstr(text, state));
    g_assert_nonnull(strstr(text, sge));
    /* only what was asked for */
    g_assert_null(strstr(text, "rnic_wqe_start"));
}

/*
 * x-wqe-cache: the WQE translation cache on (data: "on") or off. The same
 * two-SGE WRITE four times moves the bytes as they are each time; with the
 * cache the last three are hits (statistic 33); the source region
 * deregistered, the fifth is a local protection error either way.
 */
static void *wqe_cache_before(GString *cmd_line, void *arg)
{
    g_string_append_printf(cmd_line, " -global rnic.x-wqe-cache=%s ",
                           (const char *)arg);
    return arg;
}

static void test_wqe_cache(void *obj, void *data, QGuestAllocator *alloc)
{
    g_auto(TvPair) l = { 0 };
    bool on = !strcmp(data, "on");
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    struct rnic_sge sg[2];
    struct rnic_sq_wqe w;
    uint32_t src;
    uint64_t hits;
    int i;

    loop_init(&l, obj);
    src = tv_reg_mr(l.d, l.pd, l.bufa, 4096, TV_ACCESS_ALL, 0, NULL);
    sg[0] = tv_sge(l.bufa, 100, src);
    sg[1] = tv_sge(l.bufa + 1000, 100, src);
    hits = tv_stat(l.d, RNIC_STAT_WQC_HITS);
    for (i = 0; i < 5; i++) {
        w = tv_wqe(70 + i, RNIC_WR_RDMA_WRITE, 2);
        w.rdma.remote_addr = l.bufb;
        w.rdma.rkey = l.mrb;
        if (i == 4) {
            c.destroy.handle = src;
            c.destroy.net_ctx = l.ctx;
            g_assert_cmpuint(tv_cmd(l.d, &c).status, ==, RNIC_ST_OK);
        }
        tv_fill(l.d, l.bufa, 1100, 10 + i);
        tv_post_send(l.d, l.a, &w, sg, NULL);
        if (i == 4) {
            tv_expect_cqe(l.d, l.cqa, 74, 0, RNIC_WC_LOC_PROT_ERR);
            break;
        }
        tv_expect_cqe(l.d, l.cqa, 70 + i, RNIC_WC_RDMA_WRITE,
                      RNIC_WC_SUCCESS);
        tv_assert_same(l.d, l.bufa, l.bufb, 100);
        tv_assert_same(l.d, l.bufa + 1000, l.bufb + 100, 100);
    }
    g_assert_cmpuint(tv_stat(l.d, RNIC_STAT_WQC_HITS) - hits, ==, on ? 3 : 0);
    /* the host sees the counters too */
    {
        QDict *r = qtest_qmp(rnic_qts(l.d), "{ 'execute': 'qom-get', "
                             "'arguments': { 'path': "
                             "'/machine/peripheral-anon/device[0]', "
                             "'property': 'x-stats' } }");
        g_autofree char *want = g_strdup_printf("\nwqe_cache_hits %" PRIu64
                                                "\n", hits + (on ? 3 : 0));
        const char *text = qdict_get_str(r, "return");

        g_assert_nonnull(strstr(text, want));
        qobject_unref(r);
    }
}

static void rnic_register_verbs_tests(void)
{
    QOSGraphTestOptions trace_opts = { .before = trace_before };
    QOSGraphTestOptions wqc_on = { .before = wqe_cache_before,
                                   .arg = (void *)"on" };
    QOSGraphTestOptions wqc_off = { .before = wqe_cache_before,
                                    .arg = (void *)"off" };

    qos_add_test("verbs/admin-objects", "rnic", test_admin_objects, NULL);
    qos_add_test("verbs/admin-bad-input", "rnic", test_admin_bad_input, NULL);
    qos_add_test("verbs/send-recv", "rnic", test_loop_send_recv, NULL);
    qos_add_test("verbs/rdma-atomic", "rnic", test_loop_rdma, NULL);
    qos_add_test("verbs/interrupts", "rnic", test_loop_interrupts, NULL);
    qos_add_test("verbs/srq", "rnic", test_loop_srq, NULL);
    qos_add_test("verbs/fast-reg", "rnic", test_loop_fast_reg, NULL);
    qos_add_test("verbs/isolation", "rnic", test_loop_isolation, NULL);
    qos_add_test("verbs/net-ctx-isolation", "rnic", test_net_ctx_isolation, NULL);
    qos_add_test("verbs/multi-net-pd", "rnic", test_multi_net_pd, NULL);
    qos_add_test("verbs/errors", "rnic", test_loop_errors, NULL);
    qos_add_test("verbs/ud", "rnic", test_ud, NULL);
    qos_add_test("verbs/uc", "rnic", test_uc, NULL);
    qos_add_test("verbs/mw", "rnic", test_mw, NULL);
    qos_add_test("verbs/rereg", "rnic", test_rereg, NULL);
    qos_add_test("verbs/mapped", "rnic", test_mapped, NULL);
    qos_add_test("verbs/cqe-timestamp", "rnic", test_cqe_timestamp, NULL);
    qos_add_test("verbs/msix-at-bar0", "rnic", test_msix_at_bar0, NULL);
    qos_add_test("verbs/trace", "rnic", test_trace, &trace_opts);
    qos_add_test("verbs/wqe-cache-on", "rnic", test_wqe_cache, &wqc_on);
    qos_add_test("verbs/wqe-cache-off", "rnic", test_wqe_cache, &wqc_off);
}

libqos_init(rnic_register_verbs_tests);
