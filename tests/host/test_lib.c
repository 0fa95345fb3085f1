// lib/string.c (linked with its functions renamed lib_*, see host.mk; only
// strlcpy keeps its name, for the kernel files) and lib/err.c.
#include "host.h"
#include "err.h"
#include "stats.h"
#include <CUnit/CUnit.h>
#include <string.h>

void *lib_memcpy(void *dst, const void *src, size_t n);
void *lib_memmove(void *dst, const void *src, size_t n);
void *lib_memset(void *dst, int c, size_t n);
int lib_memcmp(const void *a, const void *b, size_t n);
size_t lib_strlen(const char *s);
size_t lib_strnlen(const char *s, size_t max);
int lib_strcmp(const char *a, const char *b);
int lib_strncmp(const char *a, const char *b, size_t n);
char *lib_strchr(const char *s, int c);
size_t strlcpy(char *dst, const char *src, size_t size);

static void test_memcpy_memset_alignments(void)
{
	_Alignas(8) uint8_t src[160], dst[176], ref[176];
	for (int i = 0; i < 160; i++)
		src[i] = (uint8_t)(i * 13 + 1);
	for (int so = 0; so < 8; so++)
		for (int d = 0; d < 8; d++)
			for (size_t n = 0; n <= 150; n += n < 40 ? 3 : 7) { // the 4-word loop from 32 + 7
				memset(dst, 0x55, sizeof(dst));
				memset(ref, 0x55, sizeof(ref));
				memcpy(ref + d, src + so, n);
				CU_ASSERT_PTR_EQUAL(lib_memcpy(dst + d, src + so, n), dst + d);
				if (memcmp(dst, ref, sizeof(dst)))
					CU_FAIL("lib_memcpy differs from memcpy");
				memset(ref + d, 0xa7, n);
				CU_ASSERT_PTR_EQUAL(lib_memset(dst + d, 0x1a7, n), dst + d); // c as a byte
				if (memcmp(dst, ref, sizeof(dst)))
					CU_FAIL("lib_memset differs from memset");
			}
}

static void test_memmove_overlap(void)
{
	for (int shift = -9; shift <= 9; shift++)
		for (size_t n = 0; n < 100; n += 7) {
			_Alignas(8) uint8_t a[160], b[160];
			for (int i = 0; i < 160; i++)
				a[i] = b[i] = (uint8_t)i;
			lib_memmove(a + 16 + shift, a + 16, n);
			memmove(b + 16 + shift, b + 16, n);
			if (memcmp(a, b, sizeof(a)))
				CU_FAIL("lib_memmove differs from memmove");
		}
}

static void test_compare_and_search(void)
{
	CU_ASSERT_EQUAL(lib_memcmp("abc", "abd", 3), -1);
	CU_ASSERT_EQUAL(lib_memcmp("abd", "abc", 3), 1);
	CU_ASSERT_EQUAL(lib_memcmp("abc", "abd", 2), 0);
	CU_ASSERT_EQUAL(lib_memcmp("\xff", "\x01", 1), 1); // unsigned bytes
	CU_ASSERT_EQUAL(lib_strlen(""), 0);
	CU_ASSERT_EQUAL(lib_strlen("hello"), 5);
	CU_ASSERT_EQUAL(lib_strnlen("hello", 3), 3);
	CU_ASSERT_EQUAL(lib_strnlen("hi", 10), 2);
	CU_ASSERT_TRUE(lib_strcmp("a", "b") < 0);
	CU_ASSERT_TRUE(lib_strcmp("b", "a") > 0);
	CU_ASSERT_TRUE(lib_strcmp("ab", "a") > 0);
	CU_ASSERT_EQUAL(lib_strcmp("same", "same"), 0);
	CU_ASSERT_TRUE(lib_strcmp("\x80", "a") > 0); // unsigned
	CU_ASSERT_EQUAL(lib_strncmp("abcx", "abcy", 3), 0);
	CU_ASSERT_TRUE(lib_strncmp("abcx", "abcy", 4) < 0);
	CU_ASSERT_EQUAL(lib_strncmp("ab", "ab", 10), 0);
	CU_ASSERT_TRUE(lib_strncmp("a", "ab", 5) < 0);
	CU_ASSERT_EQUAL(lib_strncmp("x", "y", 0), 0);
	const char *s = "key=value";
	CU_ASSERT_PTR_EQUAL(lib_strchr(s, '='), s + 3);
	CU_ASSERT_PTR_EQUAL(lib_strchr(s, 'k'), s);
	CU_ASSERT_PTR_NULL(lib_strchr(s, 'z'));
	CU_ASSERT_PTR_EQUAL(lib_strchr(s, 0), s + 9);
}

static void test_strlcpy(void)
{
	char d[8];
	memset(d, '#', sizeof(d));
	CU_ASSERT_EQUAL(strlcpy(d, "abc", sizeof(d)), 3);
	CU_ASSERT_STRING_EQUAL(d, "abc");
	CU_ASSERT_EQUAL(strlcpy(d, "abcdefghij", sizeof(d)), 10);
	CU_ASSERT_STRING_EQUAL(d, "abcdefg");
	CU_ASSERT_EQUAL(strlcpy(d, "1234567", sizeof(d)), 7);
	CU_ASSERT_STRING_EQUAL(d, "1234567");
	memset(d, '#', sizeof(d));
	CU_ASSERT_EQUAL(strlcpy(d, "xyz", 1), 3);
	CU_ASSERT_EQUAL(d[0], 0);
	CU_ASSERT_EQUAL(d[1], '#');
	CU_ASSERT_EQUAL(strlcpy(d, "xyz", 0), 3);
	CU_ASSERT_EQUAL(d[0], 0);
}

static void test_err_names(void)
{
	CU_ASSERT_STRING_EQUAL(err_name(0), "OK");
	CU_ASSERT_STRING_EQUAL(err_name(-E_BADID), "E_BADID");
	CU_ASSERT_STRING_EQUAL(err_name(E_BADID), "E_BADID");
	CU_ASSERT_STRING_EQUAL(err_name(-E_LINK), "E_LINK");
	CU_ASSERT_STRING_EQUAL(err_name(E_NERR), "E_?");
	CU_ASSERT_STRING_EQUAL(err_name(-1000), "E_?");
	// Every code has its own name, spelled like the macro.
	for (long e = 1; e < E_NERR; e++) {
		const char *n = err_name(-e);
		CU_ASSERT_PTR_NOT_NULL_FATAL(n);
		CU_ASSERT_EQUAL(strncmp(n, "E_", 2), 0);
		for (long f = 1; f < e; f++)
			CU_ASSERT_NOT_EQUAL(strcmp(n, err_name(-f)), 0);
	}
}

// The TSC calibration takes the median window: one window far off (the
// host descheduled the VM) must not move it.
static void test_median(void)
{
	const uint64_t one[] = { 7 };
	CU_ASSERT_EQUAL(stats_median_index(one, 1), 0);
	const uint64_t w[] = { 26000000, 26010000, 39000000, 25990000, 26005000, 26002000, 1000 };
	int m = stats_median_index(w, 7);
	CU_ASSERT_EQUAL(w[m], 26002000);
	const uint64_t even[] = { 4, 1, 3, 2 };
	CU_ASSERT_EQUAL(even[stats_median_index(even, 4)], 2);
	const uint64_t same[] = { 5, 5, 5, 9, 1 };
	CU_ASSERT_EQUAL(same[stats_median_index(same, 5)], 5);
	CU_ASSERT_EQUAL(stats_spread_ppm(same, 5), 1600000); // (9-1)/5
	CU_ASSERT_EQUAL(stats_spread_ppm(one, 1), 0);
	const uint64_t zero[] = { 0, 0, 3 };
	CU_ASSERT_EQUAL(stats_spread_ppm(zero, 3), 0);
}

int register_lib(void)
{
	static const struct test_case t[] = {
		TEST(test_memcpy_memset_alignments),
		TEST(test_memmove_overlap),
		TEST(test_compare_and_search),
		TEST(test_strlcpy),
		TEST(test_err_names),
		TEST(test_median),
	};
	return ADD_SUITE("lib", NULL, NULL, t);
}
