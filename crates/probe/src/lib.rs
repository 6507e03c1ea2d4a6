//! Host and process samplers from /proc, the perf driver and JIT symbol maps.
