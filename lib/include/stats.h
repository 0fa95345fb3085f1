// Small order statistics, for the kernel and user programs alike.
#ifndef LIB_STATS_H
#define LIB_STATS_H
#include <stdint.h>

// Index in v[0..n) of the median value (the lower of the two middle ones
// when n is even); v is not reordered. n >= 1; it counts, O(n^2): for the
// few to hundred samples of a calibration or a boot-time measurement.
int stats_median_index(const uint64_t *v, int n);
// (max - min) / median in parts per million; 0 when the median is 0.
uint64_t stats_spread_ppm(const uint64_t *v, int n);
#endif
