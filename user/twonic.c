// The same driver test on two NICs at once: two pingpong processes, one
// per NIC, run side by side. Args: role=server|client peer0=MAC peer1=MAC
// sizes=... iters=...
#include <utest.h>

int main(int argc, char **argv)
{
	const char *role = arg_get(argc, argv, "role", "client");
	struct sysinfo s0, s1;
	sysinfo(&s0);
	char args[2][192];
	long pid[2];
	for (int n = 0; n < 2; n++) {
		char key[8];
		fmt_snprintf(key, sizeof(key), "peer%d", n);
		fmt_snprintf(args[n], sizeof(args[n]), "role=%s nic=%d chan=%d peer=%s sizes=%s iters=%ld alone=0",
			     role, n, 10 + n, arg_get(argc, argv, key, "?"),
			     arg_get(argc, argv, "sizes", "60,1500,8960"), arg_long(argc, argv, "iters", 10));
		pid[n] = spawn("pingpong", args[n], PRIO_DEFAULT);
		CHECK("pingpong started", pid[n] > 0);
	}
	for (int n = 0; n < 2; n++) {
		int st = -1;
		char name[48];
		fmt_snprintf(name, sizeof(name), "pingpong on NIC %d passed", n);
		CHECK(name, wait(pid[n], &st) == pid[n] && st == 0);
	}
	sysinfo(&s1);
	CHECK_EQ("frames back after both", s1.frames_free, s0.frames_free);
	CHECK_EQ("no region or attachment left", s1.vregions + s1.attachments, s0.vregions + s0.attachments);
	return utest_done("twonic");
}
