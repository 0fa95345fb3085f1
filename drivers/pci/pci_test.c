// Self-test of MSI delivery with QEMU's "edu" teaching device (1234:11e8,
// -device edu): it has an MSI capability and raises an interrupt when its
// register 0x60 is written (QEMU hw/misc/edu.c). Run by e1000test=msi.
#include "pci.h"
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include "dma.h"

#define EDU_IDENT 0x00
#define EDU_IRQ_STATUS 0x24
#define EDU_IRQ_RAISE 0x60
#define EDU_IRQ_ACK 0x64

struct edu {
	volatile uint32_t *regs;
	volatile int irqs;
	volatile uint32_t last;
};

static void edu_intr(void *arg)
{
	struct edu *e = arg;
	uint32_t st = arch_mmio_rd32(e->regs + EDU_IRQ_STATUS / 4);
	if (!st)
		return;
	e->last = st;
	e->irqs++;
	arch_mmio_wr32(e->regs + EDU_IRQ_ACK / 4, st);
}

static struct pci_dev *find(uint16_t vendor, uint16_t device)
{
	for (int i = 0; i < pci_count(); i++)
		if (pci_get(i)->vendor == vendor && pci_get(i)->device == device)
			return pci_get(i);
	return NULL;
}

// Raises `n` interrupts one at a time, idling until each arrives (bounded).
static int raise_all(struct edu *e, int n)
{
	for (int i = 0; i < n; i++) {
		int before = e->irqs;
		arch_mmio_wr32(e->regs + EDU_IRQ_RAISE / 4, 1u << (i % 8));
		uint64_t t0 = timer_now_us();
		while (e->irqs == before && timer_now_us() - t0 < 1000000)
			arch_idle();
		if (e->irqs == before || e->last != 1u << (i % 8))
			return i;
	}
	return n;
}

// Returns 0 when the edu device's MSI interrupts all arrived on their vector.
int pci_selftest_msi(void)
{
	static struct edu e;
	struct pci_dev *p = find(0x1234, 0x11e8);
	if (!p || !p->msi_cap || !p->bar[0].size) {
		kprintf("  msi: no edu device with MSI (-device edu)\n");
		return 1;
	}
	pci_enable(p);
	e.regs = dma_map_mmio(p->bar[0].base, PAGE_SIZE);
	int v = pci_irq_attach(p, edu_intr, &e);
	int got = v >= 0 ? raise_all(&e, 16) : 0;
	kprintf("  msi: edu %02x:%02x.%x ident %x, vector %d (%s), %d of 16 interrupts\n", p->bus,
		p->dev, p->fn, arch_mmio_rd32(e.regs + EDU_IDENT / 4), v, p->irq_msi ? "msi" : "intx",
		got);
	pci_irq_detach(p);
	int before = e.irqs;
	arch_mmio_wr32(e.regs + EDU_IRQ_RAISE / 4, 1);
	for (int i = 0; i < 5; i++)
		arch_idle();
	bool quiet = e.irqs == before; // MSI disabled: nothing delivered
	arch_mmio_wr32(e.regs + EDU_IRQ_ACK / 4, 1);
	pci_disable(p);
	return v >= 0 && p->irq_msi == false && got == 16 && quiet ? 0 : 1;
}
