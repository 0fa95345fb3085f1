"""The one way every benchmark turns samples into row values, for every system.

Samples of a size are pooled over all boot pairs (one list), then:
  median   the middle of the sorted pooled samples (the mean of the two middle
           ones for an even count), statistics.median;
  p99      the nearest-rank percentile: the smallest sample that at least 99 %
           of the samples do not exceed (sorted[ceil(0.99 n) - 1]);
  rates    (host CPU per gigabyte) the pooled totals divided, not a median of
           per-boot ratios.
The per-boot medians are kept beside them, to show the boot-to-boot spread.
Ratios between systems measured in interleaved boot pairs (tools/bench/abab.py)
get a seeded percentile bootstrap interval of their median (bootstrap_ci).
Standard library only (the Linux baseline's collect.py uses it too).
"""
import math
import random
import statistics


def median(values):
    return statistics.median(values) if values else None


def percentile(values, p):
    """Nearest-rank percentile, p in (0, 100]."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, min(len(v), math.ceil(p / 100.0 * len(v))))
    return v[k - 1]


def rnd(x, digits=1):
    return None if x is None else round(x, digits)


def pooled(per_boot):
    """All samples of a list of per-boot sample lists."""
    return [x for boot in per_boot for x in boot]


def latency(per_boot, digits=1):
    """Row fields of a latency: per_boot is one list of samples per boot pair."""
    xs = pooled(per_boot)
    return {"median_us": rnd(median(xs), digits), "p99_us": rnd(percentile(xs, 99), digits),
            "min_us": rnd(min(xs), digits), "mean_us": rnd(statistics.fmean(xs), digits),
            "n": len(xs), "boot_median_us": [rnd(median(b), digits) for b in per_boot if b]}


def per_gb(seconds, nbytes):
    """Seconds per gigabyte (10^9 bytes) from pooled totals."""
    return seconds / nbytes * 1e9 if nbytes else None


def bootstrap_ci(values, stat=None, resamples=2000, seed=25, level=0.95):
    """[low, high]: the percentile bootstrap interval of stat (default the
    median) over values, resampled with replacement `resamples` times by a
    generator seeded with `seed`, so the same values always give the same
    interval. None for no values; one value gives [it, it]."""
    if not values:
        return None
    stat = stat or median
    rng = random.Random(seed)
    k = len(values)
    draws = sorted(stat([values[rng.randrange(k)] for _ in range(k)]) for _ in range(resamples))
    lo = draws[max(0, int(math.floor((1 - level) / 2 * resamples)))]
    hi = draws[min(resamples - 1, int(math.ceil((1 + level) / 2 * resamples)) - 1)]
    return [lo, hi]


def ratio_ci95(num, den, reps=2000, seed=27):
    """[low, high] of median(num) / median(den) by a bootstrap over the
    interleaved pairs (num[i], den[i]: the same round), 95 %; None with
    fewer than 2 pairs."""
    pairs = list(zip(num, den))
    if len(pairs) < 2:
        return None

    def ratio(pick):
        d = median([p[1] for p in pick])
        return median([p[0] for p in pick]) / d if d else math.inf

    return [round(x, 3) for x in bootstrap_ci(pairs, ratio, reps, seed)]
