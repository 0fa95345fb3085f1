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

// dev_no: kind in bits 24..31 (and nothing above), channel in 8..23, one
// NIC bit in 0..7 naming a NIC that is there. Nothing is taken on failure.
static void test_get_io_decode(void)
{
	static const struct {
		uint64_t dev, n_in, n_out;
		long want;
	} bad[] = {
		{ IO_DEV(0, CH, 1), 1, 1, -E_NODEV },
		{ IO_DEV(3, CH, 1), 1, 1, -E_NODEV },
		{ IO_DEV(IO_KIND_ETHER, CH, 1) | 1ull << 32, 1, 1, -E_NODEV }, // bits above the kind
		{ IO_DEV(IO_KIND_ETHER, CH, 0), 1, 1, -E_NODEV },           // no NIC
		{ IO_DEV(IO_KIND_ETHER, CH, 3), 1, 1, -E_NODEV },           // two NICs
		{ IO_DEV_ETHER(2, CH), 1, 1, -E_NODEV },                    // only NICs 0 and 1 exist
		{ IO_DEV(IO_KIND_ETHER, CH, 0x80), 1, 1, -E_NODEV },
		{ IO_DEV_ETHER(0, 0), 1, 1, -E_INVAL },                     // channel 0 is no channel
		{ IO_DEV(IO_KIND_RAW, 5, 1), 0, 1, -E_INVAL },              // raw: channel bits must be 0
		{ IO_DEV(IO_KIND_RAW, 0x8000, 2), 0, 1, -E_INVAL },
		{ IO_DEV_RAW(0), 1, 1, -E_INVAL },                          // raw channels only send
		{ IO_DEV_ETHER(0, CH), IO_MAX_BATCH + 1, 1, -E_INVAL },
		{ IO_DEV_ETHER(0, CH), 1, IO_MAX_BATCH + 1, -E_INVAL },
		{ IO_DEV_ETHER(0, CH), 0, 0, -E_INVAL },
		{ IO_DEV_RAW(1), 0, 0, -E_INVAL },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		long r = get_io(1, bad[i].dev, bad[i].n_in, bad[i].n_out);
		if (r != bad[i].want)
			fprintf(stderr, "\nget_io case %zu: %ld, want %ld\n", i, r, bad[i].want);
		CU_ASSERT_EQUAL(r, bad[i].want);
	}
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
	CU_ASSERT_EQUAL(res_live(RES_IO), 0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS), 0);

	long a = get_io(1, IO_DEV_ETHER(1, 0xffff), IO_MAX_BATCH, IO_MAX_BATCH);
	long r = get_io(1, IO_DEV_RAW(0), 0, 3);
	long b = get_io(2, IO_DEV(IO_KIND_ETHER, 0x1234, 1), 5, 0);
	CU_ASSERT_FATAL(res_index(a, RES_IO, NIO) >= 0 && res_index(r, RES_IO, NIO) >= 0 &&
			res_index(b, RES_IO, NIO) >= 0);
	struct io *ca = chan_of(a), *cr = chan_of(r), *cb = chan_of(b);
	CU_ASSERT_TRUE(ca->used && ca->nic == 1 && ca->dev == &fake_nics[1].nd);
	CU_ASSERT_TRUE(ca->channel == 0xffff && !ca->raw && ca->owner == 1);
	CU_ASSERT_TRUE(ca->n_in == IO_MAX_BATCH && ca->n_out == IO_MAX_BATCH);
	CU_ASSERT_TRUE(cr->nic == 0 && cr->raw && cr->channel == 0 && cr->n_in == 0 && cr->n_out == 3);
	CU_ASSERT_TRUE(cb->nic == 0 && cb->channel == 0x1234 && cb->owner == 2 && cb->n_in == 5);
	// Each takes its header frames and counts against its owner.
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0 - 3 * IO_HDR_FRAMES);
	for (int i = 0; i < IO_HDR_FRAMES; i++)
		CU_ASSERT_TRUE(pmem_is_allocated(ca->hdr[i]));
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS), 2);
	CU_ASSERT_EQUAL(proc_usage(2, LIM_CHANNELS), 1);
	CU_ASSERT_EQUAL(res_live(RES_IO), 3);
}

// One channel number per NIC; raw channels name none, so they never clash.
static void test_get_io_exist(void)
{
	long a = get_io(1, IO_DEV_ETHER(0, CH), 1, 1);
	CU_ASSERT(a > 0);
	CU_ASSERT_EQUAL(get_io(1, IO_DEV_ETHER(0, CH), 1, 1), -E_EXIST);
	CU_ASSERT_EQUAL(get_io(2, IO_DEV_ETHER(0, CH), 2, 0), -E_EXIST);
	CU_ASSERT(get_io(2, IO_DEV_ETHER(1, CH), 1, 1) > 0);
	CU_ASSERT(get_io(2, IO_DEV_ETHER(0, CH + 1), 1, 1) > 0);
	CU_ASSERT(get_io(1, IO_DEV_RAW(0), 0, 1) > 0);
	CU_ASSERT(get_io(2, IO_DEV_RAW(0), 0, 1) > 0);
	CU_ASSERT_EQUAL(res_live(RES_IO), 5);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0 - 5 * IO_HDR_FRAMES);
	// Freed, the number is free again, under a new identifier.
	CU_ASSERT_EQUAL(free_io(1, a), 0);
	long a2 = get_io(2, IO_DEV_ETHER(0, CH), 1, 1);
	CU_ASSERT(a2 > 0);
	CU_ASSERT_NOT_EQUAL(a2, a);
	CU_ASSERT_EQUAL(res_slot(a2), res_slot(a));
	CU_ASSERT_EQUAL(free_io(1, a), -E_BADID);
	CU_ASSERT_EQUAL(ctrl(1, a, IO_OP_TIMEOUT, 1, 0), -E_BADID);
}

// Channels per process (plimit), and the table's NIO slots.
static void test_get_io_limits(void)
{
	const uint64_t lim[LIM_N] = { [LIM_FRAMES] = UINT64_MAX, [LIM_REGIONS] = UINT64_MAX,
				      [LIM_CHANNELS] = 2 };
	proc_set_limits(lim);
	long a = get_io(1, IO_DEV_ETHER(0, 1), 1, 1);
	CU_ASSERT(a > 0);
	CU_ASSERT(get_io(1, IO_DEV_RAW(1), 0, 1) > 0);
	uint64_t n = pmem_free_count();
	CU_ASSERT_EQUAL(get_io(1, IO_DEV_ETHER(0, 2), 1, 1), -E_LIMIT);
	CU_ASSERT_EQUAL(pmem_free_count(), n); // nothing taken
	CU_ASSERT_EQUAL(res_live(RES_IO), 2);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS), 2);
	CU_ASSERT(get_io(2, IO_DEV_ETHER(0, 2), 1, 1) > 0); // pid 2 has its own two
	CU_ASSERT_EQUAL(free_io(1, a), 0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS), 1);
	CU_ASSERT(get_io(1, IO_DEV_ETHER(0, 3), 1, 1) > 0);
	CU_ASSERT_EQUAL(get_io(1, IO_DEV_ETHER(0, 4), 1, 1), -E_LIMIT);
}

static void test_get_io_table_full(void)
{
	long id[NIO];
	for (int i = 0; i < NIO; i++) {
		id[i] = get_io(1 + i % 2, IO_DEV_ETHER(i % 2, 100 + i), 1, 1);
		CU_ASSERT(id[i] > 0);
	}
	CU_ASSERT_EQUAL(get_io(1, IO_DEV_ETHER(0, 99), 1, 1), -E_NOMEM);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0 - NIO * IO_HDR_FRAMES);
	for (int i = 0; i < NIO; i++)
		CU_ASSERT_EQUAL(free_io(1 + i % 2, id[i]), 0);
	CU_ASSERT_EQUAL(res_live(RES_IO), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS) + proc_usage(2, LIM_CHANNELS), 0);
}

static void test_free_io_checks(void)
{
	long a = get_io(1, IO_DEV_ETHER(0, CH), 1, 1);
	long vr = region_new(1, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(free_io(1, 0), -E_BADID);
	CU_ASSERT_EQUAL(free_io(1, vr), -E_BADID); // a region's id
	CU_ASSERT_EQUAL(free_io(1, a + 1), -E_BADID);
	CU_ASSERT_EQUAL(free_io(1, res_id(RES_IO, res_gen(a) + 1, res_slot(a))), -E_BADID);
	CU_ASSERT_EQUAL(free_io(2, a), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctrl(2, a, IO_OP_TIMEOUT, 1, 0), -E_NOTOWNER);
	CU_ASSERT_EQUAL(res_live(RES_IO), 1);
	CU_ASSERT_EQUAL(free_io(1, a), 0);
	CU_ASSERT_EQUAL(free_io(1, a), -E_BADID);
	CU_ASSERT_EQUAL(res_live(RES_IO), 0);
	CU_ASSERT_EQUAL(proc_usage(1, LIM_CHANNELS), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, vr), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// IO_OP_REGIONS: each check, nothing held on failure; on success both
// regions are held (delete_vr -E_BUSY) until the next registration or
// free_io, and the slot size is in_size / n_in rounded down to pages.
static void test_regions(void)
{
	long id = get_io(1, IO_DEV_ETHER(0, CH), 3, 2);
	long in = region_new(1, 8, VR_MEM_ALL), out = region_new(1, 2, VR_MEM_ALL);
	long x = region_new(1, 8, VR_MEM_ALL), other = region_new(2, 8, VR_MEM_ALL);
	CU_ASSERT_EQUAL(input(1, id), -E_INVAL); // no regions yet
	CU_ASSERT_EQUAL(output(1, id, 2, (uint64_t[]){ 0, 0 }, (uint64_t[]){ 1, 1 },
			       (uint64_t[]){ 0, 0 }), -E_INVAL);
	CU_ASSERT_EQUAL(ctrl(1, id, IO_OP_REGIONS, USER_BASE + 3 * GiB, 0), -E_FAULT);
	CU_ASSERT_EQUAL(set_regions(1, id, 12345, 8 * PG, out, 2 * PG), -E_BADID);
	CU_ASSERT_EQUAL(set_regions(1, id, other, 8 * PG, out, 2 * PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(set_regions(1, id, x, 8 * PG, other, 2 * PG), -E_NOTOWNER);
	CU_ASSERT_EQUAL(set_regions(1, id, x, 9 * PG, out, 2 * PG), -E_RANGE);
	CU_ASSERT_EQUAL(set_regions(1, id, x, 8 * PG, out, 2 * PG + 1), -E_RANGE);
	CU_ASSERT_EQUAL(set_regions(1, id, x, 3 * PG - 1, out, 2 * PG), -E_INVAL); // slots under a page
	// Another process's space named as the input's space.
	struct io_regions r = { .in_vs = s2, .in_vr = x, .in_size = 8 * PG, .out_vr = out,
				.out_size = PG };
	uwrite(1, SCR_REG, &r, sizeof(r));
	CU_ASSERT_EQUAL(ctrl(1, id, IO_OP_REGIONS, SCR_REG, 0), -E_NOTOWNER);
	r.in_vs = s1, r.out_vs = s2;
	uwrite(1, SCR_REG, &r, sizeof(r));
	CU_ASSERT_EQUAL(ctrl(1, id, IO_OP_REGIONS, SCR_REG, 0), -E_NOTOWNER);
	r.out_vs = s1; // its own space, named: fine
	uwrite(1, SCR_REG, &r, sizeof(r));
	CU_ASSERT_EQUAL(ctrl(1, id, IO_OP_REGIONS, SCR_REG, 0), 0);
	CU_ASSERT_EQUAL(stats(1, id).slot_size, 2 * PG); // 8 pages / 3
	CU_ASSERT_EQUAL(vregion_delete(1, x), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_delete(1, out), -E_BUSY);
	CU_ASSERT_EQUAL(chan_of(id)->in_vr, x);
	// Registered again: the new ones are held, x no longer.
	CU_ASSERT_EQUAL(set_regions(1, id, in, 8 * PG - 100, out, 2 * PG), 0);
	CU_ASSERT_EQUAL(stats(1, id).slot_size, 2 * PG);
	CU_ASSERT_EQUAL(set_regions(1, id, in, 6 * PG, out, 2 * PG), 0);
	CU_ASSERT_EQUAL(stats(1, id).slot_size, 2 * PG);
	CU_ASSERT_EQUAL(set_regions(1, id, in, 6 * PG - 1, out, 2 * PG), 0);
	CU_ASSERT_EQUAL(stats(1, id).slot_size, PG);
	CU_ASSERT_EQUAL(vregion_delete(1, x), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, in), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_delete(1, out), -E_BUSY);
	// A region granted by its owner may be registered; the owner cannot
	// delete it while it is.
	CU_ASSERT_EQUAL(ctl(2, other, VR_OP_GRANT, 1, 0), 0);
	CU_ASSERT_EQUAL(set_regions(1, id, other, 8 * PG, out, 2 * PG), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, in), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, other), -E_BUSY);
	CU_ASSERT_EQUAL(free_io(1, id), 0);
	CU_ASSERT_EQUAL(vregion_delete(2, other), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, out), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), nfree0);
}

// A channel that only sends registers no input region, and the reverse.
static void test_regions_one_way(void)
{
	long tx = get_io(1, IO_DEV_ETHER(0, CH), 0, 1), rxc = get_io(1, IO_DEV_ETHER(0, CH + 1), 1, 0);
	long out = region_new(1, 1, VR_MEM_ALL), in = region_new(1, 1, VR_MEM_ALL);
	CU_ASSERT_EQUAL(set_regions(1, tx, 0, 0, out, PG), 0);
	CU_ASSERT_EQUAL(set_regions(1, rxc, in, PG, 0, 0), 0);
	CU_ASSERT_EQUAL(input(1, tx), -E_INVAL);
	CU_ASSERT_EQUAL(output(1, rxc, 0, NULL, NULL, NULL), -E_INVAL);
	CU_ASSERT_EQUAL(vregion_delete(1, out), -E_BUSY);
	CU_ASSERT_EQUAL(vregion_delete(1, in), -E_BUSY);
	CU_ASSERT_EQUAL(free_io(1, tx), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, out), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, in), -E_BUSY);
	CU_ASSERT_EQUAL(free_io(1, rxc), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, in), 0);
}

// Peers, the timeout, statistics, unknown operations.
static void test_ctrl_ops(void)
{
	struct chan c = chan_new(1, 1, CH, 2, 1, 1, 1);
	CU_ASSERT_EQUAL(ctrl(1, c.id, 0x99, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(ctrl(1, c.id, 0, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(ctrl(2, c.id, IO_OP_STATS, SCR_STATS, 0), -E_NOTOWNER);
	CU_ASSERT_EQUAL(ctrl(2, c.id, IO_OP_PEER, SCR_MAC, 0), -E_NOTOWNER);
	// Peers: numbers 0..15, the MAC read from the caller's memory.
	CU_ASSERT_EQUAL(set_peer(1, c.id, IO_MAX_PEERS, PEER0), -E_INVAL);
	CU_ASSERT_EQUAL(ctrl(1, c.id, IO_OP_PEER, USER_BASE + 3 * GiB, 3), -E_FAULT);
	CU_ASSERT_EQUAL(chan_of(c.id)->peer_valid, 0);
	CU_ASSERT_EQUAL(set_peer(1, c.id, 3, PEER1), 0);
	CU_ASSERT_EQUAL(set_peer(1, c.id, 15, PEER0), 0);
	CU_ASSERT_EQUAL(chan_of(c.id)->peer_valid, 1u << 3 | 1u << 15);
	CU_ASSERT_EQUAL(memcmp(chan_of(c.id)->peer[3], PEER1, 6), 0);
	CU_ASSERT_EQUAL(memcmp(chan_of(c.id)->peer[15], PEER0, 6), 0);
	// Statistics: the NIC's MAC, link, ring; the channel's slot size.
	CU_ASSERT_EQUAL(ctrl(1, c.id, IO_OP_STATS, USER_BASE + 3 * GiB, 0), -E_FAULT);
	struct io_stats s = stats(1, c.id);
	CU_ASSERT_EQUAL(memcmp(s.mac, fake_nics[1].nd.mac, 6), 0);
	CU_ASSERT_EQUAL(s.link_up, 1);
	CU_ASSERT_EQUAL(s.copy_threshold, 256);
	CU_ASSERT_EQUAL(s.slot_size, PG);
	CU_ASSERT_EQUAL(s.nic_frames, RX_SLOTS);
	CU_ASSERT_EQUAL(s.rx_packets + s.rx_batches + s.tx_packets + s.frames_held + s.nic_irqs, 0);
	fake_nic_set_link(1, false);
	fake_nics[1].st.irqs = 5, fake_nics[1].st.doorbells = 6, fake_nics[1].st.rx_no_buf = 7;
	s = stats(1, c.id);
	CU_ASSERT_EQUAL(s.link_up, 0);
	CU_ASSERT_TRUE(s.nic_irqs == 5 && s.nic_doorbells == 6 && s.nic_rx_no_buf == 7);
	// The timeout: input_io sleeps until the deadline, then gives up.
	CU_ASSERT_EQUAL(ctrl(1, c.id, IO_OP_TIMEOUT, 50, 0), 0);
	CU_ASSERT_EQUAL(chan_of(c.id)->timeout_us, 50);
	uint64_t t0 = fake.tsc;
	CU_ASSERT_EQUAL(input(1, c.id), -E_TIMEOUT);
	CU_ASSERT_EQUAL(fake_sleeps, 1);
	CU_ASSERT(fake.tsc >= t0 + 50 * FAKE_TSC_PER_US);
	CU_ASSERT(fake.tsc < t0 + 60 * FAKE_TSC_PER_US);
	CU_ASSERT_EQUAL(got_sizes[0], 0xeeeeeeeeeeeeeeeeull); // nothing written
	CU_ASSERT_FALSE(chan_of(c.id)->waiting);
	CU_ASSERT_EQUAL(stats(1, c.id).rx_batches, 1);
}

// input_io's checks come before it waits.
static void test_input_checks(void)
{
	struct chan c = chan_new(1, 0, CH, 2, 1, 0, 0);
	CU_ASSERT_EQUAL(ctrl(1, c.id, IO_OP_TIMEOUT, 10, 0), 0);
	fake_proc_set_current(1);
	const uint64_t unmapped[3] = { (uint64_t)c.id, USER_BASE + 3 * GiB, SCR_POS };
	CU_ASSERT_EQUAL(sys_input_io(unmapped), -E_FAULT);
	const uint64_t unmapped2[3] = { (uint64_t)c.id, SCR_SIZES, VA_SCR + 4 * PG - 8 };
	CU_ASSERT_EQUAL(sys_input_io(unmapped2), -E_FAULT); // the positions run past the page
	const uint64_t bad[3] = { (uint64_t)c.id + 1, SCR_SIZES, SCR_POS };
	CU_ASSERT_EQUAL(sys_input_io(bad), -E_BADID);
	CU_ASSERT_EQUAL(input(2, c.id), -E_NOTOWNER);
	CU_ASSERT_EQUAL(fake_sleeps, 0);
	CU_ASSERT_EQUAL(stats(1, c.id).rx_batches, 0);
	// The input region was granted by pid 2, who exits: it has no name any more.
	long g = region_new(2, 2, VR_MEM_ALL);
	CU_ASSERT_EQUAL(ctl(2, g, VR_OP_GRANT, 1, 0), 0);
	CU_ASSERT_EQUAL(set_regions(1, c.id, g, 2 * PG, 0, 0), 0);
	CU_ASSERT_EQUAL(vregion_delete(1, c.in_vr), 0);
	fake_proc_remove(2);
	res_release_owner(2);
	CU_ASSERT_EQUAL(input(1, c.id), -E_BADID);
	CU_ASSERT_EQUAL(fake_sleeps, 0);
	// Its frames go when the channel lets go of it.
	uint64_t n = pmem_free_count();
	CU_ASSERT_EQUAL(free_io(1, c.id), 0);
	CU_ASSERT_EQUAL(pmem_free_count(), n + 2 + IO_HDR_FRAMES);
}

static const struct test_case chan_tests[] = {
	TEST(test_get_io_decode), TEST(test_get_io_exist),    TEST(test_get_io_limits),
	TEST(test_get_io_table_full), TEST(test_free_io_checks), TEST(test_regions),
	TEST(test_regions_one_way), TEST(test_ctrl_ops), TEST(test_input_checks),
};

int register_io(void)
{
	return ADD_SUITE("io_chan", setup, teardown, chan_tests);
}
