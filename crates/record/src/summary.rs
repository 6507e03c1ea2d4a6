//! The server-side summary printed after `keisoku run` / `record` and by
//! `keisoku show`: computed from the stored run alone, so both agree.

use super::{human_duration, utc};
use keisoku_common::terminal_safe;
use keisoku_stacks::Profile;
use keisoku_store::{RunJson, Series, SeriesThread};
use std::collections::BTreeMap;
use std::fmt::Write;

/// min/avg/max of a series' values (None when it has no points).
fn stats(s: &Series) -> Option<(f64, f64, f64)> {
    if s.v.is_empty() {
        return None;
    }
    let min = s.v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = s.v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((min, s.v.iter().sum::<f64>() / s.v.len() as f64, max))
}

/// Sums several series point by point on their shared times.
fn sum_series<'a>(it: impl Iterator<Item = &'a Series>) -> Option<Series> {
    let mut by_t: BTreeMap<i64, f64> = BTreeMap::new();
    let mut any = false;
    for s in it {
        any = true;
        for (t, v) in s.t_ms.iter().zip(&s.v) {
            *by_t.entry(t.round() as i64).or_default() += v;
        }
    }
    any.then(|| Series {
        name: String::new(),
        unit: String::new(),
        t_ms: by_t.keys().map(|&t| t as f64).collect(),
        v: by_t.values().copied().collect(),
    })
}

/// The header lines naming the run.
pub fn header(run: &RunJson) -> String {
    let r = &run.run;
    let mut out = String::new();
    let name = if r.name.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", terminal_safe(&r.name))
    };
    let _ = writeln!(
        out,
        "run {}{name}: {}, started {} UTC, {}",
        r.id,
        r.status,
        utc(r.started_unix_ms),
        human_duration(r.duration_ms)
    );
    if let Some(t) = &r.target {
        let _ = writeln!(out, "  target   {}", terminal_safe(t));
    }
    if !r.command.is_empty() {
        let _ = writeln!(out, "  command  {}", terminal_safe(&r.command));
    }
    if !r.tags.is_empty() {
        let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "  tags     {}", terminal_safe(&tags.join(" ")));
    }
    out
}

/// What `keisoku show` prints for a stored run: the [`full`] summary, the
/// findings and the run's notes. Runs stored before findings existed are
/// judged now (not stored: showing only reads).
pub fn stored(mut run: RunJson, notes: &[u8]) -> String {
    let findings = if run.findings.is_empty() {
        keisoku_findings::analyze(&run)
    } else {
        keisoku_findings::from_json(&run.findings)
    };
    run.findings.clear();
    let text = String::from_utf8_lossy(notes);
    let lines_lost = text
        .lines()
        .any(|l| l.starts_with(&format!("not kept: {}", crate::recorder::LINES_LOST)));
    let mut out = full_view(&run, lines_lost);
    out.push_str(&keisoku_findings::render_text(&findings));
    if !notes.is_empty() {
        out.push_str("Notes\n");
        for l in String::from_utf8_lossy(notes).lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    out
}

/// What `keisoku run` and `keisoku record` print once a recording has
/// finished: the run's header, the server side and the findings; `lost`
/// is what the run could not keep.
pub fn recorded(run: &RunJson, findings: &[keisoku_findings::Finding], lost: &[String]) -> String {
    let mut out = header(run);
    let lines_lost = lost
        .iter()
        .any(|l| l.starts_with(crate::recorder::LINES_LOST));
    out.push_str(&server(run, lines_lost));
    out.push_str(&keisoku_findings::render_text(findings));
    out
}

/// A short client section from the stored results JSON (docs/bench-json.md).
pub fn client(run: &RunJson) -> String {
    let r = &run.results;
    if r.is_null() {
        return String::new();
    }
    let num = |v: &serde_json::Value| v.as_f64();
    let mut out = String::from("Client\n");
    let lat = &r["latency_ms"];
    let _ = writeln!(
        out,
        "  requests {}  rps {}  errors {}",
        num(&r["requests"]).map_or("-".into(), |v| format!("{v:.0}")),
        num(&r["rps"]).map_or("-".into(), |v| format!("{v:.1}")),
        errors_text(r),
    );
    let q = |k: &str| num(&lat[k]).map_or("-".into(), |v| format!("{v:.2}"));
    let _ = writeln!(
        out,
        "  latency ms  p50 {}  p90 {}  p99 {}  max {}",
        q("p50"),
        q("p90"),
        q("p99"),
        q("max")
    );
    out.push_str(&imported_from(r));
    if let Some(n) = num(&r["unfinished"]).filter(|n| *n > 0.0) {
        let _ = writeln!(
            out,
            "  unfinished {n:.0} (still unanswered when the duration ended: neither responses nor errors)"
        );
    }
    out
}

/// Where imported client results came from (`record --client-results`,
/// `keisoku import`), what lies outside the run, and what a tool without
/// request times (wrk) could not give; "" for keisoku's own load.
fn imported_from(r: &serde_json::Value) -> String {
    let src = &r["source"];
    let Some(describe) = src["describe"].as_str() else {
        return String::new();
    };
    let mut out = String::new();
    let file = src["file"].as_str().unwrap_or("");
    let _ = writeln!(out, "  imported from {describe} {}", terminal_safe(file));
    let count = |k: &str| src[k].as_u64().unwrap_or(0);
    if count("before_run") + count("after_run") > 0 {
        let _ = writeln!(
            out,
            "  outside the recording: {} requests ended before it started, {} after it ended (kept)",
            count("before_run"),
            count("after_run")
        );
    }
    if src["per_second"] == serde_json::Value::Bool(false) {
        let _ = writeln!(
            out,
            "  no per-second numbers: {describe} has no request times (summary and latency distribution only)"
        );
        if let Some(d) = r["latency_distribution"].as_array() {
            let cells: Vec<String> = d
                .iter()
                .filter_map(|p| {
                    Some(format!(
                        "{}% {:.2}",
                        p.get(0)?.as_f64()?,
                        p.get(1)?.as_f64()?
                    ))
                })
                .collect();
            let _ = writeln!(out, "  latency distribution ms  {}", cells.join("  "));
        }
        if let Some(n) = r["non_2xx_3xx"].as_u64() {
            let _ = writeln!(
                out,
                "  non-2xx/3xx answers {n} (4xx and 5xx not told apart), socket errors {}",
                r["errors_transport"].as_u64().unwrap_or(0)
            );
        }
    }
    out
}

/// `4357 (3.9%): 5xx 4357, transport 0` from a results object. Runs
/// recorded before errors counted 5xx answers (no `errors_transport`) have
/// their 5xx added, so every run reads with one definition.
fn errors_text(r: &serde_json::Value) -> String {
    let count = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    if r["errors"].as_f64().is_none() {
        return "-".into();
    }
    let s5xx = count(&r["status"]["5xx"]);
    let (errors, transport) = if r.get("errors_transport").is_some() {
        (count(&r["errors"]), count(&r["errors_transport"]))
    } else {
        (count(&r["errors"]) + s5xx, count(&r["errors"]))
    };
    let attempts = count(&r["requests"]) + transport;
    let rate = r["error_rate"].as_f64().unwrap_or(if attempts > 0.0 {
        errors / attempts * 100.0
    } else {
        0.0
    });
    if errors == 0.0 {
        return "0".into();
    }
    format!("{errors:.0} ({rate:.1}%): 5xx {s5xx:.0}, transport {transport:.0}")
}

/// The server side: CPU per core, scheduler, faults, disk, process,
/// top functions and access-log routes. `lines_lost`: the store failed
/// while keeping the access log's lines.
pub fn server(run: &RunJson, lines_lost: bool) -> String {
    let by_name: BTreeMap<&str, &Series> =
        run.series.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut out = String::new();
    // Busy share per core = 100 - idle, so every kind of CPU time counts.
    let mut cores: Vec<(u32, (f64, f64, f64))> = Vec::new();
    for s in &run.series {
        if let Some(rest) = s.name.strip_prefix("cpu.") {
            if let Some(core) = rest
                .strip_suffix(".idle")
                .and_then(|c| c.parse::<u32>().ok())
            {
                let busy = Series {
                    v: s.v.iter().map(|v| (100.0 - v).clamp(0.0, 100.0)).collect(),
                    ..s.clone()
                };
                if let Some(st) = stats(&busy) {
                    cores.push((core, st));
                }
            }
        }
    }
    cores.sort_by_key(|c| c.0);
    if !cores.is_empty() {
        let _ = writeln!(out, "Server: CPU busy % per core (min / avg / max)");
        for (core, (mn, avg, mx)) in &cores {
            let _ = writeln!(out, "  cpu{core:<4} {mn:6.1} {avg:6.1} {mx:6.1}");
        }
    }
    let mut rate_line = |label: &str, s: Option<Series>| {
        if let Some((_, avg, mx)) = s.as_ref().and_then(stats) {
            let _ = writeln!(out, "  {label:<22} avg {avg:10.1}  max {mx:10.1}");
        }
    };
    let one = |n: &str| by_name.get(n).map(|s| (*s).clone());
    rate_line("context switches/s", one("sched.ctxt"));
    rate_line("migrations/s", one("proc.migrations"));
    rate_line("major faults/s", one("vm.pgmajfault"));
    rate_line(
        "disk IOPS",
        sum_series(run.series.iter().filter(|s| {
            s.name.starts_with("disk.")
                && (s.name.ends_with(".r_iops") || s.name.ends_with(".w_iops"))
        })),
    );
    rate_line(
        "server CPU % (1 core)",
        sum_series(
            run.series
                .iter()
                .filter(|s| s.name == "proc.cpu_user" || s.name == "proc.cpu_system"),
        ),
    );
    if let Some((_, _, mx)) = by_name.get("proc.rss").and_then(|s| stats(s)) {
        let _ = writeln!(out, "  {:<22} max {:.1} MiB", "server RSS", mx / 1048576.0);
    }
    out.push_str(&busiest_threads(run, 5));
    if let Some(p) = &run.profile {
        let top = top_functions(p, 5);
        if !top.is_empty() {
            let _ = writeln!(
                out,
                "Top functions by self time ({} samples)",
                total_samples(p)
            );
            for (name, module, share) in top {
                let module = if module.is_empty() {
                    String::new()
                } else if module.starts_with('[') {
                    format!("  {module}")
                } else {
                    format!("  [{module}]")
                };
                let _ = writeln!(
                    out,
                    "  {share:5.1}%  {}{}",
                    terminal_safe(&name),
                    terminal_safe(&module)
                );
            }
        }
    }
    let mut routes = run.routes.access_log.clone();
    if !routes.is_empty() {
        routes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.uri.cmp(&b.uri)));
        let _ = writeln!(out, "Access log: top routes");
        let _ = writeln!(
            out,
            "  {:>8}  {:<7} {:<30} {:>9} {:>9}",
            "count", "method", "uri", "p99 ms", "5xx"
        );
        for r in routes.iter().take(5) {
            let _ = writeln!(
                out,
                "  {:>8}  {:<7} {:<30} {:>9.2} {:>9}",
                r.count, r.method, r.uri, r.p99, r.s5xx
            );
        }
    }
    if let Some(l) = &run.routes.access_log_lines {
        let line = if lines_lost {
            // The stored counters stopped where the store failed: they
            // say nothing of the lines read after that.
            format!(
                "Access log lines: {} kept before the store failed ({} read by then; later lines were neither kept nor counted here, see `not kept` in the notes)",
                l.kept_lines, l.lines
            )
        } else {
            log_lines(l)
        };
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The `n` server threads with the most CPU, from their `thread.*` series
/// (field notes §2: which worker migrates, is preempted or waits for a core).
/// A thread has series only while busy, so its rates are averaged over the
/// whole run's ticks (those of `proc.cpu_user`), counting idle ticks as 0.
pub fn busiest_threads(run: &RunJson, n: usize) -> String {
    let ticks = run
        .series
        .iter()
        .find(|s| s.name == "proc.cpu_user")
        .map_or(0, |s| s.v.len());
    let mut sums: BTreeMap<SeriesThread, [f64; 5]> = BTreeMap::new();
    const METRICS: [&str; 5] = ["cpu", "migrations", "nivcsw", "nvcsw", "runq_delay_ms"];
    for s in &run.series {
        let Some((thread, metric)) = SeriesThread::parse(&s.name) else {
            continue;
        };
        let Some(i) = METRICS.iter().position(|m| *m == metric) else {
            continue;
        };
        let own = s.v.iter().filter(|v| v.is_finite()).sum::<f64>();
        // Series longer than the reference (no proc.cpu_user) use their own length.
        let per = ticks.max(s.v.len()).max(1) as f64;
        sums.entry(thread).or_default()[i] = own / per;
    }
    if sums.is_empty() {
        return String::new();
    }
    let mut rows: Vec<(SeriesThread, [f64; 5])> = sums.into_iter().collect();
    rows.sort_by(|a, b| b.1[0].total_cmp(&a.1[0]).then_with(|| a.0.cmp(&b.0)));
    let mut out = format!(
        "Busiest server threads ({} of {} with series; averages over the run)\n",
        rows.len().min(n),
        rows.len()
    );
    let _ = writeln!(
        out,
        "  {:<32} {:>7} {:>9} {:>9} {:>9} {:>10}",
        "thread", "CPU %", "migr/s", "invol/s", "vol/s", "runq ms/s"
    );
    for (thread, [cpu, migr, niv, nv, runq]) in rows.iter().take(n) {
        let _ = writeln!(
            out,
            "  {:<32} {cpu:>7.1} {migr:>9.1} {niv:>9.1} {nv:>9.1} {runq:>10.1}",
            thread.label()
        );
    }
    out
}

/// One line on what the run kept of its access log's lines.
pub fn log_lines(l: &keisoku_store::AccessLog) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    if !l.keep_lines {
        return format!(
            "Access log lines: not kept (--no-log-lines or --log-lines-max 0); {} lines followed",
            l.lines
        );
    }
    let kept = format!(
        "{} of {} lines kept ({:.1} MB raw, {:.1} MB stored)",
        l.kept_lines,
        l.lines,
        mb(l.kept_bytes),
        mb(l.stored_bytes)
    );
    match l.truncated_ms {
        Some(t) => format!(
            "Access log lines: {kept}; truncated at {:.1}s by --log-lines-max {}",
            t / 1000.0,
            l.max_bytes
        ),
        None => format!("Access log lines: {kept}"),
    }
}

fn total_samples(p: &Profile) -> u64 {
    p.total_weight()
}

/// Functions with the largest self weight: (name, module, % of all samples).
pub fn top_functions(p: &Profile, n: usize) -> Vec<(String, String, f64)> {
    let per_node = p.self_weights();
    let total: f64 = per_node.iter().map(|&w| w as f64).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut per_fn: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for (node, &w) in per_node.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let Some(f) = p
            .node_frame
            .get(node)
            .and_then(|&f| p.frames.get(f as usize))
        else {
            continue;
        };
        *per_fn
            .entry((f.name.as_str(), f.module.as_str()))
            .or_default() += w as f64;
    }
    let mut v: Vec<(String, String, f64)> = per_fn
        .into_iter()
        .map(|((name, module), w)| (name.to_string(), module.to_string(), 100.0 * w / total))
        .collect();
    v.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// Everything `keisoku show` prints.
pub fn full(run: &RunJson) -> String {
    full_view(run, false)
}

/// [`full`], saying whether the store failed while keeping the access
/// log's lines (its stored line counters are then stale).
fn full_view(run: &RunJson, lines_lost: bool) -> String {
    let mut out = header(run);
    out.push_str(&client(run));
    out.push_str(&server(run, lines_lost));
    if !run.findings.is_empty() {
        let _ = writeln!(
            out,
            "Findings: {} (see `keisoku report {}`)",
            run.findings.len(),
            run.run.id
        );
    }
    out
}

/// The table `keisoku runs` prints: one line per stored run, newest first
/// as given, text left-aligned and numbers right-aligned.
pub fn runs_table(runs: &[keisoku_store::RunListing]) -> String {
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                terminal_safe(&r.name).into_owned(),
                utc(r.started_unix_ms),
                human_duration(r.duration_ms),
                r.target
                    .as_deref()
                    .map_or("-".into(), |t| terminal_safe(t).into_owned()),
                r.status.clone(),
                r.rps.map_or("-".into(), |v| format!("{v:.1}")),
                r.p99_ms.map_or("-".into(), |v| format!("{v:.2}ms")),
            ]
        })
        .collect();
    let head = [
        "ID",
        "NAME",
        "STARTED (UTC)",
        "DURATION",
        "TARGET",
        "STATUS",
        "RPS",
        "P99",
    ];
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            // Numbers right-aligned, text left-aligned.
            if i >= 6 {
                let _ = write!(s, "{c:>w$}  ");
            } else {
                let _ = write!(s, "{c:<w$}  ");
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(&head.map(String::from));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use keisoku_stacks::model::NO_PARENT;
    use keisoku_stacks::{FrameKind, Unit};

    #[test]
    fn top_functions_sum_self_weight_per_function() {
        // Stacks: main;a (x3), main;b (x1), main (x1); "a" appears at two nodes.
        let mut p = Profile::new("", Unit::Samples);
        let main = p.frame_parts("main", "app", FrameKind::Native);
        let a = p.frame_parts("a", "app", FrameKind::Native);
        let b = p.frame_parts("b", "[kernel.kallsyms]", FrameKind::Native);
        // Parents [-1, 0, 0, 2], frames [0, 1, 2, 1].
        let root = p.child(NO_PARENT, main);
        p.child(root, a);
        let nb = p.child(root, b);
        p.child(nb, a);
        p.samples.node = vec![1, 1, 3, 2, 0];
        let top = top_functions(&p, 2);
        assert_eq!(top.len(), 2);
        assert_eq!((top[0].0.as_str(), top[0].2), ("a", 60.0));
        assert_eq!(top[1].2, 20.0);
        assert_eq!(top[1].0, "b", "ties break by name");
    }

    fn series(name: &str, v: &[f64]) -> Series {
        Series {
            name: name.into(),
            unit: String::new(),
            t_ms: (0..v.len()).map(|i| i as f64 * 1000.0).collect(),
            v: v.to_vec(),
        }
    }

    #[test]
    fn busiest_threads_rank_by_cpu_and_count_idle_ticks_as_zero() {
        let run = RunJson {
            series: vec![
                series("proc.cpu_user", &[0.0; 4]),
                // Busy only for the last two of four ticks: 100% over 4 ticks = 50.
                series("thread.demo-prefork-1:10:12.cpu", &[100.0, 100.0]),
                series("thread.demo-prefork-1:10:12.migrations", &[8.0, 0.0]),
                series("thread.demo-prefork-0:10:11.cpu", &[80.0, 80.0, 80.0, 80.0]),
                series("thread.nginx:20:20.cpu", &[10.0, 10.0, 10.0, 10.0]),
                series("thread.bad.cpu", &[1000.0]),
            ],
            ..RunJson::default()
        };
        let text = busiest_threads(&run, 2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains("2 of 3 with series"), "{text}");
        assert!(lines[2].starts_with("  demo-prefork-0 (tid 11)"), "{text}");
        assert!(lines[2].contains("   80.0 "), "{text}");
        assert!(lines[3].starts_with("  demo-prefork-1 (tid 12)"), "{text}");
        assert!(lines[3].contains("   50.0       2.0 "), "{text}");
        assert!(!text.contains("nginx"), "{text}");
        assert_eq!(busiest_threads(&RunJson::default(), 5), "");
    }
}
