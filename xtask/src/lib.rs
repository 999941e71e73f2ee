//! The library half of `cargo xtask`: what its tests reach as well as its binary.
//!
//! [`rules`]: ARCHITECTURE.md's layering rules, checked over envctl's `src/` by a parser.

pub mod rules;
