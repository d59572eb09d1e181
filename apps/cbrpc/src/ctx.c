// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The context: one device, one protection domain, one owner id. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"

static uint64_t random_id(void)
{
	uint64_t id = 0;

	while (!id) {
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = ((uint64_t)cbrpc_now_ms() << 20) ^ (uint64_t)(uintptr_t)&id;
	}
	return id;
}

CBRPC_EXPORT int cbrpc_ctx_create(const char *device, struct cbrpc_ctx **out)
{
	struct cbrpc_ctx *ctx;
	int n = 0, ret = cbrpc_err(CBRPC_EINVAL);

	if (!out)
		return cbrpc_err(CBRPC_EINVAL);
	*out = NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return cbrpc_err(CBRPC_ENOMEM);
	ctx->devices = rdma_get_devices(&n);
	if (!ctx->devices || n == 0)
		goto err;
	for (int i = 0; i < n; i++) {
		if (!device || !strcmp(ibv_get_device_name(ctx->devices[i]->device), device)) {
			ctx->verbs = ctx->devices[i];
			break;
		}
	}
	if (!ctx->verbs)
		goto err;
	ret = cbrpc_err(CBRPC_EDEVICE);
	if (ibv_query_device(ctx->verbs, &ctx->dev_attr))
		goto err;
	ctx->pd = ibv_alloc_pd(ctx->verbs);
	if (!ctx->pd)
		goto err;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->id = random_id();
	ctx->next_version = 1;
	ctx->next_region = 1;
	*out = ctx;
	return 0;
err:
	if (ctx->devices)
		rdma_free_devices(ctx->devices);
	free(ctx);
	return ret;
}

CBRPC_EXPORT void cbrpc_ctx_destroy(struct cbrpc_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->sessions)
		cbrpc_disconnect(ctx->sessions);
	while (ctx->heaps)
		cbrpc_heap_destroy(ctx->heaps, 0);
	cbrpc_map_free(&ctx->objects);
	ibv_dealloc_pd(ctx->pd);
	rdma_free_devices(ctx->devices);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

CBRPC_EXPORT uint64_t cbrpc_ctx_id(const struct cbrpc_ctx *ctx)
{
	return ctx ? ctx->id : 0;
}
