// rxmark.h: insnplugin.c's receive-window markers (R1 as receive work,
// issue 25), no-ops for pktbench and dpdkbench. A window opens while the
// server waits for a burst and closes once it holds the burst's last frame;
// the payload check is counted apart; a poll that found nothing is left
// out: all of it (RX_POLL_EMPTY, a poll with a system call whose work the
// program can see the result of) or its user-mode part (RX_POLL_EMPTY_USER,
// a ring spin, where the guest kernel's interrupts in between are receive
// work). See insnplugin.c for what the plugin counts.
#ifndef RXMARK_H
#define RXMARK_H
#define RX_OPEN() __asm__ volatile("nopl 0x7ab1c0d3(%%rax)" ::: "memory")
#define RX_CLOSE() __asm__ volatile("nopl 0x7ab1c0d4(%%rax)" ::: "memory")
#define RX_CHECK_BEGIN() __asm__ volatile("nopl 0x7ab1c0d5(%%rax)" ::: "memory")
#define RX_CHECK_END() __asm__ volatile("nopl 0x7ab1c0d6(%%rax)" ::: "memory")
#define RX_POLL_BEGIN() __asm__ volatile("nopl 0x7ab1c0d7(%%rax)" ::: "memory")
#define RX_POLL_EMPTY() __asm__ volatile("nopl 0x7ab1c0d8(%%rax)" ::: "memory")
#define RX_POLL_EMPTY_USER() __asm__ volatile("nopl 0x7ab1c0d9(%%rax)" ::: "memory")
// The idle window after the last burst: this long with no frame coming.
#define RX_IDLE_WINDOW_MS 200

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --rx-count (the server under the plugin): a server's lines between bursts
// are kept in memory and printed at its end, and it reads no interrupt
// counts then, so that nothing slow (a serial console, /proc/interrupts)
// runs between a reply and the next window while the next burst may come.
static bool rx_defer;
static char *rx_lines;
static size_t rx_len, rx_cap;

static void rx_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!rx_defer) {
		vprintf(fmt, ap);
		va_end(ap);
		return;
	}
	char line[512];
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t k = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	if (rx_len + k + 1 > rx_cap) {
		size_t cap = rx_cap ? 2 * rx_cap : 65536;
		char *p = realloc(rx_lines, cap);
		if (!p) { // out of memory: print at once instead
			fwrite(line, 1, k, stdout);
			return;
		}
		rx_lines = p, rx_cap = cap;
	}
	memcpy(rx_lines + rx_len, line, k);
	rx_len += k;
}

// The kept lines, printed.
static void rx_flush(void)
{
	if (rx_len)
		fwrite(rx_lines, 1, rx_len, stdout);
	rx_len = 0;
	fflush(stdout);
}
#endif
