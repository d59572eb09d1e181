/* SPDX-License-Identifier: (GPL-2.0 OR Linux-OpenIB) */
/*
 * Names of the admin opcodes and completion statuses of rnic-abi.h, for
 * the log messages of the device, the guest kernel driver and the tests.
 * Kept next to the ABI so that a new opcode or status is named once.
 */
#ifndef RNIC_ABI_NAMES_H
#define RNIC_ABI_NAMES_H

#include "rnic-abi.h"

static inline const char *rnic_admin_opcode_name(unsigned int opcode)
{
    static const char *const names[RNIC_CMD_OPCODE_COUNT] = {
        [RNIC_CMD_NOP] = "NOP",
        [RNIC_CMD_QUERY_DEVICE] = "QUERY_DEVICE",
        [RNIC_CMD_QUERY_PORT] = "QUERY_PORT",
        [RNIC_CMD_CREATE_NET_CTX] = "CREATE_NET_CTX",
        [RNIC_CMD_DESTROY_NET_CTX] = "DESTROY_NET_CTX",
        [RNIC_CMD_ALLOC_UCTX] = "ALLOC_UCTX",
        [RNIC_CMD_FREE_UCTX] = "FREE_UCTX",
        [RNIC_CMD_ADD_GID] = "ADD_GID",
        [RNIC_CMD_DEL_GID] = "DEL_GID",
        [RNIC_CMD_ALLOC_PD] = "ALLOC_PD",
        [RNIC_CMD_DEALLOC_PD] = "DEALLOC_PD",
        [RNIC_CMD_CREATE_EQ] = "CREATE_EQ",
        [RNIC_CMD_DESTROY_EQ] = "DESTROY_EQ",
        [RNIC_CMD_CREATE_CQ] = "CREATE_CQ",
        [RNIC_CMD_RESIZE_CQ] = "RESIZE_CQ",
        [RNIC_CMD_DESTROY_CQ] = "DESTROY_CQ",
        [RNIC_CMD_CREATE_SRQ] = "CREATE_SRQ",
        [RNIC_CMD_MODIFY_SRQ] = "MODIFY_SRQ",
        [RNIC_CMD_DESTROY_SRQ] = "DESTROY_SRQ",
        [RNIC_CMD_CREATE_QP] = "CREATE_QP",
        [RNIC_CMD_MODIFY_QP] = "MODIFY_QP",
        [RNIC_CMD_QUERY_QP] = "QUERY_QP",
        [RNIC_CMD_DESTROY_QP] = "DESTROY_QP",
        [RNIC_CMD_REG_MR] = "REG_MR",
        [RNIC_CMD_ALLOC_MR] = "ALLOC_MR",
        [RNIC_CMD_DEREG_MR] = "DEREG_MR",
        [RNIC_CMD_SCM_PERSIST] = "SCM_PERSIST",
        [RNIC_CMD_ALLOC_MW] = "ALLOC_MW",
        [RNIC_CMD_ATTACH_MCAST] = "ATTACH_MCAST",
        [RNIC_CMD_DETACH_MCAST] = "DETACH_MCAST",
        [RNIC_CMD_REREG_MR] = "REREG_MR",
        [RNIC_CMD_QUERY_QP_STATS] = "QUERY_QP_STATS",
    };

    if (opcode < RNIC_CMD_OPCODE_COUNT && names[opcode]) {
        return names[opcode];
    }
    return "unknown";
}

static inline const char *rnic_admin_status_name(unsigned int status)
{
    static const char *const names[] = {
        [RNIC_ST_OK] = "ok",
        [RNIC_ST_BAD_OPCODE] = "bad opcode",
        [RNIC_ST_BAD_PARAM] = "bad parameter",
        [RNIC_ST_NO_RESOURCES] = "no resources",
        [RNIC_ST_BAD_HANDLE] = "bad handle",
        [RNIC_ST_BUSY] = "busy",
        [RNIC_ST_BAD_STATE] = "bad state",
        [RNIC_ST_DMA_ERROR] = "DMA error",
        [RNIC_ST_PERMISSION] = "permission denied",
        [RNIC_ST_NOT_SUPPORTED] = "not supported",
        [RNIC_ST_EXISTS] = "exists",
    };

    if (status < sizeof(names) / sizeof(names[0]) && names[status]) {
        return names[status];
    }
    return "?";
}

/*
 * The statistics counters' names (enum rnic_stat): ethtool -S and rdma
 * statistic in the guest, x-stats on the host. NULL for a counter without
 * one (shown as "stat_<n>").
 */
static inline const char *rnic_abi_stat_name(unsigned int i)
{
    static const char *const names[RNIC_STAT_COUNT] = {
        [RNIC_STAT_ADMIN_CMDS] = "admin_cmds",
        [RNIC_STAT_ADMIN_ERRORS] = "admin_errors",
        [RNIC_STAT_DOORBELLS] = "doorbells",
        [RNIC_STAT_DOORBELL_ERRORS] = "doorbell_errors",
        [RNIC_STAT_WQES] = "wqes",
        [RNIC_STAT_CQES] = "cqes",
        [RNIC_STAT_EQES] = "eqes",
        [RNIC_STAT_TX_FRAMES] = "roce_tx_frames",
        [RNIC_STAT_RX_FRAMES] = "roce_rx_frames",
        [RNIC_STAT_RX_DROPPED] = "roce_rx_dropped",
        [RNIC_STAT_DMA_ERRORS] = "dma_errors",
        [RNIC_STAT_TX_DROPPED] = "roce_tx_dropped",
        [RNIC_STAT_RETRANSMITS] = "retransmits",
        [RNIC_STAT_ETH_TX_FRAMES] = "eth_tx_frames",
        [RNIC_STAT_ETH_TX_BYTES] = "eth_tx_bytes",
        [RNIC_STAT_ETH_TX_ERRORS] = "eth_tx_errors",
        [RNIC_STAT_ETH_TX_LINK_DOWN] = "eth_tx_link_down",
        [RNIC_STAT_ETH_RX_FRAMES] = "eth_rx_frames",
        [RNIC_STAT_ETH_RX_BYTES] = "eth_rx_bytes",
        [RNIC_STAT_ETH_RX_MULTICAST] = "eth_rx_multicast",
        [RNIC_STAT_ETH_RX_FILTERED] = "eth_rx_filtered",
        [RNIC_STAT_ETH_RX_DISABLED] = "eth_rx_disabled",
        [RNIC_STAT_ETH_RX_LENGTH_ERRORS] = "eth_rx_length_errors",
        [RNIC_STAT_ETH_RX_DESC_ERRORS] = "eth_rx_desc_errors",
        [RNIC_STAT_ETH_IRQS] = "eth_irqs",
        [RNIC_STAT_RX_ERR_HEADER] = "roce_rx_err_header",
        [RNIC_STAT_RX_ERR_ICRC] = "roce_rx_err_icrc",
        [RNIC_STAT_RX_ERR_PKEY] = "roce_rx_err_pkey",
        [RNIC_STAT_RX_ERR_NET] = "roce_rx_err_net",
        [RNIC_STAT_RX_ERR_GID] = "roce_rx_err_gid",
        [RNIC_STAT_RX_ERR_QPN] = "roce_rx_err_qpn",
        [RNIC_STAT_RX_ERR_ADDR] = "roce_rx_err_addr",
        [RNIC_STAT_RX_ERR_OPCODE] = "roce_rx_err_opcode",
        [RNIC_STAT_WQC_HITS] = "wqe_cache_hits",
        [RNIC_STAT_WQC_MISSES] = "wqe_cache_misses",
        [RNIC_STAT_WQC_STALE] = "wqe_cache_stale",
        [RNIC_STAT_SENT_PKTS] = "sent_pkts",
        [RNIC_STAT_RCVD_PKTS] = "rcvd_pkts",
        [RNIC_STAT_OUT_OF_SEQUENCE] = "out_of_sequence",
        [RNIC_STAT_DUPLICATE_REQUEST] = "duplicate_request",
        [RNIC_STAT_OUT_OF_BUFFER] = "out_of_buffer",
        [RNIC_STAT_PACKET_SEQ_ERR] = "packet_seq_err",
        [RNIC_STAT_RNR_NAK] = "rnr_nak_retry_err",
        [RNIC_STAT_LOCAL_ACK_TIMEOUT] = "local_ack_timeout_err",
        [RNIC_STAT_IMPLIED_NAK_SEQ] = "implied_nak_seq_err",
        [RNIC_STAT_FAST_REGS] = "fast_reg_wrs",
        [RNIC_STAT_MAPPED_REGS] = "mapped_regs",
        [RNIC_STAT_INVALIDATES] = "invalidates",
    };

    return i < RNIC_STAT_COUNT ? names[i] : NULL;
}

#endif /* RNIC_ABI_NAMES_H */
