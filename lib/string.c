// Freestanding string functions: plain C, no arch code; memcpy and memset
// move 8 bytes at a time once the destination is aligned.
#include <string.h>
#include <stdint.h>

// Word stores from an aligned destination; x86 loads and stores unaligned
// words at full speed, so the source's alignment does not matter, and from
// 8 bytes on the first and last 8 go as one unaligned word each (loaded
// before anything is stored), so that no byte loop runs: a 64-byte payload
// behind a 30-byte header is 8 word moves, not 14 bytes and 6 words. The
// loop moves four words a turn (its own compare and add once per 32
// bytes; T1 lost 747 instructions a 128-packet burst), then single words,
// each loaded before it is stored, one register for all. The
// fixed-size __builtin_memcpy calls compile to single moves. Forward, as
// memmove relies on when the destination is below the source.
void *memcpy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if (n < 8) {
		while (n--)
			*d++ = *s++;
		return dst;
	}
	uint64_t head, tail, v;
	__builtin_memcpy(&head, s, 8);
	__builtin_memcpy(&tail, s + n - 8, 8);
	size_t i = (8 - ((uintptr_t)d & 7)) & 7;
	for (; i + 32 <= n; i += 32) { // four words a turn, each loaded before it is stored
		__builtin_memcpy(&v, s + i, 8);
		__builtin_memcpy(d + i, &v, 8);
		__builtin_memcpy(&v, s + i + 8, 8);
		__builtin_memcpy(d + i + 8, &v, 8);
		__builtin_memcpy(&v, s + i + 16, 8);
		__builtin_memcpy(d + i + 16, &v, 8);
		__builtin_memcpy(&v, s + i + 24, 8);
		__builtin_memcpy(d + i + 24, &v, 8);
	}
	for (; i + 8 <= n; i += 8) {
		__builtin_memcpy(&v, s + i, 8);
		__builtin_memcpy(d + i, &v, 8);
	}
	__builtin_memcpy(d, &head, 8);
	__builtin_memcpy(d + n - 8, &tail, 8);
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

// Bytes up to an 8-byte boundary, then words: a page tail scrubbed from
// an arbitrary offset (io_net.c) is word stores, not byte stores.
void *memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;
	uint64_t v = 0x0101010101010101ull * (uint8_t)c;
	for (; n && ((uintptr_t)d & 7); n--)
		*d++ = (uint8_t)c;
	for (; n >= 8; n -= 8, d += 8)
		__builtin_memcpy(d, &v, 8);
	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n > 0; n--, a++, b++) {
		if (*a != *b || !*a)
			return (unsigned char)*a - (unsigned char)*b;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (; *s; s++)
		if (*s == (char)c)
			return (char *)s;
	return c == 0 ? (char *)s : NULL;
}

size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size > 0) {
		size_t k = n < size - 1 ? n : size - 1;
		memcpy(dst, src, k);
		dst[k] = 0;
	}
	return n;
}
