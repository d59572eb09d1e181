/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qtests of live migration with RDMA state (docs/migration.md): the
 * objects.
 *
 *  objects      a device with every kind of object migrates; the
 *               destination's mapping tables and QPs are the source's (the
 *               'x-tables' property before and after), its registers too,
 *               and every object works on the destination
 *  multi-net    a multi-network PD (ABI 1.1) and its replicas
 *
 * Plain GTest cases registered from the rnic-qos-test binary: they boot
 * their own machines (rnic-migration.h).
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "rnic-migration.h"

/* Every readable register that is state (not the heartbeat). */
static GArray *regs_snapshot(QRnic *d)
{
    static const uint32_t regs[] = {
        RNIC_REG_DEV_CTRL, RNIC_REG_DEV_STATUS, RNIC_REG_FATAL_CODE,
        RNIC_REG_SCRATCH, RNIC_REG_MAC_LO, RNIC_REG_MAC_HI,
        RNIC_REG_AQ_BASE_LO, RNIC_REG_AQ_BASE_HI, RNIC_REG_ACQ_BASE_LO,
        RNIC_REG_ACQ_BASE_HI, RNIC_REG_AQ_SIZE_LOG2, RNIC_REG_AQ_HEAD,
        RNIC_REG_ETH_CTRL, RNIC_REG_ETH_STATUS, RNIC_REG_ETH_MTU,
        RNIC_REG_ETH_IRQ_VECTOR, RNIC_REG_ETH_IRQ_MASK,
        RNIC_REG_ETH_MC_HASH_LO, RNIC_REG_ETH_MC_HASH_HI,
        RNIC_REG_ETH_TX_BASE_LO, RNIC_REG_ETH_TX_BASE_HI,
        RNIC_REG_ETH_TX_SIZE_LOG2, RNIC_REG_ETH_TX_TAIL, RNIC_REG_ETH_TX_HEAD,
        RNIC_REG_ETH_RX_BASE_LO, RNIC_REG_ETH_RX_BASE_HI,
        RNIC_REG_ETH_RX_SIZE_LOG2, RNIC_REG_ETH_RX_TAIL, RNIC_REG_ETH_RX_HEAD,
    };
    GArray *a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t i, v;

    for (i = 0; i < G_N_ELEMENTS(regs); i++) {
        v = rnic_reg_read(d, regs[i]);
        g_array_append_val(a, v);
    }
    for (i = 0; i < 2 * RNIC_STAT_COUNT; i++) {
        v = rnic_reg_read(d, RNIC_REG_STAT_BASE + 4 * i);
        g_array_append_val(a, v);
    }
    return a;
}

static void assert_regs_equal(GArray *x, GArray *y)
{
    g_assert_cmpmem(x->data, x->len * sizeof(uint32_t),
                    y->data, y->len * sizeof(uint32_t));
}

/* ---------------------------------------------------------------------- */
/* Every kind of object                                                   */
/* ---------------------------------------------------------------------- */

#define L2_PAGES    520         /* two leaves of a level-2 page list */

typedef struct World {
    TvPair p;                     /* ctx 0 (untagged): RC pair a <-> b */
    uint32_t ctx1, pd1, uctx, pdu, mru;
    TvCq *cqc, *cqd, *cqu, *cqud;
    TvSrq *srq;
    TvQp *c, *dq, *ud1, *ud2, *gsi;
    uint64_t bufc, bufd, bufu;
    uint32_t mrc, mrd;
    uint64_t contig, l2buf, fr_region;
    uint32_t mr_contig, mr_l2, fr_valid, fr_inval, fr_unused;
} World;

static uint32_t l2_page(uint32_t i)
{
    return (i * 7) % L2_PAGES;  /* 7 is coprime to 520: a permutation */
}

static uint32_t reg_mr_cmd(QRnic *d, struct rnic_admin_cmd *c)
{
    c->opcode = RNIC_CMD_REG_MR;
    return tv_cmd_ok(d, c);
}

/* Fast-register 'pages' pages of 'region' at iova under 'stag' via QP b. */
static void fast_reg(QRnic *d, World *w, uint32_t stag, uint64_t iova,
                     uint64_t region, uint32_t pages, uint64_t wr_id)
{
    struct rnic_sq_wqe x = tv_fast_reg_wqe(d, wr_id, stag, iova, region, pages,
                                           RNIC_ACCESS_LOCAL_WRITE |
                                           RNIC_ACCESS_REMOTE_WRITE |
                                           RNIC_ACCESS_REMOTE_READ);

    tv_post_send(d, w->p.b, &x, NULL, NULL);
    tv_expect_cqe(d, w->p.cqb, wr_id, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
}

static void world_init(QRnic *d, World *w)
{
    struct rnic_admin_cmd c;
    struct rnic_sq_wqe x;
    struct rnic_sge sg, rg;
    uint8_t gid2[16], gid3[16];
    uint64_t dir, leaf0, leaf1;
    uint32_t i;

    memset(w, 0, sizeof(*w));
    mig_pair_init(d, &w->p);

    /* a second network (VLAN 100): its own table, QPNs and an SRQ */
    w->ctx1 = tv_net_ctx(d, 100);
    qv_gid(d, 2, w->ctx1, 100, 1);
    qv_gid(d, 3, w->ctx1, 100, 2);
    qv_gid_bytes(gid2, 100, 1);
    qv_gid_bytes(gid3, 100, 2);
    w->pd1 = tv_pd(d, w->ctx1, 0);
    w->cqc = tv_cq(d, 6, w->p.eq, 0);
    w->cqd = tv_cq(d, 6, w->p.eq, 0);
    w->srq = tv_srq(d, w->pd1, 5, 0, 0);
    w->c = tv_qp(d, RNIC_QPT_RC, w->pd1, w->cqc, w->cqc, NULL, 5, 0);
    w->dq = tv_qp(d, RNIC_QPT_RC, w->pd1, w->cqd, w->cqd, w->srq, 5, 0);
    tv_rc_connect(d, w->c, 2, gid3, w->dq->qpn);
    tv_rc_connect(d, w->dq, 3, gid2, w->c->qpn);
    w->bufc = qv_alloc(d, BUF_SIZE, 4096);
    w->bufd = qv_alloc(d, BUF_SIZE, 4096);
    w->mrc = tv_reg_mr(d, w->pd1, w->bufc, BUF_SIZE, ALL_RIGHTS, 0, NULL);
    w->mrd = tv_reg_mr(d, w->pd1, w->bufd, BUF_SIZE, ALL_RIGHTS, 0, NULL);

    /* UD pair and the GSI QP of context 0 */
    w->cqud = tv_cq(d, 5, RNIC_HANDLE_NONE, 0);
    w->ud1 = tv_qp(d, RNIC_QPT_UD, w->p.pd, w->cqud, w->cqud, NULL, 4, 0);
    w->ud2 = tv_qp(d, RNIC_QPT_UD, w->p.pd, w->cqud, w->cqud, NULL, 4, 0);
    w->gsi = tv_qp(d, RNIC_QPT_GSI, w->p.pd, w->cqud, w->cqud, NULL, 3, 0);
    g_assert_cmpuint(w->gsi->qpn, ==, 1);
    tv_ud_ready(d, w->ud1, 0x1111);
    tv_ud_ready(d, w->ud2, 0x2222);
    tv_ud_ready(d, w->gsi, 0x80010000);

    /* a user context owning a PD, a CQ and an MR */
    w->uctx = tv_uctx(d);
    w->pdu = tv_pd(d, w->p.ctx, w->uctx);
    w->cqu = tv_cq(d, 4, w->p.eq, w->uctx);
    /* its doorbell page arms it */
    tv_cq_arm(d, w->cqu, RNIC_DB_ARM_NEXT);
    w->bufu = qv_alloc(d, 4096, 4096);
    c = (struct rnic_admin_cmd) { 0 };
    c.uctx = cpu_to_le32(w->uctx);
    c.mr.iova = cpu_to_le64(0x40000000);
    c.mr.length = cpu_to_le64(4096);
    c.mr.pbl_addr = cpu_to_le64(w->bufu);
    c.mr.pd = cpu_to_le32(w->pdu);
    c.mr.npages = cpu_to_le32(1);
    c.mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
    c.mr.page_shift = 12;
    c.mr.levels = 0;
    c.mr.key = 0x77;
    w->mru = reg_mr_cmd(d, &c);

    /* a contiguous region (level 0) at iova 0x300000 */
    w->contig = qv_alloc(d, 2 * 4096, 4096);
    c = (struct rnic_admin_cmd) { 0 };
    c.mr.iova = cpu_to_le64(0x300000);
    c.mr.length = cpu_to_le64(8192);
    c.mr.pbl_addr = cpu_to_le64(w->contig);
    c.mr.pd = cpu_to_le32(w->p.pd);
    c.mr.npages = cpu_to_le32(2);
    c.mr.access = cpu_to_le32(ALL_RIGHTS);
    c.mr.page_shift = 12;
    c.mr.levels = 0;
    c.mr.key = 0x10;
    w->mr_contig = reg_mr_cmd(d, &c);

    /* a two-level page list over permuted pages at iova 0x5000000 */
    w->l2buf = qv_alloc(d, (uint64_t)L2_PAGES * 4096, 4096);
    dir = qv_alloc(d, 16, 8);
    leaf0 = qv_alloc(d, 4096, 4096);
    leaf1 = qv_alloc(d, 4096, 4096);
    qtest_writeq(rnic_qts(d), dir, leaf0);
    qtest_writeq(rnic_qts(d), dir + 8, leaf1);
    for (i = 0; i < L2_PAGES; i++) {
        uint64_t leaf = i < 512 ? leaf0 : leaf1;

        qtest_writeq(rnic_qts(d), leaf + 8 * (i % 512),
                     w->l2buf + 4096ull * l2_page(i));
    }
    c = (struct rnic_admin_cmd) { 0 };
    c.mr.iova = cpu_to_le64(0x5000000);
    c.mr.length = cpu_to_le64((uint64_t)L2_PAGES * 4096);
    c.mr.pbl_addr = cpu_to_le64(dir);
    c.mr.pd = cpu_to_le32(w->p.pd);
    c.mr.npages = cpu_to_le32(L2_PAGES);
    c.mr.access = cpu_to_le32(ALL_RIGHTS);
    c.mr.page_shift = 12;
    c.mr.levels = 2;
    c.mr.key = 0x20;
    w->mr_l2 = reg_mr_cmd(d, &c);

    /* fast-reg MRs: registered, registered then invalidated, never used */
    w->fr_region = qv_alloc(d, 4 * 4096, 4096);
    w->fr_valid = tv_alloc_mr(d, w->p.pd, 4, 0x01);
    w->fr_inval = tv_alloc_mr(d, w->p.pd, 4, 0x02);
    w->fr_unused = tv_alloc_mr(d, w->p.pd, 8, 0x03);
    w->fr_valid = RNIC_STAG(RNIC_STAG_INDEX(w->fr_valid), 0x42);
    fast_reg(d, w, w->fr_valid, 0x7000000, w->fr_region, 4, 51);
    w->fr_inval = RNIC_STAG(RNIC_STAG_INDEX(w->fr_inval), 0x43);
    fast_reg(d, w, w->fr_inval, 0x8000000, w->fr_region, 2, 52);
    x = tv_wqe(53, RNIC_WR_LOCAL_INV, 0);
    x.imm_or_inv = w->fr_inval;
    tv_post_send(d, w->p.b, &x, NULL, NULL);
    tv_expect_cqe(d, w->p.cqb, 53, RNIC_WC_LOCAL_INV, RNIC_WC_SUCCESS);

    /* the Ethernet function's rings (configured, idle) */
    rnic_reg_write(d, RNIC_REG_ETH_TX_BASE_LO,
                   (uint32_t)qv_alloc(d, 4096, 4096));
    rnic_reg_write(d, RNIC_REG_ETH_TX_SIZE_LOG2, 6);
    rnic_reg_write(d, RNIC_REG_ETH_RX_BASE_LO,
                   (uint32_t)qv_alloc(d, 4096, 4096));
    rnic_reg_write(d, RNIC_REG_ETH_RX_SIZE_LOG2, 6);
    rnic_reg_write(d, RNIC_REG_ETH_IRQ_VECTOR, 3);
    rnic_reg_write(d, RNIC_REG_ETH_CTRL, RNIC_ETH_TX_EN | RNIC_ETH_RX_EN |
                   RNIC_ETH_BROADCAST);

    /* traffic everywhere: the PSNs move */
    mig_pair_traffic(d, &w->p, 1);
    for (i = 0; i < 2; i++) {
        rg = tv_sge(w->bufd + 4096 * i, 4096, w->mrd);
        tv_post_srq(d, w->srq, 600 + i, &rg, 1);
    }
    tv_fill(d, w->bufc, 2000, 77);
    sg = tv_sge(w->bufc, 2000, w->mrc);
    x = tv_wqe(61, RNIC_WR_SEND, 1);
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 61, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, w->cqd, 600, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    /* two send completions of a stay unconsumed across the migration */
    for (i = 0; i < 2; i++) {
        sg = tv_sge(w->p.bufa, 100, w->p.mra);
        x = tv_wqe(70 + i, RNIC_WR_RDMA_WRITE, 1);
        x.rdma.remote_addr = w->p.bufb + 60000;
        x.rdma.rkey = w->p.mrb;
        tv_post_send(d, w->p.a, &x, &sg, NULL);
    }
    /* b's CQ armed: the first completion after the migration notifies */
    tv_cq_arm(d, w->p.cqb, RNIC_DB_ARM_NEXT);
    qtest_clock_step(rnic_qts(d), 1000000);
}

static void world_free(World *w)
{
    tv_pair_fini(&w->p);
    g_free(w->cqc);
    g_free(w->cqd);
    g_free(w->cqu);
    g_free(w->cqud);
    g_free(w->srq);
    g_free(w->c);
    g_free(w->dq);
    g_free(w->ud1);
    g_free(w->ud2);
    g_free(w->gsi);
}

/* Everything a peer or the driver could do, on the destination. */
static void world_check(QRnic *d, World *w)
{
    struct rnic_sq_wqe x;
    struct rnic_sge sg, rg;
    struct rnic_cqe c;
    struct rnic_eqe e;
    uint64_t v;
    uint32_t i, stag;
    uint8_t page[4096], want[4096];

    /* the completions the driver had not consumed are still there */
    tv_expect_cqe(d, w->p.cqa, 70, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_expect_cqe(d, w->p.cqa, 71, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    g_assert_false(tv_poll(d, w->p.cqa, &c, 1));

    /* the rkeys issued before the migration: WRITE, READ, SEND, atomic */
    mig_pair_traffic(d, &w->p, 2);
    g_assert_true(rnic_msix_wait(d, VEC_COMP));      /* b's CQ was armed */
    qtest_memread(rnic_qts(d), w->p.eq_ring, &e, sizeof(e));
    g_assert_cmpuint(e.type, ==, RNIC_EQE_COMPLETION);
    qtest_writeq(rnic_qts(d), w->p.bufb + 64, 1000);
    sg = tv_sge(w->p.bufa + 64, 8, w->p.mra);
    x = tv_wqe(80, RNIC_WR_ATOMIC_FETCH_ADD, 1);
    x.atomic.remote_addr = w->p.bufb + 64;
    x.atomic.rkey = w->p.mrb;
    x.atomic.compare_add = 5;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 80, RNIC_WC_FETCH_ADD, RNIC_WC_SUCCESS);
    g_assert_cmpuint(qtest_readq(rnic_qts(d), w->p.bufa + 64), ==, 1000);
    g_assert_cmpuint(qtest_readq(rnic_qts(d), w->p.bufb + 64), ==, 1005);

    /* the two-level region: a READ across page boundaries */
    for (i = 0; i < 3; i++) {
        tv_fill(d, w->l2buf + 4096ull * l2_page(100 + i), 4096, 30 + i);
    }
    sg = tv_sge(w->p.bufa + 8192, 3 * 4096 - 200, w->p.mra);
    x = tv_wqe(81, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = 0x5000000 + 100 * 4096 + 100;
    x.rdma.rkey = w->mr_l2;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 81, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    qtest_memread(rnic_qts(d), w->p.bufa + 8192 + 4096 - 100, page, 4096);
    qtest_memread(rnic_qts(d), w->l2buf + 4096ull * l2_page(101), want, 4096);
    g_assert_cmpmem(page, 4096, want, 4096);

    /* the contiguous region */
    tv_fill(d, w->contig, 8192, 40);
    sg = tv_sge(w->p.bufa + 30000, 8192, w->p.mra);
    x = tv_wqe(82, RNIC_WR_RDMA_READ, 1);
    x.rdma.remote_addr = 0x300000;
    x.rdma.rkey = w->mr_contig;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 82, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    tv_assert_same(d, w->p.bufa + 30000, w->contig, 8192);

    /* the fast-registered rkey */
    tv_fill(d, w->p.bufa, 6000, 50);
    sg = tv_sge(w->p.bufa, 6000, w->p.mra);
    x = tv_wqe(83, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = 0x7000000 + 3000;
    x.rdma.rkey = w->fr_valid;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 83, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, w->p.bufa, w->fr_region + 3000, 6000);

    /* VLAN 100: the SRQ's second receive takes a SEND */
    tv_fill(d, w->bufc, 3000, 60);
    sg = tv_sge(w->bufc, 3000, w->mrc);
    x = tv_wqe(84, RNIC_WR_SEND, 1);
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 84, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_wait_cqe(d, w->cqd);
    g_assert_cmpuint(c.wr_id, ==, 601);
    g_assert_cmpuint(c.qp_num, ==, w->dq->qpn);
    tv_assert_same(d, w->bufc, w->bufd + 4096, 3000);

    /* UD, by QPN and Q_Key */
    rg = tv_sge(w->p.bufb + 50000, 40 + 500, w->p.mrb);
    tv_post_recv(d, w->ud2, 90, &rg, 1);
    tv_fill(d, w->p.bufa + 50000, 500, 70);
    sg = tv_sge(w->p.bufa + 50000, 500, w->p.mra);
    x = tv_wqe(91, RNIC_WR_SEND, 1);
    x.ud.remote_qpn = w->ud2->qpn;
    x.ud.remote_qkey = 0x2222;
    qv_gid_bytes(x.ud.av.dgid, 0, 2);
    x.ud.av.hop_limit = 64;
    tv_post_send(d, w->ud1, &x, &sg, NULL);
    for (i = 0; i < 2; i++) {
        /* one CQ for both: the receive and the send, in either order */
        c = tv_wait_cqe(d, w->cqud);
        g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
        if (c.wr_id == 90) {
            g_assert_cmpuint(c.src_qp, ==, w->ud1->qpn);
        } else {
            g_assert_cmpuint(c.wr_id, ==, 91);
        }
    }
    tv_assert_same(d, w->p.bufa + 50000, w->p.bufb + 50000 + 40, 500);

    /* the admin queue goes on; a new STag collides with none */
    v = qv_alloc(d, 4096, 4096);
    stag = tv_reg_mr(d, w->p.pd, v, 4096, ALL_RIGHTS, 0, NULL);
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->p.mra));
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->p.mrb));
    g_assert_cmpuint(RNIC_STAG_INDEX(stag), !=, RNIC_STAG_INDEX(w->mr_l2));

    /* still per network: a key of VLAN 0 means nothing on VLAN 100 */
    sg = tv_sge(w->bufc, 100, w->mrc);
    x = tv_wqe(92, RNIC_WR_RDMA_WRITE, 1);
    x.rdma.remote_addr = w->p.bufb;
    x.rdma.rkey = w->p.mrb;
    tv_post_send(d, w->c, &x, &sg, NULL);
    tv_expect_cqe(d, w->cqc, 92, 0, RNIC_WC_REM_ACCESS_ERR);
    /* and the invalidated fast-reg rkey stayed invalid */
    x = tv_wqe(93, RNIC_WR_RDMA_WRITE, 1);
    sg = tv_sge(w->p.bufa, 100, w->p.mra);
    x.rdma.remote_addr = 0x8000000;
    x.rdma.rkey = w->fr_inval;
    tv_post_send(d, w->p.a, &x, &sg, NULL);
    tv_expect_cqe(d, w->p.cqa, 93, 0, RNIC_WC_REM_ACCESS_ERR);
}

static void test_objects(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    World w;
    g_autofree char *before = NULL, *after = NULL;
    g_autoptr(GArray) regs_before = NULL;
    g_autoptr(GArray) regs_after = NULL;

    rnic_reg_write(&vm->d, RNIC_REG_SCRATCH, 0x0badcafe);
    world_init(&vm->d, &w);
    before = mig_tables(vm);
    regs_before = regs_snapshot(&vm->d);
    g_test_message("tables before:");
    g_test_message("%s", before);
    /* what the tables must show */
    g_assert_nonnull(strstr(before, "net ctx=1 vlan=100 mrs=2 qps=2"));
    g_assert_nonnull(strstr(before, "owner=1 access=0x01 iova=0x40000000"));
    g_assert_nonnull(strstr(before, "type=GSI state=RTS"));
    g_assert_nonnull(strstr(before, "state=invalid type=fast-reg max-pages=4"));

    vm = mig_migrate(vm, NULL, true);

    after = mig_tables(vm);
    g_assert_cmpstr(after, ==, before);
    regs_after = regs_snapshot(&vm->d);
    assert_regs_equal(regs_before, regs_after);
    world_check(&vm->d, &w);
    world_free(&w);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* The memory window                                                      */
/* ---------------------------------------------------------------------- */

static uint8_t window_rdma(QRnic *d, TvPair *p, uint8_t op, uint64_t id,
                           uint32_t rkey, uint64_t va, uint32_t len)
{
    struct rnic_sq_wqe w = tv_wqe(id, op, 1);
    struct rnic_sge s = tv_sge(p->bufa + 16384, len, p->mra);

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    tv_post_send(d, p->a, &w, &s, NULL);
    return tv_wait_cqe(d, p->cqa).status;
}

/*
 * A window on memory-backend-ram (the destination's starts empty: its
 * bytes can only come from the migration) with a region allowing PLAIN,
 * READONLY and MGMT: after the switchover the same STag reads what the
 * source wrote, its READONLY rkey still refuses a write, its management
 * key still works.
 */
static void test_window(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE ",scm=w0 -object memory-backend-ram,"
                         "id=w0,size=1M");
    g_auto(TvPair) p = { 0 };
    uint32_t sems = 1u << RNIC_SCM_SEM_PLAIN | 1u << RNIC_SCM_SEM_READONLY |
                    1u << RNIC_SCM_SEM_MGMT;
    uint32_t stag, plain;
    uint8_t want[4096], got[4096];

    mig_pair_init(&vm->d, &p);
    stag = tv_reg_scm(&vm->d, p.pd, 0x7000, 0x20000, 0x10000, ALL_RIGHTS, sems,
                      RNIC_SCM_SEM_PLAIN << RNIC_SCM_KEY_SEM_SHIFT | 9, NULL);
    plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    tv_fill(&vm->d, p.bufa + 16384, sizeof(want), 77);
    qtest_memread(vm->qts, p.bufa + 16384, want, sizeof(want));
    g_assert_cmpuint(window_rdma(&vm->d, &p, RNIC_WR_RDMA_WRITE, 1, plain,
                                 0x7100, sizeof(want)), ==, RNIC_WC_SUCCESS);

    vm = mig_migrate(vm, NULL, true);

    qtest_memset(vm->qts, p.bufa + 16384, 0, sizeof(got));
    g_assert_cmpuint(window_rdma(&vm->d, &p, RNIC_WR_RDMA_READ, 2, plain,
                                 0x7100, sizeof(got)), ==, RNIC_WC_SUCCESS);
    qtest_memread(vm->qts, p.bufa + 16384, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    g_assert_cmpuint(window_rdma(&vm->d, &p, RNIC_WR_RDMA_READ, 3,
                                 RNIC_SCM_STAG(stag, RNIC_SCM_SEM_MGMT),
                                 0x7000, sizeof(struct rnic_scm_status)), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(window_rdma(&vm->d, &p, RNIC_WR_RDMA_WRITE, 4,
                                 RNIC_SCM_STAG(stag, RNIC_SCM_SEM_READONLY),
                                 0x7100, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_fini(&p);
    mig_done(vm);
}

/* ---------------------------------------------------------------------- */
/* Multi-network PDs (ABI 1.1)                                            */
/* ---------------------------------------------------------------------- */

/*
 * A multi-network PD bound to VLAN 5 by two RC QPs, with an MR, a
 * registered fast-reg MR and a UD QP (in every context): the destination's
 * tables are the source's, replicas included, and the PD's rkey keeps
 * working on VLAN 5 and keeps failing on the untagged network.
 */
static void test_multi_net(void)
{
    MigVm *vm = mig_boot(MIG_DEVICE);
    QRnic *d = &vm->d;
    uint32_t ctx0, ctx5, mpd, pd0, mr, mr0, eq;
    uint8_t g5a[16], g5b[16], g0a[16], g0b[16];
    TvCq *cq;
    TvQp *qa, *qb, *ud, *q0a, *q0b;
    uint64_t buf;
    struct rnic_sq_wqe w;
    struct rnic_sge sg;
    g_autofree char *before = NULL, *after = NULL;

    ctx0 = tv_net_ctx(d, 0);
    ctx5 = tv_net_ctx(d, 5);
    qv_gid(d, 0, ctx0, 0, 1);
    qv_gid(d, 1, ctx0, 0, 2);
    qv_gid(d, 2, ctx5, 5, 1);
    qv_gid(d, 3, ctx5, 5, 2);
    qv_gid_bytes(g0a, 0, 1);
    qv_gid_bytes(g0b, 0, 2);
    qv_gid_bytes(g5a, 5, 1);
    qv_gid_bytes(g5b, 5, 2);
    mpd = tv_pd(d, RNIC_PD_MULTI_NET, 0);
    pd0 = tv_pd(d, ctx0, 0);
    eq = tv_eq(d, 6, VEC_COMP, 0, NULL);
    cq = tv_cq(d, 7, eq, 0);
    buf = qv_alloc(d, 8 * 4096, 4096);
    mr = tv_reg_mr(d, mpd, buf, 4 * 4096, ALL_RIGHTS, 0, NULL);
    mr0 = tv_reg_mr(d, pd0, buf + 4 * 4096, 4 * 4096, ALL_RIGHTS, 0, NULL);
    tv_alloc_mr(d, mpd, 4, 0x51);     /* replicated while invalid too */
    qa = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 4, 0);
    qb = tv_qp(d, RNIC_QPT_RC, mpd, cq, cq, NULL, 4, 0);
    tv_rc_connect(d, qa, 2, g5b, qb->qpn);
    tv_rc_connect(d, qb, 3, g5a, qa->qpn);
    ud = tv_qp(d, RNIC_QPT_UD, mpd, cq, cq, NULL, 4, 0);
    tv_ud_ready(d, ud, 0x2222);
    before = mig_tables(vm);
    g_test_message("tables before:");
    g_test_message("%s", before);
    g_assert_nonnull(strstr(before, " replica\n"));
    g_assert_nonnull(strstr(before, "net ctx=multi"));
    g_assert_nonnull(strstr(before, "vlan=5 mrs=2 qps=3"));

    vm = mig_migrate(vm, NULL, true);
    d = &vm->d;

    after = mig_tables(vm);
    g_assert_cmpstr(after, ==, before);
    /* VLAN 5: the PD's rkey writes */
    tv_fill(d, buf, 4096, 0x77);
    sg = tv_sge(buf, 4096, mr);
    w = tv_wqe(71, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf + 2 * 4096;
    w.rdma.rkey = mr;
    tv_post_send(d, qa, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 71, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    tv_assert_same(d, buf, buf + 2 * 4096, 4096);
    /* untagged: unknown there, also after the migration */
    q0a = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    q0b = tv_qp(d, RNIC_QPT_RC, pd0, cq, cq, NULL, 4, 0);
    tv_rc_connect(d, q0a, 0, g0b, q0b->qpn);
    tv_rc_connect(d, q0b, 1, g0a, q0a->qpn);
    sg = tv_sge(buf + 4 * 4096, 16, mr0);
    w = tv_wqe(72, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = buf;
    w.rdma.rkey = mr;
    tv_post_send(d, q0a, &w, &sg, NULL);
    tv_expect_cqe(d, cq, 72, 0, RNIC_WC_REM_ACCESS_ERR);
    g_free(cq);
    g_free(qa);
    g_free(qb);
    g_free(ud);
    g_free(q0a);
    g_free(q0b);
    mig_done(vm);
}

static void rnic_migration_objects_register_tests(void)
{
    qtest_add_func("rnic-migration/objects", test_objects);
    qtest_add_func("rnic-migration/multi-net", test_multi_net);
    qtest_add_func("rnic-migration/window", test_window);
}

libqos_init(rnic_migration_objects_register_tests);
