//! Shared by the clientlog targets: one encoding's reader over the bytes,
//! through the aggregator; every second handed on and the totals must
//! agree (nothing counted twice or lost).
use keisoku_clientlog::{read_encoded, Aggregator, Encoding, Read};

pub fn run(encoding: Encoding, data: &[u8]) {
    let mut per_second = 0u64;
    let read = {
        let mut agg = Aggregator::new(None, |s| per_second += s.responses + s.transport_errors);
        read_encoded(encoding, data, "fuzz", &mut agg)
    };
    if let Ok(Read::Samples(t)) = read {
        assert_eq!(per_second + t.late, t.samples);
        assert_eq!(t.responses + t.transport_errors, t.samples);
        assert!(t.errors >= t.transport_errors);
    }
    let _ = keisoku_clientlog::detect(data);
}
