// Rate limits for the console lines that a process, or a peer on the wire,
// can cause: a token bucket per kind of line (the balancer's, a reliable
// link's, a killed process's), so one kind's flood neither fills a
// 115,200-baud serial console nor hides another kind's lines.
#ifndef KLIMIT_H
#define KLIMIT_H
#include <stdbool.h>
#include <stdint.h>

struct klimit {
	const char *name;    // in the note of suppressed lines
	uint32_t burst;      // lines at once
	uint32_t per_s;      // lines a second after a burst (> 0)
	uint64_t tat_us;     // when the bucket is full again (GCRA's theoretical arrival time)
	uint64_t pending;    // suppressed since the last line let through
	uint64_t suppressed; // suppressed in all
};
#define KLIMIT(nm, b, r) { .name = (nm), .burst = (b), .per_s = (r) }

// Lines suppressed by every limiter since boot (sysinfo.log_suppressed).
extern uint64_t klimit_suppressed;

// Whether a group of `lines` lines (printed together or not at all) may be
// printed at now_us: over any window of W us from a full bucket, at most
// burst + W * per_s / 1e6 lines pass. Yes: their cost taken, and first a
// "klog: N lines of NAME suppressed" note when lines were suppressed since
// the last group let through. No: the lines counted as suppressed.
bool klimit_allow(struct klimit *l, uint64_t now_us, uint32_t lines);
// klimit_allow at the current time, interrupts held off.
bool klimit_take(struct klimit *l, uint32_t lines);
#endif
