//! Frame-name patterns of work known to be expensive when it runs per
//! request. Matched as substrings of the frame's function name, across
//! languages (Rust, C/C++, Java, Node, Python) and the kernel.

/// A kind of known-expensive work.
pub(crate) struct Kind {
    /// Qualifier in the finding id (`hot-code.<key>`).
    pub key: &'static str,
    /// What it is, for titles.
    pub what: &'static str,
    /// Share of the server's samples (inclusive) from which it is reported.
    pub min_share: f64,
    /// Substrings of frame names.
    pub patterns: &'static [&'static str],
    /// What to try.
    pub suggestion: &'static str,
}

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
            "JSON.parse",
            "JsonParse",
            "json.loads",
            "json.decoder",
            "ObjectMapper.readValue",
            "jackson.core.json",
            "simdjson",
            "yyjson_read",
            "cJSON_Parse",
            "json_parse",
            "rapidjson::GenericReader",
        ],
        suggestion: "parse once and keep the parsed objects (cache values, not JSON text); \
parse only the fields a request needs",
    },
    Kind {
        key: "regex-compile",
        what: "regex compilation",
        min_share: 0.05,
        patterns: &[
            "regex::regex::string::Regex::new",
            "regex::Regex::new",
            "RegexBuilder::build",
            "regex_syntax::",
            "regex_automata::meta::regex::Builder::build",
            "regex_automata::nfa::thompson::compiler",
            "regex_automata::nfa::thompson::builder",
            "regex_automata::util::determinize",
            "regex_automata::dfa::onepass::Builder",
            "java.util.regex.Pattern.compile",
            "java.util.regex.Pattern.<init>",
            "sre_compile",
            "re._compile",
            "pcre2_compile",
            "pcre_compile",
            "regcomp",
            "RegExpImpl::Compile",
            "RegExpCompiler",
        ],
        suggestion: "compile regular expressions once (a static, lazy or at start) and reuse them",
    },
    Kind {
        key: "formatter",
        what: "formatter construction",
        min_share: 0.03,
        patterns: &[
            "format_description::parse",
            "format_description::parse_borrowed",
            "StrftimeItems::new",
            "Intl.DateTimeFormat",
            "DateTimeFormat::New",
            "JSDateTimeFormat::New",
            "SimpleDateFormat.<init>",
            "DateTimeFormatter.ofPattern",
            "DecimalFormat.<init>",
            "NumberFormat.getInstance",
            "icu::SimpleDateFormat::SimpleDateFormat",
            "newlocale",
        ],
        suggestion: "build formatters (date, number, message) once and reuse them",
    },
    Kind {
        key: "config-load",
        what: "loading configuration",
        min_share: 0.03,
        patterns: &[
            "Config::load",
            "Config::from_file",
            "Config::read",
            "config::load",
            "load_config",
            "read_config",
            "Settings::load",
            "ConfigFactory.load",
            "Properties.load",
            "yaml.safe_load",
            "yaml.load",
            "configparser",
        ],
        suggestion: "load configuration once at start (or on change) and share it; \
a service or container built per request repeats it every time",
    },
    Kind {
        key: "file-open",
        what: "opening and reading files",
        min_share: 0.015,
        patterns: &[
            "do_sys_openat2",
            "do_filp_open",
            "path_openat",
            "__x64_sys_openat",
            "__x64_sys_open",
            "std::fs::read",
            "std::fs::File::open",
            "std::fs::OpenOptions::_open",
            "readFileSync",
            "fs.readFileSync",
            "java.io.FileInputStream.open",
            "io.open",
        ],
        suggestion: "read configuration and templates once at start (or on change), \
not per request; build per-request services from shared state",
    },
];

/// Work that stalls a server when it runs under a lock or on the request
/// path: copying, compressing, syncing and writing files.
pub(crate) const STALL_WORK: &[&str] = &[
    "deflate",
    "compress",
    "gzip",
    "zlib",
    "copy_file_range",
    "std::io::copy",
    "io::copy",
    "copy_compressed",
    "rollover",
    "Rollover",
    "sendfile",
    "fsync",
    "fdatasync",
    "ext4_file_write_iter",
    "generic_perform_write",
    "xfs_file_write_iter",
];

pub(crate) fn matches(name: &str, patterns: &[&str]) -> bool {
    patterns.iter().any(|p| name.contains(p))
}
