// drivers/net/e1000e/e1000e_desc.c: the 82574's descriptors as the NIC
// sees them, byte by byte (little-endian, offsets from the descriptor's
// start, DS 7.1.5.2 and 7.2.10.3), and the ring index arithmetic.
#include "host.h"
#include "../../drivers/net/e1000e/e1000e_desc.h"
#include <CUnit/CUnit.h>
#include <string.h>

static void test_layout(void)
{
	union e1000e_rx_desc r;
	CU_ASSERT_EQUAL(sizeof(union e1000e_rx_desc), 16);
	CU_ASSERT_EQUAL(sizeof(struct e1000e_tx_desc), 16);
	CU_ASSERT_EQUAL((char *)&r.wb.staterr - (char *)&r, 8);
	CU_ASSERT_EQUAL((char *)&r.wb.len - (char *)&r, 12);
	CU_ASSERT_EQUAL((char *)&r.rd.zero - (char *)&r, 8);
}

// Bytes 8-10: the length (20 bits); byte 10's high nibble DTYP 0001b;
// byte 11 DCMD: EOP 0x01, IFCS 0x02, RS 0x08, DEXT 0x20; bytes 12-15 zero.
static void test_tx_build(void)
{
	struct e1000e_tx_desc d;
	uint8_t b[16];
	memset(&d, 0xff, sizeof(d));
	e1000e_tx_build(&d, 0x123456789abcull, 4096, false);
	memcpy(b, &d, 16);
	static const uint8_t mid[16] = { 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12, 0, 0,
					 0x00, 0x10, 0x10, 0x22, 0, 0, 0, 0 };
	CU_ASSERT_EQUAL(memcmp(b, mid, 16), 0);
	e1000e_tx_build(&d, 0x2000, 826, true);
	memcpy(b, &d, 16);
	static const uint8_t last[16] = { 0x00, 0x20, 0, 0, 0, 0, 0, 0,
					  0x3a, 0x03, 0x10, 0x2b, 0, 0, 0, 0 };
	CU_ASSERT_EQUAL(memcmp(b, last, 16), 0);
	e1000e_tx_build(&d, 0x2000, E1000E_TXD_MAX, true);
	CU_ASSERT_EQUAL(d.cmd_len & E1000E_TXD_LEN_MAX, 8192);
}

static void test_tx_descs(void)
{
	CU_ASSERT_EQUAL(e1000e_tx_descs(0), 0);
	CU_ASSERT_EQUAL(e1000e_tx_descs(1), 1);
	CU_ASSERT_EQUAL(e1000e_tx_descs(8192), 1);
	CU_ASSERT_EQUAL(e1000e_tx_descs(8193), 2);
	CU_ASSERT_EQUAL(e1000e_tx_descs(9018), 2);
	CU_ASSERT_EQUAL(e1000e_tx_descs(16385), 3);
}

// A write-back as the NIC leaves it: status and errors in bytes 8-11,
// the length in 12-13.
static union e1000e_rx_desc wb(uint32_t staterr, uint16_t len)
{
	union e1000e_rx_desc r;
	uint8_t b[16] = { 0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4, (uint8_t)staterr, (uint8_t)(staterr >> 8),
			  (uint8_t)(staterr >> 16), (uint8_t)(staterr >> 24), (uint8_t)len,
			  (uint8_t)(len >> 8), 0, 0 };
	memcpy(&r, b, 16);
	return r;
}

static void test_rx_parse(void)
{
	union e1000e_rx_desc r = wb(0, 60);
	struct e1000e_rx_wb w = e1000e_rx_parse(&r);
	CU_ASSERT_FALSE(w.done);
	r = wb(E1000E_RXD_DD, 4096); // a full buffer of a longer frame
	w = e1000e_rx_parse(&r);
	CU_ASSERT(w.done && !w.eop && !w.error && w.len == 4096);
	r = wb(E1000E_RXD_DD | E1000E_RXD_EOP, 826);
	w = e1000e_rx_parse(&r);
	CU_ASSERT(w.done && w.eop && !w.error && w.len == 826);
	for (int bit = 24; bit < 32; bit++) { // frame errors CE, SE, SEQ, CXE, RXE; not TCPE, IPE
		r = wb(E1000E_RXD_DD | E1000E_RXD_EOP | 1u << bit, 60);
		bool frame_error = bit == 24 || bit == 25 || bit == 26 || bit == 28 || bit == 31;
		CU_ASSERT_EQUAL(e1000e_rx_parse(&r).error, frame_error);
	}
	r = wb(E1000E_RXD_DD | 1u << 24, 4096); // errors count on the EOP buffer only
	CU_ASSERT_FALSE(e1000e_rx_parse(&r).error);
}

// Posting writes the address and clears the upper quadword: a slot's old
// write-back (DD set) must not look done again.
static void test_rx_post(void)
{
	union e1000e_rx_desc r = wb(E1000E_RXD_DD | E1000E_RXD_EOP, 60);
	e1000e_rx_post(&r, 0x5000);
	CU_ASSERT_EQUAL(r.rd.addr, 0x5000);
	CU_ASSERT_EQUAL(r.rd.zero, 0);
	CU_ASSERT_FALSE(e1000e_rx_parse(&r).done);
}

static void test_ring(void)
{
	CU_ASSERT_EQUAL(e1000e_ring_add(1022, 1, 1024), 1023);
	CU_ASSERT_EQUAL(e1000e_ring_add(1023, 1, 1024), 0);
	CU_ASSERT_EQUAL(e1000e_ring_add(1020, 7, 1024), 3);
	CU_ASSERT_EQUAL(e1000e_ring_dist(1020, 3, 1024), 7);
	CU_ASSERT_EQUAL(e1000e_ring_dist(5, 5, 1024), 0);
	CU_ASSERT_EQUAL(e1000e_ring_dist(3, 1020, 1024), 1017);
}

int register_e1000e(void)
{
	static const struct test_case t[] = {
		TEST(test_layout), TEST(test_tx_build), TEST(test_tx_descs),
		TEST(test_rx_parse), TEST(test_rx_post), TEST(test_ring),
	};
	return ADD_SUITE("e1000e", NULL, NULL, t);
}
