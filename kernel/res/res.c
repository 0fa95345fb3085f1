// The table of managers: adding a resource kind is a file and a line here.
#include "res.h"
#include <stddef.h>

extern const struct res_ops vregion_ops, vuspace_ops, proc_ops, vspace_ops, io_ops;
extern long vregion_live(void), vuspace_live(void), io_live(void);

static const struct res_ops *const managers[RES_NKIND] = {
	[RES_VSPACE] = &vspace_ops,
	[RES_VREGION] = &vregion_ops,
	[RES_VUSPACE] = &vuspace_ops,
	[RES_PROC] = &proc_ops,
	[RES_IO] = &io_ops,
};

const struct res_ops *res_ops_of(enum res_kind k)
{
	return k > 0 && k < RES_NKIND ? managers[k] : NULL;
}

// Attachments go before the regions they map, regions before spaces.
void res_release_owner(int pid)
{
	static const enum res_kind order[] = { RES_IO, RES_VUSPACE, RES_VREGION };
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct res_ops *m = res_ops_of(order[i]);
		if (m && m->release)
			m->release(pid);
	}
}

long res_live(enum res_kind k)
{
	switch (k) {
	case RES_VREGION: return vregion_live();
	case RES_VUSPACE: return vuspace_live();
	case RES_IO: return io_live();
	default: return 0;
	}
}
