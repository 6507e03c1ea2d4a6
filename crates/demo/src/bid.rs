//! The bid handler: OpenRTB-like request in, bid or no-bid out, doing the
//! work a real bidder does (config, user lookup, campaign cache, scoring,
//! timestamp, event, access log), each piece switched by its knob.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;
use serde::{Deserialize, Serialize};
use time::format_description::BorrowedFormatItem;

use crate::accesslog::AccessLog;
use crate::events::EventSink;
use crate::http::Client;
use crate::knobs::Knobs;
use crate::stats::Counters;
use crate::upstream::{Campaign, UserProfile};
use crate::DemoError;

/// Validates `site.domain` / `app.bundle`.
const DOMAIN_PATTERN: &str = r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{1,23}$";
/// Classifies the device from its user agent.
const MOBILE_UA_PATTERN: &str = r"(?i)\b(iphone|ipod|ipad|android(?:\s+[0-9.]+)?|mobile|windows\s+phone|blackberry|opera\s+mini|silk)\b";
/// The timestamp format of responses and log lines.
const TS_FORMAT: &str = "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z";

/// An OpenRTB-like bid request (the fields the demo bidder reads).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BidRequest {
    /// Auction id.
    pub id: String,
    /// Impressions on offer.
    pub imp: Vec<Imp>,
    /// The website, if the request is from a site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<Site>,
    /// The app, if the request is from an app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppInfo>,
    /// The device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    /// The user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<User>,
    /// Time allowed for the bid in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmax: Option<u32>,
}

/// One impression.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Imp {
    /// Impression id within the request.
    pub id: String,
    /// The banner slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banner: Option<Banner>,
    /// Minimum CPM.
    #[serde(default)]
    pub bidfloor: f64,
}

/// A banner slot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Banner {
    /// Width in pixels.
    pub w: u32,
    /// Height in pixels.
    pub h: u32,
}

/// The website.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Site {
    /// Site id.
    #[serde(default)]
    pub id: String,
    /// Domain, validated.
    #[serde(default)]
    pub domain: String,
    /// Page URL.
    #[serde(default)]
    pub page: String,
}

/// The app.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppInfo {
    /// App id.
    #[serde(default)]
    pub id: String,
    /// Bundle name, validated like a domain.
    #[serde(default)]
    pub bundle: String,
}

/// The device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Device {
    /// User agent.
    #[serde(default)]
    pub ua: String,
    /// IP address.
    #[serde(default)]
    pub ip: String,
    /// Advertising id.
    #[serde(default)]
    pub ifa: String,
}

/// The user.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct User {
    /// Exchange-specific user id.
    #[serde(default)]
    pub id: String,
}

/// The bid response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BidResponse {
    /// The auction id.
    pub id: String,
    /// Bidder-generated response id.
    pub bidid: String,
    /// Currency.
    pub cur: String,
    /// One seat with the bids.
    pub seatbid: Vec<SeatBid>,
    /// Extra: when and by which worker.
    pub ext: ResponseExt,
}

/// A seat's bids.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeatBid {
    /// Seat name.
    pub seat: String,
    /// Bids, one per impression won.
    pub bid: Vec<Bid>,
}

/// One bid.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bid {
    /// Bid id.
    pub id: String,
    /// The impression bid on.
    pub impid: String,
    /// Price in CPM, above the impression's floor.
    pub price: f64,
    /// Campaign id.
    pub cid: String,
    /// Creative id.
    pub crid: String,
    /// Advertiser domains.
    pub adomain: Vec<String>,
    /// Creative categories.
    pub cat: Vec<String>,
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
    /// Creative markup.
    pub adm: String,
}

/// Response extension.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResponseExt {
    /// When the bid was made (UTC, µs).
    pub ts: String,
    /// Worker thread index.
    pub worker: usize,
    /// `mobile` or `desktop`, from the user agent.
    pub device_class: String,
}

/// The bidder's configuration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BidderConfig {
    /// Fraction of a campaign's CPM the bidder offers.
    pub bid_shading: f64,
    /// Minimum step above the floor.
    pub min_margin: f64,
    /// Impressions per user per day after which the bidder stays out.
    pub frequency_cap: u32,
    /// Publisher domains nobody bids on.
    pub blocked_domains: HashSet<String>,
    /// Score bonus per audience segment.
    pub segment_weights: HashMap<u32, f64>,
    /// Currency.
    pub currency: String,
}

impl BidderConfig {
    /// The configuration the demo writes at start.
    pub fn default_for_demo() -> BidderConfig {
        BidderConfig {
            bid_shading: 0.85,
            min_margin: 0.01,
            frequency_cap: 10,
            // A real publisher blocklist runs to thousands of entries, which
            // is what makes re-reading the file per request expensive.
            blocked_domains: (0..3000)
                .map(|i| format!("blocked{i}.example"))
                .chain(["site13.example".to_string()])
                .collect(),
            segment_weights: (0..200u32).map(|s| (s, f64::from(s % 7) * 0.01)).collect(),
            currency: "USD".into(),
        }
    }

    /// Reads and parses the file: open, read, close and a JSON parse.
    pub fn load(path: &Path) -> Result<BidderConfig, DemoError> {
        let text = std::fs::read(path)
            .map_err(|e| DemoError::Config(format!("{}: {e}", path.display())))?;
        serde_json::from_slice(&text)
            .map_err(|e| DemoError::Config(format!("{}: {e}", path.display())))
    }
}

/// A hashed-feature logistic model of click probability, the per-candidate
/// scoring every real bidder runs (and most of the demo's honest CPU work).
pub(crate) struct CtrModel {
    weights: Vec<f32>,
}

impl CtrModel {
    const BITS: u32 = 16;

    pub(crate) fn new() -> CtrModel {
        let weights = (0..1u64 << Self::BITS)
            .map(|i| ((crate::upstream::mix(i) % 2001) as f32 - 1000.0) / 20_000.0)
            .collect();
        CtrModel { weights }
    }

    fn w(&self, a: u64, b: u64) -> f32 {
        let h = crate::upstream::mix(a.wrapping_mul(0x9E37_79B9).wrapping_add(b));
        self.weights[(h >> (64 - Self::BITS)) as usize]
    }

    /// Predicted click probability of `campaign` for this user on this domain.
    fn ctr(&self, user: &UserProfile, domain: u64, mobile: bool, campaign: &Campaign) -> f64 {
        let cid = crate::upstream::hash_str(&campaign.id);
        let mut z = -3.0f32;
        for &us in &user.segments {
            for &cs in &campaign.segments {
                z += self.w(u64::from(us) << 32 | u64::from(cs), 1);
            }
            z += self.w(u64::from(us), cid);
            for cat in &campaign.cat {
                z += self.w(u64::from(us), crate::upstream::hash_str(cat));
            }
        }
        z += self.w(domain, cid) + self.w(u64::from(mobile), cid ^ u64::from(campaign.w));
        z += self.w(u64::from(user.frequency), cid);
        1.0 / (1.0 + (-f64::from(z)).exp())
    }
}

enum Cached {
    Text(Arc<str>),
    Parsed(Arc<Vec<Campaign>>),
}

/// Backend answers by banner size, kept for a TTL.
struct CampaignCache {
    entries: Mutex<HashMap<(u32, u32), (Instant, Cached)>>,
    ttl: Duration,
    as_text: bool,
}

/// Everything the handler needs, shared by the workers.
pub(crate) struct Bidder {
    knobs: Knobs,
    counters: Arc<Counters>,
    config_path: PathBuf,
    config: Arc<BidderConfig>,
    domain_re: Regex,
    mobile_re: Regex,
    ts_format: Vec<BorrowedFormatItem<'static>>,
    cache: CampaignCache,
    model: CtrModel,
    backend: Client,
    events: EventSink,
    log: AccessLog,
}

/// What `handle_bid` answers.
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    fn error(status: u16, msg: impl std::fmt::Display) -> Answer {
        let body = serde_json::json!({ "error": msg.to_string() });
        Answer {
            status,
            body: serde_json::to_vec(&body).unwrap_or_default(),
        }
    }
}

impl Bidder {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        knobs: Knobs,
        counters: Arc<Counters>,
        config_path: PathBuf,
        cache_ttl: Duration,
        backend: Client,
        events: EventSink,
        log: AccessLog,
    ) -> Result<Bidder, DemoError> {
        let config = Arc::new(BidderConfig::load(&config_path)?);
        Counters::bump(&counters.config_loads);
        let domain_re = compile(DOMAIN_PATTERN, &counters)?;
        let mobile_re = compile(MOBILE_UA_PATTERN, &counters)?;
        let ts_format = build_formatter(&counters)?;
        Ok(Bidder {
            cache: CampaignCache {
                entries: Mutex::new(HashMap::new()),
                ttl: cache_ttl,
                as_text: knobs.json_cache.is_naive(),
            },
            model: CtrModel::new(),
            knobs,
            counters,
            config_path,
            config,
            domain_re,
            mobile_re,
            ts_format,
            backend,
            events,
            log,
        })
    }

    pub(crate) fn close(&self) {
        self.events.close();
        self.log.close();
    }

    /// Answers one `POST /bid`.
    pub(crate) fn handle_bid(&self, body: &[u8], worker: usize) -> Answer {
        let started = Instant::now();
        // The DI-container case: a fresh service whose constructor reads its config.
        let config = if self.knobs.per_request_init.is_naive() {
            match BidderConfig::load(&self.config_path) {
                Ok(c) => {
                    Counters::bump(&self.counters.config_loads);
                    Arc::new(c)
                }
                Err(e) => return Answer::error(500, e),
            }
        } else {
            self.config.clone()
        };
        let req: BidRequest = match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => return Answer::error(400, format_args!("malformed bid request: {e}")),
        };
        if let Err(msg) = check_shape(&req) {
            return Answer::error(400, msg);
        }

        // The formatter case: build the expensive objects per call, or reuse them.
        let per_call;
        let (domain_re, mobile_re, ts_format) = if self.knobs.formatter.is_naive() {
            per_call = match (
                compile(DOMAIN_PATTERN, &self.counters),
                compile(MOBILE_UA_PATTERN, &self.counters),
                build_formatter(&self.counters),
            ) {
                (Ok(a), Ok(b), Ok(c)) => (a, b, c),
                _ => return Answer::error(500, "formatter construction failed"),
            };
            (&per_call.0, &per_call.1, &per_call.2[..])
        } else {
            (&self.domain_re, &self.mobile_re, &self.ts_format[..])
        };

        let domain = req
            .site
            .as_ref()
            .map(|s| s.domain.as_str())
            .or(req.app.as_ref().map(|a| a.bundle.as_str()))
            .unwrap_or("");
        if !domain_re.is_match(domain) {
            return Answer::error(
                400,
                format_args!("`{domain}` is not a valid site.domain or app.bundle"),
            );
        }
        let ua = req.device.as_ref().map(|d| d.ua.as_str()).unwrap_or("");
        let device_class = if mobile_re.is_match(ua) {
            "mobile"
        } else {
            "desktop"
        };
        let user_id = req
            .user
            .as_ref()
            .map(|u| u.id.as_str())
            .filter(|s| !s.is_empty())
            .or(req
                .device
                .as_ref()
                .map(|d| d.ifa.as_str())
                .filter(|s| !s.is_empty()))
            .unwrap_or("anonymous");

        let user = match self.user_profile(user_id) {
            Ok(u) => u,
            Err(e) => return Answer::error(502, e),
        };

        let mut bids = Vec::new();
        if !config.blocked_domains.contains(domain) && user.frequency < config.frequency_cap {
            for imp in &req.imp {
                let Some(banner) = &imp.banner else { continue };
                let campaigns = match self.campaigns(banner.w, banner.h) {
                    Ok(c) => c,
                    Err(e) => return Answer::error(502, e),
                };
                if let Some(bid) = auction(
                    &config,
                    &self.model,
                    &user,
                    domain,
                    device_class == "mobile",
                    imp,
                    banner,
                    &campaigns,
                ) {
                    bids.push(bid);
                }
            }
        }

        let now = time::OffsetDateTime::now_utc();
        let ts = now.format(ts_format).unwrap_or_default();
        let answer = if bids.is_empty() {
            Counters::bump(&self.counters.no_bids);
            Answer {
                status: 204,
                body: Vec::new(),
            }
        } else {
            Counters::bump(&self.counters.bids);
            for bid in &bids {
                let event = serde_json::json!({
                    "type": "bid", "auction": req.id, "impid": bid.impid,
                    "price": bid.price, "crid": bid.crid, "ts": ts,
                });
                if let Err(e) = self.events.send(event.to_string()) {
                    return Answer::error(502, e);
                }
            }
            let resp = BidResponse {
                bidid: format!("{}-{:x}", req.id, crate::upstream::hash_str(&ts)),
                id: req.id.clone(),
                cur: config.currency.clone(),
                seatbid: vec![SeatBid {
                    seat: "keisoku-demo".into(),
                    bid: bids,
                }],
                ext: ResponseExt {
                    ts: ts.clone(),
                    worker,
                    device_class: device_class.into(),
                },
            };
            Answer {
                status: 200,
                body: serde_json::to_vec(&resp).unwrap_or_default(),
            }
        };

        // A bid log: the answer itself is kept for reconciliation with win
        // notices and billing, as bidders do; it makes lines ~1 KB.
        let resp = if answer.body.is_empty() {
            "null"
        } else {
            std::str::from_utf8(&answer.body).unwrap_or("null")
        };
        let mut line = String::with_capacity(1024 + answer.body.len());
        let _ = writeln!(
            line,
            "{{\"ts\":\"{ts}\",\"worker\":{worker},\"auction\":{},\"domain\":{},\"user\":{},\"device\":\"{device_class}\",\"ua\":{},\"imps\":{},\"status\":{},\"bytes\":{},\"segments\":{:?},\"us\":{},\"resp\":{resp}}}",
            json_str(&req.id),
            json_str(domain),
            json_str(user_id),
            json_str(ua),
            req.imp.len(),
            answer.status,
            answer.body.len(),
            user.segments,
            started.elapsed().as_micros()
        );
        if let Err(e) = self.log.write_line(line.into_bytes()) {
            return Answer::error(500, e);
        }
        answer
    }

    fn user_profile(&self, id: &str) -> Result<UserProfile, DemoError> {
        Counters::bump(&self.counters.backend_calls);
        let path = format!("/users/{}", url_segment(id));
        let (status, body) =
            self.backend
                .call("GET", &path, b"", &self.counters.backend_connects)?;
        if status != 200 {
            return Err(DemoError::Upstream(format!(
                "backend {path} answered {status}"
            )));
        }
        serde_json::from_slice(&body)
            .map_err(|e| DemoError::Upstream(format!("backend {path}: {e}")))
    }

    fn campaigns(&self, w: u32, h: u32) -> Result<Arc<Vec<Campaign>>, DemoError> {
        let hit = {
            let entries = self
                .cache
                .entries
                .lock()
                .map_err(|_| DemoError::Upstream("cache lock poisoned".into()))?;
            match entries.get(&(w, h)) {
                Some((at, Cached::Text(t))) if at.elapsed() < self.cache.ttl => Some(Ok(t.clone())),
                Some((at, Cached::Parsed(p))) if at.elapsed() < self.cache.ttl => {
                    Some(Err(p.clone()))
                }
                _ => None,
            }
        };
        match hit {
            Some(Ok(text)) => {
                Counters::bump(&self.counters.cache_hits);
                Counters::bump(&self.counters.cache_json_parses);
                // The news BFF's cache: JSON text in, JSON.parse on every hit.
                serde_json::from_str(&text)
                    .map(Arc::new)
                    .map_err(|e| DemoError::Upstream(format!("cached campaigns: {e}")))
            }
            Some(Err(parsed)) => {
                Counters::bump(&self.counters.cache_hits);
                Ok(parsed)
            }
            None => {
                Counters::bump(&self.counters.cache_misses);
                Counters::bump(&self.counters.backend_calls);
                let path = format!("/campaigns?size={w}x{h}");
                let (status, body) =
                    self.backend
                        .call("GET", &path, b"", &self.counters.backend_connects)?;
                if status != 200 {
                    return Err(DemoError::Upstream(format!(
                        "backend {path} answered {status}"
                    )));
                }
                let parsed: Arc<Vec<Campaign>> = Arc::new(
                    serde_json::from_slice(&body)
                        .map_err(|e| DemoError::Upstream(format!("backend {path}: {e}")))?,
                );
                let entry = if self.cache.as_text {
                    Cached::Text(Arc::from(String::from_utf8_lossy(&body).as_ref()))
                } else {
                    Cached::Parsed(parsed.clone())
                };
                if let Ok(mut entries) = self.cache.entries.lock() {
                    entries.insert((w, h), (Instant::now(), entry));
                }
                Ok(parsed)
            }
        }
    }
}

fn compile(pattern: &str, counters: &Counters) -> Result<Regex, DemoError> {
    Counters::bump(&counters.regex_compiles);
    Regex::new(pattern).map_err(|e| DemoError::Config(format!("regex: {e}")))
}

fn build_formatter(counters: &Counters) -> Result<Vec<BorrowedFormatItem<'static>>, DemoError> {
    Counters::bump(&counters.formatter_builds);
    time::format_description::parse_borrowed::<2>(TS_FORMAT)
        .map_err(|e| DemoError::Config(format!("timestamp format: {e}")))
}

fn check_shape(req: &BidRequest) -> Result<(), String> {
    if req.id.is_empty() {
        return Err("bid request `id` is empty".into());
    }
    if req.imp.is_empty() {
        return Err("bid request has no `imp`".into());
    }
    for imp in &req.imp {
        if !imp.bidfloor.is_finite() || imp.bidfloor < 0.0 {
            return Err(format!(
                "imp `{}`: bidfloor must be a non-negative number",
                imp.id
            ));
        }
    }
    Ok(())
}

/// The deterministic auction for one impression: the best-scoring eligible
/// campaign wins and pays the second score, never less than floor + margin.
#[allow(clippy::too_many_arguments)]
fn auction(
    config: &BidderConfig,
    model: &CtrModel,
    user: &UserProfile,
    domain: &str,
    mobile: bool,
    imp: &Imp,
    banner: &Banner,
    campaigns: &[Campaign],
) -> Option<Bid> {
    let floor = imp.bidfloor + config.min_margin;
    let domain_hash = crate::upstream::hash_str(domain);
    let mut best: Option<(f64, &Campaign)> = None;
    let mut second = 0.0f64;
    for c in campaigns {
        let offer = c.cpm * config.bid_shading;
        if c.w != banner.w || c.h != banner.h || offer < floor {
            continue;
        }
        if c.blocked_domains.iter().any(|d| d == domain) {
            continue;
        }
        let bonus: f64 = c
            .segments
            .iter()
            .filter(|s| user.segments.contains(s))
            .map(|s| config.segment_weights.get(s).copied().unwrap_or(0.0))
            .sum();
        // Expected value: the offer scaled by how much likelier than
        // average (1%) a click is, never above the campaign's maximum.
        let ctr = model.ctr(user, domain_hash, mobile, c);
        let score = (offer * (1.0 + bonus) * (0.5 + 50.0 * ctr).min(1.5)).min(c.cpm);
        if score < floor {
            continue;
        }
        match best {
            Some((b, _)) if score <= b => second = second.max(score),
            _ => {
                if let Some((b, _)) = best {
                    second = second.max(b);
                }
                best = Some((score, c));
            }
        }
    }
    let (score, c) = best?;
    let price = (second.max(floor)).min(score);
    Some(Bid {
        id: format!("{}-{}", imp.id, c.crid),
        impid: imp.id.clone(),
        price: (price * 10_000.0).round() / 10_000.0,
        cid: c.id.clone(),
        crid: c.crid.clone(),
        adomain: vec![c.adomain.clone()],
        cat: c.cat.clone(),
        w: c.w,
        h: c.h,
        adm: c.adm.clone(),
    })
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Keeps a user id safe inside a URL path segment.
fn url_segment(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::{campaigns_for, user_profile};

    fn imp(floor: f64) -> Imp {
        Imp {
            id: "1".into(),
            banner: Some(Banner { w: 300, h: 250 }),
            bidfloor: floor,
        }
    }

    #[test]
    fn auction_bids_above_floor_or_not_at_all() {
        let config = BidderConfig::default_for_demo();
        let user = user_profile("u-1");
        let model = CtrModel::new();
        let campaigns = campaigns_for(300, 250);
        let banner = Banner { w: 300, h: 250 };
        for floor in [0.0, 0.5, 1.0, 3.0, 5.0] {
            let bid = auction(
                &config,
                &model,
                &user,
                "news.example",
                false,
                &imp(floor),
                &banner,
                &campaigns,
            )
            .expect("a low floor gets a bid");
            assert!(bid.price > floor, "price {} floor {floor}", bid.price);
        }
        assert!(auction(
            &config,
            &model,
            &user,
            "news.example",
            true,
            &imp(100.0),
            &banner,
            &campaigns
        )
        .is_none());
    }

    #[test]
    fn shape_checks_name_the_field() {
        let mut req: BidRequest = serde_json::from_str(
            r#"{"id":"a","imp":[{"id":"1","bidfloor":-1}],"site":{"domain":"x.example"}}"#,
        )
        .unwrap();
        assert!(check_shape(&req).unwrap_err().contains("bidfloor"));
        req.imp.clear();
        assert!(check_shape(&req).unwrap_err().contains("imp"));
    }

    #[test]
    fn domain_pattern_accepts_domains_and_bundles() {
        let re = Regex::new(DOMAIN_PATTERN).unwrap();
        assert!(re.is_match("news.example"));
        assert!(re.is_match("com.example.game"));
        assert!(!re.is_match("not a domain"));
        assert!(!re.is_match(""));
    }
}
