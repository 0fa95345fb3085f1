// virtio-net driver: probe table, attach (reset, features, queues, receive
// buffers, interrupt, DRIVER_OK), the interrupt (ISR: queue and
// configuration changes), receive-interrupt control, link state,
// counters, detach. One struct vnet_dev per NIC owns its transport
// windows, its queues (virtqueue.c), the frames posted to them and its
// counters; send and receive are in virtio_net_ring.c.
#include "virtio_net_dev.h"
#include "dma.h"
#include "kprintf.h"
#include "arch/x86_64/timer.h"
#include "arch/x86_64/smp.h"
#include <err.h>
#include <string.h>

// Features (5.1.3, 6): VERSION_1 (the modern interface; header and
// framing rules), MAC and MRG_RXBUF are required (the receive scheme
// depends on them); STATUS gives link state; CTRL_VQ with CTRL_RX lets
// the receive filter be programmed (a device without them passes every
// frame, which the I/O manager's own check then drops); MQ, with CTRL_VQ
// and MSI-X, when netdev_queues() asks for several queue pairs;
// INDIRECT_DESC puts a sent packet's chain (the virtio-net header, the
// wire header, up to NETDEV_MAX_SEGS - 1 payload pieces) in a table of
// its own, so it takes one entry of the transmit ring instead of 2 to 7:
// a 128-packet call of 1500-byte frames (3 buffers each) then fits a
// 256-entry ring in one go, where otherwise it stops at 85 and waits for
// the device. No
// offloads: no CSUM, no GUEST_* or HOST_* segmentation, no EVENT_IDX, no
// RSS (the device's own steering: the host's tap steers, see
// docs/design.md, "Multiqueue NICs").
#define VNET_NEED (VIRTIO_F_VERSION_1 | VIRTIO_NET_F_MAC | VIRTIO_NET_F_MRG_RXBUF)
#define VNET_WANT (VIRTIO_NET_F_STATUS | VIRTIO_NET_F_CTRL_VQ | VIRTIO_NET_F_CTRL_RX | \
		   VIRTIO_RING_F_INDIRECT_DESC)
_Static_assert(1 + NETDEV_MAX_SEGS <= VIRTQ_INDIRECT_MAX, "a sent chain fits an indirect table");

static struct vnet_dev nics[NETDEV_MAX];

// ---- interrupts and link ----

static bool read_link(struct vnet_dev *d)
{
	if (!(d->features & VIRTIO_NET_F_STATUS))
		return true; // 5.1.4: without STATUS the link is assumed up
	return vpci_config16(&d->vp, VNET_CFG_STATUS) & VIRTIO_NET_S_LINK_UP;
}

// 4.1.5.4: a configuration change; the only field that changes here is
// status (2.1: the device may also ask for a reset, which we only report).
static void config_changed(struct vnet_dev *d)
{
	if (vpci_status(&d->vp) & VIRTIO_S_NEEDS_RESET)
		pr_err("virtio-net %d: device needs a reset\n", d->nd.index);
	bool up = read_link(d);
	if (up == d->link)
		return;
	d->link = up;
	d->st.link_changes++;
	kprintf("virtio-net %d: link %s\n", d->nd.index, up ? "up" : "down");
	netdev_link_change(&d->nd, up);
}

// Calls the stack's rx_ready. The stack may unmask from inside it and
// find frames pending, which calls rx_ready again: that nested call is
// turned into one more round of this loop, so the stack never nests.
static void rx_ready(struct vnet_dev *d)
{
	if (d->in_rx_ready) {
		d->rx_ready_again = true;
		return;
	}
	d->in_rx_ready = true;
	do {
		d->rx_ready_again = false;
		netdev_rx_ready(&d->nd);
	} while (d->rx_ready_again && d->rx_irq_on);
	d->in_rx_ready = false;
}

// Several queue pairs (MSI-X): a vector per receive queue, each on a CPU
// of its own choosing, and one for configuration changes. No ISR to read.
static void vnet_rxq_intr(void *arg)
{
	struct vnet_rx *r = arg;
	struct vnet_dev *d = r->d;
	d->st.irqs++;
	d->st.rxq_irqs[r - d->rx]++;
	if (d->rx_irq_on)
		rx_ready(d);
}

static void vnet_config_intr(void *arg)
{
	struct vnet_dev *d = arg;
	d->st.irqs++;
	config_changed(d);
}

// 4.1.5.5: reading the ISR acknowledges it and drops INTx; 0 means
// another function on a shared line. The transmit queue never asks for
// interrupts; a queue interrupt with receive masked is a late one.
static void vnet_intr(void *arg)
{
	struct vnet_dev *d = arg;
	uint8_t isr = vpci_isr(&d->vp);
	if (!isr)
		return;
	d->st.irqs++;
	if (isr & VIRTIO_ISR_CONFIG)
		config_changed(d);
	if ((isr & VIRTIO_ISR_QUEUE) && d->rx_irq_on)
		rx_ready(d);
}

// Unmasking asks the device for interrupts again (2.6.7) and then looks
// at the used ring: a device cannot interrupt for entries it wrote while
// masked, so frames already there are signalled at once, from here, as
// the interrupt would have (and counted as one).
static void vnet_rx_irq(struct netdev *nd, bool enable)
{
	struct vnet_dev *d = vnet(nd);
	if (d->vector < 0 || enable == d->rx_irq_on)
		return;
	d->rx_irq_on = enable;
	bool pending = false;
	for (int i = 0; i < d->pairs; i++) {
		virtq_intr(&d->rx[i].q, enable);
		pending |= enable && virtq_used_count(&d->rx[i].q) > 0;
	}
	if (pending) {
		d->st.irqs++;
		rx_ready(d);
	}
}

// MSI-X entry 0 for configuration changes, 1 + i for receive queue i;
// the transmit and control queues have none.
static int msix_setup(struct vnet_dev *d)
{
	void *args[1 + VNET_PAIRS_MAX];
	void (*fns[1 + VNET_PAIRS_MAX])(void *);
	args[0] = d, fns[0] = vnet_config_intr;
	for (int i = 0; i < d->pairs; i++)
		args[1 + i] = &d->rx[i], fns[1 + i] = vnet_rxq_intr;
	int v = pci_msix_attach(d->vp.pci, 1 + d->pairs, fns, args);
	if (v < 0)
		return v;
	uint32_t me = smp_apic_id(arch_cpu_id());
	int r = vpci_config_vector(&d->vp, 0);
	for (int i = 0; i < d->pairs && r == 0; i++) {
		d->rx[i].apic_id = me;
		r = vpci_queue_vector(&d->vp, d->rx[i].q.index, (uint16_t)(1 + i));
	}
	if (r < 0)
		pci_irq_detach(d->vp.pci);
	return r < 0 ? r : v;
}

static void irq_setup(struct vnet_dev *d)
{
	d->vector = d->msix ? msix_setup(d) : pci_irq_attach(d->vp.pci, vnet_intr, d);
	if (d->vector < 0)
		pr_warn("virtio-net: %02x:%02x.%x: no interrupt (%s): polling only\n",
			d->vp.pci->bus, d->vp.pci->dev, d->vp.pci->fn, err_name(d->vector));
	d->rx_irq_on = d->vector >= 0;
	for (int i = 0; i < d->pairs; i++) {
		virtq_intr(&d->rx[i].q, d->rx_irq_on);
		virtq_intr(&d->txq[i], false); // completions are polled by tx_reclaim
	}
	if (d->ctrlq.size)
		virtq_intr(&d->ctrlq, false); // commands are waited for
}

// ---- control queue (5.1.6.5) ----

// The command's slot in the header frames, after the transmit header.
static paddr_t ctrl_slot(const struct vnet_dev *d)
{
	return d->hdr_pa + VNET_SLOT * ((paddr_t)d->rx_bufs + 1);
}

// One command with a one- or two-byte argument (alen, little-endian):
// class, command and argument the device reads, then the ack byte it
// writes; waits (bounded) for the device to use the chain. 0, -E_IO (the
// device refused), -E_TIMEOUT (it did not answer: the chain stays its,
// and the queue is not used again).
static int ctrl_cmd_n(struct vnet_dev *d, uint8_t cls, uint8_t cmd, uint16_t arg, uint32_t alen)
{
	paddr_t pa = ctrl_slot(d);
	uint8_t *b = arch_p2v(pa);
	b[0] = cls, b[1] = cmd, b[2] = (uint8_t)arg, b[3] = (uint8_t)(arg >> 8), b[8] = 0xff;
	const struct virtq_buf chain[2] = { { pa, 2 + alen, false }, { pa + 8, 1, true } };
	uint16_t head = virtq_add(&d->ctrlq, chain, 2);
	virtq_publish(&d->ctrlq);
	virtq_kick(&d->ctrlq);
	for (uint64_t t0 = timer_now_us(); !virtq_used_count(&d->ctrlq);) {
		if (timer_now_us() - t0 > VNET_CTRL_WAIT_US)
			return -E_TIMEOUT;
		arch_pause();
	}
	struct virtq_used_elem e = virtq_used_peek(&d->ctrlq, 0);
	virtq_used_consume(&d->ctrlq, 1);
	if (e.id != head)
		return -E_IO;
	virtq_free_chain(&d->ctrlq, head);
	return *(volatile uint8_t *)(b + 8) == VIRTIO_NET_OK ? 0 : -E_IO;
}

static int ctrl_cmd(struct vnet_dev *d, uint8_t cls, uint8_t cmd, uint8_t arg)
{
	return ctrl_cmd_n(d, cls, cmd, arg, 1);
}

// 5.1.6.5.5: the device uses receiveq1 and transmitq1 only until told
// how many pairs; a device that refuses keeps to one (its other queues
// get nothing: the driver keeps polling them, harmlessly).
static void pairs_setup(struct vnet_dev *d)
{
	if (d->pairs < 2)
		return;
	int r = ctrl_cmd_n(d, VIRTIO_NET_CTRL_MQ, VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET, (uint16_t)d->pairs, 2);
	if (r < 0)
		pr_warn("virtio-net: %d queue pairs not set (%s): queue 0 only\n", d->pairs, err_name(r));
}

// 5.1.6.5.1: the device starts promiscuous; promiscuous and all-multicast
// off leave it passing frames to its MAC and broadcast only (with
// netdev_promisc(), promiscuous stays on). A device without CTRL_RX, or
// one that refuses, keeps passing everything: the I/O manager drops and
// counts what is not for this NIC either way.
static void rx_filter_setup(struct vnet_dev *d)
{
	if (!(d->features & VIRTIO_NET_F_CTRL_RX) || netdev_promisc())
		return;
	int r = ctrl_cmd(d, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_PROMISC, 0);
	if (r == 0)
		r = ctrl_cmd(d, VIRTIO_NET_CTRL_RX, VIRTIO_NET_CTRL_RX_ALLMULTI, 0);
	d->rx_filter = r == 0;
	if (r < 0)
		pr_warn("virtio-net: receive filter not set (%s): every frame comes in\n", err_name(r));
}

// ---- attach ----

// 3.1.1 steps 1-6: reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK;
// then the MAC (5.1.5).
static int dev_init(struct vnet_dev *d)
{
	static const uint8_t zero[6];
	int r = vpci_reset(&d->vp);
	if (r < 0)
		return r;
	vpci_add_status(&d->vp, VIRTIO_S_ACKNOWLEDGE);
	vpci_add_status(&d->vp, VIRTIO_S_DRIVER);
	uint64_t want = VNET_WANT, offered = vpci_offered(&d->vp);
	if (!(offered & VIRTIO_NET_F_CTRL_VQ))
		want &= ~VIRTIO_NET_F_CTRL_RX; // 5.1.3.1: it depends on the control queue
	else if (netdev_queues() > 1 && d->vp.pci->msix_cap)
		want |= VIRTIO_NET_F_MQ; // 5.1.3.1: so does MQ; a vector per queue needs MSI-X
	r = vpci_negotiate(&d->vp, VNET_NEED, want, &d->features);
	if (r < 0)
		return r;
	d->pairs = 1;
	if (d->features & VIRTIO_NET_F_MQ) {
		int max = vpci_config16(&d->vp, VNET_CFG_MAX_PAIRS);
		d->pairs = netdev_queues() < max ? netdev_queues() : max;
		d->pairs = d->pairs < 1 ? 1 : d->pairs;
		d->msix = true;
	} else if (netdev_queues() > 1) {
		pr_warn("virtio-net: %02x:%02x.%x has no MQ%s: one queue pair\n", d->vp.pci->bus,
			d->vp.pci->dev, d->vp.pci->fn, d->vp.pci->msix_cap ? "" : " or MSI-X");
	}
	vpci_config_bytes(&d->vp, VNET_CFG_MAC, d->nd.mac, 6);
	return memcmp(d->nd.mac, zero, 6) && !(d->nd.mac[0] & 1) ? 0 : -E_IO;
}

// The largest power of 2 not above the device's maximum or ours.
static int queue_init(struct vnet_dev *d, struct virtq *q, uint16_t index, uint16_t cap)
{
	uint16_t max = vpci_queue_max(&d->vp, index), size = cap;
	while (size > max)
		size >>= 1;
	if (size < VNET_QMIN)
		return -E_NODEV;
	int r = virtq_alloc(q, index, size);
	return r < 0 ? r : vpci_queue_setup(&d->vp, q);
}

// Header frames: one 16-byte slot per receive buffer (of every queue), then the shared
// transmit header (zeroed: flags 0, GSO_NONE), then the control command.
static int hdr_alloc(struct vnet_dev *d)
{
	d->hdr_frames = (int)(PAGE_ROUND_UP(VNET_SLOT * ((uint64_t)d->rx_bufs + 2)) / PAGE_SIZE);
	d->hdr_pa = dma_alloc_contig(d->hdr_frames);
	if (!d->hdr_pa)
		return -E_NOMEM;
	d->hdr = arch_p2v(d->hdr_pa);
	return 0;
}

// 5.1.5: receive and transmit queues of each pair in use (the receive
// queues share VNET_RXQ_MAX entries), the control queue when negotiated,
// the receive queues filled.
static int queues_init(struct vnet_dev *d)
{
	uint16_t rxcap = VNET_RXQ_MAX;
	while (rxcap * d->pairs > VNET_RXQ_MAX)
		rxcap >>= 1;
	int r = 0;
	d->rx_bufs = 0;
	for (int i = 0; i < d->pairs && r == 0; i++) {
		struct vnet_rx *x = &d->rx[i];
		r = queue_init(d, &x->q, VNET_RXQ(i), rxcap);
		if (r == 0)
			r = queue_init(d, &d->txq[i], VNET_TXQ(i), VNET_TXQ_MAX);
		if (r == 0 && (d->features & VIRTIO_RING_F_INDIRECT_DESC))
			r = virtq_alloc_indirect(&d->txq[i]);
		x->d = d;
		x->base = d->rx_bufs;
		x->n = x->q.size / 2;
		d->rx_bufs += x->n;
	}
	uint16_t ctrl = d->features & VIRTIO_NET_F_MQ ?
		(uint16_t)(2 * vpci_config16(&d->vp, VNET_CFG_MAX_PAIRS)) : 2;
	if (r == 0 && (d->features & VIRTIO_NET_F_CTRL_VQ))
		r = queue_init(d, &d->ctrlq, ctrl, VNET_CTRLQ_MAX);
	if (r < 0)
		return r;
	r = hdr_alloc(d);
	return r < 0 ? r : vnet_rx_init(d);
}

static uint64_t frames_owned(const struct vnet_dev *d)
{
	uint64_t n = (uint64_t)d->ctrlq.frames + (uint64_t)d->hdr_frames + (uint64_t)vnet_rx_posted(d);
	for (int i = 0; i < d->pairs; i++)
		n += (uint64_t)virtq_frames(&d->rx[i].q) + (uint64_t)virtq_frames(&d->txq[i]);
	return n;
}

// Frees what attach took; the device must be reset (no DMA) first.
// Returns the frames freed.
static uint64_t release(struct vnet_dev *d)
{
	uint64_t n = frames_owned(d);
	vnet_tx_drop(d);
	vnet_rx_free_all(d);
	for (int i = 0; i < VNET_PAIRS_MAX; i++) {
		virtq_free(&d->rx[i].q);
		virtq_free(&d->txq[i]);
	}
	virtq_free(&d->ctrlq);
	if (d->hdr_pa)
		dma_free_contig(d->hdr_pa, d->hdr_frames);
	d->hdr_pa = 0;
	d->hdr_frames = 0;
	d->rx_bufs = 0;
	for (int i = 0; i < VNET_PAIRS_MAX; i++)
		d->rx[i].n = d->rx[i].nfree = 0;
	return n;
}

static const struct netdev_ops vnet_ops;

static void netdev_fill(struct vnet_dev *d)
{
	struct pci_dev *p = d->vp.pci;
	d->nd.ops = &vnet_ops;
	d->nd.family = "virtio-net";
	d->nd.model = p->device == 0x1041 ? "virtio 1.0" : "virtio 1.0 (transitional)";
	d->nd.min_frame = VNET_MIN_FRAME;
	d->nd.max_frame = VNET_MAX_FRAME;
	d->nd.rx_slots = d->rx_bufs;
	d->nd.tx_slots = d->txq[0].size;
	d->nd.rx_queues = d->pairs;
}

static void print_attach(struct vnet_dev *d)
{
	const uint8_t *m = d->nd.mac;
	struct pci_dev *p = d->vp.pci;
	kprintf("virtio-net %d: %s %04x:%04x at %02x:%02x.%x irq gsi %d vector %d "
		"mac %02x:%02x:%02x:%02x:%02x:%02x features %lx link %s, rx queue %u (%d buffers), "
		"tx queue %u, rx filter %s, %lu frames held\n",
		d->nd.index, d->nd.model, p->vendor, p->device, p->bus, p->dev, p->fn, p->irq_gsi,
		d->vector, m[0], m[1], m[2], m[3], m[4], m[5], d->features, d->link ? "up" : "down",
		d->rx[0].q.size, d->rx_bufs, d->txq[0].size, d->rx_filter ? "mac+broadcast" : "off (every frame)",
		frames_owned(d));
	if (d->msix)
		kprintf("virtio-net %d: %d queue pair%s, msi-x vectors %d..%d (configuration, then "
			"receive queue 0..%d), sends on the pair whose receive interrupt the sending "
			"CPU takes\n", d->nd.index, d->pairs, d->pairs == 1 ? "" : "s", p->msix_vec[0],
			p->msix_vec[d->pairs], d->pairs - 1);
}

// The device is live once DRIVER_OK is set (3.1.1 step 8); the receive
// buffers posted before are then announced. -E_NOMEM: the registry is
// full (the interrupt is detached again; the caller resets and frees).
static int start(struct vnet_dev *d)
{
	irq_setup(d);
	vpci_add_status(&d->vp, VIRTIO_S_DRIVER_OK);
	for (int i = 0; i < d->pairs; i++)
		vnet_rx_notify(d, &d->rx[i]);
	pairs_setup(d);
	rx_filter_setup(d);
	d->link = read_link(d);
	netdev_fill(d);
	if (netdev_register(&d->nd) < 0) {
		pci_irq_detach(d->vp.pci);
		return -E_NOMEM;
	}
	d->attached = true;
	print_attach(d);
	return 0;
}

// 3.1.1: a driver that gives up sets FAILED; reset first so the device
// drops the queues it was given before their frames are freed.
static void fail(struct vnet_dev *d, struct pci_dev *p, int r)
{
	if (d->vp.common) {
		vpci_reset(&d->vp);
		vpci_add_status(&d->vp, VIRTIO_S_FAILED);
	}
	release(d);
	pci_disable(p);
	pr_err("virtio-net: %02x:%02x.%x not attached: %s\n", p->bus, p->dev, p->fn, err_name(r));
}

static struct vnet_dev *free_nic(void)
{
	for (int i = 0; i < NETDEV_MAX; i++)
		if (!nics[i].attached)
			return &nics[i];
	return NULL;
}

static int vnet_attach(struct pci_dev *p, uintptr_t data)
{
	(void)data;
	struct vnet_dev *d = free_nic();
	if (!d || netdev_count() >= NETDEV_MAX) {
		pr_warn("virtio-net: more than %d NICs, %02x:%02x.%x ignored\n", NETDEV_MAX, p->bus,
			p->dev, p->fn);
		return -E_NOMEM;
	}
	*d = (struct vnet_dev){ .vector = -1, .tx_cur = -1, .rx_seen = -1, .rx_first = -1 };
	int r = vpci_init(&d->vp, p);
	if (r == 0)
		r = dev_init(d);
	if (r == 0)
		r = queues_init(d);
	if (r == 0)
		r = start(d);
	if (r < 0)
		fail(d, p, r);
	return r;
}

// 4.1.2: modern ID 0x1040 + 1 (network), transitional 0x1000.
static const struct pci_id vnet_ids[] = {
	{ 0x1af4, 0x1041, "virtio-net", vnet_attach, 0 },
	{ 0x1af4, 0x1000, "virtio-net", vnet_attach, 0 },
};

static uint64_t frames_owned_all(void)
{
	uint64_t n = 0;
	for (int i = 0; i < NETDEV_MAX; i++)
		if (nics[i].attached)
			n += frames_owned(&nics[i]);
	return n;
}

int virtio_net_probe_all(void)
{
	int n = pci_probe(vnet_ids, (int)(sizeof(vnet_ids) / sizeof(vnet_ids[0])));
	int all = 0;
	for (int i = 0; i < NETDEV_MAX; i++)
		all += nics[i].attached;
	pr_info("virtio-net: %d NIC(s) attached now, %d in all, %lu frames held\n", n, all,
		frames_owned_all());
	return n;
}

// ---- detach, control, counters ----

// 3.3 (device cleanup): reset, after which the device uses no buffer;
// only then are the frames it knew unpinned and freed.
static void vnet_detach(struct netdev *nd)
{
	struct vnet_dev *d = vnet(nd);
	struct pci_dev *p = d->vp.pci;
	if (vpci_reset(&d->vp) < 0)
		pr_err("virtio-net %d: reset did not complete\n", nd->index);
	pci_irq_detach(p);
	pci_disable(p);
	if (d->tx_n)
		pr_warn("virtio-net %d: detach drops %u unreclaimed sends\n", nd->index, d->tx_n);
	uint64_t n = release(d);
	pci_release(p);
	d->attached = false;
	pr_info("virtio-net %d: detached, %lu frames freed\n", nd->index, n);
}

static bool vnet_link_up(struct netdev *nd) { return read_link(vnet(nd)); }

static void vnet_get_stats(struct netdev *nd, struct netdev_stats *s)
{
	struct vnet_dev *d = vnet(nd);
	d->st.frames_owned = frames_owned(d);
	d->st.txq_moves = d->tx_moves;
	d->st.rxq_first = d->rx_first;
	*s = d->st;
}

static int vnet_irq_cpu(struct netdev *nd, uint32_t apic_id)
{
	struct vnet_dev *d = vnet(nd);
	int r = pci_irq_set_cpu(d->vp.pci, apic_id);
	for (int i = 0; i < d->pairs && r == 0 && d->msix; i++)
		d->rx[i].apic_id = apic_id;
	return r;
}

// MSI-X entry 1 + q.
static int vnet_rxq_irq_cpu(struct netdev *nd, int q, uint32_t apic_id)
{
	struct vnet_dev *d = vnet(nd);
	if (!d->msix || q < 0 || q >= d->pairs)
		return -E_INVAL;
	int r = pci_msix_set_cpu(d->vp.pci, 1 + q, apic_id);
	if (r == 0)
		d->rx[q].apic_id = apic_id;
	return r;
}

static const struct netdev_ops vnet_ops = {
	.tx_batch = vnet_tx_batch,
	.tx_reclaim = vnet_tx_reclaim,
	.rx_poll = vnet_rx_poll,
	.rx_refill = vnet_rx_refill,
	.rx_free_slots = vnet_rx_free_slots,
	.rx_irq = vnet_rx_irq,
	.link_up = vnet_link_up,
	.irq_cpu = vnet_irq_cpu,
	.rxq_irq_cpu = vnet_rxq_irq_cpu,
	.get_stats = vnet_get_stats,
	.detach = vnet_detach,
};

bool virtio_net_info(struct netdev *nd, struct virtio_net_info *out)
{
	if (!nd || nd->ops != &vnet_ops)
		return false;
	struct vnet_dev *d = vnet(nd);
	*out = (struct virtio_net_info){ .features = d->features, .rx_filter = d->rx_filter,
					 .rxq_size = d->rx[0].q.size,
					 .txq_size = d->txq[0].size, .vector = d->vector,
					 .tx_kicks_skipped = d->txq[0].kicks_skipped,
					 .rx_kicks_skipped = d->rx[0].q.kicks_skipped,
					 .rx_tail_copies = d->rx_tail_copies,
					 .rx_recycled = d->rx_recycled,
					 .rx_used_pending = virtq_used_count(&d->rx[0].q), .tx_queued = d->tx_n,
					 .tx_free_descs = d->txq[0].nfree, .pairs = d->pairs,
					 .tx_moves = d->tx_moves };
	return true;
}
