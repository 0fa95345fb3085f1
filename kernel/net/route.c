// The node's place in the hyper-crossbar, from its command line, and the
// routing decision (HXB section 2: dimension-order routing). Pure logic on
// struct rt_topo; the relay (relay.c) and the channels use it.
#include "route.h"
#include <err.h>
#include <string.h>

// A decimal number 0..max at *s; advances *s. -1 if none or too large.
static long number(const char **s, long max)
{
	long v = 0;
	const char *p = *s;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p++ - '0');
		if (v > max)
			return -1;
	}
	*s = p;
	return v;
}

// "X[.Y[.Z]]" at *s: the node and how many coordinates it had, or -1.
static int coords(const char **s, uint32_t *node)
{
	uint8_t c[WIRE_DIMS] = { 0 };
	int n = 0;
	for (;;) {
		long v = number(s, 255);
		if (v < 0 || n == WIRE_DIMS)
			return -1;
		c[n++] = (uint8_t)v;
		if (**s != '.')
			break;
		(*s)++;
	}
	*node = wire_node(c[0], c[1], c[2]);
	return n;
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

static int mac_at(const char **s, uint8_t mac[6])
{
	const char *p = *s;
	for (int i = 0; i < 6; i++, p += 3) {
		int h = hexval(p[0]), l = h < 0 ? -1 : hexval(p[1]);
		if (h < 0 || l < 0 || (i < 5 && p[2] != ':'))
			return -1;
		mac[i] = (uint8_t)(h << 4 | l);
	}
	*s = p - 1;
	return 0;
}

// The one dimension a and b differ in, or -1 (none, or several).
static int differs_in(uint32_t a, uint32_t b)
{
	int d = -1;
	for (int k = 0; k < WIRE_DIMS; k++)
		if (wire_coord(a, k) != wire_coord(b, k)) {
			if (d >= 0)
				return -1;
			d = k;
		}
	return d;
}

static long parse_nicdim(struct rt_topo *t, const char *s)
{
	for (int i = 0; s && *s; i++) {
		if (i == NETDEV_MAX)
			return -E_INVAL;
		if (*s == '-') {
			s++;
		} else {
			long d = number(&s, WIRE_DIMS - 1);
			if (d < 0 || d >= t->dims)
				return -E_INVAL;
			t->nicdim[i] = (int8_t)d;
			t->dimnics[d][t->ndimnics[d]++] = i;
		}
		if (*s && *s++ != ',')
			return -E_INVAL;
	}
	return 0;
}

// One "X.Y/MAC[/MAC..]" entry at *s.
static long parse_nb(struct rt_topo *t, const char **s)
{
	struct rt_nb *n = &t->nb[t->nnb];
	if (t->nnb == RT_MAX_NB || coords(s, &n->node) != t->dims)
		return -E_INVAL;
	n->dim = differs_in(t->me, n->node);
	if (n->dim < 0 || rt_neighbour(t, n->node) >= 0)
		return -E_INVAL; // not a neighbour, or twice
	n->nlinks = 0;
	while (**s == '/') {
		(*s)++;
		if (n->nlinks == t->ndimnics[n->dim] || mac_at(s, n->mac[n->nlinks]) < 0)
			return -E_INVAL; // more MACs than the dimension has links
		n->nlinks++;
	}
	if (!n->nlinks)
		return -E_INVAL;
	t->nnb++;
	return 0;
}

long rt_parse(struct rt_topo *t, const char *node, const char *nicdim, const char *nb)
{
	memset(t, 0, sizeof(*t));
	memset(t->nicdim, -1, sizeof(t->nicdim));
	t->me = RT_NONE;
	if (!node)
		return 0;
	const char *s = node;
	uint32_t me;
	int dims = coords(&s, &me);
	long e = dims < 0 || *s ? -E_INVAL : 0;
	t->me = me, t->dims = dims;
	if (!e)
		e = parse_nicdim(t, nicdim);
	for (s = nb; !e && s && *s;) {
		e = parse_nb(t, &s);
		if (!e && *s && *s++ != ',')
			e = -E_INVAL;
	}
	if (e) {
		memset(t, 0, sizeof(*t));
		memset(t->nicdim, -1, sizeof(t->nicdim));
		t->me = RT_NONE;
	}
	return e;
}

int rt_neighbour(const struct rt_topo *t, uint32_t dst)
{
	for (int i = 0; i < t->nnb; i++)
		if (t->nb[i].node == dst)
			return i;
	return -1;
}

long rt_next_hop(const struct rt_topo *t, uint32_t dst)
{
	if (t->me == RT_NONE || dst == t->me || dst >> (8 * t->dims))
		return -E_INVAL;
	for (int d = 0; d < t->dims; d++) {
		if (wire_coord(dst, d) == wire_coord(t->me, d))
			continue;
		uint32_t mask = 0xffu << (8 * d);
		int n = rt_neighbour(t, (t->me & ~mask) | (dst & mask));
		if (n >= 0)
			return n;
	}
	return -E_NOENT;
}
