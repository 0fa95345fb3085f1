// PIT channel 2 (gated through port 0x61, no interrupt) times 10 ms windows
// in which the TSC and the LAPIC timer are counted; the median window gives
// both rates (one window can be far off under emulation when the host
// deschedules the VM), and the LAPIC timer then ticks at HZ.
#include "timer.h"
#include "apic.h"
#include "cpu.h"
#include "arch.h"
#include "../../kprintf.h"
#include <stats.h>

#define PIT_HZ 1193182
#define CAL_WINDOWS 7
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3e0

uint64_t tsc_hz;
static uint64_t tsc_boot;
static uint32_t lapic_per_ms; // LAPIC timer counts (divide by 16) per millisecond
static uint32_t lapic_per_tick;
static uint32_t fast_us;

static void lapic_wr(uint32_t reg, uint32_t v) { arch_mmio_wr32(lapic_regs() + reg / 4, v); }
static uint32_t lapic_rd(uint32_t reg) { return arch_mmio_rd32(lapic_regs() + reg / 4); }

// Returns TSC ticks and LAPIC timer ticks (divide by 16) over `ms` ms.
static void calibrate(int ms, uint64_t *tsc, uint32_t *lapic_ticks)
{
	uint32_t count = PIT_HZ * (uint32_t)ms / 1000;
	arch_outb(0x61, (arch_inb(0x61) & ~0x02) | 0x01); // gate on, speaker off
	arch_outb(0x43, 0xb0);                             // channel 2, lo/hi, mode 0
	arch_outb(0x42, count & 0xff);
	arch_outb(0x42, (uint8_t)(count >> 8));
	lapic_wr(LAPIC_TIMER_DIV, 3);
	lapic_wr(LAPIC_TIMER_INIT, 0xffffffff);
	uint64_t t0 = arch_rdtsc();
	uint8_t g = arch_inb(0x61);
	arch_outb(0x61, g & ~1); // restart the count by toggling the gate
	arch_outb(0x61, g | 1);
	while (!(arch_inb(0x61) & 0x20))
		;
	*tsc = arch_rdtsc() - t0;
	*lapic_ticks = 0xffffffff - lapic_rd(LAPIC_TIMER_CUR);
	lapic_wr(LAPIC_TIMER_INIT, 0);
}

static void (*on_tick)(void);

static void tick(void *arg)
{
	(void)arg;
	on_tick();
}

void timer_init(void (*tick_fn)(void))
{
	on_tick = tick_fn;
	uint64_t tsc[CAL_WINDOWS];
	uint32_t lts[CAL_WINDOWS];
	for (int i = 0; i < CAL_WINDOWS; i++)
		calibrate(10, &tsc[i], &lts[i]);
	int m = stats_median_index(tsc, CAL_WINDOWS);
	uint64_t spread = stats_spread_ppm(tsc, CAL_WINDOWS);
	uint32_t lt = lts[m];
	tsc_hz = tsc[m] * 100;
	tsc_boot = arch_rdtsc();
	uint32_t per_tick = lt * 100 / HZ;
	lapic_per_ms = lt / 10;
	lapic_per_tick = per_tick ? per_tick : 1;
	irq_register(VEC_TIMER, tick, 0);
	lapic_wr(LAPIC_TIMER_DIV, 3);
	lapic_wr(LAPIC_LVT_TIMER, VEC_TIMER | (1u << 17)); // periodic
	lapic_wr(LAPIC_TIMER_INIT, per_tick ? per_tick : 1);
	pr_info("timer: tsc %lu.%03lu MHz (median of %d windows of 10 ms, spread %lu.%02lu%%), "
		"lapic timer %u ticks per %d us\n", tsc_hz / 1000000, (tsc_hz / 1000) % 1000,
		CAL_WINDOWS, spread / 10000, spread / 100 % 100, per_tick, 1000000 / HZ);
}

// Every CPU's LAPIC counts at the same bus rate: the boot CPU's figure.
void timer_start_this_cpu(void)
{
	lapic_wr(LAPIC_TIMER_DIV, 3);
	lapic_wr(LAPIC_LVT_TIMER, VEC_TIMER | (1u << 17));
	lapic_wr(LAPIC_TIMER_INIT, lapic_per_tick);
}

void timer_stop_this_cpu(void) { lapic_wr(LAPIC_TIMER_INIT, 0); }

// The LAPIC counts lapic_per_ms a millisecond, the TSC tsc_hz / 1000: a
// count for `tsc` ticks, one second at most (the 32-bit count's limit is
// far beyond it at any rate QEMU gives), never 0 (0 stops the timer).
static uint32_t lapic_count(uint64_t tsc)
{
	uint64_t per_ms = tsc_hz / 1000;
	if (!per_ms)
		return lapic_per_tick;
	if (tsc > tsc_hz)
		tsc = tsc_hz;
	uint64_t n = tsc * lapic_per_ms / per_ms;
	return n ? (uint32_t)n : 1;
}

bool timer_sleep_until(uint64_t at)
{
	uint64_t now = arch_rdtsc(), tick = tsc_hz / HZ;
	if (fast_us || !tick || at < now + 2 * tick)
		return false;
	lapic_wr(LAPIC_LVT_TIMER, VEC_TIMER); // one-shot
	lapic_wr(LAPIC_TIMER_INIT, lapic_count(at - now));
	return true;
}

void timer_resume(void)
{
	uint32_t count = fast_us ? lapic_per_ms * fast_us / 1000 : lapic_per_tick;
	lapic_wr(LAPIC_LVT_TIMER, VEC_TIMER | (1u << 17));
	lapic_wr(LAPIC_TIMER_INIT, count ? count : 1);
}

uint64_t timer_now_us(void)
{
	return tsc_hz ? (uint64_t)((unsigned __int128)(arch_rdtsc() - tsc_boot) * 1000000 / tsc_hz) : 0;
}

uint64_t timer_us_to_tsc(uint64_t us)
{
	uint64_t per_us = tsc_hz / 1000000;
	return per_us && us > UINT64_MAX / per_us ? UINT64_MAX : us * per_us;
}

// Saturates: a timeout too long to count in TSC ticks never expires.
uint64_t timer_deadline(uint64_t us)
{
	uint64_t now = arch_rdtsc(), ticks = timer_us_to_tsc(us);
	return ticks > UINT64_MAX - now ? UINT64_MAX : now + ticks;
}

void timer_fast(uint32_t us)
{
	if (us == fast_us)
		return;
	fast_us = us;
	uint32_t count = us ? lapic_per_ms * us / 1000 : lapic_per_ms * 1000 / HZ;
	lapic_wr(LAPIC_TIMER_INIT, count ? count : 1);
}
