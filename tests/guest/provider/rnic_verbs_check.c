// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_verbs_check: exercises the rnic rdma-core provider through plain
 * libibverbs in one guest (QPs connected to each other over the device's
 * loopback path), checking data, completions and the corner cases the
 * unmodified tools do not reach:
 *
 *   send/recv with immediate and inline data, RDMA WRITE (+imm), READ,
 *   atomics; kernel bypass (no write()/read() system call while posting
 *   and polling); the ibv_wr_*() API and ibv_create_cq_ex() polling, and
 *   the clean refusal of what they do not support; FLUSH and ATOMIC WRITE
 *   (ibv_wr_flush(), ibv_wr_atomic_write()) and their refusals; UD through an AH; SRQ;
 *   completion channels; CQ resize with CQEs outstanding; flush on ERR;
 *   RESET and reuse; destroying a QP with CQEs outstanding; send queue
 *   overflow; many passes over the rings (owner bit phases).
 *
 * Usage: rnic_verbs_check [-d DEVICE] [-g GID_INDEX] [-n ITERS] [TEST...]
 * Prints "ok NAME" or "FAIL NAME: why" per test; exit status 1 on failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#define BUF_SIZE	(64 * 1024)
#define DEPTH		64
#define TIMEOUT_MS	10000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index = -1;
static int iters = 2000;
static char failure[512];

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			snprintf(failure, sizeof(failure), __VA_ARGS__);       \
			return -1;                                             \
		}                                                              \
	} while (0)

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	struct ibv_mr *mr;
};

static int buf_alloc(struct buf *b, size_t size)
{
	b->p = aligned_alloc(4096, size);
	CHECK(b->p, "no memory");
	memset(b->p, 0, size);
	b->mr = ibv_reg_mr(pd, b->p, size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(b->mr, "ibv_reg_mr: %s", strerror(errno));
	return 0;
}

static void buf_free(struct buf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* Poll until n completions arrived (any status) or the timeout. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	uint64_t end = now_ms() + TIMEOUT_MS;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		CHECK(r >= 0, "ibv_poll_cq: %d", r);
		got += r;
		if (!r && now_ms() > end)
			CHECK(0, "%d of %d completions after %d ms", got, n,
			      TIMEOUT_MS);
	}
	return 0;
}

static int poll_ok(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int i;

	if (poll_n(cq, wc, n))
		return -1;
	for (i = 0; i < n; i++)
		CHECK(wc[i].status == IBV_WC_SUCCESS,
		      "completion %d (wr_id %" PRIu64 "): %s", i, wc[i].wr_id,
		      ibv_wc_status_str(wc[i].status));
	return 0;
}

/* Nothing more in the CQ. */
static int cq_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int r = ibv_poll_cq(cq, 1, &wc);

	CHECK(r == 0, "unexpected completion (wr_id %" PRIu64 ", %s)",
	      wc.wr_id, ibv_wc_status_str(wc.status));
	return 0;
}

static struct ibv_qp *rc_qp(struct ibv_cq *scq, struct ibv_cq *rcq,
			    struct ibv_srq *srq, int depth)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = srq,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = srq ? 0 : depth,
			.max_send_sge = 2,
			.max_recv_sge = 2,
			.max_inline_data = 64,
		},
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &a);
}

static int qp_init(struct ibv_qp *qp, enum ibv_qp_type type)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
		.qkey = 0x11111111,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	CHECK(!ibv_modify_qp(qp, &a, mask), "INIT: %s", strerror(errno));
	return 0;
}

/* RESET -> INIT -> RTR -> RTS, connected to dest_qpn on this device. */
static int rc_connect(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.rq_psn = 0x1000,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = gid, .sgid_index = gid_index,
				 .hop_limit = 64 },
			.port_num = 1,
		},
	};

	if (qp_init(qp, IBV_QPT_RC))
		return -1;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER),
	      "RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0x1000;
	a.max_rd_atomic = 4;
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
	      "RTS: %s", strerror(errno));
	return 0;
}

static int post_recv(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t wr_id,
		     void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int r = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		      ibv_post_recv(qp, &wr, &bad);

	CHECK(!r, "post_recv: %s", strerror(r));
	return 0;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int r = ibv_post_send(qp, wr, &bad);

	CHECK(!r, "post_send: %s", strerror(r));
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* A connected pair: a and b, their own CQs, buffers. */
struct pair {
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct buf ba, bb;
};

static void pair_free(struct pair *p)
{
	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	if (p->cqa)
		ibv_destroy_cq(p->cqa);
	if (p->cqb)
		ibv_destroy_cq(p->cqb);
	buf_free(&p->ba);
	buf_free(&p->bb);
	memset(p, 0, sizeof(*p));
}

static int pair_make(struct pair *p, int depth)
{
	memset(p, 0, sizeof(*p));
	p->cqa = ibv_create_cq(ctx, 2 * depth, NULL, NULL, 0);
	p->cqb = ibv_create_cq(ctx, 2 * depth, NULL, NULL, 0);
	CHECK(p->cqa && p->cqb, "ibv_create_cq: %s", strerror(errno));
	p->a = rc_qp(p->cqa, p->cqa, NULL, depth);
	p->b = rc_qp(p->cqb, p->cqb, NULL, depth);
	CHECK(p->a && p->b, "ibv_create_qp: %s", strerror(errno));
	if (buf_alloc(&p->ba, BUF_SIZE) || buf_alloc(&p->bb, BUF_SIZE))
		return -1;
	if (rc_connect(p->a, p->b->qp_num) || rc_connect(p->b, p->a->qp_num))
		return -1;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                  */
/* ---------------------------------------------------------------------- */

/* SEND of many sizes, with immediate, inline; data and lengths checked. */
static int test_send(void)
{
	static const uint32_t sizes[] = { 0, 1, 8, 63, 64, 1023, 1024, 1025,
					  4096, 9000, 65536 };
	struct ibv_wc wc[2];
	struct pair p;
	unsigned int i;
	int ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) * 3; i++) {
		uint32_t len = sizes[i % 11];
		bool inl = (i / 11) == 1 && len <= 64;
		bool imm = (i / 11) == 2;
		struct ibv_sge sge = { (uintptr_t)p.ba.p, len, p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 1000 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED |
				      (inl ? IBV_SEND_INLINE : 0),
			.imm_data = htonl(0xabc00000 + i),
		};

		fill(p.ba.p, len, i);
		memset(p.bb.p, 0xee, BUF_SIZE);
		if (post_recv(p.b, NULL, 2000 + i, p.bb.p, BUF_SIZE,
			      p.bb.mr->lkey) || post_send(p.a, &wr))
			goto out;
		if (inl)	/* inline: the buffer is ours again at once */
			memset(p.ba.p, 0, len);
		if (poll_ok(p.cqa, wc, 1) || poll_ok(p.cqb, wc + 1, 1))
			goto out;
		if (wc[0].wr_id != 1000 + i || wc[0].opcode != IBV_WC_SEND ||
		    wc[1].wr_id != 2000 + i || wc[1].opcode != IBV_WC_RECV ||
		    wc[1].byte_len != len || wc[1].qp_num != p.b->qp_num) {
			snprintf(failure, sizeof(failure),
				 "size %u: wr_id %" PRIu64 "/%" PRIu64
				 " opcode %d/%d byte_len %u qp_num %u",
				 len, wc[0].wr_id, wc[1].wr_id, wc[0].opcode,
				 wc[1].opcode, wc[1].byte_len, wc[1].qp_num);
			goto out;
		}
		if (imm && (!(wc[1].wc_flags & IBV_WC_WITH_IMM) ||
			    ntohl(wc[1].imm_data) != 0xabc00000 + i)) {
			snprintf(failure, sizeof(failure),
				 "immediate: flags 0x%x data 0x%x",
				 wc[1].wc_flags, ntohl(wc[1].imm_data));
			goto out;
		}
		fill(p.ba.p, len, i);	/* the inline case zeroed it */
		if (memcmp(p.ba.p, p.bb.p, len) || (len < BUF_SIZE &&
						    p.bb.p[len] != 0xee)) {
			snprintf(failure, sizeof(failure),
				 "size %u%s: data differ", len,
				 inl ? " inline" : "");
			goto out;
		}
	}
	ret = cq_empty(p.cqa) || cq_empty(p.cqb) ? -1 : 0;
out:
	pair_free(&p);
	return ret;
}

/* RDMA WRITE, WRITE with immediate, READ, both atomics. */
static int test_rdma(void)
{
	struct ibv_wc wc[2];
	struct pair p;
	uint64_t *remote64, *result;
	int ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	{
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 30000,
				       p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 1, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)p.bb.p + 100, p.bb.mr->rkey },
		};

		fill(p.ba.p, 30000, 7);
		if (post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1))
			goto out;
		if (wc[0].opcode != IBV_WC_RDMA_WRITE ||
		    memcmp(p.bb.p + 100, p.ba.p, 30000)) {
			snprintf(failure, sizeof(failure), "WRITE: data");
			goto out;
		}
		/* WRITE with immediate consumes a receive */
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(0x5eed);
		wr.wr.rdma.remote_addr = (uintptr_t)p.bb.p + 40000;
		sge.length = 4000;
		if (post_recv(p.b, NULL, 77, NULL, 0, 0) ||
		    post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1) ||
		    poll_ok(p.cqb, wc + 1, 1))
			goto out;
		if (wc[1].opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
		    wc[1].wr_id != 77 || ntohl(wc[1].imm_data) != 0x5eed ||
		    wc[1].byte_len != 4000 ||
		    memcmp(p.bb.p + 40000, p.ba.p, 4000)) {
			snprintf(failure, sizeof(failure),
				 "WRITE_WITH_IMM: opcode %d wr_id %" PRIu64
				 " imm 0x%x len %u", wc[1].opcode, wc[1].wr_id,
				 ntohl(wc[1].imm_data), wc[1].byte_len);
			goto out;
		}
		/* READ back into another place */
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)p.bb.p + 100;
		sge.addr = (uintptr_t)p.ba.p + 32768;
		sge.length = 30000;
		memset(p.ba.p + 32768, 0, 30000);
		if (post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1))
			goto out;
		if (wc[0].opcode != IBV_WC_RDMA_READ ||
		    wc[0].byte_len != 30000 ||
		    memcmp(p.ba.p + 32768, p.ba.p, 30000)) {
			snprintf(failure, sizeof(failure), "READ: len %u / data",
				 wc[0].byte_len);
			goto out;
		}
	}
	/* atomics on an 8-byte word of b, results into a */
	remote64 = (uint64_t *)(p.bb.p + 8);
	result = (uint64_t *)(p.ba.p + 64);
	*remote64 = 1000;
	{
		struct ibv_sge sge = { (uintptr_t)result, 8, p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 3, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.atomic = { (uintptr_t)remote64, 5, 0,
				       p.bb.mr->rkey },
		};

		if (post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1))
			goto out;
		if (wc[0].opcode != IBV_WC_FETCH_ADD || *result != 1000 ||
		    *remote64 != 1005) {
			snprintf(failure, sizeof(failure),
				 "FETCH_ADD: got %" PRIu64 ", remote %" PRIu64,
				 *result, *remote64);
			goto out;
		}
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 1005;
		wr.wr.atomic.swap = 0xdeadbeefcafe;
		if (post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1))
			goto out;
		if (wc[0].opcode != IBV_WC_COMP_SWAP || *result != 1005 ||
		    *remote64 != 0xdeadbeefcafe) {
			snprintf(failure, sizeof(failure),
				 "CMP_SWP: got %" PRIu64 ", remote 0x%" PRIx64,
				 *result, *remote64);
			goto out;
		}
	}
	ret = 0;
out:
	pair_free(&p);
	return ret;
}

static int read_io(uint64_t *syscr, uint64_t *syscw)
{
	char buf[512], *s;
	int fd = open("/proc/self/io", O_RDONLY);
	ssize_t n;

	CHECK(fd >= 0, "/proc/self/io: %s", strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0, "/proc/self/io: %s", strerror(errno));
	buf[n] = 0;
	s = strstr(buf, "syscr:");
	CHECK(s, "no syscr");
	*syscr = strtoull(s + 6, NULL, 10);
	s = strstr(buf, "syscw:");
	CHECK(s, "no syscw");
	*syscw = strtoull(s + 6, NULL, 10);
	return 0;
}

/*
 * Kernel bypass: a ping-pong of 'iters' messages each way, posting and
 * polling only, costs no read()/write() on the uverbs fd (the fallback
 * ibv_cmd_post_send/poll_cq paths are write() commands).
 */
static int test_bypass(void)
{
	uint64_t r0, w0, r1, w1;
	struct ibv_wc wc[4];
	struct pair p;
	int i, ret = -1;
	uint64_t t0, t1;

	if (pair_make(&p, DEPTH))
		goto out;
	{
		struct ibv_sge sa = { (uintptr_t)p.ba.p, 64, p.ba.mr->lkey };
		struct ibv_sge sb = { (uintptr_t)p.bb.p, 64, p.bb.mr->lkey };
		struct ibv_send_wr wa = { .sg_list = &sa, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr wb = wa;
		struct ibv_recv_wr ra = { .sg_list = &sa, .num_sge = 1 };
		struct ibv_recv_wr rb = { .sg_list = &sb, .num_sge = 1 };
		struct ibv_recv_wr *badr;
		struct ibv_send_wr *bads;

		wb.sg_list = &sb;
		if (read_io(&r0, &w0))
			goto out;
		t0 = now_ms();
		for (i = 0; i < iters; i++) {
			if (ibv_post_recv(p.b, &rb, &badr) ||
			    ibv_post_recv(p.a, &ra, &badr) ||
			    ibv_post_send(p.a, &wa, &bads))
				break;
			if (poll_ok(p.cqb, wc, 1) || poll_ok(p.cqa, wc, 1) ||
			    ibv_post_send(p.b, &wb, &bads) ||
			    poll_ok(p.cqb, wc, 1) || poll_ok(p.cqa, wc, 1))
				break;
		}
		t1 = now_ms();
		if (read_io(&r1, &w1))
			goto out;
		if (i < iters) {
			if (!failure[0])
				snprintf(failure, sizeof(failure),
					 "posting failed at %d", i);
			goto out;
		}
		/* the first read_io()'s own read() is counted after it */
		if (w1 - w0 || r1 - r0 > 1) {
			snprintf(failure, sizeof(failure),
				 "%" PRIu64 " write() and %" PRIu64
				 " read() calls during %d round trips", w1 - w0,
				 r1 - r0 - 1, iters);
			goto out;
		}
		printf("# bypass: %d round trips in %" PRIu64
		       " ms (%.1f us each), 0 system calls on the data path\n",
		       iters, t1 - t0, (t1 - t0) * 1000.0 / iters);
	}
	ret = 0;
out:
	pair_free(&p);
	return ret;
}

/* An extended QP of 'type' with send ops 'ops' on cq, or NULL (errno). */
static struct ibv_qp *qp_ex(enum ibv_qp_type type, struct ibv_cq *cq,
			    uint64_t ops)
{
	struct ibv_qp_init_attr_ex ax = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = type,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(ctx, &ax);
}

/* Send ops the QP must refuse: EOPNOTSUPP, the app can fall back. */
static int qp_ex_refused(enum ibv_qp_type type, struct ibv_cq *cq,
			 uint64_t ops, const char *what)
{
	struct ibv_qp *qx = qp_ex(type, cq, ops);

	if (qx)
		ibv_destroy_qp(qx);
	CHECK(!qx && errno == EOPNOTSUPP, "%s: %s, not EOPNOTSUPP", what,
	      qx ? "accepted" : strerror(errno));
	return 0;
}

/* p->a becomes an extended QP with send ops 'ops', b talks to it. */
static struct ibv_qp_ex *pair_qp_ex(struct pair *p, uint64_t ops)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *qx = qp_ex(IBV_QPT_RC, p->cqa, ops);

	if (!qx) {
		snprintf(failure, sizeof(failure),
			 "ibv_create_qp_ex (send ops %#" PRIx64 "): %s", ops,
			 strerror(errno));
		return NULL;
	}
	ibv_destroy_qp(p->a);
	p->a = qx;
	if (ibv_modify_qp(p->b, &reset, IBV_QP_STATE) ||
	    rc_connect(p->a, p->b->qp_num) || rc_connect(p->b, p->a->qp_num))
		return NULL;
	if (!ibv_qp_to_qp_ex(qx))
		snprintf(failure, sizeof(failure), "ibv_qp_to_qp_ex: NULL");
	return ibv_qp_to_qp_ex(qx);
}

/* The ibv_wr_*() API: SEND with SGE, inline SEND, WRITE, atomics. */
static int test_wr_api(void)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_SEND_WITH_IMM;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[4];
	struct pair p;
	int ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	/* TSO, and bind-MW on UD: refused, the app can fall back */
	if (qp_ex_refused(IBV_QPT_RC, p.cqa, ops | IBV_QP_EX_WITH_TSO,
			  "TSO send op") ||
	    qp_ex_refused(IBV_QPT_UD, p.cqa,
			  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW,
			  "BIND_MW send op on UD"))
		goto out;
	x = pair_qp_ex(&p, ops);
	if (!x)
		goto out;
	fill(p.ba.p, 8192, 3);
	memset(p.bb.p, 0, BUF_SIZE);
	if (post_recv(p.b, NULL, 11, p.bb.p, 4096, p.bb.mr->lkey) ||
	    post_recv(p.b, NULL, 12, p.bb.p + 4096, 4096, p.bb.mr->lkey))
		goto out;
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, p.ba.mr->lkey, (uintptr_t)p.ba.p, 3000);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htonl(42));
	ibv_wr_set_inline_data(x, p.ba.p + 3000, 50);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, p.bb.mr->rkey, (uintptr_t)p.bb.p + 10000);
	ibv_wr_set_sge(x, p.ba.mr->lkey, (uintptr_t)p.ba.p + 4000, 4000);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED;
	*(uint64_t *)(p.bb.p + 20000) = 7;
	ibv_wr_atomic_fetch_add(x, p.bb.mr->rkey, (uintptr_t)p.bb.p + 20000,
				3);
	ibv_wr_set_sge(x, p.ba.mr->lkey, (uintptr_t)p.ba.p + 30000, 8);
	if (ibv_wr_complete(x)) {
		snprintf(failure, sizeof(failure), "ibv_wr_complete: %s",
			 strerror(errno));
		goto out;
	}
	if (poll_ok(p.cqa, wc, 4) || poll_ok(p.cqb, wc, 2))
		goto out;
	if (wc[0].wr_id != 11 || wc[0].byte_len != 3000 ||
	    wc[1].wr_id != 12 || wc[1].byte_len != 50 ||
	    ntohl(wc[1].imm_data) != 42 ||
	    memcmp(p.bb.p, p.ba.p, 3000) ||
	    memcmp(p.bb.p + 4096, p.ba.p + 3000, 50) ||
	    memcmp(p.bb.p + 10000, p.ba.p + 4000, 4000) ||
	    *(uint64_t *)(p.bb.p + 20000) != 10 ||
	    *(uint64_t *)(p.ba.p + 30000) != 7) {
		snprintf(failure, sizeof(failure), "ibv_wr_*: data/completions");
		goto out;
	}
	/* an error inside a batch posts nothing of it */
	ibv_wr_start(x);
	x->wr_id = 5;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, p.ba.p, 100000);	/* too long */
	if (ibv_wr_complete(x) == 0) {
		snprintf(failure, sizeof(failure),
			 "oversized inline data accepted");
		goto out;
	}
	ret = cq_empty(p.cqa);
out:
	pair_free(&p);
	return ret;
}

/* One ibv_wr_flush() batch that wr_complete must refuse, nothing posted. */
static int flush_refused(struct pair *p, struct ibv_qp_ex *x,
			 struct ibv_mr *mr, size_t len, uint8_t type,
			 uint8_t level)
{
	ibv_wr_start(x);
	x->wr_id = 99;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(x, mr->rkey, (uintptr_t)mr->addr, len, type, level);
	CHECK(ibv_wr_complete(x) == EINVAL,
	      "FLUSH of %zu bytes type %u level %u accepted", len, type,
	      level);
	return cq_empty(p->cqa);
}

/*
 * FLUSH and ATOMIC WRITE (IBTA 1.5) through ibv_wr_flush() and
 * ibv_wr_atomic_write(): completions and data; SGEs given to them are not
 * added (they name no local memory); undefined types and levels refused
 * at ibv_wr_complete(); no opcode of struct ibv_send_wr for them; a region
 * asking for persistence of guest RAM refused; none on UD.
 */
static int test_placement(void)
{
	uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_FLUSH |
		       IBV_QP_EX_WITH_ATOMIC_WRITE;
	uint64_t value = 0x1122334455667788ull, got[3];
	struct ibv_mr *fmr = NULL, *bad_mr;
	struct ibv_sge sge = { 0, 8, 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp_ex *x;
	struct ibv_wc wc[3];
	struct pair p;
	int i, ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	if (qp_ex_refused(IBV_QPT_UD, p.cqa, IBV_QP_EX_WITH_SEND |
			  IBV_QP_EX_WITH_FLUSH, "FLUSH on UD") ||
	    qp_ex_refused(IBV_QPT_UD, p.cqa, IBV_QP_EX_WITH_SEND |
			  IBV_QP_EX_WITH_ATOMIC_WRITE, "ATOMIC WRITE on UD"))
		goto out;
	x = pair_qp_ex(&p, ops);
	if (!x)
		goto out;
	/* guest RAM does not persist: the kernel or the device says so */
	bad_mr = ibv_reg_mr(pd, p.bb.p, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_FLUSH_PERSISTENT);
	if (bad_mr || errno != EOPNOTSUPP) {
		snprintf(failure, sizeof(failure),
			 "MR with FLUSH_PERSISTENT: %s, not EOPNOTSUPP",
			 bad_mr ? "registered" : strerror(errno));
		if (bad_mr)
			ibv_dereg_mr(bad_mr);
		goto out;
	}
	fmr = ibv_reg_mr(pd, p.bb.p, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL);
	if (!fmr) {
		snprintf(failure, sizeof(failure), "MR with FLUSH_GLOBAL: %s",
			 strerror(errno));
		goto out;
	}
	memset(p.bb.p, 0x5a, 4096);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 1;
	ibv_wr_atomic_write(x, fmr->rkey, (uintptr_t)p.bb.p + 64, &value);
	/* not added: would make the device refuse the WQE */
	ibv_wr_set_sge(x, p.ba.mr->lkey, (uintptr_t)p.ba.p, 8);
	x->wr_id = 2;
	ibv_wr_flush(x, fmr->rkey, (uintptr_t)p.bb.p + 64, 8, IBV_FLUSH_GLOBAL,
		     IBV_FLUSH_RANGE);
	ibv_wr_set_sge_list(x, 1, &(struct ibv_sge){ (uintptr_t)p.ba.p, 8,
						     p.ba.mr->lkey });
	x->wr_id = 3;
	/* the whole region: the length does not matter */
	ibv_wr_flush(x, fmr->rkey, (uintptr_t)p.bb.p, 1ull << 40,
		     IBV_FLUSH_GLOBAL, IBV_FLUSH_MR);
	value = 0;	/* the 8 bytes were taken at ibv_wr_atomic_write() */
	if (ibv_wr_complete(x)) {
		snprintf(failure, sizeof(failure), "ibv_wr_complete: %s",
			 strerror(errno));
		goto out;
	}
	if (poll_ok(p.cqa, wc, 3))
		goto out;
	for (i = 0; i < 3; i++)
		if (wc[i].wr_id != (uint64_t)i + 1 ||
		    wc[i].opcode != (i ? IBV_WC_FLUSH : IBV_WC_ATOMIC_WRITE)) {
			snprintf(failure, sizeof(failure),
				 "completion %d: wr_id %" PRIu64 " opcode %d", i,
				 wc[i].wr_id, wc[i].opcode);
			goto out;
		}
	memcpy(got, p.bb.p + 56, sizeof(got));
	if (got[1] != 0x1122334455667788ull ||
	    got[0] != 0x5a5a5a5a5a5a5a5aull || got[2] != got[0]) {
		snprintf(failure, sizeof(failure),
			 "ATOMIC WRITE: %#" PRIx64 " %#" PRIx64 " %#" PRIx64,
			 got[0], got[1], got[2]);
		goto out;
	}
	if (flush_refused(&p, x, fmr, 8, 0, IBV_FLUSH_RANGE) ||
	    flush_refused(&p, x, fmr, 8, 4, IBV_FLUSH_RANGE) ||
	    flush_refused(&p, x, fmr, 8, IBV_FLUSH_GLOBAL, 2) ||
	    flush_refused(&p, x, fmr, 1ull << 32, IBV_FLUSH_GLOBAL,
			  IBV_FLUSH_RANGE))
		goto out;
	/* struct ibv_send_wr has no fields for them */
	for (i = 0; i < 2; i++) {
		wr.opcode = i ? IBV_WR_ATOMIC_WRITE : IBV_WR_FLUSH;
		sge.addr = (uintptr_t)p.ba.p;
		sge.lkey = p.ba.mr->lkey;
		if (ibv_post_send(p.a, &wr, &bad) != EINVAL) {
			snprintf(failure, sizeof(failure),
				 "ibv_post_send of opcode %d: not EINVAL",
				 wr.opcode);
			goto out;
		}
	}
	ret = cq_empty(p.cqa);
out:
	if (fmr)
		ibv_dereg_mr(fmr);
	pair_free(&p);
	return ret;
}

/* ibv_create_cq_ex and the start/next/end polling, refusals. */
/* The device clock (ibv_query_rt_values_ex), 0 on failure. */
static uint64_t device_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v) ||
	    !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull +
	       (uint64_t)v.raw_clock.tv_nsec;
}

/*
 * The extended CQ with every field it reports, completion timestamps of
 * the device clock included: 1 GHz (ibv_query_device_ex), between the
 * clock read before posting and after polling, never going back.
 */
static int test_cq_ex(void)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 2 * DEPTH,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_device_attr_ex ax;
	struct ibv_poll_cq_attr pa = {};
	struct ibv_cq_ex *cx, *bad;
	struct ibv_wc wc[DEPTH];
	uint64_t t0, t1, ts[10];
	struct pair p;
	int i, n, ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	bad = ibv_create_cq_ex(ctx, &ca);
	if (bad || errno != EOPNOTSUPP) {
		snprintf(failure, sizeof(failure),
			 "wall-clock timestamp CQ: %s, not EOPNOTSUPP",
			 bad ? "accepted" : strerror(errno));
		if (bad)
			ibv_destroy_cq(ibv_cq_ex_to_cq(bad));
		goto out;
	}
	if (ibv_query_device_ex(ctx, NULL, &ax) ||
	    ax.hca_core_clock != 1000000 ||
	    ax.completion_timestamp_mask != ~0ull) {
		snprintf(failure, sizeof(failure),
			 "device clock %" PRIu64 " kHz, mask 0x%" PRIx64
			 " (1 GHz, all bits expected)", ax.hca_core_clock,
			 ax.completion_timestamp_mask);
		goto out;
	}
	ca.wc_flags ^= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK |
		       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	cx = ibv_create_cq_ex(ctx, &ca);
	if (!cx) {
		snprintf(failure, sizeof(failure), "ibv_create_cq_ex: %s",
			 strerror(errno));
		goto out;
	}
	/* b's receives complete on the extended CQ */
	ibv_destroy_qp(p.b);
	p.b = rc_qp(p.cqb, ibv_cq_ex_to_cq(cx), NULL, DEPTH);
	if (!p.b) {
		snprintf(failure, sizeof(failure), "QP on a cq_ex: %s",
			 strerror(errno));
		ibv_destroy_cq(ibv_cq_ex_to_cq(cx));
		goto out;
	}
	{
		struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };

		if (ibv_modify_qp(p.a, &reset, IBV_QP_STATE) ||
		    rc_connect(p.a, p.b->qp_num) ||
		    rc_connect(p.b, p.a->qp_num))
			goto out_cx;
	}
	t0 = device_clock();
	for (i = 0; i < 10; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 100 + i,
				       p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(i),
		};

		if (post_recv(p.b, NULL, 500 + i, p.bb.p, BUF_SIZE,
			      p.bb.mr->lkey) || post_send(p.a, &wr))
			goto out_cx;
	}
	if (poll_ok(p.cqa, wc, 10))
		goto out_cx;
	n = 0;
	{
		uint64_t end = now_ms() + TIMEOUT_MS;

		while (n < 10 && now_ms() < end) {
			if (ibv_start_poll(cx, &pa))
				continue;
			do {
				if (cx->status != IBV_WC_SUCCESS ||
				    cx->wr_id != 500 + (uint64_t)n ||
				    ibv_wc_read_opcode(cx) != IBV_WC_RECV ||
				    ibv_wc_read_byte_len(cx) != 100u + n ||
				    ntohl(ibv_wc_read_imm_data(cx)) != (uint32_t)n ||
				    !(ibv_wc_read_wc_flags(cx) & IBV_WC_WITH_IMM) ||
				    ibv_wc_read_qp_num(cx) != p.b->qp_num) {
					snprintf(failure, sizeof(failure),
						 "cq_ex entry %d: status %d wr_id %"
						 PRIu64 " len %u", n, cx->status,
						 cx->wr_id,
						 ibv_wc_read_byte_len(cx));
					ibv_end_poll(cx);
					goto out_cx;
				}
				ts[n++] = ibv_wc_read_completion_ts(cx);
			} while (!ibv_next_poll(cx));
			ibv_end_poll(cx);
		}
	}
	if (n != 10) {
		snprintf(failure, sizeof(failure), "cq_ex: %d of 10", n);
		goto out_cx;
	}
	if (ibv_start_poll(cx, &pa) != ENOENT) {
		snprintf(failure, sizeof(failure), "cq_ex: extra entry");
		ibv_end_poll(cx);
		goto out_cx;
	}
	t1 = device_clock();
	for (i = 0; i < 10; i++) {
		if (!t0 || ts[i] < t0 || ts[i] > t1 || (i && ts[i] < ts[i - 1])) {
			snprintf(failure, sizeof(failure),
				 "completion %d at %" PRIu64 " ns, clock %"
				 PRIu64 " before and %" PRIu64 " after", i,
				 ts[i], t0, t1);
			goto out_cx;
		}
	}
	printf("# cq-ex: 10 receives completed %" PRIu64 " ns apart in all, "
	       "%" PRIu64 " ns after the clock read before posting\n",
	       ts[9] - ts[0], ts[0] - t0);
	ret = 0;
out_cx:
	ibv_destroy_qp(p.b);
	p.b = NULL;
	ibv_destroy_cq(ibv_cq_ex_to_cq(cx));
out:
	pair_free(&p);
	return ret;
}

/* UD through an address handle, GRH in front of the payload. */
static int test_ud(void)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 32 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
		.port_num = 1,
	};
	struct ibv_qp *qa = NULL, *qb = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_cq *cq;
	struct ibv_wc wc[2];
	struct buf b = {};
	int i, ret = -1;

	cq = ibv_create_cq(ctx, 4 * DEPTH, NULL, NULL, 0);
	if (!cq || buf_alloc(&b, BUF_SIZE))
		goto out;
	a.send_cq = a.recv_cq = cq;
	qa = ibv_create_qp(pd, &a);
	qb = ibv_create_qp(pd, &a);
	if (!qa || !qb) {
		snprintf(failure, sizeof(failure), "UD QP: %s", strerror(errno));
		goto out;
	}
	{
		struct ibv_qp_attr s = { .qp_state = IBV_QPS_RTR };

		if (qp_init(qa, IBV_QPT_UD) || qp_init(qb, IBV_QPT_UD) ||
		    ibv_modify_qp(qa, &s, IBV_QP_STATE) ||
		    ibv_modify_qp(qb, &s, IBV_QP_STATE))
			goto out;
		s.qp_state = IBV_QPS_RTS;
		s.sq_psn = 1;
		if (ibv_modify_qp(qa, &s, IBV_QP_STATE | IBV_QP_SQ_PSN) ||
		    ibv_modify_qp(qb, &s, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
			snprintf(failure, sizeof(failure), "UD RTS: %s",
				 strerror(errno));
			goto out;
		}
	}
	aa.is_global = 0;
	ah = ibv_create_ah(pd, &aa);
	if (ah) {
		snprintf(failure, sizeof(failure), "AH without GRH accepted");
		goto out;
	}
	aa.is_global = 1;
	ah = ibv_create_ah(pd, &aa);
	if (!ah) {
		snprintf(failure, sizeof(failure), "ibv_create_ah: %s",
			 strerror(errno));
		goto out;
	}
	for (i = 0; i < 3 * DEPTH; i++) {
		uint32_t len = 1 + (i * 37) % 1000;
		struct ibv_sge sge = { (uintptr_t)b.p, len, b.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED |
				      (len <= 32 ? IBV_SEND_INLINE : 0),
			.wr.ud = { ah, qb->qp_num, 0x11111111 },
		};

		fill(b.p, len, i);
		if (post_recv(qb, NULL, 100000 + i, b.p + 8192, 2048,
			      b.mr->lkey) || post_send(qa, &wr) ||
		    poll_ok(cq, wc, 2))
			goto out;
		if (wc[0].wr_id > wc[1].wr_id) {
			struct ibv_wc t = wc[0];

			wc[0] = wc[1];
			wc[1] = t;
		}
		if (wc[0].wr_id != (uint64_t)i ||
		    wc[1].wr_id != 100000u + i ||
		    wc[1].byte_len != len + 40 ||
		    !(wc[1].wc_flags & IBV_WC_GRH) ||
		    wc[1].src_qp != qa->qp_num ||
		    /* RoCEv2 over IPv4, as mlx5 reports it (UCX reads it) */
		    wc[1].sl != 0xa ||
		    /* the IPv4 header in the GRH's last 20 bytes */
		    b.p[8192 + 20] != 0x45 ||
		    memcmp(b.p + 8192 + 40, b.p, len)) {
			snprintf(failure, sizeof(failure),
				 "UD %d: wr_id %" PRIu64 "/%" PRIu64
				 " len %u flags 0x%x src_qp %u sl 0x%x", i,
				 wc[0].wr_id, wc[1].wr_id, wc[1].byte_len,
				 wc[1].wc_flags, wc[1].src_qp, wc[1].sl);
			goto out;
		}
	}
	ret = 0;
out:
	if (ah)
		ibv_destroy_ah(ah);
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	if (cq)
		ibv_destroy_cq(cq);
	buf_free(&b);
	return ret;
}

/* Two QPs receive from one SRQ; every WQE completes exactly once. */
static int test_srq(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct ibv_qp *a1 = NULL, *a2 = NULL, *b1 = NULL, *b2 = NULL;
	struct ibv_cq *cqa = NULL, *cqb = NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_wc wc[8];
	uint8_t seen[1024] = {};
	struct buf b = {};
	int i, posted = 0, done = 0, ret = -1;

	cqa = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sa);
	if (!cqa || !cqb || !srq || buf_alloc(&b, BUF_SIZE)) {
		snprintf(failure, sizeof(failure), "SRQ setup: %s",
			 strerror(errno));
		goto out;
	}
	a1 = rc_qp(cqa, cqa, NULL, 32);
	a2 = rc_qp(cqa, cqa, NULL, 32);
	b1 = rc_qp(cqb, cqb, srq, 32);
	b2 = rc_qp(cqb, cqb, srq, 32);
	if (!a1 || !a2 || !b1 || !b2 || rc_connect(a1, b1->qp_num) ||
	    rc_connect(b1, a1->qp_num) || rc_connect(a2, b2->qp_num) ||
	    rc_connect(b2, a2->qp_num))
		goto out;
	{
		struct ibv_recv_wr wr = {}, *bad;

		if (ibv_post_recv(b1, &wr, &bad) != EINVAL) {
			snprintf(failure, sizeof(failure),
				 "post_recv on an SRQ QP not refused");
			goto out;
		}
	}
	for (i = 0; i < 32; i++, posted++)
		if (post_recv(NULL, srq, posted, b.p + 1024 * (posted % 32),
			      1024, b.mr->lkey))
			goto out;
	/* 1000 messages alternating between the QPs, refilling as we go */
	for (i = 0; i < 1000; i++) {
		struct ibv_sge sge = { (uintptr_t)b.p + 40000, 16, b.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		if (post_send(i & 1 ? a2 : a1, &wr) || poll_ok(cqa, wc, 1) ||
		    poll_ok(cqb, wc, 1))
			goto out;
		if (wc[0].wr_id >= 1024 || seen[wc[0].wr_id]++) {
			snprintf(failure, sizeof(failure),
				 "SRQ wr_id %" PRIu64 " twice or unknown",
				 wc[0].wr_id);
			goto out;
		}
		done++;
		if (posted < 1024 &&
		    post_recv(NULL, srq, posted, b.p + 1024 * (posted % 32),
			      1024, b.mr->lkey))
			goto out;
		posted++;
	}
	ret = done == 1000 ? 0 : -1;
out:
	if (a1)
		ibv_destroy_qp(a1);
	if (a2)
		ibv_destroy_qp(a2);
	if (b1)
		ibv_destroy_qp(b1);
	if (b2)
		ibv_destroy_qp(b2);
	if (srq)
		ibv_destroy_srq(srq);
	if (cqa)
		ibv_destroy_cq(cqa);
	if (cqb)
		ibv_destroy_cq(cqb);
	buf_free(&b);
	return ret;
}

/* Completion channel: arm, event through the kernel, solicited-only. */
static int test_events(void)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *ecq = NULL, *ev_cq;
	struct ibv_wc wc[2];
	struct pollfd pfd;
	struct pair p;
	void *ev_ctx;
	int i, ret = -1;

	memset(&p, 0, sizeof(p));
	if (!ch) {
		snprintf(failure, sizeof(failure), "comp channel: %s",
			 strerror(errno));
		return -1;
	}
	if (pair_make(&p, DEPTH))
		goto out;
	ecq = ibv_create_cq(ctx, DEPTH, (void *)0x1234, ch, 0);
	if (!ecq)
		goto out;
	ibv_destroy_qp(p.b);
	p.b = rc_qp(p.cqb, ecq, NULL, DEPTH);
	{
		struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };

		if (!p.b || ibv_modify_qp(p.a, &reset, IBV_QP_STATE) ||
		    rc_connect(p.a, p.b->qp_num) ||
		    rc_connect(p.b, p.a->qp_num))
			goto out;
	}
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	for (i = 0; i < 20; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 8, p.ba.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };
		bool solicited = i >= 10;

		if (ibv_req_notify_cq(ecq, solicited)) {
			snprintf(failure, sizeof(failure), "req_notify");
			goto out;
		}
		if (solicited) {
			/* an unsolicited message must not wake us */
			if (post_recv(p.b, NULL, i, p.bb.p, 64, p.bb.mr->lkey) ||
			    post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1) ||
			    poll_ok(ecq, wc, 1))
				goto out;
			if (poll(&pfd, 1, 200) != 0) {
				snprintf(failure, sizeof(failure),
					 "event for an unsolicited message");
				goto out;
			}
			wr.send_flags |= IBV_SEND_SOLICITED;
		}
		if (post_recv(p.b, NULL, 100 + i, p.bb.p, 64, p.bb.mr->lkey) ||
		    post_send(p.a, &wr))
			goto out;
		if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
			snprintf(failure, sizeof(failure),
				 "no completion event (%d)", i);
			goto out;
		}
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) || ev_cq != ecq ||
		    ev_ctx != (void *)0x1234) {
			snprintf(failure, sizeof(failure), "ibv_get_cq_event");
			goto out;
		}
		ibv_ack_cq_events(ecq, 1);
		if (poll_ok(ecq, wc, 1) || poll_ok(p.cqa, wc + 1, 1))
			goto out;
		if (wc[0].wr_id != 100u + i) {
			snprintf(failure, sizeof(failure), "event wr_id");
			goto out;
		}
	}
	ret = 0;
out:
	if (p.b) {
		ibv_destroy_qp(p.b);
		p.b = NULL;
	}
	if (ecq)
		ibv_destroy_cq(ecq);
	pair_free(&p);
	ibv_destroy_comp_channel(ch);
	return ret;
}

/* Resize a CQ while completions wait in it; nothing lost or reordered. */
static int test_resize(void)
{
	struct ibv_wc wc[64];
	struct pair p;
	int i, round, ret = -1;

	if (pair_make(&p, 16))
		goto out;
	for (round = 0; round < 3; round++) {
		int newsize = round == 0 ? 128 : round == 1 ? 40 : 1000;

		for (i = 0; i < 12; i++) {
			struct ibv_sge sge = { (uintptr_t)p.ba.p, 4,
					       p.ba.mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = round * 100 + i, .sg_list = &sge,
				.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { (uintptr_t)p.bb.p, p.bb.mr->rkey },
			};

			if (post_send(p.a, &wr))
				goto out;
		}
		/* take 5, resize with 7 waiting, take the rest */
		if (poll_ok(p.cqa, wc, 5))
			goto out;
		{
			/* let the last ones land before resizing */
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		if (ibv_resize_cq(p.cqa, newsize)) {
			snprintf(failure, sizeof(failure), "ibv_resize_cq(%d): %s",
				 newsize, strerror(errno));
			goto out;
		}
		if (p.cqa->cqe < newsize) {
			snprintf(failure, sizeof(failure), "resized to %d < %d",
				 p.cqa->cqe, newsize);
			goto out;
		}
		if (poll_ok(p.cqa, wc + 5, 7))
			goto out;
		for (i = 0; i < 12; i++)
			if (wc[i].wr_id != (uint64_t)(round * 100 + i)) {
				snprintf(failure, sizeof(failure),
					 "after resize: entry %d wr_id %" PRIu64,
					 i, wc[i].wr_id);
				goto out;
			}
	}
	ret = cq_empty(p.cqa);
out:
	pair_free(&p);
	return ret;
}

/* ERR flushes posted receives with their wr_ids; RESET makes it new. */
static int test_flush_reset(void)
{
	struct ibv_qp_attr s = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[DEPTH];
	struct pair p;
	int i, round, ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 10; i++)
			if (post_recv(p.b, NULL, round * 1000 + i, p.bb.p, 64,
				      p.bb.mr->lkey))
				goto out;
		s.qp_state = IBV_QPS_ERR;
		if (ibv_modify_qp(p.b, &s, IBV_QP_STATE) ||
		    poll_n(p.cqb, wc, 10))
			goto out;
		for (i = 0; i < 10; i++)
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR ||
			    wc[i].wr_id != (uint64_t)(round * 1000 + i)) {
				snprintf(failure, sizeof(failure),
					 "flush %d: %s wr_id %" PRIu64, i,
					 ibv_wc_status_str(wc[i].status),
					 wc[i].wr_id);
				goto out;
			}
		/* RESET: the rings restart; reconnect and talk again */
		s.qp_state = IBV_QPS_RESET;
		if (ibv_modify_qp(p.b, &s, IBV_QP_STATE) ||
		    ibv_modify_qp(p.a, &s, IBV_QP_STATE))
			goto out;
		{
			struct ibv_sge sge = { (uintptr_t)p.ba.p, 8,
					       p.ba.mr->lkey };
			struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge,
						  .num_sge = 1,
						  .opcode = IBV_WR_SEND },
					   *bad;

			if (ibv_post_send(p.a, &wr, &bad) != EINVAL) {
				snprintf(failure, sizeof(failure),
					 "post_send in RESET not refused");
				goto out;
			}
		}
		if (rc_connect(p.a, p.b->qp_num) || rc_connect(p.b, p.a->qp_num))
			goto out;
		for (i = 0; i < 3 * DEPTH; i++) {
			struct ibv_sge sge = { (uintptr_t)p.ba.p, 8,
					       p.ba.mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			};

			if (post_recv(p.b, NULL, 5000 + i, p.bb.p, 64,
				      p.bb.mr->lkey) || post_send(p.a, &wr) ||
			    poll_ok(p.cqa, wc, 1) || poll_ok(p.cqb, wc + 1, 1))
				goto out;
			if (wc[0].wr_id != (uint64_t)i ||
			    wc[1].wr_id != 5000u + i) {
				snprintf(failure, sizeof(failure),
					 "after reset: wr_id %" PRIu64 "/%" PRIu64,
					 wc[0].wr_id, wc[1].wr_id);
				goto out;
			}
		}
	}
	ret = cq_empty(p.cqa) || cq_empty(p.cqb) ? -1 : 0;
out:
	pair_free(&p);
	return ret;
}

/* Destroy a QP whose CQEs wait in a shared CQ: they vanish; others stay. */
static int test_destroy_clean(void)
{
	struct ibv_qp *a2 = NULL, *b2 = NULL;
	struct ibv_wc wc[32];
	struct pair p;
	int i, ret = -1;

	if (pair_make(&p, DEPTH))
		goto out;
	a2 = rc_qp(p.cqa, p.cqa, NULL, DEPTH);
	b2 = rc_qp(p.cqb, p.cqb, NULL, DEPTH);
	if (!a2 || !b2 || rc_connect(a2, b2->qp_num) ||
	    rc_connect(b2, a2->qp_num))
		goto out;
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 4, p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)p.bb.p, p.bb.mr->rkey },
		};

		wr.wr_id = 100 + i;
		if (post_send(a2, &wr))
			goto out;
		wr.wr_id = i;
		if (post_send(p.a, &wr))
			goto out;
	}
	{
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		nanosleep(&ts, NULL);	/* all 16 CQEs are in by now */
	}
	ibv_destroy_qp(a2);
	a2 = NULL;
	/* a new QP may take the destroyed one's handle */
	a2 = rc_qp(p.cqa, p.cqa, NULL, DEPTH);
	if (!a2)
		goto out;
	if (poll_ok(p.cqa, wc, 8))
		goto out;
	for (i = 0; i < 8; i++)
		if (wc[i].wr_id != (uint64_t)i || wc[i].qp_num != p.a->qp_num) {
			snprintf(failure, sizeof(failure),
				 "entry %d: wr_id %" PRIu64 " qp %u", i,
				 wc[i].wr_id, wc[i].qp_num);
			goto out;
		}
	ret = cq_empty(p.cqa);
out:
	if (a2)
		ibv_destroy_qp(a2);
	if (b2)
		ibv_destroy_qp(b2);
	pair_free(&p);
	return ret;
}

/* A full send queue says ENOMEM and posts nothing more. */
static int test_sq_full(void)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc[DEPTH * 2];
	struct pair p;
	int i, n, ret = -1;

	if (pair_make(&p, 16))
		goto out;
	if (ibv_query_qp(p.a, &qa, IBV_QP_CAP, &ia)) {
		snprintf(failure, sizeof(failure), "query_qp: %s",
			 strerror(errno));
		goto out;
	}
	n = ia.cap.max_send_wr;
	if (n < 16 || n > DEPTH * 2) {
		snprintf(failure, sizeof(failure), "max_send_wr %d", n);
		goto out;
	}
	/* RDMA WRITEs: b needs no receives */
	for (i = 0; i <= n; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 8, p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = i == n - 1 ? IBV_SEND_SIGNALED : 0,
			.wr.rdma = { (uintptr_t)p.bb.p, p.bb.mr->rkey },
		}, *bad;
		int r = ibv_post_send(p.a, &wr, &bad);

		if (i < n && r) {
			snprintf(failure, sizeof(failure), "post %d of %d: %s",
				 i, n, strerror(r));
			goto out;
		}
		if (i == n && r != ENOMEM) {
			snprintf(failure, sizeof(failure),
				 "post beyond %d entries: %s, not ENOMEM", n,
				 r ? strerror(r) : "accepted");
			goto out;
		}
	}
	/* one signaled completion frees the whole queue */
	if (poll_ok(p.cqa, wc, 1) || wc[0].wr_id != (uint64_t)n - 1)
		goto out;
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 8, p.ba.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)p.bb.p, p.bb.mr->rkey },
		};

		if (post_send(p.a, &wr))
			goto out;
	}
	ret = poll_ok(p.cqa, wc, n) || cq_empty(p.cqa) ? -1 : 0;
out:
	pair_free(&p);
	return ret;
}

/* Many passes over small rings: owner-bit phases, index wrap. */
static int test_wrap(void)
{
	struct ibv_wc wc[8];
	struct pair p;
	int i, ret = -1;

	memset(&p, 0, sizeof(p));
	p.cqa = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	p.cqb = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	if (!p.cqa || !p.cqb)
		goto out;
	p.a = rc_qp(p.cqa, p.cqa, NULL, 1);
	p.b = rc_qp(p.cqb, p.cqb, NULL, 1);
	if (!p.a || !p.b || buf_alloc(&p.ba, 4096) || buf_alloc(&p.bb, 4096) ||
	    rc_connect(p.a, p.b->qp_num) || rc_connect(p.b, p.a->qp_num))
		goto out;
	for (i = 0; i < iters; i++) {
		struct ibv_sge sge = { (uintptr_t)p.ba.p, 4, p.ba.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		*(uint32_t *)p.ba.p = i;
		if (post_recv(p.b, NULL, i, p.bb.p, 64, p.bb.mr->lkey) ||
		    post_send(p.a, &wr) || poll_ok(p.cqa, wc, 1) ||
		    poll_ok(p.cqb, wc + 1, 1))
			goto out;
		if (wc[0].wr_id != (uint64_t)i || wc[1].wr_id != (uint64_t)i ||
		    *(uint32_t *)p.bb.p != (uint32_t)i) {
			snprintf(failure, sizeof(failure), "pass %d", i);
			goto out;
		}
	}
	ret = 0;
out:
	pair_free(&p);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "send", test_send },
	{ "rdma", test_rdma },
	{ "bypass", test_bypass },
	{ "wr-api", test_wr_api },
	{ "placement", test_placement },
	{ "cq-ex", test_cq_ex },
	{ "ud", test_ud },
	{ "srq", test_srq },
	{ "events", test_events },
	{ "resize", test_resize },
	{ "flush-reset", test_flush_reset },
	{ "destroy-clean", test_destroy_clean },
	{ "sq-full", test_sq_full },
	{ "wrap", test_wrap },
};

static int find_gid(void)
{
	union ibv_gid g;
	int i;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid(ctx, 1, i, &g))
			break;
		/* an IPv4-mapped RoCE v2 GID if there is one, else the first */
		if (g.raw[10] == 0xff && g.raw[11] == 0xff) {
			gid = g;
			return i;
		}
		if (i == 0)
			gid = g;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *devname = NULL;
	unsigned int t;
	int i, opt, failed = 0, ran = 0;

	while ((opt = getopt(argc, argv, "d:g:n:")) != -1) {
		switch (opt) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gid] [-n iters] [test...]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		printf("FAIL setup: no RDMA device\n");
		return 1;
	}
	for (i = 0; list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (!list[i]) {
		printf("FAIL setup: no device %s\n", devname);
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		printf("FAIL setup: open/alloc_pd: %s\n", strerror(errno));
		return 1;
	}
	if (gid_index < 0)
		gid_index = find_gid();
	else if (ibv_query_gid(ctx, 1, gid_index, &gid))
		return 1;
	printf("# device %s, GID index %d\n", ibv_get_device_name(list[i]),
	       gid_index);

	for (t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
		bool want = optind >= argc;

		for (i = optind; i < argc; i++)
			want |= !strcmp(argv[i], tests[t].name);
		if (!want)
			continue;
		failure[0] = 0;
		ran++;
		if (tests[t].fn()) {
			printf("FAIL %s: %s\n", tests[t].name,
			       failure[0] ? failure : "(no detail)");
			failed++;
		} else {
			printf("ok %s\n", tests[t].name);
		}
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("# %d of %d tests failed\n", failed, ran);
	return failed ? 1 : 0;
}
