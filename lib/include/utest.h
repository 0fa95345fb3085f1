// A tiny test helper for user test programs: each check prints
// "TEST name ... ok|FAIL" on the console; utest_done() prints the summary
// "N passed, N failed" and returns the exit status (0 when all passed).
#ifndef LIB_UTEST_H
#define LIB_UTEST_H
#include <ulib.h>

extern int utest_passed, utest_failed;

void utest_check(int ok, const char *name, const char *file, int line, const char *expr);
int utest_done(const char *suite);

#define CHECK(name, expr) utest_check(!!(expr), name, __FILE__, __LINE__, #expr)
// Checks that a call returns exactly the expected value (usually -E_*).
#define CHECK_EQ(name, got, want)                                                  \
	do {                                                                       \
		long g_ = (long)(got), w_ = (long)(want);                          \
		if (g_ != w_)                                                      \
			printf("  %s: got %ld (%s), want %ld (%s)\n", name, g_,    \
			       g_ < 0 ? err_name(g_) : "", w_, w_ < 0 ? err_name(w_) : ""); \
		utest_check(g_ == w_, name, __FILE__, __LINE__, #got " == " #want); \
	} while (0)

#endif
