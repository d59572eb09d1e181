// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * cbrpc-bench: the same calls made by reference (a handle to the argument
 * in the caller's session heap; the server READs what it needs) and by
 * value (the argument copied into the request, one SEND), over the same
 * library, between two machines (docs/cbrpc.md "Figures").
 *
 *   cbrpc-bench server [-d DEV] -a ADDR [-p PORT]
 *   cbrpc-bench client [-d DEV] -a ADDR [-p PORT] [-t SECONDS] [--quick]
 *                      [--sweep] [--no-shutdown]
 *
 * The server process runs two servers: A on PORT, B on PORT + 1. A serves
 * every call; a chained call A forwards to B (by reference: the handle, B
 * reads the client's memory itself; by value: A copies the argument into
 * its own request to B). The client measures, one after the other, each
 * for SECONDS (default 2; --quick: 0.5 and no sweep), by value and by
 * reference taking turns in 5 rounds (their latencies pooled):
 *
 *   null        a call without arguments, one at a time (latency) and 16
 *               outstanding (rate)
 *   sparse      a 1 MiB argument, 64 bytes of it changed before each call,
 *               of which the server reads those 64 bytes
 *   unchanged   a 1 MiB argument, the same on every call; the server has
 *               all of it (by reference: from its cache after the first call)
 *               and reads 16 samples of 64 bytes
 *   chained     a 1 MiB argument changed before each call, passed to A, which
 *               passes it on to B; B touches every 64-byte line of it
 *   --sweep     an argument of 64 B to 1 MiB changed before each call; the
 *               server touches every 64-byte line of it: where passing by
 *               reference gets faster than by value (the inline threshold)
 *
 * Every reply carries the sum of what the server read, and the client
 * checks it against the argument (every call; with whole-argument reads
 * every 16th): a wrong byte is a failure. Exit status 0, 1 on any error.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbrpc.h"

enum { OP_NULL = 1, OP_READ, OP_CHAIN, OP_SHUTDOWN };

/* what the server reads of the argument */
enum { READ_SPARSE = 0, READ_SAMPLES = 1, READ_LINES = 2 };

#define ARG_MAX (1u << 20)
#define SPARSE_LEN 64
#define SAMPLES 16
#define DEPTH 16

static int spin_us;	/* --spin-us: every session's and server's */

/* the head of every OP_READ/OP_CHAIN request's inline data; by value, the
 * argument follows it */
struct bench_req {
	uint64_t offset;	/* READ_SPARSE: where the 64 bytes are */
	uint64_t length;	/* the argument's length */
	uint32_t mode;
	uint32_t reserved;
};

#define VALUE_INLINE (sizeof(struct bench_req) + ARG_MAX)

/* ------------------------------------------------------------ the reading */

static uint64_t sum64(const uint8_t *p, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s;
}

/* The sum of what mode MODE reads of the LENGTH bytes at P (OFFSET: where
 * a sparse read is). */
static uint64_t digest(const uint8_t *p, uint64_t length, uint32_t mode, uint64_t offset)
{
	uint64_t s = 0, v;

	switch (mode) {
	case READ_SPARSE:
		return sum64(p + offset, SPARSE_LEN);
	case READ_SAMPLES:
		for (unsigned int k = 0; k < SAMPLES; k++)
			s += sum64(p + (length - SPARSE_LEN) * k / (SAMPLES - 1), SPARSE_LEN);
		return s;
	default:
		for (uint64_t i = 0; i + 8 <= length; i += 64) {
			memcpy(&v, p + i, 8);
			s += v;
		}
		return s;
	}
}

static bool req_valid(const struct bench_req *r)
{
	if (r->length < SPARSE_LEN || r->length > ARG_MAX || r->mode > READ_LINES)
		return false;
	return r->mode != READ_SPARSE || r->offset <= r->length - SPARSE_LEN;
}

/* ------------------------------------------------------------------ server */

struct bench_server {
	struct cbrpc_ctx *ctx;
	struct cbrpc_server *srv;
	pthread_t thread;
	/* server A only: its sessions with B, opened on the first chained call */
	struct cbrpc_ctx *next_ctx;
	struct cbrpc_session *next_ref, *next_value;
	const char *dev, *next_host, *next_port;
};

static struct bench_server servers[2];	/* A, B */

/* The argument of a request: by reference, the range a mode needs, pulled
 * by cbrpc_deref(); by value, where it is in the request. */
static int bench_read(struct cbrpc_req *req, uint64_t *sum)
{
	size_t len;
	const uint8_t *in = cbrpc_req_inline(req, &len);
	struct bench_req r;
	struct cbrpc_handle h;
	const void *data;
	int ret;

	if (len < sizeof(r))
		return -CBRPC_EINVAL;
	memcpy(&r, in, sizeof(r));
	if (!req_valid(&r))
		return -CBRPC_EINVAL;
	if (cbrpc_req_nhandles(req) == 0) {
		if (len != sizeof(r) + r.length)
			return -CBRPC_EINVAL;
		*sum = digest(in + sizeof(r), r.length, r.mode, r.offset);
		return 0;
	}
	ret = cbrpc_req_handle(req, 0, &h);
	if (ret)
		return ret;
	if (h.length != r.length)
		return -CBRPC_EINVAL;
	if (r.mode == READ_SPARSE) {
		ret = cbrpc_deref(req, &h, r.offset, SPARSE_LEN, &data);
		if (!ret)
			*sum = sum64(data, SPARSE_LEN);
		return ret;
	}
	ret = cbrpc_deref(req, &h, 0, r.length, &data);
	if (!ret)
		*sum = digest(data, r.length, r.mode, 0);
	return ret;
}

static int next_connect(struct bench_server *a)
{
	struct cbrpc_session_attr value = { .depth = DEPTH, .max_inline = VALUE_INLINE,
					    .spin_us = spin_us };
	int ret = 0;

	if (!a->next_ctx)
		ret = cbrpc_ctx_create(a->dev, &a->next_ctx);
	if (!ret && !a->next_ref)
		ret = cbrpc_connect(a->next_ctx, a->next_host, a->next_port, NULL, &a->next_ref);
	if (!ret && !a->next_value)
		ret = cbrpc_connect(a->next_ctx, a->next_host, a->next_port, &value,
				    &a->next_value);
	return ret;
}

/* Server A's chained call: pass the argument on to B. */
static int bench_chain(struct cbrpc_req *req, struct bench_server *a, uint64_t *sum)
{
	struct cbrpc_call_args args = { .op = OP_READ };
	struct cbrpc_result *res;
	struct cbrpc_handle h;
	size_t len;
	const void *in = cbrpc_req_inline(req, &len);
	int ret = next_connect(a);

	if (ret)
		return ret;
	res = malloc(sizeof(*res));
	if (!res)
		return -CBRPC_ENOMEM;
	args.inline_data = in;
	args.inline_len = len;
	if (cbrpc_req_nhandles(req)) {
		ret = cbrpc_req_forward(req, 0, &h);
		if (ret)
			goto out;
		args.nhandles = 1;
		args.handles = &h;
		ret = cbrpc_call(a->next_ref, &args, res, 10000);
	} else {
		ret = cbrpc_call(a->next_value, &args, res, 10000);
	}
	if (!ret && res->status)
		ret = res->status;
	if (!ret && res->inline_len == sizeof(*sum))
		memcpy(sum, res->inline_data, sizeof(*sum));
	else if (!ret)
		ret = -CBRPC_EPROTO;
out:
	free(res);
	return ret;
}

static int handler(struct cbrpc_req *req, void *arg)
{
	struct bench_server *me = arg;
	uint64_t sum = 0;
	int ret;

	switch (cbrpc_req_op(req)) {
	case OP_NULL:
		return 0;
	case OP_READ:
		ret = bench_read(req, &sum);
		break;
	case OP_CHAIN:
		if (me != &servers[0])
			return -CBRPC_ENOOP;
		ret = bench_chain(req, me, &sum);
		break;
	case OP_SHUTDOWN:
		cbrpc_server_stop(servers[0].srv);
		cbrpc_server_stop(servers[1].srv);
		return 0;
	default:
		return -CBRPC_ENOOP;
	}
	return ret ? ret : cbrpc_reply_inline(req, &sum, sizeof(sum));
}

static void *server_thread(void *arg)
{
	struct bench_server *b = arg;

	return (void *)(intptr_t)cbrpc_server_run(b->srv, -1);
}

static int server_main(const char *dev, const char *addr, int port)
{
	struct cbrpc_server_attr attr = { .depth = DEPTH, .max_inline = VALUE_INLINE,
					  .spin_us = spin_us };
	char ports[2][16];
	int ret;

	snprintf(ports[0], sizeof(ports[0]), "%d", port);
	snprintf(ports[1], sizeof(ports[1]), "%d", port + 1);
	for (int i = 0; i < 2; i++) {
		ret = cbrpc_ctx_create(dev, &servers[i].ctx);
		if (!ret)
			ret = cbrpc_server_create(servers[i].ctx, addr, ports[i], &attr, handler,
						  &servers[i], &servers[i].srv);
		if (ret) {
			fprintf(stderr, "cbrpc-bench: server on port %s: %s\n", ports[i],
				cbrpc_strerror(ret));
			return 1;
		}
	}
	servers[0].dev = dev;
	servers[0].next_host = addr;
	servers[0].next_port = ports[1];
	printf("cbrpc-bench: servers on ports %s (A) and %s (B)\n", ports[0], ports[1]);
	fflush(stdout);
	if (pthread_create(&servers[1].thread, NULL, server_thread, &servers[1])) {
		fprintf(stderr, "cbrpc-bench: thread: failed\n");
		return 1;
	}
	ret = cbrpc_server_run(servers[0].srv, -1);
	cbrpc_server_stop(servers[1].srv);
	pthread_join(servers[1].thread, NULL);
	cbrpc_disconnect(servers[0].next_ref);
	cbrpc_disconnect(servers[0].next_value);
	cbrpc_ctx_destroy(servers[0].next_ctx);
	for (int i = 0; i < 2; i++) {
		cbrpc_server_destroy(servers[i].srv);
		cbrpc_ctx_destroy(servers[i].ctx);
	}
	return ret ? 1 : 0;
}

/* ------------------------------------------------------------------ client */

struct client {
	struct cbrpc_ctx *ctx;
	struct cbrpc_heap *heap;
	struct cbrpc_session *ref, *value, *b;	/* to A by reference / by value; to B */
	struct cbrpc_handle arg;	/* the argument by reference */
	uint8_t *argp;			/* its bytes in the heap */
	uint8_t *vbuf;			/* by value: struct bench_req, then the argument */
	struct cbrpc_result res;
	double seconds;
	uint64_t rng;
	int errors;
};

struct figure {
	double p50_us, p99_us, ops;
	unsigned long calls;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t next_rand(struct client *c)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One kind of call, by reference or by value. */
struct cell {
	const char *name;
	uint32_t op;		/* OP_NULL, OP_READ, OP_CHAIN */
	uint32_t mode;
	uint64_t length;
	bool changed;		/* 64 bytes change before every call */
};

/* Make one call of CELL; check the server's sum when CHECK. */
static int one_call(struct client *c, const struct cell *cell, bool by_ref, bool check)
{
	struct bench_req r = { .length = cell->length, .mode = cell->mode };
	struct cbrpc_call_args a = { .op = cell->op };
	uint8_t *arg = by_ref ? c->argp : c->vbuf + sizeof(r);
	uint64_t want, got;
	int ret;

	if (cell->op != OP_NULL) {
		if (cell->changed) {
			uint64_t at = next_rand(c) % (cell->length - SPARSE_LEN + 1);

			for (unsigned int i = 0; i < SPARSE_LEN; i += 8) {
				uint64_t v = next_rand(c);

				memcpy(arg + at + i, &v, 8);
			}
			r.offset = at;
			if (by_ref && cbrpc_mark_changed(c->heap, &c->arg))
				return -CBRPC_EINVAL;
		}
		if (by_ref) {
			struct cbrpc_handle h;

			if (cbrpc_handle_slice(&c->arg, 0, cell->length, CBRPC_H_READ | CBRPC_H_FORWARD,
					       &h))
				return -CBRPC_EINVAL;
			a.nhandles = 1;
			a.handles = &h;
			a.inline_data = &r;
			a.inline_len = sizeof(r);
			ret = cbrpc_call(c->ref, &a, &c->res, 10000);
		} else {
			memcpy(c->vbuf, &r, sizeof(r));
			a.inline_data = c->vbuf;
			a.inline_len = sizeof(r) + cell->length;
			ret = cbrpc_call(c->value, &a, &c->res, 10000);
		}
	} else {
		ret = cbrpc_call(by_ref ? c->ref : c->value, &a, &c->res, 10000);
	}
	if (!ret && c->res.status)
		ret = c->res.status;
	if (ret || cell->op == OP_NULL || !check)
		return ret;
	if (c->res.inline_len != sizeof(got))
		return -CBRPC_EPROTO;
	memcpy(&got, c->res.inline_data, sizeof(got));
	want = digest(arg, cell->length, cell->mode, r.offset);
	if (got != want) {
		fprintf(stderr, "cbrpc-bench: %s by %s: the server read sum %" PRIu64
			", the argument's is %" PRIu64 "\n", cell->name,
			by_ref ? "reference" : "value", got, want);
		return -CBRPC_EPROTO;
	}
	return 0;
}

#define ROUNDS 5	/* by value and by reference take turns, to share the host's moods */

struct samples {
	double *lat;	/* microseconds */
	size_t n, cap;
	double busy;	/* seconds measured */
};

/* Calls one at a time for SECONDS, their latencies added to S. */
static int measure(struct client *c, const struct cell *cell, bool by_ref, double seconds,
		   struct samples *s)
{
	double start = now_s(), end = start + seconds;
	int ret = 0;

	/* warm: the unchanged argument is pulled once here */
	for (int i = 0; i < 2 && !ret; i++)
		ret = one_call(c, cell, by_ref, true);
	start = now_s();
	end = start + seconds;
	while (!ret) {
		double t0 = now_s(), t1;
		bool check = cell->mode != READ_LINES || s->n % 16 == 0;

		ret = one_call(c, cell, by_ref, check);
		t1 = now_s();
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 4096;
			double *more = realloc(s->lat, cap * sizeof(*more));

			if (!more)
				return -CBRPC_ENOMEM;
			s->lat = more;
			s->cap = cap;
		}
		s->lat[s->n++] = (t1 - t0) * 1e6;
		if (t1 >= end)
			break;
	}
	s->busy += now_s() - start;
	return ret;
}

static void summarize(struct samples *s, struct figure *f)
{
	qsort(s->lat, s->n, sizeof(*s->lat), cmp_double);
	f->calls = s->n;
	f->p50_us = s->n ? s->lat[s->n / 2] : 0;
	f->p99_us = s->n ? s->lat[s->n * 99 / 100] : 0;
	f->ops = s->busy > 0 ? s->n / s->busy : 0;
	free(s->lat);
	*s = (struct samples){ 0 };
}

/* Null calls, DEPTH outstanding, for c->seconds: calls per second. */
static int measure_rate(struct client *c, bool by_ref, struct figure *f)
{
	struct cbrpc_session *s = by_ref ? c->ref : c->value;
	struct cbrpc_call_args a = { .op = OP_NULL };
	struct cbrpc_call *calls[DEPTH];
	unsigned long n = 0;
	double start = now_s(), end = start + c->seconds / ROUNDS;
	int ret = 0;

	for (int i = 0; i < DEPTH && !ret; i++)
		ret = cbrpc_call_start(s, &a, &calls[i]);
	for (unsigned int i = 0; !ret; i = (i + 1) % DEPTH) {
		ret = cbrpc_call_wait(calls[i], 10000, &c->res);
		cbrpc_call_free(calls[i]);
		calls[i] = NULL;
		if (!ret && c->res.status)
			ret = c->res.status;
		n++;
		if (ret || now_s() >= end) {
			for (unsigned int k = 0; k < DEPTH; k++) {
				if (calls[k] && !ret)
					ret = cbrpc_call_wait(calls[k], 10000, &c->res);
				cbrpc_call_free(calls[k]);
				calls[k] = NULL;
				n += !ret;
			}
			break;
		}
		ret = cbrpc_call_start(s, &a, &calls[i]);
	}
	f->calls = n;
	f->ops = n / (now_s() - start);
	f->p50_us = f->p99_us = 0;
	return ret;
}

static void print_row(const char *what, const struct figure *v, const struct figure *r)
{
	printf("%-28s %9.1f %9.1f %9.0f   %9.1f %9.1f %9.0f   %7.2fx\n", what, v->p50_us,
	       v->p99_us, v->ops, r->p50_us, r->p99_us, r->ops, v->p50_us / r->p50_us);
	fflush(stdout);
}

static int fail(const char *what, bool by_ref, int ret)
{
	fprintf(stderr, "cbrpc-bench: %s by %s: %s\n", what, by_ref ? "reference" : "value",
		cbrpc_strerror(ret));
	return 1;
}

/* Both forms of CELL in ROUNDS turns, by value first; their figures in V and R. */
static int pair(struct client *c, const struct cell *cell, struct figure *v,
		struct figure *r)
{
	struct samples sv = { 0 }, sr = { 0 };
	int ret = 0;
	bool by_ref = false;

	for (int k = 0; k < 2 * ROUNDS && !ret; k++) {
		by_ref = k % 2;
		ret = measure(c, cell, by_ref, c->seconds / ROUNDS, by_ref ? &sr : &sv);
	}
	summarize(&sv, v);
	summarize(&sr, r);
	if (ret)
		return fail(cell->name, by_ref, ret);
	print_row(cell->name, v, r);
	return 0;
}

static void target(const char *what, double got, const char *cmp, double want)
{
	bool met = cmp[0] == '<' ? got <= want : got >= want;

	printf("target %-34s %7.2fx (%s %.1fx): %s\n", what, got, cmp, want,
	       met ? "met" : "NOT met");
}

static int client_main(const char *dev, const char *addr, int port, double seconds,
		       bool sweep, bool shutdown)
{
	struct cbrpc_session_attr value = { .depth = DEPTH, .max_inline = VALUE_INLINE,
					    .spin_us = spin_us };
	struct cbrpc_session_attr ref = { .depth = DEPTH, .spin_us = spin_us };
	struct client c = { .seconds = seconds, .rng = 0x9e3779b97f4a7c15ull };
	struct figure nv, nr, rv, rr, sv, sr, uv, ur, cv, cr;
	char pa[16], pb[16];
	struct cell null = { "null RPC latency", OP_NULL, 0, 0, false };
	struct cell sparse = { "sparse: 64 B of 1 MiB", OP_READ, READ_SPARSE, ARG_MAX, true };
	struct cell same = { "unchanged 1 MiB", OP_READ, READ_SAMPLES, ARG_MAX, false };
	struct cell chain = { "chained 1 MiB (A -> B)", OP_CHAIN, READ_LINES, ARG_MAX, true };
	int ret;

	snprintf(pa, sizeof(pa), "%d", port);
	snprintf(pb, sizeof(pb), "%d", port + 1);
	c.vbuf = calloc(1, VALUE_INLINE);
	ret = c.vbuf ? cbrpc_ctx_create(dev, &c.ctx) : -CBRPC_ENOMEM;
	if (!ret)
		ret = cbrpc_heap_create(c.ctx, 2 * ARG_MAX, 0, &c.heap);
	if (!ret)
		ret = cbrpc_alloc(c.heap, ARG_MAX, CBRPC_H_READ | CBRPC_H_FORWARD, &c.arg,
				  (void **)&c.argp);
	if (!ret) {
		for (size_t i = 0; i < ARG_MAX; i += 8) {
			uint64_t v = next_rand(&c);

			memcpy(c.argp + i, &v, 8);
			memcpy(c.vbuf + sizeof(struct bench_req) + i, &v, 8);
		}
		ret = cbrpc_mark_changed(c.heap, &c.arg);
	}
	if (ret) {
		fprintf(stderr, "cbrpc-bench: setup on %s: %s\n", dev ? dev : "(any)",
			cbrpc_strerror(ret));
		return 1;
	}
	/* B first: A's chained calls need the client's session with B */
	if ((ret = cbrpc_connect(c.ctx, addr, pb, &ref, &c.b)) ||
	    (ret = cbrpc_connect(c.ctx, addr, pa, &ref, &c.ref)) ||
	    (ret = cbrpc_connect(c.ctx, addr, pa, &value, &c.value))) {
		fprintf(stderr, "cbrpc-bench: connect to %s: %s\n", addr, cbrpc_strerror(ret));
		return 1;
	}
	printf("cbrpc-bench: %s -> %s ports %s/%s, %.1f s per figure, QD1 unless said\n",
	       dev ? dev : "(any)", addr, pa, pb, seconds);
	printf("%-28s %29s   %29s   %8s\n", "", "by value (copied)", "by reference (handle)",
	       "value/ref");
	printf("%-28s %9s %9s %9s   %9s %9s %9s   %8s\n", "call", "p50 us", "p99 us", "calls/s",
	       "p50 us", "p99 us", "calls/s", "p50");
	if (pair(&c, &null, &nv, &nr))
		return 1;
	rv.ops = rr.ops = 0;
	for (int k = 0; k < 2 * ROUNDS; k++) {
		struct figure f;

		ret = measure_rate(&c, k % 2, &f);
		if (ret)
			return fail("null RPC rate", k % 2, ret);
		if (k % 2)
			rr.ops += f.ops / ROUNDS;
		else
			rv.ops += f.ops / ROUNDS;
	}
	printf("%-28s %9s %9s %9.0f   %9s %9s %9.0f   %7.2fx\n", "null RPC rate, 16 in flight",
	       "-", "-", rv.ops, "-", "-", rr.ops, rr.ops / rv.ops);
	if (pair(&c, &sparse, &sv, &sr) || pair(&c, &same, &uv, &ur) ||
	    pair(&c, &chain, &cv, &cr))
		return 1;
	target("null RPC latency, ref/value", nr.p50_us / nv.p50_us, "<=", 1.1);
	target("null RPC rate, value/ref", rv.ops / rr.ops, "<=", 1.1);
	target("sparse 64 B of 1 MiB, value/ref", sv.p50_us / sr.p50_us, ">=", 10);
	target("unchanged 1 MiB, value/ref", uv.p50_us / ur.p50_us, ">=", 20);
	printf("chained 1 MiB: by reference %.2fx faster than by value (no target)\n",
	       cv.p50_us / cr.p50_us);
	if (sweep) {
		static const uint64_t sizes[] = { 64, 256, 1024, 2048, 4096, 16384, 65536,
						  262144, ARG_MAX };
		uint64_t crossover = 0;

		printf("sweep: an argument changed before every call, the server touches "
		       "every 64-byte line\n");
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			char what[40];
			struct cell cell = { what, OP_READ, READ_LINES, sizes[k], true };
			struct figure v, r;

			snprintf(what, sizeof(what), "sweep %" PRIu64 " B", sizes[k]);
			if (pair(&c, &cell, &v, &r))
				return 1;
			if (!crossover && r.p50_us < v.p50_us)
				crossover = sizes[k];
		}
		if (crossover)
			printf("inline threshold: by reference is faster from %" PRIu64
			       " B on (a changed argument the server reads whole)\n", crossover);
		else
			printf("inline threshold: by value was faster at every size up to 1 MiB\n");
	}
	if (shutdown) {
		struct cbrpc_call_args a = { .op = OP_SHUTDOWN };

		cbrpc_call(c.ref, &a, &c.res, 10000);
	}
	cbrpc_disconnect(c.value);
	cbrpc_disconnect(c.ref);
	cbrpc_disconnect(c.b);
	cbrpc_heap_destroy(c.heap, 5000);
	cbrpc_ctx_destroy(c.ctx);
	free(c.vbuf);
	printf("cbrpc-bench: done\n");
	return 0;
}

static int usage(const char *prog)
{
	fprintf(stderr, "usage: %s server [-d DEV] -a ADDR [-p PORT] [--spin-us US]\n"
		"       %s client [-d DEV] -a ADDR [-p PORT] [-t SECONDS] [--quick] "
		"[--sweep] [--no-shutdown] [--spin-us US]\n"
		"  --spin-us: the sessions' and servers' spin_us (0: the library's "
		"default, <0: never)\n", prog, prog);
	return 2;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *addr = NULL;
	int port = 7490;
	double seconds = 2;
	bool sweep = false, quick = false, shutdown = true;

	if (argc < 2)
		return usage(argv[0]);
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			quick = true;
		else if (!strcmp(argv[i], "--sweep"))
			sweep = true;
		else if (!strcmp(argv[i], "--no-shutdown"))
			shutdown = false;
		else if (!strcmp(argv[i], "--spin-us") && i + 1 < argc)
			spin_us = atoi(argv[++i]);
		else
			return usage(argv[0]);
	}
	if (port <= 0 || port > 65534 || seconds <= 0 || seconds > 600)
		return usage(argv[0]);
	if (quick) {
		seconds = 0.5;
		sweep = false;
	}
	if (!strcmp(argv[1], "server") && addr)
		return server_main(dev, addr, port);
	if (!strcmp(argv[1], "client") && addr)
		return client_main(dev, addr, port, seconds, sweep, shutdown);
	return usage(argv[0]);
}
