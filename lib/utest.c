#include <utest.h>

int utest_passed, utest_failed;

void utest_check(int ok, const char *name, const char *file, int line, const char *expr)
{
	if (ok) {
		utest_passed++;
		printf("TEST %s ... ok\n", name);
		return;
	}
	utest_failed++;
	printf("TEST %s ... FAIL (%s:%d: %s)\n", name, file, line, expr);
}

int utest_done(const char *suite)
{
	printf("SUITE %s: %d passed, %d failed\n", suite, utest_passed, utest_failed);
	return utest_failed ? 1 : 0;
}
