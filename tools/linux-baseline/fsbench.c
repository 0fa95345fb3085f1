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
//   fsbench seqwrite FILE BYTES CHUNK SEED HOST:PORT|- [TAG...]
//       RI2N Table 2's sequential write: a new FILE of BYTES in write()s of
//       CHUNK, then fsync() and close(), timed; this machine's busy ns over
//       it and the server's (busyd at HOST:PORT, "-": none, busy_s=-1);
//       then read back O_DIRECT and compared (not timed):
//       FSB op=seq_write TAG... io_bytes=CHUNK bytes=N us=T mbps=F
//           busy_c=NS elapsed=NS busy_s=NS verified=0|1
//   fsbench cutwrite FILE FILEBYTES CHUNK SECONDS SYNCBYTES [TAG...]
//       RI2N Table 4's write through a link failure: pwrite()s of CHUNK
//       through FILE, over and over for SECONDS, between "FSCUT begin" and
//       "FSCUT end"; fsync() and "FSPROG t_us=T bytes=B" every SYNCBYTES;
//       eth0's carrier polled every 20 ms meanwhile: "FSLINK t_us=T
//       eth0=0|1" at each change; then every byte read back O_DIRECT
//       against the last two passes:
//       FSB op=write_through_cut TAG... io_bytes=CHUNK bytes=N us=T mbps=F
//           lost=B corrupt=B verified=0|1
//   fsbench tcpsink PORT SOCKBUF
//   fsbench tcpsend HOST:PORT BYTES MSG SOCKBUF [TAG...]
//       SRFS Table 3's netperf-like TCP stream (netperf -s SOCKBUF -M MSG):
//       the sink (server) compares every byte and answers the byte count;
//       the sender times BYTES in write()s of MSG until that answer:
//       FSB op=tcp_stream TAG... io_bytes=MSG bytes=N us=T mbps=F ...
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
#include <pthread.h>
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

// BYTES of buf written in write()s of CHUNK (each finished by io_full);
// returns the bytes written, short after the first that failed.
static size_t write_chunks(int fd, uint8_t *buf, size_t bytes, size_t chunk)
{
	size_t off = 0;
	while (off < bytes) {
		size_t n = bytes - off < chunk ? bytes - off : chunk;
		if (io_full(fd, buf + off, n, 1) != (ssize_t)n)
			break;
		off += n;
	}
	return off;
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

// Connects busy_sock to a busyd at HOST:PORT; `who` starts the failure line.
static void busy_connect(const char *hostport, const char *who)
{
	char host[64];
	const char *colon = strchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof host)
		die("%s: HOST:PORT, not %s", who, hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	busy_sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (busy_sock < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
	    connect(busy_sock, (struct sockaddr *)&a, sizeof a) < 0)
		die("%s: busyd at %s: %s", who, hostport, strerror(errno));
	set_timeouts(busy_sock, 1000);
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
	busy_connect(hostport, "fsbench cpu");
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

// Bytes of PATH's first BYTES that differ from seed_at(off)'s pattern or
// did not come, read on an O_DIRECT descriptor (from the server, not the
// client's page cache) in pieces of 4 MiB.
static size_t check_direct(const char *path, size_t bytes, uint64_t (*seed_at)(uint64_t, const void *),
			   const void *arg)
{
	const size_t piece = 4u << 20;
	uint8_t *buf = aligned_alloc(4096, piece);
	int fd = open(path, O_RDONLY | O_DIRECT);
	if (!buf || fd < 0) {
		perror("fsbench: check");
		free(buf);
		return bytes;
	}
	size_t bad = 0;
	for (size_t off = 0; off < bytes; off += piece) {
		size_t n = bytes - off < piece ? bytes - off : piece, want = (n + 4095) / 4096 * 4096;
		ssize_t r = pread(fd, buf, want, (off_t)off);
		size_t got = r < 0 ? 0 : (size_t)r > n ? n : (size_t)r;
		bad += n - got;
		for (size_t d = 0; d < got; d += 4096) {
			size_t m = got - d < 4096 ? got - d : 4096;
			uint64_t seed = seed_at(off + d, arg);
			for (size_t i = pattern_check(buf + d, off + d, m, seed); i < m; i++)
				bad += buf[d + i] != pattern_byte(seed, off + d + i);
		}
	}
	close(fd);
	free(buf);
	return bad;
}

static uint64_t seed_fixed(uint64_t off, const void *arg)
{
	(void)off;
	return *(const uint64_t *)arg;
}

// seqwrite: RI2N Table 2's sequential write (bonnie++'s sequential output):
// a new FILE of BYTES written in write()s of CHUNK from a buffer filled
// before the timer, then fsync() and close(), timed; this machine's busy ns
// over it (busy_c, of elapsed ns: CPU %) and the server's (busyd, busy_s;
// -1 without); then read back O_DIRECT and compared (not timed).
static int cmd_seqwrite(const char *path, size_t bytes, size_t chunk, uint64_t seed, const char *hostport,
			int ntags, char **tags)
{
	uint8_t *buf = alloc_or_die(bytes);
	pattern_fill(buf, 0, bytes, seed);
	if (strcmp(hostport, "-") != 0) // "-": no busyd, busy_s -1
		busy_connect(hostport, "fsbench");
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || chunk == 0) {
		perror("fsbench: seqwrite open");
		return 1;
	}
	long long s0 = busy_sock < 0 ? -1 : server_busy(), c0 = busy_ns();
	double t0 = now_us();
	size_t off = write_chunks(fd, buf, bytes, chunk);
	int ok = off == bytes && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	double t1 = now_us();
	long long c1 = busy_ns(), s1 = busy_sock < 0 ? -1 : server_busy();
	size_t bad = ok ? check_direct(path, bytes, seed_fixed, &seed) : bytes;
	printf("FSB op=seq_write");
	print_tags(ntags, tags);
	printf(" io_bytes=%zu bytes=%zu us=%.0f mbps=%.3f busy_c=%lld elapsed=%.0f busy_s=%lld verified=%d\n", chunk,
	       bytes, t1 - t0, bytes * 8.0 / (t1 - t0), c1 - c0, (t1 - t0) * 1000, s0 < 0 || s1 < 0 ? -1 : s1 - s0,
	       ok && !bad);
	fflush(stdout);
	unlink(path);
	free(buf);
	return ok && !bad ? 0 : 1;
}

struct wcut_state {
	uint64_t pos, pass, seed[2];
};

static double link_t0;
static volatile int link_stop;

// The write through a cut's watcher: every 20 ms eth0's carrier (link 0,
// which the runner cuts), "FSLINK t_us=T eth0=0|1" at each change, on this
// guest's clock, so that the phases need not trust when the host saw the
// console's FSCUT line.
static void *link_watch(void *arg)
{
	(void)arg;
	int last = -1;
	while (!link_stop) {
		char c = '?';
		FILE *f = fopen("/sys/class/net/eth0/carrier", "r");
		if (f) {
			c = (char)fgetc(f);
			fclose(f);
		}
		int now = c == '1';
		if (now != last) {
			printf("FSLINK t_us=%.0f eth0=%d\n", now_us() - link_t0, now);
			fflush(stdout);
			last = now;
		}
		usleep(20000);
	}
	return NULL;
}

static uint64_t seed_wcut(uint64_t off, const void *arg)
{
	const struct wcut_state *w = arg;
	return w->seed[(off < w->pos ? w->pass : w->pass + 1) % 2];
}

// cutwrite: RI2N Table 4's write through a link failure: write()s of CHUNK
// through FILE of FILEBYTES, over and over (two buffers, seeds
// alternating), for SECS seconds framed by "FSCUT begin" and "FSCUT end"
// lines (the runner cuts link 0 and restores it in between); fsync() every
// SYNCBYTES and a line "FSPROG t_us=T bytes=B" (since FSCUT begin, bytes
// written and synced); then the file read back O_DIRECT and compared with
// what the last two passes wrote.
static int cmd_cutwrite(const char *path, size_t file, size_t chunk, double secs, size_t sync, int ntags,
			char **tags)
{
	struct wcut_state w = { 0, 0, { 401, 402 } };
	uint8_t *buf[2] = { alloc_or_die(file), alloc_or_die(file) };
	pattern_fill(buf[0], 0, file, w.seed[0]);
	pattern_fill(buf[1], 0, file, w.seed[1]);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || chunk == 0 || sync == 0) {
		perror("fsbench: cutwrite open");
		return 1;
	}
	printf("FSCUT begin cutwrite\n");
	fflush(stdout);
	double t0 = now_us(), t = t0;
	pthread_t watcher;
	link_t0 = t0;
	int watching = pthread_create(&watcher, NULL, link_watch, NULL) == 0;
	size_t done = 0, next = sync;
	int ok = 1;
	while (ok && t - t0 < secs * 1e6) {
		size_t n = file - w.pos < chunk ? file - w.pos : chunk;
		ok = pwrite(fd, buf[w.pass % 2] + w.pos, n, (off_t)w.pos) == (ssize_t)n;
		done += n, w.pos += n;
		if (w.pos == file)
			w.pos = 0, w.pass++;
		if (ok && done >= next) {
			ok = fsync(fd) == 0;
			t = now_us();
			printf("FSPROG t_us=%.0f bytes=%zu\n", t - t0, done);
			fflush(stdout);
			next += sync;
		}
	}
	ok = ok && fsync(fd) == 0;
	t = now_us();
	link_stop = 1;
	if (watching)
		pthread_join(watcher, NULL);
	printf("FSCUT end cutwrite\n");
	fflush(stdout);
	ok = close(fd) == 0 && ok;
	size_t check = w.pass ? file : w.pos;
	size_t bad = ok ? check_direct(path, check, seed_wcut, &w) : check;
	printf("FSB op=write_through_cut");
	print_tags(ntags, tags);
	printf(" io_bytes=%zu bytes=%zu us=%.0f mbps=%.3f lost=%zu corrupt=%zu verified=%d\n", chunk, done, t - t0,
	       done * 8.0 / (t - t0), ok ? 0 : check, ok ? bad : 0, ok && !bad);
	fflush(stdout);
	unlink(path);
	free(buf[0]);
	free(buf[1]);
	return ok && !bad ? 0 : 1;
}

// tcpsink PORT SOCKBUF: forever, one connection at a time: SO_RCVBUF
// SOCKBUF (netperf -s), every byte read compared with pattern(11) at its
// stream offset; at the sender's end of stream, 16 bytes back: the bytes
// received and the count of those that differed.
static int cmd_tcpsink(int port, int sockbuf)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf); // inherited by the accepted socket
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4) < 0)
		die("fsbench tcpsink: port %d: %s", port, strerror(errno));
	static uint8_t buf[1 << 16];
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0)
			continue;
		uint64_t got = 0, bad = 0;
		ssize_t r;
		while ((r = read(fd, buf, sizeof buf)) > 0) {
			for (size_t i = pattern_check(buf, got, (size_t)r, 11); i < (size_t)r; i++)
				bad += buf[i] != pattern_byte(11, got + i);
			got += (uint64_t)r;
		}
		uint64_t back[2] = { got, bad };
		if (write(fd, back, sizeof back) < 0)
			perror("fsbench tcpsink: reply");
		close(fd);
	}
}

// tcpsend HOST:PORT BYTES MSG SOCKBUF [TAG...]: SRFS Table 3's netperf
// stream (netperf -l 30 -s 131072 -M MSG): one TCP connection with
// SO_SNDBUF SOCKBUF, BYTES of pattern(11) in write()s of MSG, then
// shutdown(SHUT_WR); timed from the first write to the sink's reply (every
// byte received and compared there):
//   FSB op=tcp_stream TAG... io_bytes=MSG bytes=N us=T mbps=F sockbuf=S
//       rcvd=N corrupt=N verified=0|1
static int cmd_tcpsend(const char *hostport, size_t bytes, size_t msg, int sockbuf, int ntags, char **tags)
{
	char host[64];
	const char *colon = strchr(hostport, ':');
	if (!colon || (size_t)(colon - hostport) >= sizeof host || msg == 0)
		die("fsbench tcpsend: HOST:PORT, not %s", hostport);
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1)) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
	if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("fsbench tcpsend: %s: %s", hostport, strerror(errno));
	uint8_t *buf = alloc_or_die(bytes);
	pattern_fill(buf, 0, bytes, 11);
	double t0 = now_us();
	size_t off = write_chunks(fd, buf, bytes, msg);
	shutdown(fd, SHUT_WR);
	uint64_t back[2] = { 0, 0 };
	ssize_t r = io_full(fd, (uint8_t *)back, sizeof back, 0);
	double t1 = now_us();
	int eff = 0;
	socklen_t el = sizeof eff;
	getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &eff, &el);
	close(fd);
	int ok = off == bytes && r == (ssize_t)sizeof back && back[0] == bytes && back[1] == 0;
	printf("FSB op=tcp_stream");
	print_tags(ntags, tags);
	printf(" io_bytes=%zu bytes=%zu us=%.0f mbps=%.3f sockbuf=%d sndbuf_eff=%d rcvd=%llu corrupt=%llu verified=%d\n",
	       msg, bytes, t1 - t0, bytes * 8.0 / (t1 - t0), sockbuf, eff, (unsigned long long)back[0],
	       (unsigned long long)back[1], ok);
	fflush(stdout);
	free(buf);
	return ok ? 0 : 1;
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
	size_t chunk, sync;
	if (argc == 4 && strcmp(argv[1], "tcpsink") == 0)
		return cmd_tcpsink(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 6 && strcmp(argv[1], "tcpsend") == 0 && parse_size(argv[3], &n) == 0 &&
	    parse_size(argv[4], &chunk) == 0)
		return cmd_tcpsend(argv[2], n, chunk, atoi(argv[5]), argc - 6, argv + 6);
	if (argc >= 7 && strcmp(argv[1], "seqwrite") == 0 && parse_size(argv[3], &n) == 0 &&
	    parse_size(argv[4], &chunk) == 0 && parse_size(argv[5], &seed) == 0)
		return cmd_seqwrite(argv[2], n, chunk, seed, argv[6], argc - 7, argv + 7);
	if (argc >= 7 && strcmp(argv[1], "cutwrite") == 0 && parse_size(argv[3], &n) == 0 &&
	    parse_size(argv[4], &chunk) == 0 && parse_size(argv[6], &sync) == 0)
		return cmd_cutwrite(argv[2], n, chunk, atof(argv[5]), sync, argc - 7, argv + 7);
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
			"       fsbench seqwrite FILE BYTES CHUNK SEED HOST:PORT|- [TAG...]\n"
			"       fsbench cutwrite FILE FILEBYTES CHUNK SECONDS SYNCBYTES [TAG...]\n"
			"       fsbench tcpsink PORT SOCKBUF\n"
			"       fsbench tcpsend HOST:PORT BYTES MSG SOCKBUF [TAG...]\n"
			"       fsbench selfcheck\n");
	return 2;
}
