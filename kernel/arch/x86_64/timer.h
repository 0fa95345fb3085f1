// Time: the TSC calibrated against the PIT, and the LAPIC timer tick.
#ifndef TIMER_H
#define TIMER_H
#include <stdbool.h>
#include <stdint.h>

#define HZ 1000
extern uint64_t tsc_hz;

// Calibrates the TSC and starts the tick; tick_fn runs in every tick.
void timer_init(void (*tick_fn)(void));
void timer_start_this_cpu(void); // a further CPU's tick (after timer_init)
void timer_stop_this_cpu(void);  // and none, while it has nothing to run
// Tickless idle: instead of the tick, one interrupt at TSC value `at`
// (within a second; the caller has nothing due before it), for a CPU
// about to halt. False, the tick kept, when `at` is less than two ticks
// away or the tick is fast (timer_fast). timer_resume() brings the tick
// back, as it was, once the CPU wakes (by that interrupt or another).
bool timer_sleep_until(uint64_t at);
void timer_resume(void);
uint64_t timer_now_us(void);
uint64_t timer_us_to_tsc(uint64_t us); // saturates at UINT64_MAX
// The TSC value `us` microseconds from now, UINT64_MAX when that is
// beyond what the TSC counts (a deadline that never comes).
uint64_t timer_deadline(uint64_t us);
// Ticks every `us` microseconds instead of every 1/HZ s (0: back to HZ):
// lets an idle CPU halt between polls of a device and still poll often.
void timer_fast(uint32_t us);
#endif
