// The shaper. A paced NIC (nic_mbps=) models a wire of that rate: each
// frame keeps it busy for its bits (with preamble, FCS and gap: 24 bytes
// more), and a sender may run ahead of the wire by the NIC's queue, `depth`
// (the frames a real NIC has queued: SHAPER_DEPTH_US plus two longest
// frames); beyond that it sleeps, as on a saturated card, until half the
// queue has gone out. The wake-up comes with a timer tick, so the queue
// left (half of it, over a millisecond) keeps the wire busy meanwhile. A
// token bucket, in effect, like Linux's tbf: rate nic_mbps, bucket `depth`;
// time the wire sat idle because the emulated CPU did not run (a busy host)
// is made up for, one queue's worth at most, so the long-run rate is the
// set one.
#include "shaper.h"
#include "../arch/x86_64/timer.h"
#include <wire.h>

struct shaper {
	uint64_t tsc_per_kbit; // 0: unpaced
	uint64_t free;         // TSC at which the frames given so far are "sent"
	uint64_t depth;        // TSC: how far a sender may run ahead of the wire
};

static struct shaper shapers[NETDEV_MAX];

static uint64_t bits_tsc(const struct shaper *s, uint64_t bytes)
{
	if (bytes < WIRE_MIN_FRAME)
		bytes = WIRE_MIN_FRAME;
	return (bytes + 24) * 8 * s->tsc_per_kbit / 1000;
}

static uint64_t pkt_bytes(const struct netpkt *p)
{
	uint64_t bytes = 0;
	for (int i = 0; i < p->nseg; i++)
		bytes += p->seg[i].len;
	return bytes;
}

// Idle time saves up one queue, no more.
static void catch_up(struct shaper *s, uint64_t now)
{
	if (s->free + s->depth < now)
		s->free = now - s->depth;
}

void shaper_set(int nic, uint32_t mbps)
{
	struct shaper *s = &shapers[nic];
	s->tsc_per_kbit = mbps ? timer_us_to_tsc(1000) / mbps : 0;
	s->free = 0;
	s->depth = timer_us_to_tsc(SHAPER_DEPTH_US) + 2 * bits_tsc(s, WIRE_MAX_FRAME);
}

bool shaper_paced(int nic) { return shapers[nic].tsc_per_kbit != 0; }
uint64_t shaper_cost(int nic, uint32_t bytes) { return bits_tsc(&shapers[nic], bytes); }
uint64_t shaper_depth(int nic) { return shapers[nic].depth; }
uint64_t shaper_tsc_per_kbit(int nic) { return shapers[nic].tsc_per_kbit; }

int shaper_take(int nic, const struct netpkt *p, int n)
{
	struct shaper *s = &shapers[nic];
	if (!s->tsc_per_kbit)
		return n;
	uint64_t now = arch_rdtsc();
	catch_up(s, now);
	int k = 0;
	for (uint64_t t = s->free; k < n && (t += bits_tsc(s, pkt_bytes(&p[k]))) <= now + s->depth;)
		k++;
	for (int i = 0; i < k; i++)
		s->free += bits_tsc(s, pkt_bytes(&p[i]));
	return k;
}

void shaper_undo(int nic, const struct netpkt *p)
{
	shapers[nic].free -= bits_tsc(&shapers[nic], pkt_bytes(p));
}

void shaper_charge(int nic, uint32_t bytes)
{
	struct shaper *s = &shapers[nic];
	if (!s->tsc_per_kbit)
		return;
	uint64_t now = arch_rdtsc();
	if (s->free < now)
		s->free = now;
	s->free += bits_tsc(s, bytes);
}

int64_t shaper_budget(int nic, uint64_t now)
{
	const struct shaper *s = &shapers[nic];
	if (!s->tsc_per_kbit)
		return INT64_MAX;
	uint64_t free_at = s->free + s->depth < now ? now - s->depth : s->free;
	return (int64_t)(now + s->depth - free_at);
}

uint64_t shaper_room_at(int nic) { return shapers[nic].free - shapers[nic].depth / 2; }
