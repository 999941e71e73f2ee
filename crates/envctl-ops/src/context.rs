//! The one place that reads the process environment.
//!
//! `main` takes a snapshot of the environment once ([`Environment::from_process`]): the
//! working directory, `HOME`, `XDG_CONFIG_HOME`, `DOCKER_HOST`, `PATH`, every `ENVCTL_*`
//! variable, the variables a user names with `up -e KEY`, a Slurm job's `SLURM_*`
//! ([`Environment::slurm`]), and the proxy variables the registry client honours
//! ([`Environment::proxy_variables`]). Everything else asks the
//! snapshot, so a rule such as "an empty `HOME` is no home" is written once, and tests and
//! pure code can hand in any environment they like. clippy's `disallowed-methods`
//! (`clippy.toml`) keeps `std::env::var`, `var_os` and `current_dir` out of the rest of
//! the crate.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::profile::SearchPath;
use crate::ui::Printer;

/// `ENVCTL_NVML_LIBRARY`: the NVML library to load instead of `libnvidia-ml.so.1` (the
/// tests' stand-in NVML, or a driver installed outside the loader's path).
pub const NVML_LIBRARY_VARIABLE: &str = crate::gpu::LIBRARY_VARIABLE;
/// `ENVCTL_PROFILE_PATH`: extra profile folders, `:`-separated, searched after `./envctl/`.
pub const PROFILE_PATH_VARIABLE: &str = "ENVCTL_PROFILE_PATH";
/// `ENVCTL_PULL_STALL_SECONDS`: shortens the pull stall timeout (tests, impatient users).
pub const PULL_STALL_VARIABLE: &str = "ENVCTL_PULL_STALL_SECONDS";
/// The longest pull stall that may be asked for: a day, like every other duration.
pub const MAXIMUM_PULL_STALL_SECONDS: u64 = 86_400;
/// `ENVCTL_POLICY` (the policy names it in its messages).
pub use crate::policy::POLICY_VARIABLE;
/// `ENVCTL_STATS_SOURCE=api`: `stats` reads the Engine API's stats instead of cgroups.
pub const STATS_SOURCE_VARIABLE: &str = "ENVCTL_STATS_SOURCE";

/// What every command may use: the printer, the output mode, the profile search path and
/// the environment snapshot.
pub struct Context {
    pub printer: Printer,
    pub json: bool,
    pub search_path: SearchPath,
    pub environment: Environment,
    /// `-H/--host` and `--context`: with the variables, which daemon (`Context::daemon`).
    pub host_flag: Option<String>,
    pub context_flag: Option<String>,
    /// Who runs envctl (`host::user`): whose containers are this user's own.
    pub user: crate::facts::user::User,
    /// `--other-user`: a container another user made may be acted on when named.
    pub other_user: bool,
    /// The daemon a command chose itself (`up --hosts` picks one of the team's), which
    /// then stands for `-H`: set at most once, before anything connects.
    pub chosen_daemon: std::sync::OnceLock<crate::host::docker_config::DaemonChoice>,
    /// [`Context::user`] with the identity the chosen daemon's transport proves, learnt
    /// once when first asked (`Context::me`).
    pub me: std::sync::OnceLock<crate::facts::user::User>,
    /// [`Context::me`] once a command chose the daemon itself (`chosen_daemon`): learnt
    /// apart, so an identity asked before the choice never stands for the chosen daemon.
    pub me_on_chosen: std::sync::OnceLock<crate::facts::user::User>,
}

/// `user` with the identity that the transport of `choice` proves (`engine::identity`):
/// what [`Context::me`] is for the chosen daemon, and what each host of `--hosts` judges
/// ownership and per-user limits by (`ops::hosts::user_on`). A transport whose identity
/// cannot be learnt (or a daemon that cannot be chosen) gives an unproven one, saying why.
/// For an ssh daemon this runs `ssh -G`.
pub fn identified(
    user: &crate::facts::user::User,
    choice: Result<crate::host::docker_config::DaemonChoice, String>,
) -> crate::facts::user::User {
    let identity = choice.and_then(|choice| {
        crate::engine::identity::of_choice(&choice, user, crate::host::hostname())
            .map_err(|error| error.to_string())
    });
    let identity = identity.unwrap_or_else(|why| unproven(user, why));
    crate::facts::user::User {
        identity: Some(identity),
        ..user.clone()
    }
}

/// Who runs envctl: the real uid and its login name, read from this host's own system
/// (`host::user`, under `/`). What `main` puts in [`Context::user`], so the entry point
/// names no adapter.
pub fn current_user() -> crate::facts::user::User {
    crate::host::user::current(Path::new("/"))
}

/// The identity of `user` when nothing proves it: what they claim (their uid), and `why`.
pub fn unproven(user: &crate::facts::user::User, why: String) -> crate::facts::user::Identity {
    crate::facts::user::Identity::Unproven {
        claimed: match user.uid {
            Some(uid) => format!("uid:{uid}"),
            None => format!("user:{}", user.name),
        },
        why,
    }
}

impl Context {
    /// The daemon the user chose, as the docker CLI chooses it (`host::docker_config`).
    pub(crate) fn daemon(
        &self,
    ) -> Result<
        crate::host::docker_config::DaemonChoice,
        crate::host::docker_config::DaemonChoiceError,
    > {
        if let Some(chosen) = self.chosen_daemon.get() {
            return Ok(chosen.clone());
        }
        crate::host::docker_config::choose(
            &self
                .environment
                .daemon_inputs(self.host_flag.clone(), self.context_flag.clone()),
        )
    }

    /// A connection (not yet asked anything) to the daemon the user chose.
    pub(crate) fn connect(
        &self,
        timeout: std::time::Duration,
    ) -> Result<crate::engine::Engine, crate::engine::EngineError> {
        let choice = self.daemon()?;
        crate::engine::Engine::connect_to(&choice, timeout)
    }

    /// The working directory, or the error reading it as a command reports it.
    pub fn working_directory(&self) -> Result<PathBuf, crate::error::Error> {
        self.environment
            .working_directory()
            .map(Path::to_path_buf)
            .map_err(|error| crate::error::Error::Read {
                path: ".".into(),
                source: error.to_io_error(),
            })
    }
}

/// Why the working directory could not be read (kept as kind and text: `io::Error` is not
/// `Clone`, and the snapshot is read by several commands).
#[derive(Debug, Clone)]
pub struct WorkingDirectoryError {
    pub kind: std::io::ErrorKind,
    pub message: String,
}

impl WorkingDirectoryError {
    /// The error as an `io::Error` again, for the `Error::Read` it becomes.
    pub fn to_io_error(&self) -> std::io::Error {
        std::io::Error::new(self.kind, self.message.clone())
    }
}

pub use crate::facts::slurm::SlurmVariables;

/// A snapshot of the process environment, taken once.
#[derive(Debug, Clone)]
pub struct Environment {
    variables: BTreeMap<OsString, OsString>,
    working_directory: Result<PathBuf, WorkingDirectoryError>,
    clock: Clock,
}

/// Where "now" comes from: the system clock, or a fixed instant in unit tests.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    System,
    Fixed(SystemTime),
}

impl Clock {
    pub fn now(self) -> SystemTime {
        match self {
            #[allow(clippy::disallowed_methods)] // the clock's one reading
            Clock::System => SystemTime::now(),
            Clock::Fixed(instant) => instant,
        }
    }
}

impl Environment {
    /// Reads the process environment. Called once, by `main`.
    #[allow(clippy::disallowed_methods)] // the one reading of the process environment
    pub fn from_process() -> Environment {
        Environment {
            variables: std::env::vars_os().collect(),
            working_directory: std::env::current_dir().map_err(|error| WorkingDirectoryError {
                kind: error.kind(),
                message: error.to_string(),
            }),
            clock: Clock::System,
        }
    }

    /// An environment made of the given variables, for tests and for callers that build
    /// one on purpose.
    pub fn from_variables<K, V>(
        variables: impl IntoIterator<Item = (K, V)>,
        working_directory: PathBuf,
        clock: Clock,
    ) -> Environment
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Environment {
            variables: variables
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
            working_directory: Ok(working_directory),
            clock,
        }
    }

    /// A variable, as the OS gave it. An empty value counts as unset everywhere envctl
    /// reads a path or a switch from the environment (as `HOME=` means no home to shells).
    pub fn variable_os(&self, key: &str) -> Option<&OsStr> {
        self.variables
            .get(OsStr::new(key))
            .map(OsString::as_os_str)
            .filter(|value| !value.is_empty())
    }

    /// A variable as UTF-8 text, for `up -e KEY` (the value the shell would pass). A value
    /// that is not UTF-8 is absent, as `std::env::var` treats it.
    pub fn variable(&self, key: &str) -> Option<String> {
        self.variables
            .get(OsStr::new(key))
            .and_then(|value| value.to_str())
            .map(str::to_string)
    }

    /// The working directory when envctl started.
    pub fn working_directory(&self) -> Result<&Path, &WorkingDirectoryError> {
        self.working_directory.as_deref()
    }

    /// `HOME`, unless unset or empty.
    pub fn home(&self) -> Option<PathBuf> {
        self.variable_os("HOME").map(PathBuf::from)
    }

    /// `$XDG_CONFIG_HOME` when it is an absolute path (the XDG rule: a relative one is
    /// ignored), else `~/.config`; `None` with neither.
    pub fn config_home(&self) -> Option<PathBuf> {
        self.variable_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| self.home().map(|home| home.join(".config")))
    }

    /// `$XDG_CACHE_HOME` when absolute, else `~/.cache`: what envctl may forget and find
    /// again (the GPU requests of other tools' containers).
    pub fn cache_home(&self) -> Option<PathBuf> {
        self.variable_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
            .or_else(|| self.home().map(|home| home.join(".cache")))
    }

    /// `NODE_NAME`, unless unset or empty: the node's name where a pod runs `stats
    /// --serve` (the Downward API's `spec.nodeName`), as DCGM exporter labels its metrics.
    pub fn node_name(&self) -> Option<&str> {
        self.variable_os("NODE_NAME").and_then(OsStr::to_str)
    }

    /// `DOCKER_HOST`, unless unset or empty.
    pub fn docker_host(&self) -> Option<&str> {
        self.variable_os("DOCKER_HOST").and_then(OsStr::to_str)
    }

    /// What chooses the daemon besides the flags: `DOCKER_HOST`, `DOCKER_CONTEXT`,
    /// `DOCKER_TLS_VERIFY`/`DOCKER_TLS`, `DOCKER_CERT_PATH`, and `$DOCKER_CONFIG` (else
    /// `~/.docker`).
    pub fn daemon_inputs(
        &self,
        host_flag: Option<String>,
        context_flag: Option<String>,
    ) -> crate::host::docker_config::ChoiceInputs {
        let set = |name: &str| self.variable(name).filter(|value| !value.is_empty());
        crate::host::docker_config::ChoiceInputs {
            host_flag,
            context_flag,
            docker_host: self.docker_host().map(str::to_string),
            docker_context: set("DOCKER_CONTEXT"),
            config_dir: self
                .variable_os("DOCKER_CONFIG")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(|| self.home().map(|home| home.join(".docker"))),
            tls_variable: if set("DOCKER_TLS_VERIFY").is_some() {
                Some("DOCKER_TLS_VERIFY")
            } else if set("DOCKER_TLS").is_some() {
                Some("DOCKER_TLS")
            } else {
                None
            },
            cert_path: self.variable_os("DOCKER_CERT_PATH").map(PathBuf::from),
        }
    }

    /// The proxy variables the registry client honours (`registry::proxy`): each of
    /// `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (and their lower-case forms) that is set,
    /// in the order they are tried, and `NO_PROXY` (else `no_proxy`).
    pub fn proxy_variables(&self) -> crate::registry::proxy::ProxyVariables {
        use crate::registry::proxy::{NO_PROXY_VARIABLES, PROXY_VARIABLES};
        crate::registry::proxy::ProxyVariables {
            proxies: PROXY_VARIABLES
                .iter()
                .filter_map(|name| Some((name.to_string(), self.variable(name)?)))
                .collect(),
            no_proxy: NO_PROXY_VARIABLES
                .iter()
                .find_map(|name| self.variable(name)),
        }
    }

    /// `PATH`, for finding the host's tools.
    pub fn path(&self) -> Option<&OsStr> {
        self.variable_os("PATH")
    }

    /// `ENVCTL_NVML_LIBRARY`, unless unset or empty.
    /// The host-wide GPU placement lock (`host::gpu_lock`): `ENVCTL_GPU_LOCK`, else
    /// `/run/lock/envctl-gpus.lock`. An empty value counts as not given.
    pub fn gpu_lock_path(&self) -> PathBuf {
        self.variable_os("ENVCTL_GPU_LOCK")
            .filter(|path| !path.is_empty())
            .map_or_else(
                || PathBuf::from(crate::host::gpu_lock::DEFAULT_PATH),
                PathBuf::from,
            )
    }

    pub fn nvml_library(&self) -> Option<PathBuf> {
        self.variable_os(NVML_LIBRARY_VARIABLE).map(PathBuf::from)
    }

    /// The host policy file: `ENVCTL_POLICY`, unless unset or empty, else
    /// [`crate::policy::DEFAULT_POLICY_PATH`].
    pub fn policy_path(&self) -> PathBuf {
        self.variable_os(POLICY_VARIABLE).map_or_else(
            || PathBuf::from(crate::policy::DEFAULT_POLICY_PATH),
            PathBuf::from,
        )
    }

    /// The folders of `ENVCTL_PROFILE_PATH`, empty entries left out.
    pub fn profile_path(&self) -> Vec<PathBuf> {
        self.variable_os(PROFILE_PATH_VARIABLE)
            .map(|value| {
                std::env::split_paths(value)
                    .filter(|path| !path.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `ENVCTL_PULL_STALL_SECONDS` as a duration, when it is a whole number above 0.
    pub fn pull_stall(&self) -> Result<Option<Duration>, String> {
        let Some(text) = self.variable(PULL_STALL_VARIABLE) else {
            return Ok(None);
        };
        match text.trim().parse::<u64>() {
            Ok(seconds @ 1..=MAXIMUM_PULL_STALL_SECONDS) => Ok(Some(Duration::from_secs(seconds))),
            _ => Err(format!(
                "{PULL_STALL_VARIABLE}=`{}` is not a whole number of seconds from 1 to {MAXIMUM_PULL_STALL_SECONDS}",
                text.escape_debug()
            )),
        }
    }

    /// `ENVCTL_STATS_SOURCE=api`: read stats from the Engine API only.
    pub fn stats_from_api_only(&self) -> bool {
        self.variable(STATS_SOURCE_VARIABLE)
            .is_some_and(|source| source == "api")
    }

    /// The variables Slurm sets in a job (issue 29), as text; `host::slurm` reads them
    /// into `facts::slurm`. `CUDA_VISIBLE_DEVICES` is left out on purpose: Slurm renumbers
    /// it per job, so it never says which host GPUs a job holds.
    pub fn slurm(&self) -> SlurmVariables {
        SlurmVariables::from_lookup(|name| self.variable(name))
    }

    /// The clock commands read "now" from.
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// The clock itself, for loops that read it once per sample.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The profile search path: `./envctl/`, `ENVCTL_PROFILE_PATH`, then
    /// `$XDG_CONFIG_HOME/envctl/profiles/`.
    pub fn search_path(&self) -> SearchPath {
        let user = self
            .config_home()
            .map(|directory| directory.join("envctl").join("profiles"));
        SearchPath::new(PathBuf::from("envctl"), self.profile_path(), user)
    }
}

impl Context {
    /// The named profiles (names or paths), or with none named the project's own
    /// (`./envctl/*.toml`): what doctor, lock and outdated work on.
    pub fn profiles_or_project(
        &self,
        names: &[String],
    ) -> Result<Vec<crate::profile::ResolvedProfile>, crate::error::Error> {
        self.each_profile_or_project(names)
            .into_iter()
            .map(|(_, resolved)| resolved)
            .collect()
    }

    /// Like [`Context::profiles_or_project`], each profile on its own: one that cannot be
    /// resolved is its own error (labelled with the name or file it came from) and the
    /// others still resolve, so `doctor` and `lock` can report every one.
    pub fn each_profile_or_project(
        &self,
        names: &[String],
    ) -> Vec<(
        String,
        Result<crate::profile::ResolvedProfile, crate::error::Error>,
    )> {
        if !names.is_empty() {
            return names
                .iter()
                .map(|name| {
                    (
                        name.clone(),
                        self.search_path
                            .resolve(name)
                            .map_err(crate::error::Error::from),
                    )
                })
                .collect();
        }
        let (files, unreadable) = self.search_path.files();
        for folder in unreadable {
            self.printer.warn(&folder);
        }
        files
            .into_iter()
            .filter(|file| file.kind() == crate::profile::SourceKind::Project)
            .map(|file| {
                let label = file.shown();
                (
                    label,
                    self.search_path
                        .resolve_file(file)
                        .map_err(crate::error::Error::from),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_variables(
            pairs.iter().map(|(key, value)| (*key, *value)),
            PathBuf::from("/work"),
            Clock::Fixed(SystemTime::UNIX_EPOCH),
        )
    }

    #[test]
    fn empty_values_count_as_unset() {
        let environment = environment(&[("HOME", ""), ("DOCKER_HOST", ""), ("PATH", "/bin")]);
        assert_eq!(environment.home(), None);
        assert_eq!(environment.docker_host(), None);
        assert_eq!(environment.path(), Some(OsStr::new("/bin")));
    }

    #[test]
    fn config_home_follows_the_xdg_rule() {
        let absolute = environment(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(absolute.config_home(), Some(PathBuf::from("/x")));
        let relative = environment(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "x")]);
        assert_eq!(relative.config_home(), Some(PathBuf::from("/h/.config")));
        assert_eq!(environment(&[]).config_home(), None);
    }

    #[test]
    fn proxy_variables_come_in_the_order_they_are_tried() {
        let set = environment(&[
            ("http_proxy", "http://lower:3128"),
            ("HTTPS_PROXY", "http://upper:3128"),
            ("no_proxy", "b.example"),
            ("NO_PROXY", "a.example"),
            ("HOME", "/h"),
        ]);
        let variables = set.proxy_variables();
        assert_eq!(
            variables.proxies,
            [
                ("HTTPS_PROXY".to_string(), "http://upper:3128".to_string()),
                ("http_proxy".to_string(), "http://lower:3128".to_string()),
            ]
        );
        assert_eq!(variables.no_proxy.as_deref(), Some("a.example"));
        assert_eq!(
            environment(&[]).proxy_variables(),
            crate::registry::proxy::ProxyVariables::default()
        );
    }

    #[test]
    fn profile_path_leaves_out_empty_entries() {
        let environment = environment(&[(PROFILE_PATH_VARIABLE, "/a::/b:")]);
        assert_eq!(
            environment.profile_path(),
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }

    #[test]
    fn pull_stall_takes_only_whole_seconds_within_a_day() {
        assert_eq!(
            environment(&[(PULL_STALL_VARIABLE, "3")]).pull_stall(),
            Ok(Some(Duration::from_secs(3)))
        );
        assert_eq!(environment(&[]).pull_stall(), Ok(None));
        // An unreadable value is refused, never replaced by the default.
        for bad in [
            "0",
            "x",
            "-1",
            "1.5",
            "86401",
            "18446744073709551616",
            "1e19",
        ] {
            let refused = environment(&[(PULL_STALL_VARIABLE, bad)]).pull_stall();
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|message| message.contains(PULL_STALL_VARIABLE)),
                "{bad}: {refused:?}"
            );
        }
    }

    #[test]
    fn the_policy_path_defaults_when_unset_or_empty() {
        assert_eq!(
            environment(&[]).policy_path(),
            PathBuf::from("/etc/envctl/policy.toml")
        );
        assert_eq!(
            environment(&[(POLICY_VARIABLE, "")]).policy_path(),
            PathBuf::from("/etc/envctl/policy.toml")
        );
        assert_eq!(
            environment(&[(POLICY_VARIABLE, "team.toml")]).policy_path(),
            PathBuf::from("team.toml")
        );
    }

    #[test]
    fn the_fixed_clock_is_read() {
        assert_eq!(environment(&[]).now(), SystemTime::UNIX_EPOCH);
    }
}
