// make bench-smp: what an exchange costs when the space it remaps is live
// on another CPU (a TLB shootdown), per page count, beside a local exchange
// and a cold copy. This process runs on CPU 0; a holder child, pinned to the
// last CPU, has region A attached and spins in user mode touching every page
// of it, so its CPU holds A's translations all along. Per page count N:
//   local     exchange_pmem of N pages between two regions only this
//             process has attached (no other CPU holds them: no IPI)
//   remote    the same between A and B: one request, one IPI
//   per_page  N exchanges of one page of A each: N IPIs (unbatched)
//   copy      N pages copied from a cold source (clflush'ed) into a cold
//             destination, as the kernel would copy a received frame
// and once, the null system call (getpid): what any call costs to enter
// and leave the kernel, which the in-kernel copy it is set against does not
// pay (SMPNULL line).
// Times are TSC ticks per call (under -icount shift=0 the TSC counts
// instructions: the critical path's, the other CPU's answer included);
// each figure is the median of reps= calls. One line per N:
//   SMPX pages=N local=.. remote=.. per_page=.. copy=.. ipis_remote=.. ipis_per_page=..
//        remote_wait=.. remote_answer=.. per_page_wait=.. per_page_answer=..
// The _wait figures are the part of a call spent waiting for the other
// CPU's acknowledgement, the _answer ones what its answers cost (means over
// the calls, from the kernel's counters): under -icount, where emulated
// CPUs take turns, a wait counts the other CPU's whole turn, so the work on
// the critical path is the call minus its wait plus the answer.
#include <ulib.h>

#define PG 4096ul
#define MAXP 128
#define A_ADDR 0x50000000000ul
#define B_ADDR 0x51000000000ul
#define L1_ADDR 0x52000000000ul
#define L2_ADDR 0x53000000000ul
#define M_ADDR 0x54000000000ul
#define H_ADDR 0x55000000000ul
#define MAXREPS 101

static void clflush_range(const void *p, unsigned long n)
{
	for (unsigned long o = 0; o < n; o += 64)
		__asm__ volatile("clflush (%0)" ::"r"((const char *)p + o) : "memory");
	__asm__ volatile("mfence" ::: "memory");
}

static uint64_t median(uint64_t *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			uint64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

// [0] stop, [1] holder ready, [2] its CPU, [3] its sweeps over A.
static int holder(long a, long m)
{
	attach_granted(m, M_ADDR);
	attach_granted(a, H_ADDR);
	volatile uint64_t *mb = (volatile uint64_t *)M_ADDR;
	volatile uint64_t *h = (volatile uint64_t *)H_ADDR;
	struct sysinfo si;
	sysinfo(&si);
	mb[2] = si.cpu;
	mb[1] = 1;
	uint64_t sum = 0;
	while (!mb[0]) {
		for (unsigned long p = 0; p < MAXP; p++)
			sum += h[p * PG / 8];
		mb[3]++;
	}
	return (int)(sum & 0);
}

struct tlbc {
	uint64_t ipis, wait, answer, answers;
};

static struct tlbc tlbc(void)
{
	struct sysinfo si;
	sysinfo(&si);
	return (struct tlbc){ si.tlb_ipis, si.tlb_wait_tsc, si.tlb_answer_tsc, si.tlb_answers };
}

int main(int argc, char **argv)
{
	if (!strcmp(arg_get(argc, argv, "role", "main"), "holder"))
		return holder(arg_long(argc, argv, "vr", 0), arg_long(argc, argv, "mb", 0));
	int reps = (int)arg_long(argc, argv, "reps", 31);
	if (reps < 1 || reps > MAXREPS)
		reps = 31;
	struct sysinfo si;
	sysinfo(&si);
	unsigned long last = si.ncpu - 1;
	if (setaffinity(0, 1) != 0)
		return 1;
	long a = create_vr(MAXP * PG, VR_MEM_ALL, -1), b = create_vr(MAXP * PG, VR_MEM_ALL, -1);
	long l1 = create_vr(MAXP * PG, VR_MEM_ALL, -1), l2 = create_vr(MAXP * PG, VR_MEM_ALL, -1);
	long m = create_vr(PG, VR_MEM_ALL, -1);
	if (a <= 0 || b <= 0 || l1 <= 0 || l2 <= 0 || m <= 0 || attach_vr(a, 0, A_ADDR) <= 0 ||
	    attach_vr(b, 0, B_ADDR) <= 0 || attach_vr(l1, 0, L1_ADDR) <= 0 ||
	    attach_vr(l2, 0, L2_ADDR) <= 0 || attach_vr(m, 0, M_ADDR) <= 0)
		return 2;
	volatile uint64_t *mb = (volatile uint64_t *)M_ADDR;
	char args[96];
	fmt_snprintf(args, sizeof(args), "role=holder vr=%ld mb=%ld", a, m);
	long hp = si.ncpu > 1 ? spawn("smpbench", args, PRIO_DEFAULT) : -1;
	if (si.ncpu > 1) {
		if (hp <= 0 || setaffinity(hp, 1ul << last) != 0 ||
		    ctrl_vr(m, VR_OP_GRANT, (unsigned long)hp, 0, 0, 0) != 0 ||
		    ctrl_vr(a, VR_OP_GRANT, (unsigned long)hp, 0, 0, 0) != 0)
			return 3;
		// Sleep, not yield: under -icount the emulated CPUs take turns, and
		// a loop of system calls would mostly be preempted holding the
		// kernel lock the holder needs.
		while (!mb[1])
			sleep(1000);
	}
	printf("smpbench: %lu CPUs, holder on CPU %lu, %d reps, icount=%lu\n", si.ncpu,
	       si.ncpu > 1 ? (unsigned long)mb[2] : 0ul, reps, si.icount);
	static uint64_t t[MAXREPS];
	for (int r = 0; r < reps; r++) {
		uint64_t s = rdtsc();
		getpid();
		t[r] = rdtsc() - s;
	}
	printf("SMPNULL syscall=%lu\n", median(t, reps));
	for (unsigned long n = 1; n <= MAXP; n *= 2) {
		uint64_t local, remote, per_page, copy;
		struct tlbc i0, i1, i2;
		for (int r = 0; r < reps; r++) {
			uint64_t s = rdtsc();
			exchange_pmem(l1, l2, 0, 0, n);
			t[r] = rdtsc() - s;
		}
		local = median(t, reps);
		i0 = tlbc();
		for (int r = 0; r < reps; r++) {
			uint64_t s = rdtsc();
			exchange_pmem(a, b, 0, 0, n);
			t[r] = rdtsc() - s;
		}
		remote = median(t, reps);
		i1 = tlbc();
		for (int r = 0; r < reps; r++) {
			uint64_t s = rdtsc();
			for (unsigned long p = 0; p < n; p++)
				exchange_pmem(a, b, p * PG, p * PG, 1);
			t[r] = rdtsc() - s;
		}
		per_page = median(t, reps);
		i2 = tlbc();
		for (int r = 0; r < reps; r++) {
			clflush_range((void *)L1_ADDR, n * PG);
			clflush_range((void *)L2_ADDR, n * PG);
			uint64_t s = rdtsc();
			memcpy((void *)L2_ADDR, (const void *)L1_ADDR, n * PG);
			t[r] = rdtsc() - s;
		}
		copy = median(t, reps);
		unsigned long R = (unsigned long)reps;
		printf("SMPX pages=%lu local=%lu remote=%lu per_page=%lu copy=%lu ipis_remote=%lu "
		       "ipis_per_page=%lu remote_wait=%lu remote_answer=%lu per_page_wait=%lu "
		       "per_page_answer=%lu\n", n, local, remote, per_page, copy,
		       (i1.ipis - i0.ipis) / R, (i2.ipis - i1.ipis) / R, (i1.wait - i0.wait) / R,
		       (i1.answer - i0.answer) / R, (i2.wait - i1.wait) / R,
		       (i2.answer - i1.answer) / R);
	}
	mb[0] = 1;
	int st = 0;
	if (hp > 0 && wait(hp, &st) != hp)
		return 4;
	sysinfo(&si);
	printf("smpbench: done, sweeps %lu, tlb ipis %lu requests %lu deferred %lu\n",
	       (unsigned long)mb[3], si.tlb_ipis, si.tlb_requests, si.tlb_deferred);
	return st;
}
