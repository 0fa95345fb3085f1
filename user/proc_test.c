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

// A high-priority child preempts its parent at once; a low one runs only
// when the parent blocks. Both spin the same amount.
static void test_priorities(void)
{
	int st_lo = -1, st_hi = -1, st;
	long lo = spawn("spin", "loops=2000000", 1);
	long hi = spawn("spin", "loops=2000000", 6);
	CHECK("spawned both", lo > 0 && hi > 0);
	long first = wait(-1, &st);
	if (first == hi)
		st_hi = st;
	else
		st_lo = st;
	long second = wait(-1, &st);
	if (second == hi)
		st_hi = st;
	else
		st_lo = st;
	CHECK_EQ("high priority reaped first", first, hi);
	CHECK_EQ("then low priority", second, lo);
	CHECK("high finished no later than low", st_hi <= st_lo);
	CHECK_EQ("setprio on self", setprio(0, 5), 0);
	CHECK_EQ("setprio bad priority", setprio(0, 8), -E_INVAL);
	CHECK_EQ("setprio unknown pid", setprio(99999, 2), -E_SRCH);
	setprio(0, PRIO_DEFAULT);
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
	test_many();
	sysinfo(&b);
	CHECK_EQ("frames back after children", b.frames_free, a.frames_free);
	return utest_done("proc_test");
}
