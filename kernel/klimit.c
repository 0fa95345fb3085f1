// Token buckets for console lines a process can cause (klimit.h).
// GCRA form: one timestamp per bucket, no refill arithmetic; a line costs
// 1e6 / per_s us of credit, and a bucket holds burst lines of it.
#include "klimit.h"
#include "kprintf.h"
#include "arch/x86_64/arch.h"
#include "arch/x86_64/timer.h"

uint64_t klimit_suppressed;

bool klimit_allow(struct klimit *l, uint64_t now_us, uint32_t lines)
{
	uint64_t cost = 1000000 / (l->per_s ? l->per_s : 1);
	uint64_t tat = l->tat_us > now_us ? l->tat_us : now_us;
	if (lines > l->burst || tat + lines * cost - now_us > l->burst * cost) {
		l->pending += lines, l->suppressed += lines;
		klimit_suppressed += lines;
		return false;
	}
	l->tat_us = tat + lines * cost;
	if (l->pending) {
		kprintf("klog: %lu lines of %s suppressed\n", l->pending, l->name);
		l->pending = 0;
	}
	return true;
}

bool klimit_take(struct klimit *l, uint32_t lines)
{
	uint64_t f = arch_irq_save();
	bool ok = klimit_allow(l, timer_now_us(), lines);
	arch_irq_restore(f);
	return ok;
}
