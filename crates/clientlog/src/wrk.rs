//! wrk and wrk2 text output with `--latency`: a summary and a latency
//! distribution (wrk: 50/75/90/99%; wrk2: its percentiles and the
//! "Detailed Percentile spectrum"). wrk prints no time for any request,
//! so there are no per-second numbers to read: only the summary.
//!
//! wrk counts 4xx and 5xx answers together (`Non-2xx or 3xx responses`);
//! [`crate::Summary::non_2xx_3xx`] keeps that count as it is.

use crate::{shown, Error, Lines, Summary};
use std::io::BufRead;

/// A wrk time (`635.91us`, `1.05ms`, `2.00s`, `1.00m`, `1.00h`) in ms.
fn time_ms(t: &str) -> Option<f64> {
    let split = t.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = t.split_at(split);
    let v: f64 = n.parse().ok()?;
    let ms = match unit {
        // Divided, not multiplied by 1e-3, so 700.00us is exactly 0.7 ms.
        "us" => v / 1e3,
        "ms" => v,
        "s" => v * 1e3,
        "m" => v * 60e3,
        "h" => v * 3600e3,
        _ => return None,
    };
    Some(ms).filter(|v| v.is_finite() && *v >= 0.0)
}

/// A wrk size (`1.10GB`, `615.00B`) in bytes.
fn bytes(t: &str) -> Option<u64> {
    let split = t.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = t.split_at(split);
    let v: f64 = n.parse().ok()?;
    let scale: f64 = match unit {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((v * scale).round() as u64)
}

/// Reads wrk or wrk2 text output.
pub fn read(reader: impl BufRead, path: &str) -> Result<Summary, Error> {
    let mut lines = Lines::new(reader, path);
    let mut s = Summary::default();
    let mut have_total = false;
    let mut in_spectrum = false;
    while let Some(raw) = lines.next_line()? {
        let line = String::from_utf8_lossy(raw).into_owned();
        let t = line.trim();
        let words: Vec<&str> = t.split_whitespace().collect();
        if let Some(rest) = t.strip_prefix("Running ") {
            s.url = rest.split_once(" @ ").map(|(_, u)| u.trim().to_string());
            continue;
        }
        if t.starts_with("Detailed Percentile spectrum") {
            in_spectrum = true;
            continue;
        }
        if t.starts_with("#[") || t.starts_with("----") {
            in_spectrum = false;
            continue;
        }
        if in_spectrum {
            // wrk2: "Value Percentile TotalCount 1/(1-Percentile)", ms.
            if let [v, p, _, ..] = words[..] {
                if let (Ok(v), Ok(p)) = (v.parse::<f64>(), p.parse::<f64>()) {
                    if (0.0..=1.0).contains(&p) && v.is_finite() && v >= 0.0 {
                        s.quantiles.push((p * 100.0, v));
                    }
                }
            }
            continue;
        }
        match words[..] {
            [n, "threads", "and", c, "connections"] => {
                s.threads = n.parse().ok();
                s.connections = c.parse().ok();
            }
            ["Latency", avg, stdev, max, _] => {
                s.mean_ms = time_ms(avg);
                s.stdev_ms = time_ms(stdev);
                s.max_ms = time_ms(max);
            }
            [p, v] if p.ends_with('%') => {
                let q: f64 = p.trim_end_matches('%').parse().map_err(|_| {
                    lines.malformed(format!(
                        "percentile {:?} is not a number",
                        shown(p.as_bytes())
                    ))
                })?;
                let ms = time_ms(v).ok_or_else(|| {
                    lines.malformed(format!(
                        "latency {:?} is not a wrk time",
                        shown(v.as_bytes())
                    ))
                })?;
                if (0.0..=100.0).contains(&q) {
                    s.quantiles.push((q, ms));
                }
            }
            [n, "requests", "in", d, ..] => {
                s.requests = n.parse().map_err(|_| {
                    lines.malformed(format!(
                        "request count {:?} is not a number",
                        shown(n.as_bytes())
                    ))
                })?;
                let d = d.trim_end_matches(',');
                s.duration_s = time_ms(d).ok_or_else(|| {
                    lines.malformed(format!(
                        "duration {:?} is not a wrk time",
                        shown(d.as_bytes())
                    ))
                })? / 1000.0;
                if let [.., b, "read"] = words[..] {
                    s.bytes = bytes(b);
                }
                have_total = true;
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                s.non_2xx_3xx = n.parse().map_err(|_| {
                    lines.malformed(format!("{:?} is not a count", shown(n.as_bytes())))
                })?;
            }
            ["Socket", "errors:", "connect", c, "read", r, "write", w, "timeout", to] => {
                let count = |v: &str| v.trim_end_matches(',').parse::<u64>().ok();
                match (count(c), count(r), count(w), count(to)) {
                    (Some(c), Some(r), Some(w), Some(to)) => s.socket_errors = [c, r, w, to],
                    _ => return Err(lines.malformed(format!("socket errors not counts: {t}"))),
                }
            }
            _ => {}
        }
    }
    if !have_total {
        return Err(lines.malformed(
            "no `N requests in T` line: the wrk run did not finish (or this is not wrk output)",
        ));
    }
    s.quantiles.sort_by(|a, b| a.0.total_cmp(&b.0));
    s.quantiles.dedup_by(|a, b| a.0 == b.0);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrk_latency_output() {
        let text = "Running 2s test @ http://127.0.0.1:18750/ok\n  1 threads and 4 connections\n  Thread Stats   Avg      Stdev     Max   +/- Stdev\n    Latency   635.91us    0.89ms  12.92ms   93.69%\n    Req/Sec     5.20k   807.00     6.20k    86.54%\n  Latency Distribution\n     50%  250.00us\n     75%  491.00us\n     90%  700.00us\n     99%    5.80ms\n  10432 requests in 2.00s, 1.10MB read\n  Socket errors: connect 0, read 1, write 0, timeout 2\n  Non-2xx or 3xx responses: 12\nRequests/sec:   5216.00\nTransfer/sec:    563.20KB\n";
        let s = read(text.as_bytes(), "wrk.txt").unwrap();
        assert_eq!(s.requests, 10432);
        assert_eq!(s.duration_s, 2.0);
        assert_eq!(
            s.quantiles,
            vec![(50.0, 0.25), (75.0, 0.491), (90.0, 0.7), (99.0, 5.8)]
        );
        assert_eq!(s.socket_errors, [0, 1, 0, 2]);
        assert_eq!(s.non_2xx_3xx, 12);
        assert_eq!(s.connections, Some(4));
        assert_eq!(s.url.as_deref(), Some("http://127.0.0.1:18750/ok"));
        assert!((s.mean_ms.unwrap() - 0.63591).abs() < 1e-9);
        let e = read("Running 2s test @ x\n".as_bytes(), "wrk.txt").unwrap_err();
        assert!(e.to_string().contains("did not finish"), "{e}");
    }

    #[test]
    fn wrk2_spectrum() {
        let text = "Running 30s test @ http://127.0.0.1/\n  Latency Distribution (HdrHistogram - Recorded Latency)\n 50.000%    1.02ms\n100.000%    4.20ms\n\n  Detailed Percentile spectrum:\n       Value   Percentile   TotalCount 1/(1-Percentile)\n\n       0.120     0.000000            1         1.00\n       1.020     0.500000        29990         2.00\n       4.200     1.000000        59975          inf\n#[Mean    =        1.051, StdDeviation   =        0.514]\n----------------------------------------------------------\n  59995 requests in 30.00s, 19.45MB read\n";
        let s = read(text.as_bytes(), "wrk2.txt").unwrap();
        assert_eq!(s.quantiles.first(), Some(&(0.0, 0.12)));
        assert_eq!(s.quantiles.last(), Some(&(100.0, 4.2)));
        assert_eq!(s.requests, 59995);
    }
}
