/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: isolation between network contexts (patent a). Two
 * contexts (VLAN 10 and 20), each with its own mapping table, QPN space and
 * GIDs: an STag valid in one never resolves in the other, a QP never
 * reaches a QP of the other context, even with identical numbers.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

typedef struct Net {
    uint32_t ctx, pd;
    TvCq *cq;
    TvQp *x, *y;
    uint64_t buf;
    uint32_t mr;
} Net;

static void net_init(TestHost *h, Net *n, uint32_t vlan, uint32_t gid_base)
{
    uint8_t gx[16], gy[16];

    n->ctx = tv_net_ctx(h, vlan);
    tv_gid(h, gid_base, n->ctx, 1);
    tv_gid(h, gid_base + 1, n->ctx, 2);
    tv_gid_bytes(gx, n->ctx, 1);
    tv_gid_bytes(gy, n->ctx, 2);
    n->pd = tv_pd(h, n->ctx, 0);
    n->cq = tv_cq(h, 6, RNIC_HANDLE_NONE, 0);
    n->x = tv_qp(h, RNIC_QPT_RC, n->pd, n->cq, n->cq, NULL, 4, 0);
    n->y = tv_qp(h, RNIC_QPT_RC, n->pd, n->cq, n->cq, NULL, 4, 0);
    tv_rc_connect(h, n->x, gid_base, gy, n->y->qpn);
    tv_rc_connect(h, n->y, gid_base + 1, gx, n->x->qpn);
    n->buf = test_alloc(h, 65536, 4096);
    n->mr = tv_reg_mr(h, n->pd, n->buf, 65536, TV_ACCESS_ALL, 0, NULL);
}

static void net_fini(Net *n)
{
    g_free(n->cq);
    g_free(n->x);
    g_free(n->y);
}

static struct rnic_sq_wqe write_wqe(uint64_t wr_id, uint64_t va, uint32_t rkey)
{
    struct rnic_sq_wqe w = tv_wqe(wr_id, RNIC_WR_RDMA_WRITE, 1);

    w.rdma.remote_addr = va;
    w.rdma.rkey = rkey;
    return w;
}

static void test_rkey_isolation(void)
{
    TestHost *h = test_host_new(NULL);
    Net a, b;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;

    tv_enable(h, 6);
    net_init(h, &a, 10, 0);
    net_init(h, &b, 20, 2);
    /* same QPNs in both (own QPN spaces) */
    g_assert_cmpuint(a.x->qpn, ==, b.x->qpn);
    g_assert_cmpuint(a.y->qpn, ==, b.y->qpn);
    /* the rkey works in A ... */
    memset(test_ptr(h, a.buf), 0xa1, 100);
    s = tv_sge(a.buf, 100, a.mr);
    w = write_wqe(1, a.buf + 4096, a.mr);
    tv_post_send(h, a.x, &w, &s, NULL);
    c = tv_poll_one(h, a.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    /* ... but an rkey of A sent through B's QPs is unknown there */
    s = tv_sge(b.buf, 100, b.mr);
    w = write_wqe(2, a.buf + 8192, a.mr);
    tv_post_send(h, b.x, &w, &s, NULL);
    c = tv_poll_one(h, b.cq);
    g_assert_cmpuint(c.wr_id, ==, 2);
    g_assert_cmpuint(c.status, ==, RNIC_WC_REM_ACCESS_ERR);
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, a.buf + 8192), ==, 0);
    /* and as an lkey in B it is a local protection error */
    g_assert_cmpint(rnic_mr_resolve(rnic_netctx_lookup(h->engine, b.ctx), a.mr,
                                    NULL, a.buf, 1, 0, &(RnicMr *){ NULL }),
                    !=, RNIC_XLATE_OK);
    g_assert_cmpint(rnic_mr_resolve(rnic_netctx_lookup(h->engine, a.ctx), a.mr,
                                    NULL, a.buf, 1, 0, &(RnicMr *){ NULL }),
                    ==, RNIC_XLATE_OK);
    net_fini(&a);
    net_fini(&b);
    test_host_free(h);
}

static void test_lkey_isolation(void)
{
    TestHost *h = test_host_new(NULL);
    Net a, b;
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;

    tv_enable(h, 6);
    net_init(h, &a, 10, 0);
    net_init(h, &b, 20, 2);
    s = tv_sge(a.buf, 100, a.mr);       /* A's lkey on B's QP */
    w = write_wqe(3, b.buf, b.mr);
    tv_post_send(h, b.x, &w, &s, NULL);
    c = tv_poll_one(h, b.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_LOC_PROT_ERR);
    net_fini(&a);
    net_fini(&b);
    test_host_free(h);
}

/*
 * A QP of B aimed at A's GID: not local in B, so it goes to the wire (and
 * is dropped), it never lands in A.
 */
static void test_path_isolation(void)
{
    TestHost *h = test_host_new(NULL);
    Net a, b;
    TvQp *z;
    uint8_t ga[16];
    struct rnic_sq_wqe w;
    struct rnic_sge s;
    struct rnic_cqe c;

    tv_enable(h, 6);
    net_init(h, &a, 10, 0);
    net_init(h, &b, 20, 2);
    z = tv_qp(h, RNIC_QPT_RC, b.pd, b.cq, b.cq, NULL, 4, 0);
    tv_gid_bytes(ga, a.ctx, 2);
    tv_timeout = 1;
    tv_retry_cnt = 0;
    tv_rc_connect(h, z, 2, ga, a.y->qpn);
    tv_timeout = 14;
    tv_retry_cnt = 7;
    s = tv_sge(b.buf, 100, b.mr);
    memset(test_ptr(h, b.buf), 0xb2, 100);
    w = write_wqe(4, a.buf, a.mr);
    tv_post_send(h, z, &w, &s, NULL);
    g_assert_cmpuint(rnic_engine_stat(h->engine, RNIC_STAT_TX_FRAMES), ==, 1);
    test_host_advance(h, 100000);
    c = tv_poll_one(h, b.cq);
    g_assert_cmpuint(c.status, ==, RNIC_WC_RETRY_EXC_ERR);
    g_assert_cmpuint(*(uint8_t *)test_ptr(h, a.buf), ==, 0);
    /* a GID of A names no GID of B's QPs: refused at RTR */
    {
        struct rnic_qp_attr at;
        TvQp *q = tv_qp(h, RNIC_QPT_RC, b.pd, b.cq, b.cq, NULL, 4, 0);

        memset(&at, 0, sizeof(at));
        at.qp_state = RNIC_QPS_INIT;
        at.port_num = 1;
        g_assert_cmpuint(tv_modify(h, q, &at, RNIC_QP_STATE |
                                   RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
                                   RNIC_QP_ACCESS_FLAGS), ==, RNIC_ST_OK);
        at.qp_state = RNIC_QPS_RTR;
        at.path_mtu = RNIC_MTU_1024;
        at.av.sgid_index = 0;           /* A's GID */
        g_assert_cmpuint(tv_modify(h, q, &at, RNIC_QP_STATE | RNIC_QP_AV |
                                   RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                                   RNIC_QP_RQ_PSN |
                                   RNIC_QP_MAX_DEST_RD_ATOMIC |
                                   RNIC_QP_MIN_RNR_TIMER), ==,
                         RNIC_ST_BAD_PARAM);
        g_free(q);
    }
    g_free(z);
    net_fini(&a);
    net_fini(&b);
    test_host_free(h);
}

/* DEREG_MR names the context: the same STag in another one is not it. */
static void test_dereg_isolation(void)
{
    TestHost *h = test_host_new(NULL);
    Net a, b;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_DEREG_MR };

    tv_enable(h, 6);
    net_init(h, &a, 10, 0);
    net_init(h, &b, 20, 2);
    c.destroy.handle = a.mr;
    c.destroy.net_ctx = b.ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.destroy.net_ctx = a.ctx;
    g_assert_cmpuint(tv_cmd(h, &c).status, ==, RNIC_ST_OK);
    net_fini(&a);
    net_fini(&b);
    test_host_free(h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/isolation/rkey", test_rkey_isolation);
    g_test_add_func("/rnic/isolation/lkey", test_lkey_isolation);
    g_test_add_func("/rnic/isolation/path", test_path_isolation);
    g_test_add_func("/rnic/isolation/dereg", test_dereg_isolation);
    return g_test_run();
}
