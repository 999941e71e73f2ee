//! doctor's application layer: gather the host's, NVML's and the daemon's facts at once
//! ([`gather_with`]), then judge them and each profile with the pure checks ([`judge`]).
//! `doctor` renders the report; `up` runs the same two steps as its preflight.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checks::profile::{HostView, ImageState, ProfileReport, evaluate};
use crate::checks::{self, Finding, Status, worst};
use crate::compat::{Matrix, TorchCandidate};
use crate::context::Context;
use crate::engine::Engine;
use crate::facts::engine::{EngineFacts, EngineKind, EngineState, ImageFacts};
use crate::facts::gpu::{GpuFacts, LoadOutcome};
use crate::facts::host::HostFacts;
use crate::gpu;
use crate::host::Probe;
use crate::lock::LockFile;
use crate::lock::file::LockReadError;
use crate::profile::ResolvedProfile;

/// Everything doctor found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub verdict: &'static str,
    pub matrix: String,
    pub host: HostReport,
    pub findings: Vec<Finding>,
    pub profiles: Vec<ProfileReport>,
    /// Profiles that could not be read or resolved; each is reported on its own and the
    /// others are still judged. Any of them makes the verdict `fail`.
    pub invalid_profiles: Vec<InvalidProfile>,
    /// Per GPU, which containers hold it, its processes and memory, and whether it is
    /// free; `null` where doctor could not ask both NVML and the engine.
    pub occupancy: Option<Occupancy>,
    /// The host policy in force: its file and each rule with its value and line; `null`
    /// where there is none, or where it cannot be read (then a `policy.invalid` finding
    /// says why, with the file:line of each problem).
    pub policy: Option<crate::policy::PolicyReport>,
    /// The policy pushed to the daemon (`envctl policy push`), which every client of it
    /// obeys beside its own `policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_policy: Option<crate::policy::PolicyReport>,
}

/// Who holds each GPU of this host (`container_plan::placement::occupancy`).
#[derive(Debug, Serialize)]
pub struct Occupancy {
    pub gpus: Vec<crate::container_plan::placement::GpuOccupancy>,
    /// Device names holders ask for that match no GPU here (`MIG-…`, another host's UUID).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmapped: Vec<String>,
    /// Why the holders could not be listed; then `gpus` shows NVML's view alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// GPU processes whose container could not be read (`/proc/PID/cgroup`), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unattributed: Vec<String>,
}

/// A profile doctor could not judge: the name or file it was asked for, and why.
#[derive(Debug, Serialize)]
pub struct InvalidProfile {
    pub profile: String,
    pub error: String,
    pub hint: Option<String>,
    /// Each problem with its file, line and column (what `profiles check --json` gives).
    pub diagnostics: Vec<crate::profile::Diagnostic>,
}

impl DoctorReport {
    /// Adds profiles that could not be resolved; the verdict becomes `fail`.
    pub fn with_invalid(mut self, invalid: Vec<InvalidProfile>) -> DoctorReport {
        if !invalid.is_empty() {
            self.verdict = Status::Fail.verdict();
        }
        self.invalid_profiles = invalid;
        self
    }

    /// Adds the host policy as it was read: the rules in force, or a failed
    /// `policy.invalid` finding (verdict `fail`) when the file cannot be used.
    pub fn with_policy(
        mut self,
        policy: Result<Option<crate::policy::Policy>, crate::policy::PolicyError>,
    ) -> DoctorReport {
        match policy {
            Ok(policy) => self.policy = policy.as_ref().map(crate::policy::PolicyReport::from),
            Err(error) => {
                let mut message = error.to_string();
                let places = error.places();
                if !places.is_empty() {
                    message = format!("{message}: {}", places.join("; "));
                }
                self.findings
                    .push(Finding::fail(POLICY_INVALID, message).with_hint(error.hint()));
                self.verdict = Status::Fail.verdict();
            }
        }
        self
    }
}

impl DoctorReport {
    /// Adds the policy pushed to the daemon as it was read: its rules and where it came
    /// from, or a failed `policy.daemon` finding when it cannot be used (`up` refuses
    /// then too).
    pub fn with_daemon_policy(
        mut self,
        policy: Option<&Result<Option<crate::policy::Policy>, String>>,
    ) -> DoctorReport {
        match policy {
            None | Some(Ok(None)) => {}
            Some(Ok(Some(policy))) => {
                self.daemon_policy = Some(crate::policy::PolicyReport::from(policy));
            }
            Some(Err(message)) => {
                self.findings.push(
                    Finding::fail(POLICY_DAEMON, message.clone()).with_hint(
                        "its admin pushes a valid one with `envctl policy push FILE` (`envctl policy show` prints what is there)",
                    ),
                );
                self.verdict = Status::Fail.verdict();
            }
        }
        self
    }

    /// Judges each profile by the host policy as `up` would (the same rule, value and
    /// file:line as `up`'s refusal, a `profile.policy` failure each), counting what the
    /// user holds already where the engine's GPU holders were read.
    pub fn with_policy_verdicts(
        self,
        policies: &[crate::policy::Policy],
        profiles: &[ResolvedProfile],
        facts: &Facts,
        context: &Context,
    ) -> DoctorReport {
        self.with_policy_verdicts_as(policies, profiles, facts, context.me(), context)
    }

    /// [`DoctorReport::with_policy_verdicts`] for `user` as one host of several knows them
    /// (`ops::hosts::user_on`: `up --hosts` counts each host's GPUs of that identity).
    pub fn with_policy_verdicts_as(
        mut self,
        policies: &[crate::policy::Policy],
        profiles: &[ResolvedProfile],
        facts: &Facts,
        user: &crate::facts::user::User,
        context: &Context,
    ) -> DoctorReport {
        if policies.is_empty() {
            return self;
        }
        let holders = match &facts.holders {
            Some(Ok(holders)) => Some(holders.as_slice()),
            _ => None,
        };
        let working_directory = context
            .working_directory()
            .unwrap_or_else(|_| std::path::PathBuf::from("/"));
        for resolved in profiles {
            let spec_context = crate::container_plan::SpecContext {
                working_directory: working_directory.clone(),
                home: context.environment.home(),
                host_has_gpus: facts.gpu.listed_gpus().is_ok_and(|gpus| !gpus.is_empty()),
                overrides: crate::container_plan::Overrides::default(),
                // Missing mount sources are the profile checks' to report: the policy
                // judges the rest of the body.
                path_exists: &|_| true,
            };
            let Ok(body) = crate::container_plan::create_body(resolved, &spec_context) else {
                continue;
            };
            let name = crate::container_plan::container_name(&resolved.profile.name);
            let gate = crate::ops::policy::PolicyGate {
                policies,
                user,
                container: Some(&name),
            };
            let counted = holders.filter(|_| gate.counts_holders(&body));
            let Err(crate::error::Error::PolicyRefused {
                path, violations, ..
            }) = gate.enforce(&body, Some(&facts.gpu), counted, context)
            else {
                continue;
            };
            let Some(report) = self
                .profiles
                .iter_mut()
                .find(|report| report.name == resolved.profile.name)
            else {
                continue;
            };
            for violation in violations {
                report.findings.push(
                    Finding::fail(
                        POLICY_PROFILE,
                        format!(
                            "{path}:{}: {} = {}: {}",
                            violation.line, violation.rule, violation.limit, violation.message
                        ),
                    )
                    .with_hint(format!(
                        "`envctl up` refuses it: the host's admin sets these limits in `{path}`; ask them, or change the profile to stay within them"
                    )),
                );
            }
            report.verdict = report.status().verdict();
            self.verdict = Status::Fail.verdict();
        }
        self
    }
}

/// The finding of a profile the host policy refuses.
pub const POLICY_PROFILE: &str = "profile.policy";

/// The finding of a host policy that cannot be used.
pub const POLICY_INVALID: &str = "policy.invalid";
/// The policy pushed to the daemon cannot be read or used.
pub const POLICY_DAEMON: &str = "policy.daemon";

/// The gathered facts, so a report can be replayed and a failure explained.
#[derive(Debug, Serialize)]
pub struct HostReport {
    pub engine: EngineFacts,
    pub gpu: GpuFacts,
    #[serde(flatten)]
    pub host: HostFacts,
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
    /// `HOME`, for the safety checks of mounts (`~/.ssh`, the whole home).
    pub home: Option<PathBuf>,
    /// `./envctl.lock`, read once for every profile's lock drift.
    pub lock: Result<Option<LockFile>, LockReadError>,
    /// Today (UTC), for driver branch lifecycles.
    pub today: String,
    /// The containers holding GPUs (`Engine::gpu_holders`), for doctor's occupancy; `None`
    /// where nobody asked (`up`'s preflight places under its own lock instead).
    pub holders: Option<Result<Vec<crate::facts::occupancy::GpuHolder>, String>>,
    /// GPU process PIDs → the name of the container each runs in, with what could not be
    /// read; gathered with `holders`.
    pub process_owners: (std::collections::BTreeMap<u32, String>, Vec<String>),
    /// GPU process PIDs → who runs each (`host::user::process_user`); gathered with
    /// `holders`, for the busy GPUs' messages.
    pub process_users: std::collections::BTreeMap<u32, String>,
    /// The policy pushed to the daemon (`ops::policy::at_daemon`), or why it could not be
    /// used; `None` where nobody asked (no daemon answered, or `up`'s preflight).
    pub daemon_policy: Option<Result<Option<crate::policy::Policy>, String>>,
    /// Why the host probe gave no facts (it panicked: a bug): `host` is then empty, not
    /// measured, and doctor says so before judging it.
    pub host_crashed: Option<String>,
    /// slurm (issue 29): the Slurm job envctl runs in, if any (`ops::slurm::job`).
    pub slurm: Option<crate::facts::slurm::SlurmJob>,
    /// Issue 43: device nodes of NVIDIA CDI specs that do not match `/dev`.
    pub cdi_stale_nodes: Vec<crate::facts::host::StaleCdiNode>,
    /// Issue 41: per profile, the CUDA libraries of its image (`ops::image_libraries`), or
    /// why they could not be read; `None` where none were read (no image, no GPU here).
    pub image_libraries: Vec<Option<Result<crate::ops::image_libraries::Found, String>>>,
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
    let library = context.environment.nvml_library();
    let endpoint = chosen_endpoint(context);
    let probe = Probe {
        root: PathBuf::from("/"),
        path: context.environment.path().map(ToOwned::to_owned),
        working_directory: context
            .environment
            .working_directory()
            .map_or_else(|_| PathBuf::from("/"), Path::to_path_buf),
        docker_endpoint: endpoint.clone(),
    };
    let library_for_nvml = library.clone();
    let gpu_task = tokio::task::spawn_blocking(move || {
        known_gpu.unwrap_or_else(|| gpu::gather(library_for_nvml.as_deref()))
    });
    let host_task = tokio::task::spawn_blocking(move || probe.gather());
    // Kept for learning another machine's GPUs through it, once the facts say where it is.
    let probe_engine = engine.as_ref().ok().cloned();
    let (mut engine_facts, images, engine) = daemon_facts(engine, &endpoint, profiles).await;
    name_the_address(&mut engine_facts, context.daemon());
    let gpu = gpu_or_crash(gpu_task.await, library.as_deref());
    let (host, host_crashed) = match host_task.await {
        Ok(host) => (host, None),
        Err(error) => (HostFacts::default(), Some(error.to_string())),
    };
    // A daemon on another machine: this machine's NVML says nothing of its GPUs.
    let elsewhere = match &engine_facts.state {
        EngineState::Reachable(daemon) => daemon.host.elsewhere().map(str::to_string),
        EngineState::Unreachable { .. } => None,
    };
    let gpu = match &elsewhere {
        Some(host) => GpuFacts {
            library: gpu.library,
            nvml: match &probe_engine {
                Some(engine) => seen_on_server(engine, host, profiles, context).await,
                None => LoadOutcome::on_another_host(host),
            },
        },
        None => gpu,
    };
    let free_bytes = daemon_free_bytes(&engine_facts.state, elsewhere.is_some());
    let cdi_stale_nodes = match &elsewhere {
        Some(_) => Vec::new(),
        None => stale_cdi_nodes_here(&host),
    };
    let image_libraries =
        libraries_of_images(engine.as_ref(), &images, profiles, &gpu, context).await;
    Facts {
        engine: engine_facts,
        gpu,
        host,
        images,
        image_libraries,
        free_bytes,
        library_from_environment: library.is_some(),
        home: context.environment.home(),
        lock: crate::lock::file::read(Path::new(crate::lock::LOCK_FILE)),
        today: today(context.environment.now()),
        holders: None,
        process_owners: Default::default(),
        process_users: Default::default(),
        daemon_policy: None,
        host_crashed,
        slurm: crate::ops::slurm::job(context),
        cdi_stale_nodes,
    }
}

/// The endpoint the user chose (`-H`, a context, `DOCKER_HOST`), or, where the choice
/// failed (the engine's error says why), the variable as it is.
fn chosen_endpoint(context: &Context) -> String {
    match context.daemon() {
        Ok(choice) => choice.endpoint,
        Err(_) => context
            .environment
            .docker_host()
            .unwrap_or(crate::engine::DEFAULT_ENDPOINT)
            .to_string(),
    }
}

/// The NVML probe's facts; a panicking probe is a bug, so its facts are then reported as
/// missing, not invented.
fn gpu_or_crash(
    outcome: Result<GpuFacts, tokio::task::JoinError>,
    library: Option<&Path>,
) -> GpuFacts {
    outcome.unwrap_or_else(|_| GpuFacts {
        library: library.map_or_else(
            || gpu::DEFAULT_LIBRARY.to_string(),
            |path| path.display().to_string(),
        ),
        nvml: LoadOutcome::Unknown {
            message: "the NVML probe crashed".into(),
        },
    })
}

/// Free space under the daemon's root directory: only meaningful where the daemon's files
/// are this machine's (Docker Desktop's are its VM's, a remote daemon's its machine's).
fn daemon_free_bytes(state: &EngineState, elsewhere: bool) -> Option<Result<u64, String>> {
    match state {
        EngineState::Reachable(daemon) if !daemon.docker_desktop && !elsewhere => {
            daemon.docker_root_dir.as_deref().map(|root| {
                crate::host::free_space(Path::new(root)).map_err(|error| format!("{root}: {error}"))
            })
        }
        _ => None,
    }
}

/// This machine's NVIDIA CDI specs checked against its /dev (only asked where the daemon
/// runs here).
fn stale_cdi_nodes_here(host: &HostFacts) -> Vec<crate::facts::host::StaleCdiNode> {
    let specs: Vec<&str> = host
        .cdi_specs
        .iter()
        .filter(|spec| spec.nvidia_gpus)
        .map(|spec| spec.path.as_str())
        .collect();
    crate::host::cdi::stale_nodes(Path::new("/"), &specs)
}

/// Issue 41: the images' own CUDA libraries, judged against the daemon's machine's GPUs:
/// read only where those are known and the profile asks for some (after the GPU and
/// daemon facts, not beside them).
async fn libraries_of_images(
    engine: Option<&Engine>,
    images: &[Result<Option<ImageFacts>, String>],
    profiles: &[ResolvedProfile],
    gpu: &GpuFacts,
    context: &Context,
) -> Vec<Option<Result<crate::ops::image_libraries::Found, String>>> {
    let gpus_here = scans_libraries(gpu);
    let mut image_libraries = Vec::with_capacity(images.len());
    for (image, resolved) in images.iter().zip(profiles) {
        let asks_gpus = resolved.profile.gpus != crate::profile::model::GpuRequest::None;
        image_libraries.push(match (engine, image) {
            (Some(engine), Ok(Some(image))) if gpus_here && asks_gpus => Some(
                crate::ops::image_libraries::of_image(
                    engine,
                    image,
                    context.environment.cache_home().as_deref(),
                )
                .await,
            ),
            _ => None,
        });
    }
    image_libraries
}

/// Another machine's driver and GPUs, learnt through its daemon (its GPU record, or a
/// probe in one of the profiles' images): judged as this machine's are. When they cannot
/// be had, the outcome says why, with the command that helps.
async fn seen_on_server(
    engine: &Engine,
    host: &str,
    profiles: &[ResolvedProfile],
    context: &Context,
) -> LoadOutcome {
    let images: Vec<String> = profiles
        .iter()
        .map(|resolved| resolved.profile.image.to_string())
        .collect();
    use crate::ops::server_gpus::{Need, learn, recorded_only};
    // Profiles that want no GPU (an `up` of a CPU profile, its preflight): no probe
    // container for them, what the record tells if there is one.
    let wants_gpus = profiles.is_empty()
        || profiles
            .iter()
            .any(|resolved| resolved.profile.gpus.wants_gpus());
    if !wants_gpus {
        return LoadOutcome::seen_on_another_host(host, recorded_only(engine, host).await);
    }
    match learn(engine, host, &images, &[], Need::Facts, context).await {
        Ok(learnt) => {
            for note in &learnt.notes {
                context.printer.warn(note);
            }
            LoadOutcome::seen_on_another_host(host, Some(learnt.seen))
        }
        Err(error) => {
            let hint = error
                .hint()
                .map_or_else(String::new, |hint| format!(" (hint: {hint})"));
            LoadOutcome::OnAnotherHost {
                host: host.to_string(),
                message: format!(
                    "the daemon runs on {host}, whose NVIDIA driver and GPUs NVML on this machine cannot see, and they could not be learnt through it: {}{hint}",
                    crate::error::error_chain(&error)
                ),
                seen: None,
            }
        }
    }
}

/// Adds to `facts` what doctor's occupancy needs beyond [`gather_with`]: the containers
/// that hold GPUs and the container of each GPU process, from one list of `engine`'s.
/// Only where there are GPUs to show and an engine that answered.
pub async fn gather_occupancy(engine: &Engine, facts: &mut Facts, context: &Context) {
    let Ok(gpus) = facts.gpu.listed_gpus() else {
        return;
    };
    if !matches!(facts.engine.state, EngineState::Reachable(_)) {
        return;
    }
    match crate::ops::placement::holders_read(engine, context).await {
        Ok(read) => {
            // Any running container may have reached a GPU (a runtime's
            // `NVIDIA_VISIBLE_DEVICES`), not only the holders.
            facts.process_owners = crate::ops::placement::process_owners(gpus, &read.running);
            facts.process_users = gpus
                .iter()
                .filter_map(|gpu| gpu.processes.value())
                .flatten()
                .filter_map(|process| {
                    let user =
                        crate::host::user::process_user(std::path::Path::new("/"), process.pid)?;
                    Some((process.pid, user))
                })
                .collect();
            facts.holders = Some(Ok(read.holders));
        }
        Err(error) => facts.holders = Some(Err(crate::error::error_chain(&error))),
    }
}

/// The occupancy doctor shows: NVML's GPUs with the holders the engine listed.
fn occupancy(facts: &Facts) -> Option<Occupancy> {
    // Without NVML's list of GPUs there is no table to show (`gpu.nvml` says why).
    let gpus = facts.gpu.listed_gpus().ok()?;
    let listed = gpus;
    let (holders, error) = match facts.holders.as_ref()? {
        Ok(holders) => (holders.as_slice(), None),
        Err(message) => (&[][..], Some(message.clone())),
    };
    let (owners, unreadable) = &facts.process_owners;
    let (gpus, unmapped) = crate::container_plan::placement::occupancy_with_processes(
        gpus,
        holders,
        owners,
        &facts.process_users,
    );
    // A GPU that fell off the bus is not free, whoever holds it (issue 43).
    let mut gpus = gpus;
    for row in &mut gpus {
        if let Some(lost) = listed
            .iter()
            .find(|gpu| gpu.index == row.index)
            .and_then(|gpu| gpu.lost())
        {
            row.free = false;
            row.busy = Some(format!(
                "lost: NVML says it fell off the bus ({}); `gpu.health` says what to do",
                lost.message
            ));
        }
    }
    // A busy GPU (another user's process, its memory in use) is not free either: the JSON
    // said `"free": true` beside `"busy": …` while the words said busy (issue 40). `free`
    // is what the table says: no container holds it and nothing else uses it.
    for row in &mut gpus {
        if row.busy.is_some() {
            row.free = false;
        }
    }
    Some(Occupancy {
        gpus,
        unmapped,
        error,
        unattributed: unreadable.clone(),
    })
}

/// An engine that cannot be used is said with where its address came from: `DOCKER_HOST`,
/// or the default because `DOCKER_HOST` is unset (issue 31: the fix depends on which).
fn name_the_address(
    facts: &mut EngineFacts,
    choice: Result<
        crate::host::docker_config::DaemonChoice,
        crate::host::docker_config::DaemonChoiceError,
    >,
) {
    use crate::host::docker_config::ChosenBy;
    // A failed choice is the message already: nothing to add.
    if let EngineState::Unreachable { message, .. } = &mut facts.state
        && let Ok(choice) = choice
    {
        match &choice.chosen_by {
            ChosenBy::DockerHost => {
                message.push_str(&format!(" (DOCKER_HOST={})", choice.endpoint));
            }
            ChosenBy::HostFlag => message.push_str(&format!(" (-H {})", choice.endpoint)),
            ChosenBy::Context { .. } => {
                message.push_str(&format!(" ({}: {})", choice.described(), choice.endpoint))
            }
            ChosenBy::Default => message.push_str(&format!(
                " (the default address {}: DOCKER_HOST is unset)",
                choice.endpoint
            )),
        }
    }
}

async fn daemon_facts(
    engine: Result<Engine, crate::engine::EngineError>,
    endpoint: &str,
    profiles: &[ResolvedProfile],
) -> (
    EngineFacts,
    Vec<Result<Option<ImageFacts>, String>>,
    Option<Engine>,
) {
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
            return (facts, vec![Ok(None); profiles.len()], None);
        }
    };
    // The images are asked for alongside `/info` (the daemon's slowest answer), not after.
    let images = crate::engine::each_bounded(profiles.iter().map(|resolved| {
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
        return (facts, vec![Ok(None); profiles.len()], None);
    }
    (facts, images, Some(engine))
}

/// Every verdict of doctor: a pure function of what [`gather_with`] found. The host's
/// findings ([`host_findings`]), then each profile's report ([`profile_report`]); the
/// worst of them all is the verdict.
pub fn judge(facts: &Facts, profiles: &[ResolvedProfile], matrix: &Matrix) -> DoctorReport {
    let findings = host_findings(facts, matrix);
    let bundled = bundled_candidates();
    let candidates = torch_candidates(&bundled);
    let reports: Vec<ProfileReport> = profiles
        .iter()
        .zip(&facts.images)
        .enumerate()
        .map(|(index, (resolved, image))| {
            profile_report(facts, matrix, &candidates, index, resolved, image)
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
        invalid_profiles: Vec::new(),
        occupancy: occupancy(facts),
        policy: None,
        daemon_policy: None,
    }
}

/// The host's findings, whatever the profiles: the probe, the daemon, NVML and the GPU
/// models, this machine's kernel module and device nodes (a daemon here only), a Slurm
/// job, the driver branch's lifecycle, the GPUs' health and stale CDI specs.
fn host_findings(facts: &Facts, matrix: &Matrix) -> Vec<Finding> {
    let cgroup_driver = match &facts.engine.state {
        EngineState::Reachable(daemon) => daemon.cgroup_driver.clone(),
        EngineState::Unreachable { .. } => None,
    };
    let mut findings = Vec::new();
    if let Some(why) = &facts.host_crashed {
        findings.push(
            Finding::fail(
                "host.probe",
                format!("the host probe crashed ({why}): the kernel module, device nodes, CDI specs and tools below are missing facts, not measured ones"),
            )
            .with_hint("this is a bug in envctl: please report it with the output of `envctl doctor --json`")
            .in_area(checks::Area::Nvidia),
        );
    }
    findings.extend(checks::host::docker(
        &facts.engine,
        &facts.host,
        facts.free_bytes.as_ref(),
    ));
    findings.extend(checks::gpu::nvml(
        &facts.gpu,
        &facts.host,
        facts.library_from_environment,
    ));
    findings.extend(checks::gpu::model_floors(&facts.gpu, matrix));
    // This machine's kernel module, device nodes and cgroups describe a daemon here only.
    match &facts.engine.state {
        EngineState::Reachable(daemon) if daemon.host.elsewhere().is_some() => {
            findings.push(checks::host::elsewhere(daemon));
        }
        _ => findings.extend(checks::host::host(&facts.host, cgroup_driver.as_deref())),
    }
    // slurm (issue 29): inside a job, the job, its GPUs and the cgroup warning.
    findings.extend(checks::slurm::job(
        facts.slurm.as_ref(),
        facts.slurm.as_ref().and_then(|job| {
            let ids = job.gpus.ids()?;
            Some(facts.gpu.listed_gpus().and_then(|gpus| {
                crate::container_plan::slurm::allocated_gpus(job, ids, gpus)
                    .map_err(|error| error.to_string())
            }))
        }),
    ));
    let datacenter_host = is_datacenter_host(&facts.gpu);
    if datacenter_host
        && let Some(driver) = facts
            .gpu
            .loaded()
            .and_then(|nvml| nvml.driver_version.value())
            .and_then(|text| text.parse().ok())
        && let Some(finding) = crate::compat::driver_branch_lifecycle(matrix, &driver, &facts.today)
    {
        findings.push(finding.in_area(checks::Area::Nvidia));
    }
    // issue 43: each GPU's health, and persistence mode off on a data-center host. NVML
    // keeps no past Xids, so none are judged here (the policy's list matters to watchers).
    findings.extend(checks::health::findings(
        &facts.gpu,
        &checks::health::DEFAULT_FATAL_XIDS,
        datacenter_host,
    ));
    findings.extend(checks::health::stale_cdi(&facts.cdi_stale_nodes));
    findings
}

/// Whether a GPU of this host is a data-center one. Branch lifecycles are NVIDIA's
/// data-center schedule: they say nothing of GeForce hosts.
fn is_datacenter_host(gpu: &GpuFacts) -> bool {
    gpu.loaded().is_some_and(|nvml| {
        nvml.gpus.iter().any(|gpu| {
            gpu.name
                .value()
                .is_some_and(|name| checks::profile::is_datacenter(name))
        })
    })
}

/// The report of the `index`th profile, whose image the daemon described as `image` (or
/// could not): the core's evaluation, then the GPUs' health for what it asks, literal
/// secrets, an image that could not be inspected, the lock's drift and the image's CUDA
/// libraries, each lowering the verdict it joins.
fn profile_report(
    facts: &Facts,
    matrix: &Matrix,
    candidates: &[TorchCandidate<'_>],
    index: usize,
    resolved: &ResolvedProfile,
    image: &Result<Option<ImageFacts>, String>,
) -> ProfileReport {
    let view = HostView {
        gpu: &facts.gpu,
        engine: &facts.engine,
        host: &facts.host,
        home: facts.home.as_deref(),
    };
    let (image, inspect_failure) = match image {
        Ok(image) => (image.as_ref(), None),
        Err(message) => (None, Some(message)),
    };
    let state = match image {
        Some(image) => ImageState::Present(&image.env),
        None => ImageState::Absent,
    };
    let mut report = evaluate(resolved, state, view, matrix, candidates);
    let mut added: Vec<Finding> = Vec::new();
    if let Some(finding) = checks::health::profile_finding(
        &resolved.profile.gpus,
        &facts.gpu,
        &checks::health::DEFAULT_FATAL_XIDS,
    ) {
        added.push(finding);
    }
    added.extend(checks::safety::literal_secrets(resolved));
    if let Some(message) = inspect_failure {
        added.push(inspect_failure_finding(facts, resolved, message));
    }
    added.extend(lock_finding(&facts.lock, resolved, image));
    let libraries = facts.image_libraries.get(index).and_then(Option::as_ref);
    added.extend(library_findings(facts, resolved, libraries));
    if !added.is_empty() {
        report.findings.extend(added);
        report.verdict = report.status().verdict();
    }
    report
}

/// The daemon answered, but not about the profile's image: said so rather than called
/// "not pulled"; the verdicts then rest on [stack].
fn inspect_failure_finding(facts: &Facts, resolved: &ResolvedProfile, message: &str) -> Finding {
    Finding::warn(
        "profile.image",
        format!(
            "cannot inspect image `{}`: {message}",
            resolved.profile.image
        ),
    )
    .with_hint(format!(
        "`{} image inspect {}` shows the daemon's answer; the checks use [stack] meanwhile",
        match &facts.engine.state {
            EngineState::Reachable(daemon) => daemon.kind.cli(),
            EngineState::Unreachable { .. } => EngineKind::Unknown.cli(),
        },
        resolved.profile.image
    ))
}

/// How the profile's image stands to `envctl.lock` (`checks::lock::drift`), or why the
/// lock could not be read; nothing without a lock file.
fn lock_finding(
    lock: &Result<Option<LockFile>, LockReadError>,
    resolved: &ResolvedProfile,
    image: Option<&ImageFacts>,
) -> Option<Finding> {
    match lock {
        Ok(Some(lock)) => {
            let image_reference = resolved.profile.image.to_string();
            let lock_state = crate::lock::state(lock, &resolved.profile.name, &image_reference);
            checks::lock::drift(&lock_state, image)
        }
        Ok(None) => None,
        Err(error) => Some(
            Finding::warn("profile.lock", crate::error::error_chain(error)).with_hint(error.hint()),
        ),
    }
}

/// Issue 41: whether an image's CUDA libraries are read at all: only where a GPU of the
/// daemon's machine is known with its compute capability (this machine's NVML, or another
/// machine's GPUs as its daemon told them); there is nothing to judge them on otherwise.
/// `up` asks the same of an image it has just pulled.
pub(crate) fn scans_libraries(gpu: &GpuFacts) -> bool {
    gpu.judged().is_some_and(|nvml| {
        nvml.gpus
            .iter()
            .any(|gpu| gpu.compute_capability.value().is_some())
    })
}

/// Issue 41: `gpu.library-arch` for a profile's image on the GPUs it asks for
/// (`image_libraries::gpus_asked`): none for a profile that asks for no GPUs (no GPU will
/// run its libraries). `up` judges an image it has just pulled with this too, as the
/// preflight judges one that was here.
pub(crate) fn library_findings(
    facts: &Facts,
    resolved: &ResolvedProfile,
    libraries: Option<&Result<crate::ops::image_libraries::Found, String>>,
) -> Vec<Finding> {
    // The daemon's machine's GPUs: a remote daemon's image runs on its GPUs.
    let (Some(found), Some(nvml)) = (libraries, facts.gpu.judged()) else {
        return Vec::new();
    };
    let gpus = crate::ops::image_libraries::gpus_asked(&resolved.profile.gpus, nvml);
    if gpus.is_empty() {
        return Vec::new();
    }
    let driver_cuda =
        nvml.cuda_driver_version
            .value()
            .map(|cuda| crate::profile::model::CudaVersion {
                major: cuda.major,
                minor: cuda.minor,
            });
    crate::ops::image_libraries::findings(
        &resolved.profile.image.to_string(),
        found.clone(),
        &gpus,
        driver_cuda,
    )
}

/// [`bundled_candidates`] as the verdicts take them (borrowing `bundled`).
pub fn torch_candidates(
    bundled: &[(
        String,
        crate::profile::model::TorchVersion,
        crate::profile::model::CudaVersion,
    )],
) -> Vec<TorchCandidate<'_>> {
    bundled
        .iter()
        .map(|(name, torch, cuda)| TorchCandidate::new(name, torch, *cuda))
        .collect()
}

/// The bundled PyTorch profiles, newest first: what a failing GPU's hint can point to.
pub use crate::profile::bundled::pytorch_candidates as bundled_candidates;

/// doctor's facts for `profiles`, as `envctl doctor` gathers them: [`gather_with`] on a
/// connection bounded by the ping's deadline, then the GPUs' occupancy over the same
/// connection (a clone shares bollard's client).
pub async fn gather(profiles: &[ResolvedProfile], context: &Context) -> Facts {
    let engine = context.connect(crate::engine::PING_TIMEOUT);
    let again = engine.as_ref().ok().cloned();
    let mut facts = gather_with(engine, profiles, None, context).await;
    if let Some(engine) = again {
        gather_occupancy(&engine, &mut facts, context).await;
        if matches!(facts.engine.state, EngineState::Reachable(_)) {
            facts.daemon_policy = Some(
                crate::ops::policy::at_daemon(&engine)
                    .await
                    .map_err(|error| daemon_policy_problem(&error)),
            );
        }
    }
    facts
}

/// Why the daemon's policy cannot be used, in one line with each problem's place.
fn daemon_policy_problem(error: &crate::error::Error) -> String {
    let places: Vec<String> = match error {
        crate::error::Error::Policy(error) => error.places(),
        _ => Vec::new(),
    };
    let message = crate::error::error_chain(error);
    if places.is_empty() {
        message
    } else {
        format!("{message}: {}", places.join("; "))
    }
}

/// Which daemon doctor talks to and what chose it, when a docker CLI context or `-H` did
/// (`DOCKER_HOST`'s endpoint is named by the engine's own line): doctor's first finding.
pub fn endpoint_finding(context: &Context) -> Option<Finding> {
    let choice = context.daemon().ok()?;
    matches!(
        choice.chosen_by,
        crate::host::docker_config::ChosenBy::Context { .. }
            | crate::host::docker_config::ChosenBy::HostFlag
    )
    .then(|| {
        Finding::info(
            "docker.endpoint",
            format!(
                "daemon {} chosen by {}",
                choice.endpoint,
                choice.described()
            ),
        )
        .with_fact("endpoint", &choice.endpoint)
        .in_area(crate::checks::Area::Docker)
    })
}

/// Who the chosen daemon's transport proves this user to be, when it is not the local
/// uid of a unix socket: what `up` records as the owner (`container_plan::ownership`). A transport
/// that proves no one is a warning, and a failed check where the policy refuses such
/// clients (`users.unproven`).
pub fn identity_finding(context: &Context, policies: &[crate::policy::Policy]) -> Option<Finding> {
    use crate::facts::user::Identity;
    let identity = context.me().identity.as_ref()?;
    let label = identity.label();
    let finding = match identity {
        Identity::LocalUid { .. } => return None,
        Identity::Ssh { .. } => Finding::info(
            "docker.identity",
            format!("you are `{label}` to this daemon: the login user its server's sshd admitted"),
        ),
        Identity::Tls { .. } => Finding::info(
            "docker.identity",
            format!(
                "you are `{label}` to this daemon: the subject of your TLS client certificate (proven where the daemon verifies client certificates, `--tlsverify`)"
            ),
        ),
        Identity::Unproven { why, .. } => {
            let message = format!(
                "{why}: `up` records you as `{label}`, a claim anyone reaching this daemon can make"
            );
            let hint = "reach the daemon over ssh (`-H ssh://USER@HOST`) or TLS with a client certificate; docs/identity.md says what each proves";
            let refusing = policies.iter().find_map(|policy| {
                crate::policy::check_client_refuses(Some(policy), identity)
                    .map(|line| (policy.path.as_str(), line))
            });
            match refusing {
                Some((path, line)) => Finding::fail(
                    "docker.identity",
                    format!(
                        "{message}; the host policy refuses such clients ({path}:{line}: {})",
                        crate::policy::UNPROVEN
                    ),
                ),
                None => Finding::warn("docker.identity", message),
            }
            .with_hint(hint)
        }
    };
    Some(
        finding
            .with_fact("identity", &label)
            .in_area(crate::checks::Area::Docker),
    )
}

/// The day `now` falls on as `YYYY-MM-DD` (UTC), for lifecycle dates.
pub fn today(now: std::time::SystemTime) -> String {
    crate::time::date_utc(crate::time::timestamp(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_a_date() {
        let date = today(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_083_200));
        assert_eq!(date, "2026-12-01");
        assert_eq!(today(std::time::UNIX_EPOCH), "1970-01-01");
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
