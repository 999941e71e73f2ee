//! `envctl up PROFILE`: asks `ops::up` for the plan (`plan`: the profile resolved, the
//! GPUs decided, the body built once), then applies it (`up`: preflight, pull, place,
//! create, start; cleanup on Ctrl-C or SIGTERM) or, with `--dry-run`, renders what
//! `ops::up::dry_run` says `up` would send, refused where `up` would refuse.

use std::cell::RefCell;
use std::rc::Rc;

use serde::Serialize;

use super::{Context, runtime};
use crate::container_plan::{self, CreateBody, Overrides};
use crate::error::Error;
use crate::exit::ExitStatus;

use crate::ops::up::{DryRun, Outcome, Plan, RunState, Session, UpOptions, UpReport, UpRequest};

/// `envctl up`'s arguments, as clap parses them.
#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// A profile name or path
    #[arg(add = clap_complete::ArgValueCandidates::new(crate::complete::profiles))]
    pub profile: String,
    /// Container name (default: envctl-PROFILE)
    #[arg(long)]
    pub name: Option<String>,
    /// Start it on whichever of these servers it fits (`@team`: every host of the team
    /// file; docker CLI context names or URLs, comma-separated): GPUs free, the policy
    /// allowing it, the driver and GPU fit, the image present preferred (with --dry-run:
    /// which one, and what would be made there)
    #[arg(long, value_delimiter = ',', value_name = "HOSTS")]
    pub hosts: Vec<String>,
    /// When to pull the image
    #[arg(long, value_enum, default_value_t = crate::ops::up::PullPolicy::Missing)]
    pub pull: crate::ops::up::PullPolicy,
    /// Print the equivalent `docker run` (with --json: the exact create body) and do nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Start even when doctor's checks fail
    #[arg(long)]
    pub force: bool,
    /// Replace the container when the profile changed since it was created
    #[arg(long)]
    pub recreate: bool,
    /// Fail unless envctl.lock pins this profile's current image
    #[arg(long)]
    pub locked: bool,
    /// Run `nvidia-check` in the container once it started (its exit code is up's)
    #[arg(long)]
    pub check: bool,
    /// Set an environment variable (KEY=VALUE, or KEY to take it from this shell)
    #[arg(short, long, value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default;
    /// replaces the profile's mapping of the same container port
    #[arg(short, long, value_name = "SPEC")]
    pub publish: Vec<String>,
    /// Mount SOURCE:TARGET[:ro] (no `-v`: that is --verbose)
    #[arg(long, value_name = "SPEC")]
    pub volume: Vec<String>,
    /// GPUs instead of the profile's: all, none, a count (placed on free GPUs), or device=0,1
    #[arg(long, value_name = "SPEC")]
    pub gpus: Option<String>,
    /// A ulimit instead of the profile's, docker syntax (NAME=SOFT[:HARD], -1 unlimited):
    /// `--ulimit memlock=65536` where the daemon may not raise the bundled `memlock = -1`
    #[arg(long, value_name = "NAME=SOFT[:HARD]")]
    pub ulimit: Vec<String>,
    /// Give a profile envctl did not make (./envctl/, ENVCTL_PROFILE_PATH, a path) the
    /// root-equivalent settings it asks for (host mounts, SYS_ADMIN, host network, …)
    #[arg(long)]
    pub trust: bool,
}

impl UpArgs {
    /// The words after `envctl` that ask for this `up` again (`ops::trust::Consent`'s hint).
    fn words(&self) -> Vec<String> {
        let mut words = vec!["up".to_string(), self.profile.clone()];
        let mut flag = |flag: &str, value: Option<&String>| {
            words.push(flag.to_string());
            words.extend(value.cloned());
        };
        if let Some(name) = &self.name {
            flag("--name", Some(name));
        }
        if self.pull != crate::ops::up::PullPolicy::Missing
            && let Some(value) = clap::ValueEnum::to_possible_value(&self.pull)
        {
            flag("--pull", Some(&value.get_name().to_string()));
        }
        for (set, name) in [
            (self.dry_run, "--dry-run"),
            (self.force, "--force"),
            (self.recreate, "--recreate"),
            (self.locked, "--locked"),
            (self.check, "--check"),
        ] {
            if set {
                flag(name, None);
            }
        }
        for (values, name) in [
            (&self.env, "-e"),
            (&self.publish, "-p"),
            (&self.volume, "--volume"),
            (&self.ulimit, "--ulimit"),
        ] {
            for value in values {
                flag(name, Some(value));
            }
        }
        if let Some(gpus) = &self.gpus {
            flag("--gpus", Some(gpus));
        }
        words
    }
}

pub fn run(arguments: UpArgs, context: &Context) -> Result<ExitStatus, Error> {
    let request = up_request(&arguments, context)?;
    let runtime = runtime()?;
    if !arguments.hosts.is_empty() {
        runtime.block_on(choose_host(&arguments, context))?;
    }
    if arguments.dry_run {
        // The plan's gathering judges the connection as doctor does (a daemon that does
        // not answer is a fact there).
        let (plan, shown) = runtime.block_on(crate::ops::up::dry_run_plan(
            request,
            arguments.force,
            context,
        ))?;
        let trusted = crate::ops::trust::grants(&plan.resolved, context);
        return dry_run(&shown, &plan.name, &trusted, context);
    }
    let session = runtime.block_on(Session::open(context))?;
    let mut plan = runtime.block_on(session.plan(request, context))?;
    if arguments.name.is_none() {
        runtime.block_on(warn_of_same_profile_elsewhere(&session, &plan, context));
    }
    let options = UpOptions {
        pull: arguments.pull,
        force: arguments.force,
        recreate: arguments.recreate,
    };
    let state = Rc::new(RefCell::new(RunState::default()));
    runtime.block_on(async {
        let interrupted = super::termination_signal();
        let made = make(&session, &mut plan, &arguments, &options, &state, context);
        let result = tokio::select! {
            result = made => result,
            code = interrupted => {
                session.clean_up(&state, context).await;
                let said = state.borrow().interrupted_summary();
                context.printer.warn(said.as_deref().unwrap_or("interrupted"));
                return Ok(ExitStatus::External(code));
            }
        };
        match result {
            Ok(report) => after_start(&session, &report, &plan, &arguments, context).await,
            Err(error) => {
                session.clean_up(&state, context).await;
                Err(error)
            }
        }
    })
}

/// What `arguments` ask `ops::up` to plan: the profile with the overrides of `-e`, `-p`,
/// `--volume`, `--gpus` and `--ulimit`, and the flags that shape the plan.
fn up_request(arguments: &UpArgs, context: &Context) -> Result<UpRequest, Error> {
    let mut overrides = Overrides::parse(
        &arguments.env,
        &arguments.publish,
        &arguments.volume,
        &|key| context.environment.variable(key),
    )?;
    if let Some(spec) = &arguments.gpus {
        overrides.gpus = Some(Overrides::parse_gpus(spec)?);
    }
    for spec in &arguments.ulimit {
        overrides.ulimits.push(Overrides::parse_ulimit(spec)?);
    }
    Ok(UpRequest {
        profile: arguments.profile.clone(),
        overrides,
        locked: arguments.locked,
        name: arguments.name.clone(),
        dry_run: arguments.dry_run,
        trust: crate::ops::trust::Consent::of(arguments.trust, &arguments.words(), context),
        force: arguments.force,
    })
}

/// The profile's container under another name (`--name`) is not what this `up` meets:
/// says so, and how to reach it, before making a second one. Advisory: a list the daemon
/// refuses here is said with its cause, and `up` goes on (its own requests name a failing
/// daemon).
async fn warn_of_same_profile_elsewhere(session: &Session, plan: &Plan, context: &Context) {
    let profile = &plan.resolved.profile.name;
    let elsewhere = match session
        .same_profile_elsewhere(profile, &plan.name, context)
        .await
    {
        Ok(elsewhere) => elsewhere,
        Err(error) => {
            context.printer.warn(&format!(
                "could not look for other containers of profile `{profile}`: {}",
                crate::error::error_chain(&error)
            ));
            Vec::new()
        }
    };
    for other in elsewhere {
        context.printer.warn(&format!(
            "profile `{profile}` also has your container `{other}` (made with `--name {other}`); this makes or meets `{}`: `envctl up {profile} --name {other}` meets that one",
            plan.name
        ));
    }
}

/// Makes or meets `plan`'s container. When another user's `up` of the same profile took
/// `envctl-<profile>` between the look for a free name and the create (and no `--name`
/// was given), this user's is `envctl-<profile>-<user>`: `plan` is renamed and made again.
async fn make(
    session: &Session,
    plan: &mut Plan,
    arguments: &UpArgs,
    options: &UpOptions,
    state: &Rc<RefCell<RunState>>,
    context: &Context,
) -> Result<UpReport, Error> {
    let first = session.up(plan, options, context, state).await;
    let personal = crate::ops::target::personal_container_name(
        &plan.resolved.profile.name,
        &context.me().name_for_containers(),
    );
    match first {
        Err(Error::BelongsTo {
            action: crate::error::OtherUsersAction::Up { .. },
            ..
        }) if arguments.name.is_none() && plan.name != personal => {
            plan.name = personal;
            session.up(plan, options, context, state).await
        }
        other => other,
    }
}

/// Once the container runs: the report, where its ports are and how to reach them; with
/// `--check`, nvidia-check in it, whose code is `up`'s. With `--check --json` the check's
/// document is the one document: it names the container and profile too.
async fn after_start(
    session: &Session,
    report: &UpReport,
    plan: &Plan,
    arguments: &UpArgs,
    context: &Context,
) -> Result<ExitStatus, Error> {
    if !(arguments.check && context.json) {
        let trusted = crate::ops::trust::grants(&plan.resolved, context);
        print_report(report, &plan.resolved.profile.name, &trusted, context)?;
        if !context.json {
            let here = session.ports_here(&report.id).await;
            print_ports_here(here, context);
            let reach = session.reach(&report.id).await;
            print_reach(reach, report, context);
        }
    }
    if !arguments.check {
        return Ok(ExitStatus::Success);
    }
    let options = super::nvidia_check::NvidiaCheckOptions {
        quick: false,
        timeout_seconds: 120,
    };
    session
        .check_started(report, &options, context, |checked| {
            super::nvidia_check::render(&checked, context)
        })
        .await
}

/// `--hosts`: chooses the server the profile fits (`ops::choose_host`), says why it and why
/// not each other one, and makes it the daemon the rest of `up` talks to, as `-H` would.
async fn choose_host(arguments: &UpArgs, context: &Context) -> Result<(), Error> {
    if context.host_flag.is_some() || context.context_flag.is_some() {
        return Err(Error::Usage {
            message: "`--hosts` chooses the daemon itself: it cannot be given with -H or --context"
                .into(),
            hint: Some(format!(
                "leave out -H/--context: `envctl up {} --hosts {}`",
                arguments.profile,
                arguments.hosts.join(",")
            )),
        });
    }
    let mut resolved = context.search_path.resolve(&arguments.profile)?;
    // `--gpus` is what each host is judged by, as `up` judges it.
    if let Some(spec) = &arguments.gpus {
        resolved.profile.gpus = Overrides::parse_gpus(spec)?;
    }
    let (choice, hosts) = crate::ops::choose_host::choose(
        context,
        &arguments.hosts,
        &resolved,
        arguments.force,
        arguments.dry_run,
    )
    .await?;
    let Some(chosen) = choice.chosen else {
        return Err(Error::NoRoomOnHosts {
            profile: resolved.profile.name.clone(),
            hosts: choice
                .hosts
                .iter()
                .map(|host| (host.host.clone(), host.reason.clone()))
                .collect(),
        });
    };
    for (index, host) in choice.hosts.iter().enumerate() {
        let said = if index == chosen {
            "chosen"
        } else if host.fits {
            "fits too"
        } else {
            "not chosen"
        };
        context.printer.info(&format!(
            "host {}: {said}: {}",
            crate::ui::text::shown(&host.host),
            crate::ui::text::shown(&host.reason)
        ));
    }
    let daemon = hosts
        .get(chosen)
        .and_then(|host| host.choice.clone().ok())
        .ok_or_else(|| Error::Internal("the chosen host has no daemon".into()))?;
    // Set before anything connects: every later connection goes to the chosen daemon.
    let _ = context.chosen_daemon.set(daemon);
    Ok(())
}

/// Where the container's published ports are, when its daemon runs on another host, and
/// the command that opens them here (`envctl forward`). What cannot be read is said, never
/// fails the `up` that started the container.
/// `  port:       127.0.0.1:49153 → 8000/tcp`: where each port the container publishes on
/// this machine is, as the daemon answered.
fn print_ports_here(
    ports: Result<Vec<crate::facts::container::PublishedPort>, Error>,
    context: &Context,
) {
    match ports {
        Ok(ports) => {
            for port in ports {
                let host_ip = match port.host_ip.as_str() {
                    "" => "*",
                    // An IPv6 address is bracketed before its port, as in a URL.
                    address if address.contains(':') => &format!("[{address}]"),
                    address => address,
                };
                // The daemon may not name the container's port behind it: then it is left out.
                let inside = port
                    .container_port
                    .map_or_else(String::new, |inside| format!(" → {inside}"));
                context.printer.info(&format!(
                    "  port:       {host_ip}:{}{inside}/{}",
                    port.host_port, port.protocol
                ));
            }
        }
        Err(error) => context.printer.warn(&format!(
            "cannot tell where its ports are: {}",
            crate::error::error_chain(&error)
        )),
    }
}

fn print_reach(
    reach: Result<Option<crate::ops::forward::Reach>, Error>,
    report: &UpReport,
    context: &Context,
) {
    match reach {
        Ok(None) => {}
        Ok(Some(reach)) => {
            let host = crate::ui::text::shown(&reach.host);
            for (inside, address) in &reach.ports {
                context
                    .printer
                    .info(&format!("  port {inside} is on {host} at {address}"));
            }
            let first_port = reach
                .ports
                .first()
                .and_then(|(_, address)| address.rsplit(':').next())
                .unwrap_or("PORT");
            context.printer.info(&if reach.through_ssh {
                format!(
                    "  reach it from here: envctl forward {}",
                    report.container
                )
            } else {
                format!(
                    "  reach it from here: ssh -N -L {first_port}:127.0.0.1:{first_port} {host} (or `envctl -H ssh://{host} forward {}`)",
                    report.container
                )
            });
        }
        Err(error) => context.printer.warn(&format!(
            "cannot tell where its ports are: {}",
            crate::error::error_chain(&error)
        )),
    }
}

fn dry_run(
    shown: &DryRun,
    name: &str,
    trusted: &[crate::ops::trust::Grant],
    context: &Context,
) -> Result<ExitStatus, Error> {
    let body = &shown.body;
    // Secret values (by name, or taken from the shell by `-e KEY`) are never shown.
    let secrets = body.secret_env_keys();
    let report = shown.placement.as_ref();
    if context.json {
        #[derive(Serialize)]
        struct GpuRequest<'a> {
            #[serde(flatten)]
            form: &'a crate::facts::engine::GpuRequestForm,
            engine: &'a str,
        }
        #[derive(Serialize)]
        struct DryRun<'a> {
            name: &'a str,
            /// What `POST /containers/create?name=NAME` would receive, except that each
            /// value of `masked_env` reads `<masked>`; the real request also carries this
            /// run's `envctl.run` label (`ops::up::RUN_LABEL`).
            body: &'a CreateBody,
            masked_env: &'a [String],
            /// With GPUs: the form of the request for this engine, and the engine.
            #[serde(skip_serializing_if = "Option::is_none")]
            gpu_request: Option<GpuRequest<'a>>,
            /// With GPUs: which ones `up` would take now, and why.
            #[serde(skip_serializing_if = "Option::is_none")]
            placement: Option<&'a crate::ops::placement::PlacementReport>,
            /// The root-equivalent settings `--trust` gave a profile envctl did not make.
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            trusted: &'a [crate::ops::trust::Grant],
            /// An image not here: its CUDA libraries are read once pulled, before the
            /// create (issue 41).
            #[serde(skip_serializing_if = "Option::is_none")]
            library_scan: Option<&'a str>,
        }
        context.printer.json(&DryRun {
            name,
            trusted,
            body: &body.masked(),
            masked_env: &secrets,
            gpu_request: shown
                .gpu_request
                .as_ref()
                .map(|(form, engine)| GpuRequest { form, engine }),
            placement: report,
            library_scan: shown.library_scan.as_deref(),
        })?;
    } else {
        if let Some(report) = report {
            context
                .printer
                .info(&format!("placement: {}", report.reason));
            for skipped in &report.skipped {
                context.printer.warn(&format!("placement: {skipped}"));
            }
        }
        context
            .printer
            .data(&container_plan::docker_run_line(body, name))?;
        if !secrets.is_empty() {
            context
                .printer
                .warn(&crate::secret::docker_run_notice(&secrets));
        }
    }
    Ok(ExitStatus::Success)
}

fn print_report(
    report: &UpReport,
    profile: &str,
    trusted: &[crate::ops::trust::Grant],
    context: &Context,
) -> Result<(), Error> {
    if context.json {
        #[derive(Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            report: &'a UpReport,
            /// The root-equivalent settings `--trust` gave a profile envctl did not make.
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            trusted: &'a [crate::ops::trust::Grant],
        }
        return context.printer.json(&Report { report, trusted });
    }
    let short_id: String = report.id.chars().take(12).collect();
    let said = match report.status {
        Outcome::Created => "started",
        Outcome::Recreated => "recreated and started",
        Outcome::Started => "started the existing",
        Outcome::AlreadyRunning => "already running:",
    };
    context
        .printer
        .info(&format!("{said} {} ({short_id})", report.container));
    // The profile finds the user's container by its default names; a container made with
    // `--name` is named, so the hint reaches it and not another of the same profile.
    let target = if report.container == container_plan::container_name(profile)
        || report.container
            == crate::ops::target::personal_container_name(
                profile,
                &context.me().name_for_containers(),
            ) {
        profile
    } else {
        report.container.as_str()
    };
    context
        .printer
        .info(&format!("  enter it:   envctl shell {target}"));
    if report.gpus {
        context
            .printer
            .info(&format!("  check CUDA: envctl exec {target} nvidia-check"));
    }
    context.printer.data(&report.container)
}
