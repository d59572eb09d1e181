/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: admin queue mechanics and the command dispatch table (what
 * every command handler uses to check and answer: rnic-admin-helpers.c).
 */
#include <string.h>
#include "rnic-admin.h"

static uint32_t rnic_aq_entries(const RnicEngine *e)
{
    return 1u << e->regs.aq_size_log2;
}

static bool rnic_aq_running(const RnicEngine *e)
{
    return (e->regs.dev_status & (RNIC_STATUS_READY | RNIC_STATUS_FATAL)) ==
           RNIC_STATUS_READY;
}

RnicAccessResult rnic_admin_tail_write(RnicEngine *e, uint32_t tail)
{
    RnicRegs *regs = &e->regs;

    if (!rnic_aq_running(e)) {
        return RNIC_ACCESS_NOT_NOW;
    }
    /* The driver may have at most 'entries' commands outstanding. */
    if (tail - regs->aq_head > rnic_aq_entries(e)) {
        rnic_event(e, UB_ADMIN_TAIL, "admin tail too far ahead of the head",
                   tail, rnic_aq_entries(e), regs->aq_head);
        return RNIC_ACCESS_BAD_VALUE;
    }
    regs->aq_tail = tail;
    rnic_engine_schedule(e);
    return RNIC_ACCESS_OK;
}

RnicAccessResult rnic_admin_cq_head_write(RnicEngine *e, uint32_t head)
{
    RnicRegs *regs = &e->regs;

    if (!rnic_aq_running(e)) {
        return RNIC_ACCESS_NOT_NOW;
    }
    /* The consumer cannot pass the producer nor go backwards. */
    if (regs->acq_tail - head > rnic_aq_entries(e) ||
        head - regs->acq_head > regs->acq_tail - regs->acq_head) {
        return RNIC_ACCESS_BAD_VALUE;
    }
    regs->acq_head = head;
    if (regs->aq_head != regs->aq_tail) {
        rnic_engine_schedule(e);    /* completions may have been stalled */
    }
    return RNIC_ACCESS_OK;
}

static void rnic_cmd_nop(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                         RnicAdminResult *res)
{
    res->status = RNIC_ST_OK;
}

static void rnic_cmd_query_device(RnicEngine *e,
                                  const struct rnic_admin_cmd *cmd,
                                  RnicAdminResult *res)
{
    const RnicEngineConfig *cfg = &e->cfg;
    struct rnic_device_attr a;
    uint32_t v;

    memset(&a, 0, sizeof(a));
    a.abi_version = GUINT32_TO_LE(RNIC_ABI_VERSION);
    a.vendor_id = GUINT32_TO_LE(cfg->vendor_id);
    a.vendor_part_id = GUINT32_TO_LE(cfg->device_id);
    a.hw_ver = GUINT32_TO_LE(RNIC_PCI_REVISION);
    rnic_engine_reg_read(e, RNIC_REG_CAPS_LO, &v);
    a.caps = v;
    rnic_engine_reg_read(e, RNIC_REG_CAPS_HI, &v);
    a.caps = GUINT64_TO_LE(a.caps | (uint64_t)v << 32);
    /* EUI-64 from the configured MAC, as RoCE devices do */
    a.node_guid = GUINT64_TO_LE(
        (uint64_t)(cfg->mac[0] ^ 2) << 56 | (uint64_t)cfg->mac[1] << 48 |
        (uint64_t)cfg->mac[2] << 40 | 0xfffeull << 24 |
        (uint64_t)cfg->mac[3] << 16 | (uint64_t)cfg->mac[4] << 8 | cfg->mac[5]);
    a.max_mr_size = GUINT64_TO_LE(RNIC_MR_MAX_SIZE);
    a.page_size_cap = GUINT64_TO_LE(((1ull << (RNIC_PAGE_SHIFT_MAX + 1)) - 1) &
                                    ~((1ull << RNIC_PAGE_SHIFT_MIN) - 1));
    a.max_net_ctx = GUINT32_TO_LE(cfg->max_net_ctx);
    a.max_qp = GUINT32_TO_LE(cfg->max_qp);
    a.max_qp_wr = GUINT32_TO_LE(cfg->max_qp_wr);
    a.max_sge = GUINT32_TO_LE(cfg->max_sge);
    a.max_cq = GUINT32_TO_LE(cfg->max_cq);
    a.max_cqe = GUINT32_TO_LE(cfg->max_cqe);
    a.max_mr = GUINT32_TO_LE(cfg->max_mr);
    a.max_pd = GUINT32_TO_LE(cfg->max_pd);
    a.max_srq = GUINT32_TO_LE(cfg->max_srq);
    a.max_srq_wr = GUINT32_TO_LE(cfg->max_qp_wr);
    a.max_eq = GUINT32_TO_LE(cfg->max_eq);
    a.max_inline = GUINT32_TO_LE(cfg->max_inline);
    a.max_qp_rd_atom = GUINT32_TO_LE(cfg->max_rd_atomic);
    a.max_fast_reg_pages = GUINT32_TO_LE(RNIC_MR_MAX_FAST_REG_PAGES);
    a.max_gid = GUINT32_TO_LE(cfg->max_gid);
    a.max_uctx = GUINT32_TO_LE(cfg->db_pages - 1);
    a.max_mw = GUINT32_TO_LE(cfg->max_mr);
    a.max_mcast_grp = GUINT32_TO_LE(RNIC_MCAST_GROUPS);
    a.max_mcast_qp_attach = GUINT32_TO_LE(RNIC_MCAST_QPS);
    a.max_map_segs = GUINT32_TO_LE(RNIC_MAP_MAX_SEGS);
    rnic_admin_write_result(e, cmd, &a, sizeof(a), res);
}

/* IB MTU enum of the largest RoCE MTU that fits an Ethernet MTU. */
static uint32_t rnic_ib_mtu_for(uint32_t eth_mtu)
{
    /* IP (40 for IPv6) + UDP 8 + BTH 12 + up to 28 of extension headers +
     * ICRC 4: RoCE payloads need about 92 bytes of headroom. */
    uint32_t room = eth_mtu > 92 ? eth_mtu - 92 : 0;
    uint32_t mtu = RNIC_MTU_4096;

    while (mtu > RNIC_MTU_256 && (128u << mtu) > room) {
        mtu--;
    }
    return mtu;
}

static void rnic_cmd_query_port(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                                RnicAdminResult *res)
{
    struct rnic_port_attr a;

    if (GUINT32_FROM_LE(cmd->query.handle) != 1) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE, "QUERY_PORT: no port %u",
                        GUINT32_FROM_LE(cmd->query.handle));
        return;
    }
    memset(&a, 0, sizeof(a));
    a.state = GUINT32_TO_LE((e->regs.dev_status & RNIC_STATUS_LINK_UP) ? 4 : 1);
    a.max_mtu = GUINT32_TO_LE(rnic_ib_mtu_for(e->cfg.max_mtu));
    a.active_mtu = a.max_mtu;
    a.gid_tbl_len = GUINT32_TO_LE(e->cfg.max_gid);
    a.max_msg_sz = GUINT32_TO_LE(1u << 31);
    a.link_speed_mbps = GUINT32_TO_LE(25000);
    memcpy(a.mac, e->regs.mac, sizeof(a.mac));
    rnic_admin_write_result(e, cmd, &a, sizeof(a), res);
}

static const RnicAdminHandler rnic_admin_handlers[RNIC_CMD_OPCODE_COUNT] = {
    [RNIC_CMD_NOP] = rnic_cmd_nop,
    [RNIC_CMD_QUERY_DEVICE] = rnic_cmd_query_device,
    [RNIC_CMD_QUERY_PORT] = rnic_cmd_query_port,
    [RNIC_CMD_CREATE_NET_CTX] = rnic_cmd_create_net_ctx,
    [RNIC_CMD_DESTROY_NET_CTX] = rnic_cmd_destroy_net_ctx,
    [RNIC_CMD_ALLOC_UCTX] = rnic_cmd_alloc_uctx,
    [RNIC_CMD_FREE_UCTX] = rnic_cmd_free_uctx,
    [RNIC_CMD_ADD_GID] = rnic_cmd_add_gid,
    [RNIC_CMD_DEL_GID] = rnic_cmd_del_gid,
    [RNIC_CMD_ALLOC_PD] = rnic_cmd_alloc_pd,
    [RNIC_CMD_DEALLOC_PD] = rnic_cmd_dealloc_pd,
    [RNIC_CMD_CREATE_EQ] = rnic_cmd_create_eq,
    [RNIC_CMD_DESTROY_EQ] = rnic_cmd_destroy_eq,
    [RNIC_CMD_CREATE_CQ] = rnic_cmd_create_cq,
    [RNIC_CMD_RESIZE_CQ] = rnic_cmd_resize_cq,
    [RNIC_CMD_DESTROY_CQ] = rnic_cmd_destroy_cq,
    [RNIC_CMD_CREATE_SRQ] = rnic_cmd_create_srq,
    [RNIC_CMD_MODIFY_SRQ] = rnic_cmd_modify_srq,
    [RNIC_CMD_DESTROY_SRQ] = rnic_cmd_destroy_srq,
    [RNIC_CMD_CREATE_QP] = rnic_cmd_create_qp,
    [RNIC_CMD_MODIFY_QP] = rnic_cmd_modify_qp,
    [RNIC_CMD_QUERY_QP] = rnic_cmd_query_qp,
    [RNIC_CMD_DESTROY_QP] = rnic_cmd_destroy_qp,
    [RNIC_CMD_REG_MR] = rnic_cmd_reg_mr,
    [RNIC_CMD_ALLOC_MR] = rnic_cmd_alloc_mr,
    [RNIC_CMD_DEREG_MR] = rnic_cmd_dereg_mr,
    [RNIC_CMD_SCM_PERSIST] = rnic_cmd_scm_persist,
    [RNIC_CMD_ALLOC_MW] = rnic_cmd_alloc_mw,
    [RNIC_CMD_ATTACH_MCAST] = rnic_cmd_attach_mcast,
    [RNIC_CMD_DETACH_MCAST] = rnic_cmd_detach_mcast,
    [RNIC_CMD_REREG_MR] = rnic_cmd_rereg_mr,
    [RNIC_CMD_QUERY_QP_STATS] = rnic_cmd_query_qp_stats,
};

static void rnic_admin_execute(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                               RnicAdminResult *res)
{
    RnicAdminHandler h = NULL;

    if (cmd->opcode < RNIC_CMD_OPCODE_COUNT) {
        h = rnic_admin_handlers[cmd->opcode];
    }
    memset(res, 0, sizeof(*res));
    rnic_event(e, ADMIN_START, rnic_admin_opcode_name(cmd->opcode),
               cmd->opcode, GUINT16_FROM_LE(cmd->cmd_id));
    e->admin_cmd = cmd;
    if (!h) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_OPCODE, "unknown opcode %u",
                        cmd->opcode);
    } else {
        h(e, cmd, res);
    }
    e->admin_cmd = NULL;
    if (!res->again) {
        rnic_event(e, ADMIN_DONE, rnic_admin_status_name(res->status),
                   cmd->opcode, GUINT16_FROM_LE(cmd->cmd_id), res->status);
    }
}

static void rnic_admin_fatal(RnicEngine *e, uint32_t code, const char *what)
{
    rnic_event(e, UB_ADMIN_FATAL, what, code);
    e->regs.dev_status |= RNIC_STATUS_FATAL;
    e->regs.fatal_code = code;
}

/*
 * Work per rnic_admin_process() call, which holds the BQL: this many
 * commands, or until the commands have spent the phase's budget
 * (rnic_work_spent: page-list entries read, CQEs staged by RESIZE_CQ,
 * STag index probes, bytes persisted by SCM_PERSIST). The rest waits for
 * the next run: a full queue of maximal registrations is 4,096 runs, not
 * one of seconds.
 */
#define RNIC_ADMIN_RUN_CMDS         64

void rnic_admin_process(RnicEngine *e)
{
    RnicRegs *regs = &e->regs;
    uint32_t entries, mask, done = 0;
    bool completed = false;

    if (!rnic_aq_running(e)) {
        return;
    }
    entries = rnic_aq_entries(e);
    mask = entries - 1;
    rnic_work_phase(e);
    while (regs->aq_head != regs->aq_tail &&
           regs->acq_tail - regs->acq_head < entries) {
        struct rnic_admin_cmd cmd;
        struct rnic_admin_cqe cqe;
        RnicAdminResult res;

        if (done == RNIC_ADMIN_RUN_CMDS ||
            rnic_work_spent(e)) {
            rnic_engine_schedule(e);    /* the rest in the next run */
            break;
        }
        done++;

        if (e->ops->dma_read(e->opaque, regs->aq_base +
                             (uint64_t)(regs->aq_head & mask) * sizeof(cmd),
                             &cmd, sizeof(cmd))) {
            rnic_stat_inc(e, RNIC_STAT_DMA_ERRORS);
            rnic_admin_fatal(e, RNIC_FATAL_AQ_DMA, "command ring not readable");
            break;
        }
        rnic_work_wqes(e, 1);
        rnic_admin_execute(e, &cmd, &res);
        if (res.again) {
            rnic_engine_schedule(e);    /* the same command, next run */
            break;
        }
        rnic_stat_inc(e, RNIC_STAT_ADMIN_CMDS);
        if (res.status != RNIC_ST_OK) {
            rnic_stat_inc(e, RNIC_STAT_ADMIN_ERRORS);
        }
        memset(&cqe, 0, sizeof(cqe));
        cqe.cmd_id = cmd.cmd_id;
        cqe.status = res.status;
        cqe.phase = ((regs->acq_tail >> regs->aq_size_log2) & 1) ^ 1;
        cqe.result0 = GUINT32_TO_LE(res.result0);
        cqe.result1 = GUINT32_TO_LE(res.result1);
        cqe.result2 = GUINT32_TO_LE(res.result2);
        if (e->ops->dma_write(e->opaque, regs->acq_base +
                              (uint64_t)(regs->acq_tail & mask) * sizeof(cqe),
                              &cqe, sizeof(cqe))) {
            rnic_stat_inc(e, RNIC_STAT_DMA_ERRORS);
            rnic_admin_fatal(e, RNIC_FATAL_AQ_DMA, "completion ring not writable");
            break;
        }
        regs->aq_head++;
        regs->acq_tail++;
        completed = true;
        /* A command may have reset or disabled the device. */
        if (!rnic_aq_running(e)) {
            break;
        }
    }
    if (completed && (regs->dev_ctrl & RNIC_CTRL_AQ_IRQ)) {
        rnic_raise_irq(e, 0);
    }
}

void rnic_admin_objects_reset(RnicEngine *e)
{
    /* dependents first: QPs hold PDs/CQs/SRQs, MRs hold PDs, CQs hold EQs */
    rnic_qp_reset(e);
    rnic_srq_reset(e);
    rnic_mr_reset(e);
    rnic_cq_reset(e);
    rnic_ctx_reset(e);
    rnic_mcast_reset(e);
}
