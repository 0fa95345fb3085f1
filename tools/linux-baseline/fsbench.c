// fsbench: file I/O timing for the Linux NFS side of the file-service
// comparison (bench-fs.sh, selftest-nfs.sh).  A static program run by
// nfs-guest.sh inside the client guest on a file of the NFS mount.
//
//   fsbench write FILE BYTES SEED create|overwrite [TAG...]
//       create: FILE is removed first (if there) and opened with
//       O_CREAT|O_EXCL; overwrite: FILE is opened O_WRONLY, no O_TRUNC.
//       Timed (us): one write() of BYTES (repeated only for what a short
//       write left) and fsync(); open_us is the open alone, close_us the
//       close after the timed part.  The bytes are pattern(SEED).
//   fsbench read FILE BYTES SEED [TAG...]
//       Timed (us): one read() of BYTES (repeated only for what a short
//       read left, until BYTES or end of file) into a buffer; then every
//       byte is compared with pattern(SEED): verified=1 or the first bad
//       offset (and exit status 1).  open_us as for write.
//   fsbench rtt FILE COUNT SEED [TAG...]
//       FILE (at least 1 MiB, written with pattern(SEED)) opened O_DIRECT:
//       COUNT pread()s of 4096 bytes at 4 KiB-aligned offsets stepping
//       through the file, each timed and verified, so every one is one READ
//       round trip to the server (no page cache); median, p99 and min.
//   fsbench selfcheck
// Output: one line per measurement,
//   FSB op=write|read|rtt TAG... bytes=N us=N open_us=N close_us=N mbps=F verified=0|1
//   FSB op=rtt TAG... bytes=4096 n=N median_us=F p99_us=F min_us=F verified=0|1
// (TAG words are copied verbatim, e.g. pattern=overwrite size_mib=4).
// Exit status 0 when the operation worked and the bytes matched.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RTT_BYTES 4096

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// The byte at offset OFF of pattern(SEED): a splitmix64 of the 8-byte word
// index, so that any offset can be checked without the rest of the file.
static uint64_t pattern_word(uint64_t seed, uint64_t idx)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + idx + 1;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint8_t pattern_byte(uint64_t seed, uint64_t off)
{
	return (uint8_t)(pattern_word(seed, off / 8) >> (8 * (off % 8)));
}

// Word by word (little-endian x86: byte k of a word is bits 8k..8k+7), byte
// by byte only at unaligned ends.
static void pattern_fill(uint8_t *buf, uint64_t off, size_t n, uint64_t seed)
{
	size_t i = 0;
	for (; i < n && (off + i) % 8; i++)
		buf[i] = pattern_byte(seed, off + i);
	for (; i + 8 <= n; i += 8) {
		uint64_t w = pattern_word(seed, (off + i) / 8);
		memcpy(buf + i, &w, 8);
	}
	for (; i < n; i++)
		buf[i] = pattern_byte(seed, off + i);
}

// Returns the first offset in [0, n) whose byte differs, or n if none.
static size_t pattern_check(const uint8_t *buf, uint64_t off, size_t n, uint64_t seed)
{
	size_t i = 0;
	for (; i < n && (off + i) % 8; i++)
		if (buf[i] != pattern_byte(seed, off + i))
			return i;
	for (; i + 8 <= n; i += 8) {
		uint64_t w = pattern_word(seed, (off + i) / 8);
		if (memcmp(buf + i, &w, 8) != 0)
			break;
	}
	for (; i < n; i++)
		if (buf[i] != pattern_byte(seed, off + i))
			return i;
	return n;
}

static void print_tags(int ntags, char **tags)
{
	for (int i = 0; i < ntags; i++)
		printf(" %s", tags[i]);
}

static void *alloc_or_die(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "fsbench: cannot allocate %zu bytes\n", n);
		exit(2);
	}
	return p;
}

// Writes or reads all N bytes, a second call only for what one left.
static ssize_t io_full(int fd, uint8_t *buf, size_t n, int writing)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = writing ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static void print_result(const char *op, int ntags, char **tags, size_t bytes, double us,
			 double open_us, double close_us, int verified)
{
	printf("FSB op=%s", op);
	print_tags(ntags, tags);
	printf(" bytes=%zu us=%.0f open_us=%.0f close_us=%.0f mbps=%.3f verified=%d\n", bytes, us,
	       open_us, close_us, us > 0 ? bytes * 8.0 / us : 0.0, verified);
	fflush(stdout);
}

static int cmd_write(const char *path, size_t bytes, uint64_t seed, const char *how, int ntags,
		     char **tags)
{
	int create = strcmp(how, "create") == 0;
	if (!create && strcmp(how, "overwrite") != 0) {
		fprintf(stderr, "fsbench write: create or overwrite, not %s\n", how);
		return 2;
	}
	uint8_t *buf = alloc_or_die(bytes);
	pattern_fill(buf, 0, bytes, seed);
	if (create && unlink(path) < 0 && errno != ENOENT) {
		perror("fsbench: unlink");
		return 1;
	}
	double t0 = now_us();
	int fd = open(path, create ? O_WRONLY | O_CREAT | O_EXCL : O_WRONLY, 0644);
	double t1 = now_us();
	if (fd < 0) {
		perror("fsbench: open");
		return 1;
	}
	ssize_t w = io_full(fd, buf, bytes, 1);
	int sr = w == (ssize_t)bytes ? fsync(fd) : -1;
	double t2 = now_us();
	if (w != (ssize_t)bytes || sr < 0) {
		fprintf(stderr, "fsbench: write %zd of %zu, fsync %d: %s\n", w, bytes, sr, strerror(errno));
		return 1;
	}
	int cr = close(fd);
	double t3 = now_us();
	if (cr < 0) {
		perror("fsbench: close");
		return 1;
	}
	print_result("write", ntags, tags, bytes, t2 - t1, t1 - t0, t3 - t2, 1);
	free(buf);
	return 0;
}

static int cmd_read(const char *path, size_t bytes, uint64_t seed, int ntags, char **tags)
{
	uint8_t *buf = alloc_or_die(bytes);
	memset(buf, 0, bytes);
	double t0 = now_us();
	int fd = open(path, O_RDONLY);
	double t1 = now_us();
	if (fd < 0) {
		perror("fsbench: open");
		return 1;
	}
	ssize_t r = io_full(fd, buf, bytes, 0);
	double t2 = now_us();
	close(fd);
	double t3 = now_us();
	if (r < 0) {
		perror("fsbench: read");
		return 1;
	}
	size_t bad = pattern_check(buf, 0, (size_t)r, seed);
	int ok = r == (ssize_t)bytes && bad == (size_t)r;
	print_result("read", ntags, tags, (size_t)r, t2 - t1, t1 - t0, t3 - t2, ok);
	if (!ok)
		fprintf(stderr, "fsbench: read %zd of %zu bytes, first bad byte at %zu\n", r, bytes, bad);
	free(buf);
	return ok ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmd_rtt(const char *path, long count, uint64_t seed, int ntags, char **tags)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror("fsbench: open O_DIRECT");
		return 1;
	}
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < RTT_BYTES || count < 1 || count > 1000000) {
		fprintf(stderr, "fsbench rtt: file of %lld bytes, count %ld\n", (long long)size, count);
		close(fd);
		return 1;
	}
	uint8_t *buf = aligned_alloc(RTT_BYTES, RTT_BYTES);
	double *us = alloc_or_die(sizeof(double) * (size_t)count);
	long blocks = (long)(size / RTT_BYTES);
	int ok = 1;
	for (long i = 0; i < count; i++) {
		off_t off = (off_t)(i % blocks) * RTT_BYTES;
		double t0 = now_us();
		ssize_t r = pread(fd, buf, RTT_BYTES, off);
		us[i] = now_us() - t0;
		if (r != RTT_BYTES || pattern_check(buf, (uint64_t)off, RTT_BYTES, seed) != RTT_BYTES) {
			fprintf(stderr, "fsbench rtt: read %zd at %lld: bad\n", r, (long long)off);
			ok = 0;
			break;
		}
	}
	close(fd);
	qsort(us, (size_t)count, sizeof(double), cmp_double);
	printf("FSB op=rtt");
	print_tags(ntags, tags);
	printf(" bytes=%d n=%ld median_us=%.1f p99_us=%.1f min_us=%.1f verified=%d\n", RTT_BYTES, count,
	       us[count / 2], us[(count * 99) / 100 < count ? (count * 99) / 100 : count - 1], us[0], ok);
	fflush(stdout);
	free(us);
	free(buf);
	return ok ? 0 : 1;
}

// A file in a temporary directory: write, overwrite with another seed, read
// back, and a read against the wrong seed must fail (rtt needs O_DIRECT,
// which a tmpfs /tmp lacks).
static int selfcheck(void)
{
	char dir[] = "/tmp/fsbench.XXXXXX", path[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/f", dir);
	char *tags[] = {"selfcheck=1"};
	int rc = cmd_write(path, 100003, 1, "create", 1, tags) || cmd_write(path, 100003, 2, "overwrite", 1, tags) ||
		 cmd_read(path, 100003, 2, 1, tags);
	int wrong = rc == 0 && freopen("/dev/null", "w", stderr) && cmd_read(path, 100003, 1, 1, tags) == 0;
	unlink(path);
	rmdir(dir);
	return rc || wrong;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s || v > (1ull << 34))
		return -1;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	size_t n, seed;
	if (argc == 2 && strcmp(argv[1], "selfcheck") == 0)
		return selfcheck();
	if (argc < 5 || parse_size(argv[3], &n) < 0 || parse_size(argv[4], &seed) < 0)
		goto usage;
	if (strcmp(argv[1], "write") == 0 && argc >= 6)
		return cmd_write(argv[2], n, seed, argv[5], argc - 6, argv + 6);
	if (strcmp(argv[1], "read") == 0)
		return cmd_read(argv[2], n, seed, argc - 5, argv + 5);
	if (strcmp(argv[1], "rtt") == 0)
		return cmd_rtt(argv[2], (long)n, seed, argc - 5, argv + 5);
usage:
	fprintf(stderr, "usage: fsbench write FILE BYTES SEED create|overwrite [TAG...]\n"
			"       fsbench read FILE BYTES SEED [TAG...]\n"
			"       fsbench rtt FILE COUNT SEED [TAG...]\n"
			"       fsbench selfcheck\n");
	return 2;
}
