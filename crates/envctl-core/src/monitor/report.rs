//! `envctl stats report FILE -o OUT`: a recording (read back by
//! `ops::stats::recording`) drawn (`chart`) as SVG or as an HTML page with a summary and
//! the diagnoses, in the format the output's extension names.

use std::path::Path;

use super::chart::{self, ChartError};
use super::record::Recording;

/// What the drawing is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// The time series alone.
    Svg,
    /// The time series with a summary table and the diagnoses.
    Html,
}

impl ReportFormat {
    /// The format `output`'s extension names (`.svg`, `.html`, `.htm`, any case); none
    /// for any other name.
    pub fn from_path(output: &Path) -> Option<ReportFormat> {
        let extension = output
            .extension()
            .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
        match extension.as_deref() {
            Some("svg") => Some(ReportFormat::Svg),
            Some("html" | "htm") => Some(ReportFormat::Html),
            _ => None,
        }
    }
}

/// The drawing of `recording` (read from `file`, which the page names as its source).
pub fn draw(
    recording: &Recording,
    file: &Path,
    format: ReportFormat,
) -> Result<String, ChartError> {
    match format {
        ReportFormat::Svg => chart::svg(&recording.snapshots),
        ReportFormat::Html => chart::html(&recording.snapshots, &file.display().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_names_the_format() {
        let format = |name: &str| ReportFormat::from_path(Path::new(name));
        assert_eq!(format("run.svg"), Some(ReportFormat::Svg));
        assert_eq!(format("run.SVG"), Some(ReportFormat::Svg));
        assert_eq!(format("run.html"), Some(ReportFormat::Html));
        assert_eq!(format("run.htm"), Some(ReportFormat::Html));
        assert_eq!(format("run.png"), None);
        assert_eq!(format("run"), None);
    }
}
