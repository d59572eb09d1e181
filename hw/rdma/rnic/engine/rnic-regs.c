/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: BAR0 registers (identity, limits, control, admin queue setup,
 * statistics). Layout in include/rnic/rnic-abi.h, prose in docs/spec.md.
 */
#include <string.h>
#include "rnic-engine-int.h"
#include "rnic-admin.h"

#define RNIC_CTRL_WRITABLE (RNIC_CTRL_ENABLE | RNIC_CTRL_RESET | RNIC_CTRL_AQ_IRQ)

static uint64_t rnic_caps(const RnicEngine *e)
{
    return RNIC_CAP_RC | RNIC_CAP_UD | RNIC_CAP_SRQ | RNIC_CAP_ATOMIC |
           RNIC_CAP_FAST_REG | RNIC_CAP_INLINE | RNIC_CAP_NET_CTX |
           RNIC_CAP_MIGRATION | RNIC_CAP_SEND_INV | RNIC_CAP_MR_LEVEL2 |
           RNIC_CAP_ETH | RNIC_CAP_PD_MULTI_NET | RNIC_CAP_DEREG_ANY_KEY |
           RNIC_CAP_FLUSH_GLOBAL | RNIC_CAP_ATOMIC_WRITE | RNIC_CAP_UC |
           RNIC_CAP_MW | RNIC_CAP_SRQ_RESIZE | RNIC_CAP_MCAST |
           RNIC_CAP_REREG_MR | RNIC_CAP_CQE_TIMESTAMP |
           RNIC_CAP_QP_STATS | RNIC_CAP_MAPPED | rnic_scm_caps(e);
}

void rnic_regs_reset(RnicEngine *e)
{
    RnicRegs *regs = &e->regs;

    memset(regs, 0, sizeof(*regs));
    memcpy(regs->mac, e->cfg.mac, sizeof(regs->mac));
    regs->dev_status = RNIC_STATUS_LINK_UP;
    regs->heartbeat_base_ns = e->ops->clock_ns(e->opaque);
}

static bool rnic_identity_read(RnicEngine *e, uint32_t offset, uint32_t *v)
{
    const RnicEngineConfig *cfg = &e->cfg;

    switch (offset) {
    case RNIC_REG_MAGIC:         *v = RNIC_MAGIC; break;
    case RNIC_REG_ABI_VERSION:   *v = RNIC_ABI_VERSION; break;
    case RNIC_REG_CAPS_LO:       *v = (uint32_t)rnic_caps(e); break;
    case RNIC_REG_CAPS_HI:       *v = (uint32_t)(rnic_caps(e) >> 32); break;
    case RNIC_REG_MAX_NET_CTX:   *v = cfg->max_net_ctx; break;
    case RNIC_REG_MAX_QP:        *v = cfg->max_qp; break;
    case RNIC_REG_MAX_CQ:        *v = cfg->max_cq; break;
    case RNIC_REG_MAX_MR:        *v = cfg->max_mr; break;
    case RNIC_REG_MAX_PD:        *v = cfg->max_pd; break;
    case RNIC_REG_MAX_SRQ:       *v = cfg->max_srq; break;
    case RNIC_REG_MAX_EQ:        *v = cfg->max_eq; break;
    case RNIC_REG_DB_PAGES:      *v = cfg->db_pages; break;
    case RNIC_REG_MSIX_VECTORS:  *v = cfg->msix_vectors; break;
    case RNIC_REG_MAX_QP_WR:     *v = cfg->max_qp_wr; break;
    case RNIC_REG_MAX_CQE:       *v = cfg->max_cqe; break;
    case RNIC_REG_MAX_SGE:       *v = cfg->max_sge; break;
    case RNIC_REG_MAX_INLINE:    *v = cfg->max_inline; break;
    case RNIC_REG_MAX_MTU:       *v = cfg->max_mtu; break;
    case RNIC_REG_MAX_GID:       *v = cfg->max_gid; break;
    case RNIC_REG_MAX_RD_ATOMIC: *v = cfg->max_rd_atomic; break;
    case RNIC_REG_SCM_SIZE_LO:   *v = (uint32_t)rnic_scm_window_size(e); break;
    case RNIC_REG_SCM_SIZE_HI:   *v = rnic_scm_window_size(e) >> 32; break;
    default:
        return false;
    }
    return true;
}

static bool rnic_is_read_only_block(uint32_t offset)
{
    /* identity/limits and statistics: every aligned offset is defined */
    return offset <= RNIC_REG_SCM_SIZE_HI ||
           (offset >= RNIC_REG_STAT_BASE &&
            offset < RNIC_REG_STAT_BASE + 8 * RNIC_STAT_COUNT);
}

RnicAccessResult rnic_engine_reg_read(RnicEngine *e, uint32_t offset,
                                      uint32_t *value)
{
    RnicRegs *regs = &e->regs;

    *value = 0;
    if (rnic_identity_read(e, offset, value)) {
        return RNIC_ACCESS_OK;
    }
    if (offset >= RNIC_REG_STAT_BASE &&
        offset < RNIC_REG_STAT_BASE + 8 * RNIC_STAT_COUNT) {
        uint64_t s = e->stats[(offset - RNIC_REG_STAT_BASE) / 8];

        *value = (offset & 4) ? (uint32_t)(s >> 32) : (uint32_t)s;
        return RNIC_ACCESS_OK;
    }
    switch (offset) {
    case RNIC_REG_DEV_CTRL:     *value = regs->dev_ctrl; break;
    case RNIC_REG_DEV_STATUS:   *value = regs->dev_status; break;
    case RNIC_REG_FATAL_CODE:   *value = regs->fatal_code; break;
    case RNIC_REG_SCRATCH:      *value = regs->scratch; break;
    case RNIC_REG_HEARTBEAT:
        *value = (uint32_t)((e->ops->clock_ns(e->opaque) -
                             regs->heartbeat_base_ns) / 1000000);
        break;
    case RNIC_REG_MAC_LO:
        *value = regs->mac[0] | regs->mac[1] << 8 | regs->mac[2] << 16 |
                 (uint32_t)regs->mac[3] << 24;
        break;
    case RNIC_REG_MAC_HI:
        *value = regs->mac[4] | regs->mac[5] << 8;
        break;
    case RNIC_REG_AQ_BASE_LO:   *value = (uint32_t)regs->aq_base; break;
    case RNIC_REG_AQ_BASE_HI:   *value = (uint32_t)(regs->aq_base >> 32); break;
    case RNIC_REG_ACQ_BASE_LO:  *value = (uint32_t)regs->acq_base; break;
    case RNIC_REG_ACQ_BASE_HI:
        *value = (uint32_t)(regs->acq_base >> 32);
        break;
    case RNIC_REG_AQ_SIZE_LOG2: *value = regs->aq_size_log2; break;
    case RNIC_REG_AQ_TAIL:      *value = regs->aq_tail; break;
    case RNIC_REG_AQ_HEAD:      *value = regs->aq_head; break;
    case RNIC_REG_ACQ_HEAD:     *value = regs->acq_head; break;
    case RNIC_REG_IRQ_TEST:
        return RNIC_ACCESS_WRITE_ONLY;
    case RNIC_REG_ETH_BASE ... RNIC_REG_ETH_END - 1:
        return rnic_eth_reg_read(e, offset, value);
    default:
        return RNIC_ACCESS_UNKNOWN_REG;
    }
    return RNIC_ACCESS_OK;
}

/* Enable: the admin queue configuration must be complete and sane. */
static void rnic_enable(RnicEngine *e)
{
    RnicRegs *regs = &e->regs;

    if (regs->aq_size_log2 < RNIC_AQ_SIZE_LOG2_MIN ||
        regs->aq_size_log2 > RNIC_AQ_SIZE_LOG2_MAX ||
        !regs->aq_base || !regs->acq_base ||
        (regs->aq_base & 0xfff) || (regs->acq_base & 0xfff)) {
        rnic_event(e, UB_ENABLE, "enable with a bad admin queue "
                   "configuration", regs->aq_base, regs->acq_base,
                   regs->aq_size_log2);
        regs->dev_status |= RNIC_STATUS_FATAL;
        regs->fatal_code = RNIC_FATAL_AQ_CONFIG;
        return;
    }
    regs->aq_head = regs->aq_tail = 0;
    regs->acq_head = regs->acq_tail = 0;
    e->scm.cmd_active = false;  /* no SCM_PERSIST goes on */
    regs->dev_status |= RNIC_STATUS_READY;
}

/* Disable: like a reset of everything the admin queue created. */
static void rnic_disable(RnicEngine *e)
{
    RnicRegs *regs = &e->regs;

    rnic_admin_objects_reset(e);
    rnic_doorbells_reset(e);
    regs->dev_status &= ~(RNIC_STATUS_READY | RNIC_STATUS_FATAL);
    regs->fatal_code = RNIC_FATAL_NONE;
    regs->aq_head = regs->aq_tail = 0;
    regs->acq_head = regs->acq_tail = 0;
    e->scm.cmd_active = false;  /* no SCM_PERSIST goes on */
}

RnicAccessResult rnic_regs_ctrl_write(RnicEngine *e, uint32_t value)
{
    RnicRegs *regs = &e->regs;
    bool was_enabled = regs->dev_ctrl & RNIC_CTRL_ENABLE;
    RnicAccessResult res = RNIC_ACCESS_OK;

    if (value & ~RNIC_CTRL_WRITABLE) {
        res = RNIC_ACCESS_BAD_VALUE;    /* reserved bits: logged, ignored */
        value &= RNIC_CTRL_WRITABLE;
    }
    /*
     * From inside an engine call (a host callback re-entered it): the
     * objects that call is using stay until it returns.
     */
    if (e->depth &&
        ((value & RNIC_CTRL_RESET) ||
         (was_enabled && !(value & RNIC_CTRL_ENABLE)))) {
        rnic_event(e, UB_CTRL_NESTED, "reset or disable written from inside "
                   "a device operation: done when it ends", value);
        e->ctrl_deferred = true;
        e->ctrl_value = value;
        return res;
    }
    if (value & RNIC_CTRL_RESET) {
        rnic_engine_reset(e);
        return res;
    }
    regs->dev_ctrl = value;
    if (!was_enabled && (value & RNIC_CTRL_ENABLE)) {
        rnic_enable(e);
    } else if (was_enabled && !(value & RNIC_CTRL_ENABLE)) {
        rnic_disable(e);
    }
    return res;
}

static RnicAccessResult rnic_aq_config_write(RnicEngine *e, uint32_t offset,
                                             uint32_t value)
{
    RnicRegs *regs = &e->regs;

    if (regs->dev_ctrl & RNIC_CTRL_ENABLE) {
        return RNIC_ACCESS_NOT_NOW;
    }
    switch (offset) {
    case RNIC_REG_AQ_BASE_LO:
        regs->aq_base = (regs->aq_base & ~0xffffffffull) | value;
        break;
    case RNIC_REG_AQ_BASE_HI:
        regs->aq_base = (regs->aq_base & 0xffffffffull) | (uint64_t)value << 32;
        break;
    case RNIC_REG_ACQ_BASE_LO:
        regs->acq_base = (regs->acq_base & ~0xffffffffull) | value;
        break;
    case RNIC_REG_ACQ_BASE_HI:
        regs->acq_base = (regs->acq_base & 0xffffffffull) |
                         (uint64_t)value << 32;
        break;
    case RNIC_REG_AQ_SIZE_LOG2:
        if (value < RNIC_AQ_SIZE_LOG2_MIN || value > RNIC_AQ_SIZE_LOG2_MAX) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        regs->aq_size_log2 = value;
        break;
    }
    return RNIC_ACCESS_OK;
}

static RnicAccessResult rnic_reg_write(RnicEngine *e, uint32_t offset,
                                       uint32_t value)
{
    RnicRegs *regs = &e->regs;

    if (rnic_is_read_only_block(offset)) {
        return RNIC_ACCESS_READ_ONLY;
    }
    switch (offset) {
    case RNIC_REG_DEV_CTRL:
        return rnic_regs_ctrl_write(e, value);
    case RNIC_REG_DEV_STATUS:
    case RNIC_REG_FATAL_CODE:
    case RNIC_REG_HEARTBEAT:
    case RNIC_REG_AQ_HEAD:
        return RNIC_ACCESS_READ_ONLY;
    case RNIC_REG_SCRATCH:
        regs->scratch = value;
        return RNIC_ACCESS_OK;
    case RNIC_REG_MAC_LO:
        regs->mac[0] = value;
        regs->mac[1] = value >> 8;
        regs->mac[2] = value >> 16;
        regs->mac[3] = value >> 24;
        return RNIC_ACCESS_OK;
    case RNIC_REG_MAC_HI:
        if (value > 0xffff) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        regs->mac[4] = value;
        regs->mac[5] = value >> 8;
        return RNIC_ACCESS_OK;
    case RNIC_REG_IRQ_TEST:
        if (value >= e->cfg.msix_vectors) {
            return RNIC_ACCESS_BAD_VALUE;
        }
        e->ops->raise_irq(e->opaque, value);
        return RNIC_ACCESS_OK;
    case RNIC_REG_AQ_BASE_LO:
    case RNIC_REG_AQ_BASE_HI:
    case RNIC_REG_ACQ_BASE_LO:
    case RNIC_REG_ACQ_BASE_HI:
    case RNIC_REG_AQ_SIZE_LOG2:
        return rnic_aq_config_write(e, offset, value);
    case RNIC_REG_AQ_TAIL:
        return rnic_admin_tail_write(e, value);
    case RNIC_REG_ACQ_HEAD:
        return rnic_admin_cq_head_write(e, value);
    case RNIC_REG_ETH_BASE ... RNIC_REG_ETH_END - 1:
        return rnic_eth_reg_write(e, offset, value);
    default:
        return RNIC_ACCESS_UNKNOWN_REG;
    }
}

RnicAccessResult rnic_engine_reg_write(RnicEngine *e, uint32_t offset,
                                       uint32_t value)
{
    RnicAccessResult result;

    if (offset == RNIC_REG_DEV_CTRL) {
        return rnic_regs_ctrl_write(e, value);   /* deferred when nested */
    }
    rnic_engine_enter(e, RNIC_CALL_REG);
    result = rnic_reg_write(e, offset, value);
    rnic_engine_leave(e);
    return result;
}
