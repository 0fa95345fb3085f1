// Round trips, one packet each way (Tender Figure 7), and the two-VM
// correctness test. role=server echoes every packet by exchanging the pages
// it arrived in into its output region (no copy) until a 0-byte packet.
// role=client sends sizes=a,b,... (iters= times each, after warm= unmeasured
// ones), checks every echo byte by byte and by checksum, prints RESULT lines.
// Both: nic=N or nics=a,b,.. (a striped channel), chan=, peer=MAC (one per
// NIC of nics=), timeout_ms=. Exit 0 when everything matched
// and frames and channels are back to their counts before.
// idle=1 (for profiling, docs/rtt-profile.md): the client reads the
// kernel's halted-time counter (sysinfo.idle_tsc) around each timed round
// trip and prints, per size, the medians of the round trip split into busy
// (not halted; guest instructions under -icount) and halted time (IDLE
// lines); the server prints its busy and halted time per echoed packet.
#include <utest.h>
#include <netutil.h>

static struct chan c;
static uint64_t hz;
static unsigned long ncpu; // CPUs the kernel runs processes on
static bool idle_split;   // idle=1
static bool alone;        // alone=1 (default): no other program runs
static uint64_t rt_idle;  // halted TSC ticks inside the last round trip

static uint64_t sys_count(void) // system calls served so far, this one included
{
	struct sysinfo si;
	sysinfo(&si);
	return si.syscalls;
}

static uint64_t idle_now(void)
{
	struct sysinfo si;
	sysinfo(&si);
	return si.idle_tsc;
}

static uint64_t ns(uint64_t tsc) { return tsc * 1000000000ull / hz; }

// One round trip of `size` bytes with sequence number seq; returns TSC
// ticks, or 0 when the echo did not come or did not match.
static uint64_t round_trip(uint32_t size, uint32_t seq)
{
	payload_fill(chan_out(&c, 0), seq, size);
	c.osize[0] = size;
	uint64_t i0 = idle_split ? idle_now() : 0; // outside the timed window
	uint64_t t0 = rdtsc();
	long s = chan_send(&c), r = input_io(c.io, c.sizes, c.pos);
	uint64_t t = rdtsc() - t0;
	rt_idle = idle_split ? idle_now() - i0 : 0;
	if (s != 1 || r != 1) {
		printf("pingpong: size %u seq %u: send %ld receive %ld (%s)\n", size, seq, s, r,
		       err_name(r < 0 ? r : s));
		return 0;
	}
	if (c.sizes[0] != size || !payload_check(chan_in(&c, 0), seq, size)) {
		printf("pingpong: size %u seq %u: echo differs (got %lu bytes)\n", size, seq, c.sizes[0]);
		return 0;
	}
	return t ? t : 1;
}

static int client(int argc, char **argv)
{
	uint32_t list[32];
	int nsz = parse_u32_list(arg_get(argc, argv, "sizes", "1,60,1500,4096,8192,8960"), list, 32);
	int iters = (int)arg_long(argc, argv, "iters", 20), warm = (int)arg_long(argc, argv, "warm", 3);
	static uint64_t t[1000], busy[1000], idle[1000];
	uint32_t seq = 0;
	int bad = 0;
	for (int k = 0; k < nsz; k++) {
		uint32_t size = list[k];
		int n = 0;
		for (int it = 0; it < warm + iters && n < 1000; it++) {
			uint64_t d = round_trip(size, seq++);
			bad += !d;
			if (d && it >= warm) {
				busy[n] = ns(d > rt_idle ? d - rt_idle : 0);
				idle[n] = ns(rt_idle);
				t[n++] = ns(d);
			}
		}
		if (!n)
			continue;
		for (int i = 0; i < n; i++)
			printf("RTT system=kernel bytes=%u ns=%lu\n", size, t[i]);
		if (idle_split) {
			sort_u64(busy, n);
			sort_u64(idle, n);
			printf("IDLE system=kernel bytes=%u n=%d busy_median_ns=%lu idle_median_ns=%lu "
			       "busy_min_ns=%lu\n", size, n, busy[n / 2], idle[n / 2], busy[0]);
		}
		sort_u64(t, n);
		printf("RESULT rtt system=kernel bytes=%u n=%d median_ns=%lu p99_ns=%lu min_ns=%lu\n", size,
		       n, t[n / 2], t[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], t[0]);
	}
	CHECK_EQ("every echo came back identical", bad, 0);
	CHECK("quit acknowledged", round_trip(0, seq) != 0);
	return 0;
}

// idle=1 on the server: the busy (not halted) time from one packet's
// arrival in the program to the next one's, summed by the size of the
// packet echoed in between. One sysinfo call per cycle is included
// (printed as sysinfo_ns, what a call costs).
static struct { uint32_t size; uint64_t busy, n; } cyc[32];
static int ncyc;
static uint32_t cyc_size;
static uint64_t cyc_t, cyc_i;

static void cycle_mark(uint32_t size)
{
	uint64_t t = rdtsc(), i = idle_now();
	if (cyc_t) {
		int k = 0;
		while (k < ncyc && cyc[k].size != cyc_size)
			k++;
		if (k == ncyc && ncyc < 32)
			cyc[ncyc++] = (typeof(cyc[0])){ cyc_size, 0, 0 };
		if (k < ncyc)
			cyc[k].busy += (t - cyc_t) - (i - cyc_i), cyc[k].n++;
	}
	cyc_t = t, cyc_i = i, cyc_size = size;
}

static void cycle_print(void)
{
	uint64_t t0 = rdtsc();
	idle_now();
	uint64_t one = rdtsc() - t0;
	for (int k = 0; k < ncyc; k++)
		if (cyc[k].n > 1)
			printf("IDLE pingpong server bytes=%u cycles=%lu busy_ns_per_cycle=%lu sysinfo_ns=%lu\n",
			       cyc[k].size, cyc[k].n, ns(cyc[k].busy / cyc[k].n), ns(one));
}

// threshold: the kernel's copy threshold, fixed at boot, and copy_max: the
// longest payload a send copies behind its header (io_stats.tx_copy_max),
// both read once before the loop, so an echo costs no statistics call
// (docs/rtt-profile.md).
static int server(struct io_stats *s, uint64_t threshold, uint64_t copy_max)
{
	int bad = 0, busy_checked = 0;
	bool quit = false; // ended by the client's quit, not by an error
	uint64_t want_x = 0, want_c = 0, n = 0, t0 = 0, i0 = 0, sys_a = 0, sys_b, n_a = 0;
	printf("READY pingpong server\n");
	for (;;) {
		long r = input_io(c.io, c.sizes, c.pos);
		if (idle_split) // busy time per server cycle, by the size it echoed
			cycle_mark((uint32_t)c.sizes[0]);
		if (idle_split && !n) // from the first packet in to the quit echoed
			t0 = rdtsc(), i0 = idle_now();
		if (busy_checked && !n_a) // system calls from the packet after the busy check on
			n_a = n, sys_a = sys_count();
		if (r != 1) {
			printf("pingpong: server receive: %s\n", err_name(r));
			bad++;
			break;
		}
		uint32_t size = (uint32_t)c.sizes[0], frame = WIRE_FRAME_HLEN + size;
		bad += !payload_check(chan_in(&c, 0), chan_rx_seq(&c, 0), size);
		if ((frame < WIRE_MIN_FRAME ? WIRE_MIN_FRAME : frame) <= threshold)
			want_c++;
		else
			want_x++;
		n++;
		long e = chan_echo(&c); // its pages, exchanged: no copy
		if (e != 1) {
			printf("pingpong: echo failed: %s\n", err_name(e));
			bad++;
		}
		// The frames of the first echo sent from our pages stay pinned
		// until reclaimed (a payload of copy_max bytes or less is copied
		// behind its header and pins none). On one CPU nothing reclaims
		// them before this call; with more, the CPU polling the NIC may
		// have done so already.
		if (!busy_checked && size > copy_max) {
			busy_checked = 1;
			long xb = exchange_pmem(c.out_vr, c.in_vr, 0, 0, 1);
			CHECK("frames in flight are busy", xb == -E_BUSY || (ncpu > 1 && xb == 0));
			// e1000 sends inside the doorbell write, virtio-net a little later
			// (a reliable channel's: and once the peer acknowledged them)
			long left = ctrl_io(c.io, IO_OP_RECLAIM, 0, 0, 0), x = -E_BUSY;
			for (int k = 0; (left > 0 || x == -E_BUSY) && k < 2000; k++) {
				if (!left && (x = exchange_pmem(c.out_vr, c.in_vr, 0, 0, 1)) == 0)
					break;
				sleep(1000);
				left = ctrl_io(c.io, IO_OP_RECLAIM, 0, 0, 0);
			}
			CHECK("reclaim releases them", left == 0 && x == 0);
			exchange_pmem(c.out_vr, c.in_vr, 0, 0, 1); // put them back
		}
		if (size == 0) {
			quit = true;
			break;
		}
	}
	sys_b = sys_count();
	if (idle_split && n) {
		uint64_t t = rdtsc() - t0, i = idle_now() - i0;
		cycle_print();
		printf("IDLE pingpong server packets=%lu busy_ns_per_packet=%lu idle_ns_per_packet=%lu\n",
		       n, ns(t - i) / n, ns(i) / n);
	}
	chan_stats(&c, s);
	printf("STATS pingpong server packets=%lu exchanged=%lu copied=%lu bytes_copied=%lu "
	       "threshold=%lu tx_doorbells=%lu irqs=%lu\n", s->rx_packets, s->rx_exchanged,
	       s->rx_copied, s->rx_bytes_copied, s->copy_threshold, s->tx_doorbells, s->rx_irqs);
	CHECK_EQ("every packet arrived intact", bad, 0);
	CHECK_EQ("packets counted", s->rx_packets, n);
	CHECK_EQ("exchanged = frames above the threshold", s->rx_exchanged, want_x);
	CHECK_EQ("copied = frames up to the threshold", s->rx_copied, want_c);
	CHECK_EQ("no drops", s->drop_noslot + s->drop_badslot + s->drop_badlen + s->drop_short, 0);
	// (a reliable channel's retransmission of an echo takes one more)
	CHECK_EQ("one doorbell per send", s->tx_doorbells - (s->reliable ? s->tx_retransmits : 0), n);
	// Each echo after the busy check's: input_io, reclaim, exchange_pmem,
	// output_io (and one sysinfo with idle=1): 3 (+1) after sys_a for the
	// first of them (packet n_a), 4 (+1) for each later one, 1 for sys_b
	// itself. The count is system-wide: only checked when this program runs
	// alone (alone=1), and when the loop ended with the quit (an error is
	// reported above).
	uint64_t i = idle_split;
	CHECK_EQ("four system calls per echo", sys_b - sys_a,
		 n_a && n > n_a && alone && quit ? (4 + i) * (n - n_a) - i : sys_b - sys_a);
	return 0;
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	struct io_stats st, st0;
	sysinfo(&s0);
	hz = s0.tsc_hz;
	ncpu = s0.ncpu;
	idle_split = arg_long(argc, argv, "idle", 0) != 0;
	alone = arg_long(argc, argv, "alone", 1) != 0;
	long e = chan_setup(&c, 0, argc, argv, 1, 1, 1);
	CHECK_EQ("channel open, peer set", e, 0);
	ctrl_io(c.io, IO_OP_TIMEOUT, (unsigned long)arg_long(argc, argv, "timeout_ms", 10000) * 1000, 0, 0);
	chan_stats(&c, &st0);
	if (e == 0) {
		if (!strcmp(arg_get(argc, argv, "role", "client"), "server"))
			server(&st, st0.copy_threshold, st0.tx_copy_max);
		else
			client(argc, argv);
	}
	chan_stats(&c, &st);
	CHECK_EQ("NIC holds the frames it held at the start", st.nic_frames, st0.nic_frames);
	chan_close(&c);
	// System-wide counts mean something only when no other program runs
	// (alone=0: the parent checks them once every child is done).
	if (alone) {
		sysinfo(&s1);
		CHECK_EQ("frames back after the channel closed", s1.frames_free, s0.frames_free);
		CHECK_EQ("no channel or region left", s1.vregions + s1.attachments,
			 s0.vregions + s0.attachments);
	}
	return utest_done("pingpong");
}
