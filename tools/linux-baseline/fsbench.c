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
//   fsbench busyd PORT
//       Forever: answers each UDP datagram "SEQ" on PORT with "SEQ BUSY",
//       BUSY this machine's busy ns (benchnet.h's busy_ns: under -icount
//       shift=0 its guest instructions).  The NFS server runs it for the
//       CPU work below.
//   fsbench cpu DIR HOST:PORT LENS TOTAL MBPS [TAG...]
//       CPU work (make bench-fs, under -icount): per I/O length L of LENS
//       (bytes, comma-separated) a file DIR/cpuL of L bytes, then three
//       phases of TOTAL / L ops each (at least 1), op i started at
//       i x L x 8 / MBPS us (MBPS 0: back to back): cpu_write (pwrite of L
//       at 0 + fsync), cpu_read_cached (pread of L on a buffered descriptor:
//       the client's page cache, which the writes filled) and cpu_read
//       (pread of L on an O_DIRECT descriptor: every byte from the server),
//       each read into its own part of a TOTAL-byte buffer, every byte
//       compared after the phase.  Over each phase both machines' busy ns:
//       this one's (busy_ns) and the server's (busyd at HOST:PORT), read
//       before and after; mark_c and mark_s the same over an empty window
//       (the least of 3), for the collector to subtract; first the same
//       over 1 s of no I/O (op=cpu_idle io_bytes=0: the background):
//       FSB op=cpu_write|cpu_read_cached|cpu_read TAG... io_bytes=L ops=N
//           us=T mbps=F busy_c=NS busy_s=NS mark_c=NS mark_s=NS verified=0|1
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
#include <netinet/in.h>
#include "benchnet.h"

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

static int cmd_busyd(int port)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0)
		die("fsbench busyd: port %d: %s", port, strerror(errno));
	for (;;) {
		char q[32], r[64];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(s, q, sizeof q - 1, 0, (struct sockaddr *)&from, &fl);
		if (n <= 0)
			continue;
		q[n] = 0;
		int k = snprintf(r, sizeof r, "%u %lld", (unsigned)strtoul(q, NULL, 10), busy_ns());
		sendto(s, r, (size_t)k, 0, (struct sockaddr *)&from, fl);
	}
}

static int busy_sock = -1;
static unsigned busy_seq;

// The server's busy ns (its busyd), -1 when 5 tries of 1 s found no answer.
static long long server_busy(void)
{
	for (int t = 0; t < 5; t++) {
		char q[16], r[64];
		int k = snprintf(q, sizeof q, "%u", ++busy_seq);
		if (send(busy_sock, q, (size_t)k, 0) < 0)
			continue;
		ssize_t n;
		while ((n = recv(busy_sock, r, sizeof r - 1, 0)) > 0) { // stale answers dropped
			r[n] = 0;
			char *e;
			if (strtoul(r, &e, 10) == busy_seq && *e == ' ')
				return atoll(e + 1);
		}
	}
	return -1;
}

// Both ends' busy ns over an empty window, the least of 3.
static void busy_marks(long long *mc, long long *ms)
{
	*mc = *ms = -1;
	for (int i = 0; i < 3; i++) {
		long long c0 = busy_ns(), s0 = server_busy(), s1 = server_busy(), c1 = busy_ns();
		if (*mc < 0 || c1 - c0 < *mc)
			*mc = c1 - c0;
		if (*ms < 0 || s1 - s0 < *ms)
			*ms = s1 - s0;
	}
}

// pread or pwrite of all n bytes at off; 0 or -1.
static int pio_full(int fd, uint8_t *buf, size_t n, off_t off, int writing)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = writing ? pwrite(fd, buf + done, n - done, off + (off_t)done)
				    : pread(fd, buf + done, n - done, off + (off_t)done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

enum { PH_WRITE, PH_CACHED, PH_DIRECT };

// One CPU-work phase on path: ops I/Os of len (see the usage above); 0 or 1.
static int cpu_phase(const char *path, int phase, uint8_t *wbuf, uint8_t *area, size_t total, size_t len,
		     long ops, double mbps, uint64_t seed, int ntags, char **tags)
{
	static const char *names[] = { "cpu_write", "cpu_read_cached", "cpu_read" };
	int flags = phase == PH_WRITE ? O_WRONLY : phase == PH_CACHED ? O_RDONLY : O_RDONLY | O_DIRECT;
	int fd = open(path, flags);
	if (fd < 0) {
		perror("fsbench cpu: open");
		return 1;
	}
	size_t slots = total / len ? total / len : 1;
	long long mc, ms;
	busy_marks(&mc, &ms);
	if (phase != PH_WRITE)
		memset(area, 0x5a, slots * len);
	int bad = 0;
	long long c0 = busy_ns(), s0 = server_busy();
	uint64_t t0 = now_ns();
	for (long i = 0; i < ops && !bad; i++) {
		if (mbps > 0) {
			uint64_t at = t0 + (uint64_t)((double)i * (double)len * 8e3 / mbps);
			struct timespec ts = { .tv_sec = (time_t)(at / 1000000000u), .tv_nsec = (long)(at % 1000000000u) };
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
		if (phase == PH_WRITE)
			bad = pio_full(fd, wbuf, len, 0, 1) < 0 || fsync(fd) < 0;
		else
			bad = pio_full(fd, area + (size_t)i % slots * len, len, 0, 0) < 0;
	}
	uint64_t t1 = now_ns();
	long long s1 = server_busy(), c1 = busy_ns();
	if (bad)
		perror("fsbench cpu: I/O");
	close(fd);
	for (size_t k = 0; phase != PH_WRITE && !bad && k < ((size_t)ops < slots ? (size_t)ops : slots); k++)
		bad = pattern_check(area + k * len, 0, len, seed) != len;
	int ok = !bad && c0 >= 0 && s0 >= 0 && s1 >= 0 && c1 >= 0 && mc >= 0 && ms >= 0;
	double us = (double)(t1 - t0) / 1e3;
	printf("FSB op=%s", names[phase]);
	print_tags(ntags, tags);
	printf(" io_bytes=%zu ops=%ld us=%.0f mbps=%.3f busy_c=%lld busy_s=%lld mark_c=%lld mark_s=%lld verified=%d\n",
	       len, ops, us, us > 0 ? (double)len * (double)ops * 8 / us : 0.0, c1 - c0, s1 - s0, mc, ms, ok);
	fflush(stdout);
	return !ok;
}

static int cmd_cpu(const char *dir, const char *hostport, const char *lens, size_t total, double mbps, int ntags,
		   char **tags)
{
	char host[64];
	const char *colon = strchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof host)
		die("fsbench cpu: HOST:PORT, not %s", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	busy_sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (busy_sock < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
	    connect(busy_sock, (struct sockaddr *)&a, sizeof a) < 0)
		die("fsbench cpu: busyd at %s: %s", hostport, strerror(errno));
	set_timeouts(busy_sock, 1000);
	size_t maxlen = 0;
	for (const char *p = lens; *p;) {
		size_t l = strtoull(p, NULL, 10);
		maxlen = l > maxlen ? l : maxlen;
		p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
	}
	size_t area_bytes = (total > maxlen ? total : maxlen + 4095) / 4096 * 4096;
	uint8_t *area = aligned_alloc(4096, area_bytes), *wbuf = aligned_alloc(4096, (maxlen + 4095) / 4096 * 4096);
	if (!area || !wbuf)
		die("fsbench cpu: no memory for %zu bytes", area_bytes);
	long long mc, ms;
	busy_marks(&mc, &ms);
	long long c0 = busy_ns(), s0 = server_busy();
	uint64_t t0 = now_ns();
	sleep(1);
	uint64_t t1 = now_ns();
	long long s1 = server_busy(), c1 = busy_ns();
	printf("FSB op=cpu_idle");
	print_tags(ntags, tags);
	printf(" io_bytes=0 ops=0 us=%.0f mbps=0 busy_c=%lld busy_s=%lld mark_c=%lld mark_s=%lld verified=%d\n",
	       (double)(t1 - t0) / 1e3, c1 - c0, s1 - s0, mc, ms, c0 >= 0 && s0 >= 0 && s1 >= 0 && c1 >= 0);
	fflush(stdout);
	int fails = 0;
	uint64_t seed = 100;
	for (const char *p = lens; *p; seed++) {
		size_t len = strtoull(p, NULL, 10);
		p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
		if (!len || len % 4096)
			die("fsbench cpu: length %zu is not a multiple of 4096", len);
		char path[512];
		snprintf(path, sizeof path, "%s/cpu%zu", dir, len);
		pattern_fill(wbuf, 0, len, seed);
		unlink(path);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || pio_full(fd, wbuf, len, 0, 1) < 0 || fsync(fd) < 0 || close(fd) < 0) {
			perror("fsbench cpu: the file");
			return 1;
		}
		long ops = (long)(total / len ? total / len : 1);
		for (int ph = PH_WRITE; ph <= PH_DIRECT; ph++)
			fails += cpu_phase(path, ph, wbuf, area, area_bytes, len, ops, mbps, seed, ntags, tags);
		unlink(path);
	}
	free(area);
	free(wbuf);
	return fails != 0;
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
	if (argc == 3 && strcmp(argv[1], "busyd") == 0)
		return cmd_busyd(atoi(argv[2]));
	if (argc >= 7 && strcmp(argv[1], "cpu") == 0 && parse_size(argv[5], &n) == 0)
		return cmd_cpu(argv[2], argv[3], argv[4], n, atof(argv[6]), argc - 7, argv + 7);
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
			"       fsbench busyd PORT\n"
			"       fsbench cpu DIR HOST:PORT LENS TOTAL MBPS [TAG...]\n"
			"       fsbench selfcheck\n");
	return 2;
}
