// pktpeer.h: the two ends of the rtt and burst protocol (pktbench.c's
// header comment) that pktbench.c and dpdkbench.c share, one copy for both:
// the server's in-order burst check, its frame dispatch, loop and verdict,
// the idle receive window; the client's reply matching, probes, bye and
// quit, round trips and bursts with their result lines; the options both
// take.
//
// The includer includes wire.h, benchnet.h, pktproto.h and rxmark.h first
// and defines, before including this:
//   struct port (mac[6], ignored, stale), port_recv, port_release,
//   send_one (one frame to the wire) and echo (the frame answered in place);
//   struct opts (peer, have_peer, sizes, nsizes, runs, warmup, timeout_ms,
//   probe_timeout_ms, idle_timeout_ms, gap_ms, cpu_ms, rx_count);
//   struct burst_state (expect, good, bad, missing, ooo, bytes, irqs_mark,
//   first_tsc, check_tsc, rx_open, rx_tsc) and struct server (p, b,
//   bad_echo, bad_bursts); struct burst_frames;
//   PB_VARIANT(): the variant's name, a string.
// and defines, anywhere, the functions declared under "the includer's"
// below: what differs between a socket and a poll-mode driver.
#ifndef PKTPEER_H
#define PKTPEER_H

// ---------------------------------------------------------------- the includer's

// Server: the reply to a finished burst, sent as the burst's R1 ends.
static void burst_reply(struct server *sv, const uint8_t dst[6]);
// Server: a burst's first frame was taken (first_tsc just set).
static void burst_first(struct server *sv);
// Server: a frame of a channel other than data, control and window.
static void serve_other(struct server *sv, const struct pkt *k, struct frame *f);
// Server: how long to wait for the next frame (no quit seen yet); and what
// to do when none came in that time: true to wait again, false to fail.
static int serve_wait_ms(const struct server *sv, const struct opts *o);
static bool serve_idle(struct server *sv);
// Client: the receive timeout of one wait, `left` ms before the deadline.
static int await_wait_ms(const struct port *p, int left, int timeout_ms);
// Client: a round trip's request of len bytes in buf, made ready to send
// outside the timing (rtt_stage), then sent inside it (rtt_send).
static void rtt_stage(struct port *p, uint8_t *buf, uint32_t len);
static void rtt_send(struct port *p, uint8_t *buf, uint32_t len);
// Client: a burst's frames built once per size, from p's MAC to dst; made
// ready to send outside the timing (burst_stage), then sent (burst_send).
static void burst_build(struct port *p, struct burst_frames *bf, const uint8_t dst[6], uint32_t size);
static void burst_stage(struct port *p, struct burst_frames *bf);
static void burst_send(struct port *p, struct burst_frames *bf);
// The NIC's interrupts so far (-1: unknown).
static long nic_irqs(const struct opts *o);
// Prints the usage and exits.
static void usage(void);

// pktwindow.h's, included after this.
static void window_take(struct port *p, const struct pkt *k);
static uint64_t window_srvstat(void);

// ---------------------------------------------------------------- server

// A burst's state cleared; the interrupt mark and an open receive window
// stay (burst_reply closes the window).
static void burst_reset(struct burst_state *b)
{
	long mark = b->irqs_mark;
	bool open = b->rx_open;
	uint64_t at = b->rx_tsc;
	memset(b, 0, sizeof *b);
	b->irqs_mark = mark;
	b->rx_open = open, b->rx_tsc = at;
}

// The burst's reply (seq: the packets that came intact) sent to dst, the
// receive window closed first; returns the TSC when the burst was held.
static uint64_t burst_answer(struct server *sv, const uint8_t dst[6])
{
	struct burst_state *b = &sv->b;
	uint8_t f[WIRE_MIN_FRAME];
	struct pkt h = { .channel = PB_CH_DATA, .flags = WIRE_F_REPLY, .seq = b->good, .batch = 1, .len = 1 };
	if (b->rx_open) // the plugin's window and ours close together
		RX_CLOSE();
	uint64_t held = tsc_now();
	send_one(sv->p, f, build_frame(f, dst, sv->p->mac, &h));
	return held;
}

// One packet of a burst whose packets come in order (as on one link):
// checks order and payload; answers after the last.
static void burst_take_inorder(struct server *sv, const struct pkt *k, uint64_t arrived)
{
	struct burst_state *b = &sv->b;
	if (k->seq == 0 && b->expect != 0) { // the previous burst lost its end
		rx_printf("SRVSTAT burst-incomplete bytes=%u good=%u\n", b->bytes, b->good);
		sv->bad_bursts++;
		burst_reset(b);
	}
	if (!b->first_tsc) {
		b->first_tsc = arrived;
		burst_first(sv);
	}
	if (k->seq > b->expect)
		b->missing += k->seq - b->expect;
	else if (k->seq < b->expect)
		b->ooo++;
	b->expect = k->seq + 1;
	b->bytes = k->len;
	uint64_t c0 = tsc_now();
	RX_CHECK_BEGIN();
	if (pattern_check(k->payload, k->len, k->seq) == k->len)
		b->good++;
	else
		b->bad++;
	RX_CHECK_END();
	b->check_tsc += tsc_now() - c0;
	if ((k->flags & WIRE_F_LAST) || k->seq + 1 >= k->batch)
		burst_reply(sv, k->src);
}

static void burst_take(struct server *sv, const struct pkt *k, uint64_t arrived);

// 1 when the server should stop; 2 after echoing a quit (a 0-byte rtt
// request: the client is done, a bye may still follow).
static int serve_frame(struct server *sv, struct frame *f, uint64_t arrived)
{
	struct pkt k;
	if (parse_frame(f, &k) < 0 || (k.flags & WIRE_F_REPLY)) {
		sv->p->ignored++;
		return 0;
	}
	if (k.channel == PB_CH_CTRL && k.seq == PB_CTRL_BYE) {
		echo(sv->p, f);
		return 1;
	}
	if (k.channel == PB_CH_WIN) {
		window_take(sv->p, &k);
		return 0;
	}
	if (k.channel != PB_CH_DATA) {
		serve_other(sv, &k, f);
		return 0;
	}
	if (k.batch > 1) {
		burst_take(sv, &k, arrived);
		return 0;
	}
	if (pattern_check(k.payload, k.len, k.seq) != k.len)
		sv->bad_echo++; // echoed anyway: the client sees the damage too
	echo(sv->p, f);
	return k.len == 0 ? 2 : 0;
}

// Serves frames until a bye, or the quit's grace time after a quit.
static void serve(struct server *sv, const struct opts *o)
{
	bool quit = false;
	for (;;) {
		struct frame f;
		// After the quit, a pktbench client still sends its bye at once;
		// a kernel client sends nothing more.
		int wait_ms = quit ? PB_QUIT_GRACE_MS : serve_wait_ms(sv, o);
		if (!sv->b.rx_open) { // waiting for a burst: R1's receive window opens
			sv->b.rx_open = true;
			sv->b.rx_tsc = tsc_now();
			RX_OPEN();
		}
		if (port_recv(sv->p, &f, wait_ms)) {
			if (quit)
				break;
			if (serve_idle(sv))
				continue;
			die("server idle for %d ms", o->idle_timeout_ms);
		}
		int stop = serve_frame(sv, &f, tsc_now()); // R1 starts as the frame is received
		port_release(sv->p);
		if (stop == 1)
			break;
		if (stop == 2)
			quit = true;
	}
}

// After the last burst: a receive window with no frame coming, closed by
// the receive timeout: the background (timer ticks) a window holds.
static void rx_idle_window(struct port *p)
{
	struct frame f;
	uint64_t t0 = tsc_now();
	RX_OPEN();
	int r = port_recv(p, &f, RX_IDLE_WINDOW_MS);
	RX_CLOSE();
	uint64_t t1 = tsc_now();
	if (!r)
		port_release(p);
	rx_printf("SRVSTAT rxwin variant=%s bytes=0 packets=%d tsc=%llu idle_ms=%d\n", PB_VARIANT(), !r,
	          (unsigned long long)(t1 - t0), RX_IDLE_WINDOW_MS); // after the kept lines: in order
}

// The server's totals; fails if anything came damaged.
static void server_verdict(const struct server *sv)
{
	printf("SRVSTAT total bad_echo=%llu bad_bursts=%llu\n", (unsigned long long)sv->bad_echo,
	       (unsigned long long)sv->bad_bursts);
	uint64_t bad_window = window_srvstat();
	if (sv->bad_echo || sv->bad_bursts || bad_window)
		die("%llu damaged rtt requests, %llu damaged bursts, %llu stream packets out of order or damaged",
		    (unsigned long long)sv->bad_echo, (unsigned long long)sv->bad_bursts, (unsigned long long)bad_window);
	printf("DONE ok\n");
}

// ---------------------------------------------------------------- client

// What the client is waiting for.
struct want {
	uint16_t channel;
	uint32_t seq_lo, seq_hi; // accepted seq range, inclusive
	uint32_t len;            // payload length, or UINT32_MAX for any
	bool echo;               // an echo of requests seq_lo..seq_hi: also
	                         // matched by length and payload (see below)
	bool plain;              // also without WIRE_F_REPLY: the windowed stream's
	                         // acknowledgement, a plain packet on its channel
};

// An echo whose header is not ours (the research kernel's pingpong server
// sends its own seq and flags): it answers a request of seq_lo..seq_hi if
// its length is w->len and its payload is wire_pattern(that seq, i).  The
// pattern repeats every 256 seqs, so at most 256 candidates.
static bool echo_payload_matches(const struct want *w, const struct pkt *k)
{
	if (!w->echo || k->channel != w->channel || k->len != w->len)
		return false;
	for (uint32_t s = w->seq_lo, n = 0; n < 256; s++, n++) {
		if (pattern_check(k->payload, k->len, s) == k->len)
			return true;
		if (s == w->seq_hi)
			break;
	}
	return false;
}

// Receives until a reply matching `w` arrives; others are counted and
// dropped.  A pktbench server's echo matches by header (WIRE_F_REPLY and
// seq), any echo by payload when w->echo.  0: got it (frame held, call
// port_release), 1: timeout.
static int await_reply(struct port *p, const struct want *w, int timeout_ms, struct frame *f, struct pkt *k)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		uint64_t now = now_ns();
		if (now >= deadline)
			return 1;
		int left = (int)((deadline - now + 999999) / 1000000);
		if (port_recv(p, f, await_wait_ms(p, left, timeout_ms)))
			return 1;
		if (parse_frame(f, k) < 0) {
			p->ignored++;
		} else if ((w->plain || (k->flags & WIRE_F_REPLY)) && k->channel == w->channel && k->seq >= w->seq_lo &&
		           k->seq <= w->seq_hi && (w->len == UINT32_MAX || k->len == w->len)) {
			return 0;
		} else if (echo_payload_matches(w, k)) {
			return 0;
		} else {
			p->stale++;
		}
		port_release(p);
	}
}

// Sends small rtt requests until the server echoes one: both guests boot
// at the same time and the server may not be listening yet.
// A probe timeout of 0: no probes, the server is known to be up (the
// research kernel's stream server, READY before this guest boots, answers
// nothing on channel 1).
static void probe_server(struct port *p, const struct opts *o)
{
	uint8_t buf[WIRE_MIN_FRAME];
	uint64_t t0 = now_ns();
	if (o->probe_timeout_ms == 0) {
		printf("READY role=client variant=%s probes=0 wait_ms=0 fastpattern=%d\n", PB_VARIANT(), pat_fast);
		fflush(stdout);
		return;
	}
	for (uint32_t n = 0;; n++) {
		struct pkt h = { .channel = PB_CH_DATA, .seq = PB_PROBE_SEQ + n, .batch = 1, .len = 1 };
		// The echo of any probe sent so far.
		struct want w = { PB_CH_DATA, PB_PROBE_SEQ, PB_PROBE_SEQ + n, 1, true, false };
		struct frame f;
		struct pkt k;
		send_one(p, buf, build_frame(buf, o->peer, p->mac, &h));
		if (await_reply(p, &w, 200, &f, &k) == 0) {
			port_release(p);
			printf("READY role=client variant=%s probes=%u wait_ms=%llu fastpattern=%d\n", PB_VARIANT(),
			       n + 1, (unsigned long long)((now_ns() - t0) / 1000000), pat_fast);
			fflush(stdout);
			return;
		}
		if (now_ns() - t0 > (uint64_t)o->probe_timeout_ms * 1000000u)
			die("server not answering after %d ms", o->probe_timeout_ms);
	}
}

static void say_bye(struct port *p, const struct opts *o)
{
	uint8_t buf[WIRE_MIN_FRAME];
	struct pkt h = { .channel = PB_CH_CTRL, .seq = PB_CTRL_BYE, .batch = 1, .len = 0 };
	struct want w = { PB_CH_CTRL, PB_CTRL_BYE, PB_CTRL_BYE, UINT32_MAX, false, false };
	struct frame f;
	struct pkt k;
	send_one(p, buf, build_frame(buf, o->peer, p->mac, &h));
	if (await_reply(p, &w, 1000, &f, &k) == 0)
		port_release(p);
}

// Ends an rtt run: a 0-byte request, which a kernel pingpong server (and a
// pktbench server) echoes and then stops on.
static void send_quit(struct port *p, const struct opts *o, uint32_t seq)
{
	uint8_t buf[WIRE_MIN_FRAME];
	struct pkt h = { .channel = PB_CH_DATA, .seq = seq, .batch = 1, .len = 0 };
	struct want w = { PB_CH_DATA, seq, seq, 0, true, false };
	struct frame f;
	struct pkt k;
	send_one(p, buf, build_frame(buf, o->peer, p->mac, &h));
	if (await_reply(p, &w, o->timeout_ms, &f, &k))
		die("quit seq=%u: no echo within %d ms", seq, o->timeout_ms);
	port_release(p);
	printf("QUIT echoed seq=%u\n", seq);
}

// One round trip of `size` bytes; returns microseconds, fills *tsc.
static double rtt_once(struct port *p, const struct opts *o, uint8_t *buf, uint32_t size, uint32_t seq,
                       uint64_t *tsc)
{
	struct pkt h = { .channel = PB_CH_DATA, .seq = seq, .batch = 1, .len = size };
	struct want w = { PB_CH_DATA, seq, seq, size, true, false };
	struct frame f;
	struct pkt k;
	uint32_t len = build_frame(buf, o->peer, p->mac, &h);
	rtt_stage(p, buf, len);
	uint64_t c0 = tsc_now(), t0 = now_ns();
	rtt_send(p, buf, len);
	if (await_reply(p, &w, o->timeout_ms, &f, &k))
		die("rtt bytes=%u seq=%u: no echo within %d ms", size, seq, o->timeout_ms);
	uint64_t t1 = now_ns(), c1 = tsc_now();
	uint32_t bad = pattern_check(k.payload, size, seq);
	if (bad != size)
		die("rtt bytes=%u seq=%u: echo differs at byte %u", size, seq, bad);
	port_release(p);
	*tsc = c1 - c0;
	return (double)(t1 - t0) / 1000.0;
}

static void run_rtt_size(struct port *p, const struct opts *o, uint32_t size, uint32_t *seq)
{
	static uint8_t buf[PB_FRAME_BUF];
	double *us = calloc((size_t)o->runs, sizeof *us);
	uint64_t *tsc = calloc((size_t)o->runs, sizeof *tsc);
	if (!us || !tsc)
		die("out of memory");
	for (int it = -o->warmup; it < o->runs; it++) {
		uint64_t c;
		double t = rtt_once(p, o, buf, size, (*seq)++, &c);
		if (it >= 0) {
			us[it] = t;
			tsc[it] = c;
		}
	}
	// Printed after the loop: serial output is slow under emulation.
	for (int it = 0; it < o->runs; it++)
		printf("RESULT rtt variant=%s bytes=%u iter=%d us=%.1f tsc=%llu\n", PB_VARIANT(), size, it, us[it],
		       (unsigned long long)tsc[it]);
	qsort(us, (size_t)o->runs, sizeof *us, cmp_double);
	printf("SUMMARY rtt variant=%s bytes=%u n=%d median_us=%.1f p99_us=%.1f\n", PB_VARIANT(), size, o->runs,
	       percentile(us, o->runs, 50), percentile(us, o->runs, 99));
	fflush(stdout);
	free(us);
	free(tsc);
}

struct burst_result {
	uint64_t t0_ns, t1_ns, t0_tsc, t1_tsc;
	long irqs;
};

// T0: first send to reply; T1: inside the send path (burst_send).
static void burst_once(struct port *p, const struct opts *o, struct burst_frames *bf, uint32_t size,
                       struct burst_result *r)
{
	struct want w = { PB_CH_DATA, 0, PB_BURST_N, 1, false, false };
	struct frame f;
	struct pkt k;
	burst_stage(p, bf);
	long irq0 = nic_irqs(o);
	uint64_t c0 = tsc_now(), t0 = now_ns();
	burst_send(p, bf);
	uint64_t c1 = tsc_now(), t1 = now_ns();
	if (await_reply(p, &w, o->timeout_ms, &f, &k))
		die("burst bytes=%u: no reply within %d ms", size, o->timeout_ms);
	uint64_t t2 = now_ns(), c2 = tsc_now();
	if (k.seq != PB_BURST_N || k.payload[0] != wire_pattern(k.seq, 0))
		die("burst bytes=%u: server got %u of %u packets intact", size, k.seq, PB_BURST_N);
	port_release(p);
	long irq1 = nic_irqs(o);
	r->t0_ns = t2 - t0;
	r->t1_ns = t1 - t0;
	r->t0_tsc = c2 - c0;
	r->t1_tsc = c1 - c0;
	r->irqs = irq0 >= 0 && irq1 >= 0 ? irq1 - irq0 : -1;
}

static void print_burst(uint32_t size, int rep, const struct burst_result *r)
{
	double t0 = (double)r->t0_ns / 1000.0, t1 = (double)r->t1_ns / 1000.0;
	double mbps = (double)PB_BURST_N * size * 8.0 / t0; // bits per microsecond
	printf("RESULT burst variant=%s bytes=%u rep=%d t0_us=%.1f t1_us=%.1f t2_us=%.1f "
	       "t0_tsc=%llu t1_tsc=%llu mbps=%.3f irqs=%ld\n",
	       PB_VARIANT(), size, rep, t0, t1, t0 - t1, (unsigned long long)r->t0_tsc, (unsigned long long)r->t1_tsc,
	       mbps, r->irqs);
}

// Bursts as above for at least cpu_ms between two MARK lines, over which the
// harness reads the host CPU time of both VMs (tools/bench/hostcpu.py).
static void cpu_phase(struct port *p, const struct opts *o, struct burst_frames *bf, uint32_t size)
{
	struct burst_result r;
	int n = 0;
	printf("MARK burst bytes=%u cpu begin\n", size);
	fflush(stdout);
	uint64_t end = now_ns() + (uint64_t)o->cpu_ms * 1000000u;
	while (now_ns() < end) {
		burst_once(p, o, bf, size, &r);
		n++;
		if (o->gap_ms > 0)
			sleep_ms(o->gap_ms);
	}
	printf("MARK burst bytes=%u cpu end bursts=%d\n", size, n);
	fflush(stdout);
}

static void run_burst_size(struct port *p, const struct opts *o, uint32_t size)
{
	static struct burst_frames bf;
	struct burst_result *res = calloc((size_t)o->runs, sizeof *res);
	if (!res)
		die("out of memory");
	burst_build(p, &bf, o->peer, size);
	for (int rep = -o->warmup; rep < o->runs; rep++) {
		struct burst_result r;
		burst_once(p, o, &bf, size, &r);
		if (rep >= 0)
			res[rep] = r;
		if (o->gap_ms > 0)
			sleep_ms(o->gap_ms); // let the server finish its bookkeeping
	}
	for (int rep = 0; rep < o->runs; rep++)
		print_burst(size, rep, &res[rep]);
	fflush(stdout);
	free(res);
	if (o->cpu_ms > 0)
		cpu_phase(p, o, &bf, size);
}

// ---------------------------------------------------------------- options

// --sizes: a comma-separated list of 1..WIRE_MAX_PAYLOAD; -1 if bad.
static int parse_sizes(const char *s, struct opts *o)
{
	char *copy = strdup(s), *save = NULL;
	o->nsizes = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long v = strtol(t, NULL, 10);
		if (v < 1 || v > WIRE_MAX_PAYLOAD || o->nsizes == PB_MAX_SIZES) {
			free(copy);
			return -1;
		}
		o->sizes[o->nsizes++] = (uint32_t)v;
	}
	free(copy);
	return o->nsizes ? 0 : -1;
}

// The options both programs take, by their getopt_long letters (--peer p,
// --sizes s, --runs n, --warmup w, --timeout-ms t, --probe-timeout-ms P,
// --idle-timeout-ms I, --gap-ms g, --cpu-ms c, --rx-count X); false for
// another letter.  A bad value: usage().
static bool parse_peer_opt(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case 'p': if (parse_mac(arg, o->peer) < 0) usage(); o->have_peer = true; break;
	case 's': if (parse_sizes(arg, o) < 0) usage(); break;
	case 'n': o->runs = atoi(arg); break;
	case 'w': o->warmup = atoi(arg); break;
	case 't': o->timeout_ms = atoi(arg); break;
	case 'P': o->probe_timeout_ms = atoi(arg); break;
	case 'I': o->idle_timeout_ms = atoi(arg); break;
	case 'g': o->gap_ms = atoi(arg); break;
	case 'c': o->cpu_ms = atoi(arg); break;
	case 'X': o->rx_count = true; break;
	default: return false;
	}
	return true;
}

#endif
