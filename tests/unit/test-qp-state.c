/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Engine unit tests: the QP state machine. Legal and illegal transitions
 * with their attribute masks (as the IB spec / ib_modify_qp_is_ok), value
 * checks, QUERY_QP, SQD with its drained event, COMM_EST.
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-engine-int.h"

#define S RNIC_QP_STATE
#define RC_INIT (RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS)
#define RC_RTR (RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN | \
                RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | \
                RNIC_QP_MIN_RNR_TIMER)
#define RC_RTS (RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | \
                RNIC_QP_SQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC)

typedef struct Fixture {
    TestHost *h;
    uint32_t ctx, pd;
    TvCq *cq;
    struct rnic_qp_attr a;      /* valid values for every attribute */
} Fixture;

static void fixture_init(Fixture *f)
{
    f->h = test_host_new(NULL);
    tv_enable(f->h, 6);
    f->ctx = tv_net_ctx(f->h, 0);
    tv_gid(f->h, 0, f->ctx, 1);
    f->pd = tv_pd(f->h, f->ctx, 0);
    f->cq = tv_cq(f->h, 6, RNIC_HANDLE_NONE, 0);
    memset(&f->a, 0, sizeof(f->a));
    f->a.port_num = 1;
    f->a.path_mtu = RNIC_MTU_1024;
    f->a.timeout = 10;
    f->a.retry_cnt = 3;
    f->a.rnr_retry = 3;
    f->a.min_rnr_timer = 2;
    f->a.max_rd_atomic = 4;
    f->a.max_dest_rd_atomic = 4;
    f->a.qkey = 0x1111;
    f->a.rq_psn = 5;
    f->a.sq_psn = 6;
    f->a.dest_qp_num = 2;
    f->a.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE;
    f->a.av.sgid_index = 0;
    tv_gid_bytes(f->a.av.dgid, f->ctx, 1);
}

static void fixture_fini(Fixture *f)
{
    g_free(f->cq);
    test_host_free(f->h);
}

static uint8_t go(Fixture *f, TvQp *qp, uint8_t state, uint32_t mask)
{
    f->a.qp_state = state;
    return tv_modify(f->h, qp, &f->a, mask);
}

static uint8_t query_state(Fixture *f, TvQp *qp, struct rnic_qp_attr *out)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_QUERY_QP };
    uint64_t buf = test_alloc(f->h, sizeof(*out), 64);

    c.query.addr = buf;
    c.query.len = sizeof(*out);
    c.query.handle = qp->handle;
    tv_cmd_ok(f->h, &c);
    if (out) {
        memcpy(out, test_ptr(f->h, buf), sizeof(*out));
    }
    return ((struct rnic_qp_attr *)test_ptr(f->h, buf))->qp_state;
}

static void test_rc_path(void)
{
    Fixture f;
    TvQp *qp;
    struct rnic_qp_attr q;

    fixture_init(&f);
    qp = tv_qp(f.h, RNIC_QPT_RC, f.pd, f.cq, f.cq, NULL, 4, 0);
    g_assert_cmpuint(query_state(&f, qp, NULL), ==, RNIC_QPS_RESET);
    /* RESET -> RTR/RTS: no */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RC_RTS), ==,
                     RNIC_ST_BAD_STATE);
    /* RESET -> INIT: a required attribute missing, or one too many */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RNIC_QP_PKEY_INDEX |
                        RNIC_QP_PORT), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT | RNIC_QP_QKEY), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT | RNIC_QP_CUR_STATE),
                     ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==, RNIC_ST_OK);
    /* INIT -> INIT with optional attributes; no state bit = stay */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RNIC_QP_ACCESS_FLAGS), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, 0, RNIC_QP_PORT), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, 0, RNIC_QP_AV), ==, RNIC_ST_BAD_STATE);
    /* INIT -> RTR: each required attribute matters */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | (RC_RTR & ~RNIC_QP_AV)), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | (RC_RTR & ~RNIC_QP_RQ_PSN)),
                     ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR,
                        S | (RC_RTR & ~RNIC_QP_MIN_RNR_TIMER)), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_BAD_STATE);
    /* allowed by the table but not by this device: alternate paths */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR | RNIC_QP_ALT_PATH),
                     ==, RNIC_ST_NOT_SUPPORTED);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR | RNIC_QP_PKEY_INDEX),
                     ==, RNIC_ST_OK);
    /* RTR -> RTS */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | (RC_RTS & ~RNIC_QP_TIMEOUT)),
                     ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RC_RTS), ==, RNIC_ST_OK);
    g_assert_cmpuint(query_state(&f, qp, &q), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(q.qp_num, ==, qp->qpn);
    g_assert_cmpuint(q.sq_psn, ==, 6);
    g_assert_cmpuint(q.rq_psn, ==, 5);
    g_assert_cmpuint(q.dest_qp_num, ==, 2);
    g_assert_cmpuint(q.path_mtu, ==, RNIC_MTU_1024);
    g_assert_cmpuint(q.timeout, ==, 10);
    g_assert_cmpuint(q.max_rd_atomic, ==, 4);
    g_assert_cmpuint(q.qp_access_flags, ==, RNIC_ACCESS_REMOTE_WRITE);
    /* RTS -> RTS: CUR_STATE must be right; SQ_PSN not allowed */
    f.a.cur_qp_state = RNIC_QPS_RTS;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_CUR_STATE |
                        RNIC_QP_MIN_RNR_TIMER), ==, RNIC_ST_OK);
    f.a.cur_qp_state = RNIC_QPS_RTR;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_CUR_STATE), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_BAD_STATE);
    /* RTS -> SQD -> SQD (path attributes) -> RTS */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_SQD, S | RNIC_QP_TIMEOUT), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_SQD, S), ==, RNIC_ST_OK);
    f.a.timeout = 20;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_SQD, S | RNIC_QP_TIMEOUT |
                        RNIC_QP_RETRY_CNT), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_SQD, S | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S), ==, RNIC_ST_OK);
    g_assert_cmpuint(query_state(&f, qp, &q), ==, RNIC_QPS_RTS);
    g_assert_cmpuint(q.timeout, ==, 20);
    /* RC never goes to SQE; ERR -> anything but RESET/ERR: no */
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_SQE, S), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_ERR, S), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_ERR, S), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RESET, S), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RESET, S), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==, RNIC_ST_OK);
    g_free(qp);
    fixture_fini(&f);
}

static void test_ud_path(void)
{
    Fixture f;
    TvQp *qp;
    uint32_t ud_init = RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY;

    fixture_init(&f);
    qp = tv_qp(f.h, RNIC_QPT_UD, f.pd, f.cq, f.cq, NULL, 4, 0);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | ud_init), ==, RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RNIC_QP_AV), ==,
                     RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RNIC_QP_QKEY), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_SQ_PSN |
                        RNIC_QP_TIMEOUT), ==, RNIC_ST_BAD_STATE);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_OK);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RNIC_QP_QKEY), ==,
                     RNIC_ST_OK);
    g_free(qp);
    fixture_fini(&f);
}

/* The table itself, against the IB spec's list of legal transitions. */
static void test_transition_table(void)
{
    /*
     * valid[cur][next] for RC (1) and UD (2): the IB spec, written down
     * independently of the engine's table
     */
    static const uint8_t valid[7][7] = {
        /*            RST INIT RTR RTS SQD SQE ERR */
        /* RESET */ { 3,  3,   0,  0,  0,  0,  3 },
        /* INIT  */ { 3,  3,   3,  0,  0,  0,  3 },
        /* RTR   */ { 3,  0,   0,  3,  0,  0,  3 },
        /* RTS   */ { 3,  0,   0,  3,  3,  0,  3 },
        /* SQD   */ { 3,  0,   0,  3,  3,  0,  3 },
        /* SQE   */ { 3,  0,   0,  3,  0,  0,  3 },
        /* ERR   */ { 3,  0,   0,  0,  0,  0,  3 },
    };
    static const uint32_t req[2][7][7] = {
        [0][RNIC_QPS_RESET][RNIC_QPS_INIT] = RC_INIT,
        [0][RNIC_QPS_INIT][RNIC_QPS_RTR] = RC_RTR,
        [0][RNIC_QPS_RTR][RNIC_QPS_RTS] = RC_RTS,
        [1][RNIC_QPS_RESET][RNIC_QPS_INIT] = RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
                                             RNIC_QP_QKEY,
        [1][RNIC_QPS_RTR][RNIC_QPS_RTS] = RNIC_QP_SQ_PSN,
    };
    int t, cur, next, bit;

    for (t = 0; t < 2; t++) {
        for (cur = 0; cur < 7; cur++) {
            for (next = 0; next < 7; next++) {
                uint32_t r = req[t][cur][next];
                bool ok = valid[cur][next] & (1 << t);

                g_assert_cmpint(rnic_qp_transition_ok(t, cur, next, S | r), ==,
                                ok);
                if (!ok) {
                    continue;
                }
                /* dropping any required bit makes it illegal */
                for (bit = 0; bit < 32; bit++) {
                    if (r & (1u << bit)) {
                        g_assert_false(rnic_qp_transition_ok(
                                           t, cur, next, S | (r & ~(1u << bit))));
                    }
                }
                /* DEST_QPN is never optional */
                g_assert_false(rnic_qp_transition_ok(t, cur, next,
                                                     S | r | RNIC_QP_DEST_QPN) &&
                               !(r & RNIC_QP_DEST_QPN));
            }
        }
    }
}

static void test_bad_values(void)
{
    Fixture f;
    TvQp *qp;
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_MODIFY_QP };

    fixture_init(&f);
    qp = tv_qp(f.h, RNIC_QPT_RC, f.pd, f.cq, f.cq, NULL, 4, 0);
    f.a.port_num = 2;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==,
                     RNIC_ST_BAD_PARAM);
    f.a.port_num = 1;
    f.a.pkey_index = 1;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==,
                     RNIC_ST_BAD_PARAM);
    f.a.pkey_index = 0;
    f.a.qp_access_flags = 0x400;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==,
                     RNIC_ST_BAD_PARAM);
    f.a.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_INIT, S | RC_INIT), ==, RNIC_ST_OK);
#define BAD_RTR(field, value) do { \
        struct rnic_qp_attr save = f.a; \
        f.a.field = value; \
        g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR), ==, \
                         RNIC_ST_BAD_PARAM); \
        f.a = save; \
    } while (0)
    BAD_RTR(path_mtu, 0);
    BAD_RTR(path_mtu, 6);
    BAD_RTR(av.sgid_index, 1);          /* no GID there */
    BAD_RTR(min_rnr_timer, 32);
    BAD_RTR(max_dest_rd_atomic, 200);
    BAD_RTR(rq_psn, 1u << 24);
    BAD_RTR(dest_qp_num, 1u << 24);
#undef BAD_RTR
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR | (1u << 25)), ==,
                     RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(go(&f, qp, 9, S), ==, RNIC_ST_BAD_PARAM);
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTR, S | RC_RTR), ==, RNIC_ST_OK);
    f.a.retry_cnt = 8;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RC_RTS), ==,
                     RNIC_ST_BAD_PARAM);
    f.a.retry_cnt = 7;
    f.a.timeout = 32;
    g_assert_cmpuint(go(&f, qp, RNIC_QPS_RTS, S | RC_RTS), ==,
                     RNIC_ST_BAD_PARAM);
    f.a.timeout = 1;
    /* attributes outside guest RAM; a QP of another context; no QP */
    c.modify_qp.attr_addr = f.h->ram_size;
    c.modify_qp.qp = qp->handle;
    c.modify_qp.attr_mask = S;
    g_assert_cmpuint(tv_cmd(f.h, &c).status, ==, RNIC_ST_DMA_ERROR);
    c.modify_qp.attr_addr = 0x10000;
    c.modify_qp.qp = 777;
    g_assert_cmpuint(tv_cmd(f.h, &c).status, ==, RNIC_ST_BAD_HANDLE);
    c.modify_qp.qp = qp->handle;
    c.uctx = tv_uctx(f.h);
    g_assert_cmpuint(tv_cmd(f.h, &c).status, ==, RNIC_ST_PERMISSION);
    g_free(qp);
    fixture_fini(&f);
}

static void test_sqd_drained_and_comm_est(void)
{
    TvPair *p = tv_pair_new(NULL);
    TestHost *h = p->d;
    struct rnic_qp_attr a;
    struct rnic_sq_wqe w;
    struct rnic_sge s = tv_sge(p->bufa, 8, p->mra);
    struct rnic_eqe *eqe = test_ptr(h, p->eq_ring);
    struct rnic_cqe c;
    int i, drained = 0;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_SQD;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE |
                               RNIC_QP_EN_SQD_ASYNC_NOTIFY), ==, RNIC_ST_OK);
    test_host_run(h);
    for (i = 0; i < 64 && eqe[i].owner; i++) {
        if (eqe[i].type == RNIC_EQE_SQ_DRAINED &&
            eqe[i].handle == p->a->handle) {
            drained++;
        }
    }
    g_assert_cmpint(drained, ==, 1);
    /* in SQD nothing new starts; back in RTS it does */
    w = tv_wqe(3, RNIC_WR_RDMA_WRITE, 1);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    g_assert_cmpint(tv_poll(h, p->cqa, &c, 1), ==, 0);
    a.qp_state = RNIC_QPS_RTS;
    g_assert_cmpuint(tv_modify(h, p->a, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    c = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    tv_pair_free(p);

    /* COMM_EST: the first request reaching a QP still in RTR */
    p = tv_pair_new(NULL);
    h = p->d;
    eqe = test_ptr(h, p->eq_ring);
    s = tv_sge(p->bufa, 8, p->mra);
    a.qp_state = RNIC_QPS_RESET;
    g_assert_cmpuint(tv_modify(h, p->b, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE;
    g_assert_cmpuint(tv_modify(h, p->b, &a, S | RC_INIT), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = RNIC_MTU_1024;
    a.dest_qp_num = p->a->qpn;
    a.rq_psn = 100;
    a.av.sgid_index = 1;
    tv_gid_bytes(a.av.dgid, p->ctx, 1);
    g_assert_cmpuint(tv_modify(h, p->b, &a, S | RC_RTR), ==, RNIC_ST_OK);
    w.rdma.remote_addr = p->bufb;
    w.rdma.rkey = p->mrb;
    tv_post_send(h, p->a, &w, &s, NULL);
    c = tv_poll_one(h, p->cqa);
    g_assert_cmpuint(c.status, ==, RNIC_WC_SUCCESS);
    g_assert_cmpuint(eqe[0].type, ==, RNIC_EQE_COMM_EST);
    g_assert_cmpuint(eqe[0].handle, ==, p->b->handle);
    tv_pair_free(p);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rnic/qp-state/rc-path", test_rc_path);
    g_test_add_func("/rnic/qp-state/ud-path", test_ud_path);
    g_test_add_func("/rnic/qp-state/table", test_transition_table);
    g_test_add_func("/rnic/qp-state/bad-values", test_bad_values);
    g_test_add_func("/rnic/qp-state/sqd-comm-est",
                    test_sqd_drained_and_comm_est);
    return g_test_run();
}
