// Malformed frames between two VMs. role=attacker sends, through a raw
// channel, K frames of each bad kind: cut short, wrong EtherType, a length
// field larger and one smaller than the frame, a length over 8960 bytes, an
// unknown channel; then 8 clean packets. role=victim must drop and count
// each bad frame by cause, still take the clean batch intact, and later,
// while it is not receiving, hold 128 frames of 200 and count 72 as having
// found no free slot. Args: role= peer=MAC
#include <utest.h>
#include <netutil.h>

#define K 3
#define CH 7
#define CLEAN 8
#define FLOOD 200
static struct chan c, raw;
static uint8_t mymac[6], peermac[6];

// A frame of `total` bytes in raw slot i with the given EtherType, channel
// and payload length (seq i, batch 1); the headers are written whole even
// when `total` cuts them short.
static void frame(uint32_t i, uint32_t total, uint16_t type, uint16_t chan, uint32_t len)
{
	uint8_t *f = chan_out(&raw, i);
	memset(f, 0xab, total);
	wire_put_eth(f, peermac, mymac);
	wire_set_type(f, type);
	wire_put_hdr(f, &(struct wire_fields){ .channel = chan, .seq = i, .batch = 1, .len = len });
	raw.osize[i] = total;
}

static long send_clean(uint32_t n, uint32_t size, uint32_t *seq)
{
	for (uint32_t sent = 0; sent < n; sent += CLEAN) {
		for (uint32_t i = 0; i < CLEAN; i++) {
			payload_fill(chan_out(&c, i), (*seq)++, size);
			c.osize[i] = size;
		}
		long r = chan_send(&c);
		if (r != CLEAN)
			return r;
	}
	return 0;
}

static int attacker(void)
{
	uint32_t n = 0, seq = 0;
	for (int k = 0; k < K; k++) {
		frame(n++, 20, WIRE_ETHERTYPE, CH, 0);            // cut short: zero-padded by the NIC
		frame(n++, 100, 0x0800, CH, 70);                  // wrong EtherType
		frame(n++, 200, WIRE_ETHERTYPE, CH, 1000);        // length says more than came
		frame(n++, 1000, WIRE_ETHERTYPE, CH, 100);        // length says less than came
		frame(n++, 9018, WIRE_ETHERTYPE, CH, 9018 - WIRE_FRAME_HLEN); // length over 8960
		frame(n++, 100, WIRE_ETHERTYPE, 99, 70);          // nobody listens on channel 99
	}
	CHECK_EQ("bad frames sent in one raw batch", output_io(raw.io, raw.peers, raw.osize, raw.opos), (long)n);
	CHECK_EQ("clean batch sent", send_clean(CLEAN, 1000, &seq), 0);
	CHECK_EQ("victim's first verdict", input_io(c.io, c.sizes, c.pos), 1);
	CHECK_EQ("flood sent", send_clean(FLOOD, 500, &seq), 0);
	CHECK_EQ("victim's second verdict", input_io(c.io, c.sizes, c.pos), 1);
	return 0;
}

static void verdict(void)
{
	ctrl_io(c.io, IO_OP_RECLAIM, 0, 0, 0);
	c.osize[0] = 1;
	chan_send(&c);
}

static int victim(void)
{
	struct io_stats s;
	printf("READY badframes victim\n");
	long r = input_io(c.io, c.sizes, c.pos);
	CHECK_EQ("clean batch arrived after the bad frames", r, CLEAN);
	int ok = 1;
	for (long i = 0; i < r; i++)
		ok &= c.sizes[i] == 1000 && payload_check(chan_in(&c, (uint32_t)i), (uint32_t)i, 1000);
	CHECK("clean batch intact", ok);
	chan_stats(&c, &s);
	printf("STATS badframes short=%lu ethertype=%lu badlen=%lu toolong=%lu nochan=%lu rxerr=%lu\n",
	       s.drop_short, s.drop_ethertype, s.drop_badlen, s.drop_toolong, s.drop_nochan, s.drop_rxerr);
	CHECK_EQ("cut-short frames counted", s.drop_short, K);
	CHECK_EQ("wrong EtherType counted", s.drop_ethertype, K);
	CHECK_EQ("lying length fields counted", s.drop_badlen, 2 * K);
	CHECK_EQ("over-long frames counted", s.drop_toolong, K);
	CHECK_EQ("unknown channel counted", s.drop_nochan, K);
	verdict();
	sleep(1500000); // not receiving: the flood finds 128 places, then none
	uint64_t got = 0;
	ctrl_io(c.io, IO_OP_TIMEOUT, 300000, 0, 0);
	while ((r = input_io(c.io, c.sizes, c.pos)) > 0)
		got += (uint64_t)r;
	chan_stats(&c, &s);
	printf("STATS badframes flood held=%lu noslot=%lu\n", got, s.drop_noslot);
	CHECK_EQ("flood: frames held for the next input_io", got, 128);
	CHECK_EQ("flood: frames with no free slot counted", s.drop_noslot, FLOOD - 128);
	verdict();
	return 0;
}

int main(int argc, char **argv)
{
	struct sysinfo s0, s1;
	sysinfo(&s0);
	bool att = !strcmp(arg_get(argc, argv, "role", "victim"), "attacker");
	CHECK_EQ("peer MAC", parse_mac(arg_get(argc, argv, "peer", ""), peermac), 0);
	CHECK_EQ("channel open", chan_open(&c, 0, IO_DEV_ETHER(0, CH), att ? 1 : CLEAN, att ? CLEAN : 1), 0);
	CHECK_EQ("peer set", chan_peer(&c, 0, arg_get(argc, argv, "peer", 0)), 0);
	ctrl_io(c.io, IO_OP_TIMEOUT, 20000000, 0, 0);
	struct io_stats s;
	chan_stats(&c, &s);
	memcpy(mymac, s.mac, 6);
	if (att) {
		CHECK_EQ("raw channel open", chan_open(&raw, 1, IO_DEV_RAW(0), 0, 6 * K), 0);
		attacker();
		chan_close(&raw);
	} else {
		victim();
	}
	chan_close(&c);
	sysinfo(&s1);
	CHECK_EQ("frames back after the channels closed", s1.frames_free, s0.frames_free);
	return utest_done("badframes");
}
