pub mod audit;
pub mod bench;
pub mod common;
pub mod compare;
pub mod eval;
pub mod prompts;
pub mod score;
