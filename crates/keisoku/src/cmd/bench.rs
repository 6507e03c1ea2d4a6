//! `keisoku bench`: drive HTTP load at a target and measure latency honestly.

use crate::exit::{FAILURE, GATE_FAILED, OK};
use crate::shared::load::{announce_proxy, build, load_err, write_outputs, LoadArgs};
use crate::shared::output::Progress;
use keisoku_load::RunControl;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Flags of `keisoku bench`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Drive HTTP load at a target and measure latency honestly",
    long_about = "Drive HTTP/1.1 load (http:// or https://, TCP or a Unix socket, direct or through a proxy), HTTP/2 (--h2, --streams) or gRPC unary calls (--grpc) at one or more URLs (rotated) and report throughput, \
latency percentiles from HdrHistograms, status classes, errors by kind and a per-second timeline.\n\n\
Closed model (-c): each connection sends its next request when the previous answer arrives; \
latency is service time. Open model (-R): requests go out on a fixed schedule and latency counts \
from each request's intended send time, so a stalled server shows in the percentiles \
(coordinated omission corrected, as wrk2 does); service time is reported beside it.\n\nTemplates vary each request: in a URL's path and query, -H values, --body and --targets lines, {{seq}}, {{rand_int A B}}, {{rand_str N}}, {{uuid}}, {{timestamp}}, {{timestamp_ms}} and {{csv.COLUMN}} (from --data FILE.csv) are replaced per request; {{{{ sends a literal {{. Anything else between {{ and }} is refused (exit 2). Requests carry User-Agent: keisoku/VERSION unless -H sets one.\n\n\
Replay (--replay FILE): the requests of an access log or a HAR file go to the target at their recorded pace \
(an open model: latency counts from each request's recorded time, scaled by --speed), or with --speed max as fast as -c connections allow; results are per route.",
    after_help = "Examples:\n  keisoku bench -c 50 -d 30s http://127.0.0.1:8080/health\n  \
keisoku bench -R 4000 -d 1m --slo 'p99<=1s,p80<=500ms,errors<=0.1%' http://127.0.0.1:8080/bid\n  \
keisoku bench --sweep-connections 5..50:5 --step-duration 10s http://127.0.0.1:8080/\n  \
keisoku bench -R 500 --data users.csv 'http://127.0.0.1:8080/users/{{csv.id}}?r={{rand_int 1 100}}'\n  \
keisoku bench --sweep-rate 1000..8000:1000 --slo 'p99<=100ms' --find-max http://127.0.0.1:8080/\n  \
keisoku bench -k --no-keepalive -c 20 -d 10s https://127.0.0.1:8443/\n  \
keisoku bench --unix-socket /run/app.sock http://localhost/health\n  \
keisoku bench --h2 -k -c 4 --streams 25 -d 30s https://127.0.0.1:8443/\n  \
keisoku bench --grpc /helloworld.Greeter/SayHello --body @hello.bin -c 10 http://127.0.0.1:50051\n  \
keisoku bench --replay access.log --speed 2 http://127.0.0.1:8080\n  \
keisoku bench --replay shop.har --speed max -c 20 http://127.0.0.1:8080\n\n\
Exit status: 0 ok, 1 no request succeeded or interrupted, 2 bad input, 3 the SLO failed."
)]
pub struct Args {
    /// Target URLs (http://host[:port]/path); several are rotated.
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    #[command(flatten)]
    load: LoadArgs,
    /// Write machine-readable results to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// Write an HdrHistogram interval log (.hlog), one interval per second.
    #[arg(long, value_name = "FILE")]
    hdr_log: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let job = build(&args.urls, &args.load)?;
    announce_proxy(&job);
    crate::shared::load::check_outputs(args.json.as_deref(), args.hdr_log.as_deref())?;
    let progress = Progress::new(false);
    let ctl = RunControl {
        progress: progress.for_load(),
        ..RunControl::default()
    };
    let stop = ctl.stop.clone();
    crate::signals::on_interrupt(move || stop.store(true, Ordering::SeqCst));
    let mut report = job.run(&ctl).map_err(load_err)?;
    progress.clear();
    let gate_pass = job.judge(&mut report);
    write_outputs(args.json.as_deref(), args.hdr_log.as_deref(), &report)?;
    if report.nothing_succeeded() {
        let why = report.failure_reason();
        eprintln!("keisoku: error: not one request succeeded: {why}");
        return Ok(FAILURE);
    }
    if report.partial {
        eprintln!("keisoku: interrupted: the results above are partial");
        return Ok(FAILURE);
    }
    Ok(if gate_pass { OK } else { GATE_FAILED })
}
