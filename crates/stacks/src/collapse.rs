//! Folding stacks: the stackcollapse-perf.pl compatible folder for
//! `perf script` text, and folding of any parsed [`Profile`].
//!
//! The perf folder works on raw bytes and interns each distinct folded
//! stack once, so memory grows with distinct stacks, not with input size.
//! With several threads the input is cut at sample boundaries (after a blank
//! line, where the Perl script resets all state), so the result is the same
//! as with one thread.

use crate::error::{Error, Result};
use crate::model::{Location, Profile, NO_PARENT};
use crate::perf::{
    event_line, event_name, is_kernel_module, is_perf_map, split_inline, stack_line, strip_offset,
    tidy_into, SrclineFilter, SrclineStep,
};
use rustc_hash::FxHashMap;
use std::io::{Read, Write};
use std::sync::mpsc;

/// Flags of stackcollapse-perf.pl (the addr2line-based ones are not offered).
#[derive(Clone, Debug, Default)]
pub struct PerfFoldOptions {
    /// `--pid`: append the PID to the process name.
    pub include_pid: bool,
    /// `--tid`: append PID and TID to the process name.
    pub include_tid: bool,
    /// `--kernel`: annotate kernel functions with `_[k]`.
    pub annotate_kernel: bool,
    /// `--jit`: annotate JIT functions with `_[j]`.
    pub annotate_jit: bool,
    /// `--addrs`: include raw addresses where symbols are unknown.
    pub include_addrs: bool,
    /// `--event-filter`: the event to keep (default: the first one seen).
    pub event_filter: Option<String>,
    /// Worker threads (1 = fold on the calling thread).
    pub threads: usize,
    /// Bytes per work unit (0 = 4 MiB); small values let tests exercise
    /// many sample-boundary cuts.
    pub chunk_bytes: usize,
}

/// Folded stacks with their counts.
#[derive(Debug, Default)]
pub struct Folded {
    /// Count per folded stack ("comm;outer;...;leaf").
    pub stacks: FxHashMap<Box<[u8]>, u64>,
    /// The event kept when several were present and none was asked for.
    pub event: Option<Vec<u8>>,
    /// Whether samples of other events were dropped.
    pub filtered_other_events: bool,
    /// Lines neither the sample header nor stack regex recognised.
    pub unrecognised: u64,
    /// The first unrecognised line's number (1-based).
    pub first_unrecognised: Option<u64>,
}

impl Folded {
    /// What a user should know about folding `name` (the input's name):
    /// that other events were dropped, and how many lines were skipped.
    pub fn notes(&self, name: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if let (true, Some(ev)) = (self.filtered_other_events, &self.event) {
            notes.push(format!(
                "filtering for events of type: {}",
                String::from_utf8_lossy(ev)
            ));
        }
        if self.unrecognised > 0 {
            notes.push(format!(
                "{name}: skipped {} unrecognised line{}, first at line {}",
                self.unrecognised,
                if self.unrecognised == 1 { "" } else { "s" },
                self.first_unrecognised.unwrap_or(0)
            ));
        }
        notes
    }

    /// Writes `stack count` lines sorted bytewise, as the Perl script does.
    pub fn write_sorted(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut keys: Vec<(&[u8], u64)> = self.stacks.iter().map(|(k, &v)| (&k[..], v)).collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut buf = itoa_buf();
        for (k, v) in keys {
            out.write_all(k)?;
            out.write_all(b" ")?;
            out.write_all(fmt_u64(&mut buf, v))?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn merge(&mut self, other: Folded) {
        if self.stacks.is_empty() {
            self.stacks = other.stacks;
        } else {
            for (k, v) in other.stacks {
                let c = self.stacks.entry(k).or_insert(0);
                *c = c.saturating_add(v);
            }
        }
        self.filtered_other_events |= other.filtered_other_events;
        self.unrecognised += other.unrecognised;
        self.first_unrecognised = earliest(self.first_unrecognised, other.first_unrecognised);
    }
}

/// The smaller of two optional line numbers (chunks finish out of order).
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

fn fmt_u64(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// The folding state machine of one worker (the Perl main loop).
struct Folder<'o> {
    opts: &'o PerfFoldOptions,
    /// `$event_filter`: fixed by the caller or set by the first event seen.
    filter: Option<Vec<u8>>,
    pname: Option<Vec<u8>>,
    /// `$m_period`: what the current sample adds to its stack's count.
    period: u64,
    /// Joined frames of each stack line, in input order (leaf first).
    frames: Vec<u8>,
    segments: Vec<(u32, u32)>,
    key: Vec<u8>,
    out: Folded,
}

impl<'o> Folder<'o> {
    fn new(opts: &'o PerfFoldOptions, filter: Option<Vec<u8>>) -> Self {
        Folder {
            opts,
            filter,
            pname: None,
            period: 1,
            frames: Vec::with_capacity(4096),
            segments: Vec::with_capacity(128),
            key: Vec::with_capacity(4096),
            out: Folded::default(),
        }
    }

    /// Perl's `not $pname`: undefined, "" and "0" are all false.
    fn pname_true(&self) -> bool {
        matches!(&self.pname, Some(p) if !p.is_empty() && p.as_slice() != b"0")
    }

    fn line(&mut self, line: &[u8], lineno: u64) {
        if line.first() == Some(&b'#') {
            return;
        }
        if line.is_empty() {
            if !self.pname_true() {
                return;
            }
            self.remember();
            return;
        }
        if let Some(ev) = event_line(line) {
            let mut period = 0u64;
            if let Some((p, event)) = event_name(line) {
                // Perl adds the digit string numerically; absent or 0 means 1.
                period = p.map_or(0, |p| {
                    p.iter().fold(0u64, |acc, &d| {
                        acc.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
                    })
                });
                match &self.filter {
                    None => self.filter = Some(event.to_vec()),
                    Some(f) if f.as_slice() != event => {
                        self.out.filtered_other_events = true;
                        return;
                    }
                    Some(_) => {}
                }
            }
            let mut p = Vec::with_capacity(ev.comm.len() + 16);
            p.extend_from_slice(ev.comm);
            if self.opts.include_tid || self.opts.include_pid {
                p.push(b'-');
                p.extend_from_slice(ev.pid.unwrap_or(b"?"));
                if self.opts.include_tid {
                    p.push(b'/');
                    p.extend_from_slice(ev.tid);
                }
            }
            for b in p.iter_mut() {
                if *b == b' ' {
                    *b = b'_';
                }
            }
            self.pname = Some(p);
            self.period = if period == 0 { 1 } else { period };
            return;
        }
        let Some(sl) = stack_line(line) else {
            self.out.unrecognised += 1;
            self.out.first_unrecognised.get_or_insert(lineno);
            return;
        };
        if !self.pname_true() {
            return;
        }
        let rawfunc = strip_offset(sl.rawfunc);
        if rawfunc.first() == Some(&b'(') {
            return;
        }
        // Perl: `$pname =~ m/^java/`, so "java-100/101" under --pid/--tid
        // is tidied too (FlameGraph's "Correctly detect java in -tid").
        let java = self
            .pname
            .as_deref()
            .is_some_and(|p| p.starts_with(b"java"));
        let seg_start = self.frames.len();
        let mut count = 0usize;
        for func in split_inline(rawfunc) {
            if count > 0 {
                self.frames.push(b';');
            }
            let start = self.frames.len();
            if func == b"[unknown]" {
                let mut name: Vec<u8> = Vec::with_capacity(32);
                name.push(b'[');
                if sl.module != b"[unknown]" {
                    let base = match memchr::memrchr(b'/', sl.module) {
                        Some(s) => &sl.module[s + 1..],
                        None => sl.module,
                    };
                    name.extend_from_slice(base);
                } else {
                    name.extend_from_slice(b"unknown");
                }
                if self.opts.include_addrs {
                    name.extend_from_slice(b" <");
                    name.extend_from_slice(sl.pc);
                    name.push(b'>');
                }
                name.push(b']');
                tidy_into(&mut self.frames, &name, java);
            } else {
                tidy_into(&mut self.frames, func, java);
            }
            let this = &self.frames[start..];
            if count > 0 {
                if memchr::memmem::find(this, b"_[i]").is_none() {
                    self.frames.extend_from_slice(b"_[i]");
                }
            } else if self.opts.annotate_kernel && is_kernel_module(sl.module) {
                self.frames.extend_from_slice(b"_[k]");
            } else if self.opts.annotate_jit
                && is_perf_map(sl.module)
                && memchr::memmem::find(this, b"_[j]").is_none()
            {
                self.frames.extend_from_slice(b"_[j]");
            }
            count += 1;
        }
        if count > 0 {
            self.segments
                .push((seg_start as u32, self.frames.len() as u32));
        }
    }

    fn remember(&mut self) {
        self.key.clear();
        if let Some(p) = &self.pname {
            self.key.extend_from_slice(p);
        }
        for &(s, e) in self.segments.iter().rev() {
            self.key.push(b';');
            self.key
                .extend_from_slice(&self.frames[s as usize..e as usize]);
        }
        match self.out.stacks.get_mut(&self.key[..]) {
            // Periods are input text: saturate rather than overflow.
            Some(c) => *c = c.saturating_add(self.period),
            None => {
                self.out
                    .stacks
                    .insert(self.key.clone().into_boxed_slice(), self.period);
            }
        }
        self.frames.clear();
        self.segments.clear();
        self.pname = None;
    }

    fn fold_chunk(&mut self, chunk: &[u8], first_line: u64) {
        // Chunks start at sample boundaries, where no source line can be
        // pending, so a fresh filter per chunk sees what one would.
        let mut srclines = SrclineFilter::default();
        let mut lineno = first_line;
        let mut from = 0;
        let line_end =
            |from: usize| memchr::memchr(b'\n', &chunk[from..]).map_or(chunk.len(), |e| from + e);
        while from < chunk.len() {
            let end = line_end(from);
            let next = (end + 1 < chunk.len()).then(|| &chunk[end + 1..line_end(end + 1)]);
            match srclines.step(&chunk[from..end], next) {
                SrclineStep::Skip => {}
                SrclineStep::Keep => self.line(&chunk[from..end], lineno),
                SrclineStep::Replace(done) => self.line(&done, lineno),
            }
            lineno += 1;
            from = end + 1;
        }
    }
}

/// The first event name the Perl script would pick as its default filter,
/// if `chunk` has an event line carrying one.
fn first_event(chunk: &[u8]) -> Option<Vec<u8>> {
    for line in chunk.split(|&b| b == b'\n') {
        if line.first() == Some(&b'#') {
            continue;
        }
        if event_line(line).is_some() {
            if let Some((_, ev)) = event_name(line) {
                return Some(ev.to_vec());
            }
        }
    }
    None
}

/// Reads the next chunk of about `size` bytes ending just after a blank line
/// (a sample boundary), or at end of input. `carry` holds bytes read past
/// the previous boundary.
fn next_chunk(
    reader: &mut dyn Read,
    carry: &mut Vec<u8>,
    size: usize,
    name: &str,
) -> Result<Option<Vec<u8>>> {
    let mut buf = std::mem::take(carry);
    // Bytes before `searched` hold no "\n\n": a sample (or a file without
    // blank lines) longer than many chunks is scanned once, not once per
    // chunk read.
    let mut searched = 0;
    let mut eof = false;
    loop {
        if buf.len() >= size || eof {
            // Cut after the last "\n\n" so the next chunk starts a sample.
            let cut = if eof {
                buf.len()
            } else {
                match memchr::memmem::rfind(&buf[searched..], b"\n\n") {
                    Some(i) => searched + i + 2,
                    None => {
                        // One sample larger than a chunk: read on.
                        searched = buf.len() - 1;
                        eof = read_more(reader, &mut buf, size, name)?;
                        continue;
                    }
                }
            };
            *carry = buf.split_off(cut);
            return Ok(if buf.is_empty() { None } else { Some(buf) });
        }
        let want = size.max(buf.len() + 64 * 1024) - buf.len();
        eof = read_more(reader, &mut buf, want, name)?;
    }
}

/// Appends up to `want` bytes; true at the end of the input. The space is
/// reserved, not zeroed: pages a small input never reaches are never
/// touched, and a large one is read without reallocating.
fn read_more(reader: &mut dyn Read, buf: &mut Vec<u8>, want: usize, name: &str) -> Result<bool> {
    buf.reserve(want);
    let n = reader
        .take(want as u64)
        .read_to_end(buf)
        .map_err(|e| Error::io(name, e))?;
    Ok(n < want)
}

/// Folds `perf script` output exactly like stackcollapse-perf.pl.
pub fn fold_perf(reader: &mut dyn Read, name: &str, opts: &PerfFoldOptions) -> Result<Folded> {
    let chunk_size = if opts.chunk_bytes == 0 {
        4 << 20
    } else {
        opts.chunk_bytes
    };
    let mut carry = Vec::new();
    let filter = opts.event_filter.as_ref().map(|e| e.as_bytes().to_vec());
    let defaulted = filter.is_none();
    let threads = opts.threads.max(1);
    let mut result = if threads == 1 {
        let mut folder = Folder::new(opts, filter);
        let mut line = 1u64;
        while let Some(chunk) = next_chunk(reader, &mut carry, chunk_size, name)? {
            folder.fold_chunk(&chunk, line);
            line += memchr::memchr_iter(b'\n', &chunk).count() as u64;
        }
        let event = folder.filter.take();
        let mut out = folder.out;
        out.event = event;
        out
    } else {
        fold_parallel(reader, name, opts, filter, threads, chunk_size, &mut carry)?
    };
    if !defaulted {
        result.event = None;
    }
    Ok(result)
}

fn fold_parallel(
    reader: &mut dyn Read,
    name: &str,
    opts: &PerfFoldOptions,
    mut filter: Option<Vec<u8>>,
    threads: usize,
    chunk_size: usize,
    carry: &mut Vec<u8>,
) -> Result<Folded> {
    // One bounded queue that any idle worker takes from: a worker that
    // the scheduler parks does not stall the others (round-robin would),
    // and at most 2 chunks per worker wait in memory.
    let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, Option<Vec<u8>>, u64)>(threads * 2);
    let rx = std::sync::Mutex::new(rx);
    std::thread::scope(|scope| {
        let rx = &rx;
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            handles.push(scope.spawn(move || {
                let mut total = Folded::default();
                loop {
                    let next = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => break,
                    };
                    let Ok((chunk, filter, line)) = next else {
                        break;
                    };
                    let mut f = Folder::new(opts, filter);
                    // Folded output of each chunk merges into the worker's map.
                    f.out.stacks = std::mem::take(&mut total.stacks);
                    f.fold_chunk(&chunk, line);
                    let out = f.out;
                    total.stacks = out.stacks;
                    total.filtered_other_events |= out.filtered_other_events;
                    total.unrecognised += out.unrecognised;
                    total.first_unrecognised =
                        earliest(total.first_unrecognised, out.first_unrecognised);
                }
                total
            }));
        }
        let mut line = 1u64;
        let mut read_err = None;
        loop {
            match next_chunk(reader, carry, chunk_size, name) {
                Ok(Some(chunk)) => {
                    let lines = memchr::memchr_iter(b'\n', &chunk).count() as u64;
                    // The default event is the first one in the file; decide
                    // it in order before handing the chunk to any worker.
                    let chunk_filter = filter.clone();
                    if filter.is_none() {
                        filter = first_event(&chunk);
                    }
                    if tx.send((chunk, chunk_filter, line)).is_err() {
                        break;
                    }
                    line += lines;
                }
                Ok(None) => break,
                Err(e) => {
                    read_err = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let mut result = Folded::default();
        let mut parts: Vec<Folded> = Vec::with_capacity(threads);
        for h in handles {
            match h.join() {
                Ok(part) => parts.push(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        // Merge the smaller maps into the largest.
        parts.sort_by_key(|p| std::cmp::Reverse(p.stacks.len()));
        for p in parts {
            result.merge(p);
        }
        if let Some(e) = read_err {
            return Err(e);
        }
        result.event = filter;
        Ok(result)
    })
}

/// Folds a parsed profile: `root;...;leaf weight` per distinct stack, sorted.
/// With `thread_root`, the process name (like stackcollapse-perf.pl) is the root.
pub fn fold_profile(profile: &Profile, thread_root: bool) -> Vec<(String, u64)> {
    let mut weights: FxHashMap<(u32, u32), u64> = FxHashMap::default();
    if let Some(counts) = &profile.counts {
        for (n, &c) in counts.iter().enumerate() {
            if c > 0 {
                let w = weights.entry((n as u32, u32::MAX)).or_insert(0);
                *w = w.saturating_add(c);
            }
        }
    } else {
        for i in 0..profile.samples.len() {
            let t = match (&profile.samples.thread, thread_root) {
                (Some(t), true) => t[i],
                _ => u32::MAX,
            };
            let w = weights.entry((profile.samples.node[i], t)).or_insert(0);
            *w = w.saturating_add(profile.samples.weight_of(i));
        }
    }
    let mut out: Vec<(String, u64)> = weights
        .into_iter()
        .map(|((node, thread), w)| {
            let mut s = String::new();
            if thread != u32::MAX {
                s.push_str(&profile.threads[thread as usize].comm.replace(' ', "_"));
            }
            let mut names = Vec::new();
            let mut n = node;
            while n != NO_PARENT {
                names.push(&profile.frames[profile.node_frame[n as usize] as usize].name);
                n = profile.parent[n as usize];
            }
            for name in names.iter().rev() {
                if !s.is_empty() || thread != u32::MAX {
                    s.push(';');
                }
                s.push_str(&name.replace(';', ":"));
            }
            (s, w)
        })
        .collect();
    out.sort_unstable();
    // Distinct nodes may fold to the same text (e.g. after ';' replacement).
    out.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 = a.1.saturating_add(b.1);
            true
        } else {
            false
        }
    });
    out
}

/// [`fold_profile`] as folded text, one `stack weight` line each, with the
/// process name as root when the profile has threads (as
/// stackcollapse-perf.pl does), for `.folded` and `.svg` outputs.
pub fn folded_text(profile: &Profile) -> String {
    let mut s = String::new();
    for (stack, w) in fold_profile(profile, profile.samples.thread.is_some()) {
        s.push_str(&stack);
        s.push(' ');
        s.push_str(&w.to_string());
        s.push('\n');
    }
    s
}

/// Convenience: fold perf text from a buffered reader (tests, fuzzing).
pub fn fold_perf_str(text: &str, opts: &PerfFoldOptions) -> Result<String> {
    let mut r = text.as_bytes();
    let f = fold_perf(&mut r, "<memory>", opts)?;
    let mut out = Vec::new();
    f.write_sorted(&mut out)
        .map_err(|e| Error::io("<memory>", e))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Where the first unrecognised line was, for messages.
pub fn unrecognised_location(f: &Folded) -> Option<Location> {
    f.first_unrecognised.map(Location::Line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(text: &str, opts: PerfFoldOptions) -> String {
        fold_perf_str(text, &opts).unwrap()
    }

    #[test]
    fn notes_name_the_kept_event_and_skipped_lines() {
        let f = Folded {
            event: Some(b"cycles".to_vec()),
            filtered_other_events: true,
            unrecognised: 2,
            first_unrecognised: Some(7),
            ..Folded::default()
        };
        assert_eq!(
            f.notes("x.perf"),
            [
                "filtering for events of type: cycles",
                "x.perf: skipped 2 unrecognised lines, first at line 7"
            ]
        );
        assert!(Folded::default().notes("x").is_empty());
    }

    #[test]
    fn folded_text_is_one_sorted_line_per_stack() {
        let p = crate::folded::parse(&mut "a;b 2\na;c 1\na;b 1\n".as_bytes(), "t").unwrap();
        assert_eq!(folded_text(&p), "a;b 3\na;c 1\n");
    }

    const TWO: &str = "java 100/101 [000] 1.000001:    1001001 cpu-clock: \n\
        \t    7f6d Lcom/example/Foo;.bar(I)V+0x3 (/tmp/perf-100.map)\n\
        \t    ffff native_safe_halt+0x5 ([kernel.kallsyms])\n\
        \t    1234 main (/usr/bin/java)\n\
        \n\
        V8 Worker 7/8 [001] 1.000002:    1001001 cpu-clock: \n\
        \t    55 [unknown] (/usr/lib/libfoo.so)\n\
        \t    56 [unknown] ([unknown])\n\
        \t    57 outer->inner1->inner2 (/usr/bin/node)\n\
        \n";

    #[test]
    fn annotations_and_names_follow_the_perl_script() {
        assert_eq!(
            fold(TWO, PerfFoldOptions::default()),
            "V8_Worker;outer;inner1_[i];inner2_[i];[unknown];[libfoo.so] 1001001\n\
             java;main;native_safe_halt;com/example/Foo:.bar 1001001\n"
        );
        let all = PerfFoldOptions {
            annotate_jit: true,
            annotate_kernel: true,
            include_tid: true,
            include_pid: true,
            include_addrs: true,
            ..Default::default()
        };
        // The current Perl script tests `$pname =~ m/^java/`: "java-100/101"
        // is still Java (before FlameGraph's 2017 fix it was left untidied).
        assert_eq!(
            fold(TWO, all),
            "V8_Worker-7/8;outer;inner1_[i];inner2_[i];[unknown <56>];[libfoo.so <55>] 1001001\n\
             java-100/101;main;native_safe_halt_[k];com/example/Foo:.bar_[j] 1001001\n"
        );
    }

    /// `perf script -F+srcline` of a DWARF recording (perf 6.1): a source
    /// line under each frame, an inlined frame without its module.
    const SRCLINE: &str = "busy 7/7 1.0:    1001001 cpu-clock:ppp: \n\
        \t            11db leaf_a+0x2b (/tmp/busy)\n  busy.c:4\n\
        \t            1265 inl+0x15\n  busy.c:6 (inlined)\n\
        \t            1265 mid+0x15 (/tmp/busy)\n  busy.c:7\n\
        \t           27304 __libc_start_main_impl+0x84\n  libc-start.c:360 (inlined)\n\
        \t            10e0 _start+0x20 (/tmp/busy)\n  ??:0\n\n";
    const PLAIN: &str = "busy 7/7 1.0:    1001001 cpu-clock:ppp: \n\
        \t            11db leaf_a+0x2b (/tmp/busy)\n\
        \t            1265 inl+0x15 (inlined)\n\
        \t            1265 mid+0x15 (/tmp/busy)\n\
        \t           27304 __libc_start_main_impl+0x84 (inlined)\n\
        \t            10e0 _start+0x20 (/tmp/busy)\n\n";

    #[test]
    fn source_lines_are_not_frames() {
        let want = "busy;_start;__libc_start_main_impl;mid;inl;leaf_a 1001001\n";
        assert_eq!(fold(PLAIN, PerfFoldOptions::default()), want);
        let f = fold_perf(&mut SRCLINE.as_bytes(), "t", &PerfFoldOptions::default()).unwrap();
        assert_eq!(f.unrecognised, 0);
        for threads in [1, 2] {
            let opts = PerfFoldOptions {
                threads,
                chunk_bytes: 7,
                ..Default::default()
            };
            assert_eq!(
                fold(&SRCLINE.repeat(3), opts),
                want.replace(" 1001001", " 3003003")
            );
        }
        // The profile parser agrees.
        let (p, _) = crate::perf::parse(&mut SRCLINE.as_bytes(), "t", &Default::default()).unwrap();
        assert_eq!(
            folded_text(&p),
            "busy;_start;__libc_start_main_impl;mid;inl;leaf_a 1\n"
        );
        assert!(p.damage.report().is_none());
        // Two-space lines are source lines only under a tab-indented frame.
        let spaced = "busy 7 1.0: 1 cpu-clock:\n  11db leaf_a (/b)\n  1265 main (/b)\n\n";
        assert_eq!(
            fold(spaced, PerfFoldOptions::default()),
            "busy;main;leaf_a 1\n"
        );
    }

    #[test]
    fn period_is_read_even_with_two_spaces_before_the_event() {
        let t = "busy 1 1.0:    2004008  cpu-clock: \n\t 1 f (/b)\n\nbusy 1 1.1: cpu-clock: \n\t 1 f (/b)\n\n";
        assert_eq!(fold(t, PerfFoldOptions::default()), "busy;f 2004009\n");
    }

    #[test]
    fn a_sample_of_skipped_frames_counts_as_the_process() {
        let t = "lto cgu.01 5/6 1.0: 1 cpu-clock:\n\t 8b (anonymous namespace)::run (/x.so)\n\n";
        assert_eq!(fold(t, PerfFoldOptions::default()), "lto_cgu.01 1\n");
    }

    #[test]
    fn events_default_to_the_first_and_can_be_chosen() {
        let t = "ab 1 1.0: 1 cycles:\n\t 1 f (/b)\n\nab 1 1.1: 1 instructions:\n\t 1 g (/b)\n\n";
        let f = fold_perf(&mut t.as_bytes(), "t", &PerfFoldOptions::default()).unwrap();
        assert!(f.filtered_other_events);
        assert_eq!(f.event.as_deref(), Some(&b"cycles"[..]));
        let opts = PerfFoldOptions {
            event_filter: Some("instructions".into()),
            ..Default::default()
        };
        assert_eq!(fold(t, opts), "ab;g 1\n");
        // Perl's /^(\S.+?)\s+(\d+).../ needs two characters of comm: a
        // one-letter comm swallows the following fields.
        let t = "a 1 1.0: 1 cycles:\n\t 1 f (/b)\n\n";
        assert_eq!(fold(t, PerfFoldOptions::default()), "a_1_1.0:;f 1\n");
    }

    #[test]
    fn parallel_folding_matches_sequential_on_any_cut() {
        let mut t = String::new();
        for i in 0..200 {
            let ev = if i % 7 == 3 {
                "task-clock"
            } else {
                "cpu-clock"
            };
            t.push_str(&format!(
                "p{} {} 1.{i:06}: {} {ev}:\n\t 1 f{} (/b)\n\t 2 main (/b)\n\n",
                i % 3,
                i,
                i % 5 + 1,
                i % 11
            ));
        }
        let one = fold(&t, PerfFoldOptions::default());
        for chunk in [1, 7, 64, 1000] {
            for threads in [1, 2, 3] {
                let opts = PerfFoldOptions {
                    threads,
                    chunk_bytes: chunk,
                    ..Default::default()
                };
                assert_eq!(fold(&t, opts), one, "chunk {chunk} threads {threads}");
            }
        }
    }

    #[test]
    fn periods_saturate() {
        // Crash input for the collapse_perf fuzz target: two samples of one
        // stack whose periods add past u64::MAX.
        let s = "java 100/101 [000] 1.000001: 18446744073709551615 cycles: \n\t 1 f (/b)\n\n";
        let text = s.repeat(3);
        for threads in [1, 2] {
            let opts = PerfFoldOptions {
                threads,
                chunk_bytes: 16,
                ..Default::default()
            };
            assert_eq!(fold(&text, opts), "java;f 18446744073709551615\n");
        }
    }

    #[test]
    fn input_without_blank_lines_is_scanned_once() {
        // `perf script` without call chains has no blank line at all, so
        // the whole input is one "sample" longer than any chunk. Scanning
        // the buffer again after every read made this quadratic: 8 MiB in
        // 64-byte reads took hours; one pass takes well under a second.
        let line = b"java 100/101 [000] 1.000001: 1001 cpu-clock: 7f6d f+0x3 (/b)\n";
        let text: Vec<u8> = line.iter().copied().cycle().take(8 << 20).collect();
        let started = std::time::Instant::now();
        let mut carry = Vec::new();
        let chunk = next_chunk(&mut &text[..], &mut carry, 64, "t").unwrap();
        assert_eq!(chunk.as_deref(), Some(&text[..]));
        assert!(next_chunk(&mut &b""[..], &mut carry, 64, "t")
            .unwrap()
            .is_none());
        let took = started.elapsed();
        assert!(took.as_secs() < 30, "took {took:?}");
    }
}
