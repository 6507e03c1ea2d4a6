//! alp's `FORMAT diff --pos` and `--nosave-pos` against real alp: FROM is
//! read from the stored offset, TO from where FROM ended, and the position
//! file ends as alp leaves it (blank lines not counted, created when
//! missing), from every kind of start.

#[path = "logs_nginx.rs"]
mod logs_nginx;

use std::path::Path;
use std::process::Command;

fn run(bin: &Path, args: &[&str], dir: &Path) -> (Option<i32>, Vec<u8>) {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (out.status.code(), out.stdout)
}

#[test]
fn diff_with_a_position_file_reads_and_saves_as_alp_does() {
    let alp = logs_nginx::alp();
    let keisoku = Path::new(env!("CARGO_BIN_EXE_keisoku"));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let log =
        std::fs::read(logs_nginx::repo().join("crates/logs/tests/fixtures/mixed.ltsv")).unwrap();
    // FROM: the first 3,000 bytes plus blank lines (alp does not count
    // them in the position); TO: the whole log.
    let mut from = log[..3000].to_vec();
    from.extend_from_slice(b"\n\r\n");
    std::fs::write(d.join("from.ltsv"), &from).unwrap();
    std::fs::write(d.join("to.ltsv"), &log).unwrap();
    let mut differences = Vec::new();
    for start in [
        None,
        Some("0"),
        Some("500"),
        Some("2999"),
        Some("3001"),
        Some("999999"),
    ] {
        for flags in [
            vec![],
            vec!["--nosave-pos"],
            vec!["-q", "--sort", "sum", "-r"],
        ] {
            let mut outs = Vec::new();
            for (tool, bin, pre) in [
                ("alp", alp.as_path(), vec![]),
                ("keisoku", keisoku, vec!["logs"]),
            ] {
                let pos = d.join(format!("{tool}.pos"));
                let _ = std::fs::remove_file(&pos);
                if let Some(s) = start {
                    std::fs::write(&pos, s).unwrap();
                }
                let mut args: Vec<&str> = pre.clone();
                args.extend([
                    "ltsv",
                    "diff",
                    "from.ltsv",
                    "to.ltsv",
                    "--pos",
                    pos.to_str().unwrap(),
                ]);
                args.extend(flags.iter().copied());
                let (code, stdout) = run(bin, &args, d);
                let saved = std::fs::read_to_string(&pos).ok();
                outs.push((code == Some(0), stdout, saved));
            }
            let (a, k) = (&outs[0], &outs[1]);
            if a != k {
                differences.push(format!(
                    "start {start:?} {flags:?}: alp ok {} pos {:?}, keisoku ok {} pos {:?}, same output {}",
                    a.0, a.2, k.0, k.2, a.1 == k.1
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
