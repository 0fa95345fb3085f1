#ifndef VGATEXT_H
#define VGATEXT_H
#include <stddef.h>
void vga_init(void);
void vga_write(const char *s, size_t n);
#endif
