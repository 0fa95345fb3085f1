// Throughput by the Tender paper's Figure 4 method: the client sends 128
// packets of S bytes in one output_io; the server receives all 128 in one
// input_io, checks them, and answers with one 1-byte packet. The client
// reports T0 (first send to reply), T1 (its time inside the send call) and
// T2 = T0 - T1, in TSC ticks (guest instructions under -icount), and the
// per-batch doorbell and interrupt counts. A batch of 0-byte packets ends it.
// Args: role=client|server nic= chan= peer=MAC sizes=a,b reps= warm=
#include <utest.h>
#include <netutil.h>

#define BATCH 128
static struct chan c;

static uint32_t rx_seq(uint32_t i)
{
	return wire_get_seq(chan_in(&c, i) - WIRE_FRAME_HLEN);
}

// One burst of S-byte packets starting at sequence number seq; 0 on success.
static int one_burst(uint32_t size, uint32_t seq, uint64_t *t0, uint64_t *t1)
{
	for (uint32_t i = 0; i < BATCH; i++) {
		payload_fill(chan_out(&c, i), seq + i, size);
		c.osize[i] = size;
	}
	uint64_t a = rdtsc();
	long s = chan_send(&c);
	uint64_t b = rdtsc();
	long r = input_io(c.io, c.sizes, c.pos);
	uint64_t d = rdtsc();
	*t0 = d - a, *t1 = b - a;
	if (s != BATCH || r != 1 || c.sizes[0] != 1) {
		printf("burst: size %u: send %ld, reply %ld (%s)\n", size, s, r, err_name(r < 0 ? r : s));
		return 1;
	}
	return 0;
}

static int client(int argc, char **argv)
{
	char sizes[256];
	strlcpy(sizes, arg_get(argc, argv, "sizes", "64,1500,8192"), sizeof(sizes));
	int reps = (int)arg_long(argc, argv, "reps", 5), warm = (int)arg_long(argc, argv, "warm", 1);
	uint64_t hz = tsc_hz();
	uint32_t seq = 0;
	int bad = 0;
	for (char *p = sizes; *p;) {
		uint32_t size = (uint32_t)atol(p);
		while (*p && *p++ != ',')
			;
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
	}
	uint64_t t0, t1;
	CHECK_EQ("every burst answered", bad, 0);
	CHECK_EQ("quit acknowledged", one_burst(0, seq, &t0, &t1), 0);
	return 0;
}

static int server(void)
{
	int bad = 0;
	uint64_t batches = 0;
	struct io_stats s;
	c.osize[0] = 1;
	printf("READY burst server\n");
	for (;;) {
		long r = input_io(c.io, c.sizes, c.pos);
		if (r != BATCH) {
			printf("burst: server got %ld of %d (%s)\n", r, BATCH, err_name(r));
			bad++;
			if (r < 0)
				break;
		}
		bool quit = true;
		for (long i = 0; i < r; i++) {
			bad += !payload_check(chan_in(&c, (uint32_t)i), rx_seq((uint32_t)i), (uint32_t)c.sizes[i]);
			quit &= c.sizes[i] == 0;
		}
		batches++;
		ctrl_io(c.io, IO_OP_RECLAIM, 0, 0);
		chan_out(&c, 0)[0] = 0x42;
		if (chan_send(&c) != 1)
			bad++;
		if (quit)
			break;
	}
	chan_stats(&c, &s);
	printf("STATS burst server batches=%lu packets=%lu exchanged=%lu copied=%lu bytes_copied=%lu "
	       "irqs=%lu irqs_per_batch_x100=%lu copied_bytes_per_pkt_x100=%lu noslot=%lu held_peak=%lu\n",
	       batches, s.rx_packets, s.rx_exchanged, s.rx_copied, s.rx_bytes_copied, s.rx_irqs,
	       batches ? s.rx_irqs * 100 / batches : 0,
	       s.rx_packets ? s.rx_bytes_copied * 100 / s.rx_packets : 0, s.drop_noslot, s.frames_held);
	CHECK_EQ("every packet of every burst intact", bad, 0);
	CHECK_EQ("nothing dropped", s.drop_noslot + s.drop_badslot, 0);
	// The first interrupt of a batch switches to polling; a batch already
	// waiting when input_io starts needs none.
	CHECK("at most one receive interrupt per batch", s.rx_irqs <= batches);
	return 0;
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	bool srv = !strcmp(arg_get(argc, argv, "role", "client"), "server");
	int nic = (int)arg_long(argc, argv, "nic", 0), ch = (int)arg_long(argc, argv, "chan", 2);
	CHECK_EQ("channel open", chan_open(&c, 0, IO_DEV_ETHER(nic, ch), srv ? BATCH : 1, srv ? 1 : BATCH), 0);
	CHECK_EQ("peer set", chan_peer(&c, 0, arg_get(argc, argv, "peer", 0)), 0);
	ctrl_io(c.io, IO_OP_TIMEOUT, (unsigned long)arg_long(argc, argv, "timeout_ms", 20000) * 1000, 0);
	if (srv)
		server();
	else
		client(argc, argv);
	chan_close(&c);
	sysinfo(&s1);
	CHECK_EQ("frames back after the channel closed", s1.frames_free, s0.frames_free);
	return utest_done("burst");
}
