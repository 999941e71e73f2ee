//! The targets a CUDA toolkit compiles for, read from NVIDIA's own `ptxas --help`: the
//! quoted "Allowed values for this option" of `--gpu-name`. `lto_*` values (link-time
//! intermediate code) are not GPU targets and are left out.

use thiserror::Error;

use crate::fatbin::{Kind, Target, Variant};

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PtxasError {
    #[error("ptxas --help has no `--gpu-name` option")]
    NoGpuName,
    #[error("ptxas --help lists no allowed values for `--gpu-name`")]
    NoAllowedValues,
    #[error("ptxas --help lists `{0}` for --gpu-name, which is not sm_XY or compute_XY")]
    BadValue(String),
}

/// `sm_90a` → a cubin target, `compute_120` → a PTX target; `lto_*` → `None`.
pub fn parse_target(text: &str) -> Result<Option<Target>, PtxasError> {
    let bad = || PtxasError::BadValue(text.to_string());
    let (kind, rest) = if let Some(rest) = text.strip_prefix("sm_") {
        (Kind::Cubin, rest)
    } else if let Some(rest) = text.strip_prefix("compute_") {
        (Kind::Ptx, rest)
    } else if text.starts_with("lto_") {
        return Ok(None);
    } else {
        return Err(bad());
    };
    let (digits, variant) = if let Some(digits) = rest.strip_suffix('a') {
        (digits, Variant::ArchitectureSpecific)
    } else if let Some(digits) = rest.strip_suffix('f') {
        (digits, Variant::Family)
    } else {
        (rest, Variant::Portable)
    };
    if !(2..=3).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let arch = digits.parse().map_err(|_| bad())?;
    Ok(Some(Target {
        kind,
        arch,
        variant,
    }))
}

/// The allowed `--gpu-name` values: real targets and virtual targets, each sorted.
pub fn gpu_names(help: &str) -> Result<(Vec<Target>, Vec<Target>), PtxasError> {
    let start = help.find("--gpu-name").ok_or(PtxasError::NoGpuName)?;
    let block = &help[start..];
    // The option's text ends where the next option starts (a line beginning with "--").
    let block_end = block[2..].find("\n--").map_or(block.len(), |at| at + 2);
    let block = &block[..block_end];
    let allowed_at = block
        .find("Allowed values for this option:")
        .ok_or(PtxasError::NoAllowedValues)?;
    let allowed = &block[allowed_at..];
    let allowed = allowed
        .find("Default value")
        .map_or(allowed, |end| &allowed[..end]);
    let mut real = Vec::new();
    let mut virtual_targets = Vec::new();
    for (index, piece) in allowed.split('\'').enumerate() {
        // Odd pieces are inside quotes.
        if index % 2 == 0 {
            continue;
        }
        match parse_target(piece)? {
            Some(target) if target.kind == Kind::Cubin => real.push(target),
            Some(target) => virtual_targets.push(target),
            None => {}
        }
    }
    if real.is_empty() {
        return Err(PtxasError::NoAllowedValues);
    }
    real.sort();
    real.dedup();
    virtual_targets.sort();
    virtual_targets.dedup();
    Ok((real, virtual_targets))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `ptxas --help` of CUDA 13.0 (values shortened).
    const HELP: &str = "\
--fmad <true|false>                                 (-fmad)
        Enables (disables) the contraction of floating-point multiplies.
        Default value:  true.

--gpu-name <gpu name>                               (-arch)
        Specify name of NVIDIA GPU to generate code for. PTX for .target sm_XY can be
        compiled to all GPU targets sm_MN, sm_MNa, SM_MNf where MN >= XY.
        Allowed values for this option:  'compute_100','compute_100a','compute_120',
        'compute_75','lto_100','lto_75','sm_100','sm_100a','sm_100f','sm_120',
        'sm_75','sm_90','sm_90a'.
        Default value:  'sm_75'.

--help                                              (-h)
        Print this help information on this tool.
";

    fn names(targets: &[Target]) -> Vec<String> {
        targets.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn reads_the_allowed_gpu_names() {
        let (real, virtual_targets) = gpu_names(HELP).unwrap();
        assert_eq!(
            names(&real),
            [
                "sm_75", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120"
            ]
        );
        assert_eq!(
            names(&virtual_targets),
            ["compute_75", "compute_100", "compute_100a", "compute_120"]
        );
    }

    #[test]
    fn help_without_the_option_or_its_values_is_an_error() {
        assert_eq!(gpu_names("--help\n"), Err(PtxasError::NoGpuName));
        assert_eq!(
            gpu_names("--gpu-name <gpu name>\n  Specify.\n--help\n"),
            Err(PtxasError::NoAllowedValues)
        );
        assert_eq!(
            gpu_names("--gpu-name\n Allowed values for this option: 'sm_75','gfx90a'.\n"),
            Err(PtxasError::BadValue("gfx90a".into()))
        );
    }

    #[test]
    fn lto_values_are_not_targets() {
        assert_eq!(parse_target("lto_90a"), Ok(None));
        assert_eq!(
            parse_target("sm_121f")
                .unwrap()
                .map(|target| target.to_string()),
            Some("sm_121f".to_string())
        );
    }
}
