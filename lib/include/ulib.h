// The user library: console output, formatting, small conveniences.
#ifndef LIB_ULIB_H
#define LIB_ULIB_H
#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <fmt.h>
#include <sys.h>

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap);
int puts(const char *s);
// One output line built in pieces and written with one call (line_flush):
// the kernel's own console lines then never land inside it.
void line_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void line_flush(void);
long atol(const char *s);
// Value of "key=value" among argv[1..], or def when absent.
const char *arg_get(int argc, char **argv, const char *key, const char *def);
long arg_long(int argc, char **argv, const char *key, long def);
uint64_t rdtsc(void);
// attach_vr(vrid, 0, addr) once the region's owner has granted it to this
// process, yielding until then; the attachment id.
long attach_granted(long vrid, unsigned long addr);
// xorshift64* pseudo-random numbers (deterministic per seed).
uint64_t rand64(uint64_t *state);

#endif
