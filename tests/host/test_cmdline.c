// cmdline: parsing the kernel command line into key/value words.
#include "host.h"
#include "cmdline.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static struct cmdline c; // 1.3 KiB

static void test_words_and_values(void)
{
	CU_ASSERT_EQUAL(cmdline_parse(&c, "run=a,b key=val flag log=2"), 4);
	CU_ASSERT_EQUAL(c.n, 4);
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "run"), "a,b");
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "key"), "val");
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "flag"), ""); // bare word: present, empty
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "log"), "2");
	CU_ASSERT_PTR_NULL(cmdline_get(&c, "missing"));
	CU_ASSERT_PTR_NULL(cmdline_get(&c, "fla"));  // whole keys only
	CU_ASSERT_PTR_NULL(cmdline_get(&c, "flags"));
	CU_ASSERT_STRING_EQUAL(c.key[0], "run");
	CU_ASSERT_STRING_EQUAL(c.key[3], "log");
	// Values point into the parse's own buffer, not the caller's string.
	CU_ASSERT_TRUE(c.val[0] >= c.buf && c.val[0] < c.buf + CMDLINE_MAX);
}

static void test_whitespace_and_odd_words(void)
{
	CU_ASSERT_EQUAL(cmdline_parse(&c, "  \t a=1\n\nb= =c d=e=f  x  \n"), 5);
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "a"), "1");
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "b"), "");  // "key=": empty value
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, ""), "c");  // "=c": empty key
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "d"), "e=f"); // first '=' splits
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "x"), "");
}

static void test_first_match_wins(void)
{
	CU_ASSERT_EQUAL(cmdline_parse(&c, "log=1 log=3"), 2);
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "log"), "1");
}

static void test_caller_string_untouched(void)
{
	char s[] = "a=b c";
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), 2);
	CU_ASSERT_STRING_EQUAL(s, "a=b c");
}

static void test_empty(void)
{
	CU_ASSERT_EQUAL(cmdline_parse(&c, ""), 0);
	CU_ASSERT_PTR_NULL(cmdline_get(&c, ""));
	CU_ASSERT_EQUAL(cmdline_parse(&c, " \t\n  "), 0);
	CU_ASSERT_PTR_NULL(cmdline_get(&c, "a"));
}

static void test_limits(void)
{
	static char s[CMDLINE_MAX + 64];
	// Exactly CMDLINE_ARGS words parse; one more is rejected.
	s[0] = 0;
	for (int i = 0; i < CMDLINE_ARGS; i++)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "w%d=%d ", i, i);
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), CMDLINE_ARGS);
	CU_ASSERT_STRING_EQUAL(cmdline_get(&c, "w31"), "31");
	strcat(s, "one-more");
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), -1);
	// Trailing blanks after the last allowed word are fine.
	s[0] = 0;
	for (int i = 0; i < CMDLINE_ARGS; i++)
		strcat(s, "x ");
	strcat(s, "   ");
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), CMDLINE_ARGS);
	// CMDLINE_MAX - 1 characters fit; CMDLINE_MAX do not.
	memset(s, 'k', CMDLINE_MAX - 1);
	s[CMDLINE_MAX - 1] = 0;
	s[1] = '=';
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), 1);
	CU_ASSERT_EQUAL(strlen(cmdline_get(&c, "k")), CMDLINE_MAX - 3);
	memset(s, 'k', CMDLINE_MAX);
	s[CMDLINE_MAX] = 0;
	CU_ASSERT_EQUAL(cmdline_parse(&c, s), -1);
	CU_ASSERT_PTR_NULL(cmdline_get(&c, "k")); // a failed parse finds nothing
}

static void test_split(void)
{
	char s[] = "demo,net,,bench,";
	char *out[8];
	CU_ASSERT_EQUAL(cmdline_split(s, ',', out, 8), 4);
	CU_ASSERT_STRING_EQUAL(out[0], "demo");
	CU_ASSERT_STRING_EQUAL(out[1], "net");
	CU_ASSERT_STRING_EQUAL(out[2], ""); // empty item kept
	CU_ASSERT_STRING_EQUAL(out[3], "bench");

	char t[] = "a,b,c,d";
	CU_ASSERT_EQUAL(cmdline_split(t, ',', out, 2), 2); // capped at max
	CU_ASSERT_STRING_EQUAL(out[0], "a");
	CU_ASSERT_STRING_EQUAL(out[1], "b");

	char u[] = "";
	CU_ASSERT_EQUAL(cmdline_split(u, ',', out, 8), 0);
	char v[] = "single";
	CU_ASSERT_EQUAL(cmdline_split(v, ',', out, 8), 1);
	CU_ASSERT_STRING_EQUAL(out[0], "single");
	char w[] = "x:y";
	CU_ASSERT_EQUAL(cmdline_split(w, ':', out, 0), 0);
	CU_ASSERT_EQUAL(cmdline_split(w, ':', out, 8), 2);
	CU_ASSERT_STRING_EQUAL(out[1], "y");
}

// The way runner.c uses it: split the value of run= from a parsed line.
static void test_dec(void)
{
	CU_ASSERT_EQUAL(cmdline_dec("4"), 4);
	CU_ASSERT_EQUAL(cmdline_dec("128,2"), 128); // stops at the first non-digit
	CU_ASSERT_EQUAL(cmdline_dec("x1"), 0);
	CU_ASSERT_EQUAL(cmdline_dec(""), 0);
}

static void test_split_parsed_value(void)
{
	CU_ASSERT_EQUAL(cmdline_parse(&c, "log=1 run=hello,faults,sched"), 2);
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", cmdline_get(&c, "run"));
	char *out[4];
	CU_ASSERT_EQUAL(cmdline_split(buf, ',', out, 4), 3);
	CU_ASSERT_STRING_EQUAL(out[2], "sched");
}

int register_cmdline(void)
{
	static const struct test_case t[] = {
		TEST(test_words_and_values),
		TEST(test_whitespace_and_odd_words),
		TEST(test_first_match_wins),
		TEST(test_caller_string_untouched),
		TEST(test_empty),
		TEST(test_limits),
		TEST(test_split),
		TEST(test_split_parsed_value),
		TEST(test_dec),
	};
	return ADD_SUITE("cmdline", NULL, NULL, t);
}
