//! One worker's per-second ledger, shared by the HTTP/1.1 engine
//! (engine.rs) and the HTTP/2 driver (h2/driver.rs): the seconds not handed
//! over yet, the in-flight and connection counts carried across quiet
//! seconds, and what is published to the coordinator every ~200 ms (request
//! and error counts, the live latency histogram).
//!
//! A second is handed over once the clock has left it (time only moves on),
//! so the coordinator can report it while the phase runs; a quiet second is
//! handed over as a second with no response, never skipped, so a stall
//! shows as the zeros it was.

use crate::engine::Shared;
use crate::report::{new_histogram, Tally, SIGFIG_SECOND};
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// One second of one worker (or, merged, of the run).
pub(crate) struct SecondTally {
    pub tally: Tally,
    pub per_target: Vec<Option<Histogram<u64>>>,
    /// Per target (when several): (errors, of which transport errors).
    pub per_target_errors: Vec<(u64, u64)>,
    /// Most requests in flight within the second (summed over workers).
    pub inflight: u64,
    /// Open connections at the end of the second (summed over workers).
    pub connections: u64,
    /// Highest in-flight count reached by an increment in this second.
    inflight_peak: u64,
    /// In-flight count after the last change in this second, if any.
    inflight_end: Option<u64>,
    /// Open connections after the last change in this second, if any.
    conns_end: Option<u64>,
}

impl SecondTally {
    pub fn new(high_us: u64, open: bool) -> SecondTally {
        SecondTally {
            tally: Tally::new(high_us, SIGFIG_SECOND, open),
            per_target: Vec::new(),
            per_target_errors: Vec::new(),
            inflight: 0,
            connections: 0,
            inflight_peak: 0,
            inflight_end: None,
            conns_end: None,
        }
    }

    /// Adds another worker's (or phase's) view of the same second.
    pub fn merge(&mut self, o: SecondTally) {
        self.tally.merge(&o.tally);
        if !o.per_target.is_empty() {
            if self.per_target.is_empty() {
                self.per_target = vec![None; o.per_target.len()];
            }
            for (acc, h) in self.per_target.iter_mut().zip(o.per_target) {
                match (acc.as_mut(), h) {
                    (Some(a), Some(h)) => crate::report::add_hist(a, &h),
                    (None, Some(h)) => *acc = Some(h),
                    _ => {}
                }
            }
        }
        if !o.per_target_errors.is_empty() {
            if self.per_target_errors.is_empty() {
                self.per_target_errors = vec![(0, 0); o.per_target_errors.len()];
            }
            for (acc, e) in self.per_target_errors.iter_mut().zip(o.per_target_errors) {
                acc.0 += e.0;
                acc.1 += e.1;
            }
        }
        self.inflight += o.inflight;
        self.connections += o.connections;
    }
}

impl SecondTally {
    /// In flight rose to `n` within this second.
    pub(crate) fn inflight_rose(&mut self, n: u64) {
        self.inflight_peak = self.inflight_peak.max(n);
        self.inflight_end = Some(n);
    }

    /// In flight is `n` after a request ended or failed.
    pub(crate) fn inflight_now(&mut self, n: u64) {
        self.inflight_end = Some(n);
    }

    /// `n` connections are open after one opened or closed.
    pub(crate) fn conns_now(&mut self, n: u64) {
        self.conns_end = Some(n);
    }
}

/// One worker's seconds, from the phase's first to the one the clock is in.
pub(crate) struct SecondLedger {
    run_start: Instant,
    high_us: u64,
    open: bool,
    /// Seconds not handed over yet; the first is second `base`.
    seconds: VecDeque<SecondTally>,
    base: u64,
    /// In flight and open connections at the end of the last handed second.
    carry_inflight: u64,
    carry_conns: u64,
    /// Latency since the last publish, for the live p99.
    live: Histogram<u64>,
    /// Responses and errors since the last publish.
    pending_requests: u64,
    pending_errors: u64,
}

impl SecondLedger {
    /// A ledger whose first second is the one `phase_start` falls in, on
    /// the clock of `run_start`.
    pub(crate) fn new(
        run_start: Instant,
        phase_start: Instant,
        high_us: u64,
        open: bool,
    ) -> SecondLedger {
        SecondLedger {
            run_start,
            high_us,
            open,
            seconds: VecDeque::new(),
            base: phase_start.saturating_duration_since(run_start).as_secs(),
            carry_inflight: 0,
            carry_conns: 0,
            live: new_histogram(high_us, SIGFIG_SECOND),
            pending_requests: 0,
            pending_errors: 0,
        }
    }

    /// The second `now` falls in.
    pub(crate) fn second_mut(&mut self, now: Instant) -> &mut SecondTally {
        let s = now.saturating_duration_since(self.run_start).as_secs();
        // A second already handed over cannot receive more (time only moves
        // on); should it, the oldest kept second takes it.
        let idx = s.saturating_sub(self.base) as usize;
        while self.seconds.len() <= idx {
            self.seconds
                .push_back(SecondTally::new(self.high_us, self.open));
        }
        &mut self.seconds[idx]
    }

    /// A response (`error`: one that counts as an error) for the live view.
    pub(crate) fn response(&mut self, lat_us: u64, error: bool) {
        self.live.saturating_record(lat_us);
        self.pending_requests += 1;
        if error {
            self.pending_errors += 1;
        }
    }

    /// A transport error, for the live view.
    pub(crate) fn transport_error(&mut self) {
        self.pending_errors += 1;
    }

    /// Takes every second before `until` (creating the quiet ones: a
    /// stalled second is a second with no response, not a missing one),
    /// with in-flight and connection counts carried across quiet seconds.
    pub(crate) fn hand_over(&mut self, until: u64) -> Vec<(u64, SecondTally)> {
        let mut out = Vec::new();
        while self.base < until {
            let mut s = self
                .seconds
                .pop_front()
                .unwrap_or_else(|| SecondTally::new(self.high_us, self.open));
            s.inflight = self.carry_inflight.max(s.inflight_peak);
            self.carry_inflight = s.inflight_end.unwrap_or(self.carry_inflight);
            self.carry_conns = s.conns_end.unwrap_or(self.carry_conns);
            s.connections = self.carry_conns;
            out.push((self.base, s));
            self.base += 1;
        }
        out
    }

    /// Hands the seconds before the current one to the coordinator (they
    /// are complete on this worker's side) and publishes the live counts.
    pub(crate) fn publish(&mut self, shared: &Shared, worker: usize) {
        let current = Instant::now()
            .saturating_duration_since(self.run_start)
            .as_secs();
        if current > self.base {
            let done = self.hand_over(current);
            if let Ok(mut h) = shared.handed.lock() {
                h.extend(done);
            }
            if let Some(t) = shared.through.get(worker) {
                t.store(self.base, Ordering::Release);
            }
        }
        if self.pending_requests > 0 {
            shared
                .requests
                .fetch_add(self.pending_requests, Ordering::Relaxed);
            self.pending_requests = 0;
        }
        if self.pending_errors > 0 {
            shared
                .errors
                .fetch_add(self.pending_errors, Ordering::Relaxed);
            self.pending_errors = 0;
        }
        if !self.live.is_empty() {
            if let Ok(mut h) = shared.live.lock() {
                crate::report::add_hist(&mut h, &self.live);
            }
            self.live.reset();
        }
    }

    /// The worker has ended at `now`: its connections are closed and
    /// nothing is in flight, so its last second ends with none; every
    /// second is handed over, then `through` says the worker is done.
    pub(crate) fn finish(&mut self, shared: &Shared, worker: usize, now: Instant) {
        let last_second = self.second_mut(now);
        last_second.conns_end = Some(0);
        last_second.inflight_end = Some(0);
        let last = now.saturating_duration_since(self.run_start).as_secs() + 1;
        // Handed over before `through` says so: the coordinator reads
        // `through` first, then takes what was handed, so it never passes
        // on a second whose last part is still on its way.
        let seconds = self.hand_over(last);
        if let Ok(mut h) = shared.handed.lock() {
            h.extend(seconds);
        }
        if let Some(t) = shared.through.get(worker) {
            t.store(u64::MAX, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ledger(start: Instant) -> SecondLedger {
        SecondLedger::new(start, start, 1_000_000, false)
    }

    #[test]
    fn quiet_seconds_are_handed_over_with_the_counts_carried() {
        let t0 = Instant::now();
        let mut l = ledger(t0);
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        // Second 0: 3 in flight at the peak, 2 at its end, 4 connections.
        l.second_mut(at(0.1)).inflight_rose(3);
        l.second_mut(at(0.2)).inflight_now(2);
        l.second_mut(at(0.3)).conns_now(4);
        l.second_mut(at(0.4)).tally.requests += 5;
        // Second 3: one ends, none in flight.
        l.second_mut(at(3.5)).inflight_now(0);
        let out = l.hand_over(4);
        let secs: Vec<u64> = out.iter().map(|(s, _)| *s).collect();
        assert_eq!(secs, [0, 1, 2, 3]);
        let view: Vec<(u64, u64, u64)> = out
            .iter()
            .map(|(_, s)| (s.tally.requests, s.inflight, s.connections))
            .collect();
        // The stall in seconds 1-2 keeps the 2 in flight and 4 connections.
        assert_eq!(view, [(5, 3, 4), (0, 2, 4), (0, 2, 4), (0, 2, 4)]);
        // Nothing is handed twice; a late event lands in the oldest kept second.
        assert!(l.hand_over(4).is_empty());
        l.second_mut(at(1.0)).tally.requests += 1;
        let out = l.hand_over(5);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0, out[0].1.tally.requests), (4, 1));
    }

    #[test]
    fn a_phase_starts_its_ledger_at_its_own_second() {
        let t0 = Instant::now();
        let mut l = SecondLedger::new(t0, t0 + Duration::from_millis(2500), 1_000_000, true);
        l.second_mut(t0 + Duration::from_millis(2600))
            .tally
            .requests += 1;
        let out = l.hand_over(3);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0, out[0].1.tally.requests), (2, 1));
    }
}
