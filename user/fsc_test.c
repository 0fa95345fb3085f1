// The file service's two-node test, the client side (make test-fs runs it
// against user/fsd.c; tests/qemu/fs/run.sh).
// phase=1 (a freshly formatted server): every operation; files of 0 B to
// max_mb= MiB (default 32) written and read back, every byte compared and
// every chunk's checksum checked by the library; partial and unaligned
// reads and overwrites; truncate both ways; coherency (stat after a write);
// every malformed request answered with its error, the server's counter for
// its cause up by one and nothing changed; large overwrites refused after
// the go-ahead (bad trailers, a missing or late chunk) leave the file as it
// was; a read given up after one chunk spoils no later transfer; then "FSCUT" and cut_mb= MiB
// writes and reads for cut_ms= while the runner cuts link 1 (visibly, then
// silently) and restores it, every byte compared each time; the kept
// files made durable (fsync); NMANY (300) files, more than the server
// keeps in memory, written and read back; BYE; then a request to the now
// dead server must fail with -E_TIMEOUT or -E_LINK within its timeout.
// phase=2 (the server restarted on the same disk): the kept files and the
// 300 listed with their sizes and read back byte for byte; empty files up
// to the table's limit (FS_MAX_FILES), one more refused with -E_NOMEM and
// counted in table_full, the empty ones and the 300 unlinked; BYE.
// Both: nics=, peer= (the server's MACs), chan=, the settings (fs.h),
// timeout_ms=. Exit 0 when every check passed and the frames came back.
#include <utest.h>
#include <netutil.h>
#include "fs.h"

static struct fs_client fc;
static uint8_t *wbuf, *rbuf;
static uint64_t max_bytes;

// Keeps: files phase 2 expects: name, size, seed.
static const struct keep {
	const char *name;
	uint64_t size, seed;
} keeps[] = { { "k-empty", 0, 1 }, { "k-small", 3000, 2 }, { "k-mid", 300000, 3 }, { "k-cut", 0, 4 } };
#define NKEEP (sizeof(keeps) / sizeof(keeps[0]))

static uint64_t hz_ms;
static uint64_t ms(void) { return rdtsc() / hz_ms; }

// Writes [0, size) of a new file from seed, then reads it back whole.
static int put_get(const char *name, uint64_t size, uint64_t seed)
{
	long h = fs_create(&fc, name, 0);
	if (h < 0)
		return printf("  create %s: %ld (%s)\n", name, h, err_name(h)), 1;
	fs_pattern(wbuf, 0, size, seed);
	uint64_t t0 = ms();
	long w = fs_write(&fc, h, 0, wbuf, size);
	uint64_t t1 = ms();
	memset(rbuf, 0xa5, size + 16);
	long r = fs_read(&fc, h, 0, rbuf, size + 16); // asks past the end: the file's bytes come
	uint64_t t2 = ms();
	struct fs_stat st = { 0 };
	long s = fs_stat(&fc, h, &st);
	long diff = r == (long)size ? fs_pattern_diff(rbuf, 0, size, seed) : -2;
	printf("  %s %lu bytes: write %ld (%lu ms) read %ld (%lu ms) stat %ld size %lu diff %ld\n", name, size, w,
	       t1 - t0, r, t2 - t1, s, st.size, diff);
	return w != (long)size || r != (long)size || s || st.size != size || diff != -1 || fs_close(&fc, h);
}

static void sizes_test(void)
{
	static const uint64_t sizes[] = { 0, 1, 100, 4095, 4096, 8192, FS_INLINE_MAX, FS_INLINE_MAX + 1, 65543,
					  262144, 262145, 1048699, 4u << 20 };
	int bad = 0;
	char name[16] = "size-00";
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		name[5] = (char)('0' + i / 10), name[6] = (char)('0' + i % 10);
		bad += put_get(name, sizes[i], 100 + i);
	}
	CHECK_EQ("sizes 0 B .. 4 MiB written and read back", bad, 0);
	CHECK_EQ("the largest file written and read back", put_get("big", max_bytes, 99), 0);
}

// Reads and writes inside a file, at unaligned places, across chunks.
static void partial_test(void)
{
	uint64_t size = 3u << 20;
	long h = fs_create(&fc, "part", 0);
	fs_pattern(wbuf, 0, size, 7);
	CHECK_EQ("part written", fs_write(&fc, h, 0, wbuf, size), (long)size);
	static const uint64_t at[][2] = { { 12345, 1000 }, { 262140, 9000 }, { 100000, 2000000 }, { 3145000, 728 } };
	int bad = 0;
	for (unsigned i = 0; i < 4; i++) {
		long r = fs_read(&fc, h, at[i][0], rbuf, at[i][1]);
		bad += r != (long)at[i][1] || fs_pattern_diff(rbuf, at[i][0], at[i][1], 7) != -1;
	}
	CHECK_EQ("unaligned reads inside the file", bad, 0);
	// overwrite [500000, 500000+1.5 MiB) with another seed's bytes, from plain memory (copied)
	static uint8_t plain[64 * 1024];
	fs_pattern(plain, 500000, sizeof(plain), 8);
	CHECK_EQ("overwrite from plain memory", fs_write(&fc, h, 500000, plain, sizeof(plain)), (long)sizeof(plain));
	// from an fs buffer at another place in its page than the file's (copied)
	fs_pattern(wbuf, 700001, 1000000, 8);
	CHECK_EQ("overwrite from an fs buffer, copied", fs_write(&fc, h, 700001, wbuf, 1000000), 1000000);
	// and at the same place (its pages lent)
	uint64_t lent = fc.net.pages_loaned;
	fs_pattern(wbuf + 1800003 % 4096, 1800003, 1000000, 9);
	CHECK_EQ("overwrite from an fs buffer, lent", fs_write(&fc, h, 1800003, wbuf + 1800003 % 4096, 1000000),
		 1000000);
	CHECK("its pages were lent", fc.net.pages_loaned - lent >= 1000000 / 4096);
	CHECK_EQ("read back whole", fs_read(&fc, h, 0, rbuf, size), (long)size);
	fs_pattern(wbuf, 0, size, 7);
	fs_pattern(wbuf + 500000, 500000, sizeof(plain), 8);
	fs_pattern(wbuf + 700001, 700001, 1000000, 8);
	fs_pattern(wbuf + 1800003, 1800003, 1000000, 9);
	CHECK("the overwrites and nothing else changed", !memcmp(rbuf, wbuf, size));
	struct fs_stat a, b;
	fs_stat(&fc, h, &a);
	CHECK_EQ("append at the end", fs_write(&fc, h, size, wbuf, 10), 10);
	fs_stat(&fc, h, &b);
	CHECK("stat after a write shows its size and a later time",
	      b.size == size + 10 && b.mtime_us > a.mtime_us && b.version > a.version);
	CHECK_EQ("truncate shorter", fs_truncate(&fc, h, 5000), 0);
	CHECK_EQ("truncate longer", fs_truncate(&fc, h, 20000), 0);
	memset(rbuf, 0x77, 20000);
	CHECK_EQ("read after truncates", fs_read(&fc, h, 0, rbuf, 30000), 20000);
	int zeros = 1;
	for (int i = 5000; i < 20000; i++)
		zeros &= rbuf[i] == 0;
	CHECK("bytes kept, then zeros", !memcmp(rbuf, wbuf, 5000) && zeros);
	CHECK_EQ("fsync", fs_fsync(&fc, h), 0);
	CHECK_EQ("close", fs_close(&fc, h), 0);
	CHECK_EQ("unlink", fs_unlink(&fc, "part"), 0);
	CHECK_EQ("the stale handle refused", fs_stat(&fc, h, &a), -E_BADID);
	CHECK_EQ("open after unlink", fs_open(&fc, "part", NULL), -E_NOENT);
	CHECK_EQ("unlink again", fs_unlink(&fc, "part"), -E_NOENT);
	CHECK_EQ("exclusive create of an existing file", fs_create(&fc, "big", 1), -E_EXIST);
}

// What the server holds, summed: names and sizes of every file, and the
// checksum of k-mid's bytes.
static uint64_t state_sum(void)
{
	static struct fs_dirent d[FS_MAX_FILES];
	long n = fs_list(&fc, d, FS_MAX_FILES);
	uint64_t s = n < 0 ? 0 : fs_sum(d, (uint64_t)n * sizeof(d[0]));
	long h = fs_open(&fc, "k-mid", NULL);
	long r = h < 0 ? h : fs_read(&fc, h, 0, rbuf, 300000);
	return s ^ (r < 0 ? 0 : fs_sum(rbuf, (uint64_t)r)) ^ (uint64_t)n << 56;
}

static uint64_t counter(const struct fs_srvstats *s, int k) { return ((const uint64_t *)s)[k]; }
#define CNT(field) ((int)(offsetof(struct fs_srvstats, field) / 8))

// Sends one malformed request; wants the error and exactly the counter up.
static void bad_one(const char *what, const void *pkt, uint64_t len, uint32_t rid, long want, int cnt)
{
	struct fs_srvstats s0, s1;
	struct fs_msg r;
	fs_srvstats(&fc, &s0);
	uint64_t before = state_sum();
	long e = fsn_ctl_send_raw(&fc.net, pkt, len);
	if (e == 0)
		e = fs_wait_reply(&fc, rid, &r, NULL, 0);
	fs_srvstats(&fc, &s1);
	int others = 0;
	for (int k = CNT(bad_truncated); k <= CNT(no_space); k++)
		others += k != cnt && counter(&s1, k) != counter(&s0, k);
	int ok = e == want && counter(&s1, cnt) == counter(&s0, cnt) + 1 && !others && state_sum() == before;
	if (!ok)
		printf("  %s: got %ld (%s), want %ld; counter %lu -> %lu, others changed %d\n", what, e, err_name(e),
		       want, counter(&s0, cnt), counter(&s1, cnt), others);
	CHECK(what, ok);
}

static uint8_t pkt[FS_PKT_MAX];

static uint64_t req(struct fs_msg *m, const void *data)
{
	m->rid = ++fc.rid;
	if (m->inline_len)
		m->data_sum = fs_sum(data, m->inline_len);
	fs_msg_encode(pkt, m);
	if (m->inline_len)
		memcpy(pkt + FS_HDR_LEN, data, m->inline_len);
	return FS_HDR_LEN + m->inline_len;
}

static void malformed_test(void)
{
	long h = fs_open(&fc, "k-mid", NULL);
	struct fs_msg m;
	uint64_t n;
	m = (struct fs_msg){ .op = FS_OP_READ, .handle = 0x4242, .length = 10 };
	n = req(&m, NULL);
	bad_one("bad handle", pkt, n, m.rid, -E_BADID, CNT(bad_handle));
	m = (struct fs_msg){ .op = FS_OP_READ, .handle = (uint32_t)h, .offset = 300001, .length = 10 };
	n = req(&m, NULL);
	bad_one("read offset past the end", pkt, n, m.rid, -E_RANGE, CNT(bad_range));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 300001, .length = 1, .inline_len = 1 };
	n = req(&m, "x");
	bad_one("write offset past the end (a hole)", pkt, n, m.rid, -E_RANGE, CNT(bad_range));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = ~0ull - 5, .length = 10, .nchunks = 1 };
	n = req(&m, NULL);
	bad_one("write whose end wraps", pkt, n, m.rid, -E_2BIG, CNT(bad_overflow));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 100, .length = FS_MAX_FILE, .nchunks = 1 };
	n = req(&m, NULL);
	bad_one("write past the largest file", pkt, n, m.rid, -E_2BIG, CNT(bad_overflow));
	m = (struct fs_msg){ .op = FS_OP_TRUNCATE, .handle = (uint32_t)h, .length = ~0ull };
	n = req(&m, NULL);
	bad_one("truncate to an overflowing size", pkt, n, m.rid, -E_2BIG, CNT(bad_overflow));
	m = (struct fs_msg){ .op = 200, .handle = (uint32_t)h };
	n = req(&m, NULL);
	bad_one("unknown operation", pkt, n, m.rid, -E_NOSYS, CNT(bad_op));
	m = (struct fs_msg){ .op = FS_OP_STAT, .handle = (uint32_t)h };
	n = req(&m, NULL);
	bad_one("truncated header", pkt, 40, m.rid, -E_INVAL, CNT(bad_truncated));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 0, .length = 100, .inline_len = 100 };
	n = req(&m, wbuf);
	bad_one("truncated inline data", pkt, n - 30, m.rid, -E_INVAL, CNT(bad_truncated));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 0, .length = 100, .inline_len = 60 };
	n = req(&m, wbuf);
	bad_one("inline data shorter than the write", pkt, n, m.rid, -E_INVAL, CNT(bad_chunks));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 0, .length = 1u << 20, .nchunks = 9 };
	n = req(&m, NULL);
	bad_one("large write with a wrong chunk count", pkt, n, m.rid, -E_INVAL, CNT(bad_chunks));
	m = (struct fs_msg){ .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = 0, .length = 100, .inline_len = 100 };
	n = req(&m, wbuf);
	pkt[FS_HDR_LEN + 7] ^= 1;
	bad_one("inline data with a wrong checksum", pkt, n, m.rid, -E_IO, CNT(bad_sum));
	m = (struct fs_msg){ .op = FS_OP_STAT, .handle = (uint32_t)h };
	n = req(&m, NULL);
	pkt[0] ^= 0xff;
	bad_one("bad magic", pkt, n, m.rid, -E_INVAL, CNT(bad_magic));
	m = (struct fs_msg){ .op = FS_OP_STAT, .handle = (uint32_t)h };
	n = req(&m, NULL);
	pkt[30] ^= 4; // the offset field, under the header checksum
	bad_one("header checksum mismatch", pkt, n, m.rid, -E_INVAL, CNT(bad_hsum));
	m = (struct fs_msg){ .op = FS_OP_CREATE, .inline_len = 45 };
	n = req(&m, "a-name-far-too-long-for-the-table-of-files-ok");
	bad_one("name too long", pkt, n, m.rid, -E_INVAL, CNT(bad_name));
	m = (struct fs_msg){ .op = FS_OP_HELLO, .offset = 4096, .length = 100, .aux = 1 | 1 << 8 | 1 << 16 };
	n = req(&m, NULL);
	bad_one("other settings", pkt, n, m.rid, -E_INVAL, CNT(bad_settings));
	m = (struct fs_msg){ .op = FS_OP_STAT, .handle = (uint32_t)h, .flags = FS_F_REPLY };
	n = req(&m, NULL);
	bad_one("a reply sent as a request", pkt, n, m.rid, -E_NOSYS, CNT(bad_op));
	fs_close(&fc, h);
}

// A large overwrite of k-mid [1000, 281000) (two chunks) that the server
// must refuse after its go-ahead: how = 0 a trailer with a wrong checksum,
// 1 with another request's id, 2 with one checksum short, 3 no second
// chunk and no trailer (the server times out waiting), 4 as 3, the second
// chunk sent after the server's refusal (stale on its stream). Wants the error,
// exactly the counter up, and k-mid's bytes unchanged.
static void bad_overwrite(const char *what, int how, long want, int cnt)
{
	static uint64_t sums[4];
	const struct fs_cfg *cfg = &fc.net.cfg;
	uint64_t off = 1000, len = 280000, before = state_sum();
	struct fs_srvstats s0, s1;
	fs_srvstats(&fc, &s0);
	long h = fs_open(&fc, "k-mid", NULL);
	uint32_t nc = fs_nchunks(off, len, cfg->chunk);
	struct fs_msg q = { .op = FS_OP_WRITE, .handle = (uint32_t)h, .offset = off, .length = len, .nchunks = nc };
	struct fs_msg r;
	long e = h < 0 ? h : fs_call(&fc, &q, NULL, &r, NULL, 0);
	int go = e == 0 && (r.flags & FS_F_GO);
	fs_pattern(wbuf, off, len, 77);
	for (uint32_t k = 0; go && e == 0 && k < (how >= 3 ? 1 : nc); k++) {
		uint64_t coff, clen;
		fs_chunk(off, len, cfg->chunk, k, &coff, &clen);
		e = fsn_send_chunk(&fc.net, (int)(k % cfg->streams), q.rid, k, 0, 0, wbuf + (coff - off), clen, &sums[k]);
	}
	if (go && e == 0 && how < 3) {
		sums[1] ^= how == 0;
		struct fs_msg t = { .op = FS_OP_TRAILER, .rid = q.rid + (how == 1 ? 1000 : 0), .nchunks = nc,
				    .inline_len = (nc - (how == 2)) * 8 };
		t.data_sum = fs_sum(sums, t.inline_len);
		e = fsn_ctl_send(&fc.net, &t, sums);
	}
	// the final reply (the server may wait out its own, longer timeout first)
	for (int k = 0; go && e == 0 && k < 4; k++) {
		memset(&r, 0, sizeof(r));
		long w = fs_wait_reply(&fc, q.rid, &r, NULL, 0);
		if (r.rid == q.rid && (r.flags & FS_F_REPLY)) {
			e = w;
			break;
		}
	}
	if (how == 4 && e == want) { // after the server gave up on it: stale on its stream
		uint64_t coff, clen;
		fs_chunk(off, len, cfg->chunk, 1, &coff, &clen);
		fsn_send_chunk(&fc.net, (int)(1 % cfg->streams), q.rid, 1, 0, 0, wbuf + (coff - off), clen, &sums[1]);
	}
	fsn_return_loans(&fc.net);
	fs_close(&fc, h);
	fs_srvstats(&fc, &s1);
	int others = 0;
	for (int k = CNT(bad_truncated); k <= CNT(no_space); k++)
		others += k != cnt && counter(&s1, k) != counter(&s0, k);
	uint64_t after = state_sum();
	int ok = go && e == want && counter(&s1, cnt) == counter(&s0, cnt) + 1 && !others && after == before;
	if (!ok)
		printf("  %s: go-ahead %d, got %ld (%s), want %ld; counter %lu -> %lu, others changed %d, file %s\n",
		       what, go, e, err_name(e), want, counter(&s0, cnt), counter(&s1, cnt), others,
		       after == before ? "unchanged" : "CHANGED");
	CHECK(what, ok);
}

// Refused large overwrites change nothing, in memory or (phase 2) on disk:
// then k-mid's first and last bytes rewritten with what they hold, so that
// its fsync writes every page of it.
static void refused_overwrites(void)
{
	bad_overwrite("refused overwrite: trailer checksum wrong", 0, -E_IO, CNT(bad_sum));
	bad_overwrite("refused overwrite: trailer of another request", 1, -E_INVAL, CNT(bad_chunks));
	bad_overwrite("refused overwrite: a checksum short", 2, -E_INVAL, CNT(bad_chunks));
	bad_overwrite("refused overwrite: the second chunk never comes", 3, -E_TIMEOUT, CNT(bad_chunks));
	bad_overwrite("refused overwrite: the second chunk comes too late", 4, -E_TIMEOUT, CNT(bad_chunks));
	struct fs_srvstats s0, s1;
	fs_srvstats(&fc, &s0);
	CHECK("a large write after a late chunk, read back", put_get("k-late", 600000, 9) == 0);
	fs_srvstats(&fc, &s1);
	CHECK("the late chunk dropped by the server", s1.stale_packets > s0.stale_packets);
	CHECK_EQ("k-late unlinked", fs_unlink(&fc, "k-late"), 0);
	long h = fs_open(&fc, "k-mid", NULL);
	fs_pattern(wbuf, 0, 10, 3);
	fs_pattern(wbuf + 10, 299990, 10, 3);
	long a = fs_write(&fc, h, 0, wbuf, 10), b = fs_write(&fc, h, 299990, wbuf + 10, 10);
	CHECK("k-mid rewritten at both ends and made durable", a == 10 && b == 10 && fs_fsync(&fc, h) == 0);
	long r = fs_read(&fc, h, 0, rbuf, 300000);
	CHECK("k-mid intact", r == 300000 && fs_pattern_diff(rbuf, 0, 300000, 3) == -1);
	fs_close(&fc, h);
}

// A large read the client gives up after its first chunk (as on a timeout
// or a dead link): the rest of it still comes on the streams, and must not
// be taken for the next transfer's data (it was: every later large read
// failed its checksums, as fs-phase1 did twice under heavy load).
static void abandoned_read(void)
{
	const struct fs_cfg *cfg = &fc.net.cfg;
	uint64_t len = 3 * (uint64_t)cfg->chunk, sum;
	int put = put_get("k-abandon", len, 12);
	long h = fs_open(&fc, "k-abandon", NULL);
	struct fs_msg q = { .op = FS_OP_READ, .handle = (uint32_t)h, .offset = 0, .length = len }, r;
	long e = h < 0 ? h : fs_call(&fc, &q, NULL, &r, rbuf, len);
	if (e == 0)
		e = fsn_recv_chunk(&fc.net, 0, q.rid, 0, rbuf, cfg->chunk, &sum);
	// given up: chunks 1 and 2 and the trailer are on their way
	uint64_t stale = fc.net.stale_rx;
	int after = put_get("k-after", len, 13);
	printf("  data packets dropped as stale: %lu\n", fc.net.stale_rx - stale);
	CHECK("a read given up after one chunk: the next transfers intact", !put && e == 0 && !after);
	CHECK("its rest dropped before the next read's first mark", fc.net.stale_rx > stale);
	fs_close(&fc, h);
	CHECK("k-abandon and k-after unlinked", !fs_unlink(&fc, "k-abandon") && !fs_unlink(&fc, "k-after"));
}

// Many files, more than the server keeps in memory: NMANY of them, every
// 9th one large (chunks), written, then each read back whole (so most come
// from disk again), fsync'ed; phase 2 reads them back after the restart.
#define NMANY 300
static uint64_t many_size(int i) { return (uint64_t)(i * 7919) % 20000 + (i % 9 == 0 ? 280000 : 0); }

static void many_name(char *name, int i)
{
	strlcpy(name, "m-000", 8);
	name[2] = (char)('0' + i / 100), name[3] = (char)('0' + i / 10 % 10), name[4] = (char)('0' + i % 10);
}

// Each of the NMANY files read back (opened by name) against its pattern;
// with unlink, removed after. Returns how many were wrong.
static int many_check(int unlink)
{
	int bad = 0;
	char name[8];
	for (int i = 0; i < NMANY; i++) {
		uint64_t size = many_size(i), got = ~0ull;
		many_name(name, i);
		long h = fs_open(&fc, name, &got);
		long r = h < 0 ? h : fs_read(&fc, h, 0, rbuf, size + 1);
		int ok = got == size && r == (long)size && fs_pattern_diff(rbuf, 0, size, 5000 + (uint64_t)i) == -1;
		if (!ok && bad < 5)
			printf("  %s: open %ld size %lu read %ld: WRONG\n", name, h, got, r);
		bad += !ok;
		if (h >= 0)
			fs_close(&fc, h);
		if (unlink)
			bad += fs_unlink(&fc, name) != 0;
	}
	return bad;
}

static void many_test(void)
{
	int bad = 0;
	char name[8];
	uint64_t t0 = ms();
	for (int i = 0; i < NMANY && bad < 5; i++) {
		many_name(name, i);
		long h = fs_create(&fc, name, 1);
		uint64_t size = many_size(i);
		fs_pattern(wbuf, 0, size, 5000 + (uint64_t)i);
		long w = h < 0 ? h : fs_write(&fc, h, 0, wbuf, size);
		if (h < 0 || w != (long)size)
			printf("  %s: create %ld (%s) write %ld (%s)\n", name, h, err_name(h), w, err_name(w));
		bad += h < 0 || w != (long)size;
		if (h >= 0)
			fs_close(&fc, h);
	}
	uint64_t t1 = ms();
	CHECK_EQ("many files created and written", bad, 0);
	CHECK_EQ("many files read back, every byte", many_check(0), 0);
	CHECK_EQ("many files made durable", fs_fsync(&fc, 0), 0);
	struct fs_srvstats st;
	fs_srvstats(&fc, &st);
	printf("  %d files: written in %lu ms, read back in %lu ms; server: %lu files, %lu loaded, %lu evictions\n",
	       NMANY, t1 - t0, ms() - t1, st.nfiles, st.files_loaded, st.evictions);
	CHECK("the server held them by loading and evicting", st.evictions > 0 && st.files_loaded <= FS_LOADED_MAX);
}

// The table's limit: empty files up to FS_MAX_FILES (`have` there already),
// then a create refused with -E_NOMEM and counted in table_full; then the
// empty ones unlinked.
static void table_full_test(long have)
{
	char name[8] = "e-0000";
	int bad = 0;
	for (long i = have; i < FS_MAX_FILES; i++) {
		name[2] = (char)('0' + i / 1000), name[3] = (char)('0' + i / 100 % 10);
		name[4] = (char)('0' + i / 10 % 10), name[5] = (char)('0' + i % 10);
		bad += fs_create(&fc, name, 1) < 0;
	}
	CHECK_EQ("files up to the table's limit", bad, 0);
	struct fs_srvstats s0, s1;
	fs_srvstats(&fc, &s0);
	CHECK_EQ("one more: refused, the disk or table is full", fs_create(&fc, "one-too-many", 1), -E_NOMEM);
	fs_srvstats(&fc, &s1);
	CHECK("counted as the table's limit, not the disk's",
	      s1.table_full == s0.table_full + 1 && s1.no_space == s0.no_space && s1.nfiles == FS_MAX_FILES);
	for (long i = have; i < FS_MAX_FILES; i++) {
		name[2] = (char)('0' + i / 1000), name[3] = (char)('0' + i / 100 % 10);
		name[4] = (char)('0' + i / 10 % 10), name[5] = (char)('0' + i % 10);
		bad += fs_unlink(&fc, name) != 0;
	}
	CHECK_EQ("and unlinked", bad, 0);
}

static void keep_files(void)
{
	int bad = 0;
	for (unsigned i = 0; i < NKEEP; i++)
		if (keeps[i].size)
			bad += put_get(keeps[i].name, keeps[i].size, keeps[i].seed);
		else
			bad += fs_create(&fc, keeps[i].name, 0) < 0;
	CHECK_EQ("files kept for the restart", bad, 0);
}

// Writes and reads back a file again and again, each time with other
// bytes, for cut_ms (6.5 s) from FSCUT, while the runner cuts link 1
// visibly (0.5 s after FSCUT), restores it (2.5 s), cuts it silently
// (3.5 s) and restores it (5.5 s): every byte each time, link 1 dead and
// alive again twice. Then the file's kept contents (seed 4).
static void cut_test(uint64_t size, uint64_t cut_ms)
{
	long h = fs_open(&fc, "k-cut", NULL);
	struct io_stats s0, s;
	ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s0, 0, 0);
	s = s0;
	printf("FSCUT\n");
	int bad = 0, it, down = 0, during = 0;
	uint64_t t0 = ms();
	for (it = 0; it < 200 && ms() - t0 < cut_ms; it++) {
		fs_pattern(wbuf, 0, size, 1000 + (uint64_t)it);
		long w = fs_write(&fc, h, 0, wbuf, size);
		ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s, 0, 0);
		during += s.links_up != 3;
		long r = fs_read(&fc, h, 0, rbuf, size);
		int ok = w == (long)size && r == (long)size && fs_pattern_diff(rbuf, 0, size, 1000 + (uint64_t)it) == -1;
		ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s, 0, 0);
		down |= s.links_up != 3;
		during += s.links_up != 3;
		if (!ok)
			printf("  cut: round %d: write %ld read %ld: WRONG\n", it, w, r);
		bad += !ok;
	}
	printf("  cut: %d rounds of %lu bytes in %lu ms, %d ended with link 1 down; stream 0: retransmits %lu, "
	       "link deaths %lu, recoveries %lu\n", it, size, ms() - t0, during, s.tx_retransmits - s0.tx_retransmits,
	       s.link_deaths - s0.link_deaths, s.link_recoveries - s0.link_recoveries);
	CHECK_EQ("writes and reads through two link cuts and their restores, every byte", bad, 0);
	CHECK("link 1 dead and alive again twice, up at the end",
	      s.link_deaths - s0.link_deaths >= 2 && s.link_recoveries - s0.link_recoveries >= 2 && s.links_up == 3);
	fs_pattern(wbuf, 0, size, 4);
	CHECK_EQ("the kept contents", fs_write(&fc, h, 0, wbuf, size), (long)size);
	fs_close(&fc, h);
}

static void phase1(uint64_t cut_bytes, uint64_t cut_ms, uint32_t timeout_ms)
{
	struct fs_msg q = { .op = FS_OP_HELLO, .offset = 8192, .length = 1, .aux = 1 | 1 << 8 | 1 << 16 }, r;
	CHECK_EQ("HELLO with other settings refused", fs_call(&fc, &q, NULL, &r, NULL, 0), -E_INVAL);
	CHECK_EQ("open a missing file", fs_open(&fc, "nope", NULL), -E_NOENT);
	keep_files();
	sizes_test();
	partial_test();
	malformed_test();
	refused_overwrites();
	abandoned_read();
	if (cut_bytes)
		cut_test(cut_bytes, cut_ms);
	static struct fs_dirent d[FS_MAX_FILES];
	long n = fs_list(&fc, d, FS_MAX_FILES);
	printf("  list: %ld files\n", n);
	CHECK("list shows every file", n == 13 + 1 + (long)NKEEP);
	int bad = 0;
	for (long i = 0; i < n; i++)
		if (d[i].name[0] != 'k')
			bad += fs_unlink(&fc, d[i].name) != 0;
	CHECK_EQ("the others unlinked", bad, 0);
	many_test();
	CHECK_EQ("fsync everything", fs_fsync(&fc, 0), 0);
	struct fs_srvstats st;
	CHECK_EQ("server counters", fs_srvstats(&fc, &st), 0);
	printf("  server: %lu requests, %lu bytes written, %lu read, %lu copied, %lu pages lent, %lu commits, "
	       "%lu disk bytes, %lu files; client: %lu bytes copied out, %lu copied in, %lu pages lent, %lu sum errors\n",
	       st.requests, st.bytes_written, st.bytes_read, st.bytes_copied, st.pages_loaned, st.commits,
	       st.disk_bytes, st.nfiles, fc.net.copied_tx, fc.net.copied_rx, fc.net.pages_loaned, fc.sum_errors);
	CHECK_EQ("no checksum errors", fc.sum_errors, 0);
	// The server goes; a request then fails within the timeout.
	struct fs_msg b = { .op = FS_OP_BYE };
	CHECK_EQ("BYE", fs_call(&fc, &b, NULL, &r, NULL, 0), 0);
	sleep(500 * 1000);
	uint64_t t0 = ms();
	long h = fs_open(&fc, "k-small", NULL);
	uint64_t dt = ms() - t0;
	printf("  a request to the dead server: %ld (%s) after %lu ms\n", h, err_name(h), dt);
	CHECK("a dead server: a clear error within the timeout",
	      (h == -E_TIMEOUT || h == -E_LINK) && dt <= timeout_ms + 2000);
}

static void phase2(void)
{
	static struct fs_dirent d[FS_MAX_FILES];
	long n = fs_list(&fc, d, FS_MAX_FILES);
	CHECK_EQ("the kept and the many files listed after the restart", n, (long)NKEEP + NMANY);
	int bad = 0;
	for (unsigned i = 0; i < NKEEP; i++) {
		uint64_t size = keeps[i].size ? keeps[i].size : !strcmp(keeps[i].name, "k-cut") ? ~0ull : 0;
		uint64_t got = ~1ull;
		long h = fs_open(&fc, keeps[i].name, &got);
		if (size == ~0ull)
			size = got; // the cut file: whatever phase 1 wrote (cut_mb=)
		long r = h < 0 ? h : fs_read(&fc, h, 0, rbuf, size);
		int ok = h >= 0 && got == size && r == (long)size && fs_pattern_diff(rbuf, 0, size, keeps[i].seed) == -1;
		printf("  %s: open %ld size %lu read %ld %s\n", keeps[i].name, h, got, r, ok ? "intact" : "WRONG");
		bad += !ok;
	}
	CHECK_EQ("every kept file intact after the restart", bad, 0);
	uint64_t t0 = ms();
	table_full_test(n);
	printf("  the table filled and emptied in %lu ms\n", ms() - t0);
	CHECK_EQ("many files read back after the restart, then unlinked", many_check(1), 0);
	CHECK_EQ("fsync", fs_fsync(&fc, 0), 0);
	n = fs_list(&fc, d, FS_MAX_FILES);
	CHECK_EQ("the kept files alone left", n, (long)NKEEP);
	struct fs_msg b = { .op = FS_OP_BYE }, r;
	CHECK_EQ("BYE", fs_call(&fc, &b, NULL, &r, NULL, 0), 0);
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	hz_ms = s0.tsc_hz / 1000;
	int phase = (int)arg_long(argc, argv, "phase", 1);
	uint32_t timeout_ms = (uint32_t)arg_long(argc, argv, "timeout_ms", 5000);
	max_bytes = (uint64_t)arg_long(argc, argv, "max_mb", 32) << 20;
	uint64_t cut = (uint64_t)arg_long(argc, argv, "cut_mb", 8) << 20;
	long e = fs_connect_args(&fc, argc, argv, timeout_ms);
	CHECK_EQ("connected (HELLO)", e, 0);
	if (e == 0) {
		uint64_t buf = max_bytes > cut ? max_bytes : cut;
		wbuf = fs_buf_alloc(&fc, buf + 4096);
		rbuf = fs_buf_alloc(&fc, buf + 4096);
		CHECK("buffers", wbuf && rbuf);
		if (wbuf && rbuf) {
			if (phase == 1)
				phase1(cut, (uint64_t)arg_long(argc, argv, "cut_ms", 6500), timeout_ms);
			else
				phase2();
		}
		fs_disconnect(&fc, FS_DISC_QUIET); // phase 1 and 2 end with BYE
	}
	sysinfo(&s1);
	CHECK_EQ("frames back after the channels closed", s1.frames_free, s0.frames_free);
	return utest_done("fsc_test");
}
