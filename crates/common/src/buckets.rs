//! Sparse logarithmic latency buckets, the one histogram shape of Run JSON's
//! `route_seconds` (docs/run-json.md). Bucket `k` holds latencies in
//! `[2^(k/8), 2^((k+1)/8))` microseconds: eight buckets per doubling keep a
//! percentile within 9% of the truth while a second of a route costs a few
//! pairs, not an HdrHistogram. web/src/report/buckets.ts mirrors these
//! functions so pages and the terminal read the same percentiles.

/// Buckets per doubling of latency.
pub const BUCKETS_PER_DOUBLING: u32 = 8;

/// The bucket of a latency in microseconds: `floor(8 * log2(us))`; a value
/// below 1 µs (or not a number) goes to bucket 0.
pub fn latency_bucket(us: f64) -> u32 {
    if us.is_nan() || us < 1.0 {
        return 0;
    }
    let per = f64::from(BUCKETS_PER_DOUBLING);
    let mut k = (per * us.log2()).floor().max(0.0) as u32;
    // log2 may land a hair off at an edge: settle on the bucket whose
    // bounds hold the value, so every port agrees at the edges.
    while k > 0 && bucket_lower_us(k) > us {
        k -= 1;
    }
    while bucket_lower_us(k + 1) <= us {
        k += 1;
    }
    k
}

/// The lowest latency (µs) bucket `k` holds, `2^(k/8)`.
pub fn bucket_lower_us(k: u32) -> f64 {
    (f64::from(k) / f64::from(BUCKETS_PER_DOUBLING)).exp2()
}

/// The bucket's upper edge (µs), `2^((k+1)/8)`: what a percentile read from
/// buckets reports, so it never understates a latency.
pub fn bucket_upper_us(k: u32) -> f64 {
    bucket_lower_us(k + 1)
}

/// The latency (µs) at percentile `q` (0-100) of sparse buckets `(k, n)`,
/// in any order: the upper edge of the bucket holding that rank; 0 when
/// the buckets are empty.
pub fn bucket_percentile_us(buckets: &[(u32, u64)], q: f64) -> f64 {
    let total: u64 = buckets.iter().map(|&(_, n)| n).sum();
    if total == 0 {
        return 0.0;
    }
    let mut sorted: Vec<(u32, u64)> = buckets.to_vec();
    sorted.sort_unstable_by_key(|&(k, _)| k);
    // The rank of the q-th percentile, 1-based, at least the first value.
    let rank = ((q.clamp(0.0, 100.0) / 100.0) * total as f64)
        .ceil()
        .max(1.0) as u64;
    let mut seen = 0u64;
    for &(k, n) in &sorted {
        seen += n;
        if seen >= rank {
            return bucket_upper_us(k);
        }
    }
    sorted.last().map_or(0.0, |&(k, _)| bucket_upper_us(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_definition() {
        assert_eq!(latency_bucket(0.0), 0);
        assert_eq!(latency_bucket(0.5), 0);
        assert_eq!(latency_bucket(f64::NAN), 0);
        assert_eq!(latency_bucket(1.0), 0);
        // 2 µs starts the ninth bucket, 1 ms = 2^9.97 sits in bucket 79.
        assert_eq!(latency_bucket(2.0), 8);
        assert_eq!(latency_bucket(1.999), 7);
        assert_eq!(latency_bucket(1000.0), 79);
        assert_eq!(latency_bucket(1024.0), 80);
        for k in 0..400 {
            let lo = bucket_lower_us(k);
            assert_eq!(latency_bucket(lo), k, "lower edge of {k}");
            assert_eq!(
                latency_bucket(bucket_upper_us(k)),
                k + 1,
                "upper edge of {k}"
            );
            let mid = (lo + bucket_upper_us(k)) / 2.0;
            assert_eq!(latency_bucket(mid), k);
        }
    }

    #[test]
    fn a_bucket_is_within_nine_percent() {
        for us in [1.5, 37.0, 999.0, 12_345.0, 3_600_000_000.0] {
            let k = latency_bucket(us);
            assert!(bucket_lower_us(k) <= us && us < bucket_upper_us(k));
            assert!(bucket_upper_us(k) / us < 1.091, "{us}");
        }
    }

    #[test]
    fn percentiles_report_the_upper_edge() {
        assert_eq!(bucket_percentile_us(&[], 99.0), 0.0);
        // 99 fast (bucket 80, ~1 ms) and one slow (bucket 160, ~1 s).
        let b = [(160, 1), (80, 99)];
        assert_eq!(bucket_percentile_us(&b, 50.0), bucket_upper_us(80));
        assert_eq!(bucket_percentile_us(&b, 99.0), bucket_upper_us(80));
        assert_eq!(bucket_percentile_us(&b, 99.5), bucket_upper_us(160));
        assert_eq!(bucket_percentile_us(&b, 100.0), bucket_upper_us(160));
        assert_eq!(bucket_percentile_us(&b, 0.0), bucket_upper_us(80));
    }
}
