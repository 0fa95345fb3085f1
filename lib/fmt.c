// printf-style formatting. Output past `size` is dropped; the return value is
// the length the full output would have had, as C's snprintf.
#include <fmt.h>
#include <stdint.h>
#include <stdbool.h>

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

struct spec {
	bool left, zero, alt;
	int width, prec;
};

static void pad(struct out *o, int n, char c)
{
	while (n-- > 0)
		put(o, c);
}

static void put_str(struct out *o, const char *s, struct spec *sp)
{
	if (!s)
		s = "(null)";
	int n = 0;
	while (s[n] && (sp->prec < 0 || n < sp->prec))
		n++;
	if (!sp->left)
		pad(o, sp->width - n, ' ');
	for (int i = 0; i < n; i++)
		put(o, s[i]);
	if (sp->left)
		pad(o, sp->width - n, ' ');
}

// The sign or "0x" prefix counts in the width, as in C.
static void put_num(struct out *o, uint64_t v, const char *prefix, int base, bool upper,
		    struct spec *sp)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = digits[v % (unsigned)base];
		v /= (unsigned)base;
	} while (v);
	int plen = 0;
	while (prefix[plen])
		plen++;
	int len = n + plen;
	if (!sp->left && !sp->zero)
		pad(o, sp->width - len, ' ');
	for (int i = 0; i < plen; i++)
		put(o, prefix[i]);
	if (!sp->left && sp->zero)
		pad(o, sp->width - len, '0');
	while (n)
		put(o, tmp[--n]);
	if (sp->left)
		pad(o, sp->width - len, ' ');
}

// Parses flags, width and precision at *f; leaves *f at the length modifier.
static void parse_spec(const char **f, struct spec *sp, va_list *ap)
{
	*sp = (struct spec){ .prec = -1 };
	for (;; (*f)++) {
		if (**f == '-')
			sp->left = true;
		else if (**f == '0')
			sp->zero = true;
		else if (**f == '#')
			sp->alt = true;
		else
			break;
	}
	if (**f == '*') {
		sp->width = va_arg(*ap, int);
		if (sp->width < 0) { // C: a negative * width means '-'
			sp->left = true;
			sp->width = -sp->width;
		}
		(*f)++;
	}
	while (**f >= '0' && **f <= '9')
		sp->width = sp->width * 10 + (*(*f)++ - '0');
	if (**f == '.') {
		(*f)++;
		sp->prec = 0;
		if (**f == '*') {
			sp->prec = va_arg(*ap, int);
			if (sp->prec < 0)
				sp->prec = -1;
			(*f)++;
		}
		while (**f >= '0' && **f <= '9')
			sp->prec = sp->prec * 10 + (*(*f)++ - '0');
	}
}

// 0: int-sized argument (also h, hh); 1: 64-bit (l, ll, z, j, t).
static int parse_len(const char **f)
{
	int len = 0;
	for (;; (*f)++) {
		if (**f == 'l' || **f == 'z' || **f == 'j' || **f == 't')
			len = 1;
		else if (**f != 'h')
			return len;
	}
}

static void put_conv(struct out *o, char c, int len, struct spec *sp, va_list *ap)
{
	int64_t s;
	uint64_t u;
	switch (c) {
	case 'd':
	case 'i':
		s = len ? va_arg(*ap, int64_t) : va_arg(*ap, int);
		put_num(o, s < 0 ? -(uint64_t)s : (uint64_t)s, s < 0 ? "-" : "", 10, false, sp);
		break;
	case 'u':
	case 'x':
	case 'X':
		u = len ? va_arg(*ap, uint64_t) : va_arg(*ap, unsigned);
		put_num(o, u, sp->alt && c != 'u' && u ? (c == 'x' ? "0x" : "0X") : "",
			c == 'u' ? 10 : 16, c == 'X', sp);
		break;
	case 'p':
		put_num(o, (uint64_t)(uintptr_t)va_arg(*ap, void *), "0x", 16, false, sp);
		break;
	case 's':
		put_str(o, va_arg(*ap, const char *), sp);
		break;
	case 'c':
		put(o, (char)va_arg(*ap, int));
		break;
	default:
		put(o, '%');
		put(o, c);
	}
}

int fmt_vsnprintf(char *buf, size_t size, const char *f, va_list ap)
{
	struct out o = { buf, size, 0 };
	va_list aq;
	va_copy(aq, ap);
	for (; *f; f++) {
		if (*f != '%') {
			put(&o, *f);
			continue;
		}
		f++;
		if (*f == '%') {
			put(&o, '%');
			continue;
		}
		struct spec sp;
		parse_spec(&f, &sp, &aq);
		int len = parse_len(&f);
		if (!*f)
			break;
		put_conv(&o, *f, len, &sp, &aq);
	}
	va_end(aq);
	if (size)
		buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = fmt_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
