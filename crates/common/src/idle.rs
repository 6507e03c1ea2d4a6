//! The frames that mean "this CPU had nothing to run". One list for the
//! heat map, the flame graph's "hide idle" and the report's preview; the
//! report sends it to the web pages in their data, so the TypeScript UI
//! does not keep a copy of its own.

/// Kernel idle-loop functions and the idle task. A stack containing any of
/// them is an idle sample.
pub const IDLE_FRAMES: [&str; 8] = [
    "cpu_idle",
    "cpuidle_enter_state",
    "default_idle",
    "do_idle",
    "intel_idle",
    "poll_idle",
    "swapper",
    // pprof and some converters name the idle task so.
    "(idle)",
];

/// Whether `name` is one of [`IDLE_FRAMES`].
pub fn is_idle_frame(name: &str) -> bool {
    IDLE_FRAMES.contains(&name)
}
