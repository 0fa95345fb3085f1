// Intel 82574L (e1000e) registers, bits and descriptor formats. "DS" is the
// Intel 82574 GbE Controller Family datasheet (316080): chapter 10 for the
// registers, 7.1 and 7.2 for the receive and transmit descriptors, 6.1 for
// the NVM words. Offsets the 82574 shares with the 8254x keep their place.
#ifndef E1000E_REGS_H
#define E1000E_REGS_H
#include <stdint.h>

// General (DS 10.2.2).
#define E1000E_CTRL 0x0000     // 10.2.2.1 device control
#define E1000E_STATUS 0x0008   // 10.2.2.2 device status
#define E1000E_EEC 0x0010      // 10.2.2.3 EEPROM/flash control
#define E1000E_EERD 0x0014     // 10.2.2.4 EEPROM read
#define E1000E_CTRL_EXT 0x0018 // 10.2.2.5 extended device control
#define E1000E_FCAL 0x0028     // flow control address low
#define E1000E_FCAH 0x002c
#define E1000E_FCT 0x0030      // flow control type
#define E1000E_FCTTV 0x0170    // flow control transmit timer
// Interrupts (DS 10.2.4).
#define E1000E_ICR 0x00c0 // 10.2.4.1 cause read; causes also clear by writing 1s
#define E1000E_ITR 0x00c4 // 10.2.4.2 throttling, 256 ns units (MSI and INTx)
#define E1000E_ICS 0x00c8 // 10.2.4.3 cause set
#define E1000E_IMS 0x00d0 // 10.2.4.4 mask set/read
#define E1000E_IMC 0x00d8 // 10.2.4.5 mask clear
#define E1000E_IAM 0x00e0 // 10.2.4.6 auto-mask (unused: 0)
// Receive (DS 10.2.5).
#define E1000E_RCTL 0x0100   // 10.2.5.1 receive control
#define E1000E_RDBAL 0x2800  // queue 0 base low
#define E1000E_RDBAH 0x2804
#define E1000E_RDLEN 0x2808  // bytes, a multiple of 128
#define E1000E_RDH 0x2810
#define E1000E_RDT 0x2818
#define E1000E_RDTR 0x2820   // packet timer, 1.024 us units
#define E1000E_RADV 0x282c   // absolute timer
#define E1000E_RXCSUM 0x5000 // 10.2.5.15 receive checksum control
#define E1000E_RFCTL 0x5008  // 10.2.5.16 receive filter control
#define E1000E_MTA 0x5200    // multicast table, 128 words
#define E1000E_RAL0 0x5400
#define E1000E_RAH0 0x5404
// Transmit (DS 10.2.6).
#define E1000E_TCTL 0x0400   // 10.2.6.1 transmit control
#define E1000E_TIPG 0x0410   // 10.2.6.3 inter-packet gap
#define E1000E_TDBAL 0x3800  // queue 0 base low
#define E1000E_TDBAH 0x3804
#define E1000E_TDLEN 0x3808
#define E1000E_TDH 0x3810
#define E1000E_TDT 0x3818    // the doorbell
#define E1000E_TIDV 0x3820   // interrupt delay
#define E1000E_TXDCTL 0x3828 // 10.2.6.11 descriptor control
#define E1000E_TADV 0x382c
#define E1000E_TARC0 0x3840  // 10.2.6.14 arbitration count; bit 10 enables the queue
// Statistics (DS 10.2.7): every one clears on read. QEMU's e1000e keeps
// CRCERRS, MPC and RNBC cumulative but never counts them, so they read 0.
#define E1000E_CRCERRS 0x4000
#define E1000E_MPC 0x4010
#define E1000E_RNBC 0x40a0
#define E1000E_ROC 0x40ac

// CTRL (10.2.2.1).
#define E1000E_CTRL_GIO_MD (1u << 2) // GIO master disable: stop DMA before a reset
#define E1000E_CTRL_LRST (1u << 3)
#define E1000E_CTRL_ASDE (1u << 5)
#define E1000E_CTRL_SLU (1u << 6)
#define E1000E_CTRL_FRCSPD (1u << 11)
#define E1000E_CTRL_FRCDPLX (1u << 12)
#define E1000E_CTRL_RST (1u << 26) // software reset, self-clearing
#define E1000E_CTRL_VME (1u << 30)
#define E1000E_CTRL_PHY_RST (1u << 31)
// STATUS (10.2.2.2).
#define E1000E_STATUS_LU (1u << 1)
#define E1000E_STATUS_GIO_ME (1u << 19) // GIO master enabled: DMA may be in flight
// EEC (10.2.2.3): the NVM was read into the MAC after reset.
#define E1000E_EEC_AUTO_RD (1u << 9)
// EERD (10.2.2.4): start bit 0, done bit 1, word address 15:2, data 31:16.
#define E1000E_EERD_START (1u << 0)
#define E1000E_EERD_DONE (1u << 1)
#define E1000E_EERD_ADDR 2
#define E1000E_EERD_DATA 16
// NVM (DS 6.1): the Ethernet address in words 0-2; words 0x00-0x3f sum to 0xBABA.
#define E1000E_NVM_MAC 0x00
#define E1000E_NVM_WORDS 0x40
#define E1000E_NVM_SUM 0xbaba

// Interrupt causes, ICR/ICS/IMS/IMC (10.2.4.1).
#define E1000E_INT_TXDW (1u << 0)
#define E1000E_INT_LSC (1u << 2)
#define E1000E_INT_RXDMT0 (1u << 4)
#define E1000E_INT_RXO (1u << 6)
#define E1000E_INT_RXT0 (1u << 7)
#define E1000E_INT_ASSERTED (1u << 31) // an interrupt is being signalled (not a cause)
#define E1000E_INT_ALL 0xffffffffu
#define E1000E_INT_RX (E1000E_INT_RXT0 | E1000E_INT_RXO | E1000E_INT_RXDMT0)

// RCTL (10.2.5.1). DTYP 00 with RFCTL.EXSTEN: one-buffer extended descriptors.
#define E1000E_RCTL_EN (1u << 1)
#define E1000E_RCTL_UPE (1u << 3)          // unicast promiscuous
#define E1000E_RCTL_MPE (1u << 4)          // multicast promiscuous
#define E1000E_RCTL_LPE (1u << 5)          // long packets: jumbo frames
#define E1000E_RCTL_RDMTS_HALF (0u << 8)
#define E1000E_RCTL_BAM (1u << 15)
#define E1000E_RCTL_BSIZE_4096 (3u << 16)  // with BSEX
#define E1000E_RCTL_BSEX (1u << 25)
#define E1000E_RCTL_SECRC (1u << 26)       // strip the CRC: lengths exclude it
#define E1000E_RFCTL_EXSTEN (1u << 15)     // 10.2.5.16 extended receive descriptors

// TCTL (10.2.6.1), TIPG (10.2.6.3), TXDCTL (10.2.6.11), TARC (10.2.6.14).
#define E1000E_TCTL_EN (1u << 1)
#define E1000E_TCTL_PSP (1u << 3)
#define E1000E_TCTL_CT(n) ((uint32_t)(n) << 4)
#define E1000E_TCTL_COLD(n) ((uint32_t)(n) << 12)
#define E1000E_TCTL_RTLC (1u << 24)
#define E1000E_TIPG_COPPER (8u | 8u << 10 | 6u << 20) // IPGT 8, IPGR1 8, IPGR2 6 (the reset value)
#define E1000E_TXDCTL_GRAN (1u << 24)     // thresholds count descriptors
#define E1000E_TXDCTL_MUST1 (1u << 22)    // "must be set to 1b"
#define E1000E_TARC_ENABLE (1u << 10)

#define E1000E_RAH_AV (1u << 31)

// Extended receive descriptor (DS 7.1.5.2), 16 bytes. The driver writes
// the read format (buffer address, then zero: DD clear); the NIC
// overwrites it with the write-back format, the address gone.
union e1000e_rx_desc {
	struct {
		uint64_t addr;
		uint64_t zero;
	} rd;
	struct {
		uint32_t mrq;          // RSS type and queue (RSS off: 0)
		uint32_t hash_or_csum; // RSS hash, or IP id and checksum
		uint32_t staterr;      // extended status 19:0, extended errors 31:20
		uint16_t len;          // bytes in this buffer
		uint16_t vlan;
	} wb;
};
_Static_assert(sizeof(union e1000e_rx_desc) == 16, "receive descriptor size");

#define E1000E_RXD_DD (1u << 0)  // descriptor done
#define E1000E_RXD_EOP (1u << 1) // last buffer of the frame
// Errors of the EOP buffer (DS 7.1.5.2): CRC 24, symbol 25, sequence 26,
// carrier extension 28, RX data 31 (TCP/UDP 29 and IP 30 checksum errors
// say nothing about the frame).
#define E1000E_RXE_FRAME 0x97000000u

// Extended transmit data descriptor (DS 7.2.10.3), 16 bytes: DTALEN 19:0,
// DTYP 23:20 (0001b data), DCMD 31:24; then STA 3:0, POPTS 15:8, VLAN 31:16.
struct e1000e_tx_desc {
	uint64_t addr;
	uint32_t cmd_len;
	uint32_t sta;
};
_Static_assert(sizeof(struct e1000e_tx_desc) == 16, "transmit descriptor size");

#define E1000E_TXD_DTYP_DATA (1u << 20)
#define E1000E_TXD_EOP (1u << 24)  // end of packet
#define E1000E_TXD_IFCS (1u << 25) // insert the CRC
#define E1000E_TXD_RS (1u << 27)   // report status: DD written back
#define E1000E_TXD_DEXT (1u << 29) // extended descriptor
#define E1000E_TXD_LEN_MAX 0xfffffu
#define E1000E_TXS_DD (1u << 0)
#define E1000E_TXS_EC (1u << 1) // excess collisions
#define E1000E_TXS_LC (1u << 2) // late collision

#define E1000E_MMIO_SIZE 0x20000 // BAR0, 128 KiB
#endif
