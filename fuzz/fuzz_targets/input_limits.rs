//! Any bytes through the input-limit guard (keisoku_common::limits) with
//! small limits and any read sizes: it passes the bytes through unchanged
//! exactly when no line is longer than the limit, and otherwise fails with
//! the line limit; route latencies held exactly answer as a histogram does.
#![no_main]
use keisoku_common::limits::{exceeded, Guard, Limit, Limits};
use keisoku_logs::times::Times;
use libfuzzer_sys::fuzz_target;
use std::io::Read;

/// Hands out the input in the read sizes the fuzzer chose.
struct Chopped<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    at: usize,
}

impl Read for Chopped<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = self
            .sizes
            .get(self.at % self.sizes.len().max(1))
            .map_or(buf.len(), |&s| usize::from(s).max(1));
        self.at += 1;
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&max, rest)) = input.split_first() else {
        return;
    };
    let split = rest.len().min(8);
    let (sizes, data) = rest.split_at(split);
    let limits = Limits {
        line: u64::from(max % 64),
        ..Limits::default()
    };
    let mut out = Vec::new();
    let r = Guard::new(Chopped { data, sizes, at: 0 })
        .lines(&limits)
        .read_to_end(&mut out);
    let longest = data
        .split(|&b| b == b'\n')
        .map(|l| l.len() as u64)
        .max()
        .unwrap_or(0);
    match r {
        Ok(_) => {
            assert!(longest <= limits.line, "a {longest}-byte line passed");
            assert_eq!(out, data);
        }
        Err(e) => {
            assert!(longest > limits.line, "refused with no line over the limit");
            assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Line));
        }
    }

    // Response times from the same bytes: exact and histogram answers agree.
    let mut exact = Times::new();
    let mut hist = hdrhistogram::Histogram::<u32>::new_with_bounds(1, 2, 3).unwrap();
    hist.auto(true);
    for pair in data.chunks_exact(4).take(64) {
        let v = u64::from(u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]));
        exact.record(v as f64 / 1e6);
        hist.record(keisoku_logs::times::micros(v as f64 / 1e6)).unwrap();
    }
    let buckets: Vec<(u64, u64)> = hist
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
        .collect();
    assert_eq!(exact.buckets(), buckets);
    assert_eq!(exact.max_micros(), hist.max());
});
