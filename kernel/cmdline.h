// The kernel command line: space-separated words, "key=value" or "key".
#ifndef CMDLINE_H
#define CMDLINE_H
#include <stddef.h>

#define CMDLINE_MAX 1024
#define CMDLINE_ARGS 32

struct cmdline {
	char buf[CMDLINE_MAX]; // the words, NUL-separated
	int n;
	const char *key[CMDLINE_ARGS];
	const char *val[CMDLINE_ARGS]; // "" for a bare word
};

// Returns the number of words, or -1 when the line or a word is too long
// or there are too many words (the parse is then unusable).
int cmdline_parse(struct cmdline *c, const char *s);
const char *cmdline_get(const struct cmdline *c, const char *key);
// The decimal number s starts with (0 when it starts with no digit).
unsigned long cmdline_dec(const char *s);
// Splits a comma-separated list in place; returns the count (<= max).
int cmdline_split(char *s, char sep, char **out, int max);
#endif
