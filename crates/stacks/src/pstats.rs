//! cProfile/pstats files (`cProfile.Profile.dump_stats`,
//! `pstats.Stats.dump_stats`, werkzeug's `ProfilerMiddleware`): a Python
//! marshal dict `(file, line, function) -> (cc, nc, tt, ct, callers)` where
//! `callers` maps each caller to `(nc, cc, tt, ct)` (cProfile) or to a call
//! count (the pure-Python `profile` module).
//!
//! The file is read into a [`CallGraph`] with the exact recorded numbers,
//! carried on the profile ([`Profile::callgraph`]) for the tables, and a
//! flame graph estimated from it ([`CallGraph::estimate`]). A directory of
//! per-request files as werkzeug writes them (`GET.orders.12ms.1700000000.prof`)
//! reads as all of them merged with pstats' `add` semantics, with the
//! requests listed slowest first by the time in their names.

use crate::callgraph::{CallGraph, Edge, FunctionKey, Request};
use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::input::Input;
use crate::marshal::{self, Value};
use crate::model::{Location, Profile};
use crate::{Loaded, ReadOptions};
use std::sync::Arc;

/// Whether the head of an input is a marshalled dict whose first key is a
/// 3-tuple (or an empty dict): every pstats file starts so, and no text
/// format does.
pub fn looks_like(head: &[u8]) -> bool {
    let Some((&first, rest)) = head.split_first() else {
        return false;
    };
    if first & 0x7f != b'{' {
        return false;
    }
    match rest {
        [b'0'] => true,
        [t, 3, ..] if t & 0x7f == b')' => true,
        [t, 3, 0, 0, 0, ..] if t & 0x7f == b'(' => true,
        _ => false,
    }
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Pstats,
    name: "pstats",
    aliases: &["cprofile"],
    description: "cProfile/pstats .prof (a file, or a werkzeug directory)",
    text: false,
    looks_like,
    read: |input, _| read(input).map(Parsed::from),
};

fn read(input: Input) -> Result<Profile> {
    let (name, data) = input.read_all()?;
    let mut g = parse(&data, &name)?;
    g.profiles = 1;
    Ok(profile_of(g, &name))
}

fn profile_of(g: CallGraph, title: &str) -> Profile {
    let mut p = g.estimate(title);
    p.callgraph = Some(Arc::new(g));
    p
}

fn bad(name: &str, at: u64, expected: impl Into<String>) -> Error {
    Error::malformed(name, Location::Byte(at), expected)
}

fn count(v: &Value) -> Option<u64> {
    v.as_int().and_then(|i| u64::try_from(i).ok())
}

fn seconds(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite() && *x >= 0.0)
}

fn key_of(v: &Value) -> Option<FunctionKey> {
    match v.as_tuple()? {
        [file, line, name] => Some(FunctionKey {
            file: file.as_str()?.to_owned(),
            line: line.as_int()?,
            name: match name {
                // The pure-Python `profile` module keys the code it was
                // given to run by the code object itself; pstats prints its
                // repr, whose address is the reading process's own.
                Value::Code(c) => format!(
                    "<code object {}, file \"{}\", line {}>",
                    c.name, c.filename, c.firstlineno
                ),
                other => other.as_str()?.to_owned(),
            },
        }),
        _ => None,
    }
}

/// Parses the bytes of one pstats file into its call graph.
pub fn parse(data: &[u8], name: &str) -> Result<CallGraph> {
    let root = marshal::loads(data)
        .map_err(|e| bad(name, e.offset(), format!("Python marshal data ({e})")))?;
    let entries = root.as_dict().ok_or_else(|| {
        bad(
            name,
            0,
            format!("a pstats dict of functions, found a {}", root.type_name()),
        )
    })?;
    if entries.is_empty() {
        return Err(Error::Empty {
            path: name.to_owned(),
            why: "a pstats file with no functions (the profiler recorded nothing)".into(),
        });
    }
    let mut g = CallGraph::new();
    let mut pending = Vec::with_capacity(entries.len());
    for (n, (k, v)) in entries.iter().enumerate() {
        let at = |what: &str| format!("{what} in entry {}", n + 1);
        let key = key_of(k).ok_or_else(|| bad(name, 0, at("a (file, line, function) key")))?;
        let label = key.label();
        let fields = v.as_tuple().ok_or_else(|| {
            bad(
                name,
                0,
                at(&format!("a (cc, nc, tt, ct, callers) tuple for {label}")),
            )
        })?;
        let [cc, nc, tt, ct, callers] = fields else {
            return Err(bad(
                name,
                0,
                at(&format!(
                    "5 fields (cc, nc, tt, ct, callers) for {label}, found {}",
                    fields.len()
                )),
            ));
        };
        let (Some(cc), Some(nc), Some(tt), Some(ct), Some(callers)) = (
            count(cc),
            count(nc),
            seconds(tt),
            seconds(ct),
            callers.as_dict(),
        ) else {
            return Err(bad(
                name,
                0,
                at(&format!(
                    "counts, times in seconds and a callers dict for {label}"
                )),
            ));
        };
        let i = g.add_function(key, cc, nc, tt, ct);
        pending.push((i, label, callers));
    }
    for (i, label, callers) in pending {
        for (ck, cv) in callers.iter() {
            let caller =
                key_of(ck).ok_or_else(|| bad(name, 0, format!("a caller key of {label}")))?;
            let edge = match cv {
                Value::Tuple(t) => match &t[..] {
                    [nc, cc, tt, ct] => match (count(nc), count(cc), seconds(tt), seconds(ct)) {
                        (Some(nc), Some(cc), Some(tt), Some(ct)) => Some(Edge {
                            caller: 0,
                            nc,
                            cc,
                            tt,
                            ct,
                            timed: true,
                        }),
                        _ => None,
                    },
                    _ => None,
                },
                other => count(other).map(|nc| Edge {
                    caller: 0,
                    nc,
                    cc: nc,
                    tt: 0.0,
                    ct: 0.0,
                    timed: false,
                }),
            }
            .ok_or_else(|| {
                bad(
                    name,
                    0,
                    format!(
                        "(nc, cc, tt, ct) or a call count for caller {} of {label}",
                        caller.label()
                    ),
                )
            })?;
            g.add_caller(i, caller, edge);
        }
    }
    Ok(g)
}

/// What werkzeug's `ProfilerMiddleware` file name says about a request:
/// `{method}.{path}.{elapsed:.0f}ms.{time:.0f}.prof` (path with `/` written
/// as `.`, `root` for `/`; older versions wrote `%06dms`). `None` for any
/// other name.
pub fn request_of(file: &str) -> Option<Request> {
    let stem = file.strip_suffix(".gz").unwrap_or(file);
    let stem = stem.strip_suffix(".prof")?;
    let (rest, time) = stem.rsplit_once('.')?;
    let (rest, elapsed) = rest.rsplit_once('.')?;
    let (method, path) = rest.split_once('.')?;
    let elapsed_ms: f64 = elapsed.strip_suffix("ms")?.parse().ok()?;
    let unix_time: f64 = time.parse().ok()?;
    let ok_method = !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase());
    if !ok_method || !elapsed_ms.is_finite() || elapsed_ms < 0.0 || path.is_empty() {
        return None;
    }
    let path = if path == "root" {
        "/".to_owned()
    } else {
        format!("/{}", path.replace('.', "/"))
    };
    Some(Request {
        file: file.to_owned(),
        method: method.to_owned(),
        path,
        elapsed_ms,
        unix_time: unix_time.is_finite().then_some(unix_time),
        total_tt: 0.0,
    })
}

/// Reads `path` as a directory of `.prof` files (plain or gzip), merged;
/// `Ok(None)` when `path` is not a directory. Files with other names are
/// not profiles werkzeug wrote and are left alone; a `.prof` file that does
/// not read fails the whole directory, naming it.
pub fn read_dir(path: &str, _opts: &ReadOptions) -> Result<Option<Loaded>> {
    let dir = std::path::Path::new(path);
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".prof") || n.ends_with(".prof.gz"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Empty {
            path: path.to_owned(),
            why: "a directory without .prof files (keisoku reads a directory of cProfile files, one per request, as werkzeug's ProfilerMiddleware writes them)".into(),
        });
    }
    let mut merged = CallGraph::new();
    let mut requests = Vec::new();
    // `pstats.Stats(first, *rest)` loads the first file and adds the rest
    // last to first; the same order gives the same function order and the
    // same float sums to the last bit.
    let order = files.iter().take(1).chain(files.iter().skip(1).rev());
    for f in order {
        let shown = f.to_string_lossy().into_owned();
        let input = Input::open(&shown)?;
        if !looks_like(&input.head) {
            return Err(bad(&shown, 0, "a cProfile/pstats file (marshalled dict)"));
        }
        let (_, data) = input.read_all()?;
        let mut g = parse(&data, &shown)?;
        g.profiles = 1;
        if let Some(mut r) = f.file_name().and_then(|n| n.to_str()).and_then(request_of) {
            r.total_tt = g.totals().2;
            requests.push(r);
        }
        merged.merge(&g);
    }
    requests.sort_by(|a: &Request, b: &Request| {
        b.elapsed_ms
            .total_cmp(&a.elapsed_ms)
            .then_with(|| a.file.cmp(&b.file))
    });
    merged.requests = requests;
    let title = format!("{path} ({} profiles merged)", files.len());
    Ok(Some(Loaded {
        profile: profile_of(merged, &title),
        format: Format::Pstats,
        dropped_events: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marshal writer for tests: enough of the format to build pstats files
    /// by hand, including references.
    fn z(s: &str) -> Vec<u8> {
        let mut v = vec![b'z', s.len() as u8];
        v.extend_from_slice(s.as_bytes());
        v
    }
    fn int(i: i32) -> Vec<u8> {
        let mut v = vec![b'i'];
        v.extend_from_slice(&i.to_le_bytes());
        v
    }
    fn float(x: f64) -> Vec<u8> {
        let mut v = vec![b'g'];
        v.extend_from_slice(&x.to_le_bytes());
        v
    }
    fn tuple(items: &[Vec<u8>]) -> Vec<u8> {
        let mut v = vec![b')', items.len() as u8];
        for i in items {
            v.extend_from_slice(i);
        }
        v
    }
    fn dict(entries: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let mut v = vec![b'{'];
        for (k, x) in entries {
            v.extend_from_slice(k);
            v.extend_from_slice(x);
        }
        v.push(b'0');
        v
    }
    fn fkey(name: &str) -> Vec<u8> {
        tuple(&[z("app.py"), int(3), z(name)])
    }

    fn two_functions() -> Vec<u8> {
        dict(&[
            (
                fkey("main"),
                tuple(&[int(1), int(1), float(0.5), float(2.0), dict(&[])]),
            ),
            (
                fkey("work"),
                tuple(&[
                    int(2),
                    int(3),
                    float(1.5),
                    float(1.5),
                    dict(&[(
                        fkey("main"),
                        tuple(&[int(3), int(2), float(1.5), float(1.5)]),
                    )]),
                ]),
            ),
        ])
    }

    #[test]
    fn a_pstats_dict_reads_with_exact_numbers() {
        let data = two_functions();
        assert!(looks_like(&data));
        let g = parse(&data, "t.prof").unwrap();
        assert_eq!(g.functions.len(), 2);
        let w = &g.functions[1];
        assert_eq!((w.cc, w.nc, w.tt, w.ct), (2, 3, 1.5, 1.5));
        assert_eq!(w.ncalls(), "3/2");
        assert_eq!(w.callers[0].caller, 0);
        assert_eq!((w.callers[0].nc, w.callers[0].cc), (3, 2));
        let p = profile_of(g, "t.prof");
        assert_eq!(p.total_weight(), 2_000_000_000);
        assert!(p.callgraph.is_some());
    }

    #[test]
    fn count_only_callers_of_the_profile_module_read() {
        let data = dict(&[
            (
                fkey("main"),
                tuple(&[int(1), int(1), float(0.5), float(2.0), dict(&[])]),
            ),
            (
                fkey("work"),
                tuple(&[
                    int(3),
                    int(3),
                    float(1.5),
                    float(1.5),
                    dict(&[(fkey("main"), int(3))]),
                ]),
            ),
        ]);
        let g = parse(&data, "t.prof").unwrap();
        assert!(!g.functions[1].callers[0].timed);
        assert_eq!(g.estimate("t").total_weight(), 2_000_000_000);
    }

    #[test]
    fn detection_needs_a_dict_of_tuples() {
        assert!(looks_like(b"{0"));
        assert!(looks_like(b"\xfb\xa9\x03"));
        assert!(looks_like(b"{(\x03\x00\x00\x00"));
        assert!(!looks_like(b"{\"nodes\": []}"));
        assert!(!looks_like(b"{)\x02"));
        assert!(!looks_like(b""));
        assert!(!looks_like(b"main;work 3\n"));
    }

    #[test]
    fn wrong_shapes_are_named() {
        let empty = parse(b"{0", "e.prof").unwrap_err();
        assert!(matches!(empty, Error::Empty { .. }), "{empty}");
        let e = parse(b"N", "n.prof").unwrap_err().to_string();
        assert!(e.contains("found a None"), "{e}");
        let four = dict(&[(fkey("f"), tuple(&[int(1), int(1), float(0.5), float(2.0)]))]);
        let e = parse(&four, "f.prof").unwrap_err().to_string();
        assert!(e.contains("5 fields") && e.contains("app.py:3(f)"), "{e}");
        let negative = dict(&[(
            fkey("f"),
            tuple(&[int(-1), int(1), float(0.5), float(2.0), dict(&[])]),
        )]);
        assert!(parse(&negative, "n.prof").is_err());
        let bad_caller = dict(&[(
            fkey("f"),
            tuple(&[
                int(1),
                int(1),
                float(0.5),
                float(2.0),
                dict(&[(fkey("g"), z("x"))]),
            ]),
        )]);
        let e = parse(&bad_caller, "c.prof").unwrap_err().to_string();
        assert!(e.contains("caller app.py:3(g)"), "{e}");
        let e = parse(b"{)\x03z\x01", "t.prof").unwrap_err().to_string();
        assert!(e.contains("marshal"), "{e}");
    }

    #[test]
    fn werkzeug_names_say_the_request() {
        let r = request_of("GET.orders.123.12ms.1700000000.prof").unwrap();
        assert_eq!(
            (r.method.as_str(), r.path.as_str(), r.elapsed_ms),
            ("GET", "/orders/123", 12.0)
        );
        assert_eq!(r.unix_time, Some(1_700_000_000.0));
        assert_eq!(
            request_of("POST.root.000042ms.1700000001.prof")
                .unwrap()
                .path,
            "/"
        );
        assert_eq!(
            request_of("GET.root.7ms.1700000001.prof.gz")
                .unwrap()
                .elapsed_ms,
            7.0
        );
        assert_eq!(request_of("profile.prof"), None);
        assert_eq!(request_of("GET.root.fast.1700000000.prof"), None);
        assert_eq!(request_of("get.root.1ms.1700000000.prof"), None);
    }

    #[test]
    fn a_directory_merges_its_files_and_lists_requests() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("GET.root.5ms.1700000000.prof"),
            two_functions(),
        )
        .unwrap();
        std::fs::write(
            d.path().join("POST.order.9ms.1700000001.prof"),
            two_functions(),
        )
        .unwrap();
        std::fs::write(d.path().join("README"), "not a profile").unwrap();
        let path = d.path().to_str().unwrap();
        let loaded = read_dir(path, &ReadOptions::default()).unwrap().unwrap();
        let g = loaded.profile.callgraph.as_ref().unwrap();
        assert_eq!(g.profiles, 2);
        assert_eq!(g.functions[1].nc, 6);
        assert_eq!(g.requests[0].path, "/order");
        assert_eq!(g.requests[0].total_tt, 2.0);
        assert_eq!(loaded.profile.total_weight(), 4_000_000_000);
        assert!(loaded.profile.title.contains("2 profiles merged"));
        std::fs::write(d.path().join("junk.prof"), "text").unwrap();
        let e = read_dir(path, &ReadOptions::default()).err().unwrap();
        assert!(e.to_string().contains("junk.prof"), "{e}");
        let empty = tempfile::tempdir().unwrap();
        let e = read_dir(empty.path().to_str().unwrap(), &ReadOptions::default())
            .err()
            .unwrap();
        assert!(matches!(e, Error::Empty { .. }));
        assert!(read_dir("/nonexistent/x.prof", &ReadOptions::default())
            .unwrap()
            .is_none());
    }

    proptest::proptest! {
        /// Any call graph written as cProfile writes it reads back with its
        /// numbers unchanged, and its estimated flame graph draws the total
        /// time (within the nanosecond rounding of each stack).
        #[test]
        fn random_call_graphs_round_trip(
            funcs in proptest::collection::vec(
                (1u16..500, 0u16..500, 0u32..1_000_000, proptest::collection::vec((0usize..12, 1u16..50, 0u32..1_000_000), 0..4)),
                1..12,
            )
        ) {
            let n = funcs.len();
            let entries: Vec<(Vec<u8>, Vec<u8>)> = funcs
                .iter()
                .enumerate()
                .map(|(i, (nc, extra, tt_us, callers))| {
                    let tt = f64::from(*tt_us) * 1e-6;
                    let edges: Vec<(Vec<u8>, Vec<u8>)> = callers
                        .iter()
                        .filter(|(c, ..)| c % n != i)
                        .map(|(c, enc, ect)| {
                            (fkey(&format!("f{}", c % n)), tuple(&[int(i32::from(*enc)), int(i32::from(*enc)), float(f64::from(*ect) * 1e-6), float(f64::from(*ect) * 1e-6)]))
                        })
                        .collect();
                    // Later duplicates of a caller key replace earlier ones, as in a Python dict.
                    let mut seen = std::collections::HashSet::new();
                    let edges: Vec<_> = edges.into_iter().rev().filter(|(k, _)| seen.insert(k.clone())).collect();
                    (
                        fkey(&format!("f{i}")),
                        tuple(&[int(i32::from(*nc)), int(i32::from(*nc) + i32::from(*extra)), float(tt), float(tt + 0.5), dict(&edges)]),
                    )
                })
                .collect();
            let g = parse(&dict(&entries), "p.prof").unwrap();
            proptest::prop_assert_eq!(g.functions.len(), n);
            let mut total = 0.0;
            for (i, (nc, extra, tt_us, _)) in funcs.iter().enumerate() {
                let f = &g.functions[i];
                proptest::prop_assert_eq!(f.cc, u64::from(*nc));
                proptest::prop_assert_eq!(f.nc, u64::from(*nc) + u64::from(*extra));
                proptest::prop_assert_eq!(f.tt, f64::from(*tt_us) * 1e-6);
                total += f.tt;
            }
            let p = g.estimate("p");
            let drawn = p.total_weight() as f64;
            let slack = p.node_count() as f64 + total * 1e9 * 1e-6 * (n as f64 + 1.0);
            proptest::prop_assert!((drawn - total * 1e9).abs() <= slack, "drawn {} of {}", drawn, total * 1e9);
        }
    }
}
