// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Session heaps: registered regions and a first-fit allocator over them.
 * The allocator's records live outside the registered memory, so a peer
 * writing into an object cannot corrupt them.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ALIGN 64

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static void region_wire(const struct cbrpc_region *r, struct cbrpc_wire_region *w)
{
	w->addr = htole64((uint64_t)(uintptr_t)r->base);
	w->length = htole64(r->length);
	w->rkey = htole32(r->mr->rkey);
	w->id = htole32(r->id);
}

/* Announce or withdraw REGIONS to every session; a session that fails is
 * closed. ctx->lock held. */
static int regions_to_sessions(struct cbrpc_ctx *ctx, uint8_t type,
			       const struct cbrpc_wire_region *w, unsigned int n,
			       int timeout_ms)
{
	int ret = 0;

	for (struct cbrpc_session *s = ctx->sessions; s; s = s->next) {
		if (s->dead)	/* closed already: nobody to tell */
			continue;
		for (unsigned int i = 0; i < n; i += CBRPC_MAX_REGIONS_PER_MSG) {
			unsigned int k = n - i < CBRPC_MAX_REGIONS_PER_MSG ?
					 n - i : CBRPC_MAX_REGIONS_PER_MSG;
			int r = cbrpc_session_control(s, type, w + i, k,
						      timeout_ms < 0 ? s->timeout_ms : timeout_ms);

			if (r) {
				cbrpc_session_kill(s, r);
				ret = r;
				break;
			}
		}
	}
	return ret;
}

int cbrpc_announce_all(struct cbrpc_ctx *ctx, struct cbrpc_session *s)
{
	struct cbrpc_wire_region w[CBRPC_MAX_REGIONS_PER_MSG];
	unsigned int n = 0;
	int ret;

	for (struct cbrpc_heap *h = ctx->heaps; h; h = h->next) {
		if (h->private)
			continue;
		for (struct cbrpc_region *r = h->regions; r; r = r->next) {
			region_wire(r, &w[n++]);
			if (n == CBRPC_MAX_REGIONS_PER_MSG) {
				ret = cbrpc_session_control(s, CBRPC_MSG_HEAP_ADD, w, n, s->timeout_ms);
				if (ret)
					return ret;
				n = 0;
			}
		}
	}
	return n ? cbrpc_session_control(s, CBRPC_MSG_HEAP_ADD, w, n, s->timeout_ms) : 0;
}

/* A new registered region of at least SIZE bytes, linked into HEAP (not yet
 * announced). ctx->lock held. */
static int region_add(struct cbrpc_heap *heap, size_t size, struct cbrpc_region **out)
{
	struct cbrpc_ctx *ctx = heap->ctx;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct cbrpc_region *r = calloc(1, sizeof(*r));
	struct cbrpc_block *b = calloc(1, sizeof(*b));
	int access = IBV_ACCESS_LOCAL_WRITE;

	if (!r || !b)
		goto nomem;
	size = round_up(size, page);
	if (posix_memalign(&r->base, page, size))
		goto nomem;
	memset(r->base, 0, size);
	if (!heap->private)
		access |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	r->mr = ibv_reg_mr(ctx->pd, r->base, size, access);
	if (!r->mr) {
		free(r->base);
		free(r);
		free(b);
		return cbrpc_err(CBRPC_EDEVICE);
	}
	r->heap = heap;
	r->length = size;
	r->id = ctx->next_region++;
	b->region = r;
	b->addr = (uint64_t)(uintptr_t)r->base;
	b->size = size;
	r->blocks = b;
	r->next = heap->regions;
	heap->regions = r;
	*out = r;
	return 0;
nomem:
	free(r);
	free(b);
	return cbrpc_err(CBRPC_ENOMEM);
}

static void region_free(struct cbrpc_region *r)
{
	struct cbrpc_block *b = r->blocks, *next;

	ibv_dereg_mr(r->mr);
	free(r->base);
	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	free(r);
}

static int heap_new(struct cbrpc_ctx *ctx, size_t size, size_t grow, bool private,
		    struct cbrpc_heap **out)
{
	struct cbrpc_heap *heap;
	struct cbrpc_region *r;
	int ret;

	if (!ctx || !out || !size)
		return cbrpc_err(CBRPC_EINVAL);
	*out = NULL;
	heap = calloc(1, sizeof(*heap));
	if (!heap)
		return cbrpc_err(CBRPC_ENOMEM);
	heap->ctx = ctx;
	heap->grow = grow;
	heap->private = private;
	pthread_mutex_lock(&ctx->lock);
	ret = region_add(heap, size, &r);
	if (ret) {
		pthread_mutex_unlock(&ctx->lock);
		free(heap);
		return ret;
	}
	heap->next = ctx->heaps;
	ctx->heaps = heap;
	if (!private) {
		struct cbrpc_wire_region w;

		region_wire(r, &w);
		ret = regions_to_sessions(ctx, CBRPC_MSG_HEAP_ADD, &w, 1, -1);
	}
	pthread_mutex_unlock(&ctx->lock);
	*out = heap;
	return ret;
}

CBRPC_EXPORT int cbrpc_heap_create(struct cbrpc_ctx *ctx, size_t size, size_t grow,
				   struct cbrpc_heap **heap)
{
	return heap_new(ctx, size, grow, false, heap);
}

int cbrpc_heap_create_private(struct cbrpc_ctx *ctx, size_t size, struct cbrpc_heap **heap)
{
	return heap_new(ctx, size, 0, true, heap);
}

CBRPC_EXPORT int cbrpc_heap_destroy(struct cbrpc_heap *heap, int timeout_ms)
{
	struct cbrpc_ctx *ctx;
	struct cbrpc_wire_region *w;
	struct cbrpc_region *r, *next;
	unsigned int n = 0;
	int ret = 0;

	if (!heap)
		return cbrpc_err(CBRPC_EINVAL);
	ctx = heap->ctx;
	pthread_mutex_lock(&ctx->lock);
	for (r = heap->regions; r; r = r->next)
		n++;
	if (!heap->private) {
		w = calloc(n ? n : 1, sizeof(*w));
		if (w) {
			n = 0;
			for (r = heap->regions; r; r = r->next)
				region_wire(r, &w[n++]);
			ret = regions_to_sessions(ctx, CBRPC_MSG_HEAP_DEL, w, n, timeout_ms);
			free(w);
		} else {
			/* cannot tell the servers: make sure none can read */
			while (ctx->sessions)
				cbrpc_session_kill(ctx->sessions, CBRPC_ENOMEM), ret = cbrpc_err(CBRPC_ENOMEM);
		}
	}
	for (struct cbrpc_heap **p = &ctx->heaps; *p; p = &(*p)->next) {
		if (*p == heap) {
			*p = heap->next;
			break;
		}
	}
	for (r = heap->regions; r; r = next) {
		next = r->next;
		for (struct cbrpc_block *b = r->blocks; b; b = b->next)
			if (b->used)
				cbrpc_map_del(&ctx->objects, b->addr);
		region_free(r);
	}
	pthread_mutex_unlock(&ctx->lock);
	free(heap);
	return ret;
}

/* First fit in R for SIZE bytes; splits the block. ctx->lock held. */
static struct cbrpc_block *region_fit(struct cbrpc_region *r, size_t size)
{
	for (struct cbrpc_block *b = r->blocks; b; b = b->next) {
		if (b->used || b->size < size)
			continue;
		if (b->size > size) {
			struct cbrpc_block *rest = calloc(1, sizeof(*rest));

			if (!rest)
				return NULL;
			rest->region = r;
			rest->addr = b->addr + size;
			rest->size = b->size - size;
			rest->prev = b;
			rest->next = b->next;
			if (b->next)
				b->next->prev = rest;
			b->next = rest;
			b->size = size;
		}
		b->used = true;
		return b;
	}
	return NULL;
}

/* Allocate LENGTH bytes, growing HEAP if it may. ctx->lock held. */
static int heap_alloc_locked(struct cbrpc_heap *heap, size_t length, struct cbrpc_block **out)
{
	struct cbrpc_ctx *ctx = heap->ctx;
	size_t size = round_up(length, ALIGN);
	struct cbrpc_block *b = NULL;
	struct cbrpc_region *r;
	int ret = 0;

	if (size < length)
		return cbrpc_err(CBRPC_ENOMEM);
	for (r = heap->regions; r && !b; r = r->next)
		b = region_fit(r, size);
	if (!b) {
		if (!heap->grow)
			return cbrpc_err(CBRPC_ENOMEM);
		ret = region_add(heap, size > heap->grow ? size : heap->grow, &r);
		if (ret)
			return ret;
		if (!heap->private) {
			struct cbrpc_wire_region w;

			region_wire(r, &w);
			/* a session that did not take it is closed: the heap still grew */
			(void)regions_to_sessions(ctx, CBRPC_MSG_HEAP_ADD, &w, 1, -1);
		}
		b = region_fit(r, size);
		if (!b)
			return cbrpc_err(CBRPC_ENOMEM);
	}
	b->length = length;
	b->version = ctx->next_version++;
	memset((void *)(uintptr_t)b->addr, 0, b->size);
	*out = b;
	return 0;
}

static void block_release(struct cbrpc_block *b)
{
	struct cbrpc_block *n = b->next, *p = b->prev;

	b->used = false;
	b->length = 0;
	if (n && !n->used) {
		b->size += n->size;
		b->next = n->next;
		if (n->next)
			n->next->prev = b;
		free(n);
	}
	if (p && !p->used) {
		p->size += b->size;
		p->next = b->next;
		if (b->next)
			b->next->prev = p;
		free(b);
	}
}

CBRPC_EXPORT int cbrpc_alloc(struct cbrpc_heap *heap, size_t length, uint32_t flags,
			     struct cbrpc_handle *handle, void **ptr)
{
	struct cbrpc_ctx *ctx;
	struct cbrpc_block *b;
	int ret;

	if (!heap || !handle || !length || heap->private ||
	    !(flags & (CBRPC_H_READ | CBRPC_H_WRITE)) ||
	    (flags & ~(CBRPC_H_READ | CBRPC_H_WRITE | CBRPC_H_FORWARD)))
		return cbrpc_err(CBRPC_EINVAL);
	ctx = heap->ctx;
	pthread_mutex_lock(&ctx->lock);
	ret = heap_alloc_locked(heap, length, &b);
	if (!ret) {
		ret = cbrpc_map_put(&ctx->objects, b->addr, b);
		if (ret)
			block_release(b);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	*handle = (struct cbrpc_handle){
		.owner = ctx->id,
		.addr = b->addr,
		.length = length,
		.version = b->version,
		.rkey = b->region->mr->rkey,
		.region = b->region->id,
		.flags = flags,
	};
	if (ptr)
		*ptr = (void *)(uintptr_t)b->addr;
	return 0;
}

struct cbrpc_block *cbrpc_heap_get(struct cbrpc_heap *heap, size_t length)
{
	struct cbrpc_block *b = NULL;

	pthread_mutex_lock(&heap->ctx->lock);
	if (heap_alloc_locked(heap, length, &b))
		b = NULL;
	pthread_mutex_unlock(&heap->ctx->lock);
	return b;
}

void cbrpc_heap_put(struct cbrpc_heap *heap, struct cbrpc_block *b)
{
	pthread_mutex_lock(&heap->ctx->lock);
	block_release(b);
	pthread_mutex_unlock(&heap->ctx->lock);
}

struct cbrpc_block *cbrpc_find_block(struct cbrpc_ctx *ctx, const struct cbrpc_handle *h)
{
	struct cbrpc_block *b = cbrpc_map_get(&ctx->objects, h->addr);

	if (h->owner != ctx->id || h->addr + h->length < h->addr)
		return NULL;
	if (b && h->length <= b->length)
		return b;
	/* a slice: search its region */
	for (struct cbrpc_heap *heap = ctx->heaps; heap; heap = heap->next) {
		if (heap->private)
			continue;
		for (struct cbrpc_region *r = heap->regions; r; r = r->next) {
			if (r->id != h->region)
				continue;
			for (b = r->blocks; b; b = b->next)
				if (b->used && b->addr <= h->addr &&
				    h->addr + h->length <= b->addr + b->length)
					return b;
			return NULL;
		}
	}
	return NULL;
}

static struct cbrpc_block *heap_block(struct cbrpc_heap *heap, const struct cbrpc_handle *h)
{
	struct cbrpc_block *b = cbrpc_find_block(heap->ctx, h);

	return b && b->region->heap == heap ? b : NULL;
}

CBRPC_EXPORT int cbrpc_free(struct cbrpc_heap *heap, const struct cbrpc_handle *handle)
{
	struct cbrpc_block *b;

	if (!heap || !handle)
		return cbrpc_err(CBRPC_EINVAL);
	pthread_mutex_lock(&heap->ctx->lock);
	b = cbrpc_map_get(&heap->ctx->objects, handle->addr);
	if (!b || b->region->heap != heap || handle->owner != heap->ctx->id) {
		pthread_mutex_unlock(&heap->ctx->lock);
		return cbrpc_err(CBRPC_EINVAL);
	}
	cbrpc_map_del(&heap->ctx->objects, b->addr);
	block_release(b);
	pthread_mutex_unlock(&heap->ctx->lock);
	return 0;
}

CBRPC_EXPORT void *cbrpc_handle_ptr(struct cbrpc_heap *heap, const struct cbrpc_handle *handle)
{
	void *p = NULL;

	if (!heap || !handle)
		return NULL;
	pthread_mutex_lock(&heap->ctx->lock);
	if (heap_block(heap, handle))
		p = (void *)(uintptr_t)handle->addr;
	pthread_mutex_unlock(&heap->ctx->lock);
	return p;
}

CBRPC_EXPORT int cbrpc_mark_changed(struct cbrpc_heap *heap, struct cbrpc_handle *handle)
{
	struct cbrpc_block *b;

	if (!heap || !handle)
		return cbrpc_err(CBRPC_EINVAL);
	pthread_mutex_lock(&heap->ctx->lock);
	b = heap_block(heap, handle);
	if (b) {
		b->version = heap->ctx->next_version++;
		handle->version = b->version;
	}
	pthread_mutex_unlock(&heap->ctx->lock);
	return b ? 0 : cbrpc_err(CBRPC_EINVAL);
}

CBRPC_EXPORT int cbrpc_handle_refresh(struct cbrpc_heap *heap, struct cbrpc_handle *handle)
{
	struct cbrpc_block *b;

	if (!heap || !handle)
		return cbrpc_err(CBRPC_EINVAL);
	pthread_mutex_lock(&heap->ctx->lock);
	b = heap_block(heap, handle);
	if (b)
		handle->version = b->version;
	pthread_mutex_unlock(&heap->ctx->lock);
	return b ? 0 : cbrpc_err(CBRPC_EINVAL);
}

CBRPC_EXPORT int cbrpc_handle_slice(const struct cbrpc_handle *handle, uint64_t offset,
				    uint64_t length, uint32_t flags,
				    struct cbrpc_handle *slice)
{
	if (!handle || !slice || !length)
		return cbrpc_err(CBRPC_EINVAL);
	if (offset > handle->length || length > handle->length - offset)
		return cbrpc_err(CBRPC_ERANGE);
	if ((flags & ~handle->flags) || !(flags & (CBRPC_H_READ | CBRPC_H_WRITE)))
		return cbrpc_err(CBRPC_EPERM);
	*slice = *handle;
	slice->addr += offset;
	slice->length = length;
	slice->flags = flags;
	return 0;
}
