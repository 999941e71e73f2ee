//! Problems found in a profile file, each pinned to a file, line and column with a hint.

use std::ops::Range;

use serde::Serialize;

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file as the user should read it (relative when it was given relative).
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The source line, for drawing a caret under the problem.
    #[serde(skip)]
    pub source_line: Option<String>,
    /// How many characters to underline.
    #[serde(skip)]
    pub width: usize,
}

impl Diagnostic {
    /// The same place with another message (for places recorded before the problem is known).
    pub fn with_message(&self, message: String, hint: Option<String>) -> Diagnostic {
        Diagnostic {
            message,
            hint,
            ..self.clone()
        }
    }
}

/// A file's text with its line starts, to turn byte offsets into line and column.
#[derive(Debug)]
pub struct SourceText<'a> {
    pub path: String,
    pub text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> SourceText<'a> {
    pub fn new(path: String, text: &'a str) -> Self {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        SourceText {
            path,
            text,
            line_starts,
        }
    }

    /// A diagnostic at a byte span of this text.
    pub fn diagnostic(
        &self,
        span: Range<usize>,
        message: String,
        hint: Option<String>,
    ) -> Diagnostic {
        let start = floor_char_boundary(self.text, span.start.min(self.text.len()));
        let line_index = self
            .line_starts
            .partition_point(|&line_start| line_start <= start)
            - 1;
        let line_start = self.line_starts[line_index];
        let line_end = self.text[line_start..]
            .find('\n')
            .map_or(self.text.len(), |offset| line_start + offset);
        let line_text = self.text[line_start..line_end].trim_end_matches('\r');
        let column = self.text[line_start..start].chars().count() + 1;
        let end = floor_char_boundary(self.text, span.end.clamp(start, line_end));
        let width = self.text[start..end].chars().count().max(1);
        // A snippet of a huge line (minified or generated) would drown the message; a
        // secret's value on the line is never quoted, whatever the problem there is.
        let source_line = (line_text.chars().count() <= MAXIMUM_SNIPPET_CHARACTERS)
            .then(|| crate::secret::mask_toml_line(line_text));
        Diagnostic {
            path: self.path.clone(),
            line: line_index + 1,
            column,
            message,
            hint,
            source_line,
            width,
        }
    }
}

/// Lines longer than this are not quoted under a diagnostic.
const MAXIMUM_SNIPPET_CHARACTERS: usize = 200;

/// More GPUs than this in one container is a typo: the limit of a profile's `gpus` and of
/// the host policy's GPU counts alike.
pub const MAXIMUM_GPU_COUNT: i64 = 1024;
/// More CPUs than this is a typo, and would overflow Docker's NanoCpus: the limit of a
/// profile's `cpus` and of the policy's `max_cpus` alike.
pub const MAXIMUM_CPUS: f64 = 4096.0;
/// Fewer CPUs than this Docker refuses when it creates the container ("Range of CPUs is
/// from 0.01 to …"): a profile or policy below it is invalid input, found before then.
pub const MINIMUM_CPUS: f64 = 0.01;

/// A TOML value read as a CPU count, by one rule for the profile's `cpus` and the host
/// policy's `limits.max_cpus`.
pub enum CpuCount {
    Cpus(f64),
    /// Not a TOML number: each file words its own type error.
    NotANumber,
    /// A number, but not from [`MINIMUM_CPUS`] to [`MAXIMUM_CPUS`] (or not finite).
    OutOfRange,
}

pub fn cpu_count(value: &toml::de::DeValue<'_>) -> CpuCount {
    use toml::de::DeValue;
    let number = match value {
        DeValue::Integer(integer) => i64::from_str_radix(integer.as_str(), integer.radix())
            .ok()
            .map(|count| count as f64),
        DeValue::Float(float) => float.as_str().parse::<f64>().ok(),
        _ => return CpuCount::NotANumber,
    };
    match number {
        Some(cpus) if cpus.is_finite() && (MINIMUM_CPUS..=MAXIMUM_CPUS).contains(&cpus) => {
            CpuCount::Cpus(cpus)
        }
        _ => CpuCount::OutOfRange,
    }
}

/// The message and hint for a CPU count out of range, for `key`.
pub fn cpus_range_problem(key: &str) -> (String, String) {
    (
        format!(
            "`{key}` must be greater than 0 and at most {MAXIMUM_CPUS}, and at least {MINIMUM_CPUS} (Docker's smallest share)"
        ),
        format!(
            "fractions are fine: {} = 0.5",
            key.rsplit('.').next().unwrap_or(key)
        ),
    )
}

/// Where an unknown key stands, for the words of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlace<'a> {
    /// At the top of a file whose top keys name tables (the host policy, a matrix
    /// override): "unknown table `x`".
    TopTable,
    /// At the top of a file whose top keys are settings (a profile): "unknown key `x`".
    TopKey,
    /// In a table, as the file writes its name (`gpus`, `[limits]`): "unknown key `x` in
    /// `gpus`".
    In(&'a str),
}

/// An unknown key's message and hint, worded alike in profiles, the host policy and a
/// matrix override: the key and where it stands, then [`unknown_key_hint`].
pub fn unknown_key(
    name: &str,
    place: KeyPlace<'_>,
    suggestion: Option<&str>,
    known: &[&str],
) -> (String, String) {
    let message = match place {
        KeyPlace::TopTable => format!("unknown table `{name}`"),
        KeyPlace::TopKey => format!("unknown key `{name}`"),
        KeyPlace::In(table) => format!("unknown key `{name}` in `{table}`"),
    };
    (message, unknown_key_hint(suggestion, known))
}

/// The hint for an unknown key, worded alike in profiles, the host policy and a matrix
/// override: the suggestion (each file's own rule finds it), else the list of known keys.
pub fn unknown_key_hint(suggestion: Option<&str>, known: &[&str]) -> String {
    match suggestion {
        Some(suggestion) => format!("did you mean `{suggestion}`?"),
        None => format!("known keys: {}", known.join(", ")),
    }
}

/// A value of the wrong TOML type, worded alike in every TOML file envctl reads: the
/// message and its `for example` hint.
pub fn type_problem(key: &str, found: &str, expected: &str, example: &str) -> (String, String) {
    (
        format!("`{key}` must be {expected}, found {found}"),
        format!("for example: {example}"),
    )
}

pub fn file_diagnostic(path: &str, message: String, hint: Option<String>) -> Diagnostic {
    Diagnostic {
        path: path.to_string(),
        line: 1,
        column: 1,
        message,
        hint,
        source_line: None,
        width: 1,
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let source = SourceText::new("p.toml".into(), "a = 1\nbé = \"x\"\n");
        let diagnostic = source.diagnostic(9..12, "m".into(), None);
        assert_eq!((diagnostic.line, diagnostic.column), (2, 3));
        assert_eq!(diagnostic.source_line.as_deref(), Some("bé = \"x\""));
        let at_end = source.diagnostic(100..200, "m".into(), None);
        assert_eq!(at_end.line, 3);
    }
}
