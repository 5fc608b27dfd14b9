//! ocrank-score
