// What the NIC drivers' boot self-tests (e1000/e1000_test.c,
// virtio/virtio_net_test.c) share, all through struct netdev: the TEST
// lines and their tally, the list of modes, batches of numbered packets in
// the wire format gathered from pieces of fresh pages, and a receiver that
// checks every byte and every buffer boundary of them. What is particular
// to a device (its registers, counters, features) stays in its own test.
#ifndef NETTEST_H
#define NETTEST_H
#include "net/netdev.h"

#define NETTEST_BATCH_MAX 64

// ---- TEST lines ----

// Prints "TEST name ... ok|FAIL" and counts it; returns ok.
bool nettest_report(const char *name, bool ok);

struct nettest_mode {
	const char *name;
	void (*fn)(void);
};
// Zeroes the tally and runs the comma-separated modes from tab[0..n) in
// turn; a name not in tab reports TEST `unknown` failed.
void nettest_run(const char *modes, const struct nettest_mode *tab, int n, const char *unknown);
// Prints "who: P passed, F failed" for the tally since nettest_run;
// returns F.
int nettest_summary(const char *who);

// Interrupts on until the next one (the 1 ms tick at most), for us.
void nettest_idle_us(uint64_t us);

// ---- batches ----

// One batch being sent: the shared header page, the payload pages.
struct nettest_batch {
	int n;
	uint32_t seq0;
	uint32_t size[NETTEST_BATCH_MAX];
	struct netpkt pkt[NETTEST_BATCH_MAX];
	paddr_t hdr;
	paddr_t frames[NETTEST_BATCH_MAX * 4];
	int nframes;
	int max_segs; // segments of the longest gather list
};

// Packets seq0..seq0+n-1 of sizes[] bytes from -> to (broadcast when to
// is NULL): the 30-byte wire header in a slot of the shared header page,
// then the payload pattern at an offset that varies, one segment per page
// piece. False when memory ran out (nettest_free_batch frees what was
// taken either way).
bool nettest_build_batch(struct nettest_batch *b, const struct netdev *from,
			 const struct netdev *to, const uint32_t *sizes, int n, uint32_t seq0);
void nettest_free_batch(struct nettest_batch *b);

// The reclaim callback of in-order reports: arg points at the cookie
// expected next, which becomes ~0 once one comes out of order.
void nettest_done_in_order(uint64_t cookie, void *arg);

// Feeds nd's tx_batch the bad gather lists every driver must refuse whole
// (no segment, too many, an empty one, page 0, a freed page, a frame
// shorter than an Ethernet header, longer than max_frame in all or in one
// segment, n < 0), segments in page f. expect(arg, pkts, n, want) makes
// one call and checks it; it returns 1 when the call went wrong, else 0.
// Returns how many went wrong.
int nettest_tx_bad_input(struct netdev *nd, paddr_t f,
			 int (*expect)(void *arg, struct netpkt *p, int n, int want), void *arg);

// ---- test steps every driver runs alike, through its netdev ----
// `who` names the driver in the TEST lines ("virtio", "e1000e").

// The registered NICs of one family ("virtio-net", "e1000e") into
// out[NETDEV_MAX], in registry order; returns how many.
int nettest_family(const char *family, struct netdev **out);
// nd's counters now.
struct netdev_stats nettest_stats(struct netdev *nd);

// A usable address: neither zero nor multicast.
bool nettest_mac_ok(const struct netdev *d);

// rx_refill refuses unaligned, freed, kernel-image, repeated and pinned
// pages and n < 0, changing nothing; then takes back kept[0..1], the two
// buffers the caller holds from b. Returns how many checks went wrong.
int nettest_refill_reject(struct netdev *b, const paddr_t kept[2]);

// Link changes: prints "<who>test: waiting for link down" (the harness
// then cuts the link in QEMU's monitor), then "... up", and reports
// <who>_link_down_irq and <who>_link_up_irq: a change counted by one of
// v[0..n) and the link_change callback called for each.
void nettest_link(struct netdev **v, int n, const char *who);

// NICs 0-1 (and 2-3) of v[0..n) are wired to each other: runs
// dir(name, a, b, seq) each way on every pair, named <who>_loop_A_to_B.
void nettest_each_way(struct netdev **v, int n, const char *who,
		      void (*dir)(const char *name, struct netdev *a, struct netdev *b, uint32_t *seq),
		      uint32_t *seq);

// One frame of `size` bytes, packet seq, a -> b; true once a reclaimed it
// (10 s at most).
bool nettest_send_one(struct netdev *a, const struct netdev *b, uint32_t seq, uint32_t size);
// Polls b until a buffer is there (10 s at most); its page becomes the
// caller's (*page, 0 if none). True when it is a whole frame of len bytes.
bool nettest_poll_one(struct netdev *b, paddr_t *page, uint16_t len);
// An rx_ready callback that counts its calls (interrupt context), and a
// wait (10 s at most) until it has been called `want` times in all.
void nettest_on_ready(struct netdev *nd, void *arg);
int nettest_ready_calls(void);
bool nettest_wait_ready(int want);

// Sends one broadcast batch of 60, 1514, 4126 and 9018 bytes from nd (no
// peer needed) in one tx_batch and reclaims it; s0 and s1 get nd's
// counters before and after. True when all four were queued and reported
// done, in order, within 10 s.
bool nettest_send_broadcast(struct netdev *nd, struct netdev_stats *s0, struct netdev_stats *s1);

// Detach with a batch in flight on nd: detach of every registered NIC
// unpins its pages and frees every frame; probing again takes as many.
// queued(arg, ok) runs after the batch is queued (ok: it was), before
// the detach. Reports <who>_detach_unpins_inflight, <who>_detach_frees_all.
void nettest_detach(struct netdev *nd, const char *who, void (*queued)(bool ok));

// ---- receiving and checking ----

// Reassembles frames from buffers and checks every byte against what was
// sent, and that every buffer but a frame's last holds a full page.
struct nettest_rx {
	const struct nettest_batch *b;
	int next;     // packet expected
	uint32_t got; // bytes of it so far
	int bad;      // wrong bytes, buffers and frames
};

// Polls nd once for up to max (at most 32) buffers, checks them and
// gives the ring fresh pages for them, freeing those (as the I/O manager
// does after exchanging them into a user region). Returns the buffers
// checked, or -1 when memory ran out or the refill fell short.
int nettest_receive(struct netdev *nd, struct nettest_rx *c, int max);

#endif
