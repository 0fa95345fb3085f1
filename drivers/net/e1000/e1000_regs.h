// Intel 8254x (e1000) registers, bits and descriptor formats.
// "SDM" below is the PCI/PCI-X Family of Gigabit Ethernet Controllers
// Software Developer's Manual (8254x, 317453), chapter 13 for registers,
// chapter 3 for descriptors, chapter 5 for the EEPROM.
#ifndef E1000_REGS_H
#define E1000_REGS_H
#include <stdint.h>

// Register offsets in the memory BAR (SDM 13.4, table 13-2).
#define E1000_CTRL 0x0000   // 13.4.1 device control
#define E1000_STATUS 0x0008 // 13.4.2 device status
#define E1000_EECD 0x0010   // 13.4.3 EEPROM/flash control and data
#define E1000_EERD 0x0014   // 13.4.4 EEPROM read (not on 82544GC/EI)
#define E1000_FCAL 0x0028   // 13.4.8 flow control address low
#define E1000_FCAH 0x002c   // 13.4.9 flow control address high
#define E1000_FCT 0x0030    // 13.4.10 flow control type
#define E1000_FCTTV 0x0170  // 13.4.12 flow control transmit timer value
#define E1000_ICR 0x00c0    // 13.4.17 interrupt cause read (clears on read)
#define E1000_ITR 0x00c4    // 13.4.18 interrupt throttling, 256 ns units
#define E1000_ICS 0x00c8    // 13.4.19 interrupt cause set
#define E1000_IMS 0x00d0    // 13.4.20 interrupt mask set/read
#define E1000_IMC 0x00d8    // 13.4.21 interrupt mask clear
#define E1000_RCTL 0x0100   // 13.4.22 receive control
#define E1000_TCTL 0x0400   // 13.4.33 transmit control
#define E1000_TIPG 0x0410   // 13.4.34 transmit inter-packet gap
#define E1000_RDBAL 0x2800  // 13.4.25 receive descriptor base low
#define E1000_RDBAH 0x2804  // 13.4.26 receive descriptor base high
#define E1000_RDLEN 0x2808  // 13.4.27 receive ring length in bytes (multiple of 128)
#define E1000_RDH 0x2810    // 13.4.28 receive head
#define E1000_RDT 0x2818    // 13.4.29 receive tail
#define E1000_RDTR 0x2820   // 13.4.30 receive delay timer, 1.024 us units
#define E1000_RADV 0x282c   // 13.4.31 receive absolute delay, 1.024 us units
#define E1000_TDBAL 0x3800  // 13.4.36 transmit descriptor base low
#define E1000_TDBAH 0x3804  // 13.4.37 transmit descriptor base high
#define E1000_TDLEN 0x3808  // 13.4.38 transmit ring length in bytes (multiple of 128)
#define E1000_TDH 0x3810    // 13.4.39 transmit head
#define E1000_TDT 0x3818    // 13.4.40 transmit tail: the doorbell
#define E1000_TIDV 0x3820   // 13.4.41 transmit interrupt delay
#define E1000_TADV 0x382c   // 13.4.44 transmit absolute delay
#define E1000_MTA 0x5200    // 13.5.1 multicast table, 128 words
#define E1000_RAL0 0x5400   // 13.5.2 receive address 0 low
#define E1000_RAH0 0x5404   // 13.5.3 receive address 0 high

// Statistics (SDM 13.7): the manual says they clear on read.
#define E1000_CRCERRS 0x4000 // 13.7.1 CRC errors
#define E1000_MPC 0x4010     // 13.7.5 missed packets (no room in the FIFO/ring)
#define E1000_RNBC 0x40a0    // 13.7.35 receive no buffers (ring empty)
#define E1000_ROC 0x40ac     // 13.7.38 receive oversize (longer than allowed)

// CTRL (13.4.1).
#define E1000_CTRL_FD (1u << 0)      // full duplex
#define E1000_CTRL_LRST (1u << 3)    // link reset
#define E1000_CTRL_ASDE (1u << 5)    // auto-speed detection
#define E1000_CTRL_SLU (1u << 6)     // set link up
#define E1000_CTRL_ILOS (1u << 7)    // invert loss-of-signal
#define E1000_CTRL_FRCSPD (1u << 11) // force speed
#define E1000_CTRL_FRCDPLX (1u << 12)
#define E1000_CTRL_RST (1u << 26) // global reset, self-clearing
#define E1000_CTRL_VME (1u << 30) // VLAN mode
#define E1000_CTRL_PHY_RST (1u << 31)

// STATUS (13.4.2).
#define E1000_STATUS_LU (1u << 1)   // link up
#define E1000_STATUS_FUNC (3u << 2) // function id (dual-port 82546)

// EECD (13.4.3) and the Microwire protocol (5.3.1).
#define E1000_EECD_SK (1u << 0)  // clock
#define E1000_EECD_CS (1u << 1)  // chip select
#define E1000_EECD_DI (1u << 2)  // data to the EEPROM
#define E1000_EECD_DO (1u << 3)  // data from the EEPROM
#define E1000_EECD_REQ (1u << 6) // request access (not 82544)
#define E1000_EECD_GNT (1u << 7) // access granted
#define E1000_EECD_SIZE (1u << 9) // 82540/5/6 Microwire: 256 words (8 address bits) when set
#define E1000_EE_OP_READ 0x6      // Microwire READ opcode, 3 bits (110b)

// EERD (13.4.4): two layouts. 82540/82545/82546: START bit 0, DONE bit 4,
// address 15:8. 82541/82547: START bit 0, DONE bit 1, address 15:2.
// Data 31:16 in both.
#define E1000_EERD_START (1u << 0)
#define E1000_EERD_DONE_8254X (1u << 4)
#define E1000_EERD_ADDR_8254X 8
#define E1000_EERD_DONE_82541 (1u << 1)
#define E1000_EERD_ADDR_82541 2
#define E1000_EERD_DATA 16

// EEPROM words (SDM 5.6): the Ethernet address in words 0-2, and the
// words 0x00-0x3f sum to 0xBABA.
#define E1000_EE_MAC 0x00
#define E1000_EE_WORDS 0x40
#define E1000_EE_SUM 0xbaba

// Interrupt causes, shared by ICR/ICS/IMS/IMC (13.4.17).
#define E1000_INT_TXDW (1u << 0)   // transmit descriptor written back
#define E1000_INT_TXQE (1u << 1)   // transmit queue empty
#define E1000_INT_LSC (1u << 2)    // link status change
#define E1000_INT_RXSEQ (1u << 3)  // receive sequence error
#define E1000_INT_RXDMT0 (1u << 4) // receive descriptors below the minimum threshold
#define E1000_INT_RXO (1u << 6)    // receiver overrun
#define E1000_INT_RXT0 (1u << 7)   // receive timer: a frame arrived
#define E1000_INT_ALL 0xffffffffu
#define E1000_INT_RX (E1000_INT_RXT0 | E1000_INT_RXO | E1000_INT_RXDMT0)

// RCTL (13.4.22).
#define E1000_RCTL_EN (1u << 1)
#define E1000_RCTL_UPE (1u << 3)        // unicast promiscuous
#define E1000_RCTL_MPE (1u << 4)        // multicast promiscuous
#define E1000_RCTL_LPE (1u << 5)        // long packets (jumbo, up to 16384)
#define E1000_RCTL_RDMTS_HALF (0u << 8) // RXDMT0 when half the ring is free
#define E1000_RCTL_BAM (1u << 15)       // accept broadcast
#define E1000_RCTL_BSIZE_4096 (3u << 16) // with BSEX: 4096-byte buffers
#define E1000_RCTL_BSEX (1u << 25)      // buffer size x16
#define E1000_RCTL_SECRC (1u << 26)     // strip the Ethernet CRC

// TCTL (13.4.33) and TIPG (13.4.34).
#define E1000_TCTL_EN (1u << 1)
#define E1000_TCTL_PSP (1u << 3)           // pad short packets to 64 bytes
#define E1000_TCTL_CT(n) ((uint32_t)(n) << 4)    // collision threshold
#define E1000_TCTL_COLD(n) ((uint32_t)(n) << 12) // collision distance
#define E1000_TCTL_RTLC (1u << 24)         // retransmit on late collision
#define E1000_TIPG_COPPER (10u | 8u << 10 | 6u << 20) // IPGT 10, IPGR1 8, IPGR2 6 (IEEE 802.3)

#define E1000_RAH_AV (1u << 31) // receive address valid

// Legacy receive descriptor (SDM 3.2.3).
struct e1000_rx_desc {
	uint64_t addr;
	uint16_t len;
	uint16_t csum;
	uint8_t status;
	uint8_t errors;
	uint16_t special;
} __attribute__((packed));

#define E1000_RXD_DD (1u << 0)  // 3.2.3.1 descriptor done
#define E1000_RXD_EOP (1u << 1) // end of packet
// 3.2.3.2 errors (valid on the EOP descriptor): CRC, symbol, sequence,
// carrier extension, RX data error. TCP/IP checksum errors are bits 5-6.
#define E1000_RXE_FRAME 0x97u

// Legacy transmit descriptor (SDM 3.3.3).
struct e1000_tx_desc {
	uint64_t addr;
	uint16_t len;
	uint8_t cso;
	uint8_t cmd;
	uint8_t status;
	uint8_t css;
	uint16_t special;
} __attribute__((packed));

#define E1000_TXD_EOP (1u << 0)  // 3.3.3.1 end of packet
#define E1000_TXD_IFCS (1u << 1) // insert the Ethernet CRC
#define E1000_TXD_RS (1u << 3)   // report status: write DD back
#define E1000_TXS_DD (1u << 0)   // 3.3.3.2 descriptor done
#define E1000_TXS_EC (1u << 1)   // excess collisions
#define E1000_TXS_LC (1u << 2)   // late collision

#define E1000_MMIO_SIZE 0x20000 // the register window (BAR0, 128 KiB)

#endif
