//! HTTP load engine: connections, schedules, latency histograms, sweeps, knee and SLO judgement.
