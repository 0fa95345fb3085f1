// dpdkstripe.h: dpdkbench's striped windowed stream (--mode window
// --ports N, N > 1): pktwindow.h's stream over N ports, packet k of a
// stream on port k mod N, each port served by one lcore: port i by the
// (i mod L)-th of the L lcores EAL runs (the main lcore first; EAL's
// -l 0-(L-1), lcore k on CPU k), so that at -smp 1 one lcore serves every
// port and at -smp 4 each its own.  The wire format and the flow control
// are pktwindow.h's (64-packet batches, at most 2 unacknowledged,
// cumulative 8-byte acknowledgements); only where the packets go is new.
//
// Sender: the main lcore runs pktwindow.h's window_once as for one port;
// its wslots_send publishes how far the stream may go (the release word:
// the stream's generation << 32 | the packets released, a batch at a
// time) and sends its own ports' share of the batch; every other lcore
// sends its ports' share of what is released as it sees it.  The
// acknowledgements come back on port 0, which the main lcore polls
// (await_reply); the other receive queues are polled by their lcores and
// get nothing.
//
// Receiver: each link is FIFO, so port i must see seqs i, i+N, i+2N, ...
// of a stream in order (it starts when port i sees seq i): its lcore
// checks each frame's seq, length and every payload byte, and publishes
// the port's progress word (generation << 32 | the next seq it expects).
// A frame out of order or damaged stops that port's progress for the rest
// of the stream.  The packets taken in order are the prefix every port has
// delivered, min over the ports of their next seq; the main lcore (port
// 0's) reads the words between its polls and acknowledges on port 0 as
// pktwindow.h's receiver does, the count a multiple of the batch, once a
// batch is complete.  So nothing is acknowledged that was not checked, and
// a broken port stops the acknowledgements: the sender fails on its
// timeout.  Probes and round trips are echoed on the port they came in on
// (the sender probes every port before it starts); a bye ends the server.
//
// Measured windows (insnplugin.so's WIN markers, on the main lcore): each
// stream, the sender's from its first send to its last acknowledgement,
// the receiver's from its first batch acknowledged to its last packet
// (pktwindow.h's SRVSTAT window figure); then one idle window of
// STRIPE_IDLE_MS with no traffic, each lcore polling as in a stream (the
// sender's main lcore waiting for an acknowledgement).  After the run, one
// line per window in the windows' order:
//   STRIPE role=R bytes=.. stream=I packets=P cpus=C0,.. empty=E0,.. rx=A0,..
//   STRIPE role=R idle ms=.. cpus=C0,.. empty=E0,.. rx=A0,..
// Ck the CPU of the k-th lcore, Ek its empty polls (an rte_eth_rx_burst
// that returned nothing) in the window, Ap the packets port p took
// (receiver; sender 0).  The lcores never sleep: a CPU's instructions in a
// stream window are its work and its empty polls.  So each lcore marks
// its loop for the plugin as the server's burst wait does (rxmark.h): a
// round of its loop that found nothing to receive or send ends with
// RX_POLL_EMPTY_USER, whose user-mode instructions since the round began
// the plugin gives apart (WIN idle=; the guest kernel's, its timer ticks,
// stay counted), and the idle window gives what an empty poll costs.
#ifndef DPDKSTRIPE_H
#define DPDKSTRIPE_H

#include <rte_launch.h>
#include <rte_lcore.h>

#define WIN_MARK_START() __asm__ volatile("nopl 0x7ab1c0d0(%%rax)" ::: "memory")
#define WIN_MARK_END() __asm__ volatile("nopl 0x7ab1c0d1(%%rax)" ::: "memory")
#define STRIPE_IDLE_MS 300

// ---------------------------------------------------------------- bookkeeping

// One port's part of a stream at the receiver: its stream (generation),
// the next seq it expects, the stream's size.
struct stripe_rxp {
	uint32_t gen, next, size;
	bool broken;
	uint64_t packets, bad;
};

// A frame of seq and len on port i of n, its payload intact or not; true
// if it counts (in order, intact, this port's part of the stream whole).
static bool stripe_rx(struct stripe_rxp *r, uint16_t i, uint16_t n, uint32_t seq, uint32_t len, bool intact)
{
	if (seq == i) { // the stream's first packet on this port
		r->gen++;
		r->next = i;
		r->size = len;
		r->broken = false;
	}
	r->packets++;
	bool ok = !r->broken && seq == r->next && len == r->size && intact;
	if (ok)
		r->next += n;
	else
		r->broken = true, r->bad++;
	return ok;
}

static uint64_t stripe_word(const struct stripe_rxp *r)
{
	return (uint64_t)r->gen << 32 | r->next;
}

// The packets of the newest stream (*gen) taken in order, from the n
// ports' progress words: min over the ports of their next seq, a port not
// yet in that stream counting its first, i.
static uint32_t stripe_prefix(const uint64_t *w, uint16_t n, uint32_t *gen)
{
	uint32_t g = 0, c = UINT32_MAX;
	for (uint16_t i = 0; i < n; i++)
		g = (uint32_t)(w[i] >> 32) > g ? (uint32_t)(w[i] >> 32) : g;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t next = (uint32_t)(w[i] >> 32) == g ? (uint32_t)w[i] : i;
		c = next < c ? next : c;
	}
	*gen = g;
	return c;
}

// The receiver's acknowledgements of one stream.
struct stripe_acks {
	uint32_t gen, acked;
};

// The count to acknowledge now: whole batches of the prefix, when more
// than the stream's last acknowledgement; 0 for none.
static uint32_t stripe_ack_due(struct stripe_acks *a, uint32_t gen, uint32_t prefix)
{
	if (gen != a->gen)
		a->gen = gen, a->acked = 0;
	uint32_t c = prefix / PB_WIN_BATCH * PB_WIN_BATCH;
	if (c <= a->acked)
		return 0;
	return a->acked = c;
}

// One port's part of a stream at the sender.
struct stripe_txp {
	uint32_t gen, next;
};

// The seqs port i of n sends now, the release word given (generation <<
// 32 | packets released): at most max, in order, into seq; how many.
static uint32_t stripe_tx(struct stripe_txp *t, uint16_t i, uint16_t n, uint64_t release, uint32_t *seq, uint32_t max)
{
	uint32_t upto = (uint32_t)release, k = 0;
	if ((uint32_t)(release >> 32) != t->gen)
		t->gen = (uint32_t)(release >> 32), t->next = i;
	while (t->next < upto && k < max) {
		seq[k++] = t->next;
		t->next += n;
	}
	return k;
}

// ---------------------------------------------------------------- self-check

// A stream through the bookkeeping: the sender's window, each port's FIFO
// link delivering in an interleaving of its own (a fixed pseudo-random
// one), the receiver's acknowledgements; seq `drop` (if below the count)
// never arrives, seq `damage` arrives damaged.  Returns the last count
// acknowledged, -1 if the bookkeeping broke a rule.
static long stripe_sim(uint16_t n, uint32_t gen, uint32_t drop, uint32_t damage, struct stripe_rxp *rx,
                       struct stripe_acks *a, uint32_t *rng)
{
	static uint32_t q[DB_MAX_PORTS][PB_WIN_COUNT];
	uint32_t head[DB_MAX_PORTS] = { 0 }, tail[DB_MAX_PORTS] = { 0 }, seq[PB_WIN_SLOTS];
	struct stripe_txp tx[DB_MAX_PORTS] = { 0 };
	uint64_t w[DB_MAX_PORTS];
	uint32_t released = 0, acked = 0, g;
	for (uint16_t i = 0; i < n; i++)
		w[i] = stripe_word(&rx[i]);
	for (int steps = 0; acked < PB_WIN_COUNT && steps < 1000000; steps++) {
		bool queued = false;
		if (released < PB_WIN_COUNT && released - acked < PB_WIN_SLOTS)
			released += PB_WIN_BATCH;
		for (uint16_t i = 0; i < n; i++) {
			uint32_t k = stripe_tx(&tx[i], i, n, (uint64_t)gen << 32 | released, seq, PB_WIN_SLOTS);
			for (uint32_t j = 0; j < k; j++) {
				if (seq[j] % n != i)
					return -1;
				if (seq[j] != drop)
					q[i][tail[i]++] = seq[j];
			}
			queued |= head[i] != tail[i];
		}
		if (!queued)
			break; // the links empty, the window full: the sender would time out
		*rng = *rng * 1103515245u + 12345u;
		uint16_t i = (uint16_t)((*rng >> 16) % n);
		if (head[i] == tail[i])
			continue;
		uint32_t s = q[i][head[i]++];
		if (stripe_rx(&rx[i], i, n, s, 1500, s != damage))
			w[i] = stripe_word(&rx[i]);
		uint32_t c = stripe_prefix(w, n, &g), due = stripe_ack_due(a, g, c);
		if (g > gen || c > released || (due && (due % PB_WIN_BATCH || due < acked)))
			return -1;
		acked = due ? due : acked;
	}
	return acked;
}

// Host-side check of the striping and acknowledgement bookkeeping: whole
// streams over 2 and 4 ports, one after the other, are acknowledged to
// the last packet; a stream that loses a packet or has one damaged is
// acknowledged only up to the batch before it.
static int stripe_selfcheck(void)
{
	static const uint16_t ns[] = { 2, 4 };
	uint32_t rng = 1;
	for (unsigned t = 0; t < 2; t++) {
		uint16_t n = ns[t];
		struct stripe_rxp rx[DB_MAX_PORTS] = { 0 };
		struct stripe_acks a = { 0 };
		for (uint16_t i = 0; i < n; i++)
			rx[i].next = i;
		long got[5] = { stripe_sim(n, 1, UINT32_MAX, UINT32_MAX, rx, &a, &rng),
			        stripe_sim(n, 2, UINT32_MAX, UINT32_MAX, rx, &a, &rng),
			        stripe_sim(n, 3, 200, UINT32_MAX, rx, &a, &rng),
			        stripe_sim(n, 4, UINT32_MAX, 1000, rx, &a, &rng),
			        stripe_sim(n, 5, UINT32_MAX, UINT32_MAX, rx, &a, &rng) };
		long want[5] = { PB_WIN_COUNT, PB_WIN_COUNT, 192, 960, PB_WIN_COUNT };
		for (unsigned k = 0; k < 5; k++)
			if (got[k] != want[k]) {
				printf("stripe selfcheck: %u ports, stream %u acknowledged %ld, not %ld\n", n, k + 1, got[k],
				       want[k]);
				return 1;
			}
	}
	return 0;
}

// ---------------------------------------------------------------- lcores

// An lcore and the ports it serves.
struct stripe_lc {
	unsigned id; // EAL's lcore id, its CPU
	uint16_t ports[DB_MAX_PORTS], nports;
	volatile uint64_t empty; // its receive polls that found nothing (its own writes only)
};

static struct {
	uint16_t n;   // ports
	unsigned nlc; // lcores with ports; lc[0] the main one
	struct stripe_lc lc[DB_MAX_PORTS];
	struct stripe_rxp rx[DB_MAX_PORTS]; // each written by its port's lcore only
	struct stripe_txp tx[DB_MAX_PORTS];
	uint64_t progress[DB_MAX_PORTS];    // the receiver's progress words (atomic)
	uint64_t release;                   // the sender's release word (atomic)
	struct wslots *slots;               // the sender's frames (pktwindow.h's)
	uint32_t gen, released;             // the sender's stream and packets released
	int bye, quit;                      // atomic
	uint8_t src0[6];                    // the sender's MAC on port 0
	struct stripe_acks acks;            // the receiver's acknowledgements (main lcore)
	uint32_t size, stream;              // the current size and its streams so far
	uint64_t t0, mark_empty[DB_MAX_PORTS], mark_rx[DB_MAX_PORTS];
} g_st;

// Which lcore serves which port; every port's state at its start.
static void stripe_setup(const struct opts *o)
{
	unsigned id, k = 1;
	g_st.n = o->nports;
	g_st.lc[0].id = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(id) {
		if (k < g_st.n)
			g_st.lc[k++].id = id;
	}
	g_st.nlc = k;
	for (uint16_t i = 0; i < g_st.n; i++) {
		struct stripe_lc *lc = &g_st.lc[i % g_st.nlc];
		lc->ports[lc->nports++] = i;
		g_st.rx[i].next = i;
		g_st.progress[i] = stripe_word(&g_st.rx[i]);
	}
	printf("STRIPE ports=%u lcores=%u", g_st.n, g_st.nlc);
	for (uint16_t i = 0; i < g_st.n; i++)
		printf(" port%u=cpu%u", i, g_st.lc[i % g_st.nlc].id);
	printf("\n");
	fflush(stdout);
	rx_defer = true; // the lines of the windows are printed after the run
}

// Each lcore's empty polls (the main one's waits in port_recv included)
// and each port's packets taken.
static void stripe_counts(uint64_t *empty, uint64_t *rx)
{
	for (unsigned k = 0; k < g_st.nlc; k++)
		empty[k] = g_st.lc[k].empty + (k == 0 ? g_ports[0].empty_polls : 0);
	for (uint16_t i = 0; i < g_st.n; i++)
		rx[i] = __atomic_load_n(&g_st.rx[i].packets, __ATOMIC_RELAXED);
}

static void stripe_mark_begin(void)
{
	stripe_counts(g_st.mark_empty, g_st.mark_rx);
	WIN_MARK_START();
}

// A list of n values less their marks, "a,b,..", into buf.
static const char *stripe_list(char *buf, size_t cap, const uint64_t *v, const uint64_t *mark, unsigned n)
{
	size_t at = 0;
	buf[0] = 0;
	for (unsigned k = 0; k < n && at < cap; k++)
		at += (size_t)snprintf(buf + at, cap - at, "%s%llu", k ? "," : "",
		                       (unsigned long long)(v[k] - (mark ? mark[k] : 0)));
	return buf;
}

// The window closed, its line kept; what: "bytes=.. stream=.. packets=.."
// or "idle ms=..".
static void stripe_mark_end(const char *role, const char *what)
{
	uint64_t e[DB_MAX_PORTS], r[DB_MAX_PORTS], cpu[DB_MAX_PORTS];
	char cs[64], es[128], rs[128];
	WIN_MARK_END();
	stripe_counts(e, r);
	for (unsigned k = 0; k < g_st.nlc; k++)
		cpu[k] = g_st.lc[k].id;
	rx_printf("STRIPE role=%s %s cpus=%s empty=%s rx=%s\n", role, what, stripe_list(cs, sizeof cs, cpu, NULL, g_st.nlc),
	          stripe_list(es, sizeof es, e, g_st.mark_empty, g_st.nlc),
	          stripe_list(rs, sizeof rs, r, g_st.mark_rx, g_st.n));
}

// The next stream's index among those of its size.
static uint32_t stripe_stream(uint32_t size)
{
	if (size != g_st.size)
		g_st.size = size, g_st.stream = 0;
	return g_st.stream++;
}

static void stripe_launch(lcore_function_t *fn)
{
	for (unsigned k = 1; k < g_st.nlc; k++)
		if (rte_eal_remote_launch(fn, &g_st.lc[k], g_st.lc[k].id) != 0)
			die("rte_eal_remote_launch on lcore %u failed", g_st.lc[k].id);
}

static void stripe_join(void)
{
	__atomic_store_n(&g_st.quit, 1, __ATOMIC_RELEASE);
	rte_eal_mp_wait_lcore();
}

static bool stripe_quit(void)
{
	return __atomic_load_n(&g_st.quit, __ATOMIC_ACQUIRE);
}

// ---------------------------------------------------------------- receiving

// A stream packet on port i, checked by the lcore that received it.
static void stripe_take(uint16_t i, const struct pkt *k)
{
	struct stripe_rxp *r = &g_st.rx[i];
	bool intact = pattern_check(k->payload, k->len, k->seq % PB_WIN_BATCH) == k->len;
	if (i == 0)
		memcpy(g_st.src0, k->src, 6);
	if (stripe_rx(r, i, g_st.n, k->seq, k->len, intact)) {
		__atomic_store_n(&g_st.progress[i], stripe_word(r), __ATOMIC_RELEASE);
		return;
	}
	if (r->bad <= 5)
		printf("window: port %u: packet seq=%u len=%u (want seq %u len %u) out of order or damaged\n", i, k->seq,
		       k->len, r->next, r->size);
}

static void stripe_frame(uint16_t i, struct rte_mbuf *m)
{
	struct port *p = &g_ports[i];
	struct frame f;
	struct pkt k;
	mbuf_frame(m, &f);
	p->held = m;
	if (parse_frame(&f, &k) < 0 || (k.flags & WIRE_F_REPLY)) {
		p->ignored++;
	} else if (k.channel == PB_CH_WIN) {
		stripe_take(i, &k);
	} else if (k.channel == PB_CH_CTRL && k.seq == PB_CTRL_BYE) {
		echo(p, &f);
		__atomic_store_n(&g_st.bye, 1, __ATOMIC_RELEASE);
	} else if (k.channel == PB_CH_DATA && k.batch == 1) {
		echo(p, &f); // a probe: answered on its own link
	} else {
		p->ignored++;
	}
	port_release(p);
}

// A round of an lcore's loop ends: one that found nothing is left out of
// the plugin's work (rxmark.h), the next round begins.
static void stripe_round_end(bool found)
{
	if (found)
		RX_POLL_BEGIN();
	else
		RX_POLL_EMPTY_USER();
}

// One receive poll of each of lc's ports; true if a frame came.
static bool stripe_round(struct stripe_lc *lc)
{
	struct rte_mbuf *m[DB_RX_BURST];
	bool got = false;
	for (uint16_t j = 0; j < lc->nports; j++) {
		uint16_t i = lc->ports[j], n = rte_eth_rx_burst(g_ports[i].id, 0, m, DB_RX_BURST);
		if (!n)
			lc->empty++;
		for (uint16_t x = 0; x < n; x++)
			stripe_frame(i, m[x]);
		got |= n > 0;
	}
	return got;
}

static int stripe_serve_lcore(void *arg)
{
	RX_POLL_BEGIN();
	while (!stripe_quit())
		stripe_round_end(stripe_round(arg));
	return 0;
}

// The main lcore between its polls: acknowledges what every port has
// delivered in order, and opens and closes the stream's window; true if
// it acknowledged.
static bool stripe_acknowledge(void)
{
	struct stripe_acks *a = &g_st.acks;
	uint64_t w[DB_MAX_PORTS];
	uint32_t gen, prefix;
	for (uint16_t i = 0; i < g_st.n; i++)
		w[i] = __atomic_load_n(&g_st.progress[i], __ATOMIC_ACQUIRE);
	prefix = stripe_prefix(w, g_st.n, &gen);
	uint32_t prev = gen == a->gen ? a->acked : 0, due = stripe_ack_due(a, gen, prefix);
	if (!due)
		return false;
	wrx.good = due; // pktwindow.h's acknowledgement, as its receiver sends it
	window_ack(&g_ports[0], g_st.src0);
	if (prev < PB_WIN_BATCH) { // the first batch acknowledged: the timed part starts
		g_st.t0 = now_ns();
		stripe_mark_begin();
	}
	if (due == PB_WIN_COUNT) {
		char what[96];
		uint64_t ns = now_ns() - g_st.t0;
		uint32_t size = g_st.rx[0].size;
		snprintf(what, sizeof what, "bytes=%u stream=%u packets=%u", size, stripe_stream(size),
		         PB_WIN_COUNT - PB_WIN_BATCH);
		stripe_mark_end("server", what);
		window_stream_line(size, ns);
	}
	return true;
}

// The idle window: every lcore polling with no traffic for STRIPE_IDLE_MS;
// wait(): the main lcore's polls meanwhile.
static void stripe_idle(const char *role, void (*wait)(uint64_t end))
{
	char what[32];
	stripe_mark_begin();
	wait(now_ns() + STRIPE_IDLE_MS * 1000000ull);
	snprintf(what, sizeof what, "idle ms=%d", STRIPE_IDLE_MS);
	stripe_mark_end(role, what);
}

// The main lcore's polls as in a stream.
static void stripe_serve_until(uint64_t end)
{
	while (now_ns() < end)
		for (int k = 0; k < 64; k++)
			stripe_round_end(stripe_round(&g_st.lc[0]) | stripe_acknowledge());
}

// The striped server: every lcore polls its ports until a bye; then the
// idle window, the kept lines, each port's counters and the totals for
// server_verdict.
static void stripe_server(const struct opts *o)
{
	uint64_t last = now_ns(), idle = (uint64_t)o->idle_timeout_ms * 1000000u;
	stripe_setup(o);
	stripe_launch(stripe_serve_lcore);
	RX_POLL_BEGIN();
	for (uint32_t spins = 0; !__atomic_load_n(&g_st.bye, __ATOMIC_ACQUIRE); spins++) {
		bool found = stripe_round(&g_st.lc[0]) | stripe_acknowledge();
		if (found)
			last = now_ns();
		else if ((spins & 1023) == 0 && now_ns() - last > idle)
			die("server idle for %d ms", o->idle_timeout_ms);
		stripe_round_end(found);
	}
	stripe_idle("server", stripe_serve_until);
	stripe_join();
	rx_flush();
	for (uint16_t i = 0; i < g_st.n; i++) {
		port_stats(&g_ports[i]);
		wrx.packets += g_st.rx[i].packets;
		wrx.bad += g_st.rx[i].bad;
	}
	wrx.streams = g_st.rx[0].gen;
}

// ---------------------------------------------------------------- sending

// Port i's share of what is released, from the stream's frame slots by
// reference (a slot always goes out on the same port: N divides the
// slots); how many it sent.
static uint32_t stripe_tx_port(uint16_t i, uint64_t release)
{
	uint32_t seq[PB_WIN_SLOTS];
	struct rte_mbuf *m[PB_WIN_SLOTS];
	uint32_t k = stripe_tx(&g_st.tx[i], i, g_st.n, release, seq, PB_WIN_SLOTS);
	struct wslots *s = g_st.slots;
	for (uint32_t j = 0; j < k; j++) {
		uint32_t x = seq[j] % PB_WIN_SLOTS;
		m[j] = s->m[x];
		m[j]->data_len = (uint16_t)s->len[x];
		m[j]->pkt_len = s->len[x];
		rte_mbuf_refcnt_update(m[j], 1); // the driver's free after sending leaves it ours
	}
	if (k)
		port_tx(&g_ports[i], m, k);
	return k;
}

static int stripe_send_lcore(void *arg)
{
	struct stripe_lc *lc = arg;
	RX_POLL_BEGIN();
	while (!stripe_quit()) {
		uint64_t release = __atomic_load_n(&g_st.release, __ATOMIC_ACQUIRE);
		uint32_t sent = 0;
		for (uint16_t j = 0; j < lc->nports; j++)
			sent += stripe_tx_port(lc->ports[j], release);
		stripe_round_end(stripe_round(lc) || sent);
	}
	return 0;
}

// wslots_send's striped form: n more packets (their seqs already in the
// slots) released to every port's lcore; the main lcore's ports' share sent.
static void stripe_send(uint32_t n)
{
	uint64_t release = (uint64_t)g_st.gen << 32 | (g_st.released += n);
	__atomic_store_n(&g_st.release, release, __ATOMIC_RELEASE);
	for (uint16_t j = 0; j < g_st.lc[0].nports; j++)
		stripe_tx_port(g_st.lc[0].ports[j], release);
}

// pktwindow.h's hook around each stream: a new generation, each slot's
// MACs those of the link it goes out on; the stream's window.
static void wslots_stream(struct port *p, struct wslots *s, bool begin)
{
	(void)p;
	if (g_opts->nports == 1)
		return;
	if (!begin) {
		char what[96];
		uint32_t size = wire_get_len(s->frame[0]);
		snprintf(what, sizeof what, "bytes=%u stream=%u packets=%u", size, stripe_stream(size), PB_WIN_COUNT);
		stripe_mark_end("client", what);
		return;
	}
	for (uint32_t j = 0; j < PB_WIN_SLOTS; j++)
		wire_put_eth(s->frame[j], g_opts->peers[j % g_st.n], g_ports[j % g_st.n].mac);
	g_st.slots = s;
	g_st.released = 0;
	__atomic_store_n(&g_st.release, (uint64_t)++g_st.gen << 32, __ATOMIC_RELEASE);
	stripe_mark_begin();
}

static void stripe_wait_ack(uint64_t end)
{
	struct frame f;
	uint64_t now = now_ns();
	if (now < end && port_recv(&g_ports[0], &f, (int)((end - now) / 1000000u)) == 0)
		port_release(&g_ports[0]);
}

// The striped client: every port probed (each must answer), the other
// lcores started, pktwindow.h's streams at each size, the idle window; a
// bye on port 0.
static int stripe_client(const struct opts *o)
{
	stripe_setup(o);
	for (uint16_t i = 0; i < g_st.n; i++) {
		struct opts one = *o;
		memcpy(one.peer, o->peers[i], 6);
		probe_server(&g_ports[i], &one);
	}
	stripe_launch(stripe_send_lcore);
	for (int i = 0; i < o->nsizes; i++)
		run_window_size(&g_ports[0], o, o->sizes[i], "dpdk");
	stripe_idle("client", stripe_wait_ack);
	stripe_join();
	rx_flush();
	say_bye(&g_ports[0], o);
	for (uint16_t i = 0; i < g_st.n; i++)
		port_stats(&g_ports[i]);
	printf("DONE ok\n");
	return 0;
}

#endif
