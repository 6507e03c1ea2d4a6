//! Built-in access-log formats on logs the real servers write: nginx's
//! default `combined`, Apache httpd's `common` and combined with `%D`, and
//! Caddy's JSON access log (Debian packages, installed by scripts/setup.sh,
//! listening on 127.0.0.1 only); and `keisoku logs FILE` recognising each
//! of them. CloudFront, ELB/ALB and S3 logs cannot be produced here: their
//! samples are written from the providers' documented formats.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A server in its own process group, stopped (group and all) on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // The whole group: nginx's worker outlives a killed master.
        // SAFETY: kill(2) on the process group this test created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn start(cmd: &mut Command, port: u16, what: &str) -> Server {
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "127.0.0.1:{port} is taken: another {what} of this test, or another program"
    );
    let child = cmd
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e} (run scripts/setup.sh)"));
    let s = Server(child);
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "{what} did not listen on 127.0.0.1:{port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s
}

fn get(port: u16, path: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: keisoku-test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

/// Waits until `log` holds `n` lines: the server writes its line after the
/// response, so the client's end is no signal.
fn wait_lines(log: &Path, n: usize) -> String {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= n {
            return text;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "{} has {} of {n} lines:\n{text}",
            log.display(),
            text.lines().count()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const PATHS: [&str; 6] = ["/a", "/a", "/a?x=1", "/b", "/users/1", "/users/2"];

fn send_all(port: u16) {
    for p in PATHS {
        get(port, p);
    }
}

fn keisoku(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(args)
        .output()
        .expect("run keisoku")
}

fn ok(args: &[&str]) -> String {
    let o = keisoku(args);
    assert!(
        o.status.success(),
        "keisoku {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn refused(args: &[&str]) -> String {
    let o = keisoku(args);
    assert_eq!(
        o.status.code(),
        Some(2),
        "keisoku {args:?} should exit 2: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8(o.stderr).unwrap()
}

/// `count uri` rows of a tsv table, sorted by uri.
fn counts(tsv: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = tsv
        .lines()
        .skip(1)
        .map(|l| {
            let (c, u) = l.split_once('\t').unwrap();
            (c.parse().unwrap(), u.to_string())
        })
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

fn expected() -> Vec<(u64, String)> {
    vec![
        (3, "/a".into()),
        (1, "/b".into()),
        (1, "/users/1".into()),
        (1, "/users/2".into()),
    ]
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn nginx_default_combined_counts_without_times() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let port = 18451;
    let conf = dir.path().join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 64; }}\nhttp {{\n  access_log {d}/access.log combined;\n\
  client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f; uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
  server {{ listen 127.0.0.1:{port};\n    location /a {{ return 200 \"a\\n\"; }}\n    location /b {{ return 503; }}\n    location / {{ return 404; }}\n  }}\n}}\n"
        ),
    )
    .unwrap();
    let log = dir.path().join("access.log");
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("nginx is not installed: run scripts/setup.sh");
    let _srv = start(
        Command::new(nginx).args([
            "-p",
            &d.to_string(),
            "-c",
            s(&conf),
            "-e",
            &format!("{d}/error.log"),
        ]),
        port,
        "nginx",
    );
    send_all(port);
    wait_lines(&log, PATHS.len());
    // Recognised without a format, and read the same as when named.
    let auto = ok(&["logs", s(&log), "--format", "tsv", "-o", "count,uri"]);
    assert_eq!(counts(&auto), expected());
    assert_eq!(
        auto,
        ok(&[
            "logs",
            "combined",
            s(&log),
            "--format",
            "tsv",
            "-o",
            "count,uri"
        ])
    );
    // From standard input too: the first lines are looked at, not lost.
    let piped = Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(["logs", "-", "--format", "tsv", "-o", "count,uri"])
        .stdin(std::fs::File::open(&log).unwrap())
        .output()
        .unwrap();
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!(String::from_utf8(piped.stdout).unwrap(), auto);
    // Status classes and bytes are there; every time column is absent.
    let all = ok(&[
        "logs",
        s(&log),
        "--format",
        "tsv",
        "-o",
        "count,5xx,uri,min,avg,p99,stddev,sum_body",
    ]);
    let b = all.lines().find(|l| l.contains("\t/b\t")).unwrap();
    let cells: Vec<&str> = b.split('\t').collect();
    assert_eq!(cells[..3], ["1", "1", "/b"], "{all}");
    assert_eq!(cells[3..7], ["-", "-", "-", "-"], "{all}");
    assert_ne!(cells[7], "-");
    // What needs times is refused by name, never computed from zeros.
    for flags in [
        &["--sort", "p99"][..],
        &["--slow", "3"],
        &["--dump", "x.json"],
        &["-f", "ResponseTime > 0.1"],
    ] {
        let mut args = vec!["logs", s(&log)];
        args.extend_from_slice(flags);
        let err = refused(&args);
        assert!(
            err.contains(flags[0]) && err.contains("no response times"),
            "{err}"
        );
    }
    // --timeline counts requests and 5xx per bucket; its time series are
    // absent (`-`), not zeros.
    let tl = ok(&["logs", s(&log), "--timeline", "1h", "--format", "csv"]);
    let mut requests = 0;
    for row in tl.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        if cells[2..4] == ["*", "*"] {
            requests += cells[4].parse::<usize>().unwrap();
            assert_eq!(cells[7..10], ["-", "-", "-"], "{tl}");
        }
    }
    assert_eq!(requests, PATHS.len(), "{tl}");
    let text = ok(&["logs", s(&log), "--timeline", "1h"]);
    assert!(text.contains("req/s") && text.contains("absent"), "{text}");
    assert!(!text.contains("p99 "), "{text}");
    // A --pattern without a time group says which group, not "use --pattern".
    let err = refused(&[
        "logs",
        "regexp",
        "--pattern",
        r#"^\S+ \S+ \S+ \[(?P<time>[^]]+)\] "(?P<method>\S+) (?P<uri>\S+) [^"]*" (?P<status>\d+) (?P<body_bytes>\d+)"#,
        s(&log),
    ]);
    assert!(err.contains("(?P<response_time>...)"), "{err}");
    assert!(!err.contains("use `regexp --pattern`"), "{err}");
}

fn apache() -> PathBuf {
    ["/usr/sbin/apache2", "/usr/sbin/httpd"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("Apache httpd is not installed: run scripts/setup.sh (Debian package apache2)")
}

#[test]
fn apache_common_and_microseconds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let port = 18452;
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(dir.path().join("www/a"), "a\n").unwrap();
    std::fs::write(dir.path().join("www/b"), "b\n").unwrap();
    let modules = "/usr/lib/apache2/modules";
    let conf = dir.path().join("httpd.conf");
    std::fs::write(
        &conf,
        format!(
            "ServerRoot {d}\nListen 127.0.0.1:{port}\nServerName localhost\n\
LoadModule mpm_prefork_module {modules}/mod_mpm_prefork.so\n\
LoadModule authz_core_module {modules}/mod_authz_core.so\n\
PidFile {d}/httpd.pid\nErrorLog {d}/error.log\nDocumentRoot {d}/www\n\
LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b \\\"%{{Referer}}i\\\" \\\"%{{User-Agent}}i\\\" %D\" combined_us\n\
LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" common\n\
CustomLog {d}/access_us.log combined_us\nCustomLog {d}/access_common.log common\n"
        ),
    )
    .unwrap();
    let us = dir.path().join("access_us.log");
    let common = dir.path().join("access_common.log");
    let _srv = start(
        Command::new(apache()).args(["-X", "-f", s(&conf)]),
        port,
        "apache2",
    );
    send_all(port);
    wait_lines(&us, PATHS.len());
    wait_lines(&common, PATHS.len());

    let auto = ok(&["logs", s(&common), "--format", "tsv", "-o", "count,uri,avg"]);
    assert!(auto.lines().skip(1).all(|l| l.ends_with("\t-")), "{auto}");
    let auto = ok(&["logs", s(&common), "--format", "tsv", "-o", "count,uri"]);
    assert_eq!(counts(&auto), expected());

    // An integer last field is %D or %T (or seconds for alp's pattern): the
    // candidates are named, nothing is guessed.
    let err = refused(&["logs", s(&us)]);
    for c in ["apache-us", "apache-s", "regexp"] {
        assert!(err.contains(c), "{err}");
    }
    let t = ok(&[
        "logs",
        "apache-us",
        s(&us),
        "--format",
        "tsv",
        "-o",
        "count,uri",
    ]);
    assert_eq!(counts(&t), expected());
    // Microseconds: each static file took well over 1 µs and under 1 s.
    let t = ok(&[
        "logs",
        "apache-us",
        s(&us),
        "--format",
        "tsv",
        "-o",
        "count,uri",
        "-f",
        "ResponseTime > 0.000001 and ResponseTime < 1",
    ]);
    assert_eq!(counts(&t), expected());
    // The same log as %T reads every request as taking over a second.
    let t = ok(&[
        "logs",
        "apache-s",
        s(&us),
        "--format",
        "tsv",
        "-o",
        "count,uri",
        "-f",
        "ResponseTime >= 1",
    ]);
    assert_eq!(counts(&t).iter().map(|c| c.0).sum::<u64>(), 6, "{t}");
    // --slow and --timeline work on a timed built-in format.
    let slow = ok(&[
        "logs",
        "apache-us",
        s(&us),
        "--slow",
        "2",
        "--format",
        "tsv",
    ]);
    let rows: Vec<&str> = slow
        .lines()
        .skip_while(|l| !l.starts_with("Line\t"))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 2, "{slow}");
    assert!(rows.iter().all(|r| r.contains("\tGET\t")), "{slow}");
    let tl = ok(&[
        "logs",
        "apache-us",
        s(&us),
        "--timeline",
        "1s",
        "--format",
        "csv",
    ]);
    assert!(tl.lines().count() >= 2, "{tl}");
}

#[test]
fn caddy_json_access_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let port = 18453;
    let log = dir.path().join("access.json");
    let conf = dir.path().join("Caddyfile");
    std::fs::write(
        &conf,
        format!(
            "{{\n\tadmin off\n\tauto_https off\n}}\nhttp://127.0.0.1:{port} {{\n\tlog {{\n\t\toutput file {d}/access.json\n\t}}\n\
\trespond /a \"a\" 200\n\trespond /b \"b\" 503\n\trespond \"no\" 404\n}}\n"
        ),
    )
    .unwrap();
    let caddy = ["/usr/bin/caddy", "/usr/local/bin/caddy"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("Caddy is not installed: run scripts/setup.sh (Debian package caddy)");
    let _srv = start(
        Command::new(caddy)
            .args(["run", "--config", s(&conf), "--adapter", "caddyfile"])
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path()),
        port,
        "caddy",
    );
    send_all(port);
    wait_lines(&log, PATHS.len());
    let auto = ok(&["logs", s(&log), "--format", "tsv", "-o", "count,uri"]);
    assert_eq!(counts(&auto), expected());
    let t = ok(&[
        "logs",
        "caddy",
        s(&log),
        "--format",
        "tsv",
        "-o",
        "count,5xx,uri",
        "-f",
        "ResponseTime > 0 and ResponseTime < 1",
    ]);
    assert!(t.contains("1\t1\t/b"), "{t}");
    // -q keeps the query string Caddy logged in request.uri.
    let q = ok(&[
        "logs",
        "caddy",
        s(&log),
        "-q",
        "--format",
        "tsv",
        "-o",
        "count,uri",
    ]);
    assert!(q.contains("1\t/a?x=1"), "{q}");
}

/// Samples written from the providers' documented formats (CloudFront
/// "Standard log file fields", ELB and ALB "Access log entries", S3
/// "Server access log format"): these services cannot run here.
#[test]
fn provider_logs_from_their_documented_formats() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let cf_line = |t: &str, uri: &str, q: &str, status: u16, took: &str| {
        format!("2019-12-04\t{t}\tLAX1\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t{uri}\t{status}\t-\tMozilla/5.0\t{q}\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==\td111111abcdef8.cloudfront.net\thttps\t23\t{took}\tHTTP/2.0\n")
    };
    let cf = write(
        "cf.log",
        format!(
            "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken cs-protocol-version\n{}{}{}",
            cf_line("21:02:31", "/index.html", "-", 200, "0.001"),
            cf_line("21:02:31", "/index.html", "a=1", 200, "0.250"),
            cf_line("21:02:32", "/missing", "-", 404, "0.002"),
        ),
    );
    let t = ok(&["logs", s(&cf), "--format", "tsv", "-o", "count,uri,max,sum"]);
    assert!(t.contains("2\t/index.html\t0.250\t0.251"), "{t}");
    // The header is not a request and not a malformed line.
    let o = keisoku(&["logs", "cloudfront", s(&cf), "--strict", "--format", "tsv"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Columns in another order are refused rather than misread.
    let other = write(
        "cf2.log",
        "#Fields: time date sc-bytes\n21:02:31\t2019-12-04\t1\n".into(),
    );
    refused(&["logs", s(&other)]);

    let elb = write(
        "elb.log",
        [
            r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
            r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000086 0.001048 0.001337 200 200 0 57 "GET https://www.example.com:443/ HTTP/1.1" "curl/7.38.0" DHE-RSA-AES128-SHA TLSv1.2"#,
            r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 - -1 -1 -1 504 0 0 0 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
        ]
        .join("\n"),
    );
    let o = keisoku(&["logs", s(&elb), "--format", "tsv", "-o", "count,uri,sum"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Count\tUri\tSum\n2\t/\t0.004\n"
    );
    // The untimed -1 line is skipped with its reason, not counted as 0 s.
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the load balancer logged -1"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let alb = write(
        "alb.log",
        r#"http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"
https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/api/x?y=1 HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-"
"#
        .into(),
    );
    let t = ok(&[
        "logs",
        s(&alb),
        "--format",
        "tsv",
        "-o",
        "count,uri,sum,sum_body",
    ]);
    assert_eq!(
        t,
        "Count\tUri\tSum\tSum(Body)\n1\t/\t0.001\t366.000\n1\t/api/x\t0.171\t57.000\n"
    );

    let s3 = write(
        "s3.log",
        r#"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be awsexamplebucket1 [06/Feb/2019:00:00:38 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 3E57427F3EXAMPLE REST.GET.VERSIONING - "GET /awsexamplebucket1?versioning HTTP/1.1" 200 - 113 - 7 - "-" "S3Console/0.4" - s9lzHYrFp76ZVxRcpX9+5cjAnEH2ROuNkd2BHfIa6UkFVdtjf5mKR3/eTPFvsiP/XV/VLi31234= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader awsexamplebucket1.s3.us-west-1.amazonaws.com TLSV1.2 - -
79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be awsexamplebucket1 [06/Feb/2019:00:00:38 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 891CE47D2EXAMPLE REST.GET.LOGGING_STATUS - "GET /awsexamplebucket1?logging HTTP/1.1" 200 - 242 - 11 - "-" "S3Console/0.4" - 9vKBE6vMhrNiWHZmb2L0mXOcqPGzQOI5XLnCtZNPxev+Hf+7tpT6sxDwDty4LHBUOZJG96N1234= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader awsexamplebucket1.s3.us-west-1.amazonaws.com TLSV1.2 - -
"#
        .into(),
    );
    // Milliseconds: 7 ms and 11 ms.
    let t = ok(&["logs", s(&s3), "--format", "tsv", "-o", "count,uri,sum"]);
    assert_eq!(t, "Count\tUri\tSum\n2\t/awsexamplebucket1\t0.018\n");
}

#[test]
fn unknown_and_ambiguous_inputs_are_refused_with_the_formats_named() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\nworld\n").unwrap();
    let err = refused(&["logs", s(&junk)]);
    for name in [
        "ltsv",
        "json",
        "regexp",
        "combined",
        "common",
        "apache-us",
        "caddy",
        "cloudfront",
        "elb",
        "alb",
        "s3",
    ] {
        assert!(err.contains(name), "{name} not named: {err}");
    }
    assert!(err.contains("keisoku logs FORMAT FILE"), "{err}");
    // alp's three keep their subcommands and meaning.
    let ltsv = dir.path().join("a.ltsv");
    std::fs::write(
        &ltsv,
        "method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.5\n",
    )
    .unwrap();
    assert_eq!(
        ok(&[
            "logs",
            "ltsv",
            s(&ltsv),
            "--format",
            "tsv",
            "-o",
            "count,uri,sum"
        ]),
        "Count\tUri\tSum\n1\t/a\t0.500\n"
    );
    assert_eq!(
        ok(&["logs", s(&ltsv), "--format", "tsv", "-o", "count,uri,sum"]),
        "Count\tUri\tSum\n1\t/a\t0.500\n"
    );
}

/// alp v1.0.21, built by bench/alp/build.sh (as the alp comparison tests do).
fn alp() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(repo.join("bench/alp/build.sh"))
        .output()
        .expect("run bench/alp/build.sh");
    assert!(
        out.status.success(),
        "bench/alp/build.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    repo.join("bench/tools/alp")
}

#[test]
fn a_broken_json_line_stops_the_analysis_as_it_stops_alp() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"uri":"/a","method":"GET","status":200,"body_bytes":3,"response_time":0.1}"#;
    // A line without a uri is skipped by both; the broken one stops both,
    // even after more skipped lines than keisoku keeps as examples.
    let lacking = r#"{"method":"GET","status":200,"body_bytes":3,"response_time":0.1}"#;
    let mut text = format!("{good}\n");
    for _ in 0..7 {
        text.push_str(lacking);
        text.push('\n');
    }
    text.push_str("{\"uri\":\"/b\", broken\n");
    text.push_str(&format!("{good}\n"));
    let log = dir.path().join("access.json");
    std::fs::write(&log, &text).unwrap();

    let a = Command::new(alp())
        .args(["json", "--file", s(&log)])
        .output()
        .unwrap();
    assert_eq!(a.status.code(), Some(1), "alp stops with status 1");
    assert!(a.stdout.is_empty(), "alp printed a table");
    assert!(
        String::from_utf8_lossy(&a.stderr).contains("invalid character"),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );

    let k = keisoku(&["logs", "json", s(&log)]);
    assert_eq!(k.status.code(), Some(2));
    assert!(
        k.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&k.stdout)
    );
    let err = String::from_utf8_lossy(&k.stderr);
    assert!(
        err.contains(&format!("{}: line 9: not a JSON object", s(&log))),
        "{err}"
    );

    // Without the broken line both count the same requests.
    let fixed: String = text
        .lines()
        .filter(|l| !l.contains("broken"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&log, fixed).unwrap();
    let a = Command::new(alp())
        .args([
            "json",
            "--file",
            s(&log),
            "--format",
            "tsv",
            "-o",
            "count,uri",
        ])
        .output()
        .unwrap();
    assert!(a.status.success());
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        ok(&[
            "logs",
            "json",
            s(&log),
            "--format",
            "tsv",
            "-o",
            "count,uri"
        ])
    );
}
