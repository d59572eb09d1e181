/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The test verbs driver (tests/common/rnic-verbs-driver.h) over the fake
 * host: rings in its guest RAM, doorbells straight into the engine.
 */
#ifndef RNIC_TEST_VERBS_H
#define RNIC_TEST_VERBS_H

#include "rnic-test-host.h"

typedef TestHost RvDev;
#include "rnic-verbs-driver.h"

/* GID ::ffff:10.0.<ctx>.<host> at 'index' in network context 'ctx'. */
static inline void tv_gid_bytes(uint8_t gid[16], uint32_t ctx, uint8_t host)
{
    tv_gid_v4(gid, 0, ctx, host);
}

static inline void tv_gid(TestHost *h, uint32_t index, uint32_t ctx,
                          uint8_t host)
{
    uint8_t gid[16];

    tv_gid_bytes(gid, ctx, host);
    tv_add_gid(h, index, ctx, gid);
}

/*
 * A loopback pair (see TvPair) on a new fake host, p->d, with 1 MiB
 * buffers: EQ on vector 1 for async events, CQs of 256 and QPs of 64.
 */
#define TV_BUF_SIZE (1u << 20)

TvPair *tv_pair_new(const RnicEngineConfig *cfg);
/*
 * An enabled device with network context 0 (GID 0), a kernel PD (returned)
 * and a kernel CQ of 2^cq_log entries (*cq). 'remote': a GID of that
 * context on no host, for RC QPs connected nowhere (tv_rc_connect).
 */
uint32_t tv_kernel_pd(TestHost *h, uint32_t cq_log, TvCq **cq,
                      uint8_t remote[16]);
/* Frees the host too. */
void tv_pair_free(TvPair *p);

/*
 * A signaled WRITE or READ ('op') of 'len' bytes between bufa and
 * (addr, rkey) from a; its completion status.
 */
uint8_t tv_pair_rdma(TvPair *p, uint8_t op, uint64_t addr, uint32_t rkey,
                     uint32_t len);
/*
 * The device saved and loaded into a new host with a copy of the guest
 * memory (the same tables asserted); the pair continues there, the old
 * host freed.
 */
void tv_pair_migrate(TvPair *p);

/*
 * The loopback pair as a GLib fixture: the test runs on a pair set up by
 * tv_pair_new(cfg) ('cfg' the test data: a const RnicEngineConfig *, or
 * NULL for the defaults) and freed after it,
 *   tv_test_add_pair("/rnic/x/y", NULL, test_y);
 *   static void test_y(TvFixture *f, gconstpointer cfg) { TvPair *p = f->p; ...
 */
typedef struct TvFixture {
    TvPair *p;
    TestHost *h;                /* p->d */
} TvFixture;

void tv_fixture_setup(TvFixture *f, gconstpointer cfg);
void tv_fixture_teardown(TvFixture *f, gconstpointer cfg);

#define tv_test_add_pair(path, cfg, test) \
    g_test_add((path), TvFixture, (cfg), tv_fixture_setup, (test), \
               tv_fixture_teardown)

#endif /* RNIC_TEST_VERBS_H */
