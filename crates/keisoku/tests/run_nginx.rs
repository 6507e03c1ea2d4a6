//! `keisoku run` end to end against real servers: nginx (perf + LTSV access
//! log), a server killed mid-run, and runs read back through the CLI.

mod common;
use common::{export_run, free_port};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

fn nginx() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// A python3 HTTP server's head: answers `ok` to every GET and calls
/// `served(n)` (defined by each test) with the running request count.
const SERVED: &str = "import http.server, threading, os, signal\n\
lock = threading.Lock()\ncount = [0]\n\
class H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.send_header('Content-Length','2'); self.end_headers(); self.wfile.write(b'ok')\n        with lock:\n            count[0] += 1; n = count[0]\n        served(n)\n    def log_message(self, *a): pass\n";

/// Whether nothing accepts connections on `port` within a few seconds: a
/// killed process closes its sockets as it exits, a moment after the kill.
fn stops_listening(port: u16) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// An nginx config: 2 workers, LTSV access log, everything under `dir`.
fn nginx_conf(dir: &Path, port: u16) -> PathBuf {
    let d = dir.display();
    let conf = format!(
        "worker_processes 2;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format ltsv \"time:$time_local\\thost:$remote_addr\\tmethod:$request_method\\turi:$request_uri\\tstatus:$status\\tsize:$body_bytes_sent\\treqtime:$request_time\";\n\
  access_log {d}/access.log ltsv;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"hello\\n\"; }} }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

#[test]
fn nginx_run_records_cpu_process_profile_and_access_log_on_one_clock() {
    let Some(nginx) = nginx() else {
        panic!("nginx is not installed: run scripts/setup.sh");
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = nginx_conf(dir.path(), port);
    let store = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    let url = format!("http://127.0.0.1:{port}/hello");
    let cmd = format!(
        "{} -p {} -c {}",
        nginx.display(),
        dir.path().display(),
        conf.display()
    );
    let out = keisoku(&[
        "run",
        "--target",
        &url,
        "-c",
        "4",
        "-t",
        "1",
        "-d",
        "3s",
        "--server-cmd",
        &cmd,
        "--profile",
        "perf",
        // nginx spends most of its time in the kernel; on a busy machine it
        // gets little CPU in 3 s, so sample often enough to catch its own
        // functions.
        "--profile-hz",
        "499",
        "--access-log",
        log.to_str().unwrap(),
        "--log-format",
        "ltsv",
        "--name",
        "nginx-e2e",
        "--tag",
        "suite=e2e",
        "--store",
        store.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("CPU busy % per core"), "{stdout}");
    assert!(stdout.contains("Access log: top routes"), "{stdout}");

    let run = export_run(&store, "nginx-e2e");
    assert_eq!(run.run.status, "complete");
    assert_eq!(run.run.tags["suite"], "e2e");
    assert_eq!(run.run.target.as_deref(), Some(url.as_str()));
    let series = |name: &str| run.series.iter().find(|s| s.name == name);

    // Per-core CPU for every second of the run: a rate point at t covers
    // the interval since the previous point. A loaded machine may delay one
    // tick (the sampler then covers two seconds with one point), never more.
    let cores = std::thread::available_parallelism().unwrap().get();
    let seconds = (run.run.duration_ms / 1000.0).floor() as usize;
    assert!(seconds >= 3, "run lasted {} ms", run.run.duration_ms);
    for core in 0..cores {
        let s = series(&format!("cpu.{core}.user")).unwrap_or_else(|| panic!("no cpu.{core}.user"));
        assert!(s.t_ms.len() + 1 >= seconds, "cpu.{core}.user: {:?}", s.t_ms);
        assert!(
            s.t_ms[0] <= 1600.0,
            "cpu.{core}.user starts late: {:?}",
            s.t_ms
        );
        assert!(
            *s.t_ms.last().unwrap() >= run.run.duration_ms - 1600.0,
            "cpu.{core}.user ends early: {:?} (run {} ms)",
            s.t_ms,
            run.run.duration_ms
        );
        for w in s.t_ms.windows(2) {
            assert!(
                w[1] - w[0] <= 2600.0,
                "cpu.{core}.user has a hole: {:?}",
                s.t_ms
            );
        }
    }
    // nginx's process series (master + 2 workers summed).
    let threads = series("proc.threads").expect("proc.threads");
    assert!(
        threads.v.iter().any(|&v| v >= 3.0),
        "nginx threads {:?}",
        threads.v
    );
    let cpu = series("proc.cpu_user").expect("proc.cpu_user");
    assert!(
        cpu.v.iter().any(|&v| v > 0.0),
        "nginx used no CPU: {:?}",
        cpu.v
    );
    assert!(series("proc.rss").is_some_and(|s| s.v.iter().all(|&v| v > 0.0)));

    // The client's phase and series sit on the same clock, inside the run.
    assert_eq!(run.phases.len(), 1);
    let phase = &run.phases[0];
    assert!(
        phase.start_ms >= 0.0 && phase.end_ms <= run.run.duration_ms + 1.0,
        "{phase:?}"
    );
    assert!(
        (phase.end_ms - phase.start_ms - 3000.0).abs() < 500.0,
        "{phase:?}"
    );
    let rps = series("client.rps").expect("client.rps");
    assert!(rps
        .t_ms
        .iter()
        .all(|&t| t > phase.start_ms && t <= phase.end_ms + 1500.0));

    // A profile with nginx's own functions.
    let profile = run
        .profile
        .as_ref()
        .unwrap_or_else(|| panic!("no profile; stderr:\n{stderr}"));
    assert!(
        profile.frames.iter().any(|f| f.name.starts_with("ngx_")),
        "no ngx_ frame among {} frames",
        profile.frames.len()
    );
    assert!(profile.counts.is_none(), "samples");
    let times: Vec<f64> = profile
        .samples
        .time_ns
        .as_ref()
        .expect("sample times")
        .iter()
        .map(|&ns| ns as f64 / 1e6)
        .collect();
    assert!(!times.is_empty());
    assert!(
        times
            .iter()
            .all(|&t| t >= -1.0 && t <= run.run.duration_ms + 1000.0),
        "profile times outside the run: {:?}..{:?}",
        times.first(),
        times.last()
    );

    // The access log's count equals the client's.
    let client: u64 = run.results["requests"].as_u64().expect("results.requests");
    assert!(client > 100, "only {client} requests");
    let logged: u64 = run.routes.access_log.iter().map(|r| r.count).sum();
    assert_eq!(logged, client, "access log {:?}", run.routes.access_log);
    assert_eq!(run.routes.access_log[0].uri, "/hello");
    assert_eq!(run.routes.client[0].count, client);
    assert!(series("log.rps").is_some_and(|s| s.v.iter().sum::<f64>() as u64 == client));

    // show and runs find it; the server's stderr was kept (empty is fine, the stream exists or not).
    let show = keisoku(&["show", "last", "--store", store.to_str().unwrap()]);
    assert!(show.status.success());
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("nginx-e2e") && text.contains("Top functions"),
        "{text}"
    );
    let runs = keisoku(&["runs", "--json", "--store", store.to_str().unwrap()]);
    let list: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(list[0]["status"], "complete");
    assert!(list[0]["rps"].as_f64().unwrap() > 0.0);
    // The run kept nginx's lines, one per request the client made, so
    // `keisoku logs RUN` prints byte for byte what `keisoku logs ltsv FILE`
    // prints for the log, whatever the options.
    let kept = run.routes.access_log_lines.as_ref().expect("lines kept");
    assert_eq!((kept.lines, kept.kept_lines), (client, client));
    assert!(!kept.truncated && kept.stored_bytes < kept.kept_bytes);
    let s = store.to_str().unwrap();
    let l = log.to_str().unwrap();
    for extra in [
        &["--format", "tsv", "--percentiles", "50,75,90,99,100"][..],
        &["-f", "Status == 200 and ResponseTime >= 0", "--slow", "5"][..],
        &["--timeline", "1s", "--format", "json"][..],
        &["-q", "--auto-group", "--sort", "p99", "-r"][..],
    ] {
        let stored = keisoku(&[&["logs", "last", "--store", s][..], extra].concat());
        let file = keisoku(&[&["logs", "ltsv", l][..], extra].concat());
        assert!(
            stored.status.success() && file.status.success(),
            "{}{}",
            String::from_utf8_lossy(&stored.stderr),
            String::from_utf8_lossy(&file.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&stored.stdout),
            String::from_utf8_lossy(&file.stdout),
            "{extra:?}"
        );
    }

    // nginx was stopped (its killed workers close the socket as they exit).
    assert!(stops_listening(port), "nginx still listens");
}

#[test]
fn a_server_killed_mid_run_leaves_an_interrupted_run_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let store = dir.path().join("runs.db");
    // python3's http.server, killed (SIGKILL, by itself) 1 s after its 20th
    // request: counted from the load, not from its start, so a slow start
    // on a busy machine cannot end the run before the load and sampler ran.
    let script = dir.path().join("server.py");
    std::fs::write(
        &script,
        format!(
            "{SERVED}\
def served(n):\n    if n == 20: threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()\n\
http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = keisoku(&[
        "run",
        "--target",
        &format!("http://127.0.0.1:{port}/"),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "20s",
        "--server-cmd",
        &format!("exec python3 {}", script.display()),
        "--profile",
        "none",
        "--store",
        store.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("server exited during the run"), "{stderr}");
    let run = export_run(&store, "last");
    // The run (server start-up included) ended before the 20 s the load
    // would have taken had it not stopped; measured on the run's own clock,
    // as the test's wall clock also counts start-ups a busy machine slows.
    assert!(
        run.run.duration_ms < 20_000.0,
        "the load did not stop when the server died: the run lasted {} ms ({:?} in all)",
        run.run.duration_ms,
        started.elapsed()
    );
    assert_eq!(run.run.status, "interrupted");
    assert!(run.run.interrupted);
    assert!(run
        .series
        .iter()
        .any(|s| s.name == "cpu.all.user" && !s.v.is_empty()));
    assert!(
        run.results["requests"].as_u64().unwrap_or(0) > 0,
        "the results until the death were kept"
    );
}

#[test]
fn bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let s = store.to_str().unwrap();
    let out = keisoku(&["run", "--target", "ftp://x/", "--store", s]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = keisoku(&[
        "run",
        "--target",
        "http://127.0.0.1:1/",
        "--interval",
        "10ms",
        "--store",
        s,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = keisoku(&[
        "run",
        "--target",
        "http://127.0.0.1:1/",
        "--tag",
        "novalue",
        "--store",
        s,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = keisoku(&[
        "run",
        "--target",
        "http://127.0.0.1:1/",
        "--log-format",
        "regexp",
        "--log-regexp",
        "(",
        "--access-log",
        "/x",
        "--store",
        s,
    ]);
    assert_eq!(out.status.code(), Some(2));
    // Nothing was recorded for bad input.
    assert!(!store.exists());
}

#[test]
fn sigint_during_a_run_keeps_partial_results_and_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let store = dir.path().join("runs.db");
    let script = dir.path().join("server.py");
    let marker = dir.path().join("served-20");
    std::fs::write(
        &script,
        format!(
            "{SERVED}\
def served(n):\n    if n == 20: open('{marker}', 'w').close()\n\
http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n",
            marker = marker.display()
        ),
    )
    .unwrap();
    let child = Command::new(BIN)
        .args([
            "run",
            "--target",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "30s",
            "--server-cmd",
            &format!("exec python3 {}", script.display()),
            "--profile",
            "none",
            "--store",
            store.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // With two connections, by the 20th request the client has its first
    // responses: the partial results cannot be empty.
    let start = std::time::Instant::now();
    while !marker.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the server never served 20 requests"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let run = export_run(&store, "last");
    assert_eq!(run.run.status, "interrupted");
    assert_eq!(run.results["partial"], true);
    assert!(run.results["requests"].as_u64().unwrap_or(0) > 0);
    assert!(run.series.iter().any(|s| s.name == "proc.rss"));
    assert!(stops_listening(port), "the server still listens");
}

#[test]
fn a_server_that_never_answers_keeps_the_run_and_shows_the_end_of_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let port = free_port();
    let out = keisoku(&[
        "run",
        "--target",
        &format!("http://127.0.0.1:{port}/"),
        "-d",
        "5s",
        "--server-cmd",
        "for i in 1 2 3 4 5 6 7; do echo line$i >&2; done; exit 3",
        "--profile",
        "none",
        "--store",
        store.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the server exited before it answered"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kept, marked interrupted; its stderr ends:\n  line3\n  line4\n  line5\n  line6\n  line7\n"),
        "the last 5 lines of the server's stderr: {stderr}"
    );
    let run = export_run(&store, "last");
    assert_eq!(run.run.status, "interrupted");
    assert!(stderr.contains(&run.run.id), "{stderr}");
}

/// An nginx config whose `/busy` answers 503 (and everything else 200), LTSV
/// access log under `dir`.
fn nginx_busy_conf(dir: &Path, port: u16) -> PathBuf {
    let d = dir.display();
    let conf = format!(
        "worker_processes 2;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format ltsv \"time:$time_local\\thost:$remote_addr\\tmethod:$request_method\\turi:$request_uri\\tstatus:$status\\tsize:$body_bytes_sent\\treqtime:$request_time\";\n\
  access_log {d}/access.log ltsv;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  server {{ listen 127.0.0.1:{port};\n    location /busy {{ return 503 \"busy\\n\"; }}\n    location / {{ return 200 \"hello\\n\"; }}\n  }}\n}}\n"
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    path
}

/// Issue 13: 503 answers are errors in the verdict, the client and log
/// series, the route seconds, `show`, a finding and compare's gate.
#[test]
fn nginx_503_answers_are_errors_everywhere() {
    let Some(nginx) = nginx() else {
        panic!("nginx is not installed: run scripts/setup.sh");
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = nginx_busy_conf(dir.path(), port);
    let store = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    let cmd = format!(
        "{} -p {} -c {}",
        nginx.display(),
        dir.path().display(),
        conf.display()
    );
    let targets = dir.path().join("targets.txt");
    let run = |name: &str, paths: &[&str]| {
        let lines: String = paths
            .iter()
            .map(|p| format!("GET http://127.0.0.1:{port}{p}\n"))
            .collect();
        std::fs::write(&targets, lines).unwrap();
        let out = keisoku(&[
            "run",
            "--targets",
            targets.to_str().unwrap(),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "3s",
            "--server-cmd",
            &cmd,
            "--profile",
            "none",
            "--access-log",
            log.to_str().unwrap(),
            "--log-format",
            "ltsv",
            "--name",
            name,
            "--store",
            store.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        stdout
    };
    let clean_out = run("clean", &["/ok"]);
    assert!(clean_out.contains("  errors    none"), "{clean_out}");
    let stdout = run("faulty", &["/ok", "/busy"]);

    let faulty = export_run(&store, "faulty");
    let r = &faulty.results;
    let s5xx = r["status"]["5xx"].as_u64().unwrap();
    assert!(s5xx > 100, "{r}");
    assert_eq!(r["errors"].as_u64(), Some(s5xx), "{r}");
    assert_eq!(r["errors_transport"].as_u64(), Some(0), "{r}");
    assert_eq!(r["status_codes"]["503"].as_u64(), Some(s5xx), "{r}");
    let rate = r["error_rate"].as_f64().unwrap();
    assert!((40.0..60.0).contains(&rate), "{r}");
    // The verdict says N errors (x%), split by status.
    assert!(
        stdout.contains(&format!(
            "  errors    {s5xx} ({rate:.0}%): 5xx {s5xx} (503 {s5xx})"
        )),
        "{stdout}"
    );
    let series = |name: &str| {
        faulty
            .series
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("series {name}"))
    };
    let client_errors: f64 = series("client.errors").v.iter().sum();
    assert_eq!(client_errors as u64, s5xx);
    assert_eq!(series("client.status_5xx").v, series("client.errors").v);
    // Every second of the load has a point on every client series.
    let t = &series("client.rps").t_ms;
    for w in t.windows(2) {
        assert!((w[1] - w[0] - 1000.0).abs() < 1e-6, "{t:?}");
    }
    for name in [
        "client.inflight",
        "client.connections",
        "client.p90_ms",
        "client.max_ms",
    ] {
        assert_eq!(&series(name).t_ms, t, "{name}");
    }
    assert!(series("client.inflight").v.iter().any(|&v| v >= 1.0));
    assert!(series("client.connections").v.contains(&2.0));
    // The access log saw the same 503s.
    let log_errors: f64 = series("log.errors").v.iter().sum();
    assert!(log_errors as u64 >= s5xx, "{log_errors} < {s5xx}");
    assert!(series("log.inflight").t_ms.len() >= 3);
    // Route seconds from both sources put the errors on /busy.
    for (src, routes) in [
        ("client", &faulty.route_seconds.client),
        ("access_log", &faulty.route_seconds.access_log),
    ] {
        let busy = routes
            .iter()
            .find(|r| r.route == "/busy")
            .unwrap_or_else(|| panic!("{src}: no /busy"));
        assert!(busy.errors.iter().sum::<u64>() >= s5xx, "{src}");
        assert_eq!(busy.count, busy.errors, "{src}: every /busy answer failed");
        let ok = routes.iter().find(|r| r.route == "/ok").unwrap();
        assert_eq!(ok.errors.iter().sum::<u64>(), 0, "{src}");
        assert!(ok.hist.iter().all(|h| !h.is_empty()), "{src}");
    }
    // A finding names the route.
    let finding = faulty
        .findings
        .iter()
        .find(|f| f["rule"] == "errors")
        .unwrap_or_else(|| panic!("no errors finding: {:?}", faulty.findings));
    assert!(
        finding["title"].as_str().unwrap().contains("/busy"),
        "{finding}"
    );
    assert!(stdout.contains("requests failed"), "{stdout}");
    // `show` says the same.
    let out = keisoku(&["show", "faulty", "--store", store.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("errors {s5xx} (")), "{shown}");
    // Compare shows the change and the gate fails.
    let html = dir.path().join("compare.html");
    let out = keisoku(&[
        "compare",
        "clean",
        "faulty",
        "-o",
        html.to_str().unwrap(),
        "--fail-on-regression",
        "errors>0,error_rate>0",
        "--store",
        store.to_str().unwrap(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("errors"), "{text}");
}
