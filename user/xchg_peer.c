// exchange_test's peer. Region vr= was granted to it by its parent: it
// exchanges its own region's frames into it. Region other= was not granted
// and space vs= is the parent's: both must be refused. Exits 0 when every
// check held, else the number of the first failed check.
#include <ulib.h>

#define PG 4096ul
#define D_ADDR 0x30000000000ul

static int holds(const uint32_t *p, uint32_t tag)
{
	for (uint64_t i = 0; i < 2 * PG / 4; i++)
		if (p[i] != (tag ^ (uint32_t)(i * 2654435761u)))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	long c = arg_long(argc, argv, "vr", 0), other = arg_long(argc, argv, "other", 0);
	long pvs = arg_long(argc, argv, "vs", 0);
	long d = create_vr(2 * PG, VR_MEM_ALL, -1);
	if (d <= 0 || attach_vr(d, 0, D_ADDR) <= 0)
		return 1;
	uint32_t *p = (uint32_t *)D_ADDR;
	for (uint64_t i = 0; i < 2 * PG / 4; i++)
		p[i] = 0xdededede ^ (uint32_t)(i * 2654435761u);
	if (attach_vr(d, pvs, 0x31000000000ul) != -E_NOTOWNER)
		return 2; // the parent's space is not ours
	if (exchange_pmem(other, d, 0, 0, 1) != -E_NOTOWNER)
		return 3; // not granted
	if (ctrl_vr(c, VR_OP_GRANT, (unsigned long)getpid(), 0, 0, 0) != -E_NOTOWNER)
		return 4; // only the owner grants
	if (delete_vr(c) != -E_NOTOWNER)
		return 5; // a grant is not ownership
	if (exchange_pmem(c, d, 0, 0, 2) != 0)
		return 6;
	if (!holds(p, 0xc0c0c0c0))
		return 7; // our view now shows the parent's bytes
	return 0;
}
