// Kernel console output, log levels and panic.
#ifndef KPRINTF_H
#define KPRINTF_H
#include <stdarg.h>
#include <stddef.h>

enum { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern int log_level; // messages above this level are dropped (cmdline log=N)

// Where the console goes (main.c adds the serial port and VGA text).
void console_add_sink(void (*write)(const char *s, size_t n));
void console_write(const char *s, size_t n);
int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int kvprintf(const char *fmt, va_list ap);
void klog(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void panic(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define pr_err(...) klog(LOG_ERR, __VA_ARGS__)
#define pr_warn(...) klog(LOG_WARN, __VA_ARGS__)
#define pr_info(...) klog(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) klog(LOG_DEBUG, __VA_ARGS__)

#endif
