// Virtio over PCI, the modern (virtio 1.x) interface only (virtio 1.1,
// 4.1): the vendor capabilities that locate the common configuration,
// notification, ISR and device configuration structures in memory BARs,
// device status, feature negotiation, queue setup, notifications and the
// ISR. A transitional device (legacy I/O BAR too) is driven through its
// modern capabilities; a legacy-only one is refused.
#ifndef VIRTIO_PCI_H
#define VIRTIO_PCI_H
#include "arch/x86_64/arch.h"
#include "../../pci/pci.h"
#include "virtqueue.h"

// Device status bits (2.1).
#define VIRTIO_S_ACKNOWLEDGE 1
#define VIRTIO_S_DRIVER 2
#define VIRTIO_S_DRIVER_OK 4
#define VIRTIO_S_FEATURES_OK 8
#define VIRTIO_S_NEEDS_RESET 64
#define VIRTIO_S_FAILED 128

// Reserved feature bits (6).
#define VIRTIO_F_VERSION_1 (1ull << 32)

// ISR status bits (4.1.4.5).
#define VIRTIO_ISR_QUEUE 1
#define VIRTIO_ISR_CONFIG 2

struct virtio_pci {
	struct pci_dev *pci;
	volatile uint8_t *common; // struct virtio_pci_common_cfg (4.1.4.3)
	volatile uint8_t *notify; // notification area (4.1.4.4)
	volatile uint8_t *isr;    // ISR status byte (4.1.4.5)
	volatile uint8_t *device; // device-specific configuration (4.1.4.6)
	uint32_t notify_len, notify_mult, device_len;
};

// Finds the four structures, maps their BARs (once per function: windows
// are never unmapped, so a later attach reuses them) and enables memory
// decoding and bus mastering. -E_NODEV: no modern interface.
int vpci_init(struct virtio_pci *v, struct pci_dev *p);
// Device reset (2.1, 4.1.4.3): writes 0 and waits until status reads 0;
// the device then no longer touches memory. -E_TIMEOUT if it never does.
int vpci_reset(struct virtio_pci *v);
uint8_t vpci_status(struct virtio_pci *v);
void vpci_add_status(struct virtio_pci *v, uint8_t bits);
// The device's feature bits (3.1.1 step 4).
uint64_t vpci_offered(struct virtio_pci *v);
// Feature negotiation (3.1.1 steps 4-6): accepts offered & (need | want);
// -E_NODEV when a `need` bit is not offered or FEATURES_OK does not stick.
int vpci_negotiate(struct virtio_pci *v, uint64_t need, uint64_t want, uint64_t *got);
// Largest size of queue `index` (0: no such queue).
uint16_t vpci_queue_max(struct virtio_pci *v, uint16_t index);
// Gives the device queue q (4.1.5.1.3): size, the three addresses, no
// MSI-X vector, enable; sets q->notify. -E_NODEV for a bad notify offset.
int vpci_queue_setup(struct virtio_pci *v, struct virtq *q);
// MSI-X (4.1.4.3, 4.1.5.1.2): the table entry for configuration
// changes, and for queue `index`; -E_NOMEM when the device refuses it.
int vpci_config_vector(struct virtio_pci *v, uint16_t entry);
int vpci_queue_vector(struct virtio_pci *v, uint16_t index, uint16_t entry);
// Reads and thereby clears the ISR status (4.1.4.5), which also drops INTx.
uint8_t vpci_isr(struct virtio_pci *v);
// Device configuration, each field with its own width (4.1.3.1), read
// again while config_generation changes under the read (2.4.1): bytes
// [off, off+len) one at a time, or one 16-bit field.
void vpci_config_bytes(struct virtio_pci *v, uint32_t off, uint8_t *buf, uint32_t len);
uint16_t vpci_config16(struct virtio_pci *v, uint32_t off);
#endif
