//! What Ctrl-C (SIGINT, SIGTERM, SIGHUP) does to a command that measures:
//! the first asks it to stop and still write what was measured; a second
//! one within [`ECHO_WINDOW`] of the first is the same request arriving
//! twice (`timeout -s INT` signals keisoku, then its whole group; a
//! terminal's Ctrl-C reaches keisoku and its children) and changes
//! nothing; any later one, or a third, ends keisoku at once (exit 130).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How close a second signal must follow the first to count as the same
/// interruption.
pub const ECHO_WINDOW: Duration = Duration::from_secs(1);

/// What one more signal means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// Stop, keep and write what was measured.
    Stop,
    /// A repeat of the first signal: nothing more to do.
    Echo,
    /// The user insists: leave now.
    Leave,
}

/// The signals seen so far.
#[derive(Debug, Default)]
pub struct Interrupts {
    first: Option<Instant>,
    count: u32,
}

impl Interrupts {
    /// Counts a signal arriving at `now` and says what it means.
    pub fn arrive(&mut self, now: Instant) -> Meaning {
        self.count += 1;
        match self.first {
            None => {
                self.first = Some(now);
                Meaning::Stop
            }
            Some(t) if self.count == 2 && now.duration_since(t) <= ECHO_WINDOW => Meaning::Echo,
            Some(_) => Meaning::Leave,
        }
    }
}

/// Installs the policy: `stop` runs on the first signal (on the signal
/// thread, so it should only set flags or send messages).
pub fn on_interrupt(stop: impl Fn() + Send + 'static) {
    let seen = Mutex::new(Interrupts::default());
    // Only one handler per process; a command installs it once, and a
    // failure (none installed) leaves the default: Ctrl-C ends keisoku.
    let _ = ctrlc::set_handler(move || {
        let meaning = match seen.lock() {
            Ok(mut s) => s.arrive(Instant::now()),
            Err(_) => Meaning::Leave,
        };
        match meaning {
            Meaning::Stop => stop(),
            Meaning::Echo => {}
            Meaning::Leave => std::process::exit(130),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{Interrupts, Meaning, ECHO_WINDOW};
    use std::time::{Duration, Instant};

    #[test]
    fn a_double_signal_still_writes_and_a_third_leaves() {
        let t0 = Instant::now();
        let mut s = Interrupts::default();
        assert_eq!(s.arrive(t0), Meaning::Stop);
        assert_eq!(s.arrive(t0 + Duration::from_millis(3)), Meaning::Echo);
        assert_eq!(s.arrive(t0 + Duration::from_millis(5)), Meaning::Leave);
    }

    #[test]
    fn a_second_signal_after_the_window_leaves() {
        let t0 = Instant::now();
        let mut s = Interrupts::default();
        assert_eq!(s.arrive(t0), Meaning::Stop);
        assert_eq!(
            s.arrive(t0 + ECHO_WINDOW + Duration::from_millis(1)),
            Meaning::Leave
        );
    }
}
