// The file service's crash test, the client side (tests/qemu/fs/crash.py
// runs it against user/fsd.c and kills the server's VM at a random moment).
// Each boot first reports what the server holds, then loops: create (or
// open) a file, write it whole with a new version, fsync; until the server
// stops answering. The driver checks each report against the previous
// boot's log: a file whose fsync returned is intact; the one in flight is
// absent, empty or whole (created) or holds old or new bytes sector by
// sector (rewritten).
// Files c0..c<files-1>, file k always SIZE(k) bytes. Every 512-byte sector
// of version v of file k starts with the tag TAG | k << 32 | v, then the
// bytes of fs_pattern(k << 16 | v) at their file offsets: a sector says
// which version it is of, and whether it is whole.
// Lines: "SIZE k bytes" (each file), "HAVE k absent|empty|size=S vers=V,..
// bad=N [first_bad=OFF]" (the report), "OP k v" (before the create), "OK
// k v" (after the fsync returned), "CRASH gone: E_..." (the server stopped
// answering), "CRASH checked" (last=1: no loop, BYE).
// Arguments: nics=, peer=, timeout_ms= (2000), round= (versions are
// round * 1000 + 1 ..), seed=, files= (6), last=1.
#include <ulib.h>
#include <netutil.h>
#include "fs.h"

#define SECTOR 512
#define TAG 0x5443000000000000ull // "CT"
#define MAXF 8
#define BUF_BYTES (2ul << 20)

static const uint64_t sizes[MAXF] = { 3000, 8897, 70001, 262700, 600007, 1000003, 5000, 140000 };
static struct fs_client fc;
static uint8_t *buf;

static void name_of(char *n, int k)
{
	n[0] = 'c', n[1] = (char)('0' + k), n[2] = 0;
}

static uint64_t seed_of(int k, uint64_t v) { return (uint64_t)k << 16 | v; }

// Version v of file k, whole.
static void make(int k, uint64_t v)
{
	for (uint64_t off = 0; off < sizes[k]; off += SECTOR) {
		uint64_t n = sizes[k] - off < SECTOR ? sizes[k] - off : SECTOR;
		fs_pattern(buf + off, off, n, seed_of(k, v));
		uint64_t tag = TAG | (uint64_t)k << 32 | v;
		memcpy(buf + off, &tag, n < 8 ? n : 8);
	}
}

// The version sector at off of file k holds, or -1 when it is none whole.
static long sector_version(int k, uint64_t off, uint64_t n)
{
	uint64_t tag = 0;
	memcpy(&tag, buf + off, n < 8 ? n : 8);
	if ((tag & ~0xffffffffull) != (TAG | (uint64_t)k << 32) || n <= 8)
		return -1;
	uint64_t v = tag & 0xffffffff;
	return fs_pattern_diff(buf + off + 8, off + 8, n - 8, seed_of(k, v)) == -1 ? (long)v : -1;
}

// Prints what file k holds: absent, empty, or its size, the versions of
// its sectors and how many sectors are no version whole. 0, or the
// transport's error.
static long report(int k)
{
	char name[4];
	name_of(name, k);
	uint64_t size = 0;
	long h = fs_open(&fc, name, &size);
	if (h == -E_NOENT)
		return printf("HAVE %d absent\n", k), 0;
	if (h < 0)
		return h;
	if (size == 0)
		return printf("HAVE %d empty\n", k), fs_close(&fc, h);
	long r = size > BUF_BYTES ? -E_2BIG : fs_read(&fc, h, 0, buf, size);
	if (r < 0)
		return r == -E_2BIG ? (printf("HAVE %d size=%lu vers= bad=1\n", k, size), 0) : r;
	long vers[8], nv = 0, bad = 0, first_bad = -1;
	for (uint64_t off = 0; off < size; off += SECTOR) {
		long v = sector_version(k, off, size - off < SECTOR ? size - off : SECTOR);
		if (v < 0 && !bad++)
			first_bad = (long)off;
		int seen = v < 0;
		for (long j = 0; j < nv && !seen; j++)
			seen = vers[j] == v;
		if (!seen && nv < 8)
			vers[nv++] = v;
	}
	printf("HAVE %d size=%lu vers=", k, size);
	for (long j = 0; j < nv; j++)
		printf(j ? ",%ld" : "%ld", vers[j]);
	printf(" bad=%ld", bad);
	printf(first_bad >= 0 ? " first_bad=%ld\n" : "\n", first_bad);
	return fs_close(&fc, h);
}

// One step: file k written whole as version v and fsync'ed.
static long step(int k, uint64_t v)
{
	char name[4];
	name_of(name, k);
	make(k, v);
	printf("OP %d %lu\n", k, v);
	long h = fs_create(&fc, name, 0);
	if (h < 0)
		return h;
	long w = fs_write(&fc, h, 0, buf, sizes[k]);
	if (w < 0)
		return w;
	long e = fs_fsync(&fc, h);
	if (e < 0)
		return e;
	printf("OK %d %lu\n", k, v);
	return fs_close(&fc, h);
}

int main(int argc, char **argv)
{
	int nfiles = (int)arg_long(argc, argv, "files", 6);
	uint64_t round = (uint64_t)arg_long(argc, argv, "round", 0);
	uint64_t seed = (uint64_t)arg_long(argc, argv, "seed", 1) * 1000003 + round;
	if (nfiles < 1 || nfiles > MAXF || round > 60) {
		printf("fsc_crash: files=1..%d, round=0..60\n", MAXF);
		return 1;
	}
	long e = fs_connect_args(&fc, argc, argv, 2000);
	if (e < 0) {
		printf("CRASH connect: %s\n", err_name(e));
		return 1;
	}
	buf = fs_buf_alloc(&fc, BUF_BYTES);
	if (!buf) {
		printf("CRASH no buffer\n");
		return 1;
	}
	for (int k = 0; k < nfiles; k++)
		printf("SIZE %d %lu\n", k, sizes[k]);
	for (int k = 0; k < nfiles && e == 0; k++)
		e = report(k);
	if (e == 0 && arg_long(argc, argv, "last", 0)) {
		printf("CRASH checked\n");
		fs_disconnect(&fc, FS_DISC_BYE);
		return 0;
	}
	for (uint64_t i = 0; e == 0 && i < 999; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		e = step((int)((seed >> 33) % (uint64_t)nfiles), round * 1000 + i + 1);
	}
	printf("CRASH gone: %s\n", e < 0 ? err_name(e) : "no, 999 steps done");
	fs_disconnect(&fc, FS_DISC_QUIET);
	return 0;
}
