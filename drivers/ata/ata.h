// ATA/IDE disk, primary channel master, PIO with LBA48: the backing store of
// virtual regions (read_vr / write_vr).
#ifndef ATA_H
#define ATA_H
#include <stdint.h>

#define ATA_SECTOR 512

int ata_init(void);          // 0 when a disk answered IDENTIFY
uint64_t ata_sectors(void);  // 0 when there is no disk
long ata_read(uint64_t lba, uint32_t count, void *buf);
long ata_write(uint64_t lba, uint32_t count, const void *buf);
#endif
