/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: the kinds of mapping-table entry, behind one ops table, and
 * what the memory-registration files share among themselves.
 *
 * An entry's kind (enum rnic_mr_kind, the ABI) decides what it maps and
 * how: guest pages through a page list (rnic-mr-mem.c), a range of the
 * device's memory window (rnic-scm.c), a set of other entries
 * (rnic-mapped.c), a range of another entry (rnic-mw.c). The file of a
 * kind defines its RnicMrKind; rnic_mr_kinds[] (rnic-mr.c) lists them; the
 * rest of the engine asks the table, never the kind's number. Adding a
 * kind: its file, one row of rnic_mr_kinds[], its number in the ABI.
 *
 * The files: rnic-mr.c (mapping tables, lookup and the translation path),
 * rnic-mr-cmd.c (the registration commands and work requests),
 * rnic-reglog.c (the registration log, its compaction and its replay),
 * rnic-mr-mem.c (page lists and the plain kind).
 */
#ifndef RNIC_MR_H
#define RNIC_MR_H

#include "rnic-admin.h"

/* What a kind allows: RnicMrKind.flags */
enum rnic_mr_kind_flags {
    /* in the registration log (windows are a state section of their own) */
    RNIC_MRK_LOGGED = 1u << 0,
    /* may be a member of a mapped STag */
    RNIC_MRK_MEMBER = 1u << 1,
    /* may have memory windows bound to it */
    RNIC_MRK_WINDOW_PARENT = 1u << 2,
    /*
     * its translation depends on its own entry only, so the WQE cache may
     * keep it (rnic-wqc.c)
     */
    RNIC_MRK_CACHEABLE = 1u << 3,
    /*
     * its key changes by work requests its consumer may not see complete:
     * DEREG_MR may leave the key out (as of a fast-register entry)
     */
    RNIC_MRK_ANY_KEY = 1u << 4,
};

/*
 * One kind of entry. Hooks left NULL: the kind does not have that
 * operation (the command or work request is refused), or, where said, the
 * common behaviour applies.
 */
typedef struct RnicMrKind {
    const char *name;           /* in messages: "a persistent region" */
    uint32_t flags;             /* enum rnic_mr_kind_flags */
    uint8_t rereg_refusal;      /* REREG_MR's status for it; 0: allowed */
    /* REG_MR of this kind: creates the entry or fails 'res' */
    void (*reg)(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                RnicAdminResult *res, RnicPd *pd);
    /*
     * ALLOC_MR: the capacity of a fast-register entry, 1..alloc_max
     * (0: no ALLOC_MR) 'alloc_unit's; user contexts may too, or the kernel
     * only
     */
    uint32_t alloc_max;
    const char *alloc_unit;
    bool alloc_user;
    /* the REG_MR work request on an invalid fast-register entry */
    uint8_t (*fast_reg)(RnicEngine *e, RnicQp *qp, RnicMr *mr,
                        const RnicSendWqe *sw);
    /* invalidation (LOCAL_INV, SEND with invalidate); NULL: fast-register's */
    uint8_t (*invalidate)(RnicEngine *e, RnicMr *mr, const RnicQp *qp,
                          uint32_t stag, bool remote);
    /* every access: the key, state, PD, rights, bounds and the kind's rules */
    RnicXlateErr (*check)(const RnicMr *mr, uint32_t stag, const RnicPd *pd,
                          uint64_t va, uint64_t len, uint32_t access);
    /*
     * after the checks, the entry an access goes to ('remote': an rkey,
     * arriving on 'qp' or on no QP in particular); NULL: the entry itself
     */
    RnicXlateErr (*target)(const RnicMr *mr, bool remote, const RnicQp *qp,
                           uint64_t va, uint64_t len, RnicMr **out);
    /*
     * Guest address of entry byte 'va' and the length of the DMA-contiguous
     * run from there, at most 'max'; *run 0: no run ('write': for a write;
     * *hint: the caller's cursor, 0 to start)
     */
    uint64_t (*run)(const RnicMr *mr, uint64_t va, uint64_t max, bool write,
                    uint32_t *hint, uint64_t *run);
    /* DEREG_MR, before the entry goes; NULL: nothing to undo */
    void (*dereg)(RnicEngine *e, RnicMr *mr);
    /* the entry is freed: what the kind holds besides page list and map */
    void (*release)(RnicEngine *e, RnicMr *mr);
    /*
     * Replay of a REG or ALLOC record of this kind: NULL when the record
     * keeps the kind's rules, else why not
     */
    const char *(*replay_create)(RnicEngine *e, const RnicRegLogRec *rec);
    /*
     * Replay of a FAST_REG record: check it against fast-register entry
     * 'mr' and give the entry its translation (NULL), or why not
     */
    const char *(*replay_fast_reg)(RnicEngine *e, RnicMr *mr,
                                   const RnicRegLogRec *rec);
} RnicMrKind;

#define RNIC_MR_KIND_COUNT 4

extern const RnicMrKind rnic_mr_kind_mem;
extern const RnicMrKind rnic_mr_kind_scm;
extern const RnicMrKind rnic_mr_kind_mapped;
extern const RnicMrKind rnic_mr_kind_mw;
extern const RnicMrKind *const rnic_mr_kinds[RNIC_MR_KIND_COUNT];

/* The ops of kind number 'kind', NULL for a number no kind has. */
static inline const RnicMrKind *rnic_mr_kind_of(uint8_t kind)
{
    return kind < RNIC_MR_KIND_COUNT ? rnic_mr_kinds[kind] : NULL;
}

/* The ops of an entry (its kind was checked when it was made). */
static inline const RnicMrKind *rnic_mr_kind(const RnicMr *mr)
{
    return rnic_mr_kinds[mr->kind];
}

/* rnic-mr.c: the checks every kind makes, and the entries' life */
/* State, PD (NULL: any), rights and bounds of an entry. */
RnicXlateErr rnic_mr_check_entry(const RnicMr *mr, const RnicPd *pd,
                                 uint64_t va, uint64_t len, uint32_t access);
/* The key, exactly, and then rnic_mr_check_entry. */
RnicXlateErr rnic_mr_check_keyed(const RnicMr *mr, uint32_t stag,
                                 const RnicPd *pd, uint64_t va, uint64_t len,
                                 uint32_t access);
/* Room for one more entry of 'pd' (in its table and every replica's)? */
bool rnic_mr_room(RnicEngine *e, const RnicPd *pd);
/* Take an entry out of its tables and free it. */
void rnic_mr_remove(RnicEngine *e, RnicMr *mr);
/* Every replica of 'pd's entries at 'idx' set to 'mr' (NULL: cleared). */
void rnic_mr_replicate(RnicEngine *e, const RnicPd *pd, uint32_t idx,
                       RnicMr *mr);
/* Is 'pd' (multi-network) bound to context handle c? */
bool rnic_pd_bound(const RnicEngine *e, const RnicPd *pd, uint32_t c);

/* rnic-mr-mem.c: page lists and the plain kind */
RnicPbl *rnic_pbl_ref(RnicPbl *pbl);
/*
 * Copy a guest page list into a new RnicPbl. levels: 0 contiguous (addr is
 * page 0), 1 flat list at addr, 2 list of 4 KiB leaves at addr. On failure
 * returns NULL with *status (admin status) and *why.
 */
RnicPbl *rnic_pbl_read(RnicEngine *e, uint64_t addr, uint8_t levels,
                       uint32_t npages, uint8_t shift, uint8_t *status,
                       const char **why);
/* Page addresses of a list: aligned, and a page never wraps. */
const char *rnic_pbl_check(const RnicPbl *pbl);
/* The run of byte 'va' of an entry with a page list ('run' of its kind). */
uint64_t rnic_pbl_run(const RnicMr *mr, uint64_t va, uint64_t max,
                      bool write, uint32_t *hint, uint64_t *run);
/* Guest RAM is volatile: the reason REG_MR refuses FLUSH persistence. */
extern const char rnic_mr_volatile[];
/* Checks shared by REG_MR, REREG_MR, fast-register and log replay. */
const char *rnic_mr_check_region(uint64_t iova, uint64_t length,
                                 uint32_t access, uint8_t shift,
                                 uint64_t npages);
/* The new entry of a REG_MR whose page list 'pbl' was read: takes it. */
void rnic_reg_mr_insert(RnicEngine *e, const struct rnic_admin_cmd *cmd,
                        RnicAdminResult *res, RnicPd *pd, RnicPbl *pbl,
                        uint32_t access);

/* rnic-reglog.c */
/* A record of 'mr' as it is now (sharing its page list and map: no ref). */
RnicRegLogRec rnic_reglog_record(uint8_t op, const RnicMr *mr);
void rnic_reglog_init(RnicEngine *e);
void rnic_reglog_fini(RnicEngine *e);
/* Drop every record (device reset). */
void rnic_reglog_clear(RnicEngine *e);

#endif
