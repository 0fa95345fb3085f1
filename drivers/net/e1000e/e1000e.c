// Intel 82574L (e1000e) driver: probe, attach (reset, MAC from the NVM,
// link, filters, rings to the NIC, moderation, MSI), interrupts, the
// netdev ops, counters, detach. One struct e1000e_dev per NIC
// (e1000e_dev.h); its rings are e1000e_ring.c's.
#include "e1000e_dev.h"
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include "dma.h"
#include <err.h>
#include <string.h>

// ITR (DS 10.2.4.2, 256 ns units): 500 = 128 us between interrupts at
// least, the floor QEMU's e1000e applies anyway and the e1000 driver's
// value. Only an interrupt that follows another within 128 us waits;
// during a batch receive interrupts are masked and the stack polls.
// RDTR = RADV = TIDV = TADV = 0: no delay timers.
#define E1000E_ITR_VALUE 500

#define GIO_TIMEOUT_US 10000   // DMA drains after GIO master disable (Linux: 8 ms)
#define RESET_SETTLE_US 1000   // after CTRL.RST, before touching the NIC (DS 11.3.2)
#define NVM_TIMEOUT_US 10000   // EEC.AUTO_RD and each EERD read

static struct e1000e_dev nics[E1000E_MAX_NICS];
static int nnics; // entries of nics[] used since the table was last empty
static int nlive; // of them, NICs attached now

// dma_map_mmio cannot unmap: a function's window is kept for its next attach.
static struct {
	struct pci_dev *pci;
	volatile uint8_t *regs;
} windows[E1000E_MAX_NICS];

// Polls until (reg & mask) == want; -E_TIMEOUT after us microseconds.
static int wait_bits(struct e1000e_dev *d, uint32_t reg, uint32_t mask, uint32_t want, uint64_t us)
{
	for (uint64_t t0 = timer_now_us();; arch_pause()) {
		bool late = timer_now_us() - t0 >= us; // sampled before the read
		if ((e1000e_rd(d, reg) & mask) == want)
			return 0;
		if (late)
			return -E_TIMEOUT;
	}
}

static void spin_us(uint64_t us)
{
	for (uint64_t t0 = timer_now_us(); timer_now_us() - t0 < us;)
		arch_pause();
}

// ---- hardware ----

static int map_window(struct e1000e_dev *d)
{
	struct pci_bar *b = &d->pci->bar[0];
	if (!b->size || b->io || b->size < E1000E_MMIO_SIZE)
		return -E_NODEV;
	pci_enable(d->pci);
	int k = -1;
	for (int i = 0; i < E1000E_MAX_NICS && k < 0; i++) // filled in order, never emptied
		if (windows[i].pci == d->pci || !windows[i].pci)
			k = i;
	if (k < 0)
		return -E_NOMEM;
	if (!windows[k].pci) {
		windows[k].pci = d->pci;
		windows[k].regs = (volatile uint8_t *)dma_map_mmio(b->base, E1000E_MMIO_SIZE);
	}
	d->regs = windows[k].regs;
	return 0;
}

// Stops the NIC's DMA and resets it (DS 11.3 / Linux e1000e): interrupts
// masked, receiver and transmitter off, GIO master disabled until the NIC
// says no request is outstanding, CTRL.RST, then the NVM auto-read done.
static int hw_reset(struct e1000e_dev *d)
{
	e1000e_wr(d, E1000E_IMC, E1000E_INT_ALL);
	e1000e_wr(d, E1000E_RCTL, 0);
	e1000e_wr(d, E1000E_TCTL, 0);
	e1000e_wr(d, E1000E_CTRL, e1000e_rd(d, E1000E_CTRL) | E1000E_CTRL_GIO_MD);
	int r = wait_bits(d, E1000E_STATUS, E1000E_STATUS_GIO_ME, 0, GIO_TIMEOUT_US);
	e1000e_wr(d, E1000E_CTRL, e1000e_rd(d, E1000E_CTRL) | E1000E_CTRL_RST);
	spin_us(RESET_SETTLE_US);
	if (r == 0)
		r = wait_bits(d, E1000E_CTRL, E1000E_CTRL_RST, 0, NVM_TIMEOUT_US);
	if (r == 0)
		r = wait_bits(d, E1000E_EEC, E1000E_EEC_AUTO_RD, E1000E_EEC_AUTO_RD, NVM_TIMEOUT_US);
	e1000e_wr(d, E1000E_CTRL, e1000e_rd(d, E1000E_CTRL) & ~E1000E_CTRL_GIO_MD);
	e1000e_wr(d, E1000E_IMC, E1000E_INT_ALL);
	(void)e1000e_rd(d, E1000E_ICR);
	e1000e_wr(d, E1000E_ICR, E1000E_INT_ALL);
	return r;
}

static int nvm_word(struct e1000e_dev *d, int word, uint16_t *out)
{
	e1000e_wr(d, E1000E_EERD, (uint32_t)word << E1000E_EERD_ADDR | E1000E_EERD_START);
	if (wait_bits(d, E1000E_EERD, E1000E_EERD_DONE, E1000E_EERD_DONE, NVM_TIMEOUT_US) < 0)
		return -E_TIMEOUT;
	*out = (uint16_t)(e1000e_rd(d, E1000E_EERD) >> E1000E_EERD_DATA);
	return 0;
}

// The MAC from NVM words 0-2, low byte first (DS 6.1.1.1), and whether
// words 0x00-0x3f sum to 0xBABA. -E_IO for a blank or multicast address.
static int read_mac(struct e1000e_dev *d, bool *sum_ok)
{
	uint16_t w, sum = 0;
	for (int i = 0; i < E1000E_NVM_WORDS; i++) {
		if (nvm_word(d, i, &w) < 0)
			return -E_TIMEOUT;
		if (i < 3)
			d->nd.mac[2 * i] = (uint8_t)w, d->nd.mac[2 * i + 1] = (uint8_t)(w >> 8);
		sum = (uint16_t)(sum + w);
	}
	*sum_ok = sum == E1000E_NVM_SUM;
	static const uint8_t zero[6];
	return memcmp(d->nd.mac, zero, 6) && !(d->nd.mac[0] & 1) ? 0 : -E_IO;
}

// Register writes in the datasheet's order, one table per stage.
struct regval {
	uint32_t reg, val;
};

static void write_all(struct e1000e_dev *d, const struct regval *rv, int n)
{
	for (int i = 0; i < n; i++)
		e1000e_wr(d, rv[i].reg, rv[i].val);
}
#define WRITE_ALL(d, ...)                                                    \
	do {                                                                 \
		const struct regval rv_[] = { __VA_ARGS__ };                 \
		write_all(d, rv_, (int)(sizeof(rv_) / sizeof(rv_[0])));      \
	} while (0)

// Link up with speed and duplex from the internal PHY's autonegotiation
// (DS 4.6.7: CTRL.SLU, nothing forced), no flow control; our
// address in receive address 0, an empty multicast table.
static void link_filters_setup(struct e1000e_dev *d)
{
	uint32_t ctrl = e1000e_rd(d, E1000E_CTRL) | E1000E_CTRL_SLU | E1000E_CTRL_ASDE;
	ctrl &= ~(E1000E_CTRL_LRST | E1000E_CTRL_PHY_RST | E1000E_CTRL_VME | E1000E_CTRL_FRCSPD |
		  E1000E_CTRL_FRCDPLX);
	const uint8_t *m = d->nd.mac;
	WRITE_ALL(d, { E1000E_CTRL, ctrl }, { E1000E_FCAL, 0 }, { E1000E_FCAH, 0 }, { E1000E_FCT, 0 },
		  { E1000E_FCTTV, 0 },
		  { E1000E_RAL0, (uint32_t)m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24 },
		  { E1000E_RAH0, (uint32_t)m[4] | m[5] << 8 | E1000E_RAH_AV });
	for (uint32_t i = 0; i < 128; i++)
		e1000e_wr(d, E1000E_MTA + 4 * i, 0);
}

// Transmit (DS 4.6.10): ring, no delay timers, TXDCTL as the datasheet
// requires, queue 0 enabled in TARC0, gap, then TCTL.
static void tx_setup(struct e1000e_dev *d)
{
	WRITE_ALL(d, { E1000E_TDBAL, (uint32_t)d->tx_ring_pa },
		  { E1000E_TDBAH, (uint32_t)(d->tx_ring_pa >> 32) },
		  { E1000E_TDLEN, E1000E_TX_DESC * sizeof(struct e1000e_tx_desc) },
		  { E1000E_TDH, 0 }, { E1000E_TDT, 0 }, { E1000E_TIDV, 0 }, { E1000E_TADV, 0 },
		  { E1000E_TXDCTL, E1000E_TXDCTL_GRAN | E1000E_TXDCTL_MUST1 },
		  { E1000E_TARC0, e1000e_rd(d, E1000E_TARC0) | E1000E_TARC_ENABLE },
		  { E1000E_TIPG, E1000E_TIPG_COPPER },
		  { E1000E_TCTL, E1000E_TCTL_EN | E1000E_TCTL_PSP | E1000E_TCTL_CT(15) |
					 E1000E_TCTL_COLD(63) | E1000E_TCTL_RTLC });
}

// Receive (DS 4.6.9): extended descriptors, no checksum offload, ring,
// no delay timers, ITR, the posted buffers (RDT), then RCTL: 4 KiB
// buffers, jumbo frames, broadcast, CRC stripped; every frame (UPE, MPE)
// with netdev_promisc().
static void rx_setup(struct e1000e_dev *d)
{
	WRITE_ALL(d, { E1000E_RFCTL, E1000E_RFCTL_EXSTEN }, { E1000E_RXCSUM, 0 },
		  { E1000E_RDBAL, (uint32_t)d->rx_ring_pa },
		  { E1000E_RDBAH, (uint32_t)(d->rx_ring_pa >> 32) },
		  { E1000E_RDLEN, E1000E_RX_DESC * sizeof(union e1000e_rx_desc) },
		  { E1000E_RDH, 0 }, { E1000E_RDTR, 0 }, { E1000E_RADV, 0 },
		  { E1000E_ITR, E1000E_ITR_VALUE });
	arch_wmb(); // the posted descriptors are in memory before RDT
	WRITE_ALL(d, { E1000E_RDT, d->rx_fill },
		  { E1000E_RCTL, E1000E_RCTL_EN | E1000E_RCTL_LPE | E1000E_RCTL_BAM |
					 E1000E_RCTL_RDMTS_HALF | E1000E_RCTL_BSIZE_4096 |
					 E1000E_RCTL_BSEX | E1000E_RCTL_SECRC |
					 (netdev_promisc() ? E1000E_RCTL_UPE | E1000E_RCTL_MPE : 0) });
}

// ---- interrupts ----

// LSC: the link as STATUS has it now; a change is counted, printed and
// reported to the stack.
static void link_changed(struct e1000e_dev *d)
{
	bool was = d->link;
	d->link = e1000e_rd(d, E1000E_STATUS) & E1000E_STATUS_LU;
	if (d->link != was) {
		d->st.link_changes++;
		kprintf("e1000e %d: link %s\n", d->idx, d->link ? "up" : "down");
		netdev_link_change(&d->nd, d->link);
	}
}

// The causes are written back to ICR, which clears them (DS 10.2.4.1)
// whether or not the read already did: the 82574 clears on read only
// in some modes, and an MSI is signalled again only for new causes.
static void e1000e_intr(void *arg)
{
	struct e1000e_dev *d = arg;
	uint32_t icr = e1000e_rd(d, E1000E_ICR) & ~E1000E_INT_ASSERTED;
	if (!icr)
		return; // another function on a shared INTx line
	e1000e_wr(d, E1000E_ICR, icr);
	d->st.irqs++;
	if (icr & E1000E_INT_LSC)
		link_changed(d);
	d->in.rx_overruns += (icr & E1000E_INT_RXO) != 0;
	if (icr & d->ims & E1000E_INT_RX)
		netdev_rx_ready(&d->nd);
}

static void irq_setup(struct e1000e_dev *d)
{
	e1000e_wr(d, E1000E_IAM, 0);
	d->in.vector = pci_irq_attach(d->pci, e1000e_intr, d);
	if (d->in.vector < 0) {
		pr_warn("e1000e %d: no interrupt (%s): polling only\n", d->idx, err_name(d->in.vector));
		return;
	}
	d->in.msi = d->pci->irq_msi;
	d->ims = E1000E_INT_LSC | E1000E_INT_RX;
	e1000e_wr(d, E1000E_IMS, d->ims);
}

// ---- the netdev seam ----

// IMS/IMC (DS 10.2.4.4-5). Setting a mask bit whose cause is pending
// interrupts at once: "poll until empty, unmask, poll once more" loses
// no wake-up.
static void nd_rx_irq(struct netdev *nd, bool on)
{
	struct e1000e_dev *d = e1000e_of(nd);
	if (d->in.vector < 0)
		return;
	d->ims = on ? d->ims | E1000E_INT_RX : d->ims & ~E1000E_INT_RX;
	e1000e_wr(d, on ? E1000E_IMS : E1000E_IMC, E1000E_INT_RX);
}

static bool nd_link_up(struct netdev *nd)
{
	return e1000e_rd(e1000e_of(nd), E1000E_STATUS) & E1000E_STATUS_LU;
}

// Clear-on-read counters (DS 10.2.7) added up.
static void hw_counters(struct e1000e_dev *d)
{
	d->in.hw_mpc += e1000e_rd(d, E1000E_MPC);
	d->in.hw_rnbc += e1000e_rd(d, E1000E_RNBC);
	d->in.hw_roc += e1000e_rd(d, E1000E_ROC);
	d->in.hw_crcerrs += e1000e_rd(d, E1000E_CRCERRS);
}

static void nd_get_stats(struct netdev *nd, struct netdev_stats *s)
{
	struct e1000e_dev *d = e1000e_of(nd);
	if (d->pci)
		hw_counters(d);
	d->st.rx_no_buf = d->in.hw_rnbc;
	d->st.frames_owned = e1000e_frames_owned(d);
	*s = d->st;
}

static void nd_detach(struct netdev *nd);

static int nd_irq_cpu(struct netdev *nd, uint32_t apic_id)
{
	return pci_irq_set_cpu(((struct e1000e_dev *)nd)->pci, apic_id);
}

static const struct netdev_ops e1000e_ops = {
	.tx_batch = e1000e_tx_batch, .tx_reclaim = e1000e_tx_reclaim, .rx_poll = e1000e_rx_poll,
	.rx_refill = e1000e_rx_refill, .rx_free_slots = e1000e_rx_free_slots, .rx_irq = nd_rx_irq,
	.link_up = nd_link_up, .irq_cpu = nd_irq_cpu, .get_stats = nd_get_stats,
	.detach = nd_detach,
};

bool e1000e_info(struct netdev *nd, struct e1000e_info *out)
{
	if (!nd || nd->ops != &e1000e_ops)
		return false;
	struct e1000e_dev *d = e1000e_of(nd);
	if (d->pci)
		hw_counters(d);
	*out = d->in;
	out->tx_free = (int)(E1000E_TX_DESC - 1 - d->tx_used);
	out->tx_queued = (int)d->tx_used;
	return true;
}

// ---- attach and detach ----

static void print_attach(struct e1000e_dev *d, bool sum_ok)
{
	const uint8_t *m = d->nd.mac;
	struct pci_dev *p = d->pci;
	kprintf("e1000e %d: 82574L %04x:%04x at %02x:%02x.%x mem %lx %s vector %d "
		"mac %02x:%02x:%02x:%02x:%02x:%02x (nvm checksum %s) link %s, %u rx buffers, "
		"%lu ring frames\n",
		d->idx, p->vendor, p->device, p->bus, p->dev, p->fn, p->bar[0].base,
		d->in.vector < 0 ? "no irq" : d->in.msi ? "msi" : "intx", d->in.vector, m[0], m[1],
		m[2], m[3], m[4], m[5], sum_ok ? "ok" : "BAD", d->link ? "up" : "down", d->rx_posted,
		E1000E_TX_RING_FRAMES + E1000E_RX_RING_FRAMES);
}

static int e1000e_attach(struct pci_dev *p, uintptr_t unused)
{
	(void)unused;
	if (nnics == E1000E_MAX_NICS || netdev_count() == NETDEV_MAX) {
		pr_warn("e1000e: no room for %02x:%02x.%x (%d NICs in the registry)\n", p->bus, p->dev,
			p->fn, netdev_count());
		return -E_NOMEM;
	}
	struct e1000e_dev *d = &nics[nnics];
	*d = (struct e1000e_dev){ .idx = nnics, .pci = p, .in.vector = -1 };
	bool sum_ok = false;
	int r = map_window(d);
	r = r < 0 ? r : hw_reset(d);
	r = r < 0 ? r : read_mac(d, &sum_ok);
	r = r < 0 ? r : e1000e_rings_alloc(d);
	if (r < 0) {
		pr_err("e1000e: %02x:%02x.%x not attached: %s\n", p->bus, p->dev, p->fn, err_name(r));
		pci_disable(p);
		return r;
	}
	link_filters_setup(d);
	tx_setup(d);
	rx_setup(d);
	d->link = e1000e_rd(d, E1000E_STATUS) & E1000E_STATUS_LU;
	hw_counters(d);
	d->in.hw_mpc = d->in.hw_rnbc = d->in.hw_roc = d->in.hw_crcerrs = 0;
	irq_setup(d);
	d->nd.ops = &e1000e_ops;
	d->nd.family = "e1000e";
	d->nd.model = "82574L";
	d->nd.min_frame = E1000E_MIN_FRAME;
	d->nd.max_frame = E1000E_MAX_FRAME;
	d->nd.rx_slots = E1000E_RX_DESC - 1;
	d->nd.tx_slots = E1000E_TX_DESC - 1;
	nnics++, nlive++;
	print_attach(d, sum_ok);
	netdev_register(&d->nd);
	return 0;
}

// Only the 82574L: its PHY is reached through the MAC's MDIC like the
// 8254x's, and nothing here touches it. The I217/I218/I219 (PCH) need
// the PHY reached through the chipset and are not claimed.
static const struct pci_id e1000e_ids[] = {
	{ 0x8086, 0x10d3, "e1000e", e1000e_attach, 0 }, // 82574L (QEMU e1000e)
};

int e1000e_probe_all(void)
{
	return pci_probe(e1000e_ids, (int)(sizeof(e1000e_ids) / sizeof(e1000e_ids[0])));
}

// No DMA and no interrupts any more, then the frames go back: queued
// sends unpinned, buffers and rings freed.
static void nd_detach(struct netdev *nd)
{
	struct e1000e_dev *d = e1000e_of(nd);
	if (!d->pci)
		return;
	if (d->tx_used)
		pr_warn("e1000e %d: detach unpins %u send descriptors never reclaimed\n", d->idx,
			d->tx_used);
	hw_reset(d); // interrupts masked, DMA stopped, the NIC reset
	pci_irq_detach(d->pci);
	pci_disable(d->pci);
	e1000e_rings_free(d);
	pci_release(d->pci);
	d->pci = NULL;
	if (--nlive == 0)
		nnics = 0; // every NIC gone: the next probe numbers from 0 again
}
