//! Reading a matrix file (the bundled one, or a user's `matrix.toml`) into a [`Matrix`],
//! collecting every problem — syntax errors, unknown keys (with a did-you-mean), wrong
//! values, missing fields, duplicate rows — each at its file:line:column.

use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::matrix::{
    ArchitectureRow, BranchLifecycleRow, CudaDriverRow, CudaFamilyRow, CudaTargetsRow,
    DriverBranchRow, ForwardCompatibility, GpuDriverFloorRow, GpuRow, Matrix, MatrixMeta, Row,
    TargetRenameRow, TorchBuildRow, TorchReleaseRow,
};
use super::models::normalise_name;
use super::values::{TargetKind, is_date, is_year_month};
use crate::profile::diagnostic::{Diagnostic, SourceText};
use crate::suggest::did_you_mean;

/// The tables a matrix file may hold.
pub const TABLE_NAMES: [&str; 13] = [
    "meta",
    CudaDriverRow::TABLE,
    CudaFamilyRow::TABLE,
    CudaTargetsRow::TABLE,
    TargetRenameRow::TABLE,
    TorchReleaseRow::TABLE,
    TorchBuildRow::TABLE,
    GpuRow::TABLE,
    GpuDriverFloorRow::TABLE,
    ArchitectureRow::TABLE,
    DriverBranchRow::TABLE,
    BranchLifecycleRow::TABLE,
    ForwardCompatibility::TABLE,
];

/// A matrix file that cannot be used, with every problem found in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MatrixError {
    /// The file as the user named it.
    pub path: String,
    /// Sorted by line and column; never empty.
    pub problems: Vec<Diagnostic>,
}

impl fmt::Display for MatrixError {
    /// One line: the problems themselves are drawn with their source lines by `ui`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.problems.len();
        write!(
            formatter,
            "invalid compatibility matrix `{}`: {count} problem{}",
            self.path,
            if count == 1 { "" } else { "s" }
        )
    }
}

/// A problem a row's values have among themselves: the field it points at, the message and
/// a hint.
struct RowProblem {
    field: &'static str,
    message: String,
    hint: Option<String>,
}

fn problem(field: &'static str, message: String, hint: Option<&str>) -> RowProblem {
    RowProblem {
        field,
        message,
        hint: hint.map(str::to_string),
    }
}

/// Checks a row beyond its types: what serde cannot say.
trait CheckRow {
    fn check(&self) -> Vec<RowProblem> {
        Vec::new()
    }
}

impl CheckRow for CudaDriverRow {
    fn check(&self) -> Vec<RowProblem> {
        match (&self.linux_minimum_driver, self.branch) {
            (None, None) => vec![problem(
                "release",
                format!("`{}` states no driver", self.release),
                Some(
                    "write `linux_minimum_driver = \"570.26\"`, or `branch = 615` where NVIDIA names only the branch",
                ),
            )],
            (Some(minimum), Some(branch)) if minimum.branch() != branch => vec![problem(
                "branch",
                format!("branch {branch} does not match the minimum driver {minimum}"),
                Some("the branch is the first number of the driver version"),
            )],
            _ => Vec::new(),
        }
    }
}

impl CheckRow for CudaFamilyRow {}

impl CheckRow for CudaTargetsRow {
    fn check(&self) -> Vec<RowProblem> {
        let mut problems = Vec::new();
        if self.lowest.capability > self.highest.capability {
            problems.push(problem(
                "lowest",
                format!(
                    "`lowest` {} is above `highest` {}",
                    self.lowest, self.highest
                ),
                None,
            ));
        }
        if self.through.is_some_and(|through| through < self.cuda) {
            problems.push(problem(
                "through",
                format!("`through` is before `cuda` {}", self.cuda),
                None,
            ));
        }
        let real = [&self.lowest, &self.highest]
            .into_iter()
            .chain(self.targets.iter().flatten());
        if real
            .into_iter()
            .any(|target| target.kind != TargetKind::Real)
        {
            problems.push(problem(
                "targets",
                "`targets`, `lowest` and `highest` hold real targets (sm_XY); PTX targets (compute_XY) go in `virtual_targets`".into(),
                None,
            ));
        }
        if self
            .virtual_targets
            .iter()
            .flatten()
            .any(|target| target.kind != TargetKind::Virtual)
        {
            problems.push(problem(
                "virtual_targets",
                "`virtual_targets` holds PTX targets (compute_XY)".into(),
                None,
            ));
        }
        problems
    }
}

impl CheckRow for TargetRenameRow {}

impl CheckRow for TorchReleaseRow {
    fn check(&self) -> Vec<RowProblem> {
        let mut problems = Vec::new();
        if self.variants.is_empty() {
            problems.push(problem("variants", "`variants` is empty".into(), None));
        }
        if let Some(default) = &self.pypi_default_variant
            && !self.variants.contains(default)
        {
            problems.push(problem(
                "pypi_default_variant",
                format!("the default variant {default} is not among `variants`"),
                None,
            ));
        }
        for late in &self.late_variants {
            let release_of = late
                .from
                .parse::<crate::profile::model::TorchVersion>()
                .ok()
                .map(|version| super::values::TorchRelease::of(&version));
            if release_of != Some(self.torch) {
                problems.push(problem(
                    "late_variants",
                    format!(
                        "`from = \"{}\"` is not a version of torch {}",
                        late.from, self.torch
                    ),
                    Some("write the first version with the variant, e.g. from = \"2.12.1\""),
                ));
            }
        }
        if let Some(aarch64) = &self.pypi_aarch64_variant
            && aarch64 != "cpu"
            && aarch64.parse::<super::values::CudaVariant>().is_err()
        {
            problems.push(problem(
                "pypi_aarch64_variant",
                format!("`{aarch64}` is neither `cpu` nor a CUDA variant like cu130"),
                None,
            ));
        }
        problems
    }
}

impl CheckRow for TorchBuildRow {
    fn check(&self) -> Vec<RowProblem> {
        let mut problems = Vec::new();
        if self.targets.is_empty() {
            problems.push(problem("targets", "`targets` is empty".into(), None));
        }
        if self
            .targets
            .iter()
            .any(|target| target.kind != TargetKind::Real)
        {
            problems.push(problem(
                "targets",
                "`targets` holds the wheel's machine code (sm_XY); its PTX goes in `ptx`".into(),
                None,
            ));
        }
        if self
            .ptx
            .is_some_and(|target| target.kind != TargetKind::Virtual)
        {
            problems.push(problem(
                "ptx",
                "`ptx` is a PTX target like compute_120".into(),
                None,
            ));
        }
        // A pin the driver floor cannot use would be ignored without a word.
        if let Some(pin) = &self.cuda_runtime
            && super::matrix::toolkit_release(pin).is_none()
        {
            problems.push(problem(
                "cuda_runtime",
                format!(
                    "`cuda_runtime = \"{}\"` is not a cuda-toolkit release of the form X.Y.Z before 13.4",
                    crate::text::shown(pin)
                ),
                Some("write the version the wheel's METADATA pins, e.g. cuda_runtime = \"13.2.2\" for cuda-toolkit==13.2.2, or leave it out"),
            ));
        }
        problems
    }
}

impl CheckRow for GpuRow {
    fn check(&self) -> Vec<RowProblem> {
        let mut problems = Vec::new();
        if self.name.trim().is_empty() {
            problems.push(problem("name", "`name` is empty".into(), None));
        }
        if self.match_keys.is_empty()
            || self
                .match_keys
                .iter()
                .any(|key| normalise_name(key).is_empty())
        {
            problems.push(problem(
                "match",
                "`match` needs at least one key with a model word in it".into(),
                Some("for example: match = [\"RTX 4090\"]"),
            ));
        }
        problems
    }
}

impl CheckRow for ArchitectureRow {
    fn check(&self) -> Vec<RowProblem> {
        if self.capabilities.is_empty() {
            vec![problem(
                "capabilities",
                "`capabilities` is empty".into(),
                None,
            )]
        } else {
            Vec::new()
        }
    }
}

impl CheckRow for DriverBranchRow {}

impl CheckRow for GpuDriverFloorRow {
    fn check(&self) -> Vec<RowProblem> {
        if self.gpus.is_empty() {
            vec![problem(
                "gpus",
                "`gpus` names no GPU".to_string(),
                Some("name the `[[gpu]]` rows the floor is for: gpus = [\"NVIDIA B200\"]"),
            )]
        } else {
            Vec::new()
        }
    }
}

impl CheckRow for BranchLifecycleRow {
    fn check(&self) -> Vec<RowProblem> {
        match &self.end_of_life {
            Some(month) if !is_year_month(month) => vec![problem(
                "end_of_life",
                format!("`end_of_life` is `{month}`; write a month as YYYY-MM"),
                Some("for example: end_of_life = \"2028-06\""),
            )],
            _ => Vec::new(),
        }
    }
}

impl CheckRow for ForwardCompatibility {
    fn check(&self) -> Vec<RowProblem> {
        if self.package.contains("{major}") && self.package.contains("{minor}") {
            Vec::new()
        } else {
            vec![problem(
                "package",
                "`package` must name the CUDA release with {major} and {minor}".into(),
                Some("for example: package = \"cuda-compat-{major}-{minor}\""),
            )]
        }
    }
}

type Value<'i> = Spanned<DeValue<'i>>;

struct Parser<'a> {
    source: SourceText<'a>,
    problems: Vec<Diagnostic>,
}

impl Parser<'_> {
    fn error(&mut self, span: Range<usize>, message: String, hint: Option<String>) {
        self.problems
            .push(self.source.diagnostic(span, message, hint));
    }

    fn unknown_key(
        &mut self,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        known: &[&str],
        table: Option<&str>,
    ) {
        use crate::profile::diagnostic::KeyPlace;
        let name = key.get_ref().as_ref();
        // The file's top keys are its tables (`[[cuda_driver]]`), named as written.
        let place = table.map_or(KeyPlace::TopTable, KeyPlace::In);
        let (message, hint) =
            crate::profile::diagnostic::unknown_key(name, place, did_you_mean(name, known), known);
        self.error(key.span(), message, Some(hint));
    }

    /// Reports every key of `table` that is not in `known`.
    fn unknown_keys(&mut self, table: &DeTable<'_>, known: &[&str], name: &str) {
        for (key, _) in table {
            if !known.contains(&key.get_ref().as_ref()) {
                self.unknown_key(key, known, Some(name));
            }
        }
    }

    /// Deserialises one table into `T`, reporting serde's problem at its place.
    fn deserialize<T: DeserializeOwned>(&mut self, value: &Value<'_>, name: &str) -> Option<T> {
        match T::deserialize(ValueDeserializer::from(value.clone())) {
            Ok(row) => Some(row),
            Err(error) => {
                let span = error.span().unwrap_or_else(|| value.span());
                let message = error.message().trim_end().to_string();
                // toml's error has no kind to tell a missing field from a wrong one, and
                // its words are not read: a complete row helps with either.
                let hint = format!(
                    "see the bundled matrix (src/compat/matrix.toml in envctl's source) for a complete `{name}` row"
                );
                self.error(span, format!("in `{name}`: {message}"), Some(hint));
                None
            }
        }
    }

    fn common<R: Row>(&mut self, row: &R, table: &DeTable<'_>, span: &Range<usize>) {
        if row.source().trim().is_empty() {
            let place = field_span(table, "source").unwrap_or_else(|| span.clone());
            self.error(
                place,
                format!("`{}` row {} has an empty `source`", R::TABLE, row.key()),
                Some(
                    "name where the fact was read: a URL, a document and section, or a measurement"
                        .into(),
                ),
            );
        }
        if let Some(read) = row.read()
            && !is_date(read)
        {
            let place = field_span(table, "read").unwrap_or_else(|| span.clone());
            self.error(
                place,
                format!("`read` is `{read}`; write the date the source was read as YYYY-MM-DD"),
                Some("for example: read = \"2026-11-29\"".into()),
            );
        }
    }

    fn row_problems(
        &mut self,
        problems: Vec<RowProblem>,
        table: &DeTable<'_>,
        span: &Range<usize>,
    ) {
        for problem in problems {
            let place = field_span(table, problem.field).unwrap_or_else(|| span.clone());
            self.error(place, problem.message, problem.hint);
        }
    }

    /// An array of tables (`[[name]]`), each row checked.
    fn rows<R>(&mut self, key: &Spanned<std::borrow::Cow<'_, str>>, value: &Value<'_>) -> Vec<R>
    where
        R: Row + CheckRow + DeserializeOwned,
    {
        let name = R::TABLE;
        let Some(array) = value.get_ref().as_array() else {
            self.error(
                key.span(),
                format!("`{name}` must be an array of tables"),
                Some(format!("write each row under its own `[[{name}]]` header")),
            );
            return Vec::new();
        };
        let mut rows: Vec<R> = Vec::new();
        // Each row's key, made once: comparing every pair formatted the keys again and again
        // (most of `envctl up`'s own instructions went to that, measured with callgrind).
        let mut first_at: std::collections::HashMap<String, Range<usize>> =
            std::collections::HashMap::new();
        for item in array.iter() {
            let Some(table) = item.get_ref().as_table() else {
                self.error(
                    item.span(),
                    format!("each `{name}` row must be a table"),
                    Some(format!("write each row under its own `[[{name}]]` header")),
                );
                continue;
            };
            self.unknown_keys(table, R::KEYS, name);
            let Some(row) = self.deserialize::<R>(item, name) else {
                continue;
            };
            let span = item.span();
            self.common(&row, table, &span);
            self.row_problems(row.check(), table, &span);
            let key = row.key();
            if let Some(first) = first_at.get(&key) {
                let line = self
                    .source
                    .diagnostic(first.clone(), String::new(), None)
                    .line;
                self.error(
                    span.clone(),
                    format!("duplicate `{name}` row {key} (first at line {line})"),
                    Some("keep one row per key; a user matrix replaces bundled rows with the same key".into()),
                );
                continue;
            }
            first_at.insert(key, span);
            rows.push(row);
        }
        rows
    }

    /// A single table (`[name]`).
    fn single<T: DeserializeOwned>(
        &mut self,
        key: &Spanned<std::borrow::Cow<'_, str>>,
        value: &Value<'_>,
        known: &[&str],
    ) -> Option<(T, Range<usize>)> {
        let name = key.get_ref().as_ref();
        let Some(table) = value.get_ref().as_table() else {
            self.error(
                key.span(),
                format!("`{name}` must be a table"),
                Some(format!("write it under a `[{name}]` header")),
            );
            return None;
        };
        self.unknown_keys(table, known, name);
        self.deserialize::<T>(value, name)
            .map(|row| (row, value.span()))
    }
}

fn field_span(table: &DeTable<'_>, field: &str) -> Option<Range<usize>> {
    table
        .iter()
        .find(|(key, _)| key.get_ref().as_ref() == field)
        .map(|(_, value)| value.span())
}

impl Matrix {
    /// Parses a matrix file (`text` is the contents of `path`, read by the caller) and checks
    /// every row. Every table is optional, so a user file holds only the rows it adds or
    /// replaces; see [`Matrix::overlay`].
    pub fn parse(text: &str, path: &str) -> Result<Matrix, MatrixError> {
        let mut parser = Parser {
            source: SourceText::new(path.to_string(), text),
            problems: Vec::new(),
        };
        let (document, syntax_errors) = DeTable::parse_recoverable(text);
        if !syntax_errors.is_empty() {
            for error in syntax_errors {
                parser.error(
                    error.span().unwrap_or(0..0),
                    format!("invalid TOML: {}", error.message().trim_end()),
                    Some("see https://toml.io for the syntax".into()),
                );
            }
            return Err(finish(path, parser.problems));
        }
        let mut matrix = Matrix::default();
        for (key, value) in document.get_ref() {
            match key.get_ref().as_ref() {
                "meta" => {
                    if let Some((meta, span)) =
                        parser.single::<MatrixMeta>(key, value, MatrixMeta::KEYS)
                    {
                        if !is_date(&meta.date) {
                            let place = value
                                .get_ref()
                                .as_table()
                                .and_then(|table| field_span(table, "date"))
                                .unwrap_or(span);
                            parser.error(
                                place,
                                format!("`date` is `{}`; write it as YYYY-MM-DD", meta.date),
                                Some("for example: date = \"2026-11-29\"".into()),
                            );
                        }
                        matrix.meta = Some(meta);
                    }
                }
                "forward_compatibility" => {
                    if let Some((row, span)) = parser.single::<ForwardCompatibility>(
                        key,
                        value,
                        ForwardCompatibility::KEYS,
                    ) && let Some(table) = value.get_ref().as_table()
                    {
                        parser.common(&row, table, &span);
                        parser.row_problems(row.check(), table, &span);
                        matrix.forward_compatibility = Some(row);
                    }
                }
                "cuda_driver" => matrix.cuda_driver = parser.rows(key, value),
                "cuda_family" => matrix.cuda_family = parser.rows(key, value),
                "cuda_targets" => matrix.cuda_targets = parser.rows(key, value),
                "target_rename" => matrix.target_rename = parser.rows(key, value),
                "torch_release" => matrix.torch_release = parser.rows(key, value),
                "torch_build" => matrix.torch_build = parser.rows(key, value),
                "gpu" => matrix.gpu = parser.rows(key, value),
                "architecture" => matrix.architecture = parser.rows(key, value),
                "driver_branch" => matrix.driver_branch = parser.rows(key, value),
                "branch_lifecycle" => matrix.branch_lifecycle = parser.rows(key, value),
                "gpu_driver_floor" => matrix.gpu_driver_floor = parser.rows(key, value),
                _ => parser.unknown_key(key, &TABLE_NAMES, None),
            }
        }
        for row in &mut matrix.gpu {
            row.match_keys = row
                .match_keys
                .iter()
                .map(|key| normalise_name(key))
                .collect();
        }
        if parser.problems.is_empty() {
            matrix.origins = vec![path.to_string()];
            Ok(matrix)
        } else {
            Err(finish(path, parser.problems))
        }
    }
}

fn finish(path: &str, mut problems: Vec<Diagnostic>) -> MatrixError {
    problems.sort_by_key(|problem| (problem.line, problem.column));
    MatrixError {
        path: path.to_string(),
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<(usize, usize, String, Option<String>)> {
        match Matrix::parse(text, "user.toml") {
            Ok(_) => Vec::new(),
            Err(error) => {
                assert_eq!(error.path, "user.toml");
                error
                    .problems
                    .into_iter()
                    .map(|problem| (problem.line, problem.column, problem.message, problem.hint))
                    .collect()
            }
        }
    }

    const GOOD_ROW: &str = r#"[[cuda_driver]]
cuda = "12.8"
update = 0
release = "12.8 GA"
branch = 570
linux_minimum_driver = "570.26"
status = "verified"
source = "NVIDIA release notes"
read = "2026-11-29"
"#;

    #[test]
    fn an_empty_file_is_an_empty_matrix() {
        let matrix = Matrix::parse("", "empty.toml").unwrap();
        assert!(matrix.cuda_driver.is_empty() && matrix.meta.is_none());
        assert_eq!(matrix.origins, vec!["empty.toml".to_string()]);
        assert!(Matrix::parse(GOOD_ROW, "user.toml").is_ok());
    }

    #[test]
    fn a_pinned_runtime_must_name_an_update() {
        let row = |pin: &str| {
            format!(
                "[[torch_build]]\ntorch = \"2.15\"\nvariant = \"cu132\"\nplatform = \"x86_64\"\ntargets = [\"sm_80\"]\ncuda_runtime = \"{pin}\"\nstatus = \"verified\"\nsource = \"METADATA\"\n"
            )
        };
        assert!(problems(&row("13.2.2")).is_empty());
        let found = problems(&row("13.4.1"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 6, "the line of cuda_runtime: {found:?}");
        assert!(found[0].2.contains("cuda_runtime"), "{found:?}");
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let found = problems("[meta]\ndate = \"2026-11-29\"\ndescription = \n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 3);
        assert!(found[0].2.starts_with("invalid TOML"), "{found:?}");
    }

    #[test]
    fn every_unknown_key_is_listed_with_a_suggestion() {
        let text = format!(
            "{}stauts = \"verified\"\nflavour = 1\n\n[[gpus]]\nname = \"x\"\n",
            GOOD_ROW.replace("read = \"2026-11-29\"\n", "")
        );
        let found = problems(&text);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (9, 1));
        assert_eq!(found[0].2, "unknown key `stauts` in `cuda_driver`");
        assert_eq!(found[0].3.as_deref(), Some("did you mean `status`?"));
        assert_eq!(
            (found[1].0, found[1].2.as_str()),
            (10, "unknown key `flavour` in `cuda_driver`")
        );
        assert_eq!(found[2].0, 12);
        assert_eq!(found[2].2, "unknown table `gpus`");
        assert_eq!(found[2].3.as_deref(), Some("did you mean `gpu`?"));
    }

    #[test]
    fn wrong_values_point_at_the_value() {
        let text = GOOD_ROW.replace("\"570.26\"", "\"570.x\"");
        let found = problems(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].0, found[0].1), (6, 24));
        assert!(
            found[0].2.contains("not an NVIDIA driver version"),
            "{found:?}"
        );

        let found = problems(&GOOD_ROW.replace("\"verified\"", "\"verifed\""));
        assert_eq!(found[0].0, 7);
        assert!(found[0].2.contains("verifed"), "{found:?}");
        assert!(found[0].2.contains("UNVERIFIED"), "{found:?}");

        let found = problems(&GOOD_ROW.replace("\"2026-11-29\"", "\"29.11.2026\""));
        assert_eq!((found[0].0, found[0].1), (9, 8));
        assert!(found[0].2.contains("YYYY-MM-DD"), "{found:?}");

        let found = problems(&GOOD_ROW.replace("branch = 570", "branch = 575"));
        assert_eq!(found[0].0, 5);
        assert!(found[0].2.contains("does not match"), "{found:?}");
    }

    #[test]
    fn missing_fields_are_named() {
        let found = problems(&GOOD_ROW.replace("source = \"NVIDIA release notes\"\n", ""));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].2.contains("missing field `source`"), "{found:?}");
        assert!(found[0].0 >= 1);
    }

    #[test]
    fn several_rows_report_all_their_problems() {
        let text = format!(
            "{GOOD_ROW}\n{}\n{}",
            GOOD_ROW,
            GOOD_ROW
                .replace("\"12.8\"", "\"12.9\"")
                .replace("\"570.26\"", "\"bad\"")
        );
        let found = problems(&text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0]
                .2
                .contains("duplicate `cuda_driver` row 12.8 update 0 (first at line 1)")
        );
        assert_eq!(found[0].0, 11);
        assert!(found[1].2.contains("not an NVIDIA driver version"));
        assert_eq!(found[1].0, 26);
    }

    #[test]
    fn shapes_and_row_rules_are_checked() {
        let found = problems("gpu = \"RTX 4090\"\n");
        assert!(
            found[0].2.contains("must be an array of tables"),
            "{found:?}"
        );
        let found = problems("[[meta]]\ndate = \"2026-11-29\"\n");
        assert!(found[0].2.contains("`meta` must be a table"), "{found:?}");
        let found = problems("[meta]\ndate = \"November\"\n");
        assert!(found[0].2.contains("YYYY-MM-DD"), "{found:?}");
        let found = problems(
            "[[torch_build]]\ntorch = \"2.8\"\nvariant = \"cu128\"\ntargets = [\"sm_90\", \"compute_90\"]\nstatus = \"verified\"\nsource = \"x\"\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 4);
        let found = problems(
            "[[branch_lifecycle]]\nbranch = 580\nend_of_life = \"June 2028\"\nstatus = \"verified\"\nsource = \"x\"\n",
        );
        assert_eq!((found[0].0, found[0].1), (3, 15));
        let found = problems(
            "[[gpu]]\nname = \"X\"\nmatch = [\"NVIDIA\"]\ncapability = \"8.9\"\nstatus = \"verified\"\nsource = \" \"\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, 3);
        assert_eq!(found[1].0, 6);
    }

    #[test]
    fn gpu_match_keys_are_normalised() {
        let matrix = Matrix::parse(
            "[[gpu]]\nname = \"GeForce RTX 9090\"\nmatch = [\"rtx-9090\"]\ncapability = \"13.0\"\nstatus = \"verified\"\nsource = \"x\"\n",
            "user.toml",
        )
        .unwrap();
        assert_eq!(matrix.gpu[0].match_keys, vec!["RTX 9090".to_string()]);
    }

    #[test]
    fn the_error_is_one_line_and_keeps_each_problem_with_its_place() {
        let error = Matrix::parse("[[cuda_drivers]]\n", "m.toml").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid compatibility matrix `m.toml`: 1 problem"
        );
        let problem = &error.problems[0];
        assert_eq!((problem.line, problem.column), (1, 3));
        assert_eq!(problem.message, "unknown table `cuda_drivers`");
        assert_eq!(problem.hint.as_deref(), Some("did you mean `cuda_driver`?"));
    }
}
