// ATA PIO driver (ATA/ATAPI-6, sections 8.23 IDENTIFY DEVICE, 8.26 READ SECTORS
// EXT, 8.62 WRITE SECTORS EXT; 9.7 and 9.8 the PIO data-in/out protocols).
// Polled: the disk is the regions' backing store, not on a hot path.
#include "ata.h"
#include "../../kernel/arch/x86_64/arch.h"
#include "../../kernel/kprintf.h"
#include "../../kernel/blkdev.h"
#include <err.h>

#define BASE 0x1f0
#define CTRL 0x3f6
enum { DATA = 0, ERROR = 1, COUNT = 2, LBA0 = 3, LBA1 = 4, LBA2 = 5, DRIVE = 6, CMD = 7 };
#define ST_ERR 0x01
#define ST_DRQ 0x08
#define ST_DF 0x20
#define ST_BSY 0x80
#define CMD_READ_EXT 0x24
#define CMD_WRITE_EXT 0x34
#define CMD_FLUSH_EXT 0xea
#define CMD_IDENTIFY 0xec
#define SPIN_LIMIT 10000000

static uint64_t nsectors;
uint64_t ata_errors;

// Waits for BSY to clear; then for DRQ when `drq`. Returns -E_IO on error
// or device fault, -E_TIMEOUT when the drive never answers.
static long wait_ready(bool drq)
{
	for (long i = 0; i < SPIN_LIMIT; i++) {
		uint8_t st = arch_inb(BASE + CMD);
		if (st == 0xff || (i > 1000 && st == 0))
			return -E_NODEV; // floating bus: no drive
		if (st & ST_BSY)
			continue;
		if (st & (ST_ERR | ST_DF))
			return -E_IO;
		if (!drq || (st & ST_DRQ))
			return 0;
	}
	return -E_TIMEOUT;
}

static void select_lba48(uint64_t lba, uint32_t count)
{
	arch_outb(BASE + DRIVE, 0x40); // master, LBA
	arch_outb(BASE + COUNT, (uint8_t)(count >> 8));
	arch_outb(BASE + LBA0, (uint8_t)(lba >> 24));
	arch_outb(BASE + LBA1, (uint8_t)(lba >> 32));
	arch_outb(BASE + LBA2, (uint8_t)(lba >> 40));
	arch_outb(BASE + COUNT, (uint8_t)count);
	arch_outb(BASE + LBA0, (uint8_t)lba);
	arch_outb(BASE + LBA1, (uint8_t)(lba >> 8));
	arch_outb(BASE + LBA2, (uint8_t)(lba >> 16));
}

int ata_init(void)
{
	arch_outb(CTRL, 0x02); // nIEN: we poll
	arch_outb(BASE + DRIVE, 0xa0);
	if (arch_inb(BASE + CMD) == 0xff)
		return -E_NODEV;
	arch_outb(BASE + CMD, CMD_IDENTIFY);
	if (arch_inb(BASE + CMD) == 0 || wait_ready(true) < 0)
		return -E_NODEV;
	uint16_t id[256];
	for (int i = 0; i < 256; i++)
		id[i] = arch_inw(BASE + DATA);
	// Words 100-103: LBA48 sector count; 60-61: LBA28 count.
	nsectors = (uint64_t)id[100] | (uint64_t)id[101] << 16 | (uint64_t)id[102] << 32;
	if (!(id[83] & (1 << 10)) || !nsectors)
		nsectors = (uint64_t)id[60] | (uint64_t)id[61] << 16;
	pr_info("ata: disk of %lu sectors (%lu MiB)\n", nsectors, nsectors >> 11);
	static const struct blkdev ata_blk = { "ata", ata_sectors, ata_read, ata_write };
	blkdev_register(&ata_blk);
	return 0;
}

uint64_t ata_sectors(void) { return nsectors; }

static long check(uint64_t lba, uint32_t count)
{
	if (!nsectors)
		return -E_NODEV;
	if (count == 0 || count > 65536 || lba + count > nsectors)
		return -E_RANGE;
	return 0;
}

long ata_read(uint64_t lba, uint32_t count, void *buf)
{
	long e = check(lba, count);
	if (e || (e = wait_ready(false)))
		return e;
	select_lba48(lba, count);
	arch_outb(BASE + CMD, CMD_READ_EXT);
	uint16_t *p = buf;
	for (uint32_t s = 0; s < count; s++) {
		if ((e = wait_ready(true))) {
			ata_errors++;
			return e;
		}
		for (int i = 0; i < ATA_SECTOR / 2; i++)
			*p++ = arch_inw(BASE + DATA);
	}
	return 0;
}

long ata_write(uint64_t lba, uint32_t count, const void *buf)
{
	long e = check(lba, count);
	if (e || (e = wait_ready(false)))
		return e;
	select_lba48(lba, count);
	arch_outb(BASE + CMD, CMD_WRITE_EXT);
	const uint16_t *p = buf;
	for (uint32_t s = 0; s < count; s++) {
		if ((e = wait_ready(true))) {
			ata_errors++;
			return e;
		}
		for (int i = 0; i < ATA_SECTOR / 2; i++)
			arch_outw(BASE + DATA, *p++);
	}
	arch_outb(BASE + CMD, CMD_FLUSH_EXT); // the data reaches the medium
	return wait_ready(false);
}
