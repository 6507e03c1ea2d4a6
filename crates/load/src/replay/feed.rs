//! The schedule source of a replay: a reader thread streams the file
//! again, turns each call into its request bytes, its route (target index)
//! and its intended send time, puts them in start order, and hands them to
//! the load threads through a bounded channel, so memory stays bounded
//! whatever the file's size.

use super::{each_call, Call, ReplayPlan, RouteIndex, Speed};
use crate::error::LoadError;
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Requests read ahead of the load threads.
const AHEAD: usize = 4096;
/// Requests held back to put starts in order; past this the earliest goes
/// out even if a later line might start before it (it is then sent late,
/// and the lag is charged as any other).
const MAX_HELD: usize = 1_000_000;

/// One request to send.
#[derive(Debug)]
pub struct Item {
    /// Intended send time, from the phase's start.
    pub due: Duration,
    /// Target (route) index.
    pub target: usize,
    /// The whole request.
    pub bytes: Vec<u8>,
}

/// What every replayed request shares: where it goes and the run's headers.
#[derive(Debug, Clone)]
pub struct Base {
    /// `Host` unless `--keep-host` and the file recorded one.
    pub authority: String,
    /// `http://authority` when requests go through a plain HTTP proxy (the
    /// request line then carries the absolute form).
    pub absolute: Option<String>,
    /// `-H` headers (and `--compressed`'s), replacing recorded ones.
    pub headers: Vec<(String, String)>,
    /// Keep connections open between requests.
    pub keepalive: bool,
}

/// The load threads' end of the reader.
pub struct Feed {
    rx: Mutex<Option<Receiver<Item>>>,
    stop: Arc<AtomicBool>,
    error: Arc<Mutex<Option<String>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Feed {
    /// Starts the reader thread.
    pub fn start(plan: &Arc<ReplayPlan>, base: Base) -> Result<Feed, LoadError> {
        let routes = RouteIndex::new(plan)?;
        let (tx, rx) = sync_channel(AHEAD);
        let stop = Arc::new(AtomicBool::new(false));
        let error = Arc::new(Mutex::new(None));
        let plan = Arc::clone(plan);
        let (stop2, error2) = (Arc::clone(&stop), Arc::clone(&error));
        let thread = std::thread::Builder::new()
            .name("keisoku-replay".into())
            .spawn(move || {
                if let Err(e) = read(&plan, &routes, &base, &tx, &stop2) {
                    if let Ok(mut slot) = error2.lock() {
                        *slot = Some(e.to_string());
                    }
                }
            })
            .map_err(|e| LoadError::Engine(format!("cannot start the replay reader: {e}")))?;
        Ok(Feed {
            rx: Mutex::new(Some(rx)),
            stop,
            error,
            thread: Some(thread),
        })
    }

    /// The next request in start order; `None` when the file is done.
    pub fn next(&self) -> Option<Item> {
        let guard = self.rx.lock().ok()?;
        guard.as_ref()?.recv().ok()
    }

    /// Why the reader stopped before the end of the file, if it did.
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Dropping the receiver wakes a reader blocked on a full channel.
        if let Ok(mut rx) = self.rx.lock() {
            rx.take();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A call waiting for its turn, ordered by start, then by file order.
struct Held {
    start: f64,
    seq: u64,
    item: Item,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == CmpOrdering::Equal
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    /// Reversed: the heap's top is the earliest start.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        o.start.total_cmp(&self.start).then(o.seq.cmp(&self.seq))
    }
}

fn read(
    plan: &ReplayPlan,
    routes: &RouteIndex,
    base: &Base,
    tx: &SyncSender<Item>,
    stop: &AtomicBool,
) -> Result<(), LoadError> {
    let speed = match plan.opts.speed {
        Speed::Scaled(s) => s,
        Speed::Max => f64::INFINITY,
    };
    // A loop starts one mean gap after the previous pass's last request.
    let period = plan.span + plan.span / plan.count.max(1) as f64;
    let period = if period > 0.0 { period } else { 0.001 };
    let mut held: BinaryHeap<Held> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut pass = 0u64;
    let mut gone = false;
    loop {
        let shift = pass as f64 * period;
        let mut latest = f64::NEG_INFINITY;
        let send = |h: Held| -> ControlFlow<()> {
            if stop.load(Ordering::Relaxed) || tx.send(h.item).is_err() {
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        };
        each_call(&plan.opts, &mut |call: Call| {
            let start = call.start + shift;
            let offset = (start - plan.first).max(0.0) / speed;
            let item = Item {
                due: Duration::from_secs_f64(if offset.is_finite() { offset } else { 0.0 }),
                target: routes.of(&call),
                bytes: request_bytes(&call, base, plan.opts.keep_host),
            };
            latest = latest.max(start);
            held.push(Held { start, seq, item });
            seq += 1;
            // A held call goes out once no later line can start before it.
            while let Some(top) = held.peek() {
                if latest - top.start < plan.backstep && held.len() <= MAX_HELD {
                    break;
                }
                let Some(h) = held.pop() else { break };
                if send(h).is_break() {
                    gone = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        })?;
        if gone {
            return Ok(());
        }
        while let Some(h) = held.pop() {
            if send(h).is_break() {
                return Ok(());
            }
        }
        if !plan.opts.looped || stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        pass += 1;
    }
}

/// Names of headers the run sets itself.
fn set_by_run(name: &str, base: &Base) -> bool {
    base.headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// The request of a call as it goes on the wire.
pub fn request_bytes(call: &Call, base: &Base, keep_host: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + call.target.len() + call.body.len());
    let host = match (&call.host, keep_host) {
        (Some(h), true) => h.as_str(),
        _ => base.authority.as_str(),
    };
    out.extend_from_slice(call.method.as_bytes());
    out.push(b' ');
    if let Some(abs) = &base.absolute {
        if call.target.starts_with('/') {
            out.extend_from_slice(abs.as_bytes());
        }
    }
    out.extend_from_slice(call.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !set_by_run("host", base) {
        out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    }
    let mut agent = false;
    for (n, v) in call
        .headers
        .iter()
        .filter(|(n, _)| !set_by_run(n, base))
        .chain(base.headers.iter())
    {
        if n.eq_ignore_ascii_case("content-length")
            || n.eq_ignore_ascii_case("connection")
            || n.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        agent |= n.eq_ignore_ascii_case("user-agent");
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    if !agent {
        out.extend_from_slice(format!("User-Agent: {}\r\n", crate::USER_AGENT).as_bytes());
    }
    if !call.body.is_empty() || matches!(call.method.as_str(), "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(format!("Content-Length: {}\r\n", call.body.len()).as_bytes());
    }
    if !base.keepalive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&call.body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_rewrite_the_host_and_keep_the_recorded_headers() {
        let call = Call {
            start: 0.0,
            method: "POST".into(),
            target: "/f?a=1".into(),
            host: Some("shop.example:443".into()),
            route: "/f".into(),
            headers: vec![
                ("Accept".into(), "*/*".into()),
                ("X-Trace".into(), "old".into()),
            ],
            body: b"a=1".to_vec(),
            body_lost: false,
        };
        let base = Base {
            authority: "127.0.0.1:8080".into(),
            absolute: None,
            headers: vec![("X-Trace".into(), "new".into())],
            keepalive: true,
        };
        let text = String::from_utf8(request_bytes(&call, &base, false)).unwrap();
        assert_eq!(
            text,
            format!("POST /f?a=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: */*\r\nX-Trace: new\r\nUser-Agent: {}\r\nContent-Length: 3\r\n\r\na=1", crate::USER_AGENT)
        );
        let kept = String::from_utf8(request_bytes(&call, &base, true)).unwrap();
        assert!(kept.contains("Host: shop.example:443\r\n"), "{kept}");
        let proxied = Base {
            absolute: Some("http://127.0.0.1:8080".into()),
            keepalive: false,
            ..base
        };
        let text = String::from_utf8(request_bytes(&call, &proxied, false)).unwrap();
        assert!(
            text.starts_with("POST http://127.0.0.1:8080/f?a=1 HTTP/1.1\r\n"),
            "{text}"
        );
        assert!(text.contains("Connection: close\r\n"), "{text}");
    }
}
