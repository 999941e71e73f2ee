//! `envctl doctor [PROFILE…]`: gathers and judges through `ops::doctor`, and prints one
//! report. Exit 1 on a failure (or a
//! warning with `--strict`).

use std::path::PathBuf;

use super::{Context, runtime};
use crate::checks::profile::{GpuVerdict, ProfileReport};
use crate::checks::{Finding, Status, worst};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::ops::doctor::{DoctorReport, InvalidProfile, gather, judge};
use crate::ops::matrix::load_matrix;
use crate::ui::findings::{Section, print_sections};
use crate::units::index_ranges_in_order as index_ranges;

/// `envctl doctor`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Profiles to check (names or paths); by default the project's ./envctl/ profiles
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profiles: Vec<String>,
    /// Treat warnings as failures (exit 1)
    #[arg(long)]
    pub strict: bool,
    /// A compatibility matrix file whose rows add to or replace the bundled ones
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Print the matrix's date, row counts and sources, and exit
    #[arg(long)]
    pub matrix_info: bool,
    /// Several daemons side by side (contexts or URLs, comma-separated): the facts
    /// that make setups differ, with the differences marked; exit 1 when they differ
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOSTS",
        conflicts_with = "matrix_info"
    )]
    pub hosts: Vec<String>,
}

pub fn run(arguments: DoctorArgs, context: &Context) -> Result<ExitStatus, Error> {
    let matrix = load_matrix(
        arguments.matrix.as_deref(),
        context.environment.config_home().as_deref(),
    )?;
    if arguments.matrix_info {
        return crate::ui::matrix_info::print_info(&matrix, &context.printer, context.json);
    }
    let (profiles, invalid) = resolve_profiles(&arguments.profiles, context);
    let facts = runtime()?.block_on(gather(&profiles, context));
    // The host policy `up` applies here; one that cannot be used is a failed check.
    let policy = crate::ops::policy::in_force(context);
    if let Err(error) = &policy
        && !error.diagnostics().is_empty()
    {
        for diagnostic in error.diagnostics() {
            crate::ui::report::write_diagnostic(&context.printer, diagnostic);
        }
    }
    let in_force = policies_in_force(facts.daemon_policy.as_ref(), policy.as_ref().ok());
    let mut report = judge(&facts, &profiles, &matrix);
    put_connection_first(&mut report, &in_force, context);
    let report = report
        .with_invalid(invalid)
        .with_policy(policy)
        .with_daemon_policy(facts.daemon_policy.as_ref())
        .with_policy_verdicts(&in_force, &profiles, &facts, context);
    let status = worst(report.findings.iter()).max(
        report
            .profiles
            .iter()
            .map(ProfileReport::status)
            .max()
            .unwrap_or(Status::Pass),
    );
    if context.json {
        context.printer.json(&report)?;
    } else {
        render(&report, context)?;
    }
    Ok(match status {
        // An unreadable profile is invalid input, whatever the rest says.
        _ if !report.invalid_profiles.is_empty() => ExitStatus::Error,
        Status::Fail => ExitStatus::Failure,
        Status::Warn if arguments.strict => ExitStatus::Failure,
        _ => ExitStatus::Success,
    })
}

/// Each profile resolved on its own: one that cannot be read is reported, and the host and
/// the other profiles are still judged.
fn resolve_profiles(
    names: &[String],
    context: &Context,
) -> (Vec<crate::profile::ResolvedProfile>, Vec<InvalidProfile>) {
    let mut profiles = Vec::new();
    let mut invalid = Vec::new();
    for (label, resolved) in context.each_profile_or_project(names) {
        match resolved {
            Ok(resolved) => profiles.push(resolved),
            Err(error) => {
                context.printer.error(&error);
                invalid.push(InvalidProfile {
                    profile: label,
                    error: error.to_string(),
                    hint: error.hint(),
                    diagnostics: error.diagnostics().to_vec(),
                });
            }
        }
    }
    (profiles, invalid)
}

/// Every policy `up` would apply: the daemon's pushed one, then this machine's file.
fn policies_in_force(
    daemon_policy: Option<&Result<Option<crate::policy::Policy>, String>>,
    host_policy: Option<&Option<crate::policy::Policy>>,
) -> Vec<crate::policy::Policy> {
    daemon_policy
        .and_then(|read| read.as_ref().ok())
        .and_then(Option::as_ref)
        .into_iter()
        .chain(host_policy.and_then(Option::as_ref))
        .cloned()
        .collect()
}

/// Puts first which daemon was asked and what chose it (when a context or `-H` did), then
/// who the daemon's transport proves the user is (when not a local uid).
fn put_connection_first(
    report: &mut DoctorReport,
    in_force: &[crate::policy::Policy],
    context: &Context,
) {
    if let Some(endpoint) = crate::ops::doctor::endpoint_finding(context) {
        report.findings.insert(0, endpoint);
    }
    if let Some(identity) = crate::ops::doctor::identity_finding(context, in_force) {
        let at = usize::from(
            report
                .findings
                .first()
                .is_some_and(|finding| finding.id == "docker.endpoint"),
        );
        report.findings.insert(at, identity);
    }
}

/// One line per GPU: free or who holds it, with its memory and processes.
fn occupancy_lines(occupancy: &crate::ops::doctor::Occupancy) -> Vec<Finding> {
    let mut lines: Vec<Finding> = occupancy.gpus.iter().map(gpu_occupancy_line).collect();
    if !occupancy.unmapped.is_empty() {
        lines.push(Finding::info(
            "gpu.occupancy",
            format!(
                "asked for by containers, no GPU here: {}",
                occupancy.unmapped.join(", ")
            ),
        ));
    }
    for unread in &occupancy.unattributed {
        lines.push(Finding::warn("gpu.occupancy", unread.clone()));
    }
    if let Some(error) = &occupancy.error {
        lines.push(
            Finding::warn(
                "gpu.occupancy",
                format!("cannot list the containers that hold GPUs: {error}"),
            )
            .with_hint("`docker ps -a` shows the containers the engine has"),
        );
    }
    lines
}

/// One GPU's line: free, busy or who holds it, its memory and its processes; a warning
/// when placement would avoid it.
fn gpu_occupancy_line(gpu: &crate::container_plan::placement::GpuOccupancy) -> Finding {
    let memory = match (gpu.memory_used_bytes, gpu.memory_total_bytes) {
        (Some(used), Some(total)) => {
            format!("{} of {} MiB used", used >> 20, total >> 20)
        }
        _ => "memory unknown".into(),
    };
    let processes = match &gpu.processes {
        Some(processes) => {
            let mut said = format!(
                "{} process{}",
                processes.len(),
                if processes.len() == 1 { "" } else { "es" }
            );
            let named: Vec<String> = processes.iter().map(process_words).collect();
            if !named.is_empty() {
                said.push_str(&format!(" ({})", named.join(", ")));
            }
            said
        }
        None => "processes unknown".into(),
    };
    let holders: Vec<String> = gpu.holders.iter().map(holder_words).collect();
    let who = match (&gpu.busy, gpu.free) {
        (Some(_), _) => "busy (no container holds it)".to_string(),
        (None, true) => "free".to_string(),
        (None, false) => format!("held by {}", holders.join(", ")),
    };
    let message = format!("GPU {}: {who}; {memory}, {processes}", gpu.index);
    if let Some(busy) = &gpu.busy {
        Finding::warn("gpu.occupancy", message).with_hint(format!(
                    "busy: {busy}; placement takes a busy GPU only when no idle one is left, and says so (`placement = \"idle\"` never does)"
                ))
    } else if gpu.unreadable.is_empty() {
        Finding::info("gpu.occupancy", message)
    } else {
        Finding::warn("gpu.occupancy", message).with_hint(format!(
            "placement never picks it: NVML could not read its {}",
            gpu.unreadable.join("; ")
        ))
    }
}

/// A GPU process and the container it runs in.
fn process_words(process: &crate::container_plan::placement::OccupyingProcess) -> String {
    match &process.container {
        Some(container) => format!("{} in {container}", process.pid),
        None => format!("{} in no running container", process.pid),
    }
}

/// A holder of a GPU: its name, state and user.
fn holder_words(holder: &crate::container_plan::placement::HolderName) -> String {
    let mut said = format!("{} ({}", holder.name, holder.state);
    if let Some(user) = &holder.user {
        said.push_str(&format!(", {user}"));
    }
    said + ")"
}

/// A policy's rules, one line each, or that it has none.
fn rule_lines(in_force: &crate::policy::PolicyReport) -> Vec<Finding> {
    if in_force.rules.is_empty() {
        return vec![Finding::info(
            "policy.rule",
            "no rules: every container is allowed",
        )];
    }
    in_force
        .rules
        .iter()
        .map(|rule| {
            Finding::info(
                "policy.rule",
                format!("{} = {} (line {})", rule.rule, rule.value_text(), rule.line),
            )
        })
        .collect()
}

/// Where a pushed policy came from: `pushed to ssh://gpu2 by alice@laptop at …`.
pub fn pushed_words(in_force: &crate::policy::PolicyReport) -> String {
    match &in_force.origin {
        crate::policy::Origin::Daemon {
            endpoint,
            pushed_by,
            pushed_at,
        } => {
            let mut words = format!("pushed to {}", crate::ui::text::shown(endpoint));
            if let Some(by) = pushed_by {
                words.push_str(&format!(" by {}", crate::ui::text::shown(by)));
            }
            if let Some(at) = pushed_at {
                words.push_str(&format!(" at {}", crate::ui::text::shown(at)));
            }
            words
        }
        crate::policy::Origin::File => in_force.path.clone(),
    }
}

fn render(report: &DoctorReport, context: &Context) -> Result<(), Error> {
    let (policy, host): (Vec<Finding>, Vec<Finding>) = report
        .findings
        .iter()
        .cloned()
        .partition(|finding| finding.id == crate::ops::doctor::POLICY_INVALID);
    let (docker, rest): (Vec<Finding>, Vec<Finding>) = host
        .into_iter()
        .partition(|finding| finding.area == Some(crate::checks::Area::Docker));
    let mut sections = vec![
        Section {
            title: engine_title(report),
            findings: docker,
        },
        Section {
            title: "NVIDIA".into(),
            findings: rest,
        },
    ];
    if let Some(occupancy) = &report.occupancy {
        sections.push(Section {
            title: "GPU occupancy".into(),
            findings: occupancy_lines(occupancy),
        });
    }
    policy_sections(report, policy, &mut sections);
    profile_sections(report, &mut sections);
    print_sections(&context.printer, &sections)
}

/// The engine as it is (Podman answers the same API); "Docker" when it could not be
/// asked, as the socket is Docker's by default.
fn engine_title(report: &DoctorReport) -> String {
    match &report.host.engine.state {
        crate::facts::engine::EngineState::Reachable(daemon)
            if daemon.kind != crate::facts::engine::EngineKind::Unknown =>
        {
            daemon.kind.name().into()
        }
        _ => "Docker".into(),
    }
}

/// The daemon's and the host's policy sections: their rules, or the findings about them.
fn policy_sections(report: &DoctorReport, policy: Vec<Finding>, sections: &mut Vec<Section>) {
    let (daemon_policy, policy): (Vec<Finding>, Vec<Finding>) = policy
        .into_iter()
        .partition(|finding| finding.id == crate::ops::doctor::POLICY_DAEMON);
    match &report.daemon_policy {
        Some(in_force) => sections.push(Section {
            title: format!("Daemon policy ({})", pushed_words(in_force)),
            findings: rule_lines(in_force),
        }),
        None if !daemon_policy.is_empty() => sections.push(Section {
            title: "Daemon policy".into(),
            findings: daemon_policy,
        }),
        None => {}
    }
    match &report.policy {
        Some(in_force) => sections.push(Section {
            title: format!("Host policy ({})", in_force.path),
            findings: rule_lines(in_force),
        }),
        None if !policy.is_empty() => sections.push(Section {
            title: "Host policy".into(),
            findings: policy,
        }),
        None => {}
    }
}

/// A section for each profile that could not be read, then one for each judged profile.
fn profile_sections(report: &DoctorReport, sections: &mut Vec<Section>) {
    for invalid in &report.invalid_profiles {
        let listed =
            (!invalid.diagnostics.is_empty()).then_some("the problems are listed on stderr");
        let hint = match (&invalid.hint, listed) {
            (Some(hint), Some(listed)) => Some(format!("{hint} ({listed})")),
            (Some(hint), None) => Some(hint.clone()),
            (None, listed) => listed.map(str::to_string),
        };
        let mut finding = Finding::fail("profile.invalid", invalid.error.clone());
        if let Some(hint) = hint {
            finding = finding.with_hint(hint);
        }
        sections.push(Section {
            title: format!("Profile {} (not judged)", invalid.profile),
            findings: vec![finding],
        });
    }
    for profile in &report.profiles {
        let mut findings = profile.findings.clone();
        findings.extend(gpu_lines(&profile.gpus));
        sections.push(Section {
            title: format!("Profile {} ({})", profile.name, profile.image),
            findings,
        });
    }
}

/// Per-GPU findings, with GPUs of one model and one outcome folded into one line each.
fn gpu_lines(gpus: &[GpuVerdict]) -> Vec<Finding> {
    let mut groups: Vec<(Vec<u32>, &GpuVerdict)> = Vec::new();
    for gpu in gpus {
        match groups
            .iter_mut()
            .find(|(_, first)| first.name == gpu.name && first.findings == gpu.findings)
        {
            Some((indices, _)) => indices.push(gpu.index),
            None => groups.push((vec![gpu.index], gpu)),
        }
    }
    groups
        .into_iter()
        .flat_map(|(indices, gpu)| {
            let label = format!(
                "GPU {} ({})",
                index_ranges(&indices),
                gpu.name.as_deref().unwrap_or("unknown model")
            );
            gpu.findings.iter().map(move |finding| Finding {
                message: format!("{label}: {}", finding.message),
                ..finding.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_indices_into_ranges() {
        assert_eq!(index_ranges(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(index_ranges(&[0, 2, 3]), "0, 2-3");
        assert_eq!(index_ranges(&[5]), "5");
    }
}
