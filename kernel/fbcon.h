// Text console on a linear RGB framebuffer (UEFI's GOP, VBE), for machines
// without VGA text. Names no device: main.c hands it the boot loader's
// description and the mapped pixels.
#ifndef FBCON_H
#define FBCON_H
#include "bootinfo.h"
#include <stddef.h>

// Takes the screen's geometry; 0, or -1 when it is not an RGB framebuffer
// of 15, 16, 24 or 32 bits per pixel big enough for 40x10 characters. Text
// written before fbcon_attach is kept (up to a screenful) and drawn then.
int fbcon_init(const struct boot_fb *fb);
// Starts drawing into the mapped framebuffer (pitch * height bytes).
void fbcon_attach(void *pixels);
void fbcon_write(const char *s, size_t n);
// Characters per line and lines on the screen (0 before fbcon_init).
int fbcon_cols(void);
int fbcon_rows(void);
#endif
