//! TCP reassembly with the meaning of gopacket's `tcpassembly` (which alp
//! uses with its default, unbounded buffers), so the same bytes reach the
//! HTTP parsers in the same pieces:
//! - each direction of a connection is its own stream, keyed by addresses
//!   and ports; a stream is created by a SYN or by a segment with data;
//! - a stream that began with a SYN delivers in-order data at once, a gap
//!   waits (out-of-order segments are kept, split in 1,900-byte pages);
//! - data already delivered (retransmissions, overlaps) is cut off;
//! - a FIN or RST that is delivered ends the stream, and the next SYN on
//!   the same addresses starts a new one;
//! - a stream whose SYN was not captured waits to the end of the capture,
//!   then everything waiting is delivered, gaps skipped ([`Assembler::flush`]).
//!
//! Each delivered piece keeps the capture time of its segment: alp takes
//! an HTTP message's time from the piece it starts in.

use std::collections::HashMap;
use std::net::IpAddr;

/// One direction of a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Sending address.
    pub src: IpAddr,
    /// Receiving address.
    pub dst: IpAddr,
    /// Sending port.
    pub src_port: u16,
    /// Receiving port.
    pub dst_port: u16,
}

/// Where reassembled bytes go.
pub trait Sink {
    /// A new stream begins (before any of its bytes).
    fn opened(&mut self, key: &FlowKey);
    /// In-order bytes of `key`'s stream, captured at `seen` (ns).
    fn bytes(&mut self, key: &FlowKey, bytes: &[u8], seen: i64);
    /// `key`'s stream ended (FIN, RST, or the end of the capture).
    fn closed(&mut self, key: &FlowKey);
}

/// gopacket's page size: out-of-order segments are kept in pieces of this.
const PAGE: usize = 1900;

struct Page {
    seq: u32,
    bytes: Vec<u8>,
    seen: i64,
    end: bool,
}

struct Half {
    next: Option<u32>,
    /// Waiting pages, in sequence order.
    pages: Vec<Page>,
    /// Creation order, so the final flush is deterministic.
    born: u64,
}

/// `t - s` in sequence space (gopacket's `Sequence.Difference`).
fn difference(s: u32, t: u32) -> i64 {
    let (mut s, mut t) = (i64::from(s), i64::from(t));
    if s > 1 << 30 && t < 1 << 30 {
        t += 1 << 32;
    } else if s < 1 << 30 && t > 3 << 30 {
        s += 1 << 32;
    }
    t - s
}

/// gopacket's `byteSpan`: the part of `bytes` (starting at `received`)
/// not yet delivered when `expected` is next, and the new next.
fn byte_span(expected: Option<u32>, received: u32, bytes: &[u8]) -> (&[u8], u32) {
    let Some(expected) = expected else {
        return (bytes, received.wrapping_add(bytes.len() as u32));
    };
    let span = difference(received, expected);
    if span <= 0 {
        (bytes, received.wrapping_add(bytes.len() as u32))
    } else if (bytes.len() as i64) < span {
        (&[], expected)
    } else {
        let span = span as usize;
        (
            &bytes[span..],
            expected.wrapping_add((bytes.len() - span) as u32),
        )
    }
}

/// A piece ready to deliver.
struct Piece<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    seen: i64,
    end: bool,
}

/// The streams of a capture being reassembled.
#[derive(Default)]
pub struct Assembler {
    halves: HashMap<FlowKey, Half>,
    born: u64,
}

impl Assembler {
    /// A segment of `key` captured at `seen`.
    #[allow(clippy::too_many_arguments)]
    pub fn segment(
        &mut self,
        key: FlowKey,
        seq: u32,
        syn: bool,
        fin: bool,
        rst: bool,
        payload: &[u8],
        seen: i64,
        sink: &mut impl Sink,
    ) {
        if !syn && !fin && !rst && payload.is_empty() {
            return;
        }
        if !self.halves.contains_key(&key) {
            if !syn && payload.is_empty() {
                return;
            }
            sink.opened(&key);
            self.born += 1;
            self.halves.insert(
                key,
                Half {
                    next: None,
                    pages: Vec::new(),
                    born: self.born,
                },
            );
        }
        let Some(half) = self.halves.get_mut(&key) else {
            return;
        };
        let mut ready: Vec<Piece<'_>> = Vec::new();
        match half.next {
            None if syn => {
                ready.push(Piece {
                    bytes: payload.into(),
                    seen,
                    end: false,
                });
                half.next = Some(seq.wrapping_add(payload.len() as u32).wrapping_add(1));
            }
            None => insert(half, seq, payload, seen, fin || rst),
            Some(next) if difference(next, seq) > 0 => insert(half, seq, payload, seen, fin || rst),
            Some(next) => {
                let (bytes, n) = byte_span(Some(next), seq, payload);
                half.next = Some(n);
                ready.push(Piece {
                    bytes: bytes.into(),
                    seen,
                    end: fin || rst,
                });
            }
        }
        if !ready.is_empty() {
            let close = deliver(half, ready, &key, sink);
            if close {
                self.close(&key, sink);
            }
        }
    }

    fn close(&mut self, key: &FlowKey, sink: &mut impl Sink) {
        self.halves.remove(key);
        sink.closed(key);
    }

    /// The end of the capture: every stream delivers what it still holds,
    /// skipping gaps, and ends (gopacket's `FlushAll`). Streams are flushed
    /// in the order they began (gopacket's order is its map's).
    pub fn flush(&mut self, sink: &mut impl Sink) {
        let mut keys: Vec<(u64, FlowKey)> = self.halves.iter().map(|(k, h)| (h.born, *k)).collect();
        keys.sort_unstable_by_key(|(born, _)| *born);
        for (_, key) in keys {
            while let Some(half) = self.halves.get_mut(&key) {
                if half.pages.is_empty() {
                    self.close(&key, sink);
                    break;
                }
                let mut ready = Vec::new();
                pop_page(half, &mut ready);
                if deliver(half, ready, &key, sink) {
                    self.close(&key, sink);
                    break;
                }
            }
        }
    }
}

/// Keeps a segment that cannot be delivered yet, in pages.
fn insert(half: &mut Half, seq: u32, payload: &[u8], seen: i64, end: bool) {
    let mut pages: Vec<Page> = payload
        .chunks(PAGE)
        .enumerate()
        .map(|(i, c)| Page {
            seq: seq.wrapping_add((i * PAGE) as u32),
            bytes: c.to_vec(),
            seen,
            end: false,
        })
        .collect();
    if pages.is_empty() {
        pages.push(Page {
            seq,
            bytes: Vec::new(),
            seen,
            end: false,
        });
    }
    if let Some(last) = pages.last_mut() {
        last.end = end;
    }
    // After the last waiting page that does not start after `seq`
    // (gopacket walks back from the end).
    let mut at = half.pages.len();
    while at > 0 && difference(half.pages[at - 1].seq, seq) < 0 {
        at -= 1;
    }
    half.pages.splice(at..at, pages);
}

/// Moves the first waiting page to `ready`, cut to what is new.
fn pop_page(half: &mut Half, ready: &mut Vec<Piece<'_>>) {
    let page = half.pages.remove(0);
    let (bytes, next) = byte_span(half.next, page.seq, &page.bytes);
    let bytes = bytes.to_vec();
    half.next = Some(next);
    ready.push(Piece {
        bytes: bytes.into(),
        seen: page.seen,
        end: page.end,
    });
}

/// Adds the waiting pages that became contiguous, hands everything to the
/// sink; true when the stream ends with it.
fn deliver(
    half: &mut Half,
    mut ready: Vec<Piece<'_>>,
    key: &FlowKey,
    sink: &mut impl Sink,
) -> bool {
    while let (Some(first), Some(next)) = (half.pages.first(), half.next) {
        if difference(next, first.seq) > 0 {
            break;
        }
        pop_page(half, &mut ready);
    }
    let end = ready.last().is_some_and(|p| p.end);
    for p in &ready {
        sink.bytes(key, &p.bytes, p.seen);
    }
    end
}
