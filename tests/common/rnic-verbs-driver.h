/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal verbs "driver" for tests, written once for both test builds:
 * it creates objects through the admin queue, writes WQEs into rings in
 * guest memory, rings doorbells and polls CQs, as the guest driver and
 * provider do. rnic-verbs-driver.c.inc holds the code.
 *
 * The device is the build's: TestHost (engine unit tests over the fake host,
 * tests/unit/rnic-test-verbs.h) or QRnic (qtests against the real device
 * through libqos, qtest/rnic-verbs.h). The including header typedefs it as
 * RvDev; both have the admin queue fields aq, acq, aq_log2, aq_tail,
 * acq_head and next_cmd_id, and modify_attr (tv_modify). Before it includes rnic-verbs-driver.c.inc,
 * the build's driver file defines the bus the driver runs over:
 *
 *   void rv_write(RvDev *d, uint64_t addr, const void *buf, size_t len);
 *   void rv_read(RvDev *d, uint64_t addr, void *buf, size_t len);
 *   uint64_t rv_alloc(RvDev *d, uint64_t size, uint64_t align);  (zeroed)
 *   uint32_t rv_reg_read(RvDev *d, uint32_t offset);
 *   void rv_reg_write(RvDev *d, uint32_t offset, uint32_t value);
 *   int rv_doorbell(RvDev *d, uint32_t page, uint32_t offset, uint64_t v);
 *       (0 = RNIC_ACCESS_OK; page = user context, 0 for the kernel)
 *   void rv_run(RvDev *d);               let the device work off doorbells
 *   void rv_step(RvDev *d, uint64_t ns); move the device's clock forward
 *
 * Little-endian host assumed (structures are written as they are).
 */
#ifndef RNIC_TEST_COMMON_VERBS_H
#define RNIC_TEST_COMMON_VERBS_H

#include "rnic/rnic-abi-names.h"

/*
 * Attributes tv_rc_connect() uses: path MTU (enum rnic_mtu), local ACK
 * timeout, retry counts. Tests that change them put them back.
 */
extern uint8_t tv_path_mtu;
extern uint8_t tv_timeout;
extern uint8_t tv_retry_cnt;
extern uint8_t tv_rnr_retry;
extern uint8_t tv_sq_shift;     /* log2 send WQE stride of tv_qp() */

#define TV_MR_KEY 0x5a          /* the key (low byte) of tv_reg_mr's STags */
/* Every right a region of guest RAM can have (persistence it cannot). */
#define TV_ACCESS_ALL (RNIC_ACCESS_ALL & ~RNIC_ACCESS_FLUSH_PERSISTENT)

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

/* Statistics counter 's' (enum rnic_stat), as the registers show it. */
uint64_t tv_stat(RvDev *d, unsigned s);
/* Configure the admin queue with 2^log2 entries and enable the device. */
void tv_enable(RvDev *d, uint32_t log2);
/* Post one admin command as it is, wait for its completion, return it. */
struct rnic_admin_cqe tv_admin(RvDev *d, struct rnic_admin_cmd *cmd);
/* The same, enabling the device first if needed (cmd->uctx as given). */
struct rnic_admin_cqe tv_cmd(RvDev *d, struct rnic_admin_cmd *cmd);
/* Same, asserting success; returns result0. */
uint32_t tv_cmd_ok(RvDev *d, struct rnic_admin_cmd *cmd);

uint32_t tv_net_ctx(RvDev *d, uint32_t vlan);
/* gid = ::ffff:10.b.c.host, an IPv4-mapped GID. */
void tv_gid_v4(uint8_t gid[16], uint8_t b, uint8_t c, uint8_t host);
void tv_add_gid(RvDev *d, uint32_t index, uint32_t ctx,
                const uint8_t gid[16]);
uint32_t tv_uctx(RvDev *d);
uint32_t tv_pd(RvDev *d, uint32_t ctx, uint32_t uctx);
uint32_t tv_eq(RvDev *d, uint32_t log, uint32_t vector, uint8_t flags,
               uint64_t *ring);
TvCq *tv_cq(RvDev *d, uint32_t log, uint32_t eq, uint32_t uctx);
TvSrq *tv_srq(RvDev *d, uint32_t pd, uint32_t log, uint32_t limit,
              uint32_t uctx);
TvQp *tv_qp(RvDev *d, uint8_t type, uint32_t pd, TvCq *scq, TvCq *rcq,
            TvSrq *srq, uint32_t log, uint32_t uctx);
/*
 * MODIFY_QP with the attributes staged in guest memory: at d->modify_attr
 * when the test set it (a fuzz target's QPs go round without end), else
 * in a new allocation per call.
 */
uint8_t tv_modify(RvDev *d, TvQp *qp, struct rnic_qp_attr *a, uint32_t mask);

/* The path of an RC connection (tv_rc_connect_path). */
typedef struct TvRcPath {
    uint32_t sgid_index;
    uint8_t dgid[16];
    uint8_t dmac[6];            /* all zero on loopback */
    uint8_t hop_limit;
    uint32_t dest_qpn;
    uint32_t psn;               /* the RQ's and the SQ's first PSN */
    uint8_t mtu;                /* enum rnic_mtu */
    uint8_t timeout, retry_cnt, rnr_retry;
    uint8_t rd_atomic;          /* max_rd_atomic and max_dest_rd_atomic */
    uint32_t access;            /* qp_access_flags */
    uint8_t state;              /* the last step: INIT, RTR, or 0 for RTS */
} TvRcPath;

/*
 * RESET -> INIT -> RTR -> RTS (or up to p->state) of an RC or UC QP along
 * 'p' (UC: without RC's timeouts, retries and READ/atomic resources), each
 * step asserted to succeed.
 */
void tv_rc_connect_path(RvDev *d, TvQp *qp, const TvRcPath *p);
/*
 * RESET -> INIT -> RTR -> RTS of an RC (or UC) QP towards (dgid,
 * dest_qpn): PSN 100, 16 RDMA READ / atomic in flight, every remote right,
 * tv_path_mtu, tv_timeout, tv_retry_cnt and tv_rnr_retry.
 */
void tv_rc_connect(RvDev *d, TvQp *qp, uint32_t sgid_index,
                   const uint8_t dgid[16], uint32_t dest_qpn);
/* RESET -> INIT -> RTR -> RTS of a UD QP with 'qkey'. */
void tv_ud_ready(RvDev *d, TvQp *qp, uint32_t qkey);
/*
 * Register [addr, addr + len) of guest memory (level-1 page list of 4 KiB
 * pages, key TV_MR_KEY); returns the STag, or 0 with *status on failure
 * (status NULL: failure asserts).
 */
uint32_t tv_reg_mr(RvDev *d, uint32_t pd, uint64_t addr, uint64_t len,
                   uint32_t access, uint32_t uctx, uint8_t *status);
/*
 * REREG_MR of 'stag' (in the table of context 'net_ctx'): what 'what'
 * names (enum rnic_rereg_flags) becomes [addr, addr + len) in a new page
 * list, PD 'pd', rights 'access'. The command's status; on success the
 * STag is asserted unchanged.
 */
uint8_t tv_rereg_mr(RvDev *d, uint32_t stag, uint32_t net_ctx, uint8_t what,
                    uint32_t pd, uint64_t addr, uint64_t len, uint32_t access);
/* ALLOC_MR: a fast-reg MR of 'pd' for 'npages' pages, key 'key'; its STag. */
uint32_t tv_alloc_mr(RvDev *d, uint32_t pd, uint32_t npages, uint8_t key);
/*
 * REG_MR of window bytes [off, off + len) seen at 'iova' (kind SCM) with
 * storage semantics 'sems' (bits of enum rnic_scm_sem) and key byte 'key'
 * (sem << 5 | tag); returns the STag, or 0 with *status on failure
 * (status NULL: failure asserts).
 */
uint32_t tv_reg_scm(RvDev *d, uint32_t pd, uint64_t iova, uint64_t off,
                    uint64_t len, uint32_t access, uint32_t sems, uint8_t key,
                    uint8_t *status);
/*
 * A signaled REG_MR work request: 'npages' 4 KiB pages of guest memory
 * from 'base' on (listed in a new page list) as [iova, iova + npages *
 * 4096) under 'stag' with 'access'.
 */
struct rnic_sq_wqe tv_fast_reg_wqe(RvDev *d, uint64_t wr_id, uint32_t stag,
                                   uint64_t iova, uint64_t base,
                                   uint32_t npages, uint32_t access);

/*
 * REG_MR of a mapped STag (kind MAPPED) of 'length' bytes seen at 'iova':
 * 'nsegs' segments 'segs' (written into a new table in guest memory),
 * 'repeat' (1: the list form), rights 'access', key 'key'; its STag, or 0
 * with *status (status NULL: failure asserts).
 */
uint32_t tv_reg_mapped(RvDev *d, uint32_t pd, uint64_t iova, uint64_t length,
                       const struct rnic_map_seg *segs, uint32_t nsegs,
                       uint32_t repeat, uint32_t access, uint8_t key,
                       uint8_t *status);
/* ALLOC_MR of kind MAPPED: room for 'max_segs' segments; its STag. */
uint32_t tv_alloc_mapped(RvDev *d, uint32_t pd, uint32_t max_segs,
                         uint8_t key);
/*
 * A signaled REG_MR work request making mapped 'stag' 'length' bytes at
 * 'iova' over 'nsegs' segments, 'repeat' times, with 'access': the header
 * only. The caller adds the table: inline (RNIC_WQE_INLINE, inline_len
 * nsegs * 24, the segments as tv_post_send's inline data) or one SGE.
 */
struct rnic_sq_wqe tv_map_reg_wqe(uint64_t wr_id, uint32_t stag, uint64_t iova,
                                  uint64_t length, uint32_t nsegs,
                                  uint32_t repeat, uint32_t access);

/* ALLOC_MW: a window of 'type' (enum rnic_mw_type) in 'pd'; its rkey. */
uint32_t tv_alloc_mw(RvDev *d, uint32_t pd, uint8_t type, uint8_t key);
/*
 * A signaled BIND_MW work request: window 'mw_rkey' becomes 'new_rkey'
 * over [addr, addr + len) of the MR 'mr_lkey' with remote rights 'access'.
 */
struct rnic_sq_wqe tv_bind_wqe(uint64_t wr_id, uint32_t mw_rkey,
                               uint32_t new_rkey, uint32_t mr_lkey,
                               uint64_t addr, uint64_t len, uint32_t access);

/* Write a send WQE (header + SGEs or inline bytes) and ring the SQ. */
void tv_post_send(RvDev *d, TvQp *qp, const struct rnic_sq_wqe *w,
                  const struct rnic_sge *sges, const void *inline_data);
/* Write it without ringing (batching); tv_ring_sq rings (0: accepted). */
void tv_write_send(RvDev *d, TvQp *qp, const struct rnic_sq_wqe *w,
                   const struct rnic_sge *sges, const void *inline_data);
int tv_ring_sq(RvDev *d, TvQp *qp);
void tv_post_recv(RvDev *d, TvQp *qp, uint64_t wr_id,
                  const struct rnic_sge *sges, uint32_t nsge);
/* Receive WQE without ringing (batching); tv_ring_rq rings. */
void tv_write_recv(RvDev *d, TvQp *qp, uint64_t wr_id,
                   const struct rnic_sge *sges, uint32_t nsge);
int tv_ring_rq(RvDev *d, TvQp *qp);
void tv_post_srq(RvDev *d, TvSrq *srq, uint64_t wr_id,
                 const struct rnic_sge *sges, uint32_t nsge);
/* Poll up to 'max' CQEs (lets the device run first); returns the count. */
int tv_poll(RvDev *d, TvCq *cq, struct rnic_cqe *out, int max);
/* Poll exactly one CQE, asserting there is one. */
struct rnic_cqe tv_poll_one(RvDev *d, TvCq *cq);
/* Wait (stepping the clock, up to 5 s) for one CQE and consume it. */
struct rnic_cqe tv_wait_cqe(RvDev *d, TvCq *cq);
void tv_cq_arm(RvDev *d, TvCq *cq, uint32_t flags);

/* A send WQE; the rest 0 (opcode: RNIC_WR_*, flags: RNIC_WQE_*). */
static inline struct rnic_sq_wqe tv_wqe_flags(uint64_t wr_id, uint8_t opcode,
                                              uint8_t flags, uint8_t num_sge)
{
    struct rnic_sq_wqe w = {
        .wr_id = wr_id, .opcode = opcode, .flags = flags, .num_sge = num_sge,
    };

    return w;
}

/* A signaled send WQE. */
static inline struct rnic_sq_wqe tv_wqe(uint64_t wr_id, uint8_t opcode,
                                        uint8_t num_sge)
{
    return tv_wqe_flags(wr_id, opcode, RNIC_WQE_SIGNALED, num_sge);
}

/* A signaled FLUSH of [addr, addr + len) or of the whole region. */
static inline struct rnic_sq_wqe tv_flush_wqe(uint64_t wr_id, uint64_t addr,
                                              uint32_t rkey, uint32_t len,
                                              uint8_t type, uint8_t level)
{
    struct rnic_sq_wqe w = tv_wqe(wr_id, RNIC_WR_FLUSH, 0);

    w.flush.remote_addr = addr;
    w.flush.rkey = rkey;
    w.flush.length = len;
    w.flush.type = type;
    w.flush.level = level;
    return w;
}

/* A signaled ATOMIC WRITE of 'value' (host order, placed as is). */
static inline struct rnic_sq_wqe tv_atomic_write_wqe(uint64_t wr_id,
                                                     uint64_t addr,
                                                     uint32_t rkey,
                                                     uint64_t value)
{
    struct rnic_sq_wqe w = tv_wqe(wr_id, RNIC_WR_ATOMIC_WRITE, 0);

    w.atomic_write.remote_addr = addr;
    w.atomic_write.rkey = rkey;
    memcpy(w.atomic_write.data, &value, 8);
    return w;
}

/* The next CQE of 'cq' is there now (tv_poll_one): check it, return it. */
struct rnic_cqe tv_expect_status(RvDev *d, TvCq *cq, uint64_t wr_id,
                                 uint8_t status);
/* No CQE in 'cq' now. */
void tv_expect_no_cqe(RvDev *d, TvCq *cq);
/* Wait for the next CQE of 'cq' (tv_wait_cqe) and check it. */
void tv_expect_cqe(RvDev *d, TvCq *cq, uint64_t wr_id, uint8_t opcode,
                   uint8_t status);
/* Fill guest memory with a pattern that depends on 'seed' and the offset. */
void tv_fill(RvDev *d, uint64_t addr, size_t len, uint8_t seed);
/* Assert that [x, x + len) and [y, y + len) hold the same bytes. */
void tv_assert_same(RvDev *d, uint64_t x, uint64_t y, size_t len);

/*
 * A loopback pair, the fixture of most tests: network context 'ctx'
 * (VLAN 0) with GIDs 0 and 1 (::ffff:10.0.0.1 and .2), a PD, an EQ, a CQ
 * per QP and two connected RC QPs 'a' (GID 0) and 'b' (GID 1), plus a
 * buffer each, registered with every right.
 */
typedef struct TvPair {
    RvDev *d;
    uint32_t ctx, pd, eq;       /* eq: the EQ of cqa and cqb */
    uint64_t eq_ring;
    TvCq *cqa, *cqb;
    TvQp *a, *b;
    uint64_t bufa, bufb;
    uint32_t mra, mrb;          /* STags of bufa / bufb */
} TvPair;

/*
 * Set up 'p' on 'd': the EQ on MSI-X 'eq_vector' with 'eq_flags', CQs of
 * 2^cq_log and QPs of 2^qp_log entries, buffers of 'buf_size' bytes.
 */
void tv_pair_init(RvDev *d, TvPair *p, uint32_t eq_vector, uint8_t eq_flags,
                  uint32_t cq_log, uint32_t qp_log, uint64_t buf_size);
/* Free what tv_pair_init allocated in the test (not the device objects). */
void tv_pair_fini(TvPair *p);
/*
 * A receive of 'len' bytes at bufb + off on 'b', then a signaled SEND of
 * bufa + off, 'len' bytes, from 'a' (the completions are the caller's).
 */
void tv_pair_send(TvPair *p, uint64_t off, uint32_t len, uint64_t recv_id,
                  uint64_t send_id);

static inline struct rnic_sge tv_sge(uint64_t addr, uint32_t len, uint32_t key)
{
    struct rnic_sge s = { .addr = addr, .length = len, .lkey = key };

    return s;
}

#endif /* RNIC_TEST_COMMON_VERBS_H */
