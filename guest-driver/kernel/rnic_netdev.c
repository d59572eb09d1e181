// SPDX-License-Identifier: GPL-2.0
/*
 * rnic Ethernet function: the net_device of the converged NIC.
 *
 * One TX and one RX ring of 16-byte descriptors (include/rnic/rnic-abi.h,
 * "Ethernet function" in docs/spec.md), one MSI-X vector, NAPI. The vector
 * is masked one-shot by the device when it fires; the poll routine cleans
 * both rings and unmasks, and the device re-fires at once if anything
 * completed in between. Frames that are RoCE for this device never reach
 * these rings: the RDMA engine takes them first.
 *
 * No checksum offload, hence no scatter/gather: one descriptor per frame.
 */
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/u64_stats_sync.h>

#include "rnic.h"

#define RNIC_ETH_TX_LOG		8
#define RNIC_ETH_RX_LOG		8
#define RNIC_ETH_NAPI_WEIGHT	64

struct rnic_eth_buf {
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 len;
};

struct rnic_netdev_priv {
	struct rnic_dev *rdev;
	struct net_device *ndev;
	struct napi_struct napi;
	bool irq_requested;

	struct rnic_dma_buf tx_ring;
	struct rnic_eth_buf *tx_bufs;
	u32 tx_prod;			/* free-running, ndo_start_xmit */
	u32 tx_cons;			/* free-running, NAPI */

	struct rnic_dma_buf rx_ring;
	struct rnic_eth_buf *rx_bufs;
	u32 rx_prod;
	u32 rx_cons;
	u32 rx_buf_len;

	bool link_up;
	spinlock_t link_lock;

	struct u64_stats_sync syncp;
	u64 tx_packets, tx_bytes, tx_errors, tx_dropped;
	u64 rx_packets, rx_bytes, rx_errors, rx_dropped, rx_length_errors;
};

static inline u32 rnic_eth_tx_entries(void)
{
	return 1u << RNIC_ETH_TX_LOG;
}

static inline u32 rnic_eth_rx_entries(void)
{
	return 1u << RNIC_ETH_RX_LOG;
}

/* ---------------------------------------------------------------------- */
/* link                                                                   */
/* ---------------------------------------------------------------------- */

enum ib_port_state rnic_port_state(struct rnic_dev *rdev)
{
	struct net_device *ndev = rdev->netdev;

	if (ndev)
		return netif_running(ndev) && netif_carrier_ok(ndev) ?
		       IB_PORT_ACTIVE : IB_PORT_DOWN;
	return (rnic_reg_read(rdev, RNIC_REG_DEV_STATUS) &
		RNIC_STATUS_LINK_UP) ? IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/*
 * The carrier follows DEV_STATUS.LINK_UP while the interface is up; the
 * RoCE port follows the carrier and gets an event on each change.
 */
static void rnic_link_update(struct rnic_netdev_priv *np, bool force_down)
{
	struct net_device *ndev = np->ndev;
	unsigned long flags;
	bool up, changed;

	up = !force_down && netif_running(ndev) &&
	     (rnic_reg_read(np->rdev, RNIC_REG_DEV_STATUS) & RNIC_STATUS_LINK_UP);
	spin_lock_irqsave(&np->link_lock, flags);
	changed = up != np->link_up;
	np->link_up = up;
	spin_unlock_irqrestore(&np->link_lock, flags);
	if (!changed)
		return;
	if (up)
		netif_carrier_on(ndev);
	else
		netif_carrier_off(ndev);
	netdev_info(ndev, "link %s\n", up ? "up" : "down");
	rnic_port_event(np->rdev, up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}

void rnic_netdev_link_check(struct rnic_dev *rdev)
{
	struct rnic_netdev_priv *np = READ_ONCE(rdev->np);

	if (np)
		rnic_link_update(np, false);
}

/* ---------------------------------------------------------------------- */
/* interrupt and NAPI                                                     */
/* ---------------------------------------------------------------------- */

irqreturn_t rnic_eth_irq(int irq, void *data)
{
	struct rnic_dev *rdev = data;
	struct rnic_netdev_priv *np = READ_ONCE(rdev->np);

	if (!np)
		return IRQ_NONE;
	/* link changes share the vector; reading the status is cheap */
	rnic_link_update(np, false);
	napi_schedule_irqoff(&np->napi);
	return IRQ_HANDLED;
}

static void rnic_tx_clean(struct rnic_netdev_priv *np)
{
	struct rnic_eth_tx_desc *ring = np->tx_ring.va;
	struct device *dev = &np->rdev->pdev->dev;
	u32 mask = rnic_eth_tx_entries() - 1;
	u32 cons = np->tx_cons, done = 0, bytes = 0;

	while (cons != READ_ONCE(np->tx_prod)) {
		struct rnic_eth_tx_desc *d = &ring[cons & mask];
		struct rnic_eth_buf *b = &np->tx_bufs[cons & mask];
		u8 status = READ_ONCE(d->status);

		if (!(status & RNIC_ETH_DESC_DONE))
			break;
		dma_rmb();
		dma_unmap_single(dev, b->dma, b->len, DMA_TO_DEVICE);
		u64_stats_update_begin(&np->syncp);
		if (status & RNIC_ETH_DESC_ERR) {
			np->tx_errors++;
		} else {
			np->tx_packets++;
			np->tx_bytes += b->len;
		}
		u64_stats_update_end(&np->syncp);
		bytes += b->len;
		done++;
		napi_consume_skb(b->skb, 1);
		b->skb = NULL;
		cons++;
	}
	if (!done)
		return;
	/* ndo_start_xmit reads tx_cons to see the room we freed */
	smp_store_release(&np->tx_cons, cons);
	netdev_completed_queue(np->ndev, done, bytes);
	if (netif_queue_stopped(np->ndev) &&
	    READ_ONCE(np->tx_prod) - cons < rnic_eth_tx_entries() / 2)
		netif_wake_queue(np->ndev);
}

static int rnic_rx_post_one(struct rnic_netdev_priv *np)
{
	struct rnic_eth_rx_desc *d;
	struct rnic_eth_buf *b;
	struct sk_buff *skb;
	dma_addr_t dma;
	u32 slot = np->rx_prod & (rnic_eth_rx_entries() - 1);

	skb = napi_alloc_skb(&np->napi, np->rx_buf_len);
	if (!skb)
		return -ENOMEM;
	dma = dma_map_single(&np->rdev->pdev->dev, skb->data, np->rx_buf_len,
			     DMA_FROM_DEVICE);
	if (dma_mapping_error(&np->rdev->pdev->dev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	b = &np->rx_bufs[slot];
	b->skb = skb;
	b->dma = dma;
	b->len = np->rx_buf_len;
	d = (struct rnic_eth_rx_desc *)np->rx_ring.va + slot;
	d->addr = cpu_to_le64(dma);
	d->buf_len = cpu_to_le16(np->rx_buf_len);
	d->len = 0;
	d->status = 0;
	np->rx_prod++;
	return 0;
}

/* Post buffers into every free slot; one tail write. */
static void rnic_rx_refill(struct rnic_netdev_priv *np)
{
	u32 start = np->rx_prod;

	while (np->rx_prod - np->rx_cons < rnic_eth_rx_entries())
		if (rnic_rx_post_one(np))
			break;
	if (np->rx_prod != start)
		rnic_reg_write(np->rdev, RNIC_REG_ETH_RX_TAIL, np->rx_prod);
}

static int rnic_rx_poll(struct rnic_netdev_priv *np, int budget)
{
	struct rnic_eth_rx_desc *ring = np->rx_ring.va;
	struct device *dev = &np->rdev->pdev->dev;
	u32 mask = rnic_eth_rx_entries() - 1;
	int work = 0;

	while (work < budget && np->rx_cons != np->rx_prod) {
		struct rnic_eth_rx_desc *d = &ring[np->rx_cons & mask];
		struct rnic_eth_buf *b = &np->rx_bufs[np->rx_cons & mask];
		struct sk_buff *skb = b->skb;
		u8 status = READ_ONCE(d->status);
		u16 len;

		if (!(status & RNIC_ETH_DESC_DONE))
			break;
		dma_rmb();
		len = le16_to_cpu(d->len);
		dma_unmap_single(dev, b->dma, b->len, DMA_FROM_DEVICE);
		b->skb = NULL;
		np->rx_cons++;
		work++;
		if ((status & RNIC_ETH_DESC_ERR) || len < ETH_HLEN) {
			u64_stats_update_begin(&np->syncp);
			np->rx_errors++;
			if (status & RNIC_ETH_DESC_TRUNC)
				np->rx_length_errors++;
			u64_stats_update_end(&np->syncp);
			dev_kfree_skb_any(skb);
			continue;
		}
		skb_put(skb, len);
		skb->protocol = eth_type_trans(skb, np->ndev);
		u64_stats_update_begin(&np->syncp);
		np->rx_packets++;
		np->rx_bytes += len;
		u64_stats_update_end(&np->syncp);
		napi_gro_receive(&np->napi, skb);
	}
	return work;
}

static int rnic_napi_poll(struct napi_struct *napi, int budget)
{
	struct rnic_netdev_priv *np = container_of(napi, struct rnic_netdev_priv,
						   napi);
	int work;

	rnic_tx_clean(np);
	work = rnic_rx_poll(np, budget);
	rnic_rx_refill(np);
	/* no buffer at all would stall RoCE too: keep polling until one */
	if (np->rx_prod == np->rx_cons)
		return budget;
	if (work < budget && napi_complete_done(napi, work))
		rnic_reg_write(np->rdev, RNIC_REG_ETH_IRQ_MASK, 0);
	return work;
}

/* ---------------------------------------------------------------------- */
/* TX                                                                     */
/* ---------------------------------------------------------------------- */

static netdev_tx_t rnic_start_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	struct device *dev = &np->rdev->pdev->dev;
	u32 mask = rnic_eth_tx_entries() - 1;
	struct rnic_eth_tx_desc *d;
	struct rnic_eth_buf *b;
	dma_addr_t dma;
	u32 slot;

	if (skb_linearize(skb) || skb->len > ndev->mtu + RNIC_ETH_OVERHEAD)
		goto drop;
	if (np->tx_prod - smp_load_acquire(&np->tx_cons) >= rnic_eth_tx_entries()) {
		/* should not happen: the queue is stopped before it fills */
		netif_stop_queue(ndev);
		return NETDEV_TX_BUSY;
	}
	dma = dma_map_single(dev, skb->data, skb->len, DMA_TO_DEVICE);
	if (dma_mapping_error(dev, dma))
		goto drop;

	slot = np->tx_prod & mask;
	b = &np->tx_bufs[slot];
	b->skb = skb;
	b->dma = dma;
	b->len = skb->len;
	d = (struct rnic_eth_tx_desc *)np->tx_ring.va + slot;
	d->addr = cpu_to_le64(dma);
	d->len = cpu_to_le16(skb->len);
	d->flags = RNIC_ETH_TX_EOP;
	d->status = 0;
	netdev_sent_queue(ndev, skb->len);
	skb_tx_timestamp(skb);
	/* the cleaner may run now: publish the producer before the doorbell */
	smp_store_release(&np->tx_prod, np->tx_prod + 1);
	rnic_reg_write(np->rdev, RNIC_REG_ETH_TX_TAIL, np->tx_prod);

	if (np->tx_prod - smp_load_acquire(&np->tx_cons) >= rnic_eth_tx_entries()) {
		netif_stop_queue(ndev);
		/* the cleaner may have freed room before we stopped */
		if (np->tx_prod - smp_load_acquire(&np->tx_cons) <
		    rnic_eth_tx_entries())
			netif_wake_queue(ndev);
	}
	return NETDEV_TX_OK;

drop:
	u64_stats_update_begin(&np->syncp);
	np->tx_dropped++;
	u64_stats_update_end(&np->syncp);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* ---------------------------------------------------------------------- */
/* open / stop                                                            */
/* ---------------------------------------------------------------------- */

static void rnic_rings_free(struct rnic_netdev_priv *np)
{
	struct device *dev = &np->rdev->pdev->dev;
	u32 i;

	if (np->tx_bufs) {
		for (i = 0; i < rnic_eth_tx_entries(); i++) {
			struct rnic_eth_buf *b = &np->tx_bufs[i];

			if (!b->skb)
				continue;
			dma_unmap_single(dev, b->dma, b->len, DMA_TO_DEVICE);
			dev_kfree_skb_any(b->skb);
		}
		kvfree(np->tx_bufs);
		np->tx_bufs = NULL;
	}
	if (np->rx_bufs) {
		for (i = 0; i < rnic_eth_rx_entries(); i++) {
			struct rnic_eth_buf *b = &np->rx_bufs[i];

			if (!b->skb)
				continue;
			dma_unmap_single(dev, b->dma, b->len, DMA_FROM_DEVICE);
			dev_kfree_skb_any(b->skb);
		}
		kvfree(np->rx_bufs);
		np->rx_bufs = NULL;
	}
	rnic_dma_buf_free(np->rdev, &np->tx_ring);
	rnic_dma_buf_free(np->rdev, &np->rx_ring);
}

static int rnic_rings_alloc(struct rnic_netdev_priv *np)
{
	struct rnic_dev *rdev = np->rdev;
	int ret;

	np->tx_bufs = kvcalloc(rnic_eth_tx_entries(), sizeof(*np->tx_bufs),
			       GFP_KERNEL);
	np->rx_bufs = kvcalloc(rnic_eth_rx_entries(), sizeof(*np->rx_bufs),
			       GFP_KERNEL);
	if (!np->tx_bufs || !np->rx_bufs) {
		ret = -ENOMEM;
		goto err;
	}
	ret = rnic_dma_buf_alloc(rdev, &np->tx_ring, rnic_eth_tx_entries() *
				 sizeof(struct rnic_eth_tx_desc));
	if (ret)
		goto err;
	ret = rnic_dma_buf_alloc(rdev, &np->rx_ring, rnic_eth_rx_entries() *
				 sizeof(struct rnic_eth_rx_desc));
	if (ret)
		goto err;
	return 0;
err:
	rnic_rings_free(np);
	return ret;
}

static void rnic_set_rx_mode(struct net_device *ndev);

static int rnic_open(struct net_device *ndev)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	struct rnic_dev *rdev = np->rdev;
	u32 ctrl;
	int ret;

	np->rx_buf_len = ALIGN(ndev->mtu + RNIC_ETH_OVERHEAD, 64);
	ret = rnic_rings_alloc(np);
	if (ret)
		return ret;
	np->tx_prod = np->tx_cons = 0;
	np->rx_prod = np->rx_cons = 0;

	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_MASK, 1);
	rnic_reg_write(rdev, RNIC_REG_ETH_CTRL, 0);
	rnic_reg_write(rdev, RNIC_REG_ETH_MTU, ndev->mtu);
	rnic_reg_write64(rdev, RNIC_REG_ETH_TX_BASE_LO, np->tx_ring.dma);
	rnic_reg_write(rdev, RNIC_REG_ETH_TX_SIZE_LOG2, RNIC_ETH_TX_LOG);
	rnic_reg_write64(rdev, RNIC_REG_ETH_RX_BASE_LO, np->rx_ring.dma);
	rnic_reg_write(rdev, RNIC_REG_ETH_RX_SIZE_LOG2, RNIC_ETH_RX_LOG);
	rnic_reg_write(rdev, RNIC_REG_ETH_CTRL,
		       RNIC_ETH_TX_EN | RNIC_ETH_RX_EN | RNIC_ETH_BROADCAST);
	ctrl = rnic_reg_read(rdev, RNIC_REG_ETH_CTRL);
	if ((ctrl & (RNIC_ETH_TX_EN | RNIC_ETH_RX_EN)) !=
	    (RNIC_ETH_TX_EN | RNIC_ETH_RX_EN)) {
		netdev_err(ndev, "device refused the rings (ETH_CTRL 0x%x)\n",
			   ctrl);
		ret = -EIO;
		goto err;
	}
	rnic_set_rx_mode(ndev);

	napi_enable(&np->napi);
	local_bh_disable();
	rnic_rx_refill(np);
	local_bh_enable();
	netdev_reset_queue(ndev);
	netif_start_queue(ndev);
	rnic_link_update(np, false);
	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_MASK, 0);
	return 0;

err:
	rnic_reg_write(rdev, RNIC_REG_ETH_CTRL, 0);
	rnic_rings_free(np);
	return ret;
}

static int rnic_stop(struct net_device *ndev)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	struct rnic_dev *rdev = np->rdev;

	netif_stop_queue(ndev);
	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_MASK, 1);
	napi_disable(&np->napi);
	/* clearing the enables stops all ring access by the device */
	rnic_reg_write(rdev, RNIC_REG_ETH_CTRL, 0);
	rnic_reg_read(rdev, RNIC_REG_ETH_CTRL);
	rnic_link_update(np, true);
	rnic_rings_free(np);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* configuration                                                          */
/* ---------------------------------------------------------------------- */

static void rnic_write_mac(struct rnic_dev *rdev, const u8 *mac)
{
	rnic_reg_write(rdev, RNIC_REG_MAC_LO, mac[0] | mac[1] << 8 |
		       mac[2] << 16 | (u32)mac[3] << 24);
	rnic_reg_write(rdev, RNIC_REG_MAC_HI, mac[4] | mac[5] << 8);
}

static int rnic_set_mac_address(struct net_device *ndev, void *p)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	struct sockaddr *addr = p;

	if (!is_valid_ether_addr(addr->sa_data))
		return -EADDRNOTAVAIL;
	eth_hw_addr_set(ndev, addr->sa_data);
	rnic_write_mac(np->rdev, ndev->dev_addr);
	return 0;
}

static int rnic_change_mtu(struct net_device *ndev, int mtu)
{
	bool running = netif_running(ndev);
	int ret = 0;

	/* RX buffers are sized by the MTU: restart the rings */
	if (running)
		rnic_stop(ndev);
	WRITE_ONCE(ndev->mtu, mtu);
	if (running)
		ret = rnic_open(ndev);
	return ret;
}

static void rnic_set_rx_mode(struct net_device *ndev)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	struct rnic_dev *rdev = np->rdev;
	struct netdev_hw_addr *ha;
	u32 ctrl, mode = RNIC_ETH_BROADCAST;
	u64 hash = 0;

	if (ndev->flags & IFF_PROMISC)
		mode |= RNIC_ETH_PROMISC;
	if (ndev->flags & IFF_ALLMULTI)
		mode |= RNIC_ETH_ALLMULTI;
	netdev_for_each_mc_addr(ha, ndev)
		hash |= 1ull << rnic_eth_mc_hash_index(ha->addr);
	rnic_reg_write(rdev, RNIC_REG_ETH_MC_HASH_LO, lower_32_bits(hash));
	rnic_reg_write(rdev, RNIC_REG_ETH_MC_HASH_HI, upper_32_bits(hash));
	ctrl = rnic_reg_read(rdev, RNIC_REG_ETH_CTRL);
	ctrl &= RNIC_ETH_TX_EN | RNIC_ETH_RX_EN;
	rnic_reg_write(rdev, RNIC_REG_ETH_CTRL, ctrl | mode);
}

static void rnic_get_stats64(struct net_device *ndev,
			     struct rtnl_link_stats64 *s)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&np->syncp);
		s->tx_packets = np->tx_packets;
		s->tx_bytes = np->tx_bytes;
		s->tx_errors = np->tx_errors;
		s->tx_dropped = np->tx_dropped;
		s->rx_packets = np->rx_packets;
		s->rx_bytes = np->rx_bytes;
		s->rx_errors = np->rx_errors;
		s->rx_dropped = np->rx_dropped;
		s->rx_length_errors = np->rx_length_errors;
	} while (u64_stats_fetch_retry(&np->syncp, start));
}

static const struct net_device_ops rnic_netdev_ops = {
	.ndo_change_mtu = rnic_change_mtu,
	.ndo_get_stats64 = rnic_get_stats64,
	.ndo_open = rnic_open,
	.ndo_set_mac_address = rnic_set_mac_address,
	.ndo_set_rx_mode = rnic_set_rx_mode,
	.ndo_start_xmit = rnic_start_xmit,
	.ndo_stop = rnic_stop,
	.ndo_validate_addr = eth_validate_addr,
};

/* ---------------------------------------------------------------------- */
/* ethtool                                                                */
/* ---------------------------------------------------------------------- */

static void rnic_get_drvinfo(struct net_device *ndev,
			     struct ethtool_drvinfo *info)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	u32 v = np->rdev->caps.abi_version;

	strscpy(info->driver, RNIC_DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "abi-%u.%u",
		 v >> 16, v & 0xffff);
	strscpy(info->bus_info, pci_name(np->rdev->pdev), sizeof(info->bus_info));
}

static int rnic_get_link_ksettings(struct net_device *ndev,
				   struct ethtool_link_ksettings *ks)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	ks->base.speed = netif_carrier_ok(ndev) ?
			 np->rdev->caps.link_speed_mbps : SPEED_UNKNOWN;
	ks->base.duplex = DUPLEX_FULL;
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static int rnic_get_sset_count(struct net_device *ndev, int sset)
{
	return sset == ETH_SS_STATS ? RNIC_STAT_COUNT : -EOPNOTSUPP;
}

static void rnic_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	u32 i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < RNIC_STAT_COUNT; i++, data += ETH_GSTRING_LEN)
		rnic_stat_name(i, (char *)data);
}

/* The device's own counters (RNIC_REG_STAT_BASE), whole function. */
static void rnic_get_ethtool_stats(struct net_device *ndev,
				   struct ethtool_stats *stats, u64 *data)
{
	struct rnic_netdev_priv *np = netdev_priv(ndev);
	u32 i;

	for (i = 0; i < RNIC_STAT_COUNT; i++)
		data[i] = rnic_stat_read(np->rdev, i);
}

static const struct ethtool_ops rnic_ethtool_ops = {
	.get_drvinfo = rnic_get_drvinfo,
	.get_ethtool_stats = rnic_get_ethtool_stats,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = rnic_get_link_ksettings,
	.get_sset_count = rnic_get_sset_count,
	.get_strings = rnic_get_strings,
};

/* ---------------------------------------------------------------------- */
/* init / fini                                                            */
/* ---------------------------------------------------------------------- */

int rnic_netdev_init(struct rnic_dev *rdev)
{
	struct pci_dev *pdev = rdev->pdev;
	struct rnic_netdev_priv *np;
	struct net_device *ndev;
	u32 lo, hi;
	u8 mac[ETH_ALEN];
	int ret;

	if (!(rdev->caps.caps & RNIC_CAP_ETH)) {
		dev_info(&pdev->dev, "no Ethernet function: loopback RNIC only\n");
		return 0;
	}
	lo = rnic_reg_read(rdev, RNIC_REG_MAC_LO);
	hi = rnic_reg_read(rdev, RNIC_REG_MAC_HI);
	mac[0] = lo;
	mac[1] = lo >> 8;
	mac[2] = lo >> 16;
	mac[3] = lo >> 24;
	mac[4] = hi;
	mac[5] = hi >> 8;
	memcpy(rdev->caps.mac, mac, ETH_ALEN);

	ndev = alloc_etherdev(sizeof(*np));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &pdev->dev);
	np = netdev_priv(ndev);
	np->rdev = rdev;
	np->ndev = ndev;
	spin_lock_init(&np->link_lock);
	u64_stats_init(&np->syncp);
	ndev->netdev_ops = &rnic_netdev_ops;
	ndev->ethtool_ops = &rnic_ethtool_ops;
	ndev->min_mtu = RNIC_ETH_MTU_MIN;
	ndev->max_mtu = rdev->caps.max_mtu;
	ndev->mtu = min_t(u32, ETH_DATA_LEN, ndev->max_mtu);
	ndev->irq = pci_irq_vector(pdev, rdev->eth_vector);
	if (is_valid_ether_addr(mac)) {
		eth_hw_addr_set(ndev, mac);
	} else {
		eth_hw_addr_random(ndev);
		rnic_write_mac(rdev, ndev->dev_addr);
	}
	netif_napi_add_weight(ndev, &np->napi, rnic_napi_poll,
			      RNIC_ETH_NAPI_WEIGHT);
	netif_carrier_off(ndev);

	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_MASK, 1);
	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_VECTOR, rdev->eth_vector);
	WRITE_ONCE(rdev->np, np);
	if (rdev->eth_vector != RNIC_AQ_VECTOR) {
		snprintf(rdev->eth_irq_name, sizeof(rdev->eth_irq_name),
			 "rnic-eth@%s", pci_name(pdev));
		ret = request_irq(ndev->irq, rnic_eth_irq, 0, rdev->eth_irq_name,
				  rdev);
		if (ret)
			goto err_napi;
		np->irq_requested = true;
	}
	ret = register_netdev(ndev);
	if (ret)
		goto err_irq;
	rdev->netdev = ndev;
	return 0;

err_irq:
	if (np->irq_requested)
		free_irq(ndev->irq, rdev);
err_napi:
	WRITE_ONCE(rdev->np, NULL);
	netif_napi_del(&np->napi);
	free_netdev(ndev);
	return ret;
}

void rnic_netdev_fini(struct rnic_dev *rdev)
{
	struct net_device *ndev = rdev->netdev;
	struct rnic_netdev_priv *np;

	if (!ndev)
		return;
	np = netdev_priv(ndev);
	unregister_netdev(ndev);	/* stops the interface */
	rnic_reg_write(rdev, RNIC_REG_ETH_IRQ_MASK, 1);
	if (np->irq_requested)
		free_irq(ndev->irq, rdev);
	WRITE_ONCE(rdev->np, NULL);
	synchronize_irq(pci_irq_vector(rdev->pdev, RNIC_AQ_VECTOR));
	netif_napi_del(&np->napi);
	rdev->netdev = NULL;
	free_netdev(ndev);
}
