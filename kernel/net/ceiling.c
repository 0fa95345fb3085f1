// The emulated link's ceiling (ceiling.h): a sender that only re-queues a
// ring-full of ready packets and rings the doorbell, a receiver that only
// takes buffers out and puts the same pages back, both through struct
// netdev. Frames are wire.h frames on channel CEIL_CHAN; the wire header's
// batch field carries the mode, link the window, seq the packet's number in
// its window. HELLO and END frames (flags) are answered with a REPLY, so
// the sender starts once the receiver polls and stops once it has seen
// everything.
#include "ceiling.h"
#include "netdev.h"
#include "dma.h"
#include "res/pmem.h"
#include "kprintf.h"
#include "arch/x86_64/timer.h"
#include <err.h>
#include <string.h>
#include <wire.h>

#define CEIL_CHAN 0xCE11
#define F_HELLO WIRE_F_HBEAT
#define F_END WIRE_F_LAST
#define F_CREDIT 0x0100 // the receiver's count of data frames taken, in seq
#define TOKEN_HELLO 0x48454c4fu // seq of a HELLO, echoed in its REPLY
#define TOKEN_END 0x454e44u
#define WINDOW 384      // data frames the sender may have unaccounted for
#define CREDIT_EVERY 64 // the receiver's credit after this many frames at most
#define STALL_US 20000  // nothing queued this long: the frames in flight are counted gone
#define POOL 256              // packets the sender keeps in flight at most
#define FRAME_PAGES 3         // WIRE_MAX_FRAME, contiguous: one segment
#define MAX_SIZES 16
#define MAX_MODES 2
#define MAX_REPS 10
#define MAX_WIN (MAX_SIZES * MAX_MODES * MAX_REPS)
#define RX_BATCH 64
#define HELLO_US 20000        // between HELLOs and ENDs
#define WAIT_US 30000000      // for the peer, either way
#define HALT_TICK_US 20       // the sender's tick while it halts on a full ring

enum { MODE_SPIN, MODE_HALT };
static const char *const mode_name[MAX_MODES] = { "spin", "halt" };

struct params {
	uint32_t sizes[MAX_SIZES];
	int nsizes, modes[MAX_MODES], nmodes, reps;
	uint64_t ms;
	uint8_t peer[6];
};

// ---- parameters ----

static uint64_t dec(const char **s)
{
	uint64_t v = 0;
	while (**s >= '0' && **s <= '9')
		v = v * 10 + (uint64_t)(*(*s)++ - '0');
	return v;
}

static int hexdig(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++, s += 3) {
		int h = hexdig(s[0]), l = h < 0 ? -1 : hexdig(s[1]);
		if (l < 0 || (i < 5 && s[2] != ':'))
			return false;
		mac[i] = (uint8_t)(h << 4 | l);
	}
	return s[-1] == 0;
}

static int parse_modes(const char *s, int *out)
{
	int n = 0;
	while (s && *s && n < MAX_MODES) {
		int m = !strncmp(s, "spin", 4) ? MODE_SPIN : !strncmp(s, "halt", 4) ? MODE_HALT : -1;
		if (m < 0 || (s[4] && s[4] != ','))
			return -E_INVAL;
		out[n++] = m;
		s += 4 + (s[4] == ',');
	}
	return s && *s ? -E_INVAL : n;
}

static int parse(const struct cmdline *c, struct params *p, bool tx)
{
	const char *v = cmdline_get(c, "ceiling_sizes");
	if (!v)
		v = "64,1500,8192";
	for (p->nsizes = 0; *v && p->nsizes < MAX_SIZES; v += *v == ',') {
		uint64_t s = dec(&v);
		if (s < WIRE_MIN_FRAME - WIRE_FRAME_HLEN || s > WIRE_MAX_PAYLOAD || (*v && *v != ','))
			return -E_INVAL;
		p->sizes[p->nsizes++] = (uint32_t)s;
	}
	v = cmdline_get(c, "ceiling_ms");
	p->ms = v ? dec(&v) : 100;
	v = cmdline_get(c, "ceiling_reps");
	p->reps = v ? (int)dec(&v) : 3;
	p->nmodes = parse_modes(cmdline_get(c, "ceiling_modes") ?: "spin,halt", p->modes);
	v = cmdline_get(c, "peer");
	if (tx && (!v || !parse_mac(v, p->peer)))
		return -E_INVAL;
	bool ok = p->nsizes > 0 && p->ms > 0 && p->ms <= 10000 && p->reps > 0 &&
		  p->reps <= MAX_REPS && p->nmodes > 0;
	return ok ? 0 : -E_INVAL;
}

// ---- one small frame each way: HELLO, END, REPLY ----

// The sender's data packets and its control frame come back through one
// tx_reclaim: done/arg is the reclaim callback of the whole side, and the
// control frame's cookie is CTL_COOKIE.
#define CTL_COOKIE (~0ull) // no packet of the pool (0..POOL-1)
struct ctl {
	struct netdev *nd;
	paddr_t page; // the frame in its first WIRE_MIN_FRAME bytes
	bool busy;    // queued, not yet reclaimed
	void (*done)(uint64_t cookie, void *arg);
	void *arg;
};

static void ctl_done(uint64_t cookie, void *arg)
{
	if (cookie == CTL_COOKIE)
		((struct ctl *)arg)->busy = false;
}

// Sends one control frame to dst unless the last is still queued; true
// when it was queued.
static bool ctl_send(struct ctl *c, const uint8_t dst[6], uint16_t flags, uint32_t seq,
		     uint16_t batch)
{
	c->nd->ops->tx_reclaim(c->nd, c->done, c->arg);
	if (c->busy)
		return false;
	uint8_t *f = arch_p2v(c->page);
	wire_put_eth(f, dst, c->nd->mac);
	wire_put_hdr(f, &(struct wire_fields){ .channel = CEIL_CHAN, .flags = flags, .seq = seq,
					       .batch = batch });
	struct netpkt p = { .nseg = 1, .cookie = CTL_COOKIE, .seg = { { c->page, WIRE_MIN_FRAME } } };
	c->busy = c->nd->ops->tx_batch(c->nd, &p, 1) == 1;
	return c->busy;
}

// Waits (bounded) until the control frame has left; false on timeout.
static bool ctl_drain(struct ctl *c)
{
	uint64_t t0 = timer_now_us();
	while (c->busy && timer_now_us() - t0 < WAIT_US) {
		c->nd->ops->tx_reclaim(c->nd, c->done, c->arg);
		arch_pause();
	}
	return !c->busy;
}

// ---- receive side of both: frames out of the ring, the same pages back ----

struct frame {
	struct wire_fields h;
	uint8_t src[6];
	uint16_t type;
	uint32_t len;    // bytes so far
	uint8_t first;   // payload byte 0
	uint8_t last;    // the frame's last byte
	bool open;       // a frame is being assembled
	bool error;
};

// Gives pages back to the ring; a page the ring cannot take is freed.
// Past the rings' own refill list (demux.c): their origin marks go here.
static int give_back(struct netdev *nd, const paddr_t *pg, int n)
{
	for (int i = 0; i < n; i++)
		pmem_set_origin(pg[i], 0);
	int taken = n ? nd->ops->rx_refill(nd, pg, n) : 0;
	for (int i = taken < 0 ? 0 : taken; i < n; i++)
		dma_free_page(pg[i]);
	return taken == n ? 0 : -1;
}

// Adds one buffer to the frame being assembled; true when it ended one.
static bool add_frag(struct frame *f, const struct rxfrag *r)
{
	const uint8_t *v = arch_p2v(r->pa);
	if (!f->open) {
		*f = (struct frame){ .open = true };
		if (r->len >= WIRE_FRAME_HLEN + 1) {
			f->type = wire_get_eth(v, NULL, f->src);
			wire_get_hdr(v, &f->h);
			f->first = v[WIRE_FRAME_HLEN];
		}
	}
	f->len += r->len;
	f->last = r->len ? v[r->len - 1] : 0;
	f->error |= r->error;
	if (r->eop)
		f->open = false;
	return r->eop;
}

// A frame of this run, whole, its payload ends as the sender wrote them.
static bool frame_ok(const struct frame *f)
{
	uint32_t n = f->h.len;
	if (f->error || f->type != WIRE_ETHERTYPE || f->h.channel != CEIL_CHAN)
		return false;
	if (f->h.flags)
		return f->len >= WIRE_FRAME_HLEN;
	return n <= WIRE_MAX_PAYLOAD && f->len == n + WIRE_FRAME_HLEN && f->first == wire_pattern(0, 0) &&
	       f->last == wire_pattern(0, n - 1);
}

// ---- receiver ----

struct window {
	uint16_t mode, win;
	uint32_t bytes;
	uint64_t frames, timed, lost, next_seq;
	uint64_t t_first, t_last;
};

struct rx {
	struct netdev *nd;
	struct ctl ctl;
	struct frame fr;
	struct window w[MAX_WIN];
	int nw;
	uint64_t bad, dup;
	uint32_t taken, credited; // data frames received or lost, and the last credit sent
	uint8_t peer[6];
	int mode;
	bool end;
};

static struct rx rxs;

// Counts one data frame into its window, stamped by its poll's TSC.
static void rx_data(struct rx *x, const struct frame *f, uint64_t stamp)
{
	struct window *w = x->nw ? &x->w[x->nw - 1] : NULL;
	if (!w || w->mode != f->h.batch || w->win != f->h.link || w->bytes != f->h.len) {
		if (x->nw == MAX_WIN) {
			x->bad++;
			return;
		}
		w = &x->w[x->nw++];
		*w = (struct window){ .mode = f->h.batch, .win = f->h.link, .bytes = f->h.len,
				      .t_first = stamp, .t_last = stamp };
		x->mode = f->h.batch < MAX_MODES ? f->h.batch : MODE_SPIN;
	}
	w->frames++;
	x->taken++;
	if (stamp != w->t_first) // frames of the window's first poll start the clock
		w->timed++, w->t_last = stamp;
	if (f->h.seq < w->next_seq)
		x->dup++;
	else
		w->lost += f->h.seq - w->next_seq, x->taken += f->h.seq - w->next_seq,
			w->next_seq = f->h.seq + 1;
}

// Tells the sender how many frames it may count as gone, every quarter of
// what the ring holds of the current frames (CREDIT_EVERY at most). The
// sender's window is that whole ring, so it never waits for a credit that
// is not coming; each credit costs the receiver a send.
static void rx_credit(struct rx *x)
{
	uint32_t size = x->nw ? x->w[x->nw - 1].bytes : 0;
	int per = (int)((size + WIRE_FRAME_HLEN + NETDEV_RX_BUF - 1) / NETDEV_RX_BUF);
	uint32_t every = (uint32_t)(x->nd->rx_slots / per / 4);
	every = every < 1 ? 1 : every > CREDIT_EVERY ? CREDIT_EVERY : every;
	if (x->taken - x->credited >= every && ctl_send(&x->ctl, x->peer, F_CREDIT, x->taken, 0))
		x->credited = x->taken;
}

static void rx_frame(struct rx *x, const struct frame *f, uint64_t stamp)
{
	if (!frame_ok(f)) {
		if (x->bad++ == 0)
			kprintf("ceiling: bad frame: type %x channel %x flags %x len %u of %u, error %d\n",
				f->type, f->h.channel, f->h.flags, f->len, f->h.len, f->error);
		return;
	}
	if (f->h.flags & F_HELLO) {
		memcpy(x->peer, f->src, 6);
		// The reply says how many buffers the ring holds: frames
		// beyond what fits would be dropped by an e1000 (QEMU drops a
		// frame it has too few buffers for) or wait in the socket.
		ctl_send(&x->ctl, f->src, WIRE_F_REPLY, f->h.seq, (uint16_t)x->nd->rx_slots);
	}
	// The END comes after every data frame; a REPLY not queued now is
	// queued for the next END the sender repeats.
	if (f->h.flags & F_END)
		x->end = ctl_send(&x->ctl, f->src, WIRE_F_REPLY, f->h.seq, 0);
	else if (!f->h.flags)
		rx_data(x, f, stamp);
}

// One poll: every buffer checked and given back. -1 when the ring did not
// take its pages back.
static int rx_once(struct rx *x)
{
	struct rxfrag r[RX_BATCH];
	paddr_t pg[RX_BATCH];
	int n = x->nd->ops->rx_poll(x->nd, r, RX_BATCH);
	uint64_t stamp = arch_rdtsc();
	for (int i = 0; i < n; i++) {
		if (add_frag(&x->fr, &r[i]))
			rx_frame(x, &x->fr, stamp);
		pg[i] = r[i].pa;
	}
	return give_back(x->nd, pg, n) < 0 ? -1 : n;
}

static void rx_print(const struct rx *x, const struct params *p)
{
	for (int i = 0; i < x->nw; i++) {
		const struct window *w = &x->w[i];
		kprintf("CEILING rx mode=%s bytes=%u win=%u frames=%lu timed=%lu tsc=%lu tsc_hz=%lu "
			"lost=%lu\n",
			w->mode < MAX_MODES ? mode_name[w->mode] : "?", w->bytes, w->win, w->frames,
			w->timed, w->t_last - w->t_first, tsc_hz, w->lost);
	}
	kprintf("CEILING rx done windows=%d expected=%d bad=%lu dup=%lu us=%lu\n", x->nw,
		p->nsizes * p->nmodes * p->reps, x->bad, x->dup, timer_now_us());
}

static int receiver(struct netdev *nd, const struct params *p, paddr_t ctl_page)
{
	struct rx *x = &rxs;
	*x = (struct rx){ .nd = nd, .ctl = { .nd = nd, .page = ctl_page, .done = ctl_done }, .mode = MODE_HALT };
	x->ctl.arg = &x->ctl;
	nd->ops->rx_irq(nd, true);
	kprintf("ceiling: receiver on %s %d polling: READY\n", nd->family, nd->index);
	uint64_t last = timer_now_us();
	while (!x->end && timer_now_us() - last < WAIT_US) {
		int n = rx_once(x);
		if (n < 0)
			break;
		rx_credit(x);
		if (n > 0)
			last = timer_now_us();
		else if (x->mode == MODE_HALT)
			arch_idle();
		else
			arch_pause();
	}
	bool drained = ctl_drain(&x->ctl);
	rx_print(x, p);
	bool ok = x->end && drained && !x->bad && x->nw == p->nsizes * p->nmodes * p->reps;
	if (!ok)
		kprintf("ceiling: receiver failed: end %d, reply sent %d, %lu bad frames, %d windows\n",
			x->end, drained, x->bad, x->nw);
	return ok ? 0 : -1;
}

// ---- sender ----

struct tx {
	struct netdev *nd;
	struct ctl ctl;
	struct frame fr;
	paddr_t buf[POOL];      // packet i's frame
	struct netpkt pkt[POOL];
	uint16_t free[POOL];
	int nfree;
	uint32_t token;         // the reply awaited
	int peer_slots;         // receive buffers of the receiver's ring
	bool replied;
	uint32_t sent, credit;  // data frames queued, and the receiver's last count
	uint64_t stalls;        // times it could queue nothing for STALL_US
};

static struct tx txs;

static void tx_done(uint64_t cookie, void *arg)
{
	struct tx *t = arg;
	if (cookie == CTL_COOKIE)
		t->ctl.busy = false;
	else if (t->nfree < POOL)
		t->free[t->nfree++] = (uint16_t)cookie;
}

// Every packet is one frame in one buffer of its own (FRAME_PAGES contiguous
// pages): one segment, the fewest descriptors a NIC can be given. The
// payload pattern is written once; only the wire header changes per send.
static int tx_setup(struct tx *t, const struct params *p)
{
	for (int i = 0; i < POOL; i++) {
		if (!(t->buf[i] = dma_alloc_contig(FRAME_PAGES)))
			return -E_NOMEM;
		uint8_t *v = arch_p2v(t->buf[i]);
		if (i == 0)
			for (uint32_t k = 0; k < WIRE_MAX_PAYLOAD; k++)
				v[WIRE_FRAME_HLEN + k] = wire_pattern(0, k);
		else
			memcpy(v, arch_p2v(t->buf[0]), WIRE_MAX_FRAME);
		wire_put_eth(v, p->peer, t->nd->mac);
		t->pkt[i] = (struct netpkt){ .nseg = 1, .cookie = (uint64_t)i,
					     .seg = { { t->buf[i], 0 } } };
		t->free[i] = (uint16_t)(POOL - 1 - i);
	}
	t->nfree = POOL;
	return 0;
}

static void tx_free(struct tx *t)
{
	for (int i = 0; i < POOL; i++)
		if (t->buf[i])
			dma_free_contig(t->buf[i], FRAME_PAGES);
}

// Takes the peer's REPLYs (and gives every page back).
static int tx_poll_replies(struct tx *t)
{
	struct rxfrag r[RX_BATCH];
	paddr_t pg[RX_BATCH];
	int n = t->nd->ops->rx_poll(t->nd, r, RX_BATCH);
	for (int i = 0; i < n; i++) {
		if (!add_frag(&t->fr, &r[i]) || !frame_ok(&t->fr))
			continue;
		if ((t->fr.h.flags & WIRE_F_REPLY) && t->fr.h.seq == t->token) {
			t->replied = true;
			if (t->token == TOKEN_HELLO)
				t->peer_slots = t->fr.h.batch;
		}
		if ((t->fr.h.flags & F_CREDIT) && t->fr.h.seq - t->credit <= t->sent - t->credit) {
			t->credit = t->fr.h.seq;
		}
		pg[i] = r[i].pa;
	}
	return give_back(t->nd, pg, n);
}

// Sends `flags` every HELLO_US until the peer replies; false on timeout.
static bool tx_handshake(struct tx *t, const struct params *p, uint16_t flags, uint32_t token)
{
	uint64_t t0 = timer_now_us(), sent = 0;
	t->replied = false;
	t->token = token;
	while (!t->replied && timer_now_us() - t0 < WAIT_US) {
		if (timer_now_us() - sent >= HELLO_US) {
			ctl_send(&t->ctl, p->peer, flags, token, 0);
			sent = timer_now_us();
		}
		if (tx_poll_replies(t) < 0)
			return false;
		arch_pause();
	}
	return t->replied;
}

// Frames the sender keeps unaccounted for: WINDOW, or what the receiver's
// ring holds of frames this long.
static int window_frames(const struct tx *t, uint32_t size)
{
	int per = (int)((size + WIRE_FRAME_HLEN + NETDEV_RX_BUF - 1) / NETDEV_RX_BUF);
	int fit = t->peer_slots / per;
	return fit > 0 && fit < WINDOW ? fit : WINDOW;
}

// Queues every free packet as the next ones of window (mode, win); returns
// how many the NIC took, or a negative error.
static int tx_fill(struct tx *t, int mode, uint32_t size, uint16_t win, uint32_t *seq)
{
	struct netpkt b[POOL];
	int room = window_frames(t, size) - (int)(t->sent - t->credit), idx[POOL];
	int n = room < 0 ? 0 : t->nfree < room ? t->nfree : room; // < 0: the window just shrank
	for (int k = 0; k < n; k++) {
		int i = idx[k] = t->free[--t->nfree];
		wire_put_hdr(arch_p2v(t->buf[i]), &(struct wire_fields){ .channel = CEIL_CHAN,
				.seq = *seq + (uint32_t)k, .batch = (uint16_t)mode, .link = win, .len = size });
		b[k] = t->pkt[i];
		b[k].seg[0].len = size + WIRE_FRAME_HLEN;
	}
	int q = n ? t->nd->ops->tx_batch(t->nd, b, n) : 0;
	for (int k = n - 1; k >= (q < 0 ? 0 : q); k--) // not taken: free again
		t->free[t->nfree++] = (uint16_t)idx[k];
	if (q > 0)
		*seq += (uint32_t)q, t->sent += (uint32_t)q;
	return q;
}

// One timed window: re-queue whatever the NIC has finished, for p->ms. The
// time the sender could queue nothing (the receiver's credit or the ring
// was short) is printed: a sender never blocked is what limits the rate.
static int tx_window(struct tx *t, const struct params *p, int mode, uint32_t size, uint16_t win)
{
	uint64_t t0 = arch_rdtsc(), end = t0 + timer_us_to_tsc(p->ms * 1000), batches = 0;
	uint64_t stall = timer_us_to_tsc(STALL_US), blocked = 0, since = 0, now;
	uint32_t seq = 0;
	while ((now = arch_rdtsc()) < end) {
		t->nd->ops->tx_reclaim(t->nd, tx_done, t);
		if (tx_poll_replies(t) < 0)
			return -E_NOMEM;
		// Nothing queued for STALL_US: count what is in flight as gone
		// (a credit lost, or frames) and go on; the NIC's own ring
		// blocks only while it has not finished.
		if (since && arch_rdtsc() - since > stall && t->sent != t->credit)
			t->credit = t->sent, t->stalls++;
		int q = tx_fill(t, mode, size, win, &seq);
		if (q < 0)
			return q;
		batches += q > 0;
		if (q > 0 && since)
			blocked += arch_rdtsc() - since, since = 0;
		else if (q == 0 && !since)
			since = arch_rdtsc();
		if (q == 0 && mode == MODE_HALT)
			arch_idle();
		else if (q == 0)
			arch_pause();
	}
	blocked += since ? now - since : 0;
	kprintf("CEILING tx mode=%s bytes=%u win=%u sent=%u batches=%lu stalls=%lu blocked_tsc=%lu "
		"tsc=%lu inflight=%u free=%d\n", mode_name[mode], size, win, seq, batches, t->stalls,
		blocked, now - t0, t->sent - t->credit, t->nfree);
	return 0;
}

// Every packet back from the NIC (bounded); false on timeout.
static bool tx_reclaim_all(struct tx *t)
{
	uint64_t t0 = timer_now_us();
	while (t->nfree < POOL && timer_now_us() - t0 < WAIT_US) {
		t->nd->ops->tx_reclaim(t->nd, tx_done, t);
		arch_pause();
	}
	return t->nfree == POOL;
}

static int sender(struct netdev *nd, const struct params *p, paddr_t ctl_page)
{
	struct tx *t = &txs;
	*t = (struct tx){ .nd = nd, .ctl = { .nd = nd, .page = ctl_page, .done = tx_done, .arg = t } };
	int r = tx_setup(t, p);
	if (r == 0 && !tx_handshake(t, p, F_HELLO, TOKEN_HELLO))
		r = -E_TIMEOUT;
	for (int m = 0; r == 0 && m < p->nmodes; m++) {
		if (p->modes[m] == MODE_HALT)
			timer_fast(HALT_TICK_US);
		for (int s = 0; r == 0 && s < p->nsizes; s++)
			for (int w = 0; r == 0 && w < p->reps; w++)
				r = tx_window(t, p, p->modes[m], p->sizes[s], (uint16_t)w);
		timer_fast(0);
	}
	bool back = tx_reclaim_all(t);
	if (r == 0 && !tx_handshake(t, p, F_END, TOKEN_END))
		r = -E_TIMEOUT;
	back = ctl_drain(&t->ctl) && back;
	tx_free(t);
	if (r == 0 && !back)
		r = -E_TIMEOUT;
	kprintf("CEILING tx done status=%d (%s) us=%lu\n", r, r ? err_name(r) : "ok", timer_now_us());
	return r;
}

int ceiling_run(const char *role, const struct cmdline *c)
{
	struct params p;
	bool tx = !strcmp(role, "tx");
	struct netdev *nd = netdev_get(0);
	if ((!tx && strcmp(role, "rx")) || parse(c, &p, tx) < 0 || !nd) {
		kprintf("ceiling: bad arguments or no NIC (ceiling=%s)\n", role);
		return -1;
	}
	uint64_t free0 = dma_free_frames(), owned0 = netdev_frames_owned_all();
	paddr_t ctl_page = dma_alloc_page();
	if (!ctl_page)
		return -1;
	int r = tx ? sender(nd, &p, ctl_page) : receiver(nd, &p, ctl_page);
	dma_free_page(ctl_page);
	uint64_t free1 = dma_free_frames(), owned1 = netdev_frames_owned_all();
	bool balanced = free1 == free0 && owned1 == owned0;
	kprintf("ceiling: frames free %lu -> %lu, NIC frames %lu -> %lu%s\n", free0, free1, owned0,
		owned1, balanced ? "" : " LEAK");
	return r == 0 && balanced ? 0 : -1;
}
