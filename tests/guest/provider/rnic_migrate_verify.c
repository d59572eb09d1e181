// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_migrate_verify: continuous, fully checked RDMA traffic between two
 * hosts over one RC connection, for live migration tests. It counts every
 * operation, detects lost and duplicated ones, checks every byte, and
 * measures the longest pause between consecutive completions (the blackout
 * a peer sees while the other side migrates).
 *
 *   server (the side that migrates):  rnic_migrate_verify -s [options]
 *   client (the peer that measures):  rnic_migrate_verify -c HOST -t SECS [options]
 *
 * QPN, PSN, GID, rkey and address are exchanged over TCP (port -p); the TCP
 * connection is closed before the traffic starts, the traffic and the final
 * handshake use the RC QP only.
 *
 * The client runs iterations seq = 1, 2, ... with up to -w of them in
 * flight; iteration seq uses slot seq % SLOTS (SLOTS = 2 * window + 2) of
 * -S bytes on both sides:
 *   1. RDMA WRITE of pattern(seq) into the server's slot,
 *   2. RDMA READ of that slot back, compared byte by byte with pattern(seq),
 *   3. SEND of a message carrying seq; the server checks that messages
 *      arrive exactly in sequence (a gap = lost, a repeat = duplicated) and
 *      checks the payload, then
 *   4. SENDs a reply carrying seq, which the client checks the same way.
 * Every work request is signaled; each completion is matched to its
 * iteration (wr_id), a second completion for the same operation counts as a
 * duplicate, an operation without completion at the end as lost. After -t
 * seconds the client drains, then sends STOP with the iteration count; the
 * server checks its count, checks every slot of its memory holds the
 * pattern of the last iteration that wrote it, and answers with its error
 * count. Both print one summary line:
 *
 *   VERIFY-RESULT role=client iters=.. ops=.. errors=0 lost=0 dup=0
 *       bytes_checked=.. max_gap_ms=.. gap_at_s=.. duration_s=.. ...
 *   VERIFY-RESULT role=server iters=.. errors=0 lost=0 dup=0 ...
 *
 * and "verify: t=.. iters=.. ops=.." progress lines every second, and
 * "verify: gap .. ms at t=.. s" for every pause longer than 50 ms (-G; t: the
 * last completion before it, seconds since the traffic started). Exit
 * status 0 only if nothing was wrong.
 *
 * Completions are waited for on a completion channel (no busy polling: the
 * test runs three TCG guests on two host cores).
 *
 * Options:
 *   -d DEV     device (default: the first)     -g N   GID index (default:
 *   -p PORT    TCP port (default 18515)               the IPv4-mapped one)
 *   -S BYTES   slot (WRITE/READ) size, default 4096
 *   -w N       iterations in flight, default 4
 *   -T N       QP timeout exponent (4.096 us * 2^N), default 16 (268 ms;
 *              with retry_cnt 7 a retry budget of 1.9 s)
 *   -r RATE    at most RATE iterations per second (0: no limit, default)
 *   -M N, -Q N extra idle MRs / RC QPs (in INIT) created first (benchmarks:
 *              a migration with many objects)
 *   -x SECS    stall limit: no completion for this long is an error (60)
 *   -G MS      report pauses longer than this (default 50)
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

#include <infiniband/verbs.h>

#include "two_host.h"

#define MSG_MAGIC	0x524e4d56u	/* "RNMV" */
#define MSG_DATA	1
#define MSG_REPLY	2
#define MSG_STOP	3
#define MSG_STOP_ACK	4
#define MSG_SIZE	256
#define MAX_ERRORS_SHOWN 20

enum { OP_WRITE, OP_READ, OP_SEND, OP_RECV, OP_NUM };
static const char *const op_name[OP_NUM] = { "write", "read", "send", "recv" };

struct msg {
	uint32_t magic;
	uint32_t kind;
	uint64_t seq;
	uint64_t count;		/* STOP: iterations; STOP_ACK: server errors */
	uint8_t payload[MSG_SIZE - 24];
};

struct conn_info {
	uint32_t qpn, psn, rkey, slot_size, slots, pad;
	uint64_t addr;
	uint8_t gid[16];
};

/* options (and two_host.h's -s, -c, -d, -g, -p) */
static int window = 4, timeout_exp = 16;
static uint32_t slot_size = 4096;
static double duration = 30, rate, stall_s = 60, gap_report = 0.05;
static int extra_mrs, extra_qps;

/* verbs objects */
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *channel;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static union ibv_gid gid;
static uint32_t slots;
static uint8_t *mem, *rdbuf, *msgbuf;	/* slots; READ targets; messages */
static struct ibv_mr *mem_mr, *rd_mr, *msg_mr;
static int recv_depth, msg_count;

/* counters */
static uint64_t errors, lost, dups, bytes_checked, completions;
static uint64_t op_count[OP_NUM];
static double t_start, last_completion, max_gap, gap_at, second_gap;
static uint64_t gap_seq;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	if (errors++ < MAX_ERRORS_SHOWN) {
		va_start(ap, fmt);
		printf("verify: ERROR ");
		vprintf(fmt, ap);
		printf("\n");
		fflush(stdout);
		va_end(ap);
	}
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("verify: FATAL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	printf("VERIFY-RESULT role=%s fatal=1 errors=%" PRIu64 "\n",
	       server ? "server" : "client", errors + 1);
	fflush(stdout);
	exit(1);
}

/* 0 if p holds pattern(seq); else the offset of the first bad byte + 1 */
static uint32_t check(const uint8_t *p, uint32_t len, uint64_t seq)
{
	static uint8_t *want;
	static uint32_t want_len;
	uint32_t i;

	if (want_len < len) {
		free(want);
		want = malloc(len);
		if (!want)
			die("no memory");
		want_len = len;
	}
	fill(want, len, seq);
	bytes_checked += len;
	if (!memcmp(p, want, len))
		return 0;
	for (i = 0; i < len && p[i] == want[i]; i++)
		;
	return i + 1;
}

/* ---------------------------------------------------------------------- */

/* Client: connect to the server, send our info, receive the server's. */
static void tcp_exchange(struct conn_info *mine, struct conn_info *theirs)
{
	int fd = tcp_connect_retry(host, port);

	if (write(fd, mine, sizeof(*mine)) != sizeof(*mine))
		die("tcp write: %s", strerror(errno));
	if (recv(fd, theirs, sizeof(*theirs), MSG_WAITALL) != sizeof(*theirs))
		die("tcp read: %s", strerror(errno));
	close(fd);
}

static void setup_verbs(void)
{
	open_verbs(dev_name, &gid_index, &ctx, &gid, &pd, &channel);
}

static struct ibv_mr *reg(void *p, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, p, len,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);

	if (!mr)
		die("ibv_reg_mr(%zu): %s", len, strerror(errno));
	return mr;
}

static void extra_objects(void)
{
	static uint8_t *extra;
	struct ibv_cq *xcq;
	int i;

	if (extra_mrs) {
		extra = aligned_alloc(4096, (size_t)extra_mrs * 4096);
		if (!extra)
			die("no memory");
		memset(extra, 0, (size_t)extra_mrs * 4096);
		for (i = 0; i < extra_mrs; i++)
			reg(extra + (size_t)i * 4096, 4096);
	}
	if (extra_qps) {
		xcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		if (!xcq)
			die("extra CQ: %s", strerror(errno));
		for (i = 0; i < extra_qps; i++) {
			struct ibv_qp_init_attr ia = {
				.send_cq = xcq, .recv_cq = xcq,
				.cap = { .max_send_wr = 4, .max_recv_wr = 4,
					 .max_send_sge = 1, .max_recv_sge = 1 },
				.qp_type = IBV_QPT_RC,
			};
			struct ibv_qp_attr a = {
				.qp_state = IBV_QPS_INIT, .port_num = 1,
				.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
			};
			struct ibv_qp *x = ibv_create_qp(pd, &ia);

			if (!x)
				die("extra QP %d: %s", i, strerror(errno));
			if (ibv_modify_qp(x, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
				die("extra QP %d INIT: %s", i, strerror(errno));
		}
	}
	if (extra_mrs || extra_qps)
		printf("verify: %d extra MRs, %d extra QPs\n", extra_mrs, extra_qps);
}

static void setup_qp(void)
{
	struct ibv_qp_init_attr ia = { 0 };

	/* per iteration: 3 send WRs on the client, 1 reply on the server */
	recv_depth = 2 * window + 4;
	msg_count = 2 * recv_depth + 8;
	cq = ibv_create_cq(ctx, 8 * window + 2 * recv_depth + 16, NULL, channel, 0);
	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 3 * window + 8;
	ia.cap.max_recv_wr = recv_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("ibv_create_qp: %s", strerror(errno));
}

static void connect_qp(const struct conn_info *mine, const struct conn_info *peer)
{
	struct rc_dest dest = { peer->qpn, peer->psn, peer->gid };

	rc_connect(qp, gid_index, IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ, mine->psn, &dest, timeout_exp);
}

/*
 * What a slot that failed check() holds instead of pattern(seq), for the
 * error message: the extent of the difference [from, to] and whose bytes
 * are at 'from' (zeros: nothing was placed there; an iteration of the
 * slot's other writers: stale or misplaced data).
 */
static void describe_bad(const uint8_t *p, uint64_t seq, char *out, size_t size)
{
	static uint8_t *want;
	uint32_t from, to, n;
	uint64_t cand, lo;

	if (!want) {
		want = malloc(slot_size);
		if (!want)
			die("no memory");
	}
	fill(want, slot_size, seq);
	for (from = 0; from < slot_size && p[from] == want[from]; from++)
		;
	for (to = slot_size - 1; to > from && p[to] == want[to]; to--)
		;
	n = slot_size - from < 16 ? slot_size - from : 16;
	lo = seq > 8 * (uint64_t)slots ? seq - 8 * (uint64_t)slots : 1;
	for (cand = lo; cand <= seq + 8 * (uint64_t)slots; cand++) {
		if (cand == seq)
			continue;
		fill(want, slot_size, cand);
		if (!memcmp(p + from, want + from, n))
			break;
	}
	if (cand <= seq + 8 * (uint64_t)slots)
		snprintf(out, size, "bytes %u..%u differ; from %u on they are "
			 "iteration %" PRIu64 "'s (slot %" PRIu64 ")", from, to,
			 from, cand, cand % slots);
	else if (p[from] == 0 && !memcmp(p + from, p + from + 1, n - 1))
		snprintf(out, size, "bytes %u..%u differ; from %u on they are "
			 "zero (not placed)", from, to, from);
	else
		snprintf(out, size, "bytes %u..%u differ; from %u on they are "
			 "no nearby iteration's", from, to, from);
}

/* ---------------------------------------------------------------------- */
/* Posting                                                                */

static uint64_t wrid(uint64_t seq, int op)
{
	return seq << 2 | op;
}

static struct msg *msg_slot(int i)
{
	return (struct msg *)(msgbuf + (size_t)i * MSG_SIZE);
}

/* Receive buffers are msg slots 0 .. recv_depth-1, one per WR (wr_id). */
static void post_recv(int i)
{
	struct ibv_sge sge = { (uintptr_t)msg_slot(i), MSG_SIZE, msg_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)i << 2 | OP_RECV,
				  .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv: %s", strerror(errno));
}

/* Send buffers: msg slots recv_depth .. msg_count-1, used round robin. */
static void post_msg(uint32_t kind, uint64_t seq, uint64_t count)
{
	static int next;
	struct msg *m = msg_slot(recv_depth + next);
	struct ibv_sge sge = { (uintptr_t)m, MSG_SIZE, msg_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wrid(seq, OP_SEND), .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	next = (next + 1) % (msg_count - recv_depth);
	m->magic = MSG_MAGIC;
	m->kind = kind;
	m->seq = seq;
	m->count = count;
	fill(m->payload, sizeof(m->payload), seq ^ kind);
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send(SEND): %s", strerror(errno));
}

static void post_rdma(uint64_t seq, int op, const struct conn_info *peer)
{
	uint32_t slot = seq % slots;
	uint8_t *local = (op == OP_WRITE ? mem : rdbuf) + (size_t)slot * slot_size;
	struct ibv_sge sge = { (uintptr_t)local, slot_size,
			       op == OP_WRITE ? mem_mr->lkey : rd_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wrid(seq, op), .sg_list = &sge, .num_sge = 1,
		.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr + (uint64_t)slot * slot_size,
			     .rkey = peer->rkey },
	}, *bad;

	if (op == OP_WRITE)
		fill(local, slot_size, seq);
	else
		memset(local, 0, slot_size);
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send(%s): %s", op_name[op], strerror(errno));
}

/* ---------------------------------------------------------------------- */
/* Completions                                                            */

/* Wait up to timeout_ms for completions; returns how many are in wc. */
static int get_completions(struct ibv_wc *wc, int max, int timeout_ms)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	n = ibv_poll_cq(cq, max, wc);
	if (n)
		goto got;
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	n = ibv_poll_cq(cq, max, wc);
	if (n)
		goto got;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
		die("ibv_get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(ev_cq, 1);
	n = ibv_poll_cq(cq, max, wc);
got:
	if (n < 0)
		die("ibv_poll_cq: %d", n);
	if (n > 0) {
		double t = now_s();

		if (last_completion > 0) {
			double gap = t - last_completion;

			if (gap > gap_report)
				printf("verify: gap %.1f ms at t=%.3f s\n",
				       gap * 1e3, last_completion - t_start);
			if (gap > max_gap) {
				second_gap = max_gap;
				max_gap = gap;
				gap_at = last_completion - t_start;
				gap_seq = wc[0].wr_id >> 2;
			} else if (gap > second_gap) {
				second_gap = gap;
			}
		}
		last_completion = t;
		completions += n;
	}
	return n;
}

static bool check_msg(const struct ibv_wc *wc, uint32_t kind, uint64_t *seq_out,
		      uint64_t *count_out)
{
	int i = wc->wr_id >> 2;
	struct msg *m = msg_slot(i);
	uint32_t bad;

	if (wc->byte_len != MSG_SIZE || m->magic != MSG_MAGIC) {
		error("message of %u bytes, magic %#x", wc->byte_len, m->magic);
		post_recv(i);
		return false;
	}
	*seq_out = m->seq;
	*count_out = m->count;
	if (m->kind != kind && !(kind == MSG_DATA && m->kind == MSG_STOP) &&
	    !(kind == MSG_REPLY && m->kind == MSG_STOP_ACK)) {
		error("message kind %u, expected %u (seq %" PRIu64 ")", m->kind,
		      kind, m->seq);
		post_recv(i);
		return false;
	}
	bad = check(m->payload, sizeof(m->payload), m->seq ^ m->kind);
	if (bad)
		error("message seq %" PRIu64 ": payload byte %u wrong", m->seq,
		      bad - 1);
	if (m->kind == MSG_STOP || m->kind == MSG_STOP_ACK)
		*seq_out = UINT64_MAX;
	post_recv(i);
	return true;
}

/*
 * Messages arrive in sequence on RC: seq below *expect is a duplicate
 * (false: ignore it), above it the ones in between are lost.
 */
static bool in_sequence(const char *what, uint64_t seq, uint64_t *expect)
{
	if (seq < *expect) {
		dups++;
		error("%s %" PRIu64 " again (expected %" PRIu64 ")", what, seq,
		      *expect);
		return false;
	}
	if (seq > *expect) {
		lost += seq - *expect;
		error("%s %" PRIu64 "..%" PRIu64 " missing", what, *expect, seq - 1);
	}
	*expect = seq + 1;
	return true;
}

static void summary(const char *role, uint64_t iters)
{
	double dur = now_s() - t_start;
	uint64_t ops = op_count[OP_WRITE] + op_count[OP_READ] +
		       op_count[OP_SEND] + op_count[OP_RECV];

	printf("VERIFY-RESULT role=%s iters=%" PRIu64 " ops=%" PRIu64
	       " writes=%" PRIu64 " reads=%" PRIu64 " sends=%" PRIu64
	       " recvs=%" PRIu64 " errors=%" PRIu64 " lost=%" PRIu64
	       " dup=%" PRIu64 " bytes_checked=%" PRIu64
	       " max_gap_ms=%.1f second_gap_ms=%.1f gap_at_s=%.3f gap_seq=%" PRIu64
	       " duration_s=%.1f iters_per_s=%.1f slot=%u window=%d\n",
	       role, iters, ops, op_count[OP_WRITE], op_count[OP_READ],
	       op_count[OP_SEND], op_count[OP_RECV], errors, lost, dups,
	       bytes_checked, max_gap * 1e3, second_gap * 1e3, gap_at, gap_seq,
	       dur, iters / (dur > 0 ? dur : 1), slot_size, window);
	fflush(stdout);
}

/* ---------------------------------------------------------------------- */

static int run_server(void)
{
	struct ibv_wc wc[32];
	uint64_t expect = 1, stop_count = UINT64_MAX, iters = 0;
	uint64_t seq, count;
	double last_progress = now_s(), last_any = now_s();
	bool stop_sent = false, stop_lost = false;
	uint32_t s;
	int n, i;

	while (!stop_lost &&
	       (!stop_sent || op_count[OP_SEND] + lost < iters + 1)) {
		n = get_completions(wc, 32, 1000);
		if (now_s() - last_progress >= 1) {
			last_progress = now_s();
			printf("verify: t=%.1f iters=%" PRIu64 "\n",
			       last_progress - t_start, iters);
			fflush(stdout);
		}
		if (!n) {
			if (now_s() - last_any > stall_s) {
				error("no completion for %.0f s after %" PRIu64
				      " iterations", stall_s, iters);
				break;
			}
			continue;
		}
		last_any = now_s();
		for (i = 0; i < n; i++) {
			int op = wc[i].wr_id & 3;

			/*
			 * STOP_ACK is the last message: the client exits once it
			 * has it, and when its ACK was lost on the way (netem) the
			 * retransmissions find no QP. Whether it arrived is the
			 * client's to say (its "no STOP answer" error), not ours.
			 */
			if (wc[i].status == IBV_WC_RETRY_EXC_ERR && stop_sent &&
			    wc[i].wr_id >> 2 == UINT64_MAX >> 2) {
				printf("verify: STOP_ACK not acknowledged (the "
				       "client has gone): %s\n",
				       ibv_wc_status_str(wc[i].status));
				op_count[op]++;
				stop_lost = true;
				continue;
			}
			/*
			 * That error took the QP to the error state: the
			 * receives still posted come back flushed.
			 */
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR && stop_lost)
				continue;
			if (wc[i].status != IBV_WC_SUCCESS)
				die("%s completion (wr_id %#" PRIx64 "): %s",
				    op_name[op], wc[i].wr_id,
				    ibv_wc_status_str(wc[i].status));
			op_count[op]++;
			if (op != OP_RECV)
				continue;
			if (!check_msg(&wc[i], MSG_DATA, &seq, &count))
				continue;
			if (seq == UINT64_MAX) {
				stop_count = count;
				continue;
			}
			if (!in_sequence("message", seq, &expect))
				continue;
			iters++;
			post_msg(MSG_REPLY, seq, 0);
		}
		if (stop_count != UINT64_MAX && !stop_sent) {
			/* every slot holds the pattern of its last writer */
			uint64_t slot_errors = 0;

			if (stop_count != iters) {
				lost += stop_count > iters ? stop_count - iters : 0;
				error("client ran %" PRIu64 " iterations, %" PRIu64
				      " arrived", stop_count, iters);
			}
			for (s = 0; s < slots; s++) {
				uint64_t last;
				uint32_t bad;

				if (stop_count < 1)
					break;
				/* largest seq <= stop_count with seq % slots == s */
				if (stop_count % slots >= s)
					last = stop_count - (stop_count % slots - s);
				else if (stop_count >= slots)
					last = stop_count - (stop_count % slots) - slots + s;
				else
					continue;
				if (last == 0)
					continue;
				bad = check(mem + (size_t)s * slot_size, slot_size, last);
				if (bad) {
					slot_errors++;
					error("slot %u: byte %u is not iteration %" PRIu64
					      "'s", s, bad - 1, last);
				}
			}
			printf("verify: STOP after %" PRIu64 " iterations; %u slots "
			       "checked, %" PRIu64 " wrong\n", stop_count, slots,
			       slot_errors);
			post_msg(MSG_STOP_ACK, UINT64_MAX >> 2, errors + lost + dups);
			stop_sent = true;
		}
	}
	summary("server", iters);
	return errors || lost || dups ? 1 : 0;
}

/* per in-flight iteration: which of its four completions arrived */
struct slot_state {
	uint64_t seq;		/* 0: free */
	unsigned done;		/* bit per op */
	bool reread;		/* a bad READ's second look is in flight */
};

/* wr_id of the second READ of a slot whose READ came back wrong */
#define REREAD (1ull << 61)

/*
 * A READ of iteration seq came back wrong: read the server's slot again
 * (into the spare slot of rdbuf, the slot held until it completes), so the
 * report says whether the server's memory holds the wrong bytes (the WRITE
 * was not placed) or the first READ's data went wrong on its way back.
 */
static void post_reread(uint64_t seq, const struct conn_info *peer)
{
	uint8_t *local = rdbuf + (size_t)slots * slot_size;
	struct ibv_sge sge = { (uintptr_t)local, slot_size, rd_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wrid(seq | REREAD, OP_READ), .sg_list = &sge,
		.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr +
					    (uint64_t)(seq % slots) * slot_size,
			     .rkey = peer->rkey },
	}, *bad;

	memset(local, 0, slot_size);
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send(READ again): %s", strerror(errno));
}

static void reread_done(uint64_t seq)
{
	const uint8_t *p = rdbuf + (size_t)slots * slot_size;
	char what[160];

	if (!check(p, slot_size, seq)) {
		printf("verify: the slot of iteration %" PRIu64 " read again holds "
		       "what was written: the server's memory was right, the "
		       "first READ's data went wrong\n", seq);
	} else {
		describe_bad(p, seq, what, sizeof(what));
		printf("verify: the slot of iteration %" PRIu64 " read again is "
		       "still wrong (the server's memory: %s)\n", seq, what);
	}
	fflush(stdout);
}

static int run_client(const struct conn_info *peer)
{
	struct ibv_wc wc[32];
	struct slot_state *st = calloc(slots, sizeof(*st));
	uint64_t next = 1, completed = 0, expect_reply = 1, seq, count;
	uint64_t server_errors = UINT64_MAX;
	double end = t_start + duration, last_progress = t_start, last_any = t_start;
	bool stopping = false, stop_sent = false;
	int inflight = 0, n, i;

	if (!st)
		die("no memory");
	for (;;) {
		double t = now_s();

		if (!stopping && t >= end)
			stopping = true;
		while (!stopping && inflight < window &&
		       (rate <= 0 || next <= 1 + (t - t_start) * rate)) {
			struct slot_state *s = &st[next % slots];

			if (s->seq)
				break;	/* held by a second READ */
			s->seq = next;
			s->done = 0;
			post_rdma(next, OP_WRITE, peer);
			post_rdma(next, OP_READ, peer);
			post_msg(MSG_DATA, next, 0);
			next++;
			inflight++;
		}
		if (stopping && !inflight && !stop_sent) {
			post_msg(MSG_STOP, UINT64_MAX >> 2, next - 1);
			stop_sent = true;
		}
		if (stop_sent && server_errors != UINT64_MAX &&
		    op_count[OP_SEND] >= next)
			break;
		n = get_completions(wc, 32, rate > 0 ? 5 : 1000);
		if (now_s() - last_progress >= 1) {
			last_progress = now_s();
			printf("verify: t=%.1f iters=%" PRIu64 " ops=%" PRIu64 "\n",
			       last_progress - t_start, completed,
			       op_count[0] + op_count[1] + op_count[2] + op_count[3]);
			fflush(stdout);
		}
		if (!n) {
			if (now_s() - last_any > stall_s) {
				error("no completion for %.0f s, %d iterations in flight",
				      stall_s, inflight);
				lost += inflight;
				break;
			}
			continue;
		}
		last_any = now_s();
		for (i = 0; i < n; i++) {
			int op = wc[i].wr_id & 3;
			struct slot_state *s;
			uint32_t bad;

			if (wc[i].status != IBV_WC_SUCCESS)
				die("%s completion (wr_id %#" PRIx64 ", seq %" PRIu64
				    ") after %" PRIu64 " iterations: %s",
				    op_name[op], wc[i].wr_id, wc[i].wr_id >> 2,
				    completed, ibv_wc_status_str(wc[i].status));
			if (op == OP_READ && (wc[i].wr_id >> 2) & REREAD) {
				seq = (wc[i].wr_id >> 2) & ~REREAD;
				s = &st[seq % slots];
				reread_done(seq);
				s->reread = false;
				if (s->done == (1u << OP_NUM) - 1) {
					s->seq = 0;
					inflight--;
					completed++;
				}
				continue;
			}
			op_count[op]++;
			if (op == OP_RECV) {
				if (!check_msg(&wc[i], MSG_REPLY, &seq, &count))
					continue;
				if (seq == UINT64_MAX) {
					server_errors = count;
					continue;
				}
			} else {
				seq = wc[i].wr_id >> 2;
				if (seq == UINT64_MAX >> 2)
					continue;	/* the STOP message */
			}
			if (op == OP_RECV && !in_sequence("reply", seq, &expect_reply))
				continue;
			s = &st[seq % slots];
			if (s->seq != seq) {
				dups++;
				error("%s completion for iteration %" PRIu64
				      " not in flight", op_name[op], seq);
				continue;
			}
			if (s->done & (1u << op)) {
				dups++;
				error("second %s completion for iteration %" PRIu64,
				      op_name[op], seq);
				continue;
			}
			s->done |= 1u << op;
			if (op == OP_READ) {
				bad = check(rdbuf + (size_t)(seq % slots) * slot_size,
					    slot_size, seq);
				if (bad) {
					char what[160];

					describe_bad(rdbuf + (size_t)(seq % slots) *
						     slot_size, seq, what, sizeof(what));
					error("READ of iteration %" PRIu64
					      ": byte %u differs from what was "
					      "written (%s)", seq, bad - 1, what);
					post_reread(seq, peer);
					s->reread = true;
				}
			}
			if (s->done == (1u << OP_NUM) - 1 && !s->reread) {
				s->seq = 0;
				inflight--;
				completed++;
			}
		}
	}
	if (server_errors == UINT64_MAX) {
		error("no STOP answer from the server");
	} else if (server_errors) {
		error("the server counted %" PRIu64 " errors", server_errors);
	}
	summary("client", completed);
	return errors || lost || dups ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct conn_info mine = { 0 }, peer = { 0 };
	int opt, i;

	port = 18515;
	while ((opt = getopt(argc, argv, "sc:d:g:p:t:S:w:T:r:M:Q:x:G:")) != -1) {
		if (two_host_option(opt, optarg))
			continue;
		switch (opt) {
		case 't': duration = atof(optarg); break;
		case 'S': slot_size = strtoul(optarg, NULL, 0); break;
		case 'w': window = atoi(optarg); break;
		case 'T': timeout_exp = atoi(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'M': extra_mrs = atoi(optarg); break;
		case 'Q': extra_qps = atoi(optarg); break;
		case 'x': stall_s = atof(optarg); break;
		case 'G': gap_report = atof(optarg) / 1e3; break;
		default:
			fprintf(stderr, "usage: %s -s | -c HOST [-t SECS] [options]\n",
				argv[0]);
			return 2;
		}
	}
	if (server == !!host || window < 1 || window > 64 || slot_size < 8 ||
	    slot_size > (1u << 20)) {
		fprintf(stderr, "usage: %s -s | -c HOST [-t SECS] [-S 8..1M] [-w 1..64]\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup_verbs();
	extra_objects();
	srand48(time(NULL) ^ getpid());
	mine.psn = lrand48() & 0xffffff;
	memcpy(mine.gid, gid.raw, 16);
	if (server) {
		/* learn the client's layout first, then create and answer */
		int fd = tcp_accept_one(port, "verify");

		if (recv(fd, &peer, sizeof(peer), MSG_WAITALL) != sizeof(peer))
			die("tcp read: %s", strerror(errno));
		if (peer.slot_size < 8 || peer.slot_size > (1u << 20) ||
		    peer.slots < 4 || peer.slots > 130 || peer.slots % 2)
			die("bad layout from the client: %u x %u", peer.slots,
			    peer.slot_size);
		slot_size = peer.slot_size;
		slots = peer.slots;
		window = (slots - 2) / 2;
		setup_qp();
		mem = aligned_alloc(4096, ((size_t)slots * slot_size + 4095) & ~4095ul);
		if (!mem)
			die("no memory");
		memset(mem, 0, (size_t)slots * slot_size);
		mem_mr = reg(mem, (size_t)slots * slot_size);
		mine.qpn = qp->qp_num;
		mine.rkey = mem_mr->rkey;
		mine.addr = (uintptr_t)mem;
		mine.slot_size = slot_size;
		mine.slots = slots;
		if (write(fd, &mine, sizeof(mine)) != sizeof(mine))
			die("tcp write: %s", strerror(errno));
		close(fd);
	} else {
		size_t len;

		slots = 2 * window + 2;
		len = ((size_t)(slots + 1) * slot_size + 4095) & ~4095ul;
		setup_qp();
		mem = aligned_alloc(4096, len);
		rdbuf = aligned_alloc(4096, len);	/* + a spare slot */
		if (!mem || !rdbuf)
			die("no memory");
		mem_mr = reg(mem, len);
		rd_mr = reg(rdbuf, len);
		mine.qpn = qp->qp_num;
		mine.slot_size = slot_size;
		mine.slots = slots;
		tcp_exchange(&mine, &peer);
	}
	msgbuf = aligned_alloc(4096, ((size_t)msg_count * MSG_SIZE + 4095) & ~4095ul);
	if (!msgbuf)
		die("no memory");
	msg_mr = reg(msgbuf, (size_t)msg_count * MSG_SIZE);
	connect_qp(&mine, &peer);
	for (i = 0; i < recv_depth; i++)
		post_recv(i);
	printf("verify: connected qpn=%u peer-qpn=%u rkey=%#x slots=%u x %u window=%d "
	       "timeout=%d\n", mine.qpn, peer.qpn, server ? mine.rkey : peer.rkey,
	       slots, slot_size, window, timeout_exp);
	t_start = now_s();
	if (server)
		return run_server();
	printf("verify: running for %.0f s\n", duration);
	return run_client(&peer);
}
