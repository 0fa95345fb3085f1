// The I/O resource as user programs see it (Tender, Table 3): get_io,
// ctrl_io, input_io, output_io, free_io. Shared with the kernel.
#ifndef LIB_IO_H
#define LIB_IO_H
#include <stdint.h>

// dev_no: which path and which device.
//   bits 24..31  kind: IO_KIND_ETHER (the wire format of lib/include/wire.h)
//   bits  8..23  channel number, carried in every frame's header (1..65535);
//                0 for IO_KIND_RAW (a raw channel names no channel)
//   bits  0..7   NIC mask: bit i = NIC i of the netdev registry, in probe
//                order whatever its family. Several bits make a striped
//                channel: each batch goes round-robin over the links the
//                peer is known on, every packet numbered per peer, and the
//                receiver hands them to input_io in that order (IO_KIND_ETHER
//                only; a raw channel has exactly one bit)
#define IO_KIND_ETHER 1u
#define IO_KIND_RAW 2u   // send-only: output_io sends whole Ethernet frames as given
                         // (positions/sizes cover the frame; peers are ignored)
#define IO_DEV(kind, channel, nicmask) \
	(((uint64_t)(kind) << 24) | ((uint64_t)(channel) << 8) | (uint64_t)(nicmask))
#define IO_DEV_ETHER(nic, channel) IO_DEV(IO_KIND_ETHER, channel, 1u << (nic))
#define IO_DEV_RAW(nic) IO_DEV(IO_KIND_RAW, 0, 1u << (nic))

#define IO_MAX_BATCH 128 // n_input, n_output at most
#define IO_MAX_PEERS 16
#define IO_MAX_NICS 8 // NICs a node drives (dev_no's mask has a bit each)

// ctrl_io operations
#define IO_OP_REGIONS 0x01  // struct io_regions *
#define IO_OP_TIMEOUT 0x02  // input_io gives up after a0 microseconds (0: never)
#define IO_OP_GAPWAIT 0x03  // striped: a missing packet is waited for a0 microseconds
                            // (> 0; default 200 ms), then input_io reports -E_GAP
#define IO_OP_RELIABLE 0x04 // a0 = 1: sequenced and reliable (the default of a striped
                            // channel), a0 = 0: not (a striped channel then reports holes
                            // with -E_GAP). Before the first send; -E_BUSY after.
#define IO_OP_SET 0x05      // a0 = IO_SET_*, a1 = value: a reliable channel's settings
#define IO_OP_BALANCE 0x06  // a0 = IO_LB_*: how a channel on several NICs spreads its sends
                            // (docs/design.md "Balancing"); a1 = period T in ms (0: 10000),
                            // a2 = overload threshold in % of a NIC's capacity (0: 90). The channels
                            // of one T and threshold, any process's, are balanced together (a
                            // domain); other values form another. -E_BUSY after this channel's
                            // first send
#define IO_OP_PEER 0x10     // a0 = const uint8_t mac[6], a1 = peer number, a2 = link:
                            // the NIC (one of dev_no's mask) the peer has that MAC on
#define IO_OP_NODE 0x11     // a0 = node (IO_NODE(x, y, z)), a1 = peer number, a2 = hop limit
                            // (0: WIRE_HOPS_DEFAULT): the peer is that node of the
                            // hyper-crossbar (node=, nicdim=, nb= on the command line).
                            // A neighbour is reached directly, on the channel's NICs of
                            // the dimension it differs in; another node through relays
                            // (routed frames), which a reliable channel refuses (-E_INVAL)
#define IO_OP_STATS 0x20    // a0 = struct io_stats *
#define IO_OP_RECLAIM 0x21  // collect finished sends now (unpins their frames)
#define IO_OP_LINKSTATS 0x22 // a0 = peer, a1 = struct io_linkstats *: per link, towards that peer
#define IO_OP_RELAYSTATS 0x23 // a0 = struct io_relaystats *: this node's relay (any channel asks)

// A node of the hyper-crossbar: its coordinates, one byte each (wire_node).
#define IO_NODE(x, y, z) ((uint64_t)(x) | (uint64_t)(y) << 8 | (uint64_t)(z) << 16)
#define IO_OP_LBSTATS 0x24  // a0 = struct io_lbstats *: a balanced channel's bindings and volumes

// IO_OP_SET keys (reliable channels; docs/design.md "Link failure" justifies the defaults)
#define IO_SET_HB_US 1      // a link that carried nothing for this long gets a heartbeat (10000)
#define IO_SET_HB_MISS 2    // this many heartbeat periods with nothing heard: dead (3)
#define IO_SET_SKEW_US 3    // a link whose packets lag a later one acknowledged on another
                            // link by this much is suspected and probed (10000)
#define IO_SET_RTO_US 4     // a packet unacknowledged this long is sent again (200000)
#define IO_SET_DEAD_US 5    // every link to a peer dead this long: -E_LINK (1000000)
#define IO_SET_ACK_EVERY 6  // acknowledge after this many packets (32)
#define IO_SET_ACK_US 7     // or this long after the first unacknowledged one (1000)
#define IO_SET_WINDOW 8     // packets a peer may have unacknowledged (1..512; 512)

// Link states (struct io_linkstats.state)
#define IO_LINK_UP 0
#define IO_LINK_SUSPECT 1   // lagging (skew): no new packets, probed
#define IO_LINK_DEAD 2      // down (visible), silent, or a probe unanswered: heartbeats only
#define IO_LINK_NONE 3      // the peer is not known on this link

struct io_linkstats {
	uint32_t session, peer_session; // this channel's, the peer's (0: not heard yet)
	uint64_t unacked;               // packets sent to the peer and not yet acknowledged
	uint64_t window_waits;          // sends that waited for the window
	uint8_t state[IO_MAX_NICS];     // IO_LINK_*, per link (NIC)
	uint64_t sent[IO_MAX_NICS], received[IO_MAX_NICS], retransmitted[IO_MAX_NICS];
	uint64_t suspected[IO_MAX_NICS], declared_dead[IO_MAX_NICS], recovered[IO_MAX_NICS];
	uint64_t hb_sent[IO_MAX_NICS], hb_received[IO_MAX_NICS], acks_sent[IO_MAX_NICS], acks_received[IO_MAX_NICS];
	uint64_t last_detect_us[IO_MAX_NICS]; // the last death: from the first packet it lost (or the
	                                // last frame heard, when idle) to the declaration
	uint64_t last_down_us[IO_MAX_NICS];   // how long it stayed dead the last time
	uint64_t max_down_us[IO_MAX_NICS];    // the longest it stayed dead
	uint64_t max_skew_us[IO_MAX_NICS];    // the largest lag seen on it without a suspicion
};
// IO_OP_BALANCE policies
#define IO_LB_RR 1       // per packet round robin over the NICs (what a striped channel does)
#define IO_LB_TLB 2      // Linux balance-tlb's rule: every T all unbound; each sender bound on its
                         // next send to the NIC with the most spare capacity, judged by the past-T
                         // volumes of the senders bound to it since
#define IO_LB_HISTORY 3  // the past NIC load and the sender's priority decide (Taniguchi et al.
                         // section 3.2): only the lowest-priority sender of an overloaded NIC moves

// Why a balanced channel got its NIC (struct io_lbstats.why; the kernel's "LB decide" lines)
#define IO_LB_WHY_NONE 0        // no decision (this period)
#define IO_LB_WHY_NEW 1         // it had no NIC: the one with the most spare capacity
#define IO_LB_WHY_TLB 2         // tlb: the one with the most spare capacity
#define IO_LB_WHY_OVERLOAD 3    // its NIC was overloaded and it the lowest priority there: moved
#define IO_LB_WHY_SPARE 4       // no NIC was overloaded: the one with the most spare capacity
#define IO_LB_WHY_KEEP_NOTOVER 5 // kept: some NIC was overloaded, not its own
#define IO_LB_WHY_KEEP_NOTLOWEST 6 // kept: its NIC was overloaded but a lower priority was on it
#define IO_LB_WHY_KEEP_MOVED 7  // kept: lowest priority, but another sender of its NIC moved
#define IO_LB_WHY_KEEP_BEST 8   // kept: lowest priority, but its own NIC has the most spare
#define IO_LB_WHY_N 9

#define IO_LB_HIST 16 // periods recorded in struct io_lbstats
struct io_lbstats {
	uint32_t policy;                // IO_LB_* (0: not balanced)
	int32_t nic;                    // the NIC it is bound to now (-1: none)
	uint32_t period;                // the current period, counted from its domain's first send
	uint32_t period_ms, overload_pct;
	uint64_t decisions, rebinds;    // decisions taken; of them, those that changed its NIC
	uint64_t refused;               // IO_OP_BALANCE calls refused (any channel)
	uint64_t bytes[IO_LB_HIST];     // frame bytes this channel sent in each period
	int8_t nic_in[IO_LB_HIST];      // the NIC its decision of each period gave (-1: none)
	uint8_t why[IO_LB_HIST];        // IO_LB_WHY_* of that decision
	uint64_t nic_bytes[IO_LB_HIST][IO_MAX_NICS]; // its domain's channels' frame bytes per NIC per period
	uint64_t nic_cap[IO_MAX_NICS];  // bytes a NIC carries in one period (its paced rate)
};

struct io_regions {
	long in_vs, in_vr;      // input: space (0: the caller's), region
	uint64_t in_addr, in_size; // where it is attached, bytes used: n_input slots
	long out_vs, out_vr;
	uint64_t out_addr, out_size;
};

struct io_stats {
	uint64_t rx_packets, rx_batches, rx_irqs;
	uint64_t rx_exchanged, rx_copied, rx_bytes_copied, rx_pages_exchanged;
	uint64_t drop_short, drop_ethertype, drop_badlen, drop_toolong, drop_nochan;
	uint64_t drop_noslot, drop_rxerr, drop_badslot;
	uint64_t tx_packets, tx_bytes, tx_batches, tx_doorbells; // payloads over tx_copy_max go uncopied
	uint64_t copy_threshold;  // frames up to this many bytes are copied, not exchanged
	uint64_t slot_size;       // bytes per input slot
	uint64_t frames_held;     // received frames waiting for an input_io now
	uint64_t frames_held_max; // the most ever waiting at once
	uint64_t nic_frames;      // frames the NIC driver holds (rings and buffers)
	uint64_t nic_irqs, nic_doorbells, nic_rx_no_buf;
	uint64_t batch_first_tsc; // TSC when the last input_io batch's first packet was taken
	                          // (under -icount: guest instructions; R1 starts here)
	uint8_t mac[6];           // this channel's (first) NIC
	uint8_t link_up;          // of the first NIC
	uint8_t links_up;         // mask of the channel's NICs whose link is up
	// Striped channels (several NICs in dev_no).
	uint64_t rx_reordered;    // frames that came ahead of order and waited for it
	uint64_t rx_dup;          // frames already taken (dropped)
	uint64_t drop_nopeer;     // frames from a MAC that no peer has (dropped)
	uint64_t drop_window;     // frames too far ahead of order (dropped: a gap follows)
	uint64_t rx_gaps;         // holes input_io reported with -E_GAP
	uint64_t rx_gap_lost;     // sequence numbers in them
	uint64_t gap_peer, gap_seq, gap_len; // the last hole: peer, first missing, how many
	uint64_t tx_stranded;     // packets that left after one of the call that could not
	uint64_t tx_pace_waits;   // times a send slept for a paced NIC (nic_mbps=)
	uint64_t tx_ring_sleeps;  // ticks a send slept for a full (or unfinished) ring after 20 ms of spinning
	uint64_t link_tx[IO_MAX_NICS]; // packets sent on each NIC (index = NIC number)
	uint64_t link_rx[IO_MAX_NICS]; // packets received on each NIC
	// Reliable channels (IO_OP_RELIABLE; every peer's links: IO_OP_LINKSTATS).
	uint64_t tx_acked;        // packets acknowledged (their frames unpinned)
	uint64_t tx_retransmits;  // packets sent again (lost on a link, or timed out)
	uint64_t tx_rto;          // of them: after the retransmission timeout
	uint64_t rx_acks, tx_acks; // control frames (acknowledgements, heartbeats)
	uint64_t link_suspects, link_deaths, link_recoveries;
	uint64_t drop_stale;      // frames of an earlier session of a peer (dropped)
	uint64_t drop_badctrl;    // malformed control frames (dropped)
	uint64_t dead_peer;       // the last peer input_io or output_io reported with -E_LINK
	uint64_t rx_byes;         // goodbyes heard (a peer's free_io: WIRE_C_BYE)
	uint64_t bye_links;       // -E_LINK returned because a peer said goodbye (both calls)
	uint64_t tx_bye_lost;     // packets still unacknowledged dead_us after a peer's goodbye:
	                          // never to be, their frames let go
	uint64_t drop_limit;      // frames not held ahead of order: the owner's frame limit
	                          // (plimit=; a reliable sender sends them again)
	uint8_t reliable;         // 1: this channel is reliable
	// Appended: the fields above keep their offsets.
	uint64_t drop_notme;      // frames whose destination MAC is not this NIC's (another
	                          // station, broadcast, multicast): dropped, NIC-wide
	uint64_t tx_over_window;  // reliable output_io refused (-E_2BIG): more packets to one
	                          // peer than its window (IO_SET_WINDOW) could ever take
	uint64_t rx_rearms;       // poll=irq: times one of the channel's NICs went back to
	                          // interrupts, its ring empty, while a batch waited
	uint64_t tx_stalled_calls; // reliable output_io calls that returned with packets still
	                          // queued: the NICs took nothing for the dead-peer timeout
	uint64_t tx_bytes_copied; // payload bytes a send copied behind their header (payloads
	                          // of tx_copy_max bytes or less: one descriptor instead of two)
	uint64_t tx_copy_max;     // this channel's: 98 on a plain channel, 0 (none) raw or reliable
	uint64_t rx_unlocked_calls; // input_io calls that began without the kernel lock
	                          // (rxlock=fine, a region the caller's alone)
	uint64_t rx_relocked_calls; // of them, those that took it later (to sleep, or to report)
	uint64_t tx_unlocked_calls; // output_io calls made without the kernel lock (rxlock=fine,
	                          // a plain channel, a region the caller's alone)
	uint64_t tx_relocked_calls; // of them, those that took it (to sleep for a ring or the wire)
	uint64_t rx_scrubs;       // exchanged last pages zeroed past the frame (rxscrub=1)
	uint64_t rx_scrubs_skipped; // exchanged last pages not zeroed: the buffer was this
	                          // channel's receive region's own slot page (its old bytes),
	                          // or a zeroed frame the ring got for one kept out of it
};

// The kernel's relay (docs/design.md "Relaying"): frames for other nodes,
// forwarded from the receive buffers they came in; counters since boot.
struct io_relaystats {
	uint64_t node;            // this node (IO_NODE), ~0ul: no topology given
	uint64_t dims, neighbours;
	uint64_t relayed;         // frames forwarded
	uint64_t relayed_bytes;   // their frame bytes
	uint64_t bytes_copied;    // payload bytes the relay copied (its path copies none)
	uint64_t batches, doorbells; // transmit calls that queued something; NIC notifications
	uint64_t inflight;        // forwarded frames the NICs still hold (their buffers)
	uint64_t inflight_max;
	uint64_t delivered;       // routed frames for this node (handed to its channels)
	uint64_t drop_hops;       // hop limit ran out
	uint64_t drop_noroute;    // no next hop (unknown coordinates, no topology here)
	uint64_t drop_baddst;     // malformed: destination outside the topology's dimensions,
	                          // a zero hop limit, or a routed frame from this node
	uint64_t drop_busy;       // the outgoing NIC's ring (or the relay's table) was full
	uint64_t drop_down;       // every link of the outgoing dimension was down
	uint64_t link_tx[IO_MAX_NICS]; // forwarded frames per outgoing NIC
	uint64_t drop_nomem;      // no free frame to replace the buffers a forwarded frame
	                          // keeps out of its ring (below three quarters posted)
};

#endif
