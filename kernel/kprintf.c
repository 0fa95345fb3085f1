// Kernel console: every message goes to every sink main.c added (COM1 and
// VGA text), so this file names no driver.
#include "kprintf.h"
#include "arch/x86_64/arch.h"
#include <fmt.h>

int log_level = LOG_INFO;
static const char *const level_tag[] = { "error: ", "warn: ", "", "debug: " };

#define MAX_SINKS 4
static void (*sinks[MAX_SINKS])(const char *s, size_t n);
static int nsinks;

void console_add_sink(void (*write)(const char *s, size_t n))
{
	if (nsinks < MAX_SINKS)
		sinks[nsinks++] = write;
}

void console_write(const char *s, size_t n)
{
	for (int i = 0; i < nsinks; i++)
		sinks[i](s, n);
}

int kvprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = fmt_vsnprintf(buf, sizeof(buf), fmt, ap);
	console_write(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvprintf(fmt, ap);
	va_end(ap);
	return n;
}

void klog(int level, const char *fmt, ...)
{
	if (level > log_level)
		return;
	const char *tag = level_tag[level];
	console_write(tag, __builtin_strlen(tag));
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}

void panic(const char *fmt, ...)
{
	arch_irq_save();
	kprintf("\nPANIC: ");
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
	arch_backtrace((uint64_t)__builtin_frame_address(0), 16);
	kprintf("KERNEL_EXIT status=2 (panic)\n");
	arch_exit(2);
}
