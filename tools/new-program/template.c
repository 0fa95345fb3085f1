// @NAME@: (written by `make new-program NAME=@NAME@`: say here what it does.)
// A working skeleton on the I/O resource, for one VM whose two NICs are
// wired to each other (tests/qemu/programs/run.sh boots it so): a channel
// on NIC 1 sends a batch of packets to a channel on NIC 0, which receives
// them; every payload byte is checked, both channels are closed, and every
// frame, region and attachment must be back.
// Args: count= packets in the batch (1..128, default 16), size= payload
// bytes (1..8960, default 1500).
#include <utest.h>
#include <netutil.h>

#define CHANNEL 7                    // the channel number both ends open
#define NIC0_MAC "52:54:00:12:34:56" // NIC 0 (NIC 1 is :57): tests/qemu/lib.sh two_nics
#define RX_TIMEOUT_US 10000000       // input_io gives up after 10 s

static struct chan rx, tx; // a channel's slots and arguments (netutil.h)

int main(int argc, char **argv)
{
	uint32_t count = (uint32_t)arg_long(argc, argv, "count", 16);
	uint32_t size = (uint32_t)arg_long(argc, argv, "size", 1500);
	if (count < 1 || count > IO_MAX_BATCH || size < 1 || size > WIRE_MAX_PAYLOAD) {
		printf("@NAME@: count= 1..%d, size= 1..%d\n", IO_MAX_BATCH, WIRE_MAX_PAYLOAD);
		return 1;
	}
	struct sysinfo s0, s1;
	sysinfo(&s0);

	// Open: a receiving channel on NIC 0, a sending one on NIC 1 whose
	// peer 0 is NIC 0's MAC. Each gets regions of count slots of 3 pages.
	CHECK_EQ("receiver opened on NIC 0", chan_open(&rx, 0, IO_DEV_ETHER(0, CHANNEL), count, 0), 0);
	CHECK_EQ("sender opened on NIC 1", chan_open(&tx, 1, IO_DEV_ETHER(1, CHANNEL), 0, count), 0);
	CHECK_EQ("peer 0 is NIC 0", chan_peer(&tx, 0, NIC0_MAC), 0);
	CHECK_EQ("receive timeout set", ctrl_io(rx.io, IO_OP_TIMEOUT, RX_TIMEOUT_US, 0, 0), 0);

	// Send: packet i carries the pattern of sequence number i, written in
	// place in output slot i; one output_io sends the whole batch.
	for (uint32_t i = 0; i < count; i++) {
		payload_fill(chan_out(&tx, i), i, size);
		tx.peers[i] = 0;
		tx.osize[i] = size;
	}
	CHECK_EQ("batch sent", chan_send(&tx), count);

	// Receive: the batch, in order (one wire); every byte compared.
	uint32_t got = 0, bad = 0;
	while (got < count) {
		long n = input_io(rx.io, rx.sizes, rx.pos);
		if (n <= 0) {
			CHECK_EQ("input_io", n, count - got);
			break;
		}
		for (uint32_t i = 0; i < (uint32_t)n; i++, got++)
			bad += rx.sizes[i] != size || !payload_check(chan_in(&rx, i), got, size);
	}
	CHECK_EQ("every packet came", got, count);
	CHECK_EQ("every byte as sent", bad, 0);

	// Close: both channels and their regions; nothing may leak.
	chan_close(&tx);
	chan_close(&rx);
	sysinfo(&s1);
	CHECK_EQ("frames back", s1.frames_free, s0.frames_free);
	CHECK_EQ("no region or attachment left", s1.vregions + s1.attachments, s0.vregions + s0.attachments);
	return utest_done("@NAME@");
}
