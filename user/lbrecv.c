// The receiving node of the balancing scenario (user/lbsend.c): one
// receiving process per sender (A, B, C on channels 11, 12, 13), each on a
// channel over both NICs, run after run (runs= in all). A receiver checks
// every packet: its sequence number is its index, its size 1 KiB, every
// byte the sender's pattern; it counts bytes per half unit from its first
// packet (LBRECV's bins), and when the sender's closing batch (8-byte
// packets holding the count) comes it checks the count and answers with
// it, which ends the sender's run.
//   role=main: runs=N peer=MAC0,MAC1 (the sender's, per NIC) nics=0,1 unit_ms=
//   role=A|B|C: spawned by main.
#include <utest.h>
#include <netutil.h>

#define PKT 1024
#define BATCH 8
#define NIN 8 // one sender call: input_io returns when its batch is full
#define MAXBINS 200
// Channel of sender k in run r: CHAN0 + 4 r + k. A run never reuses the
// last run's numbers: a reliable channel reopened under the same number at
// once can hear the old one's goodbye and take its session (then drop the
// new one's frames as stale).
#define CHAN0 100

static int receiver(int argc, char **argv, uint64_t hz)
{
	const char *role = arg_get(argc, argv, "role", "?");
	int who = role[0] - 'A', run = (int)arg_long(argc, argv, "run", 0);
	uint64_t unit = (uint64_t)arg_long(argc, argv, "unit_ms", 1000), ms = hz / 1000, bin_ms = unit / 2;
	static struct chan c;
	static uint32_t bins[MAXBINS];
	struct io_stats s;
	char name[64];
	uint64_t next = 0, total = UINT64_MAX, markers = 0, first = 0, last = 0;
	int bad = 0, said = 0;
	fmt_snprintf(name, sizeof(name), "%s: channel open, peer set", role);
	CHECK_EQ(name, chan_setup(&c, 0, argc, argv, (uint16_t)(CHAN0 + 4 * run + who), NIN, 1), 0);
	fmt_snprintf(name, sizeof(name), "%s: timers set", role);
	CHECK_EQ(name, chan_relax(&c), 0);
	ctrl_io(c.io, IO_OP_TIMEOUT, (unsigned long)(arg_long(argc, argv, "timeout_s", 120)) * 1000000, 0, 0);
	printf("LBREADY run=%d proc=%s\n", run, role);
	while (markers < BATCH && !bad) {
		long r = input_io(c.io, c.sizes, c.pos);
		if (r <= 0) {
			printf("lbrecv: %s input_io %ld (%s) after %lu packets\n", role, r, err_name(r), next);
			bad++;
			break;
		}
		uint64_t now = rdtsc();
		if (!first)
			first = now;
		last = now;
		for (long i = 0; i < r; i++) {
			uint32_t seq = chan_rx_seq(&c, (uint32_t)i);
			if (c.sizes[i] == 8) { // the closing batch
				uint64_t n;
				__builtin_memcpy(&n, chan_in(&c, (uint32_t)i), 8);
				if (total == UINT64_MAX)
					total = n;
				if (n != total || seq != total + markers || next != total)
					bad++;
				markers++;
				continue;
			}
			if (seq != next || c.sizes[i] != PKT || markers ||
			    !payload_check(chan_in(&c, (uint32_t)i), (uint32_t)(next % BATCH), PKT)) {
				if (said++ < 5)
					printf("lbrecv: %s packet seq %u size %lu (want seq %lu)\n", role, seq, c.sizes[i],
					       next);
				bad++;
			}
			next++;
			uint64_t b = (now - first) / ms / bin_ms;
			if (b < MAXBINS)
				bins[b]++;
		}
	}
	if (!bad) { // the answer: what came, checked
		__builtin_memcpy(chan_out(&c, 0), &next, 8);
		c.osize[0] = 8;
		bad += chan_send(&c) != 1;
	}
	chan_stats(&c, &s);
	line_add("LBRECV run=%d proc=%s packets=%lu kbytes=%lu span_ms=%lu reordered=%lu dup=%lu nic0=%lu nic1=%lu "
	       "bad=%d no_buf=%lu held_peak=%lu acks_tx=%lu bin_ms=%lu sends=", run, role, next, next * PKT / 1000,
	       last > first ? (last - first) / ms : 0, s.rx_reordered, s.rx_dup, s.link_rx[0], s.link_rx[1], bad,
	       s.nic_rx_no_buf, s.frames_held_max, s.tx_acks, bin_ms);
	uint32_t nb = last > first ? (uint32_t)((last - first) / ms / bin_ms + 1) : 0;
	for (uint32_t k = 0; k < nb && k < MAXBINS; k++)
		line_add(k ? ",%u" : "%u", bins[k]);
	line_add("\n");
	line_flush();
	fmt_snprintf(name, sizeof(name), "%s: every packet once, in order, intact; count confirmed", role);
	CHECK_EQ(name, bad, 0);
	fmt_snprintf(name, sizeof(name), "%s: nothing dropped", role);
	CHECK_EQ(name, s.drop_noslot + s.drop_badslot + s.drop_window + s.drop_nopeer, 0);
	chan_close(&c);
	return utest_done(role);
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	const char *role = arg_get(argc, argv, "role", "main");
	if (strcmp(role, "main"))
		return receiver(argc, argv, s0.tsc_hz);
	int runs = (int)arg_long(argc, argv, "runs", 1), failed = 0;
	for (int run = 0; run < runs; run++) {
		char args[3][256];
		long pid[3];
		for (int k = 0; k < 3; k++) {
			fmt_snprintf(args[k], sizeof(args[k]), "role=%c run=%d unit_ms=%ld timeout_s=%ld nics=%s peer=%s",
				     'A' + k, run, arg_long(argc, argv, "unit_ms", 1000), arg_long(argc, argv, "timeout_s", 120),
				     arg_get(argc, argv, "nics", "0,1"), arg_get(argc, argv, "peer", "?"));
			pid[k] = spawn("lbrecv", args[k], PRIO_DEFAULT);
			CHECK("receiver started", pid[k] > 0);
		}
		for (int k = 0; k < 3; k++) {
			int st = -1;
			if (pid[k] <= 0 || wait(pid[k], &st) != pid[k] || st != 0)
				failed++;
		}
		printf("LBRECVRUN run=%d failed=%d\n", run, failed);
	}
	CHECK_EQ("every receiver passed", failed, 0);
	sysinfo(&s1);
	CHECK_EQ("frames back after every run", s1.frames_free, s0.frames_free);
	CHECK_EQ("no region or attachment left", s1.vregions + s1.attachments, s0.vregions + s0.attachments);
	return utest_done("lbrecv");
}
