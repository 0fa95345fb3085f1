// Fault isolation: each faulting child is killed with the status naming its
// fault; the kernel and this process go on, and a later program still runs.
#include <utest.h>

static void expect_killed(const char *kind, int want)
{
	char args[32], name[64];
	fmt_snprintf(args, sizeof(args), "kind=%s", kind);
	long pid = spawn("fault", args, PRIO_DEFAULT);
	int st = -1;
	long w = wait(pid, &st);
	fmt_snprintf(name, sizeof(name), "fault %s: killed with status %#x", kind, want);
	CHECK(name, w == pid && st == want);
}

int main(void)
{
	struct sysinfo a, b;
	sysinfo(&a);
	expect_killed("pf", EXIT_KILLED_PF);
	expect_killed("null", EXIT_KILLED_PF);
	expect_killed("kernel", EXIT_KILLED_PF);
	expect_killed("stack", EXIT_KILLED_PF);
	expect_killed("exec", EXIT_KILLED_PF);
	expect_killed("gp", EXIT_KILLED_GP);
	expect_killed("ud", EXIT_KILLED_UD);
	expect_killed("de", EXIT_KILLED_DE);
	long pid = spawn("hello", "after=faults", PRIO_DEFAULT);
	int st = -1;
	CHECK("a program runs after the faults", wait(pid, &st) == pid && st == 0);
	sysinfo(&b);
	CHECK_EQ("frames back after killed children", b.frames_free, a.frames_free);
	return utest_done("fault_test");
}
