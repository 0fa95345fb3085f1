// The default program (make run): shows what the kernel does, step by step.
#include <ulib.h>

static void run(const char *prog, const char *args, int prio)
{
	printf("demo: spawn %s '%s' at priority %d\n", prog, args, prio);
	long pid = spawn(prog, args, prio);
	int st = 0;
	wait(pid, &st);
	printf("demo: %s (pid %ld) exited with status %#x\n", prog, pid, st);
}

int main(void)
{
	struct sysinfo si;
	sysinfo(&si);
	printf("demo: pid %ld, %lu of %lu frames free, TSC %lu Hz, %lu processes\n", getpid(),
	       si.frames_free, si.frames_total, si.tsc_hz, si.nprocs);
	run("hello", "a=1 b=2", PRIO_DEFAULT);
	long t0 = time();
	printf("demo: sleeping 100 ms\n");
	sleep(100000);
	printf("demo: woke after %ld us\n", time() - t0);
	run("fault", "kind=pf", PRIO_DEFAULT);
	run("fault", "kind=ud", PRIO_DEFAULT);
	run("spin", "loops=100000", 6);
	sysinfo(&si);
	printf("demo: done, %lu frames free\n", si.frames_free);
	return 0;
}
