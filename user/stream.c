// A one-way stream over a channel, striped when nics= names several NICs
// (the striping is invisible here except through dev_no): the client sends
// count= packets of size= bytes in batches of batch=, the server checks
// that every packet comes exactly once, in order (its wire sequence number
// is the packet's index) and intact (payload wire_pattern(index % batch),
// every byte), and acknowledges every ack= batches with the count so far;
// the client keeps at most window= batches unacknowledged (flow control:
// while the server checks one batch, what comes next waits in the kernel,
// which holds 128 frames for a channel, more for a striped one: batch=64
// window=2 never overflows it, so nothing is dropped).
// Both: nic=/nics=, chan= (default 3), peer=MAC[,MAC..] (one per NIC) or
// dst=X.Y[.Z] (a node of the hyper-crossbar, reached through relays),
// timeout_ms=. The server prints RESULT stream ... with Mbit/s, the
// out-of-order arrivals it restored, per-link shares and its machine's
// busy TSC ticks per packet (elapsed minus halted: guest instructions
// under -icount, kernel and program together; summed over the CPUs, and on
// several a CPUBUSY line with each CPU's share and of it the ticks the CPU
// waited for kernel locks, spinN=); the client its own (busy_per_pkt,
// busy_x1000, CPUBUSY: from its first send to the last ack). Both mark
// those windows for tools/linux-baseline/insnplugin.so (no-op markers).
// gaps=N lets the server accept up to N reported holes (a cut test on a
// channel made unreliable with rel=0). A reliable channel (striped, or
// rel=1) prints RELIABLE and LINK lines: per peer and link, what was sent,
// received, retransmitted, suspected, declared dead and recovered.
// bin_ms=N (server): delivered bytes per N ms from the first packet
// (SERIES line) for the failover benchmark; GAP: the longest time between
// two deliveries (gap_after_ms=N: of those from N ms on, past start-up).
// cpu_ms=N (both): every N ms of the stream, the machine's busy ticks
// so far (elapsed minus halted: guest instructions under -icount) and the
// bytes delivered (server) or sent (client), taken at the first batch of
// each period and printed at the end (CPUS line): the failover benchmark's
// CPU work before, during and after a cut.
// marks_ms=A,B,.. (client): a MARK line as the stream passes A ms, B ms, ..
// from its START on the client's clock (the failover benchmark cuts and
// restores a link on them: guest time, which under -icount may run slower
// than the host's).
// idle_at=N idle_ms=M (client): once N packets are sent and acknowledged,
// M ms with nothing to send (the channel carries heartbeats only; IDLE and
// RESUME lines mark it), then the rest. start_ms=N (client): the stream
// starts once the machine has been up N ms (past QEMU e1000's receive
// hold-off: make bench-abab gives 1500).
// clients=K (server): K clients at once, client k's MACs in peer= (k=0)
// or peerK= (one per NIC of the server's channel, "-" where it has none):
// a node with one link and a node with several streaming to one channel;
// countK= (server): client K's packets when not count=; cbatch= (server):
// the clients' batch= when the server's own (its input_io's) differs.
// A client that has sent everything and closed its channel said goodbye:
// the server's input_io says -E_LINK once for it (io_stats.dead_peer).
// rearms=1 (server): checks that its NICs went back to interrupts while a
// batch waited (io_stats.rx_rearms; a paced stream under poll=irq).
// unlocked=1 (server): checks that frames came in without the kernel lock
// (sysinfo.rx_unlocked: a further CPU's idle loop polled the NICs) and that
// its input_io calls began without it (io_stats.rx_unlocked_calls);
// (client) that its output_io calls did (io_stats.tx_unlocked_calls).
// check=0 (server): each packet's sequence number and length are checked,
// not its payload's bytes (what the check costs a stream, measured apart).
// hop_at=N hop_cpu=C (server): once N packets have come it moves to CPU C
// (setaffinity) before it acknowledges them, a HOP line says so: on a
// multiqueue NIC its acknowledgements then leave from another queue pair,
// and the peer's packets follow them to that pair's receive queue.
// bye_at=N (server): after N packets it stops reading, waits bye_ms=
// (500), and closes its channel mid-stream (a goodbye); bye=1 (client):
// it sends without waiting for the server (give window= high enough) until
// output_io returns -E_LINK, which must come within limit_ms= (20000),
// then input_io's -E_LINK once (BYE line). alone=0: other programs run
// beside it (their frames come and go): it does not check the machine's
// free frames at the end.
#include <utest.h>
#include <netutil.h>

#define MAXB IO_MAX_BATCH

#define MAXCLIENTS 4

static struct chan c;
static uint32_t size, batch, count, window, ack_every;
static uint32_t cbatch; // server: the clients' batch (payload index, acknowledgements)
static uint32_t idle_at, idle_ms; // client: after idle_at packets (all acknowledged), idle_ms of nothing
static uint32_t arg_bye_ms;       // server: bye_at's wait before closing
static uint64_t start_ms;         // client: uptime its stream waits for (start_ms=)
static bool arg_rearms; // rearms=1: the server checks its NICs went back to interrupts (poll=irq)
static bool arg_unlocked; // unlocked=1: the calls began without the kernel lock (rxlock=fine)
static bool arg_nocheck;  // check=0 (server): sequence and length only, not the payload's bytes
static uint32_t hop_at;      // hop_at=N (server): after N packets it moves to CPU hop_cpu=
static long hop_cpu;
static int nclients = 1;
static uint32_t timeout_ms; // the longest wait for a packet (timeout_ms=)
// A server of several clients returns a partial batch after FLUSH_MS: a
// batch ended early (a client that left) shifts where batches end, and
// the last client's last packets would wait in a batch no one fills,
// while that client waits for their acknowledgement.
#define FLUSH_MS 200
static uint8_t client_mac[MAXCLIENTS][8][6]; // per client, per NIC (0: none)
static uint32_t next_of[MAXCLIENTS], acked_of[MAXCLIENTS], count_of[MAXCLIENTS];

static uint64_t kbps(uint64_t bytes, uint64_t tsc, uint64_t hz)
{
	return tsc ? (uint64_t)((__uint128_t)bytes * 8 * hz / tsc / 1000) : 0;
}

static uint64_t mbps(uint64_t bytes, uint64_t tsc, uint64_t hz) { return kbps(bytes, tsc, hz) / 1000; }

// A reliable channel's state towards each peer, per link (IO_OP_LINKSTATS).
static void print_reliable(const char *who, int npeers)
{
	static const char *const st[] = { "up", "suspect", "dead", "none" };
	struct io_stats s;
	chan_stats(&c, &s);
	if (!s.reliable)
		return;
	printf("RELIABLE stream %s acked=%lu retransmits=%lu rto=%lu acks_rx=%lu acks_tx=%lu suspects=%lu deaths=%lu "
	       "recoveries=%lu stale=%lu badctrl=%lu\n", who, s.tx_acked, s.tx_retransmits, s.tx_rto, s.rx_acks,
	       s.tx_acks, s.link_suspects, s.link_deaths, s.link_recoveries, s.drop_stale, s.drop_badctrl);
	for (int p = 0; p < npeers; p++) {
		struct io_linkstats l;
		if (ctrl_io(c.io, IO_OP_LINKSTATS, (unsigned long)p, (unsigned long)&l, 0) < 0)
			continue;
		for (int n = 0; n < 4; n++)
			if (l.state[n] != IO_LINK_NONE)
				printf("LINK stream %s peer=%d link=%d state=%s sent=%lu received=%lu retransmitted=%lu "
				       "suspected=%lu dead=%lu recovered=%lu hb_sent=%lu hb_received=%lu acks_sent=%lu "
				       "acks_received=%lu detect_us=%lu down_ms=%lu max_down_ms=%lu max_skew_us=%lu\n", who, p, n,
				       st[l.state[n]], l.sent[n], l.received[n], l.retransmitted[n], l.suspected[n],
				       l.declared_dead[n], l.recovered[n], l.hb_sent[n], l.hb_received[n], l.acks_sent[n],
				       l.acks_received[n], l.last_detect_us[n], l.last_down_us[n] / 1000, l.max_down_us[n] / 1000,
				       l.max_skew_us[n]);
	}
}

// The server's own acknowledgement of the last batch can come before the
// reliable transport's (a delayed acknowledgement, or one of a packet
// sent again after a link died): its figures are printed once the
// transport has every packet acknowledged too, waiting at most 2 s.
static void await_transport_acks(uint64_t hz)
{
	struct io_stats s;
	chan_stats(&c, &s);
	struct io_linkstats l;
	for (uint64_t end = rdtsc() + 2 * hz; s.reliable && rdtsc() < end;) {
		if (ctrl_io(c.io, IO_OP_LINKSTATS, 0, (unsigned long)&l, 0) < 0 || l.unacked == 0)
			return;
		sleep(1000);
	}
}

// Delivered bytes per bin_ms from the first packet (the failover benchmark's
// time series), and the longest time between two deliveries.
#define MAXBINS 1200
static uint64_t bins[MAXBINS], bin_tsc, first_tsc, last_tsc, max_gap_tsc, max_gap_at, gap_after_tsc;
static uint32_t bin_ms, nbins;

// cpu_ms: busy ticks and bytes at the first event of each period.
#define MAXCPUS 1200
static uint64_t cpu_t[MAXCPUS], cpu_busy[MAXCPUS], cpu_bytes[MAXCPUS], cpu_tsc, cpu_next, cpu_idle0, cpu_t0;
static uint32_t cpu_n;

// marks_ms: MARK lines at these ms from the client's START.
#define MAXMARKS 8
static uint64_t marks[MAXMARKS];
static uint32_t nmarks, marked;

static void mark_check(uint64_t t0, uint64_t hz)
{
	uint64_t now = rdtsc();
	while (marked < nmarks && now - t0 >= marks[marked] * (hz / 1000))
		printf("MARK stream client i=%u tsc_ms=%lu\n", marked++, now / (hz / 1000));
}

// Takes a sample when a period has begun since the last one; now: rdtsc,
// done: the bytes so far. The first call sets the origin.
static void cpu_sample(uint64_t now, uint64_t done)
{
	if (!cpu_tsc || cpu_n >= MAXCPUS || (cpu_n && now < cpu_next))
		return;
	struct sysinfo si;
	sysinfo(&si);
	now = rdtsc();
	if (!cpu_n)
		cpu_t0 = now, cpu_idle0 = si.idle_tsc;
	uint64_t ncpu = si.ncpu ? si.ncpu : 1;
	cpu_t[cpu_n] = now, cpu_busy[cpu_n] = ncpu * (now - cpu_t0) - (si.idle_tsc - cpu_idle0);
	cpu_bytes[cpu_n++] = done;
	cpu_next = cpu_t0 + ((now - cpu_t0) / cpu_tsc + 1) * cpu_tsc;
}

static void cpu_print(const char *who, uint64_t hz)
{
	if (!cpu_tsc)
		return;
	printf("CPUS stream %s every_ms=%lu n=%u t_ms=", who, cpu_tsc / (hz / 1000), cpu_n);
	for (uint32_t i = 0; i < cpu_n; i++)
		printf(i ? ",%lu" : "%lu", cpu_t[i] / (hz / 1000));
	printf(" busy=");
	for (uint32_t i = 0; i < cpu_n; i++)
		printf(i ? ",%lu" : "%lu", cpu_busy[i]);
	printf(" bytes=");
	for (uint32_t i = 0; i < cpu_n; i++)
		printf(i ? ",%lu" : "%lu", cpu_bytes[i]);
	printf("\n");
}

static void series_add(uint64_t now, uint64_t bytes)
{
	if (!first_tsc)
		first_tsc = last_tsc = now;
	if (now - last_tsc > max_gap_tsc && last_tsc - first_tsc >= gap_after_tsc)
		max_gap_tsc = now - last_tsc, max_gap_at = last_tsc - first_tsc;
	last_tsc = now;
	uint64_t b = bin_tsc ? (now - first_tsc) / bin_tsc : 0;
	if (bin_tsc && b < MAXBINS) {
		bins[b] += bytes;
		if (b + 1 > nbins)
			nbins = (uint32_t)b + 1;
	}
}

static void series_print(uint64_t hz)
{
	uint64_t ms = hz / 1000;
	printf("GAP stream server max_gap_us=%lu at_ms=%lu after_ms=%lu\n", max_gap_tsc * 1000 / ms, max_gap_at / ms,
	       gap_after_tsc / ms);
	if (!bin_tsc)
		return;
	printf("SERIES stream server bin_ms=%u start_ms=%lu end_ms=%lu bins=%u kbytes=", bin_ms, first_tsc / ms,
	       last_tsc / ms, nbins);
	for (uint32_t i = 0; i < nbins; i++)
		printf(i ? ",%lu" : "%lu", bins[i] / 1000);
	printf("\n");
}

static void print_links(const char *who, const uint64_t *per, uint64_t total)
{
	printf("LINKS stream %s", who);
	for (int n = 0; n < 8; n++)
		if (per[n])
			printf(" nic%d=%lu share_x1000=%lu", n, per[n], total ? per[n] * 1000 / total : 0);
	printf("\n");
}

// Which client sent received packet i (by its source MAC), or -1.
static bool routed; // dst=: the one client is a node reached through relays

static int client_of(uint32_t i)
{
	if (routed) // the source MAC is the last relay's; the server has one client then
		return 0;
	const uint8_t *src = chan_in(&c, i) - WIRE_FRAME_HLEN + WIRE_OFF_SRC;
	for (int k = 0; k < nclients; k++)
		for (int n = 0; n < 8; n++)
			if (!memcmp(client_mac[k][n], src, 6))
				return k;
	return -1;
}

static void parse_clients(int argc, char **argv)
{
	for (int k = 0; k < nclients; k++) {
		char key[8] = "peer0";
		key[4] = (char)('0' + k);
		const char *p = arg_get(argc, argv, k ? key : "peer", NULL);
		for (int n = 0; p && *p && n < 8; n++) {
			if (!(c.dev_no & (1u << n)))
				continue;
			if (*p != '-')
				parse_mac(p, client_mac[k][n]);
			while (*p && *p++ != ',')
				;
		}
		if (k)
			CHECK_EQ("client peer set", chan_peer_list(&c, k, p ? arg_get(argc, argv, key, NULL) : NULL), 0);
		char ckey[8] = "count0";
		ckey[5] = (char)('0' + k);
		count_of[k] = k ? (uint32_t)arg_long(argc, argv, ckey, count) : count;
	}
}

// One packet: its sequence number, length and every payload byte.
static int check_packet(uint32_t i, uint32_t want)
{
	static int said;
	uint32_t seq = chan_rx_seq(&c, i);
	if (seq != want || c.sizes[i] != size || (!arg_nocheck && !payload_check(chan_in(&c, i), want % cbatch, size))) {
		if (said++ < 5)
			printf("stream: packet %u: seq %u size %lu (want seq %u size %u)\n", i, seq, c.sizes[i], want,
		       size);
		return 1;
	}
	return 0;
}

static long send_ack(int client, uint64_t got)
{
	ctrl_io(c.io, IO_OP_RECLAIM, 0, 0, 0);
	__builtin_memcpy(chan_out(&c, 0), &got, 8);
	c.osize[0] = 8;
	c.peers[0] = (uint64_t)client;
	return chan_send(&c);
}

static uint32_t received(void)
{
	uint32_t n = 0;
	for (int k = 0; k < nclients; k++)
		n += next_of[k];
	return n;
}

// A client whose every packet came and who then closed its channel.
static bool client_done(uint64_t k) { return k < (uint64_t)nclients && next_of[k] >= count_of[k]; }

// Each CPU's busy ticks per packet between two sysinfo snapshots (under
// -icount: instructions), and of them the ticks spent waiting for kernel
// locks: a CPUBUSY line, printed on machines of several CPUs.
static void print_cpubusy(const char *who, const struct sysinfo *a, const struct sysinfo *b,
			  uint64_t elapsed, uint64_t pkts)
{
	if (b->ncpu < 2 || !pkts)
		return;
	line_add("CPUBUSY stream %s", who);
	for (uint64_t k = 0; k < b->ncpu && k < 8; k++) { // a CPU halted throughout: about 0, either side
		int64_t busy = (int64_t)(elapsed - (b->cpu_idle_tsc[k] - a->cpu_idle_tsc[k]));
		line_add(" cpu%lu=%lu", k, busy > 0 ? (uint64_t)busy / pkts : 0);
	}
	for (uint64_t k = 0; k < b->ncpu && k < 8; k++)
		line_add(" spin%lu=%lu", k, (b->cpu_spin_tsc[k] - a->cpu_spin_tsc[k]) / pkts);
	line_add("\n");
	line_flush();
}

// The window markers of tools/linux-baseline/insnplugin.c (no-ops): a QEMU
// run with that plugin counts each vCPU's instructions between them, which
// -icount cannot on several CPUs (there the clock is all CPUs' count).
static inline void mark_start(void) { __asm__ volatile("nopl 0x7ab1c0d0(%%rax)" ::: "memory"); }
static inline void mark_end(void) { __asm__ volatile("nopl 0x7ab1c0d1(%%rax)" ::: "memory"); }

static void server(int gaps_ok, uint32_t bye_at, uint64_t hz)
{
	struct io_stats s0, s;
	uint32_t total = 0;
	for (int k = 0; k < nclients; k++)
		total += count_of[k];
	total = bye_at ? bye_at : total;
	int bad = 0, gaps = 0, corrupt = 0; // corrupt: packets out of order, of a wrong size or bytes
	uint32_t waited_ms = 0;
	uint64_t t0 = 0, t1 = 0;
	struct sysinfo si0 = { 0 }, si1 = { 0 };
	chan_stats(&c, &s0);
	printf("READY stream server tsc_ms=%lu\n", rdtsc() / (hz / 1000));
	while (received() < total) {
		long r = input_io(c.io, c.sizes, c.pos);
		if (r == -E_GAP) {
			chan_stats(&c, &s);
			printf("stream: gap from client %lu at seq %lu, %lu lost (dropped: window %lu noslot %lu "
			       "nopeer %lu badslot %lu toolong %lu nochan %lu badlen %lu rxerr %lu; NIC no-buffer %lu)\n",
			       s.gap_peer, s.gap_seq, s.gap_len, s.drop_window, s.drop_noslot, s.drop_nopeer,
			       s.drop_badslot, s.drop_toolong, s.drop_nochan, s.drop_badlen, s.drop_rxerr,
			       s.nic_rx_no_buf);
			gaps++;
			if (s.gap_peer < (uint64_t)nclients)
				next_of[s.gap_peer] = (uint32_t)(s.gap_seq + s.gap_len);
			if (gaps > gaps_ok)
				break;
			continue;
		}
		if (r == -E_TIMEOUT && nclients > 1 && (waited_ms += FLUSH_MS) < timeout_ms)
			continue; // nothing for FLUSH_MS: wait on, up to timeout_ms
		if (r == -E_LINK && (chan_stats(&c, &s), client_done(s.dead_peer))) {
			printf("LEFT stream server client=%lu\n", s.dead_peer);
			continue;
		}
		if (r > 0)
			waited_ms = 0;
		if (r <= 0) {
			printf("stream: server input_io %ld (%s) at %u of %u\n", r, err_name(r), received(), total);
			bad++;
			break;
		}
		if (!t0) {
			sysinfo(&si0);
			t0 = rdtsc();
			mark_start();
		}
		series_add(rdtsc(), (uint64_t)r * size);
		cpu_sample(rdtsc(), (uint64_t)(received() + (uint32_t)r) * size);
		for (long i = 0; i < r; i++) {
			int k = client_of((uint32_t)i);
			if (k < 0) {
				printf("stream: packet %ld from no client\n", i);
				bad++;
				continue;
			}
			int wrong = check_packet((uint32_t)i, next_of[k]++);
			bad += wrong;
			corrupt += wrong;
		}
		sysinfo(&si1);
		t1 = rdtsc();
		if (hop_at && received() >= hop_at) {
			long hr = setaffinity(0, 1ul << hop_cpu);
			printf("HOP stream server at=%u cpu=%ld r=%ld\n", received(), hop_cpu, hr);
			bad += hr < 0;
			hop_at = 0;
		}
		for (int k = 0; k < nclients; k++) // a batch's worth, or the end, is acknowledged
			if (next_of[k] - acked_of[k] >= cbatch * ack_every ||
			    (next_of[k] >= count_of[k] && acked_of[k] < count_of[k])) {
				bad += send_ack(k, next_of[k]) != 1;
				acked_of[k] = next_of[k];
			}
	}
	mark_end();
	chan_stats(&c, &s);
	// Timed from the end of the first batch to the last: the packets after it.
	uint64_t got = s.rx_packets - s0.rx_packets, timed = got > batch ? got - batch : 0;
	// busy: the machine's time not halted (under -icount: its instructions),
	// summed over its CPUs (idle_tsc is their sum)
	uint64_t ncpu = si1.ncpu ? si1.ncpu : 1, busy = ncpu * (t1 - t0) - (si1.idle_tsc - si0.idle_tsc);
	printf("RESULT stream system=kernel role=server bytes=%u packets=%lu links=%d mbps=%lu kbps=%lu "
	       "reordered=%lu dup=%lu gaps=%lu lost=%lu busy_per_pkt=%lu busy_x1000=%lu clients=%d "
	       "corrupt=%d missing=%u\n",
	       size, got, __builtin_popcount(c.dev_no & 0xff), mbps(timed * size, t1 - t0, hz),
	       kbps(timed * size, t1 - t0, hz), s.rx_reordered - s0.rx_reordered, s.rx_dup, s.rx_gaps, s.rx_gap_lost,
	       timed ? busy / timed : 0, t1 > t0 ? busy * 1000 / (t1 - t0) : 0, nclients, corrupt,
	       total - received());
	print_cpubusy("server", &si0, &si1, t1 - t0, timed);
	print_links("server rx", s.link_rx, got);
	print_reliable("server", nclients);
	series_print(hz);
	cpu_print("server", hz);
	printf("STATS stream server held_peak=%lu noslot=%lu window=%lu nopeer=%lu badslot=%lu limit=%lu "
	       "nic_no_buf=%lu irqs=%lu rearms=%lu\n", s.frames_held_max, s.drop_noslot, s.drop_window,
	       s.drop_nopeer, s.drop_badslot, s.drop_limit, s.nic_rx_no_buf, s.rx_irqs, s.rx_rearms - s0.rx_rearms);
	CHECK_EQ("every packet once, in order, intact", bad, 0);
	CHECK("holes no more than allowed", gaps <= gaps_ok);
	printf("STATS stream server rx_unlocked=%lu settles=%lu\n", si1.rx_unlocked - si0.rx_unlocked,
	       si1.rx_settles - si0.rx_settles);
	printf("STATS stream server input_unlocked=%lu relocked=%lu of %lu calls\n",
	       s.rx_unlocked_calls - s0.rx_unlocked_calls, s.rx_relocked_calls - s0.rx_relocked_calls,
	       s.rx_batches - s0.rx_batches);
	if (arg_unlocked) { // a further CPU's idle loop took frames without the kernel lock
		CHECK("received without the kernel lock (sysinfo: rxlock=fine)",
		      si1.rx_unlocked > si0.rx_unlocked && si1.rx_fine == 1);
		CHECK("input_io began without the kernel lock", s.rx_unlocked_calls > s0.rx_unlocked_calls);
	}
	if (arg_rearms) { // a paced stream under poll=irq: rings run empty mid-batch
		// Polled, a NIC's interrupt comes at most once a batch (then it is
		// masked until the batch completes); re-armed, frames bring more.
		uint64_t irqs = s.rx_irqs - s0.rx_irqs, nb = s.rx_batches - s0.rx_batches;
		uint64_t nics = (uint64_t)__builtin_popcount(c.dev_no & 0xff);
		printf("STATS stream server irq_wait irqs=%lu batches=%lu nics=%lu\n", irqs, nb, nics);
		CHECK("the NICs went back to interrupts while a batch waited, and those came (sysinfo: poll=irq)",
		      s.rx_rearms > s0.rx_rearms && irqs > nics * (nb + 1) && si1.poll_mode == SYS_POLL_IRQ);
	}
	CHECK_EQ("nothing dropped", s.drop_noslot + s.drop_badslot + s.drop_window + s.drop_nopeer + s.drop_limit, 0);
	if (bye_at) { // the client fills its window meanwhile; then the goodbye (chan_close)
		sleep((uint64_t)arg_bye_ms * 1000);
		printf("BYE stream server after=%u\n", received());
	}
}

static int wait_ack(uint64_t *acked)
{
	long r = input_io(c.io, c.sizes, c.pos);
	if (r != 1 || c.sizes[0] != 8) {
		printf("stream: client waiting for an ack: %ld (%s)\n", r, err_name(r));
		return 1;
	}
	__builtin_memcpy(acked, chan_in(&c, 0), 8);
	return 0;
}

static void client(uint64_t hz)
{
	struct io_stats s0, s;
	uint64_t acked = 0;
	uint32_t sent = 0;
	int bad = 0;
	for (uint32_t i = 0; i < batch; i++) {
		payload_fill(chan_out(&c, i), i, size);
		c.osize[i] = size;
	}
	// start_ms=N: the stream starts once the machine has been up N ms.
	// QEMU's e1000 holds a NIC's received frames back for a second after
	// its receiver is enabled (7.2: flush_queue_timer), so a stream begun
	// sooner stalls on its first acknowledgement for what is left of it.
	while (start_ms && rdtsc() / (hz / 1000) < start_ms)
		sleep(10000);
	chan_stats(&c, &s0);
	struct sysinfo si0, si;
	sysinfo(&si0);
	uint64_t t0 = rdtsc();
	mark_start();
	printf("START stream client tsc_ms=%lu\n", t0 / (hz / 1000));
	while (sent < count && !bad) {
		while (!bad && sent - acked >= (uint64_t)window * batch)
			bad += wait_ack(&acked);
		cpu_sample(rdtsc(), (uint64_t)sent * size);
		mark_check(t0, hz);
		long r = bad ? 0 : chan_send(&c);
		if (r != (long)batch) {
			printf("stream: client send %ld (%s) at %u\n", r, err_name(r), sent);
			bad++;
		}
		sent += batch;
		if (idle_at && sent == idle_at && !bad) { // everything acknowledged, then nothing sent
			while (!bad && acked < sent)
				bad += wait_ack(&acked);
			printf("IDLE stream client tsc_ms=%lu\n", rdtsc() / (hz / 1000));
			sleep(idle_ms * 1000);
			printf("RESUME stream client tsc_ms=%lu\n", rdtsc() / (hz / 1000));
		}
	}
	while (!bad && acked < count)
		bad += wait_ack(&acked);
	cpu_sample(rdtsc(), (uint64_t)sent * size);
	mark_end();
	if (nmarks) // the last acknowledgement: the failover benchmark maps this clock onto the server's by it
		printf("END stream client tsc_ms=%lu\n", rdtsc() / (hz / 1000));
	sysinfo(&si);
	uint64_t t1 = rdtsc(), busy = (si.ncpu ? si.ncpu : 1) * (t1 - t0) - (si.idle_tsc - si0.idle_tsc);
	chan_stats(&c, &s);
	uint64_t tx = s.tx_packets - s0.tx_packets;
	printf("RESULT stream system=kernel role=client bytes=%u packets=%lu links=%d mbps=%lu kbps=%lu "
	       "doorbells=%lu pace_waits=%lu busy_per_pkt=%lu busy_x1000=%lu\n",
	       size, tx, __builtin_popcount(c.dev_no & 0xff), mbps((uint64_t)count * size, t1 - t0, hz),
	       kbps((uint64_t)count * size, t1 - t0, hz),
	       s.tx_doorbells - s0.tx_doorbells, s.tx_pace_waits - s0.tx_pace_waits, tx ? busy / tx : 0,
	       t1 > t0 ? busy * 1000 / (t1 - t0) : 0);
	print_cpubusy("client", &si0, &si, t1 - t0, tx);
	cpu_print("client", hz);
	print_links("client tx", s.link_tx, tx);
	await_transport_acks(hz);
	print_reliable("client", 1);
	CHECK_EQ("every batch sent and acknowledged", bad, 0);
	CHECK_EQ("all packets sent", tx, count);
	if (arg_unlocked) { // rxlock=fine: a reliable channel's sends too
		printf("STATS stream client output_unlocked=%lu relocked=%lu\n",
		       s.tx_unlocked_calls - s0.tx_unlocked_calls, s.tx_relocked_calls - s0.tx_relocked_calls);
		CHECK("output_io began without the kernel lock", s.tx_unlocked_calls > s0.tx_unlocked_calls);
	}
}

// bye=1: sends until the server's goodbye ends it. output_io returns
// -E_LINK within limit_ms (it waited for the window for ever), having
// let go of what stayed unacknowledged; input_io says -E_LINK once after
// the server's acknowledgements.
static void client_bye(uint64_t hz, uint64_t limit_ms)
{
	struct io_stats s;
	uint32_t sent = 0;
	long r = 0, in = 0;
	uint64_t ms = hz / 1000, t = 0;
	for (uint32_t i = 0; i < batch; i++) {
		payload_fill(chan_out(&c, i), i, size);
		c.osize[i] = size;
	}
	printf("START stream client tsc_ms=%lu\n", rdtsc() / ms);
	while (sent < count) {
		uint64_t t0 = rdtsc();
		if ((r = chan_send(&c)) != (long)batch) {
			t = (rdtsc() - t0) / ms;
			break;
		}
		sent += batch;
	}
	for (uint32_t k = 0; k <= count / batch + 1 && (in = input_io(c.io, c.sizes, c.pos)) > 0; k++)
		; // the server's acknowledgements first
	chan_stats(&c, &s);
	printf("BYE stream client send=%s after_ms=%lu sent=%u input=%s byes=%lu bye_links=%lu lost=%lu "
	       "acked=%lu\n", r < 0 ? err_name(r) : "ok", t, sent, in < 0 ? err_name(in) : "ok", s.rx_byes,
	       s.bye_links, s.tx_bye_lost, s.tx_acked);
	print_reliable("client", 1);
	CHECK_EQ("output_io: -E_LINK after the goodbye", r, -E_LINK);
	CHECK("within limit_ms", t <= limit_ms);
	CHECK_EQ("input_io: -E_LINK after the goodbye", in, -E_LINK);
	CHECK("counted", s.rx_byes == 1 && s.bye_links == 2 && s.dead_peer == 0);
	struct io_linkstats l;
	CHECK_EQ("link stats", ctrl_io(c.io, IO_OP_LINKSTATS, 0, (unsigned long)&l, 0), 0);
	uint64_t settled = s.tx_acked + s.tx_bye_lost; // the failed call's too, if it had queued them
	CHECK("every packet acknowledged or let go", l.unacked == 0 && (settled == sent || settled == sent + batch));
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	bool srv = !strcmp(arg_get(argc, argv, "role", "client"), "server");
	size = (uint32_t)arg_long(argc, argv, "size", 8192);
	batch = (uint32_t)arg_long(argc, argv, "batch", MAXB / 2);
	count = (uint32_t)arg_long(argc, argv, "count", 4096);
	window = (uint32_t)arg_long(argc, argv, "window", 2);
	ack_every = (uint32_t)arg_long(argc, argv, "ack", 1);
	CHECK("arguments", size >= 1 && size <= WIRE_MAX_PAYLOAD && batch >= 1 && batch <= MAXB &&
				   count % batch == 0 && window >= 1 && ack_every >= 1 && ack_every <= window);
	nclients = srv ? (int)arg_long(argc, argv, "clients", 1) : 1;
	cbatch = srv ? (uint32_t)arg_long(argc, argv, "cbatch", batch) : batch;
	routed = arg_get(argc, argv, "dst", NULL) != NULL;
	CHECK("clients", nclients >= 1 && nclients <= MAXCLIENTS && cbatch >= 1 && cbatch <= MAXB);
	CHECK_EQ("channel open, peer set", chan_setup(&c, 0, argc, argv, 3, srv ? batch : 1, srv ? 1 : batch), 0);
	if (srv)
		parse_clients(argc, argv);
	timeout_ms = (uint32_t)arg_long(argc, argv, "timeout_ms", 20000);
	ctrl_io(c.io, IO_OP_TIMEOUT, (nclients > 1 ? FLUSH_MS : timeout_ms) * 1000ul, 0, 0);
	bin_ms = (uint32_t)arg_long(argc, argv, "bin_ms", 0);
	idle_at = (uint32_t)arg_long(argc, argv, "idle_at", 0);
	idle_ms = (uint32_t)arg_long(argc, argv, "idle_ms", 0);
	start_ms = (uint64_t)arg_long(argc, argv, "start_ms", 0);
	gap_after_tsc = s0.tsc_hz / 1000 * (uint64_t)arg_long(argc, argv, "gap_after_ms", 0);
	bin_tsc = s0.tsc_hz / 1000 * bin_ms;
	cpu_tsc = s0.tsc_hz / 1000 * (uint64_t)arg_long(argc, argv, "cpu_ms", 0);
	for (const char *m = arg_get(argc, argv, "marks_ms", ""); *m && nmarks < MAXMARKS; m += *m == ',') {
		uint64_t v = 0;
		while (*m >= '0' && *m <= '9')
			v = v * 10 + (uint64_t)(*m++ - '0');
		marks[nmarks++] = v;
	}
	arg_bye_ms = (uint32_t)arg_long(argc, argv, "bye_ms", 500);
	arg_rearms = arg_long(argc, argv, "rearms", 0) != 0;
	arg_unlocked = arg_long(argc, argv, "unlocked", 0) != 0;
	arg_nocheck = arg_long(argc, argv, "check", 1) == 0;
	hop_at = (uint32_t)arg_long(argc, argv, "hop_at", 0);
	hop_cpu = arg_long(argc, argv, "hop_cpu", 1);
	if (srv)
		server((int)arg_long(argc, argv, "gaps", 0), (uint32_t)arg_long(argc, argv, "bye_at", 0), s0.tsc_hz);
	else if (arg_long(argc, argv, "bye", 0))
		client_bye(s0.tsc_hz, (uint64_t)arg_long(argc, argv, "limit_ms", 20000));
	else
		client(s0.tsc_hz);
	chan_close(&c);
	sysinfo(&s1);
	// The machine's free frames: only this program's when it runs alone
	// (alone=1, the default); else its parent and the kernel's exit check.
	if (arg_long(argc, argv, "alone", 1))
		CHECK_EQ("frames back after the channel closed", s1.frames_free, s0.frames_free);
	return utest_done("stream");
}
