/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * rnicdv: direct verbs of the qemu-rnic provider (librnic.so.1), the
 * calls of the device that plain verbs have no words for. Installed with
 * the provider as <infiniband/rnicdv.h>; link with -lrnic -libverbs.
 *
 * Mapped STags ("mkeys", device ABI 1.6, RNIC_CAP_MAPPED): one lkey/rkey
 * over a set of buffers of other memory regions, shaped like mlx5dv's
 * indirect mkeys (mlx5dv_create_mkey, mlx5dv_wr_mr_list,
 * mlx5dv_wr_mr_interleaved):
 *
 *	struct rnicdv_mkey *mkey = rnicdv_create_mkey(pd, 16);
 *
 *	ibv_wr_start(qpx);
 *	qpx->wr_id = 1;
 *	qpx->wr_flags = IBV_SEND_SIGNALED;
 *	rnicdv_wr_mr_list(qpx, mkey, IBV_ACCESS_LOCAL_WRITE |
 *			  IBV_ACCESS_REMOTE_READ, 2, sges);
 *	ibv_wr_complete(qpx);	// mkey->lkey/rkey: the new key
 *	... poll the registration's completion, then use mkey->lkey in
 *	    SGEs (bytes 0 .. length - 1 of the set) or send mkey->rkey ...
 *	LOCAL_INV or SEND with invalidate of mkey->rkey; register again
 *	rnicdv_destroy_mkey(mkey);
 *
 * The mkey's address space is zero-based: byte 0 is the first byte of
 * the first segment. Every registration gives the mkey a new key (a
 * random key byte, never the one it had), as the registration work
 * request is posted: a failed ibv_wr_complete() (or ibv_wr_abort())
 * restores the keys it had; a registration that completes in error
 * leaves the device with the old one. An mkey is registered only while
 * invalid (new, or after LOCAL_INV / SEND with invalidate): registering a
 * valid one completes in error. Members are plain memory regions
 * of the mkey's PD (not another mkey, a memory window or device memory);
 * the device resolves them on every access with their current key,
 * rights and bounds, so an access through a member deregistered since
 * fails (an error completion), never touches stale memory.
 */
#ifndef RNICDV_H
#define RNICDV_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The completion opcode of an mkey registration (as mlx5dv's UMR). */
enum {
	RNICDV_WC_REG_MKEY = IBV_WC_DRIVER1,
};

/* struct rnicdv_context.flags */
enum rnicdv_context_flags {
	RNICDV_CONTEXT_FLAGS_MKEY = 1 << 0,	/* mapped STags (ABI 1.6) */
};

/* struct rnicdv_context.comp_mask: which of the optional fields are set */
enum rnicdv_context_comp_mask {
	RNICDV_CONTEXT_MASK_MAX_MKEY_ENTRIES = 1 << 0,
};

struct rnicdv_context {
	uint64_t comp_mask;		/* out: enum rnicdv_context_comp_mask */
	uint64_t flags;			/* enum rnicdv_context_flags */
	uint32_t abi_version;		/* the device's: major << 16 | minor */
	/*
	 * Segments an mkey may have (rnicdv_create_mkey's max_entries), when
	 * comp_mask has RNICDV_CONTEXT_MASK_MAX_MKEY_ENTRIES (a kernel that
	 * does not say leaves it out; it refuses more than the device allows).
	 */
	uint32_t max_mkey_entries;
	/*
	 * Segments a registration carries inside its work request: more go
	 * through a table in memory the provider registered (one SGE), per
	 * QP and work queue slot.
	 */
	uint32_t max_inline_mkey_entries;
	uint32_t reserved;
};

/* Whether DEVICE is an rnic (the rnicdv_* calls apply). */
bool rnicdv_is_supported(struct ibv_device *device);

/* The device's direct-verbs attributes; 0, or an errno value. */
int rnicdv_query_device(struct ibv_context *context,
			struct rnicdv_context *attrs);

struct rnicdv_mkey {
	uint32_t lkey;
	uint32_t rkey;			/* the same STag */
};

/*
 * A mapped STag of PD with room for MAX_ENTRIES segments (list entries,
 * or interleaved entries: the repeat count does not count). Invalid until
 * a registration. NULL with errno set on error (EOPNOTSUPP: the device or
 * kernel has no mapped STags; EINVAL: MAX_ENTRIES 0 or above the
 * device's limit).
 */
struct rnicdv_mkey *rnicdv_create_mkey(struct ibv_pd *pd,
				       uint16_t max_entries);
int rnicdv_destroy_mkey(struct rnicdv_mkey *mkey);

/* One entry of an interleaved layout (as struct mlx5dv_mr_interleaved). */
struct rnicdv_mr_interleaved {
	uint64_t addr;			/* the member's first byte */
	uint32_t bytes_count;		/* bytes taken each repetition */
	uint32_t bytes_skip;		/* member bytes skipped between them */
	uint32_t lkey;			/* the member */
};

/*
 * Work requests, between ibv_wr_start() and ibv_wr_complete() of an
 * extended RC or UC QP (ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
 * of the mkey's PD; qpx->wr_id and qpx->wr_flags apply as to any
 * ibv_wr_*() call. ACCESS_FLAGS: IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE,
 * _REMOTE_READ, _REMOTE_ATOMIC. An error the provider sees (not an rnic
 * QP, bad rights, no entries, more than the provider can carry) makes
 * ibv_wr_complete() fail with EINVAL (or EOPNOTSUPP, ENOMEM) and posts
 * nothing; what the device sees (too many entries for the mkey, a member
 * of another PD or an mkey, bad bounds) is an error completion.
 */

/* The mkey maps the SGEs' bytes, in order: length = sum of their lengths. */
void rnicdv_wr_mr_list(struct ibv_qp_ex *qpx, struct rnicdv_mkey *mkey,
		       uint32_t access_flags, uint16_t num_sges,
		       const struct ibv_sge *sge);

/*
 * REPEAT_COUNT times: each entry's bytes_count bytes, the entry's address
 * moving on by bytes_count + bytes_skip each time: length = repeat_count
 * * sum of bytes_count.
 */
void rnicdv_wr_mr_interleaved(struct ibv_qp_ex *qpx, struct rnicdv_mkey *mkey,
			      uint32_t access_flags, uint32_t repeat_count,
			      uint16_t num_interleaved,
			      const struct rnicdv_mr_interleaved *data);

#ifdef __cplusplus
}
#endif

#endif /* RNICDV_H */
