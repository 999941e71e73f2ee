//! The top-level error: each subsystem's error, its exit status and its hint.

use thiserror::Error;

use crate::engine::EngineError;
use crate::engine::error::StartRefusal;
use crate::exit::ExitStatus;
use crate::profile::{Diagnostic, ProfileError};
use crate::units::plural;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Matrix(#[from] crate::compat::MatrixError),
    #[error(transparent)]
    Spec(#[from] crate::container_plan::SpecError),
    /// A body that could not be compared with a container: a bug, with its cause.
    #[error(transparent)]
    Uncomparable(#[from] crate::container_plan::drift::Uncomparable),
    /// The team file (`[hosts]` of `--hosts`) cannot be read or is not valid.
    #[error(transparent)]
    Team(#[from] crate::profile::team::TeamError),
    /// The host policy cannot be read or is not valid.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyError),
    /// Inside a Slurm job, the profile asks for more than the allocation (issue 29).
    #[error(transparent)]
    Slurm(#[from] crate::container_plan::slurm::SlurmError),
    /// A claim of ownership or occupancy the daemon's facts do not bear out.
    #[error(transparent)]
    Ownership(#[from] crate::container_plan::ownership::OwnershipError),
    /// The host policy forbids the container `up` would make: nothing was created.
    #[error("the host policy refuses this container")]
    PolicyRefused {
        /// The policy file, as the user knows it.
        path: String,
        /// This machine's file or the daemon's pushed policy, for the hint.
        origin: crate::policy::Origin,
        violations: Vec<crate::policy::Violation>,
    },
    #[error("profile `{profile}` would not work on this host ({} failed)", plural(findings.len(), "check"))]
    Preflight {
        profile: String,
        findings: Vec<crate::checks::Finding>,
    },
    #[error(
        "the daemon at {endpoint} runs on {host}, and envctl reaches it without ssh: it cannot forward that host's ports"
    )]
    NoPortRoute {
        endpoint: String,
        host: String,
        /// What the user asked to forward, for the hint's command.
        target: String,
    },
    #[error("profile `{profile}` fits on none of the hosts")]
    NoRoomOnHosts {
        profile: String,
        /// Each host as the user named it, and why it cannot take the profile.
        hosts: Vec<(String, String)>,
    },
    #[error("the forward to {host} ended: {message}")]
    ForwardFailed { host: String, message: String },
    #[error("volume `{name}` at {endpoint} exists and was not created by envctl")]
    VolumeTaken {
        name: String,
        endpoint: String,
        /// The engine's command-line tool (`docker`, `podman`), for the hint.
        cli: &'static str,
    },
    #[error("container `{name}` exists and was not created by envctl")]
    NameTaken {
        name: String,
        /// The engine's command-line tool (`docker`, `podman`), for the hint.
        cli: &'static str,
    },
    #[error("container `{name}` belongs to {owner}")]
    BelongsTo {
        name: String,
        owner: String,
        /// What the user asked to do to it: `up` (never done to another's), or an action
        /// `--other-user` allows.
        action: OtherUsersAction,
    },
    #[error("container `{name}` was not created by envctl, so envctl will not stop or remove it")]
    NotEnvctls {
        name: String,
        /// As in [`Error::NameTaken`].
        cli: &'static str,
    },
    #[error("container `{name}` was created from an earlier version of profile `{profile}`")]
    ProfileChanged {
        name: String,
        profile: String,
        changes: Vec<String>,
        /// The profile file the container records, when the name resolves here to another
        /// (`up` from another folder): the changes are this folder's profile's.
        made_from: Option<String>,
    },
    /// The engine cannot be asked for the GPUs the profile wants (Podman before 5.4).
    #[error("profile `{profile}` asks for GPUs, but {reason}")]
    GpusUnavailable {
        profile: String,
        reason: String,
        fix: String,
    },
    /// The engine created the container without settings the profile asked for: envctl
    /// removed it instead of starting it.
    #[error(
        "{engine} created `{name}` without what profile `{profile}` asked for, so envctl removed it"
    )]
    NotGiven {
        name: String,
        profile: String,
        engine: String,
        missing: Vec<String>,
        fix: String,
    },
    /// GPU placement found fewer free GPUs than the profile's count.
    #[error("no room on this host's GPUs: {summary}")]
    NoFreeGpus {
        summary: String,
        /// `GPU 0: alice-pytorch (running)`, one per held GPU.
        held: Vec<String>,
        /// GPUs NVML could not read, which placement never picks.
        skipped: Vec<String>,
    },
    /// A daemon of another machine whose GPUs could be learnt neither by a probe through
    /// it nor from its record: placing there would leave the choice to the daemon, which
    /// gives the first N GPUs whoever holds them.
    #[error(
        "envctl cannot tell which GPUs of {host} are free ({why}), so it places nothing there: the daemon alone would give the first {count} GPUs, which may be taken"
    )]
    RemoteGpusUnknown {
        host: String,
        count: u32,
        why: String,
        fix: Option<String>,
    },
    /// Another tool created a container on the GPUs placement had just chosen.
    #[error(
        "the GPUs envctl chose were taken by another container while it created its own, so envctl removed it"
    )]
    GpusTakenMeanwhile { shared: Vec<String> },
    /// A stopped container's pinned GPUs are held by another container now.
    #[error(
        "`{name}` is pinned to GPUs that another container holds now, so envctl did not start it"
    )]
    PinnedGpusTaken {
        name: String,
        profile: String,
        shared: Vec<String>,
    },
    /// The host-wide placement lock could not be taken.
    #[error("{source}")]
    GpuLock {
        #[source]
        source: crate::host::gpu_lock::GpuLockError,
        hint: String,
    },
    /// A fault of envctl itself (a task that panicked, facts that contradict each other).
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{message}")]
    Lock { message: String, hint: String },
    #[error(transparent)]
    LockFile(#[from] crate::lock::file::LockReadError),
    #[error("image `{image}` is not present and `--pull never` forbids pulling it")]
    ImageMissing { image: String },
    /// The daemon refused the create request's settings (a 400): its words are the cause,
    /// and the hint says where the profile can be checked before the daemon sees it.
    #[error("the daemon refused to create `{name}` with the profile `{profile}`'s settings")]
    CreateRefused {
        name: String,
        profile: String,
        // Boxed: the daemon's answer is large, and every `Result<_, Error>` pays for it.
        #[source]
        source: Box<EngineError>,
    },
    /// A host port the profile publishes is published already by a running container.
    #[error("host port {wanted} is already published by container `{container}` ({published})")]
    PortTaken {
        wanted: String,
        container: String,
        published: String,
        container_port: String,
        host_port: u16,
        /// The host port the hint moves it to: published by no running container and,
        /// where this machine can tell, free here.
        suggested: u16,
        profile: String,
    },
    /// A container of the profile runs already, made from an export by another tool.
    #[error("profile `{profile}` already runs as `{container}`, {started_by}")]
    RunsElsewhere {
        profile: String,
        container: String,
        /// Who started it and how to stop it.
        started_by: String,
    },
    #[error("container `{name}` was created but could not start")]
    StartFailed {
        name: String,
        /// Boxed: a refused start carries the daemon's whole answer.
        #[source]
        source: Box<EngineError>,
    },
    #[error("cannot read `{path}`")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write `{path}`")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` exists")]
    Exists { path: String, hint: String },
    #[error("`{path}` is {kind}, not a regular file: envctl writes only regular files")]
    NotRegularFile { path: String, kind: &'static str },
    #[error(transparent)]
    Record(#[from] crate::monitor::record::RecordError),
    #[error(transparent)]
    Chart(#[from] crate::monitor::chart::ChartError),
    #[error("cannot serve metrics on `{address}`")]
    Serve {
        address: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("container `{name}` is {status}, not running")]
    NotRunning {
        name: String,
        status: String,
        hint: String,
    },
    #[error("no container or profile named `{target}`")]
    TargetNotFound { target: String, hint: String },
    /// TARGET is a profile that exists, without a container.
    #[error("profile `{profile}` has no container")]
    NoContainer { target: String, profile: String },
    #[error("`{target}` matches several containers: {}", containers.join(", "))]
    TargetAmbiguous {
        target: String,
        containers: Vec<String>,
    },
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot write to standard output")]
    Output(#[source] std::io::Error),
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    /// A profile envctl did not make asks for root-equivalent settings without `--trust`
    /// (`ops::trust`): each setting is a line of its own under the message (said line by
    /// line, since outside text in a message never starts a line).
    #[error("{message}")]
    TrustRequired {
        message: String,
        settings: Vec<String>,
        hint: String,
    },
    /// `outdated`: the registry of a profile's image could not be asked.
    #[error("{profile}: cannot ask the registry about `{image}`")]
    Registry {
        profile: String,
        image: String,
        #[source]
        source: crate::registry::RegistryError,
    },
}

impl Error {
    pub fn exit_status(&self) -> ExitStatus {
        match self {
            // A name that names nothing is 1, as a container's is (`exec`/`down NAME`) and as
            // docker's are (`docker exec nosuch`, `docker compose up nosuch`): issue 40.
            Error::Profile(
                ProfileError::AlreadyExists { .. }
                | ProfileError::Write { .. }
                | ProfileError::NotFound { .. }
                | ProfileError::FileNotFound { .. },
            ) => ExitStatus::Failure,
            Error::Profile(_) | Error::Usage { .. } | Error::TrustRequired { .. } => {
                ExitStatus::Error
            }
            Error::Output(_) => ExitStatus::Failure,
            Error::Engine(_)
            | Error::TargetNotFound { .. }
            | Error::NoContainer { .. }
            | Error::TargetAmbiguous { .. }
            | Error::NotRunning { .. } => ExitStatus::Failure,
            // README: exit 2 is also an internal error.
            Error::Runtime(_)
            | Error::Internal(_)
            | Error::Uncomparable(_)
            | Error::Matrix(_)
            | Error::Read { .. }
            | Error::Chart(_)
            | Error::LockFile(_)
            | Error::Policy(_)
            | Error::Team(_) => ExitStatus::Error,
            // Writing what was asked for failed: the request cannot be met.
            Error::Write { .. }
            | Error::Registry { .. }
            | Error::Exists { .. }
            | Error::NotRegularFile { .. }
            | Error::Serve { .. } => ExitStatus::Failure,
            Error::Record(error) if error.is_write() => ExitStatus::Failure,
            // A recording that is missing or not envctl's is invalid input.
            Error::Record(_) => ExitStatus::Error,
            // What the profile and flags ask for cannot be: invalid input, like a profile error.
            Error::Spec(
                crate::container_plan::SpecError::InvalidOverride { .. }
                | crate::container_plan::SpecError::TooManyPortBindings { .. },
            ) => ExitStatus::Error,
            Error::Spec(_)
            | Error::Lock { .. }
            | Error::Preflight { .. }
            | Error::NameTaken { .. }
            | Error::VolumeTaken { .. }
            | Error::NoPortRoute { .. }
            | Error::NoRoomOnHosts { .. }
            | Error::ForwardFailed { .. }
            | Error::NotEnvctls { .. }
            | Error::BelongsTo { .. }
            | Error::ProfileChanged { .. }
            | Error::GpusUnavailable { .. }
            | Error::NoFreeGpus { .. }
            | Error::RemoteGpusUnknown { .. }
            | Error::GpusTakenMeanwhile { .. }
            | Error::PinnedGpusTaken { .. }
            | Error::GpuLock { .. }
            | Error::NotGiven { .. }
            | Error::ImageMissing { .. }
            | Error::StartFailed { .. }
            | Error::CreateRefused { .. }
            | Error::PortTaken { .. }
            | Error::RunsElsewhere { .. }
            | Error::PolicyRefused { .. }
            | Error::Slurm(_)
            | Error::Ownership(_) => ExitStatus::Failure,
        }
    }

    /// A command to run or a change to make.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Profile(error) => error.hint(),
            Error::Output(_) | Error::Runtime(_) => None,
            Error::Matrix(_) => {
                Some("fix the file, or leave it out to use the bundled matrix only".into())
            }
            Error::Read { .. } => Some("check the path and its permissions".into()),
            Error::Write { .. } => Some(
                "check that the folder exists and is writable and that the disk has room".into(),
            ),
            Error::Exists { hint, .. } => Some(hint.clone()),
            Error::NotRegularFile { .. } => Some(
                "choose another path, or `-o -` to write to stdout (then redirect it where you like)"
                    .into(),
            ),
            Error::Record(error) => error.hint(),
            Error::Chart(error) => error.hint(),
            Error::Serve { .. } => Some(
                "choose a free address with `--serve HOST:PORT`, e.g. `--serve 127.0.0.1:9401`"
                    .into(),
            ),
            Error::Spec(error) => error.hint(),
            Error::Policy(error) => Some(error.hint()),
            Error::Team(error) => Some(error.hint()),
            Error::Slurm(error) => Some(error.hint()),
            Error::Ownership(error) => Some(error.hint()),
            Error::PolicyRefused {
                origin: crate::policy::Origin::Daemon { endpoint, .. },
                ..
            } => Some(format!(
                "the admin of the daemon at {endpoint} pushed these limits (`envctl policy show` prints them): ask them, or change the profile to stay within them (`--force` does not pass a policy)"
            )),
            Error::PolicyRefused { path, .. } => Some(format!(
                "the host's admin sets these limits in `{path}`: ask them, or change the profile to stay within them (`--force` does not pass a policy)"
            )),
            // `--force` only where a start could work: past a check, not into a failing start.
            Error::Preflight { profile, findings } if findings.iter().any(crate::checks::Finding::fails_any_start) => Some(format!(
                "fix the failures above (`envctl doctor {profile}` shows every check)"
            )),
            Error::Preflight { profile, .. } => Some(format!(
                "fix the failures above (`envctl doctor {profile}` shows every check), or start anyway with `--force`"
            )),
            Error::NameTaken { name, cli } => Some(format!(
                "envctl never touches containers it did not create: choose another name with `--name`, or remove it yourself (`{cli} rm -f {name}`)"
            )),
            Error::BelongsTo { action, .. } => Some(match action {
                OtherUsersAction::Up { profile } => format!(
                    "envctl never changes another user's container; make your own with another name: `envctl up {profile} --name NAME`"
                ),
                OtherUsersAction::Named => "envctl acts on your own containers (`envctl ps`); to act on theirs anyway, name it and add `--other-user`".into(),
            }),
            Error::NotEnvctls { name, cli } => Some(format!(
                "stop or remove it yourself if you mean to (`{cli} stop {name}`, `{cli} rm {name}`); `envctl ps` lists envctl's containers"
            )),
            Error::ProfileChanged {
                profile,
                name,
                made_from: Some(file),
                ..
            } => Some(format!(
                "`{}{}` judges it against the file it was made from; `envctl up {profile}{} --recreate` here replaces it with this folder's `{profile}`",
                crate::container_plan::drift::up_from_recorded_file(file, profile),
                crate::container_plan::ownership::name_flag(name, profile),
                crate::container_plan::ownership::name_flag(name, profile)
            )),
            Error::ProfileChanged { profile, name, .. } => Some(format!(
                "recreate it with `envctl up {profile}{} --recreate` (host data in mounts is kept)",
                crate::container_plan::ownership::name_flag(name, profile)
            )),
            Error::ImageMissing { .. } => {
                Some("pull it with `--pull missing` (the default)".into())
            }
            Error::GpusUnavailable { fix, .. } | Error::NotGiven { fix, .. } => Some(fix.clone()),
            Error::Lock { hint, .. } | Error::GpuLock { hint, .. } => Some(hint.clone()),
            Error::RemoteGpusUnknown { fix, .. } => Some(match fix {
                Some(fix) => format!(
                    "{fix}; or let the daemon choose anyway with `placement = \"first\"` (it may share GPUs)"
                ),
                None => "let the daemon choose anyway with `placement = \"first\"` (it may share GPUs)".into(),
            }),
            Error::NoFreeGpus { .. } => Some(
                "`envctl doctor` shows who holds each GPU (`envctl ps --all-users`, with their owners: ask them); stop one of your own (`envctl ps`, then `envctl down NAME`), ask for fewer, or share on purpose with `--gpus device=0,1` or `placement = \"first\"`"
                    .into(),
            ),
            Error::PinnedGpusTaken { name, profile, .. } => Some(format!(
                "remove it with `envctl down {name} --rm` (its named volumes stay) and run `envctl up {profile}` again: it places on the GPUs free now"
            )),
            Error::GpusTakenMeanwhile { .. } => Some(
                "run `envctl up` again: it places on the GPUs free now".into(),
            ),
            Error::Internal(_) | Error::Uncomparable(_) => Some(
                "this is a bug in envctl; please report it with the command that caused it".into(),
            ),
            Error::LockFile(error) => Some(error.hint()),
            Error::StartFailed { source, .. } => start_hint(source),
            Error::PortTaken {
                container,
                container_port,
                suggested: other,
                profile,
                ..
            } => {
                let port = container_port.split('/').next().unwrap_or(container_port);
                Some(format!(
                    "publish it on another host port: `envctl up {profile} -p {other}:{port}` (or change `ports`), or stop `{container}` first"
                ))
            }
            Error::RunsElsewhere { profile, .. } => Some(format!(
                "work in it with `envctl shell {profile}` (or `envctl exec {profile} nvidia-check`); `envctl up` makes its own only once that one is gone"
            )),
            Error::CreateRefused { profile, .. } => Some(format!(
                "`envctl doctor {profile}` checks the profile against this host; `envctl up {profile} --dry-run --json` shows the request the daemon refused"
            )),
            Error::Usage { hint, .. } => hint.clone(),
            Error::TrustRequired { hint, .. } => Some(hint.clone()),
            Error::NoPortRoute { host, target, .. } => Some(format!(
                "reach the daemon over ssh and forward through it: `envctl -H ssh://{host} forward {target}` (a context with an ssh:// endpoint does the same)"
            )),
            Error::NoRoomOnHosts { hosts, .. } => Some(format!(
                "`envctl ps --hosts {}` shows what holds each host's GPUs; free some, ask for fewer, or start it later",
                hosts
                    .iter()
                    .map(|(host, _)| host.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Error::ForwardFailed { host, .. } => Some(format!(
                "check that `ssh {host}` logs in without a prompt and that the server allows TCP forwarding (`AllowTcpForwarding`)"
            )),
            Error::VolumeTaken { name, cli, .. } => Some(format!(
                "envctl never replaces a volume it did not make: see whose it is with `{cli} volume inspect {name}`, and remove it yourself if it is no one's"
            )),
            Error::Registry { source, .. } => source.hint(),
            Error::Engine(error) => error.hint(),
            Error::NoContainer { target, .. } => {
                Some(format!("start one with `envctl up {target}`"))
            }
            Error::TargetNotFound { hint, .. } | Error::NotRunning { hint, .. } => {
                Some(hint.clone())
            }
            Error::TargetAmbiguous { .. } => {
                Some("name the container instead (`envctl ps` lists them)".into())
            }
        }
    }

    /// Per-line problems to show before the error itself.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Profile(error) => error.diagnostics(),
            Error::Matrix(error) => &error.problems,
            Error::Policy(error) => error.diagnostics(),
            Error::Team(error) => error.diagnostics(),
            _ => &[],
        }
    }

    /// Whether this is stdout closed by the reader (`envctl … | head`): not worth a word.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Output(error) if error.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// The fix for a container that would not start, from the cause `engine` read in the
/// daemon's answer.
fn start_hint(error: &EngineError) -> Option<String> {
    match error {
        EngineError::StartRefused {
            refusal, endpoint, ..
        } => Some(match refusal {
            StartRefusal::NoGpuDriver => format!(
                "the {} has no NVIDIA runtime: {}",
                endpoint.daemon(),
                endpoint.kind.gpu_fix()
            ),
            StartRefusal::UnresolvableCdiDevice { devices } => format!(
                "no CDI spec on the engine's host has `{devices}`: list the names it has with `nvidia-ctk cdi list`, then name one of them in `gpus` (GPU UUIDs need `nvidia-ctk cdi generate --device-name-strategy=uuid`)"
            ),
            StartRefusal::PortInUse => "a published host port is taken: change it in the profile or with `-p`, or stop what uses it (`ss -ltnp`)".into(),
            // The limit runc named, in the profile's words: `nofile`, `nproc`, `memlock`…
            // (Podman raises nofile and nproc by default; a sandbox without
            // CAP_SYS_RESOURCE refuses any raise).
            StartRefusal::LimitRefused {
                resource: Some(resource),
            } => format!(
                "the daemon may not raise the `{resource}` ulimit this far: start with a lower one (`envctl up PROFILE --ulimit {resource}=65536`), set `{resource}` lower under [ulimits], or run where the daemon has CAP_SYS_RESOURCE"
            ),
            StartRefusal::CapabilitiesRefused => format!(
                "the {} may not give the container these capabilities (it lacks them itself, as in a sandbox or a container): list only what the job needs in `cap_add` (`IPC_LOCK`, `SYS_NICE`), never `ALL`",
                endpoint.daemon()
            ),
            StartRefusal::LimitRefused { resource: None } => {
                "the daemon may not raise a ulimit this far: lower the [ulimits] entries (or run where the daemon has CAP_SYS_RESOURCE)"
                    .into()
            }
        }),
        _ => error.hint(),
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Output(error)
    }
}

/// Kept under its old path: the core's readers (`untrusted`) give their causes this way too.
pub use crate::text::error_chain;

impl Error {
    /// A [`crate::files::WriteError`] for the file at `path`, in the command's words;
    /// `hint` says how to replace an existing file.
    pub fn from_write(
        path: &std::path::Path,
        error: crate::files::WriteError,
        hint: &str,
    ) -> Error {
        let path = path.display().to_string();
        match error {
            crate::files::WriteError::Exists => Error::Exists {
                path,
                hint: hint.into(),
            },
            crate::files::WriteError::NotRegular { kind } => Error::NotRegularFile { path, kind },
            crate::files::WriteError::Io(source) => Error::Write { path, source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused_start(refusal: StartRefusal) -> Error {
        Error::StartFailed {
            name: "box".into(),
            source: Box::new(EngineError::StartRefused {
                endpoint: crate::engine::Endpoint {
                    address: "unix:///run/docker.sock".into(),
                    kind: crate::facts::engine::EngineKind::DockerEngine,
                },
                status: 500,
                message: "the daemon's words".into(),
                refusal,
            }),
        }
    }

    #[test]
    fn a_refused_start_gets_the_hint_of_its_cause() {
        let hint = |refusal| refused_start(refusal).hint().unwrap_or_default();
        assert!(hint(StartRefusal::NoGpuDriver).contains("NVIDIA Container Toolkit"));
        assert!(
            hint(StartRefusal::NoGpuDriver).starts_with("the Docker daemon has no NVIDIA runtime")
        );
        assert!(hint(StartRefusal::PortInUse).contains("`ss -ltnp`"));
        // The limit that failed is named (Podman's nofile/nproc, issue 13), never a
        // fixed "memlock, stack".
        for resource in ["nofile", "nproc", "memlock"] {
            let said = hint(StartRefusal::LimitRefused {
                resource: Some(resource.into()),
            });
            assert!(
                said.contains(&format!("set `{resource}` lower under [ulimits]")),
                "{said}"
            );
            assert!(!said.contains("memlock, stack"), "{said}");
        }
        assert!(hint(StartRefusal::LimitRefused { resource: None }).contains("[ulimits]"));
        let caps = hint(StartRefusal::CapabilitiesRefused);
        assert!(
            caps.contains("`cap_add`") && !caps.contains("ulimit"),
            "{caps}"
        );
        let unrecognised = Error::StartFailed {
            name: "box".into(),
            source: Box::new(EngineError::Daemon {
                endpoint: crate::engine::Endpoint::unidentified("unix:///run/docker.sock"),
                status: 500,
                message: "something else".into(),
            }),
        };
        assert_eq!(unrecognised.hint(), None);
    }
}

/// What was asked of another user's container ([`Error::BelongsTo`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OtherUsersAction {
    /// `up` met it under the name it would use: never changed, even with `--recreate`.
    Up { profile: String },
    /// A command named it (exec, shell, logs, down, stats): allowed with `--other-user`.
    Named,
}
