//! HTTP/2 (`--h2`, `--streams N`) and gRPC unary calls (`--grpc`).
//!
//! The HTTP/1.1 engine (`engine.rs`) stays as it is; a plan with
//! [`H2Options`] runs its workers here instead. The protocol is the `h2`
//! crate's, driven on one current-thread tokio runtime per load thread, so
//! a load thread never wakes another. A worker is fed the same phases and
//! schedules and hands back the same tallies as an HTTP/1.1 worker, so
//! reports, stores, SLOs, sweeps and the open model read the same.
//!
//! Concurrency: each of a worker's connections carries `streams` stream
//! slots, and each slot is one "connection" of the closed model (it sends
//! its next request when its answer is complete): `-c` connections times
//! `--streams` is the concurrency. In the open model the slots are the cap.
//!
//! Requests are built once per target from the same bytes the HTTP/1.1
//! engine would send (so `-H`, templates, `--targets` headers and the
//! default User-Agent behave the same), then re-read as a method, a path,
//! headers and a body.

mod driver;
pub mod grpc;

pub(crate) use driver::run_worker;

use crate::plan::Plan;
use crate::tls;
use crate::transport::{Endpoint, Link};
use crate::LoadError;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use rustls::pki_types::ServerName;
use std::sync::Arc;

/// Streams per connection unless told otherwise: 1, as h2load (`-m 1`)
/// and oha (`--http2-parallel 1`) default to, so `-c N` means N requests
/// in flight as it does for HTTP/1.1 and multiplexing is asked for.
pub const DEFAULT_STREAMS: usize = 1;
/// Most streams per connection (far above any server's usual
/// SETTINGS_MAX_CONCURRENT_STREAMS, 100 to 128).
pub const MAX_STREAMS: usize = 1000;

/// ALPN for HTTP/2 over TLS (RFC 9113).
pub const ALPN_H2: &[u8] = b"h2";

/// How a plan speaks HTTP/2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Options {
    /// Concurrent streams per connection.
    pub streams: usize,
    /// gRPC unary calls: bodies are framed as gRPC messages, answers are
    /// judged by their `grpc-status`.
    pub grpc: bool,
}

impl Default for H2Options {
    fn default() -> Self {
        H2Options {
            streams: DEFAULT_STREAMS,
            grpc: false,
        }
    }
}

impl H2Options {
    /// The protocol name reported: `h2` over TLS (ALPN), `h2c` over plain
    /// TCP or a Unix socket (prior knowledge), `+grpc` for gRPC calls.
    pub fn protocol(&self, tls: bool) -> String {
        let base = if tls { "h2" } else { "h2c" };
        if self.grpc {
            format!("{base}+grpc")
        } else {
            base.to_string()
        }
    }
}

/// Makes every target of `plan` a gRPC unary call of `method`
/// (`/package.Service/Method`): POST to that path. A target whose URL
/// already has a path other than `/` and `method` is refused, so a method
/// is never given twice with two values.
pub fn grpc_targets(plan: &mut Plan, method: &str) -> Result<(), LoadError> {
    grpc::check_method(method).map_err(|e| LoadError::BadInput(format!("--grpc: {e}")))?;
    for t in &mut plan.targets {
        if t.path != "/" && t.path != method {
            return Err(LoadError::BadInput(format!(
                "--grpc {method}: the URL {} has the path {}; give the method once (--grpc, or the URL's path)",
                t.url, t.path
            )));
        }
        t.path = method.to_string();
        t.method = "POST".to_string();
    }
    Ok(())
}

/// What `--h2` does not do (yet), refused before any request with the
/// flag to drop: keisoku never silently sends something else.
pub(crate) fn check(plan: &Plan, links: &[Link]) -> Result<(), LoadError> {
    let bad = |m: String| Err(LoadError::BadInput(m));
    let Some(opts) = &plan.h2 else {
        return Ok(());
    };
    if opts.streams == 0 || opts.streams > MAX_STREAMS {
        return bad(format!("--streams: 1 to {MAX_STREAMS}"));
    }
    if !plan.keepalive {
        return bad("--h2: HTTP/2 multiplexes requests on kept connections; drop --no-keepalive (or Connection: close)".into());
    }
    if plan.transport.follow > 0 {
        return bad("--h2: --follow is HTTP/1.1 only for now; drop it".into());
    }
    if plan
        .headers
        .iter()
        .chain(plan.targets.iter().flat_map(|t| t.headers.iter()))
        .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
    {
        return bad(
            "--h2: HTTP/2 has no Transfer-Encoding (DATA frames carry the body); drop the header"
                .into(),
        );
    }
    if links.iter().any(|l| l.tunnel.is_some() || l.absolute_form) {
        return bad("--h2 through a proxy is not supported; use --noproxy '*' (or unset http_proxy/https_proxy)".into());
    }
    if links.iter().any(|l| l.group != links[0].group) {
        return bad("--h2: every target must be on one origin (scheme, host and port): one connection carries them all".into());
    }
    Ok(())
}

/// A request as HTTP/2 sends it: pseudo-headers from `method` and `uri`.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Prepared {
    /// Re-reads the HTTP/1.1 bytes of a request (as `build_request` makes
    /// them) for HTTP/2: `Host` becomes `:authority`; the connection-level
    /// headers HTTP/2 forbids and `Content-Length` (DATA frames carry the
    /// length) are left out; gRPC adds its content type and `TE: trailers`
    /// and frames the body.
    pub fn parse(raw: &[u8], scheme: &str, grpc: bool) -> Result<Prepared, String> {
        let mut heads = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut heads);
        let head_len = match req.parse(raw) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Err("incomplete request head".into()),
            Err(e) => return Err(format!("request head: {e}")),
        };
        let method = Method::from_bytes(req.method.unwrap_or("GET").as_bytes())
            .map_err(|e| format!("method: {e}"))?;
        let path = req.path.unwrap_or("/");
        let mut headers = HeaderMap::with_capacity(req.headers.len() + 2);
        let mut authority = None;
        for h in req.headers.iter() {
            let lower = h.name.to_ascii_lowercase();
            match lower.as_str() {
                "host" => {
                    authority = Some(String::from_utf8_lossy(h.value).into_owned());
                    continue;
                }
                "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding"
                | "upgrade" | "content-length" => continue,
                "te" if !grpc => continue,
                _ => {}
            }
            let name = HeaderName::from_bytes(lower.as_bytes())
                .map_err(|e| format!("header {}: {e}", h.name))?;
            let value =
                HeaderValue::from_bytes(h.value).map_err(|e| format!("header {}: {e}", h.name))?;
            headers.append(name, value);
        }
        let authority = authority.ok_or("no Host header")?;
        let uri = Uri::builder()
            .scheme(scheme)
            .authority(authority.as_str())
            .path_and_query(path)
            .build()
            .map_err(|e| format!("URL {scheme}://{authority}{path}: {e}"))?;
        let body = &raw[head_len..];
        let body = if grpc {
            if !headers.contains_key("content-type") {
                headers.insert("content-type", HeaderValue::from_static("application/grpc"));
            }
            headers.insert("te", HeaderValue::from_static("trailers"));
            Bytes::from(grpc::frame(body)?)
        } else {
            Bytes::copy_from_slice(body)
        };
        Ok(Prepared {
            method,
            uri,
            headers,
            body,
        })
    }

    /// The request to hand to `h2` (its body goes in DATA frames).
    pub fn request(&self) -> http::Request<()> {
        let mut r = http::Request::new(());
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// Everything an HTTP/2 worker needs, resolved once per run.
pub(crate) struct H2Run {
    pub opts: H2Options,
    pub endpoint: Endpoint,
    /// TLS with ALPN `h2` only, and the name to send and verify.
    pub tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>, bool)>,
    pub scheme: &'static str,
    /// Per target: its request, when it does not vary.
    pub fixed: Vec<Option<Prepared>>,
    /// `--compressed`: decode answers' bodies to count their sizes.
    pub compressed: bool,
}

impl H2Run {
    /// Prepares the run: checks what `--h2` cannot do, builds the TLS
    /// config offering only `h2`, and re-reads each fixed request.
    pub fn new(plan: &Plan, links: &[Link], requests: &[Vec<u8>]) -> Result<H2Run, LoadError> {
        check(plan, links)?;
        let opts = plan.h2.clone().unwrap_or_default();
        let first = &links[0];
        let tls = match &first.tls {
            Some(l) => {
                let config = tls::client_config(&plan.transport.tls, &[ALPN_H2])?;
                Some((
                    tokio_rustls::TlsConnector::from(Arc::<rustls::ClientConfig>::clone(&config)),
                    l.name.clone(),
                    l.resume,
                ))
            }
            None => None,
        };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut fixed = Vec::with_capacity(requests.len());
        for (t, raw) in plan.targets.iter().zip(requests) {
            if raw.is_empty() {
                fixed.push(None);
                continue;
            }
            let p = Prepared::parse(raw, scheme, opts.grpc)
                .map_err(|e| LoadError::BadInput(format!("request {} {}: {e}", t.method, t.url)))?;
            fixed.push(Some(p));
        }
        Ok(H2Run {
            opts,
            endpoint: first.endpoint.clone(),
            tls,
            scheme,
            fixed,
            compressed: plan.transport.compressed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http11_bytes_become_an_h2_request() {
        let raw = b"POST /bid?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nUser-Agent: keisoku/0\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        let p = Prepared::parse(raw, "http", false).unwrap();
        assert_eq!(p.method, Method::POST);
        assert_eq!(p.uri.to_string(), "http://127.0.0.1:8080/bid?x=1");
        assert_eq!(p.headers.get("x-a").unwrap(), "1");
        assert!(p.headers.get("host").is_none());
        assert!(p.headers.get("connection").is_none());
        assert!(p.headers.get("content-length").is_none());
        assert_eq!(&p.body[..], b"{}");
        let r = p.request();
        assert_eq!(r.uri().authority().unwrap().as_str(), "127.0.0.1:8080");
    }

    #[test]
    fn grpc_requests_are_framed_with_their_headers() {
        let raw = b"POST /pkg.Svc/Do HTTP/1.1\r\nHost: h:1\r\nContent-Length: 3\r\n\r\n\x0a\x01x";
        let p = Prepared::parse(raw, "https", true).unwrap();
        assert_eq!(p.headers.get("content-type").unwrap(), "application/grpc");
        assert_eq!(p.headers.get("te").unwrap(), "trailers");
        assert_eq!(&p.body[..], &[0, 0, 0, 0, 3, 0x0a, 1, b'x']);
        assert_eq!(p.uri.scheme_str(), Some("https"));
    }

    #[test]
    fn grpc_targets_take_the_method_path() {
        let t = crate::Target::new("GET", "http://127.0.0.1:1", Vec::new(), 1).unwrap();
        let mut plan = Plan::new(vec![t]);
        grpc_targets(&mut plan, "/a.B/C").unwrap();
        assert_eq!(
            (
                plan.targets[0].method.as_str(),
                plan.targets[0].path.as_str()
            ),
            ("POST", "/a.B/C")
        );
        let t = crate::Target::new("GET", "http://127.0.0.1:1/x/y", Vec::new(), 1).unwrap();
        let mut plan = Plan::new(vec![t]);
        let e = grpc_targets(&mut plan, "/a.B/C").unwrap_err().to_string();
        assert!(e.contains("give the method once"), "{e}");
        assert!(grpc_targets(&mut plan, "nope").is_err());
    }

    #[test]
    fn protocols() {
        let o = H2Options::default();
        assert_eq!(
            (o.protocol(true), o.protocol(false)),
            ("h2".into(), "h2c".into())
        );
        let g = H2Options { grpc: true, ..o };
        assert_eq!(g.protocol(false), "h2c+grpc");
    }
}
