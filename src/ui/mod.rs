//! Everything that reaches the terminal: the [`Printer`] (stdout is data, stderr is talk),
//! styling, error and diagnostic rendering, tables.

pub mod findings;
pub mod live;
pub mod matrix_info;
pub mod printer;
pub mod progress;
pub mod report;
pub mod table;
pub mod terminal;

pub use printer::{ColorChoice, Printer, Verbosity};
