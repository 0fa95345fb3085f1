// Sleeps us=N microseconds, then exits 0.
#include <ulib.h>

int main(int argc, char **argv)
{
	sleep((unsigned long)arg_long(argc, argv, "us", 1000));
	return 0;
}
