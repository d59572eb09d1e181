// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_gather_bench: gather N scattered buffers of B bytes (64 x 512 B) by
 * RDMA READ from a peer, between two hosts, in four forms:
 *   mapped       one READ whose local key is an rnicdv mkey over the
 *                buffers, registered once (rnicdv_wr_mr_list);
 *   mapped+reg   an mkey registered again for every gather (LOCAL_INV,
 *                rnicdv_wr_mr_list, READ in one batch; one mkey per
 *                gather in flight), as storage ULPs register per I/O;
 *   8 WQEs       the form an SGE limit of 8 forces: N / 8 READs of 8 SGEs;
 *   contiguous   one READ into one buffer of N * B bytes (the reference).
 * With DEPTH gathers in flight (each completes with its last work request,
 * signaled), for SECONDS per form, in that order, ROUNDS times; prints the
 * median gathers/s per form and the ratios. The last gather of every run
 * is checked byte for byte against the server's pattern.
 *
 *   server: rnic_gather_bench -s [-d DEV]
 *   client: rnic_gather_bench -c HOST [-d DEV] [-t SECONDS] [-q DEPTH]
 *                             [-r ROUNDS]
 */
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>
#include <infiniband/rnicdv.h>
#include "two_host.h"

#define NBUF    64
#define PIECE   512
#define GATHER  (NBUF * PIECE)
#define SLOTS   64              /* the server's region: SLOTS gathers */
#define MAX_DEPTH 16

enum { F_MAPPED, F_MAPPED_REG, F_MULTI, F_CONTIG, F_COUNT };
static const char *const form_name[F_COUNT] = {
	"mapped, 1 READ", "mapped, registered per I/O", "8 WQEs x 8 SGEs",
	"contiguous, 1 READ",
};

struct conn_info {
	uint32_t qpn, psn;
	uint8_t gid[16];
	uint64_t addr;
	uint32_t rkey, pad;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_qp_ex *qpx;
static union ibv_gid gid;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gather: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void xfer(int fd, void *p, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (char *)p + done, len - done) :
				  read(fd, (char *)p + done, len - done);

		if (n <= 0)
			die("rendezvous: %s", n ? strerror(errno) : "closed");
		done += n;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void setup(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 512, .max_recv_wr = 4,
			 .max_send_sge = 8, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_LOCAL_INV,
	};

	open_verbs(dev_name, &gid_index, &ctx, &gid, &pd, &ch);
	cq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
	a.send_cq = a.recv_cq = cq;
	a.pd = pd;
	qp = ibv_create_qp_ex(ctx, &a);
	if (!qp)
		die("ibv_create_qp_ex: %s", strerror(errno));
	qpx = ibv_qp_to_qp_ex(qp);
}

static void fill_slot(uint8_t *p, uint32_t slot)
{
	fill(p, GATHER, slot + 1);
}

static int run_server(int fd, struct conn_info *peer)
{
	struct conn_info mine = { .qpn = qp->qp_num };
	uint8_t *mem = aligned_alloc(4096, (size_t)SLOTS * GATHER);
	struct ibv_mr *mr;
	struct rc_dest d;
	char done;
	uint32_t s;

	for (s = 0; s < SLOTS; s++)
		fill_slot(mem + (size_t)s * GATHER, s);
	mr = ibv_reg_mr(pd, mem, (size_t)SLOTS * GATHER,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	mine.psn = lrand48() & 0xffffff;
	memcpy(mine.gid, gid.raw, 16);
	mine.addr = (uintptr_t)mem;
	mine.rkey = mr->rkey;
	xfer(fd, peer, sizeof(*peer), false);
	d = (struct rc_dest){ peer->qpn, peer->psn, peer->gid };
	rc_connect(qp, gid_index, IBV_ACCESS_REMOTE_READ, mine.psn, &d, 14);
	xfer(fd, &mine, sizeof(mine), true);
	xfer(fd, &done, 1, false);	/* the client is done */
	printf("gather: server done\n");
	return 0;
}

/* The client's side of the bench. */
static uint8_t *region;		/* the scattered buffers and the contiguous one */
static struct ibv_mr *rmr;
static struct rnicdv_mkey *mkeys[MAX_DEPTH];	/* [0]: registered once */
static struct ibv_sge scattered[NBUF];
static struct conn_info srv;

static uint8_t *buf_at(uint32_t k)
{
	/* apart, at odd page offsets, as an I/O's pages */
	return region + (size_t)k * 12288 + (k * 1088) % 4096;
}

static uint8_t *contig(void)
{
	return region + (size_t)NBUF * 12288 + 8192;
}

static void wait_one(void)
{
	struct ibv_wc wc;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, &wc);
	} while (!n);
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		die("completion %" PRIu64 ": %s (opcode %d)", wc.wr_id,
		    n < 0 ? "poll failed" : ibv_wc_status_str(wc.status),
		    wc.opcode);
}

/* Register an mkey over the scattered buffers (signaled, waited for). */
static void register_mkey(struct rnicdv_mkey *mkey)
{
	ibv_wr_start(qpx);
	qpx->wr_id = 0;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	rnicdv_wr_mr_list(qpx, mkey, IBV_ACCESS_LOCAL_WRITE, NBUF, scattered);
	if (ibv_wr_complete(qpx))
		die("mkey registration: %s", strerror(errno));
	wait_one();
}

/*
 * Post gather 'seq' (from slot seq % SLOTS) in form f, 'depth' in flight:
 * per I/O registration takes mkey seq % depth, whose last gather is done.
 */
static void post_gather(int f, uint64_t seq, int depth)
{
	uint64_t remote = srv.addr + (seq % SLOTS) * GATHER;
	struct rnicdv_mkey *mkey = mkeys[0];
	struct ibv_send_wr wr[NBUF / 8], *bad;
	uint32_t j;

	if (f == F_MULTI) {
		for (j = 0; j < NBUF / 8; j++) {
			memset(&wr[j], 0, sizeof(wr[j]));
			wr[j].wr_id = seq;
			wr[j].opcode = IBV_WR_RDMA_READ;
			wr[j].sg_list = &scattered[j * 8];
			wr[j].num_sge = 8;
			wr[j].send_flags = j == NBUF / 8 - 1 ? IBV_SEND_SIGNALED : 0;
			wr[j].wr.rdma.remote_addr = remote + j * 8 * PIECE;
			wr[j].wr.rdma.rkey = srv.rkey;
			wr[j].next = j + 1 < NBUF / 8 ? &wr[j + 1] : NULL;
		}
		if (ibv_post_send(qp, wr, &bad))
			die("ibv_post_send: %s", strerror(errno));
		return;
	}
	ibv_wr_start(qpx);
	if (f == F_MAPPED_REG) {
		mkey = mkeys[seq % depth];
		qpx->wr_id = seq;
		qpx->wr_flags = 0;
		ibv_wr_local_inv(qpx, mkey->lkey);
		rnicdv_wr_mr_list(qpx, mkey, IBV_ACCESS_LOCAL_WRITE, NBUF,
				  scattered);
	}
	qpx->wr_id = seq;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qpx, srv.rkey, remote);
	if (f == F_CONTIG)
		ibv_wr_set_sge(qpx, rmr->lkey, (uintptr_t)contig(), GATHER);
	else
		ibv_wr_set_sge(qpx, mkey->lkey, 0, GATHER);	/* zero-based */
	if (ibv_wr_complete(qpx))
		die("post: %s", strerror(errno));
}

/* The last gather's bytes, where form f put them. */
static void check(int f, uint64_t seq)
{
	uint8_t want[GATHER];
	uint32_t k;

	fill_slot(want, seq % SLOTS);
	for (k = 0; k < NBUF; k++) {
		const uint8_t *got = f == F_CONTIG ? contig() + k * PIECE :
						     buf_at(k);

		if (memcmp(got, want + k * PIECE, PIECE))
			die("%s: gather %" PRIu64 " buffer %u differs",
			    form_name[f], seq, k);
	}
}

static double run_form(int f, int depth, double seconds)
{
	uint64_t posted = 0, done = 0;
	double t0 = now(), t;

	do {
		while (posted - done < (uint64_t)depth)
			post_gather(f, posted++, depth);
		wait_one();
		done++;
		t = now();
	} while (t - t0 < seconds);
	while (done < posted) {
		wait_one();
		done++;
	}
	t = now();
	check(f, posted - 1);
	return done / (t - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_client(int fd, double seconds, int depth, int rounds)
{
	struct conn_info mine = { .qpn = qp->qp_num };
	double rate[F_COUNT][16];
	struct rc_dest d;
	size_t size = (size_t)NBUF * 12288 + 8192 + GATHER;
	int f, r;
	uint32_t k;

	region = aligned_alloc(4096, size);
	memset(region, 0, size);
	rmr = ibv_reg_mr(pd, region, size, IBV_ACCESS_LOCAL_WRITE);
	if (!rmr)
		die("ibv_reg_mr: %s", strerror(errno));
	for (k = 0; k < NBUF; k++) {
		scattered[k].addr = (uintptr_t)buf_at(k);
		scattered[k].length = PIECE;
		scattered[k].lkey = rmr->lkey;
	}
	for (k = 0; k < (uint32_t)depth; k++) {
		mkeys[k] = rnicdv_create_mkey(pd, NBUF);
		if (!mkeys[k])
			die("rnicdv_create_mkey: %s", strerror(errno));
	}
	mine.psn = lrand48() & 0xffffff;
	memcpy(mine.gid, gid.raw, 16);
	xfer(fd, &mine, sizeof(mine), true);
	xfer(fd, &srv, sizeof(srv), false);
	d = (struct rc_dest){ srv.qpn, srv.psn, srv.gid };
	rc_connect(qp, gid_index, 0, mine.psn, &d, 14);
	for (k = 0; k < (uint32_t)depth; k++)
		register_mkey(mkeys[k]);

	printf("gather: %d x %d B scattered buffers by RDMA READ, %d in flight, "
	       "%.1f s per form, %d rounds\n", NBUF, PIECE, depth, seconds,
	       rounds);
	for (r = 0; r < rounds; r++)
		for (f = 0; f < F_COUNT; f++)
			rate[f][r] = run_form(f, depth, seconds);
	for (f = 0; f < F_COUNT; f++)
		qsort(rate[f], rounds, sizeof(double), cmp_double);
	printf("%-28s %12s %9s %9s %9s\n", "form", "gathers/s", "MB/s",
	       "/8 WQEs", "/contig");
	for (f = 0; f < F_COUNT; f++) {
		double m = rate[f][rounds / 2];

		printf("%-28s %12.0f %9.1f %8.2fx %8.2fx\n", form_name[f], m,
		       m * GATHER / 1e6, m / rate[F_MULTI][rounds / 2],
		       m / rate[F_CONTIG][rounds / 2]);
	}
	xfer(fd, "x", 1, true);
	return 0;
}

int main(int argc, char **argv)
{
	struct conn_info peer;
	double seconds = 2;
	int opt, fd, depth = 8, rounds = 3;

	port = 18530;
	while ((opt = getopt(argc, argv, "sc:d:g:p:t:q:r:")) != -1) {
		if (two_host_option(opt, optarg))
			continue;
		switch (opt) {
		case 't': seconds = atof(optarg); break;
		case 'q': depth = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s -s | -c HOST [-d DEV] [-t SECONDS] "
				"[-q DEPTH] [-r ROUNDS]\n", argv[0]);
			return 2;
		}
	}
	if (server == !!host || depth < 1 || depth > MAX_DEPTH || rounds < 1 ||
	    rounds > 16 || seconds <= 0)
		die("bad options (depth 1..%d, rounds 1..16)", MAX_DEPTH);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(time(NULL) ^ getpid());
	setup();
	if (server) {
		fd = tcp_accept_one(port, "gather");
		return run_server(fd, &peer);
	}
	fd = tcp_connect_retry(host, port);
	return run_client(fd, seconds, depth, rounds);
}
