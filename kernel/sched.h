// Run queues: one FIFO per priority, highest priority first. Pure data
// structure over process-table indexes, so the host tests drive it alone.
#ifndef SCHED_H
#define SCHED_H
#include <stdint.h>
#include <stdbool.h>

#define NPRIO 8
#define RQ_MAX 64

struct runq {
	int16_t head[NPRIO], tail[NPRIO];
	int16_t next[RQ_MAX];
	uint8_t prio_of[RQ_MAX];
	bool queued[RQ_MAX];
	uint32_t mask; // bit p set when queue p is non-empty
};

void runq_init(struct runq *q);
// Appends idx at priority prio; false when out of range or already queued.
bool runq_push(struct runq *q, int idx, int prio);
// Removes and returns the first index of the highest non-empty priority, or -1.
int runq_pop(struct runq *q);
bool runq_remove(struct runq *q, int idx);
// Highest queued priority, or -1 when empty.
int runq_top_prio(const struct runq *q);
#endif
