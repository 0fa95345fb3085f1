#include "blkdev.h"
#include <stddef.h>

static const struct blkdev *backing;

void blkdev_register(const struct blkdev *b) { backing = b; }
const struct blkdev *blkdev_get(void) { return backing; }
