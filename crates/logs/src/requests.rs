//! The requests an access log recorded, one at a time, for replaying them
//! (`keisoku bench --replay`): every format `keisoku logs` reads, the same
//! detection, the same input limits and gzip handling, streamed so a 1 GB
//! log is never held whole.
//!
//! What a log gives a replay: the method, the URI as written (query
//! included), the timestamp the server wrote (for most servers the *end* of
//! the request) and its resolution, and the whole request time when the
//! format has one, so the start can be recovered as `time - request_time`.

use crate::format::{trim_line, FieldNames, Format, LineError, LineParser};
use crate::uri::QueryMode;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// One request as the log recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// Line number in the file (1-based).
    pub line: u64,
    /// The timestamp, Unix seconds.
    pub time: f64,
    /// Digits after the second in the timestamp: 0 when the log wrote
    /// whole seconds (`$time_local`), 3 for milliseconds (`$msec`).
    pub fraction_digits: u8,
    /// The whole request time in seconds, when the format records one.
    pub request_time: Option<f64>,
    /// Method as written.
    pub method: String,
    /// The request target as written (path and query; absolute form for a
    /// proxy's log).
    pub uri: Vec<u8>,
    /// The URI normalised as `keisoku logs` groups it (query dropped).
    pub route_uri: String,
}

/// A line that is not a request a replay can send, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unread {
    /// Line number (1-based).
    pub line: u64,
    /// Why the line was not read.
    pub reason: String,
}

/// What the next line held.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// A request.
    Request(Recorded),
    /// A line that holds no request the replay can send.
    Unread(Unread),
}

/// Why a log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read (or broke an input limit).
    #[error("{path}: {source}")]
    Io {
        /// The log.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The format is not recognised or not usable.
    #[error("{path}: {reason}")]
    Format {
        /// The log.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Streams the requests of one access log.
pub struct RequestReader {
    path: PathBuf,
    parser: LineParser,
    reader: Box<dyn BufRead + Send>,
    line: u64,
    buf: Vec<u8>,
    timed: bool,
}

/// The same format with the request time read first: alp's records prefer
/// the upstream (app) time, a replay wants the whole request's.
fn request_time_first(format: Format) -> Result<Format, String> {
    let swap = |n: FieldNames| FieldNames {
        response_time: n.request_time.clone(),
        request_time: n.response_time.clone(),
        ..n
    };
    Ok(match format {
        Format::Ltsv(n) => Format::Ltsv(swap(n)),
        Format::Json(n) => Format::Json(swap(n)),
        Format::Regexp { pattern, names } => Format::regexp(pattern.as_str(), swap(names))
            .map_err(|e| crate::format::regex_message(&e))?,
        other => other,
    })
}

impl RequestReader {
    /// Opens `path` (gzip is decoded) in `format`, or in the format its
    /// first lines are recognised as when `None`.
    pub fn open(path: &Path, format: Option<Format>) -> Result<RequestReader, ReadError> {
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let format = match format {
            Some(f) => f,
            None => {
                let head = crate::input::head_lines(path, 20).map_err(io)?;
                let lines: Vec<&[u8]> = head.iter().map(Vec::as_slice).collect();
                crate::format::detected(&lines).map_err(|reason| ReadError::Format {
                    path: path.to_path_buf(),
                    reason,
                })?
            }
        };
        if let Some(missing) = format.missing_groups() {
            return Err(ReadError::Format {
                path: path.to_path_buf(),
                reason: format!("the pattern has no named group {missing}"),
            });
        }
        let timed = format.has_times();
        let format = request_time_first(format).map_err(|reason| ReadError::Format {
            path: path.to_path_buf(),
            reason,
        })?;
        let opened = crate::input::open(Some(path), Arc::new(AtomicU64::new(0))).map_err(io)?;
        Ok(RequestReader {
            path: path.to_path_buf(),
            parser: LineParser::new(format, QueryMode::Drop, 1.0),
            reader: Box::new(BufReader::with_capacity(1 << 16, opened.reader)),
            line: 0,
            buf: Vec::with_capacity(512),
            timed,
        })
    }

    /// The name of the format being read (`ltsv`, `combined`, ...).
    pub fn format_name(&self) -> &'static str {
        self.parser.format().name()
    }

    /// Whether the format records request times.
    pub fn has_request_times(&self) -> bool {
        self.timed
    }

    /// Whether the format stamps a request when it was received rather
    /// than when its response ended: Apache's `%t`, the Classic Load
    /// Balancer's and S3's `time` are the arrival; nginx's `$time_local`
    /// and `$msec`, Caddy's `ts`, the Application Load Balancer's `time`
    /// and CloudFront's `date time` are the end.
    pub fn stamps_start(&self) -> bool {
        matches!(
            self.parser.format().name(),
            "apache-us" | "apache-s" | "elb" | "s3"
        )
    }

    /// The next non-blank line: a request, or why it is not one; `None` at
    /// the end of the file.
    pub fn next_request(&mut self) -> Result<Option<Next>, ReadError> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| ReadError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let text = trim_line(&self.buf);
            if text.is_empty() {
                continue;
            }
            let line = self.line;
            let unread = |reason: String| Ok(Some(Next::Unread(Unread { line, reason })));
            let rec = match self.parser.parse(text) {
                Ok(r) => r,
                Err(LineError::Header) => continue,
                Err(e) => return unread(e.to_string()),
            };
            let Some(time) = crate::timestamp::parse(&rec.time) else {
                return unread(format!(
                    "timestamp {:?} is not a time",
                    String::from_utf8_lossy(&rec.time)
                ));
            };
            let method = String::from_utf8_lossy(&rec.method).into_owned();
            if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
                return unread(format!("method {method:?} is not an HTTP method"));
            }
            let uri = rec.raw_uri.into_owned();
            if uri.is_empty() || uri.iter().any(|&b| b <= b' ' || b == 0x7f) {
                return unread("the URI is empty or holds spaces or control bytes".into());
            }
            let request_time =
                (self.timed && rec.response_time.is_finite() && rec.response_time >= 0.0)
                    .then_some(rec.response_time);
            return Ok(Some(Next::Request(Recorded {
                line,
                time,
                fraction_digits: fraction_digits(&rec.time),
                request_time,
                method,
                uri,
                route_uri: rec.uri.into_owned(),
            })));
        }
    }
}

/// Digits after the seconds of a timestamp (`12:00:01.250` has 3).
fn fraction_digits(stamp: &[u8]) -> u8 {
    let Some(dot) = stamp.iter().position(|&b| b == b'.') else {
        return 0;
    };
    stamp[dot + 1..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
        .min(9) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reader(text: &str, format: Option<Format>) -> RequestReader {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let path = f.into_temp_path().keep().unwrap();
        RequestReader::open(&path, format).unwrap()
    }

    #[test]
    fn ltsv_gives_the_request_time_not_the_upstream_time() {
        let mut r = reader(
            "time:2026-11-24T10:00:01.500+00:00\tmethod:POST\turi:/a?x=1\tstatus:200\tsize:3\treqtime:0.250\tapptime:0.100\n\nnot a line\n",
            None,
        );
        assert_eq!(r.format_name(), "ltsv");
        let Some(Next::Request(rec)) = r.next_request().unwrap() else {
            panic!("no request")
        };
        assert_eq!(rec.method, "POST");
        assert_eq!(rec.uri, b"/a?x=1");
        assert_eq!(rec.route_uri, "/a");
        assert_eq!(rec.request_time, Some(0.25));
        assert_eq!(rec.fraction_digits, 3);
        assert!((rec.time - 1_795_514_401.5).abs() < 1e-6, "{}", rec.time);
        match r.next_request().unwrap() {
            Some(Next::Unread(u)) => assert_eq!(u.line, 3),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.next_request().unwrap(), None);
    }

    #[test]
    fn combined_has_second_resolution_and_no_request_time() {
        let line =
            r#"127.0.0.1 - - [24/Nov/2026:10:00:01 +0000] "GET /b HTTP/1.1" 200 3 "-" "curl/8""#;
        let mut r = reader(&format!("{line}\n{line}\n"), None);
        assert_eq!(r.format_name(), "combined");
        let Some(Next::Request(rec)) = r.next_request().unwrap() else {
            panic!("no request")
        };
        assert_eq!((rec.fraction_digits, rec.request_time), (0, None));
        assert_eq!(rec.uri, b"/b");
    }
}
