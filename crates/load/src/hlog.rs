//! `--hdr-log`: the run's per-second latency histograms as a standard
//! HdrHistogram interval log (.hlog), readable by HistogramLogProcessor,
//! HdrHistogramVisualizer and every HdrHistogram port.

use crate::error::LoadError;
use crate::report::Report;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use std::time::{Duration, UNIX_EPOCH};

/// Writes the interval log of `report` into `out`: one interval per second
/// of the timeline, values in microseconds (`--max-value-divisor 1000`
/// turns them into milliseconds in the usual tools).
pub fn write_hlog<W: std::io::Write>(report: &Report, out: &mut W) -> Result<(), String> {
    let start = UNIX_EPOCH + Duration::from_millis(report.started_unix_ms);
    let mut ser = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0)
        .add_comment("keisoku bench: latency in microseconds, one interval per second");
    let mut writer = builder
        .begin_log_with(out, &mut ser)
        .map_err(|e| e.to_string())?;
    for s in &report.timeline {
        if s.histogram.is_empty() {
            continue;
        }
        writer
            .write_histogram(
                &s.histogram,
                Duration::from_secs(s.t_s),
                Duration::from_secs(1),
                None,
            )
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// [`write_hlog`] into a file.
pub fn write_hlog_file(report: &Report, path: &std::path::Path) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    write_hlog(report, &mut f).map_err(|e| io(std::io::Error::other(e)))?;
    std::io::Write::flush(&mut f).map_err(io)
}
