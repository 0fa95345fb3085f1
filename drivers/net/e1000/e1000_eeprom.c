// e1000 EEPROM (SDM chapter 5): words through EERD, in either of its two
// layouts, or by bit-banging the Microwire interface through EECD (the
// 82544 has no EERD); the Ethernet address and the checksum.
#include "e1000_dev.h"
#include <err.h>
#include <string.h>

#define EERD_TIMEOUT_US 10000
#define EE_GRANT_TIMEOUT_US 1000
#define MW_HALF_CLOCK_US 5 // Microwire EEPROMs clock at <= 1 MHz

// One word through EERD (13.4.4), in the layout of this model.
static int eerd_read(struct e1000_dev *d, int word, uint16_t *out)
{
	bool b41 = d->model->ee == EE_EERD_82541;
	uint32_t done = b41 ? E1000_EERD_DONE_82541 : E1000_EERD_DONE_8254X;
	int shift = b41 ? E1000_EERD_ADDR_82541 : E1000_EERD_ADDR_8254X;
	e1000_wr(d, E1000_EERD, (uint32_t)word << shift | E1000_EERD_START);
	if (e1000_wait_reg(d, E1000_EERD, done, done, EERD_TIMEOUT_US) < 0)
		return -E_TIMEOUT;
	*out = (uint16_t)(e1000_rd(d, E1000_EERD) >> E1000_EERD_DATA);
	return 0;
}

static void mw_set(struct e1000_dev *d, uint32_t eecd)
{
	e1000_wr(d, E1000_EECD, eecd);
	e1000_udelay(MW_HALF_CLOCK_US);
}

// Shifts n bits out to the EEPROM, most significant first: DI, then an SK pulse.
static void mw_out(struct e1000_dev *d, uint32_t eecd, uint32_t bits, int n)
{
	for (int i = n - 1; i >= 0; i--) {
		uint32_t v = (eecd & ~E1000_EECD_DI) | (((bits >> i) & 1) ? E1000_EECD_DI : 0);
		mw_set(d, v);
		mw_set(d, v | E1000_EECD_SK);
		mw_set(d, v);
	}
}

// Shifts 16 bits in: raise SK, sample DO, lower SK.
static uint16_t mw_in(struct e1000_dev *d, uint32_t eecd)
{
	uint16_t w = 0;
	for (int i = 0; i < 16; i++) {
		mw_set(d, eecd | E1000_EECD_SK);
		w = (uint16_t)(w << 1 | ((e1000_rd(d, E1000_EECD) & E1000_EECD_DO) ? 1 : 0));
		mw_set(d, eecd);
	}
	return w;
}

// One word by bit-banging the Microwire interface through EECD (SDM 5.3.1):
// request access (82540 and later), select, READ opcode, address, 16 bits.
static int mw_read(struct e1000_dev *d, int word, uint16_t *out)
{
	bool arbitrate = d->model->ee != EE_MICROWIRE;
	uint32_t eecd = e1000_rd(d, E1000_EECD) & ~(E1000_EECD_SK | E1000_EECD_CS | E1000_EECD_DI);
	if (arbitrate) {
		eecd |= E1000_EECD_REQ;
		e1000_wr(d, E1000_EECD, eecd);
		if (e1000_wait_reg(d, E1000_EECD, E1000_EECD_GNT, E1000_EECD_GNT, EE_GRANT_TIMEOUT_US) < 0) {
			e1000_wr(d, E1000_EECD, eecd & ~E1000_EECD_REQ);
			return -E_TIMEOUT;
		}
	}
	int abits = arbitrate && (eecd & E1000_EECD_SIZE) ? 8 : 6;
	mw_set(d, eecd | E1000_EECD_CS);
	mw_out(d, eecd | E1000_EECD_CS, E1000_EE_OP_READ, 3);
	mw_out(d, eecd | E1000_EECD_CS, (uint32_t)word, abits);
	*out = mw_in(d, eecd | E1000_EECD_CS);
	mw_set(d, eecd);
	e1000_wr(d, E1000_EECD, eecd & ~E1000_EECD_REQ);
	return 0;
}

// Reads n words; EERD where the model has it, falling back to Microwire
// when EERD never completes.
static int ee_read(struct e1000_dev *d, int word, int n, uint16_t *out)
{
	for (int i = 0; i < n; i++) {
		int r = -E_NODEV;
		if (d->model->ee != EE_MICROWIRE && strcmp(d->ee_how, "microwire"))
			r = eerd_read(d, word + i, &out[i]);
		if (r < 0) {
			d->ee_how = "microwire";
			r = mw_read(d, word + i, &out[i]);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static bool ee_sum_ok(struct e1000_dev *d)
{
	uint16_t w, sum = 0;
	for (int i = 0; i < E1000_EE_WORDS; i++) {
		if (ee_read(d, i, 1, &w) < 0)
			return false;
		sum = (uint16_t)(sum + w);
	}
	return sum == E1000_EE_SUM;
}

// The Ethernet address from EEPROM words 0-2 (SDM 5.6.1), low byte first.
int e1000_read_mac(struct e1000_dev *d)
{
	uint16_t w[3];
	d->ee_how = d->model->ee == EE_MICROWIRE ? "microwire" : "eerd";
	int r = ee_read(d, E1000_EE_MAC, 3, w);
	if (r < 0)
		return r;
	for (int i = 0; i < 3; i++) {
		d->mac[2 * i] = (uint8_t)w[i];
		d->mac[2 * i + 1] = (uint8_t)(w[i] >> 8);
	}
	if (d->model->dual_port && (e1000_rd(d, E1000_STATUS) & E1000_STATUS_FUNC))
		d->mac[5] ^= 1;
	static const uint8_t zero[6];
	if (!memcmp(d->mac, zero, 6) || (d->mac[0] & 1))
		return -E_IO; // blank or multicast: no usable address
	d->ee_sum_ok = ee_sum_ok(d);
	return 0;
}
