// Tiny C wrappers over DPDK's static inline functions, for cgo.
#ifndef SB_DPDK_H
#define SB_DPDK_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_lcore.h>

static inline int sb_errno(void) { return rte_errno; }

static inline uint16_t sb_rx_burst(uint16_t port, uint16_t q, struct rte_mbuf **pkts, uint16_t n) {
	return rte_eth_rx_burst(port, q, pkts, n);
}

static inline uint16_t sb_tx_burst(uint16_t port, uint16_t q, struct rte_mbuf **pkts, uint16_t n) {
	return rte_eth_tx_burst(port, q, pkts, n);
}

static inline char *sb_pktmbuf_append(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_append(m, len); }
static inline int sb_pktmbuf_trim(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_trim(m, len); }
static inline char *sb_pktmbuf_adj(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_adj(m, len); }
static inline char *sb_pktmbuf_prepend(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_prepend(m, len); }
static inline struct rte_mbuf *sb_pktmbuf_alloc(struct rte_mempool *mp) { return rte_pktmbuf_alloc(mp); }
static inline int sb_pktmbuf_alloc_bulk(struct rte_mempool *mp, struct rte_mbuf **m, unsigned n) {
	return rte_pktmbuf_alloc_bulk(mp, m, n);
}
static inline void sb_pktmbuf_free(struct rte_mbuf *m) { rte_pktmbuf_free(m); }
static inline int sb_pktmbuf_chain(struct rte_mbuf *head, struct rte_mbuf *tail) { return rte_pktmbuf_chain(head, tail); }
static inline uint16_t sb_tailroom(const struct rte_mbuf *m) { return rte_pktmbuf_tailroom(m); }
static inline uint16_t sb_headroom(const struct rte_mbuf *m) { return rte_pktmbuf_headroom(m); }

// sb_rx_info receives a burst and reports each frame's data address, total
// length and segment count, so Go copies without one cgo call per frame.
static inline uint16_t sb_rx_info(uint16_t port, uint16_t q, struct rte_mbuf **pkts, uint16_t n,
		void **data, uint32_t *len, uint16_t *segs) {
	uint16_t k = rte_eth_rx_burst(port, q, pkts, n);
	for (uint16_t i = 0; i < k; i++) {
		data[i] = rte_pktmbuf_mtod(pkts[i], void *);
		len[i] = rte_pktmbuf_pkt_len(pkts[i]);
		segs[i] = pkts[i]->nb_segs;
	}
	return k;
}

// sb_copy_chain copies up to cap bytes of a (possibly chained) frame.
static inline uint32_t sb_copy_chain(const struct rte_mbuf *m, void *dst, uint32_t cap) {
	uint32_t off = 0;
	for (; m != NULL && off < cap; m = m->next) {
		uint32_t l = m->data_len;
		if (l > cap - off)
			l = cap - off;
		memcpy((char *)dst + off, rte_pktmbuf_mtod(m, const char *), l);
		off += l;
	}
	return off;
}

// sb_tx_prepare allocates n mbufs sized lens[i] and reports where to write
// each frame. It returns 0, -1 when the pool is empty, -2 when a frame does
// not fit one mbuf (nothing is allocated then).
static inline int sb_tx_prepare(struct rte_mempool *mp, struct rte_mbuf **pkts, const uint16_t *lens,
		uint16_t n, void **data) {
	if (rte_pktmbuf_alloc_bulk(mp, pkts, n) != 0)
		return -1;
	for (uint16_t i = 0; i < n; i++) {
		if (lens[i] > rte_pktmbuf_tailroom(pkts[i])) {
			rte_pktmbuf_free_bulk(pkts, n);
			return -2;
		}
		pkts[i]->data_len = lens[i];
		pkts[i]->pkt_len = lens[i];
		data[i] = rte_pktmbuf_mtod(pkts[i], void *);
	}
	return 0;
}

// sb_tx_send transmits n mbufs and frees those the queue refused.
static inline uint16_t sb_tx_send(uint16_t port, uint16_t q, struct rte_mbuf **pkts, uint16_t n) {
	uint16_t k = rte_eth_tx_burst(port, q, pkts, n);
	if (k < n)
		rte_pktmbuf_free_bulk(pkts + k, n - k);
	return k;
}

// sb_port_setup configures, sets up the queues of and starts a port.
static inline int sb_port_setup(uint16_t port, uint16_t nrx, uint16_t ntx, uint16_t rxd, uint16_t txd,
		struct rte_mempool *mp, int promisc, int *stage) {
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof conf);
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = SOCKET_ID_ANY;
	int rc;
	*stage = 0;
	if ((rc = rte_eth_dev_configure(port, nrx, ntx, &conf)) != 0)
		return rc;
	*stage = 1;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd)) != 0)
		return rc;
	*stage = 2;
	for (uint16_t q = 0; q < nrx; q++)
		if ((rc = rte_eth_rx_queue_setup(port, q, rxd, (unsigned)socket, NULL, mp)) != 0)
			return rc;
	*stage = 3;
	for (uint16_t q = 0; q < ntx; q++)
		if ((rc = rte_eth_tx_queue_setup(port, q, txd, (unsigned)socket, NULL)) != 0)
			return rc;
	*stage = 4;
	if ((rc = rte_eth_dev_start(port)) != 0)
		return rc;
	*stage = 5;
	if (promisc)
		rte_eth_promiscuous_enable(port); /* not every vdev supports it */
	return 0;
}

// The output side of a zero-copy forwarding loop (Go type TxBatch): per
// burst the loop queues mbufs to transmit on one of two ports, mbufs to
// free, and takes empty mbufs for the frames it generates from a stock;
// sb_txb_flush then does all of it in one call.
#define SB_TXB_MAX 8192
#define SB_TXB_STOCK 512
#define SB_TXB_DRAIN 512

struct sb_txbatch {
	struct rte_mempool *mp;
	uint16_t port[2];
	int32_t sink; // benchmark: a port whose RX is drained and freed on each flush, or -1
	uint32_t ntx[2], nfree, nstock, want;
	uint64_t txdrops, nombuf, drained;
	struct rte_mbuf *tx[2][SB_TXB_MAX];
	struct rte_mbuf *free[SB_TXB_MAX];
	struct rte_mbuf *stock[SB_TXB_STOCK];
};

// sb_txb_refill tops the stock up to want mbufs: in one bulk allocation, or
// one by one when the pool has fewer left.
static inline void sb_txb_refill(struct sb_txbatch *b) {
	if (b->nstock >= b->want)
		return;
	if (rte_pktmbuf_alloc_bulk(b->mp, b->stock + b->nstock, b->want - b->nstock) == 0) {
		b->nstock = b->want;
		return;
	}
	for (; b->nstock < b->want; b->nstock++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(b->mp);
		if (m == NULL) {
			b->nombuf++;
			return;
		}
		b->stock[b->nstock] = m;
	}
}

// sb_txb_flush transmits both TX lists (queue 0), frees what the devices
// refused (counted in txdrops) and the free list, drains the sink, and
// refills the stock.
static inline void sb_txb_flush(struct sb_txbatch *b) {
	for (int s = 0; s < 2; s++) {
		uint32_t n = b->ntx[s], sent = 0;
		while (sent < n) {
			uint32_t want = n - sent;
			uint16_t k = rte_eth_tx_burst(b->port[s], 0, b->tx[s] + sent, want > 0xffff ? 0xffff : (uint16_t)want);
			if (k == 0)
				break;
			sent += k;
		}
		if (sent < n) {
			rte_pktmbuf_free_bulk(b->tx[s] + sent, n - sent);
			b->txdrops += n - sent;
		}
		b->ntx[s] = 0;
	}
	if (b->nfree > 0) {
		rte_pktmbuf_free_bulk(b->free, b->nfree);
		b->nfree = 0;
	}
	if (b->sink >= 0) {
		uint16_t k;
		do {
			k = rte_eth_rx_burst((uint16_t)b->sink, 0, b->free, SB_TXB_DRAIN);
			rte_pktmbuf_free_bulk(b->free, k);
			b->drained += k;
		} while (k == SB_TXB_DRAIN);
	}
	sb_txb_refill(b);
}

// sb_txb_flush_rx flushes b, then receives a burst from port's queue q.
static inline uint16_t sb_txb_flush_rx(struct sb_txbatch *b, uint16_t port, uint16_t q,
		struct rte_mbuf **pkts, uint16_t n) {
	sb_txb_flush(b);
	return rte_eth_rx_burst(port, q, pkts, n);
}

#endif
