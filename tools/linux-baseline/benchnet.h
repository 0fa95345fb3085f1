// benchnet.h: the small socket, byte-order, clock and failure helpers that
// pktbench.c, lbbench.c, relaybench.c and fsbench.c share (one copy, included by each; every
// program is one translation unit, so the helpers stay static).
// The includer defines _GNU_SOURCE first, as the three programs do.
#ifndef BENCHNET_H
#define BENCHNET_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// Called by die() before its line, when set (pktbench: its diagnostics).
static void (*die_hook)(void);

// Prints "DONE fail <message>" (the line the guest's init and the host's
// scripts look for) and exits 1.
static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;
	if (die_hook)
		die_hook();
	fflush(stdout);
	printf("DONE fail ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

// CLOCK_MONOTONIC in nanoseconds.
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// This machine's busy time so far in ns: CLOCK_MONOTONIC less cpu0's idle
// time from /proc/timer_list (".idle_sleeptime" and ".iowait_sleeptime",
// kept by the nohz code exactly: idle stops on every interrupt entry). The
// guest has one CPU; under -icount shift=0 a busy ns is one guest
// instruction (pktbench, fsbench). -1 when the kernel does not show its idle time.
static inline long long busy_ns(void)
{
	FILE *f = fopen("/proc/timer_list", "r");
	char line[512];
	long long idle = 0;
	int found = 0;
	uint64_t mono = now_ns();
	if (!f)
		return -1;
	while (found < 2 && fgets(line, sizeof line, f)) {
		char *p = strstr(line, ".idle_sleeptime");
		if (!p)
			p = strstr(line, ".iowait_sleeptime");
		if (p && (p = strchr(p, ':')))
			idle += atoll(p + 1), found++;
	}
	fclose(f);
	return found ? (long long)mono - idle : -1;
}

// Big-endian (network order) fields of the programs' own headers.
static inline void put_be32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint64_t get_be64(const uint8_t *p) { return (uint64_t)get_be32(p) << 32 | get_be32(p + 4); }

// Send and receive timeouts of ms on a socket, so no read or write blocks
// for longer (the call then fails with EAGAIN).
static inline void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// Reads (writing false) or writes exactly n bytes; 0 on success, -1 on
// EOF, error or timeout.  A signal that interrupts the call before any
// byte moved is retried.  Inlined into each, so that neither tests
// `writing` in its loop.
static inline __attribute__((always_inline)) int rw_full(int fd, uint8_t *p, size_t n, bool writing)
{
	while (n) {
		ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r, n -= (size_t)r;
	}
	return 0;
}

static inline int read_full(int fd, uint8_t *p, size_t n) { return rw_full(fd, p, n, false); }

// (write() leaves the bytes as they are: the cast only shares the loop.)
static inline int write_full(int fd, const uint8_t *p, size_t n) { return rw_full(fd, (uint8_t *)p, n, true); }

#endif
