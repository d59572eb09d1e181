// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic provider: shared receive queues. The device takes SRQ WQEs in ring
 * order, but their completions come in any order (several QPs share the
 * ring): a completed slot is marked and the consumer index advances over
 * the completed prefix, so a slot is reused only after its own completion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <util/bitmap.h>

#include "rnic.h"

/* The caller's wr_id of the SRQ WQE at 'index'; its slot is free again. */
uint64_t rnic_srq_complete(struct rnic_srq *srq, uint32_t index)
{
	struct rnic_wq *wq = &srq->wq;
	uint32_t mask = rnic_wq_entries(wq) - 1;
	uint32_t cons;
	uint64_t wr_id;

	pthread_spin_lock(&wq->lock);
	wr_id = wq->wr_id[index & mask];
	bitmap_set_bit(srq->done, index & mask);
	cons = atomic_load_explicit(&wq->cons, memory_order_relaxed);
	while (cons != wq->prod && bitmap_test_bit(srq->done, cons & mask)) {
		bitmap_clear_bit(srq->done, cons & mask);
		cons++;
	}
	atomic_store_explicit(&wq->cons, cons, memory_order_release);
	pthread_spin_unlock(&wq->lock);
	return wr_id;
}

int rnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);
	struct rnic_wq *wq = &srq->wq;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->prod;
	for (; wr; wr = wr->next) {
		ret = rnic_wq_post_recv(wq, wr);
		if (ret)
			break;
	}
	if (wq->prod != start) {
		udma_to_device_barrier();
		rnic_ring_db(to_rctx(ibsrq->context), RNIC_DB_SRQ, srq->handle,
			     0, wq->prod);
	}
	pthread_spin_unlock(&wq->lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

struct ibv_srq *rnic_create_srq(struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct urnic_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct rnic_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq(pd, &srq->ibv_srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	srq->handle = resp.srq_handle;
	ret = rnic_wq_init(pd->context, &srq->wq, resp.ring_key, resp.ring_size,
			   resp.entries, resp.wqe_shift, RNIC_RQ_WQE_SHIFT_MIN,
			   resp.max_sge);
	if (ret)
		goto err_destroy;
	srq->done = bitmap_alloc0(resp.entries);
	if (!srq->done) {
		ret = ENOMEM;
		goto err_fini;
	}
	return &srq->ibv_srq;

err_fini:
	rnic_wq_fini(&srq->wq);
err_destroy:
	ibv_cmd_destroy_srq(&srq->ibv_srq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * IBV_SRQ_MAX_WR: the kernel maps a new ring and names it in 'resp' before
 * the device moves the WQEs not yet taken there (at their free-running
 * indexes); the shadow arrays move the same way. Posts and completions
 * wait on the lock meanwhile.
 */
static int rnic_srq_resize(struct rnic_srq *srq, struct ibv_srq_attr *attr,
			   int attr_mask)
{
	struct rnic_wq *wq = &srq->wq;
	struct rnic_modify_srq_resp resp = {};
	struct urnic_modify_srq cmd = {};
	uint32_t omask = rnic_wq_entries(wq) - 1, nmask, i, cons;
	unsigned long *done;
	uint64_t *wr_id;
	uint8_t *ring;
	int ret;

	cmd.resp_addr = (uintptr_t)&resp;
	pthread_spin_lock(&wq->lock);
	ret = ibv_cmd_modify_srq(&srq->ibv_srq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (ret)
		goto out;
	ret = ENOMEM;
	if (!resp.entries || (resp.entries & (resp.entries - 1)) ||
	    resp.ring_size < (uint64_t)resp.entries << wq->shift) {
		ret = EINVAL;
		goto out;
	}
	nmask = resp.entries - 1;
	wr_id = calloc(resp.entries, sizeof(*wr_id));
	done = bitmap_alloc0(resp.entries);
	ring = rnic_mmap_ring(srq->ibv_srq.context, resp.ring_key,
			      resp.ring_size);
	if (!wr_id || !done || !ring) {
		/* the device runs on the new ring: nothing to go back to */
		free(wr_id);
		free(done);
		goto out;
	}
	cons = atomic_load_explicit(&wq->cons, memory_order_relaxed);
	for (i = cons; i != wq->prod; i++) {
		wr_id[i & nmask] = wq->wr_id[i & omask];
		if (bitmap_test_bit(srq->done, i & omask))
			bitmap_set_bit(done, i & nmask);
	}
	munmap(wq->ring, wq->ring_size);
	free(wq->wr_id);
	free(srq->done);
	wq->ring = ring;
	wq->ring_size = resp.ring_size;
	wq->wr_id = wr_id;
	wq->log = __builtin_ctz(resp.entries);
	srq->done = done;
	ret = 0;
out:
	pthread_spin_unlock(&wq->lock);
	return ret;
}

int rnic_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	if (attr_mask & IBV_SRQ_MAX_WR)
		return rnic_srq_resize(to_rsrq(ibsrq), attr, attr_mask);
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int rnic_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int rnic_destroy_srq(struct ibv_srq *ibsrq)
{
	struct rnic_srq *srq = to_rsrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	rnic_wq_fini(&srq->wq);
	free(srq->done);
	free(srq);
	return 0;
}
