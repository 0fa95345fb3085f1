// System-call fuzzer: n= calls (default 20000) with random identifiers,
// offsets, sizes and pointers across every resource call, seeded by seed=.
// The kernel must stay up, every call must return a sane value, and after
// the run (all resources deleted) frames and resources return to their
// counts before it.
#include <utest.h>

#define NLIVE 16
#define PG 4096ul
#define AREA 0x40000000000ul // attachments land in [AREA, AREA + 64 GiB)

static uint64_t rng;
static long vrs[NLIVE], vus[NLIVE], dead[NLIVE];
static uint64_t calls, ok_calls, errs[E_NERR + 1], weird;
static char buf[8192];

static uint64_t r(uint64_t n) { return n ? rand64(&rng) % n : 0; }

static long pick(long *arr)
{
	switch (r(6)) {
	case 0: return dead[r(NLIVE)];
	case 1: return vus[r(NLIVE)];                 // right number, other kind
	case 2: return (long)rand64(&rng);
	case 3: return (long)r(1 << 30);
	default: return arr[r(NLIVE)];
	}
}

static uint64_t off(void)
{
	switch (r(8)) {
	case 0: return rand64(&rng);
	case 1: return r(1 << 20);                    // unaligned
	case 2: return ~0ul - r(3) * PG;              // overflow bait
	default: return r(16) * PG;
	}
}

static uint64_t ptr(void)
{
	static const uint64_t bad[] = { 0, 0x100000, 0x7ff000000000ul, 0x8000000000000000ul,
					~0ul, 0x10000000000ul /* user text: read-only */ };
	switch (r(4)) {
	case 0: return bad[r(sizeof(bad) / sizeof(bad[0]))];
	case 1: return (uint64_t)buf + r(sizeof(buf) - 512); // room for any reply
	case 2: return AREA + r(64) * PG + r(PG);
	default: return rand64(&rng);
	}
}

static void note(long ret)
{
	calls++;
	if (ret >= 0)
		ok_calls++;
	else if (-ret < E_NERR)
		errs[-ret]++;
	else
		weird++; // an error code that does not exist
}

static void remember(long *arr, long id)
{
	int i = (int)r(NLIVE);
	if (arr[i] > 0) {
		dead[r(NLIVE)] = arr[i];
		note(arr == vrs ? delete_vr(arr[i]) : detach_vr(arr[i]));
	}
	arr[i] = id;
}

static void one_call(void)
{
	long ret;
	switch (r(14)) {
	case 0: {
		uint64_t sizes[] = { 0, 1, PG, 3 * PG, 16 * PG, 1ul << 40, rand64(&rng) };
		long disk[] = { -1, 0, (long)(r(64) * PG), (long)r(1 << 20), -5 };
		// mem 0..3: VR_MEM_NONE, VR_MEM_ALL and two kinds that do not exist
		ret = create_vr(sizes[r(7)], (int)r(4), disk[r(5)]);
		note(ret);
		if (ret > 0)
			remember(vrs, ret);
		return;
	}
	case 1: note(delete_vr(pick(vrs))); return;
	case 2: {
		uint64_t ops[] = { VR_OP_SIZE, VR_OP_PADDR, VR_OP_GRANT, VR_OP_ALLOC, VR_OP_FREE,
				   VR_OP_PIN, VR_OP_UNPIN, VR_OP_EXCHANGE, rand64(&rng) };
		note(ctrl_vr(pick(vrs), ops[r(9)], off(), off(), (uint64_t)pick(vrs), r(20)));
		return;
	}
	case 3:
		ret = attach_vr(pick(vrs), r(4) ? 0 : (long)rand64(&rng), r(8) ? AREA + r(64) * PG * 16 : ptr());
		note(ret);
		if (ret > 0)
			remember(vus, ret);
		return;
	case 4: note(detach_vr(pick(vus))); return;
	case 5: note(exchange_pmem(pick(vrs), pick(vrs), off(), off(), r(4) ? r(8) : rand64(&rng))); return;
	case 6: note(read_vr(pick(vrs), off(), r(4) * PG)); return;
	case 7: note(write_vr(pick(vrs), off(), r(4) * PG)); return;
	case 8: note(write((void *)ptr(), r(4) ? r(64) : rand64(&rng))); return;
	case 9: note(sysinfo((struct sysinfo *)ptr())); return;
	case 10: note(wait((long)r(4) - 1 + (r(2) ? 0 : 100000), (int *)ptr())); return;
	case 11: note(setprio((long)r(3) ? 0 : (long)rand64(&rng), (int)r(10) - 1)); setprio(0, PRIO_DEFAULT); return;
	case 12: {
		long nr = 25 + (long)r(1000);
		__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(rand64(&rng)), "S"(ptr())
				 : "rcx", "r11", "memory");
		note(ret);
		return;
	}
	default: note(r(2) ? getvs() : (long)time()); return;
	}
}

// Touches every attached page that should be mapped: it must not fault.
static void cleanup(void)
{
	for (int i = 0; i < NLIVE; i++) {
		if (vus[i] > 0)
			detach_vr(vus[i]);
		if (vrs[i] > 0)
			delete_vr(vrs[i]);
		vus[i] = vrs[i] = 0;
	}
}

int main(int argc, char **argv)
{
	long n = arg_long(argc, argv, "n", 20000);
	rng = (uint64_t)arg_long(argc, argv, "seed", 1) * 0x9e3779b97f4a7c15ull + 1;
	memset(buf, '.', sizeof(buf)); // what valid writes print: keep the log readable
	struct sysinfo s0, s1;
	sysinfo(&s0);
	long t0 = time();
	for (long i = 0; i < n; i++)
		one_call();
	long dt = time() - t0;
	cleanup();
	sysinfo(&s1);
	printf("\nfuzz: %lu calls in %ld ms (%lu ok), errors:", calls, dt / 1000, ok_calls);
	for (int e = 1; e < E_NERR; e++)
		if (errs[e])
			printf(" %s=%lu", err_name(e), errs[e]);
	printf("\n");
	CHECK("every call ran", calls >= (uint64_t)n);
	CHECK_EQ("no unknown error codes", weird, 0);
	CHECK("most calls were refused, some accepted", ok_calls > 0 && ok_calls < calls);
	CHECK_EQ("frames back after the run", s1.frames_free, s0.frames_free);
	CHECK_EQ("regions back after the run", s1.vregions, s0.vregions);
	CHECK_EQ("attachments back after the run", s1.attachments, s0.attachments);
	return utest_done("fuzz");
}
