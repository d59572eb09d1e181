/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine internals, shared by the engine's source files only.
 *
 * Object model (docs/spec.md section 1 has the guest's view):
 *  - every object lives in a handle table (small integers, free list);
 *  - a network context owns a mapping table (STag index -> RnicMr) and a
 *    QPN space (QPN -> RnicQp);
 *  - PDs belong to a network context; MRs and QPs to a PD;
 *  - a multi-network PD (ABI 1.1) belongs to none: its MRs live in the
 *    device's multi-network table and are replicated (the same RnicMr) into
 *    the table of every context one of its RC QPs is bound to; its UD/GSI
 *    QPs are in every context's QPN space;
 *  - every object records its owner user context (doorbell page);
 *  - references between objects are counted; an object that is still
 *    referenced cannot be destroyed (RNIC_ST_BUSY).
 */
#ifndef RNIC_ENGINE_INT_H
#define RNIC_ENGINE_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include "rnic-engine.h"
#include "rnic-eth.h"
#include "rnic-packet.h"
#include "rnic-wr.h"

#define rnic_container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * A data-path stack buffer that is written before it is read: exempt from
 * -ftrivial-auto-var-init=zero, which QEMU builds with (QEMU 10.1 has the
 * same as QEMU_UNINITIALIZED). Without it every transmitted frame began
 * by zeroing 5.7 KiB of stack (rnic_wire_xmit's bounce buffer and iovecs).
 */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define RNIC_UNINIT __attribute__((uninitialized))
#endif
#endif
#ifndef RNIC_UNINIT
#define RNIC_UNINIT
#endif

/* ---------------------------------------------------------------------- */
/* Small containers                                                       */
/* ---------------------------------------------------------------------- */

/*
 * The object core (the model: rxe's rxe_pool.c). Every object the guest
 * names by a handle (network context, PD, EQ, CQ, SRQ, QP) starts with
 * one header and lives in one RnicTable of its type: created, looked up
 * with its owner check, iterated and destroyed by the functions below.
 * RNIC_OBJECT_HEADER declares the header as plain members (qp->handle)
 * that are also one struct (qp->obj).
 */
typedef struct RnicObject {
    uint32_t handle;
    uint32_t owner;             /* user context, or RNIC_UCTX_KERNEL */
    uint32_t refs;              /* objects that refer to this one */
} RnicObject;

#define RNIC_OBJECT_HEADER                      \
    union {                                     \
        struct {                                \
            uint32_t handle;                    \
            uint32_t owner;                     \
            uint32_t refs;                      \
        };                                      \
        RnicObject obj;                         \
    }

/* The objects of one type, indexed by handle 0..max-1, with a free list. */
typedef struct RnicTable {
    const char *name;           /* "QP", for messages */
    size_t obj_size;            /* sizeof the object, header first */
    void **slots;
    uint32_t cap;               /* slots allocated */
    uint32_t max;               /* limit on handles */
    uint32_t count;             /* live objects */
    uint32_t *free;             /* stack of free handles below cap */
    uint32_t nfree;
    uint32_t *free_pos;         /* a free handle's place in 'free' */
} RnicTable;

void rnic_table_init(RnicTable *t, const char *name, size_t obj_size,
                     uint32_t max);
void rnic_table_destroy(RnicTable *t);
/* Returns the new handle, or UINT32_MAX when full. */
uint32_t rnic_table_alloc(RnicTable *t, void *obj);
/* Place an object at a given handle (state load); false if taken/too big. */
bool rnic_table_insert_at(RnicTable *t, uint32_t handle, void *obj);
void rnic_table_remove(RnicTable *t, uint32_t handle);

static inline void *rnic_table_get(const RnicTable *t, uint32_t handle)
{
    return handle < t->cap ? t->slots[handle] : NULL;
}

/*
 * A new zeroed object of the table's type at 'handle' (UINT32_MAX: the
 * lowest free one), its header filled in; 'charge' bytes (at least the
 * object's size) on the host memory account. NULL when the table is full,
 * the handle taken or the budget spent.
 */
void *rnic_obj_create(RnicEngine *e, RnicTable *t, uint32_t handle,
                      uint32_t owner, uint64_t charge);
/* Out of its table, freed, 'charge' (as at create) back on the account. */
void rnic_obj_destroy(RnicEngine *e, RnicTable *t, void *obj,
                      uint64_t charge);

/* Any owner, for rnic_obj_lookup(). */
#define RNIC_OWNER_ANY UINT32_MAX

/* The object at 'handle' if it exists and belongs to 'owner'. */
static inline void *rnic_obj_lookup(const RnicTable *t, uint32_t handle,
                                    uint32_t owner)
{
    RnicObject *obj = rnic_table_get(t, handle);

    return obj && (owner == RNIC_OWNER_ANY || obj->owner == owner) ? obj
                                                                   : NULL;
}

/*
 * Every object of a table, lowest handle first; the body may destroy the
 * object it is given (slots never move).
 */
#define RNIC_TABLE_FOREACH(t, i, obj)                                       \
    for ((i) = 0; (i) < (t)->cap; (i)++)                                    \
        if (((obj) = (t)->slots[(i)]) != NULL)

/* Intrusive doubly-linked list (circular, with a sentinel head). */
typedef struct RnicLink {
    struct RnicLink *next, *prev;
} RnicLink;

static inline void rnic_list_init(RnicLink *head)
{
    head->next = head->prev = head;
}

static inline bool rnic_list_empty(const RnicLink *head)
{
    return head->next == head;
}

static inline bool rnic_link_linked(const RnicLink *l)
{
    return l->next != NULL;
}

static inline void rnic_list_add_tail(RnicLink *head, RnicLink *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

static inline void rnic_list_del(RnicLink *l)
{
    if (l->next) {
        l->prev->next = l->next;
        l->next->prev = l->prev;
        l->next = l->prev = NULL;
    }
}

/* ---------------------------------------------------------------------- */
/* Objects                                                                */
/* ---------------------------------------------------------------------- */

/* Work scheduled by a doorbell (or by the engine itself) for the next run. */
enum rnic_work_kind {
    RNIC_WORK_QP,
    RNIC_WORK_CQ,
    RNIC_WORK_EQ,
    RNIC_WORK_SRQ,
};

typedef struct RnicWork {
    RnicLink link;              /* in RnicEngine.work, when queued */
    uint8_t kind;               /* enum rnic_work_kind */
} RnicWork;

typedef struct RnicNetCtx RnicNetCtx;
typedef struct RnicPd RnicPd;

/*
 * A UD multicast group (rnic-mcast.c): a multicast GID of a network
 * context and the QPs attached to it (their handles); free when nqps is 0.
 */
#define RNIC_MCAST_GROUPS       64
#define RNIC_MCAST_QPS          16

typedef struct RnicMcast {
    uint32_t net_ctx;           /* handle */
    uint8_t mgid[16];
    uint32_t nqps;
    uint32_t qps[RNIC_MCAST_QPS];
} RnicMcast;
typedef struct RnicMr RnicMr;
typedef struct RnicEq RnicEq;
typedef struct RnicCq RnicCq;
typedef struct RnicSrq RnicSrq;
typedef struct RnicQp RnicQp;

/*
 * Per-network mapping table (patent a): STag index -> entry. The index space
 * is 'range' entries (a power of two, >= 4 x max_mr, <= 2^24) so that
 * random indexes are sparse; index 0 is never used (STag 0..255 invalid).
 * Two levels: dir[index >> RNIC_MRT_LEAF_BITS][index & leaf mask], leaves
 * allocated on first use.
 */
#define RNIC_MRT_LEAF_BITS      10
#define RNIC_MRT_LEAF_SIZE      (1u << RNIC_MRT_LEAF_BITS)

typedef struct RnicMrTable {
    RnicMr ***dir;
    uint32_t ndir;
    uint32_t range;
    uint32_t count;
} RnicMrTable;

/*
 * A user context: a process of the guest's, its doorbell page the handle
 * (0 is the kernel's, no object). refs: the objects it owns; owner:
 * RNIC_UCTX_KERNEL (the kernel driver allocates it).
 */
typedef struct RnicUctx {
    RNIC_OBJECT_HEADER;
} RnicUctx;

/* refs: the PDs and GIDs bound to it; owner: RNIC_UCTX_KERNEL */
struct RnicNetCtx {
    RNIC_OBJECT_HEADER;
    uint32_t net_id;            /* VLAN ID (or VNI) */
    uint8_t net_type;           /* enum rnic_net_type */
    RnicMrTable mrt;
    GHashTable *qpns;           /* QPN -> RnicQp */
    uint32_t next_qpn;
    uint32_t log_replayed;      /* log records the last load replayed */
};

typedef struct RnicGid {
    bool valid;
    uint8_t gid[16];
    uint32_t net_ctx;           /* handle */
    uint8_t type;
} RnicGid;

/* refs: its MRs, QPs and SRQs */
struct RnicPd {
    RNIC_OBJECT_HEADER;
    RnicNetCtx *ctx;            /* NULL for a multi-network PD */
    /* multi-network PD: bound RC QPs per context handle (max_net_ctx) */
    uint32_t *binds;
    uint32_t mrs;               /* multi-network PD: its MRs */
};

/*
 * Physical side of a mapping-table entry: guest DMA addresses of the pages.
 * Immutable once built and reference counted, so that the registration log
 * shares it with the entry instead of copying it.
 */
typedef struct RnicPbl {
    uint32_t refs;
    uint32_t npages;
    uint8_t page_shift;
    bool contiguous;            /* pages[0] is the base of a contiguous range */
    uint64_t pages[];
} RnicPbl;

/*
 * A mapped STag's segment table (kind RNIC_MR_KIND_MAPPED, rnic-mapped.c):
 * byte o of the entry is in repetition o / unit, segment i where
 * start <= o % unit < start + length, at member byte addr + repetition *
 * stride + (o % unit - start). Immutable once built and reference counted,
 * shared with the registration log as a page list is.
 */
typedef struct RnicMapSeg {
    uint64_t addr;              /* the member's byte of repetition 0 */
    uint64_t start;             /* offset of its first byte in a repetition */
    uint64_t stride;            /* member bytes from repetition to repetition */
    uint32_t length;
    uint32_t lkey;              /* the member's STag */
} RnicMapSeg;

typedef struct RnicMap {
    uint32_t refs;
    uint32_t nsegs;
    uint32_t repeat;            /* 1: list form */
    uint64_t unit;              /* bytes of one repetition */
    RnicMapSeg segs[];
} RnicMap;

enum rnic_mr_state {
    RNIC_MR_INVALID = 0,        /* fast-reg MR not (or no longer) registered */
    RNIC_MR_VALID = 1,
};

/*
 * An MR's handle is its STag's index: it lives in the per-network mapping
 * tables (RnicMrTable), not in an RnicTable, and is found by its STag.
 * refs: unused (nothing refers to an MR by reference count yet).
 */
struct RnicMr {
    RNIC_OBJECT_HEADER;
    uint32_t stag;              /* index << 8 | key */
    RnicNetCtx *ctx;            /* NULL: multi-network PD's (replicated) */
    RnicPd *pd;
    uint8_t kind;               /* enum rnic_mr_kind */
    uint8_t state;              /* enum rnic_mr_state */
    bool fast_reg;              /* allocated by ALLOC_MR */
    uint32_t access;            /* enum rnic_access */
    uint64_t iova;
    uint64_t length;
    uint32_t max_pages;         /* fast-reg: page list capacity */
    RnicPbl *pbl;               /* NULL while a fast-reg MR is unregistered */
    /*
     * A mapped STag (kind RNIC_MR_KIND_MAPPED): its segments (NULL while
     * unregistered; max_pages: the most a fast-register may give it) and
     * the table its members' STags resolve in (its PD's local keys)
     */
    RnicMap *map;
    const RnicMrTable *members;
    struct rnic_scm_status *scm_status; /* SCM: after its first MGMT write */
    /*
     * SCM: persists asked for through this region and their bytes (its
     * MGMT status; not migrated)
     */
    uint64_t scm_persists;
    uint64_t scm_persisted_bytes;
    /*
     * A memory window (kind RNIC_MR_KIND_MW, rnic-mw.c): [iova, iova +
     * length) of 'parent' with the rights in 'access'. Bound while parent
     * is set; the MR is the one that had parent_stag when it was bound
     * (every access checks that it still has). Type 2B: usable only
     * through the QP that bound it (handle and QPN).
     */
    uint8_t mw_type;            /* enum rnic_mw_type */
    RnicMr *parent;
    uint32_t parent_stag;
    uint32_t mw_qp;
    uint32_t mw_qpn;
    uint32_t windows;           /* an MR: the windows bound to it */
    /*
     * Its version: RnicEngine.mr_gen when it was created or last changed
     * (rnic_mr_changed), unique over the engine's life, so that a cached
     * translation can tell "the same region, unchanged" (rnic-wqc.c).
     */
    uint64_t gen;
};

/*
 * An SCM region's rights word (RnicMr.access) holds the storage semantics
 * it allows from this bit on, so that the registration log and the state
 * image carry them with the rights.
 */
#define RNIC_MR_SEMS_SHIFT 16

static inline uint32_t rnic_mr_sems(const RnicMr *mr)
{
    return mr->access >> RNIC_MR_SEMS_SHIFT;
}

/* The semantic a request asks for in the key of an SCM region's STag. */
static inline uint8_t rnic_stag_sem(uint32_t stag)
{
    return (stag >> RNIC_SCM_KEY_SEM_SHIFT) & 0x7;
}

/* Registration log (patent a'): what the migration replays. */
enum rnic_reglog_op {
    RNIC_REGLOG_REG = 1,        /* REG_MR: entry created valid */
    RNIC_REGLOG_ALLOC = 2,      /* ALLOC_MR: fast-reg entry created invalid */
    RNIC_REGLOG_FAST_REG = 3,   /* REG_MR work request: entry (re)filled */
    RNIC_REGLOG_INVALIDATE = 4, /* LOCAL_INV / SEND_WITH_INV */
    RNIC_REGLOG_DEREG = 5,      /* DEREG_MR: entry removed */
};

typedef struct RnicRegLogRec {
    uint8_t op;                 /* enum rnic_reglog_op */
    uint8_t kind;
    uint32_t net_ctx;           /* handle, or RNIC_PD_MULTI_NET */
    uint32_t stag;
    uint32_t pd;                /* handle */
    uint32_t owner;
    uint32_t access;
    uint32_t max_pages;
    uint64_t iova;
    uint64_t length;
    RnicPbl *pbl;               /* REG, FAST_REG: shared with the entry */
    RnicMap *map;               /* ... of a mapped STag */
} RnicRegLogRec;

/* refs: the CQs that signal it; owner: RNIC_UCTX_KERNEL */
struct RnicEq {
    RNIC_OBJECT_HEADER;
    uint64_t ring;
    uint8_t log_size;
    uint8_t flags;              /* enum rnic_eq_flags */
    uint32_t vector;
    uint32_t prod;              /* device */
    uint32_t cons;              /* driver, from the doorbell */
    bool armed;
    uint64_t lost;              /* events dropped on a full ring */
    bool db_arm;                /* arm request from the doorbell */
    RnicWork work;
};

/* refs: its QPs */
struct RnicCq {
    RNIC_OBJECT_HEADER;
    uint64_t ring;
    uint8_t log_size;
    RnicEq *eq;                 /* NULL: no notifications */
    uint32_t prod;
    uint32_t cons;
    uint8_t arm;                /* RNIC_DB_ARM_NEXT/SOLICITED >> 24 */
    bool error;                 /* overrun or DMA failure: CQEs dropped */
    uint8_t db_arm;             /* arm request from the doorbell */
    RnicWork work;
};

/* refs: its QPs */
struct RnicSrq {
    RNIC_OBJECT_HEADER;
    RnicPd *pd;
    uint64_t ring;
    uint8_t log_size;
    uint8_t wqe_shift;
    uint32_t prod;
    uint32_t cons;
    uint32_t limit;             /* armed limit, 0 = off */
    bool error;
    RnicWork work;
};

/* A scatter/gather element with its mapping-table entry resolved. */
typedef struct RnicSgeRes {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
    RnicMr *mr;                 /* valid while RnicEngine.mr_gen is unchanged */
} RnicSgeRes;

/* SGE lists the WQE translation cache holds (rnic-wqc.c): at most this */
#define RNIC_WQC_MAX_SGE 8

/* A translated SGE list, as the WQE translation cache serves it. */
typedef struct RnicSgeList {
    RnicSgeRes *sge;            /* the SGEs resolved */
    uint32_t length;            /* total bytes */
    uint32_t nsegs;             /* segs[]: 0 = not computed */
    RnicDmaSeg *segs;           /* the whole message's, RNIC_WQC_MAX_SGE */
} RnicSgeList;

/* Decoded, validated send WQE (the requester's WQE cache). */
typedef struct RnicSendWqe {
    bool valid;
    uint32_t index;             /* free-running SQ index */
    uint64_t mr_gen;
    struct rnic_sq_wqe hdr;
    uint32_t nsge;
    uint32_t length;            /* total bytes */
    /*
     * A message of one packet: its payload's guest DMA segments, made
     * once (and kept by the translation cache); 0: per packet.
     */
    uint32_t nsegs;
    RnicDmaSeg segs[RNIC_WQC_MAX_SGE];
    RnicSgeRes sge[RNIC_CFG_MAX_SGE];
    uint8_t inline_data[RNIC_CFG_MAX_INLINE];
} RnicSendWqe;

/* A QP's WQE translation cache (rnic-wqc.c). */
typedef struct RnicWqc RnicWqc;

/* A cache probe: the fingerprint and set of one SGE list (rnic-wqc.c). */
typedef struct RnicWqcProbe {
    uint64_t fp;
    uint64_t set_hash;          /* its top bits: the set */
} RnicWqcProbe;

/* A receive WQE being filled by the responder. */
typedef struct RnicRecvWqe {
    bool valid;
    bool from_srq;
    uint64_t wr_id;
    uint64_t mr_gen;
    uint32_t nsge;
    uint32_t length;            /* capacity */
    uint32_t offset;            /* bytes placed so far */
    RnicSgeRes sge[RNIC_CFG_MAX_SGE];
} RnicRecvWqe;

/* Requester bookkeeping per SQ slot. */
enum rnic_slot_state {
    RNIC_SLOT_IDLE = 0,         /* not started */
    RNIC_SLOT_STARTED,          /* PSNs assigned, packets (partly) sent */
    RNIC_SLOT_DONE,             /* status final, CQE not yet written */
};

typedef struct RnicSqSlot {
    uint64_t wr_id;
    uint32_t first_psn;
    uint32_t npsn;              /* request packets; READ: response packets */
    uint32_t length;
    uint32_t recv_psn;          /* READ: response packets received */
    uint8_t opcode;             /* enum rnic_wr_opcode */
    uint8_t flags;              /* enum rnic_wqe_flags */
    uint8_t status;             /* enum rnic_wc_status, when DONE */
    uint8_t state;              /* enum rnic_slot_state */
} RnicSqSlot;

/* Responder resources: READ, atomics, FLUSH, ATOMIC WRITE (duplicate replay). */
enum rnic_res_kind {
    RNIC_RES_FREE = 0,
    RNIC_RES_READ,
    RNIC_RES_ATOMIC,
    RNIC_RES_FLUSH,             /* answered by a zero-length READ response */
    RNIC_RES_ATOMIC_WRITE,      /* likewise */
    RNIC_RES_KIND_COUNT
};

typedef struct RnicRespRes {
    uint8_t kind;
    bool pending;               /* responses still to send */
    uint32_t psn;               /* of the request */
    uint32_t npsn;              /* response packets */
    uint32_t next;              /* next response packet to send */
    uint64_t va;
    uint32_t rkey;
    uint32_t len;
    uint64_t orig;              /* atomic: the original value */
} RnicRespRes;

typedef struct RnicResp {
    uint32_t epsn;              /* expected PSN */
    uint32_t msn;
    uint8_t in_msg;             /* 0, RNIC_RESP_SEND or RNIC_RESP_WRITE */
    bool nak_sent;              /* PSN sequence NAK outstanding */
    bool comm_est;              /* COMM_EST raised */
    RnicRecvWqe recv;           /* SEND / WRITE_IMM target */
    /* RDMA WRITE in progress */
    uint32_t w_rkey;
    uint64_t w_va;
    uint32_t w_len;
    uint32_t w_done;
    /*
     * Window range [persist_off, persist_end) to make durable before any
     * further responder packet (ACK, NAK, response) leaves: FLUSH, DURABLE
     * READ and MGMT persist, done in chunks (rnic_scm_persist_step).
     */
    uint64_t persist_off;
    uint64_t persist_end;
    /* READ/atomic resources: a ring of 'nres' */
    RnicRespRes *res;
    uint32_t nres;
    uint32_t res_head;          /* next to allocate */
    uint32_t res_send;          /* oldest with responses pending */
    uint32_t res_pending;       /* entries with responses pending */
    /* ACK owed once the pending responses are out */
    bool ack_owed;
    uint32_t ack_psn;
    uint8_t ack_syndrome;
} RnicResp;

#define RNIC_RESP_SEND  1
#define RNIC_RESP_WRITE 2

enum rnic_timer_kind {
    RNIC_TIMER_NONE = 0,
    RNIC_TIMER_RETRANSMIT,
    RNIC_TIMER_RNR,
};

/* Work flags of a QP in its RnicWork. */
enum rnic_qp_work {
    RNIC_QPW_SQ = 1u << 0,      /* send queue has work */
    RNIC_QPW_RQ = 1u << 1,      /* receive queue doorbell (flush in ERR) */
    RNIC_QPW_RESP = 1u << 2,    /* responder has READ responses to stream */
};

/* refs: unused (nothing refers to a QP by reference count) */
struct RnicQp {
    RNIC_OBJECT_HEADER;
    uint32_t qpn;
    uint8_t type;               /* enum rnic_qp_type */
    uint8_t state;              /* enum rnic_qp_state */
    uint8_t mcast;              /* UD: the multicast groups it is in */
    /* its transport counters (RNIC_QP_STAT_FIRST on), over its life */
    uint64_t stats[RNIC_QP_STAT_COUNT];
    /*
     * NULL for a QP of a multi-network PD that is not bound (RC before
     * its first AV) or serves every context (UD, GSI: all_nets)
     */
    RnicNetCtx *ctx;
    bool all_nets;
    RnicPd *pd;
    RnicCq *scq;
    RnicCq *rcq;
    RnicSrq *srq;
    bool sq_sig_all;

    /* send queue */
    uint64_t sq_addr;
    uint8_t sq_log;
    uint8_t sq_shift;
    uint32_t sq_max_sge;
    uint32_t max_inline;
    uint32_t sq_prod;           /* from the doorbell */
    uint32_t sq_next;           /* next slot to (re)transmit */
    uint32_t sq_una;            /* oldest slot not completed */
    uint32_t sq_hi;             /* slots below have PSNs assigned */
    uint32_t tx_pkt;            /* packet of slot sq_next to send next */
    RnicSqSlot *slots;

    /* receive queue */
    uint64_t rq_addr;
    uint8_t rq_log;
    uint8_t rq_shift;
    uint32_t rq_max_sge;
    uint32_t rq_prod;
    uint32_t rq_cons;

    /* attributes (MODIFY_QP) */
    uint8_t path_mtu;           /* enum rnic_mtu */
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t min_rnr_timer;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t port;
    uint16_t pkey_index;
    uint32_t qkey;
    uint32_t dest_qpn;
    uint32_t access;
    struct rnic_av av;
    bool sqd_notify;
    bool sq_drained;            /* SQD reached and announced */

    /* requester */
    uint32_t req_psn;           /* PSN of the next new request packet */
    uint32_t una_psn;           /* oldest PSN not acknowledged */
    /*
     * AckReq bookkeeping (not migrated: a loaded QP resends from its oldest
     * unacknowledged PSN anyway): one past the highest PSN sent, and the
     * packets sent since the last one that asked for an ACK.
     */
    uint32_t tx_psn_end;
    uint32_t noack_pkts;
    bool sq_stalled;            /* fence / initiator depth: wait for answers */
    uint32_t rq_psn_init;       /* RQ PSN of the last RTR (QUERY_QP) */
    uint8_t retry_left;
    uint8_t rnr_left;
    uint32_t rd_outstanding;    /* READ/atomic started, not done */
    bool rnr_wait;              /* RNR NAK: sending paused until the timer */
    bool rewinding;             /* go-back-N started, no progress since */
    uint8_t timer_kind;         /* enum rnic_timer_kind */
    uint64_t timer_deadline;
    RnicLink timer_link;        /* in RnicEngine.timers */

    /* responder */
    RnicResp resp;

    /* scheduling */
    RnicWork work;
    uint32_t work_flags;        /* enum rnic_qp_work */

    /* caches (rebuilt on demand, never migrated) */
    RnicWqc *wqc;               /* WQE translation cache, NULL until used */
    uint32_t wqc_gen;           /* bumped by every attribute change */
    uint32_t wqc_cold;          /* misses in a row */
    RnicSendWqe *txc;           /* WQE being transmitted */
    RnicSendWqe *rxc;           /* WQE receiving READ/atomic responses */
    RnicQp *peer;               /* loopback destination of RC traffic */
    bool peer_local;            /* the AV's GID is one of ours */
    uint64_t peer_gen;
};

/*
 * Guest-visible register state (everything BAR0 exposes that is writable
 * or changes at run time). Part of the migration image.
 */
typedef struct RnicRegs {
    uint32_t dev_ctrl;
    uint32_t dev_status;
    uint32_t fatal_code;
    uint32_t scratch;
    uint8_t mac[6];
    uint64_t aq_base;
    uint64_t acq_base;
    uint32_t aq_size_log2;
    uint32_t aq_tail;           /* producer, written by the driver */
    uint32_t aq_head;           /* consumer, advanced by the device */
    uint32_t acq_tail;          /* device's completion producer */
    uint32_t acq_head;          /* driver's completion consumer */
    uint64_t heartbeat_base_ns; /* clock at reset */
} RnicRegs;

#define RNIC_BOUNCE_SIZE        (64 * 1024)

/* What durable writes of this engine call still have to persist. */
typedef struct RnicScmRange {
    uint64_t off;               /* in the window */
    uint64_t len;
} RnicScmRange;

typedef struct RnicScm {
    RnicScmRange pending[8];
    uint32_t npending;
    /*
     * SCM_PERSIST in progress across admin runs: the command at the queue
     * head (index, offset, length) and how much of it is durable
     */
    bool cmd_active;
    uint32_t cmd_index;
    uint64_t cmd_off;
    uint64_t cmd_len;
    uint64_t cmd_done;
    uint64_t persists;          /* host persist calls, since the start */
    uint64_t persisted_bytes;
} RnicScm;

struct RnicEngine {
    RnicEngineConfig cfg;
    const RnicHostOps *ops;
    void *opaque;

    RnicRegs regs;
    uint64_t stats[RNIC_STAT_COUNT];
    RnicEth eth;                /* Ethernet function (rnic-eth.c) */
    bool run_scheduled;
    bool run_inline;            /* a doorbell's work runs now (rnic-doorbell.c) */
    bool prompt_peers;          /* loaded: NAK the RC peers at the next run */
    uint32_t prompt_next;       /* QP handle the prompting goes on from */
    /*
     * Calls into the engine in progress (rnic_engine_enter). A host
     * callback may re-enter it (an MSI or DMA the guest aimed at BAR0);
     * a reset or disable asked for then waits for the outermost call.
     */
    uint32_t depth;
    bool ctrl_deferred;
    uint32_t ctrl_value;        /* the deferred DEV_CTRL write */

    /* objects */
    RnicTable uctxs;            /* handle = doorbell page, 1 .. db_pages-1 */
    RnicTable net_ctxs;
    GHashTable *net_ids;        /* (type << 24 | id) + 1 -> RnicNetCtx */
    RnicGid *gids;              /* cfg.max_gid entries */
    RnicMcast mcast[RNIC_MCAST_GROUPS]; /* UD multicast (rnic-mcast.c) */
    RnicTable pds;
    RnicTable eqs;
    RnicEq *async_eq;
    RnicTable cqs;
    RnicTable srqs;
    RnicTable qps;
    uint64_t mr_count;          /* MRs (a replicated one counts once) */
    uint64_t mw_count;          /* of which memory windows */
    RnicMrTable mnet_mrt;       /* MRs of multi-network PDs (originals) */
    uint16_t *mrt_users;        /* per STag index: entries in all tables */
    uint64_t *mrt_unused;       /* bit per STag index: no entry anywhere */
    uint64_t mrt_checks;        /* index checks and bitmap words, all time */
    GHashTable *mnet_qpns;      /* QPN -> RnicQp of multi-network PDs */
    uint32_t mnet_next_qpn;
    uint64_t pbl_pages;         /* page-list entries held, all entries */
    uint64_t mem_used;          /* host memory account (rnic_mem_charge) */
    uint64_t reglog_charged;    /* of which registration-log records */
    /*
     * Work counted per call (RnicCall, docs/spec.md §8): this call's, the
     * current phase's (an admin run, a run over the queues, a frame: what
     * rnic_work_spent() holds against its budget), the most per kind.
     */
    RnicCall call_kind;
    RnicCallWork call;
    RnicCallWork phase;
    RnicCallWork call_max[RNIC_CALL_COUNT];
    uint64_t call_overruns;
    /* the admin command being executed (its failures' events), or NULL */
    const struct rnic_admin_cmd *admin_cmd;

    /* registration log */
    GArray *reglog;             /* of RnicRegLogRec */
    /*
     * its length after the last compaction or clear: until it grows, a
     * compaction would free nothing (rnic_pbl_new does not force one)
     */
    uint64_t reglog_compacted_len;
    uint64_t reglog_appended;   /* records ever appended (statistics) */

    /* generations: cached pointers are valid while these are unchanged */
    uint64_t mr_gen;            /* bumped by every MR change */
    /* WQE translation cache (rnic-wqc.c): on/off (x-wqe-cache), its bytes */
    bool wqc_on;
    uint64_t wqc_bytes;
    uint64_t qp_gen;            /* bumped by QP create/destroy, GID changes */

    GRand *rand;                /* unpredictable STag indexes */

    /* scheduling */
    RnicLink work;              /* RnicWork queued for the next run */
    RnicLink timers;            /* QPs with a timer armed */
    uint64_t timer_armed;       /* deadline given to the host, or UINT64_MAX */

    uint8_t *bounce;            /* RNIC_BOUNCE_SIZE, guest-to-guest copies */
    RnicScm scm;                /* rnic-scm.c */

    /*
     * Test seam: packets for the wire go here when set (unit tests that
     * play the remote peer); otherwise they are counted as dropped.
     */
    void (*wire_tap)(void *opaque, const RnicPacket *pkt);
    void *wire_tap_opaque;
};

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/*
 * Events (rnic-event.h) go to RnicHostOps.event, and only when the host
 * wants them: rnic_event(e, QP_STATE, why, qpn, from, to) builds nothing
 * unless event_enabled says yes. 'why' is a reason or NULL.
 */
static inline bool rnic_event_on(RnicEngine *e, RnicEvent ev)
{
    return e->ops->event &&
           (!e->ops->event_enabled || e->ops->event_enabled(e->opaque, ev));
}

void rnic_event_emit(RnicEngine *e, RnicEvent ev, const RnicEventArgs *a);

#define rnic_event(e, ev, why_, ...)                                        \
    do {                                                                    \
        RnicEngine *e_ = (e);                                               \
                                                                            \
        if (rnic_event_on(e_, RNIC_EV_##ev)) {                              \
            const RnicEventArgs a_ = { .v = { __VA_ARGS__ }, .why = (why_) }; \
            rnic_event_emit(e_, RNIC_EV_##ev, &a_);                         \
        }                                                                   \
    } while (0)

/* The same with a reason formatted (only when the event is wanted). */
void rnic_event_vprintf(RnicEngine *e, RnicEvent ev, uint64_t v0, uint64_t v1,
                        uint64_t v2, const char *fmt, va_list ap)
    G_GNUC_PRINTF(6, 0);

static inline void rnic_stat_inc(RnicEngine *e, enum rnic_stat s)
{
    e->stats[s]++;
}

/* A transport counter (RNIC_QP_STAT_FIRST on): the device's and the QP's. */
static inline void rnic_qp_stat_inc(RnicEngine *e, RnicQp *qp,
                                    enum rnic_stat s)
{
    e->stats[s]++;
    qp->stats[s - RNIC_QP_STAT_FIRST]++;
}

/*
 * Every change to a region's fields (state, key, bounds, pages, rights)
 * and its creation: a new version, and every cached pointer re-checked.
 */
static inline void rnic_mr_changed(RnicEngine *e, RnicMr *mr)
{
    mr->gen = ++e->mr_gen;
}

void rnic_engine_schedule(RnicEngine *e);
/*
 * The host memory account (RnicEngineConfig.mem_budget_mib): charge before
 * allocating what a guest action asks for; false: over budget, the action
 * fails (RNIC_ST_NO_RESOURCES). Release what was charged when freeing.
 */
bool rnic_mem_charge(RnicEngine *e, uint64_t bytes);
void rnic_mem_release(RnicEngine *e, uint64_t bytes);
/* A network context's mapping table, charged whole when it is created. */
uint64_t rnic_mrt_bytes(const RnicEngineConfig *cfg);

/*
 * Bracket an entry point that does work (runs, timers, doorbells, frames,
 * register writes): see RnicEngine.depth. The outermost call's work is
 * counted as a call of kind 'call' (a nested one's is its caller's).
 * rnic-call.c: the call boundary.
 */
static inline void rnic_engine_enter(RnicEngine *e, RnicCall call)
{
    if (!e->depth++) {
        e->call_kind = call;
        memset(&e->call, 0, sizeof(e->call));
        memset(&e->phase, 0, sizeof(e->phase));
    }
}
void rnic_engine_leave(RnicEngine *e);
/* The call that ends: its maxima, and held against its bound. */
void rnic_call_account(RnicEngine *e);

/* A nested call counted on its own (push), then the outer one's (pop). */
typedef struct RnicCallSave {
    RnicCall kind;
    RnicCallWork call;
    RnicCallWork phase;
} RnicCallSave;

static inline void rnic_call_push(RnicEngine *e, RnicCall call,
                                  RnicCallSave *outer)
{
    outer->kind = e->call_kind;
    outer->call = e->call;
    outer->phase = e->phase;
    e->call_kind = call;
    memset(&e->call, 0, sizeof(e->call));
    memset(&e->phase, 0, sizeof(e->phase));
}

static inline void rnic_call_pop(RnicEngine *e, const RnicCallSave *outer)
{
    rnic_call_account(e);
    e->call_kind = outer->kind;
    e->call = outer->call;
    e->phase = outer->phase;
}

/*
 * Work accounting (RnicCallWork): each path charges what it does; loops
 * that may go on (over queues, WQEs, commands, persist chunks) stop when
 * rnic_work_spent() says the phase's budget is spent and leave the rest
 * to the next run. A phase is an admin run, a run over the queues, a
 * receive; rnic_work_phase() starts one.
 */
static inline void rnic_work_phase(RnicEngine *e)
{
    memset(&e->phase, 0, sizeof(e->phase));
}

static inline void rnic_work_wqes(RnicEngine *e, uint64_t n)
{
    e->call.wqes += n;
    e->phase.wqes += n;
}

static inline void rnic_work_frame(RnicEngine *e, uint64_t bytes)
{
    e->call.frames++;
    e->phase.frames++;
    e->call.dma_bytes += bytes;
    e->phase.dma_bytes += bytes;
}

static inline void rnic_work_entries(RnicEngine *e, uint64_t n)
{
    e->call.entries += n;
    e->phase.entries += n;
}

static inline void rnic_work_dma(RnicEngine *e, uint64_t bytes)
{
    e->call.dma_bytes += bytes;
    e->phase.dma_bytes += bytes;
}

static inline void rnic_work_persist(RnicEngine *e, uint64_t bytes)
{
    e->call.persist_bytes += bytes;
    e->phase.persist_bytes += bytes;
}

/* A phase's budget (rnic-call.c): the next piece of work waits. */
extern const RnicCallWork rnic_phase_budget;

static inline bool rnic_work_spent(const RnicEngine *e)
{
    const RnicCallWork *b = &rnic_phase_budget;

    return e->phase.wqes >= b->wqes || e->phase.frames >= b->frames ||
           e->phase.entries >= b->entries ||
           e->phase.dma_bytes >= b->dma_bytes ||
           e->phase.persist_bytes >= b->persist_bytes;
}

void rnic_raise_irq(RnicEngine *e, unsigned vector);

static inline int rnic_dma_read(RnicEngine *e, uint64_t addr, void *buf,
                                size_t len)
{
    rnic_work_dma(e, len);
    if (e->ops->dma_read(e->opaque, addr, buf, len)) {
        rnic_stat_inc(e, RNIC_STAT_DMA_ERRORS);
        return -1;
    }
    return 0;
}

static inline int rnic_dma_write(RnicEngine *e, uint64_t addr, const void *buf,
                                 size_t len)
{
    rnic_work_dma(e, len);
    if (e->ops->dma_write(e->opaque, addr, buf, len)) {
        rnic_stat_inc(e, RNIC_STAT_DMA_ERRORS);
        return -1;
    }
    return 0;
}

/* Guest-to-guest copy (mapped when the host can, else via the bounce). */
int rnic_dma_copy(RnicEngine *e, uint64_t dst, uint64_t src, uint64_t len);

/* Queue work for the next rnic_engine_run(). */
void rnic_work_queue(RnicEngine *e, RnicWork *w);
static inline void rnic_work_cancel(RnicWork *w)
{
    rnic_list_del(&w->link);
}

/* User context checks: is 'uctx' allocated (0, the kernel, always is)? */
static inline bool rnic_uctx_valid(const RnicEngine *e, uint32_t uctx)
{
    return uctx == RNIC_UCTX_KERNEL || rnic_table_get(&e->uctxs, uctx);
}

/* An object owned by 'uctx' is created / destroyed (the kernel: no count). */
static inline void rnic_uctx_get(RnicEngine *e, uint32_t uctx)
{
    RnicUctx *u = rnic_table_get(&e->uctxs, uctx);

    if (u) {
        u->refs++;
    }
}

static inline void rnic_uctx_put(RnicEngine *e, uint32_t uctx)
{
    RnicUctx *u = rnic_table_get(&e->uctxs, uctx);

    if (u) {
        u->refs--;
    }
}

/* A user context at doorbell page 'handle' (state load), or NULL. */
RnicUctx *rnic_uctx_create(RnicEngine *e, uint32_t handle);

/*
 * rnic-admin-helpers.c: the rule every queue ring follows, when the guest
 * creates it (rnic_admin_check_ring) and when a state image brings it:
 * 2^log entries (log_min <= log <= 24, at most max_entries) of 'stride'
 * bytes at a 4 KiB aligned guest address, not wrapping around.
 */
enum rnic_ring_fault {
    RNIC_RING_OK = 0,
    RNIC_RING_BAD_SIZE,         /* log out of range */
    RNIC_RING_BAD_ADDR,         /* 0, unaligned or wrapping */
};
enum rnic_ring_fault rnic_ring_check(uint64_t addr, uint32_t log,
                                     uint32_t log_min, uint32_t max_entries,
                                     uint32_t stride);
/* rnic_ring_check's verdict in words (newly allocated), NULL when fine. */
char *rnic_ring_why(uint64_t addr, uint32_t log, uint32_t log_min,
                    uint32_t max_entries, uint32_t stride);

/*
 * The rules of an object's parameters, one function per object, which its
 * create command and the state image's load both apply (as rnic_ring_check
 * is for rings): NULL when they hold, else why not (newly allocated), and
 * *status the command's status for it; the objects named by handles are
 * returned.
 */
/* rnic-cq.c */
char *rnic_eq_check_params(RnicEngine *e, uint64_t ring, uint8_t log_size,
                           uint32_t vector, uint8_t flags, uint8_t *status);
char *rnic_cq_check_params(RnicEngine *e, uint32_t owner, uint32_t eqh,
                           uint64_t ring, uint8_t log_size, RnicEq **eq,
                           uint8_t *status);
/* rnic-srq.c: RNIC_ST_BAD_PARAM when refused (the PD is the caller's) */
char *rnic_srq_check_params(RnicEngine *e, uint64_t ring, uint8_t log_size,
                            uint8_t wqe_shift, uint32_t limit);
/*
 * rnic-qp.c: a QP's send side (type, owner, send queue) and its receive
 * side (its own queue, or none on an SRQ: RNIC_ST_BAD_PARAM), checked
 * apart because the state image brings them apart
 */
char *rnic_qp_check_sq_params(RnicEngine *e, uint8_t type, uint32_t owner,
                              uint64_t ring, uint8_t log_size,
                              uint8_t wqe_shift, uint8_t *status);
char *rnic_qp_check_rq_params(RnicEngine *e, const RnicSrq *srq,
                              uint64_t ring, uint8_t log_size,
                              uint8_t wqe_shift);
/* rnic-ctx.c */
char *rnic_netctx_check_params(RnicEngine *e, uint8_t type, uint32_t net_id,
                               uint8_t *status);
char *rnic_pd_check_params(RnicEngine *e, uint32_t owner, uint32_t ctxh,
                           RnicNetCtx **ctx, uint8_t *status);
char *rnic_gid_check_params(RnicEngine *e, uint32_t index, uint32_t ctxh,
                            uint8_t type, const uint8_t gid[16],
                            RnicNetCtx **ctx, uint8_t *status);

/* rnic-regs.c */
void rnic_regs_reset(RnicEngine *e);
/* A DEV_CTRL write: enable, disable, reset (deferred while nested). */
RnicAccessResult rnic_regs_ctrl_write(RnicEngine *e, uint32_t value);

/* rnic-doorbell.c */
void rnic_doorbells_reset(RnicEngine *e);
void rnic_doorbells_process(RnicEngine *e);

/* rnic-ctx.c: network contexts, user contexts, GIDs, PDs */
void rnic_ctx_init(RnicEngine *e);
void rnic_ctx_fini(RnicEngine *e);
void rnic_ctx_reset(RnicEngine *e);
RnicNetCtx *rnic_netctx_lookup(RnicEngine *e, uint32_t handle);
RnicNetCtx *rnic_netctx_by_id(RnicEngine *e, uint8_t type, uint32_t net_id);
RnicNetCtx *rnic_netctx_create(RnicEngine *e, uint32_t handle, uint8_t type,
                               uint32_t net_id);
void rnic_netctx_destroy(RnicEngine *e, RnicNetCtx *ctx);
RnicPd *rnic_pd_lookup(RnicEngine *e, uint32_t handle);
/* ctx NULL: a multi-network PD */
RnicPd *rnic_pd_create(RnicEngine *e, uint32_t handle, RnicNetCtx *ctx,
                       uint32_t owner);
/* Network context of GID 'index', NULL if there is no such GID. */
RnicNetCtx *rnic_gid_netctx(RnicEngine *e, uint32_t index);
/* Is gid one of this device's GIDs in network context 'ctx'? */
bool rnic_gid_is_local(RnicEngine *e, const RnicNetCtx *ctx,
                       const uint8_t gid[16]);
const RnicGid *rnic_gid_get(RnicEngine *e, uint32_t index);

/*
 * rnic-mr.c: mapping tables, STags, translation; rnic-mr-cmd.c: the
 * registration commands and work requests; rnic-reglog.c: the registration
 * log (the kinds of entry and what these files share: rnic-mr.h)
 */
void rnic_mrt_init(RnicEngine *e, RnicMrTable *t);
/* Free a context's table (replicas of multi-network MRs are only dropped). */
void rnic_mrt_destroy(RnicEngine *e, RnicNetCtx *ctx);
/*
 * Multi-network PDs: bind 'pd' to 'ctx' for one more QP (the first binding
 * replicates every MR of the PD into the context's table; false with *why
 * when the table has no room), and undo one binding (the last one drops the
 * replicas: the PD's keys stop resolving in that network).
 */
bool rnic_pd_bind(RnicEngine *e, RnicPd *pd, RnicNetCtx *ctx,
                  const char **why);
void rnic_pd_unbind(RnicEngine *e, RnicPd *pd, RnicNetCtx *ctx);
/* The table local keys of 'pd' resolve in (its own, or the multi-network). */
RnicMrTable *rnic_pd_lkeys(RnicEngine *e, const RnicPd *pd);
/* The registration-log / DEREG_MR context handle of an entry. */
static inline uint32_t rnic_mr_net(const RnicMr *mr)
{
    return mr->ctx ? mr->ctx->handle : RNIC_PD_MULTI_NET;
}
RnicMr *rnic_mrt_lookup(const RnicMrTable *t, uint32_t index);
/*
 * A new entry of 'pd' at 'index' (0: a free random one) with consumer key
 * 'key', created invalid and of kind MEM; NULL when the tables (or the
 * memory budget) have no room or the index is taken.
 */
RnicMr *rnic_mr_insert(RnicEngine *e, RnicPd *pd, uint32_t owner,
                       uint32_t index, uint8_t key);
/* Call fn for every entry of one table, in index order (fn may remove it). */
typedef void RnicMrFn(RnicEngine *e, RnicMr *mr, void *opaque);
void rnic_mrt_foreach(RnicEngine *e, RnicMrTable *t, RnicMrFn *fn,
                      void *opaque);
/* ... and for every entry of the device, once (replicas skipped). */
void rnic_mr_foreach(RnicEngine *e, RnicMrFn *fn, void *opaque);
void rnic_mr_init(RnicEngine *e);
void rnic_mr_fini(RnicEngine *e);
void rnic_mr_reset(RnicEngine *e);
void rnic_pbl_unref(RnicEngine *e, RnicPbl *pbl);
/* A page list to fill (state load); NULL when too big or over budget. */
RnicPbl *rnic_pbl_alloc(RnicEngine *e, uint32_t npages, uint8_t shift,
                        bool contiguous);

/* Why a translation failed. */
typedef enum RnicXlateErr {
    RNIC_XLATE_OK = 0,
    RNIC_XLATE_NO_ENTRY,        /* no entry at the STag's index */
    RNIC_XLATE_KEY,             /* entry's key differs */
    RNIC_XLATE_STATE,           /* entry not valid (fast-reg, invalidated) */
    RNIC_XLATE_PD,              /* entry in another PD */
    RNIC_XLATE_BOUNDS,          /* range outside the region */
    RNIC_XLATE_ACCESS,          /* missing access right */
    RNIC_XLATE_SEMANTIC,        /* SCM: semantic not allowed, or its rules */
    RNIC_XLATE_WINDOW,          /* a memory window as a local key */
    RNIC_XLATE_UNBOUND,         /* window unbound, or its MR changed */
    RNIC_XLATE_QP,              /* type 2B window of another QP */
    RNIC_XLATE_MEMBER,          /* mapped STag: a member fails its checks */
} RnicXlateErr;

const char *rnic_xlate_err_str(RnicXlateErr err);

/*
 * Resolve 'stag' in 'ctx' for [va, va + len) with 'access' rights (0 for
 * a local read) in protection domain 'pd' (NULL: any). On success *mr is
 * the entry. Every key, PD, bounds (overflow-safe), rights and state check
 * happens here: this is the single gate to registered memory.
 */
RnicXlateErr rnic_mr_resolve(RnicNetCtx *ctx, uint32_t stag, const RnicPd *pd,
                             uint64_t va, uint64_t len, uint32_t access,
                             RnicMr **mr);
/*
 * The same for a local key (an SGE's) in any mapping table (the local keys
 * of multi-network PDs): a memory window is no local key.
 */
RnicXlateErr rnic_mrt_resolve(const RnicMrTable *t, uint32_t stag,
                              const RnicPd *pd, uint64_t va, uint64_t len,
                              uint32_t access, RnicMr **mr);
/*
 * An rkey arriving on 'qp': rnic_mr_resolve in the QP's network and PD,
 * where a memory window resolves to the MR it is bound to (*mr), after
 * the window's own key, rights, bounds and QP (type 2B) are checked.
 */
RnicXlateErr rnic_qp_rkey_resolve(const RnicQp *qp, uint32_t rkey,
                                  uint64_t va, uint64_t len, uint32_t access,
                                  RnicMr **mr);
/* The checks of one entry the resolve functions share (rnic-mr.c). */
RnicXlateErr rnic_mr_check(const RnicMr *mr, uint32_t stag, const RnicPd *pd,
                           uint64_t va, uint64_t len, uint32_t access);

/*
 * rnic-mw.c: memory windows (ALLOC_MW in rnic-admin.h, the kind in
 * rnic-mr.h). The BIND_MW work request returns an rnic_wc_status.
 */
uint8_t rnic_mw_bind(RnicEngine *e, RnicQp *qp, const struct rnic_sq_wqe *wqe);
void rnic_mw_unbind(RnicEngine *e, RnicMr *mw);
/* Is [va, va + len) inside a resolved entry (overflow-safe)? */
bool rnic_mr_range_ok(const RnicMr *mr, uint64_t va, uint64_t len);

/*
 * Guest DMA segments of [va, va + len) of a resolved entry (range checked
 * by the caller). Appends to segs[*nsegs], at most 'max'; returns false if
 * more segments would be needed.
 */
bool rnic_mr_segs(const RnicMr *mr, uint64_t va, uint64_t len,
                  RnicDmaSeg *segs, uint32_t *nsegs, uint32_t max);

/* Copy between host bytes and a resolved entry's memory. */
int rnic_mr_write(RnicEngine *e, const RnicMr *mr, uint64_t va,
                  const void *buf, uint64_t len);
int rnic_mr_read(RnicEngine *e, const RnicMr *mr, uint64_t va,
                 void *buf, uint64_t len);
/*
 * Copy a payload (host bytes or guest segments) into an entry's memory,
 * starting at payload offset 'off' for 'len' bytes.
 */
int rnic_mr_place(RnicEngine *e, const RnicMr *mr, uint64_t va,
                  const RnicPayload *pl, uint32_t off, uint32_t len);

/* Work-request side of MRs: status is an enum rnic_wc_status. */
uint8_t rnic_mr_fast_reg(RnicEngine *e, RnicQp *qp, const RnicSendWqe *wqe);
/*
 * LOCAL_INV (remote false: the STag in the QP's PD's local-key table) or
 * SEND with invalidate (remote: in its network's table) of a fast-reg MR
 * or a type 2B window.
 */
uint8_t rnic_mr_invalidate(RnicEngine *e, const RnicMrTable *t,
                           const RnicQp *qp, uint32_t stag, bool remote);

/*
 * rnic-mapped.c: mapped STags over a set of buffers (patent f; the kind in
 * rnic-mr.h).
 */
/*
 * The segment table 'in' (little endian, as the guest wrote it) checked
 * for a mapped entry of 'length' bytes and made an RnicMap (charged to the
 * host memory account); NULL with *why when it is malformed or over budget.
 */
RnicMap *rnic_map_new(RnicEngine *e, const struct rnic_map_seg *in,
                      uint32_t nsegs, uint32_t repeat, uint64_t length,
                      const char **why);
RnicMap *rnic_map_ref(RnicMap *map);
void rnic_map_unref(RnicEngine *e, RnicMap *map);
/* The table back in its guest form (state save), n = map->nsegs. */
void rnic_map_export(const RnicMap *map, struct rnic_map_seg *out);
/* Rights a mapped STag may have (REG_MR, fast-register, replay). */
const char *rnic_map_check_access(uint32_t access);

/*
 * A fast-register's (or its replay's) new translation in place: 'mr' is
 * valid as 'stag' over [iova, iova + length) with 'access', its version
 * renewed, the log told.
 */
void rnic_mr_fast_reg_done(RnicEngine *e, RnicMr *mr, uint32_t stag,
                           uint64_t iova, uint64_t length, uint32_t access);
/* Registration log: append a record of 'mr' as it is now. */
void rnic_reglog_append(RnicEngine *e, uint8_t op, const RnicMr *mr);
/* Registration log: replay one record (state load). */
bool rnic_reglog_replay(RnicEngine *e, const RnicRegLogRec *rec, char **err);
/* Drop records that no longer describe live state, when worth it. */
void rnic_reglog_compact(RnicEngine *e, bool force);

/* rnic-cq.c: event queues, completion queues, async events */
void rnic_cq_init(RnicEngine *e);
void rnic_cq_fini(RnicEngine *e);
void rnic_cq_reset(RnicEngine *e);
RnicEq *rnic_eq_lookup(RnicEngine *e, uint32_t handle);
RnicCq *rnic_cq_lookup(RnicEngine *e, uint32_t handle);
RnicEq *rnic_eq_create(RnicEngine *e, uint32_t handle);
RnicCq *rnic_cq_create(RnicEngine *e, uint32_t handle);
void rnic_eq_process(RnicEngine *e, RnicEq *eq);
void rnic_cq_process(RnicEngine *e, RnicCq *cq);

/* A completion to write; fields as struct rnic_cqe, host order. */
typedef struct RnicCqeInfo {
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t imm_or_inv;
    uint32_t src_qp;
    uint8_t opcode;
    uint8_t status;
    uint8_t flags;
    uint16_t vlan_id;
    const uint8_t *smac;
} RnicCqeInfo;

/* Write a CQE for 'qp' (notifies the EQ when armed). */
void rnic_cq_post(RnicEngine *e, RnicCq *cq, const RnicQp *qp,
                  const RnicCqeInfo *info);
/* Asynchronous event to the async EQ (dropped, logged, when there is none). */
void rnic_async_event(RnicEngine *e, uint8_t type, uint32_t handle,
                      uint32_t data);

/* rnic-srq.c */
void rnic_srq_init(RnicEngine *e);
void rnic_srq_fini(RnicEngine *e);
void rnic_srq_reset(RnicEngine *e);
RnicSrq *rnic_srq_lookup(RnicEngine *e, uint32_t handle);
RnicSrq *rnic_srq_create(RnicEngine *e, uint32_t handle);
void rnic_srq_process(RnicEngine *e, RnicSrq *srq);
/* After a consumption: raise the limit event if armed and crossed. */
void rnic_srq_check_limit(RnicEngine *e, RnicSrq *srq);

/* rnic-qp.c */
void rnic_qp_init(RnicEngine *e);
void rnic_qp_fini(RnicEngine *e);
void rnic_qp_reset(RnicEngine *e);
RnicQp *rnic_qp_lookup(RnicEngine *e, uint32_t handle);
RnicQp *rnic_qp_by_qpn(RnicNetCtx *ctx, uint32_t qpn);
RnicQp *rnic_qp_create(RnicEngine *e, uint32_t handle, uint32_t qpn);
void rnic_qp_destroy(RnicEngine *e, RnicQp *qp);
/* Move to ERR (flushes both queues) or, for UC/UD send errors, to SQE. */
void rnic_qp_error(RnicEngine *e, RnicQp *qp);
void rnic_qp_send_queue_error(RnicEngine *e, RnicQp *qp);
void rnic_qp_process(RnicEngine *e, RnicQp *qp);
void rnic_qp_flush(RnicEngine *e, RnicQp *qp);
uint32_t rnic_qp_pmtu(const RnicQp *qp);
static inline void rnic_qp_work(RnicEngine *e, RnicQp *qp, uint32_t flags)
{
    qp->work_flags |= flags;
    rnic_work_queue(e, &qp->work);
}
/* Read a receive WQE from the RQ/SRQ ring and resolve its SGEs. */
bool rnic_recv_fetch(RnicEngine *e, RnicQp *qp, RnicRecvWqe *rw,
                     uint8_t *status);
/*
 * The WQE translation cache (rnic-wqc.c). Lookup: the posted SGE list
 * 'sg' resolved for 'access' in 'pd' into *out (true), or a miss; then translate it and hand the result to rnic_wqc_insert with the
 * same probe (ignored when the list is not one to cache).
 */
/* The "access" of a receive WQE's list (LOCAL_WRITE, in the RQ's PD). */
#define RNIC_WQC_RECV (1u << 31)
bool rnic_wqc_lookup(RnicEngine *e, RnicQp *qp, const RnicPd *pd,
                     uint32_t access, const struct rnic_sge *sg, uint32_t nsge,
                     RnicSgeList *out, RnicWqcProbe *probe);
void rnic_wqc_insert(RnicEngine *e, RnicQp *qp, const RnicWqcProbe *probe,
                     uint32_t access, const struct rnic_sge *sg,
                     const RnicSgeList *res, uint32_t nsge);
void rnic_wqc_free(RnicEngine *e, RnicQp *qp);
/* Every QP's table freed (the host memory budget needs the room). */
void rnic_wqc_reclaim(RnicEngine *e);
/*
 * rnic-sge.c: resolve SGEs (lkey, PD, bounds, access); false on a
 * protection error.
 */
bool rnic_sges_resolve(RnicEngine *e, const RnicMrTable *t, const RnicPd *pd,
                       RnicSgeRes *sge, uint32_t nsge, uint32_t access);
/* Scatter payload bytes [poff, poff + len) to SGE list offset 'off'. */
int rnic_sges_place(RnicEngine *e, const RnicSgeRes *sge, uint32_t nsge,
                    uint32_t off, const RnicPayload *pl, uint32_t poff,
                    uint32_t len);
/* Guest segments of SGE list bytes [off, off + len). */
bool rnic_sges_segs(const RnicSgeRes *sge, uint32_t nsge, uint32_t off,
                    uint32_t len, RnicDmaSeg *segs, uint32_t *nsegs,
                    uint32_t max);
/* ... or their bytes copied into 'buf' (more pieces than segs can hold). */
int rnic_sges_gather(RnicEngine *e, const RnicSgeRes *sge, uint32_t nsge,
                     uint32_t off, uint8_t *buf, uint32_t len);
bool rnic_qp_transition_ok(uint8_t type, uint8_t cur, uint8_t next,
                           uint32_t mask);
bool rnic_qp_load_attach(RnicEngine *e, RnicQp *qp);
/* May a QP of 'pd' take 'qpn' (state load)? */
bool rnic_qpn_free_for(RnicEngine *e, const RnicPd *pd, uint32_t qpn);
/* Put the all-network QPs into a new context's QPN space. */
void rnic_qp_join_netctx(RnicEngine *e, RnicNetCtx *ctx);
/*
 * Bind an RC QP of a multi-network PD to 'ctx' (QPN into its space, PD
 * bound); false with *why (and *status, an admin status) otherwise.
 */
bool rnic_qp_bind(RnicEngine *e, RnicQp *qp, RnicNetCtx *ctx,
                  const char **why, uint8_t *status);

/* rnic-req.c: the requester (SQ -> packets, responses -> completions) */
void rnic_req_reset_qp(RnicQp *qp);
/* Transmit up to 'budget' packets; returns packets sent. */
uint32_t rnic_req_process(RnicEngine *e, RnicQp *qp, uint32_t budget);
/* A response packet (ACK, NAK, READ response, atomic ACK) for 'qp'. */
void rnic_req_rx(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt);
void rnic_req_timer(RnicEngine *e, RnicQp *qp);
/*
 * After a state load: an RC QP with a remote peer and unacknowledged
 * requests retransmits from the oldest one at its next run instead of
 * waiting for the local ACK timeout (packets around the switchover are
 * likely lost). No retry is consumed.
 */
void rnic_req_resume(RnicEngine *e, RnicQp *qp);
/* Nothing sent yet from req_psn on: AckReq bookkeeping starts afresh. */
static inline void rnic_req_ackreq_restart(RnicQp *qp)
{
    qp->tx_psn_end = qp->req_psn;
    qp->noack_pkts = 0;
}
/* Ask the peer about packets sent without AckReq (SQD: drain now). */
void rnic_req_probe(RnicEngine *e, RnicQp *qp);
void rnic_resp_prompt(RnicEngine *e, RnicQp *qp);
/* Complete every slot DONE in order from sq_una (writes CQEs). */
void rnic_req_complete(RnicEngine *e, RnicQp *qp);

/* rnic-resp.c: the responder */
/*
 * rnic-scm.c: the memory window and storage semantics in the STag key (the
 * kind in rnic-mr.h).
 */
uint64_t rnic_scm_caps(const RnicEngine *e);
uint64_t rnic_scm_window_size(const RnicEngine *e);
bool rnic_scm_is_mgmt(const RnicMr *mr, uint32_t stag);
/* After a remote write placed [va, va + len): durable ones are collected. */
void rnic_scm_written(RnicEngine *e, const RnicMr *mr, uint32_t stag,
                      uint64_t va, uint64_t len);
/* Before a READ through 'stag' is answered (DURABLE: persist first). */
void rnic_scm_before_read(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                          uint32_t stag, uint64_t va, uint64_t len);
/*
 * Persist [va, va + len) of a region before qp's responder sends anything
 * more (FLUSH, management): added to its persist range, done in chunks.
 */
void rnic_scm_persist(RnicEngine *e, RnicQp *qp, RnicMr *mr, uint64_t va,
                      uint64_t len);
/*
 * Persist the next chunks of qp's persist range, as much as the phase's
 * budget allows; true when none is left (its responses may go).
 */
bool rnic_scm_persist_step(RnicEngine *e, RnicQp *qp);
/* All of it now (before a state image is taken). */
void rnic_scm_persist_all(RnicEngine *e, RnicQp *qp);
/* Persist what was collected: before any responder packet leaves. */
void rnic_scm_persist_pending(RnicEngine *e);
/* A management request written through the MGMT key; false: fatal. */
bool rnic_scm_mgmt(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                   const RnicPayload *pl);
/* The region's status bytes from region byte 'va' (MGMT reads). */
const uint8_t *rnic_scm_status_bytes(RnicMr *mr, uint64_t va);

void rnic_resp_reset_qp(RnicQp *qp);
void rnic_resp_rx(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt);
/* Stream pending READ responses; returns packets sent. */
uint32_t rnic_resp_process(RnicEngine *e, RnicQp *qp, uint32_t budget);

/* rnic-transport.c: delivery (loopback / wire), timers */

/*
 * The opcodes the transport implements: the codec's table (rnic-roce.h)
 * less what is not a transport packet (a CNP). NULL for any other.
 */
static inline const RnicRoceOpInfo *rnic_transport_op(uint8_t opcode)
{
    const RnicRoceOpInfo *info = rnic_roce_op_info(opcode);

    if (!info || (info->flags & RNIC_ROCE_OPF_CNP)) {
        return NULL;
    }
    return info;
}

/* RC and UC: one peer QP, PSN-sequenced messages of several packets. */
static inline bool rnic_qpt_connected(uint8_t type)
{
    return type == RNIC_QPT_RC || type == RNIC_QPT_UC;
}

/* The BTH transport bits (RNIC_ROCE_TRANSPORT_*) of a QP's packets. */
static inline uint8_t rnic_qp_transport(const RnicQp *qp)
{
    return qp->type == RNIC_QPT_RC ? RNIC_ROCE_TRANSPORT_RC :
           qp->type == RNIC_QPT_UC ? RNIC_ROCE_TRANSPORT_UC :
                                     RNIC_ROCE_TRANSPORT_UD;
}

/* A QP changes state (MODIFY_QP, an error, SQE): reported as an event. */
static inline void rnic_qp_set_state(RnicEngine *e, RnicQp *qp, uint8_t to)
{
    rnic_event(e, QP_STATE, NULL, qp->qpn, qp->state, to);
    qp->state = to;
}

/* The extension headers an opcode carries (the opcode table's). */
static inline uint32_t rnic_op_ext(uint8_t opcode)
{
    return rnic_roce_ops[opcode].ext;
}
void rnic_transport_init(RnicEngine *e);
void rnic_transport_reset(RnicEngine *e);
/* Fill the network part of a packet from 'qp' (RC: its AV) */
void rnic_packet_net_from_av(RnicEngine *e, const RnicQp *qp,
                             const struct rnic_av *av, RnicPacket *pkt);
/* Send a packet of 'qp' (loopback or wire). */
void rnic_xmit(RnicEngine *e, RnicQp *qp, RnicPacket *pkt);
/* A packet arrived in network context 'ctx'. */
void rnic_rx(RnicEngine *e, RnicNetCtx *ctx, const RnicPacket *pkt);
/* One packet to 'qp' (its transport checked). */
void rnic_rx_qp(RnicEngine *e, RnicQp *qp, const RnicPacket *pkt);

/*
 * rnic-mcast.c: UD multicast groups. rnic_mcast_deliver: 'pkt' (to the
 * multicast QPN) to every QP attached to (ctx, mgid), the count of them.
 */
bool rnic_gid_is_mcast(const uint8_t gid[16]);
bool rnic_mcast_joined(RnicEngine *e, const uint8_t mgid[16]);
bool rnic_mcast_attach(RnicEngine *e, RnicQp *qp, const uint8_t mgid[16]);
unsigned rnic_mcast_deliver(RnicEngine *e, RnicNetCtx *ctx,
                            const uint8_t mgid[16], const RnicPacket *pkt);
void rnic_mcast_qp_destroy(RnicEngine *e, RnicQp *qp);
void rnic_mcast_reset(RnicEngine *e);
/* The wire: a RoCEv2 frame (rnic-wire.c), or wire_tap when set. */
void rnic_wire_transmit(RnicEngine *e, const RnicPacket *pkt);
/* Copy a packet's payload (host bytes or guest segments) to 'buf'. */
bool rnic_packet_payload_gather(RnicEngine *e, const RnicPacket *pkt,
                                void *buf);
void rnic_qp_timer_set(RnicEngine *e, RnicQp *qp, uint8_t kind, uint64_t ns);
void rnic_qp_timer_cancel(RnicEngine *e, RnicQp *qp);
/* Local ACK timeout of a QP in ns (0: none), RNR timer code in ns. */
uint64_t rnic_ack_timeout_ns(uint8_t timeout);
uint64_t rnic_rnr_timer_ns(uint8_t code);

#endif /* RNIC_ENGINE_INT_H */
