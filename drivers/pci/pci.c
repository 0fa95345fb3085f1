// PCI bus: configuration mechanism #1 (ports 0xCF8/0xCFC, PCI Local Bus
// Specification 3.0, 3.2.2.3.2), a brute-force scan of buses 0-255, BAR
// sizing, the capability list, MSI (6.8.1), MSI-X (6.8.2) and shared INTx
// lines.
#include "pci.h"
#include "dma.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "kprintf.h"
#include <err.h>

#define CFG_ADDR 0xcf8
#define CFG_DATA 0xcfc

// Vectors handed to MSI functions: above the IOAPIC's (32-55) and the
// timer (0x40), below the spurious vector.
#define MSI_VEC_FIRST 0x50
#define MSI_VEC_LAST 0xef
#define LINE_HANDLERS 8 // functions sharing one INTx line
#define MAX_GSI 24      // IOAPIC pins that have a vector (VEC_IRQ_BASE + gsi)

// MSI capability layout (6.8.1): control at +2, address at +4, then either
// data at +8 (32-bit) or address high at +8 and data at +12 (64-bit).
#define MSI_CTRL 2
#define MSI_ADDR 4
#define MSI_CTRL_EN (1u << 0)
#define MSI_CTRL_64 (1u << 7)
#define MSI_CTRL_MME (7u << 4)
#define LAPIC_MSI_BASE 0xfee00000u
// MSI-X capability (6.8.2): control at +2 (table size - 1 in bits 10:0,
// function mask bit 14, enable bit 15), table offset and BIR at +4; each
// table entry is 16 bytes: address low, high, data, vector control (bit 0
// masks the entry).
#define MSIX_CTRL 2
#define MSIX_TABLE 4
#define MSIX_CTRL_SIZE 0x7ffu
#define MSIX_CTRL_MASKALL (1u << 14)
#define MSIX_CTRL_EN (1u << 15)
#define MSIX_ENTRY_WORDS 4
#define MSIX_VCTRL_MASK 1u
#define MSIX_HANDLERS (4 * PCI_MSIX_MAX) // entries of every function together

static struct pci_dev devs[PCI_MAX_DEVS];
static int ndevs;

struct handler {
	void (*fn)(void *);
	void *arg;
};

// One shared INTx line: the handlers of every function wired to it.
static struct line {
	bool registered; // trampoline installed on VEC_IRQ_BASE + gsi
	int n;
	struct handler h[LINE_HANDLERS];
} lines[MAX_GSI];

// One MSI vector, owned by the function it was first given to.
static struct handler msi[PCI_MAX_DEVS];
// One MSI-X vector each, owned by the (function, entry) it was first given
// to: msix_h[k] belongs to the vector msix_owner[k] records.
static struct handler msix_h[MSIX_HANDLERS];
static struct { struct pci_dev *p; int entry; } msix_owner[MSIX_HANDLERS];

static uint32_t cfg_addr(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
	return 0x80000000u | (uint32_t)bus << 16 | (uint32_t)dev << 11 | (uint32_t)fn << 8 |
	       (off & 0xfc);
}

static uint32_t cfg_rd32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t off)
{
	arch_outl(CFG_ADDR, cfg_addr(bus, dev, fn, off));
	return arch_inl(CFG_DATA);
}

uint32_t pci_rd32(const struct pci_dev *p, uint8_t off)
{
	return cfg_rd32(p->bus, p->dev, p->fn, off);
}

uint16_t pci_rd16(const struct pci_dev *p, uint8_t off)
{
	return (uint16_t)(pci_rd32(p, off) >> ((off & 2) * 8));
}

uint8_t pci_rd8(const struct pci_dev *p, uint8_t off)
{
	return (uint8_t)(pci_rd32(p, off) >> ((off & 3) * 8));
}

void pci_wr32(const struct pci_dev *p, uint8_t off, uint32_t v)
{
	arch_outl(CFG_ADDR, cfg_addr(p->bus, p->dev, p->fn, off));
	arch_outl(CFG_DATA, v);
}

void pci_wr16(const struct pci_dev *p, uint8_t off, uint16_t v)
{
	arch_outl(CFG_ADDR, cfg_addr(p->bus, p->dev, p->fn, off));
	arch_outw((uint16_t)(CFG_DATA + (off & 2)), v);
}

int pci_count(void) { return ndevs; }

struct pci_dev *pci_get(int idx) { return idx >= 0 && idx < ndevs ? &devs[idx] : NULL; }

// The size from the bits that stayed writable (lowest set bit of the mask).
static uint64_t bar_size(const struct pci_bar *b, uint32_t szlo, uint32_t szhi)
{
	if (b->io) {
		uint32_t m = szlo & 0xfffcu;
		return m ? (~m + 1) & 0xffffu : 0;
	}
	uint64_t m = szlo & ~0xfull;
	if (b->is64)
		m |= (uint64_t)szhi << 32;
	else if (m)
		m |= 0xffffffff00000000ull;
	return m ? ~m + 1 : 0;
}

// Size of a BAR: write all ones, read back the writable bits, restore
// (6.2.5.1). Decoding is off meanwhile so the transient address decodes
// nothing. Returns the number of BAR slots used (2 for a 64-bit BAR).
static int bar_probe(struct pci_dev *p, int i)
{
	uint8_t off = (uint8_t)(PCI_BAR0 + 4 * i);
	uint32_t lo = pci_rd32(p, off), hi = 0, szlo, szhi = 0;
	struct pci_bar *b = &p->bar[i];
	b->io = lo & 1;
	b->is64 = !b->io && ((lo >> 1) & 3) == 2 && i + 1 < PCI_NBARS;
	b->prefetch = !b->io && (lo & 8);
	pci_wr32(p, off, 0xffffffffu);
	szlo = pci_rd32(p, off);
	pci_wr32(p, off, lo);
	if (b->is64) {
		hi = pci_rd32(p, (uint8_t)(off + 4));
		pci_wr32(p, (uint8_t)(off + 4), 0xffffffffu);
		szhi = pci_rd32(p, (uint8_t)(off + 4));
		pci_wr32(p, (uint8_t)(off + 4), hi);
	}
	b->base = b->io ? lo & ~3u : ((uint64_t)hi << 32) | (lo & ~0xfu);
	b->size = bar_size(b, szlo, szhi);
	if (!b->size)
		b->base = 0;
	return b->is64 ? 2 : 1;
}

static void bars_probe(struct pci_dev *p)
{
	uint16_t cmd = pci_rd16(p, PCI_COMMAND);
	pci_wr16(p, PCI_COMMAND, cmd & ~(PCI_CMD_IO | PCI_CMD_MEM));
	for (int i = 0; i < PCI_NBARS;)
		i += bar_probe(p, i);
	pci_wr16(p, PCI_COMMAND, cmd);
}

// Walks the capability list (6.7), at most 48 entries so a looped list
// cannot hang the scan.
uint8_t pci_find_cap(const struct pci_dev *p, uint8_t id)
{
	if (!(pci_rd16(p, PCI_STATUS) & PCI_STATUS_CAPS))
		return 0;
	uint8_t off = pci_rd8(p, PCI_CAP_PTR) & 0xfc;
	for (int i = 0; i < 48 && off >= 0x40; i++) {
		if (pci_rd8(p, off) == id)
			return off;
		off = pci_rd8(p, (uint8_t)(off + 1)) & 0xfc;
	}
	return 0;
}

static void add_fn(uint8_t bus, uint8_t dev, uint8_t fn, uint32_t id)
{
	if (ndevs == PCI_MAX_DEVS) {
		pr_warn("pci: more than %d functions, %02x:%02x.%x ignored\n", PCI_MAX_DEVS, bus,
			dev, fn);
		return;
	}
	struct pci_dev *p = &devs[ndevs++];
	*p = (struct pci_dev){ .bus = bus, .dev = dev, .fn = fn, .irq_vector = -1, .irq_gsi = -1 };
	p->vendor = (uint16_t)id;
	p->device = (uint16_t)(id >> 16);
	uint32_t cls = pci_rd32(p, PCI_REVISION);
	p->rev = (uint8_t)cls;
	p->progif = (uint8_t)(cls >> 8);
	p->subclass = (uint8_t)(cls >> 16);
	p->class = (uint8_t)(cls >> 24);
	p->irq_line = pci_rd8(p, PCI_INT_LINE);
	p->irq_pin = pci_rd8(p, PCI_INT_PIN);
	if ((pci_rd8(p, PCI_HEADER_TYPE) & 0x7f) == 0) // bridges have other BARs
		bars_probe(p);
	p->msi_cap = pci_find_cap(p, PCI_CAP_MSI);
	p->msix_cap = pci_find_cap(p, PCI_CAP_MSIX);
}

static void scan_dev(uint8_t bus, uint8_t dev)
{
	uint32_t id = cfg_rd32(bus, dev, 0, PCI_VENDOR);
	if ((id & 0xffff) == 0xffff)
		return;
	add_fn(bus, dev, 0, id);
	bool multi = (cfg_rd32(bus, dev, 0, PCI_HEADER_TYPE & 0xfc) >> 16) & 0x80;
	for (uint8_t fn = 1; multi && fn < 8; fn++) {
		id = cfg_rd32(bus, dev, fn, PCI_VENDOR);
		if ((id & 0xffff) != 0xffff)
			add_fn(bus, dev, fn, id);
	}
}

static void print_dev(const struct pci_dev *p)
{
	kprintf("pci: %02x:%02x.%x %04x:%04x class %02x.%02x irq %u pin %u%s%s", p->bus, p->dev,
		p->fn, p->vendor, p->device, p->class, p->subclass, p->irq_line, p->irq_pin,
		p->msi_cap ? " msi" : "", p->msix_cap ? " msi-x" : "");
	for (int i = 0; i < PCI_NBARS; i++)
		if (p->bar[i].size)
			kprintf(" bar%d %s %lx+%lx", i, p->bar[i].io ? "io" : "mem", p->bar[i].base,
				p->bar[i].size);
	kprintf("\n");
}

void pci_init(void)
{
	ndevs = 0;
	for (int bus = 0; bus < 256; bus++)
		for (uint8_t dev = 0; dev < 32; dev++)
			scan_dev((uint8_t)bus, dev);
	for (int i = 0; i < ndevs; i++)
		if (log_level >= LOG_INFO)
			print_dev(&devs[i]);
	pr_info("pci: %d function(s)\n", ndevs);
}

void pci_enable(struct pci_dev *p)
{
	uint16_t cmd = pci_rd16(p, PCI_COMMAND) | PCI_CMD_MEM | PCI_CMD_MASTER;
	for (int i = 0; i < PCI_NBARS; i++)
		if (p->bar[i].size && p->bar[i].io)
			cmd |= PCI_CMD_IO;
	pci_wr16(p, PCI_COMMAND, cmd);
}

void pci_disable(struct pci_dev *p)
{
	uint16_t cmd = pci_rd16(p, PCI_COMMAND);
	pci_wr16(p, PCI_COMMAND, cmd & ~(PCI_CMD_MASTER | PCI_CMD_MEM | PCI_CMD_IO));
}

int pci_probe(const struct pci_id *ids, int n)
{
	int claimed = 0;
	for (int i = 0; i < ndevs; i++) {
		struct pci_dev *p = &devs[i];
		for (int k = 0; k < n && !p->driver; k++) {
			if (ids[k].vendor != p->vendor || ids[k].device != p->device)
				continue;
			if (ids[k].probe(p, ids[k].data) == 0) {
				p->driver = ids[k].name;
				claimed++;
			}
		}
	}
	return claimed;
}

void pci_release(struct pci_dev *p) { p->driver = NULL; }

// ---- interrupts ----

static void line_dispatch(void *arg)
{
	struct line *l = arg;
	for (int i = 0; i < l->n; i++)
		l->h[i].fn(l->h[i].arg);
}

static void msi_dispatch(void *arg)
{
	struct handler *h = arg;
	if (h->fn)
		h->fn(h->arg);
}

// The GSI and its trigger for an INTx line. The BIOS programs the ISA IRQ
// the line was steered to; a MADT override for that IRQ gives its GSI and,
// when it says level, its polarity (QEMU declares PCI IRQs level,
// active-high). Without one the PCI default holds: level, active low.
static int intx_gsi(const struct pci_dev *p, bool *active_low)
{
	bool level, low;
	if (p->irq_pin == 0 || p->irq_pin > 4 || p->irq_line >= 16)
		return -E_NODEV; // 0xff: not connected
	int gsi = isa_irq_to_gsi(p->irq_line, &level, &low);
	*active_low = level ? low : true;
	return gsi >= 0 && gsi < MAX_GSI ? gsi : -E_NODEV;
}

static int intx_attach(struct pci_dev *p, void (*fn)(void *), void *arg)
{
	bool low;
	int gsi = intx_gsi(p, &low);
	if (gsi < 0)
		return gsi;
	struct line *l = &lines[gsi];
	if (l->n == LINE_HANDLERS)
		return -E_NOMEM;
	if (!l->registered && irq_register(VEC_IRQ_BASE + gsi, line_dispatch, l) < 0)
		return -E_NOMEM; // another driver owns the vector
	l->registered = true;
	if (ioapic_route(gsi, VEC_IRQ_BASE + gsi, true, low) < 0)
		return -E_NODEV;
	l->h[l->n++] = (struct handler){ fn, arg };
	pci_wr16(p, PCI_COMMAND, pci_rd16(p, PCI_COMMAND) & ~PCI_CMD_INTX_OFF);
	p->irq_gsi = gsi;
	return VEC_IRQ_BASE + gsi;
}

// Finds the vector p owned before, or takes a free one.
static int msi_vector(struct pci_dev *p)
{
	if (p->irq_vector >= 0)
		return p->irq_vector;
	int slot = (int)(p - devs);
	for (int v = MSI_VEC_FIRST; v <= MSI_VEC_LAST; v++)
		if (irq_register(v, msi_dispatch, &msi[slot]) == 0)
			return v;
	return -E_NOMEM;
}

// Programs the MSI capability: one message, to this CPU's LAPIC, fixed
// delivery, edge (Intel SDM vol. 3A, 11.11 "Message Signalled Interrupts").
static int msi_attach(struct pci_dev *p, void (*fn)(void *), void *arg)
{
	int v = msi_vector(p);
	if (v < 0)
		return v;
	msi[p - devs] = (struct handler){ fn, arg };
	uint8_t c = p->msi_cap;
	uint16_t ctrl = pci_rd16(p, (uint8_t)(c + MSI_CTRL));
	uint32_t apic_id = arch_mmio_rd32(lapic_regs() + 0x20 / 4) >> 24;
	pci_wr32(p, (uint8_t)(c + MSI_ADDR), LAPIC_MSI_BASE | apic_id << 12);
	uint8_t data = (uint8_t)(c + 8);
	if (ctrl & MSI_CTRL_64) {
		pci_wr32(p, (uint8_t)(c + 8), 0);
		data = (uint8_t)(c + 12);
	}
	pci_wr16(p, data, (uint16_t)v);
	pci_wr16(p, (uint8_t)(c + MSI_CTRL), (uint16_t)((ctrl & ~MSI_CTRL_MME) | MSI_CTRL_EN));
	pci_wr16(p, PCI_COMMAND, pci_rd16(p, PCI_COMMAND) | PCI_CMD_INTX_OFF);
	return v;
}

// ---- MSI-X ----

static volatile uint32_t *msix_entry(struct pci_dev *p, int i)
{
	return p->msix_table + MSIX_ENTRY_WORDS * i;
}

// Maps the table once (the BAR its BIR names, at its offset).
static int msix_map(struct pci_dev *p, int n)
{
	uint8_t c = p->msix_cap;
	if (!c || (int)(pci_rd16(p, (uint8_t)(c + MSIX_CTRL)) & MSIX_CTRL_SIZE) + 1 < n || n > PCI_MSIX_MAX)
		return -E_NODEV;
	if (p->msix_table)
		return 0;
	uint32_t t = pci_rd32(p, (uint8_t)(c + MSIX_TABLE));
	const struct pci_bar *b = &p->bar[t & 7];
	uint64_t off = t & ~7u, len = (uint64_t)MSIX_ENTRY_WORDS * 4 * PCI_MSIX_MAX;
	if ((t & 7) >= PCI_NBARS || !b->size || b->io || off + len > b->size)
		return -E_NODEV;
	p->msix_table = dma_map_mmio(b->base + off, len);
	return p->msix_table ? 0 : -E_NOMEM;
}

// The handler slot of (p, entry): the one it owned before, or a free one
// with a vector of its own.
static int msix_slot(struct pci_dev *p, int entry)
{
	for (int k = 0; k < MSIX_HANDLERS; k++)
		if (msix_owner[k].p == p && msix_owner[k].entry == entry)
			return k;
	for (int k = 0; k < MSIX_HANDLERS; k++) {
		if (msix_owner[k].p)
			continue;
		for (int v = MSI_VEC_FIRST; v <= MSI_VEC_LAST; v++) {
			if (irq_register(v, msi_dispatch, &msix_h[k]) == 0) {
				msix_owner[k].p = p, msix_owner[k].entry = entry;
				p->msix_vec[entry] = (uint8_t)v;
				return k;
			}
		}
		return -E_NOMEM;
	}
	return -E_NOMEM;
}

static void msix_program(struct pci_dev *p, int i, uint32_t apic_id)
{
	volatile uint32_t *e = msix_entry(p, i);
	arch_mmio_wr32(e + 3, MSIX_VCTRL_MASK);
	arch_mmio_wr32(e + 0, LAPIC_MSI_BASE | apic_id << 12);
	arch_mmio_wr32(e + 1, 0);
	arch_mmio_wr32(e + 2, p->msix_vec[i]);
	arch_mmio_wr32(e + 3, 0);
}

int pci_msix_attach(struct pci_dev *p, int n, void (*const *fns)(void *), void *const *args)
{
	if (p->irq_gsi >= 0 || p->irq_msi || p->msix_n)
		return -E_EXIST;
	if (n < 1)
		return -E_NODEV;
	int r = msix_map(p, n);
	if (r < 0)
		return r;
	int slot[PCI_MSIX_MAX];
	for (int i = 0; i < n; i++)
		if ((slot[i] = msix_slot(p, i)) < 0)
			return slot[i];
	uint8_t c = (uint8_t)(p->msix_cap + MSIX_CTRL);
	uint32_t apic_id = arch_mmio_rd32(lapic_regs() + 0x20 / 4) >> 24;
	uint16_t ctrl = pci_rd16(p, c);
	pci_wr16(p, c, (uint16_t)(ctrl | MSIX_CTRL_EN | MSIX_CTRL_MASKALL));
	for (int i = 0; i < n; i++) {
		msix_h[slot[i]] = (struct handler){ fns[i], args[i] };
		msix_program(p, i, apic_id);
	}
	pci_wr16(p, PCI_COMMAND, pci_rd16(p, PCI_COMMAND) | PCI_CMD_INTX_OFF);
	pci_wr16(p, c, (uint16_t)((ctrl | MSIX_CTRL_EN) & ~MSIX_CTRL_MASKALL));
	p->msix_n = n;
	p->irq_vector = p->msix_vec[0];
	p->irq_arg = args[0];
	return p->irq_vector;
}

int pci_msix_set_cpu(struct pci_dev *p, int i, uint32_t apic_id)
{
	if (i < 0 || i >= p->msix_n)
		return -E_NODEV;
	msix_program(p, i, apic_id);
	return 0;
}

static void msix_detach(struct pci_dev *p)
{
	uint8_t c = (uint8_t)(p->msix_cap + MSIX_CTRL);
	pci_wr16(p, c, (uint16_t)(pci_rd16(p, c) & ~MSIX_CTRL_EN));
	for (int k = 0; k < MSIX_HANDLERS; k++)
		if (msix_owner[k].p == p)
			msix_h[k].fn = NULL; // the vector stays the entry's
	p->msix_n = 0;
}

int pci_irq_set_cpu(struct pci_dev *p, uint32_t apic_id)
{
	if (p->irq_vector < 0)
		return -E_NODEV;
	if (p->msix_n) { // every entry
		for (int i = 0; i < p->msix_n; i++)
			msix_program(p, i, apic_id);
		return 0;
	}
	if (p->irq_msi) { // the message's destination ID (SDM vol. 3A, 11.11.1)
		uint8_t c = p->msi_cap;
		pci_wr32(p, (uint8_t)(c + MSI_ADDR), LAPIC_MSI_BASE | apic_id << 12);
		return 0;
	}
	bool low;
	int gsi = intx_gsi(p, &low); // a shared line moves with every function on it
	return gsi < 0 ? gsi : ioapic_route_to(gsi, VEC_IRQ_BASE + gsi, true, low, apic_id) < 0 ? -E_NODEV : 0;
}

int pci_irq_attach(struct pci_dev *p, void (*fn)(void *), void *arg)
{
	if (p->irq_gsi >= 0 || (p->irq_msi && msi[p - devs].fn) || p->msix_n)
		return -E_EXIST;
	int v = p->msi_cap ? msi_attach(p, fn, arg) : intx_attach(p, fn, arg);
	if (v < 0)
		return v;
	p->irq_vector = v;
	p->irq_msi = p->msi_cap != 0;
	p->irq_arg = arg;
	return v;
}

static void intx_detach(struct pci_dev *p)
{
	struct line *l = &lines[p->irq_gsi];
	pci_wr16(p, PCI_COMMAND, pci_rd16(p, PCI_COMMAND) | PCI_CMD_INTX_OFF);
	for (int i = 0; i < l->n; i++) {
		if (l->h[i].arg == p->irq_arg) {
			l->h[i] = l->h[--l->n];
			break;
		}
	}
	if (l->n == 0)
		ioapic_mask(p->irq_gsi, true);
	p->irq_gsi = -1;
}

void pci_irq_detach(struct pci_dev *p)
{
	if (p->msix_n) {
		msix_detach(p);
	} else if (p->irq_msi) {
		uint8_t c = (uint8_t)(p->msi_cap + MSI_CTRL);
		pci_wr16(p, c, pci_rd16(p, c) & ~MSI_CTRL_EN);
		msi[p - devs].fn = NULL;
		p->irq_msi = false;
	} else if (p->irq_gsi >= 0) {
		intx_detach(p);
	}
}
