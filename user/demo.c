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

// A region backed by the disk: written out, scribbled over, read back.
static void disk_round_trip(void)
{
	long vr = create_vr(8192, VR_MEM_ALL, 1 << 20);
	long vu = attach_vr(vr, 0, 0x20000000000ul);
	char *p = (char *)0x20000000000ul;
	if (vr < 0 || vu < 0)
		return;
	for (int i = 0; i < 8192; i++)
		p[i] = (char)(i * 7);
	long w = write_vr(vr, 0, 8192);
	memset(p, 0, 8192);
	long r = read_vr(vr, 0, 8192);
	int same = 1;
	for (int i = 0; i < 8192; i++)
		same &= p[i] == (char)(i * 7);
	if (w == -E_NODEV)
		printf("demo: no disk attached, region backing skipped\n");
	else
		printf("demo: disk round trip of 8 KiB: write %s, read %s, %s\n", err_name(w), err_name(r),
		       same ? "identical" : "DIFFERENT");
	delete_vr(vr);
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
	disk_round_trip();
	sysinfo(&si);
	printf("demo: done, %lu frames free\n", si.frames_free);
	return 0;
}
