// Kernel console: every message goes to COM1 and to VGA text.
#include "kprintf.h"
#include "arch/x86_64/arch.h"
#include "../drivers/serial/uart.h"
#include "../drivers/vga/vgatext.h"
#include <fmt.h>

int log_level = LOG_INFO;
static const char *const level_tag[] = { "error: ", "warn: ", "", "debug: " };

void console_write(const char *s, size_t n)
{
	uart_write(s, n);
	vga_write(s, n);
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
