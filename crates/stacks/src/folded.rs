//! Folded stacks (`root;caller;leaf count`), as stackcollapse-* print them.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameId, FrameKind, Location, Profile, Unit};
use rustc_hash::FxHashMap;
use std::io::BufRead;

/// Kind annotations stackcollapse-perf.pl appends (`--kernel`, `--jit`, inline).
fn kind_of(name: &str) -> (&str, FrameKind) {
    if let Some(n) = name.strip_suffix("_[k]") {
        (n, FrameKind::Kernel)
    } else if let Some(n) = name.strip_suffix("_[j]") {
        (n, FrameKind::Jit)
    } else if let Some(n) = name.strip_suffix("_[i]") {
        (n, FrameKind::Inlined)
    } else if name == "[unknown]" {
        (name, FrameKind::Unknown)
    } else {
        (name, FrameKind::Native)
    }
}

/// Splits a folded line into stack and count; `None` if it has no count.
pub fn split_line(line: &str) -> Option<(&str, u64)> {
    let line = line.trim_end();
    let (stack, count) = line.rsplit_once([' ', '\t'])?;
    let count: u64 = count.parse().ok()?;
    let stack = stack.trim_end();
    (!stack.is_empty()).then_some((stack, count))
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Folded,
    name: "folded",
    aliases: &["collapsed"],
    description: "folded stacks",
    text: true,
    looks_like,
    read: |input, _| {
        let name = input.name.clone();
        parse(&mut input.into_reader(), &name).map(Parsed::from)
    },
};

/// Parses folded stacks into a profile in counts form.
pub fn parse(reader: &mut dyn BufRead, name: &str) -> Result<Profile> {
    let mut profile = Profile::new(name, Unit::Samples);
    let mut counts: Vec<u64> = Vec::new();
    let mut frames: FxHashMap<String, FrameId> = FxHashMap::default();
    let mut line = String::new();
    let mut lineno = 0u64;
    let mut raw = Vec::new();
    let mut good = 0u64;
    loop {
        raw.clear();
        let n = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| Error::io(name, e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        line.clear();
        line.push_str(&String::from_utf8_lossy(&raw));
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() || text.starts_with('#') {
            continue;
        }
        let Some((stack, count)) = split_line(text) else {
            profile.damage.skip(Location::Line(lineno), || {
                "a folded stack line (frame;frame;... count)".into()
            });
            continue;
        };
        good += 1;
        let mut node = crate::model::NO_PARENT;
        for f in stack.split(';') {
            let id = match frames.get(f) {
                Some(&id) => id,
                None => {
                    let (n, kind) = kind_of(f);
                    let id = profile.frame_parts(n, "", kind);
                    frames.insert(f.to_owned(), id);
                    id
                }
            };
            node = profile.child(node, id);
        }
        if counts.len() < profile.node_count() {
            counts.resize(profile.node_count(), 0);
        }
        // Counts are user text: saturate rather than overflow.
        counts[node as usize] = counts[node as usize].saturating_add(count);
    }
    if good == 0 {
        let at = profile
            .damage
            .first
            .as_ref()
            .map_or(Location::Line(1), |(l, _)| *l);
        return Err(Error::malformed(
            name,
            at,
            "a folded stack line (frame;frame;... count)",
        ));
    }
    counts.resize(profile.node_count(), 0);
    profile.counts = Some(counts);
    Ok(profile)
}

/// Whether text looks like folded stacks: most non-empty early lines end in a
/// count (a minority of damaged lines is reported as damage, not rejected).
/// JSON (a first `{` or `[`) never is: a JSON profile of a format not
/// recognised would otherwise read as one sample whose frame is the text.
pub fn looks_like(head: &[u8]) -> bool {
    if matches!(
        head.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    ) {
        return false;
    }
    let text = String::from_utf8_lossy(head);
    let mut lines = 0;
    let mut ok = 0;
    for l in text.lines().take(50) {
        if l.trim().is_empty() {
            continue;
        }
        lines += 1;
        if split_line(l).is_some() && !l.starts_with(|c: char| c.is_whitespace()) {
            ok += 1;
        }
    }
    lines > 0 && ok * 2 > lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_saturate() {
        // Crash input for the folded fuzz target: two lines of one stack
        // whose counts add past u64::MAX.
        let text = "a;b 18446744073709551615\na;b 1\nc 18446744073709551615\n";
        let p = parse(&mut text.as_bytes(), "t").unwrap();
        assert_eq!(p.counts.as_ref().unwrap().iter().max(), Some(&u64::MAX));
        assert_eq!(p.total_weight(), u64::MAX);
        assert_eq!(p.self_weights().iter().max(), Some(&u64::MAX));
        let folded = crate::collapse::fold_profile(&p, false);
        assert_eq!(folded[0], ("a;b".to_string(), u64::MAX));
    }
}
