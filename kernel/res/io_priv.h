// The I/O manager's own table and the helpers its two files share:
// io.c (channels, control, system calls) and io_net.c (send and receive).
#ifndef IO_PRIV_H
#define IO_PRIV_H
#include "io.h"
#include "res.h"
#include "../arch/x86_64/arch.h"
#include "../net/netdev.h"
#include <io.h>
#include <wire.h>


#define IO_PEND 128            // frames held for a channel between input_io calls
#define IO_MAX_BUFS 3          // receive buffers of the longest frame (9018 bytes)
#define IO_RING_MAX 1024       // receive buffers a NIC may post (larger rings are refused)
#define IO_MAX_FRAME (WIRE_FRAME_HLEN + WIRE_MAX_PAYLOAD) // longest frame we send
#define IO_POLL_US 20           // poll=timer: the tick while polling
#define IO_TX_WAIT_US 20000     // longest wait for the NIC to take or finish a batch
#define IO_HDR_SLOT 64         // bytes per header in the header frames
#define IO_HDR_FRAMES ((int)(IO_MAX_BATCH * IO_HDR_SLOT / PAGE_SIZE))

// A received frame: its buffers, in order.
struct frame {
	paddr_t buf[IO_MAX_BUFS];
	uint8_t nbuf;
	uint16_t len;
};

struct io {
	struct res_hdr h;
	int owner;
	int nic;
	struct netdev *dev;
	uint16_t channel;
	bool raw;              // IO_KIND_RAW: frames are sent as the user built them
	uint32_t n_in, n_out;
	bool regions;
	long in_vr, out_vr;
	uint64_t in_addr, in_size, out_addr, out_size, slot_size;
	uint8_t peer[IO_MAX_PEERS][6];
	uint32_t peer_valid;
	uint32_t seq[IO_MAX_PEERS];
	uint64_t timeout_us;
	// The batch an input_io is collecting.
	bool waiting;
	uint32_t got;
	uint64_t sizes[IO_MAX_BATCH], pos[IO_MAX_BATCH];
	// Frames that came before input_io asked.
	struct frame pend[IO_PEND];
	uint32_t pend_head, pend_n;
	// Ethernet + wire headers of the packets in flight, one slot each.
	paddr_t hdr[IO_HDR_FRAMES];
	uint32_t inflight;
	struct io_stats st;
};

// Per NIC: the receive side's state and the drops no channel can own.
struct io_nic {
	bool polling;          // RX interrupts masked; frames are polled
	uint64_t drop_short, drop_ethertype, drop_badlen, drop_toolong, drop_nochan, drop_rxerr;
	struct frame partial;  // buffers of a frame whose EOP has not come yet
	bool overlong;         // partial had more buffers than IO_MAX_BUFS
	// Frames waiting to go back to this NIC's ring: posted in groups, since
	// every RDT write is a device register write (an exit under emulation).
	paddr_t refill[IO_RING_MAX + IO_MAX_BUFS];
	int nrefill;
};

extern struct io ios[NIO];
extern struct io_nic io_nics[NETDEV_MAX];
extern uint64_t io_copy_threshold;
extern bool io_rx_scrub;

// The frames under one packet's payload, looked up when the send is checked.
#define IO_PKT_PAGES 4 // 8960 bytes at any offset span at most 4 pages
struct io_pktframes {
	paddr_t f[IO_PKT_PAGES];
};

// io_net.c
long io_send(struct io *c, const uint64_t *peers, const uint64_t *sizes, const uint64_t *pos,
	     const struct io_pktframes *frames);
// Reports a NIC's finished packets, every channel's; returns how many.
int io_reclaim_nic(int nic);
void io_reclaim(struct io *c); // the NIC of channel c
// A NIC the I/O manager drives: its receive ring fits the refill list.
static inline bool io_nic_usable(int nic)
{
	return nic >= 0 && nic < netdev_count() && netdev_get(nic)->rx_slots <= IO_RING_MAX;
}
// Reclaims until nothing of c is in flight (bounded); false if it stayed busy.
bool io_tx_idle(struct io *c);
void io_poll_nic(int nic);
void io_rx_ready(struct netdev *nd, void *arg);
// Delivers held frames into the batch's slots, oldest first.
void io_deliver_pending(struct io *c);
void io_drop_pending(struct io *c);
#endif
