// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rnic_rpma: a librpma server and client (Debian's librpma 1.3.0) for the
 * persistent-memory tests and benchmark (tests/guest/test_pmem.py).
 *
 * Server: maps PATH with libpmem (a device-DAX of the rnic window:
 * rnic.ko window_pmem=1 and ndctl; or any file), registers its first
 * header + SIZE bytes with rpma_mr_reg() for remote WRITE, READ and FLUSH
 * (persistent if libpmem says the mapping is pmem), hands the client the
 * region's descriptor in the connection's private data and serves GPSPM
 * persist requests (SEND: offset, length; the server persists the range
 * with pmem_persist() and answers) until the client says goodbye.
 * --verify SEED first checks the region holds the pattern a client wrote
 * with that seed (a persistence check across a restart).
 *
 *   rnic_rpma -s -a ADDR [-p PORT] [-f PATH] [-z SIZE] [-v SEED]
 *
 * Client:
 *   -t check   writes the pattern of SEED over the region (rpma_write),
 *              rpma_flush() (persistent where the server allows it, else
 *              visibility), reads it back (rpma_read) and compares; an
 *              rpma_atomic_write() of 8 bytes into the header, read back
 *   -t bench   QD1 ops/s and latency per size (-b, default 64 and 4096)
 *              of: WRITE alone (durable by the region's key on rnic's
 *              window), WRITE + FLUSH(persistence) (librpma's native APM
 *              flush), WRITE + SEND to the server which persists (GPSPM)
 *
 *   rnic_rpma -c ADDR [-p PORT] -t check|bench [-v SEED] [-n ITERS] [-b BYTES]
 *
 * Every line of output is prefixed ("server:", "check:", "bench:") for the
 * test's parser; the exit status is 0 only if everything checked out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libpmem.h>
#include <librpma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HEADER		4096u		/* header page; the data follows */
#define MAGIC		0x52504d414e49434eull	/* "NICNAMPR" */
#define MSG_BYE		UINT64_MAX
#define CHUNK		(64u << 10)

struct header {
	uint64_t magic;
	uint64_t atomic;		/* the client's ATOMIC WRITE target */
};

/* GPSPM request and answer, one each way per persist */
struct msg {
	uint64_t offset;
	uint64_t length;		/* MSG_BYE: the client is done */
	uint64_t id;
};

/* The connection's private data: the region and the server's config. */
struct pdata {
	uint8_t mr_desc_size;
	uint8_t pcfg_desc_size;
	uint8_t is_pmem;
	uint8_t rsvd[5];
	uint64_t size;			/* data bytes after the header */
	uint8_t desc[200];
};

static int failures;

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); failures++; } while (0)

static const char *err2str(int ret)
{
	return rpma_err_2str(ret);
}

#define CHECK(call) do { \
	int ret_ = (call); \
	if (ret_) { \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
			err2str(ret_)); \
		exit(1); \
	} \
} while (0)

static uint64_t pattern(uint64_t seed, uint64_t word)
{
	uint64_t x = seed ^ (word * 0x9e3779b97f4a7c15ull);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static void fill(uint64_t *p, uint64_t seed, uint64_t first_word, size_t words)
{
	for (size_t i = 0; i < words; i++)
		p[i] = pattern(seed, first_word + i);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One completion of the connection's CQ (its opcode); it must be a success. */
static enum ibv_wc_opcode wait_wc(struct rpma_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int spins = 0, ret;

	for (;;) {
		ret = rpma_cq_get_wc(cq, 1, &wc, NULL);
		if (!ret)
			break;
		if (ret != RPMA_E_NO_COMPLETION) {
			fprintf(stderr, "%s: rpma_cq_get_wc: %s\n", what, err2str(ret));
			exit(1);
		}
		if (++spins > 1000)
			CHECK(rpma_cq_wait(cq));
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: completion %s\n", what, ibv_wc_status_str(wc.status));
		exit(1);
	}
	return wc.opcode;
}

static void wait_event(struct rpma_conn *conn, enum rpma_conn_event want)
{
	enum rpma_conn_event ev;

	CHECK(rpma_conn_next_event(conn, &ev));
	if (ev != want) {
		fprintf(stderr, "connection event %s, expected %s\n",
			rpma_utils_conn_event_2str(ev), rpma_utils_conn_event_2str(want));
		exit(1);
	}
}

/* ------------------------------------------------------------------ */
/* server                                                             */

static int server(const char *addr, const char *port, const char *path,
		  uint64_t size, bool verify, uint64_t seed)
{
	struct ibv_context *ibv;
	struct rpma_peer *peer;
	struct rpma_peer_cfg *pcfg;
	struct rpma_ep *ep;
	struct rpma_conn_req *req;
	struct rpma_conn *conn;
	struct rpma_mr_local *mr, *msg_mr;
	struct rpma_conn_private_data priv;
	struct rpma_cq *cq;
	struct pdata pd = { 0 };
	struct msg *msgs;
	size_t mapped = 0, desc_size;
	int is_pmem = 0, usage;
	char *base;

	if (path) {
		base = pmem_map_file(path, 0, 0, 0, &mapped, &is_pmem);
		if (!base) {
			fprintf(stderr, "server: pmem_map_file %s: %s\n", path, pmem_errormsg());
			return 1;
		}
		if (mapped < HEADER + size) {
			fprintf(stderr, "server: %s: %zu bytes, %" PRIu64 " needed\n",
				path, mapped, HEADER + size);
			return 1;
		}
	} else {
		base = aligned_alloc(4096, HEADER + size);
		if (!base)
			return 1;
		memset(base, 0, HEADER + size);
	}
	printf("server: %s, %zu bytes mapped, is_pmem %d\n", path ? path : "DRAM",
	       mapped, is_pmem);

	if (verify) {
		struct header *h = (struct header *)base;
		const uint64_t *p = (const uint64_t *)(base + HEADER);
		uint64_t bad = 0, first_bad = UINT64_MAX;

		for (uint64_t i = 0; i < size / 8; i++)
			if (p[i] != pattern(seed, i)) {
				if (first_bad == UINT64_MAX)
					first_bad = i * 8;
				bad++;
			}
		printf("server: verify seed %" PRIu64 ": %" PRIu64 " of %" PRIu64
		       " words differ (first at %" PRIu64 "), atomic word %#" PRIx64 "\n",
		       seed, bad, size / 8, first_bad == UINT64_MAX ? 0 : first_bad,
		       h->atomic);
		if (bad || h->atomic != pattern(seed, UINT64_MAX))
			FAIL("server: verify failed\n");
	}

	CHECK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ibv));
	CHECK(rpma_peer_new(ibv, &peer));
	CHECK(rpma_peer_cfg_new(&pcfg));
	CHECK(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, is_pmem));
	usage = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
		RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;
	if (is_pmem)
		usage |= RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
	CHECK(rpma_mr_reg(peer, base, HEADER + size, usage, &mr));
	msgs = aligned_alloc(4096, 4096);
	CHECK(rpma_mr_reg(peer, msgs, 4096, RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
			  &msg_mr));

	CHECK(rpma_mr_get_descriptor_size(mr, &desc_size));
	pd.mr_desc_size = desc_size;
	CHECK(rpma_mr_get_descriptor(mr, pd.desc));
	CHECK(rpma_peer_cfg_get_descriptor_size(pcfg, &desc_size));
	pd.pcfg_desc_size = desc_size;
	if (pd.mr_desc_size + pd.pcfg_desc_size > sizeof(pd.desc)) {
		fprintf(stderr, "server: descriptors of %u bytes\n",
			pd.mr_desc_size + pd.pcfg_desc_size);
		return 1;
	}
	CHECK(rpma_peer_cfg_get_descriptor(pcfg, pd.desc + pd.mr_desc_size));
	pd.is_pmem = is_pmem;
	pd.size = size;

	CHECK(rpma_ep_listen(peer, addr, port, &ep));
	printf("server: listening on %s:%s\n", addr, port);
	fflush(stdout);
	CHECK(rpma_ep_next_conn_req(ep, NULL, &req));
	/* the first GPSPM request's buffer, before the client can send */
	CHECK(rpma_conn_req_recv(req, msg_mr, 0, sizeof(struct msg), NULL));
	priv.ptr = &pd;
	priv.len = offsetof(struct pdata, desc) + pd.mr_desc_size + pd.pcfg_desc_size;
	CHECK(rpma_conn_req_connect(&req, &priv, &conn));
	wait_event(conn, RPMA_CONN_ESTABLISHED);
	CHECK(rpma_conn_get_cq(conn, &cq));

	uint64_t persists = 0;

	for (;;) {
		struct msg *in = &msgs[0], *out = &msgs[1];

		/* the answers' send completions come in between */
		if (wait_wc(cq, "server") != IBV_WC_RECV)
			continue;
		if (in->length == MSG_BYE)
			break;
		if (in->offset > HEADER + size || in->length > HEADER + size - in->offset) {
			fprintf(stderr, "server: persist request out of range\n");
			return 1;
		}
		pmem_persist(base + in->offset, in->length);
		persists++;
		*out = *in;
		CHECK(rpma_recv(conn, msg_mr, 0, sizeof(struct msg), NULL));
		/* signaled: a send queue slot is free again only with a completion */
		CHECK(rpma_send(conn, msg_mr, sizeof(struct msg), sizeof(struct msg),
				RPMA_F_COMPLETION_ALWAYS, NULL));
	}
	printf("server: %" PRIu64 " GPSPM persists, goodbye\n", persists);
	wait_event(conn, RPMA_CONN_CLOSED);
	CHECK(rpma_conn_disconnect(conn));
	CHECK(rpma_conn_delete(&conn));
	CHECK(rpma_mr_dereg(&msg_mr));
	CHECK(rpma_mr_dereg(&mr));
	CHECK(rpma_ep_shutdown(&ep));
	CHECK(rpma_peer_cfg_delete(&pcfg));
	CHECK(rpma_peer_delete(&peer));
	if (path)
		pmem_unmap(base, mapped);
	printf("server: %s\n", failures ? "FAILED" : "done");
	return failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* client                                                             */

struct client {
	struct rpma_conn *conn;
	struct rpma_cq *cq;
	struct rpma_mr_remote *dst;
	struct rpma_mr_local *buf_mr, *msg_mr;
	enum rpma_flush_type flush_type;
	uint64_t size;
	char *buf;
	struct msg *msgs;
};

static void client_connect(struct client *c, const char *addr, const char *port,
			   uint64_t bufsize)
{
	struct ibv_context *ibv;
	struct rpma_peer *peer;
	struct rpma_conn_req *req;
	struct rpma_conn_private_data priv;
	struct rpma_peer_cfg *pcfg;
	const struct pdata *pd;
	bool direct;
	int flush_types;

	CHECK(rpma_utils_get_ibv_context(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &ibv));
	CHECK(rpma_peer_new(ibv, &peer));
	c->buf = aligned_alloc(4096, bufsize);
	c->msgs = aligned_alloc(4096, 4096);
	CHECK(rpma_mr_reg(peer, c->buf, bufsize,
			  RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &c->buf_mr));
	CHECK(rpma_mr_reg(peer, c->msgs, 4096,
			  RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &c->msg_mr));
	CHECK(rpma_conn_req_new(peer, addr, port, NULL, &req));
	CHECK(rpma_conn_req_connect(&req, NULL, &c->conn));
	wait_event(c->conn, RPMA_CONN_ESTABLISHED);
	CHECK(rpma_conn_get_private_data(c->conn, &priv));
	pd = priv.ptr;
	if (!pd || priv.len < offsetof(struct pdata, desc) ||
	    priv.len < offsetof(struct pdata, desc) + pd->mr_desc_size + pd->pcfg_desc_size) {
		fprintf(stderr, "client: private data of %u bytes\n", priv.len);
		exit(1);
	}
	CHECK(rpma_mr_remote_from_descriptor(pd->desc, pd->mr_desc_size, &c->dst));
	CHECK(rpma_peer_cfg_from_descriptor(pd->desc + pd->mr_desc_size,
					    pd->pcfg_desc_size, &pcfg));
	CHECK(rpma_conn_apply_remote_peer_cfg(c->conn, pcfg));
	CHECK(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, &direct));
	CHECK(rpma_mr_remote_get_flush_type(c->dst, &flush_types));
	c->flush_type = direct && (flush_types & RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT) ?
			RPMA_FLUSH_TYPE_PERSISTENT : RPMA_FLUSH_TYPE_VISIBILITY;
	c->size = pd->size;
	CHECK(rpma_conn_get_cq(c->conn, &c->cq));
	printf("client: connected; region %" PRIu64 " bytes, server is_pmem %u, "
	       "direct write to pmem %d, flush %s\n", c->size, pd->is_pmem, direct,
	       c->flush_type == RPMA_FLUSH_TYPE_PERSISTENT ? "persistent" : "visibility");
	rpma_peer_cfg_delete(&pcfg);
}

/* A GPSPM persist of [offset, offset + len): request, then the answer. */
static void gpspm_persist(struct client *c, uint64_t offset, uint64_t len, uint64_t id)
{
	c->msgs[0] = (struct msg){ .offset = offset, .length = len, .id = id };
	CHECK(rpma_recv(c->conn, c->msg_mr, sizeof(struct msg), sizeof(struct msg), NULL));
	CHECK(rpma_send(c->conn, c->msg_mr, 0, sizeof(struct msg),
			RPMA_F_COMPLETION_ALWAYS, NULL));
	/* the request's send and the answer's receive, in either order */
	wait_wc(c->cq, "gpspm");
	wait_wc(c->cq, "gpspm");
	if (c->msgs[1].id != id) {
		fprintf(stderr, "gpspm: answer %" PRIu64 " to request %" PRIu64 "\n",
			c->msgs[1].id, id);
		exit(1);
	}
}

static void client_bye(struct client *c)
{
	c->msgs[0] = (struct msg){ .length = MSG_BYE };
	CHECK(rpma_send(c->conn, c->msg_mr, 0, sizeof(struct msg),
			RPMA_F_COMPLETION_ALWAYS, NULL));
	wait_wc(c->cq, "goodbye");
	CHECK(rpma_conn_disconnect(c->conn));
	wait_event(c->conn, RPMA_CONN_CLOSED);
	CHECK(rpma_conn_delete(&c->conn));
}

static void client_check(struct client *c, uint64_t seed)
{
	uint64_t words = c->size / 8, done = 0;
	char value[8];

	/* the pattern, chunk by chunk, one completion per chunk */
	while (done < c->size) {
		uint64_t len = c->size - done < CHUNK ? c->size - done : CHUNK;

		fill((uint64_t *)c->buf, seed, done / 8, len / 8);
		CHECK(rpma_write(c->conn, c->dst, HEADER + done, c->buf_mr, 0, len,
				 RPMA_F_COMPLETION_ALWAYS, NULL));
		wait_wc(c->cq, "write");
		done += len;
	}
	CHECK(rpma_flush(c->conn, c->dst, HEADER, c->size, c->flush_type,
			 RPMA_F_COMPLETION_ALWAYS, NULL));
	wait_wc(c->cq, "flush");
	/* ATOMIC WRITE of the header's second word, flushed */
	uint64_t v = pattern(seed, UINT64_MAX);

	memcpy(value, &v, 8);
	CHECK(rpma_atomic_write(c->conn, c->dst, offsetof(struct header, atomic), value,
				RPMA_F_COMPLETION_ALWAYS, NULL));
	wait_wc(c->cq, "atomic write");
	CHECK(rpma_flush(c->conn, c->dst, 0, 16, c->flush_type,
			 RPMA_F_COMPLETION_ALWAYS, NULL));
	wait_wc(c->cq, "flush header");
	printf("check: wrote %" PRIu64 " bytes (seed %" PRIu64 "), flushed, atomic write done\n",
	       c->size, seed);

	/* read everything back */
	uint64_t bad = 0;

	for (done = 0; done < c->size;) {
		uint64_t len = c->size - done < CHUNK ? c->size - done : CHUNK;
		const uint64_t *p = (const uint64_t *)c->buf;

		CHECK(rpma_read(c->conn, c->buf_mr, 0, c->dst, HEADER + done, len,
				RPMA_F_COMPLETION_ALWAYS, NULL));
		wait_wc(c->cq, "read");
		for (uint64_t i = 0; i < len / 8; i++)
			bad += p[i] != pattern(seed, done / 8 + i);
		done += len;
	}
	CHECK(rpma_read(c->conn, c->buf_mr, 0, c->dst, 0, 16, RPMA_F_COMPLETION_ALWAYS, NULL));
	wait_wc(c->cq, "read header");
	memcpy(&v, c->buf + offsetof(struct header, atomic), 8);
	printf("check: read back %" PRIu64 " words, %" PRIu64 " differ; atomic word %s\n",
	       words, bad, v == pattern(seed, UINT64_MAX) ? "equal" : "DIFFERENT");
	if (bad || v != pattern(seed, UINT64_MAX))
		FAIL("check: FAILED\n");
	else
		printf("check: ok\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum mode { M_WRITE, M_APM, M_GPSPM, M_COUNT };
static const char *const mode_name[M_COUNT] = { "write", "write+flush", "write+gpspm" };

static void client_bench(struct client *c, const uint64_t *sizes, int nsizes, int iters)
{
	double *lat = calloc(iters, sizeof(*lat));

	for (int s = 0; s < nsizes; s++) {
		uint64_t len = sizes[s];

		if (len > c->size || len > CHUNK) {
			fprintf(stderr, "bench: %" PRIu64 " bytes: region or buffer too small\n", len);
			exit(1);
		}
		memset(c->buf, 0xa5, len);
		for (int m = 0; m < M_COUNT; m++) {
			double start = now_us();

			for (int i = 0; i < iters; i++) {
				/* a different place each time, as a log would append */
				uint64_t off = HEADER + (i * len) % (c->size - len + 1);
				double t0 = now_us();

				if (m == M_WRITE) {
					CHECK(rpma_write(c->conn, c->dst, off, c->buf_mr, 0, len,
							 RPMA_F_COMPLETION_ALWAYS, NULL));
				} else {
					CHECK(rpma_write(c->conn, c->dst, off, c->buf_mr, 0, len,
							 RPMA_F_COMPLETION_ON_ERROR, NULL));
				}
				if (m == M_APM)
					CHECK(rpma_flush(c->conn, c->dst, off, len, c->flush_type,
							 RPMA_F_COMPLETION_ALWAYS, NULL));
				if (m == M_GPSPM)
					gpspm_persist(c, off, len, i);
				else
					wait_wc(c->cq, mode_name[m]);
				lat[i] = now_us() - t0;
			}
			double elapsed = now_us() - start;

			qsort(lat, iters, sizeof(*lat), cmp_double);
			printf("bench: bytes=%" PRIu64 " mode=%s ops=%d ops_per_s=%.0f "
			       "lat_us_median=%.1f lat_us_p99=%.1f\n", len, mode_name[m], iters,
			       iters / (elapsed / 1e6), lat[iters / 2], lat[iters * 99 / 100]);
			fflush(stdout);
		}
	}
	free(lat);
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -s -a ADDR [-p PORT] [-f PATH] [-z SIZE] [-v SEED]\n"
		"       %s -c ADDR [-p PORT] -t check|bench [-v SEED] [-n ITERS] [-b BYTES]...\n",
		argv0, argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7204", *path = NULL, *test = NULL;
	uint64_t size = 1u << 20, seed = 1, sizes[8];
	bool is_server = false, verify = false;
	int opt, iters = 2000, nsizes = 0;

	while ((opt = getopt(argc, argv, "sa:c:p:f:z:v:t:n:b:")) != -1) {
		switch (opt) {
		case 's': is_server = true; break;
		case 'a': addr = optarg; break;
		case 'c': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'f': path = optarg; break;
		case 'z': size = strtoull(optarg, NULL, 0); break;
		case 'v': seed = strtoull(optarg, NULL, 0); verify = true; break;
		case 't': test = optarg; break;
		case 'n': iters = atoi(optarg); break;
		case 'b':
			if (nsizes == 8)
				usage(argv[0]);
			sizes[nsizes++] = strtoull(optarg, NULL, 0);
			break;
		default: usage(argv[0]);
		}
	}
	if (!addr || size < 4096 || size % 4096 || iters < 1)
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_WARNING);
	if (is_server)
		return server(addr, port, path, size, verify, seed);
	if (!test)
		usage(argv[0]);

	struct client c = { 0 };

	client_connect(&c, addr, port, CHUNK);
	if (!strcmp(test, "check")) {
		client_check(&c, seed);
	} else if (!strcmp(test, "bench")) {
		if (!nsizes) {
			sizes[nsizes++] = 64;
			sizes[nsizes++] = 4096;
		}
		client_bench(&c, sizes, nsizes, iters);
	} else {
		usage(argv[0]);
	}
	client_bye(&c);
	printf("client: %s\n", failures ? "FAILED" : "done");
	return failures ? 1 : 0;
}
