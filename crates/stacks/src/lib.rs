//! Profile model and parsers (perf script, folded, cpuprofile, pprof); collapse, diff and heat-map buckets.
