// Wire format of this kernel's I/O channels, shared by the kernel, the user
// programs and the Linux baseline (tools/linux-baseline), so they interoperate.
//
// An Ethernet II frame:  dst[6] src[6] type=0x88B5 (big-endian)
// then struct wire_hdr (16 bytes, all fields big-endian), then `len` bytes of
// payload.  A frame is at most WIRE_MAX_FRAME bytes without the FCS.
//
// Frames are read and written only through the codec below, on host-order
// values: wire_put_eth/wire_get_eth for the Ethernet header, wire_put_hdr/
// wire_get_hdr for the whole wire header (struct wire_fields), and
// wire_get_<field>/wire_set_<field> for one field.  Every one takes f, the
// frame's first byte (a received payload p has its frame at
// p - WIRE_FRAME_HLEN); none needs any alignment.
#ifndef WIRE_H
#define WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_ETHERTYPE 0x88B5
#define WIRE_ETH_HLEN 14
#define WIRE_HLEN 16                        // struct wire_hdr
#define WIRE_FRAME_HLEN (WIRE_ETH_HLEN + WIRE_HLEN) // 30
#define WIRE_MAX_FRAME 9014                 // 9000-byte MTU + Ethernet header
#define WIRE_MAX_PAYLOAD 8960               // largest payload a channel carries
#define WIRE_MIN_FRAME 60                   // Ethernet minimum, without FCS

// flags
#define WIRE_F_LAST 0x0001  // last packet of a batch
#define WIRE_F_REPLY 0x0002 // an answer (pingpong echo, burst acknowledgement)
#define WIRE_F_HBEAT 0x0004 // heartbeat (multi-link), no payload
#define WIRE_F_STRIPE 0x0008 // part of a sequenced stream (seq orders it): a striped
                             // channel's, or a reliable one's (IO_OP_RELIABLE); `batch`
                             // then carries the sending channel's session tag
#define WIRE_F_ACK 0x0010    // with WIRE_F_STRIPE: a control frame of a sequenced
                             // channel (acknowledgement, heartbeat): payload below
#define WIRE_F_ROUTE 0x0020  // a routed frame: a route trailer (below) follows the payload

// The layout of the wire header, WIRE_ETH_HLEN bytes into the frame; every
// field big-endian.  Only the codec below touches it.
struct wire_hdr {
	uint16_t channel; // channel number: the receiver hands the frame to its
	                  // channel of that number on the receiving NIC
	uint16_t flags;   // WIRE_F_*
	uint32_t seq;     // sequence number, counted per (channel, peer) by the
	                  // kernel: each channel numbers its packets to each
	                  // peer from 0 (at get_io) on
	uint16_t batch;   // packets in this batch (n_output of the send call)
	uint16_t link;    // the sending NIC's index (which NIC the frame left by)
	uint32_t len;     // payload bytes following this header
} __attribute__((packed));

_Static_assert(sizeof(struct wire_hdr) == WIRE_HLEN, "wire header is 16 bytes");

// The wire header's fields in host order.
struct wire_fields {
	uint16_t channel, flags;
	uint32_t seq;
	uint16_t batch, link;
	uint32_t len;
};

// Byte offsets in a frame.
#define WIRE_OFF_DST 0
#define WIRE_OFF_SRC 6
#define WIRE_OFF_TYPE 12
#define WIRE_OFF(field) (WIRE_ETH_HLEN + offsetof(struct wire_hdr, field))

// Big-endian loads and stores, byte by byte (any alignment).
static inline uint16_t wire_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t wire_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void wire_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

// One field of a frame's headers.
static inline uint16_t wire_get_type(const uint8_t *f) { return wire_get16(f + WIRE_OFF_TYPE); }
static inline uint16_t wire_get_channel(const uint8_t *f) { return wire_get16(f + WIRE_OFF(channel)); }
static inline uint16_t wire_get_flags(const uint8_t *f) { return wire_get16(f + WIRE_OFF(flags)); }
static inline uint32_t wire_get_seq(const uint8_t *f) { return wire_get32(f + WIRE_OFF(seq)); }
static inline uint16_t wire_get_batch(const uint8_t *f) { return wire_get16(f + WIRE_OFF(batch)); }
static inline uint16_t wire_get_link(const uint8_t *f) { return wire_get16(f + WIRE_OFF(link)); }
static inline uint32_t wire_get_len(const uint8_t *f) { return wire_get32(f + WIRE_OFF(len)); }

static inline void wire_set_type(uint8_t *f, uint16_t v) { wire_put16(f + WIRE_OFF_TYPE, v); }
static inline void wire_set_flags(uint8_t *f, uint16_t v) { wire_put16(f + WIRE_OFF(flags), v); }
static inline void wire_set_seq(uint8_t *f, uint32_t v) { wire_put32(f + WIRE_OFF(seq), v); }
static inline void wire_set_len(uint8_t *f, uint32_t v) { wire_put32(f + WIRE_OFF(len), v); }

// Unaligned 32- and 16-bit words (x86 loads and stores them as they are):
// a MAC in two moves rather than six byte moves.
typedef uint32_t wire_u32u __attribute__((aligned(1), may_alias));
typedef uint16_t wire_u16u __attribute__((aligned(1), may_alias));
static inline void wire_put_mac(uint8_t *p, const uint8_t mac[6])
{
	*(wire_u32u *)p = *(const wire_u32u *)mac;
	*(wire_u16u *)(p + 4) = *(const wire_u16u *)(mac + 4);
}

static inline bool wire_mac_eq(const uint8_t *a, const uint8_t *b)
{
	return *(const wire_u32u *)a == *(const wire_u32u *)b &&
	       *(const wire_u16u *)(a + 4) == *(const wire_u16u *)(b + 4);
}

// The Ethernet header: dst, src and type WIRE_ETHERTYPE.
static inline void wire_put_eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6])
{
	wire_put_mac(f + WIRE_OFF_DST, dst);
	wire_put_mac(f + WIRE_OFF_SRC, src);
	wire_set_type(f, WIRE_ETHERTYPE);
}

// Copies the addresses out (dst or src may be NULL) and returns the type.
static inline uint16_t wire_get_eth(const uint8_t *f, uint8_t dst[6], uint8_t src[6])
{
	for (int i = 0; i < 6; i++) {
		if (dst)
			dst[i] = f[WIRE_OFF_DST + i];
		if (src)
			src[i] = f[WIRE_OFF_SRC + i];
	}
	return wire_get_type(f);
}

// The whole wire header (the WIRE_HLEN bytes after the Ethernet header).
static inline void wire_put_hdr(uint8_t *f, const struct wire_fields *h)
{
	wire_put16(f + WIRE_OFF(channel), h->channel);
	wire_put16(f + WIRE_OFF(flags), h->flags);
	wire_put32(f + WIRE_OFF(seq), h->seq);
	wire_put16(f + WIRE_OFF(batch), h->batch);
	wire_put16(f + WIRE_OFF(link), h->link);
	wire_put32(f + WIRE_OFF(len), h->len);
}

static inline void wire_get_hdr(const uint8_t *f, struct wire_fields *h)
{
	h->channel = wire_get_channel(f);
	h->flags = wire_get_flags(f);
	h->seq = wire_get_seq(f);
	h->batch = wire_get_batch(f);
	h->link = wire_get_link(f);
	h->len = wire_get_len(f);
}

// The payload of a control frame (WIRE_F_STRIPE with WIRE_F_ACK and/or
// WIRE_F_HBEAT): the sender's state towards the receiving peer on the link
// it came by. Offsets in the payload, big-endian:
//   0 session      the sending channel's session (random at get_io, never 0)
//   4 your_session the receiver's session as the sender knows it (0: none)
//   8 hb           heartbeat number on this link (0: not a heartbeat)
//  12 echo         the last heartbeat number the sender got on this link
//  16 cum          every sequence number below it was received (taken in order)
//  20 cflags       WIRE_C_*
//  21 reserved
//  22 sack_bytes   bitmap bytes that follow (0..WIRE_CTRL_SACK)
//  24 sack         bit i (byte i/8, bit i%8) set: cum + i is held (waits for order)
#define WIRE_CTRL_HLEN 24
#define WIRE_CTRL_SACK 128 // 1024 sequence numbers, the receiver's window
#define WIRE_C_PROBE 0x01  // answer at once on this link (a suspected or dead link's probe)
#define WIRE_C_BYE 0x02    // the sending channel is being closed

struct wire_ctrl {
	uint32_t session, your_session, hb, echo, cum;
	uint8_t cflags;
	uint16_t sack_bytes;
	const uint8_t *sack; // in the frame (wire_get_ctrl) or the caller's (wire_put_ctrl)
};

// p: the payload (frame + WIRE_FRAME_HLEN). Returns the payload length.
static inline uint32_t wire_put_ctrl(uint8_t *p, const struct wire_ctrl *c)
{
	wire_put32(p, c->session);
	wire_put32(p + 4, c->your_session);
	wire_put32(p + 8, c->hb);
	wire_put32(p + 12, c->echo);
	wire_put32(p + 16, c->cum);
	p[20] = c->cflags;
	p[21] = 0;
	wire_put16(p + 22, c->sack_bytes);
	for (uint32_t i = 0; i < c->sack_bytes; i++)
		p[WIRE_CTRL_HLEN + i] = c->sack[i];
	return WIRE_CTRL_HLEN + c->sack_bytes;
}

// Parses a control payload of len bytes; -1 when malformed, else 0.
static inline int wire_get_ctrl(const uint8_t *p, uint32_t len, struct wire_ctrl *c)
{
	if (len < WIRE_CTRL_HLEN)
		return -1;
	c->session = wire_get32(p);
	c->your_session = wire_get32(p + 4);
	c->hb = wire_get32(p + 8);
	c->echo = wire_get32(p + 12);
	c->cum = wire_get32(p + 16);
	c->cflags = p[20];
	c->sack_bytes = wire_get16(p + 22);
	c->sack = p + WIRE_CTRL_HLEN;
	if (c->session == 0 || c->sack_bytes > WIRE_CTRL_SACK || (uint32_t)WIRE_CTRL_HLEN + c->sack_bytes > len)
		return -1;
	return 0;
}

// Routing (a hyper-crossbar of nodes, docs/design.md "Relaying"). A node is
// named by its coordinates, one byte per dimension (X, Y, Z), packed as
// wire_node(x, y, z). A frame for a node that is not on one of the sender's
// networks carries WIRE_F_ROUTE and, right after its `len` payload bytes,
// the route trailer; relays rewrite the Ethernet header and the trailer's
// hop limit in place. A trailer keeps the wire header and the payload where
// a direct frame has them (and a direct frame byte for byte what the Linux
// pktbench sends and expects). Offsets in the trailer:
//   0 dst[3]  the final destination's coordinates
//   3 src[3]  the origin's coordinates
//   6 hops    relays it may still pass: each relay decrements it, and one
//             that finds 1 (it would reach 0) drops the frame
//   7 resv    0
#define WIRE_RTLEN 8
#define WIRE_HOPS_DEFAULT 8
#define WIRE_DIMS 3

static inline uint32_t wire_node(uint8_t x, uint8_t y, uint8_t z)
{
	return (uint32_t)x | (uint32_t)y << 8 | (uint32_t)z << 16;
}
static inline uint8_t wire_coord(uint32_t node, int dim) { return (uint8_t)(node >> (8 * dim)); }

struct wire_route {
	uint32_t dst, src; // wire_node values
	uint8_t hops;
};

// t: the trailer's first byte (frame + WIRE_FRAME_HLEN + len).
static inline void wire_put_route(uint8_t *t, const struct wire_route *r)
{
	for (int d = 0; d < WIRE_DIMS; d++) {
		t[d] = wire_coord(r->dst, d);
		t[3 + d] = wire_coord(r->src, d);
	}
	t[6] = r->hops;
	t[7] = 0;
}

static inline void wire_get_route(const uint8_t *t, struct wire_route *r)
{
	r->dst = wire_node(t[0], t[1], t[2]);
	r->src = wire_node(t[3], t[4], t[5]);
	r->hops = t[6];
}

// The test payload pattern: byte i of packet seq is wire_pattern(seq, i).
// Both systems fill and verify payloads with it.
static inline uint8_t wire_pattern(uint32_t seq, uint32_t i)
{
	return (uint8_t)((i * 131u) ^ (seq * 7u) ^ (i >> 8));
}

// Fletcher-style checksum of a payload, carried in the last 4 bytes of
// payloads of 8 bytes or more in the verified tests.
static inline uint32_t wire_sum(const uint8_t *p, uint32_t n)
{
	uint32_t a = 1, b = 0;
	for (uint32_t i = 0; i < n; i++) {
		a = (a + p[i]) % 65521u;
		b = (b + a) % 65521u;
	}
	return (b << 16) | a;
}

#endif
