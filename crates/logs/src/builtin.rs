//! Built-in access-log formats beyond alp's three: the ones web servers,
//! CDNs and load balancers write by default, read without a pattern, and
//! recognised from a log's first lines ([`candidates`]).
//!
//! Each reader turns a line into the seven fields alp's model has (uri,
//! method, time, response time, body bytes, status) and says in which unit
//! its response time is written. Two formats log no response time at all
//! (`common` and `combined`, the defaults of nginx and Apache): their
//! records count requests, statuses and bytes, and every column that needs
//! a time is shown as absent ([`Kind::has_times`]).

use std::borrow::Cow;

/// The fields of one line, in [`crate::format::FieldNames`] order: uri,
/// method, time, response time, request time, body bytes, status.
pub(crate) type Fields<'a> = [Option<Cow<'a, [u8]>>; 7];

/// Why a built-in reader refuses a line (mapped to [`crate::LineError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a line of this format.
    Syntax,
    /// A header line of the format (CloudFront's `#Version`/`#Fields`):
    /// not a request, not malformed.
    Header,
    /// A `#Fields` header that does not list the documented columns.
    Fields,
    /// The format writes `-1` for a request it could not time (ELB/ALB).
    Untimed,
}

/// The built-in formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// NCSA Common Log Format (Apache `common`, no response time).
    Common,
    /// NCSA combined (nginx's and Apache's default, no response time).
    Combined,
    /// Apache common or combined followed by `%D` (microseconds).
    ApacheMicros,
    /// Apache common or combined followed by `%T` (whole seconds).
    ApacheSeconds,
    /// Caddy's structured access log (JSON lines, `duration` in seconds).
    Caddy,
    /// Amazon CloudFront standard logs (tab-separated, `#Fields` header).
    CloudFront,
    /// AWS Classic Load Balancer access logs.
    Elb,
    /// AWS Application Load Balancer access logs.
    Alb,
    /// Amazon S3 server access logs.
    S3,
}

impl Kind {
    /// Every built-in format, in the order detection tries and help lists them.
    pub const ALL: [Kind; 9] = [
        Kind::Combined,
        Kind::Common,
        Kind::ApacheMicros,
        Kind::ApacheSeconds,
        Kind::Caddy,
        Kind::CloudFront,
        Kind::Elb,
        Kind::Alb,
        Kind::S3,
    ];

    /// The name a user gives (`keisoku logs NAME FILE`, `--log-format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Common => "common",
            Kind::Combined => "combined",
            Kind::ApacheMicros => "apache-us",
            Kind::ApacheSeconds => "apache-s",
            Kind::Caddy => "caddy",
            Kind::CloudFront => "cloudfront",
            Kind::Elb => "elb",
            Kind::Alb => "alb",
            Kind::S3 => "s3",
        }
    }

    /// One line for help texts: what writes it and where its time comes from.
    pub fn about(self) -> &'static str {
        match self {
            Kind::Common => "NCSA common log (Apache `common`): no response time",
            Kind::Combined => "NCSA combined log (nginx and Apache default): no response time",
            Kind::ApacheMicros => "Apache common/combined ending in %D (microseconds)",
            Kind::ApacheSeconds => "Apache common/combined ending in %T (seconds)",
            Kind::Caddy => "Caddy JSON access log (duration in seconds)",
            Kind::CloudFront => "CloudFront standard log (time-taken)",
            Kind::Elb => "Classic Load Balancer log (sum of the three processing times)",
            Kind::Alb => "Application Load Balancer log (sum of the three processing times)",
            Kind::S3 => "S3 server access log (total time, milliseconds)",
        }
    }

    /// The format named `name`, if it is a built-in one.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether lines of this format carry a response time.
    pub fn has_times(self) -> bool {
        !matches!(self, Kind::Common | Kind::Combined)
    }

    /// Seconds per unit of the logged response time.
    pub fn time_scale(self) -> f64 {
        match self {
            Kind::ApacheMicros => 1e-6,
            Kind::S3 => 1e-3,
            _ => 1.0,
        }
    }
}

/// A built-in format, ready to read lines.
#[derive(Debug, Clone)]
pub struct Builtin {
    kind: Kind,
    /// The NCSA-family pattern, for the formats read by one.
    pattern: Option<regex::bytes::Regex>,
}

/// `%h %l %u %t "%r" %>s %b`: the request line split into method and URI
/// (its protocol dropped); `%b` is `-` for an empty body.
const NCSA: &str = concat!(
    r#"^\S+ \S+ (?:\S| )*?\[(?P<time>[^\]]+)\] "#,
    r#""(?P<method>[^ "]+) (?P<uri>[^ "]*)(?: [^"]*)?" "#,
    r#"(?P<status>\d{3}) (?P<body_bytes>\d+|-)"#,
);

/// `"%{Referer}i" "%{User-Agent}i"` with the escapes nginx and Apache write.
const REFERER_AGENT: &str = r#" "(?:[^"\\]|\\.)*" "(?:[^"\\]|\\.)*""#;

impl Builtin {
    /// The reader of `kind`.
    pub fn new(kind: Kind) -> Builtin {
        let pattern = match kind {
            Kind::Common => Some(format!("{NCSA}$")),
            Kind::Combined => Some(format!("{NCSA}{REFERER_AGENT}$")),
            Kind::ApacheMicros | Kind::ApacheSeconds => Some(format!(
                "{NCSA}(?:{REFERER_AGENT})? (?P<response_time>\\d+)$"
            )),
            _ => None,
        }
        // The patterns are constants of this module (a unit test compiles
        // each one), so a failure here cannot come from input.
        .and_then(|p| regex::bytes::Regex::new(&p).ok());
        Builtin { kind, pattern }
    }

    /// Which format this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The fields of `line`, or why it is not a line of this format.
    pub(crate) fn fields<'a>(&self, line: &'a [u8]) -> Result<Fields<'a>, Refusal> {
        match self.kind {
            Kind::Common | Kind::Combined | Kind::ApacheMicros | Kind::ApacheSeconds => {
                self.ncsa(line)
            }
            Kind::Caddy => caddy(line),
            Kind::CloudFront => cloudfront(line),
            Kind::Elb => elb(line, false),
            Kind::Alb => elb(line, true),
            Kind::S3 => s3(line),
        }
    }

    fn ncsa<'a>(&self, line: &'a [u8]) -> Result<Fields<'a>, Refusal> {
        let re = self.pattern.as_ref().ok_or(Refusal::Syntax)?;
        let caps = re.captures(line).ok_or(Refusal::Syntax)?;
        let get = |n: &str| caps.name(n).map(|m| Cow::Borrowed(m.as_bytes()));
        Ok([
            get("uri"),
            get("method"),
            get("time"),
            get("response_time"),
            None,
            get("body_bytes").map(dash_is_zero),
            get("status"),
        ])
    }
}

/// `-` in a byte count means no bytes (Apache's `%b`, S3's `bytes_sent`).
fn dash_is_zero(b: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    if &*b == b"-" {
        Cow::Borrowed(b"0")
    } else {
        b
    }
}

/// Caddy's `log` directive: one JSON object per request, from the
/// `http.log.access` logger, with `request.method`, `request.uri`,
/// `status`, `size`, `duration` (seconds) and `ts` (Unix seconds).
fn caddy<'a>(line: &'a [u8]) -> Result<Fields<'a>, Refusal> {
    if line.first() != Some(&b'{') {
        return Err(Refusal::Syntax);
    }
    let v: serde_json::Value = serde_json::from_slice(line).map_err(|_| Refusal::Syntax)?;
    let logger = v.get("logger").and_then(|l| l.as_str()).unwrap_or("");
    let request = v.get("request").filter(|r| r.is_object());
    if !logger.starts_with("http.log.access") || request.is_none() {
        return Err(Refusal::Syntax);
    }
    let text = |v: Option<&serde_json::Value>| -> Option<Cow<'a, [u8]>> {
        let s = match v? {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return None,
        };
        Some(Cow::Owned(s.into_bytes()))
    };
    let request = request.ok_or(Refusal::Syntax)?;
    Ok([
        text(request.get("uri")),
        text(request.get("method")),
        text(v.get("ts")),
        text(v.get("duration")),
        None,
        text(v.get("size")),
        text(v.get("status")),
    ])
}

/// The columns of CloudFront standard logs as documented ("Standard log
/// file fields"); keisoku reads the first 19, so a header must begin with
/// these (later versions only appended columns).
pub const CLOUDFRONT_FIELDS: [&str; 19] = [
    "date",
    "time",
    "x-edge-location",
    "sc-bytes",
    "c-ip",
    "cs-method",
    "cs(Host)",
    "cs-uri-stem",
    "sc-status",
    "cs(Referer)",
    "cs(User-Agent)",
    "cs-uri-query",
    "cs(Cookie)",
    "x-edge-result-type",
    "x-edge-request-id",
    "x-host-header",
    "cs-protocol",
    "cs-bytes",
    "time-taken",
];

fn cloudfront<'a>(line: &'a [u8]) -> Result<Fields<'a>, Refusal> {
    if let Some(rest) = line.strip_prefix(b"#Fields:") {
        let names: Vec<&[u8]> = rest
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|f| !f.is_empty())
            .collect();
        let documented = names.len() >= CLOUDFRONT_FIELDS.len()
            && CLOUDFRONT_FIELDS
                .iter()
                .zip(&names)
                .all(|(want, got)| want.as_bytes() == *got);
        return Err(if documented {
            Refusal::Header
        } else {
            Refusal::Fields
        });
    }
    if line.starts_with(b"#Version:") {
        return Err(Refusal::Header);
    }
    let f: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    if f.len() < CLOUDFRONT_FIELDS.len() || !is_date(f[0]) || !is_clock(f[1]) {
        return Err(Refusal::Syntax);
    }
    let mut uri = f[7].to_vec();
    if f[11] != b"-" && !f[11].is_empty() {
        uri.push(b'?');
        uri.extend_from_slice(f[11]);
    }
    let mut time = f[0].to_vec();
    time.push(b'T');
    time.extend_from_slice(f[1]);
    time.push(b'Z');
    Ok([
        Some(Cow::Owned(uri)),
        Some(Cow::Borrowed(f[5])),
        Some(Cow::Owned(time)),
        Some(Cow::Borrowed(f[18])),
        None,
        Some(Cow::Borrowed(f[3])),
        Some(Cow::Borrowed(f[8])),
    ])
}

fn is_date(b: &[u8]) -> bool {
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

fn is_clock(b: &[u8]) -> bool {
    b.len() == 8
        && b.iter().enumerate().all(|(i, c)| {
            if i == 2 || i == 5 {
                *c == b':'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// Splits a line of space-separated fields where `"..."` (with `\"`
/// escapes) and `[...]` each make one field, delimiters removed.
fn tokens(line: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::with_capacity(32);
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' => i += 1,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                loop {
                    match line.get(j)? {
                        b'\\' => j += 2,
                        b'"' => break,
                        _ => j += 1,
                    }
                }
                out.push(line.get(start..j)?);
                i = j + 1;
            }
            b'[' => {
                let end = i + memchr::memchr(b']', &line[i..])?;
                out.push(&line[i + 1..end]);
                i = end + 1;
            }
            _ => {
                let end = memchr::memchr(b' ', &line[i..]).map_or(line.len(), |n| i + n);
                out.push(&line[i..end]);
                i = end;
            }
        }
    }
    Some(out)
}

/// `GET http://host:80/path?q HTTP/1.1` as method and request target
/// (the scheme and authority a load balancer logs are not part of the route).
fn request_line(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut parts = r.splitn(3, |&b| b == b' ');
    let method = parts.next().filter(|m| !m.is_empty() && *m != b"-")?;
    let target = parts.next()?;
    let path = match memchr::memmem::find(target, b"://") {
        Some(i) => {
            let after = &target[i + 3..];
            match memchr::memchr(b'/', after) {
                Some(j) => &after[j..],
                None => b"/",
            }
        }
        None => target,
    };
    Some((method, path))
}

fn is_iso_z(b: &[u8]) -> bool {
    b.len() >= 20 && is_date(&b[..10]) && b[10] == b'T' && b.ends_with(b"Z")
}

/// Classic ELB: `time elb client:port backend:port request_processing_time
/// backend_processing_time response_processing_time elb_status_code
/// backend_status_code received_bytes sent_bytes "request" "user_agent"
/// ssl_cipher ssl_protocol`; ALB puts a `type` first and appends fields.
/// The response time is the three processing times added: the time the
/// load balancer held the request.
fn elb(line: &[u8], alb: bool) -> Result<Fields<'_>, Refusal> {
    let t = tokens(line).ok_or(Refusal::Syntax)?;
    let t: &[&[u8]] = if alb {
        match t.first() {
            Some(&(b"http" | b"https" | b"h2" | b"grpcs" | b"ws" | b"wss")) => &t[1..],
            _ => return Err(Refusal::Syntax),
        }
    } else {
        &t
    };
    let need = if alb { 24 } else { 13 };
    if t.len() < need || !is_iso_z(t[0]) {
        return Err(Refusal::Syntax);
    }
    let (method, uri) = request_line(t[11]).ok_or(Refusal::Syntax)?;
    let mut total = 0.0;
    for p in &t[4..7] {
        let v: f64 = std::str::from_utf8(p)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(Refusal::Syntax)?;
        if v < 0.0 {
            return Err(Refusal::Untimed);
        }
        total += v;
    }
    Ok([
        Some(Cow::Borrowed(uri)),
        Some(Cow::Borrowed(method)),
        Some(Cow::Borrowed(t[0])),
        Some(Cow::Owned(total.to_string().into_bytes())),
        None,
        Some(Cow::Borrowed(t[10])),
        Some(Cow::Borrowed(t[7])),
    ])
}

/// S3 server access log: `bucket_owner bucket [time] remote_ip requester
/// request_id operation key "request_uri" http_status error_code
/// bytes_sent object_size total_time turn_around_time ...`; total time in
/// milliseconds.
fn s3(line: &[u8]) -> Result<Fields<'_>, Refusal> {
    let t = tokens(line).ok_or(Refusal::Syntax)?;
    if t.len() < 16 || !t[6].contains(&b'.') || !line.contains(&b'[') {
        return Err(Refusal::Syntax);
    }
    let (method, uri) = request_line(t[8]).ok_or(Refusal::Syntax)?;
    Ok([
        Some(Cow::Borrowed(uri)),
        Some(Cow::Borrowed(method)),
        Some(Cow::Borrowed(t[2])),
        Some(Cow::Borrowed(t[13])),
        None,
        Some(dash_is_zero(Cow::Borrowed(t[11]))),
        Some(Cow::Borrowed(t[9])),
    ])
}

/// Refuses, naming the flag, what `opts` asks of a log of `format` that the
/// format cannot give: anything computed from response times when it logs
/// none (rather than show zeros), and `--time-unit` when the format's unit
/// is fixed (rather than scale a known unit twice).
pub(crate) fn check_options(
    format: &crate::Format,
    opts: &crate::Options,
    sort: crate::render::SortKey,
) -> crate::error::Result<()> {
    use crate::error::Error;
    use crate::render::SortKey;
    let crate::Format::Builtin(b) = format else {
        return Ok(());
    };
    let name = b.kind().name();
    if opts.time_unit != crate::TimeUnit::Seconds {
        return Err(Error::input(format!(
            "--time-unit: the {name} format's response times have a fixed unit; drop --time-unit"
        )));
    }
    if b.kind().has_times() {
        return Ok(());
    }
    let time_sort = matches!(
        sort,
        SortKey::Max | SortKey::Min | SortKey::Avg | SortKey::Sum | SortKey::Stddev | SortKey::P(_)
    );
    let time_filter = opts.filters.as_deref().is_some_and(|f| {
        f.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| {
                matches!(
                    w,
                    "ResponseTime" | "response_time" | "responseTime" | "restime"
                )
            })
    });
    // Each refusal names what it needs that the log lacks; --timeline
    // works (counts and 5xx per bucket, its time series absent).
    let sort_name = format!("--sort {}", opts.view.sort);
    let flag = [
        (sort_name.as_str(), time_sort, "its column"),
        (
            "--slow",
            opts.slow.is_some(),
            "the response time of each request",
        ),
        (
            "--dump",
            opts.dump.is_some(),
            "the response times a dump keeps (min, max, sum, percentiles)",
        ),
        ("-f ResponseTime", time_filter, "ResponseTime"),
    ]
    .into_iter()
    .find(|f| f.1);
    match flag {
        Some((flag, _, needs)) => Err(Error::input(format!(
            "{flag} needs {needs}, and a {name} log has no response times (its time columns are shown as -); log one (nginx $request_time, Apache %D) and read it with `keisoku logs regexp` or `apache-us`"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(k: Kind, line: &str) -> Vec<String> {
        Builtin::new(k)
            .fields(line.as_bytes())
            .unwrap_or_else(|e| panic!("{k:?} refused {line:?}: {e:?}"))
            .iter()
            .map(|f| {
                f.as_ref()
                    .map_or("<none>".into(), |v| String::from_utf8_lossy(v).into())
            })
            .collect()
    }

    #[test]
    fn every_pattern_compiles() {
        for k in Kind::ALL {
            let b = Builtin::new(k);
            assert_eq!(
                b.pattern.is_some(),
                matches!(
                    k,
                    Kind::Common | Kind::Combined | Kind::ApacheMicros | Kind::ApacheSeconds
                ),
                "{k:?}"
            );
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
    }

    #[test]
    fn ncsa_family() {
        let common = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 -"#;
        assert_eq!(
            ok(Kind::Common, common),
            [
                "/apache_pb.gif?x=1",
                "GET",
                "10/Oct/2000:13:55:36 -0700",
                "<none>",
                "<none>",
                "0",
                "200"
            ]
        );
        let combined = format!(r#"{common} "http://x/\"q\"" "Mozilla/4.08 [en] (Win98)""#);
        assert_eq!(ok(Kind::Combined, &combined)[0], "/apache_pb.gif?x=1");
        assert!(Builtin::new(Kind::Common)
            .fields(combined.as_bytes())
            .is_err());
        assert!(Builtin::new(Kind::Combined)
            .fields(common.as_bytes())
            .is_err());
        let d = format!("{combined} 1234");
        assert_eq!(ok(Kind::ApacheMicros, &d)[3], "1234");
        assert_eq!(ok(Kind::ApacheMicros, &format!("{common} 7"))[3], "7");
        assert!(Builtin::new(Kind::ApacheMicros)
            .fields(format!("{combined} 0.004").as_bytes())
            .is_err());
    }

    #[test]
    fn cloudfront_reads_the_documented_columns() {
        // From the field list of CloudFront's "Standard logging" guide.
        let header = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for";
        let cf = Builtin::new(Kind::CloudFront);
        assert_eq!(cf.fields(header.as_bytes()).err(), Some(Refusal::Header));
        assert_eq!(
            cf.fields(b"#Fields: date time sc-bytes").err(),
            Some(Refusal::Fields)
        );
        let line = "2019-12-04\t21:02:31\tLAX1\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t/index.html\t200\t-\tMozilla/5.0\ta=1\t-\tHit\tSOX4xw==\td111111abcdef8.cloudfront.net\thttps\t23\t0.001\t-";
        assert_eq!(
            ok(Kind::CloudFront, line),
            [
                "/index.html?a=1",
                "GET",
                "2019-12-04T21:02:31Z",
                "0.001",
                "<none>",
                "392",
                "200"
            ]
        );
    }

    #[test]
    fn load_balancers_add_their_processing_times() {
        // The examples of the ELB and ALB access-log guides.
        let elb = r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#;
        let f = ok(Kind::Elb, elb);
        assert_eq!(
            (f[0].as_str(), f[1].as_str(), f[6].as_str()),
            ("/", "GET", "200")
        );
        assert!((f[3].parse::<f64>().unwrap() - 0.001178).abs() < 1e-12);
        let alb = r#"http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/p?q=1 HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-""#;
        let f = ok(Kind::Alb, alb);
        assert_eq!((f[0].as_str(), f[5].as_str()), ("/p?q=1", "366"));
        assert!(Builtin::new(Kind::Elb).fields(alb.as_bytes()).is_err());
        assert!(Builtin::new(Kind::Alb).fields(elb.as_bytes()).is_err());
        let failed = alb.replace("0.000 0.001 0.000 200 200", "-1 -1 -1 504 -");
        assert_eq!(
            Builtin::new(Kind::Alb).fields(failed.as_bytes()).err(),
            Some(Refusal::Untimed)
        );
    }

    #[test]
    fn s3_reads_total_time_in_milliseconds() {
        // The example of the S3 server access log format guide.
        let line = r#"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be awsexamplebucket1 [06/Feb/2019:00:00:38 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 3E57427F3EXAMPLE REST.GET.VERSIONING - "GET /awsexamplebucket1?versioning HTTP/1.1" 200 - 113 - 7 - "-" "S3Console/0.4" - s9lzHYrFp76ZVxRcpX9+5cjAnEH2ROuNkd2BHfIa6UkFVdtjf5mKR3/eTPFvsiP/XV/VLi31234= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader awsexamplebucket1.s3.us-west-1.amazonaws.com TLSV1.2 - -"#;
        let f = ok(Kind::S3, line);
        assert_eq!(
            f,
            [
                "/awsexamplebucket1?versioning",
                "GET",
                "06/Feb/2019:00:00:38 +0000",
                "7",
                "<none>",
                "113",
                "200"
            ]
        );
    }

    #[test]
    fn caddy_reads_its_access_logger_only() {
        let line = r#"{"level":"info","ts":1700000000.5,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","proto":"HTTP/1.1","method":"GET","host":"127.0.0.1","uri":"/a?b=1","headers":{}},"bytes_read":0,"user_id":"","duration":0.000210,"size":12,"status":404,"resp_headers":{}}"#;
        let f = ok(Kind::Caddy, line);
        assert_eq!(
            f,
            [
                "/a?b=1",
                "GET",
                "1700000000.5",
                "0.00021",
                "<none>",
                "12",
                "404"
            ]
        );
        assert!(Builtin::new(Kind::Caddy)
            .fields(br#"{"level":"info","ts":1,"logger":"tls","msg":"x"}"#)
            .is_err());
    }

    #[test]
    fn tokens_keep_quoted_and_bracketed_fields_whole() {
        let t = tokens(br#"a [b c] "d \"e\" f" g"#).unwrap();
        assert_eq!(t, [&b"a"[..], b"b c", br#"d \"e\" f"#, b"g"]);
        assert!(tokens(br#"a "unterminated"#).is_none());
    }
}
