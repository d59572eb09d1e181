/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the whole device as a guest and a peer drive it. The
 * input is a program of operations (one opcode byte, then its operands):
 * BAR0 register writes, doorbells, writes into guest memory, admin
 * commands built from the input with handles chosen among the objects
 * earlier commands created, send/receive WQEs written into live rings
 * (and posted WQEs rewritten), Ethernet descriptors, frames from the wire,
 * clock steps and engine runs.
 *
 * The host is this file's own (not the unit tests'):
 *  - guest RAM is UNITS units of UNIT bytes; the last page of each is a
 *    guard page holding a canary. Everything the program names (rings,
 *    page lists, buffers, result buffers) lies inside a unit and before
 *    its guard page, so the device has no reason ever to write a guard:
 *    a dma_write there aborts, dma_map stops short of it, and the
 *    canaries are checked after every step that wrote guest memory;
 *  - every engine entry point is held against the bound the engine states
 *    for its kind (rnic_engine_call_bound, docs/spec.md §8: WQEs, frames,
 *    page-list entries, DMA bytes, persisted bytes): after every step the
 *    program aborts when rnic_engine_call_overruns() is not zero, naming
 *    the call kind, the figure, its value and the bound (fuzz-common.h);
 *    the largest figure of each kind over the process is printed at exit
 *    (and every million inputs, and on SIGINT/SIGTERM);
 *  - and, counted by this host on its side as well: an admin run
 *    completes at most 64 commands and reads at most 2 * 8 MiB + 64 * 64
 *    bytes (plus what the packets it sends read), a receive call sends at
 *    most 64 frames, a run or a timer call at most 256 * 64 + 1;
 *  - a memory window of WIN_SIZE (64 MiB: a whole-window persist takes
 *    four of the engine's 16 MiB chunks; regions of kind SCM,
 *    persistence): an access or a persist outside it aborts;
 *  - doorbells do their work inline (run_now, as QEMU while the VM runs)
 *    when the program's last byte is odd, else in the next run;
 *  - it re-enters the engine from its callbacks as a guest can: an MSI
 *    whose address is BAR0 (a DEV_CTRL write of RESET or 0, or a doorbell),
 *    and DMA into a window that is BAR0 (rings may be placed there).
 *
 * Seeds (fuzz-common.h): programs that bring up a device and move traffic
 * in loopback and to the peer, and (the work bound's) full SQs rung once
 * of fast-registers of 3584-page lists, mapped registrations (672
 * segments, or 64 interleaved), MW binds and local invalidates, and a
 * FLUSH (whole MR, persistent), a DURABLE READ, a MGMT PERSIST and
 * SCM_PERSISTs of the whole window:
 *   ./fuzz-device corpus -max_total_time=60
 * (RNIC_FUZZ_DEBUG=1 prints every step, command status and event.)
 *
 * Built with FUZZ_WQC_DIFF (target fuzz-wqc-diff) it runs each program
 * twice, with the WQE translation cache on and off, from the same state
 * (STag randomness seeded alike), and aborts unless both runs leave the
 * same guest memory, memory window, frames on the wire (a digest),
 * interrupts and counters: the cache may change nothing but its own
 * counters, whatever WQEs and registrations the program stages.
 */
#include <inttypes.h>
#include <stdarg.h>

#include "rnic-engine-int.h"
#include "fuzz-common.h"
#include "rnic-roce.h"

#define UNIT        (32 * 1024)
#define PAGE        4096
#define UNITS       49
#define RAM_SIZE    ((uint64_t)UNITS * UNIT)
#define WIN_PAGES   16384
#define WIN_SIZE    (WIN_PAGES * PAGE)
#define USABLE      (UNIT - PAGE)       /* bytes before the guard page */
#define CANARY      0xa5
#define MMIO_BASE   0x40000000ull       /* DMA here is BAR0 */

/* Units by use (unit 0: address 0, unused). */
#define U_AQ        1
#define U_ACQ       2
#define U_MISC      3                   /* MODIFY_QP attributes, queries */
#define U_PBL       4                   /* 4 units of page lists */
#define U_ETH       8                   /* TX ring, RX ring */
#define U_RING      10                  /* 23 units of rings */
#define N_RING      23
#define U_DATA      33                  /* 16 units of buffers */
#define N_DATA      16

#define AQ_LOG2     6

/* Bounds per engine call (the engine's numbers). */
#define MAX_ADMIN_CMDS      64
#define MAX_ADMIN_DMA       (2 * 8ull * (1u << 20) + 64 * 64)
#define MAX_RX_FRAMES       64
#define MAX_RUN_FRAMES      (256 * 64 + 1)
#define MAX_FRAME_BYTES     RNIC_ETH_MAX_FRAME

#define NH          8                   /* handles kept per kind */
/* a long fast-reg page list: one page-list unit of entries */
#define LONG_PAGES  (USABLE / 8)
/* a mapped registration's table in a data unit: at most 16 KiB of it */
#define MAP_SEGS    ((4 * PAGE) / (uint32_t)sizeof(struct rnic_map_seg))

enum { K_CTX, K_UCTX, K_PD, K_EQ, K_CQ, K_SRQ, K_QP, K_MR, K_KINDS };

typedef struct Ring {
    uint64_t addr;
    uint32_t log, shift, prod;
} Ring;

typedef struct Obj {
    bool live;
    uint32_t handle;
    uint32_t qpn;                       /* QP */
    uint8_t type;                       /* QP */
    Ring sq, rq;                        /* QP: SQ, RQ; SRQ, CQ, EQ: sq */
} Obj;

/* What a command posted in a slot will create, for its completion. */
typedef struct Pending {
    int kind;                           /* -1: nothing to remember */
    Obj obj;
} Pending;

typedef struct Host {
    RnicEngine *e;
    uint8_t *ram;
    uint8_t *win;                       /* the memory window */
    uint64_t win_lo, win_hi;            /* its bytes written since clear */
    uint64_t persists;
    Obj objs[K_KINDS][NH];
    Pending pending[1u << AQ_LOG2];
    uint32_t aq_tail, acq_head;
    uint16_t cmd_id;
    uint32_t ring_next;                 /* next ring unit, round robin */
    uint8_t msi_action[RNIC_DEFAULT_VECTORS];
    bool dma_reenter;
    bool scheduled;
    /*
     * RnicHostOps.run_now: doorbells do their work inline (QEMU while the
     * VM runs), when the program's last byte is odd
     */
    bool run_now;
    uint64_t now, deadline;
    uint64_t frames, dma_read, writes;  /* counters */
#ifdef FUZZ_WQC_DIFF
    uint64_t tx_digest, irqs;           /* what the wire and the CPU saw */
    RnicEngineConfig cfg;
    bool wqe_cache;                     /* of the run */
#endif
    unsigned depth;                     /* our nested callbacks */
} Host;

static Host H;

/* ---------------------------------------------------------------------- */
/* The host                                                               */
/* ---------------------------------------------------------------------- */

static bool in_guard(uint64_t addr)
{
    return addr % UNIT >= USABLE;
}

/* Units end with their guard page: a range may not leave its unit. */
static void check_range_writable(uint64_t addr, size_t len)
{
    if (in_guard(addr) || addr % UNIT + len > USABLE) {
        fprintf(stderr, "DMA write [0x%" PRIx64 ", +%zu) reaches the guard "
                "page of unit %" PRIu64 "\n", addr, len, addr / UNIT);
        abort();
    }
}

static FUZZ_NO_COVERAGE void check_canaries(void)
{
    unsigned u;

    for (u = 0; u < UNITS; u++) {
        if (!fuzz_all_bytes(H.ram + (uint64_t)u * UNIT + USABLE, PAGE,
                            CANARY)) {
            fprintf(stderr, "guard page of unit %u written\n", u);
            abort();
        }
    }
}

/* A window range of the engine's: never outside the window. */
static uint8_t *win_at(uint64_t addr, uint64_t len)
{
    uint64_t off = addr - RNIC_SCM_DMA_BASE;

    if (off > WIN_SIZE || len > WIN_SIZE - off) {
        fprintf(stderr, "window access [0x%" PRIx64 ", +%" PRIu64 ") "
                "outside its %u bytes\n", off, len, WIN_SIZE);
        abort();
    }
    return H.win + off;
}

/* The same for a write: the window's written range grows. */
static uint8_t *win_write_at(uint64_t addr, uint64_t len)
{
    uint8_t *p = win_at(addr, len);
    uint64_t off = addr - RNIC_SCM_DMA_BASE;

    if (len) {
        H.win_lo = MIN(H.win_lo, off);
        H.win_hi = MAX(H.win_hi, off + len);
    }
    return p;
}

#ifdef FUZZ_WQC_DIFF
/* The window zero again (only what was written since the last time). */
static void win_clear(void)
{
    if (H.win_lo < H.win_hi) {
        memset(H.win + H.win_lo, 0, H.win_hi - H.win_lo);
    }
    H.win_lo = WIN_SIZE;
    H.win_hi = 0;
}
#endif

static void h_persist(void *opaque, uint64_t off, uint64_t len)
{
    win_at(RNIC_SCM_DMA_BASE + off, len);
    H.persists++;
}

static int h_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    if (addr >= RNIC_SCM_DMA_BASE) {
        memcpy(buf, win_at(addr, len), len);
        return 0;
    }
    if (addr > RAM_SIZE || len > RAM_SIZE - addr) {
        return -1;
    }
    H.dma_read += len;
    memcpy(buf, H.ram + addr, len);
    return 0;
}

static void reenter_ctrl(uint32_t value);

static int h_dma_write(void *opaque, uint64_t addr, const void *buf,
                       size_t len)
{
    if (addr >= MMIO_BASE && addr - MMIO_BASE < RNIC_REGS_SIZE &&
        len <= RNIC_REGS_SIZE - (addr - MMIO_BASE)) {
        /* DMA aimed at BAR0: aligned dwords become register writes */
        uint64_t off = (addr - MMIO_BASE + 3) & ~3ull;
        const uint8_t *p = buf;

        for (; off + 4 <= addr - MMIO_BASE + len; off += 4) {
            uint32_t v;

            memcpy(&v, p + (off - (addr - MMIO_BASE)), 4);
            if (H.dma_reenter) {
                H.depth++;
                rnic_engine_reg_write(H.e, off, v);
                H.depth--;
            }
        }
        return 0;
    }
    if (addr >= RNIC_SCM_DMA_BASE) {
        memcpy(win_write_at(addr, len), buf, len);
        return 0;
    }
    if (addr > RAM_SIZE || len > RAM_SIZE - addr) {
        return -1;
    }
    check_range_writable(addr, len);
    H.writes++;
    memcpy(H.ram + addr, buf, len);
    return 0;
}

static void *h_dma_map(void *opaque, uint64_t addr, uint64_t *len,
                       bool is_write)
{
    uint64_t end;

    if (addr >= RNIC_SCM_DMA_BASE) {
        *len = MIN(*len, RNIC_SCM_DMA_BASE + WIN_SIZE - addr);
        return is_write ? win_write_at(addr, *len) : win_at(addr, *len);
    }
    if (addr >= RAM_SIZE || in_guard(addr)) {
        return NULL;
    }
    end = (addr / UNIT) * UNIT + USABLE;    /* stop before the guard */
    *len = MIN(*len, end - addr);
    if (is_write) {
        H.writes++;
    } else {
        H.dma_read += *len;
    }
    return H.ram + addr;
}

static void h_dma_unmap(void *opaque, void *ptr, uint64_t len, bool is_write,
                        uint64_t access_len)
{
    CHECK(access_len <= len);
}

static void reenter_ctrl(uint32_t value)
{
    H.depth++;
    rnic_engine_reg_write(H.e, RNIC_REG_DEV_CTRL, value);
    H.depth--;
}

/* An MSI: as the program configured the vector's address. */
static void h_raise_irq(void *opaque, unsigned vector)
{
    Obj *qp = &H.objs[K_QP][0];

    CHECK(vector < RNIC_DEFAULT_VECTORS);
#ifdef FUZZ_WQC_DIFF
    H.irqs = H.irqs * 31 + vector + 1;
#endif
    switch (H.msi_action[vector]) {
    case 1:
        reenter_ctrl(RNIC_CTRL_RESET);
        break;
    case 2:
        reenter_ctrl(0);
        break;
    case 3:
        reenter_ctrl(RNIC_CTRL_ENABLE | RNIC_CTRL_AQ_IRQ);
        break;
    case 4:
        if (qp->live) {
            H.depth++;
            rnic_engine_doorbell(H.e, 0, RNIC_DB_SQ,
                                 rnic_db_value(qp->handle, 0, qp->sq.prod));
            H.depth--;
        }
        break;
    }
}

static void h_transmit(void *opaque, const struct iovec *iov, int iovcnt)
{
    size_t len = 0;
    int i;

    for (i = 0; i < iovcnt; i++) {
        len += iov[i].iov_len;
#ifdef FUZZ_WQC_DIFF
        for (size_t k = 0; k < iov[i].iov_len; k++) {
            H.tx_digest = (H.tx_digest ^ ((uint8_t *)iov[i].iov_base)[k]) *
                          0x100000001b3ull;
        }
#endif
    }
    CHECK(len <= MAX_FRAME_BYTES);
    H.frames++;
}

static void h_schedule(void *opaque)
{
    H.scheduled = true;
}

static bool h_run_now(void *opaque)
{
    return H.run_now;
}

static void h_timer_arm(void *opaque, uint64_t deadline)
{
    H.deadline = deadline;
}

static uint64_t h_clock_ns(void *opaque)
{
    return H.now;
}

/* Only what is not normal operation: the text of every one is built. */
static bool h_event_enabled(void *opaque, RnicEvent ev)
{
    return rnic_event_class(ev) != RNIC_EVC_TRACE;
}

static void h_event(void *opaque, RnicEvent ev, const RnicEventArgs *a)
{
    static int debug = -1;
    char *text = rnic_event_describe(ev, a);

    if (debug < 0) {
        debug = getenv("RNIC_FUZZ_DEBUG") != NULL;
    }
    if (ev == RNIC_EV_ERR_CALL_BOUND || debug) {
        /* the step's check aborts; the engine's own words first */
        fprintf(stderr, "event: %s\n", text);
    }
    g_free(text);
}

static const RnicHostOps host_ops = {
    .dma_read = h_dma_read,
    .dma_write = h_dma_write,
    .raise_irq = h_raise_irq,
    .transmit = h_transmit,
    .schedule = h_schedule,
    .timer_arm = h_timer_arm,
    .clock_ns = h_clock_ns,
    .event = h_event,
    .event_enabled = h_event_enabled,
    .dma_map = h_dma_map,
    .dma_unmap = h_dma_unmap,
    .persist = h_persist,
    .run_now = h_run_now,
};

/* ---------------------------------------------------------------------- */
/* Engine calls, counted                                                  */
/* ---------------------------------------------------------------------- */

typedef struct Count {
    uint64_t frames, dma_read;
    uint32_t aq_head;
} Count;

static void count_start(Count *c)
{
    c->frames = H.frames;
    c->dma_read = H.dma_read;
    rnic_engine_reg_read(H.e, RNIC_REG_AQ_HEAD, &c->aq_head);
}

/* After a run: commands and bytes of the admin queue, frames. */
static void count_run(const Count *c)
{
    uint64_t frames = H.frames - c->frames;
    uint32_t head;

    rnic_engine_reg_read(H.e, RNIC_REG_AQ_HEAD, &head);
    if (head - c->aq_head <= (1u << RNIC_AQ_SIZE_LOG2_MAX)) {
        /* (a reset in the run sets the head back: not counted) */
        CHECK(head - c->aq_head <= MAX_ADMIN_CMDS);
    }
    CHECK(frames <= MAX_RUN_FRAMES);
    CHECK(H.dma_read - c->dma_read <= MAX_ADMIN_DMA +
          frames * MAX_FRAME_BYTES + 256 * 64 * 4096ull);
}

static void run(void)
{
    Count c;

    H.scheduled = false;
    count_start(&c);
    rnic_engine_run(H.e);
    count_run(&c);
}

static void run_all(void)
{
    int i;

    for (i = 0; i < 64 && H.scheduled; i++) {
        run();
    }
}

static void advance(uint64_t ns)
{
    Count c;

    H.now += ns;
    if (H.deadline != UINT64_MAX && H.now >= H.deadline) {
        H.deadline = UINT64_MAX;
        count_start(&c);
        rnic_engine_timer_expired(H.e);
        CHECK(H.frames - c.frames <= MAX_RUN_FRAMES);
    }
}

static void receive(const uint8_t *f, size_t len)
{
    struct iovec iov = { .iov_base = (void *)f, .iov_len = len };
    uint64_t before = H.frames;

    rnic_engine_receive(H.e, &iov, 1);
    CHECK(H.frames - before <= MAX_RX_FRAMES);
}

/* ---------------------------------------------------------------------- */
/* The program                                                            */
/* ---------------------------------------------------------------------- */

typedef struct Prog {
    const uint8_t *p, *end;
} Prog;

static uint8_t u8(Prog *g)
{
    return g->p < g->end ? *g->p++ : 0;
}

static uint16_t u16(Prog *g)
{
    return u8(g) | u8(g) << 8;
}

static uint32_t u32(Prog *g)
{
    return u16(g) | (uint32_t)u16(g) << 16;
}

static uint64_t u64(Prog *g)
{
    return u32(g) | (uint64_t)u32(g) << 32;
}

static uint64_t unit_addr(unsigned u)
{
    return (uint64_t)u * UNIT;
}

/* An address of 'len' bytes (<= USABLE) in a data unit. */
static uint64_t data_addr(Prog *g, uint32_t len)
{
    uint32_t off = u16(g) % (USABLE - len + 1);

    return unit_addr(U_DATA + u8(g) % N_DATA) + off;
}

/* A handle: usually a live object's of 'kind', sometimes anything. */
static uint32_t pick(Prog *g, int kind)
{
    uint8_t b = u8(g);
    Obj *o = &H.objs[kind][b % NH];

    if (b >= 0xf8) {
        return b == 0xff ? RNIC_HANDLE_NONE : u32(g);
    }
    return o->live ? o->handle : H.objs[kind][0].handle;
}

static Obj *pick_obj(Prog *g, int kind)
{
    Obj *o = &H.objs[kind][u8(g) % NH];

    return o->live ? o : NULL;
}

/* GID ::ffff:10.0.c.host from one byte. */
static void gid_of(uint8_t sel, uint8_t gid[16])
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[14] = (sel >> 3) & 3;
    gid[15] = 1 + (sel & 7);
    if (sel & 0x80) {
        /* a multicast group: IPv6 ff0e::n, or IPv4-mapped 224.0.n.x */
        if (sel & 0x40) {
            memset(gid, 0, 12);
            gid[0] = 0xff;
            gid[1] = 0x0e;
        } else {
            gid[12] = 224;
        }
    }
}

/* A ring unit for a ring of 2^log entries of 2^shift bytes (clamped). */
static Ring ring_for(uint32_t log, uint32_t shift)
{
    Ring r = { .log = log, .shift = shift };

    while (r.log > 0 && (1ull << (r.log + r.shift)) > USABLE) {
        r.log--;
    }
    r.addr = unit_addr(U_RING + H.ring_next++ % N_RING);
    return r;
}

/* The ring's base is sometimes BAR0 (a guest aiming DMA at the device). */
static uint64_t ring_base(Prog *g, Ring *r)
{
    return u8(g) == 0xee ? MMIO_BASE : r->addr;
}

/* A page list in a page-list unit: 'n' data pages; returns its address. */
static uint64_t page_list(Prog *g, uint32_t n, uint64_t first)
{
    uint64_t pbl = unit_addr(U_PBL + u8(g) % 4);
    uint64_t *l = (uint64_t *)(H.ram + pbl);
    uint32_t i;

    for (i = 0; i < n; i++) {
        l[i] = (first & ~(uint64_t)(PAGE - 1)) + (uint64_t)i * PAGE;
        if (in_guard(l[i])) {
            l[i] -= PAGE;
        }
    }
    return pbl;
}

/*
 * A long page list in a page-list unit: 'n' (<= LONG_PAGES) data pages,
 * the usable pages of the data units round robin (never a guard page);
 * returns its address.
 */
static uint64_t page_list_long(Prog *g, uint32_t n)
{
    uint64_t pbl = unit_addr(U_PBL + u8(g) % 4);
    uint64_t *l = (uint64_t *)(H.ram + pbl);
    const uint32_t per_unit = USABLE / PAGE;
    uint32_t i;

    for (i = 0; i < n; i++) {
        uint32_t k = i % (N_DATA * per_unit);

        l[i] = unit_addr(U_DATA + k / per_unit) + (uint64_t)(k % per_unit) *
               PAGE;
    }
    return pbl;
}

static void post_cmd(struct rnic_admin_cmd *c, int kind, const Obj *o,
                     bool ring)
{
    uint32_t mask = (1u << AQ_LOG2) - 1, slot = H.aq_tail & mask;
    Pending *pd;

    c->cmd_id = ++H.cmd_id;
    memcpy(H.ram + unit_addr(U_AQ) + slot * sizeof(*c), c, sizeof(*c));
    pd = &H.pending[c->cmd_id & mask];
    pd->kind = kind;
    if (o) {
        pd->obj = *o;
    }
    H.aq_tail++;
    if (ring) {
        rnic_engine_reg_write(H.e, RNIC_REG_AQ_TAIL, H.aq_tail);
    }
}

/* Completions since the last look: remember what was created. */
static void reap(void)
{
    uint32_t mask = (1u << AQ_LOG2) - 1, i;

    for (i = 0; i < 64; i++) {
        struct rnic_admin_cqe *q = (void *)(H.ram + unit_addr(U_ACQ) +
                                            (H.acq_head & mask) * 16);
        uint8_t phase = ((H.acq_head >> AQ_LOG2) & 1) ^ 1;
        Pending *pd;

        if ((q->phase & 1) != phase) {
            break;
        }
        pd = &H.pending[q->cmd_id & mask];
        if (getenv("RNIC_FUZZ_DEBUG")) {
            fprintf(stderr, "cmd %u: status %u result %u kind %d\n",
                    q->cmd_id, q->status, q->result0, pd->kind);
        }
        if (q->status == RNIC_ST_OK && pd->kind >= 0) {
            Obj *o = &H.objs[pd->kind][q->cmd_id % NH];

            *o = pd->obj;
            o->live = true;
            o->handle = q->result0;
            o->qpn = q->result1;
        }
        H.acq_head++;
        rnic_engine_reg_write(H.e, RNIC_REG_ACQ_HEAD, H.acq_head);
    }
}

static void op_admin(Prog *g)
{
    struct rnic_admin_cmd c;
    uint8_t op = u8(g) % RNIC_CMD_OPCODE_COUNT, flags = u8(g);
    uint64_t misc = unit_addr(U_MISC);
    int kind = -1;
    Obj o;

    memset(&c, 0, sizeof(c));
    memset(&o, 0, sizeof(o));
    c.opcode = op;
    c.uctx = flags & 0x80 ? pick(g, K_UCTX) : 0;
    switch (op) {
    case RNIC_CMD_QUERY_DEVICE:
    case RNIC_CMD_QUERY_PORT:
    case RNIC_CMD_QUERY_QP:
    case RNIC_CMD_QUERY_QP_STATS:
        c.query.addr = u8(g) == 0xee ? MMIO_BASE + RNIC_REG_DEV_CTRL - 8 :
                       misc + 1024 + u8(g);
        c.query.len = u8(g) % 160;
        c.query.handle = op == RNIC_CMD_QUERY_QP ||
                         op == RNIC_CMD_QUERY_QP_STATS ? pick(g, K_QP) :
                         u8(g) % 3;
        break;
    case RNIC_CMD_CREATE_NET_CTX:
        c.net_ctx.net_id = u16(g) % 16;
        c.net_ctx.net_type = u8(g) % 3 == 2;
        kind = K_CTX;
        break;
    case RNIC_CMD_ADD_GID:
    case RNIC_CMD_DEL_GID:
        gid_of(u8(g), c.gid.gid);
        c.gid.index = u8(g) % 8;
        c.gid.net_ctx = pick(g, K_CTX);
        break;
    case RNIC_CMD_ALLOC_UCTX:
        kind = K_UCTX;
        break;
    case RNIC_CMD_ALLOC_PD:
        c.pd.net_ctx = u8(g) & 1 ? RNIC_PD_MULTI_NET : pick(g, K_CTX);
        kind = K_PD;
        break;
    case RNIC_CMD_CREATE_EQ:
        o.sq = ring_for(2 + u8(g) % 6, 4);
        c.eq.ring_addr = ring_base(g, &o.sq);
        c.eq.log_size = o.sq.log;
        c.eq.flags = u8(g) & 1;
        c.eq.vector = u8(g) % (RNIC_DEFAULT_VECTORS + 1);
        kind = K_EQ;
        break;
    case RNIC_CMD_CREATE_CQ:
    case RNIC_CMD_RESIZE_CQ:
        o.sq = ring_for(1 + u8(g) % 8, 6);
        c.cq.ring_addr = ring_base(g, &o.sq);
        c.cq.log_size = o.sq.log;
        c.cq.eq = pick(g, K_EQ);
        c.cq.cq = pick(g, K_CQ);
        kind = op == RNIC_CMD_CREATE_CQ ? K_CQ : -1;
        break;
    case RNIC_CMD_CREATE_SRQ:
    case RNIC_CMD_MODIFY_SRQ:
        o.sq = ring_for(u8(g) % 8, 4 + u8(g) % 4);
        c.srq.ring_addr = o.sq.addr;
        c.srq.log_size = o.sq.log;
        c.srq.wqe_shift = o.sq.shift;
        c.srq.pd = pick(g, K_PD);
        c.srq.srq = pick(g, K_SRQ);
        c.srq.limit = u8(g) % 4;
        kind = op == RNIC_CMD_CREATE_SRQ ? K_SRQ : -1;
        break;
    case RNIC_CMD_CREATE_QP:
        o.type = u8(g) % RNIC_QPT_COUNT;
        {
            /* 0xf0..0xff: as deep as a ring unit holds (2^9, clamped) */
            uint8_t x = u8(g);

            o.sq = ring_for(x >= 0xf0 ? 6 + x % 4 : x % 6, 6 + u8(g) % 3);
        }
        o.rq = ring_for(u8(g) % 6, 4 + u8(g) % 4);
        c.qp.sq_addr = o.sq.addr;
        c.qp.pd = pick(g, K_PD);
        c.qp.send_cq = pick(g, K_CQ);
        c.qp.recv_cq = pick(g, K_CQ);
        c.qp.srq = flags & 1 ? pick(g, K_SRQ) : RNIC_HANDLE_NONE;
        c.qp.rq_addr = c.qp.srq == RNIC_HANDLE_NONE ? o.rq.addr : 0;
        c.qp.qp_type = o.type;
        c.qp.sq_log_size = o.sq.log;
        c.qp.rq_log_size = c.qp.srq == RNIC_HANDLE_NONE ? o.rq.log : 0;
        c.qp.sq_wqe_shift = o.sq.shift;
        c.qp.rq_wqe_shift = o.rq.shift;
        c.qp.sq_sig_all = flags & 2;
        kind = K_QP;
        break;
    case RNIC_CMD_MODIFY_QP: {
        struct rnic_qp_attr *a = (void *)(H.ram + misc);

        memset(a, 0, sizeof(*a));
        a->qp_state = u8(g) % 7;
        a->path_mtu = 1 + u8(g) % 5;
        a->timeout = u8(g) % 20;
        a->retry_cnt = u8(g) % 8;
        a->rnr_retry = u8(g) % 8;
        a->min_rnr_timer = u8(g) % 32;
        a->max_rd_atomic = u8(g) % 17;
        a->max_dest_rd_atomic = u8(g) % 17;
        a->port_num = 1;
        a->qkey = u8(g) & 1 ? RNIC_ROCE_GSI_QKEY : 0x1234;
        a->rq_psn = u8(g);
        a->sq_psn = u8(g);
        if (u8(g) & 0x80) {     /* a live QP's number, or the peer's */
            Obj *q = pick_obj(g, K_QP);

            a->dest_qp_num = q ? q->qpn : 0x77;
        } else {
            a->dest_qp_num = u32(g) & 0xffffff;
        }
        a->qp_access_flags = u16(g) & RNIC_ACCESS_ALL;
        gid_of(u8(g), a->av.dgid);
        a->av.sgid_index = u8(g) % 8;
        a->av.hop_limit = 64;
        c.modify_qp.attr_addr = misc;
        c.modify_qp.qp = pick(g, K_QP);
        c.modify_qp.attr_mask = u32(g) & 0x1fffff;
        if (flags & 1) {
            /* the masks a driver uses for each transition */
            static const uint32_t masks[] = {
                RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
                RNIC_QP_ACCESS_FLAGS,
                RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
                RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
                RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER,
                RNIC_QP_STATE | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
                RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN |
                RNIC_QP_MAX_QP_RD_ATOMIC,
                RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_QKEY |
                RNIC_QP_PORT,
                RNIC_QP_STATE,
                RNIC_QP_STATE | RNIC_QP_SQ_PSN,
                /* UC's INIT -> RTR (its RTR -> RTS is the one above) */
                RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
                RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN,
            };

            c.modify_qp.attr_mask = masks[(flags >> 1) % G_N_ELEMENTS(masks)];
        }
        break;
    }
    case RNIC_CMD_REG_MR:
    case RNIC_CMD_REREG_MR:     /* a new translation, PD or rights */
    case RNIC_CMD_ALLOC_MR: {
        uint32_t len = 1 + u16(g) % (4 * PAGE);
        uint64_t va = data_addr(g, len);
        uint32_t np = ((va & (PAGE - 1)) + len + PAGE - 1) / PAGE;

        c.mr.iova = flags & 4 ? va : (uint64_t)u32(g) << 12 | (va & 0xfff);
        c.mr.length = len;
        c.mr.levels = u8(g) % 3 ? 1 : 0;
        c.mr.pbl_addr = c.mr.levels ? page_list(g, np, va) :
                        (va & ~(uint64_t)(PAGE - 1));
        if (!c.mr.levels && np > 1 &&
            (va / UNIT) != ((va + len - 1) / UNIT)) {
            c.mr.length = PAGE - (va & (PAGE - 1));
        }
        c.mr.pd = pick(g, K_PD);
        if (op == RNIC_CMD_ALLOC_MR) {
            /*
             * bit 7: a long list (LONG_PAGES); bit 6: a mapped STag of
             * up to RNIC_MAP_MAX_SEGS segments (levels, shift 0)
             */
            uint8_t x = u8(g);

            c.mr.npages = x & 0x80 ? LONG_PAGES : 1 + x % 8;
            if (x & 0x40) {
                c.mr.kind = RNIC_MR_KIND_MAPPED;
                c.mr.npages = x & 0x80 ? RNIC_MAP_MAX_SEGS : MAP_SEGS;
            }
        } else {
            c.mr.npages = np;
        }
        c.mr.access = u16(g) & RNIC_ACCESS_ALL;
        c.mr.page_shift = c.mr.kind == RNIC_MR_KIND_MAPPED ? 0 : 12;
        if (c.mr.kind == RNIC_MR_KIND_MAPPED) {
            c.mr.levels = 0;
            c.mr.pbl_addr = 0;
        }
        c.mr.key = u8(g);
        if (op == RNIC_CMD_REG_MR && (flags & 0x20)) {
            /* a range of the window, with storage semantics */
            c.mr.kind = RNIC_MR_KIND_SCM;
            c.mr.pbl_addr = u16(g) % (WIN_SIZE + 2);
            c.mr.length = 1 + u16(g) % (WIN_SIZE + 1);
            c.mr.sems = u8(g);
            if (c.mr.sems & 0x80) {     /* the whole window */
                c.mr.pbl_addr = 0;
                c.mr.length = WIN_SIZE;
            }
            c.mr.sems &= 0x7f;
            c.mr.npages = c.mr.levels = c.mr.page_shift = 0;
        }
        kind = K_MR;
        if (op == RNIC_CMD_REREG_MR) {
            c.mr.stag = pick(g, K_MR);
            c.mr.net_ctx = flags & 8 ? RNIC_PD_MULTI_NET : pick(g, K_CTX);
            c.mr.rereg = u8(g) % 9;     /* 0 and 8: refused */
            kind = -1;                  /* nothing new to remember */
        }
        break;
    }
    case RNIC_CMD_ATTACH_MCAST: /* a group (or a unicast GID) and a QP */
    case RNIC_CMD_DETACH_MCAST:
        gid_of(u8(g), c.mcast.gid);
        c.mcast.qp = pick(g, K_QP);
        break;
    case RNIC_CMD_ALLOC_MW:     /* types 1, 2 and two that are not */
        c.mw.pd = pick(g, K_PD);
        c.mw.type = u8(g) % 4;
        c.mw.key = u8(g);
        kind = K_MR;
        break;
    case RNIC_CMD_SCM_PERSIST:  /* a range of the window, or past it */
        /* bit 1 of the selector: in pages */
        for (int k = 0; k < 2; k++) {
            uint8_t x = u8(g);
            uint64_t v = x & 1 ? u64(g) : x & 2 ?
                         (uint64_t)(u16(g) % (WIN_PAGES + 2)) * PAGE :
                         u16(g) % (WIN_SIZE + 2);

            if (k) {
                c.scm.length = v;
            } else {
                c.scm.offset = v;
            }
        }
        break;
    default:                    /* destroy and the rest */
        c.destroy.handle = pick(g, u8(g) % K_KINDS);
        c.destroy.net_ctx = u8(g) & 1 ? RNIC_PD_MULTI_NET : pick(g, K_CTX);
        c.destroy.flags = u8(g) & 1;
        break;
    }
    post_cmd(&c, kind, &o, !(flags & 0x40));
}

/* A send WQE from the program, for 'qp' (fast-reg lists sanitized). */
static void build_send(Prog *g, uint8_t *slot, uint32_t stride)
{
    struct rnic_sq_wqe *w = (void *)slot;
    struct rnic_sge *s = (void *)(slot + sizeof(*w));
    uint32_t i, max = (stride - sizeof(*w)) / sizeof(*s);
    uint64_t mapped_table = 0;
    uint32_t mapped_len = 0;
    Obj *peer;

    memset(slot, 0, stride);
    w->wr_id = u8(g);
    w->opcode = u8(g) % RNIC_WR_OPCODE_COUNT;
    w->flags = u8(g) & 0x0f;
    w->num_sge = u8(g) % 4;
    w->num_sge = MIN(w->num_sge, max);
    w->imm_or_inv = u8(g) & 1 ? pick(g, K_MR) : u32(g);
    w->rdma.remote_addr = u8(g) & 1 ? data_addr(g, 8) & ~7ull : u64(g);
    w->rdma.rkey = pick(g, K_MR);
    if (w->wr_id & 0x80) {
        /* another storage semantic in an SCM region's key (no new byte:
         * the seeds keep their meaning) */
        w->rdma.rkey = (w->rdma.rkey & ~0xe0u) | ((w->wr_id & 0x70) << 1);
        w->rdma.remote_addr &= 0xffff;
    }
    if (w->opcode == RNIC_WR_ATOMIC_CMP_SWP ||
        w->opcode == RNIC_WR_ATOMIC_FETCH_ADD) {
        w->atomic.compare_add = u8(g);
        w->atomic.swap = u8(g);
    } else if (w->opcode == RNIC_WR_FLUSH) {
        w->flush.length = u16(g);
        w->flush.type = u8(g);
        if (w->flush.type & 0x80) {     /* a range of up to 64 MiB */
            w->flush.length <<= 10;
        }
        w->flush.type %= 5;
        w->flush.level = u8(g) % 3;
    } else if (w->opcode == RNIC_WR_ATOMIC_WRITE) {
        uint64_t v = u64(g);

        memcpy(w->atomic_write.data, &v, 8);
    } else if (w->opcode == RNIC_WR_BIND_MW) {
        /* a window (or anything); its index with maybe another key,
         * sometimes another index */
        uint8_t x = u8(g);

        w->bind.mw_rkey = pick(g, K_MR);
        w->bind.new_rkey = w->bind.mw_rkey ^ (x & 3) ^ (x & 0x80 ? 0x100 : 0);
        w->bind.mr_lkey = pick(g, K_MR);
        w->bind.addr = data_addr(g, 64);
        w->bind.length = u16(g);
        w->bind.access = u8(g) & 0x3f;
    } else if (w->opcode == RNIC_WR_REG_MR) {
        /*
         * the page-count byte: bit 7 a long list (56 .. LONG_PAGES pages);
         * bit 6 a mapped STag instead, its segment table at 'va' (list
         * form: 21 .. MAP_SEGS segments of 8 bytes of the member, the
         * STag 'rkey' picked above at 'remote_addr'; bit 5: interleaved,
         * 2 repetitions of 2 .. 64 segments), named by SGE 0 (the WQE's
         * SGEs) or inline (RNIC_WQE_INLINE, as many as fit)
         */
        uint32_t member = w->rdma.rkey;
        uint64_t base = w->rdma.remote_addr;
        uint64_t va = data_addr(g, 4 * PAGE);
        uint8_t x = u8(g);
        uint32_t np = x & 0x80 ? ((x & 0x3f) + 1) * (LONG_PAGES / 64) :
                      1 + x % 4;
        uint8_t cut = u8(g);

        w->reg.iova = va;
        w->reg.length = (uint64_t)np * PAGE - cut;
        w->reg.pbl_addr = x & 0x80 ? page_list_long(g, np) :
                          page_list(g, np, va);
        w->reg.stag = pick(g, K_MR);
        w->reg.access = u16(g) & RNIC_ACCESS_ALL;
        w->reg.npages = np;
        w->reg.page_shift = 12;
        if (x & 0x40) {
            bool il = x & 0x20;
            uint32_t n = il ? 2 + (x & 0x1f) * 2 : ((x & 0x1f) + 1) * 21;
            struct rnic_map_seg t;      /* 'va' need not be aligned */
            uint32_t k;

            n = MIN(n, MAP_SEGS);
            for (k = 0; k < n; k++) {
                t.addr = base + (uint64_t)k * (il ? 16 : 8);
                t.length = 8;
                t.lkey = member;
                t.skip = il ? 16 * n - 8 : 0;
                t.rsvd = 0;
                memcpy(H.ram + va + k * sizeof(t), &t, sizeof(t));
            }
            w->reg.npages = n;
            w->reg.length = (uint64_t)(il ? 2 : 1) * n * 8;
            w->reg.pbl_addr = 0;
            w->reg.page_shift = 0;
            w->imm_or_inv = il ? 2 : 1;
            mapped_table = va;
            mapped_len = n * sizeof(t);
        }
    } else if (u8(g) & 1) {
        peer = pick_obj(g, K_QP);
        w->ud.remote_qpn = peer ? peer->qpn : 1;
        w->ud.remote_qkey = u8(g) & 1 ? RNIC_ROCE_GSI_QKEY : 0x1234;
        gid_of(u8(g), w->ud.av.dgid);
        if (w->ud.av.dgid[0] == 0xff || w->ud.av.dgid[12] == 224) {
            w->ud.remote_qpn = RNIC_ROCE_MULTICAST_QPN;    /* a group */
        }
        w->ud.av.sgid_index = u8(g) % 8;
    }
    if (w->flags & RNIC_WQE_INLINE) {
        w->inline_len = u16(g) % (stride - sizeof(*w) + 8);
        w->num_sge = 0;
    }
    for (i = 0; i < w->num_sge; i++) {
        s[i].length = u16(g) % 9000;
        s[i].addr = data_addr(g, MIN(s[i].length, USABLE));
        s[i].lkey = pick(g, K_MR);
    }
    if (mapped_len) {
        if (w->flags & RNIC_WQE_INLINE) {
            /* as much of the table as the slot holds, inline */
            uint32_t room = stride - sizeof(*w);

            room -= room % sizeof(struct rnic_map_seg);
            w->inline_len = MIN(mapped_len, room);
            memcpy(slot + sizeof(*w), H.ram + mapped_table, w->inline_len);
            w->reg.npages = w->inline_len / sizeof(struct rnic_map_seg);
            w->reg.length = w->reg.npages * 8ull * w->imm_or_inv;
        } else if (w->num_sge) {
            s[0].addr = mapped_table;
            s[0].length = mapped_len;
        }
    }
}

static void build_recv(Prog *g, uint8_t *slot, uint32_t stride)
{
    struct rnic_rq_wqe *w = (void *)slot;
    struct rnic_sge *s = (void *)(slot + sizeof(*w));
    uint32_t i;

    memset(slot, 0, stride);
    w->wr_id = u8(g);
    w->num_sge = u8(g) % 4;
    w->num_sge = MIN(w->num_sge, (stride - sizeof(*w)) / sizeof(*s));
    for (i = 0; i < w->num_sge; i++) {
        s[i].length = u16(g) % 9000;
        s[i].addr = data_addr(g, MIN(s[i].length, USABLE));
        s[i].lkey = pick(g, K_MR);
    }
}

static uint8_t *slot_of(Ring *r, uint32_t index)
{
    return H.ram + r->addr + ((uint64_t)(index & ((1u << r->log) - 1)) <<
                              r->shift);
}

/*
 * The WQE of 'slot' in every slot of its ring after it (the ring full,
 * 2^log WQEs from 'index'). With 'alternate', every second one is a
 * LOCAL_INV of the STag the WQE registers or binds, and each pair uses the
 * next key; BIND_MWs rebind from the key the one before gave.
 */
static uint32_t next_key(uint32_t stag, uint32_t n)
{
    return (stag & ~0xffu) | ((stag + n) & 0xff);
}

static void fill_ring(Ring *r, uint32_t index, bool send, bool alternate)
{
    uint32_t n = 1u << r->log, stride = 1u << r->shift, k;
    const uint8_t *first = slot_of(r, index);
    const struct rnic_sq_wqe *w0 = (const void *)first;

    for (k = 1; k < n; k++) {
        uint8_t *slot = slot_of(r, index + k);
        struct rnic_sq_wqe *w = (void *)slot;
        uint32_t p = alternate ? k / 2 : k, stag;

        memmove(slot, first, stride);
        if (!send) {
            continue;
        }
        w->wr_id = k;
        stag = w0->opcode == RNIC_WR_REG_MR ? w0->reg.stag :
               w0->opcode == RNIC_WR_BIND_MW ? w0->bind.new_rkey :
               w0->imm_or_inv;
        if (alternate && (k & 1)) {
            memset(slot, 0, sizeof(*w));
            w->wr_id = k;
            w->opcode = RNIC_WR_LOCAL_INV;
            w->flags = RNIC_WQE_SIGNALED;
            w->imm_or_inv = next_key(stag, p);
        } else if (alternate && w0->opcode == RNIC_WR_REG_MR) {
            w->reg.stag = next_key(stag, p);
        } else if (w0->opcode == RNIC_WR_BIND_MW && p) {
            w->bind.mw_rkey = next_key(stag, p - 1);
            w->bind.new_rkey = next_key(stag, p);
        }
    }
}

/*
 * Post (or rewrite an already posted) WQE of a QP's SQ/RQ or an SRQ;
 * 'which' bit 7: the ring filled with it (fill_ring; bit 6: alternating
 * with LOCAL_INVs), one doorbell for all.
 */
static void op_wqe(Prog *g, bool rewrite)
{
    uint8_t which = u8(g);
    Obj *o = pick_obj(g, which & 2 ? K_SRQ : K_QP);
    bool send;
    Ring *r;
    uint32_t index;
    uint64_t db;

    if (!o) {
        return;
    }
    r = which & 1 && !(which & 2) ? &o->sq : &o->rq;
    if (which & 2) {
        r = &o->sq;             /* an SRQ's ring */
    }
    send = r == &o->sq && !(which & 2);
    index = rewrite ? r->prod - 1 - u8(g) % 4 : r->prod++;
    if (send) {
        build_send(g, slot_of(r, index), 1u << r->shift);
    } else {
        build_recv(g, slot_of(r, index), 1u << r->shift);
    }
    if (!rewrite && (which & 0x80)) {
        fill_ring(r, index, send, which & 0x40);
        r->prod += (1u << r->log) - 1;
    }
    if (!rewrite && !(which & 4)) {
        db = rnic_db_value(o->handle, 0, r->prod);
        rnic_engine_doorbell(H.e, 0, which & 2 ? RNIC_DB_SRQ :
                             r == &o->sq ? RNIC_DB_SQ : RNIC_DB_RQ, db);
    }
}

static void op_doorbell(Prog *g)
{
    static const uint32_t offs[] = {
        RNIC_DB_SQ, RNIC_DB_RQ, RNIC_DB_SRQ, RNIC_DB_CQ, RNIC_DB_EQ,
    };
    uint8_t b = u8(g);
    uint32_t off = offs[b % 5];
    int kind = off == RNIC_DB_SRQ ? K_SRQ : off == RNIC_DB_CQ ? K_CQ :
               off == RNIC_DB_EQ ? K_EQ : K_QP;
    uint32_t handle = pick(g, kind);
    uint32_t flags = (u8(g) & 3) << 24;

    rnic_engine_doorbell(H.e, b & 0x80 ? u8(g) % 4 : 0, off,
                         rnic_db_value(handle, flags, u32(g)));
}

static void op_reg_write(Prog *g)
{
    static const uint32_t regs[] = {
        RNIC_REG_DEV_CTRL, RNIC_REG_SCRATCH, RNIC_REG_MAC_LO,
        RNIC_REG_MAC_HI, RNIC_REG_IRQ_TEST, RNIC_REG_AQ_TAIL,
        RNIC_REG_ACQ_HEAD, RNIC_REG_ETH_CTRL, RNIC_REG_ETH_MTU,
        RNIC_REG_ETH_IRQ_VECTOR, RNIC_REG_ETH_IRQ_MASK,
        RNIC_REG_ETH_MC_HASH_LO, RNIC_REG_ETH_TX_TAIL,
        RNIC_REG_ETH_RX_TAIL, RNIC_REG_ETH_TX_SIZE_LOG2,
        RNIC_REG_ETH_RX_SIZE_LOG2, RNIC_REG_ETH_TX_BASE_LO,
        RNIC_REG_ETH_RX_BASE_LO, RNIC_REG_AQ_SIZE_LOG2,
    };
    uint8_t b = u8(g);
    uint32_t off = b < 0xf0 ? regs[b % G_N_ELEMENTS(regs)] :
                   (u16(g) & (RNIC_REGS_SIZE - 4));
    uint32_t v = u32(g);

    /* rings the device writes stay where they may be written */
    switch (off) {
    case RNIC_REG_ETH_TX_SIZE_LOG2:
    case RNIC_REG_ETH_RX_SIZE_LOG2:
        v = 2 + v % 9;          /* up to 1024 entries: 16 KiB */
        break;
    case RNIC_REG_ETH_TX_BASE_LO:
    case RNIC_REG_ETH_RX_BASE_LO:
        v = unit_addr(U_ETH + (off == RNIC_REG_ETH_RX_BASE_LO));
        break;
    case RNIC_REG_AQ_SIZE_LOG2:
        v = 2 + v % 7;
        break;
    case RNIC_REG_AQ_BASE_LO:
    case RNIC_REG_AQ_BASE_HI:
    case RNIC_REG_ACQ_BASE_LO:
    case RNIC_REG_ACQ_BASE_HI:
    case RNIC_REG_ETH_TX_BASE_HI:
    case RNIC_REG_ETH_RX_BASE_HI:
        return;
    }
    rnic_engine_reg_write(H.e, off, v);
}

/* An Ethernet descriptor: a buffer in a data unit. */
static void op_eth_desc(Prog *g)
{
    uint8_t b = u8(g);
    uint64_t ring = unit_addr(U_ETH + (b & 1));
    uint32_t i = u16(g) % 1024;
    uint16_t len = 1 + u16(g) % 2048;

    if (b & 1) {
        struct rnic_eth_rx_desc *d = (void *)(H.ram + ring + i * 16);

        d->addr = data_addr(g, len);
        d->buf_len = len;
        d->len = 0;
        d->status = 0;
    } else {
        struct rnic_eth_tx_desc *d = (void *)(H.ram + ring + i * 16);

        d->addr = data_addr(g, len);
        d->len = len;
        d->flags = u8(g) & 1;
        d->status = 0;
    }
}

static void op_mem_write(Prog *g)
{
    uint32_t len = u8(g) % 64;
    uint64_t a = data_addr(g, len);
    uint32_t i;

    for (i = 0; i < len; i++) {
        H.ram[a + i] = u8(g);
    }
}

/* A frame from the peer: built from fields, or raw bytes (ICRC fixed). */
static void op_frame(Prog *g)
{
    static uint8_t f[RNIC_ETH_MAX_FRAME], payload[4096];
    uint8_t mode = u8(g), sel;
    RnicRoceHdr hd;
    size_t len;
    Obj *qp;

    if (mode & 1) {
        len = u16(g) % 1500;
        len = MIN(len, (size_t)(g->end - g->p));
        memcpy(f, g->p, len);
        g->p += len;
        fuzz_fix_icrc(f, len);
        receive(f, len);
        return;
    }
    memset(&hd, 0, sizeof(hd));
    memcpy(hd.dmac, H.e->cfg.mac, 6);
    hd.smac[0] = 0x52;
    gid_of(u8(g), hd.sgid);
    gid_of(u8(g), hd.dgid);
    hd.vlan_present = mode & 2;
    hd.vlan_id = u8(g) % 16;
    hd.hop_limit = 64;
    hd.udp_sport = 0xc000;
    hd.opcode = u8(g);
    hd.pkey = 0xffff;
    qp = pick_obj(g, K_QP);
    hd.dest_qp = qp ? qp->qpn : u8(g);
    hd.ack_req = mode & 4;
    hd.psn = u8(g);
    sel = u8(g);
    hd.reth.va = sel & 1 ? data_addr(g, 8) : u64(g);
    hd.reth.rkey = pick(g, K_MR);
    hd.reth.dma_len = u16(g);
    if (sel & 2) {              /* up to 64 MiB (a READ of a window) */
        hd.reth.dma_len <<= 10;
    }
    hd.atomic_eth.va = hd.reth.va & ~7ull;
    hd.atomic_eth.rkey = hd.reth.rkey;
    hd.aeth.syndrome = u8(g);
    hd.aeth.msn = u8(g);
    hd.deth.qkey = mode & 8 ? RNIC_ROCE_GSI_QKEY : 0x1234;
    hd.deth.src_qp = u8(g);
    hd.immdt = u32(g);
    hd.ieth.rkey = hd.reth.rkey;
    if (rnic_roce_op_info(hd.opcode) &&
        (rnic_roce_op_info(hd.opcode)->flags & RNIC_ROCE_OPF_PAYLOAD)) {
        hd.payload = payload;
        hd.payload_len = u16(g) % 4097;
    }
    if (rnic_roce_encode_linear(&hd, f, sizeof(f), &len) == RNIC_ROCE_OK) {
        receive(f, len);
    }
}

static void op_msi(Prog *g)
{
    uint8_t v = u8(g);

    H.msi_action[v % RNIC_DEFAULT_VECTORS] = (v >> 3) % 5;
    H.dma_reenter = v & 0x80;
}

static void reset_host(void)
{
    unsigned u;

#ifdef FUZZ_WQC_DIFF
    /*
     * both runs from the same state: a new engine (a reset keeps handle
     * cursors running), STag randomness seeded alike
     */
    fuzz_calls_note(H.e);       /* its maxima, before it goes */
    rnic_engine_free(H.e);
    H.e = rnic_engine_new(&H.cfg, &host_ops, NULL);
    rnic_engine_set_wqe_cache(H.e, H.wqe_cache);
    g_rand_set_seed(H.e->rand, 1);
    win_clear();
    H.frames = H.tx_digest = H.irqs = H.persists = 0;
#else
    rnic_engine_reset(H.e);
#endif
    memset(H.ram, 0, RAM_SIZE);
    for (u = 0; u < UNITS; u++) {
        memset(H.ram + (uint64_t)u * UNIT + USABLE, CANARY, PAGE);
    }
    memset(H.objs, 0, sizeof(H.objs));
    memset(H.pending, 0xff, sizeof(H.pending));
    memset(H.msi_action, 0, sizeof(H.msi_action));
    H.dma_reenter = false;
    H.aq_tail = H.acq_head = 0;
    H.cmd_id = 0;
    H.ring_next = 0;
    H.scheduled = false;
    H.deadline = UINT64_MAX;
    H.now = 1000000000ull;
    rnic_engine_set_link(H.e, true);
    rnic_engine_reg_write(H.e, RNIC_REG_AQ_BASE_LO, unit_addr(U_AQ));
    rnic_engine_reg_write(H.e, RNIC_REG_ACQ_BASE_LO, unit_addr(U_ACQ));
    rnic_engine_reg_write(H.e, RNIC_REG_AQ_SIZE_LOG2, AQ_LOG2);
    rnic_engine_reg_write(H.e, RNIC_REG_DEV_CTRL,
                          RNIC_CTRL_ENABLE | RNIC_CTRL_AQ_IRQ);
    fuzz_calls_check(H.e, "reset");
    if (getenv("RNIC_FUZZ_DEBUG")) {
        uint32_t st;

        rnic_engine_reg_read(H.e, RNIC_REG_DEV_STATUS, &st);
        fprintf(stderr, "status %x\n", st);
    }
}

enum {
    OP_ADMIN, OP_RUN, OP_SEND, OP_REWRITE, OP_DOORBELL, OP_REG, OP_FRAME,
    OP_STEP, OP_MEM, OP_ETH, OP_MSI, OP_COUNT
};

static const char *const op_names[OP_COUNT] = {
    "admin", "run", "send", "rewrite", "doorbell", "register", "frame",
    "clock step", "memory", "Ethernet", "MSI",
};

static void step(Prog *g)
{
    uint64_t writes = H.writes;
    uint8_t op = u8(g) % OP_COUNT;
    static int debug = -1;

    if (debug < 0) {
        debug = getenv("RNIC_FUZZ_DEBUG") != NULL;
    }
    if (debug) {
        fprintf(stderr, "step %s\n", op_names[op]);
    }
    switch (op) {
    case OP_ADMIN:
        op_admin(g);
        break;
    case OP_RUN:
        run_all();
        reap();
        break;
    case OP_SEND:
        op_wqe(g, false);
        break;
    case OP_REWRITE:
        op_wqe(g, true);
        break;
    case OP_DOORBELL:
        op_doorbell(g);
        break;
    case OP_REG:
        op_reg_write(g);
        break;
    case OP_FRAME:
        op_frame(g);
        break;
    case OP_STEP:
        advance(1000ull << (u8(g) % 24));
        break;
    case OP_MEM:
        op_mem_write(g);
        break;
    case OP_ETH:
        op_eth_desc(g);
        break;
    case OP_MSI:
        op_msi(g);
        break;
    }
    if (H.writes != writes) {
        check_canaries();
    }
    fuzz_calls_check(H.e, op_names[op]);
}

static void run_program(const uint8_t *data, size_t size)
{
    Prog g = { data, data + size };
    unsigned n;

    reset_host();
    H.run_now = size && (data[size - 1] & 1);
    for (n = 0; n < 256 && g.p < g.end; n++) {
        step(&g);
    }
    run_all();
    advance(1000000000ull);
    run_all();
    check_canaries();
    fuzz_calls_check(H.e, "end of program");
}

#ifdef FUZZ_WQC_DIFF
/* What a run leaves that the guest or a peer can see, but guest memory. */
typedef struct Outcome {
    uint64_t frames, tx_digest, irqs, persists;
    uint64_t stats[RNIC_STAT_COUNT];
} Outcome;

static void outcome(Outcome *o)
{
    memset(o, 0, sizeof(*o));
    o->frames = H.frames;
    o->tx_digest = H.tx_digest;
    o->irqs = H.irqs;
    o->persists = H.persists;
    memcpy(o->stats, H.e->stats, sizeof(o->stats));
    /* the cache's own counters differ, by design */
    o->stats[RNIC_STAT_WQC_HITS] = 0;
    o->stats[RNIC_STAT_WQC_MISSES] = 0;
    o->stats[RNIC_STAT_WQC_STALE] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t *ram, *win;
    uint64_t lo, hi;
    Outcome on, off;

    if (!ram) {
        ram = g_malloc(RAM_SIZE);
        win = g_malloc0(WIN_SIZE);
    }
    H.wqe_cache = true;
    run_program(data, size);
    outcome(&on);
    memcpy(ram, H.ram, RAM_SIZE);
    /* the window: only what the runs wrote (both start from zeros) */
    lo = H.win_lo;
    hi = H.win_hi;
    if (lo < hi) {
        memcpy(win + lo, H.win + lo, hi - lo);
    }
    H.wqe_cache = false;
    run_program(data, size);
    outcome(&off);
    CHECK(!memcmp(&on, &off, sizeof(on)));
    CHECK(!memcmp(ram, H.ram, RAM_SIZE));
    if (lo < hi || H.win_lo < H.win_hi) {
        uint64_t a = MIN(lo, H.win_lo), z = MAX(hi, H.win_hi);

        CHECK(!memcmp(win + a, H.win + a, z - a));
    }
    if (lo < hi) {
        memset(win + lo, 0, hi - lo);
    }
    fuzz_calls_input_done(H.e);
    return 0;
}
#else
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_program(data, size);
    fuzz_calls_input_done(H.e);
    return 0;
}
#endif

/* ---------------------------------------------------------------------- */
/* Seeds                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct Seed {
    GByteArray *b;
} Seed;

static void emit(GByteArray *b, int n, ...)
{
    va_list ap;
    int i;

    va_start(ap, n);
    for (i = 0; i < n; i++) {
        uint8_t v = va_arg(ap, int);

        g_byte_array_append(b, &v, 1);
    }
    va_end(ap);
}

/* Admin: opcode, flags, operands (each a byte). */
#define ADMIN(b, ...) emit(b, 1 + G_N_ELEMENTS(((int[]){ __VA_ARGS__ })), \
                           OP_ADMIN, __VA_ARGS__)
#define RUN(b) emit(b, 1, OP_RUN)

/*
 * A device with a context (VLAN 0), GIDs, a PD, an EQ, CQs, MRs and two
 * QPs of 'type'; handles land in slot cmd_id % NH of their kind.
 */
static void seed_setup(GByteArray *b, uint8_t qp_type)
{
    /* cmd 1: CREATE_NET_CTX vlan 0 */
    ADMIN(b, RNIC_CMD_CREATE_NET_CTX, 0, 0, 0, 0);
    RUN(b);
    /* cmds 2, 3: ADD_GID host 1, 2 at index 0, 1 of ctx slot 1 */
    ADMIN(b, RNIC_CMD_ADD_GID, 0, 0, 0, 1);
    ADMIN(b, RNIC_CMD_ADD_GID, 0, 1, 1, 1);
    RUN(b);
    /* cmd 4: ALLOC_PD of ctx slot 1 */
    ADMIN(b, RNIC_CMD_ALLOC_PD, 0, 0, 1);
    /* cmd 5: CREATE_EQ log 4, async, vector 1 */
    ADMIN(b, RNIC_CMD_CREATE_EQ, 0, 2, 0, 1, 1);
    RUN(b);
    /* cmd 6: CREATE_CQ log 6 on EQ slot 5 */
    ADMIN(b, RNIC_CMD_CREATE_CQ, 0, 5, 0, 5, 0);
    RUN(b);
    /*
     * cmd 7: REG_MR 16 KiB at data unit 0 (page list in unit 0 of the
     * lists), PD slot 4, local/remote read/write/atomic rights, key 0x5a
     */
    ADMIN(b, RNIC_CMD_REG_MR, 4, 0xff, 0x3f, 0, 0, 0, 1, 0, 4, 0x1f, 0x00,
          0x5a);
    /*
     * cmds 8, 9: CREATE_QP: 16 send WQEs of 256 bytes, 16 receive WQEs of
     * 64 (3 SGEs), PD slot 4, CQ slot 6
     */
    ADMIN(b, RNIC_CMD_CREATE_QP, 0, qp_type, 4, 2, 4, 2, 4, 6, 6);
    ADMIN(b, RNIC_CMD_CREATE_QP, 0, qp_type, 4, 2, 4, 2, 4, 6, 6);
    RUN(b);
}

/* MODIFY_QP of QP slot 'qp' through the transition 'mask' (0..6). */
static void seed_modify(GByteArray *b, uint8_t qp, uint8_t state,
                        uint8_t mask, uint8_t sgid, uint8_t dgid,
                        uint8_t dest)
{
    ADMIN(b, RNIC_CMD_MODIFY_QP, 1 | mask << 1, state, 3, 14, 7, 7, 1, 4, 4,
          0, 100, 100, dest | 0x80, dest, 0x0f, 0x00, dgid, sgid, qp,
          0, 0, 0, 0);
    RUN(b);
}

/*
 * A send WQE on the SQ of QP slot 'qp' in build_send's layout: signaled,
 * 'nsge' SGEs of 'len' bytes at 'off', 'off' + 256, ... of data unit 0
 * under the MR (slot 7, cmd 7), to 0x1000 + 'off' of the same region.
 */
static void seed_send_to(GByteArray *b, uint8_t qp, uint8_t wr_id,
                         uint8_t opcode, uint8_t nsge, uint16_t len,
                         uint16_t off, uint8_t rkey_slot)
{
    uint16_t raddr = 0x1000 + off;
    int k;

    /* which (SQ), QP, wr_id, opcode, flags, SGEs, immediate 0 */
    emit(b, 12, OP_SEND, 1, qp, wr_id, opcode, RNIC_WQE_SIGNALED, nsge,
         0, 0, 0, 0, 0);
    /* remote address in a data unit (unit 0), the MR's key */
    emit(b, 5, 1, raddr & 0xff, raddr >> 8, 0, rkey_slot);
    if (opcode == RNIC_WR_ATOMIC_CMP_SWP || opcode == RNIC_WR_ATOMIC_FETCH_ADD) {
        emit(b, 2, 5, 0);       /* compare/add, swap */
    } else {
        emit(b, 1, 0);          /* no UD address */
    }
    for (k = 0; k < nsge; k++) {
        uint16_t a = off + k * 256;

        emit(b, 6, len & 0xff, len >> 8, a & 0xff, a >> 8, 0, 7);
    }
}

/* The same to the region of MR slot 7 (cmd 7 of seed_setup). */
static void seed_send(GByteArray *b, uint8_t qp, uint8_t wr_id,
                      uint8_t opcode, uint8_t nsge, uint16_t len,
                      uint16_t off)
{
    seed_send_to(b, qp, wr_id, opcode, nsge, len, off, 7);
}

/* A receive WQE of one SGE ('len' bytes at 'off' of data unit 0, MR 7). */
static void seed_recv(GByteArray *b, uint8_t qp, uint8_t wr_id, uint16_t len,
                      uint16_t off)
{
    emit(b, 11, OP_SEND, 0, qp, wr_id, 1, len & 0xff, len >> 8, off & 0xff,
         off >> 8, 0, 7);
}

/*
 * A BIND_MW on the SQ of QP slot 'qp': the window of MR slot 'mw' (key
 * xor 'key_xor') over 4 KiB at 0x1000 of data unit 0 of the MR (slot 7)
 * with 'access'.
 */
static void seed_bind(GByteArray *b, uint8_t qp, uint8_t wr_id, uint8_t mw,
                      uint8_t key_xor, uint8_t access)
{
    emit(b, 12, OP_SEND, 1, qp, wr_id, RNIC_WR_BIND_MW, RNIC_WQE_SIGNALED, 0,
         0, 0, 0, 0, 0);
    emit(b, 5, 1, 0, 0x10, 0, 7);       /* remote address: unused */
    emit(b, 9, mw, key_xor, 7, 0x00, 0x10, 0, 0x00, 0x10, access);
}

/* RC loopback: QP slot 0 (cmd 8) <-> slot 1 (cmd 9), both in RTS. */
static void seed_rc_loopback(GByteArray *b)
{
    int i;

    seed_setup(b, RNIC_QPT_RC);
    for (i = 0; i < 2; i++) {
        uint8_t me = i ? 1 : 0, other = i ? 0 : 1;

        seed_modify(b, me, RNIC_QPS_INIT, 0, 0, 0, 0);
        seed_modify(b, me, RNIC_QPS_RTR, 1, me, other, other);
        seed_modify(b, me, RNIC_QPS_RTS, 2, me, other, other);
    }
}

static void emit_le(GByteArray *b, uint64_t v, int bytes)
{
    int i;

    for (i = 0; i < bytes; i++) {
        emit(b, 1, (int)(v >> (8 * i)) & 0xff);
    }
}

/* OP_RUN and a clock step, 'n' times: long work resumed across calls. */
static void seed_runs(GByteArray *b, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        emit(b, 3, OP_RUN, OP_STEP, 4);
    }
}

/*
 * RC loopback as seed_rc_loopback, but QPs whose SQ is as deep as a ring
 * unit holds: 2^8 WQEs of 64 bytes ('sge' false) or 2^7 of 128 bytes
 * (room for one SGE); the same commands (cmds 1..15), so handles land in
 * the same slots.
 */
static void seed_rc_deep(GByteArray *b, bool sge)
{
    int i;

    ADMIN(b, RNIC_CMD_CREATE_NET_CTX, 0, 0, 0, 0);
    RUN(b);
    ADMIN(b, RNIC_CMD_ADD_GID, 0, 0, 0, 1);
    ADMIN(b, RNIC_CMD_ADD_GID, 0, 1, 1, 1);
    RUN(b);
    ADMIN(b, RNIC_CMD_ALLOC_PD, 0, 0, 1);
    ADMIN(b, RNIC_CMD_CREATE_EQ, 0, 2, 0, 1, 1);
    RUN(b);
    ADMIN(b, RNIC_CMD_CREATE_CQ, 0, 5, 0, 5, 0);
    RUN(b);
    ADMIN(b, RNIC_CMD_REG_MR, 4, 0xff, 0x3f, 0, 0, 0, 1, 0, 4, 0x1f, 0x00,
          0x5a);
    /* SQ: log byte 0xf2 (2^8, clamped), stride 2^6 or 2^7 */
    ADMIN(b, RNIC_CMD_CREATE_QP, 0, RNIC_QPT_RC, 0xf2, sge, 4, 2, 4, 6, 6);
    ADMIN(b, RNIC_CMD_CREATE_QP, 0, RNIC_QPT_RC, 0xf2, sge, 4, 2, 4, 6, 6);
    RUN(b);
    for (i = 0; i < 2; i++) {
        uint8_t me = i ? 1 : 0, other = i ? 0 : 1;

        seed_modify(b, me, RNIC_QPS_INIT, 0, 0, 0, 0);
        seed_modify(b, me, RNIC_QPS_RTR, 1, me, other, other);
        seed_modify(b, me, RNIC_QPS_RTS, 2, me, other, other);
    }
}

/*
 * A REG_MR work request on QP 0's SQ, 'which' (0xc1: the ring filled,
 * alternating with LOCAL_INVs), of MR slot 'stag_slot': 'x' the
 * page-count byte of build_send (a long list, or a mapped STag's table of
 * 8-byte segments of the MR slot 7 from the start of data unit 0, its
 * table at 0x0000 of data unit 0 named by one SGE under MR 7).
 */
static void seed_fast_reg(GByteArray *b, uint8_t which, uint8_t x,
                          uint8_t stag_slot)
{
    bool mapped = x & 0x40;

    emit(b, 7, OP_SEND, which, 0, 1, RNIC_WR_REG_MR, RNIC_WQE_SIGNALED,
         mapped ? 1 : 0);
    emit(b, 5, 0, 0, 0, 0, 0);          /* immediate 0 */
    emit(b, 5, 1, 0, 0, 0, 7);          /* data unit 0 at 0, MR 7 */
    /*
     * va: data unit 0 at 0x1000 (the table: 0), the count, no cut, page
     * list unit 0, the MR, local write and remote read/write
     */
    emit(b, 3, 0, mapped ? 0 : 0x10, 0);
    emit(b, 6, x, 0, 0, stag_slot, 0x07, 0x00);
    if (mapped) {
        emit(b, 6, 0, 0x40, 0, 0, 0, 7);    /* SGE: replaced by the table */
    }
}

/*
 * A BIND_MW of QP 0 posted with 'which': the window of MR slot 'mw', its
 * new key its key xor 'key_xor', over 4 KiB at 0x1000 of the MR (slot 7).
 * (build_send's order: the key byte, then the window.)
 */
static void seed_bind_which(GByteArray *b, uint8_t which, uint8_t mw,
                            uint8_t key_xor, uint8_t access)
{
    emit(b, 12, OP_SEND, which, 0, 1, RNIC_WR_BIND_MW, RNIC_WQE_SIGNALED, 0,
         0, 0, 0, 0, 0);
    emit(b, 5, 1, 0, 0x10, 0, 7);
    emit(b, 9, key_xor, mw, 7, 0x00, 0x10, 0, 0x00, 0x10, access);
}

/*
 * RC loopback with deep SQs and a region of the whole 64 MiB window (cmd
 * 16, MR slot 0: REG_MR kind SCM at iova 0, every semantic allowed, its
 * STag's key DURABLE, remote read/write and both FLUSH rights).
 */
static void seed_rc_window(GByteArray *b)
{
    seed_rc_deep(b, true);              /* 128-byte WQEs: one SGE */
    ADMIN(b, RNIC_CMD_REG_MR, 0x20, 0xff, 0x0f, 0, 0, 0, 0, 0, 0, 0, 1, 0, 4,
          0x07, 0x03, RNIC_SCM_SEM_DURABLE << RNIC_SCM_KEY_SEM_SHIFT | 0x1c,
          0, 0, 0, 0, 0x80 | 0x3f);
    RUN(b);
}

/*
 * A FLUSH of the whole region (MR slot 0, PLAIN key: wr_id 0x80) for
 * global visibility and persistence, from QP 0 posted with 'which'.
 */
static void seed_flush(GByteArray *b, uint8_t which)
{
    emit(b, 7, OP_SEND, which, 0, 0x80, RNIC_WR_FLUSH, RNIC_WQE_SIGNALED, 0);
    emit(b, 5, 0, 0, 0, 0, 0);          /* immediate 0 */
    emit(b, 1, 0);
    emit_le(b, 0, 8);                   /* remote address 0 */
    /* region slot 0; length 0xffff << 10 (bit 7 of the type), type 3
     * (128 % 5), level MR */
    emit(b, 5, 0, 0xff, 0xff, 0x80, RNIC_FLUSH_MR);
}

/* Seeds of issue 40: full SQs of local WRs, persists of a 64 MiB window. */
static void write_bound_seeds(const char *dir, GByteArray *b)
{
    /* fast-register MR slot 0 (ALLOC_MR of LONG_PAGES, cmd 16) */
    static const uint8_t alloc_long[] = {
        OP_ADMIN, RNIC_CMD_ALLOC_MR, 4, 0xff, 0x0f, 0, 0, 0, 0, 4, 0x80,
        0x0f, 0x00, 0x40,
    };
    /* a mapped STag, MR slot 0 (ALLOC_MR kind MAPPED of MAP_SEGS) */
    static const uint8_t alloc_mapped[] = {
        OP_ADMIN, RNIC_CMD_ALLOC_MR, 4, 0xff, 0x0f, 0, 0, 0, 0, 4, 0x40,
        0x07, 0x00, 0x41,
    };
    /* the MGMT request: persist the whole region, cookie 0x40 */
    struct rnic_scm_mgmt m = {
        .op = RNIC_SCM_MGMT_PERSIST, .offset = 0, .length = WIN_SIZE,
        .cookie = 0x40,
    };
    int i;

    /*
     * A full SQ (256) of fast-registers of LONG_PAGES pages, each with a
     * LOCAL_INV after it, rung once; then a full SQ of LOCAL_INVs
     */
    g_byte_array_set_size(b, 0);
    seed_rc_deep(b, false);
    g_byte_array_append(b, alloc_long, sizeof(alloc_long));
    RUN(b);
    seed_fast_reg(b, 0xc1, 0x80 | 0x3f, 0);
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);
    emit(b, 9, OP_SEND, 0x81, 0, 1, RNIC_WR_LOCAL_INV, RNIC_WQE_SIGNALED, 0,
         1, 0);                         /* imm: MR slot 0's STag */
    emit(b, 5, 1, 0, 0, 0, 7);
    emit(b, 1, 0);
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);

    /* the same without the LOCAL_INVs: all but the first fail */
    g_byte_array_set_size(b, 0);
    seed_rc_deep(b, false);
    g_byte_array_append(b, alloc_long, sizeof(alloc_long));
    RUN(b);
    seed_fast_reg(b, 0x81, 0x80 | 0x3f, 0);
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);

    /*
     * A full SQ (128) of mapped registrations of MAP_SEGS segments (list
     * form) with LOCAL_INVs, rung once; the same interleaved (64 segments,
     * 2 repetitions)
     */
    for (i = 0; i < 2; i++) {
        g_byte_array_set_size(b, 0);
        seed_rc_deep(b, true);
        g_byte_array_append(b, alloc_mapped, sizeof(alloc_mapped));
        RUN(b);
        seed_fast_reg(b, 0xc1, i ? 0x40 | 0x20 | 0x1f : 0x40 | 0x1f, 0);
        seed_runs(b, 4);
        fuzz_write_seed_bytes(dir, b);
    }

    /*
     * Memory windows (cmds 16, 17: type 1 in slot 0, type 2 in slot 1): a
     * full SQ of binds of the type 1 window (each a new key), then a full
     * SQ of binds of the type 2 window each invalidated after it
     */
    g_byte_array_set_size(b, 0);
    seed_rc_deep(b, false);
    ADMIN(b, RNIC_CMD_ALLOC_MW, 0, 4, RNIC_MW_TYPE_1, 0x31);
    ADMIN(b, RNIC_CMD_ALLOC_MW, 0, 4, RNIC_MW_TYPE_2, 0x32);
    RUN(b);
    seed_bind_which(b, 0x81, 0, 1,
                    RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ);
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);
    seed_bind_which(b, 0xc1, 1, 1, RNIC_ACCESS_REMOTE_WRITE);
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);

    /* FLUSH of the whole 64 MiB region: one, then a full SQ of them */
    g_byte_array_set_size(b, 0);
    seed_rc_window(b);
    seed_flush(b, 1);
    seed_runs(b, 6);
    fuzz_write_seed_bytes(dir, b);
    seed_flush(b, 0x81);
    seed_runs(b, 8);
    fuzz_write_seed_bytes(dir, b);

    /*
     * MGMT PERSIST of the whole region: the request (32 bytes at 0x3000 of
     * data unit 0) WRITten from QP 0 through the MGMT key (wr_id 0xd0) at
     * the region's offset 0; a READ of its status after it
     */
    g_byte_array_set_size(b, 0);
    seed_rc_window(b);
    emit(b, 5, OP_MEM, sizeof(m), 0x00, 0x30, 0);
    g_byte_array_append(b, (const uint8_t *)&m, sizeof(m));
    emit(b, 7, OP_SEND, 1, 0, 0xd0, RNIC_WR_RDMA_WRITE, RNIC_WQE_SIGNALED, 1);
    emit(b, 5, 0, 0, 0, 0, 0);
    emit(b, 1, 0);
    emit_le(b, 0, 8);
    emit(b, 2, 0, 0);                   /* region slot 0, no UD address */
    emit(b, 6, sizeof(m), 0, 0x00, 0x30, 0, 7);
    seed_runs(b, 6);
    fuzz_write_seed_bytes(dir, b);

    /*
     * SCM_PERSIST of the whole window twice (in pages: selector 2), and a
     * DURABLE READ of 64 MiB - 1 KiB from the peer (host 3) to QP 0 connected
     * to it: a READ request frame (opcode 0x0c, PSN 100) through the
     * region's DURABLE key (its own), length 0xffff << 10
     */
    g_byte_array_set_size(b, 0);
    seed_rc_window(b);
    for (i = 0; i < 2; i++) {
        ADMIN(b, RNIC_CMD_SCM_PERSIST, 0, 2, 0, 0, 2, 0x00,
              WIN_PAGES >> 8);
    }
    seed_runs(b, 4);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);
    seed_rc_window(b);
    seed_modify(b, 0, RNIC_QPS_RESET, 4, 0, 0, 0);
    seed_modify(b, 0, RNIC_QPS_INIT, 0, 0, 0, 0);
    seed_modify(b, 0, RNIC_QPS_RTR, 1, 0, 2, 0x77);
    seed_modify(b, 0, RNIC_QPS_RTS, 2, 0, 2, 0x77);
    emit(b, 9, OP_FRAME, 4, 2, 0, 0, 0x0c, 0, 100, 2);
    emit_le(b, 0, 8);                   /* va 0 */
    emit(b, 10, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0);
    seed_runs(b, 8);
    fuzz_write_seed_bytes(dir, b);
}

static void write_seeds(const char *dir)
{
    GByteArray *b = g_byte_array_new();
    int i;

    /* RC loopback, SEND + RECV */
    seed_rc_loopback(b);
    fuzz_write_seed_bytes(dir, b);
    /* + a receive on QP 1 and a SEND, a READ, an atomic on QP 0 */
    seed_recv(b, 1, 1, 256, 0x2000);
    emit(b, 1, OP_RUN);
    seed_send(b, 0, 1, RNIC_WR_SEND, 1, 64, 0);
    seed_send(b, 0, 2, RNIC_WR_RDMA_READ, 1, 64, 0x800);
    seed_send(b, 0, 3, RNIC_WR_ATOMIC_FETCH_ADD, 1, 8, 0x900);
    emit(b, 4, OP_RUN, OP_STEP, 10, OP_RUN);
    fuzz_write_seed_bytes(dir, b);
    /* + an MSI aimed at DEV_CTRL (RESET) and a retransmit timeout */
    emit(b, 2, OP_MSI, 0x80 | 1 << 3 | 1);
    seed_send(b, 0, 4, RNIC_WR_SEND, 1, 64, 0);
    emit(b, 5, OP_RUN, OP_STEP, 23, OP_STEP, 23);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * RC loopback, the same two-SGE WRITE three times (the WQE translation
     * cache's hits; mutations stage registrations between them)
     */
    seed_rc_loopback(b);
    for (i = 0; i < 3; i++) {
        seed_send(b, 0, 5 + i, RNIC_WR_RDMA_WRITE, 2, 64, 0);
        emit(b, 1, OP_RUN);
    }
    fuzz_write_seed_bytes(dir, b);
    /* + the MR deregistered (slot 7 of ctx slot 1), the same WRITE again */
    ADMIN(b, RNIC_CMD_DEREG_MR, 0, K_MR, 7, 0, 1, 0);
    RUN(b);
    seed_send(b, 0, 8, RNIC_WR_RDMA_WRITE, 2, 64, 0);
    emit(b, 1, OP_RUN);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * RC loopback and a region of the window (REG_MR kind SCM, flags 0x20:
     * cmd 16, MR slot 0; window offset 0, 4 KiB, every semantic allowed,
     * remote write and both FLUSH rights), WRITEs into it through its
     * DURABLE key (wr_id bit 7: the semantic from wr_id bits 6..4) and its
     * READONLY key (refused)
     */
    seed_rc_loopback(b);
    ADMIN(b, RNIC_CMD_REG_MR, 0x24, 0xff, 0x0f, 0, 0, 0, 1, 0, 4, 0x1f, 0x03,
          0x5b, 0, 0, 0xff, 0x0f, 0x3f);
    RUN(b);
    seed_send_to(b, 0, 0x90, RNIC_WR_RDMA_WRITE, 1, 64, 0, 0);
    seed_send_to(b, 0, 0xc1, RNIC_WR_RDMA_WRITE, 1, 64, 0x40, 0);
    emit(b, 3, OP_RUN, OP_STEP, 5);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * RC loopback and memory windows (cmds 16, 17: MR slots 0 and 1, type
     * 1 and 2 in PD slot 4), bound by QP 1 over 4 KiB of the MR (slot 7),
     * WRITEs from QP 0 through them, a rebind of the bound type 2 window
     * (refused)
     */
    seed_rc_loopback(b);
    ADMIN(b, RNIC_CMD_ALLOC_MW, 0, 4, RNIC_MW_TYPE_1, 0x31);
    ADMIN(b, RNIC_CMD_ALLOC_MW, 0, 4, RNIC_MW_TYPE_2, 0x32);
    RUN(b);
    seed_bind(b, 1, 1, 0, 0,
              RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ);
    seed_bind(b, 1, 2, 1, 0, RNIC_ACCESS_REMOTE_WRITE);
    emit(b, 1, OP_RUN);
    seed_send_to(b, 0, 3, RNIC_WR_RDMA_WRITE, 1, 64, 0, 0);
    seed_send_to(b, 0, 4, RNIC_WR_RDMA_WRITE, 1, 64, 0x40, 1);
    seed_bind(b, 1, 5, 1, 0, RNIC_ACCESS_REMOTE_WRITE);
    emit(b, 3, OP_RUN, OP_STEP, 5);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * RC loopback and REREG_MR of the MR (slot 7, context slot 1): new
     * rights (ACCESS), a WRITE through it; then a new translation (4 KiB
     * of data unit 1, TRANS), after which the WRITE's SGEs in data unit 0
     * are outside the MR (a local protection error)
     */
    seed_rc_loopback(b);
    ADMIN(b, RNIC_CMD_REREG_MR, 4, 0xff, 0x0f, 0, 0, 1, 1, 1, 4, 0x0f, 0x00,
          0, 7, 1, RNIC_REREG_ACCESS);
    RUN(b);
    seed_send_to(b, 0, 6, RNIC_WR_RDMA_WRITE, 1, 64, 0, 7);
    emit(b, 1, OP_RUN);
    ADMIN(b, RNIC_CMD_REREG_MR, 4, 0xff, 0x0f, 0, 0, 1, 1, 1, 4, 0x0f, 0x00,
          0, 7, 1, RNIC_REREG_TRANS);
    RUN(b);
    seed_send_to(b, 0, 7, RNIC_WR_RDMA_WRITE, 1, 64, 0, 7);
    emit(b, 3, OP_RUN, OP_STEP, 5);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * UC loopback (INIT -> RTR with UC's mask): a receive, a SEND of two
     * packets, a WRITE with immediate, a READ (not a UC operation)
     */
    seed_setup(b, RNIC_QPT_UC);
    for (i = 0; i < 2; i++) {
        uint8_t me = i ? 1 : 0, other = i ? 0 : 1;

        seed_modify(b, me, RNIC_QPS_INIT, 0, 0, 0, 0);
        seed_modify(b, me, RNIC_QPS_RTR, 6, me, other, other);
        seed_modify(b, me, RNIC_QPS_RTS, 5, me, other, other);
    }
    seed_recv(b, 1, 1, 4096, 0x2000);
    seed_recv(b, 1, 2, 256, 0x3000);
    emit(b, 1, OP_RUN);
    seed_send(b, 0, 1, RNIC_WR_SEND, 1, 1500, 0);
    seed_send(b, 0, 2, RNIC_WR_RDMA_WRITE_IMM, 2, 64, 0);
    seed_send(b, 0, 3, RNIC_WR_RDMA_READ, 1, 64, 0x800);
    emit(b, 3, OP_RUN, OP_STEP, 10);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /*
     * UD multicast: QP 1 joins ::ffff:224.0.0.1 (gid_of 0x80), receives,
     * QP 0 sends to the group (loopback and wire), a frame from the wire
     */
    seed_setup(b, RNIC_QPT_UD);
    for (i = 0; i < 2; i++) {
        seed_modify(b, i, RNIC_QPS_INIT, 3, 0, 0, 0);
        seed_modify(b, i, RNIC_QPS_RTR, 4, 0, 0, 0);
        seed_modify(b, i, RNIC_QPS_RTS, 5, 0, 0, 0);
    }
    ADMIN(b, RNIC_CMD_ATTACH_MCAST, 0, 0x80, 1);
    RUN(b);
    seed_recv(b, 1, 1, 256, 0);
    emit(b, 12, OP_SEND, 1, 0, 2, RNIC_WR_SEND, RNIC_WQE_SIGNALED, 1,
         0, 0, 0, 0, 0);
    emit(b, 5, 1, 0, 0x10, 0, 7);       /* remote address: unused */
    emit(b, 5, 1, 1, 0, 0x80, 0);       /* UD: to the group */
    emit(b, 6, 64, 0, 0, 0, 0, 7);
    emit(b, 11, OP_FRAME, 0, 2, 0, 0, 0x64, 0, 0, 0, 0, 0);
    emit(b, 3, OP_RUN, OP_STEP, 5);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /* UD: two QPs, frames from the wire to them and a structured READ */
    seed_setup(b, RNIC_QPT_UD);
    for (i = 0; i < 2; i++) {
        seed_modify(b, i, RNIC_QPS_INIT, 3, 0, 0, 0);
        seed_modify(b, i, RNIC_QPS_RTR, 4, 0, 0, 0);
        seed_modify(b, i, RNIC_QPS_RTS, 5, 0, 0, 0);
    }
    seed_recv(b, 0, 1, 256, 0);
    emit(b, 11, OP_FRAME, 0, 2, 0, 0, 0x64, 0, 0, 0, 0, 0);
    emit(b, 3, OP_RUN, OP_STEP, 5);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /* RC toward the peer (host 3): requests out, answers in */
    seed_setup(b, RNIC_QPT_RC);
    seed_modify(b, 0, RNIC_QPS_INIT, 0, 0, 0, 0);
    seed_modify(b, 0, RNIC_QPS_RTR, 1, 0, 2, 0x77);
    seed_modify(b, 0, RNIC_QPS_RTS, 2, 0, 2, 0x77);
    seed_send(b, 0, 2, RNIC_WR_RDMA_READ, 1, 64, 0);
    emit(b, 1, OP_RUN);
    emit(b, 13, OP_FRAME, 0, 2, 0, 0x0d, 0, 100, 0, 0, 0, 0, 0, 0);
    emit(b, 13, OP_FRAME, 0, 2, 0, 0x11, 0, 101, 0, 0, 0, 0, 0, 0);
    emit(b, 4, OP_RUN, OP_STEP, 20, OP_RUN);
    fuzz_write_seed_bytes(dir, b);
    g_byte_array_set_size(b, 0);

    /* Ethernet: rings, descriptors, TX and RX */
    emit(b, 6, OP_REG, 16, 0, 0, 0, 0);
    emit(b, 6, OP_REG, 17, 0, 0, 0, 0);
    emit(b, 6, OP_REG, 14, 4, 0, 0, 0);
    emit(b, 6, OP_REG, 15, 4, 0, 0, 0);
    for (i = 0; i < 4; i++) {
        emit(b, 8, OP_ETH, 1, i, 0, 0, 8, i, 0);
        emit(b, 9, OP_ETH, 0, i, 0, 64, 0, i, 1, 1);
    }
    emit(b, 6, OP_REG, 7, 0x13, 0, 0, 0);
    emit(b, 6, OP_REG, 13, 4, 0, 0, 0);
    emit(b, 6, OP_REG, 12, 4, 0, 0, 0);
    emit(b, 1, OP_RUN);
    fuzz_write_seed_bytes(dir, b);
    write_bound_seeds(dir, b);
    g_byte_array_unref(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    RnicEngineConfig cfg;

    rnic_engine_config_defaults(&cfg);
    cfg.max_qp = 64;
    cfg.max_cq = 64;
    cfg.max_mr = 256;
    cfg.max_pd = 32;
    cfg.max_srq = 16;
    cfg.scm_pages = WIN_SIZE / PAGE;
    cfg.scm_persistent = 1;
    H.ram = g_malloc0(RAM_SIZE);
    H.win = g_malloc0(WIN_SIZE);
    H.win_lo = WIN_SIZE;
    H.win_hi = 0;
    H.e = rnic_engine_new(&cfg, &host_ops, NULL);
#ifdef FUZZ_WQC_DIFF
    H.cfg = cfg;
#endif
#ifdef FUZZ_WQC_DIFF
    fuzz_calls_init("fuzz-wqc-diff");
#else
    fuzz_calls_init("fuzz-device");
#endif
    fuzz_seeds(*argc, *argv, write_seeds);
    return 0;
}
