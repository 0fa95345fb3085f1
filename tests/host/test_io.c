// io: the I/O manager (kernel/res/io.c, io_net.c) over two fake NICs
// (fake_netdev.c), through its system calls as a process makes them: the
// arguments live in the caller's simulated user memory. Channels and their
// control operations; received frames dispatched to their channel, copied
// or exchanged into slots, held, or dropped by cause; sends with their
// headers, gather lists, pins and doorbells; and what free_io and an exit
// give back.
#include "res_test.h"
#include "fake_netdev.h"
#include "res/io_priv.h"
#include "res/res.h"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-const-variable"

long sys_get_io(const uint64_t *a);
long sys_ctrl_io(const uint64_t *a);
long sys_input_io(const uint64_t *a);
long sys_output_io(const uint64_t *a);
long sys_free_io(const uint64_t *a);

#define RX_SLOTS FAKE_NIC_RX_SLOTS
#define VA_SCR USER_BASE              // per process: the call arguments (4 pages)
#define VA_IN (USER_BASE + 1 * GiB)    // input region
#define VA_OUT (USER_BASE + 2 * GiB)   // output region
#define SCR_ID (VA_SCR)                // get_io's id
#define SCR_REG (VA_SCR + 64)          // struct io_regions
#define SCR_MAC (VA_SCR + 256)         // a peer's MAC
#define SCR_STATS (VA_SCR + 512)       // struct io_stats
#define SCR_SIZES (VA_SCR + PG)        // input_io's sizes
#define SCR_POS (VA_SCR + PG + 1024)   // input_io's positions
#define SCR_PEERS (VA_SCR + 2 * PG)    // output_io's three arrays
#define SCR_OSIZES (VA_SCR + 2 * PG + 1024)
#define SCR_OPOS (VA_SCR + 2 * PG + 2048)
#define CH 7 // the usual channel number

static const uint8_t PEER0[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01 };
static const uint8_t PEER1[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x02 };

static long s1, s2;
static uint64_t nfree0; // after setup: NICs attached, processes made

static void io_start(long threshold, bool scrub)
{
	struct io_options o = { .copy_threshold = threshold, .rx_scrub = scrub };
	io_init(&o);
}

static long scratch(int pid, long vs)
{
	long vr = region_new(pid, 4, VR_MEM_ALL);
	attach(pid, vr, vs, VA_SCR);
	return vr;
}

static void setup(void)
{
	res_machine_setup();
	fake_netdev_reset();
	memset(ios, 0, sizeof(ios));
	memset(io_nics, 0, sizeof(io_nics));
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(0, RX_SLOTS, FAKE_NIC_TX_SLOTS), 0);
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(1, RX_SLOTS, FAKE_NIC_TX_SLOTS), 1);
	io_start(256, true);
	s1 = proc_new(1);
	s2 = proc_new(2);
	scratch(1, s1);
	scratch(2, s2);
	fake_proc_set_current(1);
	nfree0 = pmem_free_count();
}

// The device finishes whatever is in flight, so channels can go; then
// every owner's resources, the NICs (their ring pages), the machine.
static void teardown(void)
{
	for (int i = 0; i < FAKE_NIC_MAX; i++)
		if (fake_nics[i].attached)
			fake_nic_tx_complete(i, -1);
	res_machine_teardown();
	jmp_buf jb;
	if (setjmp(jb) == 0) {
		fake_fatal_env = &jb;
		netdev_detach_all();
	}
	fake_fatal_env = NULL;
}

// ---- user memory and system calls, as process pid

static void uwrite(int pid, uint64_t va, const void *src, size_t n)
{
	long vs = proc_vspace(pid);
	const uint8_t *s = src;
	while (n) {
		uint64_t *pte = vspace_pte(vs, va);
		if (!pte || !(*pte & PTE_P))
			fake_fatal("uwrite: %#lx not mapped", (unsigned long)va);
		size_t off = va & (PG - 1), k = PG - off;
		k = k < n ? k : n;
		memcpy((uint8_t *)arch_p2v(*pte & PTE_ADDR_MASK) + off, s, k);
		s += k, va += k, n -= k;
	}
}

static void uread(int pid, uint64_t va, void *dst, size_t n)
{
	if (!user_read(proc_vspace(pid), va, dst, n))
		fake_fatal("uread: %#lx not mapped", (unsigned long)va);
}

static long get_io(int pid, uint64_t dev, uint64_t n_in, uint64_t n_out)
{
	fake_proc_set_current(pid);
	uwrite(pid, SCR_ID, &(long){ 0 }, sizeof(long));
	const uint64_t a[4] = { dev, n_in, n_out, SCR_ID };
	long r = sys_get_io(a);
	if (r)
		return r;
	long id;
	uread(pid, SCR_ID, &id, sizeof(id));
	return id;
}

static long ctrl(int pid, long id, uint64_t op, uint64_t a0, uint64_t a1)
{
	fake_proc_set_current(pid);
	const uint64_t a[4] = { (uint64_t)id, op, a0, a1 };
	return sys_ctrl_io(a);
}

static long free_io(int pid, long id)
{
	fake_proc_set_current(pid);
	const uint64_t a[1] = { (uint64_t)id };
	return sys_free_io(a);
}

static long set_regions(int pid, long id, long in_vr, uint64_t in_size, long out_vr,
			uint64_t out_size)
{
	struct io_regions r = { .in_vr = in_vr, .in_addr = VA_IN, .in_size = in_size,
				.out_vr = out_vr, .out_addr = VA_OUT, .out_size = out_size };
	uwrite(pid, SCR_REG, &r, sizeof(r));
	return ctrl(pid, id, IO_OP_REGIONS, SCR_REG, 0);
}

static long set_peer(int pid, long id, int n, const uint8_t mac[6])
{
	uwrite(pid, SCR_MAC, mac, 6);
	return ctrl(pid, id, IO_OP_PEER, SCR_MAC, (uint64_t)n);
}

static struct io_stats stats(int pid, long id)
{
	struct io_stats s;
	memset(&s, 0xff, sizeof(s));
	CU_ASSERT_EQUAL(ctrl(pid, id, IO_OP_STATS, SCR_STATS, 0), 0);
	uread(pid, SCR_STATS, &s, sizeof(s));
	return s;
}

static uint64_t got_sizes[IO_MAX_BATCH], got_pos[IO_MAX_BATCH];

// input_io; the sizes and positions it wrote land in got_sizes, got_pos.
static long input(int pid, long id)
{
	fake_proc_set_current(pid);
	uint64_t fill[IO_MAX_BATCH];
	memset(fill, 0xee, sizeof(fill));
	uwrite(pid, SCR_SIZES, fill, sizeof(fill));
	uwrite(pid, SCR_POS, fill, sizeof(fill));
	const uint64_t a[3] = { (uint64_t)id, SCR_SIZES, SCR_POS };
	long r = sys_input_io(a);
	uread(pid, SCR_SIZES, got_sizes, sizeof(got_sizes));
	uread(pid, SCR_POS, got_pos, sizeof(got_pos));
	return r;
}

static long output(int pid, long id, int n, const uint64_t *peers, const uint64_t *sizes,
		   const uint64_t *pos)
{
	fake_proc_set_current(pid);
	uwrite(pid, SCR_PEERS, peers, n * 8ul);
	uwrite(pid, SCR_OSIZES, sizes, n * 8ul);
	uwrite(pid, SCR_OPOS, pos, n * 8ul);
	const uint64_t a[4] = { (uint64_t)id, SCR_PEERS, SCR_OSIZES, SCR_OPOS };
	return sys_output_io(a);
}

static struct io *chan_of(long id) { return &ios[res_slot(id)]; }

// A channel of pid on nic with n_in slots of slot_pages pages (VA_IN) and
// an output region of out_pages pages (VA_OUT); either may be 0.
struct chan {
	long id, in_vr, out_vr;
	int pid;
};

static struct chan chan_new(int pid, int nic, uint16_t ch, uint32_t n_in, uint64_t slot_pages,
			    uint32_t n_out, uint64_t out_pages)
{
	struct chan c = { .pid = pid };
	long vs = proc_vspace(pid);
	c.id = get_io(pid, IO_DEV_ETHER(nic, ch), n_in, n_out);
	CU_ASSERT_FATAL(c.id > 0);
	if (n_in) {
		c.in_vr = region_new(pid, n_in * slot_pages, VR_MEM_ALL);
		attach(pid, c.in_vr, vs, VA_IN);
	}
	if (n_out) {
		c.out_vr = region_new(pid, out_pages, VR_MEM_ALL);
		attach(pid, c.out_vr, vs, VA_OUT);
	}
	CU_ASSERT_EQUAL_FATAL(set_regions(pid, c.id, c.in_vr, n_in * slot_pages * PG, c.out_vr,
					  out_pages * PG), 0);
	return c;
}

// ---- frames on the wire

static uint8_t frame_buf[4 * PAGE_SIZE + 64];

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)), put16(p + 2, (uint16_t)v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

static uint8_t pay(uint8_t tag, uint32_t i) { return (uint8_t)(tag * 29 + i * 7 + (i >> 9)); }

// A frame for channel ch on nic: header (batch 1) with length field hlen,
// then `len` payload bytes pay(tag, i). Returns the frame's length.
static uint32_t mkframe(int nic, uint16_t ch, uint32_t hlen, uint32_t len, uint8_t tag)
{
	uint8_t *f = frame_buf;
	memcpy(f, fake_nics[nic].nd.mac, 6);
	memcpy(f + 6, PEER0, 6);
	put16(f + 12, WIRE_ETHERTYPE);
	uint8_t *w = f + WIRE_ETH_HLEN;
	put16(w, ch);
	put16(w + 2, 0);
	put32(w + 4, tag);
	put16(w + 8, 1);
	put16(w + 10, 0);
	put32(w + 12, hlen);
	for (uint32_t i = 0; i < len; i++)
		f[WIRE_FRAME_HLEN + i] = pay(tag, i);
	return WIRE_FRAME_HLEN + len;
}

// A well-formed frame with len payload bytes arrives on nic (no interrupt).
static void rx(int nic, uint16_t ch, uint32_t len, uint8_t tag)
{
	CU_ASSERT_FATAL(fake_nic_rx(nic, frame_buf, mkframe(nic, ch, len, len, tag), false) > 0);
}

// The payload of slot k (per got_sizes/got_pos) in pid's input region
// reads pay(tag, i).
static bool payload_is(int pid, int k, uint32_t len, uint8_t tag)
{
	static uint8_t buf[4 * PAGE_SIZE];
	if (got_sizes[k] != len || len > sizeof(buf))
		return false;
	uread(pid, VA_IN + got_pos[k], buf, len);
	for (uint32_t i = 0; i < len; i++)
		if (buf[i] != pay(tag, i))
			return false;
	return true;
}

// ================================================================ channels

static void test_smoke(void)
{
	struct chan c = chan_new(1, 0, CH, 2, 1, 1, 2);
	rx(0, CH, 100, 1);
	rx(0, CH, 2000, 2);
	CU_ASSERT_EQUAL(input(1, c.id), 2);
	CU_ASSERT_TRUE(payload_is(1, 0, 100, 1));
	CU_ASSERT_TRUE(payload_is(1, 1, 2000, 2));
}

static const struct test_case chan_tests[] = {
	TEST(test_smoke),
};

int register_io(void)
{
	return ADD_SUITE("io_chan", setup, teardown, chan_tests);
}
