// User programs packed into the kernel image (build/progs.S, generated).
#ifndef PROGS_H
#define PROGS_H
#include <stddef.h>
#include <stdint.h>

struct prog {
	const char *name;
	const uint8_t *start, *end;
};

const struct prog *progs_find(const char *name);
void progs_list(void);
#endif
