// The user library: printf over the write system call, argument helpers.
#include <ulib.h>

int vprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	write(buf, n < (int)sizeof(buf) ? (unsigned long)n : sizeof(buf) - 1);
	return n;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

static char line[4096];
static int line_len;

void line_add(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (line_len < (int)sizeof(line))
		line_len += fmt_vsnprintf(line + line_len, sizeof(line) - (size_t)line_len, fmt, ap);
	va_end(ap);
}

void line_flush(void)
{
	if (line_len > (int)sizeof(line) - 1)
		line_len = (int)sizeof(line) - 1;
	write(line, (unsigned long)line_len);
	line_len = 0;
}

int puts(const char *s)
{
	write(s, strlen(s));
	write("\n", 1);
	return 0;
}

long atol(const char *s)
{
	long v = 0, sign = 1;
	if (*s == '-')
		sign = -1, s++;
	if (s[0] == '0' && s[1] == 'x') {
		for (s += 2;; s++) {
			int d = *s >= '0' && *s <= '9' ? *s - '0'
				: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
			if (d < 0)
				break;
			v = v * 16 + d;
		}
		return v * sign;
	}
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return v * sign;
}

const char *arg_get(int argc, char **argv, const char *key, const char *def)
{
	size_t k = strlen(key);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=')
			return argv[i] + k + 1;
	return def;
}

long arg_long(int argc, char **argv, const char *key, long def)
{
	const char *v = arg_get(argc, argv, key, 0);
	return v ? atol(v) : def;
}

uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

uint64_t rand64(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

long attach_granted(long vrid, unsigned long addr)
{
	long a;
	while ((a = attach_vr(vrid, 0, addr)) <= 0)
		yield();
	return a;
}
