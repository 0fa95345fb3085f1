// PCI bus: configuration space (mechanism #1), enumeration, BARs, interrupts
// (MSI when the function has it, else INTx through the IOAPIC, shared lines
// dispatched to every handler; MSI-X, a vector per table entry, for a
// driver that asks for it), and the probe table drivers attach through.
// The bus owns one static table of the functions it found; drivers hold a
// pointer to their entry, which lives as long as the kernel.
#ifndef PCI_H
#define PCI_H
#include "arch/x86_64/arch.h"

#define PCI_MAX_DEVS 64
#define PCI_NBARS 6

// Configuration header offsets (PCI Local Bus Specification 3.0, 6.1).
#define PCI_VENDOR 0x00
#define PCI_DEVICE 0x02
#define PCI_COMMAND 0x04
#define PCI_STATUS 0x06
#define PCI_REVISION 0x08
#define PCI_PROGIF 0x09
#define PCI_SUBCLASS 0x0a
#define PCI_CLASS 0x0b
#define PCI_HEADER_TYPE 0x0e
#define PCI_BAR0 0x10
#define PCI_CAP_PTR 0x34
#define PCI_INT_LINE 0x3c
#define PCI_INT_PIN 0x3d

// Command register bits (6.2.2).
#define PCI_CMD_IO (1u << 0)
#define PCI_CMD_MEM (1u << 1)
#define PCI_CMD_MASTER (1u << 2)
#define PCI_CMD_INTX_OFF (1u << 10)
#define PCI_STATUS_CAPS (1u << 4) // capability list present (6.2.3)

#define PCI_CAP_MSI 0x05
#define PCI_CAP_MSIX 0x11
#define PCI_MSIX_MAX 9 // MSI-X entries a function may use (virtio-net: 8 queues + configuration)

struct pci_bar {
	uint64_t base; // bus address (I/O port number for an I/O BAR); 0 when absent
	uint64_t size;
	bool io, is64, prefetch;
};

struct pci_dev {
	uint8_t bus, dev, fn;
	uint16_t vendor, device;
	uint8_t class, subclass, progif, rev;
	uint8_t irq_line, irq_pin; // interrupt line as programmed by the BIOS; pin 1-4 = INTA-D, 0 none
	uint8_t msi_cap;           // offset of the MSI capability, 0 if none
	uint8_t msix_cap;          // offset of the MSI-X capability, 0 if none
	struct pci_bar bar[PCI_NBARS];
	const char *driver; // name of the driver that claimed it, NULL if free
	int irq_vector;     // vector its interrupt arrives on, -1 before pci_irq_attach
	bool irq_msi;
	int irq_gsi; // INTx only, -1 otherwise
	void *irq_arg; // the attached handler's argument (identifies it on a shared line)
	// MSI-X (pci_msix_attach): entries in use, their vectors (kept for a
	// later attach), the mapped table (never unmapped).
	int msix_n;
	uint8_t msix_vec[PCI_MSIX_MAX];
	volatile uint32_t *msix_table;
};

// Scans buses 0-255 once and prints what it found.
void pci_init(void);
int pci_count(void);
struct pci_dev *pci_get(int idx); // NULL past the end

uint32_t pci_rd32(const struct pci_dev *p, uint8_t off);
uint16_t pci_rd16(const struct pci_dev *p, uint8_t off);
uint8_t pci_rd8(const struct pci_dev *p, uint8_t off);
void pci_wr32(const struct pci_dev *p, uint8_t off, uint32_t v);
void pci_wr16(const struct pci_dev *p, uint8_t off, uint16_t v);

// Turns on memory (and I/O) decoding and bus mastering (DMA).
void pci_enable(struct pci_dev *p);
// Turns off bus mastering and decoding: the function can no longer DMA.
void pci_disable(struct pci_dev *p);
// Offset of capability `id` in the capability list, or 0.
uint8_t pci_find_cap(const struct pci_dev *p, uint8_t id);

// Routes the function's interrupt to fn(arg): MSI if it has the capability
// (an edge vector of its own), else its INTx line through the IOAPIC, level
// triggered, shared with other functions on the same line (every handler on
// the line runs; each must check its own device's cause register).
// Returns the vector, or -E_NODEV (no interrupt pin/line), -E_NOMEM (no free
// vector or handler slot), -E_EXIST (already attached).
int pci_irq_attach(struct pci_dev *p, void (*fn)(void *), void *arg);
// Sends its interrupt to the CPU whose LAPIC ID is apic_id (MSI: the
// message's destination; INTx: the IOAPIC pin, which moves every function
// sharing the line). -E_NODEV before pci_irq_attach.
int pci_irq_set_cpu(struct pci_dev *p, uint32_t apic_id);
// MSI-X (PCI 3.0, 6.8.2): table entries 0..n-1 each get a vector of their
// own, delivered to fns[i](args[i]) on this CPU; INTx and MSI are turned off.
// The driver then tells the device which entry each of its causes uses.
// Returns the first entry's vector, or -E_NODEV (no MSI-X capability, a
// table smaller than n or outside a memory BAR), -E_NOMEM (vectors),
// -E_EXIST (already attached). pci_irq_detach undoes it.
int pci_msix_attach(struct pci_dev *p, int n, void (*const *fns)(void *), void *const *args);
// Sends MSI-X entry i to the CPU whose LAPIC ID is apic_id. -E_NODEV when
// the entry is not in use.
int pci_msix_set_cpu(struct pci_dev *p, int i, uint32_t apic_id);
// Stops delivering the function's interrupt to its handler (masks MSI or
// MSI-X or, when it was the line's last handler, the IOAPIC pin).
void pci_irq_detach(struct pci_dev *p);

// Probe table: one entry per supported (vendor, device). pci_probe calls
// probe(p, data) for every unclaimed function matching an entry; a probe that
// returns 0 claims the function (p->driver = name).
struct pci_id {
	uint16_t vendor, device;
	const char *name;
	int (*probe)(struct pci_dev *p, uintptr_t data);
	uintptr_t data; // driver's per-model data (e.g. a chip variant)
};
// Returns how many functions were claimed.
int pci_probe(const struct pci_id *ids, int n);
// Releases a claim, so a later pci_probe may attach the function again.
void pci_release(struct pci_dev *p);

#endif
