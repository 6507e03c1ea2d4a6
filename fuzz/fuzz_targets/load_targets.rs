//! Any text as a `keisoku bench --targets FILE` file (`[weight] METHOD URL
//! [@bodyfile]` per line): no panic; every target read has a method, a
//! weight of at least 1, a path that goes on the wire and the body of the
//! file it names. Body files are resolved beside the targets file, in a
//! directory of this process's own under $TMPDIR holding one body file.
//!
//! Reading a target resolves its host, so only inputs whose URLs name
//! literal addresses or `localhost` are read: a fuzzer must not send name
//! lookups to the network, and only files in that directory may be named.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

const BODY: &[u8] = b"{\"item\":1}\n";

/// The directory holding the targets file and the body file `body`.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("keisoku-fuzz-targets-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("create the targets directory");
        std::fs::write(d.join("body"), BODY).expect("write the body file");
        d
    })
}

/// Whether reading `text` could look a name up or open a file outside
/// [`dir`].
fn leaves_the_sandbox(text: &str) -> bool {
    text.split_whitespace().any(|w| {
        if let Some(file) = w.strip_prefix('@') {
            return file.starts_with('/') || file.contains("..");
        }
        match keisoku_load::plan::parse_url(w) {
            Ok(u) => u.host != "localhost" && u.host.parse::<std::net::IpAddr>().is_err(),
            Err(_) => false,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if leaves_the_sandbox(text) {
        return;
    }
    let path = dir().join("targets");
    std::fs::write(&path, text).expect("write the targets file");
    let Ok(targets) = keisoku_load::plan::parse_targets_file(&path) else {
        return;
    };
    assert!(!targets.is_empty());
    for t in &targets {
        assert!(!t.method.is_empty() && t.method.bytes().all(|b| b.is_ascii_uppercase()));
        assert!(t.weight >= 1);
        assert!(t.path.starts_with('/') && !t.path.bytes().any(|b| b <= b' ' || b == 0x7f));
        assert!(t.body.is_empty() || t.body == BODY, "{:?}", t.body);
    }
});
