//! The bid server's neighbours, real TCP servers on 127.0.0.1 started with
//! it: the campaign/user backend (an ad-info service or Aerospike in the
//! field notes' §1) and a slow external event logger (§4).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::http::{serve_blocking, ConnPolicy, Request};
use crate::DemoError;

/// Banner sizes the catalog has campaigns for.
pub const SIZES: [(u32, u32); 5] = [(300, 250), (728, 90), (320, 50), (160, 600), (300, 600)];

/// One campaign as the backend serves it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Campaign {
    /// Campaign id.
    pub id: String,
    /// Creative id.
    pub crid: String,
    /// Advertiser domain.
    pub adomain: String,
    /// IAB categories of the creative.
    pub cat: Vec<String>,
    /// Banner width.
    pub w: u32,
    /// Banner height.
    pub h: u32,
    /// Maximum price in CPM.
    pub cpm: f64,
    /// Audience segments the campaign targets.
    pub segments: Vec<u32>,
    /// Publisher domains the advertiser refuses.
    pub blocked_domains: Vec<String>,
    /// Creative markup with `${AUCTION_PRICE}`-style macros.
    pub adm: String,
}

/// A user's profile as the backend serves it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UserProfile {
    /// User id as asked.
    pub id: String,
    /// Audience segments.
    pub segments: Vec<u32>,
    /// Impressions shown to the user today (frequency capping).
    pub frequency: u32,
}

/// splitmix64: deterministic data without a dependency.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub(crate) fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Campaigns per banner size: enough JSON (tens of KB) that parsing it per
/// request is real work, as in the news BFF's cache.
pub const CAMPAIGNS_PER_SIZE: usize = 200;

/// The deterministic campaign list for one size (empty for unknown sizes).
pub fn campaigns_for(w: u32, h: u32) -> Vec<Campaign> {
    if !SIZES.contains(&(w, h)) {
        return Vec::new();
    }
    (0..CAMPAIGNS_PER_SIZE)
        .map(|i| {
            let seed = mix(u64::from(w) << 32 | u64::from(h) << 8 | i as u64);
            let adv = seed % 40;
            let segments = (0..6).map(|k| (mix(seed + k) % 200) as u32).collect();
            let blocked_domains = (0..4)
                .map(|k| format!("site{}.example", mix(seed ^ (k + 7)) % 50))
                .collect();
            Campaign {
                id: format!("c-{w}x{h}-{i}"),
                crid: format!("cr-{w}x{h}-{i}"),
                adomain: format!("advertiser{adv}.example"),
                cat: vec![format!("IAB{}", 1 + seed % 26), format!("IAB{}-{}", 1 + seed % 26, 1 + (seed >> 8) % 9)],
                w,
                h,
                // 0.20 .. 8.20 CPM in cents.
                cpm: (20 + (seed >> 16) % 800) as f64 / 100.0,
                segments,
                blocked_domains,
                adm: format!(
                    "<div class=\"ad\" style=\"width:{w}px;height:{h}px\"><a href=\"https://advertiser{adv}.example/click?c={i}&p=${{AUCTION_PRICE}}\"><img src=\"https://cdn.advertiser{adv}.example/creative/{i}/{w}x{h}.png\" width=\"{w}\" height=\"{h}\" alt=\"Campaign {i} of advertiser {adv}\"></a><img src=\"https://track.example/imp?c={i}&price=${{AUCTION_PRICE}}\" width=\"1\" height=\"1\"></div>"
                ),
            }
        })
        .collect()
}

/// The deterministic profile of a user id.
pub fn user_profile(id: &str) -> UserProfile {
    let seed = hash_str(id);
    UserProfile {
        id: id.to_string(),
        segments: (0..8).map(|k| (mix(seed + k) % 200) as u32).collect(),
        frequency: (mix(seed ^ 0xf00d) % 12) as u32,
    }
}

/// A small blocking server: a fixed set of threads, each accepting one
/// connection at a time and serving it until it closes.
pub(crate) struct BlockingServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

type Handler = dyn Fn(&Request<'_>) -> (u16, Vec<u8>) + Send + Sync;

impl BlockingServer {
    pub(crate) fn start(
        name: &str,
        threads: usize,
        accepts: Arc<dyn Fn() + Send + Sync>,
        handler: Arc<Handler>,
    ) -> Result<BlockingServer, DemoError> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| DemoError::Bind {
            what: name.to_string(),
            source: e,
        })?;
        let addr = listener.local_addr().map_err(|e| DemoError::Bind {
            what: name.to_string(),
            source: e,
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut handles = Vec::new();
        for i in 0..threads {
            let listener = listener.try_clone().map_err(|e| DemoError::Bind {
                what: name.to_string(),
                source: e,
            })?;
            let stop = stop.clone();
            let handler = handler.clone();
            let accepts = accepts.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || loop {
                    let Ok((stream, _)) = listener.accept() else {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        // Out of descriptors or the like: back off instead of spinning.
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    accepts();
                    let stop_now = || stop.load(Ordering::Relaxed);
                    serve_blocking(
                        stream,
                        &stop_now,
                        &|req| handler(req),
                        &ConnPolicy::default(),
                    );
                })
                .map_err(|e| DemoError::Thread(e.to_string()))?;
            handles.push(handle);
        }
        Ok(BlockingServer {
            addr,
            stop,
            threads: handles,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Each accept() blocks; one connection per thread wakes it to see the flag.
        for _ in 0..self.threads.len() {
            let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for BlockingServer {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop();
        }
    }
}

/// Answers `GET /campaigns?size=WxH` and `GET /users/ID` with JSON.
pub(crate) fn backend_handler(req: &Request<'_>) -> (u16, Vec<u8>) {
    if req.method != "GET" {
        return (405, b"{\"error\":\"GET only\"}".to_vec());
    }
    if let Some(size) = req.path.strip_prefix("/campaigns?size=") {
        let parsed = size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)));
        return match parsed {
            Some((w, h)) => (
                200,
                serde_json::to_vec(&campaigns_for(w, h)).unwrap_or_default(),
            ),
            None => (400, b"{\"error\":\"size must be WxH\"}".to_vec()),
        };
    }
    if let Some(id) = req.path.strip_prefix("/users/") {
        return (
            200,
            serde_json::to_vec(&user_profile(id)).unwrap_or_default(),
        );
    }
    (404, b"{\"error\":\"no such route\"}".to_vec())
}

/// The external logger: accepts `POST /events` (one JSON event or an array)
/// and answers only after a delay, as a slow remote service does.
pub(crate) fn logger_handler(
    delay_ms: (u64, u64),
    received: Arc<AtomicU64>,
) -> impl Fn(&Request<'_>) -> (u16, Vec<u8>) + Send + Sync {
    let calls = AtomicU64::new(0);
    move |req: &Request<'_>| {
        if req.method != "POST" || req.path != "/events" {
            return (404, b"{\"error\":\"POST /events only\"}".to_vec());
        }
        let events = match serde_json::from_slice::<serde_json::Value>(req.body) {
            Ok(serde_json::Value::Array(a)) => a.len() as u64,
            Ok(_) => 1,
            Err(_) => return (400, b"{\"error\":\"malformed JSON\"}".to_vec()),
        };
        received.fetch_add(events, Ordering::Relaxed);
        let (lo, hi) = delay_ms;
        let n = calls.fetch_add(1, Ordering::Relaxed);
        let spread = hi.saturating_sub(lo) + 1;
        // The real case is a wait on a remote host, so a sleep is the honest model.
        std::thread::sleep(Duration::from_millis(lo + mix(n) % spread));
        (200, b"{\"ok\":true}".to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_deterministic_and_sized() {
        let a = campaigns_for(300, 250);
        assert_eq!(a, campaigns_for(300, 250));
        assert_eq!(a.len(), CAMPAIGNS_PER_SIZE);
        assert!(campaigns_for(1, 1).is_empty());
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.len() > 20_000, "catalog JSON is {} bytes", json.len());
        assert!(a.iter().all(|c| c.cpm >= 0.2 && c.cpm <= 8.2));
    }

    #[test]
    fn user_profiles_are_deterministic() {
        assert_eq!(user_profile("u1"), user_profile("u1"));
        assert_ne!(user_profile("u1").segments, user_profile("u2").segments);
    }
}
