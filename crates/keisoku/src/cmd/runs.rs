//! `keisoku runs`: the stored runs, newest first.

use crate::exit::OK;
use crate::shared::store::{self, StoreArg};
use keisoku_common::{human_duration, utc};
use std::io::Write;

/// Flags of `keisoku runs`.
#[derive(clap::Args, Debug)]
#[command(
    about = "List stored runs, newest first",
    after_help = "Columns: id, name, started (UTC), duration, target, status (running, complete, \
interrupted), requests/s and p99 latency of the measured phases.\n\n\
Examples:\n  keisoku runs\n  keisoku runs --json | jq '.[0].id'\n  keisoku runs --store /data/lab.db"
)]
pub struct Args {
    /// Print a JSON array instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runs(args)
}

fn runs(args: Args) -> anyhow::Result<u8> {
    let path = args.store.path();
    let runs = if path.exists() {
        store::open_existing(&path)?
            .list()
            .map_err(store::store_error)?
    } else {
        Vec::new()
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &runs)?;
        writeln!(out)?;
        return Ok(OK);
    }
    if runs.is_empty() {
        eprintln!(
            "no runs in {} yet; record one with `keisoku run --target URL` or `keisoku record -- CMD`",
            path.display()
        );
        return Ok(OK);
    }
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.name.clone(),
                utc(r.started_unix_ms),
                human_duration(r.duration_ms),
                r.target.clone().unwrap_or_else(|| "-".into()),
                r.status.clone(),
                r.rps.map_or("-".into(), |v| format!("{v:.1}")),
                r.p99_ms.map_or("-".into(), |v| format!("{v:.2}ms")),
            ]
        })
        .collect();
    let head = [
        "ID",
        "NAME",
        "STARTED (UTC)",
        "DURATION",
        "TARGET",
        "STATUS",
        "RPS",
        "P99",
    ];
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            // Numbers right-aligned, text left-aligned.
            if i >= 6 {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(&head.map(String::from)))?;
    for row in &rows {
        writeln!(out, "{}", line(row))?;
    }
    Ok(OK)
}
