//! What a wall-clock profile (py-spy `--idle`) says about the requests'
//! waits: how long the threads that serve requests spend inside a request
//! but off the CPU, and in which frames.
//!
//! The wall-clock profile holds every thread at every tick; the CPU profile
//! only the ticks at which a thread ran or was runnable (py-spy's "active":
//! the OS's thread state). Per stack, wall time minus CPU time is time
//! blocked in that stack, so a wait is measured where it happens and a
//! crowded host's run-queue wait (runnable, so CPU-profile time) is not
//! taken for one.
//!
//! Not every wait is a request's. Python's frame-name contract
//! (docs/findings.md): a sample whose leaf function is `select`, `poll`,
//! `epoll`, `accept`, `wait` or `wait_for_signals` (after its class, e.g.
//! `EpollSelector.select`, `SyncWorker.wait`, `Condition.wait`) waits for
//! work: a connection, an event, a queue item. A thread that ever waits so
//! on sockets (any of these but threading's and queue's `wait`) serves
//! requests (a sync worker, an event loop); its other samples are
//! requests' time. A thread that only waits on a lock or a queue (a
//! background sender draining one) does not serve requests, and its waits
//! are not theirs; nor, for now, do a thread pool's workers fed by a queue
//! (gunicorn gthread, waitress): their requests' waits are not measured,
//! and blocking-wait falls back to CPU and latency alone.

use crate::patterns::function_name;
use keisoku_stacks::Profile;
use keisoku_store::RunJson;
use std::collections::HashMap;

/// Leaf functions (the part after the last `.`, lowercase) that wait for
/// work rather than inside a request.
const WORK_WAITS: &[&str] = &[
    "select",
    "poll",
    "epoll",
    "accept",
    "wait",
    "wait_for_signals",
];

/// The requests' waits in a window of the run, from its wall-clock profile.
#[derive(Debug, Clone)]
pub(crate) struct RequestWaits {
    /// Seconds the serving threads spent inside requests off the CPU.
    pub wait_s: f64,
    /// Seconds the serving threads spent inside requests (wall).
    pub request_s: f64,
    /// Where the wait is, most first: a call path's label, its seconds, and
    /// the frame that names it (function, module).
    pub top: Vec<WaitSite>,
}

/// One place requests wait.
#[derive(Debug, Clone)]
pub(crate) struct WaitSite {
    /// `caller > callee > … > leaf (file)`: the application's frames
    /// nearest the wait, then the function that waits.
    pub label: String,
    /// Seconds of wait.
    pub wait_s: f64,
    /// The frame that names the site (the application frame nearest the
    /// wait, else the leaf).
    pub name: String,
    /// Its module (file).
    pub module: String,
}

/// Frame indexes of a node, root first.
fn path(p: &Profile, node: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut n = node;
    while let Some(&parent) = p.parent.get(n as usize) {
        if out.len() >= 4096 {
            break;
        }
        if let Some(&f) = p.node_frame.get(n as usize) {
            out.push(f);
        }
        n = parent;
    }
    out.reverse();
    out
}

/// The function part of a frame (line numbers dropped).
fn fname(p: &Profile, f: u32) -> String {
    p.frames
        .get(f as usize)
        .map_or_else(String::new, |fr| function_name(&fr.name).into_owned())
}

fn module(p: &Profile, f: u32) -> &str {
    p.frames.get(f as usize).map_or("", |fr| fr.module.as_str())
}

/// A stack as text, comparable between the two profiles (their frames are
/// numbered apart).
fn key(p: &Profile, frames: &[u32]) -> String {
    let mut k = String::new();
    for &f in frames {
        k.push_str(&fname(p, f));
        k.push('\u{1}');
        k.push_str(module(p, f));
        k.push('\u{2}');
    }
    k
}

/// Whether a leaf function waits for work (see the module doc).
fn waits_for_work(leaf: &str) -> bool {
    // `EpollSelector.select (selectors.py)` -> `select`.
    let bare = leaf.split(" (").next().unwrap_or(leaf);
    let last = bare.rsplit('.').next().unwrap_or(bare).to_ascii_lowercase();
    WORK_WAITS.contains(&last.as_str())
}

/// Whether a work wait is on a lock or condition (threading's `wait`, a
/// queue's `get`) rather than on sockets: a thread that only waits so is
/// fed by other threads (a background sender), not by connections.
fn waits_on_a_lock(file: &str) -> bool {
    let f = file.replace('\\', "/");
    f.ends_with("/threading.py")
        || f.ends_with("/queue.py")
        || f == "threading.py"
        || f == "queue.py"
}

/// Whether a frame is the application's own code: a Python file outside
/// the interpreter's library and outside installed packages, as py-spy
/// gives the full file name.
fn is_application(module: &str) -> bool {
    let m = module.replace('\\', "/");
    m.ends_with(".py")
        && !m.contains("/site-packages/")
        && !m.contains("/dist-packages/")
        && !m.contains("/lib/python")
        && !m.starts_with('<')
}

/// Samples' run-clock times (ms) of a profile in a stored run.
fn times_ms(run: &RunJson, p: &Profile) -> Option<Vec<f64>> {
    let shift = p
        .start_unix_ns
        .map_or(0.0, |ns| ns as f64 / 1e6 - run.run.started_unix_ms as f64);
    let t = p.samples.time_ns.as_ref()?;
    Some(t.iter().map(|&t| t as f64 / 1e6 + shift).collect())
}

/// The wall-clock profile's tick (ms): the span of the thread with the
/// most samples over their number, as placed by the recorder.
fn wall_tick_ms(p: &Profile, t: &[f64]) -> Option<f64> {
    let th = p.samples.thread.as_ref()?;
    let mut span: HashMap<u32, (f64, f64, usize)> = HashMap::new();
    for (i, &x) in th.iter().enumerate() {
        let e = span.entry(x).or_insert((f64::MAX, f64::MIN, 0));
        let ti = *t.get(i)?;
        e.0 = e.0.min(ti);
        e.1 = e.1.max(ti);
        e.2 += 1;
    }
    let (a, b, n) = span.into_values().max_by_key(|s| s.2)?;
    (n > 1 && b > a).then(|| (b - a) / (n - 1) as f64)
}

/// The requests' waits over (a, b] of the run's clock; `None` without a
/// wall-clock and a CPU profile with times and threads, or when no thread
/// serves requests.
pub(crate) fn request_waits(run: &RunJson, a: f64, b: f64) -> Option<RequestWaits> {
    let wall = run.wall_profile.as_ref()?;
    // The frame-name contract above is Python's. A JVM's wall-clock profile
    // (async-profiler) has native idle leaves and names that differ from
    // perf's, so reading it so would take every tick of a waiting pool
    // worker for request time: it is not read until a JVM contract exists.
    if !wall.frames.iter().any(|f| f.module.ends_with(".py")) {
        return None;
    }
    let cpu = run.profile.as_ref()?;
    let wt = times_ms(run, wall)?;
    let wth = wall.samples.thread.as_ref()?;
    let tick_s = wall_tick_ms(wall, &wt)? / 1000.0;
    // Stacks per node, and which wall threads serve requests.
    let mut node_info: HashMap<u32, (String, bool, bool)> = HashMap::new();
    let mut serving: HashMap<u32, bool> = HashMap::new();
    for (i, &node) in wall.samples.node.iter().enumerate() {
        let (_, _, conn) = node_info.entry(node).or_insert_with(|| {
            let frames = path(wall, node);
            let leaf = frames.last().map_or_else(String::new, |&f| fname(wall, f));
            let file = frames.last().map_or("", |&f| module(wall, f));
            let idle = waits_for_work(&leaf);
            (key(wall, &frames), idle, idle && !waits_on_a_lock(file))
        });
        if let (true, Some(&th)) = (*conn, wth.get(i)) {
            serving.insert(th, true);
        }
    }
    if serving.is_empty() {
        return None;
    }
    // Wall seconds per waiting site (its label: the application frames
    // nearest the leaf, and the leaf) on serving threads in the window.
    // Compared site by site, not stack by stack: two samplers' counts on
    // each of hundreds of small stacks differ by chance, and clamping each
    // difference at zero adds the chance up (a CPU-bound config parse
    // showed 79 ms of "wait" per request so, at load 30).
    let mut site_of: HashMap<u32, (String, String, String)> = HashMap::new();
    let mut wall_s: HashMap<String, f64> = HashMap::new();
    for (i, &node) in wall.samples.node.iter().enumerate() {
        let (Some(&t), Some(th)) = (wt.get(i), wth.get(i)) else {
            continue;
        };
        if !(t > a && t <= b && serving.contains_key(th)) {
            continue;
        }
        if node_info.get(&node).is_none_or(|(_, idle, _)| *idle) {
            continue;
        }
        let (label, _, _) = site_of.entry(node).or_insert_with(|| site(wall, node));
        *wall_s.entry(label.clone()).or_default() += tick_s;
    }
    let request_s: f64 = wall_s.values().sum();
    // CPU seconds of the same sites. Each sample weighs the wall-clock
    // profile's measured tick, not its nominal 1/rate: both py-spy run on
    // the same process and fall behind on a crowded host (at load 36 a
    // CPU-bound config parse counted at 1/rate showed as 100 ms of "wait"
    // per request); the CPU one, sampling fewer threads, falls behind
    // less, so this errs towards CPU, not towards a wait.
    let ct = times_ms(run, cpu)?;
    let mut cpu_labels: HashMap<u32, String> = HashMap::new();
    let mut cpu_s: HashMap<String, f64> = HashMap::new();
    for (i, &node) in cpu.samples.node.iter().enumerate() {
        if !ct.get(i).is_some_and(|&t| t > a && t <= b) {
            continue;
        }
        let label = cpu_labels
            .entry(node)
            .or_insert_with(|| site(cpu, node).0)
            .clone();
        *cpu_s.entry(label).or_default() += tick_s;
    }
    let mut names: HashMap<String, (String, String)> = HashMap::new();
    for (label, name, module) in site_of.into_values() {
        names.entry(label).or_insert((name, module));
    }
    let mut sites: HashMap<String, WaitSite> = HashMap::new();
    let mut wait_s = 0.0;
    for (label, w) in &wall_s {
        let off = (w - cpu_s.get(label).copied().unwrap_or(0.0)).max(0.0);
        if off <= 0.0 {
            continue;
        }
        wait_s += off;
        let (name, module) = names.get(label).cloned().unwrap_or_default();
        sites.insert(
            label.clone(),
            WaitSite {
                label: label.clone(),
                wait_s: off,
                name,
                module,
            },
        );
    }
    let mut top: Vec<WaitSite> = sites.into_values().collect();
    top.sort_by(|x, y| y.wait_s.total_cmp(&x.wait_s).then(x.label.cmp(&y.label)));
    top.truncate(3);
    Some(RequestWaits {
        wait_s,
        request_s,
        top,
    })
}

/// A wait's label: up to two application frames nearest the leaf (the
/// caller that decided to wait), then the leaf; without application
/// frames, the leaf's caller and the leaf.
fn site(p: &Profile, node: u32) -> (String, String, String) {
    let frames = path(p, node);
    let Some(&leaf) = frames.last() else {
        return (String::new(), String::new(), String::new());
    };
    let leaf_name = fname(p, leaf);
    let app: Vec<u32> = frames
        .iter()
        .rev()
        .skip(1)
        .copied()
        .filter(|&f| is_application(module(p, f)))
        .take(2)
        .collect();
    let (parts, named): (Vec<u32>, u32) = match app.first() {
        Some(&nearest) => (app.iter().rev().copied().collect(), nearest),
        None => (
            frames.iter().rev().nth(1).copied().into_iter().collect(),
            leaf,
        ),
    };
    let mut label: Vec<String> = parts
        .iter()
        .map(|&f| {
            let n = fname(p, f);
            n.split(" (").next().unwrap_or(&n).to_string()
        })
        .collect();
    label.push(leaf_name);
    (
        label.join(" > "),
        fname(p, named),
        module(p, named).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use keisoku_stacks::{FrameKind, Thread, Unit};

    /// A profile of one worker process: `stacks` as (frames root first as
    /// (name, file)), thread index, samples at 10 ms ticks from 0.
    /// Frames root first as (name, file).
    type Stack<'a> = &'a [(&'a str, &'a str)];

    fn profile(stacks: &[(Stack, u32, usize)], on_cpu_ns: u64) -> Profile {
        let mut p = Profile::new("py-spy", Unit::Samples);
        for tid in [100, 101] {
            p.thread(Thread {
                pid: 7,
                tid,
                comm: format!("Thread {tid}"),
            });
        }
        let mut node_of = Vec::new();
        for (frames, _, _) in stacks {
            let mut parent = keisoku_stacks::model::NO_PARENT;
            for (name, file) in frames.iter() {
                let f = p.frame_parts(name, file, FrameKind::Interpreted);
                parent = p.child(parent, f);
            }
            node_of.push(parent);
        }
        let (mut node, mut time, mut thread) = (Vec::new(), Vec::new(), Vec::new());
        let mut t_per_thread = [0u64; 2];
        for (i, (_, th, n)) in stacks.iter().enumerate() {
            for _ in 0..*n {
                node.push(node_of[i]);
                thread.push(*th);
                time.push(t_per_thread[*th as usize]);
                t_per_thread[*th as usize] += 10_000_000;
            }
        }
        p.samples.weight = Some(vec![on_cpu_ns; node.len()]);
        p.samples.node = node;
        p.samples.time_ns = Some(time);
        p.samples.thread = Some(thread);
        p
    }

    #[test]
    fn a_slow_call_in_a_request_is_named_and_idle_workers_and_senders_are_not_requests() {
        let accept_wait: &[(&str, &str)] = &[
            (
                "SyncWorker.run (gunicorn/workers/sync.py:1)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
            (
                "SyncWorker.wait (gunicorn/workers/sync.py:2)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
        ];
        let slow: &[(&str, &str)] = &[
            (
                "SyncWorker.run (gunicorn/workers/sync.py:1)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
            ("basket (app.py:10)", "/srv/shop/app.py"),
            ("post_audit (app.py:20)", "/srv/shop/app.py"),
            ("call_backend (app.py:30)", "/srv/shop/app.py"),
            (
                "HTTPResponse.begin (http/client.py:3)",
                "/usr/lib/python3.11/http/client.py",
            ),
            (
                "SocketIO.readinto (socket.py:4)",
                "/usr/lib/python3.11/socket.py",
            ),
        ];
        let work: &[(&str, &str)] = &[
            (
                "SyncWorker.run (gunicorn/workers/sync.py:1)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
            ("basket (app.py:10)", "/srv/shop/app.py"),
            ("price (app.py:40)", "/srv/shop/app.py"),
        ];
        // A background sender waiting on the same backend: never waits for work.
        let sender: &[(&str, &str)] = &[
            (
                "Thread.run (threading.py:9)",
                "/usr/lib/python3.11/threading.py",
            ),
            ("sender (app.py:50)", "/srv/shop/app.py"),
            (
                "SocketIO.readinto (socket.py:4)",
                "/usr/lib/python3.11/socket.py",
            ),
        ];
        // Worker thread 0: 50 ticks idle, 40 in the slow call, 10 working;
        // thread 1 is the sender, 100 ticks in its call.
        let wall = profile(
            &[
                (accept_wait, 0, 50),
                (slow, 0, 40),
                (work, 0, 10),
                (sender, 1, 100),
            ],
            10_000_000,
        );
        // On CPU: the 10 working ticks, 2 ticks of the slow stack (parsing the reply).
        let cpu = profile(&[(work, 0, 10), (slow, 0, 2)], 10_000_000);
        let run = RunJson {
            profile: Some(cpu),
            wall_profile: Some(wall),
            ..RunJson::default()
        };
        let w = request_waits(&run, -1.0, 10_000.0).expect("waits");
        assert!((w.request_s - 0.5).abs() < 1e-9, "{w:?}");
        assert!((w.wait_s - 0.38).abs() < 1e-9, "{w:?}");
        assert_eq!(w.top.len(), 1, "{w:?}");
        assert_eq!(
            w.top[0].label,
            "post_audit > call_backend > SocketIO.readinto (socket.py)"
        );
        assert_eq!(w.top[0].name, "call_backend (app.py)");
        // Without a wall-clock profile there is nothing to say.
        let run = RunJson {
            wall_profile: None,
            ..run
        };
        assert!(request_waits(&run, -1.0, 10_000.0).is_none());
    }

    #[test]
    fn work_waits_are_read_after_the_class_and_before_the_file() {
        assert!(waits_for_work("EpollSelector.select (selectors.py)"));
        assert!(waits_for_work("Condition.wait (threading.py)"));
        assert!(waits_for_work("socket.accept (socket.py)"));
        assert!(!waits_for_work("SocketIO.readinto (socket.py)"));
        assert!(!waits_for_work("waiter (app.py)"));
        assert!(is_application("/srv/shop/app.py"));
        assert!(!is_application("/usr/lib/python3.11/socket.py"));
        assert!(!is_application(
            "/venv/lib/python3.11/site-packages/flask/app.py"
        ));
        assert!(!is_application("<frozen runpy>"));
    }
}
