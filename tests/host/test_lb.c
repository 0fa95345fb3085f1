// lb: the balancing rule of kernel/net/balance.c (lb_decide), case by case
// over a hand-made past-period state: overload, lowest priority, the others
// not moved, most spare capacity, the charge of the mover's volume, ties,
// tlb's unbinding, unusable NICs. Volumes in "kbytes" of a 1000-per-period NIC.
// Then IO_OP_BALANCE through the I/O manager: each process's settings bind
// only its domain; the balancer's lines and every limited line within
// their budget (kernel/klimit.c), the rest counted.
#include "host.h"
#include "res_test.h"
#include "fake_netdev.h"
#include "net/balance.h"
#include "res/io_priv.h"
#include "net/txbatch.h"
#include "net/demux.h"
#include "klimit.h"
#include "arch/x86_64/timer.h"
#include <io.h>
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <string.h>

long sys_get_io(const uint64_t *a);
long sys_ctrl_io(const uint64_t *a);
long sys_free_io(const uint64_t *a);

static struct lb_state st;
enum { A, B, C, D };

static void setup(void)
{
	memset(&st, 0, sizeof(st));
	st.over_pct = 90;
	st.cap[0] = st.cap[1] = 1000;
	for (int i = 0; i < LB_MAX; i++)
		st.s[i].nic = st.s[i].past_nic = -1;
}

static void sender(int i, int prio, int nic, int past_nic, uint64_t past_vol)
{
	st.s[i] = (struct lb_sender){ .used = true, .prio = (uint8_t)prio, .nic = (int8_t)nic,
				      .past_nic = (int8_t)past_nic, .past_vol = past_vol };
}

// The paper's first period: A (low) and C (high) on NIC0, 951 of 1000
// (overloaded), B (low) alone on NIC1, 311.
static void paper_period(int policy)
{
	st.past[0] = 951, st.past[1] = 311;
	sender(A, 2, policy == IO_LB_TLB ? -1 : 0, 0, 850);
	sender(B, 2, policy == IO_LB_TLB ? -1 : 1, 1, 311);
	sender(C, 4, policy == IO_LB_TLB ? -1 : 0, 0, 101);
}

static int decide(int i, int policy, int *why) { return lb_decide(&st, i, policy, 0x3, why); }

static void test_overload_threshold(void)
{
	st.past[0] = 900, st.past[1] = 899;
	CU_ASSERT_TRUE(lb_overloaded(&st, 0));  // exactly 90 %
	CU_ASSERT_FALSE(lb_overloaded(&st, 1)); // just under
	st.cap[2] = 0, st.past[2] = 5;
	CU_ASSERT_FALSE(lb_overloaded(&st, 2)); // no NIC there
}

// History, C first: C is not the lowest on NIC0 and stays; B was not on an
// overloaded NIC and stays; A, the lowest on NIC0, moves to NIC1 and is
// charged there: state Z (C alone on NIC0).
static void test_history_paper_c_first(void)
{
	int why;
	paper_period(IO_LB_HISTORY);
	CU_ASSERT_EQUAL(decide(C, IO_LB_HISTORY, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_NOTLOWEST);
	CU_ASSERT_EQUAL(decide(B, IO_LB_HISTORY, &why), 1);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_NOTOVER);
	CU_ASSERT_EQUAL(st.charge[1], 0);
	CU_ASSERT_EQUAL(decide(A, IO_LB_HISTORY, &why), 1);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_OVERLOAD);
	CU_ASSERT_TRUE(st.s[A].moved);
	CU_ASSERT_FALSE(st.s[B].moved || st.s[C].moved);
	CU_ASSERT_EQUAL(st.charge[1], 850);
	CU_ASSERT_EQUAL(lb_spare(&st, 1, true), 1000 - 311 - 850);
	CU_ASSERT_EQUAL(lb_spare(&st, 0, true), 1000 - 951 + 850); // what A leaves
}

// History, A first: the same bindings whatever the order (B keeps its NIC
// although NIC1's spare went below NIC0's after A's charge).
static void test_history_paper_a_first(void)
{
	int why;
	paper_period(IO_LB_HISTORY);
	CU_ASSERT_EQUAL(decide(A, IO_LB_HISTORY, &why), 1);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_OVERLOAD);
	CU_ASSERT_TRUE(lb_spare(&st, 1, true) < lb_spare(&st, 0, true));
	CU_ASSERT_EQUAL(decide(B, IO_LB_HISTORY, &why), 1);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_NOTOVER);
	CU_ASSERT_EQUAL(decide(C, IO_LB_HISTORY, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_NOTLOWEST);
}

// Two senders share the lowest priority on the overloaded NIC: the first to
// decide moves, the second then sees another of its NIC moved and stays.
static void test_history_one_mover_per_nic(void)
{
	int why;
	paper_period(IO_LB_HISTORY);
	sender(D, 2, 0, 0, 10);
	CU_ASSERT_EQUAL(decide(D, IO_LB_HISTORY, &why), 1);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_OVERLOAD);
	CU_ASSERT_EQUAL(decide(A, IO_LB_HISTORY, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_MOVED);
	CU_ASSERT_EQUAL(st.charge[1], 10);
}

// No NIC overloaded: every sender goes to the most spare NIC, charged its
// past volume, so the next one sees less spare there.
static void test_history_no_overload_spreads(void)
{
	int why;
	st.past[0] = 500, st.past[1] = 300;
	sender(A, 2, 0, 0, 400);
	sender(B, 2, 0, 0, 100);
	CU_ASSERT_EQUAL(decide(A, IO_LB_HISTORY, &why), 1); // spare 700 against 500
	CU_ASSERT_EQUAL(why, IO_LB_WHY_SPARE);
	CU_ASSERT_EQUAL(lb_spare(&st, 1, true), 300);
	CU_ASSERT_EQUAL(lb_spare(&st, 0, true), 900);
	CU_ASSERT_EQUAL(decide(B, IO_LB_HISTORY, &why), 0); // 900 against 300: stays, uncharged
	CU_ASSERT_EQUAL(lb_spare(&st, 0, true), 900);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_SPARE);
	CU_ASSERT_TRUE(st.s[A].moved);
	CU_ASSERT_FALSE(st.s[B].moved);
}

// Both NICs overloaded, the lowest sender's own NIC has the most spare: kept.
static void test_history_own_nic_best(void)
{
	int why;
	st.past[0] = 920, st.past[1] = 990;
	sender(A, 2, 0, 0, 500);
	sender(C, 4, 0, 0, 420);
	sender(B, 4, 1, 1, 990);
	CU_ASSERT_EQUAL(decide(A, IO_LB_HISTORY, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_KEEP_BEST);
	CU_ASSERT_FALSE(st.s[A].moved);
	CU_ASSERT_EQUAL(st.charge[0], 0);
	// B is alone (so the lowest) on the overloaded NIC1: NIC0 has more spare
	CU_ASSERT_EQUAL(decide(B, IO_LB_HISTORY, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_OVERLOAD);
}

// The first period: nothing carried yet, so spare is equal everywhere; the
// tie goes to the NIC fewer senders were bound to, then the lower number:
// A on NIC0, B on NIC1, C on NIC0 (the paper's first 10 s).
static void test_first_period_ties(void)
{
	int why;
	for (int policy = IO_LB_TLB; policy <= IO_LB_HISTORY; policy++) {
		setup();
		sender(A, 2, -1, -1, 0);
		CU_ASSERT_EQUAL(decide(A, policy, &why), 0);
		CU_ASSERT_EQUAL(why, policy == IO_LB_TLB ? IO_LB_WHY_TLB : IO_LB_WHY_NEW);
		sender(B, 2, -1, -1, 0);
		CU_ASSERT_EQUAL(decide(B, policy, &why), 1);
		sender(C, 4, -1, -1, 0);
		CU_ASSERT_EQUAL(decide(C, policy, &why), 0);
		CU_ASSERT_EQUAL(st.nbound[0], 2);
		CU_ASSERT_EQUAL(st.nbound[1], 1);
	}
}

// tlb after the turn (everyone unbound): spare counts only the charges of
// those bound since; the outcome depends on who sends first. C ends with B
// (state X) unless A decides last after B and C.
static void test_tlb_orders(void)
{
	static const int orders[6][3] = { { A, B, C }, { A, C, B }, { B, A, C },
					  { B, C, A }, { C, A, B }, { C, B, A } };
	static const int c_with[6] = { B, B, B, A, B, A };
	for (int k = 0; k < 6; k++) {
		int why, nic[3];
		setup();
		paper_period(IO_LB_TLB);
		for (int j = 0; j < 3; j++) {
			nic[orders[k][j]] = decide(orders[k][j], IO_LB_TLB, &why);
			CU_ASSERT_EQUAL(why, IO_LB_WHY_TLB);
		}
		int other = c_with[k] == A ? B : A;
		CU_ASSERT_EQUAL(nic[C], nic[c_with[k]]);
		CU_ASSERT_NOT_EQUAL(nic[C], nic[other]);
		CU_ASSERT_EQUAL(st.charge[0] + st.charge[1], 850 + 311 + 101);
	}
}

// A NIC that cannot reach the peer is never chosen; a sender bound to one
// rebinds as if it had none; no usable NIC at all: -1, nothing charged.
static void test_unusable(void)
{
	int why;
	paper_period(IO_LB_HISTORY);
	st.s[B].nic = 1;
	CU_ASSERT_EQUAL(lb_decide(&st, B, IO_LB_HISTORY, 0x1, &why), 0);
	CU_ASSERT_EQUAL(why, IO_LB_WHY_NEW);
	CU_ASSERT_EQUAL(st.charge[0], 311);
	CU_ASSERT_EQUAL(lb_most_spare(&st, 0, true), -1);
	setup();
	sender(A, 2, -1, -1, 7);
	CU_ASSERT_EQUAL(lb_decide(&st, A, IO_LB_TLB, 0, &why), -1);
	CU_ASSERT_EQUAL(st.s[A].nic, -1);
	CU_ASSERT_EQUAL(st.charge[0] + st.charge[1], 0);
	CU_ASSERT_STRING_EQUAL(lb_why_name(IO_LB_WHY_OVERLOAD), "overloaded+lowest:most-spare");
	CU_ASSERT_STRING_EQUAL(lb_why_name(99), "?");
}

// ---- IO_OP_BALANCE through the I/O manager (two fake NICs): bad input
// refused with its error and counted; channels of the same settings share
// a domain, other settings make another; a domain starts anew when its
// last channel closes.

#define VA_ARGS USER_BASE

static int me = 1; // the calling process: its args page at VA_ARGS

static void io_setup(void)
{
	res_machine_setup();
	fake_netdev_reset();
	memset(ios, 0, sizeof(ios));
	memset(demux_nics, 0, sizeof(demux_nics));
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(0, FAKE_NIC_RX_SLOTS, FAKE_NIC_TX_SLOTS), 0);
	CU_ASSERT_EQUAL_FATAL(fake_nic_attach(1, FAKE_NIC_RX_SLOTS, FAKE_NIC_TX_SLOTS), 1);
	struct io_options o = { .copy_threshold = 256, .rx_scrub = true };
	io_init(&o);
	long vs = proc_new(1);
	attach(1, region_new(1, 4, VR_MEM_ALL), vs, VA_ARGS);
	fake_proc_set_current(1);
	me = 1;
}

// Process pid, with its own args page, makes the next calls.
static void become(int pid)
{
	if (!proc_exists(pid)) {
		long vs = proc_new(pid);
		attach(pid, region_new(pid, 4, VR_MEM_ALL), vs, VA_ARGS);
	}
	fake_proc_set_current(pid);
	me = pid;
}

static long open_chan(uint8_t mask, uint16_t ch)
{
	const uint64_t a[4] = { IO_DEV(IO_KIND_ETHER, ch, mask), 1, 1, VA_ARGS };
	long r = sys_get_io(a), id = 0;
	if (r)
		return r;
	CU_ASSERT_TRUE(user_read(proc_vspace(me), VA_ARGS, &id, sizeof(id)));
	return id;
}

static long balance(long id, uint64_t policy, uint64_t t_ms, uint64_t pct)
{
	const uint64_t a[5] = { (uint64_t)id, IO_OP_BALANCE, policy, t_ms, pct };
	return sys_ctrl_io(a);
}

static struct io_lbstats lbstats(long id)
{
	struct io_lbstats s;
	const uint64_t a[5] = { (uint64_t)id, IO_OP_LBSTATS, VA_ARGS + 64, 0, 0 };
	memset(&s, 0xee, sizeof(s));
	CU_ASSERT_EQUAL(sys_ctrl_io(a), 0);
	CU_ASSERT_TRUE(user_read(proc_vspace(me), VA_ARGS + 64, &s, sizeof(s)));
	return s;
}

static long close_chan(long id)
{
	const uint64_t a[1] = { (uint64_t)id };
	return sys_free_io(a);
}

static void test_balance_op(void)
{
	long one = open_chan(0x1, 20), two = open_chan(0x3, 21), other = open_chan(0x3, 22);
	CU_ASSERT_TRUE_FATAL(one > 0 && two > 0 && other > 0);
	uint64_t refused0 = lbstats(one).refused;
	CU_ASSERT_EQUAL(lbstats(one).policy, 0);
	CU_ASSERT_EQUAL(lbstats(one).nic, -1);
	CU_ASSERT_EQUAL(balance(one, IO_LB_HISTORY, 0, 0), -E_INVAL); // one NIC
	CU_ASSERT_EQUAL(balance(two, 0, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(balance(two, IO_LB_HISTORY + 1, 0, 0), -E_INVAL);
	CU_ASSERT_EQUAL(balance(two, IO_LB_TLB, 0, 101), -E_INVAL);
	CU_ASSERT_EQUAL(balance(two, IO_LB_TLB, 3600001, 0), -E_INVAL);
	CU_ASSERT_EQUAL(lbstats(two).refused, refused0 + 5);
	CU_ASSERT_EQUAL(balance(two, IO_LB_HISTORY, 0, 0), 0); // defaults: 10 s, 90 %
	CU_ASSERT_EQUAL(balance(two, IO_LB_TLB, 0, 0), 0);     // before the first send: may change
	struct io_lbstats s = lbstats(two);
	CU_ASSERT_TRUE(s.policy == IO_LB_TLB && s.nic == -1 && s.period_ms == 10000 && s.overload_pct == 90);
	CU_ASSERT_TRUE(s.decisions == 0 && s.rebinds == 0 && s.bytes[0] == 0);
	// Other settings beside a domain of 10 s and 90 %: another domain;
	// before its first send a channel may move between them.
	CU_ASSERT_EQUAL(balance(other, IO_LB_HISTORY, 5000, 0), 0);
	CU_ASSERT_EQUAL(lbstats(other).period_ms, 5000);
	CU_ASSERT_EQUAL(balance(other, IO_LB_HISTORY, 0, 80), 0);
	s = lbstats(other);
	CU_ASSERT_TRUE(s.period_ms == 10000 && s.overload_pct == 80);
	CU_ASSERT_EQUAL(balance(other, IO_LB_HISTORY, 10000, 90), 0);
	s = lbstats(two);
	CU_ASSERT_TRUE(s.period_ms == 10000 && s.overload_pct == 90);
	CU_ASSERT_EQUAL(lbstats(other).refused, refused0 + 5);
	CU_ASSERT_EQUAL(close_chan(two), 0);
	CU_ASSERT_EQUAL(balance(other, IO_LB_HISTORY, 5000, 0), 0);
	CU_ASSERT_EQUAL(lbstats(other).period_ms, 5000);
	CU_ASSERT_EQUAL(close_chan(other), 0);
	long again = open_chan(0x3, 23);
	CU_ASSERT_EQUAL(balance(again, IO_LB_RR, 2000, 75), 0);
	s = lbstats(again);
	CU_ASSERT_TRUE(s.policy == IO_LB_RR && s.period_ms == 2000 && s.overload_pct == 75);
	CU_ASSERT_EQUAL(close_chan(again), 0);
	CU_ASSERT_EQUAL(close_chan(one), 0);
}

// Sends of channel id at the fake clock's now: its turn and decision, then
// `bytes` frame bytes on nic.
static void sent(long id, int nic, uint64_t bytes)
{
	struct io *c = &ios[res_slot(id)];
	lb_on_send(c);
	lb_sent(c, nic, bytes);
}

static int count_lines(const char *from, const char *prefix)
{
	int n = 0;
	for (const char *p = from; (p = strstr(p, prefix)); p++)
		n += p == fake_console || p[-1] == '\n';
	return n;
}

// Issue 24, defect 6: process 1 balances at T = 1 ms, the smallest; process
// 2 asking for the defaults was refused (-E_BUSY), and each of 1's sends
// printed a turn. Now 2 gets the defaults in a domain of its own, keeps
// them while 1's domain turns every millisecond, and its domain sees only
// its own bytes; the balancer's lines stay within their budget (64 at
// once, 20 a second), the rest counted.
static void test_settings_bind_own_channels(void)
{
	enum { SENDS = 1000, STEP_US = 2000 };
	fake.tsc += 1000000000000ull; // far past any earlier test's lines
	size_t con0 = fake_console_len;
	uint64_t sup0 = klimit_suppressed, t0 = timer_now_us();
	long a = open_chan(0x3, 30);
	CU_ASSERT_EQUAL_FATAL(balance(a, IO_LB_TLB, 1, 0), 0);
	become(2);
	long b = open_chan(0x3, 31);
	CU_ASSERT_EQUAL(balance(b, IO_LB_HISTORY, 0, 0), 0);
	struct io_lbstats s = lbstats(b);
	CU_ASSERT_TRUE(s.policy == IO_LB_HISTORY && s.period_ms == 10000 && s.overload_pct == 90);
	for (int k = 0; k < SENDS; k++) {
		fake.tsc += STEP_US * FAKE_TSC_PER_US;
		become(1);
		sent(a, 0, 1000);
		become(2);
		sent(b, 1, 1500);
	}
	s = lbstats(b);
	CU_ASSERT_TRUE(s.period_ms == 10000 && s.overload_pct == 90 && s.period == 0);
	CU_ASSERT_EQUAL(s.nic_bytes[0][0], 0); // 1's bytes are not in 2's domain
	CU_ASSERT_EQUAL(s.nic_bytes[0][1], (uint64_t)SENDS * 1500);
	CU_ASSERT_EQUAL(balance(b, IO_LB_TLB, 1, 0), -E_BUSY); // it sent: its settings stay
	become(1);
	s = lbstats(a);
	CU_ASSERT_TRUE(s.period_ms == 1 && s.period >= SENDS);
	CU_ASSERT_EQUAL(s.nic_bytes[0][1], 0);
	// Wanted: two starts, and a turn of two lines (1's domain, one sender)
	// at each send of 1 but the first. Printed: at most the budget.
	const char *con = fake_console + con0;
	int lines = count_lines(con, "LB "), turns = count_lines(con, "LB turn ");
	uint64_t secs = (timer_now_us() - t0) / 1000000 + 1;
	CU_ASSERT_TRUE(lines <= 64 + 20 * (int)secs);
	CU_ASSERT_TRUE(turns < SENDS / 4);
	CU_ASSERT_EQUAL((uint64_t)lines + (klimit_suppressed - sup0), 2 + 2 * (SENDS - 1));
	CU_ASSERT_PTR_NOT_NULL(strstr(con, " lines of lb suppressed\n"));
	CU_ASSERT_EQUAL(close_chan(a), 0);
	become(2);
	CU_ASSERT_EQUAL(close_chan(b), 0);
	become(1);
}

// rxlock=fine: balanced channels send without the kernel lock, so two
// CPUs' sends of one domain meet in the balancer. Each of two processes'
// channels of one domain sends SENDS times from its own CPU (a thread as
// CPU 1) at once: every byte is counted, in the domain and per channel.
// Without the balancer's lock (as with the kernel lock alone, which an
// unlocked call does not take) the sums lost bytes.
enum { LB_SENDS = 1000000 };

struct lb_cpu {
	pthread_t t;
	long id;
	int nic, cpu;
	uint32_t bytes;
	int ready, go; // both start at once
};

static void *lb_sender(void *arg)
{
	struct lb_cpu *u = arg;
	fake_set_cpu(u->cpu);
	__atomic_store_n(&u->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&u->go, __ATOMIC_ACQUIRE))
		;
	for (int k = 0; k < LB_SENDS; k++)
		sent(u->id, u->nic, u->bytes);
	return NULL;
}

static void test_sends_of_two_cpus_counted(void)
{
	fake.tsc += 1000000000000ull; // a period of its own
	demux_fine = true;            // the balancer's lock is taken
	long a = open_chan(0x3, 40);
	CU_ASSERT_EQUAL_FATAL(balance(a, IO_LB_HISTORY, 3600000, 0), 0);
	become(2);
	long b = open_chan(0x3, 41);
	CU_ASSERT_EQUAL_FATAL(balance(b, IO_LB_HISTORY, 3600000, 0), 0); // the same domain
	struct lb_cpu u = { .id = b, .nic = 1, .cpu = 1, .bytes = 1500 };
	CU_ASSERT_EQUAL_FATAL(pthread_create(&u.t, NULL, lb_sender, &u), 0);
	while (!__atomic_load_n(&u.ready, __ATOMIC_ACQUIRE))
		;
	__atomic_store_n(&u.go, 1, __ATOMIC_RELEASE);
	for (int k = 0; k < LB_SENDS; k++)
		sent(a, 1, 1000);
	pthread_join(u.t, NULL);
	fake_set_cpu(0);
	demux_fine = false;
	struct io_lbstats s = lbstats(b);
	CU_ASSERT_EQUAL(s.bytes[0], (uint64_t)LB_SENDS * 1500);
	CU_ASSERT_EQUAL(s.nic_bytes[0][1], (uint64_t)LB_SENDS * 2500);
	CU_ASSERT_EQUAL(close_chan(b), 0);
	become(1);
	s = lbstats(a);
	CU_ASSERT_EQUAL(s.bytes[0], (uint64_t)LB_SENDS * 1000);
	CU_ASSERT_EQUAL(close_chan(a), 0);
}

// The limiter alone: 1000 lines at one every 2 ms through a bucket of 8
// and 4 a second: 8 at once, then one each 250 ms; the rest counted, and
// the count printed before the next line let through. A group larger
// than the bucket never passes; an idle bucket fills again.
static void test_klimit_budget(void)
{
	struct klimit l = KLIMIT("test", 8, 4);
	uint64_t sup0 = klimit_suppressed, now = 5000000;
	size_t con0 = fake_console_len;
	int passed = 0;
	for (int k = 0; k < 1000; k++, now += 2000)
		passed += klimit_allow(&l, now, 1);
	CU_ASSERT_EQUAL(passed, 8 + 2 * 4 - 1); // 2 s: 8, then at 250, 500, ... 1750 ms
	CU_ASSERT_EQUAL(l.suppressed, 1000 - (uint64_t)passed);
	CU_ASSERT_EQUAL(klimit_suppressed - sup0, 1000 - (uint64_t)passed);
	CU_ASSERT_PTR_NOT_NULL(strstr(fake_console + con0, "klog: 117 lines of test suppressed\n"));
	CU_ASSERT_FALSE(klimit_allow(&l, now + 100000000, 9));
	CU_ASSERT_TRUE(klimit_allow(&l, now + 100000000, 8));
	CU_ASSERT_FALSE(klimit_allow(&l, now + 100000000, 1));
	CU_ASSERT_EQUAL(l.pending, 1);
}

int register_lb(void)
{
	static const struct test_case t[] = {
		TEST(test_overload_threshold),
		TEST(test_history_paper_c_first),
		TEST(test_history_paper_a_first),
		TEST(test_history_one_mover_per_nic),
		TEST(test_history_no_overload_spreads),
		TEST(test_history_own_nic_best),
		TEST(test_first_period_ties),
		TEST(test_tlb_orders),
		TEST(test_unusable),
	};
	static const struct test_case io[] = {
		TEST(test_balance_op),
		TEST(test_settings_bind_own_channels),
		TEST(test_sends_of_two_cpus_counted),
		TEST(test_klimit_budget),
	};
	return ADD_SUITE("lb", setup, NULL, t) || ADD_SUITE("lb_io", io_setup, fake_io_teardown, io);
}
