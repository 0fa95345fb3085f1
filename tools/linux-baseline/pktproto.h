// pktproto.h: the pktbench protocol's pieces that pktbench.c and
// dpdkbench.c share (one copy, included by each; every program is one
// translation unit, so they stay static): the channel numbers and limits,
// the parsed frame, the TSC and percentile helpers, the payload pattern
// (filled and checked 8 bytes at a time) and the frame builder and parser.
// The includer includes wire.h and benchnet.h first.
#ifndef PKTPROTO_H
#define PKTPROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PB_CH_DATA 1
#define PB_CH_CTRL 0xFFFF
#define PB_CTRL_BYE 1
#define PB_PROBE_SEQ 0x80000000u
#define PB_QUIT_GRACE_MS 1000 // server: wait for a bye after the quit
#define PB_BURST_N 128u
#define PB_MAX_SIZES 32
#define PB_FRAME_BUF 9216u // room for one WIRE_MAX_FRAME frame
// The windowed stream (pktwindow.h): user/stream.c's channel and defaults.
#define PB_CH_WIN 3
#define PB_WIN_BATCH 64u
#define PB_WIN_WINDOW 2u
#define PB_WIN_SLOTS (PB_WIN_BATCH * PB_WIN_WINDOW)
#define PB_WIN_COUNT 4096u // packets per stream

// A received frame, valid until port_release().
struct frame {
	uint8_t *data;
	uint32_t len;
};

// A parsed frame, header fields in host order.
struct pkt {
	uint8_t src[6];
	uint16_t channel, flags, batch, link;
	uint32_t seq, len;
	uint8_t *payload;
};

// ---------------------------------------------------------------- utilities

// lfence before rdtsc keeps earlier instructions from drifting past the
// read; lfence after keeps later ones from starting before it.  Under
// QEMU -icount shift=0 the guest TSC counts executed guest instructions.
static inline uint64_t tsc_now(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

// The sum of a /proc/interrupts line's per-CPU columns, which follow its
// colon (up to the chip name).
static long irq_line_total(const char *colon)
{
	long total = 0;
	for (const char *p = colon;;) {
		char *q;
		long v = strtol(p + 1, &q, 10);
		if (q == p + 1)
			break;
		total += v;
		p = q;
	}
	return total;
}

// Nearest-rank percentile of a sorted array.
static double percentile(const double *v, int n, double p)
{
	int k = (int)(p / 100.0 * n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

// ---------------------------------------------------------------- pattern
//
// wire_pattern(seq, i) is (i*131 ^ i>>8) ^ seq*7 truncated to a byte, i.e. a
// per-index base XOR a per-packet byte.  Filling and checking 8 bytes at a
// time against a precomputed base keeps the server's verification (which
// sits inside the measured round trip) cheap under emulation.  pattern_init
// checks that identity against wire.h itself and falls back to the plain
// per-byte loop if the header's pattern ever stops having this shape.

static uint8_t pat_base[WIRE_MAX_PAYLOAD + 8];
static bool pat_fast;

static uint8_t pat_key(uint32_t seq) { return (uint8_t)(wire_pattern(seq, 0) ^ wire_pattern(0, 0)); }

static void pattern_init(void)
{
	static const uint32_t probe[] = { 1, 2, 127, 128, 255, 256, 0x12345678u, PB_PROBE_SEQ + 5 };
	for (uint32_t i = 0; i < sizeof pat_base; i++)
		pat_base[i] = wire_pattern(0, i);
	pat_fast = true;
	for (size_t k = 0; k < sizeof probe / sizeof probe[0]; k++)
		for (uint32_t i = 0; i < WIRE_MAX_PAYLOAD; i++)
			if (wire_pattern(probe[k], i) != (uint8_t)(pat_base[i] ^ pat_key(probe[k])))
				pat_fast = false;
}

static void pattern_fill(uint8_t *p, uint32_t n, uint32_t seq)
{
	uint32_t i = 0;
	if (pat_fast) {
		uint64_t k = 0x0101010101010101ull * pat_key(seq);
		for (; i + 8 <= n; i += 8) {
			uint64_t b;
			memcpy(&b, pat_base + i, 8);
			b ^= k;
			memcpy(p + i, &b, 8);
		}
	}
	for (; i < n; i++)
		p[i] = wire_pattern(seq, i);
}

// Index of the first byte that differs from the pattern, or n if none.
static uint32_t pattern_check(const uint8_t *p, uint32_t n, uint32_t seq)
{
	uint32_t i = 0;
	if (pat_fast) {
		uint64_t k = 0x0101010101010101ull * pat_key(seq);
		for (; i + 8 <= n; i += 8) {
			uint64_t a, b;
			memcpy(&a, p + i, 8);
			memcpy(&b, pat_base + i, 8);
			if ((a ^ k) != b)
				break;
		}
	}
	for (; i < n; i++)
		if (p[i] != wire_pattern(seq, i))
			return i;
	return n;
}

// The host-side check (--selfcheck) that the fast pattern code agrees with
// wire.h: 0, or 1 after a DONE fail line.
static int pattern_selfcheck(void)
{
	static uint8_t buf[WIRE_MAX_PAYLOAD];
	for (uint32_t seq = 0; seq < 300; seq += 37) {
		pattern_fill(buf, WIRE_MAX_PAYLOAD, seq);
		for (uint32_t i = 0; i < WIRE_MAX_PAYLOAD; i++)
			if (buf[i] != wire_pattern(seq, i))
				return printf("DONE fail pattern seq=%u byte=%u\n", seq, i), 1;
		buf[4097] ^= 1;
		if (pattern_check(buf, WIRE_MAX_PAYLOAD, seq) != 4097)
			return printf("DONE fail check seq=%u\n", seq), 1;
	}
	return 0;
}

// ---------------------------------------------------------------- frames

static uint32_t frame_len_for(uint32_t payload)
{
	uint32_t n = WIRE_FRAME_HLEN + payload;
	return n < WIRE_MIN_FRAME ? WIRE_MIN_FRAME : n;
}

// Writes the Ethernet and wire headers; the payload is the caller's.
static void put_headers(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const struct pkt *h)
{
	struct wire_fields w = {
		.channel = h->channel,
		.flags = h->flags,
		.seq = h->seq,
		.batch = h->batch,
		.link = h->link,
		.len = h->len,
	};
	wire_put_eth(f, dst, src);
	wire_put_hdr(f, &w);
}

// A frame of our format but its payload (the caller's: written before, or
// after): headers and the padding up to the minimum frame; returns its
// length on the wire.
static uint32_t build_frame_shell(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const struct pkt *h)
{
	uint32_t flen = frame_len_for(h->len);
	put_headers(f, dst, src, h);
	memset(f + WIRE_FRAME_HLEN + h->len, 0, flen - WIRE_FRAME_HLEN - h->len);
	return flen;
}

// Builds a whole frame of our format; returns its length on the wire.
static uint32_t build_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], const struct pkt *h)
{
	pattern_fill(f + WIRE_FRAME_HLEN, h->len, h->seq);
	return build_frame_shell(f, dst, src, h);
}

// 0 if `f` is one of ours (right EtherType, header and length consistent).
static int parse_frame(const struct frame *f, struct pkt *p)
{
	struct wire_fields w;
	if (f->len < WIRE_FRAME_HLEN)
		return -1;
	if (wire_get_eth(f->data, NULL, p->src) != WIRE_ETHERTYPE)
		return -1;
	wire_get_hdr(f->data, &w);
	p->channel = w.channel;
	p->flags = w.flags;
	p->seq = w.seq;
	p->batch = w.batch;
	p->link = w.link;
	p->len = w.len;
	p->payload = f->data + WIRE_FRAME_HLEN;
	if (p->len > WIRE_MAX_PAYLOAD || p->len > f->len - WIRE_FRAME_HLEN)
		return -1;
	return 0;
}

#endif
