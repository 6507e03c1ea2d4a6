//! bpftrace map output of stack aggregations: `@[kstack, ustack, comm] =
//! count()` (or `sum()`), printed at exit as
//!
//! ```text
//! Attaching 1 probe...
//!
//! @[
//!         do_syscall_64+91
//!         entry_SYSCALL_64_after_hwframe+68
//! ,
//!         __GI___write+20
//!         main+40
//! , busy]: 42
//! ```
//!
//! Each stack field is printed leaf first and the fields in key order, so
//! the frames of all stack fields read as one stack, leaf first (a kernel
//! stack inside its user stack); scalar fields (comm, pid) become the
//! outermost frames, as stackcollapse-bpftrace.pl roots stacks at the comm.
//! Offsets (`+91`) are cut, so one function is one frame.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameId, FrameKind, Location, Profile, Unit, NO_PARENT};
use rustc_hash::FxHashMap;
use std::io::BufRead;

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Bpftrace,
    name: "bpftrace",
    aliases: &[],
    description: "bpftrace stack maps",
    text: true,
    looks_like,
    read: |input, _| {
        let name = input.name.clone();
        parse(&mut input.into_reader(), &name).map(Parsed::from)
    },
};

/// Where a map entry's key starts: `@[` or `@name[`.
fn entry_start(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"@")?;
    let open = memchr::memchr(b'[', rest)?;
    rest[..open]
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        .then(|| &rest[open + 1..])
}

/// The end of a key: `...]: 42` gives ("...", Some(42)); `...]:` without a
/// number (a histogram or a non-numeric value) gives ("...", None).
fn entry_end(line: &[u8]) -> Option<(&[u8], Option<u64>)> {
    let at = memchr::memmem::rfind(line, b"]:")?;
    let value = line[at + 2..].trim_ascii();
    let n = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
    if n.is_none() && !value.is_empty() {
        return None;
    }
    Some((&line[..at], n))
}

/// Whether text starts like bpftrace output: optionally the "Attaching N
/// probe" banner, then a map entry whose key holds a stack (`@[` alone on
/// its line, or `@name[` followed by indented frames).
pub fn looks_like(head: &[u8]) -> bool {
    let mut lines = head
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty());
    let mut first = lines.next();
    if first.is_some_and(|l| {
        l.starts_with(b"Attaching ") && memchr::memmem::find(l, b" probe").is_some()
    }) {
        first = lines.next();
    }
    match first.and_then(entry_start) {
        // The entry must go on to a frame line or its end.
        Some(rest) if entry_end(rest).is_none() => lines
            .next()
            .is_some_and(|l| l.first().is_some_and(|&b| b == b' ' || b == b'\t')),
        Some(_) => lines.next().is_none_or(|l| entry_start(l).is_some()),
        // The banner alone (a run with no map printed yet) is bpftrace too.
        None => first.is_none() && head.starts_with(b"Attaching "),
    }
}

/// Cuts bpftrace's decimal offset (`main+40`) or perf's (`main+0x28`).
fn strip_offset(frame: &[u8]) -> &[u8] {
    match memchr::memrchr(b'+', frame) {
        Some(p)
            if p > 0
                && p + 1 < frame.len()
                && (frame[p + 1..].iter().all(u8::is_ascii_digit)
                    || (frame[p + 1..].starts_with(b"0x")
                        && frame[p + 3..].iter().all(u8::is_ascii_hexdigit))) =>
        {
            &frame[..p]
        }
        _ => frame,
    }
}

/// One frame line: `func+off`, `0x7f...` (unresolved) or, with
/// `ustack(perf)`, `7f12 func+0x12 (/lib/x.so)`.
fn frame_of(text: &[u8]) -> RawFrame {
    if let Some(sl) = crate::perf::stack_line(text) {
        if sl.pc.iter().all(u8::is_ascii_hexdigit) {
            let f = crate::perf::strip_offset(sl.rawfunc).trim_ascii();
            let module = String::from_utf8_lossy(sl.module).into_owned();
            let kind = if crate::perf::is_kernel_module(sl.module) {
                FrameKind::Kernel
            } else if f == b"[unknown]" {
                FrameKind::Unknown
            } else {
                FrameKind::Native
            };
            return (String::from_utf8_lossy(f).into_owned(), module, kind);
        }
    }
    let f = strip_offset(text);
    let kind = if f.starts_with(b"0x") && f[2..].iter().all(u8::is_ascii_hexdigit) {
        FrameKind::Unknown
    } else {
        FrameKind::Native
    };
    (String::from_utf8_lossy(f).into_owned(), String::new(), kind)
}

/// Scalar key fields of a key fragment ("busy, 1234" or ", busy").
fn scalars(fragment: &[u8], into: &mut Vec<String>) {
    for s in fragment.split(|&b| b == b',') {
        let s = s.trim_ascii();
        if !s.is_empty() {
            into.push(String::from_utf8_lossy(s).into_owned());
        }
    }
}

/// A frame as read: name, module, kind.
pub(crate) type RawFrame = (String, String, FrameKind);

/// Aggregated stacks being built: a profile in counts form.
pub(crate) struct Aggregate {
    pub(crate) profile: Profile,
    counts: Vec<u64>,
    frames: FxHashMap<RawFrame, FrameId>,
    pub(crate) entries: u64,
}

impl Aggregate {
    pub(crate) fn new(name: &str) -> Self {
        Aggregate {
            profile: Profile::new(name, Unit::Samples),
            counts: Vec::new(),
            frames: FxHashMap::default(),
            entries: 0,
        }
    }

    /// Adds `count` for a stack given as root frames (outermost first) and
    /// leaf-first frames.
    pub(crate) fn add(&mut self, roots: &[String], leaf_first: &[RawFrame], count: u64) {
        let mut node = NO_PARENT;
        let roots = roots
            .iter()
            .map(|r| (r.clone(), String::new(), FrameKind::Unknown));
        for key in roots.chain(leaf_first.iter().rev().cloned()) {
            let id = match self.frames.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.profile.frame_parts(&key.0, &key.1, key.2);
                    self.frames.insert(key, id);
                    id
                }
            };
            node = self.profile.child(node, id);
        }
        self.entries += 1;
        if node == NO_PARENT {
            return;
        }
        if self.counts.len() < self.profile.node_count() {
            self.counts.resize(self.profile.node_count(), 0);
        }
        // Counts are input text: saturate rather than overflow.
        self.counts[node as usize] = self.counts[node as usize].saturating_add(count);
    }

    /// The profile; a format that found no entry says so.
    pub(crate) fn finish(mut self, name: &str, what: &str) -> Result<Profile> {
        if self.counts.iter().all(|&c| c == 0) {
            return Err(Error::Empty {
                path: name.into(),
                why: format!("{what} with no stack counts in it"),
            });
        }
        self.counts.resize(self.profile.node_count(), 0);
        self.profile.counts = Some(self.counts);
        Ok(self.profile)
    }
}

/// Parses bpftrace map output into a profile in counts form.
pub fn parse(reader: &mut dyn BufRead, name: &str) -> Result<Profile> {
    let mut agg = Aggregate::new(name);
    let mut line = Vec::with_capacity(256);
    let mut lineno = 0u64;
    // The entry being read: scalar fields and leaf-first frames.
    let mut open: Option<(u64, Vec<String>, Vec<RawFrame>)> = None;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(name, e))?
            == 0
        {
            break;
        }
        lineno += 1;
        let text = line.trim_ascii_end();
        if let Some((start, roots, frames)) = open.as_mut() {
            let indented = text.first().is_some_and(|&b| b == b' ' || b == b'\t');
            if !indented {
                if let Some((key, value)) = entry_end(text) {
                    let Some(count) = value else {
                        return Err(Error::malformed(
                            name,
                            Location::Line(lineno),
                            "a count() or sum() value after the key (histograms are not stacks)",
                        ));
                    };
                    scalars(key, roots);
                    agg.add(roots, frames, count);
                    open = None;
                    continue;
                }
                if text.starts_with(b",") {
                    scalars(&text[1..], roots);
                    continue;
                }
                return Err(Error::malformed(
                    name,
                    Location::Line(*start),
                    "a map entry ending in `]: COUNT`",
                ));
            }
            let f = text.trim_ascii();
            if !f.is_empty() {
                frames.push(frame_of(f));
            }
            continue;
        }
        if text.is_empty() || (lineno == 1 && text.starts_with(b"Attaching ")) {
            continue;
        }
        let Some(rest) = entry_start(text) else {
            agg.profile.damage.skip(Location::Line(lineno), || {
                "a bpftrace map entry (@[...]: COUNT)".into()
            });
            continue;
        };
        match entry_end(rest) {
            // One line: a key without a stack (`@[busy]: 3`).
            Some((key, Some(count))) => {
                let mut roots = Vec::new();
                scalars(key, &mut roots);
                agg.add(&roots, &[], count);
            }
            Some((_, None)) => {
                return Err(Error::malformed(
                    name,
                    Location::Line(lineno),
                    "a count() or sum() value after the key (histograms are not stacks)",
                ))
            }
            None => {
                let mut roots = Vec::new();
                scalars(rest, &mut roots);
                open = Some((lineno, roots, Vec::new()));
            }
        }
    }
    if let Some((start, _, _)) = open {
        agg.profile.damage.skip(Location::Line(start), || {
            "a map entry ending in `]: COUNT` (output cut short?)".into()
        });
    }
    agg.finish(name, "bpftrace output")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Vec<(String, u64)> {
        let p = parse(&mut text.as_bytes(), "t").unwrap();
        crate::collapse::fold_profile(&p, false)
    }

    const KU: &str = "Attaching 1 probe...\n\n\n@[\n        do_syscall_64+91\n        entry_SYSCALL_64_after_hwframe+68\n, \n        __GI___write+20\n        main+40\n        0x7f00aa\n, busy]: 42\n@[\n        leaf+3\n, \n        main+40\n, busy]: 8\n";

    #[test]
    fn kernel_user_and_comm_fold_root_first() {
        assert!(looks_like(KU.as_bytes()));
        assert!(!crate::perf::looks_like(KU.as_bytes()));
        assert_eq!(
            folded(KU),
            [
                (
                    "busy;0x7f00aa;main;__GI___write;entry_SYSCALL_64_after_hwframe;do_syscall_64"
                        .to_owned(),
                    42
                ),
                ("busy;main;leaf".to_owned(), 8)
            ]
        );
    }

    #[test]
    fn a_real_capture_reads_as_bpftrace_printed_it() {
        // bpftrace 0.17, `@[kstack, ustack, comm] = count()` on a C program:
        // no kernel stack prints as "@[, ".
        let t = include_bytes!("../tests/data/busy.bpftrace.txt");
        assert_eq!(crate::format::detect(t), Some(Format::Bpftrace));
        let p = parse(&mut &t[..], "t").unwrap();
        assert_eq!(
            crate::collapse::fold_profile(&p, false),
            [
                ("busy;__libc_start_call_main;main;leaf_a".to_owned(), 42),
                ("busy;__libc_start_call_main;main;leaf_b".to_owned(), 17)
            ]
        );
    }

    #[test]
    fn scalar_keys_and_perf_mode_frames() {
        let t = "@samples[busy, 7, \n\t7f12 leaf+0x12 (/usr/bin/busy)\n\tffffffff81 do_x+0x5 ([kernel.kallsyms])\n]: 5\n@[idle]: 3\n";
        assert!(looks_like(t.as_bytes()));
        let p = parse(&mut t.as_bytes(), "t").unwrap();
        assert_eq!(
            crate::collapse::fold_profile(&p, false),
            [("busy;7;do_x;leaf".to_owned(), 5), ("idle".to_owned(), 3)]
        );
        assert!(p
            .frames
            .iter()
            .any(|f| f.name == "do_x" && f.kind == FrameKind::Kernel));
    }

    #[test]
    fn edges_are_errors_not_guesses() {
        // The banner alone: recognised, but no stacks.
        let e = parse(&mut "Attaching 1 probe...\n".as_bytes(), "t").unwrap_err();
        assert!(matches!(e, Error::Empty { .. }), "{e}");
        // A histogram is not a stack count.
        let e = parse(&mut "@[\n    f+1\n]:\n[1]  3 |@@@|\n".as_bytes(), "t").unwrap_err();
        assert!(e.to_string().contains("histograms"), "{e}");
        // An entry cut short is damage, the complete ones are kept.
        let p = parse(&mut "@[\n    f+1\n]: 2\n@[\n    g+1\n".as_bytes(), "t").unwrap();
        assert!(p.damage.report().is_some());
        assert!(!looks_like(b"main;f 3\n"));
        assert!(!looks_like(b"java 1/2 1.0: 1 cpu-clock:\n\t1 f (/b)\n"));
    }

    #[test]
    fn random_text_never_panics() {
        let mut seed = 0x2545F4914F6CDD1Du64;
        for _ in 0..2000 {
            let mut t = Vec::new();
            for _ in 0..(seed % 64) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                t.push(b"@[]:, +0x9f\n\tab"[(seed % 15) as usize]);
            }
            let _ = parse(&mut &t[..], "t");
            let _ = looks_like(&t);
        }
    }
}
