//! Making the container, never starting it: a container of this name looked for and,
//! when there is none, created with what this run needs known first (no profile running
//! from another tool's export, no host port published by a running container). Every
//! create records its id and carries this run's [`RUN_LABEL`] so that any way out
//! removes what it made; [`Check`] compares what the engine made with the body.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;

use super::{Plan, PullPolicy, RUN_LABEL, RunState, ensure_image, ensure_judged_image};
use crate::container_plan::origin::Origin;
use crate::container_plan::{self, CreateBody, PROFILE_LABEL};
use crate::context::Context;
use crate::engine::{Engine, EngineError};
use crate::error::Error;
use crate::facts::container::ContainerSummary;

/// The container this run created, to be compared with the body it was made from.
pub(super) struct Check<'a> {
    pub(super) engine: &'a Engine,
    pub(super) id: &'a str,
    pub(super) body: &'a CreateBody,
    pub(super) name: &'a str,
    pub(super) profile: &'a str,
    pub(super) facts: &'a crate::ops::doctor::Facts,
}

impl Check<'_> {
    /// Inspects the container and compares it with the body: anything the body sets that
    /// the container lacks is an error naming the engine and the settings.
    pub(super) async fn given(&self, stage: container_plan::drift::Stage) -> Result<(), Error> {
        let Check {
            engine,
            id,
            body,
            name,
            profile,
            facts,
        } = *self;
        let inspected = engine
            .inspect_container_json(id)
            .await?
            .ok_or_else(|| Error::TargetNotFound {
                target: name.to_string(),
                hint: "the container disappeared right after it was created; another tool may have removed it".into(),
            })?;
        let missing = container_plan::drift::not_given(body, &inspected, stage)?;
        if missing.is_empty() {
            return Ok(());
        }
        let (engine_name, fix) = match &facts.engine.state {
            crate::facts::engine::EngineState::Reachable(daemon) => {
                let gpus_missing = missing
                    .iter()
                    .any(container_plan::drift::Difference::is_gpus);
                (
                    daemon.described(),
                    if gpus_missing {
                        daemon.kind.gpu_fix().to_string()
                    } else {
                        format!(
                            "the engine ignores these settings: `envctl up {profile} --dry-run --json` shows what was sent; run the profile on an engine that honours them (Docker, or a newer {})",
                            daemon.kind.name()
                        )
                    },
                )
            }
            crate::facts::engine::EngineState::Unreachable { .. } => (
                "the engine".to_string(),
                format!("`envctl up {profile} --dry-run --json` shows what was sent"),
            ),
        };
        Err(Error::NotGiven {
            name: name.to_string(),
            profile: profile.to_string(),
            engine: engine_name,
            missing: missing.iter().map(ToString::to_string).collect(),
            fix,
        })
    }
}

/// What could be done before the preflight's verdict.
pub(super) enum Prepared {
    /// The create was sent: by this run (not started), or a concurrent one won the name.
    Created(Created),
    /// A container of this name exists already.
    Existing(crate::facts::container::ContainerDetails),
    /// Nothing of this name exists, and the image is missing or must be pulled first.
    NeedsImage,
}

/// Looks for a container of this name and, when there is none and the image is already
/// here, creates this one. Nothing is pulled and nothing is started before the verdict.
pub(super) async fn prepare(
    engine: &Engine,
    body: &CreateBody,
    name: &str,
    pull: PullPolicy,
    state: &Rc<RefCell<RunState>>,
) -> Result<Prepared, Error> {
    let existing = engine.inspect_container(name).await?;
    prepare_known(engine, body, name, pull, state, existing).await
}

/// [`prepare`] with the container of this name already looked up (`existing`).
pub(super) async fn prepare_known(
    engine: &Engine,
    body: &CreateBody,
    name: &str,
    pull: PullPolicy,
    state: &Rc<RefCell<RunState>>,
    existing: Option<crate::facts::container::ContainerDetails>,
) -> Result<Prepared, Error> {
    if let Some(existing) = existing {
        // A stopped one of envctl's beside the profile running elsewhere: name that one
        // instead of starting this (which would fail on its ports or split the work).
        if !existing.running {
            refuse_if_made_elsewhere(body, &engine.list_containers(false, true).await?)?;
        }
        return Ok(Prepared::Existing(existing));
    }
    // One list serves both checks: envctl's running containers, or every running one
    // when the body publishes ports (any of them may hold one).
    let publishes = !body.host_config.port_bindings.is_empty();
    let running = engine.list_containers(false, !publishes).await?;
    refuse_if_made_elsewhere(body, &running)?;
    if pull == PullPolicy::Always {
        return Ok(Prepared::NeedsImage);
    }
    ports_free(body, &running)?;
    match create(engine, body, name, state).await {
        Ok(created) => Ok(Prepared::Created(created)),
        Err(EngineError::ImageMissing { .. }) => Ok(Prepared::NeedsImage),
        Err(error) => Err(create_error(error, name, body)),
    }
}

/// Who created the container that this run is to start.
pub(super) enum Created {
    Ours(String),
    Theirs,
}

/// Pulls per the policy, then creates; an image it pulls judged first on `judging`'s plan and facts
/// when given (`preflight::judge_pulled_image`): refused, nothing is created.
pub(super) async fn create_with_judged_image(
    engine: &Engine,
    body: &CreateBody,
    name: &str,
    pull: PullPolicy,
    judging: Option<(&Plan, &crate::ops::doctor::Facts)>,
    context: &Context,
    state: &Rc<RefCell<RunState>>,
) -> Result<Created, Error> {
    let image: crate::profile::image::ImageReference =
        body.image.parse().map_err(|message: String| Error::Usage {
            message,
            hint: None,
        })?;
    match judging {
        Some((plan, facts)) => {
            ensure_judged_image(engine, plan, facts, &image, pull, context).await?;
        }
        None => ensure_image(engine, &image, pull, context).await?,
    }
    ensure_ports_free(engine, body).await?;
    create(engine, body, name, state)
        .await
        .map_err(|error| create_error(error, name, body))
}

/// Creates (never starts), recording the id at once so that every way out of this run
/// removes what it made; a name a concurrent `up` took first is theirs. The request
/// carries this run's [`RUN_LABEL`] and runs as a task of its own: an interruption drops
/// `up`, not the request, and `clean_up` waits for its answer.
async fn create(
    engine: &Engine,
    body: &CreateBody,
    name: &str,
    state: &Rc<RefCell<RunState>>,
) -> Result<Created, EngineError> {
    let run_id = state.borrow().run_id.clone();
    engine.create_named_volumes(body, &run_id).await?;
    let mut body = body.clone();
    // The image's `NVIDIA_VISIBLE_DEVICES=all` never gives GPUs the body did not ask for.
    crate::ops::placement::pin_visible_devices(engine, &mut body).await;
    let in_flight = {
        let state = state.borrow();
        body.labels
            .insert(RUN_LABEL.to_string(), state.run_id.clone());
        state.creates_in_flight.clone()
    };
    in_flight.fetch_add(1, Ordering::SeqCst);
    let request = {
        let engine = engine.clone();
        let name = name.to_string();
        tokio::spawn(async move {
            let answer = engine.create_container(&name, &body).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            answer
        })
    };
    // The task is never aborted, so it can only end early by panicking: that is a bug,
    // and it stays a panic.
    let answer = match request.await {
        Ok(answer) => answer,
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    };
    match answer {
        Ok(id) => {
            state.borrow_mut().created = Some(id.clone());
            Ok(Created::Ours(id))
        }
        Err(EngineError::NameConflict { .. }) => Ok(Created::Theirs),
        Err(error) => Err(error),
    }
}

/// Before a create: no running container (envctl's or not) may publish a host port the
/// body wants. The daemon would find out only at start, with a 500 naming neither.
pub(super) async fn ensure_ports_free(engine: &Engine, body: &CreateBody) -> Result<(), Error> {
    if body.host_config.port_bindings.is_empty() {
        return Ok(());
    }
    ports_free(body, &engine.list_containers(false, false).await?)
}

/// A running container of this profile that another tool started from one of envctl's
/// exports (`docker compose up`) is the environment already: `up` names it instead of
/// making a second one beside it, which would fail on its ports or split the work.
fn refuse_if_made_elsewhere(body: &CreateBody, running: &[ContainerSummary]) -> Result<(), Error> {
    let Some(profile) = body.labels.get(PROFILE_LABEL) else {
        return Ok(());
    };
    let elsewhere = running.iter().find_map(|container| {
        if container.labels.get(PROFILE_LABEL) != Some(profile) {
            return None;
        }
        let origin = Origin::of(&container.labels);
        (origin != Origin::Up).then_some((container, origin))
    });
    match elsewhere {
        None => Ok(()),
        Some((container, origin)) => Err(Error::RunsElsewhere {
            profile: profile.clone(),
            container: container.name.clone(),
            started_by: origin.stop_hint(&container.name),
        }),
    }
}

/// [`ensure_ports_free`] against a list of the running containers already made.
fn ports_free(body: &CreateBody, running: &[ContainerSummary]) -> Result<(), Error> {
    if body.host_config.port_bindings.is_empty() {
        return Ok(());
    }
    match container_plan::free_ports::taken_port(body, running) {
        None => Ok(()),
        Some(taken) => Err(Error::PortTaken {
            suggested: suggested_port(&taken, running),
            wanted: taken.wanted,
            container: taken.container,
            published: taken.published,
            container_port: taken.container_port,
            host_port: taken.host_port,
            profile: body.labels.get(PROFILE_LABEL).cloned().unwrap_or_default(),
        }),
    }
}

/// The host port the refusal's hint moves a taken one to: the next one above it (wrapping
/// to 1024) that no running container publishes and that this machine can bind on the
/// address asked for (for a TCP port; a daemon of another machine may still find it
/// taken, and says so at start). Never the taken port plus one unchecked: that port may
/// be any process's.
fn suggested_port(
    taken: &container_plan::free_ports::TakenPort,
    running: &[ContainerSummary],
) -> u16 {
    let protocol = taken
        .container_port
        .rsplit_once('/')
        .map_or("tcp", |(_, protocol)| protocol);
    let address = taken
        .wanted
        .rsplit_once(':')
        .map_or("", |(address, _)| address);
    let published = |port: u16| {
        running.iter().any(|container| {
            container
                .published
                .iter()
                .any(|other| other.host_port == port && other.protocol == protocol)
        })
    };
    let above = (taken.host_port.saturating_add(1)..=u16::MAX).chain(1024..taken.host_port);
    above
        .filter(|port| *port != taken.host_port)
        .find(|port| {
            !published(*port) && (protocol != "tcp" || crate::host::ports::bindable(address, *port))
        })
        .unwrap_or(taken.host_port)
}

/// A 400 to the create is the daemon refusing the settings (`--cpus` above its CPUs, a
/// device it cannot give): never shown bare, but with where to check the profile.
fn create_error(error: EngineError, name: &str, body: &CreateBody) -> Error {
    match error {
        // Podman refuses `--init` without its catatonit with a 500; doctor's `profile.init`
        // names the fix.
        EngineError::Daemon { status: 400, .. } => create_refused(error, name, body),
        error if error.is_init_missing() => create_refused(error, name, body),
        error => error.into(),
    }
}

fn create_refused(error: EngineError, name: &str, body: &CreateBody) -> Error {
    Error::CreateRefused {
        name: name.to_string(),
        profile: body
            .labels
            .get(PROFILE_LABEL)
            .cloned()
            .unwrap_or_else(|| name.to_string()),
        source: Box::new(error),
    }
}

/// Checks and starts the container this run created. Never "started" without what the
/// profile asked for: an engine may drop a setting silently (Podman before 5.4 drops GPU
/// requests). The error leaves the container unstarted, and `clean_up` removes it.
pub(super) async fn start_checked(check: &Check<'_>, context: &Context) -> Result<(), Error> {
    check.given(container_plan::drift::Stage::Created).await?;
    start(check.engine, check.id, check.name, context).await?;
    // CDI devices exist only once the engine has started the container (Podman resolves
    // them at start): look again, and take the container back when they are missing.
    if check
        .body
        .host_config
        .device_requests
        .iter()
        .any(container_plan::gpus::is_cdi)
        && let Err(error) = check.given(container_plan::drift::Stage::Started).await
    {
        if let Err(removal) = check.engine.remove_container(check.id, true, true).await {
            context.printer.warn(&format!(
                "could not remove {}, started without its GPUs: {removal} (`{} rm -f {}`)",
                check.name,
                check.engine.known_kind().cli(),
                check.name
            ));
        }
        return Err(error);
    }
    Ok(())
}

/// Starts container `id`. A daemon that started it but never answered: what it did is
/// asked, never guessed, so a running container is not called unstarted and removed.
async fn start(engine: &Engine, id: &str, name: &str, context: &Context) -> Result<(), Error> {
    let Err(error) = engine.start_container(id).await else {
        return Ok(());
    };
    let unanswered = matches!(
        error,
        EngineError::Timeout { .. } | EngineError::StoppedAnswering { .. }
    );
    match engine.inspect_container(id).await {
        Ok(Some(details)) if unanswered && details.running => {
            context.printer.warn(&format!(
                "the daemon did not answer the start of {name} ({error}), but the container runs"
            ));
            Ok(())
        }
        _ => Err(Error::StartFailed {
            name: name.to_string(),
            source: Box::new(error),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container_plan::ORIGIN_LABEL;
    use crate::container_plan::origin::COMPOSE_PROJECT_LABEL;
    use crate::ops::up::fixtures::{body, resolved, running};

    const PUBLISHING: &str =
        "name = \"web\"\nimage = \"ubuntu:24.04\"\nports = [\"127.0.0.1:18888:8888\"]\n";

    fn web() -> CreateBody {
        body(&resolved(PUBLISHING))
    }

    /// A profile `docker compose up` runs from envctl's export is named with how to stop
    /// it; one `up` made, another profile's, or a body of no profile are not in the way.
    #[test]
    fn a_profile_running_from_an_export_is_named_not_made_again() {
        let compose = running(
            "web-1",
            &[
                (PROFILE_LABEL, "web"),
                (ORIGIN_LABEL, "compose"),
                (COMPOSE_PROJECT_LABEL, "team"),
            ],
            &[],
        );
        match refuse_if_made_elsewhere(&web(), std::slice::from_ref(&compose)) {
            Err(Error::RunsElsewhere {
                profile,
                container,
                started_by,
            }) => {
                assert_eq!(profile, "web");
                assert_eq!(container, "web-1");
                assert!(
                    started_by.contains("docker compose -p team down"),
                    "{started_by}"
                );
            }
            other => panic!("expected RunsElsewhere, got {other:?}"),
        }
        let made_by_up = running("envctl-web", &[(PROFILE_LABEL, "web")], &[]);
        assert!(refuse_if_made_elsewhere(&web(), &[made_by_up]).is_ok());
        let other_profile = running(
            "db-1",
            &[(PROFILE_LABEL, "db"), (ORIGIN_LABEL, "compose")],
            &[],
        );
        assert!(refuse_if_made_elsewhere(&web(), &[other_profile]).is_ok());
        let mut unlabelled = web();
        unlabelled.labels.remove(PROFILE_LABEL);
        assert!(refuse_if_made_elsewhere(&unlabelled, &[compose]).is_ok());
    }

    /// A host port a running container publishes on an overlapping address, for the same
    /// protocol, refuses the create; the hint's port is neither taken nor published.
    #[test]
    fn a_published_host_port_refuses_the_create_and_suggests_another() {
        let holder = running(
            "other",
            &[],
            &[("0.0.0.0", 18888, "tcp"), ("0.0.0.0", 18889, "tcp")],
        );
        match ports_free(&web(), std::slice::from_ref(&holder)) {
            Err(Error::PortTaken {
                wanted,
                container,
                published,
                container_port,
                host_port,
                suggested,
                profile,
            }) => {
                assert_eq!(wanted, "127.0.0.1:18888/tcp");
                assert_eq!(container, "other");
                assert_eq!(published, "0.0.0.0:18888/tcp");
                assert_eq!(container_port, "8888/tcp");
                assert_eq!(host_port, 18888);
                assert_eq!(profile, "web");
                // 18889 is published by the same container: never suggested.
                assert!(suggested != 18888 && suggested != 18889, "{suggested}");
            }
            other => panic!("expected PortTaken, got {other:?}"),
        }
        // The same port over UDP, or on another specific address, is not in the way.
        let udp = running("udp", &[], &[("0.0.0.0", 18888, "udp")]);
        assert!(ports_free(&web(), &[udp]).is_ok());
        let elsewhere = running("lan", &[], &[("192.0.2.7", 18888, "tcp")]);
        assert!(ports_free(&web(), &[elsewhere]).is_ok());
        // A body publishing nothing is never refused.
        let quiet = body(&resolved("name = \"q\"\nimage = \"ubuntu:24.04\"\n"));
        assert!(ports_free(&quiet, &[holder]).is_ok());
    }

    fn taken(address: &str, port: u16, protocol: &str) -> container_plan::free_ports::TakenPort {
        container_plan::free_ports::TakenPort {
            wanted: format!("{address}:{port}/{protocol}"),
            container: "other".into(),
            published: format!("0.0.0.0:{port}/{protocol}"),
            container_port: format!("80/{protocol}"),
            host_port: port,
        }
    }

    /// The suggestion skips the ports running containers publish for the protocol, and
    /// wraps from the top of the range to 1024.
    #[test]
    fn the_suggested_port_skips_published_ones_and_wraps() {
        let busy = running(
            "busy",
            &[],
            &[
                ("0.0.0.0", 20001, "udp"),
                ("0.0.0.0", 20002, "udp"),
                ("0.0.0.0", 20003, "tcp"),
            ],
        );
        let busy = std::slice::from_ref(&busy);
        // UDP ports are not bound to try them: only what containers publish counts.
        assert_eq!(suggested_port(&taken("", 20000, "udp"), busy), 20003);
        assert_eq!(suggested_port(&taken("", u16::MAX, "udp"), &[]), 1024);
        let ports: Vec<(&str, u16, &str)> =
            (1024..1030).map(|port| ("0.0.0.0", port, "udp")).collect();
        let crowded = running("crowded", &[], &ports);
        assert_eq!(
            suggested_port(&taken("", u16::MAX, "udp"), std::slice::from_ref(&crowded)),
            1030
        );
    }

    /// A TCP port some process of this machine listens on is never suggested, even when
    /// no container publishes it.
    #[test]
    fn the_suggested_tcp_port_is_one_this_machine_can_bind() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let held = listener.local_addr().unwrap().port();
        let below = held - 1;
        let suggested = suggested_port(&taken("127.0.0.1", below, "tcp"), &[]);
        assert_ne!(suggested, held);
        assert_ne!(suggested, below);
        assert!(std::net::TcpListener::bind(("127.0.0.1", suggested)).is_ok());
    }

    fn daemon_error(status: u16, message: &str) -> EngineError {
        EngineError::Daemon {
            endpoint: crate::engine::Endpoint::unidentified("unix:///var/run/docker.sock"),
            status,
            message: message.into(),
        }
    }

    /// The daemon refusing the settings (400, or Podman's 500 for `--init` without its
    /// binary) names the container and its profile; any other failure stays the engine's.
    #[test]
    fn a_refused_create_names_the_profile() {
        for refusal in [
            daemon_error(400, "NanoCpus can not be set"),
            daemon_error(500, "container-init binary not found on the host"),
        ] {
            match create_error(refusal, "envctl-web", &web()) {
                Error::CreateRefused { name, profile, .. } => {
                    assert_eq!((name.as_str(), profile.as_str()), ("envctl-web", "web"));
                }
                other => panic!("expected CreateRefused, got {other:?}"),
            }
        }
        let mut unlabelled = web();
        unlabelled.labels.remove(PROFILE_LABEL);
        match create_error(daemon_error(400, "bad"), "mine", &unlabelled) {
            Error::CreateRefused { profile, .. } => assert_eq!(profile, "mine"),
            other => panic!("expected CreateRefused, got {other:?}"),
        }
        assert!(matches!(
            create_error(daemon_error(500, "disk full"), "envctl-web", &web()),
            Error::Engine(EngineError::Daemon { status: 500, .. })
        ));
    }
}
