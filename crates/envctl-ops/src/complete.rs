//! What the shells complete (`envctl up <TAB>`): the profiles envctl finds here, and for a
//! TARGET the names of envctl's running containers and their profiles. clap_complete calls these while
//! completing (the `COMPLETE=SHELL envctl` protocol that `envctl completions SHELL`
//! registers), so they read this process's environment through the `Context`'s one
//! reader, and fail quietly: a completion has nowhere to report an error, and an empty
//! list is the honest answer when nothing can be found.
//!
//! A completion is typed into the user's shell and run on Enter, so only names envctl would
//! accept are offered: profiles that pass the profile-name rule (a cloned repository's
//! `envctl/t;touch PWNED;.toml` is never offered) and containers whose names pass
//! Docker's (a hostile daemon's answer is not either). Names passing those rules need no
//! shell quoting; any other word is left out rather than quoted, since a quoted name could
//! not be used as a profile anyway.

use clap_complete::CompletionCandidate;

use crate::context::Environment;

/// Every profile name envctl finds from here (project, `ENVCTL_PROFILE_PATH`, the user's,
/// bundled).
pub fn profiles() -> Vec<CompletionCandidate> {
    profile_candidates(&Environment::from_process())
}

/// A TARGET: what `exec`, `down`, `logs` and `stats` can act on now — the names of
/// envctl's running containers and the profiles they were made from, as docker completes
/// running containers. Every profile only when the daemon cannot be asked (the honest
/// best then).
pub fn targets() -> Vec<CompletionCandidate> {
    let environment = Environment::from_process();
    // The daemon the user chose; none that can be followed offers no containers (never
    // the default socket's in its place).
    let running = crate::ops::complete::running_containers(&environment);
    let Some(running) = running else {
        return profile_candidates(&environment);
    };
    let mut profiles: Vec<&str> = running
        .iter()
        .filter_map(|container| container.labels.get(crate::container_plan::PROFILE_LABEL))
        .map(String::as_str)
        .filter(|name| offered_profile(name))
        .collect();
    profiles.sort_unstable();
    profiles.dedup();
    let mut candidates: Vec<CompletionCandidate> = profiles
        .into_iter()
        .map(|name| {
            CompletionCandidate::new(name).help(Some("profile of a running container".into()))
        })
        .collect();
    candidates.extend(
        running
            .into_iter()
            .map(|container| container.name)
            .filter(|name| offered_container(name))
            .map(|name| CompletionCandidate::new(name).help(Some("running container".into()))),
    );
    candidates
}

fn profile_candidates(environment: &Environment) -> Vec<CompletionCandidate> {
    environment
        .search_path()
        .names()
        .into_iter()
        .filter(|name| offered_profile(name))
        .map(CompletionCandidate::new)
        .collect()
}

/// Whether a profile's name may be typed into the shell: it passes the profile-name rule
/// (lower-case letters, digits, `-`, `_`, `.`), which leaves nothing a shell acts on.
fn offered_profile(name: &str) -> bool {
    crate::profile::validate::check_profile_name(name).is_ok()
}

/// Whether a container's name may be typed into the shell: Docker's name rule, without
/// the leading `/` the daemon's list may carry.
fn offered_container(name: &str) -> bool {
    !name.starts_with('/') && crate::ops::complete::is_plain_container_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_without_shell_meaning_are_offered() {
        for name in ["pytorch", "team-a.v2", "cuda_12"] {
            assert!(offered_profile(name), "{name}");
            assert!(offered_container(name), "{name}");
        }
        for name in [
            "t;touch PWNED;",
            "a b",
            "$(id)",
            "`id`",
            "x\u{1b}]0;title\u{7}",
            "name'quote",
            "-rf",
            "",
        ] {
            assert!(!offered_profile(name), "{name:?}");
            assert!(!offered_container(name), "{name:?}");
        }
        assert!(!offered_profile("Upper"), "the profile rule is lower case");
        assert!(!offered_container("/slash"));
    }
}
