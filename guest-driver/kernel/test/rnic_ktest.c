// SPDX-License-Identifier: GPL-2.0
/*
 * rnic_ktest: kernel verbs test of an RDMA device, over RDMA-CM.
 *
 * One module, three roles (module parameter 'role'):
 *   loopback  server and client in this guest; the client connects to
 *             'peer', an address of this guest (RoCE loopback in the device)
 *   server    listen on 'port' for one client session, verify what it does
 *   client    connect to 'peer':'port' and run the tests
 * The module's init runs everything and fails (-EIO) if a test failed, so
 * `insmod rnic_ktest.ko role=...` reports the result in its exit status;
 * each test prints "rnic_ktest: <test>: PASS|FAIL ..." to the kernel log.
 *
 * Tests (client driven, the server verifies and answers over SEND/RECV;
 * the server's receive side uses an SRQ when the device has one):
 *   send_recv    SENDs of 1 B .. 60 KiB, multi-SGE and inline, echoed back
 *   send_imm     SEND with immediate
 *   write        RDMA WRITE into the server's region, checked by the server
 *   write_imm    RDMA WRITE with immediate
 *   read         RDMA READ of a pattern the server wrote
 *   atomic       compare-and-swap (hit and miss) and fetch-and-add
 *   placement    (IBTA 1.5, rnic-kernel.h's convention) ATOMIC WRITEs read
 *                back by the server; RDMA WRITE then FLUSH of its range and
 *                of the whole region (global visibility), checked by the
 *                server; the convention's refusals; a FLUSH asking for
 *                persistence of a region without it fails with a remote
 *                access error (on two QPs of the client's own, connected
 *                through the device's loopback: it moves them to ERR)
 *   fastreg_inv  server fast-registers a region (REG_MR work request), the
 *                client writes it and sends SEND_WITH_INV; the server checks
 *                the invalidated rkey; the client also sends from a local
 *                fast-reg MR and invalidates it with LOCAL_INV
 *   bad_cmd      (with rnic) malformed admin commands and doorbells are
 *                refused and the device keeps working
 *   ud_cq_resize two UD QPs of the client exchange datagrams through the
 *                device (GRH, source QPN checked); the CQ is resized while
 *                it holds completions
 *   map_read     (IBK_SG_GAPS_REG) an IB_MR_TYPE_SG_GAPS MR over five
 *                gapped, unaligned buffers of the client (the first after
 *                an sg_offset, two crossing a page) is the local key of
 *                RDMA READs, whole and in part: the response lands exactly
 *                in the buffers, every byte checked, the gaps untouched;
 *                one of more segments than the device maps is refused, one
 *                of three maps three of the five
 *   map_write    the server WRITEs through that MR's rkey: the whole set
 *                and ranges crossing buffers, checked the same way
 *   map_inv      after LOCAL_INV a WRITE through the rkey fails with a
 *                remote access error (on a loopback pair of the client's
 *                QPs), nothing placed; registered again with the next key
 *                (ib_inc_rkey) over the buffers in reverse order, the
 *                server's WRITE lands, the old key fails
 *   map_bounds   WRITEs one byte past the set (a byte at its end, the set
 *                and one more) fail with a remote access error, a READ
 *                into the set and one byte more fails locally; nothing
 *                placed outside the buffers
 *   inv_enforced a WRITE to the invalidated rkey fails with a remote access
 *                error (last: it moves the QP to the error state)
 *
 * Device removal (hot-unplug, driver unbind, rmmod rnic): the RDMA-CM
 * reports RDMA_CM_EVENT_DEVICE_REMOVAL on every id of the device, then
 * waits, inside the removal, until each of them is destroyed. The handler
 * marks the side removed and wakes its waits; the thread that owns the
 * side stops at its next wait (-ENODEV), frees the QPs, CQs, SRQ, MRs and
 * PD, and destroys the id; the module's init then fails with -ENODEV.
 * Nothing here waits for the device once it is going.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>

#include "rnic/rnic-abi.h"
#include "rnic-kernel.h"
#include "rnic-compat.h"

MODULE_AUTHOR("qemu-rnic project");
MODULE_DESCRIPTION("Kernel verbs test for the qemu-rnic RDMA device");
MODULE_LICENSE("GPL");

static char *role = "loopback";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "loopback | server | client");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4/IPv6 address of the server (client, loopback)");
static ushort port = 18515;
module_param(port, ushort, 0444);
static uint timeout_s = 60;
module_param(timeout_s, uint, 0444);
MODULE_PARM_DESC(timeout_s, "Seconds to wait for any one step");
static uint iters = 4;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "Repetitions of each data test");
static bool destructive = true;
module_param(destructive, bool, 0444);
MODULE_PARM_DESC(destructive, "Run inv_enforced (leaves the QP in error)");

#include "rnic-test.h"

#define KT_REGION_SIZE	(1u << 20)	/* server region, WRITE/READ target */
#define KT_MSG_MAX	(60 * 1024)	/* largest SEND */
#define KT_RECV_BUFS	16
#define KT_SQ_DEPTH	64
#define KT_FR_OFFSET	(512 * 1024)	/* fast-reg test area in the region */
#define KT_FR_SIZE	(64 * 1024)
#define KT_WRITE_IMM_LEN 5000		/* write_imm: bytes at region offset 0 */
#define KT_PL_OFFSET	(768 * 1024)	/* placement test area in the region */
#define KT_PL_LEN	(64 * 1024)	/* WRITE + FLUSH; then ATOMIC WRITEs */

#define kt_info(fmt, ...) pr_info("rnic_ktest: " fmt, ##__VA_ARGS__)
#define kt_err(fmt, ...) pr_err("rnic_ktest: " fmt, ##__VA_ARGS__)

enum kt_op {
	KT_OP_ECHO = 1,		/* payload: pattern(seed, len); echoed with seed+1 */
	KT_OP_CHECK,		/* region[addr..+len] holds pattern(seed) */
	KT_OP_FILL,		/* fill region[addr..+len] with pattern(seed) */
	KT_OP_SET64,		/* region u64 at addr := value */
	KT_OP_GET64,		/* reply value = region u64 at addr */
	KT_OP_FR_PREPARE,	/* fast-register a region: reply addr/rkey/len */
	KT_OP_FR_CHECK,		/* (SEND_WITH_INV) fr region holds pattern(seed) */
	KT_OP_DONE,
	KT_OP_HELLO,		/* server -> client: the region's addr/rkey/len,
				 * value: its access flags */
	KT_OP_LAST,		/* a bad WRITE follows: the QP error ends it */
	KT_OP_MAP_WRITE,	/* WRITE pattern(seed) from region[addr..+len]
				 * to the client's (value, rkey) */
	KT_OP_REPLY = 0x100,
};

struct kt_msg {
	__le32 op;
	__le32 status;		/* reply: 0 OK */
	__le32 len;
	__le32 seed;
	__le64 addr;		/* offset in the region (FILL/CHECK) or iova */
	__le64 value;
	__le32 rkey;
	__le32 imm;		/* reply: immediate data seen */
	__le32 inv_rkey;	/* reply: invalidated rkey seen */
	__le32 flags;		/* reply: ib_wc_flags seen */
	u8 pad[16];
};

struct kt_conn_info {		/* the server's region */
	__le64 addr;
	__le32 rkey;
	__le32 len;
	u32 access;		/* IB_ACCESS_* it was registered with */
};

struct kt_side {
	const char *name;
	struct rdma_cm_id *id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_srq *srq;
	struct ib_qp *qp;
	struct completion cm_done;
	int cm_event;		/* last event */
	int cm_status;
	struct rdma_cm_id *req_id;	/* listener: the new connection */
	struct kt_conn_info peer_info;

	wait_queue_head_t cq_wait;
	atomic_t cq_events;
	bool qp_error;		/* async event: the QP went to the error state */
	bool expect_qp_error;
	bool removed;		/* RDMA_CM_EVENT_DEVICE_REMOVAL: stop, free all */
	bool aborted;		/* loopback server: the client gave up first */

	/* receive buffers */
	u8 *recv_buf[KT_RECV_BUFS];
	u64 recv_dma[KT_RECV_BUFS];
	/* send buffer */
	u8 *send_buf;
	u64 send_dma;
	/* region (server: remote target; client: local READ/atomic target) */
	struct page *region_pages;
	u8 *region;
	u64 region_dma;
	struct ib_mr *region_mr;	/* fast-reg MR over the region */
	struct ib_mr *fr_mr;		/* server: fastreg_inv MR */
	struct ib_mr *map_mr;		/* client: the map_* tests' SG_GAPS MR */
	u8 fr_key;
	int failures;
};

/* ---------------------------------------------------------------------- */
/* helpers                                                                */
/* ---------------------------------------------------------------------- */

static void kt_pattern(u8 *p, u32 len, u32 seed)
{
	u32 i, x = seed * 2654435761u + 1;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = x >> 16;
	}
}

static bool kt_check_pattern(const u8 *p, u32 len, u32 seed)
{
	u32 i, x = seed * 2654435761u + 1;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (u8)(x >> 16)) {
			kt_err("pattern mismatch at byte %u of %u (seed %u): 0x%02x\n",
			       i, len, seed, p[i]);
			return false;
		}
	}
	return true;
}

static void kt_cq_comp(struct ib_cq *cq, void *ctx)
{
	struct kt_side *s = ctx;

	atomic_inc(&s->cq_events);
	wake_up(&s->cq_wait);
}

static void kt_cq_event(struct ib_event *ev, void *ctx)
{
	kt_err("CQ event %s\n", ib_event_msg(ev->event));
}

static void kt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kt_side *s = ctx;

	if (ev->event != IB_EVENT_COMM_EST)
		kt_info("%s: QP event %s\n", s->name, ib_event_msg(ev->event));
	if (ev->event == IB_EVENT_QP_FATAL || ev->event == IB_EVENT_QP_REQ_ERR ||
	    ev->event == IB_EVENT_QP_ACCESS_ERR) {
		WRITE_ONCE(s->qp_error, true);
		wake_up(&s->cq_wait);
	}
}

/*
 * Poll one completion; sleep on the CQ event between polls (this exercises
 * req_notify_cq and the event queues). Returns 0, -ETIMEDOUT, or -ENODEV
 * once the device is being removed.
 */
static int kt_poll(struct kt_side *s, struct ib_wc *wc)
{
	unsigned long deadline = jiffies + timeout_s * HZ;

	for (;;) {
		int events = atomic_read(&s->cq_events);
		int n;

		if (READ_ONCE(s->removed))
			return -ENODEV;
		n = ib_poll_cq(s->cq, 1, wc);
		if (n > 0)
			return 0;
		if (n < 0)
			return n;
		if (READ_ONCE(s->qp_error) && s->expect_qp_error)
			return -ECONNRESET;
		if (ib_req_notify_cq(s->cq, IB_CQ_NEXT_COMP |
					    IB_CQ_REPORT_MISSED_EVENTS) > 0)
			continue;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		wait_event_timeout(s->cq_wait,
				   atomic_read(&s->cq_events) != events ||
				   READ_ONCE(s->qp_error) ||
				   READ_ONCE(s->removed), HZ);
	}
}

/* Wait for a completion of 'want' opcode; receive completions of other
 * kinds than expected count as failures. */
static int kt_wait_wc(struct kt_side *s, enum ib_wc_opcode want,
		      struct ib_wc *out)
{
	struct ib_wc wc;
	int ret = kt_poll(s, &wc);

	if (ret) {
		kt_err("%s: no completion (%d) waiting for opcode %d\n",
		       s->name, ret, want);
		return ret;
	}
	if (wc.status != IB_WC_SUCCESS) {
		kt_err("%s: completion opcode %d wr_id %llu: %s (vendor %u)\n",
		       s->name, wc.opcode, wc.wr_id,
		       ib_wc_status_msg(wc.status), wc.vendor_err);
		if (out)
			*out = wc;
		return -EIO;
	}
	if (wc.opcode != want) {
		kt_err("%s: completion opcode %d, expected %d\n", s->name,
		       wc.opcode, want);
		return -EIO;
	}
	if (out)
		*out = wc;
	return 0;
}

static int kt_post_recv(struct kt_side *s, int i)
{
	struct ib_sge sge = {
		.addr = s->recv_dma[i],
		.length = KT_MSG_MAX + sizeof(struct kt_msg),
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };

	if (s->srq)
		return ib_post_srq_recv(s->srq, &wr, NULL);
	return ib_post_recv(s->qp, &wr, NULL);
}

static int kt_post_send(struct kt_side *s, struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad;
	int ret = ib_post_send(s->qp, wr, &bad);

	if (ret)
		kt_err("%s: post_send opcode %d failed (%d)\n", s->name,
		       wr->opcode, ret);
	return ret;
}

/* SEND the control message in send_buf (len bytes) and wait for it. */
static int kt_send(struct kt_side *s, u32 len, enum ib_wr_opcode op,
		   u32 imm_or_inv, bool inline_data)
{
	struct ib_sge sge = {
		.addr = s->send_dma,
		.length = len,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = 0x5e4d,
		.opcode = op,
		.send_flags = IB_SEND_SIGNALED |
			      (inline_data ? IB_SEND_INLINE : 0),
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret;

	if (inline_data)
		sge.addr = (uintptr_t)s->send_buf;
	if (op == IB_WR_SEND_WITH_IMM)
		wr.ex.imm_data = cpu_to_be32(imm_or_inv);
	if (op == IB_WR_SEND_WITH_INV)
		wr.ex.invalidate_rkey = imm_or_inv;
	ib_dma_sync_single_for_device(s->dev, s->send_dma, len, DMA_TO_DEVICE);
	ret = kt_post_send(s, &wr);
	return ret ?: kt_wait_wc(s, IB_WC_SEND, NULL);
}

/* Wait for a received message; returns its buffer index (reposted by the
 * caller with kt_post_recv) or a negative errno. */
static int kt_recv(struct kt_side *s, struct ib_wc *wc)
{
	int ret;

	for (;;) {
		ret = kt_poll(s, wc);
		if (ret) {
			kt_err("%s: no message (%d)\n", s->name, ret);
			return ret;
		}
		if (wc->status != IB_WC_SUCCESS) {
			kt_err("%s: completion opcode %d: %s\n", s->name,
			       wc->opcode, ib_wc_status_msg(wc->status));
			return -EIO;
		}
		if (wc->opcode & IB_WC_RECV)
			break;
		/* a send completion arriving late: nothing to do */
	}
	ib_dma_sync_single_for_cpu(s->dev, s->recv_dma[wc->wr_id],
				   KT_MSG_MAX + sizeof(struct kt_msg),
				   DMA_FROM_DEVICE);
	return wc->wr_id;
}

/* Client: send a control request, wait for the server's reply. */
static int kt_request(struct kt_side *s, struct kt_msg *req,
		      struct kt_msg *reply)
{
	struct ib_wc wc;
	int i, ret;

	memcpy(s->send_buf, req, sizeof(*req));
	ret = kt_send(s, sizeof(*req), IB_WR_SEND, 0, false);
	if (ret)
		return ret;
	i = kt_recv(s, &wc);
	if (i < 0)
		return i;
	memcpy(reply, s->recv_buf[i], sizeof(*reply));
	kt_post_recv(s, i);
	if (le32_to_cpu(reply->op) != (le32_to_cpu(req->op) | KT_OP_REPLY)) {
		kt_err("reply op 0x%x to request 0x%x\n", le32_to_cpu(reply->op),
		       le32_to_cpu(req->op));
		return -EIO;
	}
	return le32_to_cpu(reply->status) ? -EIO : 0;
}

/* Post a REG_MR work request of 'mr' with its rkey, wait for it. */
static int kt_reg_mr(struct kt_side *s, struct ib_mr *mr, int access)
{
	struct ib_reg_wr wr = {};
	int ret;

	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.wr_id = 0xfa57;
	wr.mr = mr;
	wr.key = mr->rkey;
	wr.access = access;
	ret = kt_post_send(s, &wr.wr);
	return ret ?: kt_wait_wc(s, IB_WC_REG_MR, NULL);
}

/* Fast-register 'len' bytes of the region at 'offset' with MR 'mr'. */
static int kt_fast_reg(struct kt_side *s, struct ib_mr *mr, u32 offset,
		       u32 len, int access, u8 *key)
{
	struct scatterlist sg;
	int n;

	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = s->region_dma + offset;
	sg_dma_len(&sg) = len;
	n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		kt_err("%s: ib_map_mr_sg mapped %d\n", s->name, n);
		return n < 0 ? n : -EIO;
	}
	ib_update_fast_reg_key(mr, ++*key);
	return kt_reg_mr(s, mr, access);
}

/*
 * The address of this device's own RoCE GID, the one the RC connection
 * uses, with its MAC (a kernel user gives RC QPs a resolved address): for
 * QPs of one side talking to each other through the device's loopback.
 */
static int kt_self_ah(struct kt_side *s, struct rdma_ah_attr *ah)
{
	const struct ib_gid_attr *gattr;
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	union ib_gid gid;
	int ret;

	ret = ib_query_qp(s->qp, &attr, IB_QP_AV, &init);
	if (ret)
		return ret;
	gattr = rdma_get_gid_attr(s->dev, 1,
				  rdma_ah_read_grh(&attr.ah_attr)->sgid_index);
	if (IS_ERR(gattr))
		return PTR_ERR(gattr);
	gid = gattr->gid;
	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah, 1);
	rdma_ah_set_grh(ah, &gid, 0, gattr->index, 64, 0);
	ret = rdma_read_gid_l2_fields(gattr, NULL, ah->roce.dmac);
	rdma_put_gid_attr(gattr);
	return ret;
}

/* Post one work request on 'qp' (whose CQ is s->cq), wait for 'want'. */
static int kt_post_wait(struct kt_side *s, struct ib_qp *qp,
			const struct ib_send_wr *wr, enum ib_wc_opcode want,
			struct ib_wc *wc)
{
	int ret = ib_post_send(qp, wr, NULL);

	if (ret) {
		kt_err("%s: post_send opcode %d failed (%d)\n", s->name,
		       wr->opcode, ret);
		return ret;
	}
	return kt_wait_wc(s, want, wc);
}

/*
 * Two RC QPs of this side on s->cq, connected to each other through the
 * device's loopback, letting in the remote operations of 'access'.
 */
static int kt_rc_pair(struct kt_side *s, struct ib_qp *qp[2], int access)
{
	struct ib_qp_init_attr init = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr a;
	struct rdma_ah_attr self;
	int i, ret;

	ret = kt_self_ah(s, &self);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		qp[i] = ib_create_qp(s->pd, &init);
		if (IS_ERR(qp[i])) {
			ret = PTR_ERR(qp[i]);
			qp[i] = NULL;
			return ret;
		}
	}
	for (i = 0; i < 2 && !ret; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = access;
		ret = ib_modify_qp(qp[i], &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
				   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
		if (ret)
			break;
		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_RTR;
		a.ah_attr = self;
		a.path_mtu = IB_MTU_1024;
		a.dest_qp_num = qp[!i]->qp_num;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		ret = ib_modify_qp(qp[i], &a, IB_QP_STATE | IB_QP_AV |
				   IB_QP_PATH_MTU | IB_QP_DEST_QPN |
				   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
				   IB_QP_MIN_RNR_TIMER);
		if (ret)
			break;
		a.qp_state = IB_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		ret = ib_modify_qp(qp[i], &a, IB_QP_STATE | IB_QP_TIMEOUT |
				   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
				   IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
	}
	return ret;
}

/*
 * One RDMA WRITE or READ on 'qp' between [laddr, laddr + len) of 'lkey'
 * and [raddr, raddr + len) of 'rkey'; its completion in *wc.
 */
static int kt_rdma_on(struct kt_side *s, struct ib_qp *qp, enum ib_wr_opcode op,
		      u64 laddr, u32 lkey, u64 raddr, u32 rkey, u32 len,
		      struct ib_wc *wc)
{
	struct ib_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = 0x3a9,
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return kt_post_wait(s, qp, &wr.wr, op == IB_WR_RDMA_READ ?
			    IB_WC_RDMA_READ : IB_WC_RDMA_WRITE, wc);
}

/* ---------------------------------------------------------------------- */
/* resources                                                              */
/* ---------------------------------------------------------------------- */

static void kt_free(struct kt_side *s)
{
	int i;

	if (s->qp)
		rdma_destroy_qp(s->id);
	s->qp = NULL;
	if (s->fr_mr)
		ib_dereg_mr(s->fr_mr);
	s->fr_mr = NULL;
	if (s->map_mr)
		ib_dereg_mr(s->map_mr);
	s->map_mr = NULL;
	if (s->region_mr)
		ib_dereg_mr(s->region_mr);
	s->region_mr = NULL;
	if (s->srq)
		ib_destroy_srq(s->srq);
	s->srq = NULL;
	if (s->cq)
		ib_destroy_cq(s->cq);
	s->cq = NULL;
	for (i = 0; i < KT_RECV_BUFS; i++) {
		if (!s->recv_buf[i])
			continue;
		ib_dma_unmap_single(s->dev, s->recv_dma[i],
				    KT_MSG_MAX + sizeof(struct kt_msg),
				    DMA_FROM_DEVICE);
		kfree(s->recv_buf[i]);
		s->recv_buf[i] = NULL;
	}
	if (s->send_buf) {
		ib_dma_unmap_single(s->dev, s->send_dma,
				    KT_MSG_MAX + sizeof(struct kt_msg),
				    DMA_TO_DEVICE);
		kfree(s->send_buf);
		s->send_buf = NULL;
	}
	if (s->region_pages) {
		ib_dma_unmap_single(s->dev, s->region_dma, KT_REGION_SIZE,
				    DMA_BIDIRECTIONAL);
		__free_pages(s->region_pages, get_order(KT_REGION_SIZE));
		s->region_pages = NULL;
	}
	if (s->pd)
		ib_dealloc_pd(s->pd);
	s->pd = NULL;
}

/* PD, CQ, (SRQ), QP, buffers and the fast-reg region MR, on s->id. */
static int kt_setup(struct kt_side *s, bool use_srq)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 2 * KT_SQ_DEPTH + KT_RECV_BUFS };
	struct ib_qp_init_attr qp_attr = {};
	int i, ret;

	s->dev = s->id->device;
	s->pd = ib_alloc_pd(s->dev, 0);
	if (IS_ERR(s->pd)) {
		ret = PTR_ERR(s->pd);
		s->pd = NULL;
		return ret;
	}
	s->cq = ib_create_cq(s->dev, kt_cq_comp, kt_cq_event, s, &cq_attr);
	if (IS_ERR(s->cq)) {
		ret = PTR_ERR(s->cq);
		s->cq = NULL;
		goto err;
	}
	if (use_srq && s->dev->attrs.max_srq) {
		struct ib_srq_init_attr srq_attr = {
			.attr = { .max_wr = KT_RECV_BUFS, .max_sge = 1 },
			.srq_type = IB_SRQT_BASIC,
		};

		s->srq = ib_create_srq(s->pd, &srq_attr);
		if (IS_ERR(s->srq)) {
			ret = PTR_ERR(s->srq);
			s->srq = NULL;
			goto err;
		}
	}
	qp_attr.event_handler = kt_qp_event;
	qp_attr.qp_context = s;
	qp_attr.send_cq = s->cq;
	qp_attr.recv_cq = s->cq;
	qp_attr.srq = s->srq;
	qp_attr.qp_type = IB_QPT_RC;
	qp_attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	qp_attr.cap.max_send_wr = KT_SQ_DEPTH;
	qp_attr.cap.max_recv_wr = s->srq ? 0 : KT_RECV_BUFS;
	qp_attr.cap.max_send_sge = min_t(u32, 4, s->dev->attrs.max_send_sge);
	qp_attr.cap.max_recv_sge = s->srq ? 0 : 1;
	qp_attr.cap.max_inline_data = 64;
	ret = rdma_create_qp(s->id, s->pd, &qp_attr);
	if (ret)
		goto err;
	s->qp = s->id->qp;

	for (i = 0; i < KT_RECV_BUFS; i++) {
		s->recv_buf[i] = kzalloc(KT_MSG_MAX + sizeof(struct kt_msg),
					 GFP_KERNEL);
		if (!s->recv_buf[i]) {
			ret = -ENOMEM;
			goto err;
		}
		s->recv_dma[i] = ib_dma_map_single(s->dev, s->recv_buf[i],
						   KT_MSG_MAX + sizeof(struct kt_msg),
						   DMA_FROM_DEVICE);
		ret = kt_post_recv(s, i);
		if (ret)
			goto err;
	}
	s->send_buf = kzalloc(KT_MSG_MAX + sizeof(struct kt_msg), GFP_KERNEL);
	if (!s->send_buf) {
		ret = -ENOMEM;
		goto err;
	}
	s->send_dma = ib_dma_map_single(s->dev, s->send_buf,
					KT_MSG_MAX + sizeof(struct kt_msg),
					DMA_TO_DEVICE);
	s->region_pages = alloc_pages(GFP_KERNEL | __GFP_ZERO,
				      get_order(KT_REGION_SIZE));
	if (!s->region_pages) {
		ret = -ENOMEM;
		goto err;
	}
	s->region = page_address(s->region_pages);
	s->region_dma = ib_dma_map_single(s->dev, s->region, KT_REGION_SIZE,
					  DMA_BIDIRECTIONAL);
	s->region_mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG,
				   KT_REGION_SIZE / PAGE_SIZE);
	if (IS_ERR(s->region_mr)) {
		ret = PTR_ERR(s->region_mr);
		s->region_mr = NULL;
		goto err;
	}
	return 0;
err:
	kt_err("%s: setup failed (%d)\n", s->name, ret);
	kt_free(s);
	return ret;
}

/* ---------------------------------------------------------------------- */
/* RDMA-CM                                                                */
/* ---------------------------------------------------------------------- */

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kt_side *s = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (s->req_id)
			return -EBUSY;	/* one session at a time: reject */
		id->context = s;
		s->req_id = id;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;	/* no waiter for these */
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/*
		 * The removal waits until this id is destroyed. The thread
		 * that owns the side holds the QP, CQ, PD and MRs made on the
		 * device and is the one to free them (kt_free) and destroy the
		 * id: returning non-zero here would have the CM destroy the id
		 * under it. So 0, and every wait of that thread ends now.
		 */
		kt_err("%s: device %s is being removed: stopping\n", s->name,
		       dev_name(&id->device->dev));
		WRITE_ONCE(s->removed, true);
		wake_up(&s->cq_wait);
		break;
	default:
		break;
	}
	s->cm_event = ev->event;
	s->cm_status = ev->status;
	complete(&s->cm_done);
	return 0;
}

static int kt_cm_wait(struct kt_side *s, enum rdma_cm_event_type want)
{
	unsigned long left = timeout_s * HZ;

	/*
	 * In slices of a second: a removal whose completion a caller's
	 * reinit_completion() dropped still ends the wait (s->removed).
	 */
	for (;;) {
		unsigned long slice = min_t(unsigned long, left, HZ);

		if (READ_ONCE(s->removed)) {
			kt_err("%s: device removed while waiting for %s\n",
			       s->name, rdma_event_msg(want));
			return -ENODEV;
		}
		if (READ_ONCE(s->aborted)) {
			kt_err("%s: no client: not waiting for %s\n", s->name,
			       rdma_event_msg(want));
			return -ECANCELED;
		}
		if (wait_for_completion_timeout(&s->cm_done, slice))
			break;
		left -= slice;
		if (!left) {
			kt_err("%s: timed out waiting for %s\n", s->name,
			       rdma_event_msg(want));
			return -ETIMEDOUT;
		}
	}
	if (s->cm_event == RDMA_CM_EVENT_DEVICE_REMOVAL)
		return -ENODEV;
	if (s->cm_event != want) {
		kt_err("%s: got %s (status %d), expected %s\n", s->name,
		       rdma_event_msg(s->cm_event), s->cm_status,
		       rdma_event_msg(want));
		return -ECONNREFUSED;
	}
	return 0;
}

static int kt_parse_addr(struct sockaddr_storage *ss, const char *str)
{
	memset(ss, 0, sizeof(*ss));
	return inet_pton_with_scope(&init_net, AF_UNSPEC, str, NULL, ss) ?:
	       0;
}

static void kt_set_port(struct sockaddr_storage *ss, u16 p)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(p);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(p);
}

/* ---------------------------------------------------------------------- */
/* server                                                                 */
/* ---------------------------------------------------------------------- */

struct kt_server {
	struct kt_side s;
	struct rdma_cm_id *listen_id;
	struct task_struct *task;
	struct completion listening;
	struct completion finished;
	int result;
};

/* Handle one request in recv buffer i (wc: its completion). */
static int kt_serve_one(struct kt_side *s, int i, struct ib_wc *wc,
			bool *done)
{
	struct kt_msg *req = (struct kt_msg *)s->recv_buf[i];
	struct kt_msg *reply = (struct kt_msg *)s->send_buf;
	u32 op = le32_to_cpu(req->op);
	u32 len = le32_to_cpu(req->len);
	u32 seed = le32_to_cpu(req->seed);
	u64 addr = le64_to_cpu(req->addr);
	u32 reply_len = sizeof(*reply);
	bool ok = true;

	memset(reply, 0, sizeof(*reply));
	reply->op = cpu_to_le32(op | KT_OP_REPLY);
	reply->flags = cpu_to_le32(wc->wc_flags);
	if (wc->wc_flags & IB_WC_WITH_IMM)
		reply->imm = cpu_to_le32(be32_to_cpu(wc->ex.imm_data));
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		reply->inv_rkey = cpu_to_le32(wc->ex.invalidate_rkey);

	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM) {
		/* write_imm: the immediate is the seed, the data at offset 0 */
		ib_dma_sync_single_for_cpu(s->dev, s->region_dma,
					   KT_REGION_SIZE, DMA_BIDIRECTIONAL);
		ok = kt_check_pattern(s->region, KT_WRITE_IMM_LEN,
				      be32_to_cpu(wc->ex.imm_data));
		reply->op = cpu_to_le32(KT_OP_CHECK | KT_OP_REPLY);
		reply->len = cpu_to_le32(wc->byte_len);
		reply->status = cpu_to_le32(!ok);
		goto send;
	}
	if (addr + len > KT_REGION_SIZE && op != KT_OP_ECHO)
		ok = false;
	else
		switch (op) {
		case KT_OP_ECHO:
			ok = len + sizeof(*req) <= wc->byte_len &&
			     kt_check_pattern((u8 *)(req + 1), len, seed);
			kt_pattern((u8 *)(reply + 1), len, seed + 1);
			reply->len = cpu_to_le32(len);
			reply_len += len;
			break;
		case KT_OP_CHECK:
			ib_dma_sync_single_for_cpu(s->dev, s->region_dma,
						   KT_REGION_SIZE,
						   DMA_BIDIRECTIONAL);
			ok = kt_check_pattern(s->region + addr, len, seed);
			break;
		case KT_OP_FILL:
			kt_pattern(s->region + addr, len, seed);
			ib_dma_sync_single_for_device(s->dev, s->region_dma,
						      KT_REGION_SIZE,
						      DMA_BIDIRECTIONAL);
			break;
		case KT_OP_SET64:
			*(u64 *)(s->region + addr) = le64_to_cpu(req->value);
			ib_dma_sync_single_for_device(s->dev, s->region_dma,
						      KT_REGION_SIZE,
						      DMA_BIDIRECTIONAL);
			break;
		case KT_OP_GET64:
			ib_dma_sync_single_for_cpu(s->dev, s->region_dma,
						   KT_REGION_SIZE,
						   DMA_BIDIRECTIONAL);
			reply->value = cpu_to_le64(*(u64 *)(s->region + addr));
			break;
		case KT_OP_FR_PREPARE:
			if (!s->fr_mr) {
				s->fr_mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG,
						       KT_FR_SIZE / PAGE_SIZE);
				if (IS_ERR(s->fr_mr)) {
					s->fr_mr = NULL;
					ok = false;
					break;
				}
			}
			memset(s->region + KT_FR_OFFSET, 0, KT_FR_SIZE);
			ib_dma_sync_single_for_device(s->dev, s->region_dma,
						      KT_REGION_SIZE,
						      DMA_BIDIRECTIONAL);
			ok = !kt_fast_reg(s, s->fr_mr, KT_FR_OFFSET, KT_FR_SIZE,
					  IB_ACCESS_LOCAL_WRITE |
					  IB_ACCESS_REMOTE_WRITE |
					  IB_ACCESS_REMOTE_READ, &s->fr_key);
			reply->addr = cpu_to_le64(s->fr_mr ? s->fr_mr->iova : 0);
			reply->rkey = cpu_to_le32(s->fr_mr ? s->fr_mr->rkey : 0);
			reply->len = cpu_to_le32(KT_FR_SIZE);
			break;
		case KT_OP_FR_CHECK:
			ib_dma_sync_single_for_cpu(s->dev, s->region_dma,
						   KT_REGION_SIZE,
						   DMA_BIDIRECTIONAL);
			ok = kt_check_pattern(s->region + KT_FR_OFFSET, len, seed);
			break;
		case KT_OP_DONE:
			*done = true;
			break;
		case KT_OP_LAST:
			s->expect_qp_error = true;
			break;
		case KT_OP_MAP_WRITE:
			kt_pattern(s->region + addr, len, seed);
			ib_dma_sync_single_for_device(s->dev, s->region_dma,
						      KT_REGION_SIZE,
						      DMA_BIDIRECTIONAL);
			ok = !kt_rdma_on(s, s->qp, IB_WR_RDMA_WRITE,
					 s->region_dma + addr,
					 s->pd->local_dma_lkey,
					 le64_to_cpu(req->value),
					 le32_to_cpu(req->rkey), len, NULL);
			break;
		default:
			ok = false;
			break;
		}
	if (!ok)
		kt_err("server: request %u (len %u seed %u) failed\n", op, len,
		       seed);
	reply->status = cpu_to_le32(!ok);
send:
	kt_post_recv(s, i);
	return kt_send(s, reply_len, IB_WR_SEND, 0, false);
}

/* Whether the device does FLUSH and ATOMIC WRITE for this kernel's core. */
static bool kt_placement(struct kt_side *s)
{
#if RNIC_IB_PLACEMENT
	return (s->dev->attrs.device_cap_flags & IB_DEVICE_FLUSH_GLOBAL) &&
	       (s->dev->attrs.device_cap_flags & IB_DEVICE_ATOMIC_WRITE);
#else
	return false;
#endif
}

#if RNIC_IB_PLACEMENT
/* Add IB_ACCESS_FLUSH_GLOBAL to the connected QP's access flags. */
static int kt_qp_allow_flush(struct kt_side *s)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	ret = ib_query_qp(s->qp, &attr, IB_QP_ACCESS_FLAGS, &init);
	if (ret)
		return ret;
	attr.qp_access_flags |= IB_ACCESS_FLUSH_GLOBAL;
	ret = ib_modify_qp(s->qp, &attr, IB_QP_ACCESS_FLAGS);
	if (!ret)
		ret = ib_query_qp(s->qp, &attr, IB_QP_ACCESS_FLAGS, &init);
	if (!ret && !(attr.qp_access_flags & IB_ACCESS_FLUSH_GLOBAL))
		ret = -EIO;
	if (ret)
		kt_err("server: QP access flags with FLUSH_GLOBAL: %d (0x%x)\n",
		       ret, attr.qp_access_flags);
	return ret;
}
#endif

static int kt_server_session(struct kt_server *srv)
{
	struct kt_side *s = &srv->s;
	struct rdma_conn_param param = {};
	struct kt_msg *hello;
	bool done = false;
	int access, ret;

	ret = kt_cm_wait(s, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ret)
		return ret;
	s->id = s->req_id;
	reinit_completion(&s->cm_done);
	ret = kt_setup(s, true);
	if (ret) {
		rdma_reject(s->id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		rdma_destroy_id(s->id);
		s->id = NULL;
		return ret;
	}
	param.responder_resources = min_t(int, 4, s->dev->attrs.max_qp_rd_atom);
	param.initiator_depth = param.responder_resources;
	param.rnr_retry_count = 7;
	ret = rdma_accept(s->id, &param);
	if (ret) {
		kt_err("server: rdma_accept failed (%d)\n", ret);
		goto out;
	}
	ret = kt_cm_wait(s, RDMA_CM_EVENT_ESTABLISHED);
	if (ret)
		goto out;
	kt_info("server: connection from %pISc (device %s, QP %u%s)\n",
		&s->id->route.addr.dst_addr, dev_name(&s->dev->dev),
		s->qp->qp_num, s->srq ? ", SRQ" : "");
	/*
	 * The region, fast-registered for remote access (a REG_MR work request
	 * needs a connected QP), announced to the client in a HELLO message;
	 * FLUSHes of global visibility too when the device does them (and the
	 * QP lets them in: responders like rxe check the QP's access flags).
	 */
	access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
#if RNIC_IB_PLACEMENT
	if (kt_placement(s)) {
		access |= IB_ACCESS_FLUSH_GLOBAL;
		ret = kt_qp_allow_flush(s);
		if (ret)
			goto out;
	}
#endif
	ret = kt_fast_reg(s, s->region_mr, 0, KT_REGION_SIZE, access,
			  &s->fr_key);
	if (ret)
		goto out;
	hello = (struct kt_msg *)s->send_buf;
	memset(hello, 0, sizeof(*hello));
	hello->op = cpu_to_le32(KT_OP_HELLO);
	hello->addr = cpu_to_le64(s->region_mr->iova);
	hello->rkey = cpu_to_le32(s->region_mr->rkey);
	hello->len = cpu_to_le32(KT_REGION_SIZE);
	hello->value = cpu_to_le64(access);
	ret = kt_send(s, sizeof(*hello), IB_WR_SEND, 0, false);
	if (ret)
		goto out;
	while (!done) {
		struct ib_wc wc;
		int i = kt_recv(s, &wc);

		if (i < 0 && s->expect_qp_error && READ_ONCE(s->qp_error)) {
			kt_info("server: QP in error after the client's bad WRITE, as expected\n");
			ret = 0;
			break;
		}
		if (i < 0) {
			ret = i;
			break;
		}
		ret = kt_serve_one(s, i, &wc, &done);
		if (ret)
			break;
	}
out:
	rdma_disconnect(s->id);
	kt_free(s);
	rdma_destroy_id(s->id);
	s->id = NULL;
	return ret;
}

static int kt_server_thread(void *data)
{
	struct kt_server *srv = data;

	srv->result = kt_server_session(srv);
	complete(&srv->finished);
	return 0;
}

static int kt_server_start(struct kt_server *srv, const char *bind_addr)
{
	struct sockaddr_storage ss = {};
	int ret;

	srv->s.name = "server";
	init_completion(&srv->s.cm_done);
	init_waitqueue_head(&srv->s.cq_wait);
	init_completion(&srv->finished);
	srv->listen_id = rdma_create_id(&init_net, kt_cm_handler, &srv->s,
					RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(srv->listen_id))
		return PTR_ERR(srv->listen_id);
	if (bind_addr && *bind_addr) {
		ret = kt_parse_addr(&ss, bind_addr);
		if (ret)
			goto err;
	} else {
		/* the IPv6 wildcard takes IPv4 connections too */
		ss.ss_family = AF_INET6;
	}
	kt_set_port(&ss, port);
	ret = rdma_bind_addr(srv->listen_id, (struct sockaddr *)&ss);
	if (!ret)
		ret = rdma_listen(srv->listen_id, 1);
	if (ret) {
		kt_err("server: cannot listen on port %u (%d)\n", port, ret);
		goto err;
	}
	srv->task = kthread_run(kt_server_thread, srv, "rnic_ktest_srv");
	if (IS_ERR(srv->task)) {
		ret = PTR_ERR(srv->task);
		goto err;
	}
	kt_info("server: listening on port %u\n", port);
	return 0;
err:
	rdma_destroy_id(srv->listen_id);
	return ret;
}

static int kt_server_finish(struct kt_server *srv)
{
	/* the session waits at most timeout_s per step, less on removal */
	wait_for_completion(&srv->finished);
	rdma_destroy_id(srv->listen_id);
	return srv->result;
}

/* ---------------------------------------------------------------------- */
/* client tests                                                           */
/* ---------------------------------------------------------------------- */

static void kt_report(struct kt_side *s, const char *test, int ret, u32 ops,
		      ktime_t start)
{
	s64 us = ktime_us_delta(ktime_get(), start);

	if (ret) {
		s->failures++;
		kt_err("%s: FAIL (%d)\n", test, ret);
	} else {
		kt_info("%s: PASS (%u operations, %lld us)\n", test, ops, us);
	}
}

static int kt_test_send_recv(struct kt_side *s, u32 *ops)
{
	static const u32 sizes[] = { 0, 1, 63, 64, 1000, 4096, 9000, 32768,
				     KT_MSG_MAX };
	struct kt_msg *req = (struct kt_msg *)s->send_buf;
	u32 it, k;
	int ret;

	for (it = 0; it < iters; it++) {
		for (k = 0; k < ARRAY_SIZE(sizes); k++) {
			u32 len = sizes[k], seed = it * 100 + k;
			struct kt_msg *reply;
			struct ib_wc wc;
			int i;

			memset(req, 0, sizeof(*req));
			req->op = cpu_to_le32(KT_OP_ECHO);
			req->len = cpu_to_le32(len);
			req->seed = cpu_to_le32(seed);
			kt_pattern((u8 *)(req + 1), len, seed);
			/* small ones inline, every third with two SGEs */
			if (sizeof(*req) + len <= 64) {
				ret = kt_send(s, sizeof(*req) + len, IB_WR_SEND,
					      0, true);
			} else if (k % 3 == 0 && s->dev->attrs.max_send_sge > 1) {
				struct ib_sge sge[2] = {
					{ s->send_dma, sizeof(*req) + len / 2,
					  s->pd->local_dma_lkey },
					{ s->send_dma + sizeof(*req) + len / 2,
					  len - len / 2, s->pd->local_dma_lkey },
				};
				struct ib_send_wr wr = {
					.opcode = IB_WR_SEND,
					.send_flags = IB_SEND_SIGNALED,
					.sg_list = sge, .num_sge = 2,
				};

				ib_dma_sync_single_for_device(s->dev, s->send_dma,
							      sizeof(*req) + len,
							      DMA_TO_DEVICE);
				ret = kt_post_send(s, &wr) ?:
				      kt_wait_wc(s, IB_WC_SEND, NULL);
			} else {
				ret = kt_send(s, sizeof(*req) + len, IB_WR_SEND,
					      0, false);
			}
			if (ret)
				return ret;
			i = kt_recv(s, &wc);
			if (i < 0)
				return i;
			reply = (struct kt_msg *)s->recv_buf[i];
			ret = le32_to_cpu(reply->status) ||
			      wc.byte_len != sizeof(*reply) + len ||
			      !kt_check_pattern((u8 *)(reply + 1), len, seed + 1);
			kt_post_recv(s, i);
			if (ret) {
				kt_err("send_recv: echo of %u bytes wrong\n", len);
				return -EIO;
			}
			(*ops)++;
		}
	}
	return 0;
}

static int kt_test_send_imm(struct kt_side *s, u32 *ops)
{
	struct kt_msg *req = (struct kt_msg *)s->send_buf;
	struct kt_msg *reply;
	struct ib_wc wc;
	int i, ret;

	memset(req, 0, sizeof(*req));
	req->op = cpu_to_le32(KT_OP_ECHO);
	ret = kt_send(s, sizeof(*req), IB_WR_SEND_WITH_IMM, 0xc0ffee, false);
	if (ret)
		return ret;
	i = kt_recv(s, &wc);
	if (i < 0)
		return i;
	reply = (struct kt_msg *)s->recv_buf[i];
	ret = !(le32_to_cpu(reply->flags) & IB_WC_WITH_IMM) ||
	      le32_to_cpu(reply->imm) != 0xc0ffee;
	kt_post_recv(s, i);
	if (ret) {
		kt_err("send_imm: server saw flags 0x%x imm 0x%x\n",
		       le32_to_cpu(reply->flags), le32_to_cpu(reply->imm));
		return -EIO;
	}
	(*ops)++;
	return 0;
}

/* One RDMA WRITE/READ of 'len' bytes between local region+loff and the
 * server region+roff. */
static int kt_rdma(struct kt_side *s, enum ib_wr_opcode op, u32 loff,
		   u32 roff, u32 len, u32 imm)
{
	struct ib_sge sge = {
		.addr = s->region_dma + loff,
		.length = len,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
			.ex.imm_data = cpu_to_be32(imm),
		},
		.remote_addr = le64_to_cpu(s->peer_info.addr) + roff,
		.rkey = le32_to_cpu(s->peer_info.rkey),
	};
	int ret;

	if (op != IB_WR_RDMA_READ)
		ib_dma_sync_single_for_device(s->dev, s->region_dma,
					      KT_REGION_SIZE, DMA_BIDIRECTIONAL);
	ret = kt_post_send(s, &wr.wr);
	if (ret)
		return ret;
	ret = kt_wait_wc(s, op == IB_WR_RDMA_READ ? IB_WC_RDMA_READ :
						    IB_WC_RDMA_WRITE, NULL);
	if (!ret && op == IB_WR_RDMA_READ)
		ib_dma_sync_single_for_cpu(s->dev, s->region_dma,
					   KT_REGION_SIZE, DMA_BIDIRECTIONAL);
	return ret;
}

/* Does the server's region[roff, roff + len) hold pattern(seed)? */
static int kt_server_check(struct kt_side *s, u32 roff, u32 len, u32 seed)
{
	struct kt_msg req = {
		.op = cpu_to_le32(KT_OP_CHECK),
		.addr = cpu_to_le64(roff),
		.len = cpu_to_le32(len),
		.seed = cpu_to_le32(seed),
	}, reply;

	return kt_request(s, &req, &reply);
}

static const u32 kt_rdma_sizes[] = { 1, 8, 1024, 4096, 4097, 65536 + 123,
				     KT_REGION_SIZE / 2 };

static int kt_test_write(struct kt_side *s, u32 *ops)
{
	u32 it, k;
	int ret;

	for (it = 0; it < iters; it++) {
		for (k = 0; k < ARRAY_SIZE(kt_rdma_sizes); k++) {
			u32 len = kt_rdma_sizes[k], seed = 1000 + it * 10 + k;
			u32 roff = (k * 4096 + it * 8) % (KT_REGION_SIZE / 2);

			kt_pattern(s->region, len, seed);
			ret = kt_rdma(s, IB_WR_RDMA_WRITE, 0, roff, len, 0);
			if (ret)
				return ret;
			ret = kt_server_check(s, roff, len, seed);
			if (ret) {
				kt_err("write: %u bytes at %u not as written\n",
				       len, roff);
				return ret;
			}
			(*ops)++;
		}
	}
	return 0;
}

static int kt_test_write_imm(struct kt_side *s, u32 *ops)
{
	u32 seed = 4242, len = KT_WRITE_IMM_LEN;
	struct kt_msg *reply;
	struct ib_wc wc;
	int i, ret;

	kt_pattern(s->region, len, seed);
	ret = kt_rdma(s, IB_WR_RDMA_WRITE_WITH_IMM, 0, 0, len, seed);
	if (ret)
		return ret;
	i = kt_recv(s, &wc);
	if (i < 0)
		return i;
	reply = (struct kt_msg *)s->recv_buf[i];
	ret = le32_to_cpu(reply->status) || le32_to_cpu(reply->imm) != seed;
	kt_post_recv(s, i);
	if (ret) {
		kt_err("write_imm: server status %u imm %u\n",
		       le32_to_cpu(reply->status), le32_to_cpu(reply->imm));
		return -EIO;
	}
	if (le32_to_cpu(reply->len) != len)
		kt_info("write_imm: note: receive completion byte_len %u\n",
			le32_to_cpu(reply->len));
	(*ops)++;
	return 0;
}

static int kt_test_read(struct kt_side *s, u32 *ops)
{
	struct kt_msg req = {}, reply;
	u32 it, k;
	int ret;

	for (it = 0; it < iters; it++) {
		for (k = 0; k < ARRAY_SIZE(kt_rdma_sizes); k++) {
			u32 len = kt_rdma_sizes[k], seed = 2000 + it * 10 + k;
			u32 roff = (k * 8192 + it * 16) % (KT_REGION_SIZE / 2);

			req.op = cpu_to_le32(KT_OP_FILL);
			req.addr = cpu_to_le64(roff);
			req.len = cpu_to_le32(len);
			req.seed = cpu_to_le32(seed);
			ret = kt_request(s, &req, &reply);
			if (ret)
				return ret;
			memset(s->region, 0, len);
			ret = kt_rdma(s, IB_WR_RDMA_READ, 0, roff, len, 0);
			if (ret)
				return ret;
			if (!kt_check_pattern(s->region, len, seed)) {
				kt_err("read: %u bytes at %u wrong\n", len, roff);
				return -EIO;
			}
			(*ops)++;
		}
	}
	return 0;
}

static int kt_atomic(struct kt_side *s, enum ib_wr_opcode op, u64 roff,
		     u64 compare_add, u64 swap, u64 *orig)
{
	struct ib_sge sge = {
		.addr = s->region_dma + 64,
		.length = 8,
		.lkey = s->pd->local_dma_lkey,
	};
	struct ib_atomic_wr wr = {
		.wr = {
			.opcode = op,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = le64_to_cpu(s->peer_info.addr) + roff,
		.compare_add = compare_add,
		.swap = swap,
		.rkey = le32_to_cpu(s->peer_info.rkey),
	};
	int ret;

	ret = kt_post_send(s, &wr.wr);
	if (ret)
		return ret;
	ret = kt_wait_wc(s, op == IB_WR_ATOMIC_CMP_AND_SWP ? IB_WC_COMP_SWAP :
							     IB_WC_FETCH_ADD,
			 NULL);
	if (ret)
		return ret;
	ib_dma_sync_single_for_cpu(s->dev, s->region_dma, KT_REGION_SIZE,
				   DMA_BIDIRECTIONAL);
	*orig = *(u64 *)(s->region + 64);
	return 0;
}

static int kt_test_atomic(struct kt_side *s, u32 *ops)
{
	struct kt_msg req = {}, reply;
	u64 v0 = 0x1122334455667788ull, v1 = 0x0badc0ffee0ddf00ull, orig;
	u64 roff = 4096 + 8;
	int ret;

	if (s->dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
		kt_info("atomic: device has no atomics\n");
		return 0;
	}
	req.op = cpu_to_le32(KT_OP_SET64);
	req.addr = cpu_to_le64(roff);
	req.value = cpu_to_le64(v0);
	ret = kt_request(s, &req, &reply);
	if (ret)
		return ret;
	ret = kt_atomic(s, IB_WR_ATOMIC_CMP_AND_SWP, roff, v0, v1, &orig);
	if (ret || orig != v0) {
		kt_err("atomic: CMP_SWP hit returned 0x%llx (%d)\n", orig, ret);
		return ret ?: -EIO;
	}
	ret = kt_atomic(s, IB_WR_ATOMIC_CMP_AND_SWP, roff, v0, 7, &orig);
	if (ret || orig != v1) {
		kt_err("atomic: CMP_SWP miss returned 0x%llx (%d)\n", orig, ret);
		return ret ?: -EIO;
	}
	ret = kt_atomic(s, IB_WR_ATOMIC_FETCH_AND_ADD, roff, 5, 0, &orig);
	if (ret || orig != v1) {
		kt_err("atomic: FETCH_ADD returned 0x%llx (%d)\n", orig, ret);
		return ret ?: -EIO;
	}
	req.op = cpu_to_le32(KT_OP_GET64);
	ret = kt_request(s, &req, &reply);
	if (ret || le64_to_cpu(reply.value) != v1 + 5) {
		kt_err("atomic: server holds 0x%llx, expected 0x%llx\n",
		       le64_to_cpu(reply.value), v1 + 5);
		return ret ?: -EIO;
	}
	*ops += 3;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* placement: FLUSH and ATOMIC WRITE (IBTA 1.5), rnic-kernel.h            */
/* ---------------------------------------------------------------------- */

#if RNIC_IB_PLACEMENT

/* ATOMIC WRITE of 'value' at the server region's offset 'roff'. */
static int kt_atomic_write(struct kt_side *s, u64 roff, u64 value)
{
	struct ib_sge sge = {
		.addr = (uintptr_t)&value,	/* inline: a kernel address */
		.length = sizeof(value),
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = IB_WR_ATOMIC_WRITE,
			.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
			.sg_list = &sge,
			.num_sge = 1,
		},
		.remote_addr = le64_to_cpu(s->peer_info.addr) + roff,
		.rkey = le32_to_cpu(s->peer_info.rkey),
	};

	return kt_post_wait(s, s->qp, &wr.wr, IB_WC_ATOMIC_WRITE, NULL);
}

/*
 * FLUSH of [addr, addr + len) of the region 'rkey' names, or of all of it
 * (len 0), on 'qp'; 'flags' may ask for persistence. Returns the
 * completion's result, with its status in *wc.
 */
static int kt_flush(struct kt_side *s, struct ib_qp *qp, u64 addr, u32 rkey,
		    u32 len, int flags, struct ib_wc *wc)
{
	struct ib_sge range = { .length = len };
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = 0xf1,
			.opcode = IB_WR_FLUSH,
			.send_flags = IB_SEND_SIGNALED | flags,
			.sg_list = len ? &range : NULL,
			.num_sge = len ? 1 : 0,
		},
		.remote_addr = addr,
		.rkey = rkey,
	};

	return kt_post_wait(s, qp, &wr.wr, IB_WC_FLUSH, wc);
}

static int kt_get64(struct kt_side *s, u64 roff, u64 *value)
{
	struct kt_msg req = {
		.op = cpu_to_le32(KT_OP_GET64),
		.addr = cpu_to_le64(roff),
	}, reply;
	int ret = kt_request(s, &req, &reply);

	*value = le64_to_cpu(reply.value);
	return ret;
}

/* What rnic-kernel.h refuses is refused at post time, nothing posted. */
static int kt_placement_refusals(struct kt_side *s, u32 *ops)
{
	u64 value = 0;
	struct ib_sge sge[2] = {
		{ .addr = (uintptr_t)&value, .length = 8 },
		{ .addr = (uintptr_t)&value, .length = 8 },
	};
	struct ib_rdma_wr wr = {
		.remote_addr = le64_to_cpu(s->peer_info.addr) + KT_PL_OFFSET,
		.rkey = le32_to_cpu(s->peer_info.rkey),
	};
	static const struct {
		const char *what;
		enum ib_wr_opcode opcode;
		int send_flags;
		int num_sge;
		u32 length;
	} cases[] = {
		{ "ATOMIC WRITE not inline", IB_WR_ATOMIC_WRITE, 0, 1, 8 },
		{ "ATOMIC WRITE of 4 bytes", IB_WR_ATOMIC_WRITE, IB_SEND_INLINE,
		  1, 4 },
		{ "ATOMIC WRITE of two SGEs", IB_WR_ATOMIC_WRITE, IB_SEND_INLINE,
		  2, 8 },
		{ "FLUSH with two SGEs", IB_WR_FLUSH, 0, 2, 8 },
		{ "FLUSH inline", IB_WR_FLUSH, IB_SEND_INLINE, 1, 8 },
	};
	const struct ib_send_wr *bad;
	u32 i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		wr.wr.opcode = cases[i].opcode;
		wr.wr.send_flags = IB_SEND_SIGNALED | cases[i].send_flags;
		wr.wr.sg_list = sge;
		wr.wr.num_sge = cases[i].num_sge;
		sge[0].length = cases[i].length;
		bad = NULL;
		ret = ib_post_send(s->qp, &wr.wr, &bad);
		if (ret != -EINVAL || bad != &wr.wr) {
			kt_err("placement: %s: post_send returned %d\n",
			       cases[i].what, ret);
			return -EIO;
		}
		(*ops)++;
	}
	return 0;
}

/*
 * A FLUSH asking for persistence of a region registered for global
 * visibility only: the responder answers with a remote access error
 * (IBTA 1.5 oA19-13), which moves both QPs to ERR, so on two QPs of the
 * client's own, to the client's region (registered here, with
 * FLUSH_GLOBAL). A FLUSH of global visibility goes through first.
 */
static int kt_flush_persist_refused(struct kt_side *s, u32 *ops)
{
	struct ib_qp *qp[2] = {};
	struct ib_wc wc = {};
	u8 key = 0x70;
	int i, ret;

	ret = kt_fast_reg(s, s->region_mr, 0, KT_PL_LEN,
			  IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_FLUSH_GLOBAL, &key);
	if (!ret)
		ret = kt_rc_pair(s, qp, IB_ACCESS_REMOTE_WRITE |
				 IB_ACCESS_FLUSH_GLOBAL);
	if (ret) {
		kt_err("placement: loopback QP pair: %d\n", ret);
		goto out;
	}
	ret = kt_flush(s, qp[0], s->region_mr->iova, s->region_mr->rkey,
		       KT_PL_LEN, 0, NULL);
	if (ret)
		goto out;
	(*ops)++;
	ret = kt_flush(s, qp[0], s->region_mr->iova, s->region_mr->rkey,
		       KT_PL_LEN, RNIC_SEND_FLUSH_PERSISTENT, &wc);
	if (ret != -EIO || wc.status != IB_WC_REM_ACCESS_ERR ||
	    wc.wr_id != 0xf1) {
		kt_err("placement: FLUSH persistence of a region without it: %s (%d)\n",
		       ret ? ib_wc_status_msg(wc.status) : "succeeded", ret);
		ret = -EIO;
		goto out;
	}
	ret = 0;
	(*ops)++;
out:
	for (i = 0; i < 2; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	return ret;
}

static int kt_test_placement(struct kt_side *s, u32 *ops)
{
	u64 base = le64_to_cpu(s->peer_info.addr), aw = KT_PL_OFFSET + KT_PL_LEN;
	u32 rkey = le32_to_cpu(s->peer_info.rkey);
	bool rnic = !strncmp(dev_name(&s->dev->dev), "rnic", 4);
	struct kt_msg req = {}, reply;
	u64 value, got, around[3];
	u32 it, seed;
	int k, ret;

	if (!kt_placement(s)) {
		kt_info("placement: %s has no FLUSH/ATOMIC WRITE, skipped\n",
			dev_name(&s->dev->dev));
		return 0;
	}
	if (!(s->peer_info.access & IB_ACCESS_FLUSH_GLOBAL)) {
		kt_info("placement: the server's region takes no FLUSH, skipped\n");
		return 0;
	}
	for (it = 0; it < iters; it++) {
		/* ATOMIC WRITE into a zeroed word; its neighbours stay */
		value = 0x0123456789abcdefull ^ ((u64)it << 56 | it);
		req.op = cpu_to_le32(KT_OP_FILL);
		req.addr = cpu_to_le64(aw);
		req.len = cpu_to_le32(24);
		req.seed = cpu_to_le32(4000 + it);
		ret = kt_request(s, &req, &reply) ?:
		      kt_atomic_write(s, aw + 8, value) ?:
		      kt_get64(s, aw + 8, &got);
		if (ret || got != value) {
			kt_err("placement: ATOMIC WRITE of 0x%llx: server holds 0x%llx (%d)\n",
			       value, got, ret);
			return ret ?: -EIO;
		}
		/* the words around it: pattern(seed) still */
		kt_pattern((u8 *)around, sizeof(around), 4000 + it);
		for (k = 0; k < 3; k += 2) {
			ret = kt_get64(s, aw + 8 * k, &got);
			if (ret || got != around[k]) {
				kt_err("placement: ATOMIC WRITE changed the word at %+d\n",
				       8 * (k - 1));
				return ret ?: -EIO;
			}
		}
		(*ops)++;

		/* WRITE, FLUSH of its range, FLUSH of the region, CHECK */
		seed = 3000 + it;
		kt_pattern(s->region, KT_PL_LEN, seed);
		ret = kt_rdma(s, IB_WR_RDMA_WRITE, 0, KT_PL_OFFSET, KT_PL_LEN,
			      0) ?:
		      kt_flush(s, s->qp, base + KT_PL_OFFSET, rkey, KT_PL_LEN,
			       0, NULL) ?:
		      kt_flush(s, s->qp, base, rkey, 0, 0, NULL);
		if (ret)
			return ret;
		ret = kt_server_check(s, KT_PL_OFFSET, KT_PL_LEN, seed);
		if (ret) {
			kt_err("placement: %u bytes written and flushed not there\n",
			       KT_PL_LEN);
			return ret;
		}
		*ops += 3;
	}
	if (!rnic) {
		kt_info("placement: not an rnic device: refusals and persistence skipped\n");
		return 0;
	}
	return kt_placement_refusals(s, ops) ?:
	       kt_flush_persist_refused(s, ops);
}
#else
static int kt_test_placement(struct kt_side *s, u32 *ops)
{
	kt_info("placement: this kernel's RDMA core has no FLUSH/ATOMIC WRITE (6.2+), skipped\n");
	return 0;
}
#endif

static u64 kt_fr_addr;
static u32 kt_fr_rkey;

static int kt_test_fastreg_inv(struct kt_side *s, u32 *ops)
{
	struct kt_msg *req = (struct kt_msg *)s->send_buf;
	struct kt_msg prep = {}, reply;
	struct ib_mr *mr;
	struct ib_wc wc;
	u32 seed = 777, len = KT_FR_SIZE;
	u8 key = 0x40;
	int i, ret;

	if (!(s->dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS)) {
		kt_info("fastreg_inv: device has no fast registration\n");
		return 0;
	}
	/* remote: server fast-registers, we write, SEND_WITH_INV */
	prep.op = cpu_to_le32(KT_OP_FR_PREPARE);
	ret = kt_request(s, &prep, &reply);
	if (ret)
		return ret;
	kt_fr_addr = le64_to_cpu(reply.addr);
	kt_fr_rkey = le32_to_cpu(reply.rkey);
	{
		struct kt_conn_info saved = s->peer_info;

		s->peer_info.addr = cpu_to_le64(kt_fr_addr);
		s->peer_info.rkey = cpu_to_le32(kt_fr_rkey);
		kt_pattern(s->region, len, seed);
		ret = kt_rdma(s, IB_WR_RDMA_WRITE, 0, 0, len, 0);
		s->peer_info = saved;
		if (ret)
			return ret;
	}
	memset(req, 0, sizeof(*req));
	req->op = cpu_to_le32(KT_OP_FR_CHECK);
	req->len = cpu_to_le32(len);
	req->seed = cpu_to_le32(seed);
	ret = kt_send(s, sizeof(*req), IB_WR_SEND_WITH_INV, kt_fr_rkey, false);
	if (ret)
		return ret;
	i = kt_recv(s, &wc);
	if (i < 0)
		return i;
	memcpy(&reply, s->recv_buf[i], sizeof(reply));
	kt_post_recv(s, i);
	if (le32_to_cpu(reply.status) ||
	    !(le32_to_cpu(reply.flags) & IB_WC_WITH_INVALIDATE) ||
	    le32_to_cpu(reply.inv_rkey) != kt_fr_rkey) {
		kt_err("fastreg_inv: server status %u flags 0x%x inv 0x%x (rkey 0x%x)\n",
		       le32_to_cpu(reply.status), le32_to_cpu(reply.flags),
		       le32_to_cpu(reply.inv_rkey), kt_fr_rkey);
		return -EIO;
	}
	*ops += 3;

	/* local: SEND from a fast-registered lkey, then LOCAL_INV it */
	mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 4);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	ret = kt_fast_reg(s, mr, 128 * 1024, 8192, IB_ACCESS_LOCAL_WRITE, &key);
	if (!ret) {
		struct kt_msg *m = (struct kt_msg *)(s->region + 128 * 1024);
		struct ib_sge sge = {
			.addr = mr->iova,
			.length = sizeof(*m) + 1000,
			.lkey = mr->lkey,
		};
		struct ib_send_wr wr = {
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED,
			.sg_list = &sge,
			.num_sge = 1,
		};
		struct ib_send_wr inv = {
			.opcode = IB_WR_LOCAL_INV,
			.send_flags = IB_SEND_SIGNALED,
			.ex.invalidate_rkey = mr->lkey,
		};
		struct kt_msg *echo;

		memset(m, 0, sizeof(*m));
		m->op = cpu_to_le32(KT_OP_ECHO);
		m->len = cpu_to_le32(1000);
		m->seed = cpu_to_le32(31337);
		kt_pattern((u8 *)(m + 1), 1000, 31337);
		ib_dma_sync_single_for_device(s->dev, s->region_dma,
					      KT_REGION_SIZE, DMA_BIDIRECTIONAL);
		ret = kt_post_send(s, &wr) ?: kt_wait_wc(s, IB_WC_SEND, NULL);
		if (!ret) {
			i = kt_recv(s, &wc);
			ret = i < 0 ? i : 0;
			if (!ret) {
				echo = (struct kt_msg *)s->recv_buf[i];
				if (le32_to_cpu(echo->status) ||
				    !kt_check_pattern((u8 *)(echo + 1), 1000,
						      31338))
					ret = -EIO;
				kt_post_recv(s, i);
			}
		}
		if (!ret)
			ret = kt_post_send(s, &inv) ?:
			      kt_wait_wc(s, IB_WC_LOCAL_INV, NULL);
		if (!ret)
			*ops += 2;
	}
	ib_dereg_mr(mr);
	return ret;
}

/* A WRITE to the rkey the server's SEND_WITH_INV invalidated must fail. */
static int kt_test_inv_enforced(struct kt_side *s, u32 *ops)
{
	struct ib_wc wc = {};
	int ret;

	if (!kt_fr_rkey)
		return 0;
	ret = kt_rdma_on(s, s->qp, IB_WR_RDMA_WRITE, s->region_dma,
			 s->pd->local_dma_lkey, kt_fr_addr, kt_fr_rkey, 64, &wc);
	if (ret != -EIO || wc.status != IB_WC_REM_ACCESS_ERR) {
		kt_err("inv_enforced: WRITE to an invalidated rkey: %s\n",
		       ret ? ib_wc_status_msg(wc.status) : "succeeded");
		return -EIO;
	}
	(*ops)++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* mapped STags: IB_MR_TYPE_SG_GAPS (IBK_SG_GAPS_REG)                      */
/* ---------------------------------------------------------------------- */

#define KT_MAP_OFFSET	(640 * 1024)	/* client region: the buffers' area */
#define KT_MAP_AREA	(24 * 1024)
#define KT_MAP_ROFF	(600 * 1024 + 3)	/* server region: READ source */
#define KT_MAP_SRC	(704 * 1024)	/* server region: its WRITEs' source */
#define KT_MAP_GAP	0xa5		/* what the area holds outside the set */
#define KT_MAP_SG_OFFSET 5		/* the first element's sg_offset */
#define KT_MAP_NBUFS	5
#define KT_MAP_MAX_SG	8
#define KT_MAP_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_WRITE)

/* The buffers in the area: odd offsets and lengths, gaps, 2 and 4 cross a page */
static const struct {
	u32 off, len;
} kt_map_bufs[KT_MAP_NBUFS] = {
	{ 5, 1001 }, { 3000, 2221 }, { 8193, 17 }, { 12389, 4099 },
	{ 20000, 777 },
};

/*
 * What the map_* tests share: the order the MR maps the buffers in (the
 * scatterlist's), the set's length, the area as it should be, the keys.
 */
static struct {
	int state;		/* 0: not run (no SG_GAPS), 1: ready, < 0: failed */
	bool reversed;		/* buffer 4 first, ..., buffer 0 last */
	u32 len;
	u32 old_rkey;		/* of the registration before LOCAL_INV */
	u8 *model;		/* KT_MAP_AREA bytes */
	u8 *pattern;		/* scratch: pattern(seed) */
} kt_map;

static bool kt_has_sg_gaps(struct kt_side *s)
{
	return s->dev->attrs.kernel_cap_flags & IBK_SG_GAPS_REG;
}

static u8 *kt_map_area(struct kt_side *s)
{
	return s->region + KT_MAP_OFFSET;
}

static u32 kt_map_buf(u32 i)
{
	return kt_map.reversed ? KT_MAP_NBUFS - 1 - i : i;
}

/* Area and model back to the gap byte, the area handed to the device. */
static void kt_map_clear(struct kt_side *s)
{
	memset(kt_map_area(s), KT_MAP_GAP, KT_MAP_AREA);
	memset(kt_map.model, KT_MAP_GAP, KT_MAP_AREA);
	ib_dma_sync_single_for_device(s->dev, s->region_dma, KT_REGION_SIZE,
				      DMA_BIDIRECTIONAL);
}

/* The model after pattern(seed) went to bytes [pos, pos + len) of the set. */
static void kt_map_model_put(u32 pos, u32 len, u32 seed)
{
	u32 i, start = 0, done = 0;

	kt_pattern(kt_map.pattern, len, seed);
	for (i = 0; i < KT_MAP_NBUFS && done < len; i++) {
		u32 b = kt_map_buf(i);
		u32 blen = kt_map_bufs[b].len;
		u32 from, n;

		if (pos + done < start + blen) {
			from = pos + done - start;
			n = min(blen - from, len - done);
			memcpy(kt_map.model + kt_map_bufs[b].off + from,
			       kt_map.pattern + done, n);
			done += n;
		}
		start += blen;
	}
}

/* Is byte 'off' of the area in a buffer? */
static bool kt_map_in_set(u32 off)
{
	u32 i;

	for (i = 0; i < KT_MAP_NBUFS; i++)
		if (off >= kt_map_bufs[i].off &&
		    off < kt_map_bufs[i].off + kt_map_bufs[i].len)
			return true;
	return false;
}

/*
 * Does the area hold what the model says, every byte (or only the gaps'
 * bytes: gaps_only)?
 */
static int kt_map_check(struct kt_side *s, const char *test, const char *what,
			bool gaps_only)
{
	const u8 *area = kt_map_area(s);
	u32 off;

	ib_dma_sync_single_for_cpu(s->dev, s->region_dma, KT_REGION_SIZE,
				   DMA_BIDIRECTIONAL);
	for (off = 0; off < KT_MAP_AREA; off++) {
		bool in_set = kt_map_in_set(off);

		if (gaps_only && in_set)
			continue;
		if (area[off] != kt_map.model[off]) {
			kt_err("%s: %s: area byte %u (%s) is 0x%02x, expected 0x%02x\n",
			       test, what, off, in_set ? "in a buffer" : "in a gap",
			       area[off], kt_map.model[off]);
			return -EIO;
		}
	}
	return 0;
}

/*
 * Map the buffers (in kt_map.reversed order; forward, the first element
 * starts KT_MAP_SG_OFFSET bytes early and an sg_offset skips them) with
 * 'mr', whose table holds 'want' of them: as many elements mapped, the
 * MR's iova at the first buffer, its length theirs (in *len).
 */
static int kt_map_sg(struct kt_side *s, struct ib_mr *mr, u32 want,
		     const char *test, u32 *len)
{
	struct scatterlist sg[KT_MAP_NBUFS];
	unsigned int sg_offset = kt_map.reversed ? 0 : KT_MAP_SG_OFFSET;
	u64 first = 0;
	u32 i;
	int n;

	sg_init_table(sg, KT_MAP_NBUFS);
	*len = 0;
	for (i = 0; i < KT_MAP_NBUFS; i++) {
		u32 b = kt_map_buf(i);
		u64 addr = s->region_dma + KT_MAP_OFFSET + kt_map_bufs[b].off;

		if (!i) {
			first = addr;
			addr -= sg_offset;
		}
		sg_dma_address(&sg[i]) = addr;
		sg_dma_len(&sg[i]) = kt_map_bufs[b].len + (i ? 0 : sg_offset);
		if (i < want)
			*len += kt_map_bufs[b].len;
	}
	n = ib_map_mr_sg(mr, sg, KT_MAP_NBUFS, &sg_offset, PAGE_SIZE);
	if (n != want || mr->iova != first || mr->length != *len || sg_offset) {
		kt_err("%s: ib_map_mr_sg: %d of %u elements, iova 0x%llx length %llu (expected %u, 0x%llx, %u), sg_offset %u\n",
		       test, n, KT_MAP_NBUFS, mr->iova, mr->length, want, first,
		       *len, sg_offset);
		return n < 0 ? n : -EIO;
	}
	return 0;
}

/* Map all the buffers with the SG_GAPS MR, register it with its next key. */
static int kt_map_register(struct kt_side *s, const char *test)
{
	struct ib_mr *mr = s->map_mr;
	int ret = kt_map_sg(s, mr, KT_MAP_NBUFS, test, &kt_map.len);

	if (ret)
		return ret;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	return kt_reg_mr(s, mr, KT_MAP_ACCESS);
}

/*
 * The limits: an SG_GAPS MR of one segment more than the device maps is
 * refused; one of three maps the first three elements of five.
 */
static int kt_map_limits(struct kt_side *s)
{
	u32 max = s->dev->attrs.max_fast_reg_page_list_len, len;
	struct ib_mr *mr;
	int ret;

	mr = ib_alloc_mr(s->pd, IB_MR_TYPE_SG_GAPS, max + 1);
	if (!IS_ERR(mr) || PTR_ERR(mr) != -EINVAL) {
		kt_err("map_read: ib_alloc_mr(SG_GAPS, %u): %ld, expected -EINVAL\n",
		       max + 1, IS_ERR(mr) ? PTR_ERR(mr) : 0);
		if (!IS_ERR(mr))
			ib_dereg_mr(mr);
		return -EIO;
	}
	mr = ib_alloc_mr(s->pd, IB_MR_TYPE_SG_GAPS, 3);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	ret = kt_map_sg(s, mr, 3, "map_read", &len);
	ib_dereg_mr(mr);
	return ret;
}

/* The server WRITEs pattern(seed) to bytes [pos, pos + len) of the set. */
static int kt_map_server_write(struct kt_side *s, u32 pos, u32 len, u32 seed)
{
	struct kt_msg req = {
		.op = cpu_to_le32(KT_OP_MAP_WRITE),
		.addr = cpu_to_le64(KT_MAP_SRC),
		.len = cpu_to_le32(len),
		.seed = cpu_to_le32(seed),
		.value = cpu_to_le64(s->map_mr->iova + pos),
		.rkey = cpu_to_le32(s->map_mr->rkey),
	}, reply;

	return kt_request(s, &req, &reply);
}

/*
 * An RDMA operation that must fail, with 'want', on a fresh loopback
 * pair of the client's QPs (the failure moves them to the error state):
 * qp[0] WRITEs [laddr, +len) of the DMA MR to (raddr, rkey), or READs
 * (raddr, rkey) into (laddr, lkey).
 */
static int kt_map_must_fail(struct kt_side *s, const char *test,
			    const char *what, enum ib_wr_opcode op, u64 laddr,
			    u32 lkey, u64 raddr, u32 rkey, u32 len,
			    enum ib_wc_status want)
{
	struct ib_qp *qp[2] = {};
	struct ib_wc wc = {};
	int i, ret;

	ret = kt_rc_pair(s, qp, IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ);
	if (ret) {
		kt_err("%s: loopback QP pair: %d\n", test, ret);
		goto out;
	}
	ret = kt_rdma_on(s, qp[0], op, laddr, lkey, raddr, rkey, len, &wc);
	if (ret != -EIO || wc.status != want || wc.wr_id != 0x3a9) {
		kt_err("%s: %s: %s (%d), expected %s\n", test, what,
		       ret ? ib_wc_status_msg(wc.status) : "succeeded", ret,
		       ib_wc_status_msg(want));
		ret = -EIO;
		goto out;
	}
	kt_info("%s: %s: %s, as expected\n", test, what,
		ib_wc_status_msg(wc.status));
	ret = 0;
out:
	for (i = 0; i < 2; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	return ret;
}

/* Whether map_read made the MR (0: skipped, 1: ready, < 0: failed). */
static int kt_map_ready(struct kt_side *s, const char *test)
{
	if (!kt_map.state)
		kt_info("%s: no SG_GAPS MR (map_read skipped), skipped\n", test);
	else if (kt_map.state < 0 || !s->map_mr)
		kt_err("%s: no SG_GAPS MR: map_read failed\n", test);
	return kt_map.state > 0 && s->map_mr ? 1 : kt_map.state ? -EIO : 0;
}

static int kt_test_map_read(struct kt_side *s, u32 *ops)
{
	struct kt_msg req = {}, reply;
	struct ib_wc wc;
	u32 it, k, seed, pos, len;
	int ret;

	if (!kt_has_sg_gaps(s)) {
		kt_info("map_read: %s has no SG_GAPS registration (IBK_SG_GAPS_REG), skipped\n",
			dev_name(&s->dev->dev));
		return 0;
	}
	kt_map.state = -1;
	kt_map.model = kmalloc(KT_MAP_AREA, GFP_KERNEL);
	kt_map.pattern = kmalloc(KT_MAP_AREA, GFP_KERNEL);
	if (!kt_map.model || !kt_map.pattern)
		return -ENOMEM;
	s->map_mr = ib_alloc_mr(s->pd, IB_MR_TYPE_SG_GAPS, KT_MAP_MAX_SG);
	if (IS_ERR(s->map_mr)) {
		ret = PTR_ERR(s->map_mr);
		s->map_mr = NULL;
		kt_err("map_read: ib_alloc_mr(SG_GAPS, %u): %d\n", KT_MAP_MAX_SG,
		       ret);
		return ret;
	}
	kt_map.reversed = false;
	ret = kt_map_limits(s);
	if (ret)
		return ret;
	kt_map_clear(s);
	ret = kt_map_register(s, "map_read");
	if (ret)
		return ret;
	*ops += 3;
	for (it = 0; it < iters; it++) {
		/* the whole set, then a part crossing buffers 0 and 1 */
		for (k = 0; k < 2; k++) {
			pos = k ? 990 + it : 0;
			len = k ? 300 : kt_map.len;
			seed = 6000 + it * 10 + k;
			req.op = cpu_to_le32(KT_OP_FILL);
			req.addr = cpu_to_le64(KT_MAP_ROFF);
			req.len = cpu_to_le32(len);
			req.seed = cpu_to_le32(seed);
			ret = kt_request(s, &req, &reply);
			if (ret)
				return ret;
			ret = kt_rdma_on(s, s->qp, IB_WR_RDMA_READ,
					 s->map_mr->iova + pos, s->map_mr->lkey,
					 le64_to_cpu(s->peer_info.addr) +
					 KT_MAP_ROFF,
					 le32_to_cpu(s->peer_info.rkey), len, &wc);
			if (ret)
				return ret;
			kt_map_model_put(pos, len, seed);
			ret = kt_map_check(s, "map_read", k ? "a READ of part of the set" :
					   "a READ of the set", false);
			if (ret)
				return ret;
			(*ops)++;
		}
	}
	kt_map.state = 1;
	return 0;
}

static int kt_test_map_write(struct kt_side *s, u32 *ops)
{
	/* the set; across buffers 0-1; buffer 2 (17 bytes) into 3 */
	const u32 parts[][2] = {
		{ 0, kt_map.len }, { 900, 2300 }, { 1001 + 2221 + 10, 20 },
	};
	u32 it, k;
	int ret = kt_map_ready(s, "map_write");

	if (ret <= 0)
		return ret;
	kt_map_clear(s);
	for (it = 0; it < iters; it++) {
		for (k = 0; k < ARRAY_SIZE(parts); k++) {
			u32 seed = 7000 + it * 10 + k;

			ret = kt_map_server_write(s, parts[k][0], parts[k][1],
						  seed);
			if (ret) {
				kt_err("map_write: the server's WRITE of %u bytes at %u failed\n",
				       parts[k][1], parts[k][0]);
				return ret;
			}
			kt_map_model_put(parts[k][0], parts[k][1], seed);
			ret = kt_map_check(s, "map_write", "the server's WRITE",
					   false);
			if (ret)
				return ret;
			(*ops)++;
		}
	}
	return 0;
}

static int kt_test_map_inv(struct kt_side *s, u32 *ops)
{
	struct ib_send_wr inv = {
		.opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	u64 src = s->region_dma;	/* the loopback WRITEs' source */
	u32 lkey = s->pd->local_dma_lkey, seed = 8000;
	int ret = kt_map_ready(s, "map_inv");

	if (ret <= 0)
		return ret;
	kt_map.state = -1;
	inv.ex.invalidate_rkey = s->map_mr->rkey;
	ret = kt_post_wait(s, s->qp, &inv, IB_WC_LOCAL_INV, NULL);
	if (ret)
		return ret;
	kt_map.old_rkey = s->map_mr->rkey;
	kt_map_clear(s);
	ret = kt_map_must_fail(s, "map_inv", "WRITE through the invalidated rkey",
			       IB_WR_RDMA_WRITE, src, lkey, s->map_mr->iova,
			       kt_map.old_rkey, 64, IB_WC_REM_ACCESS_ERR) ?:
	      kt_map_check(s, "map_inv", "after the refused WRITE", false);
	if (ret)
		return ret;
	*ops += 2;
	/* the next key, the buffers in reverse order */
	kt_map.reversed = true;
	ret = kt_map_register(s, "map_inv");
	if (ret)
		return ret;
	if (s->map_mr->rkey == kt_map.old_rkey) {
		kt_err("map_inv: the new registration has the old rkey 0x%x\n",
		       kt_map.old_rkey);
		return -EIO;
	}
	ret = kt_map_server_write(s, 0, kt_map.len, seed);
	if (ret) {
		kt_err("map_inv: the server's WRITE through the new rkey 0x%x failed\n",
		       s->map_mr->rkey);
		return ret;
	}
	kt_map_model_put(0, kt_map.len, seed);
	ret = kt_map_check(s, "map_inv", "the server's WRITE, buffers reversed",
			   false);
	if (ret)
		return ret;
	*ops += 2;
	ret = kt_map_must_fail(s, "map_inv", "WRITE through the old rkey",
			       IB_WR_RDMA_WRITE, src, lkey, s->map_mr->iova,
			       kt_map.old_rkey, 64, IB_WC_REM_ACCESS_ERR) ?:
	      kt_map_check(s, "map_inv", "after the old rkey's WRITE", false);
	if (ret)
		return ret;
	(*ops)++;
	kt_map.state = 1;
	return 0;
}

static int kt_test_map_bounds(struct kt_side *s, u32 *ops)
{
	struct ib_mr *mr = s->map_mr, *src_mr = NULL;
	u32 lkey = s->pd->local_dma_lkey;
	u64 src = s->region_dma;
	u8 key = 0x90;
	int ret = kt_map_ready(s, "map_bounds");

	if (ret <= 0)
		return ret;
	kt_map.state = -1;
	kt_map_clear(s);
	ret = kt_map_must_fail(s, "map_bounds", "WRITE of the byte after the set",
			       IB_WR_RDMA_WRITE, src, lkey,
			       mr->iova + kt_map.len, mr->rkey, 1,
			       IB_WC_REM_ACCESS_ERR) ?:
	      kt_map_check(s, "map_bounds", "after the WRITE past the set", false) ?:
	      kt_map_must_fail(s, "map_bounds", "WRITE of the set and one byte",
			       IB_WR_RDMA_WRITE, src, lkey, mr->iova, mr->rkey,
			       kt_map.len + 1, IB_WC_REM_ACCESS_ERR) ?:
	      kt_map_check(s, "map_bounds", "after the WRITE one byte too long",
			   false);
	if (ret)
		return ret;
	*ops += 2;
	/* a READ of 64 KiB of the client's region, registered for it */
	src_mr = ib_alloc_mr(s->pd, IB_MR_TYPE_MEM_REG, 16);
	if (IS_ERR(src_mr))
		return PTR_ERR(src_mr);
	ret = kt_fast_reg(s, src_mr, 0, 64 * 1024, IB_ACCESS_LOCAL_WRITE |
			  IB_ACCESS_REMOTE_READ, &key) ?:
	      kt_map_must_fail(s, "map_bounds", "READ into the set and one byte",
			       IB_WR_RDMA_READ, mr->iova, mr->lkey, src_mr->iova,
			       src_mr->rkey, kt_map.len + 1,
			       IB_WC_LOC_PROT_ERR) ?:
	      kt_map_check(s, "map_bounds", "after the READ one byte too long",
			   true);
	ib_dereg_mr(src_mr);
	if (ret)
		return ret;
	(*ops)++;
	ret = ib_dereg_mr(s->map_mr);
	s->map_mr = NULL;
	if (ret) {
		kt_err("map_bounds: ib_dereg_mr of the SG_GAPS MR: %d\n", ret);
		return ret;
	}
	kt_map.state = 1;
	return 0;
}

/* A REG_MR (page list outside RAM) asking for FLUSH persistence. */
static void kt_bad_cmd_persistent(struct rnic_admin_cmd *c)
{
	c->mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE |
				   RNIC_ACCESS_FLUSH_PERSISTENT);
}

/* Malformed admin commands and doorbells: refused, device still works. */
static int kt_test_bad_cmd(struct kt_side *s, u32 *ops)
{
	static const struct {
		const char *what;
		u8 opcode;
		u8 expect;
		void (*fill)(struct rnic_admin_cmd *c);
		bool placement;		/* needs a device of ABI 1.2's FLUSH */
	} cases[] = {
		{ "unknown opcode", 0xee, RNIC_ST_BAD_OPCODE, NULL },
		{ "CQ ring at address 0x10", RNIC_CMD_CREATE_CQ, RNIC_ST_BAD_PARAM,
		  NULL },
		{ "QUERY_QP of no QP", RNIC_CMD_QUERY_QP, RNIC_ST_BAD_HANDLE, NULL },
		{ "REG_MR page list outside RAM", RNIC_CMD_REG_MR,
		  RNIC_ST_DMA_ERROR, NULL },
		/* valid, but guest RAM does not persist: -EOPNOTSUPP */
		{ "REG_MR with FLUSH persistence of guest RAM", RNIC_CMD_REG_MR,
		  RNIC_ST_NOT_SUPPORTED, kt_bad_cmd_persistent, true },
		{ "DEREG_MR of a foreign STag", RNIC_CMD_DEREG_MR,
		  RNIC_ST_BAD_HANDLE, NULL },
		{ "user context in a kernel-only command", RNIC_CMD_CREATE_NET_CTX,
		  RNIC_ST_PERMISSION, NULL },
	};
	u32 i;
	int ret;

	if (strncmp(dev_name(&s->dev->dev), "rnic", 4)) {
		kt_info("bad_cmd: not an rnic device, skipped\n");
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rnic_admin_cmd c = { .opcode = cases[i].opcode };
		u8 status = 0xff;

		if (cases[i].placement && !kt_placement(s))
			continue;

		switch (cases[i].opcode) {
		case RNIC_CMD_CREATE_CQ:
			c.cq.ring_addr = cpu_to_le64(0x10);
			c.cq.log_size = 4;
			c.cq.eq = cpu_to_le32(RNIC_HANDLE_NONE);
			break;
		case RNIC_CMD_QUERY_QP:
			c.query.addr = cpu_to_le64(0);
			c.query.handle = cpu_to_le32(0xfffff0);
			break;
		case RNIC_CMD_REG_MR:
			c.mr.iova = cpu_to_le64(0x10000);
			c.mr.length = cpu_to_le64(8192);
			c.mr.pbl_addr = cpu_to_le64(1ull << 45);
			c.mr.npages = cpu_to_le32(2);
			c.mr.page_shift = 12;
			c.mr.levels = 1;
			c.mr.access = cpu_to_le32(RNIC_ACCESS_LOCAL_WRITE);
			/* a real PD of ours, so only the page list is wrong */
			c.mr.pd = cpu_to_le32(rnic_test_pd_handle(s->pd));
			break;
		case RNIC_CMD_DEREG_MR:
			c.destroy.handle = cpu_to_le32(0xffff00);
			c.destroy.net_ctx = cpu_to_le32(0);
			break;
		case RNIC_CMD_CREATE_NET_CTX:
			c.uctx = cpu_to_le32(1);
			c.net_ctx.net_id = cpu_to_le32(99);
			break;
		}
		if (cases[i].fill)
			cases[i].fill(&c);
		ret = rnic_test_raw_cmd(s->dev, &c, &status);
		if (status != cases[i].expect ||
		    (status == RNIC_ST_NOT_SUPPORTED && ret != -EOPNOTSUPP)) {
			kt_err("bad_cmd: %s: status %u (%d), expected %u\n",
			       cases[i].what, status, ret, cases[i].expect);
			return -EIO;
		}
		(*ops)++;
	}
	/* doorbells: undefined offset, EQ doorbell of a user page is refused
	 * by the device (counted, logged), SQ doorbell of no QP is dropped */
	rnic_test_raw_doorbell(s->dev, 0x28, 0);
	rnic_test_raw_doorbell(s->dev, RNIC_DB_SQ, rnic_db_value(0xfffff0, 0, 1));
	rnic_test_raw_doorbell(s->dev, RNIC_DB_CQ, rnic_db_value(0xfffff0, 0x80u << 24, 1));
	*ops += 3;
	/* still alive: a NOP round trip */
	{
		struct rnic_admin_cmd c = { .opcode = RNIC_CMD_NOP };
		u8 status = 0xff;

		ret = rnic_test_raw_cmd(s->dev, &c, &status);
		if (ret || status != RNIC_ST_OK) {
			kt_err("bad_cmd: NOP after the bad ones: %d/%u\n", ret,
			       status);
			return -EIO;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* UD and CQ resize (local to the client's device)                        */
/* ---------------------------------------------------------------------- */

#define KT_UD_MSGS	4
#define KT_UD_LEN	512
#define KT_UD_QKEY	0x11111111
#define KT_GRH_LEN	40

static struct ib_qp *kt_ud_qp(struct kt_side *s, struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {};
	struct ib_qp *qp;
	int ret;

	qp = ib_create_qp(s->pd, &init);
	if (IS_ERR(qp))
		return qp;
	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qkey = KT_UD_QKEY;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (!ret) {
		attr.qp_state = IB_QPS_RTR;
		ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	}
	if (!ret) {
		attr.qp_state = IB_QPS_RTS;
		attr.sq_psn = 0;
		ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
	}
	if (ret) {
		ib_destroy_qp(qp);
		return ERR_PTR(ret);
	}
	return qp;
}

static int kt_test_ud_cq_resize(struct kt_side *s, u32 *ops)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 2 * KT_UD_MSGS };
	struct ib_qp *qa = NULL, *qb = NULL;
	struct rdma_ah_attr ah_attr;
	struct ib_ah *ah = NULL;
	struct ib_cq *cq;
	u8 *buf;
	u64 dma;
	u32 i, sends = 0, recvs = 0;
	int ret;

	/* the GID the RC connection uses: send to ourselves */
	ret = kt_self_ah(s, &ah_attr);
	if (ret)
		return ret;
	buf = kzalloc(2 * KT_UD_MSGS * (KT_GRH_LEN + KT_UD_LEN), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	dma = ib_dma_map_single(s->dev, buf, 2 * KT_UD_MSGS *
				(KT_GRH_LEN + KT_UD_LEN), DMA_BIDIRECTIONAL);
	cq = ib_create_cq(s->dev, NULL, NULL, s, &cq_attr);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto out_buf;
	}
	qa = kt_ud_qp(s, cq);
	qb = IS_ERR(qa) ? NULL : kt_ud_qp(s, cq);
	if (IS_ERR(qa) || IS_ERR(qb)) {
		ret = IS_ERR(qa) ? PTR_ERR(qa) : PTR_ERR(qb);
		qa = IS_ERR(qa) ? NULL : qa;
		qb = NULL;
		goto out;
	}
	ah = rdma_create_ah(s->pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		ret = PTR_ERR(ah);
		ah = NULL;
		goto out;
	}

	for (i = 0; i < KT_UD_MSGS; i++) {
		u8 *rbuf = buf + (KT_UD_MSGS + i) * (KT_GRH_LEN + KT_UD_LEN);
		struct ib_sge rsge = {
			.addr = dma + (rbuf - buf),
			.length = KT_GRH_LEN + KT_UD_LEN,
			.lkey = s->pd->local_dma_lkey,
		};
		struct ib_recv_wr rwr = { .wr_id = 100 + i, .sg_list = &rsge,
					  .num_sge = 1 };

		ret = ib_post_recv(qb, &rwr, NULL);
		if (ret)
			goto out;
	}
	for (i = 0; i < KT_UD_MSGS; i++) {
		u8 *sbuf = buf + i * (KT_GRH_LEN + KT_UD_LEN);
		struct ib_sge ssge = {
			.addr = dma + (sbuf - buf),
			.length = KT_UD_LEN,
			.lkey = s->pd->local_dma_lkey,
		};
		struct ib_ud_wr uwr = {
			.wr = { .wr_id = i, .opcode = IB_WR_SEND,
				.send_flags = IB_SEND_SIGNALED,
				.sg_list = &ssge, .num_sge = 1 },
			.ah = ah,
			.remote_qpn = qb->qp_num,
			.remote_qkey = KT_UD_QKEY,
		};

		kt_pattern(sbuf, KT_UD_LEN, 5000 + i);
		ib_dma_sync_single_for_device(s->dev, dma, 2 * KT_UD_MSGS *
					      (KT_GRH_LEN + KT_UD_LEN),
					      DMA_BIDIRECTIONAL);
		ret = ib_post_send(qa, &uwr.wr, NULL);
		if (ret)
			goto out;
	}
	/* let the completions pile up, then resize the CQ under them */
	msleep(200);
	ret = ib_resize_cq(cq, 64);
	if (ret) {
		kt_err("ud_cq_resize: ib_resize_cq failed (%d)\n", ret);
		goto out;
	}
	if (cq->cqe < 64) {
		kt_err("ud_cq_resize: CQ has %d entries after resize\n", cq->cqe);
		ret = -EIO;
		goto out;
	}
	while (sends + recvs < 2 * KT_UD_MSGS) {
		unsigned long deadline = jiffies + timeout_s * HZ;
		struct ib_wc wc;
		int n;

		while (!(n = ib_poll_cq(cq, 1, &wc))) {
			if (READ_ONCE(s->removed)) {
				ret = -ENODEV;
				goto out;
			}
			if (time_after(jiffies, deadline)) {
				kt_err("ud_cq_resize: %u sends, %u receives completed\n",
				       sends, recvs);
				ret = -ETIMEDOUT;
				goto out;
			}
			usleep_range(1000, 2000);
		}
		if (wc.status != IB_WC_SUCCESS) {
			kt_err("ud_cq_resize: wr_id %llu: %s\n", wc.wr_id,
			       ib_wc_status_msg(wc.status));
			ret = -EIO;
			goto out;
		}
		if (wc.opcode == IB_WC_SEND) {
			sends++;
			continue;
		}
		i = wc.wr_id - 100;
		ib_dma_sync_single_for_cpu(s->dev, dma, 2 * KT_UD_MSGS *
					   (KT_GRH_LEN + KT_UD_LEN),
					   DMA_BIDIRECTIONAL);
		if (i >= KT_UD_MSGS || wc.byte_len != KT_GRH_LEN + KT_UD_LEN ||
		    wc.src_qp != qa->qp_num || !(wc.wc_flags & IB_WC_GRH) ||
		    !kt_check_pattern(buf + (KT_UD_MSGS + i) *
				      (KT_GRH_LEN + KT_UD_LEN) + KT_GRH_LEN,
				      KT_UD_LEN, 5000 + i)) {
			kt_err("ud_cq_resize: receive %u: len %u src_qp %u (%u) flags 0x%x\n",
			       i, wc.byte_len, wc.src_qp, qa->qp_num, wc.wc_flags);
			ret = -EIO;
			goto out;
		}
		recvs++;
	}
	*ops += sends + recvs + 1;
	ret = 0;
out:
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (qb)
		ib_destroy_qp(qb);
	if (qa)
		ib_destroy_qp(qa);
	ib_destroy_cq(cq);
out_buf:
	ib_dma_unmap_single(s->dev, dma, 2 * KT_UD_MSGS * (KT_GRH_LEN + KT_UD_LEN),
			    DMA_BIDIRECTIONAL);
	kfree(buf);
	return ret;
}

struct kt_test {
	const char *name;
	int (*run)(struct kt_side *s, u32 *ops);
};

static const struct kt_test kt_tests[] = {
	{ "send_recv", kt_test_send_recv },
	{ "send_imm", kt_test_send_imm },
	{ "write", kt_test_write },
	{ "write_imm", kt_test_write_imm },
	{ "read", kt_test_read },
	{ "atomic", kt_test_atomic },
	{ "placement", kt_test_placement },
	{ "fastreg_inv", kt_test_fastreg_inv },
	{ "bad_cmd", kt_test_bad_cmd },
	{ "ud_cq_resize", kt_test_ud_cq_resize },
	{ "map_read", kt_test_map_read },
	{ "map_write", kt_test_map_write },
	{ "map_inv", kt_test_map_inv },
	{ "map_bounds", kt_test_map_bounds },
};

static int kt_client(const char *dst, bool *connected)
{
	struct kt_side *s;
	struct sockaddr_storage ss;
	struct rdma_conn_param param = {};
	struct kt_msg done = { .op = cpu_to_le32(KT_OP_DONE) }, reply;
	ktime_t start;
	u32 i;
	int ret;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	s->name = "client";
	init_completion(&s->cm_done);
	init_waitqueue_head(&s->cq_wait);
	ret = kt_parse_addr(&ss, dst);
	if (ret) {
		kt_err("client: bad peer address '%s'\n", dst);
		goto out_free;
	}
	kt_set_port(&ss, port);
	s->id = rdma_create_id(&init_net, kt_cm_handler, s, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(s->id)) {
		ret = PTR_ERR(s->id);
		goto out_free;
	}
	start = ktime_get();
	ret = rdma_resolve_addr(s->id, NULL, (struct sockaddr *)&ss,
				timeout_s * 1000);
	if (!ret)
		ret = kt_cm_wait(s, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ret) {
		reinit_completion(&s->cm_done);
		ret = rdma_resolve_route(s->id, timeout_s * 1000);
	}
	if (!ret)
		ret = kt_cm_wait(s, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (ret) {
		kt_err("client: cannot resolve %pISc (%d)\n", &ss, ret);
		goto out_id;
	}
	reinit_completion(&s->cm_done);
	ret = kt_setup(s, false);
	if (ret)
		goto out_id;
	param.responder_resources = min_t(int, 4, s->dev->attrs.max_qp_rd_atom);
	param.initiator_depth = param.responder_resources;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	ret = rdma_connect(s->id, &param);
	if (!ret)
		ret = kt_cm_wait(s, RDMA_CM_EVENT_ESTABLISHED);
	if (ret) {
		kt_err("client: connect to %pISc failed (%d)\n", &ss, ret);
		goto out_free_res;
	}
	{
		struct kt_msg *hello;
		struct ib_wc wc;
		int i = kt_recv(s, &wc);

		if (i < 0) {
			ret = i;
			goto out_disconnect;
		}
		hello = (struct kt_msg *)s->recv_buf[i];
		if (le32_to_cpu(hello->op) != KT_OP_HELLO) {
			kt_err("client: first message op %u, not HELLO\n",
			       le32_to_cpu(hello->op));
			ret = -EIO;
			goto out_disconnect;
		}
		s->peer_info.addr = hello->addr;
		s->peer_info.rkey = hello->rkey;
		s->peer_info.len = hello->len;
		s->peer_info.access = le64_to_cpu(hello->value);
		kt_post_recv(s, i);
	}
	*connected = true;
	kt_report(s, "connect", 0, 1, start);
	kt_info("client: connected to %pISc via %s (QP %u), server region rkey 0x%x\n",
		&ss, dev_name(&s->dev->dev), s->qp->qp_num,
		le32_to_cpu(s->peer_info.rkey));

	for (i = 0; i < ARRAY_SIZE(kt_tests); i++) {
		u32 ops = 0;

		start = ktime_get();
		ret = kt_tests[i].run(s, &ops);
		kt_report(s, kt_tests[i].name, ret, ops, start);
		if (ret == -ETIMEDOUT || READ_ONCE(s->removed))
			break;
	}
	if (READ_ONCE(s->removed)) {
		/* no DONE for the server: it is stopping too */
		ret = -ENODEV;
		goto out_disconnect;
	}
	if (destructive && i == ARRAY_SIZE(kt_tests) && kt_fr_rkey) {
		struct kt_msg last = { .op = cpu_to_le32(KT_OP_LAST) };
		u32 ops = 0;

		ret = kt_request(s, &last, &reply);
		if (ret)
			kt_err("client: server did not take LAST (%d)\n", ret);
		start = ktime_get();
		ret = kt_test_inv_enforced(s, &ops);
		kt_report(s, "inv_enforced", ret, ops, start);
	} else {
		kt_request(s, &done, &reply);
	}
	ret = s->failures ? -EIO : 0;
out_disconnect:
	rdma_disconnect(s->id);
out_free_res:
	kt_free(s);
	kfree(kt_map.model);
	kfree(kt_map.pattern);
	kt_map.model = NULL;
	kt_map.pattern = NULL;
out_id:
	rdma_destroy_id(s->id);
out_free:
	kfree(s);
	return ret;
}

static int __init rnic_ktest_init(void)
{
	struct kt_server *srv;
	bool connected = false;
	int ret, sret;

	if (!strcmp(role, "client"))
		return kt_client(peer, &connected);
	if (strcmp(role, "server") && strcmp(role, "loopback")) {
		kt_err("role must be loopback, server or client\n");
		return -EINVAL;
	}
	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return -ENOMEM;
	ret = kt_server_start(srv, strcmp(role, "server") ? NULL : peer);
	if (ret) {
		kfree(srv);
		return ret;
	}
	ret = 0;
	if (!strcmp(role, "loopback")) {
		ret = kt_client(peer, &connected);
		/* a client that never connected: no session to wait for */
		if (!connected) {
			WRITE_ONCE(srv->s.aborted, true);
			complete(&srv->s.cm_done);
		}
	}
	sret = kt_server_finish(srv);
	kfree(srv);
	if (sret)
		kt_err("server: session failed (%d)\n", sret);
	if (ret == -ENODEV || sret == -ENODEV) {
		kt_err("%s: FAILED: the device was removed\n", role);
		return -ENODEV;
	}
	ret = ret ?: sret;
	kt_info("%s: %s\n", role, ret ? "FAILED" : "all tests passed");
	return ret ? -EIO : 0;
}

static void __exit rnic_ktest_exit(void)
{
}

module_init(rnic_ktest_init);
module_exit(rnic_ktest_exit);
