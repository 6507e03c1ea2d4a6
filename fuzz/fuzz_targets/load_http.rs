//! Any bytes as what a target answered `keisoku bench` (the load engine's
//! response reader, crates/load/src/http.rs), read as the engine reads
//! them: pipelined responses on one connection, arriving in pieces. No
//! panic; a reader never claims more bytes than it was given; what it keeps
//! buffered between reads stays under its line limit; and cutting the
//! bytes into pieces never changes what was read.
#![no_main]
use keisoku_load::http::{Feed, ResponseReader, MAX_LINE};
use libfuzzer_sys::fuzz_target;

/// How a connection's responses ended: each complete response's status,
/// then whether the stream ended in a malformed response, a cut-short one
/// or cleanly.
#[derive(Debug, PartialEq)]
struct Outcome {
    statuses: Vec<u16>,
    end: &'static str,
}

fn read(data: &[u8], head: bool, piece: usize) -> Outcome {
    let mut statuses = Vec::new();
    let mut reader = ResponseReader::new(head);
    let mut buf: Vec<u8> = Vec::new();
    let mut rest = data;
    loop {
        let take = piece.min(rest.len());
        buf.extend_from_slice(&rest[..take]);
        rest = &rest[take..];
        // Feed until the buffer yields no further complete response.
        loop {
            match reader.feed(&buf) {
                Ok(Feed::More { consumed }) => {
                    assert!(
                        consumed <= buf.len(),
                        "consumed {consumed} of {}",
                        buf.len()
                    );
                    buf.drain(..consumed);
                    assert!(
                        buf.len() <= MAX_LINE + piece,
                        "{} bytes kept between reads",
                        buf.len()
                    );
                    break;
                }
                Ok(Feed::Done { consumed }) => {
                    assert!(
                        consumed <= buf.len(),
                        "consumed {consumed} of {}",
                        buf.len()
                    );
                    buf.drain(..consumed);
                    statuses.push(reader.status);
                    if !reader.keep_alive {
                        return Outcome {
                            statuses,
                            end: "closed",
                        };
                    }
                    reader = ResponseReader::new(head);
                    if buf.is_empty() {
                        break;
                    }
                }
                Err(_) => {
                    return Outcome {
                        statuses,
                        end: "malformed",
                    }
                }
            }
        }
        if rest.is_empty() {
            break;
        }
    }
    // The server closes the connection here.
    let end = if reader.eof() {
        if reader.has_head() {
            statuses.push(reader.status);
        }
        "eof"
    } else if reader.has_head() || !buf.is_empty() {
        "cut short"
    } else {
        "eof"
    };
    Outcome { statuses, end }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, data)) = data.split_first() else {
        return;
    };
    let head = flags & 1 != 0;
    let whole = read(data, head, data.len().max(1));
    let piece = usize::from(flags >> 1) + 1;
    let pieces = read(data, head, piece);
    assert_eq!(whole, pieces, "pieces of {piece} bytes read differently");
});
