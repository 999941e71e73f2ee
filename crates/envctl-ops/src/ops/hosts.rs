//! Several daemons in one view (issue 27, item 5): `ps`, `doctor` and `stats --hosts
//! a,b,c`. Each host is a name of the team file's `[hosts]` (`ops::team`), else a docker
//! CLI context name, else an endpoint URL (`tcp://…`, `ssh://…`, `unix://…`); `@team` is
//! every host of the team file. What a name stands for is chosen as `--context NAME` or
//! `-H URL` would choose it (so a URL takes TLS from
//! `DOCKER_TLS_VERIFY`/`DOCKER_CERT_PATH` as `-H` does), and every host is asked at once,
//! each with the deadlines one daemon gets. A host that cannot be chosen or reached is a
//! result that says why, never a failed command.

use std::future::Future;

use crate::context::Context;
use crate::engine::Engine;
use crate::error::Error;
use crate::host::docker_config::DaemonChoice;

/// One host as the user named it, and the daemon that name chooses.
#[derive(Debug, Clone)]
pub struct Host {
    /// As given: `gpu2`, `ssh://me@gpu3`.
    pub name: String,
    pub choice: Result<DaemonChoice, crate::host::docker_config::DaemonChoiceError>,
}

impl Host {
    /// The endpoint, or the name when none could be chosen.
    pub fn endpoint(&self) -> &str {
        self.choice
            .as_ref()
            .map_or(self.name.as_str(), |choice| choice.endpoint.as_str())
    }
}

/// What one host answered: the value, or why there is none.
pub struct Answer<T> {
    pub host: Host,
    pub result: Result<T, Error>,
}

/// The hosts `names` name (the `--hosts` list, already split at commas): each through the
/// team file's `[hosts]` first, then as a context name or a URL; `@team` is every host of
/// the team file. An empty name, a name given twice, `@team` without a team file, or
/// `--hosts` with `-H`/`--context` is a usage error; a team file that cannot be read or is
/// malformed is an error naming its file and line.
pub fn named(context: &Context, names: &[String]) -> Result<Vec<Host>, Error> {
    let team = crate::ops::team::find(&context.search_path)?;
    named_with(context, names, team.as_ref())
}

/// [`named`] with the team file already read (`None`: there is none).
pub fn named_with(
    context: &Context,
    names: &[String],
    team: Option<&crate::ops::team::TeamFile>,
) -> Result<Vec<Host>, Error> {
    if context.host_flag.is_some() || context.context_flag.is_some() {
        return Err(Error::Usage {
            message: "--hosts names the daemons itself: give it, or -H/--context, not both".into(),
            hint: Some("put the daemon of -H/--context into the --hosts list".into()),
        });
    }
    let expanded = expand_team(context, names, team)?;
    let mut hosts: Vec<Host> = Vec::new();
    for name in &expanded {
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::Usage {
                message: "--hosts has an empty name".into(),
                hint: Some(
                    "--hosts takes context names or URLs separated by commas: `--hosts gpu1,ssh://me@gpu2`"
                        .into(),
                ),
            });
        }
        // Names are kept masked (a password typed in a URL is never shown): compared so.
        if hosts
            .iter()
            .any(|host| host.name == crate::secret::masked_url(name))
        {
            return Err(Error::Usage {
                message: format!("--hosts names `{name}` twice"),
                hint: Some("name each host once".into()),
            });
        }
        let choice = daemon_of_name(context, name, team);
        // Neither a team host, a context nor a URL: a typo (`@tema`, `gpu9`), said now with
        // the nearest name rather than listed as a host that cannot be reached (issue 40).
        if matches!(
            choice,
            Err(crate::host::docker_config::DaemonChoiceError::UnknownContext { .. })
        ) && team.and_then(|team| team.get(name)).is_none()
        {
            return Err(no_such_host(context, name, team));
        }
        hosts.push(Host {
            // A password typed in a URL is never shown.
            name: crate::secret::masked_url(name).into_owned(),
            choice,
        });
    }
    Ok(hosts)
}

/// The `--hosts` names with `@team` replaced by every host of the team file; refuses
/// `@team` without a team file or with one that names no host.
fn expand_team(
    context: &Context,
    names: &[String],
    team: Option<&crate::ops::team::TeamFile>,
) -> Result<Vec<String>, Error> {
    let mut expanded: Vec<String> = Vec::new();
    for name in names {
        if name.trim() != crate::ops::team::EVERY_HOST {
            expanded.push(name.clone());
            continue;
        }
        let Some(team) = team else {
            return Err(Error::Usage {
                message: format!(
                    "`--hosts {}` names every host of the team file, and there is none",
                    crate::ops::team::EVERY_HOST
                ),
                hint: Some(format!(
                    "write a `[hosts]` table in one of: {}",
                    crate::ops::team::looked(&context.search_path)
                        .iter()
                        .map(|path| path.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            });
        };
        if team.hosts.is_empty() {
            return Err(Error::Usage {
                message: format!("the team file `{}` names no host", team.path),
                hint: Some(
                    "add a line per host under `[hosts]`: `gpu1 = \"ssh://me@gpu1\"`".into(),
                ),
            });
        }
        expanded.extend(team.hosts.iter().map(|host| host.name.clone()));
    }
    Ok(expanded)
}

/// The daemon the `--hosts` name `name` chooses: the team file's host of that name
/// first; then what the name itself says (a URL as `-H`, else a context name).
fn daemon_of_name(
    context: &Context,
    name: &str,
    team: Option<&crate::ops::team::TeamFile>,
) -> Result<DaemonChoice, crate::host::docker_config::DaemonChoiceError> {
    let target = team
        .and_then(|team| team.get(name))
        .map_or(name, |host| host.target.as_str());
    let (host_flag, context_flag) = if target.contains("://") {
        (Some(target.to_string()), None)
    } else {
        (None, Some(target.to_string()))
    };
    // A URL typed in `--hosts` is refused as `--hosts` (the team file's are refused
    // on their line when it is read).
    let refusal = host_flag
        .as_deref()
        .and_then(crate::facts::ssh::ssh_refusal);
    match refusal {
        Some(refusal) => Err(crate::host::docker_config::DaemonChoiceError::SshEndpoint {
            source_place: "--hosts".into(),
            endpoint: target.to_string(),
            refusal,
        }),
        None => crate::host::docker_config::choose(
            &context.environment.daemon_inputs(host_flag, context_flag),
        ),
    }
}

/// `--hosts NAME` naming nothing: the nearest of the team's hosts, `@team` and the docker
/// contexts, and where each kind of name is found.
fn no_such_host(context: &Context, name: &str, team: Option<&crate::ops::team::TeamFile>) -> Error {
    let contexts = crate::host::docker_config::context_names(
        context
            .environment
            .daemon_inputs(None, None)
            .config_dir
            .as_deref(),
    );
    let mut known: Vec<&str> = vec![crate::ops::team::EVERY_HOST, "default"];
    known.extend(
        team.into_iter()
            .flat_map(|team| team.hosts.iter().map(|host| host.name.as_str())),
    );
    known.extend(contexts.iter().map(String::as_str));
    let shown = crate::ui::text::shown(name);
    let places = match team {
        Some(team) => format!(
            "the team file {} names its hosts, `docker context ls` lists the contexts",
            team.path
        ),
        None => "`docker context ls` lists the contexts (no team file here)".to_string(),
    };
    Error::Usage {
        message: format!(
            "--hosts: `{shown}` is no host of the team file, docker context or URL (`ssh://`, `tcp://`, `unix://`)"
        ),
        hint: Some(match crate::suggest::did_you_mean(name, &known) {
            Some(near) => format!("did you mean `{near}`? {places}"),
            None => places,
        }),
    }
}

/// How many hosts of `--hosts` are asked at once. Each ssh host is an ssh process and its
/// handshake: 300 hosts of a team file asked all at once once ran 258 ssh processes
/// together, each slowed past its deadline and every host then "overloaded". Sixteen keep
/// a team's servers asked in parallel (the docker CLI asks one) with a bounded number of
/// processes and sockets; each host's deadlines start when its turn comes.
pub const HOSTS_AT_ONCE: usize = 16;

/// `ask` of every host, [`HOSTS_AT_ONCE`] at a time: a connection each (checked with a
/// ping and identified, as `Context::engine` does for one), then `ask`. The answers come
/// in the hosts' order.
pub async fn each<T, F, Fut>(hosts: &[Host], timeout: std::time::Duration, ask: F) -> Vec<Answer<T>>
where
    F: Fn(Engine) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    each_with_host(hosts, timeout, |engine, _| ask(engine)).await
}

/// [`each`], `ask` told which host it asks (for what depends on the host's transport: who
/// the user is there, [`user_on`]).
pub async fn each_with_host<'h, T, F, Fut>(
    hosts: &'h [Host],
    timeout: std::time::Duration,
    ask: F,
) -> Vec<Answer<T>>
where
    F: Fn(Engine, &'h Host) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    use futures_util::StreamExt as _;
    let ask = &ask;
    futures_util::stream::iter(hosts.iter().map(|host| async move {
        let result = async {
            let choice = host
                .choice
                .clone()
                .map_err(|error| Error::Engine(error.into()))?;
            let engine = Engine::connect_to(&choice, timeout)?;
            engine.ping().await?;
            engine
                .identify_by_ping(crate::engine::PING_TIMEOUT.min(timeout))
                .await?;
            ask(engine, host).await
        }
        .await;
        Answer {
            host: host.clone(),
            result,
        }
    }))
    .buffered(HOSTS_AT_ONCE)
    .collect()
    .await
}

/// Who `user` is to `host`'s daemon: the identity its transport proves, as
/// [`Context::me`] learns it for the one chosen daemon (`context::identified`), so that
/// "yours" over several daemons is what it is on each alone. Learnt on the blocking pool:
/// for an ssh host it runs `ssh -G`, which an ssh_config's `Match exec` may make slow, and
/// the other hosts are asked meanwhile.
pub async fn user_on(host: &Host, user: &crate::facts::user::User) -> crate::facts::user::User {
    let choice = host.choice.clone().map_err(|error| error.to_string());
    let asked = user.clone();
    match tokio::task::spawn_blocking(move || crate::context::identified(&asked, choice)).await {
        Ok(identified) => identified,
        Err(error) => crate::facts::user::User {
            identity: Some(crate::context::unproven(
                user,
                format!("the identity on {} could not be learnt: {error}", host.name),
            )),
            ..user.clone()
        },
    }
}

/// What one host says of itself for `doctor --hosts`: the daemon's facts, each profile's
/// image there, and, for a socket on this machine, this machine's NVML facts (another
/// host's driver and GPUs are not in this machine's NVML: unknown, never the laptop's).
#[derive(Debug, Clone)]
pub struct HostFacts {
    pub engine: crate::facts::engine::EngineFacts,
    /// Per profile, in the profiles' order: the image on that host, `None` when absent.
    pub images: Vec<Result<Option<crate::facts::engine::ImageFacts>, String>>,
    pub gpus: Option<crate::facts::gpu::GpuFacts>,
}

/// One profile as `doctor --hosts` compares it: its name, its image reference, and the
/// digest `envctl.lock` pins for it (when its entry is current).
#[derive(Debug, Clone)]
pub struct ComparedProfile {
    pub name: String,
    pub image: String,
    pub locked_digest: Option<String>,
}

/// A cell of the side-by-side view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "text")]
pub enum Cell {
    Known(String),
    /// Not known here, and why: compared with nothing.
    Unknown(String),
}

impl Cell {
    pub fn shown(&self) -> String {
        match self {
            Cell::Known(text) => text.clone(),
            Cell::Unknown(why) => format!("? ({why})"),
        }
    }
}

/// One fact across the hosts: its name, a cell per host, and whether the known cells
/// differ (only for the facts that make setups differ; the rest are shown, not judged).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ComparedFact {
    pub fact: String,
    pub cells: Vec<Cell>,
    pub compared: bool,
    pub differs: bool,
    /// Compared, yet unknown on a host that answered: the hosts cannot be said to agree
    /// on it.
    pub incomplete: bool,
}

/// The compared facts of the GPUs: unknown on a host that answered, they are never agreed on.
const GPU_FACTS: [&str; 3] = ["NVIDIA driver branch", "CUDA (driver)", "GPUs"];

/// The side-by-side view of `hosts` (a column each: its facts, or why there are none):
/// pure, so it is tested without a daemon. The rows come in a fixed order: the daemon's
/// facts, the GPUs', then two rows for each of `profiles`.
pub fn side_by_side(
    hosts: &[Result<HostFacts, String>],
    profiles: &[ComparedProfile],
) -> Vec<ComparedFact> {
    let mut rows = Rows {
        hosts,
        facts: Vec::new(),
    };
    daemon_rows(&mut rows);
    gpu_rows(&mut rows);
    for (index, profile) in profiles.iter().enumerate() {
        profile_rows(&mut rows, index, profile);
    }
    rows.facts
}

/// The side-by-side view as it is built: each fact read on every host, in order.
struct Rows<'a> {
    hosts: &'a [Result<HostFacts, String>],
    facts: Vec<ComparedFact>,
}

impl Rows<'_> {
    /// Adds the row of `fact`: `cell` read on each host that answered (one that did not
    /// is unknown, "unreachable"), judged when `compared`.
    fn add(&mut self, fact: &str, compared: bool, cell: &dyn Fn(&HostFacts) -> Cell) {
        let cells: Vec<Cell> = self
            .hosts
            .iter()
            .map(|host| match host {
                Ok(facts) => cell(facts),
                Err(_) => Cell::Unknown("unreachable".into()),
            })
            .collect();
        let mut known: Vec<&String> = cells
            .iter()
            .filter_map(|cell| match cell {
                Cell::Known(text) => Some(text),
                Cell::Unknown(_) => None,
            })
            .collect();
        known.sort();
        known.dedup();
        // Unknown on a host that answered while another knows it, or any GPU fact unknown
        // on a host that answered (what a team most wants compared): not agreed on.
        let unknown_on_answered = self
            .hosts
            .iter()
            .zip(&cells)
            .any(|(host, cell)| host.is_ok() && matches!(cell, Cell::Unknown(_)));
        let incomplete =
            compared && unknown_on_answered && (!known.is_empty() || GPU_FACTS.contains(&fact));
        self.facts.push(ComparedFact {
            fact: fact.to_string(),
            differs: compared && known.len() > 1,
            incomplete,
            cells,
            compared,
        });
    }
}

/// A cell of the daemon's facts: what `read` finds in them, or why they are unknown (the
/// daemon did not answer, or does not say).
fn daemon_cell(
    host: &HostFacts,
    read: &dyn Fn(&crate::facts::engine::DaemonFacts) -> Option<String>,
) -> Cell {
    match &host.engine.state {
        crate::facts::engine::EngineState::Reachable(daemon) => read(daemon).map_or_else(
            || Cell::Unknown("the daemon does not say".into()),
            Cell::Known,
        ),
        crate::facts::engine::EngineState::Unreachable { message, .. } => {
            Cell::Unknown(message.clone())
        }
    }
}

/// The rows of the daemon's facts: engine, API, system, cgroup, runtimes, CDI, CPUs and
/// memory.
fn daemon_rows(rows: &mut Rows<'_>) {
    rows.add("engine", true, &|host| {
        daemon_cell(host, &|d| Some(d.described()))
    });
    rows.add("API version", true, &|host| {
        daemon_cell(host, &|d| d.api_version.clone())
    });
    rows.add("operating system", false, &|host| {
        daemon_cell(host, &|d| d.operating_system.clone())
    });
    rows.add("kernel", false, &|host| {
        daemon_cell(host, &|d| d.kernel_version.clone())
    });
    rows.add("cgroup", true, &|host| {
        daemon_cell(host, &|d| {
            Some(format!(
                "{} v{}",
                d.cgroup_driver.as_deref().unwrap_or("?"),
                d.cgroup_version.as_deref().unwrap_or("?")
            ))
        })
    });
    rows.add("runtimes", true, &|host| {
        daemon_cell(host, &|d| Some(d.runtimes.join(", ")))
    });
    rows.add("default runtime", true, &|host| {
        daemon_cell(host, &|d| d.default_runtime.clone())
    });
    rows.add("CDI spec folders", true, &|host| {
        daemon_cell(host, &|d| {
            d.cdi_spec_dirs.as_ref().map(|dirs| dirs.join(", "))
        })
    });
    rows.add("CPUs", false, &|host| {
        daemon_cell(host, &|d| d.cpus.map(|cpus| cpus.to_string()))
    });
    rows.add("memory", false, &|host| {
        daemon_cell(host, &|d| {
            d.memory_bytes
                .map(|bytes| format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30)))
        })
    });
}

/// A cell of the host's NVML facts: what `read` finds in them, "no NVML" where it has
/// none, or why they are unknown (not asked, or another machine's that could not be
/// learnt).
fn nvml_cell(
    host: &HostFacts,
    read: &dyn Fn(&crate::facts::gpu::NvmlFacts) -> Option<String>,
) -> Cell {
    match &host.gpus {
        None => Cell::Unknown("not asked".into()),
        Some(gpus) => match (gpus.judged(), &gpus.nvml) {
            (Some(nvml), _) => {
                read(nvml).map_or_else(|| Cell::Unknown("not said".into()), Cell::Known)
            }
            // Another machine whose GPUs could not be learnt: unknown, and why.
            (None, crate::facts::gpu::LoadOutcome::OnAnotherHost { message, .. }) => {
                Cell::Unknown(message.chars().take(160).collect())
            }
            (None, _) => Cell::Known("no NVML".into()),
        },
    }
}

/// The rows of the GPUs' facts: the driver (its branch compared), CUDA, the models.
fn gpu_rows(rows: &mut Rows<'_>) {
    rows.add("NVIDIA driver branch", true, &|host| {
        nvml_cell(host, &|n| {
            n.driver_version
                .value()
                .map(|version| version.split('.').next().unwrap_or(version).to_string())
        })
    });
    rows.add("NVIDIA driver", false, &|host| {
        nvml_cell(host, &|n| n.driver_version.value().cloned())
    });
    rows.add("CUDA (driver)", true, &|host| {
        nvml_cell(host, &|n| {
            n.cuda_driver_version
                .value()
                .map(|cuda| format!("{}.{}", cuda.major, cuda.minor))
        })
    });
    rows.add("GPUs", true, &|host| {
        nvml_cell(host, &|n| Some(gpu_models(n)))
    });
}

/// The GPU models, counted and sorted (`2 × A100, 1 × T4`); "none" without a GPU.
fn gpu_models(nvml: &crate::facts::gpu::NvmlFacts) -> String {
    let mut models: Vec<String> = nvml
        .gpus
        .iter()
        .map(|gpu| gpu.name.value().cloned().unwrap_or_else(|| "?".into()))
        .collect();
    if models.is_empty() {
        return "none".into();
    }
    models.sort();
    let mut counted: Vec<(String, usize)> = Vec::new();
    for model in models {
        match counted.last_mut() {
            Some((last, count)) if *last == model => *count += 1,
            _ => counted.push((model, 1)),
        }
    }
    counted
        .iter()
        .map(|(model, count)| format!("{count} × {model}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The two rows of the `index`th compared profile: its image's id on each host, and how
/// that image stands to the digest `envctl.lock` pins.
fn profile_rows(rows: &mut Rows<'_>, index: usize, profile: &ComparedProfile) {
    let image = |host: &HostFacts| match host.images.get(index) {
        Some(Ok(Some(image))) => Ok(image.clone()),
        Some(Ok(None)) => Err(Cell::Known("absent".into())),
        Some(Err(error)) => Err(Cell::Unknown(error.clone())),
        None => Err(Cell::Unknown("not asked".into())),
    };
    rows.add(
        &format!("{}: image id", profile.name),
        true,
        &|host| match image(host) {
            Ok(image) => Cell::Known(
                image
                    .id
                    .as_deref()
                    .map(|id| id.trim_start_matches("sha256:").chars().take(12).collect())
                    .unwrap_or_else(|| "?".into()),
            ),
            Err(cell) => cell,
        },
    );
    rows.add(
        &format!("{}: lock", profile.name),
        true,
        &|host| match image(host) {
            Ok(image) => Cell::Known(lock_cell(&image.repo_digests, profile)),
            // An absent image is the image row's difference, not a second one here.
            Err(Cell::Known(_)) => Cell::Unknown("the image is absent".into()),
            Err(cell) => cell,
        },
    );
}

/// How an image whose registry digests are `repo_digests` stands to the digest
/// `envctl.lock` pins for `profile`'s image.
fn lock_cell(repo_digests: &[String], profile: &ComparedProfile) -> String {
    let digests: Vec<&str> = repo_digests
        .iter()
        .filter(|digest| crate::lock::repo_digest_matches(digest, &profile.image))
        .filter_map(|digest| digest.split_once('@').map(|(_, digest)| digest))
        .collect();
    match &profile.locked_digest {
        None => "no current envctl.lock entry".into(),
        Some(locked) if digests.contains(&locked.as_str()) => "as locked".into(),
        Some(_) if digests.is_empty() => "no registry digest".into(),
        Some(_) => format!("differs from envctl.lock ({})", digests.join(", ")),
    }
}

/// `doctor --hosts`: every host `names` names, asked at once for the facts
/// [`side_by_side`] compares, with the profiles compared: `profiles`' images and the
/// digests `envctl.lock` pins for them (where an entry is current).
pub async fn compare(
    context: &Context,
    names: &[String],
    profiles: &[crate::profile::ResolvedProfile],
    timeout: std::time::Duration,
) -> Result<(Vec<Answer<HostFacts>>, Vec<ComparedProfile>), Error> {
    let hosts = named(context, names)?;
    let lock = crate::lock::file::read(std::path::Path::new(crate::lock::LOCK_FILE))
        .ok()
        .flatten();
    let compared: Vec<ComparedProfile> = profiles
        .iter()
        .map(|resolved| {
            let name = resolved.profile.name.clone();
            let image = resolved.profile.image.to_string();
            let locked_digest =
                lock.as_ref()
                    .and_then(|lock| match crate::lock::state(lock, &name, &image) {
                        crate::lock::LockState::Current(entry) => Some(entry.digest.clone()),
                        _ => None,
                    });
            ComparedProfile {
                name,
                image,
                locked_digest,
            }
        })
        .collect();
    // This machine's NVML, once, for the hosts whose daemon runs on it (known only once
    // each has answered).
    let library = context.environment.nvml_library();
    let local_gpus = tokio::task::spawn_blocking(move || crate::gpu::gather(library.as_deref()))
        .await
        .map_err(|error| Error::Internal(format!("the NVML probe failed: {error}")))?;
    let answers = {
        let compared = &compared;
        let local_gpus = &local_gpus;
        each(&hosts, timeout, |engine| async move {
            Ok::<HostFacts, Error>(host_facts(&engine, compared, Some(local_gpus), context).await)
        })
        .await
    };
    Ok((answers, compared))
}

/// One host's facts for [`side_by_side`]: the daemon's, each profile's image there (a few
/// at a time), and its GPUs: `local_gpus` when the daemon runs on this machine, else as
/// its daemon tells them (`ops::server_gpus`: its record, or a probe in one of the
/// profiles' images), or why they cannot be had.
pub async fn host_facts(
    engine: &Engine,
    profiles: &[ComparedProfile],
    local_gpus: Option<&crate::facts::gpu::GpuFacts>,
    context: &Context,
) -> HostFacts {
    let images = crate::engine::each_bounded(profiles.iter().map(|profile| async move {
        engine
            .image_facts(&profile.image)
            .await
            .map_err(|error| crate::error::error_chain(&error))
    }));
    let (engine_facts, images) = tokio::join!(engine.facts(), images);
    // Only a daemon on this machine has its GPUs in this machine's NVML.
    let here = matches!(
        &engine_facts.state,
        crate::facts::engine::EngineState::Reachable(daemon) if daemon.host.elsewhere().is_none()
    );
    let elsewhere = match &engine_facts.state {
        crate::facts::engine::EngineState::Reachable(daemon) => {
            daemon.host.elsewhere().map(str::to_string)
        }
        crate::facts::engine::EngineState::Unreachable { .. } => None,
    };
    let gpus = match elsewhere {
        Some(host) => {
            let images: Vec<String> = profiles
                .iter()
                .map(|profile| profile.image.clone())
                .collect();
            use crate::ops::server_gpus::{Need, learn};
            let nvml = match learn(engine, &host, &images, &[], Need::Facts, context).await {
                Ok(learnt) => crate::facts::gpu::LoadOutcome::OnAnotherHost {
                    message: format!("the daemon runs on {host}"),
                    host,
                    seen: Some(Box::new(learnt.seen)),
                },
                Err(error) => crate::facts::gpu::LoadOutcome::OnAnotherHost {
                    message: crate::error::error_chain(&error),
                    host,
                    seen: None,
                },
            };
            Some(crate::facts::gpu::GpuFacts {
                library: "the daemon's".into(),
                nvml,
            })
        }
        None if here => local_gpus.cloned(),
        None => None,
    };
    HostFacts {
        engine: engine_facts,
        images,
        gpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::engine::{DaemonFacts, EngineFacts, EngineKind, EngineState, ImageFacts};

    fn host(version: &str, runtimes: &[&str], image_id: Option<&str>) -> HostFacts {
        HostFacts {
            engine: EngineFacts {
                endpoint: "tcp://gpu:2376".into(),
                state: EngineState::Reachable(Box::new(DaemonFacts {
                    kind: EngineKind::DockerEngine,
                    server_version: Some(version.into()),
                    runtimes: runtimes.iter().map(|runtime| runtime.to_string()).collect(),
                    kernel_version: Some(format!("6.1-{version}")),
                    ..DaemonFacts::default()
                })),
            },
            images: vec![Ok(image_id.map(|id| ImageFacts {
                reference: "team/torch:1".into(),
                id: Some(format!("sha256:{id}")),
                repo_digests: vec![format!("team/torch@sha256:{}", "a".repeat(64))],
                platform: None,
                env: Default::default(),
            }))],
            gpus: None,
        }
    }

    fn fact<'a>(facts: &'a [ComparedFact], name: &str) -> &'a ComparedFact {
        facts.iter().find(|fact| fact.fact == name).unwrap()
    }

    #[test]
    fn differences_are_marked_only_where_setups_differ() {
        let profile = ComparedProfile {
            name: "torch".into(),
            image: "team/torch:1".into(),
            locked_digest: Some(format!("sha256:{}", "a".repeat(64))),
        };
        let hosts = vec![
            Ok(host(
                "28.0.1",
                &["nvidia", "runc"],
                Some("1234567890abcdef"),
            )),
            Ok(host("28.0.1", &["runc"], None)),
            Err("unreachable".to_string()),
        ];
        let facts = side_by_side(&hosts, std::slice::from_ref(&profile));
        assert!(!fact(&facts, "engine").differs);
        assert!(fact(&facts, "runtimes").differs);
        // The kernel is shown, not judged.
        assert!(!fact(&facts, "kernel").compared);
        let image = fact(&facts, "torch: image id");
        assert!(image.differs);
        assert_eq!(image.cells[0], Cell::Known("1234567890ab".into()));
        assert_eq!(image.cells[1], Cell::Known("absent".into()));
        assert!(matches!(image.cells[2], Cell::Unknown(_)));
        assert_eq!(
            fact(&facts, "torch: lock").cells[0],
            Cell::Known("as locked".into())
        );
        // Another machine's driver is unknown, never this one's, and compared with nothing:
        // marked as not agreed on.
        let driver = fact(&facts, "NVIDIA driver branch");
        assert!(!driver.differs);
        assert!(driver.incomplete);
        // Unknown everywhere and not a GPU fact (the daemons say nothing of CDI): not marked.
        assert!(!fact(&facts, "CDI spec folders").incomplete);
        assert!(
            driver
                .cells
                .iter()
                .all(|cell| matches!(cell, Cell::Unknown(_)))
        );
        // Two hosts alike: nothing differs.
        let alike = vec![
            Ok(host("28.0.1", &["runc"], Some("1234"))),
            Ok(host("28.0.1", &["runc"], Some("1234"))),
        ];
        assert!(
            side_by_side(&alike, &[profile])
                .iter()
                .all(|fact| !fact.differs)
        );
    }
}
