// The only way the kernel touches user memory: every access is checked
// against the caller's page tables, a page at a time, before any byte moves.
#ifndef UACCESS_H
#define UACCESS_H
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

typedef uint64_t uptr_t; // a user address: an integer, never dereferenced

long copy_from_user(void *dst, uptr_t src, size_t n);
long copy_to_user(uptr_t dst, const void *src, size_t n);
// Copies a NUL-terminated string of at most max-1 bytes; returns its length,
// -E_FAULT, or -E_2BIG when no NUL comes within max bytes.
long strncpy_from_user(char *dst, uptr_t src, size_t max);
// The same checks against an explicit space, for callers acting for another.
long uaccess_check(long vs, uptr_t addr, size_t n, bool write);
#endif
