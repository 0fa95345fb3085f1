// The 82574's descriptor formats (e1000e_desc.h).
#include "e1000e_desc.h"

// DEXT with DTYP 0001b is a data descriptor (DS 7.2.10.3); no context
// descriptor goes before it, so no offload applies. IFCS on every one.
void e1000e_tx_build(struct e1000e_tx_desc *d, uint64_t addr, uint32_t len, bool last)
{
	uint32_t cmd = E1000E_TXD_DEXT | E1000E_TXD_DTYP_DATA | E1000E_TXD_IFCS;
	if (last)
		cmd |= E1000E_TXD_EOP | E1000E_TXD_RS;
	d->addr = addr;
	d->cmd_len = cmd | (len & E1000E_TXD_LEN_MAX);
	d->sta = 0;
}

// The status, errors and length share the descriptor's upper quadword
// (DS 7.1.5.2); the errors count only on the EOP buffer.
struct e1000e_rx_wb e1000e_rx_parse(const union e1000e_rx_desc *d)
{
	uint32_t se = d->wb.staterr;
	struct e1000e_rx_wb w = { .done = se & E1000E_RXD_DD };
	if (!w.done)
		return w;
	w.eop = se & E1000E_RXD_EOP;
	w.error = w.eop && (se & E1000E_RXE_FRAME);
	w.len = d->wb.len;
	return w;
}

void e1000e_rx_post(union e1000e_rx_desc *d, uint64_t addr)
{
	d->rd.addr = addr;
	d->rd.zero = 0;
}
