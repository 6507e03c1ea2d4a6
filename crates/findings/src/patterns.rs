//! Frame-name patterns of work known to be expensive when it runs per
//! request, per language (docs/findings.md, "Frame names per language").
//!
//! Patterns are lowercase and matched case-insensitively as substrings of
//! the frame's function name: runtimes spell the same work differently
//! (`GZIPOutputStream`, `gzip.compress`, `deflate`), and perf names code it
//! cannot symbolise by its module in brackets (`[libz.so.1.2.13]`). Module
//! patterns ([`STALL_MODULES`]) match the frame's module file name as well,
//! because perf cannot walk through libraries built without frame pointers:
//! a compression sample is `worker;[libz.so.1.2.13]` with no caller to name.

/// A kind of known-expensive work.
pub(crate) struct Kind {
    /// Qualifier in the finding id (`hot-code.<key>`).
    pub key: &'static str,
    /// What it is, for titles.
    pub what: &'static str,
    /// Share of the server's request work (inclusive) from which it is
    /// reported; see `hot_code` for what the share is of.
    pub min_share: f64,
    /// Lowercase substrings of frame names.
    pub patterns: &'static [&'static str],
    /// A frame matching one of these counts only when a frame below it (a
    /// callee) matches [`Kind::callee`]: a constructor (V8's construct
    /// stub, Java's `<init>`, Python's `__init__`, Rust's `::new`) or a DI
    /// container is per-request configuration only when it reads a file.
    pub caller: &'static [&'static str],
    /// What a [`Kind::caller`] frame must call to count.
    pub callee: &'static [&'static str],
    /// Keys of kinds whose work below this kind's frame is this kind's:
    /// a configuration load reads and parses a file, and that reading and
    /// parsing is the cost of the load, not a cause of its own.
    pub absorbs: &'static [&'static str],
    /// What to try.
    pub suggestion: &'static str,
}

/// File reads as every runtime names them: the kernel's open path, libc,
/// Rust, Node (`readFileSync`, its `fs::Open` binding), Java, Python, Perl.
const FILE_READ: &[&str] = &[
    "do_sys_openat2",
    "do_filp_open",
    "path_openat",
    "__x64_sys_openat",
    "__x64_sys_open",
    "std::fs::read",
    "std::fs::file::open",
    "std::fs::openoptions::_open",
    "readfilesync",
    "fs::open",
    "fs::readfileutf8",
    "java.io.fileinputstream.open",
    "java.nio.file.files.read",
    "io.open",
    "_io.open",
    "pathlib.path.read_text",
    "pp_open",
];

/// Parsing, compiling and constructing work that a request should not
/// repeat. Thresholds: parsing is part of most requests (the body), so it
/// must take a large share before it counts; compiling a regex or building
/// a formatter is never needed per request, so a small share counts.
pub(crate) const KINDS: &[Kind] = &[
    Kind {
        key: "json-parse",
        what: "JSON parsing",
        min_share: 0.12,
        patterns: &[
            "serde_json::de::",
            "serde_json::from_",
            "serde_json::read::",
            "json.parse",
            "jsonparse",
            "json::parse",
            "json.loads",
            "json.decoder",
            "json/decoder.py",
            "objectmapper.readvalue",
            "objectmapper.readtree",
            "jackson.core.json",
            "gson.fromjson",
            "simdjson",
            "yyjson_read",
            "cjson_parse",
            "json_parse",
            "json::xs::decode",
            "json::pp::decode",
            "decode_json",
            "rapidjson::genericreader",
            "orjson.loads",
            "ujson.loads",
        ],
        caller: &[],
        callee: &[],
        absorbs: &[],
        suggestion: "parse once and keep the parsed objects (cache values, not JSON text); \
parse only the fields a request needs",
    },
    Kind {
        key: "regex-compile",
        what: "regex compilation",
        min_share: 0.03,
        patterns: &[
            "regex::regex::string::regex::new",
            "regex::regex::new",
            "regexbuilder::build",
            "regex_syntax::",
            "regex_automata::meta::regex::builder::build",
            "regex_automata::nfa::thompson::compiler",
            "regex_automata::nfa::thompson::builder",
            "regex_automata::util::determinize",
            "regex_automata::dfa::onepass::builder",
            "java.util.regex.pattern.compile",
            "java.util.regex.pattern.<init>",
            "sre_compile",
            "re._compile",
            "re/_compiler.py",
            "re/_parser.py",
            "sre_parse",
            "pcre2_compile",
            "pcre_compile",
            "regcomp",
            "regexpimpl::compile",
            "regexpcompiler",
            "regexp::compile",
            "pregcomp",
            "perl_re_compile",
        ],
        caller: &[],
        callee: &[],
        absorbs: &[],
        suggestion: "compile regular expressions once (a static, lazy or at start) and reuse them",
    },
    Kind {
        key: "formatter",
        what: "formatter construction",
        min_share: 0.03,
        patterns: &[
            "format_description::parse",
            "format_description::parse_borrowed",
            "strftimeitems::new",
            "intl.datetimeformat",
            "datetimeformat::new",
            "jsdatetimeformat::new",
            "datetimeformatconstructor",
            "numberformatconstructor",
            "jsnumberformat::new",
            "simpledateformat.<init>",
            "datetimeformatter.ofpattern",
            "decimalformat.<init>",
            "numberformat.getinstance",
            "icu::simpledateformat::simpledateformat",
            "newlocale",
            "babel.dates.format",
            "datetime::format::strptime::new",
            "posix::strftime",
        ],
        caller: &[],
        callee: &[],
        // JDK 17 compiles regexes while it builds a currency NumberFormat
        // (DecimalFormat.applyPattern, DecimalFormatSymbols.initializeCurrency):
        // the formatter's cost, gone when it is built once (java-bidder
        // `formatter` alone showed regex compilation as a second problem).
        absorbs: &["regex-compile"],
        suggestion: "build formatters (date, number, message) once and reuse them",
    },
    Kind {
        key: "config-load",
        what: "loading configuration",
        min_share: 0.03,
        patterns: &[
            "config::load",
            "config::from_file",
            "config::read",
            "config.load",
            "config.read",
            "load_config",
            "loadconfig",
            "read_config",
            "readconfig",
            "load_settings",
            "loadsettings",
            "settings::load",
            "configfactory.load",
            "properties.load",
            "yaml.safe_load",
            "yaml.load",
            "yaml::load",
            "configparser",
            "dotenv",
            "config::tiny->read",
        ],
        caller: &[
            "jsconstructstub",
            ".<init>",
            "__init__ (",
            "::new",
            "container",
            "injector",
            "servicelocator",
            "service_locator",
            "beanfactory",
            "createbean",
            "provider.get",
        ],
        callee: FILE_READ,
        absorbs: &["json-parse", "file-open"],
        suggestion: "load configuration once at start (or on change) and share it; \
a service or container built per request repeats it every time",
    },
    Kind {
        key: "file-open",
        what: "opening and reading files",
        min_share: 0.015,
        patterns: FILE_READ,
        caller: &[],
        callee: &[],
        absorbs: &[],
        suggestion: "read configuration and templates once at start (or on change), \
not per request; build per-request services from shared state",
    },
];

/// Work that stalls a server when it runs under a lock or on the request
/// path: copying, compressing, syncing and writing files, and the log
/// frameworks' rollover that does it (logback's `RollingFileAppender`
/// `rollover`, its `Compressor`, Python's `RotatingFileHandler.doRollover`).
pub(crate) const STALL_WORK: &[&str] = &[
    "deflate",
    "compress",
    "gzip",
    "zlib",
    "crc32",
    "copy_file_range",
    "std::io::copy",
    "io::copy",
    "copy_compressed",
    "rollover",
    "shutil.copyfileobj",
    "files.copy",
    "sendfile",
    "fsync",
    "fdatasync",
    "ext4_file_write_iter",
    "generic_perform_write",
    "xfs_file_write_iter",
];

/// Compression libraries by module file name: perf names a library it
/// cannot symbolise by its module (`[libz.so.1.2.13]`), with no caller.
pub(crate) const STALL_MODULES: &[&str] = &[
    "libz.so",
    "libz-ng",
    "libzstd",
    "liblzma",
    "libbz2",
    "libdeflate",
];

/// Threads of a runtime that never serve a request: JIT compilers, garbage
/// collectors, the VM's own. Their samples are not the request path.
pub(crate) const RUNTIME_THREADS: &[&str] = &[
    "c1 compilerthre",
    "c2 compilerthre",
    "compilerthre",
    "gc thread",
    "g1 ",
    "vm thread",
    "vm periodic",
    "signal dispatch",
    "sweeper thread",
    "v8:",
    "v8 defaultworke",
    "v8 platformwork",
];

/// Frames at the root of a runtime's helper threads, for runtimes whose
/// helpers carry the process's own name (Node's V8 platform workers are
/// all `node`): the JIT compiling in the background, concurrent GC.
pub(crate) const RUNTIME_FRAMES: &[&str] = &[
    "platformworkerthread",
    "defaultjobworker",
    "optimizingcompiledispatcher",
    "concurrentmarking",
    "compilebroker::compiler_thread_loop",
];

/// Frames that name no function of the program: HotSpot's template
/// interpreter (every interpreted method's samples), code perf could not
/// place, the JIT's stubs. The hottest function is named past them.
pub(crate) const NO_FUNCTION: &[&str] = &["interpreter", "[unknown]", "stubroutines::"];

/// Whether a lowercase frame name holds one of the lowercase patterns.
pub(crate) fn matches(name_lc: &str, patterns: &[&str]) -> bool {
    patterns.iter().any(|p| name_lc.contains(p))
}

/// Whether a frame is stall work: its name, or its module's file name for
/// the compression libraries.
pub(crate) fn is_stall_work(name_lc: &str, module_lc: &str) -> bool {
    if matches(name_lc, STALL_WORK) || matches(name_lc, STALL_MODULES) {
        return true;
    }
    let file = module_lc.rsplit('/').next().unwrap_or(module_lc);
    matches(file, STALL_MODULES)
}

/// A frame name without the line being executed: py-spy and perf's Python
/// support write `handle (app.py:42)` or `handle (/srv/app.py:42)`, with
/// the line sampled, not the function's, so one function would be as many
/// frames as lines sampled in it; it becomes `handle (app.py)`. Other
/// names come back unchanged (a JavaScript `file.js:12:5` is where the
/// function is defined).
pub(crate) fn function_name(name: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let Some(open) = name.rfind(" (") else {
        return Cow::Borrowed(name);
    };
    let Some(inner) = name[open + 2..].strip_suffix(')') else {
        return Cow::Borrowed(name);
    };
    let Some((file, line)) = inner.rsplit_once(':') else {
        return Cow::Borrowed(name);
    };
    let is_python = file.ends_with(".py") || file.ends_with(".pyx") || file.starts_with('<');
    if is_python && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
        Cow::Owned(format!("{} ({file})", &name[..open]))
    } else {
        Cow::Borrowed(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_lines_are_dropped_and_other_names_kept() {
        assert_eq!(function_name("handle (app.py:42)"), "handle (app.py)");
        assert_eq!(
            function_name("handle (/srv/app.py:7)"),
            "handle (/srv/app.py)"
        );
        assert_eq!(
            function_name("JS:*query /a.js:12:5"),
            "JS:*query /a.js:12:5"
        );
        assert_eq!(function_name("f (x.js:3)"), "f (x.js:3)");
        assert_eq!(function_name("main"), "main");
    }

    #[test]
    fn modules_name_compression_without_callers() {
        assert!(is_stall_work("[libz.so.1.2.13]", ""));
        assert!(is_stall_work(
            "0x7f12",
            "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"
        ));
        assert!(is_stall_work(
            "java.util.zip.gzipoutputstream.write",
            "/tmp/perf-1.map"
        ));
        assert!(!is_stall_work("score", "/usr/lib/libc.so.6"));
    }

    #[test]
    fn patterns_are_lowercase() {
        let all = KINDS
            .iter()
            .flat_map(|k| k.patterns.iter().chain(k.caller).chain(k.callee))
            .chain(STALL_WORK)
            .chain(STALL_MODULES)
            .chain(RUNTIME_THREADS)
            .chain(RUNTIME_FRAMES)
            .chain(NO_FUNCTION);
        for p in all {
            assert_eq!(*p, p.to_lowercase(), "{p}");
        }
    }
}
