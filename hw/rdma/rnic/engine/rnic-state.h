/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: state-image sections of the objects (rnic-state-objs.c),
 * used by the section table in rnic-state.c.
 */
#ifndef RNIC_STATE_H
#define RNIC_STATE_H

#include "rnic-engine-int.h"
#include "rnic-image.h"

/* The sections of a state image (the table in rnic-state.c). */
enum rnic_section_tag {
    RNIC_SEC_REGS = 1,
    RNIC_SEC_STATS = 2,
    RNIC_SEC_UCTX = 3,
    RNIC_SEC_NET_CTX = 4,
    RNIC_SEC_GIDS = 5,
    RNIC_SEC_PDS = 6,
    RNIC_SEC_EQS = 7,
    RNIC_SEC_CQS = 8,
    RNIC_SEC_SRQS = 9,
    RNIC_SEC_MR_LOG = 10,
    RNIC_SEC_QPS = 11,
    /*
     * ABI 1.1 multi-network PDs and their QPs' bindings: mandatory when
     * present (a device without them cannot run the guest's objects), and
     * written only when such a PD exists, so other images are unchanged.
     */
    RNIC_SEC_MNET_PDS = 12,
    RNIC_SEC_MNET_BINDS = 13,
    /* ABI 1.5 memory windows: mandatory when present, as the above */
    RNIC_SEC_MWS = 14,
    /* ABI 1.5 multicast groups (after the QPs): the same rules */
    RNIC_SEC_MCAST = 15,
    /*
     * ABI 1.5 per-QP transport counters (after the QPs): optional, written
     * when a QP has counted something
     */
    RNIC_SEC_QP_STATS = 16,
    RNIC_SEC_ETH = 32,          /* Ethernet function (rnic-eth.c) */
};

/* save, load, and dump (the image's fields as text, no engine needed) */
#define RNIC_STATE_SECTION(name) \
    void rnic_##name##_save(RnicEngine *e, RnicImageWriter *w); \
    bool rnic_##name##_load(RnicEngine *e, RnicImageReader *rd, char **err); \
    void rnic_##name##_dump(RnicImageReader *rd, GString *out)

RNIC_STATE_SECTION(uctx);
RNIC_STATE_SECTION(netctx);
RNIC_STATE_SECTION(gids);
RNIC_STATE_SECTION(pds);
RNIC_STATE_SECTION(eqs);
RNIC_STATE_SECTION(cqs);
RNIC_STATE_SECTION(srqs);
RNIC_STATE_SECTION(mrlog);
RNIC_STATE_SECTION(qps);
RNIC_STATE_SECTION(mnet_pds);
RNIC_STATE_SECTION(mnet_binds);
RNIC_STATE_SECTION(mws);
RNIC_STATE_SECTION(mcast);
RNIC_STATE_SECTION(qp_stats);
/* Is a UD QP attached to a multicast group (the section is written)? */
bool rnic_mcast_needed(RnicEngine *e);
/* Has a QP counted something (its section is written)? */
bool rnic_qp_stats_needed(RnicEngine *e);
/* Are there memory windows (their section is written)? */
bool rnic_mws_needed(RnicEngine *e);
/* Are there multi-network PDs (the sections above are written)? */
bool rnic_mnet_needed(RnicEngine *e);

/*
 * A state image as text, section by section and field by field (the
 * field tables' names): what tests/tools/rnic-image-dump prints. false:
 * it is not an image, or a section ends early or has bytes left over.
 */
bool rnic_state_dump(const uint8_t *data, size_t len, GString *out);

/* After a successful load: caches invalid, pending work and timers on. */
char *rnic_state_check(RnicEngine *e);
void rnic_state_post_load(RnicEngine *e);
void rnic_state_prompt_peers(RnicEngine *e);

#endif /* RNIC_STATE_H */
