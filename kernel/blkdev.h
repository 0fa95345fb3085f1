// The block-device seam: the backing store of regions (read_vr/write_vr)
// is whatever block device registered here; the ATA driver is one.
#ifndef BLKDEV_H
#define BLKDEV_H
#include <stdint.h>

#define BLK_SECTOR 512

struct blkdev {
	const char *name;
	uint64_t (*sectors)(void); // capacity now (0: no medium)
	// Move count sectors at lba; 0, or -E_RANGE / -E_NODEV / -E_IO.
	long (*read)(uint64_t lba, uint32_t count, void *buf);
	long (*write)(uint64_t lba, uint32_t count, const void *buf);
};

// Makes b the backing store (the last one registered wins).
void blkdev_register(const struct blkdev *b);
const struct blkdev *blkdev_get(void); // NULL when there is none
#endif
