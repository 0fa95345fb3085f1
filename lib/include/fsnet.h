// The file service's transport (lib/fsnet.c), used by the server and the
// client library alike: one control channel (one packet per input_io and
// output_io: requests, replies, trailers) and `streams` data channels (whole
// batches of `batch` packets) towards one peer, every channel reliable and
// striped over all the links the peer is known on.
//
// Where bytes move and where they are copied:
//  - a chunk is sent from a region by page exchange ("loan"): its pages
//    are exchanged into a window slot of the stream's output region, sent
//    from there by gather (no copy), and exchanged back once the peer has
//    acknowledged them (a reliable channel keeps a packet's frames pinned
//    until then, so exchange_pmem says -E_BUSY before). This is how the
//    server sends file data and how the client sends from its fs buffers;
//  - a chunk from other memory (not a region, or not at the file's page
//    alignment) is copied into the window slot (counted in copied_tx), and
//    so is a lent chunk's partial first page (the mark sits in the slot's
//    own page in front of the data, which a lent page cannot hold);
//  - received data is copied out of the receive slots (counted in
//    copied_rx): a frame lands whole at its slot's start behind a 30-byte
//    header, so its data never sits page-aligned in the slot, and moving it
//    by exchange would need a frame per page (half the wire's efficiency
//    with 9014-byte frames).
#ifndef LIB_FSNET_H
#define LIB_FSNET_H
#include <stdint.h>
#include <io.h>
#include "fsproto.h"

#define FSN_CTL_RING 16     // control packets in flight at most (slots of the output region)
#define FSN_SLOT (3 * 4096ul) // a receive slot, a control output slot: one jumbo frame

struct fs_ch {
	long io, in_vr, out_vr;
	uint64_t in_addr, out_addr, out_bytes;
	uint32_t n_in, n_out;
	uint32_t have, next;            // packets of the last input_io, the next one to take
	uint64_t sizes[IO_MAX_BATCH], pos[IO_MAX_BATCH];
	uint64_t peers[IO_MAX_BATCH], osize[IO_MAX_BATCH], opos[IO_MAX_BATCH];
	uint64_t sent;                  // packets sent so far
};

struct fs_loan {                    // a window slot's pages, lent by src_vr
	long src_vr;                    // 0: the slot holds its own pages (copied into)
	uint64_t src_page, pages;
	uint64_t slot_off;              // where in the output region the lent pages sit
	uint64_t sent_mark;             // the stream's sent count once the slot's packets went
};

struct fs_net {
	struct fs_cfg cfg;
	uint32_t timeout_ms;
	int nstreams;
	struct fs_ch ctl, data[FS_MAX_STREAMS];
	struct fs_loan win[FS_MAX_STREAMS][8];
	uint32_t win_next[FS_MAX_STREAMS], ctl_next;
	uint64_t slot_bytes;            // a window slot: its own page (the mark), chunk, one
	                                // page more (an unaligned start)
	uint64_t copied_tx, copied_rx, pages_loaned;
	uint64_t stale_rx;              // data packets dropped before a chunk's mark
};

// Opens the control and data channels on the NICs of mask, channels
// chan_base (control) and chan_base+1.. (data), the peer's MAC on each NIC
// of the mask from peers ("MAC,MAC,.." in NIC order, "-" where it has none);
// regions attached from FSN_BASE + index * FSN_STRIDE. Input waits at most
// timeout_ms. 0 or -E_*; on an error everything opened is closed again.
#define FSN_BASE 0x70000000000ul
#define FSN_STRIDE 0x100000000ul
long fsn_open(struct fs_net *n, const struct fs_cfg *cfg, uint8_t mask, uint16_t chan_base, const char *peers,
	      int index, uint32_t timeout_ms);
// Returns every loan, waits (bounded) for sends to finish, closes all.
void fsn_close(struct fs_net *n);

// Sends one control packet: m's header, then m->inline_len bytes of data.
long fsn_ctl_send(struct fs_net *n, const struct fs_msg *m, const void *data);
// Sends raw bytes as one control packet (tests: malformed messages).
long fsn_ctl_send_raw(struct fs_net *n, const void *p, uint64_t len);
// Receives one control packet: *p and *len valid until the next call.
// -E_TIMEOUT after timeout_ms, -E_LINK when the peer is dead.
long fsn_ctl_recv(struct fs_net *n, const uint8_t **p, uint64_t *len);

// Sends chunk k of transfer rid, len bytes at p, on stream s, its mark in
// front. When vr > 0, p is region vr's bytes at offset roff, and the whole
// pages under them are lent (a partial first page is copied); else they
// are copied. *sum gets their checksum.
long fsn_send_chunk(struct fs_net *n, int s, uint32_t rid, uint32_t k, long vr, uint64_t roff, const uint8_t *p,
		    uint64_t len, uint64_t *sum);
// Receives chunk k of transfer rid, len bytes, from stream s into dst
// (copied) and its checksum into *sum; packets before its mark are dropped
// (stale_rx). -E_INVAL when the packets are not as announced (the chunk's
// packets are consumed all the same), -E_TIMEOUT, -E_LINK (every link dead
// for timeout_ms).
long fsn_recv_chunk(struct fs_net *n, int s, uint32_t rid, uint32_t k, uint8_t *dst, uint64_t len, uint64_t *sum);
// Takes every lent page back into its region (waiting, bounded, for the
// peer's acknowledgements). 0 or -E_TIMEOUT.
long fsn_return_loans(struct fs_net *n);
#endif
