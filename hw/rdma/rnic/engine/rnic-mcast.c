/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: UD multicast. A group is a multicast GID of one network
 * context (for the UD QPs of multi-network PDs, which serve every context:
 * of all of them) with the UD QPs attached to it (ATTACH_MCAST /
 * DETACH_MCAST); a
 * packet to the group — from the wire (rnic-wire.c) or sent by a QP of
 * this device (rnic_xmit) — is delivered to every QP attached, each
 * checking its Q_Key and taking a receive WQE as for a unicast UD packet.
 * The device has RNIC_MCAST_GROUPS groups of RNIC_MCAST_QPS QPs at most,
 * in one table: a lookup is a bounded scan.
 *
 * A user context's share: a group counts against the context that holds
 * it, the owner of its first QP (qps[0]): the context whose QP made it,
 * for as long as one of its QPs is in it, then the context of the QP
 * attached longest. ATTACH_MCAST of a user context's QP that would make
 * a new group fails (NO_RESOURCES) when the context holds
 * RNIC_MCAST_UCTX_GROUPS already; joining a group that exists costs
 * nothing, and the kernel's QPs (RNIC_UCTX_KERNEL) have no share. What a
 * context holds is counted from the table when a group is to be made (64
 * groups, each its first QP's owner), so that nothing is left to keep in
 * step: detach, QP destroy (before which FREE_UCTX is refused), reset and
 * a state load (image section 15 keeps each group's QPs in order, and its
 * load attaches them in that order) give the same count by construction.
 */
#include <string.h>
#include "rnic-admin.h"

/*
 * A quarter of the groups: a process needs a few (RDMA-CM applications
 * join one or a handful), four contexts are needed to take every group,
 * and three quarters stay for the others (with half, two would do).
 */
#define RNIC_MCAST_UCTX_GROUPS  (RNIC_MCAST_GROUPS / 4)

/*
 * A multicast GID: IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4 (what
 * RDMA-CM makes of an IPv4 group address on RoCEv2).
 */
bool rnic_gid_is_mcast(const uint8_t gid[16])
{
    static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

    return gid[0] == 0xff ||
           (!memcmp(gid, v4mapped, 12) && (gid[12] & 0xf0) == 0xe0);
}

static RnicMcast *rnic_mcast_find(RnicEngine *e, uint32_t ctx,
                                  const uint8_t mgid[16])
{
    unsigned i;

    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        RnicMcast *g = &e->mcast[i];

        if (g->nqps && g->net_ctx == ctx && !memcmp(g->mgid, mgid, 16)) {
            return g;
        }
    }
    return NULL;
}

/* The groups of 'qp': its context's, or every context's (all_nets). */
static uint32_t rnic_mcast_net(const RnicQp *qp)
{
    return qp->ctx ? qp->ctx->handle : RNIC_PD_MULTI_NET;
}

/* The context of the QP with handle 'h' (the kernel's if there is none). */
static uint32_t rnic_mcast_qp_owner(RnicEngine *e, uint32_t h)
{
    RnicQp *qp = rnic_qp_lookup(e, h);

    return qp ? qp->owner : RNIC_UCTX_KERNEL;
}

/* The groups user context 'uctx' holds (the first QP of each is its). */
static unsigned rnic_mcast_held(RnicEngine *e, uint32_t uctx)
{
    unsigned i, n = 0;

    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        const RnicMcast *g = &e->mcast[i];

        n += g->nqps && rnic_mcast_qp_owner(e, g->qps[0]) == uctx;
    }
    return n;
}

bool rnic_mcast_joined(RnicEngine *e, const uint8_t mgid[16])
{
    unsigned i;

    for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
        if (e->mcast[i].nqps && !memcmp(e->mcast[i].mgid, mgid, 16)) {
            return true;
        }
    }
    return false;
}

/* Attach 'qp' to (ctx, mgid); false: no room. Attached already: true. */
bool rnic_mcast_attach(RnicEngine *e, RnicQp *qp, const uint8_t mgid[16])
{
    RnicMcast *g = rnic_mcast_find(e, rnic_mcast_net(qp), mgid);
    unsigned i;

    if (!g) {
        /* a free group: one without QPs */
        for (i = 0; i < RNIC_MCAST_GROUPS; i++) {
            if (!e->mcast[i].nqps) {
                g = &e->mcast[i];
                break;
            }
        }
        if (!g) {
            return false;
        }
        g->net_ctx = rnic_mcast_net(qp);
        memcpy(g->mgid, mgid, 16);
    }
    for (i = 0; i < g->nqps; i++) {
        if (g->qps[i] == qp->handle) {
            return true;
        }
    }
    if (g->nqps == RNIC_MCAST_QPS) {
        return false;
    }
    g->qps[g->nqps++] = qp->handle;
    qp->mcast++;
    return true;
}

/*
 * Take qps[i] out, keeping the order of attachment: the first QP names
 * the context the group counts against, which keeps it while it has
 * another QP in the group (that one becomes the first).
 */
static void rnic_mcast_remove(RnicEngine *e, RnicMcast *g, unsigned i)
{
    unsigned j;

    if (i == 0 && g->nqps > 1) {
        uint32_t holder = rnic_mcast_qp_owner(e, g->qps[0]);

        for (j = 1; j < g->nqps; j++) {
            if (rnic_mcast_qp_owner(e, g->qps[j]) == holder) {
                g->qps[0] = g->qps[j];
                i = j;
                break;
            }
        }
    }
    g->nqps--;
    memmove(&g->qps[i], &g->qps[i + 1], (g->nqps - i) * sizeof(g->qps[0]));
}

/* Detach 'qp' from (its ctx, mgid); false: it was not attached. */
static bool rnic_mcast_detach(RnicEngine *e, RnicQp *qp,
                              const uint8_t mgid[16])
{
    RnicMcast *g = rnic_mcast_find(e, rnic_mcast_net(qp), mgid);
    unsigned i;

    for (i = 0; g && i < g->nqps; i++) {
        if (g->qps[i] == qp->handle) {
            rnic_mcast_remove(e, g, i);
            qp->mcast--;
            return true;
        }
    }
    return false;
}

void rnic_mcast_qp_destroy(RnicEngine *e, RnicQp *qp)
{
    unsigned i, j;

    for (i = 0; qp->mcast && i < RNIC_MCAST_GROUPS; i++) {
        RnicMcast *g = &e->mcast[i];

        for (j = 0; j < g->nqps; j++) {
            if (g->qps[j] == qp->handle) {
                rnic_mcast_remove(e, g, j);
                qp->mcast--;
                break;
            }
        }
    }
}

void rnic_mcast_reset(RnicEngine *e)
{
    memset(e->mcast, 0, sizeof(e->mcast));
}

/* To the QPs of one group that serve 'ctx'. */
static unsigned rnic_mcast_deliver_group(RnicEngine *e, RnicNetCtx *ctx,
                                         const RnicMcast *g,
                                         const RnicPacket *pkt)
{
    uint32_t qps[RNIC_MCAST_QPS];
    unsigned i, n, done = 0;

    /* a receive may change the group (an event, a QP to ERR): a copy */
    n = g->nqps;
    memcpy(qps, g->qps, n * sizeof(qps[0]));
    for (i = 0; i < n; i++) {
        RnicQp *qp = rnic_qp_lookup(e, qps[i]);

        if (qp && (qp->ctx == ctx || qp->all_nets)) {
            rnic_rx_qp(e, qp, pkt);
            done++;
        }
    }
    return done;
}

unsigned rnic_mcast_deliver(RnicEngine *e, RnicNetCtx *ctx,
                            const uint8_t mgid[16], const RnicPacket *pkt)
{
    RnicMcast *own = rnic_mcast_find(e, ctx->handle, mgid);
    RnicMcast *all = rnic_mcast_find(e, RNIC_PD_MULTI_NET, mgid);
    unsigned done = 0;

    if (pkt->dest_qp != RNIC_ROCE_MULTICAST_QPN) {
        return 0;
    }
    if (own) {
        done += rnic_mcast_deliver_group(e, ctx, own, pkt);
    }
    if (all) {
        done += rnic_mcast_deliver_group(e, ctx, all, pkt);
    }
    return done;
}

static void rnic_cmd_mcast(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res, bool attach)
{
    const char *name = attach ? "ATTACH_MCAST" : "DETACH_MCAST";
    unsigned held = 0;
    RnicQp *qp;

    if (!rnic_admin_check_uctx(e, cmd, res, false)) {
        return;
    }
    qp = rnic_admin_obj(e, cmd, res, &e->qps, GUINT32_FROM_LE(cmd->mcast.qp));
    if (!qp) {
        return;
    }
    if (qp->type != RNIC_QPT_UD || (!qp->ctx && !qp->all_nets)) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "%s: QP %u is not a UD QP", name,
                        qp->handle);
        return;
    }
    if (!rnic_gid_is_mcast(cmd->mcast.gid)) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_PARAM,
                        "%s: the GID is not a multicast address", name);
        return;
    }
    /* a new group of a user context's: within the context's share */
    if (attach && qp->owner != RNIC_UCTX_KERNEL &&
        !rnic_mcast_find(e, rnic_mcast_net(qp), cmd->mcast.gid)) {
        held = rnic_mcast_held(e, qp->owner);
    }
    if (held >= RNIC_MCAST_UCTX_GROUPS) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "%s: user context %u holds %u groups: a user "
                        "context may make at most %u of the %u groups "
                        "(joining a group that exists is not limited)",
                        name, qp->owner, held, RNIC_MCAST_UCTX_GROUPS,
                        RNIC_MCAST_GROUPS);
    } else if (attach && !rnic_mcast_attach(e, qp, cmd->mcast.gid)) {
        rnic_admin_fail(e, res, RNIC_ST_NO_RESOURCES,
                        "%s: %u groups of %u QPs in use", name,
                        RNIC_MCAST_GROUPS, RNIC_MCAST_QPS);
    } else if (!attach && !rnic_mcast_detach(e, qp, cmd->mcast.gid)) {
        rnic_admin_fail(e, res, RNIC_ST_BAD_HANDLE,
                        "%s: QP %u is not attached to the group", name,
                        qp->handle);
    }
}

void rnic_cmd_attach_mcast(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res)
{
    rnic_cmd_mcast(e, cmd, res, true);
}

void rnic_cmd_detach_mcast(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                           RnicAdminResult *res)
{
    rnic_cmd_mcast(e, cmd, res, false);
}
