/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU rnic device: the memory window (property scm=<memdev>).
 *
 * A host memory backend the device owns, as hw/nvme owns its PMR: BAR4 to
 * the guest (RAM, prefetchable), and to the engine the DMA range
 * [RNIC_SCM_DMA_BASE, + size) that regions of kind SCM map. The engine's
 * persist operation is memory_region_msync() of the backend (pmem_persist
 * on pmem=on, msync on a shared file). A memory-backend-file with
 * share=on persists; memory-backend-ram or -memfd make a volatile window
 * (no FLUSH persistence, no DURABLE semantic); a file backend without
 * share=on is refused, its writes would never reach the file.
 *
 * Power-fail injection (scm-powerfail=on, for tests): the device keeps
 * the window's durable image, the bytes as of their last persist, and
 * setting the run-time property "power-cut" (qom-set) rolls the window
 * back to it, as a power loss would leave persistent memory: what a
 * DURABLE key acknowledged or a FLUSH(persistence) covered stays, other
 * writes (the device's and the guest CPU's) are gone. The image is not
 * migrated: the mode blocks migration.
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/units.h"
#include "qom/object.h"
#include "hw/pci/pci.h"
#include "migration/blocker.h"
#include "migration/vmstate.h"
#include "system/hostmem.h"
#include "rnic.h"
#include "trace.h"

bool rnic_window_setup(RnicState *s, Error **errp)
{
    RnicWindow *w = &s->window;
    HostMemoryBackend *b = w->backend;
    g_autofree char *name = NULL;
    uint64_t size;

    if (!b) {
        if (w->powerfail) {
            error_setg(errp, "rnic: scm-powerfail=on needs a window (scm=)");
            return false;
        }
        return true;
    }
    name = host_memory_backend_get_name(b);
    if (host_memory_backend_is_mapped(b)) {
        error_setg(errp, "rnic: scm=%s: memory backend already in use", name);
        return false;
    }
    size = memory_region_size(host_memory_backend_get_memory(b));
    if (size < 4 * KiB || !is_power_of_2(size) ||
        size > (uint64_t)RNIC_CFG_MAX_SCM_PAGES * 4 * KiB) {
        error_setg(errp, "rnic: scm=%s: size %" PRIu64 " must be a power of "
                   "two from 4 KiB to %u GiB (it is a BAR)", name, size,
                   RNIC_CFG_MAX_SCM_PAGES / (256 * 1024));
        return false;
    }
    w->persistent = object_dynamic_cast(OBJECT(b), TYPE_MEMORY_BACKEND_FILE);
    if (w->persistent && !b->share) {
        error_setg(errp, "rnic: scm=%s: a memory-backend-file needs "
                   "share=on, or its writes never reach the file", name);
        return false;
    }
    if (w->powerfail && !w->persistent) {
        error_setg(errp, "rnic: scm-powerfail=on needs a window that "
                   "persists (memory-backend-file, share=on)");
        return false;
    }
    w->mr = host_memory_backend_get_memory(b);
    w->host = memory_region_get_ram_ptr(w->mr);
    w->size = size;
    w->pmem = w->persistent &&
              object_property_get_bool(OBJECT(b), "pmem", NULL);
    s->cfg.scm_pages = size / (4 * KiB);
    s->cfg.scm_persistent = w->persistent;
    return true;
}

bool rnic_window_realize(RnicState *s, Error **errp)
{
    RnicWindow *w = &s->window;
    PCIDevice *pci_dev = PCI_DEVICE(s);

    if (!w->backend) {
        return true;
    }
    if (w->powerfail) {
        error_setg(&w->blocker, "rnic: scm-powerfail=on (power-fail "
                   "injection) keeps a durable image that is not migrated");
        if (migrate_add_blocker(&w->blocker, errp) < 0) {
            return false;
        }
        w->durable = g_malloc(w->size);
        memcpy(w->durable, w->host, w->size);
    }
    host_memory_backend_set_mapped(w->backend, true);
    vmstate_register_ram(w->mr, DEVICE(s));
    pci_register_bar(pci_dev, RNIC_BAR_SCM,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, w->mr);
    trace_rnic_window(w->size, w->persistent, w->pmem, w->powerfail);
    return true;
}

void rnic_window_exit(RnicState *s)
{
    RnicWindow *w = &s->window;

    if (!w->mr) {
        return;
    }
    vmstate_unregister_ram(w->mr, DEVICE(s));
    host_memory_backend_set_mapped(w->backend, false);
    migrate_del_blocker(&w->blocker);
    g_free(w->durable);
    w->durable = NULL;
    w->mr = NULL;
}

/* Host bytes of engine DMA range [addr, addr + len) in the window. */
void *rnic_window_ptr(RnicState *s, uint64_t addr, uint64_t len)
{
    RnicWindow *w = &s->window;
    uint64_t off = addr - RNIC_SCM_DMA_BASE;

    if (!w->mr || off > w->size || len > w->size - off) {
        return NULL;
    }
    return w->host + off;
}

void rnic_window_persist(void *opaque, uint64_t off, uint64_t len)
{
    RnicState *s = opaque;
    RnicWindow *w = &s->window;

    /* the engine asks only for ranges of a window that persists */
    if (!w->persistent || off > w->size || len > w->size - off) {
        RNIC_GUEST_ERROR(trace_rnic_ub_window_persist(off, len),
                         "persist of [0x%" PRIx64 ", +%" PRIu64 ") outside "
                         "a persistent window", off, len);
        return;
    }
    memory_region_msync(w->mr, off, len);
    if (w->durable) {
        memcpy(w->durable + off, w->host + off, len);
    }
}

static bool rnic_window_get_power_cut(Object *obj, Error **errp)
{
    return false;
}

static void rnic_window_set_power_cut(Object *obj, bool value, Error **errp)
{
    RnicWindow *w = &RNIC(obj)->window;

    if (!value) {
        return;
    }
    if (!w->durable) {
        error_setg(errp, "rnic: power-cut needs scm-powerfail=on");
        return;
    }
    trace_rnic_window_power_cut(w->size);
    memcpy(w->host, w->durable, w->size);
    memory_region_msync(w->mr, 0, w->size);
}

void rnic_window_class_init(ObjectClass *oc)
{
    object_class_property_add_bool(oc, "power-cut",
                                   rnic_window_get_power_cut,
                                   rnic_window_set_power_cut);
    object_class_property_set_description(oc, "power-cut",
        "with scm-powerfail=on: set to true to roll the memory window back "
        "to what was persisted, as a power loss would");
}
