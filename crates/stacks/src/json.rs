//! Profile JSON (docs/profile-json.md), written column by column straight
//! into a byte buffer: no intermediate value tree, so 1,000,000+ samples
//! serialise in well under a second.

use crate::diff::Diff;
use crate::model::{FrameKind, Profile, NO_PARENT};
use std::io::Write;

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Milliseconds with microsecond precision, from nanoseconds.
fn push_ms(out: &mut Vec<u8>, ns: u64) {
    push_u64(out, ns / 1_000_000);
    let us = (ns % 1_000_000) / 1000;
    if us != 0 {
        out.push(b'.');
        let digits = [us / 100, (us / 10) % 10, us % 10];
        let last = if digits[2] != 0 {
            3
        } else if digits[1] != 0 {
            2
        } else {
            1
        };
        for d in &digits[..last] {
            out.push(b'0' + *d as u8);
        }
    }
}

/// A JSON string literal.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                let _ = write!(out, "\\u{:04x}", b);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn push_list<T: Copy>(out: &mut Vec<u8>, items: &[T], mut f: impl FnMut(&mut Vec<u8>, T)) {
    out.push(b'[');
    for (i, &x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        f(out, x);
    }
    out.push(b']');
}

/// Options of the JSON writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonOptions {
    /// Write the counts form even when the profile has samples (diff inputs).
    pub counts_form: bool,
}

/// Serialises a profile as profile JSON version 1.
pub fn profile_json(p: &Profile, opts: JsonOptions) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(64 + p.frames.len() * 48 + p.node_count() * 12 + p.samples.len() * 16);
    write_profile(&mut out, p, opts);
    out
}

/// Appends profile JSON to `out`.
pub fn write_profile(out: &mut Vec<u8>, p: &Profile, opts: JsonOptions) {
    out.extend_from_slice(b"{\"version\":1,\"title\":");
    push_str(out, &p.title);
    out.extend_from_slice(b",\"unit\":");
    push_str(out, p.unit.name());
    out.extend_from_slice(b",\"kinds\":");
    push_list(out, &FrameKind::NAMES, push_str);
    out.extend_from_slice(b",\"frames\":{\"name\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_str(o, &f.name)
    });
    out.extend_from_slice(b",\"module\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_str(o, &f.module)
    });
    out.extend_from_slice(b",\"kind\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_u64(o, f.kind as u64)
    });
    out.extend_from_slice(b"},\"nodes\":{\"parent\":");
    push_list(out, &p.parent, |o, n| {
        if n == NO_PARENT {
            o.extend_from_slice(b"-1")
        } else {
            push_u64(o, u64::from(n))
        }
    });
    out.extend_from_slice(b",\"frame\":");
    push_list(out, &p.node_frame, |o, f| push_u64(o, u64::from(f)));
    out.extend_from_slice(b"},\"threads\":[");
    for (i, t) in p.threads.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"pid\":");
        push_u64(out, u64::from(t.pid));
        out.extend_from_slice(b",\"tid\":");
        push_u64(out, u64::from(t.tid));
        out.extend_from_slice(b",\"comm\":");
        push_str(out, &t.comm);
        out.push(b'}');
    }
    out.push(b']');
    if p.counts.is_some() || opts.counts_form {
        out.extend_from_slice(b",\"samples\":null,\"counts\":");
        push_list(out, &p.self_weights(), push_u64);
    } else {
        let s = &p.samples;
        out.extend_from_slice(b",\"samples\":{\"node\":");
        push_list(out, &s.node, |o, n| push_u64(o, u64::from(n)));
        out.extend_from_slice(b",\"weight\":");
        match &s.weight {
            Some(w) => push_list(out, w, push_u64),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"time_ms\":");
        match &s.time_ns {
            Some(t) => push_list(out, t, push_ms),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"thread\":");
        match &s.thread {
            Some(t) => push_list(out, t, |o, x| push_u64(o, u64::from(x))),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"},\"counts\":null");
    }
    out.extend_from_slice(b",\"start_unix_ns\":");
    match p.start_unix_ns {
        Some(ns) => push_u64(out, ns),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"duration_ms\":");
    match p.duration_ns() {
        Some(ns) if p.counts.is_none() && !opts.counts_form => push_ms(out, ns),
        _ => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

fn push_f64(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(out, "{:.3}", v);
        }
        _ => out.extend_from_slice(b"null"),
    }
}

/// Serialises a differential profile (docs/profile-json.md).
pub fn diff_json(d: &Diff) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(b"{\"version\":1,\"mode\":");
    push_str(
        &mut out,
        if d.normalized {
            "normalized"
        } else {
            "absolute"
        },
    );
    out.extend_from_slice(b",\"before\":");
    write_profile(&mut out, &d.before, JsonOptions { counts_form: true });
    out.extend_from_slice(b",\"after\":");
    write_profile(&mut out, &d.after, JsonOptions { counts_form: true });
    out.extend_from_slice(b",\"table\":[");
    for (i, r) in d.table.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"frame\":");
        push_str(&mut out, &r.frame);
        out.extend_from_slice(b",\"module\":");
        push_str(&mut out, &r.module);
        for (k, v) in [
            ("before_self", r.before_self),
            ("after_self", r.after_self),
            ("before_total", r.before_total),
            ("after_total", r.after_total),
        ] {
            let _ = write!(out, ",\"{k}\":");
            push_u64(&mut out, v);
        }
        out.extend_from_slice(b",\"delta_self_pct\":");
        push_f64(&mut out, r.delta_self_pct);
        out.extend_from_slice(b",\"delta_total_pct\":");
        push_f64(&mut out, r.delta_total_pct);
        out.extend_from_slice(b",\"noisy\":");
        out.extend_from_slice(if r.noisy { b"true" } else { b"false" });
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}
