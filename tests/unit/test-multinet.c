/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: multi-network PDs (ABI 1.1, RNIC_CAP_PD_MULTI_NET).
 *
 * A PD allocated with RNIC_PD_MULTI_NET belongs to no network context; an
 * RC QP of it binds it to the context of the GID its AV names, and its MRs
 * are replicated (same index, key, pages) into that context's mapping table
 * while a QP of the PD is bound there. The patent's isolation must hold: a
 * key of such a PD resolves only in the networks the PD is used in.
 *
 * The device here has three networks: untagged (GIDs 0, 1), VLAN 10
 * (GIDs 2, 3) and VLAN 20 (GIDs 4, 5).
 */
#include <stdio.h>
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"
#include "rnic-image.h"

typedef struct Dev {
    TestHost *h;
    uint32_t ctx[3];            /* VLAN 0, 10, 20 */
    uint32_t mpd;               /* the multi-network PD */
    TvCq *cq;
    uint64_t buf;
    uint32_t mr;                /* MR of mpd over buf, all rights */
} Dev;

static const uint32_t vlans[3] = { 0, 10, 20 };

#define BUF_SIZE 65536

static void dev_init_host(Dev *d, TestHost *h)
{
    uint32_t i;

    d->h = h;
    tv_enable(h, 6);
    for (i = 0; i < 3; i++) {
        d->ctx[i] = tv_net_ctx(h, vlans[i]);
        tv_gid(h, 2 * i, d->ctx[i], 1);
        tv_gid(h, 2 * i + 1, d->ctx[i], 2);
    }
    d->mpd = tv_pd(h, RNIC_PD_MULTI_NET, 0);
    d->cq = tv_cq(h, 7, RNIC_HANDLE_NONE, 0);
    d->buf = test_alloc(h, BUF_SIZE, 4096);
    d->mr = tv_reg_mr(h, d->mpd, d->buf, BUF_SIZE, TV_ACCESS_ALL, 0, NULL);
    g_assert_cmpuint(d->mr, !=, 0);
}

static void dev_init(Dev *d, const RnicEngineConfig *cfg)
{
    dev_init_host(d, test_host_new(cfg));
}

static void dev_fini(Dev *d)
{
    g_free(d->cq);
    test_host_free(d->h);
}

static RnicNetCtx *ctx_of(Dev *d, int net)
{
    return rnic_netctx_lookup(d->h->engine, d->ctx[net]);
}

/* Does 'stag' resolve (1 byte at va, no rights) in network 'net'? */
static RnicXlateErr resolve(Dev *d, int net, uint32_t stag, uint64_t va)
{
    RnicMr *mr;

    return rnic_mr_resolve(ctx_of(d, net), stag, NULL, va, 1, 0, &mr);
}

/* Two RC QPs of 'pd' connected to each other in network 'net'. */
static void rc_pair(Dev *d, uint32_t pd, int net, TvQp **x, TvQp **y)
{
    uint8_t gx[16], gy[16];

    *x = tv_qp(d->h, RNIC_QPT_RC, pd, d->cq, d->cq, NULL, 4, 0);
    *y = tv_qp(d->h, RNIC_QPT_RC, pd, d->cq, d->cq, NULL, 4, 0);
    tv_gid_bytes(gx, d->ctx[net], 1);
    tv_gid_bytes(gy, d->ctx[net], 2);
    tv_rc_connect(d->h, *x, 2 * net, gy, (*y)->qpn);
    tv_rc_connect(d->h, *y, 2 * net + 1, gx, (*x)->qpn);
}

static void destroy_qp(Dev *d, TvQp *qp)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DESTROY_QP };

    c.destroy.handle = qp->handle;
    tv_cmd_ok(d->h, &c);
    g_free(qp);
}

/* RDMA WRITE of 64 bytes from 'src' (lkey) to (va, rkey); the CQE status. */
static uint8_t rdma_write(Dev *d, TvQp *qp, uint64_t src, uint32_t lkey,
                          uint64_t va, uint32_t rkey)
{
    struct rnic_sq_wqe w = tv_wqe(0x77, RNIC_WR_RDMA_WRITE, 1);
    struct rnic_sge s = tv_sge(src, 64, lkey);
    struct rnic_cqe c;

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    tv_post_send(d->h, qp, &w, &s, NULL);
    c = tv_poll_one(d->h, d->cq);
    g_assert_cmphex(c.wr_id, ==, 0x77);
    return c.status;
}

/* REG_MR WR: 4 pages listed at 'pbl' as iova 0x100000 under 'stag'. */
static struct rnic_sq_wqe fast_reg_wqe(uint64_t wr_id, uint32_t stag,
                                       uint64_t pbl)
{
    struct rnic_sq_wqe w = tv_wqe(wr_id, RNIC_WR_REG_MR, 0);

    w.reg.iova = 0x100000;
    w.reg.length = 4 * 4096;
    w.reg.pbl_addr = pbl;
    w.reg.stag = stag;
    w.reg.access = TV_ACCESS_ALL;
    w.reg.npages = 4;
    w.reg.page_shift = 12;
    return w;
}

static uint8_t dereg(Dev *d, uint32_t stag, uint32_t net_ctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };

    c.destroy.handle = stag;
    c.destroy.net_ctx = net_ctx;
    return tv_cmd(d->h, &c).status;
}

static bool tables_contain(Dev *d, const char *needle)
{
    char *t = rnic_engine_describe_tables(d->h->engine);
    bool found = strstr(t, needle) != NULL;

    g_free(t);
    return found;
}

/*
 * Binding replicates, a later registration is replicated at once, and the
 * last QP's destruction drops the replicas again.
 */
static void test_bind_replicates(void)
{
    Dev d;
    TvQp *x, *y, *z;
    uint32_t mr2, pd10;
    char line[96];

    dev_init(&d, NULL);
    /* no QP yet: the key resolves nowhere */
    g_assert_cmpint(resolve(&d, 0, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    rc_pair(&d, d.mpd, 1, &x, &y);
    /* the same entry (one object) in VLAN 10 only */
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_true(rnic_mrt_lookup(&ctx_of(&d, 1)->mrt,
                                  RNIC_STAG_INDEX(d.mr)) ==
                  rnic_mrt_lookup(&d.h->engine->mnet_mrt,
                                  RNIC_STAG_INDEX(d.mr)));
    g_assert_cmpint(resolve(&d, 0, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&d, 2, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    /* data moves with the key in VLAN 10 */
    memset(test_ptr(d.h, d.buf), 0x5a, 64);
    g_assert_cmpuint(rdma_write(&d, x, d.buf, d.mr, d.buf + 4096, d.mr), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, d.buf + 4096 + 63), ==, 0x5a);
    /* a registration after the binding is replicated at once */
    mr2 = tv_reg_mr(d.h, d.mpd, d.buf, 8192, TV_ACCESS_ALL, 0, NULL);
    g_assert_cmpint(resolve(&d, 1, mr2, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 2, mr2, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    /* x-tables shows the replica in VLAN 10 and the original */
    snprintf(line, sizeof(line), "mr ctx=%u vlan=10 stag=0x%08x", d.ctx[1],
             d.mr);
    g_assert_true(tables_contain(&d, line));
    g_assert_true(tables_contain(&d, " replica\n"));
    snprintf(line, sizeof(line), "mr ctx=multi stag=0x%08x", d.mr);
    g_assert_true(tables_contain(&d, line));
    snprintf(line, sizeof(line), "qp ctx=%u vlan=10 qpn=%u", d.ctx[1], x->qpn);
    g_assert_true(tables_contain(&d, line));
    /* QPNs are device-wide: an ordinary QP of VLAN 10 gets another one */
    pd10 = tv_pd(d.h, d.ctx[1], 0);
    z = tv_qp(d.h, RNIC_QPT_RC, pd10, d.cq, d.cq, NULL, 4, 0);
    g_assert_cmpuint(z->qpn, !=, x->qpn);
    g_assert_cmpuint(z->qpn, !=, y->qpn);
    /* the context is in use while the PD is bound there */
    {
        struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DESTROY_NET_CTX };

        destroy_qp(&d, z);
        c.destroy.handle = d.ctx[1];
        /* GIDs and the ordinary PD hold it too; only check it stays */
        g_assert_cmpuint(tv_cmd(d.h, &c).status, ==, RNIC_ST_BUSY);
    }
    /* one QP left: still bound; none: the replicas are gone */
    destroy_qp(&d, x);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    destroy_qp(&d, y);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&d, 1, mr2, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpuint(ctx_of(&d, 1)->mrt.count, ==, 0);
    dev_fini(&d);
}

/*
 * Isolation: an rkey of a PD used only on VLAN 10 is rejected by QPs of
 * VLAN 20 and of the untagged network, and as an lkey there too.
 */
static void test_isolation(void)
{
    Dev d;
    TvQp *x, *y;
    uint32_t pd20, pd0, mr20, mr0;
    uint64_t buf2;
    int k;

    dev_init(&d, NULL);
    pd20 = tv_pd(d.h, d.ctx[2], 0);
    pd0 = tv_pd(d.h, d.ctx[0], 0);
    buf2 = test_alloc(d.h, 8192, 4096);
    mr20 = tv_reg_mr(d.h, pd20, buf2, 8192, TV_ACCESS_ALL, 0, NULL);
    mr0 = tv_reg_mr(d.h, pd0, buf2, 8192, TV_ACCESS_ALL, 0, NULL);
    memset(test_ptr(d.h, buf2), 0xee, 64);
    memset(test_ptr(d.h, d.buf + 8192), 0, 64);
    /* VLAN 10 (bound): fine */
    rc_pair(&d, d.mpd, 1, &x, &y);
    g_assert_cmpuint(rdma_write(&d, x, d.buf, d.mr, d.buf + 8192, d.mr), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, d.buf + 8192), ==, 0);
    memset(test_ptr(d.h, d.buf), 0x11, 64);
    g_assert_cmpuint(rdma_write(&d, y, d.buf, d.mr, d.buf + 8192, d.mr), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, d.buf + 8192), ==, 0x11);
    memset(test_ptr(d.h, d.buf + 8192), 0, 64);
    g_free(x);
    g_free(y);
    /* VLAN 20 and untagged: the key is unknown there (each error kills a
     * QP, hence a fresh pair per attempt) */
    for (k = 0; k < 2; k++) {
        int net = k ? 0 : 2;

        rc_pair(&d, k ? pd0 : pd20, net, &x, &y);
        g_assert_cmpuint(rdma_write(&d, x, buf2, k ? mr0 : mr20,
                                    d.buf + 8192, d.mr), ==,
                         RNIC_WC_REM_ACCESS_ERR);
        g_assert_cmpint(resolve(&d, net, d.mr, d.buf), ==,
                        RNIC_XLATE_NO_ENTRY);
        g_free(x);
        g_free(y);
        /* nor can that network's QP use it as its lkey */
        rc_pair(&d, k ? pd0 : pd20, net, &x, &y);
        g_assert_cmpuint(rdma_write(&d, x, d.buf, d.mr, buf2 + 4096,
                                    k ? mr0 : mr20), ==,
                         RNIC_WC_LOC_PROT_ERR);
        g_free(x);
        g_free(y);
    }
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, d.buf + 8192), ==, 0);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, buf2 + 4096), ==, 0);
    /* and the multi-network QPs cannot use VLAN 20's keys */
    rc_pair(&d, d.mpd, 1, &x, &y);
    g_assert_cmpuint(rdma_write(&d, y, buf2, mr20, d.buf, d.mr), ==,
                     RNIC_WC_LOC_PROT_ERR);
    g_free(x);
    g_free(y);
    dev_fini(&d);
}

/*
 * One PD on two networks: one key works in both; fast-register through a
 * QP of one network updates every replica; a remote SEND_WITH_INV from the
 * other network invalidates the entry in both; DEREG_MR removes it
 * everywhere and only through the multi-network table.
 */
static void test_two_nets_fast_reg_invalidate(void)
{
    Dev d;
    TvQp *x10, *y10, *x20, *y20;
    uint32_t fr, fr2, fr3;
    uint64_t pbl, region;
    uint64_t *l;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;
    uint32_t i;

    dev_init(&d, NULL);
    rc_pair(&d, d.mpd, 1, &x10, &y10);
    rc_pair(&d, d.mpd, 2, &x20, &y20);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 2, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 0, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);

    /* fast-reg MR: invalid everywhere until registered */
    fr = tv_alloc_mr(d.h, d.mpd, 4, 0x20);
    g_assert_cmpint(resolve(&d, 2, fr, d.buf), ==, RNIC_XLATE_STATE);
    fr2 = RNIC_STAG(RNIC_STAG_INDEX(fr), 0x21);
    region = test_alloc(d.h, 4 * 4096, 4096);
    pbl = test_alloc(d.h, 4 * 8, 8);
    l = test_ptr(d.h, pbl);
    for (i = 0; i < 4; i++) {
        l[i] = GUINT64_TO_LE(region + i * 4096ull);
    }
    w = fast_reg_wqe(1, fr2, pbl);
    tv_post_send(d.h, x10, &w, NULL, NULL);         /* through VLAN 10 */
    c = tv_poll_one(d.h, d.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    /* the new key is valid in VLAN 20 too, the old one nowhere */
    g_assert_cmpint(resolve(&d, 2, fr2, 0x100000), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 1, fr2, 0x100000), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 1, fr, 0x100000), ==, RNIC_XLATE_KEY);
    /* data lands through VLAN 20 into the pages registered via VLAN 10 */
    memset(test_ptr(d.h, d.buf), 0x3c, 64);
    g_assert_cmpuint(rdma_write(&d, x20, d.buf, d.mr, 0x100000 + 4096, fr2),
                     ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, region + 4096), ==, 0x3c);

    /* SEND_WITH_INV from VLAN 20's x to y: invalid in VLAN 10 as well */
    tv_post_recv(d.h, y20, 9, &(struct rnic_sge){ d.buf + 16384, 64, d.mr },
                 1);
    w = tv_wqe(2, RNIC_WR_SEND_INV, 1);
    w.imm_or_inv = fr2;
    s = tv_sge(d.buf, 16, d.mr);
    tv_post_send(d.h, x20, &w, &s, NULL);
    for (i = 0; i < 2; i++) {
        c = tv_poll_one(d.h, d.cq);
        g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    }
    g_assert_cmpint(resolve(&d, 1, fr2, 0x100000), ==, RNIC_XLATE_STATE);
    g_assert_cmpint(resolve(&d, 2, fr2, 0x100000), ==, RNIC_XLATE_STATE);

    /* re-register through VLAN 20, invalidate locally through VLAN 10 */
    fr3 = RNIC_STAG(RNIC_STAG_INDEX(fr), 0x22);
    w = fast_reg_wqe(3, fr3, pbl);
    tv_post_send(d.h, y20, &w, NULL, NULL);
    g_assert_cmpuint(tv_poll_one(d.h, d.cq).status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpint(resolve(&d, 1, fr3, 0x100000), ==, RNIC_XLATE_OK);
    w = tv_wqe(4, RNIC_WR_LOCAL_INV, 0);
    w.imm_or_inv = fr3;
    tv_post_send(d.h, y10, &w, NULL, NULL);
    g_assert_cmpuint(tv_poll_one(d.h, d.cq).status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpint(resolve(&d, 2, fr3, 0x100000), ==, RNIC_XLATE_STATE);

    /* the invalidated key is refused on the wire (kills x10/y10) */
    g_assert_cmpuint(rdma_write(&d, x10, d.buf, d.mr, 0x100000, fr3), ==,
                     RNIC_WC_REM_ACCESS_ERR);
    /* deregistration: not through a replica, then everywhere at once */
    g_assert_cmpuint(dereg(&d, d.mr, d.ctx[1]), ==, RNIC_ST_BAD_HANDLE);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpuint(dereg(&d, fr3, RNIC_PD_MULTI_NET), ==, RNIC_ST_OK);
    g_assert_cmpint(resolve(&d, 1, fr3, 0x100000), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&d, 2, fr3, 0x100000), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpuint(dereg(&d, fr3, RNIC_PD_MULTI_NET), ==,
                     RNIC_ST_BAD_HANDLE);
    g_free(x10);
    g_free(y10);
    g_free(x20);
    g_free(y20);
    dev_fini(&d);
}

/*
 * UD and GSI QPs of a multi-network PD are in every context's QPN space,
 * including a context created afterwards; a UD send goes out in the network
 * of its AV's GID.
 */
static void test_ud_gsi_all_nets(void)
{
    Dev d;
    TvQp *u, *gsi, *peer10, *peer20;
    uint32_t pd10, pd20, ctx30;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_QP };
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe cqe;
    int i, got10 = 0, got20 = 0;
    uint32_t uqpn;

    dev_init(&d, NULL);
    u = tv_qp(d.h, RNIC_QPT_UD, d.mpd, d.cq, d.cq, NULL, 4, 0);
    gsi = tv_qp(d.h, RNIC_QPT_GSI, d.mpd, d.cq, d.cq, NULL, 4, 0);
    g_assert_cmpuint(gsi->qpn, ==, RNIC_ROCE_GSI_QPN);
    for (i = 0; i < 3; i++) {
        g_assert_nonnull(rnic_qp_by_qpn(ctx_of(&d, i), u->qpn));
        g_assert_nonnull(rnic_qp_by_qpn(ctx_of(&d, i), RNIC_ROCE_GSI_QPN));
    }
    ctx30 = tv_net_ctx(d.h, 30);
    g_assert_nonnull(rnic_qp_by_qpn(rnic_netctx_lookup(d.h->engine, ctx30),
                                    RNIC_ROCE_GSI_QPN));
    /* an ordinary GSI QP cannot take QPN 1 next to it */
    pd10 = tv_pd(d.h, d.ctx[1], 0);
    c.qp.pd = pd10;
    c.qp.send_cq = d.cq->handle;
    c.qp.recv_cq = d.cq->handle;
    c.qp.srq = RNIC_HANDLE_NONE;
    c.qp.qp_type = RNIC_QPT_GSI;
    c.qp.sq_addr = test_alloc(d.h, 16 * 256, 4096);
    c.qp.rq_addr = test_alloc(d.h, 16 * 64, 4096);
    c.qp.sq_log_size = 4;
    c.qp.rq_log_size = 4;
    c.qp.sq_wqe_shift = 8;
    c.qp.rq_wqe_shift = 6;
    g_assert_cmpuint(tv_cmd(d.h, &c).status, ==, RNIC_ST_EXISTS);

    /* UD sends through VLAN 10 and VLAN 20 reach the QPs there */
    pd20 = tv_pd(d.h, d.ctx[2], 0);
    peer10 = tv_qp(d.h, RNIC_QPT_UD, pd10, d.cq, d.cq, NULL, 4, 0);
    peer20 = tv_qp(d.h, RNIC_QPT_UD, pd20, d.cq, d.cq, NULL, 4, 0);
    g_assert_cmpuint(peer10->qpn, !=, u->qpn);
    tv_ud_ready(d.h, u, 0x1111);
    tv_ud_ready(d.h, peer10, 0x1111);
    tv_ud_ready(d.h, peer20, 0x1111);
    {
        uint64_t rb = test_alloc(d.h, 8192, 4096);
        uint32_t k10 = tv_reg_mr(d.h, pd10, rb, 4096, TV_ACCESS_ALL, 0,
                                 NULL);
        uint32_t k20 = tv_reg_mr(d.h, pd20, rb + 4096, 4096, TV_ACCESS_ALL,
                                 0, NULL);

        tv_post_recv(d.h, peer10, 10, &(struct rnic_sge){ rb, 4096, k10 }, 1);
        tv_post_recv(d.h, peer20, 20,
                     &(struct rnic_sge){ rb + 4096, 4096, k20 }, 1);
    }
    memset(test_ptr(d.h, d.buf), 0x42, 32);
    s = tv_sge(d.buf, 32, d.mr);        /* lkey of the unbound PD: fine */
    for (i = 0; i < 2; i++) {
        w = tv_wqe(100 + i, RNIC_WR_SEND, 1);
        w.ud.remote_qpn = i ? peer20->qpn : peer10->qpn;
        w.ud.remote_qkey = 0x1111;
        w.ud.av.sgid_index = i ? 4 : 2;
        tv_gid_bytes(w.ud.av.dgid, d.ctx[i ? 2 : 1], 2);
        tv_post_send(d.h, u, &w, &s, NULL);
    }
    for (i = 0; i < 4; i++) {
        cqe = tv_poll_one(d.h, d.cq);
        g_assert_cmpuint(cqe.status, ==, RNIC_WC_SUCCESS);
        if (cqe.wr_id == 10) {
            got10++;
            g_assert_cmpuint(cqe.src_qp, ==, u->qpn);
        } else if (cqe.wr_id == 20) {
            got20++;
            g_assert_cmpuint(GUINT16_FROM_LE(cqe.vlan_id), ==, 20);
        }
    }
    g_assert_cmpint(got10, ==, 1);
    g_assert_cmpint(got20, ==, 1);
    /* UD QPs do not bind the PD: its keys still resolve nowhere */
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    /* destroyed: gone from every QPN space */
    uqpn = u->qpn;
    destroy_qp(&d, u);
    for (i = 0; i < 3; i++) {
        g_assert_null(rnic_qp_by_qpn(ctx_of(&d, i), uqpn));
    }
    g_assert_null(rnic_qp_by_qpn(rnic_netctx_lookup(d.h->engine, ctx30),
                                 uqpn));
    g_free(gsi);
    g_free(peer10);
    g_free(peer20);
    dev_fini(&d);
}

/* Bad input: clear statuses, nothing half-done. */
static void test_bad_input(void)
{
    RnicEngineConfig cfg;
    Dev d;
    TvQp *x, *y, *z;
    struct rnic_qp_attr a;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_PD };
    uint32_t pd10, i;
    uint8_t st;

    rnic_engine_config_defaults(&cfg);
    cfg.max_mr = 8;
    dev_init(&d, &cfg);
    /* a context handle that is neither a context nor RNIC_PD_MULTI_NET */
    c.pd.net_ctx = 77;
    g_assert_cmpuint(tv_cmd(d.h, &c).status, ==, RNIC_ST_BAD_HANDLE);

    x = tv_qp(d.h, RNIC_QPT_RC, d.mpd, d.cq, d.cq, NULL, 4, 0);
    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    g_assert_cmpuint(tv_modify(d.h, x, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
                               RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS), ==,
                     RNIC_ST_OK);
    /* an AV naming no GID: refused, QP still unbound */
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = RNIC_MTU_1024;
    a.av.sgid_index = 200;
    g_assert_cmpuint(tv_modify(d.h, x, &a, RNIC_QP_STATE | RNIC_QP_AV |
                               RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                               RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
                               RNIC_QP_MIN_RNR_TIMER), ==, RNIC_ST_BAD_PARAM);
    g_assert_null(rnic_qp_lookup(d.h->engine, x->handle)->ctx);

    /* an unbound QP in ERR flushes its work without a network */
    z = tv_qp(d.h, RNIC_QPT_RC, d.mpd, d.cq, d.cq, NULL, 4, 0);
    {
        struct rnic_qp_attr err_attr = { .qp_state = RNIC_QPS_ERR };

        g_assert_cmpuint(tv_modify(d.h, z, &err_attr, RNIC_QP_STATE), ==,
                         RNIC_ST_OK);
    }
    {
        struct rnic_sq_wqe w = tv_wqe(0x99, RNIC_WR_RDMA_WRITE, 1);
        struct rnic_sge s = tv_sge(d.buf, 64, d.mr);

        tv_post_send(d.h, z, &w, &s, NULL);
        tv_post_recv(d.h, z, 0x98, &s, 1);
        g_assert_cmpuint(tv_poll_one(d.h, d.cq).status, ==,
                         RNIC_WC_WR_FLUSH_ERR);
        g_assert_cmpuint(tv_poll_one(d.h, d.cq).status, ==,
                         RNIC_WC_WR_FLUSH_ERR);
    }
    destroy_qp(&d, z);

    /* VLAN 10's table nearly full: binding the PD (1 MR) needs room */
    pd10 = tv_pd(d.h, d.ctx[1], 0);
    for (i = 0; i < 8; i++) {
        tv_reg_mr(d.h, pd10, d.buf, 4096, 0, 0, &st);
        g_assert_cmpuint(st, ==, RNIC_ST_OK);
    }
    a.av.sgid_index = 2;
    g_assert_cmpuint(tv_modify(d.h, x, &a, RNIC_QP_STATE | RNIC_QP_AV |
                               RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                               RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
                               RNIC_QP_MIN_RNR_TIMER), ==,
                     RNIC_ST_NO_RESOURCES);
    g_assert_null(rnic_qp_lookup(d.h->engine, x->handle)->ctx);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpuint(rnic_qp_lookup(d.h->engine, x->handle)->state, ==,
                     RNIC_QPS_INIT);
    /* VLAN 20 has room: bound there; then VLAN 0's AV is refused */
    rc_pair(&d, d.mpd, 2, &y, &z);
    a.av.sgid_index = 4;
    g_assert_cmpuint(tv_modify(d.h, x, &a, RNIC_QP_STATE | RNIC_QP_AV |
                               RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                               RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
                               RNIC_QP_MIN_RNR_TIMER), ==, RNIC_ST_OK);
    g_assert_true(rnic_qp_lookup(d.h->engine, x->handle)->ctx ==
                  ctx_of(&d, 2));
    /* a bound QP stays in its network: no re-binding by a later AV */
    a.qp_state = RNIC_QPS_RTR;
    a.av.sgid_index = 0;
    g_assert_cmpuint(tv_modify(d.h, x, &a, RNIC_QP_AV), !=, RNIC_ST_OK);
    g_assert_true(rnic_qp_lookup(d.h->engine, x->handle)->ctx ==
                  ctx_of(&d, 2));
    /* a full multi-network PD table refuses further registrations */
    while (tv_reg_mr(d.h, d.mpd, d.buf, 4096, 0, 0, &st)) {
        g_assert_cmpuint(st, ==, RNIC_ST_OK);
    }
    g_assert_cmpuint(st, ==, RNIC_ST_NO_RESOURCES);
    g_assert_cmpuint(ctx_of(&d, 2)->mrt.count, <=, 8);
    /* the PD is busy while it has MRs and QPs */
    c.opcode = RNIC_CMD_DEALLOC_PD;
    c.destroy.handle = d.mpd;
    g_assert_cmpuint(tv_cmd(d.h, &c).status, ==, RNIC_ST_BUSY);
    g_free(x);
    g_free(y);
    g_free(z);
    dev_fini(&d);
}

static GByteArray *save(TestHost *h)
{
    GByteArray *img = g_byte_array_new();

    rnic_engine_save(h->engine, img);
    return img;
}

/* Is a section with 'tag' in the image? */
static bool image_has_section(GByteArray *img, uint16_t tag)
{
    RnicImageReader r = { .data = img->data, .len = img->len };
    RnicImageReader payload;
    uint16_t t, flags;

    rnic_image_get_u32(&r);
    rnic_image_get_u32(&r);
    while (rnic_image_next_section(&r, &t, &flags, &payload)) {
        if (t == tag) {
            return true;
        }
    }
    return false;
}

/*
 * A new host loading d's image ('img', or one saved now) over a copy of
 * its memory, with the same tables; the caller frees it.
 */
static TestHost *dev_clone(Dev *d, GByteArray *img)
{
    GByteArray *own = img ? NULL : save(d->h);
    TestHost *dst = test_host_new(NULL);
    char *err = NULL, *before, *after;

    img = img ? img : own;
    memcpy(dst->ram, d->h->ram, d->h->ram_size);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    g_assert_null(err);
    before = rnic_engine_describe_tables(d->h->engine);
    after = rnic_engine_describe_tables(dst->engine);
    g_assert_cmpstr(before, ==, after);
    g_free(before);
    g_free(after);
    if (own) {
        g_byte_array_unref(own);
    }
    return dst;
}

/*
 * REREG_MR to another multi-network PD: the MR's replicas leave the
 * networks of the old PD and appear in those of the new one, the STag
 * unchanged; and back. A destination loading the image has the same.
 */
static void test_rereg_pd(void)
{
    Dev d;
    TvQp *x10, *y10, *x20, *y20;
    uint32_t mpd2, n10, n20;

    dev_init(&d, NULL);
    mpd2 = tv_pd(d.h, RNIC_PD_MULTI_NET, 0);
    rc_pair(&d, d.mpd, 1, &x10, &y10);
    rc_pair(&d, mpd2, 2, &x20, &y20);
    n10 = ctx_of(&d, 1)->mrt.count;
    n20 = ctx_of(&d, 2)->mrt.count;
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 2, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpuint(tv_rereg_mr(d.h, d.mr, RNIC_PD_MULTI_NET, RNIC_REREG_PD,
                                 mpd2, 0, 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&d, 2, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpuint(ctx_of(&d, 1)->mrt.count, ==, n10 - 1);
    g_assert_cmpuint(ctx_of(&d, 2)->mrt.count, ==, n20 + 1);
    memset(test_ptr(d.h, d.buf), 0x6b, 64);
    g_assert_cmpuint(rdma_write(&d, x20, d.buf, d.mr, d.buf + 4096, d.mr), ==,
                     RNIC_WC_SUCCESS);
    g_assert_cmpuint(*(uint8_t *)test_ptr(d.h, d.buf + 4096 + 63), ==, 0x6b);

    test_host_free(dev_clone(&d, NULL));

    g_assert_cmpuint(tv_rereg_mr(d.h, d.mr, RNIC_PD_MULTI_NET, RNIC_REREG_PD,
                                 d.mpd, 0, 0, 0), ==, RNIC_ST_OK);
    g_assert_cmpint(resolve(&d, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&d, 2, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpuint(ctx_of(&d, 1)->mrt.count, ==, n10);
    g_assert_cmpuint(ctx_of(&d, 2)->mrt.count, ==, n20);
    /* a PD of a network context is not the MR's kind of PD */
    g_assert_cmpuint(tv_rereg_mr(d.h, d.mr, RNIC_PD_MULTI_NET, RNIC_REREG_PD,
                                 tv_pd(d.h, d.ctx[1], 0), 0, 0, 0), ==,
                     RNIC_ST_BAD_PARAM);
    g_free(x10);
    g_free(y10);
    g_free(x20);
    g_free(y20);
    dev_fini(&d);
}

/*
 * Migration: the image carries the multi-network PDs and the bindings; the
 * registration log replay rebuilds the original entries, binding rebuilds
 * the replicas: identical tables, identical STags and QPNs, and the keys
 * keep working (and keep failing) where they did.
 */
static void test_migration_roundtrip(void)
{
    Dev d;
    TestHost *dst;
    TvQp *x10, *y10, *x20, *y20, *u;
    uint32_t fr;
    GByteArray *img;
    char *err = NULL, *after;
    Dev e;

    dev_init(&d, NULL);
    rc_pair(&d, d.mpd, 1, &x10, &y10);
    rc_pair(&d, d.mpd, 2, &x20, &y20);
    u = tv_qp(d.h, RNIC_QPT_UD, d.mpd, d.cq, d.cq, NULL, 4, 0);
    fr = tv_alloc_mr(d.h, d.mpd, 4, 0x30);
    /* a device without multi-network PDs writes the old sections only */
    {
        TvPair *p = tv_pair_new(NULL);
        GByteArray *old = save(p->d);

        g_assert_false(image_has_section(old, 12));
        g_assert_false(image_has_section(old, 13));
        g_byte_array_unref(old);
        tv_pair_free(p);
    }
    img = save(d.h);
    g_assert_true(image_has_section(img, 12));
    g_assert_true(image_has_section(img, 13));
    dst = dev_clone(&d, img);
    after = rnic_engine_describe_tables(dst->engine);
    g_assert_nonnull(strstr(after, " replica\n"));
    g_free(after);

    /* the destination resolves exactly as the source did */
    e = d;
    e.h = dst;
    dst->aq = d.h->aq;          /* its admin queue goes on */
    dst->acq = d.h->acq;
    dst->aq_log2 = d.h->aq_log2;
    dst->aq_tail = d.h->aq_tail;
    dst->acq_head = d.h->acq_head;
    dst->next_cmd_id = d.h->next_cmd_id;
    dst->alloc_next = d.h->alloc_next;
    g_assert_cmpint(resolve(&e, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&e, 2, d.mr, d.buf), ==, RNIC_XLATE_OK);
    g_assert_cmpint(resolve(&e, 0, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&e, 1, fr, 0), ==, RNIC_XLATE_STATE);
    g_assert_true(rnic_mrt_lookup(&ctx_of(&e, 2)->mrt,
                                  RNIC_STAG_INDEX(d.mr)) ==
                  rnic_mrt_lookup(&dst->engine->mnet_mrt,
                                  RNIC_STAG_INDEX(d.mr)));
    g_assert_nonnull(rnic_qp_by_qpn(ctx_of(&e, 0), u->qpn));
    g_assert_true(rnic_qp_by_qpn(ctx_of(&e, 1), x10->qpn)->handle ==
                  x10->handle);
    /* and once unbound on the destination, the replicas go */
    destroy_qp(&e, x20);
    destroy_qp(&e, y20);
    g_assert_cmpint(resolve(&e, 2, d.mr, d.buf), ==, RNIC_XLATE_NO_ENTRY);
    g_assert_cmpint(resolve(&e, 1, d.mr, d.buf), ==, RNIC_XLATE_OK);

    /* a binding to a context the image does not have is refused */
    {
        GByteArray *bad = g_byte_array_new();
        guint n = img->len;

        g_byte_array_append(bad, img->data, n);
        /* the last section is the bindings: its last u32 is a context */
        bad->data[n - 4] = 0x55;
        g_assert_false(rnic_engine_load(dst->engine, bad->data, bad->len,
                                        &err));
        g_assert_nonnull(strstr(err, "binding of QP"));
        g_free(err);
        g_byte_array_unref(bad);
    }
    g_byte_array_unref(img);
    g_free(x10);
    g_free(y10);
    g_free(u);
    test_host_free(dst);
    dev_fini(&d);
}

/* 'img' without its section 'tag', or with that section's payload 'payload'. */
static GByteArray *image_edit_section(GByteArray *img, uint16_t tag,
                                      const void *payload, uint32_t len)
{
    RnicImageReader r = { .data = img->data, .len = img->len };
    RnicImageReader sec;
    GByteArray *out = g_byte_array_new();
    uint16_t t, flags;
    size_t start;

    g_byte_array_append(out, img->data, 8);     /* magic, version */
    r.pos = 8;
    for (start = r.pos; rnic_image_next_section(&r, &t, &flags, &sec);
         start = r.pos) {
        if (t != tag) {
            g_byte_array_append(out, img->data + start, r.pos - start);
        } else if (payload) {
            uint32_t le = GUINT32_TO_LE(len);

            g_byte_array_append(out, img->data + start, 4);
            g_byte_array_append(out, (const guint8 *)&le, 4);
            g_byte_array_append(out, payload, len);
        }
    }
    return out;
}

/*
 * F4: an image with a multi-network PD whose RC QP is connected, but
 * without the section that binds it to a network context (or with that
 * section empty), is refused; before, the first run dereferenced the
 * QP's missing context.
 */
static void test_migration_unbound_qp(void)
{
    static const uint32_t no_bindings;
    Dev d;
    TestHost *dst;
    TvQp *x, *y;
    GByteArray *img, *bad;
    char *err = NULL;
    int i;

    dev_init(&d, NULL);
    rc_pair(&d, d.mpd, 1, &x, &y);
    img = save(d.h);
    dst = test_host_new(NULL);
    for (i = 0; i < 2; i++) {
        bad = image_edit_section(img, 13, i ? &no_bindings : NULL,
                                 i ? sizeof(no_bindings) : 0);
        g_assert_cmpuint(bad->len, <, img->len);
        g_assert_false(rnic_engine_load(dst->engine, bad->data, bad->len,
                                        &err));
        g_assert_nonnull(strstr(err, i ? "bound to no network context"
                                       : "multi-network bindings missing"));
        g_free(err);
        err = NULL;
        test_host_run(dst);
        g_byte_array_unref(bad);
    }
    /* the unedited image loads */
    bad = image_edit_section(img, 0, NULL, 0);
    g_assert_cmpmem(bad->data, bad->len, img->data, img->len);
    g_assert_true(rnic_engine_load(dst->engine, img->data, img->len, &err));
    test_host_run(dst);
    g_byte_array_unref(bad);
    g_byte_array_unref(img);
    g_free(x);
    g_free(y);
    test_host_free(dst);
    dev_fini(&d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/multinet/bind-replicates", test_bind_replicates);
    g_test_add_func("/multinet/isolation", test_isolation);
    g_test_add_func("/multinet/two-nets-fast-reg-invalidate",
                    test_two_nets_fast_reg_invalidate);
    g_test_add_func("/multinet/ud-gsi-all-nets", test_ud_gsi_all_nets);
    g_test_add_func("/multinet/bad-input", test_bad_input);
    g_test_add_func("/multinet/rereg-pd", test_rereg_pd);
    g_test_add_func("/multinet/migration-roundtrip",
                    test_migration_roundtrip);
    g_test_add_func("/multinet/migration-unbound-qp",
                    test_migration_unbound_qp);
    return g_test_run();
}
