//! ocrank-engine
