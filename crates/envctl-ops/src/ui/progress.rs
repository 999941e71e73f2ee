//! Pull progress on stderr: one indicatif bar per layer on a terminal (like `docker pull`),
//! plain status lines otherwise, nothing with `--json` or `-q`.

use std::collections::HashMap;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::printer::Printer;
use super::text::shown;
use crate::facts::engine::PullEvent;

/// Draws the events of one pull.
pub enum PullProgress<'a> {
    Bars {
        bars: MultiProgress,
        layers: HashMap<String, ProgressBar>,
        style: ProgressStyle,
    },
    Lines {
        printer: &'a Printer,
        last_status: HashMap<String, String>,
    },
    Silent,
}

impl<'a> PullProgress<'a> {
    /// Bars on a terminal, lines otherwise, nothing when `silent` (`--json`, `-q`).
    pub fn new(printer: &'a Printer, silent: bool) -> Self {
        if silent {
            return PullProgress::Silent;
        }
        if console::Term::stderr().is_term() {
            let style = ProgressStyle::with_template(
                "{prefix:.bold} {msg:<18} [{bar:30}] {bytes}/{total_bytes}",
            )
            .map(|style| style.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            PullProgress::Bars {
                bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
                layers: HashMap::new(),
                style,
            }
        } else {
            PullProgress::Lines {
                printer,
                last_status: HashMap::new(),
            }
        }
    }

    pub fn event(&mut self, event: &PullEvent) {
        match self {
            PullProgress::Silent => {}
            PullProgress::Bars {
                bars,
                layers,
                style,
            } => match &event.layer {
                Some(layer) => {
                    let bar = layers.entry(layer.clone()).or_insert_with(|| {
                        let bar = bars.add(ProgressBar::new(0));
                        bar.set_style(style.clone());
                        bar.set_prefix(shown(layer).into_owned());
                        bar
                    });
                    if let (Some(current), Some(total)) = (event.current, event.total) {
                        bar.set_length(total);
                        bar.set_position(current);
                    }
                    bar.set_message(shown(&event.status).into_owned());
                    if matches!(event.status.as_str(), "Pull complete" | "Already exists") {
                        bar.finish();
                    }
                }
                None => {
                    let _ = bars.println(shown(&event.status));
                }
            },
            PullProgress::Lines {
                printer,
                last_status,
            } => {
                // One line per status change, not per byte count: logs stay readable.
                let key = event.layer.clone().unwrap_or_default();
                if last_status.get(&key) == Some(&event.status) {
                    return;
                }
                last_status.insert(key, event.status.clone());
                match &event.layer {
                    Some(layer) => printer.info(&format!("{layer}: {}", event.status)),
                    None => printer.info(&event.status),
                }
            }
        }
    }

    /// Clears the bars so later output starts on a clean line.
    pub fn finish(self) {
        if let PullProgress::Bars { bars, .. } = self {
            let _ = bars.clear();
        }
    }
}
