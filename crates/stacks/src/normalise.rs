//! Names that differ between two runs of the same code: JIT tier markers,
//! per-run lambda and proxy numbering, addresses and per-process perf-map
//! modules. `keisoku diff` and `compare` map both sides through
//! [`normalise`] before diffing (on by default, `--no-normalise` shows the
//! raw names), so a function V8 optimised in one run and not in the other
//! (`JS:*query` vs `JS:^query`) is one function, not a vanished one plus a
//! new one that push the real change to the 18th row (issue 14).

use crate::model::{Profile, NO_PARENT};
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// V8's code-kind prefixes (`JS:`, older `LazyCompile:`, `Function:`,
/// `InterpretedFunction:`) with an optional tier marker: `*` optimised
/// (TurboFan), `^` baseline (Sparkplug), `+` Maglev, `~` interpreted
/// (Ignition). The tier changes with warm-up; the function does not.
static V8_TIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:JS|LazyCompile|Function|InterpretedFunction):[*^+~]?").expect("static regex")
});

/// Java lambda classes (`$$Lambda$123/0x0000000800c0b440`, JDK 21's
/// `$$Lambda/0x...` and `$$Lambda.0x...`), numbered per run.
static JAVA_LAMBDA: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$\$Lambda(?:\$\d+)?(?:[/.]0x[0-9a-fA-F]+)?").expect("static regex")
});

/// Java dynamic proxies and reflection accessors, numbered per run:
/// `$Proxy12`, `GeneratedMethodAccessor45`,
/// `GeneratedConstructorAccessor3`, `GeneratedSerializationConstructorAccessor7`.
static JAVA_NUMBERED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\$Proxy|Generated(?:Serialization)?(?:Method|Constructor)Accessor)\d+")
        .expect("static regex")
});

/// A trailing address in brackets, as perf-map writers append (`foo [0x7f3a...]`).
static ADDR_SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s*\[0x[0-9a-fA-F]+\]$").expect("static regex"));

/// A name that is only an address (an unresolved symbol).
static BARE_ADDR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:0x)?[0-9a-fA-F]{8,16}$").expect("static regex"));

/// An address inside a name (`stub@0x7f3a12`, `Interpreter 0x7f..`): at
/// least five hex digits, so `0x10` in a template name survives.
static INNER_ADDR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"0x[0-9a-fA-F]{5,}").expect("static regex"));

/// Per-process JIT modules: `/tmp/perf-4242.map`, `jitted-4242-17.so`
/// (perf inject --jit), `[JIT] tid 4242`.
static JIT_MODULE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"perf-\d+\.map|jitted-\d+-\d+\.so|\[JIT\] tid \d+").expect("static regex")
});

/// A frame name with per-run parts removed; unchanged names are borrowed.
pub fn name(raw: &str) -> Cow<'_, str> {
    if BARE_ADDR.is_match(raw) {
        return Cow::Borrowed("[unknown]");
    }
    let mut out = Cow::Borrowed(raw);
    if let Some(m) = V8_TIER.find(&out) {
        let rest = &out[m.end()..];
        out = Cow::Owned(format!("JS:{rest}"));
    }
    for (re, with) in [
        (&*ADDR_SUFFIX, ""),
        (&*JAVA_LAMBDA, "$$$$Lambda"),
        (&*JAVA_NUMBERED, "$1"),
        (&*INNER_ADDR, "0x…"),
    ] {
        if let Cow::Owned(s) = re.replace_all(&out, with) {
            out = Cow::Owned(s);
        }
    }
    out
}

/// A module name with the process id of a JIT map removed.
pub fn module(raw: &str) -> Cow<'_, str> {
    JIT_MODULE.replace_all(raw, |c: &regex::Captures| {
        let m = &c[0];
        if m.starts_with("perf-") {
            "perf-PID.map"
        } else if m.starts_with("jitted-") {
            "jitted.so"
        } else {
            "[JIT]"
        }
    })
}

/// `p` with every frame's name and module normalised; stacks that become
/// equal merge, and every sample, weight, time and thread is kept.
pub fn normalise(p: &Profile) -> Profile {
    let mut out = Profile::new(p.title.clone(), p.unit);
    out.start_unix_ns = p.start_unix_ns;
    out.time_origin_ns = p.time_origin_ns;
    out.events = p.events.clone();
    out.damage = p.damage.clone();
    let frame_map: Vec<u32> = p
        .frames
        .iter()
        .map(|f| out.frame_parts(&name(&f.name), &module(&f.module), f.kind))
        .collect();
    // Parents are created before their children, so one pass in id order
    // maps every node; an out-of-order parent (a damaged stored tree) is
    // mapped by walking its stack instead.
    let mut node_map: Vec<u32> = Vec::with_capacity(p.node_count());
    for n in 0..p.node_count() {
        let parent = p.parent[n];
        let frame = frame_map[p.node_frame[n] as usize];
        let mapped = if parent == NO_PARENT {
            out.child(NO_PARENT, frame)
        } else if (parent as usize) < n {
            out.child(node_map[parent as usize], frame)
        } else {
            let frames = p.stack_frames(n as u32);
            let mut cur = NO_PARENT;
            for f in frames {
                cur = out.child(cur, frame_map[f as usize]);
            }
            cur
        };
        node_map.push(mapped);
    }
    let thread_map: Vec<u32> = p.threads.iter().map(|t| out.thread(t.clone())).collect();
    if let Some(counts) = &p.counts {
        let mut c = vec![0u64; out.node_count()];
        for (node, &w) in counts.iter().enumerate() {
            if let Some(&m) = node_map.get(node) {
                c[m as usize] = c[m as usize].saturating_add(w);
            }
        }
        out.counts = Some(c);
    }
    let mut samples = p.samples.clone();
    for n in &mut samples.node {
        *n = node_map.get(*n as usize).copied().unwrap_or(*n);
    }
    if let Some(th) = &mut samples.thread {
        for t in th.iter_mut() {
            *t = thread_map.get(*t as usize).copied().unwrap_or(*t);
        }
    }
    out.samples = samples;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v8_tiers_are_one_function() {
        for raw in [
            "JS:*query /srv/app/db.js:12:20",
            "JS:^query /srv/app/db.js:12:20",
            "JS:~query /srv/app/db.js:12:20",
            "JS:+query /srv/app/db.js:12:20",
            "LazyCompile:*query /srv/app/db.js:12:20",
            "Function:^query /srv/app/db.js:12:20",
            "InterpretedFunction:query /srv/app/db.js:12:20",
        ] {
            assert_eq!(name(raw), "JS:query /srv/app/db.js:12:20", "{raw}");
        }
        // Builtins and stubs carry no tier: left alone.
        assert_eq!(name("Builtin:JsonParse"), "Builtin:JsonParse");
        assert!(matches!(name("Builtin:JsonParse"), Cow::Borrowed(_)));
        // `*` inside a name is not a tier marker.
        assert_eq!(name("operator*"), "operator*");
    }

    #[test]
    fn java_numbering_goes() {
        assert_eq!(
            name("com.example.Handler$$Lambda$123/0x0000000800c0b440.apply"),
            "com.example.Handler$$Lambda.apply"
        );
        assert_eq!(
            name("com.example.Handler$$Lambda/0x000001f8b8012345.apply"),
            "com.example.Handler$$Lambda.apply"
        );
        assert_eq!(
            name("com.example.Handler$$Lambda.0x000001f8b8012345.run"),
            "com.example.Handler$$Lambda.run"
        );
        assert_eq!(
            name("jdk.proxy2.$Proxy12.handle"),
            "jdk.proxy2.$Proxy.handle"
        );
        assert_eq!(
            name("jdk.internal.reflect.GeneratedMethodAccessor45.invoke"),
            "jdk.internal.reflect.GeneratedMethodAccessor.invoke"
        );
        assert_eq!(
            name("jdk.internal.reflect.GeneratedSerializationConstructorAccessor7.newInstance"),
            "jdk.internal.reflect.GeneratedSerializationConstructorAccessor.newInstance"
        );
        // Numbers that are part of a real name stay.
        assert_eq!(name("Base64.encode"), "Base64.encode");
        assert_eq!(name("sha256_block_data_order"), "sha256_block_data_order");
    }

    #[test]
    fn addresses_go() {
        assert_eq!(name("Interpreter [0x7f3a12bc4000]"), "Interpreter");
        assert_eq!(name("0x7f3a12bc4000"), "[unknown]");
        assert_eq!(name("7f3a12bc4000"), "[unknown]");
        assert_eq!(name("stub@0x7f3a12bc4000 x"), "stub@0x… x");
        assert_eq!(name("vector<0x10>"), "vector<0x10>");
        assert_eq!(module("/tmp/perf-4242.map"), "/tmp/perf-PID.map");
        assert_eq!(
            module("/root/.debug/jit/jitted-4242-17.so"),
            "/root/.debug/jit/jitted.so"
        );
        assert_eq!(module("[JIT] tid 4242"), "[JIT]");
        assert_eq!(module("/usr/lib/libz.so.1"), "/usr/lib/libz.so.1");
    }

    #[test]
    fn stacks_that_become_equal_merge_and_weights_stay() {
        let text = "main;JS:*handle;JS:*query 10\nmain;JS:^handle;JS:~query 5\nmain;JS:*handle;JSON.parse 3\n";
        let p = crate::folded::parse(&mut text.as_bytes(), "t").unwrap();
        let n = normalise(&p);
        assert_eq!(n.total_weight(), p.total_weight());
        let folded = crate::collapse::folded_text(&n);
        assert_eq!(
            folded,
            "main;JS:handle;JS:query 15\nmain;JS:handle;JSON.parse 3\n"
        );
        let per = crate::diff::per_function(&n);
        assert_eq!(per["JS:query"].1, 15);
    }
}
