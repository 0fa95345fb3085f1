// COM1 (16550 UART at 0x3f8), 115200 8N1, polled output.
#include "uart.h"
#include "../../kernel/arch/x86_64/arch.h"

#define COM1 0x3f8
enum { DATA = 0, IER = 1, FCR = 2, LCR = 3, MCR = 4, LSR = 5 };
#define LSR_THRE 0x20

static int uart_ready;

void uart_init(void)
{
	arch_outb(COM1 + IER, 0);
	arch_outb(COM1 + LCR, 0x80); // DLAB: divisor follows
	arch_outb(COM1 + DATA, 1);   // 115200 baud
	arch_outb(COM1 + IER, 0);
	arch_outb(COM1 + LCR, 0x03); // 8N1
	arch_outb(COM1 + FCR, 0xc7); // FIFO on, cleared
	arch_outb(COM1 + MCR, 0x03);
	uart_ready = 1;
}

static void uart_putc(char c)
{
	// Bounded wait: a missing UART must not hang the kernel.
	for (int i = 0; i < 100000 && !(arch_inb(COM1 + LSR) & LSR_THRE); i++)
		arch_pause();
	arch_outb(COM1 + DATA, (uint8_t)c);
}

void uart_write(const char *s, size_t n)
{
	if (!uart_ready)
		return;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			uart_putc('\r');
		uart_putc(s[i]);
	}
}
