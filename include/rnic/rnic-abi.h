/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * rnic device ABI: everything the guest sees of the emulated RoCEv2 RNIC.
 *
 * Included unchanged by the QEMU device (hw/rdma/rnic), the engine, the
 * qtests, the guest kernel driver (rnic.ko) and the rdma-core provider.
 * docs/spec.md is the prose version of this header; keep them together.
 *
 * All multi-byte fields are little-endian, in registers and in guest memory.
 * Structures are naturally aligned and padded explicitly; their sizes are
 * part of the ABI and checked at compile time at the end of this file.
 *
 * Versioning: RNIC_ABI_VERSION_MAJOR changes on any incompatible change; a
 * driver refuses a device whose major it does not know. Additions that old
 * drivers may ignore bump the minor and are announced by a capability bit.
 */
#ifndef RNIC_ABI_H
#define RNIC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

#define RNIC_ABI_VERSION_MAJOR 1
#define RNIC_ABI_VERSION_MINOR 6
#define RNIC_ABI_VERSION ((RNIC_ABI_VERSION_MAJOR << 16) | RNIC_ABI_VERSION_MINOR)

/*
 * PCI identity. 0x1234 is the vendor ID QEMU's own experimental devices use
 * (edu, bochs display); it is not a registered ID of this project, hence the
 * 'vendor-id'/'device-id' properties to override both.
 */
#define RNIC_PCI_VENDOR_ID      0x1234
#define RNIC_PCI_DEVICE_ID      0x52d1
#define RNIC_PCI_SUBSYS_VENDOR  0x1234
#define RNIC_PCI_SUBSYS_ID      0x0001
#define RNIC_PCI_REVISION       0x01
#define RNIC_PCI_CLASS          0x020000 /* Ethernet controller */

/* BARs */
#define RNIC_BAR_REGS           0   /* registers, MSI-X table and PBA */
#define RNIC_BAR_DOORBELLS      2   /* doorbell pages, 64-bit */
#define RNIC_BAR_SCM            4   /* persistent memory window (RNIC_CAP_SCM) */
#define RNIC_BAR_MSIX           0   /* in BAR0, the registers' BAR */
#define RNIC_REGS_SIZE          0x1000  /* the registers: BAR0 [0, 4 KiB) */
#define RNIC_MSIX_PBA_OFFSET    0x1000  /* in BAR0 */
#define RNIC_MSIX_TABLE_OFFSET  0x8000  /* in BAR0, up to 2048 entries */
#define RNIC_BAR0_SIZE          0x10000
#define RNIC_DB_PAGE_SIZE       0x1000
#define RNIC_DB_PAGES_MAX       1024

/*
 * BAR0 register map. All registers are 32 bits wide and must be accessed
 * with aligned 32-bit loads/stores; 64-bit quantities are split into _LO/_HI
 * (write _LO first, _HI last). Unknown offsets read as 0 and ignore writes
 * (the device logs a guest error).
 */
enum rnic_reg {
    /* identity and limits (read-only) */
    RNIC_REG_MAGIC          = 0x000, /* RNIC_MAGIC */
    RNIC_REG_ABI_VERSION    = 0x004, /* RNIC_ABI_VERSION */
    RNIC_REG_CAPS_LO        = 0x008, /* enum rnic_cap bits 0..31 */
    RNIC_REG_CAPS_HI        = 0x00c, /* bits 32..63 */
    RNIC_REG_MAX_NET_CTX    = 0x010, /* network contexts */
    RNIC_REG_MAX_QP         = 0x014, /* QPs per device */
    RNIC_REG_MAX_CQ         = 0x018,
    RNIC_REG_MAX_MR         = 0x01c, /* mapping-table entries per network context */
    RNIC_REG_MAX_PD         = 0x020,
    RNIC_REG_MAX_SRQ        = 0x024,
    RNIC_REG_MAX_EQ         = 0x028,
    RNIC_REG_DB_PAGES       = 0x02c, /* doorbell pages in BAR2 */
    RNIC_REG_MSIX_VECTORS   = 0x030,
    RNIC_REG_MAX_QP_WR      = 0x034, /* entries per SQ/RQ/SRQ ring */
    RNIC_REG_MAX_CQE        = 0x038, /* entries per CQ ring */
    RNIC_REG_MAX_SGE        = 0x03c,
    RNIC_REG_MAX_INLINE     = 0x040, /* bytes of inline data per WQE */
    RNIC_REG_MAX_MTU        = 0x044, /* Ethernet MTU in bytes */
    RNIC_REG_MAX_GID        = 0x048, /* GID table entries */
    RNIC_REG_MAX_RD_ATOMIC  = 0x04c, /* outstanding READ/atomic per QP */
    RNIC_REG_SCM_SIZE_LO    = 0x050, /* bytes of the BAR4 window (RNIC_CAP_SCM) */
    RNIC_REG_SCM_SIZE_HI    = 0x054,

    /* control and status */
    RNIC_REG_DEV_CTRL       = 0x080, /* RW: enum rnic_dev_ctrl */
    RNIC_REG_DEV_STATUS     = 0x084, /* RO: enum rnic_dev_status */
    RNIC_REG_FATAL_CODE     = 0x088, /* RO: enum rnic_fatal, when FATAL */
    RNIC_REG_SCRATCH        = 0x08c, /* RW: free for the driver */
    RNIC_REG_HEARTBEAT      = 0x090, /* RO: ms of guest time since reset */
    RNIC_REG_MAC_LO         = 0x098, /* RW: MAC bytes 0..3 (byte 0 in bits 0..7) */
    RNIC_REG_MAC_HI         = 0x09c, /* RW: MAC bytes 4..5 in bits 0..15 */
    RNIC_REG_IRQ_TEST       = 0x0a0, /* WO: raise MSI-X vector <value> */

    /* admin queue: configured while RNIC_CTRL_ENABLE is clear */
    RNIC_REG_AQ_BASE_LO     = 0x100, /* RW: command ring, 4 KiB aligned */
    RNIC_REG_AQ_BASE_HI     = 0x104,
    RNIC_REG_ACQ_BASE_LO    = 0x108, /* RW: completion ring, 4 KiB aligned */
    RNIC_REG_ACQ_BASE_HI    = 0x10c,
    RNIC_REG_AQ_SIZE_LOG2   = 0x110, /* RW: entries of both rings, log2 */
    RNIC_REG_AQ_TAIL        = 0x114, /* WO doorbell: free-running producer index */
    RNIC_REG_AQ_HEAD        = 0x118, /* RO: free-running consumer index */
    RNIC_REG_ACQ_HEAD       = 0x11c, /* WO: driver's completion consumer index */

    /*
     * Ethernet function (0x140..0x19f): the guest net_device's rings for
     * frames that are not RoCE for this device. Independent of
     * RNIC_CTRL_ENABLE; reset by RNIC_CTRL_RESET only.
     */
    RNIC_REG_ETH_CTRL       = 0x140, /* RW: enum rnic_eth_ctrl */
    RNIC_REG_ETH_STATUS     = 0x144, /* RO: enum rnic_eth_status */
    RNIC_REG_ETH_MTU        = 0x148, /* RW: RNIC_ETH_MTU_MIN..MAX_MTU */
    RNIC_REG_ETH_IRQ_VECTOR = 0x14c, /* RW: MSI-X vector of the function */
    RNIC_REG_ETH_IRQ_MASK   = 0x150, /* RW: bit 0, 1 = masked (one-shot) */
    RNIC_REG_ETH_MC_HASH_LO = 0x154, /* RW: multicast hash bits 0..31 */
    RNIC_REG_ETH_MC_HASH_HI = 0x158, /* RW: bits 32..63 */
    RNIC_REG_ETH_TX_BASE_LO = 0x160, /* RW while TX_EN = 0: TX ring */
    RNIC_REG_ETH_TX_BASE_HI = 0x164,
    RNIC_REG_ETH_TX_SIZE_LOG2 = 0x168, /* RW while TX_EN = 0 */
    RNIC_REG_ETH_TX_TAIL    = 0x16c, /* RW doorbell: free-running producer */
    RNIC_REG_ETH_TX_HEAD    = 0x170, /* RO: free-running consumer */
    RNIC_REG_ETH_RX_BASE_LO = 0x180, /* RW while RX_EN = 0: RX ring */
    RNIC_REG_ETH_RX_BASE_HI = 0x184,
    RNIC_REG_ETH_RX_SIZE_LOG2 = 0x188, /* RW while RX_EN = 0 */
    RNIC_REG_ETH_RX_TAIL    = 0x18c, /* RW doorbell: buffers posted */
    RNIC_REG_ETH_RX_HEAD    = 0x190, /* RO: buffers consumed */
    RNIC_REG_ETH_BASE       = 0x140, /* first and ... */
    RNIC_REG_ETH_END        = 0x1a0, /* ... one past the last offset */

    /* statistics (read-only, 64-bit as _LO/_HI pairs, reset by RESET) */
    RNIC_REG_STAT_BASE      = 0x200,
};

#define RNIC_MAGIC              0x43494e52u /* "RNIC" */

/* Statistics counters: RNIC_REG_STAT_BASE + 8 * index (LO), + 4 (HI). */
enum rnic_stat {
    RNIC_STAT_ADMIN_CMDS = 0,   /* admin commands executed */
    RNIC_STAT_ADMIN_ERRORS,     /* admin commands completed with an error */
    RNIC_STAT_DOORBELLS,        /* doorbell writes accepted */
    RNIC_STAT_DOORBELL_ERRORS,  /* doorbell writes rejected */
    RNIC_STAT_WQES,             /* work requests executed */
    RNIC_STAT_CQES,             /* completions written */
    RNIC_STAT_EQES,             /* events written */
    RNIC_STAT_TX_FRAMES,        /* frames sent */
    RNIC_STAT_RX_FRAMES,        /* frames received */
    RNIC_STAT_RX_DROPPED,       /* frames dropped (bad header, ICRC, ...) */
    RNIC_STAT_DMA_ERRORS,       /* guest addresses that did not resolve */
    RNIC_STAT_TX_DROPPED,       /* packets with no route (no wire yet, ...) */
    RNIC_STAT_RETRANSMITS,      /* RC packets sent again (timeout, NAK, RNR) */
    /* Ethernet function (frames of the guest net_device rings only) */
    RNIC_STAT_ETH_TX_FRAMES,    /* frames sent from the TX ring */
    RNIC_STAT_ETH_TX_BYTES,     /* their bytes (before padding) */
    RNIC_STAT_ETH_TX_ERRORS,    /* frames completed with RNIC_ETH_DESC_ERR */
    RNIC_STAT_ETH_TX_LINK_DOWN, /* frames completed but not sent: link down */
    RNIC_STAT_ETH_RX_FRAMES,    /* frames written to the RX ring */
    RNIC_STAT_ETH_RX_BYTES,     /* their bytes */
    RNIC_STAT_ETH_RX_MULTICAST, /* of which multicast or broadcast */
    RNIC_STAT_ETH_RX_FILTERED,  /* dropped by the address filter */
    RNIC_STAT_ETH_RX_DISABLED,  /* dropped: RX_EN clear or RX ring halted */
    RNIC_STAT_ETH_RX_LENGTH_ERRORS, /* dropped: runt or longer than the MTU */
    RNIC_STAT_ETH_RX_DESC_ERRORS, /* completed with ERR (bad buffer, truncated) */
    RNIC_STAT_ETH_IRQS,         /* interrupts raised by the Ethernet function */
    /*
     * RoCEv2 frames claimed from the wire but dropped, by reason (each is
     * also counted in RNIC_STAT_RX_DROPPED); docs/spec.md "Wire format".
     */
    RNIC_STAT_RX_ERR_HEADER,    /* malformed: truncated, lengths, IP, pad, version */
    RNIC_STAT_RX_ERR_ICRC,      /* invariant CRC mismatch */
    RNIC_STAT_RX_ERR_PKEY,      /* P_Key not the default partition */
    RNIC_STAT_RX_ERR_NET,       /* VLAN with no network context */
    RNIC_STAT_RX_ERR_GID,       /* destination GID not in the frame's context */
    RNIC_STAT_RX_ERR_QPN,       /* no such QP in the frame's context */
    RNIC_STAT_RX_ERR_ADDR,      /* RC: source/destination GID not the QP's path */
    RNIC_STAT_RX_ERR_OPCODE,    /* opcode unsupported or not of the QP's transport */
    /*
     * The WQE translation cache (docs/spec.md "WQE translation cache"):
     * SGE lists of posted WQEs served from it, translated afresh (no
     * entry, or a stale one), and of those the stale ones (made under a
     * registration or QP attributes that changed since).
     */
    RNIC_STAT_WQC_HITS,
    RNIC_STAT_WQC_MISSES,
    RNIC_STAT_WQC_STALE,
    /*
     * ABI 1.4: the transport's counters under the names rxe and mlx5 give
     * the same meaning (rdma statistic, docs/spec.md "Statistics").
     */
    RNIC_STAT_SENT_PKTS,        /* transport packets sent (wire and loopback) */
    RNIC_STAT_RCVD_PKTS,        /* transport packets delivered to a QP */
    RNIC_STAT_OUT_OF_SEQUENCE,  /* responder: a request PSN beyond the expected */
    RNIC_STAT_DUPLICATE_REQUEST, /* responder: a request PSN already taken */
    RNIC_STAT_OUT_OF_BUFFER,    /* responder: no receive WQE (RNR NAK, UC/UD drop) */
    RNIC_STAT_PACKET_SEQ_ERR,   /* requester: PSN sequence error NAKs received */
    RNIC_STAT_RNR_NAK,          /* requester: RNR NAKs received */
    RNIC_STAT_LOCAL_ACK_TIMEOUT, /* requester: ACK timer expiries */
    RNIC_STAT_IMPLIED_NAK_SEQ,  /* requester: an ACK past a missing READ/atomic response */
    /*
     * ABI 1.6: registration work (what a storage protocol's I/O costs in
     * registrations): REG_MR work requests executed (page lists and mapped
     * STags), of those and REG_MR commands the mapped STags registered,
     * and invalidations (LOCAL_INV and SEND with invalidate) executed.
     */
    RNIC_STAT_FAST_REGS,
    RNIC_STAT_MAPPED_REGS,
    RNIC_STAT_INVALIDATES,
    RNIC_STAT_COUNT
};

/*
 * ABI 1.5 (RNIC_CAP_QP_STATS): the transport counters, SENT_PKTS ..
 * IMPLIED_NAK_SEQ, are also counted per QP, over its life;
 * RNIC_CMD_QUERY_QP_STATS writes them as RNIC_QP_STAT_COUNT u64 in that
 * order.
 */
#define RNIC_QP_STAT_FIRST      RNIC_STAT_SENT_PKTS
#define RNIC_QP_STAT_COUNT      (RNIC_STAT_IMPLIED_NAK_SEQ - RNIC_STAT_SENT_PKTS + 1)

enum rnic_cap {
    RNIC_CAP_RC             = 1u << 0,
    RNIC_CAP_UD             = 1u << 1,
    RNIC_CAP_SRQ            = 1u << 2,
    RNIC_CAP_ATOMIC         = 1u << 3,
    RNIC_CAP_FAST_REG       = 1u << 4,
    RNIC_CAP_INLINE         = 1u << 5,
    RNIC_CAP_NET_CTX        = 1u << 6, /* per-network mapping tables */
    RNIC_CAP_MIGRATION      = 1u << 7, /* device state migrates */
    RNIC_CAP_SEND_INV       = 1u << 8,
    RNIC_CAP_MR_LEVEL2      = 1u << 9, /* two-level page lists */
    RNIC_CAP_ETH            = 1u << 10, /* Ethernet function (RNIC_REG_ETH_*) */
    /*
     * ABI 1.1: ALLOC_PD with pd.net_ctx = RNIC_PD_MULTI_NET makes a PD
     * that is bound to network contexts by its QPs (docs/spec.md 3.4).
     */
    RNIC_CAP_PD_MULTI_NET   = 1u << 11,
    /* ABI 1.1: DEREG_MR destroy.flags RNIC_DEREG_ANY_KEY */
    RNIC_CAP_DEREG_ANY_KEY  = 1u << 12,
    /*
     * ABI 1.2: IBTA 1.5 Memory Placement Extensions. RNIC_WR_FLUSH with
     * placement type global visibility, RNIC_ACCESS_FLUSH_GLOBAL (and
     * RNIC_CAP_FLUSH_PERSISTENT for persistence); RNIC_WR_ATOMIC_WRITE.
     */
    RNIC_CAP_FLUSH_GLOBAL   = 1u << 13,
    RNIC_CAP_ATOMIC_WRITE   = 1u << 14,
    /* FLUSH with placement type persistence: the SCM window persists */
    RNIC_CAP_FLUSH_PERSISTENT = 1u << 15,
    /*
     * ABI 1.2: a device-owned memory window (BAR4, RNIC_REG_SCM_SIZE) that
     * regions of kind RNIC_MR_KIND_SCM map, with storage semantics in the
     * STag key (enum rnic_scm_sem). Persistent when RNIC_CAP_FLUSH_PERSISTENT.
     */
    RNIC_CAP_SCM            = 1u << 16,
    /*
     * ABI 1.3: RNIC_CMD_SCM_PERSIST makes a range of a persistent window
     * durable (what the guest's CPUs stored into BAR4 included).
     */
    RNIC_CAP_SCM_PERSIST    = 1u << 17,
    /* ABI 1.4: unreliable connected QPs (RNIC_QPT_UC) */
    RNIC_CAP_UC             = 1u << 18,
    /*
     * ABI 1.5: memory windows of type 1 and 2B (RNIC_CMD_ALLOC_MW,
     * RNIC_WR_BIND_MW, invalidation by LOCAL_INV and SEND with invalidate)
     */
    RNIC_CAP_MW             = 1u << 19,
    /* ABI 1.5: MODIFY_SRQ with a new ring resizes the SRQ */
    RNIC_CAP_SRQ_RESIZE     = 1u << 20,
    /*
     * ABI 1.5: UD multicast: ATTACH_MCAST / DETACH_MCAST a UD QP to a
     * multicast GID of its network context; RoCEv2 frames to the group
     * (dest QPN 0xffffff) reach every QP attached, sends to it the wire
     * and the QPs of this device attached
     */
    RNIC_CAP_MCAST          = 1u << 21,
    /*
     * ABI 1.5: RNIC_CMD_REREG_MR changes an MR's translation, PD or rights
     * in place: the same STag, valid throughout
     */
    RNIC_CAP_REREG_MR       = 1u << 22,
    /*
     * ABI 1.5: every CQE carries the device clock at its writing
     * (rnic_cqe.timestamp, nanoseconds), which a read of RNIC_DB_CLOCK in
     * any doorbell page returns
     */
    RNIC_CAP_CQE_TIMESTAMP  = 1u << 23,
    /* ABI 1.5: per-QP transport counters (RNIC_CMD_QUERY_QP_STATS) */
    RNIC_CAP_QP_STATS       = 1u << 24,
    /*
     * ABI 1.6: mapped STags (RNIC_MR_KIND_MAPPED) over a set of buffers,
     * registered by REG_MR and by the REG_MR work request (struct
     * rnic_map_seg); at most rnic_device_attr.max_map_segs segments
     */
    RNIC_CAP_MAPPED         = 1u << 25,
};

enum rnic_dev_ctrl {
    RNIC_CTRL_ENABLE        = 1u << 0, /* 1: run; 0 -> disable stops processing */
    RNIC_CTRL_RESET         = 1u << 1, /* write 1: function reset; reads 0 */
    RNIC_CTRL_AQ_IRQ        = 1u << 2, /* admin completions raise vector 0 */
};

enum rnic_dev_status {
    RNIC_STATUS_READY       = 1u << 0, /* enabled and admin queue running */
    RNIC_STATUS_FATAL       = 1u << 1, /* see RNIC_REG_FATAL_CODE; needs RESET */
    RNIC_STATUS_LINK_UP     = 1u << 2,
};

enum rnic_fatal {
    RNIC_FATAL_NONE = 0,
    RNIC_FATAL_AQ_CONFIG,   /* enable with a bad admin queue configuration */
    RNIC_FATAL_AQ_DMA,      /* admin ring not readable/writable */
    RNIC_FATAL_AQ_OVERRUN,  /* tail beyond the ring size */
};

/* Admin queue ring sizes (log2 of entries). */
#define RNIC_AQ_SIZE_LOG2_MIN   2
#define RNIC_AQ_SIZE_LOG2_MAX   12

/*
 * BAR2 doorbells: page 0 belongs to the kernel driver, page N (N >= 1) to
 * the user context N. A page may only ring queues owned by its context.
 * Each doorbell is one 64-bit store:
 *   bits  0..23  queue handle (QP handle for SQ/RQ, SRQ, CQ or EQ handle)
 *   bits 24..31  flags (CQ/EQ arm, below)
 *   bits 32..63  free-running index (producer for SQ/RQ/SRQ, consumer
 *                for CQ/EQ); the slot is index & (entries - 1)
 * Doorbells must be single 8-byte stores (writeq); other sizes are refused.
 */
/*
 * Doorbell semantics (details in docs/spec.md):
 *  SQ/RQ/SRQ: index is the new producer; (index - device consumer) must not
 *    exceed the ring entries and the producer may not move backwards.
 *  CQ: index is the driver's consumer; ARM_NEXT asks for a completion event
 *    on the next CQE, ARM_SOLICITED on the next solicited or error CQE. If
 *    CQEs beyond 'index' already exist when the arm is processed, the event
 *    fires at once (no lost wake-ups).
 *  EQ: index is the consumer; ARM_NEXT re-enables the EQ's interrupt, which
 *    fires at once if EQEs beyond 'index' exist. An EQ is armed at creation
 *    and disarmed by each interrupt it raises.
 */
enum rnic_db_offset {
    RNIC_DB_SQ  = 0x00,
    RNIC_DB_RQ  = 0x08,
    RNIC_DB_SRQ = 0x10,
    RNIC_DB_CQ  = 0x18,
    RNIC_DB_EQ  = 0x20, /* page 0 only */
    /*
     * ABI 1.5 (RNIC_CAP_CQE_TIMESTAMP): an 8-byte load here, in any page,
     * returns the device clock in nanoseconds (the CQE timestamps' clock:
     * it runs while the VM runs and migrates with it); the one readable
     * doorbell offset
     */
    RNIC_DB_CLOCK = 0x40,
};
#define RNIC_DB_HANDLE_MASK     0x00ffffffu
#define RNIC_DB_ARM_NEXT        (1u << 24) /* CQ/EQ: notify on next entry */
#define RNIC_DB_ARM_SOLICITED   (1u << 25) /* CQ: notify on solicited/error */

static inline uint64_t rnic_db_value(uint32_t handle, uint32_t flags, uint32_t index)
{
    return ((uint64_t)index << 32) | (handle & RNIC_DB_HANDLE_MASK) | flags;
}

/* ---------------------------------------------------------------------- */
/* Admin queue                                                            */
/* ---------------------------------------------------------------------- */

enum rnic_admin_opcode {
    RNIC_CMD_NOP = 0,
    RNIC_CMD_QUERY_DEVICE,      /* writes struct rnic_device_attr */
    RNIC_CMD_QUERY_PORT,        /* writes struct rnic_port_attr */
    RNIC_CMD_CREATE_NET_CTX,
    RNIC_CMD_DESTROY_NET_CTX,
    RNIC_CMD_ALLOC_UCTX,
    RNIC_CMD_FREE_UCTX,
    RNIC_CMD_ADD_GID,
    RNIC_CMD_DEL_GID,
    RNIC_CMD_ALLOC_PD,
    RNIC_CMD_DEALLOC_PD,
    RNIC_CMD_CREATE_EQ,
    RNIC_CMD_DESTROY_EQ,
    RNIC_CMD_CREATE_CQ,
    RNIC_CMD_RESIZE_CQ,
    RNIC_CMD_DESTROY_CQ,
    RNIC_CMD_CREATE_SRQ,
    RNIC_CMD_MODIFY_SRQ,
    RNIC_CMD_DESTROY_SRQ,
    RNIC_CMD_CREATE_QP,
    RNIC_CMD_MODIFY_QP,
    RNIC_CMD_QUERY_QP,          /* writes struct rnic_qp_attr */
    RNIC_CMD_DESTROY_QP,
    RNIC_CMD_REG_MR,
    RNIC_CMD_ALLOC_MR,          /* fast-register MR, invalid until REG_MR WR */
    RNIC_CMD_DEREG_MR,
    RNIC_CMD_SCM_PERSIST,       /* ABI 1.3, RNIC_CAP_SCM_PERSIST */
    RNIC_CMD_ALLOC_MW,          /* ABI 1.5, RNIC_CAP_MW; DEREG_MR frees it */
    RNIC_CMD_ATTACH_MCAST,      /* ABI 1.5, RNIC_CAP_MCAST */
    RNIC_CMD_DETACH_MCAST,
    RNIC_CMD_REREG_MR,          /* ABI 1.5, RNIC_CAP_REREG_MR */
    RNIC_CMD_QUERY_QP_STATS,    /* ABI 1.5, RNIC_CAP_QP_STATS: u64 counters */
    RNIC_CMD_OPCODE_COUNT
};

/* Admin completion status: precise, documented in docs/spec.md. */
enum rnic_admin_status {
    RNIC_ST_OK = 0,
    RNIC_ST_BAD_OPCODE,         /* unknown admin opcode */
    RNIC_ST_BAD_PARAM,          /* a field is out of range or inconsistent */
    RNIC_ST_NO_RESOURCES,       /* table full / limit reached */
    RNIC_ST_BAD_HANDLE,         /* handle does not name a live object */
    RNIC_ST_BUSY,               /* object still referenced */
    RNIC_ST_BAD_STATE,          /* illegal QP state transition or attribute */
    RNIC_ST_DMA_ERROR,          /* a guest address could not be accessed */
    RNIC_ST_PERMISSION,         /* object belongs to another context */
    RNIC_ST_NOT_SUPPORTED,      /* valid request the device does not do */
    RNIC_ST_EXISTS,             /* e.g. network identifier already used */
};

/* CREATE_EQ flags. */
enum rnic_eq_flags {
    RNIC_EQ_ASYNC = 1u << 0,    /* this EQ receives the asynchronous events
                                 * (QP/CQ/SRQ errors, port); at most one */
};

/*
 * Ring sizes (log2 of entries) accepted by CREATE_EQ/CQ/SRQ/QP; the
 * device's max_cqe / max_qp_wr bound them further.
 */
#define RNIC_EQ_LOG_MIN         2
#define RNIC_EQ_LOG_MAX         16
#define RNIC_CQ_LOG_MIN         1
#define RNIC_WQ_LOG_MIN         0
#define RNIC_SQ_WQE_SHIFT_MIN   6
#define RNIC_RQ_WQE_SHIFT_MIN   4
#define RNIC_WQE_SHIFT_MAX      11

/* Handle meaning "none" (no SRQ, kernel user context, ...). */
#define RNIC_HANDLE_NONE        0xffffffffu
#define RNIC_UCTX_KERNEL        0u

/*
 * ALLOC_PD / DEREG_MR network context of a multi-network PD (ABI 1.1,
 * RNIC_CAP_PD_MULTI_NET). Such a PD has no network context of its own: an RC
 * QP of it binds it to the context of the GID its AV names (MODIFY_QP
 * sgid_index), and its MRs are then replicated (same index, key, pages) into
 * that context's mapping table for as long as a QP of the PD is bound there.
 * Its QPNs are unique device-wide; its UD/GSI QPs serve every context.
 */
#define RNIC_PD_MULTI_NET       RNIC_HANDLE_NONE

/*
 * DEREG_MR flags (ABI 1.1, RNIC_CAP_DEREG_ANY_KEY). ANY_KEY: the STag's key
 * byte is not compared, for fast-register MRs only: the consumer may hold a
 * key whose REG_MR work request never executed (flushed).
 */
enum rnic_dereg_flags {
    RNIC_DEREG_ANY_KEY      = 1u << 0,
};

/*
 * REREG_MR (ABI 1.5, RNIC_CAP_REREG_MR): what changes (the verbs'
 * IB_MR_REREG_* bits); what is not named keeps its value.
 */
enum rnic_rereg_flags {
    RNIC_REREG_TRANS        = 1u << 0, /* iova, length and the page list */
    RNIC_REREG_PD           = 1u << 1, /* the PD (of the same owner) */
    RNIC_REREG_ACCESS       = 1u << 2, /* the rights */
};

/* Network identifier types. */
enum rnic_net_type {
    RNIC_NET_VLAN = 0,          /* 802.1Q VLAN ID, 0 = untagged */
    RNIC_NET_VNI = 1,           /* 24-bit VXLAN network identifier (reserved) */
};

enum rnic_qp_type {
    RNIC_QPT_RC = 0,
    RNIC_QPT_UD = 1,
    RNIC_QPT_GSI = 2,           /* QP1 of a network context */
    RNIC_QPT_UC = 3,            /* ABI 1.4, RNIC_CAP_UC */
    RNIC_QPT_COUNT
};

enum rnic_qp_state {
    RNIC_QPS_RESET = 0,
    RNIC_QPS_INIT,
    RNIC_QPS_RTR,
    RNIC_QPS_RTS,
    RNIC_QPS_SQD,
    RNIC_QPS_SQE,
    RNIC_QPS_ERR,
};

/* MODIFY_QP attribute mask: the bit positions of IB_QP_* / IBV_QP_*. */
enum rnic_qp_attr_mask {
    RNIC_QP_STATE              = 1u << 0,
    RNIC_QP_CUR_STATE          = 1u << 1,
    RNIC_QP_EN_SQD_ASYNC_NOTIFY = 1u << 2,
    RNIC_QP_ACCESS_FLAGS       = 1u << 3,
    RNIC_QP_PKEY_INDEX         = 1u << 4,
    RNIC_QP_PORT               = 1u << 5,
    RNIC_QP_QKEY               = 1u << 6,
    RNIC_QP_AV                 = 1u << 7,
    RNIC_QP_PATH_MTU           = 1u << 8,
    RNIC_QP_TIMEOUT            = 1u << 9,
    RNIC_QP_RETRY_CNT          = 1u << 10,
    RNIC_QP_RNR_RETRY          = 1u << 11,
    RNIC_QP_RQ_PSN             = 1u << 12,
    RNIC_QP_MAX_QP_RD_ATOMIC   = 1u << 13,
    RNIC_QP_ALT_PATH           = 1u << 14, /* not supported */
    RNIC_QP_MIN_RNR_TIMER      = 1u << 15,
    RNIC_QP_SQ_PSN             = 1u << 16,
    RNIC_QP_MAX_DEST_RD_ATOMIC = 1u << 17,
    RNIC_QP_PATH_MIG_STATE     = 1u << 18, /* not supported */
    RNIC_QP_CAP                = 1u << 19, /* not supported */
    RNIC_QP_DEST_QPN           = 1u << 20,
};

/* Memory access rights: the bit positions of IB_ACCESS_* / IBV_ACCESS_*. */
enum rnic_access {
    RNIC_ACCESS_LOCAL_WRITE    = 1u << 0,
    RNIC_ACCESS_REMOTE_WRITE   = 1u << 1,
    RNIC_ACCESS_REMOTE_READ    = 1u << 2,
    RNIC_ACCESS_REMOTE_ATOMIC  = 1u << 3,
    RNIC_ACCESS_MW_BIND        = 1u << 4,
    /* ABI 1.2: the FLUSH placement types a region accepts (IBTA 1.5) */
    RNIC_ACCESS_FLUSH_GLOBAL     = 1u << 8,
    RNIC_ACCESS_FLUSH_PERSISTENT = 1u << 9,
};
#define RNIC_ACCESS_FLUSH (RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT)
#define RNIC_ACCESS_ALL (0x1fu | RNIC_ACCESS_FLUSH)

/*
 * FLUSH (RNIC_WR_FLUSH, the wire's FETH): placement types, a bit set, and
 * selectivity, the numbering of ibv_wr_flush() and IBTA 1.5.
 */
enum rnic_flush_type {
    RNIC_FLUSH_GLOBAL     = 1u << 0,  /* global visibility */
    RNIC_FLUSH_PERSISTENT = 1u << 1,  /* persistence */
};

enum rnic_flush_level {
    RNIC_FLUSH_RANGE = 0,       /* [remote_addr, remote_addr + length) */
    RNIC_FLUSH_MR = 1,          /* the whole region the rkey names */
};

/*
 * Kind of a mapping-table entry: guest memory through a page list (MEM),
 * a range of the device's memory window (SCM, ABI 1.2, RNIC_CAP_SCM), a
 * mapped STag over a set of buffers (MAPPED, ABI 1.6, RNIC_CAP_MAPPED) or a
 * memory window (MW).
 */
enum rnic_mr_kind {
    RNIC_MR_KIND_MEM = 0,
    RNIC_MR_KIND_SCM = 1,
    RNIC_MR_KIND_MAPPED = 2,
    RNIC_MR_KIND_MW = 3,        /* ABI 1.5: a memory window (ALLOC_MW) */
};

/*
 * Mapped STags (ABI 1.6, RNIC_CAP_MAPPED; patent US 8,909,727): an entry
 * of kind RNIC_MR_KIND_MAPPED maps its bytes [iova, iova + length) onto a
 * table of segments, each a range of a member region, in order:
 *   list form (repeat 1): segment 0's bytes, then segment 1's, ...;
 *   interleaved form (repeat n > 1, as mlx5dv_wr_mr_interleaved): n
 *   repetitions of the list, repetition r taking segment i's bytes from
 *   addr + r * (length + skip) of its member.
 * length must be repeat * (sum of the segments' lengths). A member is a
 * region of kind MEM of the same PD and owner (no mapped STag, no window,
 * no SCM region); it is resolved by its STag on every access, with its
 * current key, state, PD, bounds and rights (LOCAL_WRITE for whatever
 * writes through the mapped STag), so an access through a member that was
 * deregistered or invalidated since fails cleanly (a protection error).
 * The mapped STag's own rights say what it may be used for (remote read,
 * write, atomic; local write); one packet may cross segments.
 *
 * Registered by REG_MR (mr.kind MAPPED, pbl_addr: the table, npages: the
 * segment count, mr.repeat; page_shift and levels 0) or, once allocated by
 * ALLOC_MR (kind MAPPED, npages: the most segments), by the REG_MR work
 * request: reg.stag, iova, length, access as for pages; reg.npages the
 * segment count, reg.pbl_addr and page_shift 0, imm_or_inv the repeat
 * count (0 or 1: list form); the table inline after the header
 * (RNIC_WQE_INLINE, inline_len = npages * 24, within the WQE stride and
 * RNIC_MAP_INLINE_SEGS) or in registered memory named by the WQE's one
 * SGE (its length npages * 24). User QPs may post it (the table names
 * STags, never guest-physical addresses); it is invalidated by LOCAL_INV
 * and SEND with invalidate. Segments may not overlap one another in a
 * member. Every registration should use a fresh key (the drivers choose
 * a random one).
 */
struct rnic_map_seg {
    uint64_t addr;              /* the member's byte where it starts */
    uint32_t length;            /* bytes, > 0 */
    uint32_t lkey;              /* the member's STag */
    uint32_t skip;              /* interleaved: member bytes between repetitions */
    uint32_t rsvd;              /* 0 */
};

#define RNIC_MAP_INLINE_SEGS    40  /* 960 bytes of inline table */

/*
 * Memory windows (ABI 1.5, RNIC_CAP_MW): an entry of the mapping table
 * that grants remote access to a range of an MR with the MR's
 * RNIC_ACCESS_MW_BIND right, through the window's own rkey and rights.
 * Type 1 is bound and rebound by RNIC_WR_BIND_MW on any QP of its PD and
 * cannot be invalidated (a zero-length bind unbinds it); type 2B is bound
 * by RNIC_WR_BIND_MW when free, is then usable only through the QP that
 * bound it, and is freed by LOCAL_INV or SEND with invalidate.
 */
enum rnic_mw_type {
    RNIC_MW_TYPE_1 = 1,
    RNIC_MW_TYPE_2 = 2,         /* type 2B */
};

/*
 * Storage semantics in the STag key (patent US 10,019,409): the key byte
 * of an RNIC_MR_KIND_SCM region's STag is sem[7:5] | tag[4:0]. The tag is
 * the registration's; the semantic is the request's, chosen by whoever
 * sends it (any standard requester: it is part of the rkey it was given).
 * REG_MR says in mr.sems (bit n = semantic n) which the region allows; a
 * request with another is a remote access error. docs/spec.md "Storage
 * semantics" says what each one does.
 */
#define RNIC_SCM_KEY_SEM_SHIFT  5
#define RNIC_SCM_KEY_TAG_MASK   0x1f
enum rnic_scm_sem {
    RNIC_SCM_SEM_PLAIN = 0,     /* ordinary RDMA on the window */
    RNIC_SCM_SEM_DURABLE = 1,   /* persisted before acknowledged */
    RNIC_SCM_SEM_VISIBLE = 2,   /* globally visible before acknowledged */
    RNIC_SCM_SEM_ATOMIC8 = 3,   /* 8-byte aligned 8-byte writes, atomic */
    RNIC_SCM_SEM_READONLY = 4,  /* a read-only view */
    RNIC_SCM_SEM_MGMT = 5,      /* writes are struct rnic_scm_mgmt */
    RNIC_SCM_SEM_COUNT
};

/* The rkey with semantic 'sem' of an SCM region's STag. */
#define RNIC_SCM_STAG(stag, sem) \
    (((stag) & ~(0x7u << RNIC_SCM_KEY_SEM_SHIFT)) | \
     ((uint32_t)(sem) << RNIC_SCM_KEY_SEM_SHIFT))

/*
 * A management request: an RDMA WRITE of this through the MGMT rkey of a
 * region, at offset 0 of the region, runs 'op' on [offset, offset +
 * length) of the same region (offsets from the region's first byte) and
 * completes before the WRITE is acknowledged. An RDMA READ of struct
 * rnic_scm_status through the MGMT rkey reports the last one.
 */
enum rnic_scm_mgmt_op {
    RNIC_SCM_MGMT_PERSIST = 1,  /* make the range durable */
    RNIC_SCM_MGMT_ZERO = 2,     /* zero the range and make it durable */
    RNIC_SCM_MGMT_STATUS = 3,   /* only refresh the status */
};

struct rnic_scm_mgmt {
    uint32_t op;                /* enum rnic_scm_mgmt_op */
    uint32_t rsvd;
    uint64_t offset;
    uint64_t length;
    uint64_t cookie;            /* echoed in the status */
};

enum rnic_scm_mgmt_status {
    RNIC_SCM_ST_OK = 0,
    RNIC_SCM_ST_BAD_OP = 1,     /* unknown op or reserved bits */
    RNIC_SCM_ST_RANGE = 2,      /* range outside the region */
    RNIC_SCM_ST_NOT_PERSISTENT = 3, /* the window does not persist */
    RNIC_SCM_ST_IO = 4,         /* the host could not persist */
};

struct rnic_scm_status {
    uint64_t cookie;            /* of the last request */
    uint32_t op;                /* of the last request, 0: none yet */
    uint32_t status;            /* enum rnic_scm_mgmt_status */
    uint64_t region_length;
    uint64_t persists;          /* persist operations the device ran */
    uint64_t persisted_bytes;
    uint32_t persistent;        /* 1: the window persists */
    uint32_t rsvd[3];
};

/*
 * Page lists (REG_MR, fast-register WR): 'levels' says how pbl_addr is read.
 *   0  the region is DMA-contiguous: pbl_addr is the address of page 0
 *   1  pbl_addr points to npages u64 page addresses (8-byte aligned)
 *   2  pbl_addr points to u64 addresses of 4 KiB leaf pages, each holding
 *      512 u64 page addresses
 * Every page address is aligned to 1 << page_shift. The region's byte 0 is
 * at offset (iova & (page_size - 1)) in page 0, as with ib_umem.
 */
#define RNIC_PAGE_SHIFT_MIN     12
#define RNIC_PAGE_SHIFT_MAX     30
#define RNIC_PBL_LEAF_ENTRIES   512

/* STag = 24-bit mapping-table index << 8 | 8-bit consumer key. */
#define RNIC_STAG_INDEX(stag)   ((stag) >> 8)
#define RNIC_STAG_KEY(stag)     ((stag) & 0xffu)
#define RNIC_STAG(index, key)   (((uint32_t)(index) << 8) | ((key) & 0xffu))

/* One admin command: 64 bytes, in the command ring. */
struct rnic_admin_cmd {
    uint8_t  opcode;            /* enum rnic_admin_opcode */
    uint8_t  rsvd0;
    uint16_t cmd_id;            /* echoed in the completion */
    uint32_t uctx;              /* issuing user context, 0 = kernel */
    union {
        uint8_t raw[56];
        struct {                /* QUERY_DEVICE, QUERY_PORT, QUERY_QP(_STATS) */
            uint64_t addr;      /* result buffer */
            uint32_t len;       /* its size */
            uint32_t handle;    /* QUERY_QP: QP handle; QUERY_PORT: port (1) */
        } query;
        struct {                /* CREATE_NET_CTX */
            uint32_t net_id;    /* VLAN ID or VNI */
            uint8_t  net_type;  /* enum rnic_net_type */
            uint8_t  rsvd[3];
        } net_ctx;
        struct {                /* ADD_GID / DEL_GID */
            uint8_t  gid[16];
            uint32_t index;
            uint32_t net_ctx;   /* the VLAN/network this GID lives in */
            uint8_t  gid_type;  /* 0: RoCEv2 */
            uint8_t  rsvd[3];
        } gid;
        struct {                /* ALLOC_PD */
            uint32_t net_ctx;   /* the mapping table/QPN space of this PD,
                                 * or RNIC_PD_MULTI_NET (ABI 1.1) */
        } pd;
        struct {                /* CREATE_EQ */
            uint64_t ring_addr; /* contiguous, 4 KiB aligned */
            uint8_t  log_size;  /* entries, log2 */
            uint8_t  flags;     /* enum rnic_eq_flags */
            uint8_t  rsvd[2];
            uint32_t vector;    /* MSI-X vector */
        } eq;
        struct {                /* CREATE_CQ, RESIZE_CQ */
            uint64_t ring_addr; /* contiguous, 4 KiB aligned */
            uint8_t  log_size;
            uint8_t  rsvd[3];
            uint32_t eq;        /* EQ receiving this CQ's notifications */
            uint32_t cq;        /* RESIZE_CQ: the CQ */
        } cq;
        struct {                /* CREATE_SRQ, MODIFY_SRQ */
            uint64_t ring_addr; /* MODIFY_SRQ: 0, or the new ring (resize) */
            uint8_t  log_size;
            uint8_t  wqe_shift; /* log2 of the RQ WQE stride */
            uint8_t  rsvd[2];
            uint32_t pd;
            uint32_t srq;       /* MODIFY_SRQ */
            uint32_t limit;     /* SRQ limit event threshold, 0 = off */
        } srq;
        struct {                /* CREATE_QP */
            uint64_t sq_addr;   /* contiguous, 4 KiB aligned */
            uint64_t rq_addr;   /* 0 when srq is used */
            uint32_t pd;
            uint32_t send_cq;
            uint32_t recv_cq;
            uint32_t srq;       /* RNIC_HANDLE_NONE: own RQ */
            uint8_t  qp_type;   /* enum rnic_qp_type */
            uint8_t  sq_log_size;
            uint8_t  rq_log_size;
            uint8_t  sq_wqe_shift; /* log2 stride, 6..11 */
            uint8_t  rq_wqe_shift; /* log2 stride, 4..11 */
            uint8_t  sq_sig_all;
            uint8_t  rsvd[6];
        } qp;
        struct {                /* MODIFY_QP */
            uint64_t attr_addr; /* struct rnic_qp_attr */
            uint32_t qp;
            uint32_t attr_mask; /* enum rnic_qp_attr_mask */
        } modify_qp;
        struct {                /* REG_MR, ALLOC_MR, REREG_MR */
            uint64_t iova;
            uint64_t length;
            uint64_t pbl_addr;
            uint32_t pd;
            uint32_t npages;    /* ALLOC_MR: max pages of later fast-regs */
            uint32_t access;    /* enum rnic_access */
            uint8_t  page_shift;
            uint8_t  levels;    /* page-list levels, 0..2 */
            uint8_t  key;       /* requested consumer key */
            uint8_t  kind;      /* enum rnic_mr_kind */
            /*
             * SCM (ABI 1.2): enum rnic_scm_sem bits the region allows; the
             * region is [pbl_addr, pbl_addr + length) of the window, seen
             * at iova; npages, page_shift and levels are 0. MEM: 0.
             * MAPPED (ABI 1.6): the repeat count (0 or 1: list form).
             */
            union {
                uint32_t sems;
                uint32_t repeat;
            };
            /*
             * REREG_MR (ABI 1.5): the STag re-registered and the network
             * context of its table (as DEREG_MR's); the fields 'rereg'
             * names hold the new values, the others are ignored. 0 for
             * REG_MR and ALLOC_MR.
             */
            uint32_t stag;
            uint32_t net_ctx;
            uint8_t  rereg;     /* enum rnic_rereg_flags */
            uint8_t  rsvd[3];
        } mr;
        struct {                /* ATTACH_MCAST, DETACH_MCAST */
            uint8_t  gid[16];   /* the group: a multicast GID */
            uint32_t qp;        /* a UD QP */
        } mcast;
        struct {                /* ALLOC_MW */
            uint32_t pd;
            uint8_t  type;      /* enum rnic_mw_type */
            uint8_t  key;       /* its first consumer key */
            uint8_t  rsvd[2];
        } mw;
        struct {                /* SCM_PERSIST (kernel only) */
            uint64_t offset;    /* bytes into the window */
            uint64_t length;    /* 0: nothing */
        } scm;
        struct {                /* DESTROY_*, DEALLOC_PD, FREE_UCTX, DEREG_MR */
            uint32_t handle;    /* DEREG_MR: STag */
            uint32_t net_ctx;   /* DEREG_MR: network context of the STag
                                 * (RNIC_PD_MULTI_NET for an MR of a
                                 * multi-network PD) */
            uint32_t flags;     /* DEREG_MR: enum rnic_dereg_flags (ABI 1.1),
                                 * 0 for the other commands */
        } destroy;
    };
};

/* One admin completion: 16 bytes, in the completion ring. */
struct rnic_admin_cqe {
    uint16_t cmd_id;
    uint8_t  status;            /* enum rnic_admin_status */
    uint8_t  phase;             /* bit 0: flips on every pass of the ring */
    uint32_t result0;           /* handle / STag / QPN created */
    uint32_t result1;           /* CREATE_QP: QPN; CREATE_*: ring entries */
    uint32_t result2;           /* ALLOC_UCTX: doorbell page */
};

/* QUERY_DEVICE result. */
struct rnic_device_attr {
    uint32_t abi_version;
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_ver;
    uint64_t caps;              /* enum rnic_cap */
    uint64_t node_guid;
    uint64_t max_mr_size;
    uint64_t page_size_cap;     /* bit n set: pages of 1 << n bytes */
    uint32_t max_net_ctx;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_eq;
    uint32_t max_inline;
    uint32_t max_qp_rd_atom;
    uint32_t max_fast_reg_pages;
    uint32_t max_gid;
    uint32_t max_uctx;
    uint32_t max_mw;            /* ABI 1.5: windows, within max_mr */
    uint32_t max_mcast_grp;     /* ABI 1.5: multicast groups */
    uint32_t max_mcast_qp_attach; /* QPs per group */
    uint32_t max_map_segs;      /* ABI 1.6: segments of a mapped STag */
};

/* QUERY_PORT result. */
struct rnic_port_attr {
    uint32_t state;             /* 1 down, 4 active (IB port states) */
    uint32_t max_mtu;           /* IB MTU enum: 1=256 .. 5=4096 */
    uint32_t active_mtu;
    uint32_t gid_tbl_len;
    uint32_t max_msg_sz;
    uint32_t link_speed_mbps;
    uint8_t  mac[6];
    uint8_t  rsvd[2];
    uint32_t rsvd2[2];
};

/* IB path MTU enumeration (as IB_MTU_* / IBV_MTU_*). */
enum rnic_mtu {
    RNIC_MTU_256 = 1, RNIC_MTU_512, RNIC_MTU_1024, RNIC_MTU_2048, RNIC_MTU_4096,
};

/* Address vector: where a QP (RC) or a UD send goes. */
struct rnic_av {
    uint8_t  dgid[16];
    uint8_t  dmac[6];
    uint8_t  sgid_index;
    uint8_t  hop_limit;
    uint32_t flow_label;
    uint8_t  traffic_class;
    uint8_t  network_type;      /* 0 RoCEv2/IPv4-mapped or IPv6 by dgid */
    uint16_t rsvd;
};

/* MODIFY_QP input and QUERY_QP output. */
struct rnic_qp_attr {
    uint8_t  qp_state;
    uint8_t  cur_qp_state;
    uint8_t  path_mtu;          /* enum rnic_mtu */
    uint8_t  timeout;           /* IB local ACK timeout exponent */
    uint8_t  retry_cnt;
    uint8_t  rnr_retry;
    uint8_t  min_rnr_timer;
    uint8_t  max_rd_atomic;
    uint8_t  max_dest_rd_atomic;
    uint8_t  port_num;
    uint16_t pkey_index;
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qp_num;
    uint32_t qp_access_flags;
    uint32_t qp_num;            /* QUERY_QP: this QP's number */
    struct rnic_av av;
    uint32_t rsvd[3];
};

/* ---------------------------------------------------------------------- */
/* Work queues                                                            */
/* ---------------------------------------------------------------------- */

enum rnic_wr_opcode {
    RNIC_WR_SEND = 0,
    RNIC_WR_SEND_IMM,
    RNIC_WR_SEND_INV,
    RNIC_WR_RDMA_WRITE,
    RNIC_WR_RDMA_WRITE_IMM,
    RNIC_WR_RDMA_READ,
    RNIC_WR_ATOMIC_CMP_SWP,
    RNIC_WR_ATOMIC_FETCH_ADD,
    RNIC_WR_LOCAL_INV,
    RNIC_WR_REG_MR,
    RNIC_WR_FLUSH,              /* ABI 1.2, RNIC_CAP_FLUSH_GLOBAL */
    RNIC_WR_ATOMIC_WRITE,       /* ABI 1.2, RNIC_CAP_ATOMIC_WRITE */
    RNIC_WR_BIND_MW,            /* ABI 1.5, RNIC_CAP_MW; no SGEs */
    RNIC_WR_OPCODE_COUNT
};

enum rnic_wqe_flags {
    RNIC_WQE_SIGNALED   = 1u << 0,
    RNIC_WQE_SOLICITED  = 1u << 1,
    RNIC_WQE_FENCE      = 1u << 2,  /* wait for prior READ/atomic */
    RNIC_WQE_INLINE     = 1u << 3,  /* payload follows the header */
};

struct rnic_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

/*
 * Send queue WQE: a 64-byte header followed, at offset 64, by num_sge
 * struct rnic_sge or by inline_len bytes of inline data. The ring stride is
 * 1 << sq_wqe_shift bytes, fixed at CREATE_QP.
 */
struct rnic_sq_wqe {
    uint64_t wr_id;
    uint8_t  opcode;            /* enum rnic_wr_opcode */
    uint8_t  flags;             /* enum rnic_wqe_flags */
    uint8_t  num_sge;
    uint8_t  rsvd0;
    uint32_t imm_or_inv;        /* immediate (network order) or STag to invalidate */
    union {
        uint8_t raw[40];
        struct {                /* RDMA WRITE/READ */
            uint64_t remote_addr;
            uint32_t rkey;
        } rdma;
        struct {                /* atomics: 8 bytes, 8-byte aligned */
            uint64_t remote_addr;
            uint32_t rkey;
            uint32_t rsvd;
            uint64_t compare_add;
            uint64_t swap;
        } atomic;
        struct {                /* FLUSH: no SGEs */
            uint64_t remote_addr;
            uint32_t rkey;
            uint32_t length;    /* RNIC_FLUSH_RANGE */
            uint8_t  type;      /* enum rnic_flush_type bits */
            uint8_t  level;     /* enum rnic_flush_level */
            uint8_t  rsvd[6];
        } flush;
        struct {                /* ATOMIC WRITE: 8-byte aligned, no SGEs */
            uint64_t remote_addr;
            uint32_t rkey;
            uint32_t rsvd;
            uint8_t  data[8];   /* written as is (memory order) */
        } atomic_write;
        struct {                /* UD / GSI sends */
            uint32_t remote_qpn;
            uint32_t remote_qkey;
            struct rnic_av av;
        } ud;
        struct {                /* REG_MR (fast register) */
            uint64_t iova;
            uint64_t length;
            uint64_t pbl_addr;  /* level-1 page list */
            uint32_t stag;      /* the MR (index) and its new key */
            uint32_t access;
            uint32_t npages;
            uint8_t  page_shift;
            uint8_t  rsvd[3];
        } reg;
        struct {                /* BIND_MW */
            uint64_t addr;      /* the window: [addr, addr + length) of */
            uint64_t length;    /* the MR, 0 (type 1): unbind */
            uint32_t mr_lkey;   /* the MR */
            uint32_t mw_rkey;   /* the window's rkey now */
            uint32_t new_rkey;  /* its rkey once bound: same index */
            uint32_t access;    /* remote rights, enum rnic_access */
        } bind;
    };
    uint32_t inline_len;        /* bytes, with RNIC_WQE_INLINE */
    uint32_t rsvd1;
};

/* Receive queue / SRQ WQE: 16-byte header then num_sge struct rnic_sge. */
struct rnic_rq_wqe {
    uint64_t wr_id;
    uint8_t  num_sge;
    uint8_t  rsvd[7];
};

enum rnic_wc_opcode {
    RNIC_WC_SEND = 0,
    RNIC_WC_RDMA_WRITE,
    RNIC_WC_RDMA_READ,
    RNIC_WC_COMP_SWAP,
    RNIC_WC_FETCH_ADD,
    RNIC_WC_LOCAL_INV,
    RNIC_WC_REG_MR,
    RNIC_WC_FLUSH,              /* ABI 1.2 */
    RNIC_WC_ATOMIC_WRITE,       /* ABI 1.2 */
    RNIC_WC_BIND_MW,            /* ABI 1.5 */
    RNIC_WC_RECV = 0x80,
    RNIC_WC_RECV_RDMA_WITH_IMM,
};

/* Completion status: the numbering of ib_wc_status / ibv_wc_status. */
enum rnic_wc_status {
    RNIC_WC_SUCCESS = 0,
    RNIC_WC_LOC_LEN_ERR = 1,
    RNIC_WC_LOC_QP_OP_ERR = 2,
    RNIC_WC_LOC_PROT_ERR = 4,
    RNIC_WC_WR_FLUSH_ERR = 5,
    RNIC_WC_MW_BIND_ERR = 6,
    RNIC_WC_BAD_RESP_ERR = 7,
    RNIC_WC_LOC_ACCESS_ERR = 8,
    RNIC_WC_REM_INV_REQ_ERR = 9,
    RNIC_WC_REM_ACCESS_ERR = 10,
    RNIC_WC_REM_OP_ERR = 11,
    RNIC_WC_RETRY_EXC_ERR = 12,
    RNIC_WC_RNR_RETRY_EXC_ERR = 13,
    RNIC_WC_FATAL_ERR = 19,
    RNIC_WC_GENERAL_ERR = 21,
};

enum rnic_cqe_flags {
    RNIC_CQE_WITH_IMM   = 1u << 0,
    RNIC_CQE_WITH_INV   = 1u << 1,
    RNIC_CQE_GRH        = 1u << 2,  /* UD: a GRH precedes the payload */
    RNIC_CQE_IPV4       = 1u << 3,  /* UD: the GRH is an IPv4 header */
    RNIC_CQE_VLAN       = 1u << 4,
    RNIC_CQE_SOLICITED  = 1u << 5,  /* the message had the solicited bit */
};

/*
 * Completion queue entry: 64 bytes. The device writes the body, then the
 * 'owner' byte; the consumer owns the entry when
 *   owner & 1 == ((consumer_index >> log_size) & 1) ^ 1
 * i.e. entries of the first pass carry 1, the second 0, and so on.
 */
struct rnic_cqe {
    uint64_t wr_id;
    uint32_t byte_len;
    uint32_t imm_or_inv;        /* immediate (network order) or invalidated STag */
    uint32_t qp_handle;
    uint32_t qp_num;            /* the local QP's wire QPN */
    uint32_t src_qp;            /* UD: sender's QPN */
    uint8_t  opcode;            /* enum rnic_wc_opcode */
    uint8_t  status;            /* enum rnic_wc_status */
    uint8_t  flags;             /* enum rnic_cqe_flags */
    uint8_t  vendor_err;
    uint16_t pkey_index;
    uint16_t vlan_id;
    uint8_t  smac[6];
    uint8_t  rsvd0[6];
    /*
     * ABI 1.5 (RNIC_CAP_CQE_TIMESTAMP): the device clock (RNIC_DB_CLOCK,
     * ns) when the entry was written; 0 before
     */
    uint64_t timestamp;
    uint8_t  rsvd1[7];
    uint8_t  owner;
};

enum rnic_eqe_type {
    RNIC_EQE_COMPLETION = 0,    /* handle: CQ */
    RNIC_EQE_QP_FATAL,          /* handle: QP */
    RNIC_EQE_QP_REQ_ERR,
    RNIC_EQE_QP_ACCESS_ERR,
    RNIC_EQE_COMM_EST,
    RNIC_EQE_SQ_DRAINED,
    RNIC_EQE_LAST_WQE_REACHED,
    RNIC_EQE_SRQ_LIMIT,         /* handle: SRQ */
    RNIC_EQE_CQ_ERR,            /* handle: CQ (overrun) */
    RNIC_EQE_PORT_ACTIVE,       /* handle: port */
    RNIC_EQE_PORT_ERR,
    RNIC_EQE_DEVICE_FATAL,
};

/* Event queue entry: 16 bytes, owner convention as struct rnic_cqe. */
struct rnic_eqe {
    uint8_t  type;              /* enum rnic_eqe_type */
    uint8_t  rsvd0[3];
    uint32_t handle;
    uint32_t data;
    uint8_t  rsvd1[3];
    uint8_t  owner;
};

/* ---------------------------------------------------------------------- */
/* Ethernet function                                                      */
/* ---------------------------------------------------------------------- */

enum rnic_eth_ctrl {
    RNIC_ETH_TX_EN          = 1u << 0, /* 0 -> 1: TX ring starts at head 0 */
    RNIC_ETH_RX_EN          = 1u << 1, /* 0 -> 1: RX ring starts at head 0 */
    RNIC_ETH_PROMISC        = 1u << 2, /* accept every frame */
    RNIC_ETH_ALLMULTI       = 1u << 3, /* accept every multicast frame */
    RNIC_ETH_BROADCAST      = 1u << 4, /* accept ff:ff:ff:ff:ff:ff */
};

enum rnic_eth_status {
    RNIC_ETH_TX_HALTED      = 1u << 0, /* TX ring unreadable: cleared by TX_EN 1 -> 0 */
    RNIC_ETH_RX_HALTED      = 1u << 1, /* RX ring unreadable: cleared by RX_EN 1 -> 0 */
};

#define RNIC_ETH_RING_LOG2_MIN  2       /* ring entries, log2 */
#define RNIC_ETH_RING_LOG2_MAX  15
#define RNIC_ETH_RING_ALIGN     16      /* ring base alignment, bytes */
#define RNIC_ETH_MTU_MIN        68
#define RNIC_ETH_MTU_DEFAULT    1500    /* reset value (max-mtu if smaller) */
#define RNIC_ETH_HLEN           14      /* destination, source, ethertype */
#define RNIC_ETH_OVERHEAD       18      /* + one 802.1Q tag: frame <= MTU + 18 */
#define RNIC_ETH_MIN_FRAME      60      /* shorter TX frames are zero-padded */
#define RNIC_ETH_TX_MAX_FRAGS   32      /* descriptors per TX frame */

/* Descriptor flags (TX, written by the driver). */
enum rnic_eth_tx_flags {
    RNIC_ETH_TX_EOP         = 1u << 0, /* last descriptor of the frame */
};

/* Descriptor status (written back by the device; the driver zeroes it). */
enum rnic_eth_desc_status {
    RNIC_ETH_DESC_DONE      = 1u << 0, /* the device is done with it */
    RNIC_ETH_DESC_ERR       = 1u << 1, /* frame not sent / not (fully) received */
    RNIC_ETH_DESC_TRUNC     = 1u << 2, /* RX: frame longer than buf_len */
};

/*
 * TX descriptor: one fragment of a frame. A frame is one or more
 * consecutive descriptors, the last with RNIC_ETH_TX_EOP; the device sends
 * it when the tail covers its EOP descriptor, then writes 'status' of every
 * descriptor of the frame and advances RNIC_REG_ETH_TX_HEAD.
 */
struct rnic_eth_tx_desc {
    uint64_t addr;              /* fragment address */
    uint16_t len;               /* fragment length, > 0 */
    uint8_t  flags;             /* enum rnic_eth_tx_flags */
    uint8_t  status;            /* enum rnic_eth_desc_status */
    uint32_t rsvd;
};

/* RX descriptor: one buffer receiving one whole frame (no FCS). */
struct rnic_eth_rx_desc {
    uint64_t addr;              /* buffer address */
    uint16_t buf_len;           /* buffer size, should be >= MTU + 18 */
    uint16_t len;               /* written: bytes stored in the buffer */
    uint8_t  status;            /* written: enum rnic_eth_desc_status */
    uint8_t  rsvd0;
    uint16_t rsvd1;
};

/*
 * Multicast hash filter: a frame to multicast address 'mac' passes when bit
 * rnic_eth_mc_hash_index(mac) of ETH_MC_HASH_HI:LO is set. The index is the
 * top 6 bits of the big-endian Ethernet CRC-32 of the address (Linux's
 * ether_crc(6, mac) >> 26, QEMU's net_crc32() >> 26).
 */
static inline unsigned rnic_eth_mc_hash_index(const uint8_t *mac)
{
    uint32_t crc = 0xffffffffu;
    unsigned i, bit;

    for (i = 0; i < 6; i++) {
        uint8_t b = mac[i];

        for (bit = 0; bit < 8; bit++, b >>= 1) {
            uint32_t carry = (crc >> 31) ^ (b & 1u);

            crc <<= 1;
            if (carry) {
                crc ^= 0x04c11db7u;
            }
        }
    }
    return crc >> 26;
}

/* Compile-time size checks: these sizes are the ABI. */
#define RNIC_ABI_ASSERT_SIZE(type, size) \
    _Static_assert(sizeof(type) == (size), #type " size is ABI")
RNIC_ABI_ASSERT_SIZE(struct rnic_admin_cmd, 64);
RNIC_ABI_ASSERT_SIZE(struct rnic_scm_mgmt, 32);
RNIC_ABI_ASSERT_SIZE(struct rnic_scm_status, 56);
RNIC_ABI_ASSERT_SIZE(struct rnic_admin_cqe, 16);
RNIC_ABI_ASSERT_SIZE(struct rnic_device_attr, 128);
RNIC_ABI_ASSERT_SIZE(struct rnic_port_attr, 40);
RNIC_ABI_ASSERT_SIZE(struct rnic_av, 32);
RNIC_ABI_ASSERT_SIZE(struct rnic_qp_attr, 80);
RNIC_ABI_ASSERT_SIZE(struct rnic_sge, 16);
RNIC_ABI_ASSERT_SIZE(struct rnic_map_seg, 24);
RNIC_ABI_ASSERT_SIZE(struct rnic_sq_wqe, 64);
RNIC_ABI_ASSERT_SIZE(struct rnic_rq_wqe, 16);
RNIC_ABI_ASSERT_SIZE(struct rnic_cqe, 64);
RNIC_ABI_ASSERT_SIZE(struct rnic_eqe, 16);
RNIC_ABI_ASSERT_SIZE(struct rnic_eth_tx_desc, 16);
RNIC_ABI_ASSERT_SIZE(struct rnic_eth_rx_desc, 16);

#endif /* RNIC_ABI_H */
