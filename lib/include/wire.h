// Wire format of this kernel's I/O channels, shared by the kernel, the user
// programs and the Linux baseline (tools/linux-baseline), so they interoperate.
//
// An Ethernet II frame:  dst[6] src[6] type=0x88B5 (big-endian)
// then struct wire_hdr (16 bytes, all fields big-endian), then `len` bytes of
// payload.  A frame is at most WIRE_MAX_FRAME bytes without the FCS.
#ifndef WIRE_H
#define WIRE_H

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
#define WIRE_F_STRIPE 0x0008 // part of a striped stream (seq orders it)

struct wire_hdr {
	uint16_t channel; // receiving channel number (I/O resource's channel)
	uint16_t flags;   // WIRE_F_*
	uint32_t seq;     // per-(sender, channel) sequence number
	uint16_t batch;   // packets in this batch (n_output of the send call)
	uint16_t link;    // sending link index (multi-link); 0 otherwise
	uint32_t len;     // payload bytes following this header
} __attribute__((packed));

static inline uint16_t wire_htons(uint16_t v) { return (uint16_t)((v >> 8) | (v << 8)); }
static inline uint32_t wire_htonl(uint32_t v)
{
	return (v >> 24) | ((v >> 8) & 0xff00) | ((v << 8) & 0xff0000) | (v << 24);
}
#define wire_ntohs wire_htons
#define wire_ntohl wire_htonl

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
