/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: REREG_MR (ABI 1.5, RNIC_CAP_REREG_MR), the verbs'
 * ibv_rereg_mr in place. On the loopback pair (a -> b), b's MR changes its
 * rights, its translation or its PD and keeps its STag: the peer's rkey
 * reaches the new pages with the new rights at once, the old pages no
 * more, and a receive WQE posted before the change is checked against the
 * new registration when the message comes. Every refusal (bad flags, wrong
 * key, a window bound, a fast-register MR, a window, a PD of another
 * network, bad rights or page list) changes nothing, and the changed MR
 * survives a save and load of the device. The same for an MR of a
 * multi-network PD, whose replicas follow its PD.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-state.h"

#define RW_LOCAL    (RNIC_ACCESS_LOCAL_WRITE)
#define RW_READ     (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ)

static uint8_t rereg(TvPair *p, uint8_t what, uint32_t pd, uint64_t addr,
                     uint64_t len, uint32_t access)
{
    return tv_rereg_mr(p->d, p->mrb, p->ctx, what, pd, addr, len, access);
}

static RnicMr *mr_of(TvPair *p, uint32_t stag)
{
    return rnic_mrt_lookup(&rnic_netctx_lookup(p->d->engine, p->ctx)->mrt,
                           RNIC_STAG_INDEX(stag));
}

/* New rights take effect through the same rkey. */
static void test_access(void)
{
    TvPair *p = tv_pair_new(NULL);

    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, p->mrb, 64), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(rereg(p, RNIC_REREG_ACCESS, 0, 0, 0, RW_READ), ==,
                     RNIC_ST_OK);
    g_assert_cmphex(mr_of(p, p->mrb)->access, ==, RW_READ);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_READ, p->bufb, p->mrb, 64), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, p->mrb, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/*
 * A new translation: the rkey now names the new buffer (at its own iova),
 * the old range is out of bounds and its bytes stay as they were.
 */
static void test_translation(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint64_t nbuf = test_alloc(h, 3 * 4096, 4096) + 100, len = 8000;
    uint8_t before[64];

    memcpy(before, test_ptr(h, p->bufb), sizeof(before));
    g_assert_cmpuint(rereg(p, RNIC_REREG_TRANS, 0, nbuf, len, 0), ==,
                     RNIC_ST_OK);
    tv_fill(h, p->bufa, len, 9);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, nbuf, p->mrb, len), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(h, p->bufa, nbuf, len);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, nbuf + len - 8, p->mrb, 16),
                     ==, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpmem(test_ptr(h, p->bufb), sizeof(before), before,
                    sizeof(before));
    tv_pair_free(p);

    /* the old range through the old rkey: no more */
    p = tv_pair_new(NULL);
    nbuf = test_alloc(p->d, 4096, 4096);
    g_assert_cmpuint(rereg(p, RNIC_REREG_TRANS | RNIC_REREG_ACCESS, 0, nbuf,
                           4096, TV_ACCESS_ALL), ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, p->mrb, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/*
 * A receive WQE posted under the old translation meets the new one when
 * the message arrives (pyverbs test_mr_rereg_addr): a local protection
 * error on b, a remote operational error on a.
 */
static void test_posted_recv(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint64_t nbuf = test_alloc(p->d, 4096, 4096);
    struct rnic_sge r = tv_sge(p->bufb, 256, p->mrb);
    struct rnic_sge s = tv_sge(p->bufa, 256, p->mra);
    struct rnic_sq_wqe w = tv_wqe(6, RNIC_WR_SEND, 1);

    tv_post_recv(p->d, p->b, 60, &r, 1);
    g_assert_cmpuint(rereg(p, RNIC_REREG_TRANS, 0, nbuf, 4096, 0), ==,
                     RNIC_ST_OK);
    tv_post_send(p->d, p->a, &w, &s, NULL);
    tv_expect_status(p->d, p->cqb, 60, RNIC_WC_LOC_PROT_ERR);
    tv_expect_status(p->d, p->cqa, 6, RNIC_WC_REM_OP_ERR);
    tv_pair_free(p);
}

static uint8_t dealloc_pd(TestHost *h, uint32_t pd)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEALLOC_PD };

    c.destroy.handle = pd;
    return tv_cmd(h, &c).status;
}

/*
 * Another PD: the QPs of the old one reach the MR no more, locally or
 * remotely (pyverbs test_mr_rereg_pd); the PD is in use while the MR is
 * in it, and free again when the MR moves back.
 */
static void test_pd(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint32_t pd2 = tv_pd(p->d, p->ctx, 0);
    struct rnic_sge r = tv_sge(p->bufb, 256, p->mrb);
    struct rnic_sge s = tv_sge(p->bufa, 256, p->mra);
    struct rnic_sq_wqe w = tv_wqe(6, RNIC_WR_SEND, 1);

    g_assert_cmpuint(rereg(p, RNIC_REREG_PD, pd2, 0, 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(mr_of(p, p->mrb)->pd->handle, ==, pd2);
    g_assert_cmpuint(dealloc_pd(p->d, pd2), ==, RNIC_ST_BUSY);
    tv_post_recv(p->d, p->b, 60, &r, 1);
    tv_post_send(p->d, p->a, &w, &s, NULL);
    tv_expect_status(p->d, p->cqb, 60, RNIC_WC_LOC_PROT_ERR);
    tv_expect_status(p->d, p->cqa, 6, RNIC_WC_REM_OP_ERR);
    g_assert_cmpuint(rereg(p, RNIC_REREG_PD, p->pd, 0, 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(dealloc_pd(p->d, pd2), ==, RNIC_ST_OK);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    pd2 = tv_pd(p->d, p->ctx, 0);
    g_assert_cmpuint(rereg(p, RNIC_REREG_PD, pd2, 0, 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, p->mrb, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* Each refusal leaves the MR as it was: a WRITE through it still works. */
static void test_refused(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t other_ctx = tv_net_ctx(h, 30);
    uint32_t other_pd = tv_pd(h, other_ctx, 0);
    uint32_t fr = tv_alloc_mr(h, p->pd, 4, 0x44);
    uint32_t mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0x10);
    uint32_t k1 = (mw & ~0xffu) | ((mw + 1) & 0xffu);
    uint64_t nbuf = test_alloc(h, 4096, 4096);
    uint64_t gen = mr_of(p, p->mrb)->gen;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_REREG_MR };
    struct rnic_sq_wqe bw;
    uint32_t mrb = p->mrb;

    g_assert_cmpuint(rereg(p, 0, 0, 0, 0, 0), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(rereg(p, 8, 0, 0, 0, 0), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(tv_rereg_mr(h, mrb ^ 1, p->ctx, RNIC_REREG_ACCESS, 0, 0,
                                 0, RW_LOCAL), ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(tv_rereg_mr(h, mrb, other_ctx, RNIC_REREG_ACCESS, 0, 0,
                                 0, RW_LOCAL), ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(rereg(p, RNIC_REREG_PD, other_pd, 0, 0, 0), ==,
                     RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(rereg(p, RNIC_REREG_PD, 0xdead, 0, 0, 0), ==,
                     RNIC_ST_BAD_HANDLE);
    g_assert_cmpuint(rereg(p, RNIC_REREG_ACCESS, 0, 0, 0,
                           RNIC_ACCESS_REMOTE_WRITE), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(rereg(p, RNIC_REREG_ACCESS, 0, 0, 0, 1u << 30), ==,
                     RNIC_ST_BAD_PARAM);
    /* a translation of zero bytes, and a page list of three levels */
    g_assert_cmpuint(rereg(p, RNIC_REREG_TRANS, 0, nbuf, 0, 0), ==,
                     RNIC_ST_BAD_PARAM);
    c.mr.stag = mrb;
    c.mr.net_ctx = p->ctx;
    c.mr.rereg = RNIC_REREG_TRANS;
    c.mr.iova = nbuf;
    c.mr.length = 4096;
    c.mr.npages = 1;
    c.mr.page_shift = 12;
    c.mr.levels = 3;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    /* not regions of guest memory */
    g_assert_cmpuint(tv_rereg_mr(h, fr, p->ctx, RNIC_REREG_ACCESS, 0, 0, 0,
                                 RW_LOCAL), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(tv_rereg_mr(h, mw, p->ctx, RNIC_REREG_ACCESS, 0, 0, 0,
                                 RW_LOCAL), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(mr_of(p, mrb)->gen, ==, gen);
    /* a window bound to the MR: busy, and the window keeps working */
    bw = tv_bind_wqe(77, mw, k1, mrb, p->bufb, 4096,
                     RNIC_ACCESS_REMOTE_WRITE);
    tv_post_send(h, p->b, &bw, NULL, NULL);
    tv_expect_cqe(h, p->cqb, 77, RNIC_WC_BIND_MW, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rereg(p, RNIC_REREG_ACCESS, 0, 0, 0, RW_LOCAL), ==,
                     RNIC_ST_BUSY);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, k1, 64), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb + 8192, mrb, 64), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmphex(mr_of(p, mrb)->access, ==, TV_ACCESS_ALL);
    tv_pair_free(p);
}

/* A re-registered MR migrates as it is now: translation, rights, PD. */
static void test_migration(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint64_t nbuf = test_alloc(p->d, 2 * 4096, 4096);
    uint32_t pd2 = tv_pd(p->d, p->ctx, 0);
    int i;

    /* twice: the log holds both changes until it is compacted */
    for (i = 0; i < 2; i++) {
        g_assert_cmpuint(rereg(p, RNIC_REREG_TRANS | RNIC_REREG_ACCESS, 0,
                               nbuf, 2 * 4096, RW_READ | (i ? 0 :
                               RNIC_ACCESS_REMOTE_WRITE)), ==, RNIC_ST_OK);
    }
    g_assert_cmpuint(tv_rereg_mr(p->d, p->mra, p->ctx, RNIC_REREG_PD, pd2, 0,
                                 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpuint(tv_rereg_mr(p->d, p->mra, p->ctx, RNIC_REREG_PD, p->pd,
                                 0, 0, 0), ==, RNIC_ST_OK);
    tv_pair_migrate(p);
    g_assert_cmphex(mr_of(p, p->mrb)->access, ==, RW_READ);
    g_assert_cmphex(mr_of(p, p->mrb)->iova, ==, nbuf);
    tv_fill(p->d, nbuf, 128, 4);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_READ, nbuf, p->mrb, 128), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(p->d, p->bufa, nbuf, 128);
    g_assert_cmpuint(dealloc_pd(p->d, pd2), ==, RNIC_ST_OK);
    tv_pair_free(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/rereg/access", test_access);
    g_test_add_func("/rnic/rereg/translation", test_translation);
    g_test_add_func("/rnic/rereg/posted-recv", test_posted_recv);
    g_test_add_func("/rnic/rereg/pd", test_pd);
    g_test_add_func("/rnic/rereg/refused", test_refused);
    g_test_add_func("/rnic/rereg/migration", test_migration);
    return g_test_run();
}
