//! Deterministic bid requests for loading the demo target: a mix of sites,
//! apps, devices, users and banner sizes, about one in eight a no-bid.

use crate::bid::{AppInfo, Banner, BidRequest, Device, Imp, Site, User};
use crate::upstream::{mix, SIZES};

const UAS: [&str; 4] = [
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
];

/// The `n`-th sample request. Every eighth is built to get no bid (an
/// unknown banner size, a floor above every campaign, or a blocked domain).
pub fn sample_request(n: u64) -> BidRequest {
    let r = mix(n ^ 0x5eed);
    let no_bid = n % 8 == 7;
    let imps = 1 + (r % 3) as usize;
    let imp = (0..imps)
        .map(|k| {
            let (w, h) = SIZES[((r >> (8 + k * 3)) % SIZES.len() as u64) as usize];
            let (w, h, floor) = match (no_bid, n % 3) {
                (true, 0) => (123, 45, 0.5),
                (true, 1) => (w, h, 50.0),
                _ => (w, h, ((r >> (16 + k * 4)) % 150) as f64 / 100.0),
            };
            Imp {
                id: (k + 1).to_string(),
                banner: Some(Banner { w, h }),
                bidfloor: floor,
            }
        })
        .collect();
    let blocked = no_bid && n % 3 == 2;
    let (site, app) = if r.is_multiple_of(4) && !blocked {
        (
            None,
            Some(AppInfo {
                id: format!("app-{}", r % 97),
                bundle: format!("com.example.app{}", r % 97),
            }),
        )
    } else {
        let domain = if blocked {
            "blocked7.example".to_string()
        } else {
            format!("news{}.example", r % 50)
        };
        (
            Some(Site {
                id: format!("site-{}", r % 50),
                page: format!("https://{domain}/articles/{}", r % 10_000),
                domain,
            }),
            None,
        )
    };
    BidRequest {
        id: format!("auction-{n}"),
        imp,
        site,
        app,
        device: Some(Device {
            ua: UAS[(r % UAS.len() as u64) as usize].into(),
            ip: format!("192.0.2.{}", r % 250),
            ifa: format!("ifa-{:08x}", r >> 32),
        }),
        user: Some(User {
            id: format!("user-{}", mix(n) % 5000),
        }),
        tmax: Some(100),
    }
}

/// `count` sample requests serialised as JSON bodies.
pub fn sample_requests(count: usize) -> Vec<String> {
    (0..count as u64)
        .map(|n| serde_json::to_string(&sample_request(n)).unwrap_or_default())
        .collect()
}
