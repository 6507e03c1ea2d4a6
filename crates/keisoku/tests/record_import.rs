//! Other load tools' results imported into runs, end to end with the real
//! tools on loopback against nginx: JMeter 5.6.3 (CSV and XML JTL), k6
//! (`--out json`), vegeta (its binary output, and `encode --to csv` and
//! `--to json` of it) and wrk (`--latency` text, summary only). Every
//! tool is installed by scripts/setup.sh; a missing one fails the test.
//!
//! nginx answers `/ok` with 200 and `/fail` with 503; its access log is
//! the count every imported number is checked against.

mod common;
use common::export_run;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

/// nginx serving `/ok` (200) and `/fail` (503) on `port`, logging each
/// request as `status uri`.
struct Nginx {
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Nginx {
    fn start(dir: &Path, port: u16) -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("nginx is not installed: run scripts/setup.sh");
        let d = dir.display();
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format plain \"$status $request_uri\";\n  access_log {d}/access.log plain;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  server {{ listen 127.0.0.1:{port}; location /ok {{ return 200 \"hello\\n\"; }} location /fail {{ return 503; }} }}\n}}\n"
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&path)
            .spawn()
            .expect("start nginx");
        // Ready when it accepts a connection.
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "nginx did not listen on {port} (is the port taken?)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx {
            child,
            log: dir.join("access.log"),
            port,
        }
    }

    /// (all requests logged, of which 503s) with an HTTP status; 499 (the
    /// client closed before the answer) apart, as no client counted it.
    fn counts(&self) -> (u64, u64, u64) {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let mut all = 0;
        let mut s503 = 0;
        let mut s499 = 0;
        for l in text.lines() {
            match l.split(' ').next() {
                Some("499") => s499 += 1,
                Some("503") => {
                    s503 += 1;
                    all += 1
                }
                _ => all += 1,
            }
        }
        (all, s503, s499)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // TERM lets the master stop its workers; KILL would orphan them.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.wait();
    }
}

fn tool(name: &str) -> PathBuf {
    let gobin = Command::new("go")
        .args(["env", "GOPATH"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("bin"))
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join("go/bin"));
    let in_go = gobin.join(name);
    if in_go.exists() {
        return in_go;
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} is not installed: run scripts/setup.sh");
}

fn jmeter_jar() -> PathBuf {
    let tools = std::env::var("KEISOKU_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/keisoku-tools")
        });
    let jar = tools.join("jmeter-5.6.3/bin/ApacheJMeter.jar");
    assert!(
        jar.exists(),
        "{} missing: run scripts/setup.sh",
        jar.display()
    );
    jar
}

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn ok(out: &Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// `keisoku record --client-results FILE -- CMD...` into `store`.
fn record(store: &Path, name: &str, results: Option<&Path>, cmd: &[&str]) -> (String, String) {
    let mut args = vec![
        "record",
        "--profile",
        "none",
        "--name",
        name,
        "--store",
        store.to_str().unwrap(),
    ];
    if let Some(r) = results {
        args.extend(["--client-results", r.to_str().unwrap()]);
    }
    args.push("--");
    args.extend(cmd);
    ok(&keisoku(&args))
}

/// The checks every tool with request times must pass: the counts equal
/// nginx's, 503s are exactly the errors, the seconds sum to the total, the
/// phase spans the data inside the run, `runs` shows the RPS.
fn check_imported(store: &Path, name: &str, nginx: &Nginx, tool: &str) {
    let run = export_run(store, name);
    let r = &run.results;
    let (all, s503, _) = nginx.counts();
    assert!(all > 0, "nginx logged nothing");
    assert_eq!(r["requests"].as_u64(), Some(all), "{tool}: {r}");
    assert_eq!(r["status"]["5xx"].as_u64(), Some(s503), "{tool}: {r}");
    assert_eq!(r["errors"].as_u64(), Some(s503), "{tool}: {r}");
    assert_eq!(r["errors_transport"].as_u64(), Some(0), "{tool}: {r}");
    assert_eq!(r["source"]["tool"].as_str(), Some(tool), "{r}");
    let series = |n: &str| {
        run.series
            .iter()
            .find(|s| s.name == n)
            .unwrap_or_else(|| panic!("{tool}: no {n}"))
    };
    let per_second: f64 = series("client.rps").v.iter().sum();
    assert_eq!(
        per_second as u64, all,
        "{tool}: per-second rps sums to the total"
    );
    let errors: f64 = series("client.errors").v.iter().sum();
    assert_eq!(errors as u64, s503, "{tool}");
    assert!(series("client.p99_ms").v.iter().all(|v| *v > 0.0));
    // One phase spanning the requests, inside the recording (the tool ran
    // as its command), and every point within it.
    assert_eq!(run.phases.len(), 1, "{:?}", run.phases);
    let p = &run.phases[0];
    assert!(
        p.start_ms >= 0.0 && p.end_ms <= run.run.duration_ms + 1.0 && p.end_ms > p.start_ms,
        "{tool}: phase {p:?} in a run of {} ms",
        run.run.duration_ms
    );
    assert_eq!(r["source"]["before_run"].as_u64(), Some(0));
    assert_eq!(r["source"]["after_run"].as_u64(), Some(0));
    // Per route: /ok all 2xx, /fail all 5xx, on the client side.
    let rows = &run.routes.client;
    let fail = rows
        .iter()
        .find(|r| r.uri.contains("/fail"))
        .unwrap_or_else(|| panic!("{tool}: no /fail route in {rows:?}"));
    assert_eq!((fail.count, fail.s5xx), (s503, s503), "{tool}");
    let route_seconds: u64 = run
        .route_seconds
        .client
        .iter()
        .flat_map(|r| r.count.iter())
        .sum();
    assert_eq!(route_seconds, all, "{tool}: per-route seconds");
    // `runs` lists the run with its RPS, not "-".
    let (list, _) = ok(&keisoku(&["runs", "--store", store.to_str().unwrap()]));
    let line = list
        .lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("{name} not in\n{list}"));
    let rps = r["rps"].as_f64().unwrap();
    assert!(line.contains(&format!("{rps:.1}")), "{tool}: {line}");
    // The report's page builds with the client series in it.
    let page = ok(&keisoku(&[
        "report",
        name,
        "-o",
        "-",
        "--store",
        store.to_str().unwrap(),
    ]))
    .0;
    assert!(
        page.contains("client.rps"),
        "{tool}: report without client.rps"
    );
}

#[test]
fn jmeter_csv_and_xml_results_are_imported_into_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let jar = jmeter_jar();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/record_import/plan.jmx");
    let java = |out: &Path, extra: &[&str], port: u16| -> Vec<String> {
        let mut v: Vec<String> = ["java", "-jar", jar.to_str().unwrap(), "-n", "-t"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(plan.display().to_string());
        v.push("-l".into());
        v.push(out.display().to_string());
        v.push("-j".into());
        v.push(dir.path().join("jmeter.log").display().to_string());
        for a in [
            format!("-Jport={port}"),
            "-Jloops=40".into(),
            "-Jthreads=3".into(),
        ] {
            v.push(a);
        }
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    // CSV, read as the recording ends.
    {
        let ngx_dir = dir.path().join("csv");
        std::fs::create_dir_all(&ngx_dir).unwrap();
        let nginx = Nginx::start(&ngx_dir, 18751);
        let jtl = dir.path().join("out.jtl");
        let cmd = java(&jtl, &[], nginx.port);
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let (stdout, stderr) = record(&store, "jm-csv", Some(&jtl), &cmd);
        assert!(stderr.contains("JMeter JTL (CSV)"), "{stderr}");
        assert!(
            stdout.contains("imported from JMeter JTL (CSV)"),
            "{stdout}"
        );
        check_imported(&store, "jm-csv", &nginx, "jmeter");
        assert_eq!(nginx.counts().0, 240);
    }

    // XML, attached after the fact with `keisoku import`.
    {
        let ngx_dir = dir.path().join("xml");
        std::fs::create_dir_all(&ngx_dir).unwrap();
        let nginx = Nginx::start(&ngx_dir, 18752);
        let jtl = dir.path().join("out.xml.jtl");
        let cmd = java(
            &jtl,
            &["-Jjmeter.save.saveservice.output_format=xml"],
            nginx.port,
        );
        let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
        record(&store, "jm-xml", None, &cmd);
        let run = export_run(&store, "jm-xml");
        assert!(run.results.is_null(), "{}", run.results);
        let (stdout, stderr) = ok(&keisoku(&[
            "import",
            "jm-xml",
            jtl.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ]));
        assert!(stderr.contains("JMeter JTL (XML)"), "{stderr}");
        assert!(stdout.contains("rps"), "{stdout}");
        check_imported(&store, "jm-xml", &nginx, "jmeter");
        // A second import would mix two loads: refused.
        let again = keisoku(&[
            "import",
            "jm-xml",
            jtl.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ]);
        assert_eq!(again.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&again.stderr).contains("already has client results"));
    }
}

#[test]
fn k6_json_output_is_imported_into_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let k6 = tool("k6");
    let nginx = Nginx::start(dir.path(), 18753);
    let script = dir.path().join("script.js");
    std::fs::write(
        &script,
        format!(
            "import http from 'k6/http';\nexport const options = {{ vus: 3, iterations: 150 }};\n\
export default function () {{\n  http.get('http://127.0.0.1:{}/ok');\n  http.get('http://127.0.0.1:{}/fail');\n}}\n",
            nginx.port, nginx.port
        ),
    )
    .unwrap();
    let out = dir.path().join("k6.json");
    let json_arg = format!("json={}", out.display());
    let (stdout, _) = record(
        &store,
        "k6",
        Some(&out),
        &[
            k6.to_str().unwrap(),
            "run",
            "--quiet",
            "--no-usage-report",
            "--out",
            &json_arg,
            script.to_str().unwrap(),
        ],
    );
    assert!(stdout.contains("imported from k6 JSON output"), "{stdout}");
    check_imported(&store, "k6", &nginx, "k6");
    assert_eq!(nginx.counts().0, 300);
}

#[test]
fn vegeta_binary_csv_and_json_results_are_imported_alike() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let vegeta = tool("vegeta");
    let nginx = Nginx::start(dir.path(), 19101);
    let targets = dir.path().join("targets.txt");
    std::fs::write(
        &targets,
        format!(
            "GET http://127.0.0.1:{0}/ok\nGET http://127.0.0.1:{0}/fail\n",
            nginx.port
        ),
    )
    .unwrap();
    let bin = dir.path().join("results.bin");
    let csv = dir.path().join("results.csv");
    let json = dir.path().join("results.json");
    // The binary stream as `vegeta attack` writes it, read as it is.
    let script = format!(
        "{v} attack -targets {t} -rate 100 -duration 2s -output {b} && {v} encode --to csv {b} > {c} && {v} encode --to json {b} > {j}",
        v = vegeta.display(),
        t = targets.display(),
        b = bin.display(),
        c = csv.display(),
        j = json.display()
    );
    let (stdout, _) = record(&store, "vegeta", Some(&bin), &["sh", "-c", &script]);
    assert!(
        stdout.contains("imported from vegeta results (binary)"),
        "{stdout}"
    );
    check_imported(&store, "vegeta", &nginx, "vegeta");

    // What `vegeta encode --to json` says of the same file.
    let text = std::fs::read_to_string(&json).unwrap();
    let mut requests = 0u64;
    let mut errors = 0u64;
    let mut max_ns = 0i64;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let code = v["code"].as_u64().unwrap();
        requests += u64::from(code != 0);
        errors += u64::from(code == 0 || code >= 500);
        max_ns = max_ns.max(v["latency"].as_i64().unwrap());
    }
    let from_bin = export_run(&store, "vegeta").results;
    assert_eq!(from_bin["requests"].as_u64(), Some(requests), "{from_bin}");
    assert_eq!(from_bin["errors"].as_u64(), Some(errors), "{from_bin}");
    let max_ms = from_bin["latency_ms"]["max"].as_f64().unwrap();
    // The histogram counts whole microseconds with 2 significant digits
    // (296.075 ms is stored as 296.959 ms).
    assert!(
        (max_ms - max_ns as f64 / 1e6).abs() <= 0.001 + max_ms / 100.0,
        "{max_ms} vs {max_ns} ns"
    );

    // The CSV and JSON of the same results, imported into runs of their
    // own, give the same stored numbers as the binary file, to the bit.
    for (name, file, what) in [
        ("vegeta-csv", &csv, "vegeta results (CSV)"),
        ("vegeta-json", &json, "vegeta results (JSON)"),
    ] {
        record(&store, name, None, &["true"]);
        let (stdout, _) = ok(&keisoku(&[
            "import",
            name,
            file.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ]));
        assert!(stdout.contains(what), "{stdout}");
        let r = export_run(&store, name).results;
        for key in [
            "requests",
            "errors",
            "errors_transport",
            "status",
            "status_codes",
            "latency_ms",
            "bytes",
        ] {
            assert_eq!(r[key], from_bin[key], "{name}: {key}");
        }
    }

    // A binary file cut short is refused naming where, never half read.
    let bytes = std::fs::read(&bin).unwrap();
    let cut = dir.path().join("cut.bin");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    record(&store, "vegeta-cut", None, &["true"]);
    let out = keisoku(&[
        "import",
        "vegeta-cut",
        cut.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.bin:byte ") && err.contains("cut short"),
        "{err}"
    );
}

#[test]
fn wrk_text_gives_a_summary_without_seconds_and_show_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let nginx = Nginx::start(dir.path(), 18755);
    let txt = dir.path().join("wrk.txt");
    let script = format!(
        "wrk --latency -t1 -c4 -d2s http://127.0.0.1:{}/fail > {}",
        nginx.port,
        txt.display()
    );
    let (stdout, _) = record(&store, "wrk", Some(&txt), &["sh", "-c", &script]);
    assert!(stdout.contains("no per-second numbers"), "{stdout}");
    let run = export_run(&store, "wrk");
    let r = &run.results;
    let (all, s503, _) = nginx.counts();
    // wrk counts the answers it read; every one was a 503 here. When its
    // duration ends it stops reading: nginx may have answered one request
    // more per connection (4) that wrk never counted.
    let requests = r["requests"].as_u64().unwrap();
    assert!(requests <= all && all - requests <= 4, "nginx {all}: {r}");
    assert_eq!(r["non_2xx_3xx"].as_u64(), Some(requests), "{r}");
    assert_eq!(s503, all);
    assert!(r["errors"].is_null(), "wrk cannot tell 4xx from 5xx: {r}");
    assert_eq!(r["latency_distribution"].as_array().map(Vec::len), Some(4));
    assert!(run.series.iter().all(|s| !s.name.starts_with("client.")));
    let (show, _) = ok(&keisoku(&[
        "show",
        "wrk",
        "--store",
        store.to_str().unwrap(),
    ]));
    assert!(show.contains("no per-second numbers"), "{show}");
    assert!(show.contains("latency distribution ms  50%"), "{show}");
    let (list, _) = ok(&keisoku(&["runs", "--store", store.to_str().unwrap()]));
    let line = list.lines().find(|l| l.contains("wrk")).unwrap();
    let rps = r["rps"].as_f64().unwrap();
    assert!(
        rps > 0.0 && line.contains(&format!("{rps:.1}")),
        "RPS shown: {line}"
    );
}

#[test]
fn a_file_no_tool_wrote_is_refused_naming_the_formats_tried() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    let out = keisoku(&[
        "record",
        "--profile",
        "none",
        "--client-results",
        junk.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--",
        "true",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for f in ["jtl", "k6", "vegeta", "wrk", "junk.txt"] {
        assert!(err.contains(f), "{f} not named: {err}");
    }
    // The recording itself is kept, without client results, and says why.
    let (list, _) = ok(&keisoku(&["runs", "--store", store.to_str().unwrap()]));
    assert_eq!(list.lines().count(), 2, "{list}");
    // A forced format that does not match is refused too.
    let csv = dir.path().join("x.csv");
    std::fs::write(
        &csv,
        "timeStamp,elapsed,label,responseCode,success\n1795519723895,4,a,200,true\n",
    )
    .unwrap();
    let out = keisoku(&[
        "import",
        "last",
        csv.to_str().unwrap(),
        "--client-format",
        "k6",
        "--store",
        store.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("tried k6") && err.contains("JMeter JTL (CSV)"),
        "{err}"
    );
}
