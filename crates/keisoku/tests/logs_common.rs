//! Comparing `keisoku logs` output with alp's, cell by cell.
//!
//! Everything alp computes exactly (count, status classes, min, max, sum,
//! avg, stddev to 3 decimals, body columns) must be equal as text.
//! Percentile columns may differ by the documented histogram error: 0.1% of
//! the value plus the 0.0005 of printing at 3 decimals.

#![allow(dead_code)]

use std::collections::BTreeMap;

/// Rows of an output keyed by (method, uri), plus header keywords and row order.
#[derive(Debug)]
pub struct Parsed {
    pub keys: Vec<String>,
    pub rows: BTreeMap<(String, String), Vec<String>>,
    pub order: Vec<(String, String)>,
}

fn split_csv(line: &str) -> Vec<String> {
    // alp quotes a URI containing a comma and nothing else.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                cur.push(ch);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    out.push(cur);
    out
}

/// Parses table, markdown, tsv, csv or json output. `headers` false for
/// `--noheaders` (then keys are alp's defaults).
pub fn parse(text: &str, format: &str, headers: bool) -> Parsed {
    let mut lines: Vec<Vec<String>> = match format {
        "table" | "md" | "markdown" => text
            .lines()
            .filter(|l| l.starts_with('|') && !l.starts_with("|--"))
            .map(|l| {
                l.trim_end()
                    .trim_matches('|')
                    .split('|')
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect(),
        "tsv" => text
            .lines()
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect(),
        "csv" => text.lines().map(split_csv).collect(),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(text).expect("json output");
            v.as_array()
                .expect("array")
                .iter()
                .map(|row| {
                    row.as_array()
                        .expect("row")
                        .iter()
                        .map(|c| match c {
                            serde_json::Value::String(s) => s.clone(),
                            other => {
                                let f = other.as_f64().expect("number");
                                format!("{f:.3}")
                            }
                        })
                        .collect()
                })
                .collect()
        }
        other => panic!("unknown format {other}"),
    };
    let keys: Vec<String> = if headers {
        lines.remove(0).iter().map(|k| k.to_lowercase()).collect()
    } else {
        let mut k: Vec<String> = [
            "count", "1xx", "2xx", "3xx", "4xx", "5xx", "method", "uri", "min", "max", "sum",
            "avg", "p90", "p95", "p99",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        k.extend(
            ["stddev", "min(body)", "max(body)", "sum(body)", "avg(body)"]
                .iter()
                .map(|s| s.to_string()),
        );
        k
    };
    let mi = keys.iter().position(|k| k == "method");
    let ui = keys.iter().position(|k| k == "uri").expect("uri column");
    let mut rows = BTreeMap::new();
    let mut order = Vec::new();
    for l in lines {
        // Footer lines have an empty uri cell.
        if l.len() <= ui || l[ui].is_empty() {
            continue;
        }
        let key = (mi.map(|i| l[i].clone()).unwrap_or_default(), l[ui].clone());
        order.push(key.clone());
        rows.insert(key, l);
    }
    Parsed { keys, rows, order }
}

fn is_percentile(k: &str) -> bool {
    k.len() > 1 && k.starts_with('p') && k[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Asserts keisoku's rows equal alp's (exact except percentiles); returns
/// how many cells were compared.
pub fn assert_same(alp: &Parsed, ours: &Parsed, what: &str) -> usize {
    assert_eq!(alp.keys, ours.keys, "{what}: columns differ");
    let a: Vec<_> = alp.rows.keys().collect();
    let o: Vec<_> = ours.rows.keys().collect();
    assert_eq!(a, o, "{what}: routes differ");
    let mut cells = 0;
    for (key, arow) in &alp.rows {
        let orow = &ours.rows[key];
        assert_eq!(arow.len(), orow.len(), "{what}: {key:?} row length");
        for ((k, av), ov) in alp.keys.iter().zip(arow).zip(orow) {
            cells += 1;
            if k == "stddev" {
                // alp sums squared deviations in a second pass over every
                // value; keisoku's streaming moments agree to ~1e-12, so
                // only a printed last digit can flip.
                let (a, o): (f64, f64) = (av.parse().unwrap(), ov.parse().unwrap());
                assert!(
                    (a - o).abs() <= 0.0011,
                    "{what}: {key:?} stddev: alp {a} vs keisoku {o}"
                );
            } else if is_percentile(k) {
                let a: f64 = av
                    .parse()
                    .unwrap_or_else(|_| panic!("{what}: alp {k} {av:?}"));
                let o: f64 = ov
                    .parse()
                    .unwrap_or_else(|_| panic!("{what}: ours {k} {ov:?}"));
                assert!(
                    (a - o).abs() <= a * 0.001 + 0.0015,
                    "{what}: {key:?} {k}: alp {a} vs keisoku {o}"
                );
            } else {
                assert_eq!(av, ov, "{what}: {key:?} column {k}");
            }
        }
    }
    cells
}

/// Asserts both outputs list routes in the order of the `--sort` key. alp
/// sorts with Go's unstable sort, so rows that tie on the key may come in
/// any order: the sequences of key values must match, not the routes.
pub fn assert_same_order(alp: &Parsed, ours: &Parsed, args: &[String], what: &str) {
    let sort = args
        .iter()
        .position(|a| a == "--sort")
        .map(|i| args[i + 1].as_str())
        .unwrap_or("count");
    if is_percentile(sort) {
        return; // percentile values may differ within the histogram error
    }
    let col = match sort {
        "max-body" => "max(body)".to_string(),
        "min-body" => "min(body)".to_string(),
        "avg-body" => "avg(body)".to_string(),
        "sum-body" => "sum(body)".to_string(),
        s => s.to_string(),
    };
    let Some(ci) = alp.keys.iter().position(|k| *k == col) else {
        return;
    };
    let seq =
        |p: &Parsed| -> Vec<String> { p.order.iter().map(|k| p.rows[k][ci].clone()).collect() };
    assert_eq!(
        seq(alp),
        seq(ours),
        "{what}: rows not in the same --sort {sort} order"
    );
    if alp.order != ours.order {
        // Only ties may be permuted.
        let mut a = alp.order.clone();
        let mut o = ours.order.clone();
        a.sort();
        o.sort();
        assert_eq!(a, o, "{what}: different routes");
    }
}
