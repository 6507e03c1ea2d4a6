//! The client's route table of a stored run: load targets that share a
//! method and path (one URL with several bodies, as the demo sends) are one
//! route, with every request counted once and latency from the merged
//! histograms, as an access log would group them. (Before, each target
//! was a row and the per-second histograms of same-path targets overwrote
//! each other in the store.)

mod common;
use common::free_port;

use std::process::Command;

use common::BIN;

#[test]
fn targets_with_one_path_are_one_client_route() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bodies = keisoku_demo::sample_requests(2);
    let mut targets = String::new();
    let port = free_port();
    for (i, body) in bodies.iter().enumerate() {
        let path = dir.path().join(format!("bid{i}.json"));
        std::fs::write(&path, body).expect("write body");
        targets.push_str(&format!(
            "POST http://127.0.0.1:{port}/bid @{}\n",
            path.display()
        ));
    }
    let targets_file = dir.path().join("targets.txt");
    std::fs::write(&targets_file, targets).expect("write targets");
    let store = dir.path().join("runs.db");
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args([
            "run",
            "--target",
            &format!("http://127.0.0.1:{port}/health"),
            "--server-cmd",
            &format!("'{BIN}' demo --target-only --listen 127.0.0.1:{port} --knobs all=tuned"),
            "--targets",
        ])
        .arg(&targets_file)
        .args([
            "-H",
            "Content-Type: application/json",
            "-c",
            "4",
            "-d",
            "2s",
            "--profile",
            "none",
            "--store",
        ])
        .arg(&store)
        .output()
        .expect("run keisoku");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_slice(&common::export(&store, "last", "json")).expect("run JSON");
    let client = run["routes"]["client"].as_array().expect("client routes");
    let routes: Vec<(&str, &str)> = client
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["uri"].as_str().unwrap()))
        .collect();
    // --target comes first in the rotation, then the file's lines.
    assert_eq!(routes, [("GET", "/health"), ("POST", "/bid")], "{client:?}");

    // Every request of the two /bid targets is counted once in the route.
    let target_requests: Vec<(String, u64)> = run["results"]["targets"]
        .as_array()
        .expect("per-target results")
        .iter()
        .map(|t| {
            (
                t["method"].as_str().unwrap().to_string(),
                t["requests"]
                    .as_u64()
                    .or_else(|| t["stats"]["requests"].as_u64())
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(target_requests.len(), 3, "{target_requests:?}");
    let bids: u64 = target_requests
        .iter()
        .filter(|(m, _)| m == "POST")
        .map(|(_, n)| n)
        .sum();
    assert!(bids > 0);
    let bid = &client[1];
    assert_eq!(bid["count"].as_u64(), Some(bids), "{bid:?}");
    assert_eq!(bid["2xx"].as_u64(), Some(bids), "{bid:?}");
    let (min, p50, max) = (
        bid["min"].as_f64().unwrap(),
        bid["p50"].as_f64().unwrap(),
        bid["max"].as_f64().unwrap(),
    );
    assert!(min > 0.0 && min <= p50 && p50 <= max, "{bid:?}");
}
