// CPU-bound child for the scheduling tests: spins for loops=N iterations,
// then exits with the time it finished (milliseconds since boot, low 24 bits),
// or with start=1 the time it started running.
#include <ulib.h>

int main(int argc, char **argv)
{
	volatile uint64_t x = 0;
	int started = (int)((time() / 1000) & 0xffffff);
	long loops = arg_long(argc, argv, "loops", 1000000);
	for (long i = 0; i < loops; i++)
		x += (uint64_t)i;
	if (arg_long(argc, argv, "start", 0))
		return started;
	return (int)((time() / 1000) & 0xffffff);
}
