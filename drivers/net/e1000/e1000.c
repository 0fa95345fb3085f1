// Intel 8254x (e1000) driver: probe table, attach (reset, link, filters,
// rings to the NIC, mitigation, interrupts), link changes, counters,
// detach. One struct e1000_dev per NIC (e1000_dev.h) owns its register
// window, its rings (e1000_ring.c), the frames posted to them, its
// counters. The EEPROM is read by e1000_eeprom.c.
#include "e1000_dev.h"
#include "arch/x86_64/timer.h"
#include "kprintf.h"
#include "dma.h"
#include <err.h>
#include <string.h>

// Interrupt throttling (SDM 13.4.18, 256 ns units): 500 = 128 us, at most
// ~7800 interrupts/s. QEMU emulates ITR (docs/design.md, "What the code
// relies on in the emulated hardware") and never
// raises interrupts closer than 500 units anyway, so this is the value the
// emulated and a real NIC share. Throttling only delays an interrupt that
// follows another within 128 us; the first one after a quiet period (a
// round trip's reply) is immediate. During a batch the receive causes are
// masked and the kernel polls, so the cap costs nothing there.
#define E1000_ITR_VALUE 500
// RDTR = 0: no receive delay timer, RXT0 fires per frame (subject to ITR);
// QEMU only applies RADV when RDTR != 0, so RADV = 0 too. TIDV/TADV = 0.

#define RESET_SETTLE_US 5000 // EEPROM auto-load after CTRL.RST (Linux waits 5 ms too)
#define RESET_TIMEOUT_US 100000

enum { M_82540, M_82544, M_82545, M_82546, M_82541 };

static const struct model models[] = {
	[M_82540] = { "82540", EE_EERD_8254X, false },
	[M_82544] = { "82544", EE_MICROWIRE, false }, // no EERD on the 82544 (SDM 13.4.4)
	[M_82545] = { "82545", EE_EERD_8254X, false },
	[M_82546] = { "82546", EE_EERD_8254X, true },
	[M_82541] = { "82541", EE_EERD_82541, false },
};

static const uint32_t hw_reg[HW_N] = { E1000_MPC, E1000_RNBC, E1000_ROC, E1000_CRCERRS };

static struct e1000_dev nics[E1000_MAX_NICS];
static int nnics;

// dma_map_mmio cannot unmap: a window stays mapped for a NIC attached again.
static struct {
	struct pci_dev *pci;
	volatile uint8_t *regs;
} windows[E1000_MAX_NICS];

void e1000_udelay(uint64_t us)
{
	uint64_t t0 = timer_now_us();
	while (timer_now_us() - t0 < us)
		arch_pause();
}

int e1000_wait_reg(struct e1000_dev *d, uint32_t reg, uint32_t mask, uint32_t want, uint64_t us)
{
	uint64_t t0 = timer_now_us();
	do {
		if ((e1000_rd(d, reg) & mask) == want)
			return 0;
		arch_pause();
	} while (timer_now_us() - t0 < us);
	return (e1000_rd(d, reg) & mask) == want ? 0 : -E_TIMEOUT;
}

// ---- hardware setup ----

static int map_window(struct e1000_dev *d)
{
	struct pci_bar *b = &d->pci->bar[0];
	if (!b->size || b->io || b->size < E1000_MMIO_SIZE)
		return -E_NODEV;
	pci_enable(d->pci);
	for (int i = 0; i < E1000_MAX_NICS; i++)
		if (windows[i].pci == d->pci)
			return d->regs = windows[i].regs, 0;
	for (int i = 0; i < E1000_MAX_NICS; i++) {
		if (windows[i].pci)
			continue;
		windows[i].pci = d->pci;
		windows[i].regs = (volatile uint8_t *)dma_map_mmio(b->base, E1000_MMIO_SIZE);
		d->regs = windows[i].regs;
		return 0;
	}
	return -E_NOMEM;
}

// Global reset (SDM 13.4.1 CTRL.RST, chapter 14 reset): interrupts off,
// transmitter stopped, reset, wait for the EEPROM reload and RST to clear.
static int hw_reset(struct e1000_dev *d)
{
	e1000_wr(d, E1000_IMC, E1000_INT_ALL);
	e1000_wr(d, E1000_TCTL, 0);
	e1000_udelay(1000); // let a DMA in flight finish (firmware may have used the NIC)
	e1000_wr(d, E1000_CTRL, e1000_rd(d, E1000_CTRL) | E1000_CTRL_RST);
	e1000_udelay(RESET_SETTLE_US);
	if (e1000_wait_reg(d, E1000_CTRL, E1000_CTRL_RST, 0, RESET_TIMEOUT_US) < 0)
		return -E_TIMEOUT;
	e1000_wr(d, E1000_IMC, E1000_INT_ALL);
	(void)e1000_rd(d, E1000_ICR);
	return 0;
}

// Copper parts with the internal PHY: set link up, let the MAC take speed
// and duplex from the PHY, no flow control (SDM 14.3 general configuration).
static void link_setup(struct e1000_dev *d)
{
	uint32_t ctrl = e1000_rd(d, E1000_CTRL);
	ctrl |= E1000_CTRL_SLU | E1000_CTRL_ASDE;
	ctrl &= ~(E1000_CTRL_LRST | E1000_CTRL_PHY_RST | E1000_CTRL_ILOS | E1000_CTRL_VME |
		  E1000_CTRL_FRCSPD | E1000_CTRL_FRCDPLX);
	e1000_wr(d, E1000_CTRL, ctrl);
	e1000_wr(d, E1000_FCAL, 0);
	e1000_wr(d, E1000_FCAH, 0);
	e1000_wr(d, E1000_FCT, 0);
	e1000_wr(d, E1000_FCTTV, 0);
}

// Receive address 0 = our MAC, valid; empty multicast table (SDM 13.5).
static void filters_setup(struct e1000_dev *d)
{
	const uint8_t *m = d->mac;
	for (int i = 0; i < 128; i++)
		e1000_wr(d, E1000_MTA + 4 * (uint32_t)i, 0);
	e1000_wr(d, E1000_RAL0, (uint32_t)m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24);
	e1000_wr(d, E1000_RAH0, (uint32_t)m[4] | m[5] << 8 | E1000_RAH_AV);
}

// Transmit initialization (SDM 14.5): ring, gap, then TCTL.
static void tx_setup(struct e1000_dev *d)
{
	e1000_wr(d, E1000_TDBAL, (uint32_t)d->tx_ring_pa);
	e1000_wr(d, E1000_TDBAH, (uint32_t)(d->tx_ring_pa >> 32));
	e1000_wr(d, E1000_TDLEN, E1000_TX_DESC * sizeof(struct e1000_tx_desc));
	e1000_wr(d, E1000_TDH, 0);
	e1000_wr(d, E1000_TDT, 0);
	e1000_wr(d, E1000_TIDV, 0);
	e1000_wr(d, E1000_TADV, 0);
	e1000_wr(d, E1000_TIPG, E1000_TIPG_COPPER);
	e1000_wr(d, E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP | E1000_TCTL_CT(15) |
					E1000_TCTL_COLD(64) | E1000_TCTL_RTLC);
}

// Receive initialization (SDM 14.4): ring, posted buffers, timers, then
// RCTL, written this once: every RCTL write stops QEMU's reception for
// about a second (docs/design.md, "What the code relies on in the emulated hardware"). 4096-byte buffers need BSEX;
// LPE admits jumbo frames; SECRC makes lengths exclude the FCS. The
// filter passes frames to RAL/RAH[0] (the MAC) and broadcast; with
// netdev_promisc() UPE and MPE pass every frame.
static void rx_setup(struct e1000_dev *d)
{
	e1000_wr(d, E1000_RDBAL, (uint32_t)d->rx_ring_pa);
	e1000_wr(d, E1000_RDBAH, (uint32_t)(d->rx_ring_pa >> 32));
	e1000_wr(d, E1000_RDLEN, E1000_RX_DESC * sizeof(struct e1000_rx_desc));
	e1000_wr(d, E1000_RDH, 0);
	e1000_wr(d, E1000_RDTR, 0);
	e1000_wr(d, E1000_RADV, 0);
	e1000_wr(d, E1000_ITR, E1000_ITR_VALUE);
	arch_wmb();
	e1000_wr(d, E1000_RDT, d->rx_fill);
	e1000_wr(d, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_LPE | E1000_RCTL_BAM |
					E1000_RCTL_RDMTS_HALF | E1000_RCTL_BSIZE_4096 |
					E1000_RCTL_BSEX | E1000_RCTL_SECRC |
					(netdev_promisc() ? E1000_RCTL_UPE | E1000_RCTL_MPE : 0));
}

// Reads each counter twice: a register that reads non-zero then zero
// clears on read; one that reads the same twice is cumulative.
static void hwstats_init(struct e1000_dev *d)
{
	for (int i = 0; i < HW_N; i++) {
		uint32_t a = e1000_rd(d, hw_reg[i]), b = e1000_rd(d, hw_reg[i]);
		d->hw[i] = (struct hwstat){ .clears = -1 };
		if (a && b < a)
			d->hw[i].clears = 1;
		else if (a)
			d->hw[i] = (struct hwstat){ .base = b, .clears = 0 };
	}
}

static void hwstat_poll(struct e1000_dev *d, int i)
{
	struct hwstat *h = &d->hw[i];
	uint32_t v = e1000_rd(d, hw_reg[i]);
	if (h->clears < 0 && v) {
		uint32_t again = e1000_rd(d, hw_reg[i]);
		h->clears = again < v;
		v = h->clears ? v + again : again;
	}
	if (h->clears == 1)
		h->total += v;
	else if (h->clears == 0)
		h->total = v - h->base;
}

// ---- interrupts ----

static void link_changed(struct e1000_dev *d)
{
	bool up = e1000_rd(d, E1000_STATUS) & E1000_STATUS_LU;
	if (up == d->link)
		return;
	d->link = up;
	d->st.link_changes++;
	kprintf("e1000 %d: link %s\n", d->idx, up ? "up" : "down");
	if (!d->handler)
		netdev_link_change(&d->nd, up);
}

// Reading ICR returns and clears the causes (SDM 13.4.17), which also drops
// the level-triggered INTx line. Zero: another device on a shared line.
static void e1000_intr(void *arg)
{
	struct e1000_dev *d = arg;
	uint32_t icr = e1000_rd(d, E1000_ICR);
	if (!icr)
		return;
	d->st.irqs++;
	if (icr & E1000_INT_LSC)
		link_changed(d);
	if (icr & E1000_INT_RXO)
		d->st.rx_overruns++;
	if (d->handler)
		d->handler(d, icr, d->handler_arg);
	else if (icr & E1000_INT_RX)
		netdev_rx_ready(&d->nd); // the cause bits stop here
}

static void irq_setup(struct e1000_dev *d)
{
	e1000_wr(d, E1000_IMC, E1000_INT_ALL);
	(void)e1000_rd(d, E1000_ICR);
	d->vector = pci_irq_attach(d->pci, e1000_intr, d);
	if (d->vector < 0) {
		pr_warn("e1000 %d: no interrupt (%s): polling only\n", d->idx, err_name(d->vector));
		return;
	}
	d->ims = E1000_INT_LSC | E1000_INT_RX;
	e1000_wr(d, E1000_IMS, d->ims);
}

// ---- the netdev seam ----

static struct e1000_dev *of(struct netdev *nd) { return (struct e1000_dev *)nd; }
// The ring operations (e1000_nd_*) are e1000_ring.c's own: a polled
// packet goes from the stack straight into the ring's file.

static void nd_rx_irq(struct netdev *nd, bool on) { e1000_rx_irq(of(nd), on); }
static bool nd_link_up(struct netdev *nd) { return e1000_link_up(of(nd)); }
static void nd_detach(struct netdev *nd);

static void nd_get_stats(struct netdev *nd, struct netdev_stats *s)
{
	struct e1000_stats e;
	e1000_get_stats(of(nd), &e);
	*s = (struct netdev_stats){
		.rx_frames = e.rx_frames, .rx_bytes = e.rx_bytes, .rx_errors = e.rx_errors,
		.rx_no_buf = e.rx_no_buf, .tx_frames = e.tx_frames, .tx_bytes = e.tx_bytes,
		.doorbells = e.doorbells, .irqs = e.irqs, .link_changes = e.link_changes,
		.rx_refills = e.rx_refills, .tx_ring_full = e.tx_ring_full,
		.tx_rejected = e.tx_rejected, .rx_refill_rejected = e.rx_refill_rejected,
		.frames_owned = e.frames_owned,
	};
}

static int nd_irq_cpu(struct netdev *nd, uint32_t apic_id)
{
	return pci_irq_set_cpu(((struct e1000_dev *)nd)->pci, apic_id);
}

static const struct netdev_ops e1000_netdev_ops = {
	.tx_batch = e1000_nd_tx_batch, .tx_reclaim = e1000_nd_tx_reclaim, .rx_poll = e1000_nd_rx_poll,
	.rx_refill = e1000_nd_rx_refill, .rx_free_slots = e1000_nd_rx_free_slots, .rx_irq = nd_rx_irq,
	.link_up = nd_link_up, .irq_cpu = nd_irq_cpu, .get_stats = nd_get_stats,
	.detach = nd_detach,
};

static void netdev_init(struct e1000_dev *d)
{
	d->nd.ops = &e1000_netdev_ops;
	d->nd.family = "e1000";
	d->nd.model = d->model->name;
	memcpy(d->nd.mac, d->mac, 6);
	d->nd.min_frame = E1000_MIN_FRAME;
	d->nd.max_frame = E1000_MAX_FRAME;
	d->nd.rx_slots = E1000_RX_DESC - 1;
	d->nd.tx_slots = E1000_TX_DESC - 1;
}

// ---- attach and detach ----

// The NIC's side of attach, in the manual's order (SDM 14.3-14.5); RCTL
// is written last, once.
static void hw_start(struct e1000_dev *d)
{
	link_setup(d);
	filters_setup(d);
	tx_setup(d);
	rx_setup(d);
	d->link = e1000_rd(d, E1000_STATUS) & E1000_STATUS_LU;
	hwstats_init(d);
	irq_setup(d);
}

static void print_attach(struct e1000_dev *d)
{
	const uint8_t *m = d->mac;
	struct pci_dev *p = d->pci;
	kprintf("e1000 %d: %s %04x:%04x at %02x:%02x.%x mem %lx irq %s%d vector %d "
		"mac %02x:%02x:%02x:%02x:%02x:%02x (eeprom %s, checksum %s) link %s, "
		"%u rx buffers, %lu ring frames\n",
		d->idx, d->model->name, p->vendor, p->device, p->bus, p->dev, p->fn, p->bar[0].base,
		p->irq_msi ? "msi" : "gsi ", p->irq_msi ? 0 : p->irq_gsi, d->vector, m[0], m[1],
		m[2], m[3], m[4], m[5], d->ee_how, d->ee_sum_ok ? "ok" : "BAD",
		d->link ? "up" : "down", d->rx_posted, TX_RING_FRAMES + RX_RING_FRAMES);
}

static int e1000_attach(struct pci_dev *p, uintptr_t model)
{
	if (nnics == E1000_MAX_NICS) {
		pr_warn("e1000: more than %d NICs, %02x:%02x.%x ignored\n", E1000_MAX_NICS, p->bus,
			p->dev, p->fn);
		return -E_NOMEM;
	}
	struct e1000_dev *d = &nics[nnics];
	*d = (struct e1000_dev){ .idx = nnics, .pci = p, .model = &models[model], .vector = -1 };
	int r = map_window(d);
	if (r == 0)
		r = hw_reset(d);
	if (r == 0)
		r = e1000_read_mac(d);
	if (r == 0)
		r = e1000_rings_alloc(d);
	if (r < 0) {
		pr_err("e1000: %02x:%02x.%x not attached: %s\n", p->bus, p->dev, p->fn, err_name(r));
		pci_disable(p);
		return r;
	}
	hw_start(d);
	nnics++;
	print_attach(d);
	netdev_init(d);
	if (netdev_register(&d->nd) < 0)
		pr_warn("e1000 %d: the netdev registry is full: driver self-test only\n", d->idx);
	return 0;
}

static const struct pci_id e1000_ids[] = {
	{ 0x8086, 0x100e, "e1000", e1000_attach, M_82540 }, // 82540EM (QEMU e1000, Bochs)
	{ 0x8086, 0x1015, "e1000", e1000_attach, M_82540 }, // 82540EM LOM
	{ 0x8086, 0x1016, "e1000", e1000_attach, M_82540 }, // 82540EP LOM
	{ 0x8086, 0x1017, "e1000", e1000_attach, M_82540 }, // 82540EP
	{ 0x8086, 0x101e, "e1000", e1000_attach, M_82540 }, // 82540EP LP
	{ 0x8086, 0x1008, "e1000", e1000_attach, M_82544 }, // 82544EI copper
	{ 0x8086, 0x100c, "e1000", e1000_attach, M_82544 }, // 82544GC copper (QEMU e1000-82544gc)
	{ 0x8086, 0x100d, "e1000", e1000_attach, M_82544 }, // 82544GC LOM
	{ 0x8086, 0x100f, "e1000", e1000_attach, M_82545 }, // 82545EM copper (QEMU e1000-82545em)
	{ 0x8086, 0x1026, "e1000", e1000_attach, M_82545 }, // 82545GM copper
	{ 0x8086, 0x1010, "e1000", e1000_attach, M_82546 }, // 82546EB copper
	{ 0x8086, 0x1079, "e1000", e1000_attach, M_82546 }, // 82546GB copper
	{ 0x8086, 0x1013, "e1000", e1000_attach, M_82541 }, // 82541EI
	{ 0x8086, 0x1018, "e1000", e1000_attach, M_82541 }, // 82541EI mobile
	{ 0x8086, 0x1076, "e1000", e1000_attach, M_82541 }, // 82541GI
	{ 0x8086, 0x1077, "e1000", e1000_attach, M_82541 }, // 82541GI mobile
	{ 0x8086, 0x1078, "e1000", e1000_attach, M_82541 }, // 82541ER
	{ 0x8086, 0x107c, "e1000", e1000_attach, M_82541 }, // 82541PI
};

int e1000_probe_all(void)
{
	uint64_t t0 = timer_now_us();
	int n = pci_probe(e1000_ids, (int)(sizeof(e1000_ids) / sizeof(e1000_ids[0])));
	pr_info("e1000: %d NIC(s) attached now, %d in all, %lu frames held, %lu us\n", n, nnics,
		e1000_frames_owned_all(), timer_now_us() - t0);
	return n;
}

int e1000_count(void) { return nnics; }
struct e1000_dev *e1000_get(int idx) { return idx >= 0 && idx < nnics ? &nics[idx] : NULL; }
int e1000_index(const struct e1000_dev *d) { return d->idx; }
struct netdev *e1000_netdev(struct e1000_dev *d) { return &d->nd; }
void e1000_get_mac(struct e1000_dev *d, uint8_t mac[6]) { memcpy(mac, d->mac, 6); }
bool e1000_link_up(struct e1000_dev *d) { return e1000_rd(d, E1000_STATUS) & E1000_STATUS_LU; }

// No more DMA or interrupts: receiver and transmitter off, reset, bus
// mastering off. Only then may the frames the NIC knew be freed.
static void hw_stop(struct e1000_dev *d)
{
	e1000_wr(d, E1000_IMC, E1000_INT_ALL);
	e1000_wr(d, E1000_RCTL, 0);
	e1000_wr(d, E1000_TCTL, 0);
	e1000_udelay(1000);
	e1000_wr(d, E1000_CTRL, e1000_rd(d, E1000_CTRL) | E1000_CTRL_RST);
	e1000_udelay(RESET_SETTLE_US);
	pci_irq_detach(d->pci);
	pci_disable(d->pci);
}

static uint64_t detach(struct e1000_dev *d)
{
	hw_stop(d);
	if (d->tx_used)
		pr_warn("e1000 %d: detach drops %u unreclaimed send descriptors\n", d->idx,
			d->tx_used);
	e1000_tx_drop(d);
	uint64_t n = e1000_rings_free(d);
	pci_release(d->pci);
	return n;
}

// One NIC through the seam; the table empties when the last one goes.
static void nd_detach(struct netdev *nd)
{
	struct e1000_dev *d = of(nd);
	if (!d->pci)
		return;
	detach(d);
	d->pci = NULL;
	bool any = false;
	for (int i = 0; i < nnics; i++)
		any |= nics[i].pci != NULL;
	if (!any)
		nnics = 0;
}

uint64_t e1000_detach_all(void)
{
	uint64_t n = 0;
	for (int i = 0; i < nnics; i++) {
		netdev_unregister(&nics[i].nd);
		if (nics[i].pci)
			n += detach(&nics[i]);
		nics[i].pci = NULL;
	}
	nnics = 0;
	pr_info("e1000: detached, %lu frames freed\n", n);
	return n;
}

// ---- control and counters ----

void e1000_rx_irq(struct e1000_dev *d, bool enable)
{
	if (d->vector < 0)
		return;
	d->ims = enable ? d->ims | E1000_INT_RX : d->ims & ~E1000_INT_RX;
	e1000_wr(d, enable ? E1000_IMS : E1000_IMC, E1000_INT_RX);
}

void e1000_tx_irq(struct e1000_dev *d, bool enable)
{
	if (d->vector < 0)
		return;
	d->ims = enable ? d->ims | E1000_INT_TXDW : d->ims & ~E1000_INT_TXDW;
	e1000_wr(d, enable ? E1000_IMS : E1000_IMC, E1000_INT_TXDW);
}

void e1000_set_handler(struct e1000_dev *d, void (*fn)(struct e1000_dev *d, uint32_t icr, void *arg),
		       void *arg)
{
	d->handler = fn;
	d->handler_arg = arg;
}

uint64_t e1000_frames_owned(struct e1000_dev *d)
{
	return d->rx_posted + (d->tx_ring_pa ? TX_RING_FRAMES : 0) +
	       (d->rx_ring_pa ? RX_RING_FRAMES : 0);
}

uint64_t e1000_frames_owned_all(void)
{
	uint64_t n = 0;
	for (int i = 0; i < nnics; i++)
		n += e1000_frames_owned(&nics[i]);
	return n;
}

void e1000_get_stats(struct e1000_dev *d, struct e1000_stats *s)
{
	for (int i = 0; i < HW_N; i++)
		hwstat_poll(d, i);
	d->st.hw_mpc = d->hw[HW_MPC].total;
	d->st.hw_rnbc = d->hw[HW_RNBC].total;
	d->st.hw_roc = d->hw[HW_ROC].total;
	d->st.hw_crcerrs = d->hw[HW_CRCERRS].total;
	d->st.rx_no_buf = d->st.hw_rnbc;
	d->st.frames_owned = e1000_frames_owned(d);
	*s = d->st;
}
