/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic engine: handle tables and the object core over them.
 */
#include <string.h>
#include "rnic-engine-int.h"

void rnic_table_init(RnicTable *t, const char *name, size_t obj_size,
                     uint32_t max)
{
    memset(t, 0, sizeof(*t));
    t->name = name;
    t->obj_size = obj_size;
    t->max = max;
}

void rnic_table_destroy(RnicTable *t)
{
    g_free(t->slots);
    g_free(t->free);
    g_free(t->free_pos);
    memset(t, 0, sizeof(*t));
}

/*
 * Grow to hold at least 'need' slots; new handles go on the free stack
 * highest first, so that the lowest free handle is handed out first.
 */
static bool rnic_table_grow(RnicTable *t, uint32_t need)
{
    uint32_t ncap, i;

    if (need > t->max) {
        return false;
    }
    ncap = t->cap ? t->cap : 16;
    while (ncap < need) {
        ncap = ncap > t->max / 2 ? t->max : ncap * 2;
    }
    if (ncap > t->max) {
        ncap = t->max;
    }
    t->slots = g_renew(void *, t->slots, ncap);
    t->free = g_renew(uint32_t, t->free, ncap);
    t->free_pos = g_renew(uint32_t, t->free_pos, ncap);
    memset(t->slots + t->cap, 0, (ncap - t->cap) * sizeof(void *));
    /* keep existing free handles on top (they are lower) */
    memmove(t->free + (ncap - t->cap), t->free, t->nfree * sizeof(uint32_t));
    for (i = 0; i < ncap - t->cap; i++) {
        t->free[i] = ncap - 1 - i;
    }
    t->nfree += ncap - t->cap;
    t->cap = ncap;
    for (i = 0; i < t->nfree; i++) {
        t->free_pos[t->free[i]] = i;
    }
    return true;
}

uint32_t rnic_table_alloc(RnicTable *t, void *obj)
{
    uint32_t h;

    if (!t->nfree && !rnic_table_grow(t, t->cap + 1)) {
        return UINT32_MAX;
    }
    h = t->free[--t->nfree];
    t->free_pos[h] = UINT32_MAX;
    t->slots[h] = obj;
    t->count++;
    return h;
}

/*
 * O(1): the handle leaves the free stack by swapping with its top (state
 * load places thousands of objects at their handles under the BQL).
 */
bool rnic_table_insert_at(RnicTable *t, uint32_t handle, void *obj)
{
    uint32_t i, top;

    if (handle >= t->max) {
        return false;
    }
    if (handle >= t->cap && !rnic_table_grow(t, handle + 1)) {
        return false;
    }
    if (t->slots[handle]) {
        return false;
    }
    i = t->free_pos[handle];
    g_assert(i < t->nfree && t->free[i] == handle);
    top = t->free[--t->nfree];
    t->free[i] = top;
    t->free_pos[top] = i;
    t->free_pos[handle] = UINT32_MAX;
    t->slots[handle] = obj;
    t->count++;
    return true;
}

void rnic_table_remove(RnicTable *t, uint32_t handle)
{
    if (handle < t->cap && t->slots[handle]) {
        t->slots[handle] = NULL;
        t->free_pos[handle] = t->nfree;
        t->free[t->nfree++] = handle;
        t->count--;
    }
}

void *rnic_obj_create(RnicEngine *e, RnicTable *t, uint32_t handle,
                      uint32_t owner, uint64_t charge)
{
    RnicObject *obj;

    if (!rnic_mem_charge(e, charge)) {
        return NULL;
    }
    obj = g_malloc0(t->obj_size);
    if (handle == UINT32_MAX) {
        handle = rnic_table_alloc(t, obj);
    } else if (!rnic_table_insert_at(t, handle, obj)) {
        handle = UINT32_MAX;
    }
    if (handle == UINT32_MAX) {
        g_free(obj);
        rnic_mem_release(e, charge);
        return NULL;
    }
    obj->handle = handle;
    obj->owner = owner;
    return obj;
}

void rnic_obj_destroy(RnicEngine *e, RnicTable *t, void *obj,
                      uint64_t charge)
{
    rnic_table_remove(t, ((RnicObject *)obj)->handle);
    g_free(obj);
    rnic_mem_release(e, charge);
}
