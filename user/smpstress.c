// Many CPUs at once (make test-smp). role=main (the default):
//  - a TLB-shootdown check: region R is attached in this process (pinned to
//    CPU 0) and in a reader child (pinned to the last CPU) that spins in user
//    mode reading it. Each round this process fills its region S with the
//    round's pattern, exchanges S's frames into R, and posts the round in a
//    shared mailbox; the reader, which never left its CPU, must then read
//    the new pattern through R. A stale TLB entry on its CPU (no shootdown,
//    or one that came late) shows the previous round's frames.
//  - churn beside it: two children per CPU, each pinned to one, create,
//    fill, exchange, check and delete regions, attach and detach them, and
//    start and reap children of their own, for iters= rounds.
//  - with io=1 mac0=MAC mac1=MAC (two NICs joined to each other): a reliable
//    stream (user/stream.c, rel=1) from a client on CPU 0 through NIC 0 to
//    a server on the last CPU through NIC 1, every packet checked, beside
//    the rest.
// Everything is bounded by counts, not time. The kernel checks at exit that
// every frame came back; its lock checker fails the boot on any violation.
#include <ulib.h>
#include <utest.h>

#define PG 4096ul
#define R_ADDR 0x40000000000ul
#define S_ADDR 0x41000000000ul
#define M_ADDR 0x42000000000ul
#define C_ADDR 0x43000000000ul
#define R_PAGES 4
#define SPIN_YIELD 200000 // reader spins this many times between yields

static uint64_t pattern(uint64_t round, uint64_t page) { return round * 0x9e3779b97f4a7c15ull ^ page; }

// The mailbox page: [0] round posted, [1] round checked, [2] bad pages seen,
// [3] reader ready, [4] the reader's CPU.
static int reader(long r, long m, long rounds)
{
	attach_granted(m, M_ADDR);
	attach_granted(r, R_ADDR);
	volatile uint64_t *mb = (volatile uint64_t *)M_ADDR;
	volatile uint64_t *rp = (volatile uint64_t *)R_ADDR;
	struct sysinfo si;
	sysinfo(&si);
	mb[4] = si.cpu;
	uint64_t sum = 0;
	for (int p = 0; p < R_PAGES; p++) // TLB entries for every page of R
		sum += rp[p * PG / 8];
	mb[3] = 1 + (sum & 0);
	for (long g = 1; g <= rounds; g++) {
		for (long k = 0; mb[0] < (uint64_t)g; k++)
			if (k % SPIN_YIELD == SPIN_YIELD - 1)
				yield();
		for (int p = 0; p < R_PAGES; p++)
			if (rp[p * PG / 8] != pattern((uint64_t)g, (uint64_t)p) ||
			    rp[p * PG / 8 + PG / 8 - 1] != pattern((uint64_t)g, (uint64_t)p))
				mb[2]++;
		mb[1] = (uint64_t)g;
	}
	return 0;
}

// One churn child: regions made, exchanged, checked and deleted; children.
static int churn(long iters, uint64_t seed)
{
	uint64_t rs = seed | 1;
	int bad = 0;
	for (long i = 0; i < iters && !bad; i++) {
		unsigned long n = 1 + rand64(&rs) % 8;
		long a = create_vr(n * PG, VR_MEM_ALL, -1), b = create_vr(n * PG, VR_MEM_ALL, -1);
		long va = a > 0 ? attach_vr(a, 0, C_ADDR) : -1;
		long vb = b > 0 ? attach_vr(b, 0, C_ADDR + 64 * PG) : -1;
		if (a <= 0 || b <= 0 || va <= 0 || vb <= 0)
			return 10;
		uint64_t *pa = (uint64_t *)C_ADDR, *pb = (uint64_t *)(C_ADDR + 64 * PG);
		for (unsigned long p = 0; p < n; p++) {
			pa[p * PG / 8] = seed + i * 16 + p;
			pb[p * PG / 8] = ~(seed + i * 16 + p);
		}
		if (exchange_pmem(a, b, 0, 0, n) != 0)
			return 11;
		for (unsigned long p = 0; p < n; p++)
			bad |= pa[p * PG / 8] != ~(seed + i * 16 + p) || pb[p * PG / 8] != seed + i * 16 + p;
		if (detach_vr(va) != 0 || detach_vr(vb) != 0 || delete_vr(a) != 0 || delete_vr(b) != 0)
			return 12;
		if (i % 8 == 7) {
			long c = spawn("spin", "loops=2000", PRIO_DEFAULT);
			int st;
			if (c <= 0 || wait(c, &st) != c)
				return 13;
		}
	}
	return bad ? 14 : 0;
}

int main(int argc, char **argv)
{
	const char *role = arg_get(argc, argv, "role", "main");
	long rounds = arg_long(argc, argv, "rounds", 200), iters = arg_long(argc, argv, "iters", 64);
	if (!strcmp(role, "reader"))
		return reader(arg_long(argc, argv, "vr", 0), arg_long(argc, argv, "mb", 0), rounds);
	if (!strcmp(role, "churn"))
		return churn(iters, (uint64_t)arg_long(argc, argv, "seed", 1));

	struct sysinfo si;
	sysinfo(&si);
	unsigned long ncpu = si.ncpu, last = ncpu - 1;
	printf("smpstress: %lu CPUs, %ld rounds, %ld churn iterations each\n", ncpu, rounds, iters);
	CHECK_EQ("main pinned to CPU 0", setaffinity(0, 1), 0);
	long r = create_vr(R_PAGES * PG, VR_MEM_ALL, -1), s = create_vr(R_PAGES * PG, VR_MEM_ALL, -1);
	long m = create_vr(PG, VR_MEM_ALL, -1);
	CHECK("regions made", r > 0 && s > 0 && m > 0);
	CHECK("attached", attach_vr(r, 0, R_ADDR) > 0 && attach_vr(s, 0, S_ADDR) > 0 &&
				  attach_vr(m, 0, M_ADDR) > 0);
	volatile uint64_t *mb = (volatile uint64_t *)M_ADDR;
	uint64_t *sp = (uint64_t *)S_ADDR;
	char args[96];
	fmt_snprintf(args, sizeof(args), "role=reader vr=%ld mb=%ld rounds=%ld", r, m, rounds);
	long rd = spawn("smpstress", args, PRIO_DEFAULT);
	CHECK("reader started", rd > 0);
	CHECK_EQ("reader pinned to the last CPU", setaffinity(rd, 1ul << last), 0);
	CHECK("granted", ctrl_vr(m, VR_OP_GRANT, (unsigned long)rd, 0, 0, 0) == 0 &&
				 ctrl_vr(r, VR_OP_GRANT, (unsigned long)rd, 0, 0, 0) == 0);
	long kids[16];
	int nk = 0;
	for (unsigned long c = 0; c < ncpu && nk < 16; c++)
		for (int k = 0; k < 2; k++) {
			fmt_snprintf(args, sizeof(args), "role=churn iters=%ld seed=%lu", iters, c * 2 + k + 1);
			long pid = spawn("smpstress", args, PRIO_DEFAULT);
			if (pid > 0 && setaffinity(pid, 1ul << c) == 0)
				kids[nk++] = pid;
		}
	CHECK_EQ("churn children started", nk, (int)(2 * ncpu));
	long srv = 0, cli = 0;
	if (arg_long(argc, argv, "io", 0)) {
		fmt_snprintf(args, sizeof(args), "role=server nic=1 rel=1 alone=0 count=%ld size=4096 peer=%s",
			     rounds * 8, arg_get(argc, argv, "mac0", ""));
		srv = spawn("stream", args, PRIO_DEFAULT);
		// rxlock=fine: the reliable client's sends go without the kernel lock.
		fmt_snprintf(args, sizeof(args), "role=client nic=0 rel=1 alone=0 count=%ld size=4096 peer=%s%s",
			     rounds * 8, arg_get(argc, argv, "mac1", ""),
			     !strcmp(arg_get(argc, argv, "rxlock", ""), "fine") ? " unlocked=1" : "");
		cli = spawn("stream", args, PRIO_DEFAULT);
		CHECK("stream server and client started, on two CPUs",
		      srv > 0 && cli > 0 && setaffinity(srv, 1ul << last) == 0 && setaffinity(cli, 1) == 0);
	}
	while (!mb[3])
		yield();
	for (long g = 1; g <= rounds; g++) {
		for (int p = 0; p < R_PAGES; p++) {
			sp[p * PG / 8] = pattern((uint64_t)g, (uint64_t)p);
			sp[p * PG / 8 + PG / 8 - 1] = pattern((uint64_t)g, (uint64_t)p);
		}
		if (exchange_pmem(r, s, 0, 0, R_PAGES) != 0)
			break;
		mb[0] = (uint64_t)g;
		while (mb[1] < (uint64_t)g)
			yield();
	}
	CHECK_EQ("every round checked", mb[1], (uint64_t)rounds);
	CHECK_EQ("the reader saw every new frame (no stale TLB entry)", mb[2], 0ul);
	CHECK("the reader ran on another CPU", ncpu == 1 || mb[4] == last);
	int st, bad = 0;
	CHECK_EQ("reader reaped", wait(rd, &st), rd);
	bad |= st;
	for (int k = 0; k < nk; k++) {
		long w = wait(kids[k], &st);
		if (w != kids[k] || st != 0) {
			printf("smpstress: churn child %ld status %d\n", kids[k], st);
			bad = 1;
		}
	}
	if (srv > 0 && cli > 0) {
		int ss = -1, cs = -1;
		CHECK("stream server and client exited 0",
		      wait(srv, &ss) == srv && wait(cli, &cs) == cli && ss == 0 && cs == 0);
	}
	CHECK_EQ("every child exited 0", bad, 0);
	CHECK_EQ("regions deleted", delete_vr(r) | delete_vr(s) | delete_vr(m), 0);
	sysinfo(&si);
	printf("smpstress: done, %lu syscalls\n", si.syscalls);
	return utest_done("smpstress");
}
