//! JDK Flight Recorder recordings (`jcmd PID JFR.dump`,
//! `-XX:StartFlightRecording`, async-profiler's `-o jfr`): one or more
//! chunks, each a header, a metadata event describing every type, constant
//! pools (threads, stack traces, methods, classes, symbols, frame types)
//! and events. Values are walked by the chunk's own descriptors, so
//! recordings from any JDK (11 and later) or writer read the same way.
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
        // async-profiler batches wall-clock samples of an idle thread into
        // one event with their number.
        "profiler.WallClockSample" => (Unit::Samples, Some("samples")),
        "profiler.Malloc" => (Unit::Bytes, Some("size")),
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
    text: false,
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
    // Version 1 (JDK 9 and 10) lays out metadata and pools differently;
    // refuse it rather than misread it.
    if major != 2 {
        return Err(Bad(
            at + 4,
            format!("JFR version 2.x (JDK 11 and later, async-profiler; got {major}.{minor})"),
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
        compressed: flags & 1 == 1,
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
        // async-profiler names a native frame's library as its class
        // (`libjvm.so`, `[kernel.kallsyms]`): that is the frame's module,
        // as perf would say, and the symbol alone its name.
        let (full, module) = if class.is_empty() {
            (name.to_owned(), "")
        } else if is_library(class) {
            (name.to_owned(), class)
        } else {
            (format!("{}.{name}", java_class(class)), "")
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
        let id = profile.frame_parts(&full, module, kind);
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

/// Whether a frame's "class" is a native library, never a Java class
/// (internal Java names separate packages with `/`, never `.`).
fn is_library(class: &str) -> bool {
    class.ends_with(".so") || class.contains(".so.") || class.starts_with('[')
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
    "profiler.WallClockSample",
    "profiler.Malloc",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes JFR as the JDK does, compressed or not, for the edge cases
    /// a real JVM cannot be made to produce on demand.
    struct W {
        compressed: bool,
        b: Vec<u8>,
    }

    impl W {
        fn new(compressed: bool) -> Self {
            W {
                compressed,
                b: Vec::new(),
            }
        }
        fn varint(&mut self, mut v: u64) {
            for _ in 0..8 {
                if v < 0x80 {
                    self.b.push(v as u8);
                    return;
                }
                self.b.push(v as u8 | 0x80);
                v >>= 7;
            }
            self.b.push(v as u8);
        }
        fn long(&mut self, v: i64) {
            if self.compressed {
                self.varint(v as u64)
            } else {
                self.b.extend_from_slice(&v.to_be_bytes())
            }
        }
        fn int(&mut self, v: i32) {
            if self.compressed {
                self.varint(v as u32 as u64)
            } else {
                self.b.extend_from_slice(&v.to_be_bytes())
            }
        }
        fn str(&mut self, s: &str) {
            self.b.push(3);
            self.int(s.len() as i32);
            self.b.extend_from_slice(s.as_bytes());
        }
        /// An event: its size (padded to four bytes, as the JDK writes
        /// it), type and body.
        fn event(&mut self, ty: i64, body: impl FnOnce(&mut W)) {
            let mut e = W::new(self.compressed);
            e.long(ty);
            body(&mut e);
            let size = e.b.len() + 4;
            if self.compressed {
                for i in 0..4 {
                    let b = (size >> (7 * i)) as u8 & 0x7f;
                    self.b.push(if i < 3 { b | 0x80 } else { b });
                }
            } else {
                self.b.extend_from_slice(&(size as u32).to_be_bytes());
            }
            self.b.extend_from_slice(&e.b);
        }
    }

    /// Types: (id, name, fields as (name, type id, pooled, array)).
    type Desc<'a> = (u64, &'a str, Vec<(&'a str, u64, bool, bool)>);

    fn types() -> Vec<Desc<'static>> {
        vec![
            (10, "long", vec![]),
            (11, "int", vec![]),
            (12, "boolean", vec![]),
            (13, "java.lang.String", vec![]),
            (
                20,
                "java.lang.Thread",
                vec![
                    ("osName", 13, false, false),
                    ("osThreadId", 10, false, false),
                    ("javaName", 13, false, false),
                ],
            ),
            (21, "jdk.types.Symbol", vec![("string", 13, false, false)]),
            (22, "java.lang.Class", vec![("name", 21, true, false)]),
            (
                23,
                "jdk.types.Method",
                vec![("type", 22, true, false), ("name", 21, true, false)],
            ),
            (
                24,
                "jdk.types.FrameType",
                vec![("description", 13, false, false)],
            ),
            (
                25,
                "jdk.types.StackFrame",
                vec![
                    ("method", 23, true, false),
                    ("lineNumber", 11, false, false),
                    ("type", 24, true, false),
                ],
            ),
            (
                26,
                "jdk.types.StackTrace",
                vec![("truncated", 12, false, false), ("frames", 25, false, true)],
            ),
            (
                100,
                "jdk.ExecutionSample",
                vec![
                    ("startTime", 10, false, false),
                    ("sampledThread", 20, true, false),
                    ("stackTrace", 26, true, false),
                ],
            ),
            (
                101,
                "jdk.ObjectAllocationSample",
                vec![
                    ("startTime", 10, false, false),
                    ("eventThread", 20, true, false),
                    ("stackTrace", 26, true, false),
                    ("weight", 10, false, false),
                ],
            ),
            (
                102,
                "jdk.GCPhaseParallel",
                vec![("startTime", 10, false, false), ("name", 13, false, false)],
            ),
        ]
    }

    fn metadata(w: &mut W, types: &[Desc<'_>]) {
        let mut strings: Vec<String> = Vec::new();
        let mut s = |x: &str| -> i32 {
            if let Some(i) = strings.iter().position(|y| y == x) {
                return i as i32;
            }
            strings.push(x.to_owned());
            (strings.len() - 1) as i32
        };
        // Elements as (name, attributes, children), written depth first.
        let mut body = W::new(w.compressed);
        let (root, meta, class, field) = (s("root"), s("metadata"), s("class"), s("field"));
        body.int(root);
        body.int(0);
        body.int(1);
        body.int(meta);
        body.int(0);
        body.int(types.len() as i32);
        for (id, name, fields) in types {
            body.int(class);
            body.int(2);
            for (k, v) in [("name", name.to_string()), ("id", id.to_string())] {
                body.int(s(k));
                body.int(s(&v));
            }
            body.int(fields.len() as i32);
            for (fname, fty, pooled, array) in fields {
                body.int(field);
                let mut attrs = vec![("name", fname.to_string()), ("class", fty.to_string())];
                if *pooled {
                    attrs.push(("constantPool", "true".into()));
                }
                if *array {
                    attrs.push(("dimension", "1".into()));
                }
                body.int(attrs.len() as i32);
                for (k, v) in attrs {
                    body.int(s(k));
                    body.int(s(&v));
                }
                body.int(0);
            }
        }
        w.event(0, |e| {
            e.long(0);
            e.long(0);
            e.long(1);
            e.int(strings.len() as i32);
            for x in &strings {
                e.str(x);
            }
            e.b.extend_from_slice(&body.b);
        });
    }

    /// Constant pools: two threads, two stacks (`main;work;spin` JIT and
    /// interpreted `main;work`), stack 3 with no frames.
    fn pools(w: &mut W) {
        w.event(1, |e| {
            e.long(0);
            e.long(0);
            e.long(0);
            e.b.push(0);
            e.int(7);
            // Threads.
            e.long(20);
            e.int(2);
            for (k, name, tid) in [(1, "worker 1", 4001), (2, "worker-2", 4002)] {
                e.long(k);
                e.str(name);
                e.long(tid);
                e.str(name);
            }
            // Symbols.
            e.long(21);
            e.int(4);
            for (k, s) in [
                (1, "com/example/App"),
                (2, "main"),
                (3, "work"),
                (4, "spin"),
            ] {
                e.long(k);
                e.str(s);
            }
            e.long(22);
            e.int(1);
            e.long(1);
            e.long(1);
            e.long(23);
            e.int(3);
            for (k, sym) in [(1, 2), (2, 3), (3, 4)] {
                e.long(k);
                e.long(1);
                e.long(sym);
            }
            e.long(24);
            e.int(2);
            e.long(1);
            e.str("Interpreted");
            e.long(2);
            e.str("JIT compiled");
            e.long(26);
            e.int(3);
            for (k, frames) in [
                (1, vec![(3, 2), (2, 2), (1, 1)]),
                (2, vec![(2, 1), (1, 1)]),
                (3, vec![]),
            ] {
                e.long(k);
                e.b.push(0);
                e.int(frames.len() as i32);
                for (m, ft) in frames {
                    e.long(m);
                    e.int(10);
                    e.long(ft);
                }
            }
            // Strings are never pooled here; an empty pool still reads.
            e.long(13);
            e.int(0);
        });
    }

    /// One chunk starting at `start_nanos` with 1000 ticks a second.
    fn chunk(compressed: bool, start_nanos: i64, events: impl FnOnce(&mut W)) -> Vec<u8> {
        let mut w = W::new(compressed);
        w.b.resize(HEADER, 0);
        let meta = w.b.len();
        metadata(&mut w, &types());
        pools(&mut w);
        events(&mut w);
        let size = w.b.len() as u64;
        let mut h = Vec::new();
        h.extend_from_slice(MAGIC);
        h.extend_from_slice(&2u16.to_be_bytes());
        h.extend_from_slice(&1u16.to_be_bytes());
        for v in [size, 0, meta as u64, start_nanos as u64, 0, 5000, 1000] {
            h.extend_from_slice(&v.to_be_bytes());
        }
        h.extend_from_slice(&u32::from(compressed).to_be_bytes());
        w.b[..HEADER].copy_from_slice(&h);
        w.b
    }

    fn sample(w: &mut W, ticks: i64, thread: i64, stack: i64) {
        w.event(100, |e| {
            e.long(ticks);
            e.long(thread);
            e.long(stack);
        });
    }

    fn read(data: &[u8], event: Option<&str>) -> Result<Parsed> {
        let opts = ReadOptions {
            format: None,
            event: event.map(str::to_owned),
        };
        parse(data, "t.jfr", &opts)
    }

    fn folded(p: &Profile) -> Vec<String> {
        let w = p.self_weights();
        let mut v: Vec<String> = (0..p.node_count())
            .filter(|&n| w[n] > 0)
            .map(|n| {
                let names: Vec<String> = p
                    .stack_frames(n as u32)
                    .iter()
                    .map(|&f| {
                        let f = &p.frames[f as usize];
                        format!("{}:{}", f.name, f.kind.name())
                    })
                    .collect();
                format!("{} {}", names.join(";"), w[n])
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn execution_samples_with_frames_threads_and_times() {
        for compressed in [true, false] {
            let data = chunk(compressed, 1_000_000_000, |w| {
                sample(w, 5000, 1, 1);
                sample(w, 5250, 2, 1);
                sample(w, 5100, 1, 2);
                w.event(102, |e| {
                    e.long(5000);
                    e.str("GC");
                });
            });
            let p = read(&data, None).unwrap();
            assert!(p.dropped_events.is_empty());
            let p = p.profile;
            assert_eq!(p.events, ["jdk.ExecutionSample"]);
            assert_eq!(p.unit, Unit::Samples);
            assert_eq!(
                folded(&p),
                [
                    "com.example.App.main:interpreted;com.example.App.work:interpreted 1",
                    "com.example.App.main:interpreted;com.example.App.work:jit;com.example.App.spin:jit 2",
                ]
            );
            // Ticks at 1000 a second from the chunk's start, sorted.
            assert_eq!(p.start_unix_ns, Some(1_000_000_000));
            assert_eq!(
                p.samples.time_ns.as_deref(),
                Some(&[0, 100_000_000, 250_000_000][..])
            );
            let names: Vec<&str> = p.threads.iter().map(|t| t.comm.as_str()).collect();
            assert_eq!(names, ["worker 1", "worker-2"]);
            assert_eq!(p.threads[1].tid, 4002);
            assert_eq!(p.samples.thread.as_deref(), Some(&[0, 0, 1][..]));
        }
    }

    #[test]
    fn chunks_follow_one_another_on_one_clock() {
        let mut data = chunk(true, 1_000_000_000, |w| sample(w, 5000, 1, 1));
        // The second chunk's keys are its own: stack 2 there is `main;work`.
        data.extend(chunk(true, 3_000_000_000, |w| sample(w, 5500, 2, 2)));
        let p = read(&data, None).unwrap().profile;
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.samples.time_ns.as_deref(), Some(&[0, 2_500_000_000][..]));
        assert_eq!(folded(&p).len(), 2);
    }

    #[test]
    fn allocation_samples_weigh_their_bytes_and_a_negative_weight_is_damage() {
        let data = chunk(true, 0, |w| {
            sample(w, 5000, 1, 1);
            for (stack, weight) in [(1, 4096), (2, 100), (2, -5)] {
                w.event(101, |e| {
                    e.long(5000);
                    e.long(1);
                    e.long(stack);
                    e.long(weight);
                });
            }
        });
        let p = read(&data, Some("ObjectAllocationSample")).unwrap();
        assert_eq!(p.dropped_events, [("jdk.ExecutionSample".to_owned(), 1)]);
        let p = p.profile;
        assert_eq!(p.unit, Unit::Bytes);
        assert_eq!(p.total_weight(), 4196);
        assert_eq!(p.damage.skipped, 1);
    }

    #[test]
    fn a_missing_or_stackless_event_is_named_with_those_present() {
        let data = chunk(true, 0, |w| sample(w, 5000, 1, 1));
        let e = read(&data, Some("jdk.ThreadPark"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no jdk.ThreadPark events"), "{e}");
        assert!(e.contains("jdk.ExecutionSample (1)"), "{e}");
        let e = read(&data, Some("GCPhaseParallel"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("carry no stack trace"), "{e}");
        // A recording without execution samples does not fall back silently.
        let data = chunk(true, 0, |_| {});
        let e = read(&data, None).err().unwrap();
        assert!(matches!(e, Error::Empty { .. }), "{e}");
        assert!(
            e.to_string().contains("no jdk.ExecutionSample events"),
            "{e}"
        );
    }

    #[test]
    fn stack_traces_empty_null_or_unknown() {
        let data = chunk(true, 0, |w| {
            sample(w, 5000, 1, 3);
            sample(w, 5000, 1, 0);
            sample(w, 5000, 1, 99);
            sample(w, 5000, 0, 1);
        });
        let p = read(&data, None).unwrap().profile;
        assert_eq!(p.samples.len(), 3);
        assert_eq!(p.damage.skipped, 1);
        assert!(p.damage.report().unwrap().contains("stack trace 99"));
        assert!(folded(&p)[0].starts_with("[no stack trace]:unknown 2"));
        assert!(p.threads.iter().any(|t| t.comm == "[unknown thread]"));
    }

    #[test]
    fn damaged_headers_and_chunks_are_refused_with_where() {
        let good = chunk(true, 0, |w| sample(w, 5000, 1, 1));
        let err = |d: &[u8]| {
            read(d, None)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(&good[..40]).contains("68-byte chunk header"));
        assert!(err(&good[..good.len() - 3]).contains("truncated"));
        let mut v = good.clone();
        v[8..16].copy_from_slice(&0u64.to_be_bytes());
        assert!(err(&v).contains("still being written"));
        let mut v = good.clone();
        v[4..6].copy_from_slice(&3u16.to_be_bytes());
        assert!(err(&v).contains("version"));
        let mut v = good.clone();
        v[56..64].copy_from_slice(&0u64.to_be_bytes());
        assert!(err(&v).contains("ticks-per-second"));
        // Junk after a chunk is a chunk without its magic.
        let mut v = good.clone();
        v.extend_from_slice(&[b'j'; 100]);
        assert!(err(&v).contains("FLR"));
        v.truncate(good.len() + 4);
        assert!(err(&v).contains("68-byte chunk header"));
    }

    #[test]
    fn a_class_that_contains_itself_fails_instead_of_recursing() {
        let mut w = W::new(true);
        w.b.resize(HEADER, 0);
        metadata(
            &mut w,
            &[
                (10, "long", vec![]),
                (30, "Loop", vec![("next", 30, false, false)]),
            ],
        );
        let meta = Meta::read(&mut Cur::new(&w.b, HEADER, w.b.len(), true)).unwrap();
        let e = meta
            .value(&mut Cur::new(&[0u8; 4], 0, 4, true), 30, 0)
            .err()
            .unwrap();
        assert!(e.1.contains("nested"), "{}", e.1);
    }

    #[test]
    fn a_recording_over_the_input_limit_is_refused() {
        let data = chunk(true, 0, |w| sample(w, 5000, 1, 1));
        let limits = keisoku_common::limits::Limits {
            input: 100,
            ..Default::default()
        };
        let input = crate::Input::with_limits(
            "big.jfr".into(),
            Box::new(std::io::Cursor::new(data)),
            limits,
        )
        .unwrap();
        let e = (FORMAT.read)(input, &ReadOptions::default()).err().unwrap();
        assert!(matches!(e, Error::Io { .. }) && e.is_input(), "{e}");
    }

    #[test]
    fn class_names_read_as_java_prints_them() {
        assert_eq!(java_class("java/lang/Thread"), "java.lang.Thread");
        assert_eq!(
            java_class("com/x/Foo$$Lambda$14+0x0000000800c0b440/123456"),
            "com.x.Foo$$Lambda$14/0x0000000800c0b440"
        );
        assert_eq!(java_class("a/B+0xzz"), "a.B+0xzz");
        assert!(
            is_library("libjvm.so") && is_library("libc.so.6") && is_library("[kernel.kallsyms]")
        );
        assert!(!is_library("java/lang/Thread") && !is_library("Foo$$Lambda$4.0x00007fe0cc001000"));
    }

    proptest::proptest! {
        /// Any damage to a valid recording is an error or a profile, never a panic.
        #[test]
        fn damaged_recordings_never_panic(at in 0usize..4096, bytes in proptest::collection::vec(proptest::num::u8::ANY, 1..8), cut in 0usize..4096) {
            let mut data = chunk(true, 0, |w| {
                sample(w, 5000, 1, 1);
                sample(w, 5001, 2, 2);
            });
            let at = at % data.len();
            for (i, b) in bytes.iter().enumerate() {
                if let Some(x) = data.get_mut(at + i) {
                    *x = *b;
                }
            }
            data.truncate(data.len() - cut % data.len());
            if let Ok(p) = read(&data, None) {
                proptest::prop_assert_eq!(p.profile.samples.len(), p.profile.samples.time_ns.map_or(0, |t| t.len()));
            }
        }
    }
}
