//! JDK Flight Recorder recordings (`jcmd PID JFR.dump`,
//! `-XX:StartFlightRecording`, async-profiler's `-o jfr`): one or more
//! chunks, each a header, a metadata event describing every type, constant
//! pools (threads, stack traces, methods, classes, symbols, frame types)
//! and events. Values are walked by the chunk's own descriptors, so
//! recordings from any JDK version or writer read the same way.
//!
//! One event type is read per profile: `jdk.ExecutionSample` by default,
//! or the one named by `--event` (allocation events weighted by bytes,
//! lock and park events by their duration, any other event with a stack
//! trace by count). The other events with stack traces are reported as
//! dropped, so the user learns what else the recording holds.

#[path = "jfr_wire.rs"]
mod wire;

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{sort_by_time, FrameId, FrameKind, Location, NodeId, Profile, Thread, Unit};
use crate::ReadOptions;
use rustc_hash::FxHashMap;
use wire::{Bad, Cur, Meta, Text, Value, Wire};

/// The magic at the start of every chunk.
const MAGIC: &[u8; 4] = b"FLR\0";
/// Bytes in a chunk header.
const HEADER: usize = 68;
/// The event read when `--event` names none.
pub const DEFAULT_EVENT: &str = "jdk.ExecutionSample";

/// How an event type's samples are weighted.
fn weighting(event: &str) -> (Unit, Option<&'static str>) {
    match event {
        "jdk.ObjectAllocationSample" => (Unit::Bytes, Some("weight")),
        "jdk.ObjectAllocationInNewTLAB" => (Unit::Bytes, Some("tlabSize")),
        "jdk.ObjectAllocationOutsideTLAB" => (Unit::Bytes, Some("allocationSize")),
        "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark" => {
            (Unit::Nanoseconds, Some("duration"))
        }
        _ => (Unit::Samples, None),
    }
}

/// Whether bytes start like a JFR recording.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Jfr,
    name: "jfr",
    aliases: &["jdk-flight-recorder"],
    description: "JDK Flight Recorder (.jfr)",
    looks_like,
    read: |input, opts| {
        let (name, data) = input.read_all()?;
        parse(&data, &name, opts)
    },
};

/// A chunk header.
struct Header {
    /// Absolute offset just past the chunk.
    end: usize,
    meta: usize,
    start_nanos: i64,
    start_ticks: i64,
    ticks_per_second: i64,
    compressed: bool,
}

fn header(data: &[u8], at: usize) -> Wire<Header> {
    let mut c = Cur::new(data, at, data.len(), false);
    if c.remaining() < HEADER {
        return Err(Bad(
            at,
            "a 68-byte chunk header (the input ends first)".into(),
        ));
    }
    if !data[at..].starts_with(MAGIC) {
        return Err(Bad(at, "a chunk starting with \"FLR\\0\"".into()));
    }
    c.be(4)?;
    let major = c.be(2)?;
    let minor = c.be(2)?;
    if !(1..=2).contains(&major) {
        return Err(Bad(
            at + 4,
            format!("JFR version 1.x or 2.x (got {major}.{minor})"),
        ));
    }
    let size = c.be(8)?;
    let _constant_pools = c.be(8)?;
    let meta = c.be(8)?;
    let start_nanos = c.be(8)? as i64;
    let _duration = c.be(8)?;
    let start_ticks = c.be(8)? as i64;
    let ticks_per_second = c.be(8)? as i64;
    let flags = c.be(4)?;
    if size == 0 {
        return Err(Bad(
            at + 8,
            "a finished chunk (size 0: the recording was still being written; dump it with jcmd PID JFR.dump)".into(),
        ));
    }
    let end = usize::try_from(size)
        .ok()
        .and_then(|s| at.checked_add(s))
        .filter(|&e| e <= data.len() && e >= at + HEADER)
        .ok_or_else(|| {
            Bad(
                at + 8,
                format!("a chunk size within the input (got {size}; truncated file?)"),
            )
        })?;
    let meta = usize::try_from(meta)
        .ok()
        .and_then(|m| at.checked_add(m))
        .filter(|&m| m >= at + HEADER && m < end)
        .ok_or_else(|| {
            Bad(
                at + 24,
                format!("a metadata offset within the chunk (got {meta})"),
            )
        })?;
    if ticks_per_second <= 0 {
        return Err(Bad(at + 56, "a positive ticks-per-second".into()));
    }
    Ok(Header {
        end,
        meta,
        start_nanos,
        start_ticks,
        ticks_per_second,
        // Version 1 never compressed; version 2 says so in bit 0.
        compressed: major >= 2 && flags & 1 == 1,
    })
}

impl Header {
    /// Wall-clock nanoseconds of a tick count of this chunk.
    fn nanos(&self, ticks: i64) -> i64 {
        let d = (i128::from(ticks) - i128::from(self.start_ticks)) * 1_000_000_000
            / i128::from(self.ticks_per_second);
        let t = i128::from(self.start_nanos) + d;
        t.clamp(0, i128::from(i64::MAX)) as i64
    }

    /// Ticks as nanoseconds (a duration).
    fn duration_ns(&self, ticks: i64) -> u64 {
        let d = i128::from(ticks.max(0)) * 1_000_000_000 / i128::from(self.ticks_per_second);
        u64::try_from(d).unwrap_or(u64::MAX)
    }
}

/// One event met in a chunk: its type and payload span.
struct Raw {
    ty: u64,
    start: usize,
    end: usize,
}

/// A chunk's header, metadata and the events in it (constant pools aside).
struct Chunk {
    header: Header,
    meta: Meta,
    /// Constant pool events' payload spans.
    pools: Vec<(usize, usize)>,
    events: Vec<Raw>,
}

/// Reads every chunk's header and metadata and locates its events.
fn chunks(data: &[u8]) -> Wire<Vec<Chunk>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let header = header(data, at)?;
        let meta = Meta::read(&mut Cur::new(
            data,
            header.meta,
            header.end,
            header.compressed,
        ))?;
        let mut c = Cur::new(data, at + HEADER, header.end, header.compressed);
        let (mut pools, mut events) = (Vec::new(), Vec::new());
        while c.remaining() > 0 {
            let start = c.pos();
            let size = c.int()?;
            let ty = c.long()?;
            let end = usize::try_from(size)
                .ok()
                .and_then(|s| start.checked_add(s))
                .filter(|&e| e >= c.pos() && e <= header.end)
                .ok_or_else(|| {
                    Bad(
                        start,
                        format!("an event size within the chunk (got {size})"),
                    )
                })?;
            match ty {
                0 => {}
                1 => pools.push((c.pos(), end)),
                _ => events.push(Raw {
                    ty: ty as u64,
                    start: c.pos(),
                    end,
                }),
            }
            c = Cur::new(data, end, header.end, header.compressed);
        }
        at = header.end;
        out.push(Chunk {
            header,
            meta,
            pools,
            events,
        });
    }
    Ok(out)
}

/// A chunk's constant pools: values by (type id, key).
type Pools = FxHashMap<(u64, i64), Value>;

fn read_pools(data: &[u8], chunk: &Chunk) -> Wire<Pools> {
    let mut pools = Pools::default();
    for &(start, end) in &chunk.pools {
        let mut c = Cur::new(data, start, end, chunk.header.compressed);
        for _ in 0..3 {
            c.long()?; // start time, duration, delta to the previous pool event
        }
        c.u8()?; // flush / checkpoint type
        let n = c.count("constant pools")?;
        for _ in 0..n {
            let at = c.pos();
            let ty = c.long()? as u64;
            if !chunk.meta.classes.contains_key(&ty) {
                return Err(Bad(
                    at,
                    format!("a constant pool of a described type (type {ty} is not)"),
                ));
            }
            let count = c.count("constant pool entries")?;
            for _ in 0..count {
                let key = c.long()?;
                let v = chunk.meta.value(&mut c, ty, 0)?;
                pools.insert((ty, key), v);
            }
        }
    }
    Ok(pools)
}

/// Read-only lookups into one chunk's metadata and pools.
#[derive(Clone, Copy)]
struct View<'a> {
    meta: &'a Meta,
    pools: &'a Pools,
    string_ty: Option<u64>,
}

/// Resolves pooled values of one chunk into frames, stacks and threads,
/// caching each by its pool key.
struct Resolver<'a> {
    view: View<'a>,
    frames: FxHashMap<(i64, i64, i64), FrameId>,
    stacks: FxHashMap<i64, NodeId>,
    threads: FxHashMap<i64, u32>,
}

/// How deep pooled references are followed (a symbol's string, a class's
/// symbol): crafted pools that refer to themselves stop here.
const MAX_HOPS: u32 = 8;

impl<'a> View<'a> {
    /// The object `v` is or refers to: its class and field values.
    fn obj<'b>(self, v: &'b Value, hops: u32) -> Option<(&'a wire::Class, &'b [Value])>
    where
        'a: 'b,
    {
        match v {
            Value::Obj(t, f) => Some((self.meta.classes.get(t)?, f)),
            Value::Ref(t, k) if hops < MAX_HOPS => self.obj(self.pools.get(&(*t, *k))?, hops + 1),
            _ => None,
        }
    }

    /// Field `name` of the object `v` is or refers to.
    fn get<'b>(self, v: &'b Value, name: &str) -> Option<&'b Value>
    where
        'a: 'b,
    {
        let (c, f) = self.obj(v, 0)?;
        f.get(c.field(name)?)
    }

    /// The text of a string, a pooled string or a symbol.
    fn text<'b>(self, v: &'b Value, hops: u32) -> Option<&'b str>
    where
        'a: 'b,
    {
        if hops > MAX_HOPS {
            return None;
        }
        match v {
            Value::Str(Text::Inline(s)) => Some(s),
            Value::Str(Text::Null) => None,
            Value::Str(Text::Pooled(k)) => {
                self.text(self.pools.get(&(self.string_ty?, *k))?, hops + 1)
            }
            Value::Ref(t, k) => self.text(self.pools.get(&(*t, *k))?, hops + 1),
            Value::Obj(..) => self.text(self.get(v, "string")?, hops + 1),
            _ => None,
        }
    }

    fn int(self, v: Option<&Value>) -> Option<i64> {
        match v {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }
    }
}

impl<'a> Resolver<'a> {
    /// A frame as Java users read it: `pkg.Class.method`, its JIT tier as
    /// the frame kind.
    fn frame(&mut self, profile: &mut Profile, frame: &Value) -> FrameId {
        let v = self.view;
        let method = v.get(frame, "method");
        let ty = v.get(frame, "type");
        let key = |v: Option<&Value>| match v {
            Some(Value::Ref(_, k)) => *k,
            _ => i64::MIN,
        };
        let line = v.int(v.get(frame, "lineNumber")).unwrap_or(-1);
        // Pooled methods and frame types key the cache; an inline method
        // (never seen from the JDK) is resolved each time.
        let cache = (
            key(method),
            key(ty),
            if key(method) == i64::MIN { line } else { 0 },
        );
        if cache.0 != i64::MIN {
            if let Some(&f) = self.frames.get(&cache) {
                return f;
            }
        }
        let class = method
            .and_then(|m| v.get(m, "type"))
            .and_then(|c| v.get(c, "name"))
            .and_then(|n| v.text(n, 0))
            .unwrap_or("");
        let name = method
            .and_then(|m| v.get(m, "name"))
            .and_then(|n| v.text(n, 0))
            .unwrap_or("[unknown]");
        let full = if class.is_empty() {
            name.to_owned()
        } else {
            format!("{}.{name}", java_class(class))
        };
        let kind = match ty
            .and_then(|t| v.get(t, "description"))
            .and_then(|d| v.text(d, 0))
        {
            Some("Interpreted") => FrameKind::Interpreted,
            Some("JIT compiled" | "C1 compiled" | "C2 compiled") => FrameKind::Jit,
            Some("Inlined") => FrameKind::Inlined,
            Some("Native" | "C++" | "Cpp") => FrameKind::Native,
            Some("Kernel") => FrameKind::Kernel,
            _ => FrameKind::Unknown,
        };
        let id = profile.frame_parts(&full, "", kind);
        if cache.0 != i64::MIN {
            self.frames.insert(cache, id);
        }
        id
    }

    /// The leaf node of a stack trace value, `None` when it is absent
    /// (a null reference, or a key missing from the pool).
    fn stack(&mut self, profile: &mut Profile, st: &Value) -> std::result::Result<NodeId, String> {
        let v = self.view;
        let key = match st {
            Value::Ref(_, k) => Some(*k),
            _ => None,
        };
        if let Some(&n) = key.and_then(|k| self.stacks.get(&k)) {
            return Ok(n);
        }
        let frames = match (key, v.get(st, "frames")) {
            (Some(0), _) => None,
            (_, Some(Value::Arr(f))) => Some(f),
            (Some(k), None) if v.obj(st, 0).is_none() => {
                return Err(format!("stack trace {k} in the constant pool"));
            }
            _ => return Err("a stack trace with a frames array".into()),
        };
        let mut ids: Vec<FrameId> = Vec::new();
        match frames {
            Some(f) if !f.is_empty() => {
                for fr in f.iter().rev() {
                    ids.push(self.frame(profile, fr));
                }
            }
            _ => ids.push(profile.frame_parts("[no stack trace]", "", FrameKind::Unknown)),
        }
        let n = profile
            .stack(ids)
            .ok_or_else(|| "a non-empty stack".to_owned())?;
        if let Some(k) = key {
            self.stacks.insert(k, n);
        }
        Ok(n)
    }

    /// The thread index of a thread value.
    fn thread(&mut self, profile: &mut Profile, pid: u32, t: Option<&Value>) -> u32 {
        let v = self.view;
        let key = match t {
            Some(Value::Ref(_, k)) => *k,
            _ => 0,
        };
        if let Some(&i) = self.threads.get(&key) {
            return i;
        }
        let name = |f: &str| {
            t.and_then(|t| v.get(t, f))
                .and_then(|x| v.text(x, 0))
                .filter(|s| !s.is_empty())
        };
        let comm = name("javaName")
            .or_else(|| name("osName"))
            .unwrap_or("[unknown thread]")
            .to_owned();
        let tid = v.int(t.and_then(|t| v.get(t, "osThreadId"))).unwrap_or(0);
        let i = profile.thread(Thread::from_stored(i64::from(pid), tid, comm));
        self.threads.insert(key, i);
        i
    }
}

/// A class name as Java prints it: `java.lang.Thread` for the internal
/// `java/lang/Thread`, and a hidden class (lambdas), which the JVM names
/// `Foo$$Lambda$1+0x0000000800c0b440/123456`, as `Class.getName` does:
/// `Foo$$Lambda$1/0x0000000800c0b440`, the form the normaliser knows.
fn java_class(internal: &str) -> String {
    if let Some((base, rest)) = internal.rsplit_once("+0x") {
        let addr = rest.split('/').next().unwrap_or(rest);
        if !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit()) {
            return format!("{}/0x{addr}", base.replace('/', "."));
        }
    }
    internal.replace('/', ".")
}

/// The events profilers record samples with, as `--event` documents them;
/// other events with a stack trace field (settings, exceptions) are read
/// when named but not offered.
const SAMPLE_EVENTS: &[&str] = &[
    "jdk.ExecutionSample",
    "jdk.NativeMethodSample",
    "jdk.ObjectAllocationSample",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.JavaMonitorEnter",
    "jdk.JavaMonitorWait",
    "jdk.ThreadPark",
];

/// Event names with stack traces in the recording, with their counts,
/// most frequent first.
fn stack_events(chunks: &[Chunk]) -> Vec<(String, u64)> {
    let mut n: FxHashMap<&str, u64> = FxHashMap::default();
    for ch in chunks {
        for e in &ch.events {
            if let Some(c) = ch.meta.classes.get(&e.ty) {
                if c.field("stackTrace").is_some() {
                    *n.entry(&c.name).or_default() += 1;
                }
            }
        }
    }
    let mut v: Vec<(String, u64)> = n.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The event type ids of `name` in a chunk.
fn type_of(chunk: &Chunk, name: &str) -> Option<u64> {
    chunk.meta.id_of(name)
}

fn listed(events: &[(String, u64)]) -> String {
    if events.is_empty() {
        return "none".into();
    }
    events
        .iter()
        .map(|(e, n)| format!("{e} ({n})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a (decompressed) JFR recording, keeping the event `opts.event`
/// names (`jdk.` may be left out), by default [`DEFAULT_EVENT`].
pub fn parse(data: &[u8], name: &str, opts: &ReadOptions) -> Result<Parsed> {
    let bad = |Bad(at, what): Bad| Error::malformed(name, Location::Byte(at as u64), what);
    let chunks = chunks(data).map_err(bad)?;
    let with_stacks = stack_events(&chunks);
    let sampled: Vec<(String, u64)> = with_stacks
        .iter()
        .filter(|(e, _)| SAMPLE_EVENTS.contains(&e.as_str()))
        .cloned()
        .collect();
    // Offer the sample events; a recording without any (a custom
    // configuration) offers every event with a stack trace.
    let offered = if sampled.is_empty() {
        &with_stacks
    } else {
        &sampled
    };
    let wanted = match opts.event.as_deref() {
        None => DEFAULT_EVENT.to_owned(),
        Some(e) if e.contains('.') => e.to_owned(),
        Some(e) => format!("jdk.{e}"),
    };
    if !with_stacks.iter().any(|(e, _)| *e == wanted) {
        let described = chunks.iter().any(|c| type_of(c, &wanted).is_some());
        let why = if described
            && !chunks.iter().any(|c| {
                type_of(c, &wanted).is_some_and(|t| {
                    c.meta
                        .classes
                        .get(&t)
                        .is_some_and(|cl| cl.field("stackTrace").is_some())
                })
            }) {
            format!("{wanted} events carry no stack trace")
        } else {
            format!("no {wanted} events in the recording")
        };
        return Err(Error::Empty {
            path: name.into(),
            why: format!(
                "{why}; events with stack traces in it: {} (choose with --event)",
                listed(offered)
            ),
        });
    }
    let (unit, weight_field) = weighting(&wanted);
    let mut profile = Profile::new(name, unit);
    profile.events.push(wanted.clone());
    let mut times: Vec<i64> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    let mut threads: Vec<u32> = Vec::new();
    for ch in &chunks {
        let Some(ty) = type_of(ch, &wanted) else {
            continue;
        };
        if !ch.events.iter().any(|e| e.ty == ty) {
            continue;
        }
        let pools = read_pools(data, ch).map_err(bad)?;
        let mut r = Resolver {
            view: View {
                meta: &ch.meta,
                pools: &pools,
                string_ty: ch.meta.id_of("java.lang.String"),
            },
            frames: FxHashMap::default(),
            stacks: FxHashMap::default(),
            threads: FxHashMap::default(),
        };
        let pid = jvm_pid(data, ch).unwrap_or(0);
        let Some(class) = ch.meta.classes.get(&ty) else {
            continue;
        };
        let field = |n: &str| class.field(n);
        let (f_time, f_stack) = (field("startTime"), field("stackTrace"));
        let f_thread = field("sampledThread").or_else(|| field("eventThread"));
        let f_weight = weight_field.and_then(field);
        for e in ch.events.iter().filter(|e| e.ty == ty) {
            let mut c = Cur::new(data, e.start, e.end, ch.header.compressed);
            let v = ch.meta.value(&mut c, ty, 0).map_err(bad)?;
            let Value::Obj(_, fields) = &v else {
                continue;
            };
            let at = Location::Byte(e.start as u64);
            let node = match f_stack.and_then(|i| fields.get(i)) {
                Some(st) => r.stack(&mut profile, st),
                None => Err("a stackTrace field".into()),
            };
            let node = match node {
                Ok(n) => n,
                Err(why) => {
                    profile.damage.skip(at, || why);
                    continue;
                }
            };
            let weight = match f_weight.map(|i| r.view.int(fields.get(i))) {
                None => 1,
                Some(Some(w)) if w >= 0 => match unit {
                    Unit::Nanoseconds => ch.header.duration_ns(w),
                    _ => w as u64,
                },
                Some(w) => {
                    profile.damage.skip(at, || {
                        format!("a non-negative {} (got {w:?})", weight_field.unwrap_or(""))
                    });
                    continue;
                }
            };
            let Some(ticks) = r.view.int(f_time.and_then(|i| fields.get(i))) else {
                profile.damage.skip(at, || "a startTime".into());
                continue;
            };
            let thread = r.thread(&mut profile, pid, f_thread.and_then(|i| fields.get(i)));
            profile.samples.node.push(node);
            times.push(ch.header.nanos(ticks));
            weights.push(weight);
            threads.push(thread);
        }
    }
    let Some(&t0) = times.iter().min() else {
        return Err(Error::Empty {
            path: name.into(),
            why: format!("no readable {wanted} events in the recording"),
        });
    };
    profile.start_unix_ns = Some(t0 as u64);
    profile.samples.time_ns = Some(times.iter().map(|&t| (t - t0) as u64).collect());
    profile.samples.thread = Some(threads);
    if weight_field.is_some() {
        profile.samples.weight = Some(weights);
    }
    sort_by_time(&mut profile);
    let dropped_events = offered
        .iter()
        .filter(|(e, _)| *e != wanted)
        .cloned()
        .collect();
    Ok(Parsed {
        profile,
        dropped_events,
    })
}

/// The JVM's process id, from the chunk's `jdk.JVMInformation` event.
fn jvm_pid(data: &[u8], ch: &Chunk) -> Option<u32> {
    let ty = ch.meta.id_of("jdk.JVMInformation")?;
    let class = ch.meta.classes.get(&ty)?;
    let f = class.field("pid")?;
    let e = ch.events.iter().find(|e| e.ty == ty)?;
    let v = ch
        .meta
        .value(
            &mut Cur::new(data, e.start, e.end, ch.header.compressed),
            ty,
            0,
        )
        .ok()?;
    let Value::Obj(_, fields) = &v else {
        return None;
    };
    match fields.get(f) {
        Some(Value::Int(p)) => u32::try_from(*p).ok(),
        _ => None,
    }
}
