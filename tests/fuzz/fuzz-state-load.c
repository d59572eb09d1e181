/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: arbitrary bytes as an incoming migration — the
 * configuration record (rnic_engine_check_config) and the state image
 * (rnic_engine_load). The destination trusts nothing in them. Besides "no
 * crash, no out-of-bounds access, no leak" it checks:
 *  - an accepted image saves to one that loads again, and that round trip
 *    reaches a fixed point (save(load(save(load(x))))) == save(load(x))
 *    after the first normalisation, statistics aside): nothing is lost or
 *    invented;
 *  - the loaded engine runs (work, timers) and renders its tables.
 *
 * Seeds: with RNIC_FUZZ_SEEDS=DIR the target first writes the images and
 * configuration records of an idle and of a busy device into DIR:
 *   RNIC_FUZZ_SEEDS=corpus ./fuzz-state-load corpus -max_total_time=60
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic-test-verbs.h"

#define CHECK(cond) do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
                    __LINE__, #cond); \
            abort(); \
        } \
    } while (0)

#define FUZZ_RAM (8u << 20)

static void write_seed(const char *dir, const char *name, GByteArray *b)
{
    char *path = g_strdup_printf("%s/%s", dir, name);

    g_file_set_contents(path, (const char *)b->data, b->len, NULL);
    g_free(path);
}

/*
 * On top of the busy device: a multi-network PD (ABI 1.1) with an MR and a
 * fast-reg MR, bound to context 'ctx' by two RC QPs, and a UD QP of it in
 * every context (image sections 12 and 13).
 */
static void write_multi_net_seed(const char *dir, TestHost *h, uint32_t ctx,
                                 GByteArray *b)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_MR };
    uint32_t mpd = tv_pd(h, RNIC_PD_MULTI_NET, 0);
    TvCq *cq = tv_cq(h, 4, RNIC_HANDLE_NONE, 0);
    uint64_t buf = test_alloc(h, 8192, 4096);
    uint8_t ga[16], gb[16];
    TvQp *x, *y;

    tv_gid(h, 5, ctx, 4);
    tv_gid_bytes(ga, ctx, 3);
    tv_gid_bytes(gb, ctx, 4);
    tv_reg_mr(h, mpd, buf, 8192, RNIC_ACCESS_ALL, 0, NULL);
    c.mr.pd = mpd;
    c.mr.npages = 2;
    c.mr.key = 9;
    tv_cmd_ok(h, &c);
    x = tv_qp(h, RNIC_QPT_RC, mpd, cq, cq, NULL, 2, 0);
    y = tv_qp(h, RNIC_QPT_RC, mpd, cq, cq, NULL, 2, 0);
    tv_rc_connect(h, x, 4, gb, y->qpn);
    tv_rc_connect(h, y, 5, ga, x->qpn);
    g_free(tv_qp(h, RNIC_QPT_UD, mpd, cq, cq, NULL, 2, 0));
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    write_seed(dir, "multi-net", b);
    g_free(x);
    g_free(y);
    g_free(cq);
}

/* An idle device and a busy one (objects of every kind, traffic done). */
static void write_seeds(const char *dir)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    GByteArray *b = g_byte_array_new();
    struct rnic_sq_wqe w;
    struct rnic_sge s, r;
    uint32_t ctx2;
    int i;

    rnic_engine_save_config(h->engine, b);
    write_seed(dir, "config", b);
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    write_seed(dir, "pair", b);

    ctx2 = tv_net_ctx(h, 12);
    tv_gid(h, 4, ctx2, 3);
    tv_pd(h, ctx2, tv_uctx(h));
    g_free(tv_srq(h, p->pd, 4, 1, 0));
    for (i = 0; i < 3; i++) {
        tv_reg_mr(h, p->pd, p->bufa + 4096 * i, 8192, RNIC_ACCESS_ALL, 0,
                  NULL);
    }
    for (i = 0; i < 3; i++) {
        r = tv_sge(p->bufb, 3000, p->mrb);
        tv_post_recv(h, p->b, 10 + i, &r, 1);
        s = tv_sge(p->bufa, 3000, p->mra);
        memset(&w, 0, sizeof(w));
        w.wr_id = i;
        w.opcode = RNIC_WR_SEND;
        w.flags = RNIC_WQE_SIGNALED;
        w.num_sge = 1;
        tv_post_send(h, p->a, &w, &s, NULL);
    }
    /* a SEND without a receive: RNR wait, a timer armed */
    tv_post_send(h, p->a, &w, &s, NULL);
    test_host_run(h);
    g_byte_array_set_size(b, 0);
    rnic_engine_save(h->engine, b);
    write_seed(dir, "busy", b);
    write_multi_net_seed(dir, h, ctx2, b);
    g_byte_array_unref(b);
    tv_pair_free(p);
}

static TestHost *fuzz_host(void)
{
    return test_host_new_sized(NULL, FUZZ_RAM);
}

static GByteArray *save(TestHost *h)
{
    GByteArray *b = g_byte_array_new();

    rnic_engine_save(h->engine, b);
    return b;
}

/*
 * The statistics (section 2) may move with a load (an RC QP with a remote
 * peer resuming counts a retransmission): blank them for the comparison.
 */
static void blank_statistics(GByteArray *x)
{
    size_t pos = 8;

    while (pos + 8 <= x->len) {
        uint16_t tag = x->data[pos] | x->data[pos + 1] << 8;
        uint32_t len = x->data[pos + 4] | x->data[pos + 5] << 8 |
                       x->data[pos + 6] << 16 | (uint32_t)x->data[pos + 7] << 24;

        if (len > x->len - pos - 8) {
            return;
        }
        if (tag == 2) {
            memset(x->data + pos + 8, 0, len);
        }
        pos += 8 + len;
    }
}

/* Where two images first differ: section tag and offset in it. */
static void report_difference(const GByteArray *x, const GByteArray *y)
{
    size_t n = MIN(x->len, y->len), i, pos = 8;

    for (i = 0; i < n && x->data[i] == y->data[i]; i++) {
        continue;
    }
    while (pos + 8 <= x->len) {
        uint16_t tag = x->data[pos] | x->data[pos + 1] << 8;
        uint32_t len = x->data[pos + 4] | x->data[pos + 5] << 8 |
                       x->data[pos + 6] << 16 | (uint32_t)x->data[pos + 7] << 24;

        if (i < pos + 8 + len) {
            fprintf(stderr, "images differ at byte %zu (lengths %u, %u): "
                    "section %u, offset %zu\n", i, x->len, y->len, tag,
                    i - pos - 8);
            return;
        }
        pos += 8 + len;
    }
    fprintf(stderr, "images differ at byte %zu (lengths %u, %u)\n", i,
            x->len, y->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static TestHost *a, *b;
    GByteArray *img1, *img2, *img3;
    char *err = NULL, *tables;

    if (!a) {
        const char *seeds = getenv("RNIC_FUZZ_SEEDS");

        if (seeds) {
            write_seeds(seeds);
        }
        a = fuzz_host();
        b = fuzz_host();
    }
    memset(a->ram, 0, FUZZ_RAM);
    g_ptr_array_set_size(a->frames, 0);
    g_ptr_array_set_size(a->log, 0);

    if (!rnic_engine_check_config(a->engine, data, size, &err)) {
        CHECK(err);
    }
    g_free(err);
    err = NULL;

    if (!rnic_engine_load(a->engine, data, size, &err)) {
        CHECK(err);
        g_free(err);
        return 0;
    }
    CHECK(!err);
    /* round trip: whatever was accepted saves and loads again, exactly */
    img1 = save(a);
    CHECK(rnic_engine_load(b->engine, img1->data, img1->len, &err));
    img2 = save(b);
    CHECK(rnic_engine_load(a->engine, img2->data, img2->len, &err));
    img3 = save(a);
    blank_statistics(img2);
    blank_statistics(img3);
    if (img2->len != img3->len || memcmp(img2->data, img3->data, img2->len)) {
        report_difference(img2, img3);
        abort();
    }
    tables = rnic_engine_describe_tables(a->engine);
    g_free(tables);
    /* and it runs: pending work, then the timers */
    a->scheduled = true;
    test_host_run(a);
    test_host_advance(a, 2000000000ull);
    g_byte_array_unref(img1);
    g_byte_array_unref(img2);
    g_byte_array_unref(img3);
    return 0;
}
