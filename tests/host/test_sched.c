// sched: the priority run queues, against a reference model.
#include "host.h"
#include "sched.h"
#include <CUnit/CUnit.h>

static struct runq q;

static void setup(void) { runq_init(&q); }

// The mask says exactly which levels are non-empty; queued[] matches the
// lists; every list is acyclic and ends at its tail.
static bool consistent(const struct runq *r)
{
	int seen[RQ_MAX] = { 0 };
	for (int p = 0; p < NPRIO; p++) {
		bool nonempty = r->head[p] >= 0;
		if (nonempty != !!(r->mask & (1u << p)) || nonempty != (r->tail[p] >= 0))
			return false;
		int last = -1, n = 0;
		for (int i = r->head[p]; i >= 0; i = r->next[i]) {
			if (i >= RQ_MAX || ++n > RQ_MAX || seen[i]++ || r->prio_of[i] != p)
				return false;
			last = i;
		}
		if (last != r->tail[p])
			return false;
	}
	for (int i = 0; i < RQ_MAX; i++)
		if (r->queued[i] != (seen[i] == 1))
			return false;
	return (r->mask >> NPRIO) == 0;
}

static void test_empty(void)
{
	CU_ASSERT_EQUAL(runq_pop(&q), -1);
	CU_ASSERT_EQUAL(runq_top_prio(&q), -1);
	CU_ASSERT_EQUAL(q.mask, 0);
	CU_ASSERT_FALSE(runq_remove(&q, 0));
	CU_ASSERT_TRUE(consistent(&q));
}

static void test_priority_then_fifo(void)
{
	CU_ASSERT_TRUE(runq_push(&q, 10, 3));
	CU_ASSERT_TRUE(runq_push(&q, 11, 1));
	CU_ASSERT_TRUE(runq_push(&q, 12, 3));
	CU_ASSERT_TRUE(runq_push(&q, 13, 7));
	CU_ASSERT_TRUE(runq_push(&q, 14, 0));
	CU_ASSERT_TRUE(runq_push(&q, 15, 3));
	CU_ASSERT_EQUAL(q.mask, (1u << 0) | (1u << 1) | (1u << 3) | (1u << 7));
	CU_ASSERT_EQUAL(runq_top_prio(&q), 7);
	CU_ASSERT_TRUE(consistent(&q));
	static const int want[] = { 13, 10, 12, 15, 11, 14 };
	for (int i = 0; i < 6; i++)
		CU_ASSERT_EQUAL(runq_pop(&q), want[i]);
	CU_ASSERT_EQUAL(runq_pop(&q), -1);
	CU_ASSERT_EQUAL(q.mask, 0);
	CU_ASSERT_TRUE(consistent(&q));
}

static void test_round_robin_requeue(void)
{
	for (int i = 0; i < 3; i++)
		runq_push(&q, i, 2);
	// The running process goes to the back of its level.
	int order[9];
	for (int k = 0; k < 9; k++) {
		order[k] = runq_pop(&q);
		runq_push(&q, order[k], 2);
	}
	for (int k = 0; k < 9; k++)
		CU_ASSERT_EQUAL(order[k], k % 3);
	// A higher level preempts the rotation at once.
	runq_push(&q, 5, 4);
	CU_ASSERT_EQUAL(runq_pop(&q), 5);
	CU_ASSERT_EQUAL(runq_pop(&q), 0);
}

static void test_remove_head_middle_tail(void)
{
	for (int i = 0; i < 5; i++)
		runq_push(&q, i, 4);
	CU_ASSERT_TRUE(runq_remove(&q, 2)); // middle
	CU_ASSERT_TRUE(consistent(&q));
	CU_ASSERT_TRUE(runq_remove(&q, 0)); // head
	CU_ASSERT_TRUE(consistent(&q));
	CU_ASSERT_TRUE(runq_remove(&q, 4)); // tail
	CU_ASSERT_TRUE(consistent(&q));
	CU_ASSERT_EQUAL(q.tail[4], 3);
	CU_ASSERT_FALSE(runq_remove(&q, 2)); // already gone
	runq_push(&q, 4, 4); // appends after the new tail
	CU_ASSERT_EQUAL(runq_pop(&q), 1);
	CU_ASSERT_EQUAL(runq_pop(&q), 3);
	CU_ASSERT_EQUAL(runq_pop(&q), 4);
	CU_ASSERT_EQUAL(runq_pop(&q), -1);
}

static void test_remove_only_element_clears_level(void)
{
	runq_push(&q, 7, 5);
	runq_push(&q, 8, 2);
	CU_ASSERT_TRUE(runq_remove(&q, 7));
	CU_ASSERT_EQUAL(q.mask, 1u << 2);
	CU_ASSERT_EQUAL(q.head[5], -1);
	CU_ASSERT_EQUAL(q.tail[5], -1);
	CU_ASSERT_EQUAL(runq_top_prio(&q), 2);
	runq_push(&q, 7, 5);
	CU_ASSERT_EQUAL(runq_pop(&q), 7);
	CU_ASSERT_TRUE(consistent(&q));
}

static void test_rejects(void)
{
	CU_ASSERT_TRUE(runq_push(&q, 3, 1));
	CU_ASSERT_FALSE(runq_push(&q, 3, 1)); // double push
	CU_ASSERT_FALSE(runq_push(&q, 3, 6)); // queued elsewhere
	CU_ASSERT_FALSE(runq_push(&q, -1, 1));
	CU_ASSERT_FALSE(runq_push(&q, RQ_MAX, 1));
	CU_ASSERT_FALSE(runq_push(&q, 4, -1));
	CU_ASSERT_FALSE(runq_push(&q, 4, NPRIO));
	CU_ASSERT_FALSE(runq_remove(&q, -1));
	CU_ASSERT_FALSE(runq_remove(&q, RQ_MAX));
	CU_ASSERT_FALSE(runq_remove(&q, 4));
	CU_ASSERT_EQUAL(q.mask, 1u << 1);
	CU_ASSERT_TRUE(consistent(&q));
	CU_ASSERT_EQUAL(runq_pop(&q), 3);
	CU_ASSERT_EQUAL(runq_pop(&q), -1);
	// Boundaries are accepted.
	CU_ASSERT_TRUE(runq_push(&q, 0, 0));
	CU_ASSERT_TRUE(runq_push(&q, RQ_MAX - 1, NPRIO - 1));
	CU_ASSERT_EQUAL(runq_pop(&q), RQ_MAX - 1);
	CU_ASSERT_EQUAL(runq_pop(&q), 0);
}

static void test_all_slots(void)
{
	for (int i = 0; i < RQ_MAX; i++)
		CU_ASSERT_TRUE(runq_push(&q, i, i % NPRIO));
	CU_ASSERT_EQUAL(q.mask, (1u << NPRIO) - 1);
	for (int p = NPRIO - 1; p >= 0; p--)
		for (int i = p; i < RQ_MAX; i += NPRIO)
			CU_ASSERT_EQUAL(runq_pop(&q), i);
	CU_ASSERT_EQUAL(runq_pop(&q), -1);
}

// Random push/pop/remove against a simple model: per level, an array in
// arrival order.
static void test_random_against_model(void)
{
	int model[NPRIO][RQ_MAX], len[NPRIO] = { 0 }, prio_of[RQ_MAX];
	bool in[RQ_MAX] = { false };
	uint64_t seed = 12345;
	int bad = 0;
	for (int op = 0; op < 20000; op++) {
		int k = (int)prng_below(&seed, 10), idx = (int)prng_below(&seed, RQ_MAX + 2) - 1;
		int prio = (int)prng_below(&seed, NPRIO + 2) - 1;
		if (k < 5) {
			bool ok = idx >= 0 && idx < RQ_MAX && prio >= 0 && prio < NPRIO && !in[idx];
			bad += runq_push(&q, idx, prio) != ok;
			if (ok) {
				model[prio][len[prio]++] = idx;
				in[idx] = true;
				prio_of[idx] = prio;
			}
		} else if (k < 8) {
			int want = -1;
			for (int p = NPRIO - 1; p >= 0 && want < 0; p--)
				if (len[p]) {
					want = model[p][0];
					for (int j = 1; j < len[p]; j++)
						model[p][j - 1] = model[p][j];
					len[p]--;
					in[want] = false;
				}
			bad += runq_pop(&q) != want;
		} else {
			bool ok = idx >= 0 && idx < RQ_MAX && in[idx];
			bad += runq_remove(&q, idx) != ok;
			if (ok) {
				int p = prio_of[idx], j = 0;
				while (model[p][j] != idx)
					j++;
				for (; j + 1 < len[p]; j++)
					model[p][j] = model[p][j + 1];
				len[p]--;
				in[idx] = false;
			}
		}
		int top = -1;
		for (int p = NPRIO - 1; p >= 0 && top < 0; p--)
			if (len[p])
				top = p;
		bad += runq_top_prio(&q) != top;
		if (!consistent(&q))
			CU_FAIL_FATAL("run queue inconsistent");
	}
	CU_ASSERT_EQUAL(bad, 0);
}

int register_sched(void)
{
	static const struct test_case t[] = {
		TEST(test_empty),
		TEST(test_priority_then_fifo),
		TEST(test_round_robin_requeue),
		TEST(test_remove_head_middle_tail),
		TEST(test_remove_only_element_clears_level),
		TEST(test_rejects),
		TEST(test_all_slots),
		TEST(test_random_against_model),
	};
	return ADD_SUITE("sched", setup, NULL, t);
}
