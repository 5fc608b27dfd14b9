//! ocrank-audit: measure a scorer's order dependence on a collection.
//!
//! [`store`] keeps scored windows durably so that an interrupted audit
//! resumes where it stopped; [`analysis`] turns the stored scores into the
//! measures of SPEC.md sections 3-4 (ranking quality, tau-PSI, retained-set
//! overlap, BSC@K curve, slot profile, cost) and renders `results.json` and
//! `report.md`. Scoring itself is driven by the `ocrank audit` command.

pub mod analysis;
pub mod compare;
pub mod plot;
pub mod store;

pub use analysis::{analyse, Analysis, AuditSpec};
pub use store::{AuditLog, LineLog, OpenedLog, Store, StoreError, StoredWindow, WindowKey};
