// The balancing rule of balance.c as a pure function over the past-T state,
// so the host tests can drive it case by case (tests/host/test_lb.c).
#ifndef NET_BALANCE_H
#define NET_BALANCE_H
#include <stdbool.h>
#include <stdint.h>
#include <io.h>

#define LB_MAX 16   // balanced channels (senders) at once
#define LB_NICS IO_MAX_NICS // NETDEV_MAX

struct lb_sender {
	bool used;
	int8_t nic;        // bound to now (-1: none)
	int8_t past_nic;   // bound to during the past period while it sent (-1: it sent nothing)
	uint8_t prio;      // the scheduler priority of its process (higher: more important)
	bool moved;        // its decision of this period changed its NIC
	uint64_t vol;      // bytes it sent in this period
	uint64_t past_vol; // in the past period
};

struct lb_state {
	uint32_t over_pct;            // overloaded: past[n] >= over_pct % of cap[n]
	uint64_t cap[LB_NICS];        // bytes NIC n carries in one period T
	uint64_t past[LB_NICS];       // bytes NIC n carried in the past period
	int64_t charge[LB_NICS];      // past-period bytes of the senders bound to n this period
	uint32_t nbound[LB_NICS];     // senders whose decision this period gave n
	struct lb_sender s[LB_MAX];
};

// Spare capacity of NIC n for a decision: history counts what the NIC
// carried in the past period, tlb only what the senders bound to it since
// the turn carried then (Linux: a slave's load is its flows' past load).
int64_t lb_spare(const struct lb_state *st, int n, bool history);
bool lb_overloaded(const struct lb_state *st, int n);
// The NIC of `usable` (a mask) with the most spare capacity; equal spare:
// the one fewer senders were bound to this period; then the lowest number.
// -1 when usable is empty.
int lb_most_spare(const struct lb_state *st, uint8_t usable, bool history);
// Sender i's decision (policy IO_LB_TLB or IO_LB_HISTORY), taken at its
// first send with no NIC or after a period turn: returns its NIC (-1 when
// usable is empty), sets *why (IO_LB_WHY_*), and updates the state: nic,
// moved, nbound, and when "most spare" (rules NEW, TLB, OVERLOAD, SPARE)
// gives it another NIC, the charge of its past-period bytes on that NIC
// (history: and their credit on the NIC it leaves).
int lb_decide(struct lb_state *st, int i, int policy, uint8_t usable, int *why);
const char *lb_why_name(int why);

// The balancer as a link chooser (balance.c): balanced channels' senders,
// their domains and decisions.
struct io;
struct io_lbstats;
long lb_set(struct io *c, uint64_t policy, uint64_t t_ms, uint64_t pct); // IO_OP_BALANCE
long lb_stats(struct io *c, struct io_lbstats *s);                       // IO_OP_LBSTATS
void lb_on_send(struct io *c); // output_io: the period turn, the sender's decision
// True when a bound sender's packet to peer must not take nic (its NIC can).
bool lb_skip(struct io *c, int peer, int nic);
void lb_sent(struct io *c, int nic, uint64_t bytes); // packet bytes that left on nic
void lb_free(struct io *c);
#endif
