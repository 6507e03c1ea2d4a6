//! How connections reach the targets (TLS, a Unix socket, a proxy) and
//! what the engine does with answers besides counting them (following
//! redirects, decoding compressed bodies), plus what that costs: TLS
//! handshakes, redirects followed, decoded sizes.
//!
//! The options are a [`Transport`] in the [`crate::Plan`]; before a run
//! they are resolved into one [`Link`] per target (the address to connect
//! to, the TLS config, the CONNECT request of a tunnel), so the event loop
//! never parses or resolves anything.

use crate::plan::Target;
use crate::report::{new_histogram, LatencySummary, SIGFIG};
use crate::tls::{self, TlsOptions};
use crate::LoadError;
use hdrhistogram::Histogram;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use serde::Serialize;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;

/// Most redirects `--follow` may chase per request (curl's default cap).
pub const MAX_FOLLOW: u32 = 50;

/// The transport options of a plan (all off by default: plain TCP to the
/// URL's address, redirects counted as 3xx answers, bodies as sent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transport {
    /// TLS for `https://` targets.
    pub tls: TlsOptions,
    /// `--unix-socket PATH`: connect here instead of the URL's address (the
    /// URL still gives the Host header and the path).
    pub unix_socket: Option<PathBuf>,
    /// `--follow N`: follow up to N redirects per request; the final answer
    /// is the one counted, its latency runs from the first send.
    pub follow: u32,
    /// The proxies to use (`--proxy`, or the environment).
    pub proxy: Proxies,
    /// `--compressed`: ask for gzip/deflate and decode the bodies, so the
    /// decoded size is reported beside the size on the wire.
    pub compressed: bool,
}

/// Which proxy each scheme goes through, and which hosts bypass it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proxies {
    /// Proxy URL for `http://` targets.
    pub http: Option<String>,
    /// Proxy URL for `https://` targets (reached with CONNECT).
    pub https: Option<String>,
    /// Hosts that bypass the proxy (`no_proxy`: names, `.suffix`es, `*`).
    pub no_proxy: Vec<String>,
}

impl Proxies {
    /// `--proxy URL` for every scheme.
    pub fn all(url: &str) -> Proxies {
        Proxies {
            http: Some(url.to_string()),
            https: Some(url.to_string()),
            no_proxy: Vec::new(),
        }
    }

    /// The proxies the environment names, as curl reads them: `http_proxy`
    /// (lower case only: a CGI request's `Proxy:` header becomes
    /// `HTTP_PROXY`), `https_proxy`/`HTTPS_PROXY`, `no_proxy`/`NO_PROXY`.
    /// `var` looks a variable up (pass `|k| std::env::var(k).ok()`).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Proxies {
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| var(n).filter(|v| !v.trim().is_empty()))
        };
        Proxies {
            http: get(&["http_proxy"]),
            https: get(&["https_proxy", "HTTPS_PROXY"]),
            no_proxy: get(&["no_proxy", "NO_PROXY"])
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_ascii_lowercase())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The proxy URL for a target, if any.
    pub fn for_target(&self, tls: bool, host: &str) -> Option<&str> {
        let host = host.to_ascii_lowercase();
        let bypass = self.no_proxy.iter().any(|n| {
            let n = n.split(':').next().unwrap_or(n);
            n == "*"
                || n.trim_start_matches('.') == host
                || host.ends_with(&format!(".{}", n.trim_start_matches('.')))
        });
        if bypass {
            return None;
        }
        if tls {
            self.https.as_deref()
        } else {
            self.http.as_deref()
        }
    }
}

/// Where a socket connects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Endpoint {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix domain socket path.
    Unix(PathBuf),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// TLS on a link: the shared config and the name to send and verify.
#[derive(Clone)]
pub(crate) struct TlsLink {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
    /// Whether session resumption is on (`--no-tls-resume` turns it off).
    pub resume: bool,
}

/// How one target is reached, resolved before the run.
#[derive(Clone)]
pub(crate) struct Link {
    pub endpoint: Endpoint,
    pub tls: Option<TlsLink>,
    /// HTTPS through a proxy: the CONNECT request sent before TLS.
    pub tunnel: Option<Vec<u8>>,
    /// Plain HTTP through a proxy: requests carry the absolute URL.
    pub absolute_form: bool,
    /// Targets with the same group can share a connection.
    pub group: usize,
}

/// Resolves the plan's transport into one link per target.
pub(crate) fn links(targets: &[Target], t: &Transport) -> Result<Vec<Link>, LoadError> {
    let any_tls = targets.iter().any(|x| x.tls);
    let config = if any_tls {
        Some(tls::client_config(&t.tls, &[tls::ALPN_HTTP11])?)
    } else {
        None
    };
    let mut proxies: Vec<(String, SocketAddr)> = Vec::new();
    let mut keys: Vec<(Endpoint, Option<String>, Option<String>)> = Vec::new();
    let mut out = Vec::with_capacity(targets.len());
    for target in targets {
        let proxy = if t.unix_socket.is_some() {
            None
        } else {
            match t.proxy.for_target(target.tls, &target.host) {
                Some(url) => Some(match proxies.iter().find(|(u, _)| u == url) {
                    Some((_, a)) => *a,
                    None => {
                        let a = proxy_addr(url)?;
                        proxies.push((url.to_string(), a));
                        a
                    }
                }),
                None => None,
            }
        };
        let endpoint = match (&t.unix_socket, proxy) {
            (Some(p), _) => Endpoint::Unix(p.clone()),
            (None, Some(a)) => Endpoint::Tcp(a),
            (None, None) => Endpoint::Tcp(target.addr),
        };
        let tls = match (&config, target.tls) {
            (Some(c), true) => Some(TlsLink {
                config: c.clone(),
                name: tls::server_name(&t.tls, &target.host)?,
                resume: t.tls.resume,
            }),
            _ => None,
        };
        let authority = connect_authority(target);
        let tunnel = (proxy.is_some() && target.tls).then(|| {
            format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").into_bytes()
        });
        let key = (
            endpoint.clone(),
            tls.as_ref().map(|l| format!("{:?}", l.name)),
            tunnel.as_ref().map(|_| authority.clone()),
        );
        let group = match keys.iter().position(|k| *k == key) {
            Some(g) => g,
            None => {
                keys.push(key);
                keys.len() - 1
            }
        };
        out.push(Link {
            endpoint,
            tls,
            absolute_form: proxy.is_some() && !target.tls,
            tunnel,
            group,
        });
    }
    Ok(out)
}

/// `host:port` of a CONNECT request (IPv6 in brackets).
fn connect_authority(t: &Target) -> String {
    let port = t.addr.port();
    if t.host.contains(':') {
        format!("[{}]:{port}", t.host)
    } else {
        format!("{}:{port}", t.host)
    }
}

/// The address of an `http://host:port` proxy. The port is required:
/// curl silently assumes 1080, which is rarely where a loopback proxy listens.
fn proxy_addr(url: &str) -> Result<SocketAddr, LoadError> {
    let bad = |why: String| LoadError::BadInput(format!("proxy {url:?}: {why}"));
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        bad("only http:// proxies are supported (https targets go through CONNECT)".into())
    })?;
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.contains('@') {
        return Err(bad("proxy credentials are not supported".into()));
    }
    let has_port = match authority.rfind(']') {
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    };
    if !has_port {
        return Err(bad("give the port (http://host:PORT)".into()));
    }
    let host_port = authority.trim_start_matches('[').replacen(']', "", 1);
    let (host, port) = host_port
        .rsplit_once(':')
        .ok_or_else(|| bad("give the port (http://host:PORT)".into()))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| bad("bad port".into()))?;
    (host, port)
        .to_socket_addrs()
        .map_err(|e| LoadError::Resolve {
            host: host.to_string(),
            reason: e.to_string(),
        })?
        .next()
        .ok_or_else(|| LoadError::Resolve {
            host: host.to_string(),
            reason: "no address".into(),
        })
}

/// The request line's target through a plain HTTP proxy: the absolute URL.
pub(crate) fn absolute_target(t: &Target) -> String {
    format!("http://{}{}", t.authority, t.path)
}

/// Transport counts of one slice (merged like the rest of a tally).
#[derive(Debug, Clone, Default)]
pub struct TransportTally {
    /// TLS handshakes completed.
    pub handshakes: u64,
    /// Of those, resumed sessions (abbreviated handshakes).
    pub resumed: u64,
    /// Handshake time, µs: from the TCP connect (or the tunnel) to the
    /// first application byte being allowed.
    pub handshake: Option<Histogram<u64>>,
    /// TLS version and ALPN protocol of the first handshake.
    pub negotiated: Option<(String, Option<String>)>,
    /// Whether session resumption was offered.
    pub resumption: bool,
    /// Redirects followed (not counted as responses).
    pub redirects: u64,
    /// Body bytes as received, of compressed answers.
    pub encoded_bytes: u64,
    /// The same bodies decoded.
    pub decoded_bytes: u64,
    /// Answers that came compressed.
    pub compressed: u64,
}

impl TransportTally {
    /// Counts one completed handshake of `us` microseconds.
    pub fn handshake(
        &mut self,
        us: u64,
        resumed: bool,
        version: &str,
        alpn: Option<String>,
        resumption: bool,
    ) {
        self.resumption |= resumption;
        self.handshakes += 1;
        if resumed {
            self.resumed += 1;
        }
        self.handshake
            .get_or_insert_with(|| new_histogram(3_600_000_000, SIGFIG))
            .saturating_record(us.max(1));
        if self.negotiated.is_none() {
            self.negotiated = Some((version.to_string(), alpn));
        }
    }

    /// Adds another slice's counts.
    pub fn merge(&mut self, o: &TransportTally) {
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        if let Some(h) = &o.handshake {
            match &mut self.handshake {
                Some(a) => crate::report::add_hist(a, h),
                None => self.handshake = Some(h.clone()),
            }
        }
        if self.negotiated.is_none() {
            self.negotiated = o.negotiated.clone();
        }
        self.resumption |= o.resumption;
        self.redirects += o.redirects;
        self.encoded_bytes += o.encoded_bytes;
        self.decoded_bytes += o.decoded_bytes;
        self.compressed += o.compressed;
    }

    /// The slice's numbers, `None` when nothing transport-specific happened
    /// (a plain HTTP run's JSON stays as it was).
    pub fn stats(&self) -> Option<TransportStats> {
        let tls = self.handshake.as_ref().map(|h| TlsStats {
            handshakes: self.handshakes,
            resumed: self.resumed,
            resumption: self.resumption,
            version: self.negotiated.as_ref().map(|n| n.0.clone()),
            alpn: self.negotiated.as_ref().and_then(|n| n.1.clone()),
            handshake_ms: LatencySummary::from_histogram(h),
        });
        if tls.is_none() && self.redirects == 0 && self.compressed == 0 {
            return None;
        }
        Some(TransportStats {
            tls,
            redirects_followed: self.redirects,
            compressed_responses: self.compressed,
            body_bytes_encoded: self.encoded_bytes,
            body_bytes_decoded: self.decoded_bytes,
        })
    }
}

/// TLS numbers of a slice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsStats {
    /// Handshakes completed.
    pub handshakes: u64,
    /// Of which resumed a session.
    pub resumed: u64,
    /// Whether session resumption was offered (off with `--no-tls-resume`).
    pub resumption: bool,
    /// Protocol version negotiated (`TLSv1_3`).
    pub version: Option<String>,
    /// ALPN protocol negotiated (`http/1.1`), if the server chose one.
    pub alpn: Option<String>,
    /// Handshake time, ms.
    pub handshake_ms: LatencySummary,
}

/// Transport numbers of a slice (JSON key `transport`, absent for plain runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransportStats {
    /// TLS handshakes, when the targets were https.
    pub tls: Option<TlsStats>,
    /// Redirects followed (`--follow`); the final answers are the responses.
    pub redirects_followed: u64,
    /// Answers with a gzip or deflate body (`--compressed`).
    pub compressed_responses: u64,
    /// Their bodies' bytes as received.
    pub body_bytes_encoded: u64,
    /// Their bodies' bytes decoded.
    pub body_bytes_decoded: u64,
}

/// A socket as `io::Read`/`io::Write` for rustls; remembers whether the
/// last read came back short, so an edge-triggered loop can stop without
/// an extra `recv` that would only say EAGAIN.
pub(crate) struct FdIo {
    pub fd: i32,
    pub short: bool,
}

impl std::io::Read for FdIo {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes; fd is an open socket.
        let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        self.short = (n as usize) < buf.len();
        Ok(n as usize)
    }
}

impl std::io::Write for FdIo {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes; fd is an open socket.
        let n = unsafe { libc::send(self.fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_proxies_as_curl_reads_them() {
        let env = |k: &str| match k {
            "http_proxy" => Some("http://127.0.0.1:3128".to_string()),
            "HTTP_PROXY" => Some("http://evil:1".to_string()),
            "HTTPS_PROXY" => Some("http://127.0.0.1:3129".to_string()),
            "no_proxy" => Some("internal.example, .corp ,localhost".to_string()),
            _ => None,
        };
        let p = Proxies::from_env(env);
        assert_eq!(p.http.as_deref(), Some("http://127.0.0.1:3128"));
        assert_eq!(p.https.as_deref(), Some("http://127.0.0.1:3129"));
        assert_eq!(
            p.for_target(false, "api.example"),
            Some("http://127.0.0.1:3128")
        );
        assert_eq!(
            p.for_target(true, "api.example"),
            Some("http://127.0.0.1:3129")
        );
        assert_eq!(p.for_target(false, "internal.example"), None);
        assert_eq!(p.for_target(false, "a.internal.example"), None);
        assert_eq!(p.for_target(false, "x.corp"), None);
        assert_eq!(p.for_target(false, "LOCALHOST"), None);
        assert_eq!(
            p.for_target(false, "notcorp"),
            Some("http://127.0.0.1:3128")
        );
        let star = Proxies {
            no_proxy: vec!["*".into()],
            ..Proxies::all("http://127.0.0.1:1")
        };
        assert_eq!(star.for_target(true, "x"), None);
    }

    #[test]
    fn proxy_urls_need_a_port_and_plain_http() {
        assert_eq!(
            proxy_addr("http://127.0.0.1:3128").expect("addr"),
            "127.0.0.1:3128".parse().expect("sock")
        );
        assert_eq!(
            proxy_addr("http://[::1]:8/").expect("addr"),
            "[::1]:8".parse().expect("sock")
        );
        for bad in [
            "https://127.0.0.1:1",
            "http://127.0.0.1",
            "http://u:p@h:1",
            "socks5://h:1",
        ] {
            assert!(proxy_addr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn links_share_a_group_only_when_the_connection_can_be_shared() {
        let t = |u: &str| Target::new("GET", u, Vec::new(), 1).expect("target");
        let targets = [
            t("http://127.0.0.1:1/a"),
            t("http://127.0.0.1:1/b"),
            t("https://127.0.0.1:1/c"),
            t("http://127.0.0.1:2/d"),
        ];
        let l = links(&targets, &Transport::default()).expect("links");
        assert_eq!(l[0].group, l[1].group);
        assert_ne!(l[0].group, l[2].group, "TLS and plain never share");
        assert_ne!(l[0].group, l[3].group);
        assert!(l[2].tls.is_some() && l[0].tls.is_none());
        let via = Transport {
            proxy: Proxies::all("http://127.0.0.1:9"),
            ..Transport::default()
        };
        let l = links(&targets, &via).expect("links");
        assert!(l[0].absolute_form && l[2].tunnel.is_some());
        assert_eq!(
            l[0].group, l[3].group,
            "one proxy connection serves both origins"
        );
        assert_eq!(
            String::from_utf8_lossy(l[2].tunnel.as_deref().unwrap_or_default()),
            "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n"
        );
        let unix = Transport {
            unix_socket: Some("/tmp/x.sock".into()),
            ..via
        };
        let l = links(&targets, &unix).expect("links");
        assert_eq!(l[0].endpoint, Endpoint::Unix("/tmp/x.sock".into()));
        assert!(!l[0].absolute_form, "a Unix socket bypasses the proxy");
    }
}
