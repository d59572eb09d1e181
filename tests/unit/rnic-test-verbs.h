/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal "driver" for engine unit tests: creates objects through the
 * admin queue, posts WQEs into rings in the fake guest RAM, rings doorbells
 * and polls CQs, exactly as the guest driver/provider will.
 */
#ifndef RNIC_TEST_VERBS_H
#define RNIC_TEST_VERBS_H

#include "rnic-test-host.h"

/*
 * Attributes tv_rc_connect() uses: path MTU (enum rnic_mtu), local ACK
 * timeout, retry counts. Tests that change them put them back.
 */
extern uint8_t tv_path_mtu;
extern uint8_t tv_timeout;
extern uint8_t tv_retry_cnt;
extern uint8_t tv_rnr_retry;
extern uint8_t tv_sq_shift;     /* log2 send WQE stride of tv_qp() */

typedef struct TvCq {
    uint32_t handle;
    uint32_t uctx;
    uint64_t ring;
    uint32_t log;
    uint32_t cons;
} TvCq;

typedef struct TvQp {
    uint32_t handle;
    uint32_t qpn;
    uint32_t uctx;
    uint8_t type;
    uint32_t pd;
    uint32_t ctx;
    uint64_t sq, rq;
    uint32_t sq_log, rq_log, sq_shift, rq_shift;
    uint32_t sq_prod, rq_prod;
    uint32_t srq;               /* RNIC_HANDLE_NONE or the SRQ */
    TvCq *scq, *rcq;
} TvQp;

typedef struct TvSrq {
    uint32_t handle;
    uint32_t uctx;
    uint64_t ring;
    uint32_t log, shift;
    uint32_t prod;
} TvSrq;

/* Admin command with cmd->uctx as given; returns the completion. */
struct rnic_admin_cqe tv_cmd(TestHost *h, struct rnic_admin_cmd *cmd);
/* Same, asserting success; returns result0. */
uint32_t tv_cmd_ok(TestHost *h, struct rnic_admin_cmd *cmd);

uint32_t tv_net_ctx(TestHost *h, uint32_t vlan);
/* GID ::ffff:10.0.<ctx>.<host> at 'index' in network context 'ctx'. */
void tv_gid(TestHost *h, uint32_t index, uint32_t ctx, uint8_t host);
void tv_gid_bytes(uint8_t gid[16], uint32_t ctx, uint8_t host);
uint32_t tv_uctx(TestHost *h);
uint32_t tv_pd(TestHost *h, uint32_t ctx, uint32_t uctx);
uint32_t tv_eq(TestHost *h, uint32_t log, uint32_t vector, uint8_t flags,
               uint64_t *ring);
TvCq *tv_cq(TestHost *h, uint32_t log, uint32_t eq, uint32_t uctx);
TvSrq *tv_srq(TestHost *h, uint32_t pd, uint32_t log, uint32_t limit,
              uint32_t uctx);
TvQp *tv_qp(TestHost *h, uint8_t type, uint32_t pd, TvCq *scq, TvCq *rcq,
            TvSrq *srq, uint32_t log, uint32_t uctx);
uint8_t tv_modify(TestHost *h, TvQp *qp, struct rnic_qp_attr *a,
                  uint32_t mask);
/* RESET -> INIT -> RTR -> RTS of an RC QP towards (dgid, dest_qpn). */
void tv_rc_connect(TestHost *h, TvQp *qp, uint32_t sgid_index,
                   const uint8_t dgid[16], uint32_t dest_qpn);
/* RESET -> INIT -> RTR -> RTS of a UD QP with 'qkey'. */
void tv_ud_ready(TestHost *h, TvQp *qp, uint32_t qkey);
/*
 * Register [addr, addr + len) of guest RAM (level-1 page list of 4 KiB
 * pages); returns the STag, or 0 with *status on failure.
 */
uint32_t tv_reg_mr(TestHost *h, uint32_t pd, uint64_t addr, uint64_t len,
                   uint32_t access, uint32_t uctx, uint8_t *status);

/* Write a send WQE (header + SGEs or inline bytes) and ring the SQ. */
void tv_post_send(TestHost *h, TvQp *qp, const struct rnic_sq_wqe *w,
                  const struct rnic_sge *sges, const void *inline_data);
/* Write it without ringing (batching); tv_ring_sq rings. */
void tv_write_send(TestHost *h, TvQp *qp, const struct rnic_sq_wqe *w,
                   const struct rnic_sge *sges, const void *inline_data);
RnicAccessResult tv_ring_sq(TestHost *h, TvQp *qp);
void tv_post_recv(TestHost *h, TvQp *qp, uint64_t wr_id,
                  const struct rnic_sge *sges, uint32_t nsge);
/* Receive WQE without ringing (batching); tv_ring_rq rings. */
void tv_write_recv(TestHost *h, TvQp *qp, uint64_t wr_id,
                   const struct rnic_sge *sges, uint32_t nsge);
RnicAccessResult tv_ring_rq(TestHost *h, TvQp *qp);
void tv_post_srq(TestHost *h, TvSrq *srq, uint64_t wr_id,
                 const struct rnic_sge *sges, uint32_t nsge);
/* Poll up to 'max' CQEs (runs the engine first); returns the count. */
int tv_poll(TestHost *h, TvCq *cq, struct rnic_cqe *out, int max);
/* Poll exactly one CQE, asserting there is one. */
struct rnic_cqe tv_poll_one(TestHost *h, TvCq *cq);
void tv_cq_arm(TestHost *h, TvCq *cq, uint32_t flags);

static inline struct rnic_sge tv_sge(uint64_t addr, uint32_t len, uint32_t key)
{
    struct rnic_sge s = { .addr = addr, .length = len, .lkey = key };

    return s;
}

/*
 * A ready-made loopback: one network context (VLAN 0), GIDs 0 and 1, a PD,
 * an async EQ, a CQ per QP and two connected RC QPs 'a' and 'b', plus
 * 1 MiB buffers registered with every right.
 */
typedef struct TvPair {
    TestHost *h;
    uint32_t ctx, pd, eq;
    uint64_t eq_ring;
    TvCq *cqa, *cqb;
    TvQp *a, *b;
    uint64_t bufa, bufb;
    uint32_t mra, mrb;          /* STags of bufa / bufb */
} TvPair;

#define TV_BUF_SIZE (1u << 20)

TvPair *tv_pair_new(const RnicEngineConfig *cfg);
void tv_pair_free(TvPair *p);

#endif /* RNIC_TEST_VERBS_H */
