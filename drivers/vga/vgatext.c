// VGA text mode console (80x25 at physical 0xb8000), scrolling.
#include "vgatext.h"
#include "../../kernel/arch/x86_64/arch.h"
#include <string.h>

#define COLS 80
#define ROWS 25
#define ATTR 0x0700

static uint16_t *screen;
static int row, col;

void vga_init(void)
{
	screen = arch_p2v(0xb8000);
	for (int i = 0; i < COLS * ROWS; i++)
		screen[i] = ATTR | ' ';
	row = col = 0;
}

static void newline(void)
{
	col = 0;
	if (++row < ROWS)
		return;
	memmove(screen, screen + COLS, (ROWS - 1) * COLS * 2);
	for (int i = 0; i < COLS; i++)
		screen[(ROWS - 1) * COLS + i] = ATTR | ' ';
	row = ROWS - 1;
}

void vga_write(const char *s, size_t n)
{
	if (!screen)
		return;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n') {
			newline();
			continue;
		}
		if (s[i] == '\r')
			continue;
		screen[row * COLS + col] = ATTR | (uint8_t)s[i];
		if (++col == COLS)
			newline();
	}
}
