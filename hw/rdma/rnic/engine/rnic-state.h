/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the sections of the state image: their table and walker
 * (rnic-state.c), the sections of the objects (rnic-state-objs.c).
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

/*
 * A section of the image, an entry of the table in rnic-state.c. Most
 * sections are a u32 count and that many records, and the walker there
 * does the count and the loop, so that a section states only what its
 * records are:
 *  - save: the objects of the engine's table at 'table' (an offsetof into
 *    RnicEngine), each as its handle and its 'fields';
 *  - load: load_one() reads, checks and creates one record;
 *  - dump: dump_one() prints record i, or else the record is printed as
 *    "key[handle].field = value" from 'fields'.
 * A section whose whole save, load or dump is not that has its own
 * function instead (save, load, dump); one with neither a dump nor
 * records to dump is dumped as bytes.
 */
typedef struct RnicStateSection {
    uint16_t tag;               /* enum rnic_section_tag */
    uint16_t flags;             /* RNIC_SECTION_OPTIONAL */
    const char *name;           /* the section's, in dumps and messages */
    const char *record;         /* a record's, in load messages */
    const char *key;            /* a record's, in dumps */
    size_t table;               /* offsetof(RnicEngine, its RnicTable) */
    const RnicImageField *fields;
    bool (*load_one)(RnicEngine *e, RnicImageReader *rd, char **err);
    void (*dump_one)(RnicImageReader *rd, GString *out, uint32_t i);
    /* NULL: always written; else written only when it returns true */
    bool (*needed)(RnicEngine *e);
    void (*save)(RnicEngine *e, RnicImageWriter *w);
    bool (*load)(RnicEngine *e, RnicImageReader *rd, char **err);
    void (*dump)(RnicImageReader *rd, GString *out);
} RnicStateSection;

/*
 * The sections of the objects (rnic-state-objs.c), each defined beside
 * its field tables and record functions; rnic-state.c puts them in order.
 */
extern const RnicStateSection rnic_uctx_section;
extern const RnicStateSection rnic_netctx_section;
extern const RnicStateSection rnic_gids_section;
extern const RnicStateSection rnic_pds_section;
extern const RnicStateSection rnic_mnet_pds_section;
extern const RnicStateSection rnic_eqs_section;
extern const RnicStateSection rnic_cqs_section;
extern const RnicStateSection rnic_srqs_section;
extern const RnicStateSection rnic_mrlog_section;
extern const RnicStateSection rnic_mws_section;
extern const RnicStateSection rnic_qps_section;
extern const RnicStateSection rnic_mcast_section;
extern const RnicStateSection rnic_qp_stats_section;
extern const RnicStateSection rnic_mnet_binds_section;

/* The walker's count and records, for a section that has more than them. */
bool rnic_state_records_load(RnicEngine *e, RnicImageReader *rd, char **err,
                             const RnicStateSection *s);
void rnic_state_records_dump(RnicImageReader *rd, GString *out,
                             const RnicStateSection *s);

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
