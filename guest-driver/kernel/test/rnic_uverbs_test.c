// SPDX-License-Identifier: GPL-2.0
/*
 * rnic-uverbs-test: the user-space path of rnic.ko without a provider.
 *
 * Talks to /dev/infiniband/uverbsN with the uverbs write() commands and the
 * driver's udata (rnic/rnic-user-abi.h), maps the doorbell page and the rings
 * the kernel hands out, and then does what a provider does: writes WQEs
 * into the mmapped send/receive queues, rings doorbells in its own page and
 * polls the mmapped CQ. One RC QP connected to itself (RoCE loopback in the
 * device) does an RDMA WRITE and a SEND/RECV between two user MRs.
 *
 * With --hold N it keeps its context, QP and mappings for N seconds after
 * the test (rmmod / device recovery must disassociate it) and then reads
 * the mappings once more: the zapped pages read as zeroes, no crash.
 *
 * Built statically on the host by scripts/guest/build-driver.sh; runs in
 * the guest as rnic-uverbs-test. Exit status 0 when everything passed.
 * (The device ABI's RNIC_QP_* masks, RNIC_QPS_* states and RNIC_MTU_* are
 * the IB values the uverbs commands take.)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "rnic/rnic-abi.h"
#include "rnic/rnic-user-abi.h"

#define FAIL(...) do { fprintf(stderr, "uverbs: FAIL: " __VA_ARGS__); \
		       fputc('\n', stderr); exit(1); } while (0)
#define BUF_SIZE 65536

static int fd;

/* One legacy write() command: header, command, response buffer. */
static void uv_cmd(uint32_t command, void *cmd, size_t cmd_len,
		   size_t resp_len, const char *what)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		uint8_t body[512];
	} buf;
	size_t len = sizeof(buf.hdr) + cmd_len;

	buf.hdr.command = command;
	buf.hdr.in_words = len / 4;
	buf.hdr.out_words = resp_len / 4;
	memcpy(buf.body, cmd, cmd_len);
	if (write(fd, &buf, len) != (ssize_t)len)
		FAIL("%s: %s", what, strerror(errno));
}

static void *uv_mmap(uint64_t key, size_t size, const char *what)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, key);

	if (p == MAP_FAILED)
		FAIL("mmap %s (key 0x%llx, %zu bytes): %s", what,
		     (unsigned long long)key, size, strerror(errno));
	return p;
}

/* The uverbs device of rnic0 and the index of its IPv4-mapped GID. */
static int open_rnic(int *gid_index, uint8_t gid[16])
{
	char path[256], name[64];
	int i, n = -1;
	FILE *f;

	for (i = 0; i < 16; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/uverbs%d/ibdev", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%63s", name) == 1 && !strncmp(name, "rnic", 4))
			n = i;
		fclose(f);
		if (n >= 0)
			break;
	}
	if (n < 0)
		FAIL("no uverbs device of an rnic");
	for (i = 0; i < 16; i++) {
		unsigned int g[8];
		int k;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", name, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		k = fscanf(f, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1], &g[2],
			   &g[3], &g[4], &g[5], &g[6], &g[7]);
		fclose(f);
		if (k == 8 && g[5] == 0xffff && !g[0]) {
			for (k = 0; k < 8; k++) {
				gid[2 * k] = g[k] >> 8;
				gid[2 * k + 1] = g[k];
			}
			*gid_index = i;
			break;
		}
	}
	if (i == 16)
		FAIL("%s has no IPv4 GID (address on its interface?)", name);
	snprintf(path, sizeof(path), "/dev/infiniband/uverbs%d", n);
	printf("uverbs: %s via %s, GID index %d\n", name, path, *gid_index);
	return open(path, O_RDWR | O_CLOEXEC);
}

static void modify_qp(struct ib_uverbs_modify_qp *m, const char *what)
{
	uv_cmd(IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), 0, what);
}

/* Poll the mmapped CQ for one CQE; consumer index in *cons. */
static struct rnic_cqe poll_cq(struct rnic_cqe *ring, uint32_t log,
			       uint32_t *cons, volatile uint8_t *db,
			       uint32_t cq_handle)
{
	struct rnic_cqe *c = &ring[*cons & ((1u << log) - 1)];
	uint8_t want = ((*cons >> log) & 1) ^ 1;
	struct timespec t0, t;
	struct rnic_cqe out;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((*(volatile uint8_t *)&c->owner & 1) != want) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20)
			FAIL("no completion at CQ index %u", *cons);
		usleep(100);
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	out = *c;
	(*cons)++;
	*(volatile uint64_t *)(db + RNIC_DB_CQ) = rnic_db_value(cq_handle, 0, *cons);
	return out;
}

/* Write a one-SGE send WQE into SQ slot 'idx' and ring the SQ doorbell. */
static void post_send(void *ring, unsigned int shift, uint32_t idx,
		      uint8_t opcode, uint64_t wr_id, const void *buf,
		      uint32_t len, uint32_t lkey, const void *raddr,
		      uint32_t rkey, volatile uint8_t *db, uint32_t qp_handle)
{
	struct rnic_sq_wqe *w = (struct rnic_sq_wqe *)((uint8_t *)ring +
						       ((size_t)idx << shift));
	struct rnic_sge *sge = (struct rnic_sge *)(w + 1);

	memset(w, 0, 1u << shift);
	w->wr_id = wr_id;
	w->opcode = opcode;
	w->flags = RNIC_WQE_SIGNALED;
	w->num_sge = 1;
	w->rdma.remote_addr = (uintptr_t)raddr;
	w->rdma.rkey = rkey;
	sge->addr = (uintptr_t)buf;
	sge->length = len;
	sge->lkey = lkey;
	/* the WQE before the doorbell that announces it */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint64_t *)(db + RNIC_DB_SQ) = rnic_db_value(qp_handle, 0, idx + 1);
}

/*
 * A mapped STag from user space (RNIC_UREG_MR_MAPPED, ABI 1.6): REG_MR with
 * the udata allocates it, a REG_MR work request at SQ slot 'idx' maps three
 * ranges of dst onto it with a new key (the table in src, named by the
 * WQE's one SGE), an RDMA WRITE through it scatters src over those ranges,
 * DEREG_MR frees it whatever its key is now.
 */
static void mapped_stag(uint32_t pd_handle, void *sq, unsigned int shift,
			uint32_t idx, uint8_t *src, uint32_t src_lkey,
			uint8_t *dst, uint32_t dst_lkey, volatile uint8_t *db,
			uint32_t qp_handle, struct rnic_cqe *cqring,
			uint32_t cq_log, uint32_t *cq_cons, uint32_t cq_handle)
{
	static const uint32_t off[3] = { 3, 5000, 9501 };
	static const uint32_t len[3] = { 100, 4097, 33 };
	struct { struct ib_uverbs_reg_mr core;
		 struct rnic_reg_mr drv; } rm = {};
	struct ib_uverbs_reg_mr_resp mk = {};
	struct ib_uverbs_dereg_mr dm = {};
	struct rnic_map_seg *tbl = (struct rnic_map_seg *)(src + BUF_SIZE - 4096);
	struct rnic_sq_wqe *w = (struct rnic_sq_wqe *)((uint8_t *)sq +
						       ((size_t)idx << shift));
	struct rnic_sge *sge = (struct rnic_sge *)(w + 1);
	uint64_t iova = 0x10000;
	uint32_t stag, total = 0, i, k, pos;
	struct rnic_cqe c;

	rm.core.pd_handle = pd_handle;
	rm.core.response = (uintptr_t)&mk;
	rm.drv.flags = RNIC_UREG_MR_MAPPED;
	rm.drv.max_segs = 4;
	uv_cmd(IB_USER_VERBS_CMD_REG_MR, &rm, sizeof(rm), sizeof(mk),
	       "REG_MR mapped");
	for (i = 0; i < 3; i++) {
		tbl[i] = (struct rnic_map_seg){ .addr = (uintptr_t)dst + off[i],
						.length = len[i],
						.lkey = dst_lkey };
		total += len[i];
	}
	memset(dst, 0, BUF_SIZE);
	stag = (mk.lkey & ~0xffu) | ((mk.lkey + 0x5b) & 0xff);
	memset(w, 0, 1u << shift);
	w->wr_id = 0x4444;
	w->opcode = RNIC_WR_REG_MR;
	w->flags = RNIC_WQE_SIGNALED;
	w->num_sge = 1;
	w->imm_or_inv = 1;
	w->reg.iova = iova;
	w->reg.length = total;
	w->reg.stag = stag;
	w->reg.access = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE;
	w->reg.npages = 3;
	sge->addr = (uintptr_t)tbl;
	sge->length = 3 * sizeof(*tbl);
	sge->lkey = src_lkey;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint64_t *)(db + RNIC_DB_SQ) = rnic_db_value(qp_handle, 0, idx + 1);
	c = poll_cq(cqring, cq_log, cq_cons, db, cq_handle);
	if (c.status || c.opcode != RNIC_WC_REG_MR || c.wr_id != 0x4444)
		FAIL("mapped REG_MR completion: status %u opcode %u wr_id 0x%llx",
		     c.status, c.opcode, (unsigned long long)c.wr_id);
	post_send(sq, shift, idx + 1, RNIC_WR_RDMA_WRITE, 0x5555, src, total,
		  src_lkey, (void *)(uintptr_t)iova, stag, db, qp_handle);
	c = poll_cq(cqring, cq_log, cq_cons, db, cq_handle);
	if (c.status || c.opcode != RNIC_WC_RDMA_WRITE || c.wr_id != 0x5555)
		FAIL("WRITE through the mapped STag: status %u opcode %u",
		     c.status, c.opcode);
	for (i = 0, pos = 0; i < 3; pos += len[i++])
		if (memcmp(dst + off[i], src + pos, len[i]))
			FAIL("WRITE through the mapped STag: segment %u wrong", i);
	for (k = 0; k < BUF_SIZE; k++) {
		for (i = 0; i < 3 && (k < off[i] || k >= off[i] + len[i]); i++)
			;
		if (i == 3 && dst[k])
			FAIL("WRITE through the mapped STag: byte %u outside the set", k);
	}
	printf("uverbs: mapped STag 0x%x (allocated as 0x%x): WRITE of %u bytes over 3 segments: PASS\n",
	       stag, mk.lkey, total);
	dm.mr_handle = mk.mr_handle;
	uv_cmd(IB_USER_VERBS_CMD_DEREG_MR, &dm, sizeof(dm), 0, "DEREG_MR mapped");
	printf("uverbs: mapped STag freed\n");
}

int main(int argc, char **argv)
{
	int hold = argc == 3 && !strcmp(argv[1], "--hold") ? atoi(argv[2]) : 0;
	struct ib_uverbs_get_context gc = {};
	struct { struct ib_uverbs_get_context_resp core;
		 struct rnic_alloc_ucontext_resp drv; } gcr = {};
	struct ib_uverbs_alloc_pd ap = {};
	struct { struct ib_uverbs_alloc_pd_resp core;
		 struct rnic_alloc_pd_resp drv; } apr = {};
	struct ib_uverbs_reg_mr rm = {};
	struct ib_uverbs_reg_mr_resp src_mr = {}, dst_mr = {};
	struct ib_uverbs_create_cq cc = {};
	struct { struct ib_uverbs_create_cq_resp core;
		 struct rnic_create_cq_resp drv; } ccr = {};
	struct ib_uverbs_create_qp cq = {};
	struct { struct ib_uverbs_create_qp_resp core;
		 struct rnic_create_qp_resp drv; } cqr = {};
	struct ib_uverbs_modify_qp m;
	struct ib_uverbs_destroy_qp dq = {};
	struct ib_uverbs_destroy_qp_resp dqr;
	struct ib_uverbs_destroy_cq dc = {};
	struct ib_uverbs_destroy_cq_resp dcr;
	struct ib_uverbs_dereg_mr dm = {};
	struct ib_uverbs_dealloc_pd dp = {};
	void *sq;
	struct rnic_rq_wqe *rq;
	struct rnic_sge *sge;
	struct rnic_cqe *cqring, c;
	volatile uint8_t *db;
	uint8_t *src, *dst, gid[16];
	uint32_t cq_cons = 0, cq_log, i;
	int gid_index = 0;

	fd = open_rnic(&gid_index, gid);
	if (fd < 0)
		FAIL("open: %s", strerror(errno));

	/* context: the doorbell page */
	gc.response = (uintptr_t)&gcr;
	uv_cmd(IB_USER_VERBS_CMD_GET_CONTEXT, &gc, sizeof(gc), sizeof(gcr),
	       "GET_CONTEXT");
	printf("uverbs: context: device user context %u, doorbell key 0x%llx, max_qp_wr %u\n",
	       gcr.drv.uctx, (unsigned long long)gcr.drv.db_key, gcr.drv.max_qp_wr);
	if (!gcr.drv.uctx || gcr.drv.db_size != 4096)
		FAIL("bad context response");
	db = uv_mmap(gcr.drv.db_key, gcr.drv.db_size, "doorbell page");

	ap.response = (uintptr_t)&apr;
	uv_cmd(IB_USER_VERBS_CMD_ALLOC_PD, &ap, sizeof(ap), sizeof(apr), "ALLOC_PD");

	src = aligned_alloc(4096, BUF_SIZE);
	dst = aligned_alloc(4096, BUF_SIZE);
	for (i = 0; i < BUF_SIZE; i++) {
		src[i] = i * 7 + 3;
		dst[i] = 0;
	}
	rm.pd_handle = apr.core.pd_handle;
	rm.length = BUF_SIZE;
	rm.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE;
	rm.start = rm.hca_va = (uintptr_t)src;
	rm.response = (uintptr_t)&src_mr;
	uv_cmd(IB_USER_VERBS_CMD_REG_MR, &rm, sizeof(rm), sizeof(src_mr), "REG_MR src");
	rm.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;
	rm.start = rm.hca_va = (uintptr_t)dst;
	rm.response = (uintptr_t)&dst_mr;
	uv_cmd(IB_USER_VERBS_CMD_REG_MR, &rm, sizeof(rm), sizeof(dst_mr), "REG_MR dst");
	printf("uverbs: MRs: src lkey 0x%x, dst rkey 0x%x\n", src_mr.lkey, dst_mr.rkey);

	cc.response = (uintptr_t)&ccr;
	cc.cqe = 16;
	cc.comp_channel = -1;
	uv_cmd(IB_USER_VERBS_CMD_CREATE_CQ, &cc, sizeof(cc), sizeof(ccr), "CREATE_CQ");
	cqring = uv_mmap(ccr.drv.ring_key, ccr.drv.ring_size, "CQ ring");
	for (cq_log = 0; (1u << cq_log) < ccr.drv.entries; cq_log++)
		;
	printf("uverbs: CQ handle %u, %u entries, ring %llu bytes\n",
	       ccr.drv.cq_handle, ccr.drv.entries,
	       (unsigned long long)ccr.drv.ring_size);

	cq.response = (uintptr_t)&cqr;
	cq.pd_handle = apr.core.pd_handle;
	cq.send_cq_handle = cq.recv_cq_handle = ccr.core.cq_handle;
	cq.max_send_wr = cq.max_recv_wr = 8;
	cq.max_send_sge = cq.max_recv_sge = 1;
	cq.qp_type = IB_UVERBS_QPT_RC;
	uv_cmd(IB_USER_VERBS_CMD_CREATE_QP, &cq, sizeof(cq), sizeof(cqr), "CREATE_QP");
	sq = uv_mmap(cqr.drv.sq_key, cqr.drv.sq_size, "SQ");
	rq = uv_mmap(cqr.drv.rq_key, cqr.drv.rq_size, "RQ");
	printf("uverbs: QP %u (handle %u): SQ %u x %u B, RQ %u x %u B, inline %u\n",
	       cqr.drv.qpn, cqr.drv.qp_handle, cqr.drv.sq_entries,
	       1u << cqr.drv.sq_wqe_shift, cqr.drv.rq_entries,
	       1u << cqr.drv.rq_wqe_shift, cqr.drv.max_inline);

	/* connect the QP to itself */
	memset(&m, 0, sizeof(m));
	m.qp_handle = cqr.core.qp_handle;
	m.attr_mask = RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS;
	m.qp_state = RNIC_QPS_INIT;
	m.port_num = 1;
	m.qp_access_flags = IB_UVERBS_ACCESS_REMOTE_WRITE | IB_UVERBS_ACCESS_LOCAL_WRITE;
	modify_qp(&m, "MODIFY_QP INIT");
	memset(&m, 0, sizeof(m));
	m.qp_handle = cqr.core.qp_handle;
	m.attr_mask = RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
		      RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER;
	m.qp_state = RNIC_QPS_RTR;
	memcpy(m.dest.dgid, gid, 16);
	m.dest.sgid_index = gid_index;
	m.dest.hop_limit = 64;
	m.dest.is_global = 1;
	m.dest.port_num = 1;
	m.path_mtu = RNIC_MTU_1024;
	m.dest_qp_num = cqr.drv.qpn;
	m.max_dest_rd_atomic = 1;
	m.min_rnr_timer = 12;
	modify_qp(&m, "MODIFY_QP RTR");
	memset(&m, 0, sizeof(m));
	m.qp_handle = cqr.core.qp_handle;
	m.attr_mask = RNIC_QP_STATE | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
		      RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC;
	m.qp_state = RNIC_QPS_RTS;
	m.timeout = 14;
	m.retry_cnt = 7;
	m.rnr_retry = 7;
	m.max_rd_atomic = 1;
	modify_qp(&m, "MODIFY_QP RTS");
	printf("uverbs: QP connected to itself (RTS)\n");

	/* RDMA WRITE src -> dst through the mmapped SQ and doorbell page */
	post_send(sq, cqr.drv.sq_wqe_shift, 0, RNIC_WR_RDMA_WRITE, 0x1111, src,
		  BUF_SIZE, src_mr.lkey, dst, dst_mr.rkey, db, cqr.drv.qp_handle);
	c = poll_cq(cqring, cq_log, &cq_cons, db, ccr.drv.cq_handle);
	if (c.status || c.opcode != RNIC_WC_RDMA_WRITE || c.wr_id != 0x1111)
		FAIL("WRITE completion: status %u opcode %u wr_id 0x%llx",
		     c.status, c.opcode, (unsigned long long)c.wr_id);
	if (memcmp(src, dst, BUF_SIZE))
		FAIL("WRITE: destination differs");
	printf("uverbs: RDMA WRITE of %d bytes: PASS\n", BUF_SIZE);

	/* SEND/RECV: a receive in the mmapped RQ, a send from the SQ */
	memset(dst, 0, BUF_SIZE);
	memset(rq, 0, 1u << cqr.drv.rq_wqe_shift);
	rq->wr_id = 0x2222;
	rq->num_sge = 1;
	sge = (struct rnic_sge *)(rq + 1);
	sge->addr = (uintptr_t)dst;
	sge->length = BUF_SIZE;
	sge->lkey = dst_mr.lkey;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	*(volatile uint64_t *)(db + RNIC_DB_RQ) =
		rnic_db_value(cqr.drv.qp_handle, 0, 1);
	post_send(sq, cqr.drv.sq_wqe_shift, 1, RNIC_WR_SEND, 0x3333, src, 5000,
		  src_mr.lkey, NULL, 0, db, cqr.drv.qp_handle);
	for (i = 0; i < 2; i++) {
		c = poll_cq(cqring, cq_log, &cq_cons, db, ccr.drv.cq_handle);
		if (c.status)
			FAIL("SEND/RECV completion wr_id 0x%llx: status %u",
			     (unsigned long long)c.wr_id, c.status);
		if (c.opcode == RNIC_WC_RECV &&
		    (c.wr_id != 0x2222 || c.byte_len != 5000 || memcmp(src, dst, 5000)))
			FAIL("RECV: wr_id 0x%llx len %u or data wrong",
			     (unsigned long long)c.wr_id, c.byte_len);
	}
	printf("uverbs: SEND/RECV of 5000 bytes: PASS\n");

	if (gcr.drv.caps & RNIC_CAP_MAPPED)
		mapped_stag(apr.core.pd_handle, sq, cqr.drv.sq_wqe_shift, 2, src,
			    src_mr.lkey, dst, dst_mr.lkey, db, cqr.drv.qp_handle,
			    cqring, cq_log, &cq_cons, ccr.drv.cq_handle);
	else
		printf("uverbs: mapped STag: the device has no RNIC_CAP_MAPPED, skipped\n");

	if (hold) {
		printf("uverbs: holding the context for %d s\n", hold);
		fflush(stdout);
		sleep(hold);
		printf("uverbs: after hold: CQ ring byte 0x%02x, SQ byte 0x%02x\n",
		       ((volatile uint8_t *)cqring)[63], ((volatile uint8_t *)sq)[8]);
		close(fd);
		printf("uverbs: released\n");
		return 0;
	}

	/* teardown through the kernel */
	dq.response = (uintptr_t)&dqr;
	dq.qp_handle = cqr.core.qp_handle;
	uv_cmd(IB_USER_VERBS_CMD_DESTROY_QP, &dq, sizeof(dq), sizeof(dqr), "DESTROY_QP");
	dc.response = (uintptr_t)&dcr;
	dc.cq_handle = ccr.core.cq_handle;
	uv_cmd(IB_USER_VERBS_CMD_DESTROY_CQ, &dc, sizeof(dc), sizeof(dcr), "DESTROY_CQ");
	dm.mr_handle = src_mr.mr_handle;
	uv_cmd(IB_USER_VERBS_CMD_DEREG_MR, &dm, sizeof(dm), 0, "DEREG_MR");
	dm.mr_handle = dst_mr.mr_handle;
	uv_cmd(IB_USER_VERBS_CMD_DEREG_MR, &dm, sizeof(dm), 0, "DEREG_MR");
	dp.pd_handle = apr.core.pd_handle;
	uv_cmd(IB_USER_VERBS_CMD_DEALLOC_PD, &dp, sizeof(dp), 0, "DEALLOC_PD");
	close(fd);
	printf("uverbs: all passed\n");
	return 0;
}
