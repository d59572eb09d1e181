/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: typed events for the host's tracing and logging.
 *
 * The engine reports what happens as one of the events below with up to
 * five numbers and a reason (RnicEventArgs), through RnicHostOps.event.
 * It asks RnicHostOps.event_enabled first and builds nothing when the
 * answer is no. QEMU maps each event to its own trace event
 * (hw/rdma/rnic/trace-events: rnic_<name>, rnic_err_<name> and
 * rnic_ub_<name>, grouped as hw/nvme does) and logs the guest's mistakes
 * (class UB) under LOG_GUEST_ERROR as well.
 *
 * Adding an event: a line in RNIC_EVENTS and a line in trace-events with
 * 'arity' numbers and the reason (rnic-pci.c calls each trace event from
 * its row: the compiler names a missing trace event and one whose
 * arguments do not match the arity; test-events checks the arity against
 * the names, trace-events and the engine's rnic_event() calls).
 */
#ifndef RNIC_EVENT_H
#define RNIC_EVENT_H

#include <stdbool.h>
#include <stdint.h>

/* Who is to blame for an event. */
typedef enum RnicEventClass {
    RNIC_EVC_TRACE,     /* normal operation */
    RNIC_EVC_ERR,       /* an error not of the guest's making (peer, host) */
    RNIC_EVC_UB,        /* the guest misbehaved (LOG_GUEST_ERROR) */
} RnicEventClass;

/*
 * X(NAME, name, class, arity, "args"): the event, its name in lower case
 * (trace event rnic_<name>), its class, how many numbers it carries
 * (RnicEventArgs.v[0] .. v[arity - 1]: the trace event's arguments before
 * the reason) and their names; every event may carry a reason too.
 */
#define RNIC_EVENTS(X)                                                        \
    X(ADMIN_START, admin_start, TRACE, 2, "opcode cmd_id")                    \
    X(ADMIN_DONE, admin_done, TRACE, 3, "opcode cmd_id status")               \
    X(DOORBELL_DECODED, doorbell_decoded, TRACE, 4,                           \
      "page offset handle index")                                             \
    X(QP_STATE, qp_state, TRACE, 3, "qpn from to")                            \
    X(WQE_START, wqe_start, TRACE, 4, "qpn index opcode length")              \
    X(WQE_DONE, wqe_done, TRACE, 4, "qpn index opcode status")                \
    X(PKT_TX, pkt_tx, TRACE, 5, "qpn dest_qp opcode psn length")              \
    X(PKT_RX, pkt_rx, TRACE, 4, "qpn opcode psn length")                      \
    X(RETRANSMIT, retransmit, TRACE, 2, "qpn psn")                            \
    X(NAK_SENT, nak_sent, TRACE, 3, "qpn psn syndrome")                       \
    X(NAK_RECEIVED, nak_received, TRACE, 3, "qpn psn syndrome")               \
    X(RETRY_EXCEEDED, retry_exceeded, TRACE, 2, "qpn psn")                    \
    X(UD_QKEY_DROP, ud_qkey_drop, TRACE, 2, "qpn qkey")                       \
    X(ASYNC_DROPPED, async_dropped, TRACE, 2, "type handle")                  \
    X(LINK, link, TRACE, 1, "up")                                             \
    X(QP_BIND, qp_bind, TRACE, 3, "handle qpn net_ctx")                       \
    X(PD_BIND, pd_bind, TRACE, 3, "pd net_ctx mrs")                           \
    X(PD_UNBIND, pd_unbind, TRACE, 2, "pd net_ctx")                           \
    X(FLUSH, flush, TRACE, 5, "qpn psn type level length")                    \
    X(SCM_PERSIST, scm_persist, TRACE, 2, "offset length")                    \
    X(SCM_MGMT, scm_mgmt, TRACE, 3, "mr_index op status")                     \
    X(ERR_ADMIN, err_admin, ERR, 3, "opcode cmd_id status")                   \
    X(ERR_MEM_BUDGET, err_mem_budget, ERR, 3, "bytes budget_mib used")        \
    X(ERR_CALL_BOUND, err_call_bound, ERR, 4, "call figure value bound")      \
    X(ERR_WIRE_TX, err_wire_tx, ERR, 4, "opcode dest_qp psn count")           \
    X(ERR_WIRE_RX, err_wire_rx, ERR, 5, "opcode dest_qp psn vlan count")      \
    X(ERR_STATE_LOAD, err_state_load, ERR, 0, "")                             \
    X(UB_ADMIN, ub_admin, UB, 3, "opcode cmd_id status")                      \
    X(UB_ADMIN_TAIL, ub_admin_tail, UB, 3, "tail entries head")               \
    X(UB_ADMIN_FATAL, ub_admin_fatal, UB, 1, "code")                          \
    X(UB_ENABLE, ub_enable, UB, 3, "aq acq log2")                             \
    X(UB_CTRL_NESTED, ub_ctrl_nested, UB, 1, "value")                         \
    X(UB_VECTOR, ub_vector, UB, 2, "vector vectors")                          \
    X(UB_DOORBELL, ub_doorbell, UB, 3, "page handle index")                   \
    X(UB_EQ, ub_eq, UB, 1, "eq")                                              \
    X(UB_CQ, ub_cq, UB, 2, "cq entries")                                      \
    X(UB_WQE, ub_wqe, UB, 2, "qpn index")                                     \
    X(UB_SGE, ub_sge, UB, 4, "sge lkey addr length")                          \
    X(UB_RECV, ub_recv, UB, 3, "qpn num_sge max_sge")                         \
    X(UB_MR, ub_mr, UB, 2, "qpn stag")                                        \
    X(UB_REQUEST, ub_request, UB, 3, "qpn psn opcode")                        \
    X(UB_READ_SOURCE, ub_read_source, UB, 2, "qpn psn")                       \
    X(UB_READ_RESPONSE, ub_read_response, UB, 5,                              \
      "qpn opcode length packet packets")                                     \
    X(UB_UD_LENGTH, ub_ud_length, UB, 2, "qpn length")                        \
    X(UB_WIRE_PAYLOAD, ub_wire_payload, UB, 2, "opcode psn")                  \
    X(UB_ETH_RING, ub_eth_ring, UB, 3, "ring base log2")                      \
    X(UB_ETH_DESC, ub_eth_desc, UB, 4, "ring index addr length")              \
    X(UB_ETH_TAIL, ub_eth_tail, UB, 5, "ring tail head old_tail entries")

typedef enum RnicEvent {
#define RNIC_EVENT_ENUM(id, name, cls, arity, args) RNIC_EV_##id,
    RNIC_EVENTS(RNIC_EVENT_ENUM)
#undef RNIC_EVENT_ENUM
    RNIC_EV__MAX
} RnicEvent;

#define RNIC_EVENT_ARGS 5

typedef struct RnicEventArgs {
    uint64_t v[RNIC_EVENT_ARGS];    /* as named in RNIC_EVENTS */
    const char *why;                /* reason, or NULL */
} RnicEventArgs;

/* Its class (asked for every event the engine may report: inline). */
static inline RnicEventClass rnic_event_class(RnicEvent ev)
{
    static const uint8_t classes[RNIC_EV__MAX] = {
#define RNIC_EVENT_CLASS(id, name, cls, arity, args) \
        [RNIC_EV_##id] = RNIC_EVC_##cls,
        RNIC_EVENTS(RNIC_EVENT_CLASS)
#undef RNIC_EVENT_CLASS
    };

    return ev < RNIC_EV__MAX ? (RnicEventClass)classes[ev] : RNIC_EVC_ERR;
}

/*
 * The event as one line of text ("qp_state qpn=3 from=2 to=3"; "ub_wqe
 * qpn=3 index=7: SGE outside the MR"), for hosts without typed tracing
 * (the log, unit tests). g_free() the result.
 */
char *rnic_event_describe(RnicEvent ev, const RnicEventArgs *a);

#endif /* RNIC_EVENT_H */
