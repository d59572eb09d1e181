/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Minimal verbs driver for qtests (see rnic-verbs.h). Little-endian host
 * assumed for the ring structures, as QEMU's x86 qtests run on x86 hosts;
 * admin commands are converted field by field where it matters.
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "rnic-verbs.h"

uint64_t qv_alloc(QRnic *d, uint64_t size, uint64_t align)
{
    uint64_t a = guest_alloc(d->alloc, size + align);

    a = (a + align - 1) & ~(align - 1);
    qtest_memset(rnic_qts(d), a, 0, size);
    return a;
}

struct rnic_admin_cqe qv_cmd(QRnic *d, struct rnic_admin_cmd *cmd)
{
    if (!d->aq) {
        rnic_enable(d, 6);
    }
    return rnic_admin(d, cmd);
}

uint32_t qv_cmd_ok(QRnic *d, struct rnic_admin_cmd *cmd)
{
    struct rnic_admin_cqe c = qv_cmd(d, cmd);

    if (c.status != RNIC_ST_OK) {
        g_error("admin opcode %u failed with status %u", cmd->opcode, c.status);
    }
    return le32_to_cpu(c.result0);
}

uint32_t qv_net_ctx(QRnic *d, uint32_t vlan)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_NET_CTX };

    c.net_ctx.net_id = cpu_to_le32(vlan);
    c.net_ctx.net_type = RNIC_NET_VLAN;
    return qv_cmd_ok(d, &c);
}

void qv_gid_bytes(uint8_t gid[16], uint32_t vlan, uint8_t host)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[13] = vlan;
    gid[15] = host;
}

void qv_gid(QRnic *d, uint32_t index, uint32_t ctx, uint32_t vlan, uint8_t host)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ADD_GID };

    qv_gid_bytes(c.gid.gid, vlan, host);
    c.gid.index = cpu_to_le32(index);
    c.gid.net_ctx = cpu_to_le32(ctx);
    qv_cmd_ok(d, &c);
}

uint32_t qv_pd(QRnic *d, uint32_t ctx)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_ALLOC_PD };

    c.pd.net_ctx = cpu_to_le32(ctx);
    return qv_cmd_ok(d, &c);
}

uint32_t qv_eq(QRnic *d, uint32_t log, uint32_t vector, uint8_t flags,
               uint64_t *ring)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_EQ };
    uint64_t r = qv_alloc(d, sizeof(struct rnic_eqe) << log, 4096);

    c.eq.ring_addr = cpu_to_le64(r);
    c.eq.log_size = log;
    c.eq.vector = cpu_to_le32(vector);
    c.eq.flags = flags;
    if (ring) {
        *ring = r;
    }
    return qv_cmd_ok(d, &c);
}

QvCq *qv_cq(QRnic *d, uint32_t log, uint32_t eq)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_CQ };
    QvCq *cq = g_new0(QvCq, 1);

    cq->log = log;
    cq->ring = qv_alloc(d, sizeof(struct rnic_cqe) << log, 4096);
    c.cq.ring_addr = cpu_to_le64(cq->ring);
    c.cq.log_size = log;
    c.cq.eq = cpu_to_le32(eq);
    cq->handle = qv_cmd_ok(d, &c);
    return cq;
}

QvSrq *qv_srq(QRnic *d, uint32_t pd, uint32_t log)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_SRQ };
    QvSrq *s = g_new0(QvSrq, 1);

    s->log = log;
    s->shift = 6;
    s->ring = qv_alloc(d, 1ull << (log + s->shift), 4096);
    c.srq.ring_addr = cpu_to_le64(s->ring);
    c.srq.log_size = log;
    c.srq.wqe_shift = s->shift;
    c.srq.pd = cpu_to_le32(pd);
    s->handle = qv_cmd_ok(d, &c);
    return s;
}

QvQp *qv_qp(QRnic *d, uint8_t type, uint32_t pd, QvCq *scq, QvCq *rcq,
            QvSrq *srq, uint32_t log)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_CREATE_QP };
    struct rnic_admin_cqe r;
    QvQp *qp = g_new0(QvQp, 1);

    qp->type = type;
    qp->log = log;
    qp->sq_shift = 8;           /* 12 SGEs or 192 inline bytes */
    qp->rq_shift = 7;           /* 7 SGEs */
    qp->sq = qv_alloc(d, 1ull << (log + qp->sq_shift), 4096);
    if (!srq) {
        qp->rq = qv_alloc(d, 1ull << (log + qp->rq_shift), 4096);
    }
    qp->scq = scq;
    qp->rcq = rcq;
    qp->srq = srq;
    c.qp.sq_addr = cpu_to_le64(qp->sq);
    c.qp.rq_addr = cpu_to_le64(qp->rq);
    c.qp.pd = cpu_to_le32(pd);
    c.qp.send_cq = cpu_to_le32(scq->handle);
    c.qp.recv_cq = cpu_to_le32(rcq->handle);
    c.qp.srq = cpu_to_le32(srq ? srq->handle : RNIC_HANDLE_NONE);
    c.qp.qp_type = type;
    c.qp.sq_log_size = log;
    c.qp.rq_log_size = srq ? 0 : log;
    c.qp.sq_wqe_shift = qp->sq_shift;
    c.qp.rq_wqe_shift = qp->rq_shift;
    r = qv_cmd(d, &c);
    g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    qp->handle = le32_to_cpu(r.result0);
    qp->qpn = le32_to_cpu(r.result1);
    return qp;
}

uint8_t qv_modify(QRnic *d, QvQp *qp, struct rnic_qp_attr *a, uint32_t mask)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_MODIFY_QP };
    uint64_t addr = qv_alloc(d, sizeof(*a), 64);

    qtest_memwrite(rnic_qts(d), addr, a, sizeof(*a));
    c.modify_qp.attr_addr = cpu_to_le64(addr);
    c.modify_qp.qp = cpu_to_le32(qp->handle);
    c.modify_qp.attr_mask = cpu_to_le32(mask);
    return qv_cmd(d, &c).status;
}

void qv_rc_connect(QRnic *d, QvQp *qp, uint32_t sgid_index,
                   const uint8_t dgid[16], uint32_t dest_qpn)
{
    struct rnic_qp_attr a = {
        .qp_state = RNIC_QPS_INIT,
        .port_num = 1,
        .qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
                           RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC,
    };

    g_assert_cmpuint(qv_modify(d, qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
                               RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS), ==,
                     RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    a.path_mtu = RNIC_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 1000;
    a.max_dest_rd_atomic = 8;
    a.min_rnr_timer = 1;
    a.av.sgid_index = sgid_index;
    memcpy(a.av.dgid, dgid, 16);
    g_assert_cmpuint(qv_modify(d, qp, &a, RNIC_QP_STATE | RNIC_QP_AV |
                               RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
                               RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
                               RNIC_QP_MIN_RNR_TIMER), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 1000;
    a.max_rd_atomic = 8;
    g_assert_cmpuint(qv_modify(d, qp, &a, RNIC_QP_STATE | RNIC_QP_TIMEOUT |
                               RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY |
                               RNIC_QP_SQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC), ==,
                     RNIC_ST_OK);
}

void qv_ud_ready(QRnic *d, QvQp *qp, uint32_t qkey)
{
    struct rnic_qp_attr a = {
        .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = qkey,
    };
    uint32_t init = RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_QKEY;

    if (qp->type == RNIC_QPT_UD) {
        init |= RNIC_QP_PORT;
    }
    g_assert_cmpuint(qv_modify(d, qp, &a, init), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTR;
    g_assert_cmpuint(qv_modify(d, qp, &a, RNIC_QP_STATE), ==, RNIC_ST_OK);
    a.qp_state = RNIC_QPS_RTS;
    a.sq_psn = 1;
    g_assert_cmpuint(qv_modify(d, qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN), ==,
                     RNIC_ST_OK);
}

uint32_t qv_reg_mr(QRnic *d, uint32_t pd, uint64_t addr, uint64_t len,
                   uint32_t access, uint8_t *status)
{
    struct rnic_admin_cmd c = { .opcode = RNIC_CMD_REG_MR };
    uint32_t npages = ((addr & 0xfff) + len + 0xfff) >> 12;
    uint64_t pbl = qv_alloc(d, 8ull * MAX(npages, 1), 8);
    g_autofree uint64_t *pages = g_new(uint64_t, MAX(npages, 1));
    struct rnic_admin_cqe r;
    uint32_t i;

    for (i = 0; i < npages; i++) {
        pages[i] = cpu_to_le64((addr & ~0xfffull) + ((uint64_t)i << 12));
    }
    qtest_memwrite(rnic_qts(d), pbl, pages, 8ull * npages);
    c.mr.iova = cpu_to_le64(addr);
    c.mr.length = cpu_to_le64(len);
    c.mr.pbl_addr = cpu_to_le64(pbl);
    c.mr.pd = cpu_to_le32(pd);
    c.mr.npages = cpu_to_le32(npages);
    c.mr.access = cpu_to_le32(access);
    c.mr.page_shift = 12;
    c.mr.levels = 1;
    c.mr.key = 0xa5;
    r = qv_cmd(d, &c);
    if (status) {
        *status = r.status;
    } else {
        g_assert_cmpuint(r.status, ==, RNIC_ST_OK);
    }
    return r.status == RNIC_ST_OK ? le32_to_cpu(r.result0) : 0;
}

void qv_post_send(QRnic *d, QvQp *qp, const struct rnic_sq_wqe *w,
                  const struct rnic_sge *sges, const void *inline_data)
{
    uint32_t stride = 1u << qp->sq_shift;
    uint64_t slot = qp->sq + ((uint64_t)(qp->sq_prod & ((1u << qp->log) - 1))
                              << qp->sq_shift);
    g_autofree uint8_t *buf = g_malloc0(stride);

    memcpy(buf, w, sizeof(*w));
    if (w->flags & RNIC_WQE_INLINE) {
        memcpy(buf + 64, inline_data, MIN(w->inline_len, stride - 64));
    } else if (w->num_sge) {
        memcpy(buf + 64, sges, MIN(sizeof(*sges) * w->num_sge, stride - 64));
    }
    qtest_memwrite(rnic_qts(d), slot, buf, stride);
    qp->sq_prod++;
    rnic_doorbell(d, 0, RNIC_DB_SQ, rnic_db_value(qp->handle, 0, qp->sq_prod));
}

static void qv_write_rq_wqe(QRnic *d, uint64_t slot, uint32_t stride,
                            uint64_t wr_id, const struct rnic_sge *sges,
                            uint32_t nsge)
{
    g_autofree uint8_t *buf = g_malloc0(stride);
    struct rnic_rq_wqe *w = (struct rnic_rq_wqe *)buf;

    w->wr_id = wr_id;
    w->num_sge = nsge;
    if (nsge) {
        memcpy(w + 1, sges, MIN(sizeof(*sges) * nsge, stride - sizeof(*w)));
    }
    qtest_memwrite(rnic_qts(d), slot, buf, stride);
}

void qv_post_recv(QRnic *d, QvQp *qp, uint64_t wr_id,
                  const struct rnic_sge *sges, uint32_t nsge)
{
    uint64_t slot = qp->rq + ((uint64_t)(qp->rq_prod & ((1u << qp->log) - 1))
                              << qp->rq_shift);

    qv_write_rq_wqe(d, slot, 1u << qp->rq_shift, wr_id, sges, nsge);
    qp->rq_prod++;
    rnic_doorbell(d, 0, RNIC_DB_RQ, rnic_db_value(qp->handle, 0, qp->rq_prod));
}

void qv_post_srq(QRnic *d, QvSrq *srq, uint64_t wr_id,
                 const struct rnic_sge *sges, uint32_t nsge)
{
    uint64_t slot = srq->ring + ((uint64_t)(srq->prod & ((1u << srq->log) - 1))
                                 << srq->shift);

    qv_write_rq_wqe(d, slot, 1u << srq->shift, wr_id, sges, nsge);
    srq->prod++;
    rnic_doorbell(d, 0, RNIC_DB_SRQ, rnic_db_value(srq->handle, 0, srq->prod));
}

bool qv_poll(QRnic *d, QvCq *cq, struct rnic_cqe *out)
{
    uint32_t mask = (1u << cq->log) - 1;
    uint64_t slot = cq->ring + (uint64_t)(cq->cons & mask) * sizeof(*out);

    qtest_memread(rnic_qts(d), slot, out, sizeof(*out));
    if ((out->owner & 1) != (((cq->cons >> cq->log) & 1) ^ 1)) {
        return false;
    }
    cq->cons++;
    rnic_doorbell(d, 0, RNIC_DB_CQ, rnic_db_value(cq->handle, 0, cq->cons));
    return true;
}

struct rnic_cqe qv_wait_cqe(QRnic *d, QvCq *cq)
{
    gint64 end = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    struct rnic_cqe c;

    while (!qv_poll(d, cq, &c)) {
        g_assert(g_get_monotonic_time() < end);
        qtest_clock_step(rnic_qts(d), 10000);
    }
    return c;
}

void qv_cq_arm(QRnic *d, QvCq *cq, uint32_t flags)
{
    rnic_doorbell(d, 0, RNIC_DB_CQ, rnic_db_value(cq->handle, flags, cq->cons));
}
