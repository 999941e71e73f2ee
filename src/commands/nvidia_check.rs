//! `envctl exec TARGET nvidia-check [--json] [--quick] [--timeout S]`: the CUDA health check
//! inside a running container; `envctl nvidia-check [--profile P]`: the same check here,
//! without a container (`ops::nvidia_check::check_here`).
//!
//! `ops::nvidia_check` runs and judges it; this file renders. The embedded scripts
//! (`nvcheck::SHELL_SCRIPT`, which runs `nvcheck::PYTHON_SCRIPT`) go in as exec arguments, nothing mounted; their output is parsed into a `RawReport` and
//! judged by `nvcheck::judge` against the host's NVML driver (when the daemon is on this
//! machine), the GPUs the container's profile asks for, and the compatibility matrix. The
//! whole exec is bounded by `--timeout`: on timeout the findings say so, with what was
//! gathered before it. Exit 0 when nothing fails, 1 otherwise.

use serde::Serialize;

use super::Context;
use crate::checks::{Finding, Status};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::nvcheck::{Area, Expectations, RawReport};
use crate::ops::nvidia_check::{self, Checked};
use crate::ui::findings::{Section, print_sections};

pub use crate::ops::nvidia_check::NvidiaCheckOptions;

/// What `--json` prints (with `schema_version` added by the printer).
#[derive(Serialize)]
struct Report<'a> {
    verdict: &'static str,
    /// The container checked; null for a check run here (`envctl nvidia-check`).
    container: Option<&'a str>,
    /// `container`, or `here`.
    ran: &'static str,
    profile: Option<&'a str>,
    matrix: String,
    findings: Vec<SectionedFinding<'a>>,
    expectations: &'a Expectations<'a>,
    facts: &'a RawReport,
    /// The CUDA libraries `--libraries` scanned, with their architecture lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    libraries: Option<&'a crate::compat::fatbin::ImageLibraries>,
}

#[derive(Serialize)]
struct SectionedFinding<'a> {
    section: &'static str,
    #[serde(flatten)]
    finding: &'a Finding,
}

/// `envctl nvidia-check`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct NvidiaCheckArgs {
    /// Skip the timed matmul and the copy bandwidth
    #[arg(long)]
    pub quick: bool,
    /// Give up after this many seconds (at most a day)
    #[arg(long, default_value_t = 120, value_name = "SECONDS",
          value_parser = clap::value_parser!(u32).range(1..=86_400))]
    pub timeout: u32,
    /// Judge against this profile's expectations (torch, CUDA) as in its container
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Also read the CUDA libraries installed under FOLDER (repeatable) and judge them on
    /// the GPUs the check saw: what tests/gpu/check.sh compares with cuobjdump
    #[arg(long, value_name = "FOLDER", hide = true)]
    pub libraries: Vec<std::path::PathBuf>,
}

/// `envctl nvidia-check [--profile P]`: the check run here, without a container.
pub fn here(arguments: NvidiaCheckArgs, context: &Context) -> Result<ExitStatus, Error> {
    let options = NvidiaCheckOptions {
        quick: arguments.quick,
        timeout_seconds: u64::from(arguments.timeout),
    };
    let options = &options;
    let profile = arguments
        .profile
        .map(|name| context.search_path.resolve(&name))
        .transpose()?;
    super::runtime()?.block_on(async {
        tokio::select! {
            checked = nvidia_check::check_here(options, profile, &arguments.libraries, context, |checked| {
                render(&checked, context)
            }) => checked,
            code = super::termination_signal() => Ok(ExitStatus::External(code)),
        }
    })
}

/// The findings of a check, in a container (`envctl exec TARGET nvidia-check`, run by
/// `ops::nvidia_check::check`) or here: the report, and exit 1 when one fails.
pub fn render(checked: &Checked<'_>, context: &Context) -> Result<ExitStatus, Error> {
    render_as(checked, context, context.json)
}

/// [`render`], as one JSON document when `json` (`exec C nvidia-check --json` asks for it
/// after the name, where the global `--json` is not read).
pub fn render_as(
    checked: &Checked<'_>,
    context: &Context,
    json: bool,
) -> Result<ExitStatus, Error> {
    let Checked {
        container,
        matrix,
        expectations,
        facts: raw,
        findings,
        status,
        libraries,
    } = checked;
    let status = *status;

    if json {
        let report = Report {
            verdict: status.verdict(),
            container: container.map(|container| container.name.as_str()),
            ran: if container.is_some() {
                "container"
            } else {
                "here"
            },
            profile: expectations.profile.as_deref(),
            matrix: matrix.describe(),
            findings: findings
                .iter()
                .map(|finding| SectionedFinding {
                    section: finding.area.map_or("", Area::title),
                    finding,
                })
                .collect(),
            expectations,
            facts: raw,
            libraries: libraries.as_ref(),
        };
        context.printer.json(&report)?;
    } else {
        let sections: Vec<Section> = Area::NVIDIA_CHECK
            .iter()
            .map(|area| Section {
                title: area.title().to_string(),
                findings: findings
                    .iter()
                    .filter(|finding| finding.area == Some(*area))
                    .cloned()
                    .collect(),
            })
            .filter(|section| !section.findings.is_empty())
            .collect();
        print_sections(&context.printer, &sections)?;
    }
    Ok(if status == Status::Fail {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
