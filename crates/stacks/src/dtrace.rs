//! DTrace aggregated stacks: what `dtrace -n 'profile-997 { @[ustack()] =
//! count(); }'` (or `stack()`, `jstack()`, with scalar keys such as
//! `execname`) prints at exit:
//!
//! ```text
//! CPU     ID                    FUNCTION:NAME
//!   0  64091                        :tick-60s
//!
//!               libc.so.1`_write+0x15
//!               busy`main+0x20
//!                12
//! ```
//!
//! Frames are leaf first, `module`function+offset`; the entry ends with its
//! count alone on a line. Scalar key lines before the first frame become
//! the outermost frames, as a comm does in stackcollapse-perf.pl.

use crate::bpftrace::{Aggregate, RawFrame};
use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameKind, Location, Profile};
use std::io::BufRead;

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Dtrace,
    name: "dtrace",
    aliases: &[],
    description: "DTrace aggregated stacks",
    text: true,
    looks_like,
    read: |input, _| {
        let name = input.name.clone();
        parse(&mut input.into_reader(), &name).map(Parsed::from)
    },
};

/// A count line: digits alone, indented.
fn count_line(t: &[u8]) -> Option<u64> {
    let v = t.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// A frame line: `module`func+0x1f`, `module`0x1f` or a bare `0x7fff...`.
fn frame_line(t: &[u8]) -> Option<RawFrame> {
    let v = t.trim_ascii();
    if v.is_empty() || v.iter().any(|&b| b == b' ' || b == b'\t') {
        return None;
    }
    let hex =
        |s: &[u8]| s.len() > 2 && s.starts_with(b"0x") && s[2..].iter().all(u8::is_ascii_hexdigit);
    match memchr::memchr(b'`', v) {
        Some(q) => {
            let (module, func) = (&v[..q], &v[q + 1..]);
            let func = match memchr::memrchr(b'+', func) {
                Some(p) if p > 0 && hex(&func[p + 1..]) => &func[..p],
                _ => func,
            };
            let kind = if hex(func) {
                FrameKind::Unknown
            } else if module == b"unix" || module == b"genunix" || module.starts_with(b"vmlinux") {
                FrameKind::Kernel
            } else {
                FrameKind::Native
            };
            let name = if kind == FrameKind::Unknown {
                format!("[{}]", String::from_utf8_lossy(module))
            } else {
                String::from_utf8_lossy(func).into_owned()
            };
            Some((name, String::from_utf8_lossy(module).into_owned(), kind))
        }
        None if hex(v) => Some(("[unknown]".into(), String::new(), FrameKind::Unknown)),
        None => None,
    }
}

fn is_header(t: &[u8]) -> bool {
    t.starts_with(b"CPU") && memchr::memmem::find(t, b"FUNCTION:NAME").is_some()
}

/// Whether text starts like DTrace aggregation output: the optional probe
/// header, then indented frame lines with a backtick, ending in a count.
pub fn looks_like(head: &[u8]) -> bool {
    let mut lines = head.split(|&b| b == b'\n').peekable();
    if lines.peek().is_some_and(|l| is_header(l)) {
        lines.next();
        // The probe line ("  0  64091   :tick-60s").
        lines.next();
    }
    let mut frames = 0;
    for l in lines {
        if l.trim_ascii().is_empty() {
            continue;
        }
        if !l.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            return false;
        }
        if count_line(l).is_some() {
            return frames > 0;
        }
        match frame_line(l) {
            Some(_) if memchr::memchr(b'`', l).is_some() => frames += 1,
            Some(_) => {}
            None if frames == 0 => {}
            None => return false,
        }
    }
    false
}

/// Parses DTrace aggregation output into a profile in counts form.
pub fn parse(reader: &mut dyn BufRead, name: &str) -> Result<Profile> {
    let mut agg = Aggregate::new(name);
    let mut line = Vec::with_capacity(256);
    let mut lineno = 0u64;
    let mut roots: Vec<String> = Vec::new();
    let mut frames = Vec::new();
    let mut header = 0;
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
        let t = line.trim_ascii_end();
        if header == 0 && is_header(t) {
            header = 1;
            continue;
        }
        if header == 1 {
            // The probe line under the header.
            header = 2;
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if let Some(count) = count_line(t) {
            agg.add(&roots, &frames, count);
            roots.clear();
            frames.clear();
            continue;
        }
        match frame_line(t) {
            Some(f) => frames.push(f),
            None if frames.is_empty() => {
                roots.push(String::from_utf8_lossy(t.trim_ascii()).into_owned())
            }
            None => {
                agg.profile.damage.skip(Location::Line(lineno), || {
                    "a frame (module`function+offset) or a count".into()
                });
            }
        }
    }
    if !frames.is_empty() {
        agg.profile.damage.skip(Location::Line(lineno), || {
            "a count ending the last stack (output cut short?)".into()
        });
    }
    agg.finish(name, "DTrace output")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "CPU     ID                    FUNCTION:NAME\n  0  64091                        :tick-60s \n\n\n              libc.so.1`_write+0x15\n              busy`main+0x20\n              busy`_start+0x7d\n                12\n\n              genunix`cv_broadcast+0x1\n              unix`sys_syscall+0x17a\n                3\n";

    #[test]
    fn stacks_fold_root_first_without_offsets() {
        assert!(looks_like(T.as_bytes()));
        assert!(!crate::perf::looks_like(T.as_bytes()));
        assert_eq!(crate::format::detect(T.as_bytes()), Some(Format::Dtrace));
        let p = parse(&mut T.as_bytes(), "t").unwrap();
        assert_eq!(
            crate::collapse::fold_profile(&p, false),
            [
                ("_start;main;_write".to_owned(), 12),
                ("sys_syscall;cv_broadcast".to_owned(), 3)
            ]
        );
        assert!(p
            .frames
            .iter()
            .any(|f| f.name == "cv_broadcast" && f.kind == FrameKind::Kernel));
    }

    #[test]
    fn scalar_keys_become_roots_and_addresses_unknown() {
        let t =
            "\n  busy\n              busy`0x401a2f\n              0x7fff1234\n                4\n";
        assert!(looks_like(t.as_bytes()));
        let p = parse(&mut t.as_bytes(), "t").unwrap();
        assert_eq!(
            crate::collapse::fold_profile(&p, false),
            [("busy;[unknown];[busy]".to_owned(), 4)]
        );
    }

    #[test]
    fn edges() {
        // Header without aggregation: recognised as nothing to read.
        let e = parse(
            &mut "CPU     ID                    FUNCTION:NAME\n  0  1  :END\n".as_bytes(),
            "t",
        )
        .unwrap_err();
        assert!(matches!(e, Error::Empty { .. }), "{e}");
        // Cut short: complete stacks kept, the rest reported.
        let p = parse(&mut "  a`f+0x1\n   2\n  a`g+0x1\n".as_bytes(), "t").unwrap();
        assert!(p.damage.report().is_some());
        assert!(!looks_like(b"main;f 3\n"));
        assert!(!looks_like(b"@[\n  f+1\n]: 3\n"));
    }
}
