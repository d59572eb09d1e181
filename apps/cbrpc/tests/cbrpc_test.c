// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cbrpc_test: functional tests of libcbrpc over real RDMA (loopback in one
 * guest: the servers are child processes of this program on the same
 * device).
 *
 *   cbrpc_test [-d DEVICE] [-a ADDR] [-p PORT] [TEST...]
 *   cbrpc_test --server PORT [-d DEVICE] [-a ADDR] [--spin-us US]
 *   cbrpc_test --remote HOST1 HOST2 [-d DEVICE] [-p PORT] TEST...
 *   cbrpc_test --vanish HOST [-d DEVICE] [-p PORT]
 *
 * --remote: the two servers run elsewhere (cbrpc_test --server PORT and
 * PORT + 1 on HOST1 and HOST2); tests that start servers themselves
 * (server-dies, spinning) cannot run so. At the end both servers are told
 * to exit.
 *
 * --vanish: start a call on HOST's server whose handler sleeps a minute and
 * wait for it without a timeout while HOST's machine goes away (the test
 * powers it off): the keepalive must end the call with CBRPC_EDISCONNECTED
 * (exit 0); "vanish: STATUS after MS ms" says what came, and when.
 *
 * Without TEST every test runs. Each prints "ok NAME" or "FAIL NAME: why";
 * the last line is "cbrpc_test: N passed, M failed" and the exit status is
 * non-zero on any failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "cbrpc.h"
#include "internal.h"	/* remote-access-error re-registers a heap region itself */
#include "wire.h"	/* the garbage test speaks the wire protocol itself */

enum op {
	OP_ECHO = 1,		/* reply: inline bytes XOR 0x5a */
	OP_SUM,			/* sum of handle 0's bytes [inline: offset, length] */
	OP_FILL,		/* write pattern into handle 0: inline struct fill */
	OP_STATS,		/* reply: struct cbrpc_server_stats */
	OP_SLEEP,		/* inline: ms; then deref handle 0 if any */
	OP_KEEP,		/* remember handle 0 */
	OP_USE_KEPT,		/* deref the remembered handle */
	OP_CHAIN,		/* inline struct chain: forward handle 0 to another server */
	OP_FORGE,		/* deref a forged variant of handle 0: inline struct forge */
	OP_SHUTDOWN,		/* the server exits */
	OP_SUM_INLINE,		/* sum_bytes() of the inline data */
};

/* the servers allow sessions this much inline data (arguments by value) */
#define VALUE_MAX (256u << 10)

struct range { uint64_t offset, length; };
struct fill { uint64_t offset, length; uint8_t seed; };
struct chain {			/* the next server's OP_SUM (or OP_FILL with FILL) */
	char host[40];
	char port[16];
	uint32_t raw;		/* pass the handle on without cbrpc_req_forward() */
	uint32_t op;
	struct fill fill;
};
struct forge { uint32_t what; uint64_t offset, length; };
enum { FORGE_LONGER = 1, FORGE_BEFORE, FORGE_RKEY, FORGE_REGION, FORGE_RANGE };

static const char *dev, *addr = "127.0.0.1";
static const char *host1, *host2;	/* the servers' addresses */
static int base_port = 7471;
static int server_spin_us;	/* --server: its spin_us */
static int passed, failed;

static void report(const char *name, const char *fmt, ...)
{
	va_list ap;

	if (!fmt) {
		printf("ok %s\n", name);
		passed++;
	} else {
		printf("FAIL %s: ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		failed++;
	}
	fflush(stdout);
}

#define CHECK(cond, ...) do { if (!(cond)) { report(name, __VA_ARGS__); return; } } while (0)
#define CHECK_RC(call, want) do { int rc_ = (call); \
	if (rc_ != (want)) { report(name, "%s: %d (%s), want %d (%s)", #call, rc_, \
			     cbrpc_strerror(rc_), (want), cbrpc_strerror(want)); return; } } while (0)

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ server */

static struct cbrpc_server *the_server;
static struct cbrpc_ctx *server_ctx;
static struct cbrpc_handle kept;
static struct { char port[16]; struct cbrpc_session *s; } next_hop;

static uint64_t sum_bytes(const uint8_t *p, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += p[i] * (uint64_t)(i % 251 + 1);
	return s;
}

static int reply_u64(struct cbrpc_req *req, uint64_t v)
{
	return cbrpc_reply_inline(req, &v, sizeof(v));
}

static int op_sum(struct cbrpc_req *req, const struct cbrpc_handle *h)
{
	struct range rg = { 0, h->length };
	size_t len;
	const void *in = cbrpc_req_inline(req, &len), *data;
	int ret;

	if (len == sizeof(rg))
		memcpy(&rg, in, sizeof(rg));
	ret = cbrpc_deref(req, h, rg.offset, rg.length, &data);
	if (ret)
		return ret;
	return reply_u64(req, sum_bytes(data, rg.length));
}

static int op_chain(struct cbrpc_req *req)
{
	struct cbrpc_call_args a = { .op = OP_SUM, .nhandles = 1 };
	struct cbrpc_result *res;
	struct cbrpc_handle h;
	struct chain c;
	size_t len;
	const void *in = cbrpc_req_inline(req, &len);
	int ret;

	if (len != sizeof(c))
		return -CBRPC_EINVAL;
	memcpy(&c, in, sizeof(c));
	c.host[sizeof(c.host) - 1] = 0;
	c.port[sizeof(c.port) - 1] = 0;
	ret = c.raw ? cbrpc_req_handle(req, 0, &h) : cbrpc_req_forward(req, 0, &h);
	if (ret)
		return ret;
	if (!next_hop.s || strcmp(next_hop.port, c.port) || !cbrpc_session_alive(next_hop.s)) {
		cbrpc_disconnect(next_hop.s);
		next_hop.s = NULL;
		ret = cbrpc_connect(server_ctx, c.host, c.port, NULL, &next_hop.s);
		if (ret)
			return ret;
		snprintf(next_hop.port, sizeof(next_hop.port), "%s", c.port);
	}
	res = malloc(sizeof(*res));
	if (!res)
		return -CBRPC_ENOMEM;
	a.handles = &h;
	if (c.op == OP_FILL) {
		a.op = OP_FILL;
		a.inline_data = &c.fill;
		a.inline_len = sizeof(c.fill);
	}
	ret = cbrpc_call(next_hop.s, &a, res, 10000);
	if (!ret) {
		ret = res->status;
		if (res->written & 1)	/* the next server wrote into our caller's object */
			cbrpc_req_mark_written(req, 0);
		if (!ret)
			ret = cbrpc_reply_inline(req, res->inline_data, res->inline_len);
	}
	free(res);
	return ret;
}

static int op_forge(struct cbrpc_req *req, struct cbrpc_handle h)
{
	struct forge f;
	size_t len;
	const void *in = cbrpc_req_inline(req, &len), *data;

	if (len != sizeof(f))
		return -CBRPC_EINVAL;
	memcpy(&f, in, sizeof(f));
	switch (f.what) {
	case FORGE_LONGER: h.length += 1u << 30; break;
	case FORGE_BEFORE: h.addr -= 4096; h.length += 4096; break;
	case FORGE_RKEY: h.rkey ^= 0x100; break;
	case FORGE_REGION: h.region += 1000; break;
	default: break;
	}
	return cbrpc_deref(req, &h, f.offset, f.length, &data);
}

static int handler(struct cbrpc_req *req, void *arg)
{
	struct cbrpc_handle h = { 0 };
	bool have = cbrpc_req_handle(req, 0, &h) == 0;
	size_t len;
	const uint8_t *in = cbrpc_req_inline(req, &len);

	(void)arg;
	switch (cbrpc_req_op(req)) {
	case OP_ECHO: {
		uint8_t out[CBRPC_INLINE_MAX];

		for (size_t i = 0; i < len; i++)
			out[i] = in[i] ^ 0x5a;
		return cbrpc_reply_inline(req, out, len);
	}
	case OP_SUM:
		return have ? op_sum(req, &h) : -CBRPC_EINVAL;
	case OP_FILL: {
		struct fill f;
		uint8_t *buf;
		int ret;

		if (!have || len != sizeof(f))
			return -CBRPC_EINVAL;
		memcpy(&f, in, sizeof(f));
		if (f.length > (64u << 20))
			return -CBRPC_E2BIG;
		buf = malloc(f.length ? f.length : 1);
		if (!buf)
			return -CBRPC_ENOMEM;
		for (uint64_t i = 0; i < f.length; i++)
			buf[i] = (uint8_t)(f.seed + i * 7);
		ret = cbrpc_write(req, &h, f.offset, buf, f.length);
		free(buf);
		return ret;
	}
	case OP_STATS: {
		struct cbrpc_server_stats st;

		cbrpc_server_get_stats(the_server, &st);
		return cbrpc_reply_inline(req, &st, sizeof(st));
	}
	case OP_SLEEP: {
		uint32_t ms = 0;
		const void *data;

		if (len == sizeof(ms))
			memcpy(&ms, in, sizeof(ms));
		usleep(ms * 1000u);
		return have ? cbrpc_deref(req, &h, 0, h.length, &data) : 0;
	}
	case OP_KEEP:
		if (!have)
			return -CBRPC_EINVAL;
		kept = h;
		return 0;
	case OP_USE_KEPT: {
		const void *data;

		return cbrpc_deref(req, &kept, 0, kept.length ? kept.length : 1, &data);
	}
	case OP_CHAIN:
		return op_chain(req);
	case OP_FORGE:
		return have ? op_forge(req, h) : -CBRPC_EINVAL;
	case OP_SHUTDOWN:
		cbrpc_server_stop(the_server);
		return 0;
	case OP_SUM_INLINE:
		return reply_u64(req, sum_bytes(in, len));
	default:
		return -CBRPC_ENOOP;
	}
}

static void on_term(int sig)
{
	(void)sig;
	cbrpc_server_stop(the_server);
}

static int server_main(const char *port)
{
	int ret = cbrpc_ctx_create(dev, &server_ctx);

	if (ret) {
		fprintf(stderr, "server: context: %s\n", cbrpc_strerror(ret));
		return 1;
	}
	struct cbrpc_server_attr sa = { .max_inline = VALUE_MAX, .spin_us = server_spin_us };

	ret = cbrpc_server_create(server_ctx, addr, port, &sa, handler, NULL, &the_server);
	if (ret) {
		fprintf(stderr, "server: %s: %s\n", port, cbrpc_strerror(ret));
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	ret = cbrpc_server_run(the_server, -1);
	cbrpc_disconnect(next_hop.s);
	cbrpc_server_destroy(the_server);
	cbrpc_ctx_destroy(server_ctx);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------------ client */

struct peer { pid_t pid; char port[16]; };

/* A server in a child process; SPIN: its spin_us (0: the default). */
static struct peer spawn_server_spin(int port, int spin)
{
	struct peer p = { 0 };
	char spin_us[16];

	snprintf(p.port, sizeof(p.port), "%d", port);
	snprintf(spin_us, sizeof(spin_us), "%d", spin);
	p.pid = fork();
	if (p.pid == 0) {
		char *argv[] = { "cbrpc_test", "--server", p.port, "-a", (char *)addr,
				 "--spin-us", spin_us, dev ? "-d" : NULL, (char *)dev, NULL };

		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return p;
}

static struct peer spawn_server(int port)
{
	return spawn_server_spin(port, 0);
}

static void stop_server(struct peer *p, int sig)
{
	if (p->pid > 0) {
		kill(p->pid, sig);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

/* Wait MS at most for a server to exit by itself: 0, or -CBRPC_ETIMEDOUT. */
static int wait_exit(struct peer *p, int ms)
{
	for (int64_t end = now_ms() + ms; now_ms() < end; usleep(10000))
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
			p->pid = 0;
			return 0;
		}
	return -CBRPC_ETIMEDOUT;
}

/* Connect, retrying while the server starts (90 s at most): refused while
 * nobody listens, timed out while its address does not answer ARP yet (a
 * server guest still booting). */
static int connect_attr(struct cbrpc_ctx *ctx, const char *host, const char *port,
			const struct cbrpc_session_attr *attr, struct cbrpc_session **s)
{
	int64_t end = now_ms() + 90000;
	int ret;

	do {
		ret = cbrpc_connect(ctx, host, port, attr, s);
		if (ret != -CBRPC_ECONNREFUSED && ret != -CBRPC_ETIMEDOUT)
			return ret;
		usleep(100000);
	} while (now_ms() < end);
	return ret;
}

static int connect_retry(struct cbrpc_ctx *ctx, const char *host, const char *port,
			 struct cbrpc_session **s)
{
	return connect_attr(ctx, host, port, NULL, s);
}

static struct peer s1, s2;
static struct cbrpc_ctx *ctx;
static struct cbrpc_heap *heap;
static struct cbrpc_session *sess1, *sess2;
static struct cbrpc_result res;

static int call(struct cbrpc_session *s, uint32_t op, const struct cbrpc_handle *h,
		unsigned int nh, const void *in, size_t inlen)
{
	struct cbrpc_call_args a = { .op = op, .nhandles = nh, .handles = h,
				     .inline_data = in, .inline_len = inlen };

	memset(&res, 0, sizeof(res));
	return cbrpc_call(s, &a, &res, 20000);
}

static uint64_t res_u64(void)
{
	uint64_t v = 0;

	if (res.inline_len == sizeof(v))
		memcpy(&v, res.inline_data, sizeof(v));
	return v;
}

static int get_stats(struct cbrpc_session *s, struct cbrpc_server_stats *st)
{
	int ret = call(s, OP_STATS, NULL, 0, NULL, 0);

	if (!ret && res.inline_len == sizeof(*st))
		memcpy(st, res.inline_data, sizeof(*st));
	return ret ? ret : (res.inline_len == sizeof(*st) ? 0 : -CBRPC_EPROTO);
}

static void fill_random(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void test_inline(void)
{
	const char *name = "inline";
	static uint8_t in[CBRPC_INLINE_MAX + 1];
	size_t sizes[] = { 0, 1, 100, CBRPC_INLINE_MAX };

	fill_random(in, sizeof(in), 7);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		CHECK_RC(call(sess1, OP_ECHO, NULL, 0, in, sizes[k]), 0);
		CHECK(res.status == 0 && res.inline_len == sizes[k], "echo %zu: status %d len %zu",
		      sizes[k], res.status, res.inline_len);
		for (size_t i = 0; i < sizes[k]; i++)
			CHECK(res.inline_data[i] == (in[i] ^ 0x5a), "echo %zu: byte %zu", sizes[k], i);
	}
	CHECK_RC(call(sess1, OP_ECHO, NULL, 0, in, CBRPC_INLINE_MAX + 1), -CBRPC_E2BIG);
	CHECK_RC(call(sess1, 999, NULL, 0, NULL, 0), 0);
	CHECK(res.status == -CBRPC_ENOOP, "unknown op: status %d", res.status);
	report(name, NULL);
}

/* A session for arguments by value: requests of up to its max_inline. */
static void test_value(void)
{
	const char *name = "value-arguments";
	struct cbrpc_session_attr big = { .max_inline = VALUE_MAX }, over = big;
	struct cbrpc_session *vs = NULL;
	uint8_t *in = malloc(VALUE_MAX + 1);
	size_t sizes[] = { CBRPC_INLINE_MAX + 1, 65536, VALUE_MAX };

	CHECK(in != NULL, "malloc");
	fill_random(in, VALUE_MAX + 1, 11);
	CHECK_RC(cbrpc_connect(ctx, host1, s1.port, &big, &vs), 0);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		CHECK_RC(call(vs, OP_SUM_INLINE, NULL, 0, in, sizes[k]), 0);
		CHECK(res.status == 0 && res_u64() == sum_bytes(in, sizes[k]),
		      "%zu bytes by value: status %d, sum %" PRIu64 " want %" PRIu64, sizes[k],
		      res.status, res_u64(), sum_bytes(in, sizes[k]));
	}
	/* the session's limit, and the default session's */
	CHECK_RC(call(vs, OP_SUM_INLINE, NULL, 0, in, VALUE_MAX + 1), -CBRPC_E2BIG);
	CHECK_RC(call(sess1, OP_SUM_INLINE, NULL, 0, in, CBRPC_INLINE_MAX + 1), -CBRPC_E2BIG);
	/* a full queue of large requests: every receive buffer is posted again */
	for (int round = 0; round < 3; round++) {
		struct cbrpc_call *c[16];
		struct cbrpc_call_args a = { .op = OP_SUM_INLINE, .inline_data = in,
					     .inline_len = VALUE_MAX };

		for (int i = 0; i < 16; i++)
			CHECK_RC(cbrpc_call_start(vs, &a, &c[i]), 0);
		for (int i = 0; i < 16; i++) {
			CHECK_RC(cbrpc_call_wait(c[i], 20000, &res), 0);
			CHECK(res.status == 0 && res_u64() == sum_bytes(in, VALUE_MAX),
			      "queued call %d: status %d", i, res.status);
			cbrpc_call_free(c[i]);
		}
	}
	cbrpc_disconnect(vs);
	/* more than the server allows: refused at connect */
	over.max_inline = 2 * VALUE_MAX;
	vs = NULL;
	CHECK_RC(cbrpc_connect(ctx, host1, s1.port, &over, &vs), -CBRPC_ECONNREFUSED);
	over.max_inline = CBRPC_VALUE_MAX + 1;
	CHECK_RC(cbrpc_connect(ctx, host1, s1.port, &over, &vs), -CBRPC_EINVAL);
	free(in);
	report(name, NULL);
}

static void test_sum_and_cache(void)
{
	const char *name = "version-cache";
	struct cbrpc_server_stats a, b, c, d;
	struct cbrpc_handle h;
	uint8_t *p;
	size_t n = 64 * 1024;

	CHECK_RC(cbrpc_alloc(heap, n, CBRPC_H_READ, &h, (void **)&p), 0);
	fill_random(p, n, 1);
	CHECK_RC(get_stats(sess1, &a), 0);
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p, n), "sum: status %d, %" PRIu64
	      " want %" PRIu64, res.status, res_u64(), sum_bytes(p, n));
	CHECK_RC(get_stats(sess1, &b), 0);
	CHECK(b.read_bytes - a.read_bytes == n, "first call read %" PRIu64 " bytes, want %zu",
	      b.read_bytes - a.read_bytes, n);
	/* unchanged: served from the cache, nothing transferred */
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p, n), "second sum wrong");
	CHECK_RC(get_stats(sess1, &c), 0);
	CHECK(c.read_bytes == b.read_bytes && c.reads == b.reads,
	      "unchanged argument read again (%" PRIu64 " bytes)", c.read_bytes - b.read_bytes);
	CHECK(c.cache_hits > b.cache_hits, "no cache hit counted");
	/* changed and marked: read again, the new contents */
	fill_random(p, n, 2);
	CHECK_RC(cbrpc_mark_changed(heap, &h), 0);
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p, n), "sum after change: %" PRIu64
	      " want %" PRIu64, res_u64(), sum_bytes(p, n));
	CHECK_RC(get_stats(sess1, &d), 0);
	CHECK(d.read_bytes - c.read_bytes == n, "changed argument: read %" PRIu64 " bytes",
	      d.read_bytes - c.read_bytes);
	printf("# version-cache: first call %" PRIu64 " B read, unchanged 0 B, changed %" PRIu64
	       " B\n", b.read_bytes - a.read_bytes, d.read_bytes - c.read_bytes);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

static void test_sparse(void)
{
	const char *name = "sparse-read";
	struct cbrpc_server_stats a, b;
	struct cbrpc_handle h;
	struct range rg = { 512 * 1024 + 40, 64 };
	uint8_t *p;
	size_t n = 1 << 20;

	CHECK_RC(cbrpc_alloc(heap, n, CBRPC_H_READ, &h, (void **)&p), 0);
	fill_random(p, n, 3);
	CHECK_RC(get_stats(sess1, &a), 0);
	CHECK_RC(call(sess1, OP_SUM, &h, 1, &rg, sizeof(rg)), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p + rg.offset, rg.length),
	      "range sum: status %d", res.status);
	CHECK_RC(get_stats(sess1, &b), 0);
	CHECK(b.read_bytes - a.read_bytes >= 64 && b.read_bytes - a.read_bytes <= 512,
	      "64 B of 1 MiB: %" PRIu64 " B read", b.read_bytes - a.read_bytes);
	printf("# sparse-read: 64 B of a 1 MiB argument: %" PRIu64 " B read\n",
	       b.read_bytes - a.read_bytes);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

static void test_large(void)
{
	const char *name = "large-argument";
	struct cbrpc_server_stats a, b;
	struct cbrpc_handle h;
	struct range rg = { 5u << 20, 1u << 20 };
	uint8_t *p;
	size_t n = 12u << 20;	/* over half the server's 16 MiB cache: not cached */

	CHECK_RC(cbrpc_alloc(heap, n, CBRPC_H_READ, &h, (void **)&p), 0);
	fill_random(p, n, 13);
	CHECK_RC(get_stats(sess1, &a), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_RC(call(sess1, OP_SUM, &h, 1, &rg, sizeof(rg)), 0);
		CHECK(res.status == 0 && res_u64() == sum_bytes(p + rg.offset, rg.length),
		      "1 MiB of 12 MiB: status %d (%s)", res.status, cbrpc_strerror(res.status));
	}
	CHECK_RC(get_stats(sess1, &b), 0);
	CHECK(b.read_bytes - a.read_bytes == 2 * rg.length, "%" PRIu64 " B read for 2 x 1 MiB",
	      b.read_bytes - a.read_bytes);
	/* the whole object at once does not fit the server's buffers */
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == -CBRPC_E2BIG, "12 MiB at once: %d", res.status);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

static void test_write(void)
{
	const char *name = "write-results";
	struct cbrpc_handle out, old, ro;
	struct fill f = { 100, 5000, 9 };
	uint8_t *p, *q;

	CHECK_RC(cbrpc_alloc(heap, 8192, CBRPC_H_READ | CBRPC_H_WRITE, &out, (void **)&p), 0);
	memset(p, 0xee, 8192);
	old = out;
	CHECK_RC(call(sess1, OP_FILL, &out, 1, &f, sizeof(f)), 0);
	CHECK(res.status == 0 && res.written == 1, "fill: status %d written %#x", res.status,
	      res.written);
	for (size_t i = 0; i < 8192; i++) {
		uint8_t want = i >= f.offset && i < f.offset + f.length ?
			       (uint8_t)(f.seed + (i - f.offset) * 7) : 0xee;

		CHECK(p[i] == want, "byte %zu: %#x want %#x", i, p[i], want);
	}
	/* the written object has a new version: the old handle is stale */
	CHECK_RC(call(sess1, OP_SUM, &old, 1, NULL, 0), -CBRPC_ESTALE);
	CHECK_RC(cbrpc_handle_refresh(heap, &out), 0);
	CHECK(out.version > old.version, "version not bumped");
	CHECK_RC(call(sess1, OP_SUM, &out, 1, NULL, 0), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p, 8192), "sum of written object");
	/* a read-only handle is not written */
	CHECK_RC(cbrpc_alloc(heap, 4096, CBRPC_H_READ, &ro, (void **)&q), 0);
	f.offset = 0;
	f.length = 16;
	CHECK_RC(call(sess1, OP_FILL, &ro, 1, &f, sizeof(f)), 0);
	CHECK(res.status == -CBRPC_EPERM && res.written == 0, "write to read-only: %d",
	      res.status);
	for (int i = 0; i < 16; i++)
		CHECK(q[i] == 0, "read-only object written");
	/* nor beyond its end */
	f.offset = 8000;
	f.length = 500;
	CHECK_RC(call(sess1, OP_FILL, &out, 1, &f, sizeof(f)), 0);
	CHECK(res.status == -CBRPC_ERANGE, "write past the handle: %d", res.status);
	cbrpc_free(heap, &out);
	cbrpc_free(heap, &ro);
	report(name, NULL);
}

static void test_outstanding(void)
{
	const char *name = "outstanding-calls";
	enum { N = 12 };
	struct cbrpc_call *calls[N + 8];
	struct cbrpc_handle h[N];
	uint8_t *p[N];
	struct cbrpc_result *r = malloc(sizeof(*r));
	int k, extra = 0, busy = 0;

	CHECK(r, "no memory");
	for (k = 0; k < N; k++) {
		struct cbrpc_call_args a = { .op = OP_SUM, .nhandles = 1, .handles = &h[k] };

		CHECK_RC(cbrpc_alloc(heap, 4096 + k * 100, CBRPC_H_READ, &h[k], (void **)&p[k]), 0);
		fill_random(p[k], h[k].length, 100 + k);
		CHECK_RC(cbrpc_call_start(sess1, &a, &calls[k]), 0);
	}
	/* the session's depth is 16: the 17th outstanding call is refused */
	for (;; extra++) {
		struct cbrpc_call_args a = { .op = OP_ECHO };
		int ret = cbrpc_call_start(sess1, &a, &calls[N + extra]);

		if (ret) {
			busy = ret;
			break;
		}
		if (extra == 7)
			break;
	}
	for (k = N - 1; k >= 0; k--) {
		CHECK_RC(cbrpc_call_wait(calls[k], 20000, r), 0);
		CHECK(r->status == 0 && r->inline_len == 8, "call %d: status %d", k, r->status);
		uint64_t v;

		memcpy(&v, r->inline_data, 8);
		CHECK(v == sum_bytes(p[k], h[k].length), "call %d: wrong sum", k);
		cbrpc_call_free(calls[k]);
	}
	for (int e = 0; e < extra + (busy ? 0 : 1); e++) {
		CHECK_RC(cbrpc_call_wait(calls[N + e], 20000, r), 0);
		cbrpc_call_free(calls[N + e]);
	}
	CHECK(busy == -CBRPC_EBUSY && N + extra == 16, "call %d of depth 16: %d", N + extra + 1,
	      busy);
	for (k = 0; k < N; k++)
		cbrpc_free(heap, &h[k]);
	free(r);
	report(name, NULL);
}

struct thread_arg { int id; int errors; };

static void *echo_thread(void *p)
{
	struct thread_arg *t = p;
	struct cbrpc_result *r = malloc(sizeof(*r));

	for (int i = 0; i < 25 && r; i++) {
		uint32_t v = (uint32_t)(t->id * 1000 + i);
		struct cbrpc_call_args a = { .op = OP_ECHO, .inline_data = &v, .inline_len = 4 };
		uint32_t back;

		if (cbrpc_call(sess1, &a, r, 20000) || r->inline_len != 4) {
			t->errors++;
			continue;
		}
		memcpy(&back, r->inline_data, 4);
		if ((back ^ 0x5a5a5a5a) != v)
			t->errors++;
	}
	free(r);
	return NULL;
}

/* Allocations that grow a heap (announcements to every session) while the
 * other threads call: each new object summed by the server. */
static void *grow_thread(void *p)
{
	struct thread_arg *t = p;
	struct cbrpc_result *r = malloc(sizeof(*r));
	struct cbrpc_heap *hp;

	if (!r || cbrpc_heap_create(ctx, 64 * 1024, 64 * 1024, &hp)) {
		t->errors = 10;
		free(r);
		return NULL;
	}
	for (int i = 0; i < 10; i++) {
		struct cbrpc_handle h;
		struct cbrpc_call_args a = { .op = OP_SUM, .nhandles = 1, .handles = &h };
		uint64_t v = 0;
		uint8_t *obj;

		if (cbrpc_alloc(hp, 40 * 1024, CBRPC_H_READ, &h, (void **)&obj)) {
			t->errors++;
			continue;
		}
		fill_random(obj, h.length, 200 + i);
		if (cbrpc_call(sess1, &a, r, 20000) || r->status || r->inline_len != 8)
			t->errors++;
		else if (memcpy(&v, r->inline_data, 8), v != sum_bytes(obj, h.length))
			t->errors++;
	}
	cbrpc_heap_destroy(hp, 5000);
	free(r);
	return NULL;
}

static void test_threads(void)
{
	const char *name = "threads";
	pthread_t th[5];
	struct thread_arg ta[5];
	int errors = 0;

	for (int i = 0; i < 5; i++) {
		ta[i] = (struct thread_arg){ .id = i };
		pthread_create(&th[i], NULL, i < 4 ? echo_thread : grow_thread, &ta[i]);
	}
	for (int i = 0; i < 5; i++) {
		pthread_join(th[i], NULL);
		errors += ta[i].errors;
	}
	CHECK(errors == 0, "%d of 110 calls from 5 threads failed (4 calling, 1 growing a heap)",
	      errors);
	report(name, NULL);
}

static void test_sessions(void)
{
	const char *name = "sessions";
	struct cbrpc_ctx *c[4] = { 0 };
	struct cbrpc_heap *hp[4] = { 0 };
	struct cbrpc_session *s[4] = { 0 };
	struct cbrpc_handle h[4];
	uint8_t *p[4];
	int i, round;

	for (i = 0; i < 4; i++) {
		CHECK_RC(cbrpc_ctx_create(dev, &c[i]), 0);
		CHECK_RC(cbrpc_heap_create(c[i], 1 << 16, 0, &hp[i]), 0);
		CHECK_RC(cbrpc_alloc(hp[i], 1000 + i, CBRPC_H_READ, &h[i], (void **)&p[i]), 0);
		fill_random(p[i], h[i].length, 50 + i);
		CHECK_RC(cbrpc_connect(c[i], host1, s1.port, NULL, &s[i]), 0);
	}
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 4; i++) {
			CHECK_RC(call(s[i], OP_SUM, &h[i], 1, NULL, 0), 0);
			CHECK(res.status == 0 && res_u64() == sum_bytes(p[i], h[i].length),
			      "session %d round %d: status %d", i, round, res.status);
		}
	}
	/* one context's handle is nothing in another's session */
	CHECK_RC(call(s[0], OP_SUM, &h[1], 1, NULL, 0), 0);
	CHECK(res.status == -CBRPC_EPERM, "other context's handle: %d", res.status);
	for (i = 0; i < 4; i++)
		cbrpc_ctx_destroy(c[i]);
	report(name, NULL);
}

static void test_bounds(void)
{
	const char *name = "bounds";
	struct cbrpc_server_stats a, b;
	struct cbrpc_handle h;
	uint8_t *p;
	struct { uint32_t what; int want; } cases[] = {
		{ FORGE_LONGER, -CBRPC_EBOUNDS }, { FORGE_BEFORE, -CBRPC_EBOUNDS },
		{ FORGE_RKEY, -CBRPC_EBOUNDS }, { FORGE_REGION, -CBRPC_ENOHEAP },
		{ FORGE_RANGE, -CBRPC_ERANGE },
	};

	/* the first object of a fresh heap: FORGE_BEFORE leaves the region */
	struct cbrpc_heap *hp;

	CHECK_RC(cbrpc_heap_create(ctx, 1 << 16, 0, &hp), 0);
	CHECK_RC(cbrpc_alloc(hp, 4096, CBRPC_H_READ, &h, (void **)&p), 0);
	CHECK_RC(get_stats(sess1, &a), 0);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct forge f = { cases[k].what, 0, 64 };

		if (cases[k].what == FORGE_LONGER)
			f.length = 1u << 20;	/* inside the forged length, outside the region */
		if (cases[k].what == FORGE_RANGE) {
			f.offset = 4000;
			f.length = 200;
		}
		CHECK_RC(call(sess1, OP_FORGE, &h, 1, &f, sizeof(f)), 0);
		CHECK(res.status == cases[k].want, "forge %u: %d (%s), want %d", cases[k].what,
		      res.status, cbrpc_strerror(res.status), cases[k].want);
	}
	CHECK_RC(get_stats(sess1, &b), 0);
	CHECK(b.reads == a.reads && b.read_bytes == a.read_bytes,
	      "%" PRIu64 " READs posted for refused handles", b.reads - a.reads);
	CHECK(b.refused - a.refused == 5, "%" PRIu64 " refusals counted", b.refused - a.refused);
	/* the unforged handle still works: nothing broke the session */
	{
		struct forge f = { 0, 0, 4096 };

		CHECK_RC(call(sess1, OP_FORGE, &h, 1, &f, sizeof(f)), 0);
		CHECK(res.status == 0, "plain handle after refusals: %d", res.status);
	}
	cbrpc_heap_destroy(hp, 5000);
	report(name, NULL);
}

static void test_slices(void)
{
	const char *name = "slices";
	struct cbrpc_handle h, part, bad;
	struct range rg = { 0, 100 };
	struct forge f = { 0, 90, 20 };
	uint8_t *p;

	CHECK_RC(cbrpc_alloc(heap, 8192, CBRPC_H_READ | CBRPC_H_WRITE, &h, (void **)&p), 0);
	fill_random(p, 8192, 17);
	/* bytes 1000..1099, read-only: a part of the object, fewer rights */
	CHECK_RC(cbrpc_handle_slice(&h, 1000, 100, CBRPC_H_READ, &part), 0);
	CHECK_RC(cbrpc_handle_slice(&h, 8000, 200, CBRPC_H_READ, &bad), -CBRPC_ERANGE);
	CHECK_RC(cbrpc_handle_slice(&part, 0, 10, CBRPC_H_READ | CBRPC_H_FORWARD, &bad),
		 -CBRPC_EPERM);
	CHECK_RC(call(sess1, OP_SUM, &part, 1, &rg, sizeof(rg)), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p + 1000, 100), "slice sum: %d",
	      res.status);
	/* the server reads within the slice only, and may not write it */
	CHECK_RC(call(sess1, OP_FORGE, &part, 1, &f, sizeof(f)), 0);
	CHECK(res.status == -CBRPC_ERANGE, "range past the slice: %d", res.status);
	{
		struct fill fl = { 0, 10, 1 };

		CHECK_RC(call(sess1, OP_FILL, &part, 1, &fl, sizeof(fl)), 0);
		CHECK(res.status == -CBRPC_EPERM, "write through a read-only slice: %d",
		      res.status);
	}
	/* a slice follows its object's version */
	CHECK_RC(cbrpc_mark_changed(heap, &h), 0);
	CHECK_RC(call(sess1, OP_SUM, &part, 1, &rg, sizeof(rg)), -CBRPC_ESTALE);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

/* The client's memory registration changes behind the library's back (the
 * region registered again, the old rkey gone): the server's READ is refused
 * by the client's device; that session is closed, the server goes on. */
static void test_remote_access_error(void)
{
	const char *name = "remote-access-error";
	struct cbrpc_server_stats st;
	struct cbrpc_session *s;
	struct cbrpc_heap *hp;
	struct cbrpc_region *r;
	struct ibv_mr *mr;
	struct cbrpc_handle h;
	uint8_t *p;

	CHECK_RC(cbrpc_heap_create(ctx, 1 << 16, 0, &hp), 0);
	CHECK_RC(cbrpc_alloc(hp, 4096, CBRPC_H_READ, &h, (void **)&p), 0);
	CHECK_RC(cbrpc_connect(ctx, host1, s1.port, NULL, &s), 0);
	r = hp->regions;
	mr = ibv_reg_mr(ctx->pd, r->base, r->length, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr && mr->rkey != r->mr->rkey, "registering the region again failed");
	ibv_dereg_mr(r->mr);
	r->mr = mr;	/* the heap's own teardown deregisters this one */
	CHECK_RC(call(s, OP_SUM, &h, 1, NULL, 0), -CBRPC_EDISCONNECTED);
	CHECK(!cbrpc_session_alive(s), "session alive after the remote access error");
	cbrpc_disconnect(s);
	CHECK_RC(get_stats(sess1, &st), 0);
	CHECK(st.last_error == -CBRPC_EREMOTE, "server's last error %d (%s)", st.last_error,
	      cbrpc_strerror(st.last_error));
	CHECK_RC(call(sess1, OP_ECHO, NULL, 0, "ok", 2), 0);
	cbrpc_heap_destroy(hp, 5000);
	report(name, NULL);
}

static void test_growth(void)
{
	const char *name = "heap-growth";
	struct cbrpc_heap *hp;
	struct cbrpc_handle h[4];
	uint8_t *p[4];
	uint32_t regions = 0;

	CHECK_RC(cbrpc_heap_create(ctx, 64 * 1024, 64 * 1024, &hp), 0);
	for (int i = 0; i < 4; i++) {
		CHECK_RC(cbrpc_alloc(hp, 40 * 1024, CBRPC_H_READ, &h[i], (void **)&p[i]), 0);
		fill_random(p[i], h[i].length, 70 + i);
		if (i && h[i].region != h[i - 1].region)
			regions++;
	}
	CHECK(regions == 3, "4 objects of 40 KiB in 64 KiB regions: %u new regions", regions);
	for (int i = 0; i < 4; i++) {
		CHECK_RC(call(sess1, OP_SUM, &h[i], 1, NULL, 0), 0);
		CHECK(res.status == 0 && res_u64() == sum_bytes(p[i], h[i].length),
		      "object %d in region %u: status %d", i, h[i].region, res.status);
	}
	CHECK_RC(cbrpc_heap_destroy(hp, 5000), 0);
	/* its handles are no longer this context's objects */
	CHECK_RC(call(sess1, OP_SUM, &h[0], 1, NULL, 0), -CBRPC_EINVAL);
	report(name, NULL);
}

static void test_stale(void)
{
	const char *name = "stale-version";
	struct cbrpc_handle h, old;
	uint8_t *p;

	CHECK_RC(cbrpc_alloc(heap, 2048, CBRPC_H_READ, &h, (void **)&p), 0);
	fill_random(p, 2048, 5);
	CHECK_RC(call(sess1, OP_KEEP, &h, 1, NULL, 0), 0);
	old = h;
	CHECK_RC(cbrpc_mark_changed(heap, &h), 0);
	/* the client refuses to pass the old handle */
	CHECK_RC(call(sess1, OP_SUM, &old, 1, NULL, 0), -CBRPC_ESTALE);
	/* the server, once it saw the new version, refuses the old one it kept */
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == 0, "sum: %d", res.status);
	CHECK_RC(call(sess1, OP_USE_KEPT, NULL, 0, NULL, 0), 0);
	CHECK(res.status == -CBRPC_ESTALE, "kept old handle: %d (%s)", res.status,
	      cbrpc_strerror(res.status));
	/* a freed and reallocated object never matches the cache */
	CHECK_RC(cbrpc_free(heap, &h), 0);
	CHECK_RC(cbrpc_alloc(heap, 2048, CBRPC_H_READ, &old, (void **)&p), 0);
	CHECK(old.addr != h.addr || old.version > h.version, "reused object kept its version");
	cbrpc_free(heap, &old);
	report(name, NULL);
}

static void test_chain(void)
{
	const char *name = "chained-call";
	struct cbrpc_server_stats a, b;
	struct cbrpc_handle h, nf;
	struct chain c = { .raw = 0 };
	uint8_t *p;
	struct cbrpc_ctx *lone;
	struct cbrpc_heap *lh;
	struct cbrpc_session *ls;

	snprintf(c.host, sizeof(c.host), "%s", host2);
	snprintf(c.port, sizeof(c.port), "%s", s2.port);
	CHECK_RC(cbrpc_alloc(heap, 32768, CBRPC_H_READ | CBRPC_H_FORWARD, &h, (void **)&p), 0);
	fill_random(p, h.length, 11);
	CHECK_RC(get_stats(sess2, &a), 0);
	CHECK_RC(call(sess1, OP_CHAIN, &h, 1, &c, sizeof(c)), 0);
	if (res.status) {	/* where it failed: the second server's view */
		int status = res.status;

		CHECK_RC(get_stats(sess2, &b), 0);
		CHECK(0, "chain: status %d (%s); second server: %" PRIu64 " requests, %" PRIu64
		      " READs, %" PRIu64 " B, last error %d", status, cbrpc_strerror(status),
		      b.requests - a.requests, b.reads - a.reads, b.read_bytes - a.read_bytes,
		      b.last_error);
	}
	CHECK(res_u64() == sum_bytes(p, h.length), "chain: wrong sum");
	CHECK_RC(get_stats(sess2, &b), 0);
	CHECK(b.read_bytes - a.read_bytes == h.length,
	      "the second server read %" PRIu64 " B of the client's memory",
	      b.read_bytes - a.read_bytes);
	/* a result written by the second server straight into the client's heap */
	{
		struct cbrpc_handle out, old;
		uint8_t *q;

		CHECK_RC(cbrpc_alloc(heap, 4096, CBRPC_H_WRITE | CBRPC_H_FORWARD, &out,
				     (void **)&q), 0);
		old = out;
		c.op = OP_FILL;
		c.fill = (struct fill){ 10, 1000, 77 };
		CHECK_RC(call(sess1, OP_CHAIN, &out, 1, &c, sizeof(c)), 0);
		CHECK(res.status == 0 && res.written == 1, "chained write: status %d written %#x",
		      res.status, res.written);
		for (size_t i = 0; i < 4096; i++) {
			uint8_t want = i >= 10 && i < 1010 ? (uint8_t)(77 + (i - 10) * 7) : 0;

			CHECK(q[i] == want, "chained write: byte %zu is %#x, want %#x", i, q[i], want);
		}
		CHECK_RC(call(sess1, OP_CHAIN, &old, 1, &c, sizeof(c)), -CBRPC_ESTALE);
		c.op = 0;
		cbrpc_free(heap, &out);
	}
	/* not forwardable: the first server may not forward it ... */
	CHECK_RC(cbrpc_alloc(heap, 1024, CBRPC_H_READ, &nf, (void **)&p), 0);
	CHECK_RC(call(sess1, OP_CHAIN, &nf, 1, &c, sizeof(c)), 0);
	CHECK(res.status == -CBRPC_EPERM, "forward without CBRPC_H_FORWARD: %d", res.status);
	/* ... and the second refuses it if it does anyway */
	c.raw = 1;
	CHECK_RC(call(sess1, OP_CHAIN, &nf, 1, &c, sizeof(c)), 0);
	CHECK(res.status == -CBRPC_EPERM, "passed on without CBRPC_H_FORWARD: %d", res.status);
	c.raw = 0;
	/* an owner without a session at the second server */
	CHECK_RC(cbrpc_ctx_create(dev, &lone), 0);
	CHECK_RC(cbrpc_heap_create(lone, 1 << 16, 0, &lh), 0);
	CHECK_RC(cbrpc_alloc(lh, 512, CBRPC_H_READ | CBRPC_H_FORWARD, &nf, (void **)&p), 0);
	CHECK_RC(cbrpc_connect(lone, host1, s1.port, NULL, &ls), 0);
	CHECK_RC(call(ls, OP_CHAIN, &nf, 1, &c, sizeof(c)), 0);
	CHECK(res.status == -CBRPC_ENOGRANT, "owner unknown to the second server: %d (%s)",
	      res.status, cbrpc_strerror(res.status));
	cbrpc_ctx_destroy(lone);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

static void test_timeout(void)
{
	const char *name = "call-timeout";
	struct cbrpc_call_args a = { .op = OP_SLEEP };
	struct cbrpc_call *c;
	uint32_t ms = 1500;
	int64_t t;

	a.inline_data = &ms;
	a.inline_len = sizeof(ms);
	CHECK_RC(cbrpc_call_start(sess1, &a, &c), 0);
	t = now_ms();
	CHECK_RC(cbrpc_call_wait(c, 200, &res), -CBRPC_ETIMEDOUT);
	t = now_ms() - t;
	CHECK(t >= 150 && t < 1500, "a 200 ms wait took %" PRId64 " ms", t);
	CHECK_RC(cbrpc_call_wait(c, 20000, &res), 0);
	CHECK(res.status == 0, "slept call: %d", res.status);
	cbrpc_call_free(c);
	/* a call given up before its reply: the slot comes back with the reply */
	CHECK_RC(cbrpc_call_start(sess1, &a, &c), 0);
	cbrpc_call_free(c);
	CHECK_RC(call(sess1, OP_ECHO, NULL, 0, "x", 1), 0);
	report(name, NULL);
}

static void test_heap_withdraw(void)
{
	const char *name = "heap-destroy-mid-call";
	struct cbrpc_heap *hp;
	struct cbrpc_handle h;
	struct cbrpc_call_args a = { .op = OP_SLEEP, .nhandles = 1, .handles = &h };
	struct cbrpc_call *c;
	uint32_t ms = 800;
	uint8_t *p;

	a.inline_data = &ms;
	a.inline_len = sizeof(ms);
	CHECK_RC(cbrpc_heap_create(ctx, 1 << 16, 0, &hp), 0);
	CHECK_RC(cbrpc_alloc(hp, 4096, CBRPC_H_READ, &h, (void **)&p), 0);
	CHECK_RC(cbrpc_call_start(sess1, &a, &c), 0);
	usleep(200000);
	/* withdrawn from every session before the memory goes */
	CHECK_RC(cbrpc_heap_destroy(hp, 10000), 0);
	CHECK_RC(cbrpc_call_wait(c, 20000, &res), 0);
	CHECK(res.status == -CBRPC_ENOHEAP, "deref after withdrawal: %d (%s)", res.status,
	      cbrpc_strerror(res.status));
	cbrpc_call_free(c);
	CHECK(cbrpc_session_alive(sess1), "session lost");
	report(name, NULL);
}

static void test_client_disconnect(void)
{
	const char *name = "client-disconnect-mid-call";
	struct cbrpc_server_stats st;
	struct cbrpc_session *s;
	struct cbrpc_handle h;
	struct cbrpc_call_args a = { .op = OP_SLEEP, .nhandles = 1, .handles = &h };
	struct cbrpc_call *c;
	uint32_t ms = 800;
	uint8_t *p;

	a.inline_data = &ms;
	a.inline_len = sizeof(ms);
	CHECK_RC(cbrpc_alloc(heap, 4096, CBRPC_H_READ, &h, (void **)&p), 0);
	CHECK_RC(cbrpc_connect(ctx, host1, s1.port, NULL, &s), 0);
	CHECK_RC(cbrpc_call_start(s, &a, &c), 0);
	usleep(200000);
	CHECK_RC(cbrpc_disconnect(s), 0);
	CHECK_RC(cbrpc_call_wait(c, 1000, &res), -CBRPC_ECANCELED);
	cbrpc_call_free(c);
	usleep(1500000);	/* the handler wakes up and finds the session gone */
	CHECK_RC(get_stats(sess1, &st), 0);
	CHECK(st.last_error == -CBRPC_EDISCONNECTED, "server's last error %d (%s)",
	      st.last_error, cbrpc_strerror(st.last_error));
	CHECK_RC(call(sess1, OP_SUM, &h, 1, NULL, 0), 0);
	CHECK(res.status == 0 && res_u64() == sum_bytes(p, 4096), "server after it: %d",
	      res.status);
	cbrpc_free(heap, &h);
	report(name, NULL);
}

/* --victim PORT: connect, start a call whose handler reads 4 MiB of ours
 * after 200 ms, say so on stdout, wait to be killed. */
static int victim_main(const char *port)
{
	struct cbrpc_ctx *c;
	struct cbrpc_heap *hp;
	struct cbrpc_session *s;
	struct cbrpc_handle h;
	struct cbrpc_call *call;
	uint32_t ms = 200;
	struct cbrpc_call_args a = { .op = OP_SLEEP, .nhandles = 1, .handles = &h,
				     .inline_data = &ms, .inline_len = sizeof(ms) };
	void *p;

	if (cbrpc_ctx_create(dev, &c) || cbrpc_heap_create(c, 4u << 20, 0, &hp) ||
	    cbrpc_alloc(hp, 4u << 20, CBRPC_H_READ, &h, &p) ||
	    cbrpc_connect(c, addr, port, NULL, &s) || cbrpc_call_start(s, &a, &call))
		return 1;
	printf("started\n");
	fflush(stdout);
	pause();
	return 0;
}

static void test_client_dies(void)
{
	const char *name = "client-dies-mid-call";
	struct cbrpc_server_stats a, b;
	int pipefd[2];
	char line[16] = "";
	pid_t pid;
	int64_t t;

	CHECK_RC(get_stats(sess1, &a), 0);
	CHECK(pipe(pipefd) == 0, "pipe");
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "cbrpc_test", "--victim", s1.port, "-a", (char *)addr,
				 dev ? "-d" : NULL, (char *)dev, NULL };

		dup2(pipefd[1], 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pipefd[1]);
	if (read(pipefd[0], line, sizeof(line) - 1) <= 0 || strncmp(line, "started", 7)) {
		close(pipefd[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		CHECK(0, "the victim did not start its call");
	}
	close(pipefd[0]);
	usleep(250000);		/* the handler is reading the victim's 4 MiB now */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* the server gets over it: the next call is served in bounded time */
	t = now_ms();
	CHECK_RC(call(sess1, OP_ECHO, NULL, 0, "alive", 5), 0);
	t = now_ms() - t;
	CHECK(res.inline_len == 5, "echo after the victim");
	CHECK_RC(get_stats(sess1, &b), 0);
	CHECK(b.requests - a.requests >= 3, "the victim's call did not run (%" PRIu64 ")",
	      b.requests - a.requests);
	CHECK(b.last_error == 0 || b.last_error == -CBRPC_EDISCONNECTED ||
	      b.last_error == -CBRPC_EREMOTE || b.last_error == -CBRPC_ETIMEDOUT,
	      "the handler's dereference: %d (%s)", b.last_error, cbrpc_strerror(b.last_error));
	printf("# client-dies-mid-call: the handler's dereference ended with %d (%s); the next "
	       "call served %" PRId64 " ms after the kill\n", b.last_error,
	       b.last_error ? cbrpc_strerror(b.last_error) : "it finished first", t);
	report(name, NULL);
}

static int vanish_main(const char *host)
{
	struct cbrpc_ctx *c;
	struct cbrpc_session *s;
	struct cbrpc_call *call;
	uint32_t ms = 60000;
	struct cbrpc_call_args a = { .op = OP_SLEEP, .inline_data = &ms,
				     .inline_len = sizeof(ms) };
	char port[16];
	int64_t t;
	int ret;

	snprintf(port, sizeof(port), "%d", base_port);
	ret = cbrpc_ctx_create(dev, &c);
	if (!ret)
		ret = connect_retry(c, host, port, &s);
	if (!ret)
		ret = cbrpc_call_start(s, &a, &call);
	if (ret) {
		printf("vanish: setup: %s\n", cbrpc_strerror(ret));
		return 1;
	}
	printf("vanish: call outstanding\n");
	fflush(stdout);
	t = now_ms();
	ret = cbrpc_call_wait(call, -1, &res);
	printf("vanish: %d (%s) after %" PRId64 " ms\n", ret, cbrpc_strerror(ret),
	       now_ms() - t);
	cbrpc_call_free(call);
	cbrpc_ctx_destroy(c);
	return ret == -CBRPC_EDISCONNECTED ? 0 : 1;
}

static void test_server_dies(void)
{
	const char *name = "server-dies";
	struct peer s3 = spawn_server(base_port + 2);
	struct cbrpc_session *s;
	struct cbrpc_call_args a = { .op = OP_SLEEP };
	struct cbrpc_call *c;
	uint32_t ms = 5000;
	int64_t t;
	int ret;

	a.inline_data = &ms;
	a.inline_len = sizeof(ms);
	ret = connect_retry(ctx, addr, s3.port, &s);
	if (ret)
		stop_server(&s3, SIGKILL);
	CHECK_RC(ret, 0);
	ret = cbrpc_call_start(s, &a, &c);
	if (ret)
		stop_server(&s3, SIGKILL);
	CHECK_RC(ret, 0);
	usleep(300000);
	t = now_ms();
	stop_server(&s3, SIGKILL);
	ret = cbrpc_call_wait(c, 15000, &res);
	t = now_ms() - t;
	cbrpc_call_free(c);
	CHECK_RC(ret, -CBRPC_EDISCONNECTED);
	CHECK(t < 10000, "noticed after %" PRId64 " ms", t);
	CHECK(!cbrpc_session_alive(s), "session alive after the server died");
	CHECK_RC(call(s, OP_ECHO, NULL, 0, NULL, 0), -CBRPC_EDISCONNECTED);
	printf("# server-dies: the outstanding call ended %" PRId64 " ms after SIGKILL\n", t);
	cbrpc_disconnect(s);
	report(name, NULL);
}

/*
 * A call that stops the server: the server waits for its reply's
 * acknowledgement, then disconnects and exits. The caller looks only after
 * the server process is gone, when the reply (in the CQ) and the
 * disconnection (on the CM channel) wait side by side: the session is
 * found dead, and the call has its reply all the same.
 */
static void test_server_stops(void)
{
	const char *name = "server-stops";
	struct peer s5 = spawn_server(base_port + 5);
	struct cbrpc_call_args a = { .op = OP_SHUTDOWN };
	struct cbrpc_session *s;
	struct cbrpc_call *c = NULL;
	int ret;

	ret = connect_retry(ctx, addr, s5.port, &s);
	if (ret)
		stop_server(&s5, SIGKILL);
	CHECK_RC(ret, 0);
	ret = cbrpc_call_start(s, &a, &c);
	if (!ret)
		ret = wait_exit(&s5, 5000);
	usleep(200000);		/* its disconnection reaches us */
	/* the session is gone, the call answered all the same */
	if (!ret && cbrpc_session_alive(s))
		ret = -CBRPC_EPROTO;
	if (!ret)
		ret = cbrpc_call_wait(c, 5000, &res);
	cbrpc_call_free(c);
	stop_server(&s5, SIGKILL);
	CHECK_RC(ret, 0);
	CHECK(res.status == 0, "shutdown's status %d", res.status);
	CHECK_RC(call(s, OP_ECHO, NULL, 0, NULL, 0), -CBRPC_EDISCONNECTED);
	cbrpc_disconnect(s);
	report(name, NULL);
}

/*
 * A server and a session that poll their CQs for 20 ms before they sleep:
 * calls back to back (served while both spin), calls outstanding whose
 * handlers READ (the server's wait for a READ spins too), a reply that
 * comes after the caller's spin ran out (it sleeps, and is woken), and a
 * server stopped by a handler while it spins exits.
 */
static void test_spinning(void)
{
	const char *name = "spinning";
	struct cbrpc_session_attr sa = { .spin_us = 20000 };
	struct peer s4 = spawn_server_spin(base_port + 4, 20000);
	struct cbrpc_call *calls[8];
	struct cbrpc_handle h[8];
	struct cbrpc_result *r = malloc(sizeof(*r));
	struct cbrpc_session *s;
	uint8_t in[100], *p[8];
	uint32_t ms = 60;
	int64_t t;
	int ret, k;

	ret = r ? connect_attr(ctx, addr, s4.port, &sa, &s) : -CBRPC_ENOMEM;
	if (ret) {
		stop_server(&s4, SIGKILL);
		free(r);
	}
	CHECK_RC(ret, 0);
	for (k = 0; k < 200 && !ret; k++) {
		fill_random(in, sizeof(in), k);
		ret = call(s, OP_ECHO, NULL, 0, in, sizeof(in));
		for (size_t i = 0; !ret && i < sizeof(in); i++)
			if (res.status || res.inline_len != sizeof(in) || res.inline_data[i] != (in[i] ^ 0x5a))
				ret = -CBRPC_EPROTO;
	}
	for (k = 0; k < 8 && !ret; k++) {
		struct cbrpc_call_args a = { .op = OP_SUM, .nhandles = 1, .handles = &h[k] };

		ret = cbrpc_alloc(heap, 8192 + k * 300, CBRPC_H_READ, &h[k], (void **)&p[k]);
		if (!ret) {
			fill_random(p[k], h[k].length, 300 + k);
			ret = cbrpc_call_start(s, &a, &calls[k]);
		}
		if (ret)
			cbrpc_free(heap, &h[k]);
	}
	for (int j = 0; j < k; j++) {
		uint64_t v = 0;
		int w = cbrpc_call_wait(calls[j], 20000, r);

		if (!w && r->inline_len == 8)
			memcpy(&v, r->inline_data, 8);
		if (!ret && (w || r->status || v != sum_bytes(p[j], h[j].length)))
			ret = w ? w : -CBRPC_EPROTO;
		cbrpc_call_free(calls[j]);
		cbrpc_free(heap, &h[j]);
	}
	free(r);
	if (!ret) {
		t = now_ms();
		ret = call(s, OP_SLEEP, NULL, 0, &ms, sizeof(ms));
		t = now_ms() - t;
		if (!ret && (res.status || t < ms))
			ret = -CBRPC_EPROTO;
	}
	if (!ret)
		ret = call(s, OP_SHUTDOWN, NULL, 0, NULL, 0);
	if (!ret)
		ret = wait_exit(&s4, 5000);
	cbrpc_disconnect(s);
	stop_server(&s4, SIGKILL);
	CHECK_RC(ret, 0);
	report(name, NULL);
}

static void test_refused(void)
{
	const char *name = "connect-refused";
	struct cbrpc_session *s;
	char port[16];
	int64_t t = now_ms();

	snprintf(port, sizeof(port), "%d", base_port + 3);
	CHECK_RC(cbrpc_connect(ctx, addr, port, NULL, &s), -CBRPC_ECONNREFUSED);
	CHECK(now_ms() - t < 6000, "took %" PRId64 " ms", now_ms() - t);
	report(name, NULL);
}


/* A raw RDMA-CM peer speaking (bad) cbrpc wire messages to server S1. */
struct raw {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t buf[2][CBRPC_MSG_SIZE];	/* receive, send */
};

static int raw_connect(struct raw *r, const void *pdata, uint8_t plen)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct rdma_conn_param cp = { .private_data = pdata, .private_data_len = plen,
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };

	memset(r, 0, sizeof(*r));
	if (rdma_getaddrinfo(host1, s1.port, &hints, &ai))
		return -1;
	if (rdma_create_ep(&r->id, ai, NULL, &qa)) {
		rdma_freeaddrinfo(ai);
		return -1;
	}
	rdma_freeaddrinfo(ai);
	r->mr = rdma_reg_msgs(r->id, r->buf, sizeof(r->buf));
	if (!r->mr || rdma_post_recv(r->id, NULL, r->buf[0], CBRPC_MSG_SIZE, r->mr))
		return -1;
	return rdma_connect(r->id, &cp);
}

static void raw_close(struct raw *r)
{
	if (!r->id)
		return;
	/* no rdma_disconnect(): on a synchronous id it waits for an event that a
	 * rejected connection never gets; destroying the id disconnects */
	if (r->mr)
		rdma_dereg_mr(r->mr);
	rdma_destroy_ep(r->id);
	r->id = NULL;
}

/* Send LEN bytes of the send buffer; wait up to 5 s for a reply (its length)
 * or an error completion (-1: the server dropped the session). */
static int raw_exchange(struct raw *r, size_t len)
{
	struct ibv_wc wc;
	int64_t end = now_ms() + 5000;
	int got = 0;

	if (rdma_post_send(r->id, NULL, r->buf[1], len, r->mr, 0))
		return -1;
	while (now_ms() < end) {
		int n;

		/* send completions too: an unpolled send CQ would overflow */
		while (r->id->send_cq != r->id->recv_cq &&
		       (n = ibv_poll_cq(r->id->send_cq, 1, &wc)) > 0)
			if (wc.status != IBV_WC_SUCCESS)
				return -1;
		n = ibv_poll_cq(r->id->recv_cq, 1, &wc);
		if (n == 0) {
			usleep(1000);
			continue;
		}
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			return -1;
		if (wc.opcode == IBV_WC_RECV) {
			got = (int)wc.byte_len;
			if (rdma_post_recv(r->id, NULL, r->buf[0], CBRPC_MSG_SIZE, r->mr))
				return -1;
			return got;
		}
	}
	return -2;	/* no answer */
}

static void test_garbage(void)
{
	const char *name = "malformed-input";
	struct cbrpc_wire_conn good = { .magic = htole32(CBRPC_CONN_MAGIC),
					.version = htole16(CBRPC_WIRE_VERSION),
					.depth = htole16(4), .owner = htole64(12345) };
	struct cbrpc_wire_conn bad = good;
	struct cbrpc_wire_hdr *h;
	const struct cbrpc_wire_hdr *rep;
	struct raw r;
	struct { const char *what; uint8_t type, n; uint16_t inl; size_t len; } msgs[] = {
		{ "too many handles", CBRPC_MSG_REQ, 200, 0, sizeof(*h) + 16 * 48 },
		{ "length not the handles'", CBRPC_MSG_REQ, 2, 0, sizeof(*h) + 48 },
		{ "inline past the end", CBRPC_MSG_REQ, 0, 3000, sizeof(*h) + 100 },
		{ "unknown type", 77, 0, 0, sizeof(*h) },
		{ "region list cut", CBRPC_MSG_HEAP_ADD, 3, 0, sizeof(*h) + 24 },
		{ "empty region", CBRPC_MSG_HEAP_ADD, 1, 0, sizeof(*h) + 24 },
	};
	int ret;

	/* a connect request that is not cbrpc's is rejected */
	bad.magic = 0xdeadbeef;
	ret = raw_connect(&r, &bad, sizeof(bad));
	raw_close(&r);
	CHECK(ret != 0, "bad private data accepted");
	ret = raw_connect(&r, &good, 4);
	raw_close(&r);
	CHECK(ret != 0, "short private data accepted");
	bad = good;
	bad.depth = htole16(1000);
	ret = raw_connect(&r, &bad, sizeof(bad));
	raw_close(&r);
	CHECK(ret != 0, "depth 1000 accepted");

	CHECK(raw_connect(&r, &good, sizeof(good)) == 0, "raw connect failed");
	h = (void *)r.buf[1];
	for (size_t k = 0; k < sizeof(msgs) / sizeof(msgs[0]); k++) {
		memset(r.buf[1], 0, CBRPC_MSG_SIZE);
		*h = (struct cbrpc_wire_hdr){ .magic = htole32(CBRPC_WIRE_MAGIC),
					      .type = msgs[k].type, .nhandles = msgs[k].n,
					      .inline_len = htole32(msgs[k].inl),
					      .call_id = htole32(0x100 + (uint32_t)k) };
		ret = raw_exchange(&r, msgs[k].len);
		rep = (const void *)r.buf[0];
		if (ret != (int)sizeof(*rep) || rep->type != CBRPC_MSG_REP ||
		    le32toh(rep->call_id) != 0x100 + k ||
		    (int32_t)le32toh((uint32_t)rep->status) != -CBRPC_EPROTO) {
			raw_close(&r);
			CHECK(0, "%s: reply %d bytes, status %d", msgs[k].what, ret,
			      ret > 0 ? (int32_t)le32toh((uint32_t)rep->status) : 0);
		}
	}
	/* a message too short for a header: the server drops the session */
	ret = raw_exchange(&r, 6);
	raw_close(&r);
	CHECK(ret == -1 || ret == -2, "6-byte message answered (%d)", ret);
	/* and serves everyone else as before */
	CHECK_RC(call(sess1, OP_ECHO, NULL, 0, "ok", 2), 0);
	CHECK(res.inline_len == 2, "echo after garbage");
	report(name, NULL);
}

static const struct { const char *name; void (*fn)(void); } tests[] = {
	{ "inline", test_inline },
	{ "value-arguments", test_value },
	{ "version-cache", test_sum_and_cache },
	{ "sparse-read", test_sparse },
	{ "large-argument", test_large },
	{ "write-results", test_write },
	{ "outstanding-calls", test_outstanding },
	{ "threads", test_threads },
	{ "sessions", test_sessions },
	{ "bounds", test_bounds },
	{ "slices", test_slices },
	{ "remote-access-error", test_remote_access_error },
	{ "heap-growth", test_growth },
	{ "stale-version", test_stale },
	{ "chained-call", test_chain },
	{ "call-timeout", test_timeout },
	{ "heap-destroy-mid-call", test_heap_withdraw },
	{ "client-disconnect-mid-call", test_client_disconnect },
	{ "client-dies-mid-call", test_client_dies },
	{ "server-dies", test_server_dies },
	{ "server-stops", test_server_stops },
	{ "spinning", test_spinning },
	{ "connect-refused", test_refused },
	{ "malformed-input", test_garbage },
};

static bool selected(const char *name, int argc, char **argv, int first)
{
	if (first >= argc)
		return true;
	for (int i = first; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *server_port = NULL, *victim_port = NULL, *vanish_host = NULL;
	int i, ret;
	int64_t t0 = now_ms();

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--server") && i + 1 < argc)
			server_port = argv[++i];
		else if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			base_port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--spin-us") && i + 1 < argc)
			server_spin_us = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--victim") && i + 1 < argc)
			victim_port = argv[++i];
		else if (!strcmp(argv[i], "--vanish") && i + 1 < argc)
			vanish_host = argv[++i];
		else if (!strcmp(argv[i], "--remote") && i + 2 < argc) {
			host1 = argv[++i];
			host2 = argv[++i];
		}
		else {
			fprintf(stderr, "usage: %s [-d DEV] [-a ADDR] [-p PORT] [--remote HOST1 HOST2] [TEST...]\n"
				"       %s --server PORT [-d DEV] [-a ADDR] [--spin-us US]\n", argv[0], argv[0]);
			return 2;
		}
	}
	if (server_port)
		return server_main(server_port);
	if (victim_port)
		return victim_main(victim_port);
	if (vanish_host)
		return vanish_main(vanish_host);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (host1) {
		if (i == argc || selected("server-dies", argc, argv, i) ||
		    selected("client-dies-mid-call", argc, argv, i)) {
			fprintf(stderr, "--remote: name the tests (not server-dies, "
				"client-dies-mid-call)\n");
			return 2;
		}
		snprintf(s1.port, sizeof(s1.port), "%d", base_port);
		snprintf(s2.port, sizeof(s2.port), "%d", base_port + 1);
	} else {
		host1 = host2 = addr;
		s1 = spawn_server(base_port);
		s2 = spawn_server(base_port + 1);
	}
	ret = cbrpc_ctx_create(dev, &ctx);
	if (!ret)
		ret = cbrpc_heap_create(ctx, 4 << 20, 4 << 20, &heap);
	if (!ret)
		ret = connect_retry(ctx, host1, s1.port, &sess1);
	if (!ret)
		ret = connect_retry(ctx, host2, s2.port, &sess2);
	if (ret) {
		printf("FAIL setup: %s\n", cbrpc_strerror(ret));
		stop_server(&s1, SIGKILL);
		stop_server(&s2, SIGKILL);
		return 1;
	}
	report("connect", NULL);
	for (size_t k = 0; k < sizeof(tests) / sizeof(tests[0]); k++) {
		if (!selected(tests[k].name, argc, argv, i))
			continue;
		int64_t t = now_ms();

		tests[k].fn();
		printf("# %s: %" PRId64 " ms\n", tests[k].name, now_ms() - t);
	}
	if (s1.pid == 0) {	/* remote servers: tell them to exit */
		call(sess1, OP_SHUTDOWN, NULL, 0, NULL, 0);
		call(sess2, OP_SHUTDOWN, NULL, 0, NULL, 0);
	}
	cbrpc_ctx_destroy(ctx);
	stop_server(&s1, SIGTERM);
	stop_server(&s2, SIGTERM);
	printf("cbrpc_test: %d passed, %d failed (%" PRId64 " ms)\n", passed, failed,
	       now_ms() - t0);
	return failed ? 1 : 0;
}
