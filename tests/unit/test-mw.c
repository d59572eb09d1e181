/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: memory windows (type 1 and 2B). On the loopback pair
 * (a -> b), b binds a window over part of its buffer and a uses the
 * window's rkey: WRITE and READ inside it work, outside it or beyond its
 * rights they are remote access errors, the MR's own rkey is untouched.
 * Unbinding (type 1), LOCAL_INV and SEND with invalidate (type 2B) and
 * deallocation take access away; a type 2B window works only on the QP
 * that bound it. Every bad bind is a MW_BIND_ERR completion that changes
 * nothing, an MR with windows is not deregistered, a window is no local
 * key, and bound windows survive a save and load of the device.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-state.h"

#define WIN_OFF     4096        /* the window: bufb + WIN_OFF ... */
#define WIN_LEN     8192
#define RIGHTS_RW   (RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_WRITE)

/* The rkey after rkey: same window, next key (ibv_inc_rkey). */
static uint32_t inc_rkey(uint32_t rkey)
{
    return (rkey & ~0xffu) | ((rkey + 1) & 0xffu);
}

static uint64_t win(TvPair *p)
{
    return p->bufb + WIN_OFF;
}

/* Bind on b; the bind's completion status. */
static uint8_t bind(TvPair *p, TvQp *qp, TvCq *cq, uint32_t mw, uint32_t nkey,
                    uint32_t lkey, uint64_t addr, uint64_t len,
                    uint32_t access)
{
    struct rnic_sq_wqe w = tv_bind_wqe(77, mw, nkey, lkey, addr, len, access);
    struct rnic_cqe c;

    tv_post_send(p->d, qp, &w, NULL, NULL);
    c = tv_poll_one(p->d, cq);
    g_assert_cmpuint(c.wr_id, ==, 77);
    if (c.status == RNIC_WC_SUCCESS) {
        g_assert_cmpuint(c.opcode, ==, RNIC_WC_BIND_MW);
    }
    return c.status;
}

static void test_type1(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0x10);
    uint32_t k1 = inc_rkey(mw);

    g_assert_cmpuint(RNIC_STAG_KEY(mw), ==, 0x10);
    /* allocated, not bound: no access */
    g_assert_cmpuint(h->engine->mw_count, ==, 1);
    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    tv_fill(h, p->bufa, WIN_LEN, 3);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, WIN_LEN), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(h, p->bufa, win(p), WIN_LEN);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_READ, win(p) + 100, k1, 64), ==,
                     RNIC_WC_SUCCESS);
    /* rebind elsewhere with a new key: the old key is gone */
    g_assert_cmpuint(bind(p, p->b, p->cqb, k1, inc_rkey(k1), p->mrb, p->bufb,
                          4096, RNIC_ACCESS_REMOTE_READ), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(p->d->engine->mw_count, ==, 1);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_READ, p->bufb, k1, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* After a bind of [win, win + WIN_LEN) read/write, one bad access each. */
static void test_type1_bounds(void)
{
    static const struct {
        uint8_t op;
        uint64_t off;           /* from the window's start */
        uint32_t len;
    } bad[] = {
        { RNIC_WR_RDMA_WRITE, WIN_LEN - 8, 16 },        /* past the end */
        { RNIC_WR_RDMA_WRITE, (uint64_t)-8, 16 },       /* before it */
        { RNIC_WR_ATOMIC_FETCH_ADD, 0, 8 },             /* no atomic right */
    };
    unsigned i;

    for (i = 0; i < G_N_ELEMENTS(bad); i++) {
        TvPair *p = tv_pair_new(NULL);
        uint32_t mw = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_1, 0);
        uint32_t k1 = inc_rkey(mw);
        uint8_t st;

        g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p),
                              WIN_LEN, RIGHTS_RW), ==, RNIC_WC_SUCCESS);
        if (bad[i].op == RNIC_WR_ATOMIC_FETCH_ADD) {
            struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
            struct rnic_sq_wqe w = tv_wqe(5, bad[i].op, 1);

            w.atomic.remote_addr = win(p);
            w.atomic.rkey = k1;
            w.atomic.compare_add = 1;
            tv_post_send(p->d, p->a, &w, &s, NULL);
            st = tv_poll_one(p->d, p->cqa).status;
        } else {
            st = tv_pair_rdma(p, bad[i].op, win(p) + bad[i].off, k1, bad[i].len);
        }
        g_assert_cmpuint(st, ==, RNIC_WC_REM_ACCESS_ERR);
        tv_pair_free(p);
    }
}

static void test_type1_unbind(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint32_t mw = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_1, 0);
    uint32_t k1 = inc_rkey(mw), k2 = inc_rkey(k1);
    RnicMr *mrb;

    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    mrb = rnic_mrt_lookup(&rnic_netctx_lookup(p->d->engine, p->ctx)->mrt,
                          RNIC_STAG_INDEX(p->mrb));
    g_assert_cmpuint(mrb->windows, ==, 1);
    /* type 1 cannot be invalidated: a local error, the window stays */
    {
        struct rnic_sq_wqe w = tv_wqe(9, RNIC_WR_LOCAL_INV, 0);

        w.imm_or_inv = k1;
        tv_post_send(p->d, p->a, &w, NULL, NULL);
        tv_expect_cqe(p->d, p->cqa, 9, RNIC_WC_LOCAL_INV,
                      RNIC_WC_LOC_PROT_ERR);
    }
    /* a zero-length bind unbinds it */
    g_assert_cmpuint(bind(p, p->b, p->cqb, k1, k2, 0, 0, 0, 0), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(mrb->windows, ==, 0);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    mw = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_1, 0);
    k1 = inc_rkey(mw);
    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(bind(p, p->b, p->cqb, k1, inc_rkey(k1), 0, 0, 0, 0), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), inc_rkey(k1), 64),
                     ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* A type 2B window bound by b; which operation then takes it away. */
typedef enum { T2_KEEP, T2_LOCAL_INV, T2_SEND_INV, T2_DEALLOC } T2End;

static void type2_case(T2End end)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_2, 0x20);
    uint32_t k1 = inc_rkey(mw);
    struct rnic_sq_wqe w;
    struct rnic_sge r;
    struct rnic_cqe c;

    /* free: no access before the bind */
    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, 512), ==,
                     RNIC_WC_SUCCESS);
    switch (end) {
    case T2_KEEP:
        tv_pair_free(p);
        return;
    case T2_LOCAL_INV:
        w = tv_wqe(9, RNIC_WR_LOCAL_INV, 0);
        w.imm_or_inv = k1;
        tv_post_send(h, p->b, &w, NULL, NULL);
        tv_expect_cqe(h, p->cqb, 9, RNIC_WC_LOCAL_INV, RNIC_WC_SUCCESS);
        break;
    case T2_SEND_INV:
        r = tv_sge(p->bufb, 64, p->mrb);
        tv_post_recv(h, p->b, 21, &r, 1);
        r = tv_sge(p->bufa, 64, p->mra);
        w = tv_wqe(22, RNIC_WR_SEND_INV, 1);
        w.imm_or_inv = k1;
        tv_post_send(h, p->a, &w, &r, NULL);
        tv_expect_cqe(h, p->cqa, 22, RNIC_WC_SEND, RNIC_WC_SUCCESS);
        c = tv_poll_one(h, p->cqb);
        g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
        g_assert_true(c.flags & RNIC_CQE_WITH_INV);
        g_assert_cmpuint(c.imm_or_inv, ==, k1);
        break;
    case T2_DEALLOC: {
        struct rnic_admin_cmd d = { .opcode = RNIC_CMD_DEREG_MR };

        d.destroy.handle = k1;
        d.destroy.net_ctx = p->ctx;
        tv_cmd_ok(h, &d);
        g_assert_cmpuint(h->engine->mw_count, ==, 0);
        break;
    }
    }
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, 512), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

static void test_type2(void)
{
    type2_case(T2_KEEP);
}

static void test_type2_local_inv(void)
{
    type2_case(T2_LOCAL_INV);
}

static void test_type2_send_inv(void)
{
    type2_case(T2_SEND_INV);
}

static void test_type2_dealloc(void)
{
    type2_case(T2_DEALLOC);
}

/*
 * Type 2B belongs to the QP that bound it: bound by a QP 'c' of b's PD,
 * the window does not serve requests arriving at b; bound twice: an error.
 */
static void test_type2_qp(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    TvCq *cqc = tv_cq(h, 6, p->eq, 0);
    TvQp *c = tv_qp(h, RNIC_QPT_RC, p->pd, cqc, cqc, NULL, 5, 0);
    uint32_t mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_2, 0);
    uint32_t k1 = inc_rkey(mw);
    uint8_t gid[16];

    tv_gid_v4(gid, 0, 0, 1);
    tv_rc_connect(h, c, 1, gid, p->a->qpn);
    g_assert_cmpuint(bind(p, c, cqc, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    g_free(c);
    g_free(cqc);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    mw = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_2, 0);
    k1 = inc_rkey(mw);
    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(bind(p, p->b, p->cqb, k1, inc_rkey(k1), p->mrb, win(p),
                          WIN_LEN, RIGHTS_RW), ==, RNIC_WC_MW_BIND_ERR);
    tv_pair_free(p);
}

/* Each bad bind: MW_BIND_ERR, a guest error logged, the window unchanged. */
static void test_bad_binds(void)
{
    enum { NO_MW_BIND, BEYOND, WRONG_KEY, OTHER_INDEX, NO_LOCAL_WRITE,
           ZERO_BASED, BAD_RIGHTS, MW_AS_MR, OTHER_PD, TYPE2_EMPTY, NCASES };
    unsigned i;

    for (i = 0; i < NCASES; i++) {
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        uint8_t type = i == TYPE2_EMPTY ? RNIC_MW_TYPE_2 : RNIC_MW_TYPE_1;
        uint32_t pd2 = tv_pd(h, p->ctx, 0);
        uint32_t mw = tv_alloc_mw(h, i == OTHER_PD ? pd2 : p->pd, type, 0);
        uint32_t lkey = p->mrb, nkey = inc_rkey(mw), rkey = mw;
        uint64_t addr = win(p), len = WIN_LEN;
        uint32_t access = RIGHTS_RW;
        unsigned errors = h->guest_errors;
        RnicMr *e;

        switch (i) {
        case NO_MW_BIND:
            lkey = tv_reg_mr(h, p->pd, p->bufb, 65536,
                             RNIC_ACCESS_LOCAL_WRITE |
                             RNIC_ACCESS_REMOTE_WRITE, 0, NULL);
            break;
        case BEYOND:
            addr = p->bufb + TV_BUF_SIZE - 4096;
            break;
        case WRONG_KEY:
            rkey = inc_rkey(mw);
            nkey = inc_rkey(rkey);
            break;
        case OTHER_INDEX:
            nkey = mw + 0x100;
            break;
        case NO_LOCAL_WRITE:
            lkey = tv_reg_mr(h, p->pd, p->bufb, 65536,
                             RNIC_ACCESS_MW_BIND | RNIC_ACCESS_REMOTE_READ,
                             0, NULL);
            break;
        case ZERO_BASED:
            access |= 1u << 5;
            break;
        case BAD_RIGHTS:
            access |= 1u << 12;
            break;
        case MW_AS_MR:
            lkey = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0);
            break;
        case TYPE2_EMPTY:
            len = 0;
            break;
        }
        g_assert_cmpuint(bind(p, p->b, p->cqb, rkey, nkey, lkey, addr, len,
                              access), ==, RNIC_WC_MW_BIND_ERR);
        g_assert_cmpuint(h->guest_errors, >, errors);
        e = rnic_mrt_lookup(&rnic_netctx_lookup(h->engine, p->ctx)->mrt,
                            RNIC_STAG_INDEX(mw));
        g_assert_cmpuint(e->stag, ==, mw);
        g_assert_null(e->parent);
        g_assert_cmpuint(e->length, ==, 0);
        tv_pair_free(p);
    }
}

static void test_bad_commands(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MW };
    struct rnic_admin_cqe r;
    uint32_t mw, k1;
    struct rnic_sge s;
    struct rnic_sq_wqe w;

    c.mw.pd = p->pd;
    c.mw.type = 3;
    r = tv_cmd(h, &c);
    g_assert_cmpuint(r.status, ==, RNIC_ST_BAD_PARAM);
    c.mw.type = RNIC_MW_TYPE_1;
    c.mw.pd = 999;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);

    /* an MR with a window bound is not deregistered */
    mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0);
    k1 = inc_rkey(mw);
    g_assert_cmpuint(bind(p, p->b, p->cqb, mw, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_DEREG_MR;
    c.destroy.handle = p->mrb;
    c.destroy.net_ctx = p->ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BUSY);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, 64), ==,
                     RNIC_WC_SUCCESS);
    /* dealloc by any key (the driver may not know a type 1's last one) */
    c.destroy.handle = mw;
    c.destroy.flags = RNIC_DEREG_ANY_KEY;
    tv_cmd_ok(h, &c);
    c.destroy.handle = p->mrb;
    c.destroy.flags = 0;
    tv_cmd_ok(h, &c);
    tv_pair_free(p);

    /* a window is no local key */
    p = tv_pair_new(NULL);
    h = p->d;
    mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0);
    k1 = inc_rkey(mw);
    g_assert_cmpuint(bind(p, p->a, p->cqa, mw, k1, p->mra, p->bufa, WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    s = tv_sge(p->bufa, 64, k1);
    w = tv_wqe(30, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_cqe(h, p->cqa, 30, RNIC_WC_RDMA_WRITE, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);

    /* a fast-reg MR with a window bound is not invalidated */
    p = tv_pair_new(NULL);
    h = p->d;
    {
        uint32_t fr = tv_alloc_mr(h, p->pd, 4, 0x33);

        w = tv_fast_reg_wqe(h, 40, fr, 0x100000000ull, p->bufb, 4,
                            TV_ACCESS_ALL);
        tv_post_send(h, p->b, &w, NULL, NULL);
        tv_expect_cqe(h, p->cqb, 40, RNIC_WC_REG_MR, RNIC_WC_SUCCESS);
        mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0);
        g_assert_cmpuint(bind(p, p->b, p->cqb, mw, inc_rkey(mw), fr,
                              0x100000000ull, 4096, RIGHTS_RW), ==,
                         RNIC_WC_SUCCESS);
        w = tv_wqe(41, RNIC_WR_LOCAL_INV, 0);
        w.imm_or_inv = fr;
        tv_post_send(h, p->b, &w, NULL, NULL);
        tv_expect_cqe(h, p->cqb, 41, RNIC_WC_LOCAL_INV, RNIC_WC_LOC_PROT_ERR);
    }
    tv_pair_free(p);

    /* no bind on a UD QP */
    p = tv_pair_new(NULL);
    h = p->d;
    {
        TvCq *cq = tv_cq(h, 6, p->eq, 0);
        TvQp *ud = tv_qp(h, RNIC_QPT_UD, p->pd, cq, cq, NULL, 5, 0);

        tv_ud_ready(h, ud, 0x1234);
        mw = tv_alloc_mw(h, p->pd, RNIC_MW_TYPE_1, 0);
        w = tv_bind_wqe(50, mw, inc_rkey(mw), p->mrb, win(p), 64, RIGHTS_RW);
        tv_post_send(h, ud, &w, NULL, NULL);
        tv_expect_cqe(h, cq, 50, RNIC_WC_BIND_MW, RNIC_WC_LOC_QP_OP_ERR);
        g_free(ud);
        g_free(cq);
    }
    tv_pair_free(p);
}

/* The pair moved to a new host; its image has windows of both types. */
static void migrate(TvPair *p)
{
    GByteArray *img = g_byte_array_new();
    GString *text = g_string_new(NULL);
    uint32_t mws = p->d->engine->mw_count;

    rnic_engine_save(p->d->engine, img);
    g_assert_true(rnic_state_dump(img->data, img->len, text));
    g_assert_nonnull(strstr(text->str, ".mw_type = 1\n"));
    g_assert_nonnull(strstr(text->str, ".mw_type = 2\n"));
    g_string_free(text, TRUE);
    g_byte_array_unref(img);
    tv_pair_migrate(p);
    g_assert_cmpuint(p->d->engine->mw_count, ==, mws);
}

static void test_migration(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint32_t m1 = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_1, 0);
    uint32_t m2 = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_2, 0);
    uint32_t m3 = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_2, 0);
    uint32_t k1 = inc_rkey(m1), k2 = inc_rkey(m2);
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    RnicMr *mrb;

    g_assert_cmpuint(bind(p, p->b, p->cqb, m1, k1, p->mrb, win(p), WIN_LEN,
                          RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(bind(p, p->b, p->cqb, m2, k2, p->mrb, p->bufb, WIN_OFF,
                          RNIC_ACCESS_REMOTE_WRITE), ==, RNIC_WC_SUCCESS);
    (void)m3;                   /* allocated, free */
    migrate(p);
    tv_fill(p->d, p->bufa, WIN_LEN, 9);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, win(p), k1, WIN_LEN), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_WRITE, p->bufb, k2, WIN_OFF), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(p->d, p->bufa, win(p), WIN_LEN);
    mrb = rnic_mrt_lookup(&rnic_netctx_lookup(p->d->engine, p->ctx)->mrt,
                          RNIC_STAG_INDEX(p->mrb));
    g_assert_cmpuint(mrb->windows, ==, 2);
    c.destroy.handle = p->mrb;
    c.destroy.net_ctx = p->ctx;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_BUSY);
    /* and its rights came along: write only */
    g_assert_cmpuint(tv_pair_rdma(p, RNIC_WR_RDMA_READ, p->bufb, k2, 64), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* An image whose window names an MR the log does not have is refused. */
static void test_migration_bad_parent(void)
{
    TvPair *p = tv_pair_new(NULL);
    uint32_t m1 = tv_alloc_mw(p->d, p->pd, RNIC_MW_TYPE_1, 0);
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = g_byte_array_new();
    RnicMr *mw;
    char *err = NULL;

    g_assert_cmpuint(bind(p, p->b, p->cqb, m1, inc_rkey(m1), p->mrb, win(p),
                          WIN_LEN, RIGHTS_RW), ==, RNIC_WC_SUCCESS);
    mw = rnic_mrt_lookup(&rnic_netctx_lookup(p->d->engine, p->ctx)->mrt,
                         RNIC_STAG_INDEX(m1));
    mw->parent_stag ^= 1;       /* as a corrupted stream would say */
    rnic_engine_save(p->d->engine, img);
    mw->parent_stag ^= 1;
    g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_nonnull(strstr(err, "memory window"));
    g_free(err);
    g_byte_array_unref(img);
    test_host_free(dst);
    tv_pair_free(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/mw/type1", test_type1);
    g_test_add_func("/rnic/mw/type1-bounds", test_type1_bounds);
    g_test_add_func("/rnic/mw/type1-unbind", test_type1_unbind);
    g_test_add_func("/rnic/mw/type2", test_type2);
    g_test_add_func("/rnic/mw/type2-local-inv", test_type2_local_inv);
    g_test_add_func("/rnic/mw/type2-send-inv", test_type2_send_inv);
    g_test_add_func("/rnic/mw/type2-dealloc", test_type2_dealloc);
    g_test_add_func("/rnic/mw/type2-qp", test_type2_qp);
    g_test_add_func("/rnic/mw/bad-binds", test_bad_binds);
    g_test_add_func("/rnic/mw/bad-commands", test_bad_commands);
    g_test_add_func("/rnic/mw/migration", test_migration);
    g_test_add_func("/rnic/mw/migration-bad-parent",
                    test_migration_bad_parent);
    return g_test_run();
}
