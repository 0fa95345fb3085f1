// lib/include/wire.h: the frame codec shared by the kernel, the user
// programs and the Linux baseline, checked against the bytes of a known
// frame written out by hand (big-endian, offsets from the frame's start).
#include "host.h"
#include "wire.h"
#include <CUnit/CUnit.h>
#include <string.h>

static const uint8_t DST[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t SRC[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };

// channel 0x0102, flags LAST|REPLY, seq 0x0a0b0c0d, batch 128, link 1,
// len 0x1234.
static const struct wire_fields FIELDS = {
	.channel = 0x0102, .flags = WIRE_F_LAST | WIRE_F_REPLY, .seq = 0x0a0b0c0d,
	.batch = 128, .link = 1, .len = 0x1234,
};
static const uint8_t FRAME[WIRE_FRAME_HLEN] = {
	0x52, 0x54, 0x00, 0x12, 0x34, 0x56, // 0  dst
	0x52, 0x54, 0x00, 0xab, 0xcd, 0xef, // 6  src
	0x88, 0xb5,                         // 12 type
	0x01, 0x02,                         // 14 channel
	0x00, 0x03,                         // 16 flags
	0x0a, 0x0b, 0x0c, 0x0d,             // 18 seq
	0x00, 0x80,                         // 22 batch
	0x00, 0x01,                         // 24 link
	0x00, 0x00, 0x12, 0x34,             // 26 len
};

static bool same_fields(const struct wire_fields *a, const struct wire_fields *b)
{
	return a->channel == b->channel && a->flags == b->flags && a->seq == b->seq &&
	       a->batch == b->batch && a->link == b->link && a->len == b->len;
}

static void test_layout(void)
{
	CU_ASSERT_EQUAL(sizeof(struct wire_hdr), 16);
	CU_ASSERT_EQUAL(WIRE_FRAME_HLEN, 30);
	CU_ASSERT_EQUAL(WIRE_OFF_TYPE, 12);
	CU_ASSERT_EQUAL(WIRE_OFF(channel), 14);
	CU_ASSERT_EQUAL(WIRE_OFF(flags), 16);
	CU_ASSERT_EQUAL(WIRE_OFF(seq), 18);
	CU_ASSERT_EQUAL(WIRE_OFF(batch), 22);
	CU_ASSERT_EQUAL(WIRE_OFF(link), 24);
	CU_ASSERT_EQUAL(WIRE_OFF(len), 26);
}

// Writing gives exactly the known bytes and nothing past the headers.
static void test_put(void)
{
	uint8_t f[WIRE_FRAME_HLEN + 8];
	memset(f, 0xee, sizeof(f));
	wire_put_eth(f, DST, SRC);
	wire_put_hdr(f, &FIELDS);
	CU_ASSERT_EQUAL(memcmp(f, FRAME, WIRE_FRAME_HLEN), 0);
	for (size_t i = WIRE_FRAME_HLEN; i < sizeof(f); i++)
		CU_ASSERT_EQUAL(f[i], 0xee);
}

// Reading the known bytes gives the known values, whole and field by field.
static void test_get(void)
{
	uint8_t dst[6], src[6];
	struct wire_fields h;
	memset(&h, 0x5a, sizeof(h));
	CU_ASSERT_EQUAL(wire_get_eth(FRAME, dst, src), WIRE_ETHERTYPE);
	CU_ASSERT_EQUAL(memcmp(dst, DST, 6), 0);
	CU_ASSERT_EQUAL(memcmp(src, SRC, 6), 0);
	memset(src, 0, 6);
	CU_ASSERT_EQUAL(wire_get_eth(FRAME, NULL, src), WIRE_ETHERTYPE);
	CU_ASSERT_EQUAL(memcmp(src, SRC, 6), 0);
	CU_ASSERT_EQUAL(wire_get_eth(FRAME, NULL, NULL), 0x88b5);
	wire_get_hdr(FRAME, &h);
	CU_ASSERT(same_fields(&h, &FIELDS));
	CU_ASSERT_EQUAL(wire_get_type(FRAME), 0x88b5);
	CU_ASSERT_EQUAL(wire_get_channel(FRAME), 0x0102);
	CU_ASSERT_EQUAL(wire_get_flags(FRAME), 3);
	CU_ASSERT_EQUAL(wire_get_seq(FRAME), 0x0a0b0c0du);
	CU_ASSERT_EQUAL(wire_get_batch(FRAME), 128);
	CU_ASSERT_EQUAL(wire_get_link(FRAME), 1);
	CU_ASSERT_EQUAL(wire_get_len(FRAME), 0x1234);
	// A header cut short and zero-padded by the NIC reads as batch 0.
	uint8_t shortf[WIRE_MIN_FRAME] = { 0 };
	memcpy(shortf, FRAME, 20);
	CU_ASSERT_EQUAL(wire_get_batch(shortf), 0);
}

// The kernel's send path: a template copied, then flags, seq and len
// patched. Each setter changes its own bytes only.
static void test_patch(void)
{
	uint8_t f[WIRE_FRAME_HLEN];
	memcpy(f, FRAME, sizeof(f));
	wire_set_flags(f, 0x8001);
	wire_set_seq(f, 0xfffffffe);
	wire_set_len(f, WIRE_MAX_PAYLOAD); // 0x2300
	uint8_t want[WIRE_FRAME_HLEN];
	memcpy(want, FRAME, sizeof(want));
	want[16] = 0x80, want[17] = 0x01;
	want[18] = 0xff, want[19] = 0xff, want[20] = 0xff, want[21] = 0xfe;
	want[26] = 0x00, want[27] = 0x00, want[28] = 0x23, want[29] = 0x00;
	CU_ASSERT_EQUAL(memcmp(f, want, sizeof(f)), 0);
	wire_set_type(f, 0x0800);
	CU_ASSERT_EQUAL(f[12], 0x08);
	CU_ASSERT_EQUAL(f[13], 0x00);
	CU_ASSERT_EQUAL(memcmp(f, want, 12), 0);
	CU_ASSERT_EQUAL(memcmp(f + 14, want + 14, WIRE_FRAME_HLEN - 14), 0);
}

// Any values at any alignment come back as written.
static void test_roundtrip(void)
{
	uint64_t s = 0x5eed;
	static uint8_t buf[WIRE_FRAME_HLEN + 8];
	for (int i = 0; i < 2000; i++) {
		uint64_t r = prng_next(&s), q = prng_next(&s);
		struct wire_fields h = {
			.channel = (uint16_t)r, .flags = (uint16_t)(r >> 16), .seq = (uint32_t)(r >> 32),
			.batch = (uint16_t)q, .link = (uint16_t)(q >> 16), .len = (uint32_t)(q >> 32),
		}, back;
		uint8_t dst[6], src[6], d2[6], s2[6];
		for (int k = 0; k < 6; k++)
			dst[k] = (uint8_t)prng_next(&s), src[k] = (uint8_t)prng_next(&s);
		uint8_t *f = buf + i % 8;
		wire_put_eth(f, dst, src);
		wire_put_hdr(f, &h);
		wire_get_hdr(f, &back);
		CU_ASSERT_EQUAL_FATAL(wire_get_eth(f, d2, s2), WIRE_ETHERTYPE);
		CU_ASSERT_FATAL(memcmp(d2, dst, 6) == 0 && memcmp(s2, src, 6) == 0);
		CU_ASSERT_FATAL(same_fields(&back, &h));
		// Big-endian: the most significant byte first.
		CU_ASSERT_FATAL(f[WIRE_OFF(seq)] == (uint8_t)(h.seq >> 24) &&
				f[WIRE_OFF(len) + 3] == (uint8_t)h.len &&
				f[WIRE_OFF(channel)] == (uint8_t)(h.channel >> 8));
	}
}

int register_wire(void)
{
	static const struct test_case t[] = {
		TEST(test_layout),
		TEST(test_put),
		TEST(test_get),
		TEST(test_patch),
		TEST(test_roundtrip),
	};
	return ADD_SUITE("wire", NULL, NULL, t);
}
