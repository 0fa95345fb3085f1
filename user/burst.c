// Throughput by the Tender paper's Figure 4 method: the client sends 128
// packets of S bytes in one output_io; the server receives all 128 in one
// input_io, checks them, and answers with one 1-byte packet. The client
// reports T0 (first send to reply), T1 (its time inside the send call) and
// T2 = T0 - T1, in TSC ticks (guest instructions under -icount), and the
// per-batch doorbell and interrupt counts. A batch of 0-byte packets ends it.
// With cpu_ms=N the client follows each size's timed bursts with bursts for
// N ms between two MARK lines, over which the harness reads the host CPU
// time of both VMs. Each side prints, per size, the bytes its CPU copied on
// receive (io_stats.rx_bytes_copied; sends copy no payload).
// R1 (issue 10): the server's TSC from the batch's first packet taken into a
// slot (io_stats.batch_first_tsc, stamped by the kernel) to its reply sent,
// per packet; guest instructions under -icount. Kept per batch in memory and
// printed at the end (R1 burst lines), so printing costs no measured time;
// check_tsc is the part spent checking the payloads.
// R1 as receive work (issue 25): marks for insnplugin.c's receive windows.
// A window opens before input_io, while the server waits for the burst,
// and closes once it holds every frame (its payload check marked apart
// inside it); the reply is outside. The kernel marks its idle polls that
// take nothing, which the plugin leaves out. After the last burst an idle
// window (input_io with no frames coming, until IO_OP_TIMEOUT) measures the
// background. The server prints one RXWIN line per closed window, in order,
// with its TSC ticks, for pairing with the plugin's RXW lines.
// Args: role=client|server nic= chan= peer=MAC sizes=a,b reps= warm= cpu_ms=
#include <utest.h>
#include <netutil.h>

#define BATCH 128
static struct chan c;
static bool poll_irq; // the kernel polls with poll=irq (sysinfo.poll_mode)

// A call's result in the failure lines: its error's name when negative,
// else whether the count fell short of want (err_name of a count, which is
// no error, used to print "E_?").
static const char *verdict(long r, long want)
{
	return r < 0 ? err_name(r) : r < want ? "short" : r == want ? "ok" : "too many";
}

static inline void rx_open(void) { __asm__ volatile("nopl 0x7ab1c0d3(%%rax)" ::: "memory"); }
static inline void rx_close(void) { __asm__ volatile("nopl 0x7ab1c0d4(%%rax)" ::: "memory"); }
static inline void check_begin(void) { __asm__ volatile("nopl 0x7ab1c0d5(%%rax)" ::: "memory"); }
static inline void check_end(void) { __asm__ volatile("nopl 0x7ab1c0d6(%%rax)" ::: "memory"); }
#define IDLE_WINDOW_MS 200

// One burst of S-byte packets starting at sequence number seq; 0 on success.
static int one_burst(uint32_t size, uint32_t seq, uint64_t *t0, uint64_t *t1)
{
	for (uint32_t i = 0; i < BATCH; i++) {
		payload_fill(chan_out(&c, i), seq + i, size);
		c.osize[i] = size;
	}
	// No-op markers around the send: make profile-t1's plugin counts
	// the blocks run between them (tools/bench/profplugin.c).
	__asm__ volatile("nopl 0x7ab1c0d0(%%rax)" ::: "memory");
	uint64_t a = rdtsc();
	long s = chan_send(&c);
	uint64_t b = rdtsc();
	__asm__ volatile("nopl 0x7ab1c0d1(%%rax)" ::: "memory");
	long r = input_io(c.io, c.sizes, c.pos);
	uint64_t d = rdtsc();
	*t0 = d - a, *t1 = b - a;
	if (s != BATCH || r != 1 || c.sizes[0] != 1) {
		struct io_stats st;
		chan_stats(&c, &st);
		printf("burst: size %u: send %ld of %d (%s), reply %ld (%s); tx_ring_sleeps=%lu tx_stranded=%lu\n",
		       size, s, BATCH, verdict(s, BATCH), r, verdict(r, 1), st.tx_ring_sleeps, st.tx_stranded);
		return 1;
	}
	return 0;
}

// Back-to-back bursts for at least `ticks` TSC ticks between two MARK lines
// (the harness reads both VMs' host CPU time when it sees each); 0 on success.
static int cpu_phase(uint32_t size, uint32_t *seq, uint64_t ticks)
{
	uint64_t t0, t1, start;
	int bad = 0, n = 0;
	printf("MARK burst bytes=%u cpu begin\n", size);
	start = rdtsc();
	while (rdtsc() - start < ticks && !bad) {
		bad += one_burst(size, *seq, &t0, &t1);
		*seq += BATCH;
		n++;
	}
	printf("MARK burst bytes=%u cpu end bursts=%d\n", size, n);
	return bad;
}

static int client(int argc, char **argv)
{
	uint32_t sizes[32];
	int nsz = parse_u32_list(arg_get(argc, argv, "sizes", "64,1500,8192"), sizes, 32);
	int reps = (int)arg_long(argc, argv, "reps", 5), warm = (int)arg_long(argc, argv, "warm", 1);
	uint64_t hz = tsc_hz(), cpu_ms = (uint64_t)arg_long(argc, argv, "cpu_ms", 0);
	uint32_t seq = 0;
	int bad = 0;
	for (int z = 0; z < nsz; z++) {
		uint32_t size = sizes[z];
		struct io_stats s0, s1;
		chan_stats(&c, &s0);
		for (int k = 0; k < warm + reps; k++) {
			struct io_stats a, b;
			uint64_t t0, t1;
			chan_stats(&c, &a);
			bad += one_burst(size, seq, &t0, &t1);
			chan_stats(&c, &b);
			seq += BATCH;
			if (k < warm)
				continue;
			uint64_t us = t0 * 1000000 / hz;
			printf("RESULT burst system=kernel bytes=%u rep=%d t0_tsc=%lu t1_tsc=%lu t2_tsc=%lu "
			       "tsc_hz=%lu t0_us=%lu kbps=%lu doorbells=%lu irqs=%lu\n",
			       size, k - warm, t0, t1, t0 - t1, hz, us,
			       us ? (uint64_t)BATCH * size * 8 * 1000 / us : 0,
			       b.tx_doorbells - a.tx_doorbells, b.rx_irqs - a.rx_irqs);
		}
		if (cpu_ms)
			bad += cpu_phase(size, &seq, cpu_ms * hz / 1000);
		chan_stats(&c, &s1);
		printf("STATS burst client bytes=%u batches=%lu rx_packets=%lu rx_bytes_copied=%lu\n", size,
		       s1.tx_batches - s0.tx_batches, s1.rx_packets - s0.rx_packets,
		       s1.rx_bytes_copied - s0.rx_bytes_copied);
	}
	// The harness reads both VMs' CPU time when it sees the last end line; a
	// VM that exits at once can outrun it and lose that window.
	if (cpu_ms)
		sleep(300000);
	uint64_t t0, t1;
	CHECK_EQ("every burst answered", bad, 0);
	CHECK_EQ("quit acknowledged", one_burst(0, seq, &t0, &t1), 0);
	return 0;
}

// Receive counters per packet size, for the per-size STATS lines.
#define MAX_SIZES 16
#define R1_MAX 32 // R1 samples kept per size (the first batches: warm-ups and timed ones)
static struct per_size {
	uint64_t bytes, batches, packets, copied, irqs;
	uint32_t n_r1;
	uint64_t r1[R1_MAX], check[R1_MAX]; // per packet, TSC ticks
} per[MAX_SIZES];

// Each closed receive window: its packets, size and TSC ticks (printed at
// the end as RXWIN lines, the plugin's RXW lines in the same order).
#define RXWIN_MAX 1024
static struct { uint32_t bytes, packets, idle_ms; uint64_t tsc; } rxwin[RXWIN_MAX];
static uint32_t n_rxwin;

static void rxwin_note(uint32_t bytes, uint32_t packets, uint32_t idle_ms, uint64_t tsc)
{
	if (n_rxwin < RXWIN_MAX)
		rxwin[n_rxwin++] = (typeof(rxwin[0])){ bytes, packets, idle_ms, tsc };
}

// The idle window: input_io with nothing coming, closed by its timeout.
static void idle_window(void)
{
	ctrl_io(c.io, IO_OP_TIMEOUT, IDLE_WINDOW_MS * 1000ul, 0, 0);
	uint64_t t0 = rdtsc();
	rx_open();
	long r = input_io(c.io, c.sizes, c.pos);
	rx_close();
	uint64_t t1 = rdtsc();
	rxwin_note(0, r > 0 ? (uint32_t)r : 0, IDLE_WINDOW_MS, t1 - t0);
}

static void count_batch(uint64_t size, const struct io_stats *a, const struct io_stats *b, uint64_t r1,
			uint64_t check)
{
	for (int i = 0; i < MAX_SIZES; i++) {
		struct per_size *q = &per[i];
		if (q->batches && q->bytes != size)
			continue;
		q->bytes = size;
		q->batches++;
		q->packets += b->rx_packets - a->rx_packets;
		q->copied += b->rx_bytes_copied - a->rx_bytes_copied;
		q->irqs += b->rx_irqs - a->rx_irqs;
		if (q->n_r1 < R1_MAX && r1) {
			q->r1[q->n_r1] = r1;
			q->check[q->n_r1++] = check;
		}
		return;
	}
}

// The server's payload check: every byte against wire_pattern, 8 bytes per
// step. The pattern is a per-index base XOR a per-packet byte (checked
// against wire.h at start, else the library's check is used), so a word is
// right when p ^ base ^ key is 0: differences are OR-ed, one branch per
// packet instead of one per word (four instructions per 8 bytes).
static uint64_t pat_words[WIRE_MAX_PAYLOAD / 8 + 1];
static bool pat_ok;

static uint8_t pat_key(uint32_t seq) { return (uint8_t)(wire_pattern(seq, 0) ^ wire_pattern(0, 0)); }

static void check_init(void)
{
	static const uint32_t probe[] = { 1, 2, 255, 256, 0x12345678u };
	uint8_t *b = (uint8_t *)pat_words;
	for (uint32_t i = 0; i < sizeof(pat_words); i++)
		b[i] = wire_pattern(0, i);
	pat_ok = true;
	for (unsigned k = 0; k < sizeof(probe) / sizeof(probe[0]); k++)
		for (uint32_t i = 0; i < WIRE_MAX_PAYLOAD; i++)
			if (wire_pattern(probe[k], i) != (uint8_t)(b[i] ^ pat_key(probe[k])))
				pat_ok = false;
}

static uint64_t word_at(const uint8_t *p)
{
	uint64_t w;
	__builtin_memcpy(&w, p, 8); // one (unaligned) move
	return w;
}

// 1 when the n payload bytes at p are packet seq's pattern.
static int check_payload(const uint8_t *p, uint32_t seq, uint32_t n)
{
	if (!pat_ok || n > WIRE_MAX_PAYLOAD)
		return payload_check(p, seq, n);
	uint64_t k = 0x0101010101010101ull * pat_key(seq), d = 0;
	uint32_t w = n / 8, i = 0;
	for (; i + 8 <= w; i += 8) { // unrolled: the loop's own steps once per 64 bytes
		const uint8_t *q = p + 8 * i;
		const uint64_t *b = pat_words + i;
		d |= (word_at(q) ^ b[0] ^ k) | (word_at(q + 8) ^ b[1] ^ k) | (word_at(q + 16) ^ b[2] ^ k) |
		     (word_at(q + 24) ^ b[3] ^ k) | (word_at(q + 32) ^ b[4] ^ k) | (word_at(q + 40) ^ b[5] ^ k) |
		     (word_at(q + 48) ^ b[6] ^ k) | (word_at(q + 56) ^ b[7] ^ k);
	}
	for (; i < w; i++)
		d |= word_at(p + 8 * i) ^ pat_words[i] ^ k;
	for (uint32_t j = w * 8; j < n; j++)
		d |= (uint8_t)(p[j] ^ wire_pattern(seq, j));
	return d == 0;
}

// check_payload accepts the pattern and refuses any one byte changed (first,
// inside an unrolled block, in the word tail, in the byte tail), at sizes
// around the unrolling; 0 when it does.
static int check_selftest(void)
{
	static uint8_t buf[WIRE_MAX_PAYLOAD + 8];
	static const uint32_t sizes[] = { 0, 1, 7, 8, 63, 64, 65, 71, 72, 1500, 8191, 8192, WIRE_MAX_PAYLOAD };
	int bad = 0;
	for (unsigned z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		uint32_t n = sizes[z], seq = 1000 + z;
		uint8_t *p = buf + (z & 7); // every alignment the slots give
		payload_fill(p, seq, n);
		bad += !check_payload(p, seq, n);
		bad += n && check_payload(p, seq + 1, n);
		uint32_t at[] = { 0, n / 2, n - 1, n > 9 ? n - 9 : 0, n > 64 ? 63 : 0 };
		for (unsigned j = 0; n && j < sizeof(at) / sizeof(at[0]); j++) {
			p[at[j]] ^= 0x10;
			bad += check_payload(p, seq, n);
			p[at[j]] ^= 0x10;
		}
	}
	return bad;
}

static int server(void)
{
	int bad = 0;
	uint64_t batches = 0;
	struct io_stats s, prev;
	c.osize[0] = 1;
	chan_stats(&c, &prev);
	check_init();
	CHECK_EQ("payload check refuses every changed byte", check_selftest(), 0);
	printf("READY burst server\n");
	for (;;) {
		uint64_t w0 = rdtsc();
		rx_open();
		long r = input_io(c.io, c.sizes, c.pos);
		if (r != BATCH) {
			printf("burst: server got %ld of %d (%s)\n", r, BATCH, verdict(r, BATCH));
			bad++;
			if (r < 0)
				break;
		}
		bool quit = true;
		uint64_t c0 = rdtsc();
		check_begin();
		for (long i = 0; i < r; i++) {
			bad += !check_payload(chan_in(&c, (uint32_t)i), chan_rx_seq(&c, (uint32_t)i), (uint32_t)c.sizes[i]);
			quit &= c.sizes[i] == 0;
		}
		check_end();
		rx_close();
		uint64_t c1 = rdtsc();
		rxwin_note(r > 0 ? (uint32_t)c.sizes[0] : 0, r > 0 ? (uint32_t)r : 0, 0, c1 - w0);
		batches++;
		ctrl_io(c.io, IO_OP_RECLAIM, 0, 0, 0);
		chan_out(&c, 0)[0] = 0x42;
		if (chan_send(&c) != 1)
			bad++;
		uint64_t sent = rdtsc();
		chan_stats(&c, &s); // after the reply: not on the client's clock
		uint64_t r1 = r > 0 && s.batch_first_tsc && sent > s.batch_first_tsc ?
				      (sent - s.batch_first_tsc) / (uint64_t)r : 0;
		count_batch(r > 0 ? c.sizes[0] : 0, &prev, &s, r1, r > 0 ? (c1 - c0) / (uint64_t)r : 0);
		prev = s;
		if (quit)
			break;
	}
	// The counters the checks below read stop here: the idle window's
	// input_io waits too, and an interrupt while it waits (a NIC's late
	// cause, the client closing) is counted, though it takes no batch.
	struct io_stats done;
	chan_stats(&c, &done);
	idle_window();
	for (uint32_t k = 0; k < n_rxwin; k++)
		printf("RXWIN i=%u bytes=%u packets=%u tsc=%lu idle_ms=%u\n", k, rxwin[k].bytes, rxwin[k].packets,
		       rxwin[k].tsc, rxwin[k].idle_ms);
	for (int i = 0; i < MAX_SIZES && per[i].batches; i++)
		printf("STATS burst size bytes=%lu batches=%lu packets=%lu bytes_copied=%lu irqs=%lu\n",
		       per[i].bytes, per[i].batches, per[i].packets, per[i].copied, per[i].irqs);
	for (int i = 0; i < MAX_SIZES && per[i].batches; i++)
		for (uint32_t k = 0; k < per[i].n_r1; k++)
			printf("R1 burst bytes=%lu i=%u r1_tsc=%lu check_tsc=%lu\n", per[i].bytes, k, per[i].r1[k],
			       per[i].check[k]);
	s = done;
	printf("STATS burst server batches=%lu packets=%lu exchanged=%lu copied=%lu bytes_copied=%lu "
	       "threshold=%lu irqs=%lu irqs_per_batch_x100=%lu copied_bytes_per_pkt_x100=%lu noslot=%lu "
	       "held_peak=%lu scrubs=%lu own_pages=%lu\n",
	       batches, s.rx_packets, s.rx_exchanged, s.rx_copied, s.rx_bytes_copied, s.copy_threshold, s.rx_irqs,
	       batches ? s.rx_irqs * 100 / batches : 0,
	       s.rx_packets ? s.rx_bytes_copied * 100 / s.rx_packets : 0, s.drop_noslot, s.frames_held,
	       s.rx_scrubs, s.rx_scrubs_skipped);
	CHECK_EQ("every packet of every burst intact", bad, 0);
	CHECK_EQ("nothing dropped", s.drop_noslot + s.drop_badslot, 0);
	// The first interrupt of a batch switches its NIC to polling; a batch
	// already waiting when input_io starts needs none. Striped: one per link.
	// With poll=irq (the kernel says so in sysinfo) a NIC whose ring ran
	// empty goes back to interrupts within a batch: at most one a packet.
	if (poll_irq)
		CHECK("at most one receive interrupt per packet (poll=irq)", s.rx_irqs <= s.rx_packets);
	else
		CHECK("at most one receive interrupt per batch and link",
		      s.rx_irqs <= batches * (uint64_t)__builtin_popcount(c.dev_no & 0xff));
	return 0;
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	bool srv = !strcmp(arg_get(argc, argv, "role", "client"), "server");
	poll_irq = s0.poll_mode == SYS_POLL_IRQ;
	CHECK_EQ("channel open, peer set", chan_setup(&c, 0, argc, argv, 2, srv ? BATCH : 1, srv ? 1 : BATCH), 0);
	ctrl_io(c.io, IO_OP_TIMEOUT, (unsigned long)arg_long(argc, argv, "timeout_ms", 20000) * 1000, 0, 0);
	if (srv)
		server();
	else
		client(argc, argv);
	if (arg_long(argc, argv, "unlocked", 0)) { // rxlock=fine: the calls without the kernel lock
		struct io_stats st;
		chan_stats(&c, &st);
		printf("STATS burst %s input_unlocked=%lu relocked=%lu output_unlocked=%lu relocked=%lu\n",
		       srv ? "server" : "client", st.rx_unlocked_calls, st.rx_relocked_calls, st.tx_unlocked_calls,
		       st.tx_relocked_calls);
		CHECK("input_io and output_io ran without the kernel lock",
		      st.rx_unlocked_calls > 0 && st.tx_unlocked_calls > 0);
	}
	chan_close(&c);
	sysinfo(&s1);
	CHECK_EQ("frames back after the channel closed", s1.frames_free, s0.frames_free);
	return utest_done("burst");
}
