// The file service's pure parts: the checksum (against a plain reference),
// the protocol codec and its checks (lib/fsproto.c), the on-disk layout and
// the recovery's choice of table copy, torn writes included (lib/fsdisk.c).
#include "host.h"
#include "fsproto.h"
#include "fsdisk.h"
#include "err.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Fletcher-64 the slow way: one modulo per word.
static uint64_t ref_sum(const uint8_t *p, size_t n)
{
	uint64_t a = (uint32_t)n, b = 0, m = 0xffffffffull;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t w = 0;
		memcpy(&w, p + i, n - i < 4 ? n - i : 4);
		a = (a + w) % m;
		b = (b + a) % m;
	}
	return b << 32 | a;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

static void test_sum_reference(void)
{
	static uint8_t buf[300000];
	fill(buf, sizeof(buf), 1);
	for (size_t n = 0; n < 70; n++)
		CU_ASSERT_EQUAL_FATAL(fs_sum(buf + 3, n), ref_sum(buf + 3, n));
	// past one reduction step (16384 words), with all-ones words (the largest sums)
	CU_ASSERT_EQUAL(fs_sum(buf, sizeof(buf)), ref_sum(buf, sizeof(buf)));
	memset(buf, 0xff, sizeof(buf));
	CU_ASSERT_EQUAL(fs_sum(buf, sizeof(buf)), ref_sum(buf, sizeof(buf)));
	CU_ASSERT_EQUAL(fs_sum(buf, 0), 0);
}

static void test_sum_detects(void)
{
	uint8_t a[1024], b[1024];
	fill(a, sizeof(a), 2);
	uint64_t s = fs_sum(a, sizeof(a));
	for (size_t bit = 0; bit < sizeof(a) * 8; bit++) { // every single-bit error
		memcpy(b, a, sizeof(a));
		b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CU_ASSERT_NOT_EQUAL_FATAL(fs_sum(b, sizeof(b)), s);
	}
	memcpy(b, a, sizeof(a)); // two words swapped
	memcpy(b, a + 4, 4), memcpy(b + 4, a, 4);
	if (memcmp(a, a + 4, 4))
		CU_ASSERT_NOT_EQUAL(fs_sum(b, sizeof(b)), s);
	uint8_t z[64] = { 0 }; // zeros of different lengths differ
	CU_ASSERT_NOT_EQUAL(fs_sum(z, 8), fs_sum(z, 12));
	CU_ASSERT_NOT_EQUAL(fs_sum(z, 0), fs_sum(z, 64));
}

static const struct fs_msg M = { .op = FS_OP_WRITE, .rid = 0x01020304, .handle = 0x0505, .status = -3,
				 .nchunks = 7, .offset = 0x1122334455667788ull, .length = 99, .inline_len = 16,
				 .data_sum = 42, .aux = 5 };

static void test_codec_roundtrip(void)
{
	uint8_t buf[FS_HDR_LEN + 16] = { 0 };
	struct fs_msg m;
	int why;
	CU_ASSERT_EQUAL(sizeof(struct fs_msg), FS_HDR_LEN);
	fs_msg_encode(buf, &M);
	// little-endian fields where the header says
	CU_ASSERT(buf[0] == 'F' && buf[1] == 'S' && buf[2] == 'P' && buf[3] == '1');
	CU_ASSERT(buf[4] == FS_OP_WRITE && buf[6] == FS_HDR_LEN && buf[8] == 0x04 && buf[24] == 0x88);
	CU_ASSERT_EQUAL(fs_msg_decode(buf, sizeof(buf), &m, &why), 0);
	CU_ASSERT_EQUAL(why, 0);
	CU_ASSERT(m.op == M.op && m.rid == M.rid && m.handle == M.handle && m.status == M.status &&
		  m.nchunks == M.nchunks && m.offset == M.offset && m.length == M.length &&
		  m.inline_len == M.inline_len && m.data_sum == M.data_sum && m.aux == M.aux);
}

static void test_codec_refuses(void)
{
	uint8_t buf[FS_HDR_LEN + 16] = { 0 }, b[sizeof(buf)];
	struct fs_msg m;
	int why;
	fs_msg_encode(buf, &M);
	for (size_t n = 0; n < FS_HDR_LEN; n++) { // every truncation of the header
		CU_ASSERT_EQUAL_FATAL(fs_msg_decode(buf, n, &m, &why), -E_INVAL);
		CU_ASSERT_EQUAL_FATAL(why, FS_WHY_TRUNCATED);
		if (n >= 12) // the reply can still name the request
			CU_ASSERT_EQUAL_FATAL(m.rid, M.rid);
	}
	CU_ASSERT_EQUAL(fs_msg_decode(buf, FS_HDR_LEN + 15, &m, &why), -E_INVAL); // inline data cut short
	CU_ASSERT_EQUAL(why, FS_WHY_TRUNCATED);
	for (size_t bit = 0; bit < FS_HDR_LEN * 8; bit++) { // any bit of the header flipped
		size_t i = bit / 8;
		memcpy(b, buf, sizeof(b));
		b[i] ^= (uint8_t)(1u << (bit % 8));
		CU_ASSERT_EQUAL_FATAL(fs_msg_decode(b, sizeof(b), &m, &why), -E_INVAL);
		CU_ASSERT_FATAL(why == (i < 4 || i == 6 || i == 7 ? FS_WHY_MAGIC : FS_WHY_HSUM));
	}
	struct fs_msg u = M;
	u.op = FS_OP_MAX;
	fs_msg_encode(b, &u);
	CU_ASSERT_EQUAL(fs_msg_decode(b, sizeof(b), &m, &why), -E_INVAL);
	CU_ASSERT_EQUAL(why, FS_WHY_OP);
	u.op = 0;
	fs_msg_encode(b, &u);
	CU_ASSERT_EQUAL(fs_msg_decode(b, sizeof(b), &m, &why), -E_INVAL);
	u.flags = FS_F_REPLY; // a reply echoes whatever op it answers
	fs_msg_encode(b, &u);
	CU_ASSERT_EQUAL(fs_msg_decode(b, sizeof(b), &m, &why), 0);
}

static void test_range(void)
{
	CU_ASSERT_EQUAL(fs_range_check(0, 0, 0), 0);
	CU_ASSERT_EQUAL(fs_range_check(10, 5, 10), 0);          // at the end: a read gets 0 bytes
	CU_ASSERT_EQUAL(fs_range_check(11, 0, 10), -E_RANGE);   // past it
	CU_ASSERT_EQUAL(fs_range_check(~0ull - 2, 5, 10), -E_2BIG); // wraps
	CU_ASSERT_EQUAL(fs_range_check(5, ~0ull - 2, 10), -E_2BIG);
	CU_ASSERT_EQUAL(fs_range_check(0, FS_MAX_FILE, 0), 0);
	CU_ASSERT_EQUAL(fs_range_check(1, FS_MAX_FILE, 1), -E_2BIG);
	CU_ASSERT_EQUAL(fs_range_check(FS_MAX_FILE + 1, 0, ~0ull), -E_2BIG);
}

static void test_chunks(void)
{
	static const uint64_t offs[] = { 0, 1, 4095, 4096, 262143, 262144, 700001 };
	static const uint64_t lens[] = { 1, 8192, 262144, 262145, 1000000, 4u << 20 };
	for (unsigned i = 0; i < 7; i++)
		for (unsigned j = 0; j < 6; j++) {
			uint64_t off = offs[i], len = lens[j], at = off, coff, clen;
			uint32_t n = fs_nchunks(off, len, 262144);
			for (uint32_t k = 0; k < n; k++) {
				fs_chunk(off, len, 262144, k, &coff, &clen);
				CU_ASSERT_FATAL(coff == at && clen >= 1 && clen <= 262144);
				CU_ASSERT_FATAL(k == 0 || coff % 262144 == 0); // no page in two chunks
				CU_ASSERT_FATAL(coff / 262144 == (coff + clen - 1) / 262144);
				at += clen;
			}
			CU_ASSERT_EQUAL_FATAL(at, off + len);
		}
	CU_ASSERT_EQUAL(fs_nchunks(5, 0, 4096), 0);
	uint32_t padded;
	CU_ASSERT_EQUAL(fs_chunk_pkts(262144, 32, &padded), 32);
	CU_ASSERT_EQUAL(padded, 32);
	CU_ASSERT_EQUAL(fs_chunk_pkts(8193, 32, &padded), 2);
	CU_ASSERT_EQUAL(padded, 32);
	CU_ASSERT_EQUAL(fs_chunk_pkts(33 * 8192, 32, &padded), 33);
	CU_ASSERT_EQUAL(padded, 64);
}

// A chunk's mark names exactly its request, chunk and length; no single
// changed byte passes, and FS_MARK_LEN bytes of data are not a mark.
static void test_mark(void)
{
	uint8_t m[FS_MARK_LEN], z[FS_MARK_LEN] = { 0 };
	fs_mark_put(m, 7, 3, 262144);
	CU_ASSERT_TRUE(fs_mark_is(m, 7, 3, 262144));
	CU_ASSERT_FALSE(fs_mark_is(m, 8, 3, 262144));
	CU_ASSERT_FALSE(fs_mark_is(m, 7, 2, 262144));
	CU_ASSERT_FALSE(fs_mark_is(m, 7, 3, 262143));
	for (int i = 0; i < FS_MARK_LEN; i++) {
		m[i] ^= 0x10;
		CU_ASSERT_FALSE(fs_mark_is(m, 7, 3, 262144));
		m[i] ^= 0x10;
	}
	CU_ASSERT_FALSE(fs_mark_is(z, 0, 0, 0));
	CU_ASSERT_TRUE(FS_MARK_LEN + FS_DATA_PKT <= FS_PKT_MAX); // a chunk's first packet fits
}

static void test_names_cfg(void)
{
	char out[FS_NAME_MAX];
	CU_ASSERT_EQUAL(fs_name_get("abc", 3, out), 0);
	CU_ASSERT_STRING_EQUAL(out, "abc");
	CU_ASSERT_EQUAL(fs_name_get("abc", 4, out), 0); // with its NUL
	CU_ASSERT_EQUAL(fs_name_get("", 0, out), -E_INVAL);
	CU_ASSERT_EQUAL(fs_name_get("\0", 1, out), -E_INVAL);
	CU_ASSERT_EQUAL(fs_name_get("a\0b", 3, out), -E_INVAL);
	char longn[FS_NAME_MAX + 1];
	memset(longn, 'x', sizeof(longn));
	CU_ASSERT_EQUAL(fs_name_get(longn, FS_NAME_MAX - 1, out), 0);
	CU_ASSERT_EQUAL(fs_name_get(longn, FS_NAME_MAX, out), -E_INVAL);
	struct fs_cfg c = FS_CFG_DEFAULT;
	CU_ASSERT_EQUAL(fs_cfg_check(&c), 0);
	c.chunk = 5000;
	CU_ASSERT_EQUAL(fs_cfg_check(&c), -E_INVAL);
	c = (struct fs_cfg)FS_CFG_DEFAULT, c.streams = FS_MAX_STREAMS + 1;
	CU_ASSERT_EQUAL(fs_cfg_check(&c), -E_INVAL);
	c = (struct fs_cfg)FS_CFG_DEFAULT, c.small_max = FS_INLINE_MAX + 1;
	CU_ASSERT_EQUAL(fs_cfg_check(&c), -E_INVAL);
	c = (struct fs_cfg)FS_CFG_DEFAULT, c.batch = 0;
	CU_ASSERT_EQUAL(fs_cfg_check(&c), -E_INVAL);
}

#define DISK (64ul << 20)

static struct fs_super sb;

static struct fs_entry entry(const char *name, uint32_t uid, uint64_t size, uint64_t off, uint64_t cap)
{
	struct fs_entry e = { .size = size, .ext_off = off, .ext_cap = cap, .uid = uid, .flags = FS_E_USED };
	strncpy(e.name, name, FS_NAME_MAX - 1);
	return e;
}

static void two_files(struct fs_table *t)
{
	fs_table_init(t);
	t->e[0] = entry("a", 1, 100, FS_DATA_OFF, 65536);
	t->e[5] = entry("b", 2, 0, 0, 0);
	t->next_uid = 3;
	fs_table_seal(t);
}

static void test_super(void)
{
	fs_super_init(&sb, DISK + 100);
	CU_ASSERT_EQUAL(sb.disk_bytes, DISK);
	CU_ASSERT_EQUAL(fs_super_check(&sb), 0);
	struct fs_super z = { 0 }, bad = sb;
	CU_ASSERT_EQUAL(fs_super_check(&z), -E_INVAL); // a blank disk: not formatted
	bad.data_off++;
	CU_ASSERT_EQUAL(fs_super_check(&bad), -E_IO);
	bad = sb, bad.sum ^= 1;
	CU_ASSERT_EQUAL(fs_super_check(&bad), -E_IO);
}

static void test_table_check(void)
{
	struct fs_table t, b;
	fs_super_init(&sb, DISK);
	two_files(&t);
	CU_ASSERT_EQUAL(t.nfiles, 2);
	CU_ASSERT_EQUAL(fs_table_check(&t, &sb), 0);
	CU_ASSERT_EQUAL(fs_table_find(&t, "b"), 5);
	CU_ASSERT_EQUAL(fs_table_find(&t, "c"), -E_NOENT);
	struct fs_entry bad[] = {
		entry("c", 2, 0, 0, 0),                          // uid taken
		entry("a", 9, 0, 0, 0),                          // name taken (uid past next_uid too)
		entry("c", 3, 0, 0, 0),                          // uid not below next_uid
		entry("c", 1, 10, FS_DATA_OFF + 65536, 4096),   // uid of a
		entry("c", 2, 8192, FS_DATA_OFF + 65536, 4096), // size over the extent
		entry("c", 2, 0, FS_DATA_OFF + 32768, 65536),   // overlaps a
		entry("c", 2, 0, FS_DATA_OFF - 4096, 4096),     // in the tables' area
		entry("c", 2, 0, DISK - 4096, 8192),            // past the disk
		entry("c", 2, 0, FS_DATA_OFF + 65536 + 1, 4096),// not page-aligned
		entry("", 2, 0, 0, 0),                           // no name
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = t;
		b.e[9] = bad[i];
		if (i != 2)
			b.next_uid = i == 1 ? 10 : 3;
		fs_table_seal(&b);
		CU_ASSERT_EQUAL_FATAL(fs_table_check(&b, &sb), -E_IO);
	}
	b = t;
	b.e[9] = entry("c", 3, 4096, FS_DATA_OFF + 65536, 4096);
	b.next_uid = 4;
	fs_table_seal(&b);
	CU_ASSERT_EQUAL(fs_table_check(&b, &sb), 0);
	b.nfiles = 2; // not what it holds
	b.sum = 0;
	struct fs_table c = b;
	c.sum = 0;
	b.sum = fs_sum(&c, sizeof(c));
	CU_ASSERT_EQUAL(fs_table_check(&b, &sb), -E_IO);
	b = t;
	b.e[0].size = 101; // changed after the seal
	CU_ASSERT_EQUAL(fs_table_check(&b, &sb), -E_IO);
}

// A commit is a write of the new copy's bytes; a crash may stop it after
// any prefix (a torn write). Recovery must then pick the copy before it.
static void test_recovery_torn(void)
{
	static uint8_t disk[2][FS_TABLE_BYTES];
	struct fs_table t, cur;
	fs_super_init(&sb, DISK);
	memset(disk, 0, sizeof(disk));
	CU_ASSERT_EQUAL(fs_table_pick((void *)disk[0], (void *)disk[1], &sb), -E_IO); // nothing valid
	two_files(&t);
	for (uint64_t gen = 1; gen <= 6; gen++) { // commits alternate between the copies
		t.gen = gen;
		t.e[0].size = 100 + gen;
		fs_table_seal(&t);
		memcpy(disk[fs_table_slot(gen)], &t, sizeof(t));
		long k = fs_table_pick((void *)disk[0], (void *)disk[1], &sb);
		CU_ASSERT_EQUAL_FATAL(k, fs_table_slot(gen));
	}
	cur = t;
	// generation 7 torn at every 64-byte boundary and at odd places
	t.gen = 7;
	t.e[0].size = 500;
	t.e[0].ext_cap = 65536 * 2;
	fs_table_seal(&t);
	for (size_t cut = 0; cut < sizeof(t); cut += cut < 256 ? 1 : 61) {
		uint8_t copy[FS_TABLE_BYTES];
		memcpy(copy, disk[1], sizeof(copy)); // slot 1 holds generation 5
		memcpy(copy, &t, cut);
		long k = fs_table_pick((void *)disk[0], (void *)copy, &sb);
		if (!memcmp(copy, &t, sizeof(t))) { // the bytes left unwritten were the same: it is whole
			CU_ASSERT_EQUAL_FATAL(k, 1);
			continue;
		}
		CU_ASSERT_EQUAL_FATAL(k, 0); // generation 6, whole
		CU_ASSERT_FATAL(!memcmp(disk[0], &cur, sizeof(cur)));
	}
	memcpy(disk[1], &t, sizeof(t)); // the whole write: generation 7 wins
	CU_ASSERT_EQUAL(fs_table_pick((void *)disk[0], (void *)disk[1], &sb), 1);
	disk[0][100] ^= 1; // and with the older copy damaged too
	CU_ASSERT_EQUAL(fs_table_pick((void *)disk[0], (void *)disk[1], &sb), 1);
	disk[1][9] ^= 1;
	CU_ASSERT_EQUAL(fs_table_pick((void *)disk[0], (void *)disk[1], &sb), -E_IO);
}

static void test_extent_alloc(void)
{
	struct fs_table mem, ondisk;
	fs_super_init(&sb, 1ul << 20);
	fs_table_init(&mem);
	fs_table_init(&ondisk);
	const struct fs_table *both[2] = { &mem, &ondisk };
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, 65536), (long)FS_DATA_OFF);
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, 100), -E_INVAL);
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, 0), -E_INVAL);
	// the file moved to a larger extent in memory; the committed table still names the old one
	ondisk.e[0] = entry("a", 1, 10, FS_DATA_OFF, 65536);
	mem.e[0] = entry("a", 1, 70000, FS_DATA_OFF + 65536, 131072);
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, 4096), (long)(FS_DATA_OFF + 65536 + 131072));
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 1, &sb, 4096), (long)FS_DATA_OFF); // memory alone: the old one looks free
	uint64_t left = (1ul << 20) - (FS_DATA_OFF + 65536 + 131072);
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, left), (long)(FS_DATA_OFF + 65536 + 131072));
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, left + 4096), -E_NOMEM);
}

// A full table: FS_MAX_FILES files, each with an extent, valid; the
// allocator finds the holes between them first-fit, from both tables.
static void test_many_files(void)
{
	static struct fs_table t, d;
	fs_super_init(&sb, 1ul << 30);
	fs_table_init(&t);
	char name[16];
	// file i at slot (i * 389) % FS_MAX_FILES, its extent the (i * 2)-th 64 KiB block: a hole after each
	for (int i = 0; i < FS_MAX_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		t.e[(i * 389) % FS_MAX_FILES] = entry(name, (uint32_t)i + 1, 10, FS_DATA_OFF + (uint64_t)i * 2 * 65536, 65536);
	}
	t.next_uid = FS_MAX_FILES + 1;
	fs_table_seal(&t);
	CU_ASSERT_EQUAL(t.nfiles, FS_MAX_FILES);
	CU_ASSERT_EQUAL(fs_table_check(&t, &sb), 0);
	CU_ASSERT_EQUAL(fs_table_find(&t, "f1000"), (1000 * 389) % FS_MAX_FILES);
	const struct fs_table *one[1] = { &t }, *both[2] = { &t, &d };
	CU_ASSERT_EQUAL(fs_extent_alloc(one, 1, &sb, 65536), (long)(FS_DATA_OFF + 65536));
	CU_ASSERT_EQUAL(fs_extent_alloc(one, 1, &sb, 131072), (long)(FS_DATA_OFF + FS_MAX_FILES * 2 * 65536ul - 65536));
	// the other table names the first hole (and overlaps t's extents): the next hole
	fs_table_init(&d);
	d.e[3] = entry("x", 1, 0, FS_DATA_OFF, 2 * 65536);
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 2, &sb, 65536), (long)(FS_DATA_OFF + 3 * 65536));
	CU_ASSERT_EQUAL(fs_extent_alloc(both, 3, &sb, 65536), -E_INVAL);
	// a disk that ends at the last extent: no room for 128 KiB, one hole of 64 KiB left
	fs_super_init(&sb, FS_DATA_OFF + FS_MAX_FILES * 2 * 65536ul - 65536);
	CU_ASSERT_EQUAL(fs_extent_alloc(one, 1, &sb, 131072), -E_NOMEM);
	CU_ASSERT_EQUAL(fs_extent_alloc(one, 1, &sb, 65536), (long)(FS_DATA_OFF + 65536));
	// one extent overlapping another, far apart in the table: refused
	fs_super_init(&sb, 1ul << 30);
	t.e[FS_MAX_FILES - 1].ext_off = t.e[0].ext_off + 4096;
	fs_table_seal(&t);
	CU_ASSERT_EQUAL(fs_table_check(&t, &sb), -E_IO);
}

int register_fs(void)
{
	static const struct test_case t[] = {
		TEST(test_sum_reference), TEST(test_sum_detects), TEST(test_codec_roundtrip),
		TEST(test_codec_refuses), TEST(test_range), TEST(test_chunks), TEST(test_mark), TEST(test_names_cfg),
		TEST(test_super), TEST(test_table_check), TEST(test_recovery_torn), TEST(test_extent_alloc),
		TEST(test_many_files),
	};
	return ADD_SUITE("fs", NULL, NULL, t);
}
