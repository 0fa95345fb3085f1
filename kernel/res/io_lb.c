// Balancing senders over NICs: a channel whose dev_no names several NICs
// and that chose a policy with IO_OP_BALANCE is one sender of the I/O
// manager's balancing domain, whose state lives here and only here: the
// period T, the overload threshold, each NIC's capacity (its paced rate)
// and volume in this and the past period, and per sender its NIC, its
// process's priority and its volume (Taniguchi et al., section 3.2).
//
// Time is cut into periods of T from the domain's first balanced send. At
// the first send after a turn the domain rolls over: this period's volumes
// become the past period's, the turn is printed ("LB turn": every NIC's
// bytes, share of its capacity, overloaded or not; every sender's NIC,
// priority and bytes). Each sender then decides once, on its own next
// send ("LB decide": who, from which NIC to which, why):
//   rr       no binding: every packet goes round-robin (io_stripe.c).
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
// (io_lb_skip): a link that is down sends it elsewhere meanwhile.
// A rebind can put two packets of one sender on two NICs at once; a
// balanced channel is striped, so its per-peer sequence numbers (and, when
// reliable, its acknowledgements) restore the order at the receiver.
#include "io_priv.h"
#include "io_lb.h"
#include "proc.h"
#include "../kprintf.h"
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

// ---------------------------------------------------------- the domain

struct lb_chan {
	struct io *c;
	uint32_t decided;    // 1 + the period of its last decision (0: none yet)
	uint64_t decisions, rebinds;
	int8_t last;         // the NIC of its last decision (-1: none): tlb unbinds, and a
	                     // rebind is a decision that gives another NIC than that
	uint64_t bytes[IO_LB_HIST];
	int8_t nic_in[IO_LB_HIST];
	uint8_t why[IO_LB_HIST];
};

static struct {
	struct lb_state st;
	struct lb_chan ch[LB_MAX];
	int nchan;
	uint32_t t_ms, pct;
	uint64_t epoch;      // TSC of the first balanced send (0: not yet)
	uint32_t period;     // the current period
	uint64_t vol[LB_NICS];
	uint64_t nic_bytes[IO_LB_HIST][LB_NICS];
	uint64_t refused;
} dom;

static uint64_t period_tsc(void) { return timer_us_to_tsc((uint64_t)dom.t_ms * 1000); }

static uint64_t ms_since_epoch(uint64_t now) { return (now - dom.epoch) / timer_us_to_tsc(1000); }

// Bytes NIC n carries in one period at its paced rate.
static uint64_t capacity(int n)
{
	uint64_t kbit_tsc = io_nics[n].tsc_per_kbit;
	uint64_t kbits = kbit_tsc ? period_tsc() / kbit_tsc : (uint64_t)LB_UNPACED_MBPS * dom.t_ms;
	return kbits * 125;
}

static void reset(void)
{
	memset(&dom, 0, sizeof(dom));
	for (int i = 0; i < LB_MAX; i++)
		dom.st.s[i].nic = dom.st.s[i].past_nic = -1;
}

static bool ready;

static void init_once(void)
{
	if (!ready) {
		reset();
		ready = true;
	}
}

long io_lb_set(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct)
{
	init_once();
	t_ms = t_ms ? t_ms : LB_DEFAULT_T_MS;
	pct = pct ? pct : LB_DEFAULT_PCT;
	long e = 0;
	if (policy < IO_LB_RR || policy > IO_LB_HISTORY || !io_striped(c) || c->raw || pct > 100 ||
	    t_ms > 3600000)
		e = -E_INVAL;
	else if (c->lb_slot >= 0 ? dom.ch[c->lb_slot].decided || dom.st.s[c->lb_slot].vol : dom.nchan >= LB_MAX)
		e = c->lb_slot >= 0 ? -E_BUSY : -E_NOMEM; // it sent already; the table is full
	else if (dom.nchan > (c->lb_slot >= 0) && (dom.t_ms != t_ms || dom.pct != pct))
		e = -E_BUSY; // the running domain has other settings
	if (e) {
		dom.refused++;
		return e;
	}
	if (c->lb_slot < 0) {
		int i = 0;
		while (dom.st.s[i].used)
			i++;
		dom.st.s[i] = (struct lb_sender){ .used = true, .nic = -1, .past_nic = -1 };
		dom.ch[i] = (struct lb_chan){ .c = c, .last = -1 };
		memset(dom.ch[i].nic_in, 0xff, sizeof(dom.ch[i].nic_in));
		c->lb_slot = (int8_t)i;
		dom.nchan++;
	}
	dom.t_ms = (uint32_t)t_ms, dom.pct = (uint32_t)pct;
	dom.st.over_pct = (uint32_t)pct;
	c->lb_policy = (uint8_t)policy;
	return 0;
}

static const char *const policy_names[] = { "none", "rr", "tlb", "history" };

// The period that ended, as the rule will see it.
static void print_turn(uint32_t to, uint64_t now)
{
	kprintf("LB turn period=%u at_ms=%lu T_ms=%u overload_pct=%u", to, ms_since_epoch(now), dom.t_ms, dom.pct);
	for (int n = 0; n < LB_NICS; n++)
		if (dom.st.cap[n])
			kprintf(" nic%d_bytes=%lu nic%d_pct=%lu nic%d_over=%d", n, dom.st.past[n], n,
				dom.st.past[n] * 100 / dom.st.cap[n], n, lb_overloaded(&dom.st, n));
	kprintf("\n");
	for (int i = 0; i < LB_MAX; i++) {
		const struct lb_sender *s = &dom.st.s[i];
		if (s->used)
			kprintf("LB past period=%u chan=%u pid=%d policy=%s prio=%u nic=%d bytes=%lu\n", to,
				dom.ch[i].c->channel, dom.ch[i].c->owner, policy_names[dom.ch[i].c->lb_policy], s->prio,
				s->past_nic, s->past_vol);
	}
}

// The first send at or after period k's start: the volumes move back.
static void roll(uint32_t k, uint64_t now)
{
	bool next = k == dom.period + 1; // else whole periods passed with nothing sent
	for (int n = 0; n < LB_NICS; n++) {
		dom.st.past[n] = next ? dom.vol[n] : 0;
		dom.vol[n] = 0;
		dom.st.charge[n] = 0;
		dom.st.nbound[n] = 0;
	}
	for (int i = 0; i < LB_MAX; i++) {
		struct lb_sender *s = &dom.st.s[i];
		if (!s->used)
			continue;
		s->past_nic = next && s->vol ? s->nic : -1;
		s->past_vol = next ? s->vol : 0;
		s->vol = 0;
		s->moved = false;
		if (dom.ch[i].c->lb_policy == IO_LB_TLB)
			s->nic = -1; // balance-tlb unbinds everyone
	}
	dom.period = k;
	print_turn(k, now);
}

// The NICs a sender may be bound to: those its peer is known on (peer 0:
// a balanced sender names one receiver) with the link up. A reliable
// channel's view of a link (suspect, dead) does not rebind it: meanwhile
// its packets take another link (io_lb_skip), and it comes back.
static uint8_t usable_nics(struct io *c)
{
	uint8_t m = 0;
	IO_FOR_EACH_NIC(c, n)
		if ((c->peer_links[0] & (1u << n)) && io_nics[n].link_up)
			m |= (uint8_t)(1u << n);
	return m;
}

void io_lb_on_send(struct io *c)
{
	if (c->lb_slot < 0)
		return;
	int i = c->lb_slot;
	uint64_t now = arch_rdtsc();
	if (!dom.epoch) {
		dom.epoch = now ? now : 1, dom.period = 0;
		for (int n = 0; n < LB_NICS; n++)
			dom.st.cap[n] = n < netdev_count() && io_nic_usable(n) ? capacity(n) : 0;
		kprintf("LB start T_ms=%u overload_pct=%u cap0=%lu cap1=%lu\n", dom.t_ms, dom.pct, dom.st.cap[0],
			dom.st.cap[1]);
	}
	uint64_t k = (now - dom.epoch) / period_tsc();
	if (k > dom.period)
		roll((uint32_t)k, now);
	struct lb_sender *s = &dom.st.s[i];
	struct lb_chan *ch = &dom.ch[i];
	int prio = proc_prio(c->owner);
	s->prio = prio >= 0 ? (uint8_t)prio : 0;
	uint8_t usable = usable_nics(c);
	bool due = ch->decided != dom.period + 1 || s->nic < 0 || !(usable & (1u << s->nic));
	if (c->lb_policy == IO_LB_RR || !due || !usable)
		return;
	int from = s->nic, why;
	bool again = ch->decided == dom.period + 1; // its NIC became unusable in this period
	int to = lb_decide(&dom.st, i, c->lb_policy, usable, &why);
	ch->decided = dom.period + 1;
	ch->decisions++;
	if (ch->last >= 0 && to != ch->last)
		ch->rebinds++;
	ch->last = (int8_t)to;
	if (dom.period < IO_LB_HIST && !again)
		ch->nic_in[dom.period] = (int8_t)to, ch->why[dom.period] = (uint8_t)why;
	kprintf("LB decide period=%u at_ms=%lu chan=%u pid=%d policy=%s prio=%u nic%d->nic%d why=%s "
		"past_bytes=%lu spare0=%ld spare1=%ld\n",
		dom.period, ms_since_epoch(now), c->channel, c->owner, policy_names[c->lb_policy], s->prio, from, to,
		lb_why_name(why), s->past_vol, lb_spare(&dom.st, 0, c->lb_policy == IO_LB_HISTORY),
		lb_spare(&dom.st, 1, c->lb_policy == IO_LB_HISTORY));
}

bool io_lb_skip(struct io *c, int peer, int nic)
{
	if (c->lb_slot < 0 || c->lb_policy == IO_LB_RR)
		return false;
	int b = dom.st.s[c->lb_slot].nic;
	if (b < 0 || b == nic || !(c->peer_links[peer] & (1u << b)) || !io_nics[b].link_up)
		return false; // unbound, or its NIC cannot reach the peer now: any link
	if (c->rel && c->rp[peer] && c->rp[peer]->l[b].state != IO_LINK_UP)
		return false;
	return true;
}

void io_lb_sent(struct io *c, int nic, uint64_t bytes)
{
	if (c->lb_slot < 0 || !dom.epoch || nic < 0 || nic >= LB_NICS)
		return;
	struct lb_chan *ch = &dom.ch[c->lb_slot];
	dom.vol[nic] += bytes;
	dom.st.s[c->lb_slot].vol += bytes;
	if (dom.period < IO_LB_HIST) {
		dom.nic_bytes[dom.period][nic] += bytes;
		ch->bytes[dom.period] += bytes;
	}
}

long io_lb_stats(struct io *c, struct io_lbstats *s)
{
	init_once();
	memset(s, 0, sizeof(*s));
	s->refused = dom.refused;
	if (c->lb_slot < 0) {
		s->nic = -1;
		return 0;
	}
	const struct lb_chan *ch = &dom.ch[c->lb_slot];
	s->policy = c->lb_policy;
	s->nic = dom.st.s[c->lb_slot].nic;
	s->period = dom.period, s->period_ms = dom.t_ms, s->overload_pct = dom.pct;
	s->decisions = ch->decisions, s->rebinds = ch->rebinds;
	memcpy(s->bytes, ch->bytes, sizeof(s->bytes));
	memcpy(s->nic_in, ch->nic_in, sizeof(s->nic_in));
	memcpy(s->why, ch->why, sizeof(s->why));
	for (int k = 0; k < IO_LB_HIST; k++)
		for (int n = 0; n < LB_NICS; n++)
			s->nic_bytes[k][n] = dom.nic_bytes[k][n];
	for (int n = 0; n < LB_NICS; n++)
		s->nic_cap[n] = dom.st.cap[n];
	return 0;
}

void io_lb_free(struct io *c)
{
	if (c->lb_slot < 0)
		return;
	if (dom.epoch) // its state leaves with it: the next decisions no longer see it
		kprintf("LB leave period=%u chan=%u pid=%d\n", dom.period, c->channel, c->owner);
	dom.st.s[c->lb_slot] = (struct lb_sender){ .nic = -1, .past_nic = -1 };
	dom.ch[c->lb_slot].c = NULL;
	c->lb_slot = -1;
	if (--dom.nchan == 0) { // the last one: the next balanced send starts anew
		uint64_t refused = dom.refused;
		if (dom.epoch)
			kprintf("LB end periods=%u\n", dom.period + 1);
		reset();
		dom.refused = refused;
	}
}
