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
//! are not theirs. A thread pool's worker waiting for its next work item
//! (`_worker` of concurrent.futures, as gunicorn's gthread workers run;
//! waitress's `handler_thread`) is fed by an acceptor's queue: it serves
//! requests when the server has a thread that waits on sockets.
//!
//! Two samplers' counts differ by chance and by how far each falls behind
//! on a crowded host, so wall minus CPU per site can show a wait where a
//! thread only waited for a core (a recv that returned, `readinto` still
//! the leaf, runnable behind CPU-bound workers). The kernel knows better:
//! a thread's own CPU and run-queue time (schedstat, the probe's
//! `thread.*.cpu` and `.runq_delay_ms`) leave, of its wall time inside
//! requests, only the time it was really blocked. That bounds the
//! profiles' wait, thread by thread, where the run has the series.

use crate::patterns::function_name;
use crate::view::View;
use keisoku_stacks::Profile;
use keisoku_store::RunJson;
use std::collections::{HashMap, HashSet};

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
    /// The kernel's bound on the wait, when it cut the profiles' figure:
    /// seconds the serving threads spent inside requests neither on a CPU
    /// nor runnable (their wall time in requests minus their own CPU and
    /// run-queue time), and the profiles' figure it replaced.
    pub kernel_bound: Option<(f64, f64)>,
    /// Per serving thread, most occupied first: its name and the share
    /// (0-1) of its wall-clock samples in the window that are inside a
    /// request (on a CPU, runnable or blocked), not waiting for work.
    pub occupancy: Vec<(String, f64)>,
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

/// Whether a leaf function waits for work (see the module doc).
fn waits_for_work(leaf: &str) -> bool {
    // `EpollSelector.select (selectors.py)` -> `select`.
    let bare = leaf.split(" (").next().unwrap_or(leaf);
    let last = bare.rsplit('.').next().unwrap_or(bare).to_ascii_lowercase();
    WORK_WAITS.contains(&last.as_str())
}

/// How a stack waits for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WorkWait {
    /// On sockets (select, poll, accept): fed by connections.
    Socket,
    /// On a lock or condition: fed by other threads (a background sender).
    Lock,
    /// A thread pool's worker waiting for its next work item: fed by an
    /// acceptor's queue (gunicorn gthread, waitress).
    Pool,
}

/// Thread pools' worker loops (function, file suffix): a stack whose leaf
/// is one of them (the queue's get is C code: `_queue.SimpleQueue.get`
/// leaves `_worker` the leaf) or a lock wait called from one, directly
/// (waitress's `queue_cv.wait`) or through one frame (`Queue.get >
/// Condition.wait`), waits for its next work item.
const POOL_LOOPS: &[(&str, &str)] = &[
    ("_worker", "concurrent/futures/thread.py"),
    ("handler_thread", "waitress/task.py"),
];

/// Whether a frame is a thread pool's worker loop.
fn is_pool_loop(p: &Profile, f: u32) -> bool {
    let name = fname(p, f);
    let bare = name.split(" (").next().unwrap_or(&name);
    let file = module(p, f).replace('\\', "/");
    POOL_LOOPS
        .iter()
        .any(|(func, suffix)| bare == *func && file.ends_with(suffix))
}

/// How a stack (frames root first) waits for work, if it does.
fn work_wait(p: &Profile, frames: &[u32]) -> Option<WorkWait> {
    let &leaf = frames.last()?;
    if is_pool_loop(p, leaf) {
        return Some(WorkWait::Pool);
    }
    if !waits_for_work(&fname(p, leaf)) {
        return None;
    }
    if !waits_on_a_lock(module(p, leaf)) {
        return Some(WorkWait::Socket);
    }
    let pool = frames
        .iter()
        .rev()
        .skip(1)
        .take(2)
        .any(|&f| is_pool_loop(p, f));
    Some(if pool { WorkWait::Pool } else { WorkWait::Lock })
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

/// Whose frame names a wall-clock profile holds: each runtime has its own
/// contract for what waits for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runtime {
    /// py-spy: `function (file.py:line)`.
    Python,
    /// async-profiler's wall mode (JFR): `package.Class.method`, native
    /// frames named by their library.
    Jvm,
}

/// The runtime of a wall-clock profile, or None for one whose contract is
/// not known (its waits are then not read: a wrong contract would take
/// every tick of a waiting pool worker for request time).
fn runtime_of(p: &Profile) -> Option<Runtime> {
    if p.frames.iter().any(|f| f.module.ends_with(".py")) {
        Some(Runtime::Python)
    } else if p.frames.iter().any(|f| {
        let n = java_method(&f.name);
        n == "java.lang.Thread.run" || n == "java.lang.Thread.runWith"
    }) {
        Some(Runtime::Jvm)
    } else {
        None
    }
}

/// A Java method's `package.Class.method` from a frame name: async-profiler
/// gives it bare, a perf map (`jcmd Compiler.perfmap`) with the return type
/// before it and sometimes the parameters after it.
fn java_method(name: &str) -> &str {
    let n = name.split('(').next().unwrap_or(name).trim_end();
    n.rsplit(' ').next().unwrap_or(n)
}

/// Whether a frame is a Java method (not native code, not perf's
/// `Interpreter`, whose methods it cannot name).
fn is_java_frame(p: &Profile, f: u32) -> bool {
    let Some(fr) = p.frames.get(f as usize) else {
        return false;
    };
    let m = fr.module.as_str();
    let name = java_method(&fr.name);
    (m.is_empty() || m.ends_with(".map"))
        && name.contains('.')
        && !name.starts_with('[')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._$<>/".contains(&b))
}

/// The JVM's frame-name contract (docs/findings.md): a thread inside a
/// selector's select or an accept waits for connections (the JDK
/// HttpServer's dispatcher, a Netty or NIO event loop, a blocking acceptor);
/// a pool worker inside `ThreadPoolExecutor.getTask` or a ForkJoin pool's
/// `awaitWork` waits for its next task. A request thread blocked in a
/// socket read, a lock or a downstream call is inside none of them.
const JVM_SOCKET_WAITS: &[&str] = &[
    "sun.nio.ch.SelectorImpl.select",
    "sun.nio.ch.SelectorImpl.lockAndDoSelect",
    "sun.nio.ch.EPollSelectorImpl.doSelect",
    "sun.nio.ch.NioSocketImpl.accept",
    "sun.nio.ch.ServerSocketChannelImpl.accept",
    "java.net.ServerSocket.accept",
    "io.netty.channel.nio.NioEventLoop.select",
    "io.netty.channel.epoll.Native.epollWait",
];
const JVM_POOL_WAITS: &[&str] = &[
    "java.util.concurrent.ThreadPoolExecutor.getTask",
    "java.util.concurrent.ForkJoinPool.awaitWork",
];

/// How a JVM stack (frames root first) waits for work, if it does.
fn jvm_work_wait(p: &Profile, frames: &[u32]) -> Option<WorkWait> {
    let mut pool = false;
    for &f in frames {
        let name = p.frames.get(f as usize).map_or("", |fr| fr.name.as_str());
        let m = java_method(name);
        if JVM_SOCKET_WAITS.contains(&m) {
            return Some(WorkWait::Socket);
        }
        pool |= JVM_POOL_WAITS.contains(&m);
    }
    pool.then_some(WorkWait::Pool)
}

/// Whether a Java frame is the application's: not the JDK's and not one of
/// the libraries a server is built on.
fn is_jvm_application(p: &Profile, f: u32) -> bool {
    const LIBRARIES: &[&str] = &[
        "java.",
        "javax.",
        "jdk.",
        "sun.",
        "com.sun.",
        "org.openjdk.",
        "ch.qos.logback.",
        "org.slf4j.",
        "org.apache.",
        "io.netty.",
        "io.undertow.",
        "org.xnio.",
        "org.eclipse.jetty.",
        "org.springframework.",
        "com.fasterxml.",
        "reactor.",
        "kotlin.",
        "kotlinx.",
        "scala.",
    ];
    is_java_frame(p, f) && {
        let m = java_method(p.frames.get(f as usize).map_or("", |fr| fr.name.as_str()));
        !LIBRARIES.iter().any(|l| m.starts_with(l))
    }
}

/// `Class.method` of a Java frame: short enough for a label, and the same
/// whether async-profiler or a perf map named it.
fn java_short(p: &Profile, f: u32) -> String {
    let m = java_method(p.frames.get(f as usize).map_or("", |fr| fr.name.as_str()));
    // A lambda's class is numbered per run and carries its address
    // (`Bidder$$Lambda$14/0x00007fe27009cf10`): compare's normaliser
    // already names it `Bidder$$Lambda`.
    let m = keisoku_stacks::normalise::name(m);
    let mut parts = m.rsplitn(3, '.');
    match (parts.next(), parts.next()) {
        (Some(method), Some(class)) => format!("{class}.{method}"),
        _ => m.to_string(),
    }
}

/// A JVM wait's label: up to two application frames nearest the leaf, then
/// the deepest Java frame (the method that waits; below it is native code,
/// which perf and async-profiler name differently).
fn jvm_site(p: &Profile, node: u32) -> (String, String, String) {
    let frames = path(p, node);
    let Some(leaf) = frames
        .iter()
        .rev()
        .copied()
        .find(|&f| is_java_frame(p, f))
        .or_else(|| frames.last().copied())
    else {
        return (String::new(), String::new(), String::new());
    };
    let below_leaf = frames.iter().rposition(|&f| f == leaf).unwrap_or(0);
    let app: Vec<u32> = frames[..below_leaf]
        .iter()
        .rev()
        .copied()
        .filter(|&f| is_jvm_application(p, f))
        .take(2)
        .collect();
    let named = app.first().copied().unwrap_or(leaf);
    let mut label: Vec<String> = app.iter().rev().map(|&f| java_short(p, f)).collect();
    label.push(if is_java_frame(p, leaf) {
        java_short(p, leaf)
    } else {
        fname(p, leaf)
    });
    (
        label.join(" > "),
        java_method(
            p.frames
                .get(named as usize)
                .map_or("", |fr| fr.name.as_str()),
        )
        .to_string(),
        module(p, named).to_string(),
    )
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
pub(crate) fn request_waits(v: &View, a: f64, b: f64) -> Option<RequestWaits> {
    let run = v.run;
    let wall = run.wall_profile.as_ref()?;
    let rt = runtime_of(wall)?;
    let work_wait = |p: &Profile, frames: &[u32]| match rt {
        Runtime::Python => work_wait(p, frames),
        Runtime::Jvm => jvm_work_wait(p, frames),
    };
    let site = |p: &Profile, node: u32| match rt {
        Runtime::Python => site(p, node),
        Runtime::Jvm => jvm_site(p, node),
    };
    let cpu = run.profile.as_ref()?;
    let wt = times_ms(run, wall)?;
    let wth = wall.samples.thread.as_ref()?;
    let tick_s = wall_tick_ms(wall, &wt)? / 1000.0;
    // Per node, how it waits for work (if it does), and which wall threads
    // serve requests: those that wait on sockets, and, in a server that has
    // such a thread (an acceptor), the workers of its thread pools.
    let mut node_wait: HashMap<u32, Option<WorkWait>> = HashMap::new();
    let mut socket_threads: HashSet<u32> = HashSet::new();
    let mut pool_threads: HashSet<u32> = HashSet::new();
    for (i, &node) in wall.samples.node.iter().enumerate() {
        let wait = *node_wait
            .entry(node)
            .or_insert_with(|| work_wait(wall, &path(wall, node)));
        match (wait, wth.get(i)) {
            (Some(WorkWait::Socket), Some(&th)) => {
                socket_threads.insert(th);
            }
            (Some(WorkWait::Pool), Some(&th)) => {
                pool_threads.insert(th);
            }
            _ => {}
        }
    }
    if socket_threads.is_empty() {
        return None;
    }
    let serving: HashSet<u32> = socket_threads.union(&pool_threads).copied().collect();
    // Wall seconds per waiting site (its label: the application frames
    // nearest the leaf, and the leaf) on serving threads in the window.
    // Compared site by site, not stack by stack: two samplers' counts on
    // each of hundreds of small stacks differ by chance, and clamping each
    // difference at zero adds the chance up (a CPU-bound config parse
    // showed 79 ms of "wait" per request so, at load 30).
    let mut site_of: HashMap<u32, (String, String, String)> = HashMap::new();
    let mut wall_s: HashMap<String, f64> = HashMap::new();
    // Per serving thread, its samples in the window: waiting for work, and in requests.
    let mut split: HashMap<u32, (usize, usize)> = HashMap::new();
    for (i, &node) in wall.samples.node.iter().enumerate() {
        let (Some(&t), Some(th)) = (wt.get(i), wth.get(i)) else {
            continue;
        };
        if !(t > a && t <= b && serving.contains(th)) {
            continue;
        }
        let idle = node_wait.get(&node).is_none_or(|w| w.is_some());
        let e = split.entry(*th).or_default();
        if idle {
            e.0 += 1;
            continue;
        }
        e.1 += 1;
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
    let cth = cpu.samples.thread.as_ref();
    let mut cpu_labels: HashMap<u32, String> = HashMap::new();
    let mut cpu_s: HashMap<String, f64> = HashMap::new();
    let mut cpu_idle: HashMap<u32, bool> = HashMap::new();
    // Per thread name, the CPU profile's seconds in a wait for work: on a
    // core or runnable with the stack still in select/accept (woken for
    // the next request, waiting for a core), which the kernel counts as
    // CPU or run-queue time but the wall-clock profile as waiting for work.
    let mut idle_active_s: HashMap<&str, f64> = HashMap::new();
    for (i, &node) in cpu.samples.node.iter().enumerate() {
        if !ct.get(i).is_some_and(|&t| t > a && t <= b) {
            continue;
        }
        let idle = *cpu_idle
            .entry(node)
            .or_insert_with(|| work_wait(cpu, &path(cpu, node)).is_some());
        if idle {
            if let Some(th) = cth
                .and_then(|c| c.get(i))
                .and_then(|&t| cpu.threads.get(t as usize))
            {
                *idle_active_s.entry(th.comm.as_str()).or_default() += tick_s;
            }
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
    let mut wait_s: f64 = 0.0;
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
    // The kernel's bound: the profiles' sites say where, the threads' own
    // scheduler counts how much.
    let bound = kernel_bound(v, wall, &split, &idle_active_s, a, b);
    let kernel_bound = (bound < wait_s).then_some((bound, wait_s));
    if let Some((bound, profiles)) = kernel_bound {
        let scale = if profiles > 0.0 {
            bound / profiles
        } else {
            0.0
        };
        for s in &mut top {
            s.wait_s *= scale;
        }
        top.retain(|s| s.wait_s > 0.0);
        wait_s = bound;
    }
    top.sort_by(|x, y| y.wait_s.total_cmp(&x.wait_s).then(x.label.cmp(&y.label)));
    top.truncate(3);
    let mut occupancy: Vec<(String, f64)> = split
        .iter()
        .filter(|(_, &(idle, busy))| idle + busy > 0)
        .map(|(th, &(idle, busy))| {
            let comm = wall
                .threads
                .get(*th as usize)
                .map_or_else(String::new, |t| t.comm.clone());
            (comm, busy as f64 / (idle + busy) as f64)
        })
        .collect();
    occupancy.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    Some(RequestWaits {
        wait_s,
        request_s,
        top,
        kernel_bound,
        occupancy,
    })
}

/// The kernel and process ids in a py-spy thread name (`Process 101 Thread
/// 102 "MainThread"`): py-spy numbers its threads, so the name is where
/// the ids that key the probe's series are.
fn kernel_ids(comm: &str) -> Option<(u32, u32)> {
    let rest = comm.strip_prefix("Process ")?;
    let (pid, rest) = rest.split_once(' ')?;
    let rest = rest.strip_prefix("Thread ")?;
    let tid = rest.split(' ').next()?;
    Some((pid.parse().ok()?, tid.parse().ok()?))
}

/// A thread name as the kernel keeps it (`comm`: at most 15 bytes).
fn kernel_comm(name: &str) -> &str {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Seconds the serving threads were blocked inside requests over (a, b],
/// as far as the kernel says: per thread, its wall time in requests (the
/// wall-clock profile's share of its samples that are not waits for work,
/// times the window) minus its CPU and run-queue time from its own series,
/// less the part of those spent woken in a wait for work. A thread without
/// series (idle enough that the probe kept none) counts its whole time in
/// requests: nothing bounds it.
fn kernel_bound(
    v: &View,
    wall: &Profile,
    split: &HashMap<u32, (usize, usize)>,
    idle_active_s: &HashMap<&str, f64>,
    a: f64,
    b: f64,
) -> f64 {
    let window_s = (b - a).max(0.0) / 1000.0;
    let mut blocked = 0.0;
    for (th, &(idle, busy)) in split {
        let n = idle + busy;
        if n == 0 {
            continue;
        }
        let in_requests = window_s * busy as f64 / n as f64;
        let thread = wall.threads.get(*th as usize);
        let comm = thread.map_or("", |t| t.comm.as_str());
        // py-spy numbers its threads and puts the kernel's ids in the name;
        // async-profiler records the OS thread id.
        let ids = kernel_ids(comm).or_else(|| {
            thread
                .filter(|t| t.pid != 0 && t.tid != 0)
                .map(|t| (t.pid, t.tid))
        });
        let series = ids.and_then(|(pid, tid)| {
            v.threads
                .iter()
                .rev()
                .find(|k| k.pid == pid && k.tid == tid)
        });
        let Some(key) = series else {
            blocked += in_requests;
            continue;
        };
        let cpu = v
            .thread_mean(key, "cpu", "proc.cpu_user", a, b)
            .map_or(0.0, |pct| pct / 100.0 * window_s);
        let runq = v
            .thread_mean(key, "runq_delay_ms", "proc.runq_delay_ms", a, b)
            .map_or(0.0, |ms_per_s| ms_per_s / 1000.0 * window_s);
        // perf's thread names are the kernel's, cut to 15 bytes.
        let woken = idle_active_s
            .get(comm)
            .or_else(|| idle_active_s.get(kernel_comm(comm)))
            .copied()
            .unwrap_or(0.0);
        blocked += (in_requests - (cpu + runq - woken).max(0.0)).max(0.0);
    }
    blocked
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

    /// The JDK HttpServer as async-profiler's wall mode and perf see it: a
    /// dispatcher in select, a pool worker waiting in getTask between
    /// requests and, inside one, blocked in the audit call.
    #[test]
    fn a_jvm_request_blocked_in_a_downstream_call_is_named_by_its_java_frames() {
        const RUN: &str = "java.lang.Thread.run";
        const WORKER: &str = "java.util.concurrent.ThreadPoolExecutor.runWorker";
        let dispatcher: &[(&str, &str)] = &[
            (RUN, ""),
            ("sun.net.httpserver.ServerImpl$Dispatcher.run", ""),
            ("sun.nio.ch.SelectorImpl.select", ""),
            ("sun.nio.ch.SelectorImpl.lockAndDoSelect", ""),
            ("sun.nio.ch.EPollSelectorImpl.doSelect", ""),
            ("sun.nio.ch.EPoll.wait", ""),
            ("epoll_wait", "libc.so.6"),
        ];
        let between: &[(&str, &str)] = &[
            (RUN, ""),
            (WORKER, ""),
            ("java.util.concurrent.ThreadPoolExecutor.getTask", ""),
            ("java.util.concurrent.LinkedBlockingQueue.take", ""),
            ("jdk.internal.misc.Unsafe.park", ""),
            ("Unsafe_Park", "libjvm.so"),
        ];
        let audit: &[(&str, &str)] = &[
            (RUN, ""),
            (WORKER, ""),
            ("sun.net.httpserver.ServerImpl$Exchange.run", ""),
            ("bidder.Bidder.handle", ""),
            ("bidder.Bidder.bid", ""),
            ("bidder.Bidder.postAudit", ""),
            (
                "sun.net.www.protocol.http.HttpURLConnection.getInputStream",
                "",
            ),
            ("sun.nio.ch.NioSocketImpl.park", ""),
            ("sun.nio.ch.Net.poll", ""),
            ("__poll", "libc.so.6"),
        ];
        let regex: &[(&str, &str)] = &[
            (RUN, ""),
            (WORKER, ""),
            ("sun.net.httpserver.ServerImpl$Exchange.run", ""),
            ("bidder.Bidder.handle", ""),
            ("bidder.Bidder.bid", ""),
            ("java.util.regex.Pattern.compile", ""),
        ];
        let wall = profile(
            &[
                (between, 0, 40),
                (audit, 0, 50),
                (regex, 0, 10),
                (dispatcher, 1, 100),
            ],
            10_000_000,
        );
        // perf names the same methods through the JVM's perf map, with
        // their return types, and the interpreted ones only "Interpreter".
        let map = "/tmp/perf-7.map";
        let cpu_regex: &[(&str, &str)] = &[
            ("Interpreter", map),
            (
                "void bidder.Bidder.handle(com.sun.net.httpserver.HttpExchange)",
                map,
            ),
            ("java.lang.String bidder.Bidder.bid", map),
            (
                "java.util.regex.Pattern java.util.regex.Pattern.compile",
                map,
            ),
        ];
        let cpu_audit: &[(&str, &str)] = &[
            ("Interpreter", map),
            ("java.lang.String bidder.Bidder.bid", map),
            ("void bidder.Bidder.postAudit", map),
            ("void sun.nio.ch.NioSocketImpl.park", map),
            ("int sun.nio.ch.Net.poll", map),
            ("do_sys_poll", "[kernel.kallsyms]"),
        ];
        let cpu = profile(&[(cpu_regex, 0, 10), (cpu_audit, 0, 2)], 10_000_000);
        let run = RunJson {
            profile: Some(cpu),
            wall_profile: Some(wall),
            ..RunJson::default()
        };
        let w = request_waits(&View::new(&run), -1.0, 10_000.0).expect("waits");
        // In requests: the worker's 60 ticks; the dispatcher only selects.
        assert!((w.request_s - 0.6).abs() < 1e-9, "{w:?}");
        // Blocked: the audit call's 50 ticks less its 2 on a CPU.
        assert!((w.wait_s - 0.48).abs() < 1e-9, "{w:?}");
        assert_eq!(w.top.len(), 1, "{w:?}");
        assert_eq!(w.top[0].label, "Bidder.bid > Bidder.postAudit > Net.poll");
        assert_eq!(w.top[0].name, "bidder.Bidder.postAudit");
        // The worker is in a request 60% of its time, the dispatcher never.
        assert_eq!(w.occupancy.len(), 2, "{w:?}");
        assert!((w.occupancy[0].1 - 0.6).abs() < 1e-9, "{w:?}");
        assert_eq!(w.occupancy[1].1, 0.0, "{w:?}");
    }

    #[test]
    fn java_method_names_from_async_profiler_and_perf_maps_agree() {
        for (raw, method) in [
            ("bidder.Bidder.postAudit", "bidder.Bidder.postAudit"),
            (
                "java.util.List bidder.Bidder$CampaignTable.selectBySegmentUnbounded",
                "bidder.Bidder$CampaignTable.selectBySegmentUnbounded",
            ),
            ("void java.lang.Thread.run()", "java.lang.Thread.run"),
            (
                "int sun.nio.ch.Net.poll(java.io.FileDescriptor, int, long)",
                "sun.nio.ch.Net.poll",
            ),
        ] {
            assert_eq!(java_method(raw), method);
        }
        let mut p = Profile::new("jfr", Unit::Samples);
        let lambda = p.frame_parts(
            "bidder.Bidder$$Lambda$14.0x00007fe27009cf10.handle",
            "",
            FrameKind::Jit,
        );
        let hidden = p.frame_parts(
            "bidder.Bidder$$Lambda$14/0x00007fe27009cf10.handle",
            "",
            FrameKind::Jit,
        );
        assert_eq!(java_short(&p, lambda), "Bidder$$Lambda.handle");
        assert_eq!(java_short(&p, hidden), "Bidder$$Lambda.handle");
        assert_eq!(kernel_comm("pool-1-thread-12345"), "pool-1-thread-1");
        assert_eq!(kernel_comm("HTTP-Dispatcher"), "HTTP-Dispatcher");
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
        let w = request_waits(&View::new(&run), -1.0, 10_000.0).expect("waits");
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
        assert!(request_waits(&View::new(&run), -1.0, 10_000.0).is_none());
    }

    /// A worker of a crowded host: the wall-clock profile has it half the
    /// time in a backend call, the CPU profile (behind, or at another
    /// tick) none, but its own series say most of that half it ran or
    /// waited for a core. Only what the kernel leaves is a wait.
    #[test]
    fn the_threads_own_cpu_and_run_queue_time_bound_the_wait() {
        let idle: &[(&str, &str)] = &[
            (
                "SyncWorker.run (sync.py:1)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
            (
                "SyncWorker.wait (sync.py:2)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
        ];
        let call: &[(&str, &str)] = &[
            (
                "SyncWorker.run (sync.py:1)",
                "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py",
            ),
            ("fetch_stock (app.py:10)", "/srv/shop/app.py"),
            (
                "SocketIO.readinto (socket.py:4)",
                "/usr/lib/python3.11/socket.py",
            ),
        ];
        let mut wall = profile(&[(idle, 0, 50), (call, 0, 50)], 10_000_000);
        let mut cpu = profile(&[(idle, 0, 5)], 10_000_000);
        for p in [&mut wall, &mut cpu] {
            p.threads[0].comm = "Process 7 Thread 100 \"MainThread\"".into();
        }
        let series = |metric: &str, v: f64| keisoku_store::Series {
            name: format!("thread.python3:7:100.{metric}"),
            unit: String::new(),
            t_ms: vec![500.0, 999.0],
            v: vec![v, v],
        };
        let run = RunJson {
            profile: Some(cpu),
            wall_profile: Some(wall),
            // 10% of a core on CPU, 300 ms/s runnable: 0.4 s of the 0.5 s in requests.
            series: vec![series("cpu", 10.0), series("runq_delay_ms", 300.0)],
            ..RunJson::default()
        };
        let w = request_waits(&View::new(&run), -1.0, 999.0).expect("waits");
        // The profiles alone: 0.5 s of wait. The 5 CPU samples woken in the
        // wait for work (0.05 s) are run-queue time outside requests.
        let (bound, profiles) = w.kernel_bound.expect("bounded");
        assert!((profiles - 0.5).abs() < 1e-9, "{w:?}");
        assert!((bound - 0.15).abs() < 1e-9, "{w:?}");
        assert!((w.wait_s - 0.15).abs() < 1e-9, "{w:?}");
        assert!((w.top[0].wait_s - 0.15).abs() < 1e-9, "{w:?}");
        assert_eq!(
            w.top[0].label,
            "fetch_stock > SocketIO.readinto (socket.py)"
        );
        assert_eq!(
            kernel_ids("Process 7 Thread 100 \"MainThread\""),
            Some((7, 100))
        );
        assert_eq!(kernel_ids("Thread 100"), None);
    }

    /// gunicorn's gthread worker: the main thread selects on sockets and
    /// queues each connection to a pool thread, which waits for it in
    /// `_worker` (the queue's get is C code) and then serves the request.
    #[test]
    fn a_thread_pool_fed_by_an_acceptor_serves_requests() {
        const FUT: &str = "/usr/lib/python3.11/concurrent/futures/thread.py";
        const GTHREAD: &str = "/venv/lib/python3.11/site-packages/gunicorn/workers/gthread.py";
        let select: &[(&str, &str)] = &[
            ("ThreadWorker.run (gthread.py:1)", GTHREAD),
            (
                "EpollSelector.select (selectors.py:2)",
                "/usr/lib/python3.11/selectors.py",
            ),
        ];
        let pool_idle: &[(&str, &str)] = &[
            (
                "Thread.run (threading.py:1)",
                "/usr/lib/python3.11/threading.py",
            ),
            ("_worker (thread.py:2)", FUT),
        ];
        let slow: &[(&str, &str)] = &[
            (
                "Thread.run (threading.py:1)",
                "/usr/lib/python3.11/threading.py",
            ),
            ("_worker (thread.py:2)", FUT),
            ("_WorkItem.run (thread.py:3)", FUT),
            ("ThreadWorker.handle (gthread.py:4)", GTHREAD),
            ("basket (app.py:10)", "/srv/shop/app.py"),
            ("post_audit (app.py:20)", "/srv/shop/app.py"),
            (
                "SocketIO.readinto (socket.py:4)",
                "/usr/lib/python3.11/socket.py",
            ),
        ];
        let wall = profile(
            &[(select, 0, 100), (pool_idle, 1, 40), (slow, 1, 60)],
            10_000_000,
        );
        let cpu = profile(&[(select, 0, 2)], 10_000_000);
        let run = RunJson {
            profile: Some(cpu),
            wall_profile: Some(wall),
            ..RunJson::default()
        };
        let w = request_waits(&View::new(&run), -1.0, 10_000.0).expect("waits");
        assert!((w.wait_s - 0.6).abs() < 1e-9, "{w:?}");
        assert_eq!(
            w.top[0].label,
            "basket > post_audit > SocketIO.readinto (socket.py)"
        );
        // A pool without an acceptor (a background executor) serves no requests.
        let wall = profile(&[(pool_idle, 1, 40), (slow, 1, 60)], 10_000_000);
        let run = RunJson {
            wall_profile: Some(wall),
            ..run
        };
        assert!(request_waits(&View::new(&run), -1.0, 10_000.0).is_none());
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
