//! `perf script` text: line-level recognisers shared by the
//! stackcollapse-perf.pl compatible folder ([`crate::collapse`]) and the
//! profile parser ([`parse`]).
//!
//! The recognisers reproduce the Perl script's regular expressions exactly
//! (including their backtracking choices), because `keisoku collapse perf`
//! promises byte-identical output.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{Damage, FrameId, FrameKind, Location, Profile, Thread, Unit, NO_PARENT};
use regex::bytes::Regex;
use rustc_hash::FxHashMap;
use std::io::BufRead;
use std::sync::OnceLock;

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Perf,
    name: "perf",
    aliases: &["perf-script"],
    description: "perf script text",
    text: true,
    looks_like,
    read: |input, opts| {
        let name = input.name.clone();
        let (profile, report) = parse(
            &mut input.into_reader(),
            &name,
            &PerfOptions {
                event: opts.event.clone(),
            },
        )?;
        Ok(Parsed {
            profile,
            dropped_events: report.dropped,
        })
    },
};

/// Whether text starts like `perf script` output: after comments and blank
/// lines, a sample header line followed by a stack line or a blank line.
pub fn looks_like(head: &[u8]) -> bool {
    let mut lines = head.split(|&b| b == b'\n').filter(|l| !l.starts_with(b"#"));
    loop {
        match lines.next() {
            None => return false,
            Some(l) if l.iter().all(|&b| is_space(b)) => continue,
            Some(l) => {
                // bpftrace's banner "Attaching 1 probe..." has the shape of
                // a header line (comm "Attaching", tid 1).
                if event_line(l).is_none() || l.starts_with(b"Attaching ") {
                    return false;
                }
                return match lines.next() {
                    None => true,
                    Some(next) => {
                        next.is_empty() || stack_line(next).is_some() || event_line(next).is_some()
                    }
                };
            }
        }
    }
}

/// A source line that `perf script -F+srcline` prints under a frame
/// (`  file.c:42`, `  libc.so.6[2724a]`, `  ??:0`, `  file.c:7 (inlined)`):
/// two spaces, where frame lines start with a tab. Returns whether it
/// marks the frame above as inlined.
pub fn srcline(line: &[u8]) -> Option<bool> {
    if line.len() < 3 || !line.starts_with(b"  ") || is_space(line[2]) {
        return None;
    }
    let t = trim_end(line);
    Some(t.ends_with(b" (inlined)"))
}

fn trim_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && is_space(line[end - 1]) {
        end -= 1;
    }
    &line[..end]
}

/// A frame line without a module (`\t  27304 __libc_start_main_impl+0x84`):
/// with `-F+srcline` perf prints inlined frames so and puts "(inlined)" on
/// the source line below. Returns the line completed with its module, for
/// [`stack_line`], when `srcline` (the next line) says it was inlined.
pub fn bare_frame_with(line: &[u8], srcline_inlined: bool) -> Option<Vec<u8>> {
    if !srcline_inlined || line.first() != Some(&b'\t') || stack_line(line).is_some() {
        return None;
    }
    let t = trim_end(line);
    let body = &t[t.iter().position(|&b| !is_space(b))?..];
    let sp = memchr::memchr(b' ', body)?;
    if !body[..sp].iter().all(u8::is_ascii_hexdigit) || sp + 1 >= body.len() {
        return None;
    }
    let mut out = t.to_vec();
    out.extend_from_slice(b" (inlined)");
    Some(out)
}

/// What to do with a line of perf script text that may carry `-F+srcline`
/// source lines: skip it (a source line), keep it, or read a completed
/// frame line instead (an inlined frame printed without its module).
#[derive(Debug, PartialEq, Eq)]
pub enum SrclineStep {
    /// A source line under a frame: not a frame itself.
    Skip,
    /// An ordinary line.
    Keep,
    /// A frame line completed with " (inlined)".
    Replace(Vec<u8>),
}

/// Follows lines of perf script text to tell `-F+srcline` source lines
/// from frames. A source line is only taken as one right under a frame line
/// that starts with a tab, as perf prints them, so text without source
/// lines (all of FlameGraph's test inputs) reads exactly as before.
#[derive(Debug, Default)]
pub struct SrclineFilter {
    prev_tab: bool,
    /// Source lines skipped.
    pub skipped: u64,
}

impl SrclineFilter {
    /// Decides about `line`, given the line after it (for inlined frames).
    pub fn step(&mut self, line: &[u8], next: Option<&[u8]>) -> SrclineStep {
        if self.prev_tab && self.is_source(line) {
            self.prev_tab = false;
            self.skipped += 1;
            return SrclineStep::Skip;
        }
        let tab = line.first() == Some(&b'\t');
        self.prev_tab = tab;
        if tab {
            let inlined = next.is_some_and(|n| self.is_source(n) && srcline(n) == Some(true));
            if let Some(done) = bare_frame_with(line, inlined) {
                return SrclineStep::Replace(done);
            }
        }
        SrclineStep::Keep
    }

    fn is_source(&self, line: &[u8]) -> bool {
        match srcline(line) {
            None => false,
            // "  file.c:7 (inlined)" has the shape of a stack line; a real
            // frame's first word is its address.
            Some(_) => {
                let word = line[2..].split(|&b| is_space(b)).next().unwrap_or_default();
                stack_line(line).is_none() || !word.iter().all(u8::is_ascii_hexdigit)
            }
        }
    }
}

/// Perl's `\s` on byte strings.
#[inline]
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Perl's `\w` on byte strings.
#[inline]
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn event_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?-u)^(\S.+?)\s+(\d+)/*(\d+)*\s+").unwrap_or_else(|e| unreachable!("{e}"))
    })
}

fn event_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?-u):\s*(\d+)*\s+(\S+):\s*$").unwrap_or_else(|e| unreachable!("{e}"))
    })
}

/// The start of a sample ("comm pid/tid [cpu] time: period event:").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLine<'a> {
    /// Process name as printed (may contain spaces).
    pub comm: &'a [u8],
    /// Process id, when printed (`pid/tid` form).
    pub pid: Option<&'a [u8]>,
    /// Thread id (or the only number printed).
    pub tid: &'a [u8],
    /// Byte offset just after the pid/tid field and the whitespace after it.
    pub rest: usize,
}

/// Recognises an event line the way stackcollapse-perf.pl does.
pub fn event_line(line: &[u8]) -> Option<EventLine<'_>> {
    // Fast reject: the pattern starts with \S, and stack lines are indented.
    if line.first().is_none_or(|&b| is_space(b)) {
        return None;
    }
    let c = event_re().captures(line)?;
    let comm = c.get(1)?.as_bytes();
    let first = c.get(2)?.as_bytes();
    let rest = c.get(0)?.end();
    // Perl tests the second number for truth: a tid of "0" counts as absent.
    match c.get(3).map(|m| m.as_bytes()) {
        Some(t) if t != b"0" => Some(EventLine {
            comm,
            pid: Some(first),
            tid: t,
            rest,
        }),
        Some(t) => Some(EventLine {
            comm,
            pid: None,
            tid: t,
            rest,
        }),
        None => Some(EventLine {
            comm,
            pid: None,
            tid: first,
            rest,
        }),
    }
}

/// The event name (and period, if printed) at the end of an event line.
pub fn event_name(line: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let c = event_name_re().captures(line)?;
    Some((c.get(1).map(|m| m.as_bytes()), c.get(2)?.as_bytes()))
}

/// One frame line of a stack: program counter, raw function text, module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackLine<'a> {
    /// Address as printed.
    pub pc: &'a [u8],
    /// Symbol text (may carry "+0x.." and "->" inline chains).
    pub rawfunc: &'a [u8],
    /// DSO/module text between the parentheses.
    pub module: &'a [u8],
}

/// Recognises a stack line like Perl's `/^\s*(\w+)\s*(.+) \((\S*)\)/`.
pub fn stack_line(line: &[u8]) -> Option<StackLine<'_>> {
    let n = line.len();
    let mut i = 0;
    while i < n && is_space(line[i]) {
        i += 1;
    }
    let s0 = i;
    while i < n && is_word(line[i]) {
        i += 1;
    }
    let s1 = i;
    if s1 == s0 {
        return None;
    }
    while i < n && is_space(line[i]) {
        i += 1;
    }
    let s2 = i;
    // `(.+)` is greedy: the match uses the right-most " (" that is followed
    // by a run of non-space bytes containing ")"; `\S*` then stops at the
    // last ")" of that run.
    let mut end = n;
    let (p, close) = loop {
        let open = memchr::memrchr(b'(', &line[..end])?;
        end = open;
        if open == 0 || line[open - 1] != b' ' {
            continue;
        }
        let p = open - 1;
        if p < s0 + 2 {
            return None;
        }
        let mut run_end = open + 1;
        while run_end < n && !is_space(line[run_end]) {
            run_end += 1;
        }
        if let Some(close) = memchr::memrchr(b')', &line[open + 1..run_end]) {
            break (p, open + 1 + close);
        }
    };
    // Backtracking: `(.+)` starts after `\w+\s*` unless that leaves it empty.
    let start = s2.min(p - 1);
    let pc_end = s1.min(start);
    Some(StackLine {
        pc: &line[s0..pc_end],
        rawfunc: &line[start..p],
        module: &line[p + 2..close],
    })
}

/// Strips a trailing symbol offset (`+0x1f`), as Linux 4.8+ prints it
/// (Perl: `s/\+0x[\da-f]+$//`; only the last "+" can start such a tail).
pub fn strip_offset(rawfunc: &[u8]) -> &[u8] {
    if let Some(pos) = memchr::memrchr(b'+', rawfunc) {
        let tail = &rawfunc[pos + 1..];
        if tail.len() > 2
            && tail.starts_with(b"0x")
            && tail[2..]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        {
            return &rawfunc[..pos];
        }
    }
    rawfunc
}

/// Whether a module names kernel code (kallsyms, kernel modules, vmlinux).
pub fn is_kernel_module(module: &[u8]) -> bool {
    (module.first() == Some(&b'[') || module.ends_with(b"vmlinux"))
        && memchr::memmem::find(module, b"unknown").is_none()
}

/// Whether a module is a JIT perf map (`/tmp/perf-PID.map`).
pub fn is_perf_map(module: &[u8]) -> bool {
    let Some(at) = memchr::memmem::find(module, b"/tmp/perf-") else {
        return false;
    };
    // Perl: m:/tmp/perf-\d+\.map: (unanchored); check every occurrence.
    let mut from = at;
    loop {
        let rest = &module[from + 10..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest[digits..].len() >= 4 && &rest[digits + 1..digits + 4] == b"map" {
            return true;
        }
        match memchr::memmem::find(&module[from + 1..], b"/tmp/perf-") {
            Some(next) => from = from + 1 + next,
            None => return false,
        }
    }
}

/// Applies stackcollapse-perf.pl's per-function clean-ups to `func`,
/// appending the result to `out`. `java` is the Perl `$pname =~ m/^java/` test.
pub fn tidy_into(out: &mut Vec<u8>, func: &[u8], java: bool) {
    // Fast path: nothing to cut or replace (most native symbols).
    if memchr::memchr3(b'(', b';', b'"', func).is_none() && memchr::memchr(b'\'', func).is_none() {
        let start = out.len();
        out.extend_from_slice(func);
        if java && func.first() == Some(&b'L') && memchr::memchr(b'/', func).is_some() {
            out.remove(start);
        }
        return;
    }
    // tidy_generic: `s/;/:/g`, then drop everything from the first "(" that
    // does not open "(anonymous namespace)" unless it looks like a Go method
    // ("net/http.(*Client).Do"), then `tr/"'//d`.
    let go_method = match memchr::memmem::find(func, b".(") {
        Some(i) => memchr::memmem::rfind(func, b").").is_some_and(|j| j >= i + 2),
        None => false,
    };
    let mut end = func.len();
    if !go_method {
        let mut from = 0;
        while let Some(k) = memchr::memchr(b'(', &func[from..]) {
            let k = from + k;
            if !func[k + 1..].starts_with(b"anonymous namespace)") {
                end = k;
                break;
            }
            from = k + 1;
        }
    }
    let start = out.len();
    for &b in &func[..end] {
        match b {
            b';' => out.push(b':'),
            b'"' | b'\'' => {}
            _ => out.push(b),
        }
    }
    // tidy_java: `s/^L//` when the (tidied) name contains "/".
    if java && out.get(start) == Some(&b'L') && memchr::memchr(b'/', &out[start..]).is_some() {
        out.remove(start);
    }
}

/// Splits like Perl's `split /\->/`: trailing empty fields are dropped.
pub fn split_inline(rawfunc: &[u8]) -> SplitInline<'_> {
    // Dropping trailing empty fields = stripping trailing "->" repeatedly.
    let mut end = rawfunc.len();
    while end >= 2 && &rawfunc[end - 2..end] == b"->" {
        end -= 2;
    }
    SplitInline {
        rest: if end == 0 {
            None
        } else {
            Some(&rawfunc[..end])
        },
    }
}

/// Iterator of [`split_inline`].
pub struct SplitInline<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for SplitInline<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let mut from = 0;
        while let Some(i) = memchr::memchr(b'-', &rest[from..]) {
            let i = from + i;
            if rest.get(i + 1) == Some(&b'>') {
                self.rest = Some(&rest[i + 2..]);
                return Some(&rest[..i]);
            }
            from = i + 1;
        }
        self.rest = None;
        Some(rest)
    }
}

/// Options of the perf script profile parser.
#[derive(Clone, Debug, Default)]
pub struct PerfOptions {
    /// Keep only samples of this event; by default, of the first event seen.
    pub event: Option<String>,
}

/// Statistics a caller may want to report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilterReport {
    /// Event kept.
    pub kept: Option<String>,
    /// Other events met and dropped, with their sample counts.
    pub dropped: Vec<(String, u64)>,
}

fn parse_time_ns(tok: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(tok).ok()?;
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    if secs.is_empty()
        || !secs.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let mut ns = 0u64;
    for (i, b) in frac.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Fields after the pid/tid of an event line: CPU, time, period.
fn event_fields(rest: &[u8]) -> (Option<u16>, Option<u64>, Option<u64>) {
    let mut cpu = None;
    let mut time = None;
    let mut period = None;
    for tok in rest.split(|&b| is_space(b)).filter(|t| !t.is_empty()) {
        if tok.len() >= 3 && tok[0] == b'[' && tok[tok.len() - 1] == b']' {
            cpu = std::str::from_utf8(&tok[1..tok.len() - 1])
                .ok()
                .and_then(|s| s.parse().ok());
        } else if time.is_none() && tok.ends_with(b":") {
            match parse_time_ns(&tok[..tok.len() - 1]) {
                Some(t) => time = Some(t),
                None => break,
            }
        } else if time.is_some() && tok.iter().all(u8::is_ascii_digit) {
            period = std::str::from_utf8(tok).ok().and_then(|s| s.parse().ok());
            break;
        } else if time.is_some() {
            break;
        }
    }
    (cpu, time, period)
}

fn frame_kind(name: &[u8], module: &[u8], unknown: bool, inlined: bool) -> FrameKind {
    if inlined {
        FrameKind::Inlined
    } else if unknown {
        FrameKind::Unknown
    } else if module == b"[vdso]" || module == b"[vsyscall]" {
        FrameKind::Native
    } else if is_kernel_module(module) {
        FrameKind::Kernel
    } else if is_perf_map(module) || module.ends_with(b".map") {
        // Interpreter frames also come through perf maps: HotSpot's
        // "Interpreter", V8's unoptimised "~fn" and CPython's "py::fn".
        if name.starts_with(b"py::")
            || name == b"Interpreter"
            || memchr::memmem::find(name, b":~").is_some()
        {
            FrameKind::Interpreted
        } else {
            FrameKind::Jit
        }
    } else if module.ends_with(b".jit") || memchr::memmem::find(module, b"jitted-").is_some() {
        FrameKind::Jit
    } else {
        FrameKind::Native
    }
}

/// A sample being assembled.
struct Pending {
    thread: u32,
    cpu: Option<u16>,
    time: Option<u64>,
    weight: u64,
    /// Frames leaf first, as perf prints them.
    frames: Vec<FrameId>,
    damaged: Option<(u64, String)>,
}

/// Reads one line without its newline into `buf`; false at the end.
fn read_line(reader: &mut dyn BufRead, buf: &mut Vec<u8>, name: &str) -> Result<bool> {
    buf.clear();
    let n = reader
        .read_until(b'\n', buf)
        .map_err(|e| Error::io(name, e))?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    Ok(n > 0)
}

/// Parses `perf script` output into a profile (stack root = outermost caller;
/// process and thread go to the thread column, not into the stack).
pub fn parse(
    reader: &mut dyn BufRead,
    name: &str,
    opts: &PerfOptions,
) -> Result<(Profile, EventFilterReport)> {
    let mut profile = Profile::new(name, Unit::Samples);
    // Frames by "name\0module\0kind": one lookup without allocation per stack line.
    let mut cache: FxHashMap<Box<[u8]>, FrameId> = FxHashMap::default();
    let mut key: Vec<u8> = Vec::with_capacity(256);
    let mut report = EventFilterReport {
        kept: opts.event.clone(),
        dropped: Vec::new(),
    };
    let mut times: Vec<u64> = Vec::new();
    let mut threads: Vec<u32> = Vec::new();
    let mut cpus: Vec<u16> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    let mut any_cpu = false;
    let mut any_period = false;
    let mut all_timed = true;
    let mut pending: Option<Pending> = None;
    let mut skipping = false;
    let mut damage = Damage::default();
    let mut line = Vec::with_capacity(256);
    let mut lineno = 0u64;
    let mut name_buf = Vec::with_capacity(128);
    let mut first_bad: Option<u64> = None;
    let mut recognised = 0u64;

    let finish = |p: Pending,
                  profile: &mut Profile,
                  damage: &mut Damage,
                  times: &mut Vec<u64>,
                  threads: &mut Vec<u32>,
                  cpus: &mut Vec<u16>,
                  weights: &mut Vec<u64>| {
        if let Some((at, why)) = p.damaged {
            damage.skip(Location::Line(at), || why);
            return;
        }
        let mut node = NO_PARENT;
        for &f in p.frames.iter().rev() {
            node = profile.child(node, f);
        }
        if node == NO_PARENT {
            // A sample without a stack still counts, as the process alone.
            let comm = profile.threads[p.thread as usize].comm.clone();
            let f = profile.frame_parts(&comm, "", FrameKind::Unknown);
            node = profile.child(NO_PARENT, f);
        }
        profile.samples.node.push(node);
        times.push(p.time.unwrap_or(0));
        threads.push(p.thread);
        cpus.push(p.cpu.unwrap_or(u16::MAX));
        weights.push(p.weight);
    };

    let mut srclines = SrclineFilter::default();
    let mut next: Vec<u8> = Vec::with_capacity(256);
    let mut have_next = read_line(reader, &mut next, name)?;
    loop {
        if !have_next {
            break;
        }
        std::mem::swap(&mut line, &mut next);
        have_next = read_line(reader, &mut next, name)?;
        lineno += 1;
        match srclines.step(&line, have_next.then_some(&next[..])) {
            SrclineStep::Skip => continue,
            SrclineStep::Keep => {}
            SrclineStep::Replace(done) => line = done,
        }
        if line.first() == Some(&b'#') {
            continue;
        }
        if line.is_empty() {
            if let Some(p) = pending.take() {
                finish(
                    p,
                    &mut profile,
                    &mut damage,
                    &mut times,
                    &mut threads,
                    &mut cpus,
                    &mut weights,
                );
            }
            skipping = false;
            continue;
        }
        if let Some(ev) = event_line(&line) {
            recognised += 1;
            if let Some(p) = pending.take() {
                // perf always ends a sample with a blank line; two event lines
                // in a row mean the first sample lost its stack (or -g was off).
                finish(
                    p,
                    &mut profile,
                    &mut damage,
                    &mut times,
                    &mut threads,
                    &mut cpus,
                    &mut weights,
                );
            }
            let (period, event) = match event_name(&line) {
                Some((period, ev)) => (period, Some(ev)),
                None => (None, None),
            };
            if let Some(ev) = event {
                let ev = String::from_utf8_lossy(ev).into_owned();
                match &report.kept {
                    None => report.kept = Some(ev.clone()),
                    Some(k) if *k != ev => {
                        match report.dropped.iter_mut().find(|(n, _)| *n == ev) {
                            Some((_, c)) => *c += 1,
                            None => report.dropped.push((ev, 1)),
                        }
                        skipping = true;
                        continue;
                    }
                    Some(_) => {}
                }
                if profile.events.is_empty() {
                    profile.events.push(ev);
                }
            }
            let (cpu, time, period2) = event_fields(&line[ev.rest.min(line.len())..]);
            any_cpu |= cpu.is_some();
            let period = period
                .and_then(|p| std::str::from_utf8(p).ok()?.parse::<u64>().ok())
                .or(period2);
            any_period |= period.is_some();
            all_timed &= time.is_some();
            let tid = std::str::from_utf8(ev.tid)
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            // Default `perf script` prints the thread id only: each thread
            // then stands for its own process (a main thread's id is its
            // process id), never all of them for one "process 0".
            let pid = ev
                .pid
                .and_then(|p| std::str::from_utf8(p).ok()?.parse().ok())
                .unwrap_or(tid);
            let thread = profile.thread(Thread {
                pid,
                tid,
                comm: String::from_utf8_lossy(ev.comm).into_owned(),
            });
            pending = Some(Pending {
                thread,
                cpu,
                time,
                weight: period.unwrap_or(1),
                frames: Vec::new(),
                damaged: None,
            });
            continue;
        }
        if skipping {
            continue;
        }
        let Some(p) = pending.as_mut() else {
            first_bad.get_or_insert(lineno);
            damage.skip(Location::Line(lineno), || {
                "a sample header line (comm pid time: event:)".into()
            });
            skipping = true;
            continue;
        };
        let Some(sl) = stack_line(&line) else {
            if p.damaged.is_none() {
                p.damaged = Some((lineno, "a stack line (address symbol (module))".into()));
            }
            first_bad.get_or_insert(lineno);
            continue;
        };
        recognised += 1;
        let rawfunc = strip_offset(sl.rawfunc);
        if rawfunc.first() == Some(&b'(') {
            continue;
        }
        // As stackcollapse-perf.pl's `$pname =~ m/^java/`.
        let java = profile.threads[p.thread as usize].comm.starts_with("java");
        let parts: Vec<&[u8]> = split_inline(rawfunc).collect();
        // perf prints inline chains outermost-last; keep leaf-first order.
        let mut line_frames: Vec<FrameId> = Vec::with_capacity(parts.len());
        for (i, func) in parts.iter().enumerate() {
            name_buf.clear();
            let unknown = *func == b"[unknown]";
            if unknown {
                if sl.module != b"[unknown]" {
                    let base = match memchr::memrchr(b'/', sl.module) {
                        Some(s) => &sl.module[s + 1..],
                        None => sl.module,
                    };
                    name_buf.push(b'[');
                    name_buf.extend_from_slice(base);
                    name_buf.push(b']');
                } else {
                    name_buf.extend_from_slice(b"[unknown]");
                }
            } else {
                tidy_into(&mut name_buf, func, java);
            }
            let kind = frame_kind(&name_buf, sl.module, unknown, i > 0);
            key.clear();
            key.extend_from_slice(&name_buf);
            key.push(0);
            key.extend_from_slice(sl.module);
            key.push(0);
            key.push(kind as u8);
            let id = match cache.get(&key[..]) {
                Some(&id) => id,
                None => {
                    let id = profile.frame_parts(
                        &String::from_utf8_lossy(&name_buf),
                        &String::from_utf8_lossy(sl.module),
                        kind,
                    );
                    cache.insert(key.clone().into_boxed_slice(), id);
                    id
                }
            };
            line_frames.push(id);
        }
        // Perl unshifts the whole inline group, so within a line the
        // first-printed function is the outermost; reversed into leaf-first.
        p.frames.extend(line_frames.into_iter().rev());
    }
    if let Some(mut p) = pending.take() {
        if !p.frames.is_empty() {
            // The file ended inside a sample: keep what was complete, but say so.
            p.damaged = Some((
                lineno,
                "a blank line ending the last sample (file truncated?)".into(),
            ));
        }
        finish(
            p,
            &mut profile,
            &mut damage,
            &mut times,
            &mut threads,
            &mut cpus,
            &mut weights,
        );
    }
    if profile.samples.is_empty() {
        if recognised == 0 {
            return Err(Error::malformed(
                name,
                Location::Line(first_bad.unwrap_or(1)),
                "perf script output (a sample header line followed by stack lines)",
            ));
        }
        if let (Some(k), false) = (&report.kept, report.dropped.is_empty()) {
            return Err(Error::Empty {
                path: name.into(),
                why: format!("no samples of event {k:?}"),
            });
        }
    }
    // Times become offsets from the first sample; perf prints them in order,
    // but keep the contract (ascending) even for concatenated inputs. The
    // first sample's own timestamp is kept as the time origin, so a caller
    // that knows perf's clock can place samples on its own.
    if all_timed && !times.is_empty() {
        let t0 = times.iter().copied().min().unwrap_or(0);
        for t in times.iter_mut() {
            *t -= t0;
        }
        profile.samples.time_ns = Some(times);
        profile.time_origin_ns = Some(t0);
    }
    profile.samples.thread = Some(threads);
    if any_cpu {
        profile.samples.cpu = Some(cpus);
    }
    if any_period && weights.iter().any(|&w| w != 1) {
        // Keep sample counts as the unit: perf's period for cpu-clock is the
        // sampling interval, identical for every sample, and stackcollapse
        // counts samples. Weights are kept only when they differ.
        let w0 = weights[0];
        if weights.iter().any(|&w| w != w0) {
            profile.samples.weight = Some(weights);
        }
    }
    profile.damage = damage;
    crate::model::sort_by_time(&mut profile);
    Ok((profile, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines() {
        let e = event_line(b"java 25607 4794564.109216: cycles:").unwrap();
        assert_eq!((e.comm, e.pid, e.tid), (&b"java"[..], None, &b"25607"[..]));
        let e = event_line(b"V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:").unwrap();
        assert_eq!(e.comm, b"V8 WorkerThread");
        assert_eq!(e.pid, Some(&b"24636"[..]));
        assert_eq!(e.tid, b"25607");
        let e = event_line(b"swapper     0/0     [000]   1.0:    1 cpu-clock:").unwrap();
        assert_eq!((e.pid, e.tid), (None, &b"0"[..]));
        assert!(event_line(b"\t ffff native_safe_halt ([kernel.kallsyms])").is_none());
        assert_eq!(
            event_name(b"perf 1 [000] 1.0:    1001001 cpu-clock:ppp: "),
            Some((Some(&b"1001001"[..]), &b"cpu-clock:ppp"[..]))
        );
    }

    #[test]
    fn stack_lines_follow_the_perl_regex() {
        let s =
            stack_line(b"\t ffffffff8103ce3b native_safe_halt+0x5 ([kernel.kallsyms])").unwrap();
        assert_eq!(s.pc, b"ffffffff8103ce3b");
        assert_eq!(s.rawfunc, b"native_safe_halt+0x5");
        assert_eq!(s.module, b"[kernel.kallsyms]");
        let s = stack_line(b"  7f1e2215d058  (/lib/libc.so)").unwrap();
        assert_eq!(s.rawfunc, b" ");
        let s = stack_line(b"abc (x)").unwrap();
        assert_eq!(
            (s.pc, s.rawfunc, s.module),
            (&b"ab"[..], &b"c"[..], &b"x"[..])
        );
        let s = stack_line(b"  7f foo (/usr/lib/x.so (deleted))").unwrap();
        assert_eq!(
            (s.rawfunc, s.module),
            (&b"foo (/usr/lib/x.so"[..], &b"deleted)"[..])
        );
        assert!(stack_line(b"   (nothing)").is_none());
    }

    #[test]
    fn tidying() {
        let t = |f: &[u8], java| {
            let mut o = Vec::new();
            tidy_into(&mut o, f, java);
            String::from_utf8(o).unwrap()
        };
        assert_eq!(t(b"net/http.(*Client).Do", false), "net/http.(*Client).Do");
        assert_eq!(t(b"foo(int, char)", false), "foo");
        assert_eq!(
            t(b"(anonymous namespace)::f(int)", false),
            "(anonymous namespace)::f"
        );
        assert_eq!(t(b"RegExp:[&<>\"']", false), "RegExp:[&<>]");
        assert_eq!(
            t(
                b"Lorg/mozilla/javascript/ContextFactory;.call(Lorg/x;)V",
                true
            ),
            "org/mozilla/javascript/ContextFactory:.call"
        );
        assert_eq!(
            split_inline(b"a->b->").collect::<Vec<_>>(),
            vec![&b"a"[..], b"b"]
        );
        assert_eq!(split_inline(b"->").count(), 0);
        assert_eq!(strip_offset(b"f+0x1a"), b"f");
        assert_eq!(strip_offset(b"f+0x1A"), b"f+0x1A");
        assert!(is_perf_map(b"/tmp/perf-123.map"));
        assert!(!is_perf_map(b"/tmp/perf-x.map"));
    }
}
