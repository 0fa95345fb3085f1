// A RAM disk behind drivers/ata/ata.h's interface, for the regions' disk
// backing (read_vr / write_vr). Checks its arguments as the driver does.
#ifndef FAKE_ATA_H
#define FAKE_ATA_H
#include <stdint.h>
#include "../../drivers/ata/ata.h"

#define FAKE_DISK_SECTORS 4096 // 2 MiB

struct fake_ata {
	uint64_t sectors;     // ata_sectors(): FAKE_DISK_SECTORS after reset
	uint64_t reads, writes; // calls that moved data
	uint64_t sectors_moved;
	uint64_t last_lba;
	long fail;            // when nonzero, call number fail_at returns it
	uint64_t fail_at;     // 1-based, counting every ata_read/ata_write call
	uint64_t calls;
};
extern struct fake_ata fake_ata;
extern uint8_t fake_disk[FAKE_DISK_SECTORS * ATA_SECTOR];

// Fills the disk with a byte pattern of its offset and zeroes the counters.
void fake_ata_reset(void);
#endif
