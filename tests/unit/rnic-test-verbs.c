/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test verbs driver over the fake host (see rnic-test-verbs.h).
 */
#include <string.h>
#include "rnic-test-verbs.h"

static void rv_write(TestHost *h, uint64_t addr, const void *buf, size_t len)
{
    memcpy(test_ptr(h, addr), buf, len);
}

static void rv_read(TestHost *h, uint64_t addr, void *buf, size_t len)
{
    memcpy(buf, test_ptr(h, addr), len);
}

static uint64_t rv_alloc(TestHost *h, uint64_t size, uint64_t align)
{
    return test_alloc(h, size, align);
}

static uint32_t rv_reg_read(TestHost *h, uint32_t offset)
{
    return test_reg_read(h, offset);
}

static void rv_reg_write(TestHost *h, uint32_t offset, uint32_t value)
{
    g_assert_cmpint(test_reg_write(h, offset, value), ==, RNIC_ACCESS_OK);
}

static int rv_doorbell(TestHost *h, uint32_t page, uint32_t offset,
                       uint64_t value)
{
    return rnic_engine_doorbell(h->engine, page, offset, value);
}

static void rv_run(TestHost *h)
{
    test_host_run(h);
}

static void rv_step(TestHost *h, uint64_t ns)
{
    test_host_advance(h, ns);
}

#include "rnic-verbs-driver.c.inc"

uint32_t tv_kernel_pd(TestHost *h, uint32_t cq_log, TvCq **cq,
                      uint8_t remote[16])
{
    uint32_t ctx, pd;

    tv_enable(h, 6);
    ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, ctx, 1);
    tv_gid_bytes(remote, ctx, 200);
    pd = tv_pd(h, ctx, 0);
    *cq = tv_cq(h, cq_log, RNIC_HANDLE_NONE, 0);
    return pd;
}

TvPair *tv_pair_new(const RnicEngineConfig *cfg)
{
    TvPair *p = g_new0(TvPair, 1);

    tv_pair_init(test_host_new(cfg), p, 1, RNIC_EQ_ASYNC, 8, 6, TV_BUF_SIZE);
    return p;
}

void tv_pair_free(TvPair *p)
{
    test_host_free(p->d);
    tv_pair_fini(p);
    g_free(p);
}

uint8_t tv_pair_rdma(TvPair *p, uint8_t op, uint64_t addr, uint32_t rkey,
                     uint32_t len)
{
    struct rnic_sge s = tv_sge(p->bufa, len, p->mra);
    struct rnic_sq_wqe w = tv_wqe(5, op, 1);
    struct rnic_cqe c;

    w.rdma.remote_addr = addr;
    w.rdma.rkey = rkey;
    tv_post_send(p->d, p->a, &w, &s, NULL);
    c = tv_poll_one(p->d, p->cqa);
    g_assert_cmpuint(c.wr_id, ==, 5);
    return c.status;
}

void tv_pair_migrate(TvPair *p)
{
    TestHost *src = p->d, *dst = test_host_new(&src->cfg);
    GByteArray *img = g_byte_array_new();
    g_autofree char *before = NULL, *after = NULL;
    char *err = NULL;

    rnic_engine_save(src->engine, img);
    test_host_copy_guest(dst, src);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    before = rnic_engine_describe_tables(src->engine);
    after = rnic_engine_describe_tables(dst->engine);
    g_assert_cmpstr(after, ==, before);
    g_byte_array_unref(img);
    test_host_free(src);
    p->d = dst;
}

void tv_fixture_setup(TvFixture *f, gconstpointer cfg)
{
    f->p = tv_pair_new(cfg);
    f->h = f->p->d;
}

void tv_fixture_teardown(TvFixture *f, gconstpointer cfg)
{
    tv_pair_free(f->p);
    f->p = NULL;
    f->h = NULL;
}
