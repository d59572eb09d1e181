// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_placement: RDMA FLUSH and ATOMIC WRITE (IBTA 1.5 Memory Placement
 * Extensions) between two hosts over one RC connection, any two devices
 * (rnic against Soft-RoCE in tests/guest/test_provider.py), every byte
 * checked by the side that owns the memory.
 *
 *   server:  rnic_placement -s [options]
 *   client:  rnic_placement -c HOST [options]
 *
 * The server registers a region of -S bytes with IBV_ACCESS_LOCAL_WRITE |
 * REMOTE_WRITE | FLUSH_GLOBAL (its QP allows REMOTE_WRITE | FLUSH_GLOBAL).
 * QPN, PSN, GID, the region's address and rkey are exchanged over TCP
 * (port -p); the TCP connection stays open for the checks. Per iteration
 * the client, with the ibv_wr_*() API on a QP created with
 * IBV_QP_EX_WITH_RDMA_WRITE | WITH_FLUSH | WITH_ATOMIC_WRITE:
 *   1. RDMA WRITE of pattern(seed) to the iteration's slot of the region;
 *   2. FLUSH (global visibility) of that range: IBV_WC_FLUSH;
 *   3. FLUSH (global visibility) of the whole region: IBV_WC_FLUSH;
 *   4. ATOMIC WRITE of 8 bytes to the iteration's word: IBV_WC_ATOMIC_WRITE;
 *   5. FLUSH of that word's range: IBV_WC_FLUSH;
 *   6. asks the server over TCP to check: the slot holds pattern(seed), the
 *      word the 8 bytes, the words before and after it are still zero.
 * Every completion must be a success of the expected opcode; each step
 * prints "ok NAME" or "FAIL NAME: why", the end a line
 *
 *   PLACEMENT-RESULT role=client iters=N errors=0 (role=server checks=N)
 *
 * and the exit status is 0 only if nothing was wrong. Both sides print the
 * device's placement capabilities first (device_cap_flags_ex), so a device
 * that refuses something says which of them it lacks.
 *
 * With -m the server's region is device memory: rnic's memory window
 * (-device rnic,scm=...), ibv_alloc_dm() of -S bytes, zeroed with
 * ibv_memcpy_to_dm() and registered with ibv_reg_dm_mr() (zero-based:
 * the client's addresses start at 0) with IBV_ACCESS_LOCAL_WRITE |
 * REMOTE_WRITE | REMOTE_READ | FLUSH_PERSISTENT | ZERO_BASED. The rkey it
 * hands out must carry the DURABLE storage semantic (rnic.ko's default for
 * FLUSH_PERSISTENT registrations: every WRITE persisted before its ACK, a
 * peer needs to know nothing of it), the client's FLUSHes are of placement
 * type persistence, and the server checks through ibv_memcpy_from_dm().
 * Before the first iteration and after the last the client reads the
 * region's persist counter through its MGMT rkey (RNIC_SCM_STAG(rkey,
 * MGMT): a WRITE of a STATUS request, a READ of struct rnic_scm_status)
 * and requires it to have grown: with -F (no FLUSH) only the DURABLE
 * key's WRITEs and ATOMIC WRITEs can have made the device persist.
 *
 * Options:
 *   -d DEV     device (default: the first)    -g N  GID index (default:
 *   -p PORT    TCP port (default 18516)             the IPv4-mapped one)
 *   -n ITERS   iterations (default 20)        -S BYTES region size (1 MiB)
 *   -F         (client) no FLUSH: steps 1, 4 and 6 only, for a peer whose
 *              FLUSH does not interoperate (Soft-RoCE of Linux 6.12:
 *              tests/guest/test_provider.py, RXE_STEPS)
 *   -m         (server) the region on device memory, see above
 *   -P         (server, with -m; -n up to 8) power-cut check, for a window
 *              with scm-powerfail=on: after the client's iterations and
 *              one WRITE through the region's PLAIN rkey (the client does
 *              it when the server asks), the server stores a canary with
 *              ibv_memcpy_to_dm(), prints POWER-CUT-READY and waits for
 *              the canary to vanish (the host's qom-set power-cut rolled
 *              the window back to its durable image), then requires every
 *              iteration's bytes still there (the DURABLE key persisted
 *              them; run the client with -F so no FLUSH did) and the PLAIN
 *              write gone.
 *   -w TYPE    (server) memory window: the region is registered with
 *              LOCAL_WRITE | MW_BIND only, one page longer than -S, and
 *              the rkey handed out is that of a window of type 1
 *              (ibv_bind_mw) or 2 (an IBV_WR_BIND_MW work request on the
 *              connected QP) over the first -S bytes with REMOTE_WRITE |
 *              REMOTE_READ; the client (which must run with -F: a window
 *              grants no FLUSH) WRITEs and ATOMIC WRITEs through it, and
 *              last WRITEs 8 bytes just past the window, inside the MR,
 *              which must fail with a remote access error ("ok
 *              window-bounds").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rnic/rnic-abi.h>	/* the storage semantic in an SCM key */

#include "two_host.h"

/* device_cap_flags_ex bits rdma-core 56 has no IBV_ names for (uapi) */
#define CAP_FLUSH_GLOBAL	(1ULL << 38)
#define CAP_FLUSH_PERSISTENT	(1ULL << 39)
#define CAP_ATOMIC_WRITE	(1ULL << 40)

#define SLOT		(16 * 1024)	/* WRITE + FLUSH range per iteration */
#define SLOTS		8		/* at [0, WORDS_OFFSET), round robin */
#define WORDS_OFFSET	(SLOT * SLOTS)	/* then 3 words per iteration, the
					 * ATOMIC WRITE's in the middle */
#define TIMEOUT_MS	30000

enum { REQ_CHECK = 1, REQ_DONE };

/* The client's steps per iteration, in order (run_client) */
#define STEPS 5
/* then, with -m, a management request and its status (mgmt_persists) */
#define MGMT_WRITE STEPS
#define MGMT_READ (STEPS + 1)
#define PLAIN_WRITE (STEPS + 2)	/* -P */
static const char *const step_name[STEPS + 3] = {
	"write", "flush-range", "flush-mr", "atomic-write", "flush-word",
	"mgmt-write", "mgmt-read", "plain-write",
};
static const enum ibv_wc_opcode step_opcode[STEPS + 3] = {
	IBV_WC_RDMA_WRITE, IBV_WC_FLUSH, IBV_WC_FLUSH, IBV_WC_ATOMIC_WRITE,
	IBV_WC_FLUSH, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE,
};
/* -P: the PLAIN write and the canary, each in a page of its own (a
 * persist covers whole pages) */
#define PLAIN_OFF	(region_size - 8192)
#define CANARY_OFF	(region_size - 16384)
#define MARK_LEN	64
#define PLAIN_SEED	7777
#define CANARY_SEED	4242

/* conn_info.flags */
#define CONN_PERSISTENT	1	/* the server's region persists (-m) */
#define CONN_POWERCUT	2	/* -P: the client writes through PLAIN too */
#define CONN_WINDOW	4	/* -w: the rkey is a window's, then the MR's
				 * page past it */

struct conn_info {
	uint32_t qpn, psn, rkey, flags;
	uint64_t addr, len;
	uint8_t gid[16];
};

struct check_req {
	uint32_t kind, seed;
	uint64_t slot_off, slot_len, word_off, word;
};

struct check_reply {
	uint32_t ok;
	char why[124];
};

static int iters = 20;
static bool no_flush;
static bool use_dm, power_cut;
static int mw_type;		/* -w */
static struct ibv_mw *mw;
static size_t region_size = 1 << 20;
/* FLUSH placement type: persistence when the server's region persists */
static enum ibv_placement_type flush_type = IBV_FLUSH_GLOBAL;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *channel;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static union ibv_gid gid;
static uint8_t *mem;		/* -m: the server's copy of its DM */
static struct ibv_dm *dm;
static struct ibv_mr *mr;
static int errors;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL setup: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	printf("PLACEMENT-RESULT role=%s fatal=1 errors=%d\n",
	       server ? "server" : "client", errors + 1);
	fflush(stdout);
	exit(1);
}

/* ---------------------------------------------------------------------- */
/* Setup                                                                  */

static void open_device(void)
{
	struct ibv_device_attr_ex attr = {};
	uint64_t f;

	open_verbs(dev_name, &gid_index, &ctx, &gid, &pd, &channel);
	dev_name = ibv_get_device_name(ctx->device);
	if (ibv_query_device_ex(ctx, NULL, &attr))
		die("ibv_query_device_ex: %s", strerror(errno));
	f = attr.device_cap_flags_ex;
	printf("placement: %s device_cap_flags_ex %#" PRIx64 ": flush_global=%d "
	       "flush_persistent=%d atomic_write=%d\n", dev_name, f,
	       !!(f & CAP_FLUSH_GLOBAL), !!(f & CAP_FLUSH_PERSISTENT),
	       !!(f & CAP_ATOMIC_WRITE));
	cq = ibv_create_cq(ctx, 64, NULL, channel, 0);
	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
}

static void create_qp(void)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
	};

	if (!server) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_RDMA_READ |
				    IBV_QP_EX_WITH_FLUSH |
				    IBV_QP_EX_WITH_ATOMIC_WRITE;
	}
	qp = ibv_create_qp_ex(ctx, &ia);
	if (!qp)
		die("ibv_create_qp_ex (%s): %s", server ? "server" :
		    "send ops RDMA_WRITE | FLUSH | ATOMIC_WRITE",
		    strerror(errno));
	if (!server) {
		qpx = ibv_qp_to_qp_ex(qp);
		if (!qpx)
			die("ibv_qp_to_qp_ex: %s", strerror(errno));
	}
}

/* -m: the server's region on the memory window, its rkey DURABLE */
static void register_dm(void)
{
	struct ibv_alloc_dm_attr attr = { .length = region_size };
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_FLUSH_PERSISTENT |
		     IBV_ACCESS_ZERO_BASED;
	unsigned int sem;
	int ret;

	dm = ibv_alloc_dm(ctx, &attr);
	if (!dm)
		die("ibv_alloc_dm(%zu bytes): %s", region_size, strerror(errno));
	ret = ibv_memcpy_to_dm(dm, 0, mem, region_size);
	if (ret)
		die("ibv_memcpy_to_dm(zeroes): %s", strerror(ret));
	mr = ibv_reg_dm_mr(pd, dm, 0, region_size, access);
	if (!mr)
		die("ibv_reg_dm_mr(%zu bytes, LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ|"
		    "FLUSH_PERSISTENT|ZERO_BASED): %s", region_size,
		    strerror(errno));
	sem = (mr->rkey >> RNIC_SCM_KEY_SEM_SHIFT) & 7;
	if (sem != RNIC_SCM_SEM_DURABLE || mr->lkey != mr->rkey)
		die("DM MR lkey %#x rkey %#x: semantic %u in the key, not DURABLE "
		    "(%u)", mr->lkey, mr->rkey, sem, RNIC_SCM_SEM_DURABLE);
	printf("placement: device memory %zu bytes, rkey %#x (DURABLE; PLAIN "
	       "%#x)\nok durable-rkey\n", region_size, mr->rkey,
	       RNIC_SCM_STAG(mr->rkey, RNIC_SCM_SEM_PLAIN));
}

static void register_memory(void)
{
	int access = IBV_ACCESS_LOCAL_WRITE;

	mem = aligned_alloc(4096, region_size + 4096);
	if (!mem)
		die("no memory");
	memset(mem, 0, region_size + 4096);
	if (server && use_dm) {
		register_dm();
		return;
	}
	if (server && mw_type)
		access |= IBV_ACCESS_MW_BIND;	/* remote access: the window's */
	else if (server)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_FLUSH_GLOBAL;
	mr = ibv_reg_mr(pd, mem, region_size + (mw_type ? 4096 : 0), access);
	if (!mr)
		die("ibv_reg_mr(%zu bytes, access %#x%s): %s", region_size,
		    access, server ? " = LOCAL_WRITE|REMOTE_WRITE|FLUSH_GLOBAL" :
		    "", strerror(errno));
}

static void connect_qp(const struct conn_info *mine, const struct conn_info *peer)
{
	struct rc_dest dest = { peer->qpn, peer->psn, peer->gid };

	/* READ: the client's status reads through the MGMT rkey (-m) */
	rc_connect(qp, gid_index, IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_FLUSH_GLOBAL, mine->psn,
		   &dest, 16);
}

static void xfer(int fd, void *buf, size_t len, bool out)
{
	ssize_t n = out ? write(fd, buf, len) : recv(fd, buf, len, MSG_WAITALL);

	if (n != (ssize_t)len)
		die("tcp %s: %s", out ? "write" : "read",
		    n < 0 ? strerror(errno) : "connection closed");
}

/* ---------------------------------------------------------------------- */
/* Client                                                                 */

/* The next completion (the client signals every WR and posts one at once). */
static int wait_wc(struct ibv_wc *wc)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 0;
		if (ibv_req_notify_cq(cq, 0))
			return -1;
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 0;
		if (poll(&pfd, 1, TIMEOUT_MS) <= 0)
			return -1;
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			return -1;
		ibv_ack_cq_events(ev_cq, 1);
	}
}

/* Step k of iteration 'it': what post() builds with off and arg. */
struct step {
	void (*post)(const struct conn_info *peer, uint64_t off, uint64_t arg);
	uint64_t off, arg;
};

/* Post it between wr_start and wr_complete, wait for its completion. */
static void run_wr(int k, const struct step *st, int it,
		   const struct conn_info *peer)
{
	uint64_t wr_id = ((uint64_t)it << 8) | k;
	struct ibv_wc wc;
	int ret;

	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	st->post(peer, st->off, st->arg);
	ret = ibv_wr_complete(qpx);
	if (ret) {
		printf("FAIL %s: iteration %d: ibv_wr_complete: %s\n",
		       step_name[k], it, strerror(ret));
		errors++;
	} else if (wait_wc(&wc)) {
		printf("FAIL %s: iteration %d: no completion in %d s\n",
		       step_name[k], it, TIMEOUT_MS / 1000);
		errors++;
	} else if (wc.status != IBV_WC_SUCCESS || wc.opcode != step_opcode[k] ||
		   wc.wr_id != wr_id) {
		printf("FAIL %s: iteration %d: completion %s, opcode %d (want %d), "
		       "wr_id %#" PRIx64 "\n", step_name[k], it,
		       ibv_wc_status_str(wc.status), wc.opcode, step_opcode[k],
		       wc.wr_id);
		errors++;
	}
}

/*
 * -w: a window of mw_type over [mem, mem + region_size) of the MR, bound
 * on the connected QP; its rkey.
 */
static uint32_t bind_window(void)
{
	struct ibv_mw_bind_info info = {
		.mr = mr, .addr = (uintptr_t)mem, .length = region_size,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_wc wc;
	uint32_t rkey;
	int ret;

	mw = ibv_alloc_mw(pd, mw_type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!mw)
		die("ibv_alloc_mw(type %d): %s", mw_type, strerror(errno));
	if (mw_type == 1) {
		struct ibv_mw_bind bind = {
			.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = info,
		};

		ret = ibv_bind_mw(qp, mw, &bind);
		rkey = mw->rkey;
	} else {
		struct ibv_send_wr wr = {
			.wr_id = 1, .opcode = IBV_WR_BIND_MW,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = info;
		ret = ibv_post_send(qp, &wr, &bad);
	}
	if (ret)
		die("bind of the type %d window: %s", mw_type, strerror(ret));
	if (wait_wc(&wc) || wc.status != IBV_WC_SUCCESS ||
	    wc.opcode != IBV_WC_BIND_MW)
		die("bind of the type %d window: completion %s, opcode %d",
		    mw_type, ibv_wc_status_str(wc.status), wc.opcode);
	printf("placement: type %d window %#x over MR %#x (%zu of its %zu "
	       "bytes)\nok bind-mw\n", mw_type, rkey, mr->rkey, region_size,
	       region_size + 4096);
	return rkey;
}

/* -w: a WRITE just past the window (inside the MR) must be refused. */
static void window_bounds(const struct conn_info *peer)
{
	struct ibv_wc wc;

	ibv_wr_start(qpx);
	qpx->wr_id = 0xb0;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, peer->rkey, peer->addr + peer->len);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem, 8);
	if (ibv_wr_complete(qpx) || wait_wc(&wc)) {
		printf("FAIL window-bounds: no completion\n");
		errors++;
	} else if (wc.status != IBV_WC_REM_ACCESS_ERR) {
		printf("FAIL window-bounds: a WRITE past the window completed "
		       "%s\n", ibv_wc_status_str(wc.status));
		errors++;
	} else {
		printf("ok window-bounds\n");
	}
}

static void post_write(const struct conn_info *peer, uint64_t off, uint64_t len)
{
	ibv_wr_rdma_write(qpx, peer->rkey, peer->addr + off);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem + off, len);
}

static void post_flush_range(const struct conn_info *peer, uint64_t off,
			     uint64_t len)
{
	ibv_wr_flush(qpx, peer->rkey, peer->addr + off, len, flush_type,
		     IBV_FLUSH_RANGE);
}

static void post_flush_mr(const struct conn_info *peer, uint64_t off,
			  uint64_t len)
{
	(void)off;
	(void)len;
	ibv_wr_flush(qpx, peer->rkey, peer->addr, 0, flush_type,
		     IBV_FLUSH_MR);
}

static void post_atomic_write(const struct conn_info *peer, uint64_t off,
			      uint64_t value)
{
	ibv_wr_atomic_write(qpx, peer->rkey, peer->addr + off, &value);
}

/*
 * -m: the MGMT rkey of the server's region; the request and the status in
 * the client's buffer past everything the iterations use.
 */
#define MGMT_REQ_OFF	(region_size - 4096)
#define MGMT_STATUS_OFF	(region_size - 2048)

static void post_mgmt_write(const struct conn_info *peer, uint64_t off,
			    uint64_t len)
{
	ibv_wr_rdma_write(qpx, RNIC_SCM_STAG(peer->rkey, RNIC_SCM_SEM_MGMT),
			  peer->addr);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem + off, len);
}

static void post_mgmt_read(const struct conn_info *peer, uint64_t off,
			   uint64_t len)
{
	ibv_wr_rdma_read(qpx, RNIC_SCM_STAG(peer->rkey, RNIC_SCM_SEM_MGMT),
			 peer->addr);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem + off, len);
}

static void post_plain_write(const struct conn_info *peer, uint64_t off,
			     uint64_t len)
{
	ibv_wr_rdma_write(qpx, RNIC_SCM_STAG(peer->rkey, RNIC_SCM_SEM_PLAIN),
			  peer->addr + off);
	ibv_wr_set_sge(qpx, mr->lkey, (uintptr_t)mem + off, len);
}

/* The device's persist operations so far, read through the MGMT rkey. */
static uint64_t mgmt_persists(const struct conn_info *peer, uint64_t cookie)
{
	struct rnic_scm_mgmt req = { .op = RNIC_SCM_MGMT_STATUS,
				     .cookie = cookie };
	struct rnic_scm_status st;
	const struct step wr = { post_mgmt_write, MGMT_REQ_OFF, sizeof(req) };
	const struct step rd = { post_mgmt_read, MGMT_STATUS_OFF, sizeof(st) };

	memcpy(mem + MGMT_REQ_OFF, &req, sizeof(req));
	run_wr(MGMT_WRITE, &wr, 0, peer);
	if (!errors)
		run_wr(MGMT_READ, &rd, 0, peer);
	if (errors)
		die("management request through the MGMT rkey %#x failed",
		    RNIC_SCM_STAG(peer->rkey, RNIC_SCM_SEM_MGMT));
	memcpy(&st, mem + MGMT_STATUS_OFF, sizeof(st));
	if (st.cookie != cookie || st.op != RNIC_SCM_MGMT_STATUS ||
	    st.status != RNIC_SCM_ST_OK || st.persistent != 1 ||
	    st.region_length != peer->len)
		die("status through the MGMT rkey: cookie %#" PRIx64 " op %u "
		    "status %u persistent %u length %" PRIu64, st.cookie, st.op,
		    st.status, st.persistent, st.region_length);
	printf("placement: window status: %" PRIu64 " persists, %" PRIu64
	       " bytes\n", st.persists, st.persisted_bytes);
	return st.persists;
}

static int run_client(int fd, const struct conn_info *peer)
{
	struct check_req req = { .kind = REQ_CHECK };
	struct check_reply reply;
	int it, k, passed = 0;
	uint64_t persists = 0;

	if (region_size < WORDS_OFFSET + 24 * (uint64_t)iters + 4096)
		die("-S %zu is too small for %d iterations", region_size, iters);
	if (peer->flags & CONN_PERSISTENT) {
		flush_type = IBV_FLUSH_PERSISTENT;
		printf("placement: the server's region persists: FLUSH of type "
		       "persistence\n");
		persists = mgmt_persists(peer, 1);
	}
	if (peer->len < WORDS_OFFSET + 24 * (uint64_t)iters)
		die("server region of %" PRIu64 " bytes is too small for %d "
		    "iterations", peer->len, iters);
	for (it = 0; it < iters && !errors; it++) {
		uint64_t off = (it % SLOTS) * SLOT;
		uint64_t word_off = WORDS_OFFSET + 24 * (uint64_t)it + 8;
		uint64_t word = 0x0123456789abcdefull ^ ((uint64_t)it << 40) ^ it;
		const struct step steps[STEPS] = {	/* as step_name[] */
			{ post_write, off, SLOT },
			{ post_flush_range, off, SLOT },
			{ post_flush_mr, 0, 0 },
			{ post_atomic_write, word_off, word },
			{ post_flush_range, word_off, 8 },
		};

		fill(mem + off, SLOT, 1000 + it);
		for (k = 0; k < STEPS && !errors; k++)
			if (!no_flush || step_opcode[k] != IBV_WC_FLUSH)
				run_wr(k, &steps[k], it, peer);
		if (errors)
			break;
		req.seed = 1000 + it;
		req.slot_off = off;
		req.slot_len = SLOT;
		req.word_off = word_off;
		memcpy(&req.word, &word, 8);	/* the bytes, as written */
		xfer(fd, &req, sizeof(req), true);
		xfer(fd, &reply, sizeof(reply), false);
		if (!reply.ok) {
			reply.why[sizeof(reply.why) - 1] = 0;
			printf("FAIL server-check: iteration %d: %s\n", it,
			       reply.why);
			errors++;
			break;
		}
		passed++;
	}
	for (k = 0; k < STEPS && !errors; k++)
		if (!no_flush || step_opcode[k] != IBV_WC_FLUSH)
			printf("ok %s\n", step_name[k]);
	if (!errors)
		printf("ok server-check\n");
	if (!errors && (peer->flags & CONN_POWERCUT)) {
		const struct step st = { post_plain_write, PLAIN_OFF, MARK_LEN };

		fill(mem + PLAIN_OFF, MARK_LEN, PLAIN_SEED);
		run_wr(PLAIN_WRITE, &st, 0, peer);
		if (!errors)
			printf("ok plain-write\n");
	}
	if (!errors && (peer->flags & CONN_PERSISTENT)) {
		uint64_t now = mgmt_persists(peer, 2);

		if (now > persists) {
			printf("ok durable-persists %" PRIu64 "\n",
			       now - persists);
		} else {
			printf("FAIL durable-persists: %" PRIu64 " before, %"
			       PRIu64 " after\n", persists, now);
			errors++;
		}
	}
	if (!errors && (peer->flags & CONN_WINDOW))
		window_bounds(peer);
	req.kind = REQ_DONE;
	xfer(fd, &req, sizeof(req), true);
	printf("PLACEMENT-RESULT role=client iters=%d errors=%d%s\n", passed,
	       errors, no_flush ? " (no FLUSH)" : "");
	return errors ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* Server                                                                 */

static bool check(const struct check_req *req, char *why, size_t size)
{
	uint8_t *want = malloc(req->slot_len), zero[8] = {};
	size_t i;
	int ret;

	if (!want || req->slot_off + req->slot_len > region_size ||
	    req->word_off < 8 || req->word_off + 16 > region_size) {
		snprintf(why, size, "bad request (slot %" PRIu64 "+%" PRIu64
			 ", word %" PRIu64 ")", req->slot_off, req->slot_len,
			 req->word_off);
		free(want);
		return false;
	}
	ret = dm ? ibv_memcpy_from_dm(mem, dm, 0, region_size) : 0;
	if (ret) {
		snprintf(why, size, "ibv_memcpy_from_dm: %s", strerror(ret));
		free(want);
		return false;
	}
	fill(want, req->slot_len, req->seed);
	for (i = 0; i < req->slot_len && mem[req->slot_off + i] == want[i]; i++)
		;
	free(want);
	if (i < req->slot_len) {
		snprintf(why, size, "WRITE+FLUSH: byte %zu of the slot at %" PRIu64
			 " is %#x, not pattern(%u)", i, req->slot_off,
			 mem[req->slot_off + i], req->seed);
		return false;
	}
	if (memcmp(mem + req->word_off, &req->word, 8)) {
		uint64_t got;

		memcpy(&got, mem + req->word_off, 8);
		snprintf(why, size, "ATOMIC WRITE: word at %" PRIu64 " holds %#"
			 PRIx64 ", not %#" PRIx64, req->word_off, got, req->word);
		return false;
	}
	if (memcmp(mem + req->word_off - 8, zero, 8) ||
	    memcmp(mem + req->word_off + 8, zero, 8)) {
		snprintf(why, size, "ATOMIC WRITE at %" PRIu64 " changed a "
			 "neighbouring word", req->word_off);
		return false;
	}
	return true;
}

/* -P: is the MARK_LEN pattern(seed) at off (after reading the DM)? */
static bool marked(uint64_t off, uint32_t seed)
{
	uint8_t want[MARK_LEN];

	fill(want, MARK_LEN, seed);
	return !ibv_memcpy_from_dm(mem + off, dm, off, MARK_LEN) &&
	       !memcmp(mem + off, want, MARK_LEN);
}

/* -P: the window rolled back to its durable image; what must be in it */
static void power_cut_check(const struct check_req *reqs, int n)
{
	char why[128];
	int i, waited;

	if (!marked(PLAIN_OFF, PLAIN_SEED)) {
		printf("FAIL power-cut: the PLAIN write is not there before the cut\n");
		errors++;
		return;
	}
	fill(mem + CANARY_OFF, MARK_LEN, CANARY_SEED);
	if (ibv_memcpy_to_dm(dm, CANARY_OFF, mem + CANARY_OFF, MARK_LEN) ||
	    !marked(CANARY_OFF, CANARY_SEED)) {
		printf("FAIL power-cut: cannot store the canary\n");
		errors++;
		return;
	}
	printf("POWER-CUT-READY\n");
	fflush(stdout);
	for (waited = 0; marked(CANARY_OFF, CANARY_SEED); waited++) {
		if (waited == 1200) {
			printf("FAIL power-cut: the canary is still there after 120 s\n");
			errors++;
			return;
		}
		usleep(100 * 1000);
	}
	printf("placement: the canary vanished: the window rolled back\n");
	for (i = 0; i < n; i++)
		if (!check(&reqs[i], why, sizeof(why))) {
			printf("FAIL power-cut-durable: iteration %d: %s\n", i, why);
			errors++;
			return;
		}
	printf("ok power-cut-durable %d\n", n);
	if (marked(PLAIN_OFF, PLAIN_SEED)) {
		printf("FAIL power-cut-plain: the PLAIN write survived the cut\n");
		errors++;
		return;
	}
	printf("ok power-cut-plain-lost\n");
}

static int run_server(int fd)
{
	struct check_req req, reqs[SLOTS];
	int checks = 0;

	for (;;) {
		struct check_reply reply = { .ok = 1 };

		xfer(fd, &req, sizeof(req), false);
		if (req.kind == REQ_DONE)
			break;
		if (!check(&req, reply.why, sizeof(reply.why))) {
			reply.ok = 0;
			printf("FAIL check: %s\n", reply.why);
			errors++;
		}
		if (checks < SLOTS)
			reqs[checks] = req;
		checks++;
		xfer(fd, &reply, sizeof(reply), true);
	}
	if (!errors && checks)
		printf("ok server-check\n");
	if (!errors && power_cut)
		power_cut_check(reqs, checks < SLOTS ? checks : SLOTS);
	printf("PLACEMENT-RESULT role=server checks=%d errors=%d\n", checks,
	       errors);
	return errors || !checks ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct conn_info mine = {}, peer = {};
	int opt, fd;

	port = 18516;
	while ((opt = getopt(argc, argv, "sc:d:g:p:n:S:FmPw:")) != -1) {
		if (two_host_option(opt, optarg))
			continue;
		switch (opt) {
		case 'n': iters = atoi(optarg); break;
		case 'F': no_flush = true; break;
		case 'm': use_dm = true; break;
		case 'P': power_cut = true; break;
		case 'w': mw_type = atoi(optarg); break;
		case 'S': region_size = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s -s | -c HOST [-d DEV] [-g N] "
				"[-p PORT] [-n ITERS] [-S BYTES] [-F] [-m [-P]] "
				"[-w 1|2]\n",
				argv[0]);
			return 2;
		}
	}
	if (server == !!host || iters < 1 || region_size < WORDS_OFFSET + 4096 ||
	    (power_cut && (!use_dm || iters > SLOTS)) ||
	    (mw_type && (mw_type > 2 || use_dm || !server)) || mw_type < 0 ||
	    region_size > (1u << 30)) {
		fprintf(stderr, "usage: %s -s | -c HOST [-n 1..] [-S %d..1G]\n",
			argv[0], WORDS_OFFSET + 4096);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	open_device();
	create_qp();
	register_memory();
	srand48(time(NULL) ^ getpid());
	mine.qpn = qp->qp_num;
	mine.psn = lrand48() & 0xffffff;
	memcpy(mine.gid, gid.raw, 16);
	if (server) {
		mine.addr = dm ? 0 : (uintptr_t)mem;	/* DM: zero-based */
		mine.rkey = mr->rkey;
		mine.flags = (dm ? CONN_PERSISTENT : 0) |
			     (power_cut ? CONN_POWERCUT : 0) |
			     (mw_type ? CONN_WINDOW : 0);
		mine.len = region_size;
		fd = tcp_accept_one(port, "placement");
		xfer(fd, &peer, sizeof(peer), false);
		/* ready to receive before the client may send */
		connect_qp(&mine, &peer);
		if (mw_type)
			mine.rkey = bind_window();
		xfer(fd, &mine, sizeof(mine), true);
	} else {
		fd = tcp_connect_retry(host, port);
		xfer(fd, &mine, sizeof(mine), true);
		xfer(fd, &peer, sizeof(peer), false);
		connect_qp(&mine, &peer);
	}
	printf("placement: %s connected qpn=%u peer-qpn=%u region %#" PRIx64
	       "+%" PRIu64 " rkey %#x\n", server ? "server" : "client",
	       mine.qpn, peer.qpn, server ? mine.addr : peer.addr,
	       server ? mine.len : peer.len, server ? mine.rkey : peer.rkey);
	return server ? run_server(fd) : run_client(fd, &peer);
}
