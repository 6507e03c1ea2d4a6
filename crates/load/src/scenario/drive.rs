//! The engine's side of scenarios, a child of the engine module so it
//! can steer a connection: each connection is a virtual user; its next
//! request is chosen and built when the previous answer is complete; think
//! time parks the user on a timer the event loop wakes for (no sleep).

use super::{Conn, Worker};
use crate::scenario::report::ScenarioTally;
use crate::scenario::user::{render, Inputs, User};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// A worker's scenario state.
pub(crate) struct WorkerScenario {
    pub tally: ScenarioTally,
    /// Think-time wake-ups: (when, connection, the user's timer token).
    timers: BinaryHeap<Reverse<(Instant, usize, u64)>>,
}

impl WorkerScenario {
    pub fn new(steps: usize, high_us: u64, open: bool) -> WorkerScenario {
        WorkerScenario {
            tally: ScenarioTally::new(steps, high_us, open),
            timers: BinaryHeap::new(),
        }
    }
}

impl Worker<'_, '_> {
    /// At a request's start: the step the connection's user runs next
    /// (beginning an iteration at `intended` when none is under way).
    pub(super) fn scenario_pick(&mut self, i: usize, intended: Instant) -> Option<usize> {
        let prep = self.spec.scenario?;
        let sc = &prep.scenario;
        let c: &mut Conn = &mut self.conns[i];
        let user = c
            .user
            .get_or_insert_with(|| Box::new(User::new(sc, intended)));
        if !user.in_iteration {
            user.begin(sc, intended);
        }
        Some(user.step.min(sc.steps.len() - 1))
    }

    /// Builds step `t`'s request for the user into the connection's draw
    /// buffer, and asks the reader to keep the answer for the checks.
    pub(super) fn scenario_render(&mut self, i: usize, t: usize) {
        let Some(prep) = self.spec.scenario else {
            return;
        };
        let spec = self.spec;
        let c = &mut self.conns[i];
        let Some(user) = c.user.as_deref() else {
            return;
        };
        let inp = Inputs {
            headers: &prep.headers,
            keepalive: spec.keepalive,
            data: spec.data,
            counters: spec.counters,
            absolute_form: spec.links.get(t).is_some_and(|l| l.absolute_form),
        };
        let fixed = spec.requests.get(t).map_or(&[][..], Vec::as_slice);
        if !render(
            user,
            &prep.scenario.steps[t],
            fixed,
            c.templated,
            &mut c.draw,
            &mut self.rng,
            &inp,
        ) {
            // Cannot happen for values an extraction accepted; the step's
            // compiled request (variables as 0) is sent rather than nothing.
            c.draw.buf.clear();
            c.draw.buf.extend_from_slice(fixed);
        }
        c.templated = true;
        c.reader.capture = Some(Box::default());
    }

    /// A step's answer is complete (already counted as the step's request):
    /// judge it, then run the next step, think, or end the iteration.
    pub(super) fn scenario_complete(&mut self, i: usize, t: usize, status: u16, now: Instant) {
        let Some(prep) = self.spec.scenario else {
            return;
        };
        let sc = &prep.scenario;
        let open = self.open;
        let cap = self.conns[i].reader.capture.take();
        let Some(user) = self.conns[i].user.as_deref_mut() else {
            return;
        };
        let Some(step) = sc.steps.get(t) else {
            return;
        };
        if let Err(f) = user.judge(step, status, cap.as_deref()) {
            if let Some(s) = &mut self.scen {
                if let Some(x) = s.tally.steps.get_mut(t) {
                    x.add(f);
                }
            }
            self.scenario_end(i, now, false);
            self.scenario_after_end(i, now);
            return;
        }
        if t + 1 == sc.once {
            user.once_done = true;
            if !open {
                // The closed model's iteration starts after the log-in.
                user.started = now;
            }
        }
        let think = step.think.map(|th| self.think_for(th.low, th.high));
        let Some(user) = self.conns[i].user.as_deref_mut() else {
            return;
        };
        if t + 1 < sc.steps.len() {
            user.step = t + 1;
            match think {
                Some(d) if !d.is_zero() => self.park(i, now + d),
                _ => self.scenario_continue(i, now),
            }
            return;
        }
        self.scenario_end(i, now, true);
        match think {
            // The open model's schedule paces iterations; the closed
            // model's user thinks before its next one.
            Some(d) if !open && !d.is_zero() => self.park(i, now + d),
            _ => self.scenario_after_end(i, now),
        }
    }

    /// A step's request failed in transport: counted by the engine as the
    /// step's error; it ends the iteration.
    pub(super) fn scenario_failed(&mut self, i: usize, t: usize, now: Instant) {
        if let Some(s) = &mut self.scen {
            if let Some(x) = s.tally.transport.get_mut(t) {
                *x += 1;
            }
        }
        self.scenario_end(i, now, false);
    }

    fn think_for(&mut self, low: Duration, high: Duration) -> Duration {
        let span = high.saturating_sub(low).as_micros() as u64;
        if span == 0 {
            return low;
        }
        low + Duration::from_micros(self.rng.below(span + 1))
    }

    fn park(&mut self, i: usize, until: Instant) {
        let Some(user) = self.conns[i].user.as_deref_mut() else {
            return;
        };
        user.timer = user.timer.wrapping_add(1);
        user.thinking = true;
        let token = user.timer;
        if let Some(s) = &mut self.scen {
            s.timers.push(Reverse((until, i, token)));
        }
    }

    /// Sends the user's next step now, if the phase still sends.
    fn scenario_continue(&mut self, i: usize, now: Instant) {
        if self.can_send() {
            let step = self.conns[i].user.as_ref().map_or(0, |u| u.step);
            self.start_request(i, step, now, now);
            return;
        }
        if let Some(user) = self.conns[i].user.as_deref_mut() {
            if user.in_iteration {
                user.in_iteration = false;
                if let Some(s) = &mut self.scen {
                    s.tally.unfinished += 1;
                }
            }
        }
        if self.open {
            self.make_free(i);
        }
    }

    /// Counts the end of the user's iteration.
    fn scenario_end(&mut self, i: usize, now: Instant, ok: bool) {
        let Some(user) = self.conns[i].user.as_deref_mut() else {
            return;
        };
        if !user.in_iteration {
            return;
        }
        user.in_iteration = false;
        let us = (now.saturating_duration_since(user.started).as_micros() as u64).max(1);
        if let Some(s) = &mut self.scen {
            s.tally.iterations.requests += 1;
            s.tally.iterations.latency.saturating_record(us);
            if !ok {
                s.tally.failed += 1;
            }
        }
    }

    /// After an iteration: the open model frees the user for the schedule;
    /// the closed model starts its next iteration (as the engine does
    /// after a plain request).
    fn scenario_after_end(&mut self, i: usize, now: Instant) {
        if self.open {
            self.make_free(i);
        } else if i >= self.active {
            self.close(i);
        } else if self.can_send() {
            self.start_request(i, 0, now, now);
        }
    }

    /// Wakes the users whose think time is over; the next wake-up.
    pub(super) fn scenario_timers(&mut self, now: Instant) -> Option<Instant> {
        loop {
            let s = self.scen.as_mut()?;
            let &Reverse((at, i, token)) = s.timers.peek()?;
            if at > now {
                return Some(at);
            }
            s.timers.pop();
            let Some(user) = self.conns.get_mut(i).and_then(|c| c.user.as_deref_mut()) else {
                continue;
            };
            if !user.thinking || user.timer != token {
                continue;
            }
            user.thinking = false;
            if user.in_iteration {
                self.scenario_continue(i, now);
            } else {
                self.scenario_after_end(i, now);
            }
        }
    }

    /// The phase is over: iterations still under way are unfinished.
    pub(super) fn scenario_finish(&mut self) -> Option<ScenarioTally> {
        let cut = self
            .conns
            .iter()
            .filter(|c| c.user.as_ref().is_some_and(|u| u.in_iteration))
            .count() as u64;
        let s = self.scen.as_mut()?;
        s.tally.unfinished += cut;
        Some(s.tally.clone())
    }
}
