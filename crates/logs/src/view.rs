//! Views of the extras alp does not have: the slowest single requests and
//! the timeline (terminal sparklines, JSON, CSV).

use crate::render::{fmt3, OutputFormat};
use crate::stats::SlowRequest;
use crate::timeline::{Bucket, Timeline};
use std::fmt::Write as _;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A sparkline of `values` squeezed into at most `width` columns (each
/// column shows the largest value it covers, so spikes stay visible).
pub fn sparkline(values: &[f64], width: usize) -> String {
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let per = values.len().div_ceil(width);
    let cols: Vec<f64> = values
        .chunks(per)
        .map(|c| c.iter().copied().fold(0.0, f64::max))
        .collect();
    let max = cols.iter().copied().fold(0.0, f64::max);
    cols.iter()
        .map(|&v| {
            if max <= 0.0 || v <= 0.0 {
                ' '
            } else {
                BARS[(((v / max) * 8.0).ceil() as usize).clamp(1, 8) - 1]
            }
        })
        .collect()
}

fn peak(buckets: &[Bucket], f: impl Fn(&Bucket) -> f64) -> Option<&Bucket> {
    buckets.iter().max_by(|a, b| f(a).total_cmp(&f(b)))
}

/// The first bucket whose p99 is more than 3x the median bucket p99 (and
/// at least 10 ms): where a latency cascade starts.
pub fn first_spike(buckets: &[Bucket]) -> Option<&Bucket> {
    let mut p99s: Vec<f64> = buckets
        .iter()
        .filter(|b| b.count > 0)
        .map(|b| b.p99)
        .collect();
    if p99s.len() < 3 {
        return None;
    }
    p99s.sort_by(f64::total_cmp);
    let median = p99s[p99s.len() / 2];
    buckets
        .iter()
        .find(|b| b.count > 0 && b.p99 > 3.0 * median && b.p99 >= 0.010)
}

fn dur(w: f64) -> String {
    if w >= 1.0 && w.fract() == 0.0 {
        format!("{w}s")
    } else {
        format!("{}ms", (w * 1000.0).round())
    }
}

/// The terminal view: sparklines of rps, p50/p99, in-flight and errors
/// for the whole log and the `top` busiest routes, `width` columns wide.
pub fn timeline_text(tl: &Timeline, top: usize, width: usize) -> String {
    let b = tl.buckets();
    let mut out = String::new();
    let Some((first, last)) = b.first().zip(b.last()) else {
        return "timeline: no request had a readable timestamp\n".into();
    };
    let _ = writeln!(
        out,
        "Timeline: {} buckets of {} from {} to {}",
        b.len(),
        dur(tl.width),
        first.time,
        crate::timestamp::format_utc(last.start + tl.width)
    );
    let line = |out: &mut String, name: &str, vals: Vec<f64>, unit: &str| {
        let max = vals.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "  {name:<10} {} max {}{unit}",
            sparkline(&vals, width),
            fmt3(max)
        );
    };
    line(&mut out, "req/s", b.iter().map(|x| x.rps).collect(), "");
    if !tl.absent_times {
        line(&mut out, "p50", b.iter().map(|x| x.p50).collect(), " s");
        line(&mut out, "p99", b.iter().map(|x| x.p99).collect(), " s");
        line(
            &mut out,
            "in flight",
            b.iter().map(|x| x.in_flight).collect(),
            "",
        );
    }
    line(
        &mut out,
        "5xx/s",
        b.iter().map(|x| x.errors as f64 / tl.width).collect(),
        "",
    );
    if tl.absent_times {
        out.push_str("  p50, p99, in flight: absent (this log format has no response times)\n");
    }
    if !tl.absent_times {
        if let Some(p) = peak(&b, |x| x.in_flight) {
            let _ = writeln!(out, "  peak in flight {:.1} at {}", p.in_flight, p.time);
        }
        if let Some(p) = peak(&b, |x| x.p99) {
            let _ = writeln!(out, "  peak p99 {} s at {}", fmt3(p.p99), p.time);
        }
        if let Some(s) = first_spike(&b) {
            let culprit = s.routes.iter().max_by(|x, y| x.p99.total_cmp(&y.p99));
            let _ = write!(
                out,
                "  latency first jumped at {} (p99 {} s)",
                s.time,
                fmt3(s.p99)
            );
            if let Some(c) = culprit {
                let _ = write!(
                    out,
                    ", slowest route there: {} {} (p99 {} s)",
                    c.method,
                    c.uri,
                    fmt3(c.p99)
                );
            }
            out.push('\n');
        }
    }
    // Busiest routes overall.
    let mut totals: Vec<((String, String), u64)> = Vec::new();
    for bk in &b {
        for r in &bk.routes {
            match totals
                .iter_mut()
                .find(|t| t.0 .0 == r.method && t.0 .1 == r.uri)
            {
                Some(t) => t.1 += r.count,
                None => totals.push(((r.method.clone(), r.uri.clone()), r.count)),
            }
        }
    }
    totals.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if !totals.is_empty() && top > 0 {
        let _ = writeln!(
            out,
            "{}",
            if tl.absent_times {
                "Busiest routes (req/s):"
            } else {
                "Busiest routes (req/s | p99):"
            }
        );
        for ((m, u), n) in totals.iter().take(top) {
            let series = |f: &dyn Fn(&crate::timeline::RouteBucket) -> f64| -> Vec<f64> {
                b.iter()
                    .map(|bk| {
                        bk.routes
                            .iter()
                            .find(|r| &r.method == m && &r.uri == u)
                            .map_or(0.0, f)
                    })
                    .collect()
            };
            let w = tl.width;
            let _ = writeln!(out, "  {m} {u}  ({n} requests)");
            let _ = writeln!(
                out,
                "    req/s {}",
                sparkline(&series(&|r| r.count as f64 / w), width)
            );
            if !tl.absent_times {
                let _ = writeln!(out, "    p99   {}", sparkline(&series(&|r| r.p99), width));
            }
        }
    }
    out
}

/// The timeline as a JSON value (`{"width": s, "buckets": [...]}`), to
/// embed in a larger document.
pub fn timeline_value(tl: &Timeline) -> serde_json::Value {
    serde_json::json!({ "width": tl.width, "buckets": tl.buckets() })
}

/// The timeline as JSON: `{"width": s, "buckets": [...]}`.
pub fn timeline_json(tl: &Timeline) -> String {
    let mut s = timeline_value(tl).to_string();
    s.push('\n');
    s
}

/// The timeline as CSV (or TSV): one row per bucket for all routes (`*`)
/// and one per route in the bucket.
pub fn timeline_csv(tl: &Timeline, sep: char) -> String {
    let mut out = String::new();
    let head = [
        "time",
        "start",
        "method",
        "uri",
        "count",
        "rps",
        "errors",
        "p50",
        "p99",
        "in_flight",
    ];
    out.push_str(&head.join(&sep.to_string()));
    out.push('\n');
    let q = |s: &str| {
        if sep == ',' && (s.contains(',') || s.contains('"')) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    // A log without response times: its time cells are absent, not 0.
    let t3 = |v: f64| if v.is_nan() { "-".to_string() } else { fmt3(v) };
    for b in tl.buckets() {
        let _ = writeln!(
            out,
            "{t}{s}{st}{s}*{s}*{s}{c}{s}{r}{s}{e}{s}{p50}{s}{p99}{s}{f}",
            t = b.time,
            s = sep,
            st = b.start,
            c = b.count,
            r = fmt3(b.rps),
            e = b.errors,
            p50 = t3(b.p50),
            p99 = t3(b.p99),
            f = t3(b.in_flight)
        );
        for r in &b.routes {
            let _ = writeln!(
                out,
                "{t}{s}{st}{s}{m}{s}{u}{s}{c}{s}{rps}{s}{e}{s}{p50}{s}{p99}{s}",
                t = b.time,
                s = sep,
                st = b.start,
                m = q(&r.method),
                u = q(&r.uri),
                c = r.count,
                rps = fmt3(r.count as f64 / tl.width),
                e = r.errors,
                p50 = t3(r.p50),
                p99 = t3(r.p99)
            );
        }
    }
    out
}

/// The slowest requests in `format` (table, markdown, tsv, csv; json gives
/// an array of objects).
pub fn slow_view(slow: &[SlowRequest], format: OutputFormat) -> String {
    if format == OutputFormat::Json {
        let mut s = serde_json::to_string(slow).unwrap_or_default();
        s.push('\n');
        return s;
    }
    let head = [
        "Line",
        "Time",
        "Response time",
        "Status",
        "Method",
        "Uri",
        "Route",
    ];
    let rows: Vec<[String; 7]> = slow
        .iter()
        .map(|r| {
            [
                r.line.to_string(),
                r.time.clone(),
                fmt3(r.response_time),
                r.status.to_string(),
                r.method.clone(),
                r.uri.clone(),
                r.route.clone(),
            ]
        })
        .collect();
    match format {
        OutputFormat::Tsv | OutputFormat::Csv => {
            let sep = if format == OutputFormat::Tsv {
                "\t"
            } else {
                ","
            };
            let mut out = head.join(sep);
            out.push('\n');
            for r in rows {
                let cells: Vec<String> = r
                    .iter()
                    .map(|c| {
                        if sep == "," && c.contains(',') {
                            format!("\"{c}\"")
                        } else {
                            c.clone()
                        }
                    })
                    .collect();
                out.push_str(&cells.join(sep));
                out.push('\n');
            }
            out
        }
        // The same table as the route table: alp's bordered grid for
        // `table`, markdown for `md` (a markdown table under `--format
        // table` looked like a different tool).
        _ => {
            let heads: Vec<String> = head.iter().map(|h| h.to_string()).collect();
            let body: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
            let mut out = format!("Slowest {} requests\n", body.len());
            let mut grid = crate::render::Out::string();
            crate::render::render_grid(
                &mut grid,
                &heads,
                &body,
                None,
                format != OutputFormat::Table,
            );
            out.push_str(&grid.into_string());
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_and_squeezes() {
        assert_eq!(sparkline(&[0.0, 1.0, 2.0, 4.0], 10), " ▂▄█");
        assert_eq!(sparkline(&[1.0, 0.0, 0.0, 8.0], 2), "▁█");
        assert_eq!(sparkline(&[], 5), "");
    }
}
