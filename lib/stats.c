#include <stats.h>

int stats_median_index(const uint64_t *v, int n)
{
	// The median is the value with at most (n-1)/2 values below it and at
	// most n/2 above it; n is small, so counting is enough.
	for (int i = 0; i < n; i++) {
		int below = 0, above = 0;
		for (int j = 0; j < n; j++) {
			below += v[j] < v[i];
			above += v[j] > v[i];
		}
		if (below <= (n - 1) / 2 && above <= n / 2)
			return i;
	}
	return 0;
}

uint64_t stats_spread_ppm(const uint64_t *v, int n)
{
	uint64_t lo = v[0], hi = v[0], med = v[stats_median_index(v, n)];
	for (int i = 1; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	return med ? (uint64_t)((unsigned __int128)(hi - lo) * 1000000 / med) : 0;
}
