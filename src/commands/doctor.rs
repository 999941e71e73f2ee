//! `envctl doctor [PROFILE…]`: gathers host, NVML and daemon facts in parallel, judges them
//! and each profile with the pure checks, and prints one report. Exit 1 on a failure (or a
//! warning with `--strict`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::matrix::{self, load_matrix};
use super::{Context, runtime};
use crate::checks::profile::{GpuVerdict, HostView, ImageState, ProfileReport, evaluate};
use crate::checks::{self, Finding, Status, worst};
use crate::compat::{Matrix, TorchCandidate};
use crate::engine::facts::{EngineFacts, EngineState, ImageFacts};
use crate::engine::{Engine, PING_TIMEOUT};
use crate::error::Error;
use crate::exit::ExitStatus;
use crate::gpu::{self, GpuFacts};
use crate::host::{HostFacts, Probe};
use crate::profile::ResolvedProfile;
use crate::ui::findings::{Section, print_sections};
use crate::units::index_ranges_in_order as index_ranges;

/// Everything doctor found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub verdict: &'static str,
    pub matrix: String,
    pub host: HostReport,
    pub findings: Vec<Finding>,
    pub profiles: Vec<ProfileReport>,
}

/// The gathered facts, so a report can be replayed and a failure explained.
#[derive(Debug, Serialize)]
pub struct HostReport {
    pub engine: EngineFacts,
    pub gpu: GpuFacts,
    #[serde(flatten)]
    pub host: HostFacts,
}

pub struct DoctorArguments {
    pub profiles: Vec<String>,
    pub strict: bool,
    pub matrix: Option<PathBuf>,
    pub matrix_info: bool,
}

pub fn run(arguments: DoctorArguments, context: &Context) -> Result<ExitStatus, Error> {
    let matrix = load_matrix(arguments.matrix.as_deref())?;
    if arguments.matrix_info {
        return matrix::print_info(&matrix, context);
    }
    let profiles = context.profiles_or_project(&arguments.profiles)?;
    let facts = gather(&profiles, context)?;
    let report = judge(&facts, &profiles, &matrix);
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
        Status::Fail => ExitStatus::Failure,
        Status::Warn if arguments.strict => ExitStatus::Failure,
        _ => ExitStatus::Success,
    })
}

/// What doctor gathered: daemon, NVML and host facts, and per profile its image's facts.
pub struct Facts {
    pub engine: EngineFacts,
    pub gpu: GpuFacts,
    pub host: HostFacts,
    /// Per profile, the image's facts when it is present locally.
    /// `Err` holds why the daemon could not be asked about it.
    pub images: Vec<Result<Option<ImageFacts>, String>>,
    pub free_bytes: Option<Result<u64, String>>,
    pub library_from_environment: bool,
}

fn gather(profiles: &[ResolvedProfile], context: &Context) -> Result<Facts, Error> {
    let engine = Engine::connect(context.docker_host.as_deref(), PING_TIMEOUT);
    Ok(runtime()?.block_on(gather_with(engine, profiles, None, context)))
}

/// Asks NVML, the host probe and the daemon at the same time. `engine` is the connection
/// to use (or why there is none), so `up` can share its own; `known_gpu` is what NVML
/// already said in this process (`up` asks it first for `gpus = "optional"`), so the
/// driver is not initialised twice.
pub async fn gather_with(
    engine: Result<Engine, crate::engine::EngineError>,
    profiles: &[ResolvedProfile],
    known_gpu: Option<GpuFacts>,
    context: &Context,
) -> Facts {
    let library = std::env::var_os(gpu::LIBRARY_VARIABLE)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let endpoint = context
        .docker_host
        .clone()
        .unwrap_or_else(|| crate::engine::DEFAULT_ENDPOINT.to_string());
    let probe = Probe {
        root: PathBuf::from("/"),
        path: std::env::var_os("PATH"),
        docker_endpoint: endpoint.clone(),
    };
    let library_for_nvml = library.clone();
    let gpu_task = tokio::task::spawn_blocking(move || {
        known_gpu.unwrap_or_else(|| gpu::gather(library_for_nvml.as_deref()))
    });
    let host_task = tokio::task::spawn_blocking(move || probe.gather());
    let (engine_facts, images) = daemon_facts(engine, &endpoint, profiles).await;
    // A panicking probe is a bug; its facts are then reported as missing, not invented.
    let gpu = gpu_task.await.unwrap_or_else(|_| GpuFacts {
        library: library.as_deref().map_or_else(
            || gpu::DEFAULT_LIBRARY.to_string(),
            |path| path.display().to_string(),
        ),
        nvml: gpu::LoadOutcome::Unknown {
            message: "the NVML probe crashed".into(),
        },
    });
    let host = host_task.await.unwrap_or_default();
    // Free space is only meaningful where the daemon's files are this machine's.
    let free_bytes = match &engine_facts.state {
        EngineState::Reachable(daemon)
            if endpoint.starts_with("unix://") && !daemon.docker_desktop =>
        {
            daemon.docker_root_dir.as_deref().map(|root| {
                crate::host::free_space(Path::new(root)).map_err(|error| format!("{root}: {error}"))
            })
        }
        _ => None,
    };
    Facts {
        engine: engine_facts,
        gpu,
        host,
        images,
        free_bytes,
        library_from_environment: library.is_some(),
    }
}

async fn daemon_facts(
    engine: Result<Engine, crate::engine::EngineError>,
    endpoint: &str,
    profiles: &[ResolvedProfile],
) -> (EngineFacts, Vec<Result<Option<ImageFacts>, String>>) {
    let engine = match engine {
        Ok(engine) => engine,
        Err(error) => {
            let facts = EngineFacts {
                endpoint: endpoint.to_string(),
                state: EngineState::Unreachable {
                    kind: error.kind().into(),
                    message: crate::error::error_chain(&error),
                    hint: error.hint(),
                },
            };
            return (facts, vec![Ok(None); profiles.len()]);
        }
    };
    // The images are asked for alongside `/info` (the daemon's slowest answer), not after.
    let images = futures_util::future::join_all(profiles.iter().map(|resolved| {
        let reference = resolved.profile.image.to_string();
        let engine = &engine;
        async move {
            engine
                .image_facts(&reference)
                .await
                .map_err(|error| crate::error::error_chain(&error))
        }
    }));
    let (facts, images) = tokio::join!(engine.facts(), images);
    if matches!(facts.state, EngineState::Unreachable { .. }) {
        return (facts, vec![Ok(None); profiles.len()]);
    }
    (facts, images)
}

pub fn judge(facts: &Facts, profiles: &[ResolvedProfile], matrix: &Matrix) -> DoctorReport {
    let cgroup_driver = match &facts.engine.state {
        EngineState::Reachable(daemon) => daemon.cgroup_driver.clone(),
        EngineState::Unreachable { .. } => None,
    };
    let mut findings = checks::host::docker(&facts.engine, &facts.host, facts.free_bytes.as_ref());
    findings.extend(checks::gpu::nvml(
        &facts.gpu,
        &facts.host,
        facts.library_from_environment,
    ));
    findings.extend(checks::host::host(&facts.host, cgroup_driver.as_deref()));
    // Branch lifecycles are NVIDIA's data-center schedule: they say nothing of GeForce hosts.
    let datacenter_host = facts.gpu.loaded().is_some_and(|nvml| {
        nvml.gpus.iter().any(|gpu| {
            gpu.name
                .value()
                .is_some_and(|name| checks::profile::is_datacenter(name))
        })
    });
    if datacenter_host
        && let Some(driver) = facts
            .gpu
            .loaded()
            .and_then(|nvml| nvml.driver_version.value())
            .and_then(|text| text.parse().ok())
        && let Some(finding) = crate::compat::driver_branch_lifecycle(matrix, &driver, &today())
    {
        findings.push(finding);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let bundled = bundled_candidates();
    let candidates: Vec<TorchCandidate<'_>> = bundled
        .iter()
        .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
        .collect();
    let view = HostView {
        gpu: &facts.gpu,
        engine: &facts.engine,
        host: &facts.host,
        home: home.as_deref(),
    };
    let lock = crate::lock::file::read(Path::new(crate::lock::LOCK_FILE));
    let reports: Vec<ProfileReport> = profiles
        .iter()
        .zip(&facts.images)
        .map(|(resolved, image)| {
            let (image, inspect_failure) = match image {
                Ok(image) => (image.as_ref(), None),
                Err(message) => (None, Some(message)),
            };
            let state = match image {
                Some(image) => ImageState::Present(&image.env),
                None => ImageState::Absent,
            };
            let mut report = evaluate(resolved, state, view, matrix, &candidates);
            if let Some(message) = inspect_failure {
                // The daemon answered but not about the image: say so rather than call it
                // "not pulled"; the verdicts then rest on [stack].
                report.findings.push(
                    Finding::warn(
                        "profile.image",
                        format!("cannot inspect image `{}`: {message}", resolved.profile.image),
                    )
                    .with_hint("`docker image inspect` shows the daemon's answer; the checks use [stack] meanwhile"),
                );
                report.verdict = report.status().verdict();
            }
            let lock_finding = match &lock {
                Ok(Some(lock)) => {
                    let image_reference = resolved.profile.image.to_string();
                    let lock_state =
                        crate::lock::state(lock, &resolved.profile.name, &image_reference);
                    checks::lock::drift(&lock_state, image)
                }
                Ok(None) => None,
                Err(error) => Some(
                    Finding::warn(
                        "profile.lock",
                        crate::error::error_chain(error),
                    )
                    .with_hint(error.hint()),
                ),
            };
            if let Some(finding) = lock_finding {
                report.findings.push(finding);
                report.verdict = report.status().verdict();
            }
            report
        })
        .collect();
    let status = worst(findings.iter()).max(
        reports
            .iter()
            .map(ProfileReport::status)
            .max()
            .unwrap_or(Status::Pass),
    );
    DoctorReport {
        verdict: status.verdict(),
        matrix: matrix.describe(),
        host: HostReport {
            engine: facts.engine.clone(),
            gpu: facts.gpu.clone(),
            host: facts.host.clone(),
        },
        findings,
        profiles: reports,
    }
}

/// The bundled PyTorch profiles, newest first: what a failing GPU's hint can point to.
pub fn bundled_candidates() -> Vec<(
    String,
    crate::profile::model::TorchVersion,
    crate::profile::model::CudaVersion,
)> {
    let search = crate::profile::SearchPath::new(PathBuf::from("/nonexistent"), Vec::new(), None);
    let mut candidates: Vec<_> = crate::profile::bundled::BUNDLED
        .iter()
        .filter_map(|(name, _)| {
            search
                .resolve_file(crate::profile::ProfileFile::Bundled {
                    name: name.to_string(),
                })
                .ok()
        })
        .filter_map(|resolved| {
            let stack = resolved.profile.stack;
            Some((resolved.profile.name, stack.torch?, stack.cuda?))
        })
        .filter(|(_, torch, _)| torch.version.pre.is_empty())
        .collect();
    candidates.sort_by(|first, second| {
        second
            .1
            .version
            .cmp(&first.1.version)
            .then(first.0.len().cmp(&second.0.len()))
    });
    candidates
}

/// Today as `YYYY-MM-DD` (UTC), for lifecycle dates.
pub fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let days = (seconds / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
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

fn render(report: &DoctorReport, context: &Context) -> Result<(), Error> {
    let (docker, rest): (Vec<Finding>, Vec<Finding>) = report
        .findings
        .iter()
        .cloned()
        .partition(|finding| finding.id.starts_with("docker."));
    let mut sections = vec![
        Section {
            title: "Docker".into(),
            findings: docker,
        },
        Section {
            title: "NVIDIA".into(),
            findings: rest,
        },
    ];
    for profile in &report.profiles {
        let mut findings = profile.findings.clone();
        findings.extend(gpu_lines(&profile.gpus));
        sections.push(Section {
            title: format!("Profile {} ({})", profile.name, profile.image),
            findings,
        });
    }
    print_sections(&context.printer, &sections)
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

    #[test]
    fn today_is_a_date() {
        let date = today();
        assert_eq!(date.len(), 10);
        assert!(date.as_str() >= "2026-01-01", "{date}");
    }

    #[test]
    fn bundled_candidates_are_newest_first() {
        let candidates = bundled_candidates();
        assert!(candidates.len() >= 6);
        assert!(
            candidates
                .windows(2)
                .all(|pair| pair[0].1.version >= pair[1].1.version)
        );
    }
}
