// User-side helpers for I/O channels: regions set up and registered,
// peers from "52:54:00:12:34:56" strings, payload patterns and checks.
#ifndef LIB_NETUTIL_H
#define LIB_NETUTIL_H
#include <stddef.h>
#include <ulib.h>
#include <io.h>
#include <wire.h>

#define NET_SLOT 3 * 4096ul // one jumbo frame: 9014 bytes in 3 pages

struct chan {
	uint64_t dev_no;
	long io, in_vr, out_vr, in_vu, out_vu;
	uint64_t in_addr, out_addr;
	uint32_t n_in, n_out;
	uint64_t sizes[IO_MAX_BATCH], pos[IO_MAX_BATCH];   // input_io results
	uint64_t peers[IO_MAX_BATCH], osize[IO_MAX_BATCH], opos[IO_MAX_BATCH]; // output_io args
};

// Opens a channel with n_in/n_out slots of NET_SLOT bytes in regions
// attached at a per-index address (index: 0..7, one per open channel).
long chan_open(struct chan *c, int index, uint64_t dev_no, uint32_t n_in, uint32_t n_out);
void chan_close(struct chan *c);
// Peer `peer` has MAC mac on the channel's first NIC (chan_peer) or on NIC
// nic, one of the channel's (chan_peer_link; a striped channel's peers).
long chan_peer(struct chan *c, int peer, const char *mac);
long chan_peer_link(struct chan *c, int peer, int nic, const char *mac);
int parse_mac(const char *s, uint8_t mac[6]);
// The NIC mask of the arguments: nics=a,b,.. (NIC numbers), else nic=N (0).
uint8_t nic_mask_arg(int argc, char **argv);
// chan_open on the arguments' NICs (nic_mask_arg) and chan= (default
// chan), then peer 0 from peer=MAC[,MAC..]: one MAC per NIC of the mask in
// NIC order, "-" for a NIC the peer is not reachable on (a striped
// channel's links; a single MAC names the peer on the first NIC only).
// rel=1 makes the channel reliable (a striped one is by default), rel=0 not.
long chan_setup(struct chan *c, int index, int argc, char **argv, uint16_t chan, uint32_t n_in,
		uint32_t n_out);
// dst=X.Y[.Z] (instead of peer=) names peer 0 by node (IO_OP_NODE), with
// hop limit hops= (default: the kernel's).
// "X.Y.Z" (1 to 3 coordinates) -> IO_NODE, or -E_INVAL.
long parse_node(const char *s);
// Peer `peer` is node `node` ("X.Y.Z"), hop limit hops (0: default).
long chan_node(struct chan *c, int peer, const char *node, uint32_t hops);
// Peer `peer` from "MAC[,MAC..]", one per NIC of the channel as above.
long chan_peer_list(struct chan *c, int peer, const char *list);
// Output slot i (payload of packet i goes here; raw channels: the frame).
static inline uint8_t *chan_out(struct chan *c, uint32_t i) { return (uint8_t *)(c->out_addr + i * NET_SLOT); }
// Payload of received packet i.
static inline uint8_t *chan_in(struct chan *c, uint32_t i) { return (uint8_t *)(c->in_addr + c->pos[i]); }
// Sends n_out packets: packet i is osize[i] bytes from output slot i to peers[i].
long chan_send(struct chan *c);
// A reliable channel's timers loosened for a TCG guest on a shared host,
// which stalls for tens of ms: with the defaults (10 ms heartbeats, 3
// missed) a link would be declared dead and the data sent again on another
// NIC. Heartbeats every 50 ms, 6 missed, skew 300 ms, retransmission after
// 500 ms, a dead peer after 5 s. 0 or the first error.
long chan_relax(struct chan *c);
long chan_stats(struct chan *c, struct io_stats *s);

// Payload of the packet with sequence number seq: bytes wire_pattern(seq, i).
void payload_fill(uint8_t *p, uint32_t seq, uint32_t n);
// 1 when p holds exactly that pattern: every byte compared (8 at a time).
int payload_check(const uint8_t *p, uint32_t seq, uint32_t n);
uint64_t tsc_hz(void);

// The sender's sequence number of received packet i (from its wire header).
uint32_t chan_rx_seq(struct chan *c, uint32_t i);
// Sends received packet 0 back to peer 0 without copying it: the pages it
// arrived in are exchanged into output slot 0 (opos[0] then points past the
// header room). Returns what output_io returned (1 when sent).
long chan_echo(struct chan *c);
// "a,b,c" -> out[0..n); returns n (at most max).
int parse_u32_list(const char *s, uint32_t *out, int max);
void sort_u64(uint64_t *v, int n);
// struct io_stats's counters: the uint64_t fields rx_packets .. tx_doorbells.
#define IO_STATS_COUNTERS \
	((offsetof(struct io_stats, tx_doorbells) - offsetof(struct io_stats, rx_packets)) / 8 + 1)
// d = after - before for every counter of IO_STATS_COUNTERS and
// drop_notme; the other fields (threshold, slot size, NIC state, MAC) are
// after's.
void stats_delta(struct io_stats *d, const struct io_stats *before, const struct io_stats *after);
#endif
