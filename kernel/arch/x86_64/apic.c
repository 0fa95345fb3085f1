// Interrupt controllers. Addresses come from the ACPI MADT when present,
// else the PC defaults (LAPIC 0xfee00000, IOAPIC 0xfec00000).
#include "apic.h"
#include "arch.h"
#include "../../kprintf.h"
#include <string.h>

#define LAPIC_ID 0x20
#define LAPIC_EOI 0xb0
#define LAPIC_SVR 0xf0
#define LAPIC_TPR 0x80
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360

static volatile uint32_t *lapic;
static volatile uint32_t *ioapic;
static paddr_t lapic_pa = 0xfee00000, ioapic_pa = 0xfec00000;
static int ioapic_gsi_base, ioapic_pins = 24;

static struct {
	int gsi;
	uint16_t flags;
} isa_override[16];

// Enabled (or online-capable) processors' LAPIC IDs, MADT order: the
// firmware lists the boot processor first.
static uint32_t cpu_apic_ids[MAXCPU];
static int ncpu_madt;

volatile uint32_t *lapic_regs(void) { return lapic; }

static uint32_t lapic_rd(uint32_t reg) { return arch_mmio_rd32(lapic + reg / 4); }
static void lapic_wr(uint32_t reg, uint32_t v) { arch_mmio_wr32(lapic + reg / 4, v); }

void lapic_eoi(void)
{
	if (lapic)
		lapic_wr(LAPIC_EOI, 0);
}

static uint32_t ioapic_rd(uint32_t reg)
{
	arch_mmio_wr32(ioapic, reg);
	return arch_mmio_rd32(ioapic + 4);
}

static void ioapic_wr(uint32_t reg, uint32_t v)
{
	arch_mmio_wr32(ioapic, reg);
	arch_mmio_wr32(ioapic + 4, v);
}

static bool checksum_ok(const uint8_t *p, size_t n)
{
	uint8_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s == 0;
}

// The loader's copy of the RSDP, else (a BIOS boot only: UEFI firmware has
// no BIOS data area, and its low memory holds whatever was left there) the
// ACPI 6.x 5.2.5.1 scan of the EBDA's first KiB and the ROM area.
static uint64_t find_rsdp(uint64_t hint, bool bios_scan)
{
	if (hint || !bios_scan)
		return hint;
	uint64_t ebda = (uint64_t)(*(uint16_t *)arch_p2v(0x40e)) << 4;
	uint64_t ranges[2][2] = { { ebda, ebda + 1024 }, { 0xe0000, 0x100000 } };
	for (int r = 0; r < 2; r++)
		for (uint64_t a = ranges[r][0]; a && a < ranges[r][1]; a += 16)
			if (!memcmp(arch_p2v(a), "RSD PTR ", 8) && checksum_ok(arch_p2v(a), 20))
				return a;
	return 0;
}

// MADT entries: ACPI 6.x, 5.2.12 (types 0 processor LAPIC, 1 IOAPIC,
// 2 source override, 9 processor x2APIC).
static void parse_madt(const uint8_t *madt)
{
	uint32_t len = *(const uint32_t *)(madt + 4);
	lapic_pa = *(const uint32_t *)(madt + 36);
	for (uint32_t off = 44; off + 2 <= len; off += madt[off + 1]) {
		const uint8_t *e = madt + off;
		if (e[1] < 2)
			break;
		if ((e[0] == 0 && e[1] >= 8) || (e[0] == 9 && e[1] >= 16)) {
			uint32_t flags = *(const uint32_t *)(e + (e[0] == 0 ? 4 : 8));
			uint32_t id = e[0] == 0 ? e[3] : *(const uint32_t *)(e + 4);
			if ((flags & 3) && ncpu_madt < MAXCPU && id < 255)
				cpu_apic_ids[ncpu_madt++] = id;
		} else if (e[0] == 1 && ioapic_gsi_base == 0 && ioapic_pa == 0xfec00000) {
			ioapic_pa = *(const uint32_t *)(e + 4);
			ioapic_gsi_base = (int)*(const uint32_t *)(e + 8);
		} else if (e[0] == 2 && e[3] < 16) {
			isa_override[e[3]].gsi = (int)*(const uint32_t *)(e + 4);
			isa_override[e[3]].flags = *(const uint16_t *)(e + 8);
		}
	}
}

static const uint8_t *find_table(uint64_t rsdp, const char *sig)
{
	const uint8_t *r = arch_p2v(rsdp);
	bool x = r[15] >= 2 && *(const uint64_t *)(r + 24);
	uint64_t sdt_pa = x ? *(const uint64_t *)(r + 24) : *(const uint32_t *)(r + 16);
	if (!sdt_pa) // an RSDP of revision 2 may name an XSDT only
		return NULL;
	const uint8_t *sdt = arch_p2v(sdt_pa);
	if (memcmp(sdt, x ? "XSDT" : "RSDT", 4))
		return NULL;
	uint32_t len = *(const uint32_t *)(sdt + 4), esz = x ? 8 : 4;
	for (uint32_t off = 36; off + esz <= len; off += esz) {
		uint64_t pa = x ? *(const uint64_t *)(sdt + off) : *(const uint32_t *)(sdt + off);
		const uint8_t *t = arch_p2v(pa);
		if (!memcmp(t, sig, 4))
			return t;
	}
	return NULL;
}

static void pic_disable(void)
{
	// Remap the 8259s away from the exception vectors, then mask them all.
	static const uint8_t seq[][2] = { { 0x20, 0x11 }, { 0xa0, 0x11 }, { 0x21, 0xf0 },
					  { 0xa1, 0xf8 }, { 0x21, 4 },    { 0xa1, 2 },
					  { 0x21, 1 },    { 0xa1, 1 },    { 0x21, 0xff },
					  { 0xa1, 0xff } };
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		arch_outb(seq[i][0], seq[i][1]);
}

void apic_init(uint64_t rsdp_hint, bool bios_scan,
	       volatile uint32_t *(*map_mmio)(paddr_t pa, uint64_t len))
{
	for (int i = 0; i < 16; i++)
		isa_override[i].gsi = i;
	uint64_t rsdp = find_rsdp(rsdp_hint, bios_scan);
	const uint8_t *madt = rsdp ? find_table(rsdp, "APIC") : NULL;
	if (madt)
		parse_madt(madt);
	pic_disable();
	lapic = map_mmio(lapic_pa, PAGE_SIZE);
	ioapic = map_mmio(ioapic_pa, PAGE_SIZE);
	ioapic_pins = (int)((ioapic_rd(1) >> 16) & 0xff) + 1;
	for (int i = 0; i < ioapic_pins; i++)
		ioapic_wr(0x10 + 2 * i, 1u << 16); // masked
	lapic_enable();
	pr_info("apic: lapic %lx ioapic %lx (%d pins, gsi base %d), madt %s\n", lapic_pa,
		ioapic_pa, ioapic_pins, ioapic_gsi_base, madt ? "found" : "absent (defaults)");
}

uint32_t lapic_id(void) { return lapic_rd(LAPIC_ID) >> 24; }

int apic_cpus(uint32_t *ids, int max)
{
	int n = 0;
	for (int i = 0; i < ncpu_madt && n < max; i++)
		ids[n++] = cpu_apic_ids[i];
	return n;
}

// This processor's LAPIC as the boot processor's: enabled, no priority
// threshold, spurious vector 0xff.
void lapic_enable(void)
{
	lapic_wr(LAPIC_TPR, 0);
	lapic_wr(LAPIC_SVR, 0x100 | 0xff);
}

// Interrupt command register (SDM vol. 3A, 11.6.1): the destination in the
// high word, then the low word sends; wait until the LAPIC took it.
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
void lapic_send_ipi(uint32_t apic_id, uint32_t lo)
{
	lapic_wr(LAPIC_ICR_HI, apic_id << 24);
	lapic_wr(LAPIC_ICR_LO, lo);
	while (lapic_rd(LAPIC_ICR_LO) & (1u << 12))
		arch_pause();
}

int ioapic_route_to(int gsi, int vector, bool level, bool active_low, uint32_t apic_id)
{
	int pin = gsi - ioapic_gsi_base;
	if (pin < 0 || pin >= ioapic_pins)
		return -1;
	uint32_t lo = (uint32_t)vector | (level ? 1u << 15 : 0) | (active_low ? 1u << 13 : 0);
	ioapic_wr(0x10 + 2 * pin, 1u << 16); // masked while the destination changes
	ioapic_wr(0x11 + 2 * pin, apic_id << 24);
	ioapic_wr(0x10 + 2 * pin, lo);
	return 0;
}

int ioapic_route(int gsi, int vector, bool level, bool active_low)
{
	return ioapic_route_to(gsi, vector, level, active_low, lapic_id());
}

void ioapic_mask(int gsi, bool masked)
{
	int pin = gsi - ioapic_gsi_base;
	if (pin < 0 || pin >= ioapic_pins)
		return;
	uint32_t lo = ioapic_rd(0x10 + 2 * pin);
	ioapic_wr(0x10 + 2 * pin, masked ? lo | (1u << 16) : lo & ~(1u << 16));
}

// MPS INTI flags: polarity bits 0-1 (3 = active low), trigger 2-3 (3 = level).
int isa_irq_to_gsi(int irq, bool *level, bool *active_low)
{
	uint16_t f = isa_override[irq].flags;
	*active_low = (f & 3) == 3;
	*level = ((f >> 2) & 3) == 3;
	return isa_override[irq].gsi;
}
