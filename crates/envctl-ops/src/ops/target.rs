//! TARGET arguments: a container name or id, or a profile (name or path) whose container
//! is found by its `envctl.profile` label; the running container `exec` needs, and the
//! named commands of the profile it was made from.
//!
//! The order (ARCHITECTURE.md, "TARGET"): a container whose name is exactly TARGET, or
//! whose id TARGET is or begins with when TARGET has at least 12 hex digits; then the
//! profile TARGET names. The daemon itself would take any id prefix (`1548e`), which could
//! as well be a profile's name: envctl never lets a short prefix decide.

use crate::container_plan::ownership::{self, Belonging};
use crate::container_plan::{PROFILE_FILE_LABEL, PROFILE_LABEL, container_name};
use crate::context::Context;
use crate::engine::Engine;
use crate::engine::reference;
use crate::error::Error;
use crate::error::OtherUsersAction;
use crate::facts::container::ContainerDetails;
use crate::profile::ResolvedProfile;

mod obvious;

pub use obvious::{Purpose, obvious_container};

/// What the daemon has under TARGET's name or id.
enum ByName {
    /// A container named exactly TARGET, or whose id TARGET is (12 hex digits or more).
    Found(ContainerDetails),
    /// TARGET is a shorter prefix of this container's id: not taken, but worth a hint.
    ShortPrefixOf(String),
    Nothing,
}

/// Refuses a TARGET that can name nothing: empty, or holding a NUL.
fn check_target(target: &str) -> Result<(), Error> {
    if target.is_empty() || target.contains('\0') {
        return Err(Error::Usage {
            message: format!("TARGET {target:?} names no container or profile"),
            hint: Some(
                "give a profile name or path, or a container name or id (`envctl ps -a`)".into(),
            ),
        });
    }
    Ok(())
}

/// The container TARGET names by name or id. A TARGET that cannot be a container name
/// (a path, `.`, `x/../y`) is never sent to the daemon: it can only name a profile.
async fn by_name(engine: &Engine, context: &Context, target: &str) -> Result<ByName, Error> {
    if !reference::is_plain_name(target) {
        return Ok(ByName::Nothing);
    }
    let Some(details) = engine.inspect_container(target).await? else {
        return Ok(ByName::Nothing);
    };
    let name = target.strip_prefix('/').unwrap_or(target);
    if details.name == name {
        Ok(ByName::Found(details))
    } else if reference::is_id_prefix(target) && details.id.starts_with(target) {
        // Hex digits that begin a container's id may also be a profile's name: neither is
        // guessed.
        if context.search_path.resolve(target).is_ok() {
            return Err(Error::Usage {
                message: format!(
                    "`{target}` is both the start of the id of container `{}` and a profile's name",
                    details.name
                ),
                hint: Some(format!(
                    "name the container (`{}`), or the profile by its file (`./envctl/{target}.toml`)",
                    details.name
                )),
            });
        }
        Ok(ByName::Found(details))
    } else {
        Ok(ByName::ShortPrefixOf(details.name))
    }
}

/// What a TARGET word names.
pub enum Lookup {
    /// A container: by name or id, or the container of the profile it names.
    Container(Box<ContainerDetails>),
    /// Neither a container nor a profile nor an envctl container's `envctl.profile`.
    /// `prefix_of`: a container whose id the word only begins with.
    Nothing { prefix_of: Option<String> },
}

/// Finds the container a TARGET names. A container name or id wins over a profile name.
pub async fn find_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    match look_up(engine, context, target).await? {
        Lookup::Container(details) => Ok(*details),
        Lookup::Nothing { prefix_of } => {
            Err(nothing_error(engine, context, target, prefix_of.as_deref(), &[]).await)
        }
    }
}

/// What TARGET names, with "nothing" as an answer rather than an error: `exec WORD` takes
/// a word that names nothing as a command of the obvious container. A profile that exists
/// but has no container is an error here, as it is a TARGET.
pub async fn look_up(engine: &Engine, context: &Context, target: &str) -> Result<Lookup, Error> {
    check_target(target)?;
    let prefix_of = match by_name(engine, context, target).await? {
        // Named: another user's only with `--other-user`.
        ByName::Found(details) => {
            return Ok(Lookup::Container(Box::new(may_act(details, context)?)));
        }
        ByName::ShortPrefixOf(name) => Some(name),
        ByName::Nothing => None,
    };
    find_by_profile(engine, context, target, prefix_of).await
}

/// Like [`find_container`], for commands that stop or remove: only a container envctl
/// created (it carries `envctl.profile`). A foreign container that happens to have the
/// TARGET's name gives way to the profile's container, and is never touched itself.
pub async fn find_own_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    check_target(target)?;
    let (foreign, prefix_of) = match by_name(engine, context, target).await? {
        ByName::Found(details) if details.labels.contains_key(PROFILE_LABEL) => {
            return may_act(details, context);
        }
        ByName::Found(details) => (Some(details.name), None),
        ByName::ShortPrefixOf(name) => (None, Some(name)),
        ByName::Nothing => (None, None),
    };
    match (
        find_by_profile(engine, context, target, prefix_of).await,
        foreign,
    ) {
        (Ok(Lookup::Container(details)), _) => Ok(*details),
        // The foreign container is what TARGET names; the profile has none of its own.
        (
            Ok(Lookup::Nothing { .. })
            | Err(Error::TargetNotFound { .. } | Error::NoContainer { .. }),
            Some(name),
        ) => Err(Error::NotEnvctls {
            name,
            cli: engine.known_kind().cli(),
        }),
        (Ok(Lookup::Nothing { prefix_of }), None) => {
            Err(nothing_error(engine, context, target, prefix_of.as_deref(), &[]).await)
        }
        (Err(error), _) => Err(error),
    }
}

/// Whether a container with these (proven) labels is envctl's and not another user's:
/// this user's own, or one that names no owner (`Belonging::Unowned`).
pub fn is_mine(labels: &std::collections::BTreeMap<String, String>, context: &Context) -> bool {
    matches!(
        ownership::belonging(labels, context.me()),
        Belonging::Mine | Belonging::Unowned
    )
}

/// Whether the labels name this user as the owner (not merely no owner).
pub fn is_owned_by_me(
    labels: &std::collections::BTreeMap<String, String>,
    context: &Context,
) -> bool {
    ownership::belonging(labels, context.me()) == Belonging::Mine
}

/// `container`, unless it is another user's and `--other-user` was not given. A container
/// envctl did not make passes: what may be done to it is each command's rule.
pub fn may_act(container: ContainerDetails, context: &Context) -> Result<ContainerDetails, Error> {
    match ownership::belonging(&container.labels, context.me()) {
        Belonging::Theirs { owner } if !context.other_user => Err(Error::BelongsTo {
            name: container.name,
            owner,
            action: OtherUsersAction::Named,
        }),
        _ => Ok(container),
    }
}

/// The container of the profile TARGET names, found by its `envctl.profile` label.
/// `prefix_of`: the container whose id TARGET only begins with, for the hint when there is
/// no such profile either.
async fn find_by_profile(
    engine: &Engine,
    context: &Context,
    target: &str,
    prefix_of: Option<String>,
) -> Result<Lookup, Error> {
    // The profile's own name when it resolves (a path, or `name` set in the file); else the
    // target itself, so a container whose profile file is gone is still found by label.
    let found = match context.search_path.resolve(target) {
        Ok(resolved) => Some(resolved),
        Err(
            crate::profile::ProfileError::NotFound { .. }
            | crate::profile::ProfileError::FileNotFound { .. },
        ) => None,
        Err(error) => return Err(error.into()),
    };
    let resolved = found.as_ref().map(|found| found.profile.name.clone());
    let profile = resolved.clone().unwrap_or_else(|| target.to_string());
    // A container listed and gone by the time it is inspected was replaced or removed by
    // another run (`up` racing `down`): look again before saying so.
    for _ in 0..RELIST_ATTEMPTS {
        match by_profile_label(engine, context, target, &profile, resolved.is_some()).await? {
            Some(Some(details)) => {
                // Labels that claim the profile's current config over another image are
                // not the profile's container: named, never exec'd into.
                if let Some(found) = &found {
                    refuse_impostor(engine, &details, found, context).await?;
                }
                return Ok(Lookup::Container(Box::new(details)));
            }
            Some(None) => return Ok(Lookup::Nothing { prefix_of }),
            None => {}
        }
    }
    Err(Error::TargetNotFound {
        target: target.to_string(),
        hint: format!(
            "the containers of profile `{profile}` were removed as envctl looked (another envctl or docker at work?): run it again"
        ),
    })
}

/// How often [`find_by_profile`] lists again when the container it chose vanished.
const RELIST_ATTEMPTS: usize = 3;

/// One look by label: `Ok(None)` when the container chosen was gone when inspected,
/// `Ok(Some(None))` when TARGET is neither a profile nor any container's profile label.
async fn by_profile_label(
    engine: &Engine,
    context: &Context,
    target: &str,
    profile: &str,
    profile_exists: bool,
) -> Result<Option<Option<ContainerDetails>>, Error> {
    // A profile names the user's own container only: two users run the same profile.
    let mut containers: Vec<_> = engine
        .list_containers(true, true)
        .await?
        .into_iter()
        .filter(|container| {
            container.labels.get(PROFILE_LABEL).map(String::as_str) == Some(profile)
                && is_mine(&container.labels, context)
        })
        .collect();
    // The default names first: `envctl-<profile>`, then `envctl-<profile>-<user>`.
    let default_name = container_name(profile);
    let personal_name = personal_container_name(profile, &context.me().name_for_containers());
    containers.sort_by_key(|container| {
        (
            container.name != default_name,
            container.name != personal_name,
        )
    });
    let default_name = containers
        .iter()
        .map(|container| container.name.clone())
        .find(|name| *name == default_name || *name == personal_name)
        .unwrap_or(default_name);
    match containers.as_slice() {
        // A profile that exists has no container yet: `up` makes one.
        [] if profile_exists => Err(Error::NoContainer {
            target: target.to_string(),
            profile: profile.to_string(),
        }),
        [] => Ok(Some(None)),
        [only] => Ok(engine.inspect_container(&only.id).await?.map(Some)),
        [first, ..] if first.name == default_name => {
            Ok(engine.inspect_container(&first.id).await?.map(Some))
        }
        several => Err(Error::TargetAmbiguous {
            target: target.to_string(),
            containers: several
                .iter()
                .map(|container| container.name.clone())
                .collect(),
        }),
    }
}

/// The name `up` gives a user's container of `profile` when `envctl-<profile>` is another
/// user's: `envctl-<profile>-<user>`, the login name kept to the characters a container
/// name may hold.
pub fn personal_container_name(profile: &str, user: &str) -> String {
    let user: String = user
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || "_.-".contains(character) {
                character
            } else {
                '-'
            }
        })
        .collect();
    format!("{}-{user}", container_name(profile))
}

/// The error for a TARGET that names nothing. Neither a profile nor a container: `up`
/// would fail the same way, so the hint is the nearest name envctl knows (profiles,
/// envctl's containers, and `also_known`: the commands `exec` could have meant), or where
/// to look. A listing that fails only costs the suggestion.
pub async fn nothing_error(
    engine: &Engine,
    context: &Context,
    target: &str,
    prefix_of: Option<&str>,
    also_known: &[String],
) -> Error {
    let hint = match prefix_of {
        Some(name) => format!(
            "`{target}` is only the start of the id of container `{name}`: give its name, or at least 12 hex digits of its id"
        ),
        None => match not_found_hint(engine, context, target, also_known).await {
            Ok(hint) => hint,
            Err(error) => return error,
        },
    };
    Error::TargetNotFound {
        target: target.to_string(),
        hint,
    }
}

/// For a TARGET that names nothing: the nearest profile or envctl container name (or one
/// of `also_known`), or where to look.
async fn not_found_hint(
    engine: &Engine,
    context: &Context,
    target: &str,
    also_known: &[String],
) -> Result<String, Error> {
    Ok(
        match nearest_name(engine, context, target, also_known).await? {
            Some(near) => format!("did you mean `{near}`?"),
            None => "`envctl ps -a` lists envctl's containers, `envctl profiles list` the profiles"
                .into(),
        },
    )
}

/// The profile, envctl container or `also_known` name nearest to `word`, when it is close
/// enough to be a typo of it (`crate::suggest`).
pub async fn nearest_name(
    engine: &Engine,
    context: &Context,
    word: &str,
    also_known: &[String],
) -> Result<Option<String>, Error> {
    let mut known = context.search_path.names();
    known.extend(also_known.iter().cloned());
    known.extend(
        engine
            .list_containers(true, true)
            .await?
            .into_iter()
            .filter(|container| is_mine(&container.labels, context))
            .map(|container| container.name),
    );
    let candidates: Vec<&str> = known.iter().map(String::as_str).collect();
    Ok(crate::suggest::did_you_mean(word, &candidates).map(str::to_string))
}

/// Finds the target's container and insists it runs.
pub async fn running_container(
    engine: &Engine,
    context: &Context,
    target: &str,
) -> Result<ContainerDetails, Error> {
    ensure_running(engine, find_container(engine, context, target).await?)
}

/// The container, when it runs; else how to start it.
pub fn ensure_running(
    engine: &Engine,
    container: ContainerDetails,
) -> Result<ContainerDetails, Error> {
    if !container.running {
        let hint = match container.labels.get(PROFILE_LABEL) {
            Some(profile) => format!("start it with `envctl up {profile}`"),
            // Not envctl's: `envctl up` cannot start it, the engine's own tool can.
            None => format!(
                "start it with `{} start {}`",
                engine.known_kind().cli(),
                container.name
            ),
        };
        return Err(Error::NotRunning {
            name: container.name,
            status: container.status,
            hint,
        });
    }
    Ok(container)
}

/// The profile a container was made from: the file its `envctl.profile-file` label names
/// while that file exists (so `up ./x.toml` keeps its commands wherever `exec` runs), else
/// its `envctl.profile` name through the search path. `None` for a container envctl did
/// not make.
///
/// A label is a claim, not the user's word: the file it names is read only for the user's
/// own container, only when the path is absolute and is itself a regular file (no link),
/// and with a profile's confinement (size cap, no blocking open). Its contents never reach
/// a message: a file that is no valid profile is named, with the command that shows why.
pub fn container_profile(
    context: &Context,
    container: &ContainerDetails,
) -> Option<Result<ResolvedProfile, Error>> {
    let name = container.labels.get(PROFILE_LABEL)?;
    if let Some(file) = container.labels.get(PROFILE_FILE_LABEL)
        && is_mine(&container.labels, context)
        && labelled_file_may_be_read(file)
    {
        return Some(context.search_path.resolve(file).map_err(|_| Error::Usage {
            message: format!(
                "the profile file {file} that container `{}` was made from (its `{PROFILE_FILE_LABEL}` label) is not a valid profile now",
                container.name
            ),
            hint: Some(format!(
                "`envctl profiles show {}` says why",
                crate::container_plan::shell_quote(file)
            )),
        }));
    }
    Some(context.search_path.resolve(name).map_err(Error::from))
}

/// `container` unless its labels claim `profile`'s current config while the daemon's own
/// facts differ from what envctl makes of it ([`daemon_differences`]): named, never acted
/// in.
pub async fn refuse_impostor(
    engine: &Engine,
    container: &ContainerDetails,
    profile: &ResolvedProfile,
    context: &Context,
) -> Result<(), Error> {
    // Gone since it was found: nothing to judge; the command that follows says so.
    let Some(differences) = daemon_differences(engine, container, profile, context).await? else {
        return Ok(());
    };
    ownership::not_an_impostor(
        &container.name,
        &profile.profile.name,
        &differences,
        engine.known_kind().cli(),
    )?;
    Ok(())
}

/// What the daemon says of `container` (one inspect) that differs from the container
/// envctl makes of `profile`, where its labels claim it is that (its profile hash, or its
/// config hash for one made without overrides, is the profile's); empty where they claim
/// nothing. `None`: the container is gone. `exec`, `shell` and `ps` have no `up` at hand:
/// the body is the profile's own, without placement (GPUs asked where the container has
/// them), and the claim is judged as `ownership::daemon_facts` says: image, command, user,
/// privilege, capabilities, namespaces, devices, unconfined security options; for one made
/// without overrides also its env, ports and other settings, and its mounts by target
/// (sources may be relative to a folder other than this one); for one made with `up
/// -e/-p/-v` not its mounts, env, ports, ulimits or GPUs, which those flags chose.
pub async fn daemon_differences(
    engine: &Engine,
    container: &ContainerDetails,
    profile: &ResolvedProfile,
    context: &Context,
) -> Result<Option<Vec<crate::container_plan::drift::Difference>>, Error> {
    use crate::container_plan::ownership::daemon_facts::{self, Claim, Mounts};
    let made_with_overrides = container
        .labels
        .get(crate::container_plan::PROFILE_HASH_LABEL);
    let hash = made_with_overrides.or_else(|| {
        container
            .labels
            .get(crate::container_plan::CONFIG_HASH_LABEL)
    });
    if hash != Some(&profile.config_hash) {
        return Ok(Some(Vec::new()));
    }
    let Some(inspected) = engine.inspect_container_json(&container.id).await? else {
        return Ok(None);
    };
    let spec_context = crate::container_plan::SpecContext {
        working_directory: context
            .working_directory()
            .unwrap_or_else(|_| std::path::PathBuf::from("/")),
        // Sources are not compared here (`Mounts::Targets`): a profile with `~` sources
        // still has a body where no home is known.
        home: Some(
            context
                .environment
                .home()
                .unwrap_or_else(|| std::path::PathBuf::from("/")),
        ),
        // `gpus = "optional"` asked for GPUs where its `up` found some: the daemon says
        // whether it did (the request itself is not judged: placement chose it).
        host_has_gpus: container.gpus.is_some(),
        overrides: crate::container_plan::Overrides::default(),
        path_exists: &|_| true,
    };
    let body = crate::container_plan::create_body(profile, &spec_context)?;
    let claim = Claim {
        settings: made_with_overrides.is_none(),
        mounts: match made_with_overrides {
            Some(_) => Mounts::Unjudged,
            None => Mounts::Targets,
        },
    };
    Ok(Some(daemon_facts::not_as_claimed(
        &body, &inspected, claim,
    )?))
}

/// Whether a file a container label names may be read: an absolute path to a regular
/// file, not a link (a link could lead anywhere the label's writer chose).
fn labelled_file_may_be_read(file: &str) -> bool {
    let path = std::path::Path::new(file);
    path.is_absolute()
        && std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_file())
}

/// The names `exec WORD` can run in the container: `nvidia-check`, and the profile's
/// `[commands]` when the profile resolves (one that does not only has fewer names).
pub fn command_names(context: &Context, container: &ContainerDetails) -> Vec<String> {
    let mut names = vec![NVIDIA_CHECK.to_string()];
    if let Some(Ok(resolved)) = container_profile(context, container) {
        names.extend(resolved.profile.commands.keys().cloned());
    }
    names
}

/// The built-in named command of `exec`.
pub const NVIDIA_CHECK: &str = "nvidia-check";

/// The command a profile names `name`, from the profile the container was made from.
pub fn named_command(
    context: &Context,
    container: &ContainerDetails,
    name: &str,
) -> Result<Vec<String>, Error> {
    let resolved = container_profile(context, container).ok_or_else(|| Error::Usage {
        message: format!(
            "container `{}` has no envctl profile, so it has no named commands",
            container.name
        ),
        hint: Some(format!(
            "run it as a command: `envctl exec {} -- {name}`",
            container.name
        )),
    })??;
    let profile = &resolved.profile.name;
    resolved.profile.commands.get(name).cloned().ok_or_else(|| {
        let known: Vec<&str> = resolved
            .profile
            .commands
            .keys()
            .map(String::as_str)
            .collect();
        Error::Usage {
            message: format!("profile `{profile}` has no command `{name}`"),
            hint: Some(if known.is_empty() {
                format!(
                    "add it under [commands] in {}, or run it as a command: `envctl exec {} -- {name}`",
                    resolved.file, container.name
                )
            } else {
                match crate::suggest::did_you_mean(name, &known) {
                    Some(near) => format!(
                        "did you mean `{near}`? its commands: {} (or run any command after `--`)",
                        known.join(", ")
                    ),
                    None => format!(
                        "its commands: {} (or run any command after `--`)",
                        known.join(", ")
                    ),
                }
            }),
        }
    })
}
