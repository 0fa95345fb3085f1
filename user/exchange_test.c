// exchange_pmem and the region calls, end to end: contents swapped, virtual
// addresses unchanged, physical frames really swapped, cross-process
// exchange through a grant, every error code with nothing changed, disk
// backing, and frame counts back where they started.
#include <utest.h>

#define PG 4096ul
#define A_ADDR 0x20000000000ul
#define B_ADDR 0x20001000000ul
#define C_ADDR 0x20002000000ul

// Word i of a pattern with tag t; `base` is the word index of addr's first word.
static uint32_t word(uint32_t t, uint64_t i) { return t ^ (uint32_t)(i * 2654435761u); }

static void fill(uint64_t addr, uint64_t pages, uint32_t tag)
{
	for (uint64_t i = 0; i < pages * PG / 4; i++)
		((uint32_t *)addr)[i] = word(tag, i);
}

static int holds_from(uint64_t addr, uint64_t pages, uint32_t tag, uint64_t base)
{
	for (uint64_t i = 0; i < pages * PG / 4; i++)
		if (((uint32_t *)addr)[i] != word(tag, base + i))
			return 0;
	return 1;
}

static int holds(uint64_t addr, uint64_t pages, uint32_t tag) { return holds_from(addr, pages, tag, 0); }

static uint64_t paddr(long vr, uint64_t off) { return (uint64_t)ctrl_vr(vr, VR_OP_PADDR, off, 0, 0, 0); }

static long new_region(uint64_t pages, uint64_t addr, long *vu)
{
	long vr = create_vr(pages * PG, VR_MEM_ALL, -1);
	*vu = attach_vr(vr, 0, addr);
	return vr;
}

static void test_swap(void)
{
	long va, vb;
	long a = new_region(4, A_ADDR, &va), b = new_region(4, B_ADDR, &vb);
	CHECK("regions created and attached", a > 0 && b > 0 && va > 0 && vb > 0);
	fill(A_ADDR, 4, 0xa0a0a0a0);
	fill(B_ADDR, 4, 0xb0b0b0b0);
	uint64_t pa0 = paddr(a, 0), pb0 = paddr(b, 0);
	CHECK_EQ("exchange one page", exchange_pmem(a, b, 0, 0, 1), 0);
	CHECK("A's page 0 now holds B's bytes", holds(A_ADDR, 1, 0xb0b0b0b0));
	CHECK("B's page 0 now holds A's bytes", holds(B_ADDR, 1, 0xa0a0a0a0));
	CHECK("the rest unchanged", holds_from(A_ADDR + PG, 3, 0xa0a0a0a0, PG / 4) &&
					    holds_from(B_ADDR + PG, 3, 0xb0b0b0b0, PG / 4));
	CHECK("frames really swapped", paddr(a, 0) == pb0 && paddr(b, 0) == pa0);
	fill(A_ADDR, 4, 1);
	fill(B_ADDR, 4, 2);
	CHECK_EQ("exchange 3 pages at offsets", exchange_pmem(a, b, PG, 0, 3), 0);
	CHECK("A[1..3] holds B[0..2]", holds(A_ADDR + PG, 3, 2));
	CHECK("B[0..2] holds A[1..3]", holds_from(B_ADDR, 3, 1, PG / 4));
	CHECK("untouched pages kept", holds(A_ADDR, 1, 1) && holds_from(B_ADDR + 3 * PG, 1, 2, 3 * PG / 4));
	CHECK_EQ("ctrl_vr VR_OP_EXCHANGE exchanges back", ctrl_vr(a, VR_OP_EXCHANGE, PG, b, 0, 3), 0);
	CHECK("both regions as before", holds(A_ADDR, 4, 1) && holds(B_ADDR, 4, 2));
	CHECK_EQ("exchange inside one region", exchange_pmem(a, a, 0, 2 * PG, 2), 0);
	CHECK("halves swapped", holds_from(A_ADDR, 2, 1, 2 * PG / 4) && holds(A_ADDR + 2 * PG, 2, 1));
	CHECK_EQ("detach A", detach_vr(va), 0);
	CHECK_EQ("detached address is unmapped", write((void *)A_ADDR, 1), -E_FAULT);
	CHECK_EQ("delete A", delete_vr(a), 0);
	CHECK_EQ("delete B (still attached)", delete_vr(b), 0);
	CHECK_EQ("B's address unmapped by delete", write((void *)B_ADDR, 1), -E_FAULT);
}

static void test_errors(void)
{
	long va, vb;
	long a = new_region(4, A_ADDR, &va), b = new_region(2, B_ADDR, &vb);
	long u = create_vr(2 * PG, VR_MEM_NONE, -1);
	fill(A_ADDR, 4, 7);
	fill(B_ADDR, 2, 8);
	long stale = create_vr(PG, VR_MEM_ALL, -1);
	delete_vr(stale);
	CHECK_EQ("bad id", exchange_pmem(12345, b, 0, 0, 1), -E_BADID);
	CHECK_EQ("stale id", exchange_pmem(stale, b, 0, 0, 1), -E_BADID);
	CHECK_EQ("id of another kind", exchange_pmem(va, b, 0, 0, 1), -E_BADID);
	CHECK_EQ("zero pages", exchange_pmem(a, b, 0, 0, 0), -E_INVAL);
	CHECK_EQ("unaligned offset", exchange_pmem(a, b, 100, 0, 1), -E_ALIGN);
	CHECK_EQ("offset past the end", exchange_pmem(a, b, 0, 2 * PG, 1), -E_RANGE);
	CHECK_EQ("range past the end", exchange_pmem(a, b, 0, PG, 2), -E_RANGE);
	CHECK_EQ("huge offset (overflow)", exchange_pmem(a, b, ~0ul & ~(PG - 1), 0, 1), -E_RANGE);
	CHECK_EQ("huge page count", exchange_pmem(a, b, 0, 0, 1ul << 60), -E_RANGE);
	CHECK_EQ("overlap in one region", exchange_pmem(a, a, 0, PG, 2), -E_OVERLAP);
	CHECK_EQ("not backed", exchange_pmem(a, u, 0, 0, 1), -E_NOTBACKED);
	CHECK_EQ("pin a page of B", ctrl_vr(b, VR_OP_PIN, PG, PG, 0, 0), 0);
	CHECK_EQ("frame busy", exchange_pmem(a, b, 0, 0, 2), -E_BUSY);
	CHECK_EQ("frame busy via ctrl_vr", ctrl_vr(a, VR_OP_EXCHANGE, 0, b, 0, 2), -E_BUSY);
	CHECK_EQ("free busy frames refused", ctrl_vr(b, VR_OP_FREE, 0, 2 * PG, 0, 0), -E_BUSY);
	CHECK_EQ("unpin", ctrl_vr(b, VR_OP_UNPIN, PG, PG, 0, 0), 0);
	CHECK_EQ("unpin twice", ctrl_vr(b, VR_OP_UNPIN, PG, PG, 0, 0), -E_INVAL);
	CHECK("failed calls changed nothing", holds(A_ADDR, 4, 7) && holds(B_ADDR, 2, 8));
	CHECK_EQ("size", ctrl_vr(a, VR_OP_SIZE, 0, 0, 0, 0), (long)(4 * PG));
	CHECK_EQ("paddr not backed", ctrl_vr(u, VR_OP_PADDR, 0, 0, 0, 0), -E_NOTBACKED);
	CHECK_EQ("alloc frames", ctrl_vr(u, VR_OP_ALLOC, PG, PG, 0, 0), 0);
	CHECK("paddr after alloc", ctrl_vr(u, VR_OP_PADDR, PG + 8, 0, 0, 0) > 0);
	CHECK_EQ("alloc twice", ctrl_vr(u, VR_OP_ALLOC, 0, 2 * PG, 0, 0), -E_EXIST);
	CHECK_EQ("free unbacked", ctrl_vr(u, VR_OP_FREE, 0, 2 * PG, 0, 0), -E_NOTBACKED);
	CHECK_EQ("free", ctrl_vr(u, VR_OP_FREE, PG, PG, 0, 0), 0);
	CHECK_EQ("unknown op", ctrl_vr(a, 0x1234, 0, 0, 0, 0), -E_INVAL); // no VR_OP_*
	CHECK_EQ("create size 0", create_vr(0, VR_MEM_ALL, -1), -E_INVAL);
	CHECK_EQ("create bad mem", create_vr(PG, VR_MEM_ALL + 1, -1), -E_INVAL);
	CHECK_EQ("create too big", create_vr(1ul << 40, VR_MEM_NONE, -1), -E_2BIG);
	CHECK_EQ("attach unaligned", attach_vr(u, 0, A_ADDR + 0x5000000 + 12), -E_ALIGN);
	CHECK_EQ("attach over a mapping", attach_vr(u, 0, A_ADDR + PG), -E_EXIST);
	CHECK_EQ("attach in kernel space", attach_vr(u, 0, 0x100000), -E_RANGE);
	CHECK_EQ("attach bad space", attach_vr(u, 99, A_ADDR + 0x6000000), -E_BADID);
	CHECK_EQ("detach bad id", detach_vr(a), -E_BADID);
	CHECK_EQ("delete twice", delete_vr(stale), -E_BADID);
	delete_vr(a);
	delete_vr(b);
	delete_vr(u);
}

// A child is given region C and exchanges its own region's frames with it.
static void test_cross_process(void)
{
	long vc, vd;
	long c = new_region(2, C_ADDR, &vc);
	long d = new_region(1, A_ADDR, &vd); // not granted: the child must be refused
	fill(C_ADDR, 2, 0xc0c0c0c0);
	char args[128];
	fmt_snprintf(args, sizeof(args), "vr=%ld other=%ld vs=%ld", c, d, getvs());
	// Lower priority: the peer runs only once this process blocks in wait,
	// after the grant below.
	long pid = spawn("xchg_peer", args, PRIO_DEFAULT - 1);
	CHECK("peer spawned", pid > 0);
	CHECK_EQ("grant C to the peer", ctrl_vr(c, VR_OP_GRANT, (unsigned long)pid, 0, 0, 0), 0);
	CHECK_EQ("grant to no such process", ctrl_vr(c, VR_OP_GRANT, 99999, 0, 0, 0), -E_SRCH);
	int st = -1;
	wait(pid, &st);
	CHECK_EQ("peer found every check true", st, 0);
	CHECK("C now holds the peer's bytes", holds(C_ADDR, 2, 0xdededede));
	CHECK_EQ("delete C", delete_vr(c), 0);
	delete_vr(d);
}

static void test_disk(void)
{
	long va;
	long a = create_vr(8 * PG, VR_MEM_ALL, 64 * PG); // backed by disk bytes [256 KiB, +32 KiB)
	va = attach_vr(a, 0, A_ADDR);
	CHECK("disk region attached", a > 0 && va > 0);
	fill(A_ADDR, 8, 0x5eed);
	CHECK_EQ("write_vr", write_vr(a, 0, 8 * PG), 0);
	fill(A_ADDR, 8, 0);
	CHECK_EQ("read_vr back", read_vr(a, 0, 8 * PG), 0);
	CHECK("disk round trip", holds(A_ADDR, 8, 0x5eed));
	CHECK_EQ("read_vr unaligned", read_vr(a, 10, PG), -E_ALIGN);
	CHECK_EQ("read_vr past region", read_vr(a, 4 * PG, 8 * PG), -E_RANGE);
	long nodisk = create_vr(PG, VR_MEM_ALL, -1);
	CHECK_EQ("no backing store", read_vr(nodisk, 0, PG), -E_NODEV);
	long far = create_vr(PG, VR_MEM_ALL, 1l << 40);
	CHECK_EQ("beyond the disk", write_vr(far, 0, PG), -E_RANGE);
	delete_vr(far);
	delete_vr(nodisk);
	delete_vr(a);
}

int main(void)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	test_swap();
	test_errors();
	test_cross_process();
	test_disk();
	sysinfo(&s1);
	CHECK_EQ("frames back after the test", s1.frames_free, s0.frames_free);
	return utest_done("exchange_test");
}
