//! V8 tick logs, as `node --prof` writes them (`isolate-0x...-PID-v8.log`):
//! a CSV event stream of `shared-library`, `code-creation`, `code-move`,
//! `code-delete` and `tick` lines. A tick is a program counter, a time in
//! microseconds, the VM state and the return addresses of the stack.
//!
//! JS code is resolved from the log itself: the code map is replayed in
//! log order, so a tick is named by the code that sat at its address at
//! that moment (V8 moves and frees code as it runs). Addresses outside
//! every code object are native: they are named from the symbol table of
//! the shared library that the log says covers them (read with the
//! `object` crate, demangled), or as `[library]` when the library cannot
//! be read or has no symbol there. As `node --prof-process` does, a
//! non-leaf address that nothing covers is dropped (tick stacks hold stale
//! slots), and a leaf that nothing covers is `[unknown]`.
//!
//! Each tick keeps its time (for `scope`'s heat map). Ticks taken outside
//! JS (garbage collection, compiling, external code...) get their VM state
//! as the root frame (`(GC)`, `(COMPILER)`, ...), as `--prof-process`
//! reports them apart in its summary.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{Frame, FrameKind, Location, Profile, Thread, Unit, NO_PARENT};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::BufRead;

/// Lines a tick log starts with; detection asks for one of them first.
const FIRST_LINES: &[&str] = &[
    "v8-version,",
    "v8-platform,",
    "shared-library,",
    "profiler,",
    "code-creation,",
];

/// Whether the head of an input looks like a V8 tick log.
pub fn looks_like(head: &[u8]) -> bool {
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let Ok(first) = std::str::from_utf8(first) else {
        return false;
    };
    FIRST_LINES.iter().any(|p| first.starts_with(p))
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::V8Log,
    name: "v8log",
    aliases: &["isolate"],
    description: "V8 tick log (node --prof)",
    text: true,
    looks_like,
    read: |input, _| {
        let name = input.name.clone();
        let mut reader = input.into_reader();
        parse_reader(&mut reader, &name, &mut FileSymbols).map(Parsed::from)
    },
};

/// A library's text symbols: (address, size, name), address-ordered.
pub type Symbols = Vec<(u64, u64, String)>;

/// Where native symbols come from: the real files ([`FileSymbols`]) or,
/// in tests, a table.
pub trait SymbolSource {
    /// The text symbols of the library at `path`, as (address, size, name)
    /// in the library's own addresses; `None` when it cannot be read or is
    /// not the file that was mapped. `spans` are the lengths of its
    /// executable mappings as the log gives them (end - start, from the
    /// load address).
    fn symbols(&mut self, path: &str, spans: &[u64]) -> Option<Symbols>;
}

/// Reads symbols from the ELF files the log names, when they are the files
/// that were mapped: each logged mapping must end where an executable
/// segment of the file ends (rounded up to a page), so a log from another
/// machine or an older binary at the same path keeps `[library]` frames
/// instead of borrowing wrong names.
pub struct FileSymbols;

/// Libraries larger than this are not read for symbols (a path in the log
/// naming something odd must not exhaust memory); their frames keep the
/// library name.
const MAX_LIBRARY_BYTES: u64 = 1 << 30;

/// Largest page size a mapping end may be rounded up to (arm64 64 KiB).
const MAX_PAGE: u64 = 0x10000;

impl SymbolSource for FileSymbols {
    fn symbols(&mut self, path: &str, spans: &[u64]) -> Option<Symbols> {
        use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX_LIBRARY_BYTES {
            return None;
        }
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let base = file.segments().map(|s| s.address()).min()?;
        let exec_ends: Vec<u64> = file
            .segments()
            .filter(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0))
            .map(|s| s.address().saturating_add(s.size()).saturating_sub(base))
            .collect();
        let matches = spans.iter().all(|&span| {
            exec_ends
                .iter()
                .any(|&end| span >= end && span - end < MAX_PAGE)
        });
        if !matches {
            return None;
        }
        let mut out: Symbols = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_owned())))
            .collect();
        // Per address, the largest size first: the one dedup keeps.
        out.sort_by_key(|s| (s.0, std::cmp::Reverse(s.1)));
        out.dedup_by_key(|s| s.0);
        Some(out)
    }
}

/// A C++ name as `nm -C` shows it; other names as they are.
pub(crate) fn demangle(name: &str) -> String {
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    name.to_owned()
}

/// Splits one log line into fields: commas separate, double quotes (older
/// V8) group, and V8's escapes (`\x2C`, `\u00e9`, `\\`, `\n`) are decoded.
pub(crate) fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            '\\' => match chars.next() {
                Some('x') => push_hex(&mut cur, &mut chars, 2),
                Some('u') => push_hex(&mut cur, &mut chars, 4),
                Some('n') => cur.push('\n'),
                Some(o) => cur.push(o),
                None => cur.push('\\'),
            },
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn push_hex(out: &mut String, chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize) {
    let digits: String = (0..n).filter_map(|_| chars.next()).collect();
    match u32::from_str_radix(&digits, 16)
        .ok()
        .and_then(char::from_u32)
    {
        Some(c) => out.push(c),
        None => {
            // Not an escape V8 writes: keep the text as it was.
            out.push('\\');
            out.push_str(&digits);
        }
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// A JS function name as V8 logs it, `name path:line:col` (the name may be
/// empty), as a frame: the name, "(anonymous)" when empty, and
/// `path:line` as module, like a `.cpuprofile`'s frames.
pub(crate) fn js_frame(full: &str, kind: FrameKind) -> Frame {
    let full = full.trim_start();
    let (name, place) = match full.rsplit_once(' ') {
        Some((n, p)) if p.contains(':') => (n, p),
        None if full.matches(':').count() >= 2 && !full.contains(' ') => ("", full),
        _ => (full, ""),
    };
    let module = match place.rsplit_once(':') {
        // path:line:col -> path:line
        Some((pl, col)) if col.bytes().all(|b| b.is_ascii_digit()) && pl.contains(':') => pl,
        _ => place,
    };
    Frame {
        name: if name.is_empty() {
            "(anonymous)".to_owned()
        } else {
            name.to_owned()
        },
        module: module.to_owned(),
        kind,
    }
}

/// The frame kind of a JS code object by its tier marker: `~` is the
/// interpreter (Ignition), `^`/`+`/`*` are compiled tiers.
pub(crate) fn tier_kind(marker: &str) -> FrameKind {
    if marker == "~" {
        FrameKind::Interpreted
    } else {
        FrameKind::Jit
    }
}

/// Code types that are JS functions (current and older V8 spellings).
fn is_js_type(t: &str) -> bool {
    matches!(t, "JS" | "LazyCompile" | "Function" | "Script" | "Eval")
}

/// The frame for a non-JS code object (builtins, bytecode handlers,
/// regular expressions, stubs): its name, the code type as module.
fn code_frame(kind_name: &str, name: &str) -> Frame {
    Frame {
        name: if name.is_empty() {
            format!("({kind_name})")
        } else {
            name.to_owned()
        },
        module: format!("[{kind_name}]"),
        kind: if kind_name == "RegExp" {
            FrameKind::Jit
        } else {
            FrameKind::Native
        },
    }
}

/// V8's VM state names (`StateTag`), by number.
const VM_STATES: &[&str] = &[
    "JS",
    "GC",
    "PARSER",
    "BYTECODE_COMPILER",
    "COMPILER",
    "OTHER",
    "EXTERNAL",
    "ATOMICS_WAIT",
    "IDLE",
    "LOGGING",
];

/// The root frame for ticks in VM state `vm`, `None` for JS.
pub(crate) fn vm_state_frame(vm: u64) -> Option<Frame> {
    if vm == 0 {
        return None;
    }
    let name = match usize::try_from(vm).ok().and_then(|i| VM_STATES.get(i)) {
        Some(n) => format!("({n})"),
        None => format!("(vm state {vm})"),
    };
    Some(Frame {
        name,
        module: String::new(),
        kind: FrameKind::Unknown,
    })
}

/// A frame met in a tick before native addresses are resolved.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// A code object from the log (index into the code list).
    Code(u32),
    /// A native address, resolved after the whole log is read.
    Addr(u64),
    /// A leaf address nothing covers.
    Unknown,
}

struct Library {
    path: String,
    start: u64,
    end: u64,
    slide: u64,
    /// Each logged mapping's end - start (node logs one line per mapping).
    spans: Vec<u64>,
}

struct Tick {
    time_us: u64,
    vm: u64,
    /// Range in `Reader::stack_keys`, leaf first.
    from: u32,
    to: u32,
}

#[derive(Default)]
struct Reader {
    codes: Vec<Frame>,
    /// Start address -> (end, code index); entries never overlap.
    code_map: BTreeMap<u64, (u64, u32)>,
    /// Code indices that are JS functions (a frameless call's `tos`).
    js_code: Vec<bool>,
    libraries: Vec<Library>,
    keys: Vec<Key>,
    key_index: FxHashMap<Key, u32>,
    stack_keys: Vec<u32>,
    ticks: Vec<Tick>,
    pid: u32,
}

impl Reader {
    fn find_code(&self, addr: u64) -> Option<u32> {
        let (_, &(end, code)) = self.code_map.range(..=addr).next_back()?;
        (addr < end).then_some(code)
    }

    fn add_code(&mut self, start: u64, size: u64, frame: Frame, js: bool) {
        let end = start.saturating_add(size.max(1));
        // New code replaces whatever it overlaps (freed code V8 did not log).
        let covered: Vec<u64> = self
            .code_map
            .range(..end)
            .rev()
            .take_while(|(&s, &(e, _))| e > start || s >= start)
            .filter(|(&s, &(e, _))| s < end && e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in covered {
            self.code_map.remove(&s);
        }
        let idx = self.codes.len() as u32;
        self.codes.push(frame);
        self.js_code.push(js);
        self.code_map.insert(start, (end, idx));
    }

    fn key(&mut self, k: Key) -> u32 {
        if let Some(&i) = self.key_index.get(&k) {
            return i;
        }
        let i = self.keys.len() as u32;
        self.keys.push(k);
        self.key_index.insert(k, i);
        i
    }

    fn in_library(&self, addr: u64) -> bool {
        self.libraries
            .iter()
            .any(|l| addr >= l.start && addr < l.end)
    }

    /// Resolves one address of a tick (`leaf`: the first).
    fn resolve(&mut self, addr: u64, leaf: bool) -> Option<u32> {
        let k = match self.find_code(addr) {
            Some(c) => Key::Code(c),
            None if self.in_library(addr) => Key::Addr(addr),
            None if leaf => Key::Unknown,
            None => return None,
        };
        Some(self.key(k))
    }

    fn line(&mut self, line: &str, at: u64, damage: &mut crate::model::Damage) {
        let kind = line.split(',').next().unwrap_or_default();
        match kind {
            "shared-library" => {
                let f = fields(line);
                match (f.get(2).and_then(|s| hex(s)), f.get(3).and_then(|s| hex(s))) {
                    (Some(start), Some(end)) => {
                        let slide = f.get(4).and_then(|s| hex(s)).unwrap_or(0);
                        let path = f[1].clone();
                        // node logs its executable once per mapping, with one start.
                        match self
                            .libraries
                            .iter_mut()
                            .find(|l| l.path == path && l.start == start)
                        {
                            Some(l) => {
                                l.end = l.end.max(end);
                                l.spans.push(end.wrapping_sub(start));
                            }
                            None => self.libraries.push(Library {
                                path,
                                start,
                                end,
                                slide,
                                spans: vec![end.wrapping_sub(start)],
                            }),
                        }
                    }
                    _ => damage.skip(Location::Line(at), || {
                        "shared-library,PATH,START,END (hex addresses)".into()
                    }),
                }
            }
            "code-creation" => {
                let f = fields(line);
                // `code-creation,TYPE,KIND,TIME,ADDR,SIZE,NAME[,SFI,TIER]`;
                // older V8 has no TIME (and very old no KIND): the address
                // is the first hex field after the type.
                let Some(ai) = (2..f.len().min(5)).find(|&i| f[i].starts_with("0x")) else {
                    damage.skip(Location::Line(at), || {
                        "code-creation,TYPE,KIND,TIME,ADDR,SIZE,NAME".into()
                    });
                    return;
                };
                let (Some(start), Some(size)) = (
                    hex(&f[ai]),
                    f.get(ai + 1).and_then(|s| s.parse::<u64>().ok()),
                ) else {
                    damage.skip(Location::Line(at), || {
                        "code-creation with a hex address and a decimal size".into()
                    });
                    return;
                };
                let name = f.get(ai + 2).map(String::as_str).unwrap_or_default();
                let t = f[1].as_str();
                let js = is_js_type(t) && f.get(ai + 3).is_some_and(|s| s.starts_with("0x"));
                let frame = if is_js_type(t) {
                    let tier = f.get(ai + 4).map(String::as_str).unwrap_or_default();
                    js_frame(name, tier_kind(tier))
                } else {
                    code_frame(t, name)
                };
                self.add_code(start, size, frame, js);
            }
            "code-move" => {
                let f = fields(line);
                if let (Some(from), Some(to)) =
                    (f.get(1).and_then(|s| hex(s)), f.get(2).and_then(|s| hex(s)))
                {
                    if let Some((end, code)) = self.code_map.remove(&from) {
                        let size = end - from;
                        let frame = self.codes[code as usize].clone();
                        let js = self.js_code[code as usize];
                        self.add_code(to, size, frame, js);
                    }
                }
            }
            "code-delete" => {
                if let Some(a) = fields(line).get(1).and_then(|s| hex(s)) {
                    self.code_map.remove(&a);
                }
            }
            "tick" => self.tick(line, at, damage),
            _ => {}
        }
    }

    /// `tick,PC,TIME_US,IS_EXTERNAL_CALLBACK,TOS_OR_CALLBACK,VM_STATE,STACK...`
    /// where stack entries are hex addresses or `+`/`-` offsets from the
    /// previous entry; resolved as V8's tick processor resolves them.
    fn tick(&mut self, line: &str, at: u64, damage: &mut crate::model::Damage) {
        let f: Vec<&str> = line.split(',').collect();
        let parsed = (|| {
            let pc = hex(f.get(1)?)?;
            let time: u64 = f.get(2)?.parse().ok()?;
            let external = f.get(3)? == &"1";
            let tos = hex(f.get(4)?)?;
            let vm: u64 = f.get(5)?.parse().ok()?;
            Some((pc, time, external, tos, vm))
        })();
        let Some((mut pc, time_us, external, tos, vm)) = parsed else {
            damage.skip(Location::Line(at), || {
                "tick,PC,TIME,EXTERNAL,TOS,VM_STATE,STACK...".into()
            });
            return;
        };
        let mut func = None;
        if external {
            // pc may point inside the callback's code; the callback itself
            // is what ran.
            pc = tos;
        } else if tos != 0 {
            // A frameless call: the top of stack points into the caller.
            if self
                .find_code(tos)
                .is_some_and(|c| self.js_code[c as usize])
            {
                func = Some(tos);
            }
        }
        let from = self.stack_keys.len() as u32;
        if let Some(k) = self.resolve(pc, true) {
            self.stack_keys.push(k);
        }
        if let Some(k) = func.and_then(|a| self.resolve(a, false)) {
            self.stack_keys.push(k);
        }
        let mut prev = pc;
        for s in &f[6..] {
            let addr = if let Some(off) = s.strip_prefix('+') {
                u64::from_str_radix(off, 16)
                    .ok()
                    .map(|o| prev.wrapping_add(o))
            } else if let Some(off) = s.strip_prefix('-') {
                u64::from_str_radix(off, 16)
                    .ok()
                    .map(|o| prev.wrapping_sub(o))
            } else {
                // "overflow" (a stack too deep) or junk: not an address.
                hex(s)
            };
            let Some(addr) = addr else { continue };
            prev = addr;
            if let Some(k) = self.resolve(addr, false) {
                self.stack_keys.push(k);
            }
        }
        let to = self.stack_keys.len() as u32;
        self.ticks.push(Tick {
            time_us,
            vm,
            from,
            to,
        });
    }

    /// Names the native addresses (one symbol table read per library hit)
    /// and builds the profile.
    fn finish(
        self,
        name: &str,
        symbols: &mut dyn SymbolSource,
        damage: crate::model::Damage,
    ) -> Result<Profile> {
        if self.ticks.is_empty() {
            return Err(Error::Empty {
                path: name.into(),
                why: "the V8 log has no tick lines (was node run with --prof, and did it run long enough to take a sample?)".into(),
            });
        }
        let mut profile = Profile::new(name, Unit::Samples);
        profile.damage = damage;
        let mut tables: FxHashMap<usize, Option<Symbols>> = FxHashMap::default();
        let mut demangled: FxHashMap<(usize, usize), FrameIdOf> = FxHashMap::default();
        let mut frame_of_key: Vec<u32> = Vec::with_capacity(self.keys.len());
        for &k in &self.keys {
            let frame = match k {
                Key::Code(c) => self.codes[c as usize].clone(),
                Key::Unknown => Frame {
                    name: "[unknown]".into(),
                    module: String::new(),
                    kind: FrameKind::Unknown,
                },
                Key::Addr(a) => {
                    // Checked when the key was made: some library covers it.
                    let Some(li) = self
                        .libraries
                        .iter()
                        .position(|l| a >= l.start && a < l.end)
                    else {
                        continue;
                    };
                    let lib = &self.libraries[li];
                    let table = tables
                        .entry(li)
                        .or_insert_with(|| symbols.symbols(&lib.path, &lib.spans));
                    let hit = table.as_ref().and_then(|t| {
                        // A symbol's library address maps to the process as
                        // V8's tick processor maps it: relative to the
                        // library's start when it is an offset inside the
                        // mapping, else shifted by the ASLR slide.
                        let offset = a.wrapping_sub(lib.start);
                        let find = |x: u64| {
                            let i = t.partition_point(|s| s.0 <= x).checked_sub(1)?;
                            let s = &t[i];
                            let end = if s.1 > 0 {
                                s.0.saturating_add(s.1)
                            } else {
                                t.get(i + 1).map_or(u64::MAX, |n| n.0)
                            };
                            (x < end).then_some(i)
                        };
                        find(offset)
                            .filter(|&i| t[i].0 < lib.start.wrapping_sub(lib.slide))
                            .or_else(|| find(a.wrapping_sub(lib.slide)))
                    });
                    let base = lib.path.rsplit('/').next().unwrap_or(lib.path.as_str());
                    match hit {
                        Some(i) => {
                            if let Some(&f) = demangled.get(&(li, i)) {
                                frame_of_key.push(f);
                                continue;
                            }
                            let raw = table.as_ref().map(|t| t[i].2.as_str()).unwrap_or_default();
                            let f = profile.frame(Frame {
                                name: demangle(raw),
                                module: lib.path.clone(),
                                kind: FrameKind::Native,
                            });
                            demangled.insert((li, i), f);
                            frame_of_key.push(f);
                            continue;
                        }
                        None => Frame {
                            name: format!("[{base}]"),
                            module: lib.path.clone(),
                            kind: FrameKind::Native,
                        },
                    }
                }
            };
            frame_of_key.push(profile.frame(frame));
        }
        let t0 = self.ticks.iter().map(|t| t.time_us).min().unwrap_or(0);
        let mut vm_roots: FxHashMap<u64, u32> = FxHashMap::default();
        let mut times = Vec::with_capacity(self.ticks.len());
        for t in &self.ticks {
            let mut node = NO_PARENT;
            if let Some(fr) = vm_state_frame(t.vm) {
                let f = *vm_roots.entry(t.vm).or_insert_with(|| profile.frame(fr));
                node = profile.child(node, f);
            }
            for &k in self.stack_keys[t.from as usize..t.to as usize].iter().rev() {
                node = profile.child(node, frame_of_key[k as usize]);
            }
            if node == NO_PARENT {
                // A JS-state tick whose every address is unknown and not
                // a leaf cannot happen (the leaf is kept); guard anyway.
                continue;
            }
            profile.samples.node.push(node);
            times.push((t.time_us - t0).saturating_mul(1000));
        }
        let n = profile.samples.len();
        profile.samples.time_ns = Some(times);
        profile.time_origin_ns = Some(t0.saturating_mul(1000));
        let th = profile.thread(Thread {
            pid: self.pid,
            tid: self.pid,
            comm: "node".into(),
        });
        profile.samples.thread = Some(vec![th; n]);
        crate::model::sort_by_time(&mut profile);
        Ok(profile)
    }
}

type FrameIdOf = crate::model::FrameId;

/// The process id in a `--prof` file name (`isolate-0x5a3f0e0-12345-v8.log`),
/// 0 when the name has none.
fn pid_from_name(name: &str) -> u32 {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.strip_prefix("isolate-")
        .and_then(|r| r.split('-').nth(1))
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

/// Reads a V8 tick log line by line, naming native code with `symbols`.
pub fn parse_reader(
    reader: &mut dyn BufRead,
    name: &str,
    symbols: &mut dyn SymbolSource,
) -> Result<Profile> {
    let mut r = Reader {
        pid: pid_from_name(name),
        ..Reader::default()
    };
    let mut damage = crate::model::Damage::default();
    let mut buf = Vec::new();
    let mut at = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(name, e))?;
        if n == 0 {
            break;
        }
        at += 1;
        let Ok(line) = std::str::from_utf8(&buf) else {
            damage.skip(Location::Line(at), || "a UTF-8 text line".into());
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if at == 1 && !looks_like(line.as_bytes()) {
            return Err(Error::malformed(
                name,
                Location::Line(1),
                "a V8 log line (v8-version, shared-library or code-creation)",
            ));
        }
        r.line(line, at, &mut damage);
    }
    r.finish(name, symbols, damage)
}

/// Parses a whole V8 tick log in memory, naming native code with `symbols`.
pub fn parse(data: &[u8], name: &str, symbols: &mut dyn SymbolSource) -> Result<Profile> {
    parse_reader(&mut &data[..], name, symbols)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symbol table given by hand.
    struct Table(Vec<(&'static str, Symbols)>);

    impl SymbolSource for Table {
        fn symbols(&mut self, path: &str, _spans: &[u64]) -> Option<Symbols> {
            self.0
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, t)| t.clone())
        }
    }

    fn stacks(p: &Profile) -> Vec<String> {
        p.sample_stacks()
    }

    const LOG: &str = "v8-version,11,3,244,8,-node.38,0\n\
shared-library,/usr/bin/node,0x400000,0xb71000,0\n\
shared-library,/usr/bin/node,0x400000,0x2601000,0\n\
shared-library,/lib/libc.so.6,0x7f0000000000,0x7f0000100000,0\n\
shared-library-end\n\
code-creation,Builtin,2,100,0x1000,16,ArrayPush\n\
code-creation,JS,10,200,0x2000,256,fib /tmp/a.js:1:13,0x9000,~\n\
code-creation,JS,10,210,0x3000,128,work /tmp/a.js:3:14,0x9100,*\n\
code-creation,JS,10,220,0x3100,64, /tmp/a.js:1:1,0x9200,~\n\
tick,0x2010,1000,0,0x0,0,0x3010,0x3110\n\
tick,0x2010,2000,0,0x0,0,+2000,0xdead,0x3110\n\
code-move,0x2000,0x5000\n\
tick,0x5010,3000,0,0x0,1,0x3010\n\
tick,0x7f0000000123,4000,0,0x0,6,0x3010\n\
tick,0x500000,5000,0,0x0,0,0x3010\n\
code-delete,0x5000\n\
tick,0x5010,6000,0,0x0,0,0x3010\n\
tick,0x1004,7000,1,0x3010,0,0x3110\n\
tick,zz,8000\n";

    fn table() -> Table {
        Table(vec![
            ("/lib/libc.so.6", vec![(0x100, 0x100, "memcpy".into())]),
            (
                "/usr/bin/node",
                vec![(0x4ffff0, 0x20, "_ZN2v88internal4Heap7CollectEv".into())],
            ),
        ])
    }

    #[test]
    fn code_map_is_replayed_in_order_and_natives_are_symbolised() {
        let p = parse(LOG.as_bytes(), "isolate-0x1-4242-v8.log", &mut table()).unwrap();
        assert_eq!(
            stacks(&p),
            vec![
                "(anonymous);work;fib",
                // pc+0x2000 = 0x4010 lies in no code: dropped (not a leaf),
                // as is 0xdead.
                "(anonymous);fib",
                // Moved code resolves at its new address; GC state as root.
                "(GC);work;fib",
                "(EXTERNAL);work;memcpy",
                "work;v8::internal::Heap::Collect()",
                // Deleted code: the leaf is unknown.
                "work;[unknown]",
                // External callback: the callback (tos) is the leaf.
                "(anonymous);work",
            ]
        );
        assert_eq!(
            p.samples.time_ns.as_deref(),
            Some(&[0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000, 6_000_000][..])
        );
        assert_eq!(p.time_origin_ns, Some(1_000_000));
        assert_eq!(p.threads[0].pid, 4242);
        assert_eq!(p.damage.skipped, 1);
        let fib = p.frames.iter().find(|f| f.name == "fib").unwrap();
        assert_eq!(fib.module, "/tmp/a.js:1");
        assert_eq!(fib.kind, FrameKind::Interpreted);
        let work = p.frames.iter().find(|f| f.name == "work").unwrap();
        assert_eq!(work.kind, FrameKind::Jit);
    }

    #[test]
    fn unreadable_libraries_keep_their_name() {
        let p = parse(LOG.as_bytes(), "x.log", &mut Table(vec![])).unwrap();
        let s = stacks(&p);
        assert_eq!(s[3], "(EXTERNAL);work;[libc.so.6]");
        assert_eq!(s[4], "work;[node]");
        assert_eq!(p.threads[0].pid, 0);
    }

    #[test]
    fn a_file_that_was_not_the_mapped_one_lends_no_names() {
        // This test binary is an ELF file, but no executable segment of it
        // ends one byte after its base: the log was about another file.
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        assert!(FileSymbols.symbols(exe, &[1]).is_none());
        assert!(FileSymbols.symbols("/dev/null", &[]).is_none());
        assert!(FileSymbols.symbols("/nonexistent/lib.so", &[]).is_none());
    }

    #[test]
    fn a_log_without_ticks_says_so() {
        let e = parse(
            b"v8-version,11,3,244,8,-node.38,0\ncode-creation,JS,10,1,0x10,4,f a.js:1:1,0x20,~\n",
            "x",
            &mut Table(vec![]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no tick lines"), "{e}");
        assert!(parse(b"hello,world\n", "x", &mut Table(vec![])).is_err());
    }

    #[test]
    fn fields_decode_v8_escapes() {
        assert_eq!(
            fields(r#"code-creation,RegExp,8,1,0x1,2,a\x2Cb\\c\u00e9"#)[6],
            "a,b\\cé"
        );
        assert_eq!(fields(r#"a,"b,c",d"#), vec!["a", "b,c", "d"]);
        assert_eq!(fields(r"a\xZZ"), vec![r"a\ZZ"]);
    }

    #[test]
    fn js_names_split_into_function_and_place() {
        let f = js_frame("get foo /x/y.js:10:3", FrameKind::Jit);
        assert_eq!(
            (f.name.as_str(), f.module.as_str()),
            ("get foo", "/x/y.js:10")
        );
        let f = js_frame(" node:internal/main/run_main_module:1:1", FrameKind::Jit);
        assert_eq!(
            (f.name.as_str(), f.module.as_str()),
            ("(anonymous)", "node:internal/main/run_main_module:1")
        );
        let f = js_frame("Array.prototype.push", FrameKind::Jit);
        assert_eq!(
            (f.name.as_str(), f.module.as_str()),
            ("Array.prototype.push", "")
        );
    }

    #[test]
    fn detection() {
        assert!(looks_like(b"v8-version,11,3,244,8,-node.38,0\n"));
        assert!(looks_like(
            b"shared-library,/usr/bin/node,0x400000,0xb71000,0\n"
        ));
        assert!(!looks_like(b"main;f 1\n"));
        assert!(!looks_like(b"{\"code\":[]}"));
        assert_eq!(pid_from_name("/tmp/isolate-0x3dfd7ee0-24693-v8.log"), 24693);
    }
}
