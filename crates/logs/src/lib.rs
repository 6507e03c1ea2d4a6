//! Access-log parsing, route grouping and per-route statistics (alp-compatible).
