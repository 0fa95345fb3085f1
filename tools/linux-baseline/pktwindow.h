// pktwindow.h: the windowed stream (pktbench and dpdkbench --mode window),
// one copy for both programs.  It is this kernel's user/stream.c on the
// wire (PB_CH_WIN and PB_WIN_*, pktproto.h): data on channel 3, batches of
// 64 packets, the sender keeping at most 2 batches unacknowledged; packet k of a
// stream has seq k, batch 64, WIRE_F_LAST on each batch's last packet and
// payload wire_pattern(k % 64, i); the receiver checks every packet's seq,
// length and every payload byte, and after each batch answers with one
// 8-byte packet on the same channel, as user/stream.c's server sends it
// through its channel: a one-packet batch (batch 1, flags WIRE_F_LAST, no
// WIRE_F_REPLY, seq the receiver's count of acknowledgements), payload the
// count of packets taken intact and in order, little-endian: a cumulative
// acknowledgement, no reply per burst.  The sender takes any 8-byte packet
// on the channel as one (want.plain).  A packet that is lost, reordered or
// damaged stops the acknowledgements, so the sender fails on its timeout:
// nothing is counted that was not checked.  A stream starts at seq 0, which
// resets the receiver.
// The includer includes pktpeer.h first (struct want, await_reply; struct
// port, port_release and send_one come with it) and defines its frame
// slots: struct wslots with `frame` and `len` arrays of PB_WIN_SLOTS,
// wslots_alloc(p, s) (every slot's memory), wslots_send(p, s, first, n)
// (slots first..first+n-1 to the wire, in order) and wslots_stream(p, s,
// begin) (called as a stream starts, before its timing, and as it ends,
// after: dpdkbench's striped form marks its windows there).
//
// window_take and window_srvstat are called by the server before this is
// included: pktpeer.h declares them.
// Output: RESULT window variant=.. bytes=.. rep=.. packets=.. batch=..
// window=.. us=(first send to last acknowledgement) mbps=.. acks=..
// (client); per stream, SRVSTAT window variant=.. bytes=.. packets=..
// timed=.. us=.. mbps=.. (server: from the first batch taken to the last
// packet, the packets after the first batch; user/stream.c's server figure,
// which leaves out the first batch's wait for a link that just came up) and
// at its end SRVSTAT window total streams=.. packets=.. bad=.. (server).
// The includer names its variant: PB_VARIANT(), a string (pktpeer.h).
#ifndef PKTWINDOW_H
#define PKTWINDOW_H

// The receiving side's state: the stream's next seq, its size, and totals.
struct window_rx {
	uint32_t expect, size, good;
	uint64_t t0; // the first batch taken: the timed part starts (as user/stream.c's server)
	bool broken; // a packet out of order or damaged: no more acknowledgements
	uint64_t streams, packets, bad;
	uint32_t acks;
};

static struct window_rx wrx;

static void window_ack(struct port *p, const uint8_t dst[6])
{
	uint8_t f[WIRE_MIN_FRAME];
	uint64_t got = wrx.good;
	struct pkt h = { .channel = PB_CH_WIN, .flags = WIRE_F_LAST, .seq = wrx.acks++, .batch = 1, .len = 8 };
	uint32_t len = build_frame_shell(f, dst, p->mac, &h);
	memcpy(f + WIRE_FRAME_HLEN, &got, 8); // little-endian: x86, as the kernel's stream
	send_one(p, f, len);
}

// The server's line for a whole stream: the packets after the first batch,
// over their time (ns).
static void window_stream_line(uint32_t size, uint64_t ns)
{
	double us = ns / 1000.0;
	rx_printf("SRVSTAT window variant=%s bytes=%u packets=%u timed=%u us=%.1f mbps=%.3f\n", PB_VARIANT(), size,
	       PB_WIN_COUNT, PB_WIN_COUNT - PB_WIN_BATCH, us, (double)(PB_WIN_COUNT - PB_WIN_BATCH) * size * 8.0 / us);
}

// One data packet of a stream (the server's serve_frame hands them here).
static void window_take(struct port *p, const struct pkt *k)
{
	if (k->seq == 0) { // a new stream
		wrx.expect = wrx.good = 0;
		wrx.size = k->len;
		wrx.broken = false;
		wrx.streams++;
	}
	wrx.packets++;
	bool ok = !wrx.broken && k->seq == wrx.expect && k->len == wrx.size &&
	          pattern_check(k->payload, k->len, k->seq % PB_WIN_BATCH) == k->len;
	wrx.expect = k->seq + 1;
	if (!ok) {
		if (wrx.bad++ < 5)
			printf("window: packet seq=%u len=%u (want seq %u len %u) out of order or damaged\n", k->seq,
			       k->len, wrx.expect - 1, wrx.size);
		wrx.broken = true;
		return;
	}
	wrx.good++;
	if (wrx.good % PB_WIN_BATCH == 0)
		window_ack(p, k->src);
	if (wrx.good == PB_WIN_BATCH)
		wrx.t0 = now_ns();
	if (wrx.good == PB_WIN_COUNT)
		window_stream_line(wrx.size, now_ns() - wrx.t0);
}

// The server's totals line, when it took a stream; returns the packets
// that were out of order or damaged.
static uint64_t window_srvstat(void)
{
	if (wrx.streams)
		printf("SRVSTAT window total streams=%llu packets=%llu bad=%llu\n", (unsigned long long)wrx.streams,
		       (unsigned long long)wrx.packets, (unsigned long long)wrx.bad);
	return wrx.bad;
}

// Waits for an acknowledgement; returns the count it carries.
static uint64_t window_wait_ack(struct port *p, const struct opts *o, uint32_t size, uint64_t sent)
{
	struct want w = { PB_CH_WIN, 0, UINT32_MAX, 8, false, true };
	struct frame f;
	struct pkt k;
	uint64_t got;
	if (await_reply(p, &w, o->timeout_ms, &f, &k))
		die("window bytes=%u: no acknowledgement within %d ms (%llu packets sent)", size, o->timeout_ms,
		    (unsigned long long)sent);
	memcpy(&got, k.payload, 8);
	port_release(p);
	return got;
}

// One stream of PB_WIN_COUNT packets; returns its time in ns.
static uint64_t window_once(struct port *p, const struct opts *o, struct wslots *s, uint32_t size, uint32_t *acks)
{
	uint64_t sent = 0, acked = 0;
	*acks = 0;
	wslots_stream(p, s, true);
	uint64_t t0 = now_ns();
	while (sent < PB_WIN_COUNT) {
		while (sent - acked >= PB_WIN_SLOTS) {
			acked = window_wait_ack(p, o, size, sent);
			(*acks)++;
		}
		uint32_t first = (uint32_t)(sent % PB_WIN_SLOTS);
		for (uint32_t j = 0; j < PB_WIN_BATCH; j++) // only the headers change: seq and the last flag
			wire_set_seq(s->frame[first + j], (uint32_t)sent + j);
		wslots_send(p, s, first, PB_WIN_BATCH);
		sent += PB_WIN_BATCH;
	}
	while (acked < PB_WIN_COUNT) {
		acked = window_wait_ack(p, o, size, sent);
		(*acks)++;
	}
	uint64_t t1 = now_ns();
	wslots_stream(p, s, false);
	if (acked != PB_WIN_COUNT)
		die("window bytes=%u: %llu of %u packets acknowledged", size, (unsigned long long)acked, PB_WIN_COUNT);
	return t1 - t0;
}

// Every stream of one size: warm-ups, then o->runs timed, printed after.
static void run_window_size(struct port *p, const struct opts *o, uint32_t size, const char *variant)
{
	static struct wslots s;
	static bool have;
	uint64_t ns[64];
	uint32_t acks[64];
	int runs = o->runs < 64 ? o->runs : 64;
	if (!have) {
		wslots_alloc(p, &s);
		have = true;
	}
	for (uint32_t i = 0; i < PB_WIN_SLOTS; i++) {
		struct pkt h = { .channel = PB_CH_WIN, .seq = i, .batch = PB_WIN_BATCH, .len = size };
		h.flags = (i % PB_WIN_BATCH == PB_WIN_BATCH - 1) ? WIRE_F_LAST : 0;
		s.len[i] = build_frame_shell(s.frame[i], o->peer, p->mac, &h);
		pattern_fill(s.frame[i] + WIRE_FRAME_HLEN, size, i % PB_WIN_BATCH);
	}
	for (int rep = -o->warmup; rep < runs; rep++) {
		uint32_t a;
		uint64_t t = window_once(p, o, &s, size, &a);
		if (rep >= 0)
			ns[rep] = t, acks[rep] = a;
		if (o->gap_ms > 0)
			sleep_ms(o->gap_ms);
	}
	for (int rep = 0; rep < runs; rep++)
		printf("RESULT window variant=%s bytes=%u rep=%d packets=%u batch=%u window=%u us=%.1f mbps=%.3f "
		       "acks=%u\n", variant, size, rep, PB_WIN_COUNT, PB_WIN_BATCH, PB_WIN_WINDOW, ns[rep] / 1000.0,
		       (double)PB_WIN_COUNT * size * 8.0 / (ns[rep] / 1000.0), acks[rep]);
	fflush(stdout);
}

#endif
