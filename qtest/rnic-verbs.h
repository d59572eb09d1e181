/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal verbs "driver" for qtests: creates objects through the admin
 * queue of the real device, writes WQEs into rings in guest memory, rings
 * BAR2 doorbells and polls CQs, as the guest driver and provider do.
 */
#ifndef QTEST_RNIC_VERBS_H
#define QTEST_RNIC_VERBS_H

#include "rnic-qos.h"

typedef struct QvCq {
    uint32_t handle;
    uint64_t ring;
    uint32_t log;
    uint32_t cons;
} QvCq;

typedef struct QvSrq {
    uint32_t handle;
    uint64_t ring;
    uint32_t log, shift, prod;
} QvSrq;

typedef struct QvQp {
    uint32_t handle;
    uint32_t qpn;
    uint8_t type;
    uint64_t sq, rq;
    uint32_t log, sq_shift, rq_shift;
    uint32_t sq_prod, rq_prod;
    QvCq *scq, *rcq;
    QvSrq *srq;
} QvQp;

/* Guest memory aligned to 'align' (power of two), zeroed. */
uint64_t qv_alloc(QRnic *d, uint64_t size, uint64_t align);

/* Admin command; qv_cmd_ok asserts success and returns result0. */
struct rnic_admin_cqe qv_cmd(QRnic *d, struct rnic_admin_cmd *cmd);
uint32_t qv_cmd_ok(QRnic *d, struct rnic_admin_cmd *cmd);

uint32_t qv_net_ctx(QRnic *d, uint32_t vlan);
/* GID ::ffff:10.<vlan>.0.<host> at 'index' in 'ctx'. */
void qv_gid_bytes(uint8_t gid[16], uint32_t vlan, uint8_t host);
void qv_gid(QRnic *d, uint32_t index, uint32_t ctx, uint32_t vlan, uint8_t host);
uint32_t qv_pd(QRnic *d, uint32_t ctx);
uint32_t qv_eq(QRnic *d, uint32_t log, uint32_t vector, uint8_t flags,
               uint64_t *ring);
QvCq *qv_cq(QRnic *d, uint32_t log, uint32_t eq);
QvSrq *qv_srq(QRnic *d, uint32_t pd, uint32_t log);
QvQp *qv_qp(QRnic *d, uint8_t type, uint32_t pd, QvCq *scq, QvCq *rcq,
            QvSrq *srq, uint32_t log);
uint8_t qv_modify(QRnic *d, QvQp *qp, struct rnic_qp_attr *a, uint32_t mask);
void qv_rc_connect(QRnic *d, QvQp *qp, uint32_t sgid_index,
                   const uint8_t dgid[16], uint32_t dest_qpn);
void qv_ud_ready(QRnic *d, QvQp *qp, uint32_t qkey);
/* Register guest [addr, addr + len) with a level-1 list of 4 KiB pages. */
uint32_t qv_reg_mr(QRnic *d, uint32_t pd, uint64_t addr, uint64_t len,
                   uint32_t access, uint8_t *status);

void qv_post_send(QRnic *d, QvQp *qp, const struct rnic_sq_wqe *w,
                  const struct rnic_sge *sges, const void *inline_data);
void qv_post_recv(QRnic *d, QvQp *qp, uint64_t wr_id,
                  const struct rnic_sge *sges, uint32_t nsge);
void qv_post_srq(QRnic *d, QvSrq *srq, uint64_t wr_id,
                 const struct rnic_sge *sges, uint32_t nsge);
/* Wait (stepping the clock, up to 5 s) for one CQE and consume it. */
struct rnic_cqe qv_wait_cqe(QRnic *d, QvCq *cq);
/* Non-blocking: true and *out when a CQE is there. */
bool qv_poll(QRnic *d, QvCq *cq, struct rnic_cqe *out);
void qv_cq_arm(QRnic *d, QvCq *cq, uint32_t flags);

static inline struct rnic_sge qv_sge(uint64_t addr, uint32_t len, uint32_t key)
{
    return (struct rnic_sge) { .addr = addr, .length = len, .lkey = key };
}

#endif /* QTEST_RNIC_VERBS_H */
