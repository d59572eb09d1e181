/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the migration state image (round trip, corruption).
 */
#include <stdio.h>
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-state.h"

static GByteArray *save(TestHost *h)
{
    GByteArray *img = g_byte_array_new();

    rnic_engine_save(h->engine, img);
    return img;
}

static void test_roundtrip(void)
{
    TestHost *src = test_host_new(NULL);
    TestHost *dst = test_host_new(NULL);
    struct rnic_admin_cmd cmd = { .opcode = RNIC_CMD_NOP };
    GByteArray *img;
    char *err = NULL;

    tv_enable(src, 4);
    tv_admin(src, &cmd);
    test_reg_write(src, RNIC_REG_SCRATCH, 0x12345678);
    test_reg_write(src, RNIC_REG_MAC_HI, 0xbeef);
    test_host_advance(src, 7000000);
    img = save(src);
    dst->now_ns = 5;            /* another host, another clock */
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_SCRATCH), ==, 0x12345678);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_MAC_HI), ==, 0xbeef);
    g_assert_cmphex(test_reg_read(dst, RNIC_REG_DEV_STATUS), ==,
                    test_reg_read(src, RNIC_REG_DEV_STATUS));
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_AQ_HEAD), ==, 1);
    g_assert_cmpuint(test_reg_read(dst, RNIC_REG_HEARTBEAT), ==,
                     test_reg_read(src, RNIC_REG_HEARTBEAT));
    g_assert_cmpuint(rnic_engine_stat(dst->engine, RNIC_STAT_ADMIN_CMDS), ==, 1);
    /* the destination's admin queue goes on where the source stopped */
    dst->aq = src->aq;
    dst->acq = src->acq;
    dst->aq_log2 = 4;
    dst->aq_tail = 1;
    dst->acq_head = 1;
    dst->next_cmd_id = src->next_cmd_id;
    memcpy(dst->ram, src->ram, src->ram_size);
    cmd.opcode = RNIC_CMD_NOP;
    g_assert_cmpuint(tv_admin(dst, &cmd).status, ==, RNIC_ST_OK);
    g_byte_array_unref(img);
    test_host_free(src);
    test_host_free(dst);
}

static void test_corrupt(void)
{
    TestHost *src = test_host_new(NULL);
    TestHost *dst = test_host_new(NULL);
    GByteArray *img;
    char *err = NULL;
    size_t cut;

    tv_enable(src, 4);
    img = save(src);
    /* every truncation fails cleanly */
    for (cut = 0; cut < img->len; cut++) {
        /* every mandatory section must be there: no cut parses */
        g_assert_false(rnic_engine_load(dst->engine, img->data, cut, &err));
        g_assert_nonnull(err);
        g_free(err);
        err = NULL;
    }
    /* bad magic */
    img->data[0] ^= 0xff;
    g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_nonnull(strstr(err, "not an rnic state image"));
    g_free(err);
    img->data[0] ^= 0xff;
    /* unknown mandatory section appended */
    {
        static const uint8_t sec[] = { 0x99, 0, 0, 0, 0, 0, 0, 0 };

        g_byte_array_append(img, sec, sizeof(sec));
        g_assert_false(rnic_engine_load(dst->engine, img->data, img->len, &err));
        g_assert_nonnull(strstr(err, "unknown mandatory"));
        g_free(err);
    }
    g_byte_array_unref(img);
    test_host_free(src);
    test_host_free(dst);
}

/* The driver's view of a pair, moved to another host. */
static TvPair *pair_move(TvPair *p, TestHost *to)
{
    TvPair *q = g_new(TvPair, 1);

    *q = *p;
    q->d = to;
    q->cqa = g_memdup2(p->cqa, sizeof(*p->cqa));
    q->cqb = g_memdup2(p->cqb, sizeof(*p->cqb));
    q->a = g_memdup2(p->a, sizeof(*p->a));
    q->b = g_memdup2(p->b, sizeof(*p->b));
    q->a->scq = q->a->rcq = q->cqa;
    q->b->scq = q->b->rcq = q->cqb;
    to->aq = p->d->aq;
    to->acq = p->d->acq;
    to->aq_log2 = p->d->aq_log2;
    to->aq_tail = p->d->aq_tail;
    to->acq_head = p->d->acq_head;
    to->next_cmd_id = p->d->next_cmd_id;
    to->alloc_next = p->d->alloc_next;
    return q;
}

/* Every live entry of the source resolves, in the destination, to the same
 * guest addresses under the same STag (and the same rights, PD, state). */
static void compare_tables(RnicEngine *s, RnicEngine *d)
{
    uint32_t c, dir, i;
    unsigned n = 0;

    g_assert_cmpuint(s->mr_count, ==, d->mr_count);
    for (c = 0; c < s->net_ctxs.cap; c++) {
        RnicNetCtx *sc = s->net_ctxs.slots[c];
        RnicNetCtx *dc = rnic_netctx_lookup(d, c);

        if (!sc) {
            continue;
        }
        g_assert_nonnull(dc);
        g_assert_cmpuint(dc->net_id, ==, sc->net_id);
        for (dir = 0; dir < sc->mrt.ndir; dir++) {
            for (i = 0; sc->mrt.dir[dir] && i < RNIC_MRT_LEAF_SIZE; i++) {
                RnicMr *sm = sc->mrt.dir[dir][i];
                RnicMr *dm;
                RnicDmaSeg ss[64], ds[64];
                uint32_t sn = 0, dn = 0;

                if (!sm) {
                    continue;
                }
                dm = rnic_mrt_lookup(&dc->mrt, RNIC_STAG_INDEX(sm->stag));
                g_assert_nonnull(dm);
                g_assert_cmphex(dm->stag, ==, sm->stag);
                g_assert_cmpuint(dm->pd->handle, ==, sm->pd->handle);
                g_assert_cmpuint(dm->state, ==, sm->state);
                g_assert_cmpuint(dm->access, ==, sm->access);
                g_assert_cmpuint(dm->fast_reg, ==, sm->fast_reg);
                n++;
                if (sm->state != RNIC_MR_VALID) {
                    continue;
                }
                g_assert_cmpuint(dm->iova, ==, sm->iova);
                g_assert_cmpuint(dm->length, ==, sm->length);
                g_assert_true(rnic_mr_segs(sm, sm->iova,
                                           MIN(sm->length, 200000), ss, &sn,
                                           64));
                g_assert_true(rnic_mr_segs(dm, dm->iova,
                                           MIN(dm->length, 200000), ds, &dn,
                                           64));
                g_assert_cmpuint(sn, ==, dn);
                while (sn--) {
                    g_assert_cmphex(ss[sn].addr, ==, ds[sn].addr);
                    g_assert_cmpuint(ss[sn].len, ==, ds[sn].len);
                }
            }
        }
    }
    g_assert_cmpuint(n, ==, s->mr_count);
    for (i = 0; i < s->qps.cap; i++) {
        RnicQp *sq = s->qps.slots[i];
        RnicQp *dq = rnic_qp_lookup(d, i);

        if (sq) {
            g_assert_nonnull(dq);
            g_assert_cmpuint(dq->qpn, ==, sq->qpn);
            g_assert_cmpuint(dq->state, ==, sq->state);
            g_assert_cmpuint(dq->ctx->handle, ==, sq->ctx->handle);
            g_assert_cmpuint(dq->req_psn, ==, sq->req_psn);
            g_assert_cmpuint(dq->resp.epsn, ==, sq->resp.epsn);
            g_assert_true(rnic_qp_by_qpn(dq->ctx, dq->qpn) == dq);
        } else {
            g_assert_null(dq);
        }
    }
}

static uint32_t alloc_mr(TestHost *h, uint32_t pd, uint32_t npages)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };

    c.mr.pd = pd;
    c.mr.npages = npages;
    c.mr.key = 0x42;
    return tv_cmd_ok(h, &c);
}

/* A busy device: every kind of object, traffic done, one SEND waiting for
 * a receive (RNR), completions not consumed, a CQ armed. */
static TvPair *busy_device(uint32_t *fr_stag, uint32_t *l0_stag,
                           uint64_t *l0_region)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_admin_cmd c;
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    uint32_t u, ctx2, pd2, gone, inv;
    uint64_t target = test_alloc(h, 8 * 4096, 4096);
    uint64_t pbl = test_alloc(h, 64, 8);
    uint64_t *l = test_ptr(h, pbl);
    int i;

    u = tv_uctx(h);
    g_free(tv_cq(h, 4, p->eq, u));
    ctx2 = tv_net_ctx(h, 33);
    tv_gid(h, 5, ctx2, 9);
    pd2 = tv_pd(h, ctx2, u);
    tv_reg_mr(h, pd2, p->bufa, 8192, RNIC_ACCESS_LOCAL_WRITE, u, NULL);
    g_free(tv_srq(h, p->pd, 4, 2, 0));
    /* a hole in the table, a contiguous region, fast-reg MRs */
    gone = tv_reg_mr(h, p->pd, p->bufa, 4096, 0, 0, NULL);
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_DEREG_MR;
    c.destroy.handle = gone;
    c.destroy.net_ctx = p->ctx;
    tv_cmd_ok(h, &c);
    *l0_region = test_alloc(h, 2 * 4096, 4096);
    memset(&c, 0, sizeof(c));
    c.opcode = RNIC_CMD_REG_MR;
    c.mr.iova = 0x300000;
    c.mr.length = 8192;
    c.mr.pbl_addr = *l0_region;
    c.mr.pd = p->pd;
    c.mr.npages = 2;
    c.mr.access = TV_ACCESS_ALL;
    c.mr.page_shift = 12;
    c.mr.levels = 0;
    *l0_stag = tv_cmd_ok(h, &c);
    *fr_stag = alloc_mr(h, p->pd, 8);
    inv = alloc_mr(h, p->pd, 8);
    for (i = 0; i < 8; i++) {
        l[i] = GUINT64_TO_LE(target + (7 - i) * 4096);
    }
    w = tv_wqe(1, RNIC_WR_REG_MR, 0);
    w.reg.iova = 0x900000;
    w.reg.length = 8 * 4096;
    w.reg.pbl_addr = pbl;
    w.reg.stag = RNIC_STAG(RNIC_STAG_INDEX(*fr_stag), 0x43);
    w.reg.access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                   RNIC_ACCESS_REMOTE_READ;
    w.reg.npages = 8;
    w.reg.page_shift = 12;
    tv_post_send(h, p->b, &w, NULL, NULL);
    *fr_stag = w.reg.stag;
    w.reg.stag = inv;
    tv_post_send(h, p->b, &w, NULL, NULL);
    w = tv_wqe(2, RNIC_WR_LOCAL_INV, 0);
    w.imm_or_inv = inv;
    tv_post_send(h, p->b, &w, NULL, NULL);
    g_assert_cmpuint(tv_poll_one(h, p->cqb).status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_poll_one(h, p->cqb).status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(tv_poll_one(h, p->cqb).status, ==, RNIC_WC_SUCCESS);
    /* traffic: PSNs move */
    for (i = 0; i < 5; i++) {
        s = tv_sge(p->bufa, 3000, p->mra);
        r = tv_sge(p->bufb + 100000, 3000, p->mrb);
        tv_post_recv(h, p->b, 100 + i, &r, 1);
        w = tv_wqe(10 + i, RNIC_WR_SEND, 1);
        tv_post_send(h, p->a, &w, &s, NULL);
    }
    /* leave 3 send completions unconsumed, consume the receives */
    {
        struct rnic_cqe cq[8];

        g_assert_cmpint(tv_poll(h, p->cqb, cq, 8), ==, 5);
        g_assert_cmpint(tv_poll(h, p->cqa, cq, 2), ==, 2);
    }
    /* a receive posted on a, a SEND from a that b cannot take (RNR) */
    r = tv_sge(p->bufa + 200000, 500, p->mra);
    tv_post_recv(h, p->a, 77, &r, 1);
    memset(test_ptr(h, p->bufa + 300000), 0x5e, 700);
    s = tv_sge(p->bufa + 300000, 700, p->mra);
    w = tv_wqe(20, RNIC_WR_SEND, 1);
    tv_post_send(h, p->a, &w, &s, NULL);
    /* b's CQ armed, nothing pending: no interrupt yet */
    i = h->irqs[1];
    tv_cq_arm(h, p->cqb, RNIC_DB_ARM_NEXT);
    g_assert_cmpuint(h->irqs[1], ==, i);
    return p;
}

static void test_objects_roundtrip(void)
{
    uint32_t fr, l0;
    uint64_t l0_region;
    TvPair *p = busy_device(&fr, &l0, &l0_region);
    TestHost *src = p->d;
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = save(src);
    struct rnic_cqe c[8];
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    unsigned irqs;
    char *err = NULL;
    TvPair *q;

    /* the guest's RAM migrates separately (QEMU's RAM migration) */
    memcpy(dst->ram, src->ram, src->ram_size);
    dst->now_ns = 7;
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    compare_tables(src->engine, dst->engine);
    g_assert_cmpuint(dst->engine->reglog->len, ==, src->engine->reglog->len);
    q = pair_move(p, dst);
    irqs = dst->irqs[1];

    /* the unconsumed completions are still there */
    g_assert_cmpint(tv_poll(dst, q->cqa, c, 8), ==, 3);
    g_assert_cmpuint(c[0].wr_id, ==, 12);
    g_assert_cmpuint(c[2].wr_id, ==, 14);
    g_assert_cmpint(tv_poll(dst, q->cqb, c, 8), ==, 0);
    /* the SEND waiting for a receive completes on the destination: post
     * one, let the RNR timer run out there */
    r = tv_sge(q->bufb + 400000, 700, q->mrb);
    tv_post_recv(dst, q->b, 200, &r, 1);
    test_host_advance(dst, 1000000);
    g_assert_cmpint(tv_poll(dst, q->cqb, c, 8), ==, 1);
    g_assert_cmpuint(c[0].wr_id, ==, 200);
    g_assert_cmpuint(c[0].byte_len, ==, 700);
    g_assert_cmpmem(test_ptr(dst, q->bufb + 400000), 700,
                    test_ptr(dst, q->bufa + 300000), 700);
    g_assert_cmpint(tv_poll(dst, q->cqa, c, 8), ==, 1);
    g_assert_cmpuint(c[0].wr_id, ==, 20);
    /* the armed CQ notified */
    g_assert_cmpuint(dst->irqs[1], >, irqs);
    /* the STags the peer holds still work: fast-reg'd, contiguous */
    memset(test_ptr(dst, q->bufa), 0x99, 5000);
    s = tv_sge(q->bufa, 5000, q->mra);
    w = tv_wqe(30, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = 0x900000 + 4096 + 10;
    w.rdma.rkey = fr;
    tv_post_send(dst, q->a, &w, &s, NULL);
    g_assert_cmpuint(tv_poll_one(dst, q->cqa).status, ==, RNIC_WC_SUCCESS);
    w = tv_wqe(31, RNIC_WR_RDMA_READ, 1);
    memset(test_ptr(dst, l0_region), 0x17, 8192);
    w.rdma.remote_addr = 0x300000;
    w.rdma.rkey = l0;
    s = tv_sge(q->bufa + 500000, 8192, q->mra);
    tv_post_send(dst, q->a, &w, &s, NULL);
    g_assert_cmpuint(tv_poll_one(dst, q->cqa).status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpmem(test_ptr(dst, q->bufa + 500000), 8192,
                    test_ptr(dst, l0_region), 8192);
    /* the receive posted on a before migration is consumed by b's SEND */
    s = tv_sge(q->bufb, 400, q->mrb);
    w = tv_wqe(40, RNIC_WR_SEND, 1);
    tv_post_send(dst, q->b, &w, &s, NULL);
    g_assert_cmpint(tv_poll(dst, q->cqa, c, 8), ==, 1);
    g_assert_cmpuint(c[0].wr_id, ==, 77);

    /* and the destination migrates on: same image content */
    {
        GByteArray *img2 = save(dst);
        TestHost *third = test_host_new(NULL);

        g_assert_true(rnic_engine_load(third->engine, img2->data, img2->len,
                                       &err));
        compare_tables(dst->engine, third->engine);
        g_byte_array_unref(img2);
        test_host_free(third);
    }
    g_byte_array_unref(img);
    tv_pair_free(p);
    g_free(q->cqa);
    g_free(q->cqb);
    g_free(q->a);
    g_free(q->b);
    g_free(q);
    test_host_free(dst);
}

/*
 * The registration log keeps the records of deregistered MRs until it is
 * compacted; the PD they named may be gone by the time the device is saved,
 * or its handle taken by a PD of another owner (a process that exited, one
 * that started). The image replays on the destination all the same, and
 * the MRs that are live there are the source's.
 */
/* src saved and loaded by a new host: its tables, the same */
static void assert_moves(TestHost *src)
{
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = save(src);
    char *err = NULL;

    memcpy(dst->ram, src->ram, src->ram_size);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    compare_tables(src->engine, dst->engine);
    g_byte_array_unref(img);
    test_host_free(dst);
}

static void test_history_of_freed_pd(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *src = p->d;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };
    struct rnic_admin_cmd d = { .opcode = RNIC_CMD_DEALLOC_PD };
    uint32_t pd2 = tv_pd(src, p->ctx, 0);
    uint32_t stag = tv_reg_mr(src, pd2, p->bufb, 4096, TV_ACCESS_ALL, 0,
                              NULL);
    uint32_t pd3;

    c.destroy.handle = stag;
    c.destroy.net_ctx = p->ctx;
    g_assert_cmpuint(tv_cmd(src, &c).status, ==, RNIC_ST_OK);
    d.destroy.handle = pd2;
    g_assert_cmpuint(tv_cmd(src, &d).status, ==, RNIC_ST_OK);
    assert_moves(src);
    /* the freed handle taken again, by a PD with an MR of its own */
    d.uctx = tv_uctx(src);
    pd3 = tv_pd(src, p->ctx, d.uctx);
    g_assert_cmpuint(pd3, ==, pd2);
    d.destroy.handle = pd3;
    g_assert_cmpuint(tv_cmd(src, &d).status, ==, RNIC_ST_OK);
    pd3 = tv_pd(src, p->ctx, 0);
    g_assert_cmpuint(pd3, ==, pd2);
    g_assert_cmpuint(tv_reg_mr(src, pd3, p->bufa, 4096, TV_ACCESS_ALL, 0,
                               NULL), !=, 0);
    assert_moves(src);
    tv_pair_free(p);
}

/* A full image with random damage: the load fails cleanly or yields a
 * consistent engine that keeps running. */
static void test_objects_fuzz(void)
{
    uint32_t fr, l0;
    uint64_t l0_region;
    TvPair *p = busy_device(&fr, &l0, &l0_region);
    TestHost *dst = test_host_new(NULL);
    GByteArray *img = save(p->d);
    GRand *rand = g_rand_new_with_seed(1234);
    uint8_t *copy = g_malloc(img->len);
    unsigned ok = 0, i;
    size_t cut;
    char *err;

    memcpy(dst->ram, p->d->ram, p->d->ram_size);
    for (cut = 0; cut < img->len; cut += 7) {
        err = NULL;
        g_assert_false(rnic_engine_load(dst->engine, img->data, cut, &err));
        g_assert_nonnull(err);
        g_free(err);
    }
    for (i = 0; i < 3000; i++) {
        int n = g_rand_int_range(rand, 1, 5), k;

        memcpy(copy, img->data, img->len);
        for (k = 0; k < n; k++) {
            copy[g_rand_int_range(rand, 8, img->len)] ^=
                1 << g_rand_int_range(rand, 0, 8);
        }
        err = NULL;
        if (rnic_engine_load(dst->engine, copy, img->len, &err)) {
            ok++;
            /* whatever was accepted must run */
            dst->scheduled = true;
            test_host_run(dst);
            test_host_advance(dst, 100000000);
        } else {
            g_assert_nonnull(err);
            g_free(err);
        }
    }
    g_test_message("%u of 3000 damaged images loaded", ok);
    g_rand_free(rand);
    g_free(copy);
    g_byte_array_unref(img);
    tv_pair_free(p);
    test_host_free(dst);
}


/*
 * The image format is stable: an image saved by the code of 2026-12-01
 * (ABI 1.1, the busy device above) is committed with its table dump. It
 * loads, the tables are the ones dumped then, and it saves again in the
 * same layout. RNIC_WRITE_FIXTURE=1 writes the two files anew (only
 * when the format changes on purpose, with a new image version).
 */
#define FIXTURE_IMAGE   "state-2026-12-01.img"
#define FIXTURE_TABLES  "state-2026-12-01.tables"
/*
 * The fixture loaded and saved again: the bytes any later save of that
 * state must write (written first by the code of 2026-12-01, e58fc1d;
 * again on 2026-12-03, when saving began to compact the registration log
 * and the records of deregistered MRs left the image).
 * RNIC_WRITE_FIXTURE=1 writes it anew too.
 */
#define FIXTURE_RESAVED "state-2026-12-01.resaved.img"

/*
 * What the image 'img' saved by an older device becomes when saved by
 * this one: its statistics section holds RNIC_STAT_COUNT counters, the
 * ones this device added (appended, never reordered) at 0.
 */
static GByteArray *stats_padded(const GByteArray *img)
{
    RnicImageReader r = { .data = img->data, .len = img->len };
    RnicImageWriter w = { .out = g_byte_array_new() };
    RnicImageReader pl;
    uint16_t tag, flags;
    uint32_t n, i;

    rnic_image_put_u32(&w, rnic_image_get_u32(&r));     /* magic */
    rnic_image_put_u32(&w, rnic_image_get_u32(&r));     /* version */
    while (rnic_image_next_section(&r, &tag, &flags, &pl)) {
        rnic_image_begin_section(&w, tag, flags);
        if (tag == RNIC_SEC_STATS) {
            n = rnic_image_get_u32(&pl);
            g_assert_cmpuint(n, <=, RNIC_STAT_COUNT);
            rnic_image_put_u32(&w, RNIC_STAT_COUNT);
            for (i = 0; i < RNIC_STAT_COUNT; i++) {
                rnic_image_put_u64(&w, i < n ? rnic_image_get_u64(&pl) : 0);
            }
        } else {
            rnic_image_put_bytes(&w, pl.data + pl.pos, pl.len - pl.pos);
        }
        rnic_image_end_section(&w);
    }
    g_assert_false(r.overrun);
    g_assert_cmpuint(r.pos, ==, r.len);
    return w.out;
}

static void test_fixture(void)
{
    const char *dir = g_getenv("RNIC_FIXTURES");
    g_autofree char *img_path = NULL, *tab_path = NULL;
    g_autofree char *tables = NULL, *want = NULL;
    g_autofree gchar *data = NULL;
    TestHost *dst;
    GByteArray *again;
    char *err = NULL;
    gsize len;

    if (!dir) {
        g_test_skip("RNIC_FIXTURES not set (meson test sets it)");
        return;
    }
    img_path = g_build_filename(dir, FIXTURE_IMAGE, NULL);
    tab_path = g_build_filename(dir, FIXTURE_TABLES, NULL);
    if (g_getenv("RNIC_WRITE_FIXTURE")) {
        uint32_t fr, l0;
        uint64_t l0_region;
        TvPair *p = busy_device(&fr, &l0, &l0_region);
        GByteArray *img = save(p->d);

        tables = rnic_engine_describe_tables(p->d->engine);
        g_assert_true(g_file_set_contents(img_path, (const gchar *)img->data,
                                          img->len, NULL));
        g_assert_true(g_file_set_contents(tab_path, tables, -1, NULL));
        g_byte_array_unref(img);
        g_free(tables);
        tables = NULL;
        tv_pair_free(p);
    }
    g_assert_true(g_file_get_contents(img_path, &data, &len, NULL));
    g_assert_true(g_file_get_contents(tab_path, &want, NULL, NULL));
    dst = test_host_new(NULL);
    g_assert_true(rnic_engine_load(dst->engine, (const uint8_t *)data, len,
                                   &err));
    g_assert_null(err);
    tables = rnic_engine_describe_tables(dst->engine);
    g_assert_cmpstr(tables, ==, want);
    /*
     * saved again: the same layout but for the registration log, which
     * travels compacted (the fixture's has the records of deregistered
     * MRs); not the same bytes: the load queued every QP's work, which the
     * image carries; and it loads to the same tables
     */
    again = save(dst);
    {
        GByteArray *orig = g_byte_array_new_take((guint8 *)g_memdup2(data,
                                                                     len),
                                                 len);
        GByteArray *padded = stats_padded(orig);

        g_assert_cmpuint(again->len, <, padded->len);
        g_assert_cmpuint(dst->engine->reglog->len, <=,
                         3 * dst->engine->mr_count);
        g_byte_array_unref(padded);
        g_byte_array_unref(orig);
    }
    g_assert_true(rnic_engine_load(dst->engine, again->data, again->len,
                                   &err));
    g_free(tables);
    tables = rnic_engine_describe_tables(dst->engine);
    g_assert_cmpstr(tables, ==, want);
    g_byte_array_unref(again);
    test_host_free(dst);
}

/* A committed fixture's path; NULL (the test skipped) outside meson test. */
static char *fixture_path(const char *name)
{
    const char *dir = g_getenv("RNIC_FIXTURES");

    if (!dir) {
        g_test_skip("RNIC_FIXTURES not set (meson test sets it)");
        return NULL;
    }
    return g_build_filename(dir, name, NULL);
}

static GByteArray *fixture_read(const char *path)
{
    gchar *data;
    gsize len;

    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    return g_byte_array_new_take((guint8 *)data, len);
}

/* Load the fixture on a fresh host and save it again. */
static GByteArray *fixture_resave(const char *img_path)
{
    GByteArray *data = fixture_read(img_path);
    TestHost *h = test_host_new(NULL);
    GByteArray *img;
    char *err = NULL;

    g_assert_true(rnic_engine_load(h->engine, data->data, data->len, &err));
    img = save(h);
    g_byte_array_unref(data);
    test_host_free(h);
    return img;
}

/*
 * Byte identity of the save: the state the fixture loads to is saved as
 * the code of 2026-12-01 saved it, byte for byte (the section lengths
 * included), and that image loads and saves to itself.
 */
static void test_fixture_resave(void)
{
    g_autofree char *img_path = fixture_path(FIXTURE_IMAGE);
    g_autofree char *path = fixture_path(FIXTURE_RESAVED);
    GByteArray *img, *want, *again;
    TestHost *h;
    char *err = NULL;

    if (!img_path) {
        return;
    }
    img = fixture_resave(img_path);
    if (g_getenv("RNIC_WRITE_FIXTURE")) {
        g_assert_true(g_file_set_contents(path, (const gchar *)img->data,
                                          img->len, NULL));
    }
    again = fixture_read(path);
    want = stats_padded(again);
    g_byte_array_unref(again);
    g_assert_cmpmem(img->data, img->len, want->data, want->len);
    h = test_host_new(NULL);
    g_assert_true(rnic_engine_load(h->engine, img->data, img->len, &err));
    again = save(h);
    g_assert_cmpmem(again->data, again->len, want->data, want->len);
    g_byte_array_unref(again);
    g_byte_array_unref(want);
    g_byte_array_unref(img);
    test_host_free(h);
}

static void G_GNUC_PRINTF(2, 3) assert_has_line(const GString *text,
                                                const char *fmt, ...)
{
    g_autofree char *line = NULL;
    va_list ap;

    va_start(ap, fmt);
    line = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (!strstr(text->str, line)) {
        g_test_message("no line \"%s\" in the dump", line);
        g_test_fail();
    }
}

/*
 * The dump (rnic_state_dump, tests/tools/rnic-image-dump) prints the
 * fixture field by field, to its last byte, with the values the table
 * dump of the loaded engine shows: every STag and the QPs' PSNs.
 */
static void test_dump(void)
{
    g_autofree char *img_path = fixture_path(FIXTURE_IMAGE);
    g_autofree char *tab_path = fixture_path(FIXTURE_TABLES);
    g_autoptr(GString) out = g_string_new(NULL);
    g_autofree gchar *tables = NULL;
    g_auto(GStrv) lines = NULL;
    GByteArray *img;
    unsigned i, stags = 0, qps = 0;

    if (!img_path) {
        return;
    }
    img = fixture_read(img_path);
    g_assert_true(rnic_state_dump(img->data, img->len, out));
    assert_has_line(out, "section 11 QPs: 526 bytes\n");
    assert_has_line(out, "  net_ctx[1].net_id = 33 (0x21)\n");
    assert_has_line(out, "  cq[1].arm = 1\n");
    assert_has_line(out, "  qp[0].srq = none\n");
    assert_has_line(out, "  qp[0].slot[5].length = 700 (0x2bc)\n");
    assert_has_line(out, "  qp[0].timer_kind = 2\n");
    g_assert_true(g_file_get_contents(tab_path, &tables, NULL, NULL));
    lines = g_strsplit(tables, "\n", -1);
    for (i = 0; lines[i]; i++) {
        unsigned v, qpn, h, sq_psn, una_psn, rq_psn;
        const char *stag = strstr(lines[i], " stag=");
        const char *qp = strstr(lines[i], " qpn=");
        const char *psns = strstr(lines[i], " sq-psn=");

        if (stag && sscanf(stag, " stag=0x%x", &v) == 1) {
            assert_has_line(out, ".stag = %u (0x%x)\n", v, v);
            stags++;
        }
        if (qp && psns && sscanf(qp, " qpn=%u handle=%u", &qpn, &h) == 2 &&
            sscanf(psns, " sq-psn=%u una-psn=%u rq-psn=%u", &sq_psn,
                   &una_psn, &rq_psn) == 3) {
            assert_has_line(out, "  qp[%u].qpn = %u\n", h, qpn);
            assert_has_line(out, "  qp[%u].req_psn = %u (0x%x)\n", h, sq_psn,
                            sq_psn);
            assert_has_line(out, "  qp[%u].una_psn = %u (0x%x)\n", h,
                            una_psn, una_psn);
            assert_has_line(out, "  qp[%u].resp.epsn = %u (0x%x)\n", h,
                            rq_psn, rq_psn);
            qps++;
        }
    }
    g_assert_cmpuint(stags, ==, 6);
    g_assert_cmpuint(qps, ==, 2);
    g_byte_array_unref(img);
}

/* The dump reads any bytes: every cut and damaged image ends cleanly. */
static void test_dump_damaged(void)
{
    g_autofree char *img_path = fixture_path(FIXTURE_IMAGE);
    GRand *rand = g_rand_new_with_seed(77);
    GByteArray *img;
    size_t cut;
    unsigned i, whole = 0;

    if (!img_path) {
        return;
    }
    img = fixture_read(img_path);
    for (cut = 0; cut < img->len; cut++) {
        g_autoptr(GString) out = g_string_new(NULL);

        /* a cut between two sections is a shorter image, else broken */
        whole += rnic_state_dump(img->data, cut, out);
    }
    g_assert_cmpuint(whole, ==, 12);    /* after the header, 11 sections */
    for (i = 0; i < 2000; i++) {
        g_autoptr(GString) out = g_string_new(NULL);
        g_autofree uint8_t *copy = g_memdup2(img->data, img->len);
        int k, n = g_rand_int_range(rand, 1, 5);

        for (k = 0; k < n; k++) {
            copy[g_rand_int_range(rand, 0, img->len)] ^=
                1 << g_rand_int_range(rand, 0, 8);
        }
        rnic_state_dump(copy, img->len, out);
    }
    g_rand_free(rand);
    g_byte_array_unref(img);
}

/*
 * One check per object for its create command and for the state image's
 * load (rnic_X_check_params): a parameter the command refuses, an image
 * whose object holds it is refused for the same reason, and the command's
 * status is what it always was.
 */
typedef struct CheckCase {
    uint8_t opcode;
    uint8_t status;             /* the command's */
    uint16_t cmd_off, cmd_size; /* the command's field */
    uint16_t obj_off, obj_size; /* the object's field it becomes */
    bool ref;                   /* the object's is a pointer: to 'value' */
    uint64_t value;
} CheckCase;

#define CHECK_CASE(op, st, cf, T, of, v, r) \
    { RNIC_CMD_##op, RNIC_ST_##st, offsetof(struct rnic_admin_cmd, cf), \
      sizeof(((struct rnic_admin_cmd *)0)->cf), offsetof(T, of), \
      sizeof(((T *)0)->of), r, v }
#define BAD(op, st, cf, T, of, v)   CHECK_CASE(op, st, cf, T, of, v, false)
#define BAD_REF(op, st, cf, T, of, v) CHECK_CASE(op, st, cf, T, of, v, true)

static const CheckCase check_cases[] = {
    BAD(CREATE_EQ, BAD_PARAM, eq.vector, RnicEq, vector, 1000),
    BAD(CREATE_EQ, BAD_PARAM, eq.flags, RnicEq, flags, 0x80),
    BAD(CREATE_EQ, EXISTS, eq.flags, RnicEq, flags, RNIC_EQ_ASYNC),
    BAD(CREATE_EQ, BAD_PARAM, eq.log_size, RnicEq, log_size, 30),
    BAD(CREATE_EQ, BAD_PARAM, eq.ring_addr, RnicEq, ring, 0x10008),
    BAD(CREATE_CQ, BAD_PARAM, cq.log_size, RnicCq, log_size, 30),
    BAD(CREATE_CQ, BAD_PARAM, cq.ring_addr, RnicCq, ring, 0),
    BAD_REF(CREATE_CQ, BAD_HANDLE, cq.eq, RnicCq, eq, 77),
    BAD(CREATE_SRQ, BAD_PARAM, srq.wqe_shift, RnicSrq, wqe_shift, 2),
    BAD(CREATE_SRQ, BAD_PARAM, srq.limit, RnicSrq, limit, 16),
    BAD(CREATE_SRQ, BAD_PARAM, srq.ring_addr, RnicSrq, ring, 0x10008),
    BAD(CREATE_NET_CTX, BAD_PARAM, net_ctx.net_id, RnicNetCtx, net_id, 4096),
    BAD(CREATE_NET_CTX, NOT_SUPPORTED, net_ctx.net_type, RnicNetCtx,
        net_type, RNIC_NET_VNI),
    BAD(CREATE_NET_CTX, EXISTS, net_ctx.net_id, RnicNetCtx, net_id, 10),
    BAD_REF(ALLOC_PD, BAD_HANDLE, pd.net_ctx, RnicPd, ctx, 77),
    BAD(ADD_GID, BAD_PARAM, gid.gid_type, RnicGid, type, 1),
    BAD(ADD_GID, BAD_PARAM, gid.gid, RnicGid, gid, 0),
    BAD(CREATE_QP, BAD_PARAM, qp.qp_type, RnicQp, type, 200),
    BAD(CREATE_QP, BAD_PARAM, qp.sq_wqe_shift, RnicQp, sq_shift, 2),
    BAD(CREATE_QP, BAD_PARAM, qp.sq_addr, RnicQp, sq_addr, 0x10008),
    BAD(CREATE_QP, BAD_PARAM, qp.sq_log_size, RnicQp, sq_log, 30),
    BAD(CREATE_QP, BAD_PARAM, qp.rq_wqe_shift, RnicQp, rq_shift, 2),
    BAD(CREATE_QP, BAD_PARAM, qp.rq_addr, RnicQp, rq_addr, 0x10008),
};

/* A valid command of the case's kind, of 16 entries where it has a ring. */
static struct rnic_admin_cmd check_template(TestHost *h, uint8_t opcode,
                                            uint32_t ctx, uint32_t pd)
{
    struct rnic_admin_cmd c = { .opcode = opcode };

    switch (opcode) {
    case RNIC_CMD_CREATE_EQ:
        c.eq.ring_addr = test_alloc(h, sizeof(struct rnic_eqe) << 4, 4096);
        c.eq.log_size = 4;
        break;
    case RNIC_CMD_CREATE_CQ:
        c.cq.ring_addr = test_alloc(h, sizeof(struct rnic_cqe) << 4, 4096);
        c.cq.log_size = 4;
        c.cq.eq = RNIC_HANDLE_NONE;
        break;
    case RNIC_CMD_CREATE_SRQ:
        c.srq.ring_addr = test_alloc(h, 64 << 4, 4096);
        c.srq.log_size = 4;
        c.srq.wqe_shift = 6;
        c.srq.pd = pd;
        break;
    case RNIC_CMD_CREATE_NET_CTX:
        c.net_ctx.net_type = RNIC_NET_VLAN;
        c.net_ctx.net_id = 11;
        break;
    case RNIC_CMD_ALLOC_PD:
        c.pd.net_ctx = ctx;
        break;
    case RNIC_CMD_ADD_GID:
        c.gid.index = 1;
        c.gid.net_ctx = ctx;
        tv_gid_v4(c.gid.gid, 0, 0, 2);
        break;
    case RNIC_CMD_CREATE_QP: {
        TvCq *cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);

        c.qp.qp_type = RNIC_QPT_RC;
        c.qp.pd = pd;
        c.qp.send_cq = c.qp.recv_cq = cq->handle;
        c.qp.srq = RNIC_HANDLE_NONE;
        c.qp.sq_addr = test_alloc(h, 64 << 4, 4096);
        c.qp.sq_log_size = 4;
        c.qp.sq_wqe_shift = 6;
        c.qp.rq_addr = test_alloc(h, 64 << 4, 4096);
        c.qp.rq_log_size = 4;
        c.qp.rq_wqe_shift = 6;
        g_free(cq);
        break;
    }
    }
    return c;
}

/* The engine's object that command c created (result0: its handle). */
static uint8_t *check_object(RnicEngine *e, const struct rnic_admin_cmd *c,
                             uint32_t h)
{
    switch (c->opcode) {
    case RNIC_CMD_CREATE_EQ:
        return (uint8_t *)rnic_eq_lookup(e, h);
    case RNIC_CMD_CREATE_CQ:
        return (uint8_t *)rnic_cq_lookup(e, h);
    case RNIC_CMD_CREATE_SRQ:
        return (uint8_t *)rnic_srq_lookup(e, h);
    case RNIC_CMD_CREATE_NET_CTX:
        return (uint8_t *)rnic_netctx_lookup(e, h);
    case RNIC_CMD_ALLOC_PD:
        return (uint8_t *)rnic_pd_lookup(e, h);
    case RNIC_CMD_CREATE_QP:
        return (uint8_t *)rnic_qp_lookup(e, h);
    default:
        return (uint8_t *)&e->gids[c->gid.index];
    }
}

/* value, little-endian, into the n bytes at p (0 beyond its 8 bytes) */
static void check_put(uint8_t *p, size_t n, uint64_t value)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = i < 8 ? value >> (8 * i) : 0;
    }
}

static void test_checks_shared(void)
{
    size_t k;

    for (k = 0; k < G_N_ELEMENTS(check_cases); k++) {
        const CheckCase *cc = &check_cases[k];
        TestHost *src = test_host_new(NULL);
        TestHost *dst = test_host_new(NULL);
        struct rnic_admin_cmd good, bad;
        uint32_t ctx, pd, h, fake = cc->value;
        uint8_t gid[16], saved[16], *obj;
        void *ref = &fake;          /* an object of handle 'value' */
        size_t n;
        const char *why;
        GByteArray *img;
        char *err = NULL;
        guint i, logged;
        bool found = false;

        tv_enable(src, 4);
        ctx = tv_net_ctx(src, 10);
        tv_gid_v4(gid, 0, 0, 1);
        tv_add_gid(src, 0, ctx, gid);
        pd = tv_pd(src, ctx, 0);
        tv_eq(src, 4, 0, RNIC_EQ_ASYNC, NULL);
        good = check_template(src, cc->opcode, ctx, pd);
        bad = good;
        check_put((uint8_t *)&bad + cc->cmd_off, cc->cmd_size, cc->value);
        logged = src->log->len;
        g_assert_cmpuint(tv_cmd(src, &bad).status, ==, cc->status);
        /* the same value in an object of the image */
        h = tv_cmd_ok(src, &good);
        obj = check_object(src->engine, &good, h) + cc->obj_off;
        n = MIN(cc->obj_size, sizeof(saved));
        memcpy(saved, obj, n);
        if (cc->ref) {
            memcpy(obj, &ref, sizeof(ref));
        } else {
            check_put(obj, n, cc->value);
        }
        img = save(src);
        memcpy(obj, saved, n);
        g_assert_false(rnic_engine_load(dst->engine, img->data, img->len,
                                        &err));
        /* "EQ 5: <why>": the command said <why> too */
        why = strstr(err, ": ");
        g_assert_nonnull(why);
        for (i = logged; i < src->log->len && !found; i++) {
            found = strstr(g_ptr_array_index(src->log, i), why + 2) != NULL;
        }
        if (!found) {
            g_test_message("case %zu: load: %s", k, err);
        }
        g_assert_true(found);
        g_free(err);
        g_byte_array_unref(img);
        test_host_free(src);
        test_host_free(dst);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/state/roundtrip", test_roundtrip);
    g_test_add_func("/rnic/state/corrupt", test_corrupt);
    g_test_add_func("/rnic/state/objects-roundtrip", test_objects_roundtrip);
    g_test_add_func("/rnic/state/objects-fuzz", test_objects_fuzz);
    g_test_add_func("/rnic/state/history-of-freed-pd",
                    test_history_of_freed_pd);
    g_test_add_func("/rnic/state/fixture", test_fixture);
    g_test_add_func("/rnic/state/fixture-resave", test_fixture_resave);
    g_test_add_func("/rnic/state/dump", test_dump);
    g_test_add_func("/rnic/state/dump-damaged", test_dump_damaged);
    g_test_add_func("/rnic/state/checks-shared", test_checks_shared);
    return g_test_run();
}
