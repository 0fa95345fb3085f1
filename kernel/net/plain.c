// The plain transport: a call's packets, each with its Ethernet and wire
// header in the channel's header pages, the payload straight from the
// caller's pages (one of IO_TX_COPY bytes or less copied behind the
// header: one descriptor instead of two), grouped by link (a striped channel's packets take its
// peer's live links in turn) and handed to the transmit batch.
#include "plain.h"
#include "txbatch.h"
#include "stripe.h"
#include "relay.h"
#include "demux.h"
#include "transport.h"
#include "../res/io_priv.h"
#include "../res/pmem.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

// Slot i of the channel's header pages (of every bank: the call's bank
// starts at slot bank * IO_MAX_BATCH).
static uint8_t *hdr_slot(struct io *c, uint32_t i, paddr_t *pa)
{
	uint64_t off = (uint64_t)i * IO_HDR_SLOT;
	*pa = c->x.hdr[off / PAGE_SIZE] + off % PAGE_SIZE;
	return arch_p2v(*pa);
}

// The 30 header bytes common to a call's packets to one peer on one link;
// per packet only the flags, sequence number and length differ.
static void header_template(struct io *c, uint8_t *t, int nic, uint64_t peer)
{
	wire_put_eth(t, c->x.peer[peer][nic], netdev_get(nic)->mac);
	wire_put_hdr(t, &(struct wire_fields){ .channel = c->channel, .batch = (uint16_t)c->n_out,
					       .link = (uint16_t)nic });
}

static void build_header(struct io *c, uint8_t *h, const uint8_t *tmpl, uint64_t peer,
			 uint64_t size, uint16_t flags)
{
	__builtin_memcpy(h, tmpl, WIRE_FRAME_HLEN);
	wire_set_flags(h, flags);
	wire_set_seq(h, c->x.seq[peer]++);
	wire_set_len(h, (uint32_t)size);
}

// A payload of at most IO_TX_COPY bytes, copied behind its header h: the
// packet is then one segment. From the frames looked up when the send was
// checked, so what goes is what the call held (no later write by the
// caller reaches the wire).
static void copy_packet(struct io *c, struct netpkt *p, uint8_t *h, paddr_t hdr, uint64_t pos, uint64_t size,
			const struct io_pktpages *pf, uint64_t cookie)
{
	uint8_t *d = h + WIRE_FRAME_HLEN;
	for (uint64_t left = size, k = 0; left > 0; k++) {
		uint64_t in_page = PAGE_SIZE - pos % PAGE_SIZE, n = left < in_page ? left : in_page;
		memcpy(d, (const uint8_t *)arch_p2v(pf->f[k]) + pos % PAGE_SIZE, n);
		d += n, pos += n, left -= n;
	}
	p->nseg = 1;
	p->seg[0] = (struct netseg){ hdr, (uint32_t)(WIRE_FRAME_HLEN + size) };
	p->cookie = cookie;
	c->st.tx_bytes_copied += size;
}

// Gather list: the header (none for a raw frame), then the payload cut at
// page boundaries, in the frames looked up when the send was checked.
static void build_packet(struct netpkt *p, paddr_t hdr, uint64_t pos, uint64_t size,
			 const struct io_pktpages *pf, uint64_t cookie)
{
	p->nseg = 0;
	if (hdr)
		p->seg[p->nseg++] = (struct netseg){ hdr, WIRE_FRAME_HLEN };
	for (int k = 0; size > 0; k++) {
		uint64_t in_page = PAGE_SIZE - pos % PAGE_SIZE;
		uint32_t len = (uint32_t)(size < in_page ? size : in_page);
		p->seg[p->nseg++] = (struct netseg){ pf->f[k] + pos % PAGE_SIZE, len };
		pos += len;
		size -= len;
	}
	p->cookie = cookie;
}

static void account(struct io *c, const struct io_txcall *t, long *ret);

// A call's packets, grouped by the link each goes on (a packet's link is
// round-robin over its peer's live links on a striped channel), each
// group sent with one doorbell (more when paced or the ring fills).
long plain_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	     const struct io_pktpages *frames)
{
	uint8_t tmpl[NETDEV_MAX][WIRE_FRAME_HLEN];
	uint64_t tmpl_peer[NETDEV_MAX];
	int first[NETDEV_MAX + 1], at[NETDEV_MAX], top = io_nic_top(c);
	struct io_txcall *t = c->x.tx;
	uint16_t stripe = stripe_active(c) ? WIRE_F_STRIPE : 0;
	if (!txb_wait_bank(c)) // the call before the last is done with this bank
		return -E_BUSY;
	uint64_t cookie = txb_cookie(c); // names the bank
	uint32_t slot0 = (uint32_t)c->x.bank * IO_MAX_BATCH;
	for (int n = 0; n <= top; n++)
		first[n] = 0;
	for (uint32_t i = 0; i < c->n_out; i++) {
		int nic = stripe ? stripe_next_link(c, peers[i]) : c->nic;
		t->peer[i] = peers[i], t->size[i] = sizes[i], t->nic[i] = (int8_t)nic, t->sent[i] = 0;
		if (nic >= 0) // else every link of the peer went down since the check
			first[nic + 1]++;
	}
	for (int n = 0; n < top; n++) {
		first[n + 1] += first[n];
		at[n] = first[n];
		tmpl_peer[n] = UINT64_MAX;
	}
	for (uint32_t i = 0; i < c->n_out; i++) { // in call order: sequence numbers too
		int nic = t->nic[i];
		if (nic < 0)
			continue;
		paddr_t hpa = 0;
		uint8_t *h = NULL;
		if (!c->x.raw) {
			h = hdr_slot(c, slot0 + i, &hpa);
			if (peers[i] != tmpl_peer[nic])
				header_template(c, tmpl[nic], nic, tmpl_peer[nic] = peers[i]);
			build_header(c, h, tmpl[nic], peers[i], sizes[i],
				     (uint16_t)((i + 1 == c->n_out ? WIRE_F_LAST : 0) | stripe |
						relay_flag(c, peers[i])));
		}
		t->idx[at[nic]] = (uint8_t)i;
		if (h && sizes[i] <= IO_TX_COPY)
			copy_packet(c, &t->pkts[at[nic]], h, hpa, pos[i], sizes[i], &frames[i], cookie);
		else
			build_packet(&t->pkts[at[nic]], hpa, pos[i], sizes[i], &frames[i], cookie);
		if (hpa && relay_flag(c, peers[i])) // the route trailer, after the header in its slot
			relay_trailer(c, peers[i], arch_p2v(hpa + IO_HDR_SLOT / 2), hpa + IO_HDR_SLOT / 2,
					 &t->pkts[at[nic]]);
		at[nic]++;
	}
	struct txgroup g[NETDEV_MAX];
	for (int n = 0; n < top; n++)
		g[n] = (struct txgroup){ .p = t->pkts + first[n], .n = first[n + 1] - first[n] };
	txb_send_groups(c, g);
	long ret = -E_BUSY;
	for (int n = 0; n < top; n++) {
		if (g[n].err && !g[n].done)
			ret = g[n].err;
		for (int k = 0; k < g[n].done; k++)
			t->sent[t->idx[first[n] + k]] = 1;
	}
	account(c, t, &ret);
	c->x.bank = (uint8_t)((c->x.bank + 1) % IO_HDR_BANKS);
	return ret;
}

// Counts what left. Sequence numbers of a peer's packets that never left
// and were the last to it are given back (the receiver sees no gap); one
// that did not leave before one that did is a hole the receiver will
// report (-E_GAP): those after it are counted as stranded.
// *ret becomes how many left, or stays the error when none did.
static void account(struct io *c, const struct io_txcall *t, long *ret)
{
	uint32_t sent = 0;
	uint32_t later_sent = 0; // bit p: a packet to peer p left after this point
	for (uint32_t i = c->n_out; i-- > 0;) {
		uint32_t pb = 1u << (t->peer[i] % 32);
		if (t->sent[i]) {
			sent++;
			later_sent |= pb;
			c->st.tx_bytes += t->size[i];
		} else if (!c->x.raw && !(later_sent & pb)) {
			c->x.seq[t->peer[i]]--;
		} else if (!c->x.raw) {
			c->st.tx_stranded++;
		}
	}
	c->st.tx_packets += sent;
	c->st.tx_batches += sent > 0;
	if (sent)
		*ret = sent;
}

// ------------------------------------------------------- the ops tables

static bool peer_reachable(struct io *c, uint64_t peer)
{
	IO_FOR_EACH_NIC(c, n)
		if ((c->x.peer_links[peer] & (1u << n)) && netdev_get(n)->ops->link_up(netdev_get(n)))
			return true;
	return false;
}

static long plain_check_one(struct io *c, bool striped, uint64_t peer, uint64_t size)
{
	if (peer >= IO_MAX_PEERS || !(c->x.peer_valid & (1u << peer)))
		return -E_NOENT;
	if (striped && !peer_reachable(c, peer))
		return -E_LINK; // every link the peer is known on is down
	return size > WIRE_MAX_PAYLOAD ? -E_2BIG : 0;
}

static uint32_t plain_check(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err)
{
	bool striped = stripe_active(c);
	for (uint32_t i = 0; i < n; i++)
		if ((*err = plain_check_one(c, striped, peers[i], sizes[i])))
			return i;
	return n;
}

// A striped channel sends on whichever of its peer's links are up.
static long plain_check_call(struct io *c)
{
	return stripe_active(c) || c->dev->ops->link_up(c->dev) ? 0 : -E_LINK;
}

static uint32_t raw_check(struct io *c, const uint64_t *peers, const uint64_t *sizes, uint32_t n, long *err)
{
	(void)peers;
	for (uint32_t i = 0; i < n; i++)
		if ((*err = sizes[i] < c->dev->min_frame ? -E_INVAL : sizes[i] > c->dev->max_frame ? -E_2BIG : 0))
			return i;
	return n;
}

static long raw_check_call(struct io *c) { return c->dev->ops->link_up(c->dev) ? 0 : -E_LINK; }

// A striped packet of an unreliable channel: into its peer's order. A
// control packet is some reliable peer's: not reliable here, its
// heartbeats are ignored.
static void plain_input(struct io *c, int nic, const struct pkt *f, int peer)
{
	const uint8_t *b = arch_p2v(f->buf[0]);
	if (wire_get_flags(b) & (WIRE_F_ACK | WIRE_F_HBEAT)) {
		demux_give_back(f);
		return;
	}
	c->st.link_rx[nic]++;
	stripe_order(c, peer, wire_get_seq(b), f);
}

static uint64_t plain_deadline(struct io *c) { return stripe_gap_deadline(c); }

const struct xport_ops xport_plain = {
	.name = "plain", .check = plain_check, .check_call = plain_check_call, .send = plain_send,
	.input = plain_input, .deadline = plain_deadline,
};

// A raw channel only sends (its channel number is 0: no packet finds it).
const struct xport_ops xport_raw = {
	.name = "raw", .check = raw_check, .check_call = raw_check_call, .send = plain_send,
	.input = plain_input,
};
