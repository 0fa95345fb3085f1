// Processes and priorities: spawn, wait, exit status, getpid, priority order.
#include <utest.h>

static void test_spawn_wait(void)
{
	long pid = spawn("hello", "from=proc_test", PRIO_DEFAULT);
	CHECK("spawn returns a pid", pid > 0 && pid != getpid());
	int st = -1;
	CHECK_EQ("wait returns that pid", wait(pid, &st), pid);
	CHECK_EQ("exit status 0 seen", st, 0);
	CHECK_EQ("wait with no children", wait(-1, &st), -E_CHILD);
	CHECK_EQ("spawn unknown program", spawn("no_such_prog", "", PRIO_DEFAULT), -E_NOENT);
	CHECK_EQ("spawn bad priority", spawn("hello", "", 99), -E_INVAL);
	CHECK_EQ("wait for a non-child", wait(1, &st), -E_CHILD);
}

static void test_exit_status(void)
{
	long pid = spawn("spin", "loops=10", PRIO_DEFAULT);
	int st = -1;
	CHECK_EQ("wait spin", wait(pid, &st), pid);
	CHECK("spin exit status is its finish time", st >= 0 && st <= (int)(time() / 1000 + 1));
}

// Priorities across CPUs: the parent, above them all, starts N high
// children (N CPUs) and then a low one; the high ones take every CPU and
// the low one starts only when one of them is done (it reports its start
// time; the high ones their finish times). The order holds however the
// host schedules the emulated CPUs.
static void test_priorities(void)
{
	struct sysinfo si;
	sysinfo(&si);
	int n = si.ncpu > 0 && si.ncpu <= 4 ? (int)si.ncpu : 1, st, lo_start = -1;
	int first_hi = 0x7fffffff, reaped = 0;
	long hi[4];
	setprio(0, PRIO_MAX);
	int ok = 1;
	for (int i = 0; i < n; i++)
		ok &= (hi[i] = spawn("spin", "loops=2000000", 6)) > 0;
	long lo = spawn("spin", "loops=2000000 start=1", 1);
	ok &= lo > 0;
	setprio(0, PRIO_DEFAULT);
	CHECK("spawned all", ok);
	for (int i = 0; i <= n; i++) {
		long r = wait(-1, &st);
		reaped += r > 0;
		if (r == lo)
			lo_start = st;
		else if (st < first_hi)
			first_hi = st;
	}
	CHECK_EQ("all reaped", reaped, n + 1);
	CHECK("low started only after a high one finished", lo_start >= first_hi);
	CHECK_EQ("setprio on self", setprio(0, 5), 0);
	CHECK_EQ("setprio bad priority", setprio(0, 8), -E_INVAL);
	CHECK_EQ("setprio unknown pid", setprio(99999, 2), -E_SRCH);
	setprio(0, PRIO_DEFAULT);
}

// setaffinity moves the caller at once; the CPU it then runs on is one of
// the mask's.
static void test_affinity(void)
{
	struct sysinfo si;
	sysinfo(&si);
	unsigned long all = (1ul << si.ncpu) - 1;
	unsigned long ncpu = si.ncpu, set = 0, ran = 0;
	for (unsigned long c = 0; c < ncpu; c++) {
		set += setaffinity(0, 1ul << c) == 0;
		yield();
		sysinfo(&si);
		ran += si.cpu == c;
	}
	CHECK_EQ("setaffinity to each CPU", set, ncpu);
	CHECK_EQ("then runs on that CPU", ran, ncpu);
	CHECK_EQ("setaffinity to no running CPU", setaffinity(0, 1ul << ncpu), -E_INVAL);
	CHECK_EQ("setaffinity to nothing", setaffinity(0, 0), -E_INVAL);
	CHECK_EQ("setaffinity unknown pid", setaffinity(99999, all), -E_SRCH);
	long child = spawn("spin", "loops=1000", PRIO_DEFAULT);
	CHECK_EQ("setaffinity of a child", setaffinity(child, 1), 0);
	int st;
	CHECK_EQ("child on CPU 0 reaped", wait(child, &st), child);
	CHECK_EQ("setaffinity back to all", setaffinity(0, all), 0);
}

// A CPU with nothing to run halts; sysinfo counts a halt still under way
// as idle, and a CPU's lock waits only grow. On one CPU there is no other
// to watch.
static void test_idle_counted(void)
{
	struct sysinfo a, b;
	sysinfo(&a);
	unsigned long last = a.ncpu - 1, all = (1ul << a.ncpu) - 1;
	CHECK_EQ("pinned to CPU 0", setaffinity(0, 1), 0);
	sysinfo(&a);
	uint64_t t0 = rdtsc();
	sleep(20000);
	sysinfo(&b);
	uint64_t elapsed = rdtsc() - t0, idle = b.cpu_idle_tsc[last] - a.cpu_idle_tsc[last];
	CHECK("the last CPU, halted, counted idle", a.ncpu < 2 || idle >= elapsed / 10 * 9);
	int grew = 1;
	for (unsigned long c = 0; c < a.ncpu && c < 8; c++)
		grew &= b.cpu_spin_tsc[c] >= a.cpu_spin_tsc[c];
	CHECK("lock waits never shrink", grew);
	CHECK_EQ("unpinned", setaffinity(0, all), 0);
}

static void test_many(void)
{
	long pids[20];
	int ok = 1, st;
	for (int i = 0; i < 20; i++)
		ok &= (pids[i] = spawn("spin", "loops=1000", PRIO_DEFAULT)) > 0;
	CHECK("20 children spawned", ok);
	int reaped = 0;
	while (wait(-1, &st) > 0)
		reaped++;
	CHECK_EQ("20 children reaped", reaped, 20);
}

int main(void)
{
	struct sysinfo a, b;
	sysinfo(&a);
	test_spawn_wait();
	test_exit_status();
	test_priorities();
	test_affinity();
	test_idle_counted();
	test_many();
	sysinfo(&b);
	CHECK_EQ("frames back after children", b.frames_free, a.frames_free);
	return utest_done("proc_test");
}
