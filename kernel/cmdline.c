#include "cmdline.h"
#include <string.h>

int cmdline_parse(struct cmdline *c, const char *s)
{
	size_t len = strnlen(s, CMDLINE_MAX);
	c->n = 0;
	if (len >= CMDLINE_MAX)
		return -1;
	memcpy(c->buf, s, len + 1);
	char *p = c->buf;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			*p++ = 0;
		if (!*p)
			return c->n;
		if (c->n == CMDLINE_ARGS)
			return -1;
		c->key[c->n] = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '=')
			p++;
		c->val[c->n] = "";
		if (*p == '=') {
			*p++ = 0;
			c->val[c->n] = p;
			while (*p && *p != ' ' && *p != '\t' && *p != '\n')
				p++;
		}
		c->n++;
	}
}

const char *cmdline_get(const struct cmdline *c, const char *key)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->key[i], key))
			return c->val[i];
	return NULL;
}

int cmdline_split(char *s, char sep, char **out, int max)
{
	int n = 0;
	while (*s && n < max) {
		out[n++] = s;
		while (*s && *s != sep)
			s++;
		if (*s)
			*s++ = 0;
	}
	return n;
}

unsigned long cmdline_dec(const char *s)
{
	unsigned long v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (unsigned long)(*s++ - '0');
	return v;
}
