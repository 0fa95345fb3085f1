// Intel 82574L (QEMU's -device e1000e) NIC driver behind the netdev seam
// (kernel/net/netdev.h): zero-copy batched send and receive, as the e1000
// driver, with the 82574's own descriptor formats.
//
// Send: extended data descriptors (DEXT, no context descriptor: no
// offload) point at the caller's pieces, pinned until reclaimed; one TDT
// write per batch. Receive: extended descriptors (RFCTL.EXSTEN), whose
// write-back gives status, errors and length in one quadword; every
// buffer is one 4 KiB page handed to the caller, who refills the ring.
// Interrupts: MSI (the 82574 has it; INTx where the PCI layer finds no
// MSI capability), throttled by ITR; causes are acknowledged by writing
// them back to ICR, which clears them whether or not the read did.
//
// Concurrency: one CPU, interrupts off in the kernel; nothing here waits
// on the device longer than a bounded time.
#ifndef E1000E_H
#define E1000E_H
#include "net/netdev.h"

#define E1000E_MAX_NICS NETDEV_MAX
#define E1000E_TX_DESC 1024 // 4 contiguous frames of 16-byte descriptors
#define E1000E_RX_DESC 1024 // 4 frames; 1023 buffers posted at most
#define E1000E_MAX_FRAME 9018 // 9014 + an 802.1Q tag, without FCS (RCTL.LPE)
#define E1000E_MIN_FRAME 14   // an Ethernet header; TCTL.PSP pads to 60

// The driver's own counters beyond struct netdev_stats.
struct e1000e_info {
	int vector;                  // -1: polling only
	bool msi;
	uint64_t rx_descs, tx_descs; // descriptors consumed / queued
	uint64_t rx_overruns;        // RXO causes: a frame found too few buffers
	uint64_t tx_errors;          // packets done with excess or late collisions
	uint64_t hw_mpc, hw_rnbc, hw_roc, hw_crcerrs; // the NIC's counters (DS 10.2.7)
	int tx_free;                 // transmit descriptors free
	int tx_queued;               // descriptors queued, not reclaimed
};

// Attaches every 82574L not yet attached while the registry has room and
// registers each; returns how many now. One line per NIC.
int e1000e_probe_all(void);
// false when nd is not an e1000e NIC.
bool e1000e_info(struct netdev *nd, struct e1000e_info *out);

// Boot self-test (e1000e_test.c), e1000etest=MODE[,MODE...]: "loop",
// "basic", "link", "detach". Prints TEST lines; returns the failures.
int e1000e_selftest(const char *modes);
#endif
