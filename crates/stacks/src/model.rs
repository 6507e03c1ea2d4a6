//! The profile model: interned frames, a prefix tree of stacks, and samples
//! stored column by column.
//!
//! Stacks are interned as nodes of a prefix tree (root to leaf), so memory
//! grows with the number of distinct stacks, not with the number of samples.

use rustc_hash::FxHashMap;

/// What produced a frame; drives colours and filters in the UI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKind {
    /// Kernel code (`[kernel.kallsyms]`, kernel modules, vmlinux).
    Kernel = 0,
    /// Compiled native code from an ELF object.
    Native = 1,
    /// JIT-compiled code (perf maps, V8, HotSpot).
    Jit = 2,
    /// Code run by an interpreter (Python, the JVM interpreter, JS bytecode).
    Interpreted = 3,
    /// A function inlined into its caller.
    Inlined = 4,
    /// Nothing is known about the frame.
    Unknown = 5,
}

impl FrameKind {
    /// Names in the order of the JSON `kinds` array (index = discriminant).
    pub const NAMES: [&'static str; 6] = [
        "kernel",
        "native",
        "jit",
        "interpreted",
        "inlined",
        "unknown",
    ];

    /// The kind's JSON name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The kind with this JSON name; any other name (or none) is `Unknown`,
    /// so a profile from a newer writer still reads.
    pub fn from_name(name: Option<&str>) -> FrameKind {
        match name {
            Some("kernel") => FrameKind::Kernel,
            Some("native") => FrameKind::Native,
            Some("jit") => FrameKind::Jit,
            Some("interpreted") => FrameKind::Interpreted,
            Some("inlined") => FrameKind::Inlined,
            _ => FrameKind::Unknown,
        }
    }
}

/// One function in a stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Function name as the input names it (tidied like stackcollapse-perf.pl).
    pub name: String,
    /// Module/DSO path, or "" when unknown.
    pub module: String,
    /// What produced the frame.
    pub kind: FrameKind,
}

/// Process and thread a sample was taken on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Thread {
    /// Process id (0 when unknown).
    pub pid: u32,
    /// Thread id (0 when unknown).
    pub tid: u32,
    /// Process (command) name.
    pub comm: String,
}

/// Identifies a frame in [`Profile::frames`].
pub type FrameId = u32;
/// Identifies a node (an interned stack) in [`Profile::nodes`].
pub type NodeId = u32;

/// What a weight counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Each sample weighs its count.
    Samples,
    /// Weights are durations (pprof cpu nanoseconds).
    Nanoseconds,
    /// Weights are bytes (allocation profiles).
    Bytes,
}

impl Unit {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Samples => "samples",
            Unit::Nanoseconds => "nanoseconds",
            Unit::Bytes => "bytes",
        }
    }
}

/// Where in an input a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// 1-based line number (text formats).
    Line(u64),
    /// 0-based byte offset (binary formats, JSON).
    Byte(u64),
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Byte(n) => write!(f, "byte {n}"),
        }
    }
}

/// Recoverable damage met while parsing: counted, never silently dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Number of samples (or lines) skipped.
    pub skipped: u64,
    /// Where the first one was and why.
    pub first: Option<(Location, String)>,
}

impl Damage {
    /// Counts one skipped sample at `at`.
    pub fn skip(&mut self, at: Location, why: impl FnOnce() -> String) {
        self.skipped += 1;
        if self.first.is_none() {
            self.first = Some((at, why()));
        }
    }

    /// A one-line human report, e.g. "skipped 3 malformed samples, first at line 812 (...)".
    pub fn report(&self) -> Option<String> {
        let (at, why) = self.first.as_ref()?;
        let s = if self.skipped == 1 { "" } else { "s" };
        Some(format!(
            "skipped {} malformed sample{s}, first at {at} ({why})",
            self.skipped
        ))
    }
}

/// Per-sample columns. All present columns have the same length.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Leaf node of each sample's stack.
    pub node: Vec<NodeId>,
    /// Weight per sample; `None` means every sample weighs 1.
    pub weight: Option<Vec<u64>>,
    /// Nanoseconds since [`Profile::start_ns`]; `None` when the input has no time.
    pub time_ns: Option<Vec<u64>>,
    /// Index into [`Profile::threads`]; `None` when unknown.
    pub thread: Option<Vec<u32>>,
    /// CPU number per sample (`u16::MAX` when unknown); `None` when the input has none.
    pub cpu: Option<Vec<u16>>,
    /// Index into [`Profile::events`]; `None` for single-event inputs.
    pub event: Option<Vec<u16>>,
}

impl Samples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.node.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.node.is_empty()
    }

    /// Weight of sample `i`.
    pub fn weight_of(&self, i: usize) -> u64 {
        self.weight.as_ref().map_or(1, |w| w[i])
    }
}

/// A parsed profile.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Shown in page headers (usually the input file name).
    pub title: String,
    /// What weights count.
    pub unit: Unit,
    /// Interned frames.
    pub frames: Vec<Frame>,
    /// Prefix tree: parent of each node (`u32::MAX` for a root frame).
    pub parent: Vec<NodeId>,
    /// Frame of each node.
    pub node_frame: Vec<FrameId>,
    /// Threads samples refer to.
    pub threads: Vec<Thread>,
    /// Event names samples refer to.
    pub events: Vec<String>,
    /// Per-sample columns (empty for inputs without samples, see `counts`).
    pub samples: Samples,
    /// Self weight per node, for inputs without individual samples (folded stacks).
    pub counts: Option<Vec<u64>>,
    /// Wall-clock time of time zero, when known.
    pub start_unix_ns: Option<u64>,
    /// The input's own clock reading at time zero of `samples.time_ns`, in
    /// ns (perf script: the first sample's timestamp on perf's clock), when
    /// the input has one; lets a recorder move sample times onto its own
    /// clock.
    pub time_origin_ns: Option<u64>,
    /// Damage recovered from while parsing.
    pub damage: Damage,
    /// The exact call graph of inputs that record one (cProfile/pstats),
    /// from which the stacks were estimated.
    pub callgraph: Option<std::sync::Arc<crate::callgraph::CallGraph>>,
    frame_index: FxHashMap<Frame, FrameId>,
    child_index: FxHashMap<(NodeId, FrameId), NodeId>,
    thread_index: FxHashMap<Thread, u32>,
}

/// Why a stored node could not be rebuilt ([`Profile::rebuild_node`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredNodeError {
    /// Its frame id names no frame.
    Frame,
    /// Its parent id names no earlier node.
    Parent,
}

impl Thread {
    /// A thread from stored ids; one that does not fit a pid or tid is 0,
    /// the model's "unknown".
    pub fn from_stored(pid: i64, tid: i64, comm: String) -> Thread {
        Thread {
            pid: u32::try_from(pid).unwrap_or(0),
            tid: u32::try_from(tid).unwrap_or(0),
            comm,
        }
    }
}

/// Marks a root node's parent.
pub const NO_PARENT: NodeId = u32::MAX;

impl Profile {
    /// An empty profile.
    pub fn new(title: impl Into<String>, unit: Unit) -> Self {
        Profile {
            title: title.into(),
            unit,
            frames: Vec::new(),
            parent: Vec::new(),
            node_frame: Vec::new(),
            threads: Vec::new(),
            events: Vec::new(),
            samples: Samples::default(),
            counts: None,
            start_unix_ns: None,
            time_origin_ns: None,
            damage: Damage::default(),
            callgraph: None,
            frame_index: FxHashMap::default(),
            child_index: FxHashMap::default(),
            thread_index: FxHashMap::default(),
        }
    }

    /// Interns a frame.
    pub fn frame(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.frame_index.get(&frame) {
            return id;
        }
        let id = self.frames.len() as FrameId;
        self.frames.push(frame.clone());
        self.frame_index.insert(frame, id);
        id
    }

    /// Interns a frame given by parts, avoiding allocation when it is known.
    pub fn frame_parts(&mut self, name: &str, module: &str, kind: FrameKind) -> FrameId {
        // The map is keyed by owned frames; a probe key costs two small
        // allocations, which only matters for formats with per-line frames
        // (perf script), and those go through a per-parser cache first.
        self.frame(Frame {
            name: name.to_owned(),
            module: module.to_owned(),
            kind,
        })
    }

    /// The child of `parent` (or a root when `NO_PARENT`) for `frame`, created if new.
    pub fn child(&mut self, parent: NodeId, frame: FrameId) -> NodeId {
        if let Some(&n) = self.child_index.get(&(parent, frame)) {
            return n;
        }
        let n = self.parent.len() as NodeId;
        self.parent.push(parent);
        self.node_frame.push(frame);
        self.child_index.insert((parent, frame), n);
        n
    }

    /// Rebuilds one node of a profile stored as columns (profile JSON, the
    /// run store): `parent` is the column's parent (negative for a root) and
    /// `frame` its frame, both in the stored numbering; `frames` maps stored
    /// frame ids to interned ones and `nodes` the stored node ids seen so far,
    /// to which the new node is appended. Parents precede children in stored
    /// profiles, so one pass in id order rebuilds the tree.
    pub fn rebuild_node(
        &mut self,
        parent: i64,
        frame: u64,
        frames: &[FrameId],
        nodes: &mut Vec<NodeId>,
    ) -> Result<(), StoredNodeError> {
        let frame = usize::try_from(frame)
            .ok()
            .and_then(|x| frames.get(x).copied())
            .ok_or(StoredNodeError::Frame)?;
        let parent = if parent < 0 {
            NO_PARENT
        } else {
            usize::try_from(parent)
                .ok()
                .and_then(|x| nodes.get(x).copied())
                .ok_or(StoredNodeError::Parent)?
        };
        nodes.push(self.child(parent, frame));
        Ok(())
    }

    /// Interns a stack given root to leaf; `None` for an empty stack.
    pub fn stack(&mut self, frames: impl IntoIterator<Item = FrameId>) -> Option<NodeId> {
        let mut node = NO_PARENT;
        for f in frames {
            node = self.child(node, f);
        }
        (node != NO_PARENT).then_some(node)
    }

    /// Gives every thread the process id `pid` (an input that names no
    /// process, such as speedscope, recorded one known process), keeping the
    /// thread index in step with the threads.
    pub fn set_pid(&mut self, pid: u32) {
        for t in &mut self.threads {
            t.pid = pid;
        }
        self.thread_index = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
    }

    /// Interns a thread.
    pub fn thread(&mut self, thread: Thread) -> u32 {
        if let Some(&id) = self.thread_index.get(&thread) {
            return id;
        }
        let id = self.threads.len() as u32;
        self.threads.push(thread.clone());
        self.thread_index.insert(thread, id);
        id
    }

    /// Number of nodes (distinct stacks and their prefixes).
    pub fn node_count(&self) -> usize {
        self.parent.len()
    }

    /// Frames of the stack ending at `node`, root to leaf.
    pub fn stack_frames(&self, node: NodeId) -> Vec<FrameId> {
        let mut out = Vec::new();
        let mut n = node;
        while n != NO_PARENT {
            out.push(self.node_frame[n as usize]);
            n = self.parent[n as usize];
        }
        out.reverse();
        out
    }

    /// Each sample's stack as `root;...;leaf` frame names, in sample
    /// order: what a parser's unit tests compare.
    #[cfg(test)]
    pub(crate) fn sample_stacks(&self) -> Vec<String> {
        self.samples
            .node
            .iter()
            .map(|&n| {
                self.stack_frames(n)
                    .iter()
                    .map(|&f| self.frames[f as usize].name.as_str())
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect()
    }

    /// Self weight per node: from `counts`, or summed over samples.
    pub fn self_weights(&self) -> Vec<u64> {
        if let Some(c) = &self.counts {
            return c.clone();
        }
        let mut w = vec![0u64; self.node_count()];
        for i in 0..self.samples.len() {
            // Weights come from input (perf periods, pprof values): saturate.
            let n = self.samples.node[i] as usize;
            w[n] = w[n].saturating_add(self.samples.weight_of(i));
        }
        w
    }

    /// Total weight of all samples.
    pub fn total_weight(&self) -> u64 {
        match &self.counts {
            Some(c) => c.iter().fold(0, |a, &b| a.saturating_add(b)),
            None => match &self.samples.weight {
                Some(w) => w.iter().fold(0, |a, &b| a.saturating_add(b)),
                None => self.samples.len() as u64,
            },
        }
    }

    /// Duration covered by the samples, when they have times.
    pub fn duration_ns(&self) -> Option<u64> {
        let t = self.samples.time_ns.as_ref()?;
        Some(t.last().copied().unwrap_or(0))
    }

    /// Whether the profile carries per-sample times (needed by `scope`).
    pub fn has_times(&self) -> bool {
        self.counts.is_none() && self.samples.time_ns.is_some()
    }
}

/// Puts samples in ascending time order (the JSON contract), permuting
/// every column alike; a no-op for inputs already in order.
pub fn sort_by_time(profile: &mut Profile) {
    let Some(t) = &profile.samples.time_ns else {
        return;
    };
    if t.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let mut order: Vec<u32> = (0..t.len() as u32).collect();
    order.sort_by_key(|&i| t[i as usize]);
    fn permute<T: Copy>(v: &mut Vec<T>, order: &[u32]) {
        *v = order.iter().map(|&i| v[i as usize]).collect();
    }
    let s = &mut profile.samples;
    permute(&mut s.node, &order);
    if let Some(v) = s.weight.as_mut() {
        permute(v, &order);
    }
    if let Some(v) = s.time_ns.as_mut() {
        permute(v, &order);
    }
    if let Some(v) = s.thread.as_mut() {
        permute(v, &order);
    }
    if let Some(v) = s.cpu.as_mut() {
        permute(v, &order);
    }
    if let Some(v) = s.event.as_mut() {
        permute(v, &order);
    }
}

#[cfg(test)]
mod tests {
    use super::FrameKind;

    #[test]
    fn frame_kind_names_read_back() {
        for (i, name) in FrameKind::NAMES.iter().enumerate() {
            let kind = FrameKind::from_name(Some(name));
            assert_eq!(kind as usize, i);
            assert_eq!(kind.name(), *name);
        }
        assert_eq!(FrameKind::from_name(Some("wasm")), FrameKind::Unknown);
        assert_eq!(FrameKind::from_name(None), FrameKind::Unknown);
    }
}

#[cfg(test)]
mod set_pid_tests {
    use super::*;

    #[test]
    fn set_pid_keeps_the_thread_index_in_step() {
        let mut p = Profile::new("t", Unit::Samples);
        let a = p.thread(Thread::from_stored(0, 0, "main".into()));
        let b = p.thread(Thread::from_stored(0, 1, "worker".into()));
        p.set_pid(42);
        assert!(p.threads.iter().all(|t| t.pid == 42));
        // Interning a thread as it now is finds the existing one.
        assert_eq!(p.thread(Thread::from_stored(42, 0, "main".into())), a);
        assert_eq!(p.thread(Thread::from_stored(42, 1, "worker".into())), b);
        assert_eq!(p.threads.len(), 2);
    }
}
