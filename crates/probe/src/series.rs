//! Series points as the samplers emit them, and the once-only notes about
//! metrics this kernel does not offer.

use std::sync::Arc;

/// One value of one series at one moment of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesPoint {
    /// Series name as in docs/run-json.md (`cpu.0.user`, `proc.rss`, ...).
    /// Shared: emitting a point clones a reference, never the text.
    pub name: Arc<str>,
    /// Unit of `value`: `%`, `/s`, `B`, `B/s`, `ms`, `ms/s`, `count`, `KiB/s`.
    pub unit: &'static str,
    /// Nanoseconds since the run's origin `Instant`. A rate at `t_ns` covers
    /// the interval that ends at `t_ns`; a gauge is the value at `t_ns`.
    pub t_ns: u64,
    /// The value.
    pub value: f64,
}

/// A named series whose points are emitted with a shared name.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    pub(crate) name: Arc<str>,
    pub(crate) unit: &'static str,
}

impl Series {
    pub(crate) fn new(name: impl Into<Arc<str>>, unit: &'static str) -> Series {
        Series {
            name: name.into(),
            unit,
        }
    }

    pub(crate) fn push(&self, out: &mut Vec<SeriesPoint>, t_ns: u64, value: f64) {
        if value.is_finite() {
            out.push(SeriesPoint {
                name: Arc::clone(&self.name),
                unit: self.unit,
                t_ns,
                value,
            });
        }
    }
}

/// A monotonically increasing kernel counter turned into a per-second rate.
#[derive(Clone, Debug)]
pub(crate) struct Counter {
    pub(crate) series: Series,
    prev: Option<u64>,
}

impl Counter {
    pub(crate) fn new(name: impl Into<Arc<str>>, unit: &'static str) -> Counter {
        Counter {
            series: Series::new(name, unit),
            prev: None,
        }
    }

    /// Records `cur`; emits `(cur - prev) * scale / dt` when a previous value
    /// exists and the counter did not go backwards (device reset, wrap).
    pub(crate) fn update(
        &mut self,
        cur: u64,
        dt_s: f64,
        scale: f64,
        out: &mut Vec<SeriesPoint>,
        t_ns: u64,
    ) {
        if let Some(prev) = self.prev {
            if cur >= prev && dt_s > 0.0 {
                self.series
                    .push(out, t_ns, (cur - prev) as f64 * scale / dt_s);
            }
        }
        self.prev = Some(cur);
    }
}

/// Notes about metrics left out, each said once.
#[derive(Default, Debug)]
pub(crate) struct Notes {
    keys: Vec<String>,
    pub(crate) list: Vec<String>,
}

impl Notes {
    /// Adds the note unless one with this key was already given.
    pub(crate) fn once(&mut self, key: &str, text: impl FnOnce() -> String) {
        if !self.keys.iter().any(|k| k == key) {
            self.keys.push(key.to_string());
            self.list.push(text());
        }
    }
}
