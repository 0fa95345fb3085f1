#include "progs.h"
#include "kprintf.h"
#include <string.h>

extern const struct prog progs_table[]; // ends with a NULL name

const struct prog *progs_find(const char *name)
{
	for (const struct prog *p = progs_table; p->name; p++)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

void progs_list(void)
{
	kprintf("programs:");
	for (const struct prog *p = progs_table; p->name; p++)
		kprintf(" %s", p->name);
	kprintf("\n");
}
