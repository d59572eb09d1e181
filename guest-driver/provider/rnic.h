/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * rdma-core provider of the qemu-rnic emulated RoCEv2 RNIC.
 *
 * Control path through the kernel (rnic.ko, ibv_cmd_*); data path in user
 * space: WQEs are written into the SQ/RQ/SRQ rings the kernel allocated and
 * this process mapped, a doorbell is one 8-byte store into the context's
 * doorbell page (BAR2), completions are polled by the CQE owner bit.
 *
 * Device formats: include/rnic/rnic-abi.h (docs/spec.md, "Work queues").
 * Kernel <-> provider udata: include/rnic/rnic-user-abi.h; the uverbs
 * commands that carry it: rnic-abi.h of this directory.
 */
#ifndef RNIC_PROVIDER_H
#define RNIC_PROVIDER_H

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/driver.h>
#include <util/mmio.h>
#include <util/udma_barrier.h>
#include <util/util.h>

#include <rnic/rnic-abi.h>	/* the device */
#include "rnic-abi.h"		/* the uverbs commands */

/* ---------------------------------------------------------------------- */
/* Objects                                                                */
/* ---------------------------------------------------------------------- */

/*
 * QP handles -> QPs, for the CQEs (they name the QP by its device handle).
 * Two levels, leaves allocated on first use and kept until the context
 * goes: a lookup needs no lock. Covers handles below 2^20 (the device's
 * largest max-qps).
 */
#define RNIC_QP_LEAF_SHIFT	8
#define RNIC_QP_LEAVES		4096
#define RNIC_QP_HANDLES		(RNIC_QP_LEAVES << RNIC_QP_LEAF_SHIFT)

struct rnic_qp;

struct rnic_device {
	struct verbs_device vdev;
};

struct rnic_context {
	struct verbs_context vctx;
	void *db_page;			/* our doorbell page of BAR2 */
	size_t db_size;
	uint32_t uctx;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t abi_version;		/* the device's RNIC_ABI_VERSION */
	uint64_t caps;			/* enum rnic_cap (0: an older kernel) */
	uint32_t max_map_segs;		/* mapped STag segments (0: not said) */
	pthread_mutex_t qp_table_lock;	/* inserting and removing */
	struct rnic_qp **qp_table[RNIC_QP_LEAVES];
};

struct rnic_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct rnic_cqe *ring;
	size_t ring_size;
	uint32_t handle;
	uint32_t log;			/* 1 << log entries */
	uint32_t cons;			/* free-running consumer index */
	uint32_t db_cons;		/* consumer index the device knows */
	uint32_t db_slack;		/* consumed CQEs it may not know of */
	bool single_threaded;		/* no lock: SINGLE_THREADED */
	/* extended polling (ibv_start_poll ... ibv_end_poll) */
	struct rnic_cqe *cur;
	struct rnic_qp *cur_qp;
};

/*
 * A work queue ring: free-running producer/consumer indexes, the slot of
 * index i is i & (entries - 1). A WQE carries its index as wr_id; the
 * caller's wr_id waits in wr_id[] for the completion.
 */
struct rnic_wq {
	pthread_spinlock_t lock;
	uint8_t *ring;
	size_t ring_size;
	uint64_t *wr_id;
	uint32_t log;			/* 1 << log entries */
	uint32_t shift;			/* 1 << shift bytes per WQE */
	uint32_t max_sge;
	uint32_t prod;			/* next index (under lock) */
	_Atomic(uint32_t) cons;		/* oldest index not completed */
};

struct rnic_srq {
	struct ibv_srq ibv_srq;
	struct rnic_wq wq;
	uint32_t handle;
	unsigned long *done;		/* completed, not reclaimed */
};

struct rnicdv_mkey;

/*
 * Segment tables of mkey registrations too long for a WQE (rnic_mkey.c):
 * per_slot segments for each SQ slot, registered in the QP's PD.
 */
struct rnic_map_area {
	struct rnic_map_area *next;	/* older, narrower areas */
	void *buf;
	size_t size;
	struct ibv_mr *mr;
	uint32_t per_slot;
};

/* An mkey's keys before a registration of the open ibv_wr_*() batch. */
struct rnic_mkey_undo {
	struct rnicdv_mkey *mkey;
	uint32_t lkey;
	uint32_t rkey;
};

struct rnic_qp {
	struct verbs_qp vqp;
	struct rnic_wq sq;
	struct rnic_wq rq;		/* unused with an SRQ */
	struct rnic_srq *srq;
	uint32_t handle;
	uint32_t max_inline;
	uint8_t type;			/* enum rnic_qp_type */
	bool sig_all;
	/* ibv_wr_start() ... ibv_wr_complete() */
	uint32_t wr_cur;
	int wr_err;
	/* mkeys (rnicdv_wr_mr_*): keys to restore if the batch fails */
	struct rnic_mkey_undo *undo;
	uint32_t undo_len;
	uint32_t undo_cap;
	struct rnic_map_area *map_area;	/* newest first */
};

/* ibv_alloc_dm(): an allocation of the memory window, mapped */
struct rnic_dm {
	struct verbs_dm vdm;
	void *addr;			/* the window's bytes (write-combining) */
	size_t map_len;			/* mapped: length rounded up to pages */
	size_t length;			/* what was asked: memcpy bounds */
};

struct rnic_ah {
	struct ibv_ah ibv_ah;
	struct rnic_av av;		/* copied into every UD WQE */
};

static inline struct rnic_context *to_rctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct rnic_context, vctx.context);
}

static inline struct rnic_dm *to_rdm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct rnic_dm, vdm.dm);
}

static inline struct rnic_cq *to_rcq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct rnic_cq, vcq.cq);
}

static inline struct rnic_cq *to_rcq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct rnic_cq, vcq.cq_ex);
}

static inline struct rnic_qp *to_rqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct rnic_qp, vqp.qp);
}

static inline struct rnic_qp *to_rqp_ex(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct rnic_qp, vqp.qp_ex);
}

static inline struct rnic_srq *to_rsrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct rnic_srq, ibv_srq);
}

static inline struct rnic_ah *to_rah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct rnic_ah, ibv_ah);
}

/* ---------------------------------------------------------------------- */
/* Rings and doorbells                                                    */
/* ---------------------------------------------------------------------- */

static inline void rnic_ring_db(struct rnic_context *ctx, uint32_t offset,
				uint32_t handle, uint32_t flags, uint32_t index)
{
	/* one aligned 8-byte store: the device refuses anything else */
	mmio_write64_le((uint8_t *)ctx->db_page + offset,
			htole64(rnic_db_value(handle, flags, index)));
}

static inline uint32_t rnic_wq_entries(const struct rnic_wq *wq)
{
	return 1u << wq->log;
}

static inline void *rnic_wq_slot(const struct rnic_wq *wq, uint32_t idx)
{
	size_t slot = idx & (rnic_wq_entries(wq) - 1);

	return wq->ring + (slot << wq->shift);
}

static inline bool rnic_wq_full(struct rnic_wq *wq, uint32_t prod)
{
	return prod - atomic_load_explicit(&wq->cons, memory_order_acquire) >=
	       rnic_wq_entries(wq);
}

static inline void rnic_fill_sges(struct rnic_sge *dst,
				  const struct ibv_sge *src, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = htole64(src[i].addr);
		dst[i].length = htole32(src[i].length);
		dst[i].lkey = htole32(src[i].lkey);
	}
}

/* rnic.c */
bool rnic_is_rnic_device(struct ibv_device *device);
void *rnic_mmap_ring(struct ibv_context *ibctx, uint64_t key, size_t size);
int rnic_qp_table_insert(struct rnic_context *ctx, struct rnic_qp *qp);
void rnic_qp_table_remove(struct rnic_context *ctx, struct rnic_qp *qp);

static inline struct rnic_qp *rnic_qp_lookup(struct rnic_context *ctx,
					     uint32_t handle)
{
	struct rnic_qp **leaf;

	if (handle >= RNIC_QP_HANDLES)
		return NULL;
	leaf = ctx->qp_table[handle >> RNIC_QP_LEAF_SHIFT];
	if (!leaf)
		return NULL;
	return leaf[handle & ((1u << RNIC_QP_LEAF_SHIFT) - 1)];
}

/* rnic_cq.c */
struct ibv_cq *rnic_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
struct ibv_cq_ex *rnic_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr);
int rnic_destroy_cq(struct ibv_cq *ibcq);
int rnic_resize_cq(struct ibv_cq *ibcq, int cqe);
int rnic_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int rnic_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void rnic_cq_clean(struct rnic_cq *cq, struct rnic_qp *qp);

/* rnic_qp.c */
struct ibv_qp *rnic_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *rnic_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr);
int rnic_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr);
int rnic_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask);
int rnic_destroy_qp(struct ibv_qp *ibqp);
int rnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int rnic_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
int rnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int rnic_wq_init(struct ibv_context *ibctx, struct rnic_wq *wq, uint64_t key,
		 uint64_t size, uint32_t entries, uint32_t shift,
		 uint32_t min_shift, uint32_t max_sge);
void rnic_wq_fini(struct rnic_wq *wq);
int rnic_wq_post_recv(struct rnic_wq *wq, const struct ibv_recv_wr *wr);
bool rnic_qp_ex_is_rnic(struct ibv_qp_ex *qpx);
struct rnic_sq_wqe *rnic_wr_new(struct ibv_qp_ex *ibqp, uint8_t op);

static inline uint64_t rnic_qp_ctx_caps(struct rnic_qp *qp)
{
	return to_rctx(qp->vqp.qp.context)->caps;
}

/* rnic_mkey.c */
void rnic_mkey_undo(struct rnic_qp *qp);
void rnic_map_areas_free(struct rnic_qp *qp);

/* rnic_srq.c */
struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr);
int rnic_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask);
int rnic_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int rnic_destroy_srq(struct ibv_srq *ibsrq);
int rnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
uint64_t rnic_srq_complete(struct rnic_srq *srq, uint32_t index);

#endif /* RNIC_PROVIDER_H */
