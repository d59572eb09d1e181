/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU rnic device: the PCIe function around the RNIC engine.
 *
 * This file is the glue only: QOM/qdev properties, BARs, MSI-X, the NIC
 * backend, the bottom half and timer the engine asks for (and doorbell
 * work done in the MMIO write itself, RnicHostOps.run_now), reset and
 * migration. Everything that is "the hardware" lives in engine/ and is
 * reached through rnic-engine.h; the engine reaches QEMU through the
 * RnicHostOps below (pci_dma_* so that a vIOMMU is honoured).
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "migration/misc.h"
#include "migration/options.h"
#include "migration/postcopy-ram.h"
#include "net/eth.h"
#include "net/net.h"
#include "qemu/iov.h"
#include "qemu/range.h"
#include "system/dma.h"
#include "system/runstate.h"
#include "system/system.h"
#include "rnic.h"
#include "rnic/rnic-abi-names.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Host operations for the engine                                      */
/* ------------------------------------------------------------------ */

/*
 * The PCI function of the device, for the per-frame paths (DMA, MSI-X,
 * can_receive): PCI_DEVICE() is a checked QOM cast (qom-cast-debug is
 * the default), too dear once per frame (docs/design.md "Performance").
 */
static inline PCIDevice *rnic_pci(RnicState *s)
{
    return &s->parent_obj;
}

/*
 * Guest memory through the PCI function's address space; the engine's
 * window range (RNIC_SCM_DMA_BASE and up) is the device's own memory.
 */
static int rnic_host_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    RnicState *s = opaque;
    void *p;

    if (addr >= RNIC_SCM_DMA_BASE) {
        p = rnic_window_ptr(s, addr, len);
        if (!p) {
            return -1;
        }
        memcpy(buf, p, len);
        return 0;
    }
    return pci_dma_read(rnic_pci(s), addr, buf, len) == MEMTX_OK ? 0 : -1;
}

static int rnic_host_dma_write(void *opaque, uint64_t addr, const void *buf,
                               size_t len)
{
    RnicState *s = opaque;
    void *p;

    if (addr >= RNIC_SCM_DMA_BASE) {
        p = rnic_window_ptr(s, addr, len);
        if (!p) {
            return -1;
        }
        if (len == 8 && QEMU_IS_ALIGNED(addr, 8)) {
            /* ATOMIC WRITE, ATOMIC8: one store, never seen half done */
            qatomic_set((uint64_t *)p, ldq_he_p(buf));
        } else {
            memcpy(p, buf, len);
        }
        return 0;
    }
    return pci_dma_write(rnic_pci(s), addr, buf, len) == MEMTX_OK ? 0 : -1;
}

/*
 * Direct access to guest RAM for the length of one engine call (the engine
 * unmaps before it returns, so no host pointer outlives an operation). A
 * range that is not plain RAM (MMIO, an IOMMU fault) is not mapped: NULL
 * makes the engine fall back to pci_dma_read/write for it.
 */
static void *rnic_host_dma_map(void *opaque, uint64_t addr, uint64_t *len,
                               bool is_write)
{
    PCIDevice *pci_dev = rnic_pci(opaque);
    DMADirection dir = is_write ? DMA_DIRECTION_FROM_DEVICE
                                : DMA_DIRECTION_TO_DEVICE;
    dma_addr_t plen = *len;
    void *p;

    if (addr >= RNIC_SCM_DMA_BASE) {
        /* the window: RAM of the device itself, nothing to unmap */
        RnicWindow *w = &((RnicState *)opaque)->window;
        uint64_t off = addr - RNIC_SCM_DMA_BASE;

        if (!w->mr || off >= w->size) {
            return NULL;
        }
        *len = MIN(*len, w->size - off);
        return w->host + off;
    }
    /* unassigned or faulting ranges go the checked way (errors reported) */
    if (!dma_memory_valid(pci_get_address_space(pci_dev), addr, plen, dir,
                          MEMTXATTRS_UNSPECIFIED)) {
        return NULL;
    }
    p = pci_dma_map(pci_dev, addr, &plen, dir);
    *len = plen;
    return p;
}

static void rnic_host_dma_unmap(void *opaque, void *ptr, uint64_t len,
                                bool is_write, uint64_t access_len)
{
    RnicWindow *w = &((RnicState *)opaque)->window;

    if (w->mr && (uint8_t *)ptr >= w->host &&
        (uint8_t *)ptr < w->host + w->size) {
        return;
    }
    pci_dma_unmap(rnic_pci(opaque), ptr, len,
                  is_write ? DMA_DIRECTION_FROM_DEVICE : DMA_DIRECTION_TO_DEVICE,
                  access_len);
}

static void rnic_host_raise_irq(void *opaque, unsigned vector)
{
    PCIDevice *pci_dev = rnic_pci(opaque);

    if (!msix_enabled(pci_dev)) {
        trace_rnic_irq_masked(vector);
        return;
    }
    trace_rnic_irq(vector);
    msix_notify(pci_dev, vector);
}

static void rnic_host_transmit(void *opaque, const struct iovec *iov, int iovcnt)
{
    RnicState *s = opaque;
    NetClientState *nc = qemu_get_queue(s->nic);

    /*
     * A backend without receive_iov (-netdev stream, dgram, socket) has
     * QEMU's net layer copy the frame into a g_malloc'd buffer, freed after
     * the send; the device's own buffer saves that allocation per frame.
     * (A frame it queues is copied into the queue, so the buffer is free
     * again on return.) Not while a send further up the stack still uses
     * it: a peer on a hub that answers at once can bring the engine back
     * here from inside that send.
     */
    if (!s->tx_frame_busy && iovcnt > 1 && nc->peer &&
        !nc->peer->info->receive_iov &&
        iov_size(iov, iovcnt) <= sizeof(s->tx_frame)) {
        size_t len = iov_to_buf(iov, iovcnt, 0, s->tx_frame,
                                sizeof(s->tx_frame));

        s->tx_frame_busy = true;
        qemu_send_packet(nc, s->tx_frame, len);
        s->tx_frame_busy = false;
        return;
    }
    qemu_sendv_packet(nc, iov, iovcnt);
}

/*
 * While the VM is stopped (paused by the user, the source after the
 * switchover, an incoming migration not yet started) the engine does no
 * DMA, raises no interrupt and sends nothing: a run it asks for waits for
 * rnic_vm_state_change(), and so does its timer.
 */
static void rnic_host_schedule(void *opaque)
{
    RnicState *s = opaque;

    if (!s->vm_running) {
        trace_rnic_run_deferred();
        s->run_deferred = true;
        return;
    }
    qemu_bh_schedule(s->bh);
}

static void rnic_timer_apply(RnicState *s)
{
    if (s->timer_deadline == UINT64_MAX || !s->vm_running) {
        timer_del(s->timer);
    } else {
        timer_mod(s->timer, MIN(s->timer_deadline, (uint64_t)INT64_MAX));
    }
}

static void rnic_host_timer_arm(void *opaque, uint64_t deadline_ns)
{
    RnicState *s = opaque;

    s->timer_deadline = deadline_ns;
    rnic_timer_apply(s);
}

static uint64_t rnic_host_clock_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/*
 * The engine's events (rnic-event.h): each its own trace event; the
 * guest's mistakes go to -d guest_errors as well.
 */
static bool rnic_host_event_enabled(void *opaque, RnicEvent ev)
{
    if ((rnic_event_class(ev) == RNIC_EVC_UB &&
         qemu_loglevel_mask(LOG_GUEST_ERROR)) || ev == RNIC_EV_ERR_CALL_BOUND) {
        return true;
    }
    switch (ev) {
#define RNIC_EVENT_ENABLED(id, name, cls, arity, args)                      \
    case RNIC_EV_##id:                                                      \
        return trace_event_get_state_backends(TRACE_RNIC_##id);
    RNIC_EVENTS(RNIC_EVENT_ENABLED)
#undef RNIC_EVENT_ENABLED
    case RNIC_EV__MAX:
        break;
    }
    return false;
}

/*
 * Each event's trace event rnic_<name>, called from its row of
 * RNIC_EVENTS: the first 'arity' numbers, then the reason.
 */
#define RNIC_TRACE_0(fn, v, why) fn(why)
#define RNIC_TRACE_1(fn, v, why) fn(v[0], why)
#define RNIC_TRACE_2(fn, v, why) fn(v[0], v[1], why)
#define RNIC_TRACE_3(fn, v, why) fn(v[0], v[1], v[2], why)
#define RNIC_TRACE_4(fn, v, why) fn(v[0], v[1], v[2], v[3], why)
#define RNIC_TRACE_5(fn, v, why) fn(v[0], v[1], v[2], v[3], v[4], why)

#define RNIC_TRACE_FN(id, name, cls, arity, args)                           \
    static void rnic_trace_##name(const uint64_t *v, const char *why)       \
    {                                                                       \
        RNIC_TRACE_##arity(trace_rnic_##name, v, why);                      \
    }
RNIC_EVENTS(RNIC_TRACE_FN)
#undef RNIC_TRACE_FN

static const struct {
    void (*trace)(const uint64_t *v, const char *why);
} rnic_event_glue[RNIC_EV__MAX] = {
#define RNIC_EVENT_GLUE(id, name, cls, arity, args)                         \
    [RNIC_EV_##id] = { .trace = rnic_trace_##name },
    RNIC_EVENTS(RNIC_EVENT_GLUE)
#undef RNIC_EVENT_GLUE
};

static void rnic_host_event(void *opaque, RnicEvent ev, const RnicEventArgs *a)
{
    const uint64_t *v = a->v;
    const char *why = a->why ? a->why : "";

    if (ev >= RNIC_EV__MAX) {
        return;
    }
    if (rnic_event_class(ev) == RNIC_EVC_UB &&
        qemu_loglevel_mask(LOG_GUEST_ERROR)) {
        g_autofree char *text = rnic_event_describe(ev, a);

        qemu_log("rnic: %s\n", text);
    }
    if (ev == RNIC_EV_ERR_CALL_BOUND) {
        /* the engine's bug, not the guest's: said once, traced always */
        warn_report_once("rnic: a %s call did more work than its bound "
                         "(%s: %" PRIu64 " > %" PRIu64 "); please report it",
                         rnic_call_name(v[0]), why, v[2], v[3]);
    }
    rnic_event_glue[ev].trace(v, why);
}

static void rnic_host_rx_ready(void *opaque)
{
    RnicState *s = opaque;

    trace_rnic_eth_rx_ready();
    qemu_flush_queued_packets(qemu_get_queue(s->nic));
}

/*
 * A doorbell's work may be done in the doorbell write itself (the vCPU's
 * MMIO exit, under the BQL): the posted message leaves without waiting for
 * the main loop. Not while the VM is stopped: then it waits, as a run does.
 */
static bool rnic_host_run_now(void *opaque)
{
    RnicState *s = opaque;

    return s->vm_running && s->doorbell_inline;
}

static const RnicHostOps rnic_host_ops = {
    .dma_read = rnic_host_dma_read,
    .dma_write = rnic_host_dma_write,
    .dma_map = rnic_host_dma_map,
    .dma_unmap = rnic_host_dma_unmap,
    .raise_irq = rnic_host_raise_irq,
    .transmit = rnic_host_transmit,
    .schedule = rnic_host_schedule,
    .timer_arm = rnic_host_timer_arm,
    .clock_ns = rnic_host_clock_ns,
    .event = rnic_host_event,
    .event_enabled = rnic_host_event_enabled,
    .rx_ready = rnic_host_rx_ready,
    .run_now = rnic_host_run_now,
    .persist = rnic_window_persist,
};

/*
 * The engine's one way in from the main loop: a bottom half guarded by the
 * device's re-entrancy guard, so that an MSI or DMA the guest aimed at the
 * device's own BARs is refused while the engine works (QEMU engages the
 * guard only in MMIO dispatch, guarded bottom halves and NIC delivery).
 * The timer and the link-status callback come here too.
 */
static void rnic_bh(void *opaque)
{
    RnicState *s = opaque;

    if (!s->vm_running) {
        /* scheduled just before the VM stopped */
        s->run_deferred = true;
        return;
    }
    if (s->link_changed) {
        s->link_changed = false;
        rnic_engine_set_link(s->engine, !qemu_get_queue(s->nic)->link_down);
    }
    if (s->timer_due) {
        s->timer_due = false;
        rnic_engine_timer_expired(s->engine);
    }
    rnic_engine_run(s->engine);
}

static void rnic_vm_state_change(void *opaque, bool running, RunState state)
{
    RnicState *s = opaque;

    trace_rnic_vm_state(running, RunState_str(state), s->run_deferred);
    s->vm_running = running;
    rnic_timer_apply(s);
    if (running && s->run_deferred) {
        s->run_deferred = false;
        qemu_bh_schedule(s->bh);
    }
}

static void rnic_timer_cb(void *opaque)
{
    RnicState *s = opaque;

    /* the engine forgets its deadline here too; it arms the next one */
    s->timer_deadline = UINT64_MAX;
    s->timer_due = true;
    qemu_bh_schedule(s->bh);
}

/* ------------------------------------------------------------------ */
/* BAR0: registers                                                      */
/* ------------------------------------------------------------------ */

static void rnic_update_nic_info(RnicState *s);

static uint64_t rnic_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    RnicState *s = opaque;
    RnicAccessResult r;
    uint32_t value;

    if (size != 4 || (addr & 3)) {
        RNIC_GUEST_ERROR(trace_rnic_ub_reg_access(addr, size,
                                                  "bad access size"),
                         "register read at 0x%" HWADDR_PRIx " of size %u: "
                         "registers are 32-bit, aligned", addr, size);
        return 0;
    }
    r = rnic_engine_reg_read(s->engine, addr, &value);
    if (r != RNIC_ACCESS_OK) {
        RNIC_GUEST_ERROR(trace_rnic_ub_reg_access(addr, size,
                                                  rnic_access_result_str(r)),
                         "register read at 0x%" HWADDR_PRIx ": %s", addr,
                         rnic_access_result_str(r));
        return 0;
    }
    trace_rnic_reg_read(addr, value);
    return value;
}

static void rnic_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    RnicState *s = opaque;
    RnicAccessResult r;

    if (size != 4 || (addr & 3)) {
        RNIC_GUEST_ERROR(trace_rnic_ub_reg_access(addr, size,
                                                  "bad access size"),
                         "register write at 0x%" HWADDR_PRIx " of size %u: "
                         "registers are 32-bit, aligned", addr, size);
        return;
    }
    trace_rnic_reg_write(addr, val);
    r = rnic_engine_reg_write(s->engine, addr, val);
    if (addr == RNIC_REG_MAC_LO || addr == RNIC_REG_MAC_HI ||
        addr == RNIC_REG_DEV_CTRL) {
        rnic_update_nic_info(s);    /* 'info network' shows the live MAC */
    }
    if (r != RNIC_ACCESS_OK) {
        RNIC_GUEST_ERROR(trace_rnic_ub_reg_access(addr, size,
                                                  rnic_access_result_str(r)),
                         "register write 0x%" PRIx64 " at 0x%" HWADDR_PRIx
                         ": %s", val, addr, rnic_access_result_str(r));
    }
}

static const MemoryRegionOps rnic_regs_ops = {
    .read = rnic_regs_read,
    .write = rnic_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* all sizes reach the handlers, which refuse and log the wrong ones */
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* BAR2: doorbells                                                      */
/* ------------------------------------------------------------------ */

static uint64_t rnic_db_read(void *opaque, hwaddr addr, unsigned size)
{
    RnicState *s = opaque;
    uint64_t value;

    if (size == 8 && rnic_engine_doorbell_read(s->engine,
                                               addr % RNIC_DB_PAGE_SIZE,
                                               &value) == RNIC_ACCESS_OK) {
        return value;
    }
    RNIC_GUEST_ERROR(trace_rnic_ub_doorbell_access(addr, size, "read"),
                     "doorbell read at 0x%" HWADDR_PRIx " of size %u: "
                     "doorbells are write-only but for the 64-bit clock at "
                     "offset 0x%x", addr, size, RNIC_DB_CLOCK);
    return 0;
}

static void rnic_db_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    RnicState *s = opaque;
    uint32_t page = addr / RNIC_DB_PAGE_SIZE;
    uint32_t offset = addr % RNIC_DB_PAGE_SIZE;
    RnicAccessResult r;

    if (size != 8 || (addr & 7)) {
        RNIC_GUEST_ERROR(trace_rnic_ub_doorbell_access(addr, size,
                                                       "bad access size"),
                         "doorbell write at 0x%" HWADDR_PRIx " of size %u: "
                         "doorbells are aligned 64-bit stores", addr, size);
        return;
    }
    trace_rnic_doorbell(page, offset, val);
    r = rnic_engine_doorbell(s->engine, page, offset, val);
    if (r != RNIC_ACCESS_OK) {
        RNIC_GUEST_ERROR(trace_rnic_ub_doorbell_access(addr, size,
                                                 rnic_access_result_str(r)),
                         "doorbell 0x%" PRIx64 " at page %u offset 0x%x: %s",
                         val, page, offset, rnic_access_result_str(r));
    }
}

static const MemoryRegionOps rnic_db_ops = {
    .read = rnic_db_read,
    .write = rnic_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 8 },
    .impl = { .min_access_size = 1, .max_access_size = 8 },
};

/* ------------------------------------------------------------------ */
/* Network backend                                                      */
/* ------------------------------------------------------------------ */

static ssize_t rnic_nc_receive_iov(NetClientState *nc, const struct iovec *iov,
                                   int iovcnt)
{
    RnicState *s = qemu_get_nic_opaque(nc);
    size_t size = iov_size(iov, iovcnt);

    if (!rnic_engine_receive(s->engine, iov, iovcnt)) {
        /* no RX buffer: the net layer queues it until rx_ready */
        trace_rnic_eth_rx_queued(size);
        return 0;
    }
    trace_rnic_eth_rx(size);
    return size;
}

static ssize_t rnic_nc_receive(NetClientState *nc, const uint8_t *buf,
                               size_t size)
{
    const struct iovec iov = { .iov_base = (uint8_t *)buf, .iov_len = size };

    return rnic_nc_receive_iov(nc, &iov, 1);
}

static bool rnic_nc_can_receive(NetClientState *nc)
{
    RnicState *s = qemu_get_nic_opaque(nc);
    PCIDevice *pci_dev = rnic_pci(s);

    /* like e1000: no DMA without bus mastering, keep the frames queued */
    if (!(pci_dev->config[PCI_COMMAND] & PCI_COMMAND_MASTER)) {
        return false;
    }
    return rnic_engine_can_receive(s->engine);
}

static void rnic_nc_link_status_changed(NetClientState *nc)
{
    RnicState *s = qemu_get_nic_opaque(nc);

    trace_rnic_eth_link(!nc->link_down);
    s->link_changed = true;
    qemu_bh_schedule(s->bh);
}

/* The MAC the guest programmed (RNIC_REG_MAC_*), not necessarily conf's. */
static void rnic_current_mac(RnicState *s, uint8_t *mac)
{
    uint32_t lo = 0, hi = 0;

    rnic_engine_reg_read(s->engine, RNIC_REG_MAC_LO, &lo);
    rnic_engine_reg_read(s->engine, RNIC_REG_MAC_HI, &hi);
    mac[0] = lo;
    mac[1] = lo >> 8;
    mac[2] = lo >> 16;
    mac[3] = lo >> 24;
    mac[4] = hi;
    mac[5] = hi >> 8;
}

static void rnic_update_nic_info(RnicState *s)
{
    uint8_t mac[ETH_ALEN];

    rnic_current_mac(s, mac);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), mac);
}

#define RNIC_ETH_P_RARP 0x8035

/*
 * Self-announce (after incoming migration, or QMP announce-self): QEMU's
 * announce timer has just sent a RARP for conf.macaddr, as for every NIC
 * (e1000 and e1000e have nothing more). When the guest programmed another
 * MAC, that is the one its peers must learn: announce it as well.
 */
static void rnic_nc_announce(NetClientState *nc)
{
    RnicState *s = qemu_get_nic_opaque(nc);
    uint8_t buf[60];
    uint8_t mac[ETH_ALEN];

    rnic_current_mac(s, mac);
    if (!memcmp(mac, s->conf.macaddr.a, ETH_ALEN)) {
        return;
    }
    memset(buf, 0, sizeof(buf));
    memset(buf, 0xff, ETH_ALEN);                    /* broadcast */
    memcpy(buf + 6, mac, ETH_ALEN);
    stw_be_p(buf + 12, RNIC_ETH_P_RARP);
    stw_be_p(buf + 14, 1);                          /* Ethernet */
    stw_be_p(buf + 16, ETH_P_IP);
    buf[18] = ETH_ALEN;
    buf[19] = 4;
    stw_be_p(buf + 20, 3);                          /* reverse request */
    memcpy(buf + 22, mac, ETH_ALEN);                /* sender */
    memcpy(buf + 32, mac, ETH_ALEN);                /* target */
    trace_rnic_eth_announce();
    qemu_send_packet_raw(nc, buf, sizeof(buf));
}

static NetClientInfo rnic_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = rnic_nc_can_receive,
    .receive = rnic_nc_receive,
    .receive_iov = rnic_nc_receive_iov,
    .link_status_changed = rnic_nc_link_status_changed,
    .announce = rnic_nc_announce,
};

static void rnic_write_config(PCIDevice *pci_dev, uint32_t address,
                              uint32_t val, int len)
{
    RnicState *s = RNIC(pci_dev);

    pci_default_write_config(pci_dev, address, val, len);
    if (range_covers_byte(address, len, PCI_COMMAND) &&
        (pci_dev->config[PCI_COMMAND] & PCI_COMMAND_MASTER)) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

/* ------------------------------------------------------------------ */
/* Realize / exit                                                       */
/* ------------------------------------------------------------------ */

static bool rnic_check_params(RnicState *s, Error **errp)
{
    g_autofree char *msg = NULL;

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    memcpy(s->cfg.mac, s->conf.macaddr.a, sizeof(s->cfg.mac));
    if (!rnic_window_setup(s, errp)) {
        return false;
    }
    /*
     * '-nic …,model=rnic' sets every NIC's "vectors" property to 0 (QEMU
     * 10.0's net_param_nic leaves NICInfo.nvectors 0, not "unspecified",
     * and qdev_set_nic_properties copies it): 0 means the default.
     */
    if (s->cfg.msix_vectors == 0) {
        s->cfg.msix_vectors = RNIC_DEFAULT_VECTORS;
    }
    msg = rnic_engine_config_check(&s->cfg);
    if (msg) {
        error_setg(errp, "rnic: %s", msg);
        return false;
    }
    return true;
}

static const VMStateDescription rnic_config_vmstate;

/*
 * Postcopy is refused (docs/migration.md "Postcopy"): on a postcopy
 * destination the device would run (DMA, rings, timers) while guest pages
 * are still missing, each access blocking QEMU's main loop on a page
 * fault; the peers' retry budget is then bounded by page-fault latency, not
 * by the switchover, and none of it is tested. One notifier for all rnic
 * devices: setting the postcopy-ram capability, or a destination being
 * advised postcopy, fails with this error while an rnic exists; on the
 * source, a migration with postcopy-ram fails at its setup (the source
 * keeps running).
 */
static unsigned rnic_postcopy_refusers;

static int rnic_postcopy_notify(NotifierWithReturn *notifier, void *data,
                                Error **errp)
{
    struct PostcopyNotifyData *pnd = data;

    if (pnd->reason == POSTCOPY_NOTIFY_PROBE ||
        pnd->reason == POSTCOPY_NOTIFY_INBOUND_ADVISE) {
        error_setg(errp, "rnic: postcopy migration is not supported: the "
                   "device's DMA would fault on pages not yet migrated; "
                   "use precopy");
        return -ENOTSUP;
    }
    return 0;
}

static NotifierWithReturn rnic_postcopy_notifier = {
    .notify = rnic_postcopy_notify,
};

/* The source: a migration with postcopy-ram fails at its setup. */
static int rnic_postcopy_setup_notify(NotifierWithReturn *notifier,
                                      MigrationEvent *e, Error **errp)
{
    if (e->type == MIG_EVENT_PRECOPY_SETUP && migrate_postcopy_ram()) {
        error_setg(errp, "rnic: postcopy migration is not supported: the "
                   "device's DMA would fault on pages not yet migrated; "
                   "use precopy (disable the postcopy-ram capability)");
        return -ENOTSUP;
    }
    return 0;
}

static NotifierWithReturn rnic_postcopy_setup_notifier;

static void rnic_postcopy_refuse(bool refuse)
{
    if (refuse && rnic_postcopy_refusers++ == 0) {
        postcopy_add_notifier(&rnic_postcopy_notifier);
        migration_add_notifier(&rnic_postcopy_setup_notifier,
                               rnic_postcopy_setup_notify);
    } else if (!refuse && --rnic_postcopy_refusers == 0) {
        postcopy_remove_notifier(&rnic_postcopy_notifier);
        migration_remove_notifier(&rnic_postcopy_setup_notifier);
    }
}

static void rnic_init_state(RnicState *s)
{
    DeviceState *dev = DEVICE(s);

    s->bh = qemu_bh_new_guarded(rnic_bh, s, &dev->mem_reentrancy_guard);
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rnic_timer_cb, s);
    s->timer_deadline = UINT64_MAX;
    s->vm_running = runstate_is_running();
    s->vm_state_entry = qdev_add_vm_change_state_handler(dev,
                                                         rnic_vm_state_change,
                                                         s);
    s->engine = rnic_engine_new(&s->cfg, &rnic_host_ops, s);
    rnic_engine_set_wqe_cache(s->engine, s->wqe_cache);
    rnic_postcopy_refuse(true);
    vmstate_register_any(VMSTATE_IF(s), &rnic_config_vmstate, s);
}

static bool rnic_init_pci(RnicState *s, Error **errp)
{
    PCIDevice *pci_dev = PCI_DEVICE(s);
    uint8_t *conf = pci_dev->config;
    unsigned i;

    pci_config_set_vendor_id(conf, s->cfg.vendor_id);
    pci_config_set_device_id(conf, s->cfg.device_id);
    pci_set_word(conf + PCI_SUBSYSTEM_VENDOR_ID, RNIC_PCI_SUBSYS_VENDOR);
    pci_set_word(conf + PCI_SUBSYSTEM_ID, RNIC_PCI_SUBSYS_ID);
    conf[PCI_INTERRUPT_PIN] = 0;    /* MSI-X only */

    /* BAR0: the registers, then MSI-X (BAR4 is the memory window's) */
    memory_region_init(&s->bar0, OBJECT(s), "rnic-bar0", RNIC_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &rnic_regs_ops, s,
                          "rnic-regs", RNIC_REGS_SIZE);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    pci_register_bar(pci_dev, RNIC_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);

    memory_region_init_io(&s->doorbells, OBJECT(s), &rnic_db_ops, s,
                          "rnic-doorbells",
                          pow2ceil((uint64_t)s->cfg.db_pages * RNIC_DB_PAGE_SIZE));
    pci_register_bar(pci_dev, RNIC_BAR_DOORBELLS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->doorbells);

    if (pcie_endpoint_cap_init(pci_dev, 0x80) < 0) {
        error_setg(errp, "rnic: cannot add the PCIe capability");
        return false;
    }
    QEMU_BUILD_BUG_ON(RNIC_MSIX_TABLE_OFFSET + RNIC_CFG_MAX_VECTORS *
                      PCI_MSIX_ENTRY_SIZE > RNIC_BAR0_SIZE ||
                      RNIC_MSIX_PBA_OFFSET + RNIC_CFG_MAX_VECTORS / 8 >
                      RNIC_MSIX_TABLE_OFFSET);
    if (msix_init(pci_dev, s->cfg.msix_vectors, &s->bar0, RNIC_BAR_MSIX,
                  RNIC_MSIX_TABLE_OFFSET, &s->bar0, RNIC_BAR_MSIX,
                  RNIC_MSIX_PBA_OFFSET, 0, errp)) {
        return false;
    }
    if (!rnic_window_realize(s, errp)) {
        msix_uninit(pci_dev, &s->bar0, &s->bar0);
        return false;
    }
    for (i = 0; i < s->cfg.msix_vectors; i++) {
        msix_vector_use(pci_dev, i);
    }
    return true;
}

static void rnic_init_net(RnicState *s)
{
    DeviceState *dev = DEVICE(s);

    s->nic = qemu_new_nic(&rnic_net_info, &s->conf, object_get_typename(OBJECT(s)),
                          dev->id, &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    /* a link set down before the device existed (or by a hub) */
    rnic_engine_set_link(s->engine, !qemu_get_queue(s->nic)->link_down);
}

/*
 * The migration buffers (the state image, the configuration record) hold
 * bytes around a save or load only: what the engine wrote, then dropped.
 */
static void rnic_stream_buf_set(uint8_t **buf, uint32_t *len, GByteArray *a)
{
    g_free(*buf);
    *len = a->len;
    *buf = g_byte_array_free(a, FALSE);
}

static void rnic_stream_buf_drop(uint8_t **buf, uint32_t *len)
{
    g_free(*buf);
    *buf = NULL;
    *len = 0;
}

static void rnic_free_state(RnicState *s)
{
    vmstate_unregister(VMSTATE_IF(s), &rnic_config_vmstate, s);
    if (s->vm_state_entry) {
        qemu_del_vm_change_state_handler(s->vm_state_entry);
        s->vm_state_entry = NULL;
    }
    if (s->timer) {
        timer_free(s->timer);
        s->timer = NULL;
    }
    if (s->bh) {
        qemu_bh_delete(s->bh);
        s->bh = NULL;
    }
    if (s->engine) {
        rnic_postcopy_refuse(false);
    }
    rnic_engine_free(s->engine);
    s->engine = NULL;
}

static void rnic_realize(PCIDevice *pci_dev, Error **errp)
{
    ERRP_GUARD();
    RnicState *s = RNIC(pci_dev);

    if (!rnic_check_params(s, errp)) {
        return;
    }
    rnic_init_state(s);
    if (!rnic_init_pci(s, errp)) {
        rnic_free_state(s);
        return;
    }
    rnic_init_net(s);
    trace_rnic_realize(s->cfg.msix_vectors, s->cfg.db_pages);
}

static void rnic_exit(PCIDevice *pci_dev)
{
    RnicState *s = RNIC(pci_dev);

    qemu_del_nic(s->nic);
    msix_unuse_all_vectors(pci_dev);
    msix_uninit(pci_dev, &s->bar0, &s->bar0);
    /*
     * A subregion holds a reference to its owner, the device: left in
     * BAR0 it would keep the device alive after unplug, never finalized
     * (no DEVICE_DELETED event, so libvirt's detach never completes, and
     * the engine's memory leaks).
     */
    memory_region_del_subregion(&s->bar0, &s->regs);
    rnic_window_exit(s);
    rnic_free_state(s);
    rnic_stream_buf_drop(&s->state_buf, &s->state_len);
    rnic_stream_buf_drop(&s->config_buf, &s->config_len);
}

static void rnic_reset_hold(Object *obj, ResetType type)
{
    RnicState *s = RNIC(obj);

    trace_rnic_reset();
    timer_del(s->timer);
    qemu_bh_cancel(s->bh);
    s->run_deferred = false;
    s->timer_due = false;
    rnic_engine_reset(s->engine);
    if (s->link_changed) {
        s->link_changed = false;
        rnic_engine_set_link(s->engine, !qemu_get_queue(s->nic)->link_down);
    }
    rnic_update_nic_info(s);
}

/* ------------------------------------------------------------------ */
/* Migration                                                            */
/* ------------------------------------------------------------------ */

/* Totals over every network context, for the trace events. */
typedef struct RnicTableTotals {
    uint32_t mrs, qps;
} RnicTableTotals;

static void rnic_sum_net_ctx(void *opaque, const RnicNetCtxInfo *info)
{
    RnicTableTotals *t = opaque;

    t->mrs += info->mrs;
    t->qps += info->qps;
}

/* After a load: what each network context's table was rebuilt from. */
static void rnic_trace_rebuild(void *opaque, const RnicNetCtxInfo *info)
{
    trace_rnic_state_rebuild_ctx(info->handle,
                                 info->net_type == RNIC_NET_VLAN ? "vlan"
                                                                 : "vni",
                                 info->net_id, info->mrs, info->log_replayed,
                                 info->qps);
}

static int rnic_pre_save(void *opaque)
{
    RnicState *s = opaque;
    GByteArray *img = g_byte_array_new();
    RnicTableTotals t = { 0 };
    int64_t start = qemu_clock_get_us(QEMU_CLOCK_REALTIME);

    rnic_engine_save(s->engine, img);
    rnic_stream_buf_set(&s->state_buf, &s->state_len, img);
    rnic_engine_foreach_net_ctx(s->engine, rnic_sum_net_ctx, &t);
    trace_rnic_state_save(s->state_len, t.mrs, t.qps,
                          qemu_clock_get_us(QEMU_CLOCK_REALTIME) - start);
    return 0;
}

static int rnic_post_save(void *opaque)
{
    RnicState *s = opaque;

    rnic_stream_buf_drop(&s->state_buf, &s->state_len);
    return 0;
}

/*
 * Runs while the destination is still paused: the engine rebuilds its
 * tables (every STag and QPN the source's) and asks for a run and its
 * timers, which rnic_vm_state_change() grants once the VM runs. No
 * interrupt, no DMA, no frame from here.
 */
static int rnic_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    g_autofree char *err = NULL;
    uint32_t status = 0;
    int64_t start = qemu_clock_get_us(QEMU_CLOCK_REALTIME);
    bool ok;

    ok = rnic_engine_load(s->engine, s->state_buf, s->state_len, &err);
    trace_rnic_state_load(s->state_len, ok,
                          qemu_clock_get_us(QEMU_CLOCK_REALTIME) - start);
    rnic_stream_buf_drop(&s->state_buf, &s->state_len);
    if (!ok) {
        error_report("rnic: incoming device state refused: %s", err);
        return -EINVAL;
    }
    rnic_engine_foreach_net_ctx(s->engine, rnic_trace_rebuild, NULL);
    /*
     * Like e1000 and virtio-net: the link state is device state and
     * migrates (nc->link_down itself does not). Frames queued for the
     * device are flushed by the net layer when the VM starts running.
     */
    rnic_engine_reg_read(s->engine, RNIC_REG_DEV_STATUS, &status);
    qemu_get_queue(s->nic)->link_down = !(status & RNIC_STATUS_LINK_UP);
    rnic_update_nic_info(s);
    return 0;
}

/*
 * Early-setup section: the configuration travels when the migration
 * starts, so a destination that cannot take this device's state refuses
 * before the source stops (and a destination without an rnic fails there
 * with QEMU's "Unknown savevm section").
 */
static int rnic_config_pre_save(void *opaque)
{
    RnicState *s = opaque;
    GByteArray *rec = g_byte_array_new();

    rnic_engine_save_config(s->engine, rec);
    rnic_stream_buf_set(&s->config_buf, &s->config_len, rec);
    return 0;
}

static int rnic_config_post_save(void *opaque)
{
    RnicState *s = opaque;

    rnic_stream_buf_drop(&s->config_buf, &s->config_len);
    return 0;
}

static int rnic_config_post_load(void *opaque, int version_id)
{
    RnicState *s = opaque;
    g_autofree char *err = NULL;
    bool ok;

    ok = rnic_engine_check_config(s->engine, s->config_buf, s->config_len,
                                  &err);
    rnic_stream_buf_drop(&s->config_buf, &s->config_len);
    if (!ok) {
        trace_rnic_err_state_config(err);
        error_report("rnic: incoming migration refused: %s", err);
        return -EINVAL;
    }
    trace_rnic_state_config_ok();
    return 0;
}

/*
 * Lengths from the migration stream are checked before the buffer they
 * size is allocated (a g_malloc of a length near 4 GiB would abort).
 */
#define RNIC_CONFIG_RECORD_MAX  (64 * KiB)

static bool rnic_config_len_valid(void *opaque, int version_id)
{
    RnicState *s = opaque;

    if (s->config_len > RNIC_CONFIG_RECORD_MAX) {
        trace_rnic_err_stream_len("configuration record", s->config_len,
                                  RNIC_CONFIG_RECORD_MAX);
        error_report("rnic: configuration record of %u bytes in the "
                     "migration stream (at most %u)", s->config_len,
                     (unsigned)RNIC_CONFIG_RECORD_MAX);
        return false;
    }
    return true;
}

static bool rnic_state_len_valid(void *opaque, int version_id)
{
    RnicState *s = opaque;
    uint64_t max = rnic_engine_state_max(s->engine);

    if (s->state_len > max) {
        trace_rnic_err_stream_len("state image", s->state_len, max);
        error_report("rnic: state image of %u bytes in the migration "
                     "stream; this device's images are at most %" PRIu64
                     " bytes (memory-budget-mib=%u)", s->state_len, max,
                     s->cfg.mem_budget_mib);
        return false;
    }
    return true;
}

static const VMStateDescription rnic_config_vmstate = {
    .name = "rnic-config",
    .version_id = 1,
    .minimum_version_id = 1,
    .early_setup = true,
    .pre_save = rnic_config_pre_save,
    .post_save = rnic_config_post_save,
    .post_load = rnic_config_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(config_len, RnicState),
        VMSTATE_VALIDATE("rnic-config length", rnic_config_len_valid),
        VMSTATE_VBUFFER_ALLOC_UINT32(config_buf, RnicState, 0, NULL,
                                     config_len),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription rnic_vmstate = {
    .name = "rnic",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = rnic_pre_save,
    .post_save = rnic_post_save,
    .post_load = rnic_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, RnicState),
        VMSTATE_MSIX(parent_obj, RnicState),
        VMSTATE_UINT32(state_len, RnicState),
        VMSTATE_VALIDATE("rnic state image length", rnic_state_len_valid),
        VMSTATE_VBUFFER_ALLOC_UINT32(state_buf, RnicState, 0, NULL, state_len),
        VMSTATE_END_OF_LIST()
    },
};

/* ------------------------------------------------------------------ */
/* Type                                                                 */
/* ------------------------------------------------------------------ */

static const Property rnic_properties[] = {
    DEFINE_NIC_PROPERTIES(RnicState, conf),
    DEFINE_PROP_UINT32("max-net-ctx", RnicState, cfg.max_net_ctx,
                       RNIC_DEFAULT_MAX_NET_CTX),
    DEFINE_PROP_UINT32("max-qps", RnicState, cfg.max_qp,
                       RNIC_DEFAULT_MAX_QP),
    DEFINE_PROP_UINT32("max-cqs", RnicState, cfg.max_cq,
                       RNIC_DEFAULT_MAX_CQ),
    DEFINE_PROP_UINT32("max-mrs", RnicState, cfg.max_mr,
                       RNIC_DEFAULT_MAX_MR),
    DEFINE_PROP_UINT32("max-pds", RnicState, cfg.max_pd,
                       RNIC_DEFAULT_MAX_PD),
    DEFINE_PROP_UINT32("max-srqs", RnicState, cfg.max_srq,
                       RNIC_DEFAULT_MAX_SRQ),
    DEFINE_PROP_UINT32("max-eqs", RnicState, cfg.max_eq,
                       RNIC_DEFAULT_MAX_EQ),
    DEFINE_PROP_UINT32("doorbell-pages", RnicState, cfg.db_pages,
                       RNIC_DEFAULT_DB_PAGES),
    DEFINE_PROP_UINT32("vectors", RnicState, cfg.msix_vectors,
                       RNIC_DEFAULT_VECTORS),
    DEFINE_PROP_UINT32("max-qp-wr", RnicState, cfg.max_qp_wr,
                       RNIC_DEFAULT_MAX_QP_WR),
    DEFINE_PROP_UINT32("max-cqe", RnicState, cfg.max_cqe,
                       RNIC_DEFAULT_MAX_CQE),
    DEFINE_PROP_UINT32("max-sge", RnicState, cfg.max_sge,
                       RNIC_DEFAULT_MAX_SGE),
    DEFINE_PROP_UINT32("max-inline", RnicState, cfg.max_inline,
                       RNIC_DEFAULT_MAX_INLINE),
    DEFINE_PROP_UINT32("max-mtu", RnicState, cfg.max_mtu,
                       RNIC_DEFAULT_MAX_MTU),
    DEFINE_PROP_UINT32("max-gids", RnicState, cfg.max_gid,
                       RNIC_DEFAULT_MAX_GID),
    DEFINE_PROP_UINT32("max-rd-atomic", RnicState, cfg.max_rd_atomic,
                       RNIC_DEFAULT_MAX_RD_ATOMIC),
    DEFINE_PROP_UINT32("memory-budget-mib", RnicState, cfg.mem_budget_mib,
                       RNIC_DEFAULT_MEM_BUDGET_MIB),
    DEFINE_PROP_UINT32("vendor-id", RnicState, cfg.vendor_id, RNIC_PCI_VENDOR_ID),
    DEFINE_PROP_UINT32("device-id", RnicState, cfg.device_id, RNIC_PCI_DEVICE_ID),
    /* off: doorbell work only in the bottom half (for comparisons) */
    DEFINE_PROP_BOOL("x-doorbell-inline", RnicState, doorbell_inline, true),
    /* off: every WQE's SGEs translated afresh (same results, slower) */
    DEFINE_PROP_BOOL("x-wqe-cache", RnicState, wqe_cache, true),
    /* the memory window (BAR4, regions of kind SCM): docs/usage.md */
    DEFINE_PROP_LINK("scm", RnicState, window.backend, TYPE_MEMORY_BACKEND,
                     HostMemoryBackend *),
    DEFINE_PROP_BOOL("scm-powerfail", RnicState, window.powerfail, false),
};

/*
 * 'x-tables': every network context's mapping table and QPs, one line per
 * entry (docs/migration.md). Read-only, for qom-get in QMP and HMP: a test
 * or an operator compares it before and after a migration.
 */
static char *rnic_get_tables(Object *obj, Error **errp)
{
    RnicState *s = RNIC(obj);

    return s->engine ? rnic_engine_describe_tables(s->engine) : g_strdup("");
}

/*
 * 'x-stats': the device's counters (BAR0 statistics) as "name value"
 * lines, the names ethtool -S shows in the guest. Read-only, for qom-get.
 */
static char *rnic_get_stats(Object *obj, Error **errp)
{
    RnicState *s = RNIC(obj);
    GString *out = g_string_new(NULL);
    unsigned i;

    for (i = 0; s->engine && i < RNIC_STAT_COUNT; i++) {
        const char *name = rnic_abi_stat_name(i);

        if (name) {
            g_string_append_printf(out, "%s %" PRIu64 "\n", name,
                                   rnic_engine_stat(s->engine, i));
        } else {
            g_string_append_printf(out, "stat_%u %" PRIu64 "\n", i,
                                   rnic_engine_stat(s->engine, i));
        }
    }
    return g_string_free(out, false);
}

static void rnic_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    ResettableClass *rc = RESETTABLE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);

    pc->realize = rnic_realize;
    pc->exit = rnic_exit;
    pc->config_write = rnic_write_config;
    pc->vendor_id = RNIC_PCI_VENDOR_ID;
    pc->device_id = RNIC_PCI_DEVICE_ID;
    pc->revision = RNIC_PCI_REVISION;
    pc->class_id = PCI_CLASS_NETWORK_ETHERNET;

    rc->phases.hold = rnic_reset_hold;

    dc->desc = "RoCEv2 RDMA NIC (qemu-rnic)";
    dc->vmsd = &rnic_vmstate;
    device_class_set_props(dc, rnic_properties);
    object_class_property_add_str(oc, "x-tables", rnic_get_tables, NULL);
    object_class_property_set_description(oc, "x-tables",
        "per-network-context mapping tables and QPs (read-only)");
    object_class_property_add_str(oc, "x-stats", rnic_get_stats, NULL);
    object_class_property_set_description(oc, "x-stats",
        "the device's counters, one 'name value' line each (read-only)");
    rnic_window_class_init(oc);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void rnic_instance_init(Object *obj)
{
    RnicState *s = RNIC(obj);

    device_add_bootindex_property(obj, &s->conf.bootindex, "bootindex",
                                  "/ethernet-phy@0", DEVICE(obj));
}

static const TypeInfo rnic_info = {
    .name = TYPE_RNIC,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RnicState),
    .instance_init = rnic_instance_init,
    .class_init = rnic_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void rnic_register_types(void)
{
    type_register_static(&rnic_info);
}

type_init(rnic_register_types)
