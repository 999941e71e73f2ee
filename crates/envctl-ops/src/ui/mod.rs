//! Everything that reaches the terminal: the [`Printer`] (stdout is data, stderr is talk),
//! styling, error and diagnostic rendering, tables, and outside text made safe to show
//! ([`text::shown`]).

pub mod findings;
pub mod live;
pub mod matrix_info;
pub mod printer;
pub mod progress;
pub mod report;
pub mod sparkline;
pub mod table;
pub mod terminal;
// Escaping and capping of outside text, in the core (the core quotes outside text too).
pub use envctl_core::text;

pub use printer::{ColorChoice, Printer, Verbosity};
