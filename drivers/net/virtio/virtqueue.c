// Split virtqueues (virtio 1.1, 2.6): ring memory, the free-descriptor
// list, supplying chains (2.6.13) and reading the used ring (2.6.14).
#include "virtqueue.h"
#include "dma.h"
#include <err.h>

// Bytes of each part for `size` entries (2.6: the available ring and the
// used ring each carry a trailing 16-bit event field, unused here).
static uint64_t desc_bytes(uint16_t size) { return 16ull * size; }
static uint64_t avail_bytes(uint16_t size) { return 6ull + 2ull * size; }
static uint64_t used_bytes(uint16_t size) { return 6ull + 8ull * size; }

// Every descriptor on the free list, in index order.
static void free_list_init(struct virtq *q)
{
	for (uint16_t i = 0; i < q->size; i++)
		q->desc[i].next = (uint16_t)(i + 1 < q->size ? i + 1 : 0);
	q->free_head = 0;
	q->nfree = q->size;
}

// One contiguous run: descriptors (16-byte aligned), the available ring
// right after them (2-byte aligned), the used ring at the next 4-byte
// boundary (2.6, "Alignment requirements").
int virtq_alloc(struct virtq *q, uint16_t index, uint16_t size)
{
	if (size == 0 || size > VIRTQ_MAX_SIZE || (size & (size - 1)))
		return -E_INVAL;
	uint64_t used_off = (desc_bytes(size) + avail_bytes(size) + 3) & ~3ull;
	int frames = (int)(PAGE_ROUND_UP(used_off + used_bytes(size)) / PAGE_SIZE);
	paddr_t pa = dma_alloc_contig(frames);
	if (!pa)
		return -E_NOMEM;
	*q = (struct virtq){ .index = index, .size = size, .pa = pa, .frames = frames };
	q->desc_pa = pa;
	q->avail_pa = pa + desc_bytes(size);
	q->used_pa = pa + used_off;
	q->desc = arch_p2v(q->desc_pa);
	q->avail = arch_p2v(q->avail_pa);
	q->used = arch_p2v(q->used_pa);
	free_list_init(q);
	return 0;
}

static uint64_t table_bytes(void) { return 16ull * VIRTQ_INDIRECT_MAX; }

int virtq_alloc_indirect(struct virtq *q)
{
	int frames = (int)(PAGE_ROUND_UP(table_bytes() * q->size) / PAGE_SIZE);
	paddr_t pa = dma_alloc_contig(frames);
	if (!pa)
		return -E_NOMEM;
	q->ind_pa = pa;
	q->ind_frames = frames;
	q->ind = arch_p2v(pa);
	return 0;
}

void virtq_free(struct virtq *q)
{
	if (q->pa)
		dma_free_contig(q->pa, q->frames);
	if (q->ind_pa)
		dma_free_contig(q->ind_pa, q->ind_frames);
	*q = (struct virtq){ 0 };
}

static void fill(volatile struct virtq_desc *d, const struct virtq_buf *b, bool more)
{
	d->addr = b->pa;
	d->len = b->len;
	d->flags = (uint16_t)((b->write ? VIRTQ_DESC_F_WRITE : 0) | (more ? VIRTQ_DESC_F_NEXT : 0));
}

// 2.6.5.3.1: the table's descriptors chain by index within the table;
// the ring's descriptor has INDIRECT alone (never with NEXT), and the
// table's length. Its `next` is left as the free list linked it.
static uint16_t add_indirect(struct virtq *q, const struct virtq_buf *b, int n)
{
	uint16_t head = q->free_head;
	volatile struct virtq_desc *t = &q->ind[(uint64_t)head * VIRTQ_INDIRECT_MAX];
	for (int k = 0; k < n; k++) {
		fill(&t[k], &b[k], k + 1 < n);
		t[k].next = (uint16_t)(k + 1);
	}
	volatile struct virtq_desc *d = &q->desc[head];
	q->free_head = d->next;
	d->addr = q->ind_pa + (uint64_t)head * table_bytes();
	d->len = (uint32_t)(16 * n);
	d->flags = VIRTQ_DESC_F_INDIRECT;
	q->nfree--;
	virtq_push(q, head);
	return head;
}

// 2.6.13.1: descriptors from the free list, chained with NEXT; in the
// head's indirect table instead when the queue has tables and the chain fits.
uint16_t virtq_add(struct virtq *q, const struct virtq_buf *b, int n)
{
	if (n > 1 && virtq_need(q, n) == 1)
		return add_indirect(q, b, n);
	uint16_t head = q->free_head, i = head;
	for (int k = 0; k < n; k++) {
		volatile struct virtq_desc *d = &q->desc[i];
		uint16_t next = d->next;
		fill(d, &b[k], k + 1 < n);
		if (k + 1 < n)
			i = next;
		else
			q->free_head = next;
	}
	q->nfree = (uint16_t)(q->nfree - n);
	virtq_push(q, head);
	return head;
}

// 2.6.13.2: the head goes in the slot after the last one made available.
void virtq_push(struct virtq *q, uint16_t head)
{
	q->avail->ring[q->avail_idx & (q->size - 1)] = head;
	q->avail_idx++;
}

// 2.6.13.3: ring entries before idx (a write barrier; x86 keeps stores in
// order, the barrier also stops the compiler).
void virtq_publish(struct virtq *q)
{
	arch_wmb();
	q->avail->idx = q->avail_idx;
}

// 2.6.13.4 and 2.6.10 (no VIRTIO_F_EVENT_IDX): the new idx must be visible
// before the device's flags are read, or a device that just re-enabled
// notifications could miss the new buffers: a full barrier between them.
bool virtq_kick(struct virtq *q)
{
	virtq_mb();
	if (q->used->flags & VIRTQ_USED_F_NO_NOTIFY) {
		q->kicks_skipped++;
		return false;
	}
	*q->notify = q->index; // 4.1.5.2: the queue's index to its notify address
	q->kicks++;
	return true;
}

int virtq_chain(struct virtq *q, uint16_t head, struct virtq_buf *out, int max)
{
	volatile struct virtq_desc *base = q->desc;
	uint16_t i = head, mask = (uint16_t)(q->size - 1);
	if (q->ind && (q->desc[head].flags & VIRTQ_DESC_F_INDIRECT)) {
		base = &q->ind[(uint64_t)head * VIRTQ_INDIRECT_MAX];
		i = 0;
		mask = VIRTQ_INDIRECT_MAX - 1;
		max = max < VIRTQ_INDIRECT_MAX ? max : VIRTQ_INDIRECT_MAX;
	}
	int n = 0;
	while (n < max) {
		volatile struct virtq_desc *d = &base[i];
		out[n++] = (struct virtq_buf){ .pa = d->addr, .len = d->len,
					       .write = d->flags & VIRTQ_DESC_F_WRITE };
		if (!(d->flags & VIRTQ_DESC_F_NEXT))
			break;
		i = d->next & mask;
	}
	return n;
}

int virtq_free_chain(struct virtq *q, uint16_t head)
{
	uint16_t i = head;
	int n = 1;
	while ((q->desc[i].flags & VIRTQ_DESC_F_NEXT) && n < q->size) {
		i = q->desc[i].next & (q->size - 1);
		n++;
	}
	q->desc[i].next = q->free_head;
	q->free_head = head;
	q->nfree = (uint16_t)(q->nfree + n);
	return n;
}

// 2.6.14: entries up to used->idx are written; read them after idx (loads
// are not reordered with loads on x86; the fence orders the compiler).
uint16_t virtq_used_count(struct virtq *q)
{
	uint16_t n = (uint16_t)(q->used->idx - q->last_used);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return n;
}

struct virtq_used_elem virtq_used_peek(struct virtq *q, uint16_t k)
{
	volatile struct virtq_used_elem *e = &q->used->ring[(uint16_t)(q->last_used + k) & (q->size - 1)];
	return (struct virtq_used_elem){ .id = e->id, .len = e->len };
}

void virtq_used_consume(struct virtq *q, uint16_t n) { q->last_used = (uint16_t)(q->last_used + n); }

void virtq_intr(struct virtq *q, bool on)
{
	q->avail->flags = on ? 0 : VIRTQ_AVAIL_F_NO_INTERRUPT;
	if (on)
		virtq_mb(); // the flag is visible before the caller reads used->idx
}
