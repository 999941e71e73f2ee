//! Checking a measurement against the matrix: does the row the matrix holds for this build
//! (or this CUDA release) say what the binaries say? Only the measured fields are compared
//! (targets and PTX; compiler targets); a disagreement is reported, never silently fixed.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::fatbin::Target;

#[derive(Debug, Deserialize)]
struct MatrixFile {
    #[serde(default)]
    torch_build: Vec<TorchBuild>,
    #[serde(default)]
    cuda_targets: Vec<CudaTargets>,
}

#[derive(Debug, Deserialize)]
struct TorchBuild {
    torch: String,
    variant: String,
    /// Absent on rows written before platforms were keyed: those are x86_64 rows.
    #[serde(default)]
    platform: Option<String>,
    targets: Vec<String>,
    ptx: Option<String>,
    #[serde(default)]
    cuda_runtime: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CudaTargets {
    cuda: String,
    targets: Option<Vec<String>>,
}

/// What the comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Agrees,
    /// The matrix has no row for this key.
    Missing,
    /// Each line names one field that differs.
    Differs(Vec<String>),
}

fn strings(targets: &[Target]) -> BTreeSet<String> {
    targets.iter().map(ToString::to_string).collect()
}

fn difference(
    field: &str,
    matrix: &BTreeSet<String>,
    measured: &BTreeSet<String>,
) -> Option<String> {
    if matrix == measured {
        return None;
    }
    let only_matrix: Vec<&str> = matrix.difference(measured).map(String::as_str).collect();
    let only_measured: Vec<&str> = measured.difference(matrix).map(String::as_str).collect();
    Some(format!(
        "{field}: the matrix has {} the binaries lack; the binaries have {} the matrix lacks",
        if only_matrix.is_empty() {
            "nothing".to_string()
        } else {
            only_matrix.join(", ")
        },
        if only_measured.is_empty() {
            "nothing".to_string()
        } else {
            only_measured.join(", ")
        },
    ))
}

/// Compares a torch build's measured targets, newest PTX and pinned toolkit release
/// (`cuda_runtime`, from its METADATA) with the matrix's row for `platform`.
pub fn torch_build(
    matrix_text: &str,
    torch: &str,
    variant: &str,
    platform: &str,
    targets: &[Target],
    ptx: Option<Target>,
    cuda_runtime: Option<&str>,
) -> Result<Verdict, toml::de::Error> {
    let matrix: MatrixFile = toml::from_str(matrix_text)?;
    let Some(row) = matrix.torch_build.iter().find(|row| {
        row.torch == torch
            && row.variant == variant
            && row.platform.as_deref().unwrap_or("x86_64") == platform
    }) else {
        return Ok(Verdict::Missing);
    };
    let mut lines = Vec::new();
    let matrix_targets: BTreeSet<String> = row.targets.iter().cloned().collect();
    lines.extend(difference("targets", &matrix_targets, &strings(targets)));
    let measured_ptx = ptx.map(|target| target.to_string());
    if row.ptx != measured_ptx {
        lines.push(format!(
            "ptx: the matrix says {}, the binaries carry {}",
            row.ptx.as_deref().unwrap_or("no PTX"),
            measured_ptx.as_deref().unwrap_or("no PTX"),
        ));
    }
    if row.cuda_runtime.as_deref() != cuda_runtime {
        lines.push(format!(
            "cuda_runtime: the matrix says {}, the wheel's METADATA pins {}",
            row.cuda_runtime.as_deref().unwrap_or("none"),
            cuda_runtime.map_or("no cuda-toolkit release".to_string(), |pin| format!(
                "cuda-toolkit=={pin}"
            )),
        ));
    }
    Ok(if lines.is_empty() {
        Verdict::Agrees
    } else {
        Verdict::Differs(lines)
    })
}

/// Compares a toolkit's measured real targets with the matrix's `cuda_targets` row.
pub fn cuda_targets(
    matrix_text: &str,
    cuda: &str,
    real: &[Target],
) -> Result<Verdict, toml::de::Error> {
    let matrix: MatrixFile = toml::from_str(matrix_text)?;
    let Some(row) = matrix.cuda_targets.iter().find(|row| row.cuda == cuda) else {
        return Ok(Verdict::Missing);
    };
    let Some(targets) = &row.targets else {
        return Ok(Verdict::Differs(vec![
            "targets: the matrix row knows only its lowest and highest target".into(),
        ]));
    };
    let matrix_targets: BTreeSet<String> = targets.iter().cloned().collect();
    Ok(
        match difference("targets", &matrix_targets, &strings(real)) {
            None => Verdict::Agrees,
            Some(line) => Verdict::Differs(vec![line]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptxas::parse_target;

    const MATRIX: &str = r#"
[meta]
date = "2026-11-29"

[[torch_build]]
torch = "2.7"
variant = "cu128"
targets = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
status = "secondary"
source = "somewhere"

[[cuda_targets]]
cuda = "11.0"
lowest = "sm_35"
highest = "sm_80"
status = "secondary"
source = "somewhere"

[[cuda_targets]]
cuda = "13.0"
targets = ["sm_75", "sm_121f"]
lowest = "sm_75"
highest = "sm_121f"
status = "verified"
source = "somewhere"
"#;

    fn targets(names: &[&str]) -> Vec<Target> {
        names
            .iter()
            .map(|name| parse_target(name).unwrap().unwrap())
            .collect()
    }

    #[test]
    fn a_matching_build_agrees() {
        let measured = targets(&["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]);
        assert_eq!(
            torch_build(MATRIX, "2.7", "cu128", "x86_64", &measured, None, None).unwrap(),
            Verdict::Agrees
        );
    }

    #[test]
    fn missing_ptx_and_extra_targets_are_each_reported() {
        let measured = targets(&[
            "sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120",
        ]);
        let ptx = parse_target("compute_120").unwrap();
        let Verdict::Differs(lines) =
            torch_build(MATRIX, "2.7", "cu128", "x86_64", &measured, ptx, None).unwrap()
        else {
            panic!("expected a difference");
        };
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].contains("have sm_70 the matrix lacks"),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[1],
            "ptx: the matrix says no PTX, the binaries carry compute_120"
        );
    }

    #[test]
    fn a_pinned_runtime_the_matrix_lacks_is_reported() {
        let measured = targets(&["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]);
        let Verdict::Differs(lines) = torch_build(
            MATRIX,
            "2.7",
            "cu128",
            "x86_64",
            &measured,
            None,
            Some("13.2.2"),
        )
        .unwrap() else {
            panic!("expected a difference");
        };
        assert_eq!(
            lines,
            ["cuda_runtime: the matrix says none, the wheel's METADATA pins cuda-toolkit==13.2.2"]
        );
    }

    #[test]
    fn an_absent_row_is_missing() {
        assert_eq!(
            torch_build(MATRIX, "2.15", "cu132", "x86_64", &[], None, None).unwrap(),
            Verdict::Missing
        );
        assert_eq!(cuda_targets(MATRIX, "12.9", &[]).unwrap(), Verdict::Missing);
        // A row without `platform` is the x86_64 wheel's: it says nothing of aarch64.
        let measured = targets(&["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]);
        assert_eq!(
            torch_build(MATRIX, "2.7", "cu128", "aarch64", &measured, None, None).unwrap(),
            Verdict::Missing
        );
    }

    #[test]
    fn compiler_targets_compare_as_sets() {
        assert_eq!(
            cuda_targets(MATRIX, "13.0", &targets(&["sm_121f", "sm_75"])).unwrap(),
            Verdict::Agrees
        );
        assert!(matches!(
            cuda_targets(MATRIX, "11.0", &targets(&["sm_35"])).unwrap(),
            Verdict::Differs(_)
        ));
    }
}
