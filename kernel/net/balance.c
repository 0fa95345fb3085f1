// Balancing senders over NICs: a channel whose dev_no names several NICs
// and that chose a policy with IO_OP_BALANCE is one sender of a balancing
// domain, whose state lives here and only here: the period T, the overload
// threshold, each NIC's capacity (its paced rate) and the domain's bytes on
// it in this and the past period, and per sender its NIC, its process's
// priority and its volume (Taniguchi et al., section 3.2). The channels that
// chose the same T and threshold form one domain, whichever process owns
// them; other settings make another domain, so a process's settings bind
// only the channels that chose them. The balancer's lines are rate-limited
// (lb_log): a process cannot fill the console by choosing a short T.
//
// Time is cut into periods of T from the domain's first balanced send. At
// the first send after a turn the domain rolls over: this period's volumes
// become the past period's, the turn is printed ("LB turn": every NIC's
// bytes, share of its capacity, overloaded or not; every sender's NIC,
// priority and bytes). Each sender then decides once, on its own next
// send ("LB decide": who, from which NIC to which, why):
//   rr       no binding: every packet goes round-robin (stripe.c).
//   tlb      every sender is unbound at the turn; it is bound to the NIC
//            with the most spare capacity (capacity minus the past-period
//            bytes of the senders already bound to it since the turn), and
//            its own past bytes are charged to that NIC.
//   history  rules 4-10 of the paper: if some NIC was overloaded in the
//            past period (its bytes at least overload_pct % of its
//            capacity), the sender was on an overloaded NIC, it had the
//            lowest priority of the senders on that NIC, and none of those
//            has moved this period, it moves to the NIC with the most spare
//            capacity (capacity minus past bytes minus charges) and is
//            charged its past bytes there; if no NIC was overloaded, it
//            goes to the NIC with the most spare capacity (charged too);
//            otherwise it keeps its NIC.
// A sender with no NIC (its first send, or its NIC unusable) takes the one
// with the most spare capacity. Equal spare: fewer senders bound there this
// period, then the lower NIC number. So a sender changes NIC at most once
// per period. A bound sender sends each packet whole on its NIC
// (lb_skip): a link that is down sends it elsewhere meanwhile.
// A rebind can put two packets of one sender on two NICs at once; a
// balanced channel is striped, so its per-peer sequence numbers (and, when
// reliable, its acknowledgements) restore the order at the receiver.
#include "balance.h"
#include "shaper.h"
#include "stripe.h"
#include "demux.h"
#include "../res/io_priv.h"
#include "../res/proc.h"
#include "../kprintf.h"
#include "../klimit.h"
#include "../arch/x86_64/timer.h"
#include <err.h>
#include <string.h>

#define LB_DEFAULT_T_MS 10000
#define LB_DEFAULT_PCT 90
#define LB_UNPACED_MBPS 1000 // an unpaced NIC's capacity: its nominal Gbit/s

// ------------------------------------------------------------ the rule

int64_t lb_spare(const struct lb_state *st, int n, bool history)
{
	return (int64_t)st->cap[n] - (history ? (int64_t)st->past[n] : 0) - st->charge[n];
}

bool lb_overloaded(const struct lb_state *st, int n)
{
	return st->cap[n] && st->past[n] * 100 >= st->cap[n] * st->over_pct;
}

int lb_most_spare(const struct lb_state *st, uint8_t usable, bool history)
{
	int best = -1;
	for (int n = 0; n < LB_NICS; n++) {
		if (!(usable & (1u << n)))
			continue;
		if (best < 0 || lb_spare(st, n, history) > lb_spare(st, best, history) ||
		    (lb_spare(st, n, history) == lb_spare(st, best, history) && st->nbound[n] < st->nbound[best]))
			best = n;
	}
	return best;
}

// Binds sender i to n. A sender that comes to n by "most spare" is charged
// its past bytes there; under history, where spare counts what each NIC
// carried, the NIC it leaves gets them back.
static int bind(struct lb_state *st, int i, int n, bool charge, bool history)
{
	struct lb_sender *me = &st->s[i];
	int old = me->nic;
	if (n < 0)
		return n;
	if (old >= 0 && old != n)
		me->moved = true;
	me->nic = (int8_t)n;
	st->nbound[n]++;
	if (charge && n != old) {
		st->charge[n] += (int64_t)me->past_vol;
		if (history && old >= 0)
			st->charge[old] -= (int64_t)me->past_vol;
	}
	return n;
}

int lb_decide(struct lb_state *st, int i, int policy, uint8_t usable, int *why)
{
	struct lb_sender *me = &st->s[i];
	bool history = policy == IO_LB_HISTORY;
	int cur = me->nic;
	if (!history || cur < 0 || !(usable & (1u << cur))) { // tlb; or rule 3 fails
		*why = history ? IO_LB_WHY_NEW : IO_LB_WHY_TLB;
		return bind(st, i, lb_most_spare(st, usable, history), true, history);
	}
	bool any = false;
	for (int n = 0; n < LB_NICS; n++)
		any |= lb_overloaded(st, n);
	if (!any) { // rule 9
		*why = IO_LB_WHY_SPARE;
		return bind(st, i, lb_most_spare(st, usable, true), true, true);
	}
	int p = me->past_nic;
	if (p < 0 || !lb_overloaded(st, p)) { // rule 4 fails: rule 10
		*why = IO_LB_WHY_KEEP_NOTOVER;
		return bind(st, i, cur, false, true);
	}
	for (int j = 0; j < LB_MAX; j++) { // rules 5 and 6
		const struct lb_sender *o = &st->s[j];
		if (j == i || !o->used || o->past_nic != p)
			continue;
		if (o->prio < me->prio) {
			*why = IO_LB_WHY_KEEP_NOTLOWEST;
			return bind(st, i, cur, false, true);
		}
	}
	for (int j = 0; j < LB_MAX; j++) {
		const struct lb_sender *o = &st->s[j];
		if (j != i && o->used && o->past_nic == p && o->moved) {
			*why = IO_LB_WHY_KEEP_MOVED;
			return bind(st, i, cur, false, true);
		}
	}
	int n = lb_most_spare(st, usable, true); // rules 7 and 8
	if (n == cur) {
		*why = IO_LB_WHY_KEEP_BEST;
		return bind(st, i, cur, false, true);
	}
	*why = IO_LB_WHY_OVERLOAD;
	return bind(st, i, n, true, true);
}

const char *lb_why_name(int why)
{
	static const char *const names[IO_LB_WHY_N] = {
		"none", "no-nic:most-spare", "tlb:most-spare", "overloaded+lowest:most-spare",
		"no-overload:most-spare", "kept:not-on-overloaded", "kept:not-lowest", "kept:other-moved",
		"kept:own-most-spare",
	};
	return why >= 0 && why < IO_LB_WHY_N ? names[why] : "?";
}

// ---------------------------------------------------------- the domains

// A balanced channel: slot i of chans, and sender i of its domain's state.
struct lb_chan {
	struct io *c;        // NULL: the slot is free
	int8_t dom;          // its domain (doms)
	uint32_t decided;    // 1 + the period of its last decision (0: none yet)
	uint64_t decisions, rebinds;
	int8_t last;         // the NIC of its last decision (-1: none): tlb unbinds, and a
	                     // rebind is a decision that gives another NIC than that
	uint64_t bytes[IO_LB_HIST];
	int8_t nic_in[IO_LB_HIST];
	uint8_t why[IO_LB_HIST];
};

// The channels that chose one period T and one threshold: the rule sees
// only their senders (st.s[i].used: slot i is one of them) and their bytes.
// A domain exists while it has a channel, so there are never more domains
// than slots, and a channel always finds its settings' domain or a free one.
struct lb_dom {
	struct lb_state st;
	int nchan;           // 0: free
	uint32_t t_ms, pct;
	uint64_t epoch;      // TSC of its first balanced send (0: not yet)
	uint32_t period;     // the current period
	uint64_t vol[LB_NICS];
	uint64_t nic_bytes[IO_LB_HIST][LB_NICS];
};

static struct lb_chan chans[LB_MAX];
static struct lb_dom doms[LB_MAX];
static uint64_t refused; // IO_OP_BALANCE calls refused, every channel's
// The balancer's lines: a domain of n senders prints 1 + 2n a period (its
// turn, then each sender's decision). 20 a second, a fifth of a 115,200-baud
// console at ~110 characters a line, holds every line of the 16 senders there
// can be at T >= 2.5 s (the default is 10 s); a burst of 64 holds one turn
// and decisions of all 16 at once.
static struct klimit lb_log = KLIMIT("lb", 64, 20);

static uint64_t period_tsc(const struct lb_dom *d) { return timer_us_to_tsc((uint64_t)d->t_ms * 1000); }

static uint64_t ms_since_epoch(const struct lb_dom *d, uint64_t now)
{
	return (now - d->epoch) / timer_us_to_tsc(1000);
}

// Bytes NIC n carries in one period of d at its paced rate.
static uint64_t capacity(const struct lb_dom *d, int n)
{
	uint64_t kbit_tsc = shaper_tsc_per_kbit(n);
	uint64_t kbits = kbit_tsc ? period_tsc(d) / kbit_tsc : (uint64_t)LB_UNPACED_MBPS * d->t_ms;
	return kbits * 125;
}

static void dom_reset(struct lb_dom *d)
{
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < LB_MAX; i++)
		d->st.s[i].nic = d->st.s[i].past_nic = -1;
}

static bool ready;

// The domains and the balanced channels' slots (LK_LB), taken only with
// rxlock=fine (nl_lock), where a balanced channel's output_io runs without
// the kernel lock: under it alone the senders are one CPU's at a time.
// Held for a decision (lb_on_send), the volumes a send adds (lb_sent) and
// the ctrl_io operations; lb_skip reads its own binding without it.
static struct spinlock lb_lk = SPINLOCK_INIT("lb", LK_LB);

static void init_once(void)
{
	if (!ready) {
		for (int k = 0; k < LB_MAX; k++)
			dom_reset(&doms[k]);
		memset(chans, 0, sizeof(chans));
		ready = true;
	}
}

static int dom_of(const struct io *c) { return chans[c->x.lb_slot].dom; }

// The domain running with these settings, else a free one.
static int dom_find(uint32_t t_ms, uint32_t pct)
{
	int free = -1;
	for (int k = 0; k < LB_MAX; k++) {
		if (doms[k].nchan && doms[k].t_ms == t_ms && doms[k].pct == pct)
			return k;
		if (!doms[k].nchan && free < 0)
			free = k;
	}
	return free;
}

// Slot i joins domain k (a free one takes the settings).
static void dom_join(struct io *c, int i, int k, uint32_t t_ms, uint32_t pct)
{
	struct lb_dom *d = &doms[k];
	if (!d->nchan) {
		dom_reset(d);
		d->t_ms = t_ms, d->pct = pct, d->st.over_pct = pct;
	}
	d->st.s[i] = (struct lb_sender){ .used = true, .nic = -1, .past_nic = -1 };
	chans[i] = (struct lb_chan){ .c = c, .dom = (int8_t)k, .last = -1 };
	memset(chans[i].nic_in, 0xff, sizeof(chans[i].nic_in));
	c->x.lb_slot = (int8_t)i;
	d->nchan++;
}

// c leaves its domain with its state (the next decisions no longer see
// it); the domain's last channel ends it.
static void dom_leave(struct io *c)
{
	int k = dom_of(c);
	struct lb_dom *d = &doms[k];
	if (d->epoch && klimit_take(&lb_log, 1))
		kprintf("LB leave period=%u dom=%d chan=%u pid=%d\n", d->period, k, c->channel, c->owner);
	d->st.s[c->x.lb_slot] = (struct lb_sender){ .nic = -1, .past_nic = -1 };
	chans[c->x.lb_slot].c = NULL;
	c->x.lb_slot = -1;
	if (--d->nchan == 0) {
		if (d->epoch && klimit_take(&lb_log, 1))
			kprintf("LB end dom=%d periods=%u\n", k, d->period + 1);
		dom_reset(d);
	}
}

// Decode: 0, or why IO_OP_BALANCE is refused. Settings are a domain's,
// never the I/O manager's: other values than a running domain's make or
// join another domain, so no channel's choice binds another's.
static long lb_check(const struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct)
{
	if (policy < IO_LB_RR || policy > IO_LB_HISTORY || !stripe_active(c) || c->x.raw || pct > 100 ||
	    t_ms > 3600000)
		return -E_INVAL;
	if (c->x.lb_slot >= 0)
		return chans[c->x.lb_slot].decided || doms[dom_of(c)].st.s[c->x.lb_slot].vol ? -E_BUSY : 0;
	for (int i = 0; i < LB_MAX; i++)
		if (!chans[i].c)
			return 0;
	return -E_NOMEM; // LB_MAX balanced channels already
}

static long set_locked(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct);

long lb_set(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct)
{
	init_once();
	nl_lock(&lb_lk);
	long e = set_locked(c, policy, t_ms ? t_ms : LB_DEFAULT_T_MS, pct ? pct : LB_DEFAULT_PCT);
	nl_unlock(&lb_lk);
	return e;
}

static long set_locked(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct)
{
	long e = lb_check(c, policy, t_ms, pct);
	if (e) {
		refused++;
		return e;
	}
	int i = c->x.lb_slot;
	if (i >= 0 && (doms[dom_of(c)].t_ms != t_ms || doms[dom_of(c)].pct != pct)) {
		dom_leave(c); // not sent yet: it moves to its new settings' domain
		i = -1;
	}
	if (i < 0) {
		i = 0;
		while (chans[i].c)
			i++;
		dom_join(c, i, dom_find((uint32_t)t_ms, (uint32_t)pct), (uint32_t)t_ms, (uint32_t)pct);
	}
	c->x.lb_policy = (uint8_t)policy;
	return 0;
}

static const char *const policy_names[] = { "none", "rr", "tlb", "history" };

// The period of domain k that ended, as the rule will see it: one group of
// lines, printed whole or suppressed whole (a model replaying the log must
// not see a turn without its senders).
static void print_turn(int k, uint32_t to, uint64_t now)
{
	const struct lb_dom *d = &doms[k];
	if (!klimit_take(&lb_log, 1 + (uint32_t)d->nchan))
		return;
	kprintf("LB turn period=%u dom=%d at_ms=%lu T_ms=%u overload_pct=%u", to, k, ms_since_epoch(d, now), d->t_ms,
		d->pct);
	for (int n = 0; n < LB_NICS; n++)
		if (d->st.cap[n])
			kprintf(" nic%d_bytes=%lu nic%d_pct=%lu nic%d_over=%d", n, d->st.past[n], n,
				d->st.past[n] * 100 / d->st.cap[n], n, lb_overloaded(&d->st, n));
	kprintf("\n");
	for (int i = 0; i < LB_MAX; i++) {
		const struct lb_sender *s = &d->st.s[i];
		if (s->used)
			kprintf("LB past period=%u dom=%d chan=%u pid=%d policy=%s prio=%u nic=%d bytes=%lu\n", to, k,
				chans[i].c->channel, chans[i].c->owner, policy_names[chans[i].c->x.lb_policy], s->prio,
				s->past_nic, s->past_vol);
	}
}

// The first send at or after period p's start: the volumes move back.
static void roll(int k, uint32_t p, uint64_t now)
{
	struct lb_dom *d = &doms[k];
	bool next = p == d->period + 1; // else whole periods passed with nothing sent
	for (int n = 0; n < LB_NICS; n++) {
		d->st.past[n] = next ? d->vol[n] : 0;
		d->vol[n] = 0;
		d->st.charge[n] = 0;
		d->st.nbound[n] = 0;
	}
	for (int i = 0; i < LB_MAX; i++) {
		struct lb_sender *s = &d->st.s[i];
		if (!s->used)
			continue;
		s->past_nic = next && s->vol ? s->nic : -1;
		s->past_vol = next ? s->vol : 0;
		s->vol = 0;
		s->moved = false;
		if (chans[i].c->x.lb_policy == IO_LB_TLB)
			s->nic = -1; // balance-tlb unbinds everyone
	}
	d->period = p;
	print_turn(k, p, now);
}

// The NICs a sender may be bound to: those its peer is known on (peer 0:
// a balanced sender names one receiver) with the link up. A reliable
// channel's view of a link (suspect, dead) does not rebind it: meanwhile
// its packets take another link (lb_skip), and it comes back.
static uint8_t usable_nics(struct io *c)
{
	uint8_t m = 0;
	IO_FOR_EACH_NIC(c, n)
		if ((c->x.peer_links[0] & (1u << n)) && demux_nics[n].link_up)
			m |= (uint8_t)(1u << n);
	return m;
}

// Domain k's first balanced send: its periods count from now.
static void dom_start(int k, uint64_t now)
{
	struct lb_dom *d = &doms[k];
	d->epoch = now ? now : 1, d->period = 0;
	for (int n = 0; n < LB_NICS; n++)
		d->st.cap[n] = n < netdev_count() && demux_nic_usable(n) ? capacity(d, n) : 0;
	if (klimit_take(&lb_log, 1))
		kprintf("LB start dom=%d T_ms=%u overload_pct=%u cap0=%lu cap1=%lu\n", k, d->t_ms, d->pct,
			d->st.cap[0], d->st.cap[1]);
}

static void on_send_locked(struct io *c);

void lb_on_send(struct io *c)
{
	if (c->x.lb_slot < 0)
		return;
	nl_lock(&lb_lk);
	on_send_locked(c);
	nl_unlock(&lb_lk);
}

static void on_send_locked(struct io *c)
{
	int i = c->x.lb_slot, k = dom_of(c);
	struct lb_dom *d = &doms[k];
	uint64_t now = arch_rdtsc();
	if (!d->epoch)
		dom_start(k, now);
	uint64_t p = (now - d->epoch) / period_tsc(d);
	if (p > d->period)
		roll(k, (uint32_t)p, now);
	struct lb_sender *s = &d->st.s[i];
	struct lb_chan *ch = &chans[i];
	int prio = proc_prio(c->owner);
	s->prio = prio >= 0 ? (uint8_t)prio : 0;
	uint8_t usable = usable_nics(c);
	bool due = ch->decided != d->period + 1 || s->nic < 0 || !(usable & (1u << s->nic));
	if (c->x.lb_policy == IO_LB_RR || !due || !usable)
		return;
	int from = s->nic, why;
	bool again = ch->decided == d->period + 1; // its NIC became unusable in this period
	int to = lb_decide(&d->st, i, c->x.lb_policy, usable, &why);
	ch->decided = d->period + 1;
	ch->decisions++;
	if (ch->last >= 0 && to != ch->last)
		ch->rebinds++;
	ch->last = (int8_t)to;
	if (d->period < IO_LB_HIST && !again)
		ch->nic_in[d->period] = (int8_t)to, ch->why[d->period] = (uint8_t)why;
	if (klimit_take(&lb_log, 1))
		kprintf("LB decide period=%u dom=%d at_ms=%lu chan=%u pid=%d policy=%s prio=%u nic%d->nic%d why=%s "
			"past_bytes=%lu spare0=%ld spare1=%ld\n",
			d->period, k, ms_since_epoch(d, now), c->channel, c->owner, policy_names[c->x.lb_policy],
			s->prio, from, to, lb_why_name(why), s->past_vol,
			lb_spare(&d->st, 0, c->x.lb_policy == IO_LB_HISTORY),
			lb_spare(&d->st, 1, c->x.lb_policy == IO_LB_HISTORY));
}

// Without the balancer's lock: a sender's binding changes only under it,
// by its own send or a turn another sender's send makes, and a stale one
// sends a packet on another of its links, which the receiver's order
// restores (a balanced channel is striped).
bool lb_skip(struct io *c, int peer, int nic)
{
	if (c->x.lb_slot < 0 || c->x.lb_policy == IO_LB_RR)
		return false;
	int b = __atomic_load_n(&doms[dom_of(c)].st.s[c->x.lb_slot].nic, __ATOMIC_RELAXED);
	if (b < 0 || b == nic || !(c->x.peer_links[peer] & (1u << b)) || !demux_nics[b].link_up)
		return false; // unbound, or its NIC cannot reach the peer now: any link
	if (c->x.rel && c->x.rp[peer] && c->x.rp[peer]->l[b].state != IO_LINK_UP)
		return false;
	return true;
}

void lb_sent(struct io *c, int nic, uint64_t bytes)
{
	if (c->x.lb_slot < 0 || nic < 0 || nic >= LB_NICS)
		return;
	nl_lock(&lb_lk);
	struct lb_dom *d = &doms[dom_of(c)];
	struct lb_chan *ch = &chans[c->x.lb_slot];
	if (d->epoch) {
		d->vol[nic] += bytes;
		d->st.s[c->x.lb_slot].vol += bytes;
		if (d->period < IO_LB_HIST) {
			d->nic_bytes[d->period][nic] += bytes;
			ch->bytes[d->period] += bytes;
		}
	}
	nl_unlock(&lb_lk);
}

static void stats_locked(struct io *c, struct io_lbstats *s);

long lb_stats(struct io *c, struct io_lbstats *s)
{
	init_once();
	memset(s, 0, sizeof(*s));
	nl_lock(&lb_lk);
	stats_locked(c, s);
	nl_unlock(&lb_lk);
	return 0;
}

static void stats_locked(struct io *c, struct io_lbstats *s)
{
	s->refused = refused;
	if (c->x.lb_slot < 0) {
		s->nic = -1;
		return;
	}
	const struct lb_chan *ch = &chans[c->x.lb_slot];
	const struct lb_dom *d = &doms[ch->dom];
	s->policy = c->x.lb_policy;
	s->nic = d->st.s[c->x.lb_slot].nic;
	s->period = d->period, s->period_ms = d->t_ms, s->overload_pct = d->pct;
	s->decisions = ch->decisions, s->rebinds = ch->rebinds;
	memcpy(s->bytes, ch->bytes, sizeof(s->bytes));
	memcpy(s->nic_in, ch->nic_in, sizeof(s->nic_in));
	memcpy(s->why, ch->why, sizeof(s->why));
	for (int k = 0; k < IO_LB_HIST; k++)
		for (int n = 0; n < LB_NICS; n++)
			s->nic_bytes[k][n] = d->nic_bytes[k][n];
	for (int n = 0; n < LB_NICS; n++)
		s->nic_cap[n] = d->st.cap[n];
}

void lb_free(struct io *c)
{
	if (c->x.lb_slot < 0)
		return;
	nl_lock(&lb_lk);
	dom_leave(c);
	nl_unlock(&lb_lk);
}
