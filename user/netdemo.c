// What this kernel is for (make run, tools/run-demo.sh): two machines joined
// by a wire exchange packets through the I/O resource, and say how each one
// reached user memory. role=server waits; role=client drives it and prints
// one table row per size:
//   - a round trip (median of rtts=, after one unmeasured), one packet each
//     way on channel 1; the server echoes by exchanging the pages the packet
//     arrived in into its send region: it copies nothing;
//   - a burst (median of bursts=): 128 packets in one output_io, taken by
//     the server in one input_io, answered once (send to answer, as burst.c);
//   - how the server received each burst (struct io_stats over it): frames
//     above the copy threshold exchanged (pages moved), the others copied;
//     doorbells per send batch, receive interrupts per receive batch;
//   - payload bytes verified: every packet carries wire_pattern() bytes,
//     checked byte by byte and by checksum wherever it arrives.
// Args: role=client|server peer=MAC nic= sizes=a,b,.. rtts= bursts= timeout_ms=
// Exit 0 when every packet arrived intact and both sides agree.
#include <netutil.h>

#define BATCH IO_MAX_BATCH
#define CH_RTT 1   // one packet per call: round trips and the messages below
#define CH_BURST 2 // 128 packets per call
#define MAX_SIZES 8

// A message on the round-trip channel (client: OP_HELLO, OP_BURST, OP_QUIT;
// server: the answers). Its first bytes never start a test payload: byte 1 of
// wire_pattern() is always byte 0 ^ 0x83.
#define MAGIC0 'N'
#define MAGIC1 'D'
enum { OP_HELLO = 1, OP_INFO, OP_BURST, OP_GO, OP_RESULT, OP_QUIT, OP_BYE };
struct msg {
	uint8_t magic[2];
	uint16_t op;
	uint32_t size;            // OP_BURST, OP_RESULT: bytes of each packet
	uint64_t packets, bytes;  // server: packets and payload bytes verified so far
	uint64_t bad;             // server: packets that differed or did not come
	uint64_t echoes;          // OP_BYE: round trips the server echoed
	struct io_stats st;       // OP_INFO: the server's burst channel now;
				  // OP_RESULT: burst channel over the burst;
				  // OP_BYE: round-trip channel since it opened
};

static struct chan rtt, burst; // channels 1 and 2
static uint32_t seq_rtt, seq_burst; // client: sequence numbers the kernel gives our sends
static uint64_t hz;

static bool is_msg(const uint8_t *p, uint64_t size, uint16_t op)
{
	const struct msg *m = (const struct msg *)p;
	return size == sizeof(struct msg) && m->magic[0] == MAGIC0 && m->magic[1] == MAGIC1 &&
	       (!op || m->op == op);
}

static long send_msg(struct msg *m)
{
	m->magic[0] = MAGIC0, m->magic[1] = MAGIC1;
	ctrl_io(rtt.io, IO_OP_RECLAIM, 0, 0, 0); // slot 0's frames may still be in a send
	memcpy(chan_out(&rtt, 0), m, sizeof(*m));
	rtt.osize[0] = sizeof(*m);
	rtt.opos[0] = 0;
	seq_rtt++;
	return chan_send(&rtt);
}

// Waits for a message `op` on the round-trip channel; 0 when it came.
static int recv_msg(uint16_t op, struct msg *m)
{
	long r = input_io(rtt.io, rtt.sizes, rtt.pos);
	if (r != 1 || !is_msg(chan_in(&rtt, 0), rtt.sizes[0], op)) {
		printf("netdemo: expected message %u, got %ld packet(s) (%s) of %lu bytes\n", op, r,
		       r < 0 ? err_name(r) : "not that message", r == 1 ? rtt.sizes[0] : 0);
		return -1;
	}
	memcpy(m, chan_in(&rtt, 0), sizeof(*m));
	return 0;
}

static void human(char *buf, size_t n, uint64_t bytes)
{
	if (bytes < 10000)
		fmt_snprintf(buf, n, "%lu B", bytes);
	else if (bytes < 1024 * 1024)
		fmt_snprintf(buf, n, "%lu.%lu KiB", bytes >> 10, (bytes & 0x3ff) * 10 >> 10);
	else
		fmt_snprintf(buf, n, "%lu.%lu MiB", bytes >> 20, (bytes & 0xfffff) * 10 >> 20);
}

static void ratio(char *buf, size_t n, uint64_t a, uint64_t b)
{
	uint64_t x = b ? (a * 100 + b / 2) / b : 0;
	fmt_snprintf(buf, n, "%lu.%02lu", x / 100, x % 100);
}

// ---------------------------------------------------------------- server

static int server(void)
{
	struct msg m;
	uint64_t packets = 0, bytes = 0, bad = 0, echoes = 0, bursts = 0;
	printf("READY netdemo server: channel %d echoes round trips by page exchange, channel %d "
	       "takes bursts of %d\n", CH_RTT, CH_BURST, BATCH);
	for (;;) {
		long r = input_io(rtt.io, rtt.sizes, rtt.pos);
		if (r != 1) {
			printf("netdemo: server: nothing from the client (%s)\n", err_name(r));
			return 1;
		}
		const uint8_t *p = chan_in(&rtt, 0);
		uint32_t size = (uint32_t)rtt.sizes[0];
		if (!is_msg(p, size, 0)) { // a round trip: check it, send its pages back
			bool ok = payload_check(p, chan_rx_seq(&rtt, 0), size);
			packets++, bytes += ok ? size : 0, bad += !ok;
			long e = chan_echo(&rtt);
			if (e != 1) {
				printf("netdemo: server: echo failed (%s)\n", err_name(e));
				return 1;
			}
			echoes++;
			continue;
		}
		uint16_t op = ((const struct msg *)p)->op;
		size = ((const struct msg *)p)->size;
		memset(&m, 0, sizeof(m));
		if (op == OP_QUIT) {
			m.op = OP_BYE;
			chan_stats(&rtt, &m.st);
			m.packets = packets, m.bytes = bytes, m.bad = bad, m.echoes = echoes;
			send_msg(&m);
			break;
		}
		if (op == OP_HELLO) {
			m.op = OP_INFO;
			chan_stats(&burst, &m.st);
			send_msg(&m);
			continue;
		}
		if (op != OP_BURST) {
			printf("netdemo: server: unknown message %u\n", op);
			return 1;
		}
		struct io_stats a, b;
		chan_stats(&burst, &a);
		m.op = OP_GO;
		send_msg(&m);
		r = input_io(burst.io, burst.sizes, burst.pos);
		uint64_t ok = 0;
		for (long i = 0; i < r; i++)
			if (burst.sizes[i] == size &&
			    payload_check(chan_in(&burst, (uint32_t)i), chan_rx_seq(&burst, (uint32_t)i), size))
				ok++;
		chan_stats(&burst, &b);
		packets += ok, bytes += ok * size, bad += BATCH - ok;
		bursts++;
		if (ok != BATCH)
			printf("netdemo: server: burst of %u-byte packets: %lu of %d intact (%s)\n", size,
			       ok, BATCH, r < 0 ? err_name(r) : "received");
		m.op = OP_RESULT, m.size = size;
		m.packets = packets, m.bytes = bytes, m.bad = bad;
		stats_delta(&m.st, &a, &b);
		send_msg(&m);
	}
	char vb[24];
	human(vb, sizeof(vb), bytes);
	printf("netdemo: server: %lu round trips echoed without a copy, %lu bursts taken; %lu packets, "
	       "%s verified, %lu bad\n", echoes, bursts, packets, vb, bad);
	return bad != 0;
}

// ---------------------------------------------------------------- client

// One round trip of `size` bytes: TSC ticks, or 0 when the echo did not
// come back identical. *verified gets the bytes checked.
static uint64_t round_trip(uint32_t size, uint64_t *verified)
{
	uint32_t seq = seq_rtt++;
	payload_fill(chan_out(&rtt, 0), seq, size);
	ctrl_io(rtt.io, IO_OP_RECLAIM, 0, 0, 0);
	rtt.osize[0] = size;
	rtt.opos[0] = 0;
	uint64_t t0 = rdtsc();
	long s = chan_send(&rtt), r = input_io(rtt.io, rtt.sizes, rtt.pos);
	uint64_t t = rdtsc() - t0;
	if (s != 1 || r != 1) {
		printf("netdemo: round trip of %u bytes: send %ld, receive %ld (%s)\n", size, s, r,
		       err_name(r < 0 ? r : s));
		return 0;
	}
	if (rtt.sizes[0] != size || !payload_check(chan_in(&rtt, 0), seq, size)) {
		printf("netdemo: round trip of %u bytes: the echo differs (%lu bytes)\n", size, rtt.sizes[0]);
		return 0;
	}
	*verified += size;
	return t ? t : 1;
}

// One burst of 128 packets of `size` bytes: TSC ticks from the send to the
// server's answer, 0 on failure. *res gets the answer, *tx our send counters.
static uint64_t one_burst(uint32_t size, struct msg *res, struct io_stats *tx)
{
	struct msg m = { .op = OP_BURST, .size = size };
	struct io_stats a, b;
	if (send_msg(&m) != 1 || recv_msg(OP_GO, &m))
		return 0;
	ctrl_io(burst.io, IO_OP_RECLAIM, 0, 0, 0);
	for (uint32_t i = 0; i < BATCH; i++) {
		payload_fill(chan_out(&burst, i), seq_burst + i, size);
		burst.osize[i] = size;
	}
	seq_burst += BATCH;
	chan_stats(&burst, &a);
	uint64_t t0 = rdtsc();
	long s = chan_send(&burst);
	int r = recv_msg(OP_RESULT, res);
	uint64_t t = rdtsc() - t0;
	chan_stats(&burst, &b);
	stats_delta(tx, &a, &b);
	if (s != BATCH || r) {
		printf("netdemo: burst of %u-byte packets: send %ld (%s)\n", size, s, s < 0 ? err_name(s) : "");
		return 0;
	}
	return t ? t : 1;
}

static void add(struct io_stats *sum, const struct io_stats *d)
{
	uint64_t *o = &sum->rx_packets;
	const uint64_t *x = &d->rx_packets;
	for (size_t i = 0; i < IO_STATS_COUNTERS; i++)
		o[i] += x[i];
}

static int client(int argc, char **argv)
{
	uint32_t sizes[MAX_SIZES];
	int nsz = parse_u32_list(arg_get(argc, argv, "sizes", "16,64,1500,4096,8192"), sizes, MAX_SIZES);
	int rtts = (int)arg_long(argc, argv, "rtts", 5), nb = (int)arg_long(argc, argv, "bursts", 3);
	rtts = rtts < 1 ? 1 : rtts > 32 ? 32 : rtts;
	nb = nb < 1 ? 1 : nb > 32 ? 32 : nb;
	uint64_t echoed = 0, t, rt[32], bt[32];
	int bad = 0;
	struct io_stats st;
	struct msg res = { 0 };
	char b1[24], b2[24], b3[24], b4[48];

	chan_stats(&rtt, &st);
	printf("netdemo: client %02x:%02x:%02x:%02x:%02x:%02x, server %s, over e1000 NIC %ld\n",
	       st.mac[0], st.mac[1], st.mac[2], st.mac[3], st.mac[4], st.mac[5],
	       arg_get(argc, argv, "peer", "?"), arg_long(argc, argv, "nic", 0));
	printf("netdemo: channel %d: round trips, one packet each way; channel %d: bursts of %d "
	       "packets, one output_io and one input_io each\n", CH_RTT, CH_BURST, BATCH);
	t = round_trip(64, &echoed);
	if (!t)
		return 1;
	uint64_t srv_prev = 64; // the server checked those 64 bytes before echoing (else: bad)
	printf("netdemo: first round trip %lu ms, not counted (QEMU's e1000 takes no frames for 1 s "
	       "after its receiver is enabled)\n", t * 1000 / hz);
	res.op = OP_HELLO;
	if (send_msg(&res) != 1 || recv_msg(OP_INFO, &res))
		return 1;
	printf("netdemo: on receive a frame (%d-byte header included) up to the copy threshold is "
	       "copied, a longer one's pages are exchanged; measured at boot: %lu B there, %lu B here\n",
	       WIRE_FRAME_HLEN, res.st.copy_threshold, st.copy_threshold);
	memset(&res, 0, sizeof(res));
	fmt_snprintf(b1, sizeof(b1), "median of %d", rtts);
	fmt_snprintf(b2, sizeof(b2), "median of %d", nb);
	printf("\n%8s  %11s  %15s  %-37s  %9s  %9s  %9s\n", "payload", "round trip", "burst of 128",
	       "how the server received each burst", "doorbells", "rx irqs", "verified");
	printf("%8s  %11s  %15s  %-37s  %9s  %9s  %9s\n", "", b1, b2, "", "per batch", "per batch",
	       "bytes");
	for (int z = 0; z < nsz; z++) {
		uint32_t size = sizes[z] > WIRE_MAX_PAYLOAD ? WIRE_MAX_PAYLOAD : sizes[z];
		uint64_t verified = 0;
		struct io_stats rx = { 0 }, tx = { 0 }, d;
		bad += !round_trip(size, &verified); // warms this size's path up
		for (int k = 0; k < rtts; k++)
			bad += !(rt[k] = round_trip(size, &verified));
		for (int k = 0; k < nb; k++) {
			bt[k] = one_burst(size, &res, &d);
			bad += !bt[k] || res.bad;
			if (!bt[k])
				break;
			add(&tx, &d);
			add(&rx, &res.st);
		}
		if (bad) {
			printf("netdemo: %u-byte packets failed\n", size);
			break;
		}
		sort_u64(rt, rtts);
		sort_u64(bt, nb);
		uint64_t bits = (uint64_t)BATCH * size * 8;
		uint64_t mbit10 = bits * 10 * hz / bt[nb / 2] / 1000000; // tenths of Mbit/s
		uint64_t x = rx.rx_exchanged / nb, c = rx.rx_copied / nb;
		human(b1, sizeof(b1), rx.rx_bytes_copied / nb);
		if (x && !c)
			fmt_snprintf(b4, sizeof(b4), "%lu exchanged (%lu pages), %s copied", x,
				     rx.rx_pages_exchanged / nb, b1);
		else if (!x)
			fmt_snprintf(b4, sizeof(b4), "%lu copied (%s)", c, b1);
		else
			fmt_snprintf(b4, sizeof(b4), "%lu exchanged (%lu pages), %lu copied (%s)", x,
				     rx.rx_pages_exchanged / nb, c, b1);
		ratio(b2, sizeof(b2), tx.tx_doorbells, tx.tx_batches);
		ratio(b3, sizeof(b3), rx.rx_irqs, rx.rx_batches);
		echoed += verified;
		verified += res.bytes - srv_prev; // the server's checks: round trips and bursts
		srv_prev = res.bytes;
		human(b1, sizeof(b1), verified);
		printf("%6u B  %8lu us  %6lu.%lu Mbit/s  %-37s  %9s  %9s  %9s\n", size,
		       rt[rtts / 2] * 1000000 / hz, mbit10 / 10, mbit10 % 10, b4, b2, b3, b1);
	}
	struct msg bye = { 0 };
	memset(&res, 0, sizeof(res));
	res.op = OP_QUIT; // even after a failure: the server need not wait for its timeout
	if (send_msg(&res) != 1 || recv_msg(OP_BYE, &bye))
		return 1;
	human(b1, sizeof(b1), echoed + bye.bytes);
	human(b2, sizeof(b2), echoed);
	human(b3, sizeof(b3), bye.bytes);
	printf("\nnetdemo: the server echoed %lu round trips by handing the pages they came in to "
	       "its send (no copy); %lu doorbells for %lu sends\n", bye.echoes, bye.st.tx_doorbells,
	       bye.st.tx_batches);
	printf("netdemo: verified end to end (pattern and checksum, every byte): %s = %s of echoes "
	       "here + %s received there, %lu bad\n", b1, b2, b3, bad + bye.bad);
	if (bad || bye.bad)
		printf("netdemo: FAILED\n");
	else
		printf("netdemo: all packets intact\n");
	return bad || bye.bad;
}

int main(int argc, char **argv)
{
	bool srv = !strcmp(arg_get(argc, argv, "role", "client"), "server");
	int nic = (int)arg_long(argc, argv, "nic", 0);
	const char *peer = arg_get(argc, argv, "peer", 0);
	unsigned long tmo = (unsigned long)arg_long(argc, argv, "timeout_ms", 10000) * 1000;
	hz = tsc_hz();
	long e = chan_open(&rtt, 0, IO_DEV_ETHER(nic, CH_RTT), 1, 1);
	if (!e)
		e = chan_open(&burst, 1, IO_DEV_ETHER(nic, CH_BURST), srv ? BATCH : 0, srv ? 0 : BATCH);
	if (!e && ((e = chan_peer(&rtt, 0, peer)) || (e = chan_peer(&burst, 0, peer))))
		printf("netdemo: peer=MAC needed\n");
	if (e) {
		printf("netdemo: cannot open the channels: %s\n", err_name(e));
		return 1;
	}
	ctrl_io(rtt.io, IO_OP_TIMEOUT, tmo, 0, 0);
	ctrl_io(burst.io, IO_OP_TIMEOUT, tmo, 0, 0);
	int st = srv ? server() : client(argc, argv);
	chan_close(&burst);
	chan_close(&rtt);
	return st;
}
