/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rnic.ko: Linux driver of the qemu-rnic emulated RoCEv2 RNIC.
 *
 * One PCI function carries an Ethernet NIC (struct net_device) and a RoCE
 * ib_device bound to it. Everything the driver tells the device goes
 * through the admin queue (rnic_cmd.c); events arrive on event queues
 * (rnic_eq.c); work requests and completions are rings in guest memory
 * with doorbells in BAR2. That memory, and what user contexts mmap(), is
 * rnic_dma.c's. The device ABI is include/rnic/rnic-abi.h, the
 * udata shared with the rdma-core provider include/rnic/rnic-user-abi.h.
 */
#ifndef RNIC_H
#define RNIC_H

#include <linux/completion.h>
#include <linux/genalloc.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "rnic/rnic-abi.h"
#include "rnic/rnic-user-abi.h"
#include "rnic-compat.h"

struct nvdimm_bus;
struct nvdimm_bus_descriptor;

#define RNIC_DRV_NAME		"rnic"

/*
 * MSI-X: vector 0 is the admin queue, vector 1 the Ethernet function,
 * vectors 2.. the event queues. With only two vectors the Ethernet
 * function shares vector 0 and the one event queue takes vector 1.
 */
#define RNIC_AQ_VECTOR		0
#define RNIC_MIN_VECTORS	2
#define RNIC_MAX_EQS		32

#define RNIC_AQ_LOG		6	/* 64 admin commands in flight */
#define RNIC_AQ_BUF_SIZE	256	/* per-command result/argument buffer */
#define RNIC_EQ_LOG		12	/* 4096 events per EQ */

/* A DMA-contiguous buffer shared with the device (ring, page list). */
struct rnic_dma_buf {
	void *va;
	dma_addr_t dma;
	size_t size;			/* bytes, a multiple of PAGE_SIZE */
};

struct rnic_aq_slot {
	struct completion done;
	struct rnic_admin_cqe cqe;
	u16 cmd_id;
	bool in_use;			/* owned by a command until its waiter leaves */
	bool busy;			/* submitted, completion not yet seen */
	bool abandoned;			/* the waiter timed out and left */
};

/* The admin queue: command ring, completion ring, one buffer per slot. */
struct rnic_aq {
	struct rnic_dma_buf cmds;
	struct rnic_dma_buf cqes;
	struct rnic_dma_buf bufs;	/* RNIC_AQ_BUF_SIZE per slot */
	struct rnic_aq_slot *slot;
	u32 entries;
	u32 tail;			/* free-running producer */
	u32 cq_head;			/* free-running completion consumer */
	u16 seq;
	spinlock_t lock;
	wait_queue_head_t slot_wait;	/* a slot became free */
	bool dead;			/* device fatal or gone: fail fast */
	unsigned int timeout_ms;
};

struct rnic_eq {
	struct rnic_dev *rdev;
	struct rnic_dma_buf ring;
	u32 handle;
	u32 log;
	u32 cons;			/* free-running consumer */
	u16 vector;			/* MSI-X vector index */
	bool async;
	bool created;
	char name[32];
};

/* A network context of the device: one per VLAN that carries GIDs. */
struct rnic_net_ctx {
	u32 handle;
	u16 vlan;			/* 0: untagged */
	unsigned int gids;		/* GIDs of the table living in it */
};

/* Cached limits and attributes, CPU byte order. */
struct rnic_caps {
	u64 caps;			/* enum rnic_cap */
	u64 node_guid;
	u64 max_mr_size;
	u64 page_size_cap;
	u32 abi_version;
	u32 vendor_id;
	u32 vendor_part_id;
	u32 hw_ver;
	u32 max_net_ctx;
	u32 max_qp;
	u32 max_qp_wr;
	u32 max_sge;
	u32 max_cq;
	u32 max_cqe;
	u32 max_mr;
	u32 max_mw;
	u32 max_mcast_grp;
	u32 max_mcast_qp_attach;
	u32 max_pd;
	u32 max_srq;
	u32 max_srq_wr;
	u32 max_eq;
	u32 max_inline;
	u32 max_qp_rd_atom;
	u32 max_fast_reg_pages;
	u32 max_map_segs;		/* RNIC_CAP_MAPPED: segments of a mapped STag */
	u32 max_gid;
	u32 max_uctx;
	u32 db_pages;
	u32 msix_vectors;
	u32 max_mtu;			/* Ethernet MTU */
	/* QUERY_PORT */
	u32 port_max_mtu;		/* enum ib_mtu */
	u32 gid_tbl_len;
	u32 max_msg_sz;
	u32 link_speed_mbps;
	u8 mac[ETH_ALEN];
};

struct rnic_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0 */
	void __iomem *db;		/* BAR2 page 0: the kernel's doorbells */
	resource_size_t db_bar_start;	/* bus address of BAR2 (user pages) */

	struct rnic_caps caps;
	struct rnic_aq aq;

	int nvec;
	int eth_vector;			/* RNIC_AQ_VECTOR when shared */
	int first_eq_vector;
	struct rnic_eq eqs[RNIC_MAX_EQS];
	int num_eqs;			/* = completion vectors; EQ 0 is async */

	struct xarray cqs;		/* device handle -> struct rnic_cq */
	struct xarray qps;		/* device handle -> struct rnic_qp */
	struct xarray srqs;		/* device handle -> struct rnic_srq */

	struct mutex net_lock;		/* net_ctxs */
	struct xarray net_ctxs;		/* VLAN ID -> struct rnic_net_ctx */
	struct rnic_net_ctx *default_ctx;

	struct net_device *netdev;
	struct rnic_netdev_priv *np;	/* Ethernet function state */
	char eth_irq_name[32];
	atomic_t mr_key;		/* rotating consumer key of new STags */
	bool ib_registered;

	struct rdma_stat_desc *stat_descs;	/* rdma statistic: the counters */
	char (*stat_desc_names)[ETH_GSTRING_LEN];
	/* QP counters (rnic_stats.c) */
	struct mutex counter_lock;
	struct list_head counters;
	struct ida counter_ida;
	u64 counted[RNIC_QP_STAT_COUNT];	/* of QP counters freed */
	/*
	 * The memory window (RNIC_CAP_SCM): BAR4, never mapped by the kernel;
	 * dm_pool hands out its bus addresses in pages to device-memory
	 * allocations (rnic_dm.c). NULL without a window.
	 */
	struct gen_pool *dm_pool;
	resource_size_t scm_start;	/* bus address of BAR4 */
	u64 scm_size;			/* RNIC_REG_SCM_SIZE */
	/* window_pmem=1: the window is this bus's one region instead */
	struct nvdimm_bus *pmem_bus;
	struct nvdimm_bus_descriptor *pmem_desc;

	struct delayed_work health_work;	/* watches DEV_STATUS */
	struct dentry *debugfs;
	unsigned long flags;		/* RNIC_FLAG_* */
};

enum rnic_flags {
	RNIC_FLAG_FAILED,		/* fatal or reset under us: being recovered */
};

/* ---------------------------------------------------------------------- */
/* verbs objects                                                          */
/* ---------------------------------------------------------------------- */

struct rnic_ucontext {
	struct ib_ucontext ibuc;
	u32 uctx;			/* device user context = doorbell page */
	struct rdma_user_mmap_entry *db_entry;
};

/* A device-memory allocation: [offset, offset + size) of the window. */
struct rnic_dm {
	struct ib_dm ibdm;
	u64 offset;			/* in the window, page aligned */
	u64 size;			/* the request rounded up to pages */
	struct rdma_user_mmap_entry *mmap;	/* owns the window range */
};

struct rnic_pd {
	struct ib_pd ibpd;
	u32 handle;
	u32 uctx;
	struct rnic_net_ctx *ctx;	/* NULL: multi-network PD */
};

struct rnic_ah {
	struct ib_ah ibah;
	struct rnic_av av;
};

struct rnic_cq {
	struct ib_cq ibcq;
	u32 handle;
	u32 uctx;
	struct rnic_dma_buf ring;
	u32 log;
	u32 cons;			/* free-running consumer (kernel CQs) */
	u32 db_cons;			/* consumer last told to the device */
	spinlock_t lock;
	struct rnic_eq *eq;
	struct rdma_user_mmap_entry *mmap;	/* user CQs: ring mapping */
};

/* A kernel work queue (SQ, RQ or SRQ) and its shadow of wr_ids. */
struct rnic_wq {
	struct rnic_dma_buf ring;
	u64 *wr_id;
	u32 log;
	u32 shift;			/* WQE stride, log2 */
	u32 prod;			/* free-running producer */
	u32 cons;			/* free-running consumer (from CQEs) */
	u32 max_sge;
	spinlock_t lock;
};

struct rnic_srq {
	struct ib_srq ibsrq;
	u32 handle;
	u32 uctx;
	struct rnic_wq wq;
	unsigned long *done;		/* kernel SRQ: slots completed, not reused */
	u32 limit;
	struct rdma_user_mmap_entry *mmap;
};

struct rnic_qp {
	struct ib_qp ibqp;
	u32 handle;
	u32 uctx;
	u8 type;			/* enum rnic_qp_type */
	enum ib_qp_state state;
	bool sig_all;
	u32 max_inline;
	struct rnic_wq sq;
	struct rnic_wq rq;		/* unused with an SRQ */
	struct rnic_srq *srq;
	struct rnic_cq *scq, *rcq;
	struct rnic_net_ctx *ctx;	/* NULL: of a multi-network PD */
	struct mutex lock;		/* modify/query */
	struct rdma_user_mmap_entry *sq_mmap, *rq_mmap;
	/* rdma statistic qp (rnic_stats.c, rdev->counter_lock) */
	struct rnic_counter *counter;
	struct list_head counter_node;
	u64 counter_base[RNIC_QP_STAT_COUNT];	/* its counters when bound */
};

struct rnic_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	struct rnic_net_ctx *ctx;	/* NULL: of a multi-network PD */
	u32 uctx;
	/*
	 * fast-reg MRs: the page list; kernel mapped STags: the segment
	 * table (struct rnic_map_seg), which their REG_MR work requests name
	 */
	struct rnic_dma_buf pbl;
	u32 npages;			/* pages, or segments of a mapped STag */
	u32 max_pages;			/* fast-reg MRs, mapped STags: > 0 */
	bool mapped;			/* a mapped STag (RNIC_MR_KIND_MAPPED) */
	int access;			/* user MRs: the IB access flags */
	u8 dev_key;			/* key of the STag in the device */
	u8 prev_key;			/* before the last REG_MR work request */
	bool no_entry;			/* an empty DM MR: nothing in the device */
};

/* A memory window (RNIC_CAP_MW): its entry in the device's mapping table. */
struct rnic_mw {
	struct ib_mw ibmw;
	struct rnic_net_ctx *ctx;	/* NULL: of a multi-network PD */
	u32 uctx;
};

static inline struct rnic_mw *to_rmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct rnic_mw, ibmw);
}

static inline struct rnic_dev *to_rdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rnic_dev, ibdev);
}

static inline struct rnic_ucontext *to_ruc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct rnic_ucontext, ibuc);
}

static inline struct rnic_pd *to_rpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct rnic_pd, ibpd);
}

static inline struct rnic_ah *to_rah(struct ib_ah *ibah)
{
	return container_of(ibah, struct rnic_ah, ibah);
}

static inline struct rnic_cq *to_rcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct rnic_cq, ibcq);
}

static inline struct rnic_qp *to_rqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct rnic_qp, ibqp);
}

/* RC and UC: one peer QP (an address vector of their own, no Q_Key) */
static inline bool rnic_qp_connected(const struct rnic_qp *qp)
{
	return qp->type == RNIC_QPT_RC || qp->type == RNIC_QPT_UC;
}

static inline struct rnic_srq *to_rsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct rnic_srq, ibsrq);
}

static inline struct rnic_mr *to_rmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct rnic_mr, ibmr);
}

static inline struct rnic_dm *to_rdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct rnic_dm, ibdm);
}

/* The device user context an object of 'udata' belongs to (0: kernel). */
static inline u32 rnic_uctx_of(struct ib_udata *udata)
{
	struct rnic_ucontext *uc =
		rdma_udata_to_drv_context(udata, struct rnic_ucontext, ibuc);

	return uc ? uc->uctx : RNIC_UCTX_KERNEL;
}

static inline struct rnic_ucontext *rnic_udata_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct rnic_ucontext, ibuc);
}

/*
 * The device access bits of an IB access mask (the same positions: the
 * FLUSH placement bits of ABI 1.2 are IB_ACCESS_FLUSH_*), for MRs: a
 * placement type the device does not do is refused, -EOPNOTSUPP, as the
 * core's ib_check_mr_access() refuses it for user MRs.
 */
static inline int rnic_mr_access(struct rnic_dev *rdev, int access)
{
	BUILD_BUG_ON((int)IB_ACCESS_MW_BIND != (int)RNIC_ACCESS_MW_BIND);
#if RNIC_IB_PLACEMENT
	BUILD_BUG_ON((int)IB_ACCESS_FLUSH_GLOBAL !=
		     (int)RNIC_ACCESS_FLUSH_GLOBAL ||
		     (int)IB_ACCESS_FLUSH_PERSISTENT !=
		     (int)RNIC_ACCESS_FLUSH_PERSISTENT);
	if (((access & IB_ACCESS_FLUSH_GLOBAL) &&
	     !(rdev->caps.caps & RNIC_CAP_FLUSH_GLOBAL)) ||
	    ((access & IB_ACCESS_FLUSH_PERSISTENT) &&
	     !(rdev->caps.caps & RNIC_CAP_FLUSH_PERSISTENT)))
		return -EOPNOTSUPP;
	return access & RNIC_ACCESS_ALL;
#else
	/* an IB access mask has no placement bits before 6.2 */
	return access & RNIC_ACCESS_ALL &
	       ~(RNIC_ACCESS_FLUSH_GLOBAL | RNIC_ACCESS_FLUSH_PERSISTENT);
#endif
}

/* Debug messages per object, over ibdev_dbg (dynamic debug). */
#define rnic_dbg(rdev, fmt, ...) \
	dev_dbg(&(rdev)->pdev->dev, fmt, ##__VA_ARGS__)
#define rnic_dbg_qp(qp, fmt, ...) \
	ibdev_dbg((qp)->ibqp.device, "qp %u (handle %u): " fmt, \
		  (qp)->ibqp.qp_num, (qp)->handle, ##__VA_ARGS__)
#define rnic_dbg_cq(cq, fmt, ...) \
	ibdev_dbg((cq)->ibcq.device, "cq %u: " fmt, (cq)->handle, ##__VA_ARGS__)
#define rnic_dbg_mr(mr, fmt, ...) \
	ibdev_dbg((mr)->ibmr.device, "mr 0x%x: " fmt, (mr)->ibmr.lkey, \
		  ##__VA_ARGS__)

/* ---------------------------------------------------------------------- */
/* registers and doorbells                                                */
/* ---------------------------------------------------------------------- */

static inline u32 rnic_reg_read(struct rnic_dev *rdev, u32 reg)
{
	return readl(rdev->regs + reg);
}

static inline void rnic_reg_write(struct rnic_dev *rdev, u32 reg, u32 val)
{
	writel(val, rdev->regs + reg);
}

/* 64-bit register pairs: low half first, high half last. */
static inline void rnic_reg_write64(struct rnic_dev *rdev, u32 reg_lo, u64 val)
{
	writel(lower_32_bits(val), rdev->regs + reg_lo);
	writel(upper_32_bits(val), rdev->regs + reg_lo + 4);
}

static inline u64 rnic_reg_read64(struct rnic_dev *rdev, u32 reg_lo)
{
	u32 lo = readl(rdev->regs + reg_lo);

	return (u64)readl(rdev->regs + reg_lo + 4) << 32 | lo;
}

/*
 * Ring a doorbell of page 0; the ring writes before it are ordered by
 * writeq itself (I/O writes follow prior normal memory writes).
 */
static inline void rnic_ring_db(struct rnic_dev *rdev, u32 offset, u32 handle,
				u32 flags, u32 index)
{
	writeq(rnic_db_value(handle, flags, index), rdev->db + offset);
}

/* ---------------------------------------------------------------------- */
/* rnic_dma.c: DMA buffers, page lists, work queue rings, user mappings   */
/* ---------------------------------------------------------------------- */

/* A page list of REG_MR: level 1 a list, level 2 a directory of leaves. */
struct rnic_pbl {
	struct rnic_dma_buf dir;	/* level 1: the list; level 2: leaves */
	struct rnic_dma_buf *leaves;
	u32 nleaves;
	u8 levels;
};

int rnic_dma_buf_alloc(struct rnic_dev *rdev, struct rnic_dma_buf *buf,
		       size_t size);
void rnic_dma_buf_free(struct rnic_dev *rdev, struct rnic_dma_buf *buf);
int rnic_pbl_build(struct rnic_dev *rdev, struct rnic_pbl *pbl,
		   struct ib_umem *umem, unsigned long pgsz, u32 npages);
void rnic_pbl_free(struct rnic_dev *rdev, struct rnic_pbl *pbl);
int rnic_wq_alloc(struct rnic_dev *rdev, struct rnic_wq *wq, u32 log,
		  u32 shift, bool kernel);
void rnic_wq_free(struct rnic_dev *rdev, struct rnic_wq *wq,
		  struct rdma_user_mmap_entry **mmap);
struct rdma_user_mmap_entry *
rnic_mmap_db_insert(struct rnic_dev *rdev, struct rnic_ucontext *uc, u64 *key);
struct rdma_user_mmap_entry *
rnic_mmap_ring_insert(struct rnic_ucontext *uc, struct rnic_dma_buf *buf,
		      u64 *key);
struct rdma_user_mmap_entry *
rnic_mmap_dm_insert(struct rnic_ucontext *uc, unsigned long addr, size_t size,
		    u64 *key);
void rnic_ring_free(struct rnic_dev *rdev, struct rnic_dma_buf *buf,
		    struct rdma_user_mmap_entry **mmap);
int rnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void rnic_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

/* ---------------------------------------------------------------------- */
/* rnic_main.c                                                            */
/* ---------------------------------------------------------------------- */

void rnic_dev_fail(struct rnic_dev *rdev, const char *why);

/* ---------------------------------------------------------------------- */
/* rnic_stats.c: the device's counters, rdma statistic, QP counters       */
/* ---------------------------------------------------------------------- */

void rnic_stat_name(u32 i, char *buf);
u64 rnic_stat_read(struct rnic_dev *rdev, u32 i);
int rnic_stats_init(struct rnic_dev *rdev);
void rnic_stats_fini(struct rnic_dev *rdev);

/* ---------------------------------------------------------------------- */
/* rnic_cmd.c: admin queue                                                */
/* ---------------------------------------------------------------------- */

int rnic_aq_init(struct rnic_dev *rdev);
void rnic_aq_fini(struct rnic_dev *rdev);
void rnic_aq_kill(struct rnic_dev *rdev);
irqreturn_t rnic_aq_irq(int irq, void *data);
int rnic_cmd_exec(struct rnic_dev *rdev, struct rnic_admin_cmd *cmd,
		  const void *in, size_t in_len, void *out, size_t out_len,
		  struct rnic_admin_cqe *cqe);
int rnic_cmd_simple(struct rnic_dev *rdev, u8 opcode, u32 uctx, u32 handle,
		    u32 net_ctx);
int rnic_cmd_query_device(struct rnic_dev *rdev);
int rnic_cmd_query_port(struct rnic_dev *rdev, struct rnic_port_attr *attr);
int rnic_status_to_errno(u8 status);

/* ---------------------------------------------------------------------- */
/* rnic_eq.c                                                              */
/* ---------------------------------------------------------------------- */

int rnic_eqs_init(struct rnic_dev *rdev);
void rnic_eqs_fini(struct rnic_dev *rdev);
void rnic_eqs_sync(struct rnic_dev *rdev);
struct rnic_eq *rnic_eq_for_vector(struct rnic_dev *rdev, int comp_vector);

/* ---------------------------------------------------------------------- */
/* rnic_netdev.c                                                          */
/* ---------------------------------------------------------------------- */

int rnic_netdev_init(struct rnic_dev *rdev);
void rnic_netdev_fini(struct rnic_dev *rdev);
irqreturn_t rnic_eth_irq(int irq, void *data);
void rnic_netdev_link_check(struct rnic_dev *rdev);
enum ib_port_state rnic_port_state(struct rnic_dev *rdev);

/* ---------------------------------------------------------------------- */
/* rnic_verbs.c                                                           */
/* ---------------------------------------------------------------------- */

int rnic_ib_register(struct rnic_dev *rdev);
void rnic_ib_unregister(struct rnic_dev *rdev);
int rnic_net_ctx_init(struct rnic_dev *rdev);
/*
 * Mapped STags (RNIC_CAP_MAPPED): IB_MR_TYPE_SG_GAPS MRs and the user-space
 * mkeys of rnicdv_create_mkey; with fast registration (their REG_MR work
 * request) and DEREG_MR of any key (user space changes their key).
 */
static inline bool rnic_has_mapped(const struct rnic_dev *rdev)
{
	const u64 need = RNIC_CAP_MAPPED | RNIC_CAP_FAST_REG |
			 RNIC_CAP_DEREG_ANY_KEY;

	return (rdev->caps.caps & need) == need && rdev->caps.max_map_segs;
}

/* Does this device get multi-network PDs (RNIC_CAP_PD_MULTI_NET)? */
bool rnic_multi_net_pds(struct rnic_dev *rdev);
void rnic_net_ctx_fini(struct rnic_dev *rdev);

/* An event of port 1 to the ib_device's consumers, once it is registered. */
static inline void rnic_port_event(struct rnic_dev *rdev,
				   enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &rdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	if (rdev->ib_registered)
		ib_dispatch_event(&ev);
}

int rnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int rnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int rnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata);
int rnic_destroy_ah(struct ib_ah *ibah, u32 flags);
int rnic_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr);
int rnic_av_from_ah_attr(struct rnic_dev *rdev, struct rnic_av *av,
			 const struct rdma_ah_attr *ah_attr);

/* ---------------------------------------------------------------------- */
/* rnic_cq.c                                                              */
/* ---------------------------------------------------------------------- */

#if RNIC_IB_CREATE_CQ_ATTRS
int rnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct uverbs_attr_bundle *attrs);
#else
int rnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
#endif
int rnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int rnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int rnic_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int rnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void rnic_cq_clean(struct rnic_cq *cq, u32 qp_handle);
void rnic_cqs_kick(struct rnic_dev *rdev);
void rnic_cq_event(struct rnic_dev *rdev, u32 handle);

/* ---------------------------------------------------------------------- */
/* rnic_qp.c                                                              */
/* ---------------------------------------------------------------------- */

int rnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		   struct ib_udata *udata);
int rnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_udata *udata);
int rnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_qp_init_attr *init_attr);
int rnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int rnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int rnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);

/* The SGEs of a WQE (SQ, RQ and SRQ) from a work request's. */
static inline void rnic_fill_sges(struct rnic_sge *dst,
				  const struct ib_sge *src, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = cpu_to_le64(src[i].addr);
		dst[i].length = cpu_to_le32(src[i].length);
		dst[i].lkey = cpu_to_le32(src[i].lkey);
	}
}

/* ---------------------------------------------------------------------- */
/* rnic_srq.c                                                             */
/* ---------------------------------------------------------------------- */

int rnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init_attr,
		    struct ib_udata *udata);
int rnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int rnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int rnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int rnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
void rnic_srq_complete(struct rnic_srq *srq, u32 index, u64 *wr_id);

/* ---------------------------------------------------------------------- */
/* rnic_mr.c                                                              */
/* ---------------------------------------------------------------------- */

struct ib_mr *rnic_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *rnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *rnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access,
			       struct ib_udata *udata);
struct ib_mr *rnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg);
int rnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
int rnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
int rnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int rnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int rnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int rnic_dealloc_mw(struct ib_mw *ibmw);
void rnic_mr_posted_key(struct rnic_mr *mr, u32 stag);
int rnic_reg_scm_cmd(struct rnic_dev *rdev, struct rnic_mr *mr,
		     struct rnic_pd *pd, u64 iova, u64 length, u64 window_off,
		     int access, u32 sems, u8 sem);

/* ---------------------------------------------------------------------- */
/* rnic_dm.c: the memory window through the device-memory verbs           */
/* ---------------------------------------------------------------------- */

int rnic_dm_init(struct rnic_dev *rdev);
void rnic_dm_fini(struct rnic_dev *rdev);
void rnic_dm_set_ops(struct rnic_dev *rdev);
int rnic_scm_key_sem(struct rnic_dev *rdev, int access, u32 *sems, u8 *sem);

/* ---------------------------------------------------------------------- */
/* rnic_pmem.c: the memory window as an nvdimm region (window_pmem=1)     */
/* ---------------------------------------------------------------------- */

int rnic_pmem_init(struct rnic_dev *rdev);
void rnic_pmem_fini(struct rnic_dev *rdev);
int rnic_pmem_umem_offset(struct rnic_dev *rdev, struct ib_umem *umem,
			  u64 *window_off);

#endif /* RNIC_H */
