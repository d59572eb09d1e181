/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the Ethernet function.
 *
 * Two descriptor rings in guest memory carry the guest net_device's
 * ordinary frames (docs/spec.md, "Ethernet function"):
 *  - TX: the driver posts fragments (struct rnic_eth_tx_desc) and moves
 *    RNIC_REG_ETH_TX_TAIL; the next engine run sends every complete frame
 *    (up to RNIC_ETH_TX_BUDGET per run), writes DONE [| ERR] into each
 *    descriptor's status and advances the head;
 *  - RX: the driver posts buffers (struct rnic_eth_rx_desc) and moves
 *    RNIC_REG_ETH_RX_TAIL; each accepted frame fills one buffer, the device
 *    writes len and status back and advances the head.
 * Both signal one MSI-X vector, masked one-shot: raising it sets the mask,
 * the driver clears the mask when its poll is done, and the vector fires
 * again at once if more work completed meanwhile (no lost wake-ups).
 *
 * When RX is enabled but no buffer is posted, the host is told "cannot
 * receive" and keeps the frame queued; RnicHostOps.rx_ready tells it when
 * buffers arrive. Frames that are RoCE for this device are claimed by
 * rnic_wire_rx_claim() (rnic-wire.c) before any of this.
 *
 * Every guest address goes through rnic_dma_read/rnic_dma_write: a bad
 * buffer address is an ERR status, an unreadable ring halts that ring
 * (RNIC_ETH_*_HALTED) until the driver disables it; nothing is written
 * beyond a buffer's buf_len.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-eth.h"
#include "rnic-wire.h"

#define RNIC_ETH_CTRL_ALL (RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | \
                           RNIC_ETH_PROMISC | RNIC_ETH_ALLMULTI | \
                           RNIC_ETH_BROADCAST)
#define RNIC_ETH_STATUS_ALL (RNIC_ETH_TX_HALTED | RNIC_ETH_RX_HALTED)

/* Bytes of a received frame copied contiguously for the filter and hook. */
#define RNIC_ETH_RX_HDR 128
/* the hook's peek reads no further (rnic_wire_rx_claim) */
G_STATIC_ASSERT(RNIC_ETH_RX_HDR >= RNIC_ROCE_PEEK_LEN);

/* Offsets of the fields the device writes back. */
#define RNIC_ETH_TX_STATUS_OFF offsetof(struct rnic_eth_tx_desc, status)
#define RNIC_ETH_RX_LEN_OFF    offsetof(struct rnic_eth_rx_desc, len)

/* ---------------------------------------------------------------------- */
/* Hooks for the RDMA side                                                */
/* ---------------------------------------------------------------------- */

void rnic_port_event(RnicEngine *e, bool link_up)
{
    rnic_event(e, LINK, NULL, link_up);
    /* port 1's state change, on the async EQ */
    rnic_async_event(e, link_up ? RNIC_EQE_PORT_ACTIVE : RNIC_EQE_PORT_ERR,
                     1, 0);
}

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static inline uint32_t rnic_eth_entries(const RnicEthRing *ring)
{
    return 1u << ring->log2;
}

static inline uint64_t rnic_eth_slot(const RnicEthRing *ring, uint32_t index)
{
    return ring->base + (uint64_t)(index & (rnic_eth_entries(ring) - 1)) * 16;
}

static bool rnic_eth_ring_ok(const RnicEngine *e, const RnicEthRing *ring)
{
    return ring->log2 >= RNIC_ETH_RING_LOG2_MIN &&
           ring->log2 <= RNIC_ETH_RING_LOG2_MAX &&
           ring->base && !(ring->base & (RNIC_ETH_RING_ALIGN - 1));
}

static bool rnic_eth_rx_active(const RnicEthRegs *regs)
{
    return (regs->ctrl & RNIC_ETH_RX_EN) &&
        !(regs->status & RNIC_ETH_RX_HALTED);
}

/* Raise the vector if work completed and it is not masked. */
static void rnic_eth_irq_check(RnicEngine *e)
{
    RnicEthRegs *regs = &e->eth.r;

    if (regs->irq_pending && !regs->irq_masked) {
        regs->irq_pending = false;
        /* one-shot: the driver unmasks after polling */
        regs->irq_masked = true;
        rnic_stat_inc(e, RNIC_STAT_ETH_IRQS);
        rnic_raise_irq(e, regs->irq_vector);
    }
}

static void rnic_eth_irq_event(RnicEngine *e)
{
    e->eth.r.irq_pending = true;
    rnic_eth_irq_check(e);
}

/* The host was told "cannot receive": tell it when it can again. */
static void rnic_eth_rx_kick(RnicEngine *e)
{
    RnicEth *eth = &e->eth;

    if (eth->rx_blocked && rnic_engine_can_receive(e)) {
        eth->rx_blocked = false;
        if (e->ops->rx_ready) {
            e->ops->rx_ready(e->opaque);
        }
    }
}

static void rnic_eth_halt(RnicEngine *e, uint32_t bit, uint64_t addr)
{
    e->eth.r.status |= bit;
    rnic_event(e, UB_ETH_RING, "ring not accessible: halted until disabled",
               bit == RNIC_ETH_RX_HALTED, addr, 0);
    rnic_eth_irq_event(e);
}

/* ---------------------------------------------------------------------- */
/* Reset, link, run                                                       */
/* ---------------------------------------------------------------------- */

/* DEV_STATUS.LINK_UP follows the host's link state. */
static void rnic_eth_status_link(RnicEngine *e)
{
    if (e->eth.link_down) {
        e->regs.dev_status &= ~RNIC_STATUS_LINK_UP;
    } else {
        e->regs.dev_status |= RNIC_STATUS_LINK_UP;
    }
}

void rnic_eth_reset(RnicEngine *e)
{
    RnicEth *eth = &e->eth;

    memset(&eth->r, 0, sizeof(eth->r));
    eth->r.mtu = MIN(RNIC_ETH_MTU_DEFAULT, e->cfg.max_mtu);
    eth->r.irq_masked = true;
    /* the physical link is not the function's: it survives the reset */
    rnic_eth_status_link(e);
    if (eth->rx_blocked) {
        /*
         * RX is off now: the frames the host queued can go (RoCE's to the
         * RDMA engine, the rest dropped); the next run tells the host.
         * Directly, not rnic_engine_schedule(): the reset forgets that a
         * run was scheduled, and the host may have cancelled it.
         */
        e->ops->schedule(e->opaque);
    }
}

void rnic_engine_set_link(RnicEngine *e, bool up)
{
    RnicEth *eth = &e->eth;
    bool was_up = !eth->link_down;

    rnic_engine_enter(e, RNIC_CALL_LINK);
    eth->link_down = !up;
    rnic_eth_status_link(e);
    if (was_up != up) {
        rnic_port_event(e, up);
        rnic_eth_irq_event(e);
    }
    rnic_engine_leave(e);
}

/* Send the complete frames posted on the TX ring. */
static void rnic_eth_tx_process(RnicEngine *e)
{
    RnicEth *eth = &e->eth;
    RnicEthRegs *regs = &eth->r;
    RnicEthRing *ring = &regs->tx;
    uint32_t max_len = regs->mtu + RNIC_ETH_OVERHEAD;
    unsigned frames = 0;

    if (!(regs->ctrl & RNIC_ETH_TX_EN) || (regs->status & RNIC_ETH_TX_HALTED)) {
        return;
    }
    while (ring->head != ring->tail && frames < RNIC_ETH_TX_BUDGET) {
        uint32_t avail = ring->tail - ring->head;
        uint8_t status = RNIC_ETH_DESC_DONE;
        bool eop = false;
        size_t flen = 0;
        uint32_t n, i;

        for (n = 0; n < avail && n < RNIC_ETH_TX_MAX_FRAGS && !eop; n++) {
            uint64_t slot = rnic_eth_slot(ring, ring->head + n);
            struct rnic_eth_tx_desc d;
            uint64_t addr;
            uint16_t len;

            if (rnic_dma_read(e, slot, &d, sizeof(d))) {
                rnic_eth_halt(e, RNIC_ETH_TX_HALTED, slot);
                return;
            }
            addr = GUINT64_FROM_LE(d.addr);
            len = GUINT16_FROM_LE(d.len);
            eop = d.flags & RNIC_ETH_TX_EOP;
            if (status & RNIC_ETH_DESC_ERR) {
                continue;       /* skip the rest of a bad frame */
            }
            if (len == 0) {
                rnic_event(e, UB_ETH_DESC, "TX descriptor of length 0", 0,
                           ring->head + n, addr, len);
                status |= RNIC_ETH_DESC_ERR;
            } else if (flen + len > max_len) {
                rnic_event(e, UB_ETH_DESC, "TX frame longer than the MTU", 0,
                           ring->head, addr, flen + len);
                status |= RNIC_ETH_DESC_ERR;
            } else if (rnic_dma_read(e, addr, eth->tx_frame + flen, len)) {
                rnic_event(e, UB_ETH_DESC, "TX buffer not accessible", 0,
                           ring->head + n, addr, len);
                status |= RNIC_ETH_DESC_ERR;
            } else {
                flen += len;
            }
        }
        if (!eop) {
            if (n < RNIC_ETH_TX_MAX_FRAGS) {
                break;          /* the rest of the frame is not posted yet */
            }
            rnic_event(e, UB_ETH_DESC, "TX frame without an end of packet "
                       "within the most descriptors a frame may take", 0,
                       ring->head, 0, flen);
            status |= RNIC_ETH_DESC_ERR;
        }
        if (!(status & RNIC_ETH_DESC_ERR) && flen < RNIC_ETH_HLEN) {
            rnic_event(e, UB_ETH_DESC, "TX frame shorter than an Ethernet "
                       "header", 0, ring->head, 0, flen);
            status |= RNIC_ETH_DESC_ERR;
        }
        if (status & RNIC_ETH_DESC_ERR) {
            rnic_stat_inc(e, RNIC_STAT_ETH_TX_ERRORS);
        } else if (eth->link_down) {
            rnic_stat_inc(e, RNIC_STAT_ETH_TX_LINK_DOWN);
        } else {
            struct iovec iov = { .iov_base = eth->tx_frame, .iov_len = flen };

            if (flen < RNIC_ETH_MIN_FRAME) {
                memset(eth->tx_frame + flen, 0, RNIC_ETH_MIN_FRAME - flen);
                iov.iov_len = RNIC_ETH_MIN_FRAME;
            }
            e->ops->transmit(e->opaque, &iov, 1);
            rnic_work_frame(e, iov.iov_len);
            rnic_stat_inc(e, RNIC_STAT_ETH_TX_FRAMES);
            e->stats[RNIC_STAT_ETH_TX_BYTES] += flen;
        }
        for (i = 0; i < n; i++) {
            uint64_t slot = rnic_eth_slot(ring, ring->head + i);

            if (rnic_dma_write(e, slot + RNIC_ETH_TX_STATUS_OFF, &status, 1)) {
                rnic_eth_halt(e, RNIC_ETH_TX_HALTED, slot);
                return;
            }
        }
        ring->head += n;
        frames++;
    }
    if (frames) {
        rnic_eth_irq_event(e);
    }
    if (ring->head != ring->tail && frames == RNIC_ETH_TX_BUDGET) {
        rnic_engine_schedule(e);    /* more next time, the main loop runs */
    }
}

void rnic_eth_run(RnicEngine *e)
{
    rnic_eth_tx_process(e);
    rnic_eth_rx_kick(e);
}

/* ---------------------------------------------------------------------- */
/* Receive                                                                */
/* ---------------------------------------------------------------------- */

bool rnic_engine_can_receive(RnicEngine *e)
{
    RnicEthRegs *regs = &e->eth.r;

    /* RX off: frames are RoCE's or dropped, both right away */
    if (!rnic_eth_rx_active(regs) || regs->rx.head != regs->rx.tail) {
        return true;
    }
    e->eth.rx_blocked = true;
    return false;
}

static bool rnic_eth_rx_accept(RnicEngine *e, const uint8_t *dst)
{
    const RnicEthRegs *regs = &e->eth.r;
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    unsigned bit;

    if (regs->ctrl & RNIC_ETH_PROMISC) {
        return true;
    }
    if (!(dst[0] & 1)) {
        return !memcmp(dst, e->regs.mac, 6);
    }
    if (!memcmp(dst, bcast, 6)) {
        return regs->ctrl & RNIC_ETH_BROADCAST;
    }
    if (regs->ctrl & RNIC_ETH_ALLMULTI) {
        return true;
    }
    bit = rnic_eth_mc_hash_index(dst);
    return (regs->mc_hash >> bit) & 1;
}

/* Copy the frame to guest memory at addr, at most len bytes. */
static int rnic_eth_rx_copy(RnicEngine *e, uint64_t addr, size_t len,
                            const struct iovec *iov, int iovcnt)
{
    size_t done = 0;
    int i;

    for (i = 0; i < iovcnt && done < len; i++) {
        size_t n = MIN(iov[i].iov_len, len - done);

        if (n && rnic_dma_write(e, addr + done, iov[i].iov_base, n)) {
            return -1;
        }
        done += n;
    }
    return 0;
}

static bool rnic_eth_receive(RnicEngine *e, const struct iovec *iov,
                             int iovcnt)
{
    RnicEthRegs *regs = &e->eth.r;
    RnicEthRing *ring = &regs->rx;
    uint8_t hdr[RNIC_ETH_RX_HDR];
    size_t len = 0, hlen = 0;
    struct rnic_eth_rx_desc d;
    uint8_t wb[4];
    uint64_t slot, addr;
    uint16_t buf_len, written = 0;
    uint8_t status = RNIC_ETH_DESC_DONE;
    int i;

    for (i = 0; i < iovcnt; i++) {
        size_t n = MIN(iov[i].iov_len, sizeof(hdr) - hlen);

        memcpy(hdr + hlen, iov[i].iov_base, n);
        hlen += n;
        len += iov[i].iov_len;
    }
    if (e->eth.link_down) {
        /* QEMU's net layer drops these already; other hosts may not */
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_DISABLED);
        return true;
    }
    if (len < RNIC_ETH_HLEN) {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_LENGTH_ERRORS);
        return true;
    }
    if (rnic_wire_rx_claim(e, iov, iovcnt, len, hdr, hlen)) {
        return true;
    }
    if (!rnic_eth_rx_active(regs)) {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_DISABLED);
        return true;
    }
    if (!rnic_eth_rx_accept(e, hdr)) {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_FILTERED);
        return true;
    }
    if (len > regs->mtu + RNIC_ETH_OVERHEAD) {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_LENGTH_ERRORS);
        return true;
    }
    if (ring->head == ring->tail) {
        e->eth.rx_blocked = true;   /* the host keeps it until rx_ready */
        return false;
    }

    slot = rnic_eth_slot(ring, ring->head);
    if (rnic_dma_read(e, slot, &d, sizeof(d))) {
        rnic_eth_halt(e, RNIC_ETH_RX_HALTED, slot);
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_DISABLED);
        return true;
    }
    addr = GUINT64_FROM_LE(d.addr);
    buf_len = GUINT16_FROM_LE(d.buf_len);
    if (buf_len == 0) {
        rnic_event(e, UB_ETH_DESC, "RX descriptor of buffer length 0", 1,
                   ring->head, addr, 0);
        status |= RNIC_ETH_DESC_ERR;
    } else {
        written = MIN(len, buf_len);
        if (written < len) {
            status |= RNIC_ETH_DESC_ERR | RNIC_ETH_DESC_TRUNC;
        }
        if (rnic_eth_rx_copy(e, addr, written, iov, iovcnt)) {
            rnic_event(e, UB_ETH_DESC, "RX buffer not accessible", 1,
                       ring->head, addr, written);
            status |= RNIC_ETH_DESC_ERR;
            written = 0;
        }
    }
    wb[0] = written;
    wb[1] = written >> 8;
    wb[2] = status;
    wb[3] = 0;
    if (rnic_dma_write(e, slot + RNIC_ETH_RX_LEN_OFF, wb, sizeof(wb))) {
        rnic_eth_halt(e, RNIC_ETH_RX_HALTED, slot);
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_DISABLED);
        return true;
    }
    ring->head++;
    if (status & RNIC_ETH_DESC_ERR) {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_DESC_ERRORS);
    } else {
        rnic_stat_inc(e, RNIC_STAT_ETH_RX_FRAMES);
        e->stats[RNIC_STAT_ETH_RX_BYTES] += len;
        if (hdr[0] & 1) {
            rnic_stat_inc(e, RNIC_STAT_ETH_RX_MULTICAST);
        }
    }
    rnic_eth_irq_event(e);
    return true;
}

static uint64_t rnic_iov_bytes(const struct iovec *iov, int iovcnt)
{
    uint64_t n = 0;
    int i;

    for (i = 0; i < iovcnt; i++) {
        n += iov[i].iov_len;
    }
    return n;
}

bool rnic_engine_receive(RnicEngine *e, const struct iovec *iov, int iovcnt)
{
    RnicCallSave outer;
    bool taken, nested = e->depth > 0;

    /*
     * a frame the host delivers from inside another call (rx_ready: QEMU
     * flushes the frames it queued) is a call of its own: counted and
     * bounded alone, then the outer call's counting goes on
     */
    if (nested) {
        rnic_call_push(e, RNIC_CALL_RECEIVE, &outer);
    }
    rnic_engine_enter(e, RNIC_CALL_RECEIVE);
    rnic_work_frame(e, rnic_iov_bytes(iov, iovcnt));
    taken = rnic_eth_receive(e, iov, iovcnt);
    rnic_engine_leave(e);
    if (nested) {
        rnic_call_pop(e, &outer);
    }
    return taken;
}

/* ---------------------------------------------------------------------- */
/* Registers                                                              */
/* ---------------------------------------------------------------------- */

RnicAccessResult rnic_eth_reg_read(RnicEngine *e, uint32_t offset,
                                   uint32_t *value)
{
    const RnicEthRegs *regs = &e->eth.r;

    switch (offset) {
    case RNIC_REG_ETH_CTRL:
        *value = regs->ctrl;
        break;
    case RNIC_REG_ETH_STATUS:
        *value = regs->status;
        break;
    case RNIC_REG_ETH_MTU:
        *value = regs->mtu;
        break;
    case RNIC_REG_ETH_IRQ_VECTOR:
        *value = regs->irq_vector;
        break;
    case RNIC_REG_ETH_IRQ_MASK:
        *value = regs->irq_masked;
        break;
    case RNIC_REG_ETH_MC_HASH_LO:
        *value = (uint32_t)regs->mc_hash;
        break;
    case RNIC_REG_ETH_MC_HASH_HI:
        *value = (uint32_t)(regs->mc_hash >> 32);
        break;
    case RNIC_REG_ETH_TX_BASE_LO:
        *value = (uint32_t)regs->tx.base;
        break;
    case RNIC_REG_ETH_TX_BASE_HI:
        *value = (uint32_t)(regs->tx.base >> 32);
        break;
    case RNIC_REG_ETH_TX_SIZE_LOG2:
        *value = regs->tx.log2;
        break;
    case RNIC_REG_ETH_TX_TAIL:
        *value = regs->tx.tail;
        break;
    case RNIC_REG_ETH_TX_HEAD:
        *value = regs->tx.head;
        break;
    case RNIC_REG_ETH_RX_BASE_LO:
        *value = (uint32_t)regs->rx.base;
        break;
    case RNIC_REG_ETH_RX_BASE_HI:
        *value = (uint32_t)(regs->rx.base >> 32);
        break;
    case RNIC_REG_ETH_RX_SIZE_LOG2:
        *value = regs->rx.log2;
        break;
    case RNIC_REG_ETH_RX_TAIL:
        *value = regs->rx.tail;
        break;
    case RNIC_REG_ETH_RX_HEAD:
        *value = regs->rx.head;
        break;
    default:
        *value = 0;
        return RNIC_ACCESS_UNKNOWN_REG;
    }
    return RNIC_ACCESS_OK;
}

static RnicAccessResult rnic_eth_ctrl_write(RnicEngine *e, uint32_t value)
{
    RnicEthRegs *regs = &e->eth.r;
    uint32_t old = regs->ctrl;
    RnicAccessResult res = RNIC_ACCESS_OK;

    if (value & ~RNIC_ETH_CTRL_ALL) {
        res = RNIC_ACCESS_BAD_VALUE;    /* reserved bits: logged, ignored */
        value &= RNIC_ETH_CTRL_ALL;
    }
    if ((value & ~old & RNIC_ETH_TX_EN) && !rnic_eth_ring_ok(e, &regs->tx)) {
        rnic_event(e, UB_ETH_RING, "enable with a bad ring", 0, regs->tx.base,
                   regs->tx.log2);
        value &= ~RNIC_ETH_TX_EN;
        res = RNIC_ACCESS_BAD_VALUE;
    }
    if ((value & ~old & RNIC_ETH_RX_EN) && !rnic_eth_ring_ok(e, &regs->rx)) {
        rnic_event(e, UB_ETH_RING, "enable with a bad ring", 1, regs->rx.base,
                   regs->rx.log2);
        value &= ~RNIC_ETH_RX_EN;
        res = RNIC_ACCESS_BAD_VALUE;
    }
    if ((value ^ old) & RNIC_ETH_TX_EN) {
        /* both edges: the ring starts over, a halt is cleared */
        regs->tx.head = regs->tx.tail = 0;
        regs->status &= ~RNIC_ETH_TX_HALTED;
    }
    if ((value ^ old) & RNIC_ETH_RX_EN) {
        regs->rx.head = regs->rx.tail = 0;
        regs->status &= ~RNIC_ETH_RX_HALTED;
    }
    regs->ctrl = value;
    rnic_eth_rx_kick(e);
    return res;
}

/* Ring configuration: only while the ring is disabled. */
static RnicAccessResult rnic_eth_ring_write(RnicEngine *e, RnicEthRing *ring,
                                            uint32_t en_bit, unsigned reg,
                                            uint32_t value)
{
    if (e->eth.r.ctrl & en_bit) {
        return RNIC_ACCESS_NOT_NOW;
    }
    switch (reg) {
    case 0:
        ring->base = (ring->base & ~0xffffffffull) | value;
        break;
    case 1:
        ring->base = (ring->base & 0xffffffffull) | (uint64_t)value << 32;
        break;
    case 2:
        if (value < RNIC_ETH_RING_LOG2_MIN || value > RNIC_ETH_RING_LOG2_MAX) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        ring->log2 = value;
        break;
    }
    return RNIC_ACCESS_OK;
}

/* Producer index: at most a ring ahead of the head, never backwards. */
static RnicAccessResult rnic_eth_tail_write(RnicEngine *e, RnicEthRing *ring,
                                            uint32_t en_bit, uint32_t value)
{
    if (!(e->eth.r.ctrl & en_bit)) {
        return RNIC_ACCESS_NOT_NOW;
    }
    if (value - ring->head > rnic_eth_entries(ring) ||
        value - ring->head < ring->tail - ring->head) {
        rnic_event(e, UB_ETH_TAIL, "tail refused", ring == &e->eth.r.rx,
                   value, ring->head, ring->tail, rnic_eth_entries(ring));
        return RNIC_ACCESS_BAD_VALUE;
    }
    ring->tail = value;
    return RNIC_ACCESS_OK;
}

RnicAccessResult rnic_eth_reg_write(RnicEngine *e, uint32_t offset,
                                    uint32_t value)
{
    RnicEthRegs *regs = &e->eth.r;
    RnicAccessResult res;

    switch (offset) {
    case RNIC_REG_ETH_CTRL:
        return rnic_eth_ctrl_write(e, value);
    case RNIC_REG_ETH_STATUS:
    case RNIC_REG_ETH_TX_HEAD:
    case RNIC_REG_ETH_RX_HEAD:
        return RNIC_ACCESS_READ_ONLY;
    case RNIC_REG_ETH_MTU:
        if (value < RNIC_ETH_MTU_MIN || value > e->cfg.max_mtu) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        regs->mtu = value;
        return RNIC_ACCESS_OK;
    case RNIC_REG_ETH_IRQ_VECTOR:
        if (value >= e->cfg.msix_vectors) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        regs->irq_vector = value;
        return RNIC_ACCESS_OK;
    case RNIC_REG_ETH_IRQ_MASK:
        if (value & ~1u) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        regs->irq_masked = value;
        rnic_eth_irq_check(e);
        return RNIC_ACCESS_OK;
    case RNIC_REG_ETH_MC_HASH_LO:
        regs->mc_hash = (regs->mc_hash & ~0xffffffffull) | value;
        return RNIC_ACCESS_OK;
    case RNIC_REG_ETH_MC_HASH_HI:
        regs->mc_hash = (regs->mc_hash & 0xffffffffull) | (uint64_t)value << 32;
        return RNIC_ACCESS_OK;
    case RNIC_REG_ETH_TX_BASE_LO:
    case RNIC_REG_ETH_TX_BASE_HI:
    case RNIC_REG_ETH_TX_SIZE_LOG2:
        return rnic_eth_ring_write(e, &regs->tx, RNIC_ETH_TX_EN,
                                   (offset - RNIC_REG_ETH_TX_BASE_LO) / 4,
                                   value);
    case RNIC_REG_ETH_RX_BASE_LO:
    case RNIC_REG_ETH_RX_BASE_HI:
    case RNIC_REG_ETH_RX_SIZE_LOG2:
        return rnic_eth_ring_write(e, &regs->rx, RNIC_ETH_RX_EN,
                                   (offset - RNIC_REG_ETH_RX_BASE_LO) / 4,
                                   value);
    case RNIC_REG_ETH_TX_TAIL:
        res = rnic_eth_tail_write(e, &regs->tx, RNIC_ETH_TX_EN, value);
        if (res == RNIC_ACCESS_OK && regs->tx.head != regs->tx.tail) {
            rnic_engine_schedule(e);
        }
        return res;
    case RNIC_REG_ETH_RX_TAIL:
        res = rnic_eth_tail_write(e, &regs->rx, RNIC_ETH_RX_EN, value);
        if (res == RNIC_ACCESS_OK) {
            rnic_eth_rx_kick(e);
        }
        return res;
    default:
        return RNIC_ACCESS_UNKNOWN_REG;
    }
}

/* ---------------------------------------------------------------------- */
/* Migration                                                              */
/* ---------------------------------------------------------------------- */

static void rnic_eth_ring_save(RnicImageWriter *w, const RnicEthRing *ring)
{
    rnic_image_put_u64(w, ring->base);
    rnic_image_put_u32(w, ring->log2);
    rnic_image_put_u32(w, ring->head);
    rnic_image_put_u32(w, ring->tail);
}

static void rnic_eth_ring_load(RnicImageReader *rd, RnicEthRing *ring)
{
    ring->base = rnic_image_get_u64(rd);
    ring->log2 = rnic_image_get_u32(rd);
    ring->head = rnic_image_get_u32(rd);
    ring->tail = rnic_image_get_u32(rd);
}

void rnic_eth_save(RnicEngine *e, RnicImageWriter *w)
{
    const RnicEthRegs *regs = &e->eth.r;

    rnic_image_put_u32(w, regs->ctrl);
    rnic_image_put_u32(w, regs->status);
    rnic_image_put_u32(w, regs->mtu);
    rnic_image_put_u32(w, regs->irq_vector);
    rnic_image_put_u8(w, regs->irq_masked);
    rnic_image_put_u8(w, regs->irq_pending);
    rnic_image_put_u8(w, e->eth.link_down);
    rnic_image_put_u64(w, regs->mc_hash);
    rnic_eth_ring_save(w, &regs->tx);
    rnic_eth_ring_save(w, &regs->rx);
}

static bool rnic_eth_ring_check(const RnicEngine *e, const RnicEthRing *ring,
                                bool enabled, const char *name, char **err)
{
    if (ring->log2 &&
        (ring->log2 < RNIC_ETH_RING_LOG2_MIN ||
         ring->log2 > RNIC_ETH_RING_LOG2_MAX)) {
        *err = g_strdup_printf("ethernet %s ring: bad size log2 %u", name,
                               ring->log2);
        return false;
    }
    if (enabled && !rnic_eth_ring_ok(e, ring)) {
        *err = g_strdup_printf("ethernet %s ring enabled with a bad "
                               "configuration", name);
        return false;
    }
    if (enabled && ring->tail - ring->head > rnic_eth_entries(ring)) {
        *err = g_strdup_printf("ethernet %s ring indexes out of range "
                               "(head %u tail %u)", name, ring->head,
                               ring->tail);
        return false;
    }
    return true;
}

bool rnic_eth_load(RnicEngine *e, RnicImageReader *rd, char **err)
{
    RnicEthRegs regs;
    bool link_down;

    memset(&regs, 0, sizeof(regs));
    regs.ctrl = rnic_image_get_u32(rd);
    regs.status = rnic_image_get_u32(rd);
    regs.mtu = rnic_image_get_u32(rd);
    regs.irq_vector = rnic_image_get_u32(rd);
    regs.irq_masked = rnic_image_get_u8(rd);
    regs.irq_pending = rnic_image_get_u8(rd);
    link_down = rnic_image_get_u8(rd);
    regs.mc_hash = rnic_image_get_u64(rd);
    rnic_eth_ring_load(rd, &regs.tx);
    rnic_eth_ring_load(rd, &regs.rx);
    if (rd->overrun) {
        *err = g_strdup("ethernet section truncated");
        return false;
    }
    if (regs.ctrl & ~RNIC_ETH_CTRL_ALL || regs.status & ~RNIC_ETH_STATUS_ALL) {
        *err = g_strdup_printf("ethernet: bad control 0x%x / status 0x%x",
                               regs.ctrl, regs.status);
        return false;
    }
    if (regs.mtu < RNIC_ETH_MTU_MIN || regs.mtu > e->cfg.max_mtu) {
        *err = g_strdup_printf("ethernet: MTU %u beyond this device's "
                               "%u..%u", regs.mtu, RNIC_ETH_MTU_MIN,
                               e->cfg.max_mtu);
        return false;
    }
    if (regs.irq_vector >= e->cfg.msix_vectors) {
        *err = g_strdup_printf("ethernet: vector %u beyond the %u vectors",
                               regs.irq_vector, e->cfg.msix_vectors);
        return false;
    }
    if (!rnic_eth_ring_check(e, &regs.tx, regs.ctrl & RNIC_ETH_TX_EN, "TX",
                             err) ||
        !rnic_eth_ring_check(e, &regs.rx, regs.ctrl & RNIC_ETH_RX_EN, "RX",
                             err)) {
        return false;
    }
    e->eth.r = regs;
    e->eth.link_down = link_down;       /* no event: nothing changed */
    rnic_eth_status_link(e);
    if ((regs.ctrl & RNIC_ETH_TX_EN) && regs.tx.head != regs.tx.tail) {
        rnic_engine_schedule(e);
    }
    return true;
}
