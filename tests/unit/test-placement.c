/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the IBTA 1.5 Memory Placement Extensions on a
 * loopback pair. ATOMIC WRITE places its 8 bytes and completes as
 * ATOMIC_WRITE; FLUSH (a range or the whole region) completes as FLUSH;
 * what the responder must refuse (a placement type the region does not
 * allow, a region without flush rights, a range outside it, an unaligned
 * or short ATOMIC WRITE) is a remote error and places nothing; WQEs the
 * requester must refuse are local errors; a region of guest RAM cannot be
 * registered for persistence. The same requests over the wire, lost and
 * duplicated, are in test-wire.
 */
#include <string.h>
#include "rnic-test-verbs.h"

static void expect_done(TestHost *h, TvCq *cq, uint64_t wr_id, uint8_t opcode,
                        uint32_t byte_len)
{
    struct rnic_cqe c = tv_expect_status(h, cq, wr_id, RNIC_WC_SUCCESS);

    g_assert_cmpuint(c.opcode, ==, opcode);
    g_assert_cmpuint(GUINT32_FROM_LE(c.byte_len), ==, byte_len);
}

static void test_atomic_write(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint64_t *target = test_ptr(h, p->bufb + 4088);
    struct rnic_sq_wqe w;

    *target = 0;
    tv_fill(h, p->bufb + 4096, 64, 7);
    w = tv_atomic_write_wqe(1, p->bufb + 4088, p->mrb, 0x0123456789abcdefull);
    tv_post_send(h, p->a, &w, NULL, NULL);
    expect_done(h, p->cqa, 1, RNIC_WC_ATOMIC_WRITE, 8);
    g_assert_cmphex(*target, ==, 0x0123456789abcdefull);
    /* the next word is untouched; nothing completes at the responder */
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, p->bufb + 4096), !=, 0xef);
    tv_expect_no_cqe(h, p->cqb);

    /* in order with the writes around it */
    w = tv_wqe(2, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_fill(h, p->bufa, 256, 3);
    tv_post_send(h, p->a, &w, (struct rnic_sge[]) {
                     tv_sge(p->bufa, 256, p->mra) }, NULL);
    w = tv_atomic_write_wqe(3, p->bufb + 8, p->mrb, 42);
    tv_post_send(h, p->a, &w, NULL, NULL);
    tv_expect_cqe(h, p->cqa, 2, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);
    expect_done(h, p->cqa, 3, RNIC_WC_ATOMIC_WRITE, 8);
    g_assert_cmpuint(*(uint64_t *)test_ptr(h, p->bufb + 8), ==, 42);
    tv_assert_same(h, p->bufa + 16, p->bufb + 16, 240);
}

static void test_flush(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, 4096, p->mra);

    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_fill(h, p->bufa, 4096, 9);
    tv_post_send(h, p->a, &w, &s, NULL);
    tv_expect_cqe(h, p->cqa, 1, RNIC_WC_RDMA_WRITE, RNIC_WC_SUCCESS);

    w = tv_flush_wqe(2, p->bufb, p->mrb, 4096, RNIC_FLUSH_GLOBAL,
                  RNIC_FLUSH_RANGE);
    tv_post_send(h, p->a, &w, NULL, NULL);
    expect_done(h, p->cqa, 2, RNIC_WC_FLUSH, 0);
    tv_assert_same(h, p->bufa, p->bufb, 4096);

    /* zero-length range, and the whole region whatever the length says */
    w = tv_flush_wqe(3, p->bufb + 100, p->mrb, 0, RNIC_FLUSH_GLOBAL,
                  RNIC_FLUSH_RANGE);
    tv_post_send(h, p->a, &w, NULL, NULL);
    expect_done(h, p->cqa, 3, RNIC_WC_FLUSH, 0);
    w = tv_flush_wqe(4, 0, p->mrb, 12345678, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR);
    tv_post_send(h, p->a, &w, NULL, NULL);
    expect_done(h, p->cqa, 4, RNIC_WC_FLUSH, 0);
    tv_expect_no_cqe(h, p->cqb);

    /* several outstanding: each takes a responder resource */
    for (int i = 0; i < 6; i++) {
        w = tv_flush_wqe(10 + i, p->bufb + i * 64, p->mrb, 64,
                      RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE);
        tv_write_send(h, p->a, &w, NULL, NULL);
    }
    tv_ring_sq(h, p->a);
    for (int i = 0; i < 6; i++) {
        expect_done(h, p->cqa, 10 + i, RNIC_WC_FLUSH, 0);
    }
}

/* One request on a fresh pair, refused with 'status' (and QP ERR). */
typedef struct Refusal {
    const char *what;
    uint8_t status;
    uint8_t opcode;             /* RNIC_WR_FLUSH or RNIC_WR_ATOMIC_WRITE */
    int64_t off;                /* from bufb */
    uint32_t len;
    uint8_t type, level;
    uint8_t mr_access;          /* 0: mrb; else a region with these rights */
    uint8_t num_sge;
} Refusal;

static void test_refused(void)
{
    static const Refusal cases[] = {
        { "persistence the region does not allow", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, 0, 64, RNIC_FLUSH_PERSISTENT, RNIC_FLUSH_RANGE },
        { "both types, one not allowed", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, 0, 64, RNIC_FLUSH_GLOBAL | RNIC_FLUSH_PERSISTENT,
          RNIC_FLUSH_MR },
        { "region without flush rights", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, 0, 64, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE,
          RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE },
        { "whole region without flush rights", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, 0, 0, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR,
          RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ },
        { "range past the region", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, TV_BUF_SIZE - 32, 64, RNIC_FLUSH_GLOBAL,
          RNIC_FLUSH_RANGE },
        { "range before the region", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_FLUSH, -64, 64, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE },
        { "no placement type", RNIC_WC_LOC_QP_OP_ERR,
          RNIC_WR_FLUSH, 0, 64, 0, RNIC_FLUSH_RANGE },
        { "unknown placement type", RNIC_WC_LOC_QP_OP_ERR,
          RNIC_WR_FLUSH, 0, 64, 4, RNIC_FLUSH_RANGE },
        { "unknown level", RNIC_WC_LOC_QP_OP_ERR,
          RNIC_WR_FLUSH, 0, 64, RNIC_FLUSH_GLOBAL, 2 },
        { "FLUSH with an SGE", RNIC_WC_LOC_QP_OP_ERR,
          RNIC_WR_FLUSH, 0, 64, RNIC_FLUSH_GLOBAL, RNIC_FLUSH_RANGE, 0, 1 },
        { "unaligned ATOMIC WRITE", RNIC_WC_REM_INV_REQ_ERR,
          RNIC_WR_ATOMIC_WRITE, 4 },
        { "ATOMIC WRITE past the region", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_ATOMIC_WRITE, TV_BUF_SIZE },
        { "ATOMIC WRITE without remote write", RNIC_WC_REM_ACCESS_ERR,
          RNIC_WR_ATOMIC_WRITE, 0, 0, 0, 0,
          RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ },
        { "ATOMIC WRITE with an SGE", RNIC_WC_LOC_QP_OP_ERR,
          RNIC_WR_ATOMIC_WRITE, 0, 0, 0, 0, 0, 1 },
    };

    static const uint8_t zero[64];

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const Refusal *r = &cases[i];
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
        uint32_t rkey = p->mrb;
        uint64_t addr = p->bufb + r->off;
        struct rnic_sq_wqe w;

        g_test_message("%s", r->what);
        if (r->mr_access) {
            rkey = tv_reg_mr(h, p->pd, p->bufb, TV_BUF_SIZE, r->mr_access, 0,
                             NULL);
        }
        memset(test_ptr(h, p->bufb), 0, 64);
        if (r->opcode == RNIC_WR_FLUSH) {
            w = tv_flush_wqe(1, addr, rkey, r->len, r->type, r->level);
        } else {
            w = tv_atomic_write_wqe(1, addr, rkey, UINT64_MAX);
        }
        w.num_sge = r->num_sge;
        tv_post_send(h, p->a, &w, r->num_sge ? &s : NULL, NULL);
        tv_expect_status(h, p->cqa, 1, r->status);
        g_assert_cmpmem(test_ptr(h, p->bufb), 64, zero, 64);
        tv_pair_free(p);
    }
}

/* A region of guest RAM cannot promise persistence: REG_MR and fast-reg. */
static void test_volatile(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    TestHost *h = p->d;
    uint8_t status;
    uint32_t stag;

    stag = tv_reg_mr(h, p->pd, p->bufb, 4096,
                     RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_FLUSH_PERSISTENT,
                     0, &status);
    g_assert_cmpuint(status, ==, RNIC_ST_NOT_SUPPORTED);
    g_assert_cmpuint(stag, ==, 0);
    stag = tv_reg_mr(h, p->pd, p->bufb, 4096,
                     RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_FLUSH_GLOBAL, 0,
                     &status);
    g_assert_cmpuint(status, ==, RNIC_ST_OK);
    g_assert_cmpuint(stag, !=, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tv_test_add_pair("/rnic/placement/atomic-write", NULL, test_atomic_write);
    tv_test_add_pair("/rnic/placement/flush", NULL, test_flush);
    g_test_add_func("/rnic/placement/refused", test_refused);
    tv_test_add_pair("/rnic/placement/volatile", NULL, test_volatile);
    return g_test_run();
}
