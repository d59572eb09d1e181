/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: mapping tables, STag allocation, page lists, DMA
 * translation, fast-register / invalidate (local and remote), the
 * registration log.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

static struct rnic_admin_cmd reg_cmd(uint32_t pd, uint64_t iova, uint64_t len,
                                     uint64_t pbl, uint32_t npages,
                                     uint8_t levels, uint32_t access)
{
    struct rnic_admin_cmd c;

    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_REG_MR;
    c.mr.iova = iova;
    c.mr.length = len;
    c.mr.pbl_addr = pbl;
    c.mr.pd = pd;
    c.mr.npages = npages;
    c.mr.access = access;
    c.mr.page_shift = 12;
    c.mr.levels = levels;
    c.mr.key = 0x33;
    return c;
}

static void test_stag_allocation(void)
{
    TvPair *p = tv_pair_new(NULL);
    TvPair *q = tv_pair_new(NULL);
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    uint32_t prev = 0, sequential = 0, same_as_q = 0;
    int i;

    for (i = 0; i < 200; i++) {
        uint32_t s = tv_reg_mr(p->d, p->pd, p->bufa, 4096, TV_ACCESS_ALL, 0,
                               NULL);
        uint32_t t = tv_reg_mr(q->d, q->pd, q->bufa, 4096, TV_ACCESS_ALL, 0,
                               NULL);

        g_assert_cmphex(RNIC_STAG_KEY(s), ==, TV_MR_KEY);
        g_assert_cmpuint(RNIC_STAG_INDEX(s), !=, 0);
        g_assert_false(g_hash_table_contains(seen,
                                             GUINT_TO_POINTER(RNIC_STAG_INDEX(s))));
        g_hash_table_add(seen, GUINT_TO_POINTER(RNIC_STAG_INDEX(s)));
        if (RNIC_STAG_INDEX(s) == RNIC_STAG_INDEX(prev) + 1) {
            sequential++;
        }
        if (s == t) {
            same_as_q++;
        }
        prev = s;
    }
    /* unpredictable: neither sequential nor the same on another device */
    g_assert_cmpuint(sequential, <, 10);
    g_assert_cmpuint(same_as_q, <, 10);
    g_hash_table_destroy(seen);
    tv_pair_free(p);
    tv_pair_free(q);
}

static void test_translate(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    RnicEngine *e = p->d->engine;
    RnicNetCtx *ctx = rnic_netctx_lookup(e, p->ctx);
    RnicPd *pd = rnic_pd_lookup(e, p->pd);
    RnicPd *pd2 = rnic_pd_lookup(e, tv_pd(p->d, p->ctx, 0));
    uint32_t ro = tv_reg_mr(p->d, p->pd, p->bufb + 100, 5000,
                            RNIC_ACCESS_REMOTE_READ, 0, NULL);
    RnicDmaSeg segs[8];
    uint32_t nsegs = 0;
    RnicMr *mr;

    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa, TV_BUF_SIZE,
                                    RNIC_ACCESS_REMOTE_WRITE, &mr), ==,
                    RNIC_XLATE_OK);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa + TV_BUF_SIZE - 1,
                                    1, 0, &mr), ==, RNIC_XLATE_OK);
    /* one byte outside, either end */
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa + TV_BUF_SIZE,
                                    1, 0, &mr), ==, RNIC_XLATE_BOUNDS);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa - 1, 2, 0, &mr),
                    ==, RNIC_XLATE_BOUNDS);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa, TV_BUF_SIZE + 1,
                                    0, &mr), ==, RNIC_XLATE_BOUNDS);
    g_assert_null(mr);
    /* va + len wrapping around */
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, p->bufa + 8,
                                    UINT64_MAX - 4, 0, &mr), ==,
                    RNIC_XLATE_BOUNDS);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd, UINT64_MAX - 4, 16, 0,
                                    &mr), ==, RNIC_XLATE_BOUNDS);
    /* keys, PDs, rights */
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra + 1, pd, p->bufa, 1, 0, &mr),
                    ==, RNIC_XLATE_KEY);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra ^ 0x800, pd, p->bufa, 1, 0,
                                    &mr), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(rnic_mr_resolve(ctx, 0, pd, 0, 1, 0, &mr), ==,
                    RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(rnic_mr_resolve(ctx, p->mra, pd2, p->bufa, 1, 0, &mr), ==,
                    RNIC_XLATE_PD);
    g_assert_cmpint(rnic_mr_resolve(ctx, ro, pd, p->bufb + 100, 5000,
                                    RNIC_ACCESS_REMOTE_READ, &mr), ==,
                    RNIC_XLATE_OK);
    g_assert_cmpint(rnic_mr_resolve(ctx, ro, pd, p->bufb + 100, 1,
                                    RNIC_ACCESS_REMOTE_WRITE, &mr), ==,
                    RNIC_XLATE_ACCESS);
    g_assert_cmpint(rnic_mr_resolve(ctx, ro, pd, p->bufb + 100, 1,
                                    RNIC_ACCESS_LOCAL_WRITE, &mr), ==,
                    RNIC_XLATE_ACCESS);
    /*
     * the physical side: iova 100 bytes into a page, 5000 bytes: two runs
     * merged into one because tv_reg_mr's pages are contiguous
     */
    g_assert_cmpint(rnic_mr_resolve(ctx, ro, pd, p->bufb + 4000, 1000,
                                    RNIC_ACCESS_REMOTE_READ, &mr), ==,
                    RNIC_XLATE_OK);
    g_assert_true(rnic_mr_segs(mr, p->bufb + 4000, 1000, segs, &nsegs, 8));
    g_assert_cmpuint(nsegs, ==, 1);
    g_assert_cmphex(segs[0].addr, ==, p->bufb + 4000);
    g_assert_cmpuint(segs[0].len, ==, 1000);
}

/* A level-2 list of scattered pages: data lands where the list says. */
static void test_level2_scattered(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint32_t npages = 700, i;
    uint64_t pool = test_alloc(h, (uint64_t)npages * 4096, 4096);
    uint64_t dir = test_alloc(h, 2 * 8, 8);
    uint64_t leaf[2];
    uint64_t iova = 0x7f0000000000ull + 0x123;
    uint64_t len = (uint64_t)(npages - 1) * 4096;
    struct rnic_admin_cmd c;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s;
    uint32_t stag;
    uint8_t *src;

    leaf[0] = test_alloc(h, 4096, 4096);
    leaf[1] = test_alloc(h, 4096, 4096);
    /* page i of the region is pool page (npages - 1 - i): reversed */
    for (i = 0; i < npages; i++) {
        uint64_t *l = test_ptr(h, leaf[i / 512]);

        l[i % 512] = GUINT64_TO_LE(pool + (uint64_t)(npages - 1 - i) * 4096);
    }
    ((uint64_t *)test_ptr(h, dir))[0] = GUINT64_TO_LE(leaf[0]);
    ((uint64_t *)test_ptr(h, dir))[1] = GUINT64_TO_LE(leaf[1]);
    c = reg_cmd(p->pd, iova, len, dir, npages, 2, TV_ACCESS_ALL);
    stag = tv_cmd_ok(h, &c);
    src = test_ptr(h, p->bufa);
    for (i = 0; i < 10000; i++) {
        src[i] = i * 13;
    }
    s = tv_sge(p->bufa, 10000, p->mra);
    w.rdma.remote_addr = iova + 4096 * 5 + 10;
    w.rdma.rkey = stag;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_SUCCESS);
    /*
     * byte k of the WRITE is region offset 5*4096+10+k, i.e. page
     * (0x123 + offset) / 4096 at (0x123 + offset) % 4096
     */
    for (i = 0; i < 10000; i++) {
        uint64_t off = 0x123 + 4096 * 5 + 10 + i;
        uint64_t page = pool + (npages - 1 - off / 4096) * 4096;

        g_assert_cmpuint(*(uint8_t *)test_ptr(h, page + off % 4096), ==,
                         (uint8_t)(i * 13));
    }
}

static void test_level0_contiguous(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint64_t region = test_alloc(h, 3 * 4096, 4096);
    struct rnic_admin_cmd c = reg_cmd(p->pd, 0x1000 + 5, 3 * 4096 - 5, region,
                                      3, 0, TV_ACCESS_ALL);
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(p->bufa, 3 * 4096 - 5, p->mra);
    uint32_t stag = tv_cmd_ok(h, &c);

    memset(test_ptr(h, region), 0x77, 3 * 4096);
    w.rdma.remote_addr = 0x1005;
    w.rdma.rkey = stag;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(h, p->bufa), 3 * 4096 - 5,
                    test_ptr(h, region + 5), 3 * 4096 - 5);
}

static void test_bad_registrations(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint64_t pbl = test_alloc(h, 8 * 4, 8);
    uint64_t *pages = test_ptr(h, pbl);
    struct rnic_admin_cmd c;
    unsigned errors;
    int i;

    for (i = 0; i < 4; i++) {
        pages[i] = GUINT64_TO_LE(p->bufb + i * 4096);
    }
    c = reg_cmd(p->pd, 0x10000, 4 * 4096, pbl, 4, 1, TV_ACCESS_ALL);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);

#define EXPECT_REG(st, ...) do { \
        c = reg_cmd(p->pd, 0x10000, 4 * 4096, pbl, 4, 1, TV_ACCESS_ALL); \
        __VA_ARGS__; \
        errors = h->guest_errors; \
        g_assert_cmpuint(tv_cmd(h, &c).status, ==, (st)); \
        g_assert_cmpuint(h->guest_errors, >, errors); \
    } while (0)

    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.npages = 3);           /* too few */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.npages = 5);           /* too many */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.iova = 0x10001);       /* needs 5 */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.length = 0);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.length = RNIC_MR_MAX_SIZE + 1);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.iova = UINT64_MAX - 100);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.page_shift = 11);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.page_shift = 31);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.levels = 3);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.access = 0x400);
    /* guest RAM is volatile: persistence is refused, not a mistake */
    c = reg_cmd(p->pd, 0x10000, 4 * 4096, pbl, 4, 1,
                RNIC_ACCESS_FLUSH_PERSISTENT);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NOT_SUPPORTED);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.access = RNIC_ACCESS_REMOTE_WRITE);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.access = RNIC_ACCESS_REMOTE_ATOMIC);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.pbl_addr = pbl + 4);   /* misaligned */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.levels = 0; c.mr.pbl_addr = 0x100);
    EXPECT_REG(RNIC_ST_DMA_ERROR, c.mr.pbl_addr = h->ram_size - 16);
    EXPECT_REG(RNIC_ST_DMA_ERROR, c.mr.pbl_addr = 1ull << 50);
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.kind = 7);
    EXPECT_REG(RNIC_ST_BAD_HANDLE, c.mr.pd = 999);
    EXPECT_REG(RNIC_ST_PERMISSION, c.uctx = 5);
    /* a page that is not page aligned */
    pages[2] = GUINT64_TO_LE(p->bufb + 2 * 4096 + 8);
    EXPECT_REG(RNIC_ST_BAD_PARAM, (void)0);
    pages[2] = GUINT64_TO_LE(p->bufb + 2 * 4096);
    /* a contiguous region that wraps the address space */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.levels = 0;
               c.mr.pbl_addr = 0xffffffffffffe000ull);
    /* a level-2 directory whose leaf is not aligned */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.levels = 2;
               pages[0] = GUINT64_TO_LE(p->bufb + 8));
    pages[0] = GUINT64_TO_LE(p->bufb);
    /* page lists longer than the device takes */
    EXPECT_REG(RNIC_ST_BAD_PARAM, c.mr.npages = RNIC_MR_MAX_PAGES + 1;
               c.mr.length = (uint64_t)(RNIC_MR_MAX_PAGES + 1) * 4096);
    /* a mapped STag with a page list; a window this device does not have */
    c = reg_cmd(p->pd, 0x10000, 4 * 4096, pbl, 4, 1, TV_ACCESS_ALL);
    c.mr.kind = RNIC_MR_KIND_MAPPED;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.kind = RNIC_MR_KIND_SCM;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_NOT_SUPPORTED);
    /* storage semantics are for the window only */
    c = reg_cmd(p->pd, 0x10000, 4 * 4096, pbl, 4, 1, TV_ACCESS_ALL);
    c.mr.sems = 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
#undef EXPECT_REG
}

static void test_table_full(void)
{
    RnicEngineConfig cfg;
    TvPair *p;
    uint8_t st;
    int i;

    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 6;
    p = tv_pair_new(&cfg);              /* registers 2 */
    for (i = 0; i < 4; i++) {
        g_assert_cmpuint(tv_reg_mr(p->d, p->pd, p->bufa, 4096, 0, 0, &st), !=,
                         0);
    }
    g_assert_cmpuint(tv_reg_mr(p->d, p->pd, p->bufa, 4096, 0, 0, &st), ==, 0);
    g_assert_cmpuint(st, ==, RNIC_ST_NO_RESOURCES);
    tv_pair_free(p);
}

static void test_dereg(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    struct rnic_admin_cmd d = { .opcode = RNIC_CMD_DEALLOC_PD };
    uint32_t pd2 = tv_pd(h, p->ctx, 0);
    uint32_t stag = tv_reg_mr(h, pd2, p->bufb, 4096, TV_ACCESS_ALL, 0, NULL);
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);

    d.destroy.handle = pd2;
    g_assert_cmpuint(tv_cmd(h, &d).status, ==, RNIC_ST_BUSY);
    c.destroy.handle = stag ^ 1;
    c.destroy.net_ctx = p->ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.destroy.handle = stag;
    c.destroy.net_ctx = p->ctx + 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.destroy.net_ctx = p->ctx;
    c.uctx = tv_uctx(h);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    c.uctx = 0;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(tv_cmd(h, &d).status, ==, RNIC_ST_OK);
    /* a deregistered rkey no longer works */
    c.destroy.handle = p->mrb;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_ACCESS_ERR);
}

static uint8_t dereg_flags(TestHost *h, uint32_t stag, uint32_t ctx,
                           uint32_t flags)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };

    c.destroy.handle = stag;
    c.destroy.net_ctx = ctx;
    c.destroy.flags = flags;
    return tv_cmd(h, &c).status;
}

/*
 * ABI 1.1 DEREG_MR RNIC_DEREG_ANY_KEY: a fast-reg MR whose REG_MR work
 * request was flushed keeps its old key while the consumer holds the new
 * one; the index alone deregisters it. Not for ordinary MRs.
 */
static void test_dereg_any_key(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint32_t stag = tv_alloc_mr(h, p->pd, 4, 0x40);
    uint32_t newkey = RNIC_STAG(RNIC_STAG_INDEX(stag), 0x41);
    struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };
    struct rnic_sq_wqe w = tv_wqe(7, RNIC_WR_REG_MR, 0);
    struct rnic_cqe c;

    g_assert_cmphex(test_reg_read(h, RNIC_REG_CAPS_LO) &
                    RNIC_CAP_DEREG_ANY_KEY, ==, RNIC_CAP_DEREG_ANY_KEY);
    /* the REG_MR WR with the new key is flushed: the device keeps 0x40 */
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    w.reg.stag = newkey;
    tv_post_send(h, p->a, &w, NULL, NULL);
    c = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(c.status, ==, RNIC_WC_WR_FLUSH_ERR);
    g_assert_cmpuint(dereg_flags(h, newkey, p->ctx, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(dereg_flags(h, newkey, p->ctx, 0x2), ==,
                     RNIC_ST_BAD_PARAM);
    /* an ordinary MR keeps needing its exact STag */
    g_assert_cmpuint(dereg_flags(h, p->mra ^ 1, p->ctx, RNIC_DEREG_ANY_KEY),
                     ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(dereg_flags(h, newkey, p->ctx, RNIC_DEREG_ANY_KEY), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(dereg_flags(h, stag, p->ctx, RNIC_DEREG_ANY_KEY), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(dereg_flags(h, p->mra, p->ctx, RNIC_DEREG_ANY_KEY), ==,
                     RNIC_ST_OK);
}

/*
 * F10: fast registration names guest-physical pages, so ALLOC_MR and the
 * REG_MR work request are the kernel's only: a user context's ALLOC_MR
 * is refused, and a REG_MR WQE on a user QP fails with a local QP
 * operation error without registering anything.
 */
static void test_fast_reg_kernel_only(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint32_t uctx = tv_uctx(h);
    uint32_t upd = tv_pd(h, p->ctx, uctx);
    TvCq *ucq = tv_cq(h, 6, RNIC_HANDLE_NONE, uctx);
    TvQp *uqp = tv_qp(h, RNIC_QPT_RC, upd, ucq, ucq, NULL, 5, uctx);
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR, .uctx = uctx };
    uint32_t kstag = tv_alloc_mr(h, p->pd, 4, 0x20);
    uint8_t gid[16];
    struct rnic_sq_wqe w;
    struct rnic_cqe cqe;

    c.mr.pd = upd;
    c.mr.npages = 4;
    c.mr.key = 0x21;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    tv_gid_bytes(gid, p->ctx, 2);
    tv_rc_connect(h, uqp, 0, gid, p->b->qpn);
    w = tv_fast_reg_wqe(h, 9, RNIC_STAG(RNIC_STAG_INDEX(kstag), 0x22),
                        0x9000, p->bufa, 1, TV_ACCESS_ALL);
    tv_post_send(h, uqp, &w, NULL, NULL);
    cqe = tv_poll_one(h, ucq);
    g_assert_cmphex(cqe.wr_id, ==, 9);
    g_assert_cmpuint(cqe.status, ==, RNIC_WC_LOC_QP_OP_ERR);
    /* nothing registered: the kernel's MR still has its key */
    g_assert_cmpuint(dereg_flags(h, kstag, p->ctx, 0), ==, RNIC_ST_OK);
    g_free(ucq);
    g_free(uqp);
}

static void test_fast_reg(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t stag = tv_alloc_mr(h, p->pd, 8, 0x10);
    uint32_t stag2 = RNIC_STAG(RNIC_STAG_INDEX(stag), 0x11);
    uint64_t target = test_alloc(h, 4 * 4096, 4096);
    struct rnic_sq_wqe w, fr;
    struct rnic_sge s = tv_sge(p->bufa, 4096, p->mra);
    struct rnic_cqe c;

    g_assert_cmphex(RNIC_STAG_KEY(stag), ==, 0x10);
    memset(test_ptr(h, p->bufa), 0xab, 4096);
    /* not registered yet: a remote write fails */
    w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x40000000;
    w.rdma.rkey = stag;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 1, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    h = p->d;
    stag = tv_alloc_mr(h, p->pd, 8, 0x10);
    stag2 = RNIC_STAG(RNIC_STAG_INDEX(stag), 0x11);
    target = test_alloc(h, 4 * 4096, 4096);
    s = tv_sge(p->bufa, 4096, p->mra);
    memset(test_ptr(h, p->bufa), 0xab, 4096);
    /* b registers 4 pages under a new key, on its own send queue */
    fr = tv_fast_reg_wqe(h, 2, stag2, 0x40000000, target, 4,
                         RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(h, p->b, &fr, NULL, NULL);
    c = tv_expect_status(h, p->cqb, 2, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_REG_MR);
    /* the old key is dead, the new one works */
    g_assert_cmpint(rnic_mr_resolve(rnic_netctx_lookup(h->engine, p->ctx),
                                    stag, NULL, 0x40000000, 1, 0,
                                    &(RnicMr *){ NULL }), ==, RNIC_XLATE_KEY);
    w = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x40000000 + 4096;
    w.rdma.rkey = stag2;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 3, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(h, target + 4096), 4096, test_ptr(h, p->bufa),
                    4096);
    /* registering again while valid: local protection error */
    fr = tv_fast_reg_wqe(h, 4, stag2, 0x40000000, target, 4,
                         RNIC_ACCESS_LOCAL_WRITE);
    tv_post_send(h, p->b, &fr, NULL, NULL);
    tv_expect_status(h, p->cqb, 4, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);
}

static void test_fast_reg_limits(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint32_t stag = tv_alloc_mr(h, p->pd, 2, 0x10);
    uint64_t target = test_alloc(h, 4 * 4096, 4096);
    /* more pages than allocated for */
    struct rnic_sq_wqe fr = tv_fast_reg_wqe(h, 1, stag, 0, target, 3, 0);
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };

    tv_post_send(h, p->b, &fr, NULL, NULL);
    tv_expect_status(h, p->cqb, 1, RNIC_WC_LOC_PROT_ERR);
    c.mr.pd = p->pd;
    c.mr.npages = 0;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.mr.npages = RNIC_MR_MAX_FAST_REG_PAGES + 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
}

static void test_local_inv(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t stag = tv_alloc_mr(h, p->pd, 4, 0x20);
    uint64_t target = test_alloc(h, 4 * 4096, 4096);
    struct rnic_sq_wqe fr = tv_fast_reg_wqe(h, 1, stag, 0x5000, target, 4,
                                            RNIC_ACCESS_LOCAL_WRITE |
                                            RNIC_ACCESS_REMOTE_READ);
    struct rnic_sq_wqe inv = tv_wqe(2, RNIC_WR_LOCAL_INV, 0);
    struct rnic_sq_wqe rd = tv_wqe(3, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(p->bufa, 100, p->mra);
    struct rnic_cqe c;

    tv_post_send(h, p->b, &fr, NULL, NULL);
    tv_expect_status(h, p->cqb, 1, RNIC_WC_SUCCESS);
    rd.rdma.remote_addr = 0x5000;
    rd.rdma.rkey = stag;
    tv_post_send(h, p->a, &rd, &s, NULL);
    tv_expect_status(h, p->cqa, 3, RNIC_WC_SUCCESS);
    /* wrong key: refused, QP in error */
    inv.imm_or_inv = stag ^ 0x3;
    tv_post_send(h, p->b, &inv, NULL, NULL);
    tv_expect_status(h, p->cqb, 2, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    h = p->d;
    stag = tv_alloc_mr(h, p->pd, 4, 0x20);
    target = test_alloc(h, 4 * 4096, 4096);
    fr = tv_fast_reg_wqe(h, 1, stag, 0x5000, target, 4,
                         RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ);
    tv_post_send(h, p->b, &fr, NULL, NULL);
    tv_expect_status(h, p->cqb, 1, RNIC_WC_SUCCESS);
    s = tv_sge(p->bufa, 100, p->mra);
    inv.imm_or_inv = stag;
    tv_post_send(h, p->b, &inv, NULL, NULL);
    c = tv_expect_status(h, p->cqb, 2, RNIC_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, RNIC_WC_LOCAL_INV);
    /* invalidated: a READ now fails */
    rd.rdma.remote_addr = 0x5000;
    rd.rdma.rkey = stag;
    tv_post_send(h, p->a, &rd, &s, NULL);
    tv_expect_status(h, p->cqa, 3, RNIC_WC_REM_ACCESS_ERR);
    /* a normal MR cannot be invalidated */
    tv_pair_free(p);
    p = tv_pair_new(NULL);
    h = p->d;
    inv.imm_or_inv = p->mrb;
    tv_post_send(h, p->b, &inv, NULL, NULL);
    tv_expect_status(h, p->cqb, 2, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);
}

static void test_send_with_inv(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t stag = tv_alloc_mr(h, p->pd, 4, 0x30);
    uint64_t target = test_alloc(h, 4 * 4096, 4096);
    struct rnic_sq_wqe fr = tv_fast_reg_wqe(h, 1, stag, 0x9000, target, 4,
                                            RNIC_ACCESS_LOCAL_WRITE |
                                            RNIC_ACCESS_REMOTE_WRITE);
    struct rnic_sq_wqe si = tv_wqe(2, RNIC_WR_SEND_INV, 1);
    struct rnic_sq_wqe w = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 64, p->mra);
    struct rnic_sge r = tv_sge(p->bufb, 64, p->mrb);
    struct rnic_cqe c;

    tv_post_send(h, p->b, &fr, NULL, NULL);
    tv_expect_status(h, p->cqb, 1, RNIC_WC_SUCCESS);
    w.rdma.remote_addr = 0x9000;
    w.rdma.rkey = stag;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 3, RNIC_WC_SUCCESS);
    /* a tells b "done with your buffer" */
    tv_post_recv(h, p->b, 10, &r, 1);
    si.imm_or_inv = stag;
    tv_post_send(h, p->a, &si, &s, NULL);
    c = tv_expect_status(h, p->cqb, 10, RNIC_WC_SUCCESS);
    g_assert_true(c.flags & RNIC_CQE_WITH_INV);
    g_assert_cmphex(c.imm_or_inv, ==, stag);
    tv_expect_status(h, p->cqa, 2, RNIC_WC_SUCCESS);
    /* the STag is dead now */
    w.wr_id = 4;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_status(h, p->cqa, 4, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);

    /* invalidating an STag that is not a fast-reg MR: invalid request */
    p = tv_pair_new(NULL);
    h = p->d;
    r = tv_sge(p->bufb, 64, p->mrb);
    s = tv_sge(p->bufa, 64, p->mra);
    tv_post_recv(h, p->b, 10, &r, 1);
    si.imm_or_inv = p->mrb;
    tv_post_send(h, p->a, &si, &s, NULL);
    tv_expect_status(h, p->cqa, 2, RNIC_WC_REM_INV_REQ_ERR);
    tv_pair_free(p);
}

/* The registration log stays bounded by the live registrations. */
static void test_reglog_bounded(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    RnicEngine *e = h->engine;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    uint32_t stag = tv_alloc_mr(h, p->pd, 1, 1);
    uint64_t target = test_alloc(h, 4096, 4096);
    int i;

    c.destroy.net_ctx = p->ctx;
    for (i = 0; i < 2000; i++) {
        c.destroy.handle = tv_reg_mr(h, p->pd, p->bufa, 4096, 0, 0, NULL);
        tv_cmd_ok(h, &c);
    }
    for (i = 0; i < 300; i++) {
        uint32_t s2 = RNIC_STAG(RNIC_STAG_INDEX(stag), i);
        struct rnic_sq_wqe fr = tv_fast_reg_wqe(h, i, s2, 0, target, 1, 0);
        struct rnic_sq_wqe inv = tv_wqe_flags(i, RNIC_WR_LOCAL_INV, 0, 0);

        inv.imm_or_inv = s2;
        fr.flags = 0;
        tv_post_send(h, p->b, &fr, NULL, NULL);
        tv_post_send(h, p->b, &inv, NULL, NULL);
    }
    g_assert_cmpuint(e->mr_count, ==, 3);
    g_assert_cmpuint(e->reglog->len, <=, 3 * e->mr_count + 64);
    g_assert_cmpuint(e->reglog_appended, >=, 4000 + 600);
    g_assert_cmpuint(e->pbl_pages, <=, 2 * 256 + 2 * 64 + 64 * 3);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/mr/stag-allocation", test_stag_allocation);
    tv_test_add_pair("/rnic/mr/translate", NULL, test_translate);
    tv_test_add_pair("/rnic/mr/level2-scattered", NULL, test_level2_scattered);
    tv_test_add_pair("/rnic/mr/level0-contiguous", NULL,
                     test_level0_contiguous);
    tv_test_add_pair("/rnic/mr/bad-registrations", NULL,
                     test_bad_registrations);
    g_test_add_func("/rnic/mr/table-full", test_table_full);
    tv_test_add_pair("/rnic/mr/dereg", NULL, test_dereg);
    g_test_add_func("/rnic/mr/fast-reg", test_fast_reg);
    tv_test_add_pair("/rnic/mr/fast-reg-kernel-only", NULL,
                     test_fast_reg_kernel_only);
    tv_test_add_pair("/rnic/mr/fast-reg-limits", NULL, test_fast_reg_limits);
    g_test_add_func("/rnic/mr/local-inv", test_local_inv);
    g_test_add_func("/rnic/mr/send-with-inv", test_send_with_inv);
    tv_test_add_pair("/rnic/mr/reglog-bounded", NULL, test_reglog_bounded);
    tv_test_add_pair("/rnic/mr/dereg-any-key", NULL, test_dereg_any_key);
    return g_test_run();
}
