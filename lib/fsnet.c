// The file service's transport: channels, control packets, chunks sent by
// page loan or copy and received by copy (fsnet.h).
#include "fsnet.h"
#include <ulib.h>
#include <netutil.h>

static long region_at(uint64_t bytes, uint64_t addr)
{
	long vr = create_vr(bytes, VR_MEM_ALL, -1);
	if (vr < 0)
		return vr;
	long vu = attach_vr(vr, 0, addr);
	if (vu < 0) {
		delete_vr(vr);
		return vu;
	}
	return vr;
}

static long ch_peers(struct fs_ch *c, uint8_t mask, const char *p)
{
	long e = p && *p ? 0 : -E_INVAL;
	for (int nic = 0; !e && *p && nic < 8; nic++) {
		if (!(mask & (1u << nic)))
			continue;
		uint8_t mac[6];
		if (*p != '-')
			e = parse_mac(p, mac) < 0 ? -E_INVAL
						  : ctrl_io(c->io, IO_OP_PEER, (unsigned long)mac, 0, (unsigned long)nic);
		while (*p && *p++ != ',')
			;
	}
	return e;
}

// One reliable channel: n_in receive slots, an output region of out_bytes.
static long ch_open(struct fs_ch *c, uint64_t dev, uint32_t n_in, uint32_t n_out, uint64_t out_bytes,
		    uint64_t addr, const char *peers, uint32_t timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->n_in = n_in, c->n_out = n_out, c->out_bytes = out_bytes;
	c->in_addr = addr, c->out_addr = addr + FSN_STRIDE / 2;
	long e = get_io(dev, n_in, n_out, &c->io);
	if (e < 0) {
		c->io = 0;
		return e;
	}
	struct io_regions r = { .in_addr = c->in_addr, .in_size = n_in * FSN_SLOT, .out_addr = c->out_addr,
				.out_size = out_bytes };
	if ((c->in_vr = r.in_vr = region_at(r.in_size, c->in_addr)) < 0)
		return c->in_vr;
	if ((c->out_vr = r.out_vr = region_at(out_bytes, c->out_addr)) < 0)
		return c->out_vr;
	if ((e = ctrl_io(c->io, IO_OP_REGIONS, (unsigned long)&r, 0, 0)) < 0 ||
	    (e = ctrl_io(c->io, IO_OP_RELIABLE, 1, 0, 0)) < 0 ||
	    (e = ctrl_io(c->io, IO_OP_TIMEOUT, (unsigned long)timeout_ms * 1000, 0, 0)) < 0)
		return e;
	return ch_peers(c, (uint8_t)(dev & 0xff), peers);
}

static void ch_close(struct fs_ch *c)
{
	if (c->io <= 0)
		return;
	for (int k = 0; k < 1000 && ctrl_io(c->io, IO_OP_RECLAIM, 0, 0, 0) > 0; k++)
		sleep(1000);
	free_io(c->io);
	if (c->in_vr > 0)
		delete_vr(c->in_vr);
	if (c->out_vr > 0)
		delete_vr(c->out_vr);
	c->io = 0;
}

long fsn_open(struct fs_net *n, const struct fs_cfg *cfg, uint8_t mask, uint16_t chan_base, const char *peers,
	      int index, uint32_t timeout_ms)
{
	memset(n, 0, sizeof(*n));
	if (fs_cfg_check(cfg) < 0 || !mask)
		return -E_INVAL;
	n->cfg = *cfg;
	n->timeout_ms = timeout_ms;
	n->slot_bytes = cfg->chunk + 8192ul;
	uint64_t base = FSN_BASE + (uint64_t)index * (FS_MAX_STREAMS + 1) * FSN_STRIDE;
	long e = ch_open(&n->ctl, IO_DEV(IO_KIND_ETHER, chan_base, mask), 1, 1, FSN_CTL_RING * FSN_SLOT, base, peers,
			 timeout_ms);
	for (uint32_t s = 0; !e && s < cfg->streams; s++) {
		n->nstreams++;
		e = ch_open(&n->data[s], IO_DEV(IO_KIND_ETHER, chan_base + 1 + s, mask), cfg->batch, cfg->batch,
			    cfg->window * n->slot_bytes + 4096, base + (s + 1) * FSN_STRIDE, peers, timeout_ms);
		if (!e) { // the filler packets' bytes, in the last page
			struct fs_ch *c = &n->data[s];
			memset((uint8_t *)c->out_addr + c->out_bytes - 4096, 'P', 4096);
		}
	}
	if (e)
		fsn_close(n);
	return e;
}

// Waits until f(n, arg) stops saying -E_BUSY, at most timeout_ms, while
// acknowledgements come in (the NIC's interrupt takes them).
static long retry_busy(struct fs_net *n, struct fs_ch *c, long (*f)(struct fs_net *, void *), void *arg)
{
	uint64_t t0 = (uint64_t)time();
	long e;
	for (int k = 0; (e = f(n, arg)) == -E_BUSY; k++) {
		ctrl_io(c->io, IO_OP_RECLAIM, 0, 0, 0);
		if ((uint64_t)time() - t0 > (uint64_t)n->timeout_ms * 1000)
			return -E_TIMEOUT;
		if (k > 100)
			sleep(200);
		else
			yield();
	}
	return e;
}

struct slot_ref {
	int s;
	uint32_t w;
};

// Frees window slot w of stream s once the peer acknowledged every packet
// sent from it (io_stats.tx_acked counts them in order): its own bytes
// (the mark, copied data) may be written again, and its lent pages go back
// to their region.
static long slot_free_once(struct fs_net *n, void *arg)
{
	struct slot_ref *r = arg;
	struct fs_loan *l = &n->win[r->s][r->w];
	struct fs_ch *c = &n->data[r->s];
	struct io_stats st;
	long e = ctrl_io(c->io, IO_OP_STATS, (unsigned long)&st, 0, 0);
	if (e < 0 || st.tx_acked < l->sent_mark)
		return e < 0 ? e : -E_BUSY;
	if (l->src_vr > 0) {
		e = exchange_pmem(l->src_vr, c->out_vr, l->src_page * 4096, l->slot_off, l->pages);
		if (e == 0)
			l->src_vr = 0;
	}
	return e;
}

static long slot_free(struct fs_net *n, int s, uint32_t w)
{
	struct slot_ref r = { s, w };
	return retry_busy(n, &n->data[s], slot_free_once, &r);
}

long fsn_return_loans(struct fs_net *n)
{
	long e = 0;
	for (int s = 0; s < n->nstreams; s++)
		for (uint32_t w = 0; w < n->cfg.window; w++)
			if (n->win[s][w].src_vr > 0) {
				long r = slot_free(n, s, w);
				e = e ? e : r;
			}
	return e;
}

void fsn_close(struct fs_net *n)
{
	fsn_return_loans(n);
	for (int s = 0; s < n->nstreams; s++)
		ch_close(&n->data[s]);
	ch_close(&n->ctl);
	n->nstreams = 0;
}

// The control ring's slot k may be written again once the packet sent from
// it FSN_CTL_RING packets ago was acknowledged.
static long ctl_free_once(struct fs_net *n, void *arg)
{
	(void)arg;
	struct io_stats st;
	if (n->ctl.sent < FSN_CTL_RING)
		return 0;
	long e = ctrl_io(n->ctl.io, IO_OP_STATS, (unsigned long)&st, 0, 0);
	return e < 0 ? e : st.tx_acked + FSN_CTL_RING > n->ctl.sent ? 0 : -E_BUSY;
}

long fsn_ctl_send_raw(struct fs_net *n, const void *p, uint64_t len)
{
	struct fs_ch *c = &n->ctl;
	if (len > FS_PKT_MAX)
		return -E_2BIG;
	long e = retry_busy(n, c, ctl_free_once, NULL);
	if (e < 0)
		return e;
	uint32_t k = n->ctl_next++ % FSN_CTL_RING;
	memcpy((uint8_t *)c->out_addr + k * FSN_SLOT, p, len);
	c->peers[0] = 0, c->osize[0] = len ? len : 1, c->opos[0] = k * FSN_SLOT;
	e = output_io(c->io, c->peers, c->osize, c->opos);
	if (e == 1)
		c->sent++;
	return e == 1 ? 0 : e < 0 ? e : -E_BUSY;
}

long fsn_ctl_send(struct fs_net *n, const struct fs_msg *m, const void *data)
{
	static uint8_t buf[FS_PKT_MAX];
	if (m->inline_len > FS_INLINE_MAX)
		return -E_2BIG;
	fs_msg_encode(buf, m);
	if (m->inline_len)
		memcpy(buf + FS_HDR_LEN, data, m->inline_len);
	return fsn_ctl_send_raw(n, buf, FS_HDR_LEN + m->inline_len);
}

// The next packet of channel c: its index in c's batch, or -E_*.
static long ch_next(struct fs_ch *c)
{
	if (c->next == c->have) {
		long r = input_io(c->io, c->sizes, c->pos);
		if (r < 0)
			return r;
		c->have = (uint32_t)r, c->next = 0;
		if (!r)
			return -E_TIMEOUT;
	}
	return c->next++;
}

long fsn_ctl_recv(struct fs_net *n, const uint8_t **p, uint64_t *len)
{
	struct fs_ch *c = &n->ctl;
	long i = ch_next(c);
	if (i < 0)
		return i;
	*p = (const uint8_t *)c->in_addr + c->pos[i];
	*len = c->sizes[i];
	return 0;
}

long fsn_send_chunk(struct fs_net *n, int s, uint32_t rid, uint32_t k, long vr, uint64_t roff, const uint8_t *p,
		    uint64_t len, uint64_t *sum)
{
	struct fs_ch *c = &n->data[s];
	uint64_t lead = vr > 0 ? roff % 4096 : 0;
	if (!len || 4096 + lead + len > n->slot_bytes)
		return -E_2BIG;
	uint32_t w = n->win_next[s]++ % n->cfg.window;
	long e = slot_free(n, s, w);
	if (e < 0)
		return e;
	// The slot: its own first page, whose end holds the mark, then the
	// data at its alignment in the region. A partial first page (head) is
	// copied, the whole pages under the rest are lent.
	uint64_t soff = w * n->slot_bytes, at = soff + 4096 + lead;
	uint64_t head = vr <= 0 ? len : !lead ? 0 : 4096 - lead < len ? 4096 - lead : len;
	*sum = fs_sum(p, len);
	if (head) {
		memcpy((uint8_t *)c->out_addr + at, p, head);
		n->copied_tx += head;
	}
	if (head < len) { // at + head is page-aligned
		uint64_t pages = (len - head + 4095) / 4096;
		if ((e = exchange_pmem(vr, c->out_vr, roff + head, at + head, pages)) < 0)
			return e;
		n->win[s][w] = (struct fs_loan){ .src_vr = vr, .src_page = (roff + head) / 4096, .pages = pages,
						 .slot_off = at + head };
		n->pages_loaned += pages;
	}
	fs_mark_put((uint8_t *)c->out_addr + at - FS_MARK_LEN, rid, k, len);
	uint32_t padded, np = fs_chunk_pkts(len, n->cfg.batch, &padded), B = n->cfg.batch;
	for (uint32_t j = 0; j < padded; j++) {
		uint32_t i = j % B;
		uint64_t left = len - (uint64_t)j * FS_DATA_PKT;
		c->peers[i] = 0;
		if (j < np) {
			c->opos[i] = at + (uint64_t)j * FS_DATA_PKT;
			c->osize[i] = left < FS_DATA_PKT ? left : FS_DATA_PKT;
			if (j == 0) // the mark leads
				c->opos[i] -= FS_MARK_LEN, c->osize[i] += FS_MARK_LEN;
		} else {
			c->opos[i] = c->out_bytes - 4096 + (uint64_t)(j - np) * FS_PAD_LEN;
			c->osize[i] = FS_PAD_LEN;
		}
		if (i == B - 1) {
			long r = output_io(c->io, c->peers, c->osize, c->opos);
			if (r != (long)B)
				return r < 0 ? r : -E_BUSY;
			c->sent += B;
		}
	}
	n->win[s][w].sent_mark = c->sent;
	return 0;
}

// The next packet of data stream c, waiting out a peer whose every link
// died (it may be only busy or starved: the control channel waits so too)
// until timeout_ms have passed with nothing.
static long data_next(struct fs_net *n, struct fs_ch *c)
{
	uint64_t t0 = (uint64_t)time();
	for (;;) {
		long i = ch_next(c);
		if (i != -E_LINK || (uint64_t)time() - t0 >= (uint64_t)n->timeout_ms * 1000)
			return i;
	}
}

long fsn_recv_chunk(struct fs_net *n, int s, uint32_t rid, uint32_t k, uint8_t *dst, uint64_t len, uint64_t *sum)
{
	struct fs_ch *c = &n->data[s];
	uint32_t padded, np = fs_chunk_pkts(len, n->cfg.batch, &padded);
	uint64_t first = len < FS_DATA_PKT ? len : FS_DATA_PKT;
	long i;
	// Packets before the chunk's mark are what is left of a transfer that
	// its sender or this receiver gave up: dropped, counted.
	for (;;) {
		if ((i = data_next(n, c)) < 0)
			return i;
		if (c->sizes[i] == FS_MARK_LEN + first &&
		    fs_mark_is((const uint8_t *)c->in_addr + c->pos[i], rid, k, len))
			break;
		n->stale_rx++;
	}
	memcpy(dst, (const uint8_t *)c->in_addr + c->pos[i] + FS_MARK_LEN, first);
	n->copied_rx += first;
	long bad = 0;
	for (uint32_t j = 1; j < padded; j++) {
		if ((i = data_next(n, c)) < 0)
			return i;
		uint64_t want = j >= np ? FS_PAD_LEN
			: len - (uint64_t)j * FS_DATA_PKT < FS_DATA_PKT ? len - (uint64_t)j * FS_DATA_PKT : FS_DATA_PKT;
		if (c->sizes[i] != want) {
			bad = -E_INVAL;
			continue;
		}
		if (j < np) {
			memcpy(dst + (uint64_t)j * FS_DATA_PKT, (uint8_t *)c->in_addr + c->pos[i], want);
			n->copied_rx += want;
		}
	}
	*sum = fs_sum(dst, len);
	return bad;
}
