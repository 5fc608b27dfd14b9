//! ocrank-metrics
