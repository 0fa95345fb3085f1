#ifndef UART_H
#define UART_H
#include <stddef.h>
void uart_init(void);
void uart_write(const char *s, size_t n);
#endif
