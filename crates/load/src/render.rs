//! Terminal tables for a [`Report`]. Returns strings (the library never
//! prints) so `keisoku bench`, `keisoku demo` and `keisoku run` show the
//! same thing.

use crate::plan::{fmt_num, Model};
use crate::report::{add_hist, ErrorKind, LatencySummary, Report, Stats};
use crate::slo::Verdict;
use crate::Progress;
use std::fmt::Write;

/// Most timeline rows printed: one a second up to this, so a 1-second stall
/// shows as its own row; longer runs are shown in wider buckets.
const TIMELINE_ROWS: usize = 60;

/// The report as `--json` writes it: pretty-printed, ending in a newline,
/// the same bytes on stdout and in a file.
pub fn json(r: &Report) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(r)?;
    text.push('\n');
    Ok(text)
}

/// Everything for a finished run: header, overall numbers, per-target table,
/// timeline, sweep table with knee and SLO verdicts, warnings.
pub fn summary(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header(r));
    if r.partial {
        let _ = writeln!(
            out,
            "PARTIAL: interrupted; these numbers cover only what was measured until then"
        );
    }
    out.push('\n');
    out.push_str(&stats_block(&r.overall, r.model));
    if r.targets.len() > 1 {
        out.push('\n');
        out.push_str(&targets_table(r));
    }
    if let Some(s) = &r.scenario {
        out.push_str(&crate::scenario::report::text(s));
    }
    if !r.timeline.is_empty() {
        out.push('\n');
        out.push_str(&timeline_table(r));
    }
    if r.phases.len() > 1 || r.max_rate.is_some() {
        out.push('\n');
        out.push_str(&sweep_table(r));
    }
    if let Some(v) = &r.slo {
        out.push('\n');
        if r.phases.len() > 1 {
            out.push_str("SLO over the whole run:\n");
        }
        out.push_str(&slo_table(v));
    }
    if !r.error_reasons.is_empty() {
        out.push('\n');
        for reason in &r.error_reasons {
            let _ = writeln!(out, "first error: {reason}");
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "\nnote: {n}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "\nWARNING: {w}");
    }
    out
}

fn header(r: &Report) -> String {
    let model = match r.model {
        Model::Closed => "closed model",
        Model::Open => "open model",
    };
    let load = match (r.phases.len(), r.phases.first()) {
        (1, Some(p)) => match p.rate {
            Some(rate) => format!(
                "{} req/s offered, up to {} connections",
                fmt_num(rate),
                p.connections
            ),
            None => format!("{} connections", p.connections),
        },
        (n, _) => format!("{n} phases"),
    };
    let protocol = match (&r.protocol, r.streams) {
        (Some(p), Some(m)) => format!(
            ", HTTP/2 ({p}), {m} stream{} per connection",
            if m == 1 { "" } else { "s" }
        ),
        (Some(p), None) => format!(", HTTP/2 ({p})"),
        _ => String::new(),
    };
    format!(
        "keisoku bench: {model}, {load}{protocol}, {} thread{}, {:.1}s measured{}",
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        r.overall.duration_s,
        if r.keepalive { "" } else { ", no keep-alive" }
    )
}

/// Requests, throughput, latency, status classes and errors of one slice.
pub fn stats_block(s: &Stats, model: Model) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  requests  {}   {:.1} req/s   {}/s   over {:.2}s",
        s.requests,
        s.rps,
        bytes(s.bytes_per_s),
        s.duration_s
    );
    let label = match model {
        Model::Closed => "latency (closed-model service time)",
        Model::Open => "latency (from intended send time, coordinated omission corrected)",
    };
    let _ = writeln!(out, "  {label}");
    if s.requests == 0 {
        // Zeros would read as a very fast server.
        out.push_str("    no responses\n");
    } else {
        out.push_str(&latency_lines(&s.latency_ms));
        if let Some(lag) = s.schedule.as_ref().filter(|l| l.unsent > 0) {
            let _ = writeln!(
                out,
                "    including {} requests never sent, each charged (end - intended send time)",
                lag.unsent
            );
        }
        if let Some(svc) = &s.service_ms {
            let _ = writeln!(out, "  service time (from actual send)");
            out.push_str(&latency_lines(svc));
        }
    }
    if let Some(lag) = &s.schedule {
        let _ = writeln!(
            out,
            "  schedule  {} intended, {} late (>1 ms; {} waited for a free connection), {} unsent, max lag {:.1} ms, mean lag {:.2} ms",
            lag.intended, lag.late, lag.waited_for_connection, lag.unsent, lag.max_lag_ms, lag.mean_lag_ms
        );
    }
    let st = &s.status;
    let _ = writeln!(
        out,
        "  status    1xx {}  2xx {}  3xx {}  4xx {}  5xx {}",
        st.s1xx, st.s2xx, st.s3xx, st.s4xx, st.s5xx
    );
    if !s.grpc_status.is_empty() {
        let mut codes: Vec<(u32, u64)> = s
            .grpc_status
            .iter()
            .filter_map(|(c, n)| c.parse().ok().map(|c| (c, *n)))
            .collect();
        codes.sort_unstable();
        let codes: Vec<String> = codes
            .iter()
            .map(|(c, n)| format!("{} {c} {n}", crate::h2::grpc::code_name(*c)))
            .collect();
        let _ = writeln!(out, "  grpc      {}", codes.join("  "));
    }
    if s.errors == 0 {
        let _ = writeln!(out, "  errors    none");
    } else {
        let _ = writeln!(out, "  errors    {}", error_split(s));
    }
    if s.connects > 0 || s.server_closed > 0 {
        let _ = writeln!(
            out,
            "  connections  {} opened, {} closed by the server",
            s.connects, s.server_closed
        );
    }
    if let Some(t) = &s.transport {
        out.push_str(&transport_lines(t));
    }
    if s.unfinished > 0 {
        let _ = writeln!(
            out,
            "  unfinished  {} requests still unanswered when the duration ended (neither responses nor errors)",
            s.unfinished
        );
    }
    out
}

/// TLS handshakes (apart from request latency), redirects followed,
/// decoded sizes.
fn transport_lines(t: &crate::transport::TransportStats) -> String {
    let mut out = String::new();
    if let Some(tls) = &t.tls {
        let h = &tls.handshake_ms;
        let _ = writeln!(
            out,
            "  tls       {} handshakes, {} resumed (resumption {}), {}{}, handshake mean {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            tls.handshakes,
            tls.resumed,
            if tls.resumption { "on" } else { "off: --no-tls-resume" },
            tls.version.as_deref().unwrap_or("?"),
            tls.alpn
                .as_deref()
                .map(|a| format!(", ALPN {a}"))
                .unwrap_or_default(),
            h.mean,
            h.p99,
            h.max
        );
    }
    if t.redirects_followed > 0 {
        let _ = writeln!(
            out,
            "  redirects {} followed (the final answers are the responses counted above; latency runs from the first send)",
            t.redirects_followed
        );
    }
    if t.compressed_responses > 0 {
        let ratio = if t.body_bytes_encoded > 0 {
            t.body_bytes_decoded as f64 / t.body_bytes_encoded as f64
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  compressed {} answers: bodies {} on the wire, {} decoded ({ratio:.1}x)",
            t.compressed_responses,
            bytes(t.body_bytes_encoded as f64),
            bytes(t.body_bytes_decoded as f64),
        );
    }
    out
}

/// `4357 (3.9%): 5xx 4357 (503 4357), reset 2`: errors with their rate, then
/// the split by status and transport kind.
pub fn error_split(s: &Stats) -> String {
    let mut parts: Vec<String> = Vec::new();
    if s.status.s5xx > 0 {
        let codes: Vec<String> = s
            .status_codes
            .iter()
            .filter(|(c, _)| c.starts_with('5'))
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        if codes.is_empty() {
            parts.push(format!("5xx {}", s.status.s5xx));
        } else {
            parts.push(format!("5xx {} ({})", s.status.s5xx, codes.join(", ")));
        }
    }
    let grpc: u64 = s
        .grpc_status
        .iter()
        .filter(|(c, _)| c.as_str() != "0")
        .map(|(_, n)| n)
        .sum();
    if grpc > 0 {
        parts.push(format!("grpc-status not OK {grpc}"));
    }
    parts.extend(
        ErrorKind::ALL
            .iter()
            .filter(|k| s.errors_by_kind.get(**k) > 0)
            .map(|k| format!("{} {}", k.name(), s.errors_by_kind.get(*k))),
    );
    format!("{} ({}): {}", s.errors, pct(s.error_rate), parts.join(", "))
}

/// A percentage with a precision that keeps small rates visible.
fn pct(v: f64) -> String {
    if v == 0.0 {
        "0%".into()
    } else if v < 0.1 {
        format!("{v:.3}%")
    } else if v < 10.0 {
        format!("{v:.1}%")
    } else {
        format!("{v:.0}%")
    }
}

fn latency_lines(l: &LatencySummary) -> String {
    format!(
        "    min {}  mean {}  stdev {}  max {}\n    p50 {}  p75 {}  p80 {}  p90 {}  p95 {}  p99 {}  p99.9 {}  p99.99 {}\n",
        ms(l.min),
        ms(l.mean),
        ms(l.stdev),
        ms(l.max),
        ms(l.p50),
        ms(l.p75),
        ms(l.p80),
        ms(l.p90),
        ms(l.p95),
        ms(l.p99),
        ms(l.p99_9),
        ms(l.p99_99)
    )
}

/// A latency in ms with a precision that suits its size.
pub fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}ms")
    } else if v >= 10.0 {
        format!("{v:.1}ms")
    } else {
        format!("{v:.2}ms")
    }
}

fn bytes(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} kB", v / 1e3)
    } else {
        format!("{v:.0} B")
    }
}

fn targets_table(r: &Report) -> String {
    let mut rows = vec![vec![
        "target".to_string(),
        "requests".into(),
        "rps".into(),
        "p50".into(),
        "p99".into(),
        "errors".into(),
        "4xx".into(),
        "5xx".into(),
    ]];
    for t in &r.targets {
        rows.push(vec![
            format!("{} {}", t.method, t.url),
            t.stats.requests.to_string(),
            format!("{:.1}", t.stats.rps),
            ms(t.stats.latency_ms.p50),
            ms(t.stats.latency_ms.p99),
            t.stats.errors.to_string(),
            t.stats.status.s4xx.to_string(),
            t.stats.status.s5xx.to_string(),
        ]);
    }
    table(&rows)
}

/// The per-second timeline (rps, errors, p50, p99), one row a second (a
/// second without a response shows 0 rps); runs longer than 60 s are
/// grouped into wider buckets whose histograms are merged, never averaged.
pub fn timeline_table(r: &Report) -> String {
    let first = r.timeline.first().map_or(0, |s| s.t_s);
    let last = r.timeline.last().map_or(0, |s| s.t_s);
    let span = last - first + 1;
    let width = span.div_ceil(TIMELINE_ROWS as u64).max(1);
    let mut rows = vec![vec![
        "second".to_string(),
        "rps".into(),
        "errors".into(),
        "p50".into(),
        "p99".into(),
        "max".into(),
    ]];
    let mut i = 0;
    while i < r.timeline.len() {
        let b0 = (r.timeline[i].t_s - first) / width;
        let mut h = r.timeline[i].histogram.clone();
        let (mut req, mut err) = (r.timeline[i].requests, r.timeline[i].errors);
        let mut j = i + 1;
        while j < r.timeline.len() && (r.timeline[j].t_s - first) / width == b0 {
            add_hist(&mut h, &r.timeline[j].histogram);
            req += r.timeline[j].requests;
            err += r.timeline[j].errors;
            j += 1;
        }
        let start = first + b0 * width;
        let label = if width == 1 {
            format!("{start}")
        } else {
            format!("{start}-{}", start + width - 1)
        };
        // A second with only errors has no latency to show.
        let q = |p: f64| {
            if h.is_empty() {
                "-".to_string()
            } else {
                ms(h.value_at_quantile(p) as f64 / 1000.0)
            }
        };
        rows.push(vec![
            label,
            format!("{:.0}", req as f64 / width as f64),
            err.to_string(),
            q(0.5),
            q(0.99),
            q(1.0),
        ]);
        i = j;
    }
    let mut out = String::from("timeline (seconds since start; warm-up included)\n");
    out.push_str(&table(&rows));
    out
}

/// One row per phase: load, rps, p50, p80, p99, errors, SLO verdict; the
/// knee, the highest passing phase and the `--find-max` answer below it.
pub fn sweep_table(r: &Report) -> String {
    let load_name = if r.model == Model::Open {
        "rate"
    } else {
        "connections"
    };
    let mut rows = vec![vec![
        load_name.to_string(),
        "rps".into(),
        "p50".into(),
        "p80".into(),
        "p99".into(),
        "errors".into(),
        "slo".into(),
        String::new(),
    ]];
    for p in &r.phases {
        let load = match p.rate {
            Some(rate) => fmt_num(rate),
            None => p.connections.to_string(),
        };
        let verdict = match &p.slo {
            Some(v) if v.pass => "PASS".to_string(),
            Some(v) => {
                let failed = v.failed();
                format!("FAIL {}", failed.join(","))
            }
            None => "-".into(),
        };
        let mut note = Vec::new();
        if r.knee == Some(p.index) {
            note.push("<- knee");
        }
        if r.best_passing_phase == Some(p.index) {
            note.push("<- highest passing");
        }
        rows.push(vec![
            load,
            format!("{:.1}", p.stats.rps),
            ms(p.stats.latency_ms.p50),
            ms(p.stats.latency_ms.p80),
            ms(p.stats.latency_ms.p99),
            p.stats.errors.to_string(),
            verdict,
            note.join(" "),
        ]);
    }
    let mut out = table(&rows);
    match (r.knee.and_then(|k| r.phases.get(k)), r.max_rate) {
        (Some(k), _) => {
            let _ = writeln!(
                out,
                "knee: {} ({:.1} req/s, p50 {}): beyond it more load bought little throughput and only added latency",
                k.label,
                k.stats.rps,
                ms(k.stats.latency_ms.p50)
            );
        }
        (None, None) if r.phases.len() > 2 => {
            let _ = writeln!(out, "knee: not reached (throughput kept rising with load)");
        }
        _ => {}
    }
    if let Some(best) = r.best_passing_phase.and_then(|b| r.phases.get(b)) {
        let _ = writeln!(out, "highest load meeting the SLO: {}", best.label);
    } else if r.slo.is_some() && r.phases.len() > 1 {
        let _ = writeln!(out, "no phase met the SLO");
    }
    if r.slo.is_some() && r.phases.len() > 1 || r.max_rate.is_some() {
        if let Some(m) = r.max_rate {
            let _ = writeln!(
                out,
                "find-max: the highest rate meeting the SLO is {} req/s",
                fmt_num(m)
            );
        }
    }
    out
}

/// PASS/FAIL per clause with the measured value and the margin.
pub fn slo_table(v: &Verdict) -> String {
    let mut rows = vec![vec![
        "clause".to_string(),
        "measured".into(),
        "limit".into(),
        "margin".into(),
        "verdict".into(),
    ]];
    for c in &v.clauses {
        let unit = |x: f64| match c.unit {
            "ms" => ms(x),
            "%" => format!("{x:.3}%"),
            "req/s" => format!("{x:.1} req/s"),
            _ => format!("{x:.0}"),
        };
        rows.push(vec![
            c.clause.clone(),
            unit(c.measured),
            unit(c.limit),
            format!(
                "{}{} ({:+.1}%)",
                if c.margin >= 0.0 { "+" } else { "-" },
                unit(c.margin.abs()),
                c.margin_pct
            ),
            if c.pass { "PASS".into() } else { "FAIL".into() },
        ]);
    }
    let mut out = table(&rows);
    let _ = writeln!(out, "SLO {}", if v.pass { "PASS" } else { "FAIL" });
    out
}

/// One status line for a terminal (no newline).
pub fn progress_line(p: &Progress) -> String {
    let phase = match p.phase {
        Some(i) => format!("phase {}/{} {}", i + 1, p.phases, p.label),
        None => "warm-up".into(),
    };
    format!(
        "{phase}  {:>5.1}s  {:>9.1} req/s  p99 {:>8}  errors {}",
        p.elapsed.as_secs_f64(),
        p.rps,
        ms(p.p99_ms),
        p.errors
    )
}

/// Left-aligned first column, right-aligned numbers.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::from("  ");
        for (c, cell) in r.iter().enumerate() {
            let w = widths[c];
            if c == 0 || c + 1 == cols {
                let _ = write!(line, "{cell:<w$}  ");
            } else {
                let _ = write!(line, "{cell:>w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
