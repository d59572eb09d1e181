/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the memory window and storage semantics in the STag
 * key (rnic-scm.c) on a loopback pair whose host has a 1 MiB window with
 * a durable image (test_host_power_cut). Registration of window ranges
 * and what it refuses; RDMA through each semantic: PLAIN writes are lost
 * at a power cut until a FLUSH(persistence) covers them, DURABLE ones
 * never are (and are durable when their completion is seen), READONLY
 * and ATOMIC8 refuse what they must, MGMT runs persist/zero/status
 * requests; a window that does not persist refuses persistence; regions
 * of the window as local SGEs; SCM_PERSIST of CPU stores; the
 * registration log replays them with
 * their semantics on a state load.
 */
#include <string.h>
#include "rnic-test-verbs.h"

#define WIN_PAGES   256                 /* 1 MiB */
#define REG_OFF     0x10000             /* the region's window offset */
#define REG_LEN     0x10000
#define TAG         0x0b
#define ALL_SEMS    ((1u << RNIC_SCM_SEM_COUNT) - 1)
#define KEY(sem)    ((uint8_t)((sem) << RNIC_SCM_KEY_SEM_SHIFT | TAG))

static const RnicEngineConfig *win_cfg(bool persistent)
{
    static RnicEngineConfig cfg[2];

    rnic_engine_config_defaults(&cfg[persistent]);
    cfg[persistent].scm_pages = WIN_PAGES;
    cfg[persistent].scm_persistent = persistent;
    return &cfg[persistent];
}

/* The region [REG_OFF, + REG_LEN) of the window, zero-based, every right. */
static uint32_t scm_region(TvPair *p, uint32_t sems)
{
    return tv_reg_scm(p->d, p->pd, 0, REG_OFF, REG_LEN,
                      TV_ACCESS_ALL | (p->d->cfg.scm_persistent ?
                                       RNIC_ACCESS_FLUSH_PERSISTENT : 0),
                      sems, KEY(RNIC_SCM_SEM_PLAIN), NULL);
}

/* One RDMA WRITE of bufa[0, len) to region byte 'va' through 'rkey'; the
 * READ below reads into bufa byte 'to' - bufa. */
static uint8_t scm_write(TvPair *p, uint64_t id, uint32_t rkey, uint64_t va,
                         uint32_t len)
{
    struct rnic_sq_wqe w = tv_wqe(id, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa, len, p->mra);

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    tv_post_send(p->d, p->a, &w, &s, NULL);
    return tv_poll_one(p->d, p->cqa).status;
}

static uint8_t scm_read(TvPair *p, uint64_t id, uint32_t rkey, uint64_t va,
                        uint32_t len, uint64_t to)
{
    struct rnic_sq_wqe w = tv_wqe(id, RNIC_WR_RDMA_READ, 1);
    struct rnic_sge s = tv_sge(to, len, p->mra);

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    tv_post_send(p->d, p->a, &w, &s, NULL);
    return tv_poll_one(p->d, p->cqa).status;
}

static uint8_t scm_flush(TvPair *p, uint64_t id, uint32_t rkey, uint64_t va,
                         uint32_t len, uint8_t type, uint8_t level)
{
    struct rnic_sq_wqe w = tv_flush_wqe(id, va, rkey, len, type, level);

    tv_post_send(p->d, p->a, &w, NULL, NULL);
    return tv_poll_one(p->d, p->cqa).status;
}

static uint8_t *win(TvPair *p, uint64_t va)
{
    return test_scm_ptr(p->d, REG_OFF + va);
}

static void test_caps(void)
{
    TestHost *h = test_host_new(win_cfg(true));
    uint32_t caps = test_reg_read(h, RNIC_REG_CAPS_LO);

    g_assert_true(caps & RNIC_CAP_SCM);
    g_assert_true(caps & RNIC_CAP_FLUSH_PERSISTENT);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_SCM_SIZE_LO), ==,
                     WIN_PAGES * 4096);
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_SCM_SIZE_HI), ==, 0);
    test_host_free(h);

    h = test_host_new(win_cfg(false));
    caps = test_reg_read(h, RNIC_REG_CAPS_LO);
    g_assert_true(caps & RNIC_CAP_SCM);
    g_assert_false(caps & RNIC_CAP_FLUSH_PERSISTENT);
    test_host_free(h);

    h = test_host_new(NULL);
    caps = test_reg_read(h, RNIC_REG_CAPS_LO);
    g_assert_false(caps & (RNIC_CAP_SCM | RNIC_CAP_FLUSH_PERSISTENT));
    g_assert_cmpuint(test_reg_read(h, RNIC_REG_SCM_SIZE_LO), ==, 0);
    test_host_free(h);
}

/* What registration takes and refuses, each with its status. */
static void test_register(void)
{
    TvPair *p = tv_pair_new(win_cfg(true));
    TvPair *v = tv_pair_new(win_cfg(false));
    const uint32_t rw = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE;
    const struct {
        const char *what;
        TvPair *p;
        uint64_t iova, off, len;
        uint32_t access, sems;
        uint8_t key, status;
    } cases[] = {
        { "fine", p, 0, 0, 4096, rw, 1, KEY(0), RNIC_ST_OK },
        { "fine, unaligned, not zero-based", p, 0x1234, 0x777, 100, rw, 3,
          KEY(1), RNIC_ST_OK },
        { "the last byte", p, 0, WIN_PAGES * 4096 - 1, 1, rw, 1, KEY(0),
          RNIC_ST_OK },
        { "past the window", p, 0, WIN_PAGES * 4096 - 1, 2, rw, 1, KEY(0),
          RNIC_ST_BAD_PARAM },
        { "offset wraps", p, 0, UINT64_MAX - 10, 100, rw, 1, KEY(0),
          RNIC_ST_BAD_PARAM },
        { "no length", p, 0, 0, 0, rw, 1, KEY(0), RNIC_ST_BAD_PARAM },
        { "no semantic", p, 0, 0, 4096, rw, 0, KEY(0), RNIC_ST_BAD_PARAM },
        { "unknown semantic", p, 0, 0, 4096, rw, 1u << 6, KEY(0),
          RNIC_ST_BAD_PARAM },
        { "key's semantic not allowed", p, 0, 0, 4096, rw, 1, KEY(1),
          RNIC_ST_BAD_PARAM },
        { "remote write without local write", p, 0, 0, 4096,
          RNIC_ACCESS_REMOTE_WRITE, 1, KEY(0), RNIC_ST_BAD_PARAM },
        { "unknown access bit", p, 0, 0, 4096, rw | 0x400, 1, KEY(0),
          RNIC_ST_BAD_PARAM },
        { "durable on a volatile window", v, 0, 0, 4096, rw, 2, KEY(1),
          RNIC_ST_NOT_SUPPORTED },
        { "persistence on a volatile window", v, 0, 0, 4096,
          rw | RNIC_ACCESS_FLUSH_PERSISTENT, 1, KEY(0),
          RNIC_ST_NOT_SUPPORTED },
        { "plain on a volatile window", v, 0, 0, 4096,
          rw | RNIC_ACCESS_FLUSH_GLOBAL, 1, KEY(0), RNIC_ST_OK },
    };
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };
    uint32_t stag;
    uint8_t st;

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_test_message("%s", cases[i].what);
        stag = tv_reg_scm(cases[i].p->d, cases[i].p->pd, cases[i].iova,
                          cases[i].off, cases[i].len, cases[i].access,
                          cases[i].sems, cases[i].key, &st);
        g_assert_cmpuint(st, ==, cases[i].status);
        if (st == RNIC_ST_OK) {
            g_assert_cmpuint(stag & 0xff, ==, cases[i].key);
        }
    }
    /* ALLOC_MR of the kind */
    c.mr.kind = RNIC_MR_KIND_SCM;
    c.mr.pd = p->pd;
    c.mr.npages = 1;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_NOT_SUPPORTED);
    tv_pair_free(p);
    tv_pair_free(v);
}

/* PLAIN: ordinary RDMA, durable only once a FLUSH(persistence) says so. */
static void test_plain_and_flush(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    uint32_t plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);

    tv_fill(p->d, p->bufa, 8192, 1);
    g_assert_cmpuint(scm_write(p, 1, plain, 100, 8192), ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(win(p, 100), 8192, test_ptr(p->d, p->bufa), 8192);
    g_assert_cmpuint(scm_read(p, 2, plain, 100, 8192, p->bufa + 65536), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(p->d, p->bufa, p->bufa + 65536, 8192);

    /* a power cut before any flush loses it */
    test_host_power_cut(p->d);
    g_assert_cmpuint(*win(p, 100), ==, 0);
    g_assert_cmpuint(scm_write(p, 3, plain, 100, 8192), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(scm_flush(p, 4, plain, 100, 4096, RNIC_FLUSH_PERSISTENT,
                               RNIC_FLUSH_RANGE), ==, RNIC_WC_SUCCESS);
    test_host_power_cut(p->d);
    /* the flushed half stays, the rest is gone */
    g_assert_cmpmem(win(p, 100), 4096, test_ptr(p->d, p->bufa), 4096);
    g_assert_cmpuint(*win(p, 100 + 4096), ==, 0);
    /* the whole region */
    g_assert_cmpuint(scm_write(p, 5, plain, 100, 8192), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(scm_flush(p, 6, plain, 0, 0, RNIC_FLUSH_PERSISTENT |
                               RNIC_FLUSH_GLOBAL, RNIC_FLUSH_MR), ==,
                     RNIC_WC_SUCCESS);
    test_host_power_cut(p->d);
    g_assert_cmpmem(win(p, 100), 8192, test_ptr(p->d, p->bufa), 8192);
}

/* DURABLE: persisted before acknowledged, so before the completion. */
static void test_durable(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    uint32_t durable = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE);
    uint32_t plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    struct rnic_sq_wqe w;
    unsigned persists;
    uint64_t v = 0x1122334455667788ull;
    int i;

    tv_fill(p->d, p->bufa, 16384, 2);
    g_assert_cmpuint(scm_write(p, 1, durable, 0, 16384), ==, RNIC_WC_SUCCESS);
    /* durable at the completion: the power cut changes nothing */
    g_assert_cmpmem(p->d->scm_durable + REG_OFF, 16384,
                    test_ptr(p->d, p->bufa), 16384);
    g_assert_cmpuint(scm_write(p, 2, plain, 20000, 100), ==, RNIC_WC_SUCCESS);
    test_host_power_cut(p->d);
    g_assert_cmpmem(win(p, 0), 16384, test_ptr(p->d, p->bufa), 16384);
    g_assert_cmpuint(*win(p, 20000), ==, 0);

    /* ATOMIC WRITE and fetch-and-add through it */
    w = tv_atomic_write_wqe(3, 32768, durable, v);
    tv_post_send(p->d, p->a, &w, NULL, NULL);
    g_assert_cmpuint(tv_poll_one(p->d, p->cqa).status, ==, RNIC_WC_SUCCESS);
    test_host_power_cut(p->d);
    g_assert_cmpmem(win(p, 32768), 8, &v, 8);

    /* a burst of unsignaled durable writes: persisted in few calls */
    persists = p->d->persists;
    for (i = 0; i < 32; i++) {
        w = tv_wqe_flags(100 + i, RNIC_WR_RDMA_WRITE,
                         i == 31 ? RNIC_WQE_SIGNALED : 0, 1);
        w.rdma.remote_addr = 40000 + i * 64;
        w.rdma.rkey = durable;
        tv_write_send(p->d, p->a, &w, (struct rnic_sge[]) {
                          tv_sge(p->bufa + i * 64, 64, p->mra) }, NULL);
    }
    tv_ring_sq(p->d, p->a);
    g_assert_cmpuint(tv_poll_one(p->d, p->cqa).status, ==, RNIC_WC_SUCCESS);
    test_host_power_cut(p->d);
    g_assert_cmpmem(win(p, 40000), 32 * 64, test_ptr(p->d, p->bufa), 32 * 64);
    g_test_message("32 writes, %u persist calls",
                   p->d->persists - persists);
    g_assert_cmpuint(p->d->persists - persists, <, 32);
}

/* One request through a semantic it breaks: a remote access error. */
static void test_refused(void)
{
    static const struct {
        const char *what;
        uint8_t sem;
        uint32_t sems;              /* the region's; 0: all */
        uint8_t opcode;
        uint64_t va;
        uint32_t len;
        uint8_t tag_xor;
    } cases[] = {
        { "write through READONLY", RNIC_SCM_SEM_READONLY, 0,
          RNIC_WR_RDMA_WRITE, 0, 64 },
        { "atomic through READONLY", RNIC_SCM_SEM_READONLY, 0,
          RNIC_WR_ATOMIC_FETCH_ADD, 0, 8 },
        { "16 bytes through ATOMIC8", RNIC_SCM_SEM_ATOMIC8, 0,
          RNIC_WR_RDMA_WRITE, 0, 16 },
        { "unaligned through ATOMIC8", RNIC_SCM_SEM_ATOMIC8, 0,
          RNIC_WR_RDMA_WRITE, 4, 8 },
        { "a semantic the region does not allow", RNIC_SCM_SEM_DURABLE,
          1u << RNIC_SCM_SEM_PLAIN, RNIC_WR_RDMA_WRITE, 0, 64 },
        { "a reserved semantic", 6, 0, RNIC_WR_RDMA_READ, 0, 64 },
        { "another tag", RNIC_SCM_SEM_PLAIN, 0, RNIC_WR_RDMA_WRITE, 0, 64, 1 },
        { "management request not at offset 0", RNIC_SCM_SEM_MGMT, 0,
          RNIC_WR_RDMA_WRITE, 32, 32 },
        { "management request of 64 bytes", RNIC_SCM_SEM_MGMT, 0,
          RNIC_WR_RDMA_WRITE, 0, 64 },
        { "status read past the status", RNIC_SCM_SEM_MGMT, 0,
          RNIC_WR_RDMA_READ, 0, 64 },
        { "atomic through MGMT", RNIC_SCM_SEM_MGMT, 0,
          RNIC_WR_ATOMIC_FETCH_ADD, 0, 8 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        TvPair *p = tv_pair_new(win_cfg(true));
        uint32_t stag = scm_region(p, cases[i].sems ? cases[i].sems :
                                   ALL_SEMS);
        uint32_t rkey = RNIC_SCM_STAG(stag, cases[i].sem) ^ cases[i].tag_xor;
        struct rnic_sq_wqe w = tv_wqe(1, cases[i].opcode, 1);
        struct rnic_sge s = tv_sge(p->bufa, cases[i].len, p->mra);

        g_test_message("%s", cases[i].what);
        memset(win(p, 0), 0xee, 64);
        if (cases[i].opcode == RNIC_WR_ATOMIC_FETCH_ADD) {
            w.atomic.remote_addr = cases[i].va;
            w.atomic.rkey = rkey;
            w.atomic.compare_add = 1;
        } else {
            w.rdma.remote_addr = cases[i].va;
            w.rdma.rkey = rkey;
        }
        tv_post_send(p->d, p->a, &w, &s, NULL);
        tv_expect_status(p->d, p->cqa, 1, RNIC_WC_REM_ACCESS_ERR);
        for (int j = 0; j < 64; j++) {
            g_assert_cmpuint(*win(p, j), ==, 0xee);
        }
        tv_pair_free(p);
    }
}

/* READONLY reads; ATOMIC8 takes its 8 bytes; VISIBLE is plain RDMA. */
static void test_allowed(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);

    tv_fill(p->d, p->bufa, 4096, 5);
    g_assert_cmpuint(scm_write(p, 1, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_VISIBLE),
                               0, 4096), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(scm_read(p, 2, RNIC_SCM_STAG(stag,
                                                  RNIC_SCM_SEM_READONLY),
                              0, 4096, p->bufa + 65536), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(p->d, p->bufa, p->bufa + 65536, 4096);
    g_assert_cmpuint(scm_write(p, 3, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_ATOMIC8),
                               8, 8), ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(win(p, 8), 8, test_ptr(p->d, p->bufa), 8);
}

static uint8_t mgmt(TvPair *p, uint32_t stag, uint32_t op, uint64_t off,
                    uint64_t len, uint64_t cookie, struct rnic_scm_status *st)
{
    struct rnic_scm_mgmt *m = test_ptr(p->d, p->bufa + 8192);
    uint32_t key = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_MGMT);
    struct rnic_sq_wqe w = tv_wqe(op, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(p->bufa + 8192, sizeof(*m), p->mra);
    uint8_t status;

    memset(m, 0, sizeof(*m));
    m->op = op;
    m->offset = off;
    m->length = len;
    m->cookie = cookie;
    w.rdma.remote_addr = 0;
    w.rdma.rkey = key;
    tv_post_send(p->d, p->a, &w, &s, NULL);
    status = tv_poll_one(p->d, p->cqa).status;
    if (status == RNIC_WC_SUCCESS) {
        status = scm_read(p, 99, key, 0, sizeof(*st), p->bufa + 12288);
        memcpy(st, test_ptr(p->d, p->bufa + 12288), sizeof(*st));
    }
    return status;
}

/* MGMT: persist, zero, status through the management key. */
static void test_mgmt(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    uint32_t plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    struct rnic_scm_status st;

    tv_fill(p->d, p->bufa, 8192, 7);
    g_assert_cmpuint(scm_write(p, 1, plain, 0, 8192), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_PERSIST, 0, 4096, 0xc00c1e,
                          &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_OK);
    g_assert_cmpuint(st.cookie, ==, 0xc00c1e);
    g_assert_cmpuint(st.op, ==, RNIC_SCM_MGMT_PERSIST);
    g_assert_cmpuint(st.region_length, ==, REG_LEN);
    g_assert_cmpuint(st.persistent, ==, 1);
    g_assert_cmpuint(st.persists, >=, 1);
    test_host_power_cut(p->d);
    g_assert_cmpmem(win(p, 0), 4096, test_ptr(p->d, p->bufa), 4096);
    g_assert_cmpuint(*win(p, 4096), ==, 0);

    /* zero: cleared and durable */
    g_assert_cmpuint(scm_write(p, 2, plain, 0, 8192), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_ZERO, 100, 1000, 2, &st), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_OK);
    test_host_power_cut(p->d);
    for (int i = 100; i < 1100; i++) {
        g_assert_cmpuint(*win(p, i), ==, 0);
    }
    g_assert_cmpmem(win(p, 0), 100, test_ptr(p->d, p->bufa), 100);

    /* refused requests: the status says why, the QP goes on */
    g_assert_cmpuint(mgmt(p, stag, 77, 0, 0, 3, &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_BAD_OP);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_PERSIST, REG_LEN - 10, 11, 4,
                          &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_RANGE);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_PERSIST, UINT64_MAX, 2, 5,
                          &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_RANGE);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_STATUS, 0, 0, 6, &st), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_OK);
    g_assert_cmpuint(st.cookie, ==, 6);
}

/*
 * A region's MGMT status counts what was persisted through that region
 * only (issue 40, G4): a peer given the management key of one region does
 * not learn of the persists of others (FLUSH, MGMT, durable writes).
 */
static void test_mgmt_status_per_region(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    uint32_t other = tv_reg_scm(p->d, p->pd, 0, REG_OFF + REG_LEN, REG_LEN,
                                TV_ACCESS_ALL | RNIC_ACCESS_FLUSH_PERSISTENT,
                                ALL_SEMS, KEY(RNIC_SCM_SEM_PLAIN), NULL);
    struct rnic_scm_status st;

    /* the other region persists: a FLUSH, a MGMT request, a durable write */
    g_assert_cmpuint(scm_flush(p, 1, RNIC_SCM_STAG(other, RNIC_SCM_SEM_PLAIN),
                               0, 4096, RNIC_FLUSH_PERSISTENT,
                               RNIC_FLUSH_RANGE), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(mgmt(p, other, RNIC_SCM_MGMT_PERSIST, 0, 8192, 0xaaa,
                          &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(scm_write(p, 2, RNIC_SCM_STAG(other,
                                                   RNIC_SCM_SEM_DURABLE),
                               0, 64), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(p->d->persists, >=, 3);
    /* this one's status: nothing persisted through it, its own cookie */
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_STATUS, 0, 0, 0xbbb, &st),
                     ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.persists, ==, 0);
    g_assert_cmpuint(st.persisted_bytes, ==, 0);
    g_assert_cmpuint(st.cookie, ==, 0xbbb);
    /* its own persist is counted */
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_PERSIST, 0, 4096, 0xccc,
                          &st), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.persists, ==, 1);
    g_assert_cmpuint(st.persisted_bytes, ==, 4096);
    /* and the other's: its three */
    g_assert_cmpuint(mgmt(p, other, RNIC_SCM_MGMT_STATUS, 0, 0, 0xddd, &st),
                     ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.persists, ==, 3);
    g_assert_cmpuint(st.persisted_bytes, ==, 4096 + 8192 + 64);
    g_assert_cmpuint(st.cookie, ==, 0xddd);
}

/* A window that does not persist: no persistence to ask for. */
static void test_volatile(void)
{
    TvPair *p = tv_pair_new(win_cfg(false));
    uint32_t stag = scm_region(p, 1u << RNIC_SCM_SEM_PLAIN |
                               1u << RNIC_SCM_SEM_MGMT);
    uint32_t plain = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN);
    struct rnic_scm_status st;

    g_assert_cmpuint(scm_flush(p, 1, plain, 0, 64, RNIC_FLUSH_GLOBAL,
                               RNIC_FLUSH_RANGE), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(mgmt(p, stag, RNIC_SCM_MGMT_PERSIST, 0, 64, 1, &st), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(st.status, ==, RNIC_SCM_ST_NOT_PERSISTENT);
    g_assert_cmpuint(st.persistent, ==, 0);
    g_assert_cmpuint(p->d->persists, ==, 0);
    g_assert_cmpuint(scm_flush(p, 2, plain, 0, 64, RNIC_FLUSH_PERSISTENT,
                               RNIC_FLUSH_RANGE), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/*
 * SCM_PERSIST (the driver's flush of the window as an nvdimm region): a
 * CPU store into the window survives a power cut once a persist covers
 * it, and not before; ranges outside the window, user contexts and a
 * window that does not persist are refused.
 */
static void test_persist_cmd(void)
{
    TvPair *p = tv_pair_new(win_cfg(true));
    TvPair *v = tv_pair_new(win_cfg(false));
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_SCM_PERSIST };
    uint8_t *cpu = test_scm_ptr(p->d, 0x3000);
    uint64_t before = p->d->persists;

    g_assert_true(test_reg_read(p->d, RNIC_REG_CAPS_LO) & RNIC_CAP_SCM_PERSIST);
    g_assert_false(test_reg_read(v->d, RNIC_REG_CAPS_LO) & RNIC_CAP_SCM_PERSIST);

    /* stored, not persisted: gone */
    memset(cpu, 0xa1, 64);
    test_host_power_cut(p->d);
    g_assert_cmpuint(cpu[0], ==, 0);
    /* stored, persisted (a range around it): kept */
    memset(cpu, 0xa2, 64);
    memset(cpu + 4096, 0xa3, 64);      /* outside the range: gone */
    c.scm.offset = 0x3000;
    c.scm.length = 4096;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_OK);
    g_assert_cmpuint(p->d->persists, ==, before + 1);
    test_host_power_cut(p->d);
    g_assert_cmpuint(cpu[0], ==, 0xa2);
    g_assert_cmpuint(cpu[63], ==, 0xa2);
    g_assert_cmpuint(cpu[4096], ==, 0);
    /* the whole window, and nothing */
    c.scm.offset = 0;
    c.scm.length = WIN_PAGES * 4096;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_OK);
    c.scm.length = 0;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_OK);

    /* refused: past the end, wrapping, a user context, no persistence */
    c.scm.offset = WIN_PAGES * 4096 - 64;
    c.scm.length = 65;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.scm.offset = 64;
    c.scm.length = UINT64_MAX;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.scm.offset = WIN_PAGES * 4096 + 1;
    c.scm.length = 0;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_BAD_PARAM);
    c.scm.offset = 0;
    c.scm.length = 64;
    c.uctx = 1;
    g_assert_cmpuint(tv_cmd(p->d, &c).status, ==, RNIC_ST_PERMISSION);
    c.uctx = 0;
    g_assert_cmpuint(tv_cmd(v->d, &c).status, ==, RNIC_ST_NOT_SUPPORTED);
    g_assert_cmpuint(v->d->persists, ==, 0);
    tv_pair_free(v);
    tv_pair_free(p);
}

/* A window region as the source and the sink of local SGEs. */
static void test_local(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    struct rnic_sge s = tv_sge(0x100, 3000, stag);
    struct rnic_sge r = tv_sge(p->bufb, 3000, p->mrb);
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);

    for (int i = 0; i < 3000; i++) {
        *win(p, 0x100 + i) = i * 7;
    }
    tv_post_recv(p->d, p->b, 9, &r, 1);
    tv_post_send(p->d, p->a, &w, &s, NULL);
    tv_expect_cqe(p->d, p->cqb, 9, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    tv_expect_cqe(p->d, p->cqa, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(p->d, p->bufb), 3000, win(p, 0x100), 3000);
    /* a READ whose sink is the window */
    tv_fill(p->d, p->bufb + 8192, 3000, 4);
    w = tv_wqe(2, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = p->bufb + 8192;
    w.rdma.rkey = p->mrb;
    s = tv_sge(0x2000, 3000, stag);
    tv_post_send(p->d, p->a, &w, &s, NULL);
    tv_expect_cqe(p->d, p->cqa, 2, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    g_assert_cmpmem(win(p, 0x2000), 3000, test_ptr(p->d, p->bufb + 8192),
                    3000);
}

/*
 * A DURABLE key as a local key: a SEND received into the window and a
 * READ's sink there are durable when their completions are seen.
 */
static void test_durable_local(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, ALL_SEMS);
    uint32_t durable = RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE);
    struct rnic_sge r = tv_sge(0x1000, 2000, durable);
    struct rnic_sge s = tv_sge(p->bufb, 2000, p->mrb);
    struct rnic_sq_wqe w = tv_wqe(1, RNIC_WR_SEND, 1);

    tv_fill(p->d, p->bufb, 2000, 6);
    tv_post_recv(p->d, p->a, 7, &r, 1);
    tv_post_send(p->d, p->b, &w, &s, NULL);
    tv_expect_cqe(p->d, p->cqa, 7, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    g_assert_cmpmem(p->d->scm_durable + REG_OFF + 0x1000, 2000,
                    test_ptr(p->d, p->bufb), 2000);
    tv_expect_cqe(p->d, p->cqb, 1, RNIC_WC_SEND, RNIC_WC_SUCCESS);

    /* a READ from B's buffer into the window through the DURABLE lkey */
    tv_fill(p->d, p->bufb + 8192, 3000, 8);
    w = tv_wqe(2, RNIC_WR_RDMA_READ, 1);
    w.rdma.remote_addr = p->bufb + 8192;
    w.rdma.rkey = p->mrb;
    s = tv_sge(0x4000, 3000, durable);
    tv_post_send(p->d, p->a, &w, &s, NULL);
    tv_expect_cqe(p->d, p->cqa, 2, RNIC_WC_RDMA_READ, RNIC_WC_SUCCESS);
    g_assert_cmpmem(p->d->scm_durable + REG_OFF + 0x4000, 3000,
                    test_ptr(p->d, p->bufb + 8192), 3000);
}

/* The registration log replays window regions with their semantics. */
static void test_state_load(TvFixture *f, gconstpointer cfg)
{
    TvPair *p = f->p;
    uint32_t stag = scm_region(p, 1u << RNIC_SCM_SEM_PLAIN |
                               1u << RNIC_SCM_SEM_DURABLE);
    TestHost *src = p->d, *dst = test_host_new(win_cfg(true));
    GByteArray *img = g_byte_array_new();
    char *err = NULL;

    tv_fill(src, p->bufa, 4096, 8);
    g_assert_cmpuint(scm_write(p, 1, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_PLAIN),
                               0, 4096), ==, RNIC_WC_SUCCESS);
    rnic_engine_save(src->engine, img);
    test_host_copy_guest(dst, src);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    p->d = dst;
    test_host_free(src);
    f->h = dst;
    /* the same STag, the same rules */
    g_assert_cmpuint(scm_read(p, 2, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE),
                              0, 4096, p->bufa + 65536), ==,
                     RNIC_WC_SUCCESS);
    tv_assert_same(dst, p->bufa, p->bufa + 65536, 4096);
    g_assert_cmpuint(scm_write(p, 3, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_DURABLE),
                               8192, 64), ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(dst->scm_durable + REG_OFF + 8192, 64,
                    test_ptr(dst, p->bufa), 64);
    g_assert_cmpuint(scm_write(p, 4, RNIC_SCM_STAG(stag, RNIC_SCM_SEM_MGMT),
                               0, 32), ==, RNIC_WC_REM_ACCESS_ERR);
    g_byte_array_unref(img);
}

/* A destination without the same window refuses the source's record. */
static void test_config_check(void)
{
    TestHost *src = test_host_new(win_cfg(true));
    TestHost *none = test_host_new(NULL);
    TestHost *vol = test_host_new(win_cfg(false));
    GByteArray *rec = g_byte_array_new();
    char *err = NULL;

    rnic_engine_save_config(src->engine, rec);
    g_assert_false(rnic_engine_check_config(none->engine, rec->data, rec->len,
                                            &err));
    g_assert_nonnull(strstr(err, "scm window pages is 0 here but 256"));
    g_free(err);
    g_assert_false(rnic_engine_check_config(vol->engine, rec->data, rec->len,
                                            &err));
    g_assert_nonnull(strstr(err, "scm persistence is 0 here but 1"));
    g_free(err);
    g_assert_true(rnic_engine_check_config(src->engine, rec->data, rec->len,
                                           &err));
    g_byte_array_unref(rec);
    test_host_free(src);
    test_host_free(none);
    test_host_free(vol);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/scm/caps", test_caps);
    g_test_add_func("/rnic/scm/register", test_register);
    tv_test_add_pair("/rnic/scm/plain-and-flush", win_cfg(true),
                     test_plain_and_flush);
    tv_test_add_pair("/rnic/scm/durable", win_cfg(true), test_durable);
    g_test_add_func("/rnic/scm/refused", test_refused);
    tv_test_add_pair("/rnic/scm/allowed", win_cfg(true), test_allowed);
    tv_test_add_pair("/rnic/scm/mgmt", win_cfg(true), test_mgmt);
    tv_test_add_pair("/rnic/scm/mgmt-status-per-region", win_cfg(true),
                     test_mgmt_status_per_region);
    g_test_add_func("/rnic/scm/volatile", test_volatile);
    g_test_add_func("/rnic/scm/persist-cmd", test_persist_cmd);
    tv_test_add_pair("/rnic/scm/local", win_cfg(true), test_local);
    tv_test_add_pair("/rnic/scm/durable-local", win_cfg(true),
                     test_durable_local);
    tv_test_add_pair("/rnic/scm/state-load", win_cfg(true), test_state_load);
    g_test_add_func("/rnic/scm/config-check", test_config_check);
    return g_test_run();
}
