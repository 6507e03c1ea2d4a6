//! Any bytes as a blob of a damaged run store (series times and values,
//! profile sample nodes, times and weights), with any item count the row
//! claims (the first four bytes): every decoder returns an error or
//! exactly that many items, never panics; and whatever is encoded decodes
//! back unchanged.
#![no_main]
use keisoku_store::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (count, blob) = data.split_at(4);
    let n = u32::from_le_bytes([count[0], count[1], count[2], count[3]]) as usize;
    // A row may claim any count up to what SQLite's integers hold.
    for n in [n, n << 32, usize::MAX / 4 + n] {
        let mut t = Vec::new();
        if codec::decode_times(blob, n, &mut t).is_ok() {
            assert_eq!(t.len(), n);
        }
        let mut ns = Vec::new();
        if codec::decode_times_ns(blob, n, &mut ns).is_ok() {
            assert_eq!(ns.len(), n);
        }
        let mut ix = Vec::new();
        if codec::decode_indexes(blob, n, &mut ix).is_ok() {
            assert_eq!(ix.len(), n);
            let mut again = Vec::new();
            codec::decode_indexes(&codec::encode_indexes(&ix), n, &mut again).unwrap();
            assert_eq!(ix, again);
        }
        let mut v = Vec::new();
        if codec::decode_values(blob, n, &mut v).is_ok() {
            assert_eq!(v.len(), n);
            let mut again = Vec::new();
            codec::decode_values(&codec::encode_values(&v), n, &mut again).unwrap();
            assert!(v
                .iter()
                .zip(&again)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    // The blob's bytes as values to encode: indexes, nanosecond times
    // (whole microseconds survive), millisecond times on the microsecond grid.
    let words: Vec<u32> = blob
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut ix = Vec::new();
    codec::decode_indexes(&codec::encode_indexes(&words), words.len(), &mut ix).unwrap();
    assert_eq!(ix, words);
    let ns: Vec<u64> = words.iter().map(|&w| u64::from(w) * 1000).collect();
    let mut back = Vec::new();
    codec::decode_times_ns(&codec::encode_times_ns(&ns), ns.len(), &mut back).unwrap();
    assert_eq!(back, ns);
    let ms: Vec<f64> = words.iter().map(|&w| f64::from(w) / 1000.0).collect();
    let mut back = Vec::new();
    codec::decode_times(&codec::encode_times(&ms), ms.len(), &mut back).unwrap();
    assert_eq!(back, ms);
});
