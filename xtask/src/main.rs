//! `cargo xtask`: maintainer tasks for envctl, not part of the shipped CLI.
//!
//! `cargo xtask matrix torch VERSION` downloads that torch wheel with `pip download
//! --no-deps` for Linux x86_64 or `--platform aarch64` (or reads `--wheel FILE`, whose
//! version.py must name VERSION), measures it and prints its `[[torch_build]]` row, or says
//! it is a CPU build; it warns for each other CUDA library of the wheel that lacks a target;
//! `cargo xtask matrix nvcc VERSION` does the same for NVIDIA's `nvidia-cuda-nvcc` package
//! and prints a `[[cuda_targets]]` row. `--compare MATRIX` checks the row against a matrix
//! file and reports every disagreement. Rows go to stdout, progress to stderr.
//! `cargo xtask rules [SRC]` checks ARCHITECTURE.md's layering rules over envctl's `src/`
//! by parsing it (`xtask::rules`): one line per violation, exit status 1 when there is one.

mod bytes;
mod compare;
mod fatbin;
mod metadata;
mod ptxas;
mod rows;
mod torch;
mod zip;

use std::fs::File;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use thiserror::Error;

const USAGE: &str = "\
usage:
  cargo xtask matrix torch VERSION [--wheel FILE | --index-url URL] [--platform x86_64|aarch64]
                                   [--python X.Y] [--compare MATRIX]
  cargo xtask matrix nvcc VERSION [--package NAME] [--compare MATRIX]
  cargo xtask rules [SRC]

  torch: downloads torch==VERSION for Linux x86_64 or aarch64 (default x86_64; CPython 3.11
         unless --python) with `pip download --no-deps`, or reads --wheel FILE; checks that
         torch/version.py names VERSION; reads the .nv_fatbin section of every
         torch/lib/libtorch_cuda*.so and the Requires-Dist pins of *.dist-info/METADATA
         (the cuda-toolkit release it pins is the row's cuda_runtime), prints the build's
         [[torch_build]] row (a CPU wheel is said to be one: it has no row), warns for each
         library lacking a target of the arch list, deletes the wheel.
  nvcc:  downloads nvidia-cuda-nvcc-cu11/-cu12 (CUDA 11/12) or nvidia-cuda-nvcc (13+),
         runs its ptxas --help, prints the release's [[cuda_targets]] row.
  --compare MATRIX: also compare the row with MATRIX (crates/envctl-core/src/compat/matrix.toml) and report
         every disagreement on stderr; the exit status is 1 when they disagree.
  rules: parses envctl's src/ (or SRC) and checks ARCHITECTURE.md's layering rules; one
         line per violation (file:line: rule: what), exit status 1 when there is one.";

#[derive(Debug, Error)]
enum XtaskError {
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    #[error(transparent)]
    Torch(#[from] torch::TorchError),
    #[error(transparent)]
    Zip(#[from] zip::ZipError),
    #[error(transparent)]
    Ptxas(#[from] ptxas::PtxasError),
    #[error("`{command}` failed ({status})")]
    Tool { command: String, status: String },
    #[error("`{command}` could not be started")]
    Start {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("`{0}` is not a platform: x86_64 or aarch64")]
    Platform(String),
    #[error("pip left {found} wheels in {folder}, expected one")]
    WheelCount { found: usize, folder: String },
    #[error("the wheel has no */bin/ptxas")]
    NoPtxas,
    #[error("reading the matrix {path}")]
    MatrixRead {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("parsing the matrix {path}")]
    MatrixParse {
        path: String,
        #[source]
        source: toml::de::Error,
    },
    #[error(transparent)]
    Rules(#[from] xtask::rules::RulesError),
    #[error("{0}")]
    Io(#[from] io::Error),
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match run(&arguments) {
        Ok(agrees) => {
            if agrees {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                eprintln!("caused by: {cause}");
                source = cause.source();
            }
            ExitCode::from(2)
        }
    }
}

/// The options after `matrix torch|nvcc VERSION`.
#[derive(Debug, Default)]
struct Options {
    wheel: Option<PathBuf>,
    index_url: Option<String>,
    python: Option<String>,
    package: Option<String>,
    compare: Option<PathBuf>,
    platform: Option<String>,
}

fn parse_options(words: &[String]) -> Result<Options, XtaskError> {
    let mut options = Options::default();
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .cloned()
                .ok_or_else(|| XtaskError::Usage(format!("{word} needs a value")))
        };
        match word.as_str() {
            "--wheel" => options.wheel = Some(PathBuf::from(value()?)),
            "--index-url" => options.index_url = Some(value()?),
            "--python" => options.python = Some(value()?),
            "--package" => options.package = Some(value()?),
            "--compare" => options.compare = Some(PathBuf::from(value()?)),
            "--platform" => {
                let platform = value()?;
                if platform != "x86_64" && platform != "aarch64" {
                    return Err(XtaskError::Platform(platform));
                }
                options.platform = Some(platform);
            }
            other => return Err(XtaskError::Usage(format!("unknown argument `{other}`"))),
        }
    }
    if options.wheel.is_some() && options.index_url.is_some() {
        return Err(XtaskError::Usage(
            "--wheel and --index-url exclude each other".into(),
        ));
    }
    Ok(options)
}

/// Runs the command; `Ok(false)` when a comparison found a disagreement.
fn run(arguments: &[String]) -> Result<bool, XtaskError> {
    let words: Vec<&str> = arguments.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["matrix", "torch", version, ..] if !version.starts_with('-') => {
            measure_torch(version, &parse_options(&arguments[3..])?)
        }
        ["matrix", "nvcc", version, ..] if !version.starts_with('-') => {
            measure_nvcc(version, &parse_options(&arguments[3..])?)
        }
        ["rules"] => check_rules(&xtask::rules::envctl_sources()),
        ["rules", source] if !source.starts_with('-') => {
            check_rules(&[xtask::rules::Source::by_path(Path::new(source))])
        }
        [] | ["help" | "--help" | "-h", ..] => Err(XtaskError::Usage("no task given".into())),
        _ => Err(XtaskError::Usage(format!(
            "unknown task `{}`",
            arguments.join(" ")
        ))),
    }
}

/// `cargo xtask rules [SRC]`: ARCHITECTURE.md's layering rules over envctl's crates (or
/// `SRC`); one line per violation on stdout, `Ok(false)` when there is one.
fn check_rules(sources: &[xtask::rules::Source]) -> Result<bool, XtaskError> {
    let violations =
        xtask::rules::check_sources(sources, xtask::rules::RULES, xtask::rules::EXCEPTIONS)?;
    for violation in &violations {
        println!("{violation}");
    }
    if violations.is_empty() {
        let shown: Vec<&str> = sources.iter().map(|source| source.shown.as_str()).collect();
        eprintln!("the layering rules hold over {}", shown.join(", "));
    } else {
        eprintln!(
            "{} break(s) of the layering rules (ARCHITECTURE.md, \"The rules are checked, by a parser\")",
            violations.len()
        );
    }
    Ok(violations.is_empty())
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// pip's platform tags for a platform, newest first.
fn platform_tags(platform: &str) -> [String; 4] {
    [
        format!("manylinux_2_28_{platform}"),
        format!("manylinux_2_17_{platform}"),
        format!("manylinux2014_{platform}"),
        format!("manylinux1_{platform}"),
    ]
}

fn measure_torch(version: &str, options: &Options) -> Result<bool, XtaskError> {
    let folder = tempfile::tempdir()?;
    let started = Instant::now();
    let platform = options.platform.as_deref().unwrap_or("x86_64");
    let (wheel, origin) = torch_wheel(version, options, platform, folder.path())?;
    let downloaded = started.elapsed();
    let measuring = Instant::now();
    let measurement = match torch::measure_wheel(&wheel, version)? {
        torch::Wheel::Cuda(measurement) => measurement,
        torch::Wheel::Cpu {
            version: found,
            built,
        } => {
            // A fact worth recording (PyPI's aarch64 wheels up to 2.10), not an error: said
            // on stdout as a comment, where the row would have been.
            println!(
                "# {}: torch {found} ({platform}, built {built}) is a CPU build: torch/version.py says cuda = None; no [[torch_build]] row",
                wheel.file_name().map_or_else(
                    || wheel.display().to_string(),
                    |name| name.to_string_lossy().into_owned()
                )
            );
            return Ok(true);
        }
    };
    for gap in rows::library_gaps(&measurement) {
        eprintln!("warning: {gap}: its kernels are missing for those GPUs");
    }
    eprintln!(
        "measured {} ({}): fetched in {:.0} s, measured in {:.0} s",
        measurement.wheel,
        megabytes(measurement.bytes),
        downloaded.as_secs_f64(),
        measuring.elapsed().as_secs_f64()
    );
    let row = rows::torch_build_row(&measurement, &origin, platform, &today())?;
    println!("{row}");
    // The temporary folder (and the downloaded wheel in it) is removed here.
    drop(folder);
    match &options.compare {
        None => Ok(true),
        Some(matrix) => compare_torch(&measurement, platform, matrix),
    }
}

/// The wheel to measure: `--wheel`, else torch `version` downloaded for `platform` into
/// `folder`; and where it came from.
fn torch_wheel(
    version: &str,
    options: &Options,
    platform: &str,
    folder: &Path,
) -> Result<(PathBuf, rows::Origin), XtaskError> {
    Ok(match &options.wheel {
        Some(wheel) => (wheel.clone(), rows::Origin::LocalFile),
        None => {
            let python = options.python.as_deref().unwrap_or("3.11");
            let tags = platform_tags(platform);
            let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
            let wheel = pip_download(
                &format!("torch=={version}"),
                python,
                &tags,
                options.index_url.as_deref(),
                folder,
            )?;
            let origin = match &options.index_url {
                Some(url) => rows::Origin::Index(url.clone()),
                None => rows::Origin::PyPi,
            };
            (wheel, origin)
        }
    })
}

/// Compares a measured torch build with the matrix's row for it, and says the verdict.
fn compare_torch(
    measurement: &torch::Measurement,
    platform: &str,
    matrix: &Path,
) -> Result<bool, XtaskError> {
    let build = rows::classify(&measurement.census, measurement.fatbins);
    let text = read_matrix(matrix)?;
    let release = measurement.release();
    let variant = measurement.variant()?;
    let verdict = compare::torch_build(
        &text,
        &release,
        &variant,
        platform,
        &build.targets,
        build.ptx.last().copied(),
        measurement
            .pins
            .as_ref()
            .and_then(|pins| pins.cuda_toolkit_version.as_deref()),
    )
    .map_err(|source| XtaskError::MatrixParse {
        path: matrix.display().to_string(),
        source,
    })?;
    Ok(report(
        &format!("{release}+{variant} ({platform})"),
        matrix,
        &verdict,
    ))
}

fn measure_nvcc(version: &str, options: &Options) -> Result<bool, XtaskError> {
    let cuda = cuda_release(version)?;
    let package = match &options.package {
        Some(package) => package.clone(),
        None => match cuda.split('.').next() {
            Some("11") => "nvidia-cuda-nvcc-cu11".into(),
            Some("12") => "nvidia-cuda-nvcc-cu12".into(),
            _ => "nvidia-cuda-nvcc".into(),
        },
    };
    let folder = tempfile::tempdir()?;
    let wheel = pip_download(
        &format!("{package}=={version}"),
        options.python.as_deref().unwrap_or("3.11"),
        &[
            "manylinux_2_27_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
            "manylinux1_x86_64",
        ],
        options.index_url.as_deref(),
        folder.path(),
    )?;
    let sha256 = torch::sha256_file(&wheel)?;
    let help = ptxas_help(&wheel, folder.path())?;
    let (real, virtual_targets) = ptxas::gpu_names(&String::from_utf8_lossy(&help))?;
    let targets = rows::CompilerTargets {
        cuda: cuda.clone(),
        package,
        version: version.to_string(),
        wheel: wheel.file_name().map_or_else(
            || wheel.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        ),
        sha256,
        real: real.clone(),
        virtual_targets: rows::portable(&virtual_targets),
    };
    println!("{}", rows::cuda_targets_row(&targets, &today()));
    drop(folder);
    match &options.compare {
        None => Ok(true),
        Some(matrix) => {
            let text = read_matrix(matrix)?;
            let verdict = compare::cuda_targets(&text, &cuda, &real).map_err(|source| {
                XtaskError::MatrixParse {
                    path: matrix.display().to_string(),
                    source,
                }
            })?;
            Ok(report(&format!("CUDA {cuda}"), matrix, &verdict))
        }
    }
}

/// `major.minor` of a CUDA version like 13.0.88.
fn cuda_release(version: &str) -> Result<String, XtaskError> {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => Ok(format!("{major}.{minor}")),
        _ => Err(XtaskError::Usage(format!(
            "`{version}` is not a version like 13.0.88"
        ))),
    }
}

/// What `ptxas --help` prints, ptxas taken out of the nvcc `wheel` into `folder`.
fn ptxas_help(wheel: &Path, folder: &Path) -> Result<Vec<u8>, XtaskError> {
    let mut file = BufReader::new(File::open(wheel)?);
    let members = zip::members(&mut file)?;
    let member = members
        .iter()
        .find(|member| member.name.ends_with("/bin/ptxas"))
        .ok_or(XtaskError::NoPtxas)?;
    let ptxas = folder.join("ptxas");
    {
        let mut out = File::create(&ptxas)?;
        zip::extract(&mut file, member, &mut out)?;
    }
    make_executable(&ptxas)?;
    let output = Command::new(&ptxas)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| XtaskError::Start {
            command: "ptxas --help".into(),
            source,
        })?;
    if !output.status.success() {
        return Err(XtaskError::Tool {
            command: "ptxas --help".into(),
            status: output.status.to_string(),
        });
    }
    Ok(output.stdout)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> io::Result<()> {
    Ok(())
}

fn read_matrix(path: &Path) -> Result<String, XtaskError> {
    std::fs::read_to_string(path).map_err(|source| XtaskError::MatrixRead {
        path: path.display().to_string(),
        source,
    })
}

/// Says what the comparison found; true when the matrix agrees.
fn report(what: &str, matrix: &Path, verdict: &compare::Verdict) -> bool {
    let matrix = matrix.display();
    match verdict {
        compare::Verdict::Agrees => {
            eprintln!("{what}: {matrix} agrees with the binaries");
            true
        }
        compare::Verdict::Missing => {
            eprintln!("{what}: {matrix} has no row for it");
            true
        }
        compare::Verdict::Differs(lines) => {
            for line in lines {
                eprintln!("{what}: disagreement: {line}");
            }
            false
        }
    }
}

/// `pip download --no-deps` of one requirement for the given platform tags into `folder`;
/// the wheel.
fn pip_download(
    requirement: &str,
    python: &str,
    platforms: &[&str],
    index_url: Option<&str>,
    folder: &Path,
) -> Result<PathBuf, XtaskError> {
    let mut command = Command::new("pip");
    command
        .args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python,
        ])
        .arg("--dest")
        .arg(folder);
    for platform in platforms {
        command.args(["--platform", platform]);
    }
    if let Some(url) = index_url {
        command.args(["--index-url", url]);
    }
    command.arg(requirement);
    // pip's progress is talk: it goes to stderr, stdout stays for the rows.
    command.stdin(Stdio::null()).stdout(io::stderr());
    let shown = format!("pip download --no-deps {requirement}");
    eprintln!("running {shown}");
    let status = command.status().map_err(|source| XtaskError::Start {
        command: shown.clone(),
        source,
    })?;
    if !status.success() {
        return Err(XtaskError::Tool {
            command: shown,
            status: status.to_string(),
        });
    }
    let wheels: Vec<PathBuf> = std::fs::read_dir(folder)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "whl"))
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        _ => Err(XtaskError::WheelCount {
            found: wheels.len(),
            folder: folder.display().to_string(),
        }),
    }
}

/// Today (UTC) as `YYYY-MM-DD`, for the rows' `read` field.
#[allow(clippy::disallowed_methods)]
fn today() -> String {
    // A maintainer tool run by hand: envctl's rule (only `context` reads the clock) is about
    // the shipped CLI, whose verdicts must be replayable; a measurement's date is a fact of
    // the moment it runs.
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    civil_date(seconds / 86_400)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Hinnant's algorithm).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_423), "2025-12-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }

    #[test]
    fn options_and_usage_errors() {
        let words = |text: &str| text.split(' ').map(str::to_string).collect::<Vec<_>>();
        let options = parse_options(&words("--wheel w.whl --compare m.toml")).unwrap();
        assert_eq!(options.wheel, Some(PathBuf::from("w.whl")));
        assert_eq!(options.compare, Some(PathBuf::from("m.toml")));
        assert!(matches!(
            parse_options(&words("--wheel w.whl --index-url https://x")),
            Err(XtaskError::Usage(_))
        ));
        assert!(matches!(
            parse_options(&words("--python")),
            Err(XtaskError::Usage(_))
        ));
        assert!(matches!(
            run(&words("matrix torch")),
            Err(XtaskError::Usage(_))
        ));
        assert!(matches!(run(&[]), Err(XtaskError::Usage(_))));
        let options = parse_options(&words("--platform aarch64")).unwrap();
        assert_eq!(options.platform.as_deref(), Some("aarch64"));
        assert!(matches!(
            parse_options(&words("--platform arm64")),
            Err(XtaskError::Platform(_))
        ));
        assert_eq!(platform_tags("aarch64")[0], "manylinux_2_28_aarch64");
    }

    #[test]
    fn a_local_wheel_is_measured_without_pip() {
        let folder = tempfile::tempdir().unwrap();
        let wheel = folder
            .path()
            .join("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl");
        std::fs::write(&wheel, torch::tests_support::wheel()).unwrap();
        let torch::Wheel::Cuda(measurement) = torch::measure_wheel(&wheel, "2.15.0").unwrap()
        else {
            panic!("a CUDA wheel");
        };
        assert_eq!(
            measurement.wheel,
            "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(measurement.sha256.len(), 64);
        let row = rows::torch_build_row(
            &measurement,
            &rows::Origin::LocalFile,
            "x86_64",
            "2026-12-01",
        )
        .unwrap();
        assert!(
            row.contains("targets = [\"sm_75\", \"sm_80\", \"sm_120\"]"),
            "{row}"
        );
        assert!(row.contains("ptx = \"compute_120\""), "{row}");
    }
}
