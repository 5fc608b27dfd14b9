//! ocrank-plan
