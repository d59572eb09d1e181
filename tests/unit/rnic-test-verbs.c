/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Minimal test "driver" over the fake host (see rnic-test-verbs.h).
 */
#include <string.h>
#include "rnic-test-verbs.h"
#include "rnic-admin.h"

uint8_t tv_path_mtu = RNIC_MTU_1024;
uint8_t tv_timeout = 14;
uint8_t tv_retry_cnt = 7;
uint8_t tv_rnr_retry = 7;
uint8_t tv_sq_shift = 9;

struct rnic_admin_cqe tv_cmd(TestHost *h, struct rnic_admin_cmd *cmd)
{
    if (!h->aq) {
        test_host_enable(h, 6);
    }
    return test_admin(h, cmd);
}

uint32_t tv_cmd_ok(TestHost *h, struct rnic_admin_cmd *cmd)
{
    struct rnic_admin_cqe c = tv_cmd(h, cmd);

    if (c.status != RNIC_ST_OK) {
        g_error("admin %s failed: %s", rnic_admin_opcode_name(cmd->opcode),
                rnic_admin_status_name(c.status));
    }
    return c.result0;
}

uint32_t tv_net_ctx(TestHost *h, uint32_t vlan)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_NET_CTX };

    c.net_ctx.net_id = vlan;
    c.net_ctx.net_type = RNIC_NET_VLAN;
    return tv_cmd_ok(h, &c);
}

void tv_gid_bytes(uint8_t gid[16], uint32_t ctx, uint8_t host)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[14] = ctx;
    gid[15] = host;
}

void tv_gid(TestHost *h, uint32_t index, uint32_t ctx, uint8_t host)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ADD_GID };

    tv_gid_bytes(c.gid.gid, ctx, host);
    c.gid.index = index;
    c.gid.net_ctx = ctx;
    tv_cmd_ok(h, &c);
}

uint32_t tv_uctx(TestHost *h)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_UCTX };

    return tv_cmd_ok(h, &c);
}

uint32_t tv_pd(TestHost *h, uint32_t ctx, uint32_t uctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_PD, .uctx = uctx };

    c.pd.net_ctx = ctx;
    return tv_cmd_ok(h, &c);
}

uint32_t tv_eq(TestHost *h, uint32_t log, uint32_t vector, uint8_t flags,
               uint64_t *ring)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_EQ };

    c.eq.ring_addr = test_alloc(h, sizeof(struct rnic_eqe) << log, 4096);
    c.eq.log_size = log;
    c.eq.vector = vector;
    c.eq.flags = flags;
    if (ring) {
        *ring = c.eq.ring_addr;
    }
    return tv_cmd_ok(h, &c);
}

TvCq *tv_cq(TestHost *h, uint32_t log, uint32_t eq, uint32_t uctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_CQ, .uctx = uctx };
    TvCq *cq = g_new0(TvCq, 1);

    cq->ring = test_alloc(h, sizeof(struct rnic_cqe) << log, 4096);
    cq->log = log;
    cq->uctx = uctx;
    c.cq.ring_addr = cq->ring;
    c.cq.log_size = log;
    c.cq.eq = eq;
    cq->handle = tv_cmd_ok(h, &c);
    return cq;
}

TvSrq *tv_srq(TestHost *h, uint32_t pd, uint32_t log, uint32_t limit,
              uint32_t uctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_SRQ, .uctx = uctx };
    TvSrq *s = g_new0(TvSrq, 1);

    s->log = log;
    s->shift = 6;               /* 3 SGEs */
    s->uctx = uctx;
    s->ring = test_alloc(h, 1ull << (log + s->shift), 4096);
    c.srq.ring_addr = s->ring;
    c.srq.log_size = log;
    c.srq.wqe_shift = s->shift;
    c.srq.pd = pd;
    c.srq.limit = limit;
    s->handle = tv_cmd_ok(h, &c);
    return s;
}

TvQp *tv_qp(TestHost *h, uint8_t type, uint32_t pd, TvCq *scq, TvCq *rcq,
            TvSrq *srq, uint32_t log, uint32_t uctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_QP, .uctx = uctx };
    struct rnic_admin_cqe r;
    TvQp *qp = g_new0(TvQp, 1);

    qp->type = type;
    qp->uctx = uctx;
    qp->pd = pd;
    qp->sq_log = qp->rq_log = log;
    qp->sq_shift = tv_sq_shift; /* 9: 28 SGEs or 448 inline bytes */
    qp->rq_shift = 8;           /* 15 SGEs */
    qp->sq = test_alloc(h, 1ull << (log + qp->sq_shift), 4096);
    qp->srq = srq ? srq->handle : RNIC_HANDLE_NONE;
    if (!srq) {
        qp->rq = test_alloc(h, 1ull << (log + qp->rq_shift), 4096);
    }
    qp->scq = scq;
    qp->rcq = rcq;
    c.qp.sq_addr = qp->sq;
    c.qp.rq_addr = qp->rq;
    c.qp.pd = pd;
    c.qp.send_cq = scq->handle;
    c.qp.recv_cq = rcq->handle;
    c.qp.srq = qp->srq;
    c.qp.qp_type = type;
    c.qp.sq_log_size = log;
    c.qp.rq_log_size = srq ? 0 : log;
    c.qp.sq_wqe_shift = qp->sq_shift;
    c.qp.rq_wqe_shift = qp->rq_shift;
    r = tv_cmd(h, &c);
    g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    qp->handle = r.result0;
    qp->qpn = r.result1;
    return qp;
}

uint8_t tv_modify(TestHost *h, TvQp *qp, struct rnic_qp_attr *a,
                  uint32_t mask)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_MODIFY_QP,
                                .uctx = qp->uctx };
    uint64_t addr = test_alloc(h, sizeof(*a), 64);

    memcpy(test_ptr(h, addr), a, sizeof(*a));
    c.modify_qp.attr_addr = addr;
    c.modify_qp.qp = qp->handle;
    c.modify_qp.attr_mask = mask;
    return tv_cmd(h, &c).status;
}

void tv_rc_connect(TestHost *h, TvQp *qp, uint32_t sgid_index,
                   const uint8_t dgid[16], uint32_t dest_qpn)
{
    struct rnic_qp_attr a;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                        RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC;
    g_assert_cmpuint(tv_modify(h, qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
                               RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS), ==,
                     RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = tv_path_mtu;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    a.av.sgid_index = sgid_index;
    memcpy(a.av.dgid, dgid, 16);
    g_assert_cmpuint(tv_modify(h, qp, &a, RNIC_QP_STATE | RNIC_QP_AV |
                               RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                               RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
                               RNIC_QP_MIN_RNR_TIMER), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.timeout = tv_timeout;
    a.retry_cnt = tv_retry_cnt;
    a.rnr_retry = tv_rnr_retry;
    a.sq_psn = 100;
    a.max_rd_atomic = 16;
    g_assert_cmpuint(tv_modify(h, qp, &a, RNIC_QP_STATE | RNIC_QP_TIMEOUT |
                               RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY |
                               RNIC_QP_SQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC), ==,
                     RNIC_ST_OK);
}

void tv_ud_ready(TestHost *h, TvQp *qp, uint32_t qkey)
{
    struct rnic_qp_attr a;
    uint32_t init = RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_QKEY;

    memset(&a, 0, sizeof(a));
    a.qp_state = RNIC_QPS_INIT;
    a.port_num = 1;
    a.qkey = qkey;
    if (qp->type == RNIC_QPT_UD) {
        init |= RNIC_QP_PORT;
    }
    g_assert_cmpuint(tv_modify(h, qp, &a, init), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    g_assert_cmpuint(tv_modify(h, qp, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.sq_psn = 7;
    g_assert_cmpuint(tv_modify(h, qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_OK);
}

uint32_t tv_reg_mr(TestHost *h, uint32_t pd, uint64_t addr, uint64_t len,
                   uint32_t access, uint32_t uctx, uint8_t *status)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_REG_MR, .uctx = uctx };
    uint64_t first = addr & ~0xfffull;
    uint32_t npages = ((addr & 0xfff) + len + 0xfff) >> 12;
    uint64_t pbl = test_alloc(h, 8ull * MAX(npages, 1), 8);
    uint64_t *p = test_ptr(h, pbl);
    struct rnic_admin_cqe r;
    uint32_t i;

    for (i = 0; i < npages; i++) {
        p[i] = GUINT64_TO_LE(first + ((uint64_t)i << 12));
    }
    c.mr.iova = addr;
    c.mr.length = len;
    c.mr.pbl_addr = pbl;
    c.mr.pd = pd;
    c.mr.npages = npages;
    c.mr.access = access;
    c.mr.page_shift = 12;
    c.mr.levels = 1;
    c.mr.key = 0x5a;
    r = tv_cmd(h, &c);
    if (status) {
        *status = r.status;
    } else {
        g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    }
    return r.status == RNIC_ST_OK ? r.result0 : 0;
}

void tv_write_send(TestHost *h, TvQp *qp, const struct rnic_sq_wqe *w,
                   const struct rnic_sge *sges, const void *inline_data)
{
    uint64_t slot = qp->sq + ((uint64_t)(qp->sq_prod & ((1u << qp->sq_log) - 1))
                              << qp->sq_shift);
    uint8_t *p = test_ptr(h, slot);

    memset(p, 0, 1u << qp->sq_shift);
    memcpy(p, w, sizeof(*w));
    if (w->flags & RNIC_WQE_INLINE) {
        if (inline_data) {
            memcpy(p + 64, inline_data,
                   MIN(w->inline_len, (1u << qp->sq_shift) - 64));
        }
    } else if (sges) {
        memcpy(p + 64, sges, MIN(sizeof(*sges) * w->num_sge,
                                 (1u << qp->sq_shift) - 64));
    }
    qp->sq_prod++;
}

RnicAccessResult tv_ring_sq(TestHost *h, TvQp *qp)
{
    return rnic_engine_doorbell(h->engine, qp->uctx, RNIC_DB_SQ,
                                rnic_db_value(qp->handle, 0, qp->sq_prod));
}

void tv_post_send(TestHost *h, TvQp *qp, const struct rnic_sq_wqe *w,
                  const struct rnic_sge *sges, const void *inline_data)
{
    tv_write_send(h, qp, w, sges, inline_data);
    g_assert_cmpint(tv_ring_sq(h, qp), ==, RNIC_ACCESS_OK);
    test_host_run(h);
}

void tv_write_recv(TestHost *h, TvQp *qp, uint64_t wr_id,
                   const struct rnic_sge *sges, uint32_t nsge)
{
    uint64_t slot = qp->rq + ((uint64_t)(qp->rq_prod & ((1u << qp->rq_log) - 1))
                              << qp->rq_shift);
    struct rnic_rq_wqe *w = test_ptr(h, slot);

    w->wr_id = wr_id;
    w->num_sge = nsge;
    if (nsge) {
        memcpy(w + 1, sges, sizeof(*sges) * nsge);
    }
    qp->rq_prod++;
}

RnicAccessResult tv_ring_rq(TestHost *h, TvQp *qp)
{
    return rnic_engine_doorbell(h->engine, qp->uctx, RNIC_DB_RQ,
                                rnic_db_value(qp->handle, 0, qp->rq_prod));
}

void tv_post_recv(TestHost *h, TvQp *qp, uint64_t wr_id,
                  const struct rnic_sge *sges, uint32_t nsge)
{
    uint64_t slot = qp->rq + ((uint64_t)(qp->rq_prod & ((1u << qp->rq_log) - 1))
                              << qp->rq_shift);
    struct rnic_rq_wqe *w = test_ptr(h, slot);

    memset(w, 0, 1u << qp->rq_shift);
    w->wr_id = wr_id;
    w->num_sge = nsge;
    if (nsge) {
        memcpy(w + 1, sges, sizeof(*sges) * nsge);
    }
    qp->rq_prod++;
    g_assert_cmpint(rnic_engine_doorbell(h->engine, qp->uctx, RNIC_DB_RQ,
                                         rnic_db_value(qp->handle, 0,
                                                       qp->rq_prod)), ==,
                    RNIC_ACCESS_OK);
    test_host_run(h);
}

void tv_post_srq(TestHost *h, TvSrq *srq, uint64_t wr_id,
                 const struct rnic_sge *sges, uint32_t nsge)
{
    uint64_t slot = srq->ring + ((uint64_t)(srq->prod & ((1u << srq->log) - 1))
                                 << srq->shift);
    struct rnic_rq_wqe *w = test_ptr(h, slot);

    memset(w, 0, 1u << srq->shift);
    w->wr_id = wr_id;
    w->num_sge = nsge;
    if (nsge) {
        memcpy(w + 1, sges, sizeof(*sges) * nsge);
    }
    srq->prod++;
    g_assert_cmpint(rnic_engine_doorbell(h->engine, srq->uctx, RNIC_DB_SRQ,
                                         rnic_db_value(srq->handle, 0,
                                                       srq->prod)), ==,
                    RNIC_ACCESS_OK);
    test_host_run(h);
}

int tv_poll(TestHost *h, TvCq *cq, struct rnic_cqe *out, int max)
{
    uint32_t mask = (1u << cq->log) - 1;
    int n = 0;

    test_host_run(h);
    while (n < max) {
        struct rnic_cqe *c = test_ptr(h, cq->ring + (uint64_t)(cq->cons & mask) *
                                      sizeof(*c));

        if ((c->owner & 1) != (((cq->cons >> cq->log) & 1) ^ 1)) {
            break;
        }
        out[n++] = *c;
        cq->cons++;
    }
    if (n) {
        g_assert_cmpint(rnic_engine_doorbell(h->engine, cq->uctx, RNIC_DB_CQ,
                                             rnic_db_value(cq->handle, 0,
                                                           cq->cons)), ==,
                        RNIC_ACCESS_OK);
    }
    return n;
}

struct rnic_cqe tv_poll_one(TestHost *h, TvCq *cq)
{
    struct rnic_cqe c;

    g_assert_cmpint(tv_poll(h, cq, &c, 1), ==, 1);
    return c;
}

void tv_cq_arm(TestHost *h, TvCq *cq, uint32_t flags)
{
    g_assert_cmpint(rnic_engine_doorbell(h->engine, cq->uctx, RNIC_DB_CQ,
                                         rnic_db_value(cq->handle, flags,
                                                       cq->cons)), ==,
                    RNIC_ACCESS_OK);
    test_host_run(h);
}

TvPair *tv_pair_new(const RnicEngineConfig *cfg)
{
    TvPair *p = g_new0(TvPair, 1);
    TestHost *h = test_host_new(cfg);
    uint8_t gid0[16], gid1[16];

    p->h = h;
    test_host_enable(h, 6);
    p->ctx = tv_net_ctx(h, 0);
    tv_gid(h, 0, p->ctx, 1);
    tv_gid(h, 1, p->ctx, 2);
    tv_gid_bytes(gid0, p->ctx, 1);
    tv_gid_bytes(gid1, p->ctx, 2);
    p->pd = tv_pd(h, p->ctx, 0);
    p->eq = tv_eq(h, 6, 1, RNIC_EQ_ASYNC, &p->eq_ring);
    p->cqa = tv_cq(h, 8, p->eq, 0);
    p->cqb = tv_cq(h, 8, p->eq, 0);
    p->a = tv_qp(h, RNIC_QPT_RC, p->pd, p->cqa, p->cqa, NULL, 6, 0);
    p->b = tv_qp(h, RNIC_QPT_RC, p->pd, p->cqb, p->cqb, NULL, 6, 0);
    tv_rc_connect(h, p->a, 0, gid1, p->b->qpn);
    tv_rc_connect(h, p->b, 1, gid0, p->a->qpn);
    p->bufa = test_alloc(h, TV_BUF_SIZE, 4096);
    p->bufb = test_alloc(h, TV_BUF_SIZE, 4096);
    p->mra = tv_reg_mr(h, p->pd, p->bufa, TV_BUF_SIZE, RNIC_ACCESS_ALL, 0, NULL);
    p->mrb = tv_reg_mr(h, p->pd, p->bufb, TV_BUF_SIZE, RNIC_ACCESS_ALL, 0, NULL);
    return p;
}

void tv_pair_free(TvPair *p)
{
    test_host_free(p->h);
    g_free(p->cqa);
    g_free(p->cqb);
    g_free(p->a);
    g_free(p->b);
    g_free(p);
}
