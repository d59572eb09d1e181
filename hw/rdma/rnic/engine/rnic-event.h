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
 * Adding an event: a line in RNIC_EVENTS, a line in trace-events and a
 * case in rnic_host_event() (rnic-pci.c; the compiler names a missing
 * case and a missing trace event).
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
 * X(NAME, class, "args"): the event (trace event rnic_<name> in lower
 * case), its class, and the names of the numbers it carries
 * (RnicEventArgs.v[0], v[1] ...); every event may carry a reason too.
 */
#define RNIC_EVENTS(X)                                                        \
    X(ADMIN_START, TRACE, "opcode cmd_id")                                    \
    X(ADMIN_DONE, TRACE, "opcode cmd_id status")                              \
    X(DOORBELL_DECODED, TRACE, "page offset handle index")                    \
    X(QP_STATE, TRACE, "qpn from to")                                         \
    X(WQE_START, TRACE, "qpn index opcode length")                            \
    X(WQE_DONE, TRACE, "qpn index opcode status")                             \
    X(PKT_TX, TRACE, "qpn dest_qp opcode psn length")                         \
    X(PKT_RX, TRACE, "qpn opcode psn length")                                 \
    X(RETRANSMIT, TRACE, "qpn psn")                                           \
    X(NAK_SENT, TRACE, "qpn psn syndrome")                                    \
    X(NAK_RECEIVED, TRACE, "qpn psn syndrome")                                \
    X(RETRY_EXCEEDED, TRACE, "qpn psn")                                       \
    X(UD_QKEY_DROP, TRACE, "qpn qkey")                                        \
    X(ASYNC_DROPPED, TRACE, "type handle")                                    \
    X(LINK, TRACE, "up")                                                      \
    X(QP_BIND, TRACE, "handle qpn net_ctx")                                   \
    X(PD_BIND, TRACE, "pd net_ctx mrs")                                       \
    X(PD_UNBIND, TRACE, "pd net_ctx")                                         \
    X(FLUSH, TRACE, "qpn psn type level length")                              \
    X(SCM_PERSIST, TRACE, "offset length")                                    \
    X(SCM_MGMT, TRACE, "mr_index op status")                                  \
    X(ERR_ADMIN, ERR, "opcode cmd_id status")                                 \
    X(ERR_MEM_BUDGET, ERR, "bytes budget_mib used")                           \
    X(ERR_CALL_BOUND, ERR, "call figure value bound")                         \
    X(ERR_WIRE_TX, ERR, "opcode dest_qp psn count")                           \
    X(ERR_WIRE_RX, ERR, "opcode dest_qp psn vlan count")                      \
    X(ERR_STATE_LOAD, ERR, "")                                                \
    X(UB_ADMIN, UB, "opcode cmd_id status")                                   \
    X(UB_ADMIN_TAIL, UB, "tail entries head")                                 \
    X(UB_ADMIN_FATAL, UB, "code")                                             \
    X(UB_ENABLE, UB, "aq acq log2")                                           \
    X(UB_CTRL_NESTED, UB, "value")                                            \
    X(UB_VECTOR, UB, "vector vectors")                                        \
    X(UB_DOORBELL, UB, "page handle index")                                   \
    X(UB_EQ, UB, "eq")                                                        \
    X(UB_CQ, UB, "cq entries")                                                \
    X(UB_WQE, UB, "qpn index")                                                \
    X(UB_SGE, UB, "sge lkey addr length")                                     \
    X(UB_RECV, UB, "qpn num_sge max_sge")                                     \
    X(UB_MR, UB, "qpn stag")                                                  \
    X(UB_REQUEST, UB, "qpn psn opcode")                                       \
    X(UB_READ_SOURCE, UB, "qpn psn")                                          \
    X(UB_READ_RESPONSE, UB, "qpn opcode length packet packets")               \
    X(UB_UD_LENGTH, UB, "qpn length")                                         \
    X(UB_WIRE_PAYLOAD, UB, "opcode psn")                                      \
    X(UB_ETH_RING, UB, "ring base log2")                                      \
    X(UB_ETH_DESC, UB, "ring index addr length")                              \
    X(UB_ETH_TAIL, UB, "ring tail head old_tail entries")

typedef enum RnicEvent {
#define RNIC_EVENT_ENUM(id, cls, args) RNIC_EV_##id,
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
#define RNIC_EVENT_CLASS(id, cls, args) [RNIC_EV_##id] = RNIC_EVC_##cls,
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
