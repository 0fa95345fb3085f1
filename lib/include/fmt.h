// printf-style formatting into a buffer, shared by kprintf and user printf.
// Supports %d %i %u %x %X %p %s %c %%, flags '-' '0', width, precision for
// %s, and the length modifiers l, ll, z.
#ifndef LIB_FMT_H
#define LIB_FMT_H
#include <stdarg.h>
#include <stddef.h>

int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#endif
