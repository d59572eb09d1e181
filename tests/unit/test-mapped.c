/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: mapped STags over a set of buffers (kind MAPPED,
 * patent f). On the loopback pair (a -> b): a READ whose response is
 * scattered through a mapped lkey; a peer's WRITE and READ through a
 * mapped rkey; SEND/RECV through mapped SGEs; packets crossing many small
 * segments; the interleaved form; fast registration (inline and through an
 * SGE), LOCAL_INV and SEND with invalidate; members deregistered or
 * re-keyed under a mapped STag (clean failures); bad tables and bad work
 * requests (clear statuses, nothing placed outside the set); a save and
 * load of the device with mapped STags valid, invalidated and with a
 * member gone.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

#define RW_ALL  (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ | \
                 RNIC_ACCESS_REMOTE_WRITE)
#define MAP_IOVA 0x7000000000ull    /* where mapped STags' bytes are seen */
#define SENTINEL 0xa5

static struct rnic_map_seg seg(uint64_t addr, uint32_t len, uint32_t lkey,
                               uint32_t skip)
{
    struct rnic_map_seg s = {
        .addr = addr, .length = len, .lkey = lkey, .skip = skip,
    };

    return s;
}

static uint64_t segs_bytes(const struct rnic_map_seg *s, uint32_t n)
{
    uint64_t t = 0;
    uint32_t i;

    for (i = 0; i < n; i++) {
        t += s[i].length;
    }
    return t;
}

/* REG_MR of kind MAPPED at MAP_IOVA: the STag, or 0 with *st. */
static uint32_t reg_mapped(TestHost *h, uint32_t pd, const struct rnic_map_seg *s,
                           uint32_t n, uint32_t repeat, uint64_t length,
                           uint32_t access, uint8_t *st)
{
    return tv_reg_mapped(h, pd, MAP_IOVA, length, s, n, repeat, access, 0x3c,
                         st);
}

/*
 * A signaled REG_MR work request on qp for mapped 'stag': the table inline
 * or (inline false) in guest memory registered in the pair's PD and named
 * by the WQE's one SGE; its completion status.
 */
static uint8_t fast_reg(TvPair *p, TvQp *qp, TvCq *cq, uint32_t stag,
                        const struct rnic_map_seg *s, uint32_t n,
                        uint32_t repeat, uint64_t length, uint32_t access,
                        bool inl)
{
    TestHost *h = p->d;
    struct rnic_sq_wqe w = tv_map_reg_wqe(9, stag, MAP_IOVA, length, n, repeat,
                                          access);
    struct rnic_sge sge;
    struct rnic_cqe c;

    if (inl) {
        w.flags |= RNIC_WQE_INLINE;
        w.inline_len = n * sizeof(*s);
        tv_post_send(h, qp, &w, NULL, s);
    } else {
        uint64_t t = test_alloc(h, MAX(n, 1) * sizeof(*s), 8);
        uint32_t tk = tv_reg_mr(h, p->pd, t, MAX(n, 1) * sizeof(*s),
                                TV_ACCESS_ALL, 0, NULL);

        memcpy(test_ptr(h, t), s, n * sizeof(*s));
        sge = tv_sge(t, n * sizeof(*s), tk);
        w.num_sge = 1;
        tv_post_send(h, qp, &w, &sge, NULL);
    }
    c = tv_poll_one(h, cq);
    g_assert_cmpuint(c.wr_id, ==, 9);
    return c.status;
}

/* From a: 'op' of 'len' bytes between local (laddr, lkey) and (raddr, rkey) */
static uint8_t rdma(TvPair *p, uint8_t op, uint64_t laddr, uint32_t lkey,
                    uint64_t raddr, uint32_t rkey, uint32_t len)
{
    struct rnic_sge s = tv_sge(laddr, len, lkey);
    struct rnic_sq_wqe w = tv_wqe(5, op, 1);
    struct rnic_cqe c;

    w.rdma.remote_addr = raddr;
    w.rdma.rkey = rkey;
    tv_post_send(p->d, p->a, &w, &s, NULL);
    c = tv_poll_one(p->d, p->cqa);
    g_assert_cmpuint(c.wr_id, ==, 5);
    return c.status;
}

/* The mapped bytes [0, len) equal 'src', read segment by segment. */
static void assert_scattered(TestHost *h, const struct rnic_map_seg *s,
                             uint32_t n, uint32_t repeat, uint64_t src)
{
    const uint8_t *x = test_ptr(h, src);
    uint32_t r, i;

    for (r = 0; r < repeat; r++) {
        for (i = 0; i < n; i++) {
            uint64_t a = s[i].addr + (uint64_t)r * (s[i].length + s[i].skip);

            g_assert_cmpmem(test_ptr(h, a), s[i].length, x, s[i].length);
            x += s[i].length;
        }
    }
}

/* Every byte of [addr, addr + len) is the sentinel. */
static void assert_untouched(TestHost *h, uint64_t addr, uint64_t len)
{
    const uint8_t *b = test_ptr(h, addr);
    uint64_t i;

    for (i = 0; i < len; i++) {
        g_assert_cmphex(b[i], ==, SENTINEL);
    }
}

/*
 * Five gapped pieces of a's buffer at odd offsets and lengths (one of them
 * across a page boundary), in an order that is not the buffer's.
 */
static uint32_t gapped(TvPair *p, uint64_t base, uint32_t lkey,
                       struct rnic_map_seg *s)
{
    s[0] = seg(base + 8193, 700, lkey, 0);
    s[1] = seg(base + 3, 1021, lkey, 0);
    s[2] = seg(base + 4096 - 333, 999, lkey, 0);   /* across a page */
    s[3] = seg(base + 20000, 1, lkey, 0);
    s[4] = seg(base + 30001, 5000, lkey, 0);
    return 5;
}

static void test_read_scatter(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5];
    uint32_t n = gapped(p, p->bufa, p->mra, s);
    uint64_t len = segs_bytes(s, n);
    uint32_t mk;

    memset(test_ptr(h, p->bufa), SENTINEL, 64 * 1024);
    tv_fill(h, p->bufb, len, 7);
    mk = reg_mapped(h, p->pd, s, n, 1, len, RNIC_ACCESS_LOCAL_WRITE, NULL);
    g_assert_cmpuint(RNIC_STAG_KEY(mk), ==, 0x3c);
    /* the READ's response scattered over the set by the mapping */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, MAP_IOVA, mk, p->bufb,
                          p->mrb, len), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, n, 1, p->bufb);
    /* the gaps: never written */
    assert_untouched(h, p->bufa + 1024, 4096 - 333 - 1024);
    assert_untouched(h, p->bufa + 4096 - 333 + 999, 8193 - (4096 - 333 + 999));
    assert_untouched(h, p->bufa + 8193 + 700, 20000 - 8193 - 700);
    assert_untouched(h, p->bufa + 20001, 30001 - 20001);
    /* part of it, from the middle: offsets map through the segments */
    tv_fill(h, p->bufb, len, 9);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, MAP_IOVA + 1500, mk, p->bufb,
                          p->mrb, 1000), ==, RNIC_WC_SUCCESS);
    /* byte 1500 of the set is byte 800 of segment 1 (700 + 800) */
    g_assert_cmpmem(test_ptr(h, s[1].addr + 800), 221,
                    test_ptr(h, p->bufb), 221);
    g_assert_cmpmem(test_ptr(h, s[2].addr), 779,
                    test_ptr(h, p->bufb + 221), 779);
    tv_pair_free(p);
}

static void test_rkey_write_read(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5];
    uint32_t n = gapped(p, p->bufb, p->mrb, s);
    uint64_t len = segs_bytes(s, n);
    uint32_t mk;

    memset(test_ptr(h, p->bufb), SENTINEL, 64 * 1024);
    mk = reg_mapped(h, p->pd, s, n, 1, len, RW_ALL, NULL);
    tv_fill(h, p->bufa, len, 3);
    /* the peer's WRITE through the mapped rkey */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, len), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, n, 1, p->bufa);
    assert_untouched(h, p->bufb + 20001, 30001 - 20001);
    /* and its READ gathers the set back in order */
    memset(test_ptr(h, p->bufa + 65536), 0, len);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, p->bufa + 65536, p->mra,
                          MAP_IOVA, mk, len), ==, RNIC_WC_SUCCESS);
    tv_assert_same(h, p->bufa, p->bufa + 65536, len);
    /* one byte past the set: a remote access error, nothing placed */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra,
                          MAP_IOVA + len - 8, mk, 9), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    assert_untouched(h, p->bufb + 20001, 30001 - 20001);
    tv_pair_free(p);
}

/* Reading only: a mapped rkey without remote write refuses a WRITE. */
static void test_rights(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5];
    uint32_t n = gapped(p, p->bufb, p->mrb, s);
    uint64_t len = segs_bytes(s, n);
    uint32_t ro, mr2, mk;
    uint8_t st;

    ro = reg_mapped(h, p->pd, s, n, 1, len, RNIC_ACCESS_REMOTE_READ, NULL);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, p->bufa, p->mra, MAP_IOVA,
                          ro, 64), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          ro, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    /* a member without local write cannot back a writable mapped STag */
    mr2 = tv_reg_mr(h, p->pd, p->bufb + 512 * 1024, 4096,
                    RNIC_ACCESS_REMOTE_READ, 0, NULL);
    s[0] = seg(p->bufb + 512 * 1024, 100, mr2, 0);
    mk = reg_mapped(h, p->pd, s, 1, 1, 100, RW_ALL, &st);
    g_assert_cmpuint(mk, ==, 0);
    g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM);
    tv_pair_free(p);
}

/* SEND and RECV with SGEs of mapped lkeys, a list mixing both kinds. */
static void test_send_recv(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg sa[5], sb[5];
    uint32_t n = gapped(p, p->bufa, p->mra, sa);
    uint64_t len = segs_bytes(sa, n);
    struct rnic_sge ss[2], rs[2];
    struct rnic_sq_wqe w = tv_wqe(11, RNIC_WR_SEND, 2);
    uint32_t ma, mb;

    gapped(p, p->bufb, p->mrb, sb);
    tv_fill(h, p->bufa, 64 * 1024, 5);
    memset(test_ptr(h, p->bufb), SENTINEL, 64 * 1024);
    ma = reg_mapped(h, p->pd, sa, n, 1, len, RNIC_ACCESS_LOCAL_WRITE, NULL);
    mb = reg_mapped(h, p->pd, sb, n, 1, len, RNIC_ACCESS_LOCAL_WRITE, NULL);
    /* a plain SGE then the mapped set, into the mapped set then plain */
    ss[0] = tv_sge(p->bufa + 100000, 300, p->mra);
    ss[1] = tv_sge(MAP_IOVA, len, ma);
    rs[0] = tv_sge(MAP_IOVA, len, mb);
    rs[1] = tv_sge(p->bufb + 100000, 300, p->mrb);
    tv_post_recv(h, p->b, 12, rs, 2);
    tv_post_send(h, p->a, &w, ss, NULL);
    tv_expect_cqe(h, p->cqa, 11, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    tv_expect_cqe(h, p->cqb, 12, RNIC_WC_RECV, RNIC_WC_SUCCESS);
    /* the receive's set holds the send's first 300 bytes, then its set */
    {
        g_autofree uint8_t *want = g_malloc(len + 300), *got = NULL;
        uint64_t off = 0;
        uint32_t i;

        memcpy(want, test_ptr(h, p->bufa + 100000), 300);
        for (i = 0; i < n; i++) {
            memcpy(want + 300 + off, test_ptr(h, sa[i].addr), sa[i].length);
            off += sa[i].length;
        }
        got = g_malloc(len + 300);
        off = 0;
        for (i = 0; i < n; i++) {
            memcpy(got + off, test_ptr(h, sb[i].addr), sb[i].length);
            off += sb[i].length;
        }
        memcpy(got + len, test_ptr(h, p->bufb + 100000), 300);
        g_assert_cmpmem(got, len + 300, want, len + 300);
    }
    assert_untouched(h, p->bufb + 20001, 30001 - 20001);
    tv_pair_free(p);
}

/*
 * 200 segments of 37 bytes, each 64 bytes apart: a 4 KiB packet crosses
 * more than a hundred of them (more pieces than a packet references: the
 * bytes travel through a copy), as WRITE source, WRITE target, READ source
 * and READ target.
 */
static void test_many_small(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    g_autofree struct rnic_map_seg *sa = g_new(struct rnic_map_seg, 200);
    g_autofree struct rnic_map_seg *sb = g_new(struct rnic_map_seg, 200);
    uint64_t len = 200 * 37;
    uint32_t i, ma, mb;

    for (i = 0; i < 200; i++) {
        sa[i] = seg(p->bufa + 64 * i, 37, p->mra, 0);
        sb[i] = seg(p->bufb + 64 * (199 - i), 37, p->mrb, 0);
    }
    tv_fill(h, p->bufa, 64 * 200, 1);
    memset(test_ptr(h, p->bufb), SENTINEL, 64 * 200);
    ma = reg_mapped(h, p->pd, sa, 200, 1, len, RNIC_ACCESS_LOCAL_WRITE, NULL);
    mb = reg_mapped(h, p->pd, sb, 200, 1, len, RW_ALL, NULL);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, MAP_IOVA, ma, MAP_IOVA, mb,
                          len), ==, RNIC_WC_SUCCESS);
    for (i = 0; i < 200; i++) {
        g_assert_cmpmem(test_ptr(h, sb[i].addr), 37, test_ptr(h, sa[i].addr),
                        37);
        assert_untouched(h, sb[i].addr + 37, 64 - 37);
    }
    tv_fill(h, p->bufa, 64 * 200, 2);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, MAP_IOVA, ma, MAP_IOVA, mb,
                          len), ==, RNIC_WC_SUCCESS);
    for (i = 0; i < 200; i++) {
        g_assert_cmpmem(test_ptr(h, sb[i].addr), 37, test_ptr(h, sa[i].addr),
                        37);
    }
    tv_pair_free(p);
}

/*
 * The interleaved form: two segments of 8 bytes with 8 skipped, over one
 * buffer, 64 repetitions: repetition r is the buffer's word 2r + 1, then
 * word 2r (each pair of words swapped).
 */
static void test_interleaved(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[2];
    uint32_t mk;
    uint8_t st;

    /* odd words then even words: each repetition swaps a pair of words */
    s[0] = seg(p->bufb + 8, 8, p->mrb, 8);
    s[1] = seg(p->bufb, 8, p->mrb, 8);
    memset(test_ptr(h, p->bufb), SENTINEL, 2048);
    mk = reg_mapped(h, p->pd, s, 2, 64, 1024, RW_ALL, NULL);
    tv_fill(h, p->bufa, 1024, 4);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 1024), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, 2, 64, p->bufa);
    assert_untouched(h, p->bufb + 1024, 1024);
    /* read back from repetition 3's second segment on */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_READ, p->bufa + 4096, p->mra,
                          MAP_IOVA + 3 * 16 + 8, mk, 40), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(h, p->bufa + 4096), 40,
                    test_ptr(h, p->bufa + 3 * 16 + 8), 40);
    /* the same words twice: overlapping segments are refused */
    s[1] = seg(p->bufb + 4, 8, p->mrb, 8);
    g_assert_cmpuint(reg_mapped(h, p->pd, s, 2, 64, 1024, RW_ALL, &st), ==,
                     0);
    g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM);
    tv_pair_free(p);
}

/* Members deregistered or re-keyed under a mapped STag: clean failures. */
static void test_member_gone(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint64_t m = p->bufb + 256 * 1024;
    uint32_t mem = tv_reg_mr(h, p->pd, m, 8192, TV_ACCESS_ALL, 0, NULL);
    struct rnic_map_seg s[2] = {
        seg(p->bufb, 100, p->mrb, 0), seg(m + 10, 200, mem, 0),
    };
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    uint32_t mk = reg_mapped(h, p->pd, s, 2, 1, 300, RW_ALL, NULL);

    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 300), ==, RNIC_WC_SUCCESS);
    c.destroy.handle = mem;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(h, &c);
    memset(test_ptr(h, m), SENTINEL, 8192);
    /* the first segment still works; the second is gone */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 100), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra,
                          MAP_IOVA + 50, mk, 100), ==, RNIC_WC_REM_ACCESS_ERR);
    assert_untouched(h, m, 8192);
    tv_pair_free(p);

    /* the same STag index registered again with another key */
    p = tv_pair_new(NULL);
    h = p->d;
    mem = tv_reg_mr(h, p->pd, m, 8192, TV_ACCESS_ALL, 0, NULL);
    s[0] = seg(m, 64, mem, 0);
    mk = reg_mapped(h, p->pd, s, 1, 1, 64, RW_ALL, NULL);
    g_assert_cmpuint(tv_rereg_mr(h, mem, p->ctx, RNIC_REREG_ACCESS, p->pd, 0,
                                 0, RNIC_ACCESS_REMOTE_READ), ==, RNIC_ST_OK);
    memset(test_ptr(h, m), SENTINEL, 64);
    /* the member lost local write: writing through the set fails */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    assert_untouched(h, m, 64);
    tv_pair_free(p);
}

/* A mapped lkey whose member goes between two identical posts. */
static void test_member_gone_local(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint64_t m = p->bufa + 256 * 1024;
    uint32_t mem = tv_reg_mr(h, p->pd, m, 8192, TV_ACCESS_ALL, 0, NULL);
    struct rnic_map_seg s[1] = { seg(m, 128, mem, 0) };
    uint32_t mk = reg_mapped(h, p->pd, s, 1, 1, 128,
                             RNIC_ACCESS_LOCAL_WRITE, NULL);
    struct rnic_sge sg[2] = {
        tv_sge(MAP_IOVA, 64, mk), tv_sge(MAP_IOVA + 64, 64, mk),
    };
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    struct rnic_sq_wqe w = tv_wqe(21, RNIC_WR_RDMA_WRITE, 2);
    int i;

    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    /* the same two-SGE list twice: what a cache would keep */
    for (i = 0; i < 2; i++) {
        tv_post_send(h, p->a, &w, sg, NULL);
        tv_expect_status(h, p->cqa, 21, RNIC_WC_SUCCESS);
    }
    c.destroy.handle = mem;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(h, &c);
    tv_post_send(h, p->a, &w, sg, NULL);
    tv_expect_status(h, p->cqa, 21, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);
}

static void test_fast_reg(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5];
    uint32_t n = gapped(p, p->bufb, p->mrb, s);
    uint64_t len = segs_bytes(s, n);
    uint32_t mk = tv_alloc_mapped(h, p->pd, 8, 0x10), k2;

    /* allocated: not valid yet */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);

    p = tv_pair_new(NULL);
    h = p->d;
    n = gapped(p, p->bufb, p->mrb, s);
    mk = tv_alloc_mapped(h, p->pd, 8, 0x10);
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, mk, s, n, 1, len, RW_ALL, true),
                     ==, RNIC_WC_SUCCESS);
    tv_fill(h, p->bufa, len, 8);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, len), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, n, 1, p->bufa);
    /* still valid: a second registration is refused */
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, mk, s, n, 1, len, RW_ALL, true),
                     ==, RNIC_WC_LOC_PROT_ERR);
    tv_pair_free(p);

    /* LOCAL_INV, then a registration with a new key through an SGE */
    p = tv_pair_new(NULL);
    h = p->d;
    n = gapped(p, p->bufb, p->mrb, s);
    mk = tv_alloc_mapped(h, p->pd, 8, 0x10);
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, mk, s, n, 1, len, RW_ALL, true),
                     ==, RNIC_WC_SUCCESS);
    /* counted: one registration work request, one mapped registration */
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_FAST_REGS), ==, 1);
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_MAPPED_REGS), ==, 1);
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_INVALIDATES), ==, 0);
    {
        struct rnic_sq_wqe w = tv_wqe(31, RNIC_WR_LOCAL_INV, 0);

        w.imm_or_inv = mk;
        tv_post_send(h, p->b, &w, NULL, NULL);
        tv_expect_status(h, p->cqb, 31, RNIC_WC_SUCCESS);
    }
    k2 = (mk & ~0xffu) | 0x77;
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, k2, s, n, 1, len, RW_ALL,
                              false), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_FAST_REGS), ==, 2);
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_MAPPED_REGS), ==, 2);
    g_assert_cmpuint(tv_stat(h, RNIC_STAT_INVALIDATES), ==, 1);
    tv_fill(h, p->bufa, len, 9);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          k2, len), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, n, 1, p->bufa);
    /* the old key is no longer the STag's */
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* The peer's SEND with invalidate takes a mapped rkey away. */
static void test_send_inv(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5];
    uint32_t n = gapped(p, p->bufb, p->mrb, s);
    uint64_t len = segs_bytes(s, n);
    uint32_t mk = tv_alloc_mapped(h, p->pd, 8, 0x20);
    struct rnic_sge rs = tv_sge(p->bufb + 512 * 1024, 64, p->mrb);
    struct rnic_sge ss = tv_sge(p->bufa, 64, p->mra);
    struct rnic_sq_wqe w = tv_wqe(41, RNIC_WR_SEND_INV, 1);
    struct rnic_cqe c;

    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, mk, s, n, 1, len, RW_ALL, true),
                     ==, RNIC_WC_SUCCESS);
    tv_post_recv(h, p->b, 42, &rs, 1);
    w.imm_or_inv = mk;
    tv_post_send(h, p->a, &w, &ss, NULL);
    tv_expect_cqe(h, p->cqa, 41, RNIC_WC_SEND, RNIC_WC_SUCCESS);
    c = tv_poll_one(h, p->cqb);
    g_assert_cmpuint(c.wr_id, ==, 42);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          mk, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* Bad tables by REG_MR: each a clear status, nothing registered. */
static void test_bad_tables(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    uint32_t pd2 = tv_pd(h, p->ctx, 0);
    uint32_t other = tv_reg_mr(h, pd2, p->bufb + 600 * 1024, 4096,
                               TV_ACCESS_ALL, 0, NULL);
    struct rnic_map_seg s[2] = {
        seg(p->bufb, 100, p->mrb, 0), seg(p->bufb + 200, 100, p->mrb, 0),
    };
    uint32_t mk = reg_mapped(h, p->pd, s, 2, 1, 200, RW_ALL, NULL);
    g_autofree struct rnic_map_seg *big = NULL;
    uint32_t count = h->engine->mr_count;
    uint8_t st;

#define EXPECT_BAD(n, rep, len, ...) \
    do { \
        struct rnic_map_seg t[2] = { s[0], s[1] }; \
        __VA_ARGS__; \
        g_assert_cmpuint(reg_mapped(h, p->pd, t, (n), (rep), (len), RW_ALL, \
                                    &st), ==, 0); \
        g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM); \
        g_assert_cmpuint(h->engine->mr_count, ==, count); \
    } while (0)
    EXPECT_BAD(0, 1, 0);                            /* empty */
    EXPECT_BAD(2, 1, 201);                          /* length mismatch */
    EXPECT_BAD(2, 1, 200, t[1].addr = p->bufb + 50); /* overlapping */
    EXPECT_BAD(2, 1, 200, t[1].lkey = other;
               t[1].addr = p->bufb + 600 * 1024);   /* another PD */
    EXPECT_BAD(2, 1, 200, t[1].lkey = mk;
               t[1].addr = MAP_IOVA);               /* nesting */
    EXPECT_BAD(2, 1, 200, t[1].addr = p->bufb + TV_BUF_SIZE - 99); /* outside */
    EXPECT_BAD(2, 1, 200, t[1].lkey = p->mrb ^ 1);  /* wrong key */
    EXPECT_BAD(2, 1, 200, t[1].length = 0);         /* empty segment */
    EXPECT_BAD(2, 1, 200, t[1].rsvd = 1);           /* reserved */
    EXPECT_BAD(2, 1, 200, t[1].skip = 4);           /* skip in a list */
    EXPECT_BAD(2, 1, 200, t[1].addr = UINT64_MAX - 10); /* wraps */
    /*
     * interleaved whose span, (repeat - 1) * stride + length, overflows 64
     * bits (the table alone, before any member is looked at)
     */
    {
        struct rnic_map_seg w = seg(p->bufb, 256, p->mrb, UINT32_MAX);
        const char *why = NULL;

        g_assert_null(rnic_map_new(h->engine, &w, 1, UINT32_MAX,
                                   256ull * UINT32_MAX, &why));
        g_assert_nonnull(strstr(why, "wraps"));
    }
#undef EXPECT_BAD
    /* too long */
    big = g_new0(struct rnic_map_seg, RNIC_MAP_MAX_SEGS + 1);
    g_assert_cmpuint(reg_mapped(h, p->pd, big, RNIC_MAP_MAX_SEGS + 1, 1, 0,
                                RW_ALL, &st), ==, 0);
    g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM);
    /* rights a mapped STag cannot have */
    g_assert_cmpuint(reg_mapped(h, p->pd, s, 2, 1, 200,
                                RW_ALL | RNIC_ACCESS_MW_BIND, &st), ==, 0);
    g_assert_cmpuint(st, ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(h->engine->mr_count, ==, count);
    tv_pair_free(p);
}

/* Bad registration work requests: protection errors, nothing changes. */
static void test_bad_wqes(void)
{
    struct rnic_map_seg s[5];
    int i;

    for (i = 0; i < 5; i++) {
        TvPair *p = tv_pair_new(NULL);
        TestHost *h = p->d;
        uint32_t n = gapped(p, p->bufb, p->mrb, s);
        uint64_t len = segs_bytes(s, n);
        uint32_t mk = tv_alloc_mapped(h, p->pd, 4, 0x10);
        uint8_t st;

        switch (i) {
        case 0:     /* more segments than allocated for */
            st = fast_reg(p, p->b, p->cqb, mk, s, n, 1, len, RW_ALL, true);
            break;
        case 1:     /* no segment */
            st = fast_reg(p, p->b, p->cqb, mk, s, 0, 1, 0, RW_ALL, true);
            break;
        case 2:     /* the length does not match */
            st = fast_reg(p, p->b, p->cqb, mk, s, 2, 1, len, RW_ALL, false);
            break;
        case 3:     /* a member of the mapped STag itself */
            s[1] = seg(MAP_IOVA, 10, mk, 0);
            st = fast_reg(p, p->b, p->cqb, mk, s, 2, 1, s[0].length + 10,
                          RW_ALL, true);
            break;
        default:    /* one segment out of its member */
            s[0].addr = p->bufb + TV_BUF_SIZE - 10;
            st = fast_reg(p, p->b, p->cqb, mk, s, 1, 1, s[0].length, RW_ALL,
                          true);
            break;
        }
        g_assert_cmpuint(st, ==, RNIC_WC_LOC_PROT_ERR);
        g_assert_null(rnic_mrt_lookup(&rnic_netctx_lookup(h->engine,
                                                          p->ctx)->mrt,
                                      RNIC_STAG_INDEX(mk))->map);
        tv_pair_free(p);
    }
}

/*
 * A save and load of the device: a mapped STag by REG_MR, one fast
 * registered, one invalidated, one whose member is gone; each behaves
 * the same after.
 */
static void test_migrate(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_map_seg s[5], il[2];
    uint32_t n = gapped(p, p->bufb, p->mrb, s);
    uint64_t len = segs_bytes(s, n);
    uint64_t m = p->bufb + 512 * 1024;
    uint32_t mem = tv_reg_mr(h, p->pd, m, 4096, TV_ACCESS_ALL, 0, NULL);
    struct rnic_map_seg g[1] = { seg(m, 64, mem, 0) };
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    uint32_t reg = reg_mapped(h, p->pd, s, n, 1, len, RW_ALL, NULL);
    uint32_t fr = tv_alloc_mapped(h, p->pd, 8, 0x11);
    uint32_t inv = tv_alloc_mapped(h, p->pd, 8, 0x12);
    uint32_t gone = reg_mapped(h, p->pd, g, 1, 1, 64, RW_ALL, NULL);

    il[0] = seg(p->bufb + 700 * 1024 + 8, 8, p->mrb, 8);
    il[1] = seg(p->bufb + 700 * 1024, 8, p->mrb, 8);
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, fr, il, 2, 16, 256, RW_ALL,
                              true), ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(fast_reg(p, p->b, p->cqb, inv, s, n, 1, len, RW_ALL,
                              false), ==, RNIC_WC_SUCCESS);
    {
        struct rnic_sq_wqe w = tv_wqe(31, RNIC_WR_LOCAL_INV, 0);

        w.imm_or_inv = inv;
        tv_post_send(h, p->b, &w, NULL, NULL);
        tv_expect_status(h, p->cqb, 31, RNIC_WC_SUCCESS);
    }
    c.destroy.handle = mem;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(h, &c);

    tv_pair_migrate(p);
    h = p->d;
    tv_fill(h, p->bufa, len, 12);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          reg, len), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, s, n, 1, p->bufa);
    tv_fill(h, p->bufa, 256, 13);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          fr, 256), ==, RNIC_WC_SUCCESS);
    assert_scattered(h, il, 2, 16, p->bufa);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          inv, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);

    /* the member-less one, on a pair of its own after a migration */
    p = tv_pair_new(NULL);
    h = p->d;
    mem = tv_reg_mr(h, p->pd, m, 4096, TV_ACCESS_ALL, 0, NULL);
    g[0] = seg(m, 64, mem, 0);
    gone = reg_mapped(h, p->pd, g, 1, 1, 64, RW_ALL, NULL);
    c.destroy.handle = mem;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(h, &c);
    tv_pair_migrate(p);
    g_assert_cmpuint(rdma(p, RNIC_WR_RDMA_WRITE, p->bufa, p->mra, MAP_IOVA,
                          gone, 64), ==, RNIC_WC_REM_ACCESS_ERR);
    tv_pair_free(p);
}

/* A user context may allocate a mapped STag (not a page-list fast-reg MR) */
static void test_user_alloc(void)
{
    TestHost *h = test_host_new(NULL);
    uint32_t uctx, ctx, pd;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };

    tv_enable(h, 4);
    uctx = tv_uctx(h);
    ctx = tv_net_ctx(h, 0);
    pd = tv_pd(h, ctx, uctx);
    c.uctx = uctx;
    c.mr.pd = pd;
    c.mr.npages = 4;
    c.mr.kind = RNIC_MR_KIND_MAPPED;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    c.mr.kind = RNIC_MR_KIND_MEM;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_PERMISSION);
    c.mr.kind = RNIC_MR_KIND_MAPPED;
    c.mr.npages = RNIC_MAP_MAX_SEGS + 1;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_PARAM);
    test_host_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/mapped/read-scatter", test_read_scatter);
    g_test_add_func("/rnic/mapped/rkey-write-read", test_rkey_write_read);
    g_test_add_func("/rnic/mapped/rights", test_rights);
    g_test_add_func("/rnic/mapped/send-recv", test_send_recv);
    g_test_add_func("/rnic/mapped/many-small", test_many_small);
    g_test_add_func("/rnic/mapped/interleaved", test_interleaved);
    g_test_add_func("/rnic/mapped/member-gone", test_member_gone);
    g_test_add_func("/rnic/mapped/member-gone-local", test_member_gone_local);
    g_test_add_func("/rnic/mapped/fast-reg", test_fast_reg);
    g_test_add_func("/rnic/mapped/send-inv", test_send_inv);
    g_test_add_func("/rnic/mapped/bad-tables", test_bad_tables);
    g_test_add_func("/rnic/mapped/bad-wqes", test_bad_wqes);
    g_test_add_func("/rnic/mapped/migrate", test_migrate);
    g_test_add_func("/rnic/mapped/user-alloc", test_user_alloc);
    return g_test_run();
}
