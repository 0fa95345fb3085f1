// Virtio over PCI, modern interface (virtio 1.1, 4.1): capabilities, BAR
// windows, status, features, queues, notifications, ISR, configuration.
#include "virtio_pci.h"
#include "dma.h"
#include "kprintf.h"
#include <err.h>

#define PCI_CAP_VENDOR 0x09 // vendor-specific capability: virtio structures (4.1.4)

// struct virtio_pci_cap (4.1.4): cfg_type at +3, bar at +4, offset at +8,
// length at +12; the notification capability adds its multiplier at +16.
#define CAP_TYPE 3
#define CAP_BAR 4
#define CAP_OFFSET 8
#define CAP_LENGTH 12
#define CAP_NOTIFY_MULT 16
enum { CFG_COMMON = 1, CFG_NOTIFY = 2, CFG_ISR = 3, CFG_DEVICE = 4, CFG_NTYPES = 5 };

// struct virtio_pci_common_cfg (4.1.4.3).
#define COMMON_DFSELECT 0x00
#define COMMON_DF 0x04
#define COMMON_GFSELECT 0x08
#define COMMON_GF 0x0c
#define COMMON_MSIX 0x10
#define COMMON_NUMQ 0x12
#define COMMON_STATUS 0x14
#define COMMON_CFGGEN 0x15
#define COMMON_Q_SELECT 0x16
#define COMMON_Q_SIZE 0x18
#define COMMON_Q_MSIX 0x1a
#define COMMON_Q_ENABLE 0x1c
#define COMMON_Q_NOFF 0x1e
#define COMMON_Q_DESC 0x20
#define COMMON_Q_DRIVER 0x28
#define COMMON_Q_DEVICE 0x30
#define COMMON_LEN 0x38
#define VIRTIO_MSI_NO_VECTOR 0xffff

#define RESET_SPINS 1000000 // status reads before a reset counts as stuck
#define CFG_TRIES 100       // configuration reads racing a change

// Field accessors of the natural width (4.1.3.1).
static uint8_t rd8(volatile uint8_t *b, uint32_t off) { return *(b + off); }
static uint16_t rd16(volatile uint8_t *b, uint32_t off) { return *(volatile uint16_t *)(b + off); }
static uint32_t rd32(volatile uint8_t *b, uint32_t off) { return arch_mmio_rd32(b + off); }
static void wr8(volatile uint8_t *b, uint32_t off, uint8_t v) { *(b + off) = v; }
static void wr16(volatile uint8_t *b, uint32_t off, uint16_t v) { *(volatile uint16_t *)(b + off) = v; }
static void wr32(volatile uint8_t *b, uint32_t off, uint32_t v) { arch_mmio_wr32(b + off, v); }
// A 64-bit field as two 32-bit halves, low first (4.1.3.1 allows it).
static void wr64(volatile uint8_t *b, uint32_t off, uint64_t v)
{
	wr32(b, off, (uint32_t)v);
	wr32(b, off + 4, (uint32_t)(v >> 32));
}

// One structure as its capability describes it.
struct vcap {
	uint8_t at; // capability offset in configuration space, 0: not found
	uint8_t bar;
	uint32_t offset, length;
};

// The first capability of each type (4.1.4: the driver SHOULD use the
// first it can), walking the list from the first vendor capability.
static void find_caps(struct pci_dev *p, struct vcap caps[CFG_NTYPES])
{
	uint8_t off = pci_find_cap(p, PCI_CAP_VENDOR);
	for (int i = 0; i < 48 && off >= 0x40; i++, off = pci_rd8(p, (uint8_t)(off + 1)) & 0xfc) {
		if (pci_rd8(p, off) != PCI_CAP_VENDOR)
			continue;
		uint8_t type = pci_rd8(p, (uint8_t)(off + CAP_TYPE));
		uint8_t bar = pci_rd8(p, (uint8_t)(off + CAP_BAR));
		if (type >= CFG_NTYPES || type == 0 || caps[type].at || bar >= PCI_NBARS)
			continue; // unknown types and reserved BAR numbers are ignored
		caps[type] = (struct vcap){ .at = off, .bar = bar,
					    .offset = pci_rd32(p, (uint8_t)(off + CAP_OFFSET)),
					    .length = pci_rd32(p, (uint8_t)(off + CAP_LENGTH)) };
	}
}

// dma_map_mmio windows are never unmapped (and each mapping may take
// page-table frames): one per (function, BAR), kept for a later attach.
#define WINDOWS 8
static struct window {
	struct pci_dev *pci;
	uint8_t bar;
	uint64_t lo, hi; // the part of the BAR mapped
	volatile uint8_t *va; // maps BAR offset lo
} windows[WINDOWS];

// The mapped BAR offset range [lo, hi) of `bar` that every structure in
// it needs; a window already there is reused when it covers them.
static volatile uint8_t *bar_window(struct pci_dev *p, uint8_t bar, uint64_t lo, uint64_t hi)
{
	struct window *free = NULL;
	for (int i = 0; i < WINDOWS; i++) {
		struct window *w = &windows[i];
		if (w->pci == p && w->bar == bar && w->lo <= lo && hi <= w->hi)
			return w->va + (lo - w->lo);
		if (!w->pci && !free)
			free = w;
	}
	if (!free)
		return NULL;
	*free = (struct window){ .pci = p, .bar = bar, .lo = lo, .hi = hi };
	free->va = (volatile uint8_t *)dma_map_mmio(p->bar[bar].base + lo, hi - lo);
	return free->va;
}

// Each structure lies inside a memory BAR; the window over a BAR spans
// the structures in it.
static int map_caps(struct pci_dev *p, const struct vcap caps[CFG_NTYPES],
		    volatile uint8_t *va[CFG_NTYPES])
{
	for (int t = 1; t < CFG_NTYPES; t++) {
		const struct pci_bar *b = &p->bar[caps[t].bar];
		if (!caps[t].at || !b->size || b->io || caps[t].length == 0 ||
		    (uint64_t)caps[t].offset + caps[t].length > b->size)
			return -E_NODEV;
	}
	for (int t = 1; t < CFG_NTYPES; t++) {
		uint64_t lo = caps[t].offset, hi = lo + caps[t].length;
		for (int u = 1; u < CFG_NTYPES; u++) {
			if (caps[u].bar != caps[t].bar)
				continue;
			lo = caps[u].offset < lo ? caps[u].offset : lo;
			hi = caps[u].offset + caps[u].length > hi ? caps[u].offset + caps[u].length : hi;
		}
		volatile uint8_t *w = bar_window(p, caps[t].bar, lo, hi);
		if (!w)
			return -E_NOMEM;
		va[t] = w + (caps[t].offset - lo);
	}
	return 0;
}

int vpci_init(struct virtio_pci *v, struct pci_dev *p)
{
	struct vcap caps[CFG_NTYPES] = { 0 };
	volatile uint8_t *va[CFG_NTYPES] = { 0 };
	find_caps(p, caps);
	if (caps[CFG_COMMON].length < COMMON_LEN || caps[CFG_NOTIFY].length < 2)
		return -E_NODEV;
	int r = map_caps(p, caps, va);
	if (r < 0)
		return r;
	*v = (struct virtio_pci){ .pci = p, .common = va[CFG_COMMON], .notify = va[CFG_NOTIFY],
				  .isr = va[CFG_ISR], .device = va[CFG_DEVICE],
				  .notify_len = caps[CFG_NOTIFY].length,
				  .device_len = caps[CFG_DEVICE].length };
	v->notify_mult = pci_rd32(p, (uint8_t)(caps[CFG_NOTIFY].at + CAP_NOTIFY_MULT));
	pci_enable(p);
	return 0;
}

int vpci_reset(struct virtio_pci *v)
{
	wr8(v->common, COMMON_STATUS, 0);
	for (int i = 0; i < RESET_SPINS; i++) {
		if (rd8(v->common, COMMON_STATUS) == 0)
			return 0;
		arch_pause();
	}
	return -E_TIMEOUT;
}

uint8_t vpci_status(struct virtio_pci *v) { return rd8(v->common, COMMON_STATUS); }

void vpci_add_status(struct virtio_pci *v, uint8_t bits)
{
	wr8(v->common, COMMON_STATUS, (uint8_t)(rd8(v->common, COMMON_STATUS) | bits));
}

uint64_t vpci_offered(struct virtio_pci *v)
{
	uint64_t offered = 0;
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr32(v->common, COMMON_DFSELECT, sel);
		offered |= (uint64_t)rd32(v->common, COMMON_DF) << (32 * sel);
	}
	return offered;
}

int vpci_negotiate(struct virtio_pci *v, uint64_t need, uint64_t want, uint64_t *got)
{
	uint64_t offered = vpci_offered(v);
	*got = offered & (need | want);
	if ((offered & need) != need)
		return -E_NODEV;
	for (uint32_t sel = 0; sel < 2; sel++) {
		wr32(v->common, COMMON_GFSELECT, sel);
		wr32(v->common, COMMON_GF, (uint32_t)(*got >> (32 * sel)));
	}
	vpci_add_status(v, VIRTIO_S_FEATURES_OK);
	return vpci_status(v) & VIRTIO_S_FEATURES_OK ? 0 : -E_NODEV;
}

uint16_t vpci_queue_max(struct virtio_pci *v, uint16_t index)
{
	if (index >= rd16(v->common, COMMON_NUMQ))
		return 0;
	wr16(v->common, COMMON_Q_SELECT, index);
	return rd16(v->common, COMMON_Q_SIZE);
}

// 4.1.5.1.3: select, size, addresses, vector, notify offset, enable.
int vpci_queue_setup(struct virtio_pci *v, struct virtq *q)
{
	wr16(v->common, COMMON_Q_SELECT, q->index);
	wr16(v->common, COMMON_Q_SIZE, q->size);
	wr64(v->common, COMMON_Q_DESC, q->desc_pa);
	wr64(v->common, COMMON_Q_DRIVER, q->avail_pa);
	wr64(v->common, COMMON_Q_DEVICE, q->used_pa);
	wr16(v->common, COMMON_Q_MSIX, VIRTIO_MSI_NO_VECTOR);
	uint64_t off = (uint64_t)rd16(v->common, COMMON_Q_NOFF) * v->notify_mult;
	if (off + 2 > v->notify_len)
		return -E_NODEV;
	q->notify = (volatile uint16_t *)(v->notify + off);
	wr16(v->common, COMMON_Q_ENABLE, 1);
	return 0;
}

// 4.1.4.3: the device reads back NO_VECTOR when it could not take one.
int vpci_config_vector(struct virtio_pci *v, uint16_t entry)
{
	wr16(v->common, COMMON_MSIX, entry);
	return rd16(v->common, COMMON_MSIX) == entry ? 0 : -E_NOMEM;
}

int vpci_queue_vector(struct virtio_pci *v, uint16_t index, uint16_t entry)
{
	wr16(v->common, COMMON_Q_SELECT, index);
	wr16(v->common, COMMON_Q_MSIX, entry);
	return rd16(v->common, COMMON_Q_MSIX) == entry ? 0 : -E_NOMEM;
}

uint8_t vpci_isr(struct virtio_pci *v) { return rd8(v->isr, 0); }

void vpci_config_bytes(struct virtio_pci *v, uint32_t off, uint8_t *buf, uint32_t len)
{
	for (int t = 0; t < CFG_TRIES; t++) {
		uint8_t gen = rd8(v->common, COMMON_CFGGEN);
		for (uint32_t i = 0; i < len; i++)
			buf[i] = off + i < v->device_len ? rd8(v->device, off + i) : 0;
		if (rd8(v->common, COMMON_CFGGEN) == gen)
			return;
	}
}

uint16_t vpci_config16(struct virtio_pci *v, uint32_t off)
{
	uint16_t val = 0;
	for (int t = 0; t < CFG_TRIES; t++) {
		uint8_t gen = rd8(v->common, COMMON_CFGGEN);
		val = off + 2 <= v->device_len ? rd16(v->device, off) : 0;
		if (rd8(v->common, COMMON_CFGGEN) == gen)
			break;
	}
	return val;
}
