/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the Ethernet function (a converged NIC: docs/spec.md,
 * "Ethernet function"). Frames that are not RoCE for this device go to and come from
 * the guest net_device's TX/RX descriptor rings; registers
 * RNIC_REG_ETH_* in BAR0. Internal to the engine; the host uses the
 * rnic_engine_receive/can_receive/set_link API of rnic-engine.h.
 */
#ifndef RNIC_ETH_H
#define RNIC_ETH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "rnic-engine.h"
#include "rnic-image.h"

/* Largest frame the device handles (no FCS): max MTU + Ethernet/802.1Q. */
#define RNIC_ETH_MAX_FRAME      (RNIC_CFG_MAX_MTU + RNIC_ETH_OVERHEAD)
/* TX frames sent per engine run before yielding to the main loop. */
#define RNIC_ETH_TX_BUDGET      256

typedef struct RnicEthRing {
    uint64_t base;
    uint32_t log2;
    uint32_t head;              /* device: free-running consumer */
    uint32_t tail;              /* driver: free-running producer */
} RnicEthRing;

/* Guest-visible state: reset by RNIC_CTRL_RESET, migrated. */
typedef struct RnicEthRegs {
    uint32_t ctrl;              /* enum rnic_eth_ctrl */
    uint32_t status;            /* enum rnic_eth_status */
    uint32_t mtu;
    uint32_t irq_vector;
    bool irq_masked;
    bool irq_pending;           /* work completed since the last interrupt */
    uint64_t mc_hash;
    RnicEthRing tx;
    RnicEthRing rx;
} RnicEthRegs;

typedef struct RnicEth {
    RnicEthRegs r;
    /* the host was told "cannot receive": call rx_ready when buffers come */
    bool rx_blocked;
    /* physical link as the host reports it; survives a function reset */
    bool link_down;
    /* one TX frame being assembled from its fragments */
    uint8_t tx_frame[RNIC_ETH_MAX_FRAME];
} RnicEth;

/* Called by the engine core (rnic-engine.c, rnic-regs.c, rnic-state.c). */
void rnic_eth_reset(RnicEngine *e);
void rnic_eth_run(RnicEngine *e);
RnicAccessResult rnic_eth_reg_read(RnicEngine *e, uint32_t offset,
                                   uint32_t *value);
RnicAccessResult rnic_eth_reg_write(RnicEngine *e, uint32_t offset,
                                    uint32_t value);
void rnic_eth_save(RnicEngine *e, RnicImageWriter *w);
bool rnic_eth_load(RnicEngine *e, RnicImageReader *r, char **err);

static inline bool rnic_eth_reg_in_range(uint32_t offset)
{
    return offset >= RNIC_REG_ETH_BASE && offset < RNIC_REG_ETH_END;
}

/*
 * Port state hook: the link went up or down. The RDMA side raises
 * RNIC_EQE_PORT_ACTIVE / RNIC_EQE_PORT_ERR on the async EQ from here once
 * the event queues exist; until then nothing beyond DEV_STATUS and the
 * Ethernet interrupt happens.
 */
void rnic_port_event(RnicEngine *e, bool link_up);

#endif /* RNIC_ETH_H */
