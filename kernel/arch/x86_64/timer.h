// Time: the TSC calibrated against the PIT, and the LAPIC timer tick.
#ifndef TIMER_H
#define TIMER_H
#include <stdint.h>

#define HZ 1000
extern uint64_t tsc_hz;

void timer_init(void);
uint64_t timer_now_us(void);
uint64_t timer_us_to_tsc(uint64_t us);
#endif
