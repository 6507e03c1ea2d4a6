//! The built-in demo target: a bid server with knobs that reproduce known performance problems.
