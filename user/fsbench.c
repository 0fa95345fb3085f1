// The file service's benchmark client (make bench-fs; tools/bench/fs.py
// runs it against user/fsd.c): SRFS's four patterns as the Linux side's
// tools/linux-baseline/fsbench.c and nfs-guest.sh define them, per run and
// I/O length, from zero-copy buffers (fs_buf_alloc: fs_write lends pages):
//   create_write      a new file (created before the timer), one fs_write of
//                     the length: timed until it returns (the data is in the
//                     server's memory, as NFS write + fsync to a tmpfs export)
//   overwrite         the same file again, other bytes
//   read_after_write  one fs_read of it, then every byte compared
//   read_after_mount  the client detaches (FS_DISC_DETACH) and connects anew
//                     (not timed), then the read, every byte compared
//   create_write_fsync  a new file, fs_write + fs_fsync: the bytes on the
//                     server's disk (IDE port I/O, ~0.5 s a MiB under TCG),
//                     lengths up to fsync_mb= MiB only; read back, compared
// Then read_4k_rtt: rtt_n= (200) reads of 4 KiB at random page-aligned
// offsets of a 1 MiB file, each compared: median, p99 and min (us). Then,
// with cut_mb= (0: none), read_through_cut: one read of cut_mb MiB framed by
// "FSCUT begin" and "FSCUT end" (the runner cuts link 0 between them), its
// bytes lost and corrupt counted.
// One line per measurement:
//   FSB op=OP io_bytes=N run=R us=T mbps=M.m verified=0|1 status=E
// CPU work instead (cpu_sizes=, make bench-fs's -icount pairs): per I/O
// length L of cpu_sizes= (bytes, comma-separated) a file of L bytes, then a
// write phase (fs_write of L at offset 0, cpu_bytes= / L times, default
// 32 MiB in all) and a read phase (as many fs_reads of L, each into its own
// part of a buffer of cpu_bytes, every byte compared after the phase), each
// op started at the offered load cpu_mbps= (0: back to back). Over each
// phase both machines' busy TSC ticks (CPUs x elapsed less halted: under
// -icount guest instructions): the client's from sysinfo, the server's from
// FS_OP_STATS's busy_tsc, read before and after the phase; mark_c and mark_s
// are the same over an empty window (the least of 3), for the collector to
// subtract; first the same over 1 s of no I/O (op=cpu_idle, io_bytes=0):
//   FSB op=cpu_write|cpu_read io_bytes=L ops=N us=T mbps=M.m busy_c=B busy_s=B
//       mark_c=B mark_s=B verified=0|1 status=E
// RI2N/DRV's Tables 2 and 4 instead (make bench-fs-paper, fs_paper.py):
// seq_bytes=N: per run and write length of seq_io= (8192,32768) a new file
// of N bytes written in fs_writes of the length (seq_bench, below);
// wcut_s=S: 32 KiB writes through a file for S seconds while the runner
// cuts and restores link 0 (wcut_bench, below).
// Every file is unlinked, BYE ends the server. Arguments: sizes= (MiB, or
// KiB with a k: 8k; comma-separated, default 1,2,4,8,16,32), runs= (1), fsync_mb= (4),
// rtt_n= (200), cut_mb= (0), nics=, peer=, chan=, timeout_ms=, the settings
// (fs.h). Exit 0 only when every operation worked, every byte compared
// equal, and the frames came back.
#include <ulib.h>
#include <netutil.h>
#include "fs.h"

#define MAX_SIZES 16
#define RTT_FILE (1u << 20)
#define RTT_MAX 1000
#define DETACH_GAP_US 2000000 // the server reopens its channels 1.5 s after a DETACH

static struct fs_client fc;
static struct fs_cfg cfg;
static uint8_t mask;
static uint16_t chan;
static const char *peer;
static uint32_t timeout_ms;
static uint8_t *wbuf, *rbuf;
static uint64_t buf_bytes, tsc_per_us;
static int failures;

static uint64_t now_us(void) { return rdtsc() / tsc_per_us; }

// Connects and allocates both buffers; 0 or -E_*.
static long bench_connect(void)
{
	long e = fs_connect(&fc, &cfg, mask, chan, peer, timeout_ms);
	if (e < 0)
		return e;
	wbuf = fs_buf_alloc(&fc, buf_bytes);
	rbuf = fs_buf_alloc(&fc, buf_bytes);
	return wbuf && rbuf ? 0 : -E_NOMEM;
}

static void report(const char *op, uint64_t bytes, int run, uint64_t us, int ok, long status)
{
	uint64_t m10 = us ? bytes * 80 / us : 0; // Mbit/s in tenths
	printf("FSB op=%s io_bytes=%lu run=%d us=%lu mbps=%lu.%lu verified=%d status=%ld\n", op, bytes, run, us,
	       m10 / 10, m10 % 10, ok, status);
	failures += !ok;
}

// Times one fs_write (and fs_fsync with sync) of len bytes of seed's data at 0.
static long timed_write(long h, uint64_t len, uint64_t seed, int sync, uint64_t *us)
{
	fs_pattern(wbuf, 0, len, seed);
	uint64_t t0 = now_us();
	long e = fs_write(&fc, h, 0, wbuf, len);
	if (e >= 0 && sync)
		e = fs_fsync(&fc, h);
	*us = now_us() - t0;
	return e < 0 ? e : e == (long)len || sync ? 0 : -E_IO;
}

// Times one fs_read of len bytes at 0, then compares them with seed's data.
static long timed_read(long h, uint64_t len, uint64_t seed, uint64_t *us, int *ok)
{
	memset(rbuf, 0x5a, len);
	uint64_t t0 = now_us();
	long e = fs_read(&fc, h, 0, rbuf, len);
	*us = now_us() - t0;
	*ok = e == (long)len && fs_pattern_diff(rbuf, 0, len, seed) == -1;
	return e < 0 ? e : 0;
}

// One run of one length: the four patterns (and the fsync'd write).
static long one_size(uint64_t len, int run, uint64_t fsync_max)
{
	char name[16];
	uint64_t kib = len >> 10, seed = ((uint64_t)run * 65536 + kib) * 2, us;
	fmt_snprintf(name, sizeof(name), "f%lu", kib);
	long h = fs_create(&fc, name, 1), e;
	if (h < 0)
		return h;
	e = timed_write(h, len, seed, 0, &us);
	report("create_write", len, run, us, e == 0, e);
	if (e == 0) {
		e = timed_write(h, len, seed + 1, 0, &us);
		report("overwrite", len, run, us, e == 0, e);
	}
	int ok;
	if (e == 0) {
		e = timed_read(h, len, seed + 1, &us, &ok);
		report("read_after_write", len, run, us, ok && e == 0, e);
	}
	if (e < 0)
		return e;
	fs_close(&fc, h);
	fs_disconnect(&fc, FS_DISC_DETACH); // "umount": the buffers go too
	sleep(DETACH_GAP_US);
	if ((e = bench_connect()) < 0 || (h = fs_open(&fc, name, NULL)) < 0)
		return e < 0 ? e : h;
	e = timed_read(h, len, seed + 1, &us, &ok);
	report("read_after_mount", len, run, us, ok && e == 0, e);
	fs_close(&fc, h);
	long u = fs_unlink(&fc, name);
	if (e < 0 || u < 0 || len > fsync_max)
		return e < 0 ? e : u;
	name[0] = 's';
	if ((h = fs_create(&fc, name, 1)) < 0)
		return h;
	e = timed_write(h, len, seed + 2, 1, &us);
	uint64_t rus;
	if (e == 0)
		e = timed_read(h, len, seed + 2, &rus, &ok);
	report("create_write_fsync", len, run, us, e == 0 && ok, e);
	fs_close(&fc, h);
	u = fs_unlink(&fc, name);
	return e < 0 ? e : u;
}

// rtt_n reads of 4 KiB at random page-aligned offsets of a 1 MiB file.
static long rtt_4k(int n)
{
	static uint64_t us[RTT_MAX];
	long h = fs_create(&fc, "rtt", 1), e;
	if (h < 0)
		return h;
	uint64_t t, rnd = 0x5eed;
	if ((e = timed_write(h, RTT_FILE, 7, 0, &t)) < 0)
		return e;
	int ok = 1;
	for (int i = 0; i < n && ok; i++) {
		uint64_t off = rand64(&rnd) % (RTT_FILE / 4096) * 4096;
		uint64_t t0 = now_us();
		e = fs_read(&fc, h, off, rbuf, 4096);
		us[i] = now_us() - t0;
		ok = e == 4096 && fs_pattern_diff(rbuf, off, 4096, 7) == -1;
	}
	sort_u64(us, n);
	printf("FSB op=read_4k_rtt io_bytes=4096 n=%d median_us=%lu p99_us=%lu min_us=%lu verified=%d status=%ld\n", n,
	       us[n / 2], us[n * 99 / 100], us[0], ok, e < 0 ? e : 0);
	failures += !ok;
	fs_close(&fc, h);
	long u = fs_unlink(&fc, "rtt");
	return e < 0 ? e : u;
}

// Bytes of p[0..len) that differ from seed's data at file offset off.
static uint64_t corrupt_bytes_at(const uint8_t *p, uint64_t off, uint64_t len, uint64_t seed)
{
	static uint8_t want[4096];
	uint64_t bad = 0;
	for (uint64_t d = 0; d < len; d += sizeof(want)) {
		uint64_t n = len - d < sizeof(want) ? len - d : sizeof(want);
		fs_pattern(want, off + d, n, seed);
		for (uint64_t i = 0; i < n; i++)
			bad += want[i] != p[d + i];
	}
	return bad;
}

// One read of len bytes between "FSCUT begin" and "FSCUT end".
static long cut_read(uint64_t len)
{
	long h = fs_create(&fc, "cut", 1), e;
	if (h < 0)
		return h;
	uint64_t us;
	if ((e = timed_write(h, len, 9, 0, &us)) < 0)
		return e;
	struct io_stats s0, s1;
	ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s0, 0, 0);
	memset(rbuf, 0x5a, len);
	printf("FSCUT begin\n");
	uint64_t t0 = now_us();
	long r = fs_read(&fc, h, 0, rbuf, len);
	us = now_us() - t0;
	printf("FSCUT end\n");
	ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s1, 0, 0);
	uint64_t got = r > 0 ? (uint64_t)r : 0, bad = got ? corrupt_bytes_at(rbuf, 0, got, 9) : 0;
	uint64_t m10 = us ? len * 80 / us : 0;
	printf("FSB op=read_through_cut io_bytes=%lu run=1 us=%lu mbps=%lu.%lu lost=%lu corrupt=%lu "
	       "link_deaths=%lu link_recoveries=%lu retransmits=%lu verified=%d status=%ld\n", len, us, m10 / 10,
	       m10 % 10, len - got, bad, s1.link_deaths - s0.link_deaths, s1.link_recoveries - s0.link_recoveries,
	       s1.tx_retransmits - s0.tx_retransmits, got == len && !bad, r < 0 ? r : 0);
	failures += got != len || bad;
	fs_close(&fc, h);
	long u = fs_unlink(&fc, "cut");
	return r < 0 ? r : u;
}

// This machine's busy TSC ticks so far (CPUs x elapsed less halted).
static uint64_t busy_now(void)
{
	struct sysinfo si;
	uint64_t now = rdtsc();
	sysinfo(&si);
	return (si.ncpu ? si.ncpu : 1) * now - si.idle_tsc;
}

// The server's busy ticks (FS_OP_STATS), or 0 when the call failed.
static uint64_t server_busy(void)
{
	struct fs_srvstats st;
	return fs_srvstats(&fc, &st) == 0 ? st.busy_tsc : 0;
}

// Both ends' busy ticks over an empty window, the least of 3.
static void busy_marks(uint64_t *mc, uint64_t *ms)
{
	*mc = *ms = ~0ul;
	for (int i = 0; i < 3; i++) {
		uint64_t c0 = busy_now(), s0 = server_busy(), s1 = server_busy(), c1 = busy_now();
		*mc = c1 - c0 < *mc ? c1 - c0 : *mc;
		*ms = s1 - s0 < *ms ? s1 - s0 : *ms;
	}
}

// One CPU-work phase: ops fs_writes (or fs_reads) of len at offset 0 of h,
// op i started at t0 + i x len x 8 / mbps us; one FSB line.
static long cpu_phase(long h, uint64_t len, uint64_t ops, uint64_t mbps, int writing, uint64_t seed)
{
	uint64_t mc, ms, slots = buf_bytes / len;
	busy_marks(&mc, &ms);
	if (!writing)
		memset(rbuf, 0x5a, slots * len);
	long e = 0;
	uint64_t c0 = busy_now(), s0 = server_busy(), t0 = now_us(), i;
	for (i = 0; i < ops && e >= 0; i++) {
		if (mbps) {
			uint64_t at = t0 + i * len * 8 / mbps, t = now_us();
			if (at > t)
				sleep(at - t);
		}
		e = writing ? fs_write(&fc, h, 0, wbuf, len) : fs_read(&fc, h, 0, rbuf + i % slots * len, len);
		if (e >= 0 && e != (long)len)
			e = -E_IO;
	}
	uint64_t t1 = now_us(), s1 = server_busy(), c1 = busy_now();
	int ok = e >= 0 && s0 && s1;
	for (uint64_t k = 0; !writing && ok && k < (ops < slots ? ops : slots); k++)
		ok = fs_pattern_diff(rbuf + k * len, 0, len, seed) == -1;
	uint64_t us = t1 - t0, m10 = us ? ops * len * 80 / us : 0;
	printf("FSB op=%s io_bytes=%lu ops=%lu us=%lu mbps=%lu.%lu busy_c=%lu busy_s=%lu mark_c=%lu mark_s=%lu "
	       "verified=%d status=%ld\n", writing ? "cpu_write" : "cpu_read", len, ops, us, m10 / 10, m10 % 10,
	       c1 - c0, s1 - s0, mc, ms, ok, e < 0 ? e : 0);
	failures += !ok;
	return e < 0 ? e : 0;
}

// Both ends' busy ticks over 1 s of no I/O (their background: timer ticks,
// the marks' calls): FSB op=cpu_idle with io_bytes=0.
static void cpu_idle(void)
{
	uint64_t mc, ms;
	busy_marks(&mc, &ms);
	uint64_t c0 = busy_now(), s0 = server_busy(), t0 = now_us();
	sleep(1000000);
	uint64_t t1 = now_us(), s1 = server_busy(), c1 = busy_now();
	printf("FSB op=cpu_idle io_bytes=0 ops=0 us=%lu mbps=0.0 busy_c=%lu busy_s=%lu mark_c=%lu mark_s=%lu "
	       "verified=%d status=0\n", t1 - t0, c1 - c0, s1 - s0, mc, ms, s0 && s1);
}

// The CPU-work phases of every length (cpu_sizes=), after 1 s of none.
static long cpu_bench(const uint64_t *lens, int n, uint64_t total, uint64_t mbps)
{
	long e = 0;
	cpu_idle();
	for (int k = 0; k < n && e >= 0; k++) {
		uint64_t len = lens[k], ops = total / len ? total / len : 1, seed = 100 + (uint64_t)k;
		char name[24];
		fmt_snprintf(name, sizeof(name), "cpu%lu", len);
		long h = fs_create(&fc, name, 1);
		if (h < 0)
			return h;
		fs_pattern(wbuf, 0, len, seed);
		e = fs_write(&fc, h, 0, wbuf, len); // the file exists at its length before the timing
		if (e >= 0)
			e = cpu_phase(h, len, ops, mbps, 1, seed);
		if (e >= 0)
			e = cpu_phase(h, len, ops, mbps, 0, seed);
		fs_close(&fc, h);
		long u = fs_unlink(&fc, name);
		e = e < 0 ? e : u;
	}
	return e;
}

// cpu_sizes=8192,65536 (bytes, page multiples up to FS_MAX_FILE) into v; how many.
static int parse_lens(const char *s, uint64_t *v)
{
	int n = 0;
	while (s && *s && n < MAX_SIZES) {
		long b = atol(s);
		if (b > 0 && b % 4096 == 0 && (uint64_t)b <= FS_MAX_FILE)
			v[n++] = (uint64_t)b;
		while (*s && *s != ',')
			s++;
		if (*s == ',')
			s++;
	}
	return n;
}

// sizes=8k,64k,1,2,4 (MiB, or KiB with a k) into v; how many.
static int parse_sizes(const char *s, uint64_t *v)
{
	int n = 0;
	while (*s && n < MAX_SIZES) {
		long m = atol(s);
		const char *d = s;
		while (*d >= '0' && *d <= '9')
			d++;
		uint64_t b = (uint64_t)m << (*d == 'k' ? 10 : 20);
		if (m > 0 && b <= FS_MAX_FILE && b % 4096 == 0)
			v[n++] = b;
		while (*s && *s != ',')
			s++;
		if (*s == ',')
			s++;
	}
	return n;
}

// Compares the file's first len bytes, read in pieces of at most 4 MiB into
// rbuf, with want(offset)'s seed: the bytes that differ or did not come.
static uint64_t check_file(long h, uint64_t len, uint64_t (*want)(uint64_t, const void *), const void *arg)
{
	uint64_t bad = 0, piece = 4ul << 20;
	for (uint64_t off = 0; off < len; off += piece) {
		uint64_t n = len - off < piece ? len - off : piece;
		long r = fs_read(&fc, h, off, rbuf, n);
		uint64_t got = r > 0 ? (uint64_t)r : 0;
		bad += n - got;
		for (uint64_t d = 0; d < got; d += 4096) {
			uint64_t m = got - d < 4096 ? got - d : 4096;
			if (fs_pattern_diff(rbuf + d, off + d, m, want(off + d, arg)) != -1)
				bad += corrupt_bytes_at(rbuf + d, off + d, m, want(off + d, arg));
		}
	}
	return bad;
}

static uint64_t seed_fixed(uint64_t off, const void *arg)
{
	(void)off;
	return *(const uint64_t *)arg;
}

// RI2N Table 2 (seq_bytes=): per run and write length L of seq_io= (bytes),
// a new file written from offset 0 to seq_bytes in fs_writes of L, one at a
// time (each returns once the bytes are in the server's memory), timed;
// the client's busy ticks over it (busy_c, of tsc ticks elapsed: CPU % =
// busy_c / elapsed) and the server's; then read back and compared (not timed):
//   FSB op=seq_write io_bytes=L bytes=N run=R us=T mbps=M.m busy_c=B elapsed=E
//       busy_s=B verified=0|1 status=E
static long seq_bench(uint64_t total, const uint64_t *lens, int n, int runs)
{
	long e = 0;
	for (int run = 1; run <= runs && e >= 0; run++)
		for (int k = 0; k < n && e >= 0; k++) {
			uint64_t len = lens[k], seed = 300 + (uint64_t)run * 16 + (uint64_t)k;
			fs_pattern(wbuf, 0, total, seed);
			long h = fs_create(&fc, "seq", 1);
			if (h < 0)
				return h;
			uint64_t s0 = server_busy(), c0 = busy_now(), z0 = rdtsc(), t0 = now_us(), off;
			for (off = 0; off < total && e >= 0; off += len) {
				uint64_t m = total - off < len ? total - off : len;
				e = fs_write(&fc, h, off, wbuf + off, m);
				if (e >= 0 && e != (long)m)
					e = -E_IO;
			}
			uint64_t t1 = now_us(), z1 = rdtsc(), c1 = busy_now(), s1 = server_busy();
			uint64_t bad = e >= 0 ? check_file(h, total, seed_fixed, &seed) : total;
			uint64_t us = t1 - t0, m10 = us ? total * 80 / us : 0;
			printf("FSB op=seq_write io_bytes=%lu bytes=%lu run=%d us=%lu mbps=%lu.%lu busy_c=%lu elapsed=%lu "
			       "busy_s=%lu verified=%d status=%ld\n", len, total, run, us, m10 / 10, m10 % 10, c1 - c0,
			       z1 - z0, s0 && s1 ? s1 - s0 : 0, e >= 0 && !bad, e < 0 ? e : 0);
			failures += e < 0 || bad;
			fs_close(&fc, h);
			long u = fs_unlink(&fc, "seq");
			e = e < 0 ? e : u;
		}
	return e;
}

struct wcut_state {
	uint64_t pos, pass, seed[2];
};

// The seed the bytes at off should have after the cut write: the last pass
// wrote [0, pos), the one before it the rest.
static uint64_t seed_wcut(uint64_t off, const void *arg)
{
	const struct wcut_state *w = arg;
	return w->seed[(off < w->pos ? w->pass : w->pass + 1) % 2];
}

// RI2N Table 4 (wcut_s=): fs_writes of wcut_io= bytes (32 KiB) through a
// file of wcut_mb= MiB (32), over and over (pass p from two buffers, seeds
// alternating), for wcut_s seconds framed by "FSCUT begin" and "FSCUT end"
// (the runner cuts link 0 some seconds after the first and restores it 10 s
// later); every wcut_sync_mb= MiB (4) a progress line
//   FSPROG t_us=T bytes=B
// (time since FSCUT begin, bytes written so far; each fs_write returns once
// the bytes are in the server's memory), then the whole file read back and
// compared with what the last two passes wrote:
//   FSB op=write_through_cut io_bytes=L bytes=N us=T mbps=M.m lost=B corrupt=B
//       link_deaths=.. link_recoveries=.. retransmits=.. verified=0|1 status=E
static long wcut_bench(uint64_t secs, uint64_t file, uint64_t len, uint64_t sync)
{
	struct wcut_state w = { 0, 0, { 401, 402 } };
	uint8_t *buf[2] = { wbuf, rbuf };
	fs_pattern(buf[0], 0, file, w.seed[0]);
	fs_pattern(buf[1], 0, file, w.seed[1]);
	long h = fs_create(&fc, "wcut", 1), e = 0;
	if (h < 0)
		return h;
	struct io_stats s0, s1;
	ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s0, 0, 0);
	printf("FSCUT begin\n");
	uint64_t t0 = now_us(), done = 0, next = sync, t = t0;
	while (e >= 0 && t - t0 < secs * 1000000) {
		uint64_t m = file - w.pos < len ? file - w.pos : len;
		e = fs_write(&fc, h, w.pos, buf[w.pass % 2] + w.pos, m);
		if (e >= 0 && e != (long)m)
			e = -E_IO;
		if (e < 0)
			break;
		done += m, w.pos += m, t = now_us();
		if (w.pos == file)
			w.pos = 0, w.pass++;
		if (done >= next) {
			printf("FSPROG t_us=%lu bytes=%lu\n", t - t0, done);
			next += sync;
		}
	}
	uint64_t us = t - t0;
	printf("FSCUT end\n");
	ctrl_io(fc.net.data[0].io, IO_OP_STATS, (unsigned long)&s1, 0, 0);
	// after pass 0 alone, [pos, file) was never written: pass -1 is "none"
	uint64_t check = w.pass ? file : w.pos;
	uint64_t bad = e >= 0 ? check_file(h, check, seed_wcut, &w) : check;
	uint64_t m10 = us ? done * 80 / us : 0;
	printf("FSB op=write_through_cut io_bytes=%lu bytes=%lu us=%lu mbps=%lu.%lu lost=%lu corrupt=%lu "
	       "link_deaths=%lu link_recoveries=%lu retransmits=%lu verified=%d status=%ld\n", len, done, us, m10 / 10,
	       m10 % 10, e < 0 ? check : 0, e < 0 ? 0 : bad, s1.link_deaths - s0.link_deaths,
	       s1.link_recoveries - s0.link_recoveries, s1.tx_retransmits - s0.tx_retransmits, e >= 0 && !bad,
	       e < 0 ? e : 0);
	failures += e < 0 || bad;
	fs_close(&fc, h);
	long u = fs_unlink(&fc, "wcut");
	return e < 0 ? e : u;
}

static long bench(int argc, char **argv, const uint64_t *sizes, int nsizes)
{
	int runs = (int)arg_long(argc, argv, "runs", 1);
	uint64_t fsync_max = (uint64_t)arg_long(argc, argv, "fsync_mb", 4) << 20;
	int rtt_n = (int)arg_long(argc, argv, "rtt_n", 200);
	uint64_t cut = (uint64_t)arg_long(argc, argv, "cut_mb", 0) << 20;
	long e = 0;
	if (rtt_n > 0)
		e = rtt_4k(rtt_n > RTT_MAX ? RTT_MAX : rtt_n);
	for (int run = 1; run <= runs && e >= 0; run++)
		for (int i = 0; i < nsizes && e >= 0; i++)
			e = one_size(sizes[i], run, fsync_max);
	if (e >= 0 && cut)
		e = cut_read(cut);
	return e;
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	tsc_per_us = s0.tsc_hz / 1000000;
	uint64_t sizes[MAX_SIZES];
	int nsizes = parse_sizes(arg_get(argc, argv, "sizes", "1,2,4,8,16,32"), sizes);
	fs_cfg_args(&cfg, argc, argv);
	mask = nic_mask_arg(argc, argv);
	chan = (uint16_t)arg_long(argc, argv, "chan", 40);
	peer = arg_get(argc, argv, "peer", NULL);
	timeout_ms = (uint32_t)arg_long(argc, argv, "timeout_ms", 5000);
	uint64_t cut = (uint64_t)arg_long(argc, argv, "cut_mb", 0) << 20;
	uint64_t lens[MAX_SIZES], cpu_total = (uint64_t)arg_long(argc, argv, "cpu_bytes", 32l << 20);
	int nlens = parse_lens(arg_get(argc, argv, "cpu_sizes", NULL), lens);
	buf_bytes = RTT_FILE > cut ? RTT_FILE : cut;
	for (int i = 0; i < nsizes; i++)
		buf_bytes = sizes[i] > buf_bytes ? sizes[i] : buf_bytes;
	if (nlens) {
		buf_bytes = cpu_total < FS_MAX_FILE ? cpu_total : FS_MAX_FILE;
		for (int i = 0; i < nlens; i++)
			buf_bytes = lens[i] > buf_bytes ? lens[i] : buf_bytes;
	}
	uint64_t seq = (uint64_t)arg_long(argc, argv, "seq_bytes", 0), seq_lens[MAX_SIZES];
	int nseq = parse_lens(arg_get(argc, argv, "seq_io", "8192,32768"), seq_lens);
	uint64_t wcut_s = (uint64_t)arg_long(argc, argv, "wcut_s", 0);
	uint64_t wcut_file = (uint64_t)arg_long(argc, argv, "wcut_mb", 32) << 20;
	seq = seq < FS_MAX_FILE ? seq : FS_MAX_FILE;
	wcut_file = wcut_file < FS_MAX_FILE ? wcut_file : FS_MAX_FILE;
	if (seq)
		buf_bytes = seq;
	else if (wcut_s)
		buf_bytes = wcut_file;
	long e = bench_connect();
	if (e == 0 && seq)
		e = seq_bench(seq, seq_lens, nseq, (int)arg_long(argc, argv, "runs", 1));
	else if (e == 0 && wcut_s)
		e = wcut_bench(wcut_s, wcut_file, (uint64_t)arg_long(argc, argv, "wcut_io", 32768),
			       (uint64_t)arg_long(argc, argv, "wcut_sync_mb", 4) << 20);
	else if (e == 0 && nlens)
		e = cpu_bench(lens, nlens, cpu_total, (uint64_t)arg_long(argc, argv, "cpu_mbps", 0));
	else if (e == 0)
		e = bench(argc, argv, sizes, nsizes);
	if (e < 0)
		printf("fsbench: stopped: %ld (%s)\n", e, err_name(e));
	fs_disconnect(&fc, e == -E_TIMEOUT || e == -E_LINK ? FS_DISC_QUIET : FS_DISC_BYE);
	sysinfo(&s1);
	int frames_ok = s1.frames_free == s0.frames_free;
	if (!frames_ok)
		printf("fsbench: frames free %lu at the start, %lu at the end\n", s0.frames_free, s1.frames_free);
	int ok = e >= 0 && !failures && frames_ok;
	printf("FSBENCH done ok=%d failures=%d sum_errors=%lu stale_replies=%lu pages_lent=%lu copied_tx=%lu "
	       "copied_rx=%lu\n", ok, failures, fc.sum_errors, fc.stale_replies, fc.net.pages_loaned, fc.net.copied_tx,
	       fc.net.copied_rx);
	return ok ? 0 : 1;
}
