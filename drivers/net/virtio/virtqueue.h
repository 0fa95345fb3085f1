// Split virtqueues (virtio 1.1, 2.6): the descriptor table, the available
// ring the driver writes and the used ring the device writes, in zeroed
// frames from dma.h, plus the driver's shadow of them (free descriptors,
// its next available and used indices). One struct virtq per queue; the
// queue's owner (virtio_net.c) decides what its buffers are.
//
// Transport-independent: virtio_pci.c tells the device where the three
// parts are and where the queue's doorbell is (q->notify).
#ifndef VIRTQUEUE_H
#define VIRTQUEUE_H
#include "arch/x86_64/arch.h"

#define VIRTQ_MAX_SIZE 1024 // largest queue this driver sets up

// Descriptor flags (2.6.5).
#define VIRTQ_DESC_F_NEXT 1  // the chain continues at `next`
#define VIRTQ_DESC_F_WRITE 2 // device-writable (otherwise device-readable)
#define VIRTQ_DESC_F_INDIRECT 4 // the buffer is a table of descriptors (2.6.5.3)
// Reserved feature bit (6): the driver may use indirect descriptors.
#define VIRTIO_RING_F_INDIRECT_DESC (1ull << 28)
// Descriptors in one indirect table (virtq_add_indirect) at most.
#define VIRTQ_INDIRECT_MAX 8
// Available ring flags (2.6.7): please do not interrupt for this queue.
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
// Used ring flags (2.6.10): the device does not want notifications now.
#define VIRTQ_USED_F_NO_NOTIFY 1

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
struct virtq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];
};
struct virtq_used_elem {
	uint32_t id;  // head of the chain the device used
	uint32_t len; // bytes it wrote into the chain
};
struct virtq_used {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem ring[];
};

// One buffer of a chain for virtq_add.
struct virtq_buf {
	paddr_t pa;
	uint32_t len;
	bool write; // the device writes it
};

struct virtq {
	uint16_t index; // queue number on the device
	uint16_t size;  // entries, a power of 2
	paddr_t pa;     // all three parts, physically contiguous
	int frames;
	paddr_t desc_pa, avail_pa, used_pa;
	volatile struct virtq_desc *desc;
	volatile struct virtq_avail *avail;
	volatile struct virtq_used *used;
	uint16_t avail_idx; // the driver's next available index (published by virtq_publish)
	uint16_t last_used; // the first used entry not yet consumed
	uint16_t free_head, nfree; // free descriptors, linked through `next`
	volatile uint16_t *notify; // the queue's doorbell (virtio_pci.c)
	// Indirect tables (virtq_alloc_indirect): VIRTQ_INDIRECT_MAX
	// descriptors for each entry, the one of the head that points to it.
	paddr_t ind_pa;
	int ind_frames;
	volatile struct virtq_desc *ind;
	uint64_t kicks, kicks_skipped; // notifications sent / left out (NO_NOTIFY)
};

// Allocates and zeroes the three parts for `size` entries (a power of 2,
// at most VIRTQ_MAX_SIZE), every descriptor free. -E_NOMEM or -E_INVAL,
// changing nothing.
int virtq_alloc(struct virtq *q, uint16_t index, uint16_t size);
// Adds an indirect table for each entry, so that a chain of up to
// VIRTQ_INDIRECT_MAX buffers takes one descriptor of the ring (the device
// must have offered VIRTIO_RING_F_INDIRECT_DESC, and it was negotiated).
// -E_NOMEM, changing nothing.
int virtq_alloc_indirect(struct virtq *q);
// Frames the queue holds (ring and indirect tables).
static inline int virtq_frames(const struct virtq *q) { return q->frames + q->ind_frames; }
// Descriptors of the ring a chain of n buffers takes: one when it goes in
// an indirect table (the queue has them, the chain fits one), else n.
static inline int virtq_need(const struct virtq *q, int n)
{
	return q->ind && n <= VIRTQ_INDIRECT_MAX ? 1 : n;
}
// Frees the frames; the device must no longer use the queue (reset).
void virtq_free(struct virtq *q);

// Takes n free descriptors, fills and chains them, and puts the head in
// the next available slot (not yet visible: virtq_publish); in the head's
// indirect table, one descriptor of the ring, when the queue has tables
// and the chain fits one. The caller checked q->nfree >= virtq_need(q, n).
// Returns the head's index.
uint16_t virtq_add(struct virtq *q, const struct virtq_buf *b, int n);
// Puts an already built chain in the next available slot.
void virtq_push(struct virtq *q, uint16_t head);
// Makes the pushed heads visible to the device (2.6.13.3).
void virtq_publish(struct virtq *q);
// Notifies the device unless it asked not to be (2.6.13.4, 2.6.10).
// Returns whether the doorbell was written.
bool virtq_kick(struct virtq *q);
// Copies chain `head`'s descriptors (its table's, for an indirect one)
// into out[0..max); returns how many.
int virtq_chain(struct virtq *q, uint16_t head, struct virtq_buf *out, int max);
// Returns chain `head`'s descriptors of the ring to the free list (one for
// an indirect chain); returns how many.
int virtq_free_chain(struct virtq *q, uint16_t head);

// Used entries the device has written and the driver not consumed yet.
uint16_t virtq_used_count(struct virtq *q);
// The k-th of those (k < virtq_used_count), without consuming it.
struct virtq_used_elem virtq_used_peek(struct virtq *q, uint16_t k);
void virtq_used_consume(struct virtq *q, uint16_t n);

// Asks the device to interrupt (on) or not (off) when it uses buffers
// (2.6.7). Off is advice the device may miss; on followed by
// virtq_used_count sees every entry written before the device read the
// flag (both sides order with a full barrier), so none is lost.
void virtq_intr(struct virtq *q, bool on);

// Full barrier: stores before it are visible before loads after it.
static inline void virtq_mb(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
