// tlbbench: Linux's side of Figure 3 on several CPUs (make bench-smp-linux).
//
// The research kernel's exchange remaps pages; on a multiprocessor a remap
// of a page that another CPU may have cached costs that CPU a TLB
// shootdown. Linux's nearest operations are munmap() and mremap() of pages
// that a thread of the same process has touched: when that thread is
// running on another CPU, Linux sends it an IPI and waits for it. This
// program times, per size S (the sizes of Figure 3; pages = S rounded up to
// 4 KiB pages):
//   copy       a memcpy of S bytes from a source flushed from the caches
//              (clflush), the destination verified;
//   local      munmap / mremap of the pages, the process's only thread on
//              CPU 0 (layout one-cpu);
//   shared     the same with a second thread pinned to CPU 0 that has
//              touched the pages and sleeps (layout same-cpu);
//   remote     the same with the second thread pinned to the other CPU,
//              having touched the pages and spinning in user mode during
//              the call (layout other-cpu; with more than 2 CPUs, layout
//              all-cpus: one such thread on every CPU but 0);
//   batch      remote, for 128 packets of S: one call over the 128 * pages;
//   unbatched  remote, for 128 packets of S: 128 calls of `pages` each.
// munmap frees the pages; mremap moves them, from one hole of a PROT_NONE
// reservation to another (MREMAP_FIXED), and every byte is verified where
// they land. Each layout runs in a child process of its own, so that no
// earlier thread leaves a CPU in the mm's cpumask.
//
// Clocks: the window is two rdtsc on CPU 0 (lfence on both sides); under
// plain (multi-threaded) TCG the TSC runs at the host's rate: real time.
// Instructions come from other boots, under QEMU's insnplugin.c: the
// window is marked by two marker no-ops just inside the rdtsc pair, and
// the plugin counts each vCPU's instructions between them, leaving out
// busy-wait loops (blocks holding a PAUSE: the caller's wait for the
// acknowledgement) and the helper's own spin loop (marked): the work of
// the operation on each CPU, the caller's and the target's (its interrupt,
// flush and acknowledgement). (Linux does not bring its second CPU up under
// -icount, where the TSC would count instructions.)
//
// Output (stdout):
//   TLB begin cpus=N tsc_mhz=F pid=P
//   TLB layout=one-cpu|same-cpu|other-cpu|all-cpus op=copy|local|shared|remote|batch|unbatched
//       mech=memcpy|munmap|mremap bytes=S pages=P pkts=1|128 calls=C reps=R
//       windows=W tsc=MEDIAN tsc_min=MIN spins=MEDIAN ran=K ipis=X cal=X
//     (medians per timed window over R repetitions; W marked windows,
//     the first an untimed warm-up; ran: windows during which the other
//     thread's spin loop went round (every one's, in all-cpus); ipis,
//     cal: TLB-shootdown and function-call interrupts per window, all
//     CPUs, from /proc/interrupts read just outside each window)
//   SKIP layout=.. reason=..
//   DONE ok | DONE fail <reason>
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define MAX_PAGES 16u
#define BATCH 128u
#define MAX_REPS 1001
#define MAX_SIZES 32
#define MAX_HELPERS 63
#define GAP (2u << 20)
#define CMD_STOP 0x80000000u

enum layout { L_ONE, L_SAME, L_OTHER, L_ALL, L_COUNT };
enum mech { M_MEMCPY, M_MUNMAP, M_MREMAP };
enum op { OP_COPY, OP_SINGLE, OP_BATCH, OP_UNBATCHED };

static const char *const layout_name[L_COUNT] = {"one-cpu", "same-cpu", "other-cpu", "all-cpus"};
static const char *const mech_name[] = {"memcpy", "munmap", "mremap"};

struct opts {
	size_t sizes[MAX_SIZES];
	int nsizes;
	int reps, batch_reps;
	size_t batch_min; // batch rows only for sizes of at least this many bytes
	bool layout[L_COUNT];
	int need_cpus; // fail unless this many CPUs are online (0: none asked)
	int other_cpu;
	int cpus; // online
};

// The second thread: it touches the pages it is told to, then spins in
// user mode (other-cpu) or sleeps on a futex (same-cpu) until the next
// command. Only the main thread writes cmd, base, pages.
struct helper {
	_Alignas(64) volatile uint64_t spins;
	_Alignas(64) volatile uint32_t cmd;
	volatile uint32_t done;
	volatile int cpu;      // sched_getcpu() after its last touch
	volatile uint64_t bad; // pattern bytes that did not match
	uint8_t *volatile base;
	volatile size_t pages;
	volatile uint8_t seed;
	bool spin;
	int want_cpu;
	pthread_t thread;
};

// The state of one layout's child process.
struct ctx {
	const struct opts *o;
	enum layout layout;
	struct helper *h; // nh helpers (none in one-cpu)
	int nh;
	uint8_t *hole[2]; // two holes of BATCH * MAX_PAGES pages
	uint8_t *csrc, *cdst;
	int fails;
};

struct sample {
	uint64_t tsc, spins;
	long tlb, cal; // interrupts during the window (-1: unknown)
};

// insnplugin.c's markers: no-ops that delimit a window, and a spin loop.
#define MARK_START() __asm__ volatile("nopl 0x7ab1c0d0(%%rax)" ::: "memory")
#define MARK_END() __asm__ volatile("nopl 0x7ab1c0d1(%%rax)" ::: "memory")

static inline uint64_t tsc_now(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

static uint8_t pattern(uint8_t seed, size_t page) { return (uint8_t)(seed * 31u + page * 7u + 1u); }

static void fill(uint8_t *p, size_t pages, uint8_t seed)
{
	for (size_t i = 0; i < pages; i++)
		memset(p + i * PAGE, pattern(seed, i), PAGE);
}

// Pages of the `pages` at p that differ from fill(p, pages, seed).
static size_t check(const uint8_t *p, size_t pages, uint8_t seed)
{
	static uint8_t ref[PAGE];
	size_t bad = 0;
	for (size_t i = 0; i < pages; i++) {
		memset(ref, pattern(seed, i), PAGE);
		bad += memcmp(p + i * PAGE, ref, PAGE) != 0;
	}
	return bad;
}

static long futex(volatile uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

// Spins in user mode while h->cmd == seen, counting iterations in h->spins;
// the loop's head is insnplugin.c's spin marker.
static void spin_while(struct helper *h, uint32_t seen)
{
	__asm__ volatile("1:\n\t"
			 "nopl 0x7ab1c0d2(%%rax)\n\t"
			 "incq %0\n\t"
			 "cmpl %1, %2\n\t"
			 "je 1b"
			 : "+m"(h->spins)
			 : "m"(h->cmd), "r"(seen)
			 : "cc", "memory");
}

// Reads one byte of each page (so this CPU's TLB maps them all), checking
// it against the pattern.
static void helper_touch(struct helper *h)
{
	const uint8_t *p = h->base;
	uint64_t bad = 0;
	for (size_t i = 0; i < h->pages; i++)
		bad += p[i * PAGE + (i % PAGE)] != pattern(h->seed, i);
	h->bad += bad;
}

static void *helper_main(void *arg)
{
	struct helper *h = arg;
	if (pin(h->want_cpu))
		h->cpu = -2;
	for (uint32_t seen = 0;;) {
		if (h->spin)
			spin_while(h, seen);
		else
			while (h->cmd == seen)
				futex(&h->cmd, FUTEX_WAIT_PRIVATE, seen);
		seen = h->cmd;
		if (seen & CMD_STOP)
			return NULL;
		helper_touch(h);
		h->cpu = sched_getcpu();
		h->done = seen;
	}
}

// Has the helper touch `pages` pages at p (filled with seed) and returns
// once it is back in its loop: spinning (its counter moved) or asleep.
static void helper_request(struct helper *h, uint8_t *p, size_t pages, uint8_t seed)
{
	h->base = p;
	h->pages = pages;
	h->seed = seed;
	uint32_t c = h->cmd + 1;
	__atomic_store_n(&h->cmd, c, __ATOMIC_SEQ_CST);
	if (!h->spin)
		futex(&h->cmd, FUTEX_WAKE_PRIVATE, 1);
	while (h->done != c)
		h->spin ? __builtin_ia32_pause() : (void)sched_yield();
	if (h->spin) {
		uint64_t s = h->spins;
		while (h->spins == s)
			__builtin_ia32_pause();
	}
}

static int helper_start(struct helper *h, int cpu, bool spin)
{
	memset(h, 0, sizeof *h);
	h->want_cpu = cpu;
	h->spin = spin;
	h->cpu = -1;
	return pthread_create(&h->thread, NULL, helper_main, h);
}

static void helper_stop(struct helper *h)
{
	__atomic_store_n(&h->cmd, CMD_STOP, __ATOMIC_SEQ_CST);
	futex(&h->cmd, FUTEX_WAKE_PRIVATE, 1);
	pthread_join(h->thread, NULL);
}

// The sum over CPUs of the /proc/interrupts line NAME ("TLB", "CAL").
static long irq_count(const char *name)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096], tag[16];
	long sum = -1;
	if (!f)
		return -1;
	snprintf(tag, sizeof tag, "%s:", name);
	while (fgets(line, sizeof line, f)) {
		char *s = line, *end;
		while (*s == ' ')
			s++;
		if (strncmp(s, tag, strlen(tag)))
			continue;
		s += strlen(tag);
		for (sum = 0;; s = end) {
			long v = strtol(s, &end, 10);
			if (end == s)
				break;
			sum += v;
		}
		break;
	}
	fclose(f);
	return sum;
}

// The interrupts NAME counts since `before` (irq_count's), or -1.
static long irq_delta(const char *name, long before)
{
	long now = irq_count(name);
	return now < 0 || before < 0 ? -1 : now - before;
}

// Two holes of BATCH * MAX_PAGES pages inside a PROT_NONE reservation, so
// that every mapping lands at the same place and a munmap never empties a
// page table.
static int reserve(struct ctx *c)
{
	size_t len = (size_t)BATCH * MAX_PAGES * PAGE;
	uint8_t *r = mmap(NULL, 2 * len + 3 * GAP, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return -1;
	c->hole[0] = r + GAP;
	c->hole[1] = r + 2 * GAP + len;
	if (munmap(c->hole[0], len) || munmap(c->hole[1], len))
		return -1;
	c->csrc = malloc(MAX_PAGES * PAGE);
	c->cdst = malloc(MAX_PAGES * PAGE);
	return c->csrc && c->cdst ? 0 : -1;
}

static int populate(uint8_t *p, size_t pages, uint8_t seed)
{
	if (mmap(p, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
		return -1;
	fill(p, pages, seed);
	return 0;
}

// The timed calls: `calls` pieces of `pages` pages from src, unmapped, or
// moved to the same offsets in the hole at dst.
static int remap(enum mech m, uint8_t *src, uint8_t *dst, size_t pages, unsigned calls)
{
	size_t len = pages * PAGE;
	for (unsigned i = 0; i < calls; i++) {
		if (m == M_MUNMAP) {
			if (munmap(src + i * len, len))
				return -1;
		} else if (mremap(src + i * len, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst + i * len) !=
			   dst + i * len) {
			return -1;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void fail(struct ctx *c, const char *what, size_t bytes)
{
	printf("ERROR layout=%s bytes=%zu %s (errno %d)\n", layout_name[c->layout], bytes, what, errno);
	fflush(stdout);
	c->fails++;
}

// One timed copy of `bytes` from a flushed source; verified.
static struct sample copy_once(struct ctx *c, size_t bytes, uint8_t seed)
{
	memset(c->csrc, seed, bytes);
	memset(c->cdst, (uint8_t)~seed, bytes);
	for (size_t i = 0; i < bytes; i += 64)
		__builtin_ia32_clflush(c->csrc + i);
	__builtin_ia32_mfence();
	uint64_t t0 = tsc_now();
	MARK_START();
	memcpy(c->cdst, c->csrc, bytes);
	MARK_END();
	uint64_t t = tsc_now() - t0;
	if (memcmp(c->cdst, c->csrc, bytes))
		fail(c, "copy: destination differs", bytes);
	return (struct sample){.tsc = t, .tlb = 0, .cal = 0};
}

// One timed window of op on `pages` pages per packet: the mapping made and
// filled, the helper's touch, then munmap or mremap. mremap moves the
// pages from hole[*side] to the other hole (*side flips); every byte is
// checked there.
static struct sample remap_once(struct ctx *c, enum mech m, enum op op, size_t pages, uint8_t seed, int *side)
{
	size_t pkts = op == OP_SINGLE ? 1 : BATCH, total = pkts * pages;
	unsigned calls = op == OP_UNBATCHED ? BATCH : 1;
	uint8_t *src = c->hole[*side], *dst = c->hole[!*side];
	struct sample s = {0};
	if (populate(src, total, seed)) {
		fail(c, "mmap", pages * PAGE);
		return s;
	}
	for (int k = 0; k < c->nh; k++)
		helper_request(&c->h[k], src, total, seed);
	long tlb = irq_count("TLB"), cal = irq_count("CAL");
	uint64_t s0[MAX_HELPERS], t0 = tsc_now();
	for (int k = 0; k < c->nh; k++)
		s0[k] = c->h[k].spins;
	MARK_START();
	int e = remap(m, src, dst, total / calls, calls);
	MARK_END();
	uint64_t t1 = tsc_now(), ran = UINT64_MAX;
	for (int k = 0; k < c->nh; k++) // the least any helper went round
		ran = c->h[k].spins - s0[k] < ran ? c->h[k].spins - s0[k] : ran;
	s.tlb = irq_delta("TLB", tlb);
	s.cal = irq_delta("CAL", cal);
	if (e)
		fail(c, mech_name[m], pages * PAGE);
	s.tsc = t1 - t0;
	s.spins = c->nh ? ran : 0;
	if (m == M_MREMAP && !e) {
		if (check(dst, total, seed))
			fail(c, "mremap: moved bytes differ", pages * PAGE);
		if (munmap(dst, total * PAGE)) // back to a hole
			fail(c, "munmap", pages * PAGE);
		*side = !*side;
	}
	return s;
}

static void report(struct ctx *c, enum op op, enum mech m, size_t bytes, struct sample *v, int reps)
{
	static const char *const op_name[] = {"copy", "?", "batch", "unbatched"};
	static const char *const single[L_COUNT] = {"local", "shared", "remote", "remote"};
	uint64_t tsc[MAX_REPS], spins[MAX_REPS];
	int ran = 0;
	long tlb = 0, cal = 0;
	for (int i = 0; i < reps; i++) {
		tsc[i] = v[i].tsc;
		spins[i] = v[i].spins;
		ran += v[i].spins > 0;
		tlb = tlb < 0 || v[i].tlb < 0 ? -1 : tlb + v[i].tlb;
		cal = cal < 0 || v[i].cal < 0 ? -1 : cal + v[i].cal;
	}
	qsort(tsc, (size_t)reps, sizeof *tsc, cmp_u64);
	qsort(spins, (size_t)reps, sizeof *spins, cmp_u64);
	size_t pages = (bytes + PAGE - 1) / PAGE;
	printf("TLB layout=%s op=%s mech=%s bytes=%zu pages=%zu pkts=%u calls=%u reps=%d windows=%d tsc=%llu "
	       "tsc_min=%llu spins=%llu ran=%d ipis=%.3f cal=%.3f\n",
	       layout_name[c->layout], op == OP_SINGLE ? single[c->layout] : op_name[op], mech_name[m], bytes, pages,
	       op == OP_SINGLE || op == OP_COPY ? 1 : BATCH, op == OP_UNBATCHED ? BATCH : 1, reps, reps + 1,
	       (unsigned long long)tsc[reps / 2], (unsigned long long)tsc[0],
	       (unsigned long long)spins[reps / 2], ran, tlb < 0 ? -1.0 : (double)tlb / reps,
	       cal < 0 ? -1.0 : (double)cal / reps);
	fflush(stdout);
}

// Times op (mech m) at `bytes` over `reps` windows, after one untimed
// warm-up, and prints its line.
static void measure(struct ctx *c, enum op op, enum mech m, size_t bytes, int reps)
{
	static struct sample v[MAX_REPS];
	size_t pages = (bytes + PAGE - 1) / PAGE;
	int side = 0;
	for (int i = -1; i < reps; i++) {
		uint8_t seed = (uint8_t)(i + 2);
		struct sample s = op == OP_COPY ? copy_once(c, bytes, seed) : remap_once(c, m, op, pages, seed, &side);
		if (i >= 0)
			v[i] = s;
		if (sched_getcpu() != 0)
			fail(c, "main thread left CPU 0", bytes);
	}
	report(c, op, m, bytes, v, reps);
}

// Every operation of one layout, size by size.
static void run_ops(struct ctx *c)
{
	const struct opts *o = c->o;
	for (int i = 0; i < o->nsizes; i++) {
		size_t b = o->sizes[i];
		if (c->layout == L_ONE)
			measure(c, OP_COPY, M_MEMCPY, b, o->reps);
		for (enum mech m = M_MUNMAP; m <= M_MREMAP; m++) {
			measure(c, OP_SINGLE, m, b, o->reps);
			if (c->layout < L_OTHER || b < o->batch_min)
				continue;
			measure(c, OP_BATCH, m, b, o->batch_reps);
			measure(c, OP_UNBATCHED, m, b, o->batch_reps);
		}
	}
}

// The CPU of layout l's helper k.
static int helper_cpu(const struct opts *o, enum layout l, int k)
{
	return l == L_SAME ? 0 : l == L_OTHER ? o->other_cpu : k + 1;
}

// Starts layout l's helpers (none, one, or one on each CPU but 0) and
// checks where each runs after a first touch; 0 or -1.
static int helpers_start(struct ctx *c, struct helper *h)
{
	enum layout l = c->layout;
	int n = l == L_ONE ? 0 : l == L_ALL ? c->o->cpus - 1 : 1;
	c->h = h;
	for (; c->nh < n; c->nh++)
		if (helper_start(&h[c->nh], helper_cpu(c->o, l, c->nh), l >= L_OTHER))
			return -1;
	if (!n)
		return 0;
	populate(c->hole[0], 1, 1);
	for (int k = 0; k < n; k++) {
		helper_request(&h[k], c->hole[0], 1, 1);
		printf("TLB layout=%s main_cpu=%d helper=%d helper_cpu=%d\n", layout_name[l], sched_getcpu(), k, h[k].cpu);
		if (h[k].cpu != helper_cpu(c->o, l, k))
			return -1;
	}
	munmap(c->hole[0], PAGE);
	return 0;
}

// Stops the helpers, failing c if one moved or read a wrong byte.
static void helpers_stop(struct ctx *c)
{
	for (int k = 0; k < c->nh; k++) {
		if (c->h[k].cpu != helper_cpu(c->o, c->layout, k))
			fail(c, "a second thread left its CPU", 0);
		if (c->h[k].bad)
			fail(c, "a second thread read bytes that differ", 0);
		helper_stop(&c->h[k]);
	}
}

// The child process of one layout: pinned to CPU 0, its helpers started
// and checked; returns the exit status.
static int layout_child(const struct opts *o, enum layout l)
{
	static struct helper h[MAX_HELPERS];
	struct ctx c = {.o = o, .layout = l};
	if (pin(0) || sched_getcpu() != 0) {
		printf("ERROR layout=%s cannot run on CPU 0\n", layout_name[l]);
		return 1;
	}
	if (reserve(&c)) {
		printf("ERROR layout=%s cannot reserve memory\n", layout_name[l]);
		return 1;
	}
	if (helpers_start(&c, h)) {
		printf("ERROR layout=%s a second thread did not start on its CPU\n", layout_name[l]);
		helpers_stop(&c);
		return 1;
	}
	run_ops(&c);
	helpers_stop(&c);
	return c.fails ? 1 : 0;
}

// The TSC rate against CLOCK_MONOTONIC over 100 ms (1000 under -icount
// shift=0, where both count instructions).
static double tsc_mhz(void)
{
	uint64_t n0 = now_ns(), t0 = tsc_now();
	while (now_ns() - n0 < 100000000ull)
		;
	return (double)(tsc_now() - t0) * 1000.0 / (double)(now_ns() - n0);
}

// Parses "64,128,4096" (',' or '+' between numbers) into o->sizes.
static int parse_sizes(struct opts *o, const char *s)
{
	o->nsizes = 0;
	for (char *end; *s; s = end + (*end != 0)) {
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || v == 0 || v > MAX_PAGES * PAGE || o->nsizes == MAX_SIZES || (*end && *end != ',' && *end != '+'))
			return -1;
		o->sizes[o->nsizes++] = v;
	}
	return o->nsizes ? 0 : -1;
}

static int parse_layouts(struct opts *o, const char *s)
{
	memset(o->layout, 0, sizeof o->layout);
	for (int l = 0; l < L_COUNT; l++) {
		const char *p = strstr(s, layout_name[l]);
		o->layout[l] = p != NULL;
	}
	return o->layout[L_ONE] || o->layout[L_SAME] || o->layout[L_OTHER] || o->layout[L_ALL] ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: tlbbench [--sizes 64,...,65536] [--reps N] [--batch-reps N] [--batch-min BYTES]\n"
			"                [--layouts one-cpu,same-cpu,other-cpu,all-cpus] [--other-cpu N] [--need-cpus N]\n"
			"                [--selfcheck]\n");
	exit(2);
}

static void parse(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"sizes", 1, 0, 's'},     {"reps", 1, 0, 'r'},	    {"batch-reps", 1, 0, 'b'},
		{"batch-min", 1, 0, 'm'}, {"layouts", 1, 0, 'l'},   {"other-cpu", 1, 0, 'o'},
		{"need-cpus", 1, 0, 'n'}, {"selfcheck", 0, 0, 'c'}, {0, 0, 0, 0},
	};
	parse_sizes(o, "64,128,256,512,1024,2048,4096,8192,16384,32768,65536");
	o->reps = 51;
	o->batch_reps = 11;
	o->batch_min = PAGE;
	o->layout[L_ONE] = o->layout[L_SAME] = o->layout[L_OTHER] = o->layout[L_ALL] = true;
	o->other_cpu = 1;
	for (int ch; (ch = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
		switch (ch) {
		case 's': if (parse_sizes(o, optarg)) usage(); break;
		case 'r': o->reps = atoi(optarg); break;
		case 'b': o->batch_reps = atoi(optarg); break;
		case 'm': o->batch_min = strtoul(optarg, NULL, 10); break;
		case 'l': if (parse_layouts(o, optarg)) usage(); break;
		case 'o': o->other_cpu = atoi(optarg); break;
		case 'n': o->need_cpus = atoi(optarg); break;
		case 'c': // the build's check: every operation once, small
			parse_sizes(o, "64,4096,8192");
			o->reps = o->batch_reps = 3;
			break;
		default: usage();
		}
	}
	if (o->reps < 1 || o->reps > MAX_REPS || o->batch_reps < 1 || o->batch_reps > MAX_REPS)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	parse(&o, argc, argv);
	int cpus = o.cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	printf("TLB begin cpus=%d tsc_mhz=%.1f pid=%d\n", cpus, tsc_mhz(), getpid());
	fflush(stdout);
	if (o.need_cpus && cpus < o.need_cpus) {
		printf("DONE fail %d CPUs online, %d asked\n", cpus, o.need_cpus);
		return 1;
	}
	int bad = 0;
	for (int l = 0; l < L_COUNT; l++) {
		if (!o.layout[l])
			continue;
		if ((l == L_OTHER && o.other_cpu >= cpus) || (l == L_ALL && (cpus < 3 || cpus > MAX_HELPERS + 1))) {
			printf("SKIP layout=%s reason=%d-cpus\n", layout_name[l], cpus);
			continue;
		}
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			int rc = layout_child(&o, (enum layout)l);
			fflush(stdout);
			_exit(rc);
		}
		int st = 0;
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("ERROR layout=%s child failed (status %d)\n", layout_name[l], st);
			bad = 1;
		}
	}
	printf(bad ? "DONE fail see ERROR lines\n" : "DONE ok\n");
	return bad;
}
