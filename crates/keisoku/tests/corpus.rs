//! Issue 14's bar on the corpus of real services (examples/): keisoku, run the way a
//! user would (`keisoku run --server-cmd ... --profile ... --access-log ...` with a short
//! connection sweep), must name each planted cause in its top 3 findings when it is alone,
//! name every cause (any rank) when they are stacked, and report no problem finding
//! (warning or worse) on a tuned service -- also beside a CPU-hungry neighbour process.
//!
//! This is a representative subset; the whole matrix and the table in docs/findings.md
//! and bench/RESULTS.md come from `bench/corpus.sh`. The cases share the host's two
//! cores, so they run one at a time (a lock), each ~20 s. What each cause must be named
//! by is in examples/expectations.tsv, shared with bench/corpus.sh.
//!
//! The cases marked `#[ignore = "..."]` do not pass reliably yet (each says why, with what
//! was measured); a case is un-ignored once it passes three runs in a row on the shared
//! 2-core host. `cargo test -p keisoku --test corpus -- --ignored` runs the ignored ones.

mod common;
use common::BIN;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One case at a time: two cases at once would each see the other as a neighbour.
static HOST: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One finding line of run-case.sh: rank, id, severity, title.
#[derive(Debug)]
struct Finding {
    rank: usize,
    id: String,
    severity: String,
    title: String,
}

/// How a cause is named: a finding id prefix and, optionally, a title substring.
struct Expectation {
    id_prefix: String,
    title_contains: Option<String>,
}

fn expectation(service: &str, cause: &str) -> Expectation {
    let table = std::fs::read_to_string(repo().join("examples/expectations.tsv"))
        .expect("examples/expectations.tsv");
    for line in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 3 && cols[0] == service && cols[1] == cause {
            return Expectation {
                id_prefix: cols[2].to_string(),
                title_contains: cols.get(3).map(|s| s.to_string()),
            };
        }
    }
    panic!("examples/expectations.tsv has no line for {service} {cause}");
}

/// Runs one case under keisoku (examples/run-case.sh) and returns its ranked findings.
fn run_case(
    service: &str,
    mode: &str,
    causes: &[&str],
    port: u16,
    neighbour: bool,
) -> Vec<Finding> {
    let dir = tempfile::tempdir().expect("a temp dir");
    run_case_in(dir.path(), service, mode, causes, port, neighbour, &[])
}

/// [`run_case`] with its store, logs and output kept in `dir`.
fn run_case_in(
    dir: &Path,
    service: &str,
    mode: &str,
    causes: &[&str],
    port: u16,
    neighbour: bool,
    env: &[(&str, &str)],
) -> Vec<Finding> {
    let _host = HOST.lock().unwrap_or_else(|e| e.into_inner());
    // Another test process (a second checkout's suite, bench/corpus.sh) on this host would be
    // the same unplanned neighbour, and would share the services' ports: one case per host.
    let host_lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("keisoku-corpus.lock"))
        .expect("open the host-wide corpus lock file");
    host_lock.lock().expect("take the host-wide corpus lock");
    let mut cmd = Command::new(repo().join("examples/run-case.sh"));
    cmd.args([service, mode, &causes.join(","), &port.to_string()])
        .env("KEISOKU", BIN)
        .env("CORPUS_DIR", dir)
        .envs(env.iter().copied());
    if neighbour {
        cmd.arg("neighbour");
    }
    let out = cmd.output().expect("run examples/run-case.sh");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{service} {mode} {causes:?}: run-case.sh failed ({}):\n{}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let findings: Vec<Finding> = stdout
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.splitn(4, '\t').collect();
            assert_eq!(cols.len(), 4, "a finding line of run-case.sh: {l:?}");
            Finding {
                rank: cols[0].parse().expect("a rank"),
                id: cols[1].to_string(),
                severity: cols[2].to_string(),
                title: cols[3].to_string(),
            }
        })
        .collect();
    // Kept for the reader of a failure: the whole terminal output of the run.
    let case_out = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "out"))
        .and_then(|e| std::fs::read_to_string(e.path()).ok())
        .unwrap_or_default();
    if std::env::var_os("KEISOKU_CORPUS_VERBOSE").is_some() {
        eprintln!("{case_out}");
    }
    LAST_OUT.with(|o| *o.borrow_mut() = case_out);
    findings
}

thread_local! {
    /// keisoku's whole terminal output of this test's last case: a failure in CI shows it
    /// (phases, per-second timeline, findings with evidence), since the run's files are
    /// gone with the CI host.
    static LAST_OUT: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn rank_of(findings: &[Finding], e: &Expectation) -> Option<usize> {
    findings
        .iter()
        .find(|f| {
            f.id.starts_with(&e.id_prefix)
                && e.title_contains
                    .as_deref()
                    .is_none_or(|s| f.title.contains(s))
        })
        .map(|f| f.rank)
}

/// The findings, one per line, then keisoku's output of the case for the reader of a failure.
fn listing(findings: &[Finding]) -> String {
    let list = findings
        .iter()
        .map(|f| format!("  {}. {} [{}] {}", f.rank, f.id, f.severity, f.title))
        .collect::<Vec<_>>()
        .join("\n");
    let out = LAST_OUT.with(|o| o.borrow().clone());
    format!("{list}\n--- keisoku's output of the case ---\n{out}")
}

/// A cause planted alone is named in the top 3.
fn alone(service: &str, cause: &str, port: u16) {
    alone_in(service, "naive", cause, port);
}

/// A cause planted alone in a service run in `mode` (a service's variant that
/// takes causes, e.g. flask-shop's `gthread`) is named in the top 3.
fn alone_in(service: &str, mode: &str, cause: &str, port: u16) {
    let findings = run_case(service, mode, &[cause], port, false);
    let e = expectation(service, cause);
    let rank = rank_of(&findings, &e);
    assert!(
        rank.is_some_and(|r| r <= 3),
        "{service} with {cause} alone: expected {}{} in the top 3, got rank {rank:?}:\n{}",
        e.id_prefix,
        e.title_contains
            .as_deref()
            .map(|s| format!(" naming {s}"))
            .unwrap_or_default(),
        listing(&findings)
    );
}

/// Every stacked cause is named at some rank.
fn stacked(service: &str, causes: &[&str], port: u16) {
    let findings = run_case(service, "naive", causes, port, false);
    let missing: Vec<&str> = causes
        .iter()
        .copied()
        .filter(|c| rank_of(&findings, &expectation(service, c)).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "{service} with {causes:?} stacked: not named: {missing:?}:\n{}",
        listing(&findings)
    );
}

/// A cause planted alone (beside the busy neighbour or not) is named in the top 3, and no
/// problem finding (warning or worse) starts with `falsely`: a rule that the cause is known
/// to have set off by mistake.
fn alone_and_not(service: &str, cause: &str, port: u16, neighbour: bool, falsely: &str) {
    let findings = run_case(service, "naive", &[cause], port, neighbour);
    let e = expectation(service, cause);
    let rank = rank_of(&findings, &e);
    let false_alarm = findings
        .iter()
        .any(|f| f.id.starts_with(falsely) && f.severity != "info");
    assert!(
        rank.is_some_and(|r| r <= 3) && !false_alarm,
        "{service} with {cause} alone{}: expected {} in the top 3 and no {falsely} problem, got rank {rank:?}:\n{}",
        if neighbour { " beside a busy neighbour" } else { "" },
        e.id_prefix,
        listing(&findings)
    );
}

/// A tuned service has no problem finding (warning or worse).
fn tuned(service: &str, port: u16, neighbour: bool) {
    tuned_in(service, "tuned", port, neighbour);
}

/// A service run in `mode` without causes has no problem finding.
fn tuned_in(service: &str, mode: &str, port: u16, neighbour: bool) {
    let findings = run_case(service, mode, &[], port, neighbour);
    let problems: Vec<&Finding> = findings.iter().filter(|f| f.severity != "info").collect();
    assert!(
        problems.is_empty(),
        "{service} {mode}{}: expected no problem finding, got:\n{}",
        if neighbour {
            " beside a busy neighbour"
        } else {
            ""
        },
        listing(&findings)
    );
}

/// The field notes' headline case. The stall is sized by the file, not by throughput: the
/// bid log starts 16 KiB under its 48 MiB limit and logback checks it every 7 s, so one
/// whole-file gzip blocks the request threads in the first measured step (0.7 s of CPU
/// for `gzip -6`; 3 s of stall at load average 22). Before, at ~10,000 bids/s a 4 MB log
/// compressed in 40-120 ms, shorter than the 100 ms stall bins, and a 24 MB one never
/// rolled on a crowded host. Passed 3 runs in a row at 08:24 UTC (load average 18-20), and
/// again at 09:20 with the rules of 1cd0bf1 (load average ~21).
#[test]
fn java_log_rollover_stall_alone() {
    alone("java-bidder", "rollover", 19270);
}

/// Four causes at once; `scan` answers every row of a table that grows while the bidder
/// runs and is named by `unbounded-response`. Earlier failures: a stall sized by bytes, the
/// rollover's gzip counted as request work, and then (matrix14) a table of 20,000 rows
/// growing 4,000 a second whose scan held 23% of the samples and pushed regex and formatter
/// under their 3% (failed twice in CI). The growth is now sized so each cause costs about
/// what the others do (5,000 rows + 1,000 a second: the scan's self time ~11%, regex and
/// formatter 5-6% each, the answers still growing ~2.4x): the plant was wrong, not the rule
/// (a user's stacked causes in the field notes each cost a comparable share). Passed 3 runs
/// in a row at 15:22-15:26 UTC (load average 25-17): stalls #1, unbounded-response #2,
/// regex-compile #3, formatter #4 in each.
/// Then 16 of 16 runs over two days (2026-11-24 21:24-21:27 UTC at load 4-5, 2 of them
/// beside the busy-loop neighbour; 2026-11-25 00:1x-00:3x UTC at load 1-3), after one miss
/// in a fresh-clone CI run (2026-11-24 16:2x UTC, load ~4: rollover not named, the run not
/// kept). A failure prints keisoku's whole output of the case (timeline, phases, findings).
#[test]
fn java_causes_stacked() {
    stacked(
        "java-bidder",
        &["rollover", "regex", "formatter", "scan"],
        19270,
    );
}

/// A synchronous call to a slow audit service (40 ms) per bid: the request threads wait
/// with the CPU idle. `--wall-profile on` (run-case.sh's `WALL_PROFILE=on`) records
/// async-profiler's wall-clock profile of the JVM, stored as the wall kind: its samples show
/// the wait under `postAudit`, and `blocking-wait`, reading it with the JVM's frame-name
/// contract, names that call path. Before the contract the profile was not read, and with
/// the agent attached the latency-based rule named the wait in 1 of 4 runs (2026-11-24);
/// with it, 5 of 5 on 2026-11-25 (00:3x UTC, load 1-3: "most in Bidder.bid >
/// Bidder.postAudit > SocketDispatcher.read0", 34 ms of the 37-ms wait per request).
#[test]
fn java_sync_audit_call_alone_with_a_wall_clock_profile() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let findings = run_case_in(
        dir.path(),
        "java-bidder",
        "naive",
        &["syncaudit"],
        19270,
        false,
        &[("WALL_PROFILE", "on")],
    );
    let e = expectation("java-bidder", "syncaudit");
    let rank = rank_of(&findings, &e);
    assert!(
        rank.is_some_and(|r| r <= 3),
        "java-bidder with syncaudit alone: expected {} in the top 3, got rank {rank:?}:\n{}",
        e.id_prefix,
        listing(&findings)
    );
    let wait = findings
        .iter()
        .find(|f| f.id.starts_with("blocking-wait"))
        .expect("blocking-wait");
    assert!(
        wait.title.contains("Bidder.postAudit"),
        "blocking-wait does not name the audit call from the wall-clock profile:\n{}",
        listing(&findings)
    );
    let store = dir
        .path()
        .join("java-bidder-naive-syncaudit.db")
        .to_string_lossy()
        .into_owned();
    let folded = dir.path().join("wall.folded");
    let out = Command::new(BIN)
        .args(["flame", "last", "--store", &store, "--kind", "wall", "-o"])
        .arg(&folded)
        .output()
        .expect("run keisoku flame");
    assert!(
        out.status.success(),
        "flame --kind wall of the Java run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&folded).expect("the wall-clock folded stacks");
    let count = |needle: &str| -> f64 {
        text.lines()
            .filter(|l| l.contains(needle))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    // The request threads wait in the audit call: most of their wall-clock samples inside a
    // request are under postAudit (40 ms of a ~45-ms request at low concurrency).
    let in_requests = count("bidder.Bidder.handle");
    let in_audit = count("bidder.Bidder.postAudit");
    assert!(
        in_requests > 0.0 && in_audit >= 0.5 * in_requests,
        "wall-clock samples: {in_audit} under postAudit of {in_requests} under Bidder.handle"
    );
}

#[test]
fn java_tuned_beside_a_neighbour() {
    tuned("java-bidder", 19270, true);
}

/// Passed when the backend's Nagle stall doubled the planted 40-ms call to ~80 ms. Since its
/// TCP_NODELAY fix the wait is 40 ms, and on a crowded host the server's run-queue wait
/// (subtracted as the server's own) covered it at load 23-31. blocking-wait now measures the
/// wait from the wall-clock profile (py-spy --idle: wall minus CPU time per stack on the
/// serving threads), which run-queue wait does not hide: named #1 (high, "most in
/// post_audit_record_sync > call_backend > SocketIO.readinto", 65-108 ms per request) in 3
/// runs in a row at 11:52-11:56 UTC, 1-minute load average 28-36 (run-case.sh on ports
/// 18820; named in each of its 6 runs since 11:40, load 24-36).
#[test]
fn python_slow_external_call_alone() {
    alone("flask-shop", "slowcall", 19275);
}

/// Settings parsed per request make every worker CPU-bound. blocking-wait (high) came second
/// (12:10 UTC, load 24; again 15:00 beside the neighbour at load ~10, 41 ms "in fetch_stock >
/// call_backend > SocketIO.readinto"): the two py-spy processes' difference counted workers
/// runnable behind each other as waiting. The workers' own CPU and run-queue time now bound
/// the wait, so the false second finding is checked for too.
#[test]
fn python_config_load_alone() {
    alone_and_not("flask-shop", "config", 19275, false, "blocking-wait");
}

#[test]
fn python_config_load_beside_a_neighbour() {
    alone_and_not("flask-shop", "config", 19275, true, "blocking-wait");
}

/// Failed on the merged tree (06:14 UTC): blocking-wait high, 54-67% of request time
/// waiting. The wait was real: the test backend wrote headers and body in two writes and
/// Nagle held the body for the shop's delayed ACK, 40 ms per kept-alive stock lookup (p50
/// 44 ms at c=2; 2.8 ms with TCP_NODELAY). With that fixed and blocking-wait judging the
/// wait per request, this and the neighbour case passed 3 runs in a row at 08:28-08:36 UTC
/// (load average 18-23).
#[test]
fn python_tuned() {
    tuned("flask-shop", 19275, false);
}

#[test]
fn python_tuned_beside_a_neighbour() {
    tuned("flask-shop", 19275, true);
}

/// The shop's four causes at once: a synchronous slow call, settings parsed per request, no
/// keep-alive to the backend and one worker. The matrices of 11:30 and 05:21 UTC (load 20-35)
/// named all four, but on a quiet host (load ~1, 21:16 UTC) the one worker went unnamed 3 times
/// of 3: parsing took ~55% of a core and the 40-ms call the rest, so `single-core` (by CPU)
/// stayed quiet. The wall-clock profile shows the worker inside requests 99-100% of the time:
/// `single-core.lone-worker` #3 (and `single-core` beside the neighbour), 4 of 4 since.
#[test]
fn python_causes_stacked() {
    stacked(
        "flask-shop",
        &["slowcall", "config", "nokeepalive", "oneworker"],
        19275,
    );
}

/// One gunicorn sync worker on 2 cores. Named in the matrix of 11:30 (load 23-29) once a
/// starved lone worker on a busy host counted from half a core, and at 15:00 (load ~10);
/// wall14's miss (host-busy, top-self) was before that rule.
#[test]
fn python_single_worker_alone() {
    alone("flask-shop", "oneworker", 19275);
}

/// gunicorn's gthread workers: a pool thread waits for its next connection in
/// concurrent.futures' `_worker` (the queue's get is C code), fed by the worker's main
/// thread that selects on sockets. Such pool threads serve requests, so the planted 40-ms
/// call is measured on them (before, only the acceptor counted and the call went unnamed).
#[test]
fn python_gthread_slow_external_call_alone() {
    alone_in("flask-shop", "gthread", "slowcall", 19275);
}

/// The tuned shop on gthread workers: its ~3-ms stock lookup is at most an info.
#[test]
fn python_gthread_tuned() {
    tuned_in("flask-shop", "gthread", 19275, false);
}

/// aiohttp on one event loop with a synchronous client call inside the coroutine: the
/// whole loop stalls 40 ms per request. The wall-clock profile shows the loop thread
/// (it waits in `select` when idle, so it serves requests) blocked in `readinto` below
/// `post_audit_blocking`; its CPU is idle, so this is blocking-wait, not single-core.
#[test]
fn python_asyncio_blocking_call_alone() {
    alone("aio-shop", "blocking", 18840);
}

#[test]
fn python_asyncio_tuned() {
    tuned("aio-shop", 18840, false);
}

#[test]
fn node_json_reparse_alone() {
    alone("node-bff", "json", 19280);
}

#[test]
fn node_di_container_file_read_alone() {
    alone("node-bff", "di", 19280);
}

/// Six causes at once. Earlier misses: before the stacked rule, a run ended partial by
/// "database is locked" (fixed in the store), and since `unbounded` joined (matrix14) a list
/// that grew by one comment per request crowded di and JSON.parse out of the samples (di not
/// named in CI; JSON.parse at 7% beside the formatter's 26%, under its 12%). The plants are
/// now sized so each cause costs about what the others do: comments arrive at 30 a second
/// (the page still grows ~3x over a run) and the cached JSON text holds 900 articles
/// (JSON.parse 16-19%). Passed 3 runs in a row at 15:25-15:36 UTC (load average 19-15):
/// single-core #1, unbounded-response and connection-churn #2/#3, formatter #4, json-parse
/// #5, config-load #6.
#[test]
fn node_causes_stacked() {
    stacked(
        "node-bff",
        &["json", "intl", "di", "single", "nokeepalive", "unbounded"],
        19280,
    );
}

/// One node process on a host shared with the load generator and other builds. It was not
/// named (matrix of 09:15 UTC, both halves): V8's platform workers carry the process's name
/// and each held 5-7% of the event loop's samples, so the rule saw five workers. They are
/// left out by their frames (JIT, concurrent marking) since 0d1f90a.
#[test]
fn node_single_worker_alone() {
    alone("node-bff", "single", 19280);
}

/// A backend called without keep-alive: a new loopback connection per request, living well
/// under a millisecond on a quiet host. The probe saw none of them in 1 of 2 runs (2026-11-24:
/// a socket had to be alive in the sock_diag dump and listed in /proc/PID/fd at once); it now
/// learns the backend from the kernel's connect tracepoint (crates/probe/src/connects.rs):
/// named #1 in 5 of 5 runs on 2026-11-25, 0.71-0.74 new connections per request.
#[test]
fn node_backend_without_keepalive_alone() {
    alone("node-bff", "nokeepalive", 19280);
}

/// A list without a limit that grows with the traffic (every request posts a comment, the
/// page lists them all), seen from the access log's bytes per response.
#[test]
fn node_unbounded_response_alone() {
    alone("node-bff", "unbounded", 19280);
}

/// A query without a limit over a table that grows while the bidder runs: the same finding
/// as node's, from another shape of growth (by time, not by requests).
#[test]
fn java_unbounded_scan_alone() {
    alone("java-bidder", "scan", 19270);
}

#[test]
fn node_tuned() {
    tuned("node-bff", 19280, false);
}

/// Was load-sensitive: CPU per request from c=2 to c=8 grew 65% at load 20 but -10% to
/// +7% in other stored runs (06:12 UTC on a quiet host: under the rule's 25%). The rule
/// now also sees the workers' own demand (6.4-7.5 cores wanted by 8 CPU-bound workers at
/// c=8, in every stored run); passed 3 runs in a row at 08:47-08:52 UTC (load 18-23).
#[test]
fn perl_oversubscribed_workers_alone() {
    alone("perl-dsp", "oversubscribed", 19285);
}

#[test]
fn perl_tuned_beside_a_neighbour() {
    tuned("perl-dsp", 19285, true);
}

#[test]
fn nginx_without_upstream_keepalive_alone() {
    alone("nginx-proxy", "noupstreamkeepalive", 19290);
}

#[test]
fn nginx_tuned_beside_a_neighbour() {
    tuned("nginx-proxy", 19290, true);
}
