//! keisoku-clientlog: other load tools' result files read as one neutral
//! stream of requests, so `keisoku record` and `keisoku import` can put a
//! JMeter, k6, vegeta or wrk run on a run's clock.
//!
//! Formats ([`Format`]):
//! - JMeter JTL, CSV (with its header line) and XML (`<httpSample>` and
//!   `<sample>` directly under `<testResults>`);
//! - k6 `--out json` (the `http_req_duration` points, one per request);
//! - vegeta results: the binary (Go gob) stream `vegeta attack` writes,
//!   and `vegeta encode --to csv` or `--to json` output;
//! - wrk and wrk2 `--latency` text: a summary and a latency distribution,
//!   with no time of any request ([`Read::Summary`]).
//!
//! Every reader streams: a file is read a line (or an XML element) at a
//! time, and [`aggregate::Aggregator`] keeps per-second aggregates only for
//! a bounded window of seconds, so a multi-GB JTL takes bounded memory.
//! Detection never guesses: a file that matches no format is refused with
//! the formats tried ([`Error::Unrecognised`]). The library never prints.

#![deny(missing_docs)]

pub mod aggregate;
mod csvline;
mod detect;
mod gob;
pub mod jtl;
pub mod k6;
mod rfc3339;
pub mod vegeta;
pub mod wrk;

pub use aggregate::{Aggregator, RouteTotals, SecondAgg, Totals};
pub use detect::{detect, Detected};

use std::io::BufRead;
use std::path::Path;

/// The tools whose results can be read (`--client-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Apache JMeter's JTL, CSV or XML.
    Jtl,
    /// k6 `--out json`.
    K6,
    /// vegeta results: binary (gob), CSV or JSON.
    Vegeta,
    /// wrk / wrk2 text output with `--latency`.
    Wrk,
}

impl Format {
    /// Every format, in the order detection tries them.
    pub const ALL: [Format; 4] = [Format::Jtl, Format::K6, Format::Vegeta, Format::Wrk];

    /// The name `--client-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jtl => "jtl",
            Format::K6 => "k6",
            Format::Vegeta => "vegeta",
            Format::Wrk => "wrk",
        }
    }

    /// Parses a `--client-format` name.
    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The exact encoding of a file, as detected: what [`read`] dispatches on
/// and what a run's `source` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// JTL as CSV with a header line.
    JtlCsv,
    /// JTL as XML.
    JtlXml,
    /// k6 JSON lines.
    K6Json,
    /// `vegeta encode --to csv`.
    VegetaCsv,
    /// `vegeta encode --to json`.
    VegetaJson,
    /// `vegeta attack`'s own binary output (Go gob).
    VegetaGob,
    /// wrk or wrk2 text.
    WrkText,
}

impl Encoding {
    /// The tool family.
    pub fn format(self) -> Format {
        match self {
            Encoding::JtlCsv | Encoding::JtlXml => Format::Jtl,
            Encoding::K6Json => Format::K6,
            Encoding::VegetaCsv | Encoding::VegetaJson | Encoding::VegetaGob => Format::Vegeta,
            Encoding::WrkText => Format::Wrk,
        }
    }

    /// How people name it: "JMeter JTL (CSV)".
    pub fn describe(self) -> &'static str {
        match self {
            Encoding::JtlCsv => "JMeter JTL (CSV)",
            Encoding::JtlXml => "JMeter JTL (XML)",
            Encoding::K6Json => "k6 JSON output",
            Encoding::VegetaCsv => "vegeta results (CSV)",
            Encoding::VegetaJson => "vegeta results (JSON)",
            Encoding::VegetaGob => "vegeta results (binary)",
            Encoding::WrkText => "wrk --latency text",
        }
    }

    /// The short name stored in a run's `source.encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::JtlCsv => "jtl-csv",
            Encoding::JtlXml => "jtl-xml",
            Encoding::K6Json => "k6-json",
            Encoding::VegetaCsv => "vegeta-csv",
            Encoding::VegetaJson => "vegeta-json",
            Encoding::VegetaGob => "vegeta-gob",
            Encoding::WrkText => "wrk-text",
        }
    }
}

/// One request as the tool recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When the response ended (or the request failed), Unix ms.
    pub end_unix_ms: f64,
    /// The tool's latency, ms.
    pub latency_ms: f64,
    /// The HTTP status; `None` when no answer came (a transport error).
    pub status: Option<u16>,
    /// The tool's own verdict (JMeter `success`, k6 `expected_response`):
    /// a 200 can fail an assertion, a 404 can be expected.
    pub ok: bool,
    /// The error kind or message the tool gave, if any.
    pub error: Option<String>,
    /// The request's label: JMeter's sampler label, k6's `name` tag, or
    /// vegeta's URL path.
    pub label: String,
    /// The HTTP method, when the tool records it.
    pub method: Option<String>,
    /// Response bytes, when the tool records them.
    pub bytes: Option<u64>,
}

/// A latency quantile a tool printed: (percent, ms).
pub type Quantile = (f64, f64);

/// What a tool without per-request times printed (wrk, wrk2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The URL the tool named.
    pub url: Option<String>,
    /// Threads and connections the tool used.
    pub threads: Option<u64>,
    /// Connections.
    pub connections: Option<u64>,
    /// Requests completed (`N requests in 10.00s`).
    pub requests: u64,
    /// The run's length, seconds.
    pub duration_s: f64,
    /// Bytes read.
    pub bytes: Option<u64>,
    /// Mean latency, ms.
    pub mean_ms: Option<f64>,
    /// Standard deviation of latency, ms.
    pub stdev_ms: Option<f64>,
    /// Largest latency, ms.
    pub max_ms: Option<f64>,
    /// The latency distribution, ascending percent.
    pub quantiles: Vec<Quantile>,
    /// `Non-2xx or 3xx responses`: 4xx and 5xx together, as wrk counts them.
    pub non_2xx_3xx: u64,
    /// Socket errors: connect, read, write, timeout.
    pub socket_errors: [u64; 4],
}

/// Why a results file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file matches none of the formats tried.
    #[error("{path}: not a results file keisoku reads (tried {tried}): {reason}")]
    Unrecognised {
        /// The file.
        path: String,
        /// The formats tried, by name.
        tried: String,
        /// What the start of the file looked like.
        reason: String,
    },
    /// The file is in a format keisoku recognises but does not read.
    #[error("{path}: {what}")]
    Unsupported {
        /// The file.
        path: String,
        /// What it is and what to do.
        what: String,
    },
    /// A line (or element) that breaks the format.
    #[error("{path}:{at}: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// Where: a 1-based line number, or `byte N` in XML.
        at: String,
        /// What is wrong.
        reason: String,
    },
}

/// What a reader produced.
#[derive(Debug)]
pub enum Read {
    /// Requests with times: the aggregator's totals.
    Samples(Totals),
    /// A summary without request times (wrk text).
    Summary(Summary),
}

/// Reads `path` (detected, or checked against `format`) and hands every
/// request to `agg`; a wrk text becomes a [`Read::Summary`].
pub fn read(
    path: &Path,
    format: Option<Format>,
    agg: &mut Aggregator<'_>,
) -> Result<(Encoding, Read), Error> {
    let shown = path.display().to_string();
    let io = |source| Error::Io {
        path: shown.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let limits = keisoku_common::Limits::current();
    let mut raw = std::io::BufReader::with_capacity(256 << 10, file);
    let head = raw.fill_buf().map_err(io)?.to_vec();
    let encoding = detect::detect_for(&head, format).map_err(|d| d.into_error(&shown))?;
    // A binary stream has no lines: its reader bounds each message instead.
    // The head stays buffered in `raw`, so nothing is read twice.
    let read = if encoding == Encoding::VegetaGob {
        read_encoded(encoding, raw, &shown, agg)?
    } else {
        let reader = std::io::BufReader::with_capacity(
            256 << 10,
            keisoku_common::Guard::new(raw).lines(&limits),
        );
        read_encoded(encoding, reader, &shown, agg)?
    };
    Ok((encoding, read))
}

/// Reads an already detected stream (the fuzz targets' entry point).
pub fn read_encoded(
    encoding: Encoding,
    reader: impl BufRead,
    path: &str,
    agg: &mut Aggregator<'_>,
) -> Result<Read, Error> {
    let mut push = |s: Sample| agg.add(&s);
    match encoding {
        Encoding::JtlCsv => jtl::read_csv(reader, path, &mut push)?,
        Encoding::JtlXml => jtl::read_xml(reader, path, &mut push)?,
        Encoding::K6Json => k6::read(reader, path, &mut push)?,
        Encoding::VegetaCsv => vegeta::read_csv(reader, path, &mut push)?,
        Encoding::VegetaJson => vegeta::read_json(reader, path, &mut push)?,
        Encoding::VegetaGob => {
            let max = keisoku_common::Limits::current().line;
            vegeta::read_gob(reader, path, max, &mut push)?
        }
        Encoding::WrkText => return wrk::read(reader, path).map(Read::Summary),
    }
    Ok(Read::Samples(agg.totals()))
}

/// A line-at-a-time reader that counts lines and maps I/O errors (a line
/// over the input limit included) to [`Error::Io`] naming the file.
pub(crate) struct Lines<R> {
    reader: R,
    path: String,
    /// Lines read so far.
    pub(crate) line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(reader: R, path: &str) -> Lines<R> {
        Lines {
            reader,
            path: path.to_string(),
            line: 0,
            buf: Vec::with_capacity(512),
        }
    }

    /// The next line without its line ending; `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>, Error> {
        self.buf.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut end = self.buf.len();
        while end > 0 && matches!(self.buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        Ok(Some(&self.buf[..end]))
    }

    /// Appends the next physical line (for a CSV field that spans lines).
    pub(crate) fn continue_line(&mut self) -> Result<bool, Error> {
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        if n > 0 {
            self.line += 1;
        }
        Ok(n > 0)
    }

    /// The current (possibly continued) record without its final line ending.
    pub(crate) fn current(&self) -> &[u8] {
        let mut end = self.buf.len();
        while end > 0 && matches!(self.buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        &self.buf[..end]
    }

    /// An error at the current line.
    pub(crate) fn malformed(&self, reason: impl Into<String>) -> Error {
        Error::Malformed {
            path: self.path.clone(),
            at: self.line.to_string(),
            reason: reason.into(),
        }
    }
}

/// Text of a field for an error message: at most 60 characters, escaped.
pub(crate) fn shown(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out: String = s
        .chars()
        .take(60)
        .collect::<String>()
        .escape_debug()
        .collect();
    if s.chars().count() > 60 {
        out.push_str("...");
    }
    out
}

/// The path of a URL without its query, as access logs group routes.
pub fn url_path(url: &str) -> &str {
    let rest = match url.find("://") {
        Some(i) => &url[i + 3..],
        None => return url.split('?').next().unwrap_or(url),
    };
    match rest.find('/') {
        Some(i) => rest[i..].split(['?', '#']).next().unwrap_or("/"),
        None => "/",
    }
}
