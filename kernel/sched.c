// Priority run queues: strict priority between levels, FIFO (round robin
// when the running process is re-queued) within a level.
#include "sched.h"

void runq_init(struct runq *q)
{
	for (int p = 0; p < NPRIO; p++)
		q->head[p] = q->tail[p] = -1;
	for (int i = 0; i < RQ_MAX; i++) {
		q->next[i] = -1;
		q->queued[i] = false;
	}
	q->mask = 0;
}

bool runq_push(struct runq *q, int idx, int prio)
{
	if (idx < 0 || idx >= RQ_MAX || prio < 0 || prio >= NPRIO || q->queued[idx])
		return false;
	q->next[idx] = -1;
	if (q->tail[prio] < 0)
		q->head[prio] = (int16_t)idx;
	else
		q->next[q->tail[prio]] = (int16_t)idx;
	q->tail[prio] = (int16_t)idx;
	q->prio_of[idx] = (uint8_t)prio;
	q->queued[idx] = true;
	q->mask |= 1u << prio;
	return true;
}

int runq_top_prio(const struct runq *q)
{
	return q->mask ? 31 - __builtin_clz(q->mask) : -1;
}

int runq_pop(struct runq *q)
{
	int p = runq_top_prio(q);
	if (p < 0)
		return -1;
	int idx = q->head[p];
	q->head[p] = q->next[idx];
	if (q->head[p] < 0) {
		q->tail[p] = -1;
		q->mask &= ~(1u << p);
	}
	q->queued[idx] = false;
	return idx;
}

bool runq_remove(struct runq *q, int idx)
{
	if (idx < 0 || idx >= RQ_MAX || !q->queued[idx])
		return false;
	int p = q->prio_of[idx], prev = -1;
	for (int i = q->head[p]; i != idx; i = q->next[i])
		prev = i;
	if (prev < 0)
		q->head[p] = q->next[idx];
	else
		q->next[prev] = q->next[idx];
	if (q->tail[p] == idx)
		q->tail[p] = (int16_t)prev;
	if (q->head[p] < 0)
		q->mask &= ~(1u << p);
	q->queued[idx] = false;
	return true;
}
