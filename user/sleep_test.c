// Blocking sleep and wake: a sleeper takes no CPU, wakes no earlier than
// asked and not much later; a sleeping parent is woken by its child's exit.
#include <utest.h>

static void test_sleep_duration(unsigned long us)
{
	char name[64];
	long t0 = time();
	CHECK_EQ("sleep returns 0", sleep(us), 0);
	long dt = time() - t0;
	fmt_snprintf(name, sizeof(name), "sleep %lu us lasts >= asked (%ld us)", us, dt);
	CHECK(name, dt >= (long)us);
	// TCG is slow and the tick is 1 ms: allow generous slack, but a sleep
	// must not be a busy loop or get lost.
	fmt_snprintf(name, sizeof(name), "sleep %lu us wakes in time (%ld us)", us, dt);
	CHECK(name, dt < (long)us + 200000);
}

// While this process sleeps, a low-priority child must run to completion.
static void test_sleeper_yields_cpu(void)
{
	long pid = spawn("spin", "loops=100000", 1);
	sleep(300000);
	int st;
	CHECK_EQ("child finished while parent slept", wait(pid, &st), pid);
	CHECK("child finished before the parent woke", st <= (int)(time() / 1000));
}

int main(void)
{
	test_sleep_duration(1000);
	test_sleep_duration(20000);
	test_sleep_duration(100000);
	CHECK_EQ("sleep too long rejected", sleep(1ul << 62), -E_INVAL);
	test_sleeper_yields_cpu();
	long t0 = time();
	long pid = spawn("sleeper", "us=50000", PRIO_DEFAULT);
	int st;
	CHECK_EQ("wait blocks until the sleeping child exits", wait(pid, &st), pid);
	CHECK("wait lasted at least the child's sleep", time() - t0 >= 50000);
	return utest_done("sleep_test");
}
