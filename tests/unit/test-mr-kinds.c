/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the kinds of mapping-table entry behind their ops
 * table (rnic-mr.h). The table has a row for every kind of the ABI, each
 * row says what its kind allows consistently, and one test per kind makes
 * an entry of that kind through the device's own commands and calls every
 * op of its row on it: the checks (key, state, PD, rights, bounds, the
 * kind's own rules), the target, the DMA runs, the replay of its records,
 * fast-register, invalidation and deregistration.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-mr.h"

#define WIN_PAGES 64
#define SCM_OFF 0x3000
#define SCM_LEN 0x2000

static RnicEngine *eng(TvPair *p)
{
    return p->d->engine;
}

static RnicMr *entry(TvPair *p, uint32_t stag)
{
    RnicNetCtx *ctx = rnic_netctx_lookup(eng(p), p->ctx);

    return rnic_mrt_lookup(&ctx->mrt, RNIC_STAG_INDEX(stag));
}

/* Any other PD: the checks compare the pointer. */
static const RnicPd other_pd;

/*
 * The checks every kind makes, through its own 'check': [va, va + len)
 * passes with 'access', and fails for a wrong key, another PD, a range
 * past the end and a right it does not have ('missing', 0: none).
 */
static void walk_check(const RnicMr *mr, uint32_t stag, uint64_t va,
                       uint64_t len, uint32_t access, uint32_t missing)
{
    const RnicMrKind *k = rnic_mr_kind(mr);
    const RnicPd *pd = mr->pd;

    g_assert_cmpint(k->check(mr, stag, pd, va, len, access), ==,
                    RNIC_XLATE_OK);
    g_assert_cmpint(k->check(mr, stag, NULL, va, len, access), ==,
                    RNIC_XLATE_OK);
    g_assert_cmpint(k->check(mr, stag ^ 1, pd, va, len, access), ==,
                    RNIC_XLATE_KEY);
    g_assert_cmpint(k->check(mr, stag, &other_pd, va, len, access), ==,
                    RNIC_XLATE_PD);
    g_assert_cmpint(k->check(mr, stag, pd, mr->iova + mr->length - 1, 2,
                             access), ==, RNIC_XLATE_BOUNDS);
    g_assert_cmpint(k->check(mr, stag, pd, mr->iova - 1, 1, access), ==,
                    RNIC_XLATE_BOUNDS);
    if (missing) {
        g_assert_cmpint(k->check(mr, stag, pd, va, len, missing), ==,
                        RNIC_XLATE_ACCESS);
    }
    /* the public gate is the same op */
    g_assert_cmpint(rnic_mr_check(mr, stag, pd, va, len, access), ==,
                    RNIC_XLATE_OK);
}

/* The run of entry byte 'va' ('len' bytes at most) starts at guest 'addr'. */
static void walk_run(const RnicMr *mr, uint64_t va, uint64_t len,
                     uint64_t addr)
{
    uint32_t hint = 0;
    uint64_t run = 0;

    g_assert_cmphex(rnic_mr_kind(mr)->run(mr, va, len, false, &hint, &run),
                    ==, addr);
    g_assert_cmpuint(run, >, 0);
    g_assert_cmpuint(run, <=, len);
}

/* The record of 'mr' a snapshot of the log starts with. */
static RnicRegLogRec reg_record(const RnicMr *mr)
{
    return rnic_reglog_record(mr->fast_reg ? RNIC_REGLOG_ALLOC :
                              RNIC_REGLOG_REG, mr);
}

static void dereg(TvPair *p, uint32_t stag)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };

    c.destroy.handle = stag;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(p->d, &c);
    g_assert_null(entry(p, stag));
}

/* Every kind of the ABI has a row, and each row is consistent. */
static void test_table(void)
{
    uint32_t kind;

    for (kind = 0; kind < RNIC_MR_KIND_COUNT; kind++) {
        const RnicMrKind *k = rnic_mr_kind_of(kind);

        g_assert_nonnull(k);
        g_assert_nonnull(k->name);
        /* every kind is checked and moves bytes (or refuses to) */
        g_assert_nonnull(k->check);
        g_assert_nonnull(k->run);
        /* what is registered is logged, and what is logged replays */
        g_assert_true(!k->reg || (k->flags & RNIC_MRK_LOGGED));
        g_assert_true(!(k->flags & RNIC_MRK_LOGGED) == !k->replay_create);
        /* ALLOC_MR makes fast-register entries: they need the WR's op */
        g_assert_true(!k->alloc_max == !k->fast_reg);
        g_assert_true(!k->alloc_max == !k->replay_fast_reg);
        g_assert_true(!k->alloc_max == !k->alloc_unit);
        g_assert_true(!k->alloc_user || k->alloc_max);
        /* what REREG_MR changes in place is registered by REG_MR */
        g_assert_true(k->rereg_refusal || k->reg);
    }
    g_assert_null(rnic_mr_kind_of(RNIC_MR_KIND_COUNT));
    g_assert_null(rnic_mr_kind_of(0xff));
    g_assert_true(rnic_mr_kind_of(RNIC_MR_KIND_MEM) == &rnic_mr_kind_mem);
    g_assert_true(rnic_mr_kind_of(RNIC_MR_KIND_SCM) == &rnic_mr_kind_scm);
    g_assert_true(rnic_mr_kind_of(RNIC_MR_KIND_MAPPED) ==
                  &rnic_mr_kind_mapped);
    g_assert_true(rnic_mr_kind_of(RNIC_MR_KIND_MW) == &rnic_mr_kind_mw);
}

/* Plain guest memory: a page list, and a fast-register entry. */
static void test_mem(void)
{
    TvPair *p = tv_pair_new(NULL);
    RnicEngine *e = eng(p);
    RnicMr *mr = entry(p, p->mra), *fr;
    const RnicMrKind *k = rnic_mr_kind(mr);
    RnicRegLogRec rec = reg_record(mr);
    uint32_t frs = tv_alloc_mr(p->d, p->pd, 4, 0x21), reg = 0x21;
    RnicPbl *pbl;
    uint8_t status;
    const char *why;

    g_assert_true(k == &rnic_mr_kind_mem);
    walk_check(mr, p->mra, p->bufa + 100, 4000, RNIC_ACCESS_REMOTE_WRITE, 0);
    g_assert_null(k->target);
    walk_run(mr, p->bufa + 100, 4000, p->bufa + 100);
    /* the replay takes its own record and refuses a broken one */
    g_assert_null(k->replay_create(e, &rec));
    rec.length += 4096 * 2;
    g_assert_nonnull(k->replay_create(e, &rec));
    rec = reg_record(mr);
    rec.pbl = NULL;
    g_assert_nonnull(k->replay_create(e, &rec));

    /* a fast-register entry: ALLOC record, then a FAST_REG record */
    fr = entry(p, frs);
    g_assert_true(rnic_mr_kind(fr) == k && fr->fast_reg);
    g_assert_cmpint(k->check(fr, frs, fr->pd, fr->iova, 0, 0), ==,
                    RNIC_XLATE_STATE);
    rec = reg_record(fr);
    g_assert_null(k->replay_create(e, &rec));
    rec.max_pages = 0;
    g_assert_nonnull(k->replay_create(e, &rec));
    pbl = rnic_pbl_read(e, p->bufb, 0, 1, 12, &status, &why);
    g_assert_nonnull(pbl);
    rec = (RnicRegLogRec) {
        .op = RNIC_REGLOG_FAST_REG, .kind = RNIC_MR_KIND_MEM,
        .stag = RNIC_STAG(RNIC_STAG_INDEX(frs), reg), .iova = 0x10000,
        .length = 4096, .access = RNIC_ACCESS_LOCAL_WRITE, .pbl = pbl,
    };
    /* a contiguous list is not what a fast-register entry holds */
    g_assert_nonnull(k->replay_fast_reg(e, fr, &rec));
    rnic_pbl_unref(e, pbl);
    /* the REG_MR work request, then its invalidation */
    {
        struct rnic_sq_wqe w = tv_fast_reg_wqe(p->d, 7, rec.stag, 0x10000,
                                               p->bufb, 2,
                                               RNIC_ACCESS_LOCAL_WRITE);

        tv_post_send(p->d, p->a, &w, NULL, NULL);
        tv_expect_cqe(p->d, p->cqa, 7, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
    }
    g_assert_cmpint(k->check(fr, rec.stag, fr->pd, 0x10000, 8192,
                             RNIC_ACCESS_LOCAL_WRITE), ==, RNIC_XLATE_OK);
    walk_run(fr, 0x10000 + 4096, 4096, p->bufb + 4096);
    g_assert_null(k->invalidate);
    g_assert_cmpuint(rnic_mr_invalidate(e, rnic_pd_lkeys(e, fr->pd),
                                        rnic_qp_lookup(e, p->a->handle),
                                        rec.stag, false), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpint(fr->state, ==, RNIC_MR_INVALID);
    dereg(p, rec.stag);
    dereg(p, p->mra);
    tv_pair_free(p);
}

/* A region of the device's memory window: the key carries semantics. */
static void test_scm(void)
{
    RnicEngineConfig cfg;
    TvPair *p;
    RnicEngine *e;
    uint32_t stag;
    RnicMr *mr;
    const RnicMrKind *k;
    RnicRegLogRec rec;
    uint8_t plain = RNIC_SCM_SEM_PLAIN << RNIC_SCM_KEY_SEM_SHIFT | 3;
    uint8_t ro = RNIC_SCM_SEM_READONLY << RNIC_SCM_KEY_SEM_SHIFT | 3;

    rnic_engine_config_defaults(&cfg);
    cfg.scm_pages = WIN_PAGES;
    p = tv_pair_new(&cfg);
    e = eng(p);
    stag = tv_reg_scm(p->d, p->pd, 0, SCM_OFF, SCM_LEN, TV_ACCESS_ALL,
                      1u << RNIC_SCM_SEM_PLAIN | 1u << RNIC_SCM_SEM_READONLY,
                      plain, NULL);
    mr = entry(p, stag);
    k = rnic_mr_kind(mr);
    g_assert_true(k == &rnic_mr_kind_scm);
    walk_check(mr, stag, 16, 64, RNIC_ACCESS_REMOTE_WRITE, 0);
    /* the key's semantic: read-only refuses a write, not a read */
    stag = RNIC_STAG(RNIC_STAG_INDEX(stag), ro);
    g_assert_cmpint(k->check(mr, stag, mr->pd, 16, 64,
                             RNIC_ACCESS_REMOTE_WRITE), ==,
                    RNIC_XLATE_SEMANTIC);
    g_assert_cmpint(k->check(mr, stag, mr->pd, 16, 64,
                             RNIC_ACCESS_REMOTE_READ), ==, RNIC_XLATE_OK);
    g_assert_null(k->target);
    walk_run(mr, 16, 64, RNIC_SCM_DMA_BASE + SCM_OFF + 16);
    rec = reg_record(mr);
    g_assert_null(k->replay_create(e, &rec));
    rec.op = RNIC_REGLOG_ALLOC;
    g_assert_nonnull(k->replay_create(e, &rec));
    g_assert_null(k->fast_reg);
    g_assert_cmpuint(k->rereg_refusal, ==, RNIC_ST_NOT_SUPPORTED);
    g_assert_nonnull(k->release);
    dereg(p, RNIC_STAG(RNIC_STAG_INDEX(stag), plain));
    tv_pair_free(p);
}

/* A mapped STag over two members: runs land in the members' pages. */
static void test_mapped(void)
{
    TvPair *p = tv_pair_new(NULL);
    RnicEngine *e = eng(p);
    struct rnic_map_seg segs[2] = {
        { .addr = p->bufa + 0x100, .length = 0x1000, .lkey = p->mra },
        { .addr = p->bufb + 0x200, .length = 0x800, .lkey = p->mrb },
    };
    uint32_t stag = tv_reg_mapped(p->d, p->pd, 0x40000, 0x1800, segs, 2, 1,
                                  RNIC_ACCESS_LOCAL_WRITE |
                                  RNIC_ACCESS_REMOTE_WRITE, 0x44, NULL);
    RnicMr *mr = entry(p, stag), *fr;
    const RnicMrKind *k = rnic_mr_kind(mr);
    RnicRegLogRec rec = reg_record(mr);
    uint32_t frs;

    g_assert_true(k == &rnic_mr_kind_mapped);
    walk_check(mr, stag, 0x40000 + 0xf00, 0x200, RNIC_ACCESS_REMOTE_WRITE,
               RNIC_ACCESS_REMOTE_READ);
    g_assert_null(k->target);
    walk_run(mr, 0x40000 + 0x10, 0x100, p->bufa + 0x110);
    walk_run(mr, 0x40000 + 0x1010, 0x100, p->bufb + 0x210);
    /* a member that goes makes its bytes fail, at check and at run */
    dereg(p, p->mrb);
    g_assert_cmpint(k->check(mr, stag, mr->pd, 0x40000 + 0x1010, 0x10,
                             RNIC_ACCESS_REMOTE_WRITE), ==,
                    RNIC_XLATE_MEMBER);
    {
        uint32_t hint = 0;
        uint64_t run = 1;

        k->run(mr, 0x40000 + 0x1010, 0x10, true, &hint, &run);
        g_assert_cmpuint(run, ==, 0);
    }
    g_assert_null(k->replay_create(e, &rec));
    rec.length--;
    g_assert_nonnull(k->replay_create(e, &rec));

    /* an ALLOC_MR entry and its FAST_REG record */
    frs = tv_alloc_mapped(p->d, p->pd, 1, 0x45);
    fr = entry(p, frs);
    g_assert_true(rnic_mr_kind(fr) == k && fr->fast_reg);
    rec = reg_record(mr);
    rec.op = RNIC_REGLOG_FAST_REG;
    rec.stag = frs;
    /* two segments do not fit an entry allocated for one */
    g_assert_nonnull(k->replay_fast_reg(e, fr, &rec));
    fr->max_pages = 2;
    g_assert_null(k->replay_fast_reg(e, fr, &rec));
    g_assert_true(fr->map == mr->map);
    g_assert_null(k->invalidate);
    g_assert_null(k->dereg);
    dereg(p, frs);
    dereg(p, stag);
    tv_pair_free(p);
}

/* A memory window: its accesses go to the MR it is bound to. */
static void test_mw(void)
{
    TvPair *p = tv_pair_new(NULL);
    RnicEngine *e = eng(p);
    uint32_t rkey = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_2, 0x50);
    uint32_t bound = RNIC_STAG(RNIC_STAG_INDEX(rkey), 0x51);
    RnicQp *qa = rnic_qp_lookup(e, p->a->handle);
    struct rnic_sq_wqe w = tv_bind_wqe(9, rkey, bound, p->mra, p->bufa + 64,
                                       256, RNIC_ACCESS_REMOTE_READ);
    RnicMr *mw = entry(p, rkey), *out = NULL;
    const RnicMrKind *k = rnic_mr_kind(mw);
    uint32_t hint = 0;
    uint64_t run = 1;

    g_assert_true(k == &rnic_mr_kind_mw);
    g_assert_cmpint(k->check(mw, rkey, mw->pd, 0, 0, 0), ==,
                    RNIC_XLATE_STATE);
    tv_post_send(p->d, p->a, &w, NULL, NULL);
    tv_expect_cqe(p->d, p->cqa, 9, RNIC_WC_BIND_MW, RNIC_WC_SUCCESS);
    walk_check(mw, bound, p->bufa + 64, 256, RNIC_ACCESS_REMOTE_READ,
               RNIC_ACCESS_REMOTE_WRITE);
    /* its target: the MR, through the QP it was bound by; no local key */
    g_assert_cmpint(k->target(mw, true, qa, p->bufa + 64, 256, &out), ==,
                    RNIC_XLATE_OK);
    g_assert_true(out == entry(p, p->mra));
    g_assert_cmpint(k->target(mw, true, NULL, p->bufa + 64, 256, &out), ==,
                    RNIC_XLATE_QP);
    g_assert_cmpint(k->target(mw, false, qa, p->bufa + 64, 256, &out), ==,
                    RNIC_XLATE_WINDOW);
    /* it moves no byte itself */
    k->run(mw, p->bufa + 64, 256, false, &hint, &run);
    g_assert_cmpuint(run, ==, 0);
    g_assert_null(k->replay_create);
    g_assert_true(k->flags & RNIC_MRK_ANY_KEY);
    /* a wrong key is refused; the right one unbinds */
    g_assert_cmpuint(k->invalidate(e, mw, qa, bound ^ 1, false), ==,
                     RNIC_WC_LOC_PROT_ERR);
    g_assert_cmpuint(k->invalidate(e, mw, qa, bound, false), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(entry(p, p->mra)->windows, ==, 0);
    g_assert_cmpuint(e->mw_count, ==, 1);
    dereg(p, bound);
    g_assert_cmpuint(e->mw_count, ==, 0);
    tv_pair_free(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/mr-kinds/table", test_table);
    g_test_add_func("/rnic/mr-kinds/mem", test_mem);
    g_test_add_func("/rnic/mr-kinds/scm", test_scm);
    g_test_add_func("/rnic/mr-kinds/mapped", test_mapped);
    g_test_add_func("/rnic/mr-kinds/mw", test_mw);
    return g_test_run();
}
