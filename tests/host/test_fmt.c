// fmt: the kernel's snprintf, checked against fixed strings and, where the
// documented subset agrees with C, against the C library's snprintf.
#include "host.h"
#include "fmt.h"
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

static char buf[256];

// Formats with both and compares text and return value.
#define SAME(...)                                                                        \
	do {                                                                             \
		char want_[256];                                                         \
		int nw_ = snprintf(want_, sizeof(want_), __VA_ARGS__);                   \
		int ng_ = fmt_snprintf(buf, sizeof(buf), __VA_ARGS__);                   \
		CU_assertImplementation(nw_ == ng_ && strcmp(want_, buf) == 0, __LINE__, \
					"same as snprintf: " #__VA_ARGS__, __FILE__, "", CU_FALSE); \
	} while (0)

#define IS(want, ...)                                                                    \
	do {                                                                             \
		int n_ = fmt_snprintf(buf, sizeof(buf), __VA_ARGS__);                   \
		CU_assertImplementation(strcmp(buf, want) == 0 && n_ == (int)strlen(want), \
					__LINE__, "\"" want "\" from " #__VA_ARGS__, __FILE__, "", \
					CU_FALSE);                                       \
	} while (0)

static void test_integers(void)
{
	IS("0", "%d", 0);
	IS("-1 42 2147483647 -2147483648", "%d %i %d %d", -1, 42, INT_MAX, INT_MIN);
	IS("4294967295", "%u", UINT_MAX);
	IS("ff FF 0", "%x %X %x", 255u, 255u, 0u);
	IS("deadbeef", "%x", 0xdeadbeefu);
	IS("9223372036854775807", "%ld", INT64_MAX);
	IS("-9223372036854775808", "%ld", INT64_MIN);
	IS("-9223372036854775808", "%lld", (long long)INT64_MIN);
	IS("18446744073709551615", "%lu", UINT64_MAX);
	IS("ffffffffffffffff", "%lx", UINT64_MAX);
	IS("123456789012", "%zu", (size_t)123456789012ull);
	IS("-5", "%d", -5);
	// Without a length modifier an int is read, whatever was passed.
	IS("-1", "%d", (int)0xffffffffu);
	SAME("%d|%5d|%-5d|%05d", 42, 42, 42, 42);
	SAME("%5d|%05d|%-6d|", -42, -42, -42);
	SAME("%3d|%1d|%0d", 12345, 12345, 7);
	SAME("%08x|%-8x|%8X", 0xabcu, 0xabcu, 0xabcu);
	SAME("%20lu|%-20ld|%020ld", UINT64_MAX, INT64_MIN, INT64_MIN);
	SAME("%*d|%*d", 6, 17, 2, 12345);
}

static void test_alt_and_pointer(void)
{
	IS("0xff", "%#x", 255u);
	IS("0XFF", "%#X", 255u);
	IS("0", "%#x", 0u); // C prints no prefix for zero
	IS("0x1000", "%#lx", 0x1000ul);
	IS("0x1234", "%p", (void *)0x1234);
	IS("0xffff800000000000", "%p", (void *)0xffff800000000000ull);
	SAME("%#x|%#lx", 0x1fu, 0xfffffffffful);
	SAME("%p", (void *)0x7ffc1234abcdull);
}

// C counts the 0x prefix (and the sign) in the field width.
static void test_alt_with_width(void)
{
	SAME("[%#8x]", 255u);
	SAME("[%#08x]", 255u);
	SAME("[%-#8x]", 255u);
	IS("[0x0000ff]", "[%#08x]", 255u);
	IS("[    0xff]", "[%#8x]", 255u);
	IS("[        0x1234]", "[%14p]", (void *)0x1234);
	IS("[0x1234        ]", "[%-14p]", (void *)0x1234);
}

static void test_strings_chars(void)
{
	IS("hello", "%s", "hello");
	const char *volatile null = NULL; // hidden from the format checker
	IS("(null)", "%s", null);
	IS("a%b", "a%%b");
	IS("x", "%c", 'x');
	IS("[A][B]", "[%c][%c]", 'A', 0x142); // an int, narrowed to char
	SAME("[%8s][%-8s][%.3s][%8.2s][%-8.2s][%.0s][%.10s]", "abcdef", "abc", "abcdef", "abcdef",
	     "abcdef", "abc", "abc");
	SAME("[%2s]", "abcdef"); // width never truncates
	SAME("%s=%d %s", "key", 7, "");
}

static void test_truncation(void)
{
	char small[8];
	memset(small, '#', sizeof(small));
	CU_ASSERT_EQUAL(fmt_snprintf(small, sizeof(small), "%s-%d", "abcdefgh", 12345), 14);
	CU_ASSERT_STRING_EQUAL(small, "abcdefg");
	memset(small, '#', sizeof(small));
	CU_ASSERT_EQUAL(fmt_snprintf(small, 1, "%d", 42), 2);
	CU_ASSERT_EQUAL(small[0], 0);
	CU_ASSERT_EQUAL(small[1], '#');
	memset(small, '#', sizeof(small));
	CU_ASSERT_EQUAL(fmt_snprintf(small, 0, "%d", 42), 2);
	CU_ASSERT_EQUAL(small[0], '#'); // size 0 writes nothing
	CU_ASSERT_EQUAL(fmt_snprintf(NULL, 0, "%ld", INT64_MIN), 20);
	memset(small, '#', sizeof(small));
	CU_ASSERT_EQUAL(fmt_snprintf(small, 4, "%8d", 5), 8);
	CU_ASSERT_STRING_EQUAL(small, "   ");
	CU_ASSERT_EQUAL(small[4], '#');
	// Exactly fitting.
	CU_ASSERT_EQUAL(fmt_snprintf(small, 8, "%s", "1234567"), 7);
	CU_ASSERT_STRING_EQUAL(small, "1234567");
	// Long output: length well past the buffer is still counted.
	char big[600];
	memset(big, 'q', 599);
	big[599] = 0;
	CU_ASSERT_EQUAL(fmt_snprintf(buf, sizeof(buf), "<%s>", big), 601);
	CU_ASSERT_EQUAL(strlen(buf), sizeof(buf) - 1);
}

// Malformed on purpose: the compiler's format check would reject them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-zero-length"
static void test_odd_formats(void)
{
	IS("[42   ]", "[%-05d]", 42); // '-' wins over '0'
	IS("", "%");           // lone % at the end: nothing, no overrun
	IS("ab", "ab%5");      // unfinished spec
	IS("%q", "%q");        // unknown conversion shown as is
	IS("100%", "%d%%", 100);
	IS("", "");
}
#pragma GCC diagnostic pop

static int vwrap(char *b, size_t n, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int r = fmt_vsnprintf(b, n, f, ap);
	va_end(ap);
	return r;
}

static void test_vsnprintf(void)
{
	CU_ASSERT_EQUAL(vwrap(buf, sizeof(buf), "%s:%lu:%x", "v", 99ul, 0x10u), 7);
	CU_ASSERT_STRING_EQUAL(buf, "v:99:10");
}

static void test_many_args(void)
{
	// More than the six register arguments: the rest come from the stack.
	SAME("%d %ld %s %u %lx %c %d %lu %s %d %x %zu", 1, 2l, "three", 4u, 5ul, '6', 7, 8ul, "nine",
	     -10, 11u, (size_t)12);
}

int register_fmt(void)
{
	static const struct test_case t[] = {
		TEST(test_integers),
		TEST(test_alt_and_pointer),
		TEST(test_alt_with_width),
		TEST(test_strings_chars),
		TEST(test_truncation),
		TEST(test_odd_formats),
		TEST(test_vsnprintf),
		TEST(test_many_args),
	};
	return ADD_SUITE("fmt", NULL, NULL, t);
}
