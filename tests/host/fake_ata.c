// RAM disk for drivers/ata/ata.h: the real driver polls I/O ports; the
// regions' disk paths only need its three calls and its error codes.
#include "fake_ata.h"
#include "fake_arch.h"
#include "err.h"
#include "blkdev.h"
#include <string.h>

struct fake_ata fake_ata;
uint8_t fake_disk[FAKE_DISK_SECTORS * ATA_SECTOR];

static const struct blkdev fake_blk = { "fake-ata", ata_sectors, ata_read, ata_write };

void fake_ata_reset(void)
{
	for (size_t i = 0; i < sizeof(fake_disk); i++)
		fake_disk[i] = (uint8_t)(i * 7 + (i >> 12));
	fake_ata = (struct fake_ata){ .sectors = FAKE_DISK_SECTORS };
	blkdev_register(&fake_blk);
}

uint64_t ata_sectors(void) { return fake_ata.sectors; }

// The driver's checks (ata.c check()), then the injected failure if due.
static long check(uint64_t lba, uint32_t count, const void *buf)
{
	fake_ata.calls++;
	if (!fake_ata.sectors)
		return -E_NODEV;
	if (count == 0 || count > 65536 || lba + count > fake_ata.sectors)
		return -E_RANGE;
	if (fake_ata.fail && fake_ata.calls == fake_ata.fail_at)
		return fake_ata.fail;
	arch_v2p(buf); // the buffer must be simulated RAM (a frame)
	fake_ata.last_lba = lba;
	fake_ata.sectors_moved += count;
	return 0;
}

long ata_read(uint64_t lba, uint32_t count, void *buf)
{
	long e = check(lba, count, buf);
	if (e)
		return e;
	fake_ata.reads++;
	memcpy(buf, fake_disk + lba * ATA_SECTOR, (size_t)count * ATA_SECTOR);
	return 0;
}

long ata_write(uint64_t lba, uint32_t count, const void *buf)
{
	long e = check(lba, count, buf);
	if (e)
		return e;
	fake_ata.writes++;
	memcpy(fake_disk + lba * ATA_SECTOR, buf, (size_t)count * ATA_SECTOR);
	return 0;
}
